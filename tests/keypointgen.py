"""Seeded random COCO keypoint datasets (the masks' generator is maskgen.py).

``make_keypoints_dataset(seed, ...)`` returns ``(gt_dict, results)`` for keypoint
evaluation, a pure function of its arguments (``np.random.default_rng(seed)``). It mixes, on
purpose (see docs/protocols/coco.md §5.4, §9):

* person-like categories with the 17 COCO keypoints and, optionally, one category with
  ``len(OTHER_SIGMAS)`` keypoints (evaluated with ``OTHER_SIGMAS``);
* GT keypoints with v = 0, 1, 2 (v = 0 at (0, 0) or at a real position), objects with
  ``num_keypoints`` 0 (ignored), objects whose keypoints are all v = 0 but whose
  ``num_keypoints`` is positive (OKS by the enlarged-box rule for a regular GT), crowd GT;
* GT ``area`` fields on and near the limits, and 0;
* results with and without ``bbox`` (loadRes gives keypoint results without a box the area
  of their keypoints' extent, including keypoints reported at (0, 0)), integer and float
  coordinates, tied scores, more than 20 results in some groups.

The reference and the checks are in ``cocogen``: ``run_pycocotools`` with
``iou_type="keypoints"`` (and ``keypoint_sigmas``), and ``assert_parity``.
"""

from __future__ import annotations

import numpy as np
from cocogen import _distinct_ids, _score
from maskgen import _finish, _round_style, runs

__all__ = ["COCO_SIGMAS", "OTHER_SIGMAS", "make_keypoints_dataset"]

COCO_SIGMAS = np.array(
    [0.26, 0.25, 0.25, 0.35, 0.35, 0.79, 0.79, 0.72, 0.72, 0.62, 0.62, 1.07, 1.07, 0.87, 0.87,
     0.89, 0.89]
) / 10.0
# The sigmas of the non-person category ("five points": four corners and a centre).
OTHER_SIGMAS = np.array([0.05, 0.05, 0.07, 0.07, 0.031])


# ---------------------------------------------------------------------------------------------
# Keypoints
# ---------------------------------------------------------------------------------------------

# Positions of the 17 COCO keypoints in a person's box, (x, y) in [-0.5, 0.5].
_PERSON = np.array(
    [
        [0.0, -0.40], [-0.04, -0.43], [0.04, -0.43], [-0.08, -0.41], [0.08, -0.41],
        [-0.18, -0.28], [0.18, -0.28], [-0.26, -0.12], [0.26, -0.12], [-0.30, 0.02],
        [0.30, 0.02], [-0.11, 0.05], [0.11, 0.05], [-0.12, 0.27], [0.12, 0.27],
        [-0.13, 0.48], [0.13, 0.48],
    ]
)
# The "five points" object: four corners and a centre.
_OTHER = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5], [0.0, 0.0]])
_PERSON_NAMES = [
    "nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder",
    "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip",
    "right_hip", "left_knee", "right_knee", "left_ankle", "right_ankle",
]


def _object_points(
    rng: np.random.Generator, template: np.ndarray, width: int, height: int, scale=None
) -> tuple[np.ndarray, float, float]:
    """True keypoint positions (K, 2) of a random object, and its size (w, h)."""
    tall = float(np.exp(rng.uniform(np.log(10.0), np.log(max(min(height, 420), 12)))))
    tall = tall if scale is None else scale
    wide = tall * float(rng.uniform(0.35, 0.9))
    cx = float(rng.uniform(-0.1 * width, 1.1 * width))
    cy = float(rng.uniform(-0.1 * height, 1.1 * height))
    points = template * [wide, tall] + [cx, cy] + rng.normal(0.0, 0.02 * tall, template.shape)
    return points, wide, tall


def _coords(rng: np.random.Generator, values: np.ndarray, style: str) -> list[float]:
    if style == "int":
        return [int(v) for v in np.round(values)]
    if style == "float":
        return [float(v) for v in values]
    return _round_style(rng, values)


def _flat(coordinates: list, visibility: list) -> list:
    """[x0, y0, x1, y1, ...] and [v0, v1, ...] -> [x0, y0, v0, x1, y1, v1, ...]."""
    out: list = []
    for x, y, v in zip(coordinates[0::2], coordinates[1::2], visibility):
        out += [x, y, v]
    return out


