"""``deteval confusion``: the detection confusion matrix."""

from __future__ import annotations

from typing import TextIO

from ._common import _write_json
from ._options import _add_input_options, _guess_format
from ._outputs import check_outputs
from ._shared_options import add_iou_threshold, add_json_output, add_score_threshold
from .check import checks_of, run_checks
from .draw import SIMILARITY, add_geometry_options, geometry, read_shapes


def add_parser(commands) -> None:
    """Add the ``confusion`` command to the subparsers ``commands``."""
    from .._format_names import DETECTION_FORMATS, GT_FORMATS

    confusion = commands.add_parser(
        "confusion", help="detection confusion matrix (with an Unknown row and column)",
        description="The detection confusion matrix at one IoU and one score threshold "
        "(deteval.detection_confusion_matrix): rows are true classes, columns predicted "
        "classes; the Unknown row counts background false positives (duplicates included), "
        "the Unknown column missed objects. Ground truth and detections may be in any "
        "supported format (guessed from the paths unless --gt-format/--dt-format say). "
        "Pairs match by the similarity of --iou-type, as `deteval coco --iou-type` "
        "matches (mask IoU, boundary IoU, OKS, polygon IoU; COCO files for all but bbox).")
    add_iou_threshold(confusion)
    add_score_threshold(confusion)
    add_geometry_options(confusion, what="what to match by: bbox, segm (mask IoU), boundary "
                         "(boundary IoU), keypoints (OKS), polygon, rotated ('rbox'); read "
                         "from COCO files (polygon and rotated also from dota) "
                         "(default: bbox)")
    confusion.add_argument("--normalize", choices=["true", "pred"],
                           help="show rows (true: recall on the diagonal) or columns (pred: "
                           "precision on the diagonal) as fractions (default: counts)")
    add_json_output(confusion, help="write the counts, matrix, per-class and overall numbers")
    _add_input_options(confusion, GT_FORMATS, DETECTION_FORMATS)
    confusion.set_defaults(parser=confusion)


def run(args, out: TextIO, err: TextIO) -> int:
    from ..confusion import detection_confusion_matrix

    check_outputs(args, files=[("--json", args.json)])
    match_options = geometry(args)
    gt_format = args.gt_format or _guess_format(args.gt, "gt", "--gt-format")
    dataset, detections, inputs = read_shapes(args, gt_format)
    result = detection_confusion_matrix(dataset, detections, iou_threshold=args.iou_threshold,
                                        score_threshold=args.score_threshold,
                                        normalize=args.normalize, **match_options)
    if inputs is not None:
        hazards = run_checks(args, inputs, err)
    else:
        hazards = [] if getattr(args, "no_check", False) else checks_of(dataset, detections,
                                                                        err)
    if args.json:   # files first: written whatever happens to stdout
        _write_json(args.json, {**result.to_dict(zero_division=0), "warnings": hazards})
    overall = result.overall(zero_division=0)
    print(f"deteval confusion: {len(dataset.images)} images, {len(dataset.categories)} "
          f"categories, {int(result.counts[:-1].sum())} objects, {len(detections)} detections; "
          f"{SIMILARITY[result.iou_type]} >= {result.iou_threshold:g}, "
          f"score >= {result.score_threshold:g}", file=out)
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
