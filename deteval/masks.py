"""Instance masks as COCO run-length encodings (RLE): conversion, checks, areas and IoU.

Masks are ``h x w`` bitmaps stored column-major and run-length encoded, as in pycocotools:
``counts`` lists alternating run lengths of 0s and 1s, starting with 0s. deteval keeps every
mask in *compressed* form, ``{"size": [h, w], "counts": bytes or str}``, the form
pycocotools' C routines take, and computes IoUs, areas and boxes with those routines, so
that the numbers are pycocotools' own (docs/protocols/coco.md §5.3).

What deteval adds is checking: a compressed string is decoded here, vectorised over all
masks at once, to refuse characters outside the alphabet, truncated numbers and runs that
do not add up to ``h * w`` (pycocotools reads such strings without complaint and returns
numbers from beyond the end of the mask), and polygons with an odd number of coordinates
(pycocotools drops the last number).

Examples
--------
>>> masks = masks_from_segmentations([[[0, 0, 10, 0, 10, 10, 0, 10]],
...                                   {"size": [20, 20], "counts": [0, 5, 395]}],
...                                  heights=[20, 20], widths=[20, 20])
>>> mask_area(masks).tolist()
[100, 5]
>>> mask_bounds(masks).tolist()
[[0.0, 0.0, 10.0, 10.0], [0.0, 0.0, 1.0, 5.0]]
>>> pair_mask_iou(masks, masks, np.array([0, 1]), np.array([1, 0]), np.zeros(2, bool),
...               image_of_dt=np.zeros(2, np.int64)).tolist()
[0.05, 0.05]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._polygon_masks import (
    check_polygon_extent,
    polygon_arrays,
    polygon_parts_of,
    rasterise,
)
from .errors import FormatError

__all__ = ["compressed_areas", "compressed_masks", "decode_counts", "mask_area",
           "mask_bound_area", "mask_bounds", "mask_iou_bound", "masks_from_segmentations",
           "pair_mask_iou"]

_MAX_DIGITS = 7  # 35 bits: more than any run of a mask below 2**32 pixels needs


def mask_api():
    from pycocotools import _mask  # the C routines; imported late to keep import light

    return _mask


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
        joined = text.encode("ascii")
    else:
        joined = b"".join(strings)

    def owner(char_index: int) -> str:
        return _record(records, int(np.searchsorted(string_ends, char_index, side="right")))

    raw = np.frombuffer(joined, dtype=np.uint8)
    if len(raw) == 0:                                # only empty strings: no runs at all
        return np.zeros(0, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
    if ((raw - np.uint8(48)) > 63).any():           # below '0' wraps around to >= 208
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
    # last character's 5 bits as a signed value (shifted into an int8's top bits and back),
    # then * 32 plus each earlier character's 5 bits while the character before is a
    # continuation. (The first character overall cannot be preceded by one: position -1
    # reads the final character, which ends a number.)
    top = np.frombuffer(joined, dtype=np.uint8).take(number_ends) - np.uint8(48)
    value = ((top << np.uint8(3)).view(np.int8) >> np.int8(3)).astype(np.int64)
    at = number_ends - 1
    longer = np.flatnonzero(~last[at])               # numbers of 2+ characters
    at = at[longer]
    j = 1
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
        seq = value[parity::2]
        first = seg_start[seg_len > 0]
        if len(first) > 1:
            seq[first[1:]] -= np.add.reduceat(seq, first)[:-1]
        np.cumsum(seq, out=seq)
    counts = value
    # pycocotools stores each run as a uint32; a run outside [0, 2**32) is malformed.
    if counts.min() < 0 or counts.max() >= 2**32:
        bad = np.flatnonzero((counts < 0) | (counts >= 2**32))
        k = int(np.searchsorted(offsets, bad[0], side="right")) - 1
        raise FormatError(f"compressed RLE 'counts' decodes to a run length of "
                          f"{int(counts[bad[0]])} (run {int(bad[0] - offsets[k])}); run "
                          "lengths are 0 to 2**32 - 1", source=source,
                          record=_record(records, k))
    return counts, offsets


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
    """
    n = len(offsets) - 1
    out = np.zeros((n, 4), dtype=np.float64)
    pairs = np.diff(offsets) // 2
    total = int(pairs.sum())
    if total == 0:
        return out
    first = np.cumsum(pairs) - pairs                 # each string's first pair
    fg_index = 2 * np.arange(total) + np.repeat(offsets[:-1] + 1 - 2 * first, pairs)
    fg = counts.take(fg_index)
    step = counts.take(fg_index - 1) + fg            # background then foreground
    has = pairs > 0
    begin = first[has]
    if len(begin) > 1:                               # restart the running sum per string
        step[begin[1:]] -= np.add.reduceat(step, begin)[:-1]
    end = np.cumsum(step)                            # one past each foreground run
    start = end - fg
    h = heights.astype(np.float64)
    inv = 1.0 / np.maximum(h, 1.0)
    h_run, inv_run = np.repeat(h, pairs), np.repeat(inv, pairs)
    # Exact integer column and row: (p + 0.5) / h is >= 0.5 / h away from an integer,
    # far more than the rounding error for any p < 2**49.
    column = np.floor((start + 0.5) * inv_run)
    row = start - column * h_run
    below = row + fg                                 # one past the run's last row
    valid = fg > 0
    if valid.all():
        low = start.take(begin)
        high = end.take(np.cumsum(pairs[has]) - 1)
        top = np.minimum.reduceat(row, begin)
        bottom = np.maximum.reduceat(below, begin)
        seen = np.ones(len(begin), dtype=bool)
    else:
        low = np.minimum.reduceat(np.where(valid, start, np.inf), begin)
        high = np.maximum.reduceat(np.where(valid, end, -np.inf), begin)
        top = np.minimum.reduceat(np.where(valid, row, np.inf), begin)
        bottom = np.maximum.reduceat(np.where(valid, below, -np.inf), begin)
        seen = np.isfinite(low)
    h_has = h[has]
    spans = bottom > h_has                           # a run continues into the next column
    top = np.where(spans, 0.0, top)
    bottom = np.where(spans, h_has, bottom)
    with np.errstate(invalid="ignore"):
        x0 = np.floor((low + 0.5) * inv[has])
        x1 = np.floor((high - 0.5) * inv[has])       # column of the last pixel
    box = np.column_stack([x0, top, x1 - x0 + 1, bottom - top])
    empty = ~seen
    if empty.any():
        w_has = widths[has].astype(np.int64)
        hh = heights[has].astype(np.int64)
        box[empty] = np.column_stack([w_has[empty], hh[empty], (1 - w_has[empty]) % 2**32,
                                      (1 - hh[empty]) % 2**32])
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
                      boxes: bool = False, unbounded: bool = False) -> Any:
    """Check compressed strings chunk by chunk; returns each mask's pixel count.

    Every string must decode (see :func:`decode_counts`) to runs adding up to ``h * w``, and
    the mask must have fewer than 2**32 pixels. The area is the sum of the odd (foreground)
    runs, what pycocotools' ``area`` returns. With ``boxes``, also each mask's ``toBbox``
    box (see :func:`_run_boxes`); with ``unbounded``, also whether pycocotools' IoU routine
    may stop counting early on each mask (see :func:`mask_iou_bound`).
    """
    _check_sizes(heights, widths, source, labels)
    areas = np.empty(len(strings), dtype=np.int64)
    xywh = np.zeros((len(strings), 4), dtype=np.float64) if boxes else None
    early = _too_many_for_bound(heights, widths) if unbounded else None
    # Chunks of about _CHUNK characters keep every array of a chunk in cache.
    lengths = np.fromiter(map(len, strings), np.int64, len(strings))
    ends = np.cumsum(lengths)
    cuts = np.searchsorted(ends, np.arange(_CHUNK, ends[-1] if len(ends) else 0, _CHUNK))
    bounds = np.unique(np.r_[0, cuts, len(strings)])
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
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
    out = (areas,) + ((xywh,) if boxes else ()) + ((early,) if unbounded else ())
    return out if len(out) > 1 else areas


