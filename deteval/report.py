"""A self-contained HTML report of one evaluation: tables, plots and the worst images.

:func:`write_report` writes one folder that can be opened from disk, copied or archived
whole, with no network access and nothing outside it:

* ``index.html``: the summary (the 12 COCO numbers or the VOC mAP), a per-class table that
  sorts when a column header is clicked, precision-recall curves, the F1 curve, the
  confusion matrix, per-class AP bars and a gallery of the images with the most errors,
  drawn with their matches. CSS and the small sorting script are inline; no font, style
  sheet or script is fetched.
* ``results.json``: every number the page shows. The page's numbers are formatted from the
  very values written there (and those are the protocol's own: ``COCOResult.stats``,
  ``VOCResult.map`` ...). A ratio that is 0/0 (the recall of a class without objects, the
  precision of one without detections) is undefined: null there and "n/a" on the page.
* the figures (``pr_curves.png`` ...) and ``gallery/*.jpg``, linked relatively.

Errors and the gallery are counted at one IoU threshold and one score threshold by
:func:`deteval.outcomes.match_outcomes` (the confusion matrix's matching), so the drawn
boxes, the confusion matrix and the error counts agree. That matching, like the F1 curve's
(:func:`deteval.operating_points`), is the COCO rule in continuous coordinates whatever the
protocol: with a VOC protocol its TP and FP can differ slightly from the devkit's (whose
boxes are inclusive pixels and whose rule differs on duplicates), which the per-class table
shows side by side ("VOC TP" and "TP").

Examples
--------
>>> import json, tempfile
>>> import deteval
>>> from deteval.demo import make_demo
>>> gt, dt = make_demo(n_images=8)
>>> with tempfile.TemporaryDirectory() as folder:
...     index = write_report(gt, dt, folder)
...     numbers = json.loads((index.parent / "results.json").read_text())
...     names = sorted(p.name for p in index.parent.iterdir())
>>> names
['ap_bars.png', 'confusion.png', 'f1_curve.png', 'index.html', 'pr_curves.png', 'results.json']
>>> numbers["summary"]["stats"] == deteval.evaluate_coco(gt, dt).stats.tolist()
True
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["PROTOCOLS", "format_value", "write_report"]

#: The protocols :func:`write_report` runs.
PROTOCOLS = ("coco", "voc2007", "voc2012")

_FIGURES = (("pr_curves", "Precision-recall curves"), ("f1_curve", "F1 by score threshold"),
            ("confusion", "Confusion matrix"), ("ap_bars", "AP per class"))
_GALLERY_MAX_SIDE = 1024          # gallery pictures are shrunk to this longest side
_WARN_NAMES = 5                   # how many skipped images a warning names
# 0/0 ratios (recall of a class without objects, precision without detections) are
# undefined: NaN, null in results.json and "n/a" on the page, never a made-up 0.
_UNDEFINED = float("nan")


# --------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------


def _check_settings(protocol: Any, iou_threshold: Any, score_threshold: Any, gallery: Any,
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
    if protocol == "coco":
        from .protocols.coco import COCO

        if not any(abs(t - iou_threshold) < 1e-9 for t in COCO.iou_thresholds):
            raise ValueError(f"iou_threshold must be one of the COCO thresholds (0.50, 0.55, "
                             f"..., 0.95) for the COCO protocol; got {iou_threshold!r}")
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
    if figure_format not in ("png", "svg"):
        raise ValueError(f"figure_format must be 'png' or 'svg'; got {figure_format!r}")
    return iou_threshold, score_threshold, int(gallery)


# --------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------


def _clean(value: Any) -> Any:
    """JSON-ready copy: numpy scalars and arrays as Python values, NaN as None."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return _clean(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return None if math.isnan(value) else value
    return value


