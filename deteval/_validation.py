"""Checks of settings (thresholds, counts, switches, choices) shared by the modules.

Each check returns the value in its canonical type or raises an error whose message names
the setting, what was expected and what was given. ``TypeError`` means the wrong kind of
value, ``ValueError`` a value of the right kind out of range.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "area_ranges",
    "check_similarity_settings",
    "finite_matrix",
    "flag",
    "integers",
    "number",
    "one_of",
    "positive_integer",
    "real_matrix",
    "unit_interval",
    "zero_division_value",
]


def number(name: str, value: Any, *, low: float, high: float = math.inf,
           low_open: bool = False) -> float:
    """``value`` as a finite float in ``[low, high]`` (``(low, high]`` with ``low_open``).

    Examples
    --------
    >>> number("beta", 2, low=0.0, low_open=True)
    2.0
    >>> number("iou_threshold", 1.5, low=0.0, high=1.0)
    Traceback (most recent call last):
    ValueError: iou_threshold must be a finite number >= 0 and <= 1; got 1.5
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number; got {type(value).__name__}")
    value = float(value)
    too_low = value <= low if low_open else value < low
    if not math.isfinite(value) or too_low or value > high:
        bound = f"{'>' if low_open else '>='} {low:g}"
        bound += f" and <= {high:g}" if math.isfinite(high) else ""
        raise ValueError(f"{name} must be a finite number {bound}; got {value!r}")
    return value


def unit_interval(name: str, value: Any, *, low_open: bool = False) -> float:
    """``value`` as a float in ``[0, 1]`` (``(0, 1]`` with ``low_open``).

    Examples
    --------
    >>> unit_interval("recall", 0.5)
    0.5
    >>> unit_interval("iou_threshold", 0, low_open=True)
    Traceback (most recent call last):
    ValueError: iou_threshold must be a finite number > 0 and <= 1; got 0.0
    """
    return number(name, value, low=0.0, high=1.0, low_open=low_open)


def positive_integer(name: str, value: Any, *, or_none: bool = False) -> int:
    """``value`` as an int >= 1 (numpy integers accepted, booleans refused).

    ``or_none`` only changes the message, for settings where None means "no limit"; the
    caller handles None itself.

    Examples
    --------
    >>> positive_integer("limit", 3)
    3
    >>> positive_integer("limit", 0, or_none=True)
    Traceback (most recent call last):
    ValueError: limit must be a positive integer or None; got 0
    """
    expected = "a positive integer or None" if or_none else "a positive integer"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be {expected}; got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be {expected}; got {value}")
    return int(value)


def integers(name: str, values: Any) -> tuple[int, ...]:
    """One integer or a 1-D list of them (whole floats accepted) as a tuple of ints.

    Examples
    --------
    >>> integers("max_detections", [1, 10.0, 100])
    (1, 10, 100)
    >>> integers("max_detections", [1.5])
    Traceback (most recent call last):
    ValueError: max_detections must be a list of integers; got [1.5]
    """
    array = np.atleast_1d(np.asarray(values))
    if array.ndim != 1 or (array.size and (array.dtype.kind not in "iuf" or not np.array_equal(
            array, np.round(array)))):
        raise ValueError(f"{name} must be a list of integers; got {values!r}")
    return tuple(int(v) for v in array)


def area_ranges(value: Any) -> tuple[tuple[float, float], ...]:
    """``area_ranges`` as a non-empty tuple of ``(lo, hi)`` float pairs.

    Examples
    --------
    >>> area_ranges([[0, 1e10], (0, 1024)])
    ((0.0, 10000000000.0), (0.0, 1024.0))
    >>> area_ranges([0, 1])
    Traceback (most recent call last):
    ValueError: area_ranges must be a list of (lo, hi) pairs; got [0, 1]
    """
    ranges = np.asarray(value, dtype=np.float64)
    if ranges.ndim != 2 or ranges.shape[1] != 2 or len(ranges) == 0:
        raise ValueError(f"area_ranges must be a list of (lo, hi) pairs; got {value!r}")
    return tuple((float(lo), float(hi)) for lo, hi in ranges)


