"""TIDE error attribution for every COCO geometry (``iou_type``), docs/diagnostics/tide.md §7.

* segm: equal to tidecv 1.0.1's mask mode (``tests/tide_reference.py`` with ``mask=True``)
  to 1e-9, error counts exactly, on seeded ``maskgen`` datasets (crowd regions, tied scores,
  more than 100 detections in some images).
* polygon and rotated: rectangles given as polygons, and as rotated boxes at angle 0, give
  the bbox numbers and per-detection errors exactly.
* keypoints: a hand-built scene with one error of each type, OKS computed here from COCO's
  formula; crowd objects and objects without keypoints are ignore regions.
* boundary: a shifted square that mask IoU accepts and boundary IoU calls a localisation
  error; with a boundary as wide as the mask the two agree.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cocogen import make_dataset
from maskgen import encode, make_segm_dataset
from tide_reference import run_errors, run_tidecv, write_inputs

import deteval
from deteval.keypoints import COCO_PERSON_SIGMAS


def _numbers(ap, main, fp, fn) -> dict:
    return {"ap": ap, **{f"dap_{name}": value for name, value in main.items()},
            "dap_fp": fp, "dap_fn": fn}


@pytest.mark.parametrize("seed", range(16))
def test_segm_equal_to_tidecv_mask_mode(seed):
    pytest.importorskip("tidecv")
    pytest.importorskip("cv2")
    gt, dt = make_segm_dataset(seed, p_many=0.1 if seed % 4 == 0 else 0.0)
    settings = {} if seed < 12 else {"pos_threshold": 0.3 + 0.1 * (seed % 3),
                                     "background_threshold": 0.05 * (seed % 4),
                                     "max_dets": 3 + seed % 5}
    try:
        ref = run_tidecv(gt, dt, mask=True, **settings)
    except ZeroDivisionError:  # tidecv divides by zero when a run has no class left
        pytest.skip("tidecv raises ZeroDivisionError on this dataset")
    result = deteval.error_attribution(gt, dt, iou_type="segm", rules="tidecv", **settings)
    mine = _numbers(result.ap, dict(zip(result.error_names, result.dap.tolist())),
                    result.dap_fp, result.dap_fn)
    assert mine == pytest.approx(_numbers(ref["ap"], ref["main"], ref["special"]["fp"],
                                          ref["special"]["fn"]), abs=1e-9)
    assert dict(zip(result.error_names, result.counts.tolist())) == ref["counts"]
    assert result.settings["iou_type"] == "segm"


def _outlines(record: dict) -> dict:
    x, y, w, h = record["bbox"]
    out = {k: v for k, v in record.items() if k != "segmentation"}
    out["polygon"] = [x, y, x + w, y, x + w, y + h, x, y + h]
    out["rbox"] = [x + w / 2, y + h / 2, w, h, 0]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_rectangles_as_polygons_and_rotated_boxes_give_the_bbox_numbers(seed):
    gt, dt = make_dataset(seed, segmentation=False, p_many=0.1)
    # Zero-size boxes are no polygons: left out of all three runs.
    gt = {**gt, "annotations": [_outlines(a) for a in gt["annotations"]
                                if a["bbox"][2] > 0 and a["bbox"][3] > 0]}
    dt = [_outlines(d) for d in dt if d["bbox"][2] > 0 and d["bbox"][3] > 0]
    boxes = deteval.error_attribution(gt, dt)
    for iou_type in ("polygon", "rotated"):
        other = deteval.error_attribution(gt, dt, iou_type=iou_type)
        assert other.ap == boxes.ap or (np.isnan(other.ap) and np.isnan(boxes.ap))
        for name in ("dap", "fixed_ap", "counts", "class_ap", "class_dap", "dt_error",
                     "dt_true_positive", "gt_missed"):
            np.testing.assert_array_equal(getattr(other, name), getattr(boxes, name),
                                          err_msg=f"{iou_type} {name}")
        assert (other.dap_fp, other.dap_fn) == pytest.approx((boxes.dap_fp, boxes.dap_fn),
                                                             abs=0, nan_ok=True)


# --------------------------------------------------------------------------------------------
# keypoints
# --------------------------------------------------------------------------------------------

_AREA = 1000.0


def _oks(shift: float) -> float:
    """COCO's OKS of 17 visible keypoints all moved by ``shift`` pixels (object area 1000)."""
    e = shift ** 2 / (2 * (2 * COCO_PERSON_SIGMAS) ** 2 * (_AREA + np.spacing(1)))
    return float(np.mean(np.exp(-e)))


