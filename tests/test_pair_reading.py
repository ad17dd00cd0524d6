"""Reading a ground-truth file and a results file together (``_inputs.load_pair``): the
results file is read once, on a thread while the ground truth is parsed when it is large,
with the same numbers and the same errors as reading the two one after the other."""

from __future__ import annotations

import json

import numpy as np
import pytest

import deteval
from deteval import _inputs
from deteval.errors import FormatError
from deteval.io import _json
from deteval.io.coco import read_coco_gt, read_coco_results
from tests.cocogen import make_dataset


@pytest.fixture(params=["on a thread", "after the ground truth"])
def files(tmp_path, monkeypatch, request):
    """Both ways of reading the results file: on a thread (files of
    ``PREFETCH_MIN_BYTES`` or more; here every file) and after the ground truth (smaller)."""
    if request.param == "on a thread":
        monkeypatch.setattr(_inputs, "PREFETCH_MIN_BYTES", 0)
    gt, results = make_dataset(11, n_images=30, p_unknown_category=0.0)
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(results))
    return gt, results, gt_path, dt_path


def _count_reads(monkeypatch) -> list:
    opened = []
    original = _json.open_input

    def counting(path, *args, **kwargs):
        opened.append(str(path))
        return original(path, *args, **kwargs)

    monkeypatch.setattr(_json, "open_input", counting)
    return opened


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_each_file_is_read_once_with_the_numbers_of_separate_reads(files, monkeypatch,
                                                                   iou_type):
    _, _, gt_path, dt_path = files
    dataset = read_coco_gt(gt_path, iou_type=iou_type)
    expected = deteval.evaluate_coco(dataset, read_coco_results(dt_path, dataset,
                                                                iou_type=iou_type),
                                     iou_type=iou_type)
    opened = _count_reads(monkeypatch)
    result = deteval.evaluate_coco(gt_path, dt_path, iou_type=iou_type)
    assert sorted(opened) == sorted([str(gt_path), str(dt_path)])
    assert np.array_equal(result.stats, expected.stats)
    assert np.array_equal(result.precision, expected.precision, equal_nan=True)


def test_a_results_file_with_its_own_tables_is_read_once(files, tmp_path, monkeypatch):
    gt, results, gt_path, _ = files
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"images": gt["images"], "categories": gt["categories"],
                                   "annotations": results}))
    expected = deteval.evaluate_coco(gt, {"images": gt["images"],
                                          "categories": gt["categories"],
                                          "annotations": results})
    opened = _count_reads(monkeypatch)
    result = deteval.evaluate_coco(gt_path, wrapped)
    assert sorted(opened) == sorted([str(gt_path), str(wrapped)])
    assert np.array_equal(result.stats, expected.stats)


def _message(gt, dt) -> str:
    with pytest.raises(FormatError) as caught:
        deteval.evaluate_coco(gt, dt)
    return str(caught.value)


def test_errors_are_those_of_reading_one_file_after_the_other(files, tmp_path):
    gt, _, gt_path, dt_path = files
    missing = tmp_path / "missing.json"
    dataset = read_coco_gt(gt_path)
    # the ground truth's error first, whatever the results file
    assert str(missing) in _message(missing, dt_path)
    assert _message(missing, tmp_path / "other.json") == _message(missing, dt_path)
    # then the results file's: as when the ground truth is given read
    assert _message(gt_path, missing) == _message(dataset, missing)
    for name, content in (("empty.json", b"  \n"), ("latin1.json", b'[{"a": "\xe9"}]'),
                          ("cut.json", json.dumps([{"image_id": 1}])[:-3].encode())):
        bad = tmp_path / name
        bad.write_bytes(content)
        text = _message(gt_path, bad)
        assert str(bad) in text and text == _message(dataset, bad)


def _prefetched(monkeypatch) -> list:
    started = []
    original = _inputs.prefetch_bytes

    def recording(path, **kwargs):
        started.append(str(path))
        return original(path, **kwargs)

    monkeypatch.setattr(_inputs, "prefetch_bytes", recording)
    return started


def test_only_a_large_results_file_is_read_on_a_thread(files, monkeypatch):
    """docs/threads.md item 6: a thread for a file smaller than ``PREFETCH_MIN_BYTES`` costs
    more than reading it after the ground truth."""
    _, _, gt_path, dt_path = files
    size = dt_path.stat().st_size
    for threshold, threaded in ((size + 1, False), (size, True)):
        monkeypatch.setattr(_inputs, "PREFETCH_MIN_BYTES", threshold)
        started = _prefetched(monkeypatch)
        deteval.evaluate_coco(gt_path, dt_path)
        assert started == ([str(dt_path)] if threaded else [])
        monkeypatch.undo()


def test_malloc_is_adapted_before_two_bbox_files_are_read(files, monkeypatch):
    """docs/threads.md item 6: glibc's thresholds are adapted before the ground truth and the
    results are read when the results file is read on a thread (the bbox reader's pieces
    then reuse freed memory instead of faulting it in again); a small file is read as
    before, without it."""
    from deteval import _arrays

    _, _, gt_path, dt_path = files
    events = []
    monkeypatch.setattr(_arrays, "adapt_malloc", lambda: events.append("adapt"))
    prefetch = _inputs.prefetch_bytes
    monkeypatch.setattr(_inputs, "prefetch_bytes",
                        lambda path, **kw: events.append("prefetch") or prefetch(path, **kw))
    read_gt = _inputs.read_coco_ground_truth
    monkeypatch.setattr(_inputs, "read_coco_ground_truth",
                        lambda *a, **kw: events.append("gt") or read_gt(*a, **kw))
    deteval.evaluate_coco(gt_path, dt_path)
    threaded = _inputs.PREFETCH_MIN_BYTES == 0
    assert events == (["adapt", "prefetch", "gt"] if threaded else ["gt"])
