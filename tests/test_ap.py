"""Tests of deteval.ap: the worked examples C, D (docs/protocols/coco.md §7.7) and E
(docs/protocols/voc.md §5), the recall points of each rule, literal references on seeded
random curves, the COCO protocol's own AP, hypothesis properties and the error messages.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import (
    matlab_colon,
    reference_coco101_ap,
    reference_detectron2_ap,
    reference_devkit_ap11,
    reference_devkit_vocap,
)

import deteval
from deteval.ap import (
    _COCO101_THRESHOLDS,
    _VOC11_DEVKIT_THRESHOLDS,
    _VOC11_THRESHOLDS,
    AP_METHODS,
    interpolated_average_precision,
)

EPS = np.spacing(1)
# docs/protocols/voc.md §5: npos = 5, detections TP, TP, FP, TP.
E_RECALL = [0.2, 0.4, 0.4, 3 / 5]
E_PRECISION = [1.0, 1.0, 2 / 3, 0.75]


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        pytest.param("voc11", 0.5227272727272727, id="E-11-point-detectron2"),
        # MATLAB's 0.6 is the double 0.6, which recall 3/5 reaches: (5 + .75 + .75) / 11
        pytest.param("voc11-devkit", 0.5909090909090908, id="E-11-point-devkit"),
        pytest.param("all-points", 0.55, id="E-all-points"),
    ],
)
def test_example_e(method, expected):
    assert interpolated_average_precision(E_RECALL, E_PRECISION, method=method) == expected


def test_examples_c_and_d_coco101():
    # C: TP, FP, TP, ignored, FP with 3 positives; precision with pycocotools' eps
    tp, fp = np.array([1, 1, 2, 2, 2.0]), np.array([0, 1, 1, 1, 2.0])
    assert interpolated_average_precision(tp / 3, tp / (tp + fp + EPS), method="coco101") == \
        0.5544554455445545
    # D: 20 positives, 7 perfect detections: 7/20 does not reach recThrs[35]
    tp = np.arange(1, 8.0)
    assert interpolated_average_precision(tp / 20, tp / (tp + EPS), method="coco101") == \
        0.3465346534653465


def test_recall_points():
    assert _VOC11_THRESHOLDS.tolist() == np.arange(0.0, 1.1, 0.1).tolist()
    assert _VOC11_DEVKIT_THRESHOLDS.tolist() == matlab_colon(0.0, 0.1, 1.0)
    assert _VOC11_THRESHOLDS[[3, 6, 7]].tolist() == [0.30000000000000004, 0.6000000000000001,
                                                     0.7000000000000001]
    assert _VOC11_DEVKIT_THRESHOLDS[[3, 6, 7]].tolist() == [0.30000000000000004, 0.6, 0.7]
    assert _COCO101_THRESHOLDS.tolist() == np.linspace(0, 1, 101).tolist()


def test_matlab_colon_emulation_matches_the_documented_example():
    # MathWorks' COLON example: x = 0:0.1:0.3, y = 0:0.1:0.4, x - y(1:end-1) is
    # [0 0 -0.2776e-16 -0.5551e-16]
    x, y = matlab_colon(0.0, 0.1, 0.3), matlab_colon(0.0, 0.1, 0.4)
    diff = np.subtract(x, y[:-1])
    assert diff[:2].tolist() == [0.0, 0.0]
    assert diff[2:] == pytest.approx([-0.2776e-16, -0.5551e-16], abs=1e-20)
    assert x[-1] == 0.3


@pytest.mark.parametrize("method", AP_METHODS)
def test_empty_curve_gives_zero(method):
    assert interpolated_average_precision([], [], method=method) == 0.0
    assert interpolated_average_precision(np.zeros(0), np.zeros(0), method=method) == 0.0


@pytest.mark.parametrize("method", AP_METHODS)
def test_curve_without_recall_gives_zero(method):
    # only false positives
    assert interpolated_average_precision([0.0, 0.0], [0.0, 0.0], method=method) == 0.0


@pytest.mark.parametrize("method", ["voc11", "voc11-devkit"])
def test_perfect_11_point_is_the_float_sum_of_eleven_elevenths(method):
    # eleven times 1/11 added in order is 1.0000000000000002 in float64, as in the references
    assert interpolated_average_precision([0.5, 1.0], [1.0, 1.0], method=method) == \
        1.0000000000000002


def test_nan_precision_is_skipped():
    # a leading detection on a difficult object: devkit precision 0/0 = NaN
    rec, prec = [0.0, 0.5, 1.0], [np.nan, 1.0, 1.0]
    for method in AP_METHODS:
        assert interpolated_average_precision(rec, prec, method=method) == \
            interpolated_average_precision(rec, [0.0, 1.0, 1.0], method=method)
    # only NaN: the devkit's 11-point AP would be NaN; here it is 0 (see the Notes)
    assert interpolated_average_precision([0.0], [np.nan], method="voc11-devkit") == 0.0


def _random_curve(rng: np.random.Generator):
    """A curve from a random TP / FP / ignored sequence, with the devkit's NaN precision."""
    n = int(rng.integers(0, 25))
    kinds = rng.choice(3, size=n, p=[0.45, 0.4, 0.15])  # 0 TP, 1 FP, 2 ignored
    tp = np.cumsum(kinds == 0).astype(float)
    fp = np.cumsum(kinds == 1).astype(float)
    npos = int(tp[-1] if n else 0) + int(rng.integers(0, 4))
    npos = max(npos, 1)
    rec = tp / npos
    with np.errstate(all="ignore"):
        prec = tp / (tp + fp)
    return rec.tolist(), prec.tolist(), tp, fp


