"""The Open Images challenge detection protocol, equal to the TensorFlow Object Detection API.

Reproduces ``oid_challenge_evaluation.py`` with ``OpenImagesDetectionChallengeEvaluator``
(group-of weight 1) and the hierarchy expansion of ``oid_hierarchical_labels_expansion.py``;
the rules, numbered, are in ``docs/protocols/openimages.md``:

* ground-truth boxes are expanded to every ancestor class, positive image-level labels to
  every ancestor, negative ones to every descendant (§5); detections are not expanded unless
  ``expand_detections=True`` (an option the official tool does not have);
* in an image, detections of a class that is neither verified by an image-level label (either
  confidence) nor present as a box are dropped (§4);
* detections are visited by descending score within (image, class); each looks at the
  non-group-of box of highest IoU (no +1 pixel, first on ties) and is a true positive if
  IoU >= 0.5 and that box is still free, else a false positive (§6);
* false positives whose area lies >= 50 % inside a group-of box (IoA, the first best one)
  are removed; each group-of box hit by one or more of them counts once, as a true
  positive with the highest of their scores; group-of boxes count as one ground-truth
  object each, hit or not (§7);
* AP per class is the VOC all-points area with precision made monotone, NaN for a class
  without ground truth; mAP is the mean over the other classes (§8, §9).

Examples
--------
>>> from deteval.io.openimages import OIDBoxes, OIDDetections
>>> import numpy as np
>>> gt = OIDBoxes(np.array(["a", "a"], dtype=object), np.array(["/m/cat", "/m/dog"],
...               dtype=object), np.array([[0, 0, .5, .5], [.5, .5, 1, 1]]),
...               np.array([False, True]))
>>> dt = OIDDetections(np.array(["a", "a", "a"], dtype=object),
...                    np.array(["/m/cat", "/m/dog", "/m/dog"], dtype=object),
...                    np.array([.9, .8, .7]),
...                    np.array([[0, 0, .5, .45], [.6, .6, .9, .9], [.5, .5, .7, .7]]))
>>> result = evaluate_openimages(gt, dt)
>>> result.classes, result.ap.tolist(), result.mean_ap
(('/m/cat', '/m/dog'), [1.0, 1.0], 1.0)
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._arrays import ReadOnlyArrays, frozen
from .._sorting import descending_rank
from ..errors import FormatError
from ..io.openimages import (
    OIDBoxes,
    OIDDetections,
    OIDImageLabels,
    read_oid_boxes,
    read_oid_detections,
    read_oid_hierarchy,
    read_oid_image_labels,
)
from ..matching import FP, IGNORED, NOT_EVALUATED, TP, MatchTable
from ._openimages_match import match_openimages, tf_average_precision

__all__ = ["OpenImagesResult", "evaluate_openimages", "expand_hierarchy"]

IOU_THRESHOLD = 0.5     # matching_iou_threshold, also the group-of IoA threshold (§6, §7)
GROUP_OF_WEIGHT = 1.0   # OpenImagesDetectionChallengeEvaluator
MAX_PER_CLASS = 10000   # nms_max_output_boxes, per image and class (§3)
SCORE_FLOOR = -10.0     # the NMS score filter keeps scores > -10 (§3)


@dataclass(frozen=True, eq=False)
class OpenImagesResult(ReadOnlyArrays):
    """Result of :func:`evaluate_openimages`.

    Attributes
    ----------
    classes : tuple of str, length K
        The label map (given, or every label seen, sorted).
    ap : ndarray of float64, shape (K,)
        AP@0.5 per class; NaN for a class without ground truth.
    mean_ap : float
        Mean of the finite ``ap`` (NaN if there is none).
    num_gt : ndarray of float64, shape (K,)
        Ground-truth objects per class after expansion (a group-of box counts once).
    num_tp, num_fp : ndarray of int64, shape (K,)
        True and false positives entering each class's PR curve (a hit group-of box is one
        true positive).
    gt : OIDBoxes
        The expanded ground truth the match table indexes.
    detections : OIDDetections
        The detections the match table indexes (expanded if ``expand_detections``).
    dt_status : ndarray of int8, shape (n_dt,)
        ``TP`` 1, ``FP`` 0, ``IGNORED`` 2 (inside a group-of box), ``NOT_EVALUATED`` -1
        (class not verified in the image, unknown image, no area, score <= -10, or beyond
        10000 per image and class). The highest-scoring detection in a group-of box is
        marked ``TP``: it carries that box's one true positive.
    matches : MatchTable
        One threshold (0.5), one area range. Group-of boxes are crowd regions marked
        ignored there; detections inside them are matched to them.
    notes : tuple of str
    image_ids : ndarray of str (object), shape (I,)
        The images evaluated (with a box or an image-level label), sorted: the unit of
        the bootstrap and of image slices.
    gt_source_row, dt_source_row : ndarray of int64
        Row of each row of ``gt`` (``detections``) in the input before the hierarchy
        expansion (``arange`` without expansion).
    verified : ndarray of int64, shape (V,), optional
        The verified (image, class) pairs, sorted, as ``image position * K + class``: the
        image-level labels (present or absent) and the classes with a box in each image.
        Only detections of these pairs are evaluated.
    expand_detections : bool
        Whether the detections were expanded up the hierarchy.
    """

    classes: tuple[str, ...]
    ap: np.ndarray
    mean_ap: float
    num_gt: np.ndarray
    num_tp: np.ndarray
    num_fp: np.ndarray
    gt: OIDBoxes
    detections: OIDDetections
    dt_status: np.ndarray
    matches: MatchTable
    notes: tuple[str, ...] = ()
    image_ids: np.ndarray | None = None
    gt_source_row: np.ndarray | None = None
    dt_source_row: np.ndarray | None = None
    verified: np.ndarray | None = None
    expand_detections: bool = False

    def summary(self) -> str:
        """Text summary: mAP and the number of classes evaluated."""
        n = int(np.sum(~np.isnan(self.ap)))
        lines = [f"Open Images challenge detection AP@0.5IOU: mAP = {self.mean_ap:.6f} "
                 f"over {n} of {len(self.classes)} classes with ground truth"]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def per_class(self) -> list[dict[str, Any]]:
        """One dict per class: name, AP (None if NaN), num_gt, num_tp, num_fp."""
        return [{"class": name, "ap": None if np.isnan(a) else float(a), "num_gt": float(g),
                 "num_tp": int(t), "num_fp": int(f)}
                for name, a, g, t, f in zip(self.classes, self.ap.tolist(),
                                            self.num_gt.tolist(), self.num_tp, self.num_fp)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict, with the TensorFlow tool's metric names."""
        metrics = {"OpenImagesDetectionChallenge_Precision/mAP@0.5IOU":
                   None if np.isnan(self.mean_ap) else self.mean_ap}
        for name, a in zip(self.classes, self.ap.tolist()):
            metrics[f"OpenImagesDetectionChallenge_PerformanceByCategory/AP@0.5IOU/{name}"] = (
                None if np.isnan(a) else a)
        return {"protocol": "openimages-challenge", "mean_ap": metrics[
            "OpenImagesDetectionChallenge_Precision/mAP@0.5IOU"], "metrics": metrics,
            "per_class": self.per_class(), "notes": list(self.notes)}

    def to_frame(self, *, iou_threshold: float | str | None = None, outcomes: bool = True):
        """One row per detection and per box, as a pandas DataFrame (needs
        ``deteval[frame]``); see :func:`deteval.tidy.tidy_columns` and docs/tidy-export.md."""
        from ..tidy import to_frame

        return to_frame(self, iou_threshold=iou_threshold, outcomes=outcomes)

    def to_arrow(self, *, iou_threshold: float | str | None = None, outcomes: bool = True):
        """The rows of :meth:`to_frame` as a pyarrow Table (needs ``deteval[frame]``)."""
        from ..tidy import to_arrow

        return to_arrow(self, iou_threshold=iou_threshold, outcomes=outcomes)


