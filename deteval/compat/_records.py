"""pycocotools' per-image records (``evalImgs``, ``ious``) from a match table, and back.

:func:`eval_imgs` and :func:`ious` build, from one :class:`~deteval.protocols.coco.COCOResult`,
the lists and dicts ``COCOeval.evaluate()`` leaves behind, with the same keys, values, dtypes
and order. They are only called when someone reads those attributes.

:func:`accumulate_records` is ``COCOeval.accumulate()`` over such records (deteval's or
records a caller assembled, as torchvision's ``CocoEvaluator`` does across processes): the
records are turned into flat arrays once, and every (category, area range, max-detections)
setting is computed at once with numpy, number for number as pycocotools' loops compute it.

Dimension letters: ``T`` IoU thresholds, ``R`` recall thresholds, ``S`` the (category, area
range) settings, ``n`` detections.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np

from .._sorting import lexorder
from ..data import index_in
from ..protocols._coco_stages import accumulate_table as _accumulate
from ..protocols._coco_stages import needed_true_positives, pair_similarity
from ..protocols.coco import COCOResult

__all__ = ["accumulate_records", "accumulate_table", "eval_imgs", "ious"]

_EPS = np.spacing(1)


@dataclasses.dataclass(frozen=True)
class _Groups:
    """Group (image position * K + category position) of every evaluated row, -1 elsewhere."""

    n_k: int
    gt: np.ndarray
    gt_order: np.ndarray     # GT rows sorted by group, then by their order inside the group
    dt: np.ndarray
    dt_kept: np.ndarray      # kept detection rows sorted by group, then rank
    gt_k: np.ndarray         # category position (0 when pooled) of evaluated rows, else -1
    dt_k: np.ndarray
    dt_img: np.ndarray       # image position of evaluated detections, else -1


def _groups(result: COCOResult, *, orders: bool = True) -> _Groups:
    """Group keys of every row; with ``orders``, also the rows sorted as the records list them."""
    p, dataset, detections, table = result.params, result.dataset, result.detections, result.matches
    image_ids = np.asarray(p.image_ids, dtype=np.int64)
    category_ids = np.asarray(p.category_ids, dtype=np.int64)
    image_pos = index_in(dataset.images.ids, image_ids)
    category_pos = index_in(dataset.categories.ids, category_ids)
    n_k = len(category_ids) if p.use_categories else 1
    gt = dataset.gt
    gt_cat = category_pos[gt.category_index]
    gt_group = np.where(table.gt_evaluated,
                        image_pos[gt.image_index] * n_k + (gt_cat if p.use_categories else 0), -1)
    dt_cat = np.where(detections.category_index >= 0,
                      category_pos[np.maximum(detections.category_index, 0)], -1)
    if detections.category_ids is not None:   # unknown categories named by category_ids
        unknown = detections.category_index < 0
        dt_cat[unknown] = index_in(detections.category_ids[unknown], category_ids)
    evaluated = table.dt_rank >= 0
    dt_k = np.where(evaluated, np.maximum(dt_cat, 0) if p.use_categories else 0, -1)
    dt_img = np.where(evaluated, image_pos[detections.image_index], -1)
    dt_group = np.where(evaluated, dt_img * n_k + dt_k, -1)
    gt_k = np.where(table.gt_evaluated, gt_cat if p.use_categories else 0, -1)
    if not orders:
        return _Groups(n_k, gt_group, gt_group[:0], dt_group, dt_group[:0], gt_k, dt_k, dt_img)
    # Inside a group pycocotools lists GT in file order; pooled, category by category.
    rows = np.flatnonzero(gt_group >= 0)
    inner = np.zeros(len(rows), np.int64) if p.use_categories else gt_cat[rows]
    gt_order = rows[lexorder([gt_group[rows], inner])]
    kept = np.flatnonzero(table.dt_kept)
    dt_kept = kept[lexorder([dt_group[kept], table.dt_rank[kept]])]
    return _Groups(n_k, gt_group, gt_order, dt_group, dt_kept, gt_k, dt_k, dt_img)


def accumulate_table(result: COCOResult, recall_thresholds: tuple) -> dict[str, np.ndarray]:
    """deteval's accumulation of ``result``'s match table at ``recall_thresholds``.

    When ``evaluate()`` matched a few detections against many settings (a batch of a
    training loop's evaluation), it accumulated at a single recall threshold (the match
    table does not depend on them), not to pay for an accumulation nobody reads;
    ``accumulate()`` then calls this with the real ones.
    """
    groups = _groups(result, orders=False)
    p = dataclasses.replace(result.params, recall_thresholds=recall_thresholds)
    precision, recall, scores = _accumulate(
        result.matches, p, n_k=groups.n_k, dt_k=groups.dt_k, dt_img=groups.dt_img,
        scores_in=result.detections.scores, gt_k=groups.gt_k)
    return {"precision": precision, "recall": recall, "scores": scores}


def _runs(sorted_groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Boundaries (n_groups + 1,) of each group's run in a sorted group column."""
    return np.searchsorted(sorted_groups, np.arange(n_groups + 1), side="left")


