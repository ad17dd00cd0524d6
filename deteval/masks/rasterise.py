"""Polygon segmentations as pycocotools rasterises them: structure and number checks, the
bound on what a polygon may cost, and the rasterisation itself (used by
:mod:`deteval.masks.segmentations`).

pycocotools' ``rleFrPoly`` scales every coordinate by 5, casts it to a C ``int`` and walks
every edge point by point at that scale: an edge costs ``5 * max(|dx|, |dy|)`` points (16
bytes of memory each, and more for the later steps), wherever it lies, and points outside
the image are dropped only afterwards. A coordinate of 1e8 costs gigabytes; beyond
``2**31 / 5`` the cast overflows and the process crashes. So, before the C routine is
called, every coordinate must lie within the image widened by a margin
(:func:`check_polygon_extent`); the decision is documented in ``docs/input-acceptance.md``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._sorting import sorted_unique
from ..errors import FormatError

__all__ = ["COORDINATE_LIMIT", "MIN_MARGIN", "check_polygon_extent", "polygon_arrays",
           "polygon_parts_of", "rasterise"]

_NUMBER_TYPES = {int, float}

COORDINATE_LIMIT = 2e8
"""No polygon coordinate beyond +-2e8: scaled by 5 it stays far from the C ``int`` limit
2**31, and so do the differences of two of them, which pycocotools also takes in ``int``."""

MIN_MARGIN = 1024.0
"""The margin around an image within which polygon coordinates are accepted: the image's
larger side, and at least this many pixels (small test images)."""


def polygon_parts_of(value: list, where: Callable[[], str], source: str | None) -> list:
    """The parts of one polygon segmentation, their structure checked.

    Numbers are checked in bulk afterwards (:func:`polygon_arrays`); a part with a value
    that is not a number is refused there, naming the record.
    """
    if not value:
        raise FormatError("'segmentation' is an empty list: expected polygons [[x1, y1, x2, "
                          "y2, ...], ...] or an RLE", source=source, record=where())
    for j, part in enumerate(value):
        if not isinstance(part, (list, tuple)):
            raise FormatError(f"polygon {j} must be a list of numbers x1, y1, x2, y2, ...; got "
                              f"{type(part).__name__}", source=source, record=where())
        size = len(part)
        if size % 2:
            raise FormatError(f"polygon {j} has an odd number of coordinates ({size}); "
                              "expected x, y pairs", source=source, record=where())
        if size < 4:
            raise FormatError(f"polygon {j} has {size // 2} point(s); a polygon needs "
                              "at least 2 (3 for a non-empty area)", source=source,
                              record=where())
    return value


def _numbers_only(part: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
               for v in part)


def polygon_arrays(parts: list[list], where: Callable[[int], str],
                    source: str | None) -> list[list[np.ndarray]]:
    """Every polygon's parts as float64 arrays, converted and checked all at once.

    ``parts[i]`` are the parts of polygon object ``i``; ``where(i)`` names its record.
    """
    flat_parts = list(itertools.chain.from_iterable(parts))
    numbers = itertools.chain.from_iterable(flat_parts)
    if not set(map(type, numbers)) <= _NUMBER_TYPES:
        for i, value in enumerate(parts):
            for j, part in enumerate(value):
                if not set(map(type, part)) <= _NUMBER_TYPES and not _numbers_only(part):
                    raise FormatError(f"polygon {j} must hold numbers only", source=source,
                                      record=where(i))
    sizes = np.fromiter(map(len, flat_parts), np.int64, len(flat_parts))
    ends = np.cumsum(sizes)
    flat = np.fromiter(itertools.chain.from_iterable(flat_parts), np.float64,
                       int(ends[-1]) if len(ends) else 0)
    if not np.isfinite(flat).all():
        k = int(np.searchsorted(ends, np.flatnonzero(~np.isfinite(flat))[0], side="right"))
        per_object = np.cumsum([len(value) for value in parts])
        i = int(np.searchsorted(per_object, k, side="right"))
        j = k - (int(per_object[i - 1]) if i else 0)
        raise FormatError(f"polygon {j} holds a non-finite coordinate", source=source,
                          record=where(i))
    arrays = [flat[e - n:e] for e, n in zip(ends.tolist(), sizes.tolist())]
    out, at = [], 0
    for value in parts:
        out.append(arrays[at:at + len(value)])
        at += len(value)
    return out


def check_polygon_extent(parts: list[list[np.ndarray]], sizes: np.ndarray,
                         where: Callable[[int], str], source: str | None) -> None:
    """Refuse a polygon with a coordinate far outside its image, before it is rasterised.

    Every x must lie in ``[-m, w + m]`` and every y in ``[-m, h + m]``, where ``m`` is the
    image's larger side (at least :data:`MIN_MARGIN`), and every coordinate within
    +-:data:`COORDINATE_LIMIT`. Within these bounds an edge costs pycocotools at most
    ``5 * 3 * m`` points, so the work is bounded by the image and the number of vertices
    (the file's size); beyond them it is not.

    Clipping the polygon to the bounds instead would not give pycocotools' mask: its
    rasteriser rounds the points of each edge from the edge's scaled end points, so moving
    an end point moves pixels inside the image. Hence a refusal, naming the record.

    Parameters
    ----------
    parts : list of list of ndarray
        ``parts[i]``: the float64 coordinate arrays ``[x1, y1, x2, y2, ...]`` of object ``i``.
    sizes : ndarray of int, shape (n, 2)
        ``[h, w]`` of each object's image.
    where : callable
        ``where(i)`` names object ``i``'s record.
    source : str or None
        The file, for messages.
    """
    flat_parts = list(itertools.chain.from_iterable(parts))
    if not flat_parts:
        return
    per_object = np.fromiter((sum(map(len, value)) for value in parts), np.int64, len(parts))
    flat = np.concatenate(flat_parts)
    owner = np.repeat(np.arange(len(parts)), per_object)
    heights = sizes[:, 0].astype(np.float64)[owner]
    widths = sizes[:, 1].astype(np.float64)[owner]
    margin = np.maximum(np.maximum(heights, widths), MIN_MARGIN)
    is_y = (np.arange(len(flat)) & 1).astype(bool)   # every part has an even length
    side = np.where(is_y, heights, widths)
    bad = np.flatnonzero((flat < -margin) | (flat > side + margin)
                         | (np.abs(flat) > COORDINATE_LIMIT))
    if not len(bad):
        return
    k = int(bad[0])
    i = int(owner[k])
    part_ends = np.cumsum([len(p) for p in parts[i]])
    j = int(np.searchsorted(part_ends, k - (int(per_object[:i].sum())), side="right"))
    h, w, m = int(sizes[i, 0]), int(sizes[i, 1]), float(margin[k])
    axis, low, high = ("y", -m, h + m) if is_y[k] else ("x", -m, w + m)
    raise FormatError(
        f"polygon {j} has {axis} = {float(flat[k])!r}, far outside its {h}x{w} (h x w) image: "
        f"coordinates must lie within {low:g}..{high:g} (the image widened by {m:g} pixels) "
        "and within +-2e8. pycocotools rasterises a polygon by walking every edge at 5 "
        "points a pixel, inside the image or not, so a far-off point costs time and memory "
        "without bound (and beyond +-4.3e8 it crashes the process); clip the polygon to "
        "its image", source=source, record=where(i))


def rasterise(out: np.ndarray, rows: list[int], parts: list[list[np.ndarray]],
               sizes: np.ndarray, api: Any) -> None:
    """Rasterise polygon objects image size by image size, one C call per size."""
    rows_array = np.asarray(rows)
    keys = sizes[rows_array, 0] * (1 << 32) + sizes[rows_array, 1]
    for key in sorted_unique(keys):
        members = np.flatnonzero(keys == key)
        h, w = int(key >> 32), int(key & 0xFFFFFFFF)
        flat = [p for m in members for p in parts[m]]
        rles = api.frPoly(flat, h, w)
        at = 0
        for m in members:
            k = len(parts[m])
            out[rows[m]] = rles[at] if k == 1 else api.merge(rles[at:at + k], 0)
            at += k
