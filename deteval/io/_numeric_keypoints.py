"""The keypoint results reader's fastest path: a COCO keypoint results file whose records all
have one fixed shape, parsed by numpy over its bytes, on threads, or refused (None) for the
msgspec path to read.

A record is ``{"image_id": int, "category_id": int, "keypoints": [3K numbers], "score":
number}``, optionally with ``"bbox": [4 numbers]``: the keys in the first record's order in
every record, K the first record's, no other key. That is the bbox reader's template path
(docs/fast-reader.md §2a) with longer records: between two consecutive values there is
exactly one comma, so one scan for commas gives every value's bounds, the glue between them
is compared with the first record's, and every value is converted exactly as Python's
``float(text)`` (ids as ``int(text)``) by :func:`~deteval.io._numeric_template.word_numbers`
or, for wider numbers and exponents, :func:`~deteval.io._json_numbers.parse_numbers`.
Anything else (another key, a different K, whitespace that is not the first record's, a
string, a non-integer id, a non-finite value, a negative box side) returns None: this reader
never decides what is an error. Rules: docs/keypoint-reader.md.

>>> columns = numeric_keypoint_results(
...     b'[{"image_id": 1, "category_id": 1, "keypoints": [1.5, 2, 0.9], "score": 0.25},\\n'
...     b' {"image_id": 3, "category_id": 1, "keypoints": [7, -0.0, 1e-3], "score": 1}]')
>>> columns.image_ids.tolist(), columns.keypoints.tolist(), columns.scores.tolist()
([1, 3], [[[1.5, 2.0, 0.9]], [[7.0, -0.0, 0.001]]], [0.25, 1.0])
>>> numeric_keypoint_results(b'[{"image_id": 1, "category_id": 1, "keypoints": [1, 2, 3], '
...                          b'"score": 0.2, "id": 7}]') is None
True
"""

from __future__ import annotations

import itertools
import operator
import re
from contextvars import ContextVar
from types import SimpleNamespace
from typing import Any, NamedTuple

import msgspec
import numpy as np

from .._arrays import adapt_malloc
from .._threads import resolve_threads, thread_map
from ._numeric_json import (
    PIECE_BYTES,
    _array_bounds,
    _commas,
    _glue_runs,
    _parse_deferred,
    _pieces,
    _Refused,
    _runs_text,
    _written_segments,
)
from ._numeric_template import GlueTemplate, byte_windows, word_numbers

__all__ = ["LIST_THREADS", "KeypointColumns", "fixed_records", "numeric_keypoint_lists",
           "numeric_keypoint_results", "short_values"]

_REQUIRED = frozenset({"image_id", "category_id", "keypoints", "score"})
#: Numbers converted at once (a chunk of whole records): arrays of ~512 KiB. Against 16k
#: (arrays of 128 KiB, docs/fast-reader.md §4) a quarter of the numpy calls, each a Python
#: call and a turn at the GIL: the bench's results file read on one thread in 60 ms of CPU
#: against 68 ms (9 interleaved runs, pieces of 256 KiB), the ground truth's lists in 19.7
#: against 21.6 ms; and while the calling thread holds the GIL, the results thread gets it
#: back a quarter as often.
_CHUNK_VALUES = 1 << 16
_NONE_LEFT = np.zeros(0, dtype=np.intp)
#: Bytes of text per piece of the ground truth's keypoint lists (mostly 1-3 digit numbers,
#: ~4 bytes a value): the pieces' value bounds (~32 bytes a value) stay about 1 MiB.
_LIST_PIECE_BYTES = 1 << 17
#: The threads reading the ground truth's keypoint lists in this context (None: every
#: core). :func:`deteval._inputs.load_pair` sets 1 while a results file is read on a thread
#: of its own: two busy threads on two cores, not three.
LIST_THREADS: ContextVar[int | None] = ContextVar("deteval_keypoint_list_threads",
                                                  default=None)


