"""``deteval draw``: draw the matches on the images."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import TextIO

from ._common import _UsageError
from ._options import (
    _GT_OPTIONS,
    _add_input_options,
    _guess_format,
    _int_text,
    _number_list,
    _positive_int,
    _read_inputs,
)
from ._outputs import check_outputs
from ._shared_options import (
    add_dilation_ratio,
    add_iou_threshold,
    add_score_threshold,
    check_geometry,
)
from .check import checks_of, run_checks

_IOU_TYPES = ("bbox", "segm", "boundary", "keypoints", "polygon", "rotated")
# The column each --iou-type draws.
_COLUMN = {"segm": "masks", "boundary": "masks", "keypoints": "keypoints",
           "polygon": "polygons", "rotated": "rboxes"}
_DESCRIPTION = (
    "Match detections to ground truth (COCO greedy rule at one IoU and one score threshold, "
    "as `deteval confusion`) and write each image with its detections and objects drawn in "
    "the colour of their outcome (deteval.viz.draw), most errors first: file names start "
    "with the rank (001_, 002_, ...). Images are found in --images DIR (required) by the "
    "file names of the ground truth and written to --out (never over the images): JPEG for "
    "JPEG images, PNG otherwise (--format). Beside them: key.png (the key below) and "
    "contact_sheet.jpg (thumbnails of the worst images). Running again into the same "
    "folder first deletes the files the previous run wrote there (listed in "
    ".deteval-draw.json), and no others. A missing or unreadable image is reported and "
    "skipped (none drawn at all is an error); one whose size differs from the annotation's "
    "is drawn with a warning. Ground truth and detections may be in any supported format "
    "(guessed from the paths unless --gt-format/--dt-format say); --iou-type other than "
    "bbox reads COCO files with their masks, keypoints, polygons or rotated boxes and "
    "matches by that similarity (mask IoU, boundary IoU, OKS, polygon IoU), as `deteval "
    "coco --iou-type` does, so the drawings show the matches of that AP.")


# The key of the drawings (deteval.viz.draw.STYLES; a test checks they agree), written out
# so that building the parser imports neither Pillow nor the drawing code.
_KEY = (("tp", "bluish green", "solid", "", "true positive"),
        ("duplicate", "yellow", "solid", "dup", "FP: duplicate"),
        ("wrong_class", "reddish purple", "solid", "cls", "FP: wrong class"),
        ("localization", "orange", "solid", "loc", "FP: localization"),
        ("background", "vermillion", "solid", "bg", "FP: background"),
        ("fn", "sky blue", "dashed", "FN", "false negative (missed)"),
        ("ignored", "blue", "dotted", "ign", "ignored"),
        ("below_threshold", "black", "dotted", "low", "below the score threshold"))


#: Images drawn without --limit or --all (most errors first): enough to browse, and the run's
#: cost stays bounded on a large data set (about 10 ms an image).
DEFAULT_LIMIT = 200

def _epilog() -> str:
    lines = ["key of the drawings (also written as key.png):",
             f"  {'tag':<6} {'colour':<15} {'line':<7} meaning"]
    for _, colour, dash, tag, label in _KEY:
        lines.append(f"  {tag or '-':<6} {colour:<15} {dash:<7} {label}")
    lines += ["  crowd  blue            dotted  a crowd region",
              "labels: tag, class, score, IoU with the object (wrong class: the object's class",
              "in brackets). Masks are filled (30%) and outlined. Keypoints: the skeleton in",
              "the outcome's colour and line; a detected joint whose OKS term",
              "exp(-d^2 / (2 s^2 k^2)) with its object's joint is >= 0.5 is dotted bluish",
              "green, otherwise vermillion."]
    return "\n".join(lines)


def add_parser(commands) -> None:
    """Add the ``draw`` command to the subparsers ``commands``."""
    from .._format_names import DETECTION_FORMATS, GT_FORMATS

    draw = commands.add_parser(
        "draw", help="draw the matches on the images: TP, FP by reason, FN, ignored",
        description=textwrap.fill(_DESCRIPTION, 88, break_on_hyphens=False), epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    draw.add_argument("--out", required=True, metavar="DIR",
                      help="folder to write the drawings into (created if needed)")
    draw.add_argument("--only-errors", action="store_true",
                      help="draw only images with a false positive or a missed object")
    limit = draw.add_mutually_exclusive_group()
    limit.add_argument("--limit", type=_positive_int, metavar="N",
                       help=f"draw at most N images, most errors first (default "
                       f"{DEFAULT_LIMIT}: the work is bounded by N, not by the data set)")
    limit.add_argument("--all", action="store_true",
                       help="draw every image (most errors first)")
    add_geometry_options(draw, what="what to match by and draw besides the boxes: segm "
                         "(mask IoU; masks drawn), boundary (boundary IoU; masks drawn), "
                         "keypoints (OKS), polygon, rotated ('rbox'); read from COCO files "
                         "(polygon and rotated also from dota) (default: bbox)")
    add_iou_threshold(draw)
    add_score_threshold(draw, default=None, help="detections scoring lower are not matched "
                        "nor drawn (default: the F1-optimal score, as `deteval report`)")
    draw.add_argument("--format", choices=("auto", "png", "jpeg"), default="auto",
                      help="file format of the drawings: auto = JPEG (quality 90) for JPEG "
                      "images, PNG for others (default: auto)")
    draw.add_argument("--contact-sheet", type=_int_text, default=24, metavar="N",
                      help="thumbnails of the N worst images in contact_sheet.jpg (0: none; "
                      "default 24)")
    draw.add_argument("--threads", type=_positive_int, default=None, metavar="N",
                      help="threads that read, draw and write the images (default: every "
                      "core of the machine); the files are identical for every N")
    draw.add_argument("--quiet", action="store_true",
                      help="no progress bar (it is shown only on a terminal anyway)")
    _add_input_options(draw, GT_FORMATS, DETECTION_FORMATS)   # its --images: required here
    draw.set_defaults(parser=draw)


def add_geometry_options(parser, *, what: str) -> None:
    """``--iou-type``, ``--kpt-sigmas`` and ``--dilation-ratio`` (draw and confusion)."""
    parser.add_argument("--iou-type", default="bbox", choices=_IOU_TYPES, help=what)
    parser.add_argument("--kpt-sigmas", type=_number_list(float), metavar="'0.26 0.25 ...'",
                        help="keypoints: OKS sigmas, one per keypoint, for the matching and "
                        "the joints' tolerance (default: COCO person)")
    add_dilation_ratio(parser)


#: How the summaries name the similarity of each --iou-type.
SIMILARITY = {"bbox": "IoU", "segm": "mask IoU", "boundary": "boundary IoU",
              "keypoints": "OKS", "polygon": "polygon IoU", "rotated": "rotated-box IoU"}


def geometry(args) -> dict:
    """The similarity keywords of match_outcomes and the confusion matrix, from the options."""
    check_geometry(args.iou_type, kpt_sigmas=args.kpt_sigmas, dilation_ratio=args.dilation_ratio)
    return {"iou_type": args.iou_type,
            "keypoint_sigmas": None if args.kpt_sigmas is None else tuple(args.kpt_sigmas),
            "dilation_ratio": args.dilation_ratio}


def _coco_skeletons(path: str) -> dict[int, list[tuple[int, int]]] | None:
    """``{category_id: 0-based pairs}`` of a COCO file's categories; None if it has none."""
    import orjson

    try:
        categories = orjson.loads(Path(path).read_bytes()).get("categories") or []
        skeletons = {int(c["id"]): [(int(a) - 1, int(b) - 1) for a, b in c["skeleton"]]
                     for c in categories if c.get("skeleton")}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return skeletons or None