def _size(value: Any, where: Callable[[], str], source: str | None) -> tuple[int, int]:
    if type(value) is list and len(value) == 2:
        h, w = value
        if type(h) is int and type(w) is int and 0 <= h < 65536 and 0 <= w < 65536:
            return h, w
    ok = (isinstance(value, (list, tuple)) and len(value) == 2
          and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
                  for v in value))
    if not ok:
        raise FormatError(f"RLE 'size' must be [height, width] as two integers >= 0; got "
                          f"{value!r}", source=source, record=where())
    h, w = int(value[0]), int(value[1])
    if h * w >= _MAX_PIXELS or max(h, w) >= _MAX_PIXELS:
        raise FormatError(_too_large(h, w), source=source, record=where())
    return h, w


def _plain_runs(counts: Sequence[Any]) -> np.ndarray | None:
    """Uncompressed RLE run lengths as int64, or None unless all are integers in [0, 2**32)."""
    if set(map(type, counts)) <= {int}:
        try:
            runs = np.asarray(counts, dtype=np.int64)
        except OverflowError:
            return None
    elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in counts):
        try:
            runs = np.asarray([int(v) for v in counts], dtype=np.int64)
        except OverflowError:
            return None
    else:
        return None
    if len(runs) and (runs.min() < 0 or runs.max() >= 2**32):
        return None
    return runs


