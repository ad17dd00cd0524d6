"""The COCO protocol in stages: prepare the settings, match, accumulate.

:func:`evaluate_coco` runs them once over a whole dataset; :class:`deteval.Evaluator`
matches batch after batch and accumulates once from the merged state. Both give the same
numbers because accumulation reads nothing but a :class:`COCOState`.

* :func:`prepare` normalises the settings against the ground truth (once): the evaluated
  image and category ids, each object's category position ``k`` and image position, and the
  positives per (category, area range), which depend on the ground truth alone (every image
  of ``image_ids`` counts, updated or not, as in pycocotools).
* :func:`match_stage` matches detections (all of a dataset, or the whole images of one
  batch, against those images' objects only) and reduces the match table to a
  :class:`COCOState`.
* :func:`accumulate_stage` is pycocotools' ``accumulate`` (docs/protocols/coco.md §7) on a state.

pycocotools' order of equal scores: it concatenates each category's detections image by
image in sorted ``imgIds`` order, each image's by its own stable score sort, then sorts
the whole by score with a stable sort. Accumulation therefore orders the state by
(category, descending score, image position, rank in the image's group), keys that do not
depend on the order in which rows were added or merged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .._sorting import sorted_unique
from .._threads import resolve_threads, thread_map
from ..data import Dataset, Detections, derived_or_read, index_in, is_derived, masks_of
from ..iou import coco_pair_iou
from ..matching import MatchTable, match_table
from ._coco_curves import accumulate_into, needed_true_positives, ordered_events, row_keys
from ._pieces import category_pieces, split_by_piece
from ._state import StateColumns, small

if TYPE_CHECKING:
    from .coco import COCOParams, COCOResult

__all__ = ["COCOContext", "COCOState", "Matched", "accumulate_stage", "accumulate_table",
           "match_stage", "prepare",
           # (from ._coco_curves, where they live, for the modules that import them here)
           "needed_true_positives", "ordered_events"]


@dataclass(frozen=True, eq=False)
class COCOContext:
    """The settings normalised against one ground truth, shared by every batch.

    Attributes
    ----------
    params : COCOParams
        ``image_ids`` and ``category_ids`` filled in (sorted), ``max_detections`` sorted.
    dataset : Dataset
    image_ids, category_ids : ndarray of int, shape (I,) and (C,)
    n_k : int
        K: the number of categories, 1 when they are pooled.
    image_pos_of_row, category_pos_of_row : ndarray of int
        Position in ``image_ids`` / ``category_ids`` of each row of the images and
        categories tables, -1 where not evaluated.
    gt_k, gt_img : ndarray of int, shape (n_gt,)
        Each object's category position (0 when pooled) and image position; -1 for an
        object that is not evaluated.
    gt_order : ndarray of int, shape (n_gt,)
        Objects in the matcher's order: file order, or by category first when pooled.
    gt_ignore : ndarray of bool, shape (n_gt,)
        The ignore key the matcher sees (``iscrowd``; for keypoints also no keypoints).
    positives : ndarray of int, shape (K, A)
        Evaluated objects that are not ignored, per category and area range (``npig``).
    """

    params: COCOParams
    dataset: Dataset
    image_ids: np.ndarray
    category_ids: np.ndarray
    n_k: int
    image_pos_of_row: np.ndarray
    category_pos_of_row: np.ndarray
    gt_k: np.ndarray
    gt_img: np.ndarray
    gt_order: np.ndarray
    gt_ignore: np.ndarray
    positives: np.ndarray


def prepare(dataset: Dataset, p: COCOParams) -> COCOContext:
    """Normalise ``p`` against ``dataset`` as ``COCOeval.evaluate()`` does.

    Raises
    ------
    ValueError
        Repeated category ids with pooled categories.
    """
    image_ids = sorted_unique(np.asarray(p.image_ids if p.image_ids is not None
                                     else dataset.images.ids, dtype=np.int64))
    if p.use_categories:
        category_ids = sorted_unique(np.asarray(p.category_ids if p.category_ids is not None
                                            else dataset.categories.ids, dtype=np.int64))
    else:
        # useCats=0 keeps catIds in the given order (the pool's concatenation order).
        category_ids = np.asarray(p.category_ids if p.category_ids is not None
                                  else np.sort(dataset.categories.ids), dtype=np.int64)
    p = dataclasses.replace(p, image_ids=tuple(image_ids.tolist()),
                            category_ids=tuple(category_ids.tolist()),
                            max_detections=tuple(sorted(p.max_detections)))
    if not p.use_categories and len(sorted_unique(category_ids)) != len(category_ids):
        raise ValueError(f"category_ids must not repeat a category; got {p.category_ids}")
    gt = dataset.gt
    n_k = len(category_ids) if p.use_categories else 1
    image_pos_of_row = index_in(dataset.images.ids, image_ids)
    category_pos_of_row = index_in(dataset.categories.ids, category_ids)
    gt_cat = category_pos_of_row[gt.category_index]
    gt_img = image_pos_of_row[gt.image_index]
    ok = (gt_img >= 0) & (gt_cat >= 0)
    gt_k = np.where(ok, gt_cat if p.use_categories else 0, -1)
    gt_img = np.where(ok, gt_img, -1)
    # The matcher breaks IoU ties by GT row order inside a group. A pooled (class-agnostic)
    # group lists its objects category by category, then in file order: present them so.
    gt_order = (np.arange(len(gt)) if p.use_categories
                else np.lexsort((np.arange(len(gt)), gt_cat)))
    # The ignore key is overwritten by iscrowd (pycocotools quirk, docs/protocols/coco.md §4.2); the
    # keypoint protocol also ignores objects without keypoints.
    gt_ignore = gt.iscrowd
    if p.iou_type == "keypoints":
        gt_ignore = gt.iscrowd | (gt.num_keypoints == 0)
    ranges = np.asarray(p.area_ranges)
    counted = ~(gt_ignore[None, :] | (gt.area[None, :] < ranges[:, :1])
                | (gt.area[None, :] > ranges[:, 1:]))                    # (A, n_gt)
    positives = (np.stack([np.bincount(gt_k[ok & counted[a]], minlength=n_k)
                           for a in range(len(ranges))], axis=1)
                 if n_k else np.zeros((0, len(ranges)), np.int64))
    return COCOContext(params=p, dataset=dataset, image_ids=image_ids,
                       category_ids=category_ids, n_k=n_k, image_pos_of_row=image_pos_of_row,
                       category_pos_of_row=category_pos_of_row, gt_k=gt_k, gt_img=gt_img,
                       gt_order=gt_order, gt_ignore=gt_ignore, positives=positives)


@dataclass(frozen=True, eq=False)
class COCOState(StateColumns):
    """What accumulation needs of matched detections: one row per evaluated detection.

    Rows are the detections within the top ``max_detections[-1]`` of their (image,
    category) group; boxes and shapes are gone. Merged states are concatenations (see
    :meth:`concat`); accumulation orders the rows itself.

    Attributes
    ----------
    image : ndarray of int, shape (n,)
        Position of the detection's image in ``params.image_ids`` (sorted ids).
    category : ndarray of int, shape (n,)
        Category position k (0 when categories are pooled).
    score : ndarray of float64, shape (n,)
    rank : ndarray of int, shape (n,)
        Position in its (image, category) group by descending score, ties in input order
        (pycocotools' per-image stable sort).
    out_of_range : ndarray of bool, shape (A, n)
        Area outside each area range.
    event_row, event_at : ndarray of int, shape (e,)
        One event per match: the row, and ``area_index * T + threshold_index``.
    event_ignored : ndarray of bool, shape (e,)
        The matched object is ignored in that area range.
    score_rank : ndarray of int, shape (n,), optional
        Dense descending rank of the scores, when the matcher computed it already.
    """

    image: np.ndarray
    category: np.ndarray
    score: np.ndarray
    rank: np.ndarray
    out_of_range: np.ndarray
    event_row: np.ndarray
    event_at: np.ndarray
    event_ignored: np.ndarray
    score_rank: np.ndarray | None = None

    @classmethod
    def empty(cls, n_areas: int) -> COCOState:
        """A state without rows."""
        z = np.zeros(0, np.int32)
        return cls(image=z, category=z, score=np.zeros(0), rank=z,
                   out_of_range=np.zeros((n_areas, 0), bool), event_row=np.zeros(0, np.int64),
                   event_at=np.zeros(0, np.int16), event_ignored=np.zeros(0, bool))

    def compact(self) -> COCOState:
        """The same rows in small integer types (for streaming and serialising).

        Raises
        ------
        OverflowError
            Values that do not fit (more than 2**31 images or categories).
        """
        return COCOState(image=small(self.image, np.int32),
                         category=small(self.category, np.int32), score=self.score,
                         rank=small(self.rank, np.int32), out_of_range=self.out_of_range,
                         event_row=self.event_row.astype(np.int64, copy=False),
                         event_at=small(self.event_at, np.int16),
                         event_ignored=self.event_ignored)

    def select(self, rows: np.ndarray) -> COCOState:
        """The state of the given rows (sorted row indices), events renumbered."""
        new_row = np.full(len(self), -1, dtype=np.int64)
        new_row[rows] = np.arange(len(rows))
        ev_new = new_row[self.event_row]
        ev = np.flatnonzero(ev_new >= 0)
        return COCOState(image=self.image[rows], category=self.category[rows],
                         score=self.score[rows], rank=self.rank[rows],
                         out_of_range=self.out_of_range[:, rows], event_row=ev_new[ev],
                         event_at=self.event_at[ev], event_ignored=self.event_ignored[ev])

    @classmethod
    def concat(cls, states: list[COCOState]) -> COCOState:
        """One state holding the rows of all (no check; see :class:`deteval.Evaluator`)."""
        if len(states) == 1:
            return states[0]
        offsets = np.cumsum([0] + [len(s) for s in states[:-1]])
        return cls(
            image=np.concatenate([s.image for s in states]),
            category=np.concatenate([s.category for s in states]),
            score=np.concatenate([s.score for s in states]),
            rank=np.concatenate([s.rank for s in states]),
            out_of_range=np.concatenate([s.out_of_range for s in states], axis=1),
            event_row=np.concatenate([s.event_row + o for s, o in zip(states, offsets)]),
            event_at=np.concatenate([s.event_at for s in states]),
            event_ignored=np.concatenate([s.event_ignored for s in states]))


class Matched(NamedTuple):
    """What :func:`match_stage` returns."""

    table: MatchTable       # rows of the detections and of the dataset's objects
    state: COCOState
    dt_category: np.ndarray  # category position of each detection, -1 if not evaluated


#: Similarities computed on several threads at once: numpy and shapely run them without
#: the GIL. The mask routines hold it (and boundaries share a cache), so they stay on one.
_THREADED_SIMILARITY = frozenset({"bbox", "keypoints", "polygon", "rotated"})


def match_stage(ctx: COCOContext, detections: Detections,
                gt_rows: np.ndarray | None = None, *, threads: int | None = None) -> Matched:
    """Match ``detections`` and reduce the match table to a :class:`COCOState`.

    Parameters
    ----------
    ctx : COCOContext
    detections : Detections
        Every detection of the images they cover (matching is per image).
    gt_rows : ndarray of int, optional
        The objects to match against, sorted (the evaluated objects of the detections'
        images, say); default every object. With a subset the returned table's GT rows are
        positions in the matcher's order of that subset, not dataset rows.
    threads : int, optional
        Threads computing the pair similarities of box, keypoint and polygon IoU types
        (None: every core); the result is the same for every value.
    """
    p, gt = ctx.params, ctx.dataset.gt
    dt_k, dt_img, dt_cat = detection_positions(ctx, detections)
    if gt_rows is None:
        gt_sel = ctx.gt_order
        dt_key, gt_key = dt_img, ctx.gt_img[gt_sel]
    else:
        gt_sel = (gt_rows if p.use_categories
                  else gt_rows[np.lexsort((gt_rows, ctx.category_pos_of_row[
                      gt.category_index[gt_rows]]))])
        # Small group keys: the images of this batch numbered from 0.
        gt_img = ctx.gt_img[gt_sel]
        local, inverse = np.unique(np.r_[dt_img, gt_img], return_inverse=True)
        inverse = inverse.ravel() - int(local[0] < 0)
        dt_key = np.where(dt_img >= 0, inverse[:len(dt_img)], -1)
        gt_key = np.where(gt_img >= 0, inverse[len(dt_img):], -1)
    gt_k = ctx.gt_k[gt_sel]
    n_k = ctx.n_k
    if dt_k.min(initial=0) >= 0 and dt_key.min(initial=0) >= 0:
        dt_group = dt_key.astype(np.int64)  # (every detection evaluated: no selection)
        dt_group *= n_k
        dt_group += dt_k
    else:
        dt_group = np.where(dt_k >= 0, dt_key * n_k + dt_k, -1)
    gt_group = np.where(gt_k >= 0, gt_key * n_k + gt_k, -1)
    # Inside a pooled (class-agnostic) group equal scores are ordered by category first.
    dt_tie = None if p.use_categories else np.maximum(dt_cat, 0)
    dt_xywh = detections.as_xywh()
    gt_xywh = gt.as_xywh()[gt_sel]
    gt_crowd = gt.iscrowd[gt_sel]
    similarity = pair_similarity(p, ctx.dataset, detections, gt_sel, dt_xywh, gt_xywh, gt_crowd,
                                 threads=threads)
    table = match_table(     # (the areas, w * h of a results file, beside the rounds)
        dt_group=dt_group, dt_scores=detections.scores, dt_tie_key=dt_tie,
        dt_area_of=lambda: derived_or_read(detections, "area"), gt_group=gt_group,
        gt_crowd=gt_crowd,
        gt_ignore=ctx.gt_ignore[gt_sel], gt_area=gt.area[gt_sel],
        similarity=similarity, iou_thresholds=np.asarray(p.iou_thresholds),
        area_ranges=np.asarray(p.area_ranges), max_detections=p.max_detections[-1],
        threads=resolve_threads(threads) if p.iou_type in _THREADED_SIMILARITY else 1)
    state = state_of(table, dt_k, dt_img, detections.scores)
    if gt_rows is None and not p.use_categories:
        table = _unpermute_gt(table, gt_sel)
    return Matched(table, state, dt_cat)


def detection_positions(ctx: COCOContext, detections: Detections
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each detection's group category (its category position, 0 when categories are
    pooled), image position and category position in ``ctx`` (int32 when every image and
    category is evaluated and known, else int64); -1 for detections that are not evaluated
    (their image or category is not among the evaluated ones; the category position is -1
    only for a category that is not). Results of a category unknown to the
    ground truth still join a pooled group when ``category_ids`` names them, as pycocotools
    selects results by catIds.
    """
    category_index = derived_or_read(detections, "category_index")  # (maybe narrow: for
    image_index = derived_or_read(detections, "image_index")        # lookups only)
    if (len(category_index) and (ctx.category_pos_of_row >= 0).all()
            and (ctx.image_pos_of_row >= 0).all() and category_index.min() >= 0):
        # Every image and category evaluated and known (the usual case): plain lookups, in
        # int32 where the positions fit (half the bytes to write; the state keeps int32);
        # indexing, not take: take is 9x slower with int8 or int16 indices.
        dt_cat = _narrow(ctx.category_pos_of_row, np.int32)[category_index]
        dt_img = _narrow(ctx.image_pos_of_row, np.int32)[image_index]
        return (dt_cat.copy() if ctx.params.use_categories else np.zeros_like(dt_cat), dt_img,
                dt_cat)
    category_index = category_index.astype(np.int64, copy=False)
    image_index = image_index.astype(np.int64, copy=False)
    dt_cat = np.where(category_index >= 0,
                      ctx.category_pos_of_row[np.maximum(category_index, 0)], -1)
    if not is_derived(detections, "category_ids") and detections.category_ids is not None:
        unknown = category_index < 0    # (derived category ids: none is unknown)
        dt_cat[unknown] = index_in(detections.category_ids[unknown], ctx.category_ids)
    dt_img = ctx.image_pos_of_row[image_index]
    ok = (dt_img >= 0) & (dt_cat >= 0)
    dt_k = np.where(ok, dt_cat if ctx.params.use_categories else 0, -1)
    return dt_k, np.where(ok, dt_img, -1), dt_cat


def state_of_result(ctx: COCOContext, result: COCOResult) -> COCOState:
    """The accumulation state of an :func:`~deteval.evaluate_coco` result, read from its own
    match table (no matching again); ``ctx`` is ``prepare(result.dataset, result.params)``."""
    dt_k, dt_img, _ = detection_positions(ctx, result.detections)
    return state_of(result.matches, dt_k, dt_img, result.detections.scores)


def state_of(table: MatchTable, dt_k: np.ndarray, dt_img: np.ndarray,
             scores: np.ndarray) -> COCOState:
    """The kept detections' rows of a match table.

    Image and category positions are stored as int32 and ``event_at`` as int16 where they
    fit (the state is internal; accumulation reads any integer type): the state is alive
    at the peak of an evaluation's memory.
    """
    every = np.count_nonzero(table.dt_kept) == table.n_detections    # (no positions made)
    n_t, n_gt = len(table.iou_thresholds), table.n_gt
    # The match columns are narrow integers: products in a type that holds them, in place
    # (these temporaries are as long as the match columns).
    wide = np.int32 if len(table.area_ranges) * max(n_gt, n_t) < 2**31 else np.int64
    flat = table.match_area.astype(wide)
    flat *= n_gt
    flat += table.match_gt
    ignored = table.gt_ignore.ravel().take(flat)
    del flat
    if len(table.area_ranges) * n_t <= 2**15:  # every value fits int16: computed in it
        at = table.match_area.astype(np.int16)
        at *= n_t
        at += table.match_threshold
    else:
        at = table.match_area.astype(wide)
        at *= n_t
        at += table.match_threshold
        at = _narrow(at, np.int16)
    if every:     # every detection kept: no copies of the table
        return COCOState(image=_narrow(dt_img, np.int32), category=_narrow(dt_k, np.int32),
                         score=scores, rank=table.dt_rank,
                         out_of_range=table.dt_out_of_range, event_row=table.match_dt,
                         event_at=at, event_ignored=ignored, score_rank=table.dt_score_rank)
    kept = np.flatnonzero(table.dt_kept)
    row_of = np.full(table.n_detections, -1, dtype=np.int64)
    row_of[kept] = np.arange(len(kept))
    return COCOState(image=_narrow(dt_img.take(kept), np.int32),
                     category=_narrow(dt_k.take(kept), np.int32),
                     score=scores.take(kept), rank=table.dt_rank.take(kept),
                     out_of_range=table.dt_out_of_range.take(kept, axis=1),
                     event_row=row_of.take(table.match_dt), event_at=at,
                     event_ignored=ignored, score_rank=table.dt_score_rank.take(kept))


def _narrow(values: np.ndarray, dtype) -> np.ndarray:
    """``values`` (non-negative integers) as ``dtype`` when they fit, else unchanged."""
    if values.dtype == dtype:       # (unchanged either way: no scan)
        return values
    try:
        return small(values, dtype)
    except OverflowError:
        return values


def pair_similarity(p: COCOParams, dataset: Dataset, detections: Detections,
                    gt_perm: np.ndarray, dt_xywh: np.ndarray, gt_xywh: np.ndarray,
                    gt_crowd: np.ndarray, *, threads: int | None = None):
    """The pair similarity of ``p.iou_type``, on GT rows in matcher (permuted) order
    (``threads``: those of segm and boundary's mask IoU; None: ``resolve_threads(None)``)."""
    gt = dataset.gt
    if p.iou_type == "bbox":
        def similarity(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
            # (take: several times faster than fancy indexing of the (n, 4) rows)
            return coco_pair_iou(dt_xywh.take(d_rows, axis=0), gt_xywh.take(g_rows, axis=0),
                                 gt_crowd.take(g_rows))
    elif p.iou_type == "segm":
        similarity = _mask_similarity(p, dataset, detections, gt_perm, gt_crowd, threads)
    elif p.iou_type == "boundary":
        similarity = _boundary_similarity(p, dataset, detections, gt_perm, gt_crowd, threads)
    elif p.iou_type == "keypoints":
        similarity = _oks_similarity(p, dataset, detections, gt_perm, gt_xywh)
    else:
        from ..geometry import PairIoU

        gt_polygons = gt.polygons[gt_perm] if len(gt) else gt.polygons
        polygon_iou = PairIoU(detections.polygons, gt_polygons)   # each polygon prepared once

        def similarity(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
            return polygon_iou(d_rows, g_rows, gt_crowd[g_rows])
    return similarity


def _mask_similarity(p: COCOParams, dataset: Dataset, detections: Detections,
                     gt_perm: np.ndarray, gt_crowd: np.ndarray, threads: int | None = None):
    """Mask IoU per pair with pycocotools' routine, skipping pairs that cannot match.

    The COCO matcher only compares IoUs with the thresholds: a pair whose IoU cannot reach
    the lowest one never matches, whatever its exact value. When the detections carry
    their masks' pixel counts (``mask_area``, set by the readers), such pairs are found
    from areas (and boxes, ``mask_xywh``) alone (:func:`~deteval.masks.mask_iou_bound`),
    get 0, and never reach the RLE routine.
    """
    from ..masks import mask_bound_area, mask_iou_bound, mask_xywh, pair_mask_iou
    from ..masks._capi import c_routines
    from ..masks._runs import mask_runs, mask_strings
    from ..masks.rle import check_run_totals

    gt = dataset.gt
    # Masks not read by a reader: refused before pycocotools' routine could loop forever.
    check_run_totals(detections, "detections")
    check_run_totals(gt, "dataset.gt")
    gt_masks = gt.masks[gt_perm] if len(gt) else gt.masks
    dt_masks = _DetectionMasks(detections)
    gt_category = gt.category_index[gt_perm]
    n_categories = max(len(dataset.categories), 1)
    floor = min((min(t, 1 - 1e-10) for t in p.iou_thresholds), default=0.0)
    dt_area, dt_xywh = detections.mask_area, detections.mask_xywh
    dt_sizes = dt_masks.sizes()     # (a reader's column, or None: read from the dicts)
    # pycocotools' C routines without the GIL (masks.pair_iou): the objects' runs parsed
    # once, for their boxes and every call (None: the Cython wrappers).
    c = c_routines() if len(gt_masks) else None
    parts = None if c is None else mask_strings(gt_masks)
    bounded = floor > 0 and dt_area is not None and len(gt_masks) > 0
    threads = resolve_threads(threads)
    gt_runs = None if parts is None else mask_runs(
        c, *parts, threads=threads,
        boxes=bounded and dt_xywh is not None and gt.mask_xywh is None)
    if bounded:
        gt_area = (gt.mask_area[gt_perm] if gt.mask_area is not None
                   else mask_bound_area(gt_masks))
        gt_xywh = None
        if dt_xywh is not None:
            gt_xywh = (gt.mask_xywh[gt_perm] if gt.mask_xywh is not None
                       else mask_xywh(gt_masks) if gt_runs is None else gt_runs.xywh)

    def similarity(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
        # One C call per (image, category): pairs never cross categories then.
        group = (detections.image_index[d_rows] * n_categories + gt_category[g_rows]
                 if p.use_categories else None)
        if not bounded:
            return pair_mask_iou(dt_masks.for_pairs(d_rows), gt_masks, d_rows, g_rows,
                                 gt_crowd, image_of_dt=detections.image_index, group=group,
                                 dt_sizes=dt_sizes, gt_runs=gt_runs, threads=threads)
        bound = mask_iou_bound(dt_area[d_rows], gt_area[g_rows], gt_crowd[g_rows],
                               None if gt_xywh is None else dt_xywh[d_rows],
                               None if gt_xywh is None else gt_xywh[g_rows])
        values = np.zeros(len(d_rows), dtype=np.float64)
        kept = np.flatnonzero(bound >= floor)
        values[kept] = pair_mask_iou(dt_masks.for_pairs(d_rows[kept]), gt_masks,
                                     d_rows[kept], g_rows[kept], gt_crowd,
                                     image_of_dt=detections.image_index,
                                     group=None if group is None else group[kept],
                                     dt_sizes=dt_sizes, gt_runs=gt_runs,
                                     threads=threads)
        return values

    return similarity


class _DetectionMasks:
    """The detections' masks for pycocotools' routine: the column itself, or, while a
    reader's text has not been made into the column (:func:`~deteval.data.masks_of`), an
    array of its length holding the dicts of the rows asked so far (None elsewhere): only
    the masks of pairs that can match are made."""

    def __init__(self, detections: Detections):
        self.detections = detections
        self.column = None if is_derived(detections, "masks") else detections.masks
        if self.column is None:
            self.some = np.empty(len(detections), dtype=object)
            self.made = np.zeros(len(detections), dtype=bool)

    def of(self, rows: np.ndarray) -> np.ndarray:
        """An array indexed by detection row holding at least the masks of ``rows``."""
        if self.column is not None:
            return self.column
        todo = sorted_unique(rows[~self.made[rows]])
        if len(todo):
            self.some[todo] = masks_of(self.detections, todo)
            self.made[todo] = True      # (after the masks: a reader seeing it finds them)
        return self.some

    def for_pairs(self, rows: np.ndarray):
        """What :func:`~deteval.masks.pair_mask_iou` takes for pairs of detections ``rows``:
        the reader's :class:`~deteval._mask_text.MaskText` when there is one (the routine
        reads the strings from its text; dicts only if it needs them), else :meth:`of`."""
        if self.column is None:
            return self.detections.__dict__["_mask_text"]
        return self.of(rows)

    def sizes(self) -> np.ndarray | None:
        """The masks' ``[h, w]`` (n, 2) when a reader's text holds them (the dicts are then
        made from it, with these sizes), else None."""
        if self.column is not None:
            return None
        return self.detections.__dict__["_mask_text"].sizes


def _boundary_similarity(p: COCOParams, dataset: Dataset, detections: Detections,
                         gt_perm: np.ndarray, gt_crowd: np.ndarray,
                         threads: int | None = None):
    """Boundary IoU per pair, as boundary-iou-api's ``computeBoundaryIoU``.

    ``min(mask IoU, boundary IoU)`` for a non-crowd object, mask IoU (over the detection's
    area) for a crowd region (docs/protocols/boundary.md). The minimum never exceeds the
    mask IoU, so pairs the mask similarity leaves below every threshold (value 0) stay
    there and their boundaries are never computed; each boundary is computed once.
    """
    from ..boundary import mask_boundaries
    from ..masks import pair_mask_iou

    gt = dataset.gt
    gt_masks = gt.masks[gt_perm] if len(gt) else gt.masks
    dt_masks = _DetectionMasks(detections)   # (only the masks of pairs that can match made)
    mask_similarity = _mask_similarity(p, dataset, detections, gt_perm, gt_crowd, threads)
    floor = min((min(t, 1 - 1e-10) for t in p.iou_thresholds), default=0.0)
    dt_boundary = np.empty(len(detections), dtype=object)
    gt_boundary = np.empty(len(gt_masks), dtype=object)
    dt_done = np.zeros(len(detections), dtype=bool)
    gt_done = np.zeros(len(gt_masks), dtype=bool)

    def boundaries(masks, out, done, rows):
        todo = np.unique(rows[~done[rows]])
        if len(todo):
            out[todo] = mask_boundaries(masks[todo].tolist(), p.dilation_ratio)
            done[todo] = True

    def similarity(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
        values = mask_similarity(d_rows, g_rows)
        # Pairs left at 0 by the bound cannot reach a threshold whatever the boundary gives.
        kept = np.flatnonzero(~gt_crowd[g_rows] & (values >= floor) & (values != 0))
        if len(kept) == 0:
            return values
        d_kept, g_kept = d_rows[kept], g_rows[kept]
        boundaries(dt_masks.of(d_kept), dt_boundary, dt_done, d_kept)
        boundaries(gt_masks, gt_boundary, gt_done, g_kept)
        group = None
        if p.use_categories:
            n_categories = max(len(dataset.categories), 1)
            group = (detections.image_index[d_kept] * n_categories
                     + gt.category_index[gt_perm][g_kept])
        boundary_iou = pair_mask_iou(dt_boundary, gt_boundary, d_kept, g_kept, gt_crowd,
                                     image_of_dt=detections.image_index, group=group,
                                     threads=threads)
        values[kept] = np.minimum(values[kept], boundary_iou)
        return values

    return similarity


def _oks_similarity(p: COCOParams, dataset: Dataset, detections: Detections,
                    gt_perm: np.ndarray, gt_xywh: np.ndarray):
    """OKS per pair, with each category's sigmas (docs/protocols/coco.md §5.4).

    Like the mask IoU, a pair that provably scores below the lowest threshold gets 0 without
    being computed (:class:`~deteval.keypoints.OKSTables`); the others are exact.
    """
    from ..keypoints import COCO_PERSON_SIGMAS, OKSTables

    gt = dataset.gt
    if not p.use_categories:
        # pycocotools' computeOks looks the objects up under category -1 when categories
        # are pooled, finds none, and so matches nothing (docs/protocols/coco.md §9).
        return lambda d_rows, g_rows: np.full(len(d_rows), -1.0)
    # (the objects in file order, the common case: the table itself, read in place)
    in_order = len(gt_perm) == len(gt) and np.array_equal(gt_perm, np.arange(len(gt)))
    gt_keypoints = gt.keypoints[gt_perm] if len(gt) and not in_order else gt.keypoints
    gt_category = gt.category_index[gt_perm]
    gt_area = gt.area[gt_perm]
    per_category = dict(p.keypoint_sigmas) if isinstance(p.keypoint_sigmas, tuple) and \
        p.keypoint_sigmas and isinstance(p.keypoint_sigmas[0], tuple) else None
    n_kp = (~np.isnan(gt_keypoints[:, :, 0])).sum(axis=1) if len(gt) else np.zeros(0, int)
    floor = min((min(t, 1 - 1e-10) for t in p.iou_thresholds), default=0.0)
    tables = OKSTables(detections.keypoints, gt_keypoints, gt_xywh, gt_area)
    sigmas_of: dict[int, np.ndarray] = {}

    def sigmas(category: int, k: int) -> np.ndarray:
        if category not in sigmas_of:
            category_id = int(dataset.categories.ids[category])
            if per_category is not None:
                if category_id not in per_category:
                    raise ValueError(f"keypoint_sigmas gives no sigmas for category "
                                     f"{category_id} ({dataset.categories.names[category]})")
                values = np.array(per_category[category_id])
            elif p.keypoint_sigmas is not None:
                values = np.array(p.keypoint_sigmas)
            elif k == len(COCO_PERSON_SIGMAS):
                values = COCO_PERSON_SIGMAS
            else:
                raise ValueError(
                    f"category {category_id} ({dataset.categories.names[category]}) has {k} "
                    "keypoints; the default sigmas are COCO's 17 person sigmas: give "
                    "keypoint_sigmas (a list of K sigmas, or {category_id: sigmas})")
            if len(values) != k:
                raise ValueError(f"keypoint_sigmas (--kpt-sigmas): category {category_id} "
                                 f"({dataset.categories.names[category]}) has {k} keypoints "
                                 f"but {len(values)} sigmas were given")
            sigmas_of[category] = values
        return sigmas_of[category]

    # The sigmas of every category with keypoint objects, checked before any pair is compared
    # (a wrong count is an error with no results too, not only once a pair reaches it).
    counted = gt_category >= 0
    most = np.zeros(len(dataset.categories), np.int64)
    np.maximum.at(most, gt_category[counted], n_kp[counted])
    if p.category_ids is not None:     # only the evaluated categories need sigmas
        most[~np.isin(dataset.categories.ids, np.asarray(p.category_ids))] = 0
    for category in np.flatnonzero(most).tolist():
        sigmas(category, int(most[category]))

    def similarity(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
        out = np.empty(len(d_rows), dtype=np.float64)
        category = gt_category[g_rows]
        for c in sorted_unique(category).tolist():
            sel = np.flatnonzero(category == c)
            k = int(n_kp[g_rows[sel[0]]])
            out[sel] = tables.pair_oks(d_rows[sel], g_rows[sel], sigmas=sigmas(int(c), k),
                                       floor=floor)
        return out

    return similarity


def _unpermute_gt(table: MatchTable, perm: np.ndarray) -> MatchTable:
    """Express a table computed on permuted GT rows in the original row numbering."""
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(len(perm))
    gt_ignore = np.empty_like(table.gt_ignore)
    gt_ignore[:, perm] = table.gt_ignore
    return dataclasses.replace(
        table,
        gt_evaluated=table.gt_evaluated[inverse], gt_crowd=table.gt_crowd[inverse],
        gt_ignore=gt_ignore, match_gt=perm[table.match_gt])


#: Rows of the state accumulated together (whole categories; a larger category is one
#: piece): bounds accumulation's temporaries, and is the unit handed to threads. The pieces
#: depend on the data alone, never on the number of threads.
_ACCUMULATE_ROWS = 1 << 15


def accumulate_stage(ctx: COCOContext, state: COCOState, *, threads: int | None = None):
    """pycocotools' ``accumulate`` on a state (docs/protocols/coco.md §7).

    Categories are accumulated independently of one another: in pieces of whole categories
    of about ``_ACCUMULATE_ROWS`` rows, on up to ``threads`` threads (None: every core), with
    the same numbers for every ``threads``.

    Returns
    -------
    precision : ndarray, shape (T, R, K, A, M)
    recall : ndarray, shape (T, K, A, M)
    scores : ndarray, shape (T, R, K, A, M)
    """
    threads = resolve_threads(threads)
    p, n_k, npig = ctx.params, ctx.n_k, ctx.positives
    n_t, n_r, n_a, n_m = (len(p.iou_thresholds), len(p.recall_thresholds), len(p.area_ranges),
                          len(p.max_detections))
    precision = np.empty((n_t, n_r, n_k, n_a, n_m))
    recall = np.empty((n_t, n_k, n_a, n_m))
    scores = np.empty((n_t, n_r, n_k, n_a, n_m))
    bounds = category_pieces(state.category, n_k, _ACCUMULATE_ROWS)
    if len(bounds) == 2:
        accumulate_into(p, npig, state, (precision, recall, scores), keys=row_keys(state))
        return precision, recall, scores
    # The pieces' rows and events, and the rows' sort keys: three independent passes over
    # the whole state, side by side (see docs/threads.md).
    split, keys = split_by_piece(state.category, state.event_row, bounds, threads=threads,
                                 alongside=lambda: row_keys(state))
    # Each piece writes its rows' positions here (pieces own disjoint rows).
    position = np.empty(len(state), dtype=np.int32 if len(state) < 2**31 else np.int64)

    def accumulate_piece(c: int) -> None:
        lo, hi = int(bounds[c]), int(bounds[c + 1])
        rows, events = split.piece(c)
        ks = slice(lo, hi)
        accumulate_into(p, npig[ks], state, (precision[:, :, ks], recall[:, ks],
                                             scores[:, :, ks]),
                        lo=lo, rows=rows, events=events, position=position, keys=keys)

    # The largest pieces first: the last pieces handed out are the smallest, so the threads
    # end close together. (The order of the pieces changes no number.)
    thread_map(accumulate_piece, np.argsort(-split.sizes(), kind="stable").tolist(), threads)
    return precision, recall, scores


def accumulate_table(table: MatchTable, p: COCOParams, *, n_k: int, dt_k: np.ndarray,
                     dt_img: np.ndarray, scores_in: np.ndarray, gt_k: np.ndarray):
    """pycocotools' ``accumulate`` straight from a match table (no streaming state kept).

    For protocols and adapters that match with their own rule and accumulate as COCO does
    (LVIS, ``deteval.compat``).

    Parameters
    ----------
    table : MatchTable
    p : COCOParams or any object with ``iou_thresholds``, ``recall_thresholds``,
        ``area_ranges`` and ``max_detections`` (sorted)
    n_k : int
        K, the number of category positions.
    dt_k, dt_img : ndarray of int, shape (n_detections,)
        Each detection's category and image position, -1 where not evaluated.
    scores_in : ndarray of float, shape (n_detections,)
    gt_k : ndarray of int, shape (n_gt,)
        Each object's category position, -1 where not evaluated.

    Returns
    -------
    precision, recall, scores
        As :func:`accumulate_stage`.
    """
    n_a = len(p.area_ranges)
    gt_ok = gt_k >= 0
    positives = (np.stack([np.bincount(gt_k[gt_ok & ~table.gt_ignore[a]], minlength=n_k)
                           for a in range(n_a)], axis=1)
                 if n_k else np.zeros((0, n_a), np.int64))
    ctx = SimpleNamespace(params=p, n_k=n_k, positives=positives)
    return accumulate_stage(ctx, state_of(table, dt_k, dt_img, scores_in))
