"""LRP against a literal reference written from the authors' LRP-Error fork of pycocotools
(``tests/lrp_reference.py``): the per-class oLRP, components and thresholds and the summary
are equal bit for bit on seeded datasets (boxes, masks, keypoints) and on coco_val2014_100;
polygons and rotated boxes (beyond the fork) by properties."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cocogen import make_dataset
from keypointgen import make_keypoints_dataset
from lrp_reference import run_lrp_reference
from maskgen import make_segm_dataset
from test_coco_rotated import rotate, scene

import deteval
from deteval.diagnostics.lrp import LRP_STAT_NAMES, lrp_of_result

FIELDS = ("olrp", "olrp_loc", "olrp_fp", "olrp_fn", "thresholds", "stats")


def assert_equal_to_reference(result, ref):
    assert tuple(result.summary()) == result.stat_names
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(result, name), ref[name], err_msg=name)
    assert result.category_ids.tolist() == ref["category_ids"]


@pytest.mark.parametrize("seed", range(110))
def test_equal_to_reference_on_seeded_datasets(seed):
    gt, dt = make_dataset(seed, segmentation=False, p_many=0.1 if seed % 5 == 0 else 0.0)
    assert_equal_to_reference(deteval.lrp(gt, dt), run_lrp_reference(gt, dt))


def test_equal_to_reference_on_coco100(coco100_dir):
    gt = json.loads((coco100_dir / "instances_val2014_100.json").read_text())
    dt = json.loads((coco100_dir / "instances_val2014_fakebbox100_results.json").read_text())
    assert_equal_to_reference(deteval.lrp(gt, dt), run_lrp_reference(gt, dt))


def _one_object():
    gt = {"images": [{"id": 1, "width": 10, "height": 10}],
          "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4],
                           "area": 16, "iscrowd": 0}]}
    return gt


def test_hand_computed_example():
    """One object; a TP of IoU 0.75 at 0.9 and an FP at 0.8: LRP at 0.9 is
    (0.25 / 0.5) / 1 = 0.5, at 0.8 it is (0.5 + 1) / 2 = 0.75, so oLRP 0.5 at 0.9."""
    dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 3], "score": 0.9},
          {"image_id": 1, "category_id": 1, "bbox": [6, 6, 2, 2], "score": 0.8}]
    r = deteval.lrp(_one_object(), dt)
    assert r.olrp[0, 0] == 0.5 and r.olrp_loc[0, 0] == 0.25
    assert r.olrp_fp[0, 0] == 0 and r.olrp_fn[0, 0] == 0 and r.thresholds[0, 0] == 0.9
    assert r.olrp[1, 0] == -1  # no objects of "b": left out
    assert r.lrp_error(0.85).tolist() == [0.5, -1.0]
    assert r.lrp_error(0.5).tolist() == [0.75, -1.0]
    assert r.lrp_error(0.95).tolist() == [1.0, -1.0]
    assert r.summary()["moLRP"] == 0.5
    json.dumps(r.to_dict())


def test_no_true_positive_gives_one_and_nan():
    dt = [{"image_id": 1, "category_id": 1, "bbox": [6, 6, 2, 2], "score": 0.8}]
    r = deteval.lrp(_one_object(), dt)
    assert r.olrp[0, 0] == 1 and r.olrp_fn[0, 0] == 1
    assert np.isnan([r.olrp_loc[0, 0], r.olrp_fp[0, 0], r.thresholds[0, 0]]).all()


@pytest.mark.parametrize("seed", range(5))
def test_optimum_is_the_minimum_of_lrp_error(seed):
    gt, dt = make_dataset(seed + 500, segmentation=False)
    r = deteval.lrp(gt, dt)
    for k in np.flatnonzero(~np.isnan(r.thresholds[:, 0]) & (r.thresholds[:, 0] > -1)):
        assert r.lrp_error(r.thresholds[k, 0])[k] >= r.olrp[k, 0]
        for s in np.unique([d["score"] for d in dt]):
            assert r.lrp_error(s)[k] >= r.olrp[k, 0]


@pytest.mark.parametrize("kwargs", [{"iou_threshold": 1.0}, {"iou_threshold": 0},
                                    {"max_detections": 0}, {"iou_type": "mask"}])
def test_bad_settings(kwargs):
    with pytest.raises(ValueError):
        deteval.lrp(_one_object(), [], **kwargs)


# --------------------------------------------------------------------- the other geometries

@pytest.mark.parametrize("seed", range(12))
def test_segm_equal_to_reference(seed):
    """The fork driven with pycocotools' iouType "segm": mask IoU of each true positive."""
    gt, dt = make_segm_dataset(seed + 40)
    assert_equal_to_reference(deteval.lrp(gt, dt, iou_type="segm"),
                              run_lrp_reference(gt, dt, "segm"))


