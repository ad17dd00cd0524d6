"""Time the pycocotools drop-in (deteval.compat) against deteval.evaluate_coco on one case.

Both run end to end from the same files in a fresh subprocess each time (import excluded):
``evaluate_coco(gt, results)`` against ``COCO(gt)``, ``loadRes(results)``, ``COCOeval``,
``evaluate()``, ``accumulate()``, ``summarize()`` (stdout discarded). The runs alternate, and
the report gives the median and minimum of each and the ratio of the medians, and checks that
the two give the same 12 stats.

Usage (from the repository root)::

    python scripts/bench_compat.py                                  # bbox bench case
    python scripts/bench_compat.py --case /work/bench-data/segm-v1-s0-i500-c80-d100 --repeat 3

The case directory holds ``gt.json``, ``results.json`` and ``meta.json`` (its
``params.case`` is the IoU type, bbox when absent), as ``scripts/bench.py`` writes them.
Nothing is asserted on timings.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import contextlib, io, json, sys, time
sys.path.insert(0, {root!r})
mode, gt, results, iou_type = {mode!r}, {gt!r}, {results!r}, {iou_type!r}
if mode == "engine":
    import deteval
    started = time.perf_counter()
    stats = deteval.evaluate_coco(gt, results, iou_type=iou_type).stats
    elapsed = time.perf_counter() - started
else:
    from deteval.compat import COCO, COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        started = time.perf_counter()
        coco_gt = COCO(gt)
        evaluator = COCOeval(coco_gt, coco_gt.loadRes(results), iou_type)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
        elapsed = time.perf_counter() - started
    stats = evaluator.stats
print(json.dumps({{"seconds": elapsed, "stats": [float(s) for s in stats]}}))
"""


def _run(mode: str, case: Path, iou_type: str) -> dict:
    code = _CHILD.format(root=str(ROOT), mode=mode, gt=str(case / "gt.json"),
                         results=str(case / "results.json"), iou_type=iou_type)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", type=Path,
                        default=Path("/work/bench-data/synth-v2-s0-i5000-c80-d100"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    meta_path = args.case / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    iou_type = meta.get("params", {}).get("case", "bbox")
    times: dict[str, list[float]] = {"engine": [], "compat": []}
    stats = {}
    for _ in range(args.repeat):
        for mode in times:
            run = _run(mode, args.case, iou_type)
            times[mode].append(run["seconds"])
            stats[mode] = run["stats"]
    print(f"case {args.case.name} ({iou_type}), {args.repeat} runs each, seconds end to end")
    for mode, values in times.items():
        name = "deteval.evaluate_coco" if mode == "engine" else "deteval.compat (pycocotools API)"
        print(f"  {name:<34} median {statistics.median(values):.3f}  min {min(values):.3f}")
    ratio = statistics.median(times["compat"]) / statistics.median(times["engine"])
    print(f"  compat / engine (medians): {ratio:.2f}x")
    print(f"  same 12 stats: {stats['engine'] == stats['compat']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
