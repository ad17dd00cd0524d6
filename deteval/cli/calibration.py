"""``deteval calibration``: D-ECE of detection confidences and the reliability diagram."""

from __future__ import annotations

from typing import TextIO

from ._common import _write_json
from ._options import _positive_int
from ._outputs import check_outputs, write_output
from ._shared_options import add_iou_threshold, add_json_output, add_per_class


def add_parser(commands) -> None:
    """Add the ``calibration`` command to the subparsers ``commands``."""
    cal = commands.add_parser(
        "calibration", help="confidence calibration: D-ECE and the reliability diagram",
        description="Detection expected calibration error (Küppers et al. 2020): the "
        "confidences cut into bins, in each bin the precision (true positives at one IoU "
        "threshold, COCO matching) against the mean confidence; overall and per class. "
        "Scores must be confidences in [0, 1].")
    cal.add_argument("gt", metavar="GT.json", help="COCO instances file (ground truth)")
    cal.add_argument("dt", metavar="DT.json", help="COCO results file (detections)")
    add_iou_threshold(cal, help="a detection is right when it is a true positive at this "
                      "IoU threshold, in (0, 1] (default: 0.5)")
    cal.add_argument("--bins", type=_positive_int, default=10, metavar="N",
                     help="number of confidence bins, at most 10,000 (default 10)")
    cal.add_argument("--binning", choices=("uniform", "quantile"), default="uniform",
                     help="bins of equal width over [0, 1] (default) or of equal mass")
    cal.add_argument("--iou-type", default="bbox",
                     choices=("bbox", "segm", "boundary", "keypoints", "polygon", "rotated"),
                     help="what to compare (default bbox)")
    cal.add_argument("--max-detections", dest="cal_max_dets", type=_positive_int, default=100,
                     metavar="N", help="detections evaluated per image and category "
                     "(default 100, as COCO)")
    add_per_class(cal, help="also print a table per class")
    add_json_output(cal, help="write the numbers as JSON")
    cal.add_argument("--plot", metavar="OUT.png",
                     help="draw the reliability diagram (.png or .svg; needs matplotlib)")
    cal.set_defaults(parser=cal)


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

        check_path(args.plot)
        require_matplotlib()
    result = calibration(args.gt, args.dt, iou_threshold=args.iou_threshold, bins=args.bins,
                         binning=args.binning, iou_type=args.iou_type,
                         max_detections=args.cal_max_dets)
    if args.json:   # files first: written whatever happens to stdout
        _write_json(args.json, result.to_dict())
    if args.plot:
        write_output(args.plot, lambda path: plot_reliability(result, path=path))
    dece = "n/a" if result.dece != result.dece else f"{result.dece:.4f}"
    mce = "n/a" if result.mce != result.mce else f"{result.mce:.4f}"
    mean = ("n/a" if result.mean_class_dece != result.mean_class_dece
            else f"{result.mean_class_dece:.4f}")
    print(f"D-ECE @ IoU {result.iou_threshold:.2f} ({result.n_bins} {result.binning} bins, "
          f"{result.n_detections} detections): {dece}   MCE: {mce}   mean class D-ECE: {mean}",
          file=out)
    print(_bin_table(result), file=out)
    if args.per_class:
        print(file=out)
        print(_class_table(result), file=out)
    return 0