def _evaluate(gt: Any, dt: Any, protocol: str, iou_threshold: float):
    if protocol == "coco":
        from .protocols.coco import evaluate_coco

        return evaluate_coco(gt, dt)
    from .protocols.voc import VOC2007, VOC2012, evaluate_voc

    params = VOC2007 if protocol == "voc2007" else VOC2012
    return evaluate_voc(gt, dt, params=params, iou_thresholds=(iou_threshold,))


def _summary(result: Any, protocol: str) -> dict[str, Any]:
    if protocol == "coco":
        from .protocols.coco import STAT_NAMES

        rows = []
        for name, value, line in zip(STAT_NAMES, result.stats.tolist(), result.summary_lines):
            setting = line[line.index("@[") + 2:line.rindex("]")].strip()
            setting = re.sub(r"\s*=\s*", "=", " ".join(setting.split()))
            rows.append({"name": name, "setting": setting, "value": value})
        return {"stats": result.stats.tolist(), "rows": rows,
                "lines": list(result.summary_lines)}
    t = result.params.iou_thresholds[0]
    counted = int(np.count_nonzero(~np.isnan(result.ap[0])))
    return {"map": result.map.tolist(), "iou_thresholds": list(result.params.iou_thresholds),
            "rows": [{"name": f"mAP@{t:.2f}",
                      "setting": f"{result.params.ap_method} AP, IoU {result.params.iou_comparison}"
                                 f" {t:g}, {counted} classes with ground truth",
                      "value": float(result.map[0])}],
            "lines": result.summary().splitlines()}


def _per_class(result: Any, protocol: str, cm: Any, points: Any) -> list[dict[str, Any]]:
    """One row per class: the protocol's numbers, then the counts at the operating point."""
    at_threshold = {row["name"]: row for row in cm.per_class(zero_division=_UNDEFINED)}
    best = {row["name"]: row for row in points.per_class()}
    rows = []
    if protocol == "coco":
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
_COCO_COLUMNS = (
    ("name", "class", "text", "category name"),
    ("category_id", "id", "int", "category id"),
    ("AP", "AP", "ratio", "AP @[IoU=0.50:0.95, area all, maxDets 100]"),
    ("AP50", "AP50", "ratio", "AP @[IoU=0.50]"),
    ("AP75", "AP75", "ratio", "AP @[IoU=0.75]"),
    ("APs", "APs", "ratio", "AP of small objects (area < 32²)"),
    ("APm", "APm", "ratio", "AP of medium objects"),
    ("APl", "APl", "ratio", "AP of large objects (area > 96²)"),
    ("AR100", "AR100", "ratio", "average recall, maxDets 100"),
    ("n_gt", "objects", "int", "ground-truth objects (crowd regions included)"),
    ("n_detections", "detections", "int", "detections evaluated"),
)
_VOC_COLUMNS = (
    ("name", "class", "text", "category name"),
    ("category_id", "id", "int", "category id"),
    ("AP", "AP", "ratio", "the protocol's AP of the class"),
    ("n_gt", "objects", "int", "objects that are not difficult (npos)"),
    ("n_difficult", "difficult", "int", "difficult objects"),
    ("n_detections", "detections", "int", "detections evaluated"),
    ("voc_tp", "VOC TP", "int", "true positives by the VOC rule (all scores)"),
    ("voc_fp", "VOC FP", "int", "false positives by the VOC rule (all scores)"),
)
_OPERATING_COLUMNS = (
    ("tp", "TP", "int", "true positives at the report's score threshold"),
    ("fp", "FP", "int", "false positives at the score threshold (wrong class, background, "
     "duplicates)"),
    ("fn", "FN", "int", "missed or confused objects at the score threshold"),
    ("precision", "precision", "ratio", "precision at the score threshold"),
    ("recall", "recall", "ratio", "recall at the score threshold"),
    ("f1", "F1", "ratio", "F1 at the score threshold"),
    ("best_f1", "best F1", "ratio", "the highest F1 of the class over score thresholds"),
    ("best_f1_score", "at score", "score", "the score threshold of the best F1"),
)


