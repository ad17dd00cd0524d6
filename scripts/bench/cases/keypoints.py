"""The keypoints case: 5,000 images, one person class with 17 keypoints, ~11k people (a third with
``num_keypoints`` 0: most small people, and crowds), at most 20 results per image with 17
keypoints and no ``bbox``; iou_type / iouType ``"keypoints"``."""

from __future__ import annotations

from ..common import KEYPOINT_STAT_NAMES
from . import Case, register
from ._synth import (
    SIZE_MIX,
    _image_records,
    _objects_per_image,
    _rectangle,
    describe_data,
    describe_dets_per_image,
    size_mix,
)
from .segm import GENERATOR_VERSION

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



def generate(seed: int, n_images: int, n_categories: int, dets: int):
    gt = make_keypoints_gt(seed, n_images)
    return gt, make_keypoints_results(gt, seed, dets)


def describe(gt: dict, results: list[dict]) -> dict:
    summary = describe_dets_per_image(describe_data(gt, results), results)
    anns = gt["annotations"]
    summary["no_keypoints"] = round(sum(a["num_keypoints"] == 0 for a in anns) / max(len(anns), 1),
                                    3)  # fmt: skip
    summary["with_keypoints"] = sum(a["num_keypoints"] > 0 for a in anns)
    return summary


def data_lines(s: dict, dets: int, sizes: str) -> list[str]:
    return [
        f"{s['images']} images, person class with 17 keypoints, {s['gt']} GT "
        f"({s['gt_per_image']}/image; {size_mix(s)})",
        f"{s['with_keypoints']} GT with keypoints, {s['no_keypoints']:.1%} with "
        "num_keypoints 0 (small people, crowds)",
        f"{s['detections']} results (at most {s['max_dets_per_image']}/image, "
        f"17 keypoints, no bbox, {s['distinct_scores']} distinct scores); {sizes}",
    ]


CASE = register(Case(
    name="keypoints", iou_type="keypoints", generate=generate, describe=describe,
    data_lines=data_lines, images=5000, quick=500, categories=1, dets=20,
    version=GENERATOR_VERSION, fixed_categories=True, stat_names=KEYPOINT_STAT_NAMES,
    help="people with 17 keypoints, OKS (5,000 images, <= 20 results each)",
))  # fmt: skip
