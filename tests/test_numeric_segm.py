"""``deteval.io._numeric_segm``: the numpy reader of segm results files (compressed RLE).

Whatever it accepts must give, bit for bit, the detections the msgspec path
(``deteval.io.coco.typed._typed_segm_results``) gives for the same file, and the same error
(message, file, record) where that path raises one; whatever is not exactly records of the
file's one layout must be refused (None), and ``read_coco_results`` then gives what it gave
without the reader. The results file read on a thread beside the ground truth
(``deteval._inputs.load_pair``) gives the same pair as the two files read one after the
other, for every number of threads.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import numpy as np
import pytest
from pycocotools import mask as mask_utils

import deteval.io._numeric_segm as numeric_segm
from deteval import _inputs, evaluate_coco
from deteval.data import is_derived
from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.io.coco import results as results_module

#: Image sizes (h, w) of the generated ground truth; image 7 is one pixel.
SIZES = [(60, 80), (97, 130), (45, 45), (128, 96), (33, 200), (70, 70), (1, 1)]
KEYS = ("image_id", "category_id", "segmentation", "score")


def _mask(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A rectangle with holes and speckles: strings of tens to hundreds of characters."""
    out = np.zeros((h, w), dtype=np.uint8)
    y0, x0 = rng.integers(0, max(h // 2, 1)), rng.integers(0, max(w // 2, 1))
    out[y0:y0 + rng.integers(1, h + 1), x0:x0 + rng.integers(1, w + 1)] = 1
    out[rng.random((h, w)) < rng.uniform(0, 0.08)] ^= 1
    return out


def _rle(mask: np.ndarray) -> dict:
    rle = mask_utils.encode(np.asfortranarray(mask[:, :, None]))[0]
    return {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode("ascii")}


def _gt(rng: np.random.Generator) -> dict:
    annotations = []
    for i in range(60):
        image = i % len(SIZES)
        h, w = SIZES[image]
        rle = _rle(_mask(rng, h, w))
        area = float(mask_utils.area(dict(rle, counts=rle["counts"].encode())))
        box = [float(v) for v in mask_utils.toBbox(dict(rle, counts=rle["counts"].encode()))]
        annotations.append({"id": i + 1, "image_id": image + 1, "category_id": 1 + i % 3,
                            "segmentation": rle, "area": area, "bbox": box,
                            "iscrowd": int(i % 17 == 0)})
    return {"images": [{"id": i + 1, "height": h, "width": w, "file_name": f"{i}.jpg"}
                       for i, (h, w) in enumerate(SIZES)],
            "annotations": annotations,
            "categories": [{"id": c, "name": f"c{c}"} for c in (1, 2, 3)]}


def _records(rng: np.random.Generator, n: int = 400, *, box: bool = False) -> list[dict]:
    out = []
    for i in range(n):
        image = int(rng.integers(len(SIZES)))
        h, w = SIZES[image]
        record = {"image_id": image + 1, "category_id": int(rng.integers(1, 5)),
                  "segmentation": _rle(_mask(rng, h, w)),
                  "score": round(float(rng.random()), int(rng.integers(1, 8)))}
        if i % 13 == 0:
            record["score"] = float(rng.random())           # a 17-digit repr
        if i % 29 == 0:
            record["score"] = int(rng.integers(0, 2))       # an integer
        if box:
            record["bbox"] = [round(float(v), 2) for v in rng.uniform(0, 50, 4)]
        out.append(record)
    return out


def _dumps(records: list[dict], order=KEYS, seg_order=("size", "counts"), **options) -> bytes:
    def ordered(r):
        keys = [k for k in order if k in r] + [k for k in r if k not in order]
        return {k: ({s: r[k][s] for s in seg_order} | r[k]
                    if k == "segmentation" and isinstance(r[k], dict) else r[k])
                for k in keys}
    return json.dumps([ordered(r) for r in records], **options).encode()


@pytest.fixture(scope="module")
def gt_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("segm") / "gt.json"
    path.write_text(json.dumps(_gt(np.random.default_rng(0))))
    return path


@pytest.fixture(scope="module")
def dataset(gt_file):
    return read_coco_gt(gt_file)


class _Spy:
    """Counts the reader's answers (columns or None) while read_coco_results runs."""

    def __init__(self, monkeypatch, *, refuse: bool = False):
        self.answers = []
        original = numeric_segm.numeric_segm_results

        def spy(raw, **options):
            out = None if refuse else original(raw, **options)
            self.answers.append(out is not None)
            return out

        monkeypatch.setattr(numeric_segm, "numeric_segm_results", spy)


def _outcome(read):
    try:
        return read()
    except FormatError as error:
        return error


def _reference(path, dataset, monkeypatch):
    """What read_coco_results gives without the numpy reader (the msgspec path)."""
    with monkeypatch.context() as patch:
        spy = _Spy(patch, refuse=True)
        out = _outcome(lambda: read_coco_results(path, dataset, iou_type="segm"))
    assert spy.answers == [True] or spy.answers == [False]
    return out


def _assert_same(got, expected):
    if isinstance(expected, FormatError):
        assert isinstance(got, FormatError), got
        assert (got.message, got.source, got.record) == (expected.message, expected.source,
                                                          expected.record)
        return
    assert not isinstance(got, FormatError), got
    # The numpy reader leaves the masks' dicts to be made when the column is first read.
    lazy = is_derived(got, "masks")
    for field in dataclasses.fields(expected):
        a, b = getattr(got, field.name), getattr(expected, field.name)
        if field.name == "masks":
            assert len(a) == len(b)
            for m, r in zip(a.tolist(), b.tolist()):
                assert (tuple(m["size"]), _bytes(m["counts"])) == (tuple(r["size"]),
                                                                  _bytes(r["counts"]))
        elif isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape, field.name
            assert a.tobytes() == b.tobytes(), field.name
        else:
            assert a == b, field.name
    assert got.__dict__.keys() - {"_mask_text"} == expected.__dict__.keys() - {"_mask_text"}
    return lazy


def _bytes(counts):
    return counts.encode() if isinstance(counts, str) else counts


def _check(tmp_path, dataset, monkeypatch, text: bytes, *, read: bool, **options):
    """The file read with the reader (which must accept it, or refuse it) equals the file
    read without it."""
    path = tmp_path / "results.json"
    path.write_bytes(text)
    expected = _reference(path, dataset, monkeypatch)
    spy = _Spy(monkeypatch)
    got = _outcome(lambda: read_coco_results(path, dataset, iou_type="segm", **options))
    assert spy.answers == [read]
    lazy = _assert_same(got, expected)
    if not isinstance(got, FormatError):
        assert lazy is read
    return got


@pytest.mark.parametrize("layout", [
    {}, {"separators": (",", ":")}, {"indent": 2}, {"indent": "\t", "separators": (",", ": ")},
])
@pytest.mark.parametrize("box", [False, True])
def test_reader_gives_the_msgspec_paths_detections(tmp_path, dataset, monkeypatch, layout,
                                                   box):
    records = _records(np.random.default_rng(1), box=box)
    text = _dumps(records, **layout)
    assert len(text) >= 1 << 16 and b"\\\\" in text     # (escaped backslashes read)
    got = _check(tmp_path, dataset, monkeypatch, text, read=True)
    assert len(got) == len(records)


@pytest.mark.parametrize("order, seg_order", [
    (("score", "segmentation", "category_id", "image_id"), ("counts", "size")),
    (("segmentation", "image_id", "score", "category_id"), ("size", "counts")),
    (("image_id", "bbox", "category_id", "segmentation", "score"), ("counts", "size")),
])
def test_any_key_order_is_read_alike(tmp_path, dataset, monkeypatch, order, seg_order):
    records = _records(np.random.default_rng(2), box="bbox" in order)
    _check(tmp_path, dataset, monkeypatch, _dumps(records, order, seg_order), read=True)


def test_threads_and_pieces_change_nothing(tmp_path, dataset):
    raw = _dumps(_records(np.random.default_rng(3)))
    first = numeric_segm.numeric_segm_results(raw, threads=1)
    for threads, piece in ((2, 4096), (3, 777), (1, 1 << 30), (None, 20000)):
        other = numeric_segm.numeric_segm_results(raw, threads=threads, piece_bytes=piece)
        for a, b in zip(first, other):
            if isinstance(a, np.ndarray) and a.dtype != object:
                assert a.tobytes() == b.tobytes()
        assert first.masks.strings() == other.masks.strings()
        assert first.masks.dicts().tolist() == other.masks.dicts().tolist()


def _edit(records: list[dict], i: int, counts: str | None = None, **changes) -> list[dict]:
    out = [dict(r, segmentation=dict(r["segmentation"])) for r in records]
    if counts is not None:
        out[i]["segmentation"]["counts"] = counts
    out[i].update(changes)
    return out


def _one_pixel(records: list[dict]) -> int:
    return next(i for i, r in enumerate(records) if r["image_id"] == len(SIZES))


def test_strings_of_one_character_and_escapes_at_the_end(tmp_path, dataset, monkeypatch):
    records = _records(np.random.default_rng(4))
    i = _one_pixel(records)
    ones = _edit(records, i, "1")       # one run of one background pixel: area 0
    got = _check(tmp_path, dataset, monkeypatch, _dumps(ones), read=True)
    assert got.masks[i]["counts"] == b"1" and got.area[i] == 0
    # A string whose last character is a backslash (two in the file, before the quote)
    # ends inside a number: the msgspec path's error, on the same record.
    ended = _edit(records, 5, records[5]["segmentation"]["counts"] + "\\")
    text = _dumps(ended)
    assert b'\\\\"' in text
    error = _check(tmp_path, dataset, monkeypatch, text, read=True)
    assert isinstance(error, FormatError) and error.record == "results[5]"


EXPECTED = {"runs": "RLE run lengths add up to", "number": "compressed RLE 'counts' holds a "
            "number of more than 7", "range": "compressed RLE 'counts' decodes to a run length "
            "of -1", "size": "mask size 70000x70000 (h x w) is too large"}


@pytest.mark.parametrize("what", ["runs", "number", "range", "size"])
def test_bad_strings_raise_the_msgspec_paths_error(tmp_path, dataset, monkeypatch, what):
    records = _records(np.random.default_rng(5))
    if what == "runs":          # runs that do not add up to h * w
        bad = _edit(records, 17, "52")
    elif what == "number":      # a number of 8 characters
        bad = _edit(records, 3, "0" + "o" * 7 + "0")
    elif what == "range":       # a negative run
        bad = _edit(records, 40, "0O")
    else:                       # an image of 2**32 pixels or more, given its size
        big = _gt(np.random.default_rng(0))
        big["images"][0].update(height=70000, width=70000)
        (tmp_path / "gt.json").write_text(json.dumps(big))
        dataset = read_coco_gt(tmp_path / "gt.json")
        bad = [dict(r, segmentation=dict(r["segmentation"], size=[70000, 70000]))
               if r["image_id"] == 1 else r for r in records]
    error = _check(tmp_path, dataset, monkeypatch, _dumps(bad), read=True)
    assert isinstance(error, FormatError), error
    assert error.message.startswith(EXPECTED[what]), error.message
    # (several bad strings: the first of the decoder's chunk order, as the reference's)
    if what == "runs":
        worse = _edit(_edit(bad, 90, "0" + "o" * 7 + "0"), 300, "0O")
        _check(tmp_path, dataset, monkeypatch, _dumps(worse), read=True)


@pytest.mark.parametrize("change", [
    "float id", "float size", "unicode escape", "slash escape", "non-ascii", "empty",
    "control", "extra key", "extra mask key", "polygon", "truncated file", "missing key",
    "unknown image", "size not the image's", "negative size", "nan score", "huge score",
    "bad box", "mixed layout", "quote escape",
])
def test_anything_else_is_refused_and_read_as_before(tmp_path, dataset, monkeypatch, change):
    records = _records(np.random.default_rng(6), box=change == "bad box")
    counts = records[9]["segmentation"]["counts"]
    edits = {
        "float id": lambda: _edit(records, 9, image_id=2.0),
        "float size": lambda: _edit(records, 9, segmentation={"size": [60.0, 80],
                                                             "counts": counts}),
        "unicode escape": lambda: _edit(records, 9, "\\u0030" + counts),
        "slash escape": lambda: _edit(records, 9, "/" + counts),
        "non-ascii": lambda: _edit(records, 9, counts + "é"),
        "empty": lambda: _edit(records, 9, ""),
        "control": lambda: _edit(records, 9, counts[:3] + "\x01" + counts[3:]),
        "extra key": lambda: _edit(records, 9, id=3),
        "extra mask key": lambda: _edit(records, 9, segmentation={**records[9][
            "segmentation"], "x": 1}),
        "polygon": lambda: _edit(records, 9, segmentation=[[1, 1, 5, 1, 5, 5]]),
        "missing key": lambda: [{k: v for k, v in r.items() if k != "score" or i != 9}
                                for i, r in enumerate(records)],
        "unknown image": lambda: _edit(records, 9, image_id=99),
        "size not the image's": lambda: _edit(records, 9, segmentation={
            "size": [3, 3], "counts": "9"}),
        "negative size": lambda: _edit(records, 9, segmentation={"size": [-1, 80],
                                                                "counts": counts}),
        "nan score": lambda: _edit(records, 9, score=float("nan")),
        "huge score": lambda: _edit(records, 9, score=1e400),
        "bad box": lambda: _edit(records, 9, bbox=[0, 0, -1, 2]),
        "mixed layout": lambda: records,
        "quote escape": lambda: _edit(records, 9, counts + '"x'),
    }
    text = _dumps(edits.get(change, lambda: records)())
    if change == "truncated file":
        text = text[:len(text) * 2 // 3]
    elif change == "mixed layout":        # one record written with other whitespace
        text = text.replace(b'"image_id": 3', b'"image_id" : 3', 1)
    elif change == "huge score":
        text = text.replace(b"Infinity", b"1e400")
    elif change == "slash escape":
        text = text.replace(b'"/', b'"\\/', 1)
    elif change == "nan score":
        text = text.replace(b"NaN", b"1e999")
    assert len(text) >= 1 << 16
    # (the reader reads these two files; the ground truth then sends them to msgspec)
    read = change in ("unknown image", "size not the image's")
    _check(tmp_path, dataset, monkeypatch, text, read=read)


def test_the_results_thread_gives_the_pair_read_apart_for_every_thread_count(
        tmp_path, gt_file, monkeypatch):
    dt_path = tmp_path / "results.json"
    dt_path.write_bytes(_dumps(_records(np.random.default_rng(7), n=600)))
    readers, original = [], numeric_segm._read_piece

    def slow_piece(*args):
        readers.append(threading.current_thread().name)
        time.sleep(0.003)   # (the ground truth is read first: the calling thread helps)
        return original(*args)

    monkeypatch.setattr(numeric_segm, "_read_piece", slow_piece)
    monkeypatch.setattr(results_module, "_EARLY_SEGM_PIECE_BYTES", 8192)
    together = _inputs.load_pair(gt_file, dt_path, iou_type="segm")
    assert {"deteval-results", threading.current_thread().name} <= set(readers)
    with monkeypatch.context() as patch:
        patch.setattr(_inputs._EarlyResults, "start", classmethod(lambda cls, *a: None))
        apart = _inputs.load_pair(gt_file, dt_path, iou_type="segm")
    _assert_same(together.detections, apart.detections)
    stats = {threads: evaluate_coco(gt_file, dt_path, iou_type="segm", threads=threads).stats
             for threads in (1, 2, 3)}
    assert stats[1].tobytes() == stats[2].tobytes() == stats[3].tobytes()


def test_errors_of_the_results_thread_are_the_files_own(tmp_path, gt_file, monkeypatch):
    records = _records(np.random.default_rng(8), n=500)
    dt_path = tmp_path / "results.json"
    dt_path.write_bytes(_dumps(_edit(records, 321, "52")))
    monkeypatch.setattr(results_module, "_EARLY_SEGM_PIECE_BYTES", 8192)
    with pytest.raises(FormatError) as together:
        _inputs.load_pair(gt_file, dt_path, iou_type="segm")
    monkeypatch.setattr(_inputs._EarlyResults, "start", classmethod(lambda cls, *a: None))
    with pytest.raises(FormatError) as apart:
        _inputs.load_pair(gt_file, dt_path, iou_type="segm")
    assert together.value.record == "results[321]" and str(together.value) == str(apart.value)


@pytest.mark.parametrize("change", ["extra key", "unknown image"])
def test_the_results_thread_reader_runs_once_on_a_file(tmp_path, gt_file, monkeypatch,
                                                       change):
    """A file the reader refuses (a record with another key, near the end: refused after
    its pieces were read), or whose columns the ground truth does not take (an unknown
    image), is read by the reader once, on the results thread; then by the msgspec path,
    with the pair (or error) of the files read one after the other."""
    records = _records(np.random.default_rng(10), n=500)
    if change == "extra key":
        records[-3] = dict(records[-3], extra=1)
    else:
        records[-3] = dict(records[-3], image_id=99)
    dt_path = tmp_path / "results.json"
    dt_path.write_bytes(_dumps(records))
    spy = _Spy(monkeypatch)
    together = _outcome(lambda: _inputs.load_pair(gt_file, dt_path, iou_type="segm"))
    assert spy.answers == [change == "unknown image"]
    with monkeypatch.context() as patch:
        patch.setattr(_inputs._EarlyResults, "start", classmethod(lambda cls, *a: None))
        apart = _outcome(lambda: _inputs.load_pair(gt_file, dt_path, iou_type="segm"))
    _assert_same(*(x if isinstance(x, FormatError) else x.detections
                   for x in (together, apart)))
    assert isinstance(apart, FormatError) is (change == "unknown image")


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_evaluation_equals_pycocotools(tmp_path, gt_file, iou_type):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    dt_path = tmp_path / "results.json"
    dt_path.write_bytes(_dumps(_records(np.random.default_rng(9), n=500)))
    result = evaluate_coco(gt_file, dt_path, iou_type=iou_type)
    assert len(result.stats) == 12
    if iou_type == "boundary":
        return      # (read as segm: the same detections; boundary parity is tested elsewhere)
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(gt_file))
        evaluator = COCOeval(gt, gt.loadRes(str(dt_path)), "segm")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    assert np.asarray(result.stats).tobytes() == np.asarray(evaluator.stats).tobytes()
