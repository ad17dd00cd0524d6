"""The crowdpose case: ``deteval.evaluate_crowdpose`` against xtcocotools 1.14.3 (the
CrowdPose reference, ``COCOeval(..., "keypoints_crowd", sigmas, use_area=False)`` as mmpose
calls it) and faster-coco-eval's ``keypoints_crowd`` mode, on a synthetic CrowdPose-like set.

The set imitates CrowdPose's shape: one person class with 14 keypoints, 1 to 12 people per
image (crowded scenes), ``num_keypoints`` counting the keypoints with v = 2, no ``area``,
each image's ``crowdIndex`` spread over [0, 1], and up to 20 keypoint results per image
(most near a person, some anywhere); 4,000 images (``--quick``: 400). Every tool reads the
same two JSON files; times are end to end (reading, the four evaluations, summary) in this
process, best of ``--repeat`` for deteval, one run of each other tool. xtcocotools' 9 stats
must equal deteval's to the last bit, faster-coco-eval's to 1e-12 (a MISMATCH line
otherwise). xtcocotools' PyPI wheel is built for numpy 1; build it with ``pip install
xtcocotools==1.14.3 --no-binary xtcocotools --no-build-isolation``."""

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

# Where each keypoint sits in the person's box: shoulders, elbows, wrists, hips, knees,
# ankles (left, right), head, neck.
_TEMPLATE = ((0.70, 0.22), (0.30, 0.22), (0.78, 0.38), (0.22, 0.38), (0.80, 0.52),
             (0.20, 0.52), (0.62, 0.55), (0.38, 0.55), (0.63, 0.75), (0.37, 0.75),
             (0.64, 0.95), (0.36, 0.95), (0.50, 0.05), (0.50, 0.15))


def make_set(n_images: int, seed: int) -> tuple[dict, list[dict]]:
    """A synthetic CrowdPose ground truth and keypoint results (pure function of the
    arguments)."""
    import numpy as np

    rng = np.random.default_rng([seed, 40])
    template = np.array(_TEMPLATE)
    images, annotations, results = [], [], []
    for i in range(n_images):
        image_id = i + 1
        images.append({"id": image_id, "file_name": f"{image_id}.jpg", "width": 640,
                       "height": 480, "crowdIndex": round(float(rng.random()), 2)})
        n = int(rng.integers(1, 13))
        h = np.exp(rng.uniform(np.log(40), np.log(460), n))
        w = h * rng.uniform(0.3, 0.6, n)
        x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
        points = (template[None] * np.stack([w, h], 1)[:, None]
                  + np.stack([x, y], 1)[:, None] + rng.normal(0, 0.02, (n, 14, 1)) * h[:, None,
                                                                                           None])
        v = np.where(rng.random((n, 14)) < 0.8, 2, np.where(rng.random((n, 14)) < 0.5, 1, 0))
        for k in range(n):
            kp = np.column_stack([np.round(points[k], 0), v[k]])
            kp[v[k] == 0, :2] = 0
            annotations.append({
                "id": len(annotations) + 1, "image_id": image_id, "category_id": 1,
                "iscrowd": 0, "num_keypoints": int(np.count_nonzero(v[k] == 2)),
                "bbox": [round(float(x[k]), 2), round(float(y[k]), 2), round(float(w[k]), 2),
                         round(float(h[k]), 2)],
                "keypoints": kp.ravel().tolist()})
        n_dt = min(20, n + int(rng.integers(0, 6)))
        source = rng.integers(0, n, n_dt)
        near = rng.random(n_dt) < 0.85
        spread = np.where(near, rng.choice([0.01, 0.03, 0.08], n_dt), 0.3)[:, None, None]
        guess = points[source] + rng.normal(0, 1, (n_dt, 14, 2)) * spread * h[source, None,
                                                                                None]
        kp_scores = np.round(rng.uniform(0.05, 1.0, (n_dt, 14)), 3)
        scores = np.round(rng.random(n_dt), 3)
        for k in range(n_dt):
            kp = np.column_stack([np.round(guess[k], 2), kp_scores[k]])
            results.append({"image_id": image_id, "category_id": 1,
                            "keypoints": kp.ravel().tolist(), "score": float(scores[k])})
    categories = [{"id": 1, "name": "person", "supercategory": "person",
                   "keypoints": ["left_shoulder", "right_shoulder", "left_elbow", "right_elbow",
                                 "left_wrist", "right_wrist", "left_hip", "right_hip",
                                 "left_knee", "right_knee", "left_ankle", "right_ankle",
                                 "head", "neck"]}]
    return {"images": images, "annotations": annotations, "categories": categories}, results


