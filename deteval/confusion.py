"""The detection confusion matrix, with an "Unknown" row and column, and operating points.

Both are computed from the shared greedy matcher (:func:`~deteval.matching.match_detections`,
COCO rule, one IoU threshold, one area range ``[0, inf]``, every detection kept) with the
evaluation's similarity (``iou_type``: box IoU by default, mask or boundary IoU, OKS,
polygon or rotated-box IoU, computed by the COCO protocol's own code; see
:func:`deteval.match_outcomes`), so the numbers agree with the match tables behind AP.

Matching, in two passes
-----------------------
1. **Within the class** (one group per image and category): the COCO greedy rule. A
   detection matched to an object of its own class is a correct detection (diagonal).
2. **Across classes** (one group per image): the detections left unmatched by pass 1 and
   the regular objects left unmatched by pass 1 are matched again, greedily by score, ignoring
   classes. A pair found here is a class confusion (off the diagonal). A same-class pair
   cannot occur here: pass 1 would have matched it.

Each detection is counted at most once and each object at most once.

The matrix
----------
Shape ``(K + 1, K + 1)``; rows are ground-truth classes, columns predicted classes, and the
last row and column are "Unknown":

* ``counts[g, p]`` (``g, p < K``): objects of class ``g`` matched by a detection of class
  ``p`` (``g == p``: correct; otherwise: confused);
* ``counts[K, p]``: detections of class ``p`` that matched no object: background false
  positives, **duplicates included** (a second detection on an already matched object);
* ``counts[g, K]``: objects of class ``g`` that no detection matched: missed;
* ``counts[K, K]`` is always 0.

Crowd regions and ignored objects (VOC *difficult*, ``GroundTruth.ignore``)
-------------------------------------------------------------------------
They take part in pass 1 only, as in the COCO protocol: a detection of their class that
matches one (a crowd by IoA, any number of detections; an ignored object by IoU, once) is
*ignored*: it is in no cell and is counted in ``n_ignored_detections``. They are never
missed and never appear in a row, and they never absorb detections of another class.
Detections below ``score_threshold`` and detections whose category is not a ground-truth
category are in no cell either (``n_dropped_detections`` counts the latter).

Identities guaranteed
---------------------
With ``n_objects`` the regular (non-crowd, non-ignored) objects and ``n_counted`` the
detections with ``score >= score_threshold`` of a known category that were not ignored:

* row ``g < K`` sums to the number of regular objects of class ``g``;
* column ``p < K`` sums to the counted detections of class ``p`` (detections at or above
  the threshold minus ``n_ignored_detections[p]``);
* ``counts.sum() == n_objects + counts[K].sum() == n_counted + counts[:, K].sum()``: every
  object and every counted detection in exactly one cell (a matched pair shares its cell).

Per-class counts at this operating point: ``TP = counts[c, c]``; ``FP = column c total -
TP`` (wrong class + background + duplicates); ``FN = row c total - TP`` (confused + missed).
TP and FP equal the within-class matcher's TP and FP for the detections above the threshold.

Examples
--------
>>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "cat"},
...       {"id": 2, "name": "dog"}], "annotations": [
...       {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100},
...       {"id": 2, "image_id": 1, "category_id": 2, "bbox": [50, 50, 10, 10], "area": 100}]}
>>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
...       {"image_id": 1, "category_id": 1, "bbox": [50, 50, 10, 10], "score": 0.8}]
>>> cm = detection_confusion_matrix(gt, dt)
>>> cm.labels
('cat', 'dog', 'Unknown')
>>> cm.counts.tolist()    # the dog was detected as a cat
[[1, 0, 0], [1, 0, 0], [0, 0, 0]]
>>> [(row["name"], row["tp"], row["fp"], row["fn"]) for row in cm.per_class(zero_division=0)]
[('cat', 1, 1, 0), ('dog', 0, 0, 1)]
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._arrays import ReadOnlyArrays, frozen
from ._class_matching import Matches, match_two_passes
from ._class_matching import take as _take
from ._validation import finite_matrix, number, real_matrix, zero_division_value
from .classification import top_k_accuracy
from .data import Dataset, Detections
from .errors import warn_undefined
from .matching import match_detections

__all__ = [
    "DetectionConfusion",
    "DetectionTopK",
    "OperatingPoints",
    "detection_confusion_matrix",
    "detection_top_k_accuracy",
    "operating_points",
]

UNKNOWN = "Unknown"
_NORMALIZE = (None, "true", "pred")


# --------------------------------------------------------------------------------------
# Inputs and matching (the passes are in deteval._class_matching)
# --------------------------------------------------------------------------------------


def _match(gt: Any, dt: Any, iou_threshold: float, score_threshold: float,
           geometry: dict[str, Any]) -> tuple[Dataset, Detections, str, Matches]:
    """Inputs resolved, and both passes with the similarity of ``geometry`` (the
    ``iou_type``, ``keypoint_sigmas`` and ``dilation_ratio`` keywords)."""
    from .outcomes import resolve_similarity

    dataset, detections, similarity = resolve_similarity(gt, dt, floor=iou_threshold,
                                                         **geometry)
    return dataset, detections, similarity.iou_type, match_two_passes(
        dataset, detections, similarity, iou_threshold, score_threshold)


# --------------------------------------------------------------------------------------
# Ratios
# --------------------------------------------------------------------------------------


def _ratios(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, names: tuple[str, ...],
            beta: float, zero_division: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall and F-beta per entry; 0/0 set by ``zero_division``."""
    value, warn = zero_division_value(zero_division)
    beta2 = beta * beta
    out = []
    for metric, numerator, denominator in (
            ("Precision", tp, tp + fp), ("Recall", tp, tp + fn),
            ("F-score", (1 + beta2) * tp, (1 + beta2) * tp + beta2 * fn + fp)):
        numerator = np.asarray(numerator, dtype=np.float64)
        denominator = np.asarray(denominator, dtype=np.float64)
        undefined = denominator == 0
        values = numerator / np.where(undefined, 1.0, denominator)
        values[undefined] = value
        if warn and undefined.any():
            shown = ", ".join(repr(names[i]) for i in np.flatnonzero(undefined)[:5])
            warn_undefined(f"{metric} is ill-defined and set to 0.0 for class(es) {shown}; "
                           "use zero_division to choose the value", outside=__name__)
        out.append(values)
    return out[0], out[1], out[2]


