"""The greedy, score-ordered matcher over a whole dataset, producing the match table
(:class:`MatchTable`, defined in :mod:`deteval.match_table` and imported from here).

Every number deteval reports is computed from one :class:`MatchTable`, so AP, PR curves,
confusion matrices and drawings cannot disagree.

The rule is pycocotools' ``evaluateImg`` (docs/protocols/coco.md §6), applied to every group of
detections and ground truth that may match each other (one image and one category, or one
image when categories are ignored):

* detections are visited by descending score (ties: the caller's tie order), only the top
  ``max_detections`` of each group take part;
* for each IoU threshold ``t`` a detection takes, among the ground truth it overlaps with
  IoU >= ``min(t, 1 - 1e-10)``, the one with the highest IoU that is still free, preferring
  objects that are not ignored; on equal IoU the later object (in file order) wins;
* crowd objects stay free after a match (they absorb any number of detections);
* a detection matched to an ignored object is ignored; an unmatched detection whose area is
  outside the area range is ignored; other unmatched detections are false positives.

Implementation: all candidate pairs (IoU at or above the lowest threshold) of all groups are
processed at once, in rounds; round ``r`` takes the ``r``-th detection of every group that
still has candidates, vectorised over groups, IoU thresholds and area ranges. The state
carried between rounds is which object is taken at each (area range, threshold). A group in
which each detection's candidates are, in every area range, all ignored or all not, makes
the same choices in every range (the preference for objects that are not ignored never
decides), so it is matched for the first range only and its matches are copied; in COCO
data that is most groups. In a round, each detection takes its object with one running
maximum over the round's pairs, each pair packed as (detection, preference if allowed,
position) in one int64 (:func:`_last_best`). The ranks and the pairs, then the ranks in
groups and the rounds, run side by side on ``threads`` threads when no group holds more
than ``max_detections`` detections (docs/threads.md §3).

``rule="voc"`` applies the Pascal VOC rule instead (devkit ``VOCevaldet.m``, detectron2
``voc_eval``; docs/protocols/voc.md):

* detections are visited by descending score; equal scores keep the caller's tie order
  (the devkit's MATLAB ``sort`` is stable);
* each detection looks at *all* objects of its group, taken and ignored ones included, and
  picks the one with the highest IoU (the first in file order on equal IoU); only if that
  IoU reaches the threshold (``>=``, or ``>`` with ``strict=True``) is it considered further;
* if that object is ignored (VOC *difficult*) the detection is ignored and nothing is marked;
  if it is already taken the detection is a false positive (a duplicate), even when another
  object it overlaps enough is still free; otherwise it is a true positive and takes it;
* a detection whose best IoU fails the threshold is a false positive.

Because the chosen object never depends on what is taken, the VOC rule needs no rounds: at
each threshold the first passing detection (by score) on each object is its true positive
and the later ones are duplicates, which is computed for all groups at once.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from ._arrays import frozen
from ._sorting import descending_rank, lexorder
from ._threads import resolve_threads, thread_map
from .match_table import (
    FN,
    FP,
    IGNORED,
    MATCH_COLUMN_TYPES,  # noqa: F401 (named from deteval.matching before the split: kept)
    NOT_EVALUATED,
    TP,
    MatchTable,
    narrow_match_column,
)

__all__ = ["MatchTable", "match_detections", "TP", "FP", "IGNORED", "NOT_EVALUATED", "FN"]

_IOU_CAP = 1 - 1e-10


def _group_runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start index and length of each run of equal values in a sorted key array."""
    if len(sorted_keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    lengths = np.diff(np.r_[starts, len(sorted_keys)])
    return starts, lengths


def rank_within_groups(sorted_groups: np.ndarray) -> np.ndarray:
    """0-based position of each element inside its run of equal (sorted) group keys."""
    starts, lengths = _group_runs(sorted_groups)
    return np.arange(len(sorted_groups)) - np.repeat(starts, lengths)


#: Pairs whose similarity is computed at once; bounds the matcher's peak memory (about
#: 200 bytes a pair for box IoU) on crowded datasets, and is the unit handed to threads.
#: The chunks are the same whatever the number of threads.
_PAIR_CHUNK = 1 << 16


def _candidate_pairs(dt_group, dt_kept_rows, gt_group, similarity, min_threshold, threads=1):
    """All (detection, GT) pairs of the same group with similarity >= ``min_threshold``.

    Returns detection rows, GT rows (GT in file order inside a group) and similarities.
    The similarity of each chunk of pairs is computed on up to ``threads`` threads.
    """
    chunk, bounds = _pair_chunks(dt_group, dt_kept_rows, gt_group, similarity, min_threshold)
    return _joined_pairs(thread_map(chunk, bounds, threads))


def _pair_chunks(dt_group, dt_kept_rows, gt_group, similarity, min_threshold):
    """The candidate pairs as independent chunks: a function computing one chunk's pairs
    (detection rows, GT rows, similarities >= ``min_threshold``) and the chunks' bounds, in
    order (their pairs joined in that order are :func:`_candidate_pairs`'); ``dt_kept_rows``
    None: every row)."""
    gt_rows = np.flatnonzero(gt_group >= 0)
    gt_rows = gt_rows[lexorder([gt_group[gt_rows]])]
    # (every row kept, the usual case: the groups themselves, no gathered copy)
    every = dt_kept_rows is None or len(dt_kept_rows) == len(dt_group)
    group_of_dt = dt_group if every else dt_group[dt_kept_rows]
    n_groups = int(max(gt_group.max(initial=-1), group_of_dt.max(initial=-1))) + 1
    # (per group and per kept detection, alive through the chunks: int32 where the objects
    # fit; each chunk looks up its detections' first objects itself)
    small = np.int32 if len(gt_group) < 2**31 else np.int64
    count_of_group = np.bincount(gt_group[gt_rows], minlength=n_groups).astype(small)
    first_of_group = np.cumsum(count_of_group, dtype=small)
    first_of_group -= count_of_group
    count = count_of_group.take(group_of_dt)
    most = int(count_of_group.max(initial=0))      # (a detection's pairs at most)
    del count_of_group
    # Split the detections where the running pair count crosses a multiple of the step: the
    # fewest chunks of at most _PAIR_CHUNK pairs, of equal sizes (107k pairs: 54k + 54k, not
    # 65.5k + 42k, so that two threads end together). Cut by the pair count alone.
    wide = np.int32 if len(count) * most < 2**31 else np.int64
    ends = np.cumsum(count, dtype=wide)
    total = int(ends[-1]) if len(ends) else 0
    step = -(-total // max(-(-total // _PAIR_CHUNK), 1))
    cuts = np.searchsorted(ends, np.arange(step, total, max(step, 1), dtype=wide), side="right")
    del ends

    def chunk(bounds):
        lo, hi = bounds
        c = count[lo:hi]
        pair_dt = np.repeat(np.arange(lo, hi) if dt_kept_rows is None else dt_kept_rows[lo:hi],
                            c)
        # each pair's position in gt_rows: its detection's group's first object, plus its
        # place among the detection's pairs (one repeat of the difference, then + arange)
        shift = first_of_group.take(group_of_dt[lo:hi]).astype(np.int64)
        shift -= np.cumsum(c, dtype=np.int64)
        shift += c
        offsets = np.repeat(shift, c)
        offsets += np.arange(len(offsets))
        pair_gt = gt_rows.take(offsets)
        del offsets, shift
        values = np.asarray(similarity(pair_dt, pair_gt), dtype=np.float64)
        keep = values >= min_threshold
        return pair_dt[keep], pair_gt[keep], values[keep]

    return chunk, list(zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(count)].tolist()))


