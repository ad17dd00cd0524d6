"""Image-level bootstrap intervals of the LVIS numbers, from the evaluation's match table.

The resamples are those of :mod:`deteval.diagnostics.bootstrap` (integer image weights, one
per image of the ground truth); the numbers of a resample come from the one evaluation that
was already run, without matching again. LVIS's rules are all per image (the 300-per-image
cut, the verified categories, the not-exhaustive lists), so an image drawn ``w`` times
brings its evaluated detections and objects ``w`` times; accumulation is COCO's with one
max-detections setting (:meth:`deteval.diagnostics._bootstrap_plans.COCOPlan.single`, the
plans :func:`~deteval.diagnostics.bootstrap.bootstrap_coco` runs), and the 13 numbers and
the per-category AP are lvis-api's summary of those arrays
(:func:`deteval.protocols.lvis.summary_stats`). This is ``evaluate_lvis`` on the data set
holding each image ``w`` times, copies listed one after the other (``docs/diagnostics/
bootstrap.md`` §13; the one difference, tied scores of one image and category, as §3; a
resample's AP-type numbers come from sums over the recall thresholds, within a few ulps of
the grid's means, §3).

>>> import deteval
>>> gt = {"images": [{"id": i, "neg_category_ids": [], "not_exhaustive_category_ids": []}
...                  for i in (1, 2, 3)],
...       "categories": [{"id": 1, "name": "a", "frequency": "f"}],
...       "annotations": [{"id": i, "image_id": i, "category_id": 1, "bbox": [0, 0, 20, 20],
...                        "area": 400} for i in (1, 2, 3)]}
>>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 20, 20], "score": 0.9},
...       {"image_id": 2, "category_id": 1, "bbox": [25, 25, 20, 20], "score": 0.8},
...       {"image_id": 3, "category_id": 1, "bbox": [1, 1, 20, 20], "score": 0.7}]
>>> result = deteval.evaluate_lvis(gt, dt)
>>> ci = bootstrap_lvis(result, n_resamples=200, seed=0)
>>> ci.estimate("AP50") == result.stat("AP50")
True
>>> low, high = ci.interval("AP50")
>>> bool(low <= result.stat("AP50") <= high)
True
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from .._threads import resolve_threads
from ._bootstrap_plans import COCOPlan
from ._bootstrap_workers import prestart, register_engine, slim, work_of
from .bootstrap import (
    BootstrapResult,
    check_settings,
    defined_sums,
    mean_of_sums,
    per_class_of_sums,
    resample_rows,
    run_bootstrap,
    use_sums,
)

__all__ = ["WeightedLVIS", "bootstrap_lvis", "lvis_number_names"]

#: What a worker process imports while the plans are built.
_WORKER_MODULES = ("deteval.diagnostics.bootstrap_lvis", "deteval.protocols.lvis")


def bootstrap_lvis(result: Any, *, n_resamples: int = 1000, confidence: float = 0.95,
                   seed: Any = None, weights: np.ndarray | None = None,
                   threads: int | None = None) -> BootstrapResult:
    """Image-level bootstrap intervals of an LVIS evaluation's numbers.

    Parameters
    ----------
    result : LVISResult
        Of :func:`~deteval.evaluate_lvis` (it keeps the match table).
    n_resamples, confidence, seed
        As :func:`~deteval.diagnostics.bootstrap.bootstrap_coco` (a seed draws the same
        images for both when the images are the same).
    weights : array of int, shape (B, I), optional
        Explicit resamples: how many times each image (sorted by id, as lvis-api's
        ``img_ids``) is drawn. A row of ones is the evaluation itself.

    Returns
    -------
    BootstrapResult
        Numbers: the 13 ``stats`` by their names (``AP``, ``AP50``, ... ``APr``, ``APc``,
        ``APf``, ``AR@300`` ...) and ``AP[name]`` per category (``LVISResult.per_class``'s
        AP; a name several categories share gets ``#id``). Undefined (-1) in the evaluation
        (``APr`` without rare categories, say): -1 in ``estimates``; NaN in ``samples``
        where a resample leaves it undefined.

    Raises
    ------
    ValueError
        Bad settings, weights of the wrong shape, recall thresholds not increasing.
    """
    check_settings(n_resamples, confidence)
    threads = resolve_threads(threads)
    with prestart(threads, work_of(result, n_resamples, weights), _WORKER_MODULES) as pool:
        return run_bootstrap(WeightedLVIS(result), n_resamples=n_resamples,
                             confidence=confidence, seed=seed, weights=weights,
                             threads=threads, pool=pool)


def lvis_number_names(result: Any) -> tuple[str, ...]:
    """The numbers :func:`bootstrap_lvis` gives for ``result``: the 13 stats, then
    ``AP[name]`` per category (a name several categories share gets ``#id``)."""
    names = _distinct_names(result.category_names, result.category_ids)
    return tuple(result.stat_names) + tuple(f"AP[{n}]" for n in names)


def _distinct_names(names: tuple, ids: np.ndarray) -> tuple[str, ...]:
    names = list(names)
    return tuple(n if names.count(n) == 1 else f"{n}#{c}" for n, c in zip(names, ids.tolist()))


class WeightedLVIS:
    """An LVIS evaluation's numbers under image weights (see the module docstring)."""

    def __init__(self, result: Any) -> None:
        from ..protocols._coco_stages import state_of

        p = result.params
        self.result, self.params = result, p
        dataset, dt, table = result.dataset, result.detections, result.matches
        gt = dataset.gt
        # lvis-api's positions: images and categories by sorted id.
        image_pos = _positions(dataset.images.ids)
        category_pos = _positions(dataset.categories.ids)
        self.n_images, n_k = len(image_pos), len(category_pos)
        self.image_pos = image_pos
        kept = table.dt_kept
        cat = np.r_[category_pos, -1][dt.category_index]
        dt_k = np.where(kept, cat, -1)
        dt_img = np.where(kept, image_pos[dt.image_index], -1)
        gt_ok = (gt.area > 0) & (gt.area < np.inf)
        gt_k = np.where(gt_ok, category_pos[gt.category_index], -1)
        gt_img = image_pos[gt.image_index]
        state = state_of(table, dt_k, dt_img, dt.scores)
        counted = (gt_k >= 0)[None, :] & ~np.asarray(table.gt_ignore, dtype=bool)
        # Every kept result: no (image, category) group holds more than all of them.
        self.plan = COCOPlan.single(state, p, n_k, gt_k, gt_img, counted, max(len(dt), 1))
        self.category_names = _distinct_names(result.category_names, result.category_ids)
        self.category_ids = result.category_ids
        self.names = lvis_number_names(result)
        self._specs = _stat_selections(p, tuple(result.frequency))
        self.estimates = np.asarray(self.numbers(np.ones(self.n_images, np.int64)))

    def resamples(self, n_resamples: int, seed: Any,
                  weights: np.ndarray | None):
        """The weight rows: ``weights`` checked, or random ones drawn over the images in
        the ground truth's order (relabelling the ids draws the same images)."""
        return resample_rows(self.image_pos, self.n_images, n_resamples, seed, weights)

    def arrays(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``precision`` (T, R, K, A) and ``recall`` (T, K, A) under weights ``w``: those of
        ``evaluate_lvis`` on the weighted data set, in another memory order (the same
        values): enough for means over selections, as lvis-api takes them. They are this
        thread's scratch arrays, valid until its next call."""
        prec, rec, _ = self.plan.curves(w)
        (precision,) = prec.values()
        return precision, rec[0]

    def numbers(self, w: np.ndarray) -> list[float]:
        """The 13 stats and the per-category AP under weights ``w`` (-1 where undefined).

        A resample's AP-type numbers come from the per-segment sums over the recall
        thresholds (``COCOPlan.sums``: within a few ulps of lvis-api's means over the grid;
        ``docs/diagnostics/bootstrap.md`` §3); a row holding each image at most once (the row
        of ones: the evaluation's own numbers) from the grid, bit for bit.
        """
        from ..protocols.lvis import per_class_ap, summary_stats

        if use_sums(self.params, w):
            out = self.plan.sums(w)
            if out is not None:
                return self._numbers_of_sums(*out)
        precision, recall = self.arrays(w)
        stats = summary_stats(self.params, precision, recall, self.result.frequency)
        labels = list(self.params.area_labels)
        if labels.count("all") != 1:
            return stats.tolist() + per_class_ap(self.params, precision)
        # per_class_ap at once: a category's (T, R) block is all defined or all -1, and the
        # mean of a contiguous row is the mean of the same values as a 1-D array.
        block = precision[:, :, :, labels.index("all")]
        rows = np.ascontiguousarray(np.moveaxis(block, 2, 0)).reshape(block.shape[2], -1)
        if rows.shape[1] == 0:
            return stats.tolist() + [-1.0] * len(rows)
        return stats.tolist() + np.where(rows[:, 0] > -1, rows.mean(axis=1), -1.0).tolist()

    def _numbers_of_sums(self, sums: dict, rec: dict, events: dict) -> list[float]:
        """:meth:`numbers` from ``COCOPlan.sums``: the AP-type stats and the per-category AP
        from the sums (lvis-api's selections: thresholds, area, frequency group), the AR
        ones as lvis-api's summary takes them."""
        from ..protocols.lvis import summarize_lvis

        p = self.params
        n_r = len(p.recall_thresholds)
        values, ok = defined_sums(sums, events, {}, next(iter(sums)))
        out = []
        for is_ap, iou, area, categories in self._specs:
            if not is_ap:
                out.append(summarize_lvis(rec[0], p, iou, area))
            elif area is None or (categories is not None and not categories):
                out.append(-1.0)
            else:
                out.append(mean_of_sums(values, ok, n_r, iou, [area],
                                        slice(None) if categories is None else categories))
        areas = [a for a, label in enumerate(p.area_labels) if label == "all"]
        return out + per_class_of_sums(values, ok, areas, n_r)


def _stat_selections(p: Any, frequency: tuple) -> list[tuple]:
    """lvis-api's selection of each of the 13 stats (``protocols.lvis.STAT_SPECS``, as its
    ``_select`` reads them): AP or AR, the threshold positions (all: a slice), the area
    position (None when the label is not evaluated) and the categories (None: all)."""
    from ..io.lvis import FREQUENCIES
    from ..protocols.lvis import STAT_SPECS

    groups = [[k for k, f in enumerate(frequency) if f == name] for name in FREQUENCIES]
    labels = list(p.area_labels)
    out = []
    for is_ap, iou, area, group in STAT_SPECS:
        if not is_ap:
            out.append((False, iou, area, None))
            continue
        ious = slice(None) if iou is None else np.flatnonzero(
            iou == np.asarray(p.iou_thresholds))
        out.append((True, ious, labels.index(area) if area in labels else None,
                    None if group is None else groups[group]))
    return out


def _lvis_engine(weighted: WeightedLVIS) -> WeightedLVIS:
    """What a worker process gets: ``weighted`` without the result (``numbers`` reads its
    ``frequency``)."""
    return slim(weighted, result=SimpleNamespace(frequency=weighted.result.frequency))


register_engine(WeightedLVIS, _lvis_engine)


def _positions(ids: np.ndarray) -> np.ndarray:
    """Position of each row's id among the sorted ids."""
    order = np.argsort(ids, kind="stable")
    pos = np.empty(len(order), dtype=np.int64)
    pos[order] = np.arange(len(order))
    return pos
