"""The segm evaluation skips pairs whose IoU cannot reach the lowest threshold.

``mask_iou_bound`` must never fall below pycocotools' own IoU (to the last bit), and the
evaluation must give the same arrays with and without the readers' ``mask_area`` /
``mask_xywh`` columns, whatever the thresholds (the skip is off when the lowest is <= 0).
"""

from __future__ import annotations

import json

import numpy as np
import pycocotools.mask as mask_utils
import pytest
from maskgen import make_segm_dataset

import deteval
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.masks import mask_iou_bound


def _random_masks(rng: np.random.Generator, n: int, h: int, w: int) -> list[dict]:
    masks = []
    for _ in range(n):
        kind = rng.integers(0, 4)
        bitmap = np.zeros((h, w), dtype=np.uint8)
        if kind == 0:    # a box
            y0, x0 = rng.integers(0, h), rng.integers(0, w)
            bitmap[y0:y0 + rng.integers(1, h + 1), x0:x0 + rng.integers(1, w + 1)] = 1
        elif kind == 1:  # scattered pixels
            bitmap = (rng.random((h, w)) < rng.uniform(0.01, 0.7)).astype(np.uint8)
        elif kind == 2:  # a full column run crossing into the next column
            bitmap[rng.integers(0, h):, rng.integers(0, w - 1)] = 1
            bitmap[:rng.integers(1, h + 1), rng.integers(1, w)] = 1
        # kind 3: empty
        masks.append(mask_utils.encode(np.asfortranarray(bitmap)))
    return masks


@pytest.mark.parametrize("seed", range(5))
def test_bound_is_never_below_the_pycocotools_iou(seed):
    rng = np.random.default_rng(seed)
    h, w = (int(v) for v in rng.integers(2, 24, 2))
    dts, gts = _random_masks(rng, 30, h, w), _random_masks(rng, 20, h, w)
    crowd = rng.random(len(gts)) < 0.3
    iou = np.asarray(mask_utils.iou(dts, gts, crowd.astype(np.uint8))).reshape(30, 20)
    a_d = np.asarray(mask_utils.area(dts), dtype=np.float64)
    a_g = np.asarray(mask_utils.area(gts), dtype=np.float64)
    b_d = np.asarray(mask_utils.toBbox(dts), dtype=np.float64)
    b_g = np.asarray(mask_utils.toBbox(gts), dtype=np.float64)
    d, g = (m.ravel() for m in np.meshgrid(np.arange(30), np.arange(20), indexing="ij"))
    with_boxes = mask_iou_bound(a_d[d], a_g[g], crowd[g], b_d[d], b_g[g])
    areas_only = mask_iou_bound(a_d[d], a_g[g], crowd[g])
    exact = iou[d, g]
    assert (with_boxes >= exact).all() and (areas_only >= with_boxes).all()
    assert ((with_boxes == 0) == (exact == 0)).mean() > 0.3   # boxes do rule pairs out
    same = mask_iou_bound(a_d, a_d, np.zeros(30, bool), b_d, b_d)
    assert same.tolist() == [1.0 if a else 0.0 for a in a_d]


@pytest.mark.parametrize(("seed", "params"), [
    (0, {}),
    (1, {"iou_thresholds": [0.0, 0.2, 0.5]}),          # lowest threshold 0: no skipping
    (2, {"iou_thresholds": [1e-9, 0.3]}),
    (3, {"iou_thresholds": [0.5, 0.75, 1.0]}),
    (4, {"use_categories": False}),
])
def test_with_and_without_the_mask_columns_the_arrays_are_equal(seed, params, tmp_path):
    gt_dict, results = make_segm_dataset(200 + seed, p_crowd=0.4, p_many=0.2)
    (tmp_path / "gt.json").write_text(json.dumps(gt_dict))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    dataset = read_coco_gt(tmp_path / "gt.json", iou_type="segm")
    detections = read_coco_results(tmp_path / "dt.json", dataset, iou_type="segm")
    assert detections.mask_area is not None and dataset.gt.mask_area is not None
    bare = detections.replace(mask_area=None, mask_xywh=None)
    fast = deteval.evaluate_coco(dataset, detections, iou_type="segm", **params)
    slow = deteval.evaluate_coco(dataset, bare, iou_type="segm", **params)
    for name in ("stats", "precision", "recall", "scores"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name


def test_new_masks_drop_the_derived_columns(tmp_path):
    gt_dict, results = make_segm_dataset(7)
    (tmp_path / "gt.json").write_text(json.dumps(gt_dict))
    dataset = read_coco_gt(tmp_path / "gt.json", iou_type="segm")
    gt = dataset.gt
    assert gt.mask_area is not None
    replaced = gt.replace(masks=gt.masks[::-1])
    assert replaced.mask_area is None and replaced.mask_xywh is None
    assert np.array_equal(gt[::2].mask_area, gt.mask_area[::2])