def masks_from_segmentations(segmentations: Sequence[Any], *, heights: Any, widths: Any,
                             source: str | None = None, records: Sequence[str] | None = None,
                             check_size: bool = True, with_area: bool = False,
                             with_unbounded: bool = False) -> Any:
    """Convert COCO ``segmentation`` values to compressed RLE masks, as pycocotools does.

    Parameters
    ----------
    segmentations : sequence
        One value per object: a polygon list ``[[x1, y1, x2, y2, ...], ...]`` (rasterised at
        the object's image size and merged), an uncompressed RLE ``{"size": [h, w],
        "counts": [runs]}`` or a compressed RLE ``{"size": [h, w], "counts": str | bytes}``.
        Never modified.
    heights, widths : array-like of float, shape (n,)
        Size of each object's image (NaN where unknown: polygons then cannot be rasterised).
    source, records : optional
        Named in errors: the file, and a label per object.
    check_size : bool
        Refuse an RLE whose size differs from its (known) image size. pycocotools would give
        such a mask an IoU of -1 with every same-image mask, so it could never match.
    with_area : bool
        Also return each mask's pixel count (pycocotools' ``area``), shape (n,), int64.
    with_unbounded : bool
        Also return, shape (n,), bool, whether pycocotools' IoU routine may stop counting
        early on each mask: its runs include an empty one after the first (never so for
        masks made from polygons), or it has more than 2**31 pixels. No bound applies to
        such masks (see :func:`mask_iou_bound`).

    Returns
    -------
    ndarray of object, shape (n,)
        ``{"size": [h, w], "counts": bytes}`` per object; then the areas with
        ``with_area``, then the flags with ``with_unbounded``.

    Raises
    ------
    FormatError
        A value of none of the three forms; a polygon with an odd number of coordinates,
        fewer than 2 points or a non-finite number; a polygon on an image of unknown size;
        an RLE whose size is not two integers, whose counts are malformed or do not add up
        to ``h * w``; an RLE whose size differs from its image's. Each names the record.

    Notes
    -----
    pycocotools takes a polygon list whose *first* polygon has 4 numbers for a list of
    boxes and fails; here every part is a polygon whatever its place, which gives the union
    pycocotools gives for the same parts in another order.
    """
    api = mask_api()
    n = len(segmentations)
    heights = np.asarray(heights, dtype=np.float64).reshape(-1)
    widths = np.asarray(widths, dtype=np.float64).reshape(-1)
    out = np.empty(n, dtype=object)
    polygon_rows: list[int] = []
    polygon_parts: list[Any] = []
    plain_rows: list[int] = []
    plain: list[dict] = []
    packed_rows: list[int] = []
    packed: list[bytes] = []
    sizes = np.zeros((n, 2), dtype=np.int64)
    unbounded = np.zeros(n, dtype=bool)

    def label(i: int) -> str:
        return _record(records, i)

    for i, value in enumerate(segmentations):
        kind = type(value)
        if kind is list or kind is tuple:
            where = functools.partial(label, i)
            polygon_parts.append(polygon_parts_of(value, where, source))
            polygon_rows.append(i)
            if not (math.isfinite(heights[i]) and math.isfinite(widths[i])):
                raise FormatError("a polygon segmentation needs its image's 'height' and "
                                  "'width', which the ground truth does not give",
                                  source=source, record=where())
            if not (heights[i] >= 0 and widths[i] >= 0 and float(heights[i]).is_integer()
                    and float(widths[i]).is_integer()):
                raise FormatError("a polygon segmentation is rasterised at its image's size, "
                                  "which must be whole numbers of pixels >= 0; the image is "
                                  f"{heights[i]:g}x{widths[i]:g} (h x w)", source=source,
                                  record=where())
            if heights[i] * widths[i] >= _MAX_PIXELS or max(heights[i], widths[i]) >= _MAX_PIXELS:
                raise FormatError(_too_large(int(heights[i]), int(widths[i])), source=source,
                                  record=where())
            sizes[i] = heights[i], widths[i]
        elif kind is dict and "counts" in value and "size" in value:
            where = functools.partial(label, i)
            h, w = _size(value["size"], where, source)
            sizes[i, 0] = h
            sizes[i, 1] = w
            counts = value["counts"]
            if type(counts) is str:
                # UTF-8 (a lone surrogate passes through): a non-ASCII character then fails
                # the alphabet check, which names the record.
                counts = counts.encode("utf-8", "surrogatepass")
            if type(counts) is bytes:
                packed_rows.append(i)
                packed.append(counts)
            elif isinstance(counts, (list, tuple)):
                runs = _plain_runs(counts)
                if runs is None:
                    raise FormatError("uncompressed RLE 'counts' must be integers >= 0",
                                      source=source, record=where())
                if int(runs.sum()) != h * w:
                    raise FormatError(f"RLE run lengths add up to {int(runs.sum())} pixels; "
                                      f"a {h}x{w} mask needs {h * w}", source=source,
                                      record=where())
                plain_rows.append(i)
                plain.append({"size": [h, w], "counts": runs.tolist()})
                if len(runs) > 1 and not runs[1:].all():
                    unbounded[i] = True
            else:
                raise FormatError("RLE 'counts' must be a string (compressed) or a list of "
                                  f"run lengths; got {type(counts).__name__}", source=source,
                                  record=label(i))
        else:
            raise FormatError("'segmentation' must be a list of polygons or an RLE dict with "
                              f"'size' and 'counts'; got {type(value).__name__}",
                              source=source, record=label(i))

    areas = np.zeros(n, dtype=np.int64)
    if packed:
        rows = np.asarray(packed_rows)
        areas[rows], unbounded[rows] = _totals_and_areas(
            packed, sizes[rows, 0], sizes[rows, 1], source, lambda j: label(packed_rows[j]),
            unbounded=True)
        out[rows] = [{"size": size, "counts": string}
                     for size, string in zip(sizes[rows].tolist(), packed)]
    if plain:
        for i, rle in zip(plain_rows, api.frUncompressedRLE(plain, 0, 0)):
            out[i] = rle
        areas[plain_rows] = mask_area(out[plain_rows])
    if polygon_rows:
        polygon_parts = polygon_arrays(polygon_parts, lambda j: label(polygon_rows[j]), source)
        check_polygon_extent(polygon_parts, sizes[polygon_rows], lambda j: label(polygon_rows[j]),
                             source)
        rasterise(out, polygon_rows, polygon_parts, sizes, api)
        areas[polygon_rows] = mask_area(out[polygon_rows])
    if check_size:
        known = np.isfinite(heights) & np.isfinite(widths)
        mismatch = np.flatnonzero(known & ((sizes[:, 0] != np.nan_to_num(heights))
                                           | (sizes[:, 1] != np.nan_to_num(widths))))
        if len(mismatch):
            i = int(mismatch[0])
            raise FormatError(f"mask size {sizes[i, 0]}x{sizes[i, 1]} (h x w) differs from its "
                              f"image's {heights[i]:g}x{widths[i]:g}; masks are compared pixel "
                              "by pixel, so they must have the image's size", source=source,
                              record=_record(records, i))
    unbounded |= _too_many_for_bound(sizes[:, 0], sizes[:, 1])
    result = (out,) + ((areas,) if with_area else ()) + ((unbounded,) if with_unbounded else ())
    return result if len(result) > 1 else out


