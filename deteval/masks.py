"""Instance masks as COCO run-length encodings (RLE): conversion, checks, areas and IoU.

Masks are ``h x w`` bitmaps stored column-major and run-length encoded, as in pycocotools:
``counts`` lists alternating run lengths of 0s and 1s, starting with 0s. deteval keeps every
mask in *compressed* form, ``{"size": [h, w], "counts": bytes}``, the form pycocotools' C
routines take, and computes IoUs, areas and boxes with those routines, so that the numbers
are pycocotools' own (semantics.md §5.3).

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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import FormatError

__all__ = ["decode_counts", "mask_area", "mask_bounds", "masks_from_segmentations",
           "pair_mask_iou"]

_MAX_DIGITS = 7  # 35 bits: more than any run of a 2**31-pixel mask needs


def _mask_api():
    from pycocotools import _mask  # the C routines; imported late to keep import light

    return _mask


def _record(records: Sequence[str] | None, i: int) -> str:
    return records[i] if records is not None else f"mask {i}"


def decode_counts(strings: Sequence[bytes], *, source: str | None = None,
                  records: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Decode compressed RLE strings, all at once.

    Parameters
    ----------
    strings : sequence of bytes
        The ``counts`` strings (pycocotools' 6-bit, delta-coded alphabet ``'0'..'o'``).
    source, records : optional
        Named in errors: the file, and a label per string (default ``"mask i"``).

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
    lengths = np.fromiter(map(len, strings), np.int64, len(strings))
    chars = np.frombuffer(b"".join(strings), dtype=np.uint8).astype(np.int64) - 48
    string_of_char = np.repeat(np.arange(len(strings)), lengths)
    bad = np.flatnonzero((chars < 0) | (chars > 63))
    if len(bad):
        i = int(string_of_char[bad[0]])
        raise FormatError(f"compressed RLE 'counts' has a character outside '0'..'o' "
                          f"({chr(int(chars[bad[0]]) + 48)!r}); is it a compressed RLE string?",
                          source=source, record=_record(records, i))
    more = (chars & 0x20) != 0
    ends = np.cumsum(lengths) - 1
    truncated = np.flatnonzero((lengths > 0) & more[np.maximum(ends, 0)])
    if len(truncated):
        raise FormatError("compressed RLE 'counts' ends in the middle of a number (truncated "
                          "string?)", source=source, record=_record(records, int(truncated[0])))
    last = ~more                                    # the last character of each number
    number_ends = np.flatnonzero(last)
    number_starts = np.concatenate([[0], number_ends[:-1] + 1]).astype(np.int64)
    digits = number_ends - number_starts + 1
    if len(digits) and digits.max() > _MAX_DIGITS:
        i = int(string_of_char[number_starts[np.argmax(digits)]])
        raise FormatError(f"compressed RLE 'counts' holds a number of more than {_MAX_DIGITS} "
                          "characters", source=source, record=_record(records, i))
    position = np.arange(len(chars)) - np.repeat(number_starts, digits)
    value = np.add.reduceat((chars & 0x1F) << (5 * position), number_starts) if len(
        number_starts) else np.zeros(0, np.int64)
    negative = (chars[number_ends] & 0x10) != 0
    value = value - np.where(negative, np.int64(1) << (5 * digits), 0)
    numbers_per_string = np.bincount(string_of_char[number_ends], minlength=len(strings))
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    np.cumsum(numbers_per_string, out=offsets[1:])
    # Index i >= 3 adds the stored number at i - 2: a running sum along each parity chain
    # of a string (odd indices from 1, even ones from 2; index 0 stands alone). Running sums
    # over the global even and odd positions, minus the sum before each chain's start, give
    # them without a sort. uint64 wraps, and the final reduction mod 2**32 is the uint32
    # pycocotools stores.
    wrapped = value.astype(np.uint64)
    running = np.empty_like(wrapped)
    running[0::2] = np.cumsum(wrapped[0::2], dtype=np.uint64)
    running[1::2] = np.cumsum(wrapped[1::2], dtype=np.uint64)
    before = running - wrapped                       # the running sum before each position
    start = np.repeat(offsets[:-1], numbers_per_string)
    local = np.arange(len(value)) - start
    chain_start = start + np.where(local % 2 == 1, 1, 2)
    chain_start = np.minimum(chain_start, len(value) - 1)
    counts = (running - before[chain_start]) & np.uint64(0xFFFFFFFF)
    counts = np.where(local == 0, wrapped, counts).astype(np.int64)
    return counts, offsets


def _check_runs(counts: np.ndarray, offsets: np.ndarray, heights: np.ndarray,
                widths: np.ndarray, source: str | None, records: Sequence[str] | None) -> None:
    owner = np.repeat(np.arange(len(heights)), np.diff(offsets))
    totals = np.bincount(owner, weights=counts, minlength=len(heights)).astype(np.int64)
    expected = heights * widths
    bad = np.flatnonzero(totals != expected)
    if len(bad):
        i = int(bad[0])
        raise FormatError(f"RLE run lengths add up to {int(totals[i])} pixels; a "
                          f"{int(heights[i])}x{int(widths[i])} mask needs {int(expected[i])}",
                          source=source, record=_record(records, i))


def _size(value: Any, where: Callable[[], str], source: str | None) -> tuple[int, int]:
    ok = (isinstance(value, (list, tuple)) and len(value) == 2
          and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
                  for v in value))
    if not ok:
        raise FormatError(f"RLE 'size' must be [height, width] as two integers >= 0; got "
                          f"{value!r}", source=source, record=where())
    return int(value[0]), int(value[1])


def _polygon_parts(value: list, where: Callable[[], str], source: str | None) -> list:
    if not value:
        raise FormatError("'segmentation' is an empty list: expected polygons [[x1, y1, x2, "
                          "y2, ...], ...] or an RLE", source=source, record=where())
    parts = []
    for j, part in enumerate(value):
        if not isinstance(part, (list, tuple)):
            raise FormatError(f"polygon {j} must be a list of numbers x1, y1, x2, y2, ...; got "
                              f"{type(part).__name__}", source=source, record=where())
        if not all(isinstance(v, (int, float, np.integer, np.floating))
                   and not isinstance(v, bool) for v in part):
            raise FormatError(f"polygon {j} must hold numbers only", source=source,
                              record=where())
        numbers = np.asarray(part, dtype=np.float64)
        if len(numbers) % 2:
            raise FormatError(f"polygon {j} has an odd number of coordinates ({len(numbers)}); "
                              "expected x, y pairs", source=source, record=where())
        if len(numbers) < 4:
            raise FormatError(f"polygon {j} has {len(numbers) // 2} point(s); a polygon needs "
                              "at least 2 (3 for a non-empty area)", source=source,
                              record=where())
        if not np.isfinite(numbers).all():
            raise FormatError(f"polygon {j} holds a non-finite coordinate", source=source,
                              record=where())
        parts.append(numbers)
    return parts


def masks_from_segmentations(segmentations: Sequence[Any], *, heights: Any, widths: Any,
                             source: str | None = None, records: Sequence[str] | None = None,
                             check_size: bool = True) -> np.ndarray:
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

    Returns
    -------
    ndarray of object, shape (n,)
        ``{"size": [h, w], "counts": bytes}`` per object.

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
    api = _mask_api()
    n = len(segmentations)
    heights = np.asarray(heights, dtype=np.float64).reshape(-1)
    widths = np.asarray(widths, dtype=np.float64).reshape(-1)
    out = np.empty(n, dtype=object)
    polygon_rows: list[int] = []
    polygon_parts: list[list[np.ndarray]] = []
    plain_rows: list[int] = []
    plain: list[dict] = []
    packed_rows: list[int] = []
    packed: list[bytes] = []
    sizes = np.zeros((n, 2), dtype=np.int64)

    for i, value in enumerate(segmentations):
        def where(i=i):
            return _record(records, i)
        if isinstance(value, (list, tuple)):
            polygon_parts.append(_polygon_parts(value, where, source))
            polygon_rows.append(i)
            if not (np.isfinite(heights[i]) and np.isfinite(widths[i])):
                raise FormatError("a polygon segmentation needs its image's 'height' and "
                                  "'width', which the ground truth does not give",
                                  source=source, record=where())
            sizes[i] = heights[i], widths[i]
        elif isinstance(value, dict) and "counts" in value and "size" in value:
            h, w = _size(value["size"], where, source)
            sizes[i] = h, w
            counts = value["counts"]
            if isinstance(counts, str):
                counts = counts.encode("ascii", errors="replace")
            if isinstance(counts, bytes):
                packed_rows.append(i)
                packed.append(counts)
            elif isinstance(counts, (list, tuple)):
                if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                           and 0 <= v < 2**32 for v in counts):
                    raise FormatError("uncompressed RLE 'counts' must be integers >= 0",
                                      source=source, record=where())
                runs = np.asarray(counts, dtype=np.int64)
                if int(runs.sum()) != h * w:
                    raise FormatError(f"RLE run lengths add up to {int(runs.sum())} pixels; "
                                      f"a {h}x{w} mask needs {h * w}", source=source,
                                      record=where())
                plain_rows.append(i)
                plain.append({"size": [h, w], "counts": runs.tolist()})
            else:
                raise FormatError("RLE 'counts' must be a string (compressed) or a list of "
                                  f"run lengths; got {type(counts).__name__}", source=source,
                                  record=where())
        else:
            raise FormatError("'segmentation' must be a list of polygons or an RLE dict with "
                              f"'size' and 'counts'; got {type(value).__name__}",
                              source=source, record=where())

    if packed:
        counts, offsets = decode_counts(packed, source=source,
                                        records=[_record(records, i) for i in packed_rows])
        rows = np.asarray(packed_rows)
        _check_runs(counts, offsets, sizes[rows, 0], sizes[rows, 1], source,
                    [_record(records, i) for i in packed_rows])
        for i, string in zip(packed_rows, packed):
            out[i] = {"size": [int(sizes[i, 0]), int(sizes[i, 1])], "counts": string}
    if plain:
        for i, rle in zip(plain_rows, api.frUncompressedRLE(plain, 0, 0)):
            out[i] = rle
    if polygon_rows:
        _rasterise(out, polygon_rows, polygon_parts, sizes, api)
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
    return out


def _rasterise(out: np.ndarray, rows: list[int], parts: list[list[np.ndarray]],
               sizes: np.ndarray, api: Any) -> None:
    """Rasterise polygon objects image size by image size, one C call per size."""
    rows_array = np.asarray(rows)
    keys = sizes[rows_array, 0] * (1 << 32) + sizes[rows_array, 1]
    for key in np.unique(keys):
        members = np.flatnonzero(keys == key)
        h, w = int(key >> 32), int(key & 0xFFFFFFFF)
        flat = [p for m in members for p in parts[m]]
        rles = api.frPoly(flat, h, w)
        at = 0
        for m in members:
            k = len(parts[m])
            out[rows[m]] = rles[at] if k == 1 else api.merge(rles[at:at + k], 0)
            at += k


def mask_area(masks: Sequence[dict]) -> np.ndarray:
    """Pixel count of each mask, shape (n,), int64 (pycocotools' ``area``)."""
    if len(masks) == 0:
        return np.zeros(0, dtype=np.int64)
    # pycocotools' area() builds a uint8 placeholder from the count and fails beyond 255
    # masks under numpy 2: call it on slices.
    api = _mask_api()
    masks = list(masks)
    return np.concatenate([np.asarray(api.area(masks[i:i + 255]), dtype=np.int64)
                           for i in range(0, len(masks), 255)])


def mask_bounds(masks: Sequence[dict]) -> np.ndarray:
    """Tight box of each mask as xyxy, shape (n, 4), float64 (empty mask: zeros)."""
    if len(masks) == 0:
        return np.zeros((0, 4))
    xywh = np.asarray(_mask_api().toBbox(list(masks)), dtype=np.float64).reshape(-1, 4)
    return np.column_stack([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]])


