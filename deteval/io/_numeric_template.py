"""The numpy reader's template path: a piece of a bbox results file read from the positions
of its commas, when the piece is the file's own record layout repeated (docs/fast-reader.md
§2, *the template path*).

Between two consecutive values of a record there is exactly one comma (``,"category_id":``,
``,`` inside the box, ``],"score":``, ``},{"image_id":`` between records), and the text
between two values is the same in every record of a file written by one call of a JSON
writer. So one scan for commas gives every value's end and the next value's start: the
comma's position minus (or plus) fixed lengths. The glue is then compared with the
template's, 8 bytes at a time, and the values are converted from one 8-byte word each by a
branch-free routine (:func:`word_numbers`) when they have at most 8 characters and no
exponent: nearly every detector number. What it cannot read it leaves: the caller converts
those numbers by :func:`deteval.io._json_numbers.parse_numbers`, and a piece whose glue is
not the template's by the general path. Nothing here accepts a text the general path
refuses.

>>> t = GlueTemplate(("image_id", "category_id", "bbox", "score"))
>>> text = b'{"image_id":1,"category_id":2,"bbox":[1.5,2,30,4],"score":0.25}'
>>> data = np.frombuffer(text + bytes(16), dtype=np.uint8)
>>> words_at, windows = byte_windows(data)
>>> starts, lengths = t.runs(data[:len(text)], windows, 0)
>>> lengths.tolist()
[[1, 1, 3, 1, 2, 1, 4]]
>>> values, ok, integral, negative, mantissa = word_numbers(words_at[starts.ravel()],
...                                                         lengths.ravel())
>>> values.tolist(), ok.all()
([1.0, 2.0, 1.5, 2.0, 30.0, 4.0, 0.25], np.True_)
"""

from __future__ import annotations

import numpy as np

__all__ = ["GlueTemplate", "byte_windows", "word_numbers"]

_KEYS_E = {"image_id": 1, "category_id": 1, "bbox": 0, "score": 1}
_VALUES = {"image_id": (0,), "category_id": (1,), "bbox": (2, 3, 4, 5), "score": (6,)}
#: Longest glue (between two values, or a record's end, separator and next beginning) read
#: by this path; a file with wider glue (``indent=40``) goes to the general path.
MAX_GLUE = 96


def _every_byte(byte: int) -> np.uint64:
    return np.uint64(int.from_bytes(bytes([byte]) * 8, "little"))


_ZEROS, _LOW7, _TENS = _every_byte(0x30), _every_byte(0x7F), _every_byte(0x80 - 10)
_HIGH, _DOTS = _every_byte(0x80), _every_byte(0x2E ^ 0x30)
_POW10 = np.array([10.0 ** k for k in range(8)])    # exact
_ONES = np.uint64(2**64 - 1)


