"""Bootstrap resamples in worker processes (deteval/diagnostics/_bootstrap_workers.py,
_bootstrap_process.py, _bootstrap_wire.py;
docs/diagnostics/bootstrap.md §13, "Worker processes"): with processes forced on
(``DETEVAL_WORKERS=processes``), every protocol's samples equal those of one thread bit for
bit, for 2 and 3 threads, whether the calling thread computes blocks too or the workers do
them all; a worker that cannot start, is not a deteval worker or dies mid-run has its blocks
computed in-process; an exception or a warning raised by a resample reaches the caller as
without workers; no process outlives the call; a caller's script without a main guard is
not run again by the workers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import oidgen
import pytest
from cocogen import make_dataset
from crowdposegen import make_crowdpose_dataset
from lvisgen import make_lvis_dataset

import deteval
from deteval.diagnostics import _bootstrap_wire as wire
from deteval.diagnostics import _bootstrap_workers as workers
from deteval.diagnostics.bootstrap import bootstrap_coco
from deteval.diagnostics.bootstrap_crowdpose import bootstrap_crowdpose
from deteval.diagnostics.bootstrap_lvis import bootstrap_lvis
from deteval.diagnostics.bootstrap_openimages import bootstrap_openimages
from deteval.diagnostics.bootstrap_voc import bootstrap_voc

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def forced(monkeypatch):
    """Worker processes whatever the amount of work."""
    monkeypatch.setenv(workers.ENV, "processes")
    monkeypatch.setattr(workers, "_TEST_OPTIONS", {})
    return monkeypatch


@pytest.fixture(scope="module")
def coco():
    gt, dt = make_dataset(1, n_images=30)
    return deteval.evaluate_coco(gt, dt)


def _gone(pids: list) -> bool:
    """No process of ``pids`` exists any more (each was waited for)."""
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        return False
    return True


def _equal(a, b) -> bool:
    return np.array_equal(a.samples, b.samples, equal_nan=True) and a.to_dict() == b.to_dict()


def _computed_in_process(result, forced, *, n_resamples: int, seed: int) -> None:
    """With the calling thread leaving every block to the workers, the samples of two threads
    equal one thread's, yet no worker computed a block (each was refused or failed)."""
    forced.setattr(workers, "_PARENT_COMPUTES", False)
    one = bootstrap_coco(result, n_resamples=n_resamples, seed=seed, threads=1)
    two = bootstrap_coco(result, n_resamples=n_resamples, seed=seed, threads=2)
    run = dict(workers.last_run)
    assert _equal(one, two)
    assert run["by_workers"] == 0 and _gone(run["pids"])


@pytest.mark.parametrize("parent_computes", [True, False])
@pytest.mark.parametrize("threads", [2, 3])
def test_coco_samples_equal_one_thread(coco, forced, threads, parent_computes):
    forced.setattr(workers, "_PARENT_COMPUTES", parent_computes)
    one = bootstrap_coco(coco, n_resamples=120, seed=3, threads=1)
    many = bootstrap_coco(coco, n_resamples=120, seed=3, threads=threads)
    run = dict(workers.last_run)
    assert _equal(one, many)
    assert len(run["pids"]) == threads - 1 and _gone(run["pids"])
    assert run["redone"] == 0
    if not parent_computes:       # every block went to a worker (none fell back)
        assert run["by_workers"] == run["blocks"] > 1


def _voc():
    gt, dt = make_dataset(2, n_images=30)
    return deteval.evaluate_voc(gt, dt), bootstrap_voc


def _lvis():
    return deteval.evaluate_lvis(*make_lvis_dataset(3)), bootstrap_lvis


def _crowdpose():
    return deteval.evaluate_crowdpose(*make_crowdpose_dataset(3, n_images=5)), \
        bootstrap_crowdpose


def _openimages(tmp_path):
    args, kwargs = oidgen.write_problem(tmp_path)
    return deteval.evaluate_openimages(*args, **kwargs), bootstrap_openimages


