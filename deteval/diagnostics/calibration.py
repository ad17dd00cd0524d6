"""Detection calibration: D-ECE and the reliability diagram (Küppers et al., CVPR-W 2020).

A detector is calibrated when, among its detections of confidence about ``c``, a fraction
``c`` is right. Following Küppers et al. ("Multivariate Confidence Calibration for Object
Detection"), a detection is *right* when it is a true positive at one IoU threshold (default
0.5). The decision is read from :func:`~deteval.evaluate_coco`'s match table (area range
"all", the first ``max_detections`` of each image and category): detections matched to a
crowd region, and those not evaluated, count neither as right nor as wrong. Given a result of
:func:`~deteval.evaluate_voc`, :func:`~deteval.evaluate_lvis`,
:func:`~deteval.evaluate_crowdpose` or :func:`~deteval.evaluate_openimages`, that protocol's
own decisions are read instead. The confidences
are cut into bins (``bins`` of equal width over ``[0, 1]``, or of equal mass); in bin ``b``
the precision is ``TP_b / |B_b|`` and the confidence the mean score, and::

    D-ECE = sum over bins of |B_b| / N * |precision_b - confidence_b|

with ``N`` the detections binned. MCE is the largest gap of a non-empty bin. Both are
computed over all categories pooled and per category (with the category's own edges when
the bins are of equal mass); the rules are in ``docs/diagnostics/calibration.md``.

>>> import deteval
>>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4],
...                        "area": 16, "iscrowd": 0}]}
>>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4], "score": 0.9},
...       {"image_id": 1, "category_id": 1, "bbox": [8, 8, 2, 2], "score": 0.85}]
>>> cal = deteval.calibration(gt, dt, bins=2)  # one bin [0.5, 1]: precision 0.5, conf 0.875
>>> round(cal.dece, 6), cal.count.tolist(), cal.precision.tolist()
(0.375, [0, 2], [nan, 0.5])
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._arrays import ReadOnlyArrays, frozen
from .._validation import number
from ..errors import FormatError
from ..matching import FP, TP

__all__ = ["BINNINGS", "MAX_BINS", "CalibrationResult", "calibration", "coco_max_detections",
           "plot_reliability"]

#: The ways of cutting the confidences into bins.
BINNINGS = ("uniform", "quantile")


@dataclass(frozen=True, eq=False)
class CalibrationResult(ReadOnlyArrays):
    """Result of :func:`calibration`. ``B`` bins, ``K`` categories, ``n_dt`` detections.

    Attributes
    ----------
    iou_threshold : float
    binning : {"uniform", "quantile"}
    bin_edges : ndarray of float64, shape (B + 1,)
        ``b / B`` with uniform bins (so a score of 0.3 starts bin 3 of 10). Bin ``b`` holds
        the scores ``s`` with ``bin_edges[b] <= s < bin_edges[b + 1]``; the last bin also
        holds ``s == bin_edges[-1]``.
    count, tp : ndarray of int64, shape (B,)
        Detections binned, and the true positives among them.
    precision, confidence : ndarray of float64, shape (B,)
        ``tp / count`` and the mean score of each bin; NaN for an empty bin.
    dece, mce : float
        Detection expected calibration error and maximum calibration error; NaN without any
        detection binned.
    n_detections : int
        ``N``: the detections binned (true and false positives).
    category_ids : ndarray of int64, shape (K,)
        -1 when categories were pooled (``use_categories=False``).
    category_names : tuple of str
    class_bin_edges : ndarray of float64, shape (K, B + 1)
        Each category's edges (the overall ones with uniform bins).
    class_count, class_tp : ndarray of int64, shape (K, B)
    class_precision, class_confidence : ndarray of float64, shape (K, B)
    class_dece, class_mce : ndarray of float64, shape (K,)
        NaN for a category without detections binned.
    class_mean_score : ndarray of float64, shape (K,)
        Mean score of each category's binned detections (NaN without any).
    mean_class_dece : float
        Mean of ``class_dece`` over the categories with detections binned (NaN if none).
    dt_evaluated, dt_correct : ndarray of bool, shape (n_dt,)
        Each detection is binned (a true or false positive), and is a true positive.
    dt_bin : ndarray of int64, shape (n_dt,)
        Its bin in the overall binning, -1 where not binned.
    max_detections : int or None
        The protocol's cap on detections: per image and category (COCO, CrowdPose), per
        image (LVIS), per image and class (Open Images); None for VOC (no cap).
    protocol : str
        The protocol whose decisions are read: "coco", "voc", "lvis", "crowdpose" or
        "openimages".
    """

    iou_threshold: float
    binning: str
    bin_edges: np.ndarray
    count: np.ndarray
    tp: np.ndarray
    precision: np.ndarray
    confidence: np.ndarray
    dece: float
    mce: float
    n_detections: int
    category_ids: np.ndarray
    category_names: tuple[str, ...]
    class_bin_edges: np.ndarray
    class_count: np.ndarray
    class_tp: np.ndarray
    class_precision: np.ndarray
    class_confidence: np.ndarray
    class_dece: np.ndarray
    class_mce: np.ndarray
    class_mean_score: np.ndarray
    mean_class_dece: float
    dt_evaluated: np.ndarray
    dt_correct: np.ndarray
    dt_bin: np.ndarray
    max_detections: int | None
    protocol: str = "coco"

    def __post_init__(self) -> None:
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                frozen(value)

    def __repr__(self) -> str:
        return (f"CalibrationResult(dece={self.dece:.4f}, mce={self.mce:.4f}, "
                f"iou_threshold={self.iou_threshold:g}, bins={len(self.count)} "
                f"{self.binning}, detections={self.n_detections})")

    @property
    def n_bins(self) -> int:
        return len(self.count)

    def reliability(self, category: Any = None) -> dict[str, Any]:
        """The reliability diagram's data: ``edges``, ``count``, ``tp``, ``precision``,
        ``confidence`` (lists, None for empty bins) and ``dece``, of all categories or of
        one (``category``: an id or a name)."""
        if category is None:
            arrays = (self.bin_edges, self.count, self.tp, self.precision, self.confidence)
            dece, mce, name = self.dece, self.mce, "overall"
        else:
            k = self._category_position(category)
            arrays = (self.class_bin_edges[k], self.class_count[k], self.class_tp[k],
                      self.class_precision[k], self.class_confidence[k])
            dece, mce = float(self.class_dece[k]), float(self.class_mce[k])
            name = self.category_names[k]
        edges, count, tp, precision, confidence = arrays
        return {"name": name, "edges": edges.tolist(), "count": count.tolist(),
                "tp": tp.tolist(), "precision": _nan_to_none(precision),
                "confidence": _nan_to_none(confidence), "dece": _none_if_nan(dece),
                "mce": _none_if_nan(mce)}

    def per_class(self) -> list[dict[str, Any]]:
        """One row per category: ``category_id``, ``name``, ``detections``, ``tp``,
        ``precision`` and ``confidence`` (over all its bins) and ``dece``, ``mce``."""
        rows = []
        count, tp = self.class_count.sum(axis=1), self.class_tp.sum(axis=1)
        for k, (cid, name) in enumerate(zip(self.category_ids.tolist(), self.category_names)):
            n = int(count[k])
            rows.append({"category_id": cid, "name": name, "detections": n, "tp": int(tp[k]),
                         "precision": float(tp[k] / n) if n else None,
                         "confidence": _none_if_nan(float(self.class_mean_score[k])),
                         "dece": _none_if_nan(float(self.class_dece[k])),
                         "mce": _none_if_nan(float(self.class_mce[k]))})
        return rows

    def _category_position(self, category: Any) -> int:
        names = list(self.category_names)
        if isinstance(category, str) and category in names:
            return names.index(category)
        ids = self.category_ids.tolist()
        if isinstance(category, (int, np.integer)) and not isinstance(category, bool) \
                and int(category) in ids:
            return ids.index(int(category))
        raise ValueError(f"unknown category {category!r}; give a category id or name of the "
                         "result")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the settings, the overall numbers and bins, :meth:`per_class` and each
        category's bins (``class_reliability``; NaN written as None)."""
        return {"protocol": self.protocol, "iou_threshold": self.iou_threshold,
                "binning": self.binning,
                "bins": self.n_bins, "max_detections": self.max_detections,
                "n_detections": self.n_detections, "dece": _none_if_nan(self.dece),
                "mce": _none_if_nan(self.mce),
                "mean_class_dece": _none_if_nan(self.mean_class_dece),
                "reliability": self.reliability(), "per_class": self.per_class(),
                "class_reliability": [self.reliability(int(c)) if c >= 0 else
                                      self.reliability(self.category_names[k])
                                      for k, c in enumerate(self.category_ids.tolist())]}


