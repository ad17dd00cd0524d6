"""Counts and rates of class labels: the confusion matrix, precision, recall, F, accuracy.

See :mod:`deteval.classification` for the conventions (labels, averaging,
``zero_division``, scores).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._validation import zero_division_value
from ._base import (
    CHECKED_LABELS_PARAMS,
    Counts,
    as_beta,
    check_average,
    count_matrix,
    counts_from_matrix,
    encoded_pair,
    equal_to,
    fill_doc,
    read_only_result,
    shown,
    warn_metric,
)

# --------------------------------------------------------------------------------------
# Confusion matrix and counts per class
# --------------------------------------------------------------------------------------


@read_only_result
def confusion_matrix(y_true: Any, y_pred: Any, *, labels: Any = None) -> np.ndarray:
    """Count every (true class, predicted class) pair.

    Parameters
    ----------
    y_true, y_pred : array_like of shape (n,)
        True and predicted class labels.
    labels : array_like of shape (K,), optional
        The classes, in the order of the rows and columns. By default the sorted distinct
        values of ``y_true`` and ``y_pred``. Every label in the data must be in it.

    Returns
    -------
    numpy.ndarray of shape (K, K), int64
        ``matrix[i, j]`` is the number of samples of true class ``i`` predicted as ``j``:
        rows are the truth, columns the prediction. It sums to ``n``.

    Examples
    --------
    >>> confusion_matrix([1, 1, 0, 1, 1, 0, 1, 0, 0, 1],
    ...                  [1, 0, 1, 1, 1, 1, 1, 1, 0, 1]).tolist()
    [[1, 3], [1, 5]]
    >>> confusion_matrix(["cat", "dog"], ["cat", "cat"], labels=["dog", "cat", "bird"]).tolist()
    [[0, 1, 0], [0, 1, 0], [0, 0, 0]]
    """
    classes, true_index, pred_index = encoded_pair(y_true, y_pred, labels)
    return count_matrix(true_index, pred_index, len(classes))


def _class_counts(y_true, y_pred, *, labels, average, pos_label) -> Counts:
    """Per-class counts; for ``average='binary'`` those of ``pos_label`` only."""
    check_average(average)
    classes, true_index, pred_index = encoded_pair(y_true, y_pred, labels)
    counts = counts_from_matrix(classes, count_matrix(true_index, pred_index, len(classes)))
    if average != "binary":
        return counts
    if len(classes) > 2:
        raise ValueError(
            f"average='binary' needs at most two classes; got {len(classes)} "
            f"{shown(classes)}; choose average='micro', 'macro', 'weighted' or None"
        )
    hits = np.flatnonzero(equal_to(classes, pos_label))
    if hits.size:
        k = hits[:1]
        return Counts(classes[k], counts.tp[k], counts.fp[k], counts.fn[k], counts.tn[k])
    if labels is not None or len(classes) == 2:
        raise ValueError(f"pos_label must be one of {shown(classes)}; got {pos_label!r}")
    # A single class that is not pos_label: the positive class was never seen.
    zero = np.zeros(1)
    return Counts(np.array([pos_label]), zero, zero, zero, np.array([float(len(true_index))]))


def _reduce(values: np.ndarray, average: Any, support: np.ndarray) -> float | np.ndarray:
    """Average per-class ``values`` as scikit-learn does (NaN entries skipped)."""
    if average is None:
        return values
    if average in ("binary", "micro"):
        return float(values[0])
    keep = ~np.isnan(values)
    if not keep.any():
        return float("nan")
    if average == "weighted" and support[keep].sum() > 0:
        return float(np.average(values[keep], weights=support[keep]))
    return float(np.mean(values[keep]))


def _ratio(
    numerator: np.ndarray,
    denominator: np.ndarray,
    counts: Counts,
    *,
    average: Any,
    zero_division: Any,
    metric: str,
    missing: str,
) -> float | np.ndarray:
    """``numerator / denominator`` per class, averaged; 0/0 set by ``zero_division``."""
    value, warn = zero_division_value(zero_division)
    if average == "micro":
        numerator, denominator = numerator.sum(keepdims=True), denominator.sum(keepdims=True)
    undefined = denominator == 0
    values = np.divide(numerator, np.where(undefined, 1.0, denominator))
    values[undefined] = value
    if warn and undefined.any():
        if average in ("binary", "micro"):
            where = f"because there are no {missing} samples"
        else:
            where = f"for labels {shown(counts.classes[undefined])} with no {missing} samples"
        warn_metric(
            f"{metric} is ill-defined and set to 0.0 {where}; "
            "use zero_division to choose the value"
        )
    return _reduce(values, average, counts.tp + counts.fn)


def _metric_params(undefined: str, *, beta: bool = False) -> str:
    """The Parameters and Returns of a rate metric whose value is undefined when
    ``undefined``."""
    beta_param = ("beta : float\n    Non-negative weight of recall against precision.\n"
                  if beta else "")
    return f"""Parameters
