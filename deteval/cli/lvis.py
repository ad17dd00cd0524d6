"""``deteval lvis``: LVIS evaluation (lvis-api LVISEval numbers) of a results file."""

from __future__ import annotations

from typing import TextIO

from ._common import _write_and_report
from ._lrp import add_lrp_option, lrp_of, print_lrp
from ._outputs import check_outputs
from ._protocol_diagnostics import (
    add_interval_options,
    add_protocol_slice_options,
    diagnostics_of,
    print_diagnostics,
    resample_threads,
)
from ._shared_options import (
    add_dilation_ratio,
    add_json_output,
    add_matches_output,
    add_per_class,
    check_geometry,
    check_max_dets,
    max_dets_list,
)
from ._table import add_table_options, check_table, write_table_output


def add_parser(commands) -> None:
    """Add the ``lvis`` command to the subparsers ``commands``."""
    lvis = commands.add_parser(
        "lvis", help="LVIS evaluation (federated: APr/APc/APf) of a results file",
        description="LVIS evaluation (lvis-api 0.5.3 LVISEval numbers): the 300 "
        "highest-scoring results per image, detections of categories not verified in "
        "their image skipped, unmatched ones of not-exhaustive categories ignored. Prints "
        "the 13-line summary exactly as lvis-api's print_results does.")
    lvis.add_argument("gt", metavar="GT.json", help="LVIS annotation file (ground truth)")
    lvis.add_argument("dt", metavar="DT.json", help="results file (COCO results format)")
    lvis.add_argument("--iou-type", default="bbox", choices=["bbox", "segm", "boundary"],
                      help="what to compare: bbox, segm (masks) or boundary (boundary IoU "
                      "of the masks, boundary-iou-api's LVIS rule) (default: bbox)")
    add_dilation_ratio(lvis)
    add_max_dets(lvis)
    add_json_output(lvis, help="write stats, summary and per-class table as JSON")
    add_per_class(lvis)
    add_matches_output(lvis)
    add_table_options(lvis)
    add_interval_options(lvis, threads=True)
    add_protocol_slice_options(lvis, records=True)
    add_lrp_option(lvis)
    lvis.set_defaults(parser=lvis)


def add_max_dets(parser) -> None:
    """``--max-dets N``: LVIS's per-image cut, as ``args.lvis_max_dets`` (a list, one number:
    :func:`~._shared_options.check_max_dets`; ``deteval lvis``; ``deteval compare`` has its
    own ``--max-dets``, COCO's three numbers or LVIS's one)."""
    parser.add_argument("--max-dets", type=max_dets_list, default=None, dest="lvis_max_dets",
                        metavar="N", help="results kept per image, across categories "
                        "(default: 300)")


def lvis_options(args) -> dict:
    """The keywords of :func:`~deteval.evaluate_lvis` the options give (``--iou-type``,
    ``--max-dets``, ``--dilation-ratio``)."""
    check_geometry(args.iou_type, dilation_ratio=args.dilation_ratio)
    check_max_dets(args.lvis_max_dets, "lvis", args.iou_type)
    options = {"iou_type": args.iou_type}
    if args.lvis_max_dets is not None:
        options["max_detections"] = args.lvis_max_dets[0]
    if args.dilation_ratio is not None:
        options["dilation_ratio"] = args.dilation_ratio
    return options


class _Printed:
    """The result as ``_report`` prints it: the frequency shown next to each name."""

    def __init__(self, result):
        self.notes, self.summary = result.notes, result.summary
        self._result = result

    def per_class(self) -> list[dict]:
        rows = []
        for row in self._result.per_class():
            row = dict(row, name=f"{row['name']} [{row.pop('frequency')}]", n_crowd=0)
            rows.append(row)
        return rows


def run(args, out: TextIO, err: TextIO) -> int:
    from ..protocols.lvis import evaluate_lvis

    check_outputs(args, files=[("--json", args.json), ("--matches", args.matches),
                               ("--table", args.table)])
    check_table(args)
    from ..diagnostics.bootstrap_lvis import bootstrap_lvis

    bootstrap = resample_threads(args, bootstrap_lvis)
    result = evaluate_lvis(args.gt, args.dt, **lvis_options(args))
    write_table_output(args, result)
    intervals, sliced, extra = diagnostics_of(args, result, bootstrap, records=True)
    lrp_result = lrp_of(args, result, extra)
    _write_and_report(args, result, out, err, printed=_Printed(result), extra=extra)
    print_diagnostics(intervals, sliced, out, err)
    print_lrp(lrp_result, out)
    return 0
