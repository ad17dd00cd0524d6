"""``deteval.io._numeric_keypoints``: the numpy reader of keypoint results and of the ground
truth's keypoint lists.

Whatever it accepts must read bit for bit as msgspec reads it (the typed decoders of
``deteval.io.coco.typed``), for every number of threads and every piece size; whatever is
not exactly records of the file's one fixed shape must be refused (None), and the readers
then give exactly what they gave without it (the same detections, or the same error text).
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest

from deteval.errors import FormatError
from deteval.io._numeric_keypoints import (
    numeric_keypoint_lists,
    numeric_keypoint_results,
    short_values,
)
from deteval.io.coco import read_coco_gt, read_coco_results, typed
from deteval.io.coco import results as results_module

KEYS = ("image_id", "category_id", "keypoints", "score")


def _records(seed: int, n: int = 30, *, k: int = 17, box: bool = False, wide: bool = True):
    """Keypoint results with short decimals, integers, negative numbers, -0.0, and (``wide``)
    some 17-digit values, exponents and ids of 9 to 12 digits (fewer than one a record)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        points = [round(float(v), int(d)) for v, d in zip(rng.uniform(-20, 700, 3 * k),
                                                          rng.integers(0, 4, 3 * k))]
        points[2::3] = np.round(rng.random(k), 3).tolist()
        points[1] = -0.0 if i % 7 == 0 else points[1]
        points[-3] = int(points[-3])
        if wide and i % 5 == 0:
            points[int(rng.integers(3 * k))] = float(rng.random()) * 10.0 ** -int(rng.integers(5))
        record = {"image_id": int(rng.integers(1, 10 ** int(rng.integers(1, 13)))) if wide
                  and i % 9 == 0 else int(rng.integers(1, 50)),
                  "category_id": int(rng.integers(1, 4)),
                  "keypoints": points,
                  "score": round(float(rng.random()), int(rng.integers(1, 6)))}
        if box:
            record["bbox"] = np.round(rng.uniform(0, 300, 4), 2).tolist()
        out.append(record)
    return out


def _text(records, order=KEYS, **dumps) -> bytes:
    return json.dumps([{key: r[key] for key in order} for r in records], **dumps).encode()


def _msgspec_columns(raw: bytes):
    records = typed._decoder(list[typed._KeypointResult]).decode(raw)
    n = len(records)
    xywh = None if records[0].bbox is None else np.array([r.bbox for r in records], float)
    return (np.array([r.image_id for r in records], np.int64),
            np.array([r.category_id for r in records], np.int64),
            np.array([r.score for r in records], np.float64),
            np.array([r.keypoints for r in records], np.float64).reshape(n, -1, 3), xywh)


def _same_bits(got, expected) -> None:
    for a, b in zip(got[:5], expected, strict=True):
        if b is None:
            assert a is None
            continue
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a.view(np.int64), b.view(np.int64))
    _same_extent(got)


def _same_extent(got) -> None:
    """The extent made piece by piece: a record's x min, x max, y min, y max as Python's min
    and max give them (any zero's sign aside: the boxes make those rows again), and bit for
    bit points_extent over the whole table; none when the records give their box."""
    if got.xywh is not None:
        assert got.extent is None
        return
    from deteval.keypoints import points_extent

    by_row = [[min(r[:, 0]), max(r[:, 0]), min(r[:, 1]), max(r[:, 1])]
              for r in got.keypoints.tolist() for r in [np.array(r)]]
    assert got.extent.shape == (len(got.keypoints), 4)
    assert np.array_equal(got.extent, np.array(by_row).reshape(-1, 4))
    whole = points_extent(got.keypoints[:, :, 0], got.keypoints[:, :, 1])
    assert np.array_equal(got.extent.view(np.int64), whole.view(np.int64))


_LAYOUTS = [dict(separators=(",", ":")), dict(), dict(indent=2), dict(indent="\t"),
            dict(separators=(" , ", " : "))]


