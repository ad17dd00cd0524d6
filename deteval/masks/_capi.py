"""pycocotools' C mask routines called without the GIL, through :mod:`ctypes`.

pycocotools' extension module (``pycocotools._mask``) is compiled from its ``maskApi.c``;
on Linux and macOS its shared object exports that file's functions (``rleIou``,
``rleFrString``, ``rleFrPoly``, ``rleMerge``, ``rleToString``, ...) besides the module's
init function. Called through :mod:`ctypes` they run the very same machine code as the
Cython wrappers (so the numbers are pycocotools' own, bit for bit), but:

- ctypes releases the GIL for the length of each call, so two threads can run them at once
  (the Cython wrappers hold it throughout);
- they take RLE structs that point into numpy arrays of runs, so a batch needs no Python
  object per mask.

Where the symbols are not there (Windows' ``.pyd`` exports only ``PyInit__mask``), where
``unsigned long`` is not 64 bits, or where the self-check (:func:`_self_check`: a few
masks' IoUs, areas and merges against the Cython wrappers') fails, :func:`c_routines`
returns None and the callers use the Cython wrappers (:func:`~deteval.masks._api.mask_api`),
which give the same numbers. :func:`use_c_routines` switches the routines off and on (for
tests and comparisons).

The RLE struct (``maskApi.h``): ``typedef struct { siz h, w, m; uint *cnts; } RLE`` with
``siz`` an ``unsigned long`` and ``uint`` an ``unsigned int``: four 8-byte fields on LP64,
:data:`RLE_DTYPE` as a numpy record.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from typing import Any, NamedTuple

import numpy as np

__all__ = ["RLE_DTYPE", "CRoutines", "HeldRoutines", "c_routines", "held_routines",
           "use_c_routines"]

#: One ``RLE`` struct as a numpy record (LP64: ``siz`` is 8 bytes, the pointer too).
RLE_DTYPE = np.dtype([("h", np.uint64), ("w", np.uint64), ("m", np.uint64),
                      ("cnts", np.uintp)])

#: Set to "0" to never use the routines through ctypes (the Cython wrappers then).
ENV_SWITCH = "DETEVAL_C_MASK_ROUTINES"

_enabled = [True]


class CRoutines(NamedTuple):
    """The C functions, their argument types set (see ``maskApi.h``)."""

    rleIou: Any         # (RLE *dt, RLE *gt, siz m, siz n, byte *iscrowd, double *o)
    rleFrString: Any    # (RLE *R, char *s, siz h, siz w)
    rleFrPoly: Any      # (RLE *R, const double *xy, siz k, siz h, siz w)
    rleMerge: Any       # (const RLE *R, RLE *M, siz n, int intersect)
    rleToString: Any    # char* (const RLE *R)
    rleArea: Any        # (const RLE *R, siz n, uint *a)
    rleToBbox: Any      # (const RLE *R, double *bb, siz n)
    rleFree: Any        # (RLE *R)
    free: Any           # libc's free, for rleToString's string


@contextlib.contextmanager
def use_c_routines(enabled: bool):
    """Within the block, :func:`c_routines` gives the routines (``True``, where they
    load and pass the self-check) or None (``False``)."""
    before = _enabled[0]
    _enabled[0] = bool(enabled)
    try:
        yield
    finally:
        _enabled[0] = before


def c_routines() -> CRoutines | None:
    """pycocotools' C routines through ctypes, or None where they cannot be used (module
    notes): callers then use the Cython wrappers."""
    if not _enabled[0] or os.environ.get(ENV_SWITCH, "1") == "0":
        return None
    return _load()


@functools.lru_cache(maxsize=1)
def _load() -> CRoutines | None:
    if ctypes.sizeof(ctypes.c_ulong) != 8 or ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    try:
        from pycocotools import _mask

        lib = ctypes.CDLL(_mask.__file__)
        libc = ctypes.CDLL(None)
        routines = _declare(lib, libc)
    except (OSError, AttributeError, ImportError, TypeError, ValueError):
        return None     # (no such library or symbol on this platform: the Cython wrappers)
    try:
        ok = _self_check(routines, _mask)
    except Exception:   # noqa: BLE001 (any surprise: the Cython wrappers)
        ok = False
    return routines if ok else None


def _declare(lib: Any, libc: Any) -> CRoutines:
    ptr, siz, intp = ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int
    signatures = {
        "rleIou": [ptr, ptr, siz, siz, ptr, ptr],
        "rleFrString": [ptr, ctypes.c_char_p, siz, siz],
        "rleFrPoly": [ptr, ptr, siz, siz, siz],
        "rleMerge": [ptr, ptr, siz, intp],
        "rleToString": [ptr],
        "rleArea": [ptr, siz, ptr],
        "rleToBbox": [ptr, ptr, siz],
        "rleFree": [ptr],
    }
    functions = {}
    for name, args in signatures.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = ctypes.c_void_p if name == "rleToString" else None
        functions[name] = f
    free = libc.free
    free.argtypes, free.restype = [ptr], None
    return CRoutines(free=free, **functions)


def _pointer(array: np.ndarray) -> int:
    return array.ctypes.data


def _self_check(c: CRoutines, cython: Any) -> bool:
    """The routines give the Cython wrappers' values on a few masks: IoU (crowd and not,
    sizes that differ), areas, boxes, a polygon's mask and a merge."""
    # A fixed scatter of ~45% ones (not numpy.random: importing it costs a fresh process
    # ~10 ms, and nothing else of an evaluation imports it).
    bitmaps = ((np.arange(6 * 9 * 7, dtype=np.int64) * 2654435761 >> 7) % 100 < 45
               ).astype(np.uint8).reshape(6, 9, 7)
    bitmaps[..., 0] = 0     # an empty mask
    encoded = cython.encode(np.asfortranarray(bitmaps))
    encoded.append(cython.encode(np.asfortranarray(np.ones((7, 9, 1), np.uint8)))[0])
    strings = [e["counts"] for e in encoded]
    sizes = [e["size"] for e in encoded]
    records = np.zeros(len(encoded), dtype=RLE_DTYPE)
    held = []
    try:
        for i, (s, (h, w)) in enumerate(zip(strings, sizes)):
            c.rleFrString(_pointer(records[i:i + 1]), s, h, w)
            held.append(i)
        crowd = np.array([0, 1, 0, 1], dtype=np.uint8)
        dt, gt = records[:4], records[4:]
        o = np.zeros((len(gt), len(dt)), dtype=np.float64)
        c.rleIou(_pointer(dt), _pointer(gt), len(dt), len(gt), _pointer(crowd), _pointer(o))
        want = np.asarray(cython.iou(encoded[:4], encoded[4:], crowd[:len(gt)].tolist()),
                          dtype=np.float64).reshape(len(dt), len(gt))
        if not np.array_equal(o.T, want):
            return False
        areas = np.zeros(len(records), dtype=np.uint32)
        c.rleArea(_pointer(records), len(records), _pointer(areas))
        if areas.tolist() != np.asarray(cython.area(encoded)).tolist():
            return False
        boxes = np.zeros((len(records), 4), dtype=np.float64)
        c.rleToBbox(_pointer(records), _pointer(boxes), len(records))
        if not np.array_equal(boxes, np.asarray(cython.toBbox(encoded), dtype=np.float64)):
            return False
        xy = np.array([1.5, 0.5, 7.2, 2.0, 4.0, 8.7, 0.2, 5.1], dtype=np.float64)
        poly = np.zeros(1, dtype=RLE_DTYPE)
        c.rleFrPoly(_pointer(poly), _pointer(xy), 4, 9, 7)
        merged = np.zeros(1, dtype=RLE_DTYPE)
        pair = np.concatenate([poly, records[1:2]])
        c.rleMerge(_pointer(pair), _pointer(merged), 2, 0)
        texts = []
        for record in (poly, merged):
            p = c.rleToString(_pointer(record))
            texts.append(ctypes.string_at(p))
            c.free(p)
        c.rleFree(_pointer(poly))
        c.rleFree(_pointer(merged))
        want_poly = cython.frPoly([xy], 9, 7)[0]
        want_merged = cython.merge([want_poly, encoded[1]], 0)
        return texts == [want_poly["counts"], want_merged["counts"]]
    finally:
        for i in held:
            c.rleFree(_pointer(records[i:i + 1]))


