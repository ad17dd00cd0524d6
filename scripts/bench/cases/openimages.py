"""The openimages case: ``deteval.evaluate_openimages`` against the literal reference
(tests/oid_reference.py, the TF Object Detection API's steps), formerly
scripts/bench_openimages.py.

The set imitates the Open Images challenge's shape at a moderate size: a two-level class
hierarchy (100 leaves under 12 parents, some leaves under two parents), a few present classes
per image with one to four boxes each (a quarter group-of), positive and negative image-level
labels, and 40 detections per image with two-decimal scores (ties); 2,000 images
(``--quick``: 200). Both sides read the same rows in memory (no CSV parsing); deteval's time is
best of ``--repeat``, the reference's one run. The two results must be equal to the last bit
(a MISMATCH line otherwise)."""

from __future__ import annotations

import sys
import time

from ..common import REPO_ROOT, use_source_tree
from . import Case, register

CLASSES = 100


def make_set(n_images: int, n_classes: int, per_image: int, seed: int):
    """(gt_rows, label_rows, det_rows, hierarchy, classes), a pure function of the arguments."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n_parents = max(1, n_classes // 8)
    parents = [{"LabelName": f"/m/p{p:03d}", "Subcategory": []} for p in range(n_parents)]
    leaves = [f"/m/l{k:04d}" for k in range(n_classes)]
    for k, leaf in enumerate(leaves):
        parents[k % n_parents]["Subcategory"].append({"LabelName": leaf})
        if rng.random() < 0.05:
            parents[(k + 1) % n_parents]["Subcategory"].append({"LabelName": leaf})
    hierarchy = {"LabelName": "/m/root", "Subcategory": parents}
    classes = sorted(leaves + [p["LabelName"] for p in parents])
    gt_rows, label_rows, det_rows = [], [], []
    for i in range(n_images):
        image = f"{i:08x}"
        present = rng.choice(leaves, size=int(rng.integers(1, 5)), replace=False)
        boxes = []
        for label in present.tolist():
            label_rows.append((image, label, 1))
            for _ in range(int(rng.integers(1, 5))):
                x0, y0 = rng.random(2) * 0.7
                w, h = 0.05 + rng.random(2) * 0.25
                box = (x0, x0 + w, y0, y0 + h)
                boxes.append((label, box))
                gt_rows.append((image, label, *box, int(rng.random() < 0.25)))
        for label in rng.choice(leaves, size=2, replace=False).tolist():
            if label not in present:
                label_rows.append((image, label, 0))
        for _ in range(per_image):
            if boxes and rng.random() < 0.6:
                label, (x0, x1, y0, y1) = boxes[int(rng.integers(0, len(boxes)))]
                j = (rng.random(4) - 0.5) * 0.1
                box = (x0 + j[0], x1 + j[1], y0 + j[2], y1 + j[3])
            else:
                label = leaves[int(rng.integers(0, n_classes))]
                x0, y0 = rng.random(2) * 0.7
                box = (x0, x0 + 0.2, y0, y0 + 0.2)
            det_rows.append((image, label, round(float(rng.random()), 2), *box))
    return gt_rows, label_rows, det_rows, hierarchy, classes


def run(args, case: Case, headed: bool) -> None:
    use_source_tree()
    import numpy as np

    sys.path.insert(0, str(REPO_ROOT / "tests"))
    import oid_reference
    import oidgen

    from deteval import evaluate_openimages

    images = args.images or (case.quick if args.quick else case.images)
    per_image = args.dets_per_image or case.dets
    n_classes = args.categories or CLASSES
    g, lab, d, tree, classes = make_set(images, n_classes, per_image, args.seed)
    gt, labels, dt = oidgen.to_objects(g, lab, d)
    print(f"{images} images, {len(classes)} classes, {len(g)} boxes, {len(lab)} image "
          f"labels, {len(d)} detections")
    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = evaluate_openimages(gt, dt, image_labels=labels, hierarchy=tree,
                                     classes=classes)
        best = min(best, time.perf_counter() - start)
    print(f"deteval.evaluate_openimages: {best:.3f} s (best of {args.repeat}), "
          f"mAP {result.mean_ap:.6f}")
    start = time.perf_counter()
    ap, mean_ap, _ = oid_reference.evaluate(g, lab, d, classes, hierarchy=tree)
    took = time.perf_counter() - start
    if not (np.array_equal(ap, result.ap, equal_nan=True) and mean_ap == result.mean_ap):
        print("MISMATCH between deteval and the reference")
        return
    print(f"literal reference (TF OD API steps): {took:.3f} s, equal to the last bit; "
          f"deteval is {took / best:.0f}x faster")


CASE = register(Case(
    name="openimages", iou_type="bbox", images=2000, quick=200, dets=40, categories=CLASSES,
    run=run, help="the Open Images challenge protocol against the literal reference",
))  # fmt: skip
