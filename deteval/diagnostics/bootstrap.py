"""Image-level bootstrap confidence intervals of the COCO numbers, from the match table.

A bootstrap resample draws the evaluated images with replacement (as many draws as images);
it is a vector of integer weights, one per image (how many times it was drawn). Every
number of the resampled data set is computed from the match table of the one evaluation
that was already run, without matching again: an image drawn ``w`` times contributes each of
its detections and objects ``w`` times, which is what evaluating a data set holding ``w``
copies of that image gives (the copies listed one after the other; the one difference, tied
scores of one image and category, is in ``docs/diagnostics/bootstrap.md`` §3).

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

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._arrays import frozen

__all__ = ["BootstrapResult", "bootstrap_coco", "interval_result", "resample_rows",
           "resample_weights", "slice_interval"]

_EPS = np.spacing(1)

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
class BootstrapResult:
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

    >>> lo, hi, n = percentile_interval(np.array([[1.0], [2.0], [3.0], [np.nan]]), 0.5)
    >>> lo.tolist(), hi.tolist(), n.tolist()
    ([1.5], [2.5], [3])
    """
    alpha = 1.0 - confidence
    defined = ~np.isnan(samples)
    n_defined = defined.sum(axis=0)
    low = np.full(samples.shape[1], np.nan)
    high = np.full(samples.shape[1], np.nan)
    ok = n_defined > 0
    if ok.any():
        with np.errstate(all="ignore"):
            q = np.nanpercentile(samples[:, ok], [100 * alpha / 2, 100 * (1 - alpha / 2)],
                                 axis=0)
        low[ok], high[ok] = q
    return low, high, n_defined


def _check(n_resamples: int, confidence: float) -> None:
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer; got {n_resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}")


