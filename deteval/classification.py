"""Classification metrics on plain arrays: counts, rates, agreement, curves, costs, errors.

Every function takes the ground truth first (``y_true``) and the prediction or the scores
second, with every option keyword-only. Inputs are anything ``np.asarray`` turns into a 1-D
array (score matrices and regression targets may be 2-D); they are never modified. Values
agree with scikit-learn to 1e-12 unless a docstring says otherwise.

Class labels
------------
Labels may be integers, booleans, floats or strings (``y_true`` and ``y_pred`` of the same
kind). Without ``labels=`` the classes are the sorted distinct values of ``y_true`` and
``y_pred`` together. With ``labels=`` they are exactly the given values, in the given order
(rows and columns of the confusion matrix, entries of per-class results); a class may be
absent from the data, but a value in the data that is not in ``labels`` is an error.
(scikit-learn instead uses ``labels=`` to select a subset and drops or ignores the rest.)

Averaging
---------
Per-class metrics (precision, recall, F, specificity, false positive and negative rates)
take ``average=``:

``"binary"``
    Only the class ``pos_label``; there must be at most two classes. This is the default.
``"micro"``
    Pool the one-vs-rest counts of all classes, then divide once.
``"macro"``
    Unweighted mean of the per-class values.
``"weighted"``
    Mean of the per-class values weighted by their support (number of true samples).
``None``
    The per-class values, one per class, as an array.

Undefined values (``zero_division``)
------------------------------------
A ratio whose denominator is 0 (precision with no predicted samples of a class, recall with
no true samples, ...) is set by ``zero_division``, as in scikit-learn:

``"warn"`` (default)
    0.0, and an :class:`~deteval.errors.UndefinedMetricWarning` names the metric.
``0`` or ``1``
    that value, silently.
``np.nan``
    NaN, silently; the ``"macro"`` and ``"weighted"`` averages skip NaN entries (all NaN
    gives NaN).

The F-score is ``(1 + beta**2) tp / ((1 + beta**2) tp + beta**2 fn + fp)``, so it is only
undefined (``zero_division``) when ``tp + fn + fp == 0``; it is 0, not undefined, when
precision alone is undefined.

Scores and thresholds
---------------------
Score-based functions (curves, AUCs, :func:`counts_at_threshold`, :func:`cost_curve`) treat
``y_true == pos_label`` as positive. With ``pos_label=None`` the labels must be ``{0, 1}``
or ``{-1, 1}`` (or one of them) and the positive label is 1. A sample is predicted positive
at threshold ``t`` when ``score >= t``. Scores must be finite.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, NamedTuple

import numpy as np

from .errors import UndefinedMetricWarning

__all__ = [
    "ThresholdCounts",
    "accuracy",
    "average_precision",
    "balanced_accuracy",
    "break_even_point",
    "cohen_kappa",
    "confusion_matrix",
    "cost_curve",
    "counts_at_threshold",
    "error_rate",
    "expected_cost",
    "f1_score",
    "false_negative_rate",
    "false_positive_rate",
    "fbeta_score",
    "matthews_corrcoef",
    "mean_absolute_error",
    "mean_squared_error",
    "pr_auc_trapezoid",
    "precision",
    "precision_recall_curve",
    "precision_recall_fscore_from_matrices",
    "probability_cost",
    "recall",
    "roc_auc_score",
    "roc_curve",
    "root_mean_squared_error",
    "root_mean_squared_log_error",
    "specificity",
    "top_k_accuracy",
]

_AVERAGES = ("binary", "micro", "macro", "weighted", None)
_MAX_SHOWN = 5  # offending values quoted in an error message

# --------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------


def _shown(values: np.ndarray) -> str:
    """Up to ``_MAX_SHOWN`` values as a readable list, with an ellipsis when cut."""
    items = [repr(v.item()) if hasattr(v, "item") else repr(v) for v in values[:_MAX_SHOWN]]
    more = ", ..." if len(values) > _MAX_SHOWN else ""
    return "[" + ", ".join(items) + more + "]"


def _label_kind(array: np.ndarray) -> str:
    kind = array.dtype.kind
    if kind in "biuf":
        return "numbers"
    if kind in "US":
        return "strings"
    return "objects"


def _as_labels(values: Any, name: str, *, allow_empty: bool = False) -> np.ndarray:
    """``values`` as a 1-D array of class labels, or raise naming ``name``."""
    array = np.asarray(values)
    if array.dtype.kind not in "biufUSO":
        raise TypeError(
            f"{name} must hold class labels (integers, booleans, floats or strings); "
            f"got dtype {array.dtype}"
        )
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {array.shape}")
    if array.size == 0 and not allow_empty:
        raise ValueError(f"{name} must be non-empty; got 0 samples")
    if array.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(array))
        if bad.size:
            raise ValueError(f"{name} must be finite; got {array[bad[0]]} at index {bad[0]}")
    return array


def _equal_to(array: np.ndarray, value: Any) -> np.ndarray:
    """``array == value`` as booleans; a string never equals a number (no numpy warning)."""
    kind = _label_kind(array)
    if kind != "objects" and (kind == "strings") != isinstance(value, str):
        return np.zeros(array.shape, dtype=bool)
    return np.asarray(array == value, dtype=bool)


def _check_length(array: np.ndarray, name: str, n: int, reference: str = "y_true") -> None:
    if len(array) != n:
        raise ValueError(
            f"{name} must have the same length as {reference} ({n}); got {len(array)}"
        )


def _check_same_kind(array: np.ndarray, name: str, reference: np.ndarray, ref_name: str):
    kind, ref_kind = _label_kind(array), _label_kind(reference)
    if "objects" not in (kind, ref_kind) and kind != ref_kind:
        raise TypeError(
            f"{name} must hold the same kind of labels as {ref_name} ({ref_kind}); got {kind}"
        )


def _as_label_set(labels: Any, reference: np.ndarray, ref_name: str) -> np.ndarray:
    array = _as_labels(labels, "labels")
    _check_same_kind(array, "labels", reference, ref_name)
    distinct, counts = np.unique(array, return_counts=True)
    if distinct.size != array.size:
        raise ValueError(f"labels must be unique; got {_shown(distinct[counts > 1])} repeated")
    return array


def _encode(values: np.ndarray, name: str, labels: np.ndarray) -> np.ndarray:
    """Index of each value in ``labels`` (int64), or raise if one is not there."""
    order = np.argsort(labels, kind="stable")
    ordered = labels[order]
    position = np.searchsorted(ordered, values)
    clipped = np.minimum(position, len(ordered) - 1)
    found = ordered[clipped] == values
    if not np.all(found):
        missing = np.unique(values[~found])
        raise ValueError(
            f"{name} must hold only values in labels {_shown(labels)}; "
            f"got {_shown(missing)} not in labels"
        )
    return order[clipped].astype(np.int64)


def _encoded_pair(y_true: Any, y_pred: Any, labels: Any) -> tuple[np.ndarray, ...]:
    """Classes and the class index of every true and predicted label."""
    truth = _as_labels(y_true, "y_true")
    predicted = _as_labels(y_pred, "y_pred")
    _check_length(predicted, "y_pred", len(truth))
    _check_same_kind(predicted, "y_pred", truth, "y_true")
    if labels is None:
        classes, inverse = np.unique(np.concatenate([truth, predicted]), return_inverse=True)
        inverse = inverse.ravel().astype(np.int64)
        return classes, inverse[: len(truth)], inverse[len(truth) :]
    classes = _as_label_set(labels, truth, "y_true")
    return classes, _encode(truth, "y_true", classes), _encode(predicted, "y_pred", classes)


def _count_matrix(true_index: np.ndarray, pred_index: np.ndarray, n_classes: int) -> np.ndarray:
    flat = np.bincount(true_index * n_classes + pred_index, minlength=n_classes * n_classes)
    return flat.reshape(n_classes, n_classes).astype(np.int64)


def _zero_division_value(zero_division: Any) -> tuple[float, bool]:
    """The value to use for 0/0 and whether to warn."""
    if isinstance(zero_division, str) and zero_division == "warn":
        return 0.0, True
    if isinstance(zero_division, (int, float, np.integer, np.floating)) and not isinstance(
        zero_division, (bool, np.bool_)
    ):
        value = float(zero_division)
        if value in (0.0, 1.0) or np.isnan(value):
            return value, False
    raise ValueError(f"zero_division must be 'warn', 0, 1 or nan; got {zero_division!r}")


def _check_average(average: Any) -> None:
    if average not in _AVERAGES:
        raise ValueError(
            "average must be 'binary', 'micro', 'macro', 'weighted' or None; "
            f"got {average!r}"
        )


def _as_beta(beta: Any) -> float:
    if isinstance(beta, (bool, np.bool_)) or not isinstance(
        beta, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"beta must be a number; got {type(beta).__name__}")
    if not beta >= 0:
        raise ValueError(f"beta must be non-negative; got {beta}")
    return float(beta)


def _warn(message: str) -> None:
    """Warn, pointing at the first caller outside this module."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UndefinedMetricWarning, stacklevel=level)


