"""LRP: Localisation-Recall-Precision error (Oksuz et al., ECCV 2018; TPAMI 2021).

For the detections of one class above a score threshold, with ``NTP`` true positives (COCO
matching at IoU ``tau``), ``NFP`` false positives and ``NFN`` missed objects::

    LRP = (sum over TPs of (1 - IoU) / (1 - tau) + NFP + NFN) / (NTP + NFP + NFN)

Optimal LRP (oLRP) is its minimum over the score thresholds; its localisation, FP and FN
components, and the score where it is reached (the class's LRP-optimal threshold), are read
at that minimum; moLRP is the mean of oLRP over the classes. The numbers equal the authors'
reference, the ``LRP-Error`` fork of pycocotools (``COCOeval.accumulate``); the rules and its
quirks are in ``docs/diagnostics/lrp.md``.

Everything is read from an evaluation's match table at the single threshold ``tau``, no
matching of its own: :func:`lrp` evaluates with :func:`~deteval.evaluate_coco` for any
geometry (``iou_type``), :func:`lrp_of_result` reads a result of any protocol (COCO, VOC,
LVIS, CrowdPose, Open Images) with that protocol's decisions (``docs/diagnostics/lrp.md`` §5).

>>> import deteval
>>> gt = {"images": [{"id": 1, "width": 10, "height": 10}],
...       "categories": [{"id": 1, "name": "a"}],
...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4],
...                        "area": 16, "iscrowd": 0}]}
>>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 3], "score": 0.9},
...       {"image_id": 1, "category_id": 1, "bbox": [6, 6, 2, 2], "score": 0.8}]
>>> r = deteval.lrp(gt, dt)   # a TP of IoU 0.75, then an FP: LRP 0.25 / 0.5 = 0.5, then 0.75
>>> r.summary()["moLRP"], float(r.olrp_loc[0, 0]), float(r.thresholds[0, 0])
(0.5, 0.25, 0.9)
>>> r.lrp_error(0.5).tolist()
[0.75]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._arrays import ReadOnlyArrays, frozen
from .._validation import number
from ..matching import FP, TP

#: The summary's names, in the order of the LRP fork's stats[12:19].
LRP_STAT_NAMES = ("moLRP", "moLRP_loc", "moLRP_fp", "moLRP_fn", "moLRP_small", "moLRP_medium",
                  "moLRP_large")


@dataclass(frozen=True, eq=False)
class LRPResult(ReadOnlyArrays):
    """Result of :func:`lrp`. Per-class arrays have shape (K, A): category, area range.

    The conventions are the reference's: -1 for a category without objects in that range
    (left out of every mean), NaN for a component that is undefined (no true positive:
    localisation, FP and threshold are NaN while oLRP and the FN part are 1).

    Attributes
    ----------
    olrp, olrp_loc, olrp_fp, olrp_fn : ndarray, shape (K, A)
        Optimal LRP and its components at the optimum: mean ``1 - IoU`` of the true
        positives (not divided by ``1 - tau``), ``NFP / (NTP + NFP)``, ``NFN / NG``.
    thresholds : ndarray, shape (K, A)
        Class-wise LRP-optimal score thresholds.
    molrp : ndarray, shape (A,)
        Mean oLRP per area range (-1 if no class has objects).
    molrp_loc, molrp_fp, molrp_fn : ndarray, shape (A,)
    stats : ndarray, shape (4 + A - 1,)
        :attr:`stat_names`: the reference's summary (moLRP and its components over range
        "all", then moLRP of the size ranges; :data:`LRP_STAT_NAMES` for COCO's ranges).
    category_ids : ndarray, shape (K,)
    category_names : tuple of str
    area_labels : tuple of str
    settings : dict
        ``iou_type``, ``iou_threshold``, ``max_detections`` (and ``protocol`` for a result
        of another protocol than COCO).
    stat_names : tuple of str
        The names of ``stats``.
    """

    olrp: np.ndarray
    olrp_loc: np.ndarray
    olrp_fp: np.ndarray
    olrp_fn: np.ndarray
    thresholds: np.ndarray
    molrp: np.ndarray
    molrp_loc: np.ndarray
    molrp_fp: np.ndarray
    molrp_fn: np.ndarray
    stats: np.ndarray
    category_ids: np.ndarray
    category_names: tuple[str, ...]
    area_labels: tuple[str, ...]
    curve_scores: tuple = ()
    curve_lrp: tuple = ()
    n_positive: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    settings: dict = field(default_factory=dict)
    stat_names: tuple[str, ...] = LRP_STAT_NAMES

    def __post_init__(self) -> None:
        for name in ("olrp", "olrp_loc", "olrp_fp", "olrp_fn", "thresholds", "molrp",
                     "molrp_loc", "molrp_fp", "molrp_fn", "stats", "category_ids",
                     "n_positive"):
            object.__setattr__(self, name, frozen(getattr(self, name)))
        for name in ("curve_scores", "curve_lrp"):
            object.__setattr__(self, name, tuple(tuple(frozen(c) for c in row)
                                                 for row in getattr(self, name)))

    def lrp_error(self, score_threshold: float, area: str = "all") -> np.ndarray:
        """LRP of each category keeping the detections scoring ``>= score_threshold``.

        Returns shape (K,): 1 where no detection is kept, -1 for a category without objects.
        """
        s = number("score_threshold", score_threshold, low=-np.inf)
        a = self.area_labels.index(area)
        out = np.full(len(self.category_ids), -1.0)
        for k in range(len(out)):
            if self.n_positive[k, a] == 0:
                continue
            scores, values = self.curve_scores[k][a], self.curve_lrp[k][a]
            n = int(np.count_nonzero(scores >= s))   # scores are sorted descending
            out[k] = values[n - 1] if n else 1.0
        return frozen(out)

    def summary(self) -> dict[str, float]:
        """``{name: value}`` over :attr:`stat_names`."""
        return dict(zip(self.stat_names, self.stats.tolist()))

    def per_class(self, area: str = "all") -> list[dict[str, Any]]:
        """One row per category: oLRP, its components and the optimal threshold (None: NaN
        or undefined)."""
        a = self.area_labels.index(area)

        def num(v: float) -> float | None:
            return None if v != v or v == -1 else float(v)

        return [{"id": int(c), "name": n, "olrp": num(self.olrp[k, a]),
                 "olrp_loc": num(self.olrp_loc[k, a]), "olrp_fp": num(self.olrp_fp[k, a]),
                 "olrp_fn": num(self.olrp_fn[k, a]), "threshold": num(self.thresholds[k, a])}
                for k, (c, n) in enumerate(zip(self.category_ids.tolist(),
                                               self.category_names))]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready numbers."""
        return {"settings": dict(self.settings), "summary": self.summary(),
                "per_class": self.per_class()}


