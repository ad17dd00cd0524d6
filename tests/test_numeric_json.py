"""``deteval.io._numeric_json``: the numpy reader of bbox results files in the common layout.

Its numbers must be bit for bit what Python's ``float(text)`` gives (and msgspec, whose path
it replaces), its columns those of the msgspec path for every layout it accepts, whatever the
number of threads or pieces; and for anything outside its grammar it must return None, after
which :func:`read_coco_results` gives exactly what it gave without it (the same detections or
the same error).
"""

from __future__ import annotations

import itertools
import json
import math
import struct
from decimal import Decimal

import msgspec
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from deteval.errors import FormatError
from deteval.io import _json_numbers, _numeric_json
from deteval.io._numeric_json import numeric_results_columns, parse_numbers
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.io.coco import results as results_module
from deteval.io.coco.typed import _typed_results_columns

KEYS = ("image_id", "category_id", "bbox", "score")


# ---------------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------------

def _python_value(text: bytes) -> float:
    """What msgspec (and the general path) read: a JSON integer as an int, then a float."""
    return float(text) if any(c in text for c in b".eE") else float(int(text))


def _parse(texts: list[bytes]):
    joined = b",".join(texts)
    lengths = np.array([len(t) for t in texts])
    last = np.cumsum(lengths + 1) - 1
    return parse_numbers(np.frombuffer(joined, dtype=np.uint8), last - lengths, last)


def _bits(values) -> list[int]:
    return np.asarray(values, dtype=np.float64).view(np.int64).tolist()


def _midpoint_texts(value: float) -> list[bytes]:
    """Decimal texts at and next to the exact midpoint between ``value`` and the next
    double: the cases where a parser that rounds twice goes wrong."""
    following = math.nextafter(value, math.inf)
    if not math.isfinite(following):
        return []
    middle = (Decimal(value) + Decimal(float(following))) / 2
    texts = []
    for digits in (16, 17, 18, 19, 24):       # 17 to 25 significant digits
        rounded = f"{middle:.{digits}e}"
        texts.append(rounded.encode())
    texts.append(format(middle, "f").encode()[:40])
    return texts


_digits = st.text(alphabet="0123456789", min_size=1, max_size=24)
_number_texts = st.builds(
    lambda sign, integer, fraction, exponent: (
        sign + (integer.lstrip("0") or "0") + fraction + exponent).encode(),
    st.sampled_from(["", "-"]), _digits,
    st.sampled_from([""]) | _digits.map(lambda d: "." + d),
    st.sampled_from([""]) | st.builds(lambda e, s, n: e + s + str(n), st.sampled_from("eE"),
                                      st.sampled_from(["", "+", "-"]),
                                      st.integers(0, 400)))
_edge_texts = [b"0", b"-0", b"0.0", b"-0.0", b"0e0", b"-0e-0", b"9007199254740993",
               b"9007199254740992", b"18446744073709551615", b"18446744073709551616",
               b"123456789012345678", b"-123456789012345678", b"1234567890123456789",
               b"0.1", b"5e-324", b"4.9406564584124654e-324", b"2.4703282292062328e-324",
               b"2.2250738585072011e-308", b"2.2250738585072014e-308",
               b"1.7976931348623157e308", b"1e22", b"1e23", b"8.98846567431158e307",
               b"258.1499938964844", b"0.30000000000000004", b"1e-27", b"1e27", b"1e28",
               b"12345678901234567e-27", b"0.00000000000000000000000000001", b"1E+2",
               b"307.65999999999997", b"1.2345678901234567e-05", b"1e0000004",
               b"0." + b"1" * 40, b"9" * 40]


@settings(max_examples=300, deadline=None)
@given(st.lists(_number_texts, min_size=1, max_size=20))
@example(_edge_texts)
@example([b"0"] * 9 + [b"-10000000000e+280"])   # a wide number deferred by the narrow pass
def test_numbers_equal_python_float_bit_for_bit(texts):
    values = [_python_value(t) for t in texts]
    finite = [t for t, v in zip(texts, values) if np.isfinite(v)]
    if not finite:
        return
    parsed = _parse(finite)
    assert parsed is not None
    assert _bits(parsed[0]) == _bits([_python_value(t) for t in finite])
    # And msgspec's reading of the same list (which the reader replaces) agrees.
    assert _bits(parsed[0]) == _bits(msgspec.json.decode(b"[" + b",".join(finite) + b"]",
                                                         type=list[float]))


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=0.0))
@example(9007199254740992.0)
@example(1.0)
@example(0.1)
def test_midpoints_between_doubles_round_as_python(value):
    texts = [t for t in _midpoint_texts(value) if np.isfinite(float(t))]
    if texts:
        assert _bits(_parse(texts)[0]) == _bits([float(t) for t in texts])


