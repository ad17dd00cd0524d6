"""The child process: one tool, one run, one JSON line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

from .cases import Case
from .common import LAUNCHER, PhaseTimer, peak_rss_mb
from .peers import PEERS


def runner_of(tool: str, case: Case):
    """The function that runs ``tool`` on ``case``: the case's own tools first, then the peers."""
    return case.tools[tool] if tool in case.tools else PEERS[tool].run


def child_main(tool: str, case: Case, gt_path: str, dt_path: str, settle: float = 0.0) -> int:
    """Run one tool once; print one JSON line with timings, peak RSS and stats (or an error).

    The tools print progress to stdout, some from native code, so file descriptor 1 itself is
    pointed at /dev/null while they run and restored for the JSON line.
    """
    timer = PhaseTimer(settle)
    record: dict = {"tool": tool}
    sys.stdout.flush()
    saved_stdout = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        stats, inner = runner_of(tool, case)(gt_path, dt_path, timer, case.iou_type)
        record["stats"] = [float(s) for s in stats]
        record["inner"] = inner
    except Exception as exc:  # any failure of the tool is a result to report, not a crash
        record["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        traceback.print_exc(file=sys.stderr)
    finally:
        sys.stdout.flush()
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
        os.close(devnull)
    record["phases"] = timer.times
    record["e2e_s"] = sum(t for name, t in timer.times.items() if name != "import")
    record["cpu_s"] = sum(t for name, t in timer.cpu.items() if name != "import")
    record["peak_mb"] = peak_rss_mb()
    print(json.dumps(record))
    return 1 if "error" in record else 0


def run_child(tool: str, case: Case, gt_path: Path, dt_path: Path, timeout: float,
              settle: float = 0.0) -> dict:
    """One run of ``tool`` in a fresh interpreter (waiting ``settle`` s after its import
    phase); the record it printed, or an error."""
    command = [
        sys.executable, str(LAUNCHER),
        "--child", tool, "--case", case.name, "--gt", str(gt_path), "--dt", str(dt_path),
        "--settle", repr(settle),
    ]  # fmt: skip
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    try:
        record = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        record = {"tool": tool, "error": f"exit code {proc.returncode}, no result"}
    if "error" in record:
        record["stderr_tail"] = proc.stderr.strip().splitlines()[-6:]
    return record
