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

Polygons are held as flat arrays (:class:`FlatPolygons`: every coordinate in one array) and
rasterised through pycocotools' C functions by :mod:`ctypes`, the GIL released while they
run, on :data:`RASTER_THREADS` threads (:func:`rasterise_measured`), or, where those cannot
be called, by its Cython wrappers in calls of bounded cost (:func:`rasterise`: each call
holds the GIL); the rules are in ``docs/mask-rasteriser.md``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any, NamedTuple

import numpy as np

from ..errors import FormatError

__all__ = ["COORDINATE_LIMIT", "MIN_MARGIN", "RASTER_THREADS", "FlatPolygons",
           "check_polygon_extent", "polygon_arrays", "polygon_parts_of", "rasterise",
           "rasterise_measured"]

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


#: Numbers converted from Python objects by one call (~1 ms; :meth:`FlatPolygons.of`): a
#: thread waiting for the GIL gets it between two calls.
PIECE = 16384


class FlatPolygons(NamedTuple):
    """Polygon objects as flat arrays: every coordinate in one array.

    ``coords``, float64 shape (m,): the parts' ``x1, y1, x2, y2, ...`` one after another;
    ``part_sizes``, int64 shape (p,): each part's number of coordinates (even); and
    ``object_parts``, int64 shape (n,): each object's number of parts (its parts follow one
    another in ``part_sizes``).

    >>> polygons = FlatPolygons.of([[[0, 0, 4, 0, 4, 4]], [[1, 1, 2, 1, 2, 2], [0, 0, 1, 0, 1, 1]]])
    >>> polygons.part_sizes.tolist(), polygons.object_parts.tolist(), len(polygons.coords)
    ([6, 6, 6], [1, 2], 18)
    """

    coords: np.ndarray
    part_sizes: np.ndarray
    object_parts: np.ndarray

    @classmethod
    def of(cls, objects: Sequence[Sequence[Sequence[float]]]) -> FlatPolygons:
        """The flat arrays of per-object lists of parts of numbers (already checked to be
        ints or floats: bools and other types are not refused here)."""
        flat_parts = list(itertools.chain.from_iterable(objects))
        sizes = np.fromiter(map(len, flat_parts), np.int64, len(flat_parts))
        ends = np.cumsum(sizes)
        total = int(ends[-1]) if len(ends) else 0
        coords = np.empty(total, dtype=np.float64)
        # In pieces of about PIECE numbers (whole parts): one C call holds the GIL each.
        cuts = [0, *np.searchsorted(ends, np.arange(PIECE, total, PIECE)).tolist(),
                len(flat_parts)]
        ends_list = [0, *ends.tolist()]
        for a, b in zip(cuts[:-1], cuts[1:]):
            if b > a:
                coords[ends_list[a]:ends_list[b]] = np.fromiter(
                    itertools.chain.from_iterable(flat_parts[a:b]), np.float64,
                    ends_list[b] - ends_list[a])
        return cls(coords, sizes, np.fromiter(map(len, objects), np.int64, len(objects)))

    def locate(self, k: int) -> tuple[int, int]:
        """``(object, part within it)`` of coordinate ``k``."""
        part = int(np.searchsorted(np.cumsum(self.part_sizes), k, side="right"))
        object_ends = np.cumsum(self.object_parts)
        i = int(np.searchsorted(object_ends, part, side="right"))
        return i, part - (int(object_ends[i - 1]) if i else 0)

def _numbers_only(part: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
               for v in part)


def polygon_arrays(parts: list[list], where: Callable[[int], str],
                   source: str | None) -> FlatPolygons:
    """Every polygon's parts as one flat float64 array, converted and checked all at once.

    ``parts[i]`` are the parts of polygon object ``i`` (structure checked by
    :func:`polygon_parts_of`); ``where(i)`` names its record. A value that is not a number
    (bools included) or a non-finite coordinate is refused, naming the record.
    """
    numbers = itertools.chain.from_iterable(itertools.chain.from_iterable(parts))
    if not set(map(type, numbers)) <= _NUMBER_TYPES:
        for i, value in enumerate(parts):
            for j, part in enumerate(value):
                if not set(map(type, part)) <= _NUMBER_TYPES and not _numbers_only(part):
                    raise FormatError(f"polygon {j} must hold numbers only", source=source,
                                      record=where(i))
    polygons = FlatPolygons.of(parts)
    finite = np.isfinite(polygons.coords)
    if not finite.all():
        i, j = polygons.locate(int(np.argmin(finite)))
        raise FormatError(f"polygon {j} holds a non-finite coordinate", source=source,
                          record=where(i))
    return polygons


def _part_starts(polygons: FlatPolygons) -> tuple[np.ndarray, np.ndarray]:
    """Offsets of each part's first point in the points ``coords.reshape(-1, 2)``, and its
    number of points."""
    points = polygons.part_sizes >> 1
    return np.cumsum(points) - points, points


