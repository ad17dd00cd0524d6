"""Fewer page faults on the keypoints path: glibc's malloc thresholds adapted once per process
(deteval._arrays.adapt_malloc) and large reader columns on whole huge pages
(deteval.io._numeric_keypoints._huge_page_empty). Counts of page faults, not times."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from deteval.io._numeric_keypoints import _huge_page_empty


def _glibc() -> bool:
    try:
        return sys.platform.startswith("linux") and bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        return False


@pytest.mark.parametrize("shape, dtype", [((0,), np.float64), ((7, 3), np.int64),
                                          ((25_563, 51), np.float64), ((600_000,), np.int64),
                                          ((11_119, 51), np.float64), ((7_139, 51), np.float64),
                                          ((5_140, 51), np.float64)])
def test_huge_page_empty_is_an_empty_array_aligned_when_large(shape, dtype):
    array = _huge_page_empty(shape, dtype)
    assert array.shape == shape and array.dtype == dtype and array.flags.c_contiguous
    assert array.flags.writeable
    if array.nbytes >= 1 << 21:
        assert array.__array_interface__["data"][0] % (1 << 21) == 0
    array[...] = 3
    assert (array == 3).all()


_CHURN = textwrap.dedent("""
    import resource, sys, threading
    import numpy as np
    from deteval import _arrays

    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    def pieces(out):
        before = faults()
        for _ in range(20):     # a piece's temporaries (8 x 256 KiB), freed together
            blocks = [np.ones(1 << 15) for _ in range(8)]
            del blocks
        out.append(faults() - before)

    if sys.argv[1] == "adapt":
        _arrays.adapt_malloc()
        _arrays.adapt_malloc()     # (once: the second call does nothing)
    out = []
    thread = threading.Thread(target=pieces, args=(out,))
    thread.start()
    thread.join()
    print(out[0])
""")


@pytest.mark.skipif(not _glibc(), reason="glibc's malloc thresholds (Linux)")
def test_adapted_malloc_keeps_a_threads_freed_temporaries_mapped():
    """Without the adaptation glibc gives each round's freed 2 MiB back to the kernel and
    faults it in again (~10k faults); with it the pages are faulted in once (~0.5k)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"):
        env.pop(name, None)
    counts = {how: int(subprocess.run([sys.executable, "-c", _CHURN, how], env=env,
                                      capture_output=True, text=True, check=True).stdout)
              for how in ("plain", "adapt")}
    assert counts["adapt"] * 4 < counts["plain"], counts
