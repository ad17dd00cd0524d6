"""Regression-style errors of real values (box coordinates, sizes, ...).

See :mod:`deteval.classification` for the conventions (labels, averaging,
``zero_division``, scores).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._base import fill_doc, read_only_result

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


_REGRESSION_PARAMS = """\
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


@read_only_result
@fill_doc(doc=_REGRESSION_PARAMS)
def mean_squared_error(y_true: Any, y_pred: Any, *,
                       multioutput: str = "uniform_average") -> float | np.ndarray:
    """Mean squared error, per column then averaged over the columns.

    {doc}
    Examples
    --------
    >>> mean_squared_error([[10, 10, 50, 50]], [[12, 9, 50, 54]])
    5.25
    """
    truth, predicted = _regression_pair(y_true, y_pred, multioutput)
    return _output(np.mean((truth - predicted) ** 2, axis=0), multioutput)


@read_only_result
@fill_doc(doc=_REGRESSION_PARAMS)
def root_mean_squared_error(y_true: Any, y_pred: Any, *,
                            multioutput: str = "uniform_average") -> float | np.ndarray:
    """Root mean squared error: the square root per column, then the mean over the columns.

    {doc}
    Examples
    --------
    >>> root_mean_squared_error([0, 0, 0, 0], [1, -1, 1, -1])
    1.0
    """
    truth, predicted = _regression_pair(y_true, y_pred, multioutput)
    return _output(np.sqrt(np.mean((truth - predicted) ** 2, axis=0)), multioutput)


@read_only_result
@fill_doc(doc=_REGRESSION_PARAMS)
def mean_absolute_error(y_true: Any, y_pred: Any, *,
                        multioutput: str = "uniform_average") -> float | np.ndarray:
    """Mean absolute error, per column then averaged over the columns.

    {doc}
    Examples
    --------
    >>> mean_absolute_error([[10, 10, 50, 50]], [[12, 9, 50, 54]])
    1.75
    """
    truth, predicted = _regression_pair(y_true, y_pred, multioutput)
    return _output(np.mean(np.abs(truth - predicted), axis=0), multioutput)


@read_only_result
@fill_doc(doc=_REGRESSION_PARAMS)
def root_mean_squared_log_error(y_true: Any, y_pred: Any, *,
                                multioutput: str = "uniform_average") -> float | np.ndarray:
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
