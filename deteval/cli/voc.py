"""``deteval voc``: Pascal VOC evaluation (AP per class, mAP) of detections in any format."""

from __future__ import annotations

from typing import TextIO

from ._common import _report_voc, _UsageError, _voc_json, _voc_preset, _write_json
from ._lrp import add_lrp_option, lrp_of, print_lrp
from ._options import _add_input_options, _read_inputs
from ._outputs import check_outputs
from ._protocol_diagnostics import (
    add_interval_options,
    add_protocol_slice_options,
    diagnostics_of,
    print_diagnostics,
)
from ._shared_options import (
    add_iou_thresholds,
    add_json_output,
    add_threads,
    check_iou_repeats,
    check_needs_ci,
)
from ._table import add_table_options, check_table, write_table_output
from .check import run_checks


def add_parser(commands) -> None:
    """Add the ``voc`` command to the subparsers ``commands``."""
    from .._format_names import DETECTION_FORMATS, GT_FORMATS

    voc = commands.add_parser(
        "voc", help="Pascal VOC evaluation (AP per class, mAP) of detections in any format",
        description="Pascal VOC evaluation: the devkit's AP per class and mAP (VOC2012: "
        "all-points AP; VOC2007: 11-point AP; IoU >= 0.5, inclusive pixels), or "
        "detectron2's port with --detectron2. Ground truth and detections may be in any "
        "supported format (guessed from the paths unless --gt-format/--dt-format say).")
    voc.add_argument("--year", choices=["2007", "2012"], default="2012",
                     help="devkit year: 2007 = 11-point AP, 2012 = all-points AP "
                     "(default: 2012)")
    add_voc_options(voc)
    add_json_output(voc, help="write mAP, per-class table, summary and settings as JSON")
    add_table_options(voc)
    _add_input_options(voc, GT_FORMATS, DETECTION_FORMATS)
    add_threads(voc)
    add_lrp_option(voc)
    add_interval_options(voc)
    add_protocol_slice_options(voc, records=True, size=False)
    voc.set_defaults(parser=voc)


def add_voc_options(parser) -> None:
    """``--detectron2`` and ``--iou-thresholds``: the VOC settings besides the year
    (``deteval voc``, ``deteval eval`` and ``deteval compare`` with ``--protocol
    voc2007|voc2012``); :func:`voc_settings` reads them."""
    add_detectron2(parser)
    add_iou_thresholds(parser, help="IoU threshold(s) (default: the preset's)")


def add_detectron2(parser) -> None:
    """``--detectron2``: detectron2's VOC preset instead of the devkit's (alone: ``deteval
    calibration``, whose one threshold is ``--iou-threshold``)."""
    parser.add_argument("--detectron2", action="store_true",
                        help="detectron2's PascalVOCDetectionEvaluator: IoU > t for t = "
                        "0.50:0.05:0.95, detections rounded as its result files")


def voc_settings(year: str, *, detectron2: bool,
                 iou_thresholds: list[float] | None) -> tuple[str, dict]:
    """The preset's name (``VOC2007``, ``DETECTRON2_VOC2012``, ...) and the keywords of
    :func:`~deteval.evaluate_voc` (``params=``, ``iou_thresholds=``) of ``--detectron2`` and
    ``--iou-thresholds`` (None: the preset's; a threshold given twice is a usage error:
    :func:`~._shared_options.check_iou_repeats`)."""
    check_iou_repeats(iou_thresholds, f"voc{year}")
    preset = f"{'DETECTRON2_' if detectron2 else ''}VOC{year}"
    options = {"params": _voc_preset(preset)}
    if iou_thresholds is not None:
        options["iou_thresholds"] = tuple(iou_thresholds)
    return preset, options


def run(args, out: TextIO, err: TextIO) -> int:
    from functools import partial

    from ..diagnostics.bootstrap_voc import bootstrap_voc
    from ..protocols.voc import evaluate_voc

    check_outputs(args, files=[("--json", args.json), ("--table", args.table)])
    check_table(args)
    check_needs_ci(args)
    preset, options = voc_settings(args.year, detectron2=args.detectron2,
                                   iou_thresholds=args.iou_thresholds)
    if args.slices:   # an object property: refused before anything is read
        from ..diagnostics.slices_protocols import check_keys

        check_keys(args.slices, "voc")
    inputs = _read_inputs(args, threads=args.threads)
    if args.slices and not args.slice_file and inputs.gt_format != "coco":
        raise _UsageError(f"--slice reads image keys of a COCO ground truth's image records; "
                          f"{args.gt} is read as {inputs.gt_format}: give the tags with "
                          "--slice-file (by image id or file name)")
    result = evaluate_voc(inputs.dataset, inputs.detections, threads=args.threads, **options)
    hazards = run_checks(args, inputs, err)
    # Image keys of the ground truth's records when it is a COCO file (other formats: tags).
    intervals, sliced, extra = diagnostics_of(args, result,
                                              partial(bootstrap_voc, threads=args.threads),
                                              records=inputs.gt_format == "coco")
    lrp_result = lrp_of(args, result, extra)
    write_table_output(args, result)   # after what can fail: a failed run writes nothing
    if args.json:   # files first: written whatever happens to stdout
        _write_json(args.json, {**_voc_json(result, preset), "warnings": hazards, **extra})
    _report_voc(result, out, err)
    print_diagnostics(intervals, sliced, out, err)
    print_lrp(lrp_result, out)
    return 0