# --------------------------------------------------------------------------------------
# Confusion matrix and counts per class
# --------------------------------------------------------------------------------------


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
    classes, true_index, pred_index = _encoded_pair(y_true, y_pred, labels)
    return _count_matrix(true_index, pred_index, len(classes))


class _Counts(NamedTuple):
    """One-vs-rest counts per class (float64), in the order of ``classes``."""

    classes: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    tn: np.ndarray


def _counts_from_matrix(classes: np.ndarray, matrix: np.ndarray) -> _Counts:
    matrix = matrix.astype(np.float64)
    tp = np.diagonal(matrix, axis1=-2, axis2=-1).copy()
    fp = matrix.sum(axis=-2) - tp
    fn = matrix.sum(axis=-1) - tp
    tn = matrix.sum(axis=(-2, -1))[..., None] - tp - fp - fn
    return _Counts(classes, tp, fp, fn, tn)


def _class_counts(y_true, y_pred, *, labels, average, pos_label) -> _Counts:
    """Per-class counts; for ``average='binary'`` those of ``pos_label`` only."""
    _check_average(average)
    classes, true_index, pred_index = _encoded_pair(y_true, y_pred, labels)
    counts = _counts_from_matrix(classes, _count_matrix(true_index, pred_index, len(classes)))
    if average != "binary":
        return counts
    if len(classes) > 2:
        raise ValueError(
            f"average='binary' needs at most two classes; got {len(classes)} "
            f"{_shown(classes)}; choose average='micro', 'macro', 'weighted' or None"
        )
    hits = np.flatnonzero(_equal_to(classes, pos_label))
    if hits.size:
        k = hits[:1]
        return _Counts(classes[k], counts.tp[k], counts.fp[k], counts.fn[k], counts.tn[k])
    if labels is not None or len(classes) == 2:
        raise ValueError(f"pos_label must be one of {_shown(classes)}; got {pos_label!r}")
    # A single class that is not pos_label: the positive class was never seen.
    zero = np.zeros(1)
    return _Counts(np.array([pos_label]), zero, zero, zero, np.array([float(len(true_index))]))


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
    counts: _Counts,
    *,
    average: Any,
    zero_division: Any,
    metric: str,
    missing: str,
) -> float | np.ndarray:
    """``numerator / denominator`` per class, averaged; 0/0 set by ``zero_division``."""
    value, warn = _zero_division_value(zero_division)
    if average == "micro":
        numerator, denominator = numerator.sum(keepdims=True), denominator.sum(keepdims=True)
    undefined = denominator == 0
    values = np.divide(numerator, np.where(undefined, 1.0, denominator))
    values[undefined] = value
    if warn and undefined.any():
        if average in ("binary", "micro"):
            where = f"because there are no {missing} samples"
        else:
            where = f"for labels {_shown(counts.classes[undefined])} with no {missing} samples"
        _warn(
            f"{metric} is ill-defined and set to 0.0 {where}; "
            "use zero_division to choose the value"
        )
    return _reduce(values, average, counts.tp + counts.fn)


