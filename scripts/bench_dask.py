"""Sharded evaluation: one process (file by file) vs a Dask LocalCluster, and what travels.

Data: scripts/bench_streaming.py's set (scripts/bench.py's bbox generator, default 20,000
images x 100 detections = 2M), written as ``--shards`` COCO results files split by image
(cached next to it). Timed, from the files to the 12 stats:

* ``one process``: :func:`deteval.evaluate_files` (each shard read, matched and dropped in
  turn);
* ``dask``: :func:`deteval.dask.evaluate` on a ``distributed.LocalCluster`` of ``--workers``
  processes (one thread each), cluster start-up timed apart; shards are read and matched on
  the workers and their states merged in a tree.

What crosses the network is each shard's state (:meth:`deteval.Evaluator.to_bytes`), printed
per shard next to the shard file's size; the merged state goes to the client. Both results
are checked equal to the last bit.

Usage::

    python scripts/bench_dask.py --data-dir /work/bench-data
    python scripts/bench_dask.py --images 2000 --shards 4       # a quick run
"""

from __future__ import annotations

import argparse
import importlib.util
import time
import warnings
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _streaming_bench():
    spec = importlib.util.spec_from_file_location("bench_streaming",
                                                  REPO_ROOT / "scripts" / "bench_streaming.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_shards(folder: Path, n_shards: int) -> list[Path]:
    """Results files of consecutive images, about as many detections each (cached)."""
    import numpy as np
    import orjson

    paths = [folder / f"shard-{k}-of-{n_shards}.json" for k in range(n_shards)]
    if all(p.exists() for p in paths):
        return paths
    rows = np.load(folder / "rows.npy")
    cuts = _streaming_bench().batch_cuts(rows[:, 0], -(-len(rows) // n_shards))
    for path, lo, hi in zip(paths, cuts[:-1], cuts[1:]):
        part = rows[lo:hi]
        records = [{"image_id": int(r[0]), "category_id": int(r[6]), "bbox": r[1:5].tolist(),
                    "score": float(r[5])} for r in part]
        path.write_bytes(orjson.dumps(records))
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--dets-per-image", type=int, default=100)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=Path("bench-data"))
    args = parser.parse_args(argv)

    import numpy as np

    import deteval
    from deteval.dask import evaluate

    folder = _streaming_bench().ensure_data(args.data_dir, args.images, args.dets_per_image,
                                            args.seed)
    gt_path = folder / "gt.json"
    paths = write_shards(folder, args.shards)
    print(f"data: {folder}: {args.images} images, {len(paths)} shards")

    started = time.perf_counter()
    one = deteval.evaluate_files(gt_path, paths)
    one_seconds = time.perf_counter() - started

    import distributed

    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=args.workers, processes=True,
                                           threads_per_worker=1, dashboard_address=None)
        client = distributed.Client(cluster)
    startup = time.perf_counter() - started
    try:
        client.run(lambda: __import__("deteval"))          # workers import deteval first
        started = time.perf_counter()
        result = evaluate(gt_path, paths, client=client)
        dask_seconds = time.perf_counter() - started
        started = time.perf_counter()
        evaluate(gt_path, paths, client=client)             # workers warm (imports)
        warm_seconds = time.perf_counter() - started
    finally:
        client.close()
        cluster.close()

    same = all(np.array_equal(getattr(one, n), getattr(result, n))
               for n in ("stats", "precision", "recall", "scores"))
    print(f"one process (evaluate_files):     {one_seconds:7.2f} s")
    print(f"dask, {args.workers} workers (first call):   {dask_seconds:7.2f} s   (cluster "
          f"start-up {startup:.2f} s apart; each call reads the ground truth once per worker)")
    print(f"dask, {args.workers} workers (second call):  {warm_seconds:7.2f} s")
    print(f"results identical: {same}")

    print(f"\n{'shard':<24} {'file MB':>8} {'detections':>11} {'state bytes':>12} "
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


if __name__ == "__main__":
    main()
