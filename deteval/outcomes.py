"""What happened to every detection and every object at one IoU and one score threshold.

:func:`match_outcomes` gives each detection one outcome (a true positive, an ignored
detection, or a false positive with its reason, in the spirit of TIDE) and each ground-truth
object one outcome (found, missed, ignored). Drawings (:mod:`deteval.viz.draw`) and reports
read these outcomes, so a picture shows exactly the numbers of the tables.

Matching
--------
The shared greedy matcher (:func:`~deteval.matching.match_detections`, COCO rule, one IoU
threshold, one area range ``[0, inf]``, every detection kept), within each image and
category, exactly as pass 1 of :func:`~deteval.confusion.detection_confusion_matrix`. So the
true and false positives of every class equal the confusion matrix's (its diagonal and its
column totals minus the diagonal) and, for ground truth without ``ignore`` flags and at most
100 detections per image and category, the COCO protocol's at the same IoU threshold (area
"all") and the same ``iou_type``.

The similarity is that of the evaluation (``iou_type``), computed by the very code the COCO
protocol matches with (:mod:`deteval._similarity`): box IoU (``"bbox"``, the default), mask
IoU (``"segm"``), boundary IoU (``"boundary"``), OKS with the keypoint sigmas and the
object's area (``"keypoints"``; objects without keypoints are ignored, as COCO ignores
them), polygon or rotated-box IoU (``"polygon"``, ``"rotated"``). A crowd region is
matched by its intersection over the detection's area (IoA) where COCO does so (boxes,
masks, polygons). Below, "IoU" means this similarity. Given a
:class:`~deteval.protocols.coco.COCOResult`, its dataset, detections, ``iou_type``,
sigmas and dilation ratio are used, so that a drawing shows the matches of that AP; so are
those of a VOC or LVIS result, and a CrowdPose result's OKS is its own: its sigmas and each
object's area ``h * w * 0.53`` of its box (unless ``use_area``), as the protocol matches.
An Open Images result is refused (its tidy export has its outcomes).

Outcome of a detection (``DT_OUTCOMES``), decided in this order
----------------------------------------------------------------
``below_threshold``
    Its score is below ``score_threshold``: not matched at all.
``ignored``
    It matched a crowd region or an ignored object (``GroundTruth.ignore``, VOC *difficult*;
    for keypoints an object without keypoints) of its class, or its category is not a
    ground-truth category (the protocols drop it).
``tp``
    It matched a regular object of its class.

Every other detection is a false positive, with the first reason that applies. ``t`` is the
IoU threshold (capped at ``1 - 1e-10`` as the matcher caps it); IoU is the similarity of
``iou_type`` with non-crowd objects of the same image (crowd regions are never a reason):

``duplicate``
    IoU ``>= t`` with an object of its class. Such an object was necessarily taken by a
    higher-scoring detection (the greedy rule would have given it to this one otherwise):
    a second detection of a found object. This includes a second detection on an ignored
    object, which absorbs only one.
``wrong_class``
    IoU ``>= t`` with an object of another class (regular or ignored, found or not): right
    place, wrong label.
``localization``
    Best IoU with an object of its class in ``[0.1, t)``: the right object, badly boxed.
``background``
    None of the above: it fired on background (its best IoU with any object of its class
    is below 0.1, and with any other object below ``t``).

``dt_gt`` names the object the outcome refers to (the matched one for ``tp`` and
``ignored``; for a false positive the object of its reason with the highest IoU, the first
in row order on ties) and ``dt_iou`` its IoU (for a crowd region the IoA, the similarity
COCO matches crowds by); ``-1`` and NaN for ``background``, ``below_threshold`` and
detections of an unknown category.

Outcome of an object (``GT_OUTCOMES``)
--------------------------------------
``tp`` (a detection of its class matched it), ``missed`` (none did: a false negative) or
``ignored`` (crowd region or ignored object, never missed). ``gt_dt`` is the matching
detection; for an ignored object the highest-scoring detection it absorbed, if any.

Examples
--------
>>> from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
>>> gt = GroundTruth(image_index=[0, 0], category_index=[0, 1],
...                  boxes=[[0, 0, 10, 10], [50, 50, 60, 60]])
>>> ds = Dataset(Images(ids=[1]), Categories(ids=[1, 2], names=("cat", "dog")), gt)
>>> dt = Detections(image_index=[0, 0, 0, 0], category_index=[0, 0, 0, 0],
...                 boxes=[[0, 0, 10, 10], [0, 0, 10, 9], [50, 50, 60, 60], [3, 3, 13, 13]],
...                 scores=[0.9, 0.8, 0.7, 0.6])
>>> out = match_outcomes(ds, dt)
>>> out.dt_outcome_names
('tp', 'duplicate', 'wrong_class', 'localization')
>>> out.gt_outcome_names, out.errors_per_image.tolist()
(('tp', 'missed'), [4])
>>> out
Outcomes(iou_threshold=0.5, score_threshold=0, tp=1, fp=3, fn=1, detections=4, objects=2,
         images=1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ._arrays import ReadOnlyArrays, frozen
from ._inputs import load_pair
from ._similarity import Similarity, check_iou_type, evaluation_similarity, read_as
from ._validation import check_similarity_settings, number
from .data import Dataset, Detections
from .matching import match_detections

__all__ = [
    "DT_OUTCOMES",
    "FP_OUTCOMES",
    "GT_OUTCOMES",
    "LOCALIZATION_MIN_IOU",
    "ImageRows",
    "Outcomes",
    "match_outcomes",
    "resolve_similarity",
]

#: Outcome names of detections; ``Outcomes.dt_outcome`` holds indices into this tuple.
DT_OUTCOMES = ("tp", "duplicate", "wrong_class", "localization", "background", "ignored",
               "below_threshold")
#: The false-positive reasons, a subset of ``DT_OUTCOMES``.
FP_OUTCOMES = ("duplicate", "wrong_class", "localization", "background")
#: Outcome names of ground-truth objects; ``Outcomes.gt_outcome`` indexes this tuple.
GT_OUTCOMES = ("tp", "missed", "ignored")
#: Lowest IoU with an object of its class that makes a false positive a localization error.
LOCALIZATION_MIN_IOU = 0.1

_DT = {name: code for code, name in enumerate(DT_OUTCOMES)}
_GT = {name: code for code, name in enumerate(GT_OUTCOMES)}
_FP_CODES = np.array([_DT[name] for name in FP_OUTCOMES], dtype=np.int8)
_IOU_CAP = 1 - 1e-10   # the matcher's cap: an IoU threshold of 1 accepts IoU >= 1 - 1e-10


class ImageRows(NamedTuple):
    """Rows of one image: ``detections`` (into the Detections) and ``gt`` (into the
    GroundTruth), both int64 arrays in ascending order."""

    detections: np.ndarray
    gt: np.ndarray



def _rows_by_image(image_index: np.ndarray, n_images: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted by image (stable) and the start of each image's run (length n_images + 1)."""
    order = np.argsort(image_index, kind="stable")
    starts = np.searchsorted(image_index[order], np.arange(n_images + 1))
    return frozen(order.astype(np.int64)), frozen(starts.astype(np.int64))


