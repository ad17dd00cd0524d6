"""The settings the ``deteval`` program makes to its own process (``deteval.cli._process``,
docs/startup.md §4): one OpenBLAS thread, the collector's threshold, glibc malloc's
thresholds, ``gc.freeze`` at the end; a setting of the user wins; ``main(argv)`` called
from Python makes none; none changes what the command prints. Each run is a fresh
interpreter (``python -m deteval`` as a user runs it, through ``runpy``), which then reports
the state of its process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cocogen import make_dataset

from deteval.cli import _process

ROOT = Path(__file__).resolve().parents[1]
GLIBC = sys.platform.startswith("linux") and bool(os.confstr("CS_GNU_LIBC_VERSION") or "")

#: After the command: its state, printed as JSON on the last line. ``mmapped`` is whether a
#: 12 MiB block comes from a fresh mapping (glibc's ``mallinfo2().hblks`` goes up while it
#: is held): below the program's 16 MiB threshold it comes from the heap; with glibc's
#: default rule after small inputs (threshold the largest block freed so far) it is mapped.
_REPORT = """
import ctypes, gc, json, os
def _mmapped():
    class Info(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        return None
    libc.mallinfo2.restype = Info
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = (ctypes.c_void_p,)
    before = libc.mallinfo2().hblks
    block = libc.malloc(12 << 20)
    mapped = libc.mallinfo2().hblks > before
    libc.free(block)
    return mapped
print(json.dumps({"openblas": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "frozen": gc.get_freeze_count(), "gc": gc.get_threshold()[0],
                  "mmapped": _mmapped() if %(glibc)r else None}))
"""


def _small_pair(folder: Path) -> list[str]:
    """A small random COCO pair (``cocogen``) as files: ``coco GT DT``."""
    gt, dt = make_dataset(7, segmentation=False)
    gt_path, dt_path = folder / "gt.json", folder / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(dt))
    return ["coco", str(gt_path), str(dt_path)]


def _fresh(code: str, env: dict[str, str] | None = None) -> tuple[str, dict]:
    """Run ``code`` and the report in a fresh interpreter without the variables the
    settings look at (plus ``env``); its output and the report."""
    clean = {k: v for k, v in os.environ.items()
             if k != "OPENBLAS_NUM_THREADS" and not k.startswith("MALLOC_")
             and k != "GLIBC_TUNABLES"}
    proc = subprocess.run([sys.executable, "-c", code + _REPORT % {"glibc": GLIBC}],
                          capture_output=True, text=True, cwd=ROOT, check=True,
                          env={**clean, **(env or {})})
    *printed, report = proc.stdout.splitlines()
    return "\n".join(printed), json.loads(report)


def _program(argv: list[str]) -> str:
    """``python -m deteval ARGV`` (exit status 0) in the probe."""
    return ("import runpy, sys\n"
            f"sys.argv = ['deteval', *{argv!r}]\n"
            "try:\n    runpy.run_module('deteval', run_name='__main__', alter_sys=True)\n"
            "except SystemExit as exit_:\n    assert not exit_.code, exit_.code\n")


def _main_call(argv: list[str]) -> str:
    return ("import sys\nfrom deteval.cli import main\n"
            f"assert main({argv!r}) == 0\n")


def test_the_program_sets_its_process_and_prints_what_main_prints(tmp_path):
    argv = _small_pair(tmp_path)
    printed, state = _fresh(_program(argv))
    assert state["openblas"] == "1"
    assert state["frozen"] > 1000     # numpy's and deteval's objects, at the least
    assert state["gc"] == _process.GC_THRESHOLD
    if GLIBC and state["mmapped"] is not None:
        assert state["mmapped"] is False
    # main(argv) from Python: the caller's process is left as it was ...
    printed_by_main, untouched = _fresh(_main_call(argv))
    assert untouched["openblas"] is None and untouched["frozen"] == 0
    assert untouched["gc"] == 700
    if GLIBC and untouched["mmapped"] is not None:
        assert untouched["mmapped"] is True
    # ... and the numbers are the same
    assert "Average Precision" in printed
    assert printed == printed_by_main


def test_a_setting_of_the_user_wins(tmp_path):
    argv = _small_pair(tmp_path)
    _, state = _fresh(_program(argv), env={"OPENBLAS_NUM_THREADS": "2",
                                           "MALLOC_TRIM_THRESHOLD_": str(128 << 10)})
    assert state["openblas"] == "2"
    if GLIBC and state["mmapped"] is not None:
        # the user's variable turns glibc's rule off: blocks from 128 KiB on are mapped
        assert state["mmapped"] is True


def test_a_collector_threshold_set_before_stays(tmp_path):
    """A threshold set before the program runs (a ``sitecustomize``) is the user's."""
    _, state = _fresh("import gc\ngc.set_threshold(1000)\n" + _program(_small_pair(tmp_path)))
    assert state["gc"] == 1000 and state["openblas"] == "1"


def test_version_and_help_make_no_setting():
    printed, state = _fresh(_program(["--version"]))
    assert printed.startswith("deteval ")
    assert state == {"openblas": None, "frozen": 0, "gc": 700, "mmapped": state["mmapped"]}
    _, state = _fresh(_program(["--help"]))
    assert state["frozen"] == 0   # (OPENBLAS_NUM_THREADS is set: numpy is not imported)


def test_the_program_prints_pycocotools_summary(coco100_dir):
    """The sample's summary with the settings: the lines pycocotools printed."""
    expected = json.loads((coco100_dir / "expected_pycocotools_2.0.11.json").read_text())
    printed, state = _fresh(_program(["coco", str(coco100_dir / "instances_val2014_100.json"),
                                      str(coco100_dir /
                                          "instances_val2014_fakebbox100_results.json")]))
    assert state["openblas"] == "1" and state["frozen"] > 0
    assert printed.splitlines() == expected["bbox"]["summary"]


@pytest.mark.parametrize("environ, expected", [
    ({}, False), ({"MALLOC_MMAP_THRESHOLD_": "1"}, True), ({"MALLOC_TOP_PAD_": "0"}, True),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}, True),
    ({"GLIBC_TUNABLES": "glibc.rtld.nns=2"}, False)])
def test_malloc_set_by_user(environ, expected):
    assert _process.malloc_set_by_user(environ) is expected


def test_tune_malloc_elsewhere_does_nothing(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert _process.tune_malloc() is False
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("MALLOC_TOP_PAD_", "0")
    assert _process.tune_malloc() is False
    monkeypatch.delenv("MALLOC_TOP_PAD_")

    def musl(name):
        raise ValueError(f"unrecognized configuration name {name!r}")

    with monkeypatch.context() as patch:
        patch.setattr(os, "confstr", musl)
        assert _process.tune_malloc() is False
    if GLIBC:   # a Python built without ctypes
        monkeypatch.setitem(sys.modules, "ctypes", None)
        assert _process.tune_malloc() is False
