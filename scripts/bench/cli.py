"""The command line: options, the runs of each case (round robin over the tools), the report.

The same entry point serves the child processes (``--child TOOL``, ``--generate``), which the
parent starts through the launcher ``scripts/bench.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time
from pathlib import Path

from .cases import CASES, Case, child_entry_points
from .child import child_main, run_child
from .common import SETTLE_S
from .data import generate_main, prepare_data
from .machine import machine_lines
from .peers import PEERS
from .report import print_report, print_scaling


def all_tools() -> list[str]:
    """The peers, then every case's own tools, in the order the report lists them."""
    extra = [t for case in CASES.values() for t in case.tools if t not in PEERS]
    return [*PEERS, *dict.fromkeys(extra)]


def case_size(args: argparse.Namespace, case: Case, detections: int | None = None) -> dict:
    """Images, classes and results per image of a case: the options, else its defaults.

    With ``detections``, the images are as many as make that many detections at the case's
    (or ``--dets-per-image``) detections per image.
    """
    dets = args.dets_per_image or case.dets
    if detections:
        images = max(1, math.ceil(detections / dets))
    else:
        images = args.images or (case.quick if args.quick else case.images)
    categories = case.categories if case.fixed_categories else args.categories or case.categories
    return {"images": images, "categories": categories, "dets": dets}


def _unavailable(tool: str, case: Case) -> str | None:
    """Why ``tool`` cannot run ``case``, or None."""
    if tool in case.tools:
        return None
    peer = PEERS.get(tool)
    if peer is None:
        return "n/a: a tool of another case"
    if case.peers is not None and tool not in case.peers:
        return f"n/a: not a peer of case {case.name}"
    if case.iou_type not in peer.iou_types:
        kinds = ", ".join(sorted(peer.iou_types))
        return f"n/a: no {case.iou_type} evaluation (its iouType is {kinds})"
    if tool != "deteval" and importlib.util.find_spec(peer.module) is None:
        return "not installed"
    return None


def run_tools(args: argparse.Namespace, case: Case, tools: list[str], gt_path: Path,
              dt_path: Path) -> dict[str, list[dict]]:  # fmt: skip
    """Every tool's runs, round robin, so that a slow drift of the machine favours none."""
    repeat_slow = args.repeat_slow or (args.repeat if args.quick else 1)
    slow = {t for t in tools if t in PEERS and PEERS[t].slow}
    planned = {t: repeat_slow if t in slow else args.repeat for t in tools}
    records: dict[str, list[dict]] = {t: [] for t in tools}
    for tool in tools:
        why = _unavailable(tool, case)
        if why:
            records[tool].append({"tool": tool, "error": why})
    for run in range(max(planned.values(), default=0)):
        for tool in tools:
            done = records[tool]
            if run >= planned[tool] or any("error" in r for r in done):
                continue
            record = run_child(tool, case, gt_path, dt_path, args.timeout, args.settle)
            done.append(record)
            if "error" in record:
                print(f"  {tool:<22}run {run + 1}/{planned[tool]}  failed: {record['error']}")
            else:
                print(f"  {tool:<22}run {run + 1}/{planned[tool]}  {record['e2e_s']:8.3f} s"
                      f"  {record['peak_mb']:7.0f} MB")  # fmt: skip
            sys.stdout.flush()
    return records


def run_case(args: argparse.Namespace, case: Case, headed: bool,
             detections: int | None = None) -> tuple[int, dict]:  # fmt: skip
    """Generate (or reuse) the case's data, run the tools and print the report.

    Returns the number of detections and the tools' summaries.
    """
    size = case_size(args, case, detections)
    if headed:
        print()
        print("=" * 100)
        scale = f", {detections} detections" if detections else ""
        print(f"case {case.name} (iou_type {case.iou_type!r}{scale})")
        print("=" * 100)
    # Another case's own tools, and the peers a case leaves out, are not in its table.
    tools = [t for t in all_tools() if t in args.tools and (
        t in case.tools or (t in PEERS and (case.peers is None or t in case.peers)))]
    start = time.perf_counter()
    gt_path, dt_path, summary, reused = prepare_data(args, case, size)
    how = "reused" if reused else f"generated in {time.perf_counter() - start:.1f} s"
    print(f"data:     {gt_path.parent} ({how})")
    sizes = (f"gt.json {gt_path.stat().st_size / 1e6:.1f} MB, "
             f"results.json {dt_path.stat().st_size / 1e6:.1f} MB")  # fmt: skip
    for line in case.data_lines(summary, size["dets"], sizes):
        print(f"          {line}")
    print()
    records = run_tools(args, case, tools, gt_path, dt_path)
    summaries = print_report(tools, records, args.baseline, case, summary["detections"])
    if case.after:
        case.after(args, gt_path, dt_path, size, tools)
    sys.stdout.flush()
    return summary["detections"], summaries


