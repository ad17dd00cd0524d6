"""Fast JSON loading shared by the readers, and column extraction with exact error records.

Parsing a results file creates millions of small Python objects, none of which can be
garbage. Python's cyclic collector would scan them again and again while they are
created, so it is paused during parsing and extraction (it is restored afterwards,
whatever happens).
"""

from __future__ import annotations

import array
import gc
import itertools
import math
import operator
import os
import re
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from ..errors import FormatError

if TYPE_CHECKING:
    import orjson

__all__ = ["MAX_INPUT_BYTES", "FileBytes", "JSONDocument", "array_pieces", "box_column",
           "check_input_file", "check_utf8", "gc_paused", "load_json", "number_column",
           "open_input", "prefetch_bytes", "read_bytes", "read_json_bytes", "source_name",
           "typed_decode"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block (re-entrant safe)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def source_name(source: Any) -> str:
    """A short name for an input, used in error messages."""
    if isinstance(source, (str, os.PathLike)):
        return str(source)
    return f"<{type(source).__name__}>"


class JSONDocument:
    """A parsed JSON file and what its raw text tells about its values.

    Checking the type of every parsed value costs as much as converting it. The raw text
    answers two questions for a scan at memory speed:

    * ``may_hold_bools``: a ``true``, ``false`` or ``null`` literal needs a ``u`` or an ``l``,
      letters that the keys of a COCO results file do not contain;
    * ``quote_count``: when it is exactly twice the number of keys, every string in the file
      is a key, so no value is a string.
    """

    __slots__ = ("data", "may_hold_bools", "quote_count")

    def __init__(self, data: Any, raw: bytes):
        self.data = data
        self.may_hold_bools = b"u" in raw or b"l" in raw
        self.quote_count = raw.count(b'"')

    def values_are_plain(self, records: Sequence[Any]) -> bool:
        """True when ``records`` (the file's list of flat objects) holds only numbers and
        lists as values: no string, boolean or null anywhere."""
        # With dict records only, the file has 2 * (keys + string values) unescaped quotes
        # at least (escaped ones only add), so equality with 2 * keys means no string values.
        if self.may_hold_bools or not all(type(r) is dict for r in records):
            return False
        return self.quote_count == 2 * sum(map(len, records))


def _json_error_hint(raw: bytes, err: orjson.JSONDecodeError) -> str:
    at = raw[err.pos:err.pos + 9]
    if at.startswith((b"NaN", b"Infinity", b"-Infinity")):
        return (f"NaN and Infinity are not JSON, and a box or score must be finite "
                f"(line {err.lineno} column {err.colno})")
    if "surrogate" in err.msg:
        return ("a string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff without its "
                f"pair), which is not a character (line {err.lineno} column {err.colno})")
    if "depth limit" in err.msg or "recursion" in err.msg:
        return (f"arrays or objects nested more than 1024 deep (line {err.lineno} column "
                f"{err.colno}); a COCO file nests 5 deep")
    return str(err)


MAX_INPUT_BYTES = 1 << 34
"""The largest input file read (16 GiB): a file that grows while it is read, or a special
file posing as a regular one, cannot exhaust memory."""

_SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _special_kind(mode: int) -> str:
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), "not a regular file")


