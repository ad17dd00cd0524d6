"""Costs of decisions: expected cost of a labelling, probability cost and the cost curve.

See :mod:`deteval.classification` for the conventions (labels, averaging,
``zero_division``, scores).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._base import (
    SCORES_PARAMS,
    count_matrix,
    encoded_pair,
    fill_doc,
    positives,
    read_only_result,
    shown,
    steps,
    warn_metric,
)

# --------------------------------------------------------------------------------------
# Costs
# --------------------------------------------------------------------------------------


def expected_cost(
    y_true: Any,
    y_pred: Any,
    cost_matrix: Any,
    *,
    labels: Any = None,
    normalize: str = "mean",
) -> float:
    """Cost of the predictions under a misclassification cost matrix.

    Parameters
    ----------
    y_true, y_pred : array_like of shape (n,)
        True and predicted class labels.
    cost_matrix : array_like of shape (K, K)
        ``cost_matrix[i, j]`` is the cost of predicting class ``j`` for a sample of class
        ``i`` (rows the truth, like :func:`confusion_matrix`); finite.
    labels : array_like of shape (K,), optional
        The classes in the order of the cost matrix rows and columns; by default the sorted
        distinct values of ``y_true`` and ``y_pred``, which must then number ``K``.
    normalize : {"mean", "sum", "max"}, default "mean"
        ``"mean"``: the expected cost per sample, ``sum(C * M) / n`` with ``M`` the confusion
        matrix. ``"sum"``: the total cost ``sum(C * M)``. ``"max"``: the expected cost
        divided by the largest expected cost any classifier could have on these class
        frequencies, ``sum_i p_i max_j C[i, j]``; with two classes and a zero diagonal this
        is Drummond and Holte's normalised expected cost, in [0, 1], the height of the
        classifier's line in a cost curve at its operating point (see :func:`cost_curve`).
        That denominator being 0 gives NaN with an
        :class:`~deteval.errors.UndefinedMetricWarning`.

    Returns
    -------
    float

    Examples
    --------
    Missing a positive costs 5, a false alarm 1:

    >>> costs = [[0, 1], [5, 0]]
    >>> expected_cost([0, 0, 1, 1], [0, 1, 1, 0], costs)
    1.5
    >>> expected_cost([0, 0, 1, 1], [0, 1, 1, 0], costs, normalize="sum")
    6.0
    >>> expected_cost([0, 0, 1, 1], [0, 1, 1, 0], costs, normalize="max")
    0.5
    """
    if normalize not in ("mean", "sum", "max"):
        raise ValueError(f"normalize must be 'mean', 'sum' or 'max'; got {normalize!r}")
    classes, true_index, pred_index = encoded_pair(y_true, y_pred, labels)
    costs = np.asarray(cost_matrix)
    if costs.dtype.kind not in "biuf":
        raise TypeError(f"cost_matrix must be real numbers; got dtype {costs.dtype}")
    if costs.shape != (len(classes), len(classes)):
        raise ValueError(
            f"cost_matrix must have shape ({len(classes)}, {len(classes)}), one row and "
            f"column per class {shown(classes)}; got {costs.shape}"
        )
    costs = costs.astype(np.float64)
    if not np.isfinite(costs).all():
        raise ValueError("cost_matrix must be finite")
    matrix = count_matrix(true_index, pred_index, len(classes)).astype(np.float64)
    total = float(np.sum(costs * matrix))
    if normalize == "sum":
        return total
    if normalize == "mean":
        return total / len(true_index)
    worst = float(np.dot(matrix.sum(axis=1), costs.max(axis=1)))
    if worst == 0:
        warn_metric(
            "The largest possible expected cost is 0: the normalised cost is undefined (NaN)"
        )
        return float("nan")
    return total / worst


@read_only_result
def probability_cost(p_positive: Any, *, cost_fn: Any, cost_fp: Any) -> Any:
    """Drummond and Holte's probability-cost, the x-axis of a cost curve.

    ``PC(+) = p C(-|+) / (p C(-|+) + (1 - p) C(+|-))`` with ``p`` the probability of the
    positive class, ``C(-|+)`` the cost of a false negative and ``C(+|-)`` that of a false
    positive. It folds class priors and costs into one number in [0, 1].

    Parameters
    ----------
    p_positive : float or array_like
        Probability of the positive class, in [0, 1].
    cost_fn, cost_fp : float or array_like
        Non-negative costs of a false negative and of a false positive (not both 0).

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> probability_cost(0.2, cost_fn=5, cost_fp=1)
    0.5555555555555556
    """
    p = np.asarray(p_positive, dtype=np.float64)
    fn_cost = np.asarray(cost_fn, dtype=np.float64)
    fp_cost = np.asarray(cost_fp, dtype=np.float64)
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError(f"p_positive must be in [0, 1]; got {p_positive!r}")
    if not np.all((fn_cost >= 0) & (fp_cost >= 0) & np.isfinite(fn_cost) & np.isfinite(fp_cost)):
        raise ValueError("cost_fn and cost_fp must be non-negative and finite")
    positive_part = p * fn_cost
    total = positive_part + (1 - p) * fp_cost
    if np.any(total == 0):
        raise ValueError("p C(-|+) + (1 - p) C(+|-) must be positive; got 0")
    result = positive_part / total
    return float(result) if result.ndim == 0 else result


@read_only_result
@fill_doc(scores_params=SCORES_PARAMS)
def cost_curve(
    y_true: Any,
    scores: Any,
    *,
    pos_label: Any = None,
    probability_costs: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Drummond and Holte's cost curve of a scoring classifier: the lower envelope.

    Each ROC operating point (FPR, TPR), i.e. each threshold including "all negative"
    ``(0, 0)`` and "all positive" ``(1, 1)``, is the line
    ``NEC(pc) = (1 - TPR) pc + FPR (1 - pc)`` in cost space: its normalised expected cost
    at probability-cost ``pc`` (see :func:`probability_cost`). The cost curve is the
    pointwise minimum of these lines, the cost of the best threshold for each operating
    condition. It never exceeds ``min(pc, 1 - pc)``, the better trivial classifier.

    Parameters
    ----------
    {scores_params}
    probability_costs : array_like of shape (m,), optional
        Where to evaluate the curve, values in [0, 1]; default 101 evenly spaced values.

    Returns
    -------
    probability_costs, normalized_expected_costs : numpy.ndarray of shape (m,)
        NaN costs, with an :class:`~deteval.errors.UndefinedMetricWarning`, when ``y_true``
        holds only one class.

    Examples
    --------
    >>> pc, nec = cost_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8],
    ...                      probability_costs=[0, 0.25, 0.5, 0.75, 1])
    >>> nec.tolist()
    [0.0, 0.125, 0.25, 0.125, 0.0]
    """
    positive, values = positives(y_true, scores, pos_label)
    if probability_costs is None:
        pcs = np.linspace(0.0, 1.0, 101)
    else:
        pcs = np.asarray(probability_costs)
        if pcs.dtype.kind not in "biuf" or pcs.ndim != 1:
            raise ValueError(
                f"probability_costs must be a 1-D array of numbers; got {probability_costs!r}"
            )
        pcs = pcs.astype(np.float64)
        if not np.all((pcs >= 0) & (pcs <= 1)):
            raise ValueError("probability_costs must be in [0, 1]")
    n_positive = positive.sum()
    if n_positive == 0 or n_positive == len(positive):
        warn_metric("y_true holds only one class: the cost curve is undefined (NaN)")
        return pcs, np.full(pcs.shape, np.nan)
    tps, fps, _ = steps(positive, values)
    fpr = np.append(0.0, fps / fps[-1])
    fnr = 1.0 - np.append(0.0, tps / tps[-1])
    best = np.full(pcs.shape, np.inf)
    # bounded memory: at most about a million line evaluations at a time
    chunk = max(1, 2**20 // max(len(pcs), 1))
    for start in range(0, len(fpr), chunk):
        lines = np.outer(pcs, fnr[start : start + chunk]) + np.outer(
            1.0 - pcs, fpr[start : start + chunk]
        )
        best = np.minimum(best, lines.min(axis=1, initial=np.inf))
    return pcs, best