class KeypointColumns(NamedTuple):
    """The columns of a keypoint results file (N records of K keypoints)."""

    image_ids: np.ndarray       #: int64 (N,)
    category_ids: np.ndarray    #: int64 (N,)
    scores: np.ndarray          #: float64 (N,)
    keypoints: np.ndarray       #: float64 (N, K, 3)
    xywh: np.ndarray | None     #: float64 (N, 4) when the records give ``bbox``, else None
    #: float64 (N, 4) when they do not: :func:`~deteval.keypoints.points_extent` of every
    #: row's K keypoints (x min, x max, y min, y max), computed piece by piece as read
    extent: np.ndarray | None = None


class _Shape:
    """A fixed record shape: its keys in text order, each holding one number or an array of
    ``sizes[key]`` numbers (``arrays``); ``integers`` are read as int64 (integer literals of
    at most 18 digits, as msgspec reads ids), the others as float64.

    A record's values are numbered in text order: key ``key``'s are ``offset[key]`` on.
    """

    def __init__(self, order: tuple[str, ...], sizes: dict[str, int], *,
                 arrays: tuple[str, ...] = ("keypoints", "bbox"),
                 integers: tuple[str, ...] = ("image_id", "category_id")):
        self.order, self.sizes, self.integers = order, sizes, integers
        self.offset, values, at = {}, {}, 0
        for key in order:
            self.offset[key] = at
            values[key] = tuple(range(at, at + sizes[key]))
            at += sizes[key]
        self.width = at
        self.values, self.arrays = values, tuple(key for key in order if key in arrays)
        fields = ['"' + key.replace("e", "#") + '":'
                  + ("[" + ",".join("#" * sizes[key]) + "]" if key in self.arrays else "#")
                  for key in order]
        compact = [s.encode() for s in ("{" + ",".join(fields) + "}").split("#")]
        self.compact = SimpleNamespace(compact=compact, runs=len(compact) - 1)
        #: The key of each value (its index in ``order``), in text order.
        self.key_of = np.repeat(np.arange(len(order)), [sizes[key] for key in order])

    def template(self, raw: bytes, start: int) -> _WideGlue:
        """The glue of the file's records: its first record's as written when that is the
        compact glue plus whitespace between tokens, else the compact glue."""
        written = _written_segments(raw, start, self.compact)
        return _WideGlue(GlueTemplate(self.order, *(written or ()), values=self.values,
                                      arrays=self.arrays))

    def empty(self, n: int) -> dict[str, np.ndarray]:
        """The output columns of ``n`` records: ``(n,)`` per scalar, ``(n, size)`` per array."""
        return {key: _huge_page_empty((n, self.sizes[key]) if key in self.arrays else (n,),
                                      np.int64 if key in self.integers else np.float64)
                for key in self.order}


class _WideGlue:
    """:meth:`GlueTemplate.runs` for records of many values (a keypoint result: ``3K + 3``
    or more), the same starts and lengths, or None, for the same texts.

    ``GlueTemplate.runs`` makes the value bounds one column at a time (two numpy calls a
    column: 108 for a record of 54 values), right for the bbox reader's 7; here they are
    made by operations on the whole ``(records, values)`` block against the template's
    offsets (numpy loops a block broadcast against a row of 54 as one loop of 54 a record),
    and the glues that compare the same bytes at the same offset from their comma (``", "``
    between keypoints, written by ``json.dumps``) are compared in one gather
    (docs/keypoint-reader.md §5).
    """

    def __init__(self, glue: GlueTemplate):
        self.usable, self.head, self.tail = glue.usable, glue.head, glue.tail
        self.width = len(glue.glue)
        self.comma, self.after = glue.comma, glue.after
        groups: dict[tuple, list[int]] = {}
        for j, offset, *words in glue.checks:
            groups.setdefault((offset, *(int(w) for w in words)), []).append(j)
        self.checks = [(np.array(columns, dtype=np.intp), offset,
                        *(np.uint64(w) for w in words))
                       for (offset, *words), columns in groups.items()]

    def runs(self, text: np.ndarray, windows: np.ndarray, base: int):
        """As :meth:`GlueTemplate.runs`: ``(starts, lengths)``, intp ``(k, width)``, or
        None."""
        if not self.usable or len(text) < len(self.head) + len(self.tail):
            return None
        width = self.width
        commas = np.flatnonzero(text == 0x2C)
        k, extra = divmod(len(commas) + 1, width)
        if k == 0 or extra:
            return None
        at = np.empty((k, width), dtype=np.intp)
        flat = at.reshape(-1)
        flat[:-1] = commas
        del commas
        # (the last record's value ends where its tail begins, as if a comma followed)
        flat[-1] = len(text) - len(self.tail) + self.comma[-1]
        flat += base
        starts = np.empty_like(at)
        starts[0, 0] = base + len(self.head)
        np.add(at[:-1, -1], self.after[-1], out=starts[1:, 0])
        np.add(at[:, :-1], self.after[:-1], out=starts[:, 1:])
        lengths = at - starts
        lengths -= self.comma                           # (the values' ends less starts)
        # Every value at least a byte: the glue then tiles the text, every window below
        # starts inside it.
        if not (lengths.min() >= 1 and text[:len(self.head)].tobytes() == self.head
                and text[len(text) - len(self.tail):].tobytes() == self.tail):
            return None
        for columns, offset, *halves in self.checks:
            where = at[:, columns].ravel()
            if columns[-1] == width - 1:    # (the last record's tail has no separator)
                where = where[:-1]
            where += offset
            words = windows[where].view(np.uint64)     # (the 16 bytes as two words)
            for half, (word, mask) in enumerate(zip(halves[:2], halves[2:])):
                if mask and ((words[half::2] ^ word) & mask).any():
                    return None
        return starts, lengths


