"""Mask IoU of (detection, ground truth) pairs with pycocotools' ``iou`` routine, batched
over the whole dataset, and the bound on it that areas and boxes give.

Examples
--------
>>> full = {"size": [4, 4], "counts": b"0`0"}                  # 16 pixels
>>> corner = {"size": [4, 4], "counts": b"0220004"}            # 6 of them
>>> masks = np.array([full, corner], dtype=object)
>>> pair_mask_iou(masks, masks, np.array([0, 1]), np.array([1, 1]), np.zeros(2, bool),
...               image_of_dt=np.zeros(2, np.int64)).tolist()
[0.375, 1.0]
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, NamedTuple

import numpy as np

from .._mask_text import MaskText
from .._threads import resolve_threads, thread_map
from ._api import mask_api
from ._capi import RLE_DTYPE, CRoutines, c_routines
from ._runs import MaskRuns, mask_runs, mask_strings, parse_joined, piece_records

__all__ = ["mask_iou_bound", "pair_mask_iou"]


def mask_iou_bound(area_dt: np.ndarray, area_gt: np.ndarray, crowd: np.ndarray,
                   xywh_dt: np.ndarray | None = None,
                   xywh_gt: np.ndarray | None = None) -> np.ndarray:
    """The largest value :func:`pair_mask_iou` could return per pair, from areas and boxes.

    pycocotools' value is ``float(i) / float(u)`` with ``i`` the common pixels and ``u =
    a_dt + a_gt - i`` (a crowd region: ``u = a_dt``). ``i`` is at most the smaller area
    and, given the masks' tight boxes, the pixels the two boxes share. ``i / u`` grows
    with ``i`` and correctly rounded division keeps that order, so the value at the
    largest possible ``i`` is never below the routine's own result, to the last bit. Any
    boxes that hold all their masks' pixels keep this true (the pixels they share are still
    at least ``i``): boxes larger than the tight ones only loosen the bound.

    Two exceptions, where the routine may count only a prefix of the pixels and return
    more than ``i / u``, up to 1: it walks both run lists together and stops when the two
    remaining run lengths add up to 0 in 32-bit arithmetic, so (a) when both masks are at
    an empty run (two masks with empty runs after their first, which pycocotools' own
    encoders never write), and (b) when they add up to 2**32 (masks of more than 2**31
    pixels). The readers give such masks a NaN area (``mask_area``), and a pair with a NaN
    area gets the bound 1.

    Parameters
    ----------
    area_dt, area_gt : array of float, shape (P,)
        Pixel counts of the two masks of each pair (pycocotools' ``area``); NaN for a mask
        whose IoU may not follow its pixels (see above).
    crowd : array of bool, shape (P,)
        Whether the pair's object is a crowd region.
    xywh_dt, xywh_gt : array of float, shape (P, 4), optional
        The masks' tight boxes (pycocotools' ``toBbox``), or any boxes holding all their
        pixels.

    Returns
    -------
    ndarray of float64, shape (P,)
        0 where nothing can overlap.

    Examples
    --------
    >>> mask_iou_bound(np.array([100.0, 100.0, np.nan]), np.array([50.0, 400.0, 50.0]),
    ...                np.array([False, True, False])).tolist()
    [0.5, 1.0, 1.0]
    """
    area_dt = np.asarray(area_dt, dtype=np.float64)
    area_gt = np.asarray(area_gt, dtype=np.float64)
    common = np.minimum(area_dt, area_gt)
    if xywh_dt is not None and xywh_gt is not None:
        d, g = np.asarray(xywh_dt, np.float64), np.asarray(xywh_gt, np.float64)
        w = np.minimum(d[:, 0] + d[:, 2], g[:, 0] + g[:, 2]) - np.maximum(d[:, 0], g[:, 0])
        h = np.minimum(d[:, 1] + d[:, 3], g[:, 1] + g[:, 3]) - np.maximum(d[:, 1], g[:, 1])
        common = np.minimum(common, np.where((w > 0) & (h > 0), w * h, 0.0))
    union = np.where(crowd, area_dt, area_dt + area_gt - common)
    bound = np.zeros(len(common), dtype=np.float64)
    some = common > 0
    bound[some] = common[some] / union[some]
    bound[np.isnan(common)] = 1.0
    return bound


def _ranks_within(key: np.ndarray, rows: np.ndarray):
    """Dense rank of each pair's row among the distinct rows of its key, vectorised.

    Returns the rank per pair (in the pairs' own order), a flag per position of the
    (key, row)-sorted order marking the first pair of each distinct row, the bounds of the
    key groups in that order, and the order itself.
    """
    order = np.lexsort((rows, key))
    k, r = key[order], rows[order]
    new_key = np.empty(len(order), dtype=bool)
    new_key[:1] = True
    new_key[1:] = k[1:] != k[:-1]
    first = new_key.copy()
    first[1:] |= r[1:] != r[:-1]
    dense = np.cumsum(first) - 1
    key_start = np.maximum.accumulate(np.where(new_key, np.arange(len(order)), 0))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = dense - dense[key_start]
    bounds = np.append(np.flatnonzero(new_key), len(order))
    return rank, first, bounds, order


_BATCH_MASKS = 160  # masks per call of the RLE routine, about (see _size_batches)


def pair_mask_iou(dt_masks: Any, gt_masks: np.ndarray, pair_dt: np.ndarray,
                  pair_gt: np.ndarray, gt_crowd: np.ndarray, *,
                  image_of_dt: np.ndarray, group: np.ndarray | None = None,
                  dt_sizes: np.ndarray | None = None,
                  gt_runs: MaskRuns | None = None,
                  threads: int | None = None) -> np.ndarray:
    """Mask IoU of (detection, ground truth) pairs, with pycocotools' ``maskUtils.iou``.

    Parameters
    ----------
    dt_masks : ndarray of object, or MaskText
        Compressed RLE dicts, or a results reader's :class:`~deteval._mask_text.MaskText`
        (every detection's string in one text: no dict is made on the C path).
    gt_masks : ndarray of object
        Compressed RLE dicts.
    pair_dt, pair_gt : ndarray of int, shape (P,)
        Rows of the pairs; both sides of a pair must be masks of the same image.
    gt_crowd : ndarray of bool, shape (n_gt,)
        Crowd regions score intersection over the detection's area.
    image_of_dt : ndarray of int, shape (n_dt,)
        Image of each detection: pairs are grouped by image, and no mask is compared with
        masks of another group.
    group : ndarray of int, shape (P,), optional
        A finer key per pair (e.g. image and category) to group by instead.
    dt_sizes : ndarray of int, shape (n_dt, 2), optional
        The ``[h, w]`` of each detection's mask (the dicts' ``"size"``), when a column holds
        them: the calls are then laid out without reading ``"size"`` from the dicts (~0.4 us
        a dict scattered in memory). Only the layout reads them; every value is the
        routine's, from the masks.
    gt_runs : MaskRuns, optional
        The runs of every mask of ``gt_masks`` (:func:`~deteval.masks._runs.mask_runs`),
        when the caller parsed them already (for their boxes).
    threads : int, optional
        Threads of the C path's calls (None: ``resolve_threads(None)``); the values do not
        depend on it.

    Returns
    -------
    ndarray of float64, shape (P,)
        As pycocotools: ``float(i) / float(u)``; 0 without overlap; -1 where the two masks
        differ in size and their boxes overlap.

    Notes
    -----
    The routine computes a full (detections x objects) matrix per call, and each call costs
    tens of microseconds besides. Groups whose masks all have one size are therefore sent
    together, at most one group of each size per call: across groups the masks then differ
    in size, which the routine settles from the boxes alone (no run-length merge), and
    those cross values are dropped. A group with masks of several sizes has a call of its
    own. Every pair's value is the routine's own for that pair.

    Where pycocotools' C routines can be called through ctypes
    (:func:`~deteval.masks._capi.c_routines`), each call is pycocotools' ``rleIou`` on the
    masks' runs as its ``rleFrString`` parses them (:mod:`deteval.masks._runs`), the calls
    spread over ``threads`` threads (the C code runs without the GIL):
    ``maskUtils.iou`` is those two functions with the GIL held, so the values are the same
    bit for bit, for any number of threads. Masks the parser leaves out (a string that is
    not ``bytes`` of pycocotools' alphabet, a size that is not an ``int``) send the whole
    call the ``maskUtils.iou`` way (docs/segm-cost.md §2.4).
    """
    out = np.zeros(len(pair_dt), dtype=np.float64)
    if len(pair_dt) == 0:
        return out
    key = image_of_dt[pair_dt] if group is None else np.asarray(group, dtype=np.int64)
    d_rank, d_first, bounds, order = _ranks_within(key, pair_dt)
    g_rank, g_first, _, g_order = _ranks_within(key, pair_gt)
    # g_order lists the pairs by (key, gt); its group bounds equal those of `order`.
    d_rows = pair_dt[order[d_first]]                 # distinct detections, group by group
    g_rows = pair_gt[g_order[g_first]]
    starts = bounds[:-1]
    n_groups = len(starts)
    n_d = np.add.reduceat(d_first.astype(np.int64), starts)
    n_g = np.add.reduceat(g_first.astype(np.int64), starts)
    d_start, g_start = np.cumsum(n_d) - n_d, np.cumsum(n_g) - n_g
    text = dt_masks if isinstance(dt_masks, MaskText) else None
    if dt_sizes is None and text is not None:
        dt_sizes = text.sizes
    d_size = (_mask_sizes(dt_masks[d_rows]) if dt_sizes is None
              else np.asarray(dt_sizes, dtype=np.int64)[d_rows])
    g_size = (_mask_sizes(gt_masks[g_rows]) if gt_runs is None
              else _record_sizes(gt_runs.records[g_rows]))
    batch = _size_batches(d_size, g_size, d_start, g_start)
    # Lay the groups out batch by batch, and each batch's masks in one list.
    groups = np.argsort(batch, kind="stable")
    d_take = _ranges(d_start[groups], n_d[groups])
    g_take = _ranges(g_start[groups], n_g[groups])
    crowd = gt_crowd.astype(np.uint8)[g_rows[g_take]]
    cuts = np.flatnonzero(np.diff(batch[groups])) + 1
    first = np.r_[0, cuts]                            # first group (in layout) of each batch
    d_edges = np.r_[0, np.cumsum(n_d[groups])]
    g_edges = np.r_[0, np.cumsum(n_g[groups])]
    d_lo, d_hi = d_edges[first], d_edges[np.r_[cuts, n_groups]]
    g_lo, g_hi = g_edges[first], g_edges[np.r_[cuts, n_groups]]
    m = d_hi - d_lo
    size = m * (g_hi - g_lo)
    matrix_start = np.cumsum(size) - size
    # One call per batch; each (m, n) matrix is Fortran-ordered: (i, j) at j * m + i.
    layout = _Layout(d_rows[d_take], g_rows[g_take], crowd, d_lo, d_hi, g_lo, g_hi,
                     matrix_start, int(size.sum()))
    c = c_routines()
    flat = None if c is None else _routine_values(c, layout, dt_masks, gt_masks, gt_runs,
                                                  resolve_threads(threads))
    if flat is None:
        flat = _wrapper_values(layout, dt_masks, gt_masks)
    # Per group (in layout order): its batch, and where its masks sit in the batch's lists.
    of_batch = np.repeat(np.arange(len(first)), np.diff(np.r_[first, n_groups]))
    d_at = np.empty(n_groups, dtype=np.int64)
    g_at = np.empty(n_groups, dtype=np.int64)
    d_at[groups] = d_edges[:-1] - d_edges[first][of_batch]
    g_at[groups] = g_edges[:-1] - g_edges[first][of_batch]
    batch_of = np.empty(n_groups, dtype=np.int64)
    batch_of[groups] = of_batch
    pair_group = np.empty(len(order), dtype=np.int64)
    pair_group[order] = np.repeat(np.arange(n_groups), np.diff(bounds))
    b = batch_of[pair_group]
    out[:] = flat[matrix_start[b] + (g_at[pair_group] + g_rank) * m[b]
                  + d_at[pair_group] + d_rank]
    return out


class _Layout(NamedTuple):
    """The calls of :func:`pair_mask_iou`: the masks (rows) in call order, and per call
    (batch) its detections ``dt[d_lo:d_hi]``, objects ``gt[g_lo:g_hi]`` and where its
    matrix starts in the values."""

    dt: np.ndarray
    gt: np.ndarray
    crowd: np.ndarray
    d_lo: np.ndarray
    d_hi: np.ndarray
    g_lo: np.ndarray
    g_hi: np.ndarray
    matrix_start: np.ndarray
    total: int


def _wrapper_values(layout: _Layout, dt_masks: Any, gt_masks: np.ndarray) -> np.ndarray:
    """Every call's matrix through pycocotools' ``maskUtils.iou`` (the Cython wrapper)."""
    api = mask_api()
    dt_list = (dt_masks.dicts(layout.dt) if isinstance(dt_masks, MaskText)
               else dt_masks[layout.dt]).tolist()
    gt_list = gt_masks[layout.gt].tolist()
    crowd = layout.crowd
    spans = zip(layout.d_lo.tolist(), layout.d_hi.tolist(), layout.g_lo.tolist(),
                layout.g_hi.tolist())
    return np.concatenate([
        np.asarray(api.iou(dt_list[d0:d1], gt_list[g0:g1], crowd[g0:g1]),
                   dtype=np.float64).ravel(order="F")
        for d0, d1, g0, g1 in spans])


def _routine_values(c: CRoutines, layout: _Layout, dt_masks: Any, gt_masks: np.ndarray,
                    gt_runs: MaskRuns | None, threads: int) -> np.ndarray | None:
    """Every call's matrix through pycocotools' ``rleIou`` (ctypes, no GIL), the calls on
    threads; None where a mask cannot be parsed here (:mod:`deteval.masks._runs`)."""
    if isinstance(dt_masks, MaskText):
        dt_strings = _TextStrings(dt_masks, layout.dt)
        dt_size = dt_masks.sizes[layout.dt]
    else:
        parts = mask_strings(dt_masks[layout.dt])
        if parts is None:
            return None
        dt_strings, dt_size = _ListStrings(parts[0]), parts[1]
    if gt_runs is None:
        parts = mask_strings(gt_masks[layout.gt])
        gt_runs = None if parts is None else mask_runs(c, *parts, threads=threads)
        if gt_runs is None:
            return None
        gt_records = gt_runs.records
    else:
        gt_records = gt_runs.records[layout.gt]
    if dt_size.dtype.kind not in "iu" or (len(dt_size) and dt_size.min() < 0):
        return None
    flat = np.zeros(layout.total, dtype=np.float64)
    lengths = dt_strings.lengths
    # Jobs of consecutive calls, ~_JOB_CHARS characters of detections' strings each: a
    # job parses its detections' strings and makes its calls (the split does not depend on
    # the threads, and each call writes its own matrix).
    chars = np.r_[0, np.cumsum(lengths)][layout.d_hi]
    job_of = chars // _JOB_CHARS
    job_bounds = np.r_[0, np.flatnonzero(np.diff(job_of)) + 1, len(job_of)]
    crowd = layout.crowd

    def job(span: tuple[int, int]) -> bool:
        lo, hi = span
        d0 = int(layout.d_lo[lo])
        d1 = int(layout.d_hi[hi - 1])
        parsed = parse_joined(c, dt_strings.joined(d0, d1), lengths[d0:d1])
        if parsed is None:
            return False
        dt_records = piece_records(*parsed, dt_size[d0:d1])    # (into parsed[0]: kept)
        dt_at, gt_at = dt_records.ctypes.data, gt_records.ctypes.data
        for b in range(lo, hi):
            m = int(layout.d_hi[b] - layout.d_lo[b])
            g0, n = int(layout.g_lo[b]), int(layout.g_hi[b] - layout.g_lo[b])
            c.rleIou(dt_at + _RECORD * (int(layout.d_lo[b]) - d0), gt_at + _RECORD * g0,
                     m, n, crowd.ctypes.data + g0,
                     flat.ctypes.data + 8 * int(layout.matrix_start[b]))
        return True

    spans = list(zip(job_bounds[:-1].tolist(), job_bounds[1:].tolist()))
    done = thread_map(job, spans, threads)
    return flat if all(done) else None


class _TextStrings:
    """The strings of some masks of a :class:`~deteval._mask_text.MaskText`."""

    def __init__(self, text: MaskText, rows: np.ndarray):
        self.text = text.text
        self.starts, self.ends = text.starts[rows], text.ends[rows]
        self.lengths = self.ends - self.starts

    def joined(self, lo: int, hi: int) -> bytes:
        """Strings ``lo:hi``, back to back."""
        slices = map(slice, self.starts[lo:hi].tolist(), self.ends[lo:hi].tolist())
        return b"".join(map(self.text.__getitem__, slices))


class _ListStrings:
    """Strings given as a list of ``bytes``."""

    def __init__(self, strings: list[bytes]):
        self.strings = strings
        self.lengths = np.fromiter(map(len, strings), np.int64, len(strings))

    def joined(self, lo: int, hi: int) -> bytes:
        """Strings ``lo:hi``, back to back."""
        return b"".join(self.strings[lo:hi])


_JOB_CHARS = 250_000    # detections' string characters per job of _routine_values
_RECORD = RLE_DTYPE.itemsize


def _record_sizes(records: np.ndarray) -> np.ndarray:
    """``[h, w]`` of RLE structs, (n, 2) int64."""
    return np.column_stack([records["h"], records["w"]]).astype(np.int64)


def _ranges(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The integers of ``[start, start + length)`` for each range, concatenated."""
    total = int(length.sum())
    offset = np.cumsum(length) - length
    return np.arange(total) + np.repeat(start - offset, length)


def _size_batches(d_size: np.ndarray, g_size: np.ndarray, d_start: np.ndarray,
                  g_start: np.ndarray) -> np.ndarray:
    """A batch number per group: groups of one mask size, at most one per size and about
    ``_BATCH_MASKS`` masks per batch; a group of mixed sizes alone in its batch
    (``d_size``, ``g_size``: the ``[h, w]`` of the detections' and objects' masks, group
    by group)."""
    n_groups = len(d_start)
    d_key = d_size[:, 0] * (1 << 32) + d_size[:, 1]
    g_key = g_size[:, 0] * (1 << 32) + g_size[:, 1]
    size = d_key[d_start]
    uniform = ((np.minimum.reduceat(d_key, d_start) == size)
               & (np.maximum.reduceat(d_key, d_start) == size)
               & (np.minimum.reduceat(g_key, g_start) == size)
               & (np.maximum.reduceat(g_key, g_start) == size))
    # The k-th group of a size (in group order) goes to slot k.
    by_size = np.lexsort((np.arange(n_groups), size))
    sorted_size = size[by_size]
    new = np.r_[True, sorted_size[1:] != sorted_size[:-1]]
    run_start = np.maximum.accumulate(np.where(new, np.arange(n_groups), 0))
    slot = np.empty(n_groups, dtype=np.int64)
    slot[by_size] = np.arange(n_groups) - run_start
    # Within a slot, consecutive chunks of about _BATCH_MASKS masks: the routine tests the
    # boxes of all m x n pairs of a call, which must stay cheaper than the calls saved.
    in_slot = np.lexsort((np.arange(n_groups), slot))
    s = slot[in_slot]
    masks = (np.diff(np.r_[d_start, len(d_size)])
             + np.diff(np.r_[g_start, len(g_size)]))[in_slot]
    before = np.cumsum(masks) - masks
    slot_base = np.maximum.accumulate(np.where(np.r_[True, s[1:] != s[:-1]], before, 0))
    chunk = np.empty(n_groups, dtype=np.int64)
    chunk[in_slot] = (before - slot_base) // _BATCH_MASKS
    batch = slot * (int(masks.sum()) + 1) + chunk      # chunk never reaches the multiplier
    batch[~uniform] = -1 - np.flatnonzero(~uniform)  # each mixed group alone
    return batch


def _mask_sizes(masks: np.ndarray) -> np.ndarray:
    """``[h, w]`` of each mask dict, shape (n, 2), int64 (one flat conversion of the sizes
    when each has two values; ``np.array`` of the list, and its errors, otherwise)."""
    sizes = list(map(operator.itemgetter("size"), masks.tolist()))
    try:
        pairs = set(map(len, sizes)) <= {2}
    except TypeError:   # (a size without a length: the general conversion words it)
        pairs = False
    if pairs:
        flat = itertools.chain.from_iterable(sizes)
        return np.fromiter(flat, np.int64, 2 * len(sizes)).reshape(-1, 2)
    return np.array(sizes, dtype=np.int64).reshape(-1, 2)
