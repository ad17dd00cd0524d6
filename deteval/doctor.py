"""The input doctor: plausible-looking mistakes in a ground-truth / detections pair, found
before a number is printed.

:func:`check_inputs` looks at the pair the way a careful person would: do the best-scoring
detections overlap the ground truth of their image, and would they overlap it better read
another way? Each finding is a :class:`Hazard` with a code, a message with the evidence, the
likely cause and the option that fixes it. The checks:

========================== ===============================================================
code                       finding
========================== ===============================================================
``box-format``             another box layout (xyxy, xywh, cxcywh, or a normalised one)
                           makes the top detections overlap the ground truth much better
``normalised-coordinates`` detections (or ground truth) in [0, 1] where pixels are read
``class-shift``            detections overlap objects whose category id is theirs +- 1
``class-mapping``          detections overlap objects of one other class, consistently
                           (a names file in another order)
``outside-image``          many detections lie mostly outside their image
``images-without-detections`` most ground-truth images with objects have no detection
``duplicates``             detections repeated exactly (same image, class, box, score)
``equal-scores``           every detection has the same score
``unknown-categories``     many detections are of categories the ground truth lacks
``absent-categories``      most detections are of categories with no ground-truth object
``unpredicted-categories`` most ground-truth categories are never predicted
========================== ===============================================================

The overlap checks work on a sample, the ``sample_size`` top-scoring detections; the counts
on all of them. Thresholds are set so that a correct pair raises nothing: a false alarm is a
defect (the tests run every correct pair of the shared samples).

Examples
--------
>>> import numpy as np
>>> from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
>>> boxes = np.array([[10.0 * i, 10.0 * i, 10.0 * i + 40, 10.0 * i + 30] for i in range(30)])
>>> ds = Dataset(Images(ids=[1], widths=[400], heights=[400]), Categories(ids=[1]),
...              GroundTruth(image_index=[0] * 30, category_index=[0] * 30, boxes=boxes))
>>> good = Detections(image_index=[0] * 30, category_index=[0] * 30, boxes=boxes,
...                   scores=np.linspace(1, 0.5, 30))
>>> check_inputs(ds, good).hazards
()
>>> as_xywh = np.column_stack([boxes[:, :2], boxes[:, 2:]])   # xyxy numbers read as xywh
>>> bad = good.replace(boxes=np.column_stack([as_xywh[:, :2], as_xywh[:, :2] + as_xywh[:, 2:]]))
>>> diagnosis = check_inputs(ds, bad, box_format="xywh")
>>> [h.code for h in diagnosis.hazards], diagnosis.hazards[0].cli_option
(['box-format'], '--box-format xyxy')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._inputs import load_pair
from ._sorting import sorted_median, sorted_unique
from .boxes import BOX_FORMATS, convert_boxes
from .data import Dataset, Detections

__all__ = ["Diagnosis", "Hazard", "check_inputs"]

#: How many top-scoring detections the overlap checks look at.
SAMPLE_SIZE = 2000
_MIN_PAIRS = 20          # confident matches needed before judging classes
_MIN_SAMPLE = 20         # detections needed before judging boxes
#: The box-format hazard: another layout's median best IoU must reach this ...
_FORMAT_MEDIAN = 0.5
#: ... and exceed the median of the layout as read by this much.
_FORMAT_GAIN = 0.25
#: A computed IoU exceeds 1 by a few units in the last place at most (``_iou``: the
#: intersection is at most either area, rounded the same way); above ``1 - _FORMAT_GAIN +
#: _IOU_SLACK`` as read, no layout can gain ``_FORMAT_GAIN``, and none is tried.
_IOU_SLACK = 1e-9


@dataclass(frozen=True)
class Hazard:
    """One finding of :func:`check_inputs`.

    Attributes
    ----------
    code : str
        Stable identifier (see the module table).
    message : str
        What was seen, with the numbers.
    cause : str
        The likely cause.
    option : str or None
        The Python option that fixes it (``"box_format='xywh'"``), if one does.
    cli_option : str or None
        The same in command-line words (``"--box-format xywh"``).
    """

    code: str
    message: str
    cause: str
    option: str | None = None
    cli_option: str | None = None

    def text(self, *, cli: bool = False) -> str:
        """One line: message, cause and fix."""
        fix = self.cli_option if cli else self.option
        return f"{self.message} ({self.cause}){f'; pass {fix}' if fix else ''}"

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "cause": self.cause,
                "option": self.option, "cli_option": self.cli_option}


@dataclass(frozen=True)
class Diagnosis:
    """Result of :func:`check_inputs`.

    Attributes
    ----------
    hazards : tuple of Hazard
        Empty when the pair looks right.
    n_detections, n_sampled : int
        Detections in all, and those the overlap checks looked at.
    box_format : str
        The layout the detection boxes were read in.
    median_iou : float
        Median over the sampled detections (on images with objects) of the best IoU with a
        ground-truth object of the same image, any class; NaN when there is none.
    """

    hazards: tuple[Hazard, ...]
    n_detections: int
    n_sampled: int
    box_format: str
    median_iou: float

    @property
    def ok(self) -> bool:
        """True when no hazard was found."""
        return not self.hazards

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(h.code for h in self.hazards)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "hazards": [h.to_dict() for h in self.hazards],
                "n_detections": self.n_detections, "n_sampled": self.n_sampled,
                "box_format": self.box_format,
                "median_iou": None if np.isnan(self.median_iou) else self.median_iou}


def check_inputs(gt: Any, dt: Any, *, box_format: str | None = None,
                 class_names: bool | None = None, dt_format: str | None = None,
                 match_by: str = "auto", iou_type: str = "bbox",
                 sample_size: int = SAMPLE_SIZE) -> Diagnosis:
    """Look for plausible mistakes in a ground-truth / detections pair.

    Parameters
    ----------
    gt, dt
        A :class:`~deteval.data.Dataset` and :class:`~deteval.data.Detections`, or what
        :func:`~deteval.evaluate_coco` reads (COCO files, dicts, lists).
    box_format : str, optional
        The layout the detection boxes were read in (one of
        :data:`~deteval.boxes.BOX_FORMATS`); default ``"xywh"`` when the detections keep
        COCO's ``xywh`` numbers, else ``"xyxy"``.
    class_names : bool, optional
        Whether the detections' class indices were mapped through a names file (``names=``).
        False words a class-id hazard as a missing names file.
    dt_format : str, optional
        The format the detections were read from, for the wording of the fixes.
    match_by : {"auto", "id", "name"}
        As for :func:`~deteval.evaluate_coco`, when ``gt``/``dt`` are files.
    iou_type : str
        As for :func:`~deteval.evaluate_coco`, when ``gt``/``dt`` are files (the checks
        look at the boxes: a mask's or keypoints' box when the result has no other).
    sample_size : int
        How many top-scoring detections the overlap checks use.

    Returns
    -------
    Diagnosis
    """
    pair = load_pair(gt, dt, match_by=match_by, iou_type=iou_type)
    dataset, detections = pair.dataset, pair.detections
    if box_format is None:
        box_format = "xywh" if detections.xywh is not None else "xyxy"
    if box_format not in BOX_FORMATS:
        raise ValueError(f"box_format must be one of {', '.join(map(repr, BOX_FORMATS))}; "
                         f"got {box_format!r}")
    n = len(detections)
    sample = _top(detections.scores, sample_size)
    hazards: list[Hazard] = []
    lookup = _SameImage(dataset)
    best, best_row = lookup.best(detections.boxes[sample], detections.image_index[sample])
    with_gt = lookup.count[detections.image_index[sample]] > 0
    median = sorted_median(best[with_gt]) if with_gt.any() else float("nan")
    hazards.extend(_gt_normalised(dataset))
    shape = _box_format(dataset, detections, sample, box_format, lookup, best, with_gt)
    hazards.extend(shape)
    classes = []
    if not shape:
        classes = _classes(dataset, detections, sample, best, best_row, class_names, dt_format)
        hazards.extend(classes)
        hazards.extend(_outside(dataset, detections, sample, box_format))
    hazards.extend(_coverage(dataset, detections))
    hazards.extend(_duplicates(detections, sample))
    hazards.extend(_scores(detections))
    if not classes:   # categories unknown, absent or never predicted follow from a class hazard
        hazards.extend(_categories(dataset, detections))
    return Diagnosis(tuple(hazards), n, len(sample), box_format, median)


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the ``k`` highest scores (all rows when there are fewer), in row order."""
    if len(scores) <= k:
        return np.arange(len(scores))
    return np.sort(np.argpartition(-scores, k - 1)[:k])


