"""Where the figures come from: the machine, Python, and the versions of every package."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from .common import REPO_ROOT
from .peers import PEERS


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _source_tree() -> str:
    """deteval's version as the source tree declares it, and the git state of the tree."""
    version = "?"
    with contextlib.suppress(OSError):
        for line in (REPO_ROOT / "pyproject.toml").read_text().splitlines():
            if line.startswith("version"):
                version = line.split("=", 1)[1].strip().strip('"')
                break
    state = "git: unknown"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        git = ["git", "-C", str(REPO_ROOT)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
        commit = head.stdout.strip() if head.returncode == 0 else "no commit yet"
        state = f"git {commit}{' + uncommitted changes' if dirty.stdout.strip() else ''}"
    return f"{version} from {REPO_ROOT} ({state})"


def machine_lines() -> list[str]:
    """Where the figures come from: CPUs, memory, Python and the versions of every package."""
    cpu_model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        kib = int(Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1])
        memory = f", {kib / 2**20:.1f} GiB RAM"
    nproc = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else nproc
    packages = []
    others = [p.distribution for p in PEERS.values() if p.name != "deteval"]
    for dist in ("numpy", "orjson", *others):
        packages.append(f"{dist} {_version(dist) or 'not installed'}")
    packages.append(f"deteval {_source_tree()}")
    load = ""
    with contextlib.suppress(OSError, AttributeError):
        load = ", load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    return [
        f"machine:  nproc {nproc} (usable {usable}), {cpu_model or 'unknown CPU'}{memory}{load}",
        f"          {platform.platform()}",
        f"python:   {platform.python_version()} ({sys.executable})",
        "packages: " + ", ".join(packages),
    ]

