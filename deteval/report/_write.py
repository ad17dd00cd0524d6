"""The entry points: :func:`write_report` (one run) and :func:`compare_report` (two runs)."""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._data import (
    UNDEFINED,
    check_settings,
    clean,
    evaluate,
    f1_optimal_score,
    legend_entries,
    per_class_rows,
    summary,
)
from ._files import Sources, write_folder, write_page
from ._panels import PANELS, Context, Panel, meta_line, page

_WARN_NAMES = 5                   # how many skipped images a warning names
_FIGURES = ("pr_curves", "f1_curve", "confusion", "ap_bars")


class Steps:
    """Progress of a report: ``step(what)`` after each piece of work."""

    def __init__(self, progress: Callable[[int, int, str], None] | None, quiet: bool,
                 total: int) -> None:
        self.bar = None
        if progress is None and not quiet:
            from .._progress import ProgressBar

            self.bar = progress = ProgressBar()
        self.progress, self.total, self.done = progress, total, 0
        if progress is not None:
            progress(0, total, "evaluating")

    def __call__(self, what: str, *, last: bool = False) -> None:
        self.done = self.total if last else min(self.done + 1, self.total - 1)
        if self.progress is not None:
            self.progress(self.done, self.total, what)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@dataclass(frozen=True)
class Run:
    """One evaluated run at the report's operating point."""

    result: Any
    dataset: Any
    detections: Any
    points: Any
    score_threshold: float
    source: str
    cm: Any
    outcomes: Any


def analyse(gt: Any, dt: Any, protocol: str, iou_threshold: float,
            score_threshold: float | None, step: Steps) -> Run:
    from ..confusion import detection_confusion_matrix, operating_points
    from ..outcomes import match_outcomes

    result = evaluate(gt, dt, protocol, iou_threshold)
    dataset, detections = result.dataset, result.detections
    step("evaluated")
    # The evaluation's similarity (mask IoU, OKS, ...): the figures show its matches.
    geometry = {"iou_type": getattr(result.params, "iou_type", "bbox")}
    if protocol == "crowdpose":   # OKS with CrowdPose's sigmas and areas (0.53 of the box)
        from ..protocols.crowdpose import scaled_dataset

        dataset = scaled_dataset(dataset, result.params)
        geometry = {"iou_type": "keypoints", "keypoint_sigmas": result.params.keypoint_sigmas}
    points = operating_points(dataset, detections, iou_threshold=iou_threshold, **geometry)
    if score_threshold is None:
        score, source = f1_optimal_score(points)
    else:
        score, source = score_threshold, "given"
    cm = detection_confusion_matrix(dataset, detections, iou_threshold=iou_threshold,
                                    score_threshold=score, **geometry)
    outcomes = match_outcomes(dataset, detections, iou_threshold=iou_threshold,
                              score_threshold=score, **geometry)
    step("confusion matrix and outcomes")
    return Run(result, dataset, detections, points, score, source, cm, outcomes)


def check_output(out: Path, single_file: bool, images_dir: Any) -> Path | None:
    if single_file and out.is_dir():
        raise IsADirectoryError(f"cannot write the single-file report to {out}: it is a "
                                "folder (give the path of the .html file)")
    if not single_file and out.exists() and not out.is_dir():
        raise NotADirectoryError(f"cannot write the report into {out}: it is a file")
    images_path = None if images_dir is None else Path(images_dir)
    if images_path is not None and not images_path.is_dir():
        raise NotADirectoryError(f"images_dir {images_path} is not a folder")
    return images_path


def warn_gallery(entries: list[dict[str, Any]], skipped: list[dict[str, str]],
                 images_path: Path | None) -> None:
    from ..errors import FormatWarning

    def more(items: list) -> str:
        return f" and {len(items) - _WARN_NAMES} more" if len(items) > _WARN_NAMES else ""

    if skipped:
        shown = ", ".join(s["image"] for s in skipped[:_WARN_NAMES])
        warnings.warn(FormatWarning(
            f"report gallery: {len(skipped)} image(s) skipped, missing or unreadable "
            f"under {images_path}: {shown}{more(skipped)}"), stacklevel=3)
    mismatched = [e for e in entries if e["size_mismatch"]]
    if mismatched:
        shown = ", ".join(f"{e['file_name']} {e['size_mismatch']}"
                          for e in mismatched[:_WARN_NAMES])
        warnings.warn(FormatWarning(
            f"report gallery: {len(mismatched)} image(s) differ in size from their "
            f"annotation (drawn in the annotation's coordinates): {shown}{more(mismatched)}"),
            stacklevel=3)


