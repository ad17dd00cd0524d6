"""TIDE error attribution against tidecv 1.0.1 (``tests/tide_reference.py`` runs it).

With ``rules="tidecv"`` every number equals tidecv's to 1e-9 (and the error counts exactly)
on seeded datasets with tied scores, crowd regions, unknown categories and images with more
than ``max_dets`` detections; ``rules="deteval"`` differs only where scores tie, and the
minimal case below shows tidecv's ordering of ties hiding a real dAP.
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings

import numpy as np
import pytest
from cocogen import make_dataset
from tide_reference import _tidecv, run_tidecv

import deteval

pytest.importorskip("tidecv")
pytest.importorskip("cv2")


def assert_equal_to_tidecv(result, ref, tol=1e-9):
    assert result.ap == pytest.approx(ref["ap"], abs=tol)
    for name, dap in zip(result.error_names, result.dap.tolist()):
        assert dap == pytest.approx(ref["main"][name], abs=tol), name
    assert result.dap_fp == pytest.approx(ref["special"]["fp"], abs=tol)
    assert result.dap_fn == pytest.approx(ref["special"]["fn"], abs=tol)
    assert dict(zip(result.error_names, result.counts.tolist())) == ref["counts"]


@pytest.mark.parametrize("seed", range(120))
def test_equal_to_tidecv_on_seeded_datasets(seed):
    gt, dt = make_dataset(seed, segmentation=False, p_many=0.15 if seed % 6 == 0 else 0.0)
    try:
        ref = run_tidecv(gt, dt)
    except ZeroDivisionError:  # tidecv divides by zero when a run has no class left
        pytest.skip("tidecv raises ZeroDivisionError on this dataset")
    assert_equal_to_tidecv(deteval.error_attribution(gt, dt, rules="tidecv"), ref)


@pytest.mark.parametrize("seed", range(200, 215))
def test_other_thresholds_equal_to_tidecv(seed):
    gt, dt = make_dataset(seed, segmentation=False, p_many=0.2)
    settings = {"pos_threshold": 0.3 + 0.04 * (seed % 5),
                "background_threshold": 0.05 * (seed % 3), "max_dets": 5 + seed % 7}
    try:
        ref = run_tidecv(gt, dt, **settings)
    except ZeroDivisionError:
        pytest.skip("tidecv raises ZeroDivisionError on this dataset")
    assert_equal_to_tidecv(deteval.error_attribution(gt, dt, rules="tidecv", **settings), ref)


@pytest.mark.parametrize("seed", range(300, 310))
def test_rules_agree_without_tied_scores(seed):
    gt, dt = make_dataset(seed, segmentation=False)
    for i, det in enumerate(dt):
        det["score"] = round(det["score"], 2) + 1e-6 * i  # distinct
    a = deteval.error_attribution(gt, dt, rules="tidecv")
    b = deteval.error_attribution(gt, dt, rules="deteval")
    assert a.ap == b.ap
    np.testing.assert_array_equal(a.dap, b.dap)
    assert (a.dap_fp, a.dap_fn) == (b.dap_fp, b.dap_fn)


def _tie_case():
    """One image, two objects; one found, one missed; a background FP tied with the TP."""
    gt = {"images": [{"id": 1, "width": 100, "height": 100}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [
              {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100,
               "iscrowd": 0},
              {"id": 2, "image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10],
               "area": 100, "iscrowd": 0}]}
    dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
          {"image_id": 1, "category_id": 1, "bbox": [80, 0, 10, 10], "score": 0.9}]
    return gt, dt


def test_tidecv_tie_order_hides_the_missed_error():
    """docs/diagnostics/tide.md §6.1: tidecv lists false positives before true positives in
    every fixed run, so equal scores reorder; the missed object's dAP (49.5) reads 0 and the
    FN oracle goes negative (-0.5 instead of +49.5)."""
    gt, dt = _tie_case()
    ref = run_tidecv(gt, dt)
    assert ref["ap"] == pytest.approx(51 / 101 * 100)
    assert ref["main"]["miss"] == 0 and ref["special"]["fn"] == pytest.approx(50 - 51 / 101 * 100)
    assert_equal_to_tidecv(deteval.error_attribution(gt, dt, rules="tidecv"), ref)
    fixed = deteval.error_attribution(gt, dt)
    miss = fixed.dap[fixed.error_names.index("miss")]
    assert miss == pytest.approx(100 - 51 / 101 * 100)
    assert fixed.dap_fn == pytest.approx(100 - 51 / 101 * 100)


def test_per_detection_and_per_class_tables():
    gt, dt = _tie_case()
    r = deteval.error_attribution(gt, dt)
    assert r.dt_error.tolist() == [-1, deteval.ERROR_NAMES.index("bkg")]
    assert r.dt_true_positive.tolist() == [True, False]
    assert r.gt_missed.tolist() == [False, True]
    row = r.per_class()[0]
    assert row["n_bkg"] == 1 and row["n_miss"] == 1 and row["name"] == "a"
    assert [s["error"] for s in r.summary()][-2:] == ["false_positives", "false_negatives"]
    json.dumps(r.to_dict())


@pytest.mark.parametrize("kwargs, word", [({"pos_threshold": 0}, "pos_threshold"),
                                          ({"background_threshold": 0.7}, "background"),
                                          ({"max_dets": 0}, "max_dets"),
                                          ({"rules": "coco"}, "rules")])
def test_bad_settings_name_the_setting(kwargs, word):
    gt, dt = _tie_case()
    with pytest.raises(ValueError, match=word):
        deteval.error_attribution(gt, dt, **kwargs)


def test_coco100_equal_to_tidecv_loaders(coco100_dir):
    tc = _tidecv()
    gt_path = coco100_dir / "instances_val2014_100.json"
    dt_path = coco100_dir / "instances_val2014_fakebbox100_results.json"
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tide = tc.TIDE()
        run = tide.evaluate(tc.datasets.COCO(str(gt_path)), tc.datasets.COCOResult(str(dt_path)),
                            mode=tc.TIDE.BOX, name="dt")
        errors = tide.get_all_errors()
    result = deteval.error_attribution(gt_path, dt_path, rules="tidecv")
    names = {"Cls": "cls", "Loc": "loc", "Both": "both", "Dupe": "dupe", "Bkg": "bkg",
             "Miss": "miss"}
    assert result.ap == pytest.approx(run.ap, abs=1e-9)
    for short, value in errors["main"]["dt"].items():
        assert result.dap[result.error_names.index(names[short])] == pytest.approx(value,
                                                                                 abs=1e-9)
    assert result.dap_fp == pytest.approx(errors["special"]["dt"]["FalsePos"], abs=1e-9)
    assert result.dap_fn == pytest.approx(errors["special"]["dt"]["FalseNeg"], abs=1e-9)


def test_cli_errors_with_lrp(coco100_dir, tmp_path):
    from deteval.cli import main

    out = tmp_path / "errors.json"
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["errors", str(coco100_dir / "instances_val2014_100.json"),
                 str(coco100_dir / "instances_val2014_fakebbox100_results.json"), "--lrp",
                 "--per-class", "--json", str(out)], stdout=stdout, stderr=stderr)
    assert code == 0, stderr.getvalue()
    assert "TIDE bbox AP @ 0.50" in stdout.getvalue() and "moLRP" in stdout.getvalue()
    payload = json.loads(out.read_text())
    assert set(payload) == {"tide", "lrp"}
    assert payload["tide"]["summary"][0]["error"] == "cls"
