"""The report: the table of times and memory, the ratios, time per detection, and the agreement
of every tool's stats with pycocotools'."""

from __future__ import annotations

import math

from .cases import Case
from .common import (
    PHASES,
    REFERENCE_TOOL,
    STATS_TOLERANCE,
    fmt_count,
    fmt_ratio,
    fmt_s,
    median,
    peak_rss_mb,
)
from .peers import PEERS

COLUMNS = (("runs", 5), ("e2e med", 9), ("e2e min", 9), ("cpu", 8), ("import", 8),
           ("load gt", 9), ("load dt", 9), ("evaluate", 9), ("accum", 8), ("summ", 8),
           ("peak MB", 9))  # fmt: skip


def summarise_tool(records: list[dict]) -> dict:
    """Medians over the successful runs of one tool."""
    ok = [r for r in records if "error" not in r]
    phases = {p: median([r["phases"].get(p) for r in ok]) for p in ("import", *PHASES)}
    inner_names = list(dict.fromkeys(name for r in ok for name in r.get("inner", {})))
    return {
        "runs": len(ok),
        "e2e": median([r["e2e_s"] for r in ok]),
        "e2e_min": min(r["e2e_s"] for r in ok),
        "cpu": median([r["cpu_s"] for r in ok]),
        "peak_mb": max(r["peak_mb"] for r in ok),
        "phases": phases,
        "inner": {n: median([r["inner"].get(n) for r in ok]) for n in inner_names},
        "stats": ok[0]["stats"],
        "stable": all(r["stats"] == ok[0]["stats"] for r in ok),
    }


def split_runs(tools: list[str], records: dict[str, list[dict]]) -> tuple[dict, dict]:
    """``(summaries, failures)``: a summary per tool whose every run succeeded, else its error."""
    summaries, failures = {}, {}
    for tool in tools:
        runs = records[tool]
        if runs and all("error" not in r for r in runs):
            summaries[tool] = summarise_tool(runs)
        else:
            failures[tool] = next((r for r in runs if "error" in r), {"error": "did not run"})
    return summaries, failures


def _row(tool: str, s: dict) -> str:
    ph = s["phases"]
    cells = (str(s["runs"]), fmt_s(s["e2e"]), fmt_s(s["e2e_min"]), fmt_s(s["cpu"]),
             *(fmt_s(ph[p]) for p in ("import", *PHASES)), f"{s['peak_mb']:.0f}")  # fmt: skip
    return f"{tool:<22}" + "".join(f"{c:>{w}}" for c, (_, w) in zip(cells, COLUMNS))


def print_table(tools: list[str], summaries: dict, failures: dict, n_stats: int) -> None:
    print()
    print(f"Times in seconds: e2e = files to the {n_stats} stats, import excluded; "
          "cpu = user+sys of e2e;")  # fmt: skip
    print("medians over runs, each run a fresh process; peak MB = max ru_maxrss over runs")
    print(f"(its floor is this process's own peak, {peak_rss_mb():.0f} MB, which a child "
          "inherits); '-': the tool has no such phase.")  # fmt: skip
    header = f"{'tool':<22}" + "".join(f"{name:>{w}}" for name, w in COLUMNS)
    print(header)
    print("-" * len(header))
    for tool in tools:
        if tool in failures:
            print(f"{tool:<22}  {failures[tool]['error']}")
        else:
            print(_row(tool, summaries[tool]))


def print_notes(summaries: dict, failures: dict) -> None:
    """What each tool's phases hold, deteval's own timings, and the failures' stderr."""
    for tool, s in summaries.items():
        peer = PEERS.get(tool)
        if peer and peer.note:
            print(f"  {tool}: {peer.note}")
        if s["inner"]:
            split = ", ".join(f"{name} {fmt_s(t)}" for name, t in s["inner"].items())
            print(f"  {tool} result.timings (medians, s): {split}")
    for tool, failure in failures.items():
        for line in failure.get("stderr_tail", []):
            print(f"  [{tool}] {line}")


def print_ratios(tools: list[str], summaries: dict, baseline: str, case: Case,
                 detections: int) -> None:  # fmt: skip
    """End-to-end time of each tool, its ratio to the baseline and its time per detection."""
    print()
    if baseline in summaries:
        base = baseline
        print(f"End to end against {baseline} (median), and per detection ({detections}):")
    else:
        base = min(summaries, key=lambda t: summaries[t]["e2e"])
        why = "has no result" if baseline in tools else "was not run"
        print(f"End to end (median); {baseline} {why}, ratios against {base}, the fastest:")
    for tool in tools:
        if tool in summaries:
            e2e = summaries[tool]["e2e"]
            ratio = fmt_ratio(e2e / summaries[base]["e2e"])
            per_det = e2e / max(detections, 1) * 1e6
            print(f"  {tool:<22}{fmt_s(e2e):>8} s  = {ratio:>7} {base}  "
                  f"{per_det:8.2f} us/detection")  # fmt: skip
    needed = case.required_speedup
    if needed and "deteval" in summaries and REFERENCE_TOOL in summaries:
        speedup = summaries[REFERENCE_TOOL]["e2e"] / summaries["deteval"]["e2e"]
        verdict = "met" if speedup >= needed else "NOT MET"
        print(f"  => deteval is {speedup:.1f}x faster than {REFERENCE_TOOL} end to end "
              f"(issue 3 asks >= {needed:g}x): {verdict}")  # fmt: skip