_METRIC_DOC = """
    Parameters
    ----------
    y_true, y_pred : array_like of shape (n,)
        True and predicted class labels.
    average : {{"binary", "micro", "macro", "weighted"}} or None, default "binary"
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
    return _ratio(
        numerator,
        denominator,
        counts,
        average=average,
        zero_division=zero_division,
        metric=metric,
        missing=missing,
    )


def precision(
    y_true: Any,
    y_pred: Any,
    *,
    average: str | None = "binary",
    pos_label: Any = 1,
    labels: Any = None,
    zero_division: Any = "warn",
) -> float | np.ndarray:
    """Precision, ``tp / (tp + fp)``: the fraction of predicted positives that are right.
    {doc}
    Examples
    --------
    >>> precision([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1])
    0.625
    >>> precision([0, 1, 2, 2], [0, 2, 2, 2], average=None, zero_division=0).tolist()
    [1.0, 0.0, 0.6666666666666666]
    """
    return _rate(
        y_true,
        y_pred,
        average=average,
        pos_label=pos_label,
        labels=labels,
        zero_division=zero_division,
        which="precision",
    )


def recall(
    y_true: Any,
    y_pred: Any,
    *,
    average: str | None = "binary",
    pos_label: Any = 1,
    labels: Any = None,
    zero_division: Any = "warn",
) -> float | np.ndarray:
    """Recall (sensitivity, true positive rate), ``tp / (tp + fn)``.
    {doc}
    Examples
    --------
    >>> round(recall([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1]), 4)
    0.8333
    """
    return _rate(
        y_true,
        y_pred,
        average=average,
        pos_label=pos_label,
        labels=labels,
        zero_division=zero_division,
        which="recall",
    )


def specificity(
    y_true: Any,
    y_pred: Any,
    *,
    average: str | None = "binary",
    pos_label: Any = 1,
    labels: Any = None,
    zero_division: Any = "warn",
) -> float | np.ndarray:
    """Specificity (true negative rate), ``tn / (tn + fp)``, one class against the rest.

    ``"micro"`` pools ``tn`` and ``fp`` over the classes; ``"weighted"`` weights by the
    support (true samples) of each class, like the other metrics.
    {doc}
    Examples
    --------
    >>> specificity([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1])
    0.25
    """
    return _rate(
        y_true,
        y_pred,
        average=average,
        pos_label=pos_label,
        labels=labels,
        zero_division=zero_division,
        which="specificity",
    )


def false_positive_rate(
    y_true: Any,
    y_pred: Any,
    *,
    average: str | None = "binary",
    pos_label: Any = 1,
    labels: Any = None,
    zero_division: Any = "warn",
) -> float | np.ndarray:
    """False positive rate (fall-out), ``fp / (fp + tn)``; 1 - specificity where defined.
    {doc}
    Examples
    --------
    >>> false_positive_rate([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1])
    0.75
    """
    return _rate(
        y_true,
        y_pred,
        average=average,
        pos_label=pos_label,
        labels=labels,
        zero_division=zero_division,
        which="fpr",
    )


def false_negative_rate(
    y_true: Any,
    y_pred: Any,
    *,
    average: str | None = "binary",
    pos_label: Any = 1,
    labels: Any = None,
    zero_division: Any = "warn",
) -> float | np.ndarray:
    """False negative rate (miss rate), ``fn / (fn + tp)``; 1 - recall where defined.
    {doc}
    Examples
    --------
    >>> round(false_negative_rate([1, 1, 0, 1, 1, 0, 1, 0, 0, 1],
    ...                           [1, 0, 1, 1, 1, 1, 1, 1, 0, 1]), 4)
    0.1667
    """
    return _rate(
        y_true,
        y_pred,
        average=average,
        pos_label=pos_label,
        labels=labels,
        zero_division=zero_division,
        which="fnr",
    )


def fbeta_score(
    y_true: Any,
    y_pred: Any,
    *,
    beta: float,
    average: str | None = "binary",
    pos_label: Any = 1,
    labels: Any = None,
    zero_division: Any = "warn",
) -> float | np.ndarray:
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
    beta = _as_beta(beta)
    if beta == 0 or np.isinf(beta):
        return _rate(
            y_true,
            y_pred,
            average=average,
            pos_label=pos_label,
            labels=labels,
            zero_division=zero_division,
            which="precision" if beta == 0 else "recall",
        )
    counts = _class_counts(y_true, y_pred, labels=labels, average=average, pos_label=pos_label)
    beta2 = beta * beta
    # numerator and denominator are linear in the counts, so "micro" may pool them
    return _ratio(
        (1 + beta2) * counts.tp,
        beta2 * (counts.tp + counts.fn) + (counts.tp + counts.fp),
        counts,
        average=average,
        zero_division=zero_division,
        metric="F-score",
        missing="true nor predicted",
    )


def f1_score(
    y_true: Any,
    y_pred: Any,
    *,
    average: str | None = "binary",
    pos_label: Any = 1,
    labels: Any = None,
    zero_division: Any = "warn",
) -> float | np.ndarray:
    """F1 score, the harmonic mean of precision and recall: :func:`fbeta_score` with beta 1.
    {doc}
    Examples
    --------
    >>> round(f1_score([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1]), 4)
    0.7143
    """
    return fbeta_score(
        y_true,
        y_pred,
        beta=1.0,
        average=average,
        pos_label=pos_label,
        labels=labels,
        zero_division=zero_division,
    )


for _function, _undefined in [
    (precision, "there are no predicted samples (tp + fp == 0)"),
    (recall, "there are no true samples (tp + fn == 0)"),
    (specificity, "there are no negative samples (tn + fp == 0)"),
    (false_positive_rate, "there are no negative samples (fp + tn == 0)"),
    (false_negative_rate, "there are no true samples (fn + tp == 0)"),
    (fbeta_score, "tp + fn + fp == 0"),
    (f1_score, "tp + fn + fp == 0"),
]:
    _doc = _METRIC_DOC.format(undefined=_undefined)
    if _function is fbeta_score:
        _doc = _doc.replace(
            "        True and predicted class labels.\n",
            "        True and predicted class labels.\n"
            "    beta : float\n        Non-negative weight of recall against precision.\n",
            1,
        )
    if _function.__doc__:  # None under python -OO
        _function.__doc__ = _function.__doc__.replace("{doc}", _doc.rstrip() + "\n")
del _function, _undefined, _doc


# --------------------------------------------------------------------------------------
# Scalar summaries of a confusion matrix
# --------------------------------------------------------------------------------------


def accuracy(y_true: Any, y_pred: Any, *, labels: Any = None) -> float:
    """Fraction of samples whose prediction equals the truth.

    Parameters
    ----------
    y_true, y_pred : array_like of shape (n,)
        True and predicted class labels.
    labels : array_like, optional
        The allowed classes; only checked (every label must be in it).

    Returns
    -------
    float

    Examples
    --------
    >>> accuracy([1, 1, 0, 1, 1, 0, 1, 0, 0, 1], [1, 0, 1, 1, 1, 1, 1, 1, 0, 1])
    0.6
    """
    _, true_index, pred_index = _encoded_pair(y_true, y_pred, labels)
    return float(np.mean(true_index == pred_index))


def error_rate(y_true: Any, y_pred: Any, *, labels: Any = None) -> float:
    """Fraction of samples whose prediction differs from the truth, ``1 - accuracy``.

    Parameters
    ----------
    y_true, y_pred : array_like of shape (n,)
        True and predicted class labels.
    labels : array_like, optional
        The allowed classes; only checked (every label must be in it).

    Returns
    -------
    float

    Examples
    --------
    >>> error_rate([0, 1, 1, 0], [0, 1, 0, 0])
    0.25
    """
    _, true_index, pred_index = _encoded_pair(y_true, y_pred, labels)
    return float(np.mean(true_index != pred_index))


def balanced_accuracy(y_true: Any, y_pred: Any, *, labels: Any = None) -> float:
    """Mean recall over the classes present in ``y_true``.

    Classes with no true samples are left out of the mean (their recall is undefined); if
    such a class was predicted, an :class:`~deteval.errors.UndefinedMetricWarning` says so
    (scikit-learn warns likewise, with a plain ``UserWarning``).

    Parameters
    ----------
    y_true, y_pred : array_like of shape (n,)
        True and predicted class labels.
    labels : array_like, optional
        The allowed classes; only checked (every label must be in it).

    Returns
    -------
    float

    Examples
    --------
    >>> balanced_accuracy([0, 0, 0, 0, 1], [0, 0, 0, 0, 0])
    0.5
    """
    classes, true_index, pred_index = _encoded_pair(y_true, y_pred, labels)
    counts = _counts_from_matrix(classes, _count_matrix(true_index, pred_index, len(classes)))
    support = counts.tp + counts.fn
    present = support > 0
    if np.any(~present & (counts.fp > 0)):
        _warn(
            f"y_pred contains classes not in y_true {_shown(classes[~present & (counts.fp > 0)])}"
            "; they are left out of the balanced accuracy"
        )
    return float(np.mean(counts.tp[present] / support[present]))


def cohen_kappa(
    y_true: Any,
    y_pred: Any,
    *,
    labels: Any = None,
    weights: str | None = None,
    replace_undefined_by: float = np.nan,
) -> float:
    """Cohen's kappa: agreement between two labellings, corrected for chance.

    ``kappa = 1 - sum(W * O) / sum(W * E)`` where ``O`` is the confusion matrix, ``E`` the
    matrix expected by chance (outer product of its row and column sums over ``n``) and
    ``W`` the disagreement weights: 1 off the diagonal (``weights=None``), ``|i - j|``
    (``"linear"``) or ``(i - j)**2`` (``"quadratic"``), with ``i, j`` positions in the
    class order. Kappa is symmetric in its two arguments.

    Parameters
    ----------
    y_true, y_pred : array_like of shape (n,)
        The two labellings.
    labels : array_like, optional
        The classes and their order (the order matters for weighted kappa).
    weights : {None, "linear", "quadratic"}
        Disagreement weights.
    replace_undefined_by : float, default nan
        Returned, with an :class:`~deteval.errors.UndefinedMetricWarning`, when kappa is
        undefined (``sum(W * E) == 0``, e.g. both labellings use one and the same class),
        as scikit-learn's ``cohen_kappa_score`` does.

    Returns
    -------
    float

    Examples
    --------
    >>> matrix = np.array([[239, 21, 16], [16, 73, 4], [6, 9, 280]])
    >>> y_true = np.repeat([0, 0, 0, 1, 1, 1, 2, 2, 2], matrix.ravel())
    >>> y_pred = np.repeat([0, 1, 2, 0, 1, 2, 0, 1, 2], matrix.ravel())
    >>> round(cohen_kappa(y_true, y_pred), 3)
    0.823
    """
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic'; got {weights!r}")
    classes, true_index, pred_index = _encoded_pair(y_true, y_pred, labels)
    observed = _count_matrix(true_index, pred_index, len(classes)).astype(np.float64)
    expected = np.outer(observed.sum(axis=0), observed.sum(axis=1)) / observed.sum()
    position = np.arange(len(classes), dtype=np.float64)
    distance = position[:, None] - position[None, :]
    if weights is None:
        disagreement = (distance != 0).astype(np.float64)
    elif weights == "linear":
        disagreement = np.abs(distance)
    else:
        disagreement = distance**2
    denominator = np.sum(disagreement * expected)
    if denominator == 0:
        _warn(
            "Cohen's kappa is undefined because the expected disagreement is 0 (the "
            f"labellings share a single class); returning {replace_undefined_by}"
        )
        return float(replace_undefined_by)
    return float(1 - np.sum(disagreement * observed) / denominator)


def matthews_corrcoef(y_true: Any, y_pred: Any, *, labels: Any = None) -> float:
    """Matthews correlation coefficient (the multiclass R_K statistic of Gorodkin).

    ``(c n - t . p) / sqrt((n**2 - p . p) (n**2 - t . t))`` with ``c`` the correct
    predictions, ``n`` the samples, ``t`` and ``p`` the true and predicted counts per class;
    for two classes, ``(tp tn - fp fn) / sqrt((tp + fp)(tp + fn)(tn + fp)(tn + fn))``.
    When the denominator is 0 (one labelling uses a single class) the value is 0.0, as in
    scikit-learn, and an :class:`~deteval.errors.UndefinedMetricWarning` is emitted
    (scikit-learn is silent).

    Parameters
    ----------
    y_true, y_pred : array_like of shape (n,)
        True and predicted class labels.
    labels : array_like, optional
        The allowed classes; only checked (every label must be in it).

    Returns
    -------
    float in [-1, 1]

    Examples
    --------
    >>> round(matthews_corrcoef([1, 1, 0, 1, 1, 0, 1, 0, 0, 1],
    ...                         [1, 0, 1, 1, 1, 1, 1, 1, 0, 1]), 4)
    0.1021
    """
    classes, true_index, pred_index = _encoded_pair(y_true, y_pred, labels)
    matrix = _count_matrix(true_index, pred_index, len(classes)).astype(np.float64)
    true_sum, pred_sum = matrix.sum(axis=1), matrix.sum(axis=0)
    n_correct, n = np.trace(matrix), pred_sum.sum()
    covariance = n_correct * n - np.dot(true_sum, pred_sum)
    variance = (n**2 - np.dot(pred_sum, pred_sum)) * (n**2 - np.dot(true_sum, true_sum))
    if variance == 0:
        _warn("Matthews correlation is undefined because a labelling uses one class; set to 0.0")
        return 0.0
    return float(covariance / np.sqrt(variance))


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
    beta = _as_beta(beta)
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
    value, warn = _zero_division_value(zero_division)
    counts = _counts_from_matrix(np.arange(matrices.shape[1]), matrices)
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
            _warn(
                f"{metric} is ill-defined and set to 0.0 for classes {_shown(classes)} with "
                f"no {missing} samples in some run; use zero_division to choose the value"
            )
        with warnings.catch_warnings():  # an all-NaN column stays NaN, silently
            warnings.simplefilter("ignore", RuntimeWarning)
            results.append(np.nanmean(values, axis=0))
    return results[0], results[1], results[2]


# --------------------------------------------------------------------------------------
# Scores: thresholds, ROC and precision-recall curves
# --------------------------------------------------------------------------------------


def _as_scores(scores: Any, name: str, n: int) -> np.ndarray:
    array = np.asarray(scores)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real numbers; got dtype {array.dtype}")
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {array.shape}")
    _check_length(array, name, n)
    array = array.astype(np.float64, copy=False)
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{name} must be finite; got {array[bad[0]]} at index {bad[0]}")
    return array


def _positives(y_true: Any, scores: Any, pos_label: Any) -> tuple[np.ndarray, np.ndarray]:
    """``y_true == pos_label`` as booleans, and the scores as float64."""
    truth = _as_labels(y_true, "y_true")
    values = _as_scores(scores, "scores", len(truth))
    if pos_label is None:
        classes = np.unique(truth)
        numeric = _label_kind(classes) == "numbers"
        if not numeric or not (
            np.isin(classes, [0, 1]).all() or np.isin(classes, [-1, 1]).all()
        ):
            raise ValueError(
                "pos_label must be given when y_true is not {0, 1} or {-1, 1}; "
                f"got labels {_shown(classes)}"
            )
        pos_label = 1
    return _equal_to(truth, pos_label), values


class _Steps(NamedTuple):
    """Cumulative counts at each distinct score, from the highest down."""

    tps: np.ndarray
    fps: np.ndarray
    thresholds: np.ndarray


def _steps(positive: np.ndarray, scores: np.ndarray) -> _Steps:
    order = np.argsort(-scores, kind="stable")
    ordered = scores[order]
    # the last sample of every run of equal scores: all tied samples switch together
    ends = np.append(np.flatnonzero(np.diff(ordered)), len(ordered) - 1)
    tps = np.cumsum(positive[order], dtype=np.float64)[ends]
    fps = 1.0 + ends - tps
    return _Steps(tps, fps, ordered[ends])


def _trapezoid(y: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))


class ThresholdCounts(NamedTuple):
    """True and false positives and negatives at a threshold (ints, or arrays of them)."""

    tp: Any
    fp: Any
    fn: Any
    tn: Any


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
    positive, values = _positives(y_true, scores, pos_label)
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
    y_true : array_like of shape (n,)
        True labels.
    scores : array_like of shape (n,)
        Finite scores, higher meaning more likely positive.
    pos_label : label, optional
        The positive label (see the module docstring).
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
    positive, values = _positives(y_true, scores, pos_label)
    tps, fps, thresholds = _steps(positive, values)
    if drop_intermediate and len(fps) > 2:
        corner = np.logical_or(np.diff(fps, 2), np.diff(tps, 2))
        keep = np.flatnonzero(np.concatenate([[True], corner, [True]]))
        tps, fps, thresholds = tps[keep], fps[keep], thresholds[keep]
    tps, fps = np.append(0.0, tps), np.append(0.0, fps)
    thresholds = np.append(np.inf, thresholds)
    if fps[-1] == 0:
        _warn("No negative samples in y_true: the false positive rate is undefined (NaN)")
        fpr = np.full(fps.shape, np.nan)
    else:
        fpr = fps / fps[-1]
    if tps[-1] == 0:
        _warn("No positive samples in y_true: the true positive rate is undefined (NaN)")
        tpr = np.full(tps.shape, np.nan)
    else:
        tpr = tps / tps[-1]
    return fpr, tpr, thresholds


def roc_auc_score(y_true: Any, scores: Any, *, pos_label: Any = None) -> float:
    """Area under the ROC curve (trapezoid rule: a tied positive-negative pair counts 1/2).

    Equal to the probability that a random positive scores higher than a random negative,
    ties counting one half. Binary only (use ``pos_label`` for one class against the rest).

    Parameters
    ----------
    y_true : array_like of shape (n,)
        True labels.
    scores : array_like of shape (n,)
        Finite scores, higher meaning more likely positive.
    pos_label : label, optional
        The positive label (see the module docstring).

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
    positive, values = _positives(y_true, scores, pos_label)
    if positive.all() or not positive.any():
        _warn("Only one class is present in y_true: ROC AUC is undefined (NaN)")
        return float("nan")
    fpr, tpr, _ = roc_curve(positive, values, pos_label=True)
    return _trapezoid(tpr, fpr)


