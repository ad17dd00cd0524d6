"""The sections of the report, as a list of panel builders.

A :class:`Panel` has a ``key`` (the section's id, its nav anchor), a ``title`` and a
``build(context)`` function returning the section's HTML, or None to leave it out.
:data:`PANELS` is the single-run report in page order; a new diagnostic adds its section by
inserting a panel there (or by passing ``panels=`` to :func:`~deteval.report.write_report`),
without touching the others. A panel's own numbers go into
``context.payload["panels"][key]`` (JSON-ready), which ``results.json`` holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import _diagnostics, _svg
from ._data import (
    COCO_COLUMNS,
    CROWDPOSE_COLUMNS,
    LVIS_COLUMNS,
    OPERATING_COLUMNS,
    VOC_COLUMNS,
    format_value,
)
from ._page import e, figure, pager, table
from ._views import ERROR_KINDS


@dataclass(frozen=True)
class Panel:
    """One section of the report: ``build(context)`` returns its HTML (or None: left out)."""

    key: str
    title: str
    build: Callable[[Any], str | None]


@dataclass(frozen=True)
class Context:
    """What a panel builder reads. ``payload`` is the content of ``results.json`` (a panel
    may add its numbers under ``payload["panels"][key]``); ``src(relative)`` is how the page
    addresses a file of the report; ``views`` the figures' data (:mod:`._views`)."""

    payload: dict[str, Any]
    result: Any
    dataset: Any
    detections: Any
    cm: Any
    points: Any
    outcomes: Any
    src: Callable[[str], str]
    views: dict[str, Any] = field(default_factory=dict)


def _summary(c: Context) -> str:
    payload = c.payload
    columns = (("name", "metric", "text", "metric"),
               ("setting", "setting", "text", "evaluation setting"),
               ("value", "value", "ratio", "value (-1 in pycocotools: undefined)"))
    rows = payload["summary"]["rows"]
    intervals = payload["panels"].get("intervals")
    caption = None
    if intervals is not None:   # the bootstrap interval beside each headline number
        text = _diagnostics.intervals_by_name(intervals)
        rows = [dict(row, interval=text.get(_diagnostics.bootstrap_name(row["name"]), ""))
                for row in rows]
        columns += (("interval", _diagnostics.interval_header(intervals), "text",
                     "bootstrap percentile interval"),)
        caption = _diagnostics.method_caption(intervals)
    out = [table(columns, rows, table_id="summary-table", caption=caption)]
    overall = payload["operating_point"]
    op_columns = (("what", "at", "text", ""), ("score_threshold", "score threshold", "score",
                                               "detections scoring at least this count"),
                  *OPERATING_COLUMNS[:6])
    out.append(table(op_columns, [{"what": "report threshold", **overall["at_threshold"]},
                                  {"what": "best F1", **overall["best"]}],
                     table_id="operating-table",
                     caption="All classes pooled; matching as the confusion matrix's."))
    if payload["notes"]:
        out.append('<ul class="notes">' + "".join(f"<li>{e(note)}</li>"
                                                  for note in payload["notes"]) + "</ul>")
    return "".join(out)


def class_filter(index: int, name: str) -> str:
    """The attributes that make an element filter the gallery by one class."""
    return f' data-filter="classes={index}" data-label="class {e(name)}"'


def _per_class(c: Context) -> str:
    protocol = c.payload["settings"]["protocol"]
    columns = {"coco": COCO_COLUMNS, "lvis": LVIS_COLUMNS,
               "crowdpose": CROWDPOSE_COLUMNS}.get(protocol, VOC_COLUMNS) \
        + OPERATING_COLUMNS
    index = {int(i): k for k, i in enumerate(c.dataset.categories.ids.tolist())}
    rows = c.payload["per_class"]
    intervals = c.payload["panels"].get("intervals")
    if intervals is not None:   # "AP 95% CI" after AP
        text = _diagnostics.class_intervals(intervals, c.result.category_ids.tolist())
        rows = [dict(row, AP_ci=text.get(row["category_id"], "")) for row in rows]
        at = [key for key, *_ in columns].index("AP") + 1
        columns = (*columns[:at], ("AP_ci", f"AP {_diagnostics.interval_header(intervals)}",
                                   "text", "bootstrap percentile interval of the class's AP"),
                   *columns[at:])
    return ('<p class="muted">Click a column header to sort, a row to see its images in the '
            "gallery. The last columns count at the report's score threshold.</p>"
            + pager("per-class-table", "filter classes")
            + table(columns, rows, sortable=True, table_id="per-class-table", boxed=True,
                    row_attrs=lambda row: ' class="pick"' + class_filter(
                        index[row["category_id"]], row["name"])))


