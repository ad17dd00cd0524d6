"""``deteval errors``: TIDE error attribution (and, with ``--lrp``, optimal LRP)."""

from __future__ import annotations

import argparse
from typing import TextIO

from ._common import _write_json
from ._options import _positive_int, _unit_float
from ._outputs import check_outputs
from ._shared_options import add_json_output, add_per_class


def add_parser(commands) -> None:
    """Add the ``errors`` command to the subparsers ``commands``."""
    errors = commands.add_parser(
        "errors", help="TIDE error attribution: what each error type costs in AP",
        description="TIDE error attribution (equal to tidecv 1.0.1 with --rules tidecv): "
        "the dAP of the classification, localisation, both, duplicate, background and "
        "missed errors, and of the false-positive and false-negative oracles. With --lrp, "
        "also optimal LRP (equal to the LRP-Error fork of pycocotools).")
    errors.add_argument("gt", metavar="GT.json", help="COCO instances file (ground truth)")
    errors.add_argument("dt", metavar="DT.json", help="COCO results file (bounding boxes)")
    errors.add_argument("--pos-threshold", type=_unit_float("IoU threshold", open_low=True),
                        default=0.5, metavar="IOU",
                        help="foreground IoU threshold, in (0, 1] (default 0.5)")
    errors.add_argument("--background-threshold", type=_background, default=0.1, metavar="IOU",
                        help="background IoU threshold, in [0, 0.5] (default 0.1)")
    errors.add_argument("--max-detections", dest="tide_max_dets", type=_positive_int,
                        default=100,
                        metavar="N", help="detections kept per image (default 100)")
    errors.add_argument("--rules", choices=("deteval", "tidecv"), default="deteval",
                        help="tidecv: reproduce tidecv's ordering of tied scores in the "
                        "fixed runs (see docs/diagnostics/tide.md)")
    add_per_class(errors, help="also print a table per class")
    errors.add_argument("--lrp", action="store_true",
                        help="also compute optimal LRP, its components and moLRP")
    add_json_output(errors, help="write the numbers as JSON")


def _background(text: str) -> float:
    """``--background-threshold``: in [0, 0.5] (tidecv's rule: below the foreground's)."""
    value = _unit_float("background IoU threshold")(text)
    if value > 0.5:
        raise argparse.ArgumentTypeError(f"expected a background IoU threshold in [0, 0.5]; "
                                         f"got {text!r}")
    return value


def _table(result) -> str:
    names = [row["error"] for row in result.summary()]
    short = {"false_positives": "FP", "false_negatives": "FN"}
    head = "  ".join(f"{short.get(n, n):>6}" for n in names)
    values = "  ".join(f"{row['dap']:6.2f}" for row in result.summary())
    counts = "  ".join(f"{'' if row['count'] is None else row['count']:>6}"
                       for row in result.summary())
    return (f"TIDE bbox AP @ {result.settings['pos_threshold']:.2f}: {result.ap:.2f}\n"
            f"  type  {head}\n   dAP  {values}\n count  {counts}")


def _class_table(result) -> str:
    lines = [f"{'class':<20} {'AP':>6}  " + "  ".join(f"{n:>6}" for n in result.error_names)]
    for row in result.per_class():
        cells = "  ".join("" .rjust(6) if row[f"dap_{n}"] is None else f"{row[f'dap_{n}']:6.2f}"
                          for n in result.error_names)
        ap = "     -" if row["ap"] is None else f"{row['ap']:6.2f}"
        lines.append(f"{row['name'][:20]:<20} {ap}  {cells}")
    return "\n".join(lines)


def _lrp_text(result) -> str:
    return "\n".join(f"{name:<14} {value:.3f}" for name, value in result.summary().items())


def run(args, out: TextIO, err: TextIO) -> int:
    from .._inputs import load_pair
    from ..diagnostics.lrp import lrp
    from ..diagnostics.tide import error_attribution

    check_outputs(args, files=[("--json", args.json)])
    pair = load_pair(args.gt, args.dt)     # the one resolution rule (docs/resolution.md)
    dataset, detections = pair.dataset, pair.detections
    result = error_attribution(dataset, detections, pos_threshold=args.pos_threshold,
                               background_threshold=args.background_threshold,
                               max_dets=args.tide_max_dets, rules=args.rules)
    payload = {"tide": result.to_dict()}
    lrp_result = None
    if args.lrp:
        lrp_result = lrp(dataset, detections, iou_threshold=args.pos_threshold)
        payload["lrp"] = lrp_result.to_dict()
    if args.json:   # files first: written whatever happens to stdout
        _write_json(args.json, payload)
    print(_table(result), file=out)
    if args.per_class:
        print(file=out)
        print(_class_table(result), file=out)
    if lrp_result is not None:
        print(file=out)
        print(_lrp_text(lrp_result), file=out)
    return 0
