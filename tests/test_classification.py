"""Tests of deteval.classification: the tutorial examples, parity with scikit-learn on seeded
random inputs (every function, 200+ inputs each), hypothesis properties, warnings and errors.

The random inputs come in named scenarios (binary, multiclass, imbalanced, ties, a class
absent from the predictions, a single class); each parity test runs ``PER_SCENARIO`` seeds of
one scenario, so that a failure names the scenario and the seed.
"""

from __future__ import annotations

import functools
import warnings
from contextlib import contextmanager
from fractions import Fraction

import numpy as np
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from deteval import classification as dc
from deteval.errors import UndefinedMetricWarning

PER_SCENARIO = 34  # x 6 scenarios = 204 inputs per function
SCENARIOS = ["binary", "multiclass", "imbalanced", "ties", "absent-class", "single-class"]
CURVE_SCENARIOS = ["binary", "imbalanced", "ties", "single-class", "one-vs-rest", "tiny"]
ZERO_DIVISIONS = ["warn", 0, 1, np.nan]
ATOL = 1e-12


@pytest.fixture(scope="module", autouse=True)
def fast_sklearn():
    """scikit-learn's parameter validation is most of its run time on small inputs."""
    with sklearn.config_context(skip_parameter_validation=True):
        yield


@contextmanager
def recorded():
    """Record every warning (pytest turns unrecorded ones into errors)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def warned(caught, start: str = "") -> bool:
    return any(str(w.message).startswith(start) for w in caught)


def assert_close(actual, expected, context=""):
    np.testing.assert_allclose(
        np.asarray(actual, dtype=float), np.asarray(expected, dtype=float),
        rtol=0, atol=ATOL, equal_nan=True, err_msg=str(context),
    )


# --------------------------------------------------------------------------------------
# Seeded random inputs
# --------------------------------------------------------------------------------------

def labelled_case(scenario: str, seed: int) -> dict:
    """Random true and predicted labels for a scenario, with label values of varied kinds."""
    rng = np.random.default_rng([SCENARIOS.index(scenario), seed])
    n = int(rng.integers(1, 40))
    if scenario == "binary":
        n_classes = 2
    elif scenario in ("multiclass", "absent-class"):
        n_classes = int(rng.integers(3, 7))
    elif scenario == "imbalanced":
        n_classes, n = int(rng.integers(2, 5)), int(rng.integers(20, 80))
    elif scenario == "ties":
        n_classes = int(rng.integers(2, 5))
    else:  # single-class
        n_classes = int(rng.integers(1, 3))
    probs = rng.dirichlet(np.full(n_classes, 0.3 if scenario == "imbalanced" else 3.0))
    truth = rng.choice(n_classes, n, p=probs)
    if scenario == "single-class":
        truth[:] = truth[0]
    copy = rng.random(n) < rng.random()
    pred = np.where(copy, truth, rng.integers(0, n_classes, n))
    if scenario == "single-class" and seed % 2 == 0:
        pred[:] = truth[0]
    if scenario == "absent-class":
        missing = int(rng.integers(n_classes))
        truth[0] = missing
        pred[pred == missing] = (missing + 1) % n_classes
    # label values: 0..K-1, spread integers, or strings
    kind = seed % 3
    values = [np.arange(10), np.array([-3, 2, 5, 9, 11, 20, 40]), np.array(list("abcdefg"))][kind]
    universe = np.unique(np.concatenate([truth, pred]))
    labels = None
    if seed % 4 >= 2:  # the full label set, maybe with an absent class, in a random order
        extra = [n_classes] if seed % 4 == 3 else []
        labels = values[rng.permutation(np.concatenate([universe, extra]).astype(int))]
    classes = values[universe] if labels is None else labels
    return {"y_true": values[truth], "y_pred": values[pred], "labels": labels,
            "classes": classes, "rng": rng}


def scored_case(scenario: str, seed: int) -> dict:
    """Random labels and scores for the binary curves; ``positive`` is ``y_true == pos_label``."""
    rng = np.random.default_rng([100 + CURVE_SCENARIOS.index(scenario), seed])
    n = int(rng.integers(2, 60))
    pos_label = None
    if scenario == "tiny":
        n = int(rng.integers(1, 5))
    if scenario == "imbalanced":
        n = int(rng.integers(20, 100))
        truth = (rng.random(n) < rng.uniform(0.03, 0.2)).astype(int)
    elif scenario == "single-class":
        truth = np.full(n, seed % 2)
    elif scenario == "one-vs-rest":
        truth = np.array(list("abcd"))[rng.integers(0, 4, n)]
        pos_label = "abcd"[seed % 4]
    else:
        truth = rng.integers(0, 2, n)
    positive = truth == (1 if pos_label is None else pos_label)
    scores = rng.normal(size=n) + rng.uniform(0, 2) * positive
    if scenario == "ties" or (scenario == "tiny" and seed % 2):
        scores = np.round(scores * 2) / 2
    if seed % 5 == 0 and scenario == "binary":
        truth = np.where(truth == 1, 1, -1)  # the {-1, 1} convention
    return {"y_true": truth, "scores": scores, "pos_label": pos_label, "positive": positive,
            "rng": rng}


def cases(kind: str, scenario: str, count: int = PER_SCENARIO):
    make = labelled_case if kind == "labels" else scored_case
    for seed in range(count):
        yield seed, make(scenario, seed)


def by_scenario(scenarios):
    return pytest.mark.parametrize("scenario", [pytest.param(s, id=s) for s in scenarios])


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
# 3. Parity with scikit-learn on seeded random inputs
# --------------------------------------------------------------------------------------

@by_scenario(SCENARIOS)
def test_confusion_matrix_matches_sklearn(scenario):
    for seed, case in cases("labels", scenario):
        with recorded():  # scikit-learn warns about 1 x 1 matrices
            expected = skm.confusion_matrix(case["y_true"], case["y_pred"],
                                            labels=case["labels"])
        actual = dc.confusion_matrix(case["y_true"], case["y_pred"], labels=case["labels"])
        assert actual.dtype == np.int64
        assert np.array_equal(actual, expected), (scenario, seed)


def _average_and_pos_label(case, seed):
    """An average valid for the case (binary only with at most two classes)."""
    classes = case["classes"]
    averages = ["micro", "macro", "weighted", None]
    if len(classes) <= 2:
        averages.append("binary")
    average = averages[seed % len(averages)]
    if average != "binary":
        return average, 1
    present = np.unique(np.concatenate([case["y_true"], case["y_pred"]]))
    pool = present if len(present) == 2 else classes
    return average, pool[int(case["rng"].integers(len(pool)))]


@by_scenario(SCENARIOS)
def test_precision_recall_fbeta_match_sklearn(scenario):
    for seed, case in cases("labels", scenario):
        average, pos_label = _average_and_pos_label(case, seed)
        zero_division = ZERO_DIVISIONS[(seed // 5) % 4]
        beta = [1.0, 0.5, 2.0, 3.0][seed % 4]
        labels = case["labels"] if average != "binary" else None
        with recorded() as sk_warnings:
            expected = skm.precision_recall_fscore_support(
                case["y_true"], case["y_pred"], beta=beta, average=average, labels=labels,
                pos_label=pos_label, zero_division=zero_division)
        options = dict(average=average, labels=labels, pos_label=pos_label,
                       zero_division=zero_division)
        for name, function, start in [
            ("precision", dc.precision, "Precision is"),
            ("recall", dc.recall, "Recall is"),
            ("fbeta", functools.partial(dc.fbeta_score, beta=beta), "F-score is"),
        ]:
            with recorded() as ours:
                value = function(case["y_true"], case["y_pred"], **options)
            index = ["precision", "recall", "fbeta"].index(name)
            context = (scenario, seed, name, options, beta)
            assert_close(value, expected[index], context)
            assert isinstance(value, float) == (average is not None), context
            assert warned(ours, start) == warned(sk_warnings, start), context
            assert all(issubclass(w.category, UndefinedMetricWarning) for w in ours), context


@by_scenario(SCENARIOS)
def test_f1_score_matches_sklearn(scenario):
    for seed, case in cases("labels", scenario):
        average, pos_label = _average_and_pos_label(case, seed + 1)
        zero_division = ZERO_DIVISIONS[seed % 4]
        labels = case["labels"] if average != "binary" else None
        with recorded() as theirs:
            expected = skm.f1_score(case["y_true"], case["y_pred"], average=average,
                                    labels=labels, pos_label=pos_label,
                                    zero_division=zero_division)
        with recorded() as ours:
            actual = dc.f1_score(case["y_true"], case["y_pred"], average=average, labels=labels,
                                 pos_label=pos_label, zero_division=zero_division)
        assert_close(actual, expected, (scenario, seed, average))
        assert bool(ours) == bool(theirs), (scenario, seed, average)


def reference_rates(case, average, pos_label, zero_division):
    """Specificity, FPR and FNR from scikit-learn's one-vs-rest counts, averaged literally."""
    classes = np.asarray(case["classes"])
    if average == "binary" and not np.isin(pos_label, classes):
        classes = np.append(classes, pos_label)
    counts = skm.multilabel_confusion_matrix(case["y_true"], case["y_pred"], labels=classes)
    if average == "binary":
        counts = counts[list(classes).index(pos_label)][None]
    tn, fp, fn, tp = (counts[:, i, j].astype(float) for i, j in ((0, 0), (0, 1), (1, 0), (1, 1)))
    support = tp + fn
    fill = 0.0 if zero_division == "warn" else float(zero_division)
    results = []
    for num, den in ((tn, tn + fp), (fp, fp + tn), (fn, fn + tp)):
        if average == "micro":
            num, den = num.sum(keepdims=True), den.sum(keepdims=True)
        values = np.array([n / d if d else fill for n, d in zip(num, den)])
        keep = ~np.isnan(values)
        if average is None:
            results.append(values)
        elif average in ("binary", "micro"):
            results.append(values[0])
        elif not keep.any():
            results.append(np.nan)
        elif average == "weighted" and support[keep].sum():
            results.append(np.average(values[keep], weights=support[keep]))
        else:
            results.append(values[keep].mean())
    return results


