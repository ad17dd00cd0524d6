"""The diagnostics of the report: TIDE error attribution and LRP, calibration, bootstrap
intervals and slices, computed from the evaluation the report already holds, and their
panels.

:func:`compute` runs them once, before the page is built, and returns their numbers (each
diagnostic's own ``to_dict()``) for ``payload["panels"]``; the panels below read them there.
TIDE, LRP and calibration are cheap (under the evaluation's own time) and always run; the
bootstrap intervals (``ci``: B resamples, each some 5-15% of an evaluation, so B = 1000
costs dozens of evaluations) and the slices are asked for. Each reads the report's protocol:
with a VOC protocol, TIDE runs with ``protocol=`` the report's (the devkit's matching and
AP), LRP and calibration read the VOC evaluation's own decisions (``lrp_of_result``,
``calibration(result)``), the intervals are :func:`deteval.bootstrap_voc`'s and the slices
the VOC numbers per image slice (:func:`deteval.slices` of the VOC result); ``notes["rules"]``
says which rule each panel used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import _svg
from ._page import e, figure, table

#: What ``slices=`` may hold: keyword arguments of :func:`deteval.slices`.
SLICE_OPTIONS = ("by", "tags", "images", "crowding_iou", "border", "aspect_bins")
#: What ``slices=`` may hold with the VOC and LVIS protocols (image slices, and LVIS's size).
PROTOCOL_SLICE_OPTIONS = ("by", "tags", "images")
#: TIDE's rows, in its order, with what each fix does.
TIDE_LABELS = {"cls": "classification (cls)", "loc": "localisation (loc)",
               "both": "cls and loc (both)", "dupe": "duplicate (dupe)",
               "bkg": "background (bkg)", "miss": "missed (miss)",
               "false_positives": "all false positives (FP)",
               "false_negatives": "all false negatives (FN)"}
#: How many lowest-AP slices the slices panel names.
WORST_SLICES = 5


def check_options(protocol: str, ci: Any, confidence: Any, seed: Any,
                  slices: Any) -> tuple[int | None, float, Any, dict | None]:
    """The options checked before anything is computed."""
    if ci is not None:
        if isinstance(ci, (bool, np.bool_)) or not isinstance(ci, (int, np.integer)) \
                or ci < 1:
            raise ValueError(f"ci must be a number of bootstrap resamples >= 1 (or None); "
                             f"got {ci!r}")
        ci = int(ci)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) \
            or not 0 < confidence < 1:
        raise ValueError(f"ci_confidence must be in (0, 1); got {confidence!r}")
    if slices is not None:
        if not isinstance(slices, Mapping):
            allowed = ", ".join(SLICE_OPTIONS)
            raise TypeError(f"slices must be a dict of deteval.slices options ({allowed}); "
                            f"got {type(slices).__name__}")
        allowed = SLICE_OPTIONS if protocol == "coco" else ("by", "tags") \
            if protocol == "openimages" else PROTOCOL_SLICE_OPTIONS
        unknown = sorted(set(slices) - set(allowed))
        if unknown:
            raise ValueError(f"slices: unknown option(s) {', '.join(unknown)} with protocol "
                             f"{protocol!r}; choose from {', '.join(allowed)}")
        slices = dict(slices)
        if protocol != "coco":
            check_slice_keys(slices.get("by"), protocol)
    return ci, float(confidence), seed, slices


def check_slice_keys(by: Any, protocol: str) -> list[str] | None:
    """The keys of ``by`` as a list (None: every key of the tags), an object property the
    report's protocol (VOC: any; LVIS, CrowdPose: but ``size``) cannot slice refused by
    :func:`deteval.diagnostics.slices_protocols.check_keys`, the message naming the report.

    >>> check_slice_keys(["site"], "voc2007")
    ['site']
    """
    from ..diagnostics.slices_protocols import check_keys

    if protocol == "lvis":
        return check_keys(by, "lvis", subject="an LVIS report")
    if protocol == "crowdpose":
        return check_keys(by, "crowdpose", subject="a CrowdPose report")
    if protocol == "openimages":
        return check_keys(by, "openimages", subject="an Open Images report")
    return check_keys(by, "voc", subject="a VOC report")


def _coco_at(run: Any, tau: float) -> Any:
    """A COCO evaluation whose first IoU threshold is ``tau`` and max-detections 100: the
    report's own when it is one, else one at ``tau`` alone on the same data, with the
    report's other settings (its IoU type and what that type reads: sigmas, dilation ratio;
    its categories and images)."""
    import dataclasses

    from ..protocols.coco import evaluate_coco

    result = run.result
    if result.params.iou_thresholds[0] == tau and result.params.max_detections[-1] == 100:
        return result
    params = dataclasses.replace(result.params, iou_thresholds=(tau,),
                                 max_detections=(100, 100, 100))
    return evaluate_coco(run.dataset, run.detections, params=params)


def compute(run: Any, gt: Any, protocol: str, tau: float, *, ci: int | None,
            confidence: float, seed: Any, slices: dict | None, step: Any,
            threads: int | None = None) -> dict[str, Any]:
    """Every diagnostic's numbers (``to_dict()``) by key, and ``notes``: why one is left
    out, and (``rules``) by which protocol's rules each panel was computed."""
    from ..diagnostics.calibration import calibration
    from ..diagnostics.lrp import lrp_of_result
    from ..diagnostics.tide import error_attribution

    out: dict[str, Any] = {}
    notes: dict[str, str] = {}
    try:
        if protocol == "openimages":   # on the inputs: _openimages.write runs it
            pass
        elif protocol == "lvis":        # its federated keys, and its geometry
            out["tide"] = error_attribution(run.result.lvis_gt, run.detections,
                                            pos_threshold=tau, protocol="lvis",
                                            iou_type=run.result.params.iou_type).to_dict()
        elif protocol == "crowdpose":   # its OKS (sigmas, 0.53 areas), maxDets 20, AP50
            out["tide"] = error_attribution(run.result.dataset, run.result.detections,
                                            pos_threshold=tau, protocol="crowdpose",
                                            keypoint_sigmas=run.result.params.keypoint_sigmas
                                            ).to_dict()
        else:
            out["tide"] = error_attribution(run.dataset, run.detections, pos_threshold=tau,
                                            protocol=protocol).to_dict()
    except ValueError as error:
        notes["tide"] = f"TIDE error attribution left out: {error}"
    if tau < 1:     # VOC: the report's evaluation is at tau alone; LVIS at its ten
        source = _coco_at(run, tau) if protocol == "coco" else run.result
        out["lrp"] = lrp_of_result(source, tau, 100 if protocol == "coco" else None).to_dict()
    else:
        notes["lrp"] = "LRP left out: it divides by 1 - IoU threshold, and that is 0 here."
    try:
        out["calibration"] = calibration(run.result, iou_threshold=tau).to_dict()
    except ValueError as error:
        notes["calibration"] = f"Calibration left out: {error}"
    notes["rules"] = rules_note(protocol, tau)
    step("TIDE, LRP, calibration")
    if ci is not None:
        out["intervals"] = _intervals(run, protocol, ci, confidence, seed, threads)
        step("bootstrap intervals")
    if slices is not None:
        out["slices"] = _slices(run.result, gt, protocol, slices, ci, confidence, seed,
                                threads)
        step("slices")
    out["notes"] = notes
    return out


