"""Peak memory and time: streaming 2M detections in 10k-detection batches vs one evaluation.

The data is scripts/bench.py's bbox generator at 20,000 images and 100 detections per image
(2M detections, 80 classes, ~146k objects), generated once in a child process and cached as
``gt.json`` and ``rows.npy`` (the (N, 7) array ``[image_id, x, y, w, h, score, category_id]``,
image by image). Each measurement runs in a fresh process that loads the ground truth and the
rows first, then either

* ``batch``: ``evaluate_coco(dataset, rows)``, one evaluation of the whole array, or
* ``stream``: an :class:`deteval.Evaluator` updated with consecutive slices of about
  ``--batch`` rows (cut at image boundaries; slices are views, no copy), then ``compute()``.

Reported per mode: wall time; the peak of memory allocated *after* loading (tracemalloc, in a
separate run, as numpy reports its buffers to it), which is what the evaluation itself needs;
and the process's peak RSS (``ru_maxrss``, the loaded data included: the same in both modes).
The two results are checked equal (stats, precision, recall, scores).

Usage::

    python scripts/bench_streaming.py --data-dir /work/bench-data
    python scripts/bench_streaming.py --images 2000 --batch 10000     # a quick run
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _bench_module():
    spec = importlib.util.spec_from_file_location("deteval_bench", REPO_ROOT / "scripts"
                                                  / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def data_folder(data_dir: Path, images: int, dets: int, seed: int) -> Path:
    return data_dir / f"streaming-v1-s{seed}-i{images}-c80-d{dets}"


def ensure_data(data_dir: Path, images: int, dets: int, seed: int) -> Path:
    """Generate (once, in a child process) and return the folder of gt.json and rows.npy."""
    folder = data_folder(data_dir, images, dets, seed)
    if (folder / "rows.npy").exists() and (folder / "gt.json").exists():
        return folder
    print(f"generating {images} images x {dets} detections into {folder} ...", flush=True)
    subprocess.run([sys.executable, __file__, "--generate", str(folder), "--images", str(images),
                    "--dets-per-image", str(dets), "--seed", str(seed)], check=True)
    return folder


def _generate(folder: Path, images: int, dets: int, seed: int) -> None:
    import numpy as np

    bench = _bench_module()
    gt = bench.make_gt(seed, images, 80)
    results = bench.make_results(gt, seed, dets)
    rows = np.array([[r["image_id"], *r["bbox"], r["score"], r["category_id"]]
                     for r in results], dtype=np.float64)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gt.json").write_text(json.dumps(gt))
    np.save(folder / "rows.npy", rows)


def batch_cuts(image_ids, size: int):
    """Slice bounds of about ``size`` rows, cut where the image changes (rows by image)."""
    import numpy as np

    starts = np.flatnonzero(np.r_[True, image_ids[1:] != image_ids[:-1]])
    targets = np.arange(size, len(image_ids), size)
    cuts = np.unique(starts[np.minimum(np.searchsorted(starts, targets), len(starts) - 1)])
    return np.r_[0, cuts[cuts > 0], len(image_ids)]


def _measure(folder: Path, mode: str, size: int, trace: bool) -> dict:
    import tracemalloc

    import numpy as np

    import deteval

    dataset = deteval.read_coco_gt(folder / "gt.json")
    rows = np.load(folder / "rows.npy")
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    n_batches = 1
    if mode == "batch":
        result = deteval.evaluate_coco(dataset, rows)
    else:
        evaluator = deteval.Evaluator(dataset)
        cuts = batch_cuts(rows[:, 0], size)
        n_batches = len(cuts) - 1
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            evaluator.update(rows[lo:hi])
        result = evaluator.compute()
    seconds = time.perf_counter() - started
    out = {"mode": mode, "seconds": seconds, "batches": n_batches,
           "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "stats": result.stats.tolist()}
    if trace:
        out["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    if mode == "stream":
        out["state_mb"] = evaluator.state_nbytes / 2**20
    np.save(folder / f"result-{mode}.npy", np.concatenate(
        [result.stats, result.precision.ravel(), result.recall.ravel(), result.scores.ravel()]))
    return out


def _child(folder: Path, mode: str, size: int, trace: bool) -> dict:
    command = [sys.executable, __file__, "--measure", str(folder), "--mode", mode,
               "--batch", str(size)] + (["--trace"] if trace else [])
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--dets-per-image", type=int, default=100)
    parser.add_argument("--batch", type=int, default=10_000, help="rows per update")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=Path("bench-data"))
    parser.add_argument("--generate", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("batch", "stream"), help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.generate:
        _generate(args.generate, args.images, args.dets_per_image, args.seed)
        return
    if args.measure:
        print(json.dumps(_measure(args.measure, args.mode, args.batch, args.trace)))
        return

    import numpy as np

    folder = ensure_data(args.data_dir, args.images, args.dets_per_image, args.seed)
    n_rows = len(np.load(folder / "rows.npy", mmap_mode="r"))
    print(f"data: {folder} ({args.images} images, {n_rows} detections); batches of "
          f"~{args.batch} rows")
    print(f"{'mode':<8} {'batches':>8} {'time s':>8} {'alloc peak MB':>14} {'RSS peak MB':>12}"
          f" {'state MB':>9}")
    stats = {}
    for mode in ("batch", "stream"):
        timed = _child(folder, mode, args.batch, trace=False)
        traced = _child(folder, mode, args.batch, trace=True)
        stats[mode] = np.load(folder / f"result-{mode}.npy")
        state = f"{traced['state_mb']:9.1f}" if "state_mb" in traced else f"{'-':>9}"
        print(f"{mode:<8} {timed['batches']:>8} {timed['seconds']:>8.2f} "
              f"{traced['traced_peak_mb']:>14.1f} {timed['rss_mb']:>12.1f} {state}")
    same = np.array_equal(stats["batch"], stats["stream"])
    print(f"results identical (stats, precision, recall, scores): {same}")
    print("alloc peak: memory allocated during the evaluation (tracemalloc, input excluded); "
          "RSS peak includes the loaded ground truth and rows array in both modes.")


if __name__ == "__main__":
    main()
