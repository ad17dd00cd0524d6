"""Image-level bootstrap intervals of the Pascal VOC numbers, from the evaluation's curves.

The resamples are those of :mod:`deteval.diagnostics.bootstrap` (integer image weights, one
per evaluated image); the numbers of a resample are computed from the one evaluation that
was already run, without matching again. An image drawn ``w`` times contributes each of its
detections and non-difficult objects ``w`` times: per class, the detections stay in the
evaluation's ranking order (class, descending score, input row), each counted detection (TP
or FP; those on difficult objects count as neither) is repeated ``w`` times in place, the
running TP and FP counts of that sequence and ``npos`` = the weighted non-difficult objects
give the curve, and AP and mAP follow the protocol's own rule (``deteval.ap``'s 11-point,
all-points and 101-point rules, :func:`~deteval.protocols._voc_stages.mean_ap`; detectron2's
variants). This is ``evaluate_voc`` on the data set that holds each image ``w`` times, each
detection's copies listed one after the other (``docs/diagnostics/bootstrap.md`` §12, with
the one difference of tied scores). The repeated sequence is not built: each rule's number
is read from each row's counts once, or, for all-points AP, from the TP copies alone (§13).

>>> import deteval
>>> from deteval.demo import make_demo
>>> gt, dt = make_demo()
>>> result = deteval.evaluate_voc(gt, dt, params=deteval.VOC2007)
>>> ci = bootstrap_voc(result, n_resamples=100, seed=0)
>>> ci.estimate("mAP") == result.mean_ap
True
>>> low, high = ci.interval("mAP")
>>> bool(low <= result.mean_ap <= high)
True
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._threads import resolve_threads
from .._threshold_labels import threshold_labels
from ..ap import SAMPLED_RECALL_THRESHOLDS
from ..data import index_in
from ._bootstrap_plans import Workspace, count_dtype
from ._bootstrap_workers import engine_of, prestart, work_of
from .bootstrap import BootstrapResult, check_settings, interval_result, resample_rows, resampled

__all__ = ["MAP_NAME", "WeightedVOC", "bootstrap_voc", "voc_number_names"]

#: Name of the mAP (the mean over the IoU thresholds of the per-threshold mAP, as
#: ``VOCResult.mean_ap``).
MAP_NAME = "mAP"

#: What a worker process imports, and whose code it checks against the caller's
#: (:func:`bootstrap_voc` and :func:`~deteval.diagnostics.compare.compare_voc`).
_WORKER_MODULES = ("deteval.diagnostics.bootstrap_voc", "deteval.protocols._voc_stages")


def bootstrap_voc(result: Any, *, n_resamples: int = 1000, confidence: float = 0.95,
                  seed: Any = None, weights: np.ndarray | None = None,
                  threads: int | None = None) -> BootstrapResult:
    """Image-level bootstrap intervals of a Pascal VOC evaluation's mAP and per-class AP.

    Parameters
    ----------
    result : VOCResult
        Of :func:`~deteval.evaluate_voc` (it keeps the match table; the result of a
        streaming :class:`~deteval.Evaluator` does not and is refused).
    n_resamples, confidence, seed, threads
        As :func:`~deteval.diagnostics.bootstrap.bootstrap_coco` (a seed draws the same
        images for both).
    weights : array of int, shape (B, I), optional
        Explicit resamples instead of random ones: how many times each evaluated image (in
        the order of ``result.params.image_ids``) is drawn. A row of ones is the evaluation
        itself.

    Returns
    -------
    BootstrapResult
        Numbers (:func:`voc_number_names`): ``mAP`` (``result.mean_ap``), ``mAP@t`` for each
        IoU threshold when there are several (``result.map``), and ``AP[name]`` per class
        (its AP, averaged over the thresholds when there are several). A number NaN in the
        evaluation (a class without objects, say) is undefined: -1 in ``estimates``, NaN in
        ``samples``. ``score_threshold`` is None.

    Raises
    ------
    ValueError
        A result without match table, bad settings, weights of the wrong shape.

    Examples
    --------
    >>> import deteval
    >>> from deteval.demo import make_demo
    >>> gt, dt = make_demo()
    >>> result = deteval.evaluate_voc(gt, dt)
    >>> ones = np.ones((1, len(result.params.image_ids)), dtype=int)
    >>> bool(bootstrap_voc(result, weights=ones).samples[0, 0] == result.map[0])
    True
    """
    check_settings(n_resamples, confidence)
    threads = resolve_threads(threads)
    with prestart(threads, work_of(result, n_resamples, weights), _WORKER_MODULES) as pool:
        weighted = WeightedVOC(result)
        rows = weighted.resamples(n_resamples, seed, weights)
        samples = resampled(weighted.numbers, rows, threads, pool=pool,
                            engine=lambda: engine_of(weighted),
                            count=n_resamples if weights is None else len(weights))
        # Computed while the workers exit (the pool waits for them on leaving).
        return interval_result(weighted, samples.reshape(-1, len(weighted.names)),
                               confidence=confidence, seed=seed)


def voc_number_names(result: Any) -> tuple[str, ...]:
    """The names of :func:`bootstrap_voc`'s numbers for a VOC result.

    ``mAP@t`` is written as ``VOCResult.summary`` writes it (the shortest decimal with at
    least two, :func:`deteval._threshold_labels.threshold_labels`); a class name several
    classes share gets its id (``name#id``).

    >>> import deteval
    >>> from deteval.demo import make_demo
    >>> gt, dt = make_demo()
    >>> voc_number_names(deteval.evaluate_voc(gt, dt, iou_thresholds=(0.5, 0.75)))[:3]
    ('mAP', 'mAP@0.50', 'mAP@0.75')
    """
    thresholds = list(result.params.iou_thresholds)
    short = threshold_labels(thresholds)
    per_threshold = [f"{MAP_NAME}@{t}" for t in short] if len(thresholds) > 1 else []
    return (MAP_NAME, *per_threshold, *(f"AP[{n}]" for n in _class_names(result)))


def _class_names(result: Any) -> tuple[str, ...]:
    names = list(result.category_names)
    return tuple(n if names.count(n) == 1 else f"{n}#{c}"
                 for n, c in zip(names, result.category_ids.tolist()))


class WeightedVOC:
    """A VOC evaluation's numbers under image weights (see the module docstring).

    The ranking order, the class segments, the TP/FP flags of the counted detections at each
    threshold and the image column of every detection and non-difficult object are taken
    once from the result; :meth:`numbers` then counts each row once per threshold and reads
    the rule's AP per class from those counts (``docs/diagnostics/bootstrap.md`` §13).
    """

    score_threshold = None

    def __init__(self, result: Any) -> None:
        from ..matching import FP, TP
        from ..protocols._voc_stages import prepare

        if (getattr(result, "matches", None) is None
                or getattr(result, "detections", None) is None
                or getattr(result, "_order", None) is None):
            raise ValueError("bootstrap needs a result of evaluate_voc (with its match table); "
                             "a streaming Evaluator's result keeps none")
        self.result = result
        self.params = p = result.params
        ctx = prepare(result.dataset, p)
        self.n_images = len(ctx.image_ids)
        self.n_k = ctx.n_k
        # Column of each row of the images table (-1: not evaluated); random resamples draw
        # the evaluated images in the ground truth's order, as bootstrap_coco does.
        column = index_in(result.dataset.images.ids, ctx.image_ids)
        #: The weight column of each row of the images table (-1: not evaluated), and the
        #: image id of each column (the slices read both).
        self.column, self.image_ids = column, ctx.image_ids
        self._drawn = column.compress(ctx.image_ok & (column >= 0))
        order, bounds = np.asarray(result._order), np.asarray(result._bounds)
        status = result.matches.detection_status(0).take(order, axis=1)      # (T, n)
        self.image = column.take(result.detections.image_index.take(order))
        self.k_of_row = np.repeat(np.arange(self.n_k), np.diff(bounds))
        counted = [np.flatnonzero(c) for c in (status == TP) | (status == FP)]
        # Per threshold: the counted rows' images, TP flags and class segments (the rows are
        # in class order).
        self.counted_image = [self.image.take(rows) for rows in counted]
        self.tp_flag = [s.take(rows) == TP for s, rows in zip(status, counted)]
        self.counted_bounds = [np.searchsorted(self.k_of_row.take(rows), np.arange(self.n_k + 1))
                               for rows in counted]
        positive = (ctx.gt_k >= 0) & ~ctx.difficult
        self.gt_k = ctx.gt_k.compress(positive)
        self.gt_image = column.take(result.dataset.gt.image_index.compress(positive))
        # The sampled rules (11-point, 101-point) read each row's counts once (§13).
        self._sampled = SAMPLED_RECALL_THRESHOLDS.get(p.ap_method)
        # All-points AP reads the TP rows: their positions among the counted rows, images
        # and class bounds.
        self.tp_rows = [np.flatnonzero(flag) for flag in self.tp_flag]
        self.tp_image = [image.take(rows) for image, rows in zip(self.counted_image,
                                                                 self.tp_rows)]
        self.tp_bounds = [np.searchsorted(rows, cb) for rows, cb in zip(self.tp_rows,
                                                                       self.counted_bounds)]
        self._work = Workspace()
        # The most counted rows of one image: the counts stay in int32 when the weights
        # cannot push them past it.
        self._per_image = int(np.bincount(self.image).max(initial=0)) if len(self.image) else 1
        self.names = voc_number_names(result)
        self.category_names = _class_names(result)
        self.estimates = np.asarray(self.numbers(np.ones(self.n_images, np.int64)))
        self.estimates[np.isnan(self.estimates)] = -1.0

    def resamples(self, n_resamples: int, seed: Any,
                  weights: np.ndarray | None) -> Iterator[np.ndarray]:
        """The weight rows: ``weights`` checked, or random ones."""
        return resample_rows(self._drawn, self.n_images, n_resamples, seed, weights)

    def ap(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (T, K) AP and the (T,) mAP under image weights ``w`` (shape (I,)): equal to
        ``evaluate_voc``'s ``ap`` and ``map`` of the data set holding image ``i`` ``w[i]``
        times (see the module docstring)."""
        from ..protocols._voc_stages import mean_ap

        p, n_k = self.params, self.n_k
        w = w.astype(count_dtype(w, self._per_image), copy=False)
        npos = np.bincount(self.gt_k, weights=w.take(self.gt_image),
                           minlength=n_k).astype(np.int64)
        ap = np.array([self._sampled_ap(t, w, npos) if self._sampled is not None
                       else self._all_points_ap(t, w, npos)
                       for t in range(len(p.iou_thresholds))]).reshape(-1, n_k)
        if p.classes_without_gt != "exclude":
            # detectron2 divides 0 by 0 for a class without objects: no 11-point threshold
            # is reached (AP 0); all-points AP is NaN as soon as the class has a detection.
            without = npos == 0
            if p.ap_method == "all-points" and without.any():
                n_dt = np.bincount(self.k_of_row, weights=w.take(self.image), minlength=n_k)
                without &= n_dt == 0
            ap[:, without] = 0.0
        return ap, mean_ap(ap, npos, p)

    def _row_precision(self, t: int, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each counted row's precision at threshold ``t`` (its class's TP over counted rows
        up to it; 0 before any) and a 0 after the last row, and the TP prefix sums; in this
        thread's scratch arrays (fresh ones of this size cost page faults)."""
        cb, n = self.counted_bounds[t], len(self.counted_image[t])
        work, dtype = self._work, w.dtype
        times = w.take(self.counted_image[t], out=work.get("times", n, dtype), mode="wrap")
        counted = work.get("counted", n + 1, dtype)
        counted[0] = 0
        np.cumsum(times, out=counted[1:])
        tp = work.get("tp", n + 1, dtype)
        tp[0] = 0
        np.cumsum(np.multiply(times, self.tp_flag[t], out=times), out=tp[1:])
        sizes = np.diff(cb)
        row_tp = np.subtract(tp[1:], np.repeat(tp.take(cb[:-1]), sizes), out=times)
        row_n = np.subtract(counted[1:], np.repeat(counted.take(cb[:-1]), sizes),
                            out=work.get("n", n, dtype))
        np.maximum(row_n, 1, out=row_n)
        precision = work.get("precision", n + 1, np.float64)
        precision[n] = 0.0
        np.divide(row_tp, row_n, out=precision[:n])
        return precision, tp

    def _sampled_ap(self, t: int, w: np.ndarray, npos: np.ndarray) -> np.ndarray:
        """The (K,) AP at threshold ``t`` by a sampled rule (``voc11``, ``voc11-devkit``,
        ``coco101``), from each counted row's running counts once (not repeated): a row
        drawn ``w`` times adds ``w`` points to the expanded curve, and the one at the end of
        its run has the highest recall and, of its TP copies, the highest precision; an FP
        run's points are below the point before the run. So the largest precision at
        recall >= r, which is all these rules read, is the same (§13). NaN where the class
        has no objects (the caller applies the protocol's rule there)."""
        from ..protocols._coco_stages import needed_true_positives

        thresholds, cb = self._sampled, self.counted_bounds[t]
        precision, tp = self._row_precision(t, w)
        # First row of each class whose recall tp / npos reaches each threshold (the float
        # rule of ``searchsorted(recall, t)``), then the largest precision from there on:
        # the maximum of each stretch between two of them, and a running maximum.
        need = needed_true_positives(npos, thresholds)                     # (K, n)
        first = np.searchsorted(tp[1:], tp.take(cb[:-1])[:, None] + need, side="left")
        first = np.clip(first, cb[:-1, None], cb[1:, None])
        reached = first < cb[1:, None]
        at = np.concatenate([first, cb[1:, None]], axis=1).ravel()
        blocks = np.maximum.reduceat(precision, at).reshape(len(npos), -1)[:, :-1]
        blocks *= reached
        sampled = np.maximum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1]
        if self.params.ap_method == "coco101":
            ap = np.array([np.mean(row) for row in sampled])
        else:   # ap = ap + p / 11 in threshold order, as the references accumulate
            ap = np.cumsum(sampled / 11.0, axis=1)[:, -1]
        return np.where(npos > 0, ap, np.nan)

    def _all_points_ap(self, t: int, w: np.ndarray, npos: np.ndarray) -> np.ndarray:
        """The (K,) all-points AP at threshold ``t``: ``np.sum`` of ``(recall step) x
        envelope`` over the expanded curve's recall changes, which are its TP units alone
        (§13). Inside a TP row's run of copies the precision rises, so the envelope at each
        of its units is the envelope at the row (a reversed running maximum over the rows,
        as for the sampled rules); the recall steps ``i / npos - (i - 1) / npos`` and the
        final sentinel step are those of the expanded curve, so the terms, their number and
        their order, and with them the sum, are the same. NaN where the class has no
        objects (the caller applies the protocol's rule)."""
        cb, rows = self.counted_bounds[t], self.tp_rows[t]
        precision, _ = self._row_precision(t, w)
        envelope = self._work.get("envelope", len(precision) - 1, np.float64)
        for lo, hi in zip(cb[:-1].tolist(), cb[1:].tolist()):
            np.maximum.accumulate(precision[lo:hi][::-1], out=envelope[lo:hi][::-1])
        times = w.take(self.tp_image[t])
        units = np.repeat(envelope.take(rows), times)       # each TP unit's envelope
        ends = np.zeros(len(times) + 1, np.int64)
        np.cumsum(times, out=ends[1:])
        ub = ends.take(self.tp_bounds[t])                  # units of each class
        ap = np.full(len(npos), np.nan)
        for k in np.flatnonzero(npos > 0).tolist():
            n_pos, n_units = int(npos[k]), int(ub[k + 1] - ub[k])
            i = np.arange(1, n_units + 1)
            terms = (i / n_pos - (i - 1) / n_pos) * units[ub[k]:ub[k + 1]]
            last = n_units / n_pos if n_units else 0.0
            if last != 1.0:       # the step to the sentinel recall 1, times precision 0
                terms = np.append(terms, (1.0 - last) * 0.0)
            ap[k] = float(np.sum(terms))
        return ap

    def numbers(self, w: np.ndarray) -> list[float]:
        """``mAP``, ``mAP@t`` (several thresholds) and the per-class AP under weights ``w``
        (NaN where undefined)."""
        ap, per_threshold = self.ap(w)
        head = [float(np.mean(per_threshold))]
        if len(per_threshold) > 1:
            head += per_threshold.tolist()
        with np.errstate(all="ignore"):
            classes = np.mean(ap, axis=0) if len(ap) else np.zeros(self.n_k)
        return head + classes.tolist()
