"""Evaluation protocols: settings presets and the functions that apply them.

The names are imported on first use (PEP 562): ``deteval coco`` does not pay for the VOC
protocol's modules, nor ``deteval voc`` for COCO's."""

from __future__ import annotations

from .._lazy import lazy_attribute

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

#: Where each name lives: name -> submodule of this package.
_LAZY = {**dict.fromkeys(("COCO", "STAT_NAMES", "COCOParams", "COCOResult", "evaluate_coco"),
                         "coco"),
         **dict.fromkeys(("DETECTRON2_VOC2007", "DETECTRON2_VOC2012", "VOC2007", "VOC2012",
                          "PRCurve", "VOCParams", "VOCResult", "evaluate_voc"), "voc")}

__all__ = ["COCO", "COCOParams", "COCOResult", "DETECTRON2_VOC2007", "DETECTRON2_VOC2012",
           "PRCurve", "STAT_NAMES", "VOC2007", "VOC2012", "VOCParams", "VOCResult",
           "evaluate_coco", "evaluate_voc"]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports
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


def __getattr__(name: str):
    """Import the submodule that holds ``name`` on first use, then keep the name here; a
    submodule's name imports it."""
    return lazy_attribute(__name__, _LAZY, name, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
