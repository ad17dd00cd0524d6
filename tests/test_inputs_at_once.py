"""``deteval._inputs.load_pair`` given two files of a keypoint or segm evaluation: the
results file is read on a thread while the ground truth is read (``_EarlyResults``).

The pair must be the one read one file after the other, bit for bit, and so the numbers;
a results file refused there (an unknown image, a malformed RLE string) must give the
same error as before.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from maskgen import make_segm_dataset

from deteval import _inputs, evaluate_coco
from deteval.errors import FormatError
from deteval.io.coco import results as results_module


def _one_after_the_other(patch) -> None:
    patch.setattr(_inputs._EarlyResults, "start", classmethod(lambda cls, *a: None))


def _same_detections(got, expected) -> None:
    for field in dataclasses.fields(expected):
        a, b = getattr(got, field.name), getattr(expected, field.name)
        if isinstance(b, np.ndarray) and b.dtype != object:
            assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8)), \
                field.name
        elif isinstance(b, np.ndarray):
            assert a.tolist() == b.tolist(), field.name
        else:
            assert a == b, field.name


def _compare(gt_path, dt_path, iou_type, monkeypatch, reader: str) -> None:
    """Read at once (the early reader ``reader`` used and giving columns) and one after the
    other: the same detections, the same stats."""
    used = []
    early = getattr(results_module, reader)
    monkeypatch.setattr(results_module, reader,
                        lambda *a, **k: used.append(early(*a, **k)) or used[-1])
    together = _inputs.load_pair(gt_path, dt_path, iou_type=iou_type)
    got = evaluate_coco(gt_path, dt_path, iou_type=iou_type)
    assert len(used) == 2 and used[0] is not None
    with monkeypatch.context() as patch:
        _one_after_the_other(patch)
        apart = _inputs.load_pair(gt_path, dt_path, iou_type=iou_type)
        expected = evaluate_coco(gt_path, dt_path, iou_type=iou_type)
    assert len(used) == 2
    _same_detections(together.detections, apart.detections)
    assert got.stats.tobytes() == expected.stats.tobytes()
    assert got.precision.tobytes() == expected.precision.tobytes()


def _same_error(gt_path, dt_path, iou_type, monkeypatch) -> str:
    with pytest.raises(FormatError) as err:
        _inputs.load_pair(gt_path, dt_path, iou_type=iou_type)
    with monkeypatch.context() as patch:
        _one_after_the_other(patch)
        with pytest.raises(FormatError) as before:
            _inputs.load_pair(gt_path, dt_path, iou_type=iou_type)
    assert str(err.value) == str(before.value)
    return str(err.value)


def _keypoint_files(tmp_path, unknown_image: bool = False):
    rng = np.random.default_rng(6)
    records = [{"image_id": int(1 + i % 3), "category_id": int(1 + i % 2),
                "keypoints": np.round(rng.uniform(0, 800, 51), 2).tolist(),
                "score": round(float(rng.random()), 3)} for i in range(800)]
    if unknown_image:
        records[-1]["image_id"] = 99
    gt = {"images": [{"id": i, "width": 900, "height": 900} for i in (1, 2, 3)],
          "annotations": [{"id": j + 1, "image_id": 1 + j % 3, "category_id": 1 + j % 2,
                           "bbox": [10, 10, 300, 300], "area": 9e4, "iscrowd": 0,
                           "num_keypoints": 17, "keypoints": [100 + 9 * j, 200, 2] * 17}
                          for j in range(12)],
          "categories": [{"id": c, "name": str(c)} for c in (1, 2)]}
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "results.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(records, separators=(",", ":")))
    return gt_path, dt_path


def test_keypoint_files_read_at_once(tmp_path, monkeypatch):
    gt_path, dt_path = _keypoint_files(tmp_path)
    _compare(gt_path, dt_path, "keypoints", monkeypatch, "keypoint_columns_early")
    gt_path, dt_path = _keypoint_files(tmp_path, unknown_image=True)
    assert "99" in _same_error(gt_path, dt_path, "keypoints", monkeypatch)


def _segm_files(tmp_path, seed: int, change=None):
    gt, results = make_segm_dataset(seed, bbox_mode="none")
    if change is not None:
        change(results)
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "results.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(results))
    return gt_path, dt_path


@pytest.mark.parametrize("seed", [3, 8])
def test_segm_files_read_at_once(seed, tmp_path, monkeypatch):
    gt_path, dt_path = _segm_files(tmp_path, seed)
    _compare(gt_path, dt_path, "segm", monkeypatch, "segm_columns_early")


def _break_last_mask(results) -> None:
    rle = results[-1]["segmentation"]
    rle["counts"] = rle["counts"][:-1] + "z"     # outside the alphabet


def _unknown_image(results) -> None:
    results[-1]["image_id"] = 10 ** 6


@pytest.mark.parametrize("change", [_break_last_mask, _unknown_image])
def test_segm_refusals_worded_as_before(change, tmp_path, monkeypatch):
    gt_path, dt_path = _segm_files(tmp_path, 5, change)
    assert "results" in _same_error(gt_path, dt_path, "segm", monkeypatch)
