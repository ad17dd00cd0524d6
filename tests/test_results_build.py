"""The bbox results readers' last step (``io.coco.results._build_detections``): image and
category rows, xyxy boxes and areas computed in parts on threads, equal to the plain
whole-column computation for every number of threads and part size, with the errors of a
single pass."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.data import Categories, Dataset, GroundTruth, Images, index_in
from deteval.errors import FormatError
from deteval.io.coco import results


def _dataset(image_ids, category_ids) -> Dataset:
    empty = np.zeros(0, dtype=np.int64)
    return Dataset(images=Images(ids=np.asarray(image_ids)),
                   categories=Categories(ids=np.asarray(category_ids)),
                   gt=GroundTruth(image_index=empty, category_index=empty,
                                  boxes=np.zeros((0, 4))))


def _columns(rng, n, image_ids, category_ids):
    """Columns as a reader returns them: ids drawn from the dataset's (and a few unknown
    categories), boxes with fractional corners."""
    images = rng.choice(image_ids, n)
    categories = np.where(rng.random(n) < 0.05, 10**12 + rng.integers(0, 3, n),
                          rng.choice(category_ids, n))
    xywh = np.round(rng.random((n, 4)) * 600, 2)
    return images, categories, xywh, rng.random(n)


@pytest.mark.parametrize("image_ids", [np.arange(1, 301), np.arange(300) * 10**9 + 7],
                         ids=["dense", "sparse"])
def test_parts_on_threads_equal_the_whole_column_computation(image_ids, monkeypatch):
    rng = np.random.default_rng(3)
    category_ids = np.array([1, 2, 3, 5, 8, 13, 90])
    dataset = _dataset(image_ids, category_ids)
    images, categories, xywh, scores = _columns(rng, 2_000, image_ids, category_ids)
    expected_boxes = np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1)
    for rows, threads in ((1 << 16, 1), (97, 1), (97, 2), (13, 3)):
        monkeypatch.setattr(results, "_BUILD_ROWS", rows)
        got = results._build_detections(images, categories, xywh.copy(), scores, dataset,
                                         "f.json", lambda i: f"results[{i}]", threads=threads)
        assert np.array_equal(got.image_index, index_in(images, image_ids))
        assert np.array_equal(got.category_index, index_in(categories, category_ids))
        assert (got.category_index == -1).sum() == (categories >= 10**12).sum() > 0
        assert np.array_equal(got.boxes.view(np.int64), expected_boxes.view(np.int64))
        assert np.array_equal(got.area.view(np.int64), (xywh[:, 2] * xywh[:, 3]).view(np.int64))
        assert np.array_equal(got.xywh, xywh) and np.array_equal(got.scores, scores)


def test_ids_outside_the_lookup_table_are_unknown():
    lookup = results._row_lookup(np.array([5, 6, 8, 6]), 10)
    assert lookup(np.array([6, 8, 5, 7])).tolist() == [1, 2, 0, -1]
    assert lookup(np.array([4, 9, -2**63, 2**63 - 1, 6])).tolist() == [-1, -1, -1, -1, 1]
    assert lookup(np.zeros(0, dtype=np.int64)).tolist() == []


def _error(images, categories, xywh, scores, dataset, rows, threads, monkeypatch) -> str:
    monkeypatch.setattr(results, "_BUILD_ROWS", rows)
    with pytest.raises(FormatError) as caught:
        results._build_detections(images, categories, xywh, scores, dataset, "f.json",
                                  lambda i: f"results[{i}]", threads=threads)
    return str(caught.value)


def test_errors_are_those_of_one_pass_whatever_the_parts(monkeypatch):
    """An overflowing box in the first part and an unknown image in a later one: the
    unknown image is reported (as a single pass checks images first); an overflowing box
    before an overflowing area: the box."""
    rng = np.random.default_rng(4)
    dataset = _dataset(np.arange(1, 11), np.array([1, 2]))
    images, categories, xywh, scores = _columns(rng, 60, np.arange(1, 11), np.array([1, 2]))
    xywh[3] = [1e308, 0.0, 1e308, 1.0]      # x + w overflows
    xywh[50, 2:] = [1e200, 1e200]           # w * h overflows
    whole = _error(images, categories, xywh, scores, dataset, 1 << 16, 1, monkeypatch)
    assert "overflows: x + w" in whole and "results[3]" in whole
    for rows, threads in ((7, 1), (7, 2), (20, 3)):
        assert _error(images, categories, xywh, scores, dataset, rows, threads,
                      monkeypatch) == whole
    xywh[3] = [1.0, 2.0, 3.0, 4.0]
    area = _error(images, categories, xywh, scores, dataset, 7, 2, monkeypatch)
    assert "area w * h" in area and "results[50]" in area
    images = images.copy()
    images[41] = 99
    unknown = _error(images, categories, xywh, scores, dataset, 1 << 16, 1, monkeypatch)
    assert "image_id 99" in unknown and "results[41]" in unknown
    assert _error(images, categories, xywh, scores, dataset, 7, 2, monkeypatch) == unknown


def test_checked_columns_skip_only_the_checks_their_reader_proved():
    """``checked`` (a reader's proof that every value is finite and ``w, h >= 0``) skips
    those two checks; ``owned`` and plain arrays are checked; shapes are checked either way."""
    from deteval.data import DERIVED, Detections, checked, owned

    def build(mark, xywh, scores):
        return Detections(image_index=[0, 0], category_index=[0, 0], boxes=DERIVED,
                          area=DERIVED, xywh=mark(np.array(xywh, dtype=np.float64)),
                          scores=mark(np.array(scores, dtype=np.float64)))

    negative, infinite = [[0, 0, 2, 3], [1, 1, -1, 2]], [[0, 0, 2, 3], [1, 1, np.inf, 2]]
    assert build(checked, negative, [0.5, 0.25]).xywh[1, 2] == -1    # trusted as proved
    assert np.isinf(build(checked, [[0, 0, 2, 3]] * 2, [0.5, np.inf]).scores[1])
    for mark in (owned, np.asarray):
        with pytest.raises(ValueError, match="w >= 0 and h >= 0"):
            build(mark, negative, [0.5, 0.25])
        with pytest.raises(ValueError, match="xywh must be finite"):
            build(mark, infinite, [0.5, 0.25])
        with pytest.raises(ValueError, match="scores must be finite"):
            build(mark, [[0, 0, 2, 3]] * 2, [0.5, np.nan])
    with pytest.raises(ValueError, match=r"shape \(n, 4\)"):
        build(checked, [[0, 0, 2]] * 2, [0.5, 0.25])
    with pytest.raises(ValueError, match="length 2"):
        build(checked, [[0, 0, 2, 3]] * 2, [0.5])


@pytest.mark.parametrize("records", [3_000, 20], ids=["numpy reader", "msgspec reader"])
@pytest.mark.parametrize("bad", [None, "width", "height", "score"])
def test_readers_hand_over_checked_columns_only_when_every_value_passed(records, bad,
                                                                         tmp_path, monkeypatch):
    """Whatever the reader (the numpy one for files of 64 KiB or more, msgspec's below, the
    general one for what both refuse), ``_build_detections(proved=True)`` is called only with
    finite boxes and scores and ``w, h >= 0``; a bad value is reported as before."""
    import json

    rng = np.random.default_rng(records)
    dataset = _dataset(np.arange(1, 51), np.array([1, 2, 3]))
    rows = [{"image_id": int(rng.integers(1, 51)), "category_id": int(rng.integers(1, 4)),
             "bbox": [round(float(v), 2) for v in rng.random(4) * 300],
             "score": round(float(rng.random()), 3)} for _ in range(records)]
    text = json.dumps(rows, separators=(",", ":"))
    if bad is not None:    # one bad value in the last record (a late piece)
        old = json.dumps(rows[-1], separators=(",", ":"))
        new = dict(rows[-1], bbox=list(rows[-1]["bbox"]))
        if bad == "score":
            new_text = old.replace(f'"score":{rows[-1]["score"]}', '"score":1e400')
        else:
            new["bbox"][2 if bad == "width" else 3] = -0.5
            new_text = json.dumps(new, separators=(",", ":"))
        text = text[:text.rindex(old)] + new_text + "]"
    path = tmp_path / "results.json"
    path.write_text(text)
    calls = []
    build = results._build_detections

    def spy(image_ids, category_ids, xywh, scores, *args, proved=False, **kwargs):
        calls.append((proved, bool(np.isfinite(xywh).all() and np.isfinite(scores).all()
                                   and (xywh[:, 2:] >= 0).all())))
        return build(image_ids, category_ids, xywh, scores, *args, proved=proved, **kwargs)

    monkeypatch.setattr(results, "_build_detections", spy)
    if bad is None:
        got = results.read_coco_results(str(path), dataset, threads=2)
        assert calls == [(True, True)]
        assert np.array_equal(got.xywh, [r["bbox"] for r in rows])
        assert np.array_equal(got.scores, [r["score"] for r in rows])
    else:
        where = "infinity" if bad == "score" else f"results\\[{records - 1}\\]"
        with pytest.raises(FormatError, match=where):
            results.read_coco_results(str(path), dataset, threads=2)
        assert all(not proved or valid for proved, valid in calls)


def _results_text(rng, n, image_ids, category_ids, *, wide_every=0):
    """A compact results file; every ``wide_every``-th record has a box value or id the
    numpy reader converts at the end (17 digits, an exponent)."""
    import json

    records = []
    for i in range(n):
        box = [round(float(v), 2) for v in rng.random(4) * 300]
        if wide_every and i % wide_every == 0:
            box[int(rng.integers(0, 4))] = float(rng.random()) * 1e-3    # 17-digit repr
        records.append({"image_id": int(rng.choice(image_ids)),
                        "category_id": int(rng.choice(category_ids)), "bbox": box,
                        "score": round(float(rng.random()), 3)})
    return json.dumps(records, separators=(",", ":"))


@pytest.mark.parametrize("spaced", [False, True], ids=["template path", "general path too"])
@pytest.mark.parametrize("wide_ids", [False, True], ids=["short ids", "wide ids"])
def test_rows_made_beside_the_parse_equal_the_msgspec_paths(wide_ids, spaced, tmp_path,
                                                             monkeypatch):
    """The numpy reader's pieces compute the image and category rows as they are read (and
    the rows of the numbers left to the end once those are read): the detections equal
    those built from msgspec's columns, for pieces of any size and any threads."""
    from deteval.io import _numeric_json
    from deteval.io.coco.typed import _typed_results_columns

    rng = np.random.default_rng(5)
    base = 10**11 if wide_ids else 1     # (12-digit ids: converted at the end)
    image_ids = base + np.arange(300) * 7
    dataset = _dataset(image_ids, np.array([1, 2, 3, 5, 8]))
    text = _results_text(rng, 4_000, image_ids, np.array([1, 2, 3, 5, 8, 9]), wide_every=37)
    if spaced:     # irregular whitespace in some records: their pieces read the general way
        text = text.replace(',"score"', ', "score"', 500)
    path = tmp_path / "results.json"
    path.write_text(text)
    columns = _typed_results_columns(text.encode())
    expected = results._build_detections(*columns[:2], columns[3], columns[2], dataset,
                                         "f.json", lambda i: f"results[{i}]")
    made = []
    numeric = _numeric_json.numeric_results_columns

    def spy(*args, **kwargs):
        columns = numeric(*args, **kwargs)
        made.append(kwargs.get("on_rows") is not None and columns is not None)
        return columns

    monkeypatch.setattr(_numeric_json, "numeric_results_columns", spy)
    for piece_bytes, threads in ((1 << 20, 1), (9_000, 2), (3_001, 3)):
        monkeypatch.setattr(_numeric_json, "PIECE_BYTES", piece_bytes)
        got = results.read_coco_results(str(path), dataset, threads=threads)
        for name in ("image_index", "category_index", "category_ids", "xywh", "scores",
                     "boxes", "area"):
            assert np.array_equal(getattr(got, name), getattr(expected, name)), name
        assert (got.category_index == -1).any()
    assert made == [True] * 3