class _SameImage:
    """Best IoU of boxes with the ground-truth objects of their image (any class, difficult
    and crowd ones included: they are where the detector looked too)."""

    def __init__(self, dataset: Dataset):
        gt = dataset.gt
        self.rows = np.arange(len(gt))
        image = gt.image_index
        order = np.argsort(image, kind="stable")
        self.rows = self.rows[order]
        self.boxes = gt.boxes[self.rows]
        n_images = len(dataset.images)
        self.count = np.bincount(image, minlength=n_images)
        self.start = np.concatenate([[0], np.cumsum(self.count)[:-1]])

    def best(self, boxes: np.ndarray, image_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per box: best IoU (0 without objects) and the ground-truth row (-1)."""
        k = len(boxes)
        counts = self.count[image_index]
        total = int(counts.sum())
        best = np.zeros(k)
        row = np.full(k, -1, dtype=np.int64)
        if total == 0:
            return best, row
        owner = np.repeat(np.arange(k), counts)      # sorted: each box's pairs in a run
        begin = np.cumsum(counts) - counts
        offset = np.arange(total) - np.repeat(begin, counts)
        g = self.start[image_index][owner] + offset
        iou = _iou(boxes[owner], self.boxes[g])
        has = counts > 0
        best[has] = np.maximum.reduceat(iou, begin[has])
        # The first pair of each run that reaches its maximum.
        hits = np.flatnonzero(iou == best[owner])
        first = hits[np.r_[True, owner[hits][1:] != owner[hits][:-1]]]
        row[owner[first]] = self.rows[g[first]]
        return best, row


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise IoU of xyxy boxes; an inverted box counts as empty."""
    with np.errstate(invalid="ignore", over="ignore"):
        w = np.clip(np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0, None)
        h = np.clip(np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0, None)
        inter = w * h
        area_a = np.clip(a[:, 2] - a[:, 0], 0, None) * np.clip(a[:, 3] - a[:, 1], 0, None)
        area_b = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
        union = area_a + area_b - inter
        out = np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)
    return np.nan_to_num(out)


