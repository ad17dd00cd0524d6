"""Benchmark deteval against pycocotools, faster-coco-eval and hotcoco on the same files.

A deterministic, COCO-scale synthetic data set is generated once (seeded numpy) and cached:
by default 5,000 images, 80 categories, about 36k ground-truth objects with a COCO-like size
mix (~41% small, ~34% medium, ~24% large, ~1% crowd) and 100 detections per image (500k).
Every tool then evaluates the same ``gt.json`` and ``results.json`` in a fresh subprocess per
run, from the files to the 12 COCO bbox stats, so import cost and peak memory belong to one
tool alone. The report gives, per tool: the median and minimum end-to-end time (files to
stats, import excluded), the median of each phase the tool lets us separate, CPU time, peak
RSS, the ratio to deteval, and the largest difference between its 12 stats and pycocotools'.

``--case`` picks what is evaluated (default bbox, the set above; ``all`` runs the four in turn):

- ``segm``: 500 images, 80 classes, ~3.5k objects whose ground truth is polygons (16% in 2-3
  parts; crowd regions as uncompressed RLE; ``area`` the mask's pixel count) and 100 results
  per image as compressed RLE without ``bbox`` (perturbed copies of the objects' masks through
  ``pycocotools.mask.encode``, and new shapes), so that areas are mask areas. deteval runs
  ``evaluate_coco(..., iou_type="segm")``, the peers their ``"segm"`` evaluation; the report
  says whether deteval is at least 5x faster than pycocotools end to end (issue 3).
- ``keypoints``: 5,000 images, one person class with 17 keypoints, ~11k people (a third with
  ``num_keypoints`` 0: most small people, and crowds), at most 20 results per image with 17
  keypoints and no ``bbox``; iou_type / iouType ``"keypoints"``.
- ``rotated``: 1,000 images of 1024 x 1024, 15 classes, ~20k objects and 100 results per
  image, each record with ``rbox`` ``[cx, cy, w, h, angle_degrees]``, ``bbox`` its axis-aligned
  bounds and (ground truth) ``area`` = w * h. Only deteval evaluates rotated boxes
  (``iou_type="rotated"``); as a baseline for the IoU step alone, a naive Python loop of one
  shapely intersection per (detection, object) pair runs on a tenth of the images, next to
  deteval's ``PairIoU`` (what the protocol uses) on the same pairs.

For segm and keypoints, every tool's stats must agree with pycocotools' to 1e-12 (the report
prints a MISMATCH line otherwise; for bbox they are equal to the last bit).

Usage (from the repository root, with the dev venv)::

    python scripts/bench.py                        # full size, all four tools (~2 min)
    python scripts/bench.py --quick                # 500 images, every tool runs --repeat times
    python scripts/bench.py --tools deteval hotcoco --repeat 5
    python scripts/bench.py --images 2000 --dets-per-image 50 --seed 7 --data-dir /tmp/bench
    python scripts/bench.py --case segm            # or keypoints, rotated
    python scripts/bench.py --case all             # the four cases (~5 min, ~1.5 min more
                                                   # the first time, to generate the data)

Options of note: ``--repeat`` (default 3) runs per tool; ``--repeat-slow`` (default 1, or
``--repeat`` with ``--quick``) runs for the slow tools pycocotools and faster-coco-eval, whose
full-size runs take about 70 s and 13 s; ``--data-dir`` (default ./bench-data/) holds the
generated files (~50 MB, ~12 s to make), reused when the same parameters and seed were written
before. ``--images``, ``--categories`` and ``--dets-per-image`` replace the defaults of every
case run; ``--quick`` shrinks each case (bbox and keypoints 500 images, segm 100, rotated 200).

Peak memory is ``ru_maxrss`` of the child. Linux carries the parent's resident memory into a
child's ``ru_maxrss``, so the data is generated in a child too and this process stays ~20 MB;
the report prints that floor.

A tool that is not installed or fails is reported as such and the others still run.
deteval is imported from the source tree this script belongs to. Nothing here asserts on
timings: the figures depend on the machine, which is described at the top of the report.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Bump when the generator changes, so that cached files of an older generator are not reused.
GENERATOR_VERSION = 2

TOOLS = ("deteval", "hotcoco", "faster-coco-eval", "pycocotools")
SLOW_TOOLS = frozenset({"pycocotools", "faster-coco-eval"})
REFERENCE_TOOL = "pycocotools"
MODULES = {
    "deteval": "deteval",
    "hotcoco": "hotcoco",
    "faster-coco-eval": "faster_coco_eval",
    "pycocotools": "pycocotools",
}
PHASES = ("load_gt", "load_dt", "evaluate", "accumulate", "summarize")
STAT_NAMES = (
    "AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl",
)  # fmt: skip
KEYPOINT_STAT_NAMES = ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")
STATS_TOLERANCE = 1e-12  # largest difference to pycocotools' stats that counts as agreeing

#: Per case: the iou_type, default size (images, --quick images, classes, results per image).
CASES = {
    "bbox": {"iou_type": "bbox", "images": 5000, "quick": 500, "categories": 80, "dets": 100},
    "segm": {"iou_type": "segm", "images": 500, "quick": 100, "categories": 80, "dets": 100},
    "keypoints": {
        "iou_type": "keypoints",
        "images": 5000,
        "quick": 500,
        "categories": 1,
        "dets": 20,
    },
    "rotated": {"iou_type": "rotated", "images": 1000, "quick": 200, "categories": 15, "dets": 100},
}
STAT_NAMES_OF = {
    "bbox": STAT_NAMES, "segm": STAT_NAMES, "keypoints": KEYPOINT_STAT_NAMES,
    "rotated": STAT_NAMES,
}  # fmt: skip
#: End-to-end speed-up over pycocotools that issue 3 asks of deteval.
REQUIRED_SPEEDUP = {"segm": 5.0}
NAIVE_TOOL = "shapely-loop"
NO_ROTATED = "n/a: no rotated-box IoU (its iouType is bbox, segm or keypoints)"

# Share of small (area < 32^2), medium (< 96^2) and large objects, as in COCO val2017.
SIZE_MIX = (0.415, 0.345, 0.24)
CROWD_FRACTION = 0.01
MEAN_GT_PER_IMAGE = 7.3


# --------------------------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------------------------
# numpy is imported inside the generator functions so that a child process measures the import
# of numpy as part of the tool it runs, as a user of that tool would pay it.


def category_ids(n_categories: int) -> list[int]:
    """Non-contiguous category ids like COCO's (80 ids spread over 1..90): a gap after every 8."""
    return [1 + k + k // 8 for k in range(n_categories)]


def _category_weights(np, n_categories: int):
    """Zipf-like class frequencies: the first class is common (like 'person'), the tail rare."""
    weights = 1.0 / np.arange(1, n_categories + 1) ** 0.9
    return weights / weights.sum()


def _sample_boxes(np, rng, widths, heights):
    """One box per row inside an image of the row's size, with the COCO size mix.

    Returns ``(x, y, w, h, area)`` rounded like COCO annotations. ``area`` is the box area times
    a fill factor in (0.5, 1), as the area of a segmentation inside its box would be; it is the
    area that decides the small/medium/large class, as in pycocotools.
    """
    n = len(widths)
    kind = rng.choice(3, size=n, p=SIZE_MIX)
    large_cap = np.maximum(0.9 * np.sqrt(widths * heights), 97.0)
    low = np.array([8.0, 32.0, 96.0])[kind]
    high = np.where(kind == 0, 32.0, np.where(kind == 1, 96.0, large_cap))
    side = np.exp(rng.uniform(np.log(low), np.log(high)))  # sqrt of the segmentation area
    fill = rng.uniform(0.5, 1.0, n)
    aspect = np.exp(rng.normal(0.0, 0.5, n))
    box_area = side**2 / fill
    w = np.clip(np.sqrt(box_area * aspect), 1.0, widths)
    h = np.clip(np.sqrt(box_area / aspect), 1.0, heights)
    x = np.round(rng.random(n) * (widths - w), 2)
    y = np.round(rng.random(n) * (heights - h), 2)
    w = np.minimum(np.round(w, 2), widths - x)
    h = np.minimum(np.round(h, 2), heights - y)
    area = np.round(fill * w * h, 4)
    return x, y, w, h, area


def _rectangle(x: float, y: float, w: float, h: float) -> list[float]:
    """The polygon of a box, as a stand-in segmentation (bbox evaluation never reads it)."""
    x2, y2 = round(x + w, 2), round(y + h, 2)
    return [x, y, x2, y, x2, y2, x, y2]


def _image_sizes(np, rng, n_images: int):
    """COCO-like image sizes: mostly 640 on the long side, 4:3 and similar ratios, 70% landscape.

    Returns ``(widths, heights)``, int64 arrays of shape (n_images,).
    """
    long_side = np.where(rng.random(n_images) < 0.9, 640, rng.integers(320, 640, n_images))
    ratio = rng.choice([0.75, 0.667, 0.5625, 0.8, 1.0], p=[0.5, 0.2, 0.1, 0.1, 0.1], size=n_images)
    short_side = np.round(long_side * ratio * rng.uniform(0.9, 1.0, n_images)).astype(np.int64)
    landscape = rng.random(n_images) < 0.7
    return np.where(landscape, long_side, short_side), np.where(landscape, short_side, long_side)


def make_gt(seed: int, n_images: int, n_categories: int) -> dict:
    """A COCO ground-truth dict: images of COCO-like sizes, categories, ~7.3 objects per image."""
    import numpy as np

    rng = np.random.default_rng([seed, 0])
    img_w, img_h = _image_sizes(np, rng, n_images)
    image_ids = np.arange(1, n_images + 1)

    # Objects per image: overdispersed (gamma-Poisson) around the COCO mean, with empty images.
    rate = rng.gamma(1.5, MEAN_GT_PER_IMAGE / 1.5, n_images)
    counts = np.minimum(rng.poisson(rate), 80)
    image_of = np.repeat(np.arange(n_images), counts)
    n_gt = len(image_of)
    cat_ids = np.array(category_ids(n_categories))
    cats = cat_ids[rng.choice(n_categories, size=n_gt, p=_category_weights(np, n_categories))]
    widths = img_w[image_of].astype(np.float64)
    heights = img_h[image_of].astype(np.float64)
    x, y, w, h, area = _sample_boxes(np, rng, widths, heights)
    crowd = (rng.random(n_gt) < CROWD_FRACTION).astype(np.int64)

    images = [
        {"id": i, "width": wd, "height": ht, "file_name": f"{i:012d}.jpg"}
        for i, wd, ht in zip(image_ids.tolist(), img_w.tolist(), img_h.tolist(), strict=True)
    ]
    annotations = [
        {
            "id": ann_id,
            "image_id": img_id,
            "category_id": cat,
            "bbox": [bx, by, bw, bh],
            "area": ar,
            "iscrowd": cr,
            "segmentation": [_rectangle(bx, by, bw, bh)],
        }
        for ann_id, img_id, cat, bx, by, bw, bh, ar, cr in zip(
            range(1, n_gt + 1),
            image_ids[image_of].tolist(),
            cats.tolist(),
            x.tolist(),
            y.tolist(),
            w.tolist(),
            h.tolist(),
            area.tolist(),
            crowd.tolist(),
            strict=True,
        )
    ]
    categories = [
        {"id": c, "name": f"class_{c}", "supercategory": f"group_{(c - 1) // 10}"}
        for c in cat_ids.tolist()
    ]
    return {
        "info": {"description": f"deteval synthetic benchmark set, seed {seed}"},
        "images": images,
        "annotations": annotations,
        "categories": categories,
    }


def _jitter(np, rng, x, y, w, h, sigma):
    """Boxes moved and rescaled by a relative noise ``sigma``: small sigma, high IoU."""
    cx = x + w / 2 + rng.normal(0.0, 1.0, len(x)) * sigma * w
    cy = y + h / 2 + rng.normal(0.0, 1.0, len(x)) * sigma * h
    nw = w * np.exp(rng.normal(0.0, 1.0, len(x)) * sigma)
    nh = h * np.exp(rng.normal(0.0, 1.0, len(x)) * sigma)
    return cx - nw / 2, cy - nh / 2, nw, nh


def make_results(gt: dict, seed: int, dets_per_image: int) -> list[dict]:
    """Detections for ``gt``: ``dets_per_image`` per image, sorted by image then score.

    Per ground-truth object 0-3 jittered copies (IoU from ~0.95 down to ~0.1) with high scores,
    some copies with a wrong class and middling scores, and background boxes with low scores
    filling the image's quota. Scores are in (0, 1); a third are rounded to 2 or 3 decimals, so
    there are many ties. Boxes are clipped to the image, xywh rounded to 2 decimals.
    """
    import numpy as np

    rng = np.random.default_rng([seed, 1])
    n_images = len(gt["images"])
    image_index = {img["id"]: k for k, img in enumerate(gt["images"])}
    img_w = np.array([img["width"] for img in gt["images"]], dtype=np.float64)
    img_h = np.array([img["height"] for img in gt["images"]], dtype=np.float64)
    cat_ids = np.array([c["id"] for c in gt["categories"]])
    n_categories = len(cat_ids)
    cat_index = {c: k for k, c in enumerate(cat_ids.tolist())}
    anns = gt["annotations"]
    g_img = np.array([image_index[a["image_id"]] for a in anns], dtype=np.int64)
    g_cat = np.array([cat_index[a["category_id"]] for a in anns], dtype=np.int64)
    g_box = np.array([a["bbox"] for a in anns], dtype=np.float64).reshape(-1, 4)

    # Near-duplicates of ground truth, right class.
    copies = rng.choice(4, size=len(anns), p=[0.15, 0.6, 0.2, 0.05])
    src = np.repeat(np.arange(len(anns)), copies)
    sigma = np.exp(rng.uniform(np.log(0.02), np.log(0.4), len(src)))
    tp_box = _jitter(np, rng, *g_box[src].T, sigma)
    tp_score = rng.beta(4.0, 1.5, len(src)) * np.exp(-2.0 * sigma)
    tp_cat = g_cat[src]

    # Copies with a wrong class.
    wrong = np.flatnonzero(rng.random(len(anns)) < 0.12)
    wr_sigma = np.exp(rng.uniform(np.log(0.02), np.log(0.3), len(wrong)))
    wr_box = _jitter(np, rng, *g_box[wrong].T, wr_sigma)
    wr_score = rng.beta(2.0, 4.0, len(wrong))
    wr_cat = (g_cat[wrong] + rng.integers(1, max(n_categories, 2), len(wrong))) % n_categories

    obj_img = np.concatenate([g_img[src], g_img[wrong]])
    obj_box = np.concatenate([np.stack(tp_box, 1), np.stack(wr_box, 1)])
    obj_score = np.concatenate([tp_score, wr_score])
    obj_cat = np.concatenate([tp_cat, wr_cat])
    # At most dets_per_image per image: keep the first ones of each image.
    order = np.argsort(obj_img, kind="stable")
    rank_in_image = np.arange(len(order)) - np.searchsorted(obj_img[order], obj_img[order])
    kept = order[rank_in_image < dets_per_image]
    obj_img, obj_box, obj_score, obj_cat = (a[kept] for a in (obj_img, obj_box, obj_score, obj_cat))

    # Background boxes fill each image up to dets_per_image. As from a real detector, their
    # classes are few per image (the image's own classes and 4 confusers of its own), and half
    # of them are loose boxes around an object of the image (IoU mostly below 0.5).
    n_background = dets_per_image - np.bincount(obj_img, minlength=n_images)
    bg_img = np.repeat(np.arange(n_images), n_background)
    n_bg = len(bg_img)
    bx, by, bw, bh, _ = _sample_boxes(np, rng, img_w[bg_img], img_h[bg_img])
    bg_box = np.stack([bx, by, bw, bh], 1)
    # A random object of the detection's image; a dummy one (index len(anns)) for empty images.
    by_image = np.append(np.argsort(g_img, kind="stable"), len(anns))
    obj_boxes = np.vstack([g_box, [[0.0, 0.0, 1.0, 1.0]]])
    obj_cats = np.append(g_cat, 0)
    gt_count = np.bincount(g_img, minlength=n_images)[bg_img]
    has_gt = gt_count > 0
    slot = np.searchsorted(g_img[by_image[:-1]], bg_img) + (rng.random(n_bg) * gt_count).astype(int)
    near_gt = by_image[slot]
    loose = has_gt & (rng.random(n_bg) < 0.5)
    loose_sigma = np.exp(rng.uniform(np.log(0.3), np.log(0.8), n_bg))
    loose_box = np.stack(_jitter(np, rng, *obj_boxes[near_gt].T, loose_sigma), 1)
    bg_box = np.where(loose[:, None], loose_box, bg_box)
    confusers = rng.choice(n_categories, size=(n_images, 4), p=_category_weights(np, n_categories))
    own_class = has_gt & (rng.random(n_bg) < np.where(loose, 0.7, 0.4))
    bg_cat = np.where(own_class, obj_cats[near_gt], confusers[bg_img, rng.integers(0, 4, n_bg)])
    bg_score = rng.beta(1.0, 6.0, n_bg)

    det_img = np.concatenate([obj_img, bg_img])
    box = np.concatenate([obj_box, bg_box])
    score = np.concatenate([obj_score, bg_score])
    cat = np.concatenate([obj_cat, bg_cat])

    # Clip to the image, at least one pixel wide and high, two decimals like most dumps.
    width, height = img_w[det_img], img_h[det_img]
    x1 = np.clip(box[:, 0], 0.0, width - 1.0)
    y1 = np.clip(box[:, 1], 0.0, height - 1.0)
    x2 = np.clip(box[:, 0] + box[:, 2], x1 + 1.0, width)
    y2 = np.clip(box[:, 1] + box[:, 3], y1 + 1.0, height)
    x1, y1 = np.round(x1, 2), np.round(y1, 2)
    w = np.minimum(np.round(x2 - x1, 2), width - x1)
    h = np.minimum(np.round(y2 - y1, 2), height - y1)

    # Scores: ties from coarse rounding; strictly inside (0, 1).
    coarse = rng.random(len(score))
    decimals = np.where(coarse < 0.2, 2, np.where(coarse < 0.33, 3, 5))
    score = np.round(score * 10.0**decimals) / 10.0**decimals
    score = np.clip(score, 0.001, 0.999)

    order = np.lexsort((-score, det_img))
    image_ids = np.array([img["id"] for img in gt["images"]])
    return [
        {"image_id": i, "category_id": c, "bbox": [bx, by, bw, bh], "score": s}
        for i, c, bx, by, bw, bh, s in zip(
            image_ids[det_img[order]].tolist(),
            cat_ids[cat[order]].tolist(),
            x1[order].tolist(),
            y1[order].tolist(),
            w[order].tolist(),
            h[order].tolist(),
            score[order].tolist(),
            strict=True,
        )
    ]


# --------------------------------------------------------------------------------------------
# Synthetic data of the other cases: segm, keypoints, rotated
# --------------------------------------------------------------------------------------------
# Each case has its own seeded streams ([seed, 10 + k]), so the bbox files above do not change.

SEGM_MULTIPART = 0.15  # objects drawn in 2-3 separate polygons (as occlusion splits COCO's)
SEGM_CROWD = 0.015  # crowd regions, stored as uncompressed RLE as in COCO


def _categories(np, n_categories: int) -> tuple[list[dict], object]:
    cat_ids = np.array(category_ids(n_categories))
    categories = [
        {"id": c, "name": f"class_{c}", "supercategory": f"group_{(c - 1) // 10}"}
        for c in cat_ids.tolist()
    ]
    return categories, cat_ids


def _image_records(np, rng, n_images: int):
    img_w, img_h = _image_sizes(np, rng, n_images)
    images = [
        {"id": i + 1, "width": wd, "height": ht, "file_name": f"{i + 1:012d}.jpg"}
        for i, wd, ht in zip(range(n_images), img_w.tolist(), img_h.tolist(), strict=True)
    ]
    return images, img_w, img_h


def _objects_per_image(np, rng, n_images: int, mean: float, cap: int):
    """Overdispersed (gamma-Poisson) object counts around ``mean``, with empty images."""
    return np.minimum(rng.poisson(rng.gamma(1.5, mean / 1.5, n_images)), cap)


def _star_polygon(np, rng, x: float, y: float, w: float, h: float) -> list[float]:
    """``[x1, y1, x2, y2, ...]`` of a star-shaped polygon inside the box: vertices at sorted
    random angles around the centre, at 55-100% of the half-extent (more for large objects)."""
    n = int(np.clip(round(4.0 * (w * h) ** 0.2), 6, 40))
    angles = np.sort(rng.uniform(0.0, 2.0 * np.pi, n))
    radius = rng.uniform(0.55, 1.0, n)
    px = np.clip(x + w / 2 * (1.0 + radius * np.cos(angles)), x, x + w)
    py = np.clip(y + h / 2 * (1.0 + radius * np.sin(angles)), y, y + h)
    return np.round(np.column_stack([px, py]).ravel(), 2).tolist()


def _polygon_parts(np, rng, x: float, y: float, w: float, h: float, parts: int) -> list:
    """A polygon segmentation of 1-3 parts: the box is cut across its long side into slices
    with gaps, one star polygon per slice."""
    if parts == 1:
        return [_star_polygon(np, rng, x, y, w, h)]
    gap = 0.08
    out = []
    if w >= h:
        step = w * (1.0 - gap * (parts - 1)) / parts
        for k in range(parts):
            out.append(_star_polygon(np, rng, x + k * (step + gap * w), y, step, h))
    else:
        step = h * (1.0 - gap * (parts - 1)) / parts
        for k in range(parts):
            out.append(_star_polygon(np, rng, x, y + k * (step + gap * h), w, step))
    return out


def _uncompressed_rle(np, mask) -> list[int]:
    """Run lengths of a (h, w) 0/1 mask in column-major order, starting with a run of 0s."""
    flat = np.asarray(mask, dtype=np.uint8).ravel(order="F")
    edges = np.flatnonzero(np.diff(flat)) + 1
    runs = np.diff(np.concatenate([[0], edges, [len(flat)]])).tolist()
    return [0, *runs] if len(flat) and flat[0] else runs


def make_segm_gt(seed: int, n_images: int, n_categories: int) -> dict:
    """A COCO instances dict with polygon segmentations (some in several parts) and crowd
    regions as uncompressed RLE; ``area`` is the rasterised mask's pixel count, as in COCO."""
    import numpy as np
    from pycocotools import mask as mask_utils

    rng = np.random.default_rng([seed, 10])
    images, img_w, img_h = _image_records(np, rng, n_images)
    counts = _objects_per_image(np, rng, n_images, MEAN_GT_PER_IMAGE, 80)
    image_of = np.repeat(np.arange(n_images), counts)
    n_gt = len(image_of)
    categories, cat_ids = _categories(np, n_categories)
    cats = cat_ids[rng.choice(n_categories, size=n_gt, p=_category_weights(np, n_categories))]
    widths = img_w[image_of].astype(np.float64)
    heights = img_h[image_of].astype(np.float64)
    x, y, w, h, _ = _sample_boxes(np, rng, widths, heights)
    crowd = rng.random(n_gt) < SEGM_CROWD
    parts = np.where(rng.random(n_gt) < SEGM_MULTIPART, rng.integers(2, 4, n_gt), 1)

    annotations = []
    for k in range(n_gt):
        ih, iw = int(heights[k]), int(widths[k])
        polygons = _polygon_parts(np, rng, x[k], y[k], w[k], h[k], int(parts[k]))
        rle = mask_utils.merge(mask_utils.frPyObjects(polygons, ih, iw))
        if crowd[k]:
            segmentation = {
                "counts": _uncompressed_rle(np, mask_utils.decode(rle)),
                "size": [ih, iw],
            }
        else:
            segmentation = polygons
        flat = np.concatenate([np.asarray(p) for p in polygons])
        x0, y0 = float(flat[0::2].min()), float(flat[1::2].min())
        x1, y1 = float(flat[0::2].max()), float(flat[1::2].max())
        annotations.append(
            {
                "id": k + 1,
                "image_id": int(image_of[k]) + 1,
                "category_id": int(cats[k]),
                "bbox": [x0, y0, round(x1 - x0, 2), round(y1 - y0, 2)],
                "area": float(mask_utils.area(rle)),
                "iscrowd": int(crowd[k]),
                "segmentation": segmentation,
            }
        )
    return {
        "info": {"description": f"deteval synthetic segm benchmark set, seed {seed}"},
        "images": images,
        "annotations": annotations,
        "categories": categories,
    }


def _grow(np, mask, steps: int):
    """Dilate (steps > 0) or erode (steps < 0) a 0/1 crop by ``|steps|`` 4-neighbour steps."""
    out = mask.astype(bool)
    for _ in range(abs(steps)):
        src = out if steps > 0 else ~out
        grown = src.copy()
        grown[1:] |= src[:-1]
        grown[:-1] |= src[1:]
        grown[:, 1:] |= src[:, :-1]
        grown[:, :-1] |= src[:, 1:]
        out = grown if steps > 0 else ~grown
    return out


def _paste_perturbed(np, rng, source, box, sigma: float, out) -> bool:
    """Paste into ``out`` (h, w) a copy of the mask ``source`` (h, w) moved and rescaled by a
    relative noise ``sigma`` and its border roughened; False if nothing of it is left."""
    height, width = out.shape
    x0, y0, bw, bh = (int(v) for v in box)
    if bw == 0 or bh == 0:
        return False
    crop = source[y0 : y0 + bh, x0 : x0 + bw]
    sx, sy = np.exp(rng.normal(0.0, sigma, 2))
    nw, nh = max(1, round(bw * sx)), max(1, round(bh * sy))
    cols = np.minimum((np.arange(nw) / sx).astype(np.int64), bw - 1)
    rows = np.minimum((np.arange(nh) / sy).astype(np.int64), bh - 1)
    crop = crop[rows][:, cols]
    steps = int(rng.integers(-2, 3)) if min(nw, nh) > 6 else 0
    if steps:
        crop = _grow(np, np.pad(crop, abs(steps)), steps)
        nh, nw = crop.shape
    cx = x0 + bw / 2 + rng.normal() * sigma * bw
    cy = y0 + bh / 2 + rng.normal() * sigma * bh
    left, top = round(cx - nw / 2), round(cy - nh / 2)
    xa, ya = max(left, 0), max(top, 0)
    xb, yb = min(left + nw, width), min(top + nh, height)
    if xb <= xa or yb <= ya:
        return False
    out[ya:yb, xa:xb] = crop[ya - top : yb - top, xa - left : xb - left]
    return bool(out[ya:yb, xa:xb].any())


def _plan_detections(np, rng, g_img, g_cat, n_images: int, n_categories: int, per_image: int):
    """Which detections to make, as the bbox generator plans them (without the boxes).

    Returns ``(det_img, source, sigma, score, cat)``: ``source`` is the ground-truth row a
    detection copies (-1 for a detection drawn anew) and ``sigma`` its relative noise. Per
    object 0-3 close copies with high scores, 12% copies with a wrong class, then per image
    loose copies of its objects and new shapes with low scores up to ``per_image``.
    """
    n_gt = len(g_img)
    copies = rng.choice(4, size=n_gt, p=[0.15, 0.6, 0.2, 0.05])
    src = np.repeat(np.arange(n_gt), copies)
    sigma = np.exp(rng.uniform(np.log(0.02), np.log(0.4), len(src)))
    tp_score = rng.beta(4.0, 1.5, len(src)) * np.exp(-2.0 * sigma)
    wrong = np.flatnonzero(rng.random(n_gt) < 0.12)
    wr_sigma = np.exp(rng.uniform(np.log(0.02), np.log(0.3), len(wrong)))
    wr_score = rng.beta(2.0, 4.0, len(wrong))
    wr_cat = (g_cat[wrong] + rng.integers(1, max(n_categories, 2), len(wrong))) % n_categories

    obj_img = np.concatenate([g_img[src], g_img[wrong]])
    obj_src = np.concatenate([src, wrong])
    obj_sigma = np.concatenate([sigma, wr_sigma])
    obj_score = np.concatenate([tp_score, wr_score])
    obj_cat = np.concatenate([g_cat[src], wr_cat])
    order = np.argsort(obj_img, kind="stable")
    rank = np.arange(len(order)) - np.searchsorted(obj_img[order], obj_img[order])
    kept = order[rank < per_image]
    obj_img, obj_src, obj_sigma, obj_score, obj_cat = (
        a[kept] for a in (obj_img, obj_src, obj_sigma, obj_score, obj_cat)
    )

    n_background = np.maximum(per_image - np.bincount(obj_img, minlength=n_images), 0)
    bg_img = np.repeat(np.arange(n_images), n_background)
    n_bg = len(bg_img)
    by_image = np.argsort(g_img, kind="stable")
    gt_count = np.bincount(g_img, minlength=n_images)[bg_img]
    has_gt = gt_count > 0
    first = np.searchsorted(g_img[by_image], bg_img)
    slot = np.minimum(first + (rng.random(n_bg) * gt_count).astype(int), max(n_gt - 1, 0))
    near_gt = by_image[slot] if n_gt else np.zeros(n_bg, dtype=np.int64)
    loose = has_gt & (rng.random(n_bg) < 0.5)
    bg_sigma = np.exp(rng.uniform(np.log(0.3), np.log(0.8), n_bg))
    confusers = rng.choice(n_categories, size=(n_images, 4), p=_category_weights(np, n_categories))
    own_class = has_gt & (rng.random(n_bg) < np.where(loose, 0.7, 0.4))
    near_cat = g_cat[near_gt] if n_gt else np.zeros(n_bg, dtype=np.int64)
    bg_cat = np.where(own_class, near_cat, confusers[bg_img, rng.integers(0, 4, n_bg)])
    bg_score = rng.beta(1.0, 6.0, n_bg)

    det_img = np.concatenate([obj_img, bg_img])
    source = np.concatenate([obj_src, np.where(loose, near_gt, -1)])
    sigma = np.concatenate([obj_sigma, bg_sigma])
    score = np.concatenate([obj_score, bg_score])
    cat = np.concatenate([obj_cat, bg_cat])
    # Scores: ties from coarse rounding; strictly inside (0, 1).
    coarse = rng.random(len(score))
    decimals = np.where(coarse < 0.2, 2, np.where(coarse < 0.33, 3, 5))
    score = np.clip(np.round(score * 10.0**decimals) / 10.0**decimals, 0.001, 0.999)
    return det_img, source, sigma, score, cat


def make_segm_results(gt: dict, seed: int, dets_per_image: int) -> list[dict]:
    """Mask results for ``gt`` as compressed RLE without ``bbox``, sorted by image then score.

    Copies of objects are the object's rasterised mask moved, rescaled and with its border
    grown or shrunk (``pycocotools.mask.encode`` of the new bitmap); detections drawn anew are
    star polygons of COCO-like sizes, rasterised by pycocotools.
    """
    import numpy as np
    from pycocotools import mask as mask_utils

    rng = np.random.default_rng([seed, 11])
    images = gt["images"]
    n_images = len(images)
    image_index = {img["id"]: k for k, img in enumerate(images)}
    cat_ids = np.array([c["id"] for c in gt["categories"]])
    cat_index = {c: k for k, c in enumerate(cat_ids.tolist())}
    anns = gt["annotations"]
    g_img = np.array([image_index[a["image_id"]] for a in anns], dtype=np.int64)
    g_cat = np.array([cat_index[a["category_id"]] for a in anns], dtype=np.int64)
    det_img, source, sigma, score, cat = _plan_detections(
        np, rng, g_img, g_cat, n_images, len(cat_ids), dets_per_image
    )
    img_w = np.array([img["width"] for img in images], dtype=np.float64)
    img_h = np.array([img["height"] for img in images], dtype=np.float64)
    fresh = np.flatnonzero(source < 0)
    fx, fy, fw, fh, _ = _sample_boxes(np, rng, img_w[det_img[fresh]], img_h[det_img[fresh]])

    masks: list = [None] * len(det_img)
    fresh_pos = {int(d): k for k, d in enumerate(fresh)}
    order = np.argsort(det_img, kind="stable")
    bounds = np.searchsorted(det_img[order], np.arange(n_images + 1))
    gt_rows_of = np.split(
        np.argsort(g_img, kind="stable"), np.cumsum(np.bincount(g_img, minlength=n_images))[:-1]
    )
    for i in range(n_images):
        dets = order[bounds[i] : bounds[i + 1]]
        if not len(dets):
            continue
        ih, iw = images[i]["height"], images[i]["width"]
        rows = gt_rows_of[i]
        rles = [_gt_rle(mask_utils, anns[r], ih, iw) for r in rows]
        decoded = mask_utils.decode(rles) if rles else None
        boxes = {int(r): mask_utils.toBbox(rle).tolist() for r, rle in zip(rows, rles)}
        local = {int(r): k for k, r in enumerate(rows)}
        copies = [d for d in dets if source[d] >= 0]
        bitmap = np.zeros((ih, iw, max(len(copies), 1)), dtype=np.uint8, order="F")
        made = np.zeros(len(copies), dtype=bool)
        for k, d in enumerate(copies):
            r = int(source[d])
            made[k] = _paste_perturbed(
                np, rng, decoded[:, :, local[r]], boxes[r], sigma[d], bitmap[:, :, k]
            )
        encoded = mask_utils.encode(bitmap) if copies else []
        for k, d in enumerate(copies):
            if made[k]:
                masks[d] = encoded[k]
        for d in dets:
            if masks[d] is not None:
                continue
            if d in fresh_pos:
                j = fresh_pos[d]
                x, y, w, h = fx[j], fy[j], fw[j], fh[j]
            else:  # a copy that fell outside the image or vanished: a new shape near it
                x, y, w, h = boxes[int(source[d])]
                w, h = max(w, 8.0), max(h, 8.0)
                x, y = min(x, iw - w), min(y, ih - h)
            rle = mask_utils.merge(
                mask_utils.frPyObjects([_star_polygon(np, rng, x, y, w, h)], ih, iw)
            )
            if mask_utils.area(rle) == 0:  # a sliver missed every pixel centre: its box
                rle = mask_utils.frPyObjects([[x, y, max(w, 1.0), max(h, 1.0)]], ih, iw)[0]
            masks[d] = rle

    final = np.lexsort((-score, det_img))
    image_ids = np.array([img["id"] for img in images])
    return [
        {
            "image_id": i,
            "category_id": c,
            "segmentation": {"size": masks[d]["size"], "counts": masks[d]["counts"].decode()},
            "score": s,
        }
        for d, i, c, s in zip(
            final.tolist(),
            image_ids[det_img[final]].tolist(),
            cat_ids[cat[final]].tolist(),
            score[final].tolist(),
            strict=True,
        )
    ]


def _gt_rle(mask_utils, ann: dict, height: int, width: int):
    segmentation = ann["segmentation"]
    if isinstance(segmentation, list):
        return mask_utils.merge(mask_utils.frPyObjects(segmentation, height, width))
    return mask_utils.frPyObjects(segmentation, height, width)


KEYPOINT_NAMES = (
    "nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder",
    "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip",
    "right_hip", "left_knee", "right_knee", "left_ankle", "right_ankle",
)  # fmt: skip
SKELETON = (
    (16, 14), (14, 12), (17, 15), (15, 13), (12, 13), (6, 12), (7, 13), (6, 7), (6, 8),
    (7, 9), (8, 10), (9, 11), (2, 3), (1, 2), (1, 3), (2, 4), (3, 5), (4, 6), (5, 7),
)  # fmt: skip
# Where each keypoint sits in the person's box (x right, y down), facing the camera.
POSE_TEMPLATE = (
    (0.50, 0.08), (0.55, 0.06), (0.45, 0.06), (0.60, 0.08), (0.40, 0.08), (0.70, 0.22),
    (0.30, 0.22), (0.78, 0.38), (0.22, 0.38), (0.80, 0.52), (0.20, 0.52), (0.62, 0.55),
    (0.38, 0.55), (0.63, 0.75), (0.37, 0.75), (0.64, 0.95), (0.36, 0.95),
)  # fmt: skip
MIRROR = (0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15)  # left <-> right
MEAN_PERSONS_PER_IMAGE = 2.3
KEYPOINT_CROWD = 0.01


def _poses(np, rng, x, y, w, h):
    """Keypoint positions (n, 17, 2) of people in the boxes: the template bent at random,
    one in five seen from the back (left and right swapped)."""
    template = np.array(POSE_TEMPLATE)
    n = len(x)
    unit = template[None] + rng.normal(0.0, 0.05, (n, 17, 2))
    back = rng.random(n) < 0.2
    unit[back] = unit[back][:, MIRROR]
    unit = np.clip(unit, 0.0, 1.0)
    return np.stack(
        [x[:, None] + unit[:, :, 0] * w[:, None], y[:, None] + unit[:, :, 1] * h[:, None]], axis=-1
    )


def _person_boxes(np, rng, widths, heights):
    """Person boxes (standing, about 2.5 times as high as wide) with the COCO size mix; the
    area (of the person's outline) is 45-75% of the box's."""
    n = len(widths)
    kind = rng.choice(3, size=n, p=SIZE_MIX)
    cap = np.maximum(0.8 * np.sqrt(widths * heights), 97.0)
    low = np.array([12.0, 32.0, 96.0])[kind]
    high = np.where(kind == 0, 32.0, np.where(kind == 1, 96.0, cap))
    side = np.exp(rng.uniform(np.log(low), np.log(high)))
    fill = rng.uniform(0.45, 0.75, n)
    aspect = 0.4 * np.exp(rng.normal(0.0, 0.3, n))  # w / h
    box_area = side**2 / fill
    w = np.clip(np.sqrt(box_area * aspect), 2.0, widths)
    h = np.clip(np.sqrt(box_area / aspect), 2.0, heights)
    x = np.round(rng.random(n) * (widths - w), 2)
    y = np.round(rng.random(n) * (heights - h), 2)
    w = np.minimum(np.round(w, 2), widths - x)
    h = np.minimum(np.round(h, 2), heights - y)
    return x, y, w, h, np.round(fill * w * h, 4)


def make_keypoints_gt(seed: int, n_images: int) -> dict:
    """A COCO person-keypoints dict: one category with 17 keypoints, about 2.3 people per
    image (half the images have none), ``num_keypoints`` 0 for most small people and crowds."""
    import numpy as np

    rng = np.random.default_rng([seed, 20])
    images, img_w, img_h = _image_records(np, rng, n_images)
    has_people = rng.random(n_images) < 0.5
    counts = np.where(
        has_people, 1 + _objects_per_image(np, rng, n_images, 2 * MEAN_PERSONS_PER_IMAGE - 1, 19), 0
    )
    image_of = np.repeat(np.arange(n_images), counts)
    n_gt = len(image_of)
    widths = img_w[image_of].astype(np.float64)
    heights = img_h[image_of].astype(np.float64)
    x, y, w, h, area = _person_boxes(np, rng, widths, heights)
    points = _poses(np, rng, x, y, w, h)
    crowd = rng.random(n_gt) < KEYPOINT_CROWD
    # Visibility: 0 not labelled, 1 labelled but hidden, 2 visible.
    visibility = rng.choice(3, size=(n_gt, 17), p=[0.3, 0.15, 0.55])
    unlabelled = crowd | ((area < 32**2) & (rng.random(n_gt) < 0.85))
    visibility[unlabelled] = 0
    coords = np.round(points).astype(np.int64)
    coords[visibility == 0] = 0
    keypoints = np.concatenate([coords, visibility[:, :, None]], axis=2).reshape(n_gt, 51)
    annotations = [
        {
            "id": k + 1,
            "image_id": img + 1,
            "category_id": 1,
            "bbox": [bx, by, bw, bh],
            "area": ar,
            "iscrowd": cr,
            "num_keypoints": nk,
            "keypoints": kp,
            "segmentation": [_rectangle(bx, by, bw, bh)],
        }
        for k, img, bx, by, bw, bh, ar, cr, nk, kp in zip(
            range(n_gt),
            image_of.tolist(),
            x.tolist(),
            y.tolist(),
            w.tolist(),
            h.tolist(),
            area.tolist(),
            crowd.astype(int).tolist(),
            (visibility > 0).sum(axis=1).tolist(),
            keypoints.tolist(),
            strict=True,
        )
    ]
    category = {
        "id": 1,
        "name": "person",
        "supercategory": "person",
        "keypoints": list(KEYPOINT_NAMES),
        "skeleton": [list(pair) for pair in SKELETON],
    }
    return {
        "info": {"description": f"deteval synthetic keypoints benchmark set, seed {seed}"},
        "images": images,
        "annotations": annotations,
        "categories": [category],
    }


def make_keypoints_results(gt: dict, seed: int, dets_per_image: int) -> list[dict]:
    """Person results with 17 keypoints each (no ``bbox``), at most ``dets_per_image`` per
    image, sorted by image then score.

    Per person 0-3 copies whose keypoints move by a relative noise (some seen mirrored, a
    classic error), then per image 0-6 false people: loose copies of its people, or new
    people of COCO-like sizes. Visibility values are confidences, which OKS does not read.
    """
    import numpy as np

    rng = np.random.default_rng([seed, 21])
    images = gt["images"]
    n_images = len(images)
    img_w = np.array([img["width"] for img in images], dtype=np.float64)
    img_h = np.array([img["height"] for img in images], dtype=np.float64)
    anns = gt["annotations"]
    n_gt = len(anns)
    g_img = np.array([a["image_id"] - 1 for a in anns], dtype=np.int64)
    g_box = np.array([a["bbox"] for a in anns], dtype=np.float64).reshape(-1, 4)
    g_labelled = np.array([a["num_keypoints"] > 0 for a in anns], dtype=bool)
    g_points = np.array([a["keypoints"] for a in anns], dtype=np.float64).reshape(-1, 17, 3)
    # Where the people's keypoints are: the labelled ones, and a guess for the others.
    truth = np.where(g_points[:, :, 2:] > 0, g_points[:, :, :2], _poses(np, rng, *g_box.T))

    copies = np.where(
        g_labelled,
        rng.choice(4, size=n_gt, p=[0.1, 0.7, 0.15, 0.05]),
        rng.choice(4, size=n_gt, p=[0.5, 0.4, 0.1, 0.0]),
    )
    src = np.repeat(np.arange(n_gt), copies)
    sigma = np.exp(rng.uniform(np.log(0.01), np.log(0.25), len(src)))
    tp_score = rng.beta(4.0, 1.5, len(src)) * np.exp(-3.0 * sigma)
    scale = np.sqrt(g_box[src, 2] * g_box[src, 3])
    tp_points = (
        truth[src] + rng.normal(0.0, 1.0, (len(src), 17, 2)) * (sigma * scale)[:, None, None]
    )
    flipped = rng.random(len(src)) < 0.05
    tp_points[flipped] = tp_points[flipped][:, MIRROR]

    n_false = rng.integers(0, 7, n_images)
    fp_img = np.repeat(np.arange(n_images), n_false)
    n_fp = len(fp_img)
    gt_count = np.bincount(g_img, minlength=n_images)[fp_img]
    by_image = np.argsort(g_img, kind="stable")
    first = np.searchsorted(g_img[by_image], fp_img)
    slot = np.minimum(first + (rng.random(n_fp) * gt_count).astype(int), max(n_gt - 1, 0))
    near = by_image[slot] if n_gt else np.zeros(n_fp, dtype=np.int64)
    loose = (gt_count > 0) & (rng.random(n_fp) < 0.5)
    fx, fy, fw, fh, _ = _person_boxes(np, rng, img_w[fp_img], img_h[fp_img])
    fresh_box = np.stack([fx, fy, fw, fh], 1)
    if n_gt:
        move = rng.normal(0.0, 0.5, (n_fp, 2)) * g_box[near, 2:]
        near_box = np.column_stack([g_box[near, :2] + move, g_box[near, 2:]])
        fresh_box = np.where(loose[:, None], near_box, fresh_box)
    fp_points = _poses(np, rng, *fresh_box.T)
    fp_score = rng.beta(1.0, 6.0, n_fp)

    det_img = np.concatenate([g_img[src], fp_img])
    points = np.concatenate([tp_points, fp_points])
    score = np.concatenate([tp_score, fp_score])
    coarse = rng.random(len(score))
    decimals = np.where(coarse < 0.2, 2, np.where(coarse < 0.33, 3, 5))
    score = np.clip(np.round(score * 10.0**decimals) / 10.0**decimals, 0.001, 0.999)
    # Best first within an image, at most dets_per_image.
    order = np.lexsort((-score, det_img))
    rank = np.arange(len(order)) - np.searchsorted(det_img[order], det_img[order])
    order = order[rank < dets_per_image]
    width, height = img_w[det_img[order]], img_h[det_img[order]]
    px = np.round(np.clip(points[order, :, 0], 0.0, width[:, None] - 1.0), 2)
    py = np.round(np.clip(points[order, :, 1], 0.0, height[:, None] - 1.0), 2)
    confidence = np.round(rng.uniform(0.05, 1.0, (len(order), 17)), 3)
    keypoints = np.stack([px, py, confidence], axis=2).reshape(len(order), 51)
    image_ids = np.array([img["id"] for img in images])
    return [
        {"image_id": i, "category_id": 1, "keypoints": kp, "score": s}
        for i, kp, s in zip(
            image_ids[det_img[order]].tolist(),
            keypoints.tolist(),
            score[order].tolist(),
            strict=True,
        )
    ]


ROTATED_IMAGE_SIZE = 1024  # square tiles, as aerial images are cut for training
MEAN_ROTATED_PER_IMAGE = 20.0
ROTATED_CROWD = 0.01


def _rbox_bounds(np, cx, cy, w, h, angle):
    """Axis-aligned bounds ``(x0, y0, x1, y1)`` of rotated boxes (angle in degrees)."""
    theta = np.deg2rad(angle)
    cos, sin = np.abs(np.cos(theta)), np.abs(np.sin(theta))
    half_w = (w * cos + h * sin) / 2
    half_h = (w * sin + h * cos) / 2
    return cx - half_w, cy - half_h, cx + half_w, cy + half_h


def _sample_rboxes(np, rng, n: int, size: float):
    """``(cx, cy, w, h, angle)`` of ``n`` rotated boxes inside a ``size`` x ``size`` image,
    with the COCO size mix on ``w * h``, elongated shapes and uniform angles in [-90, 90)."""
    kind = rng.choice(3, size=n, p=SIZE_MIX)
    low = np.array([6.0, 32.0, 96.0])[kind]
    high = np.array([32.0, 96.0, 0.5 * size])[kind]
    side = np.exp(rng.uniform(np.log(low), np.log(high)))
    aspect = np.exp(np.abs(rng.normal(0.0, 0.7, n)))  # w / h >= 1: ships, vehicles, bridges
    w = np.round(side * np.sqrt(aspect), 2)
    h = np.round(side / np.sqrt(aspect), 2)
    angle = np.round(rng.uniform(-90.0, 90.0, n), 2)
    x0, y0, x1, y1 = _rbox_bounds(np, 0.0, 0.0, w, h, angle)
    cx = np.round(-x0 + rng.random(n) * np.maximum(size - (x1 - x0), 0.0), 2)
    cy = np.round(-y0 + rng.random(n) * np.maximum(size - (y1 - y0), 0.0), 2)
    return cx, cy, w, h, angle


def _rbox_records(np, cx, cy, w, h, angle) -> tuple[list, list]:
    """``rbox`` and ``bbox`` (the rotated box's axis-aligned bounds, xywh) lists."""
    x0, y0, x1, y1 = _rbox_bounds(np, cx, cy, w, h, angle)
    rbox = np.stack([cx, cy, w, h, angle], 1).tolist()
    bbox = np.round(np.stack([x0, y0, x1 - x0, y1 - y0], 1), 2).tolist()
    return rbox, bbox


def make_rotated_gt(seed: int, n_images: int, n_categories: int) -> dict:
    """Ground truth with rotated boxes: ``rbox`` [cx, cy, w, h, angle_degrees], ``bbox`` its
    axis-aligned bounds, ``area`` w * h; 1024 x 1024 tiles with about 20 objects each."""
    import numpy as np

    rng = np.random.default_rng([seed, 30])
    size = ROTATED_IMAGE_SIZE
    images = [
        {"id": i + 1, "width": size, "height": size, "file_name": f"{i + 1:012d}.png"}
        for i in range(n_images)
    ]
    counts = _objects_per_image(np, rng, n_images, MEAN_ROTATED_PER_IMAGE, 150)
    image_of = np.repeat(np.arange(n_images), counts)
    n_gt = len(image_of)
    categories, cat_ids = _categories(np, n_categories)
    cats = cat_ids[rng.choice(n_categories, size=n_gt, p=_category_weights(np, n_categories))]
    cx, cy, w, h, angle = _sample_rboxes(np, rng, n_gt, size)
    crowd = (rng.random(n_gt) < ROTATED_CROWD).astype(np.int64)
    rbox, bbox = _rbox_records(np, cx, cy, w, h, angle)
    annotations = [
        {
            "id": k + 1,
            "image_id": img + 1,
            "category_id": cat,
            "rbox": rb,
            "bbox": bb,
            "area": ar,
            "iscrowd": cr,
        }
        for k, img, cat, rb, bb, ar, cr in zip(
            range(n_gt),
            image_of.tolist(),
            cats.tolist(),
            rbox,
            bbox,
            np.round(w * h, 4).tolist(),
            crowd.tolist(),
            strict=True,
        )
    ]
    return {
        "info": {"description": f"deteval synthetic rotated-box benchmark set, seed {seed}"},
        "images": images,
        "annotations": annotations,
        "categories": categories,
    }


def make_rotated_results(gt: dict, seed: int, dets_per_image: int) -> list[dict]:
    """Rotated-box results (``rbox`` and its bounds as ``bbox``), sorted by image then score:
    close copies of objects (centre, size and angle jittered), copies with a wrong class,
    loose copies and new boxes with low scores up to ``dets_per_image`` per image."""
    import numpy as np

    rng = np.random.default_rng([seed, 31])
    images = gt["images"]
    n_images = len(images)
    cat_ids = np.array([c["id"] for c in gt["categories"]])
    cat_index = {c: k for k, c in enumerate(cat_ids.tolist())}
    anns = gt["annotations"]
    g_img = np.array([a["image_id"] - 1 for a in anns], dtype=np.int64)
    g_cat = np.array([cat_index[a["category_id"]] for a in anns], dtype=np.int64)
    g_rbox = np.array([a["rbox"] for a in anns], dtype=np.float64).reshape(-1, 5)
    det_img, source, sigma, score, cat = _plan_detections(
        np, rng, g_img, g_cat, n_images, len(cat_ids), dets_per_image
    )
    n = len(det_img)
    base = np.stack(_sample_rboxes(np, rng, n, ROTATED_IMAGE_SIZE), 1)
    copy = source >= 0
    src = g_rbox[np.maximum(source, 0)] if len(anns) else base
    base = np.where(copy[:, None], src, base)
    s = np.where(copy, sigma, 0.0)
    cx = base[:, 0] + rng.normal(0.0, 1.0, n) * s * base[:, 2]
    cy = base[:, 1] + rng.normal(0.0, 1.0, n) * s * base[:, 3]
    w = np.maximum(base[:, 2] * np.exp(rng.normal(0.0, 1.0, n) * s), 1.0)
    h = np.maximum(base[:, 3] * np.exp(rng.normal(0.0, 1.0, n) * s), 1.0)
    angle = base[:, 4] + rng.normal(0.0, 1.0, n) * s * 45.0
    angle = (angle + 90.0) % 180.0 - 90.0  # a box turned by 180 degrees is the same box
    cx, cy, w, h, angle = (np.round(v, 2) for v in (cx, cy, w, h, angle))
    rbox, bbox = _rbox_records(np, cx, cy, w, h, angle)
    order = np.lexsort((-score, det_img))
    image_ids = np.array([img["id"] for img in images])
    return [
        {"image_id": i, "category_id": c, "rbox": rbox[d], "bbox": bbox[d], "score": sc}
        for d, i, c, sc in zip(
            order.tolist(),
            image_ids[det_img[order]].tolist(),
            cat_ids[cat[order]].tolist(),
            score[order].tolist(),
            strict=True,
        )
    ]


def describe_data(gt: dict, results: list[dict]) -> dict:
    """Counts that show the generated set is COCO-like (stored next to the files)."""
    anns = gt["annotations"]
    areas = [a["area"] for a in anns]
    n = max(len(anns), 1)
    return {
        "images": len(gt["images"]),
        "categories": len(gt["categories"]),
        "gt": len(anns),
        "gt_per_image": round(len(anns) / max(len(gt["images"]), 1), 2),
        "small": round(sum(a < 32**2 for a in areas) / n, 3),
        "medium": round(sum(32**2 <= a < 96**2 for a in areas) / n, 3),
        "large": round(sum(a >= 96**2 for a in areas) / n, 3),
        "crowd": round(sum(a["iscrowd"] for a in anns) / n, 4),
        "detections": len(results),
        "distinct_scores": len({r["score"] for r in results}),
    }


def _write_json(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
    os.replace(tmp, path)


def describe_case_data(case: str, gt: dict, results: list[dict]) -> dict:
    """``describe_data`` and what is particular to the case's shapes."""
    summary = describe_data(gt, results)
    anns = gt["annotations"]
    n = max(len(anns), 1)
    per_image: dict[int, int] = {}
    for r in results:
        per_image[r["image_id"]] = per_image.get(r["image_id"], 0) + 1
    summary["max_dets_per_image"] = max(per_image.values(), default=0)
    if case == "segm":
        summary["multipart"] = round(
            sum(isinstance(a["segmentation"], list) and len(a["segmentation"]) > 1 for a in anns)
            / n, 3)  # fmt: skip
        summary["crowd_rle"] = sum(isinstance(a["segmentation"], dict) for a in anns)
    elif case == "keypoints":
        summary["no_keypoints"] = round(sum(a["num_keypoints"] == 0 for a in anns) / n, 3)
        summary["with_keypoints"] = sum(a["num_keypoints"] > 0 for a in anns)
    return summary


#: Version of the segm, keypoints and rotated generators (the bbox one has GENERATOR_VERSION).
SHAPES_GENERATOR_VERSION = 1


def _generate(case: str, seed: int, n_images: int, n_categories: int, dets: int):
    if case == "bbox":
        gt = make_gt(seed, n_images, n_categories)
        return gt, make_results(gt, seed, dets)
    if case == "segm":
        gt = make_segm_gt(seed, n_images, n_categories)
        return gt, make_segm_results(gt, seed, dets)
    if case == "keypoints":
        gt = make_keypoints_gt(seed, n_images)
        return gt, make_keypoints_results(gt, seed, dets)
    gt = make_rotated_gt(seed, n_images, n_categories)
    return gt, make_rotated_results(gt, seed, dets)


def ensure_data(data_dir: Path, seed: int, n_images: int, n_categories: int, dets: int,
                case: str = "bbox"):  # fmt: skip
    """Paths of gt.json and results.json for these parameters, generating them if needed."""
    params = {
        "generator": GENERATOR_VERSION,
        "seed": seed,
        "images": n_images,
        "categories": n_categories,
        "dets_per_image": dets,
    }
    folder = data_dir / f"synth-v{GENERATOR_VERSION}-s{seed}-i{n_images}-c{n_categories}-d{dets}"
    if case != "bbox":
        params.update(case=case, generator=SHAPES_GENERATOR_VERSION)
        folder = data_dir / (
            f"{case}-v{SHAPES_GENERATOR_VERSION}-s{seed}-i{n_images}-c{n_categories}-d{dets}"
        )
    gt_path, dt_path, meta_path = folder / "gt.json", folder / "results.json", folder / "meta.json"
    if meta_path.exists() and gt_path.exists() and dt_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("params") == params:
            return gt_path, dt_path, meta["summary"], True
    folder.mkdir(parents=True, exist_ok=True)
    gt, results = _generate(case, seed, n_images, n_categories, dets)
    _write_json(gt, gt_path)
    _write_json(results, dt_path)
    summary = (
        describe_data(gt, results) if case == "bbox" else describe_case_data(case, gt, results)
    )
    meta_path.write_text(json.dumps({"params": params, "summary": summary}, indent=1))
    return gt_path, dt_path, summary, False


# --------------------------------------------------------------------------------------------
# Child process: one tool, one run
# --------------------------------------------------------------------------------------------


class PhaseTimer:
    """``with timer("phase"):`` records the wall and CPU time of the block under that name."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str):
        start, cpu_start = time.perf_counter(), _cpu_seconds()
        try:
            yield
        finally:
            self.times[name] = time.perf_counter() - start
            self.cpu[name] = _cpu_seconds() - cpu_start


def _run_cocoapi_style(coco_cls, eval_cls, gt_path: str, dt_path: str, timer: PhaseTimer,
                       iou_type: str):  # fmt: skip
    """The pycocotools workflow, which faster-coco-eval and hotcoco reproduce."""
    with timer("load_gt"):
        coco_gt = coco_cls(gt_path)
    with timer("load_dt"):
        coco_dt = coco_gt.loadRes(dt_path)
    with timer("evaluate"):
        evaluator = eval_cls(coco_gt, coco_dt, iou_type)
        evaluator.evaluate()
    with timer("accumulate"):
        evaluator.accumulate()
    with timer("summarize"):
        evaluator.summarize()
    return evaluator.stats, {}


def run_pycocotools(gt_path: str, dt_path: str, timer: PhaseTimer, iou_type: str = "bbox"):
    with timer("import"):
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    return _run_cocoapi_style(COCO, COCOeval, gt_path, dt_path, timer, iou_type)


def run_faster_coco_eval(gt_path: str, dt_path: str, timer: PhaseTimer, iou_type: str = "bbox"):
    # By default COCOeval_faster.evaluate() matches and accumulates in one C++ call and
    # accumulate() has nothing left to do; the report notes this.
    with timer("import"):
        from faster_coco_eval import COCO, COCOeval_faster
    return _run_cocoapi_style(COCO, COCOeval_faster, gt_path, dt_path, timer, iou_type)


def run_hotcoco(gt_path: str, dt_path: str, timer: PhaseTimer, iou_type: str = "bbox"):
    with timer("import"):
        from hotcoco import COCO, COCOeval
    return _run_cocoapi_style(COCO, COCOeval, gt_path, dt_path, timer, iou_type)


def run_deteval(gt_path: str, dt_path: str, timer: PhaseTimer, iou_type: str = "bbox"):
    if (REPO_ROOT / "deteval").is_dir():
        sys.path.insert(0, str(REPO_ROOT))  # benchmark the source tree this script belongs to
    with timer("import"):
        import deteval
        from deteval.io.coco import read_coco_gt, read_coco_results
    # evaluate_coco(gt_path, dt_path, iou_type=...) reads the two files exactly so; reading
    # them here first only splits its time into the phases of the table.
    shape = {} if iou_type == "bbox" else {"iou_type": iou_type}
    with timer("load_gt"):
        dataset = read_coco_gt(gt_path, **shape)
    with timer("load_dt"):
        detections = read_coco_results(dt_path, dataset, **shape)
    with timer("evaluate"):  # matching, accumulation and the 12 stats in one call
        result = deteval.evaluate_coco(dataset, detections, **shape)
    inner = {k: float(v) for k, v in (getattr(result, "timings", None) or {}).items()}
    return result.stats, inner


RUNNERS = {
    "deteval": run_deteval,
    "hotcoco": run_hotcoco,
    "faster-coco-eval": run_faster_coco_eval,
    "pycocotools": run_pycocotools,
}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, else KiB


def _rbox_polygon(cx: float, cy: float, w: float, h: float, angle: float):
    """A shapely polygon of one rotated box (counter-clockwise on the image, y down)."""
    from shapely.geometry import Polygon

    t = math.radians(angle)
    c, s = math.cos(t), math.sin(t)
    half = ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2))
    return Polygon([(cx + u * c + v * s, cy + v * c - u * s) for u, v in half])


def naive_rotated_main(gt_path: str, dt_path: str, n_images: int) -> int:
    """The IoU step of the rotated case done naively, on the first ``n_images`` images.

    The pairs are those pycocotools' ``computeIoU`` would form: every (detection, object) of
    the same image and class, the detections cut to the 100 best of the group. The naive way
    builds one shapely polygon per box and loops over the pairs in Python, one
    ``intersection`` each; deteval's way is ``polygons_from_rboxes`` then one ``PairIoU``
    over all pairs. Prints one JSON line: pair counts, both times and their largest IoU gap.
    """
    if (REPO_ROOT / "deteval").is_dir():
        sys.path.insert(0, str(REPO_ROOT))
    import numpy as np

    from deteval.geometry import PairIoU, polygons_from_rboxes

    gt = json.loads(Path(gt_path).read_text())
    results = json.loads(Path(dt_path).read_text())
    gt_groups: dict[tuple[int, int], list[dict]] = {}
    for ann in gt["annotations"]:
        gt_groups.setdefault((ann["image_id"], ann["category_id"]), []).append(ann)
    dt_groups: dict[tuple[int, int], list[dict]] = {}
    for res in results:
        dt_groups.setdefault((res["image_id"], res["category_id"]), []).append(res)
    for key, group in dt_groups.items():
        group.sort(key=lambda r: -r["score"])  # stable, as pycocotools' argsort(kind=mergesort)
        dt_groups[key] = group[:100]
    total_pairs = sum(len(d) * len(gt_groups.get(k, ())) for k, d in dt_groups.items())
    subset = {img["id"] for img in sorted(gt["images"], key=lambda i: i["id"])[:n_images]}
    keys = [k for k in dt_groups if k[0] in subset and k in gt_groups]
    dts = [r for k in keys for r in dt_groups[k]]
    gts = [a for k in keys for a in gt_groups[k]]
    pair_dt, pair_gt = [], []
    d_at = g_at = 0
    for k in keys:
        nd, ng = len(dt_groups[k]), len(gt_groups[k])
        pair_dt.extend(d_at + i for i in range(nd) for _ in range(ng))
        pair_gt.extend(g_at + j for _ in range(nd) for j in range(ng))
        d_at, g_at = d_at + nd, g_at + ng

    start = time.perf_counter()
    dt_polys = [_rbox_polygon(*r["rbox"]) for r in dts]
    gt_polys = [_rbox_polygon(*a["rbox"]) for a in gts]
    naive = []
    for i, j in zip(pair_dt, pair_gt, strict=True):
        a, b = dt_polys[i], gt_polys[j]
        inter = a.intersection(b).area
        union = a.area if gts[j]["iscrowd"] else a.area + b.area - inter
        naive.append(inter / union if union > 0 else 0.0)
    naive_s = time.perf_counter() - start

    start = time.perf_counter()
    dt_array = polygons_from_rboxes(np.array([r["rbox"] for r in dts]).reshape(-1, 5))
    gt_array = polygons_from_rboxes(np.array([a["rbox"] for a in gts]).reshape(-1, 5))
    rows_dt, rows_gt = np.array(pair_dt, dtype=np.int64), np.array(pair_gt, dtype=np.int64)
    crowd = np.array([a["iscrowd"] for a in gts], dtype=bool)
    fast = PairIoU(dt_array, gt_array)(rows_dt, rows_gt, crowd[rows_gt])
    deteval_s = time.perf_counter() - start

    gap = float(np.max(np.abs(fast - np.array(naive)))) if naive else 0.0
    print(json.dumps({
        "images": len(subset), "all_images": len(gt["images"]), "pairs": len(pair_dt),
        "overlapping": int(np.count_nonzero(np.array(naive) > 0)), "total_pairs": total_pairs,
        "naive_s": naive_s, "deteval_s": deteval_s, "max_gap": gap,
    }))  # fmt: skip
    return 0


def child_main(tool: str, gt_path: str, dt_path: str, iou_type: str = "bbox") -> int:
    """Run one tool once; print one JSON line with timings, peak RSS and stats (or an error).

    The tools print progress to stdout, some from native code, so file descriptor 1 itself is
    pointed at /dev/null while they run and restored for the JSON line.
    """
    timer = PhaseTimer()
    record: dict = {"tool": tool}
    sys.stdout.flush()
    saved_stdout = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        stats, inner = RUNNERS[tool](gt_path, dt_path, timer, iou_type)
        record["stats"] = [float(s) for s in stats]
        record["inner"] = inner
    except Exception as exc:  # any failure of the tool is a result to report, not a crash
        record["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        traceback.print_exc(file=sys.stderr)
    finally:
        sys.stdout.flush()
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
        os.close(devnull)
    record["phases"] = timer.times
    record["e2e_s"] = sum(t for name, t in timer.times.items() if name != "import")
    record["cpu_s"] = sum(t for name, t in timer.cpu.items() if name != "import")
    record["peak_mb"] = _peak_rss_mb()
    print(json.dumps(record))
    return 1 if "error" in record else 0


# --------------------------------------------------------------------------------------------
# Parent process: runs, table, agreement of the stats
# --------------------------------------------------------------------------------------------


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _source_tree() -> str:
    """deteval's version as the source tree declares it, and the git state of the tree."""
    version = "?"
    with contextlib.suppress(OSError):
        for line in (REPO_ROOT / "pyproject.toml").read_text().splitlines():
            if line.startswith("version"):
                version = line.split("=", 1)[1].strip().strip('"')
                break
    state = "git: unknown"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        git = ["git", "-C", str(REPO_ROOT)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
        commit = head.stdout.strip() if head.returncode == 0 else "no commit yet"
        state = f"git {commit}{' + uncommitted changes' if dirty.stdout.strip() else ''}"
    return f"{version} from {REPO_ROOT} ({state})"


def machine_lines() -> list[str]:
    """Where the figures come from: CPUs, memory, Python and the versions of every package."""
    cpu_model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        kib = int(Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1])
        memory = f", {kib / 2**20:.1f} GiB RAM"
    nproc = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else nproc
    packages = []
    for dist in ("numpy", "orjson", "pycocotools", "faster-coco-eval", "hotcoco"):
        packages.append(f"{dist} {_version(dist) or 'not installed'}")
    packages.append(f"deteval {_source_tree()}")
    load = ""
    with contextlib.suppress(OSError, AttributeError):
        load = ", load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    return [
        f"machine:  nproc {nproc} (usable {usable}), {cpu_model or 'unknown CPU'}{memory}{load}",
        f"          {platform.platform()}",
        f"python:   {platform.python_version()} ({sys.executable})",
        "packages: " + ", ".join(packages),
    ]


def run_child(tool: str, gt_path: Path, dt_path: Path, timeout: float,
              case: str = "bbox") -> dict:  # fmt: skip
    """One run of ``tool`` in a fresh interpreter; the record it printed, or an error."""
    command = [
        sys.executable, str(Path(__file__).resolve()),
        "--child", tool, "--case", case, "--gt", str(gt_path), "--dt", str(dt_path),
    ]  # fmt: skip
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    try:
        record = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        record = {"tool": tool, "error": f"exit code {proc.returncode}, no result"}
    if "error" in record:
        record["stderr_tail"] = proc.stderr.strip().splitlines()[-6:]
    return record


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 100:
        return f"{seconds:.0f}"
    if seconds >= 10:
        return f"{seconds:.1f}"
    if seconds >= 1:
        return f"{seconds:.2f}"
    return f"{seconds:.3f}"


def _fmt_ratio(ratio: float) -> str:
    return f"{ratio:.0f}x" if ratio >= 100 else f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.2f}x"


