"""Bootstrap resamples computed in worker processes beside the calling thread: the engines
the workers get, the pool of workers, and the scheduling of the blocks among the calling
thread and the workers (one worker process, its program and the parent's handle on it:
``_bootstrap_process``; the framing of the pipe and the code digest: ``_bootstrap_wire``).

Two threads of one process computing resamples side by side are slower than two processes
(they wait for each other between numpy calls; ``docs/diagnostics/bootstrap.md`` §13,
"Worker processes"), so a long bootstrap hands blocks of weight rows to helper
interpreters. They are started with
``subprocess`` (``python -c`` with the parent's ``sys.path``), not ``multiprocessing``: no
re-import of the caller's ``__main__`` (a script without a main guard is not run again), no
``fork`` of a process that may hold other threads' locks. Each worker gets a slim copy of
the weighted evaluation (its ``numbers(w)`` and the arrays it reads, pickled once) and then
blocks of weight rows, and sends back their numbers.

Rules (what the tests check):

* every row's numbers depend on its weights alone, so they are the same whoever computes
  them; the blocks come back in the seed's order: the samples are identical for every
  ``threads`` and every split of the work;
* the calling thread computes too, taking blocks from the same queue as the threads that
  feed the workers (one each): whoever is free takes the next block; a worker holds the
  next block while it computes one (two while the blocks are full, ``_DEPTH``);
* a worker that cannot start, sends something unexpected or dies: the blocks it held, and
  every later one its thread takes, are computed in-process. A block whose computation raised or
  warned in the worker is computed again in-process, so the exception or the warning is the
  caller's own, as without workers (the earliest failing row's, in seed order);
* every started process is waited for before the call returns (on error, on Ctrl-C too);
  a worker ignores SIGINT and leaves when its input pipe closes (the parent ended or
  died).

``DETEVAL_WORKERS=threads`` never starts a worker; ``DETEVAL_WORKERS=processes`` uses them
whenever more than one thread is asked for, however short the work.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from contextlib import suppress
from itertools import islice
from typing import Any

import numpy as np

from ._bootstrap_process import _Gone, _Worker, main, started
from ._bootstrap_wire import _dump_engine, code_digest

__all__ = ["Several", "Workers", "code_digest", "engine_of", "main", "prestart",
           "register_engine", "run_blocks", "several", "slim", "started", "work_of"]

#: Most weight rows in one block (fewer near the end, so that nobody waits long for the
#: last block).
_BLOCK = 16

#: Blocks a worker holds at a time: the one it computes and the next, sent ahead so that it
#: starts on it at once (its feeding thread waits for the interpreter lock, held by the
#: calling thread between numpy calls, for up to the switch interval: 5 ms a block).
_DEPTH = 2

#: Seconds of remaining work per participant (the calling thread and the workers; rows left
#: times the first block's cost per row, shared among them) from which the resamples go to
#: processes; below it, threads. On two cores: 1.5 s of work.
_WORTH = 0.75

#: Rows times detections per participant from which workers are started before the plans
#: are built (about 0.5 s of COCO resamples each, at ~20 ns per detection and resample); the
#: first block's measured cost decides whether they are used.
_PRESTART = 2.5e7

#: Environment variable: ``threads`` (no workers) or ``processes`` (workers whenever
#: ``threads > 1``); anything else or unset: processes when the work is long enough.
ENV = "DETEVAL_WORKERS"

#: Seconds a worker may spend on a block once every block is handed out, at the least (20
#: times the mean cost of a block so far when that is longer): beyond it the worker is taken
#: for stuck (stopped, deadlocked) and killed, and its block computed in-process. Without it
#: a worker that stops answering without dying would hold the call forever.
_STALL = 60.0

#: Options handed to each worker with its engine (tests: ``{"die_after": n}`` makes it exit
#: on receiving its block ``n``, ``{"stall_after": n}`` makes it stop answering there).
_TEST_OPTIONS: dict = {}

#: False (tests): the calling thread computes no block, the workers' threads do them all.
_PARENT_COMPUTES = True

#: What the last :func:`run_blocks` did (tests read it): the workers' pids, the blocks they
#: computed, the blocks computed again in-process after a worker's failure.
last_run: dict = {}


# --------------------------------------------------------------------------------------------
# What a worker gets: the engines.
# --------------------------------------------------------------------------------------------


def slim(weighted: Any, **replace: Any) -> Any:
    """A shallow copy of ``weighted`` for the workers: its attributes, less the evaluation's
    ``result``, ``ctx`` and ``state`` (the data set, the match table: more than ``numbers``
    reads), with ``replace``'s attributes set (what ``numbers`` reads of those).

    >>> from types import SimpleNamespace
    >>> slim(SimpleNamespace(plan=1, result=2), result=SimpleNamespace(n=3))
    namespace(plan=1, result=namespace(n=3))
    """
    import copy

    clone = copy.copy(weighted)
    for name in ("result", "ctx", "state"):
        vars(clone).pop(name, None)
    vars(clone).update(replace)
    return clone


#: The engine of each weighted-evaluation class that needs more than :func:`slim` (what
#: ``numbers`` reads of the result or context), set by :func:`register_engine`.
_ENGINES: dict[type, Callable[[Any], Any]] = {}


def register_engine(cls: type, make: Callable[[Any], Any]) -> None:
    """Make ``make(weighted)`` the engine of ``cls``'s instances (default: :func:`slim`)."""
    _ENGINES[cls] = make


