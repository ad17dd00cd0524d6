"""What the report shows, gathered from one evaluation: settings, the summary, the per-class
rows, the columns of its tables and how a number is written on the page."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .._threshold_labels import threshold_label

#: The protocols :func:`~deteval.report.write_report` runs.
PROTOCOLS = ("coco", "voc2007", "voc2012", "lvis", "crowdpose", "openimages")
#: ``inline``: the figures are drawn in the page (SVG, no matplotlib); ``png`` / ``svg``:
#: also the matplotlib figures of :mod:`deteval.viz.plots`, as files.
FIGURE_FORMATS = ("inline", "png", "svg")
# 0/0 ratios (recall of a class without objects, precision without detections) are
# undefined: NaN, null in results.json and "n/a" on the page, never a made-up 0.
UNDEFINED = float("nan")


def check_settings(protocol: Any, iou_threshold: Any, score_threshold: Any, gallery: Any,
                    figure_format: Any) -> tuple[float, float | None, int]:
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(map(repr, PROTOCOLS))}; "
                         f"got {protocol!r}")
    for name, value in (("iou_threshold", iou_threshold), ("score_threshold", score_threshold)):
        if value is None and name == "score_threshold":
            continue
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float,
                                                                         np.number)):
            raise TypeError(f"{name} must be a number; got {type(value).__name__}")
    iou_threshold = float(iou_threshold)
    if not (math.isfinite(iou_threshold) and 0 < iou_threshold <= 1):
        raise ValueError(f"iou_threshold must be in (0, 1]; got {iou_threshold!r}")
    if protocol in ("coco", "lvis", "crowdpose"):
        from ..protocols.coco import COCO

        if not any(abs(t - iou_threshold) < 1e-9 for t in COCO.iou_thresholds):
            name = {"crowdpose": "CrowdPose"}.get(protocol, protocol.upper())
            raise ValueError(f"iou_threshold must be one of the COCO thresholds (0.50, 0.55, "
                             f"..., 0.95) for the {name} protocol; got "
                             f"{iou_threshold!r}")
        iou_threshold = next(t for t in COCO.iou_thresholds if abs(t - iou_threshold) < 1e-9)
    if score_threshold is not None:
        score_threshold = float(score_threshold)
        if not (math.isfinite(score_threshold) and score_threshold >= 0):
            raise ValueError(f"score_threshold must be a finite number >= 0 (or None: the "
                             f"F1-optimal score); got {score_threshold!r}")
    if isinstance(gallery, (bool, np.bool_)) or not isinstance(gallery, (int, np.integer)):
        raise TypeError(f"gallery must be an integer; got {type(gallery).__name__}")
    if gallery < 0:
        raise ValueError(f"gallery must be >= 0 (0: no gallery); got {gallery}")
    if figure_format not in FIGURE_FORMATS:
        raise ValueError(f"figure_format must be one of {', '.join(map(repr, FIGURE_FORMATS))}; "
                         f"got {figure_format!r}")
    if protocol in ("lvis", "crowdpose") and figure_format != "inline":
        name = "LVIS" if protocol == "lvis" else "CrowdPose"
        raise ValueError(f"figure_format png/svg is not available with the {name} protocol: "
                         "the matplotlib figures of deteval.viz.plots read COCO and VOC "
                         "results; the inline figures are drawn")
    return iou_threshold, score_threshold, int(gallery)


# --------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------


def clean(value: Any) -> Any:
    """JSON-ready copy: numpy scalars and arrays as Python values, NaN as None."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return clean(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return None if math.isnan(value) else value
    return value


def evaluate(gt: Any, dt: Any, protocol: str, iou_threshold: float):
    if protocol == "lvis":
        from ..data import Dataset
        from ..protocols.lvis import evaluate_lvis

        if isinstance(gt, Dataset):
            raise TypeError("the LVIS protocol reads an LVIS annotation file, its dict or "
                            "an LVISGroundTruth (its federated keys: neg_category_ids, "
                            "not_exhaustive_category_ids, frequency); got a Dataset")
        return evaluate_lvis(gt, dt)
    if protocol == "crowdpose":   # as deteval crowdpose: the file's crowdIndex, its sigmas
        from ..protocols.crowdpose import evaluate_crowdpose

        return evaluate_crowdpose(gt, dt)
    if protocol == "coco":
        from ..protocols.coco import evaluate_coco

        return evaluate_coco(gt, dt)
    from ..protocols.voc import VOC2007, VOC2012, evaluate_voc

    params = VOC2007 if protocol == "voc2007" else VOC2012
    return evaluate_voc(gt, dt, params=params, iou_thresholds=(iou_threshold,))


