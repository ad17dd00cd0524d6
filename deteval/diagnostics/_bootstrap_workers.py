"""Bootstrap resamples computed in worker processes beside the calling thread.

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
import pickle
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from contextlib import suppress
from itertools import islice
from typing import Any

import numpy as np

__all__ = ["Several", "Workers", "engine_of", "main", "prestart", "register_engine",
           "run_blocks", "several", "slim", "work_of"]

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

_MAGIC = b"DTBW"
_HEADER = struct.Struct("<QI")
_LENGTH = struct.Struct("<Q")

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

#: The pids of the last workers started (tests check that none is left).
started: deque = deque(maxlen=64)

#: The modules whose code a worker's numbers run (with the engine's own, ``preload``): the
#: parent's and the worker's must be the same code, not only the same files.
_CODE_MODULES = ("deteval.diagnostics._bootstrap_workers", "deteval.diagnostics.bootstrap",
                 "deteval.diagnostics._bootstrap_plans", "deteval.protocols._coco_stages",
                 "deteval.diagnostics.lrp")


def code_digest(modules: Iterable[str]) -> str:
    """A digest of the code of the functions and methods of ``modules`` as this process runs
    it (its code objects, not its files): a worker started after the package was upgraded
    or its checkout switched in place reads the new files, and its digest differs from the
    parent's (still running the old code). Modules not loaded are imported.

    >>> code_digest(["deteval.diagnostics._bootstrap_workers"]) == code_digest(
    ...     ["deteval.diagnostics._bootstrap_workers"])
    True
    """
    import hashlib
    import importlib
    import types

    digest = hashlib.sha256()

    def constant(value: Any) -> None:
        if isinstance(value, types.CodeType):
            code(value)
        elif isinstance(value, frozenset):      # its order follows the strings' hashes
            digest.update(repr(sorted(repr(v) for v in value)).encode())
        elif isinstance(value, tuple):
            for item in value:
                constant(item)
        else:
            digest.update(repr(value).encode())

    def code(c: types.CodeType) -> None:
        digest.update(c.co_code)
        digest.update(repr((c.co_name, c.co_names, c.co_varnames)).encode())
        for value in c.co_consts:
            constant(value)

    for name in sorted(set(modules)):
        module = importlib.import_module(name)
        digest.update(name.encode())
        for key, value in sorted(vars(module).items()):
            if getattr(value, "__module__", None) != name:
                continue
            members = vars(value).items() if isinstance(value, type) else [(key, value)]
            for _, member in sorted(members, key=lambda kv: kv[0]):
                member = getattr(member, "__func__", member)      # static/class methods
                if isinstance(member, types.FunctionType):
                    digest.update(member.__qualname__.encode())
                    code(member.__code__)
    return digest.hexdigest()


#: What the last :func:`run_blocks` did (tests read it): the workers' pids, the blocks they
#: computed, the blocks computed again in-process after a worker's failure.
last_run: dict = {}


# --------------------------------------------------------------------------------------------
# Framing: a header (payload length, number of out-of-band buffers), the buffers' lengths,
# the pickle (protocol 5), the buffers.
# --------------------------------------------------------------------------------------------


def _send(stream: Any, obj: Any) -> None:
    buffers: list = []
    _write(stream, pickle.dumps(obj, protocol=5, buffer_callback=buffers.append), buffers)


def _write(stream: Any, payload: bytes, buffers: list) -> None:
    raws = [b.raw() for b in buffers]
    stream.write(_HEADER.pack(len(payload), len(raws)))
    for raw in raws:
        stream.write(_LENGTH.pack(raw.nbytes))
    stream.write(payload)
    for raw in raws:
        stream.write(raw)
    stream.flush()


def _read_exact(stream: Any, n: int) -> memoryview:
    """``n`` bytes (in an aligned numpy buffer); EOFError when the stream ends first."""
    out = memoryview(np.empty(n, np.uint8)).cast("B")
    got = 0
    while got < n:
        k = stream.readinto(out[got:])
        if not k:
            raise EOFError("pipe closed")
        got += k
    return out


def _recv(stream: Any) -> Any:
    length, n_buffers = _HEADER.unpack(_read_exact(stream, _HEADER.size))
    sizes = [_LENGTH.unpack(_read_exact(stream, _LENGTH.size))[0] for _ in range(n_buffers)]
    payload = _read_exact(stream, length)
    buffers = [_read_exact(stream, size) for size in sizes]
    return pickle.loads(payload, buffers=buffers)


class _Pickler(pickle.Pickler):
    """Pickles a scratch ``Workspace`` (a thread-local) as a fresh one."""

    def reducer_override(self, obj: Any) -> Any:
        from ._bootstrap_plans import Workspace

        if isinstance(obj, Workspace):
            return Workspace, ()
        return NotImplemented


def _dump_engine(engine: Any) -> tuple[bytes, list]:
    import io

    buffers: list = []
    stream = io.BytesIO()
    _Pickler(stream, protocol=5, buffer_callback=buffers.append).dump(engine)
    return stream.getvalue(), buffers


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
# The worker process.
# --------------------------------------------------------------------------------------------


def main(preload: tuple = ()) -> None:
    """The worker's loop: hello, then the engine, then blocks until the input ends."""
    import signal
    import warnings

    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the parent's to handle
    # The pipes on private descriptors; a stray print goes to stderr (the null device), not
    # into the framing.
    source = os.fdopen(os.dup(0), "rb")
    sink = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    warnings.simplefilter("ignore")
    import importlib

    import deteval

    for name in preload:
        importlib.import_module(name)
    sink.write(_MAGIC)
    _send(sink, (os.path.realpath(deteval.__file__),
                 code_digest(_CODE_MODULES + tuple(preload))))
    try:
        engine, options = _recv(source)
    except (EOFError, BrokenPipeError):
        os._exit(0)
    numbers = engine.numbers
    die_after = options.get("die_after")
    stall_after = options.get("stall_after")
    # The parent sends the next block while this one is computed (``_DEPTH``): a thread reads
    # them as they come, so that the parent's writes never wait for the computation.
    inbox: Any = __import__("queue").SimpleQueue()
    threading.Thread(target=_read_blocks, args=(source, inbox), daemon=True).start()
    received = 0
    try:
        while True:
            began = time.perf_counter()
            block = inbox.get()
            waited = time.perf_counter() - began
            if block is None:
                break
            if die_after is not None and received >= die_after:
                os._exit(3)
            if stall_after is not None and received >= stall_after:
                while inbox.get() is not None:     # alive, never answering (until killed or
                    pass                           # its input ends)
                break
            received += 1
            _send(sink, _compute(numbers, block) + (waited,))
    except BrokenPipeError:
        pass
    os._exit(0)      # no teardown: the parent waits for this exit


