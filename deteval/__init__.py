"""deteval: object-detection evaluation that is exact, fast and pleasant to use.

The flat public API. See the README for a tour; ``deteval.protocols.coco`` documents the
COCO protocol's arrays and their dimension letters.
"""

from importlib.metadata import PackageNotFoundError, version

from . import classification
from .ap import AP_METHODS, average_precision
from .confusion import (
    DetectionConfusion,
    DetectionTopK,
    OperatingPoints,
    detection_confusion_matrix,
    detection_top_k_accuracy,
    operating_points,
)
from .data import Categories, Dataset, Detections, GroundTruth, Images
from .doctor import Diagnosis, Hazard, check_inputs
from .errors import DetevalError, FormatError, FormatWarning, OptionError, UndefinedMetricWarning
from .io.coco import read_coco_gt, read_coco_results, write_coco_results
from .io.formats import convert, detect_format, read_detections, read_gt, write_gt
from .matching import MatchTable, match_detections
from .outcomes import DT_OUTCOMES, GT_OUTCOMES, Outcomes, match_outcomes
from .protocols.coco import (
    COCO,
    COCO_KEYPOINTS,
    KEYPOINT_STAT_NAMES,
    STAT_NAMES,
    COCOParams,
    COCOResult,
    evaluate_coco,
)
from .protocols.voc import (
    DETECTRON2_VOC2007,
    DETECTRON2_VOC2012,
    VOC2007,
    VOC2012,
    PRCurve,
    VOCParams,
    VOCResult,
    evaluate_voc,
)

try:
    __version__ = version("deteval")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "AP_METHODS",
    "COCO",
    "COCO_KEYPOINTS",
    "COCOParams",
    "COCOResult",
    "Categories",
    "DETECTRON2_VOC2007",
    "DT_OUTCOMES",
    "DETECTRON2_VOC2012",
    "Dataset",
    "DetectionConfusion",
    "DetectionTopK",
    "Detections",
    "Diagnosis",
    "DetevalError",
    "FormatError",
    "FormatWarning",
    "GT_OUTCOMES",
    "GroundTruth",
    "Hazard",
    "Images",
    "KEYPOINT_STAT_NAMES",
    "MatchTable",
    "OperatingPoints",
    "OptionError",
    "Outcomes",
    "PRCurve",
    "STAT_NAMES",
    "UndefinedMetricWarning",
    "VOC2007",
    "VOC2012",
    "VOCParams",
    "VOCResult",
    "average_precision",
    "check_inputs",
    "classification",
    "convert",
    "detect_format",
    "detection_confusion_matrix",
    "detection_top_k_accuracy",
    "evaluate_coco",
    "evaluate_voc",
    "match_detections",
    "match_outcomes",
    "operating_points",
    "read_coco_gt",
    "read_coco_results",
    "read_detections",
    "read_gt",
    "write_coco_results",
    "write_gt",
]
