"""A literal LRP reference written from the authors' ``LRP-Error`` fork of pycocotools.

The fork (github.com/kemaloksuz/LRP-Error, ``pycocotools/cocoeval.py``) changes
``evaluateImg`` only to record the IoU of each match, and adds an oLRP block to
``accumulate``. ``LRPCOCOeval`` below does the same on top of the installed pycocotools, with
plain loops: ``run_lrp_reference(gt_dict, results, iou_type)`` returns the fork's
per-(category, area) arrays (IoU threshold ``iouThrs[0]``, max detections ``maxDets[-1]``:
100, and 20 for keypoints) and its summary means.

The fork's ``evaluateImg`` records the matched value whatever the ``iouType`` (it is the
``iou`` of pycocotools' matching loop: box IoU, mask IoU or OKS), and its ``Params`` take
"bbox", "segm" and "keypoints" with pycocotools' settings; so driving this class with
pycocotools' own ``iouType`` is the fork for that geometry. Its summary for keypoints
(``_summarizeKps``, ``stats[10:16]``) is moLRP and the components over "all", then moLRP of
"medium" and "large" (keypoints have no "small" range).
"""

from __future__ import annotations

import contextlib
import copy
import io
import math

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval


class LRPCOCOeval(COCOeval):
    def evaluateImg(self, imgId, catId, aRng, maxDet):  # noqa: N802, the pycocotools name
        out = super().evaluateImg(imgId, catId, aRng, maxDet)
        if out is None:
            return None
        # The fork's addition: the IoU of each detection's match at each threshold.
        gt = self._gts[imgId, catId]
        dt = self._dts[imgId, catId]
        gtind = np.argsort([g["_ignore"] for g in gt], kind="mergesort")
        del dt
        ious = self.ious[imgId, catId]  # rows: detections sorted by score, as dtMatches
        gt_ids = [gt[i]["id"] for i in gtind]
        dt_ious = np.zeros(out["dtMatches"].shape)
        for t in range(dt_ious.shape[0]):
            for d in range(dt_ious.shape[1]):
                gid = out["dtMatches"][t, d]
                if gid > 0:
                    dt_ious[t, d] = ious[d, gtind[gt_ids.index(gid)]]
        out["dtIoUs"] = dt_ious
        return out


def lrp_block(evaluator, max_det=100):
    """The fork's oLRP computation, one category and area range at a time, plain loops."""
    p = evaluator.params
    k_n, a_n = len(p.catIds), len(p.areaRng)
    i_n = len(p.imgIds)
    shape = (k_n, a_n)
    olrp, loc, fp_, fn_, thr = (np.full(shape, -1.0) for _ in range(5))
    for k in range(k_n):
        for a in range(a_n):
            images = [evaluator.evalImgs[k * a_n * i_n + a * i_n + i] for i in range(i_n)]
            images = [e for e in images if e is not None]
            if not images:
                continue
            scores = np.concatenate([e["dtScores"][0:max_det] for e in images])
            inds = np.argsort(-scores, kind="mergesort")
            scores_sorted = scores[inds]
            dtm = np.concatenate([e["dtMatches"][:, 0:max_det] for e in images], axis=1)[:, inds]
            dtig = np.concatenate([e["dtIgnore"][:, 0:max_det] for e in images], axis=1)[:, inds]
            dtiou = np.concatenate([e["dtIoUs"][:, 0:max_det] for e in images], axis=1)[:, inds]
            gtig = np.concatenate([e["gtIgnore"] for e in images])
            npig = int(np.count_nonzero(gtig == 0))
            if npig == 0:
                continue
            n = dtm.shape[1]
            if n == 0:
                olrp[k, a], loc[k, a], fp_[k, a], fn_[k, a], thr[k, a] = (
                    1.0, math.nan, math.nan, 1.0, math.nan)
                continue
            tp_num, fp_num, total_iou = [], [], []
            tp = fp = 0
            iou_sum = 0.0
            for d in range(n):
                is_tp = bool(dtm[0, d]) and not bool(dtig[0, d])
                is_fp = not bool(dtm[0, d]) and not bool(dtig[0, d])
                tp += is_tp
                fp += is_fp
                iou_sum += dtiou[0, d] * is_tp
                tp_num.append(tp)
                fp_num.append(fp)
                total_iou.append(iou_sum)
            if tp == 0:
                olrp[k, a], loc[k, a], fp_[k, a], fn_[k, a], thr[k, a] = (
                    1.0, math.nan, math.nan, 1.0, math.nan)
                continue
            best, best_d = None, -1
            for d in range(n):
                total_loc = tp_num[d] - total_iou[d]
                fn = npig - tp_num[d]
                value = (total_loc / (1 - p.iouThrs[0]) + fp_num[d] + fn) / (
                    tp_num[d] + fp_num[d] + fn)
                if best is None or value < best:
                    best, best_d = value, d
            d = best_d
            total_loc = tp_num[d] - total_iou[d]
            olrp[k, a] = best
            loc[k, a] = total_loc / tp_num[d] if tp_num[d] else math.nan
            fp_[k, a] = fp_num[d] / (tp_num[d] + fp_num[d]) if tp_num[d] + fp_num[d] else math.nan
            fn_[k, a] = (npig - tp_num[d]) / npig
            thr[k, a] = scores_sorted[d]
    return olrp, loc, fp_, fn_, thr


def summary_mean(values):
    """The fork's ``_summarize`` for the LRP types: NaN dropped, then values > -1."""
    values = [v for v in values if not math.isnan(v)]
    values = [v for v in values if v > -1]
    return float(np.mean(values)) if values else -1.0


def run_lrp_reference(gt: dict, results: list[dict], iou_type: str = "bbox",
                      sigmas=None) -> dict:
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(copy.deepcopy(results))
        evaluator = LRPCOCOeval(coco_gt, coco_dt, iou_type)
        if sigmas is not None:
            evaluator.params.kpt_oks_sigmas = np.array(sigmas, dtype=np.float64)
        evaluator.evaluate()
    olrp, loc, fp_, fn_, thr = lrp_block(evaluator, evaluator.params.maxDets[-1])
    sizes = range(1, len(evaluator.params.areaRng))   # after "all": (small,) medium, large
    stats = [summary_mean(olrp[:, 0]), summary_mean(loc[:, 0]), summary_mean(fp_[:, 0]),
             summary_mean(fn_[:, 0])] + [summary_mean(olrp[:, a]) for a in sizes]
    return {"olrp": olrp, "olrp_loc": loc, "olrp_fp": fp_, "olrp_fn": fn_, "thresholds": thr,
            "stats": np.array(stats), "category_ids": list(evaluator.params.catIds)}