@pytest.mark.parametrize("damage, message", [
    ("unknown image", "image_id 99999 is not an image"),
    ("far corner", r"overflows: x \+ w"),
])
def test_errors_of_rows_made_beside_the_parse_are_those_of_one_pass(damage, message,
                                                                    tmp_path, monkeypatch):
    """An unknown image or a box whose far corner overflows, in a late piece, is reported
    with the record the msgspec path names."""
    import json

    from deteval.io import _numeric_json

    rng = np.random.default_rng(6)
    dataset = _dataset(np.arange(1, 301), np.array([1, 2, 3]))
    records = json.loads(_results_text(rng, 3_000, np.arange(1, 301), np.array([1, 2, 3])))
    if damage == "unknown image":
        records[2_500]["image_id"] = 99999
    else:
        records[2_500]["bbox"] = [1.5e308, 0.5, 1.5e308, 2.0]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(records, separators=(",", ":")))
    monkeypatch.setattr(_numeric_json, "PIECE_BYTES", 20_000)
    with pytest.raises(FormatError, match=message) as numpy_error:
        results.read_coco_results(str(path), dataset, threads=2)
    monkeypatch.setattr(_numeric_json, "numeric_results_columns", lambda *a, **k: None)
    with pytest.raises(FormatError) as msgspec_error:
        results.read_coco_results(str(path), dataset, threads=2)
    assert str(numpy_error.value) == str(msgspec_error.value)
    assert "results[2500]" in str(numpy_error.value)
