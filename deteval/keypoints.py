"""Object keypoint similarity (OKS), equal bit for bit to pycocotools' ``computeOks``.

For a ground-truth object with keypoints ``(xg, yg, vg)``, area ``a`` and box ``(bx, by, bw,
bh)``, and a detection's keypoints ``(xd, yd)`` (detection visibilities are not read)::

    vars = (2 * sigma) ** 2
    if any visible (vg > 0):  dx = xd - xg,  dy = yd - yg,  only visible keypoints kept
    else:                     dx, dy = distance outside [bx - bw, bx + 2 bw] x [by - bh, by + 2 bh]
    e = (dx ** 2 + dy ** 2) / vars / (a + eps) / 2
    OKS = sum(exp(-e)) / len(e)

The sum is numpy's pairwise sum over a contiguous vector, which differs from a plain loop in
the last bits; it is computed here over the last axis of C-contiguous blocks of pairs that
share a keypoint count, which numpy sums the same way (docs/protocols/coco.md §5.4).

Examples
--------
>>> gt_kp = np.array([[[10.0, 10.0, 2.0], [20.0, 10.0, 2.0]]])
>>> dt_kp = np.array([[[11.0, 10.0, 1.0], [20.0, 12.0, 1.0]]])
>>> oks = pair_oks(dt_kp, gt_kp, np.array([[5.0, 5.0, 20.0, 10.0]]), np.array([200.0]),
...                np.array([0]), np.array([0]), sigmas=np.array([0.25, 0.25]))
>>> round(float(oks[0]), 6)
0.97542
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ._sorting import sorted_unique

__all__ = ["COCO_PERSON_SIGMAS", "OKSTables", "pair_oks", "points_extent"]

#: The 17 COCO person keypoint sigmas, as pycocotools defines them (``[...] / 10.0``).
COCO_PERSON_SIGMAS = np.array([.26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62, 1.07,
                               1.07, .87, .87, .89, .89]) / 10.0
COCO_PERSON_SIGMAS.setflags(write=False)


def pair_oks(dt_keypoints: np.ndarray, gt_keypoints: np.ndarray, gt_xywh: np.ndarray,
             gt_area: np.ndarray, pair_dt: np.ndarray, pair_gt: np.ndarray, *,
             sigmas: np.ndarray) -> np.ndarray:
    """OKS of (detection, ground truth) pairs that share one keypoint layout.

    Parameters
    ----------
    dt_keypoints : ndarray of float, shape (n_dt, K, 3)
    gt_keypoints : ndarray of float, shape (n_gt, K, 3)
    gt_xywh : ndarray of float, shape (n_gt, 4)
        Ground-truth boxes ``[x, y, w, h]`` (used when an object has no visible keypoint).
    gt_area : ndarray of float, shape (n_gt,)
    pair_dt, pair_gt : ndarray of int, shape (P,)
        Rows of the pairs.
    sigmas : ndarray of float, shape (K,)

    Returns
    -------
    ndarray of float64, shape (P,)
    """
    pair_dt = np.asarray(pair_dt, dtype=np.int64)
    pair_gt = np.asarray(pair_gt, dtype=np.int64)
    out = np.zeros(len(pair_dt), dtype=np.float64)
    for lo in range(0, len(pair_dt), _CHUNK_PAIRS):
        # Only the rows of this chunk's pairs are read (never whole tables).
        d_rows, d_at = np.unique(pair_dt[lo:lo + _CHUNK_PAIRS], return_inverse=True)
        g_rows, g_at = np.unique(pair_gt[lo:lo + _CHUNK_PAIRS], return_inverse=True)
        tables = OKSTables(np.asarray(dt_keypoints).take(d_rows, axis=0),
                           np.asarray(gt_keypoints).take(g_rows, axis=0),
                           np.asarray(gt_xywh, dtype=np.float64).reshape(-1, 4).take(
                               g_rows, axis=0),
                           np.asarray(gt_area, dtype=np.float64).take(g_rows))
        out[lo:lo + _CHUNK_PAIRS] = tables.pair_oks(d_at.ravel(), g_at.ravel(), sigmas=sigmas)
    return out


_CHUNK_PAIRS = 8192  # pairs per pass: every temporary of a chunk stays in cache


class OKSTables:
    """Keypoint tables prepared once for the OKS of many (detection, object) pairs.

    The objects' coordinates are split into contiguous ``(rows, K)`` planes, each object's
    kept keypoints (the visible ones; all K when none is) listed first, once per layout K
    rather than once per pair; the detections' are read from their table in place (no copy
    of it). :meth:`pair_oks` then computes each pair's terms only for
    its object's kept keypoints, with pycocotools' operations in its order, and sums them as
    numpy sums ``computeOks``' vector (see the module docstring): the values are equal bit
    for bit to :func:`pair_oks`.

    With ``floor``, a pair whose OKS provably stays below it gets 0 without its terms being
    computed (docs/protocols/coco.md §5.4): every kept term ``exp(-e_i)`` is at most
    ``exp(-e)`` where ``e`` uses the gap between the detection's keypoint extent and the
    object's (its visible keypoints' extent, or pycocotools' enlarged box when it has none)
    and the largest sigma.

    Parameters
    ----------
    dt_keypoints : ndarray of float, shape (n_dt, K, 3)
    gt_keypoints : ndarray of float, shape (n_gt, K, 3)
    gt_xywh : ndarray of float, shape (n_gt, 4)
    gt_area : ndarray of float, shape (n_gt,)

    Examples
    --------
    >>> gt_kp = np.array([[[10.0, 10.0, 2.0], [20.0, 10.0, 2.0]]])
    >>> dt_kp = np.array([[[11.0, 10.0, 1.0], [20.0, 12.0, 1.0]],
    ...                   [[90.0, 90.0, 1.0], [99.0, 90.0, 1.0]]])
    >>> tables = OKSTables(dt_kp, gt_kp, np.array([[5.0, 5.0, 20.0, 10.0]]), np.array([200.0]))
    >>> oks = tables.pair_oks(np.array([0, 1]), np.array([0, 0]),
    ...                       sigmas=np.array([0.25, 0.25]), floor=0.5)
    >>> [round(float(v), 6) for v in oks]   # the far-off detection is bounded: 0
    [0.97542, 0.0]
    """

    def __init__(self, dt_keypoints: np.ndarray, gt_keypoints: np.ndarray,
                 gt_xywh: np.ndarray, gt_area: np.ndarray):
        self._dt = np.asarray(dt_keypoints, dtype=np.float64)
        self._gt = np.asarray(gt_keypoints, dtype=np.float64)
        self._xywh = np.asarray(gt_xywh, dtype=np.float64).reshape(-1, 4)
        self._scale = np.asarray(gt_area, dtype=np.float64) + np.spacing(1)
        self._layouts: dict[int, _Layout] = {}
        self._lock = threading.Lock()

    def _layout(self, k: int, *, extents: bool) -> _Layout:
        """The layout of ``k`` keypoints, with its extents when ``extents``: made once, by
        the first thread that needs it (the others wait rather than make it again; one that
        waits for the extents makes the layout's keypoint order meanwhile)."""
        with self._lock:
            layout = self._layouts.get(k)
            if layout is None:
                layout = self._layouts[k] = _Layout(self._dt, self._gt, self._xywh, k)
        if extents:
            layout.extents()
        return layout

    def pair_oks(self, pair_dt: np.ndarray, pair_gt: np.ndarray, *, sigmas: np.ndarray,
                 floor: float = 0.0) -> np.ndarray:
        """OKS of the pairs ``(pair_dt[i], pair_gt[i])``, whose layout has ``len(sigmas)``
        keypoints; pairs provably below ``floor`` (when > 0) get 0.

        Returns
        -------
        ndarray of float64, shape (P,)
        """
        variances = (np.asarray(sigmas, dtype=np.float64) * 2) ** 2
        pair_dt = np.asarray(pair_dt, dtype=np.int64)
        pair_gt = np.asarray(pair_gt, dtype=np.int64)
        out = np.zeros(len(pair_dt), dtype=np.float64)
        if len(pair_dt) == 0:
            return out
        layout = self._layout(len(variances), extents=floor > 0)
        # Far-off keypoints (|coordinates| beyond ~1e154) overflow to an infinite distance,
        # whose similarity exp(-inf) is 0, as in pycocotools: not worth a warning.
        # The bound chunk by chunk (every temporary stays small: in cache, and reused by
        # malloc rather than new pages, each a page fault in a fresh process), then the
        # exact values of the pairs left, grouped over all of them (a few large groups).
        with np.errstate(over="ignore"):
            if floor > 0:
                largest = float(variances.max())
                at = np.concatenate([
                    lo + np.flatnonzero(~layout.below(pair_dt[lo:lo + _CHUNK_PAIRS],
                                                      pair_gt[lo:lo + _CHUNK_PAIRS],
                                                      self._scale, largest, floor))
                    for lo in range(0, len(pair_dt), _CHUNK_PAIRS)])
                out[at] = layout.oks(pair_dt[at], pair_gt[at], self._scale, variances)
            else:
                out[:] = layout.oks(pair_dt, pair_gt, self._scale, variances)
        return out


class _Layout:
    """One keypoint count K: each object's kept keypoints first (``order``) and their count,
    the boxes of hidden objects, and the extents the bound reads. Both tables are read in
    place by flat index (no copy of their coordinates, no plane per layout: in a fresh
    process each new page of an array is a page fault, which costs more than the
    arithmetic here)."""

    def __init__(self, dt: np.ndarray, gt: np.ndarray, xywh: np.ndarray, k: int):
        self.k = k
        # x of keypoint j of row r at r * stride + 3 * j, y right after.
        self.dt = dt
        self.dt_xy = _point_view(dt)
        self.stride = 3 * dt.shape[1] if dt.ndim == 3 else 0
        self.gt = gt
        self.gt_xy = _point_view(gt)
        self.gt_stride = 3 * gt.shape[1] if gt.ndim == 3 else 0
        self.columns = 3 * np.arange(k)
        visible = gt[:, :k, 2] > 0
        n_visible = visible.sum(axis=1)
        self.hidden = n_visible == 0
        self.kept = np.where(self.hidden, k, n_visible)
        # pycocotools' box of an object without visible keypoints: its box enlarged by its
        # size on each side (x0, x1, y0, y1).
        self.box = np.column_stack([xywh[:, 0] - xywh[:, 2], xywh[:, 0] + xywh[:, 2] * 2,
                                    xywh[:, 1] - xywh[:, 3], xywh[:, 1] + xywh[:, 3] * 2])
        self.visible = visible
        self._extents: tuple[np.ndarray, np.ndarray] | None = None
        self._order: np.ndarray | None = None
        self._extents_lock, self._order_lock = threading.Lock(), threading.Lock()

    @property
    def order(self) -> np.ndarray:
        """The visible keypoints first, in keypoint order (computeOks' ``e[vg > 0]``): a
        stable sort of ~visible per row, as flat offsets 3 * keypoint; made on first use."""
        if self._order is None:
            with self._order_lock:
                if self._order is None:
                    order = np.argsort(~self.visible, axis=1, kind="stable")
                    order *= 3
                    self._order = order
        return self._order

    def extents(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, 4)`` extents x0, x1, y0, y1 of the detections' keypoints (the reader's,
        :func:`share_extent`, when it made them) and of the objects' visible ones
        (pycocotools' enlarged box when none is), made on first use by one thread; another
        that needs them meanwhile makes :attr:`order` while it waits (the matcher's
        threads: the one with the first chunk of pairs, the larger, no longer makes both)."""
        if self._extents is not None:
            return self._extents
        if not self._extents_lock.acquire(blocking=False):
            self.order      # noqa: B018 (made while the other thread makes the extents)
            self._extents_lock.acquire()
        try:
            if self._extents is None:
                self._make_extents()
        finally:
            self._extents_lock.release()
        return self._extents

    def _make_extents(self) -> None:
        shared = _SHARED_EXTENTS.get(id(self.dt)) if self.dt.shape[1:2] == (self.k,) else None
        dt = shared[1] if shared is not None and shared[0]() is self.dt else None
        self._extents = (points_extent(self.dt[:, :self.k, 0], self.dt[:, :self.k, 1])
                         if dt is None else dt,
                         np.where(self.hidden[:, None], self.box,
                                  points_extent(self.gt[:, :self.k, 0], self.gt[:, :self.k, 1],
                                                self.visible)))

    def below(self, pair_dt, pair_gt, scale, variance_max, floor) -> np.ndarray:
        """Whether each pair's OKS is provably below ``floor``.

        Every kept term has ``|dx| >= gap_x`` and ``|dy| >= gap_y`` (float rounding is
        monotonic), a variance at most ``variance_max`` and the object's scale, so when the
        scale is positive ``e_i >= e`` below, ``exp(-e_i) <= exp(-e)``, and their mean too;
        the margin covers exp's and the sum's last bits. A pair with ``e > 0`` has a gap,
        so no term is ``0 / 0`` (a zero sigma gives ``exp(-inf) = 0``); NaN (a NaN sigma or
        area) never counts as below.
        """
        dt_extent, gt_extent = self.extents()
        d = dt_extent.take(pair_dt, axis=0)
        g = gt_extent.take(pair_gt, axis=0)
        gap_x = np.maximum(np.maximum(d[:, 0] - g[:, 1], g[:, 0] - d[:, 1]), 0.0)
        gap_y = np.maximum(np.maximum(d[:, 2] - g[:, 3], g[:, 2] - d[:, 3]), 0.0)
        s = scale.take(pair_gt)
        e = (gap_x * gap_x + gap_y * gap_y) / variance_max / s / 2
        return (s > 0) & (e > -np.log(floor) + 1e-6)

    def oks(self, pair_dt, pair_gt, scale, variances) -> np.ndarray:
        """Exact OKS of the pairs, grouped by their object's kept-keypoint count (-1: no
        visible keypoint), each group in chunks of ``_CHUNK_PAIRS`` pairs."""
        k = self.k
        out = np.empty(len(pair_dt), dtype=np.float64)
        kept = np.where(self.hidden, -1, self.kept).take(pair_gt)
        if len(kept) and (kept == k).all():
            groups = [(k, np.arange(len(kept)))]
        else:
            groups = [(m, np.flatnonzero(kept == m)) for m in sorted_unique(kept).tolist()]
        for m, rows in groups:
            for lo in range(0, len(rows), _CHUNK_PAIRS):
                part = rows[lo:lo + _CHUNK_PAIRS]
                d_rows, g_rows = pair_dt[part], pair_gt[part]
                if m < 0:
                    out[part] = self._hidden(d_rows, g_rows, scale, variances)
                    continue
                if m == k:
                    columns, var = self.columns, variances
                else:
                    columns = self.order.take(g_rows, axis=0)[:, :m]
                    var = variances.take(columns // 3)
                # (dx + i dy: complex subtraction is the two subtractions of dx and dy)
                d = np.subtract(self._dt_points(d_rows, columns),
                                _points(self.gt_xy, self.gt_stride, g_rows, columns))
                out[part] = _mean_similarity(d, var, scale.take(g_rows))
        return out

    def _dt_points(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        return _points(self.dt_xy, self.stride, rows, columns)

    def _hidden(self, pair_dt, pair_gt, scale, variances) -> np.ndarray:
        """OKS against objects without visible keypoints: every K term, with the distance
        outside pycocotools' enlarged box."""
        box = self.box.take(pair_gt, axis=0)
        points = self._dt_points(pair_dt, self.columns)
        xd, yd = points.real, points.imag
        dx = np.maximum(0.0, box[:, 0:1] - xd) + np.maximum(0.0, xd - box[:, 1:2])
        dy = np.maximum(0.0, box[:, 2:3] - yd) + np.maximum(0.0, yd - box[:, 3:4])
        np.square(dx, out=dx)
        np.square(dy, out=dy)
        return _mean_of_squares(np.add(dx, dy, out=dx), variances, scale.take(pair_gt))


