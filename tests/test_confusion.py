"""Tests of deteval.confusion: hand-built scenes where every object and detection lands in one
known cell, identities and agreement with the shared matcher on seeded random scenes, the
bundled demo data, operating points and input errors.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scenes import BIRD, CAT, DOG, NAMES, box, scene

from deteval.confusion import (
    DetectionConfusion,
    OperatingPoints,
    detection_confusion_matrix,
    operating_points,
)
from deteval.data import Dataset, Detections
from deteval.demo import make_demo
from deteval.errors import UndefinedMetricWarning
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.iou import coco_pair_iou
from deteval.matching import FP, IGNORED, TP, match_detections
from deteval.protocols.coco import evaluate_coco

UNKNOWN = 3


def only(cells: dict) -> list[list[int]]:
    matrix = np.zeros((4, 4), dtype=int)
    for (row, col), n in cells.items():
        matrix[row, col] = n
    return matrix.tolist()


# --------------------------------------------------------------------------------------
# Hand-built scenes: one cell each
# --------------------------------------------------------------------------------------

CORRECT = ([(0, CAT, box(0, 0))], [(0, CAT, box(0, 0), 0.9)])
CONFUSED = ([(0, DOG, box(0, 0))], [(0, CAT, box(1, 0), 0.9)])
BACKGROUND = ([], [(0, BIRD, box(200, 200), 0.6)])
MISSED = ([(0, BIRD, box(300, 300))], [])


@pytest.mark.parametrize("case, cells", [
    (CORRECT, {(CAT, CAT): 1}),
    (CONFUSED, {(DOG, CAT): 1}),
    (BACKGROUND, {(UNKNOWN, BIRD): 1}),
    (MISSED, {(BIRD, UNKNOWN): 1}),
], ids=["correct", "confused", "background", "missed"])
def test_single_event_lands_in_one_cell(case, cells):
    cm = detection_confusion_matrix(*scene(*case))
    assert cm.counts.tolist() == only(cells)
    assert cm.labels == ("cat", "dog", "bird", "Unknown")


def test_duplicate_is_a_background_false_positive_of_its_class():
    objects = [(0, CAT, box(0, 0))]
    dets = [(0, CAT, box(0, 0), 0.9), (0, CAT, box(1, 1), 0.5)]   # second: a duplicate
    cm = detection_confusion_matrix(*scene(objects, dets))
    assert cm.counts.tolist() == only({(CAT, CAT): 1, (UNKNOWN, CAT): 1})
    assert cm.detection_row.tolist() == [CAT, UNKNOWN]
    assert cm.detection_gt.tolist() == [0, -1]


def test_duplicate_of_another_class_on_a_found_object_is_background():
    # The dog detection overlaps the cat, but the cat is already found by the cat detection.
    objects = [(0, CAT, box(0, 0))]
    dets = [(0, CAT, box(0, 0), 0.5), (0, DOG, box(0, 0), 0.9)]
    cm = detection_confusion_matrix(*scene(objects, dets))
    assert cm.counts.tolist() == only({(CAT, CAT): 1, (UNKNOWN, DOG): 1})


def test_within_class_pass_comes_before_the_cross_class_pass():
    # The dog detection scores higher, but the cat detection takes the cat within its class.
    objects = [(0, CAT, box(0, 0)), (0, DOG, box(0, 4))]
    dets = [(0, DOG, box(0, 0), 0.9), (0, CAT, box(0, 0), 0.3)]
    cm = detection_confusion_matrix(*scene(objects, dets))
    # dog detection vs dog object: IoU 60/140 < 0.5, so it is not matched within its class;
    # the cat detection takes the cat; the dog object is missed and the dog detection is
    # background (the cat it overlaps is taken).
    assert cm.counts.tolist() == only({(CAT, CAT): 1, (DOG, UNKNOWN): 1, (UNKNOWN, DOG): 1})


def test_full_scene_every_event_once():
    objects = [
        (0, CAT, box(0, 0)),                   # found correctly
        (0, DOG, box(100, 0)),                 # found as a cat
        (0, BIRD, box(300, 300)),              # missed
        (1, CAT, box(400, 400, 100), True),    # a crowd of cats
        (1, DOG, box(0, 0), False, True),      # an ignored (difficult) dog
    ]
    dets = [
        (0, CAT, box(0, 0), 0.9),              # correct
        (0, CAT, box(101, 0), 0.8),            # confusion: cat on the dog
        (0, CAT, box(1, 0), 0.7),              # duplicate on the cat: background
        (0, BIRD, box(200, 200), 0.6),         # background
        (1, CAT, box(410, 410), 0.8),          # inside the cat crowd: ignored
        (1, CAT, box(420, 420), 0.7),          # inside the cat crowd: ignored too
        (1, DOG, box(430, 430), 0.8),          # dog in the cat crowd: background
        (1, DOG, box(0, 0), 0.9),              # on the ignored dog: ignored
        (0, BIRD, box(300, 300), 0.01),        # would find the bird, below score threshold
    ]
    cm = detection_confusion_matrix(*scene(objects, dets, n_images=2), score_threshold=0.05)
    assert cm.counts.tolist() == only({(CAT, CAT): 1, (DOG, CAT): 1, (UNKNOWN, CAT): 1,
                                       (UNKNOWN, BIRD): 1, (BIRD, UNKNOWN): 1,
                                       (UNKNOWN, DOG): 1})
    assert cm.detection_row.tolist() == [CAT, DOG, UNKNOWN, UNKNOWN, -1, -1, UNKNOWN, -1, -1]
    assert cm.gt_column.tolist() == [CAT, CAT, UNKNOWN, -1, -1]
    assert cm.n_ignored_detections.tolist() == [2, 1, 0]
    rows = {row["name"]: row for row in cm.per_class(zero_division=0)}
    assert (rows["cat"]["tp"], rows["cat"]["fp"], rows["cat"]["fn"]) == (1, 2, 0)
    assert (rows["cat"]["fp_confused"], rows["cat"]["fp_background"]) == (1, 1)
    assert (rows["dog"]["tp"], rows["dog"]["fp"], rows["dog"]["fn"]) == (0, 1, 1)
    assert (rows["dog"]["fn_confused"], rows["dog"]["fn_missed"]) == (1, 0)
    assert (rows["bird"]["tp"], rows["bird"]["fp"], rows["bird"]["fn"]) == (0, 1, 1)
    assert rows["cat"]["precision"] == pytest.approx(1 / 3)
    assert rows["cat"]["recall"] == 1.0
    assert rows["cat"]["f1"] == pytest.approx(0.5)
    # Lowering the score threshold finds the bird.
    low = detection_confusion_matrix(*scene(objects, dets, n_images=2))
    assert low.counts[BIRD, BIRD] == 1 and low.counts[BIRD, UNKNOWN] == 0


def test_iou_threshold_decides_between_correct_and_background():
    objects, dets = [(0, CAT, box(0, 0))], [(0, CAT, box(3, 0), 0.9)]   # IoU 70/130
    assert detection_confusion_matrix(*scene(objects, dets), iou_threshold=0.5).counts[
        CAT, CAT] == 1
    strict = detection_confusion_matrix(*scene(objects, dets), iou_threshold=0.6)
    assert strict.counts.tolist() == only({(CAT, UNKNOWN): 1, (UNKNOWN, CAT): 1})


def test_unknown_category_detections_are_dropped_and_counted():
    dataset, dt = scene([(0, CAT, box(0, 0))], [(0, CAT, box(0, 0), 0.9)])
    dt = Detections(image_index=[0, 0], category_index=[0, -1],
                    boxes=[box(0, 0), box(50, 50)], scores=[0.9, 0.8])
    cm = detection_confusion_matrix(dataset, dt)
    assert cm.counts.tolist() == only({(CAT, CAT): 1})
    assert cm.n_dropped_detections == 1
    assert cm.detection_row.tolist() == [CAT, -1]


# --------------------------------------------------------------------------------------
# Normalisation, rendering, export
# --------------------------------------------------------------------------------------


def full_scene_result(**options) -> DetectionConfusion:
    objects = [(0, CAT, box(0, 0)), (0, DOG, box(100, 0)), (0, BIRD, box(300, 300)),
               (0, CAT, box(50, 50))]
    dets = [(0, CAT, box(0, 0), 0.9), (0, CAT, box(101, 0), 0.8), (0, CAT, box(1, 0), 0.7),
            (0, BIRD, box(200, 200), 0.6)]
    return detection_confusion_matrix(*scene(objects, dets), **options)


def test_normalize_rows_and_columns():
    raw = full_scene_result()
    assert raw.matrix.tolist() == raw.counts.astype(float).tolist()
    true = full_scene_result(normalize="true")
    assert true.counts.tolist() == raw.counts.tolist()
    sums = true.matrix.sum(axis=1)
    assert np.allclose(sums[raw.counts.sum(axis=1) > 0], 1.0)
    assert true.matrix[CAT].tolist() == [0.5, 0.0, 0.0, 0.5]   # recall 1/2, one missed
    pred = full_scene_result(normalize="pred")
    sums = pred.matrix.sum(axis=0)
    assert np.allclose(sums[raw.counts.sum(axis=0) > 0], 1.0)
    assert pred.matrix[CAT, CAT] == pytest.approx(1 / 3)       # precision of cat
    assert np.array_equal(raw.normalized("pred"), pred.matrix)
    assert not pred.matrix[:, DOG].any()                       # empty column stays zero


def test_format_table_and_to_dict():
    cm = full_scene_result()
    text = cm.format_table()
    lines = text.splitlines()
    assert lines[0].split()[-4:] == ["cat", "dog", "bird", "Unknown"]
    assert lines[1].split() == ["cat", "1", "0", "0", "1"]
    assert "0.333" in text
    assert "0.500" in cm.format_table(normalize="true")
    data = cm.to_dict(zero_division=0)
    json.dumps(data)
    assert data["labels"] == ["cat", "dog", "bird", "Unknown"]
    assert data["counts"] == cm.counts.tolist()
    assert data["overall"] == {"tp": 1, "fp": 3, "fn": 3, "precision": 0.25, "recall": 0.25,
                               "f1": 0.25}
    assert [row["name"] for row in data["per_class"]] == list(NAMES)


def test_undefined_ratio_warns_by_default():
    cm = full_scene_result()
    with pytest.warns(UndefinedMetricWarning, match="'dog'"):
        cm.per_class()
    assert np.isnan(cm.per_class(zero_division=np.nan)[DOG]["precision"])
    assert cm.per_class(zero_division=1)[DOG]["precision"] == 1.0


def test_result_is_frozen():
    cm = full_scene_result()
    with pytest.raises(ValueError):
        cm.counts[0, 0] = 5
    with pytest.raises(AttributeError):
        cm.iou_threshold = 0.3


# --------------------------------------------------------------------------------------
# Properties on random scenes
# --------------------------------------------------------------------------------------


def random_scene(seed: int, n_images: int = 6, n_k: int = 3) -> tuple[Dataset, Detections]:
    rng = np.random.default_rng(seed)
    objects, dets = [], []
    for image in range(n_images):
        for _ in range(rng.integers(0, 8)):
            x, y, s = rng.uniform(0, 60), rng.uniform(0, 60), rng.uniform(8, 30)
            k = int(rng.integers(0, n_k))
            crowd, ignore = bool(rng.random() < 0.1), bool(rng.random() < 0.1)
            objects.append((image, k, [x, y, x + s, y + s], crowd, ignore))
            for _ in range(rng.integers(0, 3)):   # detections around it, any class
                j = rng.normal(0, 2.5, 4)
                label = k if rng.random() < 0.7 else int(rng.integers(0, n_k))
                dets.append((image, label, [x + j[0], y + j[1], x + s + j[2], y + s + j[3]],
                             float(np.round(rng.random(), 2))))
        for _ in range(rng.integers(0, 3)):       # background
            x, y = rng.uniform(0, 80), rng.uniform(0, 80)
            dets.append((image, int(rng.integers(0, n_k)), [x, y, x + 10, y + 10],
                         float(np.round(rng.random(), 2))))
    dets = [(i, k, [b[0], b[1], max(b[2], b[0]), max(b[3], b[1])], s) for i, k, b, s in dets]
    return scene(objects, dets, n_images=n_images)


def reference_within_class(dataset, dt, t, s):
    """Status of every detection from the shared matcher, COCO rule, within the class."""
    gt, n_k = dataset.gt, len(dataset.categories)
    keep = dt.scores >= s
    dt_xywh, gt_xywh = dt.as_xywh(), gt.as_xywh()
    table = match_detections(
        dt_group=np.where(keep, dt.image_index * n_k + dt.category_index, -1),
        dt_scores=dt.scores, dt_area=dt.area, gt_group=gt.image_index * n_k + gt.category_index,
        gt_crowd=gt.iscrowd, gt_ignore=gt.iscrowd | gt.ignore, gt_area=gt.area,
        similarity=lambda d, g: coco_pair_iou(dt_xywh[d], gt_xywh[g], gt.iscrowd[g]),
        iou_thresholds=np.array([t]), area_ranges=np.array([[0, np.inf]]),
        max_detections=10_000)
    return table.detection_status()[0]


@pytest.mark.parametrize("seed", range(8))
def test_identities_and_agreement_with_the_matcher(seed):
    dataset, dt = random_scene(seed)
    gt = dataset.gt
    n_k = len(dataset.categories)
    regular = ~gt.iscrowd & ~gt.ignore
    for t in (0.3, 0.5, 0.75):
        for s in (0.0, 0.4, 0.8):
            cm = detection_confusion_matrix(dataset, dt, iou_threshold=t, score_threshold=s)
            counts = cm.counts
            status = reference_within_class(dataset, dt, t, s)
            keep = dt.scores >= s
            tp = np.bincount(dt.category_index[status == TP], minlength=n_k)
            fp = np.bincount(dt.category_index[status == FP], minlength=n_k)
            ignored = np.bincount(dt.category_index[status == IGNORED], minlength=n_k)
            above = np.bincount(dt.category_index[keep], minlength=n_k)
            n_gt = np.bincount(gt.category_index[regular], minlength=n_k)
            assert np.diagonal(counts)[:n_k].tolist() == tp.tolist()
            assert counts[:n_k].sum(axis=1).tolist() == n_gt.tolist()
            assert counts[:, :n_k].sum(axis=0).tolist() == (above - ignored).tolist()
            assert cm.n_ignored_detections.tolist() == ignored.tolist()
            assert counts[n_k, n_k] == 0
            # Every object and every counted detection exactly once.
            n_objects, n_counted = int(regular.sum()), int((above - ignored).sum())
            assert counts.sum() == n_objects + counts[n_k].sum()
            assert counts.sum() == n_counted + counts[:, n_k].sum()
            rows = cm.per_class(zero_division=0)
            assert [r["tp"] for r in rows] == tp.tolist()
            assert [r["fp"] for r in rows] == fp.tolist()
            # The per-detection and per-object views rebuild the matrix.
            d = cm.detection_row >= 0
            assert np.array_equal(cm.detection_row[~keep], np.full((~keep).sum(), -1))
            cells = np.r_[cm.detection_row[d] * (n_k + 1) + dt.category_index[d],
                          gt.category_index[cm.gt_column == n_k] * (n_k + 1) + n_k]
            rebuilt = np.bincount(cells, minlength=(n_k + 1) ** 2).reshape(n_k + 1, n_k + 1)
            assert rebuilt.tolist() == counts.tolist()
            assert (cm.gt_column[~regular] == -1).all() and (cm.gt_column[regular] >= 0).all()
            # Each object is matched by at most one detection.
            matched = cm.detection_gt[cm.detection_gt >= 0]
            assert len(matched) == len(np.unique(matched))
            assert regular[matched].all()


@pytest.mark.parametrize("seed", range(4))
def test_operating_points_agree_with_the_matrix(seed):
    dataset, dt = random_scene(100 + seed)
    points = operating_points(dataset, dt, iou_threshold=0.5)
    assert isinstance(points, OperatingPoints)
    for c, name in enumerate(NAMES):
        curve = points.curves[name]
        for i in range(0, len(curve["thresholds"]), 3):
            s = float(curve["thresholds"][i])
            row = detection_confusion_matrix(dataset, dt, score_threshold=s).per_class(
                zero_division=0)[c]
            assert (row["tp"], row["fp"], row["fn"]) == (
                int(curve["tp"][i]), int(curve["fp"][i]), int(curve["fn"][i]))
            assert row["f1"] == pytest.approx(curve["fbeta"][i])
        best = points.best(name)
        if not np.isnan(best["threshold"]):
            assert best["fbeta"] == pytest.approx(curve["fbeta"].max())
    overall = points.curves["overall"]
    s = float(overall["thresholds"][len(overall["thresholds"]) // 2])
    totals = detection_confusion_matrix(dataset, dt, score_threshold=s).overall(zero_division=0)
    i = len(overall["thresholds"]) // 2
    assert (totals["tp"], totals["fp"]) == (int(overall["tp"][i]), int(overall["fp"][i]))


def test_operating_points_hand_built():
    objects = [(0, CAT, box(0, 0)), (0, CAT, box(50, 0)), (0, CAT, box(100, 0))]
    dets = [(0, CAT, box(0, 0), 0.9), (0, CAT, box(200, 0), 0.8),
            (0, CAT, box(50, 0), 0.7), (0, CAT, box(300, 0), 0.6), (0, CAT, box(100, 0), 0.5)]
    points = operating_points(*scene(objects, dets))
    curve = points.curves["cat"]
    assert curve["thresholds"].tolist() == [0.9, 0.8, 0.7, 0.6, 0.5]
    assert curve["tp"].tolist() == [1, 1, 2, 2, 3]
    assert curve["fp"].tolist() == [0, 1, 1, 2, 2]
    # F1 per threshold: 2/4, 2/5, 4/6, 4/7, 6/8 -> best at 0.5
    best = points.best("cat")
    assert (best["threshold"], best["tp"], best["fp"], best["fn"]) == (0.5, 3, 2, 0)
    assert best["fbeta"] == pytest.approx(0.75)
    assert points.best()["threshold"] == 0.5           # overall: the same single class
    # precision 1 is reached only at 0.9 (recall 1/3); recall 1 only at 0.5 (precision 3/5)
    assert points.recall_at_precision(1.0, "cat")["threshold"] == 0.9
    assert points.recall_at_precision(0.65, "cat")["recall"] == pytest.approx(2 / 3)
    assert points.precision_at_recall(1.0, "cat")["precision"] == pytest.approx(0.6)
    assert points.precision_at_recall(0.5, "cat")["threshold"] == 0.7
    # beta = 0.5 favours precision: 0.9 (F = 5/7 .. ) vs 0.7 (F = 0.667)
    precise = operating_points(*scene(objects, dets), beta=0.5)
    assert precise.best("cat")["threshold"] == 0.9
    # A class without detections has no best threshold.
    assert np.isnan(points.best("dog")["threshold"])
    assert np.isnan(points.precision_at_recall(0.5, "dog")["precision"])
    data = points.to_dict()
    json.dumps(data)
    assert data["per_class"][1]["threshold"] is None
    assert data["overall"]["threshold"] == 0.5
    with pytest.raises(KeyError, match="unknown category"):
        points.best("horse")


# --------------------------------------------------------------------------------------
# The demo data
# --------------------------------------------------------------------------------------


def test_demo_data_agrees_with_coco_evaluation():
    gt_dict, results = make_demo(seed=0)
    dataset = read_coco_gt(gt_dict)
    dt = read_coco_results(results, dataset)
    cm = detection_confusion_matrix(gt_dict, results)       # from the dicts
    same = detection_confusion_matrix(dataset, dt)         # from the data types
    assert cm.counts.tolist() == same.counts.tolist()
    k = len(dataset.categories)
    assert cm.labels[:k] == tuple(gt_dict["categories"][i]["name"] for i in range(k))
    coco = evaluate_coco(dataset, dt)
    status = coco.matches.detection_status(0)[0]             # area "all", IoU 0.50
    tp = np.bincount(dt.category_index[status == TP], minlength=k)
    assert np.diagonal(cm.counts)[:k].tolist() == tp.tolist()
    regular = ~dataset.gt.iscrowd
    assert cm.counts[:k].sum(axis=1).tolist() == np.bincount(
        dataset.gt.category_index[regular], minlength=k).tolist()
    assert cm.counts[:k, :k].sum() - np.trace(cm.counts) > 0    # the demo confuses classes
    assert cm.counts[k, :k].sum() > 0 and cm.counts[:k, k].sum() > 0
    assert cm.counts.sum() == regular.sum() + cm.counts[k].sum()
    best = operating_points(gt_dict, results).best()
    assert 0 < best["threshold"] < 1 and 0 < best["fbeta"] <= 1


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("options, error, message", [
    ({"normalize": "all"}, ValueError, "normalize must be"),
    ({"normalize": True}, ValueError, "normalize must be"),
    ({"score_threshold": -0.1}, ValueError, "score_threshold must be"),
    ({"score_threshold": float("nan")}, ValueError, "score_threshold must be"),
    ({"iou_threshold": 0.0}, ValueError, "iou_threshold must be"),
    ({"iou_threshold": 1.5}, ValueError, "iou_threshold must be"),
    ({"iou_threshold": "0.5"}, TypeError, "iou_threshold must be a number"),
])
def test_bad_options(options, error, message):
    with pytest.raises(error, match=message):
        detection_confusion_matrix(*scene(*CORRECT), **options)


def test_bad_operating_point_options():
    with pytest.raises(ValueError, match="beta must be"):
        operating_points(*scene(*CORRECT), beta=0)
    with pytest.raises(ValueError, match="iou_threshold must be"):
        operating_points(*scene(*CORRECT), iou_threshold=-1)
    points = operating_points(*scene(*CORRECT))
    with pytest.raises(ValueError, match="recall must be"):
        points.precision_at_recall(1.5)
    with pytest.raises(ValueError, match="format_table|normalize must be"):
        detection_confusion_matrix(*scene(*CORRECT)).normalized("rows")


def test_detections_must_index_the_dataset():
    dataset, _ = scene(*CORRECT)
    dt = Detections(image_index=[3], category_index=[0], boxes=[box(0, 0)], scores=[0.9])
    with pytest.raises(ValueError, match="image_index"):
        detection_confusion_matrix(dataset, dt)
