"""COCO's accumulation under image weights, for the protocols that accumulate as COCO does
with one max-detections setting (LVIS, CrowdPose): the precision and recall arrays of the
data set that holds image ``i`` ``w[i]`` times, from the one evaluation's match state.

The rule is ``docs/diagnostics/bootstrap.md`` §3 (an image drawn ``w`` times counts each of
its detections and objects ``w`` times), written for a single max-detections setting: per
(area, threshold) the true-positive events of every category segment, in accumulation
order, carry the weighted TP count so far and the weighted FP count so far (rows in the area
range minus the matched ones among them); precision ``TP / (FP + TP + eps)`` and the recall
points are pycocotools' (``needed_true_positives``), the envelope the largest precision of
the events from the one that reaches a recall threshold to the segment's end. A row of
weights 1 gives the evaluation's own arrays, bit for bit (same counts, same float
operations, same memory layout).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .bootstrap import BootstrapResult, percentile_interval

__all__ = ["WeightedCurves", "bootstrap_result", "check_settings", "indicator_rows",
           "run_bootstrap"]

_EPS = np.spacing(1)


def check_settings(n_resamples: int, confidence: float) -> None:
    """ValueError for a number of resamples that is not a positive integer, or a confidence
    level outside (0, 1)."""
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) \
            or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer; got {n_resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}")


class WeightedCurves:
    """Precision (T, R, K, A, 1) and recall (T, K, A, 1) of a COCO state under weights.

    Parameters
    ----------
    state : COCOState
        The evaluation's accumulation state (rows of the kept detections, match events).
    table : MatchTable
        Its match table (``gt_ignore`` per area range).
    gt_k, gt_img : ndarray of int, shape (n_gt,)
        Each object's category and image position, -1 where not evaluated.
    params : object
        ``iou_thresholds``, ``recall_thresholds``, ``area_ranges``.
    n_k : int
    max_det : int
        Rows of rank ``>= max_det`` in their (image, category) group are left out.
    """

    def __init__(self, state: Any, table: Any, gt_k: np.ndarray, gt_img: np.ndarray,
                 params: Any, n_k: int, max_det: int) -> None:
        from ..protocols._coco_stages import ordered_events

        if np.any(np.diff(np.asarray(params.recall_thresholds, dtype=np.float64)) < 0):
            raise ValueError("bootstrap needs recall_thresholds in increasing order; got "
                             f"{tuple(params.recall_thresholds)}")
        self.n_t, self.n_a, self.n_k = len(params.iou_thresholds), len(params.area_ranges), n_k
        self.thresholds_r = np.asarray(params.recall_thresholds, dtype=np.float64)
        n_t = self.n_t
        events = ordered_events(state, n_t)
        in_sel = np.asarray(state.rank, dtype=np.int64).take(events.order) < max_det
        sel = events.order.compress(in_sel)
        k_sel = np.asarray(state.category, dtype=np.int64).take(sel)
        self.img_sel = np.asarray(state.image, dtype=np.int64).take(sel)
        self.k_sel = k_sel
        self.seg_start = np.searchsorted(k_sel, np.arange(n_k + 1))
        self.in_range = [~np.asarray(state.out_of_range[a]).take(sel) for a in range(self.n_a)]
        live = events.rank < max_det
        pos_of_full = np.cumsum(in_sel) - 1
        e_at = events.at.compress(live)
        e_pos = pos_of_full.take(events.full_pos.compress(live))
        e_ign = events.ignored.compress(live)
        e_out = events.out.compress(live)
        bounds = np.searchsorted(e_at, np.arange(self.n_a * n_t + 1))
        # Per (area, threshold): the events' positions, TP flags and in-range flags.
        self.events = [(e_pos[lo:hi], ~e_ign[lo:hi], ~e_out[lo:hi])
                       for lo, hi in zip(bounds[:-1], bounds[1:])]
        counted = [(gt_k >= 0) & ~np.asarray(table.gt_ignore[a]) for a in range(self.n_a)]
        self.gt_key = np.concatenate([gt_k[c] * self.n_a + a for a, c in enumerate(counted)]) \
            if self.n_a else np.zeros(0, np.int64)
        self.gt_img = np.concatenate([gt_img[c] for c in counted]) if self.n_a else \
            np.zeros(0, np.int64)

    def positives(self, w: np.ndarray) -> np.ndarray:
        """Weighted positives per category and area range, shape (K, A), int64."""
        n = self.n_k * self.n_a
        return np.bincount(self.gt_key, weights=w.take(self.gt_img), minlength=n)[:n] \
            .astype(np.int64).reshape(self.n_k, self.n_a)

    def curves(self, w: np.ndarray, *, layout: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(precision, recall)`` under image weights ``w`` (shape (I,), int): arrays of
        shape (T, R, K, A, 1) and (T, K, A, 1), -1 where a category has no positive.

        ``layout=False`` returns views in another memory order (the same values): enough
        for means over selections (a boolean selection is in logical order), not for a mean
        over a multi-dimensional block, whose summation order follows the memory."""
        from ..protocols._coco_stages import needed_true_positives

        n_t, n_a, n_k, n_r = self.n_t, self.n_a, self.n_k, len(self.thresholds_r)
        w = np.asarray(w, dtype=np.int64)
        npig = self.positives(w)
        need = needed_true_positives(npig, self.thresholds_r)          # (K, A, R)
        row_w = w.take(self.img_sel)
        prefix = np.zeros(len(row_w) + 1, np.int64)
        np.cumsum(row_w, out=prefix[1:])
        n_det = prefix.take(self.seg_start[1:]) - prefix.take(self.seg_start[:-1])
        q = np.zeros((n_a, n_t, n_k, n_r))
        final = np.zeros((n_a, n_t, n_k))
        for a in range(n_a):
            in_prefix = np.zeros(len(row_w) + 1, np.int64)
            np.cumsum(row_w * self.in_range[a], out=in_prefix[1:])
            for t in range(n_t):
                q[a, t], final[a, t] = self._segment_curves(
                    self.events[a * n_t + t], row_w, in_prefix, need[:, a])
        valid = (npig > 0).T[:, None, :]                                  # (A, 1, K)
        with np.errstate(invalid="ignore", divide="ignore"):
            recall = np.where(valid, np.where(n_det > 0, final, 0.0) / npig.T[:, None, :],
                              -1.0)
        q[~np.broadcast_to(valid, (n_a, n_t, n_k))] = -1.0
        if not layout:
            return (q.transpose(1, 3, 2, 0)[..., None],
                    recall.transpose(1, 2, 0)[..., None])
        # The layout of accumulate_stage's arrays (same values, same order: same means).
        precision = np.empty((n_t, n_r, n_k, n_a, 1))
        precision[..., 0] = q.transpose(1, 3, 2, 0)
        out_recall = np.empty((n_t, n_k, n_a, 1))
        out_recall[..., 0] = recall.transpose(1, 2, 0)
        return precision, out_recall

    def _segment_curves(self, events: tuple, row_w: np.ndarray, in_prefix: np.ndarray,
                        need: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Precision at the recall thresholds (K, R) and the weighted TP count (K,) of one
        (area, threshold)."""
        pos, is_tp, inside = events
        n_k, n_r = need.shape
        ev_w = row_w.take(pos)
        tp_prefix = np.zeros(len(pos) + 1, np.int64)
        np.cumsum(ev_w * is_tp, out=tp_prefix[1:])
        matched_in = np.zeros(len(pos) + 1, np.int64)
        np.cumsum(ev_w * inside, out=matched_in[1:])
        ev_k = self.k_sel.take(pos)
        first = np.searchsorted(ev_k, np.arange(n_k + 1))        # events of each category
        tp_ev = np.flatnonzero(is_tp)
        t_pos, t_k = pos.take(tp_ev), ev_k.take(tp_ev)
        f = first.take(t_k)
        tp = tp_prefix.take(tp_ev + 1) - tp_prefix.take(f)
        start = self.seg_start.take(t_k)
        fp = (in_prefix.take(t_pos + 1) - in_prefix.take(start)) - (
            matched_in.take(tp_ev + 1) - matched_in.take(f))
        tp_f = tp.astype(np.float64)
        pr = tp_f / (fp.astype(np.float64) + tp_f + _EPS)
        total = tp_prefix.take(first[1:]) - tp_prefix.take(first[:-1])
        # The TP event reaching each recall threshold: the first whose count is >= need
        # (categories without a TP event keep precision 0).
        tp_first = np.searchsorted(t_k, np.arange(n_k + 1))
        active = np.flatnonzero(tp_first[1:] > tp_first[:-1])
        big = int(total.max(initial=0)) + 2
        key = t_k * big + tp
        target = active[:, None] * big + np.minimum(need[active], big - 1)
        ends = tp_first[active + 1, None]
        j = np.minimum(np.searchsorted(key, target), ends)                # (K', R)
        # Max of pr over [j_r, j_{r+1}) (an empty block: 0), then the running max from the
        # end: the max over [j_r, segment end).
        idx = np.concatenate([j, ends], axis=1)
        blocks = np.maximum.reduceat(np.r_[pr, 0.0], idx.ravel()).reshape(-1, n_r + 1)[:, :-1]
        blocks[idx[:, :-1] >= idx[:, 1:]] = 0.0
        q = np.zeros((n_k, n_r))
        q[active] = np.maximum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1]
        # (A threshold no event reaches has an empty block: 0, as pycocotools leaves it; the
        # thresholds are increasing, so no later one is reached either.)
        return q, total


def indicator_rows(columns: np.ndarray, n_images: int) -> np.ndarray:
    """One row of weights: 1 at ``columns``, 0 elsewhere (an image slice), shape (1, I)."""
    w = np.zeros((1, n_images), dtype=np.int64)
    w[0, columns] = 1
    return w


def run_bootstrap(weighted: Any, *, n_resamples: int, confidence: float, seed: Any,
                  weights: np.ndarray | None, category_ids: np.ndarray) -> BootstrapResult:
    """The numbers of ``weighted`` (``WeightedLVIS``, ...) on each resample, and their
    intervals (the settings checked by the caller, before any work)."""
    rows = weighted.resamples(n_resamples, seed, weights)
    samples = np.array([weighted.numbers(w) for w in rows], dtype=np.float64)
    return bootstrap_result(weighted.names, weighted.estimates, samples,
                            confidence=confidence, seed=seed, category_ids=category_ids,
                            category_names=weighted.category_names)


def bootstrap_result(names: tuple, estimates: np.ndarray, samples: np.ndarray, *,
                     confidence: float, seed: Any, category_ids: np.ndarray,
                     category_names: tuple) -> BootstrapResult:
    """The :class:`BootstrapResult` of resampled numbers ``samples`` (B, N): undefined ones
    (-1 or NaN) are NaN in ``samples`` and -1 in ``estimates``."""
    samples = np.asarray(samples, dtype=np.float64).reshape(-1, len(names))
    samples[samples < 0] = np.nan
    estimates = np.where(np.isnan(estimates), -1.0, estimates)
    low, high, n_defined = percentile_interval(samples, confidence)
    return BootstrapResult(names=tuple(names), estimates=estimates, low=low, high=high,
                           samples=samples, n_defined=n_defined, confidence=float(confidence),
                           n_resamples=len(samples), seed=seed, score_threshold=None,
                           category_ids=np.asarray(category_ids),
                           category_names=tuple(category_names))
