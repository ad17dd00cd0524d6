"""COCO ``segmentation`` values (polygons, uncompressed and compressed RLE) to compressed RLE
masks, as pycocotools converts them, with every value checked.

Polygons are rasterised by pycocotools' own routine (:mod:`deteval.masks.rasterise` checks
them first), uncompressed runs are compressed by it, and compressed strings are checked by
:mod:`deteval.masks.rle`; polygons with an odd number of coordinates (pycocotools drops the
last number) and sizes that differ from the image's are refused.

Examples
--------
>>> masks, areas = masks_from_segmentations([[[0, 0, 10, 0, 10, 10, 0, 10]],
...                                          {"size": [20, 20], "counts": [0, 5, 395]}],
...                                         heights=[20, 20], widths=[20, 20], with_area=True)
>>> areas.tolist(), masks[1]["size"]
([100, 5], [20, 20])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import FormatError
from ._api import mask_api
from .measures import mask_area
from .rasterise import (
    FlatPolygons,
    check_polygon_extent,
    polygon_arrays,
    polygon_parts_of,
    rasterise,
    rasterise_measured,
)
from .rle import _MAX_PIXELS, _record, _too_large, _too_many_for_bound, _totals_and_areas

__all__ = ["drawable_images", "masks_from_segmentations", "polygon_masks"]

_AREA_PIECE = 1020     # masks measured by one area() call (it takes 255 at a time)


def _size(value: Any, where: Callable[[], str], source: str | None) -> tuple[int, int]:
    if type(value) is list and len(value) == 2:
        h, w = value
        if type(h) is int and type(w) is int and 0 <= h < 65536 and 0 <= w < 65536:
            return h, w
    ok = (isinstance(value, (list, tuple)) and len(value) == 2
          and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
                  for v in value))
    if not ok:
        raise FormatError(f"RLE 'size' must be [height, width] as two integers >= 0; got "
                          f"{value!r}", source=source, record=where())
    h, w = int(value[0]), int(value[1])
    if h * w >= _MAX_PIXELS or max(h, w) >= _MAX_PIXELS:
        raise FormatError(_too_large(h, w), source=source, record=where())
    return h, w


def _plain_runs(counts: Sequence[Any]) -> np.ndarray | None:
    """Uncompressed RLE run lengths as int64, or None unless all are integers in [0, 2**32)."""
    if set(map(type, counts)) <= {int}:
        try:
            runs = np.asarray(counts, dtype=np.int64)
        except OverflowError:
            return None
    elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in counts):
        try:
            runs = np.asarray([int(v) for v in counts], dtype=np.int64)
        except OverflowError:
            return None
    else:
        return None
    if len(runs) and (runs.min() < 0 or runs.max() >= 2**32):
        return None
    return runs


def _check_polygon_image(height: float, width: float, where: Callable[[], str],
                         source: str | None) -> None:
    """Refuse to rasterise a polygon on an image of unknown, fractional, too large or empty
    size."""
    if not (math.isfinite(height) and math.isfinite(width)):
        raise FormatError("a polygon segmentation needs its image's 'height' and "
                          "'width', which the ground truth does not give",
                          source=source, record=where())
    if not (height >= 0 and width >= 0 and float(height).is_integer()
            and float(width).is_integer()):
        raise FormatError("a polygon segmentation is rasterised at its image's size, "
                          "which must be whole numbers of pixels >= 0; the image is "
                          f"{height:g}x{width:g} (h x w)", source=source, record=where())
    if height * width >= _MAX_PIXELS or max(height, width) >= _MAX_PIXELS:
        raise FormatError(_too_large(int(height), int(width)), source=source, record=where())
    if height == 0 or width == 0:
        # (pycocotools' rleFrPoly writes runs beyond such a mask, and rleMerge of two of
        # them never ends or corrupts the heap: there is no mask to give)
        raise FormatError("a polygon segmentation is rasterised at its image's size, and "
                          f"the image is {height:g}x{width:g} (h x w): it has no pixels; "
                          "give the image's real 'height' and 'width'", source=source,
                          record=where())


def _rle_counts(counts: Any, h: int, w: int, where: Callable[[], str],
                source: str | None) -> bytes | np.ndarray:
    """An RLE's ``counts``: a compressed string as bytes (checked later, all at once), or
    uncompressed runs as int64, checked to be integers >= 0 adding up to ``h * w``."""
    if type(counts) is str:
        # UTF-8 (a lone surrogate passes through): a non-ASCII character then fails the
        # alphabet check, which names the record.
        counts = counts.encode("utf-8", "surrogatepass")
    if type(counts) is bytes:
        return counts
    if not isinstance(counts, (list, tuple)):
        raise FormatError("RLE 'counts' must be a string (compressed) or a list of "
                          f"run lengths; got {type(counts).__name__}", source=source,
                          record=where())
    runs = _plain_runs(counts)
    if runs is None:
        raise FormatError("uncompressed RLE 'counts' must be integers >= 0",
                          source=source, record=where())
    if int(runs.sum()) != h * w:
        raise FormatError(f"RLE run lengths add up to {int(runs.sum())} pixels; "
                          f"a {h}x{w} mask needs {h * w}", source=source, record=where())
    return runs


def drawable_images(heights: Any, widths: Any) -> np.ndarray:
    """Whether a polygon may be rasterised on each image: its size finite, whole, ``>= 1``
    and small enough (bool, shape (n,)); :func:`masks_from_segmentations` words the error
    of one that is not.

    >>> drawable_images([10.0, np.nan, 10.5, 70000.0, 10.0],
    ...                 [20.0, 20.0, 20.0, 70000.0, 0.0]).tolist()
    [True, False, False, False, False]
    """
    heights = np.asarray(heights, dtype=np.float64)
    widths = np.asarray(widths, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return (np.isfinite(heights) & np.isfinite(widths) & (heights >= 1) & (widths >= 1)
                & (heights == np.round(heights)) & (widths == np.round(widths))
                & (heights * widths < _MAX_PIXELS) & (np.maximum(heights, widths) < _MAX_PIXELS))


def polygon_masks(polygons: FlatPolygons, sizes: np.ndarray, where: Callable[[int], str],
                  source: str | None = None, *, with_xywh: bool = False) -> tuple:
    """Masks of polygon objects, as ``frPyObjects`` + ``merge`` make them, and their pixel
    counts (and boxes).

    Through pycocotools' C routines by :mod:`ctypes` where they can be used (the GIL free
    while they run; :func:`~deteval.masks.rasterise.rasterise_measured`), else through its
    Cython wrappers (:func:`~deteval.masks.rasterise.rasterise`): the same bytes.

    Parameters
    ----------
    polygons : FlatPolygons
        The objects' parts, their structure and numbers checked (:func:`polygon_arrays`:
        every part at least 2 points, every coordinate finite).
    sizes : ndarray of int, shape (n, 2)
        ``[h, w]`` of each object's image (checked: :func:`drawable_images`).
    where : callable
        ``where(i)`` names object ``i``'s record, in errors.
    source : str, optional
        The file, in errors.
    with_xywh : bool
        Also return the masks' boxes.

    Returns
    -------
    masks : ndarray of object, shape (n,)
        ``{"size": [h, w], "counts": bytes}`` per object.
    areas : ndarray of int64, shape (n,)
        Pixel counts (pycocotools' ``area``).
    unbounded : ndarray of bool, shape (n,)
        Masks of more than 2**31 pixels, on which pycocotools' IoU routine may stop
        counting early (``with_unbounded`` of :func:`masks_from_segmentations`).
    xywh : ndarray of float64, shape (n, 4), or None
        With ``with_xywh``: each mask's box ``[x, y, w, h]`` (pycocotools' ``toBbox``),
        measured before the runs are freed; None where the Cython wrappers rasterised.

    Raises
    ------
    FormatError
        A coordinate far outside its image (:func:`check_polygon_extent`), naming the record.

    Examples
    --------
    >>> masks, areas, unbounded = polygon_masks(FlatPolygons.of([[[0, 0, 4, 0, 4, 4, 0, 4]]]),
    ...                                         np.array([[6, 5]]), str)
    >>> masks[0]["counts"], areas.tolist(), unbounded.tolist()
    (b'042000006', [16], [False])
    """
    check_polygon_extent(polygons, sizes, where, source)
    unbounded = _too_many_for_bound(sizes[:, 0], sizes[:, 1])
    measured = rasterise_measured(polygons, sizes)
    if measured is not None:
        out, areas, xywh = measured
        return (out, areas, unbounded, xywh) if with_xywh else (out, areas, unbounded)
    out = np.empty(len(sizes), dtype=object)
    rasterise(out, np.arange(len(sizes)), polygons, sizes, mask_api())
    areas = np.empty(len(sizes), dtype=np.int64)
    for at in range(0, len(sizes), _AREA_PIECE):    # (~1 ms a call: each holds the GIL)
        areas[at:at + _AREA_PIECE] = mask_area(out[at:at + _AREA_PIECE])
    return (out, areas, unbounded, None) if with_xywh else (out, areas, unbounded)


def masks_from_segmentations(segmentations: Sequence[Any], *, heights: Any, widths: Any,
                             source: str | None = None, records: Sequence[str] | None = None,
                             check_size: bool = True, with_area: bool = False,
                             with_unbounded: bool = False) -> Any:
    """Convert COCO ``segmentation`` values to compressed RLE masks, as pycocotools does.

    Parameters
    ----------
    segmentations : sequence
        One value per object: a polygon list ``[[x1, y1, x2, y2, ...], ...]`` (rasterised at
        the object's image size and merged), an uncompressed RLE ``{"size": [h, w],
        "counts": [runs]}`` or a compressed RLE ``{"size": [h, w], "counts": str | bytes}``.
        Never modified.
    heights, widths : array-like of float, shape (n,)
        Size of each object's image (NaN where unknown: polygons then cannot be rasterised).
    source, records : optional
        Named in errors: the file, and a label per object.
    check_size : bool
        Refuse an RLE whose size differs from its (known) image size. pycocotools would give
        such a mask an IoU of -1 with every same-image mask, so it could never match.
    with_area : bool
        Also return each mask's pixel count (pycocotools' ``area``), shape (n,), int64.
    with_unbounded : bool
        Also return, shape (n,), bool, whether pycocotools' IoU routine may stop counting
        early on each mask: its runs include an empty one after the first (never so for
        masks made from polygons), or it has more than 2**31 pixels. No bound applies to
        such masks (see :func:`mask_iou_bound`).

    Returns
    -------
    ndarray of object, shape (n,)
        ``{"size": [h, w], "counts": bytes}`` per object; then the areas with
        ``with_area``, then the flags with ``with_unbounded``.

    Raises
    ------
    FormatError
        A value of none of the three forms; a polygon with an odd number of coordinates,
        fewer than 2 points or a non-finite number; a polygon on an image of unknown size;
        an RLE whose size is not two integers, whose counts are malformed or do not add up
        to ``h * w``; an RLE whose size differs from its image's. Each names the record.

    Notes
    -----
    pycocotools takes a polygon list whose *first* polygon has 4 numbers for a list of
    boxes and fails; here every part is a polygon whatever its place, which gives the union
    pycocotools gives for the same parts in another order.
    """
    api = mask_api()
    n = len(segmentations)
    heights = np.asarray(heights, dtype=np.float64).reshape(-1)
    widths = np.asarray(widths, dtype=np.float64).reshape(-1)
    out = np.empty(n, dtype=object)
    polygon_rows: list[int] = []
    polygon_parts: list[Any] = []
    plain_rows: list[int] = []
    plain: list[dict] = []
    packed_rows: list[int] = []
    packed: list[bytes] = []
    sizes = np.zeros((n, 2), dtype=np.int64)
    unbounded = np.zeros(n, dtype=bool)

    def label(i: int) -> str:
        return _record(records, i)

    # Whether a polygon may be rasterised on each object's image, for all at once; the loop
    # calls the check (which words the error) only for an image that fails it, so errors
    # come in record order as before.
    drawable = drawable_images(heights, widths).tolist()
    for i, value in enumerate(segmentations):
        kind = type(value)
        if kind is list or kind is tuple:
            where = functools.partial(label, i)
            polygon_parts.append(polygon_parts_of(value, where, source))
            polygon_rows.append(i)
            if not drawable[i]:
                _check_polygon_image(heights[i], widths[i], where, source)
        elif kind is dict and "counts" in value and "size" in value:
            where = functools.partial(label, i)
            h, w = _size(value["size"], where, source)
            sizes[i, 0] = h
            sizes[i, 1] = w
            counts = _rle_counts(value["counts"], h, w, where, source)
            if type(counts) is bytes:
                packed_rows.append(i)
                packed.append(counts)
            else:
                plain_rows.append(i)
                plain.append({"size": [h, w], "counts": counts.tolist()})
                if len(counts) > 1 and not counts[1:].all():
                    unbounded[i] = True
        else:
            raise FormatError("'segmentation' must be a list of polygons or an RLE dict with "
                              f"'size' and 'counts'; got {type(value).__name__}",
                              source=source, record=label(i))

    areas = np.zeros(n, dtype=np.int64)
    if packed:
        rows = np.asarray(packed_rows)
        areas[rows], unbounded[rows] = _totals_and_areas(
            packed, sizes[rows, 0], sizes[rows, 1], source, lambda j: label(packed_rows[j]),
            unbounded=True)
        out[rows] = np.fromiter(({"size": size, "counts": string}
                                 for size, string in zip(sizes[rows].tolist(), packed)),
                                dtype=object, count=len(packed))
    if plain:
        for i, rle in zip(plain_rows, api.frUncompressedRLE(plain, 0, 0)):
            out[i] = rle
        areas[plain_rows] = mask_area(out[plain_rows])
    if polygon_rows:
        sizes[polygon_rows, 0] = heights[polygon_rows]
        sizes[polygon_rows, 1] = widths[polygon_rows]
        polygons = polygon_arrays(polygon_parts, lambda j: label(polygon_rows[j]), source)
        del polygon_parts
        out[polygon_rows], areas[polygon_rows], _ = polygon_masks(
            polygons, sizes[polygon_rows], lambda j: label(polygon_rows[j]), source)
    if check_size:
        known = np.isfinite(heights) & np.isfinite(widths)
        mismatch = np.flatnonzero(known & ((sizes[:, 0] != np.nan_to_num(heights))
                                           | (sizes[:, 1] != np.nan_to_num(widths))))
        if len(mismatch):
            i = int(mismatch[0])
            raise FormatError(f"mask size {sizes[i, 0]}x{sizes[i, 1]} (h x w) differs from its "
                              f"image's {heights[i]:g}x{widths[i]:g}; masks are compared pixel "
                              "by pixel, so they must have the image's size", source=source,
                              record=_record(records, i))
    unbounded |= _too_many_for_bound(sizes[:, 0], sizes[:, 1])
    result = (out,) + ((areas,) if with_area else ()) + ((unbounded,) if with_unbounded else ())
    return result if len(result) > 1 else out