def _sizes(dataset: Dataset, image_index: np.ndarray) -> np.ndarray:
    return np.column_stack([dataset.images.widths, dataset.images.heights])[image_index]


def _box_format(dataset: Dataset, detections: Detections, sample: np.ndarray, given: str,
                lookup: _SameImage, best_given: np.ndarray, with_gt: np.ndarray) -> list[Hazard]:
    if with_gt.sum() < _MIN_SAMPLE:
        return []
    sizes = _sizes(dataset, detections.image_index[sample])[with_gt]
    known = np.isfinite(sizes).all() and (sizes > 0).all()
    boxes = detections.boxes[sample][with_gt]
    images = detections.image_index[sample][with_gt]
    if given.endswith("n") and not known:
        return []
    median_given = sorted_median(best_given[with_gt])
    if median_given > 1.0 - _FORMAT_GAIN + _IOU_SLACK:
        return []   # no layout can gain enough (an IoU is at most 1): the verdict without them
    raw = convert_boxes(boxes, "xyxy", given, image_size=sizes if given.endswith("n") else None)
    scores = {}
    for candidate in BOX_FORMATS:
        if candidate == given:
            continue
        if candidate.endswith("n") and (not known or raw.min() < -0.01 or raw.max() > 1.01):
            continue
        with np.errstate(all="ignore"):
            xyxy = convert_boxes(raw, candidate, "xyxy",
                                 image_size=sizes if candidate.endswith("n") else None)
        scores[candidate] = sorted_median(lookup.best(xyxy, images)[0])
    if not scores:
        return []
    candidate = max(scores, key=scores.get)
    value = scores[candidate]
    if not (value >= _FORMAT_MEDIAN and value - median_given >= _FORMAT_GAIN):
        return []
    api, cli = _box_option(candidate)
    evidence = (f"median best IoU {value:.2f} with the ground truth of their image, against "
                f"{median_given:.2f} as read ({given})")
    if candidate.endswith("n") and not given.endswith("n"):
        return [Hazard("normalised-coordinates",
                       f"detection coordinates look normalised (they lie within [0, 1]) but "
                       f"were read as pixels: read as {candidate}, the top {len(boxes)} "
                       f"detections have {evidence}",
                       "relative coordinates (divided by the image size) read as pixels",
                       api, cli)]
    return [Hazard("box-format", f"detections look like {candidate}: {evidence}",
                   f"boxes written as {candidate} but read as {given}", api, cli)]