#: Most confidence bins: each bin's counts are kept per category, and a reliability diagram
#: of more bins than this has almost no detection per bin (a count of 10**8 once took 1.6 GB).
MAX_BINS = 10_000

def _none_if_nan(value: float) -> float | None:
    return None if value != value else float(value)


def _nan_to_none(values: np.ndarray) -> list:
    return [None if v != v else v for v in values.tolist()]


def coco_max_detections(iou_type: str) -> int:
    """COCO's detections per image and category (``maxDets[-1]``, pycocotools'
    ``Params(iouType)``) for ``iou_type``: what :func:`calibration` evaluates by default.

    >>> coco_max_detections("bbox"), coco_max_detections("keypoints")
    (100, 20)
    """
    from ..protocols.coco import COCO, COCO_KEYPOINTS

    return (COCO_KEYPOINTS if iou_type == "keypoints" else COCO).max_detections[-1]


def calibration(gt: Any, dt: Any = None, *, iou_threshold: float = 0.5, bins: int = 10,
                binning: str = "uniform", iou_type: str = "bbox",
                max_detections: int | None = None) -> CalibrationResult:
    """D-ECE, MCE and the reliability diagram's data, overall and per category.

    Parameters
    ----------
    gt : Dataset, str, PathLike, dict or a protocol's result
        Ground truth (a COCO instances file or its dict), or a result of
        :func:`~deteval.evaluate_coco`, :func:`~deteval.evaluate_voc`,
        :func:`~deteval.evaluate_lvis`, :func:`~deteval.evaluate_crowdpose` or
        :func:`~deteval.evaluate_openimages` whose match table is read as it is, with that
        protocol's decisions (then ``dt`` is None, ``iou_threshold`` must be one of its
        thresholds, and ``iou_type`` and ``max_detections`` are the result's).
    dt : Detections, str, PathLike, list, dict or ndarray, optional
        Detections, or anything :func:`~deteval.io.coco.read_coco_results` reads. Their
        scores must be confidences in ``[0, 1]``.
    iou_threshold : float, default 0.5
        A detection is right when it is a true positive at this threshold (COCO rule, or the
        result's protocol).
    bins : int, default 10
    binning : {"uniform", "quantile"}
        Bins of equal width over ``[0, 1]``, or of equal mass: edges at the quantiles of
        the binned scores (``np.quantile``, linear), per category for the per-category
        numbers.
    iou_type : {"bbox", "segm", "boundary", "keypoints", "polygon", "rotated"}
    max_detections : int, optional
        Detections per image and category evaluated; default COCO's ``maxDets[-1]`` for
        ``iou_type`` (:func:`coco_max_detections`: 100, 20 for keypoints).

    Returns
    -------
    CalibrationResult

    Raises
    ------
    ValueError
        A binned detection scores outside ``[0, 1]`` (the message names it); invalid
        settings.
    """
    from ..protocols.coco import evaluate_coco
    from ._decisions import protocol_name

    if binning not in BINNINGS:
        raise ValueError(f"binning must be one of {', '.join(map(repr, BINNINGS))}; "
                         f"got {binning!r}")
    if isinstance(bins, (bool, np.bool_)) or not isinstance(bins, (int, np.integer)) \
            or not 1 <= bins <= MAX_BINS:
        raise ValueError(f"bins must be an integer from 1 to {MAX_BINS:,}; got {bins!r}")
    tau = number("iou_threshold", iou_threshold, low=0.0, high=1.0, low_open=True)
    if protocol_name(gt) is not None:
        if dt is not None:
            raise TypeError("calibration(result) takes no detections: the result's are used")
        result = gt
    else:
        if dt is None:
            raise TypeError("calibration() needs the detections (dt) with a ground truth")
        if max_detections is None:
            max_detections = coco_max_detections(iou_type)
        if isinstance(max_detections, (bool, np.bool_)) or not isinstance(
                max_detections, (int, np.integer)) or max_detections < 1:
            raise ValueError(f"max_detections must be an integer >= 1; got {max_detections!r}")
        m = int(max_detections)
        result = evaluate_coco(gt, dt, iou_type=iou_type, iou_thresholds=(tau,),
                               max_detections=(m, m, m))
    source = os.fspath(dt) if isinstance(dt, (str, os.PathLike)) else None
    return _calibration(result, tau, int(bins), binning, source)