def _pose(x: float, y: float) -> np.ndarray:
    """17 keypoints spread over a 30 x 30 square at (x, y), all visible (v = 2)."""
    angle = np.arange(17) * 2 * np.pi / 17
    return np.column_stack([x + 15 + 14 * np.cos(angle), y + 15 + 14 * np.sin(angle),
                            np.full(17, 2.0)])


def _keypoint_scene(extra_objects=(), extra_detections=()):
    """Objects a, b, d (person) and c (other), far apart; six detections, one per error."""
    centres = {"a": (100, 100, 1), "b": (400, 100, 1), "c": (100, 400, 2), "d": (400, 400, 1)}
    annotations = []
    for n, (x, y, category) in enumerate(centres.values(), start=1):
        annotations.append({"id": n, "image_id": 1, "category_id": category,
                            "bbox": [x, y, 30, 30], "area": _AREA, "iscrowd": 0,
                            "keypoints": _pose(x, y).ravel().tolist(), "num_keypoints": 17})
    annotations += list(extra_objects)

    def det(x, y, score, shift=0.0, category=1):
        pose = _pose(x, y)
        pose[:, 0] += shift
        return {"image_id": 1, "category_id": category, "score": score,
                "keypoints": pose.ravel().tolist()}

    detections = [det(100, 100, 0.9),            # TP on a
                  det(100, 100, 0.8),            # dupe: a again
                  det(400, 100, 0.7, shift=6),   # loc: b at OKS ~0.36
                  det(100, 400, 0.6),            # cls: c (other class) exactly
                  det(700, 700, 0.5),            # bkg: nowhere near anything
                  det(100, 400, 0.4, shift=6)]   # both: c at ~0.36, other class
    gt = {"images": [{"id": 1, "width": 800, "height": 800}],
          "categories": [{"id": 1, "name": "person"}, {"id": 2, "name": "other"}],
          "annotations": annotations}
    return gt, detections + list(extra_detections)


def test_keypoints_one_error_of_each_type():
    assert 0.1 < _oks(6) < 0.5 and _oks(0) == 1.0
    gt, dt = _keypoint_scene()
    r = deteval.error_attribution(gt, dt, iou_type="keypoints")
    names = deteval.ERROR_NAMES
    assert [names[e] if e >= 0 else "tp" for e in r.dt_error.tolist()] == [
        "tp", "dupe", "loc", "cls", "bkg", "both"]
    assert r.gt_missed.tolist() == [False, False, False, True]   # d; b is the loc's target
    assert dict(zip(names, r.counts.tolist())) == {n: 1 for n in names}
    # person: TP then five FPs, 3 objects -> precision 1 up to recall 1/3 (34 of tidecv's
    # 101 points); other: 1 object, no detection -> 0.
    base = (34 / 101 * 100 + 0) / 2
    assert r.ap == pytest.approx(base, abs=1e-12)
    # cls fixed: detection 4 becomes other's TP (AP 100), person unchanged.
    assert r.fixed_ap[names.index("cls")] == pytest.approx((34 / 101 * 100 + 100) / 2)
    # loc fixed: person TP, FP, TP, FP, FP: precision 1 to 1/3, 2/3 to 2/3 (34 + 33 points)
    assert r.fixed_ap[names.index("loc")] == pytest.approx(
        ((34 + 33 * 2 / 3) / 101 * 100 + 0) / 2)


def test_keypoint_crowd_and_objects_without_keypoints_are_ignore_regions():
    crowd = {"id": 10, "image_id": 1, "category_id": 1, "bbox": [650, 650, 30, 30],
             "area": _AREA, "iscrowd": 1, "keypoints": _pose(650, 650).ravel().tolist(),
             "num_keypoints": 17}
    empty = {"id": 11, "image_id": 1, "category_id": 1, "bbox": [650, 100, 30, 30],
             "area": _AREA, "iscrowd": 0, "keypoints": [0] * 51, "num_keypoints": 0}
    on_crowd = {"image_id": 1, "category_id": 1, "score": 0.95,
                "keypoints": _pose(650, 650).ravel().tolist()}
    gt, dt = _keypoint_scene([crowd, empty], [on_crowd])
    r = deteval.error_attribution(gt, dt, iou_type="keypoints")
    base = deteval.error_attribution(*_keypoint_scene(), iou_type="keypoints")
    # Neither region is missed; the detection on the crowd (OKS 1 > 0.5) takes no part in
    # AP; as in tidecv it still gets an error type: no regular object near it -> bkg.
    assert r.gt_missed.tolist() == base.gt_missed.tolist() + [False, False]
    assert not r.dt_true_positive[-1] and deteval.ERROR_NAMES[r.dt_error[-1]] == "bkg"
    assert r.ap == base.ap


