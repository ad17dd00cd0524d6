"""Compressed RLE strings: decoding, checking, and the areas and boxes of their runs.

pycocotools' compressed ``counts`` strings use a 6-bit, delta-coded alphabet ``'0'..'o'``.
pycocotools reads malformed strings without complaint and returns numbers from beyond the end
of the mask; here every string is decoded, vectorised over all masks at once, and refused
(a :class:`~deteval.errors.FormatError` naming the file and record) when it has a character
outside the alphabet, ends inside a number, holds a number of more than 7 characters, or has
runs that do not add up to ``h * w``. The areas and boxes come from the runs decoded, equal to
pycocotools' ``area`` and ``toBbox`` (docs/protocols/coco.md §5.3).

Examples
--------
>>> compressed_areas(["52", "0::0"], [[7, 1], [6, 5]]).tolist()
[2, 20]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._sorting import sorted_unique
from ..errors import FormatError

__all__ = ["JoinedCounts", "check_run_totals", "compressed_areas", "compressed_masks",
           "decode_counts", "decode_joined", "mark_run_totals_checked"]

_MAX_DIGITS = 7  # 35 bits: more than any run of a mask below 2**32 pixels needs



def _record(records: Sequence[str] | None, i: int) -> str:
    return records[i] if records is not None else f"mask {i}"


def decode_counts(strings: Sequence[bytes] | Sequence[str], *, source: str | None = None,
                  records: Sequence[str] | None = None,
                  lengths: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Decode compressed RLE strings, all at once.

    Parameters
    ----------
    strings : sequence of bytes, or sequence of str
        The ``counts`` strings (pycocotools' 6-bit, delta-coded alphabet ``'0'..'o'``), all
        of one type.
    source, records : optional
        Named in errors: the file, and a label per string (default ``"mask i"``).
    lengths : ndarray of int, shape (len(strings),), optional
        ``len`` of each string, when the caller has it already.

    Returns
    -------
    counts : ndarray of int64, shape (total,)
        The run lengths of every string, concatenated (values as pycocotools stores them:
        uint32).
    offsets : ndarray of int64, shape (len(strings) + 1,)
        ``counts[offsets[i]:offsets[i + 1]]`` are the runs of string ``i``.

    Raises
    ------
    FormatError
        A character outside ``'0'..'o'``, a string that ends inside a number, or a number of
        more than 7 characters.

    Examples
    --------
    >>> counts, offsets = decode_counts([b"0::0", b"52"])
    >>> counts.tolist(), offsets.tolist()
    ([0, 10, 10, 10, 5, 2], [0, 4, 6])
    """
    # Callers decode in chunks (see _totals_and_areas): int64 running sums stay far from
    # overflow.
    n = len(strings)
    if lengths is None:
        lengths = np.fromiter(map(len, strings), np.int64, n)
    string_ends = np.cumsum(lengths)
    if n and isinstance(strings[0], str):
        text = "".join(strings)
        if not text.isascii():                     # each character one byte below
            at = next(i for i, c in enumerate(text) if ord(c) > 127)
            raise FormatError("compressed RLE 'counts' has a character outside '0'..'o' "
                              "(a non-ASCII character); is it a compressed RLE string?",
                              source=source, record=_record(
                                  records, int(np.searchsorted(string_ends, at, side="right"))))
        joined = ("0" + text).encode("ascii")
    else:
        joined = b"".join([b"0", *strings])
    return decode_joined(joined, lengths, source=source, records=records,
                         string_ends=string_ends)


