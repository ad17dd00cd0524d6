"""The bundled sample: a small synthetic detection dataset, generated deterministically.

``fixtures/demo/`` holds the files this module generates (``scripts/make_fixtures.py``
writes them and a test checks that they still match), so ``deteval demo`` needs nothing
but the package. Only uniform draws (``Generator.random``) are used: their stream is stable
across numpy versions.

Examples
--------
>>> gt, results = make_demo(seed=0)
>>> len(gt["images"]), len(gt["categories"])
(24, 5)
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEMO_CATEGORIES", "make_demo"]

DEMO_CATEGORIES = ("person", "bicycle", "car", "dog", "traffic light")


def _r(value: float) -> float:
    return round(float(value), 2)


def make_demo(seed: int = 0, n_images: int = 24) -> tuple[dict, list]:
    """Generate the demo ground truth (COCO instances dict) and results (COCO results list).

    Scenes of 640x480 images with 1-6 objects each, a few crowd regions, objects of all three
    COCO sizes; a simulated detector that finds most objects with some localisation error,
    sometimes twice, sometimes with the wrong class, and adds background false positives.

    Parameters
    ----------
    seed : int
    n_images : int

    Returns
    -------
    (dict, list)
        The ground truth and the detections, ready for ``json.dump``.
    """
    rng = np.random.default_rng(seed)
    uniform = rng.random
    images, annotations, results = [], [], []
    n_cat = len(DEMO_CATEGORIES)
    for image_id in range(1, n_images + 1):
        width, height = 640, 480
        images.append({"id": image_id, "file_name": f"demo_{image_id:03d}.jpg",
                       "width": width, "height": height})
        for _ in range(1 + int(uniform() * 6)):
            size = [12, 48, 160][int(uniform() * 3)] * (0.7 + 0.8 * uniform())
            w, h = size * (0.6 + 0.8 * uniform()), size * (0.6 + 0.8 * uniform())
            x, y = uniform() * (width - w), uniform() * (height - h)
            category = 1 + int(uniform() * n_cat)
            crowd = int(uniform() < 0.04)
            box = [_r(x), _r(y), _r(w), _r(h)]
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": category, "bbox": box,
                                # a segmentation-like area: smaller than the box
                                "area": _r(w * h * (0.6 + 0.3 * uniform())),
                                "iscrowd": crowd})
            if crowd:
                continue
            found = uniform()
            if found < 0.85:
                jitter = 0.25 * (1 - found)
                dx, dy = (uniform() - 0.5) * jitter * w, (uniform() - 0.5) * jitter * h
                dw, dh = w * (1 + (uniform() - 0.5) * jitter), h * (1 + (uniform() - 0.5) * jitter)
                wrong_class = uniform() < 0.08
                label = 1 + (category % n_cat) if wrong_class else category
                results.append({"image_id": image_id, "category_id": label,
                                "bbox": [_r(x + dx), _r(y + dy), _r(dw), _r(dh)],
                                "score": _r(0.35 + 0.6 * uniform())})
                if uniform() < 0.15:  # a duplicate, slightly shifted, lower score
                    results.append({"image_id": image_id, "category_id": category,
                                    "bbox": [_r(x + dx + 3), _r(y + dy + 2), _r(dw), _r(dh)],
                                    "score": _r(0.05 + 0.4 * uniform())})
        for _ in range(int(uniform() * 4)):  # background false positives
            w, h = 20 + 150 * uniform(), 20 + 150 * uniform()
            results.append({"image_id": image_id, "category_id": 1 + int(uniform() * n_cat),
                            "bbox": [_r(uniform() * (width - w)), _r(uniform() * (height - h)),
                                     _r(w), _r(h)],
                            "score": _r(0.5 * uniform())})
    categories = [{"id": i + 1, "name": name, "supercategory": "demo"}
                  for i, name in enumerate(DEMO_CATEGORIES)]
    gt = {"info": {"description": "deteval demo dataset (synthetic)", "seed": seed},
          "images": images, "annotations": annotations, "categories": categories}
    return gt, results
