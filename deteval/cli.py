"""Command-line interface: ``deteval coco``, ``voc``, ``eval``, ``confusion``, ``classify``,
``convert``, ``report``, ``draw`` and ``demo``.

A thin shell over the library: it parses arguments, calls one function, prints the result.
Errors go to stderr as ``deteval: error: ...`` with exit status 1; usage errors exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

__all__ = ["main", "format_per_class"]


def _number_list(kind):
    def parse(text: str):
        try:
            return [kind(v) for v in text.replace(",", " ").split()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a list of {kind.__name__} values, e.g. "
                f"{'1 10 100' if kind is int else '0.5 0.75'!r}; got {text!r}"
            ) from None
    return parse


def _iou_list(text: str) -> list[float]:
    values = _number_list(float)(text)
    if not values or not all(0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected IoU thresholds in (0, 1], e.g. '0.5 0.75'; "
                                         f"got {text!r}")
    return values


def _unit_float(what: str, *, open_low: bool = False, high: float | None = 1.0):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        low_ok = value > 0 if open_low else value >= 0
        if not (math.isfinite(value) and low_ok and (high is None or value <= high)):
            bounds = f"{'(0' if open_low else '[0'}, {'1]' if high is not None else 'inf)'}"
            raise argparse.ArgumentTypeError(f"expected a {what} in {bounds}; got {text!r}")
        return value
    return parse


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer; got {text!r}")
    return value


class _UsageError(Exception):
    """A combination of options the parser cannot see is wrong: exit 2 with the usage."""


def _build_parser() -> argparse.ArgumentParser:
    # The package is imported anyway (for __version__); the format lists cost nothing more.
    from . import __version__
    from .io.formats import DETECTION_FORMATS, GT_FORMATS, WRITE_FORMATS

    parser = argparse.ArgumentParser(
        prog="deteval", description="Evaluate object detectors: COCO metrics equal to "
        "pycocotools, fast, with per-class tables and match exports.")
    parser.add_argument("--version", action="version", version=f"deteval {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    coco = commands.add_parser(
        "coco", help="COCO evaluation of a results file against an instances file",
        description="COCO evaluation (pycocotools COCOeval numbers). Prints the 12-line "
        "summary exactly as pycocotools does.")
    coco.add_argument("gt", metavar="GT.json", help="COCO instances file (ground truth)")
    coco.add_argument("dt", metavar="DT.json", help="COCO results file (detections)")
    _add_coco_options(coco)

    voc = commands.add_parser(
        "voc", help="Pascal VOC evaluation (AP per class, mAP) of detections in any format",
        description="Pascal VOC evaluation: the devkit's AP per class and mAP (VOC2012: "
        "all-points AP; VOC2007: 11-point AP; IoU >= 0.5, inclusive pixels), or "
        "detectron2's port with --detectron2. Ground truth and detections may be in any "
        "supported format (guessed from the paths unless --gt-format/--dt-format say).")
    voc.add_argument("--year", choices=["2007", "2012"], default="2012",
                     help="devkit year: 2007 = 11-point AP, 2012 = all-points AP "
                     "(default: 2012)")
    voc.add_argument("--detectron2", action="store_true",
                     help="detectron2's PascalVOCDetectionEvaluator: IoU > t for t = "
                     "0.50:0.05:0.95, detections rounded as its result files")
    voc.add_argument("--iou", type=_iou_list, metavar="'0.5 0.75'",
                     help="IoU threshold(s) (default: the preset's)")
    voc.add_argument("--json", metavar="OUT.json",
                     help="write mAP, per-class table, summary and settings as JSON")
    _add_input_options(voc, GT_FORMATS, DETECTION_FORMATS)
    voc.set_defaults(parser=voc)

    eval_ = commands.add_parser(
        "eval", help="read ground truth and detections in any format, run one protocol",
        description="The general entry: read ground truth and detections in any supported "
        "format (guessed from the paths unless --gt-format/--dt-format say) and evaluate "
        "them with the COCO protocol (the output of `deteval coco`) or a VOC devkit preset "
        "(the output of `deteval voc`).")
    eval_.add_argument("--protocol", required=True, choices=["coco", "voc2007", "voc2012"],
                       help="coco: pycocotools COCOeval; voc2007/voc2012: the devkits")
    eval_.add_argument("--json", metavar="OUT.json", help="also write the results as JSON")
    eval_.add_argument("--per-class", action="store_true",
                       help="coco: print the per-class table (the VOC summary always has it)")
    eval_.add_argument("--iou-type", choices=["bbox", "polygon"], default="bbox",
                       help="coco: compare boxes, or the exact outlines of formats that "
                       "carry polygons (DOTA quadrilaterals) (default: bbox)")
    eval_.add_argument("--repair-polygons", action="store_true",
                       help="dota: repair self-intersecting quadrilaterals with make_valid "
                       "instead of refusing them")
    _add_input_options(eval_, GT_FORMATS, DETECTION_FORMATS)
    eval_.set_defaults(parser=eval_)

    confusion = commands.add_parser(
        "confusion", help="detection confusion matrix (with an Unknown row and column)",
        description="The detection confusion matrix at one IoU and one score threshold "
        "(deteval.detection_confusion_matrix): rows are true classes, columns predicted "
        "classes; the Unknown row counts background false positives (duplicates included), "
        "the Unknown column missed objects. Ground truth and detections may be in any "
        "supported format (guessed from the paths unless --gt-format/--dt-format say).")
    confusion.add_argument("--iou", type=_unit_float("IoU threshold", open_low=True),
                           default=0.5, metavar="T",
                           help="IoU threshold, in (0, 1] (default: 0.5)")
    confusion.add_argument("--score", type=_unit_float("score threshold", high=None),
                           default=0.0, metavar="S",
                           help="drop detections scoring below S (default: 0, keep all)")
    confusion.add_argument("--normalize", choices=["true", "pred"],
                           help="show rows (true: recall on the diagonal) or columns (pred: "
                           "precision on the diagonal) as fractions (default: counts)")
    confusion.add_argument("--json", metavar="OUT.json",
                           help="write the counts, matrix, per-class and overall numbers")
    _add_input_options(confusion, GT_FORMATS, DETECTION_FORMATS)
    confusion.set_defaults(parser=confusion)

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

    classify = commands.add_parser(
        "classify", help="classification metrics of labels against scores or predictions",
        description="Classification metrics: accuracy, top-k accuracy (scores given), "
        "macro/micro/weighted precision, recall and F1, and the confusion matrix. LABELS: "
        "a CSV file with one label (integer or string) a line, optional header, or a .npy "
        "array. SCORES: a CSV file of n rows x K columns (optional header; a single column "
        "holds predicted labels) or a .npy array (2-D scores, 1-D predicted labels). "
        "Integer labels name the score columns 0..K-1; string labels the columns in sorted "
        "order. The predicted class is the highest-scored column (a tie goes to the later "
        "column, as top-k accuracy breaks ties).")
    classify.add_argument("labels", metavar="LABELS", help="true labels: .csv or .npy")
    classify.add_argument("scores", metavar="SCORES",
                          help="scores (n x K) or predicted labels: .csv or .npy")
    classify.add_argument("--top-k", type=_positive_int, metavar="K",
                          help="k of the top-k accuracy (default: 5, at most K - 1)")
    classify.add_argument("--json", metavar="OUT.json", help="also write the numbers as JSON")
    classify.set_defaults(parser=classify)

    convert = commands.add_parser(
        "convert", help="convert ground truth between formats",
        description="Read ground truth in any supported format and write it as COCO JSON, "
        "a VOC XML folder, a YOLO folder or a CSV file. DST's format comes from its suffix "
        "(.json: coco, .csv/.tsv: csv) unless --to says; folders need --to voc or yolo.")
    convert.add_argument("src", metavar="SRC", help="ground truth to read: file or folder")
    convert.add_argument("dst", metavar="DST", help="file or folder to write")
    convert.add_argument("--from", dest="gt_format", choices=GT_FORMATS, metavar="FORMAT",
                         help=f"format of SRC, one of {', '.join(GT_FORMATS)} "
                         "(default: guessed)")
    convert.add_argument("--to", dest="to_format", choices=WRITE_FORMATS, metavar="FORMAT",
                         help=f"format of DST, one of {', '.join(WRITE_FORMATS)} "
                         "(default: from DST's suffix)")
    _add_gt_reader_options(convert, box_flag="--box-format")
    convert.set_defaults(parser=convert)

    demo = commands.add_parser("demo", help="evaluate the bundled sample dataset",
                               description="Evaluate the bundled synthetic sample "
                               "(fixtures/demo) and print the summary and per-class table.")
    demo.add_argument("--json", metavar="OUT.json", help="also write the results as JSON")

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
    report.add_argument("--protocol", choices=["coco", "voc2007", "voc2012"], default="coco",
                        help="coco: pycocotools COCOeval; voc2007/voc2012: the devkits "
                        "(default: coco)")
    report.add_argument("--iou-threshold", "--iou", dest="iou_threshold",
                        type=_unit_float("IoU threshold", open_low=True), default=0.5,
                        metavar="T",
                        help="IoU threshold of the curves, confusion matrix, error counts and "
                        "gallery (coco: one of 0.50, 0.55, ..., 0.95; voc: the protocol's "
                        "threshold; default: 0.5)")
    report.add_argument("--score-threshold", "--score", dest="score_threshold",
                        type=_unit_float("score threshold", high=None), metavar="S",
                        help="score threshold of the confusion matrix, error counts and "
                        "gallery (default: the F1-optimal score)")
    report.add_argument("--gallery", type=gallery_size, default=24, metavar="N",
                        help="how many images to draw, most errors first (default: 24; "
                        "0: none)")
    report.add_argument("--figure-format", choices=["png", "svg"], default="png",
                        help="file format of the plots (default: png)")
    report.add_argument("--quiet", action="store_true",
                        help="no progress bar (it is shown only on a terminal anyway)")
    _add_input_options(report, GT_FORMATS, DETECTION_FORMATS)
    report.set_defaults(parser=report)
    return parser


def _add_coco_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--iou-type", default="bbox",
                        choices=["bbox", "segm", "keypoints", "polygon", "rotated"],
                        help="what to compare: bbox, segm (masks), keypoints (OKS), polygon "
                        "('polygon' or polygon 'segmentation' fields), rotated ('rbox' = "
                        "[cx, cy, w, h, angle_degrees]) (default: bbox)")
    parser.add_argument("--kpt-sigmas", type=_number_list(float), metavar="'0.26 0.25 ...'",
                        help="keypoints: OKS sigmas, one per keypoint (default: COCO person)")
    parser.add_argument("--repair-polygons", action="store_true",
                        help="polygon: repair self-intersecting polygons with make_valid "
                        "instead of refusing them")
    parser.add_argument("--json", metavar="OUT.json",
                        help="write stats, summary and per-class table as JSON")
    parser.add_argument("--per-class", action="store_true", help="print the per-class table")
    parser.add_argument("--class-agnostic", action="store_true",
                        help="pool categories when matching (pycocotools useCats=0)")
    parser.add_argument("--max-dets", type=_number_list(int), metavar="'1 10 100'",
                        help="max detections per image and category (3 values; keypoints: "
                        "any number, default 20)")
    parser.add_argument("--iou-thresholds", type=_number_list(float), metavar="'0.5 0.75'",
                        help="IoU thresholds (default: 0.50:0.05:0.95)")
    parser.add_argument("--image-ids", type=_number_list(int), metavar="IDS",
                        help="evaluate only these image ids")
    parser.add_argument("--category-ids", type=_number_list(int), metavar="IDS",
                        help="evaluate only these category ids")
    parser.add_argument("--matches", metavar="OUT.csv",
                        help="write the match table (area 'all') as CSV")


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
    from .boxes import BOX_FORMATS

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
                       dt_formats: Sequence[str]) -> None:
    """The GT and DT arguments and the reader options shared by voc, eval and confusion."""
    from .boxes import BOX_FORMATS

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
    from .errors import FormatError
    from .io.formats import detect_format

    try:
        return detect_format(path, kind=kind)
    except FormatError as error:
        if "pass format=" not in error.message:
            raise
        raise FormatError(error.message.replace("pass format=", f"pass {flag}"),
                          source=error.source, record=error.record) from None


# Advice in library messages, in the words of the command line.
_CLI_WORDS = (("pass images_dir=... or image_sizes=...", "pass --images DIR"),
              ("pass images_dir=...", "pass --images DIR"))


def _read_inputs(args, *, repair_polygons: bool = False):
    """Read GT and DT with the formats given or guessed; returns (dataset, detections).

    ``repair_polygons`` repairs the invalid outlines of the side(s) read as dota; it is a
    usage error when neither is."""
    from .errors import FormatError
    from .io.formats import read_detections, read_gt

    gt_format = args.gt_format or _guess_format(args.gt, "gt", "--gt-format")
    dt_format = args.dt_format or _guess_format(args.dt, "detections", "--dt-format")
    if repair_polygons and "dota" not in (gt_format, dt_format):
        raise _UsageError(f"--repair-polygons applies to dota ground truth or detections; "
                          f"{args.gt} is read as {gt_format} and {args.dt} as {dt_format}")
    options = _reader_options(args, _GT_OPTIONS, gt_format, "ground truth", args.gt)
    if repair_polygons and gt_format == "dota":
        options["invalid"] = "repair"
    dataset = read_gt(args.gt, gt_format, **options)
    options = _reader_options(args, _DT_OPTIONS, dt_format, "detections", args.dt)
    if repair_polygons and dt_format == "dota":
        options["invalid"] = "repair"
    if dt_format == "txt" and "box_format" not in options:
        raise _UsageError(f"txt detections ({args.dt}) need --box-format: xywh for 'class "
                          "score x y w h', xyxy for 'class score x1 y1 x2 y2', cxcywhn for "
                          "relative centres, ...; YOLO's 'class cx cy w h score' needs "
                          "--dt-format yolo")
    try:
        return dataset, read_detections(args.dt, dataset, dt_format, **options)
    except FormatError as error:
        # A COCO results list is parsed before it is read: its errors name "<list>".
        if error.source is not None and not error.source.startswith("<"):
            raise
        raise FormatError(error.message, source=args.dt, record=error.record) from None


def format_per_class(rows: list[dict]) -> str:
    """Render :meth:`COCOResult.per_class` rows as an aligned text table.

    Examples
    --------
    >>> print(format_per_class([{"category_id": 1, "name": "cat", "AP": 0.5, "AP50": 1.0,
    ...     "AP75": 0.5, "APs": -1.0, "APm": 0.5, "APl": -1.0, "AR100": 0.5, "n_gt": 2,
    ...     "n_crowd": 0, "n_detections": 3}]))
     id  name     AP   AP50   AP75    APs    APm    APl  AR100  n_gt  n_dt
      1  cat   0.500  1.000  0.500      -  0.500      -  0.500     2     3
    """
    width = max([4] + [len(r["name"]) for r in rows])
    # The metric columns are those of the rows (keypoint rows have no APs, and AR at 20).
    columns = [c for c in (rows[0] if rows else {"AP": 0}) if c not in (
        "category_id", "name", "n_gt", "n_crowd", "n_detections")]
    head = (f"{'id':>3}  {'name':<{width}}" + "".join(f"{c:>7}" for c in columns)
            + f"{'n_gt':>6}{'n_dt':>6}")
    lines = [head]
    for r in rows:
        cells = "".join(f"{'-':>7}" if r[c] < 0 else f"{r[c]:7.3f}" for c in columns)
        lines.append(f"{r['category_id']:>3}  {r['name']:<{width}}{cells}"
                     f"{r['n_gt']:>6}{r['n_detections']:>6}")
    return "\n".join(lines)


def _write_json(path: str, payload: dict) -> None:
    import orjson

    Path(path).write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))


def _check_output_paths(*paths: str | None) -> None:
    """Fail before the (possibly long) evaluation when an output cannot be written."""
    for path in paths:
        if path is not None and not Path(path).resolve().parent.is_dir():
            raise FileNotFoundError(f"cannot write {path}: its folder does not exist")


def _run_coco(args, out: TextIO, err: TextIO) -> int:
    from .errors import FormatError
    from .protocols.coco import evaluate_coco

    _check_output_paths(args.json, args.matches)

    options = {"iou_type": args.iou_type}
    if args.kpt_sigmas is not None:
        options["keypoint_sigmas"] = tuple(args.kpt_sigmas)
    if args.repair_polygons:
        options["invalid"] = "repair"
    if args.class_agnostic:
        options["use_categories"] = False
    for name, value in (("max_detections", args.max_dets),
                        ("iou_thresholds", args.iou_thresholds),
                        ("image_ids", args.image_ids), ("category_ids", args.category_ids)):
        if value is not None:
            options[name] = tuple(value)
    try:
        result = evaluate_coco(args.gt, args.dt, **options)
    except FormatError as error:
        raise FormatError(error.message.replace("pass invalid='repair'",
                                                "pass --repair-polygons"),
                          source=error.source, record=error.record) from None
    _report(result, out, err, per_class=args.per_class)
    if args.json:
        payload = result.to_dict()
        payload["timings"] = result.timings
        _write_json(args.json, payload)
    if args.matches:
        result.matches.to_csv(args.matches)
    return 0


def _report(result, out: TextIO, err: TextIO, *, per_class: bool) -> None:
    for note in result.notes:
        print(f"deteval: note: {note}", file=err)
    print(result.summary(), file=out)
    if per_class:
        print(file=out)
        print(format_per_class(result.per_class()), file=out)


def _voc_preset(name: str):
    from .protocols import voc

    return getattr(voc, name)


def _report_voc(result, out: TextIO, err: TextIO) -> None:
    """The summary table on ``out``; the notes (its last lines) on ``err`` as for coco."""
    for note in result.notes:
        print(f"deteval: note: {note}", file=err)
    lines = result.summary().splitlines()
    notes = [f"note: {note}" for note in result.notes]
    if notes and lines[-len(notes):] == notes:
        del lines[-len(notes):]
    print("\n".join(lines), file=out)


def _voc_json(result, preset: str) -> dict:
    payload = result.to_dict()
    payload["preset"] = preset
    payload["timings"] = result.timings
    return payload


def _run_voc(args, out: TextIO, err: TextIO) -> int:
    from .protocols.voc import evaluate_voc

    _check_output_paths(args.json)
    preset = f"{'DETECTRON2_' if args.detectron2 else ''}VOC{args.year}"
    dataset, detections = _read_inputs(args)
    options = {} if args.iou is None else {"iou_thresholds": tuple(args.iou)}
    result = evaluate_voc(dataset, detections, params=_voc_preset(preset), **options)
    _report_voc(result, out, err)
    if args.json:
        _write_json(args.json, _voc_json(result, preset))
    return 0


def _run_eval(args, out: TextIO, err: TextIO) -> int:
    _check_output_paths(args.json)
    from .errors import FormatError

    if args.iou_type != "bbox" and args.protocol != "coco":
        raise _UsageError(f"--iou-type {args.iou_type} needs --protocol coco")
    try:
        dataset, detections = _read_inputs(args, repair_polygons=args.repair_polygons)
    except FormatError as error:
        raise FormatError(error.message.replace("pass invalid='repair'",
                                                "pass --repair-polygons"),
                          source=error.source, record=error.record) from None
    if args.iou_type == "polygon":
        for what, path, table in (("ground truth", args.gt, dataset.gt),
                                  ("detections", args.dt, detections)):
            if table.polygons is None and len(table):
                raise ValueError(
                    f"--iou-type polygon compares outlines, but {path} ({what}) gives boxes "
                    "only: DOTA labels and Task1 results carry outlines; for COCO "
                    "files with 'polygon' or polygon 'segmentation' fields use `deteval coco "
                    "--iou-type polygon`")
    if args.protocol == "coco":
        from .protocols.coco import evaluate_coco

        result = evaluate_coco(dataset, detections, iou_type=args.iou_type)
        _report(result, out, err, per_class=args.per_class)
        if args.json:
            payload = result.to_dict()
            payload["timings"] = result.timings
            _write_json(args.json, payload)
        return 0
    from .protocols.voc import evaluate_voc

    preset = args.protocol.upper()
    result = evaluate_voc(dataset, detections, params=_voc_preset(preset))
    _report_voc(result, out, err)
    if args.json:
        _write_json(args.json, _voc_json(result, preset))
    return 0


def _run_confusion(args, out: TextIO, err: TextIO) -> int:
    from .confusion import detection_confusion_matrix

    _check_output_paths(args.json)
    dataset, detections = _read_inputs(args)
    result = detection_confusion_matrix(dataset, detections, iou_threshold=args.iou,
                                        score_threshold=args.score, normalize=args.normalize)
    overall = result.overall(zero_division=0)
    print(f"deteval confusion: {len(dataset.images)} images, {len(dataset.categories)} "
          f"categories, {int(result.counts[:-1].sum())} objects, {len(detections)} detections; "
          f"IoU >= {result.iou_threshold:g}, score >= {result.score_threshold:g}", file=out)
    print(file=out)
    print(result.format_table(), file=out)
    print(file=out)
    print(f"overall: TP {overall['tp']}  FP {overall['fp']}  FN {overall['fn']}  "
          f"precision {overall['precision']:.3f}  recall {overall['recall']:.3f}  "
          f"F1 {overall['f1']:.3f}", file=out)
    extras = [f"{n} {what}" for n, what in (
        (int(result.n_ignored_detections.sum()), "matched a crowd region or ignored object"),
        (result.n_dropped_detections, "have a category unknown to the ground truth")) if n]
    if extras:
        print(f"detections in no cell: {'; '.join(extras)}", file=out)
    if args.json:
        _write_json(args.json, result.to_dict(zero_division=0))
    return 0


def _run_draw(args, out: TextIO, err: TextIO) -> int:
    from ._progress import ProgressBar
    from .errors import DetevalError
    from .outcomes import FP_OUTCOMES, match_outcomes
    from .viz.draw import select_images, write_drawings

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


def _read_table(path: str, what: str) -> list[list[str]]:
    """The non-empty rows of a CSV file, cells stripped."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            sample = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise ValueError(f"cannot read {what} file {path}: {reason}") from None
    delimiter = "\t" if path.lower().endswith(".tsv") else ","
    rows = [[cell.strip() for cell in row]
            for row in csv.reader(sample.splitlines(), delimiter=delimiter)]
    return [row for row in rows if any(row)]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _labels_from_cells(cells: list[str], path: str, what: str):
    """Integers when every cell is one, else strings."""
    import numpy as np

    try:
        return np.array([int(c) for c in cells], dtype=np.int64)
    except ValueError:
        if all(_is_number(c) for c in cells):
            bad = next(c for c in cells if not c.lstrip("+-").isdigit())
            raise ValueError(f"{what} file {path}: labels must be integers or names; got "
                             f"{bad!r}") from None
        return np.array(cells, dtype=str)


