"""``deteval report``: write a self-contained HTML report."""

from __future__ import annotations

import argparse
from typing import TextIO

from ._options import _GT_OPTIONS, _add_input_options, _guess_format, _read_inputs
from ._outputs import check_outputs
from ._shared_options import add_iou_threshold, add_protocol, add_score_threshold
from .check import run_checks


def add_parser(commands) -> None:
    """Add the ``report`` command to the subparsers ``commands``."""
    from .._format_names import DETECTION_FORMATS, GT_FORMATS

    def gallery_size(text: str) -> int:
        if not text.isascii() or not text.strip().isdigit():
            raise argparse.ArgumentTypeError(f"expected a number of images >= 0; got {text!r}")
        return int(text)

    report = commands.add_parser(
        "report", help="write a self-contained HTML report: tables, plots, worst images; "
        "or compare two runs (GT DT_A DT_B)",
        description="Evaluate and write a self-contained HTML report into the folder --out "
        "(index.html, results.json and gallery/; no network needed to view it): the "
        "summary, a per-class table (sort, filter), precision-recall curves (the mean and "
        "the best and worst classes), the F1 curve, AP per class, the confusion heatmap and "
        "the top confusions, error attribution (TIDE's dAP per error type, LRP), calibration "
        "(the reliability diagram, D-ECE), and a gallery of the images with the most errors "
        "drawn with their matches; a click on a confusion, an error count or a class shows "
        "its images. "
        "With a second detections file (GT DT_A DT_B) the report compares the two runs: "
        "both side by side, their differences per number and per class, and the images where "
        "they differ most. --images names the images folder of the gallery (and of readers "
        "that need image sizes). --single-file writes one HTML file with everything "
        "embedded. Running again into the same folder first deletes the files the previous "
        "report wrote there (listed in .deteval-report.json), and no others.")
    report.add_argument("--out", required=True, metavar="DIR",
                        help="folder to write the report into (created if needed); with "
                        "--single-file, the HTML file")
    report.add_argument("--single-file", action="store_true",
                        help="write one self-contained HTML file (pictures and numbers "
                        "embedded) for attaching to an issue or a pull request")
    add_protocol(report, default="coco", extra=("lvis", "crowdpose", "openimages"),
                 help="coco: pycocotools COCOeval; voc2007/voc2012: the devkits; lvis: "
                 "lvis-api (GT an LVIS annotation file, DT a COCO results file, as deteval "
                 "lvis reads them); crowdpose: xtcocotools' CrowdPose rules (GT a CrowdPose "
                 "keypoint file with crowdIndex, DT COCO keypoint results, as deteval "
                 "crowdpose reads them); openimages: the challenge's AP@0.5 (GT the boxes "
                 "CSV, DT the detections CSV, with --labels, --hierarchy, --classes, as "
                 "deteval openimages reads them; no figures by score, no gallery) "
                 "(default: coco)")
    add_iou_threshold(report, help="IoU threshold of the curves, confusion matrix, error "
                      "counts and gallery (coco: one of 0.50, 0.55, ..., 0.95; voc: the "
                      "protocol's threshold; default: 0.5)")
    add_score_threshold(report, default=None, help="score threshold of the confusion matrix, "
                        "error counts and gallery (default: the F1-optimal score)")
    report.add_argument("--gallery", type=gallery_size, default=24, metavar="N",
                        help="how many images to draw, most errors first (default: 24; "
                        "0: none)")
    report.add_argument("--figure-format", choices=["inline", "png", "svg"], default="inline",
                        help="inline: figures drawn in the page; png/svg: also the "
                        "matplotlib figures as files (needs deteval[plot]) (default: inline)")
    report.add_argument("--quiet", action="store_true",
                        help="no progress bar (it is shown only on a terminal anyway)")
    _add_input_options(report, GT_FORMATS, DETECTION_FORMATS)
    report.add_argument("dt_b", metavar="DT_B", nargs="?",
                        help="a second run's detections (same format as DT): compare the two")
    report.add_argument("--run-names", nargs=2, metavar=("A", "B"),
                        help="names of the two runs in a comparison (default: their file "
                        "names)")
    _add_diagnostic_options(report)
    from .openimages import add_openimages_inputs

    add_openimages_inputs(report.add_argument_group(
        "Open Images inputs (--protocol openimages; --classes FILE is its label map)"),
        classes=False)
    report.set_defaults(parser=report)


