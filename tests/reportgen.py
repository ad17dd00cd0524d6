"""Seeded scenes for the report tests: K classes (20, 80, 1,203 ...), small images on disk,
and a detector that finds most objects, confuses some with the next class, misses some and
fires on background, so that every panel of the report has something to show."""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: One class name long enough to be cut in the figures (it must never overlap a neighbour).
LONG_NAME = "a_category_name_far_too_long_for_any_label_slot"


def make_scene(n_classes: int, n_images: int, seed: int = 0, *, width: int = 96,
               height: int = 72) -> tuple[dict, list]:
    """A COCO ground-truth dict and results list; every class has at least one object when
    ``3 * n_images >= n_classes``."""
    rng = np.random.default_rng(seed)
    categories = [{"id": k + 1, "name": LONG_NAME if k == 0 else f"class_{k:04d}"}
                  for k in range(n_classes)]
    images, annotations, results = [], [], []
    next_class = 0
    for i in range(n_images):
        images.append({"id": i + 1, "file_name": f"img_{i:05d}.png", "width": width,
                       "height": height})
        for _ in range(int(rng.integers(1, 5))):
            k = next_class % n_classes if next_class < n_classes else int(
                rng.integers(0, n_classes))
            next_class += 1
            w, h = rng.uniform(16, 40), rng.uniform(14, 30)
            x, y = rng.uniform(0, width - w), rng.uniform(0, height - h)
            annotations.append({"id": len(annotations) + 1, "image_id": i + 1,
                                "category_id": k + 1, "bbox": [x, y, w, h], "area": w * h,
                                "iscrowd": 0})
            fate = rng.random()
            if fate < 0.15:           # missed
                continue
            label = k if fate < 0.7 else (k + 1) % n_classes   # right, or the next class
            jitter = rng.normal(0, 1.5, 4)
            results.append({"image_id": i + 1, "category_id": label + 1,
                            "bbox": [x + jitter[0], y + jitter[1], w + jitter[2],
                                     h + jitter[3]],
                            "score": float(rng.uniform(0.3, 1.0))})
        for _ in range(int(rng.integers(0, 2))):   # background
            results.append({"image_id": i + 1,
                            "category_id": int(rng.integers(0, n_classes)) + 1,
                            "bbox": [float(rng.uniform(0, width - 12)),
                                     float(rng.uniform(0, height - 12)), 12.0, 12.0],
                            "score": float(rng.uniform(0.0, 0.6))})
    gt = {"images": images, "annotations": annotations, "categories": categories}
    return gt, results


def write_images(gt: dict, folder: Path, seed: int = 0) -> Path:
    """One small PNG per image of ``gt`` in ``folder``: a flat colour and its objects."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    boxes: dict[int, list] = {}
    for a in gt["annotations"]:
        boxes.setdefault(a["image_id"], []).append(a["bbox"])
    for image in gt["images"]:
        picture = Image.new("RGB", (image["width"], image["height"]),
                            tuple(int(v) for v in rng.integers(60, 200, 3)))
        draw = ImageDraw.Draw(picture)
        for x, y, w, h in boxes.get(image["id"], []):
            draw.rectangle([x, y, x + w, y + h],
                           fill=tuple(int(v) for v in rng.integers(0, 255, 3)))
        picture.save(folder / image["file_name"])
    return folder


def halves(gt: dict) -> dict:
    """Image tags ``{image_id: {"half": "odd" | "even"}}``: two image slices of ``gt``."""
    return {image["id"]: {"half": "odd" if image["id"] % 2 else "even"}
            for image in gt["images"]}
