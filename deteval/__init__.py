"""deteval: object-detection evaluation that is exact, fast and pleasant to use.

The flat public API. See the README for a tour; ``deteval.protocols.coco`` documents the
COCO protocol's arrays and their dimension letters.
"""

from importlib.metadata import PackageNotFoundError, version

from . import classification
from .data import Categories, Dataset, Detections, GroundTruth, Images
from .errors import DetevalError, FormatError, FormatWarning, UndefinedMetricWarning
from .io.coco import read_coco_gt, read_coco_results, write_coco_results
from .io.formats import convert, detect_format, read_detections, read_gt, write_gt
from .matching import MatchTable, match_detections
from .protocols.coco import COCO, STAT_NAMES, COCOParams, COCOResult, evaluate_coco

try:
    __version__ = version("deteval")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "COCO",
    "COCOParams",
    "COCOResult",
    "Categories",
    "Dataset",
    "Detections",
    "DetevalError",
    "FormatError",
    "FormatWarning",
    "GroundTruth",
    "Images",
    "MatchTable",
    "STAT_NAMES",
    "UndefinedMetricWarning",
    "classification",
    "convert",
    "detect_format",
    "evaluate_coco",
    "match_detections",
    "read_coco_gt",
    "read_coco_results",
    "read_detections",
    "read_gt",
    "write_coco_results",
    "write_gt",
]
