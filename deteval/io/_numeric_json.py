"""The bbox results reader's fastest path: a COCO results file in the common layout parsed
by numpy over its bytes, on threads, or refused (None) for the msgspec path to read.

A file is read here only when it is, exactly, a JSON array of objects whose keys are
``image_id``, ``category_id``, ``bbox`` and ``score`` (in the same order in every record),
with integer ids, a list of four numbers as the box and a number as the score, any JSON
whitespace between tokens. Everything is verified: the text minus its numbers must be the
record template repeated (the *skeleton*), every number must match JSON's number grammar,
and every value is converted exactly as Python's ``float(text)`` (correctly rounded), as
msgspec does. Anything else returns None. The rules and the exactness argument are in
docs/fast-reader.md.

>>> ids, cats, scores, xywh = numeric_results_columns(
...     b'[{"image_id": 1, "category_id": 3, "bbox": [1.5, 2, 3e1, 4], "score": 0.9}]')
>>> ids.tolist(), cats.tolist(), scores.tolist(), xywh.tolist()
([1], [3], [0.9], [[1.5, 2.0, 30.0, 4.0]])
>>> numeric_results_columns(b'[{"image_id": 1.0, "category_id": 3, "bbox": [1, 2, 3, 4], '
...                         b'"score": 0.9}]') is None
True
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .._threads import resolve_threads, thread_map
from ._json_numbers import _MAX_WIDTH, _parse_numbers, parse_numbers
from ._numeric_template import GlueTemplate, byte_windows, word_numbers

__all__ = ["PIECE_BYTES", "numeric_results_columns", "parse_numbers"]

#: Bytes of text in one piece: pieces are cut at record boundaries, parsed on their own (on
#: threads) and joined in order, so the output is the same for every number of threads.
PIECE_BYTES = 1 << 20

_KEYS = ("image_id", "category_id", "bbox", "score")
#: Where each value of a record goes: image id, category id, x, y, w, h, score.
_SLOT = {"image_id": (0,), "category_id": (1,), "bbox": (2, 3, 4, 5), "score": (6,)}
_WS = b" \t\n\r"
_OPENING = re.compile(rb"[ \t\n\r]*\[")
_RECORD_END = re.compile(rb"\}[ \t\n\r]*,")


def numeric_results_columns(raw: Any, *, threads: int | None = 1,
                            piece_bytes: int | None = None, on_rows: Any = None):
    """The columns of a bbox results file in the common layout, or None.

    Parameters
    ----------
    raw : bytes
        The whole file.
    threads : int or None
        Threads to parse the pieces on (None: every core). The output does not depend on it.
    piece_bytes : int, optional
        Bytes of text per piece (:data:`PIECE_BYTES`); tests use small pieces.
    on_rows : callable, optional
        ``on_rows(columns)`` is called once the four columns are allocated (their values
        not yet written) and returns a function ``rows_done(rows)``, called with the rows
        (a slice) of each piece on the thread that read it, once they hold their values,
        and then, on the calling thread, with the rows (an index array, maybe with
        repeats) whose numbers the pieces left to the end (:func:`_read_deferred`; 0 and
        0.0 stood in their place until then). The results reader computes its image and
        category rows so, beside the parse (docs/fast-reader.md §4). Whatever it does,
        the columns are the same; when the text is refused, what it made is not used.

    Returns
    -------
    tuple of ndarray or None
        ``(image_ids, category_ids, scores, xywh)``: int64 ``(N,)``, int64 ``(N,)``, float64
        ``(N,)``, float64 ``(N, 4)``, each value equal to Python's ``float(text)`` (ids:
        ``int(text)``), or None when the text is anything else, holds no record, a
        non-finite value or a negative width or height (the msgspec path then decides).
    """
    threads = resolve_threads(threads)
    bounds = _array_bounds(raw)
    if bounds is None or len(raw) < 16:
        return None
    start, end = bounds
    order = _key_order(raw, start, end)
    if order is None:
        return None
    layout = _Layout(raw, start, order)
    size = PIECE_BYTES if piece_bytes is None else max(int(piece_bytes), 1)
    pieces = _last_pieces_quartered(raw, _pieces(raw, start, end, size))
    data = np.frombuffer(raw, dtype=np.uint8)
    # Every valid piece of k records holds 7k - 1 commas (6 in a record, 1 between two):
    # counted first, so that each piece writes its values straight into the columns.
    records = np.array(thread_map(lambda piece: _commas(data[piece[0]:piece[1]]), pieces,
                                  threads), dtype=np.int64) + 1
    if (records % 7).any():
        return None
    records //= 7
    offsets = np.concatenate([[0], np.cumsum(records)]).tolist()
    n = offsets[-1]
    columns = (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
               np.empty(n, dtype=np.float64), np.empty((n, 4), dtype=np.float64))
    windows = byte_windows(data)
    rows_done = None if on_rows is None else on_rows(columns)

    def read(i: int):
        left = _read_piece(data, windows, pieces[i], layout, columns, offsets[i],
                           offsets[i + 1])
        if rows_done is not None:
            rows_done(slice(offsets[i], offsets[i + 1]))
        return left

    try:
        deferred = thread_map(read, range(len(pieces)), threads)
        changed = _read_deferred([left for piece in deferred if piece for left in piece],
                                 columns)
    except _Refused:
        return None
    if rows_done is not None and changed is not None:
        rows_done(changed)
    return columns


class _Refused(Exception):
    """The text is not records of the grammar, or holds a non-finite value or a negative
    width or height: the reader returns None."""


def _commas(text: np.ndarray) -> int:
    """The commas in ``text``, counted 256 KiB at a time (no large temporary)."""
    return sum(np.count_nonzero(text[at:at + (1 << 18)] == 0x2C)
               for at in range(0, len(text), 1 << 18))


class _Layout:
    """The templates of a file's records: the compact one and the file's own (from its first
    record, :func:`_written_segments`) for the general path, and the file's own glue for the
    template path (:class:`GlueTemplate`)."""

    def __init__(self, raw: bytes, start: int, order: tuple[str, ...]):
        self.compact = _Template(order)
        written = _written_segments(raw, start, self.compact)
        self.written = None
        if written is not None and len(written[0][-1] + written[1]) <= _MAX_WIDTH:
            self.written = _Template(order, *written)
        self.glue = GlueTemplate(order, *written) if written else GlueTemplate(order)
        position = {column: at for at, column in enumerate(self.glue.columns.tolist())}
        #: Where the image id, category id, x and score are in a record's values (text order).
        self.ids = [position[0], position[1]]
        self.box, self.score = position[2], position[6]


#: Records converted at once by the template path: a piece's first chunk is small
#: (``_FIRST_CHUNK_RECORDS``: a chunk with more values left to parse_numbers than records,
#: 17-digit reprs, sends its piece to the general path, which converts them without the
#: template path's extra copy), the rest of the piece goes in chunks of ``_CHUNK_RECORDS``
#: (a whole 1 MiB piece): each numpy call then runs ~100k numbers without the GIL, so two
#: threads rarely wait for it (chunks of 2048 records made ~6 times as many calls, whose
#: glue, holding the GIL, kept two threads from running at once; docs/fast-reader.md §4).
_FIRST_CHUNK_RECORDS = 2048
_CHUNK_RECORDS = 16384


def _read_piece(data: np.ndarray, windows: tuple[np.ndarray, np.ndarray],
                piece: tuple[int, int], layout: _Layout, columns: tuple[np.ndarray, ...],
                row: int, stop_row: int):
    """Read one piece into rows ``row:stop_row`` of ``columns``: by the template path when
    its glue is the file's own, else by the general path. Returns the numbers the template
    path left to :func:`_read_deferred` (or None); raises :class:`_Refused`."""
    out = tuple(column[row:stop_row] for column in columns)
    buffer, windows, runs = _glue_runs(data, windows, piece, layout.glue)
    if runs is not None and len(runs[0]) == len(out[0]):
        starts, lengths = runs
        left = []
        cuts = [0, *range(min(_FIRST_CHUNK_RECORDS, len(starts)), len(starts),
                          _CHUNK_RECORDS), len(starts)]
        for at, end in zip(cuts[:-1], cuts[1:]):
            chunk = slice(at, end)
            rest = _template_chunk(windows[0], starts[chunk], lengths[chunk], layout,
                                   tuple(column[chunk] for column in out))
            if rest is None or len(rest) > max(end - at, _FIRST_CHUNK_RECORDS):
                break       # (wide values everywhere, 17-digit reprs: the general path)
            left.append(rest + 7 * at)
        else:
            rest = np.concatenate(left)
            if len(rest) == 0:
                return None
            # The numbers left (wider, with an exponent) must be made of number
            # characters; otherwise the general path reads the piece.
            first, size = starts.ravel().take(rest), lengths.ravel().take(rest)
            text = _runs_text(buffer, first, first + size)
            if text is not None:
                return [(*text, rest // 7 + row, layout.glue.columns.take(rest % 7))]
    parsed = _parse_piece(data[piece[0]:piece[1]], layout.compact, layout.written)
    if parsed is None or len(parsed[0]) != len(out[0]):
        raise _Refused
    ids, values = parsed
    out[0][:], out[1][:], out[2][:], out[3][:] = ids[:, 0], ids[:, 1], values[:, 4], values[:, :4]
    if not (np.isfinite(values).all() and (values[:, 2:4] >= 0).all()):
        raise _Refused
    return None


def _glue_runs(data: np.ndarray, windows: tuple[np.ndarray, np.ndarray],
               piece: tuple[int, int], glue: GlueTemplate):
    """``(buffer, windows, runs)``: :meth:`GlueTemplate.runs` of a piece without its
    leading and trailing whitespace (None when that is not JSON whitespace or the glue
    does not tile it), with the buffer and windows its offsets refer to (the file's, or a
    padded copy of a piece at the file's end: 16-byte reads need room)."""
    inside = _inside(data, *piece)
    if inside is None:
        return data, windows, None
    begin, stop = inside
    buffer, base = data, begin
    if stop + 16 > len(data):
        buffer = np.zeros(stop - begin + 16, dtype=np.uint8)
        buffer[:stop - begin] = data[begin:stop]
        windows, base = byte_windows(buffer), 0
    return buffer, windows, glue.runs(buffer[base:base + stop - begin], windows[1], base)


def _template_chunk(words_at: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                    layout: _Layout, out: tuple[np.ndarray, ...]) -> np.ndarray | None:
    """Convert the values of some records (``starts``, ``lengths``: ``(c, 7)``, text order)
    into ``out``. Returns the flat indices of the values :func:`word_numbers` does not read
    (wider, with an exponent, or not numbers: rare; 0 is written in their place), or None
    when an id is not an integer literal (the general path then reads the piece); raises
    :class:`_Refused` for a negative width or height."""
    c = len(starts)
    values, ok, integral, negative, mantissa = word_numbers(words_at[starts.ravel()],
                                                            lengths.ravel())
    rest = np.flatnonzero(~ok)
    if len(rest):
        values[rest], integral[rest], mantissa[rest] = 0.0, True, 0
    values = values.reshape(c, 7)
    if not integral.reshape(c, 7)[:, layout.ids].all():
        return None
    ids = mantissa.view(np.int64).reshape(c, 7)[:, layout.ids]
    np.negative(ids, out=ids, where=negative.reshape(c, 7)[:, layout.ids])
    out[0][:], out[1][:] = ids[:, 0], ids[:, 1]
    out[2][:] = values[:, layout.score]
    for j in range(4):      # (column by column: numpy loops (c, 4) blocks as c loops of 4)
        out[3][:, j] = values[:, layout.box + j]
    if not ((out[3][:, 2] >= 0).all() and (out[3][:, 3] >= 0).all()):
        raise _Refused
    return rest


def _runs_text(data: np.ndarray, first: np.ndarray, last: np.ndarray):
    """``(text, begins, lengths)``: the texts ``data[first[i]:last[i]]`` copied one after
    the other with a comma after each, or None when one holds a byte that is not a number
    character (``0-9 . + - e E /``)."""
    lengths = last - first
    run = np.repeat(np.arange(len(first)), lengths)     # the text each byte belongs to
    begins = np.cumsum(lengths + 1) - lengths - 1       # where each starts in the copy
    into = np.arange(len(run)) + run
    text = np.full(len(run) + len(first), 0x2C, dtype=np.uint8)
    text[into] = data[into + (first - begins)[run]]
    number = (((text - 0x2B) < 15) & (text != 0x2C)) | ((text | 0x20) == 0x65)
    return (text, begins, lengths) if np.count_nonzero(number) == len(run) else None


def _read_deferred(deferred: list, columns: tuple[np.ndarray, ...]) -> np.ndarray | None:
    """Convert the numbers the template path left (every piece's, at once:
    :func:`parse_numbers`) and write them into their rows; returns those rows (None when
    there are none); raises :class:`_Refused` when one is not a JSON number, an id not an
    integer literal, a value not finite or a width or height negative."""
    if not deferred:
        return None
    values, integral, integers, rows, which = _parse_deferred(deferred)
    ids = which < 2
    if not (integral[ids].all() and np.isfinite(values).all()
            and (values[(which == 4) | (which == 5)] >= 0).all()):
        raise _Refused
    for column in (0, 1):
        columns[column][rows[which == column]] = integers[which == column]
    box = (which >= 2) & (which < 6)
    columns[3][rows[box], which[box] - 2] = values[box]
    columns[2][rows[which == 6]] = values[which == 6]
    return rows


def _parse_deferred(deferred: list) -> tuple[np.ndarray, ...]:
    """``(values, integral, integers, rows, which)`` of the numbers the template path left,
    every piece's ``(text, begins, lengths, rows, which)`` converted at once by
    :func:`parse_numbers` (also the keypoint reader's); raises :class:`_Refused` when one is
    not a JSON number."""
    texts = [d[0] for d in deferred]
    shift = np.repeat(np.cumsum([0] + [len(t) for t in texts[:-1]]), [len(d[1]) for d in deferred])
    begins = np.concatenate([d[1] for d in deferred]) + shift
    lengths = np.concatenate([d[2] for d in deferred])
    parsed = parse_numbers(np.concatenate(texts), begins, begins + lengths)
    if parsed is None:
        raise _Refused
    return (*parsed, np.concatenate([d[3] for d in deferred]),
            np.concatenate([d[4] for d in deferred]))


def _inside(data: np.ndarray, begin: int, stop: int) -> tuple[int, int] | None:
    """A piece's offsets without its leading and trailing JSON whitespace (the separator's
    after a cut, the array's), or None when a byte stripped is not JSON whitespace or there
    are more than 64 of them (the general path then reads the piece)."""
    for _ in range(64):
        if begin == stop or data[begin] > 32:
            break
        if data[begin] not in _WS:
            return None
        begin += 1
    for _ in range(64):
        if stop == begin or data[stop - 1] > 32:
            return begin, stop
        if data[stop - 1] not in _WS:
            return None
        stop -= 1
    return None


def _array_bounds(raw: bytes) -> tuple[int, int] | None:
    """The offsets just inside the outer ``[`` and ``]`` of a non-empty array, or None."""
    opening = _OPENING.match(raw)
    end = len(raw)
    while end and raw[end - 1] in _WS:      # (no copy of the text, as rstrip would make)
        end -= 1
    end -= 1
    if opening is None or end < opening.end() or raw[end] != ord("]"):
        return None
    return opening.end(), end


def _key_order(raw: bytes, start: int, end: int) -> tuple[str, ...] | None:
    """The order of the four keys in the first record (the skeleton then checks every
    record has them, alone and in this order), or None when one is missing."""
    close = raw.find(b"}", start, end)
    if close < 0:
        return None
    first = raw[start:close]
    at = {key: first.find(b'"' + key.encode() + b'"') for key in _KEYS}
    if min(at.values()) < 0:
        return None
    return tuple(sorted(_KEYS, key=at.__getitem__))


class _Template:
    """What every record of a key order looks like.

    A record's text is glue (``{"imag``, ``_id":``, ``,"cat``, ...) and runs of number
    characters (``0-9 . + - e E /``). The keys' own ``e`` letters are such runs: ``e_runs``
    lists their positions among a record's runs, ``slots`` the positions of the seven values
    in the order image id, category id, x, y, w, h, score. ``segments`` are the glue without
    whitespace, or as a file writes it (:func:`_written_template`), and ``separator`` what
    comes between a record's ``}`` and the next ``{``. ``gaps`` are the glue bytes before
    each run (the first counting the end of the previous record and the separator),
    ``head`` and ``tail`` the glue before a piece's first run and after its last, ``checks``
    the glue before each run as ``(run, offset, word, mask)`` comparisons of 8 bytes.
    """

    def __init__(self, order: tuple[str, ...], segments: list[bytes] | None = None,
                 separator: bytes = b","):
        fields, runs = [], []
        for key in order:
            runs += ["e"] * key.count("e")
            value = "[#,#,#,#]" if key == "bbox" else "#"
            runs += list(_SLOT[key])
            fields.append('"' + key.replace("e", "#") + '":' + value)
        self.compact = [g.encode() for g in ("{" + ",".join(fields) + "}").split("#")]
        segments = self.compact if segments is None else segments
        self.e_runs = np.array([i for i, r in enumerate(runs) if r == "e"], dtype=np.intp)
        self.slots = np.array([runs.index(s) for s in range(7)], dtype=np.intp)
        self.runs = len(runs)
        self.head, self.tail = len(segments[0]), len(segments[-1])
        before = [segments[-1] + separator + segments[0], *segments[1:-1]]
        self.gaps = np.array([len(g) for g in before])
        self.tail_text = segments[-1]
        self.before_head = np.frombuffer(segments[-1] + separator, dtype=np.uint8)
        self.checks = []
        for run, glue in enumerate(before):
            for at in range(0, len(glue), 8):
                chunk = glue[at:at + 8]
                self.checks.append((run, at, int.from_bytes(chunk.ljust(8, b"\0"), "little"),
                                    (1 << (8 * len(chunk))) - 1))


_FIRST_TWO = re.compile(rb"[ \t\n\r]*(\{[^{}]*\})([ \t\n\r]*,[ \t\n\r]*)\{")
_RUN = re.compile(rb"[0-9.eE+/-]+")
_WS_RUN = re.compile(rb"[ \t\n\r]+")
#: Whitespace between two bytes neither of which is structural: removing it would join them.
_JOINING = re.compile(rb"[^ \t\n\r,:\[\]{}][ \t\n\r]+[^ \t\n\r,:\[\]{}]")


def _written_segments(raw: bytes, start: int,
                      compact: _Template) -> tuple[list[bytes], bytes] | None:
    """The glue of the file's first record as it writes it (whitespace included) and the
    text between its ``}`` and the next ``{``, when that glue is the compact template's plus
    whitespace between tokens: files written by one call of a JSON writer (``json.dumps``,
    with or without ``indent``) are then checked without removing their whitespace. None
    otherwise (a one-record file, or glue that is not that), and each piece is checked
    without whitespace."""
    first = _FIRST_TWO.match(raw, start)
    if first is None:
        return None
    record, separator = first.group(1), first.group(2)
    segments = _RUN.split(record)
    if (len(segments) != compact.runs + 1 or _JOINING.search(_RUN.sub(b"0", record))
            or [_WS_RUN.sub(b"", g) for g in segments] != compact.compact):
        return None
    return segments, separator


def _pieces(raw: bytes, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """``(begin, stop)`` offsets of consecutive pieces of the array's inside, cut after a
    ``}`` followed by a ``,``: a record boundary of any text the skeleton accepts (a cut
    elsewhere makes a piece fail its skeleton, which refuses the file).

    The text is cut into ``ceil(length / size)`` pieces of about equal length (each cut at
    the first boundary after its share), so the last piece is no longer than the others:
    threads that take pieces in turn then end together (a last piece of up to ``2 * size``
    kept one thread busy alone for its second half: 12-15 ms of a 500k-result file).

    >>> raw = b'[' + b','.join([b'{"a": 1}'] * 10) + b']'
    >>> [raw[b:e].count(b'{') for b, e in _pieces(raw, 1, len(raw) - 1, 30)]
    [4, 3, 3]
    """
    n = max(1, -(-(end - start) // max(size, 1)))
    share = (end - start) / n
    pieces, pos = [], start
    for k in range(1, n):
        cut = _RECORD_END.search(raw, max(pos, start + round(k * share)), end)
        if cut is None:
            break
        pieces.append((pos, cut.start() + 1))
        pos = cut.end()
    pieces.append((pos, end))
    return pieces


def _last_pieces_quartered(raw: bytes, pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``pieces`` with the last two each cut in four (at record boundaries, as
    :func:`_pieces` cuts), when there are three or more: threads that take the pieces in
    turn then end within about a quarter piece of each other (with whole 1 MiB pieces, one
    of two threads read the end of the bench's file 4-6 ms alone). The cuts depend on the
    text alone, so the columns are the same.

    >>> raw = b'[' + b','.join([b'{"a": 1}'] * 24) + b']'
    >>> pieces = _pieces(raw, 1, len(raw) - 1, 72)
    >>> [raw[b:e].count(b'{') for b, e in pieces]
    [9, 8, 7]
    >>> [raw[b:e].count(b'{') for b, e in _last_pieces_quartered(raw, pieces)]
    [9, 3, 2, 2, 1, 2, 2, 2, 1]
    """
    if len(pieces) < 3:
        return pieces
    return pieces[:-2] + [part for begin, stop in pieces[-2:]
                          for part in _pieces(raw, begin, stop, -(-(stop - begin) // 4))]


def _parse_piece(text: np.ndarray, compact: _Template,
                 written: _Template | None) -> tuple[np.ndarray, np.ndarray] | None:
    """``(ids (k, 2) int64, values (k, 5) float64)`` of a piece of records separated by
    commas, or None when it is not exactly that: checked against the file's own layout
    first (``written``), else without its whitespace against the compact template."""
    low = text <= 32
    if not low.any():
        return _parse_records(text, compact)
    begin = int(np.argmin(low))                 # leading and trailing whitespace
    stop = len(text) - int(np.argmin(low[::-1]))
    # (the bytes around must be JSON whitespace: a control byte after a cut is not)
    if (written is not None and begin < stop and not text[:begin].tobytes().strip(_WS)
            and not text[stop:].tobytes().strip(_WS)):
        parsed = _parse_records(text[begin:stop], written)
        if parsed is not None:
            return parsed
    text = _without_whitespace(text, low)
    return None if text is None else _parse_records(text, compact)


def _parse_records(text: np.ndarray, template: _Template):
    """:func:`_parse_piece` of a text without leading or trailing whitespace, against one
    template."""
    # (not folded with 0x20 first: that would make control bytes 0x0B..0x19 + - . / 0-9)
    number = ((text - 0x2B) < 15) & (text != 0x2C)      # + - . / 0-9 (',' is not)
    letter_e = (text | 0x20) == 0x65                   # e E
    number |= letter_e
    if len(text) < 2 or number[0] or number[-1]:
        return None
    # Runs start and end where the class changes: alternately a first byte and one past a
    # last byte, since the piece begins and ends with glue.
    edges = np.flatnonzero(number[1:] != number[:-1]) + 1
    first, last = edges[0::2], edges[1::2]
    runs = template.runs
    k = len(first) // runs
    if k == 0 or k * runs != len(first) or len(last) != len(first):
        return None
    # The skeleton: each glue between runs as long as the template's and equal to it.
    gaps = np.empty(len(first), dtype=np.int64)
    gaps[0] = template.gaps[0]
    np.subtract(first[1:], last[:-1], out=gaps[1:])
    if not (first[0] == template.head and len(text) - last[-1] == template.tail
            and (gaps.reshape(k, runs) == template.gaps).all()
            and text[last[-1]:].tobytes() == template.tail_text):
        return None
    padded = np.zeros(len(text) + 2 * _MAX_WIDTH, dtype=np.uint8)
    padded[_MAX_WIDTH:_MAX_WIDTH + len(text)] = text
    # The end of a record and a comma before the first (its glue then reads like the others').
    padded[_MAX_WIDTH - len(template.before_head):_MAX_WIDTH] = template.before_head
    # Every offset of the text read as a little-endian 8-byte word: an unaligned view.
    words_at = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    glue_at = (first - gaps).reshape(k, runs) + _MAX_WIDTH
    for run, offset, word, mask in template.checks:
        if not ((words_at[glue_at[:, run] + offset] & np.uint64(mask)) == np.uint64(word)).all():
            return None
    first, last = first.reshape(k, runs), last.reshape(k, runs)
    if len(template.e_runs):
        key_runs = first[:, template.e_runs]
        if not ((last[:, template.e_runs] - key_runs == 1).all()
                and (text[key_runs] == 0x65).all()):
            return None
    slots = template.slots
    # Only the keys' e letters: no number has an exponent (their work is skipped).
    exponents = np.count_nonzero(letter_e) != k * len(template.e_runs)
    parsed = _parse_numbers(text, words_at, first[:, slots].ravel(), last[:, slots].ravel(),
                            exponents)
    if parsed is None:
        return None
    values, integral, integers = (column.reshape(k, 7) for column in parsed)
    if not integral[:, :2].all():
        return None
    return integers[:, :2].copy(), values[:, 2:].copy()


def _without_whitespace(text: np.ndarray, low: np.ndarray) -> np.ndarray | None:
    """The text without its whitespace, or None when a byte below 0x21 is not JSON
    whitespace or a whitespace run does not separate tokens.

    A run must touch a structural character (``, : [ ] { }``) on one side: between two
    other bytes (two number characters, a key's letters, a quote and a letter) removing it
    would join what it separates."""
    blank = text[low]
    if not ((blank == 0x20) | (blank == 0x0A) | (blank == 0x0D) | (blank == 0x09)).all():
        return None
    kept = ~low
    after_blank = np.empty_like(low)
    after_blank[0] = False
    after_blank[1:] = low[:-1]
    packed = text[kept]
    after_blank = after_blank[kept]
    folded = packed | 0x20                      # [ ] -> { }
    structural = (packed == 0x2C) | (packed == 0x3A) | (folded == 0x7B) | (folded == 0x7D)
    joined = after_blank[1:] & ~structural[1:] & ~structural[:-1]
    return None if joined.any() else packed