def compressed_areas(strings: Sequence[str] | Sequence[bytes], sizes: np.ndarray, *,
                     source: str | None = None, labels: Callable[[int], str] | None = None,
                     boxes: bool = False, unbounded: bool = False) -> Any:
    """Check compressed RLE strings against their sizes; return their pixel counts.

    Parameters
    ----------
    strings : sequence of str, or sequence of bytes
        ``counts`` of each mask, all of one type.
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
                             unbounded=unbounded)


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
    masks = np.empty(len(strings), dtype=object)
    masks[:] = [{"size": size, "counts": string}
                for size, string in zip(sizes.tolist(), strings)]
    return masks, areas


def mask_area(masks: Sequence[dict]) -> np.ndarray:
    """Pixel count of each mask, shape (n,), int64 (pycocotools' ``area``)."""
    if len(masks) == 0:
        return np.zeros(0, dtype=np.int64)
    # pycocotools' area() builds a uint8 placeholder from the count and fails beyond 255
    # masks under numpy 2: call it on slices.
    api = mask_api()
    masks = list(masks)
    return np.concatenate([np.asarray(api.area(masks[i:i + 255]), dtype=np.int64)
                           for i in range(0, len(masks), 255)])


def mask_bound_area(masks: Sequence[dict]) -> np.ndarray:
    """The ``mask_area`` column for masks that lack it, shape (n,), float64.

    Each mask's pixel count, NaN where pycocotools' IoU routine may stop counting early on
    it (see :func:`mask_iou_bound`). The masks are compressed RLE dicts (str or bytes
    counts).

    Examples
    --------
    >>> mask_bound_area([{"size": [6, 5], "counts": "0::0"},
    ...                  {"size": [2, 1], "counts": b"0100"}]).tolist()
    [20.0, nan]
    """
    if len(masks) == 0:
        return np.zeros(0, dtype=np.float64)
    strings = [m["counts"].encode("utf-8", "surrogatepass") if isinstance(m["counts"], str)
               else m["counts"] for m in masks]
    sizes = np.array([m["size"] for m in masks], dtype=np.int64).reshape(-1, 2)
    pixels, early = compressed_areas(strings, sizes, unbounded=True)
    return np.where(early, np.nan, pixels.astype(np.float64))


def mask_bounds(masks: Sequence[dict]) -> np.ndarray:
    """Tight box of each mask as xyxy, shape (n, 4), float64 (empty mask: zeros)."""
    if len(masks) == 0:
        return np.zeros((0, 4))
    xywh = np.asarray(mask_api().toBbox(list(masks)), dtype=np.float64).reshape(-1, 4)
    return np.column_stack([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]])