def _defined(value: Any, kind: str) -> bool:
    if value is None:
        return False
    if kind == "ratio" and value < 0:  # pycocotools' -1: no ground truth
        return False
    return not (isinstance(value, float) and math.isnan(value))


def format_value(value: Any, kind: str) -> str:
    """How the page writes a number: ``ratio`` and ``score`` with 3 decimals, ``int`` as is;
    undefined values (None, NaN, and -1 for a ratio) as ``n/a``.

    Examples
    --------
    >>> format_value(0.12345, "ratio"), format_value(-1.0, "ratio"), format_value(7, "int")
    ('0.123', 'n/a', '7')
    """
    if kind == "text":
        return str(value)
    if not _defined(value, kind):
        return "n/a"
    if kind == "int":
        return str(int(value))
    return f"{value:.3f}"


def _data_value(value: Any, kind: str) -> str:
    """The cell's exact value, for sorting (and checking): repr of the JSON number."""
    if kind == "text":
        return str(value)
    if not _defined(value, kind):
        return ""
    return str(int(value)) if kind == "int" else repr(float(value))


# --------------------------------------------------------------------------------------
# Figures and gallery
# --------------------------------------------------------------------------------------


def _figures(result: Any, points: Any, cm: Any, out: Path, iou_threshold: float,
             figure_format: str, step: Callable[[str], None]) -> dict[str, str]:
    from .viz import plots

    files = {}
    for name, _ in _FIGURES:
        files[name] = f"{name}.{figure_format}"
    step("plotting precision-recall curves")
    plots.plot_pr_curves(result, iou_threshold=iou_threshold, path=out / files["pr_curves"])
    step("plotting the F1 curve")
    plots.plot_f1_curve(points, path=out / files["f1_curve"])
    step("plotting the confusion matrix")
    plots.plot_confusion_matrix(cm, path=out / files["confusion"])
    step("plotting AP per class")
    plots.plot_ap_bars(result, path=out / files["ap_bars"])
    return files


def _gallery(dataset: Any, detections: Any, outcomes: Any, images_dir: Path | None,
             limit: int, out: Path, step: Callable[[str], None]
             ) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Draw the ``limit`` images with the most errors; returns the entries and the images
    that could not be drawn (with the reason)."""
    if limit == 0 or images_dir is None:
        return [], []
    from PIL import Image

    from .viz.draw import draw_matches, image_file, size_mismatch

    folder = out / "gallery"
    folder.mkdir(exist_ok=True)
    entries: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    images = dataset.images
    for image_index in outcomes.images_by_errors(only_errors=True).tolist():
        if len(entries) == limit:
            break
        file_name = images.file_names[image_index]
        path = image_file(images_dir, file_name) if file_name else None
        label = file_name or f"image id {int(images.ids[image_index])}"
        if path is None or not path.is_file():
            skipped.append({"image": label, "reason": "no file name" if not file_name
                            else f"not found in {images_dir}"})
            continue
        try:
            with Image.open(path) as opened:
                opened.load()
                picture = opened.convert("RGB")
            mismatch = size_mismatch(dataset, image_index, picture.size)
            drawn = draw_matches(picture, dataset, detections, image_index, outcomes=outcomes,
                                 iou_threshold=outcomes.iou_threshold,
                                 score_threshold=outcomes.score_threshold)
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
            skipped.append({"image": label, "reason": f"cannot be read ({error})"})
            continue
        drawn = drawn.convert("RGB")
        drawn.thumbnail((_GALLERY_MAX_SIDE, _GALLERY_MAX_SIDE), Image.Resampling.LANCZOS)
        target = f"gallery/{len(entries) + 1:04d}.jpg"
        drawn.save(out / target, quality=90)
        counts = outcomes.counts(image_index=image_index)
        entries.append({"image_id": int(images.ids[image_index]), "file_name": file_name,
                        "errors": int(outcomes.errors_per_image[image_index]),
                        "counts": counts, "file": target,
                        "width": drawn.width, "height": drawn.height,
                        "size_mismatch": mismatch})
        step(f"drawing {label}")
    return entries, skipped


def f1_optimal_score(points: Any) -> tuple[float, str]:
    """The score threshold of the best F1 over all classes (``points.best()``, from
    :func:`~deteval.confusion.operating_points`), 0 when no score gives an F1 above 0; and
    where it comes from (``"the F1-optimal score"`` or ``"no F1 above 0"``)."""
    best = points.best()["threshold"]
    if not math.isfinite(best):
        return 0.0, "no F1 above 0"
    return max(best, 0.0), "the F1-optimal score"


def _legend_entries() -> list[dict[str, Any]]:
    """The drawing styles of the gallery, as the draw module describes them."""
    from .viz.draw import legend

    return [{k: entry[k] for k in ("key", "label", "colour", "dash", "description")}
            for entry in legend()]


# --------------------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------------------

_CSS = """
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --head: #eef1f6; --accent: #2557a7; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--fg); background: #fafbfc; }
header, main { max-width: 1200px; margin: 0 auto; padding: 0 20px; }
header { padding-top: 18px; }
h1 { font-size: 1.6em; margin: 0.2em 0; }
h2 { font-size: 1.25em; margin: 1.6em 0 0.5em; border-bottom: 1px solid var(--line);
     padding-bottom: 0.2em; }
