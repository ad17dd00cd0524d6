"""The calibration case: ``deteval.calibration`` (D-ECE, issue 15 item 3) on the bbox case's
synthetic set (5,000 images x 100 detections = 500k; ``--quick``: 500 images), generated in
memory (no cache, no peers: there is no reference tool to race).

Timed, best of ``--repeat``: the COCO evaluation itself (``evaluate_coco``), calibration read
from that result's match table (what a user who evaluated already pays), and calibration
end to end from the ground truth and detections (one matching at the single threshold). The
two calibrations must agree (a MISMATCH line otherwise)."""

from __future__ import annotations

import time

from ..common import use_source_tree
from . import Case, register


def load(args, case: Case):
    """The bbox set at the case's size, read into a Dataset and Detections."""
    use_source_tree()
    import deteval

    from .bbox import generate

    images = args.images or (case.quick if args.quick else case.images)
    per_image = args.dets_per_image or case.dets
    gt, results = generate(args.seed, images, args.categories or case.categories, per_image)
    dataset = deteval.read_coco_gt(gt)
    detections = deteval.read_coco_results(results, dataset)
    return gt, dataset, detections


def best_of(repeat: int, function):
    """(best seconds, last value) of ``repeat`` calls."""
    best, value = float("inf"), None
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - start)
    return best, value


def run(args, case: Case, headed: bool) -> None:
    use_source_tree()
    import deteval

    _, dataset, detections = load(args, case)
    print(f"{len(dataset.images)} images, {len(dataset.categories)} classes, "
          f"{len(dataset.gt)} objects, {len(detections)} detections")
    took, result = best_of(args.repeat, lambda: deteval.evaluate_coco(dataset, detections))
    print(f"evaluate_coco (10 thresholds):          {took:7.3f} s  AP {result.stats[0]:.4f}")
    took, from_table = best_of(args.repeat, lambda: deteval.calibration(result))
    print(f"calibration(result), from its table:    {took:7.3f} s  D-ECE {from_table.dece:.6f}")
    took, direct = best_of(args.repeat, lambda: deteval.calibration(dataset, detections))
    print(f"calibration(gt, dt), end to end:        {took:7.3f} s  D-ECE {direct.dece:.6f}")
    took, _ = best_of(args.repeat, lambda: deteval.calibration(result, binning="quantile"))
    print(f"calibration(result, binning=quantile):  {took:7.3f} s")
    if from_table.to_dict() != direct.to_dict():
        print("MISMATCH between calibration from the result and end to end")


CASE = register(Case(
    name="calibration", iou_type="bbox", images=5000, quick=500, categories=80, dets=100,
    run=run, help="D-ECE from the match table and end to end (500k detections)",
))  # fmt: skip
