"""Evaluation protocols: settings presets and the functions that apply them."""

from .coco import COCO, STAT_NAMES, COCOParams, COCOResult, evaluate_coco

__all__ = ["COCO", "COCOParams", "COCOResult", "STAT_NAMES", "evaluate_coco"]
