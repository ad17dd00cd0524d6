"""TIDE error attribution (Bolya et al., ECCV 2020), equal to ``tidecv`` 1.0.1 (boxes, masks).

Every detection that is not a true positive at the foreground threshold gets one of five
error types, and every object nobody tried to find is *missed*; then each type is fixed by
its oracle and the AP gained (dAP) is what that type cost. The rules, their order and the
points where ``tidecv`` is wrong are in ``docs/diagnostics/tide.md``; the section numbers
below point there.

* **Matching** (§2). Each image keeps its ``max_dets`` highest-scoring detections (all classes
  together); inside an image and class, detections by descending score take the unused
  object of highest similarity (the first on ties) at ``>= pos_threshold``. This is
  :func:`~deteval.matching.match_detections` (COCO rule) with the objects presented in
  reverse order, so that its "later wins" tie rule picks the first. Ignore regions (crowd
  regions) absorb an unmatched detection of their class whose similarity (IoA) is
  ``> pos_threshold`` (strictly).
* **Errors** (§3), in this order, for a false positive or a detection absorbed by a region:
  no object in the image -> background; same-class best similarity in ``[bg, pos]`` -> loc;
  other-class best ``>= pos`` -> cls; same-class ``>= pos`` with a matched object -> dupe;
  best of any class ``<= bg`` -> bkg; otherwise both.
* **Fixes** (§4) and **AP** (§5): tidecv's own AP (101 recall points ``i / 100``; a class
  with detections but no objects counts as 0 in the mean).
* **Geometries** (§7): the similarity is the evaluation's for ``iou_type`` (box, mask or
  boundary IoU, OKS, polygon or rotated-box IoU), the rest unchanged.
* **VOC** (§8): ``protocol="voc2007"|"voc2012"`` takes the devkit's IoU, matching rule
  (:func:`~deteval.matching.match_detections` with ``rule="voc"``), difficult objects and AP
  instead; what differs is gathered in :mod:`deteval.diagnostics._tide_rules`. LVIS,
  CrowdPose (§8.1, §8.2) likewise; Open Images (§8.3) reads
  :func:`~deteval.evaluate_openimages`' own match (verified labels, group-of boxes,
  hierarchy) and the TF tool's AP.

>>> import deteval
>>> gt = {"images": [{"id": 1, "width": 10, "height": 10}],
...       "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4],
...                        "area": 16, "iscrowd": 0}]}
>>> dt = [{"image_id": 1, "category_id": 2, "bbox": [0, 0, 4, 4], "score": 0.9}]
>>> r = deteval.error_attribution(gt, dt)
>>> r.ap, dict(zip(r.error_names, r.counts.tolist()))["cls"]
(0.0, 1)
>>> float(r.dap[r.error_names.index("cls")])
100.0
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .._arrays import ReadOnlyArrays, frozen
from .._similarity import check_iou_type, read_as
from .._validation import check_similarity_settings, number
from ..data import Dataset, Detections
from ..matching import match_detections
from ..outcomes import best_per_detection, same_image_pairs
from ._tide_rules import PROTOCOLS, TideRules, check_protocol, tide_rules

#: The six main error types, in tidecv's order (``TIDE._error_types``).
ERROR_NAMES = ("cls", "loc", "both", "dupe", "bkg", "miss")
CLS, LOC, BOTH, DUPE, BKG, MISS = range(6)
RULES = ("deteval", "tidecv")
__all__ = ["ERROR_NAMES", "PROTOCOLS", "RULES", "ErrorAttribution", "error_attribution"]


@dataclass(frozen=True, eq=False)
class ErrorAttribution(ReadOnlyArrays):
    """Result of :func:`error_attribution`. AP values are in percent, as TIDE reports them.

    Attributes
    ----------
    ap : float
        mAP at ``pos_threshold`` by the protocol's AP: tidecv's for ``"coco"`` (§5), the
        devkit's for VOC (§8), the protocol's for LVIS, CrowdPose and Open Images (§8.1-3).
    error_names : tuple of str
        ``("cls", "loc", "both", "dupe", "bkg", "miss")``.
    dap : ndarray, shape (6,)
        AP gained by fixing each error type alone (clamped at 0, as tidecv does).
    fixed_ap : ndarray, shape (6,)
        mAP after fixing each error type alone (not clamped: ``dap = max(fixed_ap - ap,
        0)``).
    dap_fp, dap_fn : float
        AP gained by the false-positive oracle (every false positive scored below every
        true positive) and the false-negative oracle (the unmatched objects removed).
    counts : ndarray of int, shape (6,)
        Errors of each type.
    class_ids : ndarray of int, shape (C,)
        Category id of each class column: the ground truth's categories, then categories
        only the detections use.
    class_names : tuple of str
    class_ap : ndarray, shape (C,)
        AP of each class (NaN where the class takes no part: no objects, no detections).
    class_dap : ndarray, shape (C, 6)
        Per class, AP after fixing each type minus ``class_ap`` (NaN where undefined).
    class_dap_fp, class_dap_fn : ndarray, shape (C,)
    class_counts : ndarray of int, shape (C, 6)
        Errors per class (a detection's own class; a missed object's class).
    dt_error : ndarray of int8, shape (n_dt,)
        Error type of each detection (index in ``error_names``), -1 for a true positive or a
        detection not evaluated (beyond ``max_dets``).
    dt_true_positive : ndarray of bool, shape (n_dt,)
    gt_missed : ndarray of bool, shape (n_gt,)
    settings : dict
        ``pos_threshold``, ``background_threshold``, ``max_dets``, ``rules``, ``protocol``,
        ``iou_type``.
    notes : tuple of str
        What the protocol's rules left out of the inputs, in the words of the protocol's own
        result notes: Open Images' (``evaluate_openimages``' notes) and VOC's
        (:func:`deteval.protocols.voc.input_notes`: detections of a category that is not a
        ground-truth category, crowd regions treated as difficult objects) and CrowdPose's
        (:func:`deteval.protocols.crowdpose.unscored_notes`: results without a keypoint
        score above 0); empty with COCO (tidecv's classes of unknown categories) and LVIS
        (:func:`deteval.protocols.lvis.selection_notes` gives its notes).
    """

    ap: float
    error_names: tuple[str, ...]
    dap: np.ndarray
    fixed_ap: np.ndarray
    dap_fp: float
    dap_fn: float
    counts: np.ndarray
    class_ids: np.ndarray
    class_names: tuple[str, ...]
    class_ap: np.ndarray
    class_dap: np.ndarray
    class_dap_fp: np.ndarray
    class_dap_fn: np.ndarray
    class_counts: np.ndarray
    dt_error: np.ndarray
    dt_true_positive: np.ndarray
    gt_missed: np.ndarray
    settings: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("dap", "fixed_ap", "counts", "class_ids", "class_ap", "class_dap",
                     "class_dap_fp", "class_dap_fn", "class_counts", "dt_error", "dt_true_positive",
                     "gt_missed"):
            object.__setattr__(self, name, frozen(getattr(self, name)))

    def summary(self) -> list[dict[str, Any]]:
        """One row per error type, main then special: ``{"error", "dap", "count"}``.

        The special rows (``"false_positives"``, ``"false_negatives"``) have count None."""
        rows = [{"error": n, "dap": float(d), "count": int(c)}
                for n, d, c in zip(self.error_names, self.dap, self.counts)]
        rows.append({"error": "false_positives", "dap": self.dap_fp, "count": None})
        rows.append({"error": "false_negatives", "dap": self.dap_fn, "count": None})
        return rows

    def per_class(self) -> list[dict[str, Any]]:
        """One row per class: id, name, AP, then the dAP and count of each type."""
        rows = []
        for c in range(len(self.class_ids)):
            row: dict[str, Any] = {"id": int(self.class_ids[c]), "name": self.class_names[c],
                                   "ap": _num(self.class_ap[c])}
            for e, name in enumerate(self.error_names):
                row[f"dap_{name}"] = _num(self.class_dap[c, e])
                row[f"n_{name}"] = int(self.class_counts[c, e])
            row["dap_fp"], row["dap_fn"] = _num(self.class_dap_fp[c]), _num(self.class_dap_fn[c])
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready numbers (NaN as None)."""
        return {"ap": self.ap, "settings": dict(self.settings), "summary": self.summary(),
                "per_class": self.per_class()}


def _num(value: float) -> float | None:
    return None if value != value else float(value)


def _load(gt: Any, dt: Any, iou_type: str, protocol: str
          ) -> tuple[Dataset, Detections, Any]:
    """The dataset, the detections and (LVIS) the LVIS ground truth."""
    from ..io.coco import read_coco_gt, read_coco_results

    reader, lvis = read_as(iou_type), None
    if protocol == "lvis":
        from ..protocols.lvis import lvis_ground_truth

        lvis = lvis_ground_truth(gt, reader, caller="protocol 'lvis'")
        dataset = lvis.dataset
    else:
        dataset = gt if isinstance(gt, Dataset) else read_coco_gt(gt, iou_type=reader)
    detections = (dt if isinstance(dt, Detections)
                  else read_coco_results(dt, dataset, iou_type=reader))
    if len(detections) and (detections.image_index.min() < 0
                            or detections.image_index.max() >= len(dataset.images)):
        raise ValueError("detections.image_index must index the dataset's images table")
    return dataset, detections, lvis


def _classes(dataset: Dataset, detections: Detections, extra: bool
             ) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Class column of each detection: GT categories, then (``extra``, tidecv) ids only the
    detections use; -1 (not evaluated) for those without ``extra``."""
    cats = dataset.categories
    dt_class = np.asarray(detections.category_index, dtype=np.int64).copy()
    ids, names = list(cats.ids.tolist()), list(cats.names)
    unknown = dt_class < 0
    if unknown.any() and extra:
        if detections.category_ids is None:
            raise ValueError("detections with category_index -1 need category_ids (the "
                             "classes tidecv would make of them)")
        extra_ids, inverse = np.unique(detections.category_ids[unknown], return_inverse=True)
        dt_class[unknown] = len(ids) + inverse
        ids += extra_ids.tolist()
        names += [str(i) for i in extra_ids.tolist()]
    return dt_class, np.asarray(ids, dtype=np.int64), tuple(names)


def error_attribution(gt: Any, dt: Any, *, pos_threshold: float = 0.5,
                      background_threshold: float = 0.1, max_dets: int | None = None,
                      rules: str = "deteval", iou_type: str | None = None,
                      protocol: str = "coco", keypoint_sigmas: Any = None,
                      dilation_ratio: float | None = None, image_labels: Any = None,
                      hierarchy: Any = None, classes: Any = None,
                      expand_detections: bool = False, use_area: bool = False,
                      detectron2: bool = False) -> ErrorAttribution:
    """TIDE's six error types and the AP each costs, per class and overall.

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
        Ground truth, or a COCO instances file (or its dict). COCO: crowd regions are
        TIDE's ignore regions; the ``ignore`` flag is not used (as tidecv's COCO loader).
        VOC: objects with ``ignore`` (difficult) or ``iscrowd`` set are. LVIS: an LVIS
        file, dict or :class:`~deteval.io.lvis.LVISGroundTruth`.
    dt : Detections, str, PathLike, list, dict or ndarray
        Detections, or anything :func:`~deteval.io.coco.read_coco_results` reads (read
        with the columns ``iou_type`` compares).
    pos_threshold : float, default 0.5
        Foreground threshold of the similarity (IoU, OKS, ...), in ``(0, 1)``.
    background_threshold : float, default 0.1
        Background threshold, in ``[0, pos_threshold]``.
    max_dets : int, optional
        Detections kept per image, all classes together (as tidecv), for COCO (default 100),
        VOC (default: every detection) and LVIS (default 300, lvis-api's); per image and
        class for CrowdPose (default 20, its ``maxDets``). ``settings["max_dets"]`` is the
        cap applied.
    rules : {"deteval", "tidecv"}
        ``"tidecv"`` reproduces tidecv 1.0.1 exactly, including its ordering of tied scores
        in the fixed runs (docs/diagnostics/tide.md §6.1); ``"deteval"`` keeps ties in their
        original order in every run. ``"tidecv"`` needs ``protocol="coco"``.
    iou_type : {"bbox", "segm", "boundary", "keypoints", "polygon", "rotated"}, optional
        The similarity, the evaluation's (§7): box IoU, mask IoU (tidecv's mask mode),
        boundary IoU, OKS, polygon IoU, rotated-box IoU. Default: ``"keypoints"`` for
        CrowdPose, ``"bbox"`` otherwise. VOC compares boxes only, LVIS boxes, masks or
        boundaries, CrowdPose keypoints.
    protocol : {"coco", "voc2007", "voc2012", "lvis", "crowdpose", "openimages"}
        ``"coco"``: tidecv's matching and AP. ``"voc2007"`` / ``"voc2012"``: the devkit's
        matching (+1 pixel IoU, difficult objects), and its 11-point or all-points AP
        (§8): with no error fixed, ``ap`` is ``evaluate_voc``'s mAP times 100.
        ``"lvis"``: lvis-api's federated rules and AP (§8.1; ``gt`` an LVIS file, dict or
        :class:`~deteval.io.lvis.LVISGroundTruth`): with no error fixed, ``ap`` is
        ``evaluate_lvis``'s AP50 times 100 (at ``pos_threshold`` 0.5). ``"crowdpose"``:
        xtcocotools' CrowdPose keypoint rules and AP (§8.2): ``evaluate_crowdpose``'s AP50
        times 100. ``"openimages"``: the match of :func:`~deteval.evaluate_openimages`
        (``gt`` its boxes, ``dt`` its detections: OID objects or challenge CSV paths; §8.3),
        IoU 0.5 only: ``ap`` is its ``mean_ap`` times 100; ``class_ids`` are the label
        map's positions, ``class_names`` its labels, and ``dt_error`` / ``gt_missed`` index
        the result's (expanded) ``detections`` / ``gt``.
    keypoint_sigmas : sequence of float or dict {category_id: sequence}, optional
        OKS sigmas for ``iou_type="keypoints"`` (default: COCO's 17 person sigmas;
        CrowdPose's 14 with ``protocol="crowdpose"``). Given with another ``iou_type``:
        ValueError (it would be ignored).
    dilation_ratio : float, optional
        Boundary width for ``iou_type="boundary"`` (default 0.02). Given with another
        ``iou_type``: ValueError (it would be ignored).
    detectron2 : bool, default False
        ``protocol="voc2007"|"voc2012"`` only: detectron2's preset
        (``DETECTRON2_VOC2007`` / ``DETECTRON2_VOC2012``): a detection is right at IoU
        ``> pos_threshold`` (strictly; so are the cls and dupe errors' comparisons),
        detections rounded as its result files (boxes to 1 decimal, scores to 3), its mean
        over the classes; with no error fixed, ``ap`` is
        ``evaluate_voc(..., params=DETECTRON2_VOC2012)``'s mAP at that threshold.
    use_area : bool, default False
        ``protocol="crowdpose"`` only: OKS and the areas scaled by the file's ``area``
        instead of ``h * w * 0.53`` of the box (xtcocotools' ``use_area=True``, as
        :func:`~deteval.evaluate_crowdpose` takes it).
    image_labels, hierarchy, classes, expand_detections
        ``protocol="openimages"`` only: as :func:`~deteval.evaluate_openimages` takes them
        (verified image-level labels, the class hierarchy, the label map, detections given
        to ancestor classes).

    Returns
    -------
    ErrorAttribution

    Examples
    --------
    >>> from deteval.demo import make_demo
    >>> r = error_attribution(*make_demo())
    >>> round(r.ap, 2), [(s["error"], round(s["dap"], 2), s["count"]) for s in r.summary()][:2]
    (74.58, [('cls', 10.86, 6), ('loc', 0.08, 4)])
    """
    pos = number("pos_threshold", pos_threshold, low=0.0, high=1.0, low_open=True)
    bg = number("background_threshold", background_threshold, low=0.0, high=pos)
    if max_dets is not None and (isinstance(max_dets, bool)
                                 or not isinstance(max_dets, (int, np.integer))
                                 or max_dets < 1):
        raise ValueError(f"max_dets must be an integer >= 1 or None; got {max_dets!r}")
    if rules not in RULES:
        raise ValueError(f"rules must be one of {RULES}; got {rules!r}")
    if iou_type is None:
        iou_type = "keypoints" if protocol == "crowdpose" else "bbox"
    check_iou_type(iou_type)
    check_protocol(protocol, iou_type, rules)
    check_similarity_settings(iou_type, keypoint_sigmas=keypoint_sigmas,
                              dilation_ratio=dilation_ratio)
    if not isinstance(use_area, (bool, np.bool_)):
        raise TypeError(f"use_area must be True or False; got {use_area!r}")
    if not isinstance(detectron2, (bool, np.bool_)):
        raise TypeError(f"detectron2 must be True or False; got {detectron2!r}")
    if detectron2 and not protocol.startswith("voc"):
        raise ValueError(f"detectron2 applies to protocol 'voc2007' or 'voc2012' only (its VOC "
                         f"preset); got protocol {protocol!r}")
    if use_area and protocol != "crowdpose":
        raise ValueError(f"use_area applies to protocol 'crowdpose' only (its OKS scale); got "
                         f"protocol {protocol!r}")
    oid = {"image_labels": image_labels, "hierarchy": hierarchy, "classes": classes,
           "expand_detections": expand_detections}
    if protocol == "openimages":
        return _openimages(gt, dt, pos, bg, max_dets, rules, oid)
    given = [name for name, value in oid.items() if value not in (None, False)]
    if given:
        raise ValueError(f"{', '.join(given)} apply to protocol 'openimages' only; got "
                         f"protocol {protocol!r}")
    dataset, detections, lvis = _load(gt, dt, iou_type, protocol)
    if len(detections) and np.isnan(detections.scores).any():
        raise ValueError("detections.scores must not be NaN")
    if detectron2:      # as its result files round them (VOCParams.round_detections)
        from ..protocols._voc_stages import rounded_as_files

        scores, boxes = rounded_as_files(detections.scores, detections.boxes)
        detections = detections.replace(scores=scores, boxes=boxes)
    tide = tide_rules(dataset, detections, protocol=protocol, iou_type=iou_type, floor=bg,
                      max_dets=None if max_dets is None else int(max_dets),
                      keypoint_sigmas=keypoint_sigmas,
                      dilation_ratio=0.02 if dilation_ratio is None else dilation_ratio,
                      lvis=lvis, use_area=bool(use_area), detectron2=bool(detectron2))
    result = _attribute(dataset, detections, tide, pos, bg, rules)
    if protocol.startswith("voc"):
        from ..protocols.voc import input_notes

        result = replace(result, notes=input_notes(dataset, detections))
    elif protocol == "crowdpose":
        from ..protocols.crowdpose import unscored_notes

        result = replace(result, notes=unscored_notes(detections))
    return result


def _openimages(gt: Any, dt: Any, pos: float, bg: float, max_dets: Any, rules: str,
                oid: dict) -> ErrorAttribution:
    """§8.3: TIDE on the match of :func:`~deteval.evaluate_openimages`."""
    from ..protocols.openimages import IOU_THRESHOLD, evaluate_openimages
    from ._tide_rules import openimages_tide

    if pos != IOU_THRESHOLD:
        raise ValueError(f"protocol 'openimages' matches at IoU 0.5 only (the challenge's "
                         f"threshold, also its group-of IoA); pos_threshold must be 0.5, got "
                         f"{pos!r}")
    if max_dets is not None:
        raise ValueError("protocol 'openimages' keeps the challenge's cap (10000 detections "
                         f"per image and class); max_dets must be None, got {max_dets!r}")
    result = evaluate_openimages(gt, dt, **oid)
    dataset, detections, tide = openimages_tide(result)
    return replace(_attribute(dataset, detections, tide, pos, bg, rules), notes=result.notes)


@dataclass(frozen=True)
class _Run:
    """Everything the fixes need, one entry per detection or object."""

    dt_class: np.ndarray   # (n_dt,) class column (-1 not evaluated)
    scores: np.ndarray     # (n_dt,)
    seq: np.ndarray        # (n_dt,) order of equal scores
    kept: np.ndarray       # (n_dt,) evaluated, within max_dets of its image
    tp: np.ndarray         # (n_dt,) matched a regular object
    ignored: np.ndarray    # (n_dt,) absorbed by an ignore region
    error: np.ndarray      # (n_dt,) error type or -1
    fix_class: np.ndarray  # (n_dt,) class a loc/cls error becomes a TP of when fixed, or -1
    gt_class: np.ndarray   # (n_gt,) class column of each object (-1 region)
    missed: np.ndarray     # (n_gt,) missed error


def _match(dataset: Dataset, detections: Detections, dt_class: np.ndarray, tide: TideRules,
           pos: float) -> tuple[np.ndarray, ...]:
    """§2, §8: kept detections, their order, true positives, absorbed ones, used objects."""
    if tide.matched is not None:     # Open Images: the protocol's own match (§8.3)
        return tide.matched
    objects = dataset.gt
    n_dt, n_gt = len(detections), len(objects)
    n_c = max(int(dt_class.max(initial=-1)) + 1, len(dataset.categories))
    img = detections.image_index
    evaluated = dt_class >= 0
    if tide.dt_evaluated is not None:
        evaluated &= tide.dt_evaluated
    # Rank within the image (evaluated detections first), by descending score, ties in order.
    order = np.lexsort((np.arange(n_dt), -detections.scores, ~evaluated, img))
    first_of_image = np.searchsorted(img[order], img[order], side="left")
    rank = np.empty(n_dt, dtype=np.int64)
    rank[order] = np.arange(n_dt) - first_of_image
    seq = np.arange(n_dt)          # VOC: the input order (the devkit's stable sort)
    if tide.tidecv:   # tidecv's insertion order: image by image, by score in each
        seq[order] = np.arange(n_dt)
    elif tide.image_order is not None:   # LVIS: images in their order, by score in each
        seq[np.lexsort((np.arange(n_dt), -detections.scores, tide.image_order[img]))] = \
            np.arange(n_dt)
    kept = evaluated & (rank < (n_dt if tide.max_dets is None else tide.max_dets))
    regions = tide.regions
    # tidecv: reversed rows, so that the matcher's "later wins" tie rule (pycocotools', kept
    # for LVIS and CrowdPose) picks the first; the VOC rule picks the first itself.
    perm = np.arange(n_gt)[::-1] if tide.tidecv else np.arange(n_gt)

    def similarity(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
        return tide.pair(d_rows, perm[g_rows])

    gt_group = objects.image_index * n_c + objects.category_index
    if tide.gt_evaluated is not None:
        gt_group = np.where(tide.gt_evaluated, gt_group, -1)
    crowd = regions if tide.region_crowd is None else regions & tide.region_crowd
    table = match_detections(
        dt_group=np.where(kept, img * n_c + dt_class, -1), dt_scores=detections.scores,
        dt_area=detections.area, gt_group=gt_group[perm], gt_crowd=crowd[perm],
        gt_ignore=regions[perm], gt_area=objects.area[perm], similarity=similarity,
        iou_thresholds=np.array([pos]), area_ranges=np.array([[-np.inf, np.inf]]),
        max_detections=tide.group_max_dets or max(n_dt, 1), rule=tide.matcher,
        strict=tide.strict)
    kept &= table.dt_kept        # COCO's maxDets per (image, class), where the protocol has it
    m = table.detection_matches()[0]
    d = np.flatnonzero(m >= 0)
    g = perm[m[d]]
    tp = np.zeros(n_dt, bool)
    tp[d[~regions[g]]] = True
    ignored = np.zeros(n_dt, bool)
    on_region, region = d[regions[g]], g[regions[g]]
    if tide.tidecv and len(on_region):  # tidecv absorbs at IoA > pos only
        ignored[on_region[tide.pair(on_region, region) > pos]] = True
    else:
        ignored[on_region] = True
    if tide.dt_lenient is not None:   # LVIS: unmatched, of a not-exhaustive category
        ignored |= kept & tide.dt_lenient & (m < 0)
    used = np.zeros(n_gt, bool)
    used[g[~regions[g]]] = True
    return seq, rank, kept, tp, ignored, used


def _attribute(dataset: Dataset, detections: Detections, tide: TideRules, pos: float,
               bg: float, rules: str) -> ErrorAttribution:
    objects = dataset.gt
    n_dt, n_gt = len(detections), len(objects)
    dt_class, class_ids, class_names = _classes(dataset, detections, tide.tidecv)
    seq, rank, kept, tp, ignored, used = _match(dataset, detections, dt_class, tide, pos)
    regular = ~tide.regions
    if tide.gt_evaluated is not None:
        regular &= tide.gt_evaluated
    gt_class = np.where(regular, objects.category_index, -1)

    # §3 errors of the kept non-TP detections, from their pairs with the image's objects
    # (tidecv: absorbed detections too; otherwise they take no part).
    err_rows = np.flatnonzero(kept & ~tp & (tide.tidecv | ~ignored))
    pair_dt, pair_gt = same_image_pairs(err_rows, detections.image_index,
                                        np.flatnonzero(regular), objects.image_index)
    ious = tide.pair(pair_dt, pair_gt)
    has_gt = np.zeros(n_dt, bool)
    has_gt[pair_dt] = True
    first_gt = np.full(n_dt, -1, dtype=np.int64)  # the image's first object
    starts = np.flatnonzero(np.r_[True, pair_dt[1:] != pair_dt[:-1]]) if len(pair_dt) else []
    first_gt[pair_dt[starts]] = pair_gt[starts]   # (pairs come grouped by detection)
    same = gt_class[pair_gt] == dt_class[pair_dt]
    positive = ious > 0
    loc_gt, loc_v = best_per_detection(pair_dt, pair_gt, ious, same & positive, n_dt)
    if tide.protocol == "coco":   # tidecv: the argmax of an all-zero row is column 0
        loc_gt = np.where(loc_gt >= 0, loc_gt, first_gt)
    # Another protocol fixes a localisation error only on an object of the detection's class
    # that it overlaps: with --background-threshold 0, column 0 (of any class) made the fix
    # a true positive beyond the class's objects, a recall above 1 the VOC, LVIS and
    # CrowdPose curves refuse.
    cls_gt, cls_v = best_per_detection(pair_dt, pair_gt, ious, ~same & positive, n_dt)
    _, dup_v = best_per_detection(pair_dt, pair_gt, ious, same & used[pair_gt], n_dt)
    _, any_v = best_per_detection(pair_dt, pair_gt, ious, positive, n_dt)
    loc_v, cls_v, dup_v, any_v = (np.nan_to_num(v, nan=0.0) for v in (loc_v, cls_v, dup_v,
                                                                      any_v))
    error = np.select(
        [~has_gt, (bg <= loc_v) & (loc_v <= pos),
         (cls_v > pos) if tide.strict else (cls_v >= pos),
         (dup_v > pos) if tide.strict else (dup_v >= pos), any_v <= bg],
        [BKG, LOC, CLS, DUPE, BKG], BOTH).astype(np.int8)
    is_err = np.zeros(n_dt, bool)
    is_err[err_rows] = True
    error[~is_err] = -1
    target = np.where(error == LOC, loc_gt, np.where(error == CLS, cls_gt, -1))

    # §4 BestGTMatch: per unused target object, its earliest (highest-scoring) error wins.
    cand = np.flatnonzero(target >= 0)
    cand = cand[~used[target[cand]]]
    usable = np.zeros(n_gt, bool)
    usable[target[cand]] = True
    cand = cand[np.lexsort((rank[cand], target[cand]))]
    winners = cand[np.r_[True, target[cand][1:] != target[cand][:-1]]] if len(cand) else cand
    fix_class = np.full(n_dt, -1, dtype=np.int64)
    fix_class[winners] = np.where(error[winners] == CLS, gt_class[target[winners]],
                                  dt_class[winners])
    missed = regular & ~used & ~usable
    run = _Run(dt_class, detections.scores, seq, kept, tp, ignored, error, fix_class,
               gt_class, missed)
    settings = {"pos_threshold": pos, "background_threshold": bg,
                "max_dets": tide.max_dets if tide.cap is None else tide.cap, "rules": rules,
                "protocol": tide.protocol, "iou_type": tide.iou_type}
    return _scores(run, class_ids, class_names, rules, tide, settings)


def _scores(run: _Run, class_ids: np.ndarray, class_names: tuple[str, ...], rules: str,
            tide: TideRules, settings: dict) -> ErrorAttribution:
    """§4-5: the original AP and the AP of every fixed run."""
    n_c = len(class_ids)
    regular = run.gt_class >= 0
    n_pos = np.bincount(run.gt_class[regular], minlength=n_c)
    counted = run.kept & ~run.ignored            # tidecv's data points
    tie = run.seq if rules == "deteval" else run.seq + np.where(run.tp, len(run.seq), 0)
    rows = np.flatnonzero(counted)
    base_ap, ap = tide.score(run.dt_class[rows], run.scores[rows], run.tp[rows],
                             run.seq[rows], n_pos, n_c)

    def fixed(error_type: int) -> tuple[np.ndarray, float]:
        keep = counted & (run.error != error_type)
        fixes = np.flatnonzero((run.error == error_type) & (run.fix_class >= 0) & run.kept)
        sel = np.flatnonzero(keep)
        cls = np.r_[run.dt_class[sel], run.fix_class[fixes]]
        both = np.r_[sel, fixes]
        good = np.r_[run.tp[sel], np.ones(len(fixes), bool)]
        positives = n_pos
        if error_type == MISS:
            positives = n_pos - np.bincount(run.gt_class[run.missed], minlength=n_c)
        return tide.score(cls, run.scores[both], good, tie[both], positives, n_c)

    runs = [fixed(e) for e in range(6)]
    class_fixed = np.stack([c for c, _ in runs], axis=1)        # (C, 6)
    fixed_ap = np.array([m for _, m in runs])
    dap = np.array([max(m - ap, 0.0) for m in fixed_ap.tolist()])
    fp_scores = np.where(run.tp, 1.0, 0.0)[rows]
    fp_ap, fp_map = tide.score(run.dt_class[rows], fp_scores, run.tp[rows], tie[rows], n_pos,
                               n_c)
    n_tp = np.bincount(run.dt_class[run.tp], minlength=n_c)
    fn_ap, fn_map = tide.score(run.dt_class[rows], run.scores[rows], run.tp[rows], tie[rows],
                               n_tp, n_c)
    counts_c = np.zeros((n_c, 6), dtype=np.int64)
    err = run.error >= 0
    np.add.at(counts_c, (run.dt_class[err], run.error[err].astype(np.int64)), 1)
    counts_c[:, MISS] = np.bincount(run.gt_class[run.missed], minlength=n_c)
    return ErrorAttribution(
        ap=ap, error_names=ERROR_NAMES, dap=dap, fixed_ap=fixed_ap, dap_fp=fp_map - ap,
        dap_fn=fn_map - ap, counts=counts_c.sum(axis=0), class_ids=class_ids,
        class_names=class_names, class_ap=base_ap, class_dap=class_fixed - base_ap[:, None],
        class_dap_fp=fp_ap - base_ap, class_dap_fn=fn_ap - base_ap, class_counts=counts_c,
        dt_error=run.error, dt_true_positive=run.tp, gt_missed=run.missed, settings=settings)