def summary(result: Any, protocol: str) -> dict[str, Any]:
    if protocol in ("coco", "lvis", "crowdpose"):
        rows = []
        for name, value, line in zip(result.stat_names, result.stats.tolist(),
                                     result.summary_lines):
            setting = line[line.index("@[") + 2:line.rindex("]")].strip()
            setting = re.sub(r"\s*=\s*", "=", " ".join(setting.split()))
            rows.append({"name": name, "setting": setting, "value": value})
        return {"stats": result.stats.tolist(), "rows": rows,
                "lines": list(result.summary_lines)}
    t = result.params.iou_thresholds[0]
    counted = int(np.count_nonzero(~np.isnan(result.ap[0])))
    return {"map": result.map.tolist(), "iou_thresholds": list(result.params.iou_thresholds),
            "rows": [{"name": f"mAP@{threshold_label(t)}",
                      "setting": f"{result.params.ap_method} AP, IoU {result.params.iou_comparison}"
                                 f" {t:g}, {counted} classes with ground truth",
                      "value": float(result.map[0])}],
            "lines": result.summary().splitlines()}


def per_class_rows(result: Any, protocol: str, cm: Any, points: Any) -> list[dict[str, Any]]:
    """One row per class: the protocol's numbers, then the counts at the operating point."""
    at_threshold = {row["name"]: row for row in cm.per_class(zero_division=UNDEFINED)}
    best = {row["name"]: row for row in points.per_class()}
    rows = []
    if protocol in ("coco", "lvis", "crowdpose"):
        base = result.per_class()
    else:
        base = [{"category_id": row["category_id"], "name": row["name"], "AP": row["ap"][0],
                 "n_gt": row["n_positives"], "n_difficult": row["n_difficult"],
                 "n_detections": row["n_detections"], "voc_tp": row["tp"][0],
                 "voc_fp": row["fp"][0]} for row in result.per_class()]
    for row in base:
        confusion = at_threshold.get(row["name"], {})
        point = best.get(row["name"], {})
        rows.append({**row,
                     "tp": confusion.get("tp"), "fp": confusion.get("fp"),
                     "fn": confusion.get("fn"), "precision": confusion.get("precision"),
                     "recall": confusion.get("recall"), "f1": confusion.get("f1"),
                     "best_f1": point.get("fbeta"), "best_f1_score": point.get("threshold")})
    return rows