def _load_npy(path: str, what: str):
    import numpy as np

    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise ValueError(f"cannot read {what} file {path}: {reason}") from None
    if not isinstance(array, np.ndarray):
        raise ValueError(f"cannot read {what} file {path}: expected a .npy array")
    return array


def _read_labels(path: str, what: str = "LABELS"):
    """One label a line (optional header) or a 1-D .npy array."""
    if path.lower().endswith(".npy"):
        array = _load_npy(path, what)
        if array.ndim != 1 and not (array.ndim == 2 and array.shape[1] == 1):
            raise ValueError(f"{what} file {path}: expected a 1-D array of labels; got shape "
                             f"{array.shape}")
        return array.reshape(-1)
    rows = _read_table(path, what)
    wide = next((i for i, row in enumerate(rows) if len(row) != 1), None)
    if wide is not None:
        raise ValueError(f"{what} file {path}: expected one label a line; line "
                         f"{wide + 1} has {len(rows[wide])} cells")
    cells = [row[0] for row in rows]
    if cells and _has_header(cells):
        cells = cells[1:]
    if not cells:
        raise ValueError(f"{what} file {path}: no labels")
    return _labels_from_cells(cells, path, what)


_HEADER_WORDS = {"label", "labels", "y", "y_true", "y_pred", "true", "pred", "prediction",
                 "predicted", "class", "target", "category", "truth"}


