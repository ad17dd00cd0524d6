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


def _matched_values(matches, gt, ious):
    """The fork's ``dtIoUs``: for each matched detection (rows of ``matches``, detections by
    descending score as the rows of ``ious``) the value of its pair; ``gt`` in the order of
    ``ious``'s columns, already carrying ``_ignore`` (set by ``evaluateImg``)."""
    gtind = np.argsort([g["_ignore"] for g in gt], kind="mergesort")
    gt_ids = [gt[i]["id"] for i in gtind]
    values = np.zeros(matches.shape)
    for t in range(values.shape[0]):
        for d in range(values.shape[1]):
            gid = matches[t, d]
            if gid > 0:
                values[t, d] = ious[d, gtind[gt_ids.index(gid)]]
    return values


class LRPCOCOeval(COCOeval):
    def evaluateImg(self, imgId, catId, aRng, maxDet):  # noqa: N802, the pycocotools name
        out = super().evaluateImg(imgId, catId, aRng, maxDet)
        if out is None:
            return None
        # The fork's addition: the IoU of each detection's match at each threshold.
        out["dtIoUs"] = _matched_values(out["dtMatches"], self._gts[imgId, catId],
                                        self.ious[imgId, catId])
        return out


def lvis_evaluator_class():
    """lvis-api's ``LVISEval`` with the fork's ``dt_ious`` (its ``lvis-api/lvis/eval.py``
    adds exactly that to ``evaluate_img``, and the oLRP block to ``accumulate``)."""
    from lvis import LVISEval

    class LRPLVISEval(LVISEval):
        def evaluate_img(self, img_id, cat_id, area_rng):
            out = super().evaluate_img(img_id, cat_id, area_rng)
            if out is None:
                return None
            gt, _ = self._get_gt_dt(img_id, cat_id)
            out["dt_ious"] = _matched_values(out["dt_matches"], gt, self.ious[img_id, cat_id])
            return out

    return LRPLVISEval


def olrp_of_sequence(dtm, dtig, dtiou, scores_sorted, npig, tau):
    """The fork's block for one category and area range: (oLRP, loc, FP, FN, threshold) of
    the detections in accumulation order at the first threshold, plain loops."""
    n = len(dtm)
    tp_num, fp_num, total_iou = [], [], []
    tp = fp = 0
    iou_sum = 0.0
    for d in range(n):
        is_tp = bool(dtm[d]) and not bool(dtig[d])
        is_fp = not bool(dtm[d]) and not bool(dtig[d])
        tp += is_tp
        fp += is_fp
        iou_sum += dtiou[d] * is_tp
        tp_num.append(tp)
        fp_num.append(fp)
        total_iou.append(iou_sum)
    if tp == 0:
        return 1.0, math.nan, math.nan, 1.0, math.nan
    best, best_d = None, -1
    for d in range(n):
        total_loc = tp_num[d] - total_iou[d]
        fn = npig - tp_num[d]
        value = (total_loc / (1 - tau) + fp_num[d] + fn) / (tp_num[d] + fp_num[d] + fn)
        if best is None or value < best:
            best, best_d = value, d
    d = best_d
    total_loc = tp_num[d] - total_iou[d]
    fp_part = fp_num[d] / (tp_num[d] + fp_num[d]) if tp_num[d] + fp_num[d] else math.nan
    return (best, total_loc / tp_num[d] if tp_num[d] else math.nan, fp_part,
            (npig - tp_num[d]) / npig, scores_sorted[d])


_COCO_KEYS = ("dtScores", "dtMatches", "dtIgnore", "dtIoUs", "gtIgnore")
_LVIS_KEYS = ("dt_scores", "dt_matches", "dt_ignore", "dt_ious", "gt_ignore")


def _block(eval_imgs, k_n, a_n, i_n, keys, max_det, tau):
    """The fork's accumulation loop (pycocotools' and lvis-api's differ only in key names
    and in the maxDet slice, which lvis-api does not make)."""
    scores_key, matches_key, ignore_key, ious_key, gt_ignore_key = keys
    out = [np.full((k_n, a_n), -1.0) for _ in range(5)]
    for k in range(k_n):
        for a in range(a_n):
            images = [eval_imgs[k * a_n * i_n + a * i_n + i] for i in range(i_n)]
            images = [e for e in images if e is not None]
            if not images:
                continue
            scores = np.concatenate([e[scores_key][0:max_det] for e in images])
            inds = np.argsort(-scores, kind="mergesort")
            dtm, dtig, dtiou = (
                np.concatenate([e[key][:, 0:max_det] for e in images], axis=1)[:, inds]
                for key in (matches_key, ignore_key, ious_key))
            npig = int(np.count_nonzero(np.concatenate([e[gt_ignore_key] for e in images]) == 0))
            if npig == 0:
                continue
            values = olrp_of_sequence(dtm[0], dtig[0], dtiou[0], scores[inds], npig, tau)
            for array, value in zip(out, values):
                array[k, a] = value
    return tuple(out)


def lrp_block(evaluator, max_det=100):
    """The fork's oLRP computation, one category and area range at a time, plain loops."""
    p = evaluator.params
    return _block(evaluator.evalImgs, len(p.catIds), len(p.areaRng), len(p.imgIds),
                  _COCO_KEYS, max_det, p.iouThrs[0])


def lvis_lrp_block(evaluator):
    """The LVIS fork's oLRP block: every detection evaluated (the per-image cut was made on
    loading), categories and images in lvis-api's order."""
    p = evaluator.params
    return _block(evaluator.eval_imgs, len(p.cat_ids), len(p.area_rng), len(p.img_ids),
                  _LVIS_KEYS, None, p.iou_thrs[0])


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


def run_lvis_lrp_reference(gt: dict, results: list[dict], iou_type: str = "bbox") -> dict:
    """The LVIS fork's arrays and its summary (``results["oLRP"]``, ``"oLRP LOC"``, ``"oLRP
    FP"``, ``"oLRP FN"`` over "all", then ``"oLRPr"``, ``"oLRPc"``, ``"oLRPf"``)."""
    from lvisgen import run_lvis_api

    evaluator = run_lvis_api(gt, results, iou_type=iou_type,
                             evaluator_class=lvis_evaluator_class()).evaluator
    olrp, loc, fp_, fn_, thr = lvis_lrp_block(evaluator)
    a = evaluator.params.area_rng_lbl.index("all")
    stats = [summary_mean(x[:, a]) for x in (olrp, loc, fp_, fn_)]
    stats += [summary_mean(olrp[group, a]) for group in evaluator.freq_groups]
    return {"olrp": olrp, "olrp_loc": loc, "olrp_fp": fp_, "olrp_fn": fn_, "thresholds": thr,
            "stats": np.array(stats), "category_ids": list(evaluator.params.cat_ids)}
