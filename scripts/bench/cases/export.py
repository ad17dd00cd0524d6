"""The export case: time of the match table's and the tidy table's exports of one COCO
evaluation of 500,000 detections (the bbox generator at 5,000 images x 100 detections,
``--quick``: 500 images), 10 IoU thresholds.

The data is cached as the shards cases cache theirs (``gt.json`` and ``rows.npy``, see
``_shards``); the evaluation runs once, then each export ``--repeat`` times (best reported):

* ``MatchTable.to_csv`` (one line per detection and threshold: 5M lines) and ``to_json``;
* the tidy export (deteval/tidy.py) at IoU 0.5, with and without the outcome columns:
  ``tidy_columns``, ``to_frame`` (pandas), ``to_arrow`` (pyarrow), CSV and Parquet files.

Exports whose library is missing are reported "n/a". Files go to a temporary folder."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from ..common import use_source_tree
from . import Case, register
from ._shards import ensure_data, size_of


def _best(function, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def _exports(result, folder: Path) -> list[tuple[str, object]]:
    from deteval.tidy import tidy_columns, to_arrow, to_frame, write_table

    table = result.matches
    lines = table.n_detections * len(table.iou_thresholds)
    steps = [(f"MatchTable.to_csv ({lines:,} lines)", table.to_csv),
             ("MatchTable.to_json", table.to_json)]
    for outcomes in (False, True):
        tag = "with outcomes" if outcomes else "no outcomes"
        steps += [
            (f"tidy_columns ({tag})", lambda o=outcomes: tidy_columns(result, outcomes=o)),
            (f"to_frame ({tag})", lambda o=outcomes: to_frame(result, outcomes=o)),
            (f"to_arrow ({tag})", lambda o=outcomes: to_arrow(result, outcomes=o)),
            (f"CSV file ({tag})",
             lambda o=outcomes: write_table(result, folder / "rows.csv", outcomes=o)),
            (f"Parquet file ({tag})",
             lambda o=outcomes: write_table(result, folder / "rows.parquet", outcomes=o)),
        ]
    return steps


def run(args, case: Case, headed: bool) -> None:
    use_source_tree()
    import numpy as np

    import deteval

    for library in ("pandas", "pyarrow.parquet"):      # imported before any timing
        try:
            __import__(library)
        except ImportError:
            pass
    images, dets = size_of(args, case)
    folder = ensure_data(args.data_dir, images, dets, args.seed)
    dataset = deteval.read_coco_gt(folder / "gt.json")
    rows = np.load(folder / "rows.npy")
    started = time.perf_counter()
    result = deteval.evaluate_coco(dataset, rows)
    print(f"data: {folder} ({images} images, {len(rows)} detections, {len(dataset.gt)} "
          f"objects); evaluate_coco {time.perf_counter() - started:.2f} s")
    print(f"{'export':<48} {'best s':>8}  (of {args.repeat})")
    with tempfile.TemporaryDirectory() as scratch:
        for name, step in _exports(result, Path(scratch)):
            try:
                seconds = f"{_best(step, args.repeat):8.3f}"
            except ImportError:
                seconds = f"{'n/a':>8}"
            print(f"{name:<48} {seconds}")


CASE = register(Case(
    name="export", iou_type="bbox", images=5_000, quick=500, dets=100, run=run,
    help="the match table's CSV/JSON and the tidy table's frame, Arrow, CSV and Parquet "
    "exports at 500k detections",
))  # fmt: skip
