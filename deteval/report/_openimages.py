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


def meta(payload: dict[str, Any], *, runs: str | None = None) -> str:
    """The line under the title; ``runs``: the detections of each run (a comparison)."""
    data = payload["dataset"]
    detections = runs or f"{data['detections']} detections"
    return (f"Protocol <b>openimages</b> &middot; {data['images']} images, "
            f"{data['categories']} classes, {data['objects']} boxes ({data['group_of']} "
            f"group-of), {detections} &middot; AP@0.5IOU &middot; "
            f"deteval {e(payload['deteval_version'])}")


def write(gt: Any, dt: Any, out: Path, *, options: dict[str, Any], ci: int | None,
          confidence: float, seed: Any, slices: dict | None, single_file: bool,
          gallery: int, title: str | None, panels: Any, step: Any,
          threads: int | None = None) -> Path:
    """Evaluate and write the Open Images report (the checks are done)."""
    from .. import __version__
    from ._diagnostics import compute
    from ._panels import Context, page
    from ._write import finish

    result = evaluate(gt, dt, options)
    step("evaluated")
    run = SimpleNamespace(result=result)
    panels_numbers = compute(run, None, "openimages", 0.5, ci=ci, confidence=confidence,
                             seed=seed, slices=slices, step=step, threads=threads)
    try:    # TIDE matches again by the challenge's rules: on the inputs, not the result
        from ..diagnostics.tide import error_attribution

        panels_numbers["tide"] = error_attribution(gt, dt, protocol="openimages",
                                                   **options).to_dict()
    except ValueError as error:
        panels_numbers["notes"]["tide"] = f"TIDE error attribution left out: {error}"
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
        context = Context(payload, result, None, None, None, None, None, src, {})
        return page(title, meta(payload), panels or default_panels(), context, single_file)

    return finish(out, single_file, {}, payload, build)


# --------------------------------------------------------------------------------------
# Comparing two runs
# --------------------------------------------------------------------------------------


def _difference(a: Any, b: Any) -> Any:
    return None if a is None or b is None or a != a or b != b else b - a


