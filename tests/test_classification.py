"""Tests of deteval.classification by hand: the tutorial examples, hand cases of the
definitions without a scikit-learn counterpart, warnings and errors. Parity with
scikit-learn: tests/test_classification_sklearn.py; properties:
tests/test_classification_properties.py."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sklearn
from classificationcases import assert_close
from sklearn import metrics as skm

from deteval import classification as dc
from deteval.errors import UndefinedMetricWarning


@pytest.fixture(scope="module", autouse=True)
def fast_sklearn():
    """scikit-learn's parameter validation is most of its run time on small inputs."""
    with sklearn.config_context(skip_parameter_validation=True):
        yield


# --------------------------------------------------------------------------------------
# 1. Tutorial examples
# --------------------------------------------------------------------------------------

PATIENTS_TRUE = [1, 1, 0, 1, 1, 0, 1, 0, 0, 1]
PATIENTS_PRED = [1, 0, 1, 1, 1, 1, 1, 1, 0, 1]


def test_ten_patients():
    assert dc.confusion_matrix(PATIENTS_TRUE, PATIENTS_PRED).tolist() == [[1, 3], [1, 5]]
    assert dc.accuracy(PATIENTS_TRUE, PATIENTS_PRED) == 0.6
    assert dc.precision(PATIENTS_TRUE, PATIENTS_PRED) == 0.625
    assert dc.recall(PATIENTS_TRUE, PATIENTS_PRED) == 5 / 6  # 0.8333...
    assert dc.f1_score(PATIENTS_TRUE, PATIENTS_PRED) == 10 / 14  # 0.7142...
    assert dc.error_rate(PATIENTS_TRUE, PATIENTS_PRED) == 0.4


def recommender_arrays():
    """50 items: 15 recommended, 12 of them correct; 20 relevant in all."""
    tp, fp, fn = 12, 3, 8
    tn = 50 - tp - fp - fn
    y_true = np.repeat([1, 0, 1, 0], [tp, fp, fn, tn])
    y_pred = np.repeat([1, 1, 0, 0], [tp, fp, fn, tn])
    return y_true, y_pred


def test_recommender():
    y_true, y_pred = recommender_arrays()
    assert dc.precision(y_true, y_pred) == 0.8
    assert dc.recall(y_true, y_pred) == 0.6
    assert dc.specificity(y_true, y_pred) == 0.9
    assert dc.accuracy(y_true, y_pred) == 0.78
    assert dc.fbeta_score(y_true, y_pred, beta=0.5) == 0.75
    assert dc.f1_score(y_true, y_pred) == 24 / 35  # 0.6857...
    assert dc.fbeta_score(y_true, y_pred, beta=2) == 60 / 95  # 0.6315...
    assert dc.false_positive_rate(y_true, y_pred) == pytest.approx(0.1, abs=1e-15)
    assert dc.false_negative_rate(y_true, y_pred) == 0.4


def test_three_class_kappa():
    matrix = np.array([[239, 21, 16], [16, 73, 4], [6, 9, 280]])
    rows, cols = np.indices(matrix.shape)
    y_true = np.repeat(rows.ravel(), matrix.ravel())
    y_pred = np.repeat(cols.ravel(), matrix.ravel())
    assert dc.confusion_matrix(y_true, y_pred).tolist() == matrix.tolist()
    assert dc.accuracy(y_true, y_pred) == 592 / 664  # observed agreement 0.8916...
    assert dc.cohen_kappa(y_true, y_pred) == pytest.approx(0.823, abs=5e-4)


EIGHT_TRUE = [0, 0, 0, 1, 1, 0, 1, 1]
EIGHT_SCORES = [.5, .55, .74, .65, .28, .17, .3, .45]


