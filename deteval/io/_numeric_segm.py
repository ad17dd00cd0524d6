"""The segm results reader's fastest path: a COCO segm results file of compressed RLE masks
read by numpy over its bytes (no msgspec, no Python object per record), or refused (None)
for the msgspec path to read.

A record is ``{"image_id": int, "category_id": int, "segmentation": {"size": [h, w],
"counts": "<compressed RLE>"}, "score": number}``, optionally with ``"bbox": [4 numbers]``
(detectron2 and mmdetection write one): the keys in the first record's order in every
record, no other key. It is the template path of the bbox and keypoint readers
(docs/fast-reader.md §2a, docs/keypoint-reader.md) with the ``counts`` string's content as
one more value: the RLE alphabet ``'0'..'o'`` holds no comma, quote, brace or whitespace,
so between two consecutive values of a record there is still exactly one comma, and the
glue (``"},"score":`` ...) is compared byte for byte with the first record's. Inside a
string, a pair of backslashes is one backslash of the alphabet (byte 92); any other escape
(a run of backslashes of odd length: ``\\u0030``, ``\\/``, an escaped quote), a byte
outside the alphabet, an empty string, a non-integer id or size, a negative size, a
non-finite number or a box with a negative side returns None: this reader never decides
what is an error of the file's layout. The strings' bytes (escapes undone) are copied once
out of the text (:class:`~deteval.masks.rle.JoinedCounts`) and decoded, checked and
measured there by the masks' one decoder (:func:`~deteval.masks.compressed_areas`), whose
errors (runs that do not add up, a mask of 2**32 pixels or more, a truncated string) are
kept and raised by :func:`~deteval.io.coco.typed.segm_detections_of` only where the msgspec
path would raise them, with the same words and record. Rules: docs/segm-reader.md.

>>> columns = numeric_segm_results(
...     b'[{"image_id": 1, "category_id": 2, "segmentation": {"size": [7, 1], '
...     b'"counts": "52"}, "score": 0.5}]')
>>> columns.image_ids.tolist(), columns.sizes.tolist(), columns.pixels.tolist()
([1], [[7, 1]], [2])
>>> columns.masks.dicts()[0], columns.mask_xywh.tolist()
({'size': (7, 1), 'counts': b'52'}, [[0.0, 5.0, 1.0, 2.0]])
>>> numeric_segm_results(b'[{"image_id": 1, "category_id": 2, "segmentation": {"size": '
...                      b'[7, 1], "counts": "5\\\\u0032"}, "score": 0.5}]') is None
True
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, NamedTuple

import msgspec
import numpy as np

from .._arrays import adapt_malloc
from .._mask_text import MaskText
from .._threads import resolve_threads, thread_map
from ..errors import FormatError
from ..masks.rle import JoinedCounts, compressed_areas
from ._numeric_json import _array_bounds, _glue_runs, _parse_deferred, _Refused, _runs_text
from ._numeric_template import MAX_GLUE, GlueTemplate, byte_windows, word_numbers

__all__ = ["SegmColumns", "numeric_segm_results"]

_REQUIRED = frozenset({"image_id", "category_id", "segmentation", "score"})
#: A record's end, the separator and the next record's start: ``}`` then ``,`` then ``{``
#: (inside a record a ``}`` is followed by ``,"``, and ``{`` follows only ``:``).
_BOUNDARY = re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{")
#: A JSON string (keys, and the counts) or a number token of the first record.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*')
_WS_RUN = re.compile(rb"[ \t\n\r]+")
#: Bytes of text per piece (records whole): the pieces are read on threads and joined.
PIECE_BYTES = 1 << 20
#: Characters of a piece's strings decoded at once: a whole piece (~1 MiB) in one chunk,
#: ~40 numpy calls (against ~8 chunks of the decoder's default 120k), each a turn at the GIL
#: while the ground truth is read beside it (docs/segm-reader.md §3).
_PIECE_CHUNK = 1 << 21
_INTEGERS = frozenset({"image_id", "category_id", "h", "w"})


class SegmColumns(NamedTuple):
    """The columns of a segm results file of N compressed RLE masks, decoded and checked
    without the ground truth (the masks' sizes are the file's)."""

    image_ids: np.ndarray       #: int64 (N,)
    category_ids: np.ndarray    #: int64 (N,)
    scores: np.ndarray          #: float64 (N,)
    sizes: np.ndarray           #: int64 (N, 2): each mask's ``[h, w]``
    xywh: np.ndarray | None     #: float64 (N, 4) when the records give ``bbox``, else None
    #: the ``counts`` strings (escapes undone) in one text: ``{"size": (h, w), "counts":
    #: bytes}`` per mask when the detections' ``masks`` are read
    masks: MaskText
    pixels: np.ndarray | None   #: int64 (N,): each mask's area (None with ``error``)
    mask_xywh: np.ndarray | None    #: float64 (N, 4): toBbox, when there is no ``bbox``
    unbounded: np.ndarray | None    #: bool (N,): see :func:`~deteval.masks.mask_iou_bound`
    #: The error the masks' decoder raised (``pixels`` etc. are then None), to be raised
    #: where the msgspec path would raise it.
    error: FormatError | None = None


class _Layout(NamedTuple):
    """The first record's shape: the values in text order (``labels``: ``image_id``,
    ``category_id``, ``h``, ``w``, ``counts``, ``score``, ``bbox0``..``bbox3``) and the
    glue between them as the file writes it."""

    labels: tuple[str, ...]
    glue: GlueTemplate

    def column(self, label: str) -> int:
        return self.labels.index(label)


def _first_record(raw: bytes, start: int, end: int) -> tuple[bytes, bytes, int] | None:
    """``(record text, separator, offset)`` of the first record (whitespace stripped)."""
    at = start
    while at < end and raw[at] in b" \t\n\r":
        at += 1
    cut = _BOUNDARY.search(raw, at, end)
    if cut is None:
        stop = end
        while stop > at and raw[stop - 1] in b" \t\n\r":
            stop -= 1
        return raw[at:stop], b",", at
    if cut.start() - at > 1 << 20:
        return None
    return raw[at:cut.start() + 1], raw[cut.start() + 1:cut.end() - 1], at


def _is_int(value: Any) -> bool:
    return type(value) is int


def _checked_first(text: bytes) -> dict | None:
    """The first record decoded, when it has this reader's shape."""
    try:
        first = msgspec.json.decode(text)   # (not json: ~3 ms to import)
    except ValueError:
        return None
    if not (isinstance(first, dict) and _REQUIRED <= first.keys() <= _REQUIRED | {"bbox"}):
        return None
    segmentation, box = first["segmentation"], first.get("bbox", [0, 0, 0, 0])
    if not (isinstance(segmentation, dict) and segmentation.keys() == {"size", "counts"}
            and isinstance(segmentation["counts"], str) and segmentation["counts"]
            and isinstance(segmentation["size"], list) and len(segmentation["size"]) == 2
            and all(map(_is_int, segmentation["size"])) and _is_int(first["image_id"])
            and _is_int(first["category_id"]) and isinstance(box, list) and len(box) == 4
            and all(type(v) in (int, float) for v in [*box, first["score"]])):
        return None
    return first


