"""``deteval eval``: read ground truth and detections in any format, run one protocol."""

from __future__ import annotations

from functools import partial
from typing import TextIO

from ._common import _report_voc, _UsageError, _voc_json, _write_json
from ._options import _add_input_options, _read_inputs
from ._outputs import check_outputs
from ._shared_options import (
    add_json_output,
    add_per_class,
    add_protocol,
    add_threads,
    check_iou_repeats,
    check_needs_ci,
)
from ._table import add_table_options, check_table, write_table_output
from .check import run_checks


def add_parser(commands) -> None:
    """Add the ``eval`` command to the subparsers ``commands``."""
    from .._format_names import DETECTION_FORMATS, GT_FORMATS
    from .compare import add_bootstrap_options
    from .voc import add_voc_options

    eval_ = commands.add_parser(
        "eval", help="read ground truth and detections in any format, run one protocol",
        description="The general entry: read ground truth and detections in any supported "
        "format (guessed from the paths unless --gt-format/--dt-format say) and evaluate "
        "them with the COCO protocol (the output of `deteval coco`) or a VOC preset, the "
        "devkit's or detectron2's (the output of `deteval voc`); --ci adds the "
        "image-bootstrap intervals of those commands.")
    add_protocol(eval_, default=None,
                 help="coco: pycocotools COCOeval; voc2007/voc2012: the devkits")
    add_json_output(eval_, help="also write the results as JSON")
    add_per_class(eval_, help="coco: print the per-class table (the VOC summary always has it)")
    eval_.add_argument("--iou-type", choices=["bbox", "polygon"], default="bbox",
                       help="coco: compare boxes, or the exact outlines of formats that "
                       "carry polygons (DOTA quadrilaterals) (default: bbox)")
    eval_.add_argument("--repair-polygons", action="store_true",
                       help="dota: repair self-intersecting quadrilaterals with make_valid "
                       "instead of refusing them")
    add_voc_options(eval_.add_argument_group("VOC settings (--protocol voc2007|voc2012; "
                                             "--iou-thresholds: coco too)"))
    add_table_options(eval_)
    _add_input_options(eval_, GT_FORMATS, DETECTION_FORMATS)
    add_threads(eval_)
    add_bootstrap_options(eval_.add_argument_group("confidence intervals"),
                          resamples_flag="--ci", score_default=None)
    eval_.set_defaults(parser=eval_)


def _check_options(args) -> None:
    """The options of the other protocol: usage errors (before anything is read)."""
    if args.iou_type != "bbox" and args.protocol != "coco":
        raise _UsageError(f"--iou-type {args.iou_type} needs --protocol coco")
    if args.score_threshold is not None and args.protocol != "coco":
        raise _UsageError("--score-threshold is F1's threshold, a COCO number: it needs "
                          "--protocol coco")
    if args.detectron2 and args.protocol == "coco":
        raise _UsageError("--detectron2 needs --protocol voc2007 or voc2012")
    check_iou_repeats(args.iou_thresholds, args.protocol)


def run(args, out: TextIO, err: TextIO) -> int:
    check_outputs(args, files=[("--json", args.json), ("--table", args.table)])
    check_table(args)
    from ..errors import FormatError

    _check_options(args)
    check_needs_ci(args)
    try:
        inputs = _read_inputs(args, repair_polygons=args.repair_polygons,
                              threads=args.threads)
    except FormatError as error:
        raise FormatError(error.message.replace("pass invalid='repair'",
                                                "pass --repair-polygons"),
                          source=error.source, record=error.record, hint=error.hint,
                          cli_hint=error.cli_hint) from None
    dataset, detections = inputs.dataset, inputs.detections
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
        from ..protocols.coco import evaluate_coco
        from .coco import _intervals, _output

        options = ({} if args.iou_thresholds is None
                   else {"iou_thresholds": tuple(args.iou_thresholds)})
        result = evaluate_coco(dataset, detections, iou_type=args.iou_type,
                               threads=args.threads, **options)
        hazards = run_checks(args, inputs, err)
        if args.score_threshold is None:    # F1's default threshold, as `deteval coco --ci`
            args.score_threshold = 0.5
        intervals = _intervals(args, result)
        write_table_output(args, result)
        _output(args, result, hazards, out, err, intervals=intervals)
        return 0
    from ..diagnostics.bootstrap_voc import bootstrap_voc
    from ..protocols.voc import evaluate_voc
    from ._protocol_diagnostics import intervals_of, print_intervals
    from .voc import voc_settings

    preset, options = voc_settings(args.protocol[3:], detectron2=args.detectron2,
                                   iou_thresholds=args.iou_thresholds)
    result = evaluate_voc(dataset, detections, threads=args.threads, **options)
    hazards = run_checks(args, inputs, err)
    intervals = intervals_of(args, result, partial(bootstrap_voc, threads=args.threads))
    write_table_output(args, result)
    if args.json:   # files first: written whatever happens to stdout
        extra = {} if intervals is None else {"intervals": intervals.to_dict()}
        _write_json(args.json, {**_voc_json(result, preset), "warnings": hazards, **extra})
    _report_voc(result, out, err)
    print_intervals(intervals, out)
    return 0