# --------------------------------------------------------------------------------------
# The confusion matrix
# --------------------------------------------------------------------------------------


def _normalized(counts: np.ndarray, normalize: str | None) -> np.ndarray:
    if normalize not in _NORMALIZE:
        raise ValueError(f"normalize must be None, 'true' or 'pred'; got {normalize!r}")
    if normalize is None:
        return counts.astype(np.float64)
    axis = 1 if normalize == "true" else 0
    totals = counts.sum(axis=axis, keepdims=True).astype(np.float64)
    return np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0), 0.0)


@dataclass(frozen=True, eq=False)
class DetectionConfusion(ReadOnlyArrays):
    """Result of :func:`detection_confusion_matrix` (see the module documentation).

    Attributes
    ----------
    counts : ndarray of int, shape (K + 1, K + 1)
        Raw counts; rows ground-truth class (last: Unknown = background false positive),
        columns predicted class (last: Unknown = missed object).
    matrix : ndarray of float, shape (K + 1, K + 1)
        ``counts`` normalised as asked: ``None`` the counts as floats; ``"true"`` each row
        divided by its total (row ``g < K``: the share of class-``g`` objects found as each
        class or missed, the diagonal being the recall; row K: how the background false
        positives spread over the predicted classes); ``"pred"`` each column divided by its
        total (column ``p < K``: the share of class-``p`` detections on each true class or
        on background, the diagonal being the precision; column K: how the missed objects
        spread over the classes). An empty row or column gives zeros.
    normalize : {None, "true", "pred"}
    labels : tuple of str
        The K category names and ``"Unknown"``.
    category_ids : ndarray, shape (K,)
    iou_threshold, score_threshold : float
    n_ignored_detections : ndarray of int, shape (K,)
        Per predicted class: detections (above the threshold) that matched a crowd region or
        an ignored object of their class and are in no cell.
    n_dropped_detections : int
        Detections whose category is not a ground-truth category (in no cell).
    detection_gt : ndarray of int, shape (n_dt,)
        Row of ``gt.gt`` each detection matched (either pass), -1 if none or ignored.
    detection_row : ndarray of int, shape (n_dt,)
        The matrix row each detection is counted in (its object's class, or K for a
        background false positive); -1 where it is in no cell (below the score threshold,
        unknown category, ignored). Its column is its own category.
    gt_column : ndarray of int, shape (n_gt,)
        The matrix column each object is counted in (the class of its detection, or K for
        missed); -1 for crowd regions and ignored objects. Its row is its own category.
    iou_type : str
        The similarity matched by.
    """

    counts: np.ndarray
    matrix: np.ndarray
    normalize: str | None
    labels: tuple[str, ...]
    category_ids: np.ndarray
    iou_threshold: float
    score_threshold: float
    n_ignored_detections: np.ndarray
    n_dropped_detections: int
    detection_gt: np.ndarray
    detection_row: np.ndarray
    gt_column: np.ndarray
    iou_type: str = "bbox"

    def __post_init__(self) -> None:
        for name in ("counts", "matrix", "category_ids", "n_ignored_detections",
                     "detection_gt", "detection_row", "gt_column"):
            getattr(self, name).setflags(write=False)

    @property
    def n_classes(self) -> int:
        """K, the number of categories (the matrix has K + 1 rows)."""
        return len(self.category_ids)

    def normalized(self, normalize: str | None) -> np.ndarray:
        """The counts normalised another way (``None``, ``"true"`` or ``"pred"``)."""
        return _normalized(self.counts, normalize)

    def _tp_fp_fn(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = self.n_classes
        tp = np.diagonal(self.counts)[:k].astype(np.int64)
        fp = self.counts[:, :k].sum(axis=0) - tp
        fn = self.counts[:k, :].sum(axis=1) - tp
        return tp, fp, fn

    def per_class(self, *, beta: float = 1.0,
                  zero_division: Any = "warn") -> list[dict[str, Any]]:
        """One dict per category: ``category_id``, ``name``, ``tp``, ``fp``, ``fn``,
        ``fp_confused`` (detected on an object of another class), ``fp_background``
        (no object, duplicates included), ``fn_confused`` (found as another class),
        ``fn_missed``, ``n_gt``, ``n_detections`` (counted), ``n_ignored_detections``,
        ``precision``, ``recall`` and ``f1`` (F-beta with ``beta``; the key stays ``f1``
        only when ``beta == 1``, else ``fbeta``). Undefined ratios (0/0) follow
        ``zero_division`` as in :mod:`deteval.classification`."""
        k = self.n_classes
        tp, fp, fn = self._tp_fp_fn()
        names = self.labels[:k]
        precision, recall, fscore = _ratios(tp, fp, fn, names, float(beta), zero_division)
        f_key = "f1" if beta == 1 else "fbeta"
        background = self.counts[k, :k]
        missed = self.counts[:k, k]
        rows = []
        for c in range(k):
            rows.append({
                "category_id": int(self.category_ids[c]), "name": names[c],
                "tp": int(tp[c]), "fp": int(fp[c]), "fn": int(fn[c]),
                "fp_confused": int(fp[c] - background[c]), "fp_background": int(background[c]),
                "fn_confused": int(fn[c] - missed[c]), "fn_missed": int(missed[c]),
                "n_gt": int(tp[c] + fn[c]), "n_detections": int(tp[c] + fp[c]),
                "n_ignored_detections": int(self.n_ignored_detections[c]),
                "precision": float(precision[c]), "recall": float(recall[c]),
                f_key: float(fscore[c]),
            })
        return rows

    def overall(self, *, beta: float = 1.0, zero_division: Any = "warn") -> dict[str, Any]:
        """Counts pooled over the classes (micro average) and their ratios."""
        tp, fp, fn = (int(v.sum()) for v in self._tp_fp_fn())
        p, r, f = _ratios(np.array([tp]), np.array([fp]), np.array([fn]), ("overall",),
                          float(beta), zero_division)
        return {"tp": tp, "fp": fp, "fn": fn, "precision": float(p[0]),
                "recall": float(r[0]), "f1" if beta == 1 else "fbeta": float(f[0])}

    def to_dict(self, *, zero_division: Any = "warn") -> dict[str, Any]:
        """JSON-ready: labels, raw counts, the normalised matrix, per-class and overall."""
        return {
            "labels": list(self.labels),
            "category_ids": self.category_ids.tolist(),
            "iou_type": self.iou_type,
            "iou_threshold": self.iou_threshold,
            "score_threshold": self.score_threshold,
            "normalize": self.normalize,
            "counts": self.counts.tolist(),
            "matrix": self.matrix.tolist(),
            "per_class": self.per_class(zero_division=zero_division),
            "overall": self.overall(zero_division=zero_division),
            "n_ignored_detections": int(self.n_ignored_detections.sum()),
            "n_dropped_detections": self.n_dropped_detections,
        }

    def format_table(self, *, normalize: Any = "same", zero_division: Any = 0) -> str:
        """The matrix (rows: true class, columns: predicted class) and the per-class table.

        ``normalize="same"`` shows ``matrix``; otherwise ``None``, ``"true"`` or ``"pred"``.
        """
        norm = self.normalize if normalize == "same" else normalize
        values = _normalized(self.counts, norm)
        cells = ([[str(int(v)) for v in row] for row in self.counts] if norm is None
                 else [[f"{v:.3f}" for v in row] for row in values])
        corner = "true \\ pred"
        first = max(len(corner), *(len(label) for label in self.labels))
        width = max(6, *(len(label) for label in self.labels),
                    *(len(c) for row in cells for c in row))
        lines = [f"{corner:<{first}}  " + "  ".join(
            f"{label:>{width}}" for label in self.labels)]
        for label, row in zip(self.labels, cells):
            lines.append(f"{label:<{first}}  " + "  ".join(f"{c:>{width}}" for c in row))
        lines.append("")
        lines.append(f"{'class':<{first}}  {'TP':>6}  {'FP':>6}  {'FN':>6}  "
                     f"{'prec':>6}  {'recall':>6}  {'F1':>6}")
        for row in self.per_class(zero_division=zero_division):
            lines.append(f"{row['name']:<{first}}  {row['tp']:>6}  {row['fp']:>6}  "
                         f"{row['fn']:>6}  {row['precision']:>6.3f}  {row['recall']:>6.3f}  "
                         f"{row['f1']:>6.3f}")
        return "\n".join(lines)


def detection_confusion_matrix(gt: Any, dt: Any = None, *, iou_threshold: float = 0.5,
                               score_threshold: float = 0.0, normalize: str | None = None,
                               iou_type: str | None = None, keypoint_sigmas: Any = None,
                               dilation_ratio: float | None = None) -> DetectionConfusion:
    """The detection confusion matrix at one IoU threshold and one score threshold.

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
        Ground truth, or a COCO instances file (or its dict).
    dt : Detections, str, PathLike, list, dict or ndarray
        Detections, or anything :func:`~deteval.io.coco.read_coco_results` reads.
    iou_threshold : float, default 0.5
        In ``(0, 1]``; a pair matches at IoU ``>= iou_threshold`` (COCO rule).
    score_threshold : float, default 0
        ``>= 0``; detections with a lower score are dropped.
    normalize : {None, "true", "pred"}
        How ``matrix`` is normalised (``counts`` always holds the raw counts).
    iou_type : {"bbox", "segm", "boundary", "keypoints", "polygon", "rotated"}, optional
        The similarity matched by, as :func:`deteval.match_outcomes` (default "bbox", or
        that of a result given as ``gt``, as there: a CrowdPose result's is its own OKS);
        ``keypoint_sigmas`` and ``dilation_ratio`` as there.

    Returns
    -------
    DetectionConfusion

    Raises
    ------
    ValueError, TypeError
        Invalid thresholds or ``normalize``; detections that do not index the dataset.
    FormatError
        Unreadable input files.
    """
    if normalize not in _NORMALIZE:
        raise ValueError(f"normalize must be None, 'true' or 'pred'; got {normalize!r}")
    iou_threshold = number("iou_threshold", iou_threshold, low=0.0, high=1.0, low_open=True)
    score_threshold = number("score_threshold", score_threshold, low=0.0)
    dataset, detections, iou_type, m = _match(
        gt, dt, iou_threshold, score_threshold, dict(iou_type=iou_type,
                                                     keypoint_sigmas=keypoint_sigmas,
                                                     dilation_ratio=dilation_ratio))
    gt_objects = dataset.gt
    n_k = len(dataset.categories)

    detection_row = np.full(len(detections), -1, dtype=np.int64)
    counted = np.flatnonzero(m.dt_counted)
    matched = m.dt_gt[counted]
    detection_row[counted] = np.where(
        matched >= 0, _take(gt_objects.category_index, matched), n_k)
    gt_column = np.full(len(gt_objects), -1, dtype=np.int64)
    regular = np.flatnonzero(m.gt_regular)
    by = m.gt_dt[regular]
    gt_column[regular] = np.where(by >= 0, _take(detections.category_index, by), n_k)

    size = n_k + 1
    # Matched pairs and background detections, seen from the detections ...
    cells = detection_row[counted] * size + detections.category_index[counted]
    # ... and missed objects, seen from the objects.
    missed = regular[by < 0]
    cells = np.r_[cells, gt_objects.category_index[missed] * size + n_k]
    counts = np.bincount(cells, minlength=size * size).reshape(size, size).astype(np.int64)

    selected = (detections.category_index >= 0) & (detections.scores >= score_threshold)
    n_ignored = np.bincount(detections.category_index[m.dt_ignored & selected],
                            minlength=n_k).astype(np.int64)
    n_dropped = int(np.count_nonzero(detections.category_index < 0))
    return DetectionConfusion(
        counts=counts, matrix=_normalized(counts, normalize), normalize=normalize,
        labels=(*dataset.categories.names, UNKNOWN),
        category_ids=dataset.categories.ids.copy(), iou_threshold=iou_threshold,
        score_threshold=score_threshold, n_ignored_detections=n_ignored,
        n_dropped_detections=n_dropped, detection_gt=m.dt_gt.copy(),
        detection_row=detection_row, gt_column=gt_column, iou_type=iou_type)


# --------------------------------------------------------------------------------------
# Operating points
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Curve(ReadOnlyArrays):
    thresholds: np.ndarray   # distinct scores, descending
    tp: np.ndarray           # detections with score >= threshold that are TP
    fp: np.ndarray
    n_gt: int


def _curve(scores: np.ndarray, is_tp: np.ndarray, n_gt: int) -> _Curve:
    order = np.argsort(-scores, kind="stable")
    scores, is_tp = scores[order], is_tp[order]
    tp, fp = np.cumsum(is_tp), np.cumsum(~is_tp)
    last = np.r_[scores[1:] != scores[:-1], True] if len(scores) else np.zeros(0, bool)
    return _Curve(thresholds=scores[last], tp=tp[last].astype(np.int64),
                  fp=fp[last].astype(np.int64), n_gt=int(n_gt))


@dataclass(frozen=True, eq=False)
class OperatingPoints(ReadOnlyArrays):
    """Result of :func:`operating_points`: one precision-recall curve per class and overall.

    Every curve point is a score threshold ``s`` (the distinct detection scores, descending)
    with the counts of the detections scoring ``>= s``: ``tp``, ``fp``, ``fn = n_gt - tp``,
    exactly the per-class counts of :func:`detection_confusion_matrix` at
    ``score_threshold=s``. Precision with no detection, recall with no object and F with
    neither are 0.

    Attributes
    ----------
    labels : tuple of str
        The K category names; curves are keyed by these names and ``"overall"`` (all
        classes pooled, one threshold for all).
    iou_threshold, beta : float
    curves : dict of str to dict of ndarray
        ``thresholds``, ``tp``, ``fp``, ``fn``, ``precision``, ``recall``, ``fbeta``.
    iou_type : str
        The similarity matched by.
    """

    labels: tuple[str, ...]
    iou_threshold: float
    beta: float
    curves: dict
    iou_type: str = "bbox"

    def curve(self, category: str | None = None) -> dict:
        """The curve of ``category`` (None: all classes pooled) as a dict of arrays.

        Keys ``thresholds``, ``tp``, ``fp``, ``fn``, ``precision``, ``recall``, ``fbeta``;
        a KeyError names the known categories.
        """
        key = "overall" if category is None else category
        if key not in self.curves:
            raise KeyError(f"unknown category {category!r}; choose one of "
                           f"{', '.join(map(repr, self.labels))} or None (overall)")
        return self.curves[key]

    @staticmethod
    def _point(curve: dict, i: int | None, category: str | None) -> dict[str, Any]:
        name = "overall" if category is None else category
        if i is None:
            return {"name": name, "threshold": math.nan, "precision": math.nan,
                    "recall": math.nan, "fbeta": math.nan, "tp": 0, "fp": 0,
                    "fn": int(curve["n_gt"])}
        return {"name": name, "threshold": float(curve["thresholds"][i]),
                "precision": float(curve["precision"][i]),
                "recall": float(curve["recall"][i]), "fbeta": float(curve["fbeta"][i]),
                "tp": int(curve["tp"][i]), "fp": int(curve["fp"][i]),
                "fn": int(curve["fn"][i])}

    def best(self, category: str | None = None) -> dict[str, Any]:
        """The score threshold maximising F-beta (the highest such threshold on ties).

        NaN threshold (and ratios) when no threshold gives an F above 0.
        """
        curve = self.curve(category)
        f = curve["fbeta"]
        i = int(np.argmax(f)) if len(f) and f.max() > 0 else None
        return self._point(curve, i, category)

    def precision_at_recall(self, recall: float, category: str | None = None
                            ) -> dict[str, Any]:
        """The highest precision among thresholds reaching ``recall`` (the highest such
        threshold on ties); NaN values if ``recall`` is never reached."""
        recall = number("recall", recall, low=0.0, high=1.0)
        curve = self.curve(category)
        ok = np.flatnonzero(curve["recall"] >= recall)
        i = None if len(ok) == 0 else int(ok[np.argmax(curve["precision"][ok])])
        return self._point(curve, i, category)

    def recall_at_precision(self, precision: float, category: str | None = None
                            ) -> dict[str, Any]:
        """The highest recall among thresholds with at least ``precision`` (the highest
        such threshold on ties); NaN values if no threshold is that precise."""
        precision = number("precision", precision, low=0.0, high=1.0)
        curve = self.curve(category)
        ok = np.flatnonzero(curve["precision"] >= precision)
        i = None if len(ok) == 0 else int(ok[np.argmax(curve["recall"][ok])])
        return self._point(curve, i, category)

    def per_class(self) -> list[dict[str, Any]]:
        """The best operating point of every class (see :meth:`best`)."""
        return [self.best(name) for name in self.labels]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: best points per class and overall, and every curve as lists.

        NaN (undefined) values are written as ``None``."""
        def clean(value: Any) -> Any:
            return None if isinstance(value, float) and math.isnan(value) else value

        def point(row: dict) -> dict:
            return {k: clean(v) for k, v in row.items()}

        return {
            "iou_type": self.iou_type, "iou_threshold": self.iou_threshold, "beta": self.beta,
            "per_class": [point(row) for row in self.per_class()],
            "overall": point(self.best()),
            "curves": {name: {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                              for k, v in curve.items()} for name, curve in self.curves.items()},
        }


def operating_points(gt: Any, dt: Any = None, *, iou_threshold: float = 0.5,
                     beta: float = 1.0, iou_type: str | None = None,
                     keypoint_sigmas: Any = None,
                     dilation_ratio: float | None = None) -> OperatingPoints:
    """Per class and overall: the precision-recall trade-off over the score threshold.

    Computed from the within-class match table (pass 1 of
    :func:`detection_confusion_matrix`, every detection of a known category): detections
    sorted by score, cumulative TP and FP. Detections that match a crowd region or an ignored
    object are left out, and those objects are not counted in ``n_gt``. Because the greedy
    matcher visits detections by descending score, the counts at a threshold ``s`` equal
    those of :func:`detection_confusion_matrix` with ``score_threshold=s``.

    Parameters
    ----------
    gt, dt
        As for :func:`detection_confusion_matrix`.
    iou_threshold : float, default 0.5
    beta : float, default 1
        Weight of recall in F-beta (``> 0``).
    iou_type : {"bbox", "segm", "boundary", "keypoints", "polygon", "rotated"}, optional
        The similarity matched by, as :func:`deteval.match_outcomes` (default "bbox", or
        that of a result given as ``gt``, as there: a CrowdPose result's is its own OKS);
        ``keypoint_sigmas`` and ``dilation_ratio`` as there.

    Returns
    -------
    OperatingPoints
        ``best(name)``, ``precision_at_recall(r, name)``, ``recall_at_precision(p, name)``
        (``name=None``: overall), ``per_class()``, ``to_dict()``.
    """
    iou_threshold = number("iou_threshold", iou_threshold, low=0.0, high=1.0, low_open=True)
    beta = number("beta", beta, low=0.0, low_open=True)
    # Negative scores are kept here: every detection defines a point of the curve.
    dataset, detections, iou_type, m = _match(
        gt, dt, iou_threshold, -math.inf, dict(iou_type=iou_type,
                                               keypoint_sigmas=keypoint_sigmas,
                                               dilation_ratio=dilation_ratio))
    names = tuple(dataset.categories.names)
    gt_class = dataset.gt.category_index
    n_gt = np.bincount(gt_class[m.gt_regular], minlength=len(names))
    scored = m.dt_counted
    dt_class, scores, is_tp = (detections.category_index[scored], detections.scores[scored],
                               m.dt_same_class[scored])
    raw = {name: _curve(scores[dt_class == c], is_tp[dt_class == c], n_gt[c])
           for c, name in enumerate(names)}
    raw["overall"] = _curve(scores, is_tp, int(n_gt.sum()))
    curves = {}
    for name, c in raw.items():
        fn = c.n_gt - c.tp
        p, r, f = _ratios(c.tp, c.fp, fn, (name,) * len(c.tp), beta, 0)
        arrays = {"thresholds": c.thresholds, "tp": c.tp, "fp": c.fp, "fn": fn,
                  "precision": p, "recall": r, "fbeta": f}
        curves[name] = {**{key: frozen(a) for key, a in arrays.items()}, "n_gt": c.n_gt}
    return OperatingPoints(labels=names, iou_threshold=iou_threshold, beta=beta,
                           curves=curves, iou_type=iou_type)


# --------------------------------------------------------------------------------------
# Top-k accuracy of matched detections
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DetectionTopK(ReadOnlyArrays):
    """Result of :func:`detection_top_k_accuracy`.

    Attributes
    ----------
    accuracy : float
        Top-``k`` accuracy over the matched detections (the first ``k`` when several were
        given); NaN when no detection matched.
    k : tuple of int
        The ``k`` values asked for, in the order given.
    per_k : dict of int to float
        The accuracy for every ``k``.
    n_matched : int
        Detections matched to a regular object (the denominator).
    iou_threshold : float
    detection_gt : ndarray of int, shape (n_dt,)
        Row of ``gt.gt`` each detection matched; -1 if none (or a crowd region or an ignored
        object: such detections are not counted).
    """

    accuracy: float
    k: tuple[int, ...]
    per_k: dict
    n_matched: int
    iou_threshold: float
    detection_gt: np.ndarray

    def __post_init__(self) -> None:
        self.detection_gt.setflags(write=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN written as ``None``)."""
        def clean(value: float) -> float | None:
            return None if math.isnan(value) else value

        return {"accuracy": clean(self.accuracy), "k": list(self.k),
                "per_k": {str(k): clean(v) for k, v in self.per_k.items()},
                "n_matched": self.n_matched, "iou_threshold": self.iou_threshold}


def _k_values(k: Any) -> tuple[int, ...]:
    if isinstance(k, (numbers.Integral, bool, np.bool_)):
        values = (k,)
    else:
        try:
            values = tuple(k)
        except TypeError:
            raise TypeError(f"k must be an integer or a list of integers; got "
                            f"{type(k).__name__}") from None
    if not values:
        raise ValueError("k must be an integer or a non-empty list of integers")
    for value in values:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"k must be an integer; got {type(value).__name__}")
        if value < 1:
            raise ValueError(f"k must be at least 1; got {value}")
    return tuple(int(v) for v in values)


def detection_top_k_accuracy(gt: Any, dt: Any, class_scores: Any, *, k: Any = 1,
                             iou_threshold: float = 0.5, iou_type: str = "bbox",
                             keypoint_sigmas: Any = None,
                             dilation_ratio: float | None = None) -> DetectionTopK:
    """Top-k classification accuracy of the detections that found an object.

    Detections are matched to objects **class-agnostically** with the shared greedy matcher
    (:func:`~deteval.matching.match_detections`: one group per image, COCO rule, one IoU
    threshold, area range ``[0, inf]``, every detection kept whatever its score or
    category). Crowd regions and ignored objects take part in the matching, but a detection
    that matches one is not counted. For each detection matched to a regular object, the
    object's class is a hit when it is among the ``k`` highest columns of the detection's
    score row, ties broken as :func:`deteval.classification.top_k_accuracy` breaks them
    (which computes the accuracy on the matched rows).

    Parameters
    ----------
    gt, dt
        As for :func:`detection_confusion_matrix`.
    class_scores : array_like, shape (n_detections, K)
        Per-class scores of every detection, rows in the detections' order, columns in the
        order of the dataset's categories table. Finite.
    k : int or sequence of int, default 1
        ``k >= K`` makes every matched detection a hit and emits an
        :class:`~deteval.errors.UndefinedMetricWarning`.
    iou_threshold : float, default 0.5
        In ``(0, 1]``; a pair matches at IoU ``>= iou_threshold``.
    iou_type : {"bbox", "segm", "boundary", "keypoints", "polygon", "rotated"}, default "bbox"
        The similarity matched by, as :func:`deteval.match_outcomes` (``keypoint_sigmas``
        and ``dilation_ratio`` as there).

    Returns
    -------
    DetectionTopK
        ``accuracy`` (NaN, with a warning, when nothing matched), ``per_k``, ``n_matched``.

    Examples
    --------
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "cat"},
    ...       {"id": 2, "name": "dog"}, {"id": 3, "name": "cow"}], "annotations": [
    ...       {"id": 1, "image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10], "area": 100}]}
    >>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
    ...       {"image_id": 1, "category_id": 3, "bbox": [50, 50, 10, 10], "score": 0.8}]
    >>> scores = [[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]]
    >>> result = detection_top_k_accuracy(gt, dt, scores, k=[1, 2])
    >>> result.n_matched, result.per_k
    (1, {1: 0.0, 2: 1.0})
    """
    iou_threshold = number("iou_threshold", iou_threshold, low=0.0, high=1.0, low_open=True)
    k_values = _k_values(k)
    from .outcomes import resolve_similarity

    if dt is None:
        raise TypeError("dt (the detections) is required")
    dataset, detections, similarity = resolve_similarity(
        gt, dt, iou_type=iou_type, keypoint_sigmas=keypoint_sigmas,
        dilation_ratio=dilation_ratio, floor=iou_threshold)
    n_k, n_dt = len(dataset.categories), len(detections)
    matrix = real_matrix("class_scores", class_scores, axes="n_detections, n_categories")
    if matrix.shape[0] != n_dt:
        raise ValueError(f"class_scores must have one row per detection ({n_dt}); got "
                         f"{matrix.shape[0]} rows")
    if matrix.shape[1] != n_k:
        raise ValueError(f"class_scores must have one column per category of the dataset "
                         f"({n_k}); got {matrix.shape[1]} columns")
    matrix = finite_matrix("class_scores", matrix)

    objects = dataset.gt
    ignored = similarity.gt_ignore
    table = match_detections(
        dt_group=detections.image_index.astype(np.int64), dt_scores=detections.scores,
        dt_area=detections.area, gt_group=objects.image_index.astype(np.int64),
        gt_crowd=objects.iscrowd, gt_ignore=ignored, gt_area=objects.area,
        similarity=similarity.pair,
        iou_thresholds=np.array([iou_threshold]), area_ranges=np.array([[0.0, np.inf]]),
        max_detections=max(n_dt, 1))
    dt_gt = np.asarray(table.detection_matches()[0], dtype=np.int64).copy()
    dt_gt[(dt_gt >= 0) & _take(ignored, dt_gt)] = -1
    rows = np.flatnonzero(dt_gt >= 0)
    truth = objects.category_index[dt_gt[rows]]
    per_k = {}
    for value in k_values:
        if len(rows):
            per_k[value] = top_k_accuracy(truth, matrix[rows], k=value,
                                          labels=np.arange(n_k))
        else:
            if value >= n_k:
                warn_undefined(f"k ({value}) >= the number of classes ({n_k}): every sample "
                               "is a hit, so the score is meaningless", outside=__name__)
            per_k[value] = math.nan
    if not len(rows):
        warn_undefined("no detection matched an object: top-k accuracy is undefined (NaN)",
                       outside=__name__)
    return DetectionTopK(accuracy=per_k[k_values[0]], k=k_values, per_k=per_k,
                         n_matched=int(len(rows)), iou_threshold=iou_threshold,
                         detection_gt=dt_gt)
