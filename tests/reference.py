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