def make_keypoints_dataset(
    seed: int,
    *,
    n_images: int | None = None,
    n_categories: int | None = None,
    other_category: bool = False,
    max_gt: int = 3,
    max_dt: int = 3,
    p_crowd: float = 0.15,
    p_many: float = 0.06,
    n_many: tuple[int, int] = (21, 32),
    coordinates: str | None = None,
    bbox_mode: str | None = None,
) -> tuple[dict, list[dict]]:
    """Build a random COCO keypoints GT dict and a keypoint results list.

    Parameters
    ----------
    seed : the seed of ``np.random.default_rng``; the dataset depends on nothing else.
    n_images, n_categories : drawn from 3..10 and 1..2 (person-like, 17 keypoints) when None.
    other_category : add a category whose objects have ``len(OTHER_SIGMAS)`` keypoints; it is
        the last of ``gt["categories"]``.
    max_gt, max_dt : the largest number of GT / unrelated detections per (image, category).
    p_crowd : probability that a group gets a crowd region with detections inside.
    p_many : probability that a group gets ``n_many`` more results (more than 20).
    coordinates : "int", "float" or "mixed" result coordinates; drawn when None. GT
        coordinates are integers (as in COCO files) unless "float".
    bbox_mode : "none", "all" or "later" (see the module docstring); drawn when None.
    """
    rng = np.random.default_rng(seed)
    n_images = int(rng.integers(3, 11)) if n_images is None else n_images
    n_categories = int(rng.integers(1, 3)) if n_categories is None else n_categories
    if bbox_mode is None:
        bbox_mode = str(rng.choice(["none", "none", "all", "later"]))
    if coordinates is None:
        coordinates = str(rng.choice(["int", "float", "mixed"]))
    score_mode = int(rng.integers(5))

    image_ids = _distinct_ids(rng, n_images, max(3 * n_images, 10))
    category_ids = _distinct_ids(rng, n_categories + other_category, 10)
    unknown_category = max(category_ids) + int(rng.integers(1, 5))
    templates = {c: _PERSON for c in category_ids}
    categories = [
        {"id": c, "name": f"person{c}", "supercategory": "person", "keypoints": _PERSON_NAMES,
         "skeleton": [[16, 14], [14, 12], [17, 15], [15, 13]]}
        for c in category_ids
    ]
    if other_category:
        templates[category_ids[-1]] = _OTHER
        categories[-1] = {"id": category_ids[-1], "name": "fivepoints", "supercategory": "shape",
                          "keypoints": ["tl", "tr", "br", "bl", "c"], "skeleton": []}
    images = []
    for image_id in image_ids:
        width, height = int(rng.integers(60, 641)), int(rng.integers(60, 481))
        images.append(
            {"id": image_id, "width": width, "height": height, "file_name": f"{image_id}.jpg"}
        )
    no_gt_images = {i for i in image_ids if rng.random() < 0.15}
    no_dt_images = {i for i in image_ids if rng.random() < 0.1}
    no_dt_categories = {c for c in category_ids if len(category_ids) > 1 and rng.random() < 0.15}
    gt_style = "float" if coordinates == "float" else "int"

    annotations: list[dict] = []
    results: list[dict] = []

    def add_dt(image: dict, category: int, points: np.ndarray, scale: float) -> None:
        k = len(points)
        noisy = points + rng.normal(0.0, scale, points.shape)
        at_origin = rng.random(k) < (0.08 if rng.random() < 0.3 else 0.0)
        noisy[at_origin] = 0.0  # keypoints a model reports at (0, 0): they widen the extent
        roll = rng.random()
        if roll < 0.4:
            visibility: list = [1] * k
        elif roll < 0.6:
            visibility = [2] * k
        else:
            visibility = [round(float(v), 3) for v in rng.random(k)]
        results.append(
            {
                "image_id": image["id"],
                "category_id": category,
                "keypoints": _flat(_coords(rng, noisy.ravel(), coordinates), visibility),
                "score": _score(rng, score_mode),
            }
        )

    for image in images:
        width, height = image["width"], image["height"]
        for category in category_ids:
            template = templates[category]
            k = len(template)
            with_gt = image["id"] not in no_gt_images
            with_dt = image["id"] not in no_dt_images and category not in no_dt_categories
            truths: list[tuple[np.ndarray, float]] = []
            if with_gt:
                for _ in range(int(rng.integers(0, max_gt + 1))):
                    points, wide, tall = _object_points(rng, template, width, height)
                    rate = float(rng.choice([0.0, 0.3, 0.7, 0.9, 1.0]))
                    visible = rng.random(k) < rate
                    v = np.where(visible, np.where(rng.random(k) < 0.75, 2, 1), 0)
                    shown = points.copy()
                    if rng.random() < 0.85:
                        shown[~visible] = 0.0  # COCO writes unlabelled keypoints as 0, 0, 0
                    num = int(np.count_nonzero(v))
                    roll = rng.random()
                    if roll < 0.05:
                        num = 0  # ignored although it has visible keypoints
                    elif roll < 0.12:
                        v[:] = 0  # a regular GT without visible keypoints: enlarged-box OKS
                        num = int(rng.integers(1, 6))
                    x0, y0 = points.min(axis=0) - 0.05 * tall
                    x1, y1 = points.max(axis=0) + 0.05 * tall
                    box = _round_style(rng, np.array([x0, y0, x1 - x0, y1 - y0]))
                    roll = rng.random()
                    if roll < 0.7:
                        area = round(box[2] * box[3] * float(rng.uniform(0.4, 0.8)), 2)
                    elif roll < 0.9:
                        area = float(rng.choice([1023.5, 1024.0, 1024.5, 9216.0, 9216.5]))
                    elif roll < 0.93:
                        area = 0.0
                    else:
                        area = box[2] * box[3]
                    annotations.append(
                        {
                            "id": 0,
                            "image_id": image["id"],
                            "category_id": category,
                            "keypoints": _flat(
                                _coords(rng, shown.ravel(), gt_style), [int(x) for x in v]
                            ),
                            "num_keypoints": num,
                            "bbox": box,
                            "area": area,
                            "iscrowd": 0,
                            "segmentation": [
                                [box[0], box[1], box[0], box[1] + box[3], box[0] + box[2],
                                 box[1] + box[3], box[0] + box[2], box[1]]
                            ],
                        }
                    )
                    truths.append((points, max(float(np.sqrt(max(area, 1.0))), 2.0)))
            crowd = None
            if with_gt and rng.random() < p_crowd:
                x, y = float(rng.uniform(-20, width / 2)), float(rng.uniform(-20, height / 2))
                w, h = float(rng.uniform(60, 400)), float(rng.uniform(60, 400))
                crowd = [round(x, 1), round(y, 1), round(w, 1), round(h, 1)]
                annotations.append(
                    {
                        "id": 0,
                        "image_id": image["id"],
                        "category_id": category,
                        "keypoints": [0] * (3 * k),
                        "num_keypoints": 0,
                        "bbox": crowd,
                        "area": round(w * h * 0.7, 1),
                        "iscrowd": 1,
                        "segmentation": runs(np.ones((height, width), dtype=bool)),
                    }
                )
            if not with_dt:
                continue
            for points, size in truths:
                if rng.random() < 0.85:
                    for _ in range(int(rng.integers(1, 4))):
                        spread = size * float(rng.choice([0.0, 0.01, 0.03, 0.06, 0.12, 0.3]))
                        add_dt(image, category, points, spread)
            if crowd is not None:
                for _ in range(int(rng.integers(1, 5))):
                    scale = min(crowd[2], crowd[3]) * float(rng.uniform(0.1, 0.5))
                    points, _, _ = _object_points(rng, template, width, height, scale=scale)
                    points += [crowd[0] + crowd[2] / 2 - points[:, 0].mean(),
                               crowd[1] + crowd[3] / 2 - points[:, 1].mean()]
                    add_dt(image, category, points, scale * 0.2)
            n_extra = int(rng.integers(0, max_dt + 1))
            if rng.random() < p_many:
                n_extra += int(rng.integers(n_many[0], n_many[1] + 1))
            for _ in range(n_extra):
                if truths and rng.random() < 0.4:
                    points, size = truths[int(rng.integers(len(truths)))]
                    add_dt(image, category, points, size * float(rng.uniform(0.02, 0.4)))
                else:
                    points, _, tall = _object_points(rng, template, width, height)
                    add_dt(image, category, points, 0.02 * tall)
        if rng.random() < 0.05:
            points, _, _ = _object_points(rng, _PERSON, width, height)
            add_dt(image, unknown_category, points, 1.0)
    if not results:
        points, _, _ = _object_points(rng, _PERSON, 100, 100)
        add_dt(images[0], unknown_category, points, 1.0)

    def make_box(result: dict) -> list[float]:
        xy = np.reshape(result["keypoints"], (-1, 3))[:, :2].astype(np.float64)
        x0, y0 = xy.min(axis=0)
        x1, y1 = xy.max(axis=0)
        roll = rng.random()
        if roll < 0.2:  # w*h exactly on a limit
            w, h = [(32.0, 32.0), (16.0, 64.0), (96.0, 96.0), (48.0, 192.0)][rng.integers(4)]
            return [float(x0), float(y0), w, h]
        pad = float(rng.uniform(0.0, 0.15)) * max(x1 - x0, y1 - y0)
        return _round_style(rng, np.array([x0 - pad, y0 - pad, x1 - x0 + 2 * pad,
                                           y1 - y0 + 2 * pad]))

    return _finish(rng, annotations, results, bbox_mode, make_box, images=images,
                   categories=categories, description=f"maskgen keypoints seed {seed}")