@pytest.mark.parametrize("protocol", ["voc", "lvis", "crowdpose", "openimages"])
def test_every_protocol_gives_the_samples_of_one_thread(protocol, forced, tmp_path):
    forced.setattr(workers, "_PARENT_COMPUTES", False)
    result, bootstrap = (_openimages(tmp_path) if protocol == "openimages"
                         else {"voc": _voc, "lvis": _lvis, "crowdpose": _crowdpose}[protocol]())
    one = bootstrap(result, n_resamples=40, seed=1, threads=1)
    two = bootstrap(result, n_resamples=40, seed=1, threads=2)
    run = dict(workers.last_run)
    assert _equal(one, two)
    assert run["by_workers"] == run["blocks"] > 1 and run["redone"] == 0
    assert _gone(run["pids"])


def test_compare_gives_the_samples_of_one_thread(forced):
    """The paired comparison: every model's numbers in one engine (``Several``)."""
    from deteval.diagnostics.compare import compare_coco

    forced.setattr(workers, "_PARENT_COMPUTES", False)
    gt, dt = make_dataset(4, n_images=20)
    shifted = [dict(d, score=d["score"] * 0.5 if i % 3 else d["score"]) for i, d in
               enumerate(dt)]
    results = [deteval.evaluate_coco(gt, dt), deteval.evaluate_coco(gt, shifted)]
    one = compare_coco(results, n_resamples=40, seed=2, threads=1)
    two = compare_coco(results, n_resamples=40, seed=2, threads=2)
    assert workers.last_run["by_workers"] == workers.last_run["blocks"] > 1
    assert one.to_dict() == two.to_dict()


def test_explicit_weights_go_to_the_workers(coco, forced):
    forced.setattr(workers, "_PARENT_COMPUTES", False)
    rng = np.random.default_rng(0)
    weights = rng.integers(0, 3, (30, len(coco.params.image_ids)))
    one = bootstrap_coco(coco, weights=weights, threads=1)
    two = bootstrap_coco(coco, weights=weights, threads=2)
    assert _equal(one, two) and workers.last_run["by_workers"] == workers.last_run["blocks"]


def test_a_worker_dying_mid_run_is_replaced_in_process(coco, forced, capfd):
    """... and nothing is printed (the workers' stderr goes to the null device)."""
    forced.setattr(workers, "_PARENT_COMPUTES", False)
    forced.setitem(workers._TEST_OPTIONS, "die_after", 2)    # exits on its third block
    one = bootstrap_coco(coco, n_resamples=120, seed=5, threads=1)
    many = bootstrap_coco(coco, n_resamples=120, seed=5, threads=3)
    run = dict(workers.last_run)
    assert _equal(one, many)
    assert 0 < run["by_workers"] <= 4 < run["blocks"]       # two blocks each, then in-process
    assert _gone(run["pids"])
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("executable", ["/nonexistent/python", "true"])
def test_a_worker_that_cannot_start_or_answer_falls_back(coco, forced, executable):
    """A missing interpreter (no process), and a program that exits without a hello."""
    found = executable if executable.startswith("/") else __import__("shutil").which(executable)
    if found is None:
        pytest.skip(f"no {executable} program")
    forced.setattr(sys, "executable", found)
    _computed_in_process(coco, forced, n_resamples=60, seed=2)


def test_short_work_stays_on_threads(coco, monkeypatch):
    """Automatic choice: 60 resamples of a 30-image set are far below the 1.5 s that pays a
    process; ``DETEVAL_WORKERS=threads`` never starts one."""
    monkeypatch.delenv(workers.ENV, raising=False)
    bootstrap_coco(coco, n_resamples=60, seed=2, threads=2)
    assert workers.last_run["pids"] == []
    monkeypatch.setenv(workers.ENV, "threads")
    monkeypatch.setattr(workers, "_WORTH", 0.0)
    monkeypatch.setattr(workers, "_PRESTART", 0.0)
    bootstrap_coco(coco, n_resamples=60, seed=2, threads=2)
    assert workers.last_run["pids"] == []


def test_long_work_goes_to_processes(coco, monkeypatch):
    """Automatic choice with the thresholds lowered: workers started after the first block
    (not ahead), the samples unchanged."""
    monkeypatch.delenv(workers.ENV, raising=False)
    monkeypatch.setattr(workers, "_WORTH", 0.0)
    monkeypatch.setattr(workers, "_PARENT_COMPUTES", True)
    one = bootstrap_coco(coco, n_resamples=200, seed=4, threads=1)
    two = bootstrap_coco(coco, n_resamples=200, seed=4, threads=2)
    assert _equal(one, two)
    assert len(workers.last_run["pids"]) == 1 and _gone(workers.last_run["pids"])


