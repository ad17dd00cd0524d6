"""CSV text of whole columns at once, without a Python loop per row.

Each column becomes a ``(n, width)`` uint8 matrix holding its text, padded with NUL bytes;
:func:`csv_bytes` lays the matrices side by side with the separators, and one
``bytes.translate`` removes the padding. Integers are written digit by digit with array
arithmetic; text comes from a small table of labels (CSV-quoted once per label, not per
row); floats are written in the shortest fixed-point form that reads back to the same double
where one of at most 17 decimals exists with fewer than 16 significant digits (checked
exactly: see :func:`float_field`), and by numpy's own shortest representation otherwise.

The text must hold no NUL byte (labels containing one are refused), which CSV text never
needs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["csv_bytes", "csv_chunks", "float_field", "int_field", "label_field", "quote"]

_ZERO = ord("0")
#: Rows laid out at once: bounds the padded matrices (about 200 bytes a row) in memory,
#: and keeps one chunk's matrices in the processor's cache while it is laid out.
_CHUNK_ROWS = 1 << 15


def quote(text: str) -> str:
    """``text`` as one CSV field (RFC 4180): quoted when it holds a comma, a quote, a line
    break or leading/trailing space, quotes doubled.

    >>> quote("cat"), quote('a "b", c')
    ('cat', '"a ""b"", c"')
    """
    if any(c in text for c in ',"\n\r') or text != text.strip(" "):
        return '"' + text.replace('"', '""') + '"'
    return text


def _digits(values: np.ndarray) -> int:
    top = int(np.abs(values).max(initial=0))
    return max(len(str(top)), 1)


def int_field(values: np.ndarray, *, empty_below: int | None = None) -> np.ndarray:
    """Decimal text of integers, shape ``(n, width)`` uint8 (NUL-padded on the left).

    Values below ``empty_below`` are written as an empty field.

    >>> int_field(np.array([7, -12, 305])).tobytes().replace(b"\\0", b"|")
    b'|||7|-12|305'
    """
    values = np.asarray(values, dtype=np.int64)
    n = len(values)
    if n:
        low, high = int(values.min()), int(values.max())
        if empty_below is not None:
            low = max(low, empty_below)
        span = max(high - low + 1, 0)
        if n >= 4 * span and span <= 1 << 22:
            # Few distinct values (object rows, ids): write each once and look them up; row
            # 0 of the table is the empty field.
            table = np.zeros((span + 1, _digits(np.array([low, high])) + (low < 0)),
                             dtype=np.uint8)
            if span:
                text = _int_text(np.arange(low, high + 1, dtype=np.int64))
                table[1:, table.shape[1] - text.shape[1]:] = text
            index = values - (low - 1)
            if empty_below is not None:
                index[values < empty_below] = 0
            return table.view(f"S{table.shape[1]}").ravel().take(index).view(
                np.uint8).reshape(n, table.shape[1])
    out = _int_text(values)
    if empty_below is not None:
        out[values < empty_below] = 0
    return out


def _int_text(values: np.ndarray) -> np.ndarray:
    n = len(values)
    width = _digits(values)
    negative = values < 0
    signed = bool(negative.any())
    magnitude = np.abs(values)
    if width <= 9:
        magnitude = magnitude.astype(np.int32)     # faster division
    out = np.zeros((n, width + signed), dtype=np.uint8)
    rest = magnitude
    for j in range(width - 1, -1, -1):                 # last digit first
        rest, digit = np.divmod(rest, 10)
        column = digit.astype(np.uint8) + np.uint8(_ZERO)
        if j < width - 1:                              # no leading zeros
            column[magnitude < 10 ** (width - 1 - j)] = 0
        out[:, j + signed] = column
    if signed:
        # the sign goes just before the first digit (at column width - digits)
        first = width - _lengths(magnitude)
        rows = np.flatnonzero(negative)
        out[rows, first[rows]] = ord("-")
    return out


def _lengths(values: np.ndarray) -> np.ndarray:
    """Number of decimal digits of non-negative integers (0 has one)."""
    lengths = np.ones(len(values), dtype=np.int64)
    power = 10
    while True:
        more = values >= power
        if not more.any():
            return lengths
        lengths += more
        power *= 10


def label_field(codes: np.ndarray, labels: Sequence[str], *, csv: bool = True) -> np.ndarray:
    """Text of ``labels[codes]``, shape ``(n, width)`` uint8 (NUL-padded on the right).

    Codes of -1 are an empty field. Labels are CSV-quoted (``csv=True``) and UTF-8 encoded.

    >>> label_field(np.array([0, 1, -1]), ["tp", "fp, dup"]).tobytes().replace(b"\\0", b"|")
    b'tp|||||||"fp, dup"|||||||||'
    """
    encoded = [(quote(s) if csv else s).encode() for s in labels] + [b""]
    if any(b"\0" in e for e in encoded):
        raise ValueError("CSV text cannot hold a NUL character; a label has one")
    codes = np.where(np.asarray(codes) >= 0, codes, len(encoded) - 1)
    # As wide as the longest label used (longer ones, unused, may be cut in the table).
    used = np.bincount(codes, minlength=len(encoded)) > 0
    width = max([1] + [len(e) for e, u in zip(encoded, used.tolist()) if u])
    table = np.array(encoded, dtype=f"S{width}")
    chosen = table[codes]
    return chosen.view(np.uint8).reshape(len(chosen), -1)


def float_field(values: np.ndarray) -> np.ndarray:
    """Text of floats that reads back to the same double, shape ``(n, width)`` uint8.

    NaN is an empty field; infinities are ``inf`` and ``-inf``. Values with a fixed-point
    form of at most 17 decimals and fewer than 16 digits are written with the fewest
    decimals (:func:`_fewest_decimals`: Python's own text for most); others with 18
    significant digits (:func:`_eighteen_digits`), trailing zeros dropped; the rest (very
    large or small, or where long doubles are not wide) by numpy's shortest representation.
    Each reads back as the same double.

    >>> float_field(np.array([0.5, 3.0, np.nan, 0.1 + 0.2])).tobytes().replace(b"\\0", b"")
    b'0.53.00.30000000000000004'
    """
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    if n > 4096 and len(np.unique(x[:1024])) <= 64:
        # Few distinct values (thresholds, rounded scores): write each once, look them up.
        distinct, inverse = np.unique(x, return_inverse=True)
        if len(distinct) <= n // 16:
            return float_field(distinct)[inverse.ravel()]
    todo = np.isfinite(x)
    magnitude = np.abs(np.where(todo, x, 0.0))
    scaled_n = np.zeros(n, dtype=np.int64)
    places = np.full(n, -1, dtype=np.int64)
    _fewest_decimals(magnitude, todo, scaled_n, places)
    _eighteen_digits(magnitude, todo & (places < 0), scaled_n, places)
    fast = places >= 0
    slow = todo & ~fast
    parts = []
    if fast.any():
        parts.append((fast, _fixed_point(scaled_n[fast], places[fast], np.signbit(x[fast]))))
    if slow.any():
        parts.append((slow, x[slow].astype("S32")))
    infinite = np.isinf(x)
    if infinite.any():
        parts.append((infinite, np.where(x[infinite] > 0, b"inf", b"-inf").astype("S4")))
    width = max([1] + [p[1].dtype.itemsize for p in parts])
    text = np.zeros(n, dtype=f"S{width}")
    for mask, chosen in parts:
        text[mask] = chosen
    return text.view(np.uint8).reshape(n, -1)


_POWERS_64 = 10.0 ** np.arange(18)      # exact doubles


def _fewest_decimals(magnitude: np.ndarray, rows: np.ndarray, scaled_n: np.ndarray,
                     places: np.ndarray) -> None:
    """Fill ``scaled_n`` and ``places`` of ``rows`` (a mask) where a fixed-point form with
    ``p <= 17`` decimals and ``N = rint(x * 10**p)`` below 2**53 reads back as ``x``.

    The check ``N / 10**p == x`` is exact: ``N`` and ``10**p`` are exact doubles, and the
    correctly rounded quotient is ``x`` exactly when the decimal reads back as ``x``. More
    decimals keep passing once one passes, so ``p`` is found by bisection per row, between 0
    and the largest ``p`` with ``x * 10**p`` below 2**53.
    """
    index = np.flatnonzero(rows & (magnitude < 2.0 ** 53))
    value = magnitude[index]
    top = np.floor(53 * np.log10(2.0) - np.log10(np.maximum(value, 1e-30)))
    high = np.clip(top, 0, 17).astype(np.int64)
    high -= (np.rint(value * _POWERS_64[high]) >= 2.0 ** 53)        # log10 one off
    low = np.zeros(len(index), dtype=np.int64)

    def passes(p: np.ndarray) -> np.ndarray:
        scaled = np.rint(value * _POWERS_64[p])
        return (scaled < 2.0 ** 53) & (scaled / _POWERS_64[p] == value)

    found = (high >= 0) & passes(np.maximum(high, 0))
    high = np.maximum(high, 0)
    while True:         # the fewest decimals in [low, high] that pass (high passes)
        open_ = found & (low < high)
        if not open_.any():
            break
        middle = (low + high) // 2
        ok = passes(middle)
        high = np.where(open_ & ok, middle, high)
        low = np.where(open_ & ~ok, middle + 1, low)
    hit = index[found]
    places[hit] = high[found]
    scaled_n[hit] = np.rint(value[found] * _POWERS_64[high[found]]).astype(np.int64)


#: Whether numpy's long double carries at least 64 mantissa bits (x87 extended, IEEE quad):
#: then x * 10**p rounds with a relative error of at most 2**-64.
_WIDE = np.finfo(np.longdouble).nmant >= 63
#: 10**k, exact in a wide long double for k <= 27 (5**27 < 2**64).
_POWERS = np.array([10**k for k in range(28)], dtype=np.longdouble)


def _eighteen_digits(magnitude: np.ndarray, rows: np.ndarray, scaled_n: np.ndarray,
                     places: np.ndarray) -> None:
    """Fill ``scaled_n`` and ``places`` of ``rows`` (a mask) with 18 significant digits.

    ``N = rint(|x| * 10**p)`` in long double, ``p`` chosen so that ``N`` has 18 digits: the
    product's error is below 10**18 * 2**-64 < 0.06, so ``N`` is the correctly rounded value
    or off by one; either way ``N / 10**p`` is within 1.5e-17 relative of ``x``, less than
    half the spacing of doubles (2**-54 relative), so it reads back as ``x``. Only for
    1e-6 <= |x| < 1e12 (``p`` at most 24, 10**p exact in a long double) and where long
    doubles are wide enough; other rows are left alone (numpy's formatter writes them).
    Trailing zeros are dropped.
    """
    if not _WIDE:
        return
    rows &= (magnitude >= 1e-6) & (magnitude < 1e12)
    index = np.flatnonzero(rows)
    if not len(index):
        return
    value = magnitude[index].astype(np.longdouble)
    p = 17 - np.floor(np.log10(magnitude[index])).astype(np.int64)
    for _ in range(2):          # log10 can be one off near powers of ten: correct once
        n = np.rint(value * _POWERS[p])
        p = p + (n < 1e17) - (n >= 1e18)
    n = np.rint(value * _POWERS[p]).astype(np.int64)
    for _ in range(17):         # drop trailing zeros (keep at least one decimal)
        zero = (n % 10 == 0) & (p > 1)
        if not zero.any():
            break
        n = np.where(zero, n // 10, n)
        p = p - zero
    scaled_n[index] = n
    places[index] = p


def _fixed_point(scaled: np.ndarray, places: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """``scaled / 10**places`` as text: at least one digit before the point, ``.0`` for
    whole numbers (as Python writes floats). Built as a NUL-padded matrix: a sign column,
    then the digits right-aligned with the point inserted, rows grouped by its place
    (leading zeros are NUL, the padding :func:`csv_bytes` removes, so the sign needs no
    exact place)."""
    n = len(scaled)
    whole = places == 0                      # written N.0: one decimal, a zero
    scaled = np.where(whole, scaled * 10, scaled)
    places = np.where(whole, 1, places)
    lengths = _lengths(scaled)
    width = max(int(lengths.max(initial=1)), int(places.max(initial=0)) + 1)
    digits = np.empty((n, width), dtype=np.uint8)
    rest = scaled
    for j in range(width - 1, -1, -1):
        rest, digit = np.divmod(rest, 10)
        digits[:, j] = digit + _ZERO
    # Leading zeros are blank, but for the one before the point ("0.25").
    first = np.minimum(width - lengths, width - places - 1)
    digits[np.arange(width)[None, :] < first[:, None]] = 0
    # Rows by the point's place (a few values), so that each place is one slice.
    order = np.argsort(places, kind="stable")
    digits, by_place = digits[order], places[order]
    out = np.zeros((n, width + 2), dtype=np.uint8)
    bounds = np.flatnonzero(np.r_[True, by_place[1:] != by_place[:-1], True])
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        cut = width - int(by_place[lo])
        out[lo:hi, 1:cut + 1] = digits[lo:hi, :cut]
        out[lo:hi, cut + 1] = ord(".")
        out[lo:hi, cut + 2:] = digits[lo:hi, cut:]
    out[order] = out.copy()                              # back to the rows' order
    out[negative, 0] = ord("-")
    return out.view(f"S{width + 2}").ravel()


def csv_bytes(header: Sequence[str], columns: Sequence, n_rows: int) -> bytes:
    """CSV bytes (``\\n`` line ends) of a header and columns.

    ``columns`` holds, per column, a function ``(lo, hi) -> (rows, width) uint8 matrix``
    giving the text of rows ``lo:hi`` (see the ``*_field`` functions), so that at most
    ``_CHUNK_ROWS`` rows are laid out at once.
    """
    return b"".join(csv_chunks(header, columns, n_rows))


def csv_chunks(header: Sequence[str], columns: Sequence, n_rows: int) -> list[bytearray]:
    """:func:`csv_bytes` in pieces (header, then chunks of rows), to be joined or written."""
    out = [bytearray((",".join(quote(h) for h in header) + "\n").encode())]
    for lo in range(0, n_rows, _CHUNK_ROWS):
        hi = min(lo + _CHUNK_ROWS, n_rows)
        fields = [make(lo, hi) for make in columns]
        width = sum(f.shape[1] for f in fields) + len(fields)
        # (a bytearray: translate deletes the padding without a copy to bytes first)
        buffer = bytearray((hi - lo) * width)
        block = np.frombuffer(buffer, dtype=np.uint8).reshape(hi - lo, width)
        at = 0
        for k, field in enumerate(fields):
            block[:, at:at + field.shape[1]] = field
            at += field.shape[1]
            block[:, at] = ord("\n") if k == len(fields) - 1 else ord(",")
            at += 1
        del block
        out.append(buffer.translate(None, b"\0"))
    return out