def _curves(c: Context) -> str:
    pr, f1 = c.views["pr"], c.views["f1"]
    n = pr["n_with_gt"]
    ap = "n/a" if pr["mean_ap"] != pr["mean_ap"] else f"{pr['mean_ap']:.3f}"
    keys = "".join(f'<span class="key" style="background:{_svg.COLOURS[k]}"></span>{k}'
                   for k in ("f1", "precision", "recall"))
    out = ['<div class="figures">',
           figure(_svg.pr_mean(pr), f"Mean precision-recall curve of the {n} classes with "
                  f"objects, IoU {pr['iou_threshold']:g} (AP {ap})."),
           figure(_svg.f1_curve(f1), f"By score threshold, all classes pooled:{keys}; the dot "
                  "is the best F1."), "</div>"]
    classes = pr["classes"]
    if len(classes) < n:
        half = len(classes) // 2
        for label, part in (("best", classes[:half]), ("worst", classes[half:])):
            out.append(f"<h3>The {len(part)} {label} classes by AP</h3>"
                       + figure(_svg.pr_multiples(part)))
    elif classes:
        out.append("<h3>Each class, best AP first</h3>"
                   + figure(_svg.pr_multiples(classes)))
    pairs = [(k, row["name"], row["AP"]) for k, row in enumerate(c.payload["per_class"])
             if row["AP"] is not None and row["AP"] >= 0]
    pairs.sort(key=lambda p: -p[2])
    first = c.payload["summary"]["rows"][0]
    mean = first["value"] if first["value"] is not None else float("nan")
    what = "AP per class, best first" if len(pairs) <= 40 else "How many classes reach each AP"
    out.append(f"<h3>{what}</h3>" + figure(_svg.ap_bars(pairs, mean, first["name"]),
                                           f"The line is {e(first['name'])}."))
    return "".join(out)


def _confusion(c: Context) -> str:
    view = c.views["confusion"]
    k = view["n_classes"]
    shown = len(view["classes"])
    which = (f"all {k} classes" if shown == k else
             f"the {shown} of {k} classes most confused with others (all of them are in "
             "results.json)")
    out = [f'<p class="muted">Rows: true class, columns: predicted class, last row and '
           f"column Unknown (background false positives, missed objects); {which}, ordered so "
           "that classes confused with each other sit together; log colour scale. Click a cell "
           "to see its images.</p>",
           figure(_svg.heatmap(c.cm.counts, c.cm.labels, view["classes"]))]
    if view["top"]:
        out.append("<h3>Top confusions</h3><ol class=\"top\">")
        for entry in view["top"]:
            label = f"true {entry['true_name']} predicted as {entry['pred_name']}"
            out.append(f'<li><button type="button" class="link" '
                       f'data-filter="cells={entry["true"]}:{entry["pred"]}" '
                       f'data-label="{e(label)}">{e(entry["true_name"])} &rarr; '
                       f'{e(entry["pred_name"])}</button>: {entry["count"]} '
                       f'({100 * entry["share"]:.1f}% of the {e(entry["true_name"])} '
                       "objects)</li>")
        out.append("</ol>")
    else:
        out.append('<p class="muted">No object was found as another class.</p>')
    return "".join(out)


def _errors(c: Context) -> str:
    counts = c.payload["outcomes"]["counts"]
    columns = tuple((key, key.replace("_", " "), "int", "") for key in counts)
    kinds = {kind: kind for kind in ERROR_KINDS} | {"fn": "missed"}

    def clickable(key: str, value: Any) -> str:
        kind = kinds.get(key)
        if kind is None or not value:
            return ""
        return (f' class="filter" data-filter="errors={kind}" '
                f'data-label="{e(kind.replace("_", " "))}"')

    return table(columns, [counts], table_id="outcome-table", cell_attrs=clickable,
                 caption="Detections and objects by outcome at the report's thresholds "
                 "(deteval.outcomes.match_outcomes). Click an error count to see its images.")


def gallery_tools(gallery: dict[str, Any]) -> str:
    out = []
    if gallery["legend"]:
        out.append('<ul class="legend">')
        for entry in gallery["legend"]:
            out.append(f'<li title="{e(entry["description"])}"><span class="swatch" '
                       f'style="border-color: {e(entry["colour"])}; '
                       f'border-top-style: {e(entry["dash"])}"></span>'
                       f'{e(entry["label"])}</li>')
        out.append("</ul>")
    out.append('<div class="tools"><input type="search" id="gallery-search" '
               'placeholder="search images and classes" aria-label="search the gallery">'
               '<span id="gallery-status" data-shown=""></span>'
               '<button type="button" id="gallery-clear" hidden>show all</button></div>')
    return "".join(out)


