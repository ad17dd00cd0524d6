"""Polygons rasterised by pycocotools' C routines through :mod:`ctypes` (the GIL released
while they run), with each mask's pixel count and box measured before its runs are freed.

The masks are the bytes ``frPyObjects`` + ``merge`` give (``rleFrPoly`` for each part,
``rleMerge`` of an object's parts when it has more than one, ``rleToString``): the same C
functions, called on the same numbers. The rules and what was measured are in
``docs/mask-rasteriser.md``.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .._threads import thread_map
from ._capi import RLE_DTYPE, CRoutines, HeldRoutines

__all__ = ["CHUNK_OBJECTS", "MAX_THREADS", "rasterise_c"]

#: Objects rasterised with one array of RLE structs (a chunk, on one thread): their runs
#: are alive at once, then freed in one call. On the bench's polygons ~1.9 kB an object:
#: chunks of 4096 objects raised the segm evaluation's peak memory by 6.5 MB, of 512 by 0.3.
CHUNK_OBJECTS = 512

#: At most this many threads: a quarter of the work holds the GIL (the strings, the calls'
#: own Python), so more threads cannot make it faster, and every thread back from a C call
#: waits for the GIL among the others.
MAX_THREADS = 4

_RECORD = RLE_DTYPE.itemsize


def rasterise_c(coords: np.ndarray, part_starts: np.ndarray, part_points: np.ndarray,
                object_parts: np.ndarray, sizes: np.ndarray, c: CRoutines,
                held: HeldRoutines, threads: int = 1
                ) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """Compressed ``counts``, pixel counts and boxes of polygon objects.

    The objects are cut in chunks of :data:`CHUNK_OBJECTS`, rasterised on up to ``threads``
    threads (the C work of two of them runs at once); each chunk writes its own rows, so
    the result is the same for every ``threads``.

    Parameters
    ----------
    coords : ndarray of float64, C-contiguous, shape (m,)
        Every part's ``x1, y1, x2, y2, ...``, one part after another.
    part_starts, part_points : ndarray of int, shape (p,)
        Each part's first point in ``coords.reshape(-1, 2)`` and its number of points.
    object_parts : ndarray of int, shape (n,)
        Each object's number of parts (at least 1; its parts follow one another).
    sizes : ndarray of int, shape (n, 2)
        ``[h, w]`` of each object's image.
    c, held : the routines (:func:`~deteval.masks._capi.c_routines`,
        :func:`~deteval.masks._capi.held_routines`).
    threads : int
        Threads to rasterise on (at most :data:`MAX_THREADS`).

    Returns
    -------
    counts : list of bytes, length n
        ``rleToString`` of each object's mask.
    areas : ndarray of int64, shape (n,)
        ``rleArea`` (pycocotools' ``area``).
    xywh : ndarray of float64, shape (n, 4)
        ``rleToBbox`` (pycocotools' ``toBbox``).
    """
    n = len(object_parts)
    counts: list[bytes] = []
    areas = np.empty(n, dtype=np.uint32)
    xywh = np.empty((n, 4), dtype=np.float64)
    part_ends = np.cumsum(object_parts)

    def chunk(a: int) -> list[bytes]:
        b = min(a + CHUNK_OBJECTS, n)
        pa = int(part_ends[a - 1]) if a else 0
        pb = int(part_ends[b - 1])
        return _chunk(coords, part_starts[pa:pb], part_points[pa:pb], object_parts[a:b],
                      sizes[a:b], areas[a:b], xywh[a:b], c, held)

    for strings in thread_map(chunk, range(0, n, CHUNK_OBJECTS), min(threads, MAX_THREADS)):
        counts.extend(strings)
    return counts, areas.astype(np.int64), xywh


def _chunk(coords: np.ndarray, starts: np.ndarray, points: np.ndarray,
           object_parts: np.ndarray, sizes: np.ndarray, areas: np.ndarray,
           xywh: np.ndarray, c: CRoutines, held: HeldRoutines) -> list[bytes]:
    n, p = len(object_parts), len(starts)
    multi = object_parts > 1
    merged = int(np.count_nonzero(multi))
    total = p + merged
    # Slots 0..p-1: the parts' masks; p..: the merged masks of objects of several parts.
    holder = ctypes.c_void_p()
    held.rlesInit(ctypes.byref(holder), total)
    if not holder.value:
        raise MemoryError("rlesInit could not allocate the RLE structs")
    try:
        base = holder.value
        slots = base + _RECORD * np.arange(total, dtype=np.uint64)
        owner = np.repeat(np.arange(n), object_parts)
        part_hw = sizes[owner].astype(np.uint64)
        # rleFrPoly(R, xy, k, h, w) for every part (the GIL released in each call).
        list(map(c.rleFrPoly, slots[:p].tolist(),
                 (coords.ctypes.data + 16 * starts.astype(np.uint64)).tolist(),
                 points.tolist(), part_hw[:, 0].tolist(), part_hw[:, 1].tolist()))
        first = np.cumsum(object_parts) - object_parts
        final = first.astype(np.intp)
        if merged:
            list(map(c.rleMerge, slots[first[multi]].tolist(), slots[p:].tolist(),
                     object_parts[multi].tolist(), [0] * merged))
            final[multi] = np.arange(p, total)
        records = np.frombuffer((ctypes.c_char * (_RECORD * total)).from_address(base),
                                dtype=RLE_DTYPE)[final]     # (a copy: the structs only)
        c.rleArea(records.ctypes.data, n, areas.ctypes.data)
        c.rleToBbox(records.ctypes.data, xywh.ctypes.data, n)
        strings = list(map(held.rleToString, slots[final].tolist()))
        try:
            return list(map(ctypes.string_at, strings))
        finally:
            list(map(held.free, strings))
    finally:
        held.rlesFree(ctypes.byref(holder), total)
