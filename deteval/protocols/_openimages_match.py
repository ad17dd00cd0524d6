"""The Open Images matching rule (VOC greedy rule, then group-of boxes by IoA), vectorised.

Rules: ``docs/protocols/openimages.md`` §3, §6, §7. All (image, class) groups are processed at
once: candidate pairs come from a sorted join on the group key, the best box of each
detection from one lexicographic sort, the first passing detection on each box from another.
The only Python loops run over groups whose detections share a score (to reproduce the
reference's unstable ``np.argsort`` order exactly) and, in the accumulation, over classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OIDMatch:
    """Per-detection and per-box outcome of the Open Images rule (arrays over given rows)."""

    dt_rank: np.ndarray       # position in its (image, class) by the reference order, -1
    dt_kept: np.ndarray       # evaluated (rank < max per class)
    dt_tp: np.ndarray         # matched a plain box
    dt_match_gt: np.ndarray   # plain box matched, or the group-of box absorbing it, -1
    dt_in_group: np.ndarray   # absorbed by a group-of box
    dt_best_gt: np.ndarray    # best plain box by IoU (-1: none)
    dt_best_iou: np.ndarray   # its IoU (0 when none, NaN when not kept)
    group_score: np.ndarray   # per GT: highest absorbed score (0 when none; plain boxes 0)


def _tf_descending_order(group: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Rows sorted by group, then by ``np.argsort(scores)[::-1]`` inside each group.

    ``group`` must be non-decreasing. Groups whose scores are distinct have one descending
    order; a group with equal scores is sorted by numpy's own (unstable) ``argsort`` on its
    scores in row order, exactly as the reference does.
    """
    n = len(scores)
    order = np.lexsort((-scores, group))
    if n < 2:
        return order
    g, s = group[order], scores[order]
    tie = (g[1:] == g[:-1]) & (s[1:] == s[:-1])
    if not tie.any():
        return order
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    ends = np.r_[starts[1:], n]
    tied_groups = np.unique(np.searchsorted(starts, np.flatnonzero(tie), side="right") - 1)
    for k in tied_groups.tolist():
        lo, hi = starts[k], ends[k]
        rows = np.sort(order[lo:hi])          # the group's rows in input order
        order[lo:hi] = rows[np.argsort(scores[rows])[::-1]]
    return order


def _pairs(dt_key: np.ndarray, gt_key: np.ndarray, gt_rows: np.ndarray):
    """All (detection, box) pairs with equal keys; boxes in ``gt_rows`` order within a key."""
    keys = gt_key[gt_rows]
    order = np.argsort(keys, kind="stable")
    sorted_rows, sorted_keys = gt_rows[order], keys[order]
    lo = np.searchsorted(sorted_keys, dt_key, side="left")
    hi = np.searchsorted(sorted_keys, dt_key, side="right")
    count = hi - lo
    pair_dt = np.repeat(np.arange(len(dt_key)), count)
    offset = np.arange(len(pair_dt)) - np.repeat(np.cumsum(count) - count, count)
    pair_pos = np.repeat(lo, count) + offset
    return pair_dt, sorted_rows[pair_pos], pair_pos


def overlaps(dt_box: np.ndarray, gt_box: np.ndarray):
    """Intersection, IoU and IoA (over the detection) of row-wise pairs, TF's operations.

    Boxes are (ymin, xmin, ymax, xmax).
    """
    zeros = np.zeros(len(dt_box))
    heights = np.maximum(zeros, np.minimum(dt_box[:, 2], gt_box[:, 2])
                         - np.maximum(dt_box[:, 0], gt_box[:, 0]))
    widths = np.maximum(zeros, np.minimum(dt_box[:, 3], gt_box[:, 3])
                        - np.maximum(dt_box[:, 1], gt_box[:, 1]))
    inter = heights * widths
    dt_area = (dt_box[:, 2] - dt_box[:, 0]) * (dt_box[:, 3] - dt_box[:, 1])
    gt_area = (gt_box[:, 2] - gt_box[:, 0]) * (gt_box[:, 3] - gt_box[:, 1])
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = inter / (dt_area + gt_area - inter)
        ioa = inter / dt_area
    return iou, ioa


def _first_best(pair_dt: np.ndarray, values: np.ndarray, pair_pos: np.ndarray, n_dt: int):
    """Per detection: the pair of highest value, the first box on ties (-1: no pair)."""
    best = np.full(n_dt, -1, dtype=np.int64)
    if len(pair_dt) == 0:
        return best
    order = np.lexsort((pair_pos, -values, pair_dt))
    first = np.r_[True, pair_dt[order][1:] != pair_dt[order][:-1]]
    best[pair_dt[order][first]] = order[first]
    return best


