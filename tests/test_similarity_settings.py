"""The similarity settings of the library's entries (``keypoint_sigmas``: OKS only;
``dilation_ratio``: boundary IoU only) given with an IoU type that does not read them: a
ValueError naming the option and the IoU type, before anything is read (they were ignored
and the numbers returned as if applied), in every entry that takes them (evaluate_coco,
evaluate_lvis, lrp, match_outcomes, the confusion-matrix entries, error_attribution,
Evaluator and evaluate_files, slices, the drawings); with their own type they are read, and
the defaults and what an entry forwards itself (a result's settings, a saved evaluator's)
refuse nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest
from crowdposegen import make_crowdpose_dataset
from lvisgen import make_lvis_dataset
from PIL import Image
from scenes import shapes_scene

import deteval
from deteval._inputs import load_pair
from deteval._validation import check_similarity_settings
from deteval.demo import make_demo
from deteval.viz.draw import draw_matches, write_drawings

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


# --------------------------------------------------------------------------------------------
# Every other entry that takes the settings: the same rule and message
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("settings")
    gt, dt = make_demo(seed=2, n_images=3)
    (folder / "gt.json").write_text(json.dumps(gt))
    (folder / "dt.json").write_text(json.dumps(dt))
    return folder / "gt.json", folder / "dt.json"


def _drawn(gt, dt, **options):
    pair = load_pair(gt, dt)
    dataset, detections = pair.dataset, pair.detections
    return draw_matches(Image.new("RGB", (640, 480)), dataset, detections, 0, **options)


def _written(gt, dt, *, keypoint_sigmas=None, **options):
    pair = load_pair(gt, dt)
    dataset, detections = pair.dataset, pair.detections
    return write_drawings(dataset, detections, gt.parent, gt.parent / "drawn",
                          draw_options={"keypoint_sigmas": keypoint_sigmas}, **options)


ENTRIES = {
    "match_outcomes": deteval.match_outcomes,
    "detection_confusion_matrix": deteval.detection_confusion_matrix,
    "operating_points": deteval.operating_points,
    "detection_top_k_accuracy": lambda gt, dt, **o: deteval.detection_top_k_accuracy(
        gt, dt, np.zeros((0, 0)), **o),
    "error_attribution": deteval.error_attribution,
    "Evaluator": lambda gt, dt, **o: deteval.Evaluator(gt, **o),
    "evaluate_files": lambda gt, dt, **o: deteval.evaluate_files(gt, [dt], **o),
    "slices": lambda gt, dt, **o: deteval.slices(gt, dt, by=["size"], **o),
}
#: The drawings' sigmas also serve the joints' dots, so they are refused only for objects
#: without keypoints (the demo's); their dilation ratio serves the matching only.
DRAWINGS = {"draw_matches": _drawn, "write_drawings": _written}
WRONG = [("keypoint_sigmas", SIGMAS_17, t) for t in ("bbox", "segm", "boundary")] + \
        [("dilation_ratio", 0.02, t) for t in ("bbox", "segm", "keypoints")]


def _cases():
    for name in ENTRIES:
        yield from (pytest.param(name, *case, id=f"{name}-{case[0]}-{case[2]}")
                    for case in WRONG)
    for name in DRAWINGS:
        yield from (pytest.param(name, *case, id=f"{name}-{case[0]}-{case[2]}")
                    for case in WRONG)


@pytest.mark.parametrize("entry, setting, value, iou_type", list(_cases()))
def test_every_entry_refuses_a_setting_its_iou_type_does_not_read(demo_files, entry, setting,
                                                                  value, iou_type):
    function = ENTRIES.get(entry) or DRAWINGS[entry]
    reader = "keypoints" if setting == "keypoint_sigmas" else "boundary"
    message = (rf"{setting} applies to iou_type='{reader}' only; with iou_type='{iou_type}' "
               rf"it would be ignored")
    with pytest.raises(ValueError, match=message):
        function(*demo_files, iou_type=iou_type, **{setting: value})


@pytest.mark.parametrize("protocol", ["voc2007", "openimages", "lvis"])
def test_error_attribution_refuses_sigmas_whatever_the_protocol(protocol):
    with pytest.raises(ValueError, match="keypoint_sigmas applies to iou_type='keypoints'"):
        deteval.error_attribution("missing-gt.json", "missing-dt.json", protocol=protocol,
                                  keypoint_sigmas=SIGMAS_17)


def test_a_result_of_another_type_refuses_the_callers_setting():
    result = deteval.evaluate_coco(*make_demo(seed=1, n_images=4))
    with pytest.raises(ValueError, match="dilation_ratio .* iou_type='bbox'"):
        deteval.match_outcomes(result, dilation_ratio=0.05)


@pytest.fixture(scope="module")
def shapes():
    return shapes_scene()


@pytest.mark.parametrize("iou_type, settings", [
    ("bbox", {}), ("segm", {}), ("boundary", {"dilation_ratio": 0.2}),
    ("keypoints", {"keypoint_sigmas": (0.3,) * 17})])
def test_what_an_entry_forwards_itself_is_never_refused(shapes, iou_type, settings):
    """A result's own settings (match_outcomes, the confusion matrix on a result) and a saved
    evaluator's (from_bytes writes every field, the defaults of the unread ones too) are not
    the caller's: accepted, and read where the type reads them."""
    gt, dt = shapes
    result = deteval.evaluate_coco(gt, dt, iou_type=iou_type, **settings)
    from_result = deteval.match_outcomes(result)
    given = deteval.match_outcomes(gt, dt, iou_type=iou_type, **settings)
    assert np.array_equal(from_result.dt_iou, given.dt_iou)
    assert deteval.detection_confusion_matrix(result).matrix.sum() > 0
    if iou_type == "boundary":      # the streaming evaluator does not compare boundaries
        return
    evaluator = deteval.Evaluator(gt, iou_type=iou_type, **settings)
    evaluator.update(deteval.io.coco.read_coco_results(dt, evaluator.gt, iou_type=iou_type))
    restored = deteval.Evaluator.from_bytes(evaluator.to_bytes(), gt)
    assert np.array_equal(restored.compute().stats, result.stats, equal_nan=True)