def _box_option(box_format: str) -> tuple[str, str]:
    return f"box_format={box_format!r}", f"--box-format {box_format}"


def _gt_normalised(dataset: Dataset) -> list[Hazard]:
    gt = dataset.gt
    if len(gt) < _MIN_SAMPLE or gt.boxes.min() < 0 or gt.boxes.max() > 1:
        return []
    sizes = _sizes(dataset, gt.image_index)
    known = np.isfinite(sizes).all(axis=1)
    if known.sum() < _MIN_SAMPLE or not (sizes[known] >= 32).all():
        return []
    return [Hazard("normalised-coordinates",
                   f"every ground-truth box lies within [0, 1] x [0, 1] of images of "
                   f"{int(sizes[known, 0].min())} pixels or more: normalised coordinates "
                   "read as pixels",
                   "relative coordinates (divided by the image size) read as pixels",
                   "box_format='xyxyn' (or another normalised layout) when reading the "
                   "ground truth", "--gt-box-format xyxyn (or another normalised layout)")]


def _classes(dataset: Dataset, detections: Detections, sample: np.ndarray, best: np.ndarray,
             row: np.ndarray, class_names: bool | None, dt_format: str | None) -> list[Hazard]:
    matched = best >= 0.5
    if matched.sum() < _MIN_PAIRS:
        return []
    gt_rows = dataset.gt.category_index[row[matched]]
    gt_ids = dataset.categories.ids[gt_rows]
    dt_rows = detections.category_index[sample][matched]
    if detections.category_ids is not None:
        dt_ids = detections.category_ids[sample][matched]
    else:
        dt_ids = np.where(dt_rows >= 0, dataset.categories.ids[np.maximum(dt_rows, 0)], -1)
    n = len(gt_ids)
    as_read = float(np.mean(dt_rows == gt_rows))
    if as_read >= 0.5:
        return []
    shifts = {s: float(np.mean(dt_ids + s == gt_ids)) for s in (1, -1)}
    shift = max(shifts, key=shifts.get)
    names = dataset.categories.names
    text = dt_format in ("txt", "yolo", "csv")
    if shifts[shift] >= 0.7 and shifts[shift] - as_read >= 0.3:
        message = (f"class ids look shifted by one: of {n} confident matches (IoU >= 0.5) of "
                   f"the top detections, {as_read:.0%} agree in class as read and "
                   f"{shifts[shift]:.0%} with id {'+' if shift > 0 else '-'} 1")
        if text and not class_names:
            return [Hazard("class-shift", message,
                           "0-based class indices into a names file read as the ground "
                           "truth's category ids", "names=FILE (the detector's class "
                           "names, one a line)", "--names FILE (the detector's class names, "
                           "one a line)")]
        return [Hazard("class-shift", message,
                       f"{'0' if shift > 0 else '1'}-based class ids where the ground truth's "
                       f"are {'1' if shift > 0 else '0'}-based",
                       None if not text else "names=FILE in the detector's order",
                       None if not text else "--names FILE in the detector's order")]
    # One other class, consistently: a names file in another order.
    pairs = np.unique(np.column_stack([dt_rows, gt_rows]), axis=0, return_counts=True)
    best_of: dict[int, tuple[int, int]] = {}
    for (d, g), count in zip(pairs[0].tolist(), pairs[1].tolist()):
        if d not in best_of or count > best_of[d][1]:
            best_of[d] = (g, count)
    explained = sum(c for _, c in best_of.values()) / n
    if explained >= 0.7 and explained - as_read >= 0.3:
        d, (g, _) = max(best_of.items(), key=lambda item: item[1][1])
        dt_name = names[d] if names is not None and d >= 0 else str(d)
        gt_name = names[g] if names is not None else str(g)
        message = (f"detections overlap objects of another class, consistently: of {n} "
                   f"confident matches, {as_read:.0%} agree in class as read, {explained:.0%} "
                   f"under a renaming (e.g. {dt_name!r} detections lie on {gt_name!r} objects)")
        if text:
            return [Hazard("class-mapping", message,
                           "class names in another order than the detector's (a names file "
                           "or the ground truth's class list)",
                           "names=FILE in the detector's order (or classes= for the ground "
                           "truth)", "--names FILE in the detector's order (or --classes for "
                           "the ground truth)")]
        if dataset.ids_assigned:
            return [Hazard("class-mapping", message,
                           "category ids of the detections numbered otherwise than the "
                           "categories the ground-truth reader numbered (in class-name order)",
                           "classes=FILE: the ground truth's class names in the order of the "
                           "detections' category ids",
                           "--classes FILE: the ground truth's class names in the order of the "
                           "detections' category ids")]
        return [Hazard("class-mapping", message,
                       "category ids of the detections numbered otherwise than the ground "
                       "truth's (another label map)")]
    return []