def bootstrap_coco(result: Any, *, n_resamples: int = 1000, confidence: float = 0.95,
                   seed: Any = None, score_threshold: float = 0.5,
                   weights: np.ndarray | None = None) -> BootstrapResult:
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

    Returns
    -------
    BootstrapResult

    Raises
    ------
    ValueError
        A result without match table, bad settings, weights of the wrong shape.
    """
    _check(n_resamples, confidence)
    weighted = WeightedCOCO(result, score_threshold=score_threshold)
    rows = weighted.resamples(n_resamples, seed, weights)
    samples = np.array([weighted.numbers(w) for w in rows], dtype=np.float64)
    return interval_result(weighted, samples.reshape(-1, len(weighted.names)),
                           confidence=confidence, seed=seed)


def interval_result(weighted: Any, samples: np.ndarray, *, confidence: float,
                    seed: Any) -> BootstrapResult:
    """The :class:`BootstrapResult` of a weighted evaluation (``WeightedCOCO``,
    ``WeightedVOC``) and its resampled numbers ``samples`` (B, N), -1 where undefined (set to
    NaN here, in place)."""
    samples[samples < 0] = np.nan
    low, high, n_defined = percentile_interval(samples, confidence)
    return BootstrapResult(
        names=weighted.names, estimates=weighted.estimates, low=low, high=high,
        samples=samples, n_defined=n_defined, confidence=float(confidence),
        n_resamples=len(samples), seed=seed, score_threshold=weighted.score_threshold,
        category_ids=np.asarray(weighted.result.category_ids),
        category_names=weighted.category_names)


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
                   metric: str = "AP"):
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
    _check(n_resamples, confidence)

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
                              weights=weights)
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
    """

    def __init__(self, result: Any, *, score_threshold: float = 0.5) -> None:
        from ..protocols._coco_stages import prepare
        from ..protocols.coco import stat_specs

        if getattr(result, "matches", None) is None or getattr(result, "detections",
                                                                None) is None:
            raise ValueError("bootstrap needs a result of evaluate_coco (with its match table); "
                             "a streaming Evaluator's result keeps none")
        p = result.params
        thresholds_r = np.asarray(p.recall_thresholds, dtype=np.float64)
        if np.any(np.diff(thresholds_r) < 0):
            raise ValueError("bootstrap needs recall_thresholds in increasing order; got "
                             f"{p.recall_thresholds}")
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
        self._plan = _Plan(self.ctx, self.state, self.specs)
        self.lrp_of_result = _LRPPlan(self.ctx, self.state, result)
        self._f1 = _f1_counts(self.ctx, self.state, result.matches, self.score_threshold,
                              self.n_images)
        self.estimates = np.asarray(self.numbers(np.ones(self.n_images, np.int64)))

    def resamples(self, n_resamples: int, seed: Any,
                  weights: np.ndarray | None) -> Iterator[np.ndarray]:
        """The weight rows: ``weights`` checked, or random ones."""
        # Drawn over the images in the ground truth's order (not by id), mapped to the
        # evaluation's sorted image positions: relabelling the ids draws the same images.
        position = self.ctx.image_pos_of_row
        return resample_rows(position.compress(position >= 0), self.n_images, n_resamples,
                             seed, weights)

    def numbers(self, w: np.ndarray) -> list[float]:
        """The stats, F1 and per-class AP under image weights ``w`` (shape (I,))."""
        from ..protocols.coco import summarize_value

        prec, rec = self._plan.curves(w)
        p = self.params
        if len(set(p.max_detections)) == len(p.max_detections):
            stats = [self._stat(prec, rec, *spec) for spec in self.specs]
        else:   # repeated settings: pycocotools' paired indexing, on the full arrays
            precision, recall = self._plan.full(prec, rec)
            stats = [summarize_value(precision if is_ap else recall, p, iou, area, m)
                     for is_ap, iou, area, m in self.specs]
        return stats + [_f1(self._f1, w), self.lrp_of_result.molrp(w)] + self._per_class(prec)

    def _stat(self, prec: dict, rec: dict, is_ap: bool, iou: float | None, area: str,
              m: int | None) -> float:
        """``summarize_value`` on the arrays of one max-detections setting (the same values
        in the same order, so the same mean)."""
        p = self.params
        max_det = (20 if p.iou_type == "keypoints" else 100) if m is None else \
            p.max_detections[m]
        if max_det not in p.max_detections:
            return -1.0
        values = prec[max_det] if is_ap else rec[p.max_detections.index(max_det)]
        if iou is not None:
            values = values[np.where(iou == np.asarray(p.iou_thresholds))[0]]
        values = values[..., [i for i, label in enumerate(p.area_labels) if label == area]]
        valid = values[values > -1]
        return -1.0 if len(valid) == 0 else float(np.mean(valid))

    def _per_class(self, prec: dict) -> list[float]:
        """``COCOResult.per_class()``'s AP of each category (summarize_value at area "all"
        and the AP setting, per category)."""
        p = self.params
        max_det = p.max_detections[self._plan.m_star]
        areas = [i for i, label in enumerate(p.area_labels) if label == "all"]
        values = prec[max_det][..., areas]                       # (T, R, K, A')
        # One block per category, all defined or all -1: the mean of each row is the mean
        # summarize_value takes (numpy sums a contiguous row as it sums a 1-D array).
        values = np.ascontiguousarray(np.moveaxis(values, 2, 0)).reshape(self.ctx.n_k, -1)
        if values.shape[1] == 0:
            return [-1.0] * self.ctx.n_k
        if len(areas) > 1:
            return [float(np.mean(v[v > -1])) if (v > -1).any() else -1.0 for v in values]
        return np.where(values[:, 0] > -1, values.mean(axis=1), -1.0).tolist()


def _placed(w: np.ndarray, position: np.ndarray, n_images: int) -> np.ndarray:
    out = np.zeros(n_images, w.dtype)
    out[position] = w
    return out


def _state_of_result(result: Any, ctx: Any):
    """The accumulation state of an evaluate_coco result, from its match table."""
    from ..protocols._coco_stages import state_of_result

    return state_of_result(ctx, result)


