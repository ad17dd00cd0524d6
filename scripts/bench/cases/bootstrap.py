"""The bootstrap cases: 1,000 image-bootstrap resamples of a COCO evaluation (issue 15 item 4)
against the evaluation itself, on the bbox case's data (5,000 images, 500k detections;
``--quick``: 500 images and 100 resamples); ``bootstrap-voc``: the same for a VOC2007
evaluation (``bootstrap_voc``; 4,952 images, 20 classes, as VOC2007's test set);
``bootstrap-lvis``: the CPU time of one ``bootstrap_lvis`` resample on the lvis case's
generator (1,500 images of up to 200 results: about 225k results, 1,203 categories).

The set is made here with the bbox generator and written to two JSON files in a temporary
folder. Reported: ``evaluate_coco`` from the files (best of ``--repeat``; and its time without
reading), then ``bootstrap_coco`` on that result (once), its time per resample and its ratio to
the evaluation, in wall and in CPU time (the CPU ratio is the one a busy machine does not
blur; both run on every core, ``threads=None``); and the check that one resample equal to the
evaluation (every weight 1) reproduces its 12 stats and per-class AP bit for bit (a MISMATCH
line otherwise)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from ..common import use_source_tree
from . import Case, register

RESAMPLES = 1000
QUICK_RESAMPLES = 100


def _children_cpu() -> float:
    """CPU seconds of the ended child processes (bootstrap's worker processes)."""
    import os

    times = os.times()
    return times.children_user + times.children_system


def run(args, case: Case, headed: bool) -> None:
    use_source_tree()
    import numpy as np
    import orjson

    import deteval
    from deteval._threads import resolve_threads
    from deteval.diagnostics.bootstrap import bootstrap_coco
    from deteval.diagnostics.bootstrap_voc import bootstrap_voc

    from .bbox import generate

    voc = case.name == "bootstrap-voc"
    name, boot = ("evaluate_voc", bootstrap_voc) if voc else ("evaluate_coco", bootstrap_coco)
    images = args.images or (case.quick if args.quick else case.images)
    categories = args.categories or case.categories
    per_image = args.dets_per_image or case.dets
    n_resamples = QUICK_RESAMPLES if args.quick else RESAMPLES
    started = time.perf_counter()
    gt, results = generate(args.seed, images, categories, per_image)
    with tempfile.TemporaryDirectory() as folder:
        gt_path, dt_path = Path(folder) / "gt.json", Path(folder) / "dt.json"
        gt_path.write_bytes(orjson.dumps(gt))
        dt_path.write_bytes(orjson.dumps(results))
        print(f"set: {images} images, {len(gt['annotations'])} objects, {len(results)} "
              f"detections, {categories} categories (made in "
              f"{time.perf_counter() - started:.1f} s)")
        del gt, results
        times, cpu, result = [], [], None
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            result = (deteval.evaluate_voc(str(gt_path), str(dt_path), params=deteval.VOC2007)
                      if voc else deteval.evaluate_coco(str(gt_path), str(dt_path)))
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    best, best_cpu = min(times), min(cpu)
    unread = best - result.timings["load"]
    print(f"{name:<14}: {best:8.2f} s  (best of {args.repeat}; "
          f"{unread:.2f} s without reading the files; CPU {best_cpu:.2f} s)")
    t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
    ci = boot(result, n_resamples=n_resamples, seed=args.seed)
    took, took_cpu = time.perf_counter() - t0, time.process_time() - c0
    took_cpu += _children_cpu() - k0        # its worker processes' (waited for) too
    print(f"{boot.__name__:<14}: {took:8.2f} s  ({n_resamples} resamples on "
          f"{resolve_threads(None)} threads, "
          f"{1000 * took / n_resamples:.1f} ms each; {took / best:.1f}x the evaluation, "
          f"{took / unread:.1f}x without reading; CPU {took_cpu:.2f} s, "
          f"{took_cpu / best_cpu:.1f}x the evaluation's)")
    print(f"{ci.names[0]} {ci.estimates[0]:.4f}, {100 * ci.confidence:g}% interval "
          f"[{ci.low[0]:.4f}, {ci.high[0]:.4f}]")
    identity = boot(result, weights=np.ones((1, len(result.params.image_ids)), dtype=np.int64))
    if voc:
        what = "mAP and per-class AP"
        expected, got = np.r_[result.map, result.ap[0]], identity.samples[0]
    else:
        what = "12 stats and per-class AP"
        n_stats = len(result.stats)
        expected = np.r_[result.stats, [row["AP"] for row in result.per_class()]]
        got = np.r_[identity.estimates[:n_stats], identity.estimates[n_stats + 2:]]
    if np.array_equal(got, expected, equal_nan=True):
        print(f"identity resample: the {what} equal to the last bit")
    else:
        print(f"MISMATCH: the identity resample differs by up to "
              f"{float(np.nanmax(np.abs(got - expected))):.3g}")


def run_lvis(args, case: Case, headed: bool) -> None:
    """CPU time per ``bootstrap_lvis`` resample (one thread, after the setup), and the check
    that the identity resample is the evaluation's stats and per-class AP."""
    use_source_tree()
    import numpy as np

    import deteval
    from deteval.diagnostics.bootstrap_lvis import WeightedLVIS

    from .lvis import make_set

    images = args.images or (case.quick if args.quick else case.images)
    per_image = args.dets_per_image or case.dets
    n_resamples = 20 if args.quick else 100
    gt, results = make_set(images, per_image, args.seed)
    result = deteval.evaluate_lvis(gt, results)
    print(f"set: {images} images, {len(results)} results "
          f"({int(result.matches.dt_kept.sum())} kept), {len(gt['categories'])} categories")
    c0 = time.process_time()
    weighted = WeightedLVIS(result)
    setup = time.process_time() - c0
    rows = list(weighted.resamples(n_resamples, args.seed, None))
    c0 = time.process_time()
    for w in rows:
        weighted.numbers(w)
    each = (time.process_time() - c0) / n_resamples
    print(f"bootstrap_lvis: {1000 * each:.1f} ms CPU a resample ({n_resamples} resamples, "
          f"one thread; setup {setup:.2f} s CPU)")
    expected = np.r_[result.stats, [row["AP"] for row in result.per_class()]]
    if np.array_equal(weighted.estimates, expected, equal_nan=True):
        print("identity resample: the 13 stats and per-class AP equal to the last bit")
    else:
        print("MISMATCH: the identity resample differs from the evaluation")


CASE = register(Case(
    name="bootstrap", iou_type="bbox", images=5000, quick=500, categories=80, dets=100,
    run=run,
    help="1,000 image-bootstrap resamples of a COCO evaluation against the evaluation "
    "(5,000 images, 500k detections)",
))  # fmt: skip
VOC_CASE = register(Case(
    name="bootstrap-voc", iou_type="bbox", images=4952, quick=500, categories=20, dets=100,
    run=run,
    help="1,000 image-bootstrap resamples of a VOC2007 evaluation against the evaluation "
    "(4,952 images, 20 classes, 495k detections)",
))  # fmt: skip
LVIS_CASE = register(Case(
    name="bootstrap-lvis", iou_type="bbox", images=1500, quick=300, dets=200, run=run_lvis,
    help="CPU time of one bootstrap_lvis resample (about 225k results, 1,203 categories)",
))  # fmt: skip