# -------------------------------------------------------------------------- hierarchy

def _plain_hierarchy(node: dict, skip_root: bool) -> tuple[dict, dict, list]:
    """(ancestors, descendants, nodes) lists of a subtree, duplicates kept (§5.1)."""
    ancestors: dict[str, list] = {}
    descendants: dict[str, list] = {}
    below: list[str] = []
    for sub in node.get("Subcategory", []):
        sub_up, sub_down, sub_below = _plain_hierarchy(sub, False)
        for key, values in sub_down.items():
            descendants.setdefault(key, []).extend(values)
        for key, values in sub_up.items():
            ancestors.setdefault(key, []).extend(values)
        below.extend(sub_below)
    if not skip_root:
        name = node["LabelName"]
        descendants[name] = below
        below = [name, *below]
        for values in ancestors.values():
            values.append(name)
        ancestors[name] = []
    return ancestors, descendants, below


def _expand(labels: np.ndarray, lists: dict[str, list], *, what: str, source: str | None):
    """Row index and new label of each expanded row: a row, then its listed relatives."""
    names, inverse = np.unique(labels.astype(str), return_inverse=True)
    inverse = inverse.ravel()
    blocks = []
    for name in names.tolist():
        if name not in lists:
            raise FormatError(f"label {name!r} is not in the class hierarchy (below its "
                              f"root); every {what} label must be", source=source)
        blocks.append([name, *lists[name]])
    lengths = np.array([len(b) for b in blocks], dtype=np.int64)
    flat = np.array([x for b in blocks for x in b] or [""], dtype=object)
    offsets = np.r_[0, np.cumsum(lengths)[:-1]]
    per_row = lengths[inverse] if len(labels) else np.zeros(0, np.int64)
    rows = np.repeat(np.arange(len(labels)), per_row)
    starts = np.repeat(np.cumsum(per_row) - per_row, per_row)
    position = np.arange(len(rows)) - starts
    new = flat[offsets[inverse[rows]] + position] if len(rows) else flat[:0]
    return rows, new