def test_eight_samples_average_precision_and_trapezoid():
    assert dc.average_precision(EIGHT_TRUE, EIGHT_SCORES) == 0.4928571428571429
    # the exact area is 437/1120 = 0.39017857142857143 (nearest double); the tutorial's
    # 0.3901785714285714 is one ulp below, from summing the trapezoids in order of
    # increasing recall, which is what pr_auc_trapezoid does
    assert dc.pr_auc_trapezoid(EIGHT_TRUE, EIGHT_SCORES) == 0.3901785714285714
    assert dc.pr_auc_trapezoid(EIGHT_TRUE, EIGHT_SCORES) == pytest.approx(
        float(Fraction(437, 1120)), abs=1e-16)
    assert dc.break_even_point(EIGHT_TRUE, EIGHT_SCORES) == 0.25


FIFTEEN_SCORES = [.86, .97, .99, .85, .78, .72, .74, .63, .58, .55, .48, .46, .32, .22, .19]
FIFTEEN_TRUE = [1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0]


@pytest.mark.parametrize("threshold, expected", [
    pytest.param(0.6, (6, 2, 1, 6), id="threshold-0.6"),
    pytest.param(0.5, (7, 3, 0, 5), id="threshold-0.5"),
    pytest.param(0.55, (7, 3, 0, 5), id="score-equal-to-threshold-is-positive"),
])
def test_fifteen_images(threshold, expected):
    counts = dc.counts_at_threshold(FIFTEEN_TRUE, FIFTEEN_SCORES, threshold)
    assert tuple(counts) == expected
    assert counts._fields == ("tp", "fp", "fn", "tn")


def test_fifteen_images_rates_at_0_6():
    tp, fp, fn, _ = dc.counts_at_threshold(FIFTEEN_TRUE, FIFTEEN_SCORES, 0.6)
    assert tp / (tp + fn) == pytest.approx(0.857, abs=5e-4)
    assert tp / (tp + fp) == 0.75
    y_pred = (np.array(FIFTEEN_SCORES) >= 0.6).astype(int)
    assert dc.precision(FIFTEEN_TRUE, y_pred) == 0.75
    assert dc.recall(FIFTEEN_TRUE, y_pred) == 6 / 7


def test_twenty_samples_roc_auc():
    y_true = [1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0]
    scores = [.99, .98, .97, .93, .85, .80, .79, .75, .70, .65, .64, .63, .55, .54, .51, .49,
              .30, .2, .1, .09]
    assert dc.roc_auc_score(y_true, scores) == 0.7708333333333333


# --------------------------------------------------------------------------------------
# 2. Hand cases for the definitions without a scikit-learn counterpart
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("y_true, scores, expected", [
    pytest.param([1, 0, 1, 0], [0.9, 0.5, 0.5, 0.1], 0.75, id="tie-straddles-k"),
    pytest.param([1, 1, 0, 0], [0.9, 0.8, 0.3, 0.1], 1.0, id="perfect"),
    pytest.param([0, 0, 1, 1], [0.9, 0.8, 0.3, 0.1], 0.0, id="reversed"),
    pytest.param([1, 0, 0, 0], [0.5, 0.5, 0.5, 0.5], 0.25, id="all-tied-is-prevalence"),
    pytest.param([1, 1, 1], [0.1, 0.2, 0.3], 1.0, id="all-positive"),
])
def test_break_even_point_cases(y_true, scores, expected):
    assert dc.break_even_point(y_true, scores) == expected


def test_break_even_is_a_point_of_the_curve_without_ties():
    p, r, _ = skm.precision_recall_curve(EIGHT_TRUE, EIGHT_SCORES)
    bep = dc.break_even_point(EIGHT_TRUE, EIGHT_SCORES)
    assert np.any((p == bep) & (r == bep))


def test_expected_cost_hand():
    y_true = [0, 0, 0, 1, 1, 2]
    y_pred = [0, 1, 2, 1, 0, 2]
    costs = [[0, 1, 4], [2, 0, 1], [8, 8, 0]]
    assert dc.expected_cost(y_true, y_pred, costs, normalize="sum") == 7.0
    assert dc.expected_cost(y_true, y_pred, costs) == 7 / 6
    # worst classifier: class 0 -> 4, class 1 -> 2, class 2 -> 8, weighted 3, 2, 1
    assert dc.expected_cost(y_true, y_pred, costs, normalize="max") == 7 / 24