def skipped_list(gallery: dict[str, Any]) -> str:
    if not gallery["skipped"]:
        return ""
    return ("<p>Images that could not be drawn:</p><ul>" + "".join(
        f"<li>{e(s['image'])}: {e(s['reason'])}</li>" for s in gallery["skipped"]) + "</ul>")


def _gallery(c: Context) -> str:
    gallery = c.payload["gallery"]
    if not gallery["images"]:
        return f"<p class=\"muted\">{e(gallery['why_empty'])}</p>" + skipped_list(gallery)
    names = c.dataset.categories.names
    worst = sum(entry["role"] == "worst" for entry in gallery["images"])
    out = [gallery_tools(gallery),
           f'<p class="muted">The {worst} images with the most errors (false positives and '
           "missed objects), then examples of the top confusions. Click a picture for the "
           'full drawing.</p><div class="gallery" id="gallery-grid">']
    for entry in gallery["images"]:
        tags = entry["tags"]
        search = " ".join([entry["file_name"] or str(entry["image_id"])]
                          + [names[k] for k in tags["classes"]]).lower()
        cnt = entry["counts"]
        out.append(f'<figure data-cells="{" ".join(tags["cells"])}" '
                   f'data-classes="{" ".join(map(str, tags["classes"]))}" '
                   f'data-errors="{" ".join(tags["errors"])}" data-search="{e(search)}">'
                   f'<a href="{e(c.src(entry["file"]))}"><img src="{e(c.src(entry["thumb"]))}" '
                   f'width="{entry["width"]}" height="{entry["height"]}" loading="lazy" '
                   f'alt="{e(entry["file_name"])}"></a>'
                   f"<figcaption><b>{e(entry['file_name'] or entry['image_id'])}</b> "
                   f"(id {entry['image_id']}): {entry['errors']} errors &middot; "
                   f"TP {cnt['tp']}, FP {cnt['fp']}, FN {cnt['fn']}"
                   + (f'<br><span class="warn">The image {e(entry["size_mismatch"])}: '
                      "drawn in the annotation's coordinates.</span>"
                      if entry["size_mismatch"] else "")
                   + "</figcaption></figure>")
    out.append("</div>")
    out.append(skipped_list(gallery))
    return "".join(out)


def _figure_files(c: Context) -> str | None:
    files = c.payload["figures"]
    if not files:
        return None
    return "<ul>" + "".join(f'<li><a href="{e(c.src(path))}">{e(name)}</a> ({e(path)})</li>'
                            for name, path in files.items()) + "</ul>"


def page(title: str, meta: str, panels: Any, context: Context, single_file: bool) -> str:
    """The whole page: a section for each of ``panels`` that has a body, under ``title`` and
    the ``meta`` line; the footer says where every number is (results.json, or the page's
    results-json script)."""
    from ._page import shell

    payload = context.payload
    sections = [(p.key, p.title, body) for p in panels
                if (body := p.build(context)) is not None]
    footer = (f"Written by deteval {e(payload['deteval_version'])}. Every number on this page "
              "is in " + ("the results-json script of this page." if single_file
                          else "results.json."))
    return shell(title, meta, sections, footer, payload if single_file else None)


def meta_line(payload: dict[str, Any]) -> str:
    """The line under the title: protocol, sizes, thresholds, version."""
    data, settings = payload["dataset"], payload["settings"]
    similarity = "OKS" if settings["protocol"] == "crowdpose" else "IoU"
    return (f"Protocol <b>{e(settings['protocol'])}</b> &middot; {data['images']} images, "
            f"{data['categories']} categories, {data['objects']} objects, "
            f"{data['detections']} detections &middot; errors and gallery at {similarity} &ge; "
            f"{e(format(settings['iou_threshold'], 'g'))} and score &ge; "
            f"{e(format_value(settings['score_threshold'], 'score'))} "
            f"({e(settings['score_threshold_source'])}) &middot; deteval "
            f"{e(payload['deteval_version'])}")


#: The single-run report's sections, in page order.
PANELS: list[Panel] = [
    Panel("summary", "Summary", _summary),
    Panel("per-class", "Per class", _per_class),
    Panel("slices", "Slices", _diagnostics.slices_panel),
    Panel("curves", "Curves", _curves),
    Panel("confusion", "Confusion", _confusion),
    Panel("errors", "Errors", _errors),
    Panel("error-attribution", "Error attribution", _diagnostics.error_attribution_panel),
    Panel("calibration", "Calibration", _diagnostics.calibration_panel),
    Panel("gallery", "Gallery", _gallery),
    Panel("figure-files", "Figure files", _figure_files),
]
