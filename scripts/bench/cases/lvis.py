"""The lvis case: ``deteval.evaluate_lvis`` against lvis-api 0.5.3 (issue 14), and hotcoco's
``LVISeval`` (its lvis-api drop-in), on a synthetic LVIS-like set (formerly
scripts/bench_lvis.py).

The set imitates LVIS v1 val's shape: 1,203 categories in three frequency groups (337 rare,
461 common, 405 frequent), about 12 objects per image in a few categories, a few verified
negative and not-exhaustive categories per image, and up to 300 box results per image (most
near an object of a present category, the rest anywhere, some in unverified categories);
5,000 images (``--quick``: 500). Every tool reads the same two JSON files; times are end to
end (reading, evaluation, summary) in this process, best of ``--repeat`` for deteval, one run
of each other tool. Their 13 stats must equal lvis-api's to the last bit (a MISMATCH line
otherwise). faster-coco-eval's ``lvis_style`` mode is not run: it has no lvis-api API (no
``LVIS`` / ``LVISEval``) and reports its stats in pycocotools' layout."""

from __future__ import annotations

import contextlib
import io
import logging
import tempfile
import time
import warnings
from pathlib import Path

from ..common import fmt_ratio, use_source_tree
from . import Case, register

FREQUENCY_COUNTS = (("r", 337), ("c", 461), ("f", 405))


def make_set(n_images: int, per_image: int, seed: int) -> tuple[dict, list[dict]]:
    """A synthetic LVIS ground truth and box results (pure function of the arguments)."""
    import numpy as np

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


def _quiet():
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    return stack


def run_lvis_api(gt_path: Path, dt_path: Path) -> dict[str, float]:
    import numpy as np

    if not hasattr(np, "float"):
        np.float = float  # lvis-api 0.5.3 predates numpy 2
    from lvis import LVIS, LVISEval

    logging.getLogger("lvis").setLevel(logging.ERROR)
    with _quiet():
        evaluator = LVISEval(LVIS(str(gt_path)), str(dt_path), iou_type="bbox")
        evaluator.run()
        evaluator.print_results()
    return {k: float(v) for k, v in evaluator.results.items()}


def run_hotcoco(gt_path: Path, dt_path: Path) -> dict[str, float]:
    from hotcoco import LVIS, LVISeval

    with _quiet():
        gt = LVIS(str(gt_path))
        evaluator = LVISeval(gt, gt.load_res(str(dt_path)), "bbox")
        evaluator.run()
        results = evaluator.get_results()
    return {k: float(v) for k, v in results.items()}


PEERS = (("lvis-api", "lvis", run_lvis_api), ("hotcoco", "hotcoco", run_hotcoco))


def run(args, case: Case, headed: bool) -> None:
    use_source_tree()
    import importlib.util

    import numpy as np
    import orjson

    images = args.images or (case.quick if args.quick else case.images)
    per_image = args.dets_per_image or case.dets
    started = time.perf_counter()
    gt, results = make_set(images, per_image, args.seed)
    with tempfile.TemporaryDirectory() as folder:
        gt_path, dt_path = Path(folder) / "gt.json", Path(folder) / "dt.json"
        gt_path.write_bytes(orjson.dumps(gt))
        dt_path.write_bytes(orjson.dumps(results))
        print(f"set: {images} images, {len(gt['annotations'])} objects, {len(results)} "
              f"results, 1203 categories (made in {time.perf_counter() - started:.1f} s)")
        del gt, results
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            result = run_deteval(gt_path, dt_path)
            times.append(time.perf_counter() - t0)
        best = min(times)
        phases = ", ".join(f"{k} {v:.2f}" for k, v in result.timings.items())
        print(f"{'deteval':<10}: {best:8.2f} s  (best of {args.repeat}; {phases})")
        reference = None
        for name, module, runner in PEERS:
            if importlib.util.find_spec(module) is None:
                print(f"{name:<10}: not installed")
                continue
            t0 = time.perf_counter()
            try:
                stats = runner(gt_path, dt_path)
            except Exception as error:  # a peer's failure is a result to report
                print(f"{name:<10}: failed: {type(error).__name__}: {error}"[:200])
                continue
            took = time.perf_counter() - t0
            # By name: hotcoco's get_results() lists them in another order.
            stats = [stats.get(name, float("nan")) for name in result.stat_names]
            same = np.array_equal(np.array(stats), result.stats)
            reference = stats if name == "lvis-api" else reference
            print(f"{name:<10}: {took:8.2f} s  ({fmt_ratio(took / best)} deteval's time; "
                  f"stats {'equal to deteval' if same else 'differ from deteval'}'s)")
            if not same:
                worst = float(np.max(np.abs(np.array(stats) - result.stats)))
                print(f"MISMATCH: {name} differs from deteval by up to {worst:.3g}")
        print(f"deteval stats: AP {result.stats[0]:.6f}, APr {result.stats[6]:.6f}"
              + ("" if reference is None else " (lvis-api: equal to the last bit)"
                 if np.array_equal(np.array(reference), result.stats) else ""))


CASE = register(Case(
    name="lvis", iou_type="bbox", images=5000, quick=500, dets=300, run=run,
    help="LVIS federated evaluation against lvis-api (and hotcoco's LVISeval), 1,203 "
    "categories",
))  # fmt: skip