def mask_xywh(masks: Sequence[dict]) -> np.ndarray:
    """Tight box of each mask as ``[x, y, w, h]`` (pycocotools' ``toBbox``), shape (n, 4)."""
    if len(masks) == 0:
        return np.zeros((0, 4))
    return np.asarray(mask_api().toBbox(list(masks)), dtype=np.float64).reshape(-1, 4)


def mask_iou_bound(area_dt: np.ndarray, area_gt: np.ndarray, crowd: np.ndarray,
                   xywh_dt: np.ndarray | None = None,
                   xywh_gt: np.ndarray | None = None) -> np.ndarray:
    """The largest value :func:`pair_mask_iou` could return per pair, from areas and boxes.

    pycocotools' value is ``float(i) / float(u)`` with ``i`` the common pixels and ``u =
    a_dt + a_gt - i`` (a crowd region: ``u = a_dt``). ``i`` is at most the smaller area
    and, given the masks' tight boxes, the pixels the two boxes share. ``i / u`` grows
    with ``i`` and correctly rounded division keeps that order, so the value at the
    largest possible ``i`` is never below the routine's own result, to the last bit.

    Two exceptions, where the routine may count only a prefix of the pixels and return
    more than ``i / u``, up to 1: it walks both run lists together and stops when the two
    remaining run lengths add up to 0 in 32-bit arithmetic, so (a) when both masks are at
    an empty run (two masks with empty runs after their first, which pycocotools' own
    encoders never write), and (b) when they add up to 2**32 (masks of more than 2**31
    pixels). The readers give such masks a NaN area (``mask_area``), and a pair with a NaN
    area gets the bound 1.

    Parameters
    ----------
    area_dt, area_gt : array of float, shape (P,)
        Pixel counts of the two masks of each pair (pycocotools' ``area``); NaN for a mask
        whose IoU may not follow its pixels (see above).
    crowd : array of bool, shape (P,)
        Whether the pair's object is a crowd region.
    xywh_dt, xywh_gt : array of float, shape (P, 4), optional
        The masks' tight boxes (pycocotools' ``toBbox``).

    Returns
    -------
    ndarray of float64, shape (P,)
        0 where nothing can overlap.

    Examples
    --------
    >>> mask_iou_bound(np.array([100.0, 100.0, np.nan]), np.array([50.0, 400.0, 50.0]),
    ...                np.array([False, True, False])).tolist()
    [0.5, 1.0, 1.0]
    """
    area_dt = np.asarray(area_dt, dtype=np.float64)
    area_gt = np.asarray(area_gt, dtype=np.float64)
    common = np.minimum(area_dt, area_gt)
    if xywh_dt is not None and xywh_gt is not None:
        d, g = np.asarray(xywh_dt, np.float64), np.asarray(xywh_gt, np.float64)
        w = np.minimum(d[:, 0] + d[:, 2], g[:, 0] + g[:, 2]) - np.maximum(d[:, 0], g[:, 0])
        h = np.minimum(d[:, 1] + d[:, 3], g[:, 1] + g[:, 3]) - np.maximum(d[:, 1], g[:, 1])
        common = np.minimum(common, np.where((w > 0) & (h > 0), w * h, 0.0))
    union = np.where(crowd, area_dt, area_dt + area_gt - common)
    bound = np.zeros(len(common), dtype=np.float64)
    some = common > 0
    bound[some] = common[some] / union[some]
    bound[np.isnan(common)] = 1.0
    return bound


