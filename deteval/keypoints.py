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
share a keypoint count, which numpy sums the same way (semantics.md §5.4).

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

import numpy as np

__all__ = ["COCO_PERSON_SIGMAS", "pair_oks"]

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
    sigmas = np.asarray(sigmas, dtype=np.float64)
    out = np.zeros(len(pair_dt), dtype=np.float64)
    if len(pair_dt) == 0:
        return out
    variances = (sigmas * 2) ** 2
    # Far-off keypoints (|coordinates| beyond ~1e154) overflow to an infinite distance, whose
    # similarity exp(-inf) is 0, as in pycocotools: not worth a warning.
    with np.errstate(over="ignore"):
        return _pair_oks(dt_keypoints, gt_keypoints, gt_xywh, gt_area, pair_dt, pair_gt,
                         variances, out)


def _pair_oks(dt_keypoints, gt_keypoints, gt_xywh, gt_area, pair_dt, pair_gt, variances, out):
    k = len(variances)
    g = gt_keypoints[pair_gt, :k]
    d = dt_keypoints[pair_dt, :k]
    visible = g[:, :, 2] > 0
    n_visible = visible.sum(axis=1)
    dx = d[:, :, 0] - g[:, :, 0]
    dy = d[:, :, 1] - g[:, :, 1]
    hidden = n_visible == 0
    if hidden.any():
        box = gt_xywh[pair_gt[hidden]]
        x0 = (box[:, 0] - box[:, 2])[:, None]
        x1 = (box[:, 0] + box[:, 2] * 2)[:, None]
        y0 = (box[:, 1] - box[:, 3])[:, None]
        y1 = (box[:, 1] + box[:, 3] * 2)[:, None]
        xd, yd = d[hidden, :, 0], d[hidden, :, 1]
        dx[hidden] = np.maximum(0.0, x0 - xd) + np.maximum(0.0, xd - x1)
        dy[hidden] = np.maximum(0.0, y0 - yd) + np.maximum(0.0, yd - y1)
    area = gt_area[pair_gt][:, None]
    e = (dx ** 2 + dy ** 2) / variances / (area + np.spacing(1)) / 2
    similarity = np.exp(-e)
    # Pairs with m kept terms are summed together, as a C-contiguous (pairs, m) block.
    kept = np.where(hidden, k, n_visible)
    keep_mask = visible | hidden[:, None]
    for m in np.unique(kept):
        rows = np.flatnonzero(kept == m)
        block = np.ascontiguousarray(similarity[rows][keep_mask[rows]].reshape(len(rows), m))
        out[rows] = block.sum(axis=1) / m
    return out