def _has_header(cells: list[str]) -> bool:
    """A first line that is a name above numbers, or a usual column name not used again."""
    first, rest = cells[0], cells[1:]
    if not _is_number(first) and rest and all(_is_number(c) for c in rest):
        return True
    return first.lower() in _HEADER_WORDS and first not in rest


def _read_scores(path: str):
    """2-D scores (float) or 1-D predicted labels."""
    import numpy as np

    if path.lower().endswith(".npy"):
        array = _load_npy(path, "SCORES")
        if array.ndim == 2 and array.dtype.kind not in "biuf":
            raise ValueError(f"SCORES file {path}: scores must be numbers; got dtype "
                             f"{array.dtype}")
        if array.ndim not in (1, 2):
            raise ValueError(f"SCORES file {path}: expected a 2-D array of scores or a 1-D "
                             f"array of predicted labels; got shape {array.shape}")
        return array
    rows = _read_table(path, "SCORES")
    if rows and all(len(row) == 1 for row in rows):
        return _read_labels(path, "SCORES")
    if rows and not all(_is_number(c) for c in rows[0]):
        rows = rows[1:]  # a header
    if not rows:
        raise ValueError(f"SCORES file {path}: no scores")
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"SCORES file {path}: every row needs {width} scores; row "
                             f"{i + 1} has {len(row)}")
        bad = next((c for c in row if not _is_number(c)), None)
        if bad is not None:
            raise ValueError(f"SCORES file {path}: scores must be numbers; got {bad!r} in "
                             f"row {i + 1}")
    return np.array([[float(c) for c in row] for row in rows], dtype=np.float64)