def check_polygon_extent(polygons: FlatPolygons, sizes: np.ndarray,
                         where: Callable[[int], str], source: str | None) -> None:
    """Refuse a polygon with a coordinate far outside its image, before it is rasterised.

    Every x must lie in ``[-m, w + m]`` and every y in ``[-m, h + m]``, where ``m`` is the
    image's larger side (at least :data:`MIN_MARGIN`), and every coordinate within
    +-:data:`COORDINATE_LIMIT`. Within these bounds an edge costs pycocotools at most
    ``5 * 3 * m`` points, so the work is bounded by the image and the number of vertices
    (the file's size); beyond them it is not.

    Clipping the polygon to the bounds instead would not give pycocotools' mask: its
    rasteriser rounds the points of each edge from the edge's scaled end points, so moving
    an end point moves pixels inside the image. Hence a refusal, naming the record (and
    the first coordinate outside, in record order).

    Parameters
    ----------
    polygons : FlatPolygons
        The objects' parts (every part at least 2 points, finite: :func:`polygon_arrays`).
    sizes : ndarray of int, shape (n, 2)
        ``[h, w]`` of each object's image.
    where : callable
        ``where(i)`` names object ``i``'s record.
    source : str or None
        The file, for messages.
    """
    if not len(polygons.part_sizes):
        return
    starts, points = _part_starts(polygons)
    xy = polygons.coords.reshape(-1, 2)
    # Each part's extent (reduceat: one pass, no per-coordinate temporaries), checked
    # against its object's bounds; the first coordinate outside is looked for only in the
    # first part with one.
    low = np.minimum.reduceat(xy, starts, axis=0)
    high = np.maximum.reduceat(xy, starts, axis=0)
    part_owner = np.repeat(np.arange(len(polygons.object_parts)), polygons.object_parts)
    hw = sizes[part_owner].astype(np.float64)
    side = hw[:, ::-1]                                      # [w, h]: x then y
    margin = np.maximum(hw.max(axis=1), MIN_MARGIN)[:, None]
    bad = ((low < -margin) | (high > side + margin) | (np.abs(low) > COORDINATE_LIMIT)
           | (np.abs(high) > COORDINATE_LIMIT)).any(axis=1)
    if not bad.any():
        return
    part = int(np.argmax(bad))
    first = int(starts[part])
    values = xy[first:first + int(points[part])].ravel()
    edge = np.tile(side[part], int(points[part]))
    m = float(margin[part, 0])
    outside = (values < -m) | (values > edge + m) | (np.abs(values) > COORDINATE_LIMIT)
    k = 2 * first + int(np.argmax(outside))
    i, j = polygons.locate(k)
    h, w = int(sizes[i, 0]), int(sizes[i, 1])
    axis, low_end, high_end = ("y", -m, h + m) if k & 1 else ("x", -m, w + m)
    raise FormatError(
        f"polygon {j} has {axis} = {float(polygons.coords[k])!r}, far outside its {h}x{w} "
        f"(h x w) image: coordinates must lie within {low_end:g}..{high_end:g} (the image "
        f"widened by {m:g} pixels) and within +-2e8. pycocotools rasterises a polygon by "
        "walking every edge at 5 points a pixel, inside the image or not, so a far-off point "
        "costs time and memory without bound (and beyond +-4.3e8 it crashes the process); "
        "clip the polygon to its image", source=source, record=where(i))


#: The cost, in pixels of edge walked, of a call to pycocotools' ``frPoly`` beyond which a
#: size group's polygons are split into several calls: each call holds the GIL throughout.
#: ~0.04 us a pixel of edge (the longer of |dx|, |dy|: the walk at 5 points a pixel) and
#: ~3 us a polygon (70 pixels' worth) on the bench's polygons, so ~1 ms a call.
CALL_COST = 25_000
_POLYGON_COST = 70