def engine_of(weighted: Any) -> Any:
    """What a worker gets to compute ``weighted.numbers``: its class's registered engine, or
    :func:`slim`."""
    return _ENGINES.get(type(weighted), slim)(weighted)


class Several:
    """The engine of a paired comparison: ``numbers(w)`` lists each engine's numbers.

    >>> from types import SimpleNamespace
    >>> Several([SimpleNamespace(numbers=lambda w: [w])] * 2).numbers(1)
    [[1], [1]]
    """

    def __init__(self, engines: Iterable[Any]) -> None:
        self.engines = list(engines)

    def numbers(self, w: np.ndarray) -> list:
        """Each engine's numbers under weights ``w``."""
        return [engine.numbers(w) for engine in self.engines]


def several(weighted: Iterable[Any]) -> Several:
    """The engine of a paired comparison of the weighted evaluations ``weighted``."""
    return Several(engine_of(w) for w in weighted)



# --------------------------------------------------------------------------------------------
# The pool: workers started ahead, how many.
# --------------------------------------------------------------------------------------------


class Workers:
    """Worker processes started ahead of the work (:func:`prestart`); a context manager that
    ends those :func:`run_blocks` did not use. Falsy when it holds none."""

    def __init__(self, n: int, preload: tuple = ()) -> None:
        self.workers: list[_Worker] = []
        self.preload = tuple(preload)       # also for workers run_blocks starts later
        for _ in range(max(n, 0)):
            try:
                self.workers.append(_Worker(preload))
            except Exception:       # no interpreter, no pipes: threads instead
                break

    def __bool__(self) -> bool:
        return bool(self.workers)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Kill and wait for every worker not ended yet."""
        for worker in self.workers:
            if not worker.closed:
                if not worker.ready:
                    worker.kill()
                worker.close()


def _mode() -> str:
    value = os.environ.get(ENV, "").strip().lower()
    return value if value in ("threads", "processes") else "auto"


#: Most worker processes one call starts on its own (``threads=None`` on a many-core machine):
#: each holds an interpreter, numpy and the engine (100-130 MB for 500k detections).
MAX_WORKERS = 7


def _n_workers(threads: int) -> int:
    """Worker processes beside the calling thread: one fewer than the threads asked, at most
    one per other core and at most :data:`MAX_WORKERS` (forced on: one per other thread
    asked).

    >>> _n_workers(1)
    0
    """
    from .._threads import available_cores, pool_size

    threads = pool_size(threads)
    if _mode() == "processes":
        return threads - 1
    return min(threads, available_cores(), MAX_WORKERS + 1) - 1


def work_of(result: Any, n_resamples: int, weights: Any) -> int:
    """Resamples (``weights``' rows, else ``n_resamples``) times the result's detections: the
    size :func:`prestart` reads.

    >>> from types import SimpleNamespace
    >>> work_of(SimpleNamespace(detections=[1, 2]), 10, None)
    20
    """
    count = n_resamples if weights is None else len(weights)
    detections = getattr(result, "detections", None)
    return count * (0 if detections is None else len(detections))


def prestart(threads: int, work: float, preload: tuple = ()) -> Workers:
    """Workers started now when the coming resamples look long (``work``: rows times
    detections, or any size proportional to a resample's cost; ``_PRESTART`` per
    participant), so that their interpreter starts while the plans are built. An empty
    :class:`Workers` otherwise (and with one thread, or ``DETEVAL_WORKERS=threads``)."""
    n = _n_workers(threads) if threads > 1 else 0
    mode = _mode()
    wanted = mode == "processes" or (mode == "auto" and work >= _PRESTART * (n + 1))
    return Workers(n if wanted else 0, preload)


# --------------------------------------------------------------------------------------------
# Scheduling: one queue of blocks for the calling thread and the workers' threads.
# --------------------------------------------------------------------------------------------


class _Run:
    """The shared queue of one :func:`run_blocks` call and its results."""

    def __init__(self, numbers: Callable, rows: Iterable, count: int | None, parts: int):
        self.numbers, self.rows, self.remaining, self.parts = numbers, iter(rows), count, parts
        self.lock = threading.Lock()
        self.next_id = 0
        self.done: dict[int, np.ndarray] = {}
        self.failed: dict[int, BaseException] = {}
        self.stopped = False          # interrupted: nothing more is computed
        self.exhausted = False        # every row was taken
        self.processes = True         # False: workers are given up after their block
        self.engine: tuple | None = None
        self.by_workers = 0
        self.spent: dict[str, tuple[int, float]] = {}     # rows and seconds, by where
        self.redone = 0

    def take(self) -> tuple[int, list] | None:
        """The next block (id, rows), or None when there is none or the run ended."""
        with self.lock:
            if self.failed or self.stopped:
                return None
            size = _BLOCK if self.remaining is None else max(
                1, min(_BLOCK, -(-self.remaining // (2 * self.parts))))
            try:
                block = list(islice(self.rows, size))
            except BaseException as error:
                self.failed[self.next_id] = error
                self.stopped = not isinstance(error, Exception)
                return None
            if not block:
                self.exhausted = True
                return None
            if self.remaining is not None:
                self.remaining = max(self.remaining - len(block), 0)
            self.next_id += 1
            return self.next_id - 1, block

    def compute(self, item: tuple[int, list]) -> None:
        """The block's numbers, in this thread; a failure is kept (the earliest is raised)."""
        index, block = item
        began = time.perf_counter()
        try:
            out = np.array([self.numbers(w) for w in block], dtype=np.float64)
        except BaseException as error:
            with self.lock:
                self.failed[index] = error
                if not isinstance(error, Exception):
                    self.stopped = True
            return
        self._store(index, out, "in-process", time.perf_counter() - began)

    def _store(self, index: int, out: np.ndarray, where: str, seconds: float) -> None:
        with self.lock:
            self.done[index] = out
            rows, total = self.spent.get(where, (0, 0.0))
            self.spent[where] = (rows + len(out), total + seconds)

    def feed(self, worker: _Worker | None, engine: Callable[[], Any] | None) -> None:
        """A helper thread's loop: blocks to ``worker`` while it is usable, then computed
        here."""
        if worker is not None:
            try:
                worker.greet(self._engine(engine))
            except _Gone:
                worker = self._drop(worker)
        if worker is not None:
            self._pipeline(worker)
        while (item := self.take()) is not None:
            self.compute(item)

    def _pipeline(self, worker: _Worker) -> None:
        """Blocks to ``worker``, :data:`_DEPTH` of them in flight (the next one waits in the
        worker while it computes one, so it never waits for this thread), until the rows
        end, processes are given up, or the worker fails: the blocks it held are then
        computed here."""
        flight: deque = deque()
        try:
            while True:
                while len(flight) < self._depth() and self.processes and not self.stopped \
                        and (item := self.take()) is not None:
                    flight.append(item)
                    worker.send(item[1])
                if not flight:
                    break
                out, seconds = worker.receive(len(flight[0][1]), len(flight) > 1)
                item = flight.popleft()
                if out is not None:
                    self._store(item[0], out, "workers", seconds)
                    with self.lock:
                        self.by_workers += 1
                    continue
                if self.stopped:
                    return
                self._redo(item)
        except _Gone:
            self._drop(worker)
            while flight and not self.stopped:
                self._redo(flight.popleft())
            return
        if self.processes:
            worker.end()            # it exits while the others finish; waited for later
        else:
            self._drop(worker)

    def _depth(self) -> int:
        """:data:`_DEPTH` while the blocks are full; one at a time near the end, where a
        block sent ahead could leave the others idle while the worker computes it."""
        with self.lock:
            near_end = self.remaining is None or self.remaining < _DEPTH * _BLOCK * self.parts
        return 1 if near_end else _DEPTH

    def _redo(self, item: tuple[int, list]) -> None:
        """A block a worker did not compute (it failed, or its rows raised or warned there),
        computed here."""
        with self.lock:
            self.redone += 1
        self.compute(item)

    def _engine(self, engine: Callable[[], Any] | None) -> tuple:
        """The engine pickled, once (the calling thread does it before any block is
        computed: pickled while a thread computes, a plan's cache could change under the
        pickler); _Gone when there is none or it cannot be pickled (computed in-process)."""
        with self.lock:
            if self.engine is None:
                try:
                    if engine is None:
                        raise ValueError("no engine")
                    self.engine = _dump_engine((engine(), dict(_TEST_OPTIONS)))
                except Exception as error:
                    self.engine = ("", repr(error))
            if not self.engine[0]:
                raise _Gone(self.engine[1])
            return self.engine

    @staticmethod
    def _drop(worker: _Worker) -> None:
        worker.kill()
        worker.close()
        return None


def run_blocks(numbers: Callable[[np.ndarray], Any], rows: Iterable[np.ndarray], threads: int,
               *, count: int | None = None, engine: Callable[[], Any] | None = None,
               pool: Workers | None = None, preload: tuple = ()) -> np.ndarray:
    """``np.array([numbers(w) for w in rows], float64)`` computed by the calling thread and
    ``threads - 1`` helpers: threads, or worker processes each fed by a thread.

    Parameters
    ----------
    numbers : callable
        The numbers of one weight row (a list of floats, the same length for every row).
    rows : iterable of ndarray
        The weight rows, taken in order (under a lock) as blocks are handed out.
    threads : int
        Resamples computed at a time (>= 1).
    count : int, optional
        The number of rows (block sizes shrink near the end; without it no worker is used).
    engine : callable, optional
        Returns a picklable object whose ``numbers`` equals ``numbers`` (:func:`slim`);
        without it no worker is used.
    pool : Workers, optional
        Workers started ahead (:func:`prestart`); used when the work is long enough, else
        ended. The caller closes it (it is a context manager): the workers' exits are
        waited for there (those started here join it), not here.
    preload : tuple of str
        Modules a worker started here imports before its engine arrives, and whose code it
        digests (default: ``pool``'s).

    Returns
    -------
    ndarray, shape (B, N)
        float64, the rows in order (shape (0,) without rows).

    Examples
    --------
    >>> run_blocks(lambda w: [float(w.sum())], [np.ones(2), np.zeros(2)], 2).tolist()
    [[2.0], [0.0]]
    """
    from .._threads import pool_size

    threads = pool_size(threads)
    workers = list(pool.workers) if pool else []
    run = _Run(numbers, rows, count, max(threads, 1))
    helpers: list[threading.Thread] = []

    def start(worker: _Worker | None) -> None:
        if worker is not None:
            with suppress(_Gone):        # pickled here, before the helpers compute
                run._engine(engine)
        helper = threading.Thread(target=run.feed, args=(worker, engine), daemon=True,
                                  name=f"deteval-boot-{len(helpers)}")
        helpers.append(helper)
        helper.start()

    try:
        for worker in workers:
            start(worker)
        possible = engine is not None and count is not None and threads > 1
        use = possible and _mode() == "processes"        # forced on: no measurement
        if not use and possible and _mode() == "auto" and (first := run.take()) is not None:
            began = time.perf_counter()
            run.compute(first)
            each = (time.perf_counter() - began) / len(first[1])
            n = _n_workers(threads)
            use = n > 0 and run.remaining * each >= _WORTH * (n + 1)
        if use and not workers and not run.failed:
            # (the pool's modules when it started none: their code is digested too)
            workers = Workers(_n_workers(threads), preload or getattr(pool, "preload", ())
                              ).workers
            if pool is not None:
                pool.workers.extend(workers)        # the pool waits for them too
            for worker in workers:
                start(worker)
        run.processes = use
        # Threads for the workers that did not start; without workers, threads (those of
        # the prestarted workers compute in-process).
        wanted = _n_workers(threads) if use else threads - 1
        for _ in range(wanted - len(helpers)):
            start(None)
        while (_PARENT_COMPUTES or not helpers) and (item := run.take()) is not None:
            run.compute(item)
    except BaseException:
        run.stopped = True
        raise
    finally:
        _finish(run, workers, helpers, wait=pool is None)
    if run.failed:
        raise run.failed[min(run.failed)]
    if not run.done:
        return np.array([], dtype=np.float64)
    return np.concatenate([run.done[i] for i in range(len(run.done))])


def _join(run: _Run, workers: list, helpers: list) -> None:
    """Wait for the helper threads; a worker whose block takes longer than the stall limit
    (:data:`_STALL`, or 20 times a block's mean cost so far) is killed: its helper computes
    the block in-process."""
    while any(helper.is_alive() for helper in helpers):
        for helper in helpers:
            helper.join(timeout=0.5)
        with run.lock:
            block = max((seconds / max(rows, 1) * _BLOCK
                           for rows, seconds in run.spent.values()), default=0.0)
        limit = max(_STALL, 20 * block)
        now = time.perf_counter()
        for worker in workers:
            since = worker.busy_since
            if since is not None and now - since > limit:
                worker.kill()


def _finish(run: _Run, workers: list, helpers: list, *, wait: bool = True) -> None:
    """Wait for the helper threads and end every worker (at once when interrupted, else
    after their block; those still starting are not waited for); ``wait=False``: their
    exit is waited for by the pool that holds them (while the caller computes the
    intervals)."""
    for worker in workers:      # one still starting when every block is taken: not needed
        if run.stopped or (run.exhausted and not worker.ready):
            worker.kill()
    try:
        try:
            _join(run, workers, helpers)
        except BaseException:          # Ctrl-C while waiting: end the workers now
            run.stopped = True
            for worker in workers:
                worker.kill()
            for helper in helpers:
                helper.join()
            raise
    finally:
        for worker in workers:
            if not worker.closed and not worker.ready:
                worker.kill()
            if wait:
                worker.close()
            else:
                worker.end()
        last_run.clear()
        last_run.update(pids=[w.proc.pid for w in workers], by_workers=run.by_workers,
                        redone=run.redone, blocks=run.next_id, spent=dict(run.spent),
                        waited=sum(w.waited for w in workers))