# Per-class table columns: (key, header, kind, tooltip). kind: text, int, ratio (-1 and
# None are undefined), score.
COCO_COLUMNS = (
    ("name", "class", "text", "category name"),
    ("category_id", "id", "int", "category id"),
    ("AP", "AP", "ratio", "AP @[IoU=0.50:0.95, area all, maxDets 100]"),
    ("AP50", "AP50", "ratio", "AP @[IoU=0.50]"),
    ("AP75", "AP75", "ratio", "AP @[IoU=0.75]"),
    ("APs", "APs", "ratio", "AP of small objects (area < 32²)"),
    ("APm", "APm", "ratio", "AP of medium objects"),
    ("APl", "APl", "ratio", "AP of large objects (area > 96²)"),
    ("AR100", "AR100", "ratio", "average recall, maxDets 100"),
    ("n_gt", "objs", "int", "ground-truth objects (crowd regions included)"),
    ("n_detections", "dets", "int", "detections evaluated"),
)
LVIS_COLUMNS = (
    ("name", "class", "text", "category name"),
    ("category_id", "id", "int", "category id"),
    ("frequency", "freq.", "text", "LVIS frequency group: r(are), c(ommon), f(requent)"),
    ("AP", "AP", "ratio", "AP @[IoU=0.50:0.95, area all, maxDets 300] (LVIS)"),
    ("AP50", "AP50", "ratio", "AP @[IoU=0.50]"),
    ("AP75", "AP75", "ratio", "AP @[IoU=0.75]"),
    ("APs", "APs", "ratio", "AP of small objects (area < 32²)"),
    ("APm", "APm", "ratio", "AP of medium objects"),
    ("APl", "APl", "ratio", "AP of large objects (area > 96²)"),
    ("AR", "AR", "ratio", "average recall at the per-image cut (300)"),
    ("n_gt", "objs", "int", "objects evaluated"),
    ("n_detections", "dets", "int", "detections evaluated (federated selection)"),
)
CROWDPOSE_COLUMNS = (
    ("name", "class", "text", "category name"),
    ("category_id", "id", "int", "category id"),
    ("AP", "AP", "ratio", "AP @[OKS=0.50:0.95, maxDets 20] (CrowdPose)"),
    ("AP50", "AP50", "ratio", "AP @[OKS=0.50]"),
    ("AP75", "AP75", "ratio", "AP @[OKS=0.75]"),
    ("AR", "AR", "ratio", "average recall, maxDets 20"),
    ("n_gt", "objs", "int", "ground-truth objects (crowd regions included)"),
    ("n_detections", "dets", "int", "results evaluated (a keypoint score above 0)"),
)
VOC_COLUMNS = (
    ("name", "class", "text", "category name"),
    ("category_id", "id", "int", "category id"),
    ("AP", "AP", "ratio", "the protocol's AP of the class"),
    ("n_gt", "objs", "int", "objects that are not difficult (npos)"),
    ("n_difficult", "diff.", "int", "difficult objects"),
    ("n_detections", "dets", "int", "detections evaluated"),
    ("voc_tp", "VOC TP", "int", "true positives by the VOC rule (all scores)"),
    ("voc_fp", "VOC FP", "int", "false positives by the VOC rule (all scores)"),
)
OPERATING_COLUMNS = (
    ("tp", "TP", "int", "true positives at the report's score threshold"),
    ("fp", "FP", "int", "false positives at the score threshold (wrong class, background, "
     "duplicates)"),
    ("fn", "FN", "int", "missed or confused objects at the score threshold"),
    ("precision", "prec.", "ratio", "precision at the score threshold"),
    ("recall", "rec.", "ratio", "recall at the score threshold"),
    ("f1", "F1", "ratio", "F1 at the score threshold"),
    ("best_f1", "best F1", "ratio", "the highest F1 of the class over score thresholds"),
    ("best_f1_score", "at score", "score", "the score threshold of the best F1"),
)


def defined(value: Any, kind: str) -> bool:
    if value is None:
        return False
    if kind == "ratio" and value < 0:  # pycocotools' -1: no ground truth
        return False
    return not (isinstance(value, float) and math.isnan(value))


def format_value(value: Any, kind: str) -> str:
    """How the page writes a number: ``ratio`` and ``score`` with 3 decimals, ``signed`` (a
    difference) with 3 decimals and its sign, ``int`` as is; undefined values (None, NaN,
    and -1 for a ratio) as ``n/a``.

    Examples
    --------
    >>> format_value(0.12345, "ratio"), format_value(-1.0, "ratio"), format_value(7, "int")
    ('0.123', 'n/a', '7')
    """
    if kind == "text":
        return str(value)
    if not defined(value, kind):
        return "n/a"
    if kind == "int":
        return str(int(value))
    return f"{value:+.3f}" if kind == "signed" else f"{value:.3f}"


def data_value(value: Any, kind: str) -> str:
    """The cell's exact value, for sorting (and checking): repr of the JSON number."""
    if kind == "text":
        return str(value)
    if not defined(value, kind):
        return ""
    return str(int(value)) if kind == "int" else repr(float(value))




def f1_optimal_score(points: Any) -> tuple[float, str]:
    """The score threshold of the best F1 over all classes (``points.best()``, from
    :func:`~deteval.confusion.operating_points`), 0 when no score gives an F1 above 0; and
    where it comes from (``"the F1-optimal score"`` or ``"no F1 above 0"``)."""
    best = points.best()["threshold"]
    if not math.isfinite(best):
        return 0.0, "no F1 above 0"
    return max(best, 0.0), "the F1-optimal score"


def legend_entries() -> list[dict[str, Any]]:
    """The drawing styles of the gallery, as the draw module describes them."""
    from ..viz.draw import legend

    return [{k: entry[k] for k in ("key", "label", "colour", "dash", "description")}
            for entry in legend()]
