"""The segm case: 500 images, 80 classes, ~3.5k objects whose ground truth is polygons (16% in
2-3 parts; crowd regions as uncompressed RLE; ``area`` the mask's pixel count) and 100 results
per image as compressed RLE without ``bbox`` (perturbed copies of the objects' masks through
``pycocotools.mask.encode``, and new shapes), so that areas are mask areas. The report says
whether deteval is at least 5x faster than pycocotools end to end (issue 3)."""

from __future__ import annotations

from . import Case, register
from ._synth import (
    MEAN_GT_PER_IMAGE,
    _categories,
    _category_weights,
    _image_records,
    _objects_per_image,
    _plan_detections,
    _sample_boxes,
    describe_data,
    describe_dets_per_image,
    size_mix,
)

#: Version of the generator (of the segm, keypoints and rotated ones alike, as before the split).
GENERATOR_VERSION = 1

# Each case has its own seeded streams ([seed, 10 + k]), so the bbox files do not change.
SEGM_MULTIPART = 0.15  # objects drawn in 2-3 separate polygons (as occlusion splits COCO's)
SEGM_CROWD = 0.015  # crowd regions, stored as uncompressed RLE as in COCO


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



def generate(seed: int, n_images: int, n_categories: int, dets: int):
    gt = make_segm_gt(seed, n_images, n_categories)
    return gt, make_segm_results(gt, seed, dets)


def describe(gt: dict, results: list[dict]) -> dict:
    summary = describe_dets_per_image(describe_data(gt, results), results)
    anns = gt["annotations"]
    n = max(len(anns), 1)
    summary["multipart"] = round(
        sum(isinstance(a["segmentation"], list) and len(a["segmentation"]) > 1 for a in anns)
        / n, 3)  # fmt: skip
    summary["crowd_rle"] = sum(isinstance(a["segmentation"], dict) for a in anns)
    return summary


def data_lines(s: dict, dets: int, sizes: str) -> list[str]:
    return [
        f"{s['images']} images, {s['categories']} classes, {s['gt']} GT "
        f"({s['gt_per_image']}/image; by mask area {size_mix(s)})",
        f"GT polygons, {s['multipart']:.1%} in 2-3 parts; {s['crowd_rle']} crowd "
        "regions as uncompressed RLE",
        f"{s['detections']} results ({dets}/image, compressed RLE, no bbox, "
        f"{s['distinct_scores']} distinct scores); {sizes}",
    ]


CASE = register(Case(
    name="segm", iou_type="segm", generate=generate, describe=describe, data_lines=data_lines,
    images=500, quick=100, categories=80, dets=100, version=GENERATOR_VERSION,
    required_speedup=5.0, help="masks: polygons and RLE (500 images, 50k results)",
))  # fmt: skip
