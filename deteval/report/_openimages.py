"""The Open Images report (``protocol="openimages"``, docs/report.md §1.10c).

An :class:`~deteval.protocols.openimages.OpenImagesResult` holds no
:class:`~deteval.data.Dataset` (string image ids, a label map), so the sections built from
one (curves by score, confusion matrix, error counts, gallery) are left out, saying so; the
summary (the challenge mAP), the per-class table and the diagnostic panels read the Open
Images evaluation's own match table, computed by :func:`._diagnostics.compute` as for the
other protocols. TIDE for Open Images is not written yet: its panel is left out with a note.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from ._data import clean
from ._page import e, table

#: The keyword arguments of :func:`deteval.evaluate_openimages` the report passes on.
OPENIMAGES_OPTIONS = ("image_labels", "hierarchy", "classes", "expand_detections")
#: Why the sections built from a Dataset are not in an Open Images report.
LEFT_OUT = ("The curves by score, the confusion matrix, the error counts and the gallery "
            "are not shown: they are built from a Dataset of the images and classes, and an "
            "Open Images result has none (string image ids, a label map).")
TIDE_NOTE = ("TIDE error attribution left out: TIDE with the Open Images rules is being "
             "written (deteval.error_attribution has no protocol='openimages' yet).")


def check_openimages(options: Any, iou_threshold: float, score_threshold: Any,
                     figure_format: str, images_dir: Any) -> dict[str, Any]:
    """The Open Images options (keyword arguments of :func:`deteval.evaluate_openimages`),
    checked with the settings the protocol fixes, before anything is read."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise TypeError(f"openimages must be a dict of evaluate_openimages options "
                        f"({', '.join(OPENIMAGES_OPTIONS)}); got {type(options).__name__}")
    unknown = sorted(set(options) - set(OPENIMAGES_OPTIONS))
    if unknown:
        raise ValueError(f"openimages: unknown option(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(OPENIMAGES_OPTIONS)}")
    if iou_threshold != 0.5:
        raise ValueError(f"iou_threshold must be 0.5 for the Open Images protocol (the "
                         f"challenge's AP@0.5IOU); got {iou_threshold!r}")
    if score_threshold is not None:
        raise ValueError("score_threshold is not available with the Open Images protocol: "
                         "it sets the confusion matrix, error counts and gallery, which an "
                         "Open Images report does not have")
    if figure_format != "inline":
        raise ValueError("figure_format png/svg is not available with the Open Images "
                         "protocol: the matplotlib figures read COCO and VOC results")
    if images_dir is not None:
        raise ValueError("images_dir is not available with the Open Images protocol: the "
                         "gallery is built from a Dataset, and an Open Images result has none")
    return dict(options)


def evaluate(gt: Any, dt: Any, options: dict[str, Any]) -> Any:
    from ..protocols.openimages import evaluate_openimages

    return evaluate_openimages(gt, dt, **options)


def summary(result: Any) -> dict[str, Any]:
    counted = int(np.count_nonzero(~np.isnan(result.ap)))
    return {"mean_ap": result.mean_ap,
            "rows": [{"name": "mAP", "setting": f"AP@0.5IOU (Open Images challenge), "
                      f"{counted} of {len(result.classes)} classes with ground truth",
                      "value": result.mean_ap}],
            "lines": result.summary().splitlines()}


def dataset_numbers(result: Any, source: Any) -> dict[str, Any]:
    named = isinstance(source, (str, os.PathLike))
    return {"source": str(source) if named else "<OIDBoxes>",
            "images": 0 if result.image_ids is None else len(result.image_ids),
            "categories": len(result.classes), "objects": len(result.gt),
            "group_of": int(np.count_nonzero(result.gt.group_of)),
            "detections": len(result.detections)}


SUMMARY_COLUMNS = (("name", "metric", "text", "metric"),
                   ("setting", "setting", "text", "evaluation setting"),
                   ("value", "value", "ratio", "value (n/a: no class has ground truth)"))
CLASS_COLUMNS = (("class", "class", "text", "LabelName"),
                 ("ap", "AP", "ratio", "AP@0.5IOU of the class (n/a: no ground truth)"),
                 ("num_gt", "objs", "int", "ground-truth boxes counted (a group-of box: 1)"),
                 ("num_tp", "TP", "int", "true positives (all scores)"),
                 ("num_fp", "FP", "int", "false positives (all scores)"))