def why_empty(images_path: Path | None, gallery: int, any_errors: bool, what: str) -> str:
    if images_path is None:
        return "No images folder was given (images_dir / --images): no gallery."
    if gallery == 0:
        return "The gallery was turned off (gallery=0)."
    if not any_errors:
        return f"No image has {what} at these thresholds."
    return "None of the images could be read."


def _figure_files(run: Run, iou_threshold: float, figure_format: str,
                  files: dict[str, bytes], step: Steps) -> dict[str, str]:
    """The matplotlib figures of :mod:`deteval.viz.plots`, when asked for as files."""
    if figure_format == "inline":
        return {}
    from ..viz import plots

    plots.require_matplotlib()
    names = {name: f"{name}.{figure_format}" for name in _FIGURES}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        plots.plot_pr_curves(run.result, iou_threshold=iou_threshold,
                             path=folder / names["pr_curves"])
        plots.plot_f1_curve(run.points, path=folder / names["f1_curve"])
        plots.plot_confusion_matrix(run.cm, path=folder / names["confusion"])
        plots.plot_ap_bars(run.result, path=folder / names["ap_bars"])
        for name in names.values():
            files[name] = (folder / name).read_bytes()
    step("matplotlib figures")
    return names


def dataset_numbers(dataset: Any, detections: Any) -> dict[str, Any]:
    gt_objects = dataset.gt
    return {"source": dataset.source, "images": len(dataset.images),
            "categories": len(dataset.categories), "objects": len(gt_objects),
            "crowd": int(gt_objects.iscrowd.sum()), "ignored": int(gt_objects.ignore.sum()),
            "detections": len(detections)}


def operating_numbers(run: Run) -> dict[str, Any]:
    at = run.cm.overall(zero_division=UNDEFINED)
    best = run.points.best()
    return {"at_threshold": {"score_threshold": run.score_threshold, **at},
            "best": {"score_threshold": best["threshold"],
                     **{k: best[k] for k in ("tp", "fp", "fn", "precision", "recall")},
                     "f1": best["fbeta"]}}


def confusion_numbers(cm: Any) -> dict[str, Any]:
    """The confusion matrix for results.json: its raw counts in full (a (K + 1)^2 list of
    ints, put in as is: cleaning 1.4 million numbers one by one would cost seconds), the
    per-class and overall counts; not the normalised copy (the same numbers as floats)."""
    numbers = cm.to_dict(zero_division=UNDEFINED)
    numbers.pop("matrix")
    counts = numbers.pop("counts")
    numbers = clean(numbers)
    numbers["counts"] = counts
    return numbers


def default_title(dataset: Any, title: str | None) -> str:
    if title:
        return title
    named = dataset.source and not dataset.source.startswith("<")  # "<dict>": no name
    return "deteval report" + (f": {Path(dataset.source).name}" if named else "")


def finish(out: Path, single_file: bool, files: dict[str, bytes], payload: dict[str, Any],
           build: Callable[[Sources], str]) -> Path:
    """Build the page and write it (folder, or single page)."""
    src = Sources(files, single_file)
    page = build(src)
    if single_file:
        write_page(out, page)
        return out
    files = dict(files)
    # Compact: the C encoder (an indent would take the pure-Python one, 10x slower).
    files["results.json"] = json.dumps(payload, allow_nan=False,
                                       separators=(",", ":")).encode("utf-8")
    files["index.html"] = page.encode("utf-8")
    write_folder(out, files)
    return out / "index.html"


