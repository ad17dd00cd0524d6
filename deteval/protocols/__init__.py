"""Evaluation protocols: settings presets and the functions that apply them."""

from .coco import COCO, STAT_NAMES, COCOParams, COCOResult, evaluate_coco
from .voc import (
    DETECTRON2_VOC2007,
    DETECTRON2_VOC2012,
    VOC2007,
    VOC2012,
    PRCurve,
    VOCParams,
    VOCResult,
    evaluate_voc,
)

__all__ = ["COCO", "COCOParams", "COCOResult", "DETECTRON2_VOC2007", "DETECTRON2_VOC2012",
           "PRCurve", "STAT_NAMES", "VOC2007", "VOC2012", "VOCParams", "VOCResult",
           "evaluate_coco", "evaluate_voc"]
