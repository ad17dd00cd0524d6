"""JSON numbers converted by numpy exactly as Python's ``float(text)`` reads them (correctly
rounded), or refused: the conversion under the numpy readers (the bbox results reader of
:mod:`deteval.io._numeric_json`, the keypoint and segm readers), which find the numbers'
bounds and hand them here. The rules and the exactness argument are in docs/fast-reader.md
§3.

>>> import numpy as np
>>> text = np.frombuffer(b"1.5 -0 3e1 12345678901234567890", dtype=np.uint8)
>>> values, integral, integers = parse_numbers(text, np.array([0, 4, 7, 11]),
...                                            np.array([3, 6, 10, 31]))
>>> values.tolist(), integral.tolist()
([1.5, 0.0, 30.0, 1.2345678901234567e+19], [False, True, False, False])
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ._numeric_template import _eight_digits

__all__ = ["parse_numbers"]

_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")

#: Widest number (in characters) converted by the vectorised path; longer ones (rare) are
#: checked by a regular expression and converted by ``float``.
_MAX_WIDTH = 32

_POW10_F64 = np.array([10.0 ** k for k in range(23)])           # exact: 10**22 < 2**53 * 2**22
_POW10_U64 = np.array([10 ** k for k in range(20)], dtype=np.uint64)
#: ``_FIRST_BYTES[i]`` keeps the first ``i`` bytes (in text order) of a little-endian word.
_FIRST_BYTES = np.array([(1 << (8 * i)) - 1 for i in range(9)], dtype=np.uint64)


def _extended_layout() -> bool:
    """True when ``np.longdouble`` is the x87 80-bit format (64-bit significand, stored in
    16 bytes, significand in the low 8): then its low significand bits tell a midpoint."""
    info = np.finfo(np.longdouble)
    if info.nmant != 63 or np.dtype(np.longdouble).itemsize != 16:
        return False
    probe = np.array([1.5, 3.0], dtype=np.longdouble).view(np.uint64)
    # (the 6 bytes after the sign and exponent are padding, whatever they hold)
    return (probe[0::2].tolist() == [0xC000000000000000] * 2
            and (probe[1::2] & np.uint64(0xFFFF)).tolist() == [0x3FFF, 0x4000])


_EXTENDED = _extended_layout()
_POW10_EXT: Any = None
if _EXTENDED:
    # 10**k = 2**k * 5**k is exact in 64 bits of significand up to k = 27 (5**27 < 2**63);
    # built by exact multiplications, not by a conversion that might pass through float64.
    _POW10_EXT = np.ones(28, dtype=np.longdouble)
    for _k in range(1, 28):
        _POW10_EXT[_k] = _POW10_EXT[_k - 1] * np.longdouble(10)


def parse_numbers(text: np.ndarray, first: np.ndarray, last: np.ndarray, *,
                  exponents: bool = True):
    """JSON numbers ``text[first[i]:last[i]]`` as Python reads them, or None.

    Parameters
    ----------
    text : ndarray of uint8
        Numbers and the bytes around them; a ``/``, or a ``+`` or ``-`` that is neither a
        number's first character nor after an ``e``, anywhere in it returns None.
    first, last : ndarray of intp, shape (m,)
        Offsets of each number's first character and one past its last: non-empty maximal
        runs of number characters ``0-9 . + - e E /``, as the skeleton finds them.
    exponents : bool
        False when no number holds an ``e`` or ``E`` (the caller knows): skips their work.

    Returns
    -------
    tuple of ndarray or None
        ``(values, integral, integers)``: float64 ``float(text)`` (``0.0`` for ``-0``, as a
        JSON integer), whether the text is an integer literal of at most 18 digits, and its
        int64 value there (0 elsewhere); None when a text is not a JSON number.

    >>> t = np.frombuffer(b"-0.5,12,1e-3,-0,-0.0,9007199254740993", dtype=np.uint8)
    >>> values, integral, integers = parse_numbers(
    ...     t, np.array([0, 5, 8, 13, 16, 21]), np.array([4, 7, 12, 15, 20, 37]))
    >>> values.tolist(), integral.tolist(), integers.tolist()[:2]
    ([-0.5, 12.0, 0.001, 0.0, -0.0, 9007199254740992.0], [False, True, False, True, False, True], [0, 12])
    """  # noqa: E501
    padded = np.zeros(len(text) + 2 * _MAX_WIDTH, dtype=np.uint8)
    padded[_MAX_WIDTH:_MAX_WIDTH + len(text)] = text
    # Every offset of the text read as a little-endian 8-byte word: an unaligned view.
    words_at = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    return _parse_numbers(text, words_at, first, last, exponents)


def _parse_numbers(text, words_at, first, last, exponents):
    """:func:`parse_numbers` given the text's words (``words_at[i + 32]``: the 8 bytes from
    offset ``i``)."""
    if not _signs_placed(text, first):
        return None
    # Numbers are converted in groups by their width in 8-byte words: all of them at the
    # width most fit in (those wider deferred), then the wider ones, few, at theirs.
    words = np.minimum((last - first + 7) >> 3, _MAX_WIDTH // 8)
    counts = np.cumsum(np.bincount(words, minlength=_MAX_WIDTH // 8 + 1))
    main = max(1, int(np.searchsorted(counts, 0.9 * len(first))))
    parsed = _parse_width(text, words_at, first, last, main, exponents)
    if parsed is None:
        return None
    values, integral, integers = parsed
    for n_words in range(main + 1, _MAX_WIDTH // 8 + 1):
        if counts[n_words] == counts[n_words - 1]:
            continue
        rows = np.flatnonzero(words == n_words)
        parsed = _parse_width(text, words_at, first[rows], last[rows], n_words, exponents)
        if parsed is None:
            return None
        values[rows], integral[rows], integers[rows] = parsed
    return values, integral, integers


def _signs_placed(text: np.ndarray, first: np.ndarray) -> bool:
    """No ``/`` in the text, and every ``+`` or ``-`` either a ``-`` starting a number or
    right after an ``e`` or ``E``."""
    if (text == 0x2F).any():
        return False
    sign = (text == 0x2D) | (text == 0x2B)
    sign[1:] &= (text[:-1] | 0x20) != 0x65
    sign[first] &= text[first] != 0x2D
    return not sign.any()


def _parse_width(text, words_at, first, last, n_words, exponents):
    """:func:`parse_numbers` of numbers at most ``8 * n_words`` characters long. Longer ones
    are left to the caller (their values are not set), except at the widest, 32: those are
    checked by a regular expression and converted by ``float``. Positions within a number
    are int8 (they are below 33), which keeps most of the work on small arrays."""
    m = len(first)
    width = 8 * n_words
    length = np.minimum(last - first, width).astype(np.int8)
    long_rows = (last - first) > width
    deferred = long_rows if width < _MAX_WIDTH else np.zeros(m, dtype=bool)
    base = first + _MAX_WIDTH
    left = np.empty((m, n_words), dtype=np.uint64)
    for k in range(n_words):                    # the number, zeros after it
        left[:, k] = words_at[base + 8 * k] & _FIRST_BYTES[
            length if n_words == 1 else np.clip(length - 8 * k, 0, 8)]
    chars = left.view(np.uint8)                 # (m, width)
    n_dot, dot_at = _count_first((chars == 0x2E).view(np.uint64))
    lead = chars[:, 0] == 0x2D
    has_exp = np.zeros(m, dtype=bool)
    epos = length
    exponent = None
    if exponents:
        n_exp, exp_at = _count_first(((chars | 0x20) == 0x65).view(np.uint64))
        has_exp = n_exp > 0
        if has_exp.any():
            if (n_exp > 1).any():
                return None
            epos = np.minimum(exp_at, length)
            exponent = np.zeros(m, dtype=np.int64)
    has_dot = n_dot > 0
    dpos = np.minimum(dot_at, epos)             # epos without a dot (and after an e: refused)
    frac = (epos - dpos - 1) * has_dot
    first_digit = chars[:, 0] + lead * (chars[:, 1] - chars[:, 0])
    # The grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, given that signs are
    # placed (_signs_placed) and the run holds nothing but number characters.
    ok = ((n_dot <= 1) & (dpos > lead) & (~has_dot | (frac >= 1))
          & ~((first_digit == 0x30) & (dpos - lead > 1)))
    if exponent is not None:
        ok &= _exponents(chars, words_at, base, epos, length, has_exp, exponent)
    if not (ok | long_rows).all():
        return None
    if n_words == 1:
        mantissa = _short_mantissa(left[:, 0], chars, epos, dpos, has_dot)
        exact = ~long_rows
    else:
        mantissa, exact = _long_mantissa(words_at, base, epos, frac, has_dot, width)
        exact &= ~long_rows
    power = -frac.astype(np.int64) if exponent is None else exponent - frac
    fallback = ~exact | (np.abs(power) > 27)
    values = _scaled(mantissa, power, fallback)     # (not the rows of fallback)
    fallback &= ~deferred                       # those the caller converts
    integral = ~has_dot & ~has_exp & exact & (mantissa < _POW10_U64[18])
    np.negative(values, out=values, where=lead & ~(integral & (mantissa == 0)))
    for i in np.flatnonzero(fallback).tolist():
        number = text[first[i]:last[i]].tobytes()
        if _NUMBER.fullmatch(number) is None:
            return None
        # A JSON integer is read as an int first (msgspec does): "-0" is 0.0, not -0.0.
        values[i] = float(number) if any(c in number for c in b".eE") else float(int(number))
    integers = mantissa.view(np.int64) * integral
    np.negative(integers, out=integers, where=lead)
    return values, integral, integers


def _short_mantissa(word, chars, epos, dpos, has_dot) -> np.ndarray:
    """The mantissas of numbers of at most 8 characters (``word``, their text; ``chars``,
    its bytes): the digit values, moved to end where the exponent starts (what follows
    shifted out, leading 0 digits entering), the dot's byte closed up (the bytes before it
    moved one place on), converted at once."""
    digit = ((chars - 48) < 10).view(np.uint64)[:, 0] * np.uint64(0xFF)
    word = (word & digit & np.uint64(0x0F0F0F0F0F0F0F0F)) << ((8 - epos) * 8).astype(np.uint64)
    # Bits before the dot (0 without one: nothing moves).
    cut = ((8 - epos + dpos) * has_dot * 8).astype(np.uint64)
    high = (word >> cut) << cut
    return _eight_digits(((word ^ high) << np.uint64(8)) | high)


def _long_mantissa(words_at, base, epos, frac, has_dot, width):
    """The mantissas of numbers of 9 to 32 characters and whether each is exact (below
    2**64): the digits with the dot read as a 0 digit (``I * 10**(F+1) + fraction``), then
    ``I * 10**F + fraction``."""
    begin = width - epos                        # window index of the number's first byte
    start = base + (epos - width)
    dotted = np.zeros(len(base), dtype=np.uint64)
    estimate = np.zeros(len(base))
    for k in range(width // 8):
        word = words_at[start + 8 * k]
        digit = ((word.view(np.uint8).reshape(-1, 8) - 48) < 10).view(np.uint64)[:, 0]
        word &= digit * np.uint64(0xFF) & np.uint64(0x0F0F0F0F0F0F0F0F)  # digit values
        value = _eight_digits(word & ~_FIRST_BYTES[np.clip(begin - 8 * k, 0, 8)])
        dotted = dotted * np.uint64(10 ** 8) + value
        estimate = estimate * 1e8 + value
    exact = estimate < 1e19                     # 1e19 < 2**64: no wrap-around below it
    rows = np.flatnonzero(has_dot & (frac < 19))    # F >= 19: I is 0 below 1e19
    if len(rows):
        f = frac[rows]
        big = _POW10_U64[f + 1]
        dotted[rows] -= dotted[rows] // big * (big - _POW10_U64[f])
    return dotted, exact


def _count_first(flags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For byte flags (0 or 1) packed 8 to a word, ``(m, k)`` uint64: how many are set in
    each row, and the index of the first set one (``8 * k`` when there is none), int8."""
    count = np.zeros(len(flags), dtype=np.uint8)
    at = np.full(len(flags), 8 * flags.shape[1], dtype=np.int8)
    for k in range(flags.shape[1] - 1, -1, -1):
        word = flags[:, k]
        count += np.bitwise_count(word)
        # The bits below the lowest set one, counted: 8 per byte before the first flag.
        below = (np.bitwise_count((word & (~word + np.uint64(1))) - np.uint64(1)) >> 3)
        if flags.shape[1] == 1:
            return count, below.view(np.int8)
        np.copyto(at, below.view(np.int8) + np.int8(8 * k), where=below < 8)
    return count, at


