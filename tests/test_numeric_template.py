"""``deteval.io._numeric_template``: the bbox results reader's template path.

Its one-word number routine must read exactly the texts ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` of
at most 8 characters, each bit for bit as Python's ``float`` (and ``int`` for integers), and
flag every other byte string as not read; the template must accept a piece only when it is
the file's record layout repeated. Files read through it alone (the general path disabled)
must give msgspec's columns, and any text it is given must read as msgspec reads it or be
refused.
"""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval.io import _numeric_json
from deteval.io._numeric_json import numeric_results_columns
from deteval.io._numeric_template import GlueTemplate, byte_windows, word_numbers
from deteval.io.coco.typed import _typed_results_columns

_SHORT = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")


def _words(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Each text's first 8 bytes as a word (garbage after it, as in a file) and its length."""
    blob = b"".join(t[:8] + b"7,e-x.9]"[: 8 - len(t[:8])] for t in texts)
    return np.frombuffer(blob, dtype="<u8").copy(), np.array([len(t) for t in texts])


def _check(texts: list[bytes]) -> None:
    values, ok, integral, negative, mantissa = word_numbers(*_words(texts))
    for i, text in enumerate(texts):
        readable = len(text) <= 8 and _SHORT.fullmatch(text) is not None
        assert ok[i] == readable, text
        if readable:
            expected = float(text) if b"." in text else float(int(text))
            assert values[i:i + 1].view(np.int64)[0] == np.float64(expected).view(np.int64), text
            assert integral[i] == (b"." not in text)
            if integral[i]:
                assert (-1 if negative[i] else 1) * int(mantissa[i]) == int(text)


def test_every_short_text_over_number_characters():
    """Every text of 1 to 5 characters over ``0 1 9 . - + e`` and a space (55,000): read
    exactly when it is a JSON number without exponent, flagged otherwise."""
    alphabet = [bytes([c]) for c in b"019.-+e "]
    texts = [b"".join(p) for n in range(1, 6) for p in itertools.product(alphabet, repeat=n)]
    _check(texts)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.builds(
    lambda sign, whole, fraction: (sign + str(whole) + fraction).encode(),
    st.sampled_from(["", "-"]), st.integers(0, 10 ** 8),
    st.sampled_from([""]) | st.text("0123456789", min_size=1, max_size=7).map(
        lambda d: "." + d)), min_size=1, max_size=40))
def test_short_numbers_read_as_python(texts):
    _check(texts)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=9), min_size=1, max_size=40))
def test_arbitrary_bytes_are_read_only_when_numbers(texts):
    _check(texts)


# ---------------------------------------------------------------------------------------------
# The template
# ---------------------------------------------------------------------------------------------

KEYS = ("image_id", "category_id", "bbox", "score")


def _runs(template: GlueTemplate, text: bytes):
    data = np.frombuffer(text + bytes(16), dtype=np.uint8)
    return template.runs(data[:len(text)], byte_windows(data)[1], 0)


@pytest.mark.parametrize("order", list(itertools.permutations(KEYS)))
def test_compact_template_finds_every_value(order):
    records = [{"image_id": 12, "category_id": 3, "bbox": [1.5, 22, 333, 4444],
                "score": 0.125}] * 3
    text = json.dumps([{k: r[k] for k in order} for r in records],
                      separators=(",", ":")).encode()[1:-1]
    template = GlueTemplate(order)
    starts, lengths = _runs(template, text)
    found = [[text[s:s + n].decode() for s, n in zip(row, length)]
             for row, length in zip(starts.tolist(), lengths.tolist())]
    by_column = dict(zip(template.columns.tolist(), found[1]))
    assert [by_column[c] for c in range(7)] == ["12", "3", "1.5", "22", "333", "4444", "0.125"]
    assert found[0] == found[1] == found[2]


def test_template_refuses_other_glue():
    template = GlueTemplate(KEYS)
    good = b'{"image_id":1,"category_id":2,"bbox":[1,2,3,4],"score":1}'
    assert _runs(template, good + b"," + good) is not None
    for bad in (good.replace(b"bbox", b"bbax"), good.replace(b":[", b":{"),
                good.replace(b'"score"', b'"scor"'), good.replace(b"}", b"]"),
                good.replace(b"[1,", b"[,1"), good.replace(b"1,2", b"12,"),
                good.replace(b'":1,"c', b'"1:,"c'), good[1:], good[:-1]):
        assert _runs(template, good + b"," + bad) is None, bad


def _file(seed: int, n: int = 40, **dumps) -> bytes:
    """Records with short decimals, and some wide values (17-digit scores, scores in
    exponent form, ids of 9 to 11 digits: fewer than one a record), negative numbers."""
    rng = np.random.default_rng(seed)
    records = [{"image_id": int(rng.integers(0, 10 ** rng.integers(1, 12))) if i % 4 == 0
                else int(rng.integers(0, 10 ** 6)),
                "category_id": int(rng.integers(-5, 90)),
                "bbox": [float(np.round(v, int(rng.integers(0, 5)))) for v in rng.random(4) * 900],
                "score": float(rng.random() * 10.0 ** -rng.integers(0, 7)) if i % 3 == 0
                else round(float(rng.random()), 3)} for i in range(n)]
    for record in records[::5]:
        record["bbox"][0] = -record["bbox"][0]      # negative x, -0.0 where it rounded to 0
    return json.dumps(records, **dumps).encode()


@pytest.mark.parametrize("dumps", [dict(separators=(",", ":")), dict(), dict(indent=2),
                                   dict(indent=16)])
def test_files_read_by_the_template_path_alone(dumps, monkeypatch):
    """With the general path disabled the template path reads these layouts (wide ids,
    negative numbers, scores in exponent form, 17-digit values: left to parse_numbers)
    exactly as msgspec does."""
    raw = _file(len(dumps), **dumps)
    assert re.search(rb"[0-9.e-]{9,}", raw)     # wide values, left to parse_numbers
    expected = _typed_results_columns(raw)
    monkeypatch.setattr(_numeric_json, "_parse_piece", None)    # calling it would fail
    for threads, piece_bytes in ((1, None), (2, 200), (3, 997)):
        got = numeric_results_columns(raw, threads=threads, piece_bytes=piece_bytes)
        for a, b in zip(got, expected, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a.view(np.int64), b.view(np.int64))


def test_mutated_files_read_as_msgspec_or_are_refused():
    """Single-byte changes (replaced, inserted, removed) of a file: whatever the reader
    accepts, msgspec reads to the same columns; what msgspec refuses, the reader refuses."""
    rng = np.random.default_rng(5)
    alphabet = b'0123456789.,-+eE:[]{}" \n\x0bx'
    for layout in (dict(separators=(",", ":")), dict()):
        base = _file(9, 6, **layout)
        for _ in range(150):
            at = int(rng.integers(1, len(base) - 1))
            byte = bytes([alphabet[int(rng.integers(len(alphabet)))]])
            raw = [base[:at] + byte + base[at + 1:], base[:at] + byte + base[at:],
                   base[:at] + base[at + 1:]][int(rng.integers(3))]
            try:
                expected = _typed_results_columns(raw)
            except Exception:   # noqa: BLE001 (msgspec's path refuses: so must this one)
                expected = None
            for piece_bytes in (None, 150):
                got = numeric_results_columns(raw, piece_bytes=piece_bytes)
                if got is None:
                    continue
                assert expected is not None, raw
                for a, b in zip(got, expected, strict=True):
                    assert np.array_equal(a.view(np.int64), b.view(np.int64)), raw