def _joined_pairs(parts: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunks' (detection rows, GT rows, similarities) joined in order."""
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return tuple(np.concatenate(column) for column in zip(*parts))


def _shared_choice(pair_group: np.ndarray, dt_starts: np.ndarray, pair_gt: np.ndarray,
                   gt_ignored: np.ndarray) -> np.ndarray:
    """Per pair: whether its group chooses alike in every area range (see the matcher).

    Pairs come detection by detection (``dt_starts``); a group qualifies when, for every
    one of its detections and every range, the candidates are all ignored or all not.
    """
    if len(pair_gt) == 0:
        return np.ones(0, dtype=bool)
    # Ignored candidates per detection, range by range, from running counts (a reduction
    # per detection costs a call per detection of one or two pairs).
    bounds = np.r_[dt_starts, len(pair_gt)]
    lengths = np.diff(bounds)
    running = np.zeros(len(pair_gt) + 1, dtype=np.int64)
    mixed = np.zeros(len(dt_starts), dtype=bool)
    for flags in gt_ignored:
        np.cumsum(flags.take(pair_gt), out=running[1:])
        ignored = running.take(bounds[1:])
        ignored -= running.take(bounds[:-1])
        mixed |= (ignored > 0) & (ignored < lengths)
    if not mixed.any():
        return np.ones(len(pair_gt), dtype=bool)
    in_mixed = np.zeros(int(pair_group.max()) + 1, dtype=bool)
    in_mixed[pair_group[dt_starts[mixed]]] = True
    return ~in_mixed.take(pair_group)


def _last_argmax(allowed, values, starts, lengths, positions):
    """Per segment: the last position with the maximal value among ``allowed`` (-1 if none).

    ``values`` are floats, or int64 keys above the int64 minimum."""
    low = -np.inf if values.dtype.kind == "f" else np.iinfo(np.int64).min
    keyed = np.where(allowed, values, low)
    best = np.maximum.reduceat(keyed, starts, axis=-1)
    at_best = allowed & (keyed == np.repeat(best, lengths, axis=-1))
    return np.maximum.reduceat(np.where(at_best, positions, -1), starts, axis=-1)


def match_detections(
    *,
    dt_group: np.ndarray,
    dt_scores: np.ndarray,
    dt_area: np.ndarray,
    gt_group: np.ndarray,
    gt_crowd: np.ndarray,
    gt_ignore: np.ndarray,
    gt_area: np.ndarray,
    similarity: Callable[[np.ndarray, np.ndarray], np.ndarray],
    iou_thresholds: np.ndarray,
    area_ranges: np.ndarray,
    max_detections: int,
    dt_tie_key: np.ndarray | None = None,
    rule: str = "coco",
    strict: bool = False,
    threads: int | None = 1,
) -> MatchTable:
    """Match detections to ground truth, greedily by score, in every group at once.

    Parameters
    ----------
    dt_group : ndarray of int, shape (n_dt,)
        Group key of each detection (for example ``image * K + category``); -1 for
        detections that are not evaluated.
    dt_scores : ndarray of float, shape (n_dt,)
    dt_area : ndarray of float, shape (n_dt,)
        Used to ignore unmatched detections outside an area range.
    gt_group : ndarray of int, shape (n_gt,)
        Group key of each GT object; -1 for objects that are not evaluated. Inside a group
        the GT row order is the order used to break IoU ties (later wins).
    gt_crowd, gt_ignore : ndarray of bool, shape (n_gt,)
    gt_area : ndarray of float, shape (n_gt,)
    similarity : callable
        ``similarity(dt_rows, gt_rows) -> values`` for aligned row arrays (IoU, OKS, ...).
    iou_thresholds : ndarray, shape (T,)
    area_ranges : ndarray, shape (A, 2)
        Inclusive bounds; objects outside a range are ignored for that range.
    max_detections : int
        Only the top-scoring ``max_detections`` of each group are matched.
    dt_tie_key : ndarray of non-negative int, shape (n_dt,), optional
        Breaks equal scores inside a group (smaller first) before the input order does.
        By default equal scores keep their input order, as pycocotools' stable sort does.
    rule : {"coco", "voc"}
        ``"coco"``: pycocotools' ``evaluateImg``. ``"voc"``: the Pascal VOC rule (see the
        module documentation): each detection takes its highest-IoU object or nothing, and
        ``gt_crowd`` changes nothing (every ignored object absorbs any number of detections).
        Objects it does not overlap (IoU 0) never match, and thresholds are not capped at
        ``1 - 1e-10``.
    strict : bool
        VOC rule only: accept an IoU strictly above the threshold (detectron2) instead of at
        or above it (the devkit).
    threads : int or None
        Threads computing ``similarity`` on chunks of candidate pairs at once (None: every
        core), and, with the COCO rule, the ranks beside them. Give more than 1 only with a
        ``similarity`` that may run on several threads at a time. The table is the same
        for every value.

    Returns
    -------
    MatchTable
        With ``dt_best_gt`` and ``dt_best_iou`` filled in by the VOC rule.

    Raises
    ------
    ValueError
        An unknown ``rule``, or ``strict=True`` with the COCO rule.

    Examples
    --------
    One image, one category: two detections compete for one object.

    >>> import numpy as np
    >>> table = match_detections(
    ...     dt_group=np.array([0, 0]), dt_scores=np.array([0.5, 0.9]),
    ...     dt_area=np.array([100.0, 100.0]),
    ...     gt_group=np.array([0]), gt_crowd=np.array([False]), gt_ignore=np.array([False]),
    ...     gt_area=np.array([100.0]), similarity=lambda d, g: np.array([0.8, 0.7])[d],
    ...     iou_thresholds=np.array([0.5, 0.75]), area_ranges=np.array([[0, 1e10]]),
    ...     max_detections=100)
    >>> table.detection_status().tolist()   # rows: thresholds; columns: detections
    [[0, 1], [1, 0]]

    The VOC rule: detection 1 (score 0.9) takes object 0, its best. Detection 0 also
    overlaps object 0 best, so it is a duplicate although object 1 is free for it.

    >>> ious = np.array([[0.8, 0.6], [0.9, 0.0]])
    >>> table = match_detections(
    ...     dt_group=np.array([0, 0]), dt_scores=np.array([0.5, 0.9]),
    ...     dt_area=np.array([100.0, 100.0]), gt_group=np.array([0, 0]),
    ...     gt_crowd=np.array([False, False]), gt_ignore=np.array([False, False]),
    ...     gt_area=np.array([100.0, 100.0]), similarity=lambda d, g: ious[d, g],
    ...     iou_thresholds=np.array([0.5]), area_ranges=np.array([[0, 1e10]]),
    ...     max_detections=100, rule="voc")
    >>> table.detection_status().tolist(), table.dt_best_gt.tolist()
    ([[0, 1]], [0, 0])
    """
    return match_table(
        dt_group=dt_group, dt_scores=dt_scores, dt_area_of=lambda: dt_area, gt_group=gt_group,
        gt_crowd=gt_crowd, gt_ignore=gt_ignore, gt_area=gt_area, similarity=similarity,
        iou_thresholds=iou_thresholds, area_ranges=area_ranges, max_detections=max_detections,
        dt_tie_key=dt_tie_key, rule=rule, strict=strict, threads=threads)


def match_table(*, dt_group, dt_scores, dt_area_of, gt_group, gt_crowd, gt_ignore, gt_area,
                similarity, iou_thresholds, area_ranges, max_detections, dt_tie_key=None,
                rule="coco", strict=False, threads=1) -> MatchTable:
    """:func:`match_detections` with the detections' areas given by a function,
    ``dt_area_of()``: with the COCO rule it is called (and the areas compared with the
    ranges) beside the greedy rounds, not before the matching starts (the COCO stages
    derive the areas of a results file, ``w * h``, there: docs/threads.md §3)."""
    if rule not in ("coco", "voc"):
        raise ValueError(f"rule must be 'coco' or 'voc'; got {rule!r}")
    if strict and rule != "voc":
        raise ValueError("strict=True is a VOC-rule option (detectron2's IoU > threshold); "
                         "the COCO rule always accepts IoU >= threshold")
    threads = resolve_threads(threads)
    dt_group = np.asarray(dt_group, dtype=np.int64)
    gt_group = np.asarray(gt_group, dtype=np.int64)
    thresholds = np.asarray(iou_thresholds, dtype=np.float64)
    area_ranges = np.asarray(area_ranges, dtype=np.float64).reshape(-1, 2)

    lo, hi = area_ranges[:, 0:1], area_ranges[:, 1:2]
    gt_evaluated = gt_group >= 0
    gt_ignored = gt_ignore[None, :] | (gt_area[None, :] < lo) | (gt_area[None, :] > hi)

    # (allocated here, on the calling thread, though filled on another: a long-lived array
    # left in a helper thread's malloc arena raised the peak RSS by a few MB)
    dt_out = np.empty((len(area_ranges), len(dt_group)), dtype=bool)

    def out_of_range() -> np.ndarray:
        dt_area = dt_area_of()
        np.less(dt_area[None, :], lo, out=dt_out)
        for flags, top in zip(dt_out, hi[:, 0]):     # (one range at a time: a temporary
            flags |= dt_area > top                   # of n flags, not of A * n)
        return dt_out

    if rule == "voc":
        dt_out = out_of_range()
        dt_rank, dt_score_rank = _rank_in_groups(dt_group, dt_scores, dt_tie_key)
        dt_kept = (dt_rank >= 0) & (dt_rank < max_detections)
        return _match_voc(
            dt_group=dt_group, dt_rank=dt_rank, dt_kept=dt_kept, dt_score_rank=dt_score_rank,
            dt_out=dt_out, kept_rows=np.flatnonzero(dt_kept), gt_group=gt_group,
            gt_crowd=gt_crowd, gt_ignored=gt_ignored & gt_evaluated, similarity=similarity,
            thresholds=thresholds, area_ranges=area_ranges, strict=bool(strict), threads=threads)

    dt_rank, dt_score_rank, dt_kept, (found_a, found_t, found_d, found_g), dt_out = _match_coco(
        dt_group=dt_group, dt_scores=dt_scores, dt_tie_key=dt_tie_key,
        max_detections=max_detections, gt_group=gt_group, gt_crowd=gt_crowd,
        gt_ignored=gt_ignored, similarity=similarity, thresholds=thresholds, threads=threads,
        alongside=out_of_range)

    def cat(name, parts):
        column = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        parts.clear()   # each column's parts freed before the next is joined
        return frozen(narrow_match_column(name, column))

    # Every array below is this function's own: frozen here, the table keeps it uncopied.
    return MatchTable(
        iou_thresholds=frozen(thresholds.copy()), area_ranges=frozen(area_ranges.copy()),
        dt_rank=frozen(dt_rank), dt_kept=frozen(dt_kept),
        dt_score_rank=frozen(dt_score_rank), dt_out_of_range=frozen(dt_out),
        gt_evaluated=frozen(gt_evaluated),
        gt_crowd=frozen(np.array(gt_crowd, dtype=bool)),
        gt_ignore=frozen(gt_ignored & gt_evaluated),
        match_area=cat("match_area", found_a),
        match_threshold=cat("match_threshold", found_t),
        match_dt=cat("match_dt", found_d), match_gt=cat("match_gt", found_g))


def _rank_in_groups(dt_group: np.ndarray, dt_scores: np.ndarray,
                    dt_tie_key: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Each detection's rank inside its group (descending score, then ``dt_tie_key``, then
    input order) and its rank among all evaluated scores; -1 for detections not evaluated."""
    evaluated = _evaluated_rows(dt_group)
    score_rank, _ = descending_rank(_subset(dt_scores, evaluated))
    dt_rank = _group_ranks(dt_group, evaluated, score_rank, _tie_key(dt_tie_key))
    return dt_rank, _spread(score_rank, evaluated, len(dt_group))


def _evaluated_rows(dt_group: np.ndarray) -> np.ndarray | None:
    """Rows of the evaluated detections (group >= 0); None when every one is (the usual
    case, which then needs no subset copies)."""
    return None if dt_group.min(initial=0) >= 0 else np.flatnonzero(dt_group >= 0)


def _subset(values, rows: np.ndarray | None) -> np.ndarray:
    """``values`` at ``rows`` (None: all of them, uncopied)."""
    values = np.asarray(values)
    return values if rows is None else values.take(rows)


def _tie_key(dt_tie_key) -> np.ndarray | None:
    return None if dt_tie_key is None else np.asarray(dt_tie_key, dtype=np.int64)


def _spread(values: np.ndarray, rows: np.ndarray | None, n: int) -> np.ndarray:
    """Per row: ``values`` of the evaluated ``rows`` (None: every row, ``values`` itself),
    -1 elsewhere."""
    if rows is None:
        return values
    out = np.full(n, -1, dtype=np.int64)
    out[rows] = values
    return out


def _group_ranks(dt_group: np.ndarray, evaluated: np.ndarray | None, score_rank: np.ndarray,
                 tie: np.ndarray | None, sizes: np.ndarray | None = None) -> np.ndarray:
    """Each detection's rank inside its group from the dense ranks of the evaluated scores
    (descending score, then ``tie``, then input order); -1 for detections not evaluated.
    ``sizes``: the evaluated detections of each group (:func:`_group_sizes`), if known."""
    groups = _subset(dt_group, evaluated)
    keys = [groups, score_rank]
    if tie is not None:
        keys.append(_subset(tie, evaluated))
    order = lexorder(keys)
    del keys
    # A detection's rank in its group: its position in that order less its group's first
    # position (the sizes of the groups before it).
    first = np.cumsum(np.bincount(groups) if sizes is None else sizes)
    first -= np.bincount(groups) if sizes is None else sizes
    position = np.empty(len(groups), dtype=np.int64)
    position[order] = np.arange(len(groups))
    position -= np.take(first, groups, out=order)   # (into the order's buffer, now unused)
    del order
    return _spread(position, evaluated, len(dt_group))


def _group_sizes(dt_group: np.ndarray, evaluated: np.ndarray | None) -> np.ndarray:
    """The evaluated detections of each group (index: the group key)."""
    return np.bincount(_subset(dt_group, evaluated))


def _kept_without_ranks(sizes: np.ndarray, max_detections: int) -> bool:
    """Whether no group holds more than ``max_detections`` evaluated detections (``sizes``:
    :func:`_group_sizes`): then every evaluated detection is kept, whatever its rank."""
    return bool(len(sizes) and 0 < max_detections and sizes.max() <= max_detections)


#: Evaluated detections from which the matcher's ranks run beside the pairs and the rounds
#: on threads (below, on the calling thread: the sorts take less than a thread's start).
_SIDE_BY_SIDE_MIN = 1 << 14


def _match_coco(*, dt_group, dt_scores, dt_tie_key, max_detections, gt_group, gt_crowd,
                gt_ignored, similarity, thresholds, threads, alongside=lambda: None):
    """pycocotools' rule over every group at once: the detections' ranks in their groups,
    their dense score ranks, which are kept, and the matches (lists of area, threshold,
    detection and object index arrays, one entry per round part; see :func:`_rounds`).

    When no group holds more than ``max_detections`` detections the kept ones are known
    before any rank, and the work runs as two steps of independent tasks on up to
    ``threads`` threads: the dense score ranks beside the chunks of candidate pairs, then
    the ranks in groups beside the rounds (which order each group's pairs by the score
    ranks and the tie key, the order of the ranks in groups). Otherwise the ranks come
    first, then the pairs of the kept detections, then the rounds. The tasks are the same
    for every ``threads``, and so is every array.

    From :data:`_SIDE_BY_SIDE_MIN` detections the chunks' plan is made beside the score
    ranks too (:func:`_rank_beside_pairs`). ``alongside()`` runs with the ranks in groups;
    its result is returned last.
    """
    n_dt, n_t = len(dt_group), len(thresholds)
    effective = np.minimum(thresholds, _IOU_CAP)
    evaluated = _evaluated_rows(dt_group)
    tie = _tie_key(dt_tie_key)
    scores = _subset(dt_scores, evaluated)
    rounds = functools.partial(_rounds, dt_group=dt_group, gt_crowd=gt_crowd,
                               gt_ignored=gt_ignored, thresholds=effective, n_dt=n_dt)

    def pair_plan(kept_rows):
        if n_t and (n_dt if kept_rows is None else len(kept_rows)) and len(gt_group):
            return _pair_chunks(dt_group, kept_rows, gt_group, similarity, effective.min())
        return None, []

    sizes = _group_sizes(dt_group, evaluated)
    if not _kept_without_ranks(sizes, max_detections):
        score_rank, _ = descending_rank(scores)
        dt_rank = _group_ranks(dt_group, evaluated, score_rank, tie, sizes)
        dt_kept = (dt_rank >= 0) & (dt_rank < max_detections)
        chunk, bounds = pair_plan(np.flatnonzero(dt_kept))
        pairs = _joined_pairs(thread_map(chunk, bounds, threads))
        return (dt_rank, _spread(score_rank, evaluated, n_dt), dt_kept,
                rounds(*pairs, order_keys=[dt_rank]), alongside())

    dt_kept = dt_group >= 0
    kept_rows = evaluated       # (None: every row)
    # (few detections: the sorts on the calling thread, where starting a thread and
    # importing threading cost more; the pairs still on threads when they are many)
    side_by_side = threads if len(scores) >= _SIDE_BY_SIDE_MIN else 1
    if side_by_side > 1:
        def rank():
            beside = alongside()    # (first: its temporaries are freed before the sort's
            return descending_rank(scores)[0], beside   # buffers take their place)

        (score_rank, beside), pairs = _rank_beside_pairs(rank, lambda: pair_plan(kept_rows),
                                                         side_by_side)
    else:
        chunk, bounds = pair_plan(kept_rows)
        first = thread_map(lambda item: descending_rank(scores)[0] if item is None
                           else chunk(item), [None, *bounds], 1 if len(bounds) < 2 else threads)
        score_rank, beside = first[0], alongside()
        pairs = _joined_pairs(first[1:])
        del first
    dt_score_rank = _spread(score_rank, evaluated, n_dt)
    order_keys = [dt_score_rank] if tie is None else [dt_score_rank, tie]
    dt_rank, found = thread_map(
        lambda item: (_group_ranks(dt_group, evaluated, score_rank, tie, sizes) if item == 0
                      else rounds(*pairs, order_keys=order_keys)), [0, 1], side_by_side)
    return dt_rank, dt_score_rank, dt_kept, found, beside


def _rank_beside_pairs(rank: Callable[[], Any], plan: Callable[[], tuple], threads: int):
    """``(rank(), candidate pairs)`` on two threads: one runs ``rank()`` (the score ranks)
    while the other makes the pairs' chunk plan (``plan()``: :func:`_pair_chunks`'
    ``(chunk, bounds)``) and starts on the chunks; the first thread then takes the chunks
    not yet taken. Each chunk is computed whole by one thread and the chunks are joined in
    order, so the pairs are the same whichever thread computes which chunk."""
    made: dict = {}
    parts: dict = {}
    claim = itertools.count()      # (next() on it is atomic: the threads share it)

    def chunks() -> None:
        if "plan" not in made:      # (the plan is not made yet: its thread takes them all)
            return
        chunk, bounds = made["plan"]
        while (i := next(claim)) < len(bounds):
            parts[i] = chunk(bounds[i])

    def task(item: int):
        ranked = None
        if item == 0:
            ranked = rank()
        else:
            made["plan"] = plan()
        chunks()
        return ranked

    ranked = thread_map(task, [0, 1], threads)[0]
    return ranked, _joined_pairs([parts[i] for i in range(len(made["plan"][1]))])


def _rounds(pair_dt, pair_gt, values, *, order_keys, dt_group, gt_crowd, gt_ignored,
            thresholds, n_dt) -> tuple[list, list, list, list]:
    """The greedy rounds on the candidate pairs (the k-th detection of every group in round
    k; ``thresholds``: the effective ones): the matches as lists of (area, threshold,
    detection, object) index arrays, one entry per round part.

    ``order_keys``: per detection row, keys that order the detections of a group as their
    ranks do (the ranks themselves, or the dense score rank and the tie key).
    """
    n_gt, n_t, n_a = len(gt_crowd), len(thresholds), len(gt_ignored)
    pair_dt, pair_gt, values, part_bounds = _round_parts(pair_dt, pair_gt, values, order_keys,
                                                         dt_group, gt_ignored)
    taken = np.zeros((n_a, n_t, n_gt), dtype=bool)
    found_a, found_t, found_d, found_g = [], [], [], []
    # The parts in the table's narrow types from the start (MATCH_COLUMN_TYPES): they are
    # the largest arrays of the match stage.
    a_type, t_type, d_type, g_type = (
        narrow_match_column(name, np.array([0, max(size - 1, 0)])).dtype
        for name, size in (("match_area", n_a), ("match_threshold", n_t),
                           ("match_dt", n_dt), ("match_gt", n_gt)))
    thr = thresholds[None, :, None]
    all_areas = np.arange(n_a)
    # Each pair's preference as one integer: the dense rank of its similarity (1 for the
    # lowest; -0.0 and 0.0 tie), plus ``regular`` where the object is not ignored in the
    # range (objects that are not ignored first, then the similarity).
    rank, n_values = descending_rank(values)
    np.subtract(n_values, rank, out=rank)
    regular = n_values + 1
    key_bits = int(2 * n_values + 1).bit_length()
    # Pairs come detection by detection (each detection's objects in a row): the segments
    # whose best allowed object each detection takes.
    new_dt = np.empty(len(pair_dt), dtype=bool)
    new_dt[:1] = True
    np.not_equal(pair_dt[1:], pair_dt[:-1], out=new_dt[1:])
    segment = np.cumsum(new_dt) - 1
    last_of_dt = np.r_[new_dt[1:], True] if len(new_dt) else new_dt
    for k in range(len(part_bounds) - 1):
        sl = slice(part_bounds[k], part_bounds[k + 1])
        if sl.start == sl.stop:
            continue
        p_dt, p_gt, p_val = pair_dt[sl], pair_gt[sl], values[sl]
        one_range = k % 2 == 0
        state = taken[:1] if one_range else taken
        free = gt_crowd.take(p_gt)[None, None, :] | ~state.take(p_gt, axis=2)
        ok = free & (p_val[None, None, :] >= thr)
        key = rank[sl]
        if not one_range:
            key = key + regular * ~gt_ignored.take(p_gt, axis=1)[:, None, :]
        at, picked, n_seg = _last_best(ok, key, segment[sl] - segment[sl.start],
                                       np.flatnonzero(last_of_dt[sl]), key_bits)
        row = at // n_seg                   # area * T + threshold
        g_rows = p_gt.take(picked)
        flat = row * n_gt
        flat += g_rows
        taken.ravel()[flat] = True
        d_rows = p_dt.take(picked).astype(d_type)
        g_rows = g_rows.astype(g_type)
        if one_range:       # area 0 only (row is the threshold): the same in every range
            a_idx = np.repeat(all_areas.astype(a_type), len(picked))
            t_idx, d_rows, g_rows = (np.concatenate([v] * n_a) if n_a else v[:0]
                                     for v in (row.astype(t_type), d_rows, g_rows))
        else:
            a_idx, t_idx = np.divmod(row, n_t)
            a_idx, t_idx = a_idx.astype(a_type), t_idx.astype(t_type)
        found_a.append(a_idx)
        found_t.append(t_idx)
        found_d.append(d_rows)
        found_g.append(g_rows)

    return found_a, found_t, found_d, found_g


def _round_parts(pair_dt, pair_gt, values, order_keys, dt_group, gt_ignored):
    """The pairs in the order of the rounds, and the bounds of the round parts: part ``2r``
    holds round ``r``'s pairs of the groups that choose alike in every range, part
    ``2r + 1`` the others' (see the matcher)."""
    # Round of each pair: dense rank of its detection among the detections of its group that
    # have candidates. Sort pairs by (group, the detections' order, GT file order): pairs come
    # detection by detection in row order, each detection's objects in file order, and
    # equal keys keep that order.
    pair_group = dt_group.take(pair_dt)
    pair_order = lexorder([pair_group, *(key.take(pair_dt) for key in order_keys)])
    pair_dt, pair_gt, values = pair_dt[pair_order], pair_gt[pair_order], values[pair_order]
    pair_group = pair_group[pair_order]
    new_dt = np.r_[True, pair_dt[1:] != pair_dt[:-1]] if len(pair_dt) else np.zeros(0, bool)
    dt_starts = np.flatnonzero(new_dt)
    dt_round = rank_within_groups(pair_group[dt_starts])
    pair_round = np.repeat(dt_round, np.diff(np.r_[dt_starts, len(pair_dt)]))
    # A group in which every detection's candidates share one ignore status, in each area
    # range, chooses the same objects in every range (the preference for objects that are
    # not ignored never decides): it is matched in the first range only and its matches
    # copied to the others. Within a round its pairs come first (part 0), the others after.
    shared = _shared_choice(pair_group, dt_starts, pair_gt, gt_ignored)
    part_key = pair_round * 2 + ~shared
    by_round = lexorder([part_key])
    pair_dt, pair_gt, values = pair_dt[by_round], pair_gt[by_round], values[by_round]
    part_bounds = np.searchsorted(part_key[by_round], np.arange(2 * dt_round.max() + 3)
                                  if len(dt_round) else np.zeros(1, np.int64))
    return pair_dt, pair_gt, values, part_bounds