def test_the_settings_of_their_type_change_the_numbers(shapes):
    """Not ignored where read: a wide boundary and wide sigmas give other IoUs than the
    defaults, in match_outcomes and error_attribution alike."""
    gt, dt = shapes
    for iou_type, setting, value in (("boundary", "dilation_ratio", 0.0),
                                     ("keypoints", "keypoint_sigmas", (0.005,) * 17)):
        default = deteval.match_outcomes(gt, dt, iou_type=iou_type)
        given = deteval.match_outcomes(gt, dt, iou_type=iou_type, **{setting: value})
        assert not np.array_equal(default.dt_iou, given.dt_iou, equal_nan=True)
        tide = deteval.error_attribution(gt, dt, iou_type=iou_type, **{setting: value})
        default_tide = deteval.error_attribution(gt, dt, iou_type=iou_type)
        assert (tide.ap, *tide.dap) != (default_tide.ap, *default_tide.dap)


def test_drawings_take_sigmas_for_the_joints_whatever_the_matching(shapes):
    """Objects with keypoints: the joints' dots read the sigmas, so boxes matched by box IoU
    with sigmas given are drawn (the matching itself does not get them)."""
    pair = load_pair(*shapes, iou_type="keypoints")
    dataset, detections = pair.dataset, pair.detections
    picture = draw_matches(Image.new("RGB", (120, 90)), dataset, detections, 0,
                           iou_type="bbox", keypoint_sigmas=(0.3,) * 17)
    assert picture.size == (120, 90)


def test_drawings_match_with_the_given_dilation_ratio(shapes):
    """draw_matches and write_drawings hand ``dilation_ratio`` to the matching: the picture
    equals the one drawn from match_outcomes with that ratio, and (on this scene) differs
    from the default's; a ratio with precomputed outcomes of another type is refused."""
    pair = load_pair(*shapes, iou_type="segm")
    dataset, detections = pair.dataset, pair.detections
    blank = Image.new("RGB", (120, 90))
    drawn = {}
    for ratio in (None, 0.0):
        outcomes = deteval.match_outcomes(dataset, detections, iou_type="boundary",
                                          dilation_ratio=ratio, iou_threshold=0.75)
        given = draw_matches(blank, dataset, detections, 0, iou_type="boundary",
                             dilation_ratio=ratio, iou_threshold=0.75)
        from_outcomes = draw_matches(blank, dataset, detections, 0, outcomes=outcomes)
        assert np.array_equal(np.asarray(given), np.asarray(from_outcomes))
        drawn[ratio] = (outcomes.dt_outcome.tolist(), np.asarray(given))
    assert drawn[None][0] != drawn[0.0][0]
    assert not np.array_equal(drawn[None][1], drawn[0.0][1])
    with pytest.raises(ValueError, match="dilation_ratio applies to iou_type='boundary'"):
        draw_matches(blank, dataset, detections, 0, dilation_ratio=0.0,
                     outcomes=deteval.match_outcomes(dataset, detections))


@pytest.mark.parametrize("iou_type", NOT_BOUNDARY)
def test_coco_params_refuse_a_dilation_ratio_their_type_ignores(iou_type):
    """params= reaches the protocol without the entries' keyword check: the params refuse a
    ratio other than the default themselves (the default itself cannot be told apart)."""
    with pytest.raises(ValueError, match=rf"dilation_ratio applies to iou_type='boundary' "
                                         rf"only; with iou_type='{iou_type}'"):
        deteval.COCOParams(iou_type=iou_type, dilation_ratio=0.05)
    assert deteval.COCOParams(iou_type=iou_type, dilation_ratio=0.02).dilation_ratio == 0.02
    assert deteval.COCOParams(iou_type="boundary", dilation_ratio=0.05).dilation_ratio == 0.05


@pytest.mark.parametrize("iou_type", NOT_KEYPOINTS)
def test_coco_params_refuse_sigmas_their_type_ignores(iou_type):
    with pytest.raises(ValueError, match=rf"keypoint_sigmas applies to iou_type='keypoints' "
                                         rf"only; with iou_type='{iou_type}'"):
        deteval.COCOParams(iou_type=iou_type, keypoint_sigmas=SIGMAS_17)
    assert deteval.COCOParams(iou_type="keypoints",
                              keypoint_sigmas=SIGMAS_17).keypoint_sigmas == SIGMAS_17


@pytest.mark.parametrize("iou_type", ("bbox", "segm"))
def test_lvis_params_refuse_a_dilation_ratio_their_type_ignores(iou_type):
    with pytest.raises(ValueError, match=rf"dilation_ratio applies to iou_type='boundary' "
                                         rf"only; with iou_type='{iou_type}'"):
        deteval.LVISParams(iou_type=iou_type, dilation_ratio=0.05)
    assert deteval.LVISParams(iou_type=iou_type).dilation_ratio == 0.02
    assert deteval.LVISParams(iou_type="boundary", dilation_ratio=0.05).dilation_ratio == 0.05
