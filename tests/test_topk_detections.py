"""Tests of deteval.confusion.detection_top_k_accuracy: hand-built scenes and agreement with
deteval.classification.top_k_accuracy on the matched detections of random scenes."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import deteval
from deteval.classification import top_k_accuracy
from deteval.confusion import DetectionTopK, detection_top_k_accuracy
from deteval.demo import make_demo
from deteval.errors import UndefinedMetricWarning

CATEGORIES = [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}, {"id": 3, "name": "cow"}]


def scene(annotations, detections):
    gt = {"images": [{"id": 1, "width": 200, "height": 200},
                     {"id": 2, "width": 200, "height": 200}],
          "categories": CATEGORIES,
          "annotations": [{"id": i + 1, "image_id": a.get("image_id", 1),
                           "category_id": a["category_id"], "bbox": a["bbox"],
                           "area": a["bbox"][2] * a["bbox"][3], "iscrowd": a.get("iscrowd", 0),
                           **({"ignore": 1} if a.get("ignore") else {})}
                          for i, a in enumerate(annotations)]}
    dt = [{"image_id": d.get("image_id", 1), "category_id": d["category_id"],
           "bbox": d["bbox"], "score": d["score"]} for d in detections]
    return gt, dt


def test_top1_hit_top2_only_and_unmatched_not_counted():
    gt, dt = scene(
        [{"category_id": 1, "bbox": [0, 0, 10, 10]},
         {"category_id": 2, "bbox": [50, 50, 20, 20]}],
        [{"category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},       # cat, top-1 cat
         {"category_id": 3, "bbox": [51, 50, 20, 20], "score": 0.8},     # dog, top-2 only
         {"category_id": 2, "bbox": [150, 150, 20, 20], "score": 0.7}])  # nothing there
    scores = [[0.7, 0.2, 0.1],
              [0.1, 0.3, 0.6],
              [0.0, 1.0, 0.0]]
    result = detection_top_k_accuracy(gt, dt, scores, k=[1, 2, 3][:2])
    assert isinstance(result, DetectionTopK)
    assert result.n_matched == 2
    assert result.per_k == {1: 0.5, 2: 1.0}
    assert result.accuracy == 0.5
    assert result.k == (1, 2)
    assert result.detection_gt.tolist() == [0, 1, -1]
    assert detection_top_k_accuracy(gt, dt, scores, k=2).accuracy == 1.0
    assert result.to_dict()["per_k"] == {"1": 0.5, "2": 1.0}


def test_matching_ignores_the_detection_class_and_uses_the_iou_threshold():
    # A dog detection on a cat: matched class-agnostically; scores decide the hit.
    gt, dt = scene([{"category_id": 1, "bbox": [0, 0, 10, 10]}],
                   [{"category_id": 2, "bbox": [0, 0, 10, 8], "score": 0.5}])
    assert detection_top_k_accuracy(gt, dt, [[0.9, 0.05, 0.05]]).accuracy == 1.0
    with pytest.warns(UndefinedMetricWarning, match="no detection matched"):
        strict = detection_top_k_accuracy(gt, dt, [[0.9, 0.05, 0.05]], iou_threshold=0.9)
    assert strict.n_matched == 0 and math.isnan(strict.accuracy)
    assert strict.to_dict()["accuracy"] is None


def test_crowd_and_ignored_objects_are_not_counted():
    gt, dt = scene(
        [{"category_id": 1, "bbox": [0, 0, 100, 100], "iscrowd": 1},
         {"category_id": 2, "bbox": [150, 150, 20, 20], "ignore": True},
         {"category_id": 3, "bbox": [120, 0, 20, 20]}],
        [{"category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9},
         {"category_id": 2, "bbox": [150, 150, 20, 20], "score": 0.8},
         {"category_id": 3, "bbox": [120, 0, 20, 20], "score": 0.7}])
    scores = np.array([[1.0, 0, 0], [0, 1.0, 0], [1.0, 0, 0]])
    result = detection_top_k_accuracy(gt, dt, scores)
    assert result.n_matched == 1
    assert result.accuracy == 0.0
    assert result.detection_gt.tolist() == [-1, -1, 2]


def test_ties_break_as_top_k_accuracy():
    gt, dt = scene([{"category_id": 1, "bbox": [0, 0, 10, 10]},
                    {"category_id": 3, "bbox": [50, 0, 10, 10]}],
                   [{"category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
                    {"category_id": 1, "bbox": [50, 0, 10, 10], "score": 0.9}])
    scores = [[0.5, 0.5, 0.0], [0.5, 0.0, 0.5]]   # the later column wins a tie
    result = detection_top_k_accuracy(gt, dt, scores, k=[1, 2])
    assert result.per_k == {1: 0.5, 2: 1.0}
    assert result.per_k[1] == top_k_accuracy([0, 2], scores, k=1, labels=[0, 1, 2])


@pytest.mark.parametrize("seed", range(6))
def test_equals_top_k_accuracy_on_the_matched_subset(seed):
    gt, dt = make_demo(seed=seed, n_images=12)
    dataset = deteval.read_coco_gt(gt)
    detections = deteval.read_coco_results(dt, dataset)
    rng = np.random.default_rng(seed)
    n_k = len(dataset.categories)
    scores = np.round(rng.random((len(detections), n_k)), 1)   # rounding makes ties
    for iou in (0.3, 0.5, 0.75):
        result = detection_top_k_accuracy(dataset, detections, scores, k=[1, 2, 3],
                                          iou_threshold=iou)
        # The same matching by hand: class-agnostic confusion-style match via the matcher.
        matched = np.flatnonzero(result.detection_gt >= 0)
        assert result.n_matched == len(matched) > 0
        objects = dataset.gt
        assert not (objects.iscrowd | objects.ignore)[result.detection_gt[matched]].any()
        assert (objects.image_index[result.detection_gt[matched]]
                == detections.image_index[matched]).all()
        assert len(set(result.detection_gt[matched].tolist())) == len(matched)
        truth = objects.category_index[result.detection_gt[matched]]
        for k in (1, 2, 3):
            assert result.per_k[k] == top_k_accuracy(truth, scores[matched], k=k,
                                                     labels=np.arange(n_k))


def test_matches_the_confusion_matrix_pairs_when_scores_are_one_hot():
    # With every detection's category in its score row, a top-1 hit is a same-class pair;
    # matched pairs of both functions cover the same objects at a loose IoU.
    gt, dt = make_demo(seed=3, n_images=10)
    dataset = deteval.read_coco_gt(gt)
    detections = deteval.read_coco_results(dt, dataset)
    one_hot = np.eye(len(dataset.categories))[detections.category_index]
    result = detection_top_k_accuracy(dataset, detections, one_hot)
    matched = result.detection_gt >= 0
    same = dataset.gt.category_index[result.detection_gt[matched]] == \
        detections.category_index[matched]
    assert result.accuracy == pytest.approx(same.mean())


def test_errors():
    gt, dt = scene([{"category_id": 1, "bbox": [0, 0, 10, 10]}],
                   [{"category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
                    {"category_id": 2, "bbox": [50, 0, 10, 10], "score": 0.5}])
    good = np.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match="2-D"):
        detection_top_k_accuracy(gt, dt, good[0])
    with pytest.raises(ValueError, match=r"one row per detection \(2\); got 3 rows"):
        detection_top_k_accuracy(gt, dt, np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"one column per category of the dataset \(3\); got 2"):
        detection_top_k_accuracy(gt, dt, np.ones((2, 2)))
    bad = good.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"finite; got nan at \[1, 2\]"):
        detection_top_k_accuracy(gt, dt, bad)
    with pytest.raises(TypeError, match="real numbers"):
        detection_top_k_accuracy(gt, dt, np.array([["a"] * 3] * 2))
    with pytest.raises(ValueError, match="at least 1"):
        detection_top_k_accuracy(gt, dt, good, k=0)
    with pytest.raises(TypeError, match="integer"):
        detection_top_k_accuracy(gt, dt, good, k=1.5)
    with pytest.raises(ValueError, match="iou_threshold"):
        detection_top_k_accuracy(gt, dt, good, iou_threshold=0)
    with pytest.warns(UndefinedMetricWarning, match=r"k \(4\) >= the number of classes \(3\)"):
        assert detection_top_k_accuracy(gt, dt, good, k=4).accuracy == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        detection_top_k_accuracy(gt, dt, good, k=2)
