"""Slow, obviously correct references for the vectorised code, one plain loop at a time.

Each function follows the documented definition literally in Python floats; the tests compare
the vectorised functions of deteval with them on random inputs.
"""

from __future__ import annotations

import math

import numpy as np


def _side(lo: float, hi: float) -> float:
    """Length of the interval [lo, hi]; 0 if it is empty or inverted."""
    return max(hi - lo, 0.0)


def _pairwise(a, b, pair_function) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    out = np.zeros((len(a), len(b)))
    for i in range(len(a)):
        for j in range(len(b)):
            out[i, j] = pair_function([float(v) for v in a[i]], [float(v) for v in b[j]])
    return out


def _iou_parts(p, q):
    """Intersection, union and IoU of two xyxy boxes, inverted sides counting as 0."""
    area_p = _side(p[0], p[2]) * _side(p[1], p[3])
    area_q = _side(q[0], q[2]) * _side(q[1], q[3])
    inter = _side(max(p[0], q[0]), min(p[2], q[2])) * _side(max(p[1], q[1]), min(p[3], q[3]))
    union = area_p + area_q - inter
    return inter, union, (inter / union if union > 0 else 0.0)


def reference_box_iou(a, b) -> np.ndarray:
    """IoU of every pair of xyxy boxes; 0 when the union is empty."""
    return _pairwise(a, b, lambda p, q: _iou_parts(p, q)[2])


def reference_box_ioa(a, b) -> np.ndarray:
    """Intersection over the area of the box from ``a``; 0 when that area is 0."""

    def ioa(p, q):
        inter = _iou_parts(p, q)[0]
        area_p = _side(p[0], p[2]) * _side(p[1], p[3])
        return inter / area_p if area_p > 0 else 0.0

    return _pairwise(a, b, ioa)


def reference_generalized_box_iou(a, b) -> np.ndarray:
    """GIoU = IoU - (C - U) / C with C the enclosing box area; IoU alone when C is 0."""

    def giou(p, q):
        _, union, iou = _iou_parts(p, q)
        hull = _side(min(p[0], q[0]), max(p[2], q[2])) * _side(min(p[1], q[1]), max(p[3], q[3]))
        return iou - max(hull - union, 0.0) / hull if hull > 0 else iou

    return _pairwise(a, b, giou)


def _centre_term(p, q) -> float:
    hull_w = _side(min(p[0], q[0]), max(p[2], q[2]))
    hull_h = _side(min(p[1], q[1]), max(p[3], q[3]))
    diagonal2 = hull_w**2 + hull_h**2
    dx = (p[0] + p[2]) / 2 - (q[0] + q[2]) / 2
    dy = (p[1] + p[3]) / 2 - (q[1] + q[3]) / 2
    return (dx**2 + dy**2) / diagonal2 if diagonal2 > 0 else 0.0


def reference_distance_box_iou(a, b) -> np.ndarray:
    """DIoU = IoU - (centre distance)^2 / (enclosing diagonal)^2; no penalty for a 0 diagonal."""
    return _pairwise(a, b, lambda p, q: _iou_parts(p, q)[2] - _centre_term(p, q))


def reference_complete_box_iou(a, b) -> np.ndarray:
    """CIoU = DIoU - alpha v, v from the atan2 of the sides, alpha = v / ((1 - IoU) + v) or 0."""

    def ciou(p, q):
        iou = _iou_parts(p, q)[2]
        angle_p = math.atan2(_side(p[0], p[2]), _side(p[1], p[3]))
        angle_q = math.atan2(_side(q[0], q[2]), _side(q[1], q[3]))
        v = 4 / math.pi**2 * (angle_q - angle_p) ** 2
        alpha = v / ((1 - iou) + v) if (1 - iou) + v > 0 else 0.0
        return iou - _centre_term(p, q) - alpha * v

    return _pairwise(a, b, ciou)


def reference_greedy_match(*, dt_group, dt_scores, dt_tie_key, dt_area, gt_group, gt_crowd,
                           gt_ignore, gt_area, similarity, iou_thresholds, area_ranges,
                           max_detections) -> list[dict[str, np.ndarray]]:
    """pycocotools' ``evaluateImg`` matching loop, literally (semantics.md §6.1-§6.3).

    Takes the arguments of ``deteval.matching.match_detections`` and runs, for every area
    range, every group and every IoU threshold, the double loop over detections (by
    descending score, then tie order, only the top ``max_detections``) and ground truth
    (non-ignored first, each part in row order). Returns one dict per area range with the
    dense views of ``MatchTable``: ``detection_matches`` (T, n_dt), ``gt_matches`` (T, n_gt)
    (for a crowd object: the detection matched last), ``detection_status`` and ``gt_status``
    (1 TP, 0 FP/FN, 2 ignored, -1 not evaluated).
    """
    n_dt, n_gt = len(dt_group), len(gt_group)
    thresholds = [float(t) for t in iou_thresholds]
    groups = sorted({int(g) for g in dt_group if g >= 0} | {int(g) for g in gt_group if g >= 0})
    out = []
    for lo, hi in np.asarray(area_ranges, dtype=np.float64).reshape(-1, 2).tolist():
        detection_matches = np.full((len(thresholds), n_dt), -1, dtype=np.int64)
        gt_matches = np.full((len(thresholds), n_gt), -1, dtype=np.int64)
        detection_status = np.full((len(thresholds), n_dt), -1, dtype=np.int64)
        gt_status = np.full((len(thresholds), n_gt), -1, dtype=np.int64)
        for group in groups:
            gts = [j for j in range(n_gt) if gt_group[j] == group]
            ignored = {j: bool(gt_ignore[j]) or gt_area[j] < lo or gt_area[j] > hi for j in gts}
            gts = [j for j in gts if not ignored[j]] + [j for j in gts if ignored[j]]
            dts = [d for d in range(n_dt) if dt_group[d] == group]
            tie = np.zeros(n_dt, np.int64) if dt_tie_key is None else dt_tie_key
            dts = sorted(dts, key=lambda d: (-dt_scores[d], tie[d], d))
            dts = dts[:max_detections]
            for t_index, threshold in enumerate(thresholds):
                taken = set()
                for d in dts:
                    best, match = min(threshold, 1 - 1e-10), None
                    for j in gts:
                        if j in taken and not gt_crowd[j]:
                            continue
                        if match is not None and not ignored[match] and ignored[j]:
                            break
                        iou = float(np.asarray(similarity(np.array([d]), np.array([j])))[0])
                        if iou < best:
                            continue
                        best, match = iou, j
                    if match is not None:
                        taken.add(match)
                        detection_matches[t_index, d] = match
                        gt_matches[t_index, match] = d
                        detection_status[t_index, d] = 2 if ignored[match] else 1
                    else:
                        outside = dt_area[d] < lo or dt_area[d] > hi
                        detection_status[t_index, d] = 2 if outside else 0
                for j in gts:
                    gt_status[t_index, j] = 2 if ignored[j] else (1 if j in taken else 0)
        out.append({"detection_matches": detection_matches, "gt_matches": gt_matches,
                    "detection_status": detection_status, "gt_status": gt_status})
    return out