def _format_matrix(classes, matrix) -> str:
    names = [str(c) for c in classes]
    corner = "true \\ pred"
    first = max(len(corner), *(len(n) for n in names))
    width = max(4, *(len(n) for n in names), *(len(str(int(v))) for v in matrix.ravel()))
    lines = [f"{corner:<{first}}  " + "  ".join(f"{n:>{width}}" for n in names)]
    for name, row in zip(names, matrix):
        lines.append(f"{name:<{first}}  " + "  ".join(f"{int(v):>{width}}" for v in row))
    return "\n".join(lines)


def _run_classify(args, out: TextIO, err: TextIO) -> int:
    import numpy as np

    from . import classification as cls

    _check_output_paths(args.json)
    truth = _read_labels(args.labels)
    scores = _read_scores(args.scores)
    if len(scores) != len(truth):
        raise ValueError(f"LABELS ({args.labels}) has {len(truth)} labels but SCORES "
                         f"({args.scores}) has {len(scores)} rows")
    top_k = None
    if scores.ndim == 2:
        n_columns = scores.shape[1]
        if truth.dtype.kind in "iu":
            classes = np.arange(n_columns)
            outside = truth[(truth < 0) | (truth >= n_columns)]
            if len(outside):
                raise ValueError(f"LABELS ({args.labels}): integer labels index the "
                                 f"{n_columns} score columns (0..{n_columns - 1}); got "
                                 f"{outside[0]}")
        else:
            classes = np.unique(truth)
            if len(classes) != n_columns:
                raise ValueError(f"SCORES ({args.scores}) has {n_columns} columns but LABELS "
                                 f"({args.labels}) has {len(classes)} distinct classes (string "
                                 "labels name the columns in sorted order)")
        if not np.isfinite(scores).all():
            row, col = np.argwhere(~np.isfinite(scores))[0]
            raise ValueError(f"SCORES ({args.scores}): scores must be finite; got "
                             f"{scores[row, col]} at row {row + 1}, column {col + 1}")
        # The highest column, a tie going to the later column (top_k_accuracy's order).
        predicted = classes[n_columns - 1 - np.argmax(scores[:, ::-1], axis=1)]
        k = args.top_k if args.top_k is not None else max(1, min(5, n_columns - 1))
        top_k = (k, cls.top_k_accuracy(truth, scores, k=k, labels=classes))
    else:
        predicted = scores
        if truth.dtype.kind != predicted.dtype.kind and {truth.dtype.kind,
                                                         predicted.dtype.kind} != {"i", "u"}:
            raise ValueError(f"LABELS ({args.labels}) and SCORES ({args.scores}) hold labels "
                             "of different kinds (numbers and names)")
        classes = np.unique(np.concatenate([truth, predicted]))
        if args.top_k is not None:
            raise ValueError(f"--top-k needs scores: SCORES ({args.scores}) holds predicted "
                             "labels")
    payload = _classify_numbers(cls, truth, predicted, classes)
    if top_k is not None:
        payload["top_k"] = {"k": top_k[0], "accuracy": top_k[1]}
    print(f"deteval classify: {len(truth)} samples, {len(classes)} classes", file=out)
    print(f"accuracy        {payload['accuracy']:.4f}", file=out)
    if top_k is not None:
        print(f"top-{top_k[0]} accuracy  {top_k[1]:.4f}", file=out)
    print(file=out)
    print(f"{'average':<10}{'precision':>10}{'recall':>10}{'F1':>10}", file=out)
    for average in ("macro", "micro", "weighted"):
        row = payload[average]
        print(f"{average:<10}{row['precision']:>10.4f}{row['recall']:>10.4f}"
              f"{row['f1']:>10.4f}", file=out)
    print(file=out)
    print(_format_matrix(classes, np.array(payload["confusion_matrix"])), file=out)
    if args.json:
        _write_json(args.json, payload)
    return 0