def summarise_tool(records: list[dict]) -> dict:
    """Medians over the successful runs of one tool."""
    ok = [r for r in records if "error" not in r]
    phases = {p: _median([r["phases"].get(p) for r in ok]) for p in ("import", *PHASES)}
    inner_names = list(dict.fromkeys(name for r in ok for name in r.get("inner", {})))
    return {
        "runs": len(ok),
        "e2e": _median([r["e2e_s"] for r in ok]),
        "e2e_min": min(r["e2e_s"] for r in ok),
        "cpu": _median([r["cpu_s"] for r in ok]),
        "peak_mb": max(r["peak_mb"] for r in ok),
        "phases": phases,
        "inner": {n: _median([r["inner"].get(n) for r in ok]) for n in inner_names},
        "stats": ok[0]["stats"],
        "stable": all(r["stats"] == ok[0]["stats"] for r in ok),
    }


def print_report(tools: list[str], records: dict[str, list[dict]], baseline: str,
                 case: str = "bbox") -> None:  # fmt: skip
    stat_names = STAT_NAMES_OF[case]
    n_stats = len(stat_names)
    summaries = {}
    failures = {}
    for tool in tools:
        runs = records[tool]
        if runs and all("error" not in r for r in runs):
            summaries[tool] = summarise_tool(runs)
        else:
            failures[tool] = next((r for r in runs if "error" in r), {"error": "did not run"})

    print()
    header = (
        f"{'tool':<18}{'runs':>5}{'e2e med':>9}{'e2e min':>9}{'cpu':>8}{'import':>8}"
        f"{'load gt':>9}{'load dt':>9}{'evaluate':>9}{'accum':>8}{'summ':>8}{'peak MB':>9}"
    )
    print(
        f"Times in seconds: e2e = files to the {n_stats} stats, import excluded; "
        "cpu = user+sys of e2e;"
    )
    print("medians over runs, each run a fresh process; peak MB = max ru_maxrss over runs")
    print(
        f"(its floor is this process's own peak, {_peak_rss_mb():.0f} MB, which a child inherits)."
    )
    print(header)
    print("-" * len(header))
    for tool in tools:
        if tool in failures:
            print(f"{tool:<18}  {failures[tool]['error']}")
            continue
        s = summaries[tool]
        ph = s["phases"]
        print(
            f"{tool:<18}{s['runs']:>5}{_fmt_s(s['e2e']):>9}{_fmt_s(s['e2e_min']):>9}"
            f"{_fmt_s(s['cpu']):>8}{_fmt_s(ph['import']):>8}{_fmt_s(ph['load_gt']):>9}"
            f"{_fmt_s(ph['load_dt']):>9}{_fmt_s(ph['evaluate']):>9}{_fmt_s(ph['accumulate']):>8}"
            f"{_fmt_s(ph['summarize']):>8}{s['peak_mb']:>9.0f}"
        )
    notes = []
    if "faster-coco-eval" in summaries:
        notes.append("faster-coco-eval: evaluate() matches and accumulates in one C++ call.")
    if "deteval" in summaries:
        notes.append(f"deteval: evaluate = evaluate_coco(), matching to the {n_stats} stats.")
        inner = summaries["deteval"]["inner"]
        if inner:
            split = ", ".join(f"{name} {_fmt_s(t)}" for name, t in inner.items())
            notes.append(f"deteval result.timings (medians, s): {split}")
    for note in notes:
        print(f"  {note}")

    for tool, failure in failures.items():
        for line in failure.get("stderr_tail", []):
            print(f"  [{tool}] {line}")

    if not summaries:
        return
    print()
    if baseline in summaries:
        base = baseline
        print(f"End to end against {baseline} (median):")
    else:
        base = min(summaries, key=lambda t: summaries[t]["e2e"])
        why = "has no result" if baseline in tools else "was not run"
        print(f"End to end (median); {baseline} {why}, ratios against {base}, the fastest:")
    for tool in tools:
        if tool in summaries:
            ratio = summaries[tool]["e2e"] / summaries[base]["e2e"]
            seconds = _fmt_s(summaries[tool]["e2e"])
            print(f"  {tool:<18}{seconds:>8} s  = {_fmt_ratio(ratio):>7} {base}")
    needed = REQUIRED_SPEEDUP.get(case)
    if needed and "deteval" in summaries and REFERENCE_TOOL in summaries:
        speedup = summaries[REFERENCE_TOOL]["e2e"] / summaries["deteval"]["e2e"]
        verdict = "met" if speedup >= needed else "NOT MET"
        print(
            f"  => deteval is {speedup:.1f}x faster than {REFERENCE_TOOL} end to end "
            f"(issue 3 asks >= {needed:g}x): {verdict}"
        )

    print()
    if REFERENCE_TOOL not in summaries:
        if case == "rotated":
            print("Stats (no reference: no peer evaluates rotated boxes):")
            for tool, s in summaries.items():
                half = n_stats // 2
                for start in (0, half):
                    cells = (f"{stat_names[k]} {s['stats'][k]:.6f}"
                             for k in range(start, start + half))  # fmt: skip
                    print(f"  {tool}: " + "  ".join(cells))
            return
        print(f"Stats: {REFERENCE_TOOL} has no result, so no reference to compare with.")
        for tool, s in summaries.items():
            print(f"  {tool:<18}" + " ".join(f"{v:.4f}" for v in s["stats"]))
        return
    reference = summaries[REFERENCE_TOOL]["stats"]
    print(f"Stats against {REFERENCE_TOOL} (the reference):")
    half = n_stats // 2
    for start in (0, half):
        cells = (f"{stat_names[k]} {reference[k]:.6f}" for k in range(start, start + half))
        print("  " + "  ".join(cells))
    for tool in tools:
        if tool not in summaries or tool == REFERENCE_TOOL:
            continue
        stats = summaries[tool]["stats"]
        diffs = [abs(a - b) for a, b in zip(stats, reference, strict=True)]
        worst = math.nan if any(d != d for d in diffs) else max(diffs)  # NaN: a stat is NaN
        if stats == reference:
            verdict = "identical to the last bit"
        else:
            differing = [stat_names[k] for k, d in enumerate(diffs) if not d == 0]
            verdict = f"differs in {', '.join(differing)}"
        stable = "" if summaries[tool]["stable"] else "; stats vary between runs!"
        print(f"  {tool:<18}max |diff| {worst:.3g}  ({verdict}){stable}")
        if not worst <= STATS_TOLERANCE:  # also catches NaN
            worse = [stat_names[k] for k, d in enumerate(diffs) if not d <= STATS_TOLERANCE]
            print(
                f"  MISMATCH: {tool} differs from {REFERENCE_TOOL} by more than "
                f"{STATS_TOLERANCE:g} in {', '.join(worse)}"
            )


