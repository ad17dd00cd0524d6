"""TIDE error attribution with the Open Images challenge protocol (docs/diagnostics/tide.md
§8.3).

With no error fixed, ``error_attribution(protocol="openimages")``'s AP is
``evaluate_openimages``'s mAP times 100 exactly, its class APs the protocol's class APs
times 100, and its true positives the protocol's, on seeded ``oidgen`` problems (class
hierarchies with two parents, group-of boxes full of detections, verified and unverified
labels, boxes without area, tied and negative scores, unknown images); every fix raises the
AP; a hand-built image where each rule decides one detection; the CLI.
"""

from __future__ import annotations

import json

import numpy as np
import oidgen
import pytest
from tide_reference import run_errors

import deteval
from deteval.io.openimages import OIDBoxes, OIDDetections, OIDImageLabels
from deteval.matching import IGNORED, NOT_EVALUATED, TP

CLS, LOC, BOTH, DUPE, BKG, MISS = range(6)


def problem(seed):
    gt_rows, label_rows, det_rows, hierarchy, classes = oidgen.make_problem(seed)
    gt, labels, dt = oidgen.to_objects(gt_rows, label_rows, det_rows)
    return gt, dt, {"image_labels": labels, "hierarchy": hierarchy}, classes


@pytest.mark.parametrize("seed", range(24))
def test_no_fix_gives_the_openimages_map(seed):
    gt, dt, kwargs, classes = problem(seed)
    if seed % 3 == 1:
        kwargs["expand_detections"] = True
    if seed % 4 == 2:
        kwargs["classes"] = classes
    r = deteval.error_attribution(gt, dt, protocol="openimages", **kwargs)
    oid = deteval.evaluate_openimages(gt, dt, **kwargs)
    assert np.isnan(r.ap) if np.isnan(oid.mean_ap) else r.ap == 100 * oid.mean_ap
    defined = ~np.isnan(oid.ap)
    assert np.array_equal(np.isnan(r.class_ap), ~defined)
    assert np.array_equal(r.class_ap[defined], 100 * oid.ap[defined])
    assert np.array_equal(r.dt_true_positive, oid.dt_status == TP)
    assert r.class_names == oid.classes
    # no error on a detection the protocol does not evaluate or that a group-of box absorbs
    assert (r.dt_error[(oid.dt_status == NOT_EVALUATED) | (oid.dt_status == IGNORED)]
            == -1).all()
    assert (r.dt_error[oid.dt_status == 0] >= 0).all()      # every false positive has one
    assert r.counts[MISS] == r.gt_missed.sum()
    fixed = np.r_[r.fixed_ap, r.ap + r.dap_fp, r.ap + r.dap_fn]
    if not np.isnan(r.ap):
        assert (fixed[~np.isnan(fixed)] >= r.ap).all(), (fixed, r.ap)


def test_each_rule_decides_one_detection():
    """One image, classes a, b, c, d: a plain box and a group-of box of a, a box of b;
    c verified absent (evaluated), d not verified (not evaluated)."""
    def obj(cls, rows):
        return np.array(rows, dtype=object) if cls is object else np.array(rows, dtype=cls)

    gt = OIDBoxes(obj(object, ["i"] * 3), obj(object, ["a", "a", "b"]),
                  obj(float, [[0, 0, .2, .2], [.5, .5, 1, 1], [0, .3, .2, .5]]),
                  obj(bool, [False, True, False]))
    labels = OIDImageLabels(obj(object, ["i"]), obj(object, ["c"]), obj(np.int64, [0]))
    dt = OIDDetections(
        obj(object, ["i"] * 8), obj(object, ["a", "a", "a", "a", "a", "b", "c", "d"]),
        obj(float, [.9, .8, .7, .6, .5, .45, .4, .3]),
        obj(float, [[0, 0, .2, .2],        # a: TP on the plain box
                    [.5, .5, .6, .6],      # a: inside the group-of box: its TP
                    [.7, .7, .8, .8],      # a: inside it too: ignored, no error
                    [0, 0, .2, .19],       # a: the plain box again: duplicate
                    [0, .3, .2, .5],       # a: on b's box: classification
                    [0, .3, .2, .3],       # b: no area: not evaluated
                    [.3, .3, .4, .4],      # c: verified absent, nothing there: background
                    [0, 0, .2, .2]]))      # d: not verified in the image: not evaluated
    r = deteval.error_attribution(gt, dt, protocol="openimages", image_labels=labels)
    oid = deteval.evaluate_openimages(gt, dt, image_labels=labels)
    assert oid.dt_status.tolist() == [TP, TP, IGNORED, 0, 0, NOT_EVALUATED, 0, NOT_EVALUATED]
    assert r.dt_error.tolist() == [-1, -1, -1, DUPE, CLS, -1, BKG, -1]
    assert r.dt_true_positive.tolist() == [True, True] + [False] * 6
    assert r.gt_missed.tolist() == [False, False, False]   # b's box: the cls error's fix
    assert r.ap == 100 * oid.mean_ap