def _classify_numbers(cls, truth, predicted, classes) -> dict:
    labels = classes.tolist()
    payload = {"n_samples": len(truth), "labels": labels,
               "accuracy": cls.accuracy(truth, predicted, labels=classes)}
    for average in ("macro", "micro", "weighted"):
        payload[average] = {
            name: float(function(truth, predicted, average=average, labels=classes,
                                 zero_division=0))
            for name, function in (("precision", cls.precision), ("recall", cls.recall),
                                   ("f1", cls.f1_score))}
    payload["confusion_matrix"] = cls.confusion_matrix(truth, predicted,
                                                       labels=classes).tolist()
    return payload


def _run_convert(args, out: TextIO, err: TextIO) -> int:
    from .errors import DetevalError, FormatError
    from .io.formats import convert

    dst = Path(args.dst)
    to_format = args.to_format or {".json": "coco", ".csv": "csv", ".tsv": "csv"}.get(
        dst.suffix.lower())
    if to_format is None:
        raise _UsageError(f"cannot tell which format to write to {args.dst}: pass --to "
                          "(coco, csv; a folder takes voc or yolo)")
    if to_format in ("coco", "csv"):
        _check_output_paths(args.dst)
    if Path(args.src).resolve() == dst.resolve():
        raise ValueError(f"{args.dst}: the destination is the source; write elsewhere")
    src_format = args.gt_format or _guess_format(args.src, "gt", "--from")
    options = _reader_options(args, _GT_OPTIONS, src_format, "ground truth", args.src,
                              flags={"gt_box_format": "--box-format"})
    try:
        dataset = convert(args.src, dst, src_format=src_format, dst_format=to_format,
                          read_options=options)
    except FormatError:
        raise
    except (ValueError, TypeError, OSError) as error:
        raise DetevalError(f"cannot convert {args.src} to {args.dst}: {error}") from error
    gt = dataset.gt
    extras = [f"{n} {what}" for n, what in ((int(gt.ignore.sum()), "difficult"),
                                             (int(gt.iscrowd.sum()), "crowd")) if n]
    print(f"deteval convert: {args.src} ({src_format}) -> {args.dst} ({to_format}): "
          f"{len(dataset.images)} images, {len(gt)} objects"
          f"{' (' + ', '.join(extras) + ')' if extras else ''}, "
          f"{len(dataset.categories)} categories", file=out)
    return 0


