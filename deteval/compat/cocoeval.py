"""``COCOeval`` and ``Params``: pycocotools' evaluation API on deteval's engine.

``evaluate()`` runs deteval's vectorised matcher (and, for many detections, its
accumulation) over the whole selection at once; ``accumulate()`` hands the arrays over, or
computes them from the match table when ``evaluate()`` saw too few detections to be worth it
(a batch of a training loop, whose records are usually merged and accumulated later), and
``summarize()`` prints pycocotools' twelve (keypoints: ten) lines character for character.
``evalImgs`` and ``ious`` are built from the match table the first time they are read,
with pycocotools' keys, values, dtypes and order, so a caller that never reads them never
pays for them.

A caller may also assign ``evalImgs`` (and ``_paramsEval``), as torchvision's
``CocoEvaluator`` does after gathering the records of several processes; ``accumulate()``
then works from those records, exactly as pycocotools does, with numpy over all of them at
once. The same happens when ``params`` were changed between ``evaluate()`` and
``accumulate()`` (or ``accumulate(p)`` is given other params). Code that calls pycocotools'
per-image internals (``_prepare``, ``computeIoU``, ``evaluateImg``; older copies of
torchvision's ``coco_eval.py``) gets a :class:`~deteval.compat.NotSupportedError`.

Every field of ``params`` is read when ``evaluate()`` runs, and normalised the way
pycocotools does it (``imgIds`` and, with ``useCats``, ``catIds`` made unique and sorted,
``maxDets`` sorted).

Differences from pycocotools: nothing the caller passed in is modified (pycocotools writes
``ignore`` and ``_ignore`` keys into the ground-truth records and replaces their
segmentations by RLE); ``_gts`` and ``_dts`` stay empty; errors say what is wrong instead of
failing inside the loops (bbox and segm need at least three ``maxDets``, which the summary
reads, and ``areaRngLbl`` one label per range when the summary must find repeated labels).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import time
from collections import defaultdict
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..protocols.coco import COCOParams, COCOResult, evaluate_coco, stat_specs, summarize_value
from . import _records
from .coco import COCO, NotSupportedError

__all__ = ["COCOeval", "Params"]

class _Pending:
    """Marks ``evalImgs`` / ``ious`` as not built yet; one instance, kept by copy and pickle."""

    def __reduce__(self) -> str:
        return "_PENDING"

    def __repr__(self) -> str:
        return "<not built yet>"


_PENDING = _Pending()

#: evaluate() accumulates at once when detections x this >= the number of entries of the
#: precision array (T x R x K x A x M); else accumulate() does it from the match table.
ACCUMULATE_AT_EVALUATE = 4


class Params:
    """pycocotools' evaluation parameters; every field may be reassigned before evaluate().

    Parameters
    ----------
    iouType : {"segm", "bbox", "keypoints"}
        ``"segm"`` by default, as in pycocotools.

    Attributes
    ----------
    imgIds, catIds : list
        Images and categories to evaluate (filled by :class:`COCOeval` from the ground truth).
    iouThrs : ndarray, shape (T,)
        ``np.linspace(.5, .95, 10)``.
    recThrs : ndarray, shape (R,)
        ``np.linspace(0, 1, 101)``.
    maxDets : list of int
        ``[1, 10, 100]`` (keypoints ``[20]``).
    areaRng : list of [lo, hi]
        all, small, medium, large (keypoints all, medium, large).
    areaRngLbl : list of str
    useCats : int
        1, or 0 to pool the categories (proposal recall).
    kpt_oks_sigmas : ndarray, shape (17,)
        Keypoints only (absent otherwise, as in pycocotools): the COCO person sigmas.
    iouType : str
    useSegm : None
        Deprecated: 1 means ``iouType = "segm"``, 0 ``"bbox"``.

    Examples
    --------
    >>> p = Params(iouType="bbox")
    >>> p.maxDets, p.areaRngLbl, hasattr(p, "kpt_oks_sigmas")
    ([1, 10, 100], ['all', 'small', 'medium', 'large'], False)
    """

    def setDetParams(self) -> None:  # noqa: N802 - pycocotools' name
        """The bbox / segm defaults."""
        self._common([1, 10, 100], [[0 ** 2, 1e5 ** 2], [0 ** 2, 32 ** 2], [32 ** 2, 96 ** 2],
                                    [96 ** 2, 1e5 ** 2]], ["all", "small", "medium", "large"])

    def setKpParams(self) -> None:  # noqa: N802 - pycocotools' name
        """The keypoint defaults (20 detections; all, medium and large)."""
        self._common([20], [[0 ** 2, 1e5 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]],
                     ["all", "medium", "large"])
        self.kpt_oks_sigmas = np.array([.26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62,
                                        1.07, 1.07, .87, .87, .89, .89]) / 10.0

    def _common(self, max_dets: list, area_rng: list, labels: list) -> None:
        self.imgIds: list = []
        self.catIds: list = []
        self.iouThrs = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
        self.recThrs = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
        self.maxDets = max_dets
        self.areaRng = area_rng
        self.areaRngLbl = labels
        self.useCats = 1

    def __init__(self, iouType: str = "segm") -> None:  # noqa: N803 - pycocotools' name
        if iouType in ("segm", "bbox"):
            self.setDetParams()
        elif iouType == "keypoints":
            self.setKpParams()
        else:
            raise ValueError(f"iouType not supported: {iouType!r}; choose 'segm', 'bbox' or "
                             "'keypoints'")
        self.iouType = iouType
        self.useSegm = None


def _engine_params(p: Params) -> COCOParams:
    """deteval's settings for pycocotools' (already normalised) params."""
    n_ranges = len(p.areaRng)
    labels = list(p.areaRngLbl)
    if len(labels) != n_ranges:   # labels only matter to summarize(), which reads them there
        labels = [f"range {i}" for i in range(n_ranges)]
    options = dict(
        iou_type=p.iouType, iou_thresholds=tuple(np.ravel(p.iouThrs).tolist()),
        recall_thresholds=tuple(np.ravel(p.recThrs).tolist()),
        max_detections=tuple(int(m) for m in p.maxDets),
        area_ranges=tuple(tuple(float(v) for v in r) for r in p.areaRng),
        area_labels=tuple(labels), use_categories=bool(p.useCats),
        image_ids=tuple(int(i) for i in p.imgIds), category_ids=tuple(int(c) for c in p.catIds))
    sigmas = getattr(p, "kpt_oks_sigmas", None)   # absent from bbox / segm Params
    if p.iouType == "keypoints" and sigmas is not None:
        options["keypoint_sigmas"] = np.asarray(sigmas, dtype=np.float64).tolist()
    try:
        return COCOParams(**options)
    except (TypeError, ValueError) as error:
        raise ValueError(f"COCOeval.params cannot be evaluated: {error}") from None


def _same(a: Any, b: Any) -> bool:
    try:
        return np.array_equal(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    except (TypeError, ValueError):
        return False


def _as_compat(coco: Any, role: str) -> COCO:
    """Our :class:`COCO` for ``coco``: itself, or one made from another API's ``dataset``."""
    if isinstance(coco, COCO):
        return coco
    if coco is None:
        raise ValueError(f"COCOeval.{role} is None: give the ground truth and the results "
                         "as COCO objects (COCOeval(cocoGt, cocoDt, iouType))")
    dataset = getattr(coco, "dataset", None)
    if not isinstance(dataset, dict):
        raise TypeError(f"COCOeval.{role} must be a COCO object; got {type(coco).__name__}")
    converted = COCO.__new__(COCO)
    converted._path, converted._columns, converted._results = None, {}, None
    converted.__dict__["dataset"] = dataset
    return converted


