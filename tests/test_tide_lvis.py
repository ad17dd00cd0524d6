"""TIDE error attribution with the LVIS protocol (docs/diagnostics/tide.md §8.1).

* With no error fixed, TIDE's AP is the protocol's: ``error_attribution(protocol="lvis")``
  gives ``evaluate_lvis``'s AP50 times 100 exactly, and its true positives and ignored
  detections are those of LVIS's match table, on seeded ``lvisgen`` datasets (negative,
  unverified and not-exhaustive categories, per-image cuts inside tied scores; boxes and
  masks).
* Every fix, and both oracles, give an AP at least the base AP.
* A hand-built image where each federated rule decides one detection.
"""

from __future__ import annotations

import numpy as np
import pytest
from lvisgen import make_lvis_dataset
from tide_reference import run_errors, write_inputs

import deteval
from deteval.matching import IGNORED, TP


def _check_against_lvis(gt, dt, iou_type):
    result = deteval.error_attribution(gt, dt, protocol="lvis", iou_type=iou_type)
    lvis = deteval.evaluate_lvis(gt, dt, iou_type=iou_type)
    ap50 = lvis.stats_named["AP50"]
    if ap50 == -1:
        assert np.isnan(result.ap)
    else:
        assert result.ap == 100 * ap50
    status = lvis.matches.detection_status(lvis.params.area_labels.index("all"))[0]
    np.testing.assert_array_equal(result.dt_true_positive, status == TP)
    assert (result.dt_error[status == IGNORED] == -1).all()
    return result


@pytest.mark.parametrize("seed", range(16))
def test_no_fix_gives_lvis_ap50(seed):
    gt, dt = make_lvis_dataset(seed, p_crowded_image=0.3 if seed % 4 == 0 else 0.0)
    r = _check_against_lvis(gt, dt, "bbox")
    fixed = np.r_[r.fixed_ap, r.ap + r.dap_fp, r.ap + r.dap_fn]
    if not np.isnan(r.ap):
        assert (fixed[~np.isnan(fixed)] >= r.ap).all(), (fixed, r.ap)


@pytest.mark.parametrize("seed", range(3))
def test_no_fix_gives_lvis_ap50_masks(seed):
    _check_against_lvis(*make_lvis_dataset(seed, segm=True), "segm")


