"""The VOC protocol in stages: prepare the settings, match, accumulate.

:func:`~deteval.protocols.voc.evaluate_voc` runs them once over a whole dataset;
:class:`deteval.Evaluator` matches batch after batch and accumulates once from the merged
state. Accumulation reads nothing but a :class:`VOCState`.

Order of equal scores: each class's detections are ranked by descending score with a
stable sort, so equal scores keep their input order (the devkit's MATLAB ``sort``). A state
records that order as (``image``, ``rank``): one-shot evaluation puts every row in image 0
with its input row as rank; a streaming evaluator, which has no single input order, uses the
image's row in the images table and the detection's order within its image, so that it
equals :func:`~deteval.protocols.voc.evaluate_voc` on the detections listed image by image
in the images table's order.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .._sorting import descending_rank, lexorder
from ..ap import average_precision
from ..data import Dataset, Detections, index_in
from ..matching import FP, TP, MatchTable, match_detections
from ._state import StateColumns, small

if TYPE_CHECKING:
    from .voc import VOCParams

__all__ = ["VOCContext", "VOCState", "accumulate_stage", "curve_ap", "match_stage", "mean_ap",
           "prepare", "voc_pair_iou"]


@dataclass(frozen=True, eq=False)
class VOCContext:
    """The settings normalised against one ground truth, shared by every batch.

    Attributes
    ----------
    params : VOCParams
        ``image_ids`` and ``category_ids`` filled in.
    dataset : Dataset
    image_ids, category_ids : ndarray of int
    n_k : int
        K: the number of evaluated classes.
    image_ok : ndarray of bool, shape (n_images,)
        Rows of the images table that are evaluated.
    k_of_row : ndarray of int, shape (n_categories,)
        Class position of each row of the categories table, -1 where not evaluated.
    gt_k : ndarray of int, shape (n_gt,)
        Class position of each object, -1 where not evaluated.
    difficult : ndarray of bool, shape (n_gt,)
        ``ignore | iscrowd``.
    n_positives, n_difficult : ndarray of int, shape (K,)
    """

    params: VOCParams
    dataset: Dataset
    image_ids: np.ndarray
    category_ids: np.ndarray
    n_k: int
    image_ok: np.ndarray
    k_of_row: np.ndarray
    gt_k: np.ndarray
    difficult: np.ndarray
    n_positives: np.ndarray
    n_difficult: np.ndarray


def prepare(dataset: Dataset, p: VOCParams) -> VOCContext:
    """Fill in the evaluated images and classes of ``p`` and count the positives."""
    image_ids = np.asarray(p.image_ids if p.image_ids is not None else dataset.images.ids,
                           dtype=np.int64)
    category_ids = np.asarray(p.category_ids if p.category_ids is not None
                              else dataset.categories.ids, dtype=np.int64)
    p = dataclasses.replace(p, image_ids=tuple(image_ids.tolist()),
                            category_ids=tuple(category_ids.tolist()))
    n_k = len(category_ids)
    image_ok = np.isin(dataset.images.ids, image_ids)
    k_of_row = index_in(dataset.categories.ids, category_ids)   # -1: not evaluated
    objects = dataset.gt
    gt_k = np.where(image_ok[objects.image_index], k_of_row[objects.category_index], -1)
    difficult = objects.ignore | objects.iscrowd
    return VOCContext(
        params=p, dataset=dataset, image_ids=image_ids, category_ids=category_ids, n_k=n_k,
        image_ok=image_ok, k_of_row=k_of_row, gt_k=gt_k, difficult=difficult,
        n_positives=np.bincount(gt_k[(gt_k >= 0) & ~difficult], minlength=n_k),
        n_difficult=np.bincount(gt_k[(gt_k >= 0) & difficult], minlength=n_k))


@dataclass(frozen=True, eq=False)
class VOCState(StateColumns):
    """What accumulation needs of matched detections: one row per evaluated detection.

    Attributes
    ----------
    image, rank : ndarray of int, shape (n,)
        The order of equal scores: by image, then rank (see the module documentation).
    category : ndarray of int, shape (n,)
        Class position k.
    score : ndarray of float64, shape (n,)
        The score used for ranking (rounded with ``round_detections``).
    status : ndarray of int8, shape (T, n)
        ``TP``, ``FP`` or ``IGNORED`` (on a difficult object) at each threshold.
    score_rank : ndarray of int, shape (n,), optional
        Dense descending rank of the scores, when the matcher computed it already.
    """

    image: np.ndarray
    rank: np.ndarray
    category: np.ndarray
    score: np.ndarray
    status: np.ndarray
    score_rank: np.ndarray | None = None

    @classmethod
    def empty(cls, n_thresholds: int) -> VOCState:
        """A state without rows."""
        z = np.zeros(0, np.int32)
        return cls(image=z, rank=z, category=z, score=np.zeros(0),
                   status=np.zeros((n_thresholds, 0), np.int8))

    def compact(self) -> VOCState:
        """The same rows in 32-bit integers (for streaming and serialising)."""
        return VOCState(image=small(self.image, np.int32), rank=small(self.rank, np.int32),
                        category=small(self.category, np.int32), score=self.score,
                        status=self.status)

    def select(self, rows: np.ndarray) -> VOCState:
        """The state of the given rows."""
        return VOCState(image=self.image[rows], rank=self.rank[rows],
                        category=self.category[rows], score=self.score[rows],
                        status=self.status[:, rows])

    @classmethod
    def concat(cls, states: list[VOCState]) -> VOCState:
        """One state holding the rows of all (no check; see :class:`deteval.Evaluator`)."""
        if len(states) == 1:
            return states[0]
        return cls(**{name: np.concatenate([s.arrays()[name] for s in states],
                                           axis=1 if name == "status" else 0)
                      for name in ("image", "rank", "category", "score", "status")})


class Matched(NamedTuple):
    """What :func:`match_stage` returns."""

    table: MatchTable
    state: VOCState
    scores: np.ndarray       # every detection's ranking score (rounded if asked)
    state_rows: np.ndarray   # the detection row of each state row


def match_stage(ctx: VOCContext, detections: Detections, gt_rows: np.ndarray | None = None,
                *, by_image: bool = False, threads: int | None = None) -> Matched:
    """Match ``detections`` with the VOC rule and reduce the table to a :class:`VOCState`.

    Parameters
    ----------
    ctx : VOCContext
    detections : Detections
        Every detection of the images they cover.
    gt_rows : ndarray of int, optional
        The objects to match against, sorted (default all); with a subset, the table's GT
        rows are positions in it.
    by_image : bool
        Record the order of equal scores as (image row, order within the image) instead of
        the input row (see the module documentation).
    threads : int, optional
        Threads computing the IoU of candidate pairs (None: every core); the result is the
        same for every value.
    """
    p, objects = ctx.params, ctx.dataset.gt
    # A detection of no dataset category (-1) looks up the sentinel appended (-1 too): a
    # dataset without categories has no row 0 to borrow.
    dt_k = np.where(ctx.image_ok[detections.image_index],
                    np.append(ctx.k_of_row, -1)[detections.category_index], -1)
    n_k = ctx.n_k
    gt_sel = np.arange(len(objects)) if gt_rows is None else gt_rows
    gt_k = ctx.gt_k[gt_sel]
    gt_image = objects.image_index[gt_sel]
    dt_image = detections.image_index
    if gt_rows is not None:     # small group keys: this batch's images numbered from 0
        local, inverse = np.unique(np.r_[dt_image, gt_image], return_inverse=True)
        dt_image, gt_image = inverse[:len(dt_image)], inverse[len(dt_image):]
    gt_group = np.where(gt_k >= 0, gt_image * n_k + gt_k, -1)
    dt_group = np.where(dt_k >= 0, dt_image * n_k + dt_k, -1)
    scores, dt_boxes = detections.scores, detections.boxes
    if p.round_detections:
        scores, dt_boxes = rounded_as_files(scores, dt_boxes)
    gt_boxes = objects.boxes[gt_sel]

    def similarity(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
        return voc_pair_iou(dt_boxes[d_rows], gt_boxes[g_rows], p.inclusive_pixels)

    n_dt = len(detections)
    table = match_detections(
        dt_group=dt_group, dt_scores=scores, dt_area=np.zeros(n_dt), gt_group=gt_group,
        gt_crowd=objects.iscrowd[gt_sel], gt_ignore=ctx.difficult[gt_sel],
        gt_area=np.zeros(len(gt_sel)), similarity=similarity,
        iou_thresholds=np.asarray(p.iou_thresholds), area_ranges=np.array([[-np.inf, np.inf]]),
        max_detections=n_dt + 1, rule="voc", strict=p.iou_comparison == ">",
        threads=threads)
    rows = np.flatnonzero(table.dt_kept)
    if by_image:
        image = detections.image_index.take(rows)
        # Order within each image: the input order of its rows.
        by = lexorder([image])
        rank = np.empty(len(rows), dtype=np.int64)
        starts = np.searchsorted(image.take(by), image.take(by), side="left")
        rank[by] = np.arange(len(rows)) - starts
    else:
        image, rank = np.zeros(len(rows), dtype=np.int64), rows
    state = VOCState(image=image, rank=rank, category=dt_k.take(rows), score=scores.take(rows),
                     status=table.detection_status(0).take(rows, axis=1),
                     score_rank=table.dt_score_rank.take(rows))
    return Matched(table, state, np.asarray(scores, dtype=np.float64), rows)


class Accumulated(NamedTuple):
    """What :func:`accumulate_stage` returns (shapes: T thresholds, K classes, n rows)."""

    ap: np.ndarray          # (T, K)
    map: np.ndarray         # (T,)
    tp: np.ndarray          # (T, K)
    fp: np.ndarray          # (T, K)
    n_detections: np.ndarray  # (K,)
    order: np.ndarray       # state rows by (class, descending score, image, rank)
    tp_cum: np.ndarray      # (T, n) running counts in that order
    fp_cum: np.ndarray
    counted: np.ndarray     # (T, n) TP or FP (not on a difficult object)
    bounds: np.ndarray      # (K + 1,) class k owns order[bounds[k]:bounds[k + 1]]


def accumulate_stage(ctx: VOCContext, state: VOCState) -> Accumulated:
    """Per-class precision-recall curves and AP from a state."""
    p, n_k, n_positives = ctx.params, ctx.n_k, ctx.n_positives
    score_rank = (state.score_rank if state.score_rank is not None
                  else descending_rank(state.score)[0])
    dt_k = np.asarray(state.category, dtype=np.int64)
    # Curves: each class's detections by descending score, ties in the recorded order.
    order = lexorder([dt_k, score_rank, state.image, state.rank], rows_are_unique=True)
    bounds = np.searchsorted(dt_k[order], np.arange(n_k + 1), side="left")
    status = state.status.take(order, axis=1)
    tp_step, fp_step = status == TP, status == FP
    tp_cum, tp_total = _segment_counts(tp_step, bounds)
    fp_cum, fp_total = _segment_counts(fp_step, bounds)
    counted = tp_step | fp_step
    n_t = len(p.iou_thresholds)
    ap = np.zeros((n_t, n_k))
    # One small curve per (threshold, class): np.sum inside average_precision must see each
    # curve alone to add in detectron2's (pairwise) order.
    for t in range(n_t):
        for k in range(n_k):
            lo, hi = bounds[k], bounds[k + 1]
            keep = counted[t, lo:hi]
            ap[t, k] = curve_ap(tp_cum[t, lo:hi][keep], fp_cum[t, lo:hi][keep],
                                int(n_positives[k]), hi - lo, p)
    return Accumulated(ap=ap, map=mean_ap(ap, n_positives, p), tp=tp_total, fp=fp_total,
                       n_detections=np.diff(bounds), order=order, tp_cum=tp_cum,
                       fp_cum=fp_cum, counted=counted, bounds=bounds)


def curve_ap(tp_cum: np.ndarray, fp_cum: np.ndarray, npos: int, n_dt: int,
             p: VOCParams) -> float:
    """AP of one class at one threshold from its running TP and FP counts over its counted
    detections (not those on difficult objects), in ranking order.

    ``npos`` is the class's non-difficult objects, ``n_dt`` its evaluated detections (what a
    class without objects scores depends on it). Also the rule of
    :mod:`deteval.diagnostics.bootstrap_voc`'s weighted counts.

    >>> from deteval.protocols.voc import VOC2012
    >>> curve_ap(np.array([1, 2, 2, 3]), np.array([0, 0, 1, 1]), 5, 4, VOC2012)
    0.55
    """
    tp = tp_cum.astype(np.float64)
    fp = fp_cum.astype(np.float64)
    rec = tp / npos if npos else tp
    return _class_ap(rec, tp / (tp + fp), npos, n_dt, p)


def mean_ap(ap: np.ndarray, n_positives: np.ndarray, p: VOCParams) -> np.ndarray:
    """The mAP per threshold of the (T, K) APs: over the classes with objects
    (``classes_without_gt="exclude"``, NaN when none has) or over all of them."""
    n_t, n_k = ap.shape
    if p.classes_without_gt == "exclude":
        valid = n_positives > 0
        with np.errstate(all="ignore"):
            return (np.mean(ap[:, valid], axis=1) if valid.any()
                    else np.full(n_t, np.nan))
    return np.mean(ap, axis=1) if n_k else np.full(n_t, np.nan)


def rounded_as_files(scores: np.ndarray, boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scores to 3 decimals and boxes to 1, as detectron2's result files write them
    (``VOCParams.round_detections``; also TIDE's ``detectron2=True``)."""
    return _round_as_text(scores, 3), _round_as_text(boxes, 1)