def _calibration(result: Any, tau: float, n_bins: int, binning: str,
                 source: str | None = None) -> CalibrationResult:
    from ._decisions import decisions

    d = decisions(result, tau, with_iou=False, all_only=True, with_order=False)
    status = d.status[0]
    evaluated = (status == TP) | (status == FP)
    correct = status == TP
    scores = d.scores
    rows = np.flatnonzero(evaluated)
    s = scores[rows]
    bad = np.flatnonzero((s < 0) | (s > 1))
    if len(bad):
        row = int(rows[bad[0]])
        image = d.image_ids[row]
        image = repr(image) if isinstance(image, str) else int(image)
        # Readers keep the file's order: row i of the detections is results[i] of a file.
        raise FormatError(
            f"calibration needs confidences in [0, 1]; {len(bad)} detection(s) score outside "
            f"it, the first with score {float(scores[row])!r}",
            source=source, record=f"{'results' if source else 'detection row'}[{row}] "
            f"(image_id {image})")
    # Sums in ascending score order: the same numbers whatever the detections' order (tied
    # scores are equal values, so their order among themselves changes no sum or count).
    rows = rows[np.argsort(s)]
    s = scores[rows]
    n_k = len(d.category_ids)
    dt_k = d.dt_k[rows]
    hit = correct[rows]

    edges = _edges(s, n_bins, binning)
    b = _bin_of(s, edges)
    overall = _bins(b, s, hit, n_bins, 1, np.zeros(len(s), np.int64))
    if binning == "uniform":
        class_edges = np.tile(edges, (n_k, 1))
        class_b = b
    else:
        class_edges = np.empty((n_k, n_bins + 1))
        class_b = np.empty(len(s), dtype=np.int64)
        order = np.argsort(dt_k, kind="stable")
        starts = np.searchsorted(dt_k[order], np.arange(n_k + 1))
        for k in range(n_k):     # one loop step per category
            mine = order[starts[k]:starts[k + 1]]
            class_edges[k] = _edges(s[mine], n_bins, binning)
            class_b[mine] = _bin_of(s[mine], class_edges[k])
    per_class = _bins(class_b, s, hit, n_bins, n_k, dt_k)

    dt_bin = np.full(len(scores), -1, dtype=np.int64)
    dt_bin[rows] = b
    class_dece = per_class[4]
    with_dets = per_class[0].sum(axis=1) > 0
    mean_class = float(class_dece[with_dets].mean()) if with_dets.any() else float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_score = (np.bincount(dt_k, weights=s, minlength=n_k)
                      / np.bincount(dt_k, minlength=n_k))
    return CalibrationResult(
        iou_threshold=tau, binning=binning, bin_edges=edges, count=overall[0][0],
        tp=overall[1][0], precision=overall[2][0], confidence=overall[3][0],
        dece=float(overall[4][0]), mce=float(overall[5][0]), n_detections=len(rows),
        category_ids=np.array(d.category_ids, dtype=np.int64),
        category_names=tuple(d.category_names), class_bin_edges=class_edges,
        class_count=per_class[0], class_tp=per_class[1], class_precision=per_class[2],
        class_confidence=per_class[3], class_dece=class_dece, class_mce=per_class[5],
        class_mean_score=mean_score, mean_class_dece=mean_class, dt_evaluated=evaluated,
        dt_correct=correct & evaluated, dt_bin=dt_bin, max_detections=d.max_detections,
        protocol=d.protocol)


