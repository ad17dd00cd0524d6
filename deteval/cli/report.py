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
    from ..io.formats import DETECTION_FORMATS, GT_FORMATS

    def gallery_size(text: str) -> int:
        if not text.strip().isdigit():
            raise argparse.ArgumentTypeError(f"expected a number of images >= 0; got {text!r}")
        return int(text)

    report = commands.add_parser(
        "report", help="write a self-contained HTML report: tables, plots, worst images",
        description="Evaluate and write a self-contained HTML report into the folder --out "
        "(index.html, results.json, the figures and gallery/; no network needed to view "
        "it): the summary, a per-class table sorted by clicking a header, precision-recall, "
        "F1 and per-class AP plots, the confusion matrix, and a gallery of the images with "
        "the most errors drawn with their matches. --images names the images folder of the "
        "gallery (and of readers that need image sizes). Needs matplotlib: pip install "
        "'deteval[plot]'.")
    report.add_argument("--out", required=True, metavar="DIR",
                        help="folder to write the report into (created if needed)")
    add_protocol(report, default="coco", help="coco: pycocotools COCOeval; voc2007/voc2012: "
                 "the devkits (default: coco)")
    add_iou_threshold(report, help="IoU threshold of the curves, confusion matrix, error "
                      "counts and gallery (coco: one of 0.50, 0.55, ..., 0.95; voc: the "
                      "protocol's threshold; default: 0.5)")
    add_score_threshold(report, default=None, help="score threshold of the confusion matrix, "
                        "error counts and gallery (default: the F1-optimal score)")
    report.add_argument("--gallery", type=gallery_size, default=24, metavar="N",
                        help="how many images to draw, most errors first (default: 24; "
                        "0: none)")
    report.add_argument("--figure-format", choices=["png", "svg"], default="png",
                        help="file format of the plots (default: png)")
    report.add_argument("--quiet", action="store_true",
                        help="no progress bar (it is shown only on a terminal anyway)")
    _add_input_options(report, GT_FORMATS, DETECTION_FORMATS)
    report.set_defaults(parser=report)


def run(args, out: TextIO, err: TextIO) -> int:
    import json

    from .._progress import ProgressBar
    from ..errors import DetevalError
    from ..report import write_report

    check_outputs(args, folders=[("--out", args.out)])
    # --images is the gallery's folder; it goes to the ground-truth reader only when that
    # format reads image sizes from it (a COCO file has them).
    gt_format = args.gt_format or _guess_format(args.gt, "gt", "--gt-format")
    reader_args = argparse.Namespace(**vars(args))
    reader_args.gt_format = gt_format
    if gt_format not in next(f for dest, _, f in _GT_OPTIONS if dest == "images"):
        reader_args.images = None
    inputs = _read_inputs(reader_args)
    dataset, detections = inputs.dataset, inputs.detections
    run_checks(args, inputs, err)
    try:
        with ProgressBar(stream=err, quiet=args.quiet) as bar:
            index = write_report(dataset, detections, args.out, images_dir=args.images,
                                 protocol=args.protocol, iou_threshold=args.iou_threshold,
                                 score_threshold=args.score_threshold, gallery=args.gallery,
                                 figure_format=args.figure_format, progress=bar)
    except ImportError as error:  # matplotlib missing: say which extra to install
        raise DetevalError(str(error)) from None
    payload = json.loads((index.parent / "results.json").read_text(encoding="utf-8"))
    first = payload["summary"]["rows"][0]
    gallery = payload["gallery"]
    print(f"deteval report: {index.resolve()}", file=out)
    skipped = f", {len(gallery['skipped'])} skipped" if gallery["skipped"] else ""
    value = "n/a" if first["value"] is None else f"{first['value']:.3f}"
    if args.images is None:
        drawn = "no gallery (no --images DIR)"
    else:
        drawn = f"{len(gallery['images'])} images in the gallery{skipped}"
    print(f"{first['name']} = {value} ({args.protocol}); {drawn}", file=out)
    return 0