def _exponents(chars, words_at, base, epos, length, has_exp, out) -> np.ndarray:
    """Check the exponent part of the rows that have one and write its signed value to
    ``out``; returns the rows' grammar (True for rows without one). Exponents of more than
    4 digits are given as 10**4 (the caller then converts that number by ``float``)."""
    at = np.flatnonzero(has_exp)
    e_at = epos[at].astype(np.int64)
    after = chars[at, np.minimum(e_at + 1, chars.shape[1] - 1)]
    signed = (after == 0x2D) | (after == 0x2B)
    count = length[at] - e_at - 1 - signed
    clipped = np.clip(count, 1, 8)
    word = words_at[base[at] + e_at + 1 + signed] & _FIRST_BYTES[clipped]
    word <<= (8 * (8 - clipped)).astype(np.uint64)  # right-aligned: leading zero digits
    part = _eight_digits(word & np.uint64(0x0F0F0F0F0F0F0F0F)).astype(np.int64)
    part[count > 4] = 10 ** 4
    out[at] = np.where(after == 0x2D, -part, part)
    ok = np.ones(len(has_exp), dtype=bool)
    ok[at] = count >= 1
    return ok


def _scaled(mantissa: np.ndarray, power: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """``mantissa * 10**power`` correctly rounded to float64, where ``fallback`` is False
    (``|power| <= 27``, ``mantissa < 2**64``); rows it cannot round exactly join
    ``fallback`` (updated in place), their values left to the caller."""
    # Clinger's fast path: where the mantissa and the power of ten are both exact in
    # float64, one IEEE operation rounds correctly.
    magnitude = np.abs(power)
    ten = _POW10_F64[np.minimum(magnitude, 22)]
    exact = mantissa.astype(np.float64)
    values = exact / ten
    if (power > 0).any():
        np.multiply(exact, ten, out=values, where=power > 0)
    fast = (mantissa <= np.uint64(2 ** 53)) & (magnitude <= 22)
    rest = np.flatnonzero(~fast & ~fallback)
    if len(rest) == 0:
        return values
    if not _EXTENDED:
        fallback[rest] = True
        return values
    # 64-bit significands: the mantissa and 10**|power| are exact, the product or quotient
    # is rounded once to 64 bits, and rounding that to 53 bits is correct unless it lies
    # exactly halfway between two doubles (its low 11 bits 10000000000): those go to float.
    m = mantissa[rest].astype(np.longdouble)
    p = power[rest]
    ten = _POW10_EXT[np.abs(p)]
    wide = np.where(p >= 0, m * ten, m / ten)
    significand = wide.view(np.uint64)[0::2]
    fallback[rest[(significand & np.uint64(0x7FF)) == np.uint64(0x400)]] = True
    values[rest] = wide.astype(np.float64)
    return values