@by_scenario(SCENARIOS)
def test_one_vs_rest_rates_match_sklearn_counts(scenario):
    """specificity, false_positive_rate and false_negative_rate."""
    for seed, case in cases("labels", scenario):
        average, pos_label = _average_and_pos_label(case, seed)
        zero_division = ZERO_DIVISIONS[(seed // 5) % 4]
        labels = case["labels"] if average != "binary" else None
        expected = reference_rates(case, average, pos_label, zero_division)
        for function, value in zip(
            (dc.specificity, dc.false_positive_rate, dc.false_negative_rate), expected
        ):
            with recorded():
                actual = function(case["y_true"], case["y_pred"], average=average,
                                  labels=labels, pos_label=pos_label,
                                  zero_division=zero_division)
            assert_close(actual, value, (scenario, seed, function.__name__, average))


@by_scenario(["binary", "single-class"])
def test_binary_rates_are_sklearn_recalls(scenario):
    """Specificity is the recall of the negative class; FNR = 1 - recall where defined."""
    for seed, case in cases("labels", scenario):
        average, pos_label = _average_and_pos_label(case, 4 + 5 * seed)
        assert average == "binary" or len(case["classes"]) > 2
        if average != "binary":
            continue
        y_true, y_pred = case["y_true"] == pos_label, case["y_pred"] == pos_label
        with recorded():
            spec = skm.recall_score(y_true, y_pred, pos_label=False, zero_division=np.nan)
            sens = skm.recall_score(y_true, y_pred, pos_label=True, zero_division=np.nan)
            mine = [f(case["y_true"], case["y_pred"], pos_label=pos_label, zero_division=np.nan)
                    for f in (dc.specificity, dc.false_positive_rate, dc.false_negative_rate)]
        assert_close(mine, [spec, 1 - spec, 1 - sens], (scenario, seed))


@by_scenario(SCENARIOS)
def test_scalar_summaries_match_sklearn(scenario):
    for seed, case in cases("labels", scenario):
        y_true, y_pred, labels = case["y_true"], case["y_pred"], case["labels"]
        weights = [None, "linear", "quadratic"][seed % 3]
        with recorded() as theirs:
            sk_accuracy = skm.accuracy_score(y_true, y_pred)
            expected = [
                sk_accuracy,
                1 - sk_accuracy,
                skm.balanced_accuracy_score(y_true, y_pred),
                skm.cohen_kappa_score(y_true, y_pred, labels=labels, weights=weights),
                skm.matthews_corrcoef(y_true, y_pred),
            ]
        with recorded() as ours:
            actual = [
                dc.accuracy(y_true, y_pred, labels=labels),
                dc.error_rate(y_true, y_pred, labels=labels),
                dc.balanced_accuracy(y_true, y_pred, labels=labels),
                dc.cohen_kappa(y_true, y_pred, labels=labels, weights=weights),
                dc.matthews_corrcoef(y_true, y_pred, labels=labels),
            ]
        assert_close(actual, expected, (scenario, seed, weights))
        for start in ("y_pred contains classes not in y_true", "Cohen"):
            sk_start = "`y" if start == "Cohen" else start
            assert warned(ours, start) == warned(theirs, sk_start), (scenario, seed, start)


@by_scenario(SCENARIOS)
def test_from_matrices_match_sklearn(scenario):
    """micro = scikit-learn on the concatenated runs; macro = mean of per-run values."""
    for seed, case in cases("labels", scenario):
        rng = case["rng"]
        classes = np.asarray(case["classes"])
        runs = [(case["y_true"], case["y_pred"])]
        for _ in range(seed % 3):  # more runs over the same classes, some classes unused
            n = int(rng.integers(1, 30))
            used = classes[: int(rng.integers(1, len(classes) + 1))]
            truth = rng.choice(used, n)
            runs.append((truth, np.where(rng.random(n) < 0.6, truth, rng.choice(used, n))))
        average = "micro" if seed % 2 else "macro"
        zero_division = ZERO_DIVISIONS[(seed // 2) % 4]
        beta = float(rng.choice([0.5, 1.0, 2.0]))
        matrices = [dc.confusion_matrix(t, p, labels=classes) for t, p in runs]
        with recorded():
            if average == "micro":
                expected = skm.precision_recall_fscore_support(
                    np.concatenate([t for t, _ in runs]), np.concatenate([p for _, p in runs]),
                    labels=classes, average=None, beta=beta, zero_division=zero_division)[:3]
            else:
                per_run = np.array([skm.precision_recall_fscore_support(
                    t, p, labels=classes, average=None, beta=beta,
                    zero_division=zero_division)[:3] for t, p in runs])
                expected = np.nanmean(per_run, axis=0)
            actual = dc.precision_recall_fscore_from_matrices(
                matrices, average=average, beta=beta, zero_division=zero_division)
        assert_close(actual, expected, (scenario, seed, average, zero_division))


@by_scenario(CURVE_SCENARIOS)
def test_roc_matches_sklearn(scenario):
    for seed, case in cases("scores", scenario):
        y_true, scores, pos_label = case["y_true"], case["scores"], case["pos_label"]
        drop = bool(seed % 2)
        with recorded() as theirs:
            expected = skm.roc_curve(y_true, scores, pos_label=pos_label,
                                     drop_intermediate=drop)
            expected_auc = skm.roc_auc_score(case["positive"], scores)
        with recorded() as ours:
            actual = dc.roc_curve(y_true, scores, pos_label=pos_label, drop_intermediate=drop)
            auc = dc.roc_auc_score(y_true, scores, pos_label=pos_label)
        for a, e in zip(actual, expected):
            assert a.shape == e.shape, (scenario, seed)
            assert_close(a, e, (scenario, seed))
        assert_close(auc, expected_auc, (scenario, seed))
        assert len(ours) == len(theirs), (scenario, seed)


@by_scenario(CURVE_SCENARIOS)
def test_precision_recall_matches_sklearn(scenario):
    for seed, case in cases("scores", scenario):
        y_true, scores, pos_label = case["y_true"], case["scores"], case["pos_label"]
        drop = bool(seed % 2)
        with recorded() as theirs:
            expected = skm.precision_recall_curve(case["positive"], scores,
                                                  drop_intermediate=drop)
            expected_ap = skm.average_precision_score(case["positive"], scores)
            p, r, _ = expected if not drop else skm.precision_recall_curve(case["positive"],
                                                                           scores)
            expected_area = skm.auc(r, p) if case["positive"].any() else np.nan
        with recorded() as ours:
            actual = dc.precision_recall_curve(y_true, scores, pos_label=pos_label,
                                               drop_intermediate=drop)
            ap = dc.average_precision(y_true, scores, pos_label=pos_label)
            area = dc.pr_auc_trapezoid(y_true, scores, pos_label=pos_label)
        for a, e in zip(actual, expected):
            assert a.shape == e.shape, (scenario, seed)
            assert_close(a, e, (scenario, seed))
        assert_close([ap, area], [expected_ap, expected_area], (scenario, seed))
        assert bool(ours) == bool(theirs), (scenario, seed)


def reference_break_even(positive, scores):
    """Literal: rank samples, give each tie group its mean positive rate, sum the top P."""
    n_pos = int(positive.sum())
    distinct = sorted(set(scores.tolist()), reverse=True)
    taken, tp = 0, 0.0
    for value in distinct:
        group = positive[scores == value]
        take = min(len(group), n_pos - taken)
        tp += take * group.mean()
        taken += take
        if taken == n_pos:
            break
    return tp / n_pos


@by_scenario(CURVE_SCENARIOS)
def test_break_even_matches_reference(scenario):
    for seed, case in cases("scores", scenario, count=42):  # no-positive cases are skipped
        if not case["positive"].any():
            continue
        actual = dc.break_even_point(case["y_true"], case["scores"], pos_label=case["pos_label"])
        expected = reference_break_even(case["positive"], case["scores"])
        assert_close(actual, expected, (scenario, seed))


@by_scenario(CURVE_SCENARIOS)
def test_counts_at_threshold_match_sklearn(scenario):
    for _, case in cases("scores", scenario):
        rng = case["rng"]
        scores = case["scores"]
        thresholds = np.append(rng.choice(scores, 3), rng.normal(size=2))
        counts = dc.counts_at_threshold(case["y_true"], scores, thresholds,
                                        pos_label=case["pos_label"])
        positive = case["positive"]
        for i, threshold in enumerate(thresholds):  # the definition, literally
            predicted = scores >= threshold
            expected = [np.sum(positive & predicted), np.sum(~positive & predicted),
                        np.sum(positive & ~predicted), np.sum(~positive & ~predicted)]
            assert [c[i] for c in counts] == expected


def score_matrix_case(scenario: str, seed: int):
    rng = np.random.default_rng([200 + SCENARIOS.index(scenario), seed])
    case = labelled_case(scenario, seed)
    classes = np.sort(np.asarray(case["classes"]))
    n_classes = len(classes)
    scores = rng.random((len(case["y_true"]), n_classes))
    if scenario == "ties" or seed % 3 == 0:
        scores = np.round(scores * 3) / 3
    return case["y_true"], scores, classes, rng


@by_scenario(SCENARIOS)
def test_top_k_accuracy_matches_sklearn(scenario):
    for seed in range(40):  # single-class cases are skipped: 200+ inputs in all
        y_true, scores, classes, rng = score_matrix_case(scenario, seed)
        n_classes = len(classes)
        if n_classes < 2:
            continue
        k = int(rng.integers(1, n_classes))
        if n_classes == 2:  # scikit-learn's 2-column form is 1-D: add a never-chosen class
            filler = classes[-1] + "z" if classes.dtype.kind == "U" else classes[-1] + 1
            sk_scores = np.column_stack([scores, np.full(len(scores), -1.0)])
            sk_labels = np.append(classes, filler)
        else:
            sk_scores, sk_labels = scores, classes
        expected = skm.top_k_accuracy_score(y_true, sk_scores, k=k, labels=sk_labels)
        actual = dc.top_k_accuracy(y_true, scores, k=k, labels=classes)
        assert_close(actual, expected, (scenario, seed, k))
        # columns in another order, labels saying so: the same value when nothing is tied
        order = rng.permutation(n_classes)
        permuted = dc.top_k_accuracy(y_true, scores[:, order], k=k, labels=classes[order])
        if all(len(np.unique(row)) == n_classes for row in scores):
            assert permuted == actual, (scenario, seed, "permuted")


@pytest.mark.parametrize("shape", [pytest.param((30,), id="1-D"),
                                   pytest.param((30, 4), id="boxes")])
def test_regression_errors_match_sklearn(shape):
    for seed in range(102):  # x 2 shapes = 204 inputs per function
        rng = np.random.default_rng([300, seed])
        n = int(rng.integers(1, 30))
        full = (n,) + shape[1:]
        y_true = rng.uniform(0, 100, full) * rng.choice([1e-3, 1, 1e3])
        y_pred = np.abs(y_true + rng.normal(scale=rng.uniform(0.1, 20), size=full))
        multioutput = ["uniform_average", "raw_values"][seed % 2]
        for ours, theirs in [
            (dc.mean_squared_error, skm.mean_squared_error),
            (dc.root_mean_squared_error, skm.root_mean_squared_error),
            (dc.mean_absolute_error, skm.mean_absolute_error),
            (dc.root_mean_squared_log_error, skm.root_mean_squared_log_error),
        ]:
            actual = ours(y_true, y_pred, multioutput=multioutput)
            expected = theirs(y_true, y_pred, multioutput=multioutput)
            scale = max(1.0, float(np.max(np.abs(expected))))
            np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=ATOL * scale,
                                       err_msg=f"{ours.__name__} {seed}")
            assert np.shape(actual) == np.shape(expected)


@by_scenario(SCENARIOS)
def test_expected_cost_matches_reference(scenario):
    for seed, case in cases("labels", scenario):
        classes = case["classes"]
        costs = case["rng"].uniform(0, 10, (len(classes), len(classes)))
        index = {c: i for i, c in enumerate(np.asarray(classes).tolist())}
        rows = [index[v] for v in case["y_true"].tolist()]
        cols = [index[v] for v in case["y_pred"].tolist()]
        total = float(sum(costs[r, c] for r, c in zip(rows, cols)))  # sample by sample
        worst = float(sum(costs[r].max() for r in rows))
        labels = case["labels"]
        assert_close(dc.expected_cost(case["y_true"], case["y_pred"], costs, labels=labels,
                                      normalize="sum"), total, (scenario, seed))
        assert_close(dc.expected_cost(case["y_true"], case["y_pred"], costs, labels=labels),
                     total / len(case["y_true"]), (scenario, seed))
        assert_close(dc.expected_cost(case["y_true"], case["y_pred"], costs, labels=labels,
                                      normalize="max"), total / worst, (scenario, seed))


@by_scenario(CURVE_SCENARIOS)
def test_cost_curve_matches_brute_force(scenario):
    for seed, case in cases("scores", scenario, count=46):  # single-class cases are skipped
        positive = case["positive"]
        if positive.all() or not positive.any():
            continue
        fpr, tpr, _ = skm.roc_curve(positive, case["scores"], drop_intermediate=False)
        given = None if seed % 4 == 0 else case["rng"].random(seed)
        grid = np.linspace(0, 1, 101) if given is None else given
        lines = (1 - tpr)[None, :] * grid[:, None] + fpr[None, :] * (1 - grid)[:, None]
        pc, nec = dc.cost_curve(case["y_true"], case["scores"], pos_label=case["pos_label"],
                                probability_costs=given)
        assert_close(pc, grid)
        assert_close(nec, lines.min(axis=1), (scenario, seed))


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
