"""``deteval openimages``: Open Images challenge detection evaluation (TF OD API numbers)."""

from __future__ import annotations

from typing import TextIO

from ._common import _write_json
from ._lrp import add_lrp_option, lrp_of, print_lrp
from ._outputs import check_outputs, write_output
from ._protocol_diagnostics import (
    add_interval_options,
    add_protocol_slice_options,
    diagnostics_of,
    print_diagnostics,
    resample_threads,
)
from ._shared_options import add_json_output, add_matches_output, add_per_class
from ._table import add_table_options, check_table, write_table_output


def add_parser(commands) -> None:
    """Add the ``openimages`` command to the subparsers ``commands``."""
    oid = commands.add_parser(
        "openimages", help="Open Images challenge detection evaluation (AP@0.5, group-of, "
        "verified labels, hierarchy)",
        description="Open Images challenge detection metric, equal to the TensorFlow Object "
        "Detection API's oid_challenge_evaluation: IoU 0.5, group-of boxes counted once, "
        "detections of classes not verified in their image skipped, ground truth expanded "
        "along the class hierarchy. Prints mAP; --per-class adds one line per class.")
    oid.add_argument("gt", metavar="GT_BOXES.csv",
                     help="ground-truth boxes (ImageID, LabelName, XMin, XMax, YMin, YMax, "
                     "IsGroupOf)")
    oid.add_argument("dt", metavar="DT.csv",
                     help="detections (ImageID, LabelName, Score, XMin, XMax, YMin, YMax)")
    add_openimages_inputs(oid)
    add_json_output(oid, help="write mAP and per-class AP as JSON")
    add_per_class(oid)
    add_matches_output(oid, help="write the match table as CSV")
    add_table_options(oid)
    add_interval_options(oid, threads=True)
    add_protocol_slice_options(oid, records=False)
    add_lrp_option(oid)
    oid.set_defaults(parser=oid)


def add_openimages_inputs(parser, *, classes: bool = True) -> None:
    """``--labels``, ``--hierarchy``, ``--classes`` and ``--expand-detections``: the inputs
    of an Open Images evaluation besides the boxes and the detections (``deteval
    openimages``, ``deteval compare --protocol openimages``); ``classes=False``: a parser
    that has its own ``--classes`` (``deteval errors`` and ``deteval report``, whose reader
    option it is)."""
    parser.add_argument("--labels", metavar="IMAGE_LABELS.csv",
                        help="verified image-level labels (ImageID, LabelName, Confidence "
                        "1/0)")
    parser.add_argument("--hierarchy", metavar="H.json",
                        help="class hierarchy (LabelName / Subcategory): expands boxes and "
                        "labels")
    if classes:
        parser.add_argument("--classes", metavar="FILE",
                            help="label map: one LabelName per line (default: every label "
                            "seen)")
    parser.add_argument("--expand-detections", action="store_true",
                        help="also give detections to ancestor classes (not the official "
                        "rule)")


def openimages_classes(args) -> list[str] | None:
    """The label map of ``--classes`` (None without it), after checking that
    ``--expand-detections`` comes with ``--hierarchy``."""
    from ..errors import FormatError

    if args.expand_detections and not args.hierarchy:
        from ._common import _UsageError

        raise _UsageError("--expand-detections needs --hierarchy H.json (the classes a "
                          "detection is expanded to)")
    if not args.classes:
        return None
    from ..io._json import read_bytes

    try:    # a regular file only (a FIFO would block), read whole
        lines = read_bytes(args.classes, what="classes").decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as error:
        raise FormatError(f"not UTF-8 text ({error.reason} at byte {error.start})",
                          source=args.classes) from None
    classes = [line.strip() for line in lines if line.strip()]
    if not classes:
        raise FormatError("no class names (one LabelName per line)", source=args.classes)
    return classes


def run(args, out: TextIO, err: TextIO) -> int:
    from ..protocols.openimages import evaluate_openimages

    check_outputs(args, files=[("--json", args.json), ("--matches", args.matches),
                               ("--table", args.table)])
    check_table(args)
    from ..diagnostics.bootstrap_openimages import bootstrap_openimages

    bootstrap = resample_threads(args, bootstrap_openimages)
    classes = openimages_classes(args)
    result = evaluate_openimages(args.gt, args.dt, image_labels=args.labels,
                                 hierarchy=args.hierarchy, classes=classes,
                                 expand_detections=args.expand_detections)
    intervals, sliced, extra = diagnostics_of(args, result, bootstrap, records=False)
    lrp_result = lrp_of(args, result, extra)
    # Files first: what the user asked for is written whatever happens to stdout.
    if args.json:
        _write_json(args.json, dict(result.to_dict(), **extra))
    if args.matches:
        write_output(args.matches, result.matches.to_csv)
    write_table_output(args, result)
    for note in result.notes:
        print(f"deteval: note: {note}", file=err)
    print(result.summary().splitlines()[0], file=out)
    if args.per_class:
        width = max([len(c) for c in result.classes] + [5])
        print(file=out)
        print(f"{'class':<{width}}  {'AP@0.5':>8}  {'num_gt':>7}  {'tp':>6}  {'fp':>6}", file=out)
        for row in result.per_class():
            ap = "nan" if row["ap"] is None else f"{row['ap']:.4f}"
            print(f"{row['class']:<{width}}  {ap:>8}  {row['num_gt']:>7g}  {row['num_tp']:>6}  "
                  f"{row['num_fp']:>6}", file=out)
    print_diagnostics(intervals, sliced, out, err)
    print_lrp(lrp_result, out)
    return 0