def _layout(raw: bytes, start: int, end: int) -> _Layout | None:
    """The layout of the file's records, learnt from its first (None: not this reader's)."""
    found = _first_record(raw, start, end)
    if found is None:
        return None
    text, separator, _ = found
    first = _checked_first(text)
    if first is None:
        return None
    labels, segments, at, key, in_size = [], [], 0, None, 0
    for token in _TOKEN.finditer(text):
        body = token.group()
        if body[:1] == b'"':
            after = text[token.end():token.end() + 64].lstrip(b" \t\n\r")
            if after[:1] == b":":
                key = body[1:-1].decode("ascii", "replace")
                continue
            if key != "counts":
                return None
            segments.append(text[at:token.start() + 1])
            at = token.end() - 1
            labels.append("counts")
            continue
        segments.append(text[at:token.start()])
        at = token.end()
        if key == "size":
            labels.append("hw"[in_size] if in_size < 2 else "?")
            in_size += 1
        elif key == "bbox":
            labels.append(f"bbox{len([x for x in labels if x.startswith('bbox')])}")
        else:
            labels.append(str(key))
    segments.append(text[at:])
    expected = ["image_id", "category_id", "h", "w", "counts", "score"]
    if "bbox" in first:
        expected += ["bbox0", "bbox1", "bbox2", "bbox3"]
    if sorted(labels) != sorted(expected):
        return None
    # The glue without whitespace must be the compact record of this key order (values
    # emptied): so no key twice, nothing nested otherwise, no whitespace inside a token.
    shape = {k: ({"size": [0, 0], "counts": ""} if k == "segmentation" else
                 [0] * 4 if k == "bbox" else 0) for k in first}
    shape["segmentation"] = {k: shape["segmentation"][k] for k in first["segmentation"]}
    compact = msgspec.json.encode(shape).replace(b'""', b'"0"').split(b"0")
    if [_WS_RUN.sub(b"", s) for s in segments] != compact:
        return None
    names = [f"v{i}" for i in range(len(labels))]     # (no letter e: GlueTemplate's keys)
    glue = GlueTemplate(tuple(names), segments, separator,
                        values={name: (i,) for i, name in enumerate(names)}, arrays=())
    if not glue.usable or any(len(g) > MAX_GLUE for g in glue.glue):
        return None
    return _Layout(tuple(labels), glue)


