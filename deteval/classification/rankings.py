"""Metrics of scores: counts at a threshold, ROC and precision-recall curves and
their areas, the break-even point and top-k accuracy.

See :mod:`deteval.classification` for the conventions (labels, averaging,
``zero_division``, scores).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._validation import finite_matrix, real_matrix
from ._base import (
    SCORES_PARAMS,
    as_label_set,
    as_labels,
    check_length,
    encode,
    fill_doc,
    positives,
    read_only_result,
    steps,
    trapezoid,
    warn_metric,
)

# --------------------------------------------------------------------------------------
# Scores: thresholds, ROC and precision-recall curves
# --------------------------------------------------------------------------------------

class ThresholdCounts(NamedTuple):
    """True and false positives and negatives at a threshold (ints, or arrays of them)."""

    tp: Any
    fp: Any
    fn: Any
    tn: Any


@read_only_result
def counts_at_threshold(
    y_true: Any, scores: Any, threshold: Any, *, pos_label: Any = None
) -> ThresholdCounts:
    """Confusion counts when samples with ``score >= threshold`` are predicted positive.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        True labels.
    scores : array_like of shape (n,)
        Finite scores, higher meaning more likely positive.
    threshold : float or array_like of shape (m,)
        One threshold or several (then every count is an array of shape ``(m,)``).
    pos_label : label, optional
        The positive label (see the module docstring).

    Returns
    -------
    ThresholdCounts
        ``(tp, fp, fn, tn)``; ``tp + fn`` is the number of positives.

    Examples
    --------
    >>> scores = [.86, .97, .99, .85, .78, .72, .74, .63, .58, .55, .48, .46, .32, .22, .19]
    >>> y_true = [1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0]
    >>> counts_at_threshold(y_true, scores, 0.6)
    ThresholdCounts(tp=6, fp=2, fn=1, tn=6)
    >>> counts_at_threshold(y_true, scores, [0.6, 0.5]).tp.tolist()
    [6, 7]
    """
    positive, values = positives(y_true, scores, pos_label)
    thresholds = np.asarray(threshold)
    if thresholds.dtype.kind not in "biuf" or thresholds.ndim > 1:
        raise ValueError(f"threshold must be a number or a 1-D array; got {threshold!r}")
    thresholds = thresholds.astype(np.float64)
    if np.isnan(thresholds).any():
        raise ValueError("threshold must not be NaN")
    positive_scores = np.sort(values[positive])
    negative_scores = np.sort(values[~positive])
    fn = np.searchsorted(positive_scores, thresholds, side="left")
    tn = np.searchsorted(negative_scores, thresholds, side="left")
    tp = len(positive_scores) - fn
    fp = len(negative_scores) - tn
    if thresholds.ndim == 0:
        return ThresholdCounts(int(tp), int(fp), int(fn), int(tn))
    return ThresholdCounts(*(a.astype(np.int64) for a in (tp, fp, fn, tn)))


@read_only_result
@fill_doc(scores_params=SCORES_PARAMS)
def roc_curve(
    y_true: Any, scores: Any, *, pos_label: Any = None, drop_intermediate: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Receiver operating characteristic: false and true positive rates by threshold.

    One point per distinct score (tied samples switch together), from the highest
    threshold down, after a first point ``(0, 0)`` at threshold ``inf``, exactly as
    scikit-learn's ``roc_curve``. With ``drop_intermediate``, points collinear with their
    neighbours (where neither count changes slope) are dropped; the area is unchanged.

    Parameters
    ----------
    {scores_params}
    drop_intermediate : bool, default True
        Drop the points that cannot be corners of the curve.

    Returns
    -------
    fpr, tpr, thresholds : numpy.ndarray
        Increasing rates and decreasing thresholds (``thresholds[0]`` is ``inf``). A rate
        is NaN, with an :class:`~deteval.errors.UndefinedMetricWarning`, when there are no
        negatives (``fpr``) or no positives (``tpr``).

    Examples
    --------
    >>> fpr, tpr, thresholds = roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> fpr.tolist(), tpr.tolist(), thresholds.tolist()
    ([0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0], [inf, 0.8, 0.4, 0.35, 0.1])
    """
    positive, values = positives(y_true, scores, pos_label)
    tps, fps, thresholds = steps(positive, values)
    if drop_intermediate and len(fps) > 2:
        corner = np.logical_or(np.diff(fps, 2), np.diff(tps, 2))
        keep = np.flatnonzero(np.concatenate([[True], corner, [True]]))
        tps, fps, thresholds = tps[keep], fps[keep], thresholds[keep]
    tps, fps = np.append(0.0, tps), np.append(0.0, fps)
    thresholds = np.append(np.inf, thresholds)
    if fps[-1] == 0:
        warn_metric("No negative samples in y_true: the false positive rate is undefined (NaN)")
        fpr = np.full(fps.shape, np.nan)
    else:
        fpr = fps / fps[-1]
    if tps[-1] == 0:
        warn_metric("No positive samples in y_true: the true positive rate is undefined (NaN)")
        tpr = np.full(tps.shape, np.nan)
    else:
        tpr = tps / tps[-1]
    return fpr, tpr, thresholds