class GlueTemplate:
    """The text between the values of every record, for one key order and layout.

    Parameters
    ----------
    order : tuple of str
        The four keys in the order the records give them.
    segments : list of bytes, optional
        The text between the runs of number characters of the file's first record, as it
        writes it (the keys' ``e`` letters are such runs): :func:`_written_segments`.
        Default: the compact layout (no whitespace).
    separator : bytes
        The text between a record's ``}`` and the next ``{`` (one comma, whitespace).
    values : dict, optional
        Per key, the columns of its values (default: the bbox record's, ``bbox`` giving
        x, y, w, h); a key in ``arrays`` holds a JSON array of that many numbers, any other
        one number (the keypoint reader's records: :mod:`deteval.io._numeric_keypoints`).
    arrays : collection of str
        The keys whose value is an array.

    Attributes
    ----------
    head, tail : bytes
        The text before a record's first value and after its last.
    glue : list of bytes, 7
        The text after each value of a record, the last being ``tail + separator + head``.
    comma : ndarray of intp, (7,)
        The offset of the one comma in each glue.
    columns : ndarray of intp, (7,)
        The column (image id, category id, x, y, w, h, score) of each value, in text order.
    usable : bool
        False when a glue does not hold exactly one comma or is wider than ``MAX_GLUE``.
    """

    def __init__(self, order: tuple[str, ...], segments: list[bytes] | None = None,
                 separator: bytes = b",", *, values: dict | None = None,
                 arrays: tuple[str, ...] = ("bbox",)):
        values_of = _VALUES if values is None else values
        if segments is None:
            fields = ['"' + key.replace("e", "#") + '":'
                      + ("[" + ",".join("#" * len(values_of[key])) + "]" if key in arrays
                         else "#") for key in order]
            segments = [s.encode() for s in ("{" + ",".join(fields) + "}").split("#")]
        values: list[int] = []
        glue, run = [segments[0]], 0
        for key in order:
            for _ in range(key.count("e")):     # a key's e letter: the glue goes on
                run += 1
                glue[-1] += b"e" + segments[run]
            for column in values_of[key]:
                run += 1
                values.append(column)
                glue.append(segments[run])
        self.head, self.tail = glue[0], glue[-1]
        self.glue = glue[1:-1] + [self.tail + separator + self.head]
        self.columns = np.array(values, dtype=np.intp)
        self.usable = all(g.count(b",") == 1 and len(g) <= MAX_GLUE for g in self.glue)
        self.comma = np.array([g.find(b",") for g in self.glue], dtype=np.intp)
        # A value ends `comma` bytes before its glue's comma; the next starts `after` past it.
        self.after = np.array([len(g) for g in self.glue], dtype=np.intp) - self.comma
        self.checks = []
        for j, g in enumerate(self.glue):     # 16-byte comparisons covering all but the comma
            at = 0
            while at < len(g):
                if at == self.comma[j]:
                    at += 1
                    continue
                chunk = g[at:at + 16].ljust(16, b"\0")
                mask = (1 << (8 * len(g[at:at + 16]))) - 1
                self.checks.append((j, at - int(self.comma[j]),
                                    *(np.uint64(int.from_bytes(chunk[h:h + 8], "little"))
                                      for h in (0, 8)),
                                    *(np.uint64((mask >> h) & (2 ** 64 - 1)) for h in (0, 64))))
                at += 16

    def runs(self, text: np.ndarray, windows: np.ndarray, base: int):
        """``(starts, lengths)``, intp ``(k, 7)``: where each value of the piece's ``k``
        records starts (``base`` plus its offset in ``text``) and how many bytes it has,
        when ``text`` is ``head value glue value ... tail`` with this template's glue (every
        byte compared) and every value at least one byte long; None otherwise.

        ``text`` has no leading or trailing whitespace; ``windows[base + i]`` are the 16
        bytes from ``text[i]`` on (:func:`byte_windows`), for ``i`` up to ``len(text)``."""
        if not self.usable or len(text) < len(self.head) + len(self.tail):
            return None
        commas = np.flatnonzero(text == 0x2C)
        k, extra = divmod(len(commas) + 1, len(self.glue))
        if k == 0 or extra:
            return None
        at = np.empty(k * len(self.glue), dtype=np.intp)
        at[:-1] = commas
        # (the last record's value ends where its tail begins, as if a comma followed)
        at[-1] = len(text) - len(self.tail) + self.comma[-1]
        at += base
        at = at.reshape(k, len(self.glue))
        starts = np.empty_like(at)
        starts[0, 0] = base + len(self.head)
        np.add(at[:-1, -1], self.after[-1], out=starts[1:, 0])
        # Column by column, one long loop each: numpy loops a (k, 7) operation broadcast
        # against a (7,) row as k loops of 7 (~3 times the time on the bench's pieces).
        for j in range(len(self.glue) - 1):
            np.add(at[:, j], self.after[j], out=starts[:, j + 1])
        lengths = at - starts
        for j in range(len(self.glue)):
            lengths[:, j] -= self.comma[j]              # (the values' ends less starts)
        # Every value at least a byte: the glue then tiles the text, every window below
        # starts inside it.
        if not ((lengths >= 1).all() and text[:len(self.head)].tobytes() == self.head
                and text[len(text) - len(self.tail):].tobytes() == self.tail):
            return None
        for j, offset, low, high, low_mask, high_mask in self.checks:
            where = at[:, j] if j < len(self.glue) - 1 else at[:-1, j]
            pair = windows[where + offset].view(np.uint64)
            wrong = pair[0::2] ^ low
            wrong &= low_mask
            if high_mask:
                wrong |= (pair[1::2] ^ high) & high_mask
            if wrong.any():
                return None
        return starts, lengths


