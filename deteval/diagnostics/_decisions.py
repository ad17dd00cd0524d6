"""Each protocol's decision about each detection, for LRP and calibration.

:func:`decisions` reads a result of :func:`~deteval.evaluate_coco`,
:func:`~deteval.evaluate_voc`, :func:`~deteval.evaluate_lvis`,
:func:`~deteval.evaluate_crowdpose` or :func:`~deteval.evaluate_openimages` at one of its
thresholds: the status of each detection (TP, FP, IGNORED, NOT_EVALUATED) in each of the
protocol's area ranges, the IoU (OKS) of each true positive as the protocol matched it, the
number of objects each category must find, and the order in which the protocol accumulates
its precision-recall curve. It reads the protocol's own match table and never matches again;
the rules per protocol are in ``docs/diagnostics/lrp.md`` §5.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data import index_in
from ..matching import FP, IGNORED, NOT_EVALUATED, TP

__all__ = ["Decisions", "decisions", "protocol_name"]


@dataclass(frozen=True, eq=False)
class Decisions:
    """What a protocol decided about each detection at one threshold.

    ``n`` detections (rows of the result's detections), ``K`` categories, ``A`` area ranges.

    Attributes
    ----------
    protocol : str
        "coco", "voc", "lvis", "crowdpose" or "openimages".
    iou_type : str
    iou_threshold : float
    category_ids : ndarray of int64, shape (K,)
        Open Images: the position of each class in the label map.
    category_names : tuple of str
    area_labels : tuple of str, length A
    scores : ndarray of float64, shape (n,)
        The scores the protocol ranks by (VOC's detectron2 presets: rounded).
    dt_k : ndarray of int64, shape (n,)
        Category position of each evaluated detection, -1 when not evaluated.
    status : ndarray of int8, shape (A, n)
        The codes of :mod:`deteval.matching`.
    iou : ndarray of float64, shape (A, n), or None
        IoU (OKS; Open Images: IoA for a group-of box) of each true positive, 0 elsewhere.
    order : ndarray of int64
        The evaluated detections in the protocol's accumulation order, category by category.
    bounds : ndarray of int64, shape (K + 1,)
        Category ``k`` owns ``order[bounds[k]:bounds[k + 1]]``.
    n_positive : ndarray of int64, shape (K, A)
        Objects each category must find (not ignored) in each range.
    image_ids : ndarray, shape (n,)
        The image id of each detection (str for Open Images), for messages.
    max_detections : int or None
        The protocol's cap (COCO, CrowdPose: per image and category; LVIS: per image;
        Open Images: per image and class; VOC: None).
    frequency : tuple of str
        LVIS: "r", "c" or "f" per category; empty otherwise.
    """

    protocol: str
    iou_type: str
    iou_threshold: float
    category_ids: np.ndarray
    category_names: tuple[str, ...]
    area_labels: tuple[str, ...]
    scores: np.ndarray
    dt_k: np.ndarray
    status: np.ndarray
    iou: np.ndarray | None
    order: np.ndarray
    bounds: np.ndarray
    n_positive: np.ndarray
    image_ids: np.ndarray
    max_detections: int | None
    frequency: tuple[str, ...] = ()

    @property
    def all_index(self) -> int:
        """The range labelled "all" (else the first)."""
        return self.area_labels.index("all") if "all" in self.area_labels else 0


def protocol_name(result: Any) -> str | None:
    """"coco", "voc", "lvis", "crowdpose" or "openimages" for a result of that protocol;
    None for anything else."""
    from ..protocols.coco import COCOResult
    from ..protocols.crowdpose import CrowdPoseResult
    from ..protocols.lvis import LVISResult
    from ..protocols.openimages import OpenImagesResult
    from ..protocols.voc import VOCResult

    for name, kind in (("coco", COCOResult), ("voc", VOCResult), ("lvis", LVISResult),
                       ("crowdpose", CrowdPoseResult), ("openimages", OpenImagesResult)):
        if isinstance(result, kind):
            return name
    return None


def threshold_index(thresholds: Any, tau: float) -> int:
    """Index of ``tau`` among the evaluated thresholds (to 1e-9); a ValueError otherwise."""
    hits = np.flatnonzero(np.abs(np.asarray(thresholds, dtype=np.float64) - tau) < 1e-9)
    if len(hits) == 0:
        shown = ", ".join(f"{t:g}" for t in thresholds)
        raise ValueError(f"iou_threshold {tau:g} was not evaluated; the result has {shown}")
    return int(hits[0])


def decisions(result: Any, tau: float | None = None, *, max_det: int | None = None,
              with_iou: bool = True, all_only: bool = False,
              with_order: bool = True) -> Decisions:
    """The decisions of ``result``'s protocol at threshold ``tau`` (default its first).

    ``max_det`` (COCO only) keeps the first ``max_det`` detections of each image and
    category (default the result's ``max_detections[-1]``); ``with_iou`` computes the IoU of
    the true positives; ``all_only`` keeps the range "all" alone; without ``with_order``,
    ``order`` is empty and ``bounds`` zeros (calibration needs neither).

    Raises
    ------
    TypeError
        Not a result of one of the five protocols.
    ValueError
        A result without a match table; ``tau`` not evaluated.
    """
    protocol = protocol_name(result)
    if protocol is None:
        raise TypeError(f"expected a result of evaluate_coco, evaluate_voc, evaluate_lvis, "
                        f"evaluate_crowdpose or evaluate_openimages; got "
                        f"{type(result).__name__}")
    if getattr(result, "matches", None) is None or result.detections is None:
        raise ValueError("this result keeps no match table (Evaluator.compute() does not); "
                         "evaluate with the protocol's evaluate_* function")
    if protocol == "voc":
        return _voc(result, tau, with_iou, with_order)
    if protocol == "openimages":
        return _openimages(result, tau, with_iou, with_order)
    view = _coco_view(result, protocol)
    if protocol != "coco" or max_det is None:
        max_det = int(view.params.max_detections[-1])
    return _coco_like(view, tau, max_det, with_iou, all_only, with_order)


# ------------------------------------------------------------ COCO, LVIS and CrowdPose

def _coco_view(result: Any, protocol: str) -> Any:
    """``result`` as a COCO evaluation: params, dataset, detections, matches, the pair
    similarity's crowd flags, names (LVIS and CrowdPose are COCO evaluations with their own
    selection; the view holds the settings and objects the protocol matched with)."""
    from types import SimpleNamespace

    from ..protocols.coco import COCOParams

    if protocol == "coco":
        return SimpleNamespace(protocol=protocol, params=result.params, dataset=result.dataset,
                               detections=result.detections, matches=result.matches,
                               crowd=result.dataset.gt.iscrowd, category_ids=result.category_ids,
                               category_names=tuple(result.category_names), frequency=(),
                               protocol_max=None)
    if protocol == "crowdpose":
        from ..protocols.crowdpose import scaled_dataset

        scaled = scaled_dataset(result.dataset, result.params)
        # the evaluation's ids: every image of the dataset and its categories, sorted
        params = dataclasses.replace(
            result.params.coco_params(),
            image_ids=tuple(np.unique(scaled.images.ids).tolist()),
            category_ids=tuple(result.category_ids.tolist()))
        return SimpleNamespace(protocol=protocol, params=params, dataset=scaled,
                               detections=result.detections,
                               matches=result.matches, crowd=scaled.gt.iscrowd,
                               category_ids=result.category_ids,
                               category_names=tuple(result.category_names), frequency=(),
                               protocol_max=None)
    # LVIS: sorted image and category ids, no crowd regions, every kept detection of a group.
    p, dataset = result.params, result.dataset
    n = max(len(result.detections), 1)
    params = COCOParams(iou_type=p.iou_type, iou_thresholds=p.iou_thresholds,
                        area_ranges=p.area_ranges, area_labels=p.area_labels,
                        max_detections=(n, n, n), dilation_ratio=p.dilation_ratio,
                        image_ids=tuple(np.sort(dataset.images.ids).tolist()),
                        category_ids=tuple(result.category_ids.tolist()))
    no_crowd = np.zeros(len(dataset.gt), dtype=bool)
    plain = dataclasses.replace(dataset, gt=dataset.gt.replace(iscrowd=no_crowd))
    return SimpleNamespace(protocol=protocol, params=params, dataset=plain,
                           detections=result.detections,
                           matches=result.matches, crowd=no_crowd,
                           category_ids=result.category_ids,
                           category_names=tuple(result.category_names),
                           frequency=tuple(result.frequency), protocol_max=p.max_detections)


def _coco_like(view: Any, tau: float | None, max_det: int, with_iou: bool,
               all_only: bool, with_order: bool) -> Decisions:
    """COCOeval's decisions: per range, ``detection_status``; order: category, descending
    score, image (sorted ids), rank in the image, as ``accumulate`` concatenates them."""
    from ..protocols._coco_stages import pair_similarity

    table, p, dataset, detections = view.matches, view.params, view.dataset, view.detections
    t = threshold_index(p.iou_thresholds, p.iou_thresholds[0] if tau is None else tau)
    pooled = not getattr(p, "use_categories", True)
    category_ids = np.asarray(p.category_ids, dtype=np.int64)
    n_k = 1 if pooled else len(category_ids)
    k_of_cat = np.zeros(len(dataset.categories), np.int64) if pooled \
        else index_in(dataset.categories.ids, category_ids)
    gt_k = np.where(table.gt_evaluated, k_of_cat[dataset.gt.category_index], -1)
    dt_k = np.where(detections.category_index >= 0,
                    k_of_cat[np.maximum(detections.category_index, 0)], -1)
    if pooled:      # an unknown category still belongs to the one pooled group
        dt_k = np.zeros(len(detections), np.int64)
    in_cut = table.dt_kept & (table.dt_rank < max_det)
    dt_k = np.where(in_cut, dt_k, -1)
    order, bounds = np.zeros(0, np.int64), np.zeros(n_k + 1, np.int64)
    if with_order:
        dt_img = index_in(dataset.images.ids, np.asarray(p.image_ids, dtype=np.int64))[
            detections.image_index]
        kept = np.flatnonzero(in_cut)
        order = kept[np.lexsort((table.dt_rank[kept], dt_img[kept],
                                 table.dt_score_rank[kept], dt_k[kept]))]
        bounds = np.searchsorted(dt_k[order], np.arange(n_k + 1))
    areas = [p.area_labels.index("all") if "all" in p.area_labels else 0] if all_only \
        else list(range(len(p.area_ranges)))
    found = [_one_threshold(table, a, t) for a in areas]
    status = np.stack([f[0] for f in found])
    status[:, ~in_cut] = NOT_EVALUATED
    n_positive = np.stack([np.bincount(gt_k[(gt_k >= 0) & ~table.gt_ignore[a]], minlength=n_k)
                           for a in areas], axis=1).astype(np.int64)
    iou = None
    if with_iou:
        gt = dataset.gt
        pair = pair_similarity(p, dataset, detections, np.arange(len(gt)),
                               detections.as_xywh(), gt.as_xywh(), view.crowd)
        iou = _pair_values(status, np.stack([f[1] for f in found]), pair)
    return Decisions(
        protocol=view.protocol,
        iou_type=p.iou_type, iou_threshold=float(p.iou_thresholds[t]),
        category_ids=np.asarray(view.category_ids, dtype=np.int64),
        category_names=view.category_names,
        area_labels=tuple(p.area_labels[a] for a in areas), scores=detections.scores,
        dt_k=dt_k, status=status, iou=iou, order=order, bounds=bounds, n_positive=n_positive,
        image_ids=dataset.images.ids[detections.image_index],
        max_detections=max_det if view.protocol_max is None else view.protocol_max,
        frequency=view.frequency)


def _one_threshold(table: Any, a: int, t: int) -> tuple[np.ndarray, np.ndarray]:
    """Status and matched object of every detection at threshold ``t`` in range ``a``: the
    codes of ``MatchTable.detection_status`` read from the sparse match rows of that one
    threshold (the dense (T, n) views cost most of the time at 500k detections)."""
    status = np.where(table.dt_out_of_range[a], IGNORED, FP).astype(np.int8)
    matched = np.full(table.n_detections, -1, dtype=np.int64)
    rows = np.flatnonzero((table.match_area == a) & (table.match_threshold == t))
    matched[table.match_dt[rows]] = table.match_gt[rows]
    status[table.match_dt[rows]] = np.where(table.gt_ignore[a][table.match_gt[rows]],
                                            IGNORED, TP)
    status[~table.dt_kept] = NOT_EVALUATED
    return status, matched


def _pair_values(status: np.ndarray, matched: np.ndarray, pair: Any) -> np.ndarray:
    """(A, n) values of the matched pairs of the true positives: those of the first range,
    then, in each other range, only the pairs that range matched differently."""
    out = np.zeros(status.shape)
    known = np.zeros(status.shape[1], dtype=bool)
    for a in range(len(status)):
        rows = np.flatnonzero(status[a] == TP)
        if a:
            same = known[rows] & (matched[a, rows] == matched[0, rows])
            out[a, rows[same]] = out[0, rows[same]]
            rows = rows[~same]
        if len(rows):
            out[a, rows] = pair(rows, matched[a, rows])
        if not a:
            known[rows] = True
    return out


# ----------------------------------------------------------------------------------- VOC

def _voc(result: Any, tau: float | None, with_iou: bool, with_order: bool) -> Decisions:
    """The VOC rule: difficult-matched detections IGNORED; order: class, descending (ranking)
    score, input row (the devkit's stable sort); the IoU the rule matched by."""
    p, table, dataset, detections = result.params, result.matches, result.dataset, \
        result.detections
    t = threshold_index(p.iou_thresholds, p.iou_thresholds[0] if tau is None else tau)
    category_ids = np.asarray(result.category_ids, dtype=np.int64)
    n_k = len(category_ids)
    k_of_cat = index_in(dataset.categories.ids, category_ids)
    known = detections.category_index >= 0
    dt_k = np.where(known & table.dt_kept, k_of_cat[np.maximum(detections.category_index, 0)],
                    -1)
    scores = np.asarray(result.scores, dtype=np.float64)
    order, bounds = np.zeros(0, np.int64), np.zeros(n_k + 1, np.int64)
    if with_order:
        kept = np.flatnonzero(dt_k >= 0)
        order = kept[np.lexsort((kept, -scores[kept], dt_k[kept]))]
        bounds = np.searchsorted(dt_k[order], np.arange(n_k + 1))
    status = _one_threshold(table, 0, t)[0][None, :]
    iou = None
    if with_iou:
        iou = np.where(status == TP, np.nan_to_num(table.dt_best_iou)[None, :], 0.0)
    return Decisions(
        protocol="voc", iou_type="bbox", iou_threshold=float(p.iou_thresholds[t]),
        category_ids=category_ids, category_names=tuple(result.category_names),
        area_labels=("all",), scores=scores, dt_k=dt_k, status=status, iou=iou, order=order,
        bounds=bounds, n_positive=np.asarray(result.n_positives, dtype=np.int64)[:, None],
        image_ids=dataset.images.ids[detections.image_index], max_detections=None)


# --------------------------------------------------------------------------- Open Images

def _openimages(result: Any, tau: float | None, with_iou: bool,
                with_order: bool) -> Decisions:
    """The Open Images rule: the result's ``dt_status`` (a hit group-of box's true positive
    carried by its highest-scoring detection, the others inside it IGNORED); order: the TF
    tool's per-class ``np.argsort(scores)[::-1]`` over its entries (image by image, each
    image's detections by rank, then its hit group-of boxes)."""
    from ..protocols._openimages_match import overlaps
    from ..protocols.openimages import MAX_PER_CLASS, class_index

    threshold_index(result.matches.iou_thresholds, 0.5 if tau is None else tau)
    gt, dt, table = result.gt, result.detections, result.matches
    n_k = len(result.classes)
    status = np.asarray(result.dt_status, dtype=np.int8)
    dt_match = table.detection_matches(0)[0]
    dt_k = np.full(len(status), -1, dtype=np.int64)
    evaluated = np.flatnonzero(status >= 0)
    dt_k[evaluated] = class_index(dt.label[evaluated], result.classes, "", None)
    counted = np.flatnonzero((status == TP) | (status == FP)) if with_order \
        else np.zeros(0, np.int64)
    matched = (status[counted] == TP) & (dt_match[counted] >= 0)
    carrier = np.zeros(len(counted), bool)      # no ground-truth box: nothing to index
    carrier[matched] = np.asarray(gt.group_of, bool)[dt_match[counted][matched]]
    images = np.asarray(result.image_ids).astype(str)
    img = np.searchsorted(images, dt.image_id[counted].astype(str))
    position = np.where(carrier, MAX_PER_CLASS + dt_match[counted], table.dt_rank[counted])
    order = counted[np.lexsort((position, img, dt_k[counted]))]
    bounds = np.searchsorted(dt_k[order], np.arange(n_k + 1))
    scores = np.asarray(dt.score, dtype=np.float64)
    for k in np.flatnonzero(np.diff(bounds) > 1).tolist():   # the TF tool's sort per class
        rows = order[bounds[k]:bounds[k + 1]]
        order[bounds[k]:bounds[k + 1]] = rows[np.argsort(scores[rows])[::-1]]
    iou = None
    if with_iou:
        iou = np.zeros((1, len(status)))
        hit = np.flatnonzero(status == TP)
        yx = [1, 0, 3, 2]      # the rule's (ymin, xmin, ymax, xmax) and arithmetic
        plain, ioa = overlaps(dt.xyxy[hit][:, yx], gt.xyxy[dt_match[hit]][:, yx])
        iou[0, hit] = np.where(gt.group_of[dt_match[hit]], ioa, plain)
    return Decisions(
        protocol="openimages", iou_type="bbox", iou_threshold=float(table.iou_thresholds[0]),
        category_ids=np.arange(n_k, dtype=np.int64), category_names=tuple(result.classes),
        area_labels=("all",), scores=scores, dt_k=dt_k,
        status=status[None, :].copy(), iou=iou, order=order, bounds=bounds,
        n_positive=np.asarray(result.num_gt).astype(np.int64)[:, None],
        image_ids=np.asarray(dt.image_id), max_detections=MAX_PER_CLASS)
