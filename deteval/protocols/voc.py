"""The Pascal VOC detection protocol: the official devkit and detectron2's port of it.

Per class, the detections of all images are ranked by descending score and matched with the
VOC rule of :func:`~deteval.matching.match_detections` (``rule="voc"``): each detection looks
only at the object of its class it overlaps most in its image, *difficult* objects absorb
detections without counting, and a second detection on a found object is a false positive.
Recall is ``TP / npos`` with ``npos`` the non-difficult objects of the class, precision is
``TP / (TP + FP)``, and the class's AP follows one of the rules of :mod:`deteval.ap`. The
mAP is the mean of the per-class APs. Everything is computed from one
:class:`~deteval.matching.MatchTable`.

Dimension letters: ``T`` IoU thresholds, ``K`` categories.

Presets (docs/protocols/voc.md):

========================  ============  ======  ==========  =====================
preset                    AP            IoU     boxes       thresholds
========================  ============  ======  ==========  =====================
``VOC2007``               11-point      >= t    +1 pixel    0.5
``VOC2012``               all-points    >= t    +1 pixel    0.5
``DETECTRON2_VOC2007``    11-point      > t     +1 pixel    0.50, 0.55, ..., 0.95
``DETECTRON2_VOC2012``    all-points    > t     +1 pixel    0.50, 0.55, ..., 0.95
========================  ============  ======  ==========  =====================

``VOC2007`` uses the devkit's MATLAB recall points ``0:0.1:1`` (``ap_method="voc11-devkit"``),
whose 0.6 and 0.7 are the nearest doubles; detectron2 uses ``np.arange(0, 1.1, 0.1)``
(``"voc11"``), whose 0.6 and 0.7 are one ulp higher, so a recall of exactly 3/5 or 7/10
counts for the devkit and not for detectron2. detectron2 chooses 11-point AP when the
dataset's year is 2007, hence two presets. Its presets also round detections as its result
text files do (scores to 3 decimals, coordinates to 1) and score classes without ground
truth as it does (see ``classes_without_gt``).

What is not reproduced, and why:

* Score ties. The devkit's MATLAB ``sort`` is stable: equal scores keep the detections'
  input order, and so does deteval. detectron2 uses numpy's default, unstable ``argsort``,
  whose order among equal scores depends on the numpy version and the CPU's vector
  instructions, so no fixed order can reproduce it; with its 3-decimal scores ties are
  common, and its AP can differ from ours (and between machines) in the last digits.
* Frames. detectron2's evaluator adds 1 to ``xmin`` and ``ymin`` of its 0-based predictions
  before writing them; deteval expects detections already in the ground truth's frame.
* The devkit's 11-point AP of a class whose every detection lies on a difficult object is
  NaN (MATLAB's ``max`` of nothing but NaN); deteval gives 0, as detectron2 does.

Examples
--------
>>> from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
>>> dataset = Dataset(Images(ids=[1]), Categories(ids=[1], names=["cat"]),
...                   GroundTruth(image_index=[0, 0], category_index=[0, 0],
...                               boxes=[[0, 0, 9, 9], [20, 20, 29, 29]]))
>>> detections = Detections(image_index=[0, 0], category_index=[0, 0],
...                         boxes=[[0, 0, 9, 9], [0, 0, 9, 8]], scores=[0.9, 0.8])
>>> result = evaluate_voc(dataset, detections, params=VOC2012)
>>> result.ap.tolist(), result.tp.tolist(), result.fp.tolist()
([[0.5]], [[1]], [[1]])
>>> float(result.map[0])
0.5
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from .._arrays import ReadOnlyArrays
from .._deprecation import DeprecatedAlias
from .._inputs import load_pair
from .._threads import resolve_threads, threads_limited
from .._threshold_labels import threshold_labels
from ..ap import AP_METHODS
from ..data import Dataset, Detections
from ..matching import MatchTable
from ._results import params_dict
from ._voc_stages import (  # noqa: F401 (_round_as_text: imported from here by tests)
    VOCContext,
    VOCState,
    _round_as_text,
    accumulate_stage,
    match_stage,
    prepare,
)

__all__ = [
    "DETECTRON2_VOC2007",
    "DETECTRON2_VOC2012",
    "PRCurve",
    "VOC2007",
    "VOC2012",
    "VOCParams",
    "VOCResult",
    "evaluate_voc",
    "input_notes",
]

_COMPARISONS = (">=", ">")
_EMPTY_CLASS_RULES = ("exclude", "detectron2")


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_, int)) or value not in (0, 1):
        raise TypeError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def _integers(name: str, values: Any) -> tuple[int, ...]:
    array = np.atleast_1d(np.asarray(values))
    if array.ndim != 1 or (array.size and (array.dtype.kind not in "iuf" or not np.array_equal(
            array, np.round(array)))):
        raise ValueError(f"{name} must be a list of integers; got {values!r}")
    return tuple(int(v) for v in array)


@dataclass(frozen=True)
class VOCParams:
    """Settings of the VOC protocol.

    Parameters
    ----------
    iou_thresholds : float or tuple of float
        Each in (0, 1]; default (0.5,). Several thresholds give one AP per threshold and
        class, and :attr:`VOCResult.mean_ap` averages them (detectron2's "AP").
    ap_method : {"all-points", "voc11-devkit", "voc11", "coco101"}
        How a precision-recall curve becomes AP; see :mod:`deteval.ap`.
    iou_comparison : {">=", ">"}
        ``">="``: a detection passes with IoU at or above the threshold (the devkit);
        ``">"``: strictly above (detectron2).
    inclusive_pixels : bool
        True (VOC): box corners are inclusive pixel indices, so a box is
        ``x2 - x1 + 1`` wide and the intersection ``min(x2) - max(x1) + 1`` (clipped at 0).
        False: continuous coordinates, ``x2 - x1`` wide.
    round_detections : bool
        Round scores to 3 decimals and box coordinates to 1 decimal first, as detectron2's
        result files (``%.3f``, ``%.1f``) do.
    classes_without_gt : {"exclude", "detectron2"}
        A class without non-difficult objects has no recall. ``"exclude"``: its AP is NaN
        and it is left out of the mAP (a note says so). ``"detectron2"``: what detectron2
        (and the devkit) compute by dividing 0 by 0: AP 0 with 11-point AP; with all-points AP,
        NaN when the class has detections (so the mAP is NaN) and 0 when it has none; every
        class counts in the mAP. Not available with ``"coco101"``.
    image_ids : tuple of int, optional
        The image set to evaluate (default: every image of the ground truth). Detections on
        other images are not evaluated.
    category_ids : tuple of int, optional
        Categories to evaluate, in this order (default: the ground truth's, in its order).

    Examples
    --------
    >>> import dataclasses
    >>> dataclasses.replace(VOC2007, iou_thresholds=0.7).iou_thresholds
    (0.7,)
    """

    iou_thresholds: tuple[float, ...] = (0.5,)
    ap_method: str = "all-points"
    iou_comparison: str = ">="
    inclusive_pixels: bool = True
    round_detections: bool = False
    classes_without_gt: str = "exclude"
    image_ids: tuple[int, ...] | None = None
    category_ids: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        raw = self.iou_thresholds
        try:
            values = np.atleast_1d(np.asarray(raw))
        except (TypeError, ValueError):  # ragged nesting
            values = np.array([""])
        if values.dtype.kind not in "iuf":
            raise ValueError(f"iou_thresholds must be a non-empty list of numbers in (0, 1]; "
                             f"got {raw!r}")
        values = values.astype(np.float64)
        if (values.ndim != 1 or len(values) == 0 or not np.isfinite(values).all()
                or (values <= 0).any() or (values > 1).any()):
            raise ValueError(f"iou_thresholds must be a non-empty list of numbers in (0, 1]; "
                             f"got {raw!r}")
        set_(self, "iou_thresholds", tuple(values.tolist()))
        if self.ap_method not in AP_METHODS:
            raise ValueError(f"ap_method must be one of {', '.join(map(repr, AP_METHODS))}; "
                             f"got {self.ap_method!r}")
        if self.iou_comparison not in _COMPARISONS:
            raise ValueError(f"iou_comparison must be '>=' (devkit) or '>' (detectron2); "
                             f"got {self.iou_comparison!r}")
        set_(self, "inclusive_pixels", _flag("inclusive_pixels", self.inclusive_pixels))
        set_(self, "round_detections", _flag("round_detections", self.round_detections))
        if self.classes_without_gt not in _EMPTY_CLASS_RULES:
            raise ValueError(f"classes_without_gt must be 'exclude' or 'detectron2'; "
                             f"got {self.classes_without_gt!r}")
        if self.classes_without_gt == "detectron2" and self.ap_method == "coco101":
            raise ValueError("classes_without_gt='detectron2' reproduces detectron2's 11-point "
                             "and all-points AP; it has no meaning with ap_method='coco101'")
        for name in ("image_ids", "category_ids"):
            value = getattr(self, name)
            if value is not None:
                set_(self, name, _integers(name, value))
        if self.category_ids is not None and len(set(self.category_ids)) != len(
                self.category_ids):
            raise ValueError(f"category_ids must not repeat a category; got {self.category_ids}")


#: The VOC2010-2012 devkit: all-points AP, IoU >= 0.5, inclusive pixel boxes.
VOC2012 = VOCParams()
#: The VOC2007 devkit: 11-point AP at MATLAB's recall points, IoU >= 0.5, inclusive pixels.
VOC2007 = VOCParams(ap_method="voc11-devkit")
#: detectron2's ``PascalVOCDetectionEvaluator`` for a 2007 dataset: 11-point AP at
#: ``np.arange`` recall points, IoU > t for t = 0.50, 0.55, ..., 0.95, rounded detections.
DETECTRON2_VOC2007 = VOCParams(
    iou_thresholds=tuple(k / 100 for k in range(50, 100, 5)), ap_method="voc11",
    iou_comparison=">", round_detections=True, classes_without_gt="detectron2")
#: detectron2's ``PascalVOCDetectionEvaluator`` for other years: all-points AP.
DETECTRON2_VOC2012 = dataclasses.replace(DETECTRON2_VOC2007, ap_method="all-points")


class PRCurve(NamedTuple):
    """Precision-recall points of one class at one IoU threshold, by descending score.

    Detections on difficult objects (neither TP nor FP) are left out; the devkit keeps them
    as repeated points, which changes no AP. ``recall`` is NaN for a class without
    non-difficult objects.
    """

    recall: np.ndarray
    precision: np.ndarray
    scores: np.ndarray
    detections: np.ndarray  # rows of VOCResult.detections


@dataclass(frozen=True, eq=False)
class VOCResult(ReadOnlyArrays):
    """Result of :func:`evaluate_voc`.

    Attributes
    ----------
    params : VOCParams
        The settings used, with ``image_ids`` and ``category_ids`` filled in.
    ap : ndarray, shape (T, K)
        AP per IoU threshold and class; NaN for a class without ground truth (see
        ``VOCParams.classes_without_gt``).
    map : ndarray, shape (T,)
        Mean of ``ap`` over the classes, per threshold (NaN if no class counts).
    category_ids : ndarray, shape (K,)
    category_names : tuple of str
    n_positives : ndarray, shape (K,)
        ``npos``: objects per class that are not difficult (``ignore`` or ``iscrowd``).
    n_difficult : ndarray, shape (K,)
    n_detections : ndarray, shape (K,)
        Detections evaluated per class.
    tp, fp : ndarray, shape (T, K)
        True and false positives per threshold and class. Detections on difficult objects
        are neither: ``n_detections - tp - fp`` of them.
    matches : MatchTable or None
        Row indices refer to ``dataset.gt`` and ``detections``; ``matches.dt_best_gt`` and
        ``matches.dt_best_iou`` give each detection's best object and IoU. None from
        :meth:`deteval.Evaluator.compute`, whose state keeps no match table.
    dataset : Dataset
        The ground truth evaluated (``gt`` is a deprecated alias of it).
    detections : Detections or None
        As given (the rounding of ``round_detections`` is not applied here); None from
        :meth:`deteval.Evaluator.compute`, where curve rows (``pr_curve``) and ``scores``
        refer to the evaluator's state instead.
    scores : ndarray, shape (n_dt,)
        The scores used for ranking (rounded with ``round_detections``).
    notes : tuple of str
    timings : dict
        Seconds spent in "load", "match", "accumulate" and "total".
    """

    params: VOCParams
    ap: np.ndarray
    map: np.ndarray
    category_ids: np.ndarray
    category_names: tuple[str, ...]
    n_positives: np.ndarray
    n_difficult: np.ndarray
    n_detections: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    matches: MatchTable | None
    dataset: Dataset
    detections: Detections | None
    scores: np.ndarray
    notes: tuple[str, ...] = ()
    timings: dict = field(default_factory=dict)
    # The curves: evaluated detections by (class, score, row); running TP and FP counts and
    # whether each counts (is not ignored), per threshold; class k owns [bounds[k], bounds[k+1]).
    _order: np.ndarray = field(default=None, repr=False)
    _tp_cum: np.ndarray = field(default=None, repr=False)
    _fp_cum: np.ndarray = field(default=None, repr=False)
    _counted: np.ndarray = field(default=None, repr=False)
    _bounds: np.ndarray = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    #: Deprecated alias of ``dataset`` (one release): ``result.gt.gt`` read as the table.
    gt = DeprecatedAlias("dataset")

    @property
    def mean_ap(self) -> float:
        """Mean of :attr:`map` over the IoU thresholds (detectron2's "AP" for .50:.95)."""
        return float(np.mean(self.map))

    def _threshold_index(self, iou_threshold: float | None) -> int:
        if iou_threshold is None:
            return 0
        hits = [i for i, t in enumerate(self.params.iou_thresholds) if t == iou_threshold]
        if not hits:
            raise KeyError(f"iou_threshold {iou_threshold!r} was not evaluated; choose one of "
                           f"{self.params.iou_thresholds}")
        return hits[0]

    def _category_index(self, category: int | str) -> int:
        if isinstance(category, str):
            if category in self.category_names:
                return self.category_names.index(category)
        elif isinstance(category, (int, np.integer)):
            hits = np.flatnonzero(self.category_ids == category)
            if len(hits):
                return int(hits[0])
        raise KeyError(f"unknown category {category!r}; give an evaluated category id or name")

    def map_at(self, iou_threshold: float) -> float:
        """The mAP at one of the evaluated IoU thresholds (exact float match)."""
        return float(self.map[self._threshold_index(iou_threshold)])

    def pr_curve(self, category: int | str, *, iou_threshold: float | None = None) -> PRCurve:
        """Precision-recall curve of one class (by id or name) at one threshold.

        ``iou_threshold`` defaults to the first evaluated threshold.
        """
        k, t = self._category_index(category), self._threshold_index(iou_threshold)
        lo, hi = self._bounds[k], self._bounds[k + 1]
        keep = self._counted[t, lo:hi]
        tp = self._tp_cum[t, lo:hi][keep].astype(np.float64)
        fp = self._fp_cum[t, lo:hi][keep].astype(np.float64)
        rows = self._order[lo:hi][keep]
        npos = int(self.n_positives[k])
        recall = tp / npos if npos else np.full(len(tp), np.nan)
        return PRCurve(recall=recall, precision=tp / (tp + fp), scores=self.scores[rows],
                       detections=rows)

    def per_class(self) -> list[dict[str, Any]]:
        """One row per class: ``category_id``, ``name``, ``ap`` (one value per threshold),
        ``n_positives``, ``n_difficult``, ``n_detections``, ``tp`` and ``fp`` (per threshold).
        """
        return [{"category_id": int(cid), "name": name,
                 "ap": self.ap[:, k].tolist(),
                 "n_positives": int(self.n_positives[k]),
                 "n_difficult": int(self.n_difficult[k]),
                 "n_detections": int(self.n_detections[k]),
                 "tp": self.tp[:, k].tolist(), "fp": self.fp[:, k].tolist()}
                for k, (cid, name) in enumerate(zip(self.category_ids.tolist(),
                                                    self.category_names))]

    def to_frame(self, *, iou_threshold: float | str | None = None, outcomes: bool = True):
        """One row per detection and per object as a pandas DataFrame (needs
        ``deteval[frame]``); see :func:`deteval.tidy.tidy_columns` and docs/tidy-export.md."""
        from ..tidy import to_frame

        return to_frame(self, iou_threshold=iou_threshold, outcomes=outcomes)

    def to_arrow(self, *, iou_threshold: float | str | None = None, outcomes: bool = True):
        """The rows of :meth:`to_frame` as a pyarrow Table (needs ``deteval[frame]``)."""
        from ..tidy import to_arrow

        return to_arrow(self, iou_threshold=iou_threshold, outcomes=outcomes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (NaN becomes None): thresholds, mAP, per-class table, notes."""
        def clean(value):
            if isinstance(value, float):
                return None if np.isnan(value) else value
            if isinstance(value, list):
                return [clean(v) for v in value]
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            return value

        params = params_dict(self.params)
        return clean({
            "iou_thresholds": list(self.params.iou_thresholds),
            "map": self.map.tolist(),
            "mean_ap": self.mean_ap,
            "per_class": self.per_class(),
            "summary": self.summary().splitlines(),
            "notes": list(self.notes),
            "params": params,
        })

    def summary(self) -> str:
        """A readable table: AP, positives, difficult objects, detections, TP and FP per
        class, then the mAP. With more than three thresholds the table shows their mean and
        the APs at 0.5 and 0.75 (when evaluated); TP and FP are at the first threshold."""
        p = self.params
        thresholds = list(p.iou_thresholds)
        label = dict(zip(thresholds, threshold_labels(thresholds)))
        span = f"[{label[thresholds[0]]}:{label[thresholds[-1]]}]"
        columns: list[tuple[str, np.ndarray]] = []
        if len(thresholds) > 3:
            with np.errstate(all="ignore"):
                columns.append((f"AP@{span}",
                                np.mean(self.ap, axis=0)))
            shown = [t for t in (0.5, 0.75) if t in thresholds]
        else:
            shown = thresholds
        columns += [(f"AP@{label[t]}", self.ap[thresholds.index(t)]) for t in shown]
        first = f"@{label[thresholds[0]]}"
        comparison = "IoU >= t" if p.iou_comparison == ">=" else "IoU > t"
        pixels = "inclusive pixels (+1)" if p.inclusive_pixels else "continuous coordinates"
        lines = [f"Pascal VOC evaluation: AP {p.ap_method}, {comparison}, {pixels}"]
        width = max([len("category")] + [len(n) for n in self.category_names])
        ap_width = max([13] + [len(name) for name, _ in columns])
        header = f"{'category':<{width}}" + "".join(f" {name:>{ap_width}}"
                                                  for name, _ in columns)
        header += f" {'positives':>9} {'difficult':>9} {'detections':>10}"
        header += f" {'TP' + first:>8} {'FP' + first:>8}"
        lines.append(header)
        for k, name in enumerate(self.category_names):
            row = f"{name:<{width}}" + "".join(f" {_number(v[k]):>{ap_width}}"
                                               for _, v in columns)
            row += (f" {int(self.n_positives[k]):>9} {int(self.n_difficult[k]):>9}"
                    f" {int(self.n_detections[k]):>10} {int(self.tp[0, k]):>8}"
                    f" {int(self.fp[0, k]):>8}")
            lines.append(row)
        counted = int(np.count_nonzero(~np.isnan(self.ap[0]))) \
            if p.classes_without_gt == "exclude" else len(self.category_names)
        for t in shown:
            lines.append(f"mAP@{label[t]} = {_number(self.map_at(t))} over {counted} "
                         f"class{'' if counted == 1 else 'es'}")
        if len(thresholds) > 1:
            lines.append(f"mAP@{span} "
                         f"({len(thresholds)} thresholds) = {_number(self.mean_ap)}")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


def _number(value: float) -> str:
    return "n/a" if np.isnan(value) else f"{value:.4f}"


def _load(gt: Any, dt: Any, match_by: str = "auto") -> tuple[Dataset, Detections]:
    # One input layer for every protocol and diagnostic (docs/resolution.md).
    pair = load_pair(gt, dt, match_by=match_by)
    return pair.dataset, pair.detections


def evaluate_voc(gt: Any, dt: Any, *, params: VOCParams | None = None,
                 threads: int | None = None, **options: Any) -> VOCResult:
    """Evaluate detections with the Pascal VOC protocol.

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
        Ground truth: a :class:`~deteval.data.Dataset` or a COCO instances file (or its
        dict). Objects with ``ignore`` (VOC *difficult*) or ``iscrowd`` set are difficult.
        Boxes are xyxy; with ``inclusive_pixels`` they are VOC's inclusive pixel indices.
    dt : Detections, str, PathLike, list, dict or ndarray
        Detections, or anything :func:`~deteval.io.coco.read_coco_results` reads.
    params : VOCParams, optional
        Base settings (default :data:`VOC2012`); keyword options replace its fields.
    threads : int, optional
        Threads for reading the files and matching (default None: every core of the
        machine; 1 starts no thread); the numbers are identical for every value (see
        docs/threads.md).
    **options
        Any field of :class:`VOCParams`: ``iou_thresholds``, ``ap_method``,
        ``iou_comparison``, ``inclusive_pixels``, ``round_detections``,
        ``classes_without_gt``, ``image_ids``, ``category_ids``.

    Returns
    -------
    VOCResult

    Raises
    ------
    FormatError
        Unreadable or invalid input files.
    ValueError, TypeError
        Invalid settings or inputs; an unknown option is a TypeError.

    Notes
    -----
    Detections whose category is not a ground-truth category are dropped (``notes`` counts
    them). Equal scores keep the input order (the devkit's stable sort). The inputs are never
    modified.

    Examples
    --------
    >>> from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
    >>> dataset = Dataset(Images(ids=[1]), Categories(ids=[1]),
    ...                   GroundTruth(image_index=[0], category_index=[0],
    ...                               boxes=[[0, 0, 9, 9]]))
    >>> half = Detections(image_index=[0], category_index=[0], boxes=[[0, 0, 9, 4]],
    ...                   scores=[0.9])  # IoU exactly 0.5 with the +1 convention
    >>> evaluate_voc(dataset, half).map.tolist()
    [1.0]
    >>> evaluate_voc(dataset, half, iou_comparison=">").map.tolist()
    [0.0]
    """
    started = time.perf_counter()
    threads = resolve_threads(threads)
    base = VOC2012 if params is None else params
    if not isinstance(base, VOCParams):
        raise TypeError(f"params must be a VOCParams; got {type(base).__name__}")
    unknown = set(options) - {f.name for f in dataclasses.fields(VOCParams)}
    if unknown:
        raise TypeError(f"evaluate_voc() got unknown option(s): {', '.join(sorted(unknown))}")
    p = dataclasses.replace(base, **options) if options else base
    with threads_limited(threads):     # (the readers' threads too)
        dataset, detections = _load(gt, dt)
    loaded = time.perf_counter()
    ctx = prepare(dataset, p)
    matched = match_stage(ctx, detections, threads=threads)
    return finish(ctx, matched.state, n_detections=len(detections),
                  n_unknown=int(np.count_nonzero(detections.category_index < 0)),
                  matches=matched.table, detections=detections, scores=matched.scores,
                  state_rows=matched.state_rows, times=(started, loaded, time.perf_counter()))


def finish(ctx: VOCContext, state: VOCState, *, n_detections: int, n_unknown: int,
           matches: MatchTable | None, detections: Detections | None, scores: np.ndarray,
           state_rows: np.ndarray, times: tuple[float, float, float]) -> VOCResult:
    """Accumulate ``state`` and build the result (the last stage of every VOC evaluation).

    ``scores`` are the ranking scores of the rows ``state_rows`` of the state refer to (the
    detections, or the state itself); ``times`` the start, loaded and matched instants.
    """
    started, loaded, matched = times
    p, dataset = ctx.params, ctx.dataset
    acc = accumulate_stage(ctx, state)
    accumulated = time.perf_counter()
    notes = _notes(p, dataset, n_detections, n_unknown, ctx.gt_k, ctx.n_positives,
                   acc.n_detections, dataset.gt, ctx.category_ids, ctx.image_ids)
    names_by_id = dict(zip(dataset.categories.ids.tolist(), dataset.categories.names))
    names = tuple(names_by_id.get(c, str(c)) for c in ctx.category_ids.tolist())
    finished = time.perf_counter()
    return VOCResult(
        params=p, ap=acc.ap, map=acc.map, category_ids=ctx.category_ids.copy(),
        category_names=names, n_positives=ctx.n_positives, n_difficult=ctx.n_difficult,
        n_detections=acc.n_detections, tp=acc.tp, fp=acc.fp, matches=matches, dataset=dataset,
        detections=detections, scores=scores, notes=tuple(notes),
        timings={"load": loaded - started, "match": matched - loaded,
                 "accumulate": accumulated - matched, "total": finished - started},
        _order=state_rows[acc.order], _tp_cum=acc.tp_cum, _fp_cum=acc.fp_cum,
        _counted=acc.counted, _bounds=acc.bounds)


def input_notes(dataset: Dataset, detections: Detections) -> tuple[str, ...]:
    """The notes :func:`evaluate_voc` gives (with every image and category) on what the
    devkit's rules leave out of its inputs: detections of a category that is not a
    ground-truth category (dropped) and crowd regions (treated as difficult objects). For
    the diagnostics that apply the rules without evaluating (``deteval errors --protocol
    voc2007|voc2012``).

    Examples
    --------
    >>> from deteval.io.coco import read_coco_gt, read_coco_results
    >>> gt = read_coco_gt({"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
    ...                    "annotations": [{"id": 1, "image_id": 1, "category_id": 1,
    ...                                     "bbox": [0, 0, 9, 9], "iscrowd": 1}]})
    >>> dt = read_coco_results([{"image_id": 1, "category_id": 7, "bbox": [0, 0, 5, 5],
    ...                          "score": 0.5}], gt)
    >>> input_notes(gt, dt)
    ('1 detection(s) dropped: their category is not a ground-truth category', \
'1 crowd region(s) (iscrowd) treated as difficult objects')
    """
    gt = dataset.gt
    n_crowd = int(np.count_nonzero(gt.iscrowd & ~gt.ignore & (gt.category_index >= 0)))
    return tuple(_input_notes(int(np.count_nonzero(detections.category_index < 0)), n_crowd))


def _input_notes(n_unknown: int, n_crowd: int) -> list[str]:
    notes = []
    if n_unknown:
        notes.append(f"{n_unknown} detection(s) dropped: their category is not a "
                     "ground-truth category")
    if n_crowd:
        notes.append(f"{n_crowd} crowd region(s) (iscrowd) treated as difficult objects")
    return notes


def _notes(p, dataset, n_dt, n_unknown, gt_k, n_positives, n_detections, objects,
           category_ids, image_ids) -> list[str]:
    notes = []
    if n_dt == 0:
        notes.append("no detections: every class with ground truth has AP 0")
    n_crowd = int(np.count_nonzero(objects.iscrowd & ~objects.ignore & (gt_k >= 0)))
    notes += _input_notes(n_unknown, n_crowd)
    unknown_images = int(np.count_nonzero(~np.isin(image_ids, dataset.images.ids)))
    if unknown_images:
        notes.append(f"{unknown_images} requested image id(s) are not images of the ground "
                     "truth")
    unknown_categories = int(np.count_nonzero(~np.isin(category_ids, dataset.categories.ids)))
    if unknown_categories:
        notes.append(f"{unknown_categories} requested category id(s) are not categories of "
                     "the ground truth")
    empty = np.flatnonzero(n_positives == 0)
    if len(empty):
        names_by_id = dict(zip(dataset.categories.ids.tolist(), dataset.categories.names))
        listed = ", ".join(names_by_id.get(int(c), str(int(c))) for c in category_ids[empty])
        wasted = int(n_detections[empty].sum())
        if p.classes_without_gt == "exclude":
            text = (f"{len(empty)} class(es) without ground truth ({listed}): AP is NaN and "
                    "they are left out of the mAP (the devkit would divide by zero)")
            if wasted:
                text += f"; their {wasted} detection(s) count nowhere"
        else:
            text = (f"{len(empty)} class(es) without ground truth ({listed}): AP as detectron2 "
                    "computes it after dividing by zero (0 with 11-point AP; NaN with "
                    "all-points AP when the class has detections), counted in the mAP")
        notes.append(text)
        if len(empty) == len(category_ids) and p.classes_without_gt == "exclude":
            notes.append("no class has ground truth: the mAP is NaN")
    return notes