def _add_diagnostic_options(report) -> None:
    """``--ci``, ``--confidence``, ``--seed`` and the slice options."""
    from ._shared_options import add_threads
    from ._slices import add_slice_options
    from .compare import _resamples, add_resampling_settings

    group = report.add_argument_group(
        "intervals and slices", "costly, so off by default; of the --protocol's own "
        "evaluation (voc: bootstrap_voc's intervals, image slices only)")
    group.add_argument("--ci", type=_resamples, metavar="B",
                       help="show the image-bootstrap percentile interval (B resamples, e.g. "
                       "1000; each costs some 5-15%% of an evaluation) beside every summary "
                       "number and each class's AP (and image slice's); with DT_B, the "
                       "paired intervals and p-values of the differences")
    add_resampling_settings(group)
    add_threads(group, what="the resamples of --ci", noted=True)
    add_slice_options(group)


def _diagnostic_settings(args) -> dict:
    """The report's ``ci`` and ``slices`` arguments from the options, refused where they do
    not apply."""
    from ._common import _UsageError
    from ._shared_options import check_needs_ci

    check_needs_ci(args)
    keys, tags = args.slices, args.slice_file
    read_as = {"lvis": "an LVIS annotation file and a COCO results file (as deteval lvis "
                       "does)",
               "crowdpose": "a CrowdPose keypoint file (images with crowdIndex) and COCO "
                            "keypoint results (as deteval crowdpose does)"}
    if args.protocol == "openimages":
        _check_openimages(args)
    elif any((args.labels, args.hierarchy, args.expand_detections)):
        raise _UsageError("--labels, --hierarchy and --expand-detections need --protocol "
                          "openimages")
    if args.protocol in read_as and {args.gt_format, args.dt_format} - {None, "coco"}:
        raise _UsageError(f"--protocol {args.protocol} reads {read_as[args.protocol]}; "
                          "--gt-format/--dt-format name other formats")
    if args.protocol in read_as and args.figure_format != "inline":
        raise _UsageError(f"--figure-format png/svg is not available with --protocol "
                          f"{args.protocol}: the matplotlib figures read COCO and VOC results")
    if args.dt_b is not None and (keys or tags):
        raise _UsageError("--slice and --slice-file are of a one-run report (GT DT)")
    if args.protocol != "coco" and keys:
        from ..report._diagnostics import check_slice_keys

        try:
            check_slice_keys(keys, args.protocol)
        except ValueError as error:
            raise _UsageError(f"--slice: {error}") from None
    slices = None
    if keys or tags:
        from ..diagnostics.slices import tag_keys

        if keys and tags:   # every key of the file is sliced too, after the named ones
            keys = keys + [key for key in tag_keys(tags) if key not in keys]
        slices = {"by": keys, "tags": tags}
        if args.protocol != "openimages":   # its image ids are the tags file's alone
            slices["images"] = args.gt if keys else None
    return {"ci": args.ci, "ci_confidence": args.confidence, "ci_seed": args.seed,
            "ci_threads": args.threads,
            **({} if slices is None else {"slices": slices})}


def _check_openimages(args) -> None:
    """The options an Open Images report refuses, by flag."""
    from ._common import _UsageError

    refused = [flag for flag, given in (("--gt-format", args.gt_format),
                                        ("--dt-format", args.dt_format),
                                        ("--images", args.images),
                                        ("--score-threshold", args.score_threshold))
               if given is not None]
    if args.figure_format != "inline":
        refused.append("--figure-format")
    if refused:
        raise _UsageError(f"--protocol openimages reads a boxes CSV and a detections CSV (as "
                          f"deteval openimages does) and has no figures by score or gallery; "
                          f"{', '.join(refused)} cannot be used with it")


def _openimages_report(args, diagnostics: dict, out: TextIO, err: TextIO) -> int:
    """``--protocol openimages``: the challenge files, read as ``deteval openimages`` reads
    them."""
    import json

    from .._progress import ProgressBar
    from ..report import compare_report, write_report
    from .openimages import openimages_classes

    options = {"image_labels": args.labels, "hierarchy": args.hierarchy,
               "classes": openimages_classes(args),
               "expand_detections": args.expand_detections}
    settings = dict(protocol="openimages", openimages=options, single_file=args.single_file,
                    iou_threshold=args.iou_threshold)
    with ProgressBar(stream=err, quiet=args.quiet) as bar:
        if args.dt_b is None:
            index = write_report(args.gt, args.dt, args.out, progress=bar, **settings,
                                 **diagnostics)
        else:
            names = args.run_names or _run_names(args.dt, args.dt_b)
            index = compare_report(args.gt, args.dt, args.dt_b, args.out, names=names,
                                   progress=bar, **settings, **diagnostics)
    print(f"deteval report: {index.resolve()}", file=out)
    if args.single_file:
        return 0
    payload = json.loads((index.parent / "results.json").read_text(encoding="utf-8"))
    if args.dt_b is None:
        first = payload["summary"]["rows"][0]
        value = "n/a" if first["value"] is None else f"{first['value']:.3f}"
        print(f"{first['name']} = {value} (openimages); no gallery (Open Images)", file=out)
    else:
        first = payload["comparison"]["summary"][0]
        a, b = (("n/a" if v is None else f"{v:.3f}") for v in (first["a"], first["b"]))
        print(f"{first['name']}: {payload['runs'][0]['name']} {a}, "
              f"{payload['runs'][1]['name']} {b} (openimages); no gallery (Open Images)",
              file=out)
    return 0


