"""Readers and writers of annotation and result formats.

``read_gt`` / ``read_detections`` / ``write_gt`` / ``convert`` (in ``formats.py``) detect the
format from the path and dispatch to one module per format: ``coco``, ``voc``, ``yolo``,
``csv`` (generic CSV/TSV and Open Images), ``labelme``, ``cvat``, ``txt`` (detection text
files), ``dota`` (DOTA oriented-box labels and Task1 results).
"""

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
