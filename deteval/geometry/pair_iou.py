"""Polygon IoU: aligned pairs, all pairs, and a prepared ground truth (:class:`PairIoU`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely

from ..iou import coco_iou
from ._common import _MAX_COORDINATE
from .polygons import _as_geometries, _quad_corners, _strictly_convex, _validity

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
    >>> from deteval.geometry import polygons_from_coords, polygons_from_rboxes
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
    >>> from deteval.geometry import polygons_from_coords, polygons_from_rboxes
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
    >>> from deteval.geometry import polygons_from_coords, polygons_from_rboxes
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
