"""oLRP under image weights for :mod:`deteval.diagnostics.bootstrap`: per category, its true
positives at IoU 0.5, area "all" (the TP events of the max-detections-100
:class:`~deteval.diagnostics._bootstrap_plans.PrecisionPlan`) and their IoU, laid out once;
per resample the localisation, FP and FN terms and the minimum of LRP per category
(``docs/diagnostics/bootstrap.md`` §9 and §13, ``docs/diagnostics/lrp.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ._bootstrap_plans import COCOPlan

__all__ = ["LRPPlan", "padded_rows"]


class LRPPlan:
    """moLRP at area "all" and IoU 0.5 under weights, as :func:`deteval.lrp` computes it
    (``docs/diagnostics/lrp.md``): per category, its true positives in accumulation order
    (the TP events of the max-detections-100
    :class:`~deteval.diagnostics._bootstrap_plans.PrecisionPlan` at area "all", IoU 0.5)
    and their IoU, once; per resample the weighted TP and FP counts up to each (the
    precision plan's), the localisation error, and the minimum of LRP per category
    (bounding boxes only; -1 without IoU 0.5, area "all" or max-detections 100)."""

    def __init__(self, ctx: Any, plan: COCOPlan, result: Any) -> None:
        from ..iou import coco_pair_iou

        p, table = ctx.params, result.matches
        thresholds = list(p.iou_thresholds)
        self.ok = (p.iou_type == "bbox" and 0.5 in thresholds and 100 in p.max_detections
                   and "all" in p.area_labels and p.use_categories)
        if not self.ok:
            return
        self.tau, t, a = 0.5, thresholds.index(0.5), list(p.area_labels).index("all")
        events = plan.precision[100]
        first = (a * len(thresholds) + t) * ctx.n_k
        self.lo, self.hi = int(events.bounds[first]), int(events.bounds[first + ctx.n_k])
        events.keep_events(self.lo, self.hi)          # curve returns those events' counts
        self.tp_bounds = events.bounds[first:first + ctx.n_k + 1] - self.lo
        self.tp_k = events.tp_seg[self.lo:self.hi] - first
        # LRP only rises over a false positive or an ignored row, so its minimum is at a true
        # positive: those events, and the IoU of each with its object.
        kept = np.flatnonzero(table.dt_kept)            # state row i is table row kept[i]
        rows = events.tp_row[self.lo:self.hi]
        rows = kept.take(rows) if len(kept) else rows
        matched = table.detection_matches(a)[t].take(rows)
        self.tp_iou = coco_pair_iou(result.detections.as_xywh()[rows],
                                    result.dataset.gt.as_xywh()[matched],
                                    np.zeros(len(rows), bool))
        gt_ok = (ctx.gt_k >= 0) & ~table.gt_ignore[a]
        self.gt_k, self.gt_img, self.n_k = ctx.gt_k[gt_ok], ctx.gt_img[gt_ok], ctx.n_k
        # The positives are the precision plan's of area "all" when they are the same objects.
        self.npig_area = a if np.array_equal(plan.counted[a], gt_ok) else None
        self.present = np.flatnonzero(np.diff(self.tp_bounds))
        # The running localisation sums restart at each category: the categories' events are
        # laid out as the rows of a few zero-padded blocks (categories of close lengths
        # together), one cumulative sum along the rows of each.
        self.pad_src, self.pad_back, self.pad_blocks = padded_rows(self.tp_bounds)
        self.pad_iou = np.where(self.pad_src >= 0, self.tp_iou.take(self.pad_src), 0.0)
        self.pad_src = np.maximum(self.pad_src, 0)

    def molrp(self, w: np.ndarray, events: tuple) -> float:
        """moLRP under image weights ``w``, from the max-detections-100 precision plan's
        ``events`` under them (:meth:`COCOPlan.curves`); -1 when not computed."""
        from .lrp import _mean

        if not self.ok:
            return -1.0
        if self.npig_area is not None:
            npig = events[3][:, self.npig_area]
        else:
            npig = np.bincount(self.gt_k, weights=w.take(self.gt_img),
                               minlength=self.n_k).astype(np.int64)
        tp_w, tp_num, counted = events[:3]                  # the events lo:hi
        fp_num = counted - tp_num
        fn_num = npig.take(self.tp_k) - tp_num
        # The localisation sums category by category: a running float sum restarted at each
        # category, as deteval.diagnostics.lrp._optimal sums them (its other rows add 0).
        padded = np.multiply(tp_w.take(self.pad_src), self.pad_iou)   # pads: 0
        for lo, rows, cols in self.pad_blocks:
            block = padded[lo:lo + rows * cols].reshape(rows, cols)
            np.cumsum(block, axis=1, out=block)
        loc = padded.take(self.pad_back)
        bounds, present = self.tp_bounds, self.present
        total_loc = tp_num - loc
        with np.errstate(invalid="ignore", divide="ignore"):
            curve = (total_loc / (1 - self.tau) + fp_num + fn_num) / (tp_num + fp_num + fn_num)
        olrp = np.where(npig > 0, 1.0, -1.0)
        if len(present):
            minima = np.minimum.reduceat(curve, bounds.take(present))
            tp_total = tp_num.take(bounds.take(present + 1) - 1)
            found = (npig.take(present) > 0) & (tp_total > 0)
            olrp[present[found]] = minima[found]
        return _mean(olrp)


#: The cost of one cumulative-sum call, in padded entries (the unit of ``padded_rows``).
_CALL_COST = 3000
_MAX_ROWS = 64            # rows of a block (bounds the search for the blocks)


def padded_rows(bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """A layout of the runs ``bounds[k]:bounds[k + 1]`` of a flat array as the rows of a few
    zero-padded 2-D blocks, so that a running sum restarted at each run is one
    ``cumsum(axis=1)`` per block (each row summed in order: the floats of a running sum
    over the run alone). The runs, longest first, are cut into blocks (of contiguous lengths)
    that cost least: a call (``_CALL_COST`` entries) plus the padded entries.

    Returns ``src`` (per padded entry its flat index, -1 for padding), ``back`` (per flat
    index its padded entry) and the blocks ``(start, rows, columns)``.

    >>> src, back, blocks = padded_rows(np.array([0, 2, 2, 5]))
    >>> src.tolist(), back.tolist(), blocks
    ([2, 3, 4, 0, 1, -1], [3, 4, 0, 1, 2], [(0, 2, 3)])
    """
    lengths = np.diff(bounds)
    runs = np.flatnonzero(lengths)
    runs = runs[np.argsort(-lengths.take(runs), kind="stable")]
    size = lengths.take(runs).tolist()
    # best[j]: least cost of the first j runs; a block of runs i..j-1 is size[i] wide.
    best, cut = [0] + [0] * len(size), [0] * (len(size) + 1)
    for j in range(1, len(size) + 1):
        best[j], cut[j] = min((best[i] + _CALL_COST + (j - i) * size[i], i)
                              for i in range(max(j - _MAX_ROWS, 0), j))
    edges, j = [], len(size)
    while j:
        edges.append((cut[j], j))
        j = cut[j]
    src_parts, blocks, start = [], [], 0
    for i, j in reversed(edges):
        rows, cols = j - i, size[i]
        part = np.full((rows, cols), -1, np.int64)
        for r, k in enumerate(runs[i:j].tolist()):
            part[r, :lengths[k]] = np.arange(bounds[k], bounds[k + 1])
        src_parts.append(part.ravel())
        blocks.append((start, rows, cols))
        start += rows * cols
    src = np.concatenate(src_parts) if src_parts else np.zeros(0, np.int64)
    back = np.empty(int(bounds[-1] - bounds[0]) if len(bounds) else 0, np.int64)
    real = np.flatnonzero(src >= 0)
    back[src.take(real) - (bounds[0] if len(bounds) else 0)] = real
    return src, back, blocks