def _ranks_within(key: np.ndarray, rows: np.ndarray):
    """Dense rank of each pair's row among the distinct rows of its key, vectorised.

    Returns the rank per pair (in the pairs' own order), a flag per position of the
    (key, row)-sorted order marking the first pair of each distinct row, the bounds of the
    key groups in that order, and the order itself.
    """
    order = np.lexsort((rows, key))
    k, r = key[order], rows[order]
    new_key = np.empty(len(order), dtype=bool)
    new_key[:1] = True
    new_key[1:] = k[1:] != k[:-1]
    first = new_key.copy()
    first[1:] |= r[1:] != r[:-1]
    dense = np.cumsum(first) - 1
    key_start = np.maximum.accumulate(np.where(new_key, np.arange(len(order)), 0))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = dense - dense[key_start]
    bounds = np.append(np.flatnonzero(new_key), len(order))
    return rank, first, bounds, order


_BATCH_MASKS = 160  # masks per call of the RLE routine, about (see _size_batches)


def pair_mask_iou(dt_masks: np.ndarray, gt_masks: np.ndarray, pair_dt: np.ndarray,
                  pair_gt: np.ndarray, gt_crowd: np.ndarray, *,
                  image_of_dt: np.ndarray, group: np.ndarray | None = None) -> np.ndarray:
    """Mask IoU of (detection, ground truth) pairs, with pycocotools' ``maskUtils.iou``.

    Parameters
    ----------
    dt_masks, gt_masks : ndarray of object
        Compressed RLE dicts.
    pair_dt, pair_gt : ndarray of int, shape (P,)
        Rows of the pairs; both sides of a pair must be masks of the same image.
    gt_crowd : ndarray of bool, shape (n_gt,)
        Crowd regions score intersection over the detection's area.
    image_of_dt : ndarray of int, shape (n_dt,)
        Image of each detection: pairs are grouped by image, and no mask is compared with
        masks of another group.
    group : ndarray of int, shape (P,), optional
        A finer key per pair (e.g. image and category) to group by instead.

    Returns
    -------
    ndarray of float64, shape (P,)
        As pycocotools: ``float(i) / float(u)``; 0 without overlap; -1 where the two masks
        differ in size and their boxes overlap.

    Notes
    -----
    The routine computes a full (detections x objects) matrix per call, and each call costs
    tens of microseconds besides. Groups whose masks all have one size are therefore sent
    together, at most one group of each size per call: across groups the masks then differ
    in size, which the routine settles from the boxes alone (no run-length merge), and
    those cross values are dropped. A group with masks of several sizes has a call of its
    own. Every pair's value is the routine's own for that pair.
    """
    out = np.zeros(len(pair_dt), dtype=np.float64)
    if len(pair_dt) == 0:
        return out
    api = mask_api()
    key = image_of_dt[pair_dt] if group is None else np.asarray(group, dtype=np.int64)
    d_rank, d_first, bounds, order = _ranks_within(key, pair_dt)
    g_rank, g_first, _, g_order = _ranks_within(key, pair_gt)
    # g_order lists the pairs by (key, gt); its group bounds equal those of `order`.
    d_rows = pair_dt[order[d_first]]                 # distinct detections, group by group
    g_rows = pair_gt[g_order[g_first]]
    starts = bounds[:-1]
    n_groups = len(starts)
    n_d = np.add.reduceat(d_first.astype(np.int64), starts)
    n_g = np.add.reduceat(g_first.astype(np.int64), starts)
    d_start, g_start = np.cumsum(n_d) - n_d, np.cumsum(n_g) - n_g
    batch = _size_batches(dt_masks[d_rows], gt_masks[g_rows], d_start, g_start)
    # Lay the groups out batch by batch, and each batch's masks in one list.
    groups = np.argsort(batch, kind="stable")
    d_take = _ranges(d_start[groups], n_d[groups])
    g_take = _ranges(g_start[groups], n_g[groups])
    dt_list = dt_masks[d_rows[d_take]].tolist()
    gt_list = gt_masks[g_rows[g_take]].tolist()
    crowd = gt_crowd.astype(np.uint8)[g_rows[g_take]]
    cuts = np.flatnonzero(np.diff(batch[groups])) + 1
    first = np.r_[0, cuts]                            # first group (in layout) of each batch
    d_edges = np.r_[0, np.cumsum(n_d[groups])]
    g_edges = np.r_[0, np.cumsum(n_g[groups])]
    d_lo, d_hi = d_edges[first].tolist(), d_edges[np.r_[cuts, n_groups]].tolist()
    g_lo, g_hi = g_edges[first].tolist(), g_edges[np.r_[cuts, n_groups]].tolist()
    # One call per batch; each (m, n) matrix is Fortran-ordered: (i, j) at j * m + i.
    flat = np.concatenate([
        np.asarray(api.iou(dt_list[d0:d1], gt_list[g0:g1], crowd[g0:g1]),
                   dtype=np.float64).ravel(order="F")
        for d0, d1, g0, g1 in zip(d_lo, d_hi, g_lo, g_hi)])
    m = np.subtract(d_hi, d_lo)
    size = m * np.subtract(g_hi, g_lo)
    matrix_start = np.cumsum(size) - size
    # Per group (in layout order): its batch, and where its masks sit in the batch's lists.
    of_batch = np.repeat(np.arange(len(first)), np.diff(np.r_[first, n_groups]))
    d_at = np.empty(n_groups, dtype=np.int64)
    g_at = np.empty(n_groups, dtype=np.int64)
    d_at[groups] = d_edges[:-1] - d_edges[first][of_batch]
    g_at[groups] = g_edges[:-1] - g_edges[first][of_batch]
    batch_of = np.empty(n_groups, dtype=np.int64)
    batch_of[groups] = of_batch
    pair_group = np.empty(len(order), dtype=np.int64)
    pair_group[order] = np.repeat(np.arange(n_groups), np.diff(bounds))
    b = batch_of[pair_group]
    out[:] = flat[matrix_start[b] + (g_at[pair_group] + g_rank) * m[b]
                  + d_at[pair_group] + d_rank]
    return out


