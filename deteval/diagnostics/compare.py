"""Paired comparison of detectors on one ground truth: differences, bootstrap intervals,
p-values, Holm's correction across classes, regression gates.

Every model is evaluated on the same bootstrap resamples of the images (the same weights), so
that the difference of each number between a model and the baseline (the first) is resampled
as a pair; the rules are in ``docs/diagnostics/bootstrap.md`` §5-§7.

>>> import deteval
>>> from deteval.diagnostics.compare import compare_coco
>>> gt = {"images": [{"id": i, "width": 50, "height": 50} for i in (1, 2, 3, 4)],
...       "categories": [{"id": 1, "name": "a"}],
...       "annotations": [{"id": i, "image_id": i, "category_id": 1, "bbox": [0, 0, 20, 20],
...                        "area": 400, "iscrowd": 0} for i in (1, 2, 3, 4)]}
>>> dt = [{"image_id": i, "category_id": 1, "bbox": [0, 0, 20, 20], "score": 0.9}
...       for i in (1, 2, 3, 4)]
>>> a = deteval.evaluate_coco(gt, dt)
>>> c = compare_coco([a, a], n_resamples=100, seed=0)
>>> c.difference_of(1, "AP"), c.p_value_of(1, "AP")
(0.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._arrays import ReadOnlyArrays, frozen
from .._threads import resolve_threads
from ._bootstrap_workers import several
from .bootstrap import _WORKER_MODULES as _COCO_MODULES
from .bootstrap import (
    OLRP_NAME,
    BootstrapResult,
    WeightedCOCO,
    _json_number,
    bootstrap_result,
    check_settings,
    interval_result,
    percentile_interval,
    resampled,
)

__all__ = ["LOWER_IS_BETTER", "ComparisonResult", "bootstrap_p_value", "compare_coco",
           "compare_crowdpose", "compare_lvis", "compare_openimages", "compare_voc", "holm",
           "lower_is_better", "paired_comparison", "parse_regression_rule"]

#: The numbers for which lower is better (an error rate); every other number is better
#: higher. The regression gate (:meth:`ComparisonResult.regressions`) reads it.
LOWER_IS_BETTER = frozenset({OLRP_NAME})


def lower_is_better(name: str) -> bool:
    """Whether a smaller value of the number ``name`` is the better one (``oLRP``).

    >>> lower_is_better("oLRP"), lower_is_better("AP")
    (True, False)
    """
    return name in LOWER_IS_BETTER


def bootstrap_p_value(differences: np.ndarray) -> np.ndarray:
    """Two-sided paired-bootstrap p-value of each column of resampled differences.

    ``min(1, 2 (min(#{d <= 0}, #{d >= 0}) + 1) / (n + 1))`` over the defined (non-NaN)
    resamples ``n``: the smallest level at which the percentile interval of the difference
    leaves out 0 (the +1 keeps it above 0 with finitely many resamples). NaN where no
    resample is defined.

    >>> bootstrap_p_value(np.array([[0.0, -0.1], [0.0, -0.2], [0.0, -0.1]])).tolist()
    [1.0, 0.5]
    """
    d = np.asarray(differences, dtype=np.float64)
    defined = ~np.isnan(d)
    n = defined.sum(axis=0)
    below = (defined & (d <= 0)).sum(axis=0)
    above = (defined & (d >= 0)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.minimum(1.0, 2.0 * (np.minimum(below, above) + 1) / (n + 1))
    return np.where(n > 0, p, np.nan)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (NaN ones left out, kept NaN).

    >>> holm(np.array([0.01, 0.04, 0.03, np.nan])).tolist()[:3]
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if len(ok):
        order = ok[np.argsort(p[ok], kind="stable")]
        m = len(order)
        scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
        out[order] = np.maximum.accumulate(scaled)
    return out


def parse_regression_rule(text: str) -> tuple[str, float]:
    """``"AP:0.01"`` -> ``("AP", 0.01)``: a number name and a non-negative tolerance.

    >>> parse_regression_rule("AP50:0.02")
    ('AP50', 0.02)
    """
    from ..io._common import to_float

    name, sep, tolerance = str(text).rpartition(":")
    try:
        value = to_float(tolerance)   # ASCII decimals only (float reads "١" and "0_1")
    except ValueError:
        value = float("nan")
    if not sep or not name or not value >= 0:
        raise ValueError(f"a regression rule is METRIC:TOLERANCE with a tolerance >= 0 "
                         f"(e.g. AP:0.01); got {text!r}")
    return name, value


@dataclass(frozen=True, eq=False)
class ComparisonResult(ReadOnlyArrays):
    """Result of :func:`compare_coco`, :func:`compare_voc`, :func:`compare_lvis`,
    :func:`compare_crowdpose` or :func:`compare_openimages`: every model against the
    baseline (model 0).

    Arrays of differences have shape (J, N): J models after the baseline, N numbers
    (``names``). Differences are ``model - baseline``; NaN where either is undefined. A
    positive difference is an improvement except for the numbers better lower
    (:data:`LOWER_IS_BETTER`: ``oLRP``).

    Attributes
    ----------
    models : tuple of str
        Labels of the models, the baseline first.
    names : tuple of str
        The numbers, as :class:`~deteval.diagnostics.bootstrap.BootstrapResult.names`.
    intervals : tuple of BootstrapResult
        Each model's own intervals (on the shared resamples).
    difference, low, high : ndarray, shape (J, N)
        The difference of the evaluations and its paired percentile interval.
    p_value : ndarray, shape (J, N)
        Paired-bootstrap p-value (:func:`bootstrap_p_value`).
    p_adjusted : ndarray, shape (J, N)
        Holm's adjustment across the per-class numbers (``AP[...]``) of each model; the
        headline numbers keep their p-value.
    significant : ndarray of bool, shape (J, N)
        ``p_adjusted < 1 - confidence``.
    confidence : float
    n_resamples : int
    seed : object
    """

    models: tuple[str, ...]
    names: tuple[str, ...]
    intervals: tuple[BootstrapResult, ...]
    difference: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p_value: np.ndarray
    p_adjusted: np.ndarray
    significant: np.ndarray
    confidence: float
    n_resamples: int
    seed: Any

    def __post_init__(self) -> None:
        for name in ("difference", "low", "high", "p_value", "p_adjusted", "significant"):
            frozen(getattr(self, name))

    def _at(self, model: int, name: str) -> tuple[int, int]:
        if name not in self.names:
            raise KeyError(f"unknown number {name!r}; choose one of {', '.join(self.names)}")
        if not 1 <= model < len(self.models):
            raise IndexError(f"model must be 1..{len(self.models) - 1} (0 is the baseline); "
                             f"got {model}")
        return model - 1, self.names.index(name)

    def difference_of(self, model: int, name: str) -> float:
        """``model - baseline`` for the number ``name``."""
        return float(self.difference[self._at(model, name)])

    def interval_of(self, model: int, name: str) -> tuple[float, float]:
        """The paired percentile interval of the difference."""
        at = self._at(model, name)
        return float(self.low[at]), float(self.high[at])

    def p_value_of(self, model: int, name: str, *, adjusted: bool = True) -> float:
        """The p-value (Holm-adjusted for per-class numbers unless ``adjusted=False``)."""
        return float((self.p_adjusted if adjusted else self.p_value)[self._at(model, name)])

    def regressions(self, rules: Sequence[tuple[str, float]]) -> list[str]:
        """The rules broken: a model significantly worse than the baseline by more than the
        tolerance. Worse is the number's direction (:data:`LOWER_IS_BETTER`): for a number
        better higher, the interval of the difference lies wholly below ``-tolerance``; for
        one better lower (``oLRP``), wholly above ``+tolerance``.

        Returns one message per broken (model, rule); empty when none is.
        """
        broken = []
        for name, tolerance in rules:
            lower = lower_is_better(name)
            for j in range(1, len(self.models)):
                at = self._at(j, name)
                low, high = self.low[at], self.high[at]
                if not (low > tolerance if lower else high < -tolerance):     # NaN: kept
                    continue
                loss = self.difference[at] if lower else -self.difference[at]
                side = f"above +{tolerance:g}" if lower else f"below -{tolerance:g}"
                broken.append(
                    f"{self.models[j]}: {name} is worse than {self.models[0]}'s by "
                    f"{loss:.4f} ({'lower' if lower else 'higher'} is better; "
                    f"{100 * self.confidence:g}% interval of the difference [{low:.4f}, "
                    f"{high:.4f}], entirely {side})")
        return broken

    def rows(self) -> list[dict[str, Any]]:
        """One dict per (model, number): JSON-ready (NaN as None)."""
        rows = []
        for j in range(1, len(self.models)):
            for i, name in enumerate(self.names):
                at = (j - 1, i)
                rows.append({
                    "model": self.models[j], "baseline": self.models[0], "name": name,
                    "baseline_value": _json_number(_undefined(self.intervals[0].estimates[i])),
                    "value": _json_number(_undefined(self.intervals[j].estimates[i])),
                    "better": "lower" if lower_is_better(name) else "higher",
                    "difference": _json_number(self.difference[at]),
                    "low": _json_number(self.low[at]), "high": _json_number(self.high[at]),
                    "p_value": _json_number(self.p_value[at]),
                    "p_adjusted": _json_number(self.p_adjusted[at]),
                    "significant": bool(self.significant[at])})
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: settings, each model's intervals and the differences (what
        ``deteval compare --json`` writes and the HTML report can read)."""
        return {"method": "paired image bootstrap; percentile intervals; two-sided bootstrap "
                          "p-values; Holm across classes",
                "confidence": self.confidence, "n_resamples": self.n_resamples,
                "seed": self.seed if isinstance(self.seed, (int, type(None))) else str(self.seed),
                "models": list(self.models),
                "intervals": {m: r.rows() for m, r in zip(self.models, self.intervals)},
                "differences": self.rows()}

    def table(self, *, per_class: bool = True) -> str:
        """A plain-text table per model: number, baseline, model, difference, interval,
        p-value (Holm-adjusted for classes), ``*`` when significant."""
        pct = f"{100 * self.confidence:g}%"
        names = [n for n in self.names if per_class or not n.startswith("AP[")]
        width = max(len(n) for n in names)
        lines = []
        for j in range(1, len(self.models)):
            lines.append(f"{self.models[j]} vs {self.models[0]}")
            lines.append(f"{'number':<{width}}  baseline     model      diff  {pct} interval"
                         f"          p")
            for name in names:
                i = self.names.index(name)
                at = (j - 1, i)
                a, b = self.intervals[0].estimates[i], self.intervals[j].estimates[i]
                mark = " *" if self.significant[at] else ""
                if np.isnan(self.difference[at]):
                    lines.append(f"{name:<{width}}  {_cell(a):>8}  {_cell(b):>8}  "
                                 f"{'-':>8}  (undefined)")
                    continue
                lines.append(f"{name:<{width}}  {a:8.4f}  {b:8.4f}  {self.difference[at]:+8.4f}"
                             f"  [{self.low[at]:+.4f}, {self.high[at]:+.4f}]"
                             f"  {self.p_adjusted[at]:9.4f}{mark}")
        return "\n".join(lines)


def _cell(value: float) -> str:
    return "-" if value < 0 else f"{value:.4f}"


def _undefined(value: float) -> float:
    return float("nan") if value < 0 else float(value)


def compare_coco(results: Sequence[Any], *, n_resamples: int = 1000,
                 confidence: float = 0.95, seed: Any = 0, score_threshold: float = 0.5,
                 models: Sequence[str] | None = None,
                 threads: int | None = None) -> ComparisonResult:
    """Compare COCO evaluations of several detectors on the same ground truth, paired.

    Parameters
    ----------
    results : sequence of COCOResult
        :func:`~deteval.evaluate_coco` results (with their match tables) of the same ground
        truth and settings; the first is the baseline.
    n_resamples, confidence, score_threshold
        As :func:`~deteval.diagnostics.bootstrap.bootstrap_coco`.
    seed : int or numpy Generator
        Of the resampling (default 0: the same command gives the same p-values).
    models : sequence of str, optional
        Labels (default ``model0``, ``model1``...).
    threads : int, optional
        As :func:`~deteval.diagnostics.bootstrap.bootstrap_coco` (the numbers are identical
        for every value).

    Returns
    -------
    ComparisonResult

    Raises
    ------
    ValueError
        Fewer than two results, results of other images, categories or settings.
    """
    return paired_comparison(
        results, lambda r: WeightedCOCO(r, score_threshold=score_threshold),
        n_resamples=n_resamples, confidence=confidence, seed=seed, models=models,
        threads=threads, preload=_COCO_MODULES)


def paired_comparison(results: Sequence[Any], weigh: Callable[[Any], Any], *,
                      n_resamples: int = 1000, confidence: float = 0.95, seed: Any = 0,
                      models: Sequence[str] | None = None, threads: int | None = None,
                      same: Callable[[Any], Any] | None = None, hint: str = "",
                      preload: tuple = ()) -> ComparisonResult:
    """The paired comparison of :func:`compare_coco` for any protocol: ``weigh(result)``
    gives the weighted evaluation of one result (``WeightedCOCO``, ``WeightedVOC``,
    ``WeightedLVIS``...: its ``names``, ``estimates``, ``resamples`` and ``numbers(w)``); the
    rest is shared. ``same(result)`` is what must be equal across the results (default: the
    settings and the object count); ``hint`` ends the message when it is not. ``preload``:
    the protocol's modules (its bootstrap's ``_WORKER_MODULES``) that a worker process
    imports and whose code it checks against the caller's, as the bootstrap's workers do."""
    check_settings(n_resamples, confidence)
    threads = resolve_threads(threads)
    results = list(results)
    if len(results) < 2:
        raise ValueError(f"compare needs at least two results (a baseline and a model); got "
                         f"{len(results)}")
    labels = tuple(models) if models is not None else tuple(f"model{i}"
                                                           for i in range(len(results)))
    if len(labels) != len(results):
        raise ValueError(f"{len(labels)} model labels for {len(results)} results")
    same = same or _settings_and_objects
    base = same(results[0])
    for label, r in zip(labels[1:], results[1:]):
        if not _equal(same(r), base):
            raise ValueError(f"{label} was evaluated with other ground truth, settings, images "
                             f"or categories than {labels[0]}; compare needs the same ones"
                             + hint)
    weighted = [weigh(r) for r in results]
    rows = weighted[0].resamples(n_resamples, seed, None)
    samples = resampled(lambda w: [model.numbers(w) for model in weighted], rows, threads,
                        count=n_resamples, engine=lambda: several(weighted), preload=preload)
    samples = samples.reshape(-1, len(weighted), len(weighted[0].names))      # (B, J+1, N)
    intervals = [_intervals(model, samples[:, j], confidence, seed)
                 for j, model in enumerate(weighted)]                   # (NaN: in place)
    names = weighted[0].names
    estimates = np.array([[_undefined(v) for v in m.estimates] for m in weighted])
    difference = estimates[1:] - estimates[:1]
    diffs = samples[:, 1:] - samples[:, :1]                             # (B, J, N)
    low = np.empty_like(difference)
    high = np.empty_like(difference)
    p_value = np.empty_like(difference)
    for j in range(len(results) - 1):
        low[j], high[j], _ = percentile_interval(diffs[:, j], confidence)
        p_value[j] = bootstrap_p_value(diffs[:, j])
    p_value[np.isnan(difference)] = np.nan
    p_adjusted = p_value.copy()
    per_class = np.array([n.startswith("AP[") for n in names])
    for j in range(len(results) - 1):
        p_adjusted[j, per_class] = holm(p_value[j, per_class])
    with np.errstate(invalid="ignore"):
        significant = p_adjusted < 1.0 - confidence
    return ComparisonResult(
        models=labels, names=names, intervals=tuple(intervals), difference=difference,
        low=low, high=high, p_value=p_value, p_adjusted=p_adjusted, significant=significant,
        confidence=float(confidence), n_resamples=n_resamples, seed=seed)


def _settings_and_objects(result: Any) -> tuple:
    """COCO, VOC, LVIS, CrowdPose: the settings (images and categories included) and the
    number of objects."""
    return result.params, len(result.dataset.gt)


def _equal(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(
        np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y for x, y in zip(a, b))


def _intervals(model: Any, samples: np.ndarray, confidence: float,
               seed: Any) -> BootstrapResult:
    """One model's intervals, as its protocol's bootstrap gives them (undefined numbers set
    to NaN in ``samples``, in place)."""
    if hasattr(model, "category_ids"):        # LVIS, CrowdPose, Open Images: no F1
        return bootstrap_result(model.names, model.estimates, samples, confidence=confidence,
                                seed=seed, category_ids=model.category_ids,
                                category_names=model.category_names)
    return interval_result(model, samples, confidence=confidence, seed=seed)


def compare_voc(results: Sequence[Any], *, n_resamples: int = 1000, confidence: float = 0.95,
                seed: Any = 0, models: Sequence[str] | None = None,
                threads: int | None = None) -> ComparisonResult:
    """Compare Pascal VOC evaluations of several detectors on the same ground truth, paired.

    As :func:`compare_coco`, with the numbers of
    :func:`~deteval.diagnostics.bootstrap_voc.bootstrap_voc` (``mAP``, ``mAP@t`` with
    several thresholds, ``AP[name]``).

    Parameters
    ----------
    results : sequence of VOCResult
        :func:`~deteval.evaluate_voc` results (with their match tables) of the same ground
        truth and settings; the first is the baseline.
    n_resamples, confidence, seed, models, threads
        As :func:`compare_coco`.

    Returns
    -------
    ComparisonResult
        Raises ``ValueError`` as :func:`compare_coco` does.

    Examples
    --------
    >>> import deteval
    >>> from deteval.demo import make_demo
    >>> gt, dt = make_demo()
    >>> a = deteval.evaluate_voc(gt, dt)
    >>> b = deteval.evaluate_voc(gt, [d for d in dt if d["score"] >= 0.5])
    >>> c = compare_voc([a, b], n_resamples=50, seed=0)
    >>> c.difference_of(1, "mAP") == float(b.map[0] - a.map[0])
    True
    """
    from .bootstrap_voc import _WORKER_MODULES, WeightedVOC

    return paired_comparison(results, WeightedVOC, n_resamples=n_resamples,
                             confidence=confidence, seed=seed, models=models, threads=threads,
                             preload=_WORKER_MODULES)


def compare_lvis(results: Sequence[Any], *, n_resamples: int = 1000, confidence: float = 0.95,
                 seed: Any = 0, models: Sequence[str] | None = None,
                 threads: int | None = None) -> ComparisonResult:
    """Compare LVIS evaluations of several detectors on the same ground truth, paired.

    As :func:`compare_coco`, with the numbers of
    :func:`~deteval.diagnostics.bootstrap_lvis.bootstrap_lvis` (the 13 stats and
    ``AP[name]`` per category) on the same resamples of the images for every model.

    Parameters
    ----------
    results : sequence of LVISResult
        :func:`~deteval.evaluate_lvis` results of the same ground truth and settings; the
        first is the baseline.
    n_resamples, confidence, seed, models, threads
        As :func:`compare_coco`.

    Returns
    -------
    ComparisonResult
        Raises ``ValueError`` as :func:`compare_coco` does.

    Examples
    --------
    >>> import deteval
    >>> gt = {"images": [{"id": i, "neg_category_ids": [], "not_exhaustive_category_ids": []}
    ...                  for i in (1, 2, 3)],
    ...       "categories": [{"id": 1, "name": "a", "frequency": "f"}],
    ...       "annotations": [{"id": i, "image_id": i, "category_id": 1,
    ...                        "bbox": [0, 0, 20, 20], "area": 400} for i in (1, 2, 3)]}
    >>> dt = [{"image_id": i, "category_id": 1, "bbox": [i, 0, 20, 20], "score": 0.9}
    ...       for i in (1, 2, 3)]
    >>> a = deteval.evaluate_lvis(gt, dt)
    >>> b = deteval.evaluate_lvis(gt, dt[:2])
    >>> c = compare_lvis([a, b], n_resamples=50, seed=0)
    >>> c.difference_of(1, "AP") == b.stat("AP") - a.stat("AP")
    True
    """
    from .bootstrap_lvis import _WORKER_MODULES, WeightedLVIS

    return paired_comparison(results, WeightedLVIS, n_resamples=n_resamples,
                             confidence=confidence, seed=seed, models=models, threads=threads,
                             preload=_WORKER_MODULES)


def compare_crowdpose(results: Sequence[Any], *, n_resamples: int = 1000,
                      confidence: float = 0.95, seed: Any = 0,
                      models: Sequence[str] | None = None,
                      threads: int | None = None) -> ComparisonResult:
    """Compare CrowdPose evaluations of several detectors on the same ground truth, paired.

    As :func:`compare_coco`, with the numbers of
    :func:`~deteval.diagnostics.bootstrap_crowdpose.bootstrap_crowdpose` (the 9 stats, the
    easy / medium / hard splits among them, and ``AP[name]`` per category).

    Parameters
    ----------
    results : sequence of CrowdPoseResult
        :func:`~deteval.evaluate_crowdpose` results of the same ground truth and settings;
        the first is the baseline.
    n_resamples, confidence, seed, models, threads
        As :func:`compare_coco`.

    Returns
    -------
    ComparisonResult
        Raises ``ValueError`` as :func:`compare_coco` does.

    Examples
    --------
    >>> import deteval
    >>> kp = [10, 10, 2] * 14
    >>> gt = {"images": [{"id": i, "crowdIndex": 0.3 * i} for i in (1, 2, 3)],
    ...       "categories": [{"id": 1, "name": "person"}],
    ...       "annotations": [{"id": i, "image_id": i, "category_id": 1, "num_keypoints": 14,
    ...                        "keypoints": kp, "bbox": [0, 0, 20, 40], "iscrowd": 0}
    ...                       for i in (1, 2, 3)]}
    >>> dt = [{"image_id": i, "category_id": 1, "keypoints": [10 + i, 10, 0.9] * 14,
    ...        "score": 0.9} for i in (1, 2, 3)]
    >>> a = deteval.evaluate_crowdpose(gt, dt)
    >>> c = compare_crowdpose([a, a], n_resamples=30, seed=0)
    >>> c.difference_of(1, "AP_hard"), c.p_value_of(1, "AP")
    (0.0, 1.0)
    """
    from .bootstrap_crowdpose import _WORKER_MODULES, WeightedCrowdPose

    return paired_comparison(results, WeightedCrowdPose, n_resamples=n_resamples,
                             confidence=confidence, seed=seed, models=models, threads=threads,
                             preload=_WORKER_MODULES)


def compare_openimages(results: Sequence[Any], *, n_resamples: int = 1000,
                       confidence: float = 0.95, seed: Any = 0,
                       models: Sequence[str] | None = None,
                       threads: int | None = None) -> ComparisonResult:
    """Compare Open Images evaluations of several detectors on the same ground truth,
    paired.

    As :func:`compare_coco`, with the numbers of
    :func:`~deteval.diagnostics.bootstrap_openimages.bootstrap_openimages` (``mAP`` and
    ``AP[label]`` per class) on the same resamples of the images for every model.

    Parameters
    ----------
    results : sequence of OpenImagesResult
        :func:`~deteval.evaluate_openimages` results of the same boxes, image-level labels,
        hierarchy and label map (``classes``: without one the label map is every label
        seen, detections' included, so pass the same ``classes`` to every evaluation when
        the models detect different labels); the first is the baseline.
    n_resamples, confidence, seed, models, threads
        As :func:`compare_coco`.

    Returns
    -------
    ComparisonResult
        Raises ``ValueError`` as :func:`compare_coco` does.

    Examples
    --------
    >>> import numpy as np
    >>> import deteval
    >>> from deteval.io.openimages import OIDBoxes, OIDDetections
    >>> gt = OIDBoxes(np.array(["a", "b"], dtype=object), np.array(["/m/cat", "/m/cat"],
    ...               dtype=object), np.array([[0, 0, .5, .5], [0, 0, .5, .5]]),
    ...               np.array([False, False]))
    >>> def dets(y):
    ...     return OIDDetections(np.array(["a", "b"], dtype=object),
    ...                          np.array(["/m/cat", "/m/cat"], dtype=object),
    ...                          np.array([.9, .8]), np.array([[0, 0, .5, .45], [0, y, .5, .5]]))
    >>> a = deteval.evaluate_openimages(gt, dets(0.0))
    >>> b = deteval.evaluate_openimages(gt, dets(0.4))
    >>> c = compare_openimages([a, b], n_resamples=30, seed=0)
    >>> c.difference_of(1, "mAP") == b.mean_ap - a.mean_ap
    True
    """
    from .bootstrap_openimages import _WORKER_MODULES, WeightedOpenImages

    return paired_comparison(
        results, WeightedOpenImages, n_resamples=n_resamples, confidence=confidence,
        seed=seed, models=models, threads=threads, same=_openimages_fingerprint,
        hint=" (the same boxes, image-level labels, hierarchy and classes=, the label map)",
        preload=_WORKER_MODULES)


def _openimages_fingerprint(result: Any) -> tuple:
    """What two Open Images results of one ground truth share: the label map, the images,
    the (expanded) boxes, the verified (image, class) pairs of the image-level labels and
    whether detections were expanded up the hierarchy."""
    gt = result.gt
    return (tuple(result.classes), np.asarray(result.image_ids, dtype=str),
            np.asarray(gt.image_id, dtype=str), np.asarray(gt.label, dtype=str), gt.xyxy,
            gt.group_of, result.verified, result.expand_detections)