@fill_doc(scores_params=SCORES_PARAMS)
def roc_auc_score(y_true: Any, scores: Any, *, pos_label: Any = None) -> float:
    """Area under the ROC curve (trapezoid rule: a tied positive-negative pair counts 1/2).

    Equal to the probability that a random positive scores higher than a random negative,
    ties counting one half. Binary only (use ``pos_label`` for one class against the rest).

    Parameters
    ----------
    {scores_params}

    Returns
    -------
    float
        NaN, with an :class:`~deteval.errors.UndefinedMetricWarning`, when ``y_true`` holds
        only positives or only negatives (as scikit-learn).

    Examples
    --------
    >>> y_true = [1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0]
    >>> scores = [.99, .98, .97, .93, .85, .80, .79, .75, .70, .65,
    ...           .64, .63, .55, .54, .51, .49, .30, .2, .1, .09]
    >>> roc_auc_score(y_true, scores)
    0.7708333333333333
    """
    positive, values = positives(y_true, scores, pos_label)
    if positive.all() or not positive.any():
        warn_metric("Only one class is present in y_true: ROC AUC is undefined (NaN)")
        return float("nan")
    fpr, tpr, _ = roc_curve(positive, values, pos_label=True)
    return trapezoid(tpr, fpr)


def _pr_points(positive: np.ndarray, values: np.ndarray, drop_intermediate: bool):
    """Precision and recall at each distinct threshold, highest threshold first."""
    tps, fps, thresholds = steps(positive, values)
    if drop_intermediate and len(fps) > 2:
        # keep the first and last point of every run of equal tp (vertical segments)
        changes = np.logical_or(np.diff(tps[:-1]), np.diff(tps[1:]))
        keep = np.flatnonzero(np.concatenate([[True], changes, [True]]))
        tps, fps, thresholds = tps[keep], fps[keep], thresholds[keep]
    precision_values = tps / (tps + fps)
    recall_values = np.ones_like(tps) if tps[-1] == 0 else tps / tps[-1]
    return precision_values, recall_values, thresholds