def _federated_scene():
    """One image: a (object), b (negative), c (not exhaustive, object), d (unverified)."""
    gt = {"images": [{"id": 1, "width": 200, "height": 200, "neg_category_ids": [2],
                      "not_exhaustive_category_ids": [3]}],
          "categories": [{"id": k, "name": name, "frequency": "f"}
                         for k, name in enumerate("abcd", start=1)],
          "annotations": [
              {"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20],
               "area": 400},
              {"id": 2, "image_id": 1, "category_id": 3, "bbox": [100, 100, 20, 20],
               "area": 400}]}
    dt = [{"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9},   # TP
          {"image_id": 1, "category_id": 2, "bbox": [150, 10, 20, 20], "score": 0.8},  # bkg
          {"image_id": 1, "category_id": 3, "bbox": [150, 150, 20, 20], "score": 0.7},  # -
          {"image_id": 1, "category_id": 4, "bbox": [10, 150, 20, 20], "score": 0.95},  # -
          {"image_id": 1, "category_id": 1, "bbox": [100, 100, 20, 20], "score": 0.6}]  # cls
    return gt, dt


def test_federated_rules_in_a_hand_built_image():
    gt, dt = _federated_scene()
    r = _check_against_lvis(gt, dt, "bbox")
    names = deteval.ERROR_NAMES
    # The negative category's detection is a false positive (background); the
    # not-exhaustive category's unmatched one and the unverified category's take no part;
    # a detection of a on c's object is a class error, and c is then not missed.
    assert r.dt_true_positive.tolist() == [True, False, False, False, False]
    assert r.dt_error.tolist() == [-1, names.index("bkg"), -1, -1, names.index("cls")]
    assert r.gt_missed.tolist() == [False, False]
    # a: TP (0.9), FP (0.6) of 1 object: AP 100 over 101 points; b: no objects (out);
    # c: 1 object, no counted detection: 0. Mean over (recall point, class) values.
    assert r.ap == pytest.approx(50.0)
    assert r.fixed_ap[names.index("cls")] == pytest.approx(100.0)


def test_equal_iou_takes_the_last_object_as_lvis_api():
    """Detection 1 overlaps A and B equally (90 / 110): pycocotools' rule (lvis-api's) takes
    the last, B, so detection 2 (A at 80 / 120, B at 60 / 140) finds A free: two TPs.
    tidecv's first-wins rule would leave detection 2 a false positive."""
    gt = {"images": [{"id": 1, "width": 50, "height": 50, "neg_category_ids": [],
                      "not_exhaustive_category_ids": []}],
          "categories": [{"id": 1, "name": "a", "frequency": "f"}],
          "annotations": [{"id": n, "image_id": 1, "category_id": 1, "bbox": [x, 0, 10, 10],
                           "area": 100} for n, x in ((1, 0), (2, 2))]}
    dt = [{"image_id": 1, "category_id": 1, "bbox": [1, 0, 10, 10], "score": 0.9},
          {"image_id": 1, "category_id": 1, "bbox": [-2, 0, 10, 10], "score": 0.8}]
    r = _check_against_lvis(gt, dt, "bbox")
    assert r.dt_true_positive.tolist() == [True, True] and r.ap == 100


def test_cli_errors_lvis(tmp_path):
    files = write_inputs(tmp_path, *_federated_scene())
    code, stdout, stderr = run_errors(*files, "--protocol", "lvis")
    assert code == 0, stderr
    assert "TIDE bbox AP @ 0.50 (LVIS): 50.00" in stdout
    code, _, stderr = run_errors(*files, "--protocol", "lvis", "--iou-type", "keypoints")
    assert code == 2, stderr      # a usage error naming the flag, before any file is read
    assert "error: --iou-type: protocol 'lvis' compares boxes, masks or boundaries" in stderr


def test_cli_errors_lvis_refuses_reader_options(tmp_path):
    """--protocol lvis reads the LVIS files itself: a format or reader option would be
    ignored, so it is refused (it once printed the AP as if --gt-format voc were read)."""
    files = write_inputs(tmp_path, *_federated_scene())
    code, stdout, stderr = run_errors(*files, "--protocol", "lvis", "--gt-format", "voc")
    assert code == 2 and not stdout
    assert "--gt-format does not apply to --protocol lvis" in stderr
    code, stdout, stderr = run_errors(*files, "--protocol", "lvis", "--match-by", "id",
                                      "--box-format", "xyxy")
    assert code == 2 and "--box-format, --match-by do not apply" in stderr


def test_lvis_needs_the_lvis_keys():
    gt, dt = _federated_scene()
    with pytest.raises(TypeError, match="LVIS keys"):
        deteval.error_attribution(deteval.read_coco_gt(gt), dt, protocol="lvis")


@pytest.mark.parametrize("cap", [None, 1, 3])
def test_settings_report_the_cap_applied(cap):
    """settings["max_dets"] is the per-image cap TIDE applied (lvis-api's 300 by default; it
    was reported as None, the VOC value, whatever max_dets was), and with that cap TIDE's AP
    is evaluate_lvis(max_detections=cap)'s AP50."""
    gt, dt = make_lvis_dataset(5)
    r = deteval.error_attribution(gt, dt, protocol="lvis", max_dets=cap)
    assert r.settings["max_dets"] == (300 if cap is None else cap)
    lvis = deteval.evaluate_lvis(gt, dt, max_detections=r.settings["max_dets"])
    ap50 = lvis.stats_named["AP50"]
    assert np.isnan(r.ap) if ap50 == -1 else r.ap == 100 * ap50
def test_an_unmatched_detection_beyond_area_all_is_ignored_as_lvis_api_does(tmp_path):
    """A detection of area > 1e10 (lvis-api's range "all") that matches nothing takes no part
    in LVISEval; TIDE counted it a false positive, and its AP left the protocol's AP50 (found
    by the fuzzer's differential oracle)."""
    gt, dt = make_lvis_dataset(3, n_images=4)
    image = gt["images"][0]["id"]
    category = gt["annotations"][0]["category_id"]
    dt.append({"image_id": image, "category_id": category, "score": 0.99,
               "bbox": [1.0, 9.0e6, 2.0e4, 1.0e7]})     # area 2e11, far from every object
    gt_path, dt_path = write_inputs(tmp_path, gt, dt)
    tide = deteval.error_attribution(gt_path, dt_path, protocol="lvis")
    lvis = deteval.evaluate_lvis(gt_path, dt_path)
    assert tide.ap == pytest.approx(100 * lvis.stats_named["AP50"], abs=1e-9)
    assert lvis.stats_named["AP50"] > 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_objects_beyond_area_all_are_ignored_as_lvis_api_does(tmp_path, seed):
    """Objects whose 'area' is above 1e10 are ignored in LVISEval's area 'all' (not counted,
    a detection on one takes no part); TIDE counted them, and its AP left the AP50."""
    gt, dt = make_lvis_dataset(seed, n_images=4)
    for ann in gt["annotations"][:3]:
        ann["area"] = 2e11
    gt_path, dt_path = write_inputs(tmp_path, gt, dt)
    tide = deteval.error_attribution(gt_path, dt_path, protocol="lvis")
    lvis = deteval.evaluate_lvis(gt_path, dt_path)
    assert tide.ap == pytest.approx(100 * lvis.stats_named["AP50"], abs=1e-9)