def prepare_data(args: argparse.Namespace, size: dict, case: str = "bbox"):
    """``ensure_data`` in a child process, so that this process stays small.

    On Linux a child's ru_maxrss starts from the memory of the process it was forked from, so
    a parent holding the generated data would inflate the peak of every tool run after it.
    """
    command = [
        sys.executable, str(Path(__file__).resolve()), "--generate", "--case", case,
        "--images", str(size["images"]), "--categories", str(size["categories"]),
        "--dets-per-image", str(size["dets"]), "--seed", str(args.seed),
        "--data-dir", str(args.data_dir),
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"data generation failed:\n{proc.stderr}")
    made = json.loads(proc.stdout.strip().splitlines()[-1])
    return Path(made["gt"]), Path(made["dt"]), made["summary"], made["reused"]


def case_size(args: argparse.Namespace, case: str) -> dict:
    """Images, classes and results per image of a case: the options, else its defaults."""
    defaults = CASES[case]
    return {
        "images": args.images or (defaults["quick"] if args.quick else defaults["images"]),
        "categories": 1 if case == "keypoints" else args.categories or defaults["categories"],
        "dets": args.dets_per_image or defaults["dets"],
    }


def print_data_lines(case: str, gt_path: Path, dt_path: Path, s: dict, dets: int) -> None:
    sizes = (
        f"gt.json {gt_path.stat().st_size / 1e6:.1f} MB, "
        f"results.json {dt_path.stat().st_size / 1e6:.1f} MB"
    )
    mix = (
        f"small {s['small']:.1%}, medium {s['medium']:.1%}, large {s['large']:.1%}, "
        f"crowd {s['crowd']:.1%}"
    )
    if case == "bbox":
        print(
            f"          {s['images']} images, {s['categories']} classes, {s['gt']} GT "
            f"({s['gt_per_image']}/image; {mix})"
        )
        print(
            f"          {s['detections']} detections ({dets}/image, "
            f"{s['distinct_scores']} distinct scores); {sizes}"
        )
    elif case == "segm":
        print(
            f"          {s['images']} images, {s['categories']} classes, {s['gt']} GT "
            f"({s['gt_per_image']}/image; by mask area {mix})"
        )
        print(
            f"          GT polygons, {s['multipart']:.1%} in 2-3 parts; {s['crowd_rle']} crowd "
            "regions as uncompressed RLE"
        )
        print(
            f"          {s['detections']} results ({dets}/image, compressed RLE, no bbox, "
            f"{s['distinct_scores']} distinct scores); {sizes}"
        )
    elif case == "keypoints":
        print(
            f"          {s['images']} images, person class with 17 keypoints, {s['gt']} GT "
            f"({s['gt_per_image']}/image; {mix})"
        )
        print(
            f"          {s['with_keypoints']} GT with keypoints, {s['no_keypoints']:.1%} with "
            "num_keypoints 0 (small people, crowds)"
        )
        print(
            f"          {s['detections']} results (at most {s['max_dets_per_image']}/image, "
            f"17 keypoints, no bbox, {s['distinct_scores']} distinct scores); {sizes}"
        )
    else:
        print(
            f"          {s['images']} images of {ROTATED_IMAGE_SIZE}x{ROTATED_IMAGE_SIZE}, "
            f"{s['categories']} classes, {s['gt']} GT ({s['gt_per_image']}/image; "
            f"by w*h {mix})"
        )
        print(
            f"          {s['detections']} results ({dets}/image, rbox [cx, cy, w, h, deg] and "
            f"its bounds as bbox, {s['distinct_scores']} distinct scores); {sizes}"
        )