@pytest.mark.parametrize("layout", range(len(_LAYOUTS)))
@pytest.mark.parametrize("box", [False, True])
def test_columns_equal_msgspec_bit_for_bit(layout, box):
    """Seven layouts of the same records (compact, json.dumps' defaults, indents, spaces
    around separators), with and without a box: msgspec's columns bit for bit (-0.0, wide
    values and ids, exponents), for 1 to 3 threads and pieces of 150 bytes to 1 MiB."""
    records = _records(layout + 10 * box, box=box)
    raw = _text(records, (*KEYS, "bbox") if box else KEYS, **_LAYOUTS[layout])
    expected = _msgspec_columns(raw)
    for threads, piece_bytes in ((1, None), (2, 150), (3, 997)):
        _same_bits(numeric_keypoint_results(raw, threads=threads, piece_bytes=piece_bytes),
                   expected)


@pytest.mark.parametrize("chunk_values", [1, 3 * 52, 1000])
def test_chunks_of_a_piece_give_the_columns_of_one(monkeypatch, chunk_values):
    """A piece's records converted in several chunks (one record, three, nineteen at a
    time; the reader's default takes about 1,260 at once): the same columns, bit for bit,
    and the same extents, numbers left to parse_numbers included."""
    import deteval.io._numeric_keypoints as numeric_keypoints

    records = _records(41, n=120)
    raw = _text(records, KEYS, **_LAYOUTS[1])
    expected = _msgspec_columns(raw)
    monkeypatch.setattr(numeric_keypoints, "_CHUNK_VALUES", chunk_values)
    for threads, piece_bytes in ((1, None), (2, 5000)):
        _same_bits(numeric_keypoint_results(raw, threads=threads, piece_bytes=piece_bytes),
                   expected)
    texts = [json.dumps(r["keypoints"]).encode() for r in records]
    lists = numeric_keypoint_lists(texts)
    assert lists.tobytes() == expected[3].tobytes()


@pytest.mark.parametrize("order", list(itertools.permutations((*KEYS, "bbox")))[::7])
def test_any_key_order(order):
    raw = _text(_records(3, 12, k=5, box=True), order, separators=(",", ":"))
    _same_bits(numeric_keypoint_results(raw, piece_bytes=100), _msgspec_columns(raw))


def test_other_keypoint_counts():
    for k in (1, 14, 133):
        raw = _text(_records(k, 9, k=k))
        columns = numeric_keypoint_results(raw)
        assert columns.keypoints.shape == (9, k, 3)
        _same_bits(columns, _msgspec_columns(raw))


_GOOD = '{"image_id": 1, "category_id": 1, "keypoints": [1.5, 2, 0.9, 3, 4, 1], "score": 0.5}'
_REFUSED = {
    "extra key": _GOOD.replace('"score"', '"id": 3, "score"'),
    "missing key": _GOOD.replace(', "score": 0.5', ""),
    "other count": _GOOD.replace("3, 4, 1", "3, 4, 1, 5, 6, 7"),
    "short list": _GOOD.replace(", 3, 4, 1", ""),
    "string": _GOOD.replace("0.9", '"0.9"'),
    "null": _GOOD.replace("0.9", "null"),
    "true": _GOOD.replace("0.9", "true"),
    "NaN": _GOOD.replace("0.9", "NaN"),
    "Infinity": _GOOD.replace("0.5", "Infinity"),
    "overflow": _GOOD.replace("0.9", "1e999"),
    "float id": _GOOD.replace('"image_id": 1', '"image_id": 1.0'),
    "exponent id": _GOOD.replace('"image_id": 1', '"image_id": 1e0'),
    "huge id": _GOOD.replace('"image_id": 1', '"image_id": 12345678901234567890'),
    "nested": _GOOD.replace("0.9", "[0.9]"),
    "segmentation": _GOOD.replace('"score"', '"segmentation": [[1, 2, 3, 4, 5, 6]], "score"'),
    "duplicate key": _GOOD.replace('"score"', '"score": 0.1, "score"'),
    "escaped key": _GOOD.replace('"score"', '"sc\\u006fre"'),
    "spaced key": _GOOD.replace('"score"', '"score "'),
    "space in a number": _GOOD.replace("1.5", "1 .5"),
    "leading zero": _GOOD.replace("1.5", "01.5"),
    "plus sign": _GOOD.replace("1.5", "+1.5"),
    "bare dot": _GOOD.replace("1.5", "1."),
    "negative box side": _GOOD.replace('"score"', '"bbox": [1, 2, -3, 4], "score"'),
    "non-ASCII": _GOOD.replace("1.5", "1.5\u00a0"),
}
_TEXTS = {name: "[" + _GOOD + ", " + record + "]" for name, record in _REFUSED.items()}
_TEXTS.update({
    "trailing comma": "[" + _GOOD + ", " + _GOOD + ",]",
    "truncated": "[" + _GOOD + ", " + _GOOD[:50],
    "no array": _GOOD,
    "annotations object": '{"annotations": [' + _GOOD + ", " + _GOOD + "]}",
    "empty array": "[ ]",
    "empty keypoints": "[" + _GOOD.replace("1.5, 2, 0.9, 3, 4, 1", "") + "]",
    "two commas": "[" + _GOOD + ",," + _GOOD + "]",
    "text after": "[" + _GOOD + ", " + _GOOD + "] x",
    "control byte after a cut": "[" + _GOOD + ", " + _GOOD + ",\x0b" + _GOOD + "]",
    "control byte in a number": "[" + _GOOD + ", " + _GOOD.replace("1.5", "1.\x0b5") + "]",
    "another layout": "[" + _GOOD + ", " + _GOOD.replace(", ", ",") + "]",
})


