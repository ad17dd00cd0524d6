"""``deteval coco``: COCO evaluation of a results file against an instances file."""

from __future__ import annotations

from typing import TextIO

from ._common import _check_output_paths, _report, _write_json
from ._options import _add_coco_options, _add_resolution_options
from .check import checks_of


def add_parser(commands) -> None:
    """Add the ``coco`` command to the subparsers ``commands``."""
    coco = commands.add_parser(
        "coco", help="COCO evaluation of a results file against an instances file",
        description="COCO evaluation (pycocotools COCOeval numbers). Prints the 12-line "
        "summary exactly as pycocotools does.")
    coco.add_argument("gt", metavar="GT.json", help="COCO instances file (ground truth)")
    coco.add_argument("dt", metavar="DT.json", help="COCO results file (detections)")
    _add_coco_options(coco)
    _add_resolution_options(coco)


def run(args, out: TextIO, err: TextIO) -> int:
    from ..errors import FormatError
    from ..protocols.coco import evaluate_coco

    _check_output_paths(args.json, args.matches)

    options = {"iou_type": args.iou_type}
    if getattr(args, "dilation_ratio", None) is not None:
        options["dilation_ratio"] = args.dilation_ratio
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
        result = evaluate_coco(args.gt, args.dt, match_by=args.match_by or "auto", **options)
    except FormatError as error:
        raise FormatError(error.message.replace("pass invalid='repair'",
                                                "pass --repair-polygons"),
                          source=error.source, record=error.record, hint=error.hint,
                          cli_hint=error.cli_hint) from None
    hazards = [] if args.no_check else checks_of(result.gt, result.detections, err,
                                                  dt_format="coco")
    _report(result, out, err, per_class=args.per_class)
    if args.json:
        payload = result.to_dict()
        payload["timings"] = result.timings
        payload["warnings"] = hazards
        _write_json(args.json, payload)
    if args.matches:
        result.matches.to_csv(args.matches)
    return 0