@dataclass(frozen=True, eq=False, repr=False)
class Outcomes(ReadOnlyArrays):
    """Result of :func:`match_outcomes` (see the module documentation for the rules).

    All arrays are read-only.

    Attributes
    ----------
    iou_threshold, score_threshold : float
    dt_outcome : ndarray of int8, shape (n_dt,)
        Index into :data:`DT_OUTCOMES` of each detection's outcome.
    dt_gt : ndarray of int64, shape (n_dt,)
        GT row matched (``tp``, ``ignored``) or that the false positive refers to; -1 if none.
    dt_iou : ndarray of float64, shape (n_dt,)
        IoU with ``dt_gt`` (IoA for a crowd region); NaN where ``dt_gt`` is -1.
    gt_outcome : ndarray of int8, shape (n_gt,)
        Index into :data:`GT_OUTCOMES`.
    gt_dt : ndarray of int64, shape (n_gt,)
        Matching detection row (for an ignored object the highest-scoring one it absorbed);
        -1 if none.
    errors_per_image : ndarray of int64, shape (n_images,)
        False positives plus missed objects of each image.
    dt_image_index, dt_category_index : ndarray of int64, shape (n_dt,)
        The detections' image and category rows (category -1: unknown to the ground truth).
    gt_image_index, gt_category_index : ndarray of int64, shape (n_gt,)
    category_names : tuple of str
        The dataset's category names, by category row.
    iou_type : str
        The similarity matched by (see the module documentation).
    """

    iou_threshold: float
    score_threshold: float
    dt_outcome: np.ndarray
    dt_gt: np.ndarray
    dt_iou: np.ndarray
    gt_outcome: np.ndarray
    gt_dt: np.ndarray
    errors_per_image: np.ndarray
    dt_image_index: np.ndarray
    dt_category_index: np.ndarray
    gt_image_index: np.ndarray
    gt_category_index: np.ndarray
    category_names: tuple[str, ...]
    iou_type: str = "bbox"
    _dt_by_image: tuple = field(init=False, repr=False)
    _gt_by_image: tuple = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("dt_outcome", "dt_gt", "dt_iou", "gt_outcome", "gt_dt", "errors_per_image",
                     "dt_image_index", "dt_category_index", "gt_image_index",
                     "gt_category_index"):
            object.__setattr__(self, name, frozen(getattr(self, name), copy=True))
        n_images = len(self.errors_per_image)
        object.__setattr__(self, "_dt_by_image", _rows_by_image(self.dt_image_index, n_images))
        object.__setattr__(self, "_gt_by_image", _rows_by_image(self.gt_image_index, n_images))

    def __repr__(self) -> str:
        c = self.counts()
        kind = "" if self.iou_type == "bbox" else f"iou_type={self.iou_type!r}, "
        return (f"Outcomes({kind}iou_threshold={self.iou_threshold:g}, "
                f"score_threshold={self.score_threshold:g}, tp={c['tp']}, fp={c['fp']}, "
                f"fn={c['fn']}, detections={self.n_detections}, objects={self.n_gt}, "
                f"images={self.n_images})")

    @property
    def n_detections(self) -> int:
        return len(self.dt_outcome)

    @property
    def n_gt(self) -> int:
        return len(self.gt_outcome)

    @property
    def n_images(self) -> int:
        return len(self.errors_per_image)

    @property
    def dt_outcome_names(self) -> tuple[str, ...]:
        """The outcome of each detection by name, e.g. ``("tp", "background", ...)``."""
        return tuple(DT_OUTCOMES[c] for c in self.dt_outcome.tolist())

    @property
    def gt_outcome_names(self) -> tuple[str, ...]:
        """The outcome of each object by name, e.g. ``("tp", "missed", ...)``."""
        return tuple(GT_OUTCOMES[c] for c in self.gt_outcome.tolist())

    @property
    def dt_is_fp(self) -> np.ndarray:
        """Shape (n_dt,) bool: the detection is a false positive (any reason)."""
        return np.isin(self.dt_outcome, _FP_CODES)

    def for_image(self, image_index: int) -> ImageRows:
        """Detection rows and GT rows of the image at row ``image_index`` of the images table.

        Raises ``IndexError`` for a row outside the table.
        """
        if isinstance(image_index, (bool, np.bool_)) or not isinstance(
                image_index, (int, np.integer)):
            raise TypeError(f"image_index must be an integer; got {type(image_index).__name__}")
        if not 0 <= image_index < self.n_images:
            raise IndexError(f"image_index must be in [0, {self.n_images}); got {image_index}")
        rows = []
        for order, starts in (self._dt_by_image, self._gt_by_image):
            chosen = np.sort(order[starts[image_index]:starts[image_index + 1]])
            rows.append(chosen)
        return ImageRows(detections=rows[0], gt=rows[1])

    def counts(self, *, image_index: int | None = None,
               category_index: int | None = None) -> dict[str, int]:
        """Numbers of each outcome, for the whole dataset or one image and/or category.

        Keys: ``tp``, ``fp`` (all reasons), ``fn`` (missed objects), each reason of
        :data:`FP_OUTCOMES`, ``ignored_detections``, ``below_threshold`` and ``ignored_gt``.
        """
        dt_keep = np.ones(self.n_detections, bool)
        gt_keep = np.ones(self.n_gt, bool)
        if image_index is not None:
            rows = self.for_image(image_index)
            dt_keep[:] = False
            dt_keep[rows.detections] = True
            gt_keep[:] = False
            gt_keep[rows.gt] = True
        if category_index is not None:
            dt_keep &= self.dt_category_index == category_index
            gt_keep &= self.gt_category_index == category_index
        dt = np.bincount(self.dt_outcome[dt_keep], minlength=len(DT_OUTCOMES))
        gt = np.bincount(self.gt_outcome[gt_keep], minlength=len(GT_OUTCOMES))
        out = {"tp": int(dt[_DT["tp"]]), "fp": int(sum(dt[_DT[r]] for r in FP_OUTCOMES)),
               "fn": int(gt[_GT["missed"]])}
        out.update({reason: int(dt[_DT[reason]]) for reason in FP_OUTCOMES})
        out["ignored_detections"] = int(dt[_DT["ignored"]])
        out["below_threshold"] = int(dt[_DT["below_threshold"]])
        out["ignored_gt"] = int(gt[_GT["ignored"]])
        return out

    def per_class(self) -> list[dict[str, Any]]:
        """One dict per category: ``name`` and the :meth:`counts` of that category."""
        return [{"name": name, **self.counts(category_index=k)}
                for k, name in enumerate(self.category_names)]

    def images_by_errors(self, *, only_errors: bool = False,
                         limit: int | None = None) -> np.ndarray:
        """Image rows ordered by number of errors, most first (ties: table order).

        ``only_errors`` drops images without error; ``limit`` keeps the first ``limit``.
        """
        order = np.argsort(-self.errors_per_image, kind="stable")
        if only_errors:
            order = order[self.errors_per_image[order] > 0]
        if limit is not None:
            order = order[:max(int(limit), 0)]
        return order.astype(np.int64)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the settings, the outcomes by name, the rows referred to (IoU None
        where NaN), errors per image and :meth:`counts`."""
        return {
            "iou_type": self.iou_type,
            "iou_threshold": self.iou_threshold,
            "score_threshold": self.score_threshold,
            "dt_outcome": list(self.dt_outcome_names),
            "dt_gt": self.dt_gt.tolist(),
            "dt_iou": [None if v != v else v for v in self.dt_iou.tolist()],
            "gt_outcome": list(self.gt_outcome_names),
            "gt_dt": self.gt_dt.tolist(),
            "errors_per_image": self.errors_per_image.tolist(),
            "counts": self.counts(),
        }


def best_per_detection(pair_dt: np.ndarray, pair_gt: np.ndarray, values: np.ndarray,
                        allowed: np.ndarray, n_dt: int) -> tuple[np.ndarray, np.ndarray]:
    """Per detection, the allowed pair with the highest value (the first pair on ties).

    Pairs must come grouped by detection, each detection's objects in row order. Returns the
    GT row (-1 if none) and the value (NaN if none), shape (n_dt,) each."""
    best_gt = np.full(n_dt, -1, dtype=np.int64)
    best = np.full(n_dt, np.nan)
    if not allowed.any():
        return best_gt, best
    starts = np.flatnonzero(np.r_[True, pair_dt[1:] != pair_dt[:-1]])
    lengths = np.diff(np.r_[starts, len(pair_dt)])
    keyed = np.where(allowed, values, -np.inf)
    top = np.maximum.reduceat(keyed, starts)
    at_top = allowed & (keyed == np.repeat(top, lengths))
    first = np.minimum.reduceat(np.where(at_top, np.arange(len(values)), len(values)), starts)
    found = first < len(values)
    rows = pair_dt[starts[found]]
    best_gt[rows] = pair_gt[first[found]]
    best[rows] = values[first[found]]
    return best_gt, best


def same_image_pairs(dt_rows: np.ndarray, dt_image: np.ndarray, gt_rows: np.ndarray,
                      gt_image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (detection, object) pair of the same image among the given rows."""
    gt_rows = gt_rows[np.argsort(gt_image[gt_rows], kind="stable")]
    sorted_images = gt_image[gt_rows]
    lo = np.searchsorted(sorted_images, dt_image[dt_rows], side="left")
    hi = np.searchsorted(sorted_images, dt_image[dt_rows], side="right")
    count = hi - lo
    pair_dt = np.repeat(dt_rows, count)
    offsets = np.arange(len(pair_dt)) - np.repeat(np.cumsum(count) - count, count)
    pair_gt = gt_rows[np.repeat(lo, count) + offsets]
    return pair_dt.astype(np.int64), pair_gt.astype(np.int64)