def _dataset(k: int | None = None):
    """One image and category; with ``k``, one object of ``k`` keypoints (the results'
    count must then be ``k``)."""
    annotations = [] if k is None else [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2], "area": 4,
         "iscrowd": 0, "num_keypoints": k, "keypoints": [1, 1, 2] * k}]
    return read_coco_gt({"images": [{"id": 1, "width": 10, "height": 10}],
                         "annotations": annotations, "categories": [{"id": 1, "name": "a"}]},
                        iou_type="keypoints")


def _read(path, dataset, monkeypatch, numeric: bool):
    with monkeypatch.context() as patch:
        patch.setattr(results_module, "_NUMERIC_MIN_BYTES", 0)
        if not numeric:
            patch.setattr(typed, "_numeric_keypoint_results", lambda *a: None)
            patch.setattr(results_module, "_numeric_keypoint_results", lambda *a: None)
        try:
            return read_coco_results(path, dataset, iou_type="keypoints")
        except FormatError as err:
            return str(err)


def _same_detections(got, expected) -> None:
    assert type(got) is type(expected)
    if isinstance(expected, str):
        assert got == expected
        return
    for field in dataclasses.fields(expected):
        a, b = getattr(got, field.name), getattr(expected, field.name)
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8)), \
                field.name
        else:
            assert a == b, field.name


@pytest.mark.parametrize("name", list(_TEXTS))
def test_refused_texts_read_as_before(name, tmp_path, monkeypatch):
    raw = _TEXTS[name].encode()
    assert numeric_keypoint_results(raw) is None
    assert numeric_keypoint_results(raw, piece_bytes=1, threads=2) is None
    path = tmp_path / "results.json"
    path.write_bytes(raw)
    dataset = _dataset()
    _same_detections(_read(path, dataset, monkeypatch, True),
                     _read(path, dataset, monkeypatch, False))


def test_mutated_files_read_as_msgspec_or_are_refused():
    """Single-byte changes (replaced, inserted, removed) of two files: whatever the reader
    accepts, msgspec reads to the same columns."""
    rng = np.random.default_rng(5)
    alphabet = b'0123456789.,-+eE:[]{}" \n\x0bx'
    for layout in (dict(separators=(",", ":")), dict()):
        base = _text(_records(9, 4, k=3, box=bool(layout)),
                     (*KEYS, "bbox") if layout else KEYS, **layout)
        for _ in range(150):
            at = int(rng.integers(1, len(base) - 1))
            byte = bytes([alphabet[int(rng.integers(len(alphabet)))]])
            raw = [base[:at] + byte + base[at + 1:], base[:at] + byte + base[at:],
                   base[:at] + base[at + 1:]][int(rng.integers(3))]
            for piece_bytes in (None, 120):
                got = numeric_keypoint_results(raw, piece_bytes=piece_bytes)
                if got is not None:
                    _same_bits(got, _msgspec_columns(raw))


