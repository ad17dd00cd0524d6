"""Seeded random CrowdPose datasets, and the reference evaluators.

``make_crowdpose_dataset(seed)`` returns ``(gt_dict, results)`` shaped like CrowdPose files:
persons with 14 keypoints, images carrying a ``crowdIndex``, annotations without ``area``
(mostly) or ``segmentation``. It reuses ``keypointgen.make_keypoints_dataset`` (17-keypoint
persons) and keeps the last 14 keypoints of every object and result, so it inherits that
generator's mix (v = 0/1/2, ``num_keypoints`` 0, objects whose keypoints are all v = 0,
crowd regions, results with and without ``bbox``, ties, more than 20 results per group,
results of an unknown category). On top of it:

* ``num_keypoints`` is mostly the count of v = 2 keypoints (CrowdPose counts only those), so
  objects whose keypoints are all v = 1 are ignored although they have labelled keypoints;
* ``crowdIndex`` values on and next to the split limits 0.2 and 0.8, and in between;
* results whose keypoint scores are all 0 (xtcocotools drops those results);
* sometimes a second person category (the easy / medium / hard APs then average over a
  category without ground truth in a split, -1 included);
* sometimes an ``area`` field (the CrowdPose rules do not read it).

``run_xtcocotools`` and ``run_faster_coco_eval`` run the references on files written to a
folder; both return the 9 stats and the ``precision`` array of the whole evaluation.
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from pathlib import Path

import numpy as np
from keypointgen import make_keypoints_dataset

__all__ = ["CROWDPOSE_SIGMAS", "crowdpose_oks", "make_crowdpose_dataset", "run_faster_coco_eval",
           "run_xtcocotools", "write_pair"]

#: CrowdPose's 14 sigmas as mmpose and faster-coco-eval's tests spell them (written out
#: here, independently of deteval's constant).
CROWDPOSE_SIGMAS = np.array([.79, .79, .72, .72, .62, .62, 1.07, 1.07, .87, .87, .89, .89,
                             .79, .79]) / 10.0

_NAMES = ["left_shoulder", "right_shoulder", "left_elbow", "right_elbow", "left_wrist",
          "right_wrist", "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle",
          "right_ankle", "head", "neck"]
_LIMITS = [0.0, 0.1999999, 0.2, 0.2000001, 0.5, 0.7999999, 0.8, 0.8000001, 1.0]


def make_crowdpose_dataset(seed: int, **options) -> tuple[dict, list[dict]]:
    """A CrowdPose-like GT dict and results list; ``options`` go to
    ``make_keypoints_dataset`` (the number of images, say)."""
    rng = np.random.default_rng(seed + 7_000_000)
    options.setdefault("n_categories", 2 if rng.random() < 0.25 else 1)
    gt, results = make_keypoints_dataset(seed, **options)
    count_mode = rng.random()
    for ann in gt["annotations"]:
        ann["keypoints"] = ann["keypoints"][9:]
        ann.pop("segmentation", None)
        if rng.random() < 0.85:
            ann.pop("area", None)
        v = np.asarray(ann["keypoints"][2::3])
        if ann["num_keypoints"] and count_mode < 0.8 and rng.random() < 0.9:
            ann["num_keypoints"] = int(np.count_nonzero(v == 2))
    for result in results:
        result["keypoints"] = result["keypoints"][9:]
        if rng.random() < 0.04:
            result["keypoints"][2::3] = [0] * 14
    for category in gt["categories"]:
        category["keypoints"] = list(_NAMES)
        category["skeleton"] = [[13, 14], [1, 14], [2, 14]]
    for image in gt["images"]:
        image["crowdIndex"] = (float(rng.choice(_LIMITS)) if rng.random() < 0.5
                               else round(float(rng.random()), 2))
    return gt, results


def write_pair(folder: Path, gt: dict, results: list[dict]) -> tuple[str, str]:
    """Write the pair as ``gt.json`` and ``dt.json`` (the references read files)."""
    gt_path, dt_path = Path(folder) / "gt.json", Path(folder) / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(results))
    return str(gt_path), str(dt_path)


def run_xtcocotools(gt_path: str, dt_path: str, sigmas=CROWDPOSE_SIGMAS, *,
                    evaluator_too: bool = False):
    """xtcocotools' ``COCOeval(..., 'keypoints_crowd', sigmas, use_area=False)``: mmpose's
    CrowdPose call. Returns (stats, precision of the whole evaluation), and with
    ``evaluator_too`` the evaluator's ``evalImgs`` of the whole evaluation (summarize
    replaces them with a split's) and its results (``cocoDt``)."""
    from xtcocotools.coco import COCO
    from xtcocotools.cocoeval import COCOeval

    # (xtcocotools' split opens the GT file again and never closes it: ResourceWarning.)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        coco_gt = COCO(gt_path)
        coco_dt = coco_gt.loadRes(dt_path)
        evaluator = COCOeval(coco_gt, coco_dt, "keypoints_crowd", np.asarray(sigmas),
                             use_area=False)
        evaluator.evaluate()
        evaluator.accumulate()
        precision = evaluator.eval["precision"].copy()
        eval_imgs = list(evaluator.evalImgs)
        evaluator.summarize()
    if evaluator_too:
        return (np.asarray(evaluator.stats, dtype=np.float64), precision, eval_imgs,
                coco_dt)
    return np.asarray(evaluator.stats, dtype=np.float64), precision


def run_faster_coco_eval(gt_path: str, dt_path: str, sigmas=CROWDPOSE_SIGMAS):
    """faster-coco-eval's ``COCOeval_faster(iouType="keypoints_crowd", use_area=False)``."""
    from faster_coco_eval import COCO, COCOeval_faster

    coco_gt = COCO(gt_path)
    coco_dt = coco_gt.loadRes(dt_path)
    evaluator = COCOeval_faster(coco_gt, coco_dt, iouType="keypoints_crowd",
                                kpt_oks_sigmas=np.asarray(sigmas), use_area=False,
                                print_function=lambda *args, **kwargs: None)
    evaluator.evaluate()
    evaluator.accumulate()
    precision = np.asarray(evaluator.eval["precision"]).copy()
    evaluator.summarize()
    return np.asarray(evaluator.all_stats, dtype=np.float64)[:9], precision


def crowdpose_oks(k: np.ndarray, obj: dict, sigmas: np.ndarray) -> float:
    """pycocotools' computeOks for one pair, the object area h * w * 0.53 of its box: over
    the visible keypoints, or (none visible) by the distance outside twice the box."""
    g = np.asarray(obj["keypoints"], float).reshape(-1, 3)
    x, y, w, h = obj["bbox"]
    visible = g[:, 2] > 0
    if visible.any():
        dx, dy = k[:, 0] - g[:, 0], k[:, 1] - g[:, 1]
    else:
        zero = np.zeros(len(k))
        dx = np.maximum(zero, x - w - k[:, 0]) + np.maximum(zero, k[:, 0] - (x + 2 * w))
        dy = np.maximum(zero, y - h - k[:, 1]) + np.maximum(zero, k[:, 1] - (y + 2 * h))
    e = (dx ** 2 + dy ** 2) / (2 * sigmas) ** 2 / (w * h * 0.53 + np.spacing(1)) / 2
    e = e[visible] if visible.any() else e
    return float(np.sum(np.exp(-e)) / len(e))