nav a { margin-right: 1em; color: var(--accent); }
.muted { color: var(--muted); }
table { border-collapse: collapse; background: white; margin: 0.4em 0 1em; }
caption { text-align: left; caption-side: top; padding: 0 0 4px; }
th, td { border: 1px solid var(--line); padding: 3px 7px; }
th { background: var(--head); text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; user-select: none; white-space: nowrap; }
table.sortable th::after { content: " \\2195"; color: #9aa3b2; }
table.sortable th[aria-sort="ascending"]::after { content: " \\2191"; color: var(--fg); }
table.sortable th[aria-sort="descending"]::after { content: " \\2193"; color: var(--fg); }
.scroll { overflow-x: auto; }
/* The class column stays in view when a wide per-class table is scrolled sideways. */
#per-class-table td:first-child, #per-class-table th:first-child {
  position: sticky; left: 0; z-index: 1; white-space: nowrap; }
#per-class-table td:first-child { background: white; }
.figures { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; background: white; border: 1px solid var(--line); padding: 8px; }
figure img { max-width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 0.9em; margin-top: 4px; }
.wide { flex: 1 1 100%; }
.half { flex: 1 1 420px; max-width: 100%; align-self: flex-start; }
.gallery { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr));
           gap: 14px; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 0.5em 0 1em; padding: 0;
          list-style: none; }
.swatch { display: inline-block; width: 26px; height: 0; border-top: 3px solid;
          vertical-align: middle; margin-right: 6px; }
