"""The ``threads=`` setting: how many threads the hot paths may use, and a map over them.

The work handed to threads is numpy on large arrays (IoU of candidate pairs, sorts, prefix
sums), which runs without the GIL, so two threads on two cores take about half the time.
Work is always split the same way whatever the number of threads, and every piece writes
its own part of the result: the numbers are identical for every ``threads`` value.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar, copy_context
from itertools import islice
from typing import Any, TypeVar

__all__ = ["available_cores", "resolve_threads", "thread_imap", "thread_map", "threads_limited"]

T = TypeVar("T")


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):   # not on Linux
        return max(os.cpu_count() or 1, 1)


def pool_size(threads: int, work: int | None = None) -> int:
    """The threads actually started for ``threads`` asked and ``work`` items (None: not
    known): at most the items and at most 4 per core. More threads than cores cannot make
    numpy work faster; a huge count (``--threads 9223372036854775807``) would otherwise
    start a thread per item, or overflow a count of items to keep ahead.

    >>> pool_size(3, 2)
    2
    >>> pool_size(2**63 - 1) == 4 * available_cores()
    True
    """
    size = min(threads, 4 * available_cores())
    return size if work is None else min(size, work)


#: The ``threads`` of the evaluation running in this context (None: none set): the steps
#: called without a count of their own (the readers, ``threads=None``) use at most this
#: many (:func:`threads_limited`).
_LIMIT: ContextVar[int | None] = ContextVar("deteval_threads", default=None)


@contextlib.contextmanager
def threads_limited(threads: int | None):
    """Within the block (in this thread, and in the threads :func:`thread_map` starts from
    it), :func:`resolve_threads` gives at most ``threads`` for None: an evaluation's
    ``threads=`` reaches the steps that take no count of their own, such as the file
    readers (``threads=1``: no thread is started at all). ``threads=None`` changes nothing
    (an enclosing block's cap still holds).

    >>> with threads_limited(1):
    ...     resolve_threads(None)
    1
    """
    if threads is None:
        yield
        return
    token = _LIMIT.set(threads)
    try:
        yield
    finally:
        _LIMIT.reset(token)


def resolve_threads(threads: Any) -> int:
    """``threads`` checked: None gives :func:`available_cores` (at most the count of the
    enclosing :func:`threads_limited` block); otherwise an int >= 1.

    >>> resolve_threads(2)
    2
    >>> resolve_threads(0)
    Traceback (most recent call last):
    ...
    ValueError: threads must be an integer >= 1 (or None for every core); got 0
    """
    if threads is None:
        limit = _LIMIT.get()
        return available_cores() if limit is None else min(available_cores(), limit)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1 (or None for every core); "
                         f"got {threads!r}")
    return threads


def thread_map(fn: Callable[..., T], items: Iterable[Any], threads: int) -> list[T]:
    """``[fn(item) for item in items]``, on up to ``threads`` threads, results in order.

    The calling thread works too (``threads - 1`` threads are started); each takes the next
    item not yet taken. After a call raises, no further item is started; once the running
    calls end, the exception of the earliest failed item is raised here. Plain threads,
    not ``concurrent.futures`` (which imports ``logging``: ~15 ms of every command that
    uses threads).

    >>> thread_map(abs, [-1, 2, -3], 2)
    [1, 2, 3]
    """
    items = list(items)
    workers = pool_size(threads, len(items))
    if workers <= 1:
        return [fn(item) for item in items]
    import threading

    results: list[Any] = [None] * len(items)
    failed: dict[int, BaseException] = {}
    taken = iter(range(len(items)))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                index = None if failed else next(taken, None)
            if index is None:
                return
            try:
                results[index] = fn(items[index])
            except BaseException as error:     # raised in the caller, below
                with lock:
                    failed[index] = error
                return

    # (each in a copy of the caller's context: its threads_limited count holds there too)
    helpers = [threading.Thread(target=copy_context().run, args=(work,), name=f"deteval-{k}",
                                daemon=True) for k in range(workers - 1)]
    for helper in helpers:
        helper.start()
    try:
        work()
    finally:
        for helper in helpers:
            helper.join()
    if failed:
        raise failed[min(failed)]
    return results


def thread_imap(fn: Callable[..., T], items: Iterable[Any], threads: int, *,
                ahead: int | None = None) -> Iterator[T]:
    """``fn(item)`` for each item, lazily and in order, computed on up to ``threads`` threads
    at most ``ahead`` items (default ``2 * threads``) ahead of the consumer.

    For work whose end the consumer decides (draw images until enough were drawn): the
    calls made beyond what is consumed are at most ``ahead``. Closing the iterator (a
    ``with contextlib.closing(...)`` block, or dropping it) cancels the calls not started
    and waits for the running ones. An exception raised by a call is raised when its
    result is reached. One thread: plain calls, one at a time, as they are consumed.

    >>> list(thread_imap(abs, [-1, 2, -3], 2))
    [1, 2, 3]
    """
    threads = pool_size(threads)
    if threads <= 1:
        for item in items:
            yield fn(item)
        return
    ahead = 2 * threads if ahead is None else max(int(ahead), 1)
    from concurrent.futures import ThreadPoolExecutor

    remaining = iter(items)
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="deteval")
    try:
        pending = deque(pool.submit(fn, item) for item in islice(remaining, ahead))
        while pending:
            future = pending.popleft()
            pending.extend(pool.submit(fn, item) for item in islice(remaining, 1))
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