class Picky:
    """A picklable engine (the workers import this module): row ``i`` is ``[i]``; row 7
    raises, row 9 raises another error, row 5 warns; ``interrupt`` raises KeyboardInterrupt
    at row 30 in the calling process only."""

    def __init__(self, *, fail: bool = False, warn: bool = False,
                 interrupt: bool = False) -> None:
        self.fail, self.warn, self.interrupt, self.pid = fail, warn, interrupt, os.getpid()

    def numbers(self, w: np.ndarray) -> list[float]:
        i = int(w[0])
        if self.fail and i == 7:
            raise ValueError("row 7")
        if self.fail and i == 9:
            raise KeyError("row 9")
        if self.warn and i == 5:
            warnings.warn("row 5", UserWarning, stacklevel=2)
        if self.interrupt and i == 30 and os.getpid() == self.pid:
            raise KeyboardInterrupt
        return [float(i), float(w.sum())]


def _rows(n: int) -> list:
    return [np.array([i, 1, 2]) for i in range(n)]


def _blocks(engine: Picky, n: int, threads: int = 2) -> np.ndarray:
    return workers.run_blocks(engine.numbers, _rows(n), threads, count=n,
                              engine=lambda: engine)


def test_run_blocks_keeps_the_order(forced):
    forced.setattr(workers, "_PARENT_COMPUTES", False)
    out = _blocks(Picky(), 50, threads=3)
    assert out.tolist() == [[float(i), float(i + 3)] for i in range(50)]
    assert workers.last_run["by_workers"] == workers.last_run["blocks"]


def test_an_error_in_a_resample_is_raised_as_in_process(forced):
    """The worker's failing block is computed again in the caller: its exception, the
    earliest failing row's (row 7, not row 9)."""
    forced.setattr(workers, "_PARENT_COMPUTES", False)
    with pytest.raises(ValueError, match="row 7"):
        _blocks(Picky(fail=True), 40)
    assert workers.last_run["redone"] >= 1 and _gone(workers.last_run["pids"])


def test_a_warning_in_a_resample_is_the_callers(forced):
    forced.setattr(workers, "_PARENT_COMPUTES", False)
    with pytest.warns(UserWarning, match="row 5"):
        out = _blocks(Picky(warn=True), 20)
    assert out[:, 0].tolist() == list(range(20))
    assert workers.last_run["redone"] == 1 and workers.last_run["by_workers"] >= 1


def test_an_interrupt_ends_the_workers(forced):
    with pytest.raises(KeyboardInterrupt):
        _blocks(Picky(interrupt=True), 200)
    assert len(workers.last_run["pids"]) == 1 and _gone(workers.last_run["pids"])


