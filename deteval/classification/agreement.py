"""Agreement between two labellings, corrected for chance: Cohen's kappa and the MCC.

See :mod:`deteval.classification` for the conventions (labels, averaging,
``zero_division``, scores).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import one_of
from ._base import (
    CHECKED_LABELS_PARAMS,
    count_matrix,
    encoded_pair,
    fill_doc,
    warn_metric,
)


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
    one_of("weights", weights, (None, "linear", "quadratic"))
    classes, true_index, pred_index = encoded_pair(y_true, y_pred, labels)
    observed = count_matrix(true_index, pred_index, len(classes)).astype(np.float64)
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
        warn_metric(
            "Cohen's kappa is undefined because the expected disagreement is 0 (the "
            f"labellings share a single class); returning {replace_undefined_by}"
        )
        return float(replace_undefined_by)
    return float(1 - np.sum(disagreement * observed) / denominator)


@fill_doc(labels_params=CHECKED_LABELS_PARAMS)
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
    {labels_params}

    Returns
    -------
    float in [-1, 1]

    Examples
    --------
    >>> round(matthews_corrcoef([1, 1, 0, 1, 1, 0, 1, 0, 0, 1],
    ...                         [1, 0, 1, 1, 1, 1, 1, 1, 0, 1]), 4)
    0.1021
    """
    classes, true_index, pred_index = encoded_pair(y_true, y_pred, labels)
    matrix = count_matrix(true_index, pred_index, len(classes)).astype(np.float64)
    true_sum, pred_sum = matrix.sum(axis=1), matrix.sum(axis=0)
    n_correct, n = np.trace(matrix), pred_sum.sum()
    covariance = n_correct * n - np.dot(true_sum, pred_sum)
    variance = (n**2 - np.dot(pred_sum, pred_sum)) * (n**2 - np.dot(true_sum, true_sum))
    if variance == 0:
        warn_metric(
            "Matthews correlation is undefined because a labelling uses one class; set to 0.0"
        )
        return 0.0
    return float(covariance / np.sqrt(variance))
