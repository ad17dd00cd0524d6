"""Run fuzz cases, one forked child per input, and check what each one did.

The child runs ``deteval.cli.main(argv)`` in the case's folder under an alarm (the
timeout), an address-space limit (``resource.setrlimit``) and a file-size limit, with its
standard streams redirected to files; then, when the case has one and deteval gave
numbers, pycocotools on the same COCO files; and, for some cases, the readers on the parsed
objects. It writes what happened to a JSON file as it goes, so that the parent knows which
phase a signal ended.

Checks (each failing case is copied to ``<out>/failures/<check>-<seed>-<index>/`` with a
``case.json`` for replay):

crash
    A Python traceback, an exception that is not deteval's own error, a signal, or an exit
    status other than 0, 1 and 2.
hang
    The alarm fired (the input took longer than the timeout).
memory
    The child's peak resident memory beyond the bound for its input's size.
unnamed
    An error message that names none of the case's files (a raw library message).
modified
    An input file changed (or an input replaced by an output).
divergence
    deteval's 12 stats differ from pycocotools' where pycocotools accepts the same input.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib
import io
import json
import math
import os
import pkgutil
import resource
import shutil
import signal
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from .generators import Case, make_case

__all__ = ["CHECKS", "run", "run_case", "summary_line"]

CHECKS = ("crash", "hang", "memory", "unnamed", "modified", "divergence")
MIB = 1 << 20


def _vm_size() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0  # pragma: no cover


def _preload() -> None:
    """Import in the parent what every child needs: a fork then costs milliseconds."""
    import numpy  # noqa: F401
    import pycocotools.coco  # noqa: F401
    import pycocotools.cocoeval  # noqa: F401
    import shapely  # noqa: F401
    from PIL import Image  # noqa: F401

    import deteval

    # deteval imports lazily: load every module now, or each child pays for the imports
    # again (about 0.2 s per input, most of a case's time).
    for module in pkgutil.walk_packages(deteval.__path__, "deteval."):
        if module.name.endswith("__main__") or module.name in {"deteval.dask",
                                                               "deteval.distributed"}:
            continue  # optional extras: a case that needs them imports them itself
        importlib.import_module(module.name)


def _make_specials(folder: Path, case: Case) -> None:
    for op, *args in case.special:
        path = folder / args[0]
        if op == "fifo":
            os.mkfifo(path)
        elif op == "dir":
            path.mkdir()
        elif op == "symlink":
            path.symlink_to(args[1])
        elif op == "hardlink":
            os.link(folder / args[1], path)


def _digest(folder: Path, case: Case) -> dict[str, str]:
    out = {}
    for name in case.files:
        path = folder / name
        try:
            out[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "?"
        except OSError:
            out[name] = "unreadable"
    return out


def _pycocotools_stats(gt: str, dt: str, iou_type: str) -> Any:
    """pycocotools' 12 stats, or the name of the exception it raised."""
    import warnings

    import numpy as np
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                coco = COCO(gt)
                res = coco.loadRes(dt)
                evaluation = COCOeval(coco, res, iou_type)
                evaluation.evaluate()
                evaluation.accumulate()
                evaluation.summarize()
        return [float(v) for v in evaluation.stats]
    except Exception as error:   # the oracle's refusal: no comparison
        return f"refused: {type(error).__name__}"


def _api_calls(case: Case) -> str:
    """The COCO readers on the parsed objects: deteval's own error or nothing, and the
    objects left unchanged."""
    from deteval import read_coco_gt, read_coco_results
    from deteval.errors import DetevalError

    gt, dt = case.api["gt"], case.api["dt"]
    before = (copy.deepcopy(gt), copy.deepcopy(dt))
    outcome = "ok"
    try:
        dataset = read_coco_gt(gt, iou_type=case.api["iou_type"])
        read_coco_results(dt, dataset, iou_type=case.api["iou_type"])
    except DetevalError:
        outcome = "refused"
    if repr((gt, dt)) != repr(before):
        return "modified"
    return outcome