def _outside(dataset: Dataset, detections: Detections, sample: np.ndarray,
             box_format: str) -> list[Hazard]:
    if len(sample) < _MIN_SAMPLE:
        return []
    sizes = _sizes(dataset, detections.image_index[sample])
    known = np.isfinite(sizes).all(axis=1)
    if known.sum() < _MIN_SAMPLE:
        return []
    boxes = detections.boxes[sample][known]
    frame = np.column_stack([np.zeros((known.sum(), 2)), sizes[known]])
    with np.errstate(invalid="ignore", over="ignore"):
        w = np.clip(np.minimum(boxes[:, 2], frame[:, 2]) - np.maximum(boxes[:, 0], 0), 0, None)
        h = np.clip(np.minimum(boxes[:, 3], frame[:, 3]) - np.maximum(boxes[:, 1], 0), 0, None)
        area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        inside = np.where(area > 0, w * h / np.where(area > 0, area, 1), 1.0)
    outside = inside < 0.5
    share = float(outside.mean())
    if share < 0.1:
        return []
    i = int(np.flatnonzero(outside)[0])
    return [Hazard("outside-image",
                   f"{share:.0%} of the top {len(boxes)} detections lie mostly outside their "
                   f"image (e.g. {np.round(boxes[i], 1).tolist()} in a "
                   f"{sizes[known][i, 0]:g}x{sizes[known][i, 1]:g} image)",
                   "coordinates of another image size (the detector's resized input?), width "
                   f"and height swapped, or a box layout other than {box_format}")]


#: The code of the hazard "images without detections" (:func:`coverage_hazards`).
COVERAGE = "images-without-detections"


def _coverage(dataset: Dataset, detections: Detections) -> list[Hazard]:
    detected = np.bincount(detections.image_index, minlength=len(dataset.images)) > 0
    return coverage_hazards(dataset, detected, len(detections))


def coverage_hazards(dataset: Dataset, detected: np.ndarray, n_detections: int) -> list[Hazard]:
    """The coverage check on which images have a detection (``detected``, one bool per row
    of the images table), for detections seen in parts (the shards of one run)."""
    gt = dataset.gt
    regular = ~(gt.iscrowd | gt.ignore)
    with_objects = np.bincount(gt.image_index[regular], minlength=len(dataset.images)) > 0
    if with_objects.sum() < 10 or n_detections == 0:
        return []
    missing = with_objects & ~detected
    share = missing.sum() / with_objects.sum()
    if share <= 0.5:
        return []
    names = dataset.images.file_names
    first = [names[i] if names and names[i] else str(dataset.images.ids[i])
             for i in np.flatnonzero(missing)[:3].tolist()]
    return [Hazard(COVERAGE,
                   f"{int(missing.sum())} of the {int(with_objects.sum())} ground-truth images "
                   f"with objects ({share:.0%}) have no detection at all (e.g. "
                   f"{', '.join(first)})",
                   "detections of another split or of a subset, or image ids / file names "
                   "that resolve to other images")]


