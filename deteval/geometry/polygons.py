"""Polygons from flat coordinates: parsing, validity (refuse or repair), area and bounds."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np
import shapely

from ._common import _INVALID, _MAX_COORDINATE, _MULTIPOLYGON, _POLYGON, _error, _labeller

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