def match_openimages(dt_key, dt_score, dt_box, gt_key, gt_box, gt_group, *, threshold: float,
                     max_per_group: int) -> OIDMatch:
    """Match evaluated detections to boxes of the same key (image, class) by the OID rule.

    Parameters
    ----------
    dt_key : ndarray of int64, shape (n_dt,)
        Group key of each detection; -1 for a detection that is not evaluated.
    dt_score : ndarray of float64, shape (n_dt,)
    dt_box, gt_box : ndarray of float64, shape (n, 4)
        (ymin, xmin, ymax, xmax).
    gt_key : ndarray of int64, shape (n_gt,)
    gt_group : ndarray of bool, shape (n_gt,)
    threshold : float
        IoU threshold of plain boxes and IoA threshold of group-of boxes (``>=``).
    max_per_group : int
        Detections kept per key, by the order of §3.
    """
    n_dt, n_gt = len(dt_key), len(gt_key)
    live = np.flatnonzero(dt_key >= 0)
    order = live[_tf_descending_order(dt_key[live], dt_score[live])]
    keys = dt_key[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else keys
    lengths = np.diff(np.r_[starts, len(keys)])
    rank = np.full(n_dt, -1, dtype=np.int64)
    rank[order] = np.arange(len(order)) - np.repeat(starts, lengths)
    kept = (rank >= 0) & (rank < max_per_group)
    rank[~kept] = -1
    rows = np.flatnonzero(kept)

    # phase 1: plain boxes by IoU (§6)
    plain = np.flatnonzero(~gt_group)
    pair_dt, pair_gt, pair_pos = _pairs(dt_key[rows], gt_key, plain)
    iou, _ = overlaps(dt_box[rows][pair_dt], gt_box[pair_gt])
    best = _first_best(pair_dt, iou, pair_pos, len(rows))
    has = best >= 0
    best_gt = np.where(has, pair_gt[np.maximum(best, 0)] if len(pair_gt) else -1, -1)
    best_iou = np.where(has, iou[np.maximum(best, 0)] if len(iou) else 0.0, 0.0)
    passing = np.flatnonzero(has & (best_iou >= threshold))
    tp_local = np.zeros(len(rows), dtype=bool)
    if len(passing):
        by_box = passing[np.lexsort((rank[rows[passing]], best_gt[passing]))]
        first = np.r_[True, best_gt[by_box][1:] != best_gt[by_box][:-1]]
        tp_local[by_box[first]] = True

    # phase 2: group-of boxes by IoA over the detection (§7)
    rest = np.flatnonzero(~tp_local)
    groups = np.flatnonzero(gt_group)
    g_dt, g_gt, g_pos = _pairs(dt_key[rows[rest]], gt_key, groups)
    _, ioa = overlaps(dt_box[rows[rest]][g_dt], gt_box[g_gt])
    g_best = _first_best(g_dt, ioa, g_pos, len(rest))
    g_has = g_best >= 0
    absorbed = np.zeros(len(rest), dtype=bool)
    absorbed[g_has] = ioa[g_best[g_has]] >= threshold
    group_of_dt = np.full(len(rest), -1, dtype=np.int64)
    group_of_dt[absorbed] = g_gt[g_best[absorbed]]
    group_score = np.zeros(n_gt, dtype=np.float64)
    np.maximum.at(group_score, group_of_dt[absorbed], dt_score[rows[rest[absorbed]]])

    dt_tp = np.zeros(n_dt, dtype=bool)
    dt_tp[rows] = tp_local
    match_gt = np.full(n_dt, -1, dtype=np.int64)
    match_gt[rows[tp_local]] = best_gt[tp_local]
    match_gt[rows[rest[absorbed]]] = group_of_dt[absorbed]
    in_group = np.zeros(n_dt, dtype=bool)
    in_group[rows[rest[absorbed]]] = True
    out_best_gt = np.full(n_dt, -1, dtype=np.int64)
    out_best_gt[rows] = best_gt
    out_best_iou = np.full(n_dt, np.nan)
    out_best_iou[rows] = best_iou
    return OIDMatch(rank, kept, dt_tp, match_gt, in_group, out_best_gt, out_best_iou,
                    group_score)


def tf_average_precision(scores: np.ndarray, labels: np.ndarray, num_gt: float) -> float:
    """AP of one class exactly as ``metrics.compute_precision_recall`` and
    ``compute_average_precision`` compute it (§8); ``labels`` are float weights.

    Examples
    --------
    >>> tf_average_precision(np.array([.9, .8]), np.array([1.0, 0.0]), 2.0)
    0.5
    """
    if num_gt == 0:
        return float("nan")
    order = np.argsort(scores)[::-1]
    return ranked_average_precision(labels[order], num_gt)


def ranked_average_precision(tp: np.ndarray, num_gt: float) -> float:
    """:func:`tf_average_precision` of weights already in ranking order (the arithmetic
    after the tool's sort; TIDE's fixed runs keep the protocol's order of tied scores)."""
    fp = (tp <= 0).astype(float)
    cum_tp, cum_fp = np.cumsum(tp), np.cumsum(fp)
    precision = cum_tp.astype(float) / (cum_tp + cum_fp)
    recall = cum_tp.astype(float) / num_gt
    if not precision.size:
        return 0.0
    recall = np.concatenate([[0], recall, [1]])
    precision = np.concatenate([[0], precision, [0]])
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    changes = np.flatnonzero(recall[1:] != recall[:-1]) + 1
    return float(np.sum((recall[changes] - recall[changes - 1]) * precision[changes]))
