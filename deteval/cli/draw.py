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
)
from ._shared_options import add_iou_threshold, add_score_threshold
from .check import run_checks


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
    add_iou_threshold(draw)
    add_score_threshold(draw)
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
    # --images is where the pictures are; it goes to the ground-truth reader only when that
    # format reads image sizes from it (a COCO file has them).
    gt_format = args.gt_format or _guess_format(args.gt, "gt", "--gt-format")
    reader_args = argparse.Namespace(**vars(args))
    reader_args.gt_format = gt_format
    if gt_format not in next(f for dest, _, f in _GT_OPTIONS if dest == "images"):
        reader_args.images = None
    inputs = _read_inputs(reader_args)
    dataset, detections = inputs.dataset, inputs.detections
    run_checks(args, inputs, err)
    outcomes = match_outcomes(dataset, detections, iou_threshold=args.iou_threshold,
                              score_threshold=args.score_threshold)
    chosen = select_images(outcomes, only_errors=args.only_errors, limit=args.limit)
    problems: list[tuple[object, str]] = []
    with ProgressBar(stream=err, quiet=args.quiet) as bar:
        written = write_drawings(dataset, detections, args.images, args.out,
                                 outcomes=outcomes, only_errors=args.only_errors,
                                 limit=args.limit, progress=bar,
                                 on_problem=lambda path, message: problems.append((path, message)))
    _summarise_problems(problems, args.images, err)
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


_SHOWN = 5   # problems printed in full; the others are counted


def _summarise_problems(problems: list[tuple[object, str]], images: str, err: TextIO) -> None:
    """A few lines for the images that could not be drawn as they are, not one per image
    (an empty or wrong --images folder would otherwise print one line per image)."""
    skipped = [message for _, message in problems if message.endswith("skipped")]
    others = [message for _, message in problems if not message.endswith("skipped")]
    if len(skipped) > _SHOWN:
        names = ", ".join(Path(str(path)).name for path, message in problems
                          if message.endswith("skipped") and path is not None)
        shown = ", ".join(names.split(", ")[:_SHOWN])
        print(f"deteval: warning: {len(skipped)} image(s) skipped, missing or unreadable under "
              f"--images {images}: {shown} and {len(skipped) - _SHOWN} more", file=err)
    else:
        others = skipped + others
    for message in others[:_SHOWN]:
        print(f"deteval: warning: {message}", file=err)
    if len(others) > _SHOWN:
        print(f"deteval: warning: ... and {len(others) - _SHOWN} more such image(s)", file=err)

