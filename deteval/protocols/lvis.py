"""The LVIS protocol, number for number equal to lvis-api's ``LVISEval`` (lvis 0.5.3).

LVIS is federated: an image is annotated exhaustively only for some categories. The rules
(see ``docs/protocols/lvis.md``):

* results are cut to the ``max_detections`` (300) highest-scoring of each image, across
  categories, before anything else (lvis-api's ``LVISResults``);
* objects and detections whose area is not strictly between 0 and infinity are dropped;
* a detection is evaluated in its image only if its category is verified there: present
  (the image has an object of it) or absent (listed in ``neg_category_ids``);
* an unmatched detection of a category listed in the image's
  ``not_exhaustive_category_ids`` is ignored, not a false positive;
* matching is COCO's greedy rule without crowd regions (``iscrowd`` is not read; the
  ``ignore`` key is), with no per-category detection limit; accumulation is COCO's with one
  max-detections setting;
* the summary adds APr, APc and APf: AP over the categories of each frequency group.

Dimension letters: ``T`` IoU thresholds, ``R`` recall thresholds, ``K`` categories (sorted
ids), ``A`` area ranges. ``precision[T, R, K, A]`` and ``recall[T, K, A]`` are lvis-api's
``eval["precision"]`` and ``eval["recall"]`` (-1 where a category has no ground truth).

Examples
--------
>>> gt = {"images": [{"id": 1, "neg_category_ids": [2], "not_exhaustive_category_ids": []}],
...       "categories": [{"id": 1, "name": "a", "frequency": "f"},
...                      {"id": 2, "name": "b", "frequency": "r"}],
...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1,
...                        "bbox": [0, 0, 10, 10], "area": 100}]}
>>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 9], "score": 0.9},
...       {"image_id": 1, "category_id": 2, "bbox": [20, 20, 5, 5], "score": 0.8}]
>>> result = evaluate_lvis(gt, dt)
>>> result.stats_named["AP"], result.stats_named["APr"]
(0.9, -1.0)
>>> print(result.summary().splitlines()[6])
 Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=300 catIds=  r] = -1.000
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from .._arrays import ReadOnlyArrays
from .._deprecation import DeprecatedAlias
from .._sorting import descending_rank, lexorder
from .._validation import area_ranges, check_similarity_settings
from ..data import Dataset, Detections, has_column
from ..io.coco import read_coco_results
from ..io.lvis import FREQUENCIES, LVISGroundTruth, read_lvis_gt
from ..matching import MatchTable, match_detections, rank_within_groups
from ._coco_stages import accumulate_table, pair_similarity
from ._results import AREA_COLUMNS, mean_valid, per_class_rows, stat_by_name, summary_dict
from .coco import COCOParams

__all__ = ["LVIS", "LVIS_STAT_NAMES", "LVISParams", "LVISResult", "evaluate_lvis"]


@dataclass(frozen=True)
class LVISParams:
    """Settings of the LVIS protocol (lvis-api ``Params`` names in brackets).

    Parameters
    ----------
    iou_type : {"bbox", "segm", "boundary"}
        (``iou_type``) box IoU or mask IoU (pycocotools' routines, no crowd regions), or
        boundary IoU (boundary-iou-api's LVIS evaluation: the minimum of mask and boundary
        IoU; docs/protocols/boundary.md).
    iou_thresholds : tuple of float
        (``iou_thrs``) default ``np.linspace(0.5, 0.95, 10)``.
    recall_thresholds : tuple of float
        (``rec_thrs``) default ``np.linspace(0, 1, 101)``.
    max_detections : int
        Detections kept per image, across categories (``LVISResults(max_dets=...)``, and
        ``max_dets`` in the summary). Default 300.
    area_ranges : tuple of (float, float)
        (``area_rng``) inclusive bounds. Default: all, small, medium, large (COCO's).
    area_labels : tuple of str
        (``area_rng_lbl``) one distinct label per range; the summary looks up "all",
        "small", "medium" and "large".
    dilation_ratio : float
        ``iou_type="boundary"``: boundary width as a fraction of the image diagonal
        (default 0.02); another value with another ``iou_type`` is a ValueError (nothing
        would read it).
    """

    iou_type: str = "bbox"
    iou_thresholds: tuple[float, ...] = tuple(np.linspace(0.5, 0.95, 10).tolist())
    recall_thresholds: tuple[float, ...] = tuple(np.linspace(0.0, 1.0, 101).tolist())
    max_detections: int = 300
    area_ranges: tuple[tuple[float, float], ...] = (
        (0.0, 1e10), (0.0, 1024.0), (1024.0, 9216.0), (9216.0, 1e10))
    area_labels: tuple[str, ...] = ("all", "small", "medium", "large")
    dilation_ratio: float = 0.02

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if self.iou_type not in ("bbox", "segm", "boundary"):
            raise ValueError(f"iou_type must be 'bbox', 'segm' or 'boundary' (lvis-api and "
                             f"boundary-iou-api evaluate no other); got {self.iou_type!r}")
        ratio = self.dilation_ratio
        if (isinstance(ratio, bool) or not isinstance(ratio, (int, float))
                or not np.isfinite(ratio) or ratio < 0):
            raise ValueError(f"dilation_ratio must be a finite number >= 0; got {ratio!r}")
        set_(self, "dilation_ratio", float(ratio))
        # As COCOParams: a ratio other than the default with a type that never reads it.
        check_similarity_settings(
            self.iou_type, dilation_ratio=None if self.dilation_ratio == 0.02 else ratio)
        for name in ("iou_thresholds", "recall_thresholds"):
            values = np.atleast_1d(np.asarray(getattr(self, name), dtype=np.float64))
            if values.ndim != 1 or len(values) == 0 or not np.isfinite(values).all():
                raise ValueError(f"{name} must be a non-empty list of finite numbers; "
                                 f"got {getattr(self, name)!r}")
            set_(self, name, tuple(values.tolist()))
        m = self.max_detections
        if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer)) or m < 1:
            raise ValueError(f"max_detections must be a positive integer (detections kept "
                             f"per image); got {m!r}")
        set_(self, "max_detections", int(m))
        ranges = area_ranges(self.area_ranges)
        set_(self, "area_ranges", ranges)
        labels = tuple(str(label) for label in self.area_labels)
        if len(labels) != len(ranges) or len(set(labels)) != len(labels):
            raise ValueError(f"area_labels must give one distinct label per area range "
                             f"({len(ranges)}); got {self.area_labels!r}")
        set_(self, "area_labels", labels)


#: lvis-api's defaults.
LVIS = LVISParams()


def _stat_names(max_dets: int) -> tuple[str, ...]:
    return ("AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf", f"AR@{max_dets}",
            f"ARs@{max_dets}", f"ARm@{max_dets}", f"ARl@{max_dets}")


#: Names of the 13 ``stats`` at the default 300 detections: lvis-api's ``results`` keys.
LVIS_STAT_NAMES = _stat_names(300)

# (is_ap, iou threshold or None, area label, frequency group index or None), in order.
STAT_SPECS = (
    (True, None, "all", None), (True, 0.5, "all", None), (True, 0.75, "all", None),
    (True, None, "small", None), (True, None, "medium", None), (True, None, "large", None),
    (True, None, "all", 0), (True, None, "all", 1), (True, None, "all", 2),
    (False, None, "all", None), (False, None, "small", None), (False, None, "medium", None),
    (False, None, "large", None),
)


@dataclass(frozen=True, eq=False)
class LVISResult(ReadOnlyArrays):
    """Result of :func:`evaluate_lvis`.

    Attributes
    ----------
    params : LVISParams
    stats : ndarray, shape (13,)
        AP, AP50, AP75, APs, APm, APl, APr, APc, APf, AR, ARs, ARm, ARl (-1 if undefined),
        lvis-api's ``results`` values in its order.
    precision : ndarray, shape (T, R, K, A)
    recall : ndarray, shape (T, K, A)
    category_ids : ndarray, shape (K,)
        Category of each K column (sorted ids, as lvis-api's ``cat_ids``).
    category_names : tuple of str
    frequency : tuple of str
        ``"r"``, ``"c"`` or ``"f"`` per K column.
    n_gt : ndarray, shape (K,)
        Objects evaluated per category (area strictly positive).
    n_detections : ndarray, shape (K,)
        Detections evaluated per category (kept by the per-image cut, in a verified
        category, area strictly positive).
    matches : MatchTable
        Row indices refer to ``dataset.gt`` and ``detections`` (all results as read, before the
        cut). Not evaluated: beyond the cut, unknown or unverified category, zero area.
        ``dt_out_of_range`` also marks the detections of a not-exhaustive category, so that
        ``detection_status`` reports them IGNORED when unmatched, as lvis-api does.
    dataset : Dataset
        The ground truth evaluated (``gt`` is a deprecated alias of it).
    detections : Detections
    notes : tuple of str
    timings : dict
    lvis_gt : LVISGroundTruth or None
        The federated keys the evaluation read (``neg_category_ids``,
        ``not_exhaustive_category_ids``, ``frequency``), for the tidy export and the
        diagnostics.
    """

    params: LVISParams
    stats: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    category_ids: np.ndarray
    category_names: tuple[str, ...]
    frequency: tuple[str, ...]
    n_gt: np.ndarray
    n_detections: np.ndarray
    matches: MatchTable
    dataset: Dataset
    detections: Detections
    notes: tuple[str, ...] = ()
    timings: dict = field(default_factory=dict)
    lvis_gt: LVISGroundTruth | None = None

    def __post_init__(self) -> None:
        for name in ("stats", "precision", "recall", "category_ids", "n_gt", "n_detections"):
            getattr(self, name).setflags(write=False)

    #: Deprecated alias of ``dataset`` (one release): ``result.gt.gt`` read as the table.
    gt = DeprecatedAlias("dataset")

    @property
    def stat_names(self) -> tuple[str, ...]:
        """Names of ``stats``: lvis-api's ``results`` keys (``AR@300`` ... at 300)."""
        return _stat_names(self.params.max_detections)

    @property
    def stats_named(self) -> dict[str, float]:
        """``stats`` by name, as lvis-api's ``LVISEval.results``."""
        return {n: float(s) for n, s in zip(self.stat_names, self.stats)}

    def stat(self, name: str) -> float:
        """One of the stats by name (``"AP"``, ``"APr"``, ... see ``stat_names``)."""
        return stat_by_name(self.stat_names, self.stats, name)

    @property
    def summary_lines(self) -> list[str]:
        """The 13 lines lvis-api's ``print_results()`` prints, character for character."""
        p = self.params
        lines = []
        for key, value in zip(self.stat_names, self.stats.tolist()):
            title, kind = (("Average Precision", "(AP)") if "AP" in key
                           else ("Average Recall", "(AR)"))
            tail = key[2] if len(key) > 2 else ""
            iou = (f"{float(key[2:]) / 100:0.2f}" if tail.isdigit()
                   else f"{p.iou_thresholds[0]:0.2f}:{p.iou_thresholds[-1]:0.2f}")
            group = tail if tail in FREQUENCIES else "all"
            area = tail if tail in ("s", "m", "l") else "all"
            lines.append(f" {title:<18} {kind} @[ IoU={iou:<9} | area={area:>6s} | "
                         f"maxDets={p.max_detections:>3d} catIds={group:>3s}] = {value:0.3f}")
        return lines

    def summary(self) -> str:
        """The summary text, identical line for line to lvis-api's ``print_results()``."""
        return "\n".join(self.summary_lines)

    def per_class(self) -> list[dict[str, Any]]:
        """Per-category table: frequency, AP at the LVIS settings, AR, and counts.

        Each row has ``category_id``, ``name``, ``frequency``, ``AP``, ``AP50``, ``AP75``,
        ``APs``, ``APm``, ``APl``, ``AR`` (at ``max_detections`` per image), ``n_gt`` and
        ``n_detections``; -1 where undefined (no ground truth in that area range).
        """
        p = self.params
        return per_class_rows(
            self.category_ids, {"name": self.category_names, "frequency": self.frequency},
            AREA_COLUMNS,
            lambda iou, area, k: mean_valid(_select(self.precision, p, iou, area, [k])),
            ("AR", lambda k: mean_valid(_select(self.recall, p, None, "all", [k]))),
            {"n_gt": self.n_gt, "n_detections": self.n_detections})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: stats (in order and named), summary lines, per-class table."""
        return summary_dict(self)

    def to_frame(self, *, iou_threshold: float | str | None = None, outcomes: bool = True):
        """One row per detection and per object, as a pandas DataFrame (needs
        ``deteval[frame]``); see :func:`deteval.tidy.tidy_columns` and docs/tidy-export.md."""
        from ..tidy import to_frame

        return to_frame(self, iou_threshold=iou_threshold, outcomes=outcomes)

    def to_arrow(self, *, iou_threshold: float | str | None = None, outcomes: bool = True):
        """The rows of :meth:`to_frame` as a pyarrow Table (needs ``deteval[frame]``)."""
        from ..tidy import to_arrow

        return to_arrow(self, iou_threshold=iou_threshold, outcomes=outcomes)


def _select(values: np.ndarray, p: LVISParams, iou: float | None, area: str,
            categories: list[int] | None) -> np.ndarray:
    """lvis-api's ``_summarize`` selection on precision (4-D) or recall (3-D)."""
    area_index = [i for i, label in enumerate(p.area_labels) if label == area]
    if iou is not None:
        values = values[np.where(iou == np.asarray(p.iou_thresholds))[0]]
    if not area_index or (categories is not None and not categories):
        return np.zeros(0)
    if categories is None:
        return values[..., area_index]
    # Two index lists at once, as lvis-api indexes (labels are distinct: one area index).
    return values[:, :, categories, area_index] if values.ndim == 4 else \
        values[:, categories, area_index]


def top_per_image(image_index: np.ndarray, scores: np.ndarray, limit: int) -> np.ndarray:
    """Whether each result is among the ``limit`` highest-scoring of its image.

    lvis-api sorts an image's results by score with Python's stable sort only when it has
    more than ``limit``, so equal scores at the cut keep the earlier results (input order).
    """
    if len(scores) == 0:
        return np.zeros(0, dtype=bool)
    rank, _ = descending_rank(scores)
    order = lexorder([image_index, rank])
    kept = np.empty(len(scores), dtype=bool)
    kept[order] = rank_within_groups(image_index[order]) < limit
    return kept


def lvis_ground_truth(gt: Any, iou_type: str, *, caller: str = "evaluate_lvis"
                      ) -> LVISGroundTruth:
    """``gt`` (an LVIS file, its dict or an :class:`LVISGroundTruth`) as an
    :class:`LVISGroundTruth`; a TypeError naming ``caller`` for a :class:`Dataset`."""
    if isinstance(gt, Dataset):
        raise TypeError(f"{caller} needs the LVIS keys (neg_category_ids, "
                        "not_exhaustive_category_ids, frequency) that a Dataset does not hold: "
                        "pass the file's path or dict, or read_lvis_gt(...)")
    return gt if isinstance(gt, LVISGroundTruth) else read_lvis_gt(gt, iou_type=iou_type)


def _load(gt: Any, dt: Any, iou_type: str) -> tuple[LVISGroundTruth, Detections]:
    iou_type = "segm" if iou_type == "boundary" else iou_type    # boundaries come from masks
    lvis = lvis_ground_truth(gt, iou_type)
    dataset = lvis.dataset
    detections = (dt if isinstance(dt, Detections)
                  else read_coco_results(dt, dataset, iou_type=iou_type))
    if iou_type == "segm":
        for what, table in (("ground truth", dataset.gt), ("detections", detections)):
            if not has_column(table, "masks") and len(table):
                raise ValueError(f"iou_type 'segm' needs masks but the {what} have none; read "
                                 "the files with iou_type='segm' (or pass paths or dicts)")
    if len(detections) and (detections.image_index.min() < 0
                            or detections.image_index.max() >= len(dataset.images)):
        raise ValueError("detections.image_index must index the dataset's images table")
    return lvis, detections


def evaluate_lvis(gt: Any, dt: Any, *, iou_type: str | None = None,
                  params: LVISParams | None = None, **options: Any) -> LVISResult:
    """Evaluate detections with the LVIS protocol, equal to lvis-api's ``LVISEval``.

    Parameters
    ----------
    gt : str, PathLike, dict or LVISGroundTruth
        An LVIS annotation file, its dict, or :func:`~deteval.io.lvis.read_lvis_gt`'s result
        (read with the same ``iou_type``).
    dt : str, PathLike, list, dict, ndarray or Detections
        Results, as :func:`~deteval.io.coco.read_coco_results` reads them. An empty list is
        allowed (lvis-api raises IndexError): every category with ground truth has AP 0.
    iou_type : {"bbox", "segm", "boundary"}, optional
        Default ``params.iou_type`` ("bbox").
    params : LVISParams, optional
        Base settings (default :data:`LVIS`); keyword options replace its fields.
    **options
        Any field of :class:`LVISParams`: ``iou_thresholds``, ``recall_thresholds``,
        ``max_detections``, ``area_ranges``, ``area_labels``, ``dilation_ratio``
        (``iou_type="boundary"`` only: with another type it is a ValueError).

    Returns
    -------
    LVISResult

    Raises
    ------
    FormatError
        Unreadable input, an image without ``neg_category_ids`` or
        ``not_exhaustive_category_ids``, a category without a valid ``frequency``, a result
        on an image not in the ground truth. The message names the file and record.
    ValueError, TypeError
        Invalid settings.
    """
    started = time.perf_counter()
    if iou_type is not None:
        options["iou_type"] = iou_type
    unknown = set(options) - {f.name for f in dataclasses.fields(LVISParams)}
    if unknown:
        raise TypeError(f"evaluate_lvis() got unknown option(s): {', '.join(sorted(unknown))}")
    p = dataclasses.replace(params or LVIS, **options)
    check_similarity_settings(p.iou_type, dilation_ratio=options.get("dilation_ratio"))
    lvis, detections = _load(gt, dt, p.iou_type)
    dataset = lvis.dataset
    loaded = time.perf_counter()

    table, sel = _match(p, lvis, detections)
    matched = time.perf_counter()
    n_k = len(sel.category_ids)
    # lvis-api accumulates as COCO does with a single, unlimited max-detections setting.
    accumulate_params = SimpleNamespace(
        recall_thresholds=p.recall_thresholds, iou_thresholds=p.iou_thresholds,
        area_ranges=p.area_ranges, max_detections=(max(len(detections), 1),))
    precision, recall, _ = accumulate_table(table, accumulate_params, n_k=n_k, dt_k=sel.dt_k,
                                            dt_img=sel.dt_img, scores_in=detections.scores,
                                            gt_k=sel.gt_k)
    precision, recall = precision[..., 0], recall[..., 0]
    accumulated = time.perf_counter()

    frequency = tuple(lvis.frequency[row] for row in sel.category_rows.tolist())
    stats = summary_stats(p, precision, recall, frequency)
    names = tuple(dataset.categories.names[row] for row in sel.category_rows.tolist())
    finished = time.perf_counter()
    return LVISResult(
        params=p, stats=stats, precision=precision, recall=recall,
        category_ids=sel.category_ids, category_names=names, frequency=frequency,
        n_gt=np.bincount(sel.gt_k[sel.gt_k >= 0], minlength=n_k),
        n_detections=np.bincount(sel.dt_k[table.dt_kept], minlength=n_k),
        matches=table, dataset=dataset, detections=detections, notes=sel.notes,
        timings={"load": loaded - started, "match": matched - loaded,
                 "accumulate": accumulated - matched, "summarize": finished - accumulated,
                 "total": finished - started}, lvis_gt=lvis)


def summary_stats(p: LVISParams, precision: np.ndarray, recall: np.ndarray,
                  frequency: tuple[str, ...]) -> np.ndarray:
    """The 13 ``stats`` of ``precision`` (T, R, K, A) and ``recall`` (T, K, A), lvis-api's
    ``summarize`` (``frequency``: ``"r"``, ``"c"`` or ``"f"`` per K column)."""
    groups = [[k for k in range(len(frequency)) if frequency[k] == f] for f in FREQUENCIES]
    return np.array([
        mean_valid(_select(precision if is_ap else recall, p, iou, area,
                            None if group is None else groups[group]))
        for is_ap, iou, area, group in STAT_SPECS])


def summarize_lvis(values: np.ndarray, p: LVISParams, iou: float | None, area: str,
                   categories: list[int] | None = None) -> float:
    """lvis-api's ``_summarize``: the mean of the values > -1 of ``precision`` (4-D) or
    ``recall`` (3-D) at an IoU threshold (None: all), an area label and some categories
    (None: all); -1 when there is none."""
    return mean_valid(_select(values, p, iou, area, categories))


def per_class_ap(p: LVISParams, precision: np.ndarray) -> list[float]:
    """The ``AP`` of :meth:`LVISResult.per_class`, per K column of ``precision``."""
    return [mean_valid(_select(precision, p, None, "all", [k]))
            for k in range(precision.shape[2])]


def _match(p: LVISParams, lvis: LVISGroundTruth, detections: Detections):
    """The federated selection, then COCO's greedy matcher over every (image, category)."""
    dataset = lvis.dataset
    gt = dataset.gt
    # lvis-api's img_ids and cat_ids: sorted ids; groups are image position * K + position.
    image_order = np.argsort(dataset.images.ids, kind="stable")
    image_pos = np.empty(len(image_order), dtype=np.int64)
    image_pos[image_order] = np.arange(len(image_order))
    category_rows = np.argsort(dataset.categories.ids, kind="stable")
    category_pos = np.empty(len(category_rows), dtype=np.int64)
    category_pos[category_rows] = np.arange(len(category_rows))
    n_k = len(category_rows)

    s = _selection(lvis, detections, p.max_detections)
    gt_ok, dt_key = s.gt_ok, s.dt_key
    n_dt = len(detections)
    evaluated = s.in_cut & s.known & s.area_ok & s.verified
    not_exhaustive = evaluated & np.isin(dt_key, lvis.not_exhaustive_keys)

    gt_k = np.where(gt_ok, category_pos[gt.category_index], -1)
    gt_img = image_pos[gt.image_index]
    # (-1, an unknown category, picks the -1 appended: an index even without categories)
    dt_k = np.where(evaluated, np.r_[category_pos, -1][detections.category_index], -1)
    dt_img = np.where(evaluated, image_pos[detections.image_index], -1)
    gt_group = np.where(gt_ok, gt_img * n_k + gt_k, -1)
    dt_group = np.where(evaluated, dt_img * n_k + dt_k, -1)

    no_crowd = np.zeros(len(gt), dtype=bool)
    similarity = pair_similarity(
        COCOParams(iou_type=p.iou_type, iou_thresholds=p.iou_thresholds,
                   dilation_ratio=p.dilation_ratio), dataset, detections,
        np.arange(len(gt)), detections.as_xywh(), gt.as_xywh(), no_crowd)
    table = match_detections(
        dt_group=dt_group, dt_scores=detections.scores, dt_area=detections.area,
        gt_group=gt_group, gt_crowd=no_crowd, gt_ignore=np.asarray(gt.ignore, dtype=bool),
        gt_area=gt.area, similarity=similarity, iou_thresholds=np.asarray(p.iou_thresholds),
        area_ranges=np.asarray(p.area_ranges), max_detections=max(n_dt, 1))
    # An unmatched detection of a not-exhaustive category is ignored in every area range,
    # exactly as an unmatched detection outside the range is.
    table = dataclasses.replace(
        table, dt_out_of_range=table.dt_out_of_range | not_exhaustive[None, :])

    notes = _notes(p.max_detections, n_dt, s)
    return table, SimpleNamespace(dt_k=dt_k, dt_img=dt_img, gt_k=gt_k, notes=notes,
                                  category_rows=category_rows,
                                  category_ids=dataset.categories.ids[category_rows].copy())


def _selection(lvis: LVISGroundTruth, detections: Detections,
               max_detections: int) -> SimpleNamespace:
    """lvis-api's selection, as masks: objects kept (``gt_ok``), and per detection kept by
    the per-image cut (``in_cut``), of a ground-truth category (``known``), of an area kept
    (``area_ok``) and of a category verified in its image (``verified``); ``dt_key`` is its
    (image row, category row) key."""
    gt, n_rows_k = lvis.dataset.gt, len(lvis.dataset.categories)
    # get_ann_ids keeps areas strictly between 0 and infinity, objects and results alike.
    gt_ok = (gt.area > 0) & (gt.area < np.inf)
    present = np.unique((gt.image_index * n_rows_k + gt.category_index)[gt_ok])
    dt_key = detections.image_index * n_rows_k + np.maximum(detections.category_index, 0)
    return SimpleNamespace(
        gt_ok=gt_ok, dt_key=dt_key,
        in_cut=top_per_image(detections.image_index, detections.scores, max_detections),
        known=detections.category_index >= 0,
        area_ok=(detections.area > 0) & (detections.area < np.inf),
        verified=np.isin(dt_key, present) | np.isin(dt_key, lvis.negative_keys))


def selection_notes(lvis: LVISGroundTruth, detections: Detections, *,
                    max_detections: int = 300) -> tuple[str, ...]:
    """The notes :func:`evaluate_lvis` gives (``LVISResult.notes``) on what lvis-api's
    selection leaves out: detections beyond the per-image cut, of a category_id that is not
    a ground-truth category, of an area not kept or of a category not verified in their
    image, and objects of an area not kept. For the commands that apply the selection
    without evaluating (``deteval errors --protocol lvis``).

    Examples
    --------
    >>> from deteval.io.coco import read_coco_results
    >>> gt = {"images": [{"id": 1, "neg_category_ids": [], "not_exhaustive_category_ids": []}],
    ...       "categories": [{"id": 1, "name": "a", "frequency": "f"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1,
    ...                        "bbox": [0, 0, 10, 10], "area": 100}]}
    >>> lvis = read_lvis_gt(gt)
    >>> dt = read_coco_results([{"image_id": 1, "category_id": 7, "bbox": [0, 0, 5, 5],
    ...                          "score": 0.5}], lvis.dataset)
    >>> selection_notes(lvis, dt)
    ('1 detection(s) not evaluated: of a category_id that is not a ground-truth category',)
    """
    return _notes(max_detections, len(detections), _selection(lvis, detections, max_detections))


def _notes(max_detections: int, n_dt: int, s: SimpleNamespace) -> tuple[str, ...]:
    in_cut, known, area_ok, verified, gt_ok = s.in_cut, s.known, s.area_ok, s.verified, s.gt_ok
    notes = []
    if n_dt == 0:
        notes.append("no detections: the results are empty, so every category with ground "
                     "truth has AP 0 (lvis-api raises IndexError)")
    counts = (
        (np.count_nonzero(~in_cut), f"beyond the {max_detections} highest-scoring of their "
         "image (lvis-api keeps that many per image, across categories)"),
        (np.count_nonzero(in_cut & ~known), "of a category_id that is not a ground-truth "
         "category"),
        (np.count_nonzero(in_cut & known & ~area_ok), "with an area not strictly between 0 "
         "and infinity (lvis-api drops them)"),
        (np.count_nonzero(in_cut & known & area_ok & ~verified), "of a category neither "
         "annotated nor listed in neg_category_ids in their image (not verified: federated "
         "rule)"),
    )
    for count, why in counts:
        if count:
            notes.append(f"{count} detection(s) not evaluated: {why}")
    n_gt_dropped = int(np.count_nonzero(~gt_ok))
    if n_gt_dropped:
        notes.append(f"{n_gt_dropped} ground-truth object(s) not evaluated: area not strictly "
                     "between 0 and infinity (lvis-api drops them)")
    return tuple(notes)
