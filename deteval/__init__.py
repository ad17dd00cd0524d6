"""deteval: object-detection evaluation that is exact, fast and pleasant to use.

The flat public API. See the README for a tour; ``deteval.protocols.coco`` documents the
COCO protocol's arrays and their dimension letters.
"""

from importlib.metadata import PackageNotFoundError, version

from . import classification
from .data import Categories, Dataset, Detections, GroundTruth, Images
from .errors import DetevalError, FormatError, UndefinedMetricWarning
from .io.coco import read_coco_gt, read_coco_results, write_coco_results
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
    "GroundTruth",
    "Images",
    "MatchTable",
    "STAT_NAMES",
    "UndefinedMetricWarning",
    "classification",
    "evaluate_coco",
    "match_detections",
    "read_coco_gt",
    "read_coco_results",
    "write_coco_results",
]