def _round_as_text(values: np.ndarray, decimals: int) -> np.ndarray:
    """``float(f"{v:.{decimals}f}")`` for every value: what writing and reading text gives.

    ``rint(v * 10**d) / 10**d`` is the same number unless the product's rounding error
    (at most half an ulp, under 5e-7 below 2**32) can move ``v * 10**d`` across a half-way
    point; values within 1e-6 of one, and larger values, are formatted for real.
    """
    scale = 10.0 ** decimals
    scaled = values * scale
    out = np.rint(scaled) / scale
    risky = ((np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6)
             | ~(np.abs(scaled) < 2.0**32))
    if risky.any():
        out[risky] = [float(f"{v:.{decimals}f}") for v in values[risky].tolist()]
    return out


def voc_pair_iou(dt: np.ndarray, gt: np.ndarray, inclusive: bool) -> np.ndarray:
    """IoU of aligned xyxy box pairs, in detectron2's (and the devkit's) order of operations.

    With ``inclusive`` the +1 pixel convention: sides ``x2 - x1 + 1``, intersection side
    ``min(x2) - max(x1) + 1`` clipped at 0. A zero union (continuous zero-area boxes) gives 0.
    """
    one = 1.0 if inclusive else 0.0
    iw = np.maximum(np.minimum(gt[:, 2], dt[:, 2]) - np.maximum(gt[:, 0], dt[:, 0]) + one, 0.0)
    ih = np.maximum(np.minimum(gt[:, 3], dt[:, 3]) - np.maximum(gt[:, 1], dt[:, 1]) + one, 0.0)
    inters = iw * ih
    union = ((dt[:, 2] - dt[:, 0] + one) * (dt[:, 3] - dt[:, 1] + one)
             + (gt[:, 2] - gt[:, 0] + one) * (gt[:, 3] - gt[:, 1] + one) - inters)
    with np.errstate(all="ignore"):
        iou = inters / union
    return np.where(union > 0, iou, 0.0)


def _class_ap(rec: np.ndarray, prec: np.ndarray, npos: int, n_dt: int, p: VOCParams) -> float:
    if npos:
        return average_precision(rec, prec, method=p.ap_method)
    if p.classes_without_gt == "exclude":
        return float("nan")
    # detectron2 divides 0 by 0: recall is NaN, so no 11-point threshold is reached (AP 0),
    # and the all-points sum has NaN widths as soon as there is a detection.
    return float("nan") if (p.ap_method == "all-points" and n_dt) else 0.0


def _segment_counts(steps: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Running counts of ``steps`` (T, n) restarting at every segment ``[bounds[k],
    bounds[k+1])``, and each segment's total, shape (T, K)."""
    padded = np.zeros((steps.shape[0], steps.shape[1] + 1), dtype=np.int64)
    np.cumsum(steps, axis=1, dtype=np.int64, out=padded[:, 1:])
    segment_start = np.repeat(bounds[:-1], np.diff(bounds))
    running = padded[:, 1:] - padded[:, segment_start]
    return running, padded[:, bounds[1:]] - padded[:, bounds[:-1]]