@pytest.mark.skipif(not _json_numbers._EXTENDED, reason="np.longdouble is not x87 extended")
def test_double_rounding_hazards_are_caught():
    """19-digit texts next to midpoints between doubles: rounding their 64-bit-significand
    value to float64 is wrong for some (the hazard is real), and the parser is right for
    every one of them."""
    rng = np.random.default_rng(7)
    texts = []
    for value in (rng.random(4000) * 10.0 ** rng.integers(-5, 6, 4000)).tolist():
        texts += [t for t in _midpoint_texts(value)[:3] if len(t.split(b"e")[0]) <= 21]
    naive = []
    for text in texts:
        mantissa, exponent = text.split(b"e")
        digits = mantissa.replace(b".", b"")
        power = int(exponent) - (len(mantissa.split(b".")[1]) if b"." in mantissa else 0)
        wide = np.longdouble(int(digits))   # exact: 19 digits < 2**64
        ten = np.longdouble(1)
        for _ in range(abs(power)):
            ten *= 10
        naive.append(float(wide * ten if power >= 0 else wide / ten))
    expected = [float(t) for t in texts]
    assert sum(a != b for a, b in zip(naive, expected)) > 0
    assert _bits(_parse(texts)[0]) == _bits(expected)


def test_float32_reprs_round_as_python():
    """The common detector layout: float32 values written as 17-digit float64 reprs."""
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.random(3000) * 10.0 ** rng.integers(-8, 5, 3000),
                             rng.random(1000)]).astype(np.float32).astype(np.float64)
    texts = [repr(v).encode() for v in values.tolist()]
    assert _bits(_parse(texts)[0]) == _bits(values)


@given(st.lists(st.integers(-(10 ** 18) + 1, 10 ** 18 - 1), min_size=1, max_size=30))
def test_integers_read_exactly(numbers):
    values, integral, integers = _parse([str(n).encode() for n in numbers])
    assert integral.all()
    assert integers.tolist() == numbers
    assert _bits(values) == _bits([float(n) for n in numbers])


@pytest.mark.parametrize("text", [b"01", b"-01", b"00.5", b"-", b"1.", b".5", b"-.5", b"1e",
                                  b"1e+", b"+1", b"1.2.3", b"1e5e5", b"1e5.3", b"--1", b"1-2",
                                  b"1+2", b"e5", b"1.e5", b"1/2", b"-e1", b"1ee5", b"1e--5"])
def test_texts_outside_the_number_grammar_are_refused(text):
    assert _parse([b"1.5", text, b"2"]) is None


def test_integral_flags_only_integer_literals():
    _, integral, integers = _parse([b"12", b"12.0", b"1e1", b"-7", b"1234567890123456789"])
    assert integral.tolist() == [True, False, False, True, False]
    assert integers[[0, 3]].tolist() == [12, -7]


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------

def _records(seed: int, n: int = 60, *, long_numbers: bool = False, ints: bool = False,
             small_scores: bool = False) -> list[dict]:
    rng = np.random.default_rng(seed)
    boxes = rng.random((n, 4)) * rng.choice([1.0, 640.0, 1e-3], (n, 1))
    boxes[:, :2] -= rng.random((n, 2)) * 10 * (rng.random((n, 1)) < 0.2)
    if long_numbers:    # float32 values as their float64 reprs (17 digits)
        boxes = boxes.astype(np.float32).astype(np.float64)
    else:
        boxes = np.round(boxes, rng.integers(0, 4))
    scores = rng.random(n)
    if small_scores:
        scores = scores * 10.0 ** -rng.integers(0, 9, n)
    records = []
    for i in range(n):
        box = boxes[i].tolist()
        if ints:
            box = [int(v) if j % 2 else v for j, v in enumerate(box)]
        records.append({"image_id": int(rng.integers(-3, 10 ** 6)),
                        "category_id": int(rng.integers(0, 90)),
                        "bbox": box, "score": float(scores[i])})
    return records


