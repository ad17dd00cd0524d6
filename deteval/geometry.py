"""Exact polygon and rotated-box geometry: construction, area, bounds and IoU (shapely 2).

Every function works on whole arrays of shapely geometries with shapely's vectorised
functions; there is no Python loop per pair.

Rotated boxes
-------------
A rotated box is ``(cx, cy, w, h, angle)``: its centre, its width (the extent along its own
``u`` axis), its height (along ``v``) and its angle, in degrees by default
(``angle_unit="radians"`` for radians). Image coordinates have ``x`` to the right and ``y``
**down**, and a positive angle turns the box **counter-clockwise as seen on the image**. A
point ``(u, v)`` of the box's own frame (origin at the centre) is at::

    x = cx + u * cos(a) + v * sin(a)
    y = cy - u * sin(a) + v * cos(a)

so at angle 0 the box is the axis-aligned ``[cx - w/2, cx + w/2] x [cy - h/2, cy + h/2]``,
at 90 degrees its width runs up the image (along ``-y``), and ``(cx, cy, w, h, 90)`` covers
the same region as ``(cx, cy, h, w, 0)``. Angles that are multiples of 90 degrees (or of
``pi / 2`` exactly, in radians) use exact cosines and sines (0, 1 or -1), so such boxes have
exactly the corners of the equivalent axis-aligned box; degree angles are reduced modulo
360 first, so 30 and 390 give the same corners.

Corners come in the order ``(u, v) = (-w/2, -h/2), (+w/2, -h/2), (+w/2, +h/2),
(-w/2, +h/2)``: at angle 0 top-left, top-right, bottom-right, bottom-left, i.e. clockwise
as seen on the image.

Polygons
--------
Polygons are shapely ``Polygon`` (or ``MultiPolygon``) objects in object arrays, built from
flat coordinate lists ``[x1, y1, x2, y2, ...]`` by :func:`polygons_from_coords` (a DOTA
quadrilateral is the 4-point case) or from rotated boxes by :func:`polygons_from_rboxes`.
A polygon whose points all lie on one line is *degenerate*: it is kept, has zero area, and
its IoU with anything is 0 (like a zero-width box). Any other invalid polygon (a
self-intersecting "bow-tie") is refused, or repaired on request; it is never silently given
a wrong area.

IoU
---
:func:`pair_iou` (aligned pairs) and :func:`iou_matrix` (all pairs) give intersection over
union, or, for a crowd ground truth, intersection over the detection's area as COCO does for
crowd boxes. Pairs whose bounding boxes do not overlap are 0 without computing an
intersection; a zero-area union gives 0. When both polygons of a pair are axis-aligned
rectangles (four corners, horizontal and vertical edges) the IoU is computed with the COCO box
formula, with the same floating-point operations as :func:`deteval.iou.coco_pair_iou`, so
rotated boxes at angle 0 give bit-for-bit the IoU of the bbox protocol. When both are strictly
convex quadrilaterals (rotated boxes, DOTA quads), the area of their intersection is found in
numpy, all pairs at once, by clipping one against the four edges of the other
(Sutherland-Hodgman) and the shoelace formula: it agrees with shapely's to about 1e-12
relative (1e-9 or better, and closer to the exact area than GEOS's far from the origin) at a
tenth of the cost. Other pairs get the area of their intersection from shapely (GEOS). Either
way, a polygon covered by the other (shapely's exact predicate) counts with its own area, so
identical polygons give exactly 1.

Examples
--------
>>> polys = polygons_from_rboxes([[5, 5, 10, 10, 0], [5, 5, 10, 10, 45]])
>>> polygon_area(polys).round(9).tolist()
[100.0, 100.0]
>>> round(float(pair_iou(polys[:1], polys[1:])[0]), 6)
0.707107
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np
import shapely

from .errors import FormatError
from .iou import coco_iou

__all__ = [
    "PairIoU",
    "iou_matrix",
    "pair_iou",
    "polygon_area",
    "polygon_bounds",
    "polygons_from_coords",
    "polygons_from_rboxes",
    "rotated_box_corners",
]

_POLYGON, _MULTIPOLYGON = 3, 6  # shapely type ids
_ANGLE_UNITS = ("degrees", "radians")
_INVALID = ("raise", "repair")
# Coordinates (and rotated-box sizes) are refused from this magnitude on: products of two
# of them, as areas take, must stay finite in float64 (whose largest value is ~1.8e308).
_MAX_COORDINATE = 1e150
# Unit offsets of the four corners in the box frame, in the documented order.
_CORNER_U = np.array([-0.5, 0.5, 0.5, -0.5])
_CORNER_V = np.array([-0.5, -0.5, 0.5, 0.5])
_QUARTER_COS = np.array([1.0, 0.0, -1.0, 0.0])
_QUARTER_SIN = np.array([0.0, 1.0, 0.0, -1.0])


# --------------------------------------------------------------------------------------
# Where errors point


def _labeller(n: int, source: Any, records: Any, default: str):
    """A function ``i -> (source, record)`` for the messages about object ``i``."""
    if records is not None:
        records = [str(r) for r in records]
        if len(records) != n:
            raise ValueError(f"records must have one label per object ({n}); "
                             f"got {len(records)}")
    if source is not None and not isinstance(source, str):
        source = [None if s is None else str(s) for s in source]
        if len(source) != n:
            raise ValueError(f"source must be one str or one per object ({n}); "
                             f"got {len(source)}")

    def where(i: int) -> tuple[str | None, str]:
        src = source if source is None or isinstance(source, str) else source[i]
        return src, (records[i] if records is not None else f"{default} {i}")

    return where


def _error(message: str, location: tuple[str | None, str]) -> FormatError:
    return FormatError(message, source=location[0], record=location[1])


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


# --------------------------------------------------------------------------------------
# Polygons from coordinates


def _flat_part(part: Any, location, what: str) -> np.ndarray:
    if isinstance(part, (str, bytes)):
        raise _error(f"{what} must be a list of numbers [x1, y1, x2, y2, ...]; got a string",
                     location)
    try:
        raw = np.asarray(part)
    except (TypeError, ValueError):
        raise _error(f"{what} must be a flat list of numbers [x1, y1, x2, y2, ...]",
                     location) from None
    if raw.ndim != 1 or (raw.size and raw.dtype.kind not in "iuf"):
        shown = repr(part) if len(repr(part)) <= 60 else repr(part)[:57] + "..."
        raise _error(f"{what} must be a flat list of numbers [x1, y1, x2, y2, ...]; got "
                     f"{shown}", location)
    return raw.astype(np.float64)


def _is_multi(obj: Any) -> bool:
    """Whether an object is a sequence of parts (rather than one flat coordinate list)."""
    if isinstance(obj, np.ndarray):
        return obj.ndim == 2 or (obj.dtype == object and obj.size > 0
                                 and not np.isscalar(obj.flat[0]))
    if isinstance(obj, (str, bytes)) or not isinstance(obj, Sequence) or not obj:
        return False
    first = obj[0]
    return isinstance(first, (Sequence, np.ndarray)) and not isinstance(first, (str, bytes))


def _check_part(flat: np.ndarray, location, what: str) -> None:
    count = len(flat)
    if count % 2:
        raise _error(f"{what} must have an even number of coordinates (x, y pairs); got "
                     f"{count}", location)
    if not np.isfinite(flat).all():
        bad = int(np.flatnonzero(~np.isfinite(flat))[0])
        raise _error(f"{what} coordinates must be finite; coordinate {bad} is {float(flat[bad])!r}",
                     location)
    if (np.abs(flat) >= _MAX_COORDINATE).any():
        bad = int(np.flatnonzero(np.abs(flat) >= _MAX_COORDINATE)[0])
        raise _error(f"{what} coordinate {bad} is {float(flat[bad])!r}: coordinates must be "
                     f"below {_MAX_COORDINATE:g} in magnitude (areas would overflow)", location)
    points = count // 2
    closed = points > 1 and flat[0] == flat[-2] and flat[1] == flat[-1]
    if points - closed < 3:
        raise _error(f"{what} must have at least 3 points; got {points - closed}", location)


def _quad_corners(polys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of single-ring 4-corner polygons and their corners, shape (k, 4, 2)."""
    with np.errstate(invalid="ignore"):
        rows = np.flatnonzero((shapely.get_type_id(polys) == _POLYGON)
                              & (shapely.get_num_coordinates(polys) == 5)
                              & (shapely.get_num_interior_rings(polys) == 0))
    # Without interior rings a polygon's coordinates are its exterior ring's.
    corners = shapely.get_coordinates(polys[rows]).reshape(-1, 5, 2)[:, :4]
    return rows, corners