class _Plan:
    """What the weighted accumulation of one COCO state needs, weights aside.

    Precision is computed for the max-detections settings the AP numbers read (one
    :class:`_PrecisionPlan` each), recall for the (area, max-detections) pairs the AR numbers
    read; other entries of the arrays stay -1.
    """

    def __init__(self, ctx: Any, state: Any, specs: tuple) -> None:
        from ..protocols._coco_stages import ordered_events

        p = ctx.params
        n_t, n_k, n_a = len(p.iou_thresholds), ctx.n_k, len(p.area_ranges)
        self.sizes = (n_t, len(p.recall_thresholds), n_k, n_a, len(p.max_detections))
        literal = 20 if p.iou_type == "keypoints" else 100
        self.m_star = (p.max_detections.index(literal) if literal in p.max_detections
                       else len(p.max_detections) - 1)
        max_dets = p.max_detections
        read_ap = {max_dets[self.m_star]}
        read_ar = set()
        for is_ap, _, area, m in specs:
            value = literal if m is None else max_dets[m]
            if is_ap:
                read_ap.add(value)
            else:
                read_ar |= {(a, i) for a, label in enumerate(p.area_labels) if label == area
                            for i, v in enumerate(max_dets) if v == value}
        read_ap &= set(max_dets)
        events = ordered_events(state, n_t)
        dt_k = np.asarray(state.category, dtype=np.int64)
        image = np.asarray(state.image, dtype=np.int64)
        # Counts stay in int32 when no weighted sum can exceed it.
        per_image = np.bincount(image, minlength=1).max(initial=0) if len(image) else 0
        n_gt_image = (np.bincount(ctx.gt_img[ctx.gt_img >= 0], minlength=1).max(initial=0)
                      if len(ctx.gt_img) else 0)
        bound = len(ctx.image_ids) * max(int(per_image), int(n_gt_image), 1) * n_a * n_t
        self.dtype = np.int32 if bound < 2**31 - 1 else np.int64
        self.precision = {md: _PrecisionPlan(state, events, dt_k, image, md, self.sizes)
                          for md in sorted(read_ap)}
        # Recall of the other settings: the TP events that survive each, by segment.
        ev_rows = events.order.take(events.full_pos)
        ev_seg = events.at * n_k + dt_k.take(ev_rows)
        ev_area = events.at // n_t
        self.recall_events = {}
        for m in sorted({m for _, m in read_ar}):
            if max_dets[m] in self.precision:
                continue
            areas = [a for a, mm in read_ar if mm == m]
            tp = np.flatnonzero((events.rank < max_dets[m]) & ~events.ignored
                                & np.isin(ev_area, areas))
            self.recall_events[m] = (ev_seg.take(tp), image.take(ev_rows.take(tp)))
        self.read_ar = read_ar
        # Positives: the counted objects of each (category, area), by image.
        gt = ctx.dataset.gt
        ranges = np.asarray(p.area_ranges)
        ok = (ctx.gt_k >= 0)[None, :] & ~(ctx.gt_ignore[None, :]
                                          | (gt.area[None, :] < ranges[:, :1])
                                          | (gt.area[None, :] > ranges[:, 1:]))
        a_idx, g_idx = np.nonzero(ok)
        self.gt_key = ctx.gt_k.take(g_idx) * n_a + a_idx
        self.gt_img = ctx.gt_img.take(g_idx)
        self.thresholds_r = np.asarray(p.recall_thresholds, dtype=np.float64)
        self.max_dets = max_dets

    def positives(self, w: np.ndarray) -> np.ndarray:
        """npig under weights: shape (K, A), int64."""
        _, _, n_k, n_a, _ = self.sizes
        return np.bincount(self.gt_key, weights=w.take(self.gt_img),
                           minlength=n_k * n_a).astype(np.int64).reshape(n_k, n_a)

    def curves(self, w: np.ndarray) -> tuple[dict, dict]:
        """Precision and recall under weights ``w``, at the entries the numbers read.

        Returns ``{max_det: precision (T, R, K, A)}`` and ``{m: recall (T, K, A)}``, slices
        of :func:`~deteval.protocols._coco_stages.accumulate_stage`'s arrays (-1 where
        undefined).
        """
        n_t, n_r, n_k, n_a, n_m = self.sizes
        w = w.astype(self.dtype, copy=False)
        npig = self.positives(w)
        seg_npig = np.broadcast_to(npig.T[:, None, :], (n_a, n_t, n_k)).ravel()
        valid = seg_npig > 0
        prec, totals = {}, {}
        for md, plan in self.precision.items():
            q, totals[md] = plan.curve(w, npig, self.thresholds_r)
            q[~valid] = -1.0
            prec[md] = q.reshape(n_a, n_t, n_k, n_r).transpose(1, 3, 2, 0)
        rec = {}
        for m in sorted({m for _, m in self.read_ar}):
            if self.max_dets[m] in totals:
                tp = totals[self.max_dets[m]]
            else:
                seg, img = self.recall_events[m]
                tp = np.bincount(seg, weights=w.take(img), minlength=len(seg_npig))
            final = np.full(len(seg_npig), -1.0)
            final[valid] = tp[valid] / seg_npig[valid]
            rec[m] = final.reshape(n_a, n_t, n_k).transpose(1, 2, 0)
        return prec, rec

    def full(self, prec: dict, rec: dict) -> tuple[np.ndarray, np.ndarray]:
        """The (T, R, K, A, M) precision and (T, K, A, M) recall arrays of ``curves``."""
        n_t, n_r, n_k, n_a, n_m = self.sizes
        precision = -np.ones((n_t, n_r, n_k, n_a, n_m))
        recall = -np.ones((n_t, n_k, n_a, n_m))
        for m, md in enumerate(self.max_dets):
            if md in prec:
                precision[..., m] = prec[md]
            if m in rec:
                recall[..., m] = rec[m]
        return precision, recall