def decode_joined(joined: Any, lengths: np.ndarray, *, source: str | None = None,
                  records: Sequence[str] | None = None,
                  string_ends: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decode_counts` of strings given as one text: ``joined`` (bytes, or a
    contiguous uint8 array) is a ``"0"`` followed by the strings' bytes, one after the
    other, string ``i`` holding ``lengths[i]`` of them (the segm results reader's unescaped
    text, :mod:`deteval.io._numeric_segm`). Returns and raises as :func:`decode_counts`,
    which joins its strings and calls this: one decoder.

    >>> counts, offsets = decode_joined(b"00::052", np.array([4, 2]))
    >>> counts.tolist(), offsets.tolist()
    ([0, 10, 10, 10, 5, 2], [0, 4, 6])
    """
    n = len(lengths)
    if string_ends is None:
        string_ends = np.cumsum(lengths)
    # The text starts with a "0" of no string's (a number's end, as a string's last character
    # is): the byte pair ending at character ``i`` of the strings is then at ``i``, for the
    # first character too (read as one without a continuation before it).

    def owner(char_index: int) -> str:
        return _record(records, int(np.searchsorted(string_ends, char_index, side="right")))

    raw = np.frombuffer(joined, dtype=np.uint8, offset=1)
    if len(raw) == 0:                                # only empty strings: no runs at all
        return np.zeros(0, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
    if raw.min() < 48 or raw.max() > 111:
        bad = np.flatnonzero((raw < 48) | (raw > 111))
        byte = int(raw[bad[0]])
        shown = repr(chr(byte)) if byte < 128 else "a non-ASCII character"
        raise FormatError(f"compressed RLE 'counts' has a character outside '0'..'o' "
                          f"({shown}); is it a compressed RLE string?",
                          source=source, record=owner(bad[0]))
    # A character is 48 + 6 bits: bit 5 says "more characters follow", bits 0-4 are the
    # next 5 bits of the number, least significant first; bit 4 of the last one is the sign.
    last = raw < 80                                  # no continuation bit: a number ends
    truncated = np.flatnonzero((lengths > 0) & ~last[np.maximum(string_ends - 1, 0)])
    if len(truncated):
        raise FormatError("compressed RLE 'counts' ends in the middle of a number (truncated "
                          "string?)", source=source, record=_record(records, int(truncated[0])))
    number_ends = np.flatnonzero(last)
    offsets = np.zeros(n + 1, dtype=np.int64)
    offsets[1:] = np.searchsorted(number_ends, string_ends)
    m = len(number_ends)
    if m == 0:
        return np.zeros(0, dtype=np.int64), offsets
    # Horner's rule from each number's last (most significant, signed) character down: the
    # last character's 5 bits as a signed value, then * 32 plus each earlier character's 5
    # bits while the character before is a continuation. The last two characters (most
    # numbers have one or two) are read at once from a table of every byte pair; longer
    # numbers continue below. (The first character overall cannot be preceded by a
    # continuation.) The pairs are read as overlapping big-endian 16-bit numbers of the text
    # with its leading "0".
    pairs = np.ndarray((len(raw),), dtype=">u2", buffer=joined, strides=(1,))
    value = _PAIR_VALUES.take(pairs.take(number_ends))
    # Numbers never cross strings (each string ends one), so a number's length is the
    # distance between its end and the previous number's end (the first's: its end + 1).
    longer = np.flatnonzero(number_ends[1:] - number_ends[:-1] >= 3)
    longer += 1
    if number_ends[0] >= 2:
        longer = np.r_[0, longer]
    at = number_ends[longer] - 2
    j = 2
    while len(longer):
        if j >= _MAX_DIGITS:
            raise FormatError(f"compressed RLE 'counts' holds a number of more than "
                              f"{_MAX_DIGITS} characters", source=source, record=owner(at[0]))
        value[longer] = value[longer] * 32 + (raw.take(at) - np.uint8(80))
        if j == _MAX_DIGITS - 1:
            seven = longer                           # numbers of 7 characters, if any
        at -= 1
        more = ~last[at]
        longer, at = longer[more], at[more]
        j += 1
    if j == _MAX_DIGITS:
        # pycocotools sign-extends with `-1 << 5 * k` on a C int: for k == 7 the shift is
        # taken modulo 32 (x86), so a negative 7-character number keeps its low 3 bits
        # only, (x & 7) - 8. Read it the same way, so that the masks are the reference's
        # (such strings then rarely add up, and are refused below).
        negative = seven[value[seven] < 0]
        value[negative] = (value[negative] & 7) - 8
    # Index i >= 3 adds the stored number at i - 2: a running sum along each parity chain
    # of a string (odd indices from 1; even ones from 0, index 2 restarting it). In each of
    # the two global parity sequences, every string holds one contiguous segment (one of
    # its chains), so one cumulative sum per sequence does all strings, once each segment's
    # first element has the previous segment's total subtracted.
    starts = offsets[:-1]
    per_string = np.diff(offsets)
    restart = starts[per_string >= 3]
    value[restart + 2] -= value[restart]             # index 2 is stored as is
    for parity, seg_start, seg_len in _parity_segments(offsets):
        seq = value[parity::2].copy()   # contiguous: numpy sums a strided view far slower
        first = seg_start[seg_len > 0]
        if len(first) > 1:
            seq[first[1:]] -= np.add.reduceat(seq, first)[:-1]
        value[parity::2] = np.cumsum(seq, out=seq)
    counts = value
    # pycocotools stores each run as a uint32; a run outside [0, 2**32) is malformed (read
    # as uint64, a negative run is 2**63 or more: one pass finds both).
    if counts.view(np.uint64).max() >= 2**32:
        bad = np.flatnonzero((counts < 0) | (counts >= 2**32))
        k = int(np.searchsorted(offsets, bad[0], side="right")) - 1
        raise FormatError(f"compressed RLE 'counts' decodes to a run length of "
                          f"{int(counts[bad[0]])} (run {int(bad[0] - offsets[k])}); run "
                          "lengths are 0 to 2**32 - 1", source=source,
                          record=_record(records, k))
    return counts, offsets


def _pair_values() -> np.ndarray:
    """The value of a number ending at byte ``b`` preceded by byte ``a``, at ``a * 256 + b``:
    ``b``'s 5 bits as a signed value (bit 4 the sign), times 32 plus ``a``'s 5 bits when
    ``a`` is a continuation character (``>= 80``). Only '0'..'o' bytes are ever looked up."""
    a, b = np.divmod(np.arange(1 << 16), 256)
    low = (b - 48) & 31
    signed = np.where(low >= 16, low - 32, low)
    return np.where(a >= 80, signed * 32 + ((a - 80) & 31), signed).astype(np.int64)


_PAIR_VALUES = _pair_values()


def _parity_segments(offsets: np.ndarray):
    """Per global parity: where each string's elements of that parity start, and how many.

    Yields ``(parity, start, length)``, ``start`` and ``length`` of shape (n_strings,),
    ``start`` an index into ``array[parity::2]``.
    """
    starts, ends = offsets[:-1], offsets[1:]
    even_start = (starts + 1) // 2
    odd_start = starts // 2
    yield 0, even_start, (ends + 1) // 2 - even_start
    yield 1, odd_start, ends // 2 - odd_start


_CHUNK = 120_000  # characters decoded at a time: bounded memory, cache-friendly arrays


class JoinedCounts:
    """Compressed strings held as one text, for :func:`compressed_areas` (which then decodes
    them without a Python object per string): ``text`` (uint8, ``(sum(lengths),)``) holds
    the strings back to back, string ``i`` ``lengths[i]`` bytes of it. The segm results
    reader's form (:mod:`deteval.io._numeric_segm`): its strings' bytes copied once out of
    the file's text, escapes undone.

    >>> strings = JoinedCounts(np.frombuffer(b"520::0", np.uint8), np.array([2, 4]))
    >>> compressed_areas(strings, [[7, 1], [6, 5]]).tolist()
    [2, 20]
    >>> strings.string(1)
    b'0::0'
    """

    def __init__(self, text: np.ndarray, lengths: np.ndarray):
        self.text, self.lengths = text, np.asarray(lengths, dtype=np.int64)
        self.ends = np.cumsum(self.lengths)

    def __len__(self) -> int:
        return len(self.lengths)

    def joined(self, lo: int, hi: int) -> np.ndarray:
        """Strings ``lo:hi`` after a ``"0"``, as :func:`decode_joined` takes them."""
        begin = int(self.ends[lo - 1]) if lo else 0
        end = int(self.ends[hi - 1]) if hi > lo else begin
        out = np.empty(end - begin + 1, dtype=np.uint8)
        out[0] = 48
        out[1:] = self.text[begin:end]
        return out

    def string(self, i: int) -> bytes:
        """String ``i``, as bytes."""
        return self.text[int(self.ends[i] - self.lengths[i]):int(self.ends[i])].tobytes()


class _Labels:
    """Record labels made only when an error needs one."""

    def __init__(self, make: Callable[[int], str], offset: int = 0):
        self.make, self.offset = make, offset

    def __getitem__(self, i: int) -> str:
        return self.make(self.offset + i)


def _run_sums(counts: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per string: the sum of all runs and of the odd (foreground) runs."""
    n = len(offsets) - 1
    sums = []
    for parity, seg_start, seg_len in _parity_segments(offsets):
        total = np.zeros(n, dtype=np.int64)
        filled = seg_len > 0
        if filled.any():
            total[filled] = np.add.reduceat(counts[parity::2], seg_start[filled])
        sums.append(total)
    # A string's odd (local) runs sit at the global parity opposite to its first element's.
    odd_local = np.where(offsets[:-1] % 2 == 0, sums[1], sums[0])
    return sums[0] + sums[1], odd_local


def _run_boxes(counts: np.ndarray, offsets: np.ndarray, heights: np.ndarray,
               widths: np.ndarray) -> np.ndarray:
    """pycocotools' ``toBbox`` of decoded strings: ``[x, y, w, h]`` per string, (n, 4).

    As pycocotools 2.0.11: the (background, foreground) run pairs are read, a trailing
    background run is not; a pair whose foreground run is empty is skipped; a string with
    no pair gives zeros, one with pairs but no foreground pixel gives the routine's
    unsigned leftovers ``[w, h, 2**32 + 1 - w, 2**32 + 1 - h]`` (modulo 2**32). A run
    crossing from one column into the next makes the box the mask's full height.

    The pairs are the runs without each string's trailing background run (one boolean
    copy); each pair's values are computed in place where they can be, int64 until the
    running sum is taken, and every per-pair array is freed once read (docs/segm-cost.md
    §2.1, §2.3).

    Examples
    --------
    >>> counts, offsets = decode_counts([b"52", b"0::0", b"", b"16"])
    >>> _run_boxes(counts, offsets, np.array([7, 6, 1, 1]), np.array([1, 5, 0, 7])).tolist()
    [[0.0, 5.0, 1.0, 2.0], [0.0, 0.0, 5.0, 6.0], [0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 6.0, 1.0]]
    """
    n = len(offsets) - 1
    runs = np.diff(offsets)
    pairs = runs // 2
    has = pairs > 0
    every = bool(has.all())
    if not every:
        out = np.zeros((n, 4), dtype=np.float64)
        if not has.any():
            return out
        pairs, heights, widths = pairs[has], heights[has], widths[has]
    # The pairs' runs are every run but a string's trailing background run (odd counts):
    # one boolean copy rather than an index array and two gathers.
    trailing = offsets[1:][(runs & 1).astype(bool)] - 1
    if len(trailing):
        kept = np.ones(len(counts), dtype=bool)
        kept[trailing] = False
        paired = counts[kept].reshape(-1, 2)
    else:
        paired = counts.reshape(-1, 2)
    fg = paired[:, 1].copy()                         # (contiguous: strided int64 ops cost more)
    last = np.cumsum(pairs)
    begin = last - pairs                             # each string's first pair
    last -= 1                                        # and its last one
    end = np.add(paired[:, 0], fg)
    del paired
    if len(begin) > 1:                               # restart the running sum per string
        end[begin[1:]] -= np.add.reduceat(end, begin)[:-1]
    np.cumsum(end, out=end)                          # one past each foreground run
    # (int64 above: its running sum is several times float64's; one cast of each below)
    start = (end - fg).astype(np.float64)
    valid = bool(fg.all())
    fg = fg.astype(np.float64)
    if valid:
        low = start.take(begin)                      # first pixel of the first run
        high = end.take(last).astype(np.float64)     # one past the last run
    else:                                            # empty foreground runs are skipped
        empty_run = fg == 0
        low = np.minimum.reduceat(np.where(empty_run, np.inf, start), begin)
        high = np.maximum.reduceat(np.where(empty_run, -np.inf, end), begin)
    del end
    h = np.maximum(heights.astype(np.float64), 1.0)
    per_pair = h[0] if (h == h[0]).all() else np.repeat(h, pairs)   # (one height: a scalar)
    # Exact integer column and row: (p + 0.5) / h is >= 0.5 / h away from an integer, far
    # more than the rounding error for any p < 2**49. row = start - column * h.
    column_start = start + 0.5
    column_start /= per_pair
    np.floor(column_start, out=column_start)
    column_start *= per_pair
    del per_pair
    row = np.subtract(start, column_start, out=start)
    del column_start
    if not valid:
        row[empty_run] = np.inf
    top = np.minimum.reduceat(row, begin)
    below = np.add(row, fg, out=row)                 # one past the run's last row
    if not valid:
        below[empty_run] = -np.inf
    bottom = np.maximum.reduceat(below, begin)
    del below
    spans = bottom > h                               # a run continues into the next column
    if spans.any():
        top[spans] = 0.0
        bottom[spans] = h[spans]
    box = np.empty((len(h), 4), dtype=np.float64)
    with np.errstate(invalid="ignore"):
        low += 0.5
        low /= h
        np.floor(low, out=box[:, 0])
        high -= 0.5
        high /= h
        np.floor(high, out=high)                     # column of the last pixel
    high += 1.0
    np.subtract(high, box[:, 0], out=box[:, 2])
    box[:, 1] = top
    np.subtract(bottom, top, out=box[:, 3])
    if not valid:
        empty = np.isinf(top)                        # no foreground pixel at all
        if empty.any():
            w_e = widths[empty].astype(np.int64)
            h_e = heights[empty].astype(np.int64)
            box[empty] = np.column_stack([w_e, h_e, (1 - w_e) % 2**32, (1 - h_e) % 2**32])
    if every:
        return box
    out[has] = box
    return out


_MAX_PIXELS = 2**32  # pycocotools counts pixels, rows and columns in 32-bit unsigned ints
_BOUNDED_PIXELS = 2**31  # larger masks: rleIou's 32-bit loop test can wrap (mask_iou_bound)


def _check_sizes(heights: np.ndarray, widths: np.ndarray, source: str | None,
                 labels: Callable[[int], str]) -> None:
    """Refuse masks of 2**32 pixels or more (see :data:`_MAX_PIXELS`)."""
    pixels = heights.astype(np.float64) * widths.astype(np.float64)   # exact where it matters
    bad = np.flatnonzero((pixels >= _MAX_PIXELS) | (heights >= _MAX_PIXELS)
                         | (widths >= _MAX_PIXELS))
    if len(bad):
        i = int(bad[0])
        raise FormatError(_too_large(int(heights[i]), int(widths[i])), source=source,
                          record=labels(i))


def _too_large(h: int, w: int) -> str:
    return (f"mask size {h}x{w} (h x w) is too large: pycocotools counts pixels in 32-bit "
            "integers, so a mask must have fewer than 2**32 pixels (its results would wrap "
            "around or crash)")


def _too_many_for_bound(heights: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """Masks of more than 2**31 pixels, on which rleIou's loop test may wrap (bool, (n,))."""
    return (np.asarray(heights, np.float64) * np.asarray(widths, np.float64)
            > _BOUNDED_PIXELS)


def _totals_and_areas(strings: Sequence[str] | Sequence[bytes], heights: np.ndarray,
                      widths: np.ndarray, source: str | None, labels: Callable[[int], str],
                      boxes: bool = False, unbounded: bool = False,
                      threads: int | None = None, pool: Any = None,
                      chunk_chars: int | None = None) -> Any:
    """Check compressed strings chunk by chunk; returns each mask's pixel count.

    Every string must decode (see :func:`decode_counts`) to runs adding up to ``h * w``, and
    the mask must have fewer than 2**32 pixels. The area is the sum of the odd (foreground)
    runs, what pycocotools' ``area`` returns. With ``boxes``, also each mask's ``toBbox``
    box (see :func:`_run_boxes`); with ``unbounded``, also whether pycocotools' IoU routine
    may stop counting early on each mask (see :func:`mask_iou_bound`). The chunks are cut
    by characters alone and decoded on up to ``threads`` threads (None: every core; numpy
    runs them without the GIL), each writing its own rows: the same result for any number,
    and the same error (the first chunk's in order). Chunks of ``chunk_chars`` characters
    (a whole piece of the segm results reader: fewer, longer numpy calls, each a turn at
    the GIL while the ground truth is read beside it) give the same areas, boxes and flags;
    an error is the first of its chunk, so only :data:`_CHUNK` gives the reference's.
    """
    from .._threads import resolve_threads, thread_map

    _check_sizes(heights, widths, source, labels)
    areas = np.empty(len(strings), dtype=np.int64)
    xywh = np.zeros((len(strings), 4), dtype=np.float64) if boxes else None
    early = _too_many_for_bound(heights, widths) if unbounded else None
    # Chunks of about _CHUNK characters keep every array of a chunk in cache.
    joined = isinstance(strings, JoinedCounts)
    lengths = (strings.lengths if joined
               else np.fromiter(map(len, strings), np.int64, len(strings)))
    ends = np.cumsum(lengths)
    chunk_chars = _CHUNK if chunk_chars is None else chunk_chars
    cuts = np.searchsorted(ends, np.arange(chunk_chars, ends[-1] if len(ends) else 0,
                                           chunk_chars))
    bounds = sorted_unique(np.r_[0, cuts, len(strings)])

    def chunk(lo: int, hi: int) -> None:
        if joined:
            counts, offsets = decode_joined(strings.joined(lo, hi), lengths[lo:hi],
                                            source=source, records=_Labels(labels, lo))
        else:
            counts, offsets = decode_counts(strings[lo:hi], source=source,
                                            records=_Labels(labels, lo), lengths=lengths[lo:hi])
        totals, areas[lo:hi] = _run_sums(counts, offsets)
        expected = heights[lo:hi] * widths[lo:hi]
        bad = np.flatnonzero(totals != expected)
        if len(bad):
            i = int(bad[0])
            raise FormatError(f"RLE run lengths add up to {int(totals[i])} pixels; a "
                              f"{int(heights[lo + i])}x{int(widths[lo + i])} mask needs "
                              f"{int(expected[i])}", source=source, record=labels(lo + i))
        if boxes:
            xywh[lo:hi] = _run_boxes(counts, offsets, heights[lo:hi], widths[lo:hi])
        if unbounded:
            zero = np.flatnonzero(counts == 0)
            if len(zero):
                owner = np.searchsorted(offsets, zero, side="right") - 1
                early[lo + owner[zero != offsets[owner]]] = True   # not a first run

    spans = zip(bounds[:-1].tolist(), bounds[1:].tolist())
    if pool is not None:        # (the results thread of deteval._inputs.load_pair)
        pool.map(lambda span: chunk(*span), list(spans))
    else:
        thread_map(lambda span: chunk(*span), spans, resolve_threads(threads))
    out = (areas,) + ((xywh,) if boxes else ()) + ((early,) if unbounded else ())
    return out if len(out) > 1 else areas


def compressed_areas(strings: Sequence[str] | Sequence[bytes], sizes: np.ndarray, *,
                     source: str | None = None, labels: Callable[[int], str] | None = None,
                     boxes: bool = False, unbounded: bool = False,
                     threads: int | None = None, pool: Any = None,
                     chunk_chars: int | None = None) -> Any:
    """Check compressed RLE strings against their sizes; return their pixel counts.

    Parameters
    ----------
    strings : sequence of str, sequence of bytes, or JoinedCounts
        ``counts`` of each mask, all of one type (or held as one text:
        :class:`JoinedCounts`).
    sizes : ndarray of int, shape (n, 2)
        ``[h, w]`` of each mask.
    source, labels : optional
        Named in errors: the file, and a function from row to record label.
    boxes : bool
        Also return each mask's box ``[x, y, w, h]``, equal to pycocotools' ``toBbox``
        (computed from the runs already decoded rather than by a second parse in C).
    unbounded : bool
        Also return whether pycocotools' IoU routine may stop counting early on each mask:
        an empty run after the first, or more than 2**31 pixels (see
        :func:`mask_iou_bound`).
    threads : int, optional
        Threads decoding chunks of strings (None: every core); the result is the same for
        every value (docs/threads.md).
    pool : optional
        Runs the chunks instead of ``threads`` threads: an object whose ``map(fn, items)``
        returns ``[fn(item) for item in items]`` (:func:`deteval._inputs.load_pair`'s
        results thread); the result does not depend on it.
    chunk_chars : int, optional
        Characters decoded at once (default 120k: the reference's chunks). The areas, boxes
        and flags do not depend on it; which of several bad strings an error names does
        (the first of its chunk).

    Returns
    -------
    areas : ndarray of int64, shape (n,)
        Pixel counts (pycocotools' ``area``).
    xywh : ndarray of float64, shape (n, 4)
        Only with ``boxes``.
    unbounded : ndarray of bool, shape (n,)
        Only with ``unbounded``.

    Raises
    ------
    FormatError
        As :func:`decode_counts`; runs that do not add up to ``h * w``; a mask of 2**32
        pixels or more (pycocotools' counters are 32-bit).

    Examples
    --------
    >>> compressed_areas(["52", "0::0"], [[7, 1], [6, 5]]).tolist()
    [2, 20]
    >>> compressed_areas(["52", "0::0"], [[7, 1], [6, 5]], boxes=True)[1].tolist()
    [[0.0, 5.0, 1.0, 2.0], [0.0, 0.0, 5.0, 6.0]]
    """
    sizes = np.asarray(sizes, dtype=np.int64).reshape(-1, 2)
    labels = labels if labels is not None else (lambda i: f"mask {i}")
    return _totals_and_areas(strings, sizes[:, 0], sizes[:, 1], source, labels, boxes=boxes,
                             unbounded=unbounded, threads=threads, pool=pool,
                             chunk_chars=chunk_chars)


def compressed_masks(strings: Sequence[bytes], sizes: np.ndarray, *, source: str | None = None,
                     labels: Callable[[int], str] | None = None) -> tuple:
    """:func:`compressed_areas`, and the masks as dicts.

    Returns ``(masks, areas)``: an object array of ``{"size": [h, w], "counts": string}``
    (the strings as given) and the int64 pixel counts.

    Examples
    --------
    >>> masks, areas = compressed_masks([b"52", b"0::0"], [[7, 1], [6, 5]])
    >>> areas.tolist(), masks[0]
    ([2, 20], {'size': [7, 1], 'counts': b'52'})
    """
    sizes = np.asarray(sizes, dtype=np.int64).reshape(-1, 2)
    areas = compressed_areas(strings, sizes, source=source, labels=labels)
    masks = np.fromiter(({"size": size, "counts": string}
                         for size, string in zip(sizes.tolist(), strings)),
                        dtype=object, count=len(strings))
    return masks, areas


#: Set (True) on a :class:`~deteval.data.GroundTruth` or :class:`~deteval.data.Detections`
#: whose masks a reader checked with :func:`compressed_areas` (runs adding up to ``h * w``);
#: selections of its rows and copies with the same masks keep it (:mod:`deteval.data`).
RUN_TOTALS_CHECKED = "_run_totals_checked"


def mark_run_totals_checked(columns: Any) -> Any:
    """Record on ``columns`` (a row type just made by a reader) that its masks' run totals
    were checked, so :func:`check_run_totals` does not decode them again; returns it."""
    object.__setattr__(columns, RUN_TOTALS_CHECKED, True)
    return columns


def check_run_totals(columns: Any, what: str) -> None:
    """Refuse masks whose runs do not add up to their size's ``h * w`` (ValueError).

    pycocotools' ``rleIou`` walks the runs of two masks of one size together until the
    pixels run out, counted from the first mask's runs: where the two lists add up to
    different totals, one runs out first and the loop never ends (the evaluation hangs).
    The readers refuse such masks; masks given directly (``Detections(masks=...)``,
    ``GroundTruth(masks=...)``) are checked here, once, before any of them reaches the
    routine: all strings decoded at once (:func:`compressed_areas`), skipped for columns a
    reader has checked (:func:`mark_run_totals_checked`). Masks whose ``counts`` is not a
    string are left to pycocotools (which refuses them).

    Parameters
    ----------
    columns : GroundTruth or Detections
        Its ``masks`` (compressed RLE dicts) are checked, when it has them.
    what : str
        How errors name the column, e.g. ``"detections"`` (``"detections.masks[3]"``).

    Raises
    ------
    ValueError
        Naming the mask, its size and its run total (or what else is wrong with its string).

    Examples
    --------
    >>> from deteval.data import Detections
    >>> masks = [{"size": [2, 2], "counts": "04"}, {"size": [2, 2], "counts": "05"}]
    >>> dt = Detections(image_index=[0, 0], category_index=[0, 0], boxes=[[0, 0, 1, 1]] * 2,
    ...                 scores=[1, 1], masks=masks)
    >>> check_run_totals(dt, "detections")
    Traceback (most recent call last):
    ...
    ValueError: detections.masks[1]: RLE run lengths add up to 5 pixels; a 2x2 mask needs 4
    (pycocotools' mask IoU would never return on two masks of one size whose runs add up to
    different totals)
    """
    if getattr(columns, RUN_TOTALS_CHECKED, False):
        return      # (before the masks are read: a reader's may be made when first read)
    masks = getattr(columns, "masks", None)
    if masks is None or len(masks) == 0:
        return
    rows = [i for i, m in enumerate(masks.tolist()) if isinstance(m, dict)
            and isinstance(m.get("counts"), (str, bytes)) and "size" in m]
    if not rows:
        return
    chosen = masks[rows].tolist()
    strings = [m["counts"].encode("utf-8", "surrogatepass") if isinstance(m["counts"], str)
               else m["counts"] for m in chosen]
    try:
        sizes = np.array([m["size"] for m in chosen], dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return      # not sizes pycocotools takes: it refuses them itself
    if sizes.shape != (len(chosen), 2):
        return      # not each an (h, w) (one value, three...): pycocotools refuses them
    try:
        compressed_areas(strings, sizes, labels=lambda i: f"{what}.masks[{rows[i]}]")
    except FormatError as error:
        raise ValueError(f"{error.record}: {error.message} (pycocotools' mask IoU would "
                         "never return on two masks of one size whose runs add up to "
                         "different totals)") from None
