"""Readers and writers of annotation and result formats (``deteval.io.coco``, ...)."""

from .coco import dataset_to_coco, read_coco_gt, read_coco_results, write_coco_results

__all__ = ["dataset_to_coco", "read_coco_gt", "read_coco_results", "write_coco_results"]