def lrp(gt: Any, dt: Any, *, iou_type: str = "bbox", iou_threshold: float = 0.5,
        max_detections: int | None = None, keypoint_sigmas: Any = None,
        dilation_ratio: float | None = None) -> LRPResult:
    """Optimal LRP, its components, class-wise optimal thresholds and moLRP.

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
        Ground truth, or a COCO instances file (or its dict).
    dt : Detections, str, PathLike, list, dict or ndarray
        Detections, or anything :func:`~deteval.io.coco.read_coco_results` reads, with the
        geometry ``iou_type`` compares.
    iou_type : {"bbox", "segm", "boundary", "keypoints", "polygon", "rotated"}
        What to compare, as :func:`~deteval.evaluate_coco`: the true positives and their
        IoU (OKS for keypoints) are that geometry's.
    iou_threshold : float, default 0.5
        ``tau``: the matching threshold (the reference uses ``iouThrs[0]``, 0.5).
    max_detections : int, optional
        Detections per image and category; default the reference's summary: 100, and 20
        for keypoints.
    keypoint_sigmas : sequence of float or dict, optional
        OKS sigmas (keypoints), as :class:`~deteval.COCOParams` takes them.
    dilation_ratio : float, optional
        Boundary IoU's boundary width (``iou_type="boundary"`` only, default 0.02; with
        another type a ValueError, as :func:`~deteval.evaluate_coco`).

    Returns
    -------
    LRPResult
        Area ranges as COCO's for that geometry (all, small, medium, large; keypoints: all,
        medium, large).
    """
    from .._similarity import check_iou_type
    from ..protocols.coco import evaluate_coco

    check_iou_type(iou_type)
    tau = _tau(iou_threshold)
    if max_detections is None:
        max_detections = 20 if iou_type == "keypoints" else 100
    if isinstance(max_detections, bool) or not isinstance(max_detections, (int, np.integer)) \
            or max_detections < 1:
        raise ValueError(f"max_detections must be an integer >= 1; got {max_detections!r}")
    m = int(max_detections)
    options = {name: value for name, value in (("dilation_ratio", dilation_ratio),
                                                ("keypoint_sigmas", keypoint_sigmas))
               if value is not None}
    result = evaluate_coco(gt, dt, iou_type=iou_type, iou_thresholds=(tau,),
                           max_detections=(m,) if iou_type == "keypoints" else (m, m, m),
                           **options)
    return lrp_of_result(result, tau, m)