@pytest.mark.parametrize("seed", range(300))
def test_against_literal_references(seed):
    rec, prec, tp, fp = _random_curve(np.random.default_rng(seed))
    if any(not math.isnan(p) for p in prec) or not prec:
        assert interpolated_average_precision(rec, prec, method="voc11-devkit") == \
            reference_devkit_ap11(rec, prec)
    else:  # every detection ignored: the devkit says NaN, deteval 0
        assert math.isnan(reference_devkit_ap11(rec, prec))
        assert interpolated_average_precision(rec, prec, method="voc11-devkit") == 0.0
    assert interpolated_average_precision(rec, prec, method="all-points") == \
        pytest.approx(reference_devkit_vocap(rec, prec), abs=1e-12)
    d2_prec = (tp / np.maximum(tp + fp, np.finfo(np.float64).eps)).tolist()
    assert interpolated_average_precision(rec, d2_prec, method="voc11") == \
        reference_detectron2_ap(rec, d2_prec, use_07_metric=True)
    assert interpolated_average_precision(rec, d2_prec, method="all-points") == \
        pytest.approx(reference_detectron2_ap(rec, d2_prec, use_07_metric=False), abs=1e-12)
    coco_prec = (tp / (tp + fp + EPS)).tolist()
    assert interpolated_average_precision(rec, coco_prec, method="coco101") == \
        pytest.approx(reference_coco101_ap(rec, coco_prec), abs=1e-12)


def test_all_points_bit_identical_to_detectron2_sum():
    # detectron2 sums the rectangles with np.sum (pairwise): same array, same bits
    rng = np.random.default_rng(7)
    tp = np.cumsum(rng.random(500) < 0.6).astype(float)
    fp = np.arange(1, 501) - tp
    rec, prec = tp / 400, tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    for i in range(mpre.size - 1, 0, -1):
        mpre[i - 1] = np.maximum(mpre[i - 1], mpre[i])
    i = np.where(mrec[1:] != mrec[:-1])[0]
    expected = np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])
    assert interpolated_average_precision(rec, prec, method="all-points") == expected


@pytest.mark.parametrize("seed", range(5))
def test_coco101_is_the_coco_protocols_ap(seed):
    """One image, one category, one IoU threshold: pycocotools' AP50 (through evaluate_coco,
    equal to it bit for bit) is the coco101 AP of the curve read from the match table."""
    rng = np.random.default_rng(seed)
    boxes = [[float(x), float(y), 20.0, 20.0] for x, y in rng.integers(0, 200, (8, 2))]
    anns = [{"id": i + 1, "image_id": 1, "category_id": 1, "bbox": b, "area": 400.0,
             "iscrowd": int(i == 0)} for i, b in enumerate(boxes)]
    gt = {"images": [{"id": 1}], "categories": [{"id": 1}], "annotations": anns}
    dt = [{"image_id": 1, "category_id": 1, "score": float(rng.choice([0.9, 0.5, 0.3])),
           "bbox": [b[0] + float(rng.integers(-8, 9)), b[1] + float(rng.integers(-8, 9)),
                    20.0, 20.0]} for b in boxes * 2]
    result = deteval.evaluate_coco(gt, dt, iou_thresholds=[0.5])
    status = result.matches.detection_status(0)[0]
    order = np.argsort(result.matches.dt_rank)
    steps = status[order]
    tp = np.cumsum(steps == 1).astype(float)
    fp = np.cumsum(steps == 0).astype(float)
    npig = len(boxes) - 1  # the crowd region is ignored
    ap = interpolated_average_precision(tp / npig, tp / (tp + fp + EPS), method="coco101")
    assert ap == result.stats[1]