def _pr_points(positive: np.ndarray, values: np.ndarray, drop_intermediate: bool):
    """Precision and recall at each distinct threshold, highest threshold first."""
    tps, fps, thresholds = _steps(positive, values)
    if drop_intermediate and len(fps) > 2:
        # keep the first and last point of every run of equal tp (vertical segments)
        changes = np.logical_or(np.diff(tps[:-1]), np.diff(tps[1:]))
        keep = np.flatnonzero(np.concatenate([[True], changes, [True]]))
        tps, fps, thresholds = tps[keep], fps[keep], thresholds[keep]
    precision_values = tps / (tps + fps)
    recall_values = np.ones_like(tps) if tps[-1] == 0 else tps / tps[-1]
    return precision_values, recall_values, thresholds


def precision_recall_curve(
    y_true: Any, scores: Any, *, pos_label: Any = None, drop_intermediate: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision and recall at every distinct score threshold, as scikit-learn returns them.

    Points run from the lowest threshold (recall 1) to the highest, followed by a final
    point ``precision 1, recall 0`` that has no threshold. With ``drop_intermediate``, only
    the first and last point of each run of equal recall are kept.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        True labels.
    scores : array_like of shape (n,)
        Finite scores, higher meaning more likely positive.
    pos_label : label, optional
        The positive label (see the module docstring).
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
    positive, values = _positives(y_true, scores, pos_label)
    if not positive.any():
        _warn("No positive samples in y_true: recall is set to 1 at every threshold")
    p, r, thresholds = _pr_points(positive, values, drop_intermediate)
    return np.append(p[::-1], 1.0), np.append(r[::-1], 0.0), thresholds[::-1]


def average_precision(y_true: Any, scores: Any, *, pos_label: Any = None) -> float:
    """Average precision: the step-wise area under the precision-recall curve.

    ``AP = sum_k (R_k - R_{k-1}) P_k`` over the distinct thresholds from the highest down,
    with ``R_0 = 0``: each gain in recall is weighted by the precision at which it is
    reached, without interpolation (scikit-learn's ``average_precision_score``; not the
    interpolated VOC or COCO AP).

    Parameters
    ----------
    y_true : array_like of shape (n,)
        True labels.
    scores : array_like of shape (n,)
        Finite scores, higher meaning more likely positive.
    pos_label : label, optional
        The positive label (see the module docstring).

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
    positive, values = _positives(y_true, scores, pos_label)
    if not positive.any():
        _warn("No positive samples in y_true: average precision is set to 0.0")
    p, r, _ = _pr_points(positive, values, False)
    p, r = np.append(p[::-1], 1.0), np.append(r[::-1], 0.0)
    # same order of operations as scikit-learn, so the float is identical
    return float(max(0.0, -np.sum(np.diff(r) * p[:-1])))


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
    y_true : array_like of shape (n,)
        True labels.
    scores : array_like of shape (n,)
        Finite scores, higher meaning more likely positive.
    pos_label : label, optional
        The positive label (see the module docstring).

    Returns
    -------
    float
        NaN, with an :class:`~deteval.errors.UndefinedMetricWarning`, without positives.

    Examples
    --------
    >>> pr_auc_trapezoid([0, 0, 0, 1, 1, 0, 1, 1], [.5, .55, .74, .65, .28, .17, .3, .45])
    0.3901785714285714
    """
    positive, values = _positives(y_true, scores, pos_label)
    if not positive.any():
        _warn("No positive samples in y_true: the precision-recall area is undefined (NaN)")
        return float("nan")
    p, r, _ = _pr_points(positive, values, False)
    first = r[0] * (1.0 + p[0]) / 2.0
    return float(_trapezoid(p, r) + first)


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
    y_true : array_like of shape (n,)
        True labels.
    scores : array_like of shape (n,)
        Finite scores, higher meaning more likely positive.
    pos_label : label, optional
        The positive label (see the module docstring).

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
    positive, values = _positives(y_true, scores, pos_label)
    n_positive = int(positive.sum())
    if n_positive == 0:
        _warn("No positive samples in y_true: the break-even point is undefined (NaN)")
        return float("nan")
    tps, fps, _ = _steps(positive, values)
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
    truth = _as_labels(y_true, "y_true")
    matrix = np.asarray(score_matrix)
    if matrix.dtype.kind not in "biuf":
        raise TypeError(f"score_matrix must be real numbers; got dtype {matrix.dtype}")
    if matrix.ndim != 2:
        raise ValueError(f"score_matrix must be 2-D (n_samples, n_classes); got shape "
                         f"{matrix.shape}")
    _check_length(matrix, "score_matrix", len(truth))
    matrix = matrix.astype(np.float64, copy=False)
    if not np.isfinite(matrix).all():
        row, col = np.argwhere(~np.isfinite(matrix))[0]
        raise ValueError(
            f"score_matrix must be finite; got {matrix[row, col]} at [{row}, {col}]"
        )
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
        classes = _as_label_set(labels, truth, "y_true")
        if len(classes) != n_columns:
            raise ValueError(
                f"score_matrix must have one column per label ({len(classes)}); "
                f"got {n_columns} columns"
            )
    if k >= n_columns:
        _warn(
            f"k ({k}) >= the number of classes ({n_columns}): every sample is a hit, "
            "so the score is meaningless"
        )
    true_index = _encode(truth, "y_true", classes)
    true_scores = matrix[np.arange(len(truth)), true_index][:, None]
    later = np.arange(n_columns)[None, :] > true_index[:, None]
    rank = np.sum(matrix > true_scores, axis=1) + np.sum(
        (matrix == true_scores) & later, axis=1
    )
    return float(np.mean(rank < k))


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
    classes, true_index, pred_index = _encoded_pair(y_true, y_pred, labels)
    costs = np.asarray(cost_matrix)
    if costs.dtype.kind not in "biuf":
        raise TypeError(f"cost_matrix must be real numbers; got dtype {costs.dtype}")
    if costs.shape != (len(classes), len(classes)):
        raise ValueError(
            f"cost_matrix must have shape ({len(classes)}, {len(classes)}), one row and "
            f"column per class {_shown(classes)}; got {costs.shape}"
        )
    costs = costs.astype(np.float64)
    if not np.isfinite(costs).all():
        raise ValueError("cost_matrix must be finite")
    matrix = _count_matrix(true_index, pred_index, len(classes)).astype(np.float64)
    total = float(np.sum(costs * matrix))
    if normalize == "sum":
        return total
    if normalize == "mean":
        return total / len(true_index)
    worst = float(np.dot(matrix.sum(axis=1), costs.max(axis=1)))
    if worst == 0:
        _warn("The largest possible expected cost is 0: the normalised cost is undefined (NaN)")
        return float("nan")
    return total / worst


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
    y_true : array_like of shape (n,)
        True labels.
    scores : array_like of shape (n,)
        Finite scores, higher meaning more likely positive.
    pos_label : label, optional
        The positive label (see the module docstring).
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
    positive, values = _positives(y_true, scores, pos_label)
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
        _warn("y_true holds only one class: the cost curve is undefined (NaN)")
        return pcs, np.full(pcs.shape, np.nan)
    tps, fps, _ = _steps(positive, values)
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


# --------------------------------------------------------------------------------------
# Regression errors (box coordinates, sizes, ...)
# --------------------------------------------------------------------------------------


def _regression_pair(y_true: Any, y_pred: Any, multioutput: str) -> tuple[np.ndarray, ...]:
    if multioutput not in ("uniform_average", "raw_values"):
        raise ValueError(
            f"multioutput must be 'uniform_average' or 'raw_values'; got {multioutput!r}"
        )
    arrays = []
    for name, values in (("y_true", y_true), ("y_pred", y_pred)):
        array = np.asarray(values)
        if array.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be real numbers; got dtype {array.dtype}")
        if array.ndim not in (1, 2):
            raise ValueError(f"{name} must be 1-D or 2-D; got shape {array.shape}")
        if array.shape[0] == 0:
            raise ValueError(f"{name} must be non-empty; got 0 samples")
        array = array.astype(np.float64, copy=False)
        if not np.isfinite(array).all():
            raise ValueError(f"{name} must be finite")
        arrays.append(array.reshape(len(array), -1))
    if np.shape(y_true) != np.shape(y_pred):
        raise ValueError(
            f"y_pred must have the same shape as y_true {np.shape(y_true)}; "
            f"got {np.shape(y_pred)}"
        )
    return arrays[0], arrays[1]


def _output(per_output: np.ndarray, multioutput: str) -> float | np.ndarray:
    return per_output if multioutput == "raw_values" else float(np.mean(per_output))


_REGRESSION_DOC = """
    Parameters
    ----------
    y_true, y_pred : array_like of shape (n,) or (n, d)
        True and predicted values (for example ``(n, 4)`` boxes); finite, same shape.
    multioutput : {"uniform_average", "raw_values"}
        Average the ``d`` per-column errors, or return them as an array of shape ``(d,)``.

    Returns
    -------
    float, or numpy.ndarray of shape (d,)
"""


def mean_squared_error(
    y_true: Any, y_pred: Any, *, multioutput: str = "uniform_average"
) -> float | np.ndarray:
    """Mean squared error, per column then averaged over the columns.
    {doc}
    Examples
    --------
    >>> mean_squared_error([[10, 10, 50, 50]], [[12, 9, 50, 54]])
    5.25
    """
    truth, predicted = _regression_pair(y_true, y_pred, multioutput)
    return _output(np.mean((truth - predicted) ** 2, axis=0), multioutput)


def root_mean_squared_error(
    y_true: Any, y_pred: Any, *, multioutput: str = "uniform_average"
) -> float | np.ndarray:
    """Root mean squared error: the square root per column, then the mean over the columns.
    {doc}
    Examples
    --------
    >>> root_mean_squared_error([0, 0, 0, 0], [1, -1, 1, -1])
    1.0
    """
    truth, predicted = _regression_pair(y_true, y_pred, multioutput)
    return _output(np.sqrt(np.mean((truth - predicted) ** 2, axis=0)), multioutput)


def mean_absolute_error(
    y_true: Any, y_pred: Any, *, multioutput: str = "uniform_average"
) -> float | np.ndarray:
    """Mean absolute error, per column then averaged over the columns.
    {doc}
    Examples
    --------
    >>> mean_absolute_error([[10, 10, 50, 50]], [[12, 9, 50, 54]])
    1.75
    """
    truth, predicted = _regression_pair(y_true, y_pred, multioutput)
    return _output(np.mean(np.abs(truth - predicted), axis=0), multioutput)


def root_mean_squared_log_error(
    y_true: Any, y_pred: Any, *, multioutput: str = "uniform_average"
) -> float | np.ndarray:
    """Root mean squared error of ``log(1 + y)``: relative errors, for sizes and counts.

    Negative values are an error: the measure is meant for non-negative quantities such as
    widths, heights and areas. (scikit-learn accepts values above -1.)
    {doc}
    Examples
    --------
    >>> round(root_mean_squared_log_error([3, 5], [3, 8]), 4)
    0.2867
    """
    truth, predicted = _regression_pair(y_true, y_pred, multioutput)
    for name, array in (("y_true", truth), ("y_pred", predicted)):
        if (array < 0).any():
            raise ValueError(
                f"{name} must be non-negative for the log error; got {array.min()}"
            )
    return root_mean_squared_error(np.log1p(truth), np.log1p(predicted), multioutput=multioutput)


for _function in (
    mean_squared_error,
    root_mean_squared_error,
    mean_absolute_error,
    root_mean_squared_log_error,
):
    if _function.__doc__:  # None under python -OO
        _function.__doc__ = _function.__doc__.replace("{doc}", _REGRESSION_DOC.rstrip() + "\n")
del _function
