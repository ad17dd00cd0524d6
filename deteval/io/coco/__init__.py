"""COCO readers and writers: instances JSON (ground truth) and results files.

The readers validate every record and convert it once into the columnar types of
:mod:`deteval.data`; the original ``[x, y, w, h]`` numbers are kept in ``xywh`` because the
COCO protocol computes with them (docs/protocols/coco.md §2.3).

Results follow pycocotools' ``loadRes``: detection ids are ``1..N`` in input order (the
order that breaks score ties), the detection area is ``w * h``, and a result whose
``category_id`` is not a ground-truth category is kept with ``category_index == -1`` so that
the protocol can drop it and say how many it dropped. Unlike ``loadRes``, an empty results
list is not an error, and a result on an unknown image is reported by its id.

Examples
--------
>>> from deteval.io.coco import read_coco_gt, read_coco_results
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

from ..._lazy import lazy_attribute

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

#: Where each name lives: name -> submodule of this package, imported on first use (PEP
#: 562): reading boxes imports neither the writer nor the mask code of segmentations. The
#: typed (msgspec) fast paths are here too because tests call them directly.
_LAZY = {"read_coco_gt": "gt", "read_coco_results": "results",
         "dataset_to_coco": "writer", "write_coco_results": "writer",
         **dict.fromkeys(("_typed_gt_columns", "_typed_keypoint_gt", "_typed_keypoint_results",
                          "_typed_results_columns"), "typed")}

__all__ = ["read_coco_gt", "read_coco_results", "write_coco_results", "dataset_to_coco"]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports
    from .gt import read_coco_gt
    from .results import read_coco_results
    from .typed import _typed_gt_columns as _typed_gt_columns
    from .typed import _typed_keypoint_gt as _typed_keypoint_gt
    from .typed import _typed_keypoint_results as _typed_keypoint_results
    from .typed import _typed_results_columns as _typed_results_columns
    from .writer import dataset_to_coco, write_coco_results


def __getattr__(name: str):
    """Import the submodule that holds ``name`` on first use, then keep the name here; a
    submodule's name imports it."""
    return lazy_attribute(__name__, _LAZY, name, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
