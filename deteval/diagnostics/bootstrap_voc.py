"""Image-level bootstrap intervals of the Pascal VOC numbers, from the evaluation's curves.

The resamples are those of :mod:`deteval.diagnostics.bootstrap` (integer image weights, one
per evaluated image); the numbers of a resample are computed from the one evaluation that
was already run, without matching again. An image drawn ``w`` times contributes each of its
detections and non-difficult objects ``w`` times: per class, the detections stay in the
evaluation's ranking order (class, descending score, input row), each counted detection (TP
or FP; those on difficult objects count as neither) is repeated ``w`` times in place, the
running TP and FP counts of that sequence and ``npos`` = the weighted non-difficult objects
give the curve, and AP and mAP follow the protocol's own rule
(:func:`~deteval.protocols._voc_stages.curve_ap`, :func:`~deteval.protocols._voc_stages.mean_ap`:
11-point, all-points, detectron2's variants). This is ``evaluate_voc`` on the data set that
holds each image ``w`` times, each detection's copies listed one after the other
(``docs/diagnostics/bootstrap.md`` §12, with the one difference of tied scores).

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

from ..data import index_in
from .bootstrap import BootstrapResult, _check, interval_result, resample_rows

__all__ = ["MAP_NAME", "WeightedVOC", "bootstrap_voc", "voc_number_names"]

#: Name of the mAP (the mean over the IoU thresholds of the per-threshold mAP, as
#: ``VOCResult.mean_ap``).
MAP_NAME = "mAP"


def bootstrap_voc(result: Any, *, n_resamples: int = 1000, confidence: float = 0.95,
                  seed: Any = None, weights: np.ndarray | None = None) -> BootstrapResult:
    """Image-level bootstrap intervals of a Pascal VOC evaluation's mAP and per-class AP.

    Parameters
    ----------
    result : VOCResult
        Of :func:`~deteval.evaluate_voc` (it keeps the match table; the result of a
        streaming :class:`~deteval.Evaluator` does not and is refused).
    n_resamples, confidence, seed
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
    _check(n_resamples, confidence)
    weighted = WeightedVOC(result)
    rows = weighted.resamples(n_resamples, seed, weights)
    samples = np.array([weighted.numbers(w) for w in rows], dtype=np.float64)
    return interval_result(weighted, samples.reshape(-1, len(weighted.names)),
                           confidence=confidence, seed=seed)


def voc_number_names(result: Any) -> tuple[str, ...]:
    """The names of :func:`bootstrap_voc`'s numbers for a VOC result.

    ``mAP@t`` is written with two decimals (as ``VOCResult.summary``), with all of its digits
    when two would make two thresholds look alike; a class name several classes share gets
    its id (``name#id``).

    >>> import deteval
    >>> from deteval.demo import make_demo
    >>> gt, dt = make_demo()
    >>> voc_number_names(deteval.evaluate_voc(gt, dt, iou_thresholds=(0.5, 0.75)))[:3]
    ('mAP', 'mAP@0.50', 'mAP@0.75')
    """
    thresholds = list(result.params.iou_thresholds)
    short = [f"{t:.2f}" for t in thresholds]
    if len(set(short)) < len(short):
        short = [repr(t) for t in thresholds]
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
    once from the result; :meth:`numbers` then repeats, counts and calls the protocol's AP
    rule per (threshold, class).
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
        from ..protocols._voc_stages import curve_ap, mean_ap

        p, n_k = self.params, self.n_k
        npos = np.bincount(self.gt_k, weights=w.take(self.gt_image),
                           minlength=n_k).astype(np.int64)
        n_dt = np.bincount(self.k_of_row, weights=w.take(self.image),
                           minlength=n_k).astype(np.int64)
        ap = np.zeros((len(p.iou_thresholds), n_k))
        for t, tp_flag in enumerate(self.tp_flag):
            times = w.take(self.counted_image[t])
            # Running TP count of the expanded sequence (each row repeated in place), and
            # where each class's part of it starts and ends.
            tp_cum = np.zeros(int(times.sum()) + 1, np.int64)
            np.cumsum(np.repeat(tp_flag, times), out=tp_cum[1:])
            ends = np.zeros(len(times) + 1, np.int64)
            np.cumsum(times, out=ends[1:])
            bounds = ends.take(self.counted_bounds[t])
            for c in range(n_k):
                lo, hi = int(bounds[c]), int(bounds[c + 1])
                tp = tp_cum[lo + 1:hi + 1] - tp_cum[lo]
                ap[t, c] = curve_ap(tp, np.arange(1, hi - lo + 1) - tp, int(npos[c]),
                                    int(n_dt[c]), p)
        return ap, mean_ap(ap, npos, p)

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
