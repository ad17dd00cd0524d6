"""Tests of deteval.outcomes: one hand-built scene per outcome and reason, the order in which
reasons are decided, the per-object outcomes, the helpers, and agreement of the counts with
the confusion matrix and the COCO matcher on seeded random data (plus a brute-force check of
every false-positive reason)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cocogen import make_dataset
from scenes import BIRD, CAT, DOG, NAMES, box, scene

from deteval.confusion import detection_confusion_matrix
from deteval.data import Dataset, Detections
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.iou import box_iou
from deteval.matching import FP, IGNORED, TP
from deteval.outcomes import (
    DT_OUTCOMES,
    FP_OUTCOMES,
    GT_OUTCOMES,
    Outcomes,
    match_outcomes,
)
from deteval.protocols.coco import evaluate_coco

# --------------------------------------------------------------------------------------
# One outcome per scene: the last detection's outcome, the object it refers to, its IoU
# --------------------------------------------------------------------------------------

# A cat at (0, 0) found by a first detection; the detection under test comes last.
FOUND_CAT = [(0, CAT, box(0, 0))]
FIRST = (0, CAT, box(0, 0), 0.95)


@pytest.mark.parametrize("objects, detections, kwargs, outcome, gt_row, iou", [
    pytest.param(FOUND_CAT, [(0, CAT, box(0, 1), 0.9)], {}, "tp", 0, 90 / 110, id="tp"),
    pytest.param(FOUND_CAT, [FIRST, (0, CAT, box(0, 1), 0.9)], {}, "duplicate", 0, 90 / 110,
                 id="duplicate-of-a-found-object"),
    pytest.param([(0, DOG, box(0, 0))], [(0, CAT, box(1, 0), 0.9)], {}, "wrong_class", 0,
                 90 / 110, id="wrong-class"),
    pytest.param([(0, CAT, box(0, 0))], [(0, CAT, box(5, 0), 0.9)], {}, "localization", 0,
                 50 / 150, id="localization"),
    pytest.param([(0, CAT, box(0, 0))], [(0, CAT, box(9, 9), 0.9)], {}, "background", -1,
                 None, id="background-iou-below-0.1"),
    pytest.param([(0, DOG, box(0, 0))], [(0, CAT, box(5, 0), 0.9)], {}, "background", -1,
                 None, id="background-other-class-below-t"),
    pytest.param([], [(0, BIRD, box(50, 50), 0.9)], {}, "background", -1, None,
                 id="background-empty-image"),
    pytest.param([(0, CAT, [0, 0, 100, 100], True)], [(0, CAT, box(20, 20), 0.9)], {},
                 "ignored", 0, 1.0, id="ignored-in-a-crowd-by-ioa"),
    pytest.param([(0, CAT, box(0, 0), False, True)], [(0, CAT, box(0, 1), 0.9)], {},
                 "ignored", 0, 90 / 110, id="ignored-on-a-difficult-object"),
    pytest.param([(0, CAT, box(0, 0), False, True)], [FIRST, (0, CAT, box(0, 1), 0.9)], {},
                 "duplicate", 0, 90 / 110, id="second-detection-on-a-difficult-object"),
    pytest.param(FOUND_CAT, [(0, CAT, box(0, 0), 0.2)], {"score_threshold": 0.5},
                 "below_threshold", -1, None, id="below-threshold"),
    pytest.param(FOUND_CAT, [(0, -1, box(0, 0), 0.9)], {}, "ignored", -1, None,
                 id="unknown-category"),
    pytest.param(FOUND_CAT, [(0, CAT, box(0, 1), 0.9)], {"iou_threshold": 0.95},
                 "localization", 0, 90 / 110, id="iou-threshold-decides"),
    pytest.param(FOUND_CAT, [FIRST, (0, CAT, box(0, 0), 0.9)], {"iou_threshold": 1.0},
                 "duplicate", 0, 1.0, id="exact-copy-at-iou-1"),
    pytest.param([(0, CAT, box(0, 0)), (1, CAT, box(0, 0))], [(1, CAT, box(0, 0), 0.9)], {},
                 "tp", 1, 1.0, id="other-images-do-not-match"),
])
def test_outcome_of_a_detection(objects, detections, kwargs, outcome, gt_row, iou):
    dataset, dt = scene(objects, detections, n_images=2)
    out = match_outcomes(dataset, dt, **kwargs)
    assert out.dt_outcome_names[-1] == outcome
    assert DT_OUTCOMES[out.dt_outcome[-1]] == outcome
    assert out.dt_gt[-1] == gt_row
    if iou is None:
        assert np.isnan(out.dt_iou[-1])
    else:
        assert out.dt_iou[-1] == pytest.approx(iou)


@pytest.mark.parametrize("objects, detection, outcome, gt_row", [
    pytest.param([(0, CAT, box(0, 0)), (0, DOG, box(0, 0))], (0, CAT, box(0, 1), 0.9),
                 "duplicate", 0, id="duplicate-before-wrong-class"),
    pytest.param([(0, DOG, box(0, 0)), (0, CAT, box(5, 0))], (0, CAT, box(0, 1), 0.9),
                 "wrong_class", 0, id="wrong-class-before-localization"),
    pytest.param([(0, CAT, box(0, 0)), (0, CAT, box(12, 0))], (0, CAT, box(7, 0), 0.9),
                 "localization", 1, id="localization-refers-to-the-best-object"),
    pytest.param([(0, DOG, box(0, 0)), (0, BIRD, box(0, 1))], (0, CAT, box(0, 1), 0.9),
                 "wrong_class", 1, id="wrong-class-refers-to-the-best-object"),
])
def test_reasons_are_decided_in_order(objects, detection, outcome, gt_row):
    dataset, dt = scene(objects, [FIRST, detection])
    out = match_outcomes(dataset, dt)
    assert (out.dt_outcome_names[1], int(out.dt_gt[1])) == (outcome, gt_row)


def test_outcomes_of_objects():
    objects = [(0, CAT, box(0, 0)), (0, DOG, box(50, 0)), (0, BIRD, [100, 0, 200, 100], True),
               (0, CAT, box(0, 50), False, True)]
    detections = [(0, CAT, box(0, 0), 0.9), (0, BIRD, box(110, 10), 0.5),
                  (0, BIRD, box(120, 20), 0.7), (0, DOG, box(0, 50), 0.6)]
    dataset, dt = scene(objects, detections)
    out = match_outcomes(dataset, dt)
    assert out.gt_outcome_names == ("tp", "missed", "ignored", "ignored")
    assert [GT_OUTCOMES[c] for c in out.gt_outcome] == list(out.gt_outcome_names)
    # The crowd absorbed both birds; it names the higher-scoring one.
    assert out.gt_dt.tolist() == [0, -1, 2, -1]
    assert out.dt_outcome_names == ("tp", "ignored", "ignored", "wrong_class")
    assert out.dt_gt.tolist() == [0, 2, 2, 3]


def test_helpers():
    objects = [(0, CAT, box(0, 0)), (1, DOG, box(0, 0)), (1, CAT, box(50, 50)),
               (2, BIRD, box(0, 0), True)]
    detections = [(1, DOG, box(0, 0), 0.9), (0, CAT, box(0, 0), 0.8), (1, DOG, box(0, 1), 0.7),
                  (1, BIRD, box(80, 80), 0.6), (2, BIRD, box(1, 1), 0.5),
                  (0, CAT, box(30, 30), 0.1)]
    dataset, dt = scene(objects, detections, n_images=4)
    out = match_outcomes(dataset, dt, score_threshold=0.2)
    assert isinstance(out, Outcomes)
    assert (out.n_detections, out.n_gt, out.n_images) == (6, 4, 4)
    assert out.dt_outcome_names == ("tp", "tp", "duplicate", "background", "ignored",
                                    "below_threshold")
    assert out.dt_is_fp.tolist() == [False, False, True, True, False, False]
    # Image 1: a duplicate, a background FP and a missed cat.
    assert out.errors_per_image.tolist() == [0, 3, 0, 0]
    rows = out.for_image(1)
    assert rows.detections.tolist() == [0, 2, 3] and rows.gt.tolist() == [1, 2]
    detections_rows, gt_rows = out.for_image(3)
    assert len(detections_rows) == 0 and len(gt_rows) == 0
    assert out.counts() == {"tp": 2, "fp": 2, "fn": 1, "duplicate": 1, "wrong_class": 0,
                            "localization": 0, "background": 1, "ignored_detections": 1,
                            "below_threshold": 1, "ignored_gt": 1}
    assert out.counts(image_index=1)["fp"] == 2
    assert out.counts(image_index=1, category_index=CAT)["fn"] == 1
    per_class = out.per_class()
    assert [row["name"] for row in per_class] == list(NAMES)
    assert [row["tp"] for row in per_class] == [1, 1, 0]
    assert out.images_by_errors().tolist() == [1, 0, 2, 3]
    assert out.images_by_errors(only_errors=True).tolist() == [1]
    assert out.images_by_errors(limit=2).tolist() == [1, 0]
    payload = json.loads(json.dumps(out.to_dict(), allow_nan=False))
    assert payload["dt_outcome"][:3] == ["tp", "tp", "duplicate"]
    assert payload["dt_iou"][3] is None and payload["dt_iou"][0] == 1.0
    assert payload["counts"] == out.counts()
    with pytest.raises(IndexError, match="image_index must be in"):
        out.for_image(4)
    with pytest.raises(TypeError, match="image_index must be an integer"):
        out.for_image(1.0)


def test_result_is_read_only_and_inputs_untouched():
    dataset, dt = scene(FOUND_CAT, [FIRST])
    scores, boxes = dt.scores.copy(), dataset.gt.boxes.copy()
    out = match_outcomes(dataset, dt)
    for name in ("dt_outcome", "dt_gt", "dt_iou", "gt_outcome", "gt_dt", "errors_per_image"):
        with pytest.raises(ValueError):
            getattr(out, name)[0] = 0
    with pytest.raises(AttributeError):
        out.iou_threshold = 0.7
    assert np.array_equal(dt.scores, scores) and np.array_equal(dataset.gt.boxes, boxes)


def test_empty_inputs():
    dataset, dt = scene([], [], n_images=2)
    out = match_outcomes(dataset, dt)
    assert out.counts()["tp"] == 0 and out.errors_per_image.tolist() == [0, 0]
    assert out.to_dict()["dt_outcome"] == []


def test_coco_files_are_read():
    gt_dict, results = make_dataset(3)
    out = match_outcomes(gt_dict, results)
    dataset = read_coco_gt(gt_dict)
    same = match_outcomes(dataset, read_coco_results(results, dataset))
    assert out.dt_outcome.tolist() == same.dt_outcome.tolist()


@pytest.mark.parametrize("options, error, message", [
    ({"iou_threshold": 0.0}, ValueError, "iou_threshold must be"),
    ({"iou_threshold": 1.5}, ValueError, "iou_threshold must be"),
    ({"iou_threshold": "0.5"}, TypeError, "iou_threshold must be a number"),
    ({"score_threshold": -1}, ValueError, "score_threshold must be"),
    ({"score_threshold": float("nan")}, ValueError, "score_threshold must be"),
])
def test_bad_options(options, error, message):
    dataset, dt = scene(FOUND_CAT, [FIRST])
    with pytest.raises(error, match=message):
        match_outcomes(dataset, dt, **options)


def test_detections_must_index_the_dataset():
    dataset, _ = scene(FOUND_CAT, [])
    dt = Detections(image_index=[0], category_index=[-2], boxes=[box(0, 0)], scores=[0.5])
    with pytest.raises(ValueError, match="category_index must index"):
        match_outcomes(dataset, dt)
    dt = Detections(image_index=[3], category_index=[0], boxes=[box(0, 0)], scores=[0.5])
    with pytest.raises(ValueError, match="image_index must index"):
        match_outcomes(dataset, dt)


# --------------------------------------------------------------------------------------
# Random scenes: the counts of the confusion matrix and of the COCO matcher
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
            for _ in range(rng.integers(0, 4)):   # detections around it, any class
                j = rng.normal(0, 3.0, 4)
                label = k if rng.random() < 0.7 else int(rng.integers(-1, n_k))
                dets.append((image, label, [x + j[0], y + j[1], x + s + j[2], y + s + j[3]],
                             float(np.round(rng.random(), 2))))
        for _ in range(rng.integers(0, 3)):       # background
            x, y = rng.uniform(0, 80), rng.uniform(0, 80)
            dets.append((image, int(rng.integers(0, n_k)), [x, y, x + 10, y + 10],
                         float(np.round(rng.random(), 2))))
    dets = [(i, k, [b[0], b[1], max(b[2], b[0]), max(b[3], b[1])], s) for i, k, b, s in dets]
    return scene(objects, dets, n_images=n_images)


@pytest.mark.parametrize("seed", range(6))
def test_counts_equal_the_confusion_matrix(seed):
    dataset, dt = random_scene(seed)
    for t in (0.3, 0.5, 0.75, 1.0):
        for s in (0.0, 0.5):
            out = match_outcomes(dataset, dt, iou_threshold=t, score_threshold=s)
            cm = detection_confusion_matrix(dataset, dt, iou_threshold=t, score_threshold=s)
            rows = cm.per_class(zero_division=0)
            mine = out.per_class()
            for theirs, ours in zip(rows, mine):
                assert (ours["tp"], ours["fp"], ours["fn"]) == (
                    theirs["tp"], theirs["fp"], theirs["fn"]), (t, s, ours["name"])
                assert ours["ignored_detections"] == theirs["n_ignored_detections"]
            # A true positive is the matrix's diagonal pair; nothing else is.
            tp = np.flatnonzero(out.dt_outcome == DT_OUTCOMES.index("tp"))
            assert np.array_equal(out.dt_gt[tp], cm.detection_gt[tp])
            diagonal = (cm.detection_row >= 0) & (cm.detection_row == dt.category_index)
            assert np.array_equal(np.sort(tp), np.flatnonzero(diagonal))
            # Known-category ignored detections are the matrix's ignored ones.
            known_ignored = (out.dt_outcome == DT_OUTCOMES.index("ignored")) & (
                dt.category_index >= 0)
            assert known_ignored.sum() == cm.n_ignored_detections.sum()
            missed = out.gt_outcome == GT_OUTCOMES.index("missed")
            assert np.array_equal(np.flatnonzero(missed), np.flatnonzero(
                (cm.gt_column >= 0) & (cm.gt_column != dataset.gt.category_index)))
            assert out.errors_per_image.sum() == out.counts()["fp"] + out.counts()["fn"]


@pytest.mark.parametrize("seed", range(6))
def test_every_reason_holds_by_brute_force(seed):
    dataset, dt = random_scene(50 + seed)
    gt = dataset.gt
    t = 0.5
    out = match_outcomes(dataset, dt, iou_threshold=t)
    iou = box_iou(dt.boxes, gt.boxes)
    same_image = dt.image_index[:, None] == gt.image_index[None, :]
    same_class = dt.category_index[:, None] == gt.category_index[None, :]
    regular = ~gt.iscrowd
    names = out.dt_outcome_names
    for d, name in enumerate(names):
        ious = np.where(same_image & regular[None, :], iou, -1.0)[d]
        mine, others = np.where(same_class[d], ious, -1), np.where(~same_class[d], ious, -1)
        g = out.dt_gt[d]
        if name == "duplicate":
            assert same_class[d, g] and iou[d, g] >= t and iou[d, g] == mine.max()
            taker = out.gt_dt[g] if out.gt_dt[g] >= 0 else np.flatnonzero(out.dt_gt == g)[0]
            assert dt.scores[taker] >= dt.scores[d] and taker != d
        elif name == "wrong_class":
            assert mine.max() < t and not same_class[d, g]
            assert iou[d, g] == pytest.approx(others.max()) and others.max() >= t
        elif name == "localization":
            assert 0.1 <= mine.max() < t and others.max() < t
            assert iou[d, g] == pytest.approx(mine.max())
        elif name == "background":
            assert mine.max() < 0.1 and others.max() < t and g == -1
        if g >= 0:
            assert gt.image_index[g] == dt.image_index[d]
            if not gt.iscrowd[g]:
                assert out.dt_iou[d] == pytest.approx(iou[d, g])


@pytest.mark.parametrize("seed", range(5))
def test_counts_equal_the_coco_matcher_at_iou_050(seed):
    gt_dict, results = make_dataset(seed)
    dataset = read_coco_gt(gt_dict)
    # COCO ignores by iscrowd only; drop the ignore keys to compare like with like.
    dataset = Dataset(dataset.images, dataset.categories,
                      dataset.gt.replace(ignore=np.zeros(len(dataset.gt), bool)))
    dt = read_coco_results(results, dataset)
    status = evaluate_coco(dataset, dt).matches.detection_status(0)[0]   # area all, IoU .5
    out = match_outcomes(dataset, dt, iou_threshold=0.5)
    known = dt.category_index >= 0
    assert np.array_equal(out.dt_outcome[known] == DT_OUTCOMES.index("tp"),
                          status[known] == TP)
    assert np.array_equal(out.dt_is_fp[known], status[known] == FP)
    assert np.array_equal(out.dt_outcome[known] == DT_OUTCOMES.index("ignored"),
                          status[known] == IGNORED)
    assert set(out.dt_outcome_names) <= set(DT_OUTCOMES)
    assert all(name in DT_OUTCOMES for name in FP_OUTCOMES)
