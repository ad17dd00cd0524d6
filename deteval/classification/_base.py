"""Input checks and counting shared by the classification metrics (not public API)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import numpy as np

from .._arrays import frozen
from .._validation import one_of
from ..errors import warn_undefined

AVERAGES = ("binary", "micro", "macro", "weighted", None)
MAX_SHOWN = 5  # offending values quoted in an error message

# --------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------


def shown(values: np.ndarray) -> str:
    """Up to ``MAX_SHOWN`` values as a readable list, with an ellipsis when cut."""
    items = [repr(v.item()) if hasattr(v, "item") else repr(v) for v in values[:MAX_SHOWN]]
    more = ", ..." if len(values) > MAX_SHOWN else ""
    return "[" + ", ".join(items) + more + "]"


def label_kind(array: np.ndarray) -> str:
    kind = array.dtype.kind
    if kind in "biuf":
        return "numbers"
    if kind in "US":
        return "strings"
    return "objects"


def as_labels(values: Any, name: str, *, allow_empty: bool = False) -> np.ndarray:
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


def equal_to(array: np.ndarray, value: Any) -> np.ndarray:
    """``array == value`` as booleans; a string never equals a number (no numpy warning)."""
    kind = label_kind(array)
    if kind != "objects" and (kind == "strings") != isinstance(value, str):
        return np.zeros(array.shape, dtype=bool)
    return np.asarray(array == value, dtype=bool)


def check_length(array: np.ndarray, name: str, n: int, reference: str = "y_true") -> None:
    if len(array) != n:
        raise ValueError(
            f"{name} must have the same length as {reference} ({n}); got {len(array)}"
        )


def check_same_kind(array: np.ndarray, name: str, reference: np.ndarray, ref_name: str):
    kind, ref_kind = label_kind(array), label_kind(reference)
    if "objects" not in (kind, ref_kind) and kind != ref_kind:
        raise TypeError(
            f"{name} must hold the same kind of labels as {ref_name} ({ref_kind}); got {kind}"
        )


def as_label_set(labels: Any, reference: np.ndarray, ref_name: str) -> np.ndarray:
    array = as_labels(labels, "labels")
    check_same_kind(array, "labels", reference, ref_name)
    distinct, counts = np.unique(array, return_counts=True)
    if distinct.size != array.size:
        raise ValueError(f"labels must be unique; got {shown(distinct[counts > 1])} repeated")
    return array


def encode(values: np.ndarray, name: str, labels: np.ndarray) -> np.ndarray:
    """Index of each value in ``labels`` (int64), or raise if one is not there."""
    order = np.argsort(labels, kind="stable")
    ordered = labels[order]
    position = np.searchsorted(ordered, values)
    clipped = np.minimum(position, len(ordered) - 1)
    found = ordered[clipped] == values
    if not np.all(found):
        missing = np.unique(values[~found])
        raise ValueError(
            f"{name} must hold only values in labels {shown(labels)}; "
            f"got {shown(missing)} not in labels"
        )
    return order[clipped].astype(np.int64)


def encoded_pair(y_true: Any, y_pred: Any, labels: Any) -> tuple[np.ndarray, ...]:
    """Classes and the class index of every true and predicted label."""
    truth = as_labels(y_true, "y_true")
    predicted = as_labels(y_pred, "y_pred")
    check_length(predicted, "y_pred", len(truth))
    check_same_kind(predicted, "y_pred", truth, "y_true")
    if labels is None:
        classes, inverse = np.unique(np.concatenate([truth, predicted]), return_inverse=True)
        inverse = inverse.ravel().astype(np.int64)
        return classes, inverse[: len(truth)], inverse[len(truth) :]
    classes = as_label_set(labels, truth, "y_true")
    return classes, encode(truth, "y_true", classes), encode(predicted, "y_pred", classes)


def count_matrix(true_index: np.ndarray, pred_index: np.ndarray, n_classes: int) -> np.ndarray:
    flat = np.bincount(true_index * n_classes + pred_index, minlength=n_classes * n_classes)
    return flat.reshape(n_classes, n_classes).astype(np.int64)


def check_average(average: Any) -> None:
    one_of("average", average, AVERAGES)


def as_beta(beta: Any) -> float:
    if isinstance(beta, (bool, np.bool_)) or not isinstance(
        beta, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"beta must be a number; got {type(beta).__name__}")
    if not beta >= 0:
        raise ValueError(f"beta must be non-negative; got {beta}")
    return float(beta)


class Counts(NamedTuple):
    """One-vs-rest counts per class (float64), in the order of ``classes``."""

    classes: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    tn: np.ndarray


def counts_from_matrix(classes: np.ndarray, matrix: np.ndarray) -> Counts:
    matrix = matrix.astype(np.float64)
    tp = np.diagonal(matrix, axis1=-2, axis2=-1).copy()
    fp = matrix.sum(axis=-2) - tp
    fn = matrix.sum(axis=-1) - tp
    tn = matrix.sum(axis=(-2, -1))[..., None] - tp - fp - fn
    return Counts(classes, tp, fp, fn, tn)


def as_scores(scores: Any, name: str, n: int) -> np.ndarray:
    array = np.asarray(scores)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real numbers; got dtype {array.dtype}")
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {array.shape}")
    check_length(array, name, n)
    array = array.astype(np.float64, copy=False)
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{name} must be finite; got {array[bad[0]]} at index {bad[0]}")
    return array


def positives(y_true: Any, scores: Any, pos_label: Any) -> tuple[np.ndarray, np.ndarray]:
    """``y_true == pos_label`` as booleans, and the scores as float64."""
    truth = as_labels(y_true, "y_true")
    values = as_scores(scores, "scores", len(truth))
    if pos_label is None:
        classes = np.unique(truth)
        numeric = label_kind(classes) == "numbers"
        if not numeric or not (
            np.isin(classes, [0, 1]).all() or np.isin(classes, [-1, 1]).all()
        ):
            raise ValueError(
                "pos_label must be given when y_true is not {0, 1} or {-1, 1}; "
                f"got labels {shown(classes)}"
            )
        pos_label = 1
    return equal_to(truth, pos_label), values


class Steps(NamedTuple):
    """Cumulative counts at each distinct score, from the highest down."""

    tps: np.ndarray
    fps: np.ndarray
    thresholds: np.ndarray


def steps(positive: np.ndarray, scores: np.ndarray) -> Steps:
    order = np.argsort(-scores, kind="stable")
    ordered = scores[order]
    # the last sample of every run of equal scores: all tied samples switch together
    ends = np.append(np.flatnonzero(np.diff(ordered)), len(ordered) - 1)
    tps = np.cumsum(positive[order], dtype=np.float64)[ends]
    fps = 1.0 + ends - tps
    return Steps(tps, fps, ordered[ends])


def trapezoid(y: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))


def warn_metric(message: str) -> None:
    """Emit an :class:`~deteval.errors.UndefinedMetricWarning` pointing at the first caller
    outside ``deteval.classification``."""
    warn_undefined(message, outside=__package__)


F = TypeVar("F", bound=Callable[..., Any])

# --------------------------------------------------------------------------------------
# Docstrings: parameter descriptions several metrics share, written once
# --------------------------------------------------------------------------------------

SCORES_PARAMS = """\
y_true : array_like of shape (n,)
    True labels.