def write_report(gt: Any, dt: Any, out_dir: str | os.PathLike, *,
                 images_dir: str | os.PathLike | None = None, protocol: str = "coco",
                 iou_threshold: float = 0.5, score_threshold: float | None = None,
                 gallery: int = 24, figure_format: str = "inline", title: str | None = None,
                 single_file: bool = False, panels: Sequence[Panel] | None = None,
                 ci: int | None = None, ci_confidence: float = 0.95, ci_seed: Any = 0,
                 ci_threads: int | None = None,
                 slices: dict[str, Any] | None = None, quiet: bool = True,
                 progress: Callable[[int, int, str], None] | None = None,
                 openimages: dict[str, Any] | None = None) -> Path:
    """Evaluate and write a self-contained HTML report into the folder ``out_dir``.

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
        Ground truth: a :class:`~deteval.data.Dataset` or a COCO instances file (or dict);
        LVIS: an LVIS annotation file, its dict or an LVISGroundTruth; CrowdPose: its
        keypoint file or dict; Open Images: the boxes CSV or an OIDBoxes.
    dt : Detections, str, PathLike, list, dict or ndarray
        Detections, or anything :func:`~deteval.io.coco.read_coco_results` reads.
    out_dir : str or PathLike
        The report's folder, created if needed; with ``single_file``, the path of the one
        HTML file. Files the previous report wrote there (listed in ``.deteval-report.json``)
        are removed first; nothing else in the folder is touched.
    images_dir : str or PathLike, optional
        Where the images are (``file_name`` of the images table, relative to it, or its
        base name). Without it there is no gallery. Missing or unreadable images are
        skipped with a :class:`~deteval.errors.FormatWarning` naming them, and listed on
        the page and in ``results.json``; the next images by errors take their place.
        An image whose size is not the annotation's width and height is drawn in the
        annotation's coordinates, with a warning naming it and a note under it on the page.
    protocol : {"coco", "voc2007", "voc2012", "lvis", "crowdpose", "openimages"}
        COCO (pycocotools numbers), a VOC devkit preset, LVIS (lvis-api's numbers; ``gt``
        an LVIS file, dict or LVISGroundTruth) or CrowdPose (xtcocotools' numbers; ``gt`` a
        CrowdPose keypoint file or dict with each image's ``crowdIndex``, ``dt`` keypoint
        results; §1.10b) or Open Images (the challenge's mAP; ``gt`` the boxes CSV or
        OIDBoxes, ``dt`` the detections CSV, ``openimages`` the other inputs; §1.10c: no
        figures by score, no gallery). Every diagnostic panel follows the protocol's own
        rules (docs/report.md §1.10).
    iou_threshold : float, default 0.5
        The IoU threshold of the curves, the confusion matrix, the error counts and the
        gallery. COCO: one of its ten thresholds. VOC: the protocol is evaluated at it.
    score_threshold : float, optional
        Score threshold of the confusion matrix, the error counts and the gallery. Default:
        the F1-optimal score over all classes (:meth:`OperatingPoints.best`), 0 when no
        score gives an F1 above 0.
    gallery : int, default 24
        How many images with the most errors to draw (0: none); up to ``gallery // 2``
        examples of the top confusions are drawn beside them.
    figure_format : {"inline", "png", "svg"}
        The figures are drawn in the page (SVG, no matplotlib needed); ``png`` or ``svg``
        also writes the matplotlib figures of :mod:`deteval.viz.plots` as files (needs
        ``deteval[plot]``).
    title : str, optional
        The page title; default names the ground truth's source.
    single_file : bool, default False
        Write one HTML file (``out_dir`` is its path) with the pictures and
        ``results.json`` embedded, for attaching to an issue or a pull request.
    panels : sequence of Panel, optional
        The page's sections (default :data:`deteval.report.PANELS`).
    ci : int, optional
        Bootstrap resamples B (:func:`deteval.bootstrap_coco`, VOC
        :func:`deteval.bootstrap_voc`): the interval of every summary
        number and of each class's AP is shown beside it (and of each image slice's AP).
        Off by default: each resample costs some 5-15% of an evaluation, so B = 1000 costs
        dozens of evaluations (docs/report.md §1.9). VOC protocols:
        :func:`deteval.bootstrap_voc` (the mAP and each class's AP); LVIS
        :func:`deteval.bootstrap_lvis`, CrowdPose :func:`deteval.bootstrap_crowdpose`, Open
        Images :func:`deteval.bootstrap_openimages`.
    ci_confidence : float, default 0.95
        The intervals' level.
    ci_seed : int or None, default 0
        Seed of the resampling (the same seed, the same intervals).
    ci_threads : int, optional
        Threads of the resamples (default None: every core); the intervals are identical
        for every value.
    slices : dict, optional
        Keyword arguments of :func:`deteval.slices` (``by``, ``tags``, ``images``,
        ``crowding_iou``, ``border``, ``aspect_bins``): the slice table and the worst
        slices. ``images`` (the records of image keys named in ``by``) defaults to ``gt``
        when it is a file or a dict. VOC protocols: image keys only (``by``, ``tags``,
        ``images``), each slice's mAP that of :func:`~deteval.evaluate_voc` on its images
        (docs/report.md §1.10); LVIS and CrowdPose: image keys and ``size``; Open Images:
        ``by`` and ``tags`` (image slices of the tags).
    quiet : bool, default True
        When False (and no ``progress`` is given), show a progress bar on stderr if it is a
        terminal.
    progress : callable, optional
        Called as ``progress(done, total, step)`` after each step; overrides ``quiet``.
    openimages : dict, optional
        With ``protocol="openimages"``: keyword arguments of
        :func:`~deteval.evaluate_openimages` (``image_labels``, ``hierarchy``, ``classes``,
        ``expand_detections``); refused with another protocol.

    Returns
    -------
    pathlib.Path
        The path of ``index.html`` (or of the single file).

    Raises
    ------
    FormatError
        Unreadable input files.
    ValueError, TypeError
        Invalid settings (checked before anything is computed or written).
    ImportError
        ``figure_format`` png or svg without matplotlib (``pip install 'deteval[plot]'``).
    """
    from .. import __version__
    from ._diagnostics import check_options, compute
    from ._gallery import gallery as draw_gallery
    from ._views import cell_examples, confusion_view, f1_view, image_cells, image_tags, pr_view

    iou_threshold, score_threshold, gallery = check_settings(
        protocol, iou_threshold, score_threshold, gallery, figure_format)
    ci, ci_confidence, ci_seed, slices = check_options(protocol, ci, ci_confidence, ci_seed,
                                                       slices)
    if protocol == "openimages":
        from ._openimages import check_openimages

        openimages = check_openimages(openimages, iou_threshold, score_threshold,
                                      figure_format, images_dir)
    elif openimages is not None:
        raise ValueError(f"openimages (the options of evaluate_openimages) needs "
                         f"protocol='openimages'; got protocol {protocol!r}")
    if figure_format != "inline":
        from ..viz.plots import require_matplotlib

        require_matplotlib()  # fail early, before the evaluation
    out = Path(out_dir)
    images_path = check_output(out, single_file, images_dir)
    extra = 1 + (ci is not None) + (slices is not None)
    step = Steps(progress, quiet, 6 + extra
                 + (gallery * 3 // 2 if images_path is not None else 0))
    if protocol == "openimages":
        from ._openimages import write

        try:
            index = write(gt, dt, out, options=openimages, ci=ci, confidence=ci_confidence,
                          seed=ci_seed, threads=ci_threads, slices=slices, single_file=single_file,
                          gallery=gallery, title=title, panels=panels, step=step)
            step("written", last=True)
        finally:
            step.close()
        return index
    try:
        run = analyse(gt, dt, protocol, iou_threshold, score_threshold, step)
        diagnostics = compute(run, gt, protocol, iou_threshold, ci=ci, confidence=ci_confidence,
                              seed=ci_seed, threads=ci_threads, slices=slices, step=step)
        dataset, detections, cm, outcomes = run.dataset, run.detections, run.cm, run.outcomes
        views = {"confusion": confusion_view(cm),
                 "pr": pr_view(run.result, protocol, iou_threshold), "f1": f1_view(run.points)}
        step("figures")
        files: dict[str, bytes] = {}
        figures = _figure_files(run, iou_threshold, figure_format, files, step)
        cells = image_cells(dataset, detections, cm)
        examples = cell_examples(cells, views["confusion"]["top"]) \
            if images_path is not None and gallery else []
        entries, skipped = draw_gallery(dataset, detections, outcomes, images_path, gallery,
                                        examples, files, single=single_file, step=step)
        tags = image_tags([en["image_index"] for en in entries], cells, dataset, detections,
                          outcomes)
        for entry in entries:
            entry["tags"] = tags[entry["image_index"]]
        warn_gallery(entries, skipped, images_path)
        payload = clean({
            "deteval_version": __version__,
            "settings": {"protocol": protocol, "iou_threshold": iou_threshold,
                         "score_threshold": run.score_threshold,
                         "score_threshold_source": run.source, "gallery": gallery,
                         "images_dir": None if images_path is None else str(images_path),
                         "single_file": bool(single_file)},
            "dataset": dataset_numbers(dataset, detections),
            "summary": summary(run.result, protocol),
            "per_class": per_class_rows(run.result, protocol, cm, run.points),
            "operating_point": operating_numbers(run),
            "confusion_view": {"classes": views["confusion"]["classes"],
                               "top": views["confusion"]["top"]},
            "outcomes": {"counts": outcomes.counts(),
                         "errors_per_image": outcomes.errors_per_image},
            "figures": figures,
            "gallery": {"images": entries, "skipped": skipped,
                        "legend": legend_entries() if entries else [],
                        "why_empty": why_empty(images_path, gallery,
                                               bool(np.any(outcomes.errors_per_image > 0)),
                                               "an error")},
            "notes": list(run.result.notes),
            "panels": diagnostics,
        })
        payload["confusion"] = confusion_numbers(cm)
        title = default_title(dataset, title)

        def build(src: Sources) -> str:
            context = Context(payload, run.result, dataset, detections, cm, run.points,
                              outcomes, src, views)
            return page(title, meta_line(payload), PANELS if panels is None else panels,
                        context, single_file)

        index = finish(out, single_file, files, payload, build)
        step("written", last=True)
    finally:
        step.close()
    return index
