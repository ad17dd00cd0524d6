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
    The input took more CPU time than the timeout (SIGXCPU), or more wall time than three
    timeouts without that CPU (blocked: a FIFO, a lock).
memory
    The child's peak resident memory beyond the bound for its input's size.
unnamed
    An error message that names none of the case's files (a raw library message).
modified
    An input file changed (or an input replaced by an output).
divergence
    deteval's numbers differ from pycocotools' where pycocotools accepts the same input
    (the oracles of :mod:`.oracles`: stats, compare's estimates, image slices).
exit
    An exit status the case does not allow (``Case.expect``: a well-formed case must answer
    0, or 1 for a broken regression gate; a bad option value must answer 2), or a usage or
    error message that names none of ``Case.names`` (the option, the output path).
outputs
    A file written by a run that failed (exit status other than 0, except the files of a
    broken regression gate, written by design), a temporary file left behind, or an
    output of ``Case.outputs`` missing after exit 0.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib
import json
import math
import os
import pkgutil
import resource
import shutil
import signal
import stat
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from .generators import Case, make_case
from .oracles import comparisons, read_metrics

__all__ = ["CHECKS", "run", "run_case", "summary_line"]

CHECKS = ("crash", "hang", "memory", "unnamed", "modified", "divergence", "exit",
          "outputs")
MIB = 1 << 20
#: The wall-time alarm, in timeouts (the timeout itself is CPU time).
WALL = 3


def _vm_size() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0  # pragma: no cover


def _preload() -> None:
    """Import in the parent what every child needs: a fork then costs milliseconds."""
    import matplotlib
    import numpy  # noqa: F401
    import pycocotools.coco  # noqa: F401
    import pycocotools.cocoeval  # noqa: F401
    import shapely  # noqa: F401
    from PIL import Image  # noqa: F401

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import pyarrow.parquet  # noqa: F401

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
    # The timeout is CPU time (SIGXCPU): on a shared, loaded machine a case's wall time says
    # little. A case blocked without computing (a FIFO) meets the wall alarm, WALL x later.
    resource.setrlimit(resource.RLIMIT_CPU, (timeout, 4 * timeout + 10))
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

    signal.alarm(WALL * timeout)
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
            _more_cpu(timeout)
            record["api"] = _api_calls(case)
            save()
        metrics = read_metrics() if case.oracle is not None and record["rc"] in (0, 1) \
            else None
        accepts = case.oracle is not None and case.oracle.get("read") in (
            "accepts", "readers", "same-json")
        if (metrics is not None or accepts) and "--max-dets" not in case.argv:
            record["phase"] = "oracle"
            save()
            _more_cpu(timeout)
            record["compared"] = comparisons(case.oracle, metrics)
            record["phase"] = "done"
    except BaseException:  # noqa: BLE001
        record["api_traceback"] = traceback.format_exc()
    save()
    os._exit(0)


def _more_cpu(timeout: int) -> None:
    """Another ``timeout`` seconds of CPU (and of wall time) for the next phase."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = int(used.ru_utime + used.ru_stime) + 1
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    resource.setrlimit(resource.RLIMIT_CPU, (min(spent + timeout, hard), hard))
    signal.alarm(WALL * timeout)


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


#: Files of the harness itself in a case's folder (not outputs of the command).
_HARNESS_FILES = {".record.json", "stdout.txt", "stderr.txt"}
#: The manifests of the folders report and draw own (docs/report.md): written on purpose.
_MANIFESTS = (".deteval-report.json", ".deteval-draw.json")


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links not followed, FIFOs not opened): its kind and,
    for regular files, a digest."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            if rel in _HARNESS_FILES:
                continue
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    out[rel] = hashlib.sha256(handle.read()).hexdigest()
            else:
                out[rel] = f"mode {info.st_mode:o}"
        for name in dirs:
            out.setdefault(os.path.relpath(os.path.join(root, name), folder) + "/", "dir")
    return out


def _names_one(message: str, names: list[str]) -> bool:
    """Whether ``message`` names one of ``names``, as typed or escaped as ``repr`` shows it
    (a NUL is ``\\x00`` in a message)."""
    return any(name in message or repr(name)[1:-1] in message for name in names if name)


def _gated(stderr: str) -> bool:
    """A broken --fail-if-regression rule: status 1 with regressions and no error."""
    return ("deteval: regression:" in stderr
            and not any(line.startswith("deteval: error:") for line in stderr.splitlines()))


def _output_failures(case: Case, rc: Any, before: dict, after: dict, stderr: str) -> str | None:
    """What is wrong with the files a run left (the ``outputs`` check), or None."""
    new = sorted(k for k in after if before.get(k) != after[k])
    temporary = [k for k in new if Path(k).name.startswith(".")
                 and Path(k).name not in _MANIFESTS]
    if temporary:
        return f"temporary file(s) left: {temporary[:3]}"
    if rc not in (0, None) and not (rc == 1 and _gated(stderr)):
        written = [k for k in new if not k.endswith("/") or not _empty(after, k)]
        if written:
            return f"status {rc} but files written: {written[:4]}"
    if rc == 0:
        missing = [o for o in case.outputs if not o.startswith("/") and o not in after]
        if missing:
            return f"status 0 but output(s) missing: {missing}"
    return None


def _empty(tree: dict, folder: str) -> bool:
    return not any(k != folder and k.startswith(folder) for k in tree)


def _status_failures(case: Case, record: dict, status: int, timeout: int,
                     stderr: str) -> dict[str, str]:
    """The crash, hang, unnamed and exit checks."""
    failed: dict[str, str] = {}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if record.get("phase") in ("oracle", "deteval"):
            record["oracle_signal"] = sig
        elif sig == signal.SIGXCPU:
            failed["hang"] = f"more than {timeout} s of CPU"
        elif sig == signal.SIGALRM:
            failed["hang"] = f"no answer within {WALL * timeout} s (blocked)"
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
    rc = record.get("rc")
    errors = [line for line in stderr.splitlines()
              if line.startswith("deteval: error:") or (rc == 2 and ": error: " in line)]
    if rc == 1 and not _gated(stderr):
        if not errors:
            failed["crash"] = "status 1 without 'deteval: error:'"
        elif not _names_an_input(errors[0], case) and not _names_one(errors[0], case.names):
            failed["unnamed"] = errors[0]
    if rc in (0, 1, 2) and case.expect is not None and rc not in case.expect:
        last = (errors or stderr.strip().splitlines() or [""])[-1]
        failed["exit"] = f"status {rc}, expected {case.expect}: {last[:300]}"
    elif rc in (1, 2) and case.names and errors and not _names_one(errors[0], case.names):
        failed["exit"] = f"the message names none of {case.names}: {errors[0][:300]}"
    return failed


def run_case(case: Case, *, timeout: int = 20, base_rss: int | None = None,
             base_vm: int | None = None) -> dict[str, Any]:
    """Run one case in a forked child; returns its outcome and the checks it failed.

    The memory bounds are over ``base_rss`` (the peak of a child that does nothing) and
    ``base_vm`` (this process's address space), measured here when not given: a child
    inherits its parent's memory, which in a test run holds everything the earlier tests
    imported (the bounds were once absolute, and cases failed or hung for want of address
    space only when run late in the whole suite).
    """
    if base_rss is None or base_vm is None:
        measured_rss, measured_vm = _baseline()
        base_rss = measured_rss if base_rss is None else base_rss
        base_vm = measured_vm if base_vm is None else base_vm
    folder = Path(tempfile.mkdtemp(prefix="deteval-fuzz-"))
    try:
        for name, raw in case.files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(raw)
        _make_specials(folder, case)
        before, tree = _digest(folder, case), _tree(folder)
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
        failed = _status_failures(case, record, status, timeout, stderr)
        if record.get("api") == "modified" or "api_traceback" in record:
            failed.setdefault("crash" if "api_traceback" in record else "modified",
                              record.get("api_traceback", "reader modified its input")
                              .strip().splitlines()[-1])
        rss = usage.ru_maxrss * 1024
        if rss > base_rss + 512 * MIB + 256 * size:
            failed["memory"] = f"peak {rss // MIB} MiB for {size} bytes of input"
        if _digest(folder, case) != before:
            failed["modified"] = "an input file changed"
        if not os.WIFSIGNALED(status):
            problem = _output_failures(case, record.get("rc"), tree, _tree(folder), stderr)
            if problem:
                failed["outputs"] = problem
        pairs = [(label, ours, theirs) for label, ours, theirs in record.get("compared", [])
                 if isinstance(theirs, list)]
        wrong = [f"{label}: deteval {ours} != pycocotools {theirs}"
                 for label, ours, theirs in pairs if not _same(ours, theirs)]
        if wrong:
            failed["divergence"] = "; ".join(wrong)[:2000]
        return {"rc": record.get("rc"), "failed": failed, "compared": bool(pairs),
                "oracle_refused": any(isinstance(t, str) for _, _, t in
                                      record.get("compared", [])),
                "gated": record.get("rc") == 1 and _gated(stderr), "seconds": elapsed,
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
              timeout: int = 20, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Cases ``start..stop-1`` of ``seed`` (of ``kinds``, default all): counts per outcome
    and check, per kind, and the failures' indices."""
    _preload()
    base_rss, base_vm = _baseline()
    totals: dict[str, Any] = {"inputs": 0, "ok": 0, "refused": 0, "usage": 0, "compared": 0,
                              "oracle_refused": 0, "oracle_signals": 0, "gated": 0,
                              **{check: 0 for check in CHECKS}, "kinds": {},
                              "failures": []}
    for index in range(start, stop):
        case = make_case(seed, index, kinds)
        outcome = run_case(case, timeout=timeout, base_rss=base_rss, base_vm=base_vm)
        totals["inputs"] += 1
        rc = outcome["rc"]
        totals[{0: "ok", 1: "refused", 2: "usage"}.get(rc, "ok")] += rc in (0, 1, 2)
        totals["compared"] += outcome["compared"]
        totals["gated"] += outcome["gated"]
        totals["refused"] -= outcome["gated"]
        counts = totals["kinds"].setdefault(case.kind, {"inputs": 0, "failed": 0})
        counts["inputs"] += 1
        counts["failed"] += bool(outcome["failed"])
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
            elif key == "kinds":
                for kind, counts in value.items():
                    mine = total.setdefault("kinds", {}).setdefault(kind, {})
                    for name, n in counts.items():
                        mine[name] = mine.get(name, 0) + n
            else:
                total[key] = total.get(key, 0) + value
    return total


def run(n: int, *, seed: int = 0, jobs: int = 1, out: str | None = None, timeout: int = 20,
        chunk: int = 200, start: int = 0, progress_to: Any = None,
        kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Run cases ``start..start+n-1`` of ``seed`` (of ``kinds``, default every kind) in
    ``jobs`` worker processes; with ``progress_to`` (a stream), print the running totals
    after each chunk of cases."""
    started = time.perf_counter()
    bounds = list(range(start, start + n, chunk)) + [start + n]
    ranges = [(seed, lo, hi, out, timeout, kinds) for lo, hi in zip(bounds[:-1], bounds[1:])]
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
            f"{total.get('refused', 0)}, usage {total.get('usage', 0)}, regression gate "
            f"{total.get('gated', 0)}; compared with "
            f"pycocotools {total.get('compared', 0)} (pycocotools refused "
            f"{total.get('oracle_refused', 0)}); crashes {total.get('crash', 0)}, hangs "
            f"{total.get('hang', 0)}, memory {total.get('memory', 0)}, unnamed "
            f"{total.get('unnamed', 0)}, modified {total.get('modified', 0)}, divergences "
            f"{total.get('divergence', 0)}, exit statuses {total.get('exit', 0)}, outputs "
            f"{total.get('outputs', 0)}; {total.get('seconds', 0)} s")
