"""Options shared by the commands: argument types, the COCO options, the reader options
of the commands that read any format, and reading GT and DT with them."""

from __future__ import annotations

import argparse
import math
import os
import re
from collections import namedtuple
from collections.abc import Sequence

from ._common import _UsageError


def _number_list(kind, *, positive: bool = False):
    """A parser of ``"1 10 100"`` (or ``"1,10,100"``): ASCII decimal numbers only (``int``
    and ``float`` alone read ``"١٢"`` and ``"1_0"``), all > 0 with ``positive``."""
    import re

    pattern = r"[-+]?[0-9]+" if kind is int else None

    def parse(text: str):
        from ..io._common import is_number_text

        values = text.replace(",", " ").split()
        try:
            if not all(re.fullmatch(pattern, v) if pattern else is_number_text(v)
                       for v in values):
                raise ValueError(text)
            numbers = [kind(v) for v in values]
            if positive and not all(v > 0 for v in numbers):
                raise ValueError(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a list of {'positive ' if positive else ''}{kind.__name__} values, "
                f"e.g. {'1 10 100' if kind is int else '0.5 0.75'!r}; got {text!r}"
            ) from None
        return numbers
    return parse


# Flags of the number lists: the Python setting each fills (for errors in CLI words).
LIST_FLAGS = {"--max-dets": "max_detections", "--iou-thresholds": "iou_thresholds",
              "--image-ids": "image_ids", "--category-ids": "category_ids",
              "--kpt-sigmas": "keypoint_sigmas", "--iou": "iou_thresholds"}
#: Python setting -> flag, for :meth:`deteval.errors.OptionError.cli_message`.
OPTION_FLAGS = {option: flag for flag, option in LIST_FLAGS.items() if flag != "--iou"}