def compared(results: list[Any], names: list[str], ci: int | None, confidence: float,
             seed: Any, threads: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The comparison's summary and per-class rows (with ``ci``, the paired intervals and
    Holm-adjusted p-values of :func:`deteval.compare_openimages`), and its panels."""
    a, b = results
    summary_rows = [{"name": "mAP", "setting": summary(a)["rows"][0]["setting"],
                     "a": a.mean_ap, "b": b.mean_ap,
                     "difference": _difference(a.mean_ap, b.mean_ap)}]
    class_rows = [{"class": name, "AP_a": ap_a, "AP_b": ap_b,
                   "AP_diff": _difference(ap_a, ap_b)}
                  for name, ap_a, ap_b in zip(a.classes, a.ap.tolist(), b.ap.tolist())]
    panels_numbers: dict[str, Any] = {}
    numbers: dict[str, Any] = {"summary": summary_rows, "per_class": class_rows}
    if ci is not None:
        from ..diagnostics.compare import compare_openimages

        direct = compare_openimages(results, n_resamples=ci, confidence=confidence, seed=seed,
                                    models=names, threads=threads)
        for row in summary_rows:
            row["interval"] = list(direct.interval_of(1, row["name"]))
            row["p_value"] = direct.p_value_of(1, row["name"])
        for row in class_rows:
            row["AP_diff_interval"] = list(direct.interval_of(1, f"AP[{row['class']}]"))
            row["AP_p"] = direct.p_value_of(1, f"AP[{row['class']}]")
        numbers["interval_header"] = f"{100 * confidence:g}% CI"
        panels_numbers["comparison_intervals"] = direct.to_dict()
    return numbers, panels_numbers


def _interval_text(value: Any) -> str:
    if value is None or any(v is None for v in value):
        return ""
    return "[{:+.3f}, {:+.3f}]".format(*value)


def _compare_summary_panel(c: Any) -> str:
    numbers, names = c.payload["comparison"], [r["name"] for r in c.payload["runs"]]
    columns = [("name", "metric", "text", ""), ("setting", "setting", "text", ""),
               ("a", names[0], "ratio", ""), ("b", names[1], "ratio", ""),
               ("difference", "B − A", "signed", "")]
    rows = numbers["summary"]
    if "interval_header" in numbers:
        rows = [dict(row, interval_text=_interval_text(row.get("interval"))) for row in rows]
        columns += [("interval_text", numbers["interval_header"], "text",
                     "paired bootstrap interval of the difference"),
                    ("p_value", "p", "ratio", "two-sided p-value")]
    return (table(columns, rows, table_id="summary-table")
            + f'<p class="muted note">{e(LEFT_OUT)}</p>')


def _compare_class_panel(c: Any) -> str:
    numbers, names = c.payload["comparison"], [r["name"] for r in c.payload["runs"]]
    columns = [("class", "class", "text", "LabelName"), ("AP_a", f"AP {names[0]}", "ratio", ""),
               ("AP_b", f"AP {names[1]}", "ratio", ""), ("AP_diff", "ΔAP", "signed", "B − A")]
    rows = numbers["per_class"]
    if "interval_header" in numbers:
        rows = [dict(row, interval_text=_interval_text(row.get("AP_diff_interval")))
                for row in rows]
        columns += [("interval_text", f"ΔAP {numbers['interval_header']}", "text", ""),
                    ("AP_p", "p (Holm)", "ratio", "Holm-adjusted across the classes")]
    return table(columns, rows, sortable=True, table_id="compare-class-table", boxed=True,
                 caption="Click a header to sort (by ΔAP: what changed).")


def compare_write(gt: Any, dt_a: Any, dt_b: Any, out: Path, *, names: list[str],
                  options: dict[str, Any], ci: int | None, confidence: float, seed: Any,
                  single_file: bool, title: str | None, panels: Any, step: Any,
                  threads: int | None = None) -> Path:
    """Evaluate both runs and write the Open Images comparison (the checks are done). Without
    a label map, both runs are evaluated on the union of their classes (as ``deteval compare
    --protocol openimages``)."""
    from .. import __version__
    from ._panels import Context, Panel, page
    from ._write import finish

    results = [evaluate(gt, dt, options) for dt in (dt_a, dt_b)]
    if list(results[0].classes) != list(results[1].classes):
        seen = sorted(set(results[0].classes) | set(results[1].classes))
        results = [evaluate(gt, dt, {**options, "classes": seen}) for dt in (dt_a, dt_b)]
    step("evaluated")
    numbers, panels_numbers = compared(results, names, ci, confidence, seed, threads)
    payload = clean({
        "deteval_version": __version__,
        "settings": {"protocol": "openimages", "iou_threshold": 0.5, "score_threshold": None,
                     "gallery": 0, "images_dir": None, "single_file": bool(single_file)},
        "dataset": dataset_numbers(results[0], gt),
        "runs": [{"name": name, "detections": len(r.detections)}
                 for name, r in zip(names, results)],
        "comparison": numbers,
        "left_out": LEFT_OUT,
        "gallery": {"images": [], "skipped": [], "legend": [], "why_empty": LEFT_OUT},
        "notes": list(results[0].notes) + list(results[1].notes),
        "panels": panels_numbers,
    })
    title = title or f"deteval comparison: {names[0]} vs {names[1]}"
    default = [Panel("summary", "Summary", _compare_summary_panel),
               Panel("per-class", "Per class", _compare_class_panel)]

    def build(src: Any) -> str:
        context = Context(payload, tuple(results), None, None, None, None, None, src, {})
        runs = ", ".join(f"{e(run['name'])}: {run['detections']} detections"
                         for run in payload["runs"])
        return page(title, meta(payload, runs=runs), panels or default, context, single_file)

    return finish(out, single_file, {}, payload, build)
