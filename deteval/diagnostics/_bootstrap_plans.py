"""The weighted COCO accumulation behind :mod:`deteval.diagnostics.bootstrap` (and LVIS's and
CrowdPose's, which accumulate as COCO does with one max-detections setting): what does not
depend on the image weights is laid out once (the "plans"); each resample then costs a few
vectorised passes over the true-positive events, the rows in each area range and the
events that are not false positives.

The rules (and what the numbers equal) are in ``docs/diagnostics/bootstrap.md`` §3; how the
passes are laid out, and why they give pycocotools' numbers bit for bit, is in §13.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import numpy as np

__all__ = ["COCOPlan", "PrecisionPlan", "Workspace", "check_recall_thresholds",
           "count_dtype", "prefix"]

_EPS = np.spacing(1)
_NEED_TABLE = 8192        # most positives a category's table of needed TP counts covers
#: Merge the TP events into runs (``PrecisionPlan._merge_runs``); False: one run per event.
MERGE_RUNS = True
#: Take a resample's AP-type numbers from the per-segment sums over the recall thresholds
#: (``PrecisionPlan.sums``, docs §13); False: from the precision grid (``curve``), as the
#: evaluation's own numbers always are.
SUM_RECALL = True


def prefix(values: np.ndarray, dtype: Any) -> np.ndarray:
    """``[0, cumsum(values)]`` in ``dtype`` (an integer type; its own loop, no casts).

    >>> prefix(np.array([2, 0, 1], np.int32), np.int32).tolist()
    [0, 2, 2, 3]
    """
    out = np.empty(len(values) + 1, dtype)
    out[0] = 0
    np.cumsum(values, out=out[1:])
    return out


class Workspace(threading.local):
    """Scratch arrays of one thread, reused from resample to resample: a fresh array of a
    few MB is mapped anew by the allocator each time, and its page faults can cost more
    than the arithmetic on it. Nothing that is returned may live in one.

    >>> work = Workspace()
    >>> a = work.get("x", 3, np.int32)
    >>> work.get("x", 2, np.int32).base is a.base
    True
    """

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, n: int, dtype: Any) -> np.ndarray:
        """An uninitialised array ``name`` of ``n`` items of ``dtype``."""
        array = self.arrays.get(name)
        if array is None or array.dtype != dtype or len(array) < n:
            array = self.arrays[name] = np.empty(max(n, 1), dtype)
        return array[:n]


def count_dtype(w: np.ndarray, per_image: int) -> type:
    """int32 when no weighted count of ``w`` can exceed it (``per_image``: the most counted
    items of one image, over every area range and threshold), else int64."""
    bound = int(w.sum(dtype=np.int64)) * max(int(per_image), 1)
    return np.int32 if bound < 2**31 - 1 else np.int64


def check_recall_thresholds(params: Any) -> None:
    """ValueError unless ``params.recall_thresholds`` increase (the envelope and the recall
    points read them in that order)."""
    if np.any(np.diff(np.asarray(params.recall_thresholds, dtype=np.float64)) < 0):
        raise ValueError("bootstrap needs recall_thresholds in increasing order; got "
                         f"{tuple(params.recall_thresholds)}")


class COCOPlan:
    """What the weighted accumulation of one COCO state needs, weights aside.

    Precision is computed for the max-detections settings the AP numbers read (one
    :class:`PrecisionPlan` each), recall for the (area, max-detections) pairs the AR numbers
    read; other entries of the arrays stay -1. The protocols that accumulate as COCO with
    one max-detections setting (LVIS, CrowdPose) build theirs with :meth:`single`.
    """

    def __init__(self, ctx: Any, state: Any, specs: tuple) -> None:
        p = ctx.params
        literal = 20 if p.iou_type == "keypoints" else 100
        m_star = (p.max_detections.index(literal) if literal in p.max_detections
                  else len(p.max_detections) - 1)
        max_dets = p.max_detections
        read_ap = {max_dets[m_star]}
        read_ar = set()
        for is_ap, _, area, m in specs:
            value = literal if m is None else max_dets[m]
            if is_ap:
                read_ap.add(value)
            else:
                read_ar |= {(a, i) for a, label in enumerate(p.area_labels) if label == area
                            for i, v in enumerate(max_dets) if v == value}
        # Positives: the counted objects of each (area, object).
        gt = ctx.dataset.gt
        ranges = np.asarray(p.area_ranges)
        counted = (ctx.gt_k >= 0)[None, :] & ~(ctx.gt_ignore[None, :]
                                               | (gt.area[None, :] < ranges[:, :1])
                                               | (gt.area[None, :] > ranges[:, 1:]))
        self._build(state, p, ctx.n_k, ctx.gt_k, ctx.gt_img, counted, m_star,
                    read_ap & set(max_dets), read_ar)

    @classmethod
    def single(cls, state: Any, params: Any, n_k: int, gt_k: np.ndarray, gt_img: np.ndarray,
               counted: np.ndarray, max_det: int) -> COCOPlan:
        """The plan of one max-detections setting ``max_det`` (LVIS: every kept result;
        CrowdPose: 20): precision and recall at every (threshold, category, area).

        Parameters
        ----------
        state : COCOState
            The evaluation's accumulation state.
        params : object
            ``iou_thresholds``, ``recall_thresholds`` (increasing) and ``area_ranges``.
        n_k : int
            Category positions.
        gt_k, gt_img : ndarray of int, shape (n_gt,)
            Each object's category and image position, -1 where not evaluated.
        counted : ndarray of bool, shape (A, n_gt)
            The objects counted as positives in each area range.
        max_det : int
            Rows of rank ``>= max_det`` in their (image, category) group are left out.
        """
        check_recall_thresholds(params)
        plan = cls.__new__(cls)
        settings = SimpleNamespace(iou_thresholds=params.iou_thresholds,
                                   recall_thresholds=params.recall_thresholds,
                                   area_ranges=params.area_ranges, max_detections=(max_det,))
        plan._build(state, settings, n_k, gt_k, gt_img, counted, 0, {max_det},
                    {(a, 0) for a in range(len(params.area_ranges))})
        return plan

    def _build(self, state: Any, p: Any, n_k: int, gt_k: np.ndarray, gt_img: np.ndarray,
               counted: np.ndarray, m_star: int, read_ap: set, read_ar: set) -> None:
        """Lay out the plan: precision of the max-detections values ``read_ap``, recall of
        the (area, setting) pairs ``read_ar``, positives ``counted`` (A, n_gt)."""
        from ..protocols._coco_stages import ordered_events

        n_t, n_a = len(p.iou_thresholds), len(p.area_ranges)
        self.sizes = (n_t, len(p.recall_thresholds), n_k, n_a, len(p.max_detections))
        self.m_star = m_star
        max_dets = p.max_detections
        events = ordered_events(state, n_t)
        dt_k = np.asarray(state.category, dtype=np.int64)
        image = np.asarray(state.image, dtype=np.int64)
        # The most rows (or objects) one image adds to a count, over every area range and
        # threshold: the counts stay in int32 when the weights cannot push them past it.
        per_image = np.bincount(image, minlength=1).max(initial=0) if len(image) else 0
        n_gt_image = (np.bincount(gt_img[gt_img >= 0], minlength=1).max(initial=0)
                      if len(gt_img) else 0)
        self.per_image = max(int(per_image), int(n_gt_image), 1) * n_a * n_t
        self.precision = {md: PrecisionPlan(state, events, dt_k, image, md, self.sizes)
                          for md in sorted(read_ap)}
        self._work = Workspace()
        self._recall_plan(events, dt_k, image, read_ar, max_dets)
        self.read_ar = read_ar
        # The positives, by (category, area): their count is a difference of one prefix sum.
        self.counted = counted
        a_idx, g_idx = np.nonzero(counted)
        gt_key = gt_k.take(g_idx) * n_a + a_idx
        order = np.argsort(gt_key, kind="stable")
        self.gt_img = gt_img.take(g_idx.take(order))
        self.gt_bounds = np.searchsorted(gt_key.take(order), np.arange(n_k * n_a + 1))
        self.thresholds_r = np.asarray(p.recall_thresholds, dtype=np.float64)
        self.max_dets = max_dets

    def _recall_plan(self, events: Any, dt_k: np.ndarray, image: np.ndarray, read_ar: set,
                     max_dets: tuple) -> None:
        """Recall of the settings without precision plan (AR1, AR10): their TP events are
        nested (rank below each setting), so one list holds them all, by segment and, inside a
        segment, by the fewest settings that count each event first; each setting's weighted
        count of a segment is then the difference of one prefix sum at the segment's start
        and at the end of its events (its own segment end where it reads no such area)."""
        n_t, _, n_k, n_a, _ = self.sizes
        n_seg = n_a * n_t * n_k
        settings = [m for m in sorted({m for _, m in read_ar}) if max_dets[m] not in
                    self.precision]
        self.recall_img, self.recall_bounds = None, {}
        if not settings:
            return
        caps = np.asarray([max_dets[m] for m in settings])          # increasing
        areas = {m: [a for a, mm in read_ar if mm == m] for m in settings}
        ev_rows = events.order.take(events.full_pos)
        tp = np.flatnonzero((events.rank < caps[-1]) & ~events.ignored
                            & np.isin(events.at // n_t, sorted(set().union(*areas.values()))))
        seg = events.at.take(tp) * n_k + dt_k.take(ev_rows.take(tp))
        # class j: counted by the settings from the j-th on (rank below caps[j], not below the
        # ones before); events of a segment by class (the order of a sum does not matter).
        key = seg * len(caps) + np.searchsorted(caps, events.rank.take(tp), side="right")
        order = np.argsort(key, kind="stable")
        self.recall_img = image.take(ev_rows.take(tp.take(order)))
        key = key.take(order)
        segments = np.arange(n_seg)
        start = np.searchsorted(key, segments * len(caps), side="left")
        for j, m in enumerate(settings):
            end = np.searchsorted(key, segments * len(caps) + j, side="right")
            read = np.isin(segments // (n_t * n_k), areas[m])
            self.recall_bounds[m] = (start, np.where(read, end, start))

    def positives(self, w: np.ndarray) -> np.ndarray:
        """npig under weights: shape (K, A), int64."""
        _, _, n_k, n_a, _ = self.sizes
        dtype = w.dtype if w.dtype in (np.int32, np.int64) else np.dtype(np.int64)
        n = len(self.gt_img)
        units = self._work.get("positives", n + 1, dtype)
        units[0] = 0
        np.cumsum(w.take(self.gt_img, out=self._work.get("gt_w", n, w.dtype), mode="wrap"),
                  out=units[1:], dtype=dtype)
        return np.diff(units.take(self.gt_bounds).astype(np.int64)).reshape(n_k, n_a)

    def curves(self, w: np.ndarray) -> tuple[dict, dict, dict]:
        """Precision and recall under weights ``w``, at the entries the numbers read.

        Returns ``{max_det: precision (T, R, K, A)}`` and ``{m: recall (T, K, A)}``, slices
        of :func:`~deteval.protocols._coco_stages.accumulate_stage`'s arrays (-1 where
        undefined), and ``{max_det: TP events}`` (the third value of
        :meth:`PrecisionPlan.curve`, then the positives, shape (K, A)).
        """
        n_t, n_r, n_k, n_a, n_m = self.sizes
        w = w.astype(count_dtype(w, self.per_image), copy=False)
        npig = self.positives(w)
        seg_npig = np.broadcast_to(npig.T[:, None, :], (n_a, n_t, n_k)).ravel()
        valid = seg_npig > 0
        prec, totals, events = {}, {}, {}
        for md, plan in self.precision.items():
            grid, totals[md], tp_events = plan.curve(w, npig, self.thresholds_r)
            events[md] = (*tp_events, npig)
            if not valid.all():
                rows = grid.reshape(n_a * n_t, n_r, n_k).transpose(0, 2, 1)    # (A T, K, R)
                rows[~valid.reshape(n_a * n_t, n_k)] = -1.0
            prec[md] = grid.transpose(1, 2, 3, 0)
        return prec, self._recall(w, totals, seg_npig, valid), events

    def sums(self, w: np.ndarray) -> tuple[dict, dict, dict] | None:
        """As :meth:`curves`, with ``{max_det: (A, T, K) sums over the recall thresholds of
        the precision}`` (:meth:`PrecisionPlan.sums`; entries of a (category, area) without
        positives are not -1: the positives, the last item of each events tuple, say which
        are defined) in place of the precision; None where :meth:`PrecisionPlan.sums`
        declines (then :meth:`curves`)."""
        n_t, n_r, n_k, n_a, n_m = self.sizes
        w = w.astype(count_dtype(w, self.per_image), copy=False)
        npig = self.positives(w)
        seg_npig = np.broadcast_to(npig.T[:, None, :], (n_a, n_t, n_k)).ravel()
        sums, totals, events = {}, {}, {}
        for md, plan in self.precision.items():
            out = plan.sums(w, npig, self.thresholds_r)
            if out is None:
                return None
            seg_sums, totals[md], tp_events = out
            sums[md] = seg_sums.reshape(n_a, n_t, n_k)
            events[md] = (*tp_events, npig)
        return sums, self._recall(w, totals, seg_npig, seg_npig > 0), events

    def _recall(self, w: np.ndarray, totals: dict, seg_npig: np.ndarray,
                valid: np.ndarray) -> dict:
        """``{m: recall (T, K, A)}`` of the settings the AR numbers read, from the TP totals
        of the precision plans and the AR1/AR10 list (-1 where no positive)."""
        n_t, n_r, n_k, n_a, n_m = self.sizes
        rec, every = {}, bool(valid.all())
        if self.recall_img is not None:
            n = len(self.recall_img)
            units = self._work.get("recall", n + 1, w.dtype)
            units[0] = 0
            np.cumsum(w.take(self.recall_img, out=self._work.get("recall_w", n, w.dtype),
                             mode="wrap"), out=units[1:])
        for m in sorted({m for _, m in self.read_ar}):
            if self.max_dets[m] in totals:
                tp = totals[self.max_dets[m]]
            else:
                start, end = self.recall_bounds[m]
                tp = units.take(end) - units.take(start)
            if every:
                final = np.divide(tp, seg_npig)
            else:
                final = np.full(len(seg_npig), -1.0)
                final[valid] = tp[valid] / seg_npig[valid]
            rec[m] = final.reshape(n_a, n_t, n_k).transpose(1, 2, 0)
        return rec

    def full(self, prec: dict, rec: dict) -> tuple[np.ndarray, np.ndarray]:
        """The (T, R, K, A, M) precision and (T, K, A, M) recall arrays of ``curves``."""
        n_t, n_r, n_k, n_a, n_m = self.sizes
        precision = -np.ones((n_t, n_r, n_k, n_a, n_m))
        recall = -np.ones((n_t, n_k, n_a, n_m))
        for m, md in enumerate(self.max_dets):
            if md in prec:
                precision[..., m] = prec[md]
            if m in rec:
                recall[..., m] = rec[m]
        return precision, recall


class PrecisionPlan:
    """The true-positive (TP) events of one max-detections setting, as
    ``_coco_curves._max_det_curves`` orders them: rows ``sel`` in accumulation order
    (category, descending score, image, rank), events sorted by segment (area, threshold,
    category) and position; with, for each TP event, where the rows in its area range and the
    events that are not false positives up to it end (``docs/diagnostics/bootstrap.md`` §13).
    """

    def __init__(self, state: Any, events: Any, dt_k: np.ndarray, image: np.ndarray,
                 max_det: int, sizes: tuple) -> None:
        n_t, _, n_k, n_a, _ = sizes
        self.n_seg = n_seg = n_a * n_t * n_k
        self.n_t, self.n_a, self.n_k = n_t, n_a, n_k
        rank_in_order = np.asarray(state.rank, dtype=np.int64).take(events.order)
        in_sel = rank_in_order < max_det
        sel = events.order.compress(in_sel)
        k_sel = dt_k.take(sel)
        row_img = image.take(sel)
        seg_start = np.searchsorted(k_sel, np.arange(n_k), side="left")
        sel_pos_of_full = np.cumsum(in_sel) - 1
        live = events.rank < max_det
        e_at = events.at.compress(live)
        e_pos = sel_pos_of_full.take(events.full_pos.compress(live))
        e_seg = k_sel.take(e_pos) + e_at * n_k
        e_ign = events.ignored.compress(live)
        e_out = events.out.compress(live)
        # TP events, in (segment, position) order.
        tp_events = np.flatnonzero(~e_ign)
        self.tp_seg = e_seg.take(tp_events)
        tp_pos = e_pos.take(tp_events)
        self.tp_row = sel.take(tp_pos)
        self.tp_img = row_img.take(tp_pos)
        self.row_img = row_img
        self.bounds = np.searchsorted(self.tp_seg, np.arange(n_seg + 1))
        self.counts = np.diff(self.bounds)
        # Rows in each area's range (§13 and ``_row_lists``): each area's lists, and the rows
        # its lists count twice (to take off as not-FP events).
        t_area = self.tp_seg // (n_t * n_k)
        lists, cover, twice, twice_areas = _row_lists(state.out_of_range, sel, k_sel,
                                                      self.tp_seg, tp_pos, (n_t, n_k))
        # Events that are not FPs though their row is counted in range (+1: an ignored
        # object's match, or a row counted twice), or that are counted though their row is
        # out of range (-1: a TP of an out-of-range detection); an ignored object's match out
        # of range is neither.
        plus, minus = e_ign & ~e_out, ~e_ign & e_out
        nf = np.flatnonzero(plus | minus)
        twice_seg = ((np.asarray(twice_areas, np.int64)[:, None] * n_t + np.arange(n_t))
                     .reshape(-1, 1) * n_k + k_sel.take(twice)).ravel()
        nf_seg = np.concatenate([e_seg.take(nf), twice_seg])
        nf_pos = np.concatenate([e_pos.take(nf), np.tile(twice, len(twice_areas) * n_t)])
        nf_plus = np.concatenate([plus.take(nf), np.ones(len(twice_seg), bool)])
        order = np.lexsort((nf_pos, nf_seg))      # events: already in (segment, position)
        nf_seg, nf_pos, nf_plus = nf_seg.take(order), nf_pos.take(order), nf_plus.take(order)
        self.nf_img = row_img.take(nf_pos)
        self.nf_sign = None if nf_plus.all() else np.where(nf_plus, 1, -1).astype(np.int8)
        # Each TP event's count of such events up to it (itself included), and each
        # segment's first one: the events are sorted by (segment, position).
        n_rows = len(sel) + 1
        nf_key = nf_seg * n_rows + nf_pos
        nf_hi = np.searchsorted(nf_key, self.tp_seg * n_rows + tp_pos, side="right")
        self.nf_lo = np.searchsorted(nf_key, np.arange(n_seg) * n_rows, side="left")
        # Those counts plus their segment's start, read from one short list per resample
        # (so that the start is not subtracted event by event): segment after segment, the
        # counts nf_lo[s] .. nf_lo[s + 1] (``nf_src``; ``nf_runs`` of them per segment);
        # ``nf_hi`` is each TP event's place in it.
        self.nf_runs = np.diff(np.append(self.nf_lo, len(nf_key))) + 1
        run_start = prefix(self.nf_runs, np.int64)
        self.nf_src = (np.arange(run_start[-1]) - np.repeat(run_start[:-1] - self.nf_lo,
                                                               self.nf_runs))
        self.nf_hi = nf_hi + (run_start[:-1] - self.nf_lo).take(self.tp_seg)
        # For each TP event the end of its lists' ranges up to its position, for each segment
        # the start of its category in them (an area reading several lists: the first here,
        # the others in ``hi_more``/``lo_more``, over its contiguous events and segments).
        starts = np.cumsum([0] + [len(x) for x in lists])
        self.in_img = (row_img.take(np.concatenate(lists)) if lists
                       else np.zeros(0, np.int64))
        self.in_hi = np.empty(len(tp_pos), np.int64)
        s_area, s_k = np.divmod(np.arange(n_seg), n_t * n_k)
        s_k %= max(n_k, 1)
        self.in_lo = np.empty(n_seg, np.int64)
        self.hi_more, self.lo_more = [], []
        for a in range(n_a):
            at, seg_a = np.flatnonzero(t_area == a), np.flatnonzero(s_area == a)
            for i, j in enumerate(cover[a]):
                hi = starts[j] + np.searchsorted(lists[j], tp_pos.take(at), "right")
                lo = starts[j] + np.searchsorted(lists[j], seg_start.take(s_k.take(seg_a)),
                                                 "left")
                if i == 0:
                    self.in_hi[at], self.in_lo[seg_a] = hi, lo
                    continue
                if len(at):
                    self.hi_more.append((int(at[0]), int(at[-1]) + 1, hi))
                self.lo_more.append((int(seg_a[0]), int(seg_a[-1]) + 1, lo))
        self._keys: dict = {}
        self.rows_per_k = int(np.bincount(k_sel, minlength=1).max(initial=0))
        self._need_tables: dict = {}
        self._work = Workspace()
        self._merge_runs(self.tp_seg, tp_pos, n_seg, merge=MERGE_RUNS)
        self.keep_events(0, 0)

    def _merge_runs(self, tp_seg: np.ndarray, tp_pos: np.ndarray, n_seg: int, *,
                    merge: bool) -> None:
        """Group the TP events into runs (docs §13 "Runs of TP events"): consecutive events of
        a segment with no counted row between them; ``merge=False``: one run per event.

        An event's counted rows are a sum of its rows' weights with integer coefficients of
        at least 0 (1 for its own row), so under unit weights the next event of its segment
        counts exactly one more row when no row between them counts; then, under any
        weights, both counts grow by the next event's weight alone, its precision is at
        least the event's, and the envelope is the same at both. Only the last event of a run
        needs its counts, precision and envelope: the reads of ``counted`` (``in_hi``,
        ``nf_hi``, ``hi_more``) are kept at the runs' ends."""
        n = len(tp_seg)
        ends = np.arange(n)
        if merge and n:
            ones = np.ones(int(self.row_img.max(initial=0)) + 1, np.int64)
            inside, less = self._in_range(ones, np.int64)
            counted = self._counted(inside, less, self.in_hi, self.nf_hi, self.hi_more,
                                    np.empty(n, np.int64), np.empty(n, np.int64))
            step, apart = np.diff(counted), np.diff(tp_seg) != 0
            # The coefficients are at least 0 by construction (a not-FP event's row is in
            # its area's lists); a step below 1 would show otherwise: then no runs.
            if (step >= 1)[~apart].all():
                ends = np.flatnonzero(np.append((step != 1) | apart, True))
        self.run_end = ends
        self.run_at = ends + 1                  # the inclusive TP prefix sum of each run
        self.run_seg = tp_seg.take(ends)
        self.run_bounds = np.searchsorted(self.run_seg, np.arange(n_seg + 1))
        self.run_counts = np.diff(self.run_bounds)
        # For the recall-threshold sums: each segment's table (category, area), and the
        # first run of each segment that has runs.
        n_k = max(self.n_k, 1)
        seg_area, seg_k = np.arange(n_seg) // (self.n_t * n_k), np.arange(n_seg) % n_k
        self.seg_table = seg_k * self.n_a + seg_area
        self.first_seg = np.flatnonzero(self.run_counts)
        self.first_run = self.run_bounds.take(self.first_seg)
        self.first_base = self.seg_table.take(self.first_seg)
        self.in_hi, self.nf_hi = self.in_hi.take(ends), self.nf_hi.take(ends)
        hi_more = []
        for lo, hi, more in self.hi_more:
            r_lo, r_hi = np.searchsorted(ends, (lo, hi))
            hi_more.append((int(r_lo), int(r_hi), more.take(ends[r_lo:r_hi] - lo)))
        self.hi_more = hi_more

    def keep_events(self, lo: int, hi: int) -> None:
        """Have :meth:`curve` return the counts of each TP event ``lo:hi`` (oLRP reads those of
        one area and threshold): an event's TP count is its prefix sum less its segment's
        start, and its TP + FP count that plus the FP count of its run's end (the same
        inside a run)."""
        self.kept = (int(lo), int(hi), self.tp_seg[lo:hi].copy(),
                     np.searchsorted(self.run_end, np.arange(lo, hi)))

    def _in_range(self, w: np.ndarray, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
        """The prefix sum of the weights of the rows in range (``in_img``), and the short list
        of the not-FP prefix plus each segment's in-range count at its start (``nf_src``)."""
        work = self._work
        inside = work.get("inside", len(self.in_img) + 1, dtype)
        inside[0] = 0
        np.cumsum(w.take(self.in_img, out=work.get("in_w", len(self.in_img), dtype),
                         mode="wrap"), out=inside[1:])
        nf_w = w.take(self.nf_img).astype(dtype, copy=False)
        if self.nf_sign is not None:
            nf_w *= self.nf_sign
        not_fp = prefix(nf_w, dtype)
        at_start = inside.take(self.in_lo)                                   # per segment
        for lo, hi, more in self.lo_more:
            at_start[lo:hi] += inside.take(more)
        at_start -= not_fp.take(self.nf_lo)
        return inside, np.add(not_fp.take(self.nf_src), np.repeat(at_start, self.nf_runs))

    @staticmethod
    def _counted(inside: np.ndarray, less: np.ndarray, in_hi: np.ndarray, nf_hi: np.ndarray,
                 hi_more: list, out: np.ndarray, scratch: np.ndarray) -> np.ndarray:
        """TP + FP up to each of the events ``in_hi``/``nf_hi`` read (into ``out``): the rows
        in range up to it, less the not-FP events (docs §13)."""
        counted = inside.take(in_hi, out=out, mode="wrap")
        for lo, hi, more in hi_more:
            np.add(counted[lo:hi], inside.take(more, out=scratch[:hi - lo], mode="wrap"),
                   out=counted[lo:hi])
        return np.subtract(counted, less.take(nf_hi, out=scratch, mode="wrap"), out=counted)

    def curve(self, w: np.ndarray, npig: np.ndarray, thresholds_r: np.ndarray):
        """Interpolated precision at each recall threshold per segment, laid out
        (area, threshold, recall threshold, category): shape (A, T, R, K); the weighted TP
        count per segment, shape (S,); and, for the TP events ``lo:hi`` of
        :meth:`keep_events`, their weight, the TP count of their segment up to each and the
        TP + FP count up to each (each shape (hi - lo,)).

        The precision and the event arrays are this thread's scratch arrays: valid until its
        next call.
        """
        n_k, n_a = npig.shape
        n_r, n_seg = len(thresholds_r), self.n_seg
        n_t = n_seg // max(n_k * n_a, 1)
        runs = self._runs(w)
        if runs is None:       # no TP event: precision 0 wherever defined
            none = np.zeros(0, np.int64)
            return (np.zeros((n_a, n_t, n_r, n_k)), np.zeros(n_seg, np.int64),
                    (none, none, none))
        total, seg_units, ends, _, envelope, kept, _ = runs
        work = self._work
        # The first event of each segment whose TP count reaches a threshold's need (at
        # least 1; needed_true_positives is COCO's float rule): the event holding that TP
        # unit, in the run holding it. The precision there is the envelope's; 0 where the
        # count never gets there.
        need = self._needed(npig, thresholds_r)                              # (K, A, R)
        need = np.ascontiguousarray(need.transpose(1, 0, 2))[:, None]       # (A, 1, K, R)
        at = work.get("at", n_seg * n_r, np.int64).reshape(n_a, n_t, n_k, n_r)
        np.add(seg_units[:-1].reshape(n_a, n_t, n_k, 1) - 1, need, out=at)
        event = _holders(ends, at.ravel(), work.get("event", n_seg * n_r, np.int64))
        q = envelope.take(event, out=at.ravel().view(np.float64), mode="wrap")
        q = q.reshape(n_a, n_t, n_k, n_r)
        # Written (area, threshold, recall threshold, category): the stats then read each
        # area's (threshold, recall threshold, category) block as it lies (§13).
        grid = work.get("grid", n_seg * n_r, np.float64).reshape(n_a, n_t, n_r, n_k)
        np.multiply(q, need <= total.reshape(n_a, n_t, n_k, 1), out=grid.transpose(0, 1, 3, 2))
        return grid, total, kept

    def sums(self, w: np.ndarray, npig: np.ndarray, thresholds_r: np.ndarray):
        """The sum over the recall thresholds of :meth:`curve`'s precision, per segment
        (shape (S,), float64), without the grid: each run's envelope times the number of
        thresholds whose needed TP unit it holds (docs §13 "Recall-threshold sums"); then
        the TP count per segment and the kept events, as :meth:`curve`. The sums are those
        of the grid's entries in another order (a few ulps apart). None when a needed-count
        table would be much larger than the runs (large explicit weights: :meth:`curve`).
        """
        n_seg = self.n_seg
        runs = self._runs(w, steps=lambda total, tp: self._steps(total, tp, npig, thresholds_r))
        if runs is None:
            none = np.zeros(0, np.int64)
            return np.zeros(n_seg), np.zeros(n_seg, np.int64), (none, none, none)
        total, _, _, _, envelope, kept, steps = runs
        if steps is None:
            return None
        terms = np.multiply(envelope, steps, out=envelope)
        seg_sums = np.zeros(n_seg)
        seg_sums[self.first_seg] = np.add.reduceat(terms, self.first_run)
        return seg_sums, total, kept

    def _steps(self, total: np.ndarray, tp: np.ndarray, npig: np.ndarray,
               thresholds_r: np.ndarray) -> np.ndarray | None:
        """For each run, how many recall thresholds' needed TP units it holds:
        ``F(tp) - F(tp of the run before)`` (0 before a segment's first run), ``F(t)`` the
        thresholds whose need is at most ``t``; None when the tables of ``F`` would be much
        longer than the runs."""
        n_k, n_a = npig.shape
        n_r, n_seg, n_run = len(thresholds_r), self.n_seg, len(tp)
        n_t = n_seg // max(n_k * n_a, 1)
        # F(t) = #{r : need_r <= t} of each (category, area), t = 0 .. its largest segment
        # total, as one cumulative count over the tables laid end to end (a need past the
        # total goes to the table's extra last slot, never read). Every need is at least 1
        # and lands in its own table, so the count at table ka's t is R * ka + F(t).
        cap = total.reshape(n_a, n_t, n_k).max(axis=1).T                      # (K, A)
        length = cap.ravel() + 2
        n_table = int(length.sum())
        if n_table > 4 * (n_run + n_k * n_a * n_r) + 1024:
            return None
        work = self._work
        offsets = prefix(length, np.int64)
        slot = self._needed(npig, thresholds_r)                                # (K, A, R)
        np.minimum(slot, (cap + 1)[..., None], out=slot)
        slot += offsets[:-1].reshape(n_k, n_a, 1)
        # The counts reach R K A; a step is at most R (int16: less memory traffic).
        count = np.int32 if n_r * n_k * n_a < 2**31 else np.int64
        table = np.cumsum(np.bincount(slot.ravel(), minlength=n_table), dtype=count)
        at = np.add(tp, np.repeat(offsets.take(self.seg_table), self.run_counts),
                    out=work.get("f_at", n_run, np.int64))
        f = table.take(at, out=work.get("f", n_run, count), mode="clip")
        steps = work.get("f_steps", n_run, np.int16 if n_r < 2**15 else count)
        steps[0] = f[0]
        np.subtract(f[1:], f[:-1], out=steps[1:], casting="unsafe")       # each in [0, R]
        first = self.first_run
        steps[first] = f.take(first) - self.first_base * n_r
        return steps

    def _runs(self, w: np.ndarray, steps: Any = None):
        """What :meth:`curve` and :meth:`sums` share: the TP count per segment, the TP prefix
        at the segments' bounds and at the runs' ends, each run's TP count from its segment's
        start, its envelope (decoded), the kept events, and ``steps(total, tp)`` (None
        without ``steps``; called as soon as the TP counts are known, while they are in the
        cache); None without TP events."""
        n = len(self.tp_img)
        if n == 0:
            return None
        work, dtype, n_run = self._work, w.dtype, len(self.run_end)
        tp_w = w.take(self.tp_img, out=work.get("tp_w", n, dtype), mode="wrap")
        units = work.get("units", n + 1, dtype)                 # TP units before each event
        units[0] = 0
        np.cumsum(tp_w, out=units[1:])
        seg_units = units.take(self.bounds).astype(np.int64)
        total = np.diff(seg_units)
        # At each run's end: TP so far (the segment's, the event included), and TP + FP so
        # far: the rows in range up to the event, less those that are not FPs (docs §13).
        ends = units.take(self.run_at, out=work.get("ends", n_run, dtype))
        starts = seg_units[:-1].astype(dtype)
        tp = np.subtract(ends, np.repeat(starts, self.run_counts),
                         out=work.get("tp", n_run, dtype))
        early = None if steps is None else steps(total, tp)
        inside, less = self._in_range(w, dtype)
        counted = self._counted(inside, less, self.in_hi, self.nf_hi, self.hi_more,
                                work.get("counted", n_run, dtype),
                                work.get("scratch", n_run, dtype))
        kept = self._kept_events(tp_w, units, starts, tp, counted)
        # pycocotools' float arithmetic: tp / (fp + tp + eps), the sum exact in float64.
        pr = np.add(counted, _EPS, out=work.get("pr", n_run, np.float64))
        np.divide(tp, pr, out=pr)
        code = self._code(w)
        envelope = _decode(self._envelope(pr, code), self._keys[code][1])
        return total, seg_units, ends, tp, envelope, kept, early

    def _kept_events(self, tp_w: np.ndarray, units: np.ndarray, starts: np.ndarray,
                     tp: np.ndarray, counted: np.ndarray) -> tuple:
        """The weight, TP and TP + FP counts of the events of :meth:`keep_events`."""
        lo, hi, seg, run = self.kept
        work, dtype = self._work, units.dtype
        tp_e = np.subtract(units[lo + 1:hi + 1], starts.take(seg),
                           out=work.get("kept_tp", hi - lo, dtype))
        fp = np.subtract(counted.take(run), tp.take(run))
        counted_e = np.add(tp_e, fp, out=work.get("kept_counted", hi - lo, dtype))
        return tp_w[lo:hi], tp_e, counted_e

    def _needed(self, npig: np.ndarray, thresholds_r: np.ndarray) -> np.ndarray:
        """``max(needed_true_positives(npig, thresholds_r), 1)``, shape (K, A, R), read from
        a table of every count up to the largest seen (each entry is computed on its own, so
        the table's are the same numbers); the table grows, doubling, when a count passes it,
        up to ``_NEED_TABLE`` counts (larger counts: computed directly).
        """
        from ..protocols._coco_stages import needed_true_positives

        key = thresholds_r.tobytes()
        table = self._need_tables.get(key)
        top = int(npig.max(initial=0))
        if top >= _NEED_TABLE:
            return np.maximum(needed_true_positives(npig, thresholds_r), 1)
        if table is None or top >= len(table):
            size = min(max(top + 1, 2 * len(table) if table is not None else 64), _NEED_TABLE)
            table = np.maximum(needed_true_positives(np.arange(size), thresholds_r), 1)
            self._need_tables[key] = table       # a whole new table: safe for other threads
        return table.take(npig, axis=0)

    def _code(self, w: np.ndarray) -> int:
        """The code width of :func:`_encode_layout` under weights ``w``: a category's TP + FP
        count is at most its rows times the largest weight (and below the count type's
        limit), ``e`` the bits of that bound."""
        limit = 32 if w.dtype == np.int32 else 64
        bound = int(w.max(initial=0)) * self.rows_per_k
        return (min(max(bound.bit_length(), 1), limit) + 1).bit_length()

    def _envelope(self, pr: np.ndarray, code: int) -> np.ndarray:
        """Each TP event's largest precision from it to the end of its segment, encoded
        (:func:`_encode_layout`): a reversed running maximum, restarted at each segment."""
        if code not in self._keys:       # a whole new entry: safe for other threads
            self._keys[code] = _encode_layout(self.run_seg, self.run_bounds, code)
        offsets, _, chunks = self._keys[code]
        keys = np.add(pr.view(np.int64), offsets, out=pr.view(np.int64))       # pr: not read again
        for lo, hi in chunks:
            np.maximum.accumulate(keys[lo:hi][::-1], out=keys[lo:hi][::-1])
        return keys


#: Derive the every-row list from the other areas' lists when its two passes over its rows
#: cost more than this many times the extra reads (two per event and list) it needs instead.
_DERIVE_COST = 1.0


def _row_lists(out_of_range: np.ndarray, sel: np.ndarray, k_sel: np.ndarray,
               tp_seg: np.ndarray, tp_pos: np.ndarray, sizes: tuple) -> tuple:
    """The positions (in ``sel``) of the rows in range whose weights the TP events read, as a
    few lists, and which lists each area sums.

    Each area whose range leaves rows out has its own list. The areas with every row in range
    ("all") read one list of every row, or, when the other lists hold every row those areas'
    events read and two passes over those rows cost more than two reads per event and extra
    list, the other lists themselves: a row is then counted once per list holding it, and the
    rows counted more than once are returned (once per extra count) to be taken off as
    not-FP events of those areas. A category's rows after the last TP event of the areas
    reading a list are left out (no event counts them; its earlier rows stay whole).

    Parameters
    ----------
    out_of_range : ndarray of bool, shape (A, n_rows)
    sel : ndarray of int, shape (n_sel,)
        The rows, in accumulation order (``k_sel``: their categories, non-decreasing).
    tp_seg, tp_pos : ndarray of int, shape (n_tp,)
        Each TP event's segment (sorted) and position in ``sel``.
    sizes : tuple of int
        The thresholds and categories (a segment is ``(area * n_t + t) * n_k + k``).

    Returns
    -------
    lists : list of ndarray of int
    cover : list of tuple of int
        Per area, the lists it sums.
    twice : ndarray of int
        Positions of the rows counted more than once (repeated per extra count).
    twice_areas : list of int
        The areas whose events take them off.
    """
    inside = [~out_of_range[a].take(sel) for a in range(len(out_of_range))]
    full = [a for a, mask in enumerate(inside) if mask.all()]
    other = [a for a, mask in enumerate(inside) if not mask.all()]

    # The last TP event of each segment (the events are sorted by segment and position).
    n_t, n_k = sizes
    t_area = tp_seg // max(n_t * n_k, 1)
    ends = np.flatnonzero(np.diff(tp_seg, append=-1))
    end_area, end_k, end_pos = t_area.take(ends), k_sel.take(tp_pos.take(ends)), tp_pos.take(ends)

    def last_of(areas):           # per category, the last TP position of ``areas`` (or -1)
        read = np.isin(end_area, areas)
        last = np.full(max(n_k, 1), -1, np.int64)
        np.maximum.at(last, end_k.compress(read), end_pos.compress(read))
        return last

    lists = [np.flatnonzero(inside[a]) for a in other]
    cover = [()] * len(inside)
    for j, a in enumerate(other):
        cover[a] = (j,)
    twice, twice_areas = np.zeros(0, np.int64), []
    if full:
        read_full = np.flatnonzero(np.arange(len(sel)) <= last_of(full).take(k_sel))
        times = np.sum([inside[a].take(read_full) for a in other], axis=0, dtype=np.int64)
        n_events = int(np.isin(t_area, full).sum())
        if other and (times >= 1).all() and _DERIVE_COST * 2 * len(read_full) > (
                2 * (len(other) - 1) * n_events + 4 * int((times - 1).sum()) * len(full)):
            twice = np.repeat(read_full, times - 1)
            twice_areas = full
            for a in full:
                cover[a] = tuple(range(len(other)))
        else:
            lists.append(np.arange(len(sel)))
            for a in full:
                cover[a] = (len(lists) - 1,)
    for j in range(len(lists)):
        last = last_of([a for a in range(len(inside)) if j in cover[a]])
        lists[j] = lists[j].compress(lists[j] <= last.take(k_sel.take(lists[j])))
    return lists, cover, twice, twice_areas


def _holders(ends: np.ndarray, units: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The event holding each of ``units`` (0-based, in the weighted sequence), from the
    events' inclusive prefix sums ``ends``: the number of events ending at or before it
    (into ``out``). A count over every unit when there are not many more units than events
    (resamples); a binary search otherwise (large explicit weights).

    >>> _holders(np.array([2, 2, 3]), np.array([0, 1, 2]), np.empty(3, np.int64)).tolist()
    [0, 0, 2]
    """
    if len(ends) and ends[-1] <= 4 * len(ends) + 1024:
        holder = np.bincount(ends, minlength=int(ends[-1]) + 1)
        np.cumsum(holder, out=holder)
        return holder.take(units, out=out, mode="wrap")
    out[:] = np.searchsorted(ends, units, side="right")
    return out


def _encode_layout(tp_seg: np.ndarray, bounds: np.ndarray, code: int):
    """How precisions become integer keys whose running maximum restarts at each segment.

    A precision is ``tp / (d + eps)`` with ``1 <= tp <= d < 2**e`` (``e`` at most 32 for int32
    counts, 64 for int64), so it is 0 or lies in ``[2**-e, 1]``: its float64 bit pattern, an
    increasing function of the value, less that of ``2**-(2**code - 1)`` (``code`` the bits
    of ``e + 1``, so ``2**code - 1 > e``), needs ``p = 52 + code`` bits. The segments go in
    chunks of ``2**(63 - p)``; the ``j``-th last segment of a chunk adds ``j << p``, so that
    every key of a segment exceeds every key of the segments after it in the chunk, and a
    reversed running maximum over the chunk restarts at each segment. A precision of 0
    (before the first TP unit) gets a smaller key; no query reads it. Returns the per-event
    offsets, the subtracted base and the chunks' event ranges.
    """
    base = int(np.array(2.0 ** -(2**code - 1)).view(np.int64))
    width = int(np.array(1.0).view(np.int64)) - base + 1
    payload = int(width - 1).bit_length()
    per_chunk = 1 << (63 - payload)
    offsets = ((per_chunk - 1 - tp_seg % per_chunk) << payload) - base
    n_chunks = (len(bounds) - 2) // per_chunk + 1
    edges = bounds.take(np.minimum(np.arange(n_chunks + 1) * per_chunk, len(bounds) - 1))
    chunks = [(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]
    return offsets.astype(np.int64), (base, payload), chunks


def _decode(keys: np.ndarray, code: tuple) -> np.ndarray:
    """The precisions of keys made by :func:`_encode_layout` (float64)."""
    base, payload = code
    keys &= (1 << payload) - 1
    keys += base
    return keys.view(np.float64)