def rules_note(protocol: str, tau: float) -> str:
    """Which rules each diagnostic panel follows (``notes["rules"]``)."""
    if protocol == "coco":
        return (f"Rules: TIDE by tidecv's matching at IoU {tau:g}; LRP, calibration, "
                "intervals and slices read the COCO evaluation's own match table "
                "(pycocotools' matching).")
    if protocol == "openimages":
        return ("Rules: every panel follows the Open Images challenge rules (TensorFlow OD "
                "API): TIDE with protocol='openimages' (the challenge's match, its mAP as "
                "TIDE's AP), LRP and calibration read the Open Images evaluation's own true and "
                "false positives (group-of boxes, verified labels, the hierarchy), the "
                "intervals are bootstrap_openimages's and the slices the challenge mAP on "
                "each slice's images.")
    if protocol == "crowdpose":
        return ("Rules: every panel follows xtcocotools' CrowdPose rules: TIDE with "
                "protocol='crowdpose' (its OKS with the CrowdPose sigmas and areas, 20 "
                f"results per image and class, its AP at OKS {tau:g} as TIDE's AP), LRP and "
                "calibration read the CrowdPose evaluation's own true and false positives, "
                "the intervals are bootstrap_crowdpose's and the slices the CrowdPose numbers "
                "on each slice's images.")
    if protocol == "lvis":
        return ("Rules: every panel follows lvis-api: TIDE with protocol='lvis' (the "
                "federated selection, 300 per image, its AP50 as TIDE's AP at IoU 0.5), LRP "
                "and calibration read the LVIS evaluation's own true and false positives "
                "(unmatched detections of not-exhaustive categories left out), the intervals "
                "are bootstrap_lvis's and the slices the LVIS numbers on each slice's "
                "images.")
    return (f"Rules: every panel follows the {protocol} devkit: TIDE with "
            f"protocol={protocol!r} (the devkit's matching, inclusive pixels, difficult "
            f"objects, its AP), LRP and calibration read the {protocol} evaluation's own "
            "true and false positives, the intervals are bootstrap_voc's and the slices "
            "evaluate_voc on each slice's images.")