def match_outcomes(gt: Any, dt: Any = None, *, iou_threshold: float = 0.5,
                   score_threshold: float = 0.0, iou_type: str | None = None,
                   keypoint_sigmas: Any = None, dilation_ratio: float | None = None
                   ) -> Outcomes:
    """The outcome of every detection and object at one IoU and one score threshold.

    Parameters
    ----------
    gt : Dataset, str, PathLike, dict or a result
        Ground truth, or a COCO instances file (or its dict); or the result of
        :func:`~deteval.evaluate_coco` (then ``dt`` is None and its dataset, detections and
        settings are used), :func:`~deteval.evaluate_voc`, :func:`~deteval.evaluate_lvis`
        or :func:`~deteval.evaluate_crowdpose` (matched by CrowdPose's OKS: its sigmas, the
        objects' areas ``h * w * 0.53`` of their box).
    dt : Detections, str, PathLike, list, dict or ndarray
        Detections, or anything :func:`~deteval.io.coco.read_coco_results` reads.
    iou_threshold : float, default 0.5
        In ``(0, 1]``; a pair matches at IoU ``>= iou_threshold`` (COCO rule).
    score_threshold : float, default 0
        ``>= 0``; detections scoring lower are ``below_threshold`` and not matched.
    iou_type : {"bbox", "segm", "boundary", "keypoints", "polygon", "rotated"}, optional
        The similarity (module documentation); default "bbox", or the result's.
    keypoint_sigmas : sequence of float or dict {category_id: sequence}, optional
        Keypoints: OKS sigmas (default: the result's, else COCO's person sigmas for 17).
        Given with another ``iou_type``: ValueError (it would be ignored).
    dilation_ratio : float, optional
        Boundary IoU: boundary width over the image diagonal (default: the result's, 0.02).
        Given with another ``iou_type``: ValueError (it would be ignored).

    Returns
    -------
    Outcomes
        See the module documentation for the rules.

    Raises
    ------
    ValueError, TypeError
        Invalid thresholds or ``iou_type``; ``keypoint_sigmas`` or ``dilation_ratio`` with an
        ``iou_type`` that does not read them; inputs without the shapes ``iou_type`` compares;
        detections that do not index the dataset.
    FormatError
        Unreadable input files.
    """
    iou_threshold = number("iou_threshold", iou_threshold, low=0.0, high=1.0, low_open=True)
    score_threshold = number("score_threshold", score_threshold, low=0.0)
    dataset, detections, similarity = resolve_similarity(
        gt, dt, iou_type=iou_type, keypoint_sigmas=keypoint_sigmas,
        dilation_ratio=dilation_ratio, floor=min(iou_threshold, LOCALIZATION_MIN_IOU))
    return _outcomes(dataset, detections, iou_threshold, score_threshold, similarity)


