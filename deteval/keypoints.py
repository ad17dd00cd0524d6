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


_CHUNK_PAIRS = 8192  # pairs per pass: every temporary of a chunk stays in cache


def _pair_oks(dt_keypoints, gt_keypoints, gt_xywh, gt_area, pair_dt, pair_gt, variances, out):
    k = len(variances)
    for lo in range(0, len(pair_dt), _CHUNK_PAIRS):
        d_rows = pair_dt[lo:lo + _CHUNK_PAIRS]
        g_rows = pair_gt[lo:lo + _CHUNK_PAIRS]
        # Only the rows of this chunk's pairs are read (never whole tables: the matcher
        # calls this once per category and chunk of pairs).
        d = dt_keypoints.take(d_rows, axis=0)
        g = gt_keypoints.take(g_rows, axis=0)
        visible = g[:, :k, 2] > 0
        n_visible = visible.sum(axis=1)
        hidden = n_visible == 0
        xd, yd = d[:, :k, 0], d[:, :k, 1]
        dx = np.subtract(xd, g[:, :k, 0])
        dy = np.subtract(yd, g[:, :k, 1])
        if hidden.any():
            # No visible keypoint: the distance outside the object's box enlarged by its
            # size on each side (pycocotools' x0, x1, y0, y1).
            h_rows = np.flatnonzero(hidden)
            box = np.asarray(gt_xywh, dtype=np.float64).take(g_rows.take(h_rows), axis=0)
            x0 = (box[:, 0] - box[:, 2])[:, None]
            x1 = (box[:, 0] + box[:, 2] * 2)[:, None]
            y0 = (box[:, 1] - box[:, 3])[:, None]
            y1 = (box[:, 1] + box[:, 3] * 2)[:, None]
            xh, yh = xd[h_rows], yd[h_rows]
            dx[h_rows] = np.maximum(0.0, x0 - xh) + np.maximum(0.0, xh - x1)
            dy[h_rows] = np.maximum(0.0, y0 - yh) + np.maximum(0.0, yh - y1)
        # e = (dx ** 2 + dy ** 2) / vars / (area + eps) / 2, the same operations in the same
        # order as pycocotools, in place.
        np.square(dx, out=dx)
        np.square(dy, out=dy)
        e = np.add(dx, dy, out=dx)
        np.divide(e, variances, out=e)
        scale = np.asarray(gt_area, dtype=np.float64).take(g_rows) + np.spacing(1)
        np.divide(e, scale[:, None], out=e)
        np.divide(e, 2, out=e)
        np.negative(e, out=e)
        similarity = np.exp(e, out=e)
        # Pairs with m kept terms are summed together, as a C-contiguous (pairs, m) block.
        kept = np.where(hidden, k, n_visible)
        full = kept == k
        chunk_out = out[lo:lo + _CHUNK_PAIRS]
        if full.any():
            rows = np.flatnonzero(full)
            chunk_out[rows] = similarity[rows].sum(axis=1) / k
        if not full.all():
            partial = np.flatnonzero(~full)
            part_visible = visible[partial]
            part_kept = kept[partial]
            for m in np.unique(part_kept).tolist():
                sel = np.flatnonzero(part_kept == m)
                rows = partial[sel]
                block = similarity[rows][part_visible[sel]].reshape(len(rows), m)
                chunk_out[rows] = block.sum(axis=1) / m
    return out