def _strictly_convex(corners: np.ndarray) -> np.ndarray:
    """Quadrilaterals that turn the same way, clearly, at every corner: simple and valid."""
    edges = np.roll(corners, -1, axis=1) - corners
    nxt = np.roll(edges, -1, axis=1)
    cross = edges[..., 0] * nxt[..., 1] - edges[..., 1] * nxt[..., 0]
    scale = (edges**2).sum(-1) + (nxt**2).sum(-1)
    clear = np.abs(cross) > 1e-9 * scale  # rounding cannot flip such a sign
    return clear.all(axis=1) & ((cross > 0).all(axis=1) | (cross < 0).all(axis=1))


def _validity(polys: np.ndarray, quads: tuple[np.ndarray, np.ndarray] | None = None,
              convex: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(valid, degenerate)`` flags: valid polygons, and finite ones of zero extent in some
    direction (all points on one line), which shapely calls invalid. ``quads`` is
    :func:`_quad_corners` of ``polys`` and ``convex`` :func:`_strictly_convex` of its corners,
    when already known."""
    valid = np.zeros(len(polys), dtype=bool)
    rows, corners = _quad_corners(polys) if quads is None else quads
    if len(rows):
        valid[rows[_strictly_convex(corners) if convex is None else convex]] = True
    rest = np.flatnonzero(~valid)
    if len(rest):
        valid[rest] = shapely.is_valid(polys[rest])
    degenerate = np.zeros(len(polys), dtype=bool)
    bad = np.flatnonzero(~valid)
    if len(bad):
        coords, index = shapely.get_coordinates(polys[bad], return_index=True)
        finite = np.ones(len(bad), dtype=bool)
        finite[index[~np.isfinite(coords).all(axis=1)]] = False
        with np.errstate(invalid="ignore"):
            flat = shapely.area(shapely.convex_hull(polys[bad])) == 0
        degenerate[bad] = finite & flat & (shapely.get_type_id(polys[bad]) == _POLYGON)
    return valid, degenerate


def _polygonal_part(geoms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Polygons inside each geometry (collections and multi-geometries opened), with the
    row of the geometry each came from."""
    parts, index = geoms, np.arange(len(geoms))
    for _ in range(8):  # collections nest only a few levels deep
        types = shapely.get_type_id(parts)
        if not np.isin(types, (_MULTIPOLYGON, 7)).any():
            break
        parts, sub = shapely.get_parts(parts, return_index=True)
        index = index[sub]
    keep = (shapely.get_type_id(parts) == _POLYGON) & ~shapely.is_empty(parts)
    return parts[keep], index[keep]


def _combine(components: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """One geometry per object from its polygon components: the polygon itself when there
    is one, else their union (a MultiPolygon when the parts are apart)."""
    out = np.empty(n, dtype=object)
    counts = np.bincount(owner, minlength=n)
    single = counts[owner] == 1
    out[owner[single]] = components[single]
    multi = np.flatnonzero(counts > 1)
    if len(multi):
        chosen = np.isin(owner, multi)
        merged = np.asarray(shapely.multipolygons(
            components[chosen], indices=np.searchsorted(multi, owner[chosen])), dtype=object)
        out[multi] = merged
        overlapping = multi[~shapely.is_valid(merged)]
        for i in overlapping.tolist():  # parts that overlap or share an edge: a union
            out[i] = shapely.union_all(components[owner == i])
    return out


def polygons_from_coords(coords: Any, *, invalid: str = "raise", source: Any = None,
                         records: Sequence[str] | None = None) -> np.ndarray:
    """Shapely polygons from flat coordinate lists, validated.

    Parameters
    ----------
    coords : sequence
        One entry per object: a flat sequence ``[x1, y1, x2, y2, ...]`` of at least 3 points,
        or a sequence of such sequences for an object in several parts (as COCO's
        ``segmentation`` lists). A 2-D array ``(n, 2k)`` is ``n`` single-part polygons; a DOTA
        quadrilateral is the 8-number case. A closing point equal to the first is allowed.
    invalid : {"raise", "repair"}
        What to do with a polygon that is not valid (an outline that crosses itself, like a
        bow-tie): ``"raise"`` a :class:`~deteval.errors.FormatError` saying why, or
        ``"repair"`` it with ``shapely.make_valid`` and keep only the polygonal part of the
        result (the lines and points that a repair can leave are dropped; a bow-tie becomes
        its two triangles).
    source : str or sequence of str, optional
        The file the coordinates came from (or one per object), for error messages.
    records : sequence of str, optional
        A label per object for error messages (for example ``"line 12"``); default
        ``"object i"``.

    Returns
    -------
    numpy.ndarray of object, shape (n,)
        A ``Polygon`` per object, or a ``MultiPolygon`` for objects whose parts (or repaired
        pieces) lie apart. The parts of a multi-part object are combined by union, as COCO
        rasterises them; overlapping parts are allowed. An object whose points all lie on
        one line is kept as a degenerate polygon of zero area (in a multi-part object such
        parts are dropped when another part has an area).

    Raises
    ------
    FormatError
        Naming the object (``source``, ``records[i]``): coordinates that are not numbers, an
        odd number of coordinates, fewer than 3 points, a non-finite value, an invalid
        polygon under ``invalid="raise"``, or one whose repair leaves no area.

    Examples
    --------
    >>> polys = polygons_from_coords([[0, 0, 4, 0, 4, 2, 0, 2], [[0, 0, 1, 0, 0, 1]]])
    >>> polygon_area(polys).tolist()
    [8.0, 0.5]
    >>> bowtie = [[0, 0, 2, 2, 2, 0, 0, 2]]
    >>> polygons_from_coords(bowtie, records=["line 3"])
    Traceback (most recent call last):
    ...
    deteval.errors.FormatError: line 3: polygon is not valid (Self-intersection[1 1]); \
pass invalid='repair' to repair it with shapely.make_valid
    >>> polygon_area(polygons_from_coords(bowtie, invalid="repair")).tolist()
    [2.0]
    """
    if invalid not in _INVALID:
        raise ValueError(f"invalid must be 'raise' or 'repair'; got {invalid!r}")
    if isinstance(coords, (str, bytes)) or not hasattr(coords, "__len__"):
        raise TypeError(f"coords must be a sequence with one coordinate list per object; got "
                        f"{type(coords).__name__}")
    n = len(coords)
    where = _labeller(n, source, records, "object")
    values, counts, owner, part_no, multi = _parse_coords(coords, n, where)
    if not len(counts):
        return np.empty(0, dtype=object)
    xy = values.reshape(-1, 2)
    rings = shapely.linearrings(xy, indices=np.repeat(np.arange(len(counts)), counts // 2))
    parts = np.asarray(shapely.polygons(rings), dtype=object)
    valid, degenerate = _validity(parts)
    bad = np.flatnonzero(~valid & ~degenerate)

    def label(k: int) -> str:
        return _part_name(multi, owner, part_no, k)

    if len(bad) and invalid == "raise":
        k = int(bad[0])
        reason = shapely.is_valid_reason(parts[k])
        raise _error(f"{label(k)} is not valid ({reason}); pass invalid='repair' to repair it "
                     "with shapely.make_valid", where(int(owner[k])))
    components, comp_owner = parts[valid], owner[valid]
    if len(bad):
        fixed, fixed_row = _polygonal_part(np.asarray(shapely.make_valid(parts[bad]),
                                                      dtype=object))
        empty = np.setdiff1d(np.arange(len(bad)), fixed_row)
        if len(empty):
            k = int(bad[empty[0]])
            reason = shapely.is_valid_reason(parts[k])
            raise _error(f"{label(k)} is not valid ({reason}) and has no area once repaired "
                         "(its outline encloses nothing)", where(int(owner[k])))
        components = np.concatenate([components, fixed])
        comp_owner = np.concatenate([comp_owner, owner[bad][fixed_row]])
    # An object with no part of positive area keeps its first degenerate part.
    has_area = np.zeros(n, dtype=bool)
    has_area[comp_owner] = True
    flat_rows = np.flatnonzero(degenerate)
    first_flat = flat_rows[np.unique(owner[flat_rows], return_index=True)[1]]
    first_flat = first_flat[~has_area[owner[first_flat]]]
    components = np.concatenate([components, parts[first_flat]])
    comp_owner = np.concatenate([comp_owner, owner[first_flat]])
    order = np.argsort(comp_owner, kind="stable")
    return _combine(components[order], comp_owner[order], n)


def _parse_coords(coords: Any, n: int, where):
    """All coordinates of all parts as one float array, checked, with each part's number of
    coordinates, object and part number, and which objects have several parts.

    Vectorised over the parts; a part is looked at alone only to word an error.
    """
    raw = coords if isinstance(coords, np.ndarray) else None
    if raw is None and n:
        try:
            raw = np.asarray(coords)
        except (TypeError, ValueError):  # ragged: the general path below
            raw = None
    if raw is not None and raw.dtype.kind in "iuf" and raw.ndim == 2:  # n single parts
        k = raw.shape[1]
        parts: Any = raw  # rows, looked at only to word an error
        values = raw.astype(np.float64).reshape(-1)
        counts = np.full(n, k, dtype=np.int64)
        owner = np.arange(n, dtype=np.int64)
        part_no = np.zeros(n, dtype=np.int64)
        multi = np.zeros(n, dtype=bool)
    else:
        parts, owner_list, part_list = [], [], []
        multi = np.zeros(n, dtype=bool)
        for i in range(n):
            obj = coords[i]
            if _is_multi(obj):
                multi[i] = True
                if len(obj) == 0:
                    raise _error("polygon has no parts", where(i))
                parts.extend(obj)
                owner_list.extend([i] * len(obj))
                part_list.extend(range(len(obj)))
            else:
                parts.append(obj)
                owner_list.append(i)
                part_list.append(0)
        owner = np.array(owner_list, dtype=np.int64)
        part_no = np.array(part_list, dtype=np.int64)
        values = counts = None
        try:
            counts = np.array([len(p) for p in parts], dtype=np.int64)
            flat = np.array(list(chain.from_iterable(parts)))
            if flat.ndim == 1 and (flat.dtype.kind in "iuf" or not flat.size):
                values = flat.astype(np.float64)
        except (TypeError, ValueError):
            pass
        if values is None:
            for k, part in enumerate(parts):  # find the culprit to name it
                _flat_part(part, where(int(owner[k])), _part_name(multi, owner, part_no, k))
            raise AssertionError("unreachable: a part failed to parse")  # pragma: no cover
    if not len(counts):
        return values, counts, owner, part_no, multi
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    odd = counts % 2 == 1
    finite = np.isfinite(values)
    part_of = np.repeat(np.arange(len(counts)), counts)
    nonfinite = np.zeros(len(counts), dtype=bool)
    with np.errstate(invalid="ignore"):
        nonfinite[part_of[~(finite & (np.abs(values) < _MAX_COORDINATE))]] = True
    points = counts // 2
    closed = np.zeros(len(counts), dtype=bool)
    pairs = (points > 1) & ~odd
    first, last = starts[pairs], starts[pairs] + counts[pairs] - 2
    closed[pairs] = (values[first] == values[last]) & (values[first + 1] == values[last + 1])
    few = points - closed < 3
    bad = np.flatnonzero(odd | nonfinite | few)
    if len(bad):
        k = int(bad[0])
        name = _part_name(multi, owner, part_no, k)
        _check_part(_flat_part(parts[k], where(int(owner[k])), name), where(int(owner[k])),
                    name)
        raise AssertionError("unreachable: a part failed its checks")  # pragma: no cover
    return values, counts, owner, part_no, multi


def _part_name(multi: np.ndarray, owner: np.ndarray, part_no: np.ndarray, k: int) -> str:
    return f"part {part_no[k]} of the polygon" if multi[owner[k]] else "polygon"


# --------------------------------------------------------------------------------------
# Area, bounds


def _as_geometries(polys: Any, name: str) -> np.ndarray:
    """A 1-D object array of polygonal shapely geometries (TypeError otherwise)."""
    if isinstance(polys, shapely.Geometry):
        raise TypeError(f"{name} must be an array of polygons, not a single geometry")
    if isinstance(polys, np.ndarray) and polys.dtype == object and polys.ndim == 1:
        array = polys  # only read
    else:
        array = np.empty(len(polys), dtype=object)
        array[:] = list(polys)
    try:
        types = shapely.get_type_id(array)
    except TypeError:
        bad = next(i for i, g in enumerate(array.tolist())
                   if not isinstance(g, shapely.Geometry))
        raise TypeError(f"{name} must hold shapely polygons; {name}[{bad}] is "
                        f"{type(array[bad]).__name__}") from None
    bad = np.flatnonzero(~np.isin(types, (_POLYGON, _MULTIPOLYGON)))
    if len(bad):
        i = int(bad[0])
        kind = "None" if array[i] is None else array[i].geom_type
        raise TypeError(f"{name} must hold shapely Polygons or MultiPolygons; {name}[{i}] is "
                        f"{kind}")
    return array


def polygon_area(polys: Any) -> np.ndarray:
    """Area of each polygon.

    Parameters
    ----------
    polys : sequence of shapely Polygon or MultiPolygon, length n

    Returns
    -------
    numpy.ndarray, shape (n,), float64
        0 for degenerate and empty polygons.

    Examples
    --------
    >>> polygon_area(polygons_from_coords([[0, 0, 3, 0, 0, 4]])).tolist()
    [6.0]
    """
    array = _as_geometries(polys, "polys")
    if not len(array):
        return np.zeros(0)
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(shapely.area(array), nan=0.0).astype(np.float64)


def polygon_bounds(polys: Any) -> np.ndarray:
    """Bounding box of each polygon as ``xyxy``.

    Parameters
    ----------
    polys : sequence of shapely Polygon or MultiPolygon, length n

    Returns
    -------
    numpy.ndarray, shape (n, 4), float64
        ``(min x, min y, max x, max y)``; NaN for an empty polygon.

    Examples
    --------
    >>> polygon_bounds(polygons_from_coords([[1, 2, 5, 2, 3, 7]])).tolist()
    [[1.0, 2.0, 5.0, 7.0]]
    """
    array = _as_geometries(polys, "polys")
    if not len(array):
        return np.zeros((0, 4))
    return np.asarray(shapely.bounds(array), dtype=np.float64).reshape(-1, 4)


# --------------------------------------------------------------------------------------
# IoU


class _Prepared:
    """What the IoU of a side needs, computed once: validity checked, area, bounds, and the
    ``[x, y, w, h]`` of axis-aligned rectangles (NaN elsewhere)."""

    def __init__(self, polys: Any, name: str, rows: np.ndarray | None = None):
        # ``rows``: where each polygon stands in the caller's array, for the messages.
        self.geoms = _as_geometries(polys, name)
        n = len(self.geoms)
        quads = _quad_corners(self.geoms)
        convex = _strictly_convex(quads[1])
        valid, degenerate = _validity(self.geoms, quads, convex)
        bad = np.flatnonzero(~valid & ~degenerate)
        if len(bad):
            i = int(bad[0])
            reason = shapely.is_valid_reason(self.geoms[i])
            label = i if rows is None else int(rows[i])
            raise ValueError(f"{name}[{label}] is not a valid polygon ({reason}); build polygons "
                             "with polygons_from_coords(..., invalid='repair') to repair them")
        with np.errstate(invalid="ignore", over="ignore"):
            self.area = np.nan_to_num(shapely.area(self.geoms), nan=0.0) if n else np.zeros(0)
            self.bounds = np.asarray(shapely.bounds(self.geoms)).reshape(-1, 4)
        self.area = np.where(degenerate, 0.0, self.area)
        huge = np.flatnonzero(~np.isfinite(self.area) | (np.abs(self.bounds) >= _MAX_COORDINATE
                                                         ).any(axis=1))
        if len(huge):
            i = int(huge[0])
            label = i if rows is None else int(rows[i])
            raise ValueError(f"{name}[{label}] has coordinates of magnitude {_MAX_COORDINATE:g} or "
                             "more (its bounds are "
                             f"{self.bounds[i].tolist()}); areas and IoUs would overflow")
        self.xywh = np.full((n, 4), np.nan)
        self.rect = np.zeros(n, dtype=bool)
        if n:
            rows, c = quads
            x, y = c[..., 0], c[..., 1]
            rect = (((y[:, 0] == y[:, 1]) & (x[:, 1] == x[:, 2]) & (y[:, 2] == y[:, 3])
                     & (x[:, 3] == x[:, 0]))
                    | ((x[:, 0] == x[:, 1]) & (y[:, 1] == y[:, 2]) & (x[:, 2] == x[:, 3])
                       & (y[:, 3] == y[:, 0])))
            rows, x, y = rows[rect], x[rect], y[rect]
            x0, y0 = x.min(axis=1), y.min(axis=1)
            self.xywh[rows] = np.column_stack([x0, y0, x.max(axis=1) - x0,
                                               y.max(axis=1) - y0])
            self.rect[rows] = True
        # Strictly convex quadrilaterals, corners turned counter-clockwise (positive shoelace
        # area), for the numpy intersection of two such polygons.
        self.quad = np.zeros(n, dtype=bool)
        self.corners = np.full((n, 4, 2), np.nan)
        if n:
            rows, c = quads
            convex &= self.area[rows] > 0
            rows, c = rows[convex], c[convex]
            # Shoelace sign about the first corner: raw coordinates far from the origin
            # (1e9, say) would cancel catastrophically and could give the wrong sign.
            x, y = c[..., 0] - c[:, :1, 0], c[..., 1] - c[:, :1, 1]
            signed = (x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y).sum(axis=1)
            self.corners[rows] = np.where((signed < 0)[:, None, None], c[:, ::-1], c)
            self.quad[rows] = True


def _as_flags(crowd: Any, n: int, name: str) -> np.ndarray:
    if crowd is None:
        return np.zeros(n, dtype=bool)
    flags = np.asarray(crowd)
    if flags.size and flags.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be booleans or 0/1; got dtype {flags.dtype}")
    if flags.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), one flag per ground truth; got "
                         f"{flags.shape}")
    if flags.dtype != bool and not np.isin(flags, (0, 1)).all():
        raise ValueError(f"{name} must hold only booleans or 0/1")
    return flags.astype(bool)


def _convex_quad_intersection_area(subject: np.ndarray, clip: np.ndarray) -> np.ndarray:
    """Area of the intersection of convex polygons, pair by pair, by Sutherland-Hodgman.

    Parameters
    ----------
    subject, clip : numpy.ndarray, shape (m, 4, 2)
        Corners of strictly convex quadrilaterals, counter-clockwise (positive shoelace area).

    Returns
    -------
    numpy.ndarray, shape (m,), float64
        ``subject[k]`` clipped by the four half-planes of ``clip[k]``'s edges, all pairs at
        once, and the shoelace area of what is left (0 when fewer than 3 points are left).
        The coordinates are first moved so that ``subject[k]``'s first corner is the origin,
        which keeps the shoelace sum free of the cancellation of far-away coordinates.
    """
    m = len(subject)
    x, y = subject[..., 0] - subject[:, :1, 0], subject[..., 1] - subject[:, :1, 1]
    ex, ey = clip[..., 0] - subject[:, :1, 0], clip[..., 1] - subject[:, :1, 1]
    dx, dy = np.roll(ex, -1, axis=1) - ex, np.roll(ey, -1, axis=1) - ey
    count = np.full(m, 4)
    rows = np.arange(m)

    def following(values: np.ndarray) -> np.ndarray:
        """Each point's successor on the outline: the next slot, the first after the last."""
        out = np.roll(values, -1, axis=1)
        out[rows, np.maximum(count - 1, 0)] = values[:, 0]
        return out

    for k in range(4):
        width = x.shape[1]
        valid = np.arange(width) < count[:, None]
        # > 0 left of (inside) the edge, < 0 outside, for a counter-clockwise clip polygon
        side = dx[:, k, None] * (y - ey[:, k, None]) - dy[:, k, None] * (x - ex[:, k, None])
        side_next, x_next, y_next = following(side), following(x), following(y)
        keep = valid & (side >= 0)
        cross = valid & (((side > 0) & (side_next < 0)) | ((side < 0) & (side_next > 0)))
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(cross, side / (side - side_next), 0.0)
        # Each point is followed by where the outline leaves or enters the half-plane after it.
        flags = np.stack([keep, cross], axis=2).reshape(m, 2 * width)
        at = np.cumsum(flags.view(np.int8), axis=1, dtype=np.int16)
        count = at[:, -1].astype(np.int64)
        capacity = max(int(count.max(initial=0)), 1)
        # Flat positions of the points kept; the dropped ones all go to one extra last slot.
        target = np.where(flags, at + (rows * capacity - 1)[:, None], m * capacity).ravel()
        new_x, new_y = np.zeros(m * capacity + 1), np.zeros(m * capacity + 1)
        new_x[target] = np.stack([x, x + t * (x_next - x)], axis=2).ravel()
        new_y[target] = np.stack([y, y + t * (y_next - y)], axis=2).ravel()
        x, y = new_x[:-1].reshape(m, capacity), new_y[:-1].reshape(m, capacity)
    valid = np.arange(x.shape[1]) < count[:, None]
    terms = np.where(valid, x * following(y) - following(x) * y, 0.0)
    area = 0.5 * terms.sum(axis=1)
    return np.where(count >= 3, np.maximum(area, 0.0), 0.0)


def _exact_iou(a: _Prepared, b: _Prepared, i: np.ndarray, j: np.ndarray,
               crowd: np.ndarray) -> np.ndarray:
    """IoU (IoA where ``crowd``) of the pairs ``(a[i], b[j])`` from exact intersection areas;
    the pairs must have overlapping bounds and positive areas."""
    area_a, area_b = a.area[i], b.area[j]
    ga, gb = a.geoms[i], b.geoms[j]
    # Intersect in a fixed order (smaller area first, then bounds) so that IoU(p, q) and
    # IoU(q, p) are the same bits.
    key_a = np.column_stack([area_a, a.bounds[i]])
    key_b = np.column_stack([area_b, b.bounds[j]])
    differ = key_a != key_b
    first = np.argmax(differ, axis=1)
    rows = np.arange(len(i))
    swap = differ.any(axis=1) & (key_a[rows, first] > key_b[rows, first])
    inter = np.empty(len(i))
    quad = a.quad[i] & b.quad[j]  # two convex quadrilaterals: clipped in numpy
    if quad.any():
        ca, cb, flip = a.corners[i[quad]], b.corners[j[quad]], swap[quad, None, None]
        inter[quad] = _convex_quad_intersection_area(np.where(flip, cb, ca),
                                                     np.where(flip, ca, cb))
    rest = np.flatnonzero(~quad)
    if len(rest):
        left = np.where(swap[rest], gb[rest], ga[rest])
        right = np.where(swap[rest], ga[rest], gb[rest])
        inter[rest] = shapely.area(shapely.intersection(left, right))
    # Exact where one polygon covers the other: the overlay's area can be an ulp off.
    inter = np.minimum(inter, np.minimum(area_a, area_b))
    inter = np.where(shapely.covered_by(gb, ga), area_b, inter)
    inter = np.where(shapely.covered_by(ga, gb), area_a, inter)
    union = np.where(crowd, area_a, (area_a + area_b) - inter)
    return inter / union


def pair_iou(dt_polys: Any, gt_polys: Any, gt_crowd: Any = None) -> np.ndarray:
    """IoU of aligned (detection, ground truth) polygon pairs, row ``i`` with row ``i``.

    Parameters
    ----------
    dt_polys : sequence of shapely Polygon or MultiPolygon, length p
        The detection of each pair.
    gt_polys : sequence of shapely Polygon or MultiPolygon, length p
        The ground truth of each pair.
    gt_crowd : array_like of bool or 0/1, shape (p,), optional
        Crowd flag of the ground truth of each pair: for a crowd pair the result is the
        intersection over the detection's area (COCO's crowd rule). Default: no crowds.

    Returns
    -------
    numpy.ndarray, shape (p,), float64
        In [0, 1]. 0 for pairs whose bounding boxes do not overlap (touching counts as not
        overlapping) and for pairs with a zero-area polygon; 1 for identical polygons. Pairs
        of two axis-aligned rectangles get exactly :func:`deteval.iou.coco_pair_iou` of
        their ``[x, y, w, h]`` (``x`` the smallest corner coordinate, ``w`` the largest minus
        the smallest).

    Raises
    ------
    TypeError
        An element that is not a shapely Polygon or MultiPolygon.
    ValueError
        Different lengths, bad crowd flags, or an invalid polygon (other than a degenerate
        one), naming its position and shapely's reason.

    Examples
    --------
    >>> a = polygons_from_rboxes([[0, 0, 2, 2, 0], [0, 0, 2, 2, 0], [0, 0, 2, 2, 0]])
    >>> b = polygons_from_coords([[0, -1, 1, -1, 1, 1, 0, 1], [-1, -1, 0, 0, 1, -1],
    ...                           [-3, -3, 3, -3, 3, 3, -3, 3]])
    >>> pair_iou(a, b, gt_crowd=[False, False, True]).tolist()
    [0.5, 0.25, 1.0]
    """
    dt, gt = _Prepared(dt_polys, "dt_polys"), _Prepared(gt_polys, "gt_polys")
    n = len(dt.geoms)
    if len(gt.geoms) != n:
        raise ValueError(f"dt_polys and gt_polys must have the same length; got {n} and "
                         f"{len(gt.geoms)}")
    rows = np.arange(n)
    return _rows_iou(dt, gt, rows, rows, _as_flags(gt_crowd, n, "gt_crowd"))


class PairIoU:
    """:func:`pair_iou` of pairs given by rows, each polygon prepared once per call.

    ``PairIoU(dt_polys, gt_polys)(dt_rows, gt_rows, crowd)`` equals ``pair_iou(
    dt_polys[dt_rows], gt_polys[gt_rows], crowd)`` bit for bit, errors included (naming the
    row); the checks, areas, bounds and corners of a polygon are computed once for all the
    pairs it takes part in, not once per pair. Polygons in no pair are never looked at.

    Examples
    --------
    >>> a = polygons_from_rboxes([[0, 0, 2, 2, 0], [9, 9, 2, 2, 0]])
    >>> b = polygons_from_coords([[0, -1, 1, -1, 1, 1, 0, 1]])
    >>> PairIoU(a, b)(np.array([0, 1, 0]), np.array([0, 0, 0])).tolist()
    [0.5, 0.0, 0.5]
    """

    def __init__(self, dt_polys: Any, gt_polys: Any):
        self.dt_polys = _as_geometries(dt_polys, "dt_polys")
        self.gt_polys = _as_geometries(gt_polys, "gt_polys")

    def __call__(self, dt_rows: np.ndarray, gt_rows: np.ndarray,
                 gt_crowd: Any = None) -> np.ndarray:
        dt_rows = np.asarray(dt_rows, dtype=np.int64)
        gt_rows = np.asarray(gt_rows, dtype=np.int64)
        if dt_rows.shape != gt_rows.shape or dt_rows.ndim != 1:
            raise ValueError("dt_rows and gt_rows must be 1-D and of one length")
        crowd = _as_flags(gt_crowd, len(dt_rows), "gt_crowd")
        dt_used, dt_at = np.unique(dt_rows, return_inverse=True)
        gt_used, gt_at = np.unique(gt_rows, return_inverse=True)
        dt = _Prepared(self.dt_polys[dt_used], "dt_polys", rows=dt_used)
        gt = _Prepared(self.gt_polys[gt_used], "gt_polys", rows=gt_used)
        return _rows_iou(dt, gt, dt_at.reshape(-1), gt_at.reshape(-1), crowd)


def _rows_iou(dt: _Prepared, gt: _Prepared, i: np.ndarray, j: np.ndarray,
              crowd: np.ndarray) -> np.ndarray:
    """IoU of the pairs ``(dt[i[k]], gt[j[k]])`` (see :func:`pair_iou`)."""
    out = np.zeros(len(i))
    both = dt.rect[i] & gt.rect[j]
    if both.any():
        out[both] = coco_iou(tuple(dt.xywh[i[both]].T), tuple(gt.xywh[j[both]].T),
                              crowd[both])
    bd, bg = dt.bounds[i], gt.bounds[j]
    with np.errstate(invalid="ignore"):
        overlap = ((np.minimum(bd[:, 2], bg[:, 2]) > np.maximum(bd[:, 0], bg[:, 0]))
                   & (np.minimum(bd[:, 3], bg[:, 3]) > np.maximum(bd[:, 1], bg[:, 1])))
    todo = np.flatnonzero(overlap & ~both & (dt.area[i] > 0) & (gt.area[j] > 0))
    if len(todo):
        out[todo] = _exact_iou(dt, gt, i[todo], j[todo], crowd[todo])
    return out


def iou_matrix(a: Any, b: Any, crowd: Any = None) -> np.ndarray:
    """IoU of every polygon in ``a`` (detections) with every polygon in ``b`` (ground truth).

    Parameters
    ----------
    a : sequence of shapely Polygon or MultiPolygon, length n
    b : sequence of shapely Polygon or MultiPolygon, length m
    crowd : array_like of bool or 0/1, shape (m,), optional
        Crowd flag of each polygon of ``b``: its column holds intersection over the area of
        the ``a`` polygon.

    Returns
    -------
    numpy.ndarray, shape (n, m), float64
        Cell ``[i, j]`` is ``pair_iou([a[i]], [b[j]], [crowd[j]])`` (bit for bit).

    Examples
    --------
    >>> a = polygons_from_rboxes([[5, 5, 10, 10, 0]])
    >>> b = polygons_from_rboxes([[5, 5, 10, 10, 90], [10, 5, 10, 10, 0], [50, 5, 2, 2, 30]])
    >>> iou_matrix(a, b).round(6).tolist()
    [[1.0, 0.333333, 0.0]]
    """
    pa, pb = _Prepared(a, "a"), _Prepared(b, "b")
    n, m = len(pa.geoms), len(pb.geoms)
    flags = _as_flags(crowd, m, "crowd")
    out = np.zeros((n, m))
    if n == 0 or m == 0:
        return out
    ra, rb = np.flatnonzero(pa.rect), np.flatnonzero(pb.rect)
    if len(ra) and len(rb):
        out[np.ix_(ra, rb)] = coco_iou(tuple(pa.xywh[ra][:, [k]] for k in range(4)),
                                        tuple(pb.xywh[rb].T), flags[rb])
    ba, bb = pa.bounds, pb.bounds
    with np.errstate(invalid="ignore"):
        overlap = ((np.minimum(ba[:, [2]], bb[:, 2]) > np.maximum(ba[:, [0]], bb[:, 0]))
                   & (np.minimum(ba[:, [3]], bb[:, 3]) > np.maximum(ba[:, [1]], bb[:, 1])))
    overlap &= ~(pa.rect[:, None] & pb.rect[None, :])
    overlap &= (pa.area > 0)[:, None] & (pb.area > 0)[None, :]
    i, j = np.nonzero(overlap)
    if len(i):
        out[i, j] = _exact_iou(pa, pb, i, j, flags[j])
    return out
