"""``deteval errors``: TIDE error attribution (and, with ``--lrp``, optimal LRP)."""

from __future__ import annotations

import argparse
from typing import TextIO

from ._common import _UsageError, _write_json
from ._options import _add_input_options, _guess_format, _positive_int, _unit_float
from ._outputs import check_outputs
from ._shared_options import add_json_output, add_per_class, add_protocol


def add_parser(commands) -> None:
    """Add the ``errors`` command to the subparsers ``commands``."""
    from .._format_names import DETECTION_FORMATS, GT_FORMATS
    from .crowdpose import add_use_area
    from .draw import add_geometry_options
    from .openimages import add_openimages_inputs
    from .voc import add_detectron2

    errors = commands.add_parser(
        "errors", help="TIDE error attribution: what each error type costs in AP",
        description="TIDE error attribution (equal to tidecv 1.0.1 with --rules tidecv): "
        "the dAP of the classification, localisation, both, duplicate, background and "
        "missed errors, and of the false-positive and false-negative oracles, for every "
        "--iou-type (the evaluation's similarity) and, with --protocol voc2007|voc2012|"
        "lvis|crowdpose|openimages, with that protocol's matching and AP (with no error "
        "fixed, TIDE's AP is the protocol's AP at the threshold). Ground truth and "
        "detections may be in any supported format (guessed from the paths unless "
        "--gt-format/--dt-format say). "
        "With --lrp, also optimal LRP (equal to the LRP-Error fork of pycocotools).")
    errors.add_argument("--pos-threshold", type=_unit_float("IoU threshold", open_low=True),
                        default=0.5, metavar="IOU",
                        help="foreground threshold of the similarity (IoU, OKS, ...), in "
                        "(0, 1] (default 0.5)")
    errors.add_argument("--background-threshold", type=_background, default=0.1, metavar="IOU",
                        help="background threshold, in [0, 0.5] (default 0.1)")
    errors.add_argument("--max-detections", dest="tide_max_dets", type=_positive_int,
                        default=None, metavar="N", help="detections kept per image "
                        "(default: 100 with --protocol coco, as tidecv; all with VOC; 300 with "
                        "LVIS; CrowdPose: 20 per image and class)")
    errors.add_argument("--rules", choices=("deteval", "tidecv"), default="deteval",
                        help="tidecv: reproduce tidecv's ordering of tied scores in the "
                        "fixed runs (see docs/diagnostics/tide.md); --protocol coco only")
    add_protocol(errors, default="coco", extra=("lvis", "crowdpose", "openimages"),
                 help="whose matching and AP: coco (tidecv's, the default), voc2007 (devkit, "
                 "11-point AP), voc2012 (devkit, all-points AP; VOC compares boxes with the +1 "
                 "pixel IoU, difficult objects ignored), lvis (lvis-api's federated rules and "
                 "AP; GT an LVIS file), crowdpose (xtcocotools' CrowdPose keypoints; implies "
                 "--iou-type keypoints) or openimages (the challenge's match and AP at IoU 0.5; "
                 "GT the challenge box CSV, DT its prediction CSV, with --labels, --hierarchy, "
                 "--classes, --expand-detections)")
    add_geometry_options(errors, what="what to compare: bbox, segm (mask IoU, tidecv's mask "
                         "mode), boundary (boundary IoU), keypoints (OKS), polygon, rotated "
                         "('rbox'); COCO files for all but bbox (default: bbox)")
    add_use_area(errors.add_argument_group("CrowdPose settings (--protocol crowdpose)"))
    add_detectron2(errors.add_argument_group("VOC settings (--protocol voc2007|voc2012)"))
    add_per_class(errors, help="also print a table per class")
    errors.add_argument("--lrp", action="store_true",
                        help="also compute optimal LRP, its components and moLRP")
    add_json_output(errors, help="write the numbers as JSON")
    _add_input_options(errors, GT_FORMATS, DETECTION_FORMATS)
    add_openimages_inputs(errors.add_argument_group("Open Images inputs (--protocol "
                                                    "openimages; --classes is its label map)"),
                          classes=False)
    # --iou-type not given is None: keypoints with --protocol crowdpose, bbox otherwise
    errors.set_defaults(parser=errors, iou_type=None)


def _background(text: str) -> float:
    """``--background-threshold``: in [0, 0.5] (tidecv's rule: below the foreground's)."""
    value = _unit_float("background IoU threshold")(text)
    if value > 0.5:
        raise argparse.ArgumentTypeError(f"expected a background IoU threshold in [0, 0.5]; "
                                         f"got {text!r}")
    return value