def _ranges(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The integers of ``[start, start + length)`` for each range, concatenated."""
    total = int(length.sum())
    offset = np.cumsum(length) - length
    return np.arange(total) + np.repeat(start - offset, length)


def _size_batches(dt: np.ndarray, gt: np.ndarray, d_start: np.ndarray,
                  g_start: np.ndarray) -> np.ndarray:
    """A batch number per group: groups of one mask size, at most one per size and about
    ``_BATCH_MASKS`` masks per batch; a group of mixed sizes alone in its batch."""
    n_groups = len(d_start)
    d_size = np.array([m["size"] for m in dt], dtype=np.int64).reshape(-1, 2)
    g_size = np.array([m["size"] for m in gt], dtype=np.int64).reshape(-1, 2)
    d_key = d_size[:, 0] * (1 << 32) + d_size[:, 1]
    g_key = g_size[:, 0] * (1 << 32) + g_size[:, 1]
    size = d_key[d_start]
    uniform = ((np.minimum.reduceat(d_key, d_start) == size)
               & (np.maximum.reduceat(d_key, d_start) == size)
               & (np.minimum.reduceat(g_key, g_start) == size)
               & (np.maximum.reduceat(g_key, g_start) == size))
    # The k-th group of a size (in group order) goes to slot k.
    by_size = np.lexsort((np.arange(n_groups), size))
    sorted_size = size[by_size]
    new = np.r_[True, sorted_size[1:] != sorted_size[:-1]]
    run_start = np.maximum.accumulate(np.where(new, np.arange(n_groups), 0))
    slot = np.empty(n_groups, dtype=np.int64)
    slot[by_size] = np.arange(n_groups) - run_start
    # Within a slot, consecutive chunks of about _BATCH_MASKS masks: the routine tests the
    # boxes of all m x n pairs of a call, which must stay cheaper than the calls saved.
    in_slot = np.lexsort((np.arange(n_groups), slot))
    s = slot[in_slot]
    masks = (np.diff(np.r_[d_start, len(dt)]) + np.diff(np.r_[g_start, len(gt)]))[in_slot]
    before = np.cumsum(masks) - masks
    slot_base = np.maximum.accumulate(np.where(np.r_[True, s[1:] != s[:-1]], before, 0))
    chunk = np.empty(n_groups, dtype=np.int64)
    chunk[in_slot] = (before - slot_base) // _BATCH_MASKS
    batch = slot * (int(masks.sum()) + 1) + chunk      # chunk never reaches the multiplier
    batch[~uniform] = -1 - np.flatnonzero(~uniform)  # each mixed group alone
    return batch
