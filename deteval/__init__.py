"""deteval: object-detection evaluation that is exact, fast and pleasant to use.

The flat public API. See the README for a tour; ``deteval.protocols.coco`` documents the
COCO protocol's arrays and their dimension letters.

The names are imported on first use (PEP 562), so that ``import deteval`` and
``deteval --version`` do not pay for numpy and the modules a program does not use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

#: Where each public name lives: name -> submodule (relative to this package), or
#: "submodule:attribute" when the name differs there. A name that is itself a submodule
#: (``classification``) maps to ``""``.
_LAZY = {
    "AP_METHODS": "ap", "interpolated_average_precision": "ap",
    # deprecated alias (warns when called), not in __all__; goes in the next release
    "average_precision": "ap:deprecated_average_precision",
    "classification": "",
    "DetectionConfusion": "confusion", "DetectionTopK": "confusion",
    "OperatingPoints": "confusion", "detection_confusion_matrix": "confusion",
    "detection_top_k_accuracy": "confusion", "operating_points": "confusion",
    "Categories": "data", "Dataset": "data", "Detections": "data", "GroundTruth": "data",
    "Images": "data",
    "DetevalError": "errors", "FormatError": "errors", "FormatWarning": "errors",
    "UndefinedMetricWarning": "errors",
    "read_coco_gt": "io.coco", "read_coco_results": "io.coco", "write_coco_results": "io.coco",
    "convert": "io.formats", "detect_format": "io.formats", "read_detections": "io.formats",
    "read_gt": "io.formats", "write_gt": "io.formats",
    "read_lvis_gt": "io.lvis",
    "OIDBoxes": "io.openimages", "OIDDetections": "io.openimages",
    "OIDImageLabels": "io.openimages", "read_oid_boxes": "io.openimages",
    "read_oid_detections": "io.openimages", "read_oid_hierarchy": "io.openimages",
    "read_oid_image_labels": "io.openimages",
    "OpenImagesResult": "protocols.openimages", "evaluate_openimages": "protocols.openimages",
    "LVIS": "protocols.lvis", "LVIS_STAT_NAMES": "protocols.lvis", "LVISParams": "protocols.lvis",
    "LVISResult": "protocols.lvis", "evaluate_lvis": "protocols.lvis",
    "CROWDPOSE": "protocols.crowdpose", "CROWDPOSE_SIGMAS": "protocols.crowdpose",
    "CROWDPOSE_STAT_NAMES": "protocols.crowdpose", "CrowdPoseParams": "protocols.crowdpose",
    "CrowdPoseResult": "protocols.crowdpose", "evaluate_crowdpose": "protocols.crowdpose",
    "DuplicateImageWarning": "streaming", "Evaluator": "streaming",
    "evaluate_files": "streaming",
    "Diagnosis": "doctor", "Hazard": "doctor", "check_inputs": "doctor",
    "OptionError": "errors",
    "ERROR_NAMES": "diagnostics.tide", "ErrorAttribution": "diagnostics.tide",
    "error_attribution": "diagnostics.tide",
    "LRP_STAT_NAMES": "diagnostics.lrp", "LRPResult": "diagnostics.lrp", "lrp": "diagnostics.lrp",
    "lrp_of_result": "diagnostics.lrp",
    "CalibrationResult": "diagnostics.calibration", "calibration": "diagnostics.calibration",
    "plot_reliability": "diagnostics.calibration",
    "Slice": "diagnostics.slices", "SlicesResult": "diagnostics.slices",
    "slices": "diagnostics.slices",
    "BootstrapResult": "diagnostics.bootstrap", "bootstrap_coco": "diagnostics.bootstrap",
    "bootstrap_voc": "diagnostics.bootstrap_voc",
    "bootstrap_lvis": "diagnostics.bootstrap_lvis",
    "bootstrap_crowdpose": "diagnostics.bootstrap_crowdpose",
    "bootstrap_openimages": "diagnostics.bootstrap_openimages",
    "ComparisonResult": "diagnostics.compare", "compare_coco": "diagnostics.compare",
    "compare_voc": "diagnostics.compare", "compare_lvis": "diagnostics.compare",
    "compare_crowdpose": "diagnostics.compare", "compare_openimages": "diagnostics.compare",
    "MatchTable": "matching", "match_detections": "matching",
    "DT_OUTCOMES": "outcomes", "GT_OUTCOMES": "outcomes", "Outcomes": "outcomes",
    "match_outcomes": "outcomes",
    "tidy_columns": "tidy", "write_table": "tidy",
    "COCO": "protocols.coco", "COCO_KEYPOINTS": "protocols.coco",
    "KEYPOINT_STAT_NAMES": "protocols.coco", "STAT_NAMES": "protocols.coco",
    "COCOParams": "protocols.coco", "COCOResult": "protocols.coco",
    "evaluate_coco": "protocols.coco",
    "DETECTRON2_VOC2007": "protocols.voc", "DETECTRON2_VOC2012": "protocols.voc",
    "VOC2007": "protocols.voc", "VOC2012": "protocols.voc", "PRCurve": "protocols.voc",
    "VOCParams": "protocols.voc", "VOCResult": "protocols.voc", "evaluate_voc": "protocols.voc",
}  # fmt: skip

__all__ = [
    "AP_METHODS",
    "BootstrapResult",
    "COCO",
    "COCO_KEYPOINTS",
    "COCOParams",
    "COCOResult",
    "CalibrationResult",
    "CROWDPOSE",
    "CROWDPOSE_SIGMAS",
    "CROWDPOSE_STAT_NAMES",
    "Categories",
    "CrowdPoseParams",
    "CrowdPoseResult",
    "ComparisonResult",
    "DETECTRON2_VOC2007",
    "DT_OUTCOMES",
    "DETECTRON2_VOC2012",
    "Dataset",
    "DetectionConfusion",
    "DetectionTopK",
    "Detections",
    "Diagnosis",
    "DetevalError",
    "DuplicateImageWarning",
    "Evaluator",
    "ERROR_NAMES",
    "ErrorAttribution",
    "FormatError",
    "FormatWarning",
    "GT_OUTCOMES",
    "GroundTruth",
    "Hazard",
    "Images",
    "KEYPOINT_STAT_NAMES",
    "LRPResult",
    "LRP_STAT_NAMES",
    "LVIS",
    "LVISParams",
    "LVISResult",
    "LVIS_STAT_NAMES",
    "MatchTable",
    "OIDBoxes",
    "OIDDetections",
    "OIDImageLabels",
    "OpenImagesResult",
    "OperatingPoints",
    "OptionError",
    "Outcomes",
    "PRCurve",
    "Slice",
    "SlicesResult",
    "STAT_NAMES",
    "UndefinedMetricWarning",
    "VOC2007",
    "VOC2012",
    "VOCParams",
    "VOCResult",
    "calibration",
    "bootstrap_coco",
    "bootstrap_voc",
    "bootstrap_lvis",
    "bootstrap_crowdpose",
    "bootstrap_openimages",
    "check_inputs",
    "classification",
    "compare_coco",
    "compare_crowdpose",
    "compare_lvis",
    "compare_openimages",
    "compare_voc",
    "convert",
    "detect_format",
    "detection_confusion_matrix",
    "detection_top_k_accuracy",
    "error_attribution",
    "evaluate_coco",
    "evaluate_crowdpose",
    "evaluate_files",
    "evaluate_lvis",
    "evaluate_openimages",
    "evaluate_voc",
    "interpolated_average_precision",
    "lrp",
    "lrp_of_result",
    "match_detections",
    "match_outcomes",
    "operating_points",
    "plot_reliability",
    "read_coco_gt",
    "read_coco_results",
    "read_detections",
    "read_gt",
    "read_lvis_gt",
    "read_oid_boxes",
    "read_oid_detections",
    "read_oid_hierarchy",
    "read_oid_image_labels",
    "slices",
    "tidy_columns",
    "write_coco_results",
    "write_gt",
    "write_table",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports
    from . import classification
    from .ap import AP_METHODS, interpolated_average_precision
    from .ap import deprecated_average_precision as average_precision  # noqa: F401
    from .confusion import (
        DetectionConfusion,
        DetectionTopK,
        OperatingPoints,
        detection_confusion_matrix,
        detection_top_k_accuracy,
        operating_points,
    )
    from .data import Categories, Dataset, Detections, GroundTruth, Images
    from .diagnostics.bootstrap import BootstrapResult, bootstrap_coco
    from .diagnostics.bootstrap_crowdpose import bootstrap_crowdpose
    from .diagnostics.bootstrap_lvis import bootstrap_lvis
    from .diagnostics.bootstrap_openimages import bootstrap_openimages
    from .diagnostics.bootstrap_voc import bootstrap_voc
    from .diagnostics.calibration import CalibrationResult, calibration, plot_reliability
    from .diagnostics.compare import (
        ComparisonResult,
        compare_coco,
        compare_crowdpose,
        compare_lvis,
        compare_openimages,
        compare_voc,
    )
    from .diagnostics.lrp import LRP_STAT_NAMES, LRPResult, lrp, lrp_of_result
    from .diagnostics.slices import Slice, SlicesResult, slices
    from .diagnostics.tide import ERROR_NAMES, ErrorAttribution, error_attribution
    from .doctor import Diagnosis, Hazard, check_inputs
    from .errors import (
        DetevalError,
        FormatError,
        FormatWarning,
        OptionError,
        UndefinedMetricWarning,
    )
    from .io.coco import read_coco_gt, read_coco_results, write_coco_results
    from .io.formats import convert, detect_format, read_detections, read_gt, write_gt
    from .io.lvis import read_lvis_gt
    from .io.openimages import (
        OIDBoxes,
        OIDDetections,
        OIDImageLabels,
        read_oid_boxes,
        read_oid_detections,
        read_oid_hierarchy,
        read_oid_image_labels,
    )
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
    from .protocols.crowdpose import (
        CROWDPOSE,
        CROWDPOSE_SIGMAS,
        CROWDPOSE_STAT_NAMES,
        CrowdPoseParams,
        CrowdPoseResult,
        evaluate_crowdpose,
    )
    from .protocols.lvis import LVIS, LVIS_STAT_NAMES, LVISParams, LVISResult, evaluate_lvis
    from .protocols.openimages import OpenImagesResult, evaluate_openimages
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
    from .streaming import DuplicateImageWarning, Evaluator, evaluate_files
    from .tidy import tidy_columns, write_table

    __version__: str


def _read_version() -> str:
    """The installed distribution's version, as ``importlib.metadata.version`` finds it.

    Its METADATA file is looked up first by hand: importing ``importlib.metadata`` costs about
    as much as the rest of ``deteval --version``.
    """
    import os
    import sys

    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.lower().startswith("deteval-") and name.endswith(".dist-info"):
                try:
                    with open(os.path.join(entry, name, "METADATA"), encoding="utf-8") as f:
                        for line in f:
                            if line.startswith("Version:"):
                                return line.split(":", 1)[1].strip()
                            if not line.strip():
                                break  # end of the headers
                except OSError:
                    pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("deteval")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0+unknown"


def __getattr__(name: str):
    """Import the submodule that holds ``name`` on first use, then keep the name here."""
    if name == "__version__":
        globals()[name] = value = _read_version()
        return value
    from ._lazy import lazy_attribute

    return lazy_attribute(__name__, _LAZY, name, globals(), submodules=False)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "__version__"})