def resolve_similarity(gt: Any, dt: Any, *, iou_type: str | None, keypoint_sigmas: Any,
                       dilation_ratio: float | None, floor: float
                       ) -> tuple[Dataset, Detections, Similarity]:
    """The inputs (a pair, or a COCOResult and None) and the similarity to match them by.

    Shared by :func:`match_outcomes` and :func:`~deteval.confusion.detection_confusion_matrix`.
    A similarity setting given (not None) with an IoU type that does not read it is a
    ValueError (:func:`~deteval._validation.check_similarity_settings`); a result's own
    settings are read after that check (they are not the caller's).
    """
    params = getattr(gt, "params", None)
    if params is not None and hasattr(gt, "dataset") and hasattr(gt, "detections"):
        if dt is not None:
            raise TypeError("given a result (of evaluate_coco), dt must be None: the result "
                            "holds its detections")
        if gt.detections is None:
            raise ValueError("this result keeps no detections (Evaluator.compute); pass the "
                             "dataset and the detections instead")
        dataset, detections = gt.dataset, gt.detections
        dataset, params = _as_matched(dataset, params)
        iou_type = check_iou_type(getattr(params, "iou_type", "bbox") if iou_type is None
                                  else iou_type)
        check_similarity_settings(iou_type, keypoint_sigmas=keypoint_sigmas,
                                  dilation_ratio=dilation_ratio)
        if keypoint_sigmas is None:
            keypoint_sigmas = getattr(params, "keypoint_sigmas", None)
        if dilation_ratio is None:
            dilation_ratio = getattr(params, "dilation_ratio", 0.02)
    else:
        if dt is None and hasattr(gt, "matches"):
            raise TypeError(
                f"a {type(gt).__name__} cannot be matched here: give a result of "
                "evaluate_coco, evaluate_voc, evaluate_lvis or evaluate_crowdpose, or the "
                "ground truth and the detections (an Open Images result's outcomes are in "
                "its tidy export, result.to_frame())")
        if dt is None:
            raise TypeError("dt (the detections) is required unless gt is a result of "
                            "evaluate_coco")
        iou_type = check_iou_type("bbox" if iou_type is None else iou_type)
        check_similarity_settings(iou_type, keypoint_sigmas=keypoint_sigmas,
                                  dilation_ratio=dilation_ratio)
        pair = load_pair(gt, dt, iou_type=read_as(iou_type))
        dataset, detections = pair.dataset, pair.detections
    if len(detections) and detections.category_index.min() < -1:
        raise ValueError("detections.category_index must index the dataset's categories "
                         "table (or be -1 for a category unknown to the ground truth)")
    similarity = evaluation_similarity(
        dataset, detections, iou_type, floor=floor, keypoint_sigmas=keypoint_sigmas,
        dilation_ratio=0.02 if dilation_ratio is None else dilation_ratio)
    return dataset, detections, similarity