def _walks(polygons: FlatPolygons, starts: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Each part's edge length as pycocotools walks it: the sum over its edges (the closing
    one too) of ``max(|dx|, |dy|)``, in pixels, shape (p,) (an estimate of its cost)."""
    x, y = polygons.coords[0::2], polygons.coords[1::2]
    dx, dy = np.empty_like(x), np.empty_like(y)
    np.subtract(x[1:], x[:-1], out=dx[:-1])
    np.subtract(y[1:], y[:-1], out=dy[:-1])
    last = starts + points - 1          # each part's closing edge, back to its first point
    dx[last] = x[starts] - x[last]
    dy[last] = y[starts] - y[last]
    steps = np.maximum(np.abs(dx, out=dx), np.abs(dy, out=dy), out=dx)
    return np.add.reduceat(steps, starts) if len(starts) else steps[:0]


def rasterise(out: np.ndarray, rows: Sequence[int], polygons: FlatPolygons,
              sizes: np.ndarray, api: Any) -> None:
    """Rasterise polygon objects with pycocotools' ``frPoly`` and merge each object's parts
    (``merge``), as ``frPyObjects`` + ``merge`` do: ``out[rows[i]]`` becomes object ``i``'s
    ``{"size": [h, w], "counts": bytes}``.

    Parts are rasterised image size by image size (``sizes[rows[i]]``, ``[h, w]``), in
    calls of about :data:`CALL_COST` each (a call holds the GIL throughout: a thread that
    asks for it at the switch interval gets it within one call); the masks do not depend
    on the grouping.
    """
    n = len(polygons.object_parts)
    if not n:
        return
    rows_array = np.asarray(rows, dtype=np.intp)
    object_keys = sizes[rows_array, 0] * (1 << 32) + sizes[rows_array, 1]
    part_owner = np.repeat(np.arange(n), polygons.object_parts)
    part_keys = object_keys[part_owner]
    starts, points = _part_starts(polygons)
    cost = _walks(polygons, starts, points) + _POLYGON_COST
    # Parts ordered by image size (stable: an object's parts stay together, in order); a
    # new call starts where the size changes and where the cost of the size's parts
    # before a part passes a multiple of CALL_COST (a call costs at most CALL_COST and one
    # part more).
    order = np.argsort(part_keys, kind="stable")
    keys = part_keys[order]
    before = np.cumsum(cost[order]) - cost[order]   # the cost of the parts before each
    new_size = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    group_start = np.zeros(len(order), dtype=np.intp)
    group_start[new_size] = new_size
    np.maximum.accumulate(group_start, out=group_start)
    chunk = ((before - before[group_start]) // CALL_COST).astype(np.int64)
    cuts = np.flatnonzero((keys[1:] != keys[:-1]) | (chunk[1:] != chunk[:-1])) + 1
    bounds = [0, *cuts.tolist(), len(order)]
    first = 2 * starts[order]
    arrays = [polygons.coords[a:b] for a, b in
              zip(first.tolist(), (first + 2 * points[order]).tolist())]
    key_list = keys.tolist()
    rles: list = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        rles.extend(api.frPoly(arrays[a:b], key_list[a] >> 32, key_list[a] & 0xFFFFFFFF))
    object_order = np.argsort(object_keys, kind="stable")
    masks, at = [], 0
    for k in polygons.object_parts[object_order].tolist():
        masks.append(rles[at] if k == 1 else api.merge(rles[at:at + k], 0))
        at += k
    out[rows_array[object_order]] = np.fromiter(masks, dtype=object, count=n)


#: The threads :func:`rasterise_measured` rasterises on (None: ``resolve_threads(None)``,
#: every core within an evaluation's ``threads=``). :func:`deteval._inputs.load_pair` sets 1
#: while the results file is read on a thread of its own: two busy threads on two cores.
RASTER_THREADS: ContextVar[int | None] = ContextVar("deteval_raster_threads", default=None)


def rasterise_measured(polygons: FlatPolygons, sizes: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Polygon objects' masks, pixel counts and boxes through pycocotools' C routines by
    :mod:`ctypes` (the GIL released while they run), or None where those cannot be used
    (:func:`~deteval.masks._capi.c_routines`): then :func:`rasterise`.

    The masks are the bytes :func:`rasterise` gives (``frPyObjects`` + ``merge``); the
    pixel counts and boxes those of pycocotools' ``area`` and ``toBbox`` on them. The
    objects are rasterised on :data:`RASTER_THREADS` threads (the same bytes for any).

    Parameters
    ----------
    polygons : FlatPolygons
        Every object at least one part, every part at least 2 points, every coordinate
        finite and within the bounds of :func:`check_polygon_extent`.
    sizes : ndarray of int, shape (n, 2)
        ``[h, w]`` of each object's image.

    Returns
    -------
    masks : ndarray of object, shape (n,)
        ``{"size": [h, w], "counts": bytes}`` per object.
    areas : ndarray of int64, shape (n,)
    xywh : ndarray of float64, shape (n, 4)
    """
    from ._capi import c_routines, held_routines

    c, held = c_routines(), held_routines()
    if c is None or held is None:
        return None
    from .._threads import resolve_threads
    from ._rasterise_c import rasterise_c

    starts, points = _part_starts(polygons)
    coords = np.ascontiguousarray(polygons.coords, dtype=np.float64)
    counts, areas, xywh = rasterise_c(coords, starts, points, polygons.object_parts, sizes,
                                      c, held, resolve_threads(RASTER_THREADS.get()))
    masks = np.fromiter(({"size": size, "counts": string}
                         for size, string in zip(sizes.tolist(), counts)),
                        dtype=object, count=len(counts))
    return masks, areas, xywh