class _PrecisionPlan:
    """The rows, match events and TP events of one max-detections setting, as
    ``_coco_stages._max_det_curves`` orders them: rows ``sel`` in accumulation order, events
    sorted by (area, threshold, position), segments (area, threshold, category)."""

    def __init__(self, state: Any, events: Any, dt_k: np.ndarray, image: np.ndarray,
                 max_det: int, sizes: tuple) -> None:
        n_t, _, n_k, n_a, _ = sizes
        n_seg = n_a * n_t * n_k
        rank_in_order = np.asarray(state.rank, dtype=np.int64).take(events.order)
        in_sel = rank_in_order < max_det
        sel = events.order.compress(in_sel)
        k_sel = dt_k.take(sel)
        row_img = image.take(sel)
        seg_start = np.searchsorted(k_sel, np.arange(n_k), side="left")
        sel_pos_of_full = np.cumsum(in_sel) - 1
        live = events.rank < max_det
        e_at = events.at.compress(live)
        e_pos = sel_pos_of_full.take(events.full_pos.compress(live))
        e_seg = k_sel.take(e_pos) + e_at * n_k
        seg_first_event = np.searchsorted(e_seg, np.arange(n_seg), side="left")
        e_ign = events.ignored.compress(live)
        self.ev_img = row_img.take(e_pos)
        self.ev_tp = ~e_ign
        # An event of an ignored object, or of an out-of-range detection, is not an FP;
        # counted once either way: +1 ignored, -1 out of range (the out-of-range rows are
        # counted with the rows not in range below).
        self.ev_not_fp = (e_ign.astype(np.int8) - events.out.compress(live).astype(np.int8))
        tp_events = np.flatnonzero(~e_ign)
        self.upto = tp_events + 1
        self.before = seg_first_event.take(e_seg.take(tp_events))
        t_pos, t_at = e_pos.take(tp_events), e_at.take(tp_events)
        t_k = k_sel.take(t_pos)
        t_start = seg_start.take(t_k)
        self.tp_seg = t_at * n_k + t_k
        self.seg_lo = np.searchsorted(self.tp_seg, np.arange(n_seg), side="left")
        self.seg_hi = np.searchsorted(self.tp_seg, np.arange(n_seg), side="right")
        # Rows in each area's range, listed area after area (the area with every row in range
        # lists them once for all such areas); for each TP event its list's range between
        # its segment's start and its position.
        lists: list[np.ndarray] = []
        list_of_area, full = [], None
        for a in range(n_a):
            inside = ~state.out_of_range[a].take(sel)
            if inside.all() and full is not None:
                list_of_area.append(full)
                continue
            if inside.all():
                full = len(lists)
            list_of_area.append(len(lists))
            lists.append(np.flatnonzero(inside))
        starts = np.cumsum([0] + [len(x) for x in lists])
        self.in_img = (row_img.take(np.concatenate(lists)) if lists
                       else np.zeros(0, np.int64))
        t_area = t_at // n_t
        self.in_hi = np.empty(len(t_pos), np.int64)
        self.in_lo = np.empty(len(t_pos), np.int64)
        for a in range(n_a):
            at = np.flatnonzero(t_area == a)
            j = list_of_area[a]
            self.in_hi[at] = starts[j] + np.searchsorted(lists[j], t_pos.take(at), "right")
            self.in_lo[at] = starts[j] + np.searchsorted(lists[j], t_start.take(at), "left")

    def curve(self, w: np.ndarray, npig: np.ndarray, thresholds_r: np.ndarray):
        """Interpolated precision at each recall threshold per segment, shape (S, R), and
        the weighted TP count per segment, shape (S,)."""
        n_k, n_a = npig.shape
        n_r = len(thresholds_r)
        n_seg = len(self.seg_lo)
        n_t = n_seg // max(n_k * n_a, 1)
        if n_seg == 0:
            return np.zeros((0, n_r)), np.zeros(0, np.int64)
        ev_w = w.take(self.ev_img)
        tp_prefix = _prefix(np.where(self.ev_tp, ev_w, 0))
        not_fp_prefix = _prefix(ev_w * self.ev_not_fp)
        in_prefix = _prefix(w.take(self.in_img))
        upto, before = self.upto, self.before
        tp = tp_prefix.take(upto)
        tp -= tp_prefix.take(before)
        # FP = rows in range - TP - (events of ignored objects - events out of range).
        fp = in_prefix.take(self.in_hi)
        fp -= in_prefix.take(self.in_lo)
        fp -= tp
        fp -= not_fp_prefix.take(upto)
        fp += not_fp_prefix.take(before)
        tp_f = tp.astype(np.float64)
        pr = tp_f / (fp.astype(np.float64) + tp_f + _EPS)
        # Recall thresholds reached at each TP event: those whose ``need`` (at least 1; see
        # _coco_stages.needed_true_positives) is at most the weighted TP count so far, read
        # from one table per segment indexed by that count. The precision at threshold r is
        # the maximum of pr over the events that reach more than r thresholds.
        from ..protocols._coco_stages import needed_true_positives

        total = np.zeros(n_seg, np.int64)
        has = self.seg_hi > self.seg_lo
        total[has] = tp.take(self.seg_hi[has] - 1)
        need = needed_true_positives(npig, thresholds_r)              # (K, A, R)
        seg_need = np.broadcast_to(need.transpose(1, 0, 2)[:, None], (n_a, n_t, n_k, n_r))
        seg_need = np.clip(seg_need.reshape(n_seg, n_r), 1, (total + 1)[:, None])
        base = np.cumsum(total + 2) - (total + 2)
        table = np.cumsum(np.bincount((seg_need + base[:, None]).ravel(),
                                      minlength=int(base[-1] + total[-1] + 2)))
        # (minus the n_r entries of each segment before)
        reached = table.take(base.take(self.tp_seg) + tp) - n_r * self.tp_seg
        # Events are in (segment, reached) order: one maximum per run of equal keys.
        key = self.tp_seg * n_r + reached
        blocks = np.zeros(n_seg * n_r)
        if len(key):
            starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            maxima = np.maximum.reduceat(pr, starts)
            firsts = reached.take(starts) > 0
            blocks[key.take(starts).compress(firsts) - 1] = maxima.compress(firsts)
        blocks = blocks.reshape(n_seg, n_r)
        return np.maximum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1], total