#: How the table names each VOC protocol's AP.
_AP_NAMES = {"voc2007": "VOC2007 11-point", "voc2012": "VOC2012 all-points",
             "lvis": "LVIS", "crowdpose": "CrowdPose", "openimages": "Open Images challenge"}


def _table(result) -> str:
    names = [row["error"] for row in result.summary()]
    short = {"false_positives": "FP", "false_negatives": "FN"}
    head = "  ".join(f"{short.get(n, n):>6}" for n in names)
    values = "  ".join(f"{row['dap']:6.2f}" for row in result.summary())
    counts = "  ".join(f"{'' if row['count'] is None else row['count']:>6}"
                       for row in result.summary())
    settings = result.settings
    protocol = "" if settings["protocol"] == "coco" else f" ({_AP_NAMES[settings['protocol']]})"
    from .._threshold_labels import threshold_label

    return (f"TIDE {settings['iou_type']} AP @ {threshold_label(settings['pos_threshold'])}"
            f"{protocol}: "
            f"{result.ap:.2f}\n"
            f"  type  {head}\n   dAP  {values}\n count  {counts}")


def _class_table(result) -> str:
    lines = [f"{'class':<20} {'AP':>6}  " + "  ".join(f"{n:>6}" for n in result.error_names)]
    for row in result.per_class():
        cells = "  ".join("" .rjust(6) if row[f"dap_{n}"] is None else f"{row[f'dap_{n}']:6.2f}"
                          for n in result.error_names)
        ap = "     -" if row["ap"] is None else f"{row['ap']:6.2f}"
        lines.append(f"{row['name'][:20]:<20} {ap}  {cells}")
    return "\n".join(lines)


def _lrp_options(args, options: dict) -> dict:
    """The geometry keywords ``--lrp`` passes to :func:`~deteval.diagnostics.lrp.lrp`."""
    if args.protocol != "coco":
        raise _UsageError(f"--lrp here is LRP of the COCO protocol; for the {args.protocol} "
                          f"protocol's own LRP run `deteval {args.protocol.rstrip('0123456789')} "
                          f"--lrp`")
    # The settings the IoU type reads (the library refuses the others given: check_geometry
    # has refused them as flags; None is not passed).
    reads = {"iou_type": True, "keypoint_sigmas": args.iou_type == "keypoints",
             "dilation_ratio": args.iou_type == "boundary"}
    return {name: value for name, value in options.items()
            if reads.get(name, True) and value is not None}


def _lrp_text(result) -> str:
    return "\n".join(f"{name:<14} {value:.3f}" for name, value in result.summary().items())


#: The reader options (dest, flag) ``--protocol lvis`` does not read: the LVIS files are
#: read by :func:`~deteval.io.lvis.read_lvis` as they are.
_NOT_LVIS = (("gt_format", "--gt-format"), ("dt_format", "--dt-format"),
             ("classes", "--classes"), ("images", "--images"), ("one_based", "--one-based"),
             ("gt_box_format", "--gt-box-format"), ("names", "--names"),
             ("box_format", "--box-format"), ("match_by", "--match-by"))


def _refuse_lvis_readers(args) -> None:
    """An input option given with ``--protocol lvis``, which reads the LVIS files itself
    (the option would be ignored): a usage error."""
    given = [flag for dest, flag in _NOT_LVIS if getattr(args, dest, None) not in (None, False)]
    if given:
        raise _UsageError(f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not "
                          "apply to --protocol lvis (GT is an LVIS file, DT an LVIS results "
                          "file, read as they are)")


def _lvis_inputs(args):
    """``--protocol lvis``: the LVIS ground truth and the detections, read as
    :func:`~deteval.diagnostics.tide.error_attribution` reads the files, and the notes
    ``deteval lvis`` gives on what lvis-api's selection leaves out (the same rule:
    :func:`~deteval.protocols.lvis.selection_notes` at the ``--max-detections`` cut)."""
    from .._similarity import read_as
    from ..io.coco import read_coco_results
    from ..protocols.lvis import LVIS, lvis_ground_truth, selection_notes

    reader = read_as(args.iou_type)
    lvis = lvis_ground_truth(args.gt, reader, caller="protocol 'lvis'")
    detections = read_coco_results(args.dt, lvis.dataset, iou_type=reader)
    notes = selection_notes(lvis, detections,
                            max_detections=args.tide_max_dets or LVIS.max_detections)
    return lvis, detections, notes


