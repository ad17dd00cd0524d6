"""Image-level bootstrap confidence intervals of the COCO numbers, from the match table.

A bootstrap resample draws the evaluated images with replacement (as many draws as images);
it is a vector of integer weights, one per image (how many times it was drawn). Every
number of the resampled data set is computed from the match table of the one evaluation
that was already run, without matching again: an image drawn ``w`` times contributes each of
its detections and objects ``w`` times, which is what evaluating a data set holding ``w``
copies of that image gives (the copies listed one after the other; the one difference, tied
scores of one image and category, is in ``docs/diagnostics/bootstrap.md`` §3). A resample's
AP-type numbers are summed in another order than the grid's means (within a few ulps, §3);
the evaluation's own numbers (``estimates``) are ``evaluate_coco``'s bit for bit.

The intervals are percentile intervals. The rules, the p-value of :mod:`compare`, and the
coverage measured on synthetic models are in ``docs/diagnostics/bootstrap.md``.

>>> import deteval
>>> from deteval.diagnostics.bootstrap import bootstrap_coco
>>> gt = {"images": [{"id": i, "width": 50, "height": 50} for i in (1, 2, 3)],
...       "categories": [{"id": 1, "name": "a"}],
...       "annotations": [{"id": i, "image_id": i, "category_id": 1, "bbox": [0, 0, 20, 20],
...                        "area": 400, "iscrowd": 0} for i in (1, 2, 3)]}
>>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 20, 20], "score": 0.9},
...       {"image_id": 2, "category_id": 1, "bbox": [25, 25, 20, 20], "score": 0.8},
...       {"image_id": 3, "category_id": 1, "bbox": [1, 1, 20, 20], "score": 0.7}]
>>> result = deteval.evaluate_coco(gt, dt)
>>> ci = bootstrap_coco(result, n_resamples=200, seed=0)
>>> ci.estimate("AP50") == result.stat("AP50")
True
>>> low, high = ci.interval("AP50")
>>> bool(low <= result.stat("AP50") <= high)
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from types import SimpleNamespace
from typing import Any

import numpy as np

from .._arrays import ReadOnlyArrays, frozen
from .._threads import pool_size, resolve_threads
from . import _bootstrap_plans as plans
from ._bootstrap_lrp import LRPPlan
from ._bootstrap_plans import COCOPlan, check_recall_thresholds
from ._bootstrap_workers import engine_of, prestart, register_engine, slim, work_of

__all__ = ["BootstrapResult", "bootstrap_coco", "bootstrap_result", "check_settings",
           "defined_sums", "interval_result", "mean_of_sums", "per_class_of_sums",
           "resample_rows", "resample_weights", "run_bootstrap", "slice_interval", "use_sums"]

#: Name of the F1 number added to the stats (micro F1 at IoU 0.5, area "all").
F1_NAME = "F1"

#: Name of moLRP (area "all", IoU 0.5, as :func:`deteval.lrp`'s first stat).
OLRP_NAME = "oLRP"


def resample_weights(n_images: int, n_resamples: int, seed: Any = None) -> Iterator[np.ndarray]:
    """Image weights of ``n_resamples`` bootstrap resamples, one array at a time.

    Each is the number of times each of the ``n_images`` images is drawn in ``n_images``
    draws with replacement (a multinomial vector summing to ``n_images``). The same seed gives
    the same resamples, whatever is evaluated on them (paired comparisons rely on it).

    >>> [w.tolist() for w in resample_weights(3, 2, seed=1)]
    [[0, 2, 1], [2, 0, 1]]
    """
    rng = np.random.default_rng(seed)
    for _ in range(n_resamples):
        yield np.bincount(rng.integers(0, n_images, n_images), minlength=n_images)


@dataclass(frozen=True, eq=False)
class BootstrapResult(ReadOnlyArrays):
    """Bootstrap intervals of the headline COCO numbers (or the VOC mAP) and the per-class
    AP.

    Values of a resample where a number is undefined (no object of a class drawn, say) are
    NaN in ``samples`` and left out of its interval; ``n_defined`` counts the others.

    Attributes
    ----------
    names : tuple of str
        The numbers: the COCO ``stats`` names (AP, AP50, ... AR100 ...), ``F1`` (micro F1 at
        IoU 0.5, area "all", detections scoring at least ``score_threshold``), ``oLRP``
        (moLRP at area "all", IoU 0.5, as :func:`deteval.lrp`), then ``AP[name]`` for each
        category. Of :func:`~deteval.diagnostics.bootstrap_voc.bootstrap_voc`: ``mAP``,
        ``mAP@t`` per IoU threshold when there are several, ``AP[name]``.
    estimates : ndarray, shape (N,)
        The numbers of the evaluation itself (equal to :func:`~deteval.evaluate_coco`'s);
        -1 where undefined.
    low, high : ndarray, shape (N,)
        The percentile interval; NaN where no resample defines the number.
    samples : ndarray, shape (B, N)
        The number in each resample (NaN where undefined).
    n_defined : ndarray of int, shape (N,)
    confidence : float
    n_resamples : int
    seed : object
    score_threshold : float or None
        Of ``F1`` (None for VOC, which has no F1).
    category_ids : ndarray, shape (K,)
    category_names : tuple of str
    """

    names: tuple[str, ...]
    estimates: np.ndarray
    low: np.ndarray
    high: np.ndarray
    samples: np.ndarray
    n_defined: np.ndarray
    confidence: float
    n_resamples: int
    seed: Any
    score_threshold: float | None
    category_ids: np.ndarray
    category_names: tuple[str, ...]
    _index: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for name in ("estimates", "low", "high", "samples", "n_defined", "category_ids"):
            frozen(getattr(self, name))
        self._index.update({n: i for i, n in enumerate(self.names)})

    def _at(self, name: str) -> int:
        if name not in self._index:
            raise KeyError(f"unknown number {name!r}; choose one of {', '.join(self.names)}")
        return self._index[name]

    def estimate(self, name: str) -> float:
        """The evaluation's value of ``name`` (``"AP"``, ``"AR100"``, ``"AP[person]"``...)."""
        return float(self.estimates[self._at(name)])

    def interval(self, name: str) -> tuple[float, float]:
        """The percentile interval ``(low, high)`` of ``name``."""
        i = self._at(name)
        return float(self.low[i]), float(self.high[i])

    def rows(self) -> list[dict[str, Any]]:
        """One dict per number: name, estimate, low, high, n_defined (JSON-ready; NaN as
        None)."""
        return [{"name": n, "estimate": _json_number(e), "low": _json_number(lo),
                 "high": _json_number(hi), "n_defined": int(d)}
                for n, e, lo, hi, d in zip(self.names, self.estimates, self.low, self.high,
                                           self.n_defined)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: settings and :meth:`rows` (what ``--json`` writes and the HTML report
        reads)."""
        return {"method": "image bootstrap, percentile interval",
                "confidence": self.confidence, "n_resamples": self.n_resamples,
                "seed": self.seed if isinstance(self.seed, (int, type(None))) else str(self.seed),
                "score_threshold": self.score_threshold, "intervals": self.rows()}

    def table(self) -> str:
        """A plain-text table: number, estimate, interval."""
        pct = f"{100 * self.confidence:g}%"
        width = max(len(n) for n in self.names)
        lines = [f"{'number':<{width}}  estimate  {pct} interval"]
        for n, e, lo, hi in zip(self.names, self.estimates, self.low, self.high):
            lines.append(f"{n:<{width}}  {'-':>8}  -" if e < 0 else
                         f"{n:<{width}}  {e:8.3f}  [{lo:.3f}, {hi:.3f}]")
        return "\n".join(lines)


def _json_number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, ...]:
    """Low and high percentiles of each column (NaN left out) and the defined counts.

    The numbers of ``np.nanpercentile(samples, ..., axis=0)`` (the linear rule), computed
    without its loop over the columns that hold a NaN: sorted, a column's NaNs come last,
    and its percentiles are those of its first ``n_defined`` entries, which
    ``np.percentile`` takes for every column of one count at once (the same order
    statistics and the same interpolation per entry, so the same floats).

    >>> lo, hi, n = percentile_interval(np.array([[1.0], [2.0], [3.0], [np.nan]]), 0.5)
    >>> lo.tolist(), hi.tolist(), n.tolist()
    ([1.5], [2.5], [3])
    """
    alpha = 1.0 - confidence
    defined = ~np.isnan(samples)
    n_defined = defined.sum(axis=0)
    low = np.full(samples.shape[1], np.nan)
    high = np.full(samples.shape[1], np.nan)
    counts = np.unique(n_defined[n_defined > 0])
    ordered = np.sort(samples, axis=0)      # sorted, the selection below is quick too
    for n in counts.tolist():
        columns = np.flatnonzero(n_defined == n)
        with np.errstate(all="ignore"):     # inf - inf: NaN, as nanpercentile, quietly
            q = np.percentile(ordered[:n, columns],
                              [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
        low[columns], high[columns] = q
    return low, high, n_defined


def check_settings(n_resamples: int, confidence: float) -> None:
    """ValueError for a number of resamples that is not a positive integer, or a confidence
    level outside (0, 1)."""
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) \
            or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer; got {n_resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}")


def bootstrap_coco(result: Any, *, n_resamples: int = 1000, confidence: float = 0.95,
                   seed: Any = None, score_threshold: float = 0.5,
                   weights: np.ndarray | None = None,
                   threads: int | None = None) -> BootstrapResult:
    """Image-level bootstrap intervals of a COCO evaluation's numbers.

    Parameters
    ----------
    result : COCOResult
        Of :func:`~deteval.evaluate_coco` (it keeps the match table; the result of a
        streaming :class:`~deteval.Evaluator` does not and is refused).
    n_resamples : int
        B, the number of resamples (default 1000).
    confidence : float
        Of the percentile interval (default 0.95: the 2.5th and 97.5th percentiles).
    seed : int or numpy Generator, optional
        Of the resampling; the same seed gives the same resamples.
    score_threshold : float
        Detections scoring at least this count for ``F1``.
    weights : array of int, shape (B, I), optional
        Explicit resamples instead of random ones: how many times each evaluated image
        (in the order of ``result.params.image_ids``, sorted) is drawn. A row of ones is the
        evaluation itself. Random resamples draw the images in the ground truth's order, so
        that relabelling the image ids draws the same images.
    threads : int, optional
        Resamples computed at a time, each on its own thread (None: every core); the
        numbers are identical for every value (``docs/diagnostics/bootstrap.md`` §13).

    Returns
    -------
    BootstrapResult

    Raises
    ------
    ValueError
        A result without match table, bad settings, weights of the wrong shape.
    """
    check_settings(n_resamples, confidence)
    threads = resolve_threads(threads)
    # Worker processes (§13) start now, beside the plans' building, when the work looks long.
    with prestart(threads, work_of(result, n_resamples, weights), _WORKER_MODULES) as pool:
        weighted = WeightedCOCO(result, score_threshold=score_threshold, estimates=False)
        rows = weighted.resamples(n_resamples, seed, weights)
        count = n_resamples if weights is None else len(weights)
        # The estimates are the first row's numbers (every image once), computed with the
        # resamples: the workers get the plans without waiting for them (§13).
        samples = resampled(weighted.numbers, chain([weighted.identity()], rows), threads,
                            count=count + 1, pool=pool, engine=lambda: engine_of(weighted))
        samples = samples.reshape(-1, len(weighted.names))
        weighted.estimates = samples[0].copy()
        # Computed while the workers exit (the pool waits for them on leaving).
        return interval_result(weighted, samples[1:], confidence=confidence, seed=seed)


def _coco_engine(weighted: WeightedCOCO) -> WeightedCOCO:
    """What a worker process gets: ``weighted`` without the result, the context and the
    state (``numbers`` reads the category count of the context)."""
    return slim(weighted, ctx=SimpleNamespace(n_k=weighted.ctx.n_k))


#: What a COCO worker imports while the plans are built (the engine's classes and the
#: functions its numbers import).
_WORKER_MODULES = ("deteval.diagnostics.bootstrap", "deteval.protocols.coco",
                   "deteval.diagnostics.lrp")


def resampled(numbers: Callable[[np.ndarray], Any], rows: Iterable[np.ndarray],
              threads: int, *, count: int | None = None,
              engine: Callable[[], Any] | None = None, pool: Any = None,
              preload: tuple = ()) -> np.ndarray:
    """``np.array([numbers(w) for w in rows])`` (float64), computed on up to ``threads``
    threads, or by the calling thread and worker processes when the work is long
    (``_bootstrap_workers.run_blocks``; ``count`` rows, ``engine`` the picklable copy the
    workers get, ``pool`` workers started ahead, ``preload`` the protocol's modules a worker
    started without a pool imports and whose code it checks: default ``pool``'s).

    Each resample's numbers depend on its weights alone, so they are the same on any thread
    or process and for any ``threads``; the rows keep their order (the seed's).

    >>> resampled(lambda w: [float(w.sum())], iter([np.ones(2), np.zeros(2)]), 2).tolist()
    [[2.0], [0.0]]
    """
    if pool_size(threads) <= 1:
        return np.array([numbers(w) for w in rows], dtype=np.float64)
    from ._bootstrap_workers import run_blocks

    return run_blocks(numbers, rows, threads, count=count, engine=engine, pool=pool,
                      preload=preload)


def interval_result(weighted: Any, samples: np.ndarray, *, confidence: float,
                    seed: Any) -> BootstrapResult:
    """The :class:`BootstrapResult` of a weighted evaluation (``WeightedCOCO``,
    ``WeightedVOC``) and its resampled numbers ``samples`` (B, N), -1 where undefined (set to
    NaN here, in place)."""
    return bootstrap_result(weighted.names, weighted.estimates, samples, confidence=confidence,
                            seed=seed, category_ids=weighted.result.category_ids,
                            category_names=weighted.category_names,
                            score_threshold=weighted.score_threshold)


def run_bootstrap(weighted: Any, *, n_resamples: int, confidence: float, seed: Any,
                  weights: np.ndarray | None, threads: int, pool: Any = None
                  ) -> BootstrapResult:
    """The numbers of ``weighted`` (``WeightedLVIS``, ``WeightedCrowdPose``,
    ``WeightedOpenImages``: its ``names``, ``estimates``, ``category_ids``,
    ``category_names``, ``resamples`` and ``numbers(w)``) on each resample, computed on up
    to ``threads`` threads or worker processes (:func:`resampled`: identical for every
    ``threads``; ``pool`` workers started ahead, which get ``engine_of(weighted)``), and
    their intervals. The settings are checked by the caller, before any
    work."""
    rows = weighted.resamples(n_resamples, seed, weights)
    samples = resampled(weighted.numbers, rows, threads, pool=pool,
                        count=n_resamples if weights is None else len(weights),
                        engine=lambda: engine_of(weighted))
    return bootstrap_result(weighted.names, weighted.estimates,
                            samples.reshape(-1, len(weighted.names)), confidence=confidence,
                            seed=seed, category_ids=weighted.category_ids,
                            category_names=weighted.category_names)


def bootstrap_result(names: tuple, estimates: np.ndarray, samples: np.ndarray, *,
                     confidence: float, seed: Any, category_ids: np.ndarray,
                     category_names: tuple, score_threshold: float | None = None
                     ) -> BootstrapResult:
    """The :class:`BootstrapResult` of resampled numbers ``samples`` (B, N): undefined ones
    (-1 or NaN) are NaN in ``samples`` (in place when it is a float64 array) and -1 in
    ``estimates``; ``score_threshold`` is F1's (None without F1)."""
    samples = np.asarray(samples, dtype=np.float64)
    if samples.ndim != 2:           # a (B, N) array stays the same object (compare reads it)
        samples = samples.reshape(-1, len(names))
    samples[samples < 0] = np.nan
    estimates = np.where(np.isnan(estimates), -1.0, estimates)
    low, high, n_defined = percentile_interval(samples, confidence)
    return BootstrapResult(names=tuple(names), estimates=estimates, low=low, high=high,
                           samples=samples, n_defined=n_defined, confidence=float(confidence),
                           n_resamples=len(samples), seed=seed,
                           score_threshold=score_threshold,
                           category_ids=np.asarray(category_ids),
                           category_names=tuple(category_names))


def resample_rows(position: np.ndarray, n_images: int, n_resamples: int, seed: Any,
                  weights: np.ndarray | None) -> Iterator[np.ndarray]:
    """The weight rows of a bootstrap: ``weights`` checked (shape (B, n_images)), or random
    resamples drawn over the images ``position`` lists (the evaluated images in the ground
    truth's order, as their columns) and placed at those columns (the others get 0)."""
    if weights is None:
        return (_placed(w, position, n_images) for w in
                resample_weights(len(position), n_resamples, seed))
    weights = np.asarray(weights)
    if weights.ndim != 2 or weights.shape[1] != n_images:
        raise ValueError(f"weights must have shape (B, {n_images}) (one column per "
                         f"evaluated image); got {weights.shape}")
    if not np.issubdtype(weights.dtype, np.integer) or (weights < 0).any():
        raise ValueError("weights must be non-negative integers (times each image is drawn)")
    return iter(weights.astype(np.int64))


def slice_interval(*, n_resamples: int = 1000, confidence: float = 0.95, seed: Any = 0,
                   metric: str = "AP", threads: int | None = None):
    """An ``interval`` function for :func:`~deteval.slices`: the bootstrap interval of
    ``metric`` over one image slice.

    Each resample draws the slice's images with replacement (as many draws as the slice has
    images) and gives every other image weight 0, so the numbers are those of the slice alone
    (a row of ones on the slice's images equals ``evaluate_coco(..., image_ids=slice)``).

    Parameters
    ----------
    n_resamples, confidence, seed
        As in :func:`bootstrap_coco`; every slice uses the same seed.
    metric : str
        The number whose interval is returned (default ``"AP"``).
    threads : int, optional
        The resamples' threads, as in :func:`bootstrap_coco` (the interval is the same for
        every value).

    Returns
    -------
    callable
        ``interval(result, image_ids) -> (low, high)``.

    Examples
    --------
    >>> import deteval
    >>> from deteval.demo import make_demo
    >>> gt, dt = make_demo()
    >>> tags = {image["id"]: {"half": "first" if image["id"] % 2 else "second"}
    ...         for image in gt["images"]}
    >>> sliced = deteval.slices(gt, dt, by=["half", "size"], tags=tags,
    ...                         interval=slice_interval(n_resamples=50))
    >>> first = sliced.get("half", "first")
    >>> low, high = first.interval
    >>> bool(low <= first.stats["AP"] <= high)
    True
    >>> sliced.get("size", "small").interval is None   # object slices have no interval
    True
    """
    check_settings(n_resamples, confidence)

    def interval(result: Any, image_ids: np.ndarray) -> tuple[float, float]:
        evaluated = np.sort(np.asarray(result.params.image_ids))
        rows = np.flatnonzero(np.isin(evaluated, image_ids))
        weights = np.zeros((n_resamples, len(evaluated)), dtype=np.int64)
        if len(rows):
            rng = np.random.default_rng(seed)
            draws = rows[rng.integers(0, len(rows), (n_resamples, len(rows)))]
            flat = (np.arange(n_resamples)[:, None] * len(evaluated) + draws).ravel()
            weights = np.bincount(flat, minlength=weights.size).reshape(weights.shape)
        boot = bootstrap_coco(result, n_resamples=n_resamples, confidence=confidence,
                              weights=weights, threads=threads)
        return boot.interval(metric)

    return interval


def category_labels(ctx: Any) -> tuple[str, ...]:
    """The name of each category position (``"all categories"`` when pooled); a name that
    several categories share gets its id (``name#id``), so that every number has its own
    name."""
    if not ctx.params.use_categories:
        return ("all categories",)
    categories = ctx.dataset.categories
    by_id = dict(zip(categories.ids.tolist(), categories.names))
    names = [str(by_id.get(c, c)) for c in ctx.category_ids.tolist()]
    return tuple(n if names.count(n) == 1 else f"{n}#{c}"
                 for n, c in zip(names, ctx.category_ids.tolist()))


class WeightedCOCO:
    """A COCO evaluation's numbers under image weights (see the module docstring).

    Everything that does not depend on the weights (accumulation order, match events,
    segment boundaries) is computed once here; :meth:`numbers` then costs a few passes over
    the detections and match events of the largest max-detections setting.

    ``estimates`` (the numbers under a row of ones: the evaluation's own) is computed here,
    unless ``estimates=False``: the caller then sets it (:func:`bootstrap_coco` computes that
    row with the resamples, so that the worker processes get the plans without waiting for
    it).
    """

    def __init__(self, result: Any, *, score_threshold: float = 0.5,
                 estimates: bool = True) -> None:
        from ..protocols._coco_stages import prepare
        from ..protocols.coco import stat_specs

        if getattr(result, "matches", None) is None or getattr(result, "detections",
                                                                None) is None:
            raise ValueError("bootstrap needs a result of evaluate_coco (with its match table); "
                             "a streaming Evaluator's result keeps none")
        p = result.params
        check_recall_thresholds(p)
        self.result = result
        self.params = p
        self.ctx = prepare(result.dataset, p)
        self.n_images = len(self.ctx.image_ids)
        self.state = _state_of_result(result, self.ctx)
        self.specs = stat_specs(p)
        self.score_threshold = float(score_threshold)
        self.category_names = category_labels(self.ctx)
        k_names = tuple(f"AP[{n}]" for n in self.category_names)
        self.names = tuple(result.stat_names) + (F1_NAME, OLRP_NAME) + k_names
        self._plan = COCOPlan(self.ctx, self.state, self.specs)
        self.lrp_of_result = LRPPlan(self.ctx, self._plan, result)
        self._f1 = f1_counts(self.ctx, self.state, result.matches, self.score_threshold,
                             self.n_images)
        self._selections = [self._selection(*spec) for spec in self.specs]
        if estimates:
            self.estimates = np.asarray(self.numbers(self.identity()))

    def identity(self) -> np.ndarray:
        """The weights of the evaluation itself: every image once, shape (I,)."""
        return np.ones(self.n_images, np.int64)

    def resamples(self, n_resamples: int, seed: Any,
                  weights: np.ndarray | None) -> Iterator[np.ndarray]:
        """The weight rows: ``weights`` checked, or random ones."""
        # Drawn over the images in the ground truth's order (not by id), mapped to the
        # evaluation's sorted image positions: relabelling the ids draws the same images.
        position = self.ctx.image_pos_of_row
        return resample_rows(position.compress(position >= 0), self.n_images, n_resamples,
                             seed, weights)

    def numbers(self, w: np.ndarray) -> list[float]:
        """The stats, F1 and per-class AP under image weights ``w`` (shape (I,)).

        A resample's AP-type numbers come from the per-segment sums over the recall
        thresholds (:meth:`COCOPlan.sums`: within a few ulps of the grid's means); a row
        holding each image at most once (the row of ones: the evaluation's own numbers) and
        repeated max-detections settings from the precision grid, as ``evaluate_coco`` (bit
        for bit; :func:`use_sums`).
        """
        from ..protocols.coco import summarize_value

        p = self.params
        distinct = len(set(p.max_detections)) == len(p.max_detections)
        if distinct and use_sums(p, w):
            out = self._plan.sums(w)
            if out is not None:
                sums, rec, events = out
                olrp = self.lrp_of_result.molrp(w, events.get(100))
                cache: dict = {}
                return (self._stats(None, rec, sums=(sums, events, cache))
                        + [micro_f1(self._f1, w), olrp]
                        + self._per_class_of_sums(sums, events, cache))
        prec, rec, events = self._plan.curves(w)
        if distinct:
            stats = self._stats(prec, rec)
        else:   # repeated settings: pycocotools' paired indexing, on the full arrays
            precision, recall = self._plan.full(prec, rec)
            stats = [summarize_value(precision if is_ap else recall, p, iou, area, m)
                     for is_ap, iou, area, m in self.specs]
        olrp = self.lrp_of_result.molrp(w, events.get(100))
        return stats + [micro_f1(self._f1, w), olrp] + self._per_class(prec)

    def _selection(self, is_ap: bool, iou: float | None, area: str, m: int | None) -> tuple:
        """Where one stat reads ``curves``' arrays, as ``summarize_value`` reads the arrays of
        its max-detections setting (the same values in the same order, so the same mean):
        ``(is_ap, key, index)``, ``key`` None when the setting or the area range is not
        evaluated (-1)."""
        p = self.params
        max_det = (20 if p.iou_type == "keypoints" else 100) if m is None else \
            p.max_detections[m]
        if max_det not in p.max_detections:
            return is_ap, None, None
        areas = [i for i, label in enumerate(p.area_labels) if label == area]
        if not areas:           # no such area range: summarize_value's empty selection, -1
            return is_ap, None, None
        key = max_det if is_ap else p.max_detections.index(max_det)
        iou_at = (slice(None) if iou is None
                  else _run(np.flatnonzero(iou == np.asarray(p.iou_thresholds))))
        return is_ap, key, (iou_at, Ellipsis, _run(areas))

    def _stats(self, prec: dict | None, rec: dict, *, sums: tuple | None = None
               ) -> list[float]:
        """The stats of ``self._selections`` from ``curves``' arrays (the AP-type ones from
        ``sums``, when given: ``COCOPlan.sums``' sums and events, and a cache).

        An entry is -1 exactly where its (category, area) has no positive (``curves``), for
        every threshold: when no such pair is selected, the mean is that of the selection
        itself in C order (the entries the boolean selection would keep, in its order: the
        same pairwise sum), without the comparison and the compress; ``curves`` lays the
        precision out so that an area's selection is one contiguous block, read as it lies.
        """
        out, defined = [], {}
        for is_ap, key, at in self._selections:
            if key is None:
                out.append(-1.0)
                continue
            if is_ap and sums is not None:
                values, ok = defined_sums(*sums, key)
                out.append(mean_of_sums(values, ok, len(self.params.recall_thresholds),
                                        at[0], at[2]))
                continue
            values = prec[key] if is_ap else rec[key]
            ok = defined.get((is_ap, key))
            if ok is None:          # (K, A): no -1 entry for that pair
                ok = defined[is_ap, key] = values[(0,) * (values.ndim - 2)] > -1
            if ok[:, at[2]].all():
                out.append(_mean_of(np.ascontiguousarray(values[at[0]][at[1:]])))
            else:
                out.append(_mean_valid(values, at))
        return out

    def _per_class_of_sums(self, sums: dict, events: dict, cache: dict) -> list[float]:
        """:meth:`_per_class` from ``COCOPlan.sums`` (:func:`per_class_of_sums` at the
        areas "all")."""
        p = self.params
        values, ok = defined_sums(sums, events, cache, p.max_detections[self._plan.m_star])
        areas = [i for i, label in enumerate(p.area_labels) if label == "all"]
        return per_class_of_sums(values, ok, areas, len(p.recall_thresholds))

    def _per_class(self, prec: dict) -> list[float]:
        """``COCOResult.per_class()``'s AP of each category (summarize_value at area "all"
        and the AP setting, per category)."""
        p = self.params
        max_det = p.max_detections[self._plan.m_star]
        areas = [i for i, label in enumerate(p.area_labels) if label == "all"]
        values = prec[max_det][..., _run(areas)]                 # (T, R, K, A')
        # One block per category, all defined or all -1: the mean of each row is the mean
        # summarize_value takes (numpy sums a contiguous row as it sums a 1-D array).
        values = np.ascontiguousarray(np.moveaxis(values, 2, 0)).reshape(self.ctx.n_k, -1)
        if values.shape[1] == 0:
            return [-1.0] * self.ctx.n_k
        if len(areas) > 1:
            return [float(np.mean(v[v > -1])) if (v > -1).any() else -1.0 for v in values]
        return np.where(values[:, 0] > -1, values.mean(axis=1), -1.0).tolist()


def use_sums(params: Any, w: np.ndarray) -> bool:
    """Whether a resample's AP-type numbers come from the recall-threshold sums
    (``_bootstrap_plans.SUM_RECALL``, some thresholds, and some image weighs more than 1: a
    row holding each image at most once, such as the row of ones, is an evaluation of those
    images, whose numbers come from the grid, bit for bit)."""
    return bool(plans.SUM_RECALL and len(params.recall_thresholds)
                and len(params.iou_thresholds) and np.max(w, initial=0) > 1)


def defined_sums(sums: dict, events: dict, cache: dict, key: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The (A, T, K) recall-threshold sums of max-detections ``key`` (``COCOPlan.sums``),
    0 where the (category, area) has no positive, and the (A, K) mask of the defined pairs
    (kept in ``cache``)."""
    got = cache.get(key)
    if got is None:
        ok = events[key][-1].T > 0                                    # (A, K)
        got = cache[key] = (np.where(ok[:, None, :], sums[key], 0.0), ok)
    return got


def mean_of_sums(values: np.ndarray, ok: np.ndarray, n_r: int, iou: Any = slice(None),
                 area: Any = slice(None), categories: Any = slice(None)) -> float:
    """The mean over the recall thresholds and the defined entries of a selection of the
    (A, T, K) recall-threshold sums ``values`` (0 where undefined; ``ok`` (A, K) the
    defined (area, category) pairs): the sum of the selected sums over ``n_r`` times the
    number of defined (area, threshold, category) entries selected; -1 when there are none.
    ``iou``, ``area`` and ``categories`` index the thresholds, areas and categories.

    >>> sums = np.array([[[1.5, 0.0], [0.5, 0.0]]])                  # 1 area, 2 IoU, 2 cats
    >>> mean_of_sums(sums, np.array([[True, False]]), 2)
    0.5
    >>> mean_of_sums(sums, np.array([[True, False]]), 2, iou=[0], categories=[1])
    -1.0
    """
    block = values[area][:, iou][:, :, categories]                    # (A', T', K')
    n = int(np.count_nonzero(ok[area][:, categories])) * block.shape[1] * n_r
    return float(block.sum()) / n if n else -1.0


def per_class_of_sums(values: np.ndarray, ok: np.ndarray, areas: list, n_r: int) -> list:
    """Per category, the mean over the thresholds, recall thresholds and defined areas
    ``areas`` of the (A, T, K) recall-threshold sums ``values`` (``ok`` as in
    :func:`mean_of_sums`); -1 where no such area is defined.

    >>> per_class_of_sums(np.array([[[1.5, 0.0], [0.5, 0.0]]]), np.array([[True, False]]),
    ...                   [0], 2)
    [0.5, -1.0]
    """
    if not areas:
        return [-1.0] * values.shape[2]
    total = values[areas].sum(axis=(0, 1))                                # (K,)
    n = ok[areas].sum(axis=0) * (values.shape[1] * n_r)
    return np.where(n > 0, total / np.maximum(n, 1), -1.0).tolist()


def _mean_valid(values: np.ndarray, at: tuple) -> float:
    """The mean of the entries > -1 of ``values[at[0]][at[1:]]`` (-1 when there are none).

    >>> _mean_valid(np.array([[0.5, -1.0], [1.0, 0.0]]), (slice(None), Ellipsis, slice(0, 1)))
    0.75
    """
    values = values[at[0]][at[1:]]
    valid = values[values > -1]         # a view's entries in C order, as the copy's
    return -1.0 if len(valid) == 0 else float(np.mean(valid))


def _mean_of(values: np.ndarray) -> float:
    """The mean of a C-contiguous array whose entries are all > -1, as ``np.mean`` of its
    flat copy (a contiguous array is summed as one run); -1 when it is empty.

    >>> _mean_of(np.array([[0.5, 1.0], [1.0, 0.0]]))
    0.625
    """
    # np.mean's own arithmetic: the (pairwise) sum of the one run, then divided by the count.
    return float(np.add.reduce(values.reshape(-1))) / values.size if values.size else -1.0


def f1_counts(ctx: Any, state: Any, table: Any, threshold: float, n_images: int):
    """Per-image TP, FP and positive counts behind micro F1 at IoU 0.5, area "all", the
    largest max-detections setting, detections scoring at least ``threshold``; None when
    0.5 or "all" is not evaluated."""
    p = ctx.params
    iou = np.flatnonzero(np.asarray(p.iou_thresholds) == 0.5)
    area = [i for i, label in enumerate(p.area_labels) if label == "all"]
    if not len(iou) or not area:
        return None
    t, a, n_t = int(iou[0]), area[0], len(p.iou_thresholds)
    n = len(state)
    at_here = np.asarray(state.event_at, dtype=np.int64) == a * n_t + t
    rows = np.asarray(state.event_row, dtype=np.int64).compress(at_here)
    status = np.zeros(n, np.int8)             # 0 FP, 1 TP, 2 ignored
    status[rows] = np.where(np.asarray(state.event_ignored).compress(at_here), 2, 1)
    status[(status == 0) & state.out_of_range[a]] = 2
    counted = state.score >= threshold
    image = np.asarray(state.image, dtype=np.int64)
    tp = np.bincount(image[counted & (status == 1)], minlength=n_images)
    fp = np.bincount(image[counted & (status == 0)], minlength=n_images)
    gt = ctx.dataset.gt
    lo, hi = p.area_ranges[a]
    pos = (ctx.gt_k >= 0) & ~ctx.gt_ignore & (gt.area >= lo) & (gt.area <= hi)
    npos = np.bincount(ctx.gt_img[pos], minlength=n_images)
    return tp, fp, npos


def micro_f1(counts, w: np.ndarray) -> float:
    """Micro F1 = 2 TP / (2 TP + FP + FN) under weights; -1 when there is nothing to count."""
    if counts is None:
        return -1.0
    tp, fp, npos = (int(np.dot(c, w)) for c in counts)
    denominator = tp + fp + npos
    return -1.0 if denominator == 0 else 2.0 * tp / denominator


def _run(index: Any) -> Any:
    """``index`` as a slice when it is one increasing run (a view instead of a copy, the same
    entries in the same order), else as it is.

    >>> _run([2, 3]), _run([0, 2])
    (slice(2, 4, None), [0, 2])
    """
    index_list = [int(i) for i in index]
    if index_list and index_list == list(range(index_list[0], index_list[0] + len(index_list))):
        return slice(index_list[0], index_list[0] + len(index_list))
    return index


def _placed(w: np.ndarray, position: np.ndarray, n_images: int) -> np.ndarray:
    out = np.zeros(n_images, w.dtype)
    out[position] = w
    return out


def _state_of_result(result: Any, ctx: Any):
    """The accumulation state of an evaluate_coco result, from its match table."""
    from ..protocols._coco_stages import state_of_result

    return state_of_result(ctx, result)


register_engine(WeightedCOCO, _coco_engine)
