"""The slices case: ``deteval.slices`` (issue 15 item 6) on the bbox case's synthetic set
(5,000 images x 100 detections = 500k; ``--quick``: 500 images), generated in memory, with a
``weather`` key of three values added to every image record.

Timed, best of ``--repeat``, all from one ``evaluate_coco`` result: the image slices by
``weather`` (no re-matching: the images' rows of the match table accumulated again), the
size slices (read from the result), and each other object property (one matching of the
whole set with the property in place of the area). One image slice is checked against
``evaluate_coco(image_ids=...)`` (a MISMATCH line if it differs)."""

from __future__ import annotations

from ..common import use_source_tree
from . import Case, register
from .calibration import best_of, load


def run(args, case: Case, headed: bool) -> None:
    use_source_tree()
    import numpy as np

    import deteval
    from deteval.diagnostics.slices import image_slice_result

    gt, dataset, detections = load(args, case)
    rng = np.random.default_rng(args.seed)
    weather = rng.choice(["sun", "rain", "fog"], size=len(gt["images"]), p=[0.6, 0.3, 0.1])
    records = [{"id": image["id"], "weather": str(w)} for image, w in zip(gt["images"], weather)]
    print(f"{len(dataset.images)} images, {len(dataset.categories)} classes, "
          f"{len(dataset.gt)} objects, {len(detections)} detections")
    took, result = best_of(args.repeat, lambda: deteval.evaluate_coco(dataset, detections))
    print(f"evaluate_coco:                         {took:7.3f} s  AP {result.stats[0]:.4f}")
    for by in ("weather", "size", "aspect", "crowding", "truncation"):
        took, sliced = best_of(args.repeat, lambda by=by: deteval.slices(
            result, by=by, images=records))
        shown = ", ".join(f"{s.value} {s.ap:.3f}" for s in sliced)
        print(f"slices by {by + ':':<12}                 {took:7.3f} s  AP {shown}")
    rain = [r["id"] for r in records if r["weather"] == "rain"]
    reference = deteval.evaluate_coco(dataset, detections, image_ids=rain)
    mine = image_slice_result(result, rain)
    if not all(np.array_equal(getattr(mine, n), getattr(reference, n))
               for n in ("stats", "precision", "recall", "scores")):
        print("MISMATCH between the weather=rain slice and evaluate_coco(image_ids=...)")
    else:
        print("weather=rain slice equal to evaluate_coco(image_ids=...), array for array")


CASE = register(Case(
    name="slices", iou_type="bbox", images=5000, quick=500, categories=80, dets=100,
    run=run, help="image and object slices from one COCO result (500k detections)",
))  # fmt: skip