----------
y_true, y_pred : array_like of shape (n,)
    True and predicted class labels.
{beta_param}average : {{"binary", "micro", "macro", "weighted"}} or None, default "binary"
    How to combine the classes (see the module docstring).
pos_label : label, default 1
    The positive class for ``average="binary"``; ignored otherwise.
labels : array_like, optional
    The classes and their order (see the module docstring).
zero_division : {{"warn", 0, 1, nan}}, default "warn"
    The value when {undefined}.

Returns
-------
float, or numpy.ndarray of shape (K,) for ``average=None``
"""


def _rate(y_true, y_pred, *, average, pos_label, labels, zero_division, which):
    counts = _class_counts(y_true, y_pred, labels=labels, average=average, pos_label=pos_label)
    numerator, denominator, metric, missing = {
        "precision": (counts.tp, counts.tp + counts.fp, "Precision", "predicted"),
        "recall": (counts.tp, counts.tp + counts.fn, "Recall", "true"),
        "specificity": (counts.tn, counts.tn + counts.fp, "Specificity", "negative"),
        "fpr": (counts.fp, counts.fp + counts.tn, "False positive rate", "negative"),
        "fnr": (counts.fn, counts.fn + counts.tp, "False negative rate", "true"),
    }[which]
    return _ratio(numerator, denominator, counts, average=average,
                  zero_division=zero_division, metric=metric, missing=missing)


@read_only_result
@fill_doc(doc=_metric_params("there are no predicted samples (tp + fp == 0)"))
def precision(y_true: Any, y_pred: Any, *, average: str | None = "binary", pos_label: Any = 1,
              labels: Any = None, zero_division: Any = "warn") -> float | np.ndarray:
    """Precision, ``tp / (tp + fp)``: the fraction of predicted positives that are right.

    {doc}
    Examples
    --------
    >>> precision([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1])
    0.625
    >>> precision([0, 1, 2, 2], [0, 2, 2, 2], average=None, zero_division=0).tolist()
    [1.0, 0.0, 0.6666666666666666]
    """
    return _rate(y_true, y_pred, average=average, pos_label=pos_label, labels=labels,
                 zero_division=zero_division, which="precision")


@read_only_result
@fill_doc(doc=_metric_params("there are no true samples (tp + fn == 0)"))
def recall(y_true: Any, y_pred: Any, *, average: str | None = "binary", pos_label: Any = 1,
           labels: Any = None, zero_division: Any = "warn") -> float | np.ndarray:
    """Recall (sensitivity, true positive rate), ``tp / (tp + fn)``.

    {doc}
    Examples
    --------
    >>> round(recall([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1]), 4)
    0.8333
    """
    return _rate(y_true, y_pred, average=average, pos_label=pos_label, labels=labels,
                 zero_division=zero_division, which="recall")


@read_only_result
@fill_doc(doc=_metric_params("there are no negative samples (tn + fp == 0)"))
def specificity(y_true: Any, y_pred: Any, *, average: str | None = "binary",
                pos_label: Any = 1, labels: Any = None,
                zero_division: Any = "warn") -> float | np.ndarray:
    """Specificity (true negative rate), ``tn / (tn + fp)``, one class against the rest.

    ``"micro"`` pools ``tn`` and ``fp`` over the classes; ``"weighted"`` weights by the
    support (true samples) of each class, like the other metrics.

    {doc}
    Examples
    --------
    >>> specificity([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1])
    0.25
    """
    return _rate(y_true, y_pred, average=average, pos_label=pos_label, labels=labels,
                 zero_division=zero_division, which="specificity")


@read_only_result
@fill_doc(doc=_metric_params("there are no negative samples (fp + tn == 0)"))
def false_positive_rate(y_true: Any, y_pred: Any, *, average: str | None = "binary",
                        pos_label: Any = 1, labels: Any = None,
                        zero_division: Any = "warn") -> float | np.ndarray:
    """False positive rate (fall-out), ``fp / (fp + tn)``; 1 - specificity where defined.

    {doc}
    Examples
    --------
    >>> false_positive_rate([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1])
    0.75
    """
    return _rate(y_true, y_pred, average=average, pos_label=pos_label, labels=labels,
                 zero_division=zero_division, which="fpr")


@read_only_result
@fill_doc(doc=_metric_params("there are no true samples (fn + tp == 0)"))
def false_negative_rate(y_true: Any, y_pred: Any, *, average: str | None = "binary",
                        pos_label: Any = 1, labels: Any = None,
                        zero_division: Any = "warn") -> float | np.ndarray:
    """False negative rate (miss rate), ``fn / (fn + tp)``; 1 - recall where defined.

    {doc}
    Examples
    --------
    >>> round(false_negative_rate([1, 1, 0, 1, 1, 0, 1, 0, 0, 1],
    ...                           [1, 0, 1, 1, 1, 1, 1, 1, 0, 1]), 4)
    0.1667
    """
    return _rate(y_true, y_pred, average=average, pos_label=pos_label, labels=labels,
                 zero_division=zero_division, which="fnr")


@read_only_result
@fill_doc(doc=_metric_params("tp + fn + fp == 0", beta=True))
def fbeta_score(y_true: Any, y_pred: Any, *, beta: float, average: str | None = "binary",
                pos_label: Any = 1, labels: Any = None,
                zero_division: Any = "warn") -> float | np.ndarray:
    """F-beta score, the weighted harmonic mean of precision and recall.

    ``F = (1 + beta**2) tp / ((1 + beta**2) tp + beta**2 fn + fp)``: recall counts
    ``beta`` times as much as precision. ``beta=0`` gives precision and ``beta=inf``
    recall (with ``zero_division`` applied to them). ``"micro"`` pools the counts;
    ``"macro"`` and ``"weighted"`` average the per-class F values (not the F of averaged
    precision and recall).

    {doc}
    Examples
    --------
    Fifty items, fifteen recommended, twelve of them among the twenty relevant ones:

    >>> y_true = [1] * 12 + [0] * 3 + [1] * 8 + [0] * 27
    >>> y_pred = [1] * 15 + [0] * 35
    >>> fbeta_score(y_true, y_pred, beta=0.5)
    0.75
    >>> round(fbeta_score(y_true, y_pred, beta=2), 4)
    0.6316
    """
    beta = as_beta(beta)
    if beta == 0 or np.isinf(beta):
        return _rate(y_true, y_pred, average=average, pos_label=pos_label, labels=labels,
                     zero_division=zero_division,
                     which="precision" if beta == 0 else "recall")
    counts = _class_counts(y_true, y_pred, labels=labels, average=average, pos_label=pos_label)
    beta2 = beta * beta
    # numerator and denominator are linear in the counts, so "micro" may pool them
    return _ratio((1 + beta2) * counts.tp,
                  beta2 * (counts.tp + counts.fn) + (counts.tp + counts.fp), counts,
                  average=average, zero_division=zero_division, metric="F-score",
                  missing="true nor predicted")


@read_only_result
@fill_doc(doc=_metric_params("tp + fn + fp == 0"))
def f1_score(y_true: Any, y_pred: Any, *, average: str | None = "binary", pos_label: Any = 1,
             labels: Any = None, zero_division: Any = "warn") -> float | np.ndarray:
    """F1 score, the harmonic mean of precision and recall: :func:`fbeta_score` with beta 1.

    {doc}
    Examples
    --------
    >>> round(f1_score([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1]), 4)
    0.7143
    """
    return fbeta_score(y_true, y_pred, beta=1.0, average=average, pos_label=pos_label,
                       labels=labels, zero_division=zero_division)


# --------------------------------------------------------------------------------------
# Scalar summaries of a confusion matrix
# --------------------------------------------------------------------------------------


@fill_doc(labels_params=CHECKED_LABELS_PARAMS)
def accuracy(y_true: Any, y_pred: Any, *, labels: Any = None) -> float:
    """Fraction of samples whose prediction equals the truth.

    Parameters
    ----------
    {labels_params}

    Returns
    -------
    float

    Examples
    --------
    >>> accuracy([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1])
    0.6
    """
    _, true_index, pred_index = encoded_pair(y_true, y_pred, labels)
    return float(np.mean(true_index == pred_index))


@fill_doc(labels_params=CHECKED_LABELS_PARAMS)
def error_rate(y_true: Any, y_pred: Any, *, labels: Any = None) -> float:
    """Fraction of samples whose prediction differs from the truth, ``1 - accuracy``.

    Parameters
    ----------
    {labels_params}

    Returns
    -------
    float

    Examples
    --------
    >>> error_rate([0, 1, 1, 0], [0, 1, 0, 0])
    0.25
    """
    _, true_index, pred_index = encoded_pair(y_true, y_pred, labels)
    return float(np.mean(true_index != pred_index))


@fill_doc(labels_params=CHECKED_LABELS_PARAMS)
def balanced_accuracy(y_true: Any, y_pred: Any, *, labels: Any = None) -> float:
    """Mean recall over the classes present in ``y_true``.

    Classes with no true samples are left out of the mean (their recall is undefined); if
    such a class was predicted, an :class:`~deteval.errors.UndefinedMetricWarning` says so
    (scikit-learn warns likewise, with a plain ``UserWarning``).

    Parameters
    ----------
    {labels_params}

    Returns
    -------
    float

    Examples
    --------
    >>> balanced_accuracy([0, 0, 0, 0, 1], [0, 0, 0, 0, 0])
    0.5
    """
    classes, true_index, pred_index = encoded_pair(y_true, y_pred, labels)
    counts = counts_from_matrix(classes, count_matrix(true_index, pred_index, len(classes)))
    support = counts.tp + counts.fn
    present = support > 0
    if np.any(~present & (counts.fp > 0)):
        warn_metric(
            f"y_pred contains classes not in y_true {shown(classes[~present & (counts.fp > 0)])}"
            "; they are left out of the balanced accuracy"
        )
    return float(np.mean(counts.tp[present] / support[present]))


@read_only_result
def precision_recall_fscore_from_matrices(
    confusion_matrices: Any,
    *,
    average: str = "micro",
    beta: float = 1.0,
    zero_division: Any = "warn",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-class precision, recall and F-beta over several confusion matrices (runs, folds).

    ``"micro"`` pools the runs: the matrices are summed and the metrics computed once from
    the summed counts (the same as concatenating the runs' samples). ``"macro"`` computes
    every metric per run and takes the mean over the runs, skipping NaN (so the macro F is
    the mean of the runs' F values, not the F of the mean precision and recall). Here
    ``average`` refers to combining runs; the result stays per class.

    Parameters
    ----------
    confusion_matrices : array_like of shape (R, K, K) or (K, K)
        One matrix per run, rows the truth and columns the prediction (as returned by
        :func:`confusion_matrix` with the same ``labels``); non-negative finite counts.
    average : {"micro", "macro"}
        Pool the counts, or average the per-run values.
    beta : float, default 1
        The F-beta weight.
    zero_division : {"warn", 0, 1, nan}
        The value of a ratio with a zero denominator (see the module docstring).

    Returns
    -------
    precision, recall, fscore : numpy.ndarray of shape (K,)
        One value per class; for two-class matrices, index 1 is the positive class.

    Examples
    --------
    >>> runs = [[[5, 1], [2, 2]], [[3, 0], [1, 6]]]
    >>> p, r, f = precision_recall_fscore_from_matrices(runs, average="micro")
    >>> float(p[1]), float(r[1])
    (0.8888888888888888, 0.7272727272727273)
    >>> p, r, f = precision_recall_fscore_from_matrices(runs, average="macro")
    >>> float(p[1]), float(r[1])
    (0.8333333333333333, 0.6785714285714286)
    """
    if average not in ("micro", "macro"):
        raise ValueError(f"average must be 'micro' or 'macro'; got {average!r}")
    beta = as_beta(beta)
    matrices = np.asarray(confusion_matrices)
    if matrices.dtype.kind not in "iuf":
        raise TypeError(f"confusion_matrices must be real numbers; got dtype {matrices.dtype}")
    if matrices.ndim == 2:
        matrices = matrices[None]
    if matrices.ndim != 3 or matrices.shape[1] != matrices.shape[2] or matrices.shape[0] == 0:
        raise ValueError(
            "confusion_matrices must have shape (R, K, K) with R >= 1; "
            f"got {np.asarray(confusion_matrices).shape}"
        )
    matrices = matrices.astype(np.float64)
    if not np.all(np.isfinite(matrices) & (matrices >= 0)):
        raise ValueError("confusion_matrices must hold non-negative finite counts")
    if average == "micro":
        matrices = matrices.sum(axis=0, keepdims=True)
    value, warn = zero_division_value(zero_division)
    counts = counts_from_matrix(np.arange(matrices.shape[1]), matrices)
    beta2 = beta * beta
    results = []
    for metric, numerator, denominator, missing in [
        ("Precision", counts.tp, counts.tp + counts.fp, "predicted"),
        ("Recall", counts.tp, counts.tp + counts.fn, "true"),
        (
            "F-score",
            (1 + beta2) * counts.tp,
            beta2 * (counts.tp + counts.fn) + counts.tp + counts.fp,
            "true nor predicted",
        ),
    ]:
        if metric == "F-score" and beta == 0:
            numerator, denominator = counts.tp, counts.tp + counts.fp
        elif metric == "F-score" and np.isinf(beta):
            numerator, denominator = counts.tp, counts.tp + counts.fn
        undefined = denominator == 0
        values = numerator / np.where(undefined, 1.0, denominator)
        values[undefined] = value
        if warn and undefined.any():
            classes = np.flatnonzero(undefined.any(axis=0))
            warn_metric(
                f"{metric} is ill-defined and set to 0.0 for classes {shown(classes)} with "
                f"no {missing} samples in some run; use zero_division to choose the value"
            )
        with warnings.catch_warnings():  # an all-NaN column stays NaN, silently
            warnings.simplefilter("ignore", RuntimeWarning)
            results.append(np.nanmean(values, axis=0))
    return results[0], results[1], results[2]