#: Transparent huge pages: 2 MiB.
_HUGE_PAGE = 1 << 21


def _huge_page_empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """``np.empty(shape, dtype)``, starting at a multiple of 2 MiB when it has 2 MiB or more.

    numpy asks the kernel for transparent huge pages for arrays of 4 MiB or more
    (``madvise``), but a huge page maps only a whole aligned 2 MiB: of a 10 MB table at
    malloc's address about half was still faulted in 4 KiB at a time (the keypoint columns
    of the bench's results file: 519 page faults, ~5 here). The block taken is 2 MiB
    larger, so from 2 MiB on it has the 4 MiB numpy advises (the bench's 2.9 MB table of
    the ground truth's lists other than zero lists: ~700 page faults, 2 here); the address
    space around the array is never touched, and the last huge page is zeroed whole by the
    kernel (~0.1 ms, against ~2.8 us a 4 KiB fault here)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if size < _HUGE_PAGE:
        return np.empty(shape, dtype=dtype)
    block = np.empty(size + _HUGE_PAGE, dtype=np.uint8)
    start = -block.__array_interface__["data"][0] % _HUGE_PAGE
    return block[start:start + size].view(dtype).reshape(shape)


def _shape_of(raw: bytes, start: int, end: int) -> _Shape | None:
    """The shape of the first record (read by msgspec), or None when it is not a
    keypoint result: the keys (``bbox`` optional), 3K >= 3 keypoint numbers, a box of 4.
    Only the shape is taken from it: every record, the first too, is then checked."""
    close = raw.find(b"}", start, end)
    if close < 0 or close - start > 1 << 16:
        return None
    try:
        first = msgspec.json.decode(raw[start:close + 1])   # (not json: ~3 ms to import)
    except ValueError:
        return None
    if not isinstance(first, dict) or not (_REQUIRED <= first.keys() <= _REQUIRED | {"bbox"}):
        return None
    points, box = first["keypoints"], first.get("bbox", [0] * 4)
    if not (isinstance(points, list) and points and len(points) % 3 == 0
            and isinstance(box, list) and len(box) == 4):
        return None
    return _Shape(tuple(first), {"image_id": 1, "category_id": 1, "score": 1,
                                 "keypoints": len(points), "bbox": 4})


def short_values(raw: bytes) -> bool:
    """Whether the file's first 64 KiB hold at most 7 digits a value on average: short
    decimals (``355.72``), which this reader converts faster than msgspec; 17-digit reprs
    (float32 values written by ``json.dumps``) are left to msgspec (docs/keypoint-reader.md).
    """
    sample = np.frombuffer(raw, dtype=np.uint8, count=min(len(raw), 1 << 16))
    values = np.count_nonzero(sample == 0x2C)
    return 0 < values and np.count_nonzero((sample - 48) < 10) <= 7 * values


def numeric_keypoint_results(raw: Any, *, threads: int | None = 1,
                             piece_bytes: int | None = None,
                             pool: Any = None) -> KeypointColumns | None:
    """The columns of a keypoint results file of one fixed record shape, or None.

    Parameters
    ----------
    raw : bytes
        The file's content.
    threads, piece_bytes
        As for the bbox reader (:func:`~deteval.io._numeric_json.numeric_results_columns`):
        the threads parsing the pieces (None: every core) and the bytes of text per piece;
        the output depends on neither.
    pool : optional
        Runs the pieces instead of ``threads`` threads: an object whose ``map(fn, items)``
        returns ``[fn(item) for item in items]`` (the results thread of
        :func:`deteval._inputs.load_pair`, which the main thread joins once the ground
        truth is read); the output does not depend on it either.

    Returns
    -------
    KeypointColumns or None
        Every number equal to Python's ``float(text)`` (ids: ``int(text)``), as msgspec reads
        them; None when the text is anything else, or holds a non-finite value or a box with
        a negative side (the msgspec path then decides).
    """
    bounds = _array_bounds(raw)
    if bounds is None:
        return None
    shape = _shape_of(raw, *bounds)
    if shape is None:
        return None
    extent = None if "bbox" in shape.order else _PieceExtents(shape.sizes["keypoints"] // 3)
    out = fixed_records(raw, bounds, shape, threads=threads, piece_bytes=piece_bytes,
                        pool=pool, piece_done=extent)
    if out is None:
        return None
    xywh = out.get("bbox")
    if xywh is not None and not (xywh[:, 2:] >= 0).all():
        return None
    n = len(out["score"])
    return KeypointColumns(out["image_id"], out["category_id"], out["score"],
                           out["keypoints"].reshape(n, -1, 3), xywh,
                           None if extent is None else extent.out)


class _PieceExtents:
    """``piece_done`` of :func:`fixed_records`: the extent of every row's keypoints
    (:func:`~deteval.keypoints.points_extent`, which is row by row), each piece's rows on the
    thread that read them, so the boxes of the results (``loadRes``' keypoint extent,
    :func:`~deteval.io.coco.columns._keypoint_boxes`) are not made afterwards on one thread."""

    def __init__(self, k: int):
        self.k = k
        self._made: dict[str, np.ndarray] = {}

    @property
    def out(self) -> np.ndarray | None:
        """``(N, 4)``, once a piece is done."""
        return self._made.get("extent")

    def __call__(self, out: dict[str, np.ndarray], row: int, stop: int) -> None:
        from ..keypoints import points_extent

        extent = self._made.get("extent")
        if extent is None:      # (a first piece: every piece's rows are counted by then)
            # dict.setdefault is one step: two threads' first pieces share the array.
            extent = self._made.setdefault("extent", _extent_table(len(out["keypoints"])))
        points = out["keypoints"][row:stop].reshape(stop - row, self.k, 3)
        extent[row:stop] = points_extent(points[:, :, 0], points[:, :, 1])


def _extent_table(n: int) -> np.ndarray:
    return np.empty((n, 4))


def numeric_keypoint_lists(raws: list, *, threads: int | None = 1) -> np.ndarray | None:
    """``(n, K, 3)`` float64: JSON arrays of 3K numbers each (the ``keypoints`` texts of
    ground-truth annotations, as msgspec's ``Raw`` gives them: valid JSON), every number as
    Python's ``float(text)``; None when one is anything else (another length, a value that
    is not a number, whitespace unlike the first's). Read as records ``{"keypoints": ...}``
    of the fixed-shape reader, in pieces of 128 KiB on up to ``threads`` threads (None:
    every core; the output does not depend on it). A text that is the first one's with
    every number written ``0`` (an object without keypoints, a third of COCO's people) is
    not parsed: its row is zeros (docs/keypoint-reader.md §2).

    >>> numeric_keypoint_lists([b"[1,2,2]", b"[0.5,7,0]", b"[0,0,0]"]).tolist()
    [[[1.0, 2.0, 2.0]], [[0.5, 7.0, 0.0]], [[0.0, 0.0, 0.0]]]
    """
    if not raws:
        return None
    try:
        points = msgspec.json.decode(raws[0])
    except ValueError:
        return None
    if not (isinstance(points, list) and points and len(points) % 3 == 0):
        return None
    zero = _zero_text(raws[0], len(points))
    same = (None if zero is None else
            np.fromiter(map(operator.eq, raws, itertools.repeat(zero)), bool, len(raws)))
    if same is None or not same.any():
        return _parsed_lists(raws, len(points), threads)
    table = _huge_page_empty((len(raws), len(points)), np.float64)
    table[same] = 0.0
    if not same.all():
        parsed = _parsed_lists(list(itertools.compress(raws, ~same)), len(points), threads)
        if parsed is None:
            return None
        table[~same] = parsed.reshape(len(parsed), -1)
    return table.reshape(len(raws), -1, 3)


#: A JSON token other than whitespace, a comma or a bracket: numbers, in a keypoint list.
_TOKEN = re.compile(rb"[^ \t\n\r,\[\]]+")


def _zero_text(first: Any, size: int) -> Any:
    """``first`` (a flat JSON array of ``size`` values) with every value written ``0``, as
    the same type (``msgspec.Raw`` or bytes: each compares equal only to its own type), or
    None when that is not a flat array of ``size`` zeros."""
    text = _TOKEN.sub(b"0", bytes(first))
    try:
        values = msgspec.json.decode(text)
    except ValueError:
        return None
    if not (isinstance(values, list) and len(values) == size
            and all(type(v) is int and v == 0 for v in values)):
        return None
    return msgspec.Raw(text) if isinstance(first, msgspec.Raw) else text


def _parsed_lists(raws: list, size: int, threads: int | None) -> np.ndarray | None:
    """:func:`numeric_keypoint_lists` of texts, parsed every one."""
    # (one join, no concatenation around it: each would copy the 4.5 MB text again)
    first, last = b'[{"keypoints":' + bytes(raws[0]), bytes(raws[-1]) + b"}]"
    text = b'},{"keypoints":'.join([first, *raws[1:-1], last] if len(raws) > 1 else
                                   [first + b"}]"])
    shape = _Shape(("keypoints",), {"keypoints": size})
    out = fixed_records(text, (1, len(text) - 1), shape, threads=threads,
                        piece_bytes=_LIST_PIECE_BYTES)
    return None if out is None else out["keypoints"].reshape(len(raws), -1, 3)


def fixed_records(raw: Any, bounds: tuple[int, int], shape: _Shape, *,
                  threads: int | None = 1, piece_bytes: int | None = None,
                  pool: Any = None, piece_done: Any = None) -> dict[str, np.ndarray] | None:
    """The columns of a JSON array (its inside ``raw[bounds[0]:bounds[1]]``) of records of
    one fixed ``shape``, or None: ``shape.empty``'s columns, filled (``pool``: as for
    :func:`numeric_keypoint_results`). ``piece_done(columns, row, stop)`` is called once for
    every piece's rows ``row:stop`` once they hold their values: on the thread that read
    the piece, or, for a piece with numbers :func:`word_numbers` left, after those are read.
    """
    threads = resolve_threads(threads)
    adapt_malloc()
    if pool is None:
        def pieces_map(fn, items):
            return thread_map(fn, items, threads)
    else:
        pieces_map = pool.map
    start, end = bounds
    glue = shape.template(raw, start)
    if not glue.usable:
        return None
    size = PIECE_BYTES if piece_bytes is None else max(int(piece_bytes), 1)
    pieces = _pieces(raw, start, end, size)
    data = np.frombuffer(raw, dtype=np.uint8)
    # A piece of r records holds width * r - 1 commas: counted first, so that each piece
    # writes its values straight into the columns.
    records = np.array(pieces_map(lambda piece: _commas(data[piece[0]:piece[1]]), pieces),
                       dtype=np.int64) + 1
    if (records % shape.width).any():
        return None
    records //= shape.width
    offsets = np.concatenate([[0], np.cumsum(records)]).tolist()
    out = shape.empty(offsets[-1])
    windows = byte_windows(data)

    def read(i: int):
        left = _read_piece(data, windows, pieces[i], glue, shape, out, offsets[i],
                           offsets[i + 1])
        if left is None and piece_done is not None:
            piece_done(out, offsets[i], offsets[i + 1])
        return left

    try:
        deferred = pieces_map(read, range(len(pieces)))
        _read_deferred([left for left in deferred if left is not None], shape, out)
    except _Refused:
        return None
    if piece_done is not None:
        for i, left in enumerate(deferred):
            if left is not None:
                piece_done(out, offsets[i], offsets[i + 1])
    return out


def _read_piece(data: np.ndarray, windows: tuple[np.ndarray, np.ndarray],
                piece: tuple[int, int], glue: GlueTemplate, shape: _Shape,
                out: dict[str, np.ndarray], row: int, stop_row: int):
    """Read one piece's records into rows ``row:stop_row`` of ``out``. Returns the numbers
    :func:`word_numbers` does not read, for :func:`_read_deferred` (or None); raises
    :class:`_Refused`."""
    buffer, windows, runs = _glue_runs(data, windows, piece, glue)
    if runs is None or len(runs[0]) != stop_row - row:
        raise _Refused
    starts, lengths = runs
    chunk = max(1, _CHUNK_VALUES // shape.width)
    left = []
    for at in range(row, stop_row, chunk):
        rows = slice(at - row, at - row + chunk)
        rest = _convert_chunk(windows[0], starts[rows], lengths[rows], shape,
                              {key: column[at:min(at + chunk, stop_row)]
                               for key, column in out.items()})
        left.append(rest + shape.width * (at - row))
    rest = np.concatenate(left)
    if len(rest) == 0:
        return None
    # The numbers left (wider, with an exponent) must be made of number characters.
    first, size = starts.ravel().take(rest), lengths.ravel().take(rest)
    text = _runs_text(buffer, first, first + size)
    if text is None:
        raise _Refused
    return (*text, rest // shape.width + row, rest % shape.width)


def _convert_chunk(words_at: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                   shape: _Shape, out: dict[str, np.ndarray]) -> np.ndarray:
    """Convert the values of some records (``starts``, ``lengths``: ``(c, width)``, text
    order) into ``out`` (those records' rows). Returns the flat indices of the values
    :func:`word_numbers` does not read (0 is written in their place); raises
    :class:`_Refused` when an integer column holds a number that is not an integer
    literal."""
    c, width = starts.shape
    values, ok, integral, negative, mantissa = word_numbers(words_at[starts.ravel()],
                                                            lengths.ravel())
    # (nearly every chunk has none: a reduction, not nonzero's pass and its temporary)
    rest = _NONE_LEFT if ok.all() else np.flatnonzero(~ok)
    if len(rest):
        values[rest], integral[rest], mantissa[rest] = 0.0, True, 0
    values = values.reshape(c, width)
    for key in shape.order:
        at = slice(shape.offset[key], shape.offset[key] + shape.sizes[key])
        column = out[key].reshape(c, -1)
        if key in shape.integers:
            if not integral.reshape(c, width)[:, at].all():
                raise _Refused
            integers = mantissa.view(np.int64).reshape(c, width)[:, at]
            np.negative(integers, out=column, where=negative.reshape(c, width)[:, at])
            np.copyto(column, integers, where=~negative.reshape(c, width)[:, at])
        else:
            column[:] = values[:, at]
    return rest


def _read_deferred(deferred: list, shape: _Shape, out: dict[str, np.ndarray]) -> None:
    """Convert the numbers :func:`word_numbers` left (every piece's, at once:
    :func:`parse_numbers`) and write them into their rows; raises :class:`_Refused` when one
    is not a JSON number, an integer column's not an integer literal, or a value not
    finite."""
    if not deferred:
        return
    values, integral, integers, rows, column = _parse_deferred(deferred)
    if not np.isfinite(values).all():
        raise _Refused
    key_of = shape.key_of.take(column)
    for index, key in enumerate(shape.order):
        sel = np.flatnonzero(key_of == index)
        if len(sel) == 0:
            continue
        target = out[key].reshape(len(out[key]), -1)
        where = (rows[sel], column[sel] - shape.offset[key])
        if key in shape.integers:
            if not integral[sel].all():
                raise _Refused
            target[where] = integers[sel]
        else:
            target[where] = values[sel]