def eval_imgs(result: COCOResult, *, image_ids: list, category_ids: list, area_ranges: list,
              max_det: int, numpy_scores: bool = False) -> list:
    """``COCOeval.evalImgs``: one record or None per (category, area range, image).

    Parameters
    ----------
    result : COCOResult
        The evaluation (its match table, ground truth and detections).
    image_ids, category_ids, area_ranges : list
        ``params.imgIds``, ``params.catIds`` (``[-1]`` when categories are pooled) and
        ``params.areaRng`` as ``evaluate()`` left them; their elements are put in the records.
    max_det : int
        ``params.maxDets[-1]``.
    numpy_scores : bool
        Scores as numpy floats (results loaded from an array) rather than Python floats.

    Returns
    -------
    list, length K * A * I
        None where the image has neither ground truth nor detections of the category.
    """
    table, dataset, detections = result.matches, result.dataset, result.detections
    groups = _groups(result)
    n_img, n_k, n_a = len(image_ids), groups.n_k, len(area_ranges)
    n_groups = n_img * n_k
    present = np.zeros(n_groups, dtype=bool)
    present[groups.gt[groups.gt >= 0]] = True
    present[groups.dt[groups.dt >= 0]] = True
    out: list = [None] * (n_k * n_a * n_img)
    dt_rows = groups.dt_kept
    dt_bounds = _runs(groups.dt[dt_rows], n_groups)
    dt_ids = detections.ids.take(dt_rows).tolist()
    scores = detections.scores.take(dt_rows)
    scores = list(scores) if numpy_scores else scores.tolist()
    gt_ids_f = np.r_[dataset.gt.ids.astype(np.float64), 0.0]    # row -1: unmatched, 0
    dt_ids_f = np.r_[detections.ids.astype(np.float64), 0.0]
    present_groups = np.flatnonzero(present).tolist()
    for a in range(n_a):
        ignore = table.gt_ignore[a]
        rows = groups.gt_order
        rows = rows[lexorder([groups.gt[rows], ignore[rows]])]   # stable: ignored last
        gt_bounds = _runs(groups.gt[rows], n_groups)
        gt_ids = dataset.gt.ids.take(rows).tolist()
        gt_ignore = ignore.take(rows).astype(np.int64)
        dm = table.detection_matches(a).take(dt_rows, axis=1)
        dt_matches = gt_ids_f.take(dm)
        gm = table.gt_matches(a).take(rows, axis=1)
        gt_matches = dt_ids_f.take(gm)
        # Ignored: matched to an ignored object, or unmatched and outside the area range.
        dt_ignore = np.where(dm >= 0, np.r_[table.gt_ignore[a], False].take(dm),
                             table.dt_out_of_range[a].take(dt_rows))
        area = area_ranges[a]
        for g in present_groups:
            i, k = divmod(g, n_k)
            d0, d1 = int(dt_bounds[g]), int(dt_bounds[g + 1])
            g0, g1 = int(gt_bounds[g]), int(gt_bounds[g + 1])
            out[(k * n_a + a) * n_img + i] = {
                "image_id": image_ids[i],
                "category_id": category_ids[k],
                "aRng": area,
                "maxDet": max_det,
                "dtIds": dt_ids[d0:d1],
                "gtIds": gt_ids[g0:g1],
                "dtMatches": dt_matches[:, d0:d1],
                "gtMatches": gt_matches[:, g0:g1],
                "dtScores": scores[d0:d1],
                "gtIgnore": gt_ignore[g0:g1] if g1 > g0 else np.array([]),
                "dtIgnore": dt_ignore[:, d0:d1],
            }
    return out


