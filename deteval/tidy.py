"""The tidy export: one row per detection and per ground-truth object of an evaluation.

:func:`tidy_columns` builds the table as a plain dict of columns (numpy arrays, and
:class:`Coded` arrays for text), from the protocol's match table (:mod:`deteval.matching`)
and the per-detection outcomes (:mod:`deteval.outcomes`). Everything else writes that one
table: :func:`to_frame` (pandas), :func:`to_arrow` (pyarrow), :func:`write_table` (CSV,
Parquet). The ``to_frame()`` and ``to_arrow()`` of the COCO, VOC, LVIS, Open Images and
CrowdPose results call these (the last three through :mod:`deteval._tidy_protocols`). The
columns, their types and meaning are in docs/tidy-export.md.

Rows come in two blocks: every detection (in the order of ``result.detections``), then
every object (in the order of ``result.dataset.gt``). With ``iou_threshold="all"`` the
table is in long form: these blocks repeated for each evaluated threshold, in order, with
the ``iou_threshold`` column telling them apart.

Examples
--------
>>> import deteval
>>> from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
>>> gt = GroundTruth(image_index=[0, 0], category_index=[0, 0],
...                  boxes=[[0, 0, 10, 10], [50, 50, 60, 60]])
>>> ds = Dataset(Images(ids=[7]), Categories(ids=[1], names=("cat",)), gt)
>>> dt = Detections(image_index=[0, 0], category_index=[0, 0],
...                 boxes=[[0, 0, 10, 10], [0, 0, 10, 9]], scores=[0.9, 0.8])
>>> columns = tidy_columns(deteval.evaluate_voc(ds, dt))
>>> columns["kind"].values().tolist(), columns["status"].values().tolist()
(['detection', 'detection', 'gt', 'gt'], ['tp', 'fp', 'tp', 'fn'])
>>> columns["match_row"].tolist(), columns["outcome"].values().tolist()
([0, -1, 0, -1], ['tp', 'duplicate', 'tp', 'missed'])
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._arrays import ReadOnlyArrays, frozen

__all__ = ["Coded", "TIDY_COLUMNS", "tidy_columns", "to_arrow", "to_frame", "write_table"]

#: The columns of :func:`tidy_columns`, in order (docs/tidy-export.md §2).
TIDY_COLUMNS = ("kind", "row", "image_id", "file_name", "category_id", "category", "score",
                "area", "area_range", "crowd", "iou_threshold", "status", "match_row",
                "match_id", "iou", "outcome", "outcome_row", "outcome_iou")
#: The columns that exist only with ``outcomes=True``.
OUTCOME_COLUMNS = ("outcome", "outcome_row", "outcome_iou")

_KINDS = ("detection", "gt")
# Status labels; a detection's code is its match-table status + 1, an object's is mapped.
_STATUS = ("not_evaluated", "fp", "tp", "ignored", "fn")
_GT_STATUS_CODE = np.array([0, 4, 2, 3], dtype=np.int32)      # by gt status + 1
_EXTRA = "pip install 'deteval[frame]'"


@dataclass(frozen=True, eq=False)
class Coded(ReadOnlyArrays):
    """A text column as codes into distinct labels (a pandas Categorical, an Arrow
    dictionary array).

    Attributes
    ----------
    codes : ndarray of int32, shape (n,)
        Index into ``labels``; -1 where the value is missing.
    labels : tuple of str
        Distinct labels.
    """

    codes: np.ndarray
    labels: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.codes)

    def values(self) -> np.ndarray:
        """The text of every row, shape (n,), object dtype; None where missing."""
        table = np.array(list(self.labels) + [None], dtype=object)
        return table[np.where(self.codes >= 0, self.codes, len(self.labels))]


def _coded(codes: np.ndarray, labels) -> Coded:
    """``labels[codes]`` as a :class:`Coded` with distinct labels (equal labels merged, the
    empty label and code -1 missing)."""
    labels = np.asarray(list(labels), dtype=str) if len(labels) else np.zeros(0, dtype=str)
    distinct, inverse = np.unique(labels, return_inverse=True)
    remap = inverse.ravel().astype(np.int32)
    if len(distinct) and distinct[0] == "":         # sorted: "" comes first
        distinct, remap = distinct[1:], remap - 1
    remap = np.r_[remap, -1].astype(np.int32)        # code -1 looks up the last entry
    codes = np.asarray(codes, dtype=np.int64)
    return Coded(frozen(remap[np.where(codes >= 0, codes, len(labels))]),
                 tuple(distinct.tolist()))


def _stack(parts: list) -> Any:
    """One column from per-block parts (arrays, or Coded with the same labels)."""
    if isinstance(parts[0], Coded):
        return Coded(frozen(np.concatenate([p.codes for p in parts])), parts[0].labels)
    return frozen(np.concatenate(parts))


def thresholds_of(result, iou_threshold: float | str | None) -> list[int]:
    """Indices of the evaluated thresholds a table of ``iou_threshold`` covers (see
    :func:`tidy_columns`); ValueError for a threshold that was not evaluated."""
    params = getattr(result, "params", None)     # Open Images has none: its table's one
    thresholds = list(result.matches.iou_thresholds if params is None
                      else params.iou_thresholds)
    if iou_threshold is None:
        return [0]
    if isinstance(iou_threshold, str):
        if iou_threshold != "all":
            raise ValueError(f"iou_threshold must be an evaluated threshold, None or 'all'; "
                             f"got {iou_threshold!r}")
        return list(range(len(thresholds)))
    # within 1e-9: COCO's 0.9 is 0.8999999999999999
    hits = [i for i, t in enumerate(thresholds) if abs(t - float(iou_threshold)) <= 1e-9]
    if not hits:
        shown = ", ".join(f"{t:.10g}" for t in thresholds)    # 0.9, not 0.8999999999999999
        raise ValueError(f"iou_threshold {iou_threshold!r} was not evaluated; choose one of "
                         f"[{shown}], or 'all'")
    return hits[:1]


def tidy_columns(result, *, iou_threshold: float | str | None = None,
                 outcomes: bool = True) -> dict[str, Any]:
    """One row per detection and per object of ``result``, as a dict of columns.

    Parameters
    ----------
    result : COCOResult, VOCResult, LVISResult, OpenImagesResult or CrowdPoseResult
        With its match table (not a result of :meth:`deteval.Evaluator.compute`, which
        keeps none). LVIS, Open Images and CrowdPose rows add their own columns
        (docs/tidy-export.md §4).
    iou_threshold : float, "all" or None
        One of the evaluated thresholds (within 1e-9; default: the first, 0.5 for COCO
        and VOC), or ``"all"`` for the long form (the rows once per threshold).
    outcomes : bool, default True
        Add the columns of :func:`deteval.match_outcomes` at each threshold (``outcome``,
        ``outcome_row``, ``outcome_iou``): the TIDE-like error type. They cost a second
        matching per threshold.

    Returns
    -------
    dict
        Column name -> ndarray of shape (n_rows,) or :class:`Coded`, in the order of
        :data:`TIDY_COLUMNS` (docs/tidy-export.md). ``n_rows`` is (detections + objects)
        times the number of thresholds covered.

    Raises
    ------
    TypeError
        Not a result of one of these protocols.
    ValueError
        A result without a match table or detections; an ``iou_threshold`` that was not
        evaluated.
    """
    from .protocols.coco import COCOResult
    from .protocols.voc import VOCResult

    coco = isinstance(result, COCOResult)
    if not coco and not isinstance(result, VOCResult):
        from ._tidy_protocols import protocol_columns

        columns = protocol_columns(result, iou_threshold, outcomes)
        if columns is None:
            raise TypeError(f"expected an evaluation's result (a COCOResult or VOCResult, an "
                            f"LVISResult, OpenImagesResult or CrowdPoseResult); got "
                            f"{type(result).__name__}")
        return columns
    if result.matches is None or result.detections is None:
        raise ValueError("this result keeps no match table (Evaluator.compute() does not): "
                         "evaluate with evaluate_coco or evaluate_voc to export its rows")
    chosen = thresholds_of(result, iou_threshold)
    base = _fixed_columns(result, coco)
    similarity = _similarity(result, coco)
    blocks = [dict(base, **_threshold_columns(result, t, similarity, outcomes))
              for t in chosen]
    names = [c for c in TIDY_COLUMNS if outcomes or c not in OUTCOME_COLUMNS]
    return {name: _stack([block[name] for block in blocks]) for name in names}


def _fixed_columns(result, coco: bool) -> dict[str, Any]:
    """The columns that do not depend on the threshold."""
    dataset, dt = result.dataset, result.detections
    gt, images, categories = dataset.gt, dataset.images, dataset.categories
    n_dt, n_gt = len(dt), len(gt)
    image_row = np.r_[dt.image_index, gt.image_index].astype(np.int64)
    known = dt.category_index >= 0
    dt_category_id = np.where(known, categories.ids[np.maximum(dt.category_index, 0)]
                              if len(categories) else -1, -1)
    if dt.category_ids is not None:
        dt_category_id = np.where(known, dt_category_id, dt.category_ids)
    category_row = np.r_[dt.category_index, gt.category_index].astype(np.int64)
    area = np.r_[dt.area, gt.area].astype(np.float64)
    p = result.params
    if coco:
        ranges = [r for r, label in zip(p.area_ranges, p.area_labels) if label != "all"]
        range_labels = [label for label in p.area_labels if label != "all"]
    else:   # VOC has no area ranges: COCO's, for slicing
        from .protocols.coco import COCO

        ranges, range_labels = list(COCO.area_ranges[1:]), list(COCO.area_labels[1:])
    area_code = np.full(len(area), -1, dtype=np.int64)
    for k, (lo, hi) in reversed(list(enumerate(ranges))):     # the first range that holds it
        area_code[(area >= lo) & (area <= hi)] = k
    scores = result.scores if not coco else dt.scores
    return {
        "kind": Coded(frozen(np.repeat(np.arange(2, dtype=np.int32), [n_dt, n_gt])), _KINDS),
        "row": frozen(np.r_[np.arange(n_dt), np.arange(n_gt)].astype(np.int64)),
        "image_id": frozen(images.ids[image_row].astype(np.int64)),
        "file_name": _coded(image_row, images.file_names),
        "category_id": frozen(np.r_[dt_category_id, categories.ids[gt.category_index]]
                              .astype(np.int64)),
        "category": _coded(category_row, categories.names),
        "score": frozen(np.r_[np.asarray(scores, dtype=np.float64), np.full(n_gt, np.nan)]),
        "area": frozen(area),
        "area_range": _coded(area_code, range_labels),
        "crowd": frozen(np.r_[np.zeros(n_dt, bool), gt.iscrowd.astype(bool)]),
    }


def _threshold_columns(result, t: int, similarity, outcomes: bool) -> dict[str, Any]:
    """The columns at the threshold of index ``t``."""
    table, dt, gt = result.matches, result.detections, result.dataset.gt
    n_dt, n_gt = len(dt), len(gt)
    threshold = float(table.iou_thresholds[t])
    dt_status = table.detection_status(0)[t].astype(np.int64)
    gt_status = table.gt_status(0)[t].astype(np.int64)
    dt_match = table.detection_matches(0)[t]
    gt_match = table.gt_matches(0)[t]
    iou = np.full(n_dt + n_gt, np.nan)
    rows = np.flatnonzero(dt_match >= 0)
    iou[rows] = similarity(rows, dt_match[rows])
    rows = np.flatnonzero(gt_match >= 0)
    iou[n_dt + rows] = similarity(gt_match[rows], rows)
    dt_ids = dt.ids if dt.ids is not None else np.arange(1, n_dt + 1)
    match_id = np.r_[gt.ids[dt_match] if n_gt else np.zeros(n_dt, np.int64),
                     dt_ids[gt_match] if n_dt else np.zeros(n_gt, np.int64)]
    match_row = np.r_[dt_match, gt_match].astype(np.int64)
    out = {
        "iou_threshold": frozen(np.full(n_dt + n_gt, threshold)),
        "status": Coded(frozen(np.r_[dt_status + 1, _GT_STATUS_CODE[gt_status + 1]]
                               .astype(np.int32)), _STATUS),
        "match_row": frozen(match_row),
        "match_id": frozen(np.where(match_row >= 0, match_id, -1).astype(np.int64)),
        "iou": frozen(iou),
    }
    if outcomes:
        out.update(_outcome_columns(result, threshold))
    return out


def _similarity(result, coco: bool):
    """``similarity(dt_rows, gt_rows)``: the protocol's value for aligned row pairs (COCO:
    IoU, IoA with crowds, OKS, ... as matched; VOC: the IoU the rule matched by)."""
    if not coco:    # the VOC rule matches a detection only to its best object
        best = result.matches.dt_best_iou
        return lambda dt_rows, gt_rows: best[dt_rows]
    from .protocols._coco_stages import pair_similarity

    dataset, dt = result.dataset, result.detections
    gt = dataset.gt
    pair = pair_similarity(result.params, dataset, dt, np.arange(len(gt)), dt.as_xywh(),
                           gt.as_xywh(), gt.iscrowd)
    return lambda dt_rows, gt_rows: pair(dt_rows, gt_rows) if len(dt_rows) else np.zeros(0)


def _outcome_columns(result, threshold: float) -> dict[str, Any]:
    """``outcome``, ``outcome_row``, ``outcome_iou`` of :func:`deteval.match_outcomes`, by
    the similarity ``result`` matched with (its ``iou_type``, sigmas, dilation ratio; a
    protocol's view: CrowdPose's scaled areas, LVIS's masks)."""
    from .outcomes import DT_OUTCOMES, GT_OUTCOMES, match_outcomes

    gt = result.dataset.gt
    labels = DT_OUTCOMES + tuple(g for g in GT_OUTCOMES if g not in DT_OUTCOMES)
    gt_code = np.array([labels.index(g) for g in GT_OUTCOMES], dtype=np.int32)
    found = match_outcomes(result, iou_threshold=threshold)
    gt_iou = np.full(len(gt), np.nan)
    has = found.gt_dt >= 0
    gt_iou[has] = found.dt_iou[found.gt_dt[has]]
    return {
        "outcome": Coded(frozen(np.r_[found.dt_outcome.astype(np.int32),
                                      gt_code[found.gt_outcome]]), labels),
        "outcome_row": frozen(np.r_[found.dt_gt, found.gt_dt].astype(np.int64)),
        "outcome_iou": frozen(np.r_[found.dt_iou, gt_iou]),
    }


def _require(module: str, what: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"{what} needs {module.split('.')[0]}: {_EXTRA} ({error})") from None


def to_frame(result, *, iou_threshold: float | str | None = None, outcomes: bool = True):
    """The table of :func:`tidy_columns` as a pandas DataFrame (text columns categorical).

    Needs pandas (``pip install 'deteval[frame]'``); the arguments are those of
    :func:`tidy_columns`.
    """
    pd = _require("pandas", "to_frame")
    columns = tidy_columns(result, iou_threshold=iou_threshold, outcomes=outcomes)
    data = {name: (pd.Categorical.from_codes(value.codes, categories=list(value.labels))
                   if isinstance(value, Coded) else np.array(value))
            for name, value in columns.items()}
    return pd.DataFrame(data)


def to_arrow(result, *, iou_threshold: float | str | None = None, outcomes: bool = True):
    """The table of :func:`tidy_columns` as a pyarrow Table (text as dictionary arrays,
    NaN and missing text as nulls).

    Needs pyarrow (``pip install 'deteval[frame]'``); the arguments are those of
    :func:`tidy_columns`.
    """
    pa = _require("pyarrow", "to_arrow")
    columns = tidy_columns(result, iou_threshold=iou_threshold, outcomes=outcomes)
    return pa.table({name: _arrow_column(pa, value) for name, value in columns.items()})


def _arrow_column(pa, value):
    if isinstance(value, Coded):
        missing = value.codes < 0
        return pa.DictionaryArray.from_arrays(
            pa.array(np.maximum(value.codes, 0), type=pa.int32(),
                     mask=missing if missing.any() else None),
            pa.array(list(value.labels), type=pa.string()))
    return pa.array(value, from_pandas=True)       # NaN: null (a missing value)


def csv_text(columns: dict[str, Any]) -> bytes:
    """CSV bytes of :func:`tidy_columns` (header, ``\\n`` line ends): missing values are
    empty fields, booleans ``true``/``false``, floats read back to the same double."""
    from ._csv_text import csv_bytes, float_field, int_field, label_field

    def field(value):
        if isinstance(value, Coded):
            return lambda lo, hi: label_field(value.codes[lo:hi], value.labels)
        if value.dtype == bool:
            return lambda lo, hi: label_field(value[lo:hi].astype(np.int64),
                                              ("false", "true"))
        if value.dtype.kind in "iu":
            return lambda lo, hi: int_field(value[lo:hi])
        return lambda lo, hi: float_field(value[lo:hi])

    n = len(next(iter(columns.values()))) if columns else 0
    return csv_bytes(list(columns), [field(v) for v in columns.values()], n)


_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def write_table(result, path: str | os.PathLike, *, format: str | None = None,
                iou_threshold: float | str | None = None, outcomes: bool = True) -> None:
    """Write the table of :func:`tidy_columns` to ``path`` as CSV or Parquet.

    ``format`` is ``"csv"`` or ``"parquet"``, by default from the suffix (``.csv``,
    ``.parquet``, ``.pq``). CSV needs nothing beyond numpy; Parquet needs pyarrow
    (``pip install 'deteval[frame]'``). The other arguments are those of
    :func:`tidy_columns`.
    """
    if format is None:
        format = _FORMATS.get(Path(path).suffix.lower())
        if format is None:
            raise ValueError(f"cannot tell the table format of {os.fspath(path)!r} from its "
                             f"suffix; use .csv or .parquet (or pass format=)")
    if format not in ("csv", "parquet"):
        raise ValueError(f"format must be 'csv' or 'parquet'; got {format!r}")
    if format == "parquet":
        parquet = _require("pyarrow.parquet", "Parquet output")
        table = to_arrow(result, iou_threshold=iou_threshold, outcomes=outcomes)
        parquet.write_table(table, os.fspath(path))
        return
    columns = tidy_columns(result, iou_threshold=iou_threshold, outcomes=outcomes)
    Path(path).write_bytes(csv_text(columns))