#: A number or a comma-separated list of them (compiled by ``re`` on first use: only a
#: command line with a list flag needs it).
_NUMBER = (r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?(,[-+]?(\d+\.?\d*|\.\d+)"
           r"([eE][-+]?\d+)?)*,?")


def join_number_lists(argv: Sequence[str]) -> list[str]:
    """``--max-dets 1 10 100`` as ``--max-dets '1 10 100'``: the numbers after a list flag,
    up to the next token that is not a number (or is an existing path), become one value."""
    out: list[str] = []
    i = 0
    argv = list(argv)
    while i < len(argv):
        token = argv[i]
        out.append(token)
        i += 1
        if token not in LIST_FLAGS:
            continue
        values = []
        while (i < len(argv) and re.fullmatch(_NUMBER, argv[i])
               and not (values and os.path.exists(argv[i]))):
            values.append(argv[i])
            i += 1
        if values:
            out.append(" ".join(values))
    return out


def _iou_list(text: str) -> list[float]:
    """``--iou-thresholds`` of every command: numbers in (0, 1]. A threshold given twice is
    the protocol's to judge (:func:`~._shared_options.check_iou_repeats`): COCO keeps it, as
    pycocotools does; the VOC protocols refuse it."""
    values = _number_list(float)(text)
    if not values or not all(0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected IoU thresholds in (0, 1], e.g. '0.5 0.75'; "
                                         f"got {text!r}")
    return values


def _float_text(text: str) -> float:
    """``float(text)`` for an ASCII decimal number only: Python's ``float`` also reads other
    scripts' digits (``"٠.٥"``), underscores and surrounding spaces
    (docs/input-acceptance.md)."""
    from ..io._common import to_float

    try:
        return to_float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a decimal number; got {text!r}") from None


def _int_text(text: str) -> int:
    """``int(text)`` for ASCII decimal digits only (with an optional sign)."""
    if not re.fullmatch(r"[-+]?[0-9]+", text):
        raise argparse.ArgumentTypeError(f"expected an integer; got {text!r}")
    return int(text)


def _seed(text: str) -> int:
    """A seed of the resampling: an integer >= 0 (numpy's generators refuse negatives)."""
    if not re.fullmatch(r"\+?[0-9]+", text):
        raise argparse.ArgumentTypeError(f"expected an integer >= 0; got {text!r}")
    return int(text)


def _unit_float(what: str, *, open_low: bool = False, high: float | None = 1.0):
    def parse(text: str) -> float:
        from ..io._common import is_number_text

        try:
            value = float(text) if is_number_text(text) else math.nan
        except ValueError:
            value = math.nan
        low_ok = value > 0 if open_low else value >= 0
        if not (math.isfinite(value) and low_ok and (high is None or value <= high)):
            bounds = f"{'(0' if open_low else '[0'}, {'1]' if high is not None else 'inf)'}"
            raise argparse.ArgumentTypeError(f"expected a {what} in {bounds}; got {text!r}")
        return value
    return parse


#: ``--dilation-ratio``: a finite number >= 0 (0: a one-pixel boundary, as the reference).
_dilation_ratio = _unit_float("boundary width ratio", high=None)


def _positive_int(text: str) -> int:
    value = int(text) if re.fullmatch(r"\+?[0-9]+", text) else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer; got {text!r}")
    if value >= 2**63:   # a count no array can hold (numpy's sizes are int64)
        raise argparse.ArgumentTypeError(f"expected a positive integer below 2**63; got "
                                         f"{text!r}")
    return value


def _add_coco_options(parser: argparse.ArgumentParser) -> None:
    from ._shared_options import (
        add_dilation_ratio,
        add_json_output,
        add_matches_output,
        add_per_class,
    )

    parser.add_argument("--iou-type", default="bbox",
                        choices=["bbox", "segm", "boundary", "keypoints", "polygon", "rotated"],
                        help="what to compare: bbox, segm (masks), boundary (boundary IoU "
                        "of the masks, Cheng et al. 2021), keypoints (OKS), polygon "
                        "('polygon' or polygon 'segmentation' fields), rotated ('rbox' = "
                        "[cx, cy, w, h, angle_degrees]) (default: bbox)")
    add_dilation_ratio(parser)
    parser.add_argument("--kpt-sigmas", type=_number_list(float), metavar="'0.26 0.25 ...'",
                        help="keypoints: OKS sigmas, one per keypoint (default: COCO person)")
    parser.add_argument("--repair-polygons", action="store_true",
                        help="polygon: repair self-intersecting polygons with make_valid "
                        "instead of refusing them")
    add_json_output(parser, help="write stats, summary and per-class table as JSON")
    add_per_class(parser)
    add_coco_selection(parser)
    add_matches_output(parser)


#: ``--max-dets`` of the COCO protocol (``deteval coco``; ``compare --protocol coco``).
COCO_MAX_DETS_HELP = ("max detections per image and category (3 values; keypoints: any "
                      "number, default 20)")


def add_coco_selection(parser, *, max_dets: bool = True, iou_thresholds: bool = True) -> None:
    """The COCO protocol's settings of what is evaluated: ``--class-agnostic``,
    ``--max-dets '1 10 100'``, ``--iou-thresholds``, ``--image-ids``, ``--category-ids``
    (``deteval coco``; ``deteval compare --protocol coco``, which defines ``--max-dets`` and
    ``--iou-thresholds`` itself: other protocols read them too); :func:`coco_selection`
    reads them."""
    parser.add_argument("--class-agnostic", action="store_true",
                        help="pool categories when matching (pycocotools useCats=0)")
    if max_dets:
        from ._shared_options import max_dets_list

        parser.add_argument("--max-dets", type=max_dets_list, metavar="'1 10 100'",
                            help=COCO_MAX_DETS_HELP)
    if iou_thresholds:
        parser.add_argument("--iou-thresholds", type=_iou_list, metavar="'0.5 0.75'",
                            help="IoU thresholds in (0, 1] (default: 0.50:0.05:0.95; one given "
                            "twice counts twice in AP and AR, as in pycocotools)")
    parser.add_argument("--image-ids", type=_number_list(int), metavar="IDS",
                        help="evaluate only these image ids")
    parser.add_argument("--category-ids", type=_number_list(int), metavar="IDS",
                        help="evaluate only these category ids")


def coco_selection(args) -> dict:
    """The keywords of :func:`~deteval.evaluate_coco` that :func:`add_coco_selection`'s
    options give (none for an option left out)."""
    options = {"use_categories": False} if args.class_agnostic else {}
    for name, value in (("max_detections", args.max_dets),
                        ("iou_thresholds", args.iou_thresholds),
                        ("image_ids", args.image_ids), ("category_ids", args.category_ids)):
        if value is not None:
            options[name] = tuple(value)
    return options


# Reader options: (argparse dest, flag, {format: keyword of that format's reader}).
_GT_OPTIONS = (
    ("classes", "--classes", {"voc": "classes", "csv": "classes", "openimages": "classes",
                              "labelme": "classes", "cvat": "classes", "yolo": "names",
                              "dota": "category_names"}),
    ("images", "--images", {**{f: "images_dir" for f in ("voc", "yolo", "csv", "openimages",
                                                          "labelme")}, "dota": "images"}),
    ("one_based", "--one-based", {"voc": "one_based"}),
    ("gt_box_format", "--gt-box-format", {"csv": "box_format"}),
)


_DT_OPTIONS = (
    ("names", "--names", {"txt": "names", "yolo": "names", "csv": "names"}),
    ("box_format", "--box-format", {"txt": "box_format", "csv": "box_format"}),
)


def _add_gt_reader_options(parser: argparse.ArgumentParser, *,
                           box_flag: str = "--gt-box-format"):
    from .._format_names import BOX_FORMATS

    group = parser.add_argument_group("reader options (each applies to the formats named)")
    group.add_argument("--classes", metavar="FILE",
                       help="ground-truth class names, one a line: the category order (voc, "
                       "csv, openimages, labelme, cvat), or YOLO's names by class index")
    group.add_argument("--images", metavar="DIR",
                       help="folder of the images, for sizes the annotations lack (voc, yolo, "
                       "csv, openimages, labelme)")
    group.add_argument("--one-based", action="store_true",
                       help="voc: read xmin/ymin as 1-based pixel indices (subtract 1)")
    group.add_argument(box_flag, dest="gt_box_format", choices=BOX_FORMATS, metavar="BOX",
                       help=f"csv ground truth: box columns, one of {', '.join(BOX_FORMATS)} "
                       "(default: xyxy)")
    return group


def _add_input_options(parser: argparse.ArgumentParser, gt_formats: Sequence[str],
                       dt_formats: Sequence[str], *, checks: bool = True) -> None:
    """The GT and DT arguments and the reader options shared by voc, eval and confusion."""
    from .._format_names import BOX_FORMATS

    parser.add_argument("gt", metavar="GT", help="ground truth: file or folder")
    parser.add_argument("dt", metavar="DT", help="detections: file or folder")
    formats = parser.add_argument_group("formats")
    formats.add_argument("--gt-format", choices=gt_formats, metavar="FORMAT",
                         help=f"format of GT, one of {', '.join(gt_formats)} "
                         "(default: guessed)")
    formats.add_argument("--dt-format", choices=dt_formats, metavar="FORMAT",
                         help=f"format of DT, one of {', '.join(dt_formats)} "
                         "(default: guessed; a folder of .txt files is txt, YOLO's "
                         "'class cx cy w h score' needs --dt-format yolo)")
    group = _add_gt_reader_options(parser)
    group.add_argument("--names", metavar="FILE",
                       help="detections: class names by class index, one a line (txt, yolo, "
                       "csv)")
    group.add_argument("--box-format", choices=BOX_FORMATS, metavar="BOX",
                       help=f"detections: box layout, one of {', '.join(BOX_FORMATS)} (txt: "
                       "required; csv: default xyxy)")
    _add_resolution_options(parser, check=checks)


def _add_resolution_options(parser: argparse.ArgumentParser, *, check: bool = True) -> None:
    """--match-by (docs/resolution.md) and --no-check (the input doctor)."""
    group = parser.add_argument_group("resolution and checks")
    group.add_argument("--match-by", choices=["id", "name"],
                       help="how a COCO results file with its own 'images' and 'categories' "
                       "finds the ground truth's: by id (as pycocotools) or by file name and "
                       "category name (default: by name, refused where ids and names point "
                       "to different things; a plain results list always by id)")
    if check:
        group.add_argument("--no-check", action="store_true",
                           help="skip the input checks (box format, class ids, image "
                           "resolution, ...) run before the evaluation")


def _reader_options(args, table, format: str, what: str, path: str, *,
                    flags: dict[str, str] | None = None) -> dict:
    """The reader keywords of the options given; an option the format ignores is an error.

    ``flags`` renames options (argparse dest -> flag) for the messages."""
    options = {}
    for dest, flag, keywords in table:
        value = getattr(args, dest, None)
        if value is None or value is False:
            continue
        flag = (flags or {}).get(dest, flag)
        if format not in keywords:
            users = ", ".join(sorted(keywords))
            raise _UsageError(f"{flag} does not apply to {format} {what} ({path}); it is for "
                              f"{users}")
        options[keywords[format]] = value
    return options


def _guess_format(path: str, kind: str, flag: str) -> str:
    """:func:`detect_format`, its advice worded for the command line."""
    from ..errors import FormatError
    from ..io.formats import detect_format

    try:
        return detect_format(path, kind=kind)
    except FormatError as error:
        if "pass format=" not in error.message:
            raise
        raise FormatError(error.message.replace("pass format=", f"pass {flag}"),
                          source=error.source, record=error.record) from None


# (collections.namedtuple: typing.NamedTuple compiles each field's annotation at import;
# docs/startup.md §2)
_Inputs = namedtuple("_Inputs", ["dataset", "detections", "notes", "box_format", "class_names",
                                 "dt_format", "gt_format"], defaults=("coco",))
_Inputs.__doc__ = """What :func:`_read_inputs` read, and how (for the input checks): the
dataset, the detections, the notes (tuple of str), ``box_format`` the layout the detection
boxes were read in (or None), ``class_names`` (class indices mapped through --names),
``dt_format``, and ``gt_format`` the ground truth's (coco: its image records have keys
too)."""


# The box layout each detection format stores (txt and csv: --box-format).
_STORED_BOX_FORMAT = {"coco": "xywh", "yolo": "cxcywhn", "openimages": "xyxyn", "dota": None}


def _read_inputs(args, *, repair_polygons: bool = False,
                 threads: int | None = None) -> _Inputs:
    """Read GT and DT with the formats given or guessed, resolved by the one rule of
    docs/resolution.md.

    ``repair_polygons`` repairs the invalid outlines of the side(s) read as dota; it is a
    usage error when neither is. ``threads``: the readers use at most that many threads
    (``--threads N`` of the commands that read the files themselves and then evaluate, as
    ``evaluate_coco(path, path, threads=N)`` reads them: docs/threads.md §1); None: every
    core."""
    if threads is not None:
        from .._threads import threads_limited

        with threads_limited(threads):
            return _read_inputs(args, repair_polygons=repair_polygons)
    from .._inputs import load_pair, read_coco_ground_truth
    from ..errors import FormatError
    from ..io.formats import read_detections, read_gt

    gt_format = args.gt_format or _guess_format(args.gt, "gt", "--gt-format")
    dt_format = args.dt_format or _guess_format(args.dt, "detections", "--dt-format")
    if repair_polygons and "dota" not in (gt_format, dt_format):
        raise _UsageError(f"--repair-polygons applies to dota ground truth or detections; "
                          f"{args.gt} is read as {gt_format} and {args.dt} as {dt_format}")
    options = _reader_options(args, _GT_OPTIONS, gt_format, "ground truth", args.gt)
    if repair_polygons and gt_format == "dota":
        options["invalid"] = "repair"
    if gt_format == "coco" and not options:
        dataset = read_coco_ground_truth(args.gt)   # says so when GT and DT are swapped
    else:
        dataset = read_gt(args.gt, gt_format, **options)
    options = _reader_options(args, _DT_OPTIONS, dt_format, "detections", args.dt)
    if repair_polygons and dt_format == "dota":
        options["invalid"] = "repair"
    if dt_format == "txt" and "box_format" not in options:
        raise _UsageError(f"txt detections ({args.dt}) need --box-format: xywh for 'class "
                          "score x y w h', xyxy for 'class score x1 y1 x2 y2', cxcywhn for "
                          "relative centres, ...; YOLO's 'class cx cy w h score' needs "
                          "--dt-format yolo")
    match_by = getattr(args, "match_by", None)
    if match_by is not None and dt_format != "coco":
        raise _UsageError(f"--match-by applies to COCO results; {args.dt} is read as "
                          f"{dt_format}, which finds its images by file name")
    notes: tuple[str, ...] = ()
    try:
        if dt_format == "coco":
            pair = load_pair(dataset, args.dt, match_by=match_by or "auto")
            detections, notes = pair.detections, pair.notes
        else:
            detections = read_detections(args.dt, dataset, dt_format, **options)
    except FormatError as error:
        cli_hint = error.cli_hint
        if dt_format == "coco" and error.message.startswith("missing 'bbox'") and not cli_hint:
            # Masks or keypoints only: say which commands read those.
            cli_hint = (f"`deteval {args.command}` compares boxes; results with masks or "
                        "keypoints only are evaluated by `deteval coco --iou-type segm|keypoints` "
                        "and drawn by `deteval draw --iou-type segm|keypoints`")
        # A COCO results list is parsed before it is read: its errors name "<list>".
        source = (error.source if error.source is not None and not error.source.startswith("<")
                  else args.dt)
        if source == error.source and cli_hint == error.cli_hint:
            raise
        raise FormatError(error.message, source=source, record=error.record, hint=error.hint,
                          cli_hint=cli_hint) from None
    box_format = _STORED_BOX_FORMAT.get(dt_format, options.get("box_format", "xyxy"))
    return _Inputs(dataset, detections, notes, box_format, "names" in options, dt_format,
                   gt_format)
