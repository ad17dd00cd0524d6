"""Readers and writers of annotation and result formats.

``read_gt`` / ``read_detections`` / ``write_gt`` / ``convert`` (in ``formats.py``) detect the
format from the path and dispatch to one module per format: ``coco``, ``voc``, ``yolo``,
``csv`` (generic CSV/TSV and Open Images), ``labelme``, ``cvat``, ``txt`` (detection text
files), ``dota`` (DOTA oriented-box labels and Task1 results).
"""

from __future__ import annotations

from .._lazy import lazy_attribute

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

#: Where each name lives: name -> submodule of this package. The names are imported on
#: first use (PEP 562): ``deteval coco`` reads COCO files without importing the other
#: formats' readers (nor ``xml``).
_LAZY = {**dict.fromkeys(("dataset_to_coco", "read_coco_gt", "read_coco_results",
                          "write_coco_results"), "coco"),
         **dict.fromkeys(("DETECTION_FORMATS", "GT_FORMATS", "convert", "detect_format",
                          "read_detections", "read_gt", "write_gt"), "formats")}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports
    from .coco import dataset_to_coco, read_coco_gt, read_coco_results, write_coco_results
    from .formats import (
        DETECTION_FORMATS,
        GT_FORMATS,
        convert,
        detect_format,
        read_detections,
        read_gt,
        write_gt,
    )

__all__ = [
    "DETECTION_FORMATS",
    "GT_FORMATS",
    "convert",
    "dataset_to_coco",
    "detect_format",
    "read_coco_gt",
    "read_coco_results",
    "read_detections",
    "read_gt",
    "write_coco_results",
    "write_gt",
]


def __getattr__(name: str):
    """Import the submodule that holds ``name`` on first use, then keep the name here; a
    submodule's name imports it."""
    return lazy_attribute(__name__, _LAZY, name, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