ul.notes li { margin: 0.2em 0; }
.warn { color: #a33a00; }
footer { color: var(--muted); font-size: 0.85em; max-width: 1200px; margin: 2em auto;
         padding: 0 20px; }
"""

# Sorts a table.sortable by the clicked column (numbers by data-value, undefined last; text
# by locale), toggling the direction; marks the page ready when it ran without error.
_JS = """
(function () {
  "use strict";
  function key(cell, numeric) {
    var raw = cell.getAttribute("data-value");
    if (!numeric) { return raw === null ? cell.textContent : raw; }
    return raw === null || raw === "" ? NaN : parseFloat(raw);
  }
  function sortBy(table, header, column) {
    var numeric = header.getAttribute("data-type") !== "text";
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[column], numeric), y = key(b.cells[column], numeric);
      if (numeric) {
        if (isNaN(x) || isNaN(y)) { return isNaN(x) - isNaN(y); }
        return ascending ? x - y : y - x;
      }
      return ascending ? x.localeCompare(y) : y.localeCompare(x);
    });
    Array.prototype.forEach.call(header.parentNode.cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, column) {
      header.tabIndex = 0;
      header.addEventListener("click", function () { sortBy(table, header, column); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sortBy(table, header, column);
        }
      });
    });
  });
  document.body.setAttribute("data-ready", "1");
})();
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(columns, rows, *, sortable: bool = False, caption: str | None = None,
           table_id: str | None = None) -> str:
    attrs = (f' id="{_e(table_id)}"' if table_id else "") + (' class="sortable"' if sortable
                                                             else "")
    parts = [f"<div class=\"scroll\"><table{attrs}>"]
    if caption:
        parts.append(f"<caption class=\"muted\">{_e(caption)}</caption>")
    parts.append("<thead><tr>")
    for key, header, kind, tip in columns:
        data_type = "text" if kind == "text" else "number"
        parts.append(f'<th data-key="{_e(key)}" data-type="{data_type}" title="{_e(tip)}">'
                     f"{_e(header)}</th>")
    parts.append("</tr></thead><tbody>")
    for row in rows:
        parts.append("<tr>")
        for key, _, kind, _ in columns:
            value = row.get(key)
            css = "" if kind == "text" else ' class="num"'
            parts.append(f'<td{css} data-key="{_e(key)}" '
                         f'data-value="{_e(_data_value(value, kind))}">'
                         f"{_e(format_value(value, kind))}</td>")
        parts.append("</tr>")
    parts.append("</tbody></table></div>")
    return "".join(parts)