def run_deteval(gt_path: Path, dt_path: Path):
    import deteval

    return deteval.evaluate_crowdpose(str(gt_path), str(dt_path))


def _sigmas():
    import numpy as np

    return np.array([.79, .79, .72, .72, .62, .62, 1.07, 1.07, .87, .87, .89, .89, .79,
                     .79]) / 10.0


def run_xtcocotools(gt_path: Path, dt_path: Path) -> list[float]:
    from xtcocotools.coco import COCO
    from xtcocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coco_gt = COCO(str(gt_path))
        evaluator = COCOeval(coco_gt, coco_gt.loadRes(str(dt_path)), "keypoints_crowd",
                             _sigmas(), use_area=False)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return [float(s) for s in evaluator.stats]


def run_faster_coco_eval(gt_path: Path, dt_path: Path) -> list[float]:
    from faster_coco_eval import COCO, COCOeval_faster

    logging.disable(logging.WARNING)
    try:
        coco_gt = COCO(str(gt_path))
        evaluator = COCOeval_faster(coco_gt, coco_gt.loadRes(str(dt_path)),
                                    iouType="keypoints_crowd", kpt_oks_sigmas=_sigmas(),
                                    use_area=False, print_function=lambda *a, **k: None)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    finally:
        logging.disable(logging.NOTSET)
    return [float(s) for s in evaluator.all_stats[:9]]


PEERS = (("xtcocotools", "xtcocotools", run_xtcocotools, 0.0),
         ("faster-coco-eval", "faster_coco_eval", run_faster_coco_eval, 1e-12))


def _timed(runner, *paths) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = runner(*paths)
    return time.perf_counter() - t0, out


def _peer_line(name: str, took: float, best: float, stats: list[float], ours) -> str:
    import numpy as np

    worst = float(np.max(np.abs(np.array(stats) - ours)))
    agree = "equal to deteval's" if worst == 0 else f"within {worst:.2g} of deteval's"
    return (f"{name:<17}: {took:8.2f} s  ({fmt_ratio(took / best)} deteval's time; stats "
            f"{agree})"), worst


def run(args, case: Case, headed: bool) -> None:
    use_source_tree()
    import importlib.util

    import orjson

    images = args.images or (case.quick if args.quick else case.images)
    made = time.perf_counter()
    gt, results = make_set(images, args.seed)
    summary = (f"set: {images} images, {len(gt['annotations'])} people, {len(results)} "
               f"results (made in {time.perf_counter() - made:.1f} s)")
    with tempfile.TemporaryDirectory() as folder:
        paths = Path(folder) / "gt.json", Path(folder) / "dt.json"
        for path, content in zip(paths, (gt, results)):
            path.write_bytes(orjson.dumps(content))
        del gt, results
        print(summary)
        runs = [_timed(run_deteval, *paths) for _ in range(args.repeat)]
        best, result = min(runs, key=lambda r: r[0])
        print(f"{'deteval':<17}: {best:8.2f} s  (best of {args.repeat}; "
              + ", ".join(f"{k} {v:.2f}" for k, v in result.timings.items()) + ")")
        for name, module, runner, tolerance in PEERS:
            if importlib.util.find_spec(module) is None:
                print(f"{name:<17}: not installed")
                continue
            try:
                took, stats = _timed(runner, *paths)
            except Exception as error:  # a peer's failure is a result to report
                print(f"{name:<17}: failed: {type(error).__name__}: {error}"[:200])
                continue
            line, worst = _peer_line(name, took, best, stats, result.stats)
            print(line)
            if worst > tolerance:
                print(f"MISMATCH: {name} differs from deteval by up to {worst:.3g}")
        print("deteval stats: " + "  ".join(f"{n} {v:.4f}" for n, v in
                                            zip(result.stat_names, result.stats)))


CASE = register(Case(
    name="crowdpose", iou_type="keypoints", images=4000, quick=400, run=run,
    help="CrowdPose (AP easy / medium / hard) against xtcocotools and faster-coco-eval",
))  # fmt: skip
