"""``deteval eval``: read ground truth and detections in any format, run one protocol."""

from __future__ import annotations

from typing import TextIO

from ._common import (
    _report,
    _report_voc,
    _UsageError,
    _voc_json,
    _voc_preset,
    _write_json,
)
from ._options import _add_input_options, _read_inputs
from ._outputs import check_outputs
from ._shared_options import add_json_output, add_per_class, add_protocol, add_threads
from ._table import add_table_options, check_table, write_table_output
from .check import run_checks


def add_parser(commands) -> None:
    """Add the ``eval`` command to the subparsers ``commands``."""
    from .._format_names import DETECTION_FORMATS, GT_FORMATS

    eval_ = commands.add_parser(
        "eval", help="read ground truth and detections in any format, run one protocol",
        description="The general entry: read ground truth and detections in any supported "
        "format (guessed from the paths unless --gt-format/--dt-format say) and evaluate "
        "them with the COCO protocol (the output of `deteval coco`) or a VOC devkit preset "
        "(the output of `deteval voc`).")
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
    add_table_options(eval_)
    _add_input_options(eval_, GT_FORMATS, DETECTION_FORMATS)
    add_threads(eval_)
    eval_.set_defaults(parser=eval_)


def run(args, out: TextIO, err: TextIO) -> int:
    check_outputs(args, files=[("--json", args.json), ("--table", args.table)])
    check_table(args)
    from ..errors import FormatError

    if args.iou_type != "bbox" and args.protocol != "coco":
        raise _UsageError(f"--iou-type {args.iou_type} needs --protocol coco")
    try:
        inputs = _read_inputs(args, repair_polygons=args.repair_polygons)
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

        result = evaluate_coco(dataset, detections, iou_type=args.iou_type,
                               threads=args.threads)
        hazards = run_checks(args, inputs, err)
        write_table_output(args, result)
        if args.json:   # files first: written whatever happens to stdout
            payload = result.to_dict()
            payload["timings"] = result.timings
            payload["warnings"] = hazards
            _write_json(args.json, payload)
        _report(result, out, err, per_class=args.per_class)
        return 0
    from ..protocols.voc import evaluate_voc

    preset = args.protocol.upper()
    result = evaluate_voc(dataset, detections, params=_voc_preset(preset),
                          threads=args.threads)
    hazards = run_checks(args, inputs, err)
    write_table_output(args, result)
    if args.json:   # files first: written whatever happens to stdout
        _write_json(args.json, {**_voc_json(result, preset), "warnings": hazards})
    _report_voc(result, out, err)
    return 0
