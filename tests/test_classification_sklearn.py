"""deteval.classification against scikit-learn on seeded random inputs (every function, 200+
inputs each, tests/classificationcases.py's scenarios), and against brute-force references
where scikit-learn has no counterpart (break-even point, expected cost, cost curve)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import sklearn
from classificationcases import (
    ATOL,
    CURVE_SCENARIOS,
    SCENARIOS,
    ZERO_DIVISIONS,
    assert_close,
    by_scenario,
    cases,
    labelled_case,
    recorded,
    warned,
)
from sklearn import metrics as skm

from deteval import classification as dc
from deteval.errors import UndefinedMetricWarning


@pytest.fixture(scope="module", autouse=True)
def fast_sklearn():
    """scikit-learn's parameter validation is most of its run time on small inputs."""
    with sklearn.config_context(skip_parameter_validation=True):
        yield


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