def test_a_script_without_main_guard_is_not_run_again(tmp_path):
    """The workers import deteval, not the caller's ``__main__``: the script's top level
    runs once although the workers computed blocks."""
    log = tmp_path / "ran.txt"
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(REPO)!r}, {str(REPO / "tests")!r}]
        with open({str(log)!r}, "a") as f:
            f.write("ran\\n")
        import deteval
        from cocogen import make_dataset
        from deteval.diagnostics import _bootstrap_workers as workers
        from deteval.diagnostics.bootstrap import bootstrap_coco
        workers._PARENT_COMPUTES = False
        result = deteval.evaluate_coco(*make_dataset(1, n_images=10))
        bootstrap_coco(result, n_resamples=40, seed=0, threads=2)
        print(workers.last_run["by_workers"])
    """))
    env = dict(os.environ, **{workers.ENV: "processes"})
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) > 0
    assert log.read_text() == "ran\n"


def test_workers_started_ahead_end_when_the_setup_fails(forced):
    """Started before the plans; a result without match table is refused: the worker is
    ended and waited for."""
    gt, dt = make_dataset(1, n_images=5)
    evaluator = deteval.Evaluator(gt, unknown_labels="drop")
    evaluator.update(dt)
    streamed = evaluator.compute()
    before = len(workers.started)
    with pytest.raises(ValueError, match="match table"):
        bootstrap_coco(streamed, n_resamples=10, threads=2)
    assert len(workers.started) == before + 1 and _gone([workers.started[-1]])


def test_a_worker_that_stops_answering_is_killed_and_its_block_computed_in_process(tmp_path):
    """A worker alive but stuck (stopped, deadlocked) on a block: once the stall limit has
    passed (``_STALL``, made short here) it is killed and its block computed in-process; the
    call returns the samples of one thread. Run in a child interpreter with a timeout: without
    the limit the call would never return."""
    script = textwrap.dedent(f"""
        import os, sys
        sys.path[:0] = [{str(REPO)!r}, {str(REPO / "tests")!r}]
        os.environ["DETEVAL_WORKERS"] = "processes"
        import numpy as np
        import deteval
        from cocogen import make_dataset
        from deteval.diagnostics import _bootstrap_workers as workers
        result = deteval.evaluate_coco(*make_dataset(1, n_images=30))
        one = deteval.bootstrap_coco(result, n_resamples=80, seed=4, threads=1)
        workers._STALL = 0.2
        workers._PARENT_COMPUTES = False
        workers._TEST_OPTIONS["stall_after"] = 1
        two = deteval.bootstrap_coco(result, n_resamples=80, seed=4, threads=2)
        assert np.array_equal(one.samples, two.samples, equal_nan=True)
        assert workers.last_run["redone"] >= 1
        for pid in workers.last_run["pids"]:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            raise AssertionError(f"worker {{pid}} left")
        print("returned")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "returned", proc.stderr


def test_worker_count_is_capped_on_many_cores(monkeypatch):
    """threads=None on a 64-core machine starts at most MAX_WORKERS interpreters (each holds
    Python, numpy and the engine); fewer threads asked or fewer cores give fewer."""
    import deteval._threads as threads_module

    monkeypatch.delenv(workers.ENV, raising=False)
    monkeypatch.setattr(threads_module, "available_cores", lambda: 64)
    assert workers._n_workers(64) == workers.MAX_WORKERS == 7
    assert workers._n_workers(3) == 2
    monkeypatch.setattr(threads_module, "available_cores", lambda: 2)
    assert workers._n_workers(64) == 1


def test_a_worker_running_other_code_than_the_caller_is_not_used(coco, forced):
    """The caller's code is not the files' any more (a package upgraded in place, a checkout
    switched): a worker would import the new files and run other code on the engine. Its
    digest of the code differs, so it is not used; the blocks are computed in-process."""
    from deteval.diagnostics import _bootstrap_plans

    original = _bootstrap_plans.prefix

    def prefix(values, dtype):      # the same numbers, other code than the file's
        return original(values, dtype)

    forced.setattr(_bootstrap_plans, "prefix", prefix)
    _computed_in_process(coco, forced, n_resamples=40, seed=4)


def test_a_worker_running_other_lrp_code_than_the_caller_is_not_used(coco, forced):
    """The oLRP a COCO resample computes (``_bootstrap_lrp.LRPPlan``) runs in the workers
    too: other code there than the caller's (here a method replaced at run time) and the
    worker is not used."""
    from deteval.diagnostics import _bootstrap_lrp

    original = _bootstrap_lrp.LRPPlan.molrp

    def molrp(self, w, events):      # the same numbers, other code than the file's
        return original(self, w, events)

    forced.setattr(_bootstrap_lrp.LRPPlan, "molrp", molrp)
    _computed_in_process(coco, forced, n_resamples=40, seed=4)


def _other_code(monkeypatch, module, name: str) -> None:
    """``module.name`` replaced by a function of the same numbers but other code than the
    file's (as a package upgraded in place would leave it in a worker)."""
    original = getattr(module, name)

    def replaced(*args, **kwargs):
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, replaced)


