"""What each protocol and geometry gives TIDE's one matcher and scorer.

:func:`~deteval.diagnostics.tide.error_attribution` matches, classifies errors and fixes
them once, for every protocol and geometry; what differs is gathered here in a
:class:`TideRules` (docs/diagnostics/tide.md §7, §8):

* ``protocol="coco"`` (tidecv's rules): the evaluation's pair similarity of the geometry
  (:func:`deteval._similarity.evaluation_similarity`: box, mask or boundary IoU, OKS, polygon
  or rotated-box IoU; IoA for a crowd region where COCO uses it); crowd regions (and, for
  keypoints, objects without keypoints) are ignore regions; tidecv's AP.
* ``protocol="voc2007"`` / ``"voc2012"``: the devkit's IoU with its +1 pixel convention,
  VOC's matching rule (difficult objects absorb detections, which then take no part), input
  order on equal scores, and the devkit's AP (11-point or all-points).
* ``protocol="crowdpose"``: xtcocotools' CrowdPose keypoints (14 sigmas, areas from the
  boxes, 20 detections per image and category, results without a keypoint score dropped),
  COCO's greedy rule and AP.
* ``protocol="lvis"``: lvis-api's federated selection (300 detections per image; only the
  categories an image lists as positive or negative; unmatched detections of its
  not-exhaustive categories take no part), COCO's greedy rule, and lvis-api's AP.
* ``protocol="openimages"``: the match of :func:`~deteval.evaluate_openimages` itself
  (:func:`openimages_tide`: its verified detections, group-of boxes, hierarchy expansion),
  the TF tool's IoU, and its per-class AP and mAP.

>>> from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
>>> ds = Dataset(Images(ids=[1]), Categories(ids=[1]),
...              GroundTruth(image_index=[0], category_index=[0], boxes=[[0, 0, 9, 9]]))
>>> dt = Detections(image_index=[0], category_index=[0], boxes=[[0, 0, 9, 4]], scores=[1])
>>> rules = tide_rules(ds, dt, protocol="voc2007", iou_type="bbox", floor=0.1)
>>> rules.pair(np.array([0]), np.array([0])).tolist()    # (10 x 5) / (10 x 10), +1 pixel
[0.5]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ap import envelope_at
from ..data import Dataset, Detections

#: The protocols whose rules TIDE can follow.
PROTOCOLS = ("coco", "voc2007", "voc2012", "lvis", "crowdpose", "openimages")
_X = np.arange(101) / 100  # tidecv's recall points, i / 100 (not np.linspace)

#: ``score(cls, score, good, key, positives, n_c) -> (class AP, mAP)``, both in percent.
Scorer = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int],
                  tuple[np.ndarray, float]]


@dataclass(frozen=True)
class TideRules:
    """A protocol's and a geometry's part of TIDE.

    Attributes
    ----------
    protocol, iou_type : str
    pair : callable
        ``pair(dt_rows, gt_rows)`` -> ndarray of float64, shape (P,): the similarity of each
        (detection, object) pair; over an ignore region, what the protocol compares with it.
    regions : ndarray of bool, shape (n_gt,)
        Ignore regions (COCO: crowd regions, and for keypoints objects without keypoints;
        VOC: difficult objects): never missed, never an error's target.
    matcher : {"coco", "voc", "openimages"}
        ``"coco"``: tidecv's greedy rule (the unused object of highest similarity, the first
        on ties; a region absorbs an unmatched detection whose similarity is ``> pos``).
        ``"voc"``: the devkit's (the best object, used or not; a region absorbs a detection
        whose best object it is). ``"openimages"``: the protocol's own match, ``matched``.
    max_dets : int or None
        Detections kept per image, all classes together (None: all).
    tidecv : bool
        tidecv's conventions: detections of categories the ground truth lacks are classes of
        their own; detections absorbed by a region still get an error type; equal scores
        in (image, in-image score) order. Otherwise: such detections are not evaluated,
        absorbed ones take no part, equal scores keep the input order.
    score : Scorer
    dt_evaluated : ndarray of bool, shape (n_dt,), optional
        Detections the protocol evaluates (default: those of a known category).
    dt_lenient : ndarray of bool, shape (n_dt,), optional
        Detections that take no part when unmatched (LVIS: not-exhaustive categories, and
        an area beyond lvis-api's range "all", 1e10).
    gt_evaluated : ndarray of bool, shape (n_gt,), optional
        Objects the protocol evaluates (default: all).
    image_order : ndarray of int, shape (n_images,), optional
        Position of each image in the order equal scores keep (default: the table's).
    region_crowd : ndarray of bool, shape (n_gt,), optional
        The regions that absorb any number of detections (default: all); the others absorb
        one (COCO's ignored non-crowd objects).
    group_max_dets : int, optional
        Detections matched per (image, class), COCO's ``maxDets`` (default: all).
    cap : int, optional
        The protocol's cap on detections as the result's settings report it (``max_dets``),
        where ``max_dets`` is not it: LVIS's per image, CrowdPose's per image and class.
    matched : tuple of ndarray, optional
        The protocol's own match, read instead of matching again (Open Images: the match of
        :func:`~deteval.evaluate_openimages`): ``(seq, rank, kept, tp, ignored, used)`` as
        ``tide._match`` returns them.
    strict : bool
        A detection is right at similarity ``> pos`` (detectron2's VOC preset), not
        ``>= pos``: the match, and the cls and dupe errors' ``>= pos``, compare strictly.
    """

    protocol: str
    iou_type: str
    pair: Callable[[np.ndarray, np.ndarray], np.ndarray]
    regions: np.ndarray
    matcher: str
    max_dets: int | None
    tidecv: bool
    score: Scorer
    dt_evaluated: np.ndarray | None = None
    dt_lenient: np.ndarray | None = None
    gt_evaluated: np.ndarray | None = None
    image_order: np.ndarray | None = None
    region_crowd: np.ndarray | None = None
    group_max_dets: int | None = None
    cap: int | None = None
    matched: tuple[np.ndarray, ...] | None = None
    strict: bool = False


def check_protocol(protocol: Any, iou_type: str, rules: str) -> str:
    """``protocol`` if TIDE can follow it with ``iou_type`` and ``rules``; a ValueError
    saying why not otherwise."""
    if not isinstance(protocol, str) or protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(map(repr, PROTOCOLS))}; "
                         f"got {protocol!r}")
    if protocol.startswith("voc") and iou_type != "bbox":
        raise ValueError(f"protocol {protocol!r} compares boxes (the devkit's IoU); iou_type "
                         f"must be 'bbox', got {iou_type!r}")
    if protocol == "crowdpose" and iou_type != "keypoints":
        raise ValueError(f"protocol 'crowdpose' compares keypoints; iou_type must be "
                         f"'keypoints', got {iou_type!r}")
    if protocol == "lvis" and iou_type not in ("bbox", "segm", "boundary"):
        raise ValueError(f"protocol 'lvis' compares boxes, masks or boundaries; iou_type "
                         f"must be 'bbox', 'segm' or 'boundary', got {iou_type!r}")
    if protocol == "openimages" and iou_type != "bbox":
        raise ValueError(f"protocol 'openimages' compares boxes; iou_type must be 'bbox', got "
                         f"{iou_type!r}")
    if protocol != "coco" and rules == "tidecv":
        raise ValueError(f"rules='tidecv' reproduces tidecv's COCO runs; with protocol "
                         f"{protocol!r} use rules='deteval'")
    return protocol


def tide_rules(dataset: Dataset, detections: Detections, *, protocol: str, iou_type: str,
               floor: float, max_dets: int | None = None, keypoint_sigmas: Any = None,
               dilation_ratio: float = 0.02, lvis: Any = None,
               use_area: bool = False, detectron2: bool = False) -> TideRules:
    """The :class:`TideRules` of ``protocol`` and ``iou_type`` on these inputs.

    ``floor`` is the lowest similarity TIDE compares with (the background threshold): a
    pair provably below it may be given 0 without being computed. ``max_dets`` None is the
    protocol's default (COCO: 100, as tidecv; VOC: every detection; LVIS: 300 per image).
    ``lvis`` is the :class:`~deteval.io.lvis.LVISGroundTruth` of ``dataset`` (LVIS only);
    ``use_area``: CrowdPose's OKS scaled by the file's areas (``CrowdPoseParams.use_area``);
    ``detectron2``: VOC by detectron2's preset (IoU ``> t``, its mean; the detections are
    rounded by the caller, as its result files round them).
    """
    gt = dataset.gt
    if protocol == "lvis":
        return _lvis_rules(lvis, detections, iou_type, floor, max_dets, dilation_ratio)
    if protocol == "crowdpose":
        return _crowdpose_rules(dataset, detections, floor, max_dets, keypoint_sigmas,
                                use_area)
    if protocol == "coco":
        from .._similarity import evaluation_similarity

        similarity = evaluation_similarity(dataset, detections, iou_type, floor=floor,
                                           keypoint_sigmas=keypoint_sigmas,
                                           dilation_ratio=dilation_ratio)
        regions = gt.iscrowd.copy()
        if iou_type == "keypoints" and len(gt):
            regions |= gt.num_keypoints == 0     # COCO ignores them; TIDE: regions
        return TideRules(protocol, iou_type, similarity.pair, regions, "coco",
                         100 if max_dets is None else max_dets, True, tidecv_score)
    from ..protocols._voc_stages import voc_pair_iou
    from ..protocols.voc import DETECTRON2_VOC2007, DETECTRON2_VOC2012, VOC2007, VOC2012

    dt_boxes, gt_boxes = detections.boxes, gt.boxes

    def pair(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
        return voc_pair_iou(dt_boxes[d_rows], gt_boxes[g_rows], True)

    presets = (DETECTRON2_VOC2007, DETECTRON2_VOC2012) if detectron2 else (VOC2007, VOC2012)
    params = presets[0] if protocol == "voc2007" else presets[1]
    return TideRules(protocol, iou_type, pair, gt.ignore | gt.iscrowd, "voc", max_dets, False,
                     voc_scorer(params), strict=params.iou_comparison == ">")


def _by_class(cls: np.ndarray, score: np.ndarray, good: np.ndarray, key: np.ndarray,
              n_c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``good`` in ranking order (class, descending score, ``key``), points per class and
    the first point of each."""
    order = np.lexsort((key, -score, cls))
    n_points = np.bincount(cls, minlength=n_c)
    return good[order], n_points, np.cumsum(n_points) - n_points


def tidecv_score(cls: np.ndarray, score: np.ndarray, good: np.ndarray, key: np.ndarray,
                 positives: np.ndarray, n_c: int) -> tuple[np.ndarray, float]:
    """tidecv's ``APDataObject.get_ap`` of every class (NaN where the class has neither
    points nor objects) and ``get_mAP`` (docs/diagnostics/tide.md §5).

    Points are ordered by descending score, ties by ``key`` (tidecv: insertion order)."""
    good, n_points, starts = _by_class(cls, score, good, key, n_c)
    ap = np.where((n_points > 0) | (positives != 0), 0.0, np.nan)
    for c in np.flatnonzero((positives > 0) & (n_points > 0)).tolist():
        hits = np.cumsum(good[starts[c]:starts[c] + n_points[c]])
        precision = hits / np.arange(1, len(hits) + 1)
        envelope = np.maximum.accumulate(precision[::-1])[::-1]
        reached = np.searchsorted(_X, hits / positives[c], side="right")
        # Each recall point takes the precision of the first point reaching it; summed in
        # recall order as tidecv does.
        ap[c] = sum(np.repeat(envelope, np.diff(reached, prepend=0)).tolist()) / 101 * 100
    present = ap[~np.isnan(ap)]     # NaN if none: tidecv divides by zero
    mean = float(sum(present.tolist()) / len(present)) if len(present) else float("nan")
    return ap, mean


def voc_scorer(params: Any) -> Scorer:
    """The devkit's AP of every class and mAP (``evaluate_voc``'s, times 100)."""
    from ..protocols._voc_stages import curve_ap, mean_ap

    def score(cls: np.ndarray, score: np.ndarray, good: np.ndarray, key: np.ndarray,
              positives: np.ndarray, n_c: int) -> tuple[np.ndarray, float]:
        good, n_points, starts = _by_class(cls, score, good, key, n_c)
        ap = np.zeros(n_c)
        for c in range(n_c):
            hits = good[starts[c]:starts[c] + n_points[c]]
            tp = np.cumsum(hits, dtype=np.int64)
            ap[c] = curve_ap(tp, np.arange(1, len(hits) + 1) - tp, int(positives[c]),
                             int(n_points[c]), params)
        return ap * 100, float(mean_ap(ap[None, :], positives, params)[0]) * 100

    return score


def _lvis_rules(lvis: Any, detections: Detections, iou_type: str, floor: float,
                max_dets: int | None, dilation_ratio: float) -> TideRules:
    """lvis-api's selection (``deteval.protocols.lvis``), similarity and AP."""
    from ..protocols._coco_stages import pair_similarity
    from ..protocols.coco import COCOParams
    from ..protocols.lvis import LVIS, top_per_image

    dataset = lvis.dataset
    gt, n_k = dataset.gt, len(dataset.categories)
    gt_ok = (gt.area > 0) & (gt.area < np.inf)
    present = np.unique((gt.image_index * n_k + gt.category_index)[gt_ok])
    dt_key = detections.image_index * n_k + np.maximum(detections.category_index, 0)
    cap = LVIS.max_detections if max_dets is None else max_dets
    evaluated = (top_per_image(detections.image_index, detections.scores, cap)
                 & (detections.category_index >= 0)
                 & (detections.area > 0) & (detections.area < np.inf)
                 & (np.isin(dt_key, present) | np.isin(dt_key, lvis.negative_keys)))
    no_crowd = np.zeros(len(gt), dtype=bool)
    pair = pair_similarity(COCOParams(iou_type=iou_type, iou_thresholds=(float(floor),),
                                      dilation_ratio=dilation_ratio),
                           dataset, detections, np.arange(len(gt)), detections.as_xywh(),
                           gt.as_xywh(), no_crowd)
    beyond = gt.area > LVIS.area_ranges[0][1]       # lvis-api ignores them in area 'all'
    return TideRules("lvis", iou_type, pair, (gt.ignore | beyond) & gt_ok, "coco", None, False,
                     coco_scorer(LVIS, np.argsort(dataset.categories.ids, kind="stable")),
                     dt_evaluated=evaluated,
                     # lvis-api also ignores an unmatched detection beyond area 'all'
                     dt_lenient=np.isin(dt_key, lvis.not_exhaustive_keys)
                     | (detections.area > LVIS.area_ranges[0][1]),
                     gt_evaluated=gt_ok, image_order=_sorted_positions(dataset.images.ids),
                     region_crowd=no_crowd, cap=cap)


def _sorted_positions(ids: np.ndarray) -> np.ndarray:
    """Each id's position among the sorted ids (pycocotools' ``imgIds`` order)."""
    out = np.empty(len(ids), dtype=np.int64)
    out[np.argsort(ids, kind="stable")] = np.arange(len(ids))
    return out


def _crowdpose_rules(dataset: Dataset, detections: Detections, floor: float,
                     max_dets: int | None, keypoint_sigmas: Any,
                     use_area: bool = False) -> TideRules:
    """xtcocotools' ``keypoints_crowd`` (``deteval.protocols.crowdpose``)."""
    import dataclasses

    from .._similarity import evaluation_similarity
    from ..protocols.crowdpose import CROWDPOSE, scaled_dataset

    # OKS areas: h * w * 0.53 of the box, or the file's with use_area
    scaled = scaled_dataset(dataset, dataclasses.replace(CROWDPOSE, use_area=use_area))
    gt = scaled.gt
    sigmas = CROWDPOSE.keypoint_sigmas if keypoint_sigmas is None else keypoint_sigmas
    similarity = evaluation_similarity(scaled, detections, "keypoints", floor=floor,
                                       keypoint_sigmas=sigmas)
    scored = ((detections.keypoints[:, :, 2] > 0).any(axis=1) if len(detections)
              else np.zeros(0, bool))     # xtcocotools drops the others
    return TideRules("crowdpose", "keypoints", similarity.pair,
                     gt.iscrowd | (gt.num_keypoints == 0), "coco", None, False,
                     coco_scorer(CROWDPOSE, np.argsort(dataset.categories.ids, kind="stable")),
                     dt_evaluated=scored, image_order=_sorted_positions(dataset.images.ids),
                     region_crowd=gt.iscrowd.copy(),
                     group_max_dets=20 if max_dets is None else max_dets,
                     cap=20 if max_dets is None else max_dets)


def coco_scorer(params: Any, columns: np.ndarray) -> Scorer:
    """pycocotools' AP of every class at one threshold (``accumulate``: the precision
    envelope read at the ``params.recall_thresholds``) and the ``AP50``-style mean over the
    (recall point, category) values of the classes with objects, categories in ``columns``
    order (sorted ids), as lvis-api and xtcocotools summarise."""
    recall = np.asarray(params.recall_thresholds)

    def score(cls: np.ndarray, score: np.ndarray, good: np.ndarray, key: np.ndarray,
              positives: np.ndarray, n_c: int) -> tuple[np.ndarray, float]:
        good, n_points, starts = _by_class(cls, score, good, key, n_c)
        q = np.full((len(recall), n_c), -1.0)
        for c in np.flatnonzero(positives > 0).tolist():
            hits = good[starts[c]:starts[c] + n_points[c]]
            tp = np.cumsum(hits).astype(np.float64)
            fp = np.cumsum(~hits).astype(np.float64)
            precision = tp / (fp + tp + np.spacing(1))
            q[:, c] = envelope_at(tp / positives[c], precision, recall)
        valid = q[0] > -1
        ap = np.full(n_c, np.nan)
        ap[valid] = q[:, valid].mean(axis=0) * 100
        table = q[:, columns]
        values = table[table > -1]
        return ap, float(np.mean(values)) * 100 if len(values) else float("nan")

    return score


def openimages_tide(result: Any) -> tuple[Dataset, Detections, TideRules]:
    """The dataset, the detections and the :class:`TideRules` of an
    :class:`~deteval.protocols.openimages.OpenImagesResult` (docs/diagnostics/tide.md §8.3).

    The match is the result's own (no second matcher): its true positives (a hit group-of
    box's true positive carried by its highest-scoring detection), its absorbed detections
    (ignored: no error) and its evaluated detections; the objects are its expanded boxes,
    group-of boxes included (each counts once, as in ``num_gt``); the images are its
    ``image_ids`` (detections on other images are not evaluated); the classes its label map.
    """
    from ..data import Categories, GroundTruth, Images
    from ..matching import IGNORED, NOT_EVALUATED, TP
    from ..protocols._openimages_match import overlaps
    from ..protocols.openimages import MAX_PER_CLASS, class_index, image_codes

    gt, dt, classes = result.gt, result.detections, result.classes
    images = result.image_ids
    n_img, n_gt, n_dt = len(images), len(gt.label), len(dt.label)
    gt_img, dt_img = image_codes(gt.image_id, images), image_codes(dt.image_id, images)
    gt_cls = class_index(gt.label, classes, "box", gt.source)
    dt_cls = class_index(dt.label, classes, "detection", dt.source)
    # detections on unknown images go to one more image without objects (never evaluated)
    dataset = Dataset(Images(ids=np.arange(n_img + 1)),
                      Categories(ids=np.arange(len(classes)), names=tuple(classes)),
                      GroundTruth(image_index=gt_img, category_index=gt_cls,
                                  boxes=np.asarray(gt.xyxy, np.float64).reshape(-1, 4)))
    detections = Detections(image_index=np.where(dt_img >= 0, dt_img, n_img),
                            category_index=dt_cls,
                            boxes=np.asarray(dt.xyxy, np.float64).reshape(-1, 4),
                            scores=np.asarray(dt.score, np.float64))
    yx = [1, 0, 3, 2]   # the TF tool's (ymin, xmin, ymax, xmax)
    dt_yx, gt_yx = np.asarray(dt.xyxy)[:, yx], np.asarray(gt.xyxy)[:, yx]

    def pair(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
        iou, _ = overlaps(dt_yx[d_rows].reshape(-1, 4), gt_yx[g_rows].reshape(-1, 4))
        return np.nan_to_num(iou, nan=0.0)      # a box without area: IoU 0, as in the tool

    status, table = result.dt_status, result.matches
    matched_gt = np.full(n_dt, -1, dtype=np.int64)
    matched_gt[table.match_dt] = table.match_gt
    kept = status != NOT_EVALUATED
    tp = status == TP
    ignored = status == IGNORED
    used = np.zeros(n_gt, bool)
    used[matched_gt[tp]] = True
    # Equal scores: the order the tool ranks a class's entries in (its accumulation's order,
    # image then rank in the (image, class), a hit group-of box's entry after the
    # detections, then its unstable descending argsort), kept by every fixed run.
    group = np.asarray(gt.group_of, bool)
    hit_position = np.cumsum(group & used) - 1
    position = np.where(kept, table.dt_rank, 0)
    rep = tp & (matched_gt >= 0)
    rep[rep] = group[matched_gt[rep]]
    position[rep] = MAX_PER_CLASS + hit_position[matched_gt[rep]]
    points = np.flatnonzero(kept & ~ignored)
    points = points[np.lexsort((position[points], dt_img[points], dt_cls[points]))]
    seq = np.zeros(n_dt, dtype=np.int64)
    bounds = np.searchsorted(dt_cls[points], np.arange(len(classes) + 1))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        block = points[lo:hi]
        seq[block[np.argsort(dt.score[block])[::-1]]] = np.arange(hi - lo)
    rank = np.empty(n_dt, dtype=np.int64)
    rank[np.lexsort((np.arange(n_dt), -detections.scores))] = np.arange(n_dt)
    return dataset, detections, TideRules(
        "openimages", "bbox", pair, np.zeros(n_gt, bool), "openimages", None, False,
        openimages_score, dt_evaluated=kept, cap=MAX_PER_CLASS,
        matched=(seq, rank, kept, tp, ignored, used))


def openimages_score(cls: np.ndarray, score: np.ndarray, good: np.ndarray, key: np.ndarray,
                     positives: np.ndarray, n_c: int) -> tuple[np.ndarray, float]:
    """The TF tool's AP of every class (its arithmetic on the class's points by descending
    score, ties in ``key`` order; NaN for a class without objects) and its mAP (the mean of
    the others), both times 100."""
    from ..protocols._openimages_match import ranked_average_precision

    good, n_points, starts = _by_class(cls, score, good, key, n_c)
    ap = np.full(n_c, np.nan)
    for c in np.flatnonzero(positives > 0).tolist():
        ap[c] = ranked_average_precision(good[starts[c]:starts[c] + n_points[c]]
                                         .astype(np.float64), float(positives[c]))
    if np.isnan(ap).all():
        return ap * 100, float("nan")
    return ap * 100, float(np.nanmean(ap)) * 100      # evaluate_openimages' mean, exactly