def _tau(iou_threshold: Any) -> float:
    tau = number("iou_threshold", iou_threshold, low=0.0, high=1.0, low_open=True)
    if tau == 1.0:
        raise ValueError("iou_threshold must be below 1 (LRP divides by 1 - iou_threshold)")
    return tau


def lrp_of_result(result: Any, tau: float | None = None,
                  max_det: int | None = None) -> LRPResult:
    """LRP read from an evaluation's own match table, no second matching.

    Parameters
    ----------
    result : COCOResult, VOCResult, LVISResult, CrowdPoseResult or OpenImagesResult
        The result of :func:`~deteval.evaluate_coco`, :func:`~deteval.evaluate_voc`,
        :func:`~deteval.evaluate_lvis`, :func:`~deteval.evaluate_crowdpose` or
        :func:`~deteval.evaluate_openimages`. Its protocol decides which detection is a true
        positive, a false positive or left out, and with which IoU (OKS), and its order
        ranks them (``docs/diagnostics/lrp.md`` §5).
    tau : float, optional
        One of the result's IoU (OKS) thresholds; default its first (the reference's
        ``iouThrs[0]``).
    max_det : int, optional
        COCO only: detections per image and category (default the result's
        ``max_detections[-1]``). The other protocols keep their own cut.

    Returns
    -------
    LRPResult
        ``settings["protocol"]`` names the protocol. Area ranges: the protocol's (VOC and
        Open Images: one, "all"). Open Images' ``category_ids`` are the classes' positions
        in its label map.

    Raises
    ------
    TypeError
        Not such a result.
    ValueError
        No match table; ``tau`` not evaluated, or 1.
    """
    from ._decisions import decisions

    if tau is not None:
        tau = _tau(tau)
    d = decisions(result, tau, max_det=max_det)
    tau = _tau(d.iou_threshold)
    n_k, n_a = len(d.category_ids), len(d.area_labels)
    shape = (n_k, n_a)
    olrp, loc, fp_part, fn_part, thr = (np.full(shape, -1.0) for _ in range(5))
    curve_scores = [[np.zeros(0)] * n_a for _ in range(n_k)]
    curve_lrp = [[np.zeros(0)] * n_a for _ in range(n_k)]
    scores = d.scores[d.order]     # gathered once; each category reads a slice
    for a in range(n_a):
        status, iou = d.status[a, d.order], d.iou[a, d.order]
        for k in np.flatnonzero(d.n_positive[:, a]).tolist():
            lo, hi = d.bounds[k], d.bounds[k + 1]
            values = _optimal(status[lo:hi], iou[lo:hi], scores[lo:hi],
                              int(d.n_positive[k, a]), tau)
            olrp[k, a], loc[k, a], fp_part[k, a], fn_part[k, a], thr[k, a] = values[:5]
            curve_scores[k][a], curve_lrp[k][a] = scores[lo:hi], values[5]
    groups = _frequency_groups(d.frequency)
    means = [np.array([_mean(x[:, a]) for a in range(n_a)]) for x in (olrp, loc, fp_part,
                                                                        fn_part)]
    first = d.all_index
    extra = [means[0][a] for a in range(n_a) if a != first] if not groups else \
        [_mean(olrp[members, first]) for members in groups.values()]
    stats = np.array([m[first] for m in means] + extra)
    settings = {"protocol": d.protocol, "iou_type": d.iou_type, "iou_threshold": tau,
                "max_detections": d.max_detections}
    return LRPResult(olrp=olrp, olrp_loc=loc, olrp_fp=fp_part, olrp_fn=fn_part,
                     thresholds=thr, molrp=means[0], molrp_loc=means[1], molrp_fp=means[2],
                     molrp_fn=means[3], stats=stats, category_ids=d.category_ids,
                     category_names=d.category_names, area_labels=d.area_labels,
                     curve_scores=curve_scores, curve_lrp=curve_lrp, n_positive=d.n_positive,
                     settings=settings,
                     stat_names=stat_names(d.area_labels, frequency=bool(groups)))


