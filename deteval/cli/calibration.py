"""``deteval calibration``: D-ECE of detection confidences and the reliability diagram."""

from __future__ import annotations

from typing import TextIO

from ._common import _write_json
from ._options import _positive_int
from ._outputs import check_outputs, write_output
from ._shared_options import (
    ALL_PROTOCOLS,
    add_dilation_ratio,
    add_iou_threshold,
    add_json_output,
    add_per_class,
    add_protocol,
    check_geometry,
)


def add_parser(commands) -> None:
    """Add the ``calibration`` command to the subparsers ``commands``."""
    from .crowdpose import add_crowdpose_options
    from .openimages import add_openimages_inputs
    from .voc import add_detectron2

    cal = commands.add_parser(
        "calibration", help="confidence calibration: D-ECE and the reliability diagram",
        description="Detection expected calibration error (Küppers et al. 2020): the "
        "confidences cut into bins, in each bin the precision (true positives at one IoU "
        "threshold, as the chosen protocol decides them) against the mean confidence; "
        "overall and per class. Scores must be confidences in [0, 1].")
    cal.add_argument("gt", metavar="GT", help="ground truth: a COCO instances file (coco, "
                     "voc2007, voc2012), the LVIS or CrowdPose file, or the Open Images box CSV")
    cal.add_argument("dt", metavar="DT", help="detections: a COCO results file (the "
                     "prediction CSV with Open Images)")
    add_protocol(cal, default="coco", choices=ALL_PROTOCOLS,
                 help="whose decisions make a detection right or wrong: COCO matching "
                 "(default), the VOC devkit's, LVIS's (federated), Open Images' (group-of "
                 "boxes, verified labels) or CrowdPose's (OKS)")
    add_iou_threshold(cal, help="a detection is right when it is a true positive at this "
                      "IoU threshold, in (0, 1] (default: 0.5)")
    cal.add_argument("--bins", type=_positive_int, default=10, metavar="N",
                     help="number of confidence bins, at most 10,000 (default 10)")
    cal.add_argument("--binning", choices=("uniform", "quantile"), default="uniform",
                     help="bins of equal width over [0, 1] (default) or of equal mass")
    cal.add_argument("--iou-type", default=None,
                     choices=("bbox", "segm", "boundary", "keypoints", "polygon", "rotated"),
                     help="coco: what to compare (default bbox); lvis: bbox, segm or "
                     "boundary")
    cal.add_argument("--max-detections", dest="cal_max_dets", type=_positive_int, default=None,
                     metavar="N", help="coco: detections evaluated per image and category "
                     "(default COCO's: 100, 20 with --iou-type keypoints); lvis: per image "
                     "(default 300)")
    add_dilation_ratio(cal)
    add_per_class(cal, help="also print a table per class")
    add_json_output(cal, help="write the numbers as JSON")
    cal.add_argument("--plot", metavar="OUT.png",
                     help="draw the reliability diagram (.png or .svg; needs matplotlib)")
    add_detectron2(cal.add_argument_group("VOC settings (--protocol voc2007|voc2012)"))
    add_crowdpose_options(cal.add_argument_group("keypoint settings (--kpt-sigmas: coco "
                                                 "keypoints and crowdpose)"),
                          sigmas_default="COCO person; CrowdPose's 14 with crowdpose")
    add_openimages_inputs(cal.add_argument_group("Open Images inputs (--protocol "
                                                 "openimages)"))
    cal.set_defaults(parser=cal)


# The options each protocol reads besides GT and DT (each protocol command's own).
_READS = {"coco": ("iou_type", "cal_max_dets", "dilation_ratio", "kpt_sigmas"),
          "lvis": ("iou_type", "cal_max_dets", "dilation_ratio"),
          "voc2007": ("detectron2",), "voc2012": ("detectron2",),
          "crowdpose": ("kpt_sigmas", "use_area"),
          "openimages": ("labels", "hierarchy", "classes", "expand_detections")}