#: Bits of the int64 that packs (segment, key, position) in :func:`_last_best`; a part
#: whose numbers need more takes the general way (a test lowers it).
_PACK_BITS = 63


def _last_best(ok, key, segment, ends, key_bits):
    """Per segment of pairs and per row of ``ok``: the last allowed pair with the largest
    ``key`` (keys >= 1, below ``2**key_bits``).

    ``ok``: ``(A, T, p)`` booleans; ``key``: ``(p,)`` or ``(A, 1, p)``; ``segment``: each
    pair's segment (0, 1, ... in order); ``ends``: each segment's last pair. Returns the flat
    indices into ``(A, T, n_segments)`` that have an allowed pair, the chosen pairs'
    positions (in ``0 .. p - 1``) and the number of segments.

    Each pair packs (segment, key if allowed else 0, position) into one int64, most
    significant first; a running maximum along the pairs then holds, at each segment's last
    pair, the segment's largest key and the last position with it (one pass, where a
    reduction per segment costs a call per segment of one or two pairs).
    """
    p, n_seg = ok.shape[-1], len(ends)
    pos_bits = max(int(p - 1).bit_length(), 1)
    if int(n_seg - 1).bit_length() + key_bits + pos_bits > _PACK_BITS:
        starts = np.r_[0, ends[:-1] + 1]
        chosen = _last_argmax(ok, key, starts, ends - starts + 1, np.arange(p))
        at = np.flatnonzero(chosen >= 0)
        return at, chosen.ravel().take(at), n_seg
    packed = np.multiply(ok, key, dtype=np.int64)
    packed <<= pos_bits
    base = segment << (key_bits + pos_bits)
    base |= np.arange(p)
    packed |= base
    np.maximum.accumulate(packed, axis=-1, out=packed)
    best = packed.take(ends, axis=-1).ravel()
    at = np.flatnonzero((best & (((1 << key_bits) - 1) << pos_bits)) != 0)
    return at, best.take(at) & ((1 << pos_bits) - 1), n_seg