def mask_xywh(masks: Sequence[dict]) -> np.ndarray:
    """Tight box of each mask as ``[x, y, w, h]`` (pycocotools' ``toBbox``), shape (n, 4)."""
    if len(masks) == 0:
        return np.zeros((0, 4))
    return np.asarray(_mask_api().toBbox(list(masks)), dtype=np.float64).reshape(-1, 4)


def pair_mask_iou(dt_masks: np.ndarray, gt_masks: np.ndarray, pair_dt: np.ndarray,
                  pair_gt: np.ndarray, gt_crowd: np.ndarray, *,
                  image_of_dt: np.ndarray) -> np.ndarray:
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
        Image of each detection: the C routine is called once per image, on the distinct
        detections and objects of that image's pairs.

    Returns
    -------
    ndarray of float64, shape (P,)
        As pycocotools: ``float(i) / float(u)``; 0 without overlap; -1 where the two masks
        differ in size and their boxes overlap.
    """
    out = np.zeros(len(pair_dt), dtype=np.float64)
    if len(pair_dt) == 0:
        return out
    api = _mask_api()
    image = image_of_dt[pair_dt]
    order = np.argsort(image, kind="stable")
    bounds = np.flatnonzero(np.r_[True, image[order][1:] != image[order][:-1], True])
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        sel = order[lo:hi]
        d_rows, d_pos = np.unique(pair_dt[sel], return_inverse=True)
        g_rows, g_pos = np.unique(pair_gt[sel], return_inverse=True)
        matrix = api.iou(list(dt_masks[d_rows]), list(gt_masks[g_rows]),
                         gt_crowd[g_rows].astype(np.uint8))
        out[sel] = np.asarray(matrix, dtype=np.float64).reshape(len(d_rows), len(g_rows))[
            d_pos, g_pos]
    return out