def _intervals(run: Any, protocol: str, ci: int, confidence: float, seed: Any,
               threads: int | None = None) -> dict:
    settings = {"n_resamples": ci, "confidence": confidence, "seed": seed, "threads": threads}
    if protocol == "coco":
        from ..diagnostics.bootstrap import bootstrap_coco

        return bootstrap_coco(run.result, score_threshold=run.score_threshold,
                              **settings).to_dict()
    if protocol == "lvis":
        from ..diagnostics.bootstrap_lvis import bootstrap_lvis

        return bootstrap_lvis(run.result, **settings).to_dict()
    if protocol == "openimages":
        from ..diagnostics.bootstrap_openimages import bootstrap_openimages

        return bootstrap_openimages(run.result, **settings).to_dict()
    if protocol == "crowdpose":
        from ..diagnostics.bootstrap_crowdpose import bootstrap_crowdpose

        return bootstrap_crowdpose(run.result, **settings).to_dict()
    from ..diagnostics.bootstrap_voc import bootstrap_voc

    return bootstrap_voc(run.result, **settings).to_dict()


def _slices(result: Any, gt: Any, protocol: str, options: dict, ci: int | None,
            confidence: float, seed: Any, threads: int | None = None) -> dict[str, Any]:
    from ..diagnostics.slices import slices

    options = dict(options)
    if options.get("images") is None and isinstance(gt, (str, os.PathLike, dict)):
        options["images"] = gt
    interval = None
    if ci is not None:   # LVIS and VOC: the protocol's own bootstrap of the slice alone
        from ..diagnostics.bootstrap import slice_interval
        from ..diagnostics.slices_protocols import protocol_slice_interval

        make = slice_interval if protocol == "coco" else protocol_slice_interval
        interval = make(n_resamples=ci, confidence=confidence, seed=seed, threads=threads)
    return slices(result, interval=interval, **options).to_dict(worst=WORST_SLICES)


# --------------------------------------------------------------------------------------
# What the summary and per-class tables show of the intervals
# --------------------------------------------------------------------------------------


def interval_text(low: Any, high: Any) -> str:
    """``[low, high]`` with 3 decimals; empty when undefined."""
    if low is None or high is None:
        return ""
    return f"[{low:.3f}, {high:.3f}]"


def interval_header(numbers: dict[str, Any]) -> str:
    return f"{100 * numbers['confidence']:g}% CI"


def intervals_by_name(numbers: dict[str, Any]) -> dict[str, str]:
    """Each number's interval text, by the bootstrap's name (``AP``, ``AP[cat]`` ...)."""
    return {row["name"]: interval_text(row["low"], row["high"])
            for row in numbers["intervals"]}


