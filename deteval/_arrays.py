"""Small array helpers shared by the result and table types."""

from __future__ import annotations

import _thread
import contextlib

import numpy as np

__all__ = ["ReadOnlyArrays", "adapt_malloc", "frozen", "plain_pages"]


def frozen(array: np.ndarray, *, copy: bool = False) -> np.ndarray:
    """``array`` made read-only, in place, or a read-only copy with ``copy=True``.

    In place is for arrays the caller has just made and nothing else refers to; a copy is
    for arrays that may belong to someone else (whose flags must not change).

    Examples
    --------
    >>> a = np.arange(3)
    >>> frozen(a) is a, a.flags.writeable
    (True, False)
    >>> b = np.arange(3)
    >>> c = frozen(b, copy=True)
    >>> c is b, b.flags.writeable, c.flags.writeable
    (False, True, False)
    """
    if copy:
        array = np.array(array, copy=True)
    array.setflags(write=False)
    return array


class ReadOnlyArrays:
    """A base of the frozen types whose arrays are read-only: an unpickled (or deep-copied)
    instance gets its arrays read-only again (numpy's pickles drop the flag, so a table
    sent to a worker process or loaded from disk would come back writable).

    Examples
    --------
    >>> import pickle
    >>> from deteval.data import Images
    >>> pickle.loads(pickle.dumps(Images(ids=[1, 2]))).ids.flags.writeable
    False
    """

    __slots__ = ()

    def __setstate__(self, state: dict) -> None:
        _freeze_state(state.values())
        self.__dict__.update(state)


def _freeze_state(values) -> None:
    """Make the arrays among ``values`` read-only, and those in the dicts, lists and tuples
    among them (a result's per-category or per-split tables): all fresh objects of an
    unpickled state. Objects of other types are unpickled by their own rules."""
    for value in values:
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
        elif isinstance(value, dict):
            _freeze_state(value.values())
        elif isinstance(value, (list, tuple)):
            _freeze_state(value)


#: Bytes of the block :func:`adapt_malloc` frees: blocks smaller than it then come from a
#: heap, and glibc keeps up to twice as much free memory at the top of a heap (each
#: thread's) before it returns it to the kernel. At most 32 MiB (glibc's largest dynamic
#: threshold on 64 bits; a larger block changes nothing). 16 MiB, as the ``deteval``
#: program sets them (docs/startup.md §4.1): on the bench's keypoint files 11.3k page
#: faults against 12.8k with 4 MiB, peak RSS 87 against 83 MB.
_FREED_BLOCK = 1 << 24
_malloc_adapted = False


def adapt_malloc() -> None:
    """Allocate (untouched) and free one block of :data:`_FREED_BLOCK` bytes, once per process.

    glibc's malloc returns the free top of a heap to the kernel (``MADV_DONTNEED`` for a
    thread's heap, ``brk`` for the main one) whenever it exceeds its trim threshold, 128 KiB
    until a block larger than the mmap threshold is freed; from then on the two thresholds
    follow that block's size (the mmap threshold) and twice it, as in any process that has
    freed a large array. Before, each piece of a keypoint results file freed its
    temporaries, 1.8 MiB, back to the kernel, and the next piece faulted them in again: on
    the bench's file (40 pieces of 256 KiB), 18.9k page faults on the results thread, ~50
    ms of CPU on this machine, against 1.5k after (docs/threads.md, item 6). Called by
    the keypoint reader (:func:`deteval.io._numeric_keypoints.fixed_records`: the results,
    the ground truth's lists, read beside each other or alone) and by
    :func:`deteval._inputs.load_pair` before it reads two keypoint files; the evaluation
    after them gains too. Other allocators ignore it (a free of a block never touched).

    >>> adapt_malloc()
    """
    global _malloc_adapted
    if not _malloc_adapted:
        _malloc_adapted = True
        np.empty(_FREED_BLOCK, dtype=np.uint8)


_pages_lock = _thread.allocate_lock()     # (not threading: small runs never import it)
_pages_users = 0
_pages_before: bool | None = None


@contextlib.contextmanager
def plain_pages():
    """Within the block, numpy does not advise the kernel to back its large arrays with
    transparent huge pages (``madvise(MADV_HUGEPAGE)``, numpy's default on Linux for
    arrays of 4 MiB or more); numpy's setting is restored when the last such block in the
    process ends (the blocks of several threads may overlap).

    Where the kernel compacts memory on such a fault (``defrag`` = ``madvise``, a common
    default), a huge-page fault may wait tens of milliseconds; an evaluation of 2M
    detections allocates ~100 such arrays and took 0.98-1.07 s from its files instead of
    0.82-0.88 s (docs/startup.md §8.1). Only where and how memory is mapped changes, never
    a value.

    >>> with plain_pages():
    ...     a = np.zeros(1 << 20)
    >>> float(a.sum())
    0.0
    """
    global _pages_users, _pages_before
    switch = _madvise_switch()
    if switch is None:
        yield
        return
    with _pages_lock:
        if _pages_users == 0:
            _pages_before = bool(switch(False))
        _pages_users += 1
    try:
        yield
    finally:
        with _pages_lock:
            _pages_users -= 1
            if _pages_users == 0:
                switch(_pages_before)


def _madvise_switch():
    """numpy's ``_set_madvise_hugepage`` (it returns the previous setting), or None."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:
        try:
            from numpy.core.multiarray import _set_madvise_hugepage
        except ImportError:
            return None
    return _set_madvise_hugepage