def expand_hierarchy(boxes: OIDBoxes, labels: OIDImageLabels, hierarchy: dict | str | os.PathLike,
                     ) -> tuple[OIDBoxes, OIDImageLabels]:
    """Expand boxes and image-level labels as ``oid_hierarchical_labels_expansion.py`` does.

    Each box is followed by one copy per ancestor class; a positive label (confidence 1) by
    one per ancestor, a negative one by one per descendant (§5). A class reached by two paths
    is listed twice, as in the tool.

    Examples
    --------
    >>> tree = {"LabelName": "root", "Subcategory": [{"LabelName": "animal",
    ...         "Subcategory": [{"LabelName": "dog"}]}]}
    >>> b = OIDBoxes(np.array(["i"], dtype=object), np.array(["dog"], dtype=object),
    ...              np.array([[0., 0, 1, 1]]), np.array([False]))
    >>> lab = OIDImageLabels(np.array(["i"], dtype=object), np.array(["animal"], dtype=object),
    ...                      np.array([0]))
    >>> b2, lab2 = expand_hierarchy(b, lab, tree)
    >>> b2.label.tolist(), lab2.label.tolist()
    (['dog', 'animal'], ['animal', 'dog'])
    """
    out_boxes, out_labels, _ = _expand_with_rows(boxes, labels, hierarchy)
    return out_boxes, out_labels