def _internal(name: str) -> NotSupportedError:
    return NotSupportedError(
        f"COCOeval.{name} (pycocotools' per-image internals) is not supported by "
        "deteval.compat, which evaluates every image at once: call evaluate() and read "
        "evalImgs / ious (older copies of torchvision's coco_eval.py, e.g. DETR's, call the "
        "internals; the current torchvision reference calls evaluate())")


class COCOeval:
    """pycocotools' ``COCOeval``: evaluate, accumulate, summarize.

    Parameters
    ----------
    cocoGt, cocoDt : COCO, optional
        Ground truth and results (:class:`deteval.compat.COCO`; a pycocotools ``COCO`` is
        read through its ``dataset``). Both may be assigned later.
    iouType : {"segm", "bbox", "keypoints"}
        ``"segm"`` by default, as in pycocotools.

    Attributes
    ----------
    params : Params
    evalImgs : list
        Per (category, area range, image) record or None, built on first read.
    ious : dict
        ``{(imgId, catId): (D, G) array or []}``, built on first read.
    eval : dict
        After ``accumulate()``: ``params``, ``counts`` [T, R, K, A, M], ``date``,
        ``precision`` (T, R, K, A, M), ``recall`` (T, K, A, M), ``scores`` (T, R, K, A, M).
    stats : ndarray, shape (12,) or (10,)
        After ``summarize()``.

    Examples
    --------
    >>> import contextlib, io
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "box"}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1,
    ...                        "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]}
    >>> out = io.StringIO()
    >>> with contextlib.redirect_stdout(out):
    ...     coco_gt = COCO(gt)
    ...     coco_dt = coco_gt.loadRes([{"image_id": 1, "category_id": 1,
    ...                                 "bbox": [0, 0, 10, 9], "score": 0.9}])
    ...     E = COCOeval(coco_gt, coco_dt, "bbox")
    ...     E.evaluate(); E.accumulate(); E.summarize()
    >>> print(out.getvalue().splitlines()[-12])
     Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.900
    >>> E.evalImgs[0]["dtMatches"][:, 0].tolist()[:2]
    [1.0, 1.0]
    """

    def __init__(self, cocoGt: Any = None, cocoDt: Any = None,  # noqa: N803
                 iouType: str = "segm") -> None:  # noqa: N803
        if not iouType:
            print("iouType not specified. use default iouType segm")
        self.cocoGt = cocoGt
        self.cocoDt = cocoDt
        self._evalImgs: Any = defaultdict(list)
        self._evalImgs_own = False           # True while evalImgs is the engine's (lazy)
        self._ious: Any = {}
        self.eval: dict = {}
        self._gts: Any = defaultdict(list)
        self._dts: Any = defaultdict(list)
        self.params = Params(iouType=iouType)
        self._paramsEval: Any = {}
        self._engine_params_eval: Any = None
        self.stats: Any = []
        self._result: COCOResult | None = None
        self._recall_thresholds: tuple = ()
        self._accumulated = False
        self._record_keys: dict = {}
        if cocoGt is not None:
            self.params.imgIds = sorted(cocoGt.getImgIds())
            self.params.catIds = sorted(cocoGt.getCatIds())

    # -- lazily built records -----------------------------------------------------------------

    @property
    def evalImgs(self) -> Any:  # noqa: N802 - pycocotools' name
        """Per (category, area range, image) records, as pycocotools' ``evaluateImg``."""
        if self._evalImgs is _PENDING:
            keys = self._record_keys
            self._evalImgs = _records.eval_imgs(
                self._result, image_ids=keys["image_ids"], category_ids=keys["category_ids"],
                area_ranges=keys["area_ranges"], max_det=keys["max_det"],
                numpy_scores=keys["numpy_scores"])
        return self._evalImgs

    @evalImgs.setter
    def evalImgs(self, value: Any) -> None:  # noqa: N802
        self._evalImgs = value
        self._evalImgs_own = False

    @property
    def ious(self) -> Any:
        """``{(imgId, catId): IoU (or OKS) matrix}``, detections by score, objects in order."""
        if self._ious is _PENDING:
            keys = self._record_keys
            cats = keys["category_ids"]
            self._ious = _records.ious(self._result, image_ids=keys["image_ids"],
                                       category_ids=cats)
        return self._ious

    @ious.setter
    def ious(self, value: Any) -> None:
        self._ious = value

    # -- evaluate / accumulate / summarize ----------------------------------------------------

    def evaluate(self) -> None:
        """Match every selected image and category (deteval's engine), as pycocotools does.

        Prints pycocotools' lines. Afterwards ``params`` are normalised and ``_paramsEval``
        is a copy of them.
        """
        tic = time.time()
        print("Running per image evaluation...")
        p = self.params
        if p.useSegm is not None:
            p.iouType = "segm" if p.useSegm == 1 else "bbox"
            print(f"useSegm (deprecated) is not None. Running {p.iouType} evaluation")
        print(f"Evaluate annotation type *{p.iouType}*")
        p.imgIds = list(np.unique(p.imgIds))
        if p.useCats:
            p.catIds = list(np.unique(p.catIds))
        p.maxDets = sorted(p.maxDets)
        self.params = p
        engine_params = _engine_params(p)
        gt = _as_compat(self.cocoGt, "cocoGt")
        dt = _as_compat(self.cocoDt, "cocoDt")
        dataset = gt._gt_columns(p.iouType)
        detections = dt._detection_columns(dataset, p.iouType)
        self.eval = {}
        # Accumulating costs a fixed part (the dense T x R x K x A x M arrays) and a part that
        # grows with the detections. With few detections (a batch of a training loop, whose
        # records are merged and accumulated later) the engine accumulates at one recall
        # threshold only, and accumulate() computes the real arrays from the match table,
        # which does not depend on them (see _records.accumulate_table).
        n_k = len(p.catIds) if p.useCats else 1
        dense = n_k * len(p.areaRng) * len(p.maxDets) * len(engine_params.iou_thresholds) * \
            len(engine_params.recall_thresholds)
        self._accumulated = len(detections) * ACCUMULATE_AT_EVALUATE >= dense
        self._result = evaluate_coco(dataset, detections, params=engine_params if
                                     self._accumulated else dataclasses.replace(
                                         engine_params, recall_thresholds=(0.0,)))
        self._recall_thresholds = engine_params.recall_thresholds
        self._record_keys = {
            "image_ids": list(p.imgIds),
            "category_ids": list(p.catIds) if p.useCats else [-1],
            "area_ranges": list(p.areaRng), "max_det": p.maxDets[-1],
            "numpy_scores": dt._results is not None and dt._results.scores_are_numpy}
        self._evalImgs, self._evalImgs_own, self._ious = _PENDING, True, _PENDING
        self._paramsEval = self._engine_params_eval = copy.deepcopy(self.params)
        print(f"DONE (t={time.time() - tic:0.2f}s).")

    def _n_records(self) -> int:
        if self._evalImgs is _PENDING:
            keys = self._record_keys
            return len(keys["image_ids"]) * len(keys["category_ids"]) * len(keys["area_ranges"])
        return len(self._evalImgs)

    def _fast_path(self, p: Params) -> bool:
        """Whether the engine's arrays are what pycocotools' accumulate(p) would compute."""
        pe = self._engine_params_eval
        if not self._evalImgs_own or self._paramsEval is not pe or self._result is None:
            return False
        return (bool(p.useCats) == bool(pe.useCats)
                and (not p.useCats or _same(p.catIds, pe.catIds))
                and all(_same(getattr(p, name), getattr(pe, name))
                        for name in ("imgIds", "iouThrs", "recThrs", "maxDets", "areaRng")))

    def accumulate(self, p: Params | None = None) -> None:
        """Precision, recall and scores per (threshold, recall point, category, area, maxDet).

        Parameters
        ----------
        p : Params, optional
            Params to accumulate for (default ``self.params``); settings that were not
            evaluated (see ``_paramsEval``) are skipped, as in pycocotools.
        """
        print("Accumulating evaluation results...")
        tic = time.time()
        if self._n_records() == 0:
            print("Please run evaluate() first")
        if not isinstance(self._paramsEval, Params) and not hasattr(self._paramsEval, "imgIds"):
            raise RuntimeError("COCOeval.accumulate(): nothing was evaluated; call evaluate() "
                               "first (or assign evalImgs and _paramsEval)")
        if p is None:
            p = self.params
        p.catIds = p.catIds if p.useCats == 1 else [-1]
        if self._fast_path(p) and self._accumulated:
            arrays = {name: np.array(getattr(self._result, name))   # writable copies
                      for name in ("precision", "recall", "scores")}
        elif self._fast_path(p):
            arrays = _records.accumulate_table(self._result, self._recall_thresholds)
        else:
            arrays = _records.accumulate_records(self.evalImgs, p, self._paramsEval)
        counts = [len(p.iouThrs), len(p.recThrs), len(p.catIds) if p.useCats else 1,
                  len(p.areaRng), len(p.maxDets)]
        self.eval = {"params": p, "counts": counts,
                     "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"), **arrays}
        print(f"DONE (t={time.time() - tic:0.2f}s).")

    def summarize(self) -> None:
        """Compute ``stats`` and print pycocotools' summary lines, character for character."""
        if not self.eval:
            raise RuntimeError("Please run accumulate() first")
        p = self.params
        if p.iouType not in ("segm", "bbox", "keypoints"):
            raise ValueError(f"summarize() knows iouType 'segm', 'bbox' and 'keypoints'; "
                             f"got {p.iouType!r}")
        if p.iouType != "keypoints" and len(p.maxDets) < 3:
            raise ValueError(f"summarize() reads maxDets[0], [1] and [2]; params.maxDets is "
                             f"{p.maxDets}")
        # deteval's summary functions, on pycocotools' field names.
        view = SimpleNamespace(iou_type=p.iouType, iou_thresholds=np.asarray(p.iouThrs),
                               area_labels=list(p.areaRngLbl), max_detections=list(p.maxDets))
        stats = np.array([summarize_value(self.eval["precision"] if is_ap
                                           else self.eval["recall"], view, iou, area, m)
                          for is_ap, iou, area, m in stat_specs(view)])
        lines = COCOResult.summary_lines.fget(SimpleNamespace(params=view, stats=stats))
        print("\n".join(lines))
        self.stats = stats

    def _prepare(self) -> None:
        raise _internal("_prepare")

    def computeIoU(self, imgId, catId):  # noqa: N802,N803 - pycocotools' names
        raise _internal("computeIoU")

    def computeOks(self, imgId, catId):  # noqa: N802,N803 - pycocotools' names
        raise _internal("computeOks")

    def evaluateImg(self, imgId, catId, aRng, maxDet):  # noqa: N802,N803 - pycocotools' names
        raise _internal("evaluateImg")

    def __str__(self) -> str:
        self.summarize()
        return ""