@pytest.mark.parametrize("layout", range(len(_LAYOUTS)))
def test_wide_glue_bounds_equal_the_glue_template_s(layout):
    """The keypoint reader's value bounds (``_WideGlue.runs``: whole-piece operations, the
    glues alike compared at once) are ``GlueTemplate.runs``' bit for bit, or None where
    those are None, on texts with one byte changed, most of them in the glue between
    keypoints (the glues compared at once)."""
    from deteval.io._numeric_json import _array_bounds, _inside, _written_segments
    from deteval.io._numeric_keypoints import _shape_of
    from deteval.io._numeric_template import GlueTemplate, byte_windows

    rng = np.random.default_rng(11 + layout)
    box = layout % 2 == 1
    base = _text(_records(3, 6, box=box), (*KEYS, "bbox") if box else KEYS,
                 **_LAYOUTS[layout])
    start, end = _array_bounds(base)
    shape = _shape_of(base, start, end)
    wide = shape.template(base, start)
    plain = GlueTemplate(shape.order, *(_written_segments(base, start, shape.compact) or ()),
                         values=shape.values, arrays=shape.arrays)
    assert wide.usable and plain.usable
    glue = [at for at in range(start, end) if base[at] in b" ,\n\t:"]
    seen = set()
    for trial in range(300):
        at = int(rng.choice(glue)) if trial % 4 else int(rng.integers(start, end))
        byte = bytes([b' ,\n\t:0-x'[int(rng.integers(8))]])
        raw = base[:at] + byte + base[at + 1:] if trial else base
        data = np.frombuffer(raw + bytes(16), dtype=np.uint8)
        bounds = _array_bounds(raw)
        bounds = None if bounds is None else _inside(data, *bounds)
        if bounds is None:
            continue
        text = data[bounds[0]:bounds[1]]
        windows = byte_windows(data)[1]
        expected = plain.runs(text, windows, bounds[0])
        got = wide.runs(text, windows, bounds[0])
        seen.add(expected is None)
        if expected is None:
            assert got is None
            continue
        for a, b in zip(got, expected, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)
    assert seen == {True, False}


def test_call_site_reads_once_and_checks_only_refused_files(tmp_path, monkeypatch):
    """A file of 64 KiB or more with short numbers is read by this reader (its text not
    checked again), giving the msgspec path's detections bit for bit (boxes and areas from
    the keypoints' extent); a refused one (an unknown image) gives the same error text."""
    records = _records(4, 800, wide=False)
    for record in records:
        record["image_id"] = 1 + record["image_id"] % 3
    dataset = read_coco_gt({"images": [{"id": i, "width": 9, "height": 9} for i in (1, 2, 3)],
                            "annotations": [], "categories": [
                                {"id": c, "name": str(c)} for c in (1, 2)]},
                           iou_type="keypoints")
    path = tmp_path / "results.json"
    path.write_bytes(_text(records, separators=(",", ":")))
    assert path.stat().st_size >= results_module._NUMERIC_MIN_BYTES
    assert short_values(path.read_bytes())
    with monkeypatch.context() as patch:
        patch.setattr(results_module, "checked_json_bytes", None)   # calling it would fail
        got = read_coco_results(path, dataset, iou_type="keypoints", threads=2)
    expected = _read(path, dataset, monkeypatch, False)
    assert (got.category_index == -1).any()     # category 3: not in the ground truth
    _same_detections(got, expected)
    records[-1]["image_id"] = 99
    path.write_bytes(_text(records, separators=(",", ":")))
    with pytest.raises(FormatError) as err:
        read_coco_results(path, dataset, iou_type="keypoints")
    assert str(err.value) == _read(path, dataset, monkeypatch, False)


def test_keypoint_count_unlike_the_category_is_worded_as_before(tmp_path, monkeypatch):
    raw = ("[" + ", ".join([_GOOD] * 3) + "]").encode()
    assert numeric_keypoint_results(raw) is not None
    path = tmp_path / "results.json"
    path.write_bytes(raw)
    dataset = _dataset(k=3)         # the category's objects have 3 keypoints, the results 2
    got = _read(path, dataset, monkeypatch, True)
    assert isinstance(got, str) and "keypoints" in got
    assert got == _read(path, dataset, monkeypatch, False)