def _run_demo(args, out: TextIO, err: TextIO) -> int:
    from .protocols.coco import evaluate_coco

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "demo"
    gt_path, dt_path = fixtures / "gt.json", fixtures / "detections.json"
    if gt_path.is_file() and dt_path.is_file():
        gt, dt, where = gt_path, dt_path, str(fixtures)
    else:  # installed without the source tree: generate the same sample in memory
        from .demo import make_demo

        gt, dt = make_demo()
        where = "generated in memory (deteval.demo.make_demo)"
    result = evaluate_coco(gt, dt)
    data = result.gt
    print(f"deteval demo: {len(data.images)} images, {len(data.categories)} categories, "
          f"{len(data.gt)} objects, {len(result.detections)} detections ({where})", file=out)
    print(file=out)
    _report(result, out, err, per_class=True)
    print(file=out)
    print(f"AP = {result.stat('AP'):.3f}, AP50 = {result.stat('AP50'):.3f}; evaluated in "
          f"{result.timings['total'] * 1000:.0f} ms. Try: deteval coco GT.json DT.json "
          "--per-class --json out.json", file=out)
    if args.json:
        _write_json(args.json, result.to_dict())
    return 0


def _run_report(args, out: TextIO, err: TextIO) -> int:
    import json

    from ._progress import ProgressBar
    from .errors import DetevalError
    from .report import write_report

    # --images is the gallery's folder; it goes to the ground-truth reader only when that
    # format reads image sizes from it (a COCO file has them).
    gt_format = args.gt_format or _guess_format(args.gt, "gt", "--gt-format")
    reader_args = argparse.Namespace(**vars(args))
    reader_args.gt_format = gt_format
    if gt_format not in next(f for dest, _, f in _GT_OPTIONS if dest == "images"):
        reader_args.images = None
    dataset, detections = _read_inputs(reader_args)
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


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    from .errors import DetevalError, FormatWarning, UndefinedMetricWarning

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = _build_parser()
    try:
        # argparse prints usage, --help and --version to sys.stdout/sys.stderr.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
            if (getattr(args, "max_dets", None) is not None and len(args.max_dets) < 3
                    and getattr(args, "iou_type", "bbox") != "keypoints"):
                parser.error("--max-dets needs 3 values (the summary reads maxDets[0..2]); "
                             f"got {' '.join(map(str, args.max_dets))!r}")
    except SystemExit as exit_:
        return int(exit_.code or 0)
    runners = {"coco": _run_coco, "voc": _run_voc, "eval": _run_eval,
               "confusion": _run_confusion, "classify": _run_classify,
               "convert": _run_convert, "demo": _run_demo, "report": _run_report,
               "draw": _run_draw}
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            # deteval's own warnings (e.g. a box beyond its image) are messages for the user.
            warnings.simplefilter("always", FormatWarning)
            warnings.simplefilter("always", UndefinedMetricWarning)
            return runners[args.command](args, out, err)
    except BrokenPipeError:  # output piped into `head` and closed: not an error
        return 0
    except _UsageError as error:
        with contextlib.redirect_stderr(err):
            try:
                args.parser.error(str(error))
            except SystemExit as exit_:
                return int(exit_.code or 0)
    except (DetevalError, ValueError, TypeError, OSError) as error:
        _print_warnings(caught, err)
        caught = []
        message = str(error)
        for api, cli in _CLI_WORDS:
            message = message.replace(api, cli)
        print(f"deteval: error: {message}", file=err)
        return 1
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        print("deteval: interrupted", file=err)
        return 130
    finally:
        _print_warnings(caught, err)


def _print_warnings(caught: list, err: TextIO) -> None:
    for warning in caught:
        print(f"deteval: warning: {warning.message}", file=err)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