def _text(records: list[dict], order=KEYS, **dumps) -> bytes:
    return json.dumps([{k: r[k] for k in order} for r in records], **dumps).encode()


_LAYOUTS = [dict(), dict(separators=(",", ":")), dict(indent=2), dict(indent="\t"),
            dict(separators=(" , ", " : ")), dict(indent=1, separators=(",\r\n", ":  ")),
            dict(indent=16)]


def _same_columns(got, expected):
    assert got is not None and expected is not None
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a.view(np.int64), b.view(np.int64))


@pytest.mark.parametrize("layout", range(len(_LAYOUTS)))
@pytest.mark.parametrize("kind", ["short", "long", "ints", "small_scores"])
def test_columns_equal_the_msgspec_path(layout, kind):
    records = _records(layout * 10 + len(kind), long_numbers=kind == "long", ints=kind == "ints",
                       small_scores=kind == "small_scores")
    order = list(itertools.permutations(KEYS))[(7 * layout + len(kind)) % 24]
    raw = _text(records, order, **_LAYOUTS[layout])
    expected = _typed_results_columns(raw)
    for threads, piece_bytes in ((1, None), (1, 300), (2, 300), (3, 1000), (4, 97)):
        _same_columns(numeric_results_columns(raw, threads=threads, piece_bytes=piece_bytes),
                      expected)


def test_irregular_whitespace_between_tokens():
    records = _records(11, 20)
    text = _text(records, separators=(",", ":")).decode()
    rng = np.random.default_rng(0)
    out = []
    for char in text:
        out.append(char)
        if char in ",:[]{}":
            out.append("".join(rng.choice([" ", "\n", "\t", "\r"], rng.integers(0, 3))))
    raw = ("\n " + "".join(out) + " \n").encode()
    _same_columns(numeric_results_columns(raw, piece_bytes=50), _typed_results_columns(raw))


def test_pieces_cut_at_record_boundaries():
    raw = _text(_records(5, 200))
    pieces = _numeric_json._pieces(raw, 1, len(raw) - 1, 500)
    assert len(pieces) > 5
    assert all(raw[stop - 1:stop] == b"}" for _, stop in pieces[:-1])


