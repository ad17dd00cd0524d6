"""``deteval lvis``: LVIS evaluation (lvis-api LVISEval numbers) of a results file."""

from __future__ import annotations

from typing import TextIO

from ._common import _report, _write_json
from ._options import _positive_int
from ._outputs import check_outputs, write_output


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
    lvis.add_argument("--iou-type", default="bbox", choices=["bbox", "segm"],
                      help="what to compare: bbox or segm (masks) (default: bbox)")
    lvis.add_argument("--max-dets", type=_positive_int, default=300, dest="per_image",
                      metavar="N", help="results kept per image, across categories "
                      "(default: 300)")
    lvis.add_argument("--json", metavar="OUT.json",
                      help="write stats, summary and per-class table as JSON")
    lvis.add_argument("--per-class", action="store_true", help="print the per-class table")
    lvis.add_argument("--matches", metavar="OUT.csv",
                      help="write the match table (area 'all') as CSV")
    lvis.set_defaults(parser=lvis)


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

    check_outputs(args, files=[("--json", args.json), ("--matches", args.matches)])
    result = evaluate_lvis(args.gt, args.dt, iou_type=args.iou_type,
                           max_detections=args.per_image)
    # Files first: what the user asked for is written whatever happens to stdout.
    if args.json:
        payload = result.to_dict()
        payload["timings"] = result.timings
        _write_json(args.json, payload)
    if args.matches:
        write_output(args.matches, result.matches.to_csv)
    _report(_Printed(result), out, err, per_class=args.per_class)
    return 0
