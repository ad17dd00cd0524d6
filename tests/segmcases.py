"""The small valid segm and keypoint datasets the error tests start from
(tests/test_segm_keypoints_errors.py breaks one record of them: the GT annotation with id
``BAD_GT_ID``, ``annotations[3]``, or the result at index ``BAD_RESULT``), also evaluated by
tests/test_segm_keypoints_edges.py."""

from __future__ import annotations

import numpy as np
from maskgen import encode, runs

BAD_GT_ID = 907  # annotations[3]
BAD_RESULT = 11  # results[11]


def rect(height: int, width: int, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
    mask = np.zeros((height, width), dtype=bool)
    mask[y0:y1, x0:x1] = True
    return mask


# ---------------------------------------------------------------------------------------------
# Valid starting points
# ---------------------------------------------------------------------------------------------


def segm_case() -> tuple[dict, list[dict]]:
    """Image 3 is 7x5 (w x h), image 8 is 30x20; GT 907 is a polygon on image 8."""
    gt = {
        "images": [
            {"id": 3, "width": 7, "height": 5, "file_name": "3.jpg"},
            {"id": 8, "width": 30, "height": 20, "file_name": "8.jpg"},
        ],
        "categories": [{"id": 1, "name": "thing"}],
        "annotations": [
            {"id": 901, "image_id": 3, "category_id": 1, "iscrowd": 0, "area": 12.0,
             "bbox": [0, 0, 4, 3], "segmentation": [[0, 0, 0, 3, 4, 3, 4, 0]]},
            {"id": 902, "image_id": 8, "category_id": 1, "iscrowd": 0, "area": 60.0,
             "bbox": [2, 2, 10, 6], "segmentation": runs(rect(20, 30, 2, 8, 2, 12))},
            {"id": 903, "image_id": 8, "category_id": 1, "iscrowd": 1, "area": 100.0,
             "bbox": [18, 8, 10, 10], "segmentation": encode(rect(20, 30, 8, 18, 18, 28))},
            {"id": BAD_GT_ID, "image_id": 8, "category_id": 1, "iscrowd": 0, "area": 56.0,
             "bbox": [1, 10, 8, 7], "segmentation": [[1, 10, 1, 17, 9, 17, 9, 10]]},
        ],
    }
    results = []
    for index in range(14):
        if index % 2 == 0:
            mask = rect(5, 7, 0, 3, 0, 4 - index % 3)
            image_id = 3
        else:
            mask = rect(20, 30, 2 + index % 4, 8, 2, 12 + index % 5)
            image_id = 8
        results.append({"image_id": image_id, "category_id": 1, "segmentation": encode(mask),
                        "score": round(0.95 - 0.05 * index, 2)})
    assert results[BAD_RESULT]["image_id"] == 8
    return gt, results


def keypoints_case() -> tuple[dict, list[dict]]:
    """One 200x200 image, 17-keypoint persons; GT 907 is a regular person."""

    def person(x: float, y: float, v: int = 2) -> list:
        return [c for i in range(17) for c in (x + (i % 4) * 8, y + (i // 4) * 10, v)]

    def ann(ann_id: int, x: float, y: float, **extra) -> dict:
        return {"id": ann_id, "image_id": 3, "category_id": 1, "iscrowd": 0,
                "keypoints": person(x, y), "num_keypoints": 17, "bbox": [x, y, 30, 45],
                "area": 1200.0, **extra}

    gt = {
        "images": [{"id": 3, "width": 200, "height": 200, "file_name": "3.jpg"}],
        "categories": [{"id": 1, "name": "person"}],
        "annotations": [
            ann(901, 10, 10),
            ann(902, 60, 10, keypoints=[0] * 51, num_keypoints=0),
            ann(903, 100, 100, iscrowd=1, keypoints=[0] * 51, num_keypoints=0),
            ann(BAD_GT_ID, 10, 120),
        ],
    }
    results = []
    for index in range(14):
        x, y = [(10, 10), (60, 10), (10, 120), (150, 20)][index % 4]
        results.append({"image_id": 3, "category_id": 1, "score": round(0.9 - 0.03 * index, 2),
                        "keypoints": person(x + 0.5 * index, y - 0.25 * index, 1)})
    return gt, results