def _read_blocks(source: Any, inbox: Any) -> None:
    """The worker's reading thread: each block into ``inbox``, then None (the input ended or
    is unreadable: the worker leaves, the parent computes what it held)."""
    try:
        while True:
            inbox.put(_recv(source))
    except Exception:
        pass
    inbox.put(None)


def _compute(numbers: Callable, block: np.ndarray) -> tuple:
    """``("done", samples, seconds)``, or ``("redo", why, seconds)`` when a row raised or
    warned."""
    import warnings

    began = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = np.array([numbers(w) for w in block], dtype=np.float64)
        except Exception as error:   # recomputed in the parent, which raises it there
            return "redo", repr(error), time.perf_counter() - began
    if caught:
        return "redo", str(caught[0].message), time.perf_counter() - began
    return "done", out, time.perf_counter() - began


# --------------------------------------------------------------------------------------------
# The parent's side.
# --------------------------------------------------------------------------------------------


class _Gone(Exception):
    """The worker cannot be used (did not start, died, answered something unexpected)."""


class _Worker:
    """One worker process, fed by one thread of the parent."""

    def __init__(self, preload: tuple) -> None:
        import subprocess

        import deteval

        here = os.path.realpath(deteval.__file__)
        self.expected = (here, code_digest(_CODE_MODULES + tuple(preload)))
        root = os.path.dirname(os.path.dirname(here))
        paths = [root] + [os.path.abspath(p) for p in sys.path if isinstance(p, str)]
        code = (f"import sys; sys.path[:] = {paths!r}; "
                "from deteval.diagnostics._bootstrap_workers import main; "
                f"main({tuple(preload)!r})")
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   MKL_NUM_THREADS="1")
        if not sys.executable or getattr(sys, "frozen", False):
            raise OSError("no Python interpreter to start")
        # stderr to the null device: the library never prints (a worker that fails is
        # replaced in-process whatever it would have said).
        self.proc = subprocess.Popen([sys.executable, "-W", "ignore", "-c", code],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        started.append(self.proc.pid)
        _widen(self.proc.stdin)
        self.ready = False
        self.closed = False
        self.waited = 0.0       # seconds the worker waited for its blocks (after the first)
        self.busy_since: float | None = None    # when it began the block it computes

    def greet(self, engine: tuple) -> None:
        """Wait for the hello, check it is the same deteval, send the engine."""
        try:
            if bytes(_read_exact(self.proc.stdout, len(_MAGIC))) != _MAGIC:
                raise _Gone("unexpected hello")
            if _recv(self.proc.stdout) != self.expected:    # other files, or other code
                raise _Gone("another deteval")
            _write(self.proc.stdin, *engine)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, struct.error) as error:
            raise _Gone(str(error)) from None
        self.ready = True

    def send(self, block: list) -> None:
        """Hand the worker a block (it queues it behind the one it computes)."""
        if self.busy_since is None:
            self.busy_since = time.perf_counter()
        try:
            _send(self.proc.stdin, np.stack(block))
        except (OSError, ValueError) as error:
            raise _Gone(str(error)) from None

    def receive(self, n: int, more: bool) -> tuple[np.ndarray | None, float]:
        """The oldest block's samples (None when the worker asks for it to be redone; ``n``
        rows) and the seconds the worker spent on it; ``more``: another block is queued."""
        try:
            reply = _recv(self.proc.stdout)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, struct.error) as error:
            raise _Gone(str(error)) from None
        self.busy_since = time.perf_counter() if more else None
        if not (isinstance(reply, tuple) and len(reply) == 4 and reply[0] in ("done", "redo")):
            raise _Gone("unexpected reply")
        self.waited += reply[3]
        if reply[0] == "redo":
            return None, reply[2]
        out = reply[1]
        if not isinstance(out, np.ndarray) or out.dtype != np.float64 or len(out) != n:
            raise _Gone("unexpected reply")
        return out, reply[2]

    def kill(self) -> None:
        """Stop it now (any thread may call this; reading threads then see the end)."""
        try:
            self.proc.kill()
        except OSError:
            pass

    def end(self) -> None:
        """Close its pipes: it exits (waited for by :meth:`close`)."""
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def close(self) -> None:
        """End the process and wait for it (its input closed: it exits; killed if slow)."""
        if self.closed:
            return
        self.closed = True
        import subprocess

        self.end()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()


def _widen(stream: Any) -> None:
    """A 1 MB pipe buffer where the system allows it (Linux; 64 kB otherwise): the engine
    and the blocks cross in fewer turns of the two processes."""
    try:
        import fcntl

        fcntl.fcntl(stream.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE_SIZE)
    except (ImportError, OSError, ValueError):
        pass


#: Bytes of the pipe to a worker (Linux's default limit, ``/proc/sys/fs/pipe-max-size``).
_PIPE_SIZE = 1 << 20


class Workers:
    """Worker processes started ahead of the work (:func:`prestart`); a context manager that
    ends those :func:`run_blocks` did not use. Falsy when it holds none."""

    def __init__(self, n: int, preload: tuple = ()) -> None:
        self.workers: list[_Worker] = []
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
        Modules a worker started here imports before its engine arrives.

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
            workers = Workers(_n_workers(threads), preload).workers
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