def test_cost_curve_hand():
    # one perfect threshold: the curve is 0 everywhere
    pc, nec = dc.cost_curve([0, 1], [0.2, 0.8])
    assert pc.tolist() == np.linspace(0, 1, 101).tolist()
    assert np.all(nec == 0)
    # scores carry no information: only the trivial classifiers, min(pc, 1 - pc)
    pc, nec = dc.cost_curve([0, 1, 0, 1], [0.5] * 4, probability_costs=[0, 0.3, 0.5, 0.9])
    assert_close(nec, [0, 0.3, 0.5, 0.1])


def test_probability_cost():
    assert dc.probability_cost(0.5, cost_fn=1, cost_fp=1) == 0.5
    assert_close(dc.probability_cost([0, 1], cost_fn=3, cost_fp=2), [0, 1])


def test_expected_cost_max_is_the_cost_curve_line():
    """Normalised expected cost of a hard classifier = its line at its probability-cost."""
    y_true = np.array([0, 0, 0, 1, 1, 0, 1, 1, 0, 0])
    y_pred = np.array([0, 1, 0, 1, 0, 0, 1, 1, 1, 0])
    cost_fn, cost_fp = 5.0, 2.0
    nec = dc.expected_cost(y_true, y_pred, [[0, cost_fp], [cost_fn, 0]], normalize="max")
    pc = dc.probability_cost(y_true.mean(), cost_fn=cost_fn, cost_fp=cost_fp)
    fnr = dc.false_negative_rate(y_true, y_pred)
    fpr = dc.false_positive_rate(y_true, y_pred)
    assert nec == pytest.approx(fnr * pc + fpr * (1 - pc), abs=1e-15)


def test_from_matrices_hand():
    runs = np.array([[[5, 1], [2, 2]], [[3, 0], [1, 6]]])
    p, r, f = dc.precision_recall_fscore_from_matrices(runs, average="micro")
    assert p[1] == 8 / 9 and r[1] == 8 / 11
    p, r, f = dc.precision_recall_fscore_from_matrices(runs, average="macro")
    assert p[1] == (2 / 3 + 1) / 2 and r[1] == (0.5 + 6 / 7) / 2
    assert f[1] == pytest.approx((4 / 7 + 12 / 13) / 2, abs=1e-15)  # mean of the runs' F


