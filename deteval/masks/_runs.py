"""Masks' run lengths as pycocotools' ``rleFrString`` gives them, parsed in bulk.

pycocotools' ``iou`` parses every mask's compressed string with ``rleFrString`` (one C call
per mask, the GIL held by the Cython wrapper), then compares the run lengths. Here the
strings of many masks are parsed by **one** call of that same C function, through
:mod:`ctypes` (without the GIL), on the strings back to back, and the run lengths of each
mask are then recovered exactly with a few numpy operations; the masks' RLE structs
(:data:`~deteval.masks._capi.RLE_DTYPE`) point into the result, ready for ``rleIou`` and
``rleToBbox``.

Why one call on the joined strings gives each string's own runs: ``rleFrString`` reads
numbers one after another, each number's value depending only on its own characters (a
number ends at a character without the continuation bit, ``(c - 48) & 0x20``), and stores
``cnts[m] = (uint)(x + cnts[m - 2])`` for ``m > 2`` (``cnts[m] = (uint)x`` before). Run
``k`` of a string is therefore, modulo 2**32, the sum of the numbers ``k, k - 2, ...``
down to index 0 or 1 (index 2 adds nothing below it: it is stored as is). Parsed joined,
the numbers of string ``s`` (its first run at index ``o``) each add, on top of that sum,
the value the chain held just before the string: ``cnts[o - 2]`` for the string's run 0,
``cnts[o - 1]`` for its odd runs, ``cnts[o]`` for its even runs from 2 (0 where the
index is below 3, where nothing is added). Subtracting those (uint32 arithmetic, modulo
2**32 as the C casts) gives each run exactly as a call on the string alone stores it.

That holds when every string is read, alone and joined, as the same numbers: no string
may hold a NUL byte (the C loop stops there) and every non-empty string must end a number
(else the number would run into the next string). Strings of other bytes than pycocotools'
alphabet ``'0'..'o'`` (where "ends a number" is ``byte < 80``) are not parsed here either:
:func:`parse_joined` returns None for all of these, and the callers use the Cython wrappers.
"""

from __future__ import annotations

import ctypes
import itertools
import operator
from typing import Any

import numpy as np

from .._sorting import sorted_unique
from ._capi import RLE_DTYPE, CRoutines
from .rle import _parity_segments

__all__ = ["MaskRuns", "mask_runs", "mask_strings", "parse_joined", "piece_records"]

_PIECE_CHARS = 250_000  # characters parsed per call (the pieces run on several threads)


