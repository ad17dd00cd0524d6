"""What the keypoint reader and OKS tests share: one-category ground truths, and the outcome of
reading a file and a dict (columns, or the error) for comparing them."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt, read_coco_results

K = 17


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def one_category_gt(*annotations: dict, categories: list | None = None) -> dict:
    return {
        "images": [{"id": 1, "width": 200, "height": 200, "file_name": "1.jpg"}],
        "categories": categories or [{"id": 1, "name": "person"}],
        "annotations": [{"id": i + 1, "image_id": 1, "category_id": 1, "iscrowd": 0, **a}
                        for i, a in enumerate(annotations)],
    }


def outcome(read):
    try:
        value = read()
    except FormatError as error:
        return ("error", error.message, error.record)
    return ("ok", _flatten(value))


def _flatten(obj, prefix: str = "") -> dict:
    out = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, np.ndarray):
            out[prefix + f.name] = (v.dtype.str, v.shape,
                                    repr(v.tolist()) if v.dtype == object else v.tobytes())
        elif dataclasses.is_dataclass(v):
            out.update(_flatten(v, prefix + f.name + "."))
        elif f.name != "source":
            out[prefix + f.name] = repr(v)
    return out


def gt_outcomes(gt: dict, tmp_path):
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    return (outcome(lambda: read_coco_gt(path, iou_type="keypoints")),
            outcome(lambda: read_coco_gt(gt, iou_type="keypoints")))


def dt_outcomes(results: list, dataset, tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    return (outcome(lambda: read_coco_results(path, dataset, iou_type="keypoints")),
            outcome(lambda: read_coco_results(results, dataset, iou_type="keypoints")))