def byte_windows(buffer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Views of a uint8 array (no copy): at every offset, the 8 bytes from it as a
    little-endian uint64, and the 16 bytes from it (``V16``)."""
    return (np.ndarray((len(buffer) - 7,), dtype="<u8", buffer=buffer, strides=(1,)),
            np.ndarray((len(buffer) - 15,), dtype="V16", buffer=buffer, strides=(1,)))


def word_numbers(words: np.ndarray, lengths: np.ndarray):
    """Numbers of at most 8 characters without an exponent, from their text's first 8 bytes.

    Parameters
    ----------
    words : ndarray of uint64, (m,)
        Each number's first 8 bytes, little-endian (the bytes after it: anything).
    lengths : ndarray of int, (m,)
        Each number's length in bytes.

    Returns
    -------
    tuple of ndarray
        ``(values, ok, integral, negative, mantissa)``: float64 values (``float(text)``;
        ``0.0`` for ``-0``, a JSON integer), where ``ok`` (bool) is True: the text matches
        ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` in at most 8 characters; whether it has no dot, a
        leading ``-``, and its digits as an integer (uint64). Rows not ``ok`` (wider, with an
        exponent, or not a JSON number) hold garbage: the caller reads them otherwise.

    Branch-free: every number takes the same ~50 array operations. Its bytes are xored with
    ``'0'`` (digits become 0..9), the sign shifted out; the bytes that are not digits must be
    one dot at most (found from their high bits at once); the digits, closed up over the
    dot and moved to the word's end, are converted 8 at a time (three multiply-shift rounds)
    into ``M < 10**8``, and ``M / 10**F`` (``F`` digits after the dot) is one correctly
    rounded IEEE division of two exact doubles (Clinger's fast path).

    >>> text = b"-0.5____12______0.007___-0______1e3_____01______"
    >>> w = np.frombuffer(text, dtype="<u8")
    >>> values, ok, integral, negative, mantissa = word_numbers(w, np.array([4, 2, 5, 2, 3, 2]))
    >>> values[ok].tolist(), ok.tolist()
    ([-0.5, 12.0, 0.007, 0.0], [True, True, True, True, False, False])
    """
    size = np.minimum(lengths, 8)
    x = words ^ _ZEROS                          # digits 0..9
    # The bytes after the number 0: ~(ALL_ONES << 8 * size) keeps the first ``size`` bytes
    # (numpy's shifts by 64 or more give 0), with no table lookup (take widens the index).
    # (uint8 counts times 8, not shifted by 3: numpy's uint8 shifts are not vectorised,
    # its multiplications are: ~9 times faster)
    mask = np.left_shift(_ONES, size.astype(np.uint8) * np.uint8(8))
    x &= np.invert(mask, out=mask)
    negative = (x & np.uint64(0xFF)) == np.uint64(0x2D ^ 0x30)
    x >>= negative.view(np.uint8) * np.uint8(8)     # the sign's byte shifted out
    # Bit 7 of each byte that is not 0..9 (no carry between bytes: (b & 0x7F) + 0x76 < 0x100).
    other = x & _LOW7
    other += _TENS
    other |= x
    other &= _HIGH
    below = other - np.uint64(1)
    single = (other & below) == 0               # at most one byte that is not a digit
    dot = np.bitwise_count(below)               # 8p + 7 for the byte p; 64 for none
    dot >>= np.uint8(3)
    byte = (other >> np.uint64(7)) * np.uint64(0xFF)
    x ^= byte & _DOTS                           # the dot's byte 0: digits only
    single &= (x & byte) == 0                   # ... when it was the dot (0x2E ^ 0x30)
    count = size.astype(np.int8) - negative.view(np.int8)     # characters after the sign
    has_dot = dot != 8
    whole = np.minimum(dot.view(np.int8), count)               # digits before the dot
    fraction = count - 1 - dot.view(np.int8)                   # digits after it (dot only)
    ok = (lengths <= 8) & single & (whole >= 1) & ((fraction >= 1) | ~has_dot)
    ok &= ~((whole > 1) & ((x & np.uint64(0xFF)) == 0))       # no leading zero
    # Digits moved to the word's end (leading zeros enter), the part before the dot one
    # byte further: the dot closed up. (Shift counts as uint8: uint64 << uint8 is uint64.)
    dot *= np.uint8(8)                          # (0..64: dot is at most 8)
    before = np.left_shift(_ONES, dot, out=mask)
    before = np.invert(before, out=before)
    before &= x
    x ^= before
    gap = (8 - count).view(np.uint8)            # 0..8 bytes (garbage where not ok)
    x <<= gap * np.uint8(8)
    gap += has_dot.view(np.uint8)
    before <<= gap * np.uint8(8)
    x |= before
    mantissa = _eight_digits(x)
    values = mantissa.astype(np.float64)
    fraction *= has_dot                         # 0..7 (the dot is among the characters)
    # (an intp index: take's fast path; "clip" keeps garbage rows, not ok, in range)
    values /= _POW10.take(fraction.astype(np.intp), mode="clip")
    # A JSON integer is read as an int first (msgspec does): "-0" is 0.0, "-0.0" is -0.0.
    # The values are >= +0.0 here: setting the sign bit negates them (a ufunc's where=
    # would take numpy's slow masked loop).
    sign = (negative & (has_dot | (mantissa != 0))).view(np.uint8).astype(np.uint64)
    sign <<= np.uint64(63)
    values.view(np.uint64)[...] |= sign
    return values, ok, ~has_dot, negative, mantissa


def _eight_digits(x: np.ndarray) -> np.ndarray:
    """The value of each word's 8 bytes read as decimal digits 0..9, the first byte (the
    lowest) the most significant: pairs, quads, then octets, one multiply each. ``x`` is
    overwritten."""
    x *= np.uint64(10 * 256 + 1)                # byte i + 1: 10 * d[i] + d[i + 1]
    x >>= np.uint64(8)
    x &= np.uint64(0x00FF00FF00FF00FF)
    x *= np.uint64(100 * 65536 + 1)
    x >>= np.uint64(16)
    x &= np.uint64(0x0000FFFF0000FFFF)
    x *= np.uint64(10000 * (1 << 32) + 1)
    x >>= np.uint64(32)
    return x