def _summary_panel(c: Any) -> str:
    from ._diagnostics import interval_header, intervals_by_name, method_caption

    rows, columns = c.payload["summary"]["rows"], SUMMARY_COLUMNS
    intervals, caption = c.payload["panels"].get("intervals"), None
    if intervals is not None:
        text = intervals_by_name(intervals)
        rows = [dict(row, interval=text.get(row["name"], "")) for row in rows]
        columns += (("interval", interval_header(intervals), "text",
                     "bootstrap percentile interval"),)
        caption = method_caption(intervals)
    out = [table(columns, rows, table_id="summary-table", caption=caption),
           f'<p class="muted note">{e(LEFT_OUT)}</p>']
    if c.payload["notes"]:
        out.append('<ul class="notes">' + "".join(f"<li>{e(note)}</li>"
                                                  for note in c.payload["notes"]) + "</ul>")
    return "".join(out)


def _per_class_panel(c: Any) -> str:
    from ._diagnostics import interval_header, intervals_by_name

    rows, columns = c.payload["per_class"], CLASS_COLUMNS
    intervals = c.payload["panels"].get("intervals")
    if intervals is not None:   # "AP 95% CI" after AP: the bootstrap's AP[LabelName]
        text = intervals_by_name(intervals)
        rows = [dict(row, AP_ci=text.get(f"AP[{row['class']}]", "")) for row in rows]
        columns = (*columns[:2], ("AP_ci", f"AP {interval_header(intervals)}", "text",
                                  "bootstrap percentile interval of the class's AP"),
                   *columns[2:])
    return table(columns, rows, sortable=True, table_id="per-class-table", boxed=True,
                 caption="The Open Images evaluation's per-class numbers; click a header "
                 "to sort.")


def default_panels() -> list[Any]:
    """The sections of an Open Images report."""
    from ._diagnostics import calibration_panel, error_attribution_panel, slices_panel
    from ._panels import Panel

    return [Panel("summary", "Summary", _summary_panel),
            Panel("per-class", "Per class", _per_class_panel),
            Panel("slices", "Slices", slices_panel),
            Panel("error-attribution", "Error attribution", error_attribution_panel),
            Panel("calibration", "Calibration", calibration_panel)]


def meta(payload: dict[str, Any]) -> str:
    data = payload["dataset"]
    return (f"Protocol <b>openimages</b> &middot; {data['images']} images, "
            f"{data['categories']} classes, {data['objects']} boxes ({data['group_of']} "
            f"group-of), {data['detections']} detections &middot; AP@0.5IOU &middot; "
            f"deteval {e(payload['deteval_version'])}")


def write(gt: Any, dt: Any, out: Path, *, options: dict[str, Any], ci: int | None,
          confidence: float, seed: Any, slices: dict | None, single_file: bool,
          gallery: int, title: str | None, panels: Any, step: Any) -> Path:
    """Evaluate and write the Open Images report (the checks are done)."""
    from .. import __version__
    from ._diagnostics import compute
    from ._panels import Context
    from ._write import finish

    result = evaluate(gt, dt, options)
    step("evaluated")
    run = SimpleNamespace(result=result)
    panels_numbers = compute(run, None, "openimages", 0.5, ci=ci, confidence=confidence,
                             seed=seed, slices=slices, step=step)
    panels_numbers["notes"]["tide"] = TIDE_NOTE
    payload = clean({
        "deteval_version": __version__,
        "settings": {"protocol": "openimages", "iou_threshold": 0.5, "score_threshold": None,
                     "gallery": gallery, "images_dir": None, "single_file": bool(single_file)},
        "dataset": dataset_numbers(result, gt),
        "summary": summary(result),
        "per_class": result.per_class(),
        "left_out": LEFT_OUT,
        "gallery": {"images": [], "skipped": [], "legend": [], "why_empty": LEFT_OUT},
        "notes": list(result.notes),
        "panels": panels_numbers,
    })
    title = title or "deteval report" + (f": {Path(gt).name}"
                                         if isinstance(gt, (str, os.PathLike)) else "")

    def build(src: Any) -> str:
        from ._page import shell

        context = Context(payload, result, None, None, None, None, None, src, {})
        sections = [(p.key, p.title, body) for p in (panels or default_panels())
                    if (body := p.build(context)) is not None]
        footer = (f"Written by deteval {__version__}. Every number on this page is in "
                  + ("the results-json script of this page." if single_file
                     else "results.json."))
        return shell(title, meta(payload), sections, footer, payload if single_file else None)

    return finish(out, single_file, {}, payload, build)
