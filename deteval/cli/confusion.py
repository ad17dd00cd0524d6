"""``deteval confusion``: the detection confusion matrix."""

from __future__ import annotations

from typing import TextIO

from ._common import _write_json
from ._options import _add_input_options, _read_inputs
from ._outputs import check_outputs
from ._shared_options import add_iou_threshold, add_json_output, add_score_threshold
from .check import run_checks


def add_parser(commands) -> None:
    """Add the ``confusion`` command to the subparsers ``commands``."""
    from ..io.formats import DETECTION_FORMATS, GT_FORMATS

    confusion = commands.add_parser(
        "confusion", help="detection confusion matrix (with an Unknown row and column)",
        description="The detection confusion matrix at one IoU and one score threshold "
        "(deteval.detection_confusion_matrix): rows are true classes, columns predicted "
        "classes; the Unknown row counts background false positives (duplicates included), "
        "the Unknown column missed objects. Ground truth and detections may be in any "
        "supported format (guessed from the paths unless --gt-format/--dt-format say).")
    add_iou_threshold(confusion)
    add_score_threshold(confusion)
    confusion.add_argument("--normalize", choices=["true", "pred"],
                           help="show rows (true: recall on the diagonal) or columns (pred: "
                           "precision on the diagonal) as fractions (default: counts)")
    add_json_output(confusion, help="write the counts, matrix, per-class and overall numbers")
    _add_input_options(confusion, GT_FORMATS, DETECTION_FORMATS)
    confusion.set_defaults(parser=confusion)


def run(args, out: TextIO, err: TextIO) -> int:
    from ..confusion import detection_confusion_matrix

    check_outputs(args, files=[("--json", args.json)])
    inputs = _read_inputs(args)
    dataset, detections = inputs.dataset, inputs.detections
    result = detection_confusion_matrix(dataset, detections, iou_threshold=args.iou_threshold,
                                        score_threshold=args.score_threshold,
                                        normalize=args.normalize)
    hazards = run_checks(args, inputs, err)
    if args.json:   # files first: written whatever happens to stdout
        _write_json(args.json, {**result.to_dict(zero_division=0), "warnings": hazards})
    overall = result.overall(zero_division=0)
    print(f"deteval confusion: {len(dataset.images)} images, {len(dataset.categories)} "
          f"categories, {int(result.counts[:-1].sum())} objects, {len(detections)} detections; "
          f"IoU >= {result.iou_threshold:g}, score >= {result.score_threshold:g}", file=out)
    print(file=out)
    print(result.format_table(), file=out)
    print(file=out)
    print(f"overall: TP {overall['tp']}  FP {overall['fp']}  FN {overall['fn']}  "
          f"precision {overall['precision']:.3f}  recall {overall['recall']:.3f}  "
          f"F1 {overall['f1']:.3f}", file=out)
    extras = [f"{n} {what}" for n, what in (
        (int(result.n_ignored_detections.sum()), "matched a crowd region or ignored object"),
        (result.n_dropped_detections, "have a category unknown to the ground truth")) if n]
    if extras:
        print(f"detections in no cell: {'; '.join(extras)}", file=out)
    return 0