def _frequency_groups(frequency: tuple[str, ...]) -> dict[str, np.ndarray]:
    """LVIS: the category positions of each frequency group, "r", "c", "f" (the fork's
    ``freq_groups``); empty for the other protocols."""
    if not frequency:
        return {}
    labels = np.asarray(frequency)
    return {f: np.flatnonzero(labels == f) for f in ("r", "c", "f")}


def stat_names(area_labels: tuple[str, ...], *, frequency: bool = False) -> tuple[str, ...]:
    """The summary's names: moLRP and its components over "all" (else the first range),
    then moLRP of each other range (:data:`LRP_STAT_NAMES` for COCO's four), or, for LVIS
    (``frequency``), of the rare, common and frequent categories (the fork's LVIS summary)."""
    if frequency:
        return LRP_STAT_NAMES[:4] + ("moLRP_r", "moLRP_c", "moLRP_f")
    first = "all" if "all" in area_labels else area_labels[0]
    return LRP_STAT_NAMES[:4] + tuple(f"moLRP_{x}" for x in area_labels if x != first)


def _optimal(status: np.ndarray, iou: np.ndarray, scores: np.ndarray, npig: int,
             tau: float) -> tuple:
    """The reference's oLRP block for one category and range, in its own arithmetic.

    Detections in accumulation order; ignored ones keep their place (they repeat the LRP of
    the one before). Returns oLRP, loc, FP, FN, threshold and the LRP curve."""
    tps, fps = status == TP, status == FP
    tp_num = np.cumsum(tps)
    fp_num = np.cumsum(fps)
    fn_num = npig - tp_num
    if len(tp_num) == 0 or tp_num[-1] == 0:
        curve = (fp_num + fn_num) / (tp_num + fp_num + fn_num)
        return 1.0, np.nan, np.nan, 1.0, np.nan, curve
    total_loc = tp_num - np.cumsum(iou * tps)
    with np.errstate(invalid="ignore", divide="ignore"):
        curve = (total_loc / (1 - tau) + fp_num + fn_num) / (tp_num + fp_num + fn_num)
        i = int(np.argmin(curve))
        return (float(curve[i]), float(total_loc[i] / tp_num[i]),
                float(fp_num[i] / (tp_num[i] + fp_num[i])), float(fn_num[i] / npig),
                float(scores[i]), curve)


def _mean(values: np.ndarray) -> float:
    """The reference's summary mean: NaN dropped, then the values > -1 (-1 if none)."""
    values = values[~np.isnan(values)]
    values = values[values > -1]
    return float(np.mean(values)) if len(values) else -1.0