def test_a_worker_started_late_checks_the_protocols_code_too(monkeypatch):
    """Workers started by ``run_blocks`` after its first block (none ahead: the work looked
    short) digest the protocol's modules of the pool (VOC: ``_voc_stages``) as workers
    started ahead do: other code there than the caller's and the worker is not used."""
    from deteval.protocols import _voc_stages

    monkeypatch.delenv(workers.ENV, raising=False)
    monkeypatch.setattr(workers, "_TEST_OPTIONS", {})
    monkeypatch.setattr(workers, "_WORTH", 0.0)         # long enough once measured
    monkeypatch.setattr(workers, "_PARENT_COMPUTES", False)
    _other_code(monkeypatch, _voc_stages, "mean_ap")
    result, bootstrap = _voc()
    one = bootstrap(result, n_resamples=40, seed=1, threads=1)
    two = bootstrap(result, n_resamples=40, seed=1, threads=2)
    run = dict(workers.last_run)
    assert _equal(one, two)
    assert len(run["pids"]) == 1 and run["by_workers"] == 0 and _gone(run["pids"])


@pytest.mark.parametrize("protocol, module, name", [
    ("lvis", "deteval.protocols._results", "mean_valid"),
    ("crowdpose", "deteval.protocols.coco", "summarize_value")])
def test_a_worker_running_other_summary_code_than_the_caller_is_not_used(forced, protocol,
                                                                         module, name):
    """LVIS's and CrowdPose's resamples summarise with ``protocols._results`` (and CrowdPose
    with ``protocols.coco``) in the workers too: that code is digested as well."""
    import importlib

    forced.setattr(workers, "_PARENT_COMPUTES", False)
    _other_code(forced, importlib.import_module(module), name)
    result, bootstrap = {"lvis": _lvis, "crowdpose": _crowdpose}[protocol]()
    one = bootstrap(result, n_resamples=40, seed=1, threads=1)
    two = bootstrap(result, n_resamples=40, seed=1, threads=2)
    run = dict(workers.last_run)
    assert _equal(one, two)
    assert run["by_workers"] == 0 and _gone(run["pids"])


@pytest.mark.parametrize("protocol, module, name", [
    ("voc", "deteval.protocols._voc_stages", "mean_ap"),
    ("lvis", "deteval.protocols.lvis", "summary_stats"),
    ("crowdpose", "deteval.protocols.crowdpose", "headline_stats"),
    ("openimages", "deteval.protocols._openimages_match", "tf_average_precision")])
def test_a_comparisons_worker_checks_the_protocols_code_too(forced, tmp_path, protocol,
                                                            module, name):
    """The paired comparison's workers digest the protocol's modules (its bootstrap's
    ``_WORKER_MODULES``) as the bootstrap's do: other code there than the caller's and the
    worker is not used, and the comparison equals one thread's."""
    import importlib

    from deteval.diagnostics import compare

    forced.setattr(workers, "_PARENT_COMPUTES", False)
    _other_code(forced, importlib.import_module(module), name)
    result, _ = (_openimages(tmp_path) if protocol == "openimages"
                 else {"voc": _voc, "lvis": _lvis, "crowdpose": _crowdpose}[protocol]())
    compare_protocol = getattr(compare, f"compare_{protocol}")
    one = compare_protocol([result, result], n_resamples=40, seed=1, threads=1)
    two = compare_protocol([result, result], n_resamples=40, seed=1, threads=2)
    run = dict(workers.last_run)
    assert one.to_dict() == two.to_dict()
    assert len(run["pids"]) == 1 and run["by_workers"] == 0 and _gone(run["pids"])


def test_the_code_digest_is_the_same_in_a_fresh_interpreter():
    """What the worker sends is what the caller computes when the code is the same (string
    hashes differ between interpreters: sets among the constants must not change it)."""
    modules = wire._CODE_MODULES + ("deteval.diagnostics.bootstrap_voc",)
    here = workers.code_digest(modules)
    script = ("import sys; from deteval.diagnostics._bootstrap_workers import code_digest; "
              f"print(code_digest({modules!r}))")
    root = str(Path(deteval.__file__).resolve().parents[1])
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=root)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=env, check=True).stdout.strip()
        assert out == here


