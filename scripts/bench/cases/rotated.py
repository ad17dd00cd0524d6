"""The rotated case: 1,000 images of 1024 x 1024, 15 classes, ~20k objects and 100 results per
image, each record with ``rbox`` ``[cx, cy, w, h, angle_degrees]``, ``bbox`` its axis-aligned
bounds and (ground truth) ``area`` = w * h. Only deteval evaluates rotated boxes
(``iou_type="rotated"``); as a baseline for the IoU step alone, a naive Python loop of one
shapely intersection per (detection, object) pair runs on a tenth of the images, next to
deteval's ``PairIoU`` (what the protocol uses) on the same pairs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

from ..common import LAUNCHER, fmt_ratio, fmt_s, use_source_tree
from . import Case, register
from ._synth import (
    SIZE_MIX,
    _categories,
    _category_weights,
    _objects_per_image,
    _plan_detections,
    describe_data,
    describe_dets_per_image,
    size_mix,
)
from .segm import GENERATOR_VERSION

NAIVE_TOOL = "shapely-loop"

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
    use_source_tree()
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



def naive_child(args) -> int:
    """``--child shapely-loop``: the naive IoU step in a child process of its own."""
    return naive_rotated_main(args.gt, args.dt, args.naive_images)


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
        f"  naive shapely loop{fmt_s(r['naive_s']):>8} s  ({per_pair * 1e6:.1f} us/pair; "
        f"all {r['total_pairs']} pairs of the set would take ~{fmt_s(per_pair * r['total_pairs'])}"
        " s, extrapolated)"
    )
    ratio = r["naive_s"] / r["deteval_s"] if r["deteval_s"] > 0 else float("inf")
    fast_per_pair = r["deteval_s"] / max(r["pairs"], 1)
    print(
        f"  deteval PairIoU   {fmt_s(r['deteval_s']):>8} s  ({fast_per_pair * 1e6:.1f}"
        f" us/pair) = {fmt_ratio(ratio)} faster on the same pairs; max |IoU gap| "
        f"{r['max_gap']:.3g}"
    )
    print(
        "  (both build the polygons from the rboxes; the loop: one intersection a pair; "
        "deteval: polygons_from_rboxes + one PairIoU, as the rotated protocol does)"
    )



def run_naive(gt_path: Path, dt_path: Path, n_images: int, timeout: float) -> dict:
    command = [
        sys.executable, str(LAUNCHER), "--child", NAIVE_TOOL, "--case",
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


def after(args, gt_path: Path, dt_path: Path, size: dict, tools: list[str]) -> None:
    """After the report: the IoU step against the naive loop, on a tenth of the images."""
    if "deteval" in tools:
        n_naive = args.naive_images or max(1, size["images"] // 10)
        print_naive(run_naive(gt_path, dt_path, n_naive, args.timeout))


def generate(seed: int, n_images: int, n_categories: int, dets: int):
    gt = make_rotated_gt(seed, n_images, n_categories)
    return gt, make_rotated_results(gt, seed, dets)


def describe(gt: dict, results: list[dict]) -> dict:
    return describe_dets_per_image(describe_data(gt, results), results)


def data_lines(s: dict, dets: int, sizes: str) -> list[str]:
    return [
        f"{s['images']} images of {ROTATED_IMAGE_SIZE}x{ROTATED_IMAGE_SIZE}, "
        f"{s['categories']} classes, {s['gt']} GT ({s['gt_per_image']}/image; "
        f"by w*h {size_mix(s)})",
        f"{s['detections']} results ({dets}/image, rbox [cx, cy, w, h, deg] and "
        f"its bounds as bbox, {s['distinct_scores']} distinct scores); {sizes}",
    ]


CASE = register(Case(
    name="rotated", iou_type="rotated", generate=generate, describe=describe,
    data_lines=data_lines, images=1000, quick=200, categories=15, dets=100,
    version=GENERATOR_VERSION, children={NAIVE_TOOL: naive_child}, after=after,
    help="rotated boxes, deteval only, and a naive shapely loop for the IoU step",
))  # fmt: skip
