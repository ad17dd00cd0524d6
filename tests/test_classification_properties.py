"""Hypothesis properties of deteval.classification: confusion-matrix sums, symmetry, F-beta
between precision and recall, invariance of AUC and AP under increasing transforms, AUC as
the pairwise probability, counts at thresholds, cost curves, top-k monotone in k."""

from __future__ import annotations

import numpy as np
import pytest
from classificationcases import assert_close, recorded
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval import classification as dc
from deteval.errors import UndefinedMetricWarning

# --------------------------------------------------------------------------------------
# 4. Properties
# --------------------------------------------------------------------------------------

label_arrays = st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 3), min_size=n, max_size=n),
    st.lists(st.integers(0, 3), min_size=n, max_size=n)))

scored = st.integers(2, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 1), min_size=n, max_size=n),
    st.lists(st.integers(-20, 20), min_size=n, max_size=n)))

FAST = settings(max_examples=40, deadline=None)


@FAST
@given(label_arrays)
def test_confusion_matrix_sums(pair):
    y_true, y_pred = (np.array(a) for a in pair)
    matrix = dc.confusion_matrix(y_true, y_pred, labels=[0, 1, 2, 3])
    assert matrix.sum() == len(y_true)
    assert matrix.sum(axis=1).tolist() == np.bincount(y_true, minlength=4).tolist()
    assert matrix.sum(axis=0).tolist() == np.bincount(y_pred, minlength=4).tolist()
    assert dc.accuracy(y_true, y_pred) + dc.error_rate(y_true, y_pred) == pytest.approx(1)


@FAST
@given(label_arrays)
def test_swapping_truth_and_prediction(pair):
    y_true, y_pred = pair
    labels = [0, 1, 2, 3]
    for average in ("micro", "macro", None):
        assert_close(dc.recall(y_true, y_pred, average=average, labels=labels,
                               zero_division=np.nan),
                     dc.precision(y_pred, y_true, average=average, labels=labels,
                                  zero_division=np.nan))
    with recorded():
        assert_close(dc.cohen_kappa(y_true, y_pred), dc.cohen_kappa(y_pred, y_true))
        assert -1 <= dc.matthews_corrcoef(y_true, y_pred) <= 1
    assert 0 <= dc.balanced_accuracy(y_true, y_true) == 1


@FAST
@given(label_arrays, st.sampled_from([0.5, 1.0, 2.0]))
def test_fbeta_between_precision_and_recall(pair, beta):
    y_true, y_pred = pair
    options = dict(average=None, labels=[0, 1, 2, 3], zero_division=np.nan)
    p, r = dc.precision(*pair, **options), dc.recall(*pair, **options)
    f = dc.fbeta_score(y_true, y_pred, beta=beta, **options)
    defined = ~np.isnan(p) & ~np.isnan(r)
    assert np.all(f[defined] >= np.minimum(p, r)[defined] - 1e-12)
    assert np.all(f[defined] <= np.maximum(p, r)[defined] + 1e-12)


@FAST
@given(scored, st.sampled_from(["affine", "cube", "exp"]))
def test_auc_and_ap_invariant_under_increasing_transforms(data, transform):
    y_true, scores = (np.array(a) for a in data)
    if y_true.min() == y_true.max():
        y_true[0] = 1 - y_true[0]
    moved = {"affine": 3 * scores + 7, "cube": scores.astype(float) ** 3,
             "exp": np.exp(scores / 4.0)}[transform]
    assert_close(dc.roc_auc_score(y_true, moved), dc.roc_auc_score(y_true, scores))
    assert_close(dc.average_precision(y_true, moved), dc.average_precision(y_true, scores))
    assert_close(dc.break_even_point(y_true, moved), dc.break_even_point(y_true, scores))
    assert_close(dc.roc_auc_score(y_true, -scores), 1 - dc.roc_auc_score(y_true, scores))
    assert 0 <= dc.average_precision(y_true, scores) <= 1


@FAST
@given(scored)
def test_auc_is_the_pairwise_probability(data):
    y_true, scores = (np.array(a) for a in data)
    if y_true.min() == y_true.max():
        y_true[0] = 1 - y_true[0]
    pos, neg = scores[y_true == 1][:, None], scores[y_true == 0][None, :]
    expected = np.mean((pos > neg) + 0.5 * (pos == neg))
    assert_close(dc.roc_auc_score(y_true, scores), expected)


@FAST
@given(scored, st.lists(st.floats(-25, 25), min_size=1, max_size=5))
def test_counts_at_threshold_properties(data, thresholds):
    y_true, scores = (np.array(a) for a in data)
    thresholds = np.sort(thresholds)
    tp, fp, fn, tn = dc.counts_at_threshold(y_true, scores, thresholds)
    assert np.all(tp + fn == y_true.sum())
    assert np.all(tp + fp + fn + tn == len(y_true))
    assert np.all(np.diff(tp) <= 0) and np.all(np.diff(fp) <= 0)


@FAST
@given(scored)
def test_cost_curve_below_trivial_classifiers(data):
    y_true, scores = (np.array(a) for a in data)
    if y_true.min() == y_true.max():
        y_true[0] = 1 - y_true[0]
    pc, nec = dc.cost_curve(y_true, scores)
    assert np.all(nec >= 0)
    assert np.all(nec <= np.minimum(pc, 1 - pc) + 1e-15)


@FAST
@given(st.integers(1, 20).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 3), min_size=n, max_size=n),
    st.lists(st.lists(st.integers(0, 4), min_size=4, max_size=4), min_size=n, max_size=n))))
def test_top_k_monotone_in_k(data):
    y_true, scores = np.array(data[0]), np.array(data[1], dtype=float)
    values = [dc.top_k_accuracy(y_true, scores, k=k, labels=[0, 1, 2, 3]) for k in (1, 2, 3)]
    assert values == sorted(values)
    with pytest.warns(UndefinedMetricWarning, match="every sample is a hit"):
        assert dc.top_k_accuracy(y_true, scores, k=4, labels=[0, 1, 2, 3]) == 1.0
