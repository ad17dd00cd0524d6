"""A segm results file read on a thread while the ground truth is read
(deteval._inputs._EarlyResults with msgspec's typed decoder and the numpy RLE checks).

``load_pair`` / ``evaluate_coco`` on two files are compared with the files read one after
the other (every column, the stats, for every ``threads``), and their errors with that
reading's errors; a spy makes sure the early reader made the detections.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from maskgen import make_segm_dataset

import deteval
import deteval.io.coco.typed as typed
from deteval._inputs import load_pair
from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt, read_coco_results

_COLUMNS = ("image_index", "category_index", "boxes", "scores", "area", "xywh",
            "category_ids", "mask_area", "mask_xywh")


def _write(tmp_path, gt: dict, results: list) -> tuple:
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(results))
    return gt_path, dt_path


@pytest.fixture
def early_calls(monkeypatch):
    """How many detections the early reader made (the spied segm_detections_of)."""
    calls = []
    real = typed.segm_detections_of

    def spy(*args):
        out = real(*args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(typed, "segm_detections_of", spy)
    return calls


def _message(gt, dt) -> str:
    with pytest.raises(FormatError) as info:
        load_pair(gt, dt, iou_type="segm")
    return str(info.value)


def _read_apart_message(gt_path, dt_path) -> str:
    dataset = read_coco_gt(gt_path, iou_type="segm")
    with pytest.raises(FormatError) as info:
        read_coco_results(dt_path, dataset, iou_type="segm")
    return str(info.value)


@pytest.mark.parametrize(("seed", "bbox_mode"), [(0, "none"), (1, "all"), (2, "none")])
def test_load_pair_gives_the_detections_read_one_file_after_the_other(tmp_path, early_calls,
                                                                     seed, bbox_mode):
    gt, results = make_segm_dataset(seed, n_images=6, bbox_mode=bbox_mode)
    gt_path, dt_path = _write(tmp_path, gt, results)
    pair = load_pair(gt_path, dt_path, iou_type="segm")
    assert early_calls == [True]
    apart = read_coco_results(dt_path, read_coco_gt(gt_path, iou_type="segm"), iou_type="segm")
    for name in _COLUMNS:
        mine, theirs = getattr(pair.detections, name), getattr(apart, name)
        assert (mine is None) == (theirs is None), name
        if mine is not None:
            np.testing.assert_array_equal(mine, theirs, err_msg=name)
    assert pair.detections.masks.tolist() == apart.masks.tolist()


def test_evaluate_coco_on_two_files_equals_reading_apart_for_every_threads(tmp_path,
                                                                            early_calls):
    gt, results = make_segm_dataset(3, n_images=8)
    gt_path, dt_path = _write(tmp_path, gt, results)
    dataset = read_coco_gt(gt_path, iou_type="segm")
    apart = deteval.evaluate_coco(dataset, read_coco_results(dt_path, dataset,
                                                             iou_type="segm"), iou_type="segm")
    for threads in (1, 2, None):
        result = deteval.evaluate_coco(gt_path, dt_path, iou_type="segm", threads=threads)
        np.testing.assert_array_equal(np.asarray(result.stats), np.asarray(apart.stats))
        np.testing.assert_array_equal(result.precision, apart.precision)
    assert early_calls == [True] * 3


def test_a_bad_string_raises_the_error_of_reading_apart(tmp_path, early_calls):
    gt, results = make_segm_dataset(4, n_images=4, bbox_mode="none")
    results[1]["segmentation"] = dict(results[1]["segmentation"], counts="0" * 9)
    gt_path, dt_path = _write(tmp_path, gt, results)
    text = _message(gt_path, dt_path)
    assert early_calls == []     # raised by the early reader's columns: no detections made
    assert "results[1]" in text and str(dt_path) in text
    assert text == _read_apart_message(gt_path, dt_path)


def test_an_unknown_image_comes_before_a_bad_string_as_when_read_apart(tmp_path,
                                                                       early_calls):
    # The typed reader checks the images before it decodes the strings, and leaves an
    # unknown image to the general path, which names it: the early reader must too.
    gt, results = make_segm_dataset(5, n_images=4, bbox_mode="none")
    results[2]["segmentation"] = dict(results[2]["segmentation"], counts="0" * 9)
    results[3]["image_id"] = 10**6
    gt_path, dt_path = _write(tmp_path, gt, results)
    text = _message(gt_path, dt_path)
    assert early_calls == [False]
    assert text == _read_apart_message(gt_path, dt_path)
    assert "results[3]" in text or "1000000" in text


def test_the_ground_truths_error_comes_first(tmp_path):
    gt, results = make_segm_dataset(6, n_images=3, bbox_mode="none")
    results[0]["segmentation"] = dict(results[0]["segmentation"], counts="0" * 9)
    _, dt_path = _write(tmp_path, gt, results)
    missing = tmp_path / "missing.json"
    text = _message(missing, dt_path)
    assert str(missing) in text and str(dt_path) not in text
