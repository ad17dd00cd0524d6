"""What the synthetic cases share: COCO-like classes, image sizes, box sizes, object counts and
the plan of which detections copy which object."""

from __future__ import annotations

# numpy is imported inside the generator functions so that a child process measures the import
# of numpy as part of the tool it runs, as a user of that tool would pay it.

# Share of small (area < 32^2), medium (< 96^2) and large objects, as in COCO val2017.
SIZE_MIX = (0.415, 0.345, 0.24)
CROWD_FRACTION = 0.01
MEAN_GT_PER_IMAGE = 7.3


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



def describe_dets_per_image(summary: dict, results: list[dict]) -> dict:
    """``summary`` with the largest number of results of one image."""
    per_image: dict[int, int] = {}
    for r in results:
        per_image[r["image_id"]] = per_image.get(r["image_id"], 0) + 1
    summary["max_dets_per_image"] = max(per_image.values(), default=0)
    return summary


def size_mix(s: dict) -> str:
    """The summary's share of small, medium, large and crowd objects, as the report words it."""
    return (
        f"small {s['small']:.1%}, medium {s['medium']:.1%}, large {s['large']:.1%}, "
        f"crowd {s['crowd']:.1%}"
    )
