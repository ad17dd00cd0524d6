"""Tests of the Pascal VOC protocol (deteval.protocols.voc) and the VOC rule of the matcher:
worked example E of docs/protocols/voc.md §5, hand-computed cases (difficult objects,
duplicates, the IoU comparison, pixel conventions, ties), the literal devkit and detectron2 loops of
``reference.reference_voc_eval`` on seeded random datasets, hypothesis properties, the result
object and the error messages.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import reference_voc_eval

from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
from deteval.matching import FP, IGNORED, NOT_EVALUATED, TP, match_detections
from deteval.protocols.voc import (
    DETECTRON2_VOC2007,
    DETECTRON2_VOC2012,
    VOC2007,
    VOC2012,
    VOCParams,
    _round_as_text,
    evaluate_voc,
)


def scene(gt_boxes, dt_boxes, scores, *, gt_class=None, dt_class=None, gt_image=None,
          dt_image=None, difficult=None, n_images=1, n_classes=1):
    """A Dataset and Detections from plain lists (one image and one class by default)."""
    n_gt, n_dt = len(gt_boxes), len(dt_boxes)
    dataset = Dataset(
        Images(ids=np.arange(1, n_images + 1)),
        Categories(ids=np.arange(1, n_classes + 1),
                   names=[f"class{k}" for k in range(n_classes)]),
        GroundTruth(image_index=np.zeros(n_gt, int) if gt_image is None else gt_image,
                    category_index=np.zeros(n_gt, int) if gt_class is None else gt_class,
                    boxes=np.asarray(gt_boxes, float).reshape(-1, 4),
                    ignore=np.zeros(n_gt, bool) if difficult is None else difficult))
    detections = Detections(
        image_index=np.zeros(n_dt, int) if dt_image is None else dt_image,
        category_index=np.zeros(n_dt, int) if dt_class is None else dt_class,
        boxes=np.asarray(dt_boxes, float).reshape(-1, 4), scores=scores)
    return dataset, detections


def statuses(result, t=0):
    return result.matches.detection_status(0)[t].tolist()


# --------------------------------------------------------------------------------------------
# Worked example E (docs/protocols/voc.md §5)
# --------------------------------------------------------------------------------------------

# Five objects side by side; detections by score: TP, TP, FP, TP.
E_GT = [[20 * i, 0, 20 * i + 9, 9] for i in range(5)]
E_DT = [[0, 0, 9, 9], [20, 0, 29, 9], [200, 200, 209, 209], [40, 0, 49, 9]]
E_SCORES = [0.9, 0.8, 0.7, 0.6]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        pytest.param(dataclasses.replace(DETECTRON2_VOC2007, iou_thresholds=0.5),
                     0.5227272727272727, id="detectron2-11-point"),
        pytest.param(VOC2007, 0.5909090909090908, id="devkit-11-point"),
        pytest.param(VOC2012, 0.55, id="devkit-all-points"),
        pytest.param(DETECTRON2_VOC2012, 0.55, id="detectron2-all-points"),
    ],
)
def test_example_e_scene(params, expected):
    result = evaluate_voc(*scene(E_GT, E_DT, E_SCORES), params=params)
    assert result.ap[0, 0] == expected
    assert result.map[0] == expected
    assert statuses(result) == [TP, TP, FP, TP]
    curve = result.pr_curve(1)
    assert curve.recall.tolist() == [0.2, 0.4, 0.4, 0.6]
    assert curve.precision.tolist() == [1.0, 1.0, 2 / 3, 0.75]
    assert result.tp[0].tolist() == [3] and result.fp[0].tolist() == [1]
    assert result.n_positives.tolist() == [5]


# --------------------------------------------------------------------------------------------
# Hand-computed cases
# --------------------------------------------------------------------------------------------

def test_detection_on_difficult_object_is_ignored_and_marks_nothing():
    # object 0 is difficult; d0 and d1 both overlap it best: both ignored, nothing marked;
    # d2 finds the regular object 1.
    dataset, dets = scene([[0, 0, 9, 9], [30, 0, 39, 9]],
                          [[0, 0, 9, 9], [0, 0, 9, 8], [30, 0, 39, 9]], [0.9, 0.8, 0.7],
                          difficult=[True, False])
    result = evaluate_voc(dataset, dets)
    assert statuses(result) == [IGNORED, IGNORED, TP]
    assert result.matches.gt_status(0)[0].tolist() == [IGNORED, TP]
    assert result.n_positives.tolist() == [1] and result.n_difficult.tolist() == [1]
    assert result.tp[0].tolist() == [1] and result.fp[0].tolist() == [0]
    assert result.ap[0, 0] == 1.0
    assert result.pr_curve(1).detections.tolist() == [2]  # ignored ones left out


def test_best_object_difficult_beats_a_regular_one():
    # d0 overlaps the regular object 0 (IoU 0.8) and the difficult object 1 more (0.9):
    # VOC looks only at the best, so d0 is ignored (COCO would prefer the regular object)
    ious = np.array([[0.8, 0.9]])
    kwargs = dict(dt_group=np.array([0]), dt_scores=np.array([0.9]), dt_area=np.zeros(1),
                  gt_group=np.array([0, 0]), gt_crowd=np.array([False, False]),
                  gt_ignore=np.array([False, True]), gt_area=np.zeros(2),
                  similarity=lambda d, g: ious[d, g], iou_thresholds=np.array([0.5]),
                  area_ranges=np.array([[0.0, 1e10]]), max_detections=100)
    assert match_detections(**kwargs, rule="voc").detection_status().tolist() == [[IGNORED]]
    assert match_detections(**kwargs).detection_status().tolist() == [[TP]]


def test_difficult_object_below_threshold_does_not_ignore():
    # the best object is difficult but the IoU fails: a false positive
    dataset, dets = scene([[0, 0, 9, 9]], [[0, 0, 9, 2]], [0.9], difficult=[True])
    result = evaluate_voc(dataset, dets)
    assert statuses(result) == [FP]
    assert math.isnan(result.ap[0, 0])  # no positives: excluded


def test_duplicate_is_false_positive_even_when_another_object_is_free():
    # objects 0 and 1; d0 takes 0; d1 overlaps 0 best (0.8) and 1 enough (0.6): VOC calls it
    # a duplicate, COCO gives it object 1.
    ious = np.array([[0.9, 0.0], [0.8, 0.6]])
    kwargs = dict(dt_group=np.array([0, 0]), dt_scores=np.array([0.9, 0.8]),
                  dt_area=np.zeros(2), gt_group=np.array([0, 0]),
                  gt_crowd=np.array([False, False]), gt_ignore=np.array([False, False]),
                  gt_area=np.zeros(2), similarity=lambda d, g: ious[d, g],
                  iou_thresholds=np.array([0.5]), area_ranges=np.array([[0.0, 1e10]]),
                  max_detections=100)
    voc = match_detections(**kwargs, rule="voc")
    assert voc.detection_status().tolist() == [[TP, FP]]
    assert voc.dt_best_gt.tolist() == [0, 0]
    assert voc.dt_best_iou.tolist() == [0.9, 0.8]
    assert match_detections(**kwargs).detection_status().tolist() == [[TP, TP]]


def test_duplicate_through_evaluate_voc():
    dataset, dets = scene([[0, 0, 9, 9], [5, 0, 14, 9]], [[0, 0, 9, 9], [1, 0, 10, 9]],
                          [0.9, 0.8])
    # d1: IoU 90/110 with object 0, 60/140 with object 1 -> duplicate
    result = evaluate_voc(dataset, dets)
    assert statuses(result) == [TP, FP]
    assert result.ap[0, 0] == 0.5


def test_equal_iou_first_object_wins_so_identical_objects_make_duplicates():
    # two identical objects: each detection's best is the first one (first argmax), so the
    # second detection is a duplicate although the second object is free
    dataset, dets = scene([[0, 0, 9, 9], [0, 0, 9, 9]], [[0, 0, 9, 9], [0, 0, 9, 9]],
                          [0.9, 0.8])
    result = evaluate_voc(dataset, dets)
    assert statuses(result) == [TP, FP]
    assert result.matches.dt_best_gt.tolist() == [0, 0]
    assert result.ap[0, 0] == 0.5


def test_score_ties_keep_input_order():
    dataset, dets = scene([[0, 0, 9, 9]], [[0, 0, 9, 8], [0, 0, 9, 9]], [0.5, 0.5])
    assert statuses(evaluate_voc(dataset, dets)) == [TP, FP]
    dataset, dets = scene([[0, 0, 9, 9]], [[0, 0, 9, 9], [0, 0, 9, 8]], [0.5, 0.5])
    assert statuses(evaluate_voc(dataset, dets)) == [TP, FP]


@pytest.mark.parametrize(
    ("gt", "dt", "inclusive", "comparison", "expected"),
    [
        # +1 convention: 10x10 object, 10x5 detection: IoU 50/100 = 0.5 exactly
        pytest.param([0, 0, 9, 9], [0, 0, 9, 4], True, ">=", TP, id="half-plus-one-devkit"),
        pytest.param([0, 0, 9, 9], [0, 0, 9, 4], True, ">", FP, id="half-plus-one-detectron2"),
        # continuous: 10x10 object, 10x5 detection: 50/100
        pytest.param([0, 0, 10, 10], [0, 0, 10, 5], False, ">=", TP, id="half-continuous"),
        pytest.param([0, 0, 10, 10], [0, 0, 10, 5], False, ">", FP,
                     id="half-continuous-strict"),
        # the same numbers in the other convention are not a half
        pytest.param([0, 0, 9, 9], [0, 0, 9, 4], False, ">=", FP, id="plus-one-box-continuous"),
        # +1: 9/16 = 0.5625 passes; continuous: 4/9 fails
        pytest.param([0, 0, 3, 3], [1, 1, 3, 3], True, ">=", TP, id="small-box-plus-one"),
        pytest.param([0, 0, 3, 3], [1, 1, 3, 3], False, ">=", FP, id="small-box-continuous"),
        # +1: a zero-width box is one pixel wide and matches itself
        pytest.param([5, 5, 5, 5], [5, 5, 5, 5], True, ">", TP, id="one-pixel-plus-one"),
        pytest.param([5, 5, 5, 5], [5, 5, 5, 5], False, ">=", FP, id="point-continuous"),
        # touching boxes overlap by one pixel column with +1
        pytest.param([0, 0, 9, 9], [9, 0, 18, 9], True, ">=", FP, id="touching"),
    ],
)
def test_iou_comparison_and_pixel_convention(gt, dt, inclusive, comparison, expected):
    result = evaluate_voc(*scene([gt], [dt], [0.9]), inclusive_pixels=inclusive,
                          iou_comparison=comparison)
    assert statuses(result) == [expected]


def test_best_iou_columns():
    dataset, dets = scene([[0, 0, 9, 9], [0, 0, 9, 4]], [[0, 0, 9, 9], [50, 50, 60, 60]],
                          [0.9, 0.8], dt_class=[0, 0])
    table = evaluate_voc(dataset, dets).matches
    assert table.dt_best_gt.tolist() == [0, -1]
    assert table.dt_best_iou.tolist() == [1.0, 0.0]
    exported = table.to_dict()
    assert exported["dt_best_gt"].tolist() == [0, -1]
    assert json.loads(table.to_json())["dt_best_iou"] == [1.0, 0.0]


def test_several_thresholds_and_classes():
    # class 0: d0 IoU 0.6 with its object (TP at .5, FP at .7); class 1: d1 exact
    dataset, dets = scene([[0, 0, 9, 9], [0, 0, 9, 9]], [[0, 0, 9, 5], [0, 0, 9, 9]],
                          [0.9, 0.8], gt_class=[0, 1], dt_class=[0, 1], n_classes=2)
    result = evaluate_voc(dataset, dets, iou_thresholds=[0.5, 0.7])
    assert result.ap.tolist() == [[1.0, 1.0], [0.0, 1.0]]
    assert result.map.tolist() == [1.0, 0.5]
    assert result.mean_ap == 0.75
    assert result.map_at(0.7) == 0.5
    assert result.tp.tolist() == [[1, 1], [0, 1]] and result.fp.tolist() == [[0, 0], [1, 0]]


def test_classes_without_detections_score_zero_and_count():
    dataset, dets = scene([[0, 0, 9, 9], [0, 0, 9, 9]], [[0, 0, 9, 9]], [0.9],
                          gt_class=[0, 1], dt_class=[0], n_classes=2)
    result = evaluate_voc(dataset, dets)
    assert result.ap[0].tolist() == [1.0, 0.0]
    assert result.map[0] == 0.5


def test_detections_on_images_without_objects_are_false_positives():
    dataset, dets = scene([[0, 0, 9, 9]], [[0, 0, 9, 9], [0, 0, 9, 9]], [0.9, 0.95],
                          dt_image=[0, 1], n_images=2)
    result = evaluate_voc(dataset, dets)
    assert statuses(result) == [TP, FP]
    assert result.ap[0, 0] == 0.5


def test_classes_without_ground_truth():
    # class 1 has only a difficult object and a detection; class 2 has nothing at all
    dataset, dets = scene([[0, 0, 9, 9], [0, 0, 9, 9]], [[0, 0, 9, 9], [50, 50, 59, 59]],
                          [0.9, 0.8], gt_class=[0, 1], dt_class=[0, 1],
                          difficult=[False, True], n_classes=3)
    excluded = evaluate_voc(dataset, dets)
    assert excluded.ap[0, 0] == 1.0 and np.isnan(excluded.ap[0, 1:]).all()
    assert excluded.map.tolist() == [1.0]
    assert any("2 class(es) without ground truth (class1, class2)" in n for n in excluded.notes)
    assert any("their 1 detection(s) count nowhere" in n for n in excluded.notes)
    d2_11 = evaluate_voc(dataset, dets, classes_without_gt="detectron2", ap_method="voc11")
    assert d2_11.ap[0].tolist() == [1.0000000000000002, 0.0, 0.0]
    assert d2_11.map[0] == pytest.approx(1 / 3)
    d2_all = evaluate_voc(dataset, dets, classes_without_gt="detectron2")
    # all-points: 0 / 0 recall makes the class with a detection NaN, and with it the mAP
    assert d2_all.ap[0, 0] == 1.0 and np.isnan(d2_all.ap[0, 1]) and d2_all.ap[0, 2] == 0.0
    assert np.isnan(d2_all.map[0])


def test_no_ground_truth_and_no_detections():
    dataset, dets = scene([], [], [], n_classes=2)
    result = evaluate_voc(dataset, dets)
    assert np.isnan(result.ap).all() and np.isnan(result.map).all()
    assert math.isnan(result.mean_ap)
    assert "no detections: every class with ground truth has AP 0" in result.notes
    assert "no class has ground truth: the mAP is NaN" in result.notes
    assert "n/a" in result.summary()


def test_no_detections():
    dataset, dets = scene([[0, 0, 9, 9]], [], [])
    result = evaluate_voc(dataset, dets)
    assert result.ap.tolist() == [[0.0]]
    assert result.pr_curve(1).recall.tolist() == []


def test_no_categories():
    dataset = Dataset(Images(ids=[1]), Categories(ids=[]),
                      GroundTruth(image_index=[], category_index=[], boxes=[]))
    dets = Detections(image_index=[], category_index=[], boxes=[], scores=[])
    result = evaluate_voc(dataset, dets)
    assert result.ap.shape == (1, 0) and np.isnan(result.map).all()


def test_unknown_category_detections_are_dropped():
    dataset, dets = scene([[0, 0, 9, 9]], [[0, 0, 9, 9], [0, 0, 9, 9]], [0.9, 0.8],
                          dt_class=[-1, 0])
    result = evaluate_voc(dataset, dets)
    assert statuses(result) == [NOT_EVALUATED, TP]
    assert "1 detection(s) dropped: their category is not a ground-truth category" in \
        result.notes


def test_image_and_category_subsets():
    dataset, dets = scene([[0, 0, 9, 9], [0, 0, 9, 9], [0, 0, 9, 9]],
                          [[0, 0, 9, 9], [0, 0, 9, 9], [0, 0, 9, 9]], [0.9, 0.8, 0.7],
                          gt_image=[0, 1, 0], dt_image=[0, 1, 1], gt_class=[0, 0, 1],
                          dt_class=[0, 0, 1], n_images=2, n_classes=2)
    result = evaluate_voc(dataset, dets, image_ids=[2], category_ids=[2, 1])
    assert result.category_ids.tolist() == [2, 1]
    assert result.category_names == ("class1", "class0")
    assert result.n_positives.tolist() == [0, 1]
    assert statuses(result) == [NOT_EVALUATED, TP, FP]
    assert result.params.image_ids == (2,)
    unknown = evaluate_voc(dataset, dets, image_ids=[1, 9], category_ids=[1, 7])
    assert "1 requested image id(s) are not images of the ground truth" in unknown.notes
    assert "1 requested category id(s) are not categories of the ground truth" in unknown.notes
    assert unknown.category_names == ("class0", "7")


def test_round_detections_like_detectron2():
    # 9.96 is written as 10.0; 0.12345 as 0.123, 0.1235 as 0.123 or 0.124 as Python rounds it
    dataset, dets = scene([[0, 0, 10, 10]], [[0.04, 0.0, 9.96, 10.0], [0, 0, 10, 10]],
                          [0.12345, 0.1235], )
    plain = evaluate_voc(dataset, dets, inclusive_pixels=False)
    rounded = evaluate_voc(dataset, dets, inclusive_pixels=False, round_detections=True)
    assert plain.scores.tolist() == [0.12345, 0.1235]
    assert rounded.scores.tolist() == [float(f"{0.12345:.3f}"), float(f"{0.1235:.3f}")]
    assert rounded.matches.dt_best_iou[0] == 1.0 and plain.matches.dt_best_iou[0] < 1.0


@given(st.lists(st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.integers(-10**6, 10**6).map(lambda k: k / 2000),   # exact and near half-way points
    st.integers(-10**5, 10**5).map(lambda k: k / 20 + 0.05),
    st.floats(1e6, 1e14), st.floats(-1e300, 1e300, allow_nan=False)), min_size=1,
    max_size=20),
    st.sampled_from([1, 3]))
@settings(max_examples=300, deadline=None, derandomize=True)
def test_round_as_text_equals_formatting(values, decimals):
    array = np.array(values, dtype=np.float64)
    expected = [float(f"{v:.{decimals}f}") for v in values]
    assert _round_as_text(array, decimals).tolist() == expected


def test_reads_coco_inputs_and_treats_crowds_as_difficult():
    gt = {"images": [{"id": 1}], "categories": [{"id": 3, "name": "cat"}],
          "annotations": [
              {"id": 1, "image_id": 1, "category_id": 3, "bbox": [0, 0, 10, 10], "area": 100,
               "iscrowd": 0},
              {"id": 2, "image_id": 1, "category_id": 3, "bbox": [50, 50, 10, 10], "area": 100,
               "iscrowd": 1},
              {"id": 3, "image_id": 1, "category_id": 3, "bbox": [80, 80, 10, 10], "area": 100,
               "iscrowd": 0, "ignore": 1}]}
    dt = [{"image_id": 1, "category_id": 3, "bbox": [0, 0, 10, 10], "score": 0.9},
          {"image_id": 1, "category_id": 3, "bbox": [50, 50, 10, 10], "score": 0.8},
          {"image_id": 1, "category_id": 3, "bbox": [80, 80, 10, 10], "score": 0.7}]
    result = evaluate_voc(gt, dt, inclusive_pixels=False)
    assert statuses(result) == [TP, IGNORED, IGNORED]
    assert result.n_positives.tolist() == [1] and result.n_difficult.tolist() == [2]
    assert "1 crowd region(s) (iscrowd) treated as difficult objects" in result.notes
    assert result.category_names == ("cat",)


# --------------------------------------------------------------------------------------------
# The result object
# --------------------------------------------------------------------------------------------

def test_result_views():
    dataset, dets = scene(E_GT, E_DT, E_SCORES)
    result = evaluate_voc(dataset, dets, params=DETECTRON2_VOC2007)
    text = result.summary()
    lines = text.splitlines()
    assert lines[0] == "Pascal VOC evaluation: AP voc11, IoU > t, inclusive pixels (+1)"
    assert lines[1].split() == ["category", "AP@[0.50:0.95]", "AP@0.50", "AP@0.75",
                                "positives", "difficult", "detections", "TP@0.50", "FP@0.50"]
    assert lines[2].split() == ["class0", "0.5227", "0.5227", "0.5227", "5", "0", "4", "3", "1"]
    assert "mAP@0.50 = 0.5227 over 1 class" in lines
    assert "mAP@[0.50:0.95] (10 thresholds) = 0.5227" in lines
    payload = result.to_dict()
    json.dumps(payload, allow_nan=False)
    assert payload["per_class"][0]["ap"][0] == 0.5227272727272727
    assert payload["params"]["iou_comparison"] == ">"
    row = result.per_class()[0]
    assert (row["name"], row["n_positives"], row["n_detections"]) == ("class0", 5, 4)
    assert result.pr_curve("class0", iou_threshold=0.75).scores.tolist() == \
        [0.9, 0.8, 0.7, 0.6]
    assert set(result.timings) == {"load", "match", "accumulate", "total"}
    with pytest.raises(KeyError, match="iou_threshold 0.3 was not evaluated"):
        result.map_at(0.3)
    with pytest.raises(KeyError, match="unknown category 'dog'"):
        result.pr_curve("dog")
    with pytest.raises(ValueError):
        result.ap[0, 0] = 1.0  # read-only
    nan_dict = evaluate_voc(*scene([], [[0, 0, 1, 1]], [0.5])).to_dict()
    assert nan_dict["map"] == [None] and nan_dict["per_class"][0]["ap"] == [None]
    few = evaluate_voc(dataset, dets, iou_thresholds=[0.5, 0.6])
    assert few.summary().splitlines()[1].split()[1:3] == ["AP@0.50", "AP@0.60"]


def test_inputs_are_not_modified():
    dataset, dets = scene(E_GT, E_DT, E_SCORES)
    boxes, scores = dets.boxes.copy(), dets.scores.copy()
    evaluate_voc(dataset, dets, params=DETECTRON2_VOC2012)
    assert np.array_equal(dets.boxes, boxes) and np.array_equal(dets.scores, scores)


# --------------------------------------------------------------------------------------------
# Literal references on seeded random datasets
# --------------------------------------------------------------------------------------------

_SCORE_POOL = (0.9, 0.75, 0.5, 0.3)
_FRACTIONS = (0.0, 0.05, 0.25, 0.5, 0.15, 0.35, 0.45)


def random_scene(seed: int, *, distinct_scores: bool = False, perfect: bool = False):
    """A small dataset built to hit the VOC rule's corners.

    Integer boxes (so IoU lands exactly on 0.5 with either pixel convention), difficult
    objects, identical objects (IoU ties), several detections per object, detections of the
    wrong class or on images without objects, empty images, classes without objects or
    without detections, tied scores, and coordinates and scores on rounding half-way points.
    With ``perfect``: one exact detection per object and no identical objects.
    """
    rng = np.random.default_rng(seed)
    n_images, n_classes = int(rng.integers(1, 6)), int(rng.integers(1, 5))
    gt_image, gt_class, gt_boxes, difficult = [], [], [], []
    for image in range(n_images):
        for _ in range(int(rng.integers(0, 6))):
            k = int(rng.integers(0, n_classes))
            x, y = (int(v) for v in rng.integers(0, 40, 2))
            # zero-size boxes too, except in perfect scenes (a point matches nothing with
            # continuous coordinates)
            w, h = (int(v) for v in rng.integers(int(perfect), 25, 2))
            box = [x, y, x + w, y + h]
            if perfect and any(b == box and gi == image and gk == k
                               for b, gi, gk in zip(gt_boxes, gt_image, gt_class)):
                continue
            copies = 2 if (not perfect and rng.random() < 0.1) else 1
            for _ in range(copies):
                gt_image.append(image)
                gt_class.append(k)
                gt_boxes.append(box)
                difficult.append(bool(rng.random() < 0.25))
    dt_image, dt_class, dt_boxes, scores = [], [], [], []

    def score():
        if distinct_scores:
            return float(rng.random())
        kind = rng.integers(4)
        if kind == 0:
            return float(rng.choice(_SCORE_POOL))
        if kind == 1:
            return int(rng.integers(0, 1000)) / 1000 + 0.0005  # a "%.3f" half-way point
        return float(rng.random())

    if perfect:
        for j, box in enumerate(gt_boxes):
            dt_image.append(gt_image[j])
            dt_class.append(gt_class[j])
            dt_boxes.append(list(map(float, box)))
            scores.append(score())
    else:
        for _ in range(int(rng.integers(0, 4 * n_images + 8))):
            image = int(rng.integers(0, n_images))
            k = int(rng.integers(-1, n_classes)) if rng.random() < 0.15 else None
            sources = [j for j in range(len(gt_boxes)) if gt_image[j] == image]
            kind = rng.integers(5)
            if sources and kind < 4:
                j = int(rng.choice(sources))
                x1, y1, x2, y2 = gt_boxes[j]
                if kind == 0:
                    box = [x1, y1, x2, y2]
                elif kind == 1:
                    box = [v + int(rng.integers(-3, 4)) for v in (x1, y1, x2, y2)]
                elif kind == 2:  # half the height: IoU 0.5 in one convention
                    box = [x1, y1, x2, y1 + (y2 - y1 + 1) // 2 - 1] if rng.random() < 0.5 \
                        else [x1, y1, x2, y1 + (y2 - y1) // 2]
                else:
                    box = [v + float(rng.choice(_FRACTIONS)) * rng.choice([-1, 1])
                           for v in (x1, y1, x2, y2)]
                k = gt_class[j] if k is None else k
            else:
                x, y = rng.uniform(0, 50, 2)
                w, h = rng.uniform(0, 30, 2)
                box = [float(x), float(y), float(x + w), float(y + h)]
                k = int(rng.integers(0, n_classes)) if k is None else k
            box = [float(v) for v in box]
            box[2], box[3] = max(box[0], box[2]), max(box[1], box[3])
            dt_image.append(image)
            dt_class.append(k)
            dt_boxes.append(box)
            scores.append(score())
    n_classes += int(rng.random() < 0.2)  # sometimes a class with nothing at all
    dataset, dets = scene(gt_boxes, dt_boxes, scores, gt_class=gt_class, dt_class=dt_class,
                          gt_image=gt_image, dt_image=dt_image, difficult=difficult,
                          n_images=n_images, n_classes=n_classes)
    raw = dict(gt_image=gt_image, gt_class=gt_class, gt_boxes=gt_boxes, gt_difficult=difficult,
               dt_image=dt_image, dt_class=dt_class, dt_boxes=dt_boxes, dt_scores=scores,
               classes=list(range(n_classes)))
    return dataset, dets, raw


# (reference keywords, VOCParams)
CONFIGS = [
    (dict(flavour="devkit", use_07_metric=True), VOC2007),
    (dict(flavour="devkit", use_07_metric=False), VOC2012),
    (dict(flavour="detectron2", use_07_metric=True),
     dataclasses.replace(DETECTRON2_VOC2007, iou_thresholds=(0.5, 0.75))),
    (dict(flavour="detectron2", use_07_metric=False),
     dataclasses.replace(DETECTRON2_VOC2012, iou_thresholds=(0.5, 0.7))),
    (dict(flavour="devkit", use_07_metric=False, inclusive=False),
     dataclasses.replace(VOC2012, inclusive_pixels=False, iou_thresholds=(0.3, 0.5))),
    (dict(flavour="devkit", use_07_metric=True, strict=True),
     dataclasses.replace(VOC2007, iou_comparison=">")),
]


def assert_same_as_reference(dataset, dets, raw, reference_kwargs, params):
    result = evaluate_voc(dataset, dets, params=params)
    status = result.matches.detection_status(0)
    for t, threshold in enumerate(params.iou_thresholds):
        expected = reference_voc_eval(**raw, threshold=threshold, **reference_kwargs)
        aps = []
        for k, ref in expected.items():
            ours = result.ap[t, k]
            ref_ap = math.nan if ref["ap"] is None else ref["ap"]
            if (math.isnan(ref_ap) and ref["npos"] > 0 and params.ap_method == "voc11-devkit"):
                # every detection on a difficult object: devkit NaN, deteval 0 (documented)
                assert ours == 0.0 and ref["tp"] == ref["fp"] == 0
            elif math.isnan(ref_ap):
                assert math.isnan(ours), (k, t)
            else:
                assert ours == pytest.approx(ref_ap, abs=1e-12), (k, t)
            if ref["ap"] is not None:
                aps.append(ours)
            assert result.n_positives[k] == ref["npos"]
            assert (result.tp[t, k], result.fp[t, k]) == (ref["tp"], ref["fp"]), (k, t)
            for d, s in ref["status"].items():
                assert status[t, d] == s, (k, t, d)
            if ref["npos"] and reference_kwargs["flavour"] == "devkit":
                curve = result.pr_curve(int(result.category_ids[k]), iou_threshold=threshold)
                counted = [i for i, d in enumerate(sorted(ref["status"], key=lambda d: (
                    -raw["dt_scores"][d], d))) if ref["status"][d] != 2]
                assert curve.recall.tolist() == [ref["rec"][i] for i in counted]
                assert curve.precision.tolist() == [ref["prec"][i] for i in counted]
        evaluated = {d for ref in expected.values() for d in ref["status"]}
        for d in range(len(dets)):
            if d not in evaluated:
                assert status[t, d] == NOT_EVALUATED
        if params.classes_without_gt == "exclude":
            expected_map = float(np.mean(aps)) if aps else math.nan
        else:
            expected_map = float(np.mean(result.ap[t]))
        assert result.map[t] == pytest.approx(expected_map, abs=1e-12, nan_ok=True)


@pytest.mark.parametrize("seed", range(240))
def test_against_literal_devkit_and_detectron2(seed):
    dataset, dets, raw = random_scene(seed)
    # every dataset under two of the configurations, all of them equally often
    for index in (seed % len(CONFIGS), (seed // len(CONFIGS) + seed + 1) % len(CONFIGS)):
        reference_kwargs, params = CONFIGS[index]
        assert_same_as_reference(dataset, dets, raw, reference_kwargs, params)


def test_matcher_voc_rule_handles_many_groups_at_once():
    """One call over every (image, class) group equals a call per group."""
    dataset, dets, _ = random_scene(12345)
    whole = evaluate_voc(dataset, dets)
    per_image = []
    for image in range(len(dataset.images)):
        part = evaluate_voc(dataset, dets, image_ids=[int(dataset.images.ids[image])])
        rows = np.flatnonzero(dets.image_index == image)
        per_image.append((rows, part.matches.detection_status(0)[:, rows]))
    full = whole.matches.detection_status(0)
    for rows, part_status in per_image:
        assert np.array_equal(full[:, rows], part_status)


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

PRESETS = [VOC2007, VOC2012, DETECTRON2_VOC2007, DETECTRON2_VOC2012,
           dataclasses.replace(VOC2012, ap_method="coco101", inclusive_pixels=False)]


@given(st.integers(0, 10**6), st.sampled_from(PRESETS))
@settings(max_examples=60, deadline=None, derandomize=True)
def test_ap_in_unit_interval(seed, params):
    dataset, dets, _ = random_scene(seed)
    ap = evaluate_voc(dataset, dets, params=params).ap
    top = 1.0000000000000002 if params.ap_method.startswith("voc11") else 1.0
    assert ((ap >= 0) & (ap <= top) | np.isnan(ap)).all()


@given(st.integers(0, 10**6), st.randoms(use_true_random=False),
       st.sampled_from(PRESETS))
@settings(max_examples=60, deadline=None, derandomize=True)
def test_invariant_to_detection_order_with_distinct_scores(seed, random, params):
    # without rounding: scores rounded to 3 decimals may tie
    params = dataclasses.replace(params, round_detections=False)
    dataset, dets, _ = random_scene(seed, distinct_scores=True)
    order = list(range(len(dets)))
    random.shuffle(order)
    first = evaluate_voc(dataset, dets, params=params)
    second = evaluate_voc(dataset, dets[np.array(order, dtype=int)], params=params)
    assert np.array_equal(first.ap, second.ap, equal_nan=True)
    assert np.array_equal(first.tp, second.tp) and np.array_equal(first.fp, second.fp)
    # an increasing transform of the scores changes nothing either
    squashed = evaluate_voc(dataset, dets.replace(scores=dets.scores ** 3 / 7 + 1),
                            params=params)
    assert np.array_equal(first.ap, squashed.ap, equal_nan=True)


@given(st.integers(0, 10**6), st.sampled_from(PRESETS))
@settings(max_examples=60, deadline=None, derandomize=True)
def test_perfect_detections_give_ap_one(seed, params):
    dataset, dets, _ = random_scene(seed, perfect=True)
    result = evaluate_voc(dataset, dets, params=params)
    has_positives = result.n_positives > 0
    assert result.ap[:, has_positives] == pytest.approx(1.0, abs=1e-15)
    assert (result.fp == 0).all()


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        pytest.param({"iou_thresholds": []}, ValueError,
                     r"iou_thresholds must be a non-empty list of numbers in \(0, 1\]",
                     id="no-thresholds"),
        pytest.param({"iou_thresholds": [0.5, 0.0]}, ValueError,
                     r"iou_thresholds must be a non-empty list of numbers in \(0, 1\]; "
                     r"got \[0.5, 0.0\]", id="zero-threshold"),
        pytest.param({"iou_thresholds": 1.5}, ValueError, r"in \(0, 1\]; got 1.5",
                     id="threshold-above-one"),
        pytest.param({"iou_thresholds": [np.nan]}, ValueError, r"in \(0, 1\]",
                     id="nan-threshold"),
        pytest.param({"iou_thresholds": "0.5"}, ValueError, r"iou_thresholds must be",
                     id="string-threshold"),
        pytest.param({"ap_method": "voc2007"}, ValueError,
                     r"ap_method must be one of 'voc11', 'voc11-devkit', 'all-points', "
                     r"'coco101'; got 'voc2007'", id="bad-method"),
        pytest.param({"iou_comparison": "=>"}, ValueError,
                     r"iou_comparison must be '>=' \(devkit\) or '>' \(detectron2\); got '=>'",
                     id="bad-comparison"),
        pytest.param({"inclusive_pixels": "yes"}, TypeError,
                     r"inclusive_pixels must be True or False; got 'yes'", id="bad-pixels"),
        pytest.param({"round_detections": 2}, TypeError,
                     r"round_detections must be True or False; got 2", id="bad-rounding"),
        pytest.param({"classes_without_gt": "zero"}, ValueError,
                     r"classes_without_gt must be 'exclude' or 'detectron2'; got 'zero'",
                     id="bad-empty-rule"),
        pytest.param({"classes_without_gt": "detectron2", "ap_method": "coco101"}, ValueError,
                     r"no meaning with ap_method='coco101'", id="detectron2-coco101"),
        pytest.param({"image_ids": [1.5]}, ValueError,
                     r"image_ids must be a list of integers; got \[1.5\]", id="bad-image-ids"),
        pytest.param({"category_ids": [1, 1]}, ValueError,
                     r"category_ids must not repeat a category; got \(1, 1\)",
                     id="repeated-category"),
    ],
)
def test_bad_settings(options, error, message):
    with pytest.raises(error, match=message):
        VOCParams(**options)
    with pytest.raises(error, match=message):
        evaluate_voc(*scene(E_GT, E_DT, E_SCORES), **options)


def test_bad_calls():
    dataset, dets = scene(E_GT, E_DT, E_SCORES)
    with pytest.raises(TypeError, match=r"evaluate_voc\(\) got unknown option\(s\): "
                                        r"max_detections, use_07"):
        evaluate_voc(dataset, dets, use_07=True, max_detections=100)
    with pytest.raises(TypeError, match="params must be a VOCParams; got COCOParams"):
        from deteval import COCO
        evaluate_voc(dataset, dets, params=COCO)
    outside = Detections(image_index=[3], category_index=[0], boxes=[[0, 0, 1, 1]],
                         scores=[0.5])
    with pytest.raises(ValueError, match="detections.image_index must index the dataset's "
                                         "images table"):
        evaluate_voc(dataset, outside)
    bad_class = Detections(image_index=[0], category_index=[5], boxes=[[0, 0, 1, 1]],
                           scores=[0.5])
    with pytest.raises(ValueError, match="detections.category_index must index"):
        evaluate_voc(dataset, bad_class)


def test_matcher_rule_errors():
    kwargs = dict(dt_group=np.zeros(0, int), dt_scores=np.zeros(0), dt_area=np.zeros(0),
                  gt_group=np.zeros(0, int), gt_crowd=np.zeros(0, bool),
                  gt_ignore=np.zeros(0, bool), gt_area=np.zeros(0),
                  similarity=lambda d, g: np.zeros(len(d)), iou_thresholds=np.array([0.5]),
                  area_ranges=np.array([[0.0, 1e10]]), max_detections=100)
    with pytest.raises(ValueError, match="rule must be 'coco' or 'voc'; got 'pascal'"):
        match_detections(**kwargs, rule="pascal")
    with pytest.raises(ValueError, match="strict=True is a VOC-rule option"):
        match_detections(**kwargs, strict=True)
    empty = match_detections(**kwargs, rule="voc")
    assert empty.n_detections == 0 and empty.dt_best_gt.tolist() == []
