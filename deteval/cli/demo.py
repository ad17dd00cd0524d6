"""``deteval demo``: evaluate the bundled sample dataset."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from ._common import _report, _write_json
from ._shared_options import add_json_output


def add_parser(commands) -> None:
    """Add the ``demo`` command to the subparsers ``commands``."""
    demo = commands.add_parser("demo", help="evaluate the bundled sample dataset",
                               description="Evaluate the bundled synthetic sample "
                               "(fixtures/demo) and print the summary and per-class table.")
    add_json_output(demo, help="also write the results as JSON")


def run(args, out: TextIO, err: TextIO) -> int:
    from ..protocols.coco import evaluate_coco

    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "demo"
    gt_path, dt_path = fixtures / "gt.json", fixtures / "detections.json"
    if gt_path.is_file() and dt_path.is_file():
        gt, dt, where = gt_path, dt_path, str(fixtures)
    else:  # installed without the source tree: generate the same sample in memory
        from ..demo import make_demo

        gt, dt = make_demo()
        where = "generated in memory (deteval.demo.make_demo)"
    result = evaluate_coco(gt, dt)
    if args.json:   # files first: written whatever happens to stdout
        _write_json(args.json, result.to_dict())
    data = result.dataset
    print(f"deteval demo: {len(data.images)} images, {len(data.categories)} categories, "
          f"{len(data.gt)} objects, {len(result.detections)} detections ({where})", file=out)
    print(file=out)
    _report(result, out, err, per_class=True)
    print(file=out)
    print(f"AP = {result.stat('AP'):.3f}, AP50 = {result.stat('AP50'):.3f}; evaluated in "
          f"{result.timings['total'] * 1000:.0f} ms. Try: deteval coco GT.json DT.json "
          "--per-class --json out.json", file=out)
    return 0
