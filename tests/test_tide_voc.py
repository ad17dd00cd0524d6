"""TIDE error attribution with the Pascal VOC protocol (docs/diagnostics/tide.md §8).

* With no error fixed, TIDE's AP is the protocol's: ``error_attribution(protocol="voc2007")``
  gives ``evaluate_voc(params=VOC2007)``'s mAP times 100 exactly, its per-class AP likewise,
  and its true positives and ignored detections are those of VOC's match table, on seeded
  ``cocogen`` datasets (difficult objects from ``ignore`` and ``iscrowd``, tied scores,
  categories unknown to the ground truth, images with more than 100 detections).
* Every fix, and both oracles, give an AP at least the base AP (where a class is left).
* A hand-built scene where VOC's rules decide (+1 pixel IoU exactly 0.5, a duplicate on the
  best object although another is free, a detection on a difficult object), with its APs
  computed by hand; the CLI on the shared VOC sample's Pascal XML folder.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cocogen import make_dataset
from scenes import CAT, scene
from tide_reference import run_errors, write_inputs

import deteval
from deteval.matching import IGNORED, TP
from deteval.protocols.voc import VOC2007, VOC2012

PRESETS = {"voc2007": VOC2007, "voc2012": VOC2012}


def _same(a: float, b: float) -> bool:
    return a == b or (np.isnan(a) and np.isnan(b))


@pytest.mark.parametrize("protocol", ["voc2007", "voc2012"])
@pytest.mark.parametrize("seed", range(20))
def test_no_fix_gives_the_protocols_ap(seed, protocol):
    gt, dt = make_dataset(seed, segmentation=False, p_many=0.15 if seed % 5 == 0 else 0.0)
    result = deteval.error_attribution(gt, dt, protocol=protocol)
    voc = deteval.evaluate_voc(gt, dt, params=PRESETS[protocol])
    assert _same(result.ap, 100 * voc.map[0])
    np.testing.assert_array_equal(result.class_ap, 100 * voc.ap[0])
    status = voc.matches.detection_status(0)[0]
    np.testing.assert_array_equal(result.dt_true_positive, status == TP)
    assert (result.dt_error[status == IGNORED] == -1).all()   # on difficult objects
    # Detections of categories the ground truth lacks are not evaluated (dropped by VOC).
    unknown = np.isin([d["category_id"] for d in dt], [c["id"] for c in gt["categories"]],
                      invert=True)
    assert (result.dt_error[unknown] == -1).all()
    assert result.settings["protocol"] == protocol and result.settings["max_dets"] is None


@pytest.mark.parametrize("seed", range(40, 60))
def test_every_fix_raises_the_ap(seed):
    gt, dt = make_dataset(seed, segmentation=False)
    for protocol in PRESETS:
        r = deteval.error_attribution(gt, dt, protocol=protocol)
        fixed = np.r_[r.fixed_ap, r.ap + r.dap_fp, r.ap + r.dap_fn]
        if np.isnan(r.ap):       # no class has objects: nothing to fix
            assert np.isnan(fixed).all()
            continue
        # NaN: the fix left no class with objects (all missed, or no true positive).
        assert (fixed[~np.isnan(fixed)] >= r.ap).all(), (protocol, fixed, r.ap)
        np.testing.assert_array_equal(r.dap, np.maximum(r.fixed_ap - r.ap, 0))


def _voc_scene():
    """One class; A, B and E regular, D difficult (inclusive pixel boxes, xyxy)."""
    objects = [(0, CAT, [0, 0, 9, 9]),              # A
               (0, CAT, [0, 2, 9, 11]),             # B: IoU 80 / 120 with A
               (0, CAT, [50, 50, 59, 59], False, True),   # D, difficult
               (0, CAT, [100, 100, 109, 109])]      # E
    detections = [(0, CAT, [0, 0, 9, 9], 0.9),      # TP on A
                  (0, CAT, [0, 0, 9, 10], 0.8),     # best is A (100 / 110), B 90 / 120: dupe
                  (0, CAT, [50, 50, 59, 59], 0.7),  # on D: ignored
                  (0, CAT, [100, 100, 109, 104], 0.6)]  # E at 50 / 100 with +1 pixel: TP
    return scene(objects, detections)


def test_voc_rules_decide_in_a_hand_built_scene():
    dataset, detections = _voc_scene()
    r = deteval.error_attribution(dataset, detections, protocol="voc2012")
    names = deteval.ERROR_NAMES
    assert r.dt_true_positive.tolist() == [True, False, False, True]
    assert r.dt_error.tolist() == [-1, names.index("dupe"), -1, -1]
    assert r.gt_missed.tolist() == [False, True, False, False]      # B; D is difficult
    # Ranked: TP, FP, (ignored), TP of 3 objects: rec 1/3, 1/3, 2/3; prec 1, 1/2, 2/3.
    assert r.ap == pytest.approx(100 * (1 / 3 + 1 / 3 * 2 / 3))
    assert r.ap == 100 * deteval.evaluate_voc(dataset, detections).map[0]
    assert r.fixed_ap[names.index("dupe")] == pytest.approx(100 * 2 / 3)
    assert r.fixed_ap[names.index("miss")] == pytest.approx(100 * (1 / 2 + 1 / 2 * 2 / 3))
    assert r.ap + r.dap_fn == pytest.approx(100 * (1 / 2 + 1 / 2 * 2 / 3))
    assert r.ap + r.dap_fp == pytest.approx(100 * 2 / 3)
    # 11-point: recall 1/3 reaches 0..0.3 at precision 1, 2/3 reaches 0.4..0.6 at 2/3.
    r07 = deteval.error_attribution(dataset, detections, protocol="voc2007")
    assert r07.ap == pytest.approx(100 * (4 + 3 * 2 / 3) / 11)
    # COCO's rules on the same scene: B is free for detection 2, D is a regular object, and
    # detection 4 (continuous IoU 36 / 81) is a localisation error.
    coco = deteval.error_attribution(dataset, detections)
    assert coco.dt_true_positive.tolist() == [True, True, True, False]
    assert coco.dt_error[3] == names.index("loc")


def test_cli_errors_voc_xml(voc_sample_dir, tmp_path):
    gt = voc_sample_dir / "gts" / "pascalvoc_format"
    dt = voc_sample_dir / "dets" / "abs_xyx2y2"
    out = tmp_path / "errors.json"
    code, stdout, stderr = run_errors(gt, dt, "--box-format", "xyxy", "--names",
                                      voc_sample_dir / "voc.names", "--protocol", "voc2007",
                                      "--json", out)
    assert code == 0, stderr
    assert "TIDE bbox AP @ 0.50 (VOC2007 11-point)" in stdout
    dataset = deteval.read_gt(gt)
    detections = deteval.read_detections(dt, dataset, box_format="xyxy",
                                         names=voc_sample_dir / "voc.names")
    payload = json.loads(out.read_text())["tide"]
    assert payload["settings"]["protocol"] == "voc2007"
    assert payload["ap"] == 100 * deteval.evaluate_voc(dataset, detections,
                                                       params=VOC2007).map[0]


def test_cli_errors_refuses_voc_with_a_geometry(tmp_path):
    files = write_inputs(tmp_path, *make_dataset(3, segmentation=False))
    code, _, stderr = run_errors(*files, "--protocol", "voc2012", "--iou-type", "polygon")
    assert code == 2 and "error: --iou-type: protocol 'voc2012' compares boxes" in stderr
    code, _, stderr = run_errors(*files, "--protocol", "voc2007", "--rules", "tidecv")
    assert code == 2 and "error: --rules: rules='tidecv' reproduces tidecv's" in stderr


def test_background_threshold_zero_fixes_no_error_on_an_object_of_another_class(tmp_path):
    """A car detection overlapping nothing, on an image with only a dog, is a localisation
    error at --background-threshold 0 (IoU 0 >= 0). tidecv fixes it on the image's first
    object whatever its class (the argmax of an all-zero row); with VOC's rules that made a
    car true positive beyond the cars (recall 2) and an exit 1 from deep inside. Fixed, it
    goes: the car AP reaches 100, the mAP 50 (the dog is missed either way)."""
    gt = {"images": [{"id": 1, "width": 100, "height": 100},
                     {"id": 2, "width": 100, "height": 100}],
          "annotations": [
              {"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 30, 30],
               "area": 900, "iscrowd": 0},
              {"id": 2, "image_id": 2, "category_id": 2, "bbox": [10, 10, 20, 20],
               "area": 400, "iscrowd": 0}],
          "categories": [{"id": 1, "name": "car"}, {"id": 2, "name": "dog"}]}
    dt = [{"image_id": 1, "category_id": 1, "score": 0.5, "bbox": [10, 10, 30, 30]},
          {"image_id": 2, "category_id": 1, "score": 0.9, "bbox": [60, 60, 20, 20]}]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    for protocol in ("voc2007", "voc2012"):
        out = tmp_path / f"{protocol}.json"
        code, _, stderr = run_errors(tmp_path / "gt.json", tmp_path / "dt.json", "--protocol",
                                     protocol, "--background-threshold", "0", "--json", out)
        assert code == 0, stderr
        tide = json.loads(out.read_text())["tide"]
        dap = {row["error"]: (row["dap"], row["count"]) for row in tide["summary"]}
        assert tide["ap"] == pytest.approx(25.0)
        assert dap["loc"] == (pytest.approx(25.0), 1) and dap["miss"] == (pytest.approx(25.0), 1)