def bootstrap_name(summary_name: str) -> str:
    """The bootstrap's name of a summary row: the VOC summary's ``mAP@0.50`` is
    :func:`deteval.bootstrap_voc`'s ``mAP`` (the report evaluates VOC at one threshold, so
    the bootstrap has no ``mAP@t`` rows); COCO's names are the bootstrap's."""
    return "mAP" if summary_name.startswith("mAP@") else summary_name


def class_intervals(numbers: dict[str, Any], category_ids: list[int]) -> dict[int, str]:
    """The per-class AP interval text by category id: the bootstrap's ``AP[...]`` rows
    follow its categories' order (``category_ids``, the evaluation's)."""
    rows = [row for row in numbers["intervals"] if row["name"].startswith("AP[")]
    return {cid: interval_text(row["low"], row["high"])
            for cid, row in zip(category_ids, rows[-len(category_ids):] if category_ids
                                else [])}


def method_caption(numbers: dict[str, Any]) -> str:
    return (f"{interval_header(numbers)}: image bootstrap, percentile intervals of "
            f"{numbers['n_resamples']} resamples (seed {numbers['seed']}).")


# --------------------------------------------------------------------------------------
# Panels
# --------------------------------------------------------------------------------------


def _notes(c: Any, *keys: str) -> str:
    notes = c.payload["panels"].get("notes", {})
    found = [notes[k] for k in keys if k in notes]
    return "".join(f'<p class="muted note">{e(n)}</p>' for n in found)


def error_attribution_panel(c: Any) -> str | None:
    panels = c.payload["panels"]
    tide, lrp = panels.get("tide"), panels.get("lrp")
    if tide is None and lrp is None and not panels.get("notes"):
        return None
    out = [_notes(c, "rules", "tide", "lrp")]
    if tide is not None:
        rows = [dict(row, label=TIDE_LABELS.get(row["error"], row["error"]))
                for row in tide["summary"]]
        pos = tide["settings"]["pos_threshold"]
        ap = "n/a" if tide["ap"] is None else f"{tide['ap']:.2f}"   # None: no object
        out.append("<h3>TIDE error attribution</h3>" + figure(
            _svg.dap_bars(rows),
            f"AP {ap} (TIDE's AP, in points, at IoU {pos:g}); each bar is the AP "
            "gained by fixing that error type alone (blue), or by the oracles that remove all "
            "false positives or all missed objects (orange)."))
        out.append(table((("label", "error", "text", "TIDE error type"),
                          ("dap", "dAP", "score", "AP points gained by fixing it"),
                          ("count", "count", "int", "errors of that type")), rows,
                         table_id="tide-table"))
    if lrp is not None:
        names = {"moLRP": "moLRP (mean optimal LRP)", "moLRP_loc": "localisation component",
                 "moLRP_fp": "false-positive component", "moLRP_fn": "false-negative component",
                 "moLRP_small": "moLRP, small objects", "moLRP_medium": "moLRP, medium objects",
                 "moLRP_large": "moLRP, large objects"}
        rows = [{"name": key, "what": names.get(key, key), "value": value}
                for key, value in lrp["summary"].items()]
        columns = [("name", "number", "text", ""), ("what", "what", "text", ""),
                   ("value", "value", "ratio", "lower is better; n/a: no class has objects")]
        intervals = panels.get("intervals")
        if intervals is not None and lrp["settings"]["iou_threshold"] == 0.5 \
                and "oLRP" in intervals_by_name(intervals):
            for row in rows:
                row["interval"] = ""
            rows[0]["interval"] = intervals_by_name(intervals).get("oLRP", "")
            columns.append(("interval", interval_header(intervals), "text",
                            "bootstrap interval"))
        out.append(f"<h3>LRP (IoU {lrp['settings']['iou_threshold']:g})</h3>"
                   + table(columns, rows, table_id="lrp-table",
                           caption="Optimal LRP error, averaged over the classes (lower is "
                           "better); each class's oLRP, components and LRP-optimal score "
                           "threshold are in results.json."))
    return "".join(out)


