"""The streaming case: peak memory and time of 2M detections streamed in 10k-detection batches
against one evaluation of them all (formerly scripts/bench_streaming.py).

The data is the bbox generator at 20,000 images x 100 detections (``--quick``: 2,000), cached
as ``gt.json`` and ``rows.npy`` (see ``_shards``). Each measurement runs in a fresh child that
loads the ground truth and the rows first, then either

* ``batch``: ``evaluate_coco(dataset, rows)``, one evaluation of the whole array, or
* ``stream``: a :class:`deteval.Evaluator` updated with consecutive slices of about 10,000 rows
  (cut at image boundaries; slices are views, no copy), then ``compute()``.

Reported per mode: wall time; the peak of memory allocated *after* loading (tracemalloc, in a
separate run, as numpy reports its buffers to it), which is what the evaluation itself needs;
the child's peak RSS (``ru_maxrss``, the loaded data included: the same in both modes) and the
streaming state's size. The two results must be equal (stats, precision, recall, scores)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ..common import LAUNCHER, peak_rss_mb, use_source_tree
from . import Case, register
from ._shards import GENERATE, batch_cuts, ensure_data, generate_child, size_of

MEASURE = "streaming-measure"
BATCH_ROWS = 10_000


def measure(folder: Path, mode: str, size: int, trace: bool) -> dict:
    """One measurement in this process (a child): see the module documentation."""
    use_source_tree()
    import tracemalloc

    import numpy as np

    import deteval

    dataset = deteval.read_coco_gt(folder / "gt.json")
    rows = np.load(folder / "rows.npy")
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    n_batches, evaluator = 1, None
    if mode == "batch":
        result = deteval.evaluate_coco(dataset, rows)
    else:
        evaluator = deteval.Evaluator(dataset)
        cuts = batch_cuts(rows[:, 0], size)
        n_batches = len(cuts) - 1
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            evaluator.update(rows[lo:hi])
        result = evaluator.compute()
    out = {"mode": mode, "seconds": time.perf_counter() - started, "batches": n_batches,
           "rss_mb": peak_rss_mb(), "stats": result.stats.tolist()}
    if trace:
        out["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    if evaluator is not None:
        out["state_mb"] = evaluator.state_nbytes / 2**20
    np.save(folder / f"result-{mode}.npy", np.concatenate(
        [result.stats, result.precision.ravel(), result.recall.ravel(), result.scores.ravel()]))
    return out


def measure_child(args) -> int:
    """``--child streaming-measure --gt FOLDER --dt MODE:ROWS[:trace]``."""
    mode, size, *trace = args.dt.split(":")
    print(json.dumps(measure(Path(args.gt), mode, int(size), trace == ["trace"])))
    return 0


def _child(folder: Path, mode: str, size: int, trace: bool) -> dict:
    spec = f"{mode}:{size}" + (":trace" if trace else "")
    done = subprocess.run([sys.executable, str(LAUNCHER), "--child", MEASURE, "--case",
                           "streaming", "--gt", str(folder), "--dt", spec],
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(args, case: Case, headed: bool) -> None:
    import numpy as np

    images, dets = size_of(args, case)
    folder = ensure_data(args.data_dir, images, dets, args.seed)
    n_rows = len(np.load(folder / "rows.npy", mmap_mode="r"))
    print(f"data: {folder} ({images} images, {n_rows} detections); batches of "
          f"~{BATCH_ROWS} rows")
    print(f"{'mode':<8} {'batches':>8} {'time s':>8} {'alloc peak MB':>14} {'RSS peak MB':>12}"
          f" {'state MB':>9}")
    stats = {}
    for mode in ("batch", "stream"):
        timed = _child(folder, mode, BATCH_ROWS, trace=False)
        traced = _child(folder, mode, BATCH_ROWS, trace=True)
        stats[mode] = np.load(folder / f"result-{mode}.npy")
        state = f"{traced['state_mb']:9.1f}" if "state_mb" in traced else f"{'-':>9}"
        print(f"{mode:<8} {timed['batches']:>8} {timed['seconds']:>8.2f} "
              f"{traced['traced_peak_mb']:>14.1f} {timed['rss_mb']:>12.1f} {state}")
    same = np.array_equal(stats["batch"], stats["stream"])
    print(f"results identical (stats, precision, recall, scores): {same}")
    if not same:
        print("MISMATCH: streaming and one evaluation differ")
    print("alloc peak: memory allocated during the evaluation (tracemalloc, input excluded); "
          "RSS peak includes the loaded ground truth and rows array in both modes.")


CASE = register(Case(
    name="streaming", iou_type="bbox", images=20_000, quick=2_000, dets=100, run=run,
    children={MEASURE: measure_child, GENERATE: generate_child},
    help="memory and time of Evaluator updates of 10k detections against one evaluation "
    "(20k images, 2M detections)",
))  # fmt: skip