def read_shapes(args, gt_format: str):
    """Ground truth and detections with the shapes of ``--iou-type``, and the input layer's
    record of how they were read (None for the COCO shapes read directly)."""
    from ..errors import FormatError
    from ..io.coco import read_coco_gt, read_coco_results

    # --images is where the pictures are; it goes to the ground-truth reader only when that
    # format reads image sizes from it (a COCO file has them).
    reader_args = argparse.Namespace(**vars(args))
    reader_args.gt_format = gt_format
    if gt_format not in next(f for dest, _, f in _GT_OPTIONS if dest == "images"):
        reader_args.images = None
    iou_type = "segm" if args.iou_type == "boundary" else args.iou_type
    dt_format = args.dt_format or _guess_format(args.dt, "detections", "--dt-format")
    try:
        if iou_type != "bbox" and gt_format == "coco" and dt_format == "coco":
            dataset = read_coco_gt(args.gt, iou_type=iou_type)
            detections = read_coco_results(args.dt, dataset, iou_type=iou_type)
            inputs = None
        else:
            inputs = _read_inputs(reader_args)
            dataset, detections = inputs.dataset, inputs.detections
    except FormatError as error:
        if iou_type == "bbox" and "missing 'bbox'" in error.message:
            raise FormatError(error.message + "; results without boxes: pass --iou-type segm "
                              "(masks) or keypoints", source=error.source,
                              record=error.record) from None
        raise
    column = _COLUMN.get(args.iou_type)
    if column is not None:
        for what, path, fmt, table in (("ground truth", args.gt, gt_format, dataset.gt),
                                       ("detections", args.dt, dt_format, detections)):
            if len(table) and getattr(table, column) is None:
                raise _UsageError(f"--iou-type {args.iou_type} needs {column}, but the {what} "
                                  f"{path} (read as {fmt}) has none")
    return dataset, detections, inputs


