"""``deteval.io._json.array_pieces``: a JSON array cut into arrays of consecutive records.

The bbox results reader decodes a large file piece by piece (only one piece's Python
objects alive at a time). For any text, either every piece parses and the pieces' records
are the whole file's, or a piece fails to parse (and the reader reads the whole file its
general way, with the same error as without pieces).
"""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest
from cocogen import make_dataset
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval.errors import FormatError
from deteval.io import _json
from deteval.io._json import array_pieces
from deteval.io.coco import read_coco_gt, read_coco_results

_scalars = (st.none() | st.booleans() | st.integers(-10**6, 10**6)
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(alphabet='{}[],:" \\ab\n', max_size=8))
_keys = st.text(alphabet='abc}{,"', max_size=4)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(_keys, inner, max_size=3), max_leaves=8)
_records = st.lists(st.dictionaries(_keys, _values, max_size=4), max_size=12)
# Records as results files hold them: no object inside an array (a cut there fails).
_flat_records = st.lists(st.dictionaries(_keys, _scalars | st.lists(_scalars, max_size=4)
                                         | st.dictionaries(_keys, _scalars, max_size=2),
                                         max_size=4), max_size=12)
_styles = dict(indent=st.sampled_from([None, 1, 2]),
               separators=st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]),
               size=st.integers(1, 40))


def _pieces_records(raw: bytes, size: int):
    """Records of the pieces, or None when a piece does not parse."""
    records = []
    for piece in array_pieces(raw, size):
        try:
            records.extend(orjson.loads(piece))
        except orjson.JSONDecodeError:
            return None
    return records


@settings(max_examples=150, deadline=None)
@given(records=_flat_records, **_styles)
def test_pieces_hold_the_records_in_order(records, indent, separators, size):
    raw = json.dumps(records, indent=indent, separators=separators).encode()
    assert _pieces_records(raw, size) == records


@settings(max_examples=150, deadline=None)
@given(records=_records, **_styles)
def test_pieces_never_parse_into_other_records(records, indent, separators, size):
    """Objects nested in arrays may be cut (a piece then fails, and the reader reads the
    whole file): pieces that all parse hold the file's records."""
    raw = json.dumps(records, indent=indent, separators=separators).encode()
    assert _pieces_records(raw, size) in (None, records)


@settings(max_examples=150, deadline=None)
@given(records=_records, cut=st.integers(0, 10**6), junk=st.sampled_from(
    [b"", b",", b"}", b"]", b"{", b'"', b",,", b"x"]), size=st.integers(1, 30))
def test_damaged_text_never_parses_into_other_records(records, cut, junk, size):
    """Insert or delete a byte anywhere: when every piece parses, the whole text parses to
    the same records."""
    raw = json.dumps(records).encode()
    at = cut % (len(raw) + 1)
    damaged = raw[:at] + junk + raw[at + (not junk):]
    pieced = _pieces_records(damaged, size)
    if pieced is not None:
        assert pieced == orjson.loads(damaged)


def test_small_or_unusual_text_is_one_piece():
    assert list(array_pieces(b'[{"a": 1}, {"a": 2}]')) == [b'[{"a": 1}, {"a": 2}]']
    for raw in (b'{"annotations": [{"a": 1}, {"a": 2}]}', b'x[{"a": 1}, {"a": 2}]',
                b'[{"a": 1}, {"a": 2}]x', b'[{"a": "\\""}, {"a": 2}]'):
        assert list(array_pieces(raw, 1)) == [raw]
    assert list(array_pieces(b'[{"a": 1},{"b": 2}, {"c": 3}]', 1)) == [
        b'[{"a": 1}]', b'[{"b": 2}]', b'[{"c": 3}]']


@pytest.fixture
def results_file(tmp_path):
    gt, results = make_dataset(4, n_images=5, n_categories=4)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results, indent=1))
    return read_coco_gt(gt), results, path


@pytest.mark.parametrize("size", [1, 100, 1000])
def test_reader_reads_the_same_detections_piece_by_piece(results_file, size, monkeypatch):
    dataset, results, path = results_file
    whole = read_coco_results(path, dataset)
    monkeypatch.setattr(_json, "PIECE_BYTES", size)
    pieced = read_coco_results(path, dataset)
    assert len(whole) == len(results) > 20
    for name in ("image_index", "category_index", "boxes", "scores", "area", "xywh",
                 "category_ids"):
        assert np.array_equal(getattr(whole, name), getattr(pieced, name)), name


def test_reader_error_is_the_same_piece_by_piece(results_file, monkeypatch):
    dataset, results, path = results_file
    results[-3]["score"] = "high"
    path.write_text(json.dumps(results))
    with pytest.raises(FormatError) as whole:
        read_coco_results(path, dataset)
    monkeypatch.setattr(_json, "PIECE_BYTES", 10)
    with pytest.raises(FormatError) as pieced:
        read_coco_results(path, dataset)
    assert str(pieced.value) == str(whole.value)
    assert f"results[{len(results) - 3}]" in str(pieced.value)