def calibration_panel(c: Any) -> str | None:
    numbers = c.payload["panels"].get("calibration")
    notes = _notes(c, "calibration")
    if numbers is None:
        return notes or None
    rel = numbers["reliability"]
    caption = (f"Precision of the detections in each score bin ({numbers['bins']} "
               f"{numbers['binning']} bins, IoU {numbers['iou_threshold']:g}, "
               f"{numbers['n_detections']} detections; right: a true positive by the "
               f"{c.payload['settings']['protocol']} evaluation's own matching), against the "
               "diagonal of perfect calibration; the dots are the bins' mean scores.")
    rows = [{"name": "D-ECE", "value": numbers["dece"],
             "what": "detection expected calibration error"},
            {"name": "MCE", "value": numbers["mce"], "what": "maximum calibration error"},
            {"name": "mean class D-ECE", "value": numbers["mean_class_dece"],
             "what": "D-ECE of each class, averaged"}]
    return (notes + '<div class="figures">'
            + figure(_svg.reliability(rel["edges"], rel["precision"], rel["confidence"],
                                      rel["count"]), caption)
            + "</div>"
            + table((("name", "number", "text", ""), ("value", "value", "ratio", ""),
                     ("what", "what", "text", "")), rows, table_id="calibration-table"))


def slices_panel(c: Any) -> str | None:
    numbers = c.payload["panels"].get("slices")
    if numbers is None:
        return None
    rows = []
    for s in numbers["slices"]:
        stats = s["stats"]
        row = {"slice": f"{s['key']}={s['value']}", "kind": s["kind"],
               "n_images": s["n_images"], "n_gt": s["n_gt"], "n_detections": s["n_detections"],
               "AP": stats.get("AP", -1.0), "AP50": stats.get("AP50", -1.0),
               "AP75": stats.get("AP75", -1.0),
               "AR": stats.get("AR", stats.get("AR100", -1.0))}
        row["interval"] = "" if s["interval"] is None else interval_text(*s["interval"])
        rows.append(row)
    columns = [("slice", "slice", "text", "key=value"), ("kind", "kind", "text",
                                                           "image tag or object property"),
               ("n_images", "images", "int", ""), ("n_gt", "objects", "int", ""),
               ("n_detections", "dets", "int", ""), ("AP", "AP", "ratio", ""),
               ("AP50", "AP50", "ratio", ""), ("AP75", "AP75", "ratio", ""),
               ("AR", "AR", "ratio", "")]
    protocol = c.payload["settings"]["protocol"]
    if protocol.startswith("voc") or protocol == "openimages":   # one number: the mAP
        columns = columns[:6]
    intervals = c.payload["panels"].get("intervals")
    if any(row["interval"] for row in rows):
        header = interval_header(intervals) if intervals else "AP CI"
        columns.insert(6, ("interval", f"AP {header}", "text",
                           "bootstrap interval of the slice's AP (image slices)"))
    out = [table(columns, rows, sortable=True, table_id="slices-table",
                 caption=("COCO numbers of each slice (deteval.slices)" if protocol == "coco"
                          else "LVIS numbers of each slice (deteval.slices of the LVIS result)"
                          if protocol == "lvis" else "CrowdPose numbers of each slice "
                          "(deteval.slices of the CrowdPose result)"
                          if protocol == "crowdpose" else "The Open Images mAP of each image "
                          "slice (deteval.slices of the Open Images result)"
                          if protocol == "openimages" else f"The {protocol} mAP of each image "
                          "slice (evaluate_voc on its images)") + "; click a header to sort.")]
    by_name = {r["slice"]: r for r in rows}
    if numbers["worst"]:
        out.append("<h3>Worst slices by AP</h3><ol class=\"top\">")
        for name in numbers["worst"]:
            row = by_name[name]
            extra = f" {row['interval']}" if row["interval"] else ""
            out.append(f"<li>{e(name)}: AP {row['AP']:.3f}{e(extra)}</li>")
        out.append("</ol>")
    if numbers["notes"]:
        out.append('<ul class="notes">' + "".join(f"<li>{e(n)}</li>" for n in numbers["notes"])
                   + "</ul>")
    return "".join(out)