def _page(payload: dict[str, Any], title: str) -> str:
    protocol = payload["settings"]["protocol"]
    data = payload["dataset"]
    settings = payload["settings"]
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           '<link rel="icon" href="data:,">', f"<title>{_e(title)}</title>",
           f"<style>{_CSS}</style>", "</head>", "<body>", "<header>",
           f"<h1>{_e(title)}</h1>",
           f"<p class=\"muted\">Protocol <b>{_e(protocol)}</b> &middot; "
           f"{data['images']} images, {data['categories']} categories, {data['objects']} "
           f"objects, {data['detections']} detections &middot; errors and gallery at IoU "
           f"&ge; {_e(format(settings['iou_threshold'], 'g'))} and score &ge; "
           f"{_e(format_value(settings['score_threshold'], 'score'))} "
           f"({_e(settings['score_threshold_source'])}) &middot; deteval "
           f"{_e(payload['deteval_version'])}</p>",
           '<nav><a href="#summary">Summary</a><a href="#per-class">Per class</a>'
           '<a href="#curves">Curves</a><a href="#errors">Errors</a>'
           '<a href="#gallery">Gallery</a><a href="results.json">results.json</a></nav>',
           "</header>", "<main>"]

    out.append('<h2 id="summary">Summary</h2>')
    summary_columns = (("name", "metric", "text", "metric"),
                       ("setting", "setting", "text", "evaluation setting"),
                       ("value", "value", "ratio", "value (-1 in pycocotools: undefined)"))
    out.append(_table(summary_columns, payload["summary"]["rows"], table_id="summary-table"))
    overall = payload["operating_point"]
    op_columns = (("what", "at", "text", ""), ("score_threshold", "score threshold", "score",
                                               "detections scoring at least this count"),
                  *[c for c in _OPERATING_COLUMNS[:6]])
    out.append(_table(op_columns, [{"what": "report threshold", **overall["at_threshold"]},
                                   {"what": "best F1", **overall["best"]}],
                      table_id="operating-table",
                      caption="All classes pooled; matching as the confusion matrix's."))
    if payload["notes"]:
        out.append('<ul class="notes">' + "".join(f"<li>{_e(note)}</li>"
                                                  for note in payload["notes"]) + "</ul>")

    out.append('<h2 id="per-class">Per class</h2>')
    out.append('<p class="muted">Click a column header to sort. The last columns count at the '
               'report\'s score threshold.</p>')
    columns = (_COCO_COLUMNS if protocol == "coco" else _VOC_COLUMNS) + _OPERATING_COLUMNS
    out.append(_table(columns, payload["per_class"], sortable=True, table_id="per-class-table"))

    out.append('<h2 id="curves">Curves</h2><div class="figures">')
    figures = payload["figures"]
    captions = dict(_FIGURES)
    # The two narrow figures side by side, between the two wide ones.
    for name in ("pr_curves", "f1_curve", "ap_bars", "confusion"):
        caption = captions[name]
        size = "wide" if name in ("pr_curves", "confusion") else "half"
        out.append(f'<figure class="{size}"><img src="{_e(figures[name])}" '
                   f'alt="{_e(caption)}"><figcaption>{_e(caption)}</figcaption></figure>')
    out.append("</div>")

    out.append('<h2 id="errors">Errors</h2>')
    counts = payload["outcomes"]["counts"]
    count_columns = tuple((key, key.replace("_", " "), "int", "") for key in counts)
    out.append(_table(count_columns, [counts], table_id="outcome-table",
                      caption="Detections and objects by outcome at the report's thresholds "
                      "(deteval.outcomes.match_outcomes)."))

    out.append('<h2 id="gallery">Gallery</h2>')
    gallery = payload["gallery"]
    if gallery["legend"]:
        out.append('<ul class="legend">')
        for entry in gallery["legend"]:
            out.append(f'<li title="{_e(entry["description"])}"><span class="swatch" '
                       f'style="border-color: {_e(entry["colour"])}; '
                       f'border-top-style: {_e(entry["dash"])}"></span>'
                       f'{_e(entry["label"])}</li>')
        out.append("</ul>")
    if gallery["images"]:
        out.append(f"<p class=\"muted\">The {len(gallery['images'])} images with the most "
                   "errors (false positives and missed objects).</p><div class=\"gallery\">")
        for entry in gallery["images"]:
            c = entry["counts"]
            # A click opens the drawing at full size.
            out.append(f'<figure><a href="{_e(entry["file"])}"><img src="{_e(entry["file"])}" '
                       f'width="{entry["width"]}" height="{entry["height"]}" loading="lazy" '
                       f'alt="{_e(entry["file_name"])}"></a>'
                       f"<figcaption><b>{_e(entry['file_name'] or entry['image_id'])}</b> "
                       f"(id {entry['image_id']}): {entry['errors']} errors &middot; "
                       f"TP {c['tp']}, FP {c['fp']}, FN {c['fn']}"
                       + (f'<br><span class="warn">The image {_e(entry["size_mismatch"])}: '
                          "drawn in the annotation's coordinates.</span>"
                          if entry["size_mismatch"] else "")
                       + "</figcaption></figure>")
        out.append("</div>")
    else:
        out.append(f"<p class=\"muted\">{_e(gallery['why_empty'])}</p>")
    if gallery["skipped"]:
        out.append("<p>Images that could not be drawn:</p><ul>" + "".join(
            f"<li>{_e(s['image'])}: {_e(s['reason'])}</li>" for s in gallery["skipped"])
            + "</ul>")
    out.append("</main>")
    out.append(f"<footer>Written by deteval {_e(payload['deteval_version'])}. Every number "
               "on this page is in results.json.</footer>")
    out.append(f"<script>{_JS}</script>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------
# The entry point
# --------------------------------------------------------------------------------------


def write_report(gt: Any, dt: Any, out_dir: str | os.PathLike, *,
                 images_dir: str | os.PathLike | None = None, protocol: str = "coco",
                 iou_threshold: float = 0.5, score_threshold: float | None = None,
                 gallery: int = 24, figure_format: str = "png", title: str | None = None,
                 quiet: bool = True,
                 progress: Callable[[int, int, str], None] | None = None) -> Path:
    """Evaluate and write a self-contained HTML report into the folder ``out_dir``.

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
        Ground truth: a :class:`~deteval.data.Dataset` or a COCO instances file (or dict).
    dt : Detections, str, PathLike, list, dict or ndarray
        Detections, or anything :func:`~deteval.io.coco.read_coco_results` reads.
    out_dir : str or PathLike
        The report's folder, created if needed. ``index.html``, ``results.json``, the
        figures and ``gallery/`` are (over)written; nothing else in it is touched.
    images_dir : str or PathLike, optional
        Where the images are (``file_name`` of the images table, relative to it, or its
        base name). Without it there is no gallery. Missing or unreadable images are
        skipped with a :class:`~deteval.errors.FormatWarning` naming them, and listed on
        the page and in ``results.json``; the next images by errors take their place.
        An image whose size is not the annotation's width and height is drawn in the
        annotation's coordinates, with a warning naming it and a note under it on the page.
    protocol : {"coco", "voc2007", "voc2012"}
        COCO (pycocotools numbers) or a VOC devkit preset.
    iou_threshold : float, default 0.5
        The IoU threshold of the precision-recall curves, the F1 curve, the confusion
        matrix, the error counts and the gallery. COCO: one of its ten thresholds. VOC:
        the protocol is evaluated at this threshold.
    score_threshold : float, optional
        Score threshold of the confusion matrix, the error counts and the gallery. Default:
        the F1-optimal score over all classes (:meth:`OperatingPoints.best`), 0 when no
        score gives an F1 above 0.
    gallery : int, default 24
        How many images to draw (0: none).
    figure_format : {"png", "svg"}
    title : str, optional
        The page title; default names the ground truth's source.
    quiet : bool, default True
        When False (and no ``progress`` is given), show a progress bar on stderr if it is a
        terminal.
    progress : callable, optional
        Called as ``progress(done, total, step)`` after each step; overrides ``quiet``.

    Returns
    -------
    pathlib.Path
        The path of ``index.html``.

    Raises
    ------
    FormatError
        Unreadable input files.
    ValueError, TypeError
        Invalid settings (checked before anything is computed or written).
    ImportError
        matplotlib is missing (``pip install 'deteval[plot]'``).
    """
    from . import __version__
    from .confusion import detection_confusion_matrix, operating_points
    from .errors import FormatWarning
    from .outcomes import match_outcomes
    from .viz.plots import require_matplotlib

    iou_threshold, score_threshold, gallery = _check_settings(
        protocol, iou_threshold, score_threshold, gallery, figure_format)
    require_matplotlib()  # fail early, before the evaluation, when the plot extra is missing
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"cannot write the report into {out}: it is a file")
    images_path = None if images_dir is None else Path(images_dir)
    if images_path is not None and not images_path.is_dir():
        raise NotADirectoryError(f"images_dir {images_path} is not a folder")

    bar = None
    if progress is None and not quiet:
        from ._progress import ProgressBar

        bar = progress = ProgressBar()
    total = 8 + (gallery if images_path is not None else 0)
    done = 0

    def step(what: str, *, last: bool = False) -> None:
        nonlocal done
        done = total if last else min(done + 1, total - 1)
        if progress is not None:
            progress(done, total, what)

    try:
        if progress is not None:
            progress(0, total, "evaluating")
        result = _evaluate(gt, dt, protocol, iou_threshold)
        dataset, detections = result.dataset, result.detections
        step("evaluated")
        points = operating_points(dataset, detections, iou_threshold=iou_threshold)
        step("operating points")
        if score_threshold is None:
            score_threshold, source = f1_optimal_score(points)
        else:
            source = "given"
        cm = detection_confusion_matrix(dataset, detections, iou_threshold=iou_threshold,
                                        score_threshold=score_threshold)
        outcomes = match_outcomes(dataset, detections, iou_threshold=iou_threshold,
                                  score_threshold=score_threshold,
                                  iou_type=getattr(result.params, "iou_type", "bbox"))
        step("confusion matrix and outcomes")
        out.mkdir(parents=True, exist_ok=True)
        figures = _figures(result, points, cm, out, iou_threshold, figure_format, step)
        entries, skipped = _gallery(dataset, detections, outcomes, images_path, gallery, out,
                                    step)
        if skipped:
            shown = ", ".join(s["image"] for s in skipped[:_WARN_NAMES])
            more = f" and {len(skipped) - _WARN_NAMES} more" if len(skipped) > _WARN_NAMES \
                else ""
            warnings.warn(FormatWarning(
                f"report gallery: {len(skipped)} image(s) skipped, missing or unreadable "
                f"under {images_path}: {shown}{more}"), stacklevel=2)
        mismatched = [e for e in entries if e["size_mismatch"]]
        if mismatched:
            shown = ", ".join(f"{e['file_name']} {e['size_mismatch']}"
                              for e in mismatched[:_WARN_NAMES])
            more = f" and {len(mismatched) - _WARN_NAMES} more" \
                if len(mismatched) > _WARN_NAMES else ""
            warnings.warn(FormatWarning(
                f"report gallery: {len(mismatched)} image(s) differ in size from their "
                f"annotation (drawn in the annotation's coordinates): {shown}{more}"),
                stacklevel=2)
        if images_path is None:
            why = "No images folder was given (images_dir / --images): no gallery."
        elif gallery == 0:
            why = "The gallery was turned off (gallery=0)."
        elif not np.any(outcomes.errors_per_image > 0):
            why = "No image has an error at these thresholds."
        else:
            why = "None of the images with errors could be read."

        gt_objects = dataset.gt
        at = cm.overall(zero_division=_UNDEFINED)
        payload = _clean({
            "deteval_version": __version__,
            "settings": {"protocol": protocol, "iou_threshold": iou_threshold,
                         "score_threshold": score_threshold,
                         "score_threshold_source": source,
                         "gallery": gallery, "images_dir": None if images_path is None
                         else str(images_path)},
            "dataset": {"source": dataset.source, "images": len(dataset.images),
                        "categories": len(dataset.categories), "objects": len(gt_objects),
                        "crowd": int(gt_objects.iscrowd.sum()),
                        "ignored": int(gt_objects.ignore.sum()),
                        "detections": len(detections)},
            "summary": _summary(result, protocol),
            "per_class": _per_class(result, protocol, cm, points),
            "operating_point": {
                "at_threshold": {"score_threshold": score_threshold, **at},
                "best": {"score_threshold": points.best()["threshold"],
                         **{k: points.best()[k] for k in ("tp", "fp", "fn", "precision",
                                                           "recall")},
                         "f1": points.best()["fbeta"]}},
            "confusion": cm.to_dict(zero_division=_UNDEFINED),
            "outcomes": {"counts": outcomes.counts(),
                         "errors_per_image": outcomes.errors_per_image},
            "figures": figures,
            "gallery": {"images": entries, "skipped": skipped,
                        "legend": _legend_entries() if entries else [],
                        "why_empty": why},
            "notes": list(result.notes),
        })
        named = dataset.source and not dataset.source.startswith("<")  # "<dict>": no name
        default_title = "deteval report" + (f": {Path(dataset.source).name}" if named else "")
        (out / "results.json").write_text(json.dumps(payload, indent=1, allow_nan=False),
                                          encoding="utf-8")
        index = out / "index.html"
        index.write_text(_page(payload, title or default_title), encoding="utf-8")
        step("written", last=True)
    finally:
        if bar is not None:
            bar.close()
    return index
