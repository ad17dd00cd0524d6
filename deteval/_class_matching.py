"""The two matching passes behind :mod:`deteval.confusion`: within the class, then across.

Both passes run the shared greedy matcher (:func:`~deteval.matching.match_detections`, COCO
rule, one IoU threshold, area range ``[0, inf]``, every detection kept) with the
evaluation's similarity (:mod:`deteval._similarity`: box, mask or boundary IoU, OKS, polygon
or rotated-box IoU), so the within-class pass is exactly :func:`deteval.match_outcomes`'
matching. See :mod:`deteval.confusion` for what the passes mean.

Examples
--------
>>> from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
>>> from deteval._similarity import evaluation_similarity
>>> ds = Dataset(Images(ids=[1]), Categories(ids=[1, 2]),
...              GroundTruth(image_index=[0], category_index=[1], boxes=[[0, 0, 10, 10]]))
>>> dt = Detections(image_index=[0], category_index=[0], boxes=[[0, 0, 10, 10]], scores=[1])
>>> m = match_two_passes(ds, dt, evaluation_similarity(ds, dt, "bbox", floor=0.5), 0.5, 0.0)
>>> m.dt_gt.tolist(), m.dt_same_class.tolist()     # matched across classes
([0], [False])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._similarity import Similarity
from .data import Dataset, Detections
from .matching import match_detections

__all__ = ["Matches", "match_two_passes", "take"]


def take(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]`` where ``rows >= 0``; a placeholder elsewhere (to be masked out)."""
    out = np.zeros(len(rows), dtype=values.dtype)
    ok = rows >= 0
    out[ok] = values[rows[ok]]
    return out


@dataclass(frozen=True)
class Matches:
    """Both passes: per detection and per object, what it matched (rows of the inputs)."""

    dt_counted: np.ndarray      # (n_dt,) bool: above threshold, known category, not ignored
    dt_ignored: np.ndarray      # (n_dt,) bool: matched a crowd / ignored object of its class
    dt_gt: np.ndarray           # (n_dt,) int: matched regular object (either pass), -1
    dt_same_class: np.ndarray   # (n_dt,) bool: matched in pass 1 (within the class)
    gt_regular: np.ndarray      # (n_gt,) bool: neither crowd nor ignored
    gt_dt: np.ndarray           # (n_gt,) int: matching detection (regular objects), -1


def match_two_passes(dataset: Dataset, detections: Detections, similarity: Similarity,
                     iou_threshold: float, score_threshold: float) -> Matches:
    """Pass 1 within each (image, category), pass 2 across the classes of each image on
    what pass 1 left (regular objects only)."""
    gt = dataset.gt
    n_k = len(dataset.categories)
    n_dt, n_gt = len(detections), len(gt)
    crowd = gt.iscrowd
    ignored_gt = similarity.gt_ignore
    common = dict(dt_scores=detections.scores, dt_area=detections.area, gt_area=gt.area,
                  similarity=similarity.pair, iou_thresholds=np.array([iou_threshold]),
                  area_ranges=np.array([[0.0, np.inf]]), max_detections=max(n_dt, 1))
    selected = (detections.category_index >= 0) & (detections.scores >= score_threshold)
    # Pass 1: within the class.
    first = match_detections(
        dt_group=np.where(selected, detections.image_index * n_k + detections.category_index,
                          -1),
        gt_group=gt.image_index * n_k + gt.category_index, gt_crowd=crowd,
        gt_ignore=ignored_gt, **common)
    dt_gt1 = first.detection_matches()[0]
    gt_dt1 = first.gt_matches()[0]
    dt_ignored = (dt_gt1 >= 0) & take(ignored_gt, dt_gt1)
    dt_same = (dt_gt1 >= 0) & ~dt_ignored
    # Pass 2: across classes, on what pass 1 left (no crowd region among them).
    dt_free = selected & (dt_gt1 < 0)
    gt_free = ~ignored_gt & (gt_dt1 < 0)
    second = match_detections(
        dt_group=np.where(dt_free, detections.image_index, -1),
        gt_group=np.where(gt_free, gt.image_index, -1), gt_crowd=np.zeros(n_gt, bool),
        gt_ignore=np.zeros(n_gt, bool), **common)
    dt_gt2 = second.detection_matches()[0]
    dt_gt = np.where(dt_same, dt_gt1, np.where(dt_free, dt_gt2, -1))
    gt_dt = np.full(n_gt, -1, dtype=np.int64)
    matched = np.flatnonzero(dt_gt >= 0)
    gt_dt[dt_gt[matched]] = matched
    return Matches(dt_counted=selected & ~dt_ignored, dt_ignored=dt_ignored, dt_gt=dt_gt,
                   dt_same_class=dt_same, gt_regular=~ignored_gt, gt_dt=gt_dt)
