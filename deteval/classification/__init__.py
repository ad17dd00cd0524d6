"""Classification metrics on plain arrays: counts, rates, agreement, curves, costs, errors.

Every function takes the ground truth first (``y_true``) and the prediction or the scores
second, with every option keyword-only. Inputs are anything ``np.asarray`` turns into a 1-D
array (score matrices and regression targets may be 2-D); they are never modified. Arrays
returned are read-only, as every deteval result is (``.copy()`` one to change it). Values
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

Modules
-------
The functions live in submodules by family, and are all importable from here:
:mod:`~deteval.classification.counts` (confusion matrix, precision, recall, F,
accuracy), :mod:`~deteval.classification.agreement` (Cohen's kappa, MCC),
:mod:`~deteval.classification.rankings` (scores: thresholds, ROC and PR curves, their
areas, average precision of scores, top-k accuracy), :mod:`~deteval.classification.costs`
and :mod:`~deteval.classification.regression` (errors of real values).
"""

from __future__ import annotations

from .agreement import (
    cohen_kappa,
    matthews_corrcoef,
)
from .costs import (
    cost_curve,
    expected_cost,
    probability_cost,
)
from .counts import (
    accuracy,
    balanced_accuracy,
    confusion_matrix,
    error_rate,
    f1_score,
    false_negative_rate,
    false_positive_rate,
    fbeta_score,
    precision,
    precision_recall_fscore_from_matrices,
    recall,
    specificity,
)
from .rankings import (
    ThresholdCounts,
    average_precision,
    break_even_point,
    counts_at_threshold,
    pr_auc_trapezoid,
    precision_recall_curve,
    roc_auc_score,
    roc_curve,
    top_k_accuracy,
)
from .regression import (
    mean_absolute_error,
    mean_squared_error,
    root_mean_squared_error,
    root_mean_squared_log_error,
)

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
