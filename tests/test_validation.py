"""Settings and constructors refuse what would give silently wrong numbers."""

from __future__ import annotations

import numpy as np
import pytest
from cocogen import run_pycocotools

import deteval
from deteval import COCOParams, Detections, FormatError, GroundTruth
from deteval._sorting import lexorder


def _one_object():
    gt = {"images": [{"id": 1, "width": 100, "height": 100}],
          "categories": [{"id": 1}, {"id": 2}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20],
                           "area": 400, "iscrowd": 0}]}
    return gt, deteval.read_coco_gt(gt)


def test_replacing_boxes_drops_the_stale_xywh_and_area():
    gt, dataset = _one_object()
    dt = deteval.read_coco_results(
        [{"image_id": 1, "category_id": 1, "bbox": [60, 60, 20, 20], "score": 0.9}], dataset)
    assert deteval.evaluate_coco(dataset, dt).stats[0] == 0.0
    moved = dt.replace(boxes=[[10, 10, 30, 30]])
    assert moved.xywh is None and moved.area.tolist() == [400.0]
    assert deteval.evaluate_coco(dataset, moved).stats[0] > 0.99


def test_replacing_category_index_drops_the_source_category_ids():
    _, dataset = _one_object()
    dt = deteval.read_coco_results(
        [{"image_id": 1, "category_id": 2, "bbox": [10, 10, 20, 20], "score": 0.9}], dataset)
    relabelled = dt.replace(category_index=[0])
    assert relabelled.category_ids is None
    assert deteval.evaluate_coco(dataset, relabelled).stats[0] > 0.99


@pytest.mark.parametrize(
    ("columns", "error", "message"),
    [
        pytest.param({"boxes": [[10, 10, 0, 0]]}, ValueError, r"x2 >= x1 and y2 >= y1",
                     id="inverted-box"),
        pytest.param({"area": [np.nan]}, ValueError, r"area must be finite", id="nan-area"),
        pytest.param({"iscrowd": [np.nan]}, ValueError, r"iscrowd must hold 0/1 flags",
                     id="nan-crowd"),
        pytest.param({"iscrowd": ["False"]}, TypeError, r"iscrowd must hold numbers",
                     id="string-crowd"),
        pytest.param({"ids": np.array([2**64 - 1], dtype=np.uint64)}, ValueError,
                     r"ids must fit in int64", id="uint64-id"),
        pytest.param({"xywh": [[0, 0, -5, 1]]}, ValueError, r"w >= 0 and h >= 0",
                     id="negative-xywh"),
    ],
)
def test_ground_truth_refuses_bad_columns(columns, error, message):
    base = {"image_index": [0], "category_index": [0], "boxes": [[0, 0, 1, 1]]}
    with pytest.raises(error, match=message):
        GroundTruth(**{**base, **columns})


def test_detections_refuse_string_scores():
    with pytest.raises(TypeError, match="scores must hold numbers"):
        Detections(image_index=[0], category_index=[0], boxes=[[0, 0, 1, 1]], scores=["0.9"])


def test_dataset_detections_refuses_negative_xywh():
    _, dataset = _one_object()
    with pytest.raises(ValueError, match=r"w >= 0 and h >= 0"):
        dataset.detections(image_ids=[1], category_ids=[1], boxes=[[0, 0, -5, 1]],
                           scores=[0.5], box_format="xywh")


def test_iscrowd_must_be_zero_or_one():
    gt, _ = _one_object()
    gt["annotations"][0]["iscrowd"] = 0.5
    with pytest.raises(FormatError, match=r"annotations\[0\] \(id 1\): 'iscrowd' must be 0 or 1"):
        deteval.read_coco_gt(gt)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        pytest.param({"use_categories": "no"}, TypeError, "use_categories must be True or False",
                     id="use-categories-string"),
        pytest.param({"max_detections": (1, 10.5, 100)}, ValueError,
                     "max_detections must be a list of integers", id="fractional-max-dets"),
        pytest.param({"image_ids": (1.5,)}, ValueError, "image_ids must be a list of integers",
                     id="fractional-image-id"),
        pytest.param({"max_detections": (1, 10, 10, 100), "area_labels": ("all", "x", "y", "z")},
                     ValueError, "cannot be summarised", id="unsummarisable"),
    ],
)
def test_params_refuse_bad_settings(options, error, message):
    with pytest.raises(error, match=message):
        COCOParams(**options)


def test_result_arrays_are_read_only():
    gt, dataset = _one_object()
    result = deteval.evaluate_coco(dataset, [])
    with pytest.raises(ValueError):
        result.stats[0] = 42


def test_recall_thresholds_far_beyond_one_match_pycocotools():
    gt, _ = _one_object()
    results = [{"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9}]
    ours = deteval.evaluate_coco(gt, results, recall_thresholds=(0.5, 1e19, -1e19))
    ref = run_pycocotools(gt, results, recall_thresholds=(0.5, 1e19, -1e19))
    assert np.array_equal(ours.precision, ref.precision)
    assert np.array_equal(ours.scores, ref.scores)


def test_lexorder_refuses_negative_keys():
    with pytest.raises(ValueError, match="non-negative"):
        lexorder([np.array([1, 0]), np.array([-5, 0])])


def test_match_table_does_not_freeze_the_callers_arrays():
    rank = np.array([0])
    table = deteval.MatchTable(
        iou_thresholds=np.array([0.5]), area_ranges=np.array([[0.0, 1e10]]), dt_rank=rank,
        dt_kept=np.array([True]), dt_score_rank=np.array([0]),
        dt_out_of_range=np.zeros((1, 1), bool),
        gt_evaluated=np.zeros(0, bool), gt_crowd=np.zeros(0, bool),
        gt_ignore=np.zeros((1, 0), bool), match_area=np.zeros(0, np.int64),
        match_threshold=np.zeros(0, np.int64), match_dt=np.zeros(0, np.int64),
        match_gt=np.zeros(0, np.int64))
    assert rank.flags.writeable and not table.dt_rank.flags.writeable