def check_input_file(path: str | os.PathLike, *, what: str) -> os.stat_result:
    """Refuse, before opening it, a path that is not a regular file (or a link to one).

    A FIFO would block the reader forever and a device such as ``/dev/zero`` never ends, so
    only regular files are read. Returns the file's ``os.stat`` result.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise FormatError(f"{what} file does not exist", source=str(path)) from None
    except OSError as err:
        raise FormatError(f"cannot read {what} file: {err.strerror}", source=str(path)) from None
    if stat.S_ISDIR(info.st_mode):
        raise FormatError(f"{what} file expected, found a directory", source=str(path))
    if not stat.S_ISREG(info.st_mode):
        raise FormatError(f"{what} file expected, found {_special_kind(info.st_mode)}: only "
                          "regular files are read (a pipe could block forever, a device "
                          "never end)", source=str(path))
    return info


def open_input(path: str | os.PathLike, *, what: str) -> BinaryIO:
    """Open a regular file for reading in binary mode, with errors that name it.

    The path is checked before it is opened (:func:`check_input_file`), and opened without
    blocking, so that a file swapped for a FIFO in between cannot hang the reader either.
    """
    check_input_file(path, what=what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise FormatError(f"cannot read {what} file: {err.strerror}", source=str(path)) from None
    handle = os.fdopen(fd, "rb")
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        handle.close()
        raise FormatError(f"{what} file expected, found {_special_kind(mode)}",
                          source=str(path))
    return handle


class FileBytes(os.PathLike):
    """A path whose content :func:`read_bytes` read already (``what`` names the content, as
    for :func:`read_bytes`): it stands for the path everywhere (``os.fspath``, ``str``, so
    errors name the file), and the first :func:`read_bytes` of the same ``what`` takes the
    bytes instead of reading the file again (the next one reads the file).

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile(suffix=".json") as f:
    ...     _ = f.write(b"[1]"); f.flush()
    ...     given = FileBytes(f.name, b"[2]", what="results")
    ...     first, again = (read_bytes(given, what="results") for _ in range(2))
    ...     str(given) == f.name, first, again
    (True, b'[2]', b'[1]')
    """

    __slots__ = ("path", "raw", "tried", "what")

    def __init__(self, path: str | os.PathLike, raw: bytes | None, *, what: str,
                 tried: bool = False):
        self.path, self.raw, self.what = path, raw, what
        #: The numpy reader of these bytes ran already and gave no detections (a text it
        #: refuses, or columns the ground truth does not take): not run on them again.
        self.tried = tried

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"FileBytes({str(self.path)!r}, {len(self.raw or b'')} bytes)"

    def take(self, what: str) -> bytes | None:
        """The bytes, handed over once (None after, or for another ``what``)."""
        if what != self.what:
            return None
        raw, self.raw = self.raw, None
        return raw


def prefetch_bytes(path: str | os.PathLike, *, what: str):
    """Start reading ``path`` (:func:`read_bytes`) on a thread; returns a function that
    waits for it and gives a :class:`FileBytes`, or raises the error reading it raised.

    The read runs without the GIL (a system call), so a caller can read another file
    meanwhile: ``evaluate_coco(gt_path, dt_path)`` reads the results file while it parses
    the ground truth.
    """
    import threading

    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["raw"] = read_bytes(path, what=what)
        except BaseException as error:     # raised by the caller, below
            done["error"] = error

    thread = threading.Thread(target=run, name="deteval-read", daemon=True)
    thread.start()

    def result() -> FileBytes:
        thread.join()
        if "error" in done:
            raise done.pop("error")
        return FileBytes(path, done.pop("raw"), what=what)

    return result


def read_bytes(path: str | os.PathLike, *, what: str, allow_empty: bool = False,
               limit: int | None = None) -> bytes:
    """The content of a file that should hold ``what``, with errors that name it.

    Only regular files are read (:func:`open_input`), at most ``limit`` bytes
    (:data:`MAX_INPUT_BYTES` by default); an empty file is an error unless ``allow_empty``.
    A :class:`FileBytes` of the same ``what`` hands its bytes over (read with the defaults).
    """
    if isinstance(path, FileBytes) and not allow_empty and limit is None:
        raw = path.take(what)
        if raw is not None:
            return raw
    limit = MAX_INPUT_BYTES if limit is None else limit
    too_large = FormatError(f"{what} file is larger than {limit} bytes, the most deteval reads",
                            source=str(path))
    try:
        with open_input(path, what=what) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise too_large
            raw = handle.read(size + 1)     # one byte more tells a file that grew
            if len(raw) > size:             # (or a /proc file, whose size reads 0)
                parts = [raw]
                while chunk := handle.read(1 << 20):
                    parts.append(chunk)
                    size += len(chunk)
                    if size > limit:
                        raise too_large
                raw = b"".join(parts)
    except OSError as err:
        raise FormatError(f"cannot read {what} file: {err.strerror}", source=str(path)) from None
    if not allow_empty and not raw.strip():
        raise FormatError(f"{what} file is empty", source=str(path))
    return raw


def typed_decode(decoder: Any, raw: bytes) -> Any:
    """``decoder.decode(raw)``, or None when msgspec refuses the text (the general path then
    reads the file and words the error). Nesting too deep for msgspec's recursion is refused
    the same way: orjson then reports the depth with the line and column."""
    import msgspec

    try:
        return decoder.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return None


#: Bytes of JSON text decoded at once by :func:`array_pieces`' readers: the parsed objects of
#: one piece (about 6 times its size) are all that is alive at a time.
PIECE_BYTES = 1 << 20

_RECORD_BOUNDARY = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")


def array_pieces(raw: bytes, piece_bytes: int | None = None) -> Iterator[bytes]:
    """The text of a JSON array of objects as consecutive arrays of about ``piece_bytes``.

    Decoding a large results file piece by piece keeps one piece's Python objects alive
    at a time instead of the whole file's (a 2M-record file: ~1 GB of objects), and gives
    the same records in the same order. A cut is made only at ``}``, ``,``, ``{`` (JSON
    whitespace between) outside strings (an even number of quotes since the last cut; a
    file holding an escaped quote is not cut). A cut inside a nested array or object leaves
    a piece with unclosed brackets, which no decoder accepts; so for any text, either every
    piece decodes and their records are the file's, or some piece fails to decode and the
    caller reads the whole file its general way (whose error then names the record).
    Text that is not a bracketed array, or small, is yielded whole.

    >>> list(array_pieces(b'[{"a": 1}, {"a": "},{"}, {"a": 3}]', 1))
    [b'[{"a": 1}]', b'[{"a": "},{"}]', b'[{"a": 3}]']
    """
    size = PIECE_BYTES if piece_bytes is None else max(int(piece_bytes), 1)
    start, end = raw.find(b"["), raw.rfind(b"]")
    if (len(raw) <= 2 * size or start < 0 or end < start or raw[:start].strip()
            or raw[end + 1:].strip() or b'\\"' in raw):
        yield raw
        return
    pos = start + 1             # first byte of the current piece's records
    search = pos + size
    while search < end:
        cut = _RECORD_BOUNDARY.search(raw, search, end)
        if cut is None:
            break
        if raw.count(b'"', pos, cut.start()) % 2:     # inside a string: look further
            search = cut.start() + 1
            continue
        yield b"[" + raw[pos:cut.start() + 1] + b"]"
        pos = cut.end() - 1
        search = pos + size
    yield b"[" + raw[pos:end] + b"]"


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def read_json_bytes(path: str | os.PathLike, *, what: str) -> bytes:
    """The content of a JSON file, checked as every JSON reader path must agree on it.

    The typed decoders skip the keys they do not read without looking at their strings, so
    what the general path would refuse anywhere in the file is checked here first: bytes
    that are not UTF-8 (:func:`check_utf8`), and a lone UTF-16 surrogate escape
    (``"\\ud800"``), which is no character (orjson refuses it; Python's json would let it
    through to fail later when printed).
    """
    return checked_json_bytes(read_bytes(path, what=what), path, what=what)


def checked_json_bytes(raw: bytes, path: str | os.PathLike, *, what: str) -> bytes:
    """``raw``, the content of the JSON file ``path``, after :func:`read_json_bytes`'s
    checks (for a caller that read the bytes itself)."""
    check_utf8(raw, source=str(path), what=what)
    # Fast scans first: a backslash (memchr, ~0.1 ms a MB; most files hold none), then the
    # two bytes of an escape (~0.3 ms a MB), then the expression.
    if b"\\" in raw and _holds_escape_u(raw) and _SURROGATE_ESCAPE.search(raw):
        load_json(path, what=what, raw=raw)   # refuses a lone surrogate, naming the line
    return raw


def _holds_escape_u(raw: bytes) -> bool:
    """Whether ``raw`` holds the two bytes ``\\u`` anywhere: ``b"\\\\u" in raw``, as two
    comparisons of 16-bit words (even and odd offsets). ``in`` walks a file full of
    backslashes (segm results: ``\\`` is a character of compressed RLE strings) at ~1.6 ms a
    MB; this at ~0.3.

    >>> _holds_escape_u(b'"a\\\\ub"'), _holds_escape_u(b'"\\\\"u')
    (True, False)
    """
    if len(raw) < 1 << 16:
        return b"\\u" in raw
    pair = int.from_bytes(b"\\u", "little")
    even = np.frombuffer(raw, dtype="<u2", count=len(raw) // 2)
    odd = np.frombuffer(raw, dtype="<u2", count=(len(raw) - 1) // 2, offset=1)
    return bool((even == pair).any() or (odd == pair).any())


def check_utf8(raw: bytes, *, source: str, what: str) -> None:
    """Refuse bytes that are not UTF-8 text (JSON must be UTF-8, RFC 8259 §8.1), naming the
    file, the line and the offending byte, or the encoding a byte-order mark reveals."""
    if raw.isascii():
        return
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise FormatError(f"{what} file is UTF-16 text (it starts with a UTF-16 byte-order "
                          "mark); save it as UTF-8", source=source)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise FormatError(f"{what} file is not UTF-8 text: byte {raw[err.start]:#04x} at "
                          f"line {line} column {column} ({err.reason}); save it as UTF-8",
                          source=source) from None


def load_json(path: str | os.PathLike, *, what: str, raw: bytes | None = None) -> JSONDocument:
    """Read and parse a JSON file, with errors that name the file.

    Parameters
    ----------
    path : str or PathLike
        The file to read (and to name in messages).
    what : str
        What the file should hold ("ground truth", "results"), for the messages.
    raw : bytes, optional
        The file's content when the caller has read it already.
    """
    import orjson  # here: the typed and numeric readers of the common layouts need none

    if raw is None:
        raw = read_bytes(path, what=what)
    check_utf8(raw, source=str(path), what=what)
    try:
        with gc_paused():
            data = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise FormatError(f"not valid JSON: {_json_error_hint(raw, err)}",
                          source=str(path), record=_non_finite_record(raw, err)) from None
    return JSONDocument(data, raw)


#: Files up to this size are parsed again, leniently, to name the record that holds a NaN
#: or Infinity literal (an error path only; larger files name line and column alone).
NON_FINITE_RECORD_BYTES = 1 << 28


def _non_finite_record(raw: bytes, err: orjson.JSONDecodeError) -> str | None:
    """Where orjson stopped at a ``NaN`` or ``Infinity`` literal: the record that holds it
    (``results[i]``, or ``<section>[i]`` of a COCO dict), its key named, found by parsing the
    text again with Python's lenient parser; None when that cannot tell (another error, a
    file too large, the value outside a list of records).

    >>> import orjson
    >>> raw = b'[{"bbox": [1, 2, 3, 4]}, {"score": 0.5, "bbox": [1, NaN, 3, 4]}]'
    >>> try:
    ...     orjson.loads(raw)
    ... except orjson.JSONDecodeError as err:
    ...     _non_finite_record(raw, err)
    "results[1] ('bbox')"
    """
    if (not raw[err.pos:err.pos + 9].startswith((b"NaN", b"Infinity", b"-Infinity"))
            or len(raw) > NON_FINITE_RECORD_BYTES):
        return None
    import json
    import math

    def finite(value: Any) -> bool:
        if type(value) is float:
            return math.isfinite(value)
        if isinstance(value, list):
            return all(map(finite, value))
        if isinstance(value, dict):
            return all(map(finite, value.values()))
        return True

    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    sections = [("results", data)] if isinstance(data, list) else [
        (key, value) for key, value in data.items() if isinstance(value, list)] \
        if isinstance(data, dict) else []
    for section, records in sections:
        for i, record in enumerate(records):
            if finite(record):
                continue
            if isinstance(record, dict):
                key = next(k for k, v in record.items() if not finite(v))
                return f"{section}[{i}] ({key!r})"
            return f"{section}[{i}]"
    return None


_BOOLS = frozenset((bool, np.bool_))


def _short(value: Any, limit: int = 80) -> str:
    """``repr`` cut to ``limit`` characters (a 400-digit integer is not worth printing)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _is_number(value: Any) -> bool:
    """A finite-able number: int or float, not a bool, within float64's range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True


def number_column(records: Sequence[Any], key: str, dtype: Any, *, source: str, section: str,
                  default: Any = None, check_types: bool = True,
                  allow_bool: bool = False) -> np.ndarray:
    """Gather ``record[key]`` of every record into an array of ``dtype``.

    The fast path converts the whole column at once (``array.array`` refuses strings and
    ``None``, so nothing is converted silently); only when it fails are the records walked
    one by one to find and name the first bad one.

    Parameters
    ----------
    records : sequence of dict
    key : str
        The field to read.
    dtype : numpy dtype
        ``np.int64`` (integral values required) or ``np.float64`` (finite values required).
    source, section : str
        File name and list name for messages, e.g. ``"gt.json"``, ``"annotations"``.
    default : optional
        Value for records without ``key``; ``None`` makes the key required.
    check_types : bool
        Refuse booleans (``array.array`` would take ``True`` for 1). Callers turn it off
        only when :meth:`JSONDocument.values_are_plain` vouches for the values.
    allow_bool : bool
        Accept ``true``/``false`` as 1/0 (flags such as ``iscrowd``).
    """
    integral = np.issubdtype(dtype, np.integer)
    if not check_types and default is None:
        try:  # values vouched for as plain numbers: one pass, no intermediate list
            column = np.fromiter(map(operator.itemgetter(key), records), dtype=np.float64,
                                 count=len(records))
            if np.isfinite(column).all():
                if not integral:
                    return column
                if np.array_equal(column, np.round(column)) and np.abs(column).max(
                        initial=0) < 2**53:
                    return column.astype(np.int64)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
            pass
    try:
        if default is None:
            values = [r[key] for r in records]
        else:
            values = [r.get(key, default) for r in records]
        if check_types and not allow_bool and not _BOOLS.isdisjoint(map(type, values)):
            raise TypeError("a boolean is not a number")
        if integral:
            return np.frombuffer(array.array("q", values), dtype=np.int64).copy()
        column = np.frombuffer(array.array("d", values), dtype=np.float64).copy()
        if np.isfinite(column).all():
            return column
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
        pass
    # Slow path: integral floats are fine for ids; otherwise describe the first bad record.
    out = np.empty(len(records), dtype=np.int64 if integral else np.float64)
    for i, record in enumerate(records):
        where = f"{section}[{i}]"
        if not isinstance(record, dict):
            raise FormatError(f"must be a JSON object; got {type(record).__name__}",
                              source=source, record=where)
        if key not in record:
            if default is None:
                raise FormatError(f"missing '{key}'", source=source, record=where)
            out[i] = default
            continue
        value = record[key]
        if allow_bool and isinstance(value, bool):
            value = int(value)
        if not _is_number(value):
            raise FormatError(f"'{key}' must be a number; got {_short(value)}", source=source,
                              record=where)
        if not math.isfinite(float(value)):
            raise FormatError(f"'{key}' must be finite; got {value!r}", source=source,
                              record=where)
        if integral:
            # A float holds an integer exactly only below 2**53; beyond, it may stand for
            # several ones (the JSON parser reads an integer literal below -2**63 as a
            # float, which would fold distinct ids onto -2**63).
            if not (float(value).is_integer() and -2**63 <= int(value) < 2**63
                    and (isinstance(value, (int, np.integer)) or abs(value) < 2**53)):
                raise FormatError(f"'{key}' must be an integer that fits in 64 bits; got "
                                  f"{_short(value)}", source=source, record=where)
            value = int(value)
        out[i] = value
    return out


def box_column(records: Sequence[Any], *, source: str, section: str,
               key: str = "bbox", check_types: bool = True) -> np.ndarray:
    """Gather the ``[x, y, w, h]`` boxes of the records into an ``(n, 4)`` float64 array.

    Every box must be four finite numbers with ``w >= 0`` and ``h >= 0``.
    """
    n = len(records)
    try:
        boxes = [r[key] for r in records]
        if n == 0 or set(map(len, boxes)) == {4}:
            values = itertools.chain.from_iterable(boxes)
            if check_types:
                # array.array refuses strings and None (np.fromiter would parse "1.5").
                flat = np.frombuffer(array.array("d", values), dtype=np.float64)
                if bool in set(map(type, itertools.chain.from_iterable(boxes))):
                    raise TypeError("a boolean is not a number")
            else:
                flat = np.fromiter(values, dtype=np.float64, count=4 * n)
            xywh = flat.reshape(n, 4).copy()
            if np.isfinite(xywh).all() and (xywh[:, 2:] >= 0).all():
                return xywh
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
        pass
    for i, record in enumerate(records):
        where = f"{section}[{i}]"
        if not isinstance(record, dict):
            raise FormatError(f"must be a JSON object; got {type(record).__name__}",
                              source=source, record=where)
        if key not in record:
            raise FormatError(f"missing '{key}'", source=source, record=where)
        box = record[key]
        if not isinstance(box, (list, tuple, np.ndarray)) or len(box) != 4:
            raise FormatError(f"'{key}' must be a list of 4 numbers [x, y, w, h]; got {box!r}",
                              source=source, record=where)
        if not all(_is_number(v) for v in box):
            raise FormatError(f"'{key}' must hold numbers; got {_short(box)}", source=source,
                              record=where)
        if not all(math.isfinite(float(v)) for v in box):
            raise FormatError(f"'{key}' must hold finite numbers; got {box!r}", source=source,
                              record=where)
        if box[2] < 0 or box[3] < 0:
            raise FormatError(f"'{key}' width and height must be >= 0; got {box!r}",
                              source=source, record=where)
    raise FormatError(f"'{key}' could not be read", source=source,
                      record=section)  # pragma: no cover
