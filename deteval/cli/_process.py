"""The settings of a ``deteval`` process: what :func:`deteval.cli.main` does to the process when
it runs the process's own command line (the ``deteval`` program, ``python -m deteval``), never
when called with ``argv`` from Python. None changes a number (docs/startup.md §4.1).

Examples
--------
>>> MALLOC_SETTINGS
((-3, 16777216), (-1, 33554432))
>>> malloc_set_by_user({"MALLOC_TRIM_THRESHOLD_": "0"}), malloc_set_by_user({"HOME": "/"})
(True, False)
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping

#: glibc ``mallopt`` parameters (``malloc.h``: ``M_MMAP_THRESHOLD`` -3, ``M_TRIM_THRESHOLD``
#: -1) and values: blocks under 16 MiB come from the heap, and up to 32 MiB of free memory
#: stays at its top. glibc's own rule reaches such values after the first free of a large
#: block (the threshold follows the largest block freed, up to 32 MiB, and the top kept is
#: twice it); these are the values from the start.
MALLOC_SETTINGS = ((-3, 16 << 20), (-1, 32 << 20))

#: The variables through which a user sets glibc malloc's thresholds (their setting wins).
_MALLOC_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                     "MALLOC_MMAP_MAX_")


def before_numpy() -> None:
    """One OpenBLAS thread, unless the user set ``OPENBLAS_NUM_THREADS`` (or numpy is already
    imported, when it would change nothing): numpy's import would otherwise start a thread
    per core, about 0.05 s of CPU of every command. The commands' BLAS calls are dot products
    of counts (docs/startup.md §4.1); their threads are deteval's own (docs/threads.md)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


#: The collector's first-generation threshold in a command's process, in place of CPython's
#: 700 (docs/startup.md §4.1): most objects the imports create live to the end, and the
#: collector walks the young ones at every collection (on the 100-image sample 58
#: collections of the first generation and 5 of the second at 700; 15 and 1 at 50,000).
#: The garbage cycles waiting for a collection are at most this many objects.
GC_THRESHOLD = 50_000


def collect_less() -> bool:
    """Raise the collector's first-generation threshold to :data:`GC_THRESHOLD`; returns
    whether it did. Only from CPython's default ``(700, 10, 10)``: a threshold the user set
    (``sitecustomize``), or another interpreter's default, stays."""
    import gc

    threshold = gc.get_threshold()
    if threshold != (700, 10, 10):
        return False
    gc.set_threshold(GC_THRESHOLD, *threshold[1:])
    return True


def tune_malloc() -> bool:
    """Apply :data:`MALLOC_SETTINGS` with glibc's ``mallopt``; returns whether it did.

    By default glibc's malloc serves blocks from 128 KiB on with fresh mappings and gives
    back the heap's free top beyond 128 KiB, so the arrays an evaluation frees are returned
    to the system and the next ones faulted in again, page by page. Nothing when the user
    set the thresholds (:func:`malloc_set_by_user`) or the C library is not glibc (macOS,
    Windows, musl)."""
    if not sys.platform.startswith("linux") or malloc_set_by_user(os.environ):
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
    except (ValueError, OSError):   # a C library without the name: not glibc
        return False
    try:
        import ctypes  # (numpy imports it too: no cost for a command that reads numbers)

        mallopt = ctypes.CDLL(None).mallopt
    except (ImportError, OSError, AttributeError):   # a Python built without ctypes
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return all([mallopt(parameter, value) == 1 for parameter, value in MALLOC_SETTINGS])


def malloc_set_by_user(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` sets glibc malloc's thresholds (``MALLOC_*_`` or a
    ``glibc.malloc`` tunable): then :func:`tune_malloc` leaves them."""
    return (any(name in environ for name in _MALLOC_VARIABLES)
            or "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""))


def before_exit() -> None:
    """``gc.freeze()``: the interpreter's exit walks every object the collector tracks (some
    20,000 once numpy is imported, about 0.01 s); frozen, they are skipped. The command
    has ended: its files are closed and renamed, its threads joined."""
    import gc

    gc.freeze()