def parse_joined(c: CRoutines, text: bytes,
                 lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The run lengths of strings held back to back, by one ``rleFrString`` call.

    Parameters
    ----------
    c : CRoutines
        :func:`~deteval.masks._capi.c_routines`.
    text : bytes
        The strings one after another, nothing between them.
    lengths : ndarray of int64, shape (n,)
        Bytes of each string.

    Returns
    -------
    runs : ndarray of uint32, shape (total,)
        Every string's runs, string after string, each equal to what ``rleFrString`` stores
        for that string alone (module notes).
    counts : ndarray of int64, shape (n,)
        How many runs each string has.

    None when a string holds a byte outside ``'0'..'o'`` or does not end a number.

    Examples
    --------
    >>> from deteval.masks._capi import c_routines
    >>> c = c_routines()
    >>> runs, counts = parse_joined(c, b"52" b"0::0", np.array([2, 4]))
    >>> runs.tolist(), counts.tolist()
    ([5, 2, 0, 10, 10, 10], [2, 4])
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    raw = np.frombuffer(text, dtype=np.uint8)
    if len(raw) != int(lengths.sum()):
        raise ValueError("lengths must add up to the text's length")
    if len(raw) == 0:
        return np.zeros(0, dtype=np.uint32), np.zeros(len(lengths), dtype=np.int64)
    if raw.min() < 48 or raw.max() > 111:
        return None
    ends = np.cumsum(lengths)
    filled = lengths > 0
    if (raw.take(ends[filled] - 1) >= 80).any():
        return None                              # a string that does not end a number
    continued = np.flatnonzero(raw >= 80)        # characters that do not end a number
    counts = lengths - np.diff(np.searchsorted(continued, ends), prepend=0)
    runs = _parse(c, text, counts)
    return None if runs is None else (runs, counts)


def _parse(c: CRoutines, text: bytes, counts: np.ndarray) -> np.ndarray | None:
    """``rleFrString`` of the whole text, each string's runs then recovered
    (:func:`_separated`) out of the C memory into a new uint32 array; None when the C
    parse did not find ``counts.sum()`` numbers (it always does on text
    :func:`parse_joined` let through)."""
    record = np.zeros(1, dtype=RLE_DTYPE)
    c.rleFrString(record.ctypes.data, text, 0, 0)
    try:
        m = int(record["m"][0])
        if m != int(counts.sum()):
            return None
        if m == 0:
            return np.zeros(0, dtype=np.uint32)
        joined = np.frombuffer((ctypes.c_uint32 * m).from_address(int(record["cnts"][0])),
                               dtype=np.uint32)
        return _separated(joined, counts)
    finally:
        c.rleFree(record.ctypes.data)


def _separated(joined: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The runs of strings parsed joined made each string's own (module notes), as a new
    array: per string, the value its chains held before it is subtracted (uint32, modulo
    2**32 as the C's casts)."""
    first = np.cumsum(counts) - counts           # each string's first run
    last = len(joined) - 1                       # (indices clipped: for empty strings only)
    before_0 = joined.take(np.clip(first - 2, 0, last))     # added to run 0
    before_odd = joined.take(np.clip(first - 1, 0, last))   # to runs 1, 3, ...
    before_even = joined.take(np.minimum(first, last))      # to runs 2, 4, ...
    before_0[first < 3] = 0                      # (the C adds nothing below index 3)
    before_odd[first < 2] = 0
    before_even[first < 1] = 0
    odd_first = (first & 1).astype(bool)
    out = np.empty_like(joined)
    for parity, _, seg_len in _parity_segments(np.r_[0, np.cumsum(counts)]):
        # A run's index within its string is odd where its parity differs from the first's.
        added = np.where(odd_first != bool(parity), before_odd, before_even)
        out[parity::2] = np.subtract(joined[parity::2], np.repeat(added, seg_len))
    filled = np.flatnonzero(counts > 0)
    at = first[filled]
    out[at] = joined.take(at) - before_0[filled]
    return out


def piece_records(runs: np.ndarray, counts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """RLE structs of masks whose runs :func:`parse_joined` gave: ``runs``, ``counts`` per
    mask, ``sizes`` their ``[h, w]`` (n, 2). The structs point into ``runs``: keep it."""
    if not len(runs):
        runs = _EMPTY             # (an address for masks without runs; never read)
    records = np.empty(len(counts), dtype=RLE_DTYPE)
    records["h"] = sizes[:, 0]
    records["w"] = sizes[:, 1]
    records["m"] = counts
    records["cnts"] = runs.ctypes.data + 4 * (np.cumsum(counts) - counts)
    return records


_EMPTY = np.zeros(1, dtype=np.uint32)


class MaskRuns:
    """Run lengths of n masks, as RLE structs pointing into arrays held here.

    Parameters
    ----------
    records : ndarray of :data:`~deteval.masks._capi.RLE_DTYPE`, shape (n,)
    keep : list of ndarray
        The arrays the structs point into (kept alive with them).
    xywh : ndarray of float64, shape (n, 4), optional
        The masks' boxes (pycocotools' ``toBbox``), when computed with the runs.
    """

    __slots__ = ("keep", "records", "xywh")

    def __init__(self, records: np.ndarray, keep: list, xywh: np.ndarray | None = None):
        self.records, self.keep, self.xywh = records, keep, xywh

    def __len__(self) -> int:
        return len(self.records)


def _boxes(c: CRoutines, records: np.ndarray) -> np.ndarray:
    """pycocotools' ``toBbox`` of RLE structs (``rleToBbox``), ``[x, y, w, h]``, (n, 4)."""
    out = np.zeros((len(records), 4), dtype=np.float64)
    if len(out):
        c.rleToBbox(records.ctypes.data, out.ctypes.data, len(out))
    return out


def _pieces(lengths: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive strings of about :data:`_PIECE_CHARS` characters each: ``(lo, hi)``."""
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if len(ends) else 0
    cuts = np.searchsorted(ends, np.arange(_PIECE_CHARS, total, _PIECE_CHARS))
    bounds = sorted_unique(np.r_[0, cuts, len(lengths)])     # (np.unique imports numpy.ma)
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def mask_runs(c: CRoutines, strings: list[Any], sizes: np.ndarray, *,
              threads: int = 1, boxes: bool = False) -> MaskRuns | None:
    """The runs of masks given by their compressed strings and sizes, or None where they
    cannot be parsed here (a string not ``bytes``, or one :func:`parse_joined` refuses; a
    size outside ``[0, 2**63)``): the caller then uses the Cython wrappers.

    Parameters
    ----------
    c : CRoutines
    strings : list of bytes
        Each mask's ``counts``.
    sizes : ndarray of int64, shape (n, 2)
        Each mask's ``[h, w]``.
    threads : int
        Threads parsing pieces of the strings (the runs do not depend on it).
    boxes : bool
        Also the masks' boxes (``rleToBbox``, pycocotools' ``toBbox``), piece by piece:
        :attr:`MaskRuns.xywh`.

    Examples
    --------
    >>> from deteval.masks._capi import c_routines
    >>> runs = mask_runs(c_routines(), [b"52", b"0::0"], np.array([[7, 1], [6, 5]]),
    ...                  boxes=True)
    >>> runs.records["m"].tolist(), runs.xywh.tolist()
    ([2, 4], [[0.0, 5.0, 1.0, 2.0], [0.0, 0.0, 5.0, 6.0]])
    """
    from .._threads import thread_map

    sizes = np.asarray(sizes).reshape(-1, 2)
    n = len(strings)
    if sizes.dtype.kind not in "iu" or len(sizes) != n or (n and sizes.min() < 0):
        return None
    try:
        lengths = np.fromiter(map(len, strings), np.int64, n)
        if not set(map(type, strings)) <= {bytes}:
            return None
    except TypeError:
        return None

    def piece(span: tuple[int, int]):
        lo, hi = span
        parsed = parse_joined(c, b"".join(strings[lo:hi]), lengths[lo:hi])
        if parsed is None:
            return None
        records = piece_records(*parsed, sizes[lo:hi])
        return parsed[0], records, _boxes(c, records) if boxes else None

    done = thread_map(piece, _pieces(lengths), threads)
    if any(p is None for p in done):
        return None
    if not done:
        return MaskRuns(np.zeros(0, RLE_DTYPE), [], np.zeros((0, 4)) if boxes else None)
    runs, records, xywh = zip(*done)
    return MaskRuns(np.concatenate(records), list(runs),
                    np.concatenate(xywh) if boxes else None)


def mask_strings(masks: np.ndarray) -> tuple[list[bytes], np.ndarray] | None:
    """The ``counts`` (as ``bytes``) and ``[h, w]`` (int64, (n, 2)) of compressed RLE dicts,
    or None unless pycocotools would read each as such a string and two ``int``: a
    ``str`` is encoded as pycocotools encodes it (UTF-8), and anything else (a missing
    key, a size of other than two ints, a string of another type) is left to it."""
    dicts = masks.tolist()
    try:
        strings = list(map(operator.itemgetter("counts"), dicts))
        sizes = list(map(operator.itemgetter("size"), dicts))
        types = set(map(type, strings))
        if types == {str}:
            strings = list(map(str.encode, strings))
        elif not types <= {bytes}:
            return None
        if set(map(len, sizes)) - {2}:
            return None
        flat = list(itertools.chain.from_iterable(sizes))
        if not set(map(type, flat)) <= {int}:
            return None
        return strings, np.array(flat, dtype=np.int64).reshape(-1, 2)
    except (TypeError, KeyError, IndexError, UnicodeError, OverflowError):
        return None