def _print_stat_rows(stat_names: tuple[str, ...], stats: list[float], prefix: str = "") -> None:
    half = (len(stat_names) + 1) // 2
    for start in (0, half):
        stop = min(start + half, len(stat_names))
        cells = (f"{stat_names[k]} {stats[k]:.6f}" for k in range(start, stop))
        print(f"  {prefix}" + "  ".join(cells))


def _agreement(tool: str, s: dict, reference: list[float], stat_names: tuple[str, ...]) -> None:
    diffs = [abs(a - b) for a, b in zip(s["stats"], reference, strict=True)]
    worst = math.nan if any(d != d for d in diffs) else max(diffs)  # NaN: a stat is NaN
    if s["stats"] == reference:
        verdict = "identical to the last bit"
    else:
        differing = [stat_names[k] for k, d in enumerate(diffs) if not d == 0]
        verdict = f"differs in {', '.join(differing)}"
    stable = "" if s["stable"] else "; stats vary between runs!"
    print(f"  {tool:<22}max |diff| {worst:.3g}  ({verdict}){stable}")
    if not worst <= STATS_TOLERANCE:  # also catches NaN
        worse = [stat_names[k] for k, d in enumerate(diffs) if not d <= STATS_TOLERANCE]
        print(f"  MISMATCH: {tool} differs from {REFERENCE_TOOL} by more than "
              f"{STATS_TOLERANCE:g} in {', '.join(worse)}")  # fmt: skip


def print_stats(tools: list[str], summaries: dict, case: Case) -> None:
    """Every tool's stats against pycocotools', or the stats alone if it has none."""
    stat_names = case.stat_names
    print()
    if REFERENCE_TOOL in summaries:
        reference = summaries[REFERENCE_TOOL]["stats"]
        print(f"Stats against {REFERENCE_TOOL} (the reference):")
        _print_stat_rows(stat_names, reference)
        for tool in tools:
            if tool in summaries and tool != REFERENCE_TOOL:
                _agreement(tool, summaries[tool], reference, stat_names)
    elif not any(case.iou_type in p.iou_types for p in PEERS.values() if p.name != "deteval"):
        print(f"Stats (no reference: no peer evaluates {case.iou_type}):")
        for tool, s in summaries.items():
            _print_stat_rows(stat_names, s["stats"], f"{tool}: ")
    else:
        print(f"Stats: {REFERENCE_TOOL} has no result, so no reference to compare with.")
        for tool, s in summaries.items():
            print(f"  {tool:<22}" + " ".join(f"{v:.4f}" for v in s["stats"]))
        if len(summaries) > 1 and len({tuple(s["stats"]) for s in summaries.values()}) == 1:
            print(f"  (the {len(summaries)} tools' stats are identical to the last bit)")


def print_report(tools: list[str], records: dict[str, list[dict]], baseline: str, case: Case,
                 detections: int) -> dict:  # fmt: skip
    """The whole report of one case at one size; returns the tools' summaries."""
    summaries, failures = split_runs(tools, records)
    print_table(tools, summaries, failures, len(case.stat_names))
    print_notes(summaries, failures)
    if summaries:
        print_ratios(tools, summaries, baseline, case, detections)
        print_stats(tools, summaries, case)
    return summaries


def print_scaling(case: Case, tools: list[str], scales: list[tuple[int, dict]]) -> None:
    """One row per tool, one column per size: median e2e, time per detection and peak memory."""
    print()
    print(f"Scaling of case {case.name}: median e2e s / us per detection / peak MB, by number of "
          "detections")  # fmt: skip
    width = 26
    header = f"{'tool':<22}" + "".join(f"{fmt_count(n):>{width}}" for n, _ in scales)
    print(header)
    print("-" * len(header))
    for tool in [t for t in tools if any(t in summaries for _, summaries in scales)]:
        cells = []
        for n, summaries in scales:
            s = summaries.get(tool)
            cells.append("-" if s is None else
                         f"{fmt_s(s['e2e'])} s {s['e2e'] / max(n, 1) * 1e6:.2f} us "
                         f"{s['peak_mb']:.0f} MB")  # fmt: skip
        print(f"{tool:<22}" + "".join(f"{c:>{width}}" for c in cells))
