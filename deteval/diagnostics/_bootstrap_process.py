"""One bootstrap worker process: the program it runs (:func:`main`: hello, the engine,
then blocks of weight rows answered with their numbers) and the parent's handle on it
(``_Worker``: start, greet, send, receive, kill, wait). The pool and the scheduling of the
blocks are in ``_bootstrap_workers``; ``docs/diagnostics/bootstrap.md`` §13, "Worker
processes".
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from ._bootstrap_wire import _CODE_MODULES, _MAGIC, _read_exact, _recv, _send, _write, code_digest

__all__ = ["main", "started"]

#: The pids of the last workers started (tests check that none is left).
started: deque = deque(maxlen=64)


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
                "from deteval.diagnostics._bootstrap_process import main; "
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