def _pieces(raw: bytes, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """Consecutive pieces of the array's inside, each of whole records, cut at a record
    boundary (:data:`_BOUNDARY`) after about ``size`` bytes."""
    pieces, pos = [], start
    while pos < end:
        cut = _BOUNDARY.search(raw, min(pos + size, end), end) if pos + size < end else None
        if cut is None:
            pieces.append((pos, end))
            break
        pieces.append((pos, cut.start() + 1))
        pos = cut.end() - 1
    return pieces


def _numbers(words_at: np.ndarray, buffer: np.ndarray, starts: np.ndarray,
             lengths: np.ndarray, layout: _Layout, out: dict[str, np.ndarray]):
    """Convert a piece's number values (``starts``, ``lengths``: ``(k, width)``) into
    ``out``; returns the numbers :func:`word_numbers` leaves, for :func:`_parse_deferred`
    (or None). Raises :class:`_Refused` when an id or size is not an integer literal."""
    columns = [i for i, label in enumerate(layout.labels) if label != "counts"]
    at, size = starts[:, columns], lengths[:, columns]
    k, width = at.shape
    values, ok, integral, negative, mantissa = word_numbers(words_at[at.ravel()], size.ravel())
    values, ok, integral = (a.reshape(k, width) for a in (values, ok, integral))
    integers = mantissa.view(np.int64).reshape(k, width)
    integers = np.where(negative.reshape(k, width), -integers, integers)
    for j, i in enumerate(columns):
        label = layout.labels[i]
        if label in _INTEGERS:
            if not (integral[:, j] | ~ok[:, j]).all():
                raise _Refused
            out[label] = integers[:, j].copy()
        else:
            out[label] = values[:, j].copy()
    rest = np.flatnonzero(~ok.ravel())
    if len(rest) == 0:
        return None
    first = at.ravel().take(rest)
    text = _runs_text(buffer, first, first + size.ravel().take(rest))
    if text is None:
        raise _Refused
    return (*text, rest // width, np.take(columns, rest % width))


def _strings(buffer: np.ndarray, starts: np.ndarray,
             ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of a piece's strings (``buffer[starts[i]:ends[i]]``) back to back, each
    pair of backslashes made one, and each string's length so; raises :class:`_Refused`
    for another escape (a run of backslashes of odd length: ``\\u``, ``\\/``, an escaped
    quote) or a byte outside ``'0'..'o'``. numpy's copies run without the GIL (``bytes.replace``
    of the pairs held it for ~9 instructions a byte)."""
    lo, hi = int(starts[0]), int(ends[-1])
    region = buffer[lo:hi]
    lengths = ends - starts
    # The strings' bytes and the glue between them, alternately: a mask made by np.repeat
    # (a sixth of the time of a running sum of +1 / -1 marks).
    spans = np.empty(2 * len(starts) - 1, dtype=np.intp)
    spans[0::2] = lengths
    spans[1::2] = starts[1:] - ends[:-1]
    alternate = np.zeros(len(spans), dtype=bool)
    alternate[0::2] = True
    inside = np.repeat(alternate, spans)
    slashes = np.flatnonzero(region == 92)
    if len(slashes):
        # (every byte 92 is in a string: the glue between the values was compared, and a
        # number holding one is refused)
        run_start = np.flatnonzero(np.diff(slashes, prepend=-2) != 1)
        run_length = np.diff(np.append(run_start, len(slashes)))
        if (run_length % 2).any():
            raise _Refused      # the msgspec path reads (and words) the string
        dropped = slashes[::2]  # (every run even: each pair's first byte)
        inside[dropped] = False
        lengths = lengths - (np.searchsorted(dropped, ends - lo)
                             - np.searchsorted(dropped, starts - lo))
    text = region[inside]
    if len(text) and (text.min() < 48 or text.max() > 111):
        raise _Refused          # (not '0'..'o': the msgspec path words the error)
    return text, lengths


def _read_piece(data: np.ndarray, windows: tuple[np.ndarray, np.ndarray],
                piece: tuple[int, int], layout: _Layout) -> tuple[dict, Any]:
    """One piece's columns (``text``: its counts strings back to back, ``ends``: where each
    ends in it) and its numbers left; its masks decoded (``decoded``: the areas, boxes and flags of
    :func:`~deteval.masks.compressed_areas`, or None when a mask's size is left to
    :func:`_parse_deferred` or the decoder raised: all the masks are then decoded again at
    once, so that the error is the one the msgspec path raises)."""
    buffer, windows, runs = _glue_runs(data, windows, piece, layout.glue)
    if runs is None:
        raise _Refused
    starts, lengths = runs
    out: dict[str, Any] = {}
    left = _numbers(windows[0], buffer, starts, lengths, layout, out)
    c = layout.column("counts")
    begin = starts[:, c]
    joined, string_lengths = _strings(buffer, begin, begin + lengths[:, c])
    out["text"], out["ends"] = joined.tobytes(), np.cumsum(string_lengths)
    out["decoded"] = None
    sizes = np.column_stack([out["h"], out["w"]])
    if (left is None or not np.isin(left[4], [layout.column("h"), layout.column("w")]).any()
            and (sizes >= 0).all()):
        with contextlib.suppress(FormatError):
            out["decoded"] = compressed_areas(
                JoinedCounts(joined, string_lengths), sizes, boxes="bbox0" not in layout.labels,
                unbounded=True, threads=1, chunk_chars=_PIECE_CHUNK)
    return out, left


def numeric_segm_results(raw: Any, *, threads: int | None = 1, piece_bytes: int | None = None,
                         pool: Any = None, source: str | None = None) -> SegmColumns | None:
    """The columns of a segm results file of compressed RLE masks, or None.

    Parameters
    ----------
    raw : bytes
        The file's content.
    threads, piece_bytes, pool
        As for :func:`~deteval.io._numeric_keypoints.numeric_keypoint_results`: the
        threads reading the pieces and decoding the masks (None: every core), the bytes of
        text per piece, or an object whose ``map`` runs them; the output depends on none.
    source : str, optional
        The file's name, for the masks' errors.

    Returns
    -------
    SegmColumns or None
        Every number as msgspec reads it (``float(text)``, ids ``int(text)``), the masks
        decoded (their areas, boxes and flags as :func:`~deteval.masks.compressed_areas`
        gives them, or its error); None when the text is anything else.
    """
    bounds = _array_bounds(raw)
    if bounds is None:
        return None
    layout = _layout(raw, *bounds)
    if layout is None:
        return None
    adapt_malloc()
    if pool is None:
        n_threads = resolve_threads(threads)

        def pieces_map(fn, items):
            return thread_map(fn, items, n_threads)
    else:
        pieces_map = pool.map
    data = np.frombuffer(raw, dtype=np.uint8)
    windows = byte_windows(data)
    pieces = _pieces(raw, *bounds, PIECE_BYTES if piece_bytes is None else max(piece_bytes, 1))
    try:
        read = pieces_map(lambda piece: _read_piece(data, windows, piece, layout), pieces)
        columns = _joined([out for out, _ in read], layout)
        deferred = [(*left[:3], left[3] + offset, left[4]) for (_, left), offset
                    in zip(read, np.cumsum([0] + [len(out["score"]) for out, _ in read]))
                    if left is not None]
        del read
        if deferred:
            _read_deferred(deferred, layout, columns)
    except _Refused:
        return None
    return _decoded(columns, layout, threads=threads, pool=pool, source=source)


def _joined(pieces: list[dict], layout: _Layout) -> dict[str, Any]:
    """The pieces' columns, one after the other."""
    out = {label: np.concatenate([p[label] for p in pieces])
           for label in layout.labels if label != "counts"}
    # Every piece's strings in one text (the masks' dicts are made when they are read).
    shift = np.cumsum([0] + [len(p["text"]) for p in pieces[:-1]])
    out["string_ends"] = np.concatenate([p["ends"] + at for p, at in zip(pieces, shift)])
    out["text"] = b"".join([p["text"] for p in pieces])
    decoded = [p["decoded"] for p in pieces]
    if all(d is not None for d in decoded):
        out["decoded"] = tuple(np.concatenate(column) for column in zip(*decoded))
    return out


def _read_deferred(deferred: list, layout: _Layout, out: dict[str, np.ndarray]) -> None:
    """Convert the numbers :func:`word_numbers` left (every piece's at once) into their
    rows; raises :class:`_Refused` for an id or size that is not an integer literal."""
    values, integral, integers, rows, column = _parse_deferred(deferred)
    for i, label in enumerate(layout.labels):
        sel = np.flatnonzero(column == i)
        if len(sel) == 0:
            continue
        if label in _INTEGERS:
            if not integral[sel].all():
                raise _Refused
            out[label][rows[sel]] = integers[sel]
        else:
            out[label][rows[sel]] = values[sel]


def _decoded(columns: dict[str, Any], layout: _Layout, *, threads: int | None, pool: Any,
             source: str | None) -> SegmColumns | None:
    """The columns checked as the msgspec path checks them, and the masks decoded."""
    scores = columns["score"]
    sizes = np.column_stack([columns["h"], columns["w"]])
    xywh = None
    if "bbox0" in columns:
        xywh = np.column_stack([columns[f"bbox{i}"] for i in range(4)])
        if not (np.isfinite(xywh).all() and (xywh[:, 2:] >= 0).all()):
            return None
    if not np.isfinite(scores).all() or (sizes < 0).any():
        return None
    ends = columns["string_ends"]
    masks = MaskText(columns["text"], np.r_[0, ends[:-1]], ends, sizes)
    error = pixels = mask_boxes = unbounded = None
    if columns.get("decoded") is not None:      # (every piece's masks, decoded as read)
        if xywh is None:
            pixels, mask_boxes, unbounded = columns["decoded"]
        else:
            pixels, unbounded = columns["decoded"]
        return SegmColumns(columns["image_id"], columns["category_id"], scores, sizes, xywh,
                           masks, pixels, mask_boxes, unbounded)
    strings = masks.strings()
    try:
        if xywh is None:
            pixels, mask_boxes, unbounded = compressed_areas(
                strings, sizes, source=source, labels=_label, boxes=True, unbounded=True,
                threads=threads, pool=pool)
        else:
            pixels, unbounded = compressed_areas(strings, sizes, source=source,
                                                 labels=_label, unbounded=True,
                                                 threads=threads, pool=pool)
    except FormatError as raised:
        error = raised
    return SegmColumns(columns["image_id"], columns["category_id"], scores, sizes, xywh,
                       masks, pixels, mask_boxes, unbounded, error)


def _label(i: int) -> str:
    return f"results[{i}]"
