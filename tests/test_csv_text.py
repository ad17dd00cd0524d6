"""The vectorised CSV text writer (deteval/_csv_text.py) against Python's own formatting and
the csv module, on seeded random values."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from deteval._csv_text import csv_bytes, float_field, int_field, label_field, quote


def _lines(field: np.ndarray) -> list[str]:
    """One CSV column's text, row by row."""
    data = csv_bytes(["x"], [lambda lo, hi: field[lo:hi]], len(field)).decode()
    lines = data.split("\n")
    assert lines[0] == "x" and lines[-1] == ""
    return lines[1:-1]


@pytest.mark.parametrize("seed", [0, 1])
def test_integers_as_python_writes_them(seed):
    rng = np.random.default_rng(seed)
    values = np.r_[rng.integers(-10**12, 10**12, 300), rng.integers(-3, 30, 300),
                   0, -1, 9, 10, -10, 99, 100, 10**9, -10**9 + 1]
    assert _lines(int_field(values)) == [str(v) for v in values.tolist()]


def test_integers_with_few_values_use_the_lookup_and_agree():
    values = np.random.default_rng(2).integers(-1, 50, 1000)   # n >= 4 * span: lookup
    assert _lines(int_field(values)) == [str(v) for v in values.tolist()]
    assert _lines(int_field(values, empty_below=0)) == [
        str(v) if v >= 0 else "" for v in values.tolist()]


@pytest.mark.parametrize("seed", [0, 1])
def test_floats_read_back_to_the_same_double(seed):
    rng = np.random.default_rng(seed)
    values = np.r_[rng.random(400), rng.random(100) * 1e6, np.round(rng.random(100), 3),
                   -np.round(rng.random(100) * 100, 2), rng.standard_normal(100) * 1e-7,
                   0.0, -0.0, 1e-300, 1e300, 5e-324, 1.2345678901234568e17, 2.0**53,
                   2.0**53 + 2, np.inf, -np.inf, np.nan, 1.0, -2.5, 0.1 + 0.2, 1024.0]
    text = _lines(float_field(values))
    back = np.array([float(t) if t else np.nan for t in text])
    assert np.array_equal(back, values, equal_nan=True)
    assert np.array_equal(np.signbit(back), np.signbit(values))      # -0.0 stays negative
    # the short forms are Python's own where it writes fixed point
    short = np.round(rng.random(200), 4)
    assert _lines(float_field(short)) == [repr(v) for v in short.tolist()]


def test_floats_nan_is_an_empty_field_and_whole_numbers_get_a_decimal():
    assert _lines(float_field(np.array([np.nan, 3.0, -7.0, 0.25]))) == ["", "3.0", "-7.0",
                                                                          "0.25"]


def test_labels_are_quoted_as_the_csv_module_reads_them():
    labels = ["cat", "hot, dog", 'say "hi"', " padded", "line\nbreak", "ünï"]
    codes = np.array([0, 1, 2, 3, 4, 5, -1, 1])
    data = csv_bytes(["name", "n"], [lambda lo, hi: label_field(codes[lo:hi], labels),
                                      lambda lo, hi: int_field(np.arange(lo, hi))],
                     len(codes)).decode()
    rows = list(csv.reader(io.StringIO(data)))
    assert rows[0] == ["name", "n"]
    assert [r[0] for r in rows[1:]] == [labels[c] if c >= 0 else "" for c in codes]
    assert [int(r[1]) for r in rows[1:]] == list(range(len(codes)))


def test_nul_in_a_label_is_refused():
    with pytest.raises(ValueError, match="NUL"):
        label_field(np.array([0]), ["a\0b"])


def test_quote():
    assert quote("plain") == "plain"
    assert quote("a,b") == '"a,b"'
    assert quote('a"b') == '"a""b"'


def test_rows_split_into_chunks_agree(monkeypatch):
    import deteval._csv_text as module

    values = np.random.default_rng(3).integers(0, 10**6, 1000)
    whole = _lines(int_field(values))
    monkeypatch.setattr(module, "_CHUNK_ROWS", 7)
    assert _lines(int_field(values)) == whole


def test_no_rows_is_the_header_only():
    assert csv_bytes(["a", "b"], [], 0) == b"a,b\n"


def test_floats_without_wide_long_doubles_still_read_back(monkeypatch):
    import deteval._csv_text as module

    values = np.random.default_rng(4).random(300) * 1000
    monkeypatch.setattr(module, "_WIDE", False)       # numpy's formatter for long values
    text = _lines(float_field(values))
    assert np.array_equal([float(t) for t in text], values)


def test_eighteen_digit_form_drops_trailing_zeros():
    # 0.5 + 2**-52 needs 17 digits; its 18-digit form ends in a non-zero digit
    value = 0.5 + 2.0 ** -52
    (text,) = _lines(float_field(np.array([value])))
    assert float(text) == value and len(text) <= 20 and not text.endswith("0")


def test_floats_with_few_values_use_the_lookup_and_agree():
    rng = np.random.default_rng(5)
    values = rng.choice(np.r_[np.round(rng.random(20), 2), np.nan, 0.1 + 0.2], 10_000)
    text = _lines(float_field(values))
    back = np.array([float(t) if t else np.nan for t in text])
    assert np.array_equal(back, values, equal_nan=True)