scores : array_like of shape (n,)
    Finite scores, higher meaning more likely positive.
pos_label : label, optional
    The positive label (see the module docstring)."""

CHECKED_LABELS_PARAMS = """\
y_true, y_pred : array_like of shape (n,)
    True and predicted class labels.
labels : array_like, optional
    The allowed classes; only checked (every label must be in it)."""


def fill_doc(**fragments: str) -> Callable[[F], F]:
    r"""Put each fragment in place of the line ``{name}`` of the decorated function's docstring,
    indented as that line (a docstring stays None under ``python -OO``).

    Examples
    --------
    >>> def twice(x):
    ...     return 2 * x
    >>> twice.__doc__ = "Twice x.\n\n    Parameters\n    ----------\n    {params}\n"
    >>> twice = fill_doc(params="x : int\n    A number.")(twice)
    >>> twice.__doc__.splitlines()[4:]
    ['    x : int', '        A number.']
    """

    def decorate(function: F) -> F:
        doc = function.__doc__
        for name, text in fragments.items() if doc else ():
            def indented(match: re.Match, text: str = text) -> str:
                return "\n".join(match[1] + line if line else "" for line in text.split("\n"))

            doc, n = re.subn(r"^([ \t]*)\{" + name + r"\}$", indented, doc, flags=re.M)
            if n == 0:
                raise ValueError(f"{function.__name__}'s docstring has no line {{{name}}}")
        function.__doc__ = doc
        return function

    return decorate


def _read_only(value: Any, inputs: list[np.ndarray]) -> Any:
    if isinstance(value, np.ndarray):
        if not value.flags.writeable:
            return value
        return frozen(value, copy=any(np.may_share_memory(value, a) for a in inputs))
    if isinstance(value, tuple):
        items = [_read_only(item, inputs) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value


def read_only_result(function: F) -> F:
    """Make the arrays a metric returns read-only, as every deteval result is (an array that
    may share memory with an input is copied first, so inputs keep their flags)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, np.ndarray)]
        return _read_only(function(*args, **kwargs), inputs)

    return wrapper  # type: ignore[return-value]