def print_naive(record: dict) -> None:
    """The rotated case's IoU-step comparison with a naive per-pair shapely loop."""
    if "error" in record:
        print(f"Naive baseline: failed: {record['error']}")
        for line in record.get("stderr_tail", []):
            print(f"  [{NAIVE_TOOL}] {line}")
        return
    r = record
    per_pair = r["naive_s"] / max(r["pairs"], 1)
    print()
    print(
        f"IoU step only, on a subset: the first {r['images']} of {r['all_images']} images, "
        f"{r['pairs']} (detection, GT) pairs"
    )
    print(
        f"of the same image and class ({r['overlapping']} overlapping), <= 100 detections per "
        "image and class as pycocotools' computeIoU keeps:"
    )
    print(
        f"  naive shapely loop{_fmt_s(r['naive_s']):>8} s  ({per_pair * 1e6:.1f} us/pair; "
        f"all {r['total_pairs']} pairs of the set would take ~{_fmt_s(per_pair * r['total_pairs'])}"
        " s, extrapolated)"
    )
    ratio = r["naive_s"] / r["deteval_s"] if r["deteval_s"] > 0 else float("inf")
    fast_per_pair = r["deteval_s"] / max(r["pairs"], 1)
    print(
        f"  deteval PairIoU   {_fmt_s(r['deteval_s']):>8} s  ({fast_per_pair * 1e6:.1f}"
        f" us/pair) = {_fmt_ratio(ratio)} faster on the same pairs; max |IoU gap| "
        f"{r['max_gap']:.3g}"
    )
    print(
        "  (both build the polygons from the rboxes; the loop: one intersection a pair; "
        "deteval: polygons_from_rboxes + one PairIoU, as the rotated protocol does)"
    )