def _draw_options(args, gt_format: str) -> dict:
    options = {}
    if args.iou_type == "keypoints":
        if args.kpt_sigmas is not None:
            options["keypoint_sigmas"] = tuple(args.kpt_sigmas)
        if gt_format == "coco":
            skeletons = _coco_skeletons(args.gt)
            if skeletons is not None:
                options["skeleton"] = skeletons
    return options


def run(args, out: TextIO, err: TextIO) -> int:
    from .._threads import threads_limited

    if args.images is None:
        raise _UsageError("the following argument is required: --images DIR (the folder of "
                          "the images to draw on)")
    if args.contact_sheet < 0:
        raise _UsageError(f"--contact-sheet: expected 0 or more; got {args.contact_sheet}")
    if not Path(args.images).is_dir():
        raise FileNotFoundError(f"--images {args.images}: no such folder")
    check_outputs(args, folders=[("--out", args.out)])
    # --images is where the pictures are; it goes to the ground-truth reader only when that
    # format reads image sizes from it (a COCO file has them).
    gt_format = args.gt_format or _guess_format(args.gt, "gt", "--gt-format")
    match_options = geometry(args)
    draw_options = _draw_options(args, gt_format)
    with threads_limited(args.threads):     # (None: every core)
        # --threads caps the reading of the files and the matching too, not only the
        # drawing (docs/threads.md §1).
        return _run(args, out, err, gt_format, match_options, draw_options)


def _run(args, out: TextIO, err: TextIO, gt_format: str, match_options: dict,
         draw_options: dict) -> int:
    from .._progress import ProgressBar
    from ..confusion import operating_points
    from ..errors import DetevalError
    from ..outcomes import FP_OUTCOMES, match_outcomes
    from ..report import f1_optimal_score
    from ..viz.draw import select_images, write_drawings

    dataset, detections, inputs = read_shapes(args, gt_format)
    if inputs is not None:
        run_checks(args, inputs, err)
    elif not getattr(args, "no_check", False):
        checks_of(dataset, detections, err)
    score, source = args.score_threshold, "given"
    if score is None:
        points = operating_points(dataset, detections, iou_threshold=args.iou_threshold,
                                  **match_options)
        score, source = f1_optimal_score(points)
    outcomes = match_outcomes(dataset, detections, iou_threshold=args.iou_threshold,
                              score_threshold=score, **match_options)
    limit = None if args.all else (DEFAULT_LIMIT if args.limit is None else args.limit)
    chosen = select_images(outcomes, only_errors=args.only_errors, limit=limit,
                           by_errors=True)
    if args.limit is None and not args.all:
        candidates = len(select_images(outcomes, only_errors=args.only_errors, by_errors=True))
        if candidates > len(chosen):
            print(f"deteval: note: drawing the {len(chosen)} images with the most errors of "
                  f"{candidates}; --limit N or --all for more", file=err)
    problems: list[tuple[object, str]] = []
    with ProgressBar(stream=err, quiet=args.quiet) as bar:
        written = write_drawings(dataset, detections, args.images, args.out,
                                 outcomes=outcomes, only_errors=args.only_errors,
                                 limit=limit, by_errors=True, format=args.format,
                                 contact_sheet=args.contact_sheet, draw_options=draw_options,
                                 progress=bar, threads=args.threads,
                                 on_problem=lambda path, message: problems.append((path, message)))
    _summarise_problems(problems, args.images, err)
    if len(chosen) and not written:
        raise DetevalError(f"none of the {len(chosen)} image(s) could be drawn: each is "
                           f"missing or unreadable under --images {args.images} (see the "
                           "warnings); is that the images folder?")
    counts = outcomes.counts()
    skipped = len(chosen) - len(written)
    reasons = ", ".join(f"{counts[r]} {r.replace('_', ' ')}" for r in FP_OUTCOMES)
    chosen_by = "" if source == "given" else f" ({source})"
    print(f"deteval draw: wrote {len(written)} of {len(chosen)} image(s) to {args.out}"
          f"{f' ({skipped} skipped)' if skipped else ''}; {SIMILARITY[outcomes.iou_type]} >= "
          f"{outcomes.iou_threshold:g}, "
          f"score >= {outcomes.score_threshold:g}{chosen_by}: TP {counts['tp']}, FP "
          f"{counts['fp']} ({reasons}), FN {counts['fn']}", file=out)
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

