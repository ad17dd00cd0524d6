"""COCO readers and writers: instances JSON (ground truth) and results files.

The readers validate every record and convert it once into the columnar types of
:mod:`deteval.data`; the original ``[x, y, w, h]`` numbers are kept in ``xywh`` because the
COCO protocol computes with them (``semantics.md`` §2.3).

Results follow pycocotools' ``loadRes``: detection ids are ``1..N`` in input order (the
order that breaks score ties), the detection area is ``w * h``, and a result whose
``category_id`` is not a ground-truth category is kept with ``category_index == -1`` so that
the protocol can drop it and say how many it dropped. Unlike ``loadRes``, an empty results
list is not an error, and a result on an unknown image is reported by its id.

Examples
--------
>>> gt = {"images": [{"id": 1, "width": 64, "height": 48}],
...       "categories": [{"id": 3, "name": "cat"}],
...       "annotations": [{"id": 1, "image_id": 1, "category_id": 3,
...                        "bbox": [4, 4, 10, 20], "area": 200, "iscrowd": 0}]}
>>> dataset = read_coco_gt(gt)
>>> dataset.gt.boxes.tolist()
[[4.0, 4.0, 14.0, 24.0]]
>>> dt = read_coco_results([{"image_id": 1, "category_id": 3, "bbox": [4, 4, 10, 19],
...                          "score": 0.8}], dataset)
>>> dt.area.tolist(), dt.scores.tolist()
([190.0], [0.8])
"""

from __future__ import annotations

from .gt import read_coco_gt
from .results import read_coco_results

# The typed (msgspec) fast paths, which tests call directly.
from .typed import _typed_gt_columns as _typed_gt_columns
from .typed import _typed_keypoint_gt as _typed_keypoint_gt
from .typed import _typed_keypoint_results as _typed_keypoint_results
from .typed import _typed_results_columns as _typed_results_columns
from .writer import dataset_to_coco, write_coco_results

__all__ = ["read_coco_gt", "read_coco_results", "write_coco_results", "dataset_to_coco"]