def test_seventeen_digit_files_left_to_msgspec():
    short = _text(_records(2, 40, wide=False))
    wide = json.dumps([{**r, "keypoints": [v + 1e-13 for v in r["keypoints"]]}
                       for r in _records(2, 40)]).encode()
    assert short_values(short) and not short_values(wide)
    assert not short_values(b"[]")


# ---------------------------------------------------------------------------------------------
# The ground truth's keypoint lists
# ---------------------------------------------------------------------------------------------


def test_keypoint_lists_equal_floats_bit_for_bit():
    rng = np.random.default_rng(0)
    values = [[int(v) for v in rng.integers(-5, 700, 51)] for _ in range(40)]
    values[3][7] = -0.0
    values[5][0] = 12.625
    values[9][1] = 1e-7
    values[11][2] = 123456789012345678901
    for dumps in (dict(separators=(",", ":")), dict(), dict(indent=3)):
        texts = [json.dumps(v, **dumps).encode() for v in values]
        got = numeric_keypoint_lists(texts)
        expected = np.array([[float(x) for x in v] for v in values]).reshape(40, 17, 3)
        assert np.array_equal(got.view(np.int64), expected.view(np.int64))


@pytest.mark.parametrize("bad", [b"[1, 2]", b"[1, 2, 3, 4, 5, 6]", b'[1, "2", 3]',
                                 b"[1, null, 3]", b"[1, true, 3]", b"[1, [2], 3]",
                                 b"[1,2, 3]", b"{}", b'"[1, 2, 3]"', b"[1, 2, 1e999]",
                                 b"[1, NaN, 3]", b"[]"])
def test_keypoint_lists_refuse_anything_else(bad):
    good = b"[1, 2, 3]"
    assert numeric_keypoint_lists([good, good, bad]) is None
    assert numeric_keypoint_lists([good]) is None      # one list: no layout to trust
    assert numeric_keypoint_lists([]) is None


@pytest.mark.parametrize("dumps", [dict(separators=(",", ":")), dict(), dict(indent=2)])
@pytest.mark.parametrize("first_zero", [False, True])
def test_keypoint_lists_with_zero_lists_equal_floats_bit_for_bit(monkeypatch, dumps,
                                                                 first_zero):
    """Objects without keypoints (every number 0, in the first list's layout) are not
    parsed: their rows are +0.0, the others' as Python's float(text) (-0.0, 0.0 and wide
    values among them), as when every list is parsed; only the other lists reach the
    parser. A zero list laid out otherwise is parsed (and refused, as before)."""
    import msgspec

    import deteval.io._numeric_keypoints as numeric_keypoints

    rng = np.random.default_rng(5)
    values = [[int(v) for v in rng.integers(-5, 700, 51)] for _ in range(30)]
    values[4][0], values[6][9], values[8][3] = -0.0, 0.0, 12.625
    zero_rows = [0, 3, 7, 8, 29] if first_zero else [3, 7, 29]
    for row in zero_rows:
        values[row] = [0] * 51
    texts = [msgspec.Raw(json.dumps(v, **dumps).encode()) for v in values]
    parsed = []
    original = numeric_keypoints.fixed_records
    monkeypatch.setattr(numeric_keypoints, "fixed_records",
                        lambda text, *a, **k: parsed.append(text) or original(text, *a, **k))
    got = numeric_keypoint_lists(texts, threads=2)
    expected = np.array([[float(x) for x in v] for v in values]).reshape(30, 17, 3)
    assert got.tobytes() == expected.tobytes()
    assert len(parsed) == 1 and parsed[0].count(b'"keypoints"') == 30 - len(zero_rows)
    assert numeric_keypoint_lists(texts[:1] * 3 if first_zero else texts[3:4] * 3
                                  ).tobytes() == np.zeros((3, 17, 3)).tobytes()
    other = json.dumps([0] * 51, separators=(", ", ": ")).encode()
    if other != bytes(texts[3]):
        assert numeric_keypoint_lists([*texts[1:3], msgspec.Raw(other)]) is None


@pytest.mark.parametrize("first", [b"[[0, 1], 2, 3]", b'["a", 1, 2]', b"[1, 2]",
                                   b'[1, "a b", 3]', b"[1e3, -0.0, 7]"])
