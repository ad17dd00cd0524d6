"""The similarity settings of the library's entries (``keypoint_sigmas``: OKS only;
``dilation_ratio``: boundary IoU only) given with an IoU type that does not read them: a
ValueError naming the option and the IoU type, before anything is read (they were ignored
and the numbers returned as if applied); with their own type they are read, and the
defaults refuse nothing."""

from __future__ import annotations

import pytest
from crowdposegen import make_crowdpose_dataset
from lvisgen import make_lvis_dataset

import deteval
from deteval._validation import check_similarity_settings
from deteval.demo import make_demo

SIGMAS_17 = (0.05,) * 17
NOT_KEYPOINTS = ("bbox", "segm", "boundary", "polygon", "rotated")
NOT_BOUNDARY = ("bbox", "segm", "keypoints", "polygon", "rotated")


@pytest.mark.parametrize("iou_type", NOT_KEYPOINTS)
def test_evaluate_coco_refuses_sigmas_of_another_type(iou_type):
    with pytest.raises(ValueError, match=rf"keypoint_sigmas applies to iou_type='keypoints' "
                                         rf"only; with iou_type='{iou_type}'"):
        deteval.evaluate_coco("missing-gt.json", "missing-dt.json", iou_type=iou_type,
                              keypoint_sigmas=SIGMAS_17)


@pytest.mark.parametrize("iou_type", NOT_BOUNDARY)
def test_evaluate_coco_refuses_a_dilation_ratio_of_another_type(iou_type):
    with pytest.raises(ValueError, match=rf"dilation_ratio applies to iou_type='boundary' "
                                         rf"only; with iou_type='{iou_type}'"):
        deteval.evaluate_coco("missing-gt.json", "missing-dt.json", iou_type=iou_type,
                              dilation_ratio=0.02)     # the default value, given: refused


def test_the_iou_type_of_params_counts():
    params = deteval.COCOParams(iou_type="segm")
    with pytest.raises(ValueError, match="iou_type='segm'"):
        deteval.evaluate_coco("missing-gt.json", "missing-dt.json", params=params,
                              dilation_ratio=0.05)


@pytest.mark.parametrize("iou_type", ("bbox", "segm"))
def test_evaluate_lvis_refuses_a_dilation_ratio_of_another_type(iou_type):
    gt, dt = make_lvis_dataset(0, n_images=3)
    with pytest.raises(ValueError, match=rf"dilation_ratio .* iou_type='{iou_type}'"):
        deteval.evaluate_lvis(gt, dt, iou_type=iou_type, dilation_ratio=0.05)


def test_defaults_and_own_types_refuse_nothing():
    gt, dt = make_demo(seed=1, n_images=4)
    assert deteval.evaluate_coco(gt, dt).stats[0] >= 0
    lvis_gt, lvis_dt = make_lvis_dataset(0, n_images=3)
    assert deteval.evaluate_lvis(lvis_gt, lvis_dt).stats[0] >= 0
    check_similarity_settings("boundary", keypoint_sigmas=None, dilation_ratio=0.05)
    check_similarity_settings("keypoints", keypoint_sigmas=SIGMAS_17, dilation_ratio=None)


def test_sigmas_with_keypoints_are_read():
    gt, dt = make_crowdpose_dataset(1, n_images=6)
    wide = deteval.evaluate_coco(gt, dt, iou_type="keypoints", keypoint_sigmas=(0.5,) * 14)
    narrow = deteval.evaluate_coco(gt, dt, iou_type="keypoints", keypoint_sigmas=(0.01,) * 14)
    assert wide.stats[0] > narrow.stats[0]


def test_lrp_refuses_what_its_evaluation_would_ignore():
    from deteval.diagnostics.lrp import lrp

    gt, dt = make_demo(seed=1, n_images=4)
    with pytest.raises(ValueError, match="dilation_ratio .* iou_type='bbox'"):
        lrp(gt, dt, dilation_ratio=0.05)
    with pytest.raises(ValueError, match="keypoint_sigmas .* iou_type='bbox'"):
        lrp(gt, dt, keypoint_sigmas=SIGMAS_17)
    assert lrp(gt, dt).summary() == lrp(gt, dt, iou_type="bbox").summary()