def _child(case: Case, folder: Path, record_path: Path, timeout: int, memory: int) -> None:
    """Run in the forked child; never returns."""
    import faulthandler

    faulthandler.disable()   # a signal is the parent's finding, not a dump on its stderr
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (512 * MIB, 512 * MIB))
    os.chdir(folder)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
        handle = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(handle, fd)
    import sys

    # The parent's streams may be objects of a test runner: the child writes to the files.
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace",  # noqa: SIM115
                      closefd=False)
    record: dict[str, Any] = {}

    def save() -> None:
        record_path.write_text(json.dumps(record))

    signal.alarm(timeout)
    try:
        from deteval.cli import main

        record["rc"] = main(case.argv)
        sys_flush()
    except BaseException:  # noqa: BLE001 - what escapes main is what the fuzzer looks for
        record["traceback"] = traceback.format_exc()
        save()
        os._exit(70)
    record["phase"] = "deteval"
    save()
    try:
        if case.api is not None:
            signal.alarm(timeout)
            record["api"] = _api_calls(case)
            save()
        if (case.oracle is not None and record["rc"] == 0 and "--max-dets" not in case.argv
                and Path("metrics.json").is_file()):
            record["deteval"] = json.loads(Path("metrics.json").read_bytes())["stats"]
            record["phase"] = "oracle"
            save()
            signal.alarm(timeout)
            oracle = case.oracle
            record["pycocotools"] = _pycocotools_stats(oracle["gt"], oracle["dt"],
                                                       oracle["iou_type"])
            record["phase"] = "done"
    except BaseException:  # noqa: BLE001
        record["api_traceback"] = traceback.format_exc()
    save()
    os._exit(0)


def sys_flush() -> None:
    import sys

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y))
                                    for x, y in zip(a, b))


def _names_an_input(message: str, case: Case) -> bool:
    names = set(case.files) | {a for a in case.argv if "/" in a or "." in a}
    names |= {n.split("/")[0] for n in case.files} | {s[1] for s in case.special}
    return any(name and name in message for name in names)


def run_case(case: Case, *, timeout: int = 20, base_rss: int = 0,
             base_vm: int = 0) -> dict[str, Any]:
    """Run one case in a forked child; returns its outcome and the checks it failed."""
    folder = Path(tempfile.mkdtemp(prefix="deteval-fuzz-"))
    try:
        for name, raw in case.files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(raw)
        _make_specials(folder, case)
        before = _digest(folder, case)
        size = sum(map(len, case.files.values()))
        memory = base_vm + 1536 * MIB + 256 * size
        record_path = folder / ".record.json"
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                _child(case, folder, record_path, timeout, memory)
            finally:
                os._exit(71)
        _, status, usage = os.wait4(pid, 0)
        elapsed = time.perf_counter() - started
        record = json.loads(record_path.read_text()) if record_path.is_file() else {}
        stderr = (folder / "stderr.txt").read_text("utf-8", "replace") if (
            folder / "stderr.txt").is_file() else ""
        failed: dict[str, str] = {}
        phase = record.get("phase")
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            blame = "oracle" if phase in ("oracle", "deteval") else None
            if blame:
                record["oracle_signal"] = sig
            elif sig == signal.SIGALRM:
                failed["hang"] = f"no answer within {timeout} s"
            else:
                failed["crash"] = f"killed by signal {signal.Signals(sig).name}"
        else:
            code = os.WEXITSTATUS(status)
            if "traceback" in record:
                failed["crash"] = record["traceback"].strip().splitlines()[-1]
            elif code != 0 or record.get("rc") not in (0, 1, 2):
                failed["crash"] = f"exit status {code}, rc {record.get('rc')}"
        if "Traceback (most recent call last)" in stderr:
            failed.setdefault("crash", "a traceback on stderr")
        if record.get("rc") == 1:
            lines = [line for line in stderr.splitlines() if line.startswith("deteval: error:")]
            if not lines:
                failed["crash"] = "status 1 without 'deteval: error:'"
            elif not _names_an_input(lines[0], case):
                failed["unnamed"] = lines[0]
        if record.get("api") == "modified" or "api_traceback" in record:
            failed.setdefault("crash" if "api_traceback" in record else "modified",
                              record.get("api_traceback", "reader modified its input")
                              .strip().splitlines()[-1])
        rss = usage.ru_maxrss * 1024
        if rss > base_rss + 512 * MIB + 256 * size:
            failed["memory"] = f"peak {rss // MIB} MiB for {size} bytes of input"
        if _digest(folder, case) != before:
            failed["modified"] = "an input file changed"
        theirs, ours = record.get("pycocotools"), record.get("deteval")
        compared = isinstance(theirs, list) and isinstance(ours, list)
        if compared and not _same(ours, theirs):
            failed["divergence"] = f"deteval {ours} != pycocotools {theirs}"
        return {"rc": record.get("rc"), "failed": failed, "compared": compared,
                "oracle_refused": isinstance(theirs, str), "seconds": elapsed,
                "oracle_signal": record.get("oracle_signal"), "stderr": stderr[-2000:]}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _save_failure(out: Path, seed: int, index: int, case: Case, outcome: dict) -> None:
    for check in outcome["failed"]:
        folder = out / "failures" / f"{check}-{seed}-{index}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, raw in case.files.items():
            path = folder / "files" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(raw)
        (folder / "case.json").write_text(json.dumps(
            {"seed": seed, "index": index, "failed": outcome["failed"],
             "stderr": outcome["stderr"], **case.to_json()}, indent=1))


