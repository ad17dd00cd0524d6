"""The tidy export of the LVIS, Open Images and CrowdPose results (docs/tidy-export.md §4).

:func:`deteval.tidy.tidy_columns` hands these results here. LVIS and CrowdPose are COCO
evaluations with their own selection, so their rows are built by the COCO export's own
column builders on a view of the result (the settings, objects and match table the
protocol used); Open Images has its own rows (string image ids, normalised boxes, group-of
boxes counted once). Each protocol adds the columns that explain its rules:

* LVIS: ``frequency``, ``neg_listed``, ``not_exhaustive`` and ``not_evaluated_reason``;
* Open Images: ``group_of``, ``source_row`` and ``expanded`` (the hierarchy expansion);
* CrowdPose: ``crowd_index`` and ``crowd_split``.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import numpy as np

from ._arrays import frozen

__all__ = ["LVIS_COLUMNS", "OPENIMAGES_COLUMNS", "CROWDPOSE_COLUMNS", "protocol_columns"]

#: The columns each protocol adds after :data:`deteval.tidy.TIDY_COLUMNS`.
LVIS_COLUMNS = ("frequency", "neg_listed", "not_exhaustive", "not_evaluated_reason")
OPENIMAGES_COLUMNS = ("group_of", "source_row", "expanded")
CROWDPOSE_COLUMNS = ("crowd_index", "crowd_split")

#: Why an LVIS detection (or object) is not evaluated, first that applies.
LVIS_REASONS = ("beyond_max_detections", "unknown_category", "no_area", "not_verified")


def protocol_columns(result: Any, iou_threshold: Any, outcomes: bool) -> dict | None:
    """The tidy columns of an LVIS, Open Images or CrowdPose result; None for another
    type."""
    from .protocols.crowdpose import CrowdPoseResult
    from .protocols.lvis import LVISResult
    from .protocols.openimages import OpenImagesResult

    if isinstance(result, LVISResult):
        return _lvis(result, iou_threshold, outcomes)
    if isinstance(result, CrowdPoseResult):
        return _crowdpose(result, iou_threshold, outcomes)
    if isinstance(result, OpenImagesResult):
        return _openimages(result, iou_threshold, outcomes)
    return None


def _coco_like(view: Any, similarity: Any, iou_threshold: Any, outcomes: bool,
               extra: dict) -> dict:
    """The COCO export's columns of ``view`` (params, dataset, detections, matches), then
    the threshold-independent ``extra`` columns, repeated for each threshold covered."""
    from .tidy import (
        OUTCOME_COLUMNS,
        TIDY_COLUMNS,
        _fixed_columns,
        _stack,
        _threshold_columns,
        thresholds_of,
    )

    chosen = thresholds_of(view, iou_threshold)
    base = dict(_fixed_columns(view, True), **extra)
    blocks = [dict(base, **_threshold_columns(view, t, similarity, outcomes)) for t in chosen]
    names = [c for c in TIDY_COLUMNS if outcomes or c not in OUTCOME_COLUMNS] + list(extra)
    return {name: _stack([block[name] for block in blocks]) for name in names}


def _pairs(p: Any, dataset: Any, dt: Any, crowd: np.ndarray):
    """``similarity(dt_rows, gt_rows)`` of aligned pairs by the COCO routines."""
    from .protocols._coco_stages import pair_similarity

    gt = dataset.gt
    pair = pair_similarity(p, dataset, dt, np.arange(len(gt)), dt.as_xywh(), gt.as_xywh(),
                           crowd)
    return lambda dt_rows, gt_rows: pair(dt_rows, gt_rows) if len(dt_rows) else np.zeros(0)


# ------------------------------------------------------------------------------------ LVIS

def _lvis(result: Any, iou_threshold: Any, outcomes: bool) -> dict:
    from .protocols.coco import COCOParams
    from .protocols.lvis import top_per_image
    from .tidy import _coded

    if result.lvis_gt is None:
        raise ValueError("this LVISResult keeps no federated keys (lvis_gt); evaluate with "
                         "evaluate_lvis to export its rows")
    p, dt, lvis = result.params, result.detections, result.lvis_gt
    dataset = result.dataset
    gt = dataset.gt
    # lvis-api reads no iscrowd: every object is an ordinary one (IoU, not IoA).
    no_crowd = np.zeros(len(gt), dtype=bool)
    plain = dataclasses.replace(dataset, gt=gt.replace(iscrowd=no_crowd))
    view = SimpleNamespace(params=p, dataset=plain, detections=dt, matches=result.matches)
    cp = COCOParams(iou_type=p.iou_type, iou_thresholds=p.iou_thresholds,
                    dilation_ratio=p.dilation_ratio)
    similarity = _pairs(cp, plain, dt, no_crowd)

    n_k = len(dataset.categories)
    known = dt.category_index >= 0
    dt_key = dt.image_index * n_k + np.maximum(dt.category_index, 0)
    gt_key = gt.image_index * n_k + gt.category_index
    keys = np.r_[dt_key, gt_key]
    row_known = np.r_[known, np.ones(len(gt), bool)]
    neg = row_known & np.isin(keys, lvis.negative_keys)
    not_exhaustive = row_known & np.isin(keys, lvis.not_exhaustive_keys)
    category_row = np.r_[dt.category_index, gt.category_index].astype(np.int64)

    # Why not evaluated (the order of lvis.py's selection; the first that applies).
    in_cut = top_per_image(dt.image_index, dt.scores, p.max_detections)
    dt_area_ok = (dt.area > 0) & (dt.area < np.inf)
    present = np.unique(gt_key[(gt.area > 0) & (gt.area < np.inf)])
    verified = np.isin(dt_key, present) | np.isin(dt_key, lvis.negative_keys)
    reason = np.select([~in_cut, ~known, ~dt_area_ok, ~verified], [0, 1, 2, 3], -1)
    gt_reason = np.where((gt.area > 0) & (gt.area < np.inf), -1, 2)
    extra = {
        "frequency": _coded(category_row, lvis.frequency),
        "neg_listed": frozen(neg),
        "not_exhaustive": frozen(not_exhaustive),
        "not_evaluated_reason": _coded(np.r_[reason, gt_reason], LVIS_REASONS),
    }
    return _coco_like(view, similarity, iou_threshold, outcomes, extra)


# ------------------------------------------------------------------------------- CrowdPose

_SPLITS = ("easy", "medium", "hard")


def _crowdpose(result: Any, iou_threshold: Any, outcomes: bool) -> dict:
    from .protocols.crowdpose import scaled_dataset
    from .tidy import _coded

    p = result.params
    scaled = scaled_dataset(result.dataset, p)
    cp = p.coco_params()
    view = SimpleNamespace(params=cp, dataset=scaled, detections=result.detections,
                           matches=result.matches)
    similarity = _pairs(cp, scaled, result.detections, scaled.gt.iscrowd)
    image_row = np.r_[result.detections.image_index, scaled.gt.image_index].astype(np.int64)
    crowd = np.asarray(result.crowd_index, dtype=np.float64)
    first, second = p.crowd_index_limits
    split = np.where(crowd < first, 0, np.where(crowd < second, 1, 2))
    extra = {"crowd_index": frozen(crowd[image_row]),
             "crowd_split": _coded(split[image_row], _SPLITS)}
    return _coco_like(view, similarity, iou_threshold, outcomes, extra)


# ----------------------------------------------------------------------------- Open Images

def _openimages(result: Any, iou_threshold: Any, outcomes: bool) -> dict:
    from .matching import TP
    from .tidy import (
        _GT_STATUS_CODE,
        _KINDS,
        _STATUS,
        OUTCOME_COLUMNS,
        TIDY_COLUMNS,
        Coded,
        _coded,
        thresholds_of,
    )

    thresholds_of(result, iou_threshold)        # only 0.5 is evaluated: checked
    gt, dt, table = result.gt, result.detections, result.matches
    n_dt, n_gt = len(dt.label), len(gt.label)
    images = np.unique(np.r_[gt.image_id, dt.image_id].astype(str))
    image_code = np.searchsorted(images, np.r_[dt.image_id, gt.image_id].astype(str))
    class_of = _class_rows(np.r_[dt.label, gt.label], result.classes)
    area = np.r_[_box_area(dt.xyxy), _box_area(gt.xyxy)]
    dt_status = np.asarray(result.dt_status, dtype=np.int64)
    dt_match = table.detection_matches(0)[0]
    # A group-of box is a true positive when its one true positive was counted (a
    # detection carries it, status TP); plain boxes when matched.
    carrier = np.full(n_gt, -1, dtype=np.int64)
    rows = np.flatnonzero((dt_match >= 0) & (dt_status == TP))
    carrier[dt_match[rows]] = rows
    gt_status = np.where(carrier >= 0, 1, 0)
    iou = np.full(n_dt + n_gt, np.nan)
    rows = np.flatnonzero(dt_match >= 0)
    iou[rows] = _match_overlap(dt.xyxy[rows], gt.xyxy[dt_match[rows]],
                               gt.group_of[dt_match[rows]])
    hit = np.flatnonzero(carrier >= 0)
    iou[n_dt + hit] = iou[carrier[hit]]
    match_row = np.r_[dt_match, carrier].astype(np.int64)
    dt_rows, gt_rows = result.dt_source_row, result.gt_source_row
    if dt_rows is None:
        dt_rows, gt_rows = np.arange(n_dt), np.arange(n_gt)
    source = np.r_[dt_rows, gt_rows].astype(np.int64)
    columns = {
        "kind": Coded(frozen(np.repeat(np.arange(2, dtype=np.int32), [n_dt, n_gt])), _KINDS),
        "row": frozen(np.r_[np.arange(n_dt), np.arange(n_gt)].astype(np.int64)),
        "image_id": _coded(image_code, images),
        "file_name": Coded(frozen(np.full(n_dt + n_gt, -1, np.int32)), ()),
        "category_id": frozen(class_of.astype(np.int64)),
        "category": _coded(class_of, result.classes),
        "score": frozen(np.r_[dt.score.astype(np.float64), np.full(n_gt, np.nan)]),
        "area": frozen(area),
        "area_range": Coded(frozen(np.full(n_dt + n_gt, -1, np.int32)), ()),
        "crowd": frozen(np.r_[np.zeros(n_dt, bool), gt.group_of.astype(bool)]),
        "iou_threshold": frozen(np.full(n_dt + n_gt, float(table.iou_thresholds[0]))),
        "status": Coded(frozen(np.r_[dt_status + 1, _GT_STATUS_CODE[gt_status + 1]]
                               .astype(np.int32)), _STATUS),
        "match_row": frozen(match_row),
        "match_id": frozen(match_row.copy()),
        "iou": frozen(iou),
    }
    if outcomes:
        columns.update(_openimages_outcomes(result, images))
    columns.update({
        "group_of": frozen(np.r_[np.zeros(n_dt, bool), gt.group_of.astype(bool)]),
        "source_row": frozen(source),
        "expanded": frozen(np.r_[_copies(dt_rows), _copies(gt_rows)]),
    })
    names = [c for c in TIDY_COLUMNS if outcomes or c not in OUTCOME_COLUMNS]
    return {name: columns[name] for name in names + list(OPENIMAGES_COLUMNS)}


def _copies(source: np.ndarray) -> np.ndarray:
    """Whether each expanded row is an ancestor's copy: the expansion lists a row's own label
    first, then its copies right after it."""
    source = np.asarray(source)
    return np.r_[False, source[1:] == source[:-1]] if len(source) else np.zeros(0, bool)


def _class_rows(labels: np.ndarray, classes: tuple[str, ...]) -> np.ndarray:
    """Position of each label in the label map (every label is in it: the evaluation
    checked)."""
    from .protocols.openimages import class_index

    return class_index(labels, classes, "", None)


def _box_area(xyxy: np.ndarray) -> np.ndarray:
    """Area of normalised ``(xmin, ymin, xmax, ymax)`` boxes (the TF tool's product)."""
    return ((xyxy[:, 3] - xyxy[:, 1]) * (xyxy[:, 2] - xyxy[:, 0])).astype(np.float64)


def _match_overlap(dt_xyxy: np.ndarray, gt_xyxy: np.ndarray, group: np.ndarray) -> np.ndarray:
    """IoU with a plain box, IoA (over the detection) with a group-of box: what the Open
    Images rule matched by, with its own arithmetic."""
    from .protocols._openimages_match import overlaps

    yx = [1, 0, 3, 2]
    iou, ioa = overlaps(dt_xyxy[:, yx], gt_xyxy[:, yx])
    return np.where(group, ioa, iou)


def _openimages_outcomes(result: Any, images: np.ndarray) -> dict:
    """The outcome columns: :func:`deteval.match_outcomes` on the evaluated boxes and
    detections (group-of boxes as crowd regions; detections of an image without boxes or
    labels, and of a class with no box in their image and no label, are left out: their
    outcome is missing)."""
    from .data import Categories, Dataset, Detections, GroundTruth, Images
    from .outcomes import DT_OUTCOMES, GT_OUTCOMES, match_outcomes
    from .tidy import Coded

    gt, dt = result.gt, result.detections
    n_dt, n_gt = len(dt.label), len(gt.label)
    classes = np.asarray(result.classes, dtype=str)
    gt_img = np.searchsorted(images, gt.image_id.astype(str))
    dt_img = np.searchsorted(images, dt.image_id.astype(str))
    kept = np.flatnonzero(result.dt_status >= 0)
    dataset = Dataset(Images(ids=np.arange(1, len(images) + 1)),
                      Categories(ids=np.arange(1, len(classes) + 1),
                                 names=tuple(classes.tolist())),
                      GroundTruth(image_index=gt_img,
                                  category_index=_class_rows(gt.label, result.classes),
                                  boxes=gt.xyxy, iscrowd=gt.group_of.astype(bool)))
    detections = Detections(image_index=dt_img[kept],
                            category_index=_class_rows(dt.label[kept], result.classes),
                            boxes=dt.xyxy[kept], scores=dt.score[kept])
    found = match_outcomes(dataset, detections, iou_threshold=float(
        result.matches.iou_thresholds[0]))
    labels = DT_OUTCOMES + tuple(g for g in GT_OUTCOMES if g not in DT_OUTCOMES)
    gt_code = np.array([labels.index(g) for g in GT_OUTCOMES], dtype=np.int32)
    code = np.full(n_dt, -1, dtype=np.int32)
    code[kept] = found.dt_outcome
    dt_row = np.full(n_dt, -1, dtype=np.int64)
    dt_row[kept] = found.dt_gt
    dt_iou = np.full(n_dt, np.nan)
    dt_iou[kept] = found.dt_iou
    gt_dt = np.where(found.gt_dt >= 0, kept[np.maximum(found.gt_dt, 0)], -1) \
        if len(kept) else np.full(n_gt, -1, dtype=np.int64)
    gt_iou = np.where(gt_dt >= 0, dt_iou[np.maximum(gt_dt, 0)] if n_dt else np.nan, np.nan)
    return {
        "outcome": Coded(frozen(np.r_[code, gt_code[found.gt_outcome]].astype(np.int32)),
                         labels),
        "outcome_row": frozen(np.r_[dt_row, gt_dt].astype(np.int64)),
        "outcome_iou": frozen(np.r_[dt_iou, gt_iou]),
    }