def run(args, out: TextIO, err: TextIO) -> int:
    import json

    from .._progress import ProgressBar
    from ..errors import DetevalError
    from ..report import compare_report, write_report

    single = args.single_file
    outputs = {"files": [("--out", args.out)]} if single else {"folders": [("--out", args.out)]}
    check_outputs(args, **outputs)
    if args.dt_b is not None:
        check_outputs(argparse.Namespace(**{**vars(args), "dt": args.dt_b}), **outputs)
        if args.run_names and args.run_names[0] == args.run_names[1]:   # before any work
            from ._common import _UsageError

            raise _UsageError(f"--run-names needs two different names; got "
                              f"{' '.join(args.run_names)!r}")
    elif args.run_names:
        raise DetevalError("--run-names names the two runs of a comparison (GT DT_A DT_B)")
    diagnostics = _diagnostic_settings(args)   # before any file is read
    if args.protocol == "openimages":
        return _openimages_report(args, diagnostics, out, err)
    # --images is the gallery's folder; it goes to the ground-truth reader only when that
    # format reads image sizes from it (a COCO file has them).
    gt_format = args.gt_format or _guess_format(args.gt, "gt", "--gt-format")
    reader_args = argparse.Namespace(**vars(args))
    reader_args.gt_format = gt_format
    if gt_format not in next(f for dest, _, f in _GT_OPTIONS if dest == "images"):
        reader_args.images = None
    if args.protocol in ("lvis", "crowdpose"):   # read as deteval lvis / crowdpose read
        # them: the federated keys, the crowdIndex too
        inputs = argparse.Namespace(dataset=args.gt, detections=args.dt)
    else:
        inputs = _read_inputs(reader_args)
        run_checks(args, inputs, err)
    settings = dict(images_dir=args.images, protocol=args.protocol,
                    iou_threshold=args.iou_threshold, score_threshold=args.score_threshold,
                    gallery=args.gallery, single_file=single)
    try:
        with ProgressBar(stream=err, quiet=args.quiet) as bar:
            if args.dt_b is None:
                index = write_report(inputs.dataset, inputs.detections, args.out,
                                     figure_format=args.figure_format, progress=bar,
                                     **settings, **diagnostics)
            else:
                if args.protocol in ("lvis", "crowdpose"):
                    second = argparse.Namespace(detections=args.dt_b)
                else:
                    second = _read_inputs(argparse.Namespace(**{**vars(reader_args),
                                                                "dt": args.dt_b}))
                    run_checks(args, second, err)
                names = args.run_names or _run_names(args.dt, args.dt_b)
                index = compare_report(inputs.dataset, inputs.detections, second.detections,
                                       args.out, names=names, progress=bar, **settings,
                                       **diagnostics)
    except ImportError as error:  # matplotlib missing: say which extra to install
        raise DetevalError(str(error)) from None
    print(f"deteval report: {index.resolve()}", file=out)
    if single:
        return 0
    payload = json.loads((index.parent / "results.json").read_text(encoding="utf-8"))
    gallery = payload["gallery"]
    skipped = f", {len(gallery['skipped'])} skipped" if gallery["skipped"] else ""
    drawn = ("no gallery (no --images DIR)" if args.images is None
             else f"{len(gallery['images'])} images in the gallery{skipped}")
    if args.dt_b is None:
        first = payload["summary"]["rows"][0]
        value = "n/a" if first["value"] is None else f"{first['value']:.3f}"
        print(f"{first['name']} = {value} ({args.protocol}); {drawn}", file=out)
    else:
        first = payload["comparison"]["summary"][0]
        a, b = (("n/a" if v is None else f"{v:.3f}") for v in (first["a"], first["b"]))
        print(f"{first['name']}: {payload['runs'][0]['name']} {a}, {payload['runs'][1]['name']}"
              f" {b} ({args.protocol}); {drawn}", file=out)
    return 0


def _run_names(a: str, b: str) -> tuple[str, str]:
    """The two runs' names: their file names, or their paths when those are the same, or
    the path numbered as ``compare`` numbers it (``dt.json#0``, ``dt.json#1``) when one file
    is compared with itself."""
    from pathlib import Path

    names = (Path(a).name, Path(b).name)
    if names[0] != names[1]:
        return names
    return (a, b) if a != b else (f"{a}#0", f"{b}#1")