@pytest.mark.parametrize("size", [300, 500, 1000, 1900])
def test_pieces_are_about_equal_and_the_last_no_longer(size):
    """ceil(length / size) pieces, each within one record of the equal share: the last
    piece is not a remainder of up to twice the others (threads would end apart)."""
    records = _records(5, 200)
    raw = _text(records)
    longest = max(len(_text([r])) for r in records)
    pieces = _numeric_json._pieces(raw, 1, len(raw) - 1, size)
    assert len(pieces) == -(-(len(raw) - 2) // size)
    share = (len(raw) - 2) / len(pieces)
    lengths = [stop - begin for begin, stop in pieces]
    assert max(lengths) <= share + longest
    assert min(lengths) >= share - longest
    assert pieces[0][0] == 1 and pieces[-1][1] == len(raw) - 1
    assert all(b < e for b, e in pieces)
    assert all(raw[stop:begin].strip() == b"," for (_, stop), (begin, _) in
               zip(pieces, pieces[1:]))


# ---------------------------------------------------------------------------------------------
# Refusals: None, and read_coco_results as without the numeric reader
# ---------------------------------------------------------------------------------------------

_GOOD = '{"image_id": 1, "category_id": 2, "bbox": [1.5, 2, 3, 4], "score": 0.5}'
_REFUSED = {
    "extra key": '{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5, "x": 1}',
    "missing key": '{"image_id": 1, "bbox": [1, 2, 3, 4], "score": 0.5}',
    "other order": '{"category_id": 2, "image_id": 1, "bbox": [1, 2, 3, 4], "score": 0.5}',
    "duplicate key": '{"image_id": 1, "image_id": 1, "bbox": [1, 2, 3, 4], "score": 0.5}',
    "string score": '{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": "0.5"}',
    "bool score": '{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": true}',
    "null score": '{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": null}',
    "NaN": '{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": NaN}',
    "Infinity": '{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, Infinity], "score": 1}',
    "overflow": '{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1e400}',
    "float id": '{"image_id": 1.0, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}',
    "exponent id": '{"image_id": 1e0, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}',
    "huge id": '{"image_id": 1234567890123456789012, "category_id": 2, "bbox": [1, 2, 3, 4], '
               '"score": 0.5}',
    "nested box": '{"image_id": 1, "category_id": 2, "bbox": [[1, 2], 3, 4], "score": 0.5}',
    "short box": '{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3], "score": 0.5}',
    "negative width": '{"image_id": 1, "category_id": 2, "bbox": [1, 2, -3, 4], "score": 0.5}',
    "escaped key": '{"\\u0069mage_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}',
    "space in key": '{"image _id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}',
    "space in number": '{"image_id": 1, "category_id": 2, "bbox": [1, 2 5, 3, 4], "score": 0.5}',
    "leading zero": '{"image_id": 01, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}',
    "plus sign": '{"image_id": 1, "category_id": 2, "bbox": [+1, 2, 3, 4], "score": 0.5}',
    "upper-case key": '{"imagE_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}',
    "moved number": '{"image_id"1:, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5}',
    "moved numbers": '{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4]0, "score": }',
    "non-ASCII": '{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 0.5, "é": 1}',
}
_TEXTS = {name: "[" + _GOOD + ", " + record + "]" for name, record in _REFUSED.items()}
_TEXTS.update({
    "trailing comma": "[" + _GOOD + ", " + _GOOD + ",]",
    "truncated": "[" + _GOOD + ", " + _GOOD[:40],
    "no array": _GOOD,
    "annotations object": '{"annotations": [' + _GOOD + "]}",
    "empty array": "[ ]",
    "missing comma": "[" + _GOOD + " " + _GOOD + "]",
    "two commas": "[" + _GOOD + ",," + _GOOD + "]",
    "text after": "[" + _GOOD + "] x",
    "control byte": "[" + _GOOD + ",\x0b" + _GOOD + "]",
    # After two regular records (the file's own layout is then known): a control byte where
    # a piece is cut, or inside a number (0x0B | 0x20 is '+'), was read as whitespace or as
    # a number character.
    "control byte after a cut": "[" + _GOOD + ", " + _GOOD + ",\x0b" + _GOOD + "]",
    "control byte in an id": "[" + _GOOD + ", " + _GOOD + ", " + _GOOD.replace(": 1,", ": 79\x0b,")
                             + "]",
    "control byte in a box": "[" + _GOOD + ", " + _GOOD + ", " + _GOOD.replace("1.5", "1.\x0b5")
                             + "]",
})
_BOM = b"\xef\xbb\xbf"


def _dataset():
    return read_coco_gt({"images": [{"id": 1, "width": 10, "height": 10}],
                         "annotations": [], "categories": [{"id": 2, "name": "a"}]})


def _read(path, monkeypatch, numeric: bool):
    with monkeypatch.context() as patch:
        patch.setattr(results_module, "_NUMERIC_MIN_BYTES", 0)
        if not numeric:
            patch.setattr(_numeric_json, "numeric_results_columns", lambda *a, **k: None)
        try:
            return read_coco_results(path, _dataset())
        except FormatError as err:
            return str(err)


@pytest.mark.parametrize("name", [*_TEXTS, "BOM"])
def test_refused_texts_read_as_before(name, tmp_path, monkeypatch):
    raw = _BOM + _TEXTS["trailing comma"].encode() if name == "BOM" else _TEXTS[name].encode(
        "utf-8")
    assert numeric_results_columns(raw) is None
    assert numeric_results_columns(raw, piece_bytes=1, threads=2) is None
    path = tmp_path / "results.json"
    path.write_bytes(raw)
    got, expected = _read(path, monkeypatch, True), _read(path, monkeypatch, False)
    if isinstance(expected, str):
        assert got == expected
    else:
        for field in ("image_index", "category_index", "boxes", "scores", "area", "xywh"):
            assert np.array_equal(getattr(got, field), getattr(expected, field))


def test_accepted_file_reads_as_before(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    records = [{"image_id": 1, "category_id": int(rng.choice([2, 5])),
                "bbox": [float(v) for v in rng.random(4) * 9], "score": float(rng.random())}
               for _ in range(50)]
    path = tmp_path / "results.json"
    path.write_bytes(_text(records, indent=1))
    assert numeric_results_columns(path.read_bytes()) is not None
    got, expected = _read(path, monkeypatch, True), _read(path, monkeypatch, False)
    for field in ("image_index", "category_index", "boxes", "scores", "area", "xywh",
                  "category_ids"):
        assert np.array_equal(getattr(got, field), getattr(expected, field))


def test_negative_zero_as_msgspec_reads_it():
    raw = b'[{"image_id": -0, "category_id": 0, "bbox": [-0, -0.0, 0, 0e0], "score": -0e0}]'
    _same_columns(numeric_results_columns(raw), _typed_results_columns(raw))
    assert struct.pack("<d", numeric_results_columns(raw)[3][0, 1]) == struct.pack("<d", -0.0)


def test_coco_fake_results_read_as_before(coco100_dir, monkeypatch):
    """The COCO API's own fake bbox results (a real file) read by this reader: the same
    detections as the msgspec path, whose evaluation the parity tests hold."""
    path = coco100_dir / "instances_val2014_fakebbox100_results.json"
    assert numeric_results_columns(path.read_bytes()) is not None
    dataset = read_coco_gt(coco100_dir / "instances_val2014_100.json")
    with monkeypatch.context() as patch:
        patch.setattr(results_module, "_NUMERIC_MIN_BYTES", 0)
        got = read_coco_results(path, dataset, threads=2)
        patch.setattr(_numeric_json, "numeric_results_columns", lambda *a, **k: None)
        expected = read_coco_results(path, dataset)
    for field in ("image_index", "category_index", "boxes", "scores", "area", "xywh",
                  "category_ids"):
        assert np.array_equal(getattr(got, field), getattr(expected, field))


def test_seventeen_digit_files_left_to_msgspec():
    """The call site's choice: short decimals go to this reader, 17-digit reprs (where it
    costs more CPU than msgspec) do not; either way the detections are the same."""
    short = _text(_records(2, 300))
    long = _text(_records(2, 300, long_numbers=True))
    assert results_module._short_numbers(short)
    assert not results_module._short_numbers(long)
    assert not results_module._short_numbers(b"[]")


def test_results_file_read_once_and_checked_only_when_refused(tmp_path, monkeypatch):
    """A file the numpy reader accepts is read once into bytes (not mapped: a file truncated
    by another process while mapped would end the process with SIGBUS) and its text is not
    checked again (``checked_json_bytes`` is not called: the reader takes ASCII only), with
    the detections of the msgspec path; a file it refuses is checked and read as before,
    errors worded alike."""
    records = _records(4, 1200)
    dataset = read_coco_gt({
        "images": [{"id": i, "width": 9, "height": 9}
                   for i in sorted({r["image_id"] for r in records})],
        "annotations": [], "categories": [{"id": c, "name": str(c)} for c in range(90)]})
    path = tmp_path / "results.json"
    path.write_bytes(_text(records, separators=(",", ":")))
    assert path.stat().st_size >= results_module._NUMERIC_MIN_BYTES
    expected = _read_without_numeric(path, dataset, monkeypatch)
    with monkeypatch.context() as patch:
        patch.setattr(results_module, "checked_json_bytes", None)   # calling it would fail
        got = read_coco_results(path, dataset)
    for field in ("image_index", "category_index", "boxes", "scores", "area", "xywh",
                  "category_ids"):
        assert np.array_equal(getattr(got, field), getattr(expected, field))
    path.write_bytes(path.read_bytes()[:-2])        # truncated: refused, then worded
    with pytest.raises(FormatError) as err:
        read_coco_results(path, dataset)
    with pytest.raises(FormatError) as without:
        _read_without_numeric(path, dataset, monkeypatch)
    assert str(err.value) == str(without.value)


def _read_without_numeric(path, dataset, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(_numeric_json, "numeric_results_columns", lambda *a, **k: None)
        return read_coco_results(path, dataset)
