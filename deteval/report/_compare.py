"""Two runs on the same ground truth, side by side: :func:`compare_report`.

The summary and per-class numbers of each run are its protocol's own (as in
:func:`~deteval.report.write_report`); a difference is ``B - A``, undefined (null, "n/a")
when either side is. Intervals of the differences come from ``ci`` (the paired bootstrap of
:func:`deteval.compare_coco`, with p-values) or from ``intervals`` (your own) when given: the
columns are shown only then.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import _svg
from ._data import check_settings, clean, legend_entries, per_class_rows, summary
from ._page import e, figure, pager, table
from ._panels import Context, Panel, class_filter, gallery_tools, skipped_list

#: The compared per-class numbers: (key in a run's per-class row, header).
_CLASS_NUMBERS = (("AP", "AP"), ("tp", "TP"), ("fp", "FP"), ("fn", "FN"))
#: How many classes the lists of largest gains and losses name.
_CHANGES = 10


def difference(a: Any, b: Any) -> float | None:
    """``b - a``; None when either is undefined (None, NaN, or pycocotools' -1)."""
    if a is None or b is None or a != a or b != b or a < 0 or b < 0:
        return None
    return b - a


def comparison(runs: list[Any], names: Sequence[str], protocol: str,
               intervals: dict[str, Any] | None) -> dict[str, Any]:
    """The summary rows and per-class rows of the two runs and their differences."""
    summaries = [summary(run.result, protocol) for run in runs]
    rows = []
    for row_a, row_b in zip(summaries[0]["rows"], summaries[1]["rows"]):
        interval = (intervals or {}).get(row_a["name"])
        rows.append({"name": row_a["name"], "setting": row_a["setting"], "a": row_a["value"],
                     "b": row_b["value"], "difference": difference(row_a["value"],
                                                                   row_b["value"]),
                     "interval": None if interval is None else [float(v) for v in interval]})
    per_class = [per_class_rows(run.result, protocol, run.cm, run.points) for run in runs]
    classes = []
    for row_a, row_b in zip(*per_class):
        row = {"category_id": row_a["category_id"], "name": row_a["name"],
               "n_gt": row_a["n_gt"]}
        for key, _ in _CLASS_NUMBERS:
            row[f"{key}_a"], row[f"{key}_b"] = row_a[key], row_b[key]
            row[f"{key}_diff"] = difference(row_a[key], row_b[key])
        classes.append(row)
    return {"names": list(names), "summary": rows, "per_class": classes,
            "summaries": summaries, "per_class_runs": per_class}


def paired_intervals(runs: list[Any], names: Sequence[str], ci: int, confidence: float,
                     seed: Any, score_threshold: float | None,
                     protocol: str = "coco", *, threads: int | None = None) -> dict[str, Any]:
    """:func:`deteval.compare_coco` (VOC protocols: :func:`deteval.compare_voc`; LVIS
    :func:`deteval.compare_lvis`, CrowdPose :func:`deteval.compare_crowdpose`) of the two
    runs (B paired resamples): its numbers (``to_dict()``), and by summary name and by
    category id the interval of the difference and its p-value (Holm-adjusted for the
    classes). The VOC summary's ``mAP@t`` is the comparison's ``mAP``."""
    from ..diagnostics.compare import compare_coco, compare_voc

    results = [run.result for run in runs]
    settings = {"n_resamples": ci, "confidence": confidence, "seed": seed,
                "models": list(names), "threads": threads}
    if protocol == "coco":
        result = compare_coco(results, score_threshold=0.5 if score_threshold is None
                              else score_threshold, **settings)
    elif protocol == "crowdpose":
        from ..diagnostics.compare import compare_crowdpose

        result = compare_crowdpose(results, **settings)
    elif protocol == "lvis":
        from ..diagnostics.compare import compare_lvis

        result = compare_lvis(results, **settings)
    else:
        result = compare_voc(results, **settings)
    at = {name: i for i, name in enumerate(result.names)}
    classes = [i for i, name in enumerate(result.names) if name.startswith("AP[")]
    ids = runs[0].result.category_ids.tolist()

    def entry(i: int) -> dict[str, Any]:
        return {"low": float(result.low[0, i]), "high": float(result.high[0, i]),
                "p_value": float(result.p_adjusted[0, i])}

    return {"numbers": result.to_dict(),
            "summary": {name: entry(i) for name, i in at.items()},
            "per_class": {cid: entry(i) for cid, i in zip(ids, classes[-len(ids):])}
            if ids else {},
            "header": f"{100 * confidence:g}% CI"}


def add_paired(numbers: dict[str, Any], paired: dict[str, Any]) -> None:
    """The paired intervals and p-values into the comparison's summary and per-class rows."""
    from ._diagnostics import bootstrap_name

    for row in numbers["summary"]:
        found = paired["summary"].get(bootstrap_name(row["name"]))
        if found is not None:
            row["interval"] = [found["low"], found["high"]]
            row["p_value"] = found["p_value"]
    for row in numbers["per_class"]:
        found = paired["per_class"].get(row["category_id"])
        if found is not None:
            row["AP_diff_interval"] = [found["low"], found["high"]]
            row["AP_p"] = found["p_value"]


def _interval_cell(interval: Any) -> str:
    if not interval or any(v is None or v != v for v in interval):
        return ""
    return f"[{interval[0]:+.3f}, {interval[1]:+.3f}]"


def _summary(c: Context) -> str:
    names = c.payload["comparison"]["names"]
    rows = c.payload["comparison"]["summary"]
    columns = [("name", "metric", "text", "metric"), ("setting", "setting", "text", ""),
               ("a", names[0], "ratio", "run A"), ("b", names[1], "ratio", "run B"),
               ("difference", "B \u2212 A", "signed", "difference, B minus A")]
    shown = [dict(row) for row in rows]
    if any(row["interval"] for row in rows):
        header = c.payload["comparison"].get("interval_header", "interval")
        columns.append(("interval_text", header, "text", "interval of the difference"))
        for row in shown:
            row["interval_text"] = _interval_cell(row["interval"])
    if any("p_value" in row for row in rows):
        columns.append(("p_value", "p", "score", "two-sided paired-bootstrap p-value"))
    runs = c.payload["runs"]
    op_columns = (("name", "run", "text", ""), ("score_threshold", "score threshold", "score",
                                                "the run's report threshold"),
                  ("tp", "TP", "int", ""), ("fp", "FP", "int", ""), ("fn", "FN", "int", ""),
                  ("precision", "precision", "ratio", ""), ("recall", "recall", "ratio", ""),
                  ("f1", "F1", "ratio", ""))
    caption = "Each run's numbers and the difference B \u2212 A."
    paired = c.payload["panels"].get("comparison_intervals")
    if paired is not None:
        caption += (f" Intervals: paired image bootstrap, percentile, {paired['n_resamples']} "
                    f"resamples (seed {paired['seed']}); p: two-sided bootstrap p-value (per "
                    "class: Holm-adjusted).")
    return (table(columns, shown, table_id="summary-table", caption=caption)
            + table(op_columns, [{"name": run["name"], **run["at_threshold"]} for run in runs],
                    table_id="operating-table", caption="Each run at its score threshold."))


def _per_class(c: Context) -> str:
    names = c.payload["comparison"]["names"]
    columns = [("name", "class", "text", "category name"), ("category_id", "id", "int", ""),
               ("n_gt", "objects", "int", "")]
    for key, header in _CLASS_NUMBERS:
        kind = "ratio" if key == "AP" else "int"
        columns += [(f"{key}_a", f"{header} A", kind, f"{header} of {names[0]}"),
                    (f"{key}_b", f"{header} B", kind, f"{header} of {names[1]}"),
                    (f"{key}_diff", f"\u0394{header}", "signed" if kind == "ratio" else
                     "int", f"{header} of B minus A")]
    index = {int(i): k for k, i in enumerate(c.dataset.categories.ids.tolist())}
    rows = c.payload["comparison"]["per_class"]
    if any("AP_p" in row for row in rows):
        header = c.payload["comparison"].get("interval_header", "interval")
        rows = [dict(row, AP_diff_ci=_interval_cell(row.get("AP_diff_interval")))
                for row in rows]
        at = [key for key, *_ in columns].index("AP_diff") + 1
        columns[at:at] = [("AP_diff_ci", f"\u0394AP {header}", "text",
                           "paired bootstrap interval of the difference"),
                          ("AP_p", "p (Holm)", "score",
                           "paired-bootstrap p-value, Holm-adjusted across the classes")]
    return (f'<p class="muted">A: {e(names[0])}, B: {e(names[1])}. Click a header to sort (by '
            "\u0394AP to find what changed), a row to see its images. TP, FP and FN count at "
            "each run's score threshold.</p>"
            + pager("per-class-table", "filter classes")
            + table(columns, rows, sortable=True,
                    table_id="per-class-table", boxed=True,
                    row_attrs=lambda row: ' class="pick"' + class_filter(
                        index[row["category_id"]], row["name"])))


def _changes(c: Context) -> str:
    pr_a, pr_b = c.views["pr"]
    names = c.payload["comparison"]["names"]
    keys = "".join(f'<span class="key" style="background:{_svg.COLOURS[k]}"></span>{e(n)}'
                   for k, n in zip("ab", names))
    runs = [(names[0], pr_a, _svg.COLOURS["a"]), (names[1], pr_b, _svg.COLOURS["b"])]
    out = ['<div class="figures">'
           + figure(_svg.pr_mean(pr_a, runs=runs), f"Mean precision-recall curves:{keys}.")
           + "</div>"]
    index = {int(i): k for k, i in enumerate(c.dataset.categories.ids.tolist())}
    rows = [r for r in c.payload["comparison"]["per_class"] if r["AP_diff"] is not None]
    for what, chosen, css in (("gains", sorted(rows, key=lambda r: -r["AP_diff"]), "up"),
                              ("losses", sorted(rows, key=lambda r: r["AP_diff"]), "down")):
        chosen = [r for r in chosen if (r["AP_diff"] > 0 if css == "up" else r["AP_diff"] < 0)]
        if not chosen:
            out.append(f'<p class="muted">No class {"gains" if css == "up" else "loses"} AP.</p>')
            continue
        out.append(f"<h3>Largest AP {what} of {e(names[1])} over {e(names[0])}</h3>"
                   '<ol class="top">')
        for row in chosen[:_CHANGES]:
            out.append(f'<li><button type="button" class="link"'
                       f'{class_filter(index[row["category_id"]], row["name"])}>'
                       f'{e(row["name"])}</button>: {row["AP_a"]:.3f} &rarr; {row["AP_b"]:.3f} '
                       f'(<span class="{css}">{row["AP_diff"]:+.3f}</span>)</li>')
        out.append("</ol>")
    return "".join(out)


def _gallery(c: Context) -> str:
    gallery = c.payload["gallery"]
    if not gallery["images"]:
        return f"<p class=\"muted\">{e(gallery['why_empty'])}</p>" + skipped_list(gallery)
    names = c.payload["comparison"]["names"]
    category_names = c.dataset.categories.names
    out = [gallery_tools(gallery),
           f'<p class="muted">The images where the error counts of the two runs differ most; '
           f"left {e(names[0])}, right {e(names[1])}.</p>"
           '<div class="gallery" id="gallery-grid">']
    for entry in gallery["images"]:
        tags = entry["tags"]
        search = " ".join([entry["file_name"] or str(entry["image_id"])]
                          + [category_names[k] for k in tags["classes"]]).lower()
        pictures = "".join(f'<a href="{e(c.src(p["file"]))}"><img src="{e(c.src(p["thumb"]))}"'
                           f' width="{p["width"]}" height="{p["height"]}" loading="lazy" '
                           f'alt="{e(name)}: {e(entry["file_name"])}"></a>'
                           for p, name in zip(entry["runs"], names))
        a, b = entry["errors"]
        out.append(f'<figure data-cells="{" ".join(tags["cells"])}" '
                   f'data-classes="{" ".join(map(str, tags["classes"]))}" '
                   f'data-errors="{" ".join(tags["errors"])}" data-search="{e(search)}">'
                   f'<div class="pair">{pictures}</div><figcaption><b>'
                   f"{e(entry['file_name'] or entry['image_id'])}</b> (id {entry['image_id']})"
                   f": errors {e(names[0])} {a}, {e(names[1])} {b}</figcaption></figure>")
    out.append("</div>" + skipped_list(gallery))
    return "".join(out)


#: The comparison's sections, in page order.
COMPARE_PANELS: list[Panel] = [
    Panel("summary", "Summary", _summary),
    Panel("per-class", "Per class", _per_class),
    Panel("changes", "Changes", _changes),
    Panel("gallery", "Gallery", _gallery),
]


def compare_report(gt: Any, dt_a: Any, dt_b: Any, out_dir: str | os.PathLike, *,
                   names: Sequence[str] = ("A", "B"),
                   images_dir: str | os.PathLike | None = None, protocol: str = "coco",
                   iou_threshold: float = 0.5, score_threshold: float | None = None,
                   gallery: int = 24, title: str | None = None, single_file: bool = False,
                   intervals: Callable[[Any, Any], dict[str, Any]] | None = None,
                   ci: int | None = None, ci_confidence: float = 0.95, ci_seed: Any = 0,
                   ci_threads: int | None = None,
                   panels: Sequence[Panel] | None = None, quiet: bool = True,
                   progress: Callable[[int, int, str], None] | None = None,
                   openimages: dict[str, Any] | None = None) -> Path:
    """Evaluate two runs on the same ground truth and write a report comparing them.

    Parameters are those of :func:`~deteval.report.write_report`, with:

    dt_a, dt_b : detections
        The two runs (``dt_b`` is matched to the ground truth ``dt_a`` was read with).
    names : pair of str, default ("A", "B")
        The runs' names on the page.
    score_threshold : float, optional
        One threshold for both runs; default each run's F1-optimal score.
    gallery : int, default 24
        How many images to draw (each once per run): those whose error counts differ most
        between the runs.
    intervals : callable, optional
        ``intervals(result_a, result_b)`` returns ``{metric name: (low, high)}``, an interval
        of the difference B - A of that summary number; shown beside the differences.
    ci : int, optional
        Bootstrap resamples B of :func:`deteval.compare_coco` (VOC protocols:
        :func:`deteval.compare_voc`, LVIS :func:`deteval.compare_lvis`, CrowdPose
        :func:`deteval.compare_crowdpose`, Open Images :func:`deteval.compare_openimages`;
        paired: both runs on the same resamples): the interval
        of each difference and its p-value beside the summary numbers, and per class beside
        ΔAP (Holm-adjusted); its numbers are in ``results.json``
        (``panels.comparison_intervals``). Not with ``intervals``; about B / 25
        evaluations.
    ci_confidence : float, default 0.95
    ci_seed : int or None, default 0
    ci_threads : int, optional
        Threads of the resamples (default None: every core); the same numbers for every
        value.
    panels : sequence of Panel, optional
        The page's sections (default ``COMPARE_PANELS``; Open Images: its summary and
        per-class comparison).
    openimages : dict, optional
        With ``protocol="openimages"``: keyword arguments of
        :func:`~deteval.evaluate_openimages` for both runs (docs/report.md §1.10c).

    Returns
    -------
    pathlib.Path
        The path of ``index.html`` (or of the single file).

    Examples
    --------
    >>> import json, tempfile
    >>> from deteval.demo import make_demo
    >>> gt, dt = make_demo(n_images=6)
    >>> worse = [dict(d, score=d["score"] * 0.5) if i % 2 else d for i, d in enumerate(dt)]
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     index = compare_report(gt, dt, worse, folder, names=("base", "halved"))
    ...     row = json.loads((index.parent / "results.json").read_text())["comparison"]
    >>> row["summary"][0]["difference"] == row["summary"][0]["b"] - row["summary"][0]["a"]
    True
    """
    from .. import __version__
    from ._diagnostics import check_options
    from ._gallery import compare_gallery
    from ._views import image_cells, image_tags, pr_view
    from ._write import (
        Steps,
        analyse,
        check_output,
        dataset_numbers,
        default_title,
        finish,
        operating_numbers,
        warn_gallery,
        why_empty,
    )

    iou_threshold, score_threshold, gallery = check_settings(
        protocol, iou_threshold, score_threshold, gallery, "inline")
    ci, ci_confidence, ci_seed, _ = check_options(protocol, ci, ci_confidence, ci_seed, None)
    if protocol == "openimages":
        from ._openimages import check_openimages

        openimages = check_openimages(openimages, iou_threshold, score_threshold, "inline",
                                      images_dir)
        if intervals is not None:
            raise ValueError("intervals is not available with the Open Images protocol; "
                             "ci gives compare_openimages's paired intervals")
    elif openimages is not None:
        raise ValueError(f"openimages (the options of evaluate_openimages) needs "
                         f"protocol='openimages'; got protocol {protocol!r}")
    if ci is not None and intervals is not None:
        raise ValueError("give ci (the paired bootstrap) or intervals (your own), not both")
    names = [str(n) for n in names]
    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(f"names must be two different names; got {names!r}")
    out = Path(out_dir)
    images_path = check_output(out, single_file, images_dir)
    step = Steps(progress, quiet, 6 + (ci is not None)
                 + (gallery if images_path is not None else 0))
    if protocol == "openimages":
        from ._openimages import compare_write

        try:
            index = compare_write(gt, dt_a, dt_b, out, names=names, options=openimages, ci=ci,
                                  confidence=ci_confidence, seed=ci_seed,
                                  single_file=single_file, title=title, panels=panels,
                                  step=step, threads=ci_threads)
            step("written", last=True)
        finally:
            step.close()
        return index
    try:
        run_a = analyse(gt, dt_a, protocol, iou_threshold, score_threshold, step)
        # LVIS and CrowdPose: the ground truth with its federated keys / crowdIndex
        second_gt = {"lvis": getattr(run_a.result, "lvis_gt", None), "crowdpose": gt}
        run_b = analyse(second_gt.get(protocol, run_a.dataset), dt_b,
                        protocol, iou_threshold, score_threshold, step)
        dataset = run_a.dataset
        files: dict[str, bytes] = {}
        entries, skipped = compare_gallery(
            dataset, [(run_a.detections, run_a.outcomes), (run_b.detections, run_b.outcomes)],
            images_path, gallery, files, single=single_file, step=step)
        shown = [en["image_index"] for en in entries]
        tags = [image_tags(shown, image_cells(dataset, r.detections, r.cm), dataset,
                           r.detections, r.outcomes) for r in (run_a, run_b)]
        for entry in entries:
            i = entry["image_index"]
            entry["tags"] = {key: sorted(set(tags[0][i][key]) | set(tags[1][i][key]))
                             for key in ("cells", "classes", "errors")}
        warn_gallery(entries, skipped, images_path)
        differ = bool(np.any(run_a.outcomes.errors_per_image != run_b.outcomes.errors_per_image))
        numbers = comparison([run_a, run_b], names, protocol,
                             intervals(run_a.result, run_b.result) if intervals else None)
        panels_numbers: dict[str, Any] = {}
        if ci is not None:
            paired = paired_intervals([run_a, run_b], names, ci, ci_confidence, ci_seed,
                                      score_threshold, protocol, threads=ci_threads)
            add_paired(numbers, paired)
            numbers["interval_header"] = paired["header"]
            panels_numbers["comparison_intervals"] = paired["numbers"]
            step("paired bootstrap")
        payload = clean({
            "deteval_version": __version__,
            "settings": {"protocol": protocol, "iou_threshold": iou_threshold,
                         "score_threshold": score_threshold, "gallery": gallery,
                         "images_dir": None if images_path is None else str(images_path),
                         "single_file": bool(single_file)},
            "dataset": dataset_numbers(dataset, run_a.detections),
            "runs": [{"name": name, "detections": len(run.detections),
                      "score_threshold_source": run.source, **operating_numbers(run)}
                     for name, run in zip(names, (run_a, run_b))],
            "comparison": numbers,
            "gallery": {"images": entries, "skipped": skipped,
                        "legend": legend_entries() if entries else [],
                        "why_empty": why_empty(images_path, gallery, differ,
                                               "different errors in the two runs")},
            "notes": list(run_a.result.notes) + list(run_b.result.notes),
            "panels": panels_numbers,
        })
        views = {"pr": (pr_view(run_a.result, protocol, iou_threshold),
                        pr_view(run_b.result, protocol, iou_threshold))}
        title = default_title(dataset, title or f"deteval comparison: {names[0]} vs {names[1]}")

        def build(src: Any) -> str:
            from ._panels import page

            context = Context(payload, (run_a.result, run_b.result), dataset,
                              (run_a.detections, run_b.detections), (run_a.cm, run_b.cm),
                              (run_a.points, run_b.points), (run_a.outcomes, run_b.outcomes),
                              src, views)
            data = payload["dataset"]
            meta = (f"Protocol <b>{e(protocol)}</b> &middot; {data['images']} images, "
                    f"{data['categories']} categories, {data['objects']} objects &middot; "
                    f"{e(names[0])}: {payload['runs'][0]['detections']} detections, "
                    f"{e(names[1])}: {payload['runs'][1]['detections']} detections &middot; "
                    f"IoU {iou_threshold:g} &middot; deteval {e(__version__)}")
            return page(title, meta, panels or COMPARE_PANELS, context, single_file)

        index = finish(out, single_file, files, payload, build)
        step("written", last=True)
    finally:
        step.close()
    return index