def run_case(args: argparse.Namespace, case: str, headed: bool) -> None:
    """Generate (or reuse) the case's data, run the tools round robin and print the report."""
    size = case_size(args, case)
    if headed:
        print()
        print("=" * 100)
        print(f"case {case} (iou_type {CASES[case]['iou_type']!r})")
        print("=" * 100)
    repeat_slow = args.repeat_slow or (args.repeat if args.quick else 1)
    tools = [t for t in TOOLS if t in args.tools]

    start = time.perf_counter()
    gt_path, dt_path, summary, reused = prepare_data(args, size, case)
    how = "reused" if reused else f"generated in {time.perf_counter() - start:.1f} s"
    print(f"data:     {gt_path.parent} ({how})")
    print_data_lines(case, gt_path, dt_path, summary, size["dets"])
    print()

    planned = {t: repeat_slow if t in SLOW_TOOLS else args.repeat for t in tools}
    records: dict[str, list[dict]] = {t: [] for t in tools}
    for tool in tools:
        if case == "rotated" and tool != "deteval":
            records[tool].append({"tool": tool, "error": NO_ROTATED})
        elif importlib.util.find_spec(MODULES[tool]) is None and tool != "deteval":
            records[tool].append({"tool": tool, "error": "not installed"})
    # Round robin, so that a slow drift of the machine does not favour one tool.
    for run in range(max(planned.values(), default=0)):
        for tool in tools:
            done = records[tool]
            if run >= planned[tool] or any("error" in r for r in done):
                continue
            record = run_child(tool, gt_path, dt_path, args.timeout, case)
            done.append(record)
            if "error" in record:
                print(f"  {tool:<18}run {run + 1}/{planned[tool]}  failed: {record['error']}")
            else:
                print(
                    f"  {tool:<18}run {run + 1}/{planned[tool]}  {record['e2e_s']:8.3f} s"
                    f"  {record['peak_mb']:7.0f} MB"
                )
            sys.stdout.flush()

    print_report(tools, records, args.baseline, case)
    if case == "rotated" and "deteval" in tools:
        n_naive = args.naive_images or max(1, size["images"] // 10)
        print_naive(run_naive(gt_path, dt_path, n_naive, args.timeout))
    sys.stdout.flush()


def run_naive(gt_path: Path, dt_path: Path, n_images: int, timeout: float) -> dict:
    command = [
        sys.executable, str(Path(__file__).resolve()), "--child", NAIVE_TOOL, "--case",
        "rotated", "--gt", str(gt_path), "--dt", str(dt_path), "--naive-images", str(n_images),
    ]  # fmt: skip
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {
            "error": f"exit code {proc.returncode}, no result",
            "stderr_tail": proc.stderr.strip().splitlines()[-6:],
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time deteval, pycocotools, faster-coco-eval and hotcoco on synthetic data."
    )
    add = parser.add_argument
    add(
        "--case",
        choices=(*CASES, "all"),
        default="bbox",
        help="what to evaluate: bbox (default), segm, keypoints, rotated, or all four in turn",
    )
    add(
        "--tools",
        nargs="+",
        choices=TOOLS,
        default=list(TOOLS),
        metavar="TOOL",
        help=f"tools to run, among {', '.join(TOOLS)} (default: all)",
    )
    add(
        "--images",
        type=int,
        help="number of images (default: bbox 5000, segm 500, keypoints 5000, rotated 1000; "
        "with --quick 500, 100, 500, 200)",
    )
    add(
        "--categories",
        type=int,
        help="number of classes (default 80; rotated 15; keypoints always 1, person)",
    )
    add(
        "--dets-per-image",
        type=int,
        help="detections per image (default 100; keypoints: at most 20)",
    )
    add("--seed", type=int, default=0, help="seed of the generator (default 0)")
    add("--quick", action="store_true", help="smaller sets; every tool runs --repeat times")
    add("--repeat", type=int, default=3, help="runs per tool (default 3)")
    add(
        "--repeat-slow",
        type=int,
        help="runs of pycocotools and faster-coco-eval (default 1; --repeat with --quick)",
    )
    add(
        "--baseline",
        choices=TOOLS,
        default="deteval",
        help="tool the ratios are computed against (default deteval)",
    )
    add(
        "--data-dir",
        type=Path,
        default=Path("bench-data"),
        help="cache of generated files (default ./bench-data/)",
    )
    add(
        "--naive-images",
        type=int,
        help="rotated: images of the naive shapely baseline's subset (default a tenth)",
    )
    add("--timeout", type=float, default=1800.0, help="seconds per run (default 1800)")
    add("--child", choices=(*TOOLS, NAIVE_TOOL), help=argparse.SUPPRESS)
    add("--gt", help=argparse.SUPPRESS)
    add("--dt", help=argparse.SUPPRESS)
    add("--generate", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)  # fmt: skip

    if args.child == NAIVE_TOOL:
        return naive_rotated_main(args.gt, args.dt, args.naive_images)
    if args.child:
        return child_main(args.child, args.gt, args.dt, CASES[args.case]["iou_type"])
    if args.generate:
        size = case_size(args, args.case)
        gt_path, dt_path, summary, reused = ensure_data(
            args.data_dir, args.seed, size["images"], size["categories"], size["dets"],
            args.case,
        )  # fmt: skip
        made = {"gt": str(gt_path), "dt": str(dt_path), "summary": summary, "reused": reused}
        print(json.dumps(made))
        return 0

    for line in machine_lines():
        print(line)
    cases = list(CASES) if args.case == "all" else [args.case]
    for case in cases:
        run_case(args, case, headed=len(cases) > 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