def _duplicates(detections: Detections, sample: np.ndarray) -> list[Hazard]:
    if len(sample) < _MIN_SAMPLE:
        return []
    rows = np.column_stack([detections.image_index[sample], detections.category_index[sample],
                            detections.boxes[sample], detections.scores[sample]])
    repeated = len(rows) - _distinct_rows(rows)
    if repeated / len(rows) < 0.05:
        return []
    return [Hazard("duplicates",
                   f"{repeated} of the top {len(rows)} detections repeat another exactly (same "
                   "image, class, box and score); every copy after the first is a false "
                   "positive",
                   "the same results written twice (files concatenated, an exporter run per "
                   "batch twice)")]


def _distinct_rows(rows: np.ndarray) -> int:
    """The number of distinct rows of a 2-D float array of finite values (rows equal as
    numbers, as ``np.unique(rows, axis=0)`` counts them): sorted by every column, a row
    differs from the one before it. (A lexsort of the columns: several times faster than
    unique's sort of the rows as records.)"""
    if len(rows) == 0:
        return 0
    ordered = rows.take(np.lexsort(rows.T), axis=0)
    return 1 + int(np.count_nonzero((ordered[1:] != ordered[:-1]).any(axis=1)))


def _scores(detections: Detections) -> list[Hazard]:
    scores = detections.scores
    if len(scores) < 2 or scores.min() != scores.max():
        return []
    return [Hazard("equal-scores",
                   f"all {len(scores)} detections have the score {scores[0]:g}: precision and "
                   "AP then depend on the order of the file",
                   "scores not exported (a constant written instead), or another column read "
                   "as the score")]


def _categories(dataset: Dataset, detections: Detections) -> list[Hazard]:
    n = len(detections)
    if n < _MIN_SAMPLE:
        return []
    hazards = []
    unknown = detections.category_index < 0
    if unknown.mean() >= 0.1:
        ids = (sorted_unique(detections.category_ids[unknown])[:5].tolist()
               if detections.category_ids is not None else [])
        shown = f" (category ids {', '.join(map(str, ids))})" if ids else ""
        hazards.append(Hazard("unknown-categories",
                              f"{int(unknown.sum())} of {n} detections ({unknown.mean():.0%}) "
                              f"are of categories the ground truth does not know{shown}; they "
                              "are dropped",
                              "class ids in another numbering than the ground truth's, or "
                              "detections of another dataset"))
    gt = dataset.gt
    regular = ~(gt.iscrowd | gt.ignore)
    n_k = len(dataset.categories)
    with_objects = np.bincount(gt.category_index[regular], minlength=n_k) > 0
    predicted = np.bincount(detections.category_index[~unknown], minlength=n_k)
    absent = predicted[~with_objects].sum()
    if with_objects.any() and absent / n >= 0.5:
        hazards.append(Hazard("absent-categories",
                              f"{int(absent)} of {n} detections ({absent / n:.0%}) are of "
                              "categories with no object in the ground truth",
                              "class ids that point to other categories, or ground truth of "
                              "another subset"))
    never = with_objects & (predicted == 0)
    if with_objects.sum() >= 3 and never.sum() / with_objects.sum() >= 0.5:
        names = dataset.categories.names
        first = [names[i] if names is not None else str(dataset.categories.ids[i])
                 for i in np.flatnonzero(never)[:5].tolist()]
        hazards.append(Hazard("unpredicted-categories",
                              f"{int(never.sum())} of the {int(with_objects.sum())} categories "
                              f"with objects are never predicted (e.g. {', '.join(first)})",
                              "class ids that point to other categories, or a detector trained "
                              "on other classes"))
    return hazards
