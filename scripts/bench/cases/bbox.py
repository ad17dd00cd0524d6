"""The bbox case: 5,000 images, 80 classes, ~36k objects with COCO val2017's size mix (~41%
small, ~34% medium, ~24% large, ~1% crowd) and 100 detections per image (500k)."""

from __future__ import annotations

from . import Case, register
from ._synth import (
    CROWD_FRACTION,
    MEAN_GT_PER_IMAGE,
    _category_weights,
    _image_sizes,
    _rectangle,
    _sample_boxes,
    category_ids,
    describe_data,
    size_mix,
)

#: Bump when the generator changes, so that cached files of an older generator are not reused.
GENERATOR_VERSION = 2


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



def generate(seed: int, n_images: int, n_categories: int, dets: int):
    gt = make_gt(seed, n_images, n_categories)
    return gt, make_results(gt, seed, dets)


def data_lines(s: dict, dets: int, sizes: str) -> list[str]:
    return [
        f"{s['images']} images, {s['categories']} classes, {s['gt']} GT "
        f"({s['gt_per_image']}/image; {size_mix(s)})",
        f"{s['detections']} detections ({dets}/image, {s['distinct_scores']} distinct scores); "
        f"{sizes}",
    ]


CASE = register(Case(
    name="bbox", iou_type="bbox", generate=generate, describe=describe_data,
    data_lines=data_lines, images=5000, quick=500, categories=80, dets=100,
    version=GENERATOR_VERSION, data_name="synth",
    help="boxes, COCO-like (5,000 images, 500k detections)",
))  # fmt: skip