def _baseline() -> tuple[int, int]:
    """Peak memory of a child that does nothing, and the parent's address space."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover
        os._exit(0)
    _, _, usage = os.wait4(pid, 0)
    return usage.ru_maxrss * 1024, _vm_size()


def run_range(seed: int, start: int, stop: int, out: str | None = None,
              timeout: int = 20) -> dict[str, Any]:
    """Cases ``start..stop-1`` of ``seed``: counts per check, and the failures' indices."""
    _preload()
    base_rss, base_vm = _baseline()
    totals: dict[str, Any] = {"inputs": 0, "ok": 0, "refused": 0, "usage": 0, "compared": 0,
                              "oracle_refused": 0, "oracle_signals": 0,
                              **{check: 0 for check in CHECKS}, "failures": []}
    for index in range(start, stop):
        case = make_case(seed, index)
        outcome = run_case(case, timeout=timeout, base_rss=base_rss, base_vm=base_vm)
        totals["inputs"] += 1
        rc = outcome["rc"]
        totals[{0: "ok", 1: "refused", 2: "usage"}.get(rc, "ok")] += rc in (0, 1, 2)
        totals["compared"] += outcome["compared"]
        totals["oracle_refused"] += outcome["oracle_refused"]
        totals["oracle_signals"] += outcome["oracle_signal"] is not None
        for check in outcome["failed"]:
            totals[check] += 1
        if outcome["failed"]:
            totals["failures"].append({"index": index, "kind": case.kind,
                                       "failed": outcome["failed"]})
            if out is not None:
                _save_failure(Path(out), seed, index, case, outcome)
    return totals


def _merge(parts: list[dict]) -> dict:
    total: dict[str, Any] = {"failures": []}
    for part in parts:
        for key, value in part.items():
            if key == "failures":
                total["failures"] += value
            else:
                total[key] = total.get(key, 0) + value
    return total


def run(n: int, *, seed: int = 0, jobs: int = 1, out: str | None = None, timeout: int = 20,
        chunk: int = 200, start: int = 0, progress_to: Any = None) -> dict[str, Any]:
    """Run cases ``start..start+n-1`` of ``seed`` in ``jobs`` worker processes; with
    ``progress_to`` (a stream), print the running totals after each chunk of cases."""
    started = time.perf_counter()
    bounds = list(range(start, start + n, chunk)) + [start + n]
    ranges = [(seed, lo, hi, out, timeout) for lo, hi in zip(bounds[:-1], bounds[1:])]
    parts: list[dict] = []

    def progress(part: dict) -> None:
        parts.append(part)
        if progress_to is not None:
            total = _merge(parts)
            total["seconds"] = round(time.perf_counter() - started, 1)
            print("progress: " + summary_line(total), file=progress_to, flush=True)

    if jobs <= 1:
        for r in ranges:
            progress(run_range(*r))
    else:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for part in pool.imap_unordered(_run_range_args, ranges, chunksize=1):
                progress(part)
    total = _merge(parts)
    total["seconds"] = round(time.perf_counter() - started, 1)
    return total


def _run_range_args(args: tuple) -> dict:
    return run_range(*args)


def summary_line(total: dict) -> str:
    return (f"inputs {total.get('inputs', 0)}: ok {total.get('ok', 0)}, refused "
            f"{total.get('refused', 0)}, usage {total.get('usage', 0)}; compared with "
            f"pycocotools {total.get('compared', 0)} (pycocotools refused "
            f"{total.get('oracle_refused', 0)}); crashes {total.get('crash', 0)}, hangs "
            f"{total.get('hang', 0)}, memory {total.get('memory', 0)}, unnamed "
            f"{total.get('unnamed', 0)}, modified {total.get('modified', 0)}, divergences "
            f"{total.get('divergence', 0)}; {total.get('seconds', 0)} s")
