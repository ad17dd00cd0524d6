"""Benchmark: deteval.evaluate_lvis against lvis-api 0.5.3 on a synthetic LVIS-like set.

The set imitates LVIS v1 val's shape: 1,203 categories in three frequency groups (337 rare,
461 common, 405 frequent), about 12 objects per image in a few categories, a few verified
negative and not-exhaustive categories per image, and up to 300 box results per image
(most near an object of a present category, the rest anywhere, some in unverified
categories). Both tools read the same two JSON files; times are end to end (reading,
evaluation, summary), best of ``--repeat`` for deteval, one run of lvis-api.

Usage::

    PYTHONPATH=. python scripts/bench_lvis.py [--images 5000] [--skip-reference]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import orjson

FREQUENCY_COUNTS = (("r", 337), ("c", 461), ("f", 405))


def make_set(n_images: int, per_image: int, seed: int) -> tuple[dict, list[dict]]:
    """A synthetic LVIS ground truth and box results (pure function of the arguments)."""
    rng = np.random.default_rng(seed)
    frequency = [f for f, n in FREQUENCY_COUNTS for _ in range(n)]
    rng.shuffle(frequency)
    n_k = len(frequency)
    categories = [{"id": k + 1, "name": f"c{k + 1}", "frequency": frequency[k]}
                  for k in range(n_k)]
    # Frequent categories appear more often.
    weight = np.array([{"r": 1.0, "c": 5.0, "f": 40.0}[f] for f in frequency])
    weight /= weight.sum()
    images, annotations, results = [], [], []
    for i in range(n_images):
        image_id = i + 1
        present = rng.choice(n_k, size=int(rng.integers(1, 7)), replace=False, p=weight) + 1
        others = np.setdiff1d(np.arange(1, n_k + 1), present)
        neg = rng.choice(others, size=int(rng.integers(0, 10)), replace=False)
        ne = present[rng.random(len(present)) < 0.2]
        images.append({"id": image_id, "width": 640, "height": 480,
                       "neg_category_ids": neg.tolist(),
                       "not_exhaustive_category_ids": ne.tolist()})
        n_obj = int(rng.integers(1, 25))
        obj_cat = rng.choice(present, size=n_obj)
        xy = rng.uniform(0, 560, size=(n_obj, 2))
        wh = np.exp(rng.uniform(np.log(4), np.log(300), size=(n_obj, 2)))
        boxes = np.round(np.column_stack([xy, wh]), 2)
        for b, c in zip(boxes.tolist(), obj_cat.tolist()):
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": c, "bbox": b, "area": b[2] * b[3]})
        n_dt = int(rng.integers(per_image // 2, per_image + 1))
        near = rng.random(n_dt) < 0.6
        src = rng.integers(0, n_obj, size=n_dt)
        jitter = rng.normal(0, 0.1, size=(n_dt, 4)) * np.repeat(boxes[src, 2:], 2, axis=1)
        dt_boxes = np.where(near[:, None], boxes[src] + jitter, np.column_stack(
            [rng.uniform(0, 560, size=(n_dt, 2)),
             np.exp(rng.uniform(np.log(4), np.log(300), size=(n_dt, 2)))]))
        dt_boxes[:, 2:] = np.abs(dt_boxes[:, 2:]) + 1
        dt_cat = np.where(near & (rng.random(n_dt) < 0.7), obj_cat[src],
                          rng.choice(np.r_[present, neg, rng.integers(1, n_k + 1, 5)], n_dt))
        scores = np.round(rng.random(n_dt), 3)
        for b, c, s in zip(np.round(dt_boxes, 2).tolist(), dt_cat.tolist(), scores.tolist()):
            results.append({"image_id": image_id, "category_id": c, "bbox": b, "score": s})
    gt = {"images": images, "annotations": annotations, "categories": categories}
    return gt, results


def run_deteval(gt_path: Path, dt_path: Path):
    import deteval

    return deteval.evaluate_lvis(str(gt_path), str(dt_path))


def run_reference(gt_path: Path, dt_path: Path) -> dict:
    if not hasattr(np, "float"):
        np.float = float  # lvis-api 0.5.3 predates numpy 2
    from lvis import LVIS, LVISEval

    logging.getLogger("lvis").setLevel(logging.ERROR)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        evaluator = LVISEval(LVIS(str(gt_path)), str(dt_path), iou_type="bbox")
        evaluator.run()
        evaluator.print_results()
    return dict(evaluator.results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--per-image", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--skip-reference", action="store_true")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    gt, results = make_set(args.images, args.per_image, args.seed)
    with tempfile.TemporaryDirectory() as folder:
        gt_path, dt_path = Path(folder) / "gt.json", Path(folder) / "dt.json"
        gt_path.write_bytes(orjson.dumps(gt))
        dt_path.write_bytes(orjson.dumps(results))
        print(f"set: {args.images} images, {len(gt['annotations'])} objects, {len(results)} "
              f"results, 1203 categories (made in {time.perf_counter() - started:.1f} s)")
        del gt, results
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            result = run_deteval(gt_path, dt_path)
            times.append(time.perf_counter() - t0)
        phases = ", ".join(f"{k} {v:.2f}" for k, v in result.timings.items())
        print(f"deteval  : {min(times):8.2f} s  (best of {args.repeat}; {phases})")
        if args.skip_reference:
            return 0
        t0 = time.perf_counter()
        reference = run_reference(gt_path, dt_path)
        ref_time = time.perf_counter() - t0
        print(f"lvis-api : {ref_time:8.2f} s  ({ref_time / min(times):.1f}x deteval)")
        expected = np.array([float(v) for v in reference.values()])
        same = np.array_equal(expected, result.stats)
        print(f"stats equal: {same}  (AP {result.stats[0]:.6f}, APr {result.stats[6]:.6f})")
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