class HeldRoutines(NamedTuple):
    """Short routines called with the GIL held (loaded through :class:`ctypes.PyDLL`).

    A ctypes call that releases the GIL must take it back when the C function returns; a
    thread that holds it meanwhile keeps it until it lets it go (a numpy operation) or
    until the switch interval asks it to (5 ms). For a call of a microsecond or less that
    hand-over costs more than it frees (docs/mask-rasteriser.md §3.1).
    """

    rlesInit: Any       # (RLE **R, siz n): n empty structs, malloc'ed
    rlesFree: Any       # (RLE **R, siz n): their runs and the structs freed
    rleToString: Any    # char* (const RLE *R)
    free: Any           # libc's free


def held_routines() -> HeldRoutines | None:
    """:class:`HeldRoutines`, or None where :func:`c_routines` is None or these cannot be
    loaded (callers then use the Cython wrappers)."""
    if c_routines() is None:
        return None
    return _load_held()


@functools.lru_cache(maxsize=1)
def _load_held() -> HeldRoutines | None:
    from pycocotools import _mask

    try:
        lib = ctypes.PyDLL(_mask.__file__)
        libc = ctypes.PyDLL(None)
        functions = {name: getattr(lib, name) for name in ("rlesInit", "rlesFree",
                                                           "rleToString")}
        free = libc.free
    except (OSError, AttributeError):
        return None     # (the callers use the Cython wrappers)
    ptr, siz = ctypes.c_void_p, ctypes.c_ulong
    for name, args in {"rlesInit": [ptr, siz], "rlesFree": [ptr, siz],
                       "rleToString": [ptr]}.items():
        functions[name].argtypes = args
        functions[name].restype = ctypes.c_void_p if name == "rleToString" else None
    free.argtypes, free.restype = [ptr], None
    return HeldRoutines(free=free, **functions)
