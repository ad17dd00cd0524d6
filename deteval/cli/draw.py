"""``deteval draw``: draw the matches on the images."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from ._common import _UsageError
from ._options import (
    _GT_OPTIONS,
    _add_input_options,
    _guess_format,
    _positive_int,
    _read_inputs,
    _unit_float,
)
from ._outputs import check_outputs


def add_parser(commands) -> None:
    """Add the ``draw`` command to the subparsers ``commands``."""
    from ..io.formats import DETECTION_FORMATS, GT_FORMATS

    draw = commands.add_parser(
        "draw", help="draw the matches on the images: TP, FP by reason, FN, ignored",
        description="Match detections to ground truth (COCO greedy rule at one IoU and one "
        "score threshold, as `deteval confusion`) and write each image with its detections "
        "and objects outlined in the colour of their outcome (deteval.viz.draw): true "
        "positives, false positives by reason (duplicate, wrong class, localization, "
        "background), missed objects and ignored ones. Images are found in --images DIR "
        "(required) by the file names of the ground truth and written to --out as PNG (never "
        "over the images). A missing or unreadable image is reported and skipped (none drawn "
        "at all is an error); one whose size differs from the annotation's is drawn with a "
        "warning. Ground truth and detections may "
        "be in any supported format (guessed from the paths unless --gt-format/--dt-format "
        "say).")
    draw.add_argument("--out", required=True, metavar="DIR",
                      help="folder to write the drawings into (created if needed)")
    draw.add_argument("--only-errors", action="store_true",
                      help="draw only images with a false positive or a missed object, most "
                      "errors first")
    draw.add_argument("--limit", type=_positive_int, metavar="N",
                      help="draw at most N images, most errors first")
    draw.add_argument("--iou-threshold", "--iou", dest="iou_threshold",
                      type=_unit_float("IoU threshold", open_low=True), default=0.5,
                      metavar="T", help="IoU threshold, in (0, 1] (default: 0.5)")
    draw.add_argument("--score-threshold", "--score", dest="score_threshold",
                      type=_unit_float("score threshold", high=None), default=0.0,
                      metavar="S",
                      help="leave out detections scoring below S (default: 0, keep all)")
    draw.add_argument("--quiet", action="store_true",
                      help="no progress bar (it is shown only on a terminal anyway)")
    _add_input_options(draw, GT_FORMATS, DETECTION_FORMATS)   # its --images: required here
    draw.set_defaults(parser=draw)


def run(args, out: TextIO, err: TextIO) -> int:
    from .._progress import ProgressBar
    from ..errors import DetevalError
    from ..outcomes import FP_OUTCOMES, match_outcomes
    from ..viz.draw import select_images, write_drawings

    if args.images is None:
        raise _UsageError("the following argument is required: --images DIR (the folder of "
                          "the images to draw on)")
    if not Path(args.images).is_dir():
        raise FileNotFoundError(f"--images {args.images}: no such folder")
    check_outputs(args, folders=[("--out", args.out)])
    # --images is where the pictures are; it goes to the ground-truth reader only when that
    # format reads image sizes from it (a COCO file has them).
    gt_format = args.gt_format or _guess_format(args.gt, "gt", "--gt-format")
    reader_args = argparse.Namespace(**vars(args))
    reader_args.gt_format = gt_format
    if gt_format not in next(f for dest, _, f in _GT_OPTIONS if dest == "images"):
        reader_args.images = None
    dataset, detections = _read_inputs(reader_args)
    outcomes = match_outcomes(dataset, detections, iou_threshold=args.iou_threshold,
                              score_threshold=args.score_threshold)
    chosen = select_images(outcomes, only_errors=args.only_errors, limit=args.limit)
    with ProgressBar(stream=err, quiet=args.quiet) as bar:
        written = write_drawings(dataset, detections, args.images, args.out,
                                 outcomes=outcomes, only_errors=args.only_errors,
                                 limit=args.limit, progress=bar)
    if len(chosen) and not written:
        raise DetevalError(f"none of the {len(chosen)} image(s) could be drawn: each is "
                           f"missing or unreadable under --images {args.images} (see the "
                           "warnings); is that the images folder?")
    counts = outcomes.counts()
    skipped = len(chosen) - len(written)
    reasons = ", ".join(f"{counts[r]} {r.replace('_', ' ')}" for r in FP_OUTCOMES)
    print(f"deteval draw: wrote {len(written)} of {len(chosen)} image(s) to {args.out}"
          f"{f' ({skipped} skipped)' if skipped else ''}; IoU >= {outcomes.iou_threshold:g}, "
          f"score >= {outcomes.score_threshold:g}: TP {counts['tp']}, FP {counts['fp']} "
          f"({reasons}), FN {counts['fn']}", file=out)
    return 0
