"""What every part of the bench shares: paths, stat names, the phase timer, measures, formats.

Only the standard library is imported here (and in every module a child process imports), so
that a child measures the import of numpy as part of the tool it runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

#: The package's folder, the repository it belongs to, and the launcher children are run by.
PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parents[1]
LAUNCHER = PACKAGE_DIR.parent / "bench.py"

STAT_NAMES = (
    "AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl",
)  # fmt: skip
KEYPOINT_STAT_NAMES = ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")
STATS_TOLERANCE = 1e-12  # largest difference to pycocotools' stats that counts as agreeing
REFERENCE_TOOL = "pycocotools"
#: The phases of the pycocotools workflow, the columns of the report (with "import").
PHASES = ("load_gt", "load_dt", "evaluate", "accumulate", "summarize")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, else KiB


#: Seconds a child waits after its import phase, before the timed phases (``--settle``;
#: default none: what a script that imports and evaluates at once sees). numpy's import
#: starts OpenBLAS's threads, which busy-wait for work about 0.1 s before they sleep
#: (docs/startup.md §8), so part of every tool's import cost lands in its first timed phase
#: on 2 cores; ``--settle 0.25`` leaves it out, the same for every tool (every peer imports
#: numpy). Measured in session 14: it helps hotcoco as much as deteval or more.
SETTLE_S = 0.0


class PhaseTimer:
    """``with timer("phase"):`` records the wall and CPU time of the block under that name;
    after the ``"import"`` phase it waits ``settle`` seconds (untimed)."""

    def __init__(self, settle: float = 0.0) -> None:
        self.times: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.settle = settle

    @contextlib.contextmanager
    def __call__(self, name: str):
        start, cpu_start = time.perf_counter(), cpu_seconds()
        try:
            yield
        finally:
            self.times[name] = time.perf_counter() - start
            self.cpu[name] = cpu_seconds() - cpu_start
            if name == "import" and self.settle > 0:
                time.sleep(self.settle)


def add_unique(table: dict, item, kind: str):
    """``table[item.name] = item``, refusing a second item of the same name; returns ``item``."""
    if item.name in table:
        raise ValueError(f"two {kind} named {item.name!r}")
    table[item.name] = item
    return item


def use_source_tree() -> None:
    """Import deteval from the source tree this script belongs to (what is benchmarked)."""
    if (REPO_ROOT / "deteval").is_dir() and str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))


def write_json(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
    os.replace(tmp, path)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 100:
        return f"{seconds:.0f}"
    if seconds >= 10:
        return f"{seconds:.1f}"
    if seconds >= 1:
        return f"{seconds:.2f}"
    return f"{seconds:.3f}"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.0f}x" if ratio >= 100 else f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.2f}x"


def fmt_count(n: int) -> str:
    """1234567 -> '1.2M', 20000 -> '20k', 512 -> '512'."""
    for size, unit in ((10**6, "M"), (10**3, "k")):
        if n >= size:
            value = n / size
            whole = value >= 10 or value == int(value)
            return f"{value:.0f}{unit}" if whole else f"{value:.1f}{unit}"
    return str(n)