def test_zero_text_is_a_flat_list_of_zeros(first):
    """The zero list is the first list with every value written 0, kept only when that is
    a flat list of the first's integers 0 (else nothing is skipped); a first list that is
    not 3K numbers is still refused when the others are zero lists."""
    import deteval.io._numeric_keypoints as numeric_keypoints

    zero = numeric_keypoints._zero_text(first, len(json.loads(first)))
    expected = {b'["a", 1, 2]': b"[0, 0, 0]", b"[1e3, -0.0, 7]": b"[0, 0, 0]",
                b"[1, 2]": b"[0, 0]"}.get(first)
    assert zero == expected
    if zero is not None:
        got = numeric_keypoint_lists([first, zero, first])
        assert (got is None) == (not first.startswith(b"[1e3"))
        if got is not None:
            assert got.tolist() == [[[1000.0, -0.0, 7.0]], [[0.0] * 3], [[1000.0, -0.0, 7.0]]]


@pytest.mark.parametrize("listed", [None, 3, 2])
def test_ground_truth_reads_as_the_list_decoder(listed, tmp_path):
    """The ground truth read with its keypoints as text (numpy) equals the msgspec list
    decoder's dataset bit for bit; a category listing another count than the objects' gives
    the same result (here, an error) by the list decoder."""
    rng = np.random.default_rng(2)
    category = {"id": 7, "name": "p"}
    if listed is not None:
        category["keypoints"] = [str(j) for j in range(listed)]
    gt = {"images": [{"id": 1, "width": 50, "height": 40}],
          "annotations": [{"id": i + 1, "image_id": 1, "category_id": 7, "iscrowd": 0,
                           "bbox": [1, 2, 3, 4], "area": 12.5, "num_keypoints": 2,
                           "keypoints": [int(v) for v in rng.integers(0, 40, 9)]}
                          for i in range(20)],
          "categories": [category]}
    raw = json.dumps(gt).encode()
    try:
        expected = typed._listed_keypoint_gt(raw, "gt.json")
    except FormatError as err:
        with pytest.raises(FormatError) as got:
            typed._typed_keypoint_gt(raw, "gt.json")
        assert str(got.value) == str(err)
        return
    got = typed._typed_keypoint_gt(raw, "gt.json")
    for field in dataclasses.fields(expected.gt):
        a, b = getattr(got.gt, field.name), getattr(expected.gt, field.name)
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


# ---------------------------------------------------------------------------------------------
# Both files at once (load_pair)
# ---------------------------------------------------------------------------------------------


def _pair_files(tmp_path, unknown_image: bool = False):
    records = _records(6, 800, wide=False)
    for record in records:
        record["image_id"] = 1 + record["image_id"] % 3
    if unknown_image:
        records[-1]["image_id"] = 99
    gt = {"images": [{"id": i, "width": 900, "height": 900} for i in (1, 2, 3)],
          "annotations": [{"id": j + 1, "image_id": 1 + j % 3, "category_id": 1 + j % 2,
                           "bbox": [10, 10, 300, 300], "area": 9e4, "iscrowd": 0,
                           "num_keypoints": 17, "keypoints": [100 + j, 200, 2] * 17}
                          for j in range(12)],
          "categories": [{"id": c, "name": str(c)} for c in (1, 2)]}
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "results.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_bytes(_text(records, separators=(",", ":")))
    return gt_path, dt_path