def ious(result: COCOResult, *, image_ids: list, category_ids: list) -> dict:
    """``COCOeval.ious``: ``{(imgId, catId): (D, G) array or []}`` in pycocotools' order.

    D is the group's detections by descending score, at most ``maxDets[-1]``; G its ground
    truth in file order. ``[]`` where either side is empty (and, for keypoints with pooled
    categories, everywhere: pycocotools finds no objects under category -1).
    """
    p, dataset, detections = result.params, result.dataset, result.detections
    groups = _groups(result)
    n_img, n_k = len(image_ids), groups.n_k
    n_groups = n_img * n_k
    dt_rows, gt_rows = groups.dt_kept, groups.gt_order
    dt_bounds = _runs(groups.dt[dt_rows], n_groups)
    gt_bounds = _runs(groups.gt[gt_rows], n_groups)
    n_dt, n_gt = np.diff(dt_bounds), np.diff(gt_bounds)
    paired = np.flatnonzero((n_dt > 0) & (n_gt > 0))
    if p.iou_type == "keypoints" and not p.use_categories:
        paired = paired[:0]
    # All (detection, object) pairs of each paired group, detection-major.
    sizes = n_dt[paired] * n_gt[paired]
    pair_group = np.repeat(paired, sizes)
    offset = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    cols = n_gt[pair_group]
    pair_dt = dt_rows[dt_bounds[pair_group] + offset // np.maximum(cols, 1)]
    pair_gt = gt_rows[gt_bounds[pair_group] + offset % np.maximum(cols, 1)]
    values = np.zeros(0)
    if len(pair_dt):
        # The lowest threshold 0 keeps every mask pair from being skipped: exact values.
        exact = dataclasses.replace(p, iou_thresholds=(0.0,))
        identity = np.arange(len(dataset.gt))
        similarity = pair_similarity(exact, dataset, detections, identity, detections.as_xywh(),
                                     dataset.gt.as_xywh(), dataset.gt.iscrowd)
        values = similarity(pair_dt, pair_gt)
    matrices = dict.fromkeys(paired.tolist())
    starts = np.cumsum(sizes) - sizes
    for g, start, nd, ng in zip(paired.tolist(), starts.tolist(), n_dt[paired].tolist(),
                                n_gt[paired].tolist()):
        matrices[g] = values[start:start + nd * ng].reshape(nd, ng)
    out = {}
    for i, image_id in enumerate(image_ids):
        for k, category_id in enumerate(category_ids):
            value = matrices.get(i * n_k + k)
            out[image_id, category_id] = [] if value is None else value
    return out


# ---------------------------------------------------------------------------------------------
# accumulate() over records
# ---------------------------------------------------------------------------------------------


def _selection(p: Any, pe: Any, n_records: int):
    """pycocotools' index lists: which settings of ``p`` were evaluated under ``pe``."""
    set_k = set(pe.catIds if pe.useCats else [-1])
    set_a = set(map(tuple, pe.areaRng))
    set_m = set(pe.maxDets)
    set_i = set(pe.imgIds)
    k_list = [n for n, k in enumerate(p.catIds) if k in set_k]
    m_list = [m for m in p.maxDets if m in set_m]
    a_list = [n for n, a in enumerate(map(tuple, p.areaRng)) if a in set_a]
    i_list = [n for n, i in enumerate(p.imgIds) if i in set_i]
    n_i0, n_a0 = len(pe.imgIds), len(pe.areaRng)
    index = (np.asarray(k_list, np.int64)[:, None, None] * (n_a0 * n_i0)
             + np.asarray(a_list, np.int64)[None, :, None] * n_i0
             + np.asarray(i_list, np.int64)[None, None, :])
    if index.size and index.max() >= n_records:
        raise IndexError(
            f"evalImgs has {n_records} records but params select record {int(index.max())} "
            f"(categories x area ranges x images of the evaluated params, {len(set_k)} x "
            f"{n_a0} x {n_i0}): evalImgs and _paramsEval do not belong together")
    return index, m_list


def _flatten(records: list, index: np.ndarray, n_t: int):
    """The records at ``index`` (S, I) as flat arrays, in (setting, image) order.

    Each field is gathered over all records with one comprehension and one numpy call.
    """
    n_s, n_i = index.shape
    flat = index.ravel().tolist()
    picked = [records[e] for e in flat]
    present = np.fromiter((r is not None for r in picked), dtype=bool, count=len(picked))
    chosen = list(itertools.compress(picked, present.tolist()))
    setting_of = np.repeat(np.arange(n_s), n_i)[present]
    has_record = np.bincount(setting_of, minlength=n_s) > 0
    gt_ignore = [np.asarray(r["gtIgnore"]).ravel() for r in chosen]
    gt_lengths = np.fromiter(map(len, gt_ignore), dtype=np.int64, count=len(chosen))
    positive = (np.concatenate(gt_ignore) == 0) if len(chosen) else np.zeros(0, bool)
    npig = np.bincount(np.repeat(setting_of, gt_lengths), weights=positive,
                       minlength=n_s).astype(np.int64)
    dt_scores = [r["dtScores"] for r in chosen]
    lengths = np.fromiter(map(len, dt_scores), dtype=np.int64, count=len(chosen))
    n = int(lengths.sum())
    scores = np.fromiter(itertools.chain.from_iterable(dt_scores), dtype=np.float64, count=n)
    if n:
        matched = np.concatenate([r["dtMatches"] for r in chosen], axis=1) != 0
        ignored = np.concatenate([r["dtIgnore"] for r in chosen], axis=1) != 0
    else:
        matched = ignored = np.zeros((n_t, 0), bool)
    setting = np.repeat(setting_of, lengths)
    record = np.repeat(np.arange(len(chosen)), lengths)
    position = np.arange(n) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return has_record, npig, scores, matched, ignored, setting, record, position


def accumulate_records(records: list, p: Any, pe: Any) -> dict[str, np.ndarray]:
    """``COCOeval.accumulate(p)`` over ``records`` evaluated under params ``pe``.

    Parameters
    ----------
    records : list
        ``evalImgs``: dicts with ``dtScores``, ``dtMatches``, ``dtIgnore``, ``gtIgnore`` (or
        None), K0 * A0 * I0 of them in (category, area range, image) order of ``pe``.
    p, pe : Params
        The params to accumulate for (``catIds`` already ``[-1]`` when categories are
        pooled) and those of the evaluation (``_paramsEval``).

    Returns
    -------
    dict
        ``precision`` (T, R, K, A, M), ``recall`` (T, K, A, M), ``scores`` (T, R, K, A, M),
        -1 where undefined.
    """
    n_t, n_r = len(p.iouThrs), len(p.recThrs)
    n_k = len(p.catIds) if p.useCats else 1
    n_a, n_m = len(p.areaRng), len(p.maxDets)
    precision = -np.ones((n_t, n_r, n_k, n_a, n_m))
    recall = -np.ones((n_t, n_k, n_a, n_m))
    scores_out = -np.ones((n_t, n_r, n_k, n_a, n_m))
    index, m_list = _selection(p, pe, len(records))
    n_ks, n_as, n_is = index.shape
    index = index.reshape(n_ks * n_as, n_is)
    first = next((r for r in records if r is not None), None)
    n_t0 = np.asarray(first["dtMatches"]).shape[0] if first is not None else n_t
    if n_t0 > n_t:
        raise IndexError(f"evalImgs' records hold {n_t0} IoU thresholds but params.iouThrs "
                         f"has {n_t}")
    has_record, npig, score, matched, ignored, setting, record, position = _flatten(
        records, index, n_t0)
    order = np.lexsort((position, record, -score, setting))
    valid = has_record & (npig > 0)
    need = needed_true_positives(npig, np.asarray(p.recThrs, dtype=np.float64))   # (S, R)
    for m, max_det in enumerate(m_list):
        sel = order[position[order] < max_det]
        q, ss, rc = _precision_at_recall(sel, setting, score, matched, ignored, npig, need,
                                         len(index))
        shape = (n_t0, n_ks, n_as)
        recall[:n_t0, :n_ks, :n_as, m] = np.where(valid, rc, -1.0).reshape(shape)
        q[:, ~valid], ss[:, ~valid] = -1.0, -1.0
        precision[:n_t0, :, :n_ks, :n_as, m] = q.reshape(*shape, -1).transpose(0, 3, 1, 2)
        scores_out[:n_t0, :, :n_ks, :n_as, m] = ss.reshape(*shape, -1).transpose(0, 3, 1, 2)
    return {"precision": precision, "recall": recall, "scores": scores_out}


def _precision_at_recall(sel, setting, score, matched, ignored, npig, need, n_s):
    """Recall (T, S), precision and score (T, S, R) of the detections ``sel`` (sorted)."""
    n_t0, n = matched.shape[0], len(sel)
    seg = setting.take(sel)
    bounds = _runs(seg, n_s)
    start, end = bounds[:-1], bounds[1:]
    n_det = end - start
    tps = matched[:, sel] & ~ignored[:, sel]
    fps = ~matched[:, sel] & ~ignored[:, sel]
    tp_prefix = np.zeros((n_t0, n + 1), dtype=np.int64)
    np.cumsum(tps, axis=1, out=tp_prefix[:, 1:])
    fp_prefix = np.zeros((n_t0, n + 1), dtype=np.int64)
    np.cumsum(fps, axis=1, out=fp_prefix[:, 1:])
    col_start = start.take(seg)
    tp = (tp_prefix[:, 1:] - tp_prefix[:, col_start]).astype(np.float64)
    fp = (fp_prefix[:, 1:] - fp_prefix[:, col_start]).astype(np.float64)
    pr = tp / (fp + tp + _EPS)                                          # (T, n)
    n_tp = tp_prefix[:, end] - tp_prefix[:, start]                      # (T, S)
    with np.errstate(divide="ignore", invalid="ignore"):
        last = np.maximum(end - 1, 0)
        rc = np.where(n_det > 0, tp[:, last] / npig, 0.0) if n else np.zeros((n_t0, n_s))
    # The recall point of threshold r is the need-th true positive (the first detection when
    # need is 0); pycocotools stops at the first threshold not reached.
    events = np.flatnonzero(tps.ravel())
    first_event = (np.cumsum(n_tp.ravel()) - n_tp.ravel()).reshape(n_t0, n_s)
    need_b = np.broadcast_to(need[None], (n_t0, *need.shape))           # (T, S, R)
    reached = np.where(need_b == 0, (n_det > 0)[None, :, None], need_b <= n_tp[:, :, None])
    reached = np.logical_and.accumulate(reached, axis=2)
    t_idx, s_idx, r_idx = np.nonzero(reached)
    k_need = need_b[t_idx, s_idx, r_idx]
    at_event = events.take(first_event[t_idx, s_idx] + np.maximum(k_need - 1, 0),
                           mode="clip") if len(events) else np.zeros(len(t_idx), np.int64)
    flat_lo = np.where(k_need == 0, t_idx * n + start[s_idx], at_event)
    flat_hi = t_idx * n + end[s_idx]
    q = np.zeros((n_t0, n_s, need.shape[1]))
    ss = np.zeros_like(q)
    if len(t_idx):
        cut = np.empty(2 * len(flat_lo), dtype=np.int64)
        cut[0::2], cut[1::2] = flat_lo, flat_hi
        q[t_idx, s_idx, r_idx] = np.maximum.reduceat(np.r_[pr.ravel(), 0.0], cut)[0::2]
        ss[t_idx, s_idx, r_idx] = score.take(sel.take(flat_lo - t_idx * n))
    return q, ss, rc