def run_scales(args: argparse.Namespace, case: Case, headed: bool) -> None:
    """The case once, or once per --detections value and then the scaling table."""
    if case.run:
        case.run(args, case, headed)
        return
    if not args.detections:
        run_case(args, case, headed)
        return
    scales = [run_case(args, case, True, n) for n in args.detections]
    tools = [t for t in all_tools() if t in args.tools]
    print_scaling(case, tools, scales)
    sys.stdout.flush()


def make_parser() -> argparse.ArgumentParser:
    tools = all_tools()
    parser = argparse.ArgumentParser(
        prog="scripts/bench.py",
        description=f"Time {', '.join(tools)} on synthetic data, side by side.")
    add = parser.add_argument
    cases = "; ".join(f"{c.name}: {c.help}" for c in CASES.values())
    add("--case", choices=(*CASES, "all"), default="bbox",
        help=f"what to evaluate (default bbox), or all in turn. {cases}")
    add("--tools", nargs="+", choices=tools, default=tools, metavar="TOOL",
        help=f"tools to run, among {', '.join(tools)} (default: all)")
    defaults = ", ".join(f"{c.name} {c.images}" for c in CASES.values())
    quick = ", ".join(str(c.quick) for c in CASES.values())
    add("--images", type=int,
        help=f"number of images (default: {defaults}; with --quick {quick})")
    add("--detections", type=int, nargs="+", metavar="N",
        help="total detections instead of --images: as many images as make N at the case's "
        "detections per image (2000000: 20k bbox images at 100 each); several N run the case "
        "at each size and end with a scaling table (time per detection, peak memory)")
    add("--categories", type=int,
        help="number of classes (default 80; rotated 15; keypoints always 1, person)")
    add("--dets-per-image", type=int,
        help="detections per image (default 100; keypoints: at most 20)")
    add("--seed", type=int, default=0, help="seed of the generator (default 0)")
    add("--quick", action="store_true", help="smaller sets; every tool runs --repeat times")
    add("--repeat", type=int, default=3, help="runs per tool (default 3)")
    slow = " and ".join(p.name for p in PEERS.values() if p.slow)
    add("--repeat-slow", type=int, help=f"runs of {slow} (default 1; --repeat with --quick)")
    add("--baseline", choices=tools, default="deteval",
        help="tool the ratios are computed against (default deteval)")
    add("--data-dir", type=Path, default=Path("bench-data"),
        help="cache of generated files (default ./bench-data/)")
    add("--naive-images", type=int,
        help="rotated: images of the naive shapely baseline's subset (default a tenth)")
    add("--timeout", type=float, default=1800.0, help="seconds per run (default 1800)")
    add("--settle", type=float, default=SETTLE_S, metavar="S",
        help="seconds each run waits after its import phase, untimed, the same for every "
        f"tool (numpy's import leaves OpenBLAS threads spinning ~0.1 s; default {SETTLE_S:g})")
    add("--child", choices=(*tools, *child_entry_points()), help=argparse.SUPPRESS)
    add("--gt", help=argparse.SUPPRESS)
    add("--dt", help=argparse.SUPPRESS)
    add("--generate", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.detections and args.images:
        parser.error("--detections sets the number of images: give one or the other")
    case = CASES.get(args.case)
    if args.child in child_entry_points():
        return child_entry_points()[args.child](args)
    if args.child:
        return child_main(args.child, case, args.gt, args.dt, args.settle)
    if args.generate:
        return generate_main(case, args, case_size(args, case))

    for line in machine_lines():
        print(line)
    if args.settle:
        print(f"Each run waits {args.settle:g} s after its import phase, untimed, before its "
              "timed phases (--settle; numpy's import leaves OpenBLAS threads spinning ~0.1 s).")
    cases = list(CASES.values()) if args.case == "all" else [case]
    for one in cases:
        run_scales(args, one, headed=len(cases) > 1)
    return 0