def test_files_read_at_once_give_the_pair_read_one_after_the_other(tmp_path, monkeypatch):
    """``load_pair`` reads a keypoint results file on a thread while it reads the ground
    truth: the same detections bit for bit as when they are read one after the other, and
    the same numbers; a file with an unknown image, refused there, gives the same error."""
    from deteval import _inputs, evaluate_coco

    gt_path, dt_path = _pair_files(tmp_path)
    used = []
    early = results_module.keypoint_columns_early
    monkeypatch.setattr(results_module, "keypoint_columns_early",
                        lambda *a, **k: used.append(early(*a, **k)) or used[-1])
    together = _inputs.load_pair(gt_path, dt_path, iou_type="keypoints")
    assert used and used[0] is not None
    with monkeypatch.context() as patch:
        patch.setattr(_inputs._EarlyResults, "start", classmethod(lambda cls, *a: None))
        apart = _inputs.load_pair(gt_path, dt_path, iou_type="keypoints")
        expected = evaluate_coco(gt_path, dt_path, iou_type="keypoints")
    assert len(used) == 1
    _same_detections(together.detections, apart.detections)
    got = evaluate_coco(gt_path, dt_path, iou_type="keypoints")
    assert got.stats.tobytes() == expected.stats.tobytes()
    gt_path, dt_path = _pair_files(tmp_path, unknown_image=True)
    with pytest.raises(FormatError) as err:
        _inputs.load_pair(gt_path, dt_path, iou_type="keypoints")
    with monkeypatch.context() as patch:
        patch.setattr(_inputs._EarlyResults, "start", classmethod(lambda cls, *a: None))
        with pytest.raises(FormatError) as before:
            _inputs.load_pair(gt_path, dt_path, iou_type="keypoints")
    assert str(err.value) == str(before.value) and "99" in str(err.value)


@pytest.mark.parametrize("change", ["extra key", "unknown image"])
def test_the_results_thread_reader_runs_once_on_a_file(tmp_path, monkeypatch, change):
    """A file the reader refuses (a record with another key, near the end: refused after
    its pieces were read), or whose columns the ground truth does not take (an unknown
    image), is read by the numpy reader once, on the results thread; then by the msgspec
    path, with the pair (or error) of the files read one after the other. A refused file is
    opened once (its bytes go on); a file whose columns were made is opened again (its
    bytes were freed once the columns were made: the peak memory's)."""
    import deteval.io._numeric_keypoints as numeric_keypoints
    from deteval import _inputs
    from deteval.io import _json

    gt_path, dt_path = _pair_files(tmp_path, unknown_image=change == "unknown image")
    if change == "extra key":
        records = json.loads(dt_path.read_bytes())
        records[-3]["id"] = 7
        dt_path.write_bytes(json.dumps(records, separators=(",", ":")).encode())
    answers, opened = [], []
    reader, open_input = numeric_keypoints.numeric_keypoint_results, _json.open_input
    monkeypatch.setattr(numeric_keypoints, "numeric_keypoint_results",
                        lambda raw, **k: answers.append(reader(raw, **k)) or answers[-1])
    monkeypatch.setattr(_json, "open_input",
                        lambda path, *a, **k: opened.append(str(path)) or open_input(path, *a,
                                                                                    **k))

    def outcome():
        try:
            return _inputs.load_pair(gt_path, dt_path, iou_type="keypoints").detections
        except FormatError as error:
            return str(error)

    together = outcome()
    assert [answer is not None for answer in answers] == [change == "unknown image"]
    again = [str(dt_path)] if change == "unknown image" else []
    assert sorted(opened) == sorted([str(gt_path), str(dt_path), *again])
    with monkeypatch.context() as patch:
        patch.setattr(_inputs._EarlyResults, "start", classmethod(lambda cls, *a: None))
        apart = outcome()
    _same_detections(together, apart)
    assert isinstance(apart, str) is (change == "unknown image")


def test_piece_extents_of_two_threads_first_pieces_go_into_one_table(monkeypatch):
    """Two threads finishing their first pieces at once: both pieces' extents land in the
    one table returned (a table made by each, the later replacing the earlier, would lose
    the earlier piece's rows)."""
    import threading

    import deteval.io._numeric_keypoints as numeric_keypoints
    from deteval.keypoints import points_extent

    both_inside = threading.Barrier(2, timeout=5)
    original = numeric_keypoints._extent_table

    def made_at_once(n):
        both_inside.wait()      # (each thread has found no table yet)
        return original(n)

    monkeypatch.setattr(numeric_keypoints, "_extent_table", made_at_once)
    table = np.random.default_rng(1).normal(100, 30, (10, 2 * 3))
    extents = numeric_keypoints._PieceExtents(2)
    threads = [threading.Thread(target=extents, args=({"keypoints": table}, lo, lo + 5))
               for lo in (0, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    points = table.reshape(10, 2, 3)
    assert np.array_equal(extents.out, points_extent(points[:, :, 0], points[:, :, 1]))