@read_only_result
@fill_doc(scores_params=SCORES_PARAMS)
def precision_recall_curve(
    y_true: Any, scores: Any, *, pos_label: Any = None, drop_intermediate: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision and recall at every distinct score threshold, as scikit-learn returns them.

    Points run from the lowest threshold (recall 1) to the highest, followed by a final
    point ``precision 1, recall 0`` that has no threshold. With ``drop_intermediate``, only
    the first and last point of each run of equal recall are kept.

    Parameters
    ----------
    {scores_params}
    drop_intermediate : bool, default False
        Drop points inside vertical segments.

    Returns
    -------
    precision, recall : numpy.ndarray of shape (m + 1,)
        Recall is non-increasing. Without positives, recall is set to 1 at every threshold
        with an :class:`~deteval.errors.UndefinedMetricWarning` (as scikit-learn).
    thresholds : numpy.ndarray of shape (m,)
        Increasing.

    Examples
    --------
    >>> p, r, t = precision_recall_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> p.round(3).tolist(), r.tolist(), t.tolist()
    ([0.5, 0.667, 0.5, 1.0, 1.0], [1.0, 1.0, 0.5, 0.5, 0.0], [0.1, 0.35, 0.4, 0.8])
    """
    positive, values = positives(y_true, scores, pos_label)
    if not positive.any():
        warn_metric("No positive samples in y_true: recall is set to 1 at every threshold")
    p, r, thresholds = _pr_points(positive, values, drop_intermediate)
    return np.append(p[::-1], 1.0), np.append(r[::-1], 0.0), thresholds[::-1]


@fill_doc(scores_params=SCORES_PARAMS)
def average_precision(y_true: Any, scores: Any, *, pos_label: Any = None) -> float:
    """Average precision: the step-wise area under the precision-recall curve.

    ``AP = sum_k (R_k - R_{k-1}) P_k`` over the distinct thresholds from the highest down,
    with ``R_0 = 0``: each gain in recall is weighted by the precision at which it is
    reached, without interpolation (scikit-learn's ``average_precision_score``; not the
    interpolated VOC or COCO AP of a precision-recall curve, which is
    :func:`deteval.interpolated_average_precision`).

    Parameters
    ----------
    {scores_params}

    Returns
    -------
    float
        0.0, with an :class:`~deteval.errors.UndefinedMetricWarning`, when there are no
        positives (scikit-learn's value).

    Examples
    --------
    >>> average_precision([0, 0, 0, 1, 1, 0, 1, 1], [.5, .55, .74, .65, .28, .17, .3, .45])
    0.4928571428571429
    """
    positive, values = positives(y_true, scores, pos_label)
    if not positive.any():
        warn_metric("No positive samples in y_true: average precision is set to 0.0")
    p, r, _ = _pr_points(positive, values, False)
    p, r = np.append(p[::-1], 1.0), np.append(r[::-1], 0.0)
    # same order of operations as scikit-learn, so the float is identical
    return float(max(0.0, -np.sum(np.diff(r) * p[:-1])))


@fill_doc(scores_params=SCORES_PARAMS)
def pr_auc_trapezoid(y_true: Any, scores: Any, *, pos_label: Any = None) -> float:
    """Area under the precision-recall curve by the trapezoid rule (not average precision).

    The curve joins the operating points (one per distinct score, highest first) with
    straight lines and starts at ``recall 0, precision 1``, as scikit-learn's
    ``auc(recall, precision)`` on its ``precision_recall_curve``. Linear interpolation in PR
    space is optimistic (precision does not change linearly between operating points), so
    this area usually differs from :func:`average_precision`; it is provided to reproduce
    figures computed that way. The area is summed as the first segment (from ``(0, 1)``)
    plus the trapezoids between consecutive operating points in order of increasing recall.

    Parameters
    ----------
    {scores_params}

    Returns
    -------
    float
        NaN, with an :class:`~deteval.errors.UndefinedMetricWarning`, without positives.

    Examples
    --------
    >>> pr_auc_trapezoid([0, 0, 0, 1, 1, 0, 1, 1], [.5, .55, .74, .65, .28, .17, .3, .45])
    0.3901785714285714
    """
    positive, values = positives(y_true, scores, pos_label)
    if not positive.any():
        warn_metric("No positive samples in y_true: the precision-recall area is undefined (NaN)")
        return float("nan")
    p, r, _ = _pr_points(positive, values, False)
    first = r[0] * (1.0 + p[0]) / 2.0
    return float(trapezoid(p, r) + first)


@fill_doc(scores_params=SCORES_PARAMS)
def break_even_point(y_true: Any, scores: Any, *, pos_label: Any = None) -> float:
    """Precision-recall break-even point: the value where precision equals recall.

    Precision is ``tp / k`` and recall ``tp / P`` when the ``k`` highest-scored samples are
    predicted positive and there are ``P`` positives, so they are equal exactly at
    ``k = P``: the break-even point is the precision (= recall) of the top ``P`` samples
    (also called R-precision). When ``k = P`` falls inside a group of tied scores, ``tp``
    is interpolated linearly across the group, which is the expected ``tp`` if the tied
    samples were ranked in random order (the curve between two operating points is the
    straight line in (tp, fp) space). This finds the crossing that matters: at a top-ranked
    negative, precision and recall are both 0, which is not a break-even point.

    Parameters
    ----------
    {scores_params}

    Returns
    -------
    float
        NaN, with an :class:`~deteval.errors.UndefinedMetricWarning`, without positives.

    Examples
    --------
    >>> break_even_point([0, 0, 0, 1, 1, 0, 1, 1], [.5, .55, .74, .65, .28, .17, .3, .45])
    0.25
    >>> break_even_point([1, 0, 1, 0], [0.9, 0.5, 0.5, 0.1])  # tie across k = 2
    0.75
    """
    positive, values = positives(y_true, scores, pos_label)
    n_positive = int(positive.sum())
    if n_positive == 0:
        warn_metric("No positive samples in y_true: the break-even point is undefined (NaN)")
        return float("nan")
    tps, fps, _ = steps(positive, values)
    k_end = tps + fps  # predicted positives after each group of tied scores
    group = int(np.searchsorted(k_end, n_positive))
    k_start = k_end[group - 1] if group else 0.0
    tp_start = tps[group - 1] if group else 0.0
    fraction = (n_positive - k_start) / (k_end[group] - k_start)
    return float((tp_start + fraction * (tps[group] - tp_start)) / n_positive)


# --------------------------------------------------------------------------------------
# Top-k accuracy
# --------------------------------------------------------------------------------------


def top_k_accuracy(y_true: Any, score_matrix: Any, *, k: int = 1, labels: Any = None) -> float:
    """Fraction of samples whose true class is among the ``k`` highest-scored classes.

    Ties are broken as scikit-learn's ``top_k_accuracy_score`` breaks them (a stable
    ascending sort, reversed): among equal scores, the class in the later column ranks
    higher. So the true class ``c`` of a sample is a hit when
    ``#{j: s_j > s_c} + #{j > c: s_j == s_c} < k``.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        True labels.
    score_matrix : array_like of shape (n, K)
        Finite scores, one column per class.
    k : int, default 1
        How many top classes count. ``k >= K`` makes every sample a hit and emits an
        :class:`~deteval.errors.UndefinedMetricWarning`.
    labels : array_like of shape (K,), optional
        The class of each column, in column order. By default the sorted distinct values of
        ``y_true``, which must then hold all ``K`` classes. (scikit-learn requires sorted
        ``labels``; any order is accepted here.)

    Returns
    -------
    float

    Examples
    --------
    >>> scores = [[0.5, 0.2, 0.3], [0.3, 0.4, 0.3], [0.2, 0.4, 0.4], [0.7, 0.2, 0.1]]
    >>> top_k_accuracy([0, 2, 1, 2], scores, k=1)
    0.25
    >>> top_k_accuracy([0, 2, 1, 2], scores, k=2)
    0.75

    For two classes, columns must be given for both; scikit-learn's 1-D binary form
    thresholds a single score at 0.5 (a tie at 0.5 then goes to the first class, here to
    the second).
    """
    truth = as_labels(y_true, "y_true")
    matrix = real_matrix("score_matrix", score_matrix, axes="n_samples, n_classes")
    check_length(matrix, "score_matrix", len(truth))
    matrix = finite_matrix("score_matrix", matrix)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer; got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k}")
    n_columns = matrix.shape[1]
    if labels is None:
        classes = np.unique(truth)
        if len(classes) != n_columns:
            raise ValueError(
                f"score_matrix must have one column per class of y_true ({len(classes)}); "
                f"got {n_columns} columns (pass labels= to name the columns)"
            )
    else:
        classes = as_label_set(labels, truth, "y_true")
        if len(classes) != n_columns:
            raise ValueError(
                f"score_matrix must have one column per label ({len(classes)}); "
                f"got {n_columns} columns"
            )
    if k >= n_columns:
        warn_metric(
            f"k ({k}) >= the number of classes ({n_columns}): every sample is a hit, "
            "so the score is meaningless"
        )
    true_index = encode(truth, "y_true", classes)
    true_scores = matrix[np.arange(len(truth)), true_index][:, None]
    later = np.arange(n_columns)[None, :] > true_index[:, None]
    rank = np.sum(matrix > true_scores, axis=1) + np.sum(
        (matrix == true_scores) & later, axis=1
    )
    return float(np.mean(rank < k))
