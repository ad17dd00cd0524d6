"""Hand-built three-class scenes for the confusion-matrix and outcome tests."""

from __future__ import annotations

import numpy as np

from deteval.data import Categories, Dataset, Detections, GroundTruth, Images

NAMES = ("cat", "dog", "bird")
CAT, DOG, BIRD = 0, 1, 2


def box(x: float, y: float, size: float = 10.0) -> list[float]:
    return [x, y, x + size, y + size]


def scene(objects, detections, n_images: int = 1) -> tuple[Dataset, Detections]:
    """objects: (image, class, box[, crowd, ignore]); detections: (image, class, box, score)."""
    objects = [tuple(o) + (False, False)[len(o) - 3:] for o in objects]
    gt = GroundTruth(image_index=[o[0] for o in objects], category_index=[o[1] for o in objects],
                     boxes=np.array([o[2] for o in objects], dtype=float).reshape(-1, 4),
                     iscrowd=[o[3] for o in objects], ignore=[o[4] for o in objects])
    dataset = Dataset(Images(ids=np.arange(1, n_images + 1)),
                      Categories(ids=[1, 2, 3], names=NAMES), gt)
    dt = Detections(image_index=[d[0] for d in detections],
                    category_index=[d[1] for d in detections],
                    boxes=np.array([d[2] for d in detections], dtype=float).reshape(-1, 4),
                    scores=[d[3] for d in detections])
    return dataset, dt
