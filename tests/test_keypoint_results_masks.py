"""Keypoint results that carry masks (pycocotools' loadRes reads them in its segm branch):
parity with pycocotools from a dict and from a file, masks of another size than the image
(never compared by the keypoints protocol), and the record named when the first result's
mask is missing, null or empty."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from cocogen import assert_parity, run_pycocotools
from keypointgen import make_keypoints_dataset

import deteval
from deteval.errors import FormatError

# ---------------------------------------------------------------------------------------------
# 761215b: keypoint results in loadRes's segm branch
# ---------------------------------------------------------------------------------------------


def _rle(height: int, width: int, rng: np.random.Generator) -> dict:
    from pycocotools import mask as mask_utils

    mask = np.zeros((height, width), np.uint8, order="F")
    y, x = int(rng.integers(0, height)), int(rng.integers(0, width))
    mask[y:y + int(rng.integers(1, 120)), x:x + int(rng.integers(1, 120))] = 1
    rle = mask_utils.encode(mask)
    return {"size": rle["size"], "counts": rle["counts"].decode()}


def _keypoints_with_masks(seed: int, *, other_size: bool = False) -> tuple[dict, list[dict]]:
    gt, results = make_keypoints_dataset(seed, bbox_mode="none")
    rng = np.random.default_rng(seed)
    images = {image["id"]: image for image in gt["images"]}
    for result in results:
        result.pop("bbox", None)
        image = images[result["image_id"]]
        size = ((int(rng.integers(5, 60)), int(rng.integers(5, 60))) if other_size
                else (image["height"], image["width"]))
        result["segmentation"] = _rle(*size, rng)
    return gt, results


def _assert_parity_dict_and_file(gt: dict, results: list[dict], tmp_path) -> None:
    expected = run_pycocotools(gt, results, iou_type="keypoints")
    assert_parity(deteval.evaluate_coco(gt, copy.deepcopy(results), iou_type="keypoints"),
                  expected)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    assert_parity(deteval.evaluate_coco(gt, path, iou_type="keypoints"), expected)


def test_keypoint_results_with_masks_of_another_size_parity(tmp_path):
    """Was wrong (fixed): io/coco.py _mask_areas_and_boxes: masks_from_segmentations(...,
    check_size=True) refuses a keypoint result's RLE whose size differs from its image
    ('masks are compared pixel by pixel' - they are not in the keypoints protocol); loadRes
    takes maskUtils.area of any RLE and pycocotools evaluates. Pass check_size=False there"""
    gt, results = _keypoints_with_masks(1, other_size=True)
    _assert_parity_dict_and_file(gt, results, tmp_path)


@pytest.mark.parametrize("variant", ["all", "first bbox []", "some own boxes",
                                     "box branch", "first without mask"])
def test_keypoint_results_with_masks_parity(variant, tmp_path):
    gt, results = _keypoints_with_masks(2)
    rng = np.random.default_rng(0)
    if variant == "first bbox []":
        results[0]["bbox"] = []
    elif variant == "some own boxes":
        results[0]["bbox"] = []
        for result in results[1:]:
            if rng.random() < 0.5:
                result["bbox"] = [1.0, 2.0, float(rng.integers(1, 99)), float(rng.integers(1, 99))]
    elif variant == "box branch":   # a non-empty first bbox: areas are w * h
        for result in results:
            result["bbox"] = [1.0, 2.0, float(rng.integers(1, 99)), float(rng.integers(1, 99))]
    elif variant == "first without mask":    # loadRes's keypoints branch: masks ignored
        del results[0]["segmentation"]
    _assert_parity_dict_and_file(gt, results, tmp_path)


def test_keypoint_result_without_the_mask_the_first_has_names_the_record(tmp_path):
    gt, results = _keypoints_with_masks(2)
    del results[1]["segmentation"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    for source in (results, path):
        with pytest.raises(FormatError, match=r"results\[1\]: missing 'segmentation'"):
            deteval.evaluate_coco(gt, source, iou_type="keypoints")


@pytest.mark.parametrize("value, match", [(None, "got NoneType"), ([], "empty list")])
def test_keypoint_result_with_a_null_or_empty_first_mask_names_the_record(value, match,
                                                                          tmp_path):
    gt, results = _keypoints_with_masks(2)
    results[0]["segmentation"] = value
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    for source in (results, path):
        with pytest.raises(FormatError, match=rf"results\[0\]: .*{match}"):
            deteval.evaluate_coco(gt, source, iou_type="keypoints")


def test_keypoint_results_with_polygon_masks_read_alike_from_dict_and_file(tmp_path):
    """pycocotools' area() fails on polygons; deteval rasterises them: no crash, and the
    file (typed decoder declines) and the dict give the same numbers."""
    gt, results = _keypoints_with_masks(3)
    results[0]["segmentation"] = [[10, 10, 50, 10, 50, 40]]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    from_dict = deteval.evaluate_coco(gt, results, iou_type="keypoints")
    from_file = deteval.evaluate_coco(gt, path, iou_type="keypoints")
    assert np.array_equal(from_dict.stats, from_file.stats)
    assert np.array_equal(from_dict.precision, from_file.precision)
