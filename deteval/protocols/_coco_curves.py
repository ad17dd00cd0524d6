"""COCO accumulation's curves: match events in accumulation order, and the precision,
recall and score points pycocotools' ``accumulate`` reads off them (docs/protocols/coco.md §7).

:func:`deteval.protocols._coco_stages.accumulate_stage` cuts a state into pieces of whole
categories and calls :func:`accumulate_into` on each.
"""

from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING

import numpy as np

from .._sorting import descending_rank, lexorder, sorted_unique

if TYPE_CHECKING:
    from ._coco_stages import COCOState
    from .coco import COCOParams

__all__ = ["accumulate_into", "needed_true_positives", "ordered_events", "ordered_piece",
           "row_keys"]

_EPS = np.spacing(1)


def needed_true_positives(n_positive: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Smallest count ``n`` with ``n / n_positive >= threshold`` in float64, per pair.

    This is where ``searchsorted(tp_cum / npig, recThrs, side='left')`` lands, found with the
    same float division so that recall points on a boundary (docs/protocols/coco.md §7.7) agree.
    Each distinct count is computed once (a row depends on its count alone): the (K, A)
    counts of an evaluation take few values.
    """
    counts = np.asarray(n_positive)
    if counts.size >= 64:
        values = sorted_unique(counts.ravel())
        if 2 * len(values) <= counts.size:
            rows = _needed(values, thresholds).take(np.searchsorted(values, counts.ravel()),
                                                    axis=0)
            return rows.reshape(counts.shape + rows.shape[1:])
    return _needed(counts, thresholds)


def _needed(n_positive: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    npig = n_positive[..., None].astype(np.int64)
    thr = thresholds[None, :]
    # Clipping keeps the guess in int64 range; thresholds beyond [0, 1] are never reached
    # (or always reached), which the exact test below still decides.
    guess = np.maximum(np.ceil(np.clip(thr, -1.0, 2.0) * npig).astype(np.int64), 0)
    need = guess + 1
    for candidate in (guess, guess - 1):
        ok = (candidate >= 0) & (candidate / np.maximum(npig, 1) >= thr)
        need = np.where(ok, candidate, need)
    return need


# (collections.namedtuple, not typing.NamedTuple: a class of typing's compiles each field's
# annotation at import, several times the cost; docs/startup.md §2)
_Events = namedtuple("_Events", ["order", "at", "full_pos", "ignored", "out", "rank"])
_Events.__doc__ = """Match events in accumulation order (see :func:`ordered_events`): ``order``
the state rows by (category, score, image, rank); per event, ``at`` its area * T + threshold,
``full_pos`` the position of its row in ``order``, ``ignored`` (matched an ignored object),
``out`` (its row is outside the event's area range), ``rank`` its row's rank in its group."""


def ordered_events(state: COCOState, n_t: int) -> _Events:
    """Rows in accumulation order, and match events sorted by (area, threshold, position)."""
    dt_k = np.asarray(state.category, dtype=np.int64)
    rank = np.asarray(state.rank, dtype=np.int64)
    score_rank = (state.score_rank if state.score_rank is not None
                  else descending_rank(state.score)[0])
    n = len(state)
    # Accumulation order: category, descending score, image, rank inside the image (unique).
    order = lexorder([dt_k, score_rank, state.image, rank], rows_are_unique=True)
    # Match events sorted once by (area, threshold, position in that order); every smaller
    # max_det keeps a subsequence of the order, so the events stay sorted after filtering.
    full_pos = np.empty(n, dtype=np.int64)
    full_pos[order] = np.arange(n)
    ev_at = np.asarray(state.event_at, dtype=np.int64)
    ev_row = np.asarray(state.event_row, dtype=np.int64)
    by_event = lexorder([ev_at, full_pos.take(ev_row)], rows_are_unique=True)
    # (take and compress: numpy's plain and boolean indexing are several times slower on
    # arrays of this size.)
    ev_at, ev_dt = ev_at.take(by_event), ev_row.take(by_event)
    ev_out = state.out_of_range.ravel().take(ev_at // n_t * n + ev_dt)
    return _Events(order=order, at=ev_at, full_pos=full_pos.take(ev_dt),
                   ignored=state.event_ignored.take(by_event), out=ev_out,
                   rank=rank.take(ev_dt))


_Ordered = namedtuple("_Ordered", ["k_start", "rank", "score", "out", "bits", "ev_code",
                                   "ev_rank"])
_Ordered.__doc__ = """A piece's rows in accumulation order and its match events (see
:func:`ordered_piece`). Positions are in that order.

k_start : (K + 1,) first position of each category (and the end)
rank : (n,) rank in the row's (image, category) group
score : (n,)
out : (A, n) bool: outside each area range
bits : int, the width of a position
ev_code : (e,) int64, increasing: ((at << bits | position) << 2) | out << 1 | ignored: the
    event's area * T + threshold, its row's position, the row outside that area, matched an
    ignored object (not both out and ignored: such events change nothing)
ev_rank : (e,) rank of the event's row
"""


RowKeys = namedtuple("RowKeys", ["key", "k_shift", "rank_bits", "out"])
RowKeys.__doc__ = """The accumulation sort key of every state row, packed once for all pieces
(see :func:`row_keys`): ``key`` uint64 (n,), the category, score rank, image and rank as bit
fields; ``k_shift`` the category field's lowest bit; ``rank_bits`` the rank field's width (the
lowest field); ``out`` uint8 (n,), bit a set when the row is outside area range a."""


def row_keys(state: COCOState) -> RowKeys | None:
    """Each row's (category, score rank, image, rank) packed as bit fields of one uint64,
    and its out-of-range flags as the bits of one byte; None when they do not fit (more
    than 8 area ranges, or wider fields): pieces then gather the columns themselves.

    A piece gathers these two columns (and the scores) instead of six: at 500k rows the
    gathers, which read the state's columns out of cache, are most of a piece's ordering.
    """
    n_a, n = state.out_of_range.shape
    if n_a > 8 or n == 0:
        return None
    score_rank = (state.score_rank if state.score_rank is not None
                  else descending_rank(state.score)[0])
    columns = (state.category, score_rank, state.image, state.rank)
    widths = [max(int(c.max()), 1).bit_length() for c in columns]
    if sum(widths) > 63 or min(int(c.min()) for c in columns) < 0:
        return None
    key = np.zeros(n, dtype=np.uint64)
    shift = 0
    for column, width in zip(columns[::-1], widths[::-1]):
        part = column.astype(np.uint64)
        part <<= np.uint64(shift)
        key |= part
        shift += width
    out = np.zeros(n, dtype=np.uint8)
    for a in range(n_a):
        out |= state.out_of_range[a].view(np.uint8) << np.uint8(a)
    return RowKeys(key=key, k_shift=shift - widths[0], rank_bits=widths[-1], out=out)


def ordered_piece(state: COCOState, n_t: int, n_k: int, *, lo: int = 0,
                  rows: np.ndarray | None = None,
                  events: np.ndarray | None = None, position: np.ndarray | None = None,
                  keys: RowKeys | None = None) -> _Ordered:
    """The rows ``rows`` of ``state`` (None: all; categories ``lo`` on) in accumulation order
    (category, score rank, image, rank: unique), and the match events ``events`` (the events
    of those rows; None: all) sorted by (area, threshold, position in that order).

    ``n_k`` is the piece's number of categories. ``keys`` (:func:`row_keys`, or None) holds
    the rows' sort keys. ``position`` (one int per state row; written only at ``rows``, so
    pieces can share it) receives each row's position.
    """
    # (indices as intp once: ``take`` converts other integer types on every call)
    rows = None if rows is None else rows.astype(np.intp, copy=False)
    events = None if events is None else events.astype(np.intp, copy=False)

    def piece(column: np.ndarray, subset: np.ndarray | None = rows) -> np.ndarray:
        return column if subset is None else column.take(subset)

    n = len(state) if rows is None else len(rows)
    bits = max(n - 1, 1).bit_length()
    n_a = state.out_of_range.shape[0]
    if keys is not None and ((n_k << keys.k_shift) - 1).bit_length() + bits <= 64:
        # The piece's keys, categories from 0, with the row's index in the low bits: sorting
        # the values orders the rows (all keys are distinct).
        packed = keys.key.copy() if rows is None else keys.key.take(rows)
        packed -= np.uint64(lo << keys.k_shift)
        packed <<= np.uint64(bits)
        packed |= np.arange(n, dtype=np.uint64)
        packed.sort()
        order = (packed & np.uint64((1 << bits) - 1)).view(np.int64)
        packed >>= np.uint64(bits)
        rank_in_order = (packed & np.uint64((1 << keys.rank_bits) - 1)).view(np.int64)
        packed >>= np.uint64(keys.k_shift)
        k_in_order = packed.view(np.int64)
        flags = piece(keys.out).take(order)
        out = np.empty((n_a, n), dtype=bool)
        for a in range(n_a):
            np.not_equal(flags & np.uint8(1 << a), 0, out=out[a])
        del flags
    else:
        k = piece(state.category).astype(np.int64)
        k -= lo
        rank = piece(state.rank).astype(np.int64, copy=False)
        score_rank = (piece(state.score_rank) if state.score_rank is not None
                      else descending_rank(piece(state.score))[0])
        order = lexorder([k, score_rank, piece(state.image), rank], rows_are_unique=True)
        del score_rank
        k_in_order, rank_in_order = k.take(order), rank.take(order)
        out = state.out_of_range.take(order if rows is None else rows.take(order), axis=1)
        del k, rank
    score = piece(state.score).take(order)
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.arange(n)
    if rows is None:
        position = inverse
    else:
        if position is None:
            position = np.empty(len(state), dtype=np.int64)
        position[rows] = inverse
    del inverse
    # Each event as one integer (a row has one event per (area, threshold) at most: all
    # distinct): ((area * T + threshold) << bits | position) << 2 | out << 1 | ignored.
    ev_pos = position.take(piece(state.event_row, events).astype(np.intp, copy=False))
    code = piece(state.event_at, events).astype(np.int64)
    flat = code // n_t                              # the event's (area, position)
    flat *= n
    flat += ev_pos
    ev_out = out.ravel().take(flat)
    del flat
    code <<= bits
    code |= ev_pos
    del ev_pos
    code <<= 2
    code |= ev_out << 1
    ignored = piece(state.event_ignored, events)
    code |= ignored
    # An ignored match on a row outside the event's area range changes nothing (that row
    # is ignored there, matched or not; pycocotools' dtIg): dropped before sorting. These
    # are most of the ignored matches (objects outside an area range, detections too).
    code = code.compress(~(ignored & ev_out))
    del ignored, ev_out
    code.sort()
    ev_pos = code >> 2
    ev_pos &= (1 << bits) - 1
    k_start = np.searchsorted(k_in_order, np.arange(n_k + 1), side="left")
    return _Ordered(k_start=k_start, rank=rank_in_order, score=score, out=out, bits=bits,
                    ev_code=code, ev_rank=rank_in_order.take(ev_pos))


def accumulate_into(p: COCOParams, npig: np.ndarray, state: COCOState, out, *, lo: int = 0,
                    rows: np.ndarray | None = None, events: np.ndarray | None = None,
                    position: np.ndarray | None = None, keys: RowKeys | None = None) -> None:
    """Accumulate the categories of ``npig`` (K, A) from ``state`` into ``out``, the
    (precision, recall, scores) views of those categories: the rows ``rows`` and events
    ``events`` of the state (None: all), categories ``lo`` to ``lo + K`` (see
    :func:`ordered_piece`)."""
    precision, recall, scores = out
    n_k = len(npig)
    thresholds_r = np.asarray(p.recall_thresholds)
    n_t, n_r, n_a = len(p.iou_thresholds), len(thresholds_r), len(p.area_ranges)
    need = needed_true_positives(npig, thresholds_r)          # (K, A, R)
    rows_in_order = ordered_piece(state, n_t, n_k, lo=lo, rows=rows, events=events,
                                  position=position, keys=keys)
    top_rank = int(rows_in_order.rank.max(initial=-1))
    sizes = (n_t, n_r, n_k, n_a)
    increasing = bool(np.all(thresholds_r[1:] >= thresholds_r[:-1]))
    # The settings from the largest: a category whose rows all rank below a setting keeps
    # them all there, as in the setting done before (larger): the same points, copied.
    top = _top_rank(rows_in_order) if len(p.max_detections) > 1 else None
    done = None
    for mi in sorted(range(len(p.max_detections)), key=lambda m: -p.max_detections[m]):
        max_det = p.max_detections[mi]
        views = tuple(a[..., mi] for a in (precision, recall, scores))
        chosen = None
        if done is not None:
            changed = top >= max_det
            # Copied when at least a quarter of the categories are the same (the copy writes
            # every point once); a setting where nearly all change is computed whole.
            if 4 * np.count_nonzero(changed) <= 3 * n_k:
                for a in (precision, recall, scores):
                    _copy_setting(a, done, mi)
                if not changed.any():
                    continue
                chosen = changed
        # (one function per setting: its temporaries are freed before the next one's)
        curves = _max_det_curves(rows_in_order, max_det, top_rank < max_det, sizes)
        _write_points(*curves, npig, need, views, sizes=sizes, increasing=increasing,
                      chosen=chosen)
        done = mi


def _copy_setting(a: np.ndarray, src: int, dst: int) -> None:
    """``a[..., dst] = a[..., src]``: through a 2-D view when ``a`` is contiguous (one
    strided loop, several times faster than numpy's on the N-D views of a setting)."""
    if a.flags.c_contiguous:
        a = a.reshape(-1, a.shape[-1])
    a[..., dst] = a[..., src]


def _top_rank(o: _Ordered) -> np.ndarray:
    """(K,) the highest rank of each category's rows (-1 without rows)."""
    top = np.full(len(o.k_start) - 1, -1, dtype=np.int64)
    filled = np.flatnonzero(o.k_start[1:] > o.k_start[:-1])
    if len(filled):    # (a category's rows run to the next one's first: empty ones skipped)
        top[filled] = np.maximum.reduceat(o.rank, o.k_start[filled])
    return top


def _max_det_curves(o: _Ordered, max_det: int, every: bool,
                    sizes: tuple[int, int, int, int]):
    """The TP events of one max-detections setting, from the ordered rows and match events
    ``o`` (``every``: all rows are kept): their precision, the number of TP events of each
    segment (area, threshold, category), their positions in the rows of the setting, the
    scores of those rows, and each category's first row and number of rows (see
    :func:`_write_points`).

    The TP events come segment by segment. What a TP event's counts need of its segment
    (the segment's first row, TP events, and out-of-range rows and in-range events before
    it) is one number per segment, repeated over its TP events; the rest are prefix counts
    read at the event: no per-event lookup of its segment.
    """
    n_t, n_r, n_k, n_a = sizes
    bits = o.bits
    pos_mask = (1 << bits) - 1
    if every:
        out_sel, score_sel, code, k_start = o.out, o.score, o.ev_code, o.k_start
        e_key = code >> 2                           # (at << bits | position), increasing
        e_pos = e_key & pos_mask
    else:
        in_sel = o.rank < max_det
        kept = np.flatnonzero(in_sel)
        out_sel, score_sel = o.out.take(kept, axis=1), o.score.take(kept)
        del kept
        # Each row's position among the kept rows (leading 0: kept rows before it).
        sel_prefix = np.zeros(len(in_sel) + 1, dtype=np.int64)
        np.cumsum(in_sel, out=sel_prefix[1:])
        del in_sel
        k_start = sel_prefix.take(o.k_start)
        # Match events that survive: those on kept rows; their rows renumbered.
        code = o.ev_code.compress(o.ev_rank < max_det)
        e_key = code >> 2
        e_pos = sel_prefix.take(e_key & pos_mask)
        del sel_prefix
        e_key >>= bits
        e_key <<= bits
        e_key |= e_pos
    seg_start, n_det = k_start[:-1], np.diff(k_start)               # (K,)
    n_sel = out_sel.shape[1]
    # Out-of-range detections counted up to each position (prefix sums, leading 0).
    # (int32 halves the memory of this array; counts past 2**31 - 1 need int64)
    count_type = np.int32 if n_sel < np.iinfo(np.int32).max else np.int64
    out_prefix = np.empty((n_a, n_sel + 1), dtype=count_type)
    out_prefix[:, 0] = 0
    out_sel = out_sel.view(np.uint8)
    for a in range(n_a):
        np.cumsum(out_sel[a], dtype=count_type, out=out_prefix[a, 1:])
    del out_sel

    # The events of this max_det are sorted by (area, threshold, position): the events of
    # one segment (area * T + threshold) * K + category are contiguous, in segment order.
    # Each temporary is dropped once used: this is the peak of the evaluation's memory.
    n_at = n_a * n_t
    # Each segment's first event (and the end of the last), and each area's.
    seg_first_event = np.empty(n_at * n_k + 1, dtype=np.int64)
    seg_lo = (np.arange(n_at)[:, None] << bits) + seg_start
    seg_first_event[:-1] = np.searchsorted(e_key, seg_lo.ravel(), side="left")
    seg_first_event[-1] = len(e_key)
    area_first_event = np.searchsorted(e_key, (np.arange(n_a + 1) * n_t) << bits)
    del e_key, seg_lo
    # Prefix counts over the events (leading 0): TP events, and events on rows inside the
    # event's area range (TP or ignored).
    flag = code & 1
    flag ^= 1                                               # TP: not ignored
    tp_events = np.flatnonzero(flag)
    tp_prefix = np.zeros(len(code) + 1, dtype=np.int64)
    np.cumsum(flag, out=tp_prefix[1:])
    np.right_shift(code, 1, out=flag)
    flag &= 1
    flag ^= 1                                               # inside the area range
    inside_prefix = np.zeros(len(code) + 1, dtype=np.int64)
    np.cumsum(flag, out=inside_prefix[1:])
    del flag, code
    first_tp = tp_prefix.take(seg_first_event)              # (n_seg + 1,)
    tp_count = np.diff(first_tp)
    first_tp = first_tp[:-1]
    t_pos = e_pos.take(tp_events)
    del e_pos
    # A TP event j of segment s (area a, category k) at position p, with tp = its place
    # among the segment's TP events (from 1) and fp = the rows of k from its first to p
    # that are inside a's range and not matched at (a, t):
    #   tp = j + 1 - first_tp[s]
    #   tp + fp = (j + 1) + (p + 1) - outs(a, p + 1) - inside(j) + C[s]
    # outs: out-of-range rows before position p + 1; inside: in-range events up to j;
    # C[s] = outs(a, first row of k) + inside(s's first event) - first row - first_tp[s].
    seg_area = np.repeat(np.arange(n_a), n_t * n_k)
    seg_row = np.tile(seg_start, n_at)
    c_seg = out_prefix.ravel().take(seg_area * (n_sel + 1) + seg_row)
    c_seg += inside_prefix.take(seg_first_event[:-1])
    c_seg -= seg_row
    c_seg -= first_tp
    del seg_area, seg_row
    n_tp = len(t_pos)
    total = np.arange(2, n_tp + 2, dtype=np.int64)          # (j + 1) + 1
    total += t_pos
    tp_events += 1
    total -= inside_prefix.take(tp_events)
    del inside_prefix, tp_events
    for a in range(n_a):
        lo, hi = tp_prefix.take(area_first_event[a:a + 2])
        total[lo:hi] -= out_prefix[a].take(t_pos[lo:hi] + 1)
    del out_prefix, tp_prefix
    total += np.repeat(c_seg, tp_count)
    tp_cum = np.arange(1, n_tp + 1, dtype=np.int64)
    tp_cum -= np.repeat(first_tp, tp_count)
    tp_f = tp_cum.astype(np.float64)
    # pycocotools' tp / (fp + tp + eps), fp + tp exact as an integer
    pr = total.astype(np.float64)
    pr += _EPS
    np.divide(tp_f, pr, out=pr)
    return pr, tp_count, t_pos, score_sel, seg_start, n_det


def _write_points(pr, tp_count, t_pos, score_sel, seg_start, n_det, npig, need, out, *, sizes,
                  increasing, chosen=None):
    """Write recall, and precision and score at each recall threshold, of every segment
    (area, threshold, category) into ``out``, the (precision, recall, scores) views of one
    max-detections setting, shapes (T, R, K, A), (T, K, A), (T, R, K, A). Segments without
    positives get -1, those with positives and no detections 0. ``chosen`` (bool (K,), or
    None: all): the categories whose segments are written; the others are left as they are.

    pycocotools: the point of a recall threshold is the ``need``-th TP of the segment
    (need >= 1) or its first detection (need == 0); its precision is the running maximum of
    ``pr`` from there to the segment's end, its score that detection's. It is reached when
    that detection exists; pycocotools fills the points in the given order and stops at the
    first one not reached (an IndexError caught around the loop), so with unsorted
    (``increasing`` false) thresholds everything after it stays 0.

    ``pr`` is the precision at each TP event (``tp_count`` of each segment, segment by
    segment), ``t_pos`` its position in
    the rows of this max_det in accumulation order, whose scores are ``score_sel``. Linear in
    the TP events and the points written.
    """
    precision, recall, scores = out
    n_t, n_r, n_k, n_a = sizes
    n_tp = len(pr)
    a_grid = np.repeat(np.arange(n_a), n_t * n_k)
    k_grid = np.tile(np.arange(n_k), n_a * n_t)
    positive = npig[k_grid, a_grid] > 0
    is_live = positive & (n_det.take(k_grid) > 0)
    picked = None if chosen is None else chosen.take(k_grid)
    if picked is not None:
        is_live &= picked
    if increasing and _reached_points(pr, tp_count, t_pos, score_sel, seg_start, npig, need,
                                      out, is_live, positive, a_grid, k_grid, sizes=sizes,
                                      picked=picked):
        return
    # Segments not live: -1 without positives, 0 with (every point of a live one is
    # written below).
    dead = np.flatnonzero(~is_live if picked is None else ~is_live & picked)
    if len(dead):
        a_d, k_d = a_grid.take(dead), k_grid.take(dead)
        t_d = dead // n_k % n_t
        fill = np.where(positive.take(dead), 0.0, -1.0)
        recall[t_d, k_d, a_d] = fill
        precision.transpose(3, 0, 2, 1)[a_d, t_d, k_d] = fill[:, None]
        scores.transpose(3, 0, 2, 1)[a_d, t_d, k_d] = fill[:, None]
    live = np.flatnonzero(is_live)
    if len(live) == 0:
        return
    a_l, k_l = a_grid.take(live), k_grid.take(live)
    t_l = live // n_k % n_t
    count = tp_count.take(live)
    first = (np.cumsum(tp_count) - tp_count).take(live)
    # Recall: final TP count over positives.
    recall[t_l, k_l, a_l] = count / npig[k_l, a_l]
    if n_r == 0:
        return
    need_l = need.reshape(n_k * n_a, n_r).take(k_l * n_a + a_l, axis=0)     # (L, R)
    unreached = need_l > count[:, None]           # need == 0: the first detection exists
    if not increasing:
        np.logical_or.accumulate(unreached, axis=1, out=unreached)
    at_first = need_l == 0
    # The TP event of each point: its need-th TP, clipped to [first, last] TP of its segment
    # (need_l turned into it in place); index n_tp (a 0 appended) for segments without TPs.
    end = np.where(count > 0, first + count, n_tp)
    start = np.maximum(need_l, 1, out=need_l)
    np.minimum(start, np.maximum(count, 1)[:, None], out=start)
    start += (first - 1)[:, None]
    start[count == 0] = n_tp
    ss = np.r_[score_sel.take(t_pos), 0.0].take(start)
    np.copyto(ss, score_sel.take(seg_start.take(k_l))[:, None], where=at_first)
    q = _running_max(pr, None, tp_count, start, end, increasing=increasing)
    q[unreached] = 0.0
    ss[unreached] = 0.0
    # Segment (a, t, k) is out[t, :, k, a].
    precision.transpose(3, 0, 2, 1)[a_l, t_l, k_l] = q
    scores.transpose(3, 0, 2, 1)[a_l, t_l, k_l] = ss



def _reached_points(pr, tp_count, t_pos, score_sel, seg_start, npig, need, out, is_live,
                    positive, a_grid, k_grid, *, sizes, picked=None) -> bool:
    """:func:`_write_points` with increasing recall thresholds, on the points reached only;
    returns False (nothing written) where that is not the cheaper way.

    With increasing thresholds each segment's ``need`` is non-decreasing, so the points it
    reaches (``need <= `` its TP count) are a prefix of its row and the rest are 0
    (precision and score). The views are filled with 0 and only the reached points are
    computed and written: with few TP events per segment (segm, keypoints) most points
    are not reached (the bench's segm case: 31%). Its running maxima are found by doubling
    (:func:`_suffix_maxima`, ~``n_tp * passes``), so it is taken where that and the
    reached points (at most ``L * R``) cost less than the full computation can
    (``n_tp + 3 * L * R`` when linear). The values are those of the full computation, bit
    for bit. ``picked`` (bool per segment, or None: all): the segments written (``is_live``
    is false outside them).
    """
    precision, recall, scores = out
    n_t, n_r, n_k, n_a = sizes
    n_tp = len(pr)
    need_rows = need.reshape(n_k * n_a, n_r)
    if (n_r == 0 or not (_plain_strides(precision) and _plain_strides(scores))
            or need_rows.min() < 0
            or (n_r > 1 and bool((need_rows[:, 1:] < need_rows[:, :-1]).any()))):
        return False
    live = np.flatnonzero(is_live)
    passes = int(tp_count.max(initial=1) - 1).bit_length()
    if n_tp * (passes - 1) > 2 * len(live) * n_r:
        return False
    count = tp_count.take(live)
    row = k_grid.take(live) * n_a + a_grid.take(live)
    # Points reached per live segment: a search of each row's count in its row of ``need``
    # (rows laid end to end, each shifted above the one before).
    width = max(int(need_rows.max(initial=0)), int(count.max(initial=0))) + 1
    keys = (np.arange(n_k * n_a)[:, None] * width + need_rows).ravel()
    n_reach = np.searchsorted(keys, row * width + count, side="right") - row * n_r
    n_points = int(n_reach.sum())
    if picked is None:
        precision.fill(0.0)
        scores.fill(0.0)
        dead = np.flatnonzero(~positive)
        none = np.flatnonzero(~is_live & positive)
    else:
        rows = np.flatnonzero(picked)
        a_p, k_p, t_p = a_grid.take(rows), k_grid.take(rows), rows // n_k % n_t
        precision.transpose(3, 0, 2, 1)[a_p, t_p, k_p] = 0.0
        scores.transpose(3, 0, 2, 1)[a_p, t_p, k_p] = 0.0
        dead = np.flatnonzero(~positive & picked)
        none = np.flatnonzero(~is_live & positive & picked)
    if len(dead):                                   # no positives: -1 (no detections: 0)
        a_d, k_d, t_d = a_grid.take(dead), k_grid.take(dead), dead // n_k % n_t
        recall[t_d, k_d, a_d] = -1.0
        precision.transpose(3, 0, 2, 1)[a_d, t_d, k_d] = -1.0
        scores.transpose(3, 0, 2, 1)[a_d, t_d, k_d] = -1.0
    recall[none // n_k % n_t, k_grid.take(none), a_grid.take(none)] = 0.0
    a_l, k_l = a_grid.take(live), k_grid.take(live)
    t_l = live // n_k % n_t
    recall[t_l, k_l, a_l] = count / npig[k_l, a_l]
    # The reached points, segment by segment: point i of segment l is at r = i - before[l].
    before = np.cumsum(n_reach) - n_reach
    i = np.arange(n_points)
    need_p = need_rows.ravel().take(np.repeat(row * n_r - before, n_reach) + i)
    # need == 0: the score of the segment's first detection. (The zeros of a row of
    # ``need``, non-decreasing, are its first points: found per segment, not per point.)
    n_zero = np.minimum(np.count_nonzero(need_rows == 0, axis=1).take(row), n_reach)
    owner = np.repeat(np.arange(len(live)), n_zero)
    at_first = np.arange(len(owner)) + np.repeat(before - (np.cumsum(n_zero) - n_zero), n_zero)
    # The TP event of each point: its need-th TP of the segment (count >= need >= 1), or
    # index n_tp (the 0 appended) where need == 0 and the segment has no TP; need == 0
    # counts as 1 (at_first).
    shift = np.where(count > 0, (np.cumsum(tp_count) - tp_count).take(live) - 1, n_tp - 1)
    start = need_p
    start += np.repeat(shift, n_reach)
    start[at_first] += 1
    ss = np.r_[score_sel.take(t_pos), 0.0].take(start)
    ss[at_first] = score_sel.take(seg_start.take(k_l.take(owner)))
    q = _suffix_maxima(pr, None, tp_count, passes).take(start)
    at, steps = None, None
    for view, values in ((precision, q), (scores, ss)):
        # Segment (a, t, k) is view[t, :, k, a]: each point's element, written at once
        # (the places once when both views have the same strides).
        flat, view_steps = _elements(view)
        if view_steps != steps:
            steps = view_steps
            s_t, s_r, s_k, s_a = steps
            at = np.repeat(t_l * s_t + k_l * s_k + a_l * s_a - before * s_r, n_reach)
            at += i * s_r
        flat[at] = values
    return True


def _plain_strides(view: np.ndarray) -> bool:
    """Whether :func:`_elements` can address ``view``."""
    return view.size > 0 and all(s > 0 and s % view.itemsize == 0 for s in view.strides)


def _elements(view: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """A 1-D view of the memory a non-empty ``view`` spans, from its first element, and its
    strides in elements: ``view[t, r, k, a]`` is ``flat[t * s_t + r * s_r + k * s_k + a *
    s_a]``. The strides must be positive multiples of the item size (see
    :func:`_plain_strides`)."""
    steps = [s // view.itemsize for s in view.strides]
    span = sum((n - 1) * s for n, s in zip(view.shape, steps)) + 1
    flat = np.lib.stride_tricks.as_strided(view, shape=(span,), strides=(view.itemsize,))
    return flat, steps


def _suffix_maxima(pr: np.ndarray, seg: np.ndarray | None, tp_count: np.ndarray,
                   passes: int) -> np.ndarray:
    """Each TP event's maximum of ``pr`` to its segment's end, and a 0.0 appended (shape
    ``(len(pr) + 1,)``), by doubling: pass ``j`` folds in the event ``2**j`` further on when
    it is in the same segment (``passes``: enough for the longest segment; see
    :func:`_running_max`)."""
    n_tp = len(pr)
    suffix = np.empty(n_tp + 1)
    suffix[:n_tp] = pr
    suffix[n_tp] = 0.0
    if seg is None:
        seg = np.repeat(np.arange(len(tp_count)), tp_count)
    step = 1
    for _ in range(passes):
        same = seg[step:] == seg[:-step]
        np.maximum(suffix[:n_tp - step], suffix[step:n_tp], out=suffix[:n_tp - step],
                   where=same)
        step *= 2
    return suffix


def _running_max(pr: np.ndarray, seg: np.ndarray | None, tp_count: np.ndarray,
                 start: np.ndarray, end: np.ndarray, *, increasing: bool) -> np.ndarray:
    """``max(pr[start[l, r]:end[l]])`` for every point (0.0 where ``start`` is ``len(pr)``):
    the running maximum of the precision from each point's TP event to its segment's end.

    ``pr`` holds the TP events of the segments one after another (``seg`` non-decreasing,
    or None: made from ``tp_count`` when needed; ``tp_count`` events per segment);
    ``start`` (L, R) lies in its row's segment, whose events end at ``end`` (L,). Two
    exact ways, the cheaper for the sizes (max only picks):

    * small inputs (few TP events for many points): each event's maximum to its segment's
      end, by doubling (pass ``j`` folds in the event ``2**j`` further on when it is in
      the same segment; as many passes as the longest segment needs), then read at the
      starts: ~``n_tp * passes + L * R``;
    * otherwise, linear: the starts in increasing order cut each row's ``[first start,
      end)`` into blocks; each block's maximum (reduceat; equal starts give the value at
      the start, which is in range), then the maximum over the later blocks:
      ~``n_tp + 3 * L * R``.
    """
    n_tp = len(pr)
    passes = int(tp_count.max(initial=1) - 1).bit_length()
    if n_tp * passes <= start.size:
        return _suffix_maxima(pr, seg, tp_count, passes).take(start)
    order = None if increasing else np.argsort(start, axis=1, kind="stable")
    bounds = np.empty((len(start), start.shape[1] + 1), dtype=np.int64)
    bounds[:, :-1] = start if order is None else np.take_along_axis(start, order, axis=1)
    bounds[:, -1] = end
    block = np.maximum.reduceat(np.r_[pr, 0.0], bounds.ravel()).reshape(bounds.shape)
    q = np.empty(start.shape)
    np.maximum.accumulate(block[:, -2::-1], axis=1, out=q[:, ::-1])
    if order is not None:
        q_sorted, q = q, np.empty(q.shape)
        np.put_along_axis(q, order, q_sorted, axis=1)
    return q
