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

How the numbers are reproduced bit for bit (see ``semantics.md`` §1-§8): thresholds from
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

from .._inputs import load_pair
from .._sorting import lexorder
from ..data import Dataset, Detections, index_in
from ..errors import FormatError, OptionError
from ..io._shapes import check_iou_type
from ..iou import coco_pair_iou
from ..matching import MatchTable, match_detections

__all__ = ["COCO", "COCO_KEYPOINTS", "COCOParams", "COCOResult", "evaluate_coco", "STAT_NAMES",
           "KEYPOINT_STAT_NAMES"]

_EPS = np.spacing(1)

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
    iou_type : {"bbox", "segm", "keypoints", "polygon", "rotated"}
        Similarity measure (``iouType``): box IoU, mask IoU (pycocotools' RLE routines),
        OKS, or exact IoU of polygons / rotated boxes (beyond pycocotools; crowd regions
        score intersection over the detection's area, as for boxes).
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

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        check_iou_type(self.iou_type)
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
        ranges = np.asarray(self.area_ranges, dtype=np.float64)
        if ranges.ndim != 2 or ranges.shape[1] != 2 or len(ranges) == 0:
            raise ValueError(f"area_ranges must be a list of (lo, hi) pairs; "
                             f"got {self.area_ranges!r}")
        set_(self, "area_ranges", tuple((float(lo), float(hi)) for lo, hi in ranges))
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
    listed = list(values) if isinstance(values, (list, tuple)) else None
    if listed is not None and any(isinstance(v, int) and not -2**63 <= v < 2**63
                                  for v in listed):
        big = next(v for v in listed if isinstance(v, int) and not -2**63 <= v < 2**63)
        raise OptionError(name, f"holds {big}, too large: values must be below 2**63",
                          got=values)
    array = np.atleast_1d(np.asarray(values))
    if array.ndim != 1 or (array.size and (array.dtype.kind not in "iuf" or not np.array_equal(
            array, np.round(array)))):
        raise OptionError(name, "must be a list of integers", got=values)
    if array.dtype.kind == "f" and array.size and np.abs(array).max() >= 2**63:
        raise OptionError(name, f"holds {np.abs(array).max():g}, too large: values must be "
                          "below 2**63", got=values)
    return tuple(int(v) for v in array)


def _check_summary_lookups(p: COCOParams) -> None:
    """Refuse settings whose summary lookups pycocotools itself cannot combine.

    ``_summarize`` indexes the area and max-detections axes with two lists at once; when a
    label or max-detections value matches several entries, numpy needs the two lists to
    broadcast, and pycocotools fails with an IndexError where they do not.
    """
    for _, _, area, m_index in _stat_specs(p):
        n_area = sum(label == area for label in p.area_labels)
        max_dets = _literal_max_dets(p) if m_index is None else p.max_detections[
            min(m_index, len(p.max_detections) - 1)]
        n_dets = sum(m == max_dets for m in p.max_detections)
        if n_area != n_dets and 1 not in (n_area, n_dets):
            raise ValueError(
                f"area_labels {p.area_labels} and max_detections {p.max_detections} cannot be "
                f"summarised: {n_area} ranges are labelled {area!r} and {n_dets} settings are "
                f"{max_dets} (pycocotools fails here with an IndexError); repeat neither")


def _stat_specs(p: COCOParams) -> tuple:
    return _KEYPOINT_STAT_SPECS if p.iou_type == "keypoints" else _STAT_SPECS


def _literal_max_dets(p: COCOParams) -> int:
    return 20 if p.iou_type == "keypoints" else 100


#: The pycocotools defaults for bbox evaluation.
COCO = COCOParams()

#: The pycocotools defaults for keypoint evaluation (``setKpParams``): 20 detections per
#: image, area ranges all / medium / large.
COCO_KEYPOINTS = COCOParams(iou_type="keypoints")


@dataclass(frozen=True, eq=False)
class COCOResult:
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
    matches : MatchTable
        Row indices refer to ``gt.gt`` and ``detections``.
    gt : Dataset
    detections : Detections
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
    matches: MatchTable
    gt: Dataset
    detections: Detections
    notes: tuple[str, ...] = ()
    timings: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("stats", "precision", "recall", "scores", "category_ids", "n_gt",
                     "n_crowd", "n_detections"):
            getattr(self, name).setflags(write=False)

    @property
    def summary_lines(self) -> list[str]:
        """The 12 lines pycocotools' ``summarize()`` prints, character for character."""
        p = self.params
        lines = []
        for spec, value in zip(_stat_specs(p), self.stats):
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
        names = self.stat_names
        if name not in names:
            raise KeyError(f"unknown stat {name!r}; choose one of {', '.join(names)}")
        return float(self.stats[names.index(name)])

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
        columns = (("AP", None, "all"), ("AP50", 0.5, "all"), ("AP75", 0.75, "all"),
                   *(() if keypoints else (("APs", None, "small"),)),
                   ("APm", None, "medium"), ("APl", None, "large"))
        rows = []
        for k, (cid, name) in enumerate(zip(self.category_ids.tolist(), self.category_names)):
            row: dict[str, Any] = {"category_id": cid, "name": name}
            for label, iou, area in columns:
                row[label] = _summarize_value(self.precision[:, :, k:k + 1], p, iou, area, m)
            row["AR" if keypoints else "AR100"] = _summarize_value(
                self.recall[:, k:k + 1], p, None, "all", m)
            row["n_gt"] = int(self.n_gt[k])
            row["n_crowd"] = int(self.n_crowd[k])
            row["n_detections"] = int(self.n_detections[k])
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: stats (named and in order), summary lines, per-class table."""
        return {
            "stats": [float(s) for s in self.stats],
            "stats_named": {n: float(s) for n, s in zip(self.stat_names, self.stats)},
            "summary": self.summary_lines,
            "per_class": self.per_class(),
            "notes": list(self.notes),
            "params": {k: (list(v) if isinstance(v, tuple) else v)
                       for k, v in dataclasses.asdict(self.params).items()},
        }


def _summarize_value(values: np.ndarray, p: COCOParams, iou: float | None, area: str,
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
    valid = values[values > -1]
    return -1.0 if len(valid) == 0 else float(np.mean(valid))


_COLUMN_OF = {"segm": "masks", "keypoints": "keypoints", "polygon": "polygons",
              "rotated": "polygons"}


def _load(gt: Any, dt: Any, iou_type: str, invalid: str, match_by: str = "auto"
          ) -> tuple[Dataset, Detections, tuple[str, ...]]:
    # One input layer for every protocol and diagnostic (docs/resolution.md).
    pair = load_pair(gt, dt, iou_type=iou_type, invalid=invalid, match_by=match_by)
    dataset, detections = pair.dataset, pair.detections
    column = _COLUMN_OF.get(iou_type)
    if column is not None:
        for what, table_has, table in (("ground truth", "has", dataset.gt),
                                       ("detections", "have", detections)):
            if getattr(table, column) is None and len(table):
                raise ValueError(
                    f"iou_type {iou_type!r} needs {column} but the {what} {table_has} none; "
                    f"read the files with iou_type={iou_type!r} (or pass paths or dicts)")
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
    if len(np.unique(gt.ids)) != len(gt.ids):
        raise FormatError("ground-truth ids must be unique", source=dataset.source)
    # Finite boxes and scores are guaranteed by the Detections constructor; the indices
    # are checked by load_pair.


def evaluate_coco(gt: Any, dt: Any, *, iou_type: str | None = None,
                  params: COCOParams | None = None, invalid: str = "raise",
                  match_by: str = "auto", **options: Any) -> COCOResult:
    """Evaluate detections with the COCO protocol, equal to pycocotools' ``COCOeval``.

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
        Ground truth: a :class:`~deteval.data.Dataset`, a COCO instances file or its dict.
    dt : Detections, str, PathLike, list, dict or ndarray
        Detections, or anything :func:`~deteval.io.coco.read_coco_results` reads. An empty
        list is allowed: every category with ground truth then has AP 0 (pycocotools raises
        IndexError), and ``notes`` says so.
    iou_type : {"bbox", "segm", "keypoints", "polygon", "rotated"}, optional
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
    **options
        Any field of :class:`COCOParams`: ``iou_thresholds``, ``recall_thresholds``,
        ``max_detections``, ``area_ranges``, ``area_labels``, ``use_categories``,
        ``image_ids``, ``category_ids``.

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
    if params is None:
        base = COCO_KEYPOINTS if iou_type == "keypoints" else COCO
    else:
        base = params
    if iou_type is not None:
        options["iou_type"] = iou_type
    unknown = set(options) - {f.name for f in dataclasses.fields(COCOParams)}
    if unknown:
        raise TypeError(f"evaluate_coco() got unknown option(s): {', '.join(sorted(unknown))}")
    p = dataclasses.replace(base, **options) if options else base
    if invalid not in ("raise", "repair"):
        raise ValueError(f"invalid must be 'raise' or 'repair'; got {invalid!r}")
    dataset, detections, load_notes = _load(gt, dt, p.iou_type, invalid, match_by)
    loaded = time.perf_counter()

    # Normalise the settings as COCOeval.evaluate() does.
    image_ids = np.unique(np.asarray(p.image_ids if p.image_ids is not None
                                     else dataset.images.ids, dtype=np.int64))
    if p.use_categories:
        category_ids = np.unique(np.asarray(p.category_ids if p.category_ids is not None
                                            else dataset.categories.ids, dtype=np.int64))
    else:
        # useCats=0 keeps catIds in the given order (the pool's concatenation order).
        category_ids = np.asarray(p.category_ids if p.category_ids is not None
                                  else np.sort(dataset.categories.ids), dtype=np.int64)
    p = dataclasses.replace(p, image_ids=tuple(image_ids.tolist()),
                            category_ids=tuple(category_ids.tolist()),
                            max_detections=tuple(sorted(p.max_detections)))

    if not p.use_categories and len(np.unique(category_ids)) != len(category_ids):
        raise ValueError(f"category_ids must not repeat a category; got {p.category_ids}")

    gt_objects = dataset.gt
    n_k = len(category_ids) if p.use_categories else 1
    image_pos_of_row = index_in(dataset.images.ids, image_ids)
    category_pos_of_row = index_in(dataset.categories.ids, category_ids)
    dt_cat = np.where(detections.category_index >= 0,
                      category_pos_of_row[np.maximum(detections.category_index, 0)], -1)
    if detections.category_ids is not None:
        # Results of a category unknown to the ground truth still join a pooled group when
        # category_ids names them, as pycocotools selects results by catIds.
        unknown = detections.category_index < 0
        dt_cat[unknown] = index_in(detections.category_ids[unknown], category_ids)
    gt_cat = category_pos_of_row[gt_objects.category_index]

    def groups(image_index, cat):
        img = image_pos_of_row[image_index]
        ok = (img >= 0) & (cat >= 0)
        k = cat if p.use_categories else np.zeros_like(cat)
        return np.where(ok, img * n_k + k, -1), np.where(ok, k, -1), np.where(ok, img, -1)

    gt_group, gt_k, _ = groups(gt_objects.image_index, gt_cat)
    dt_group, dt_k, dt_img = groups(detections.image_index, dt_cat)
    n_dt = len(detections)
    # Inside a pooled (class-agnostic) group equal scores are ordered by category first.
    dt_tie = None if p.use_categories else np.maximum(dt_cat, 0)
    # The matcher breaks IoU ties by GT row order inside a group. A pooled (class-agnostic)
    # group lists its objects category by category, then in file order: present them so.
    gt_perm = (np.arange(len(gt_objects)) if p.use_categories
               else np.lexsort((np.arange(len(gt_objects)), gt_cat)))
    dt_xywh = detections.as_xywh()
    gt_xywh = gt_objects.as_xywh()[gt_perm]
    gt_crowd = gt_objects.iscrowd[gt_perm]

    similarity = _similarity(p, dataset, detections, gt_perm, dt_xywh, gt_xywh, gt_crowd)
    # The ignore key is overwritten by iscrowd (pycocotools quirk, semantics.md §4); the
    # keypoint protocol also ignores objects without keypoints.
    gt_ignore = gt_crowd
    if p.iou_type == "keypoints":
        gt_ignore = gt_crowd | (gt_objects.num_keypoints[gt_perm] == 0)

    table = match_detections(
        dt_group=dt_group, dt_scores=detections.scores, dt_tie_key=dt_tie,
        dt_area=detections.area, gt_group=gt_group[gt_perm], gt_crowd=gt_crowd,
        gt_ignore=gt_ignore, gt_area=gt_objects.area[gt_perm],
        similarity=similarity, iou_thresholds=np.asarray(p.iou_thresholds),
        area_ranges=np.asarray(p.area_ranges), max_detections=p.max_detections[-1])
    if not p.use_categories:
        table = _unpermute_gt(table, gt_perm)
    matched = time.perf_counter()

    precision, recall, scores = _accumulate(
        table, p, n_k=n_k, dt_k=dt_k, dt_img=dt_img, scores_in=detections.scores,
        gt_k=gt_k)
    accumulated = time.perf_counter()

    stats = np.array([_summarize_value(precision if is_ap else recall, p, iou, area, m)
                      for is_ap, iou, area, m in _stat_specs(p)])
    if p.use_categories:
        names_by_row = dict(zip(dataset.categories.ids.tolist(), dataset.categories.names))
        names = tuple(names_by_row.get(c, str(c)) for c in category_ids.tolist())
        k_ids = category_ids.copy()
    else:
        names, k_ids = ("all categories",), np.array([-1])
    n_gt = np.bincount(gt_k[gt_k >= 0], minlength=n_k)
    n_crowd = np.bincount(gt_k[(gt_k >= 0) & gt_objects.iscrowd], minlength=n_k)
    n_det = np.bincount(dt_k[table.dt_kept], minlength=n_k)
    notes = list(load_notes)
    if n_dt == 0:
        notes.append("no detections: the results are empty, so every category with ground "
                     "truth has AP 0")
    n_unknown = int(np.count_nonzero((detections.category_index < 0) & (dt_cat < 0)))
    if n_unknown:
        notes.append(f"{n_unknown} detection(s) dropped: their category_id is not a "
                     "ground-truth category (pycocotools drops them too)")
    if not np.isin(image_ids, dataset.images.ids).any():
        notes.append("none of the requested image_ids is an image of the ground truth")
    literal = _literal_max_dets(p)
    if literal not in p.max_detections:
        names = KEYPOINT_STAT_NAMES if p.iou_type == "keypoints" else STAT_NAMES
        fixed = [n for n, spec in zip(names, _stat_specs(p)) if spec[3] is None]
        notes.append(f"{', '.join(fixed)} {'is' if len(fixed) == 1 else 'are'} -1: pycocotools' "
                     f"summary reads {'it' if len(fixed) == 1 else 'them'} at maxDets="
                     f"{literal}, which is not among the max-detections settings "
                     f"({' '.join(map(str, p.max_detections))}); add {literal} to get "
                     f"{'it' if len(fixed) == 1 else 'them'}")
    if p.iou_type == "keypoints" and not p.use_categories and len(gt_objects) and n_dt:
        notes.append("keypoints with use_categories=False match nothing: pycocotools looks the "
                     "objects' keypoints up under category -1 and finds none, so AP is 0")
    if not np.isin(category_ids, dataset.categories.ids).any():
        notes.append("none of the requested category_ids is a category of the ground truth")
    finished = time.perf_counter()
    return COCOResult(
        params=p, stats=stats, precision=precision, recall=recall, scores=scores,
        category_ids=k_ids, category_names=names, n_gt=n_gt, n_crowd=n_crowd,
        n_detections=n_det, matches=table, gt=dataset, detections=detections,
        notes=tuple(notes),
        timings={"load": loaded - started, "match": matched - loaded,
                 "accumulate": accumulated - matched, "summarize": finished - accumulated,
                 "total": finished - started})


def _similarity(p: COCOParams, dataset: Dataset, detections: Detections, gt_perm: np.ndarray,
                dt_xywh: np.ndarray, gt_xywh: np.ndarray, gt_crowd: np.ndarray):
    """The pair similarity of ``p.iou_type``, on GT rows in matcher (permuted) order."""
    gt = dataset.gt
    if p.iou_type == "bbox":
        def similarity(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
            return coco_pair_iou(dt_xywh[d_rows], gt_xywh[g_rows], gt_crowd[g_rows])
    elif p.iou_type == "segm":
        similarity = _mask_similarity(p, dataset, detections, gt_perm, gt_crowd)
    elif p.iou_type == "keypoints":
        similarity = _oks_similarity(p, dataset, detections, gt_perm, gt_xywh)
    else:
        from ..geometry import PairIoU

        gt_polygons = gt.polygons[gt_perm] if len(gt) else gt.polygons
        polygon_iou = PairIoU(detections.polygons, gt_polygons)   # each polygon prepared once

        def similarity(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
            return polygon_iou(d_rows, g_rows, gt_crowd[g_rows])
    return similarity


def _mask_similarity(p: COCOParams, dataset: Dataset, detections: Detections,
                     gt_perm: np.ndarray, gt_crowd: np.ndarray):
    """Mask IoU per pair with pycocotools' routine, skipping pairs that cannot match.

    The COCO matcher only compares IoUs with the thresholds: a pair whose IoU cannot reach
    the lowest one never matches, whatever its exact value. When the detections carry
    their masks' pixel counts (``mask_area``, set by the readers), such pairs are found
    from areas (and boxes, ``mask_xywh``) alone (:func:`~deteval.masks.mask_iou_bound`),
    get 0, and never reach the RLE routine.
    """
    from ..masks import mask_bound_area, mask_iou_bound, mask_xywh, pair_mask_iou

    gt = dataset.gt
    gt_masks = gt.masks[gt_perm] if len(gt) else gt.masks
    dt_masks = detections.masks
    gt_category = gt.category_index[gt_perm]
    n_categories = max(len(dataset.categories), 1)
    floor = min((min(t, 1 - 1e-10) for t in p.iou_thresholds), default=0.0)
    dt_area, dt_xywh = detections.mask_area, detections.mask_xywh
    bounded = floor > 0 and dt_area is not None and len(gt_masks) > 0
    if bounded:
        gt_area = (gt.mask_area[gt_perm] if gt.mask_area is not None
                   else mask_bound_area(gt_masks))
        gt_xywh = None
        if dt_xywh is not None:
            gt_xywh = gt.mask_xywh[gt_perm] if gt.mask_xywh is not None else mask_xywh(gt_masks)

    def similarity(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
        # One C call per (image, category): pairs never cross categories then.
        group = (detections.image_index[d_rows] * n_categories + gt_category[g_rows]
                 if p.use_categories else None)
        if not bounded:
            return pair_mask_iou(dt_masks, gt_masks, d_rows, g_rows, gt_crowd,
                                 image_of_dt=detections.image_index, group=group)
        bound = mask_iou_bound(dt_area[d_rows], gt_area[g_rows], gt_crowd[g_rows],
                               None if gt_xywh is None else dt_xywh[d_rows],
                               None if gt_xywh is None else gt_xywh[g_rows])
        values = np.zeros(len(d_rows), dtype=np.float64)
        kept = np.flatnonzero(bound >= floor)
        values[kept] = pair_mask_iou(dt_masks, gt_masks, d_rows[kept], g_rows[kept], gt_crowd,
                                     image_of_dt=detections.image_index,
                                     group=None if group is None else group[kept])
        return values

    return similarity


def _oks_similarity(p: COCOParams, dataset: Dataset, detections: Detections,
                    gt_perm: np.ndarray, gt_xywh: np.ndarray):
    """OKS per pair, with each category's sigmas (semantics.md §5.4)."""
    from ..keypoints import COCO_PERSON_SIGMAS, pair_oks

    gt = dataset.gt
    if not p.use_categories:
        # pycocotools' computeOks looks the objects up under category -1 when categories
        # are pooled, finds none, and so matches nothing (semantics.md §14).
        return lambda d_rows, g_rows: np.full(len(d_rows), -1.0)
    gt_keypoints = gt.keypoints[gt_perm] if len(gt) else gt.keypoints
    gt_category = gt.category_index[gt_perm]
    gt_area = gt.area[gt_perm]
    per_category = dict(p.keypoint_sigmas) if isinstance(p.keypoint_sigmas, tuple) and \
        p.keypoint_sigmas and isinstance(p.keypoint_sigmas[0], tuple) else None
    n_kp = (~np.isnan(gt_keypoints[:, :, 0])).sum(axis=1) if len(gt) else np.zeros(0, int)
    sigmas_of: dict[int, np.ndarray] = {}

    def sigmas(category: int, k: int) -> np.ndarray:
        if category not in sigmas_of:
            category_id = int(dataset.categories.ids[category])
            if per_category is not None:
                if category_id not in per_category:
                    raise ValueError(f"keypoint_sigmas gives no sigmas for category "
                                     f"{category_id} ({dataset.categories.names[category]})")
                values = np.array(per_category[category_id])
            elif p.keypoint_sigmas is not None:
                values = np.array(p.keypoint_sigmas)
            elif k == len(COCO_PERSON_SIGMAS):
                values = COCO_PERSON_SIGMAS
            else:
                raise ValueError(
                    f"category {category_id} ({dataset.categories.names[category]}) has {k} "
                    "keypoints; the default sigmas are COCO's 17 person sigmas: give "
                    "keypoint_sigmas (a list of K sigmas, or {category_id: sigmas})")
            if len(values) != k:
                raise ValueError(f"category {category_id} has {k} keypoints but "
                                 f"{len(values)} sigmas were given")
            sigmas_of[category] = values
        return sigmas_of[category]

    def similarity(d_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
        out = np.empty(len(d_rows), dtype=np.float64)
        category = gt_category[g_rows]
        for c in np.unique(category):
            sel = np.flatnonzero(category == c)
            k = int(n_kp[g_rows[sel[0]]])
            out[sel] = pair_oks(detections.keypoints, gt_keypoints, gt_xywh, gt_area,
                                d_rows[sel], g_rows[sel], sigmas=sigmas(int(c), k))
        return out

    return similarity


def _unpermute_gt(table: MatchTable, perm: np.ndarray) -> MatchTable:
    """Express a table computed on permuted GT rows in the original row numbering."""
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(len(perm))
    gt_ignore = np.empty_like(table.gt_ignore)
    gt_ignore[:, perm] = table.gt_ignore
    return dataclasses.replace(
        table,
        gt_evaluated=table.gt_evaluated[inverse], gt_crowd=table.gt_crowd[inverse],
        gt_ignore=gt_ignore, match_gt=perm[table.match_gt])


def _needed_true_positives(n_positive: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Smallest count ``n`` with ``n / n_positive >= threshold`` in float64, per pair.

    This is where ``searchsorted(tp_cum / npig, recThrs, side='left')`` lands, found with the
    same float division so that recall points on a boundary (semantics.md example D) agree.
    """
    npig = n_positive[..., None].astype(np.int64)
    thr = thresholds[None, :]
    # Clipping keeps the guess in int64 range; thresholds beyond [0, 1] are never reached
    # (or always reached), which the exact test below still decides.
    guess = np.maximum(np.ceil(np.clip(thr, -1.0, 2.0) * npig).astype(np.int64), 0)
    need = guess + 1
    for candidate in (guess, guess - 1):
        ok = (candidate >= 0) & (candidate / np.maximum(npig, 1) >= thr)
        need = np.where(ok, candidate, need)
    return need


def _accumulate(table: MatchTable, p: COCOParams, *, n_k: int, dt_k: np.ndarray,
                dt_img: np.ndarray, scores_in: np.ndarray, gt_k: np.ndarray):
    """pycocotools' ``accumulate`` from the match table (semantics.md §7)."""
    thresholds_r = np.asarray(p.recall_thresholds)
    n_t, n_r, n_a, n_m = (len(p.iou_thresholds), len(thresholds_r), len(p.area_ranges),
                          len(p.max_detections))
    precision = -np.ones((n_t, n_r, n_k, n_a, n_m))
    recall = -np.ones((n_t, n_k, n_a, n_m))
    scores = -np.ones((n_t, n_r, n_k, n_a, n_m))

    # Positives: evaluated, non-ignored GT per (category, area range).
    gt_ok = gt_k >= 0
    npig = np.stack([np.bincount(gt_k[gt_ok & ~table.gt_ignore[a]], minlength=n_k)
                     for a in range(n_a)], axis=1) if n_k else np.zeros((0, n_a), np.int64)
    need = _needed_true_positives(npig, thresholds_r)          # (K, A, R)

    kept = np.flatnonzero(table.dt_kept)
    rank = table.dt_rank
    # Accumulation order: category, descending score, image, rank inside the image (unique).
    order = kept[lexorder([dt_k[kept], table.dt_score_rank[kept], dt_img[kept], rank[kept]],
                          rows_are_unique=True)]
    # Match events sorted once by (area, threshold, position in that order); every smaller
    # max_det keeps a subsequence of the order, so the events stay sorted after filtering.
    full_pos = np.full(table.n_detections, -1, dtype=np.int64)
    full_pos[order] = np.arange(len(order))
    ev_at = table.match_area * n_t + table.match_threshold
    by_event = lexorder([ev_at, full_pos[table.match_dt]], rows_are_unique=True)
    # (take and compress: numpy's plain and boolean indexing are several times slower on
    # arrays of this size.)
    ev_at, ev_dt = ev_at.take(by_event), table.match_dt.take(by_event)
    ev_a = table.match_area.take(by_event)
    ev_full_pos = full_pos.take(ev_dt)
    n_gt, n_dt = table.gt_ignore.shape[1], table.n_detections
    ev_ign = table.gt_ignore.ravel().take(ev_a * n_gt + table.match_gt.take(by_event))
    ev_out = table.dt_out_of_range.ravel().take(ev_a * n_dt + ev_dt)
    ev_rank = rank.take(ev_dt)
    rank_in_order = rank.take(order)

    for mi, max_det in enumerate(p.max_detections):
        in_sel = rank_in_order < max_det
        sel = order.compress(in_sel)
        n_sel = len(sel)
        k_sel = dt_k.take(sel)
        seg_start = np.searchsorted(k_sel, np.arange(n_k), side="left")
        seg_end = np.searchsorted(k_sel, np.arange(n_k), side="right")
        n_det = seg_end - seg_start                            # (K,)
        sel_pos_of_full = np.cumsum(in_sel) - 1
        # Out-of-range detections counted up to each position (prefix sums, leading 0).
        out_prefix = np.empty((n_a, n_sel + 1), dtype=np.int32)
        out_prefix[:, 0] = 0
        out_sel = table.dt_out_of_range.take(sel, axis=1).view(np.uint8)
        for a in range(n_a):
            np.cumsum(out_sel[a], dtype=np.int32, out=out_prefix[a, 1:])

        # Match events that survive this max_det, sorted by (area, threshold, position), so
        # that the events of one (area, threshold, category) segment are contiguous.
        live = ev_rank < max_det
        e_at, e_pos = ev_at.compress(live), sel_pos_of_full.take(ev_full_pos.compress(live))
        e_ign, e_out = ev_ign.compress(live), ev_out.compress(live)
        e_seg = e_at * n_k + k_sel.take(e_pos)
        seg_first_event = np.searchsorted(e_seg, np.arange(n_a * n_t * n_k), side="left")
        tp_prefix = np.zeros(len(e_at) + 1, dtype=np.int64)
        np.cumsum(~e_ign, out=tp_prefix[1:])
        ign_prefix = np.arange(len(e_at) + 1) - tp_prefix
        out_m_prefix = np.zeros(len(e_at) + 1, dtype=np.int64)
        np.cumsum(e_out, out=out_m_prefix[1:])

        tp_events = np.flatnonzero(~e_ign)
        t_at, t_pos = e_at.take(tp_events), e_pos.take(tp_events)
        t_a, t_t = t_at // n_t, t_at % n_t
        t_k = k_sel.take(t_pos)
        start = seg_start.take(t_k)
        before = seg_first_event.take(e_seg.take(tp_events))
        upto = tp_events + 1
        tp_cum = tp_prefix.take(upto) - tp_prefix.take(before)
        row = t_a * (n_sel + 1)
        flat_out = out_prefix.ravel()
        out_count = flat_out.take(row + t_pos + 1) - flat_out.take(row + start)
        ignored = (ign_prefix.take(upto) - ign_prefix.take(before) + out_count
                   - (out_m_prefix.take(upto) - out_m_prefix.take(before)))
        fp_cum = (t_pos - start + 1) - tp_cum - ignored
        tp_f = tp_cum.astype(np.float64)
        pr = tp_f / (fp_cum.astype(np.float64) + tp_f + _EPS)

        # TP events grouped by segment (area, threshold, category), in position order.
        seg = (t_a * n_t + t_t) * n_k + t_k
        n_seg = n_a * n_t * n_k
        tp_count = np.bincount(seg, minlength=n_seg)
        tp_first = np.cumsum(tp_count) - tp_count

        # Recall: final TP count over positives (0 when there are no detections).
        a_grid = np.repeat(np.arange(n_a), n_t * n_k)
        k_grid = np.tile(np.arange(n_k), n_a * n_t)
        seg_npig = npig[k_grid, a_grid]
        valid = seg_npig > 0
        final = np.full(n_seg, -1.0)
        final[valid] = np.where(n_det[k_grid[valid]] > 0,
                                tp_count[valid] / seg_npig[valid], 0.0)
        recall[..., mi] = final.reshape(n_a, n_t, n_k).transpose(1, 2, 0)

        # Precision and score at each recall threshold: the need-th TP (need >= 1) or the
        # first detection (need == 0); precision is the running max from there to the end.
        # A threshold is reached when that detection exists. pycocotools fills the points in
        # the given order and stops at the first one not reached (an IndexError caught
        # around the loop), so with unsorted thresholds everything after it stays 0.
        seg_need = need[k_grid, a_grid]                          # (S, R)
        n_tp = tp_count[:, None]
        seg_has_dt = (n_det[k_grid] > 0)[:, None]
        reached = np.where(seg_need == 0, seg_has_dt, seg_need <= n_tp)
        reached = np.logical_and.accumulate(reached, axis=1)
        q = np.zeros((n_seg, n_r))
        ss = np.zeros((n_seg, n_r))
        s_idx, r_idx = np.nonzero(reached & (n_tp >= 1))
        if len(s_idx):
            lo = tp_first[s_idx] + np.maximum(seg_need[s_idx, r_idx] - 1, 0)
            hi = tp_first[s_idx] + tp_count[s_idx]
            bounds = np.empty(2 * len(lo), dtype=np.int64)
            bounds[0::2], bounds[1::2] = lo, hi
            q[s_idx, r_idx] = np.maximum.reduceat(np.r_[pr, 0.0], bounds)[0::2]
            ss[s_idx, r_idx] = scores_in[sel[t_pos[lo]]]
        # need == 0 (a recall threshold <= 0): the first detection's score, whatever it is.
        zs, zr = np.nonzero(reached & (seg_need == 0))
        ss[zs, zr] = scores_in[sel[seg_start[k_grid[zs]]]]
        q[~valid] = -1.0
        ss[~valid] = -1.0
        precision[..., mi] = q.reshape(n_a, n_t, n_k, n_r).transpose(1, 3, 2, 0)
        scores[..., mi] = ss.reshape(n_a, n_t, n_k, n_r).transpose(1, 3, 2, 0)
    return precision, recall, scores