def test_keypoint_sigmas_are_the_evaluations():
    gt, dt = _keypoint_scene()
    wide = deteval.error_attribution(gt, dt, iou_type="keypoints",
                                     keypoint_sigmas=[1.0] * 17)
    # With sigmas of 1 the loc detection (6 px off) has OKS ~1: a second TP.
    assert wide.dt_true_positive.tolist() == [True, False, True, False, False, False]
    with pytest.raises(ValueError, match="sigmas"):
        deteval.error_attribution(gt, dt, iou_type="keypoints", keypoint_sigmas=[0.1] * 3)


# --------------------------------------------------------------------------------------------
# boundary
# --------------------------------------------------------------------------------------------


def _square_scene(shift: int):
    mask = np.zeros((100, 100), bool)
    mask[20:60, 20:60] = True
    moved = np.roll(mask, shift, axis=1)
    gt = {"images": [{"id": 1, "width": 100, "height": 100}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [20, 20, 40, 40],
                           "area": 1600.0, "iscrowd": 0, "segmentation": encode(mask)}]}
    dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": encode(moved)}]
    return gt, dt


def test_boundary_iou_is_stricter_than_mask_iou():
    gt, dt = _square_scene(6)        # mask IoU 34 / 46 = 0.74
    segm = deteval.error_attribution(gt, dt, iou_type="segm")
    boundary = deteval.error_attribution(gt, dt, iou_type="boundary")
    assert segm.dt_true_positive.tolist() == [True] and segm.ap == 100
    assert deteval.ERROR_NAMES[boundary.dt_error[0]] == "loc"
    assert boundary.ap == 0 and boundary.settings["iou_type"] == "boundary"
    # A boundary as wide as the mask: boundary IoU is the mask IoU.
    wide = deteval.error_attribution(gt, dt, iou_type="boundary", dilation_ratio=1.0)
    assert wide.dt_true_positive.tolist() == [True]


# --------------------------------------------------------------------------------------------
# settings and CLI
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, word", [
    ({"iou_type": "mask"}, "iou_type"),
    ({"protocol": "coco2017"}, "protocol"),
    ({"protocol": "voc2007", "iou_type": "segm"}, "boxes"),
    ({"protocol": "voc2012", "rules": "tidecv"}, "tidecv"),
    ({"max_dets": 0}, "max_dets")])
def test_bad_geometry_settings_name_the_setting(kwargs, word):
    gt, dt = _square_scene(0)
    with pytest.raises(ValueError, match=word):
        deteval.error_attribution(gt, dt, **kwargs)


def test_a_dataset_without_the_geometry_is_refused():
    gt, dt = make_dataset(1, segmentation=False)
    with pytest.raises(ValueError, match="masks"):
        deteval.error_attribution(deteval.read_coco_gt(gt), dt, iou_type="segm")


def test_cli_errors_iou_type_keypoints(tmp_path):
    gt, dt = _keypoint_scene()
    out = tmp_path / "errors.json"
    code, stdout, stderr = run_errors(*write_inputs(tmp_path, gt, dt), "--iou-type",
                                      "keypoints", "--kpt-sigmas",
                                      " ".join(map(str, COCO_PERSON_SIGMAS.tolist())),
                                      "--per-class", "--json", out)
    assert code == 0, stderr
    assert "TIDE keypoints AP @ 0.50" in stdout and "person" in stdout
    payload = json.loads(out.read_text())
    expected = deteval.error_attribution(gt, dt, iou_type="keypoints")
    assert payload["tide"]["settings"]["iou_type"] == "keypoints"
    assert payload["tide"]["ap"] == expected.ap
    assert [row["count"] for row in payload["tide"]["summary"][:6]] == [1] * 6


def test_cli_errors_lrp_with_a_geometry(tmp_path):
    from deteval.diagnostics.lrp import lrp

    files = write_inputs(tmp_path, *_square_scene(2))
    out = tmp_path / "errors.json"
    code, stdout, stderr = run_errors(*files, "--iou-type", "segm", "--lrp", "--json", out)
    assert code == 0, stderr
    payload = json.loads(out.read_text())
    assert set(payload) == {"tide", "lrp"}
    expected = lrp(*map(str, files), iou_type="segm")
    assert payload["lrp"] == json.loads(json.dumps(expected.to_dict()))
    code, _, stderr = run_errors(*files, "--protocol", "voc2007", "--lrp")
    assert code == 2 and "run `deteval voc --lrp`" in stderr