_FLAGS = {"iou_type": "--iou-type", "cal_max_dets": "--max-detections",
          "dilation_ratio": "--dilation-ratio", "kpt_sigmas": "--kpt-sigmas",
          "use_area": "--use-area", "detectron2": "--detectron2", "labels": "--labels",
          "hierarchy": "--hierarchy", "classes": "--classes",
          "expand_detections": "--expand-detections"}


def _evaluate(args):
    """The ``--protocol``'s result (coco: at the one threshold, as ``calibration(gt, dt)``
    evaluates). An option the protocol does not read is a usage error."""
    from ._common import _UsageError

    protocol = args.protocol
    for name, flag in _FLAGS.items():
        if getattr(args, name) not in (None, False) and name not in _READS.get(protocol, ()):
            raise _UsageError(f"{flag} does not apply to --protocol {protocol}")
    geometry = {} if args.dilation_ratio is None else {"dilation_ratio": args.dilation_ratio}
    if protocol == "coco":
        from ..diagnostics.calibration import coco_max_detections
        from ..protocols.coco import evaluate_coco

        check_geometry(args.iou_type or "bbox", kpt_sigmas=args.kpt_sigmas,
                       dilation_ratio=args.dilation_ratio)
        m = args.cal_max_dets or coco_max_detections(args.iou_type or "bbox")
        if args.kpt_sigmas is not None:
            geometry["keypoint_sigmas"] = tuple(args.kpt_sigmas)
        return evaluate_coco(args.gt, args.dt, iou_type=args.iou_type or "bbox",
                             iou_thresholds=(args.iou_threshold,), max_detections=(m, m, m),
                             **geometry)
    if protocol.startswith("voc"):
        from ..protocols.voc import evaluate_voc
        from .voc import voc_settings

        # the preset (the devkit's or --detectron2) at the one threshold
        _, options = voc_settings(protocol[3:], detectron2=args.detectron2,
                                  iou_thresholds=[args.iou_threshold])
        return evaluate_voc(args.gt, args.dt, **options)
    _check_threshold(protocol, args.iou_threshold)
    if protocol == "lvis":
        from ..protocols.lvis import evaluate_lvis

        if args.iou_type not in (None, "bbox", "segm", "boundary"):
            raise _UsageError(f"--iou-type {args.iou_type}: LVIS compares bbox, segm or "
                              "boundary")
        check_geometry(args.iou_type or "bbox", dilation_ratio=args.dilation_ratio)
        return evaluate_lvis(args.gt, args.dt, iou_type=args.iou_type or "bbox",
                             max_detections=args.cal_max_dets or 300, **geometry)
    if protocol == "crowdpose":
        from ..protocols.crowdpose import evaluate_crowdpose
        from .crowdpose import crowdpose_options

        return evaluate_crowdpose(args.gt, args.dt, **crowdpose_options(args))
    from ..protocols.openimages import evaluate_openimages
    from .openimages import openimages_classes

    return evaluate_openimages(args.gt, args.dt, image_labels=args.labels,
                               hierarchy=args.hierarchy, classes=openimages_classes(args),
                               expand_detections=args.expand_detections)


#: How calibration(result) names a detection (it knows no file).
_ROW = "detection row"

#: In the one COCO note that is about the summary's numbers, not the inputs (a stat -1 when
#: --max-detections is not 100): calibration prints no summary.
_SUMMARY_NOTE = "pycocotools' summary reads"


def _check_threshold(protocol: str, tau: float) -> None:
    """``--iou-threshold`` among the thresholds ``protocol`` evaluates (Open Images: 0.5;
    LVIS and CrowdPose: COCO's ten), else a usage error naming them."""
    from ._common import _UsageError

    allowed = (0.5,) if protocol == "openimages" else tuple(0.5 + 0.05 * i for i in range(10))
    if min(abs(tau - t) for t in allowed) > 1e-9:
        from .._threshold_labels import threshold_labels

        shown = ", ".join(threshold_labels(allowed))
        raise _UsageError(f"--iou-threshold {tau:g}: the {protocol} protocol evaluates IoU "
                          f"{shown} only")