def _as_matched(dataset: Dataset, params: Any) -> tuple[Dataset, Any]:
    """The objects and the COCO settings a result's protocol matched with: a CrowdPose
    result's are its OKS with its sigmas and each object's area ``h * w * 0.53`` of its box
    (:func:`~deteval.protocols.crowdpose.scaled_dataset`, unless ``use_area``); the others'
    are their own."""
    from .protocols.crowdpose import CrowdPoseParams, scaled_dataset

    if isinstance(params, CrowdPoseParams):
        return scaled_dataset(dataset, params), params.coco_params()
    return dataset, params


def _outcomes(dataset: Dataset, detections: Detections, iou_threshold: float,
              score_threshold: float, sim: Similarity) -> Outcomes:
    objects = dataset.gt
    n_k, n_images = len(dataset.categories), len(dataset.images)
    n_dt, n_gt = len(detections), len(objects)
    crowd = objects.iscrowd
    ignored_gt = sim.gt_ignore
    similarity = sim.pair

    # The call of pass 1 of detection_confusion_matrix: the same table, the same counts.
    known = detections.category_index >= 0
    above = detections.scores >= score_threshold
    selected = known & above
    table = match_detections(
        dt_group=np.where(selected, detections.image_index * n_k + detections.category_index,
                          -1),
        dt_scores=detections.scores, dt_area=detections.area,
        gt_group=objects.image_index * n_k + objects.category_index, gt_crowd=crowd,
        gt_ignore=ignored_gt, gt_area=objects.area, similarity=similarity,
        iou_thresholds=np.array([iou_threshold]), area_ranges=np.array([[0.0, np.inf]]),
        max_detections=max(n_dt, 1))
    matched_gt = table.detection_matches()[0]

    outcome = np.full(n_dt, _DT["background"], dtype=np.int8)
    dt_gt = np.full(n_dt, -1, dtype=np.int64)
    dt_iou = np.full(n_dt, np.nan)
    matched = np.flatnonzero(matched_gt >= 0)
    g = matched_gt[matched]
    outcome[matched] = np.where(ignored_gt[g], _DT["ignored"], _DT["tp"])
    dt_gt[matched] = g
    dt_iou[matched] = similarity(matched, g)

    # False positives: why. Pairs with the non-crowd objects of the same image.
    fp_rows = np.flatnonzero(selected & (matched_gt < 0))
    pair_dt, pair_gt = same_image_pairs(fp_rows, detections.image_index,
                                         np.flatnonzero(~crowd), objects.image_index)
    ious = similarity(pair_dt, pair_gt)   # non-crowd objects: IoU, not IoA
    t = min(iou_threshold, _IOU_CAP)
    near = (ious >= min(t, LOCALIZATION_MIN_IOU)) & (ious > 0)   # most pairs do not overlap
    pair_dt, pair_gt, ious = pair_dt[near], pair_gt[near], ious[near]
    same = objects.category_index[pair_gt] == detections.category_index[pair_dt]
    dup_gt, dup_iou = best_per_detection(pair_dt, pair_gt, ious, same & (ious >= t), n_dt)
    cls_gt, cls_iou = best_per_detection(pair_dt, pair_gt, ious, ~same & (ious >= t), n_dt)
    loc_gt, loc_iou = best_per_detection(pair_dt, pair_gt, ious,
                                          same & (ious >= LOCALIZATION_MIN_IOU), n_dt)
    undecided = np.zeros(n_dt, bool)
    undecided[fp_rows] = True
    for name, rows_gt, rows_iou in (("duplicate", dup_gt, dup_iou),
                                    ("wrong_class", cls_gt, cls_iou),
                                    ("localization", loc_gt, loc_iou)):
        hit = undecided & (rows_gt >= 0)
        outcome[hit] = _DT[name]
        dt_gt[hit] = rows_gt[hit]
        dt_iou[hit] = rows_iou[hit]
        undecided &= ~hit

    outcome[~known] = _DT["ignored"]
    outcome[~above] = _DT["below_threshold"]

    # Objects.
    gt_dt = np.full(n_gt, -1, dtype=np.int64)
    if len(matched):
        # For an object absorbing several detections (a crowd), the best-ranked one.
        order = np.lexsort((table.dt_rank[matched], g))
        first = np.r_[True, g[order][1:] != g[order][:-1]]
        gt_dt[g[order][first]] = matched[order][first]
    gt_outcome = np.where(ignored_gt, _GT["ignored"],
                          np.where(gt_dt >= 0, _GT["tp"], _GT["missed"])).astype(np.int8)

    is_fp = np.isin(outcome, _FP_CODES)
    errors = (np.bincount(detections.image_index[is_fp], minlength=n_images)
              + np.bincount(objects.image_index[gt_outcome == _GT["missed"]],
                            minlength=n_images)).astype(np.int64)
    return Outcomes(
        iou_threshold=iou_threshold, score_threshold=score_threshold, dt_outcome=outcome,
        dt_gt=dt_gt, dt_iou=dt_iou, gt_outcome=gt_outcome, gt_dt=gt_dt,
        errors_per_image=errors, dt_image_index=detections.image_index,
        dt_category_index=detections.category_index, gt_image_index=objects.image_index,
        gt_category_index=objects.category_index,
        category_names=tuple(dataset.categories.names), iou_type=sim.iou_type)