@pytest.mark.parametrize("seed", range(12))
def test_keypoints_equal_to_reference(seed):
    """iouType "keypoints": OKS of each true positive, maxDets 20, ranges all/medium/large;
    every third seed with sigmas of its own."""
    gt, dt = make_keypoints_dataset(seed + 60)
    sigmas = None
    if seed % 3 == 0:
        sigmas = np.random.default_rng(seed).uniform(0.02, 0.12, 17).round(3).tolist()
    r = deteval.lrp(gt, dt, iou_type="keypoints", keypoint_sigmas=sigmas)
    assert_equal_to_reference(r, run_lrp_reference(gt, dt, "keypoints", sigmas))
    assert r.area_labels == ("all", "medium", "large")
    assert tuple(r.summary()) == LRP_STAT_NAMES[:4] + ("moLRP_medium", "moLRP_large")
    assert r.settings["max_detections"] == 20


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("iou_type", ["polygon", "rotated"])
def test_axis_aligned_shapes_give_the_bbox_lrp(seed, iou_type):
    """Rectangles given as polygons or as rotated boxes at angle 0 (integer corners): the
    same true positives and the same IoUs as the boxes, so every number is the bbox one."""
    gt, dt = scene(seed, integral=True)
    boxes, shaped = deteval.lrp(gt, dt), deteval.lrp(gt, dt, iou_type=iou_type)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(shaped, name), getattr(boxes, name),
                                      err_msg=name)
    assert shaped.settings["iou_type"] == iou_type


@pytest.mark.parametrize("seed", range(3))
def test_rotated_scene_keeps_its_lrp(seed):
    """Turning the whole scene by 30 degrees changes no match, and the IoUs only by rounding."""
    gt, dt = scene(seed + 20, integral=False)
    turned_gt, turned_dt = rotate(gt, dt, 30.0)
    before = deteval.lrp(gt, dt, iou_type="rotated")
    after = deteval.lrp(turned_gt, turned_dt, iou_type="rotated")
    for name in FIELDS:
        np.testing.assert_allclose(getattr(after, name), getattr(before, name), rtol=0,
                                   atol=1e-9, err_msg=name)


def test_result_at_a_later_threshold_equals_lrp_there():
    """``lrp_of_result`` reads the threshold asked for in a 10-threshold evaluation: the same
    numbers as ``lrp`` matching at that threshold alone."""
    gt, dt = make_dataset(3, segmentation=False)
    result = deteval.evaluate_coco(gt, dt)
    mine = lrp_of_result(result, 0.75)
    alone = deteval.lrp(gt, dt, iou_threshold=0.75)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(mine, name), getattr(alone, name), err_msg=name)
    with pytest.raises(ValueError, match="not evaluated"):
        lrp_of_result(result, 0.52)


@pytest.mark.parametrize("seed", range(3))
def test_boundary_wider_than_every_mask_is_segm(seed):
    """With a dilation ratio of 10 the boundary band covers each whole mask, so boundary IoU
    is mask IoU and LRP is the segm one exactly; at the default band it is another number."""
    gt, dt = make_segm_dataset(seed + 40)
    segm = deteval.lrp(gt, dt, iou_type="segm")
    wide = deteval.lrp(gt, dt, iou_type="boundary", dilation_ratio=10.0)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(wide, name), getattr(segm, name), err_msg=name)
    assert deteval.lrp(gt, dt, iou_type="boundary").stats[0] != segm.stats[0]