def _prefix(values: np.ndarray) -> np.ndarray:
    out = np.zeros(len(values) + 1, values.dtype if values.dtype.kind == "i" else np.int64)
    np.cumsum(values, out=out[1:])
    return out


class _LRPPlan:
    """moLRP at area "all" and IoU 0.5 under weights, as :func:`deteval.lrp` computes it
    (``docs/diagnostics/lrp.md``): the rows of each category in accumulation order, their
    status and the IoU of the true positives, once; per resample the weighted cumulative
    TP, FP and localisation error, and the minimum of LRP per category (bounding boxes only;
    -1 without IoU 0.5, area "all" or max-detections 100)."""

    def __init__(self, ctx: Any, state: Any, result: Any) -> None:
        from ..iou import coco_pair_iou
        from ..matching import FP, TP
        from ..protocols._coco_stages import ordered_events

        p, table = ctx.params, result.matches
        thresholds = list(p.iou_thresholds)
        self.ok = (p.iou_type == "bbox" and 0.5 in thresholds and 100 in p.max_detections
                   and "all" in p.area_labels and p.use_categories)
        if not self.ok:
            return
        self.tau, t, a = 0.5, thresholds.index(0.5), list(p.area_labels).index("all")
        kept = np.flatnonzero(table.dt_kept)            # state row i is table row kept[i]
        order = ordered_events(state, len(thresholds)).order
        order = order.compress(np.asarray(state.rank).take(order) < 100)
        rows = kept.take(order) if len(kept) else order
        status = table.detection_status(a)[t].take(rows)
        matched = table.detection_matches(a)[t].take(rows)
        hit = np.flatnonzero(status == TP)
        iou = np.zeros(len(rows))
        detections, gt = result.detections, result.dataset.gt
        iou[hit] = coco_pair_iou(detections.as_xywh()[rows[hit]],
                                 gt.as_xywh()[matched[hit]], np.zeros(len(hit), bool))
        # LRP only rises over a false positive or an ignored row, so its minimum is at a true
        # positive: keep those, with the weighted false positives before each in its class.
        image = np.asarray(state.image, dtype=np.int64).take(order)
        k = np.asarray(state.category, dtype=np.int64).take(order)
        bounds = np.searchsorted(k, np.arange(ctx.n_k + 1))
        fp_pos = np.flatnonzero(status == FP)
        self.fp_img = image.take(fp_pos)
        self.tp_img, self.tp_iou, self.tp_k = image.take(hit), iou.take(hit), k.take(hit)
        self.fp_hi = np.searchsorted(fp_pos, hit)
        self.fp_lo = np.searchsorted(fp_pos, bounds.take(self.tp_k))
        self.tp_bounds = np.searchsorted(self.tp_k, np.arange(ctx.n_k + 1))
        self.tp_start = self.tp_bounds[:-1].repeat(np.diff(self.tp_bounds))
        gt_ok = (ctx.gt_k >= 0) & ~table.gt_ignore[a]
        self.gt_k, self.gt_img, self.n_k = ctx.gt_k[gt_ok], ctx.gt_img[gt_ok], ctx.n_k

    def molrp(self, w: np.ndarray) -> float:
        """moLRP under image weights ``w``; -1 when not computed."""
        from .lrp import _mean

        if not self.ok:
            return -1.0
        npig = np.bincount(self.gt_k, weights=w.take(self.gt_img),
                           minlength=self.n_k).astype(np.int64)
        fp_prefix = _prefix(w.take(self.fp_img))
        fp_num = fp_prefix.take(self.fp_hi) - fp_prefix.take(self.fp_lo)
        tp_w = w.take(self.tp_img)
        tp_prefix = _prefix(tp_w)
        tp_num = tp_prefix[1:] - tp_prefix.take(self.tp_start)
        fn_num = npig.take(self.tp_k) - tp_num
        # The localisation sums category by category: a running float sum restarted at each
        # category, as deteval.diagnostics.lrp._optimal sums them (its other rows add 0).
        loc = tp_w * self.tp_iou
        bounds = self.tp_bounds
        present = np.flatnonzero(np.diff(bounds))
        for k in present.tolist():
            np.cumsum(loc[bounds[k]:bounds[k + 1]], out=loc[bounds[k]:bounds[k + 1]])
        total_loc = tp_num - loc
        with np.errstate(invalid="ignore", divide="ignore"):
            curve = (total_loc / (1 - self.tau) + fp_num + fn_num) / (tp_num + fp_num + fn_num)
        olrp = np.where(npig > 0, 1.0, -1.0)
        if len(present):
            minima = np.minimum.reduceat(curve, bounds.take(present))
            tp_total = tp_num.take(bounds.take(present + 1) - 1)
            found = (npig.take(present) > 0) & (tp_total > 0)
            olrp[present[found]] = minima[found]
        return _mean(olrp)


def _f1_counts(ctx: Any, state: Any, table: Any, threshold: float, n_images: int):
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


def _f1(counts, w: np.ndarray) -> float:
    """Micro F1 = 2 TP / (2 TP + FP + FN) under weights; -1 when there is nothing to count."""
    if counts is None:
        return -1.0
    tp, fp, npos = (int(np.dot(c, w)) for c in counts)
    denominator = tp + fp + npos
    return -1.0 if denominator == 0 else 2.0 * tp / denominator
