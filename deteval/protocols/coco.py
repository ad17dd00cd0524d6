"""The COCO detection protocol, number for number equal to pycocotools' ``COCOeval``.

Dimension letters used throughout:

* ``T`` IoU thresholds (default 10: 0.50, 0.55, ..., 0.95 from ``np.linspace``),
* ``R`` recall thresholds (default 101: 0.00, 0.01, ..., 1.00),
* ``K`` categories (or 1 when categories are ignored),
* ``A`` area ranges (default 4: all, small, medium, large),
* ``M`` max-detections settings (default 3: 1, 10, 100).

The result keeps pycocotools' arrays (``precision[T,R,K,A,M]``, ``recall[T,K,A,M]``,
``scores[T,R,K,A,M]``, -1 where undefined), its 12 ``stats`` and its printed summary, and
adds a per-category table. Everything is computed from one :class:`~deteval.matching.MatchTable`.

How the numbers are reproduced bit for bit (see docs/protocols/coco.md §1-§8): thresholds from
``np.linspace``; IoU from the original ``[x, y, w, h]`` in pycocotools' operation order;
detections ranked by a stable sort on descending score; the crowd and ``ignore`` rules; the
``+ np.spacing(1)`` in precision; recall points found with the same float comparisons as
``searchsorted``; means over the same flattened entries. Precision is only needed where
recall increases, so accumulation works on the matched detections (a few percent of all)
plus one cumulative count of out-of-range detections, instead of on dense (T, A, N) arrays.

Examples
--------
>>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "box"}],
...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1,
...                        "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]}
>>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 9], "score": 0.9}]
>>> result = evaluate_coco(gt, dt)
>>> result.stats[:3].tolist()
[0.8999999999999999, 0.9999999999999999, 0.9999999999999999]
>>> print(result.summary().splitlines()[0])
 Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.900
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._arrays import ReadOnlyArrays, plain_pages
from .._deprecation import DeprecatedAlias
from .._inputs import load_pair
from .._sorting import sorted_unique
from .._threads import resolve_threads, threads_limited
from .._validation import area_ranges, check_similarity_settings
from ..data import Dataset, Detections, derived_or_read, has_column, index_in
from ..errors import FormatError, OptionError
from ..io._shapes import check_iou_type
from ..matching import MatchTable
from ._coco_stages import COCOContext, COCOState, accumulate_stage, match_stage, prepare
from ._results import AREA_COLUMNS, mean_valid, per_class_rows, stat_by_name, summary_dict

__all__ = ["COCO", "COCO_KEYPOINTS", "COCOParams", "COCOResult", "evaluate_coco", "STAT_NAMES",
           "KEYPOINT_STAT_NAMES"]

#: Short names of the 12 ``stats``, in pycocotools' order.
STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl",
              "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")


#: Short names of the 10 keypoint ``stats``, in pycocotools' order (all at maxDets 20).
KEYPOINT_STAT_NAMES = ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")

# (is_ap, iou threshold or None, area label, maxDets index or None for the literal value:
# 100 for boxes, masks and polygons, 20 for keypoints)
_KEYPOINT_STAT_SPECS = (
    (True, None, "all", None), (True, 0.5, "all", None), (True, 0.75, "all", None),
    (True, None, "medium", None), (True, None, "large", None),
    (False, None, "all", None), (False, 0.5, "all", None), (False, 0.75, "all", None),
    (False, None, "medium", None), (False, None, "large", None),
)
_STAT_SPECS = (
    (True, None, "all", None), (True, 0.5, "all", 2), (True, 0.75, "all", 2),
    (True, None, "small", 2), (True, None, "medium", 2), (True, None, "large", 2),
    (False, None, "all", 0), (False, None, "all", 1), (False, None, "all", 2),
    (False, None, "small", 2), (False, None, "medium", 2), (False, None, "large", 2),
)


#: boundary-iou-api's default boundary width (a fraction of the image diagonal).
_DILATION_RATIO = 0.02

_DETECTION_DEFAULTS = {
    "max_detections": (1, 10, 100),
    "area_ranges": ((0.0, 1e10), (0.0, 1024.0), (1024.0, 9216.0), (9216.0, 1e10)),
    "area_labels": ("all", "small", "medium", "large"),
}
_KEYPOINT_DEFAULTS = {
    "max_detections": (20,),
    "area_ranges": ((0.0, 1e10), (1024.0, 9216.0), (9216.0, 1e10)),
    "area_labels": ("all", "medium", "large"),
}


@dataclass(frozen=True)
class COCOParams:
    """Settings of the COCO protocol (pycocotools ``Params`` names in brackets).

    Parameters
    ----------
    iou_type : {"bbox", "segm", "boundary", "keypoints", "polygon", "rotated"}
        Similarity measure (``iouType``): box IoU, mask IoU (pycocotools' RLE routines),
        boundary IoU (boundary-iou-api: min of mask and boundary IoU, mask IoU for crowd
        objects; docs/protocols/boundary.md), OKS, or exact IoU of polygons / rotated boxes
        (beyond pycocotools; crowd regions score intersection over the detection's area,
        as for boxes).
    iou_thresholds : tuple of float
        (``iouThrs``) default ``np.linspace(.5, .95, 10)``.
    recall_thresholds : tuple of float
        (``recThrs``) default ``np.linspace(0, 1, 101)``.
    max_detections : tuple of int, optional
        (``maxDets``) at least 3 values (any number for keypoints), sorted ascending at
        evaluation. Default, as pycocotools' ``Params(iouType)``: (1, 10, 100), or (20,) for
        keypoints.
    area_ranges : tuple of (float, float), optional
        (``areaRng``) inclusive bounds. Default: all, small, medium, large; for keypoints all,
        medium, large.
    area_labels : tuple of str, optional
        (``areaRngLbl``) one label per range; the summary looks up "all", "small",
        "medium" and "large". Default: the labels of the default ranges of ``iou_type``.
    use_categories : bool
        (``useCats``) False pools all categories of an image (class-agnostic matching).
    image_ids, category_ids : tuple of int or None
        (``imgIds``, ``catIds``) subsets to evaluate; None means all of the ground truth.
    keypoint_sigmas : tuple of float, or dict {category_id: sequence of float}, optional
        (``kpt_oks_sigmas``) per-keypoint OKS sigmas. None: the COCO person sigmas for a
        category with 17 keypoints (any other count must be given). A dict gives each
        category its own.
    dilation_ratio : float
        ``iou_type="boundary"``: boundary width as a fraction of the image diagonal
        (boundary-iou-api's ``dilation_ratio``, default 0.02).

    Raises
    ------
    ValueError
        ``keypoint_sigmas`` with another ``iou_type`` than "keypoints", or a
        ``dilation_ratio`` other than 0.02 with another than "boundary": nothing would read
        them.
    """

    iou_type: str = "bbox"
    iou_thresholds: tuple[float, ...] = tuple(np.linspace(0.5, 0.95, 10).tolist())
    recall_thresholds: tuple[float, ...] = tuple(np.linspace(0.0, 1.0, 101).tolist())
    max_detections: tuple[int, ...] | None = None
    area_ranges: tuple[tuple[float, float], ...] | None = None
    area_labels: tuple[str, ...] | None = None
    use_categories: bool = True
    image_ids: tuple[int, ...] | None = None
    category_ids: tuple[int, ...] | None = None
    keypoint_sigmas: Any = None
    dilation_ratio: float = _DILATION_RATIO

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if self.iou_type != "boundary":     # read as "segm": not a reader's iou_type
            try:
                check_iou_type(self.iou_type)
            except ValueError:
                raise ValueError(f"iou_type must be one of 'bbox', 'segm', 'boundary', "
                                 f"'keypoints', 'polygon', 'rotated'; got {self.iou_type!r}"
                                 ) from None
        ratio = self.dilation_ratio
        if (isinstance(ratio, bool) or not isinstance(ratio, (int, float))
                or not np.isfinite(ratio) or ratio < 0):
            raise OptionError("dilation_ratio", "must be a finite number >= 0", got=ratio)
        set_(self, "dilation_ratio", float(ratio))
        # A setting that differs from its default with a type that never reads it would be
        # ignored, and the numbers returned as if applied (the default cannot be told apart
        # from one given, so it passes).
        check_similarity_settings(
            self.iou_type, keypoint_sigmas=self.keypoint_sigmas,
            dilation_ratio=None if self.dilation_ratio == _DILATION_RATIO else self.dilation_ratio)
        # pycocotools' Params(iouType) defaults: setKpParams for keypoints, else setDetParams.
        defaults = _KEYPOINT_DEFAULTS if self.iou_type == "keypoints" else _DETECTION_DEFAULTS
        for name, value in defaults.items():
            if getattr(self, name) is None:
                set_(self, name, value)
        set_(self, "keypoint_sigmas", _sigmas(self.keypoint_sigmas))
        for name in ("iou_thresholds", "recall_thresholds"):
            values = np.atleast_1d(np.asarray(getattr(self, name), dtype=np.float64))
            if values.ndim != 1 or len(values) == 0 or not np.isfinite(values).all():
                raise OptionError(name, "must be a non-empty list of finite numbers",
                                  got=getattr(self, name))
            set_(self, name, tuple(values.tolist()))
        dets = _integers("max_detections", self.max_detections)
        if self.iou_type == "keypoints":
            if min(dets) < 1:
                raise OptionError("max_detections", "must hold positive integers",
                                  got=self.max_detections)
        elif len(dets) < 3 or min(dets) < 1:
            raise OptionError("max_detections", "must hold at least 3 positive integers (the "
                              "COCO summary reads maxDets[0], [1] and [2])",
                              got=self.max_detections)
        set_(self, "max_detections", dets)
        ranges = area_ranges(self.area_ranges)
        set_(self, "area_ranges", ranges)
        labels = tuple(str(label) for label in self.area_labels)
        if len(labels) != len(ranges):
            raise ValueError(f"area_labels must have one label per area range ({len(ranges)}); "
                             f"got {len(labels)}")
        set_(self, "area_labels", labels)
        if not isinstance(self.use_categories, (bool, np.bool_, int)) or \
                self.use_categories not in (0, 1):
            raise TypeError(f"use_categories must be True or False; got "
                            f"{self.use_categories!r}")
        set_(self, "use_categories", bool(self.use_categories))
        for name in ("image_ids", "category_ids"):
            value = getattr(self, name)
            if value is not None:
                set_(self, name, _integers(name, value))
        _check_summary_lookups(self)


def _sigma_tuple(values: Any, what: str) -> tuple[float, ...]:
    array = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if array.ndim != 1 or len(array) == 0 or not (np.isfinite(array).all() and (array > 0).all()):
        raise OptionError(what, "must be a list of positive numbers", got=values)
    return tuple(array.tolist())


def _sigmas(value: Any) -> Any:
    """Keypoint sigmas as a tuple, or a sorted tuple of (category_id, tuple) pairs."""
    if value is None:
        return None
    if isinstance(value, dict):
        return tuple(sorted((int(k), _sigma_tuple(v, f"keypoint_sigmas[{k}]"))
                            for k, v in value.items()))
    if (isinstance(value, tuple) and value and isinstance(value[0], tuple)):
        return value  # already normalised
    return _sigma_tuple(value, "keypoint_sigmas")


def _integers(name: str, values: Any) -> tuple[int, ...]:
    """``values`` (a list, tuple or array of integers) as a tuple of Python ints; an
    :class:`~deteval.errors.OptionError` naming ``name`` otherwise. One numpy conversion and
    whole-array checks (every COCOParams pays this for its image ids, twice an evaluation);
    Python ints beyond int64 are looked for one by one only when numpy could not hold the
    list as int64.

    >>> _integers("image_ids", [3, 1.0, 2])
    (3, 1, 2)
    >>> _integers("image_ids", [1, 2**63])
    Traceback (most recent call last):
    ...
    deteval.errors.OptionError: image_ids holds 9223372036854775808, too large: values must \
be below 2**63; got [1, 9223372036854775808]
    """
    listed = isinstance(values, (list, tuple))
    try:
        array = np.atleast_1d(np.asarray(values))
    except (ValueError, TypeError, OverflowError):
        if listed:
            _refuse_big_ints(name, values)
        raise
    kind = array.dtype.kind
    if listed and kind != "i":      # int64 holds every Python int it took
        _refuse_big_ints(name, values)
    if array.ndim != 1 or (array.size and (kind not in "iuf" or (
            kind == "f" and not np.array_equal(array, np.round(array))))):
        raise OptionError(name, "must be a list of integers", got=values)
    if kind in "fu" and array.size and (big := np.abs(array).max()) >= 2**63:
        shown = f"{big:g}" if kind == "f" else f"{int(big)}"
        raise OptionError(name, f"holds {shown}, too large: values must be below 2**63",
                          got=values)
    return tuple((array.astype(np.int64) if kind == "f" else array).tolist())


def _refuse_big_ints(name: str, values: Any) -> None:
    """OptionError for the first Python int of ``values`` beyond int64."""
    big = next((v for v in values if isinstance(v, int) and not -2**63 <= v < 2**63), None)
    if big is not None:
        raise OptionError(name, f"holds {big}, too large: values must be below 2**63",
                          got=values)


def _check_summary_lookups(p: COCOParams) -> None:
    """Refuse settings whose summary lookups pycocotools itself cannot combine.

    ``_summarize`` indexes the area and max-detections axes with two lists at once; when a
    label or max-detections value matches several entries, numpy needs the two lists to
    broadcast, and pycocotools fails with an IndexError where they do not.
    """
    for _, _, area, m_index in stat_specs(p):
        n_area = sum(label == area for label in p.area_labels)
        max_dets = _literal_max_dets(p) if m_index is None else p.max_detections[
            min(m_index, len(p.max_detections) - 1)]
        n_dets = sum(m == max_dets for m in p.max_detections)
        if n_area != n_dets and 1 not in (n_area, n_dets):
            raise ValueError(
                f"area_labels {p.area_labels} and max_detections {p.max_detections} cannot be "
                f"summarised: {n_area} ranges are labelled {area!r} and {n_dets} settings are "
                f"{max_dets} (pycocotools fails here with an IndexError); repeat neither")


def stat_specs(p: COCOParams) -> tuple:
    return _KEYPOINT_STAT_SPECS if p.iou_type == "keypoints" else _STAT_SPECS


def _literal_max_dets(p: COCOParams) -> int:
    return 20 if p.iou_type == "keypoints" else 100


#: The pycocotools defaults for bbox evaluation.
COCO = COCOParams()

#: The pycocotools defaults for keypoint evaluation (``setKpParams``): 20 detections per
#: image, area ranges all / medium / large.
COCO_KEYPOINTS = COCOParams(iou_type="keypoints")


@dataclass(frozen=True, eq=False)
class COCOResult(ReadOnlyArrays):
    """Result of :func:`evaluate_coco`.

    Attributes
    ----------
    params : COCOParams
        The settings used, with ``image_ids`` and ``category_ids`` filled in (sorted) and
        ``max_detections`` sorted, as pycocotools normalises them.
    stats : ndarray, shape (12,) or (10,)
        AP, AP50, AP75, APs, APm, APl, AR1, AR10, AR100, ARs, ARm, ARl (-1 if undefined);
        for keypoints the 10 of :data:`KEYPOINT_STAT_NAMES`.
    precision : ndarray, shape (T, R, K, A, M)
    recall : ndarray, shape (T, K, A, M)
    scores : ndarray, shape (T, R, K, A, M)
        Score of the detection at which each recall threshold is reached.
    category_ids : ndarray, shape (K,)
        Category of each K column (-1 when categories are pooled).
    category_names : tuple of str
    n_gt : ndarray, shape (K,)
        Ground-truth objects evaluated per category (crowd regions included).
    n_crowd : ndarray, shape (K,)
    n_detections : ndarray, shape (K,)
        Detections evaluated per category (within the top ``max_detections[-1]`` of each
        image and category).
    matches : MatchTable or None
        Row indices refer to ``dataset.gt`` and ``detections``. None from
        :meth:`deteval.Evaluator.compute`, whose state keeps no match table.
    dataset : Dataset
        The ground truth evaluated (``gt`` is a deprecated alias of it).
    detections : Detections or None
        None from :meth:`deteval.Evaluator.compute` (its state keeps no detections).
    notes : tuple of str
        What a user should know about the input (dropped results, no detections).
    timings : dict
        Seconds spent in each phase ("load", "match", "accumulate", "summarize").
    """

    params: COCOParams
    stats: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray
    category_ids: np.ndarray
    category_names: tuple[str, ...]
    n_gt: np.ndarray
    n_crowd: np.ndarray
    n_detections: np.ndarray
    matches: MatchTable | None
    dataset: Dataset
    detections: Detections | None
    notes: tuple[str, ...] = ()
    timings: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("stats", "precision", "recall", "scores", "category_ids", "n_gt",
                     "n_crowd", "n_detections"):
            getattr(self, name).setflags(write=False)

    #: Deprecated alias of ``dataset`` (one release): ``result.gt.gt`` read as the table.
    gt = DeprecatedAlias("dataset")

    @property
    def summary_lines(self) -> list[str]:
        """The 12 lines pycocotools' ``summarize()`` prints, character for character."""
        p = self.params
        lines = []
        for spec, value in zip(stat_specs(p), self.stats):
            is_ap, iou, area, m_index = spec
            max_dets = _literal_max_dets(p) if m_index is None else p.max_detections[m_index]
            iou_text = (f"{p.iou_thresholds[0]:0.2f}:{p.iou_thresholds[-1]:0.2f}" if iou is None
                        else f"{iou:0.2f}")
            title, kind = ("Average Precision", "(AP)") if is_ap else ("Average Recall", "(AR)")
            lines.append(f" {title:<18} {kind} @[ IoU={iou_text:<9} | area={area:>6s} | "
                         f"maxDets={max_dets:>3d} ] = {value:0.3f}")
        return lines

    def summary(self) -> str:
        """The summary text, identical line for line to pycocotools' ``summarize()``."""
        return "\n".join(self.summary_lines)

    @property
    def stat_names(self) -> tuple[str, ...]:
        """Names of ``stats``: :data:`STAT_NAMES`, or :data:`KEYPOINT_STAT_NAMES`."""
        return KEYPOINT_STAT_NAMES if self.params.iou_type == "keypoints" else STAT_NAMES

    def stat(self, name: str) -> float:
        """One of the stats by name (``"AP"``, ``"AP50"``, ... see ``stat_names``)."""
        return stat_by_name(self.stat_names, self.stats, name)

    def per_class(self) -> list[dict[str, Any]]:
        """Per-category table: AP at the COCO settings, AR, and counts.

        Each row has ``category_id``, ``name``, ``AP``, ``AP50``, ``AP75``, ``APs``, ``APm``,
        ``APl`` (IoU .50:.95 unless named, maxDets 100 or the largest setting), ``AR100``
        (recall at the same maxDets), ``n_gt``, ``n_crowd`` and ``n_detections``. A value is
        -1 where it is undefined (no ground truth of that category in that area range), as
        in pycocotools. Keypoint results name their columns as their stats do
        (:data:`KEYPOINT_STAT_NAMES`): ``AP``, ``AP50``, ``AP75``, ``APm``, ``APl`` and ``AR``
        (no small range; maxDets 20 or the largest setting).
        """
        p = self.params
        keypoints = p.iou_type == "keypoints"
        literal = _literal_max_dets(p)
        m = (p.max_detections.index(literal) if literal in p.max_detections
             else len(p.max_detections) - 1)
        columns = tuple(c for c in AREA_COLUMNS if not (keypoints and c[2] == "small"))
        return per_class_rows(
            self.category_ids, {"name": self.category_names}, columns,
            lambda iou, area, k: summarize_value(self.precision[:, :, k:k + 1], p, iou, area, m),
            ("AR" if keypoints else "AR100",
             lambda k: summarize_value(self.recall[:, k:k + 1], p, None, "all", m)),
            {"n_gt": self.n_gt, "n_crowd": self.n_crowd, "n_detections": self.n_detections})

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
        """JSON-ready summary: stats (named and in order), summary lines, per-class table."""
        return summary_dict(self)


def summarize_value(values: np.ndarray, p: COCOParams, iou: float | None, area: str,
                    m_index: int | None) -> float:
    """pycocotools' ``_summarize`` on precision (5-D) or recall (4-D) arrays."""
    area_index = [i for i, label in enumerate(p.area_labels) if label == area]
    max_dets = _literal_max_dets(p) if m_index is None else p.max_detections[m_index]
    m_indices = [i for i, m in enumerate(p.max_detections) if m == max_dets]
    if iou is not None:
        values = values[np.where(iou == np.asarray(p.iou_thresholds))[0]]
    if values.ndim == 5:
        values = values[:, :, :, area_index, m_indices]
    else:
        values = values[:, :, area_index, m_indices]
    return mean_valid(values)


_COLUMN_OF = {"segm": "masks", "boundary": "masks", "keypoints": "keypoints", "polygon": "polygons",
              "rotated": "polygons"}


def load_coco_pair(gt: Any, dt: Any, iou_type: str, invalid: str, match_by: str = "auto"
                   ) -> tuple[Dataset, Detections, tuple[str, ...]]:
    """The ground truth and detections of a COCO-style evaluation, read and resolved once,
    with the notes of reading them (used by the CLI's sharded runs and CrowdPose too)."""
    # One input layer for every protocol and diagnostic (docs/resolution.md).
    # Boundary IoU reads the masks as "segm" does; the boundaries are derived in matching.
    read_as = "segm" if iou_type == "boundary" else iou_type
    pair = load_pair(gt, dt, iou_type=read_as, invalid=invalid, match_by=match_by)
    dataset, detections = pair.dataset, pair.detections
    column = _COLUMN_OF.get(iou_type)
    if column is not None:
        for what, table_has, table in (("ground truth", "has", dataset.gt),
                                       ("detections", "have", detections)):
            if not has_column(table, column) and len(table):
                raise ValueError(
                    f"iou_type {iou_type!r} needs {column} but the {what} {table_has} none; "
                    f"read the files with iou_type={read_as!r} (or pass paths or dicts)")
        if iou_type == "keypoints" and dataset.gt.num_keypoints is None and len(dataset.gt):
            raise ValueError("iou_type 'keypoints' needs the ground truth's num_keypoints")
    _check_inputs(dataset, detections)
    return dataset, detections, pair.notes


def _check_inputs(dataset: Dataset, detections: Detections) -> None:
    gt = dataset.gt
    bad = np.flatnonzero(gt.ids <= 0)
    if len(bad):
        raise FormatError(f"ground-truth ids must be > 0 (pycocotools treats id 0 as "
                          f"'unmatched'); got {int(gt.ids[bad[0]])}", source=dataset.source,
                          record=f"object {bad[0]}")
    if len(sorted_unique(gt.ids)) != len(gt.ids):
        raise FormatError("ground-truth ids must be unique", source=dataset.source)
    # Finite boxes and scores are guaranteed by the Detections constructor; the indices
    # are checked by load_pair.


def evaluate_coco(gt: Any, dt: Any, *, iou_type: str | None = None,
                  params: COCOParams | None = None, invalid: str = "raise",
                  match_by: str = "auto", threads: int | None = None,
                  **options: Any) -> COCOResult:
    """Evaluate detections with the COCO protocol, equal to pycocotools' ``COCOeval``.

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
        Ground truth: a :class:`~deteval.data.Dataset`, a COCO instances file or its dict.
    dt : Detections, str, PathLike, list, dict or ndarray
        Detections, or anything :func:`~deteval.io.coco.read_coco_results` reads. An empty
        list is allowed: every category with ground truth then has AP 0 (pycocotools raises
        IndexError), and ``notes`` says so.
    iou_type : {"bbox", "segm", "boundary", "keypoints", "polygon", "rotated"}, optional
        What to compare (default ``params.iou_type``, "bbox"). With "keypoints" and no
        ``params``, the base settings are :data:`COCO_KEYPOINTS`. Files are read with the
        shapes this needs; a :class:`Dataset` / :class:`Detections` must carry them.
    params : COCOParams, optional
        Base settings (default :data:`COCO`); the keyword options below replace its fields.
    invalid : {"raise", "repair"}
        For polygons read here (``iou_type="polygon"``): refuse a self-intersecting polygon,
        or repair it with ``shapely.make_valid`` (see
        :func:`deteval.geometry.polygons_from_coords`).
    match_by : {"auto", "id", "name"}
        How results that carry their own ``images`` and ``categories`` find the ground
        truth's: the rule of ``docs/resolution.md`` (a plain results list: by id, as
        pycocotools).
    threads : int, optional
        Threads for reading the files, matching and accumulation (default None: every core
        of the machine; 1 starts no thread); the numbers are identical for every value
        (see docs/threads.md).
    **options
        Any field of :class:`COCOParams`: ``iou_thresholds``, ``recall_thresholds``,
        ``max_detections``, ``area_ranges``, ``area_labels``, ``use_categories``,
        ``image_ids``, ``category_ids``, ``keypoint_sigmas`` (``iou_type="keypoints"``
        only), ``dilation_ratio`` (``iou_type="boundary"`` only; either with another type
        is a ValueError: it would be ignored).

    Returns
    -------
    COCOResult

    Raises
    ------
    FormatError
        Unreadable or invalid input (the message names file and record).
    ValueError, TypeError
        Invalid settings.

    Notes
    -----
    Results whose category is not a ground-truth category are dropped, as pycocotools does;
    ``notes`` counts them. The inputs are never modified.
    """
    started = time.perf_counter()
    threads = resolve_threads(threads)
    if params is None:
        base = COCO_KEYPOINTS if iou_type == "keypoints" else COCO
    else:
        base = params
    if iou_type is not None:
        options["iou_type"] = iou_type
    p = _with_options(base, options, "evaluate_coco")
    if invalid not in ("raise", "repair"):
        raise ValueError(f"invalid must be 'raise' or 'repair'; got {invalid!r}")
    with plain_pages():     # (docs/startup.md §8.1)
        with threads_limited(threads):     # (the readers' threads too)
            dataset, detections, load_notes = load_coco_pair(gt, dt, p.iou_type, invalid,
                                                             match_by)
        loaded = time.perf_counter()
        ctx = prepare(dataset, p)
        table, state, dt_category = match_stage(ctx, detections, threads=threads)
        n_unknown = int(np.count_nonzero((derived_or_read(detections, "category_index") < 0)
                                         & (dt_category < 0)))
        del dt_category     # (not kept alive through accumulation, the peak of the memory)
        return finish(ctx, state, n_detections=len(detections), n_unknown=n_unknown,
                      matches=table, detections=detections,
                      times=(started, loaded, time.perf_counter()), load_notes=load_notes,
                      threads=threads)


def _with_options(base: COCOParams, options: dict, caller: str) -> COCOParams:
    """``base`` with the keyword options replacing its fields (TypeError for unknown ones;
    ValueError for a similarity setting given with an IoU type that does not read it)."""
    unknown = set(options) - {f.name for f in dataclasses.fields(COCOParams)}
    if unknown:
        raise TypeError(f"{caller}() got unknown option(s): {', '.join(sorted(unknown))}")
    p = dataclasses.replace(base, **options) if options else base
    check_similarity_settings(p.iou_type, keypoint_sigmas=options.get("keypoint_sigmas"),
                              dilation_ratio=options.get("dilation_ratio"))
    return p


def finish(ctx: COCOContext, state: COCOState, *, n_detections: int, n_unknown: int,
           matches: MatchTable | None, detections: Detections | None,
           times: tuple[float, float, float], load_notes: tuple = (),
           threads: int | None = None) -> COCOResult:
    """Accumulate ``state`` and build the result (the last stage of every COCO evaluation).

    ``n_detections`` and ``n_unknown`` count the input's detections and those dropped for an
    unknown category (for the notes); ``times`` are the start, loaded and matched instants;
    ``load_notes`` are the input layer's notes (how the pair was resolved), listed first;
    ``threads`` goes to :func:`accumulate_stage`.
    """
    started, loaded, matched = times
    p, dataset, n_k = ctx.params, ctx.dataset, ctx.n_k
    image_ids, category_ids = ctx.image_ids, ctx.category_ids
    precision, recall, scores = accumulate_stage(ctx, state, threads=threads)
    accumulated = time.perf_counter()

    stats = np.array([summarize_value(precision if is_ap else recall, p, iou, area, m)
                      for is_ap, iou, area, m in stat_specs(p)])
    if p.use_categories:
        names_by_row = dict(zip(dataset.categories.ids.tolist(), dataset.categories.names))
        names = tuple(names_by_row.get(c, str(c)) for c in category_ids.tolist())
        k_ids = category_ids.copy()
    else:
        names, k_ids = ("all categories",), np.array([-1])
    gt_k = ctx.gt_k
    n_gt = np.bincount(gt_k[gt_k >= 0], minlength=n_k)
    n_crowd = np.bincount(gt_k[(gt_k >= 0) & dataset.gt.iscrowd], minlength=n_k)
    n_det = np.bincount(np.asarray(state.category, dtype=np.int64), minlength=n_k)
    notes = list(load_notes)
    if n_detections == 0:
        notes.append("no detections: the results are empty, so every category with ground "
                     "truth has AP 0")
    if n_unknown:
        notes.append(f"{n_unknown} detection(s) dropped: their category_id is not a "
                     "ground-truth category (pycocotools drops them too)")
    if not (index_in(image_ids, dataset.images.ids) >= 0).any():
        notes.append("none of the requested image_ids is an image of the ground truth")
    literal = _literal_max_dets(p)
    if literal not in p.max_detections:
        stat_names = KEYPOINT_STAT_NAMES if p.iou_type == "keypoints" else STAT_NAMES
        fixed = [n for n, spec in zip(stat_names, stat_specs(p)) if spec[3] is None]
        notes.append(f"{', '.join(fixed)} {'is' if len(fixed) == 1 else 'are'} -1: pycocotools' "
                     f"summary reads {'it' if len(fixed) == 1 else 'them'} at maxDets="
                     f"{literal}, which is not among the max-detections settings "
                     f"({' '.join(map(str, p.max_detections))}); add {literal} to get "
                     f"{'it' if len(fixed) == 1 else 'them'}")
    if (p.iou_type == "keypoints" and not p.use_categories and len(dataset.gt)
            and n_detections):
        notes.append("keypoints with use_categories=False match nothing: pycocotools looks the "
                     "objects' keypoints up under category -1 and finds none, so AP is 0")
    if not (index_in(category_ids, dataset.categories.ids) >= 0).any():
        notes.append("none of the requested category_ids is a category of the ground truth")
    finished = time.perf_counter()
    return COCOResult(
        params=p, stats=stats, precision=precision, recall=recall, scores=scores,
        category_ids=k_ids, category_names=names, n_gt=n_gt, n_crowd=n_crowd,
        n_detections=n_det, matches=matches, dataset=dataset, detections=detections,
        notes=tuple(notes),
        timings={"load": loaded - started, "match": matched - loaded,
                 "accumulate": accumulated - matched, "summarize": finished - accumulated,
                 "total": finished - started})