def test_string_labels_and_label_order():
    y_true = ["cat", "dog", "dog", "bird"]
    y_pred = ["cat", "cat", "dog", "dog"]
    labels = ["dog", "cat", "bird", "fish"]
    assert dc.confusion_matrix(y_true, y_pred, labels=labels).tolist() == [
        [1, 1, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
    assert_close(dc.recall(y_true, y_pred, average=None, labels=labels, zero_division=np.nan),
                 [0.5, 1.0, 0.0, np.nan])


def test_inputs_are_not_modified():
    y_true = np.array([0, 1, 1, 0, 2])
    y_pred = np.array([0, 2, 1, 0, 2])
    scores = np.array([0.3, 0.1, 0.9, 0.9, 0.2])
    matrix = np.eye(3)[[0, 2, 1, 0, 2]] + 0.1
    copies = [a.copy() for a in (y_true, y_pred, scores, matrix)]
    dc.f1_score(y_true, y_pred, average="macro")
    dc.roc_curve(y_true == 1, scores)
    dc.cost_curve(y_true == 1, scores)
    dc.top_k_accuracy(y_true, matrix, k=2)
    for original, copy in zip((y_true, y_pred, scores, matrix), copies):
        assert np.array_equal(original, copy)


# --------------------------------------------------------------------------------------
# 5. Warnings
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, match", [
    pytest.param(lambda: dc.precision([1, 0], [0, 0]), "Precision is ill-defined",
                 id="precision-no-predicted-positive"),
    pytest.param(lambda: dc.recall([0, 0], [1, 0]), "Recall is ill-defined",
                 id="recall-no-true-positive"),
    pytest.param(lambda: dc.f1_score([0, 0], [0, 0]), "F-score is ill-defined",
                 id="f1-nothing-positive"),
    pytest.param(lambda: dc.specificity([1, 1], [1, 1]), "Specificity is ill-defined",
                 id="specificity-no-negative"),
    pytest.param(lambda: dc.precision([0, 1, 2], [0, 0, 2], average="macro"),
                 r"for labels \[1\]", id="macro-names-the-class"),
    pytest.param(lambda: dc.balanced_accuracy([0, 0], [0, 1]), "not in y_true",
                 id="balanced-accuracy-extra-class"),
    pytest.param(lambda: dc.cohen_kappa([1, 1], [1, 1]), "kappa is undefined",
                 id="kappa-one-class"),
    pytest.param(lambda: dc.matthews_corrcoef([1, 1], [0, 1]), "Matthews",
                 id="mcc-one-class"),
    pytest.param(lambda: dc.roc_auc_score([1, 1], [0.2, 0.3]), "Only one class",
                 id="roc-auc-one-class"),
    pytest.param(lambda: dc.roc_curve([0, 0], [0.2, 0.3]), "No positive samples",
                 id="roc-curve-no-positive"),
    pytest.param(lambda: dc.average_precision([0, 0], [0.2, 0.3]), "No positive samples",
                 id="ap-no-positive"),
    pytest.param(lambda: dc.break_even_point([0, 0], [0.2, 0.3]), "No positive samples",
                 id="bep-no-positive"),
    pytest.param(lambda: dc.cost_curve([1, 1], [0.2, 0.3]), "only one class",
                 id="cost-curve-one-class"),
    pytest.param(lambda: dc.top_k_accuracy([0, 1], [[.2, .8], [.6, .4]], k=2), "k \\(2\\)",
                 id="top-k-k-equals-classes"),
    pytest.param(lambda: dc.top_k_accuracy([0, 1], [[.2, .8], [.6, .4]], k=5), "k \\(5\\)",
                 id="top-k-k-larger-than-classes"),
    pytest.param(lambda: dc.expected_cost([0, 1], [0, 1], [[0, 0], [0, 0]], normalize="max"),
                 "largest possible expected cost is 0", id="expected-cost-all-zero"),
])
def test_undefined_values_warn(call, match):
    with pytest.warns(UndefinedMetricWarning, match=match) as caught:
        call()
    assert caught[0].filename == __file__  # points at the caller, not at deteval


@pytest.mark.parametrize("zero_division, expected", [
    pytest.param(0, 0.0, id="zero"), pytest.param(1, 1.0, id="one"),
    pytest.param(np.nan, np.nan, id="nan"),
])
def test_zero_division_values_are_silent(zero_division, expected):
    assert_close(dc.precision([1, 0], [0, 0], zero_division=zero_division), expected)
    assert_close(dc.f1_score([0, 0], [0, 0], zero_division=zero_division), expected)


def test_zero_division_nan_skipped_in_macro():
    # class 1 never predicted: NaN precision, left out of the mean
    assert dc.precision([0, 1, 2], [0, 0, 2], average="macro", zero_division=np.nan) == 0.75


def test_beta_zero_and_infinity():
    y_true, y_pred = recommender_arrays()
    assert dc.fbeta_score(y_true, y_pred, beta=0) == dc.precision(y_true, y_pred)
    assert dc.fbeta_score(y_true, y_pred, beta=np.inf) == dc.recall(y_true, y_pred)