def _expand_with_rows(boxes: OIDBoxes, labels: OIDImageLabels, hierarchy):
    """:func:`expand_hierarchy`, and the input row of each expanded box."""
    tree = read_oid_hierarchy(hierarchy)
    up, down, _ = _plain_hierarchy(tree, True)
    box_rows, new = _expand(boxes.label, up, what="box", source=boxes.source)
    out_boxes = OIDBoxes(frozen(boxes.image_id[box_rows]), frozen(new),
                         frozen(boxes.xyxy[box_rows]), frozen(boxes.group_of[box_rows]),
                         boxes.source)
    positive = labels.confidence == 1
    # one expansion per confidence value, merged back in file order
    r1, n1 = _expand(labels.label[positive], up, what="image-level", source=labels.source)
    r0, n0 = _expand(labels.label[~positive], down, what="image-level", source=labels.source)
    rows = np.r_[np.flatnonzero(positive)[r1], np.flatnonzero(~positive)[r0]].astype(np.int64)
    order = np.argsort(rows, kind="stable")
    names = np.r_[n1, n0][order] if len(rows) else np.zeros(0, dtype=object)
    rows = rows[order]
    out_labels = OIDImageLabels(frozen(labels.image_id[rows]), frozen(names.astype(object)),
                                frozen(labels.confidence[rows]), labels.source)
    return out_boxes, out_labels, box_rows


def _expand_detections(dt: OIDDetections, hierarchy) -> tuple[OIDDetections, np.ndarray]:
    up, _, _ = _plain_hierarchy(read_oid_hierarchy(hierarchy), True)
    rows, new = _expand(dt.label, up, what="detection", source=dt.source)
    return OIDDetections(frozen(dt.image_id[rows]), frozen(new), frozen(dt.score[rows]),
                         frozen(dt.xyxy[rows]), dt.source), rows


# -------------------------------------------------------------------------- inputs

def _load(value, reader, kind, what):
    if value is None:
        return None
    if isinstance(value, kind):
        return value
    if isinstance(value, (str, os.PathLike)):
        return reader(value)
    raise TypeError(f"{what} must be a path or {kind.__name__}; got {type(value).__name__}")


def class_index(labels: np.ndarray, classes: tuple[str, ...], what: str, source):
    lookup = {name: i for i, name in enumerate(classes)}
    names, inverse = np.unique(labels.astype(str), return_inverse=True)
    missing = [n for n in names.tolist() if n not in lookup]
    if missing:
        raise FormatError(f"{what} label(s) not in the class list: {', '.join(missing[:5])}",
                          source=source)
    codes = np.array([lookup[n] for n in names.tolist()], dtype=np.int64)
    return codes[inverse.ravel()] if len(labels) else np.zeros(0, np.int64)


def image_codes(ids: np.ndarray, images: np.ndarray) -> np.ndarray:
    """Index of each id in the sorted ``images``; -1 when absent."""
    if len(images) == 0 or len(ids) == 0:
        return np.full(len(ids), -1, dtype=np.int64)
    ids = ids.astype(str)
    pos = np.minimum(np.searchsorted(images, ids), len(images) - 1)
    return np.where(images[pos] == ids, pos, -1).astype(np.int64)