def _edges(s: np.ndarray, n_bins: int, binning: str) -> np.ndarray:
    """Bin edges, shape (B + 1,): equal width over [0, 1], or the scores' quantiles."""
    if binning == "uniform" or len(s) == 0:
        return np.arange(n_bins + 1) / n_bins     # b / B, as written: 3 / 10 is 0.3
    return np.quantile(s, np.linspace(0.0, 1.0, n_bins + 1))


def _bin_of(s: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin ``b`` with ``edges[b] <= s < edges[b + 1]`` (the last bin closed)."""
    return np.searchsorted(edges[1:-1], s, side="right").astype(np.int64)


def _bins(b: np.ndarray, s: np.ndarray, hit: np.ndarray, n_bins: int, n_k: int,
          k: np.ndarray) -> tuple[np.ndarray, ...]:
    """Count, TP, precision, confidence (K, B), D-ECE and MCE (K,) of binned detections."""
    cell = k * n_bins + b
    size = n_k * n_bins
    count = np.bincount(cell, minlength=size).reshape(n_k, n_bins)
    tp = np.bincount(cell[hit], minlength=size).reshape(n_k, n_bins)
    score_sum = np.bincount(cell, weights=s, minlength=size).reshape(n_k, n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(count > 0, tp / count, np.nan)
        confidence = np.where(count > 0, score_sum / count, np.nan)
        n = count.sum(axis=1)
        gap = np.abs(precision - confidence)
        weighted = np.where(count > 0, count / np.maximum(n, 1)[:, None] * gap, 0.0)
        dece = np.where(n > 0, weighted.sum(axis=1), np.nan)
        mce = np.where(n > 0, np.max(np.where(count > 0, gap, -np.inf), axis=1), np.nan)
    return (count.astype(np.int64), tp.astype(np.int64), precision, confidence, dece, mce)


def plot_reliability(result: CalibrationResult, *, category: Any = None, ax: Any = None,
                     path: Any = None) -> Any:
    """The reliability diagram: precision per confidence bin against the diagonal.

    Bars (``gid="reliability:precision"``) span their bins with the bin's precision as
    height; points (``gid="reliability:confidence"``) mark each bin's mean confidence at the
    same height as a perfectly calibrated bar would have; the title gives D-ECE. Empty bins
    draw nothing. Needs matplotlib (``pip install 'deteval[plot]'``).

    Parameters
    ----------
    result : CalibrationResult
    category : int or str, optional
        One category's diagram (id or name); default all categories pooled.
    ax : matplotlib Axes, optional
        Draw there; default a new figure.
    path : str or PathLike, optional
        Save the figure (``.png`` or ``.svg``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..viz.plots import check_path, new_axes, save_figure

    if not isinstance(result, CalibrationResult):
        raise TypeError(f"result must be a CalibrationResult; got {type(result).__name__}")
    path = check_path(path)
    data = result.reliability(category)
    figure, ax = new_axes(ax, (5.0, 5.0))
    edges = np.asarray(data["edges"])
    count = np.asarray(data["count"])
    filled = count > 0
    precision = np.array([np.nan if v is None else v for v in data["precision"]])
    confidence = np.array([np.nan if v is None else v for v in data["confidence"]])
    lo, width = edges[:-1][filled], np.diff(edges)[filled]
    ax.plot([0, 1], [0, 1], color="0.5", linestyle="--", linewidth=1, gid="reliability:diagonal",
            label="perfect calibration")
    ax.bar(lo, precision[filled], width=width, align="edge", color="C0", alpha=0.8,
           edgecolor="white", gid="reliability:precision", label="precision")
    ax.plot(confidence[filled], confidence[filled], linestyle="none", marker="o", color="C3",
            markersize=4, gid="reliability:confidence", label="mean confidence")
    ax.set_xlim(min(0.0, edges[0]), max(1.0, edges[-1]))
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("confidence")
    ax.set_ylabel(f"precision (TP at IoU {result.iou_threshold:g})")
    dece = "n/a" if data["dece"] is None else f"{data['dece']:.4f}"
    ax.set_title(f"{data['name']}: D-ECE {dece} ({int(count.sum())} detections)")
    ax.legend(loc="upper left", fontsize="small", framealpha=0.9)
    save_figure(figure, path)
    return figure