# --------------------------------------------------------------------------------------
# 6. Errors
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, error, match", [
    pytest.param(lambda: dc.confusion_matrix([0, 1, 1], [0, 1]), ValueError,
                 r"y_pred must have the same length as y_true \(3\); got 2", id="length-labels"),
    pytest.param(lambda: dc.roc_curve([0, 1, 1], [0.1, 0.2]), ValueError,
                 r"scores must have the same length as y_true \(3\); got 2", id="length-scores"),
    pytest.param(lambda: dc.top_k_accuracy([0, 1], [[.1, .9]]), ValueError,
                 "score_matrix must have the same length", id="length-top-k"),
    pytest.param(lambda: dc.mean_squared_error([1, 2], [1, 2, 3]), ValueError,
                 "y_pred must have the same shape as y_true", id="length-regression"),
    pytest.param(lambda: dc.confusion_matrix([0, 1, 3], [0, 1, 1], labels=[0, 1]), ValueError,
                 r"y_true must hold only values in labels \[0, 1\]; got \[3\] not in labels",
                 id="truth-outside-labels"),
    pytest.param(lambda: dc.precision([0, 1], [0, 7], labels=[0, 1], average="macro"),
                 ValueError, r"y_pred must hold only values in labels .*got \[7\]",
                 id="prediction-outside-labels"),
    pytest.param(lambda: dc.top_k_accuracy([0, 5], [[.1, .9], [.5, .5]], labels=[0, 1]),
                 ValueError, r"y_true must hold only values in labels", id="top-k-outside"),
    pytest.param(lambda: dc.confusion_matrix([0, 1], [0, 1], labels=[0, 1, 1]), ValueError,
                 r"labels must be unique; got \[1\] repeated", id="labels-not-unique"),
    pytest.param(lambda: dc.top_k_accuracy([0, 1], [0.3, 0.8]), ValueError,
                 r"score_matrix must be 2-D \(n_samples, n_classes\); got shape \(2,\)",
                 id="top-k-scores-1-D"),
    pytest.param(lambda: dc.top_k_accuracy([0, 1, 2], [[.1, .9]] * 3), ValueError,
                 r"one column per class of y_true \(3\); got 2 columns",
                 id="top-k-columns"),
    pytest.param(lambda: dc.top_k_accuracy([0, 1], [[.1, .9]] * 2, k=0), ValueError,
                 "k must be at least 1; got 0", id="top-k-zero"),
    pytest.param(lambda: dc.top_k_accuracy([0, 1], [[.1, .9]] * 2, k=1.5), TypeError,
                 "k must be an integer; got float", id="top-k-float"),
    pytest.param(lambda: dc.roc_auc_score([0, 1], [0.5, np.nan]), ValueError,
                 "scores must be finite; got nan at index 1", id="nan-scores"),
    pytest.param(lambda: dc.average_precision([0, 1], [np.inf, 0.1]), ValueError,
                 "scores must be finite; got inf at index 0", id="inf-scores"),
    pytest.param(lambda: dc.top_k_accuracy([0, 1], [[.1, np.nan], [.5, .5]]), ValueError,
                 r"score_matrix must be finite; got nan at \[0, 1\]", id="nan-score-matrix"),
    pytest.param(lambda: dc.counts_at_threshold([0, 1], [0.2, 0.4], np.nan), ValueError,
                 "threshold must not be NaN", id="nan-threshold"),
    pytest.param(lambda: dc.confusion_matrix([], []), ValueError,
                 "y_true must be non-empty; got 0 samples", id="empty-labels"),
    pytest.param(lambda: dc.roc_auc_score([], []), ValueError,
                 "y_true must be non-empty", id="empty-scores"),
    pytest.param(lambda: dc.root_mean_squared_error([], []), ValueError,
                 "y_true must be non-empty", id="empty-regression"),
    pytest.param(lambda: dc.accuracy([0, np.nan], [0, 1]), ValueError,
                 "y_true must be finite; got nan at index 1", id="nan-label"),
    pytest.param(lambda: dc.accuracy([[0, 1]], [[0, 1]]), ValueError,
                 r"y_true must be 1-D; got shape \(1, 2\)", id="2-D-labels"),
    pytest.param(lambda: dc.accuracy([0, 1], ["0", "1"]), TypeError,
                 r"y_pred must hold the same kind of labels as y_true \(numbers\); got strings",
                 id="labels-of-two-kinds"),
    pytest.param(lambda: dc.precision([0, 1, 2], [0, 1, 2]), ValueError,
                 r"average='binary' needs at most two classes; got 3", id="binary-multiclass"),
    pytest.param(lambda: dc.precision([0, 2], [0, 2]), ValueError,
                 r"pos_label must be one of \[0, 2\]; got 1", id="pos-label-absent"),
    pytest.param(lambda: dc.precision([0, 1], [0, 1], average="samples"), ValueError,
                 "average must be 'binary', 'micro', 'macro', 'weighted' or None; got 'samples'",
                 id="bad-average"),
    pytest.param(lambda: dc.recall([0, 1], [0, 1], zero_division=0.5), ValueError,
                 "zero_division must be 'warn', 0, 1 or nan; got 0.5", id="bad-zero-division"),
    pytest.param(lambda: dc.fbeta_score([0, 1], [0, 1], beta=-1), ValueError,
                 "beta must be non-negative; got -1", id="negative-beta"),
    pytest.param(lambda: dc.cohen_kappa([0, 1], [0, 1], weights="cubic"), ValueError,
                 "weights must be None, 'linear' or 'quadratic'; got 'cubic'", id="kappa-weights"),
    pytest.param(lambda: dc.roc_curve(["a", "b"], [0.1, 0.2]), ValueError,
                 r"pos_label must be given when y_true is not \{0, 1\} or \{-1, 1\}",
                 id="pos-label-needed"),
    pytest.param(lambda: dc.root_mean_squared_log_error([1, -0.5], [1, 2]), ValueError,
                 "y_true must be non-negative for the log error; got -0.5",
                 id="rmsle-negative"),
    pytest.param(lambda: dc.mean_absolute_error([1, 2], [1, 2], multioutput="sum"),
                 ValueError, "multioutput must be", id="bad-multioutput"),
    pytest.param(lambda: dc.expected_cost([0, 1], [0, 1], [[0, 1, 2]]), ValueError,
                 r"cost_matrix must have shape \(2, 2\)", id="cost-matrix-shape"),
    pytest.param(lambda: dc.expected_cost([0, 1], [0, 1], [[0, 1], [1, 0]], normalize=True),
                 ValueError, "normalize must be 'mean', 'sum' or 'max'; got True",
                 id="bad-normalize"),
    pytest.param(lambda: dc.cost_curve([0, 1], [0.1, 0.2], probability_costs=[0.5, 2]),
                 ValueError, r"probability_costs must be in \[0, 1\]", id="pc-out-of-range"),
    pytest.param(lambda: dc.probability_cost(1.5, cost_fn=1, cost_fp=1), ValueError,
                 r"p_positive must be in \[0, 1\]", id="bad-prior"),
    pytest.param(lambda: dc.precision_recall_fscore_from_matrices([[1, 2, 3]]), ValueError,
                 r"confusion_matrices must have shape \(R, K, K\)", id="matrices-shape"),
    pytest.param(lambda: dc.precision_recall_fscore_from_matrices([[1, -2], [3, 4]]),
                 ValueError, "non-negative finite counts", id="matrices-negative"),
    pytest.param(lambda: dc.precision_recall_fscore_from_matrices([[1, 2], [3, 4]],
                                                                  average="weighted"),
                 ValueError, "average must be 'micro' or 'macro'", id="matrices-average"),
    pytest.param(lambda: dc.roc_curve([0, 1], ["a", "b"]), TypeError,
                 "scores must be real numbers", id="string-scores"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_error_message_shape():
    """Messages follow '{what} must be {expectation}; got {actual}'."""
    with pytest.raises(ValueError) as info:
        dc.recall([0, 1], [0, 1], zero_division="nope")
    assert " must be " in str(info.value) and "; got " in str(info.value)