def evaluate_openimages(gt_boxes: OIDBoxes | str | os.PathLike,
                        detections: OIDDetections | str | os.PathLike, *,
                        image_labels: OIDImageLabels | str | os.PathLike | None = None,
                        hierarchy: dict | str | os.PathLike | None = None,
                        classes: tuple[str, ...] | list[str] | None = None,
                        expand_detections: bool = False) -> OpenImagesResult:
    """Open Images challenge detection AP@0.5 per class and mAP (TensorFlow OD API numbers).

    Parameters
    ----------
    gt_boxes : OIDBoxes or path
        Ground-truth boxes (challenge box CSV).
    detections : OIDDetections or path
        Detections (challenge prediction CSV).
    image_labels : OIDImageLabels or path, optional
        Verified image-level labels (confidence 1 or 0). Without them only classes with a box
        in an image are evaluated there.
    hierarchy : dict or path, optional
        Class hierarchy JSON: boxes and labels are expanded (§5), as the challenge's expansion
        tool does before evaluating.
    classes : sequence of str, optional
        The label map. Default: every label of the boxes, labels and detections, sorted. With
        a label map, a label outside it is an error (the TF tool fails on it).
    expand_detections : bool
        Also give each detection to every ancestor class (needs ``hierarchy``). Not part of
        the official protocol, where submissions must list ancestors themselves.

    Returns
    -------
    OpenImagesResult
    """
    gt = _load(gt_boxes, read_oid_boxes, OIDBoxes, "gt_boxes")
    dt = _load(detections, read_oid_detections, OIDDetections, "detections")
    labels = _load(image_labels, read_oid_image_labels, OIDImageLabels, "image_labels")
    if labels is None:
        empty = np.zeros(0, dtype=object)
        labels = OIDImageLabels(empty, empty, np.zeros(0, np.int64))
    if expand_detections and hierarchy is None:
        raise ValueError("expand_detections=True needs a hierarchy")
    notes = []
    gt_rows, dt_rows = np.arange(len(gt.label)), np.arange(len(dt.label))
    if hierarchy is not None:
        gt, labels, gt_rows = _expand_with_rows(gt, labels, hierarchy)
        if expand_detections:
            dt, dt_rows = _expand_detections(dt, hierarchy)
    if classes is None:
        classes = tuple(np.unique(np.r_[gt.label, labels.label, dt.label].astype(str)).tolist())
    else:
        classes = tuple(str(c) for c in classes)
        if len(set(classes)) != len(classes):
            raise ValueError("classes must be distinct label names")
    n_class = len(classes)
    gt_cls = class_index(gt.label, classes, "box", gt.source)
    lab_cls = class_index(labels.label, classes, "image-level", labels.source)
    dt_cls = class_index(dt.label, classes, "detection", dt.source)

    images = np.unique(np.r_[gt.image_id, labels.image_id].astype(str))
    gt_img = image_codes(gt.image_id, images)
    dt_img = image_codes(dt.image_id, images)
    gt_key = gt_img * n_class + gt_cls
    verified = np.unique(np.r_[image_codes(labels.image_id, images) * n_class + lab_cls, gt_key])
    dt_key = np.where(dt_img >= 0, dt_img * n_class + dt_cls, -1)
    allowed = (dt_img >= 0) & np.isin(dt_key, verified)
    xyxy = dt.xyxy
    valid = (xyxy[:, 1] < xyxy[:, 3]) & (xyxy[:, 0] < xyxy[:, 2])
    scored = dt.score > SCORE_FLOOR
    evaluated = allowed & valid & scored
    dt_key = np.where(evaluated, dt_key, -1)
    for count, text in ((int(np.sum(dt_img < 0)), "on images without ground truth or labels"),
                        (int(np.sum((dt_img >= 0) & ~allowed)),
                         "of classes not verified in their image"),
                        (int(np.sum(allowed & ~valid)), "without area"),
                        (int(np.sum(allowed & valid & ~scored)), "with score <= -10")):
        if count:
            notes.append(f"{count} detection(s) {text} were not evaluated")

    yx = [1, 0, 3, 2]  # (xmin, ymin, xmax, ymax) -> (ymin, xmin, ymax, xmax)
    match = match_openimages(dt_key, dt.score, xyxy[:, yx], gt_key, gt.xyxy[:, yx], gt.group_of,
                             threshold=IOU_THRESHOLD, max_per_group=MAX_PER_CLASS)
    num_gt = (np.bincount(gt_cls[~gt.group_of], minlength=n_class).astype(np.float64)
              + GROUP_OF_WEIGHT * np.bincount(gt_cls[gt.group_of], minlength=n_class))
    ap, num_tp, num_fp, group_rep = _accumulate(match, dt_key, dt.score, gt_key, gt.group_of,
                                                n_class, num_gt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no class with ground truth: NaN
        mean_ap = float(np.nanmean(ap)) if n_class else float("nan")
    if n_class and np.isnan(ap).all():
        notes.append("no class has ground truth: mAP is NaN")

    status = np.full(len(dt_key), FP, dtype=np.int8)
    status[match.dt_tp] = TP
    status[match.dt_in_group] = IGNORED
    status[group_rep] = TP
    status[~match.dt_kept] = NOT_EVALUATED
    table = _match_table(match, dt.score, gt.group_of)
    return OpenImagesResult(classes, frozen(ap), mean_ap, frozen(num_gt), frozen(num_tp),
                            frozen(num_fp), gt, dt, frozen(status), table, tuple(notes),
                            image_ids=frozen(images), gt_source_row=frozen(gt_rows.astype(
                                np.int64)), dt_source_row=frozen(dt_rows.astype(np.int64)),
                            verified=frozen(verified.astype(np.int64)),
                            expand_detections=bool(expand_detections))


def _accumulate(match, dt_key, dt_score, gt_key, gt_group, n_class, num_gt):
    """Per-class AP from the entries of §8, concatenated in the reference's order."""
    rows = np.flatnonzero(match.dt_kept & ~match.dt_in_group)
    hit = np.flatnonzero(gt_group & (match.group_score > 0))
    key = np.r_[dt_key[rows], gt_key[hit]]
    position = np.r_[match.dt_rank[rows], MAX_PER_CLASS + np.arange(len(hit))]
    scores = np.r_[dt_score[rows], match.group_score[hit]]
    labels = np.r_[match.dt_tp[rows].astype(np.float64), np.full(len(hit), GROUP_OF_WEIGHT)]
    cls, img = key % max(n_class, 1), key // max(n_class, 1)
    order = np.lexsort((position, img, cls))
    cls, scores, labels = cls[order], scores[order], labels[order]
    bounds = np.searchsorted(cls, np.arange(n_class + 1))
    ap = np.full(n_class, np.nan)
    num_tp = np.zeros(n_class, dtype=np.int64)
    num_fp = np.zeros(n_class, dtype=np.int64)
    for k in np.flatnonzero(num_gt > 0).tolist():
        lo, hi = bounds[k], bounds[k + 1]
        ap[k] = tf_average_precision(scores[lo:hi], labels[lo:hi], num_gt[k])
    np.add.at(num_tp, cls, (labels > 0).astype(np.int64))
    np.add.at(num_fp, cls, (labels <= 0).astype(np.int64))
    # the highest-scoring detection inside each hit group-of box carries its true positive
    absorbed = np.flatnonzero(match.dt_in_group)
    target = match.dt_match_gt[absorbed]
    best = absorbed[np.lexsort((match.dt_rank[absorbed], target))]
    first = np.r_[True, match.dt_match_gt[best][1:] != match.dt_match_gt[best][:-1]]
    group_rep = best[first] if len(best) else best
    group_rep = group_rep[match.group_score[match.dt_match_gt[group_rep]] > 0]
    return ap, num_tp, num_fp, group_rep


def _match_table(match, dt_score, gt_group) -> MatchTable:
    n_dt, n_gt = len(match.dt_rank), len(gt_group)
    kept = match.dt_kept
    score_rank = np.full(n_dt, -1, dtype=np.int64)
    score_rank[kept] = descending_rank(dt_score[kept])[0]
    matched = np.flatnonzero(match.dt_match_gt >= 0)
    zeros = np.zeros(len(matched), dtype=np.int64)
    return MatchTable(
        iou_thresholds=np.array([IOU_THRESHOLD]), area_ranges=np.array([[0.0, np.inf]]),
        dt_rank=match.dt_rank, dt_kept=kept, dt_score_rank=score_rank,
        dt_out_of_range=np.zeros((1, n_dt), dtype=bool), gt_evaluated=np.ones(n_gt, bool),
        gt_crowd=gt_group.copy(), gt_ignore=gt_group[None, :].copy(), match_area=zeros,
        match_threshold=zeros.copy(), match_dt=matched, match_gt=match.dt_match_gt[matched],
        dt_best_gt=match.dt_best_gt, dt_best_iou=match.dt_best_iou)