def _match_voc(*, dt_group, dt_rank, dt_kept, dt_score_rank, dt_out, kept_rows, gt_group,
               gt_crowd, gt_ignored, similarity, thresholds, area_ranges, strict, threads):
    """The VOC rule for every group at once (see the module documentation)."""
    n_dt, n_gt = len(dt_group), len(gt_group)
    best_gt = np.full(n_dt, -1, dtype=np.int64)
    best_iou = np.full(n_dt, np.nan)
    best_iou[dt_kept] = 0.0
    if len(kept_rows) and n_gt:
        # Every overlapping pair (IoU > 0); pairs come detection by detection, each
        # detection's objects in file order, so the first maximum is the devkit's jmax.
        pair_dt, pair_gt, values = _candidate_pairs(dt_group, kept_rows, gt_group, similarity,
                                                    np.nextafter(0.0, 1.0), threads)
    else:
        pair_dt = pair_gt = np.zeros(0, np.int64)
        values = np.zeros(0)
    if len(pair_dt):
        starts, lengths = _group_runs(pair_dt)
        top = np.maximum.reduceat(values, starts)
        at_top = values == np.repeat(top, lengths)
        first = np.minimum.reduceat(np.where(at_top, np.arange(len(values)), len(values)),
                                    starts)
        best_gt[pair_dt[starts]] = pair_gt[first]
        best_iou[pair_dt[starts]] = top

    # Candidates: detections whose best IoU passes the lowest threshold, ordered by
    # (object, rank in the group); the rank is unique inside the object's group.
    lowest = thresholds.min() if len(thresholds) else np.inf
    passes_any = best_iou > lowest if strict else best_iou >= lowest
    cand = np.flatnonzero(passes_any & (best_gt >= 0))
    cand = cand[lexorder([best_gt[cand], dt_rank[cand]], rows_are_unique=True)]
    cand_gt, cand_iou = best_gt[cand], best_iou[cand]
    passes = (cand_iou[None, :] > thresholds[:, None] if strict
              else cand_iou[None, :] >= thresholds[:, None])            # (T, n)
    # Passing detections on the same object before this one, per threshold.
    starts, lengths = _group_runs(cand_gt)
    before = np.cumsum(passes, axis=1) - passes
    before = before - np.repeat(before[:, starts], lengths, axis=1)
    ignored = gt_ignored[:, cand_gt]                                    # (A, n)
    # An ignored object absorbs every passing detection (nothing is marked); a regular one
    # gives its first passing detection a TP and leaves the later ones unmatched (FP).
    matched = passes[None, :, :] & (ignored[:, None, :] | (before == 0)[None, :, :])
    a_idx, t_idx, c_idx = np.nonzero(matched)
    return MatchTable(
        iou_thresholds=thresholds.copy(), area_ranges=area_ranges.copy(), dt_rank=dt_rank,
        dt_kept=dt_kept, dt_score_rank=dt_score_rank, dt_out_of_range=dt_out,
        gt_evaluated=gt_group >= 0, gt_crowd=np.asarray(gt_crowd, bool).copy(),
        gt_ignore=gt_ignored, match_area=a_idx, match_threshold=t_idx, match_dt=cand[c_idx],
        match_gt=cand_gt[c_idx], dt_best_gt=best_gt, dt_best_iou=best_iou)