class _Queued:
    """A worker stand-in in this process: keeps the blocks sent to it, answers the oldest on
    ``receive`` (failing on the ``fail_at``-th), and logs the calls."""

    busy_since = None

    def __init__(self, engine: Picky, fail_at: int | None = None) -> None:
        self.engine, self.fail_at, self.held, self.log = engine, fail_at, [], []

    def send(self, block: list) -> None:
        self.held.append(block)
        self.log.append(("send", len(self.held)))

    def receive(self, n: int, more: bool):
        if sum(entry[0] == "receive" for entry in self.log) + 1 == self.fail_at:
            raise workers._Gone("died")
        block = self.held.pop(0)
        assert len(block) == n and more == bool(self.held)
        self.log.append(("receive", len(self.held)))
        return np.array([self.engine.numbers(w) for w in block], dtype=np.float64), 0.0

    def kill(self) -> None:
        self.log.append(("kill", len(self.held)))

    def end(self) -> None:
        self.log.append(("end", len(self.held)))

    def close(self) -> None:
        self.log.append(("close", len(self.held)))


def _pipelined(fake: _Queued, n: int) -> workers._Run:
    run = workers._Run(fake.engine.numbers, _rows(n), n, 2)
    run._pipeline(fake)
    while (item := run.take()) is not None:     # what the feeding thread does after it
        run.compute(item)
    out = np.concatenate([run.done[i] for i in range(len(run.done))])
    assert out.tolist() == [[float(i), float(i + 3)] for i in range(n)]
    return run


def test_a_worker_holds_the_next_block_while_it_computes_one():
    """``_DEPTH`` blocks in flight while they are full (the worker never waits for its
    feeding thread), one at a time near the end (none left idle while it computes a block
    sent ahead); every row once, in order; the worker's pipes closed after its last answer
    (its exit is waited for by the caller)."""
    fake = _Queued(Picky())
    run = _pipelined(fake, 300)
    held = [entry[1] for entry in fake.log if entry[0] == "send"]
    assert max(held) == workers._DEPTH == 2 and held[:2] == [1, 2] and held[-3:] == [1, 1, 1]
    assert fake.log[-1] == ("end", 0) and run.by_workers == run.next_id and run.redone == 0


def test_the_blocks_a_failing_worker_held_are_computed_in_process():
    fake = _Queued(Picky(), fail_at=2)      # fails with two blocks in flight
    run = _pipelined(fake, 300)
    assert run.by_workers == 1 and run.redone == 2 and fake.log[-2:] == [("kill", 2),
                                                                        ("close", 2)]


@pytest.mark.parametrize("threads", [1, 2])
def test_the_estimates_computed_with_the_resamples_are_the_evaluations(coco, forced, threads):
    """``bootstrap_coco`` computes the row of ones with the resamples (a worker takes it when
    the calling thread computes nothing): its numbers are those ``WeightedCOCO`` computes on
    its own, bit for bit, and the evaluation's stats."""
    from deteval.diagnostics.bootstrap import WeightedCOCO

    forced.setattr(workers, "_PARENT_COMPUTES", False)
    ci = bootstrap_coco(coco, n_resamples=40, seed=6, threads=threads)
    alone = WeightedCOCO(coco).estimates
    assert np.array_equal(ci.estimates, alone) and len(ci.samples) == 40
    assert ci.estimates[:len(coco.stats)].tolist() == list(coco.stats)
    if threads == 2:
        assert workers.last_run["by_workers"] == workers.last_run["blocks"]


class Counted(Picky):
    """A Picky engine that notes, when pickled, how many rows this process began with it so
    far; its first row takes 0.2 s in the calling process (a thread pickling it meanwhile
    would note 1)."""

    pickled_at: list = []

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def numbers(self, w: np.ndarray) -> list[float]:
        self.calls += 1
        if self.calls == 1 and os.getpid() == self.pid:
            __import__("time").sleep(0.2)
        return super().numbers(w)

    def __getstate__(self) -> dict:
        Counted.pickled_at.append(self.calls)
        return dict(vars(self), calls=0)


def test_the_engine_is_pickled_before_any_block_is_computed(forced):
    """Pickled by the calling thread before it computes (a plan's cache filled by a resample
    while a helper thread pickled the plan could change under the pickler)."""
    forced.setattr(Counted, "pickled_at", [])
    engine = Counted()
    with workers.prestart(2, 0.0) as pool:          # forced: started whatever the work
        out = workers.run_blocks(engine.numbers, _rows(60), 2, count=60,
                                 engine=lambda: engine, pool=pool)
    assert out[:, 0].tolist() == list(range(60)) and Counted.pickled_at == [0]
    assert _gone(workers.last_run["pids"])