#: The reader options ``--protocol openimages`` does not read (the challenge CSVs are read
#: as they are; ``--classes`` is its label map).
_NOT_OPENIMAGES = tuple(option for option in _NOT_LVIS if option[0] != "classes")
#: The Open Images inputs, which no other protocol reads.
_OPENIMAGES_ONLY = (("labels", "--labels"), ("hierarchy", "--hierarchy"),
                    ("expand_detections", "--expand-detections"))


def _openimages_inputs(args) -> dict:
    """The keywords ``--protocol openimages`` passes to :func:`error_attribution`; a usage
    error for a reader option it would ignore, or for an Open Images input without it."""
    from .openimages import openimages_classes

    if args.protocol != "openimages":
        given = [flag for dest, flag in _OPENIMAGES_ONLY if getattr(args, dest, None)]
        if given:
            raise _UsageError(f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} "
                              "--protocol openimages")
        return {}
    if args.pos_threshold != 0.5:
        raise _UsageError(f"--pos-threshold: protocol 'openimages' matches at IoU 0.5 only "
                          f"(the challenge's threshold); got {args.pos_threshold}")
    if args.tide_max_dets is not None:
        raise _UsageError("--max-detections does not apply to --protocol openimages (the "
                          "challenge keeps 10000 detections per image and class)")
    given = [flag for dest, flag in _NOT_OPENIMAGES
             if getattr(args, dest, None) not in (None, False)]
    if given:
        raise _UsageError(f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not "
                          "apply to --protocol openimages (GT the challenge box CSV, DT its "
                          "prediction CSV, read as they are)")
    return {"image_labels": args.labels, "hierarchy": args.hierarchy,
            "classes": openimages_classes(args), "expand_detections": args.expand_detections}


def run(args, out: TextIO, err: TextIO) -> int:
    from ..diagnostics._tide_rules import check_protocol
    from ..diagnostics.lrp import lrp
    from ..diagnostics.tide import error_attribution
    from .check import checks_of, run_checks
    from .draw import geometry, read_shapes

    check_outputs(args, files=[("--json", args.json)])
    if args.iou_type is None:       # (an explicit --iou-type bbox is crowdpose's error)
        args.iou_type = "keypoints" if args.protocol == "crowdpose" else "bbox"
    options = geometry(args)
    if args.use_area:
        if args.protocol != "crowdpose":
            raise _UsageError("--use-area needs --protocol crowdpose (its OKS scale)")
        options["use_area"] = True
    if args.detectron2:
        if not args.protocol.startswith("voc"):
            raise _UsageError("--detectron2 needs --protocol voc2007 or voc2012 (its VOC preset)")
        options["detectron2"] = True
    try:
        check_protocol(args.protocol, args.iou_type, args.rules)   # before reading the files
    except ValueError as error:     # a usage error: the flag it is about, then why
        flag = "--rules" if str(error).startswith("rules=") else "--iou-type"
        raise _UsageError(f"{flag}: {error}") from None
    lrp_options = _lrp_options(args, options) if args.lrp else {}
    oid = _openimages_inputs(args)
    notes: tuple[str, ...] = ()
    if args.protocol == "lvis":
        _refuse_lvis_readers(args)
        dataset, detections, notes = _lvis_inputs(args)
    elif args.protocol == "openimages":     # read by error_attribution from the files
        dataset, detections = args.gt, args.dt
    else:
        gt_format = args.gt_format or _guess_format(args.gt, "gt", "--gt-format")
        dataset, detections, inputs = read_shapes(args, gt_format)  # one resolution rule
        if inputs is not None:
            run_checks(args, inputs, err)
        elif not getattr(args, "no_check", False):
            checks_of(dataset, detections, err)
    result = error_attribution(dataset, detections, pos_threshold=args.pos_threshold,
                               background_threshold=args.background_threshold,
                               max_dets=args.tide_max_dets, rules=args.rules,
                               protocol=args.protocol, **options, **oid)
    for note in (*notes, *result.notes):
        print(f"deteval: note: {note}", file=err)
    payload = {"tide": result.to_dict()}
    lrp_result = None
    if args.lrp:
        lrp_result = lrp(dataset, detections, iou_threshold=args.pos_threshold, **lrp_options)
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
