"""The dask case: sharded evaluation in one process (file by file) against a Dask LocalCluster,
and what crosses the network (formerly scripts/bench_dask.py).

Data: the streaming case's set (the bbox generator, 20,000 images x 100 detections = 2M;
``--quick``: 2,000 images), written as 8 COCO results files split by image (cached next to
it). Timed, from the files to the 12 stats:

* ``one process``: :func:`deteval.evaluate_files` (each shard read, matched and dropped);
* ``dask``: :func:`deteval.dask.evaluate` on a ``distributed.LocalCluster`` of 2 worker
  processes (one thread each), cluster start-up timed apart, first and second call (warm).

What crosses the network is each shard's state (:meth:`deteval.Evaluator.to_bytes`), printed
per shard next to the shard file's size; the merged state goes to the client. Both results
must be equal to the last bit."""

from __future__ import annotations

import time
import warnings

from ..common import use_source_tree
from . import Case, register
from ._shards import GENERATE, ensure_data, generate_child, size_of, write_shards

SHARDS = 8
WORKERS = 2


def run(args, case: Case, headed: bool) -> None:
    use_source_tree()
    import numpy as np

    import deteval

    images, dets = size_of(args, case)
    folder = ensure_data(args.data_dir, images, dets, args.seed)
    gt_path = folder / "gt.json"
    paths = write_shards(folder, SHARDS)
    print(f"data: {folder}: {images} images, {images * dets} detections, {len(paths)} shards")
    try:
        import distributed

        from deteval.dask import evaluate
    except ImportError as error:
        print(f"dask: not installed ({error}): pip install 'deteval[dask]'")
        return

    started = time.perf_counter()
    one = deteval.evaluate_files(gt_path, paths)
    one_seconds = time.perf_counter() - started

    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=WORKERS, processes=True,
                                           threads_per_worker=1, dashboard_address=None)
        client = distributed.Client(cluster)
    startup = time.perf_counter() - started
    try:
        client.run(lambda: __import__("deteval"))          # workers import deteval first
        started = time.perf_counter()
        result = evaluate(gt_path, paths, client=client)
        dask_seconds = time.perf_counter() - started
        started = time.perf_counter()
        evaluate(gt_path, paths, client=client)             # workers warm
        warm_seconds = time.perf_counter() - started
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            client.close()
            cluster.close()

    same = all(np.array_equal(getattr(one, n), getattr(result, n))
               for n in ("stats", "precision", "recall", "scores"))
    print(f"one process (evaluate_files):     {one_seconds:7.2f} s")
    print(f"dask, {WORKERS} workers (first call):   {dask_seconds:7.2f} s   (cluster "
          f"start-up {startup:.2f} s apart; each call reads the ground truth once per worker)")
    print(f"dask, {WORKERS} workers (second call):  {warm_seconds:7.2f} s")
    print(f"results identical (stats, precision, recall, scores): {same}")
    if not same:
        print("MISMATCH: the cluster's result differs from one process's")

    print("\nWhat crosses the network: each shard's state (to_bytes), merged in a tree")
    print(f"{'shard':<24} {'file MB':>8} {'detections':>11} {'state bytes':>12} "
          f"{'bytes/det':>9}")
    template = deteval.Evaluator(gt_path, unknown_labels="drop")
    merged = template.blank()
    for path in paths:
        evaluator = template.blank()
        evaluator.update(deteval.read_coco_results(path, template.gt))
        data = evaluator.to_bytes()
        merged.merge_bytes(data)
        print(f"{path.name:<24} {path.stat().st_size / 2**20:8.1f} "
              f"{evaluator.n_detections:>11} {len(data):>12} "
              f"{len(data) / max(evaluator.n_detections, 1):9.1f}")
    print(f"{'merged state':<24} {'':>8} {merged.n_detections:>11} "
          f"{len(merged.to_bytes()):>12}")


CASE = register(Case(
    name="dask", iou_type="bbox", images=20_000, quick=2_000, dets=100, run=run,
    children={GENERATE: generate_child},
    help="8 results shards (20k images, 2M detections): one process against a Dask "
    "LocalCluster, and the state bytes each shard sends",
))  # fmt: skip