def _point_view(table: np.ndarray) -> np.ndarray:
    """A keypoint table's numbers (C order; a copy when the table is not C-contiguous) as
    complex numbers ``x + i y`` starting at every number, ``(numbers - 1,)`` (no copy): the
    keypoint ``j`` of row ``r`` is ``x + i y`` at ``r * 3K + 3 * j``. One 16-byte gather
    of a keypoint then reads its x and y, faster than two gathers of one number (``take``:
    2.7 against 4.8 ns a keypoint on the bench's tables; aligned 16-byte items take numpy's
    fast copy)."""
    flat = np.ascontiguousarray(table, dtype=np.float64).reshape(-1)
    return np.ndarray((max(len(flat) - 1, 0),), dtype=np.complex128, buffer=flat,
                      strides=(flat.itemsize,))


def _points(xy: np.ndarray, stride: int, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """C-contiguous complex ``(len(rows), m)`` ``x + i y`` of a keypoint table
    (:func:`_point_view`, ``stride`` numbers a row) at ``columns`` (3 * keypoint: the same
    for every row, shape (m,), or per row)."""
    return xy[(rows * stride)[:, None] + columns]


def points_extent(x: np.ndarray, y: np.ndarray, kept: np.ndarray | None = None) -> np.ndarray:
    """``(rows, 4)`` x min, x max, y min, y max of each row's points, or of its ``kept``
    ones (a row without any gets an empty extent, inf to -inf; NaN propagates, and a NaN
    extent never bounds a pair).

    Parameters
    ----------
    x, y : ndarray of float, shape (rows, K)
        The points' coordinates (any strides: a keypoint table's ``[:, :, 0]`` and
        ``[:, :, 1]``).
    kept : ndarray of bool, shape (rows, K), optional

    Returns
    -------
    ndarray of float64, shape (rows, 4)

    Block by block of rows, over contiguous ``(K, rows)`` planes, one reduction over the K
    axis each: a reduction over rows of a few keypoints runs numpy's inner loop once per
    row, and a column of a strided table at a time reads a cache line per number, both
    several times slower; small blocks keep the planes in cache (and reused by malloc
    rather than new pages, each a page fault in a fresh process).

    >>> kp = np.array([[[1.0, 5.0, 2], [3.0, -1.0, 2]], [[2.0, 2.0, 0], [9.0, 4.0, 2]]])
    >>> points_extent(kp[:, :, 0], kp[:, :, 1]).tolist()
    [[1.0, 3.0, -1.0, 5.0], [2.0, 9.0, 2.0, 4.0]]
    >>> points_extent(kp[:, :, 0], kp[:, :, 1], kp[:, :, 2] > 0).tolist()[1]
    [9.0, 9.0, 4.0, 4.0]
    """
    out = np.empty((4, len(x)))
    for lo in range(0, len(x), _EXTENT_ROWS):
        rows = slice(lo, lo + _EXTENT_ROWS)
        shown = None if kept is None else np.ascontiguousarray(kept[rows].T)
        for at, values in ((0, x), (2, y)):
            plane = np.ascontiguousarray(values[rows].T)
            low = high = plane
            if shown is not None:   # (np.where: a ufunc's where= takes numpy's masked loop)
                low, high = np.where(shown, plane, np.inf), np.where(shown, plane, -np.inf)
            np.minimum.reduce(low, axis=0, out=out[at, rows], initial=np.inf)
            np.maximum.reduce(high, axis=0, out=out[at + 1, rows], initial=-np.inf)
    return out.T


_EXTENT_ROWS = 512  # rows of a block of points_extent: a (17, rows) plane of 68 KiB

#: Extents made elsewhere of read-only keypoint tables (:func:`share_extent`), by the
#: table's identity, each with a weak reference to its table: an entry goes with its table.
_SHARED_EXTENTS: dict[int, tuple[weakref.ref, np.ndarray]] = {}


def share_extent(table: np.ndarray, extent: np.ndarray) -> None:
    """Hand :class:`OKSTables` the extent of a keypoint table made elsewhere (internal: a
    reader's hand-over, like :func:`deteval.data.owned`; it makes its arguments read-only).

    ``extent`` must be ``points_extent(table[:, :, 0], table[:, :, 1])`` bit for bit: the
    keypoint results reader makes it piece by piece as it reads the file, row by row as
    :func:`points_extent` does (:mod:`deteval.io._numeric_keypoints`), and the detections'
    OKS bound then reads it instead of making it again. Kept while ``table`` lives; both
    are made read-only.

    >>> kp = np.array([[[1.0, 5.0, 2], [3.0, -1.0, 2]]])
    >>> share_extent(kp, points_extent(kp[:, :, 0], kp[:, :, 1]))
    >>> kp.flags.writeable
    False
    """
    key = id(table)
    table.setflags(write=False)
    extent.setflags(write=False)
    _SHARED_EXTENTS[key] = (weakref.ref(table, lambda _: _SHARED_EXTENTS.pop(key, None)),
                            extent)


def _mean_similarity(d: np.ndarray, variances, scale: np.ndarray) -> np.ndarray:
    """``sum(exp(-e)) / m`` per row of ``(rows, m)`` distances ``d = dx + i dy`` (complex,
    C-contiguous, overwritten), with ``e = (dx ** 2 + dy ** 2) / vars / (area + eps) / 2``
    in pycocotools' order of operations (:func:`_mean_of_squares`)."""
    squares = d.view(np.float64)        # (rows, 2m): dx, dy of each keypoint in turn
    np.square(squares, out=squares)
    return _mean_of_squares(np.add(squares[:, 0::2], squares[:, 1::2]), variances, scale)


def _mean_of_squares(e: np.ndarray, variances, scale: np.ndarray) -> np.ndarray:
    """``sum(exp(-e)) / m`` per row of ``(rows, m)`` ``dx ** 2 + dy ** 2`` (C-contiguous,
    overwritten): the rest of pycocotools' operations, in its order; numpy sums each
    C-contiguous row as it sums computeOks' vector."""
    np.divide(e, variances, out=e)
    np.divide(e, scale[:, None], out=e)
    # -(e / 2) as e * -0.5: the same real number, so the same rounding.
    np.multiply(e, -0.5, out=e)
    similarity = np.exp(e, out=e)
    return similarity.sum(axis=1) / similarity.shape[1]
