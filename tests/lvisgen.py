"""Seeded random LVIS datasets that hit the federated rules, and an lvis-api runner.

``make_lvis_dataset(seed, ...)`` returns ``(gt_dict, results)``. It starts from a COCO
dataset of ``cocogen`` (boxes) or ``maskgen`` (masks), which already mixes tied scores,
shuffled results, zero-size boxes and empty masks (area 0: dropped by lvis-api), areas on
the size limits, ``ignore`` keys, crowd regions (which lvis-api treats as ordinary objects)
and results of a category unknown to the ground truth. On top of it, every dataset gets:

* a ``frequency`` per category (``r``, ``c``, ``f``; some groups left empty);
* per image ``neg_category_ids``: categories verified absent (mostly categories without
  objects in the image, sometimes one with objects), and ``not_exhaustive_category_ids``:
  some categories with objects and some without;
* extra results copied from the image's results under another category, so that results
  land in negative, unverified and not-exhaustive categories;
* optionally one image with more results than the per-image cut, scores drawn from a small
  pool, so that ties straddle the cut.

``run_lvis_api(gt, results, ...)`` runs lvis-api 0.5.3's ``LVISEval`` on deep copies, with
numpy 2's removed ``np.float`` alias restored for it and its ``logger.warn`` deprecation
silenced, and returns its ``results``, ``precision``, ``recall`` and printed lines.
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from cocogen import _random_box, _score, make_dataset

__all__ = ["LVISAPIResult", "make_lvis_dataset", "run_lvis_api"]

_POOL = (0.9, 0.8, 0.5, 0.3)


def _lvis_keys(rng: np.random.Generator, gt: dict) -> None:
    categories = [c["id"] for c in gt["categories"]]
    mode = int(rng.integers(4))
    for category in gt["categories"]:
        # mode 0: one group only (the two others are empty, APx = -1)
        category["frequency"] = ("rcf"[mode] if mode < 3 else str(rng.choice(list("rcf"))))
    present: dict[int, set[int]] = {}
    for ann in gt["annotations"]:
        present.setdefault(ann["image_id"], set()).add(ann["category_id"])
    for image in gt["images"]:
        here = present.get(image["id"], set())
        neg = [c for c in categories if (c not in here and rng.random() < 0.45)
               or (c in here and rng.random() < 0.05)]
        ne = [c for c in categories if rng.random() < (0.3 if c in here else 0.1)]
        image["neg_category_ids"] = [int(c) for c in rng.permutation(neg)]
        image["not_exhaustive_category_ids"] = [int(c) for c in rng.permutation(ne)]


def make_lvis_dataset(seed: int, *, segm: bool = False, p_crowded_image: float = 0.3,
                      crowded: int = 310, n_images: int | None = None,
                      n_categories: int | None = None) -> tuple[dict, list[dict]]:
    """A random LVIS ground-truth dict and results list (boxes, or masks with ``segm``).

    ``p_crowded_image``: probability that one image gets ``crowded`` more results (boxes
    only), scores from a four-value pool, so that the per-image cut falls inside ties.
    """
    rng = np.random.default_rng(seed)
    if segm:
        from maskgen import make_segm_dataset

        gt, results = make_segm_dataset(seed, n_images=n_images, n_categories=n_categories
                                        or int(rng.integers(2, 5)), p_many=0.0)
    else:
        gt, results = make_dataset(seed, n_images=n_images or int(rng.integers(2, 6)),
                                   n_categories=n_categories or int(rng.integers(2, 7)),
                                   max_dt=6)
    _lvis_keys(rng, gt)
    categories = [c["id"] for c in gt["categories"]]
    extra = []
    by_image: dict[int, list[dict]] = {}
    for result in results:
        by_image.setdefault(result["image_id"], []).append(result)
    for image_results in by_image.values():
        if rng.random() < 0.7:
            for _ in range(int(rng.integers(1, 6))):
                copied = dict(image_results[int(rng.integers(len(image_results)))])
                copied["category_id"] = int(rng.choice(categories))
                copied["score"] = float(rng.choice(_POOL)) if rng.random() < 0.5 else \
                    round(float(rng.random()), 2)
                extra.append(copied)
    if not segm and rng.random() < p_crowded_image:
        image = gt["images"][int(rng.integers(len(gt["images"])))]
        for _ in range(crowded):
            extra.append({"image_id": image["id"], "category_id": int(rng.choice(categories)),
                          "bbox": [float(v) for v in _random_box(rng, image["width"],
                                                                  image["height"])],
                          "score": _score(rng, 0) if rng.random() < 0.8 else float(rng.choice(
                              _POOL))})
    results = results + extra
    if not segm and rng.random() < 0.5:
        results = [results[int(i)] for i in rng.permutation(len(results))]
    return gt, results


@dataclass(frozen=True)
class LVISAPIResult:
    """What lvis-api computed."""

    results: dict
    precision: np.ndarray
    recall: np.ndarray
    summary: list[str]
    cat_ids: list
    evaluator: Any = None      # the LVISEval itself (its eval_imgs, lvis_dt)


def run_lvis_api(gt: dict, results: list[dict], *, iou_type: str = "bbox",
                 max_detections: int = 300, evaluator_class: Any = None) -> LVISAPIResult:
    """Run lvis-api's ``LVISEval`` (or ``evaluator_class``, a subclass of it) on deep copies
    of ``gt`` and ``results``."""
    if not hasattr(np, "float"):
        np.float = float  # lvis-api 0.5.3 predates numpy 2 (its accumulate uses np.float)
    from lvis import LVIS, LVISEval, LVISResults

    lvis_gt = LVIS.__new__(LVIS)   # LVIS() only reads a path; build it from the dict
    lvis_gt.logger = logging.getLogger("lvis")
    for name in ("lvis", "lvis.lvis", "lvis.results", "lvis.eval"):
        logging.getLogger(name).setLevel(logging.ERROR)   # its info and warn messages
    lvis_gt.dataset = copy.deepcopy(gt)
    lvis_gt._create_index()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # its logger.warn
        lvis_dt = LVISResults(lvis_gt, copy.deepcopy(results), max_dets=max_detections)
        evaluator = (evaluator_class or LVISEval)(lvis_gt, lvis_dt, iou_type=iou_type)
        evaluator.params.max_dets = max_detections
        evaluator.run()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        evaluator.print_results()
    return LVISAPIResult(results=dict(evaluator.results),
                         precision=evaluator.eval["precision"], recall=evaluator.eval["recall"],
                         summary=printed.getvalue().splitlines(),
                         cat_ids=list(evaluator.params.cat_ids), evaluator=evaluator)