def real_matrix(name: str, values: Any, *, axes: str) -> np.ndarray:
    """``values`` as a 2-D array of real numbers (not yet converted); ``axes`` names the two
    axes in the error. Check its shape, then pass it to :func:`finite_matrix`.

    Examples
    --------
    >>> real_matrix("scores", [[1, 2]], axes="n_samples, n_classes").shape
    (1, 2)
    >>> real_matrix("scores", [1, 2], axes="n_samples, n_classes")
    Traceback (most recent call last):
    ValueError: scores must be 2-D (n_samples, n_classes); got shape (2,)
    """
    matrix = np.asarray(values)
    if matrix.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real numbers; got dtype {matrix.dtype}")
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be 2-D ({axes}); got shape {matrix.shape}")
    return matrix


def finite_matrix(name: str, matrix: np.ndarray) -> np.ndarray:
    """A 2-D array of real numbers as float64, or a ValueError naming the first non-finite
    entry.

    Examples
    --------
    >>> finite_matrix("scores", np.array([[0.5, np.inf]]))
    Traceback (most recent call last):
    ValueError: scores must be finite; got inf at [0, 1]
    """
    matrix = matrix.astype(np.float64, copy=False)
    if not np.isfinite(matrix).all():
        row, col = np.argwhere(~np.isfinite(matrix))[0]
        raise ValueError(f"{name} must be finite; got {matrix[row, col]} at [{row}, {col}]")
    return matrix


def flag(name: str, value: Any) -> bool:
    """``value`` as a bool; only True, False, 1 and 0 are accepted.

    Examples
    --------
    >>> flag("use_cats", 1)
    True
    >>> flag("use_cats", "yes")
    Traceback (most recent call last):
    TypeError: use_cats must be True or False; got 'yes'
    """
    if not isinstance(value, (bool, np.bool_, int)) or value not in (0, 1):
        raise TypeError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def one_of(name: str, value: Any, choices: Sequence[Any]) -> Any:
    """``value`` if it is one of ``choices`` (compared with ``==``), else a ValueError.

    Examples
    --------
    >>> one_of("weights", "linear", (None, "linear", "quadratic"))
    'linear'
    >>> one_of("weights", "cubic", (None, "linear", "quadratic"))
    Traceback (most recent call last):
    ValueError: weights must be None, 'linear' or 'quadratic'; got 'cubic'
    """
    if any(value is choice or (isinstance(value, type(choice)) and value == choice)
           for choice in choices):
        return value
    shown = [repr(choice) for choice in choices]
    expected = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
    raise ValueError(f"{name} must be {expected}; got {value!r}")


def zero_division_value(zero_division: Any) -> tuple[float, bool]:
    """The value to use for a ratio 0/0, and whether to warn (``"warn"`` gives 0.0).

    Examples
    --------
    >>> zero_division_value("warn"), zero_division_value(1)
    ((0.0, True), (1.0, False))
    >>> zero_division_value(2)
    Traceback (most recent call last):
    ValueError: zero_division must be 'warn', 0, 1 or nan; got 2
    """
    if isinstance(zero_division, str) and zero_division == "warn":
        return 0.0, True
    if isinstance(zero_division, (int, float, np.integer, np.floating)) and not isinstance(
        zero_division, (bool, np.bool_)
    ):
        value = float(zero_division)
        if value in (0.0, 1.0) or np.isnan(value):
            return value, False
    raise ValueError(f"zero_division must be 'warn', 0, 1 or nan; got {zero_division!r}")


#: The similarity settings, each with the one IoU type that reads it.
SIMILARITY_SETTINGS = {"keypoint_sigmas": "keypoints", "dilation_ratio": "boundary"}


def check_similarity_settings(iou_type: str, **given: Any) -> None:
    """ValueError for a similarity setting given (not None) with an IoU type that does not
    read it: ``keypoint_sigmas`` (OKS, ``"keypoints"``) or ``dilation_ratio``
    (``"boundary"``) would be ignored, and the numbers returned as if applied.

    >>> check_similarity_settings("keypoints", keypoint_sigmas=(0.1,) * 17)
    >>> check_similarity_settings("bbox", keypoint_sigmas=None, dilation_ratio=None)
    >>> check_similarity_settings("bbox", dilation_ratio=0.05)
    Traceback (most recent call last):
    ...
    ValueError: dilation_ratio applies to iou_type='boundary' only; with iou_type='bbox' it \
would be ignored (leave it out, or pass iou_type='boundary')
    """
    for name, value in given.items():
        reader = SIMILARITY_SETTINGS[name]
        if value is not None and iou_type != reader:
            raise ValueError(f"{name} applies to iou_type={reader!r} only; with "
                             f"iou_type={iou_type!r} it would be ignored (leave it out, or "
                             f"pass iou_type={reader!r})")