def test_an_untouched_group_of_box_is_missed_and_counts_once():
    gt = OIDBoxes(np.array(["i", "i"], dtype=object), np.array(["a", "a"], dtype=object),
                  np.array([[0, 0, .2, .2], [.5, .5, 1, 1]]), np.array([False, True]))
    dt = OIDDetections(np.array(["i"], dtype=object), np.array(["a"], dtype=object),
                       np.array([.9]), np.array([[0, 0, .2, .2]]))
    r = deteval.error_attribution(gt, dt, protocol="openimages")
    assert r.gt_missed.tolist() == [False, True]
    assert r.ap == 50.0 == 100 * deteval.evaluate_openimages(gt, dt).mean_ap
    assert r.fixed_ap[MISS] == 100.0


def test_openimages_options_are_refused_elsewhere_and_its_threshold_is_fixed():
    gt, dt, kwargs, _ = problem(3)
    with pytest.raises(ValueError, match="IoU 0.5 only"):
        deteval.error_attribution(gt, dt, protocol="openimages", pos_threshold=0.7, **kwargs)
    with pytest.raises(ValueError, match="max_dets must be None"):
        deteval.error_attribution(gt, dt, protocol="openimages", max_dets=5, **kwargs)
    with pytest.raises(ValueError, match="'openimages' compares boxes"):
        deteval.error_attribution(gt, dt, protocol="openimages", iou_type="segm")
    with pytest.raises(ValueError, match="image_labels, hierarchy apply to protocol "
                                         "'openimages' only"):
        deteval.error_attribution({}, [], **kwargs)


def test_cli_errors_openimages(tmp_path):
    (boxes, dets), kwargs = oidgen.write_problem(tmp_path, seed=5)
    out = tmp_path / "errors.json"
    code, stdout, stderr = run_errors(boxes, dets, "--protocol", "openimages", "--labels",
                                      kwargs["image_labels"], "--hierarchy",
                                      kwargs["hierarchy"], "--json", out)
    assert code == 0, stderr
    assert "TIDE bbox AP @ 0.50 (Open Images challenge)" in stdout
    expected = deteval.error_attribution(boxes, dets, protocol="openimages", **kwargs)
    assert json.loads(out.read_text())["tide"]["ap"] == expected.ap
    assert expected.ap == 100 * deteval.evaluate_openimages(boxes, dets, **kwargs).mean_ap


@pytest.mark.parametrize("argv, message", [
    (["--pos-threshold", "0.7"], "--pos-threshold: protocol 'openimages' matches at IoU 0.5"),
    (["--max-detections", "3"], "--max-detections does not apply to --protocol openimages"),
    (["--images", "."], "--images does not apply to --protocol openimages"),
])
def test_cli_errors_openimages_refuses_what_it_does_not_read(tmp_path, argv, message):
    (boxes, dets), _ = oidgen.write_problem(tmp_path, seed=5)
    code, stdout, stderr = run_errors(boxes, dets, "--protocol", "openimages", *argv)
    assert code == 2 and not stdout and message in stderr


def test_cli_labels_need_the_openimages_protocol(tmp_path):
    (boxes, dets), kwargs = oidgen.write_problem(tmp_path, seed=5)
    code, stdout, stderr = run_errors(boxes, dets, "--labels", kwargs["image_labels"])
    assert code == 2 and "--labels needs --protocol openimages" in stderr
