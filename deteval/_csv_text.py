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

__all__ = ["csv_bytes", "float_field", "int_field", "label_field", "quote"]

_ZERO = ord("0")
#: Rows laid out at once: bounds the padded matrices (about 200 bytes a row) in memory.
_CHUNK_ROWS = 1 << 20


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
        span = high - low + 1
        if n >= 4 * span and span <= 1 << 22:
            # Few distinct values (object rows, ids): write each once and look them up.
            table = _int_text(np.arange(low, high + 1, dtype=np.int64))
            out = table.view(f"S{table.shape[1]}").ravel()[values - low]
            out = out.view(np.uint8).reshape(n, table.shape[1])
            if empty_below is not None:
                out[values < empty_below] = 0
            return out
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
    table = np.array(encoded, dtype=f"S{max(1, max(len(e) for e in encoded))}")
    chosen = table[np.where(np.asarray(codes) >= 0, codes, len(encoded) - 1)]
    return chosen.view(np.uint8).reshape(len(chosen), -1)


def float_field(values: np.ndarray) -> np.ndarray:
    """Text of floats that reads back to the same double, shape ``(n, width)`` uint8.

    NaN is an empty field; infinities are ``inf`` and ``-inf``. The first ``p`` in 0..17
    with ``N = rint(x * 10**p)`` below 2**53 and ``N / 10**p == x`` gives the fixed-point
    text of ``N`` with ``p`` decimals: ``N`` and ``10**p`` are exact doubles, so the
    correctly rounded division equals ``x`` exactly when the decimal reads back as ``x``.
    Other values (16 or 17 significant digits, very large or small) take numpy's shortest
    representation, which is also exact.

    >>> float_field(np.array([0.5, 3.0, np.nan, 0.1 + 0.2])).tobytes().replace(b"\\0", b"")
    b'0.53.00.30000000000000004'
    """
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    text = np.zeros(n, dtype="S1")
    todo = np.isfinite(x)
    # Fast: fixed point with the fewest decimals that reads back exactly.
    scaled_n = np.zeros(n, dtype=np.int64)
    places = np.full(n, -1, dtype=np.int64)
    magnitude = np.abs(np.where(todo, x, 0.0))
    small = todo & (magnitude < 2.0 ** 53)          # times 10**17: no overflow
    for p in range(18):
        cand = np.flatnonzero(small & (places < 0))
        if not len(cand):
            break
        scale = 10.0 ** p
        big = np.rint(magnitude[cand] * scale)
        fits = big < 2.0 ** 53
        exact = fits & (big / scale == magnitude[cand])
        hit = cand[exact]
        scaled_n[hit] = big[exact].astype(np.int64)
        places[hit] = p
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


def _fixed_point(scaled: np.ndarray, places: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """``scaled / 10**places`` as text: at least one digit before the point, ``.0`` for
    whole numbers (as Python writes floats)."""
    n = len(scaled)
    whole = places == 0                      # written N.0: one decimal, a zero
    scaled = np.where(whole, scaled * 10, scaled)
    places = np.where(whole, 1, places)
    digits = _lengths(scaled)
    # Digits before the point; whole numbers get ".0" appended.
    int_digits = np.maximum(digits - places, 1)
    frac = places
    width = int((int_digits + frac).max(initial=1)) + 2      # point and sign
    out = np.zeros((n, width), dtype=np.uint8)
    total = int_digits + frac + 1 + negative                # characters used
    rest = scaled.copy()
    pos = np.arange(n)
    # Fill from the last fraction digit backwards: column = total - 1 - k.
    for k in range(width):
        col = total - 1 - k
        live = col >= negative.astype(np.int64)
        if not live.any():
            break
        is_point = k == frac
        digit = np.where(is_point, ord("."), rest % 10 + _ZERO)
        rest = np.where(is_point | ~live, rest, rest // 10)
        out[pos[live], col[live]] = digit[live]
    out[np.flatnonzero(negative), 0] = ord("-")
    return out.view(f"S{width}").ravel()


def csv_bytes(header: Sequence[str], columns: Sequence, n_rows: int) -> bytes:
    """CSV bytes (``\\n`` line ends) of a header and columns.

    ``columns`` holds, per column, a function ``(lo, hi) -> (rows, width) uint8 matrix``
    giving the text of rows ``lo:hi`` (see the ``*_field`` functions), so that at most
    ``_CHUNK_ROWS`` rows are laid out at once.
    """
    out = [(",".join(quote(h) for h in header) + "\n").encode()]
    for lo in range(0, n_rows, _CHUNK_ROWS):
        hi = min(lo + _CHUNK_ROWS, n_rows)
        fields = [make(lo, hi) for make in columns]
        width = sum(f.shape[1] for f in fields) + len(fields)
        block = np.empty((hi - lo, width), dtype=np.uint8)   # every byte is set below
        at = 0
        for k, field in enumerate(fields):
            block[:, at:at + field.shape[1]] = field
            at += field.shape[1]
            block[:, at] = ord("\n") if k == len(fields) - 1 else ord(",")
            at += 1
        out.append(block.tobytes().translate(None, b"\0"))
    return b"".join(out)
