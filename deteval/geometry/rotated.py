"""Rotated boxes ``(cx, cy, w, h, angle)``: corners and polygons (conventions: the package)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import shapely

from ._common import (
    _ANGLE_UNITS,
    _CORNER_U,
    _CORNER_V,
    _MAX_COORDINATE,
    _QUARTER_COS,
    _QUARTER_SIN,
    _error,
    _labeller,
)

# --------------------------------------------------------------------------------------
# Rotated boxes


def _cos_sin(angles: np.ndarray, angle_unit: str) -> tuple[np.ndarray, np.ndarray]:
    """Cosine and sine of each angle, exact (0, +-1) at multiples of a quarter turn."""
    if angle_unit == "degrees":
        reduced = np.mod(angles, 360.0)
        quarters = np.round(reduced / 90.0)
        exact = reduced == quarters * 90.0
        radians = np.deg2rad(reduced)
    else:
        quarters = np.round(angles / (np.pi / 2))
        exact = angles == quarters * (np.pi / 2)
        radians = angles
    cos, sin = np.cos(radians), np.sin(radians)
    k = np.mod(quarters, 4).astype(np.int64)
    return np.where(exact, _QUARTER_COS[k], cos), np.where(exact, _QUARTER_SIN[k], sin)


def _as_rboxes(rboxes: Any, source: Any, records: Any) -> np.ndarray:
    raw = np.asarray(rboxes)
    if raw.size and raw.dtype.kind not in "iuf":
        raise TypeError(f"rboxes must hold numbers; got dtype {raw.dtype}")
    array = np.array(raw, dtype=np.float64, copy=True)
    if array.size == 0:
        array = array.reshape(0, 5)
    if array.ndim != 2 or array.shape[1] != 5:
        raise ValueError(f"rboxes must have shape (n, 5) for (cx, cy, w, h, angle); "
                         f"got {array.shape}")
    where = _labeller(len(array), source, records, "rbox")
    bad = np.flatnonzero(~np.isfinite(array).all(axis=1))
    if len(bad):
        i = int(bad[0])
        raise _error(f"rotated box must be 5 finite numbers (cx, cy, w, h, angle); got "
                     f"{array[i].tolist()}", where(i))
    bad = np.flatnonzero((array[:, 2] < 0) | (array[:, 3] < 0))
    if len(bad):
        i = int(bad[0])
        raise _error(f"rotated box must have w >= 0 and h >= 0; got w={array[i, 2]:g}, "
                     f"h={array[i, 3]:g}", where(i))
    bad = np.flatnonzero((np.abs(array[:, :4]) >= _MAX_COORDINATE).any(axis=1))
    if len(bad):
        i = int(bad[0])
        raise _error(f"rotated box {array[i].tolist()}: cx, cy, w and h must be below "
                     f"{_MAX_COORDINATE:g} in magnitude (areas would overflow)", where(i))
    return array


def rotated_box_corners(rboxes: Any, *, angle_unit: str = "degrees", source: Any = None,
                        records: Sequence[str] | None = None) -> np.ndarray:
    """The four corners of each rotated box.

    Parameters
    ----------
    rboxes : array_like, shape (n, 5)
        ``(cx, cy, w, h, angle)`` rows (see the module notes for the convention).
    angle_unit : {"degrees", "radians"}
    source : str or sequence of str, optional
        The file (or one per box) the boxes came from, for error messages.
    records : sequence of str, optional
        A label per box for error messages (default ``"rbox i"``).

    Returns
    -------
    numpy.ndarray, shape (n, 4, 2), float64
        Corners in the documented order (top-left, top-right, bottom-right, bottom-left at
        angle 0). Exact for angles that are multiples of 90 degrees.

    Raises
    ------
    FormatError
        A non-finite value, a negative width or height, or a corner of magnitude 1e150 or
        more (naming the box).

    Examples
    --------
    >>> rotated_box_corners([[10, 20, 4, 2, 0], [10, 20, 4, 2, 90]]).tolist()
    [[[8.0, 19.0], [12.0, 19.0], [12.0, 21.0], [8.0, 21.0]], \
[[9.0, 22.0], [9.0, 18.0], [11.0, 18.0], [11.0, 22.0]]]
    """
    if angle_unit not in _ANGLE_UNITS:
        raise ValueError(f"angle_unit must be 'degrees' or 'radians'; got {angle_unit!r}")
    boxes = _as_rboxes(rboxes, source, records)
    cos, sin = _cos_sin(boxes[:, 4], angle_unit)
    u = _CORNER_U * boxes[:, [2]]
    v = _CORNER_V * boxes[:, [3]]
    x = boxes[:, [0]] + (u * cos[:, None] + v * sin[:, None])
    y = boxes[:, [1]] + (v * cos[:, None] - u * sin[:, None])
    corners = np.stack([x, y], axis=-1)
    far = np.flatnonzero((np.abs(corners) >= _MAX_COORDINATE).any(axis=(1, 2)))
    if len(far):    # cx and w each below the limit can still put a corner beyond it
        i = int(far[0])
        raise _error(f"rotated box {boxes[i].tolist()} has a corner of magnitude "
                     f"{_MAX_COORDINATE:g} or more (areas would overflow)",
                     _labeller(len(boxes), source, records, "rbox")(i))
    return corners


def polygons_from_rboxes(rboxes: Any, *, angle_unit: str = "degrees", source: Any = None,
                         records: Sequence[str] | None = None) -> np.ndarray:
    """Shapely polygons of rotated boxes.

    Parameters
    ----------
    rboxes : array_like, shape (n, 5)
        ``(cx, cy, w, h, angle)`` rows.
    angle_unit : {"degrees", "radians"}
    source, records : optional
        For error messages, as in :func:`rotated_box_corners`.

    Returns
    -------
    numpy.ndarray of object, shape (n,)
        One 4-corner ``Polygon`` per box (corners as :func:`rotated_box_corners`). A box of
        zero width or height gives a degenerate polygon of zero area.

    Examples
    --------
    >>> from deteval.geometry import polygon_area, polygon_bounds
    >>> polys = polygons_from_rboxes([[0, 0, 2, 2, 45]])
    >>> polygon_area(polys).round(12).tolist(), polygon_bounds(polys).round(6).tolist()
    ([4.0], [[-1.414214, -1.414214, 1.414214, 1.414214]])
    """
    corners = rotated_box_corners(rboxes, angle_unit=angle_unit, source=source,
                                  records=records)
    out = np.empty(len(corners), dtype=object)
    if len(corners):
        out[:] = shapely.polygons(corners)
    return out
