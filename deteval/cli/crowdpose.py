"""``deteval crowdpose``: CrowdPose keypoint evaluation (xtcocotools ``keypoints_crowd``)."""

from __future__ import annotations

from typing import TextIO

from ._common import _write_and_report
from ._lrp import add_lrp_option, lrp_of, print_lrp
from ._options import _number_list
from ._outputs import check_outputs
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
    """Add the ``crowdpose`` command to the subparsers ``commands``."""
    crowdpose = commands.add_parser(
        "crowdpose", help="CrowdPose keypoint evaluation (AP easy / medium / hard)",
        description="CrowdPose keypoint evaluation (xtcocotools 1.14.3 'keypoints_crowd' "
        "numbers, as mmpose runs it): 14 keypoints, OKS on h * w * 0.53 of each person's "
        "box, 20 results per image, and AP on the easy / medium / hard images by their "
        "crowdIndex. Prints the 9-line summary exactly as xtcocotools does.")
    crowdpose.add_argument("gt", metavar="GT.json",
                           help="CrowdPose annotation file (images carry crowdIndex)")
    crowdpose.add_argument("dt", metavar="DT.json", help="keypoint results (COCO format)")
    add_crowdpose_options(crowdpose)
    add_json_output(crowdpose, help="write stats, summary and per-class table as JSON")
    add_per_class(crowdpose)
    add_matches_output(crowdpose)
    add_table_options(crowdpose)
    add_interval_options(crowdpose, threads=True)
    add_protocol_slice_options(crowdpose, records=True)
    add_lrp_option(crowdpose)
    crowdpose.set_defaults(parser=crowdpose)


def add_crowdpose_options(parser, *, sigmas_default: str = "CrowdPose's 14") -> None:
    """``--kpt-sigmas`` and ``--use-area``: the OKS of a CrowdPose evaluation (``deteval
    crowdpose``, ``deteval compare --protocol crowdpose``, ``deteval calibration``, where
    the sigmas serve COCO keypoints too: ``sigmas_default`` says the defaults);
    :func:`crowdpose_options` reads them."""
    parser.add_argument("--kpt-sigmas", type=_number_list(float),
                        metavar="'0.079 0.079 ...'",
                        help=f"OKS sigmas, one per keypoint (default: {sigmas_default})")
    add_use_area(parser)


def add_use_area(parser) -> None:
    """``--use-area``: CrowdPose's OKS scaled by the file's areas (``deteval crowdpose``,
    ``compare``, ``calibration`` through :func:`add_crowdpose_options`; ``deteval errors``
    alone, whose sigmas are the geometry's ``--kpt-sigmas``)."""
    parser.add_argument("--use-area", action="store_true",
                        help="scale OKS by the file's area instead of h * w * 0.53 "
                        "(xtcocotools' use_area=True)")


def crowdpose_options(args) -> dict:
    """The keywords of :func:`~deteval.evaluate_crowdpose` the options give."""
    options = {"use_area": args.use_area}
    if args.kpt_sigmas is not None:
        options["keypoint_sigmas"] = tuple(args.kpt_sigmas)
    return options


def run(args, out: TextIO, err: TextIO) -> int:
    from ..protocols.crowdpose import evaluate_crowdpose

    check_outputs(args, files=[("--json", args.json), ("--matches", args.matches),
                               ("--table", args.table)])
    check_table(args)
    from ..diagnostics.bootstrap_crowdpose import bootstrap_crowdpose

    bootstrap = resample_threads(args, bootstrap_crowdpose)
    result = evaluate_crowdpose(args.gt, args.dt, **crowdpose_options(args))
    write_table_output(args, result)
    intervals, sliced, extra = diagnostics_of(args, result, bootstrap, records=True)
    lrp_result = lrp_of(args, result, extra)
    _write_and_report(args, result, out, err, extra=extra)
    print_diagnostics(intervals, sliced, out, err)
    print_lrp(lrp_result, out)
    return 0