finite_curves = st.lists(st.sampled_from([0, 1, 2]), max_size=30).flatmap(
    lambda kinds: st.tuples(st.just(kinds), st.integers(0, 5)))


@given(finite_curves, st.sampled_from(AP_METHODS))
@settings(max_examples=200, deadline=None, derandomize=True)
def test_ap_in_unit_interval(curve, method):
    kinds, extra = curve
    kinds = np.array(kinds, dtype=int)
    tp = np.cumsum(kinds == 0).astype(float)
    fp = np.cumsum(kinds == 1).astype(float)
    npos = max(int(tp[-1]) if len(tp) else 0, 1) + extra
    with np.errstate(all="ignore"):
        prec = tp / (tp + fp)
    ap = interpolated_average_precision(tp / npos, prec, method=method)
    top = 1.0000000000000002 if method.startswith("voc11") else 1.0
    assert 0.0 <= ap <= top


@given(st.integers(1, 60), st.sampled_from(AP_METHODS))
@settings(max_examples=100, deadline=None, derandomize=True)
def test_perfect_curve_gives_one(n, method):
    tp = np.arange(1, n + 1, dtype=float)
    ap = interpolated_average_precision(tp / n, tp / (tp + EPS), method=method)
    assert ap == pytest.approx(1.0, abs=1e-15)


@given(st.integers(1, 40), st.integers(1, 40))
@settings(max_examples=100, deadline=None, derandomize=True)
def test_false_positives_after_the_last_true_positive_change_nothing(n_tp, n_fp):
    tp = np.r_[np.arange(1, n_tp + 1), np.full(n_fp, n_tp)].astype(float)
    fp = np.r_[np.zeros(n_tp), np.arange(1, n_fp + 1)]
    for method in AP_METHODS:
        assert interpolated_average_precision(tp / (2 * n_tp), tp / (tp + fp), method=method) == \
            interpolated_average_precision(tp[:n_tp] / (2 * n_tp),
                                           tp[:n_tp] / (tp[:n_tp] + fp[:n_tp]), method=method)


@pytest.mark.parametrize(
    ("recall", "precision", "method", "error", "message"),
    [
        pytest.param([0.5], [1.0], "voc12", ValueError, r"method must be one of 'voc11'",
                     id="unknown-method"),
        pytest.param([0.5, 1.0], [1.0], "voc11", ValueError,
                     r"recall and precision must have the same length; got 2 and 1",
                     id="lengths"),
        pytest.param([[0.5]], [[1.0]], "voc11", ValueError,
                     r"recall must be a 1-D array .* got shape \(1, 1\)", id="2-d"),
        pytest.param([0.5, 0.25], [1.0, 1.0], "all-points", ValueError,
                     r"recall must be non-decreasing .* recall\[1\] = 0.25 < recall\[0\] = 0.5",
                     id="decreasing-recall"),
        pytest.param([0.5, 1.5], [1.0, 1.0], "all-points", ValueError,
                     r"recall must hold values in \[0, 1\]; got 1.5 at position 1",
                     id="recall-above-one"),
        pytest.param([0.5], [-0.1], "coco101", ValueError,
                     r"precision must hold values in \[0, 1\]; got -0.1 at position 0",
                     id="negative-precision"),
        pytest.param([np.nan], [1.0], "voc11", ValueError,
                     r"recall must not hold NaN; got NaN at position 0", id="nan-recall"),
        pytest.param([0.5], [np.inf], "voc11", ValueError,
                     r"precision must hold values in \[0, 1\]; got inf", id="inf-precision"),
        pytest.param(["a"], [1.0], "voc11", TypeError, r"recall must hold numbers",
                     id="strings"),
    ],
)
def test_errors(recall, precision, method, error, message):
    with pytest.raises(error, match=message):
        interpolated_average_precision(recall, precision, method=method)


def test_average_precision_is_a_deprecated_alias_that_names_the_new_name():
    # deteval.average_precision clashed with deteval.classification.average_precision
    recall, precision = [0.5, 0.5, 1.0], [1.0, 0.5, 2 / 3]
    with pytest.warns(DeprecationWarning, match="interpolated_average_precision"):
        old = deteval.average_precision(recall, precision, method="coco101")
    assert old == interpolated_average_precision(recall, precision, method="coco101")
    assert deteval.interpolated_average_precision is interpolated_average_precision
    assert "average_precision" not in deteval.__all__
