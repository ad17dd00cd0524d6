"""The ground-truth reader's shapes path (segm, polygon) reads a file with the cyclic garbage
collector paused until the parsed file is freed (deteval.io.coco.gt.read_coco_gt): the
collector never walks the parsed records, the collector's state is the caller's afterwards
(also after an error), and the dataset is the one read with the collector running."""

from __future__ import annotations

import gc
import json

import numpy as np
import pytest

from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt


def _polygon_gt(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    annotations = []
    for i in range(n):
        x, y = (float(v) for v in rng.uniform(15, 85, 2))
        angles = (np.arange(6) + rng.uniform(0.2, 0.8, 6)) * np.pi / 3   # one per sixth:
        radii = rng.uniform(3, 14, 6)                       # star-shaped, never crossing
        points = np.column_stack([x + radii * np.cos(angles), y + radii * np.sin(angles)])
        annotations.append({"id": i + 1, "image_id": 1 + i % 3, "category_id": 1,
                            "segmentation": [np.round(points, 2).ravel().tolist()],
                            "area": 100.0, "bbox": [x, y, 30.0, 30.0], "iscrowd": 0})
    return {"images": [{"id": k, "height": 100, "width": 100} for k in (1, 2, 3)],
            "categories": [{"id": 1, "name": "a"}], "annotations": annotations}


@pytest.fixture
def default_thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)       # CPython's default, whatever a test set before
    yield
    gc.set_threshold(*before)


@pytest.mark.parametrize("iou_type", ["segm", "polygon"])
def test_the_collector_does_not_walk_the_parsed_file(tmp_path, default_thresholds, iou_type):
    data = _polygon_gt(3000)
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(data))
    runs = []

    def count(phase, info):
        if phase == "start":
            runs.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        from_file = read_coco_gt(path, iou_type=iou_type)
    finally:
        gc.callbacks.remove(count)
    # 3,000 records of 4 objects each (~12,000 allocations, a collection every 700 while
    # the collector runs): at most the one collection of the survivors after the read.
    assert len(runs) <= 1, runs
    assert gc.isenabled()
    from_dict = read_coco_gt(data, iou_type=iou_type)      # (no pause on this path)
    if iou_type == "segm":
        assert from_file.gt.masks.tolist() == from_dict.gt.masks.tolist()
        assert np.array_equal(from_file.gt.mask_area, from_dict.gt.mask_area)
    else:
        assert all(a.equals(b) for a, b in zip(from_file.gt.polygons, from_dict.gt.polygons))


def test_the_collector_state_is_the_callers_after_a_read_and_after_an_error(tmp_path):
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(_polygon_gt(5)))
    bad = _polygon_gt(5)
    bad["annotations"][3]["segmentation"] = [[1, 2, 3]]         # odd number of coordinates
    bad_path = tmp_path / "bad.json"
    bad_path.write_text(json.dumps(bad))
    assert gc.isenabled()
    read_coco_gt(path, iou_type="segm")
    assert gc.isenabled()
    with pytest.raises(FormatError, match="odd number of coordinates"):
        read_coco_gt(bad_path, iou_type="segm")
    assert gc.isenabled()
    gc.disable()
    try:
        read_coco_gt(path, iou_type="segm")
        assert not gc.isenabled()           # a caller's paused collector stays paused
    finally:
        gc.enable()