def _fmt(value) -> str:
    return "     -" if value is None else f"{value:6.3f}"


def _bin_table(result) -> str:
    data = result.reliability()
    lines = [f"{'bin':<15} {'count':>7} {'TP':>7} {'prec':>6} {'conf':>6} {'gap':>6}"]
    edges = data["edges"]
    for b, (n, tp, prec, conf) in enumerate(zip(data["count"], data["tp"], data["precision"],
                                                data["confidence"])):
        gap = None if prec is None else abs(prec - conf)
        lines.append(f"[{edges[b]:.3f}, {edges[b + 1]:.3f}{']' if b == len(edges) - 2 else ')'}"
                     f" {n:>7} {tp:>7} {_fmt(prec)} {_fmt(conf)} {_fmt(gap)}")
    return "\n".join(lines)


def _class_table(result) -> str:
    lines = [f"{'class':<20} {'dets':>7} {'prec':>6} {'conf':>6} {'D-ECE':>6} {'MCE':>6}"]
    for row in result.per_class():
        lines.append(f"{row['name'][:20]:<20} {row['detections']:>7} {_fmt(row['precision'])} "
                     f"{_fmt(row['confidence'])} {_fmt(row['dece'])} {_fmt(row['mce'])}")
    return "\n".join(lines)


def run(args, out: TextIO, err: TextIO) -> int:
    from ..diagnostics.calibration import MAX_BINS, calibration, plot_reliability

    if args.bins > MAX_BINS:
        from ._common import _UsageError

        raise _UsageError(f"--bins: expected at most {MAX_BINS:,}; got {args.bins}")
    check_outputs(args, files=[("--json", args.json), ("--plot", args.plot)])
    if args.plot:
        from ..viz.plots import check_path, require_matplotlib

        try:
            check_path(args.plot)
        except ValueError as error:     # a usage error: nothing was read yet
            from ._common import _UsageError

            raise _UsageError(f"--plot: {error}") from None
        require_matplotlib()
    from ..errors import FormatError

    evaluated = _evaluate(args)
    try:
        result = calibration(evaluated, iou_threshold=args.iou_threshold, bins=args.bins,
                             binning=args.binning)
    except FormatError as error:    # a score out of [0, 1]: of the results file DT
        if error.source is not None:
            raise
        record = error.record
        if args.protocol == "coco" and record and record.startswith(_ROW):
            # DT is a COCO results file, read in its order: row i is its results[i], the
            # record calibration(gt, dt) names
            record = "results" + record[len(_ROW):]
        raise FormatError(error.message, source=str(args.dt), record=record,
                          hint=error.hint, cli_hint=error.cli_hint) from None
    for note in evaluated.notes:    # what the protocol's command says it left out
        if _SUMMARY_NOTE not in note:
            print(f"deteval: note: {note}", file=err)
    if args.json:   # files first: written whatever happens to stdout
        _write_json(args.json, result.to_dict())
    if args.plot:
        write_output(args.plot, lambda path: plot_reliability(result, path=path))
    dece = "n/a" if result.dece != result.dece else f"{result.dece:.4f}"
    mce = "n/a" if result.mce != result.mce else f"{result.mce:.4f}"
    mean = ("n/a" if result.mean_class_dece != result.mean_class_dece
            else f"{result.mean_class_dece:.4f}")
    decided = "" if result.protocol == "coco" else f"{result.protocol} decisions, "
    from .._threshold_labels import threshold_label

    print(f"D-ECE @ IoU {threshold_label(result.iou_threshold)} ({decided}{result.n_bins} "
          f"{result.binning} bins, {result.n_detections} detections): {dece}   MCE: {mce}   "
          f"mean class D-ECE: {mean}",
          file=out)
    print(_bin_table(result), file=out)
    if args.per_class:
        print(file=out)
        print(_class_table(result), file=out)
    return 0
