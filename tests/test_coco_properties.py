"""Properties of the COCO protocol (hypothesis): invariance to the order of results and to
increasing transforms of the scores, perfect detections, untouched inputs, no printing."""

from __future__ import annotations

import contextlib
import copy
import io
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deteval

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
# Areas on and around the COCO size boundaries (32^2, 96^2).
AREAS = st.sampled_from([1.0, 500.0, 1024.0, 2000.0, 9216.0, 20000.0])
SIDES = st.integers(1, 120)


@st.composite
def ground_truth(draw, *, max_objects: int = 10) -> dict:
    n_images = draw(st.integers(1, 4))
    n_categories = draw(st.integers(1, 3))
    annotations = []
    for index in range(draw(st.integers(0, max_objects))):
        w, h = draw(SIDES), draw(SIDES)
        annotations.append({
            "id": index + 1,
            "image_id": draw(st.integers(1, n_images)),
            "category_id": draw(st.integers(1, n_categories)),
            "bbox": [draw(st.integers(0, 100)), draw(st.integers(0, 100)), w, h],
            "area": draw(st.one_of(st.just(float(w * h)), AREAS)),
            "iscrowd": int(draw(st.integers(0, 5)) == 0),
        })
    return {"images": [{"id": i, "width": 240, "height": 240} for i in range(1, n_images + 1)],
            "categories": [{"id": c, "name": f"c{c}"} for c in range(1, n_categories + 1)],
            "annotations": annotations}


@st.composite
def detections(draw, gt: dict, *, distinct_scores: bool) -> list:
    """Jittered copies of GT boxes and random boxes; scores in (0, 1]."""
    n_images, n_categories = len(gt["images"]), len(gt["categories"])
    n = draw(st.integers(1, 16))
    if distinct_scores:
        ticks = draw(st.lists(st.integers(1, 10_000), min_size=n, max_size=n, unique=True))
    else:
        ticks = draw(st.lists(st.sampled_from([1000, 5000, 5000, 9000]), min_size=n, max_size=n))
    results = []
    for tick in ticks:
        if gt["annotations"] and draw(st.booleans()):
            source = draw(st.sampled_from(gt["annotations"]))
            x, y, w, h = source["bbox"]
            box = [x + draw(st.integers(-8, 8)), y + draw(st.integers(-8, 8)),
                   max(w + draw(st.integers(-8, 8)), 1), max(h + draw(st.integers(-8, 8)), 1)]
            image_id = source["image_id"]
            category_id = source["category_id"] if draw(st.integers(0, 4)) else 1
        else:
            box = [draw(st.integers(0, 100)), draw(st.integers(0, 100)), draw(SIDES),
                   draw(SIDES)]
            image_id = draw(st.integers(1, n_images))
            category_id = draw(st.integers(1, n_categories))
        results.append({"image_id": image_id, "category_id": category_id, "bbox": box,
                        "score": tick / 10_000})
    return results


@st.composite
def cases(draw, *, distinct_scores: bool = False) -> tuple[dict, list]:
    gt = draw(ground_truth())
    return gt, draw(detections(gt, distinct_scores=distinct_scores))


def assert_same_numbers(first, second, names=("stats", "precision", "recall", "scores")):
    for name in names:
        assert np.array_equal(getattr(first, name), getattr(second, name)), name


@SETTINGS
@given(case=cases(distinct_scores=True), data=st.data())
def test_invariant_to_the_order_of_results_with_distinct_scores(case, data):
    gt, results = case
    order = data.draw(st.permutations(range(len(results))))
    shuffled = [results[i] for i in order]
    assert_same_numbers(deteval.evaluate_coco(gt, results), deteval.evaluate_coco(gt, shuffled))


TRANSFORMS = {
    "affine": lambda s: 2.0 * s + 1.0,
    "cube": lambda s: s**3,
    "log": math.log,
    "negative-reciprocal": lambda s: -1.0 / (s + 0.01),
}


@SETTINGS
@given(case=cases(), transform=st.sampled_from(sorted(TRANSFORMS)))
def test_invariant_to_increasing_transforms_of_scores(case, transform):
    gt, results = case
    f = TRANSFORMS[transform]
    transformed = [dict(r, score=f(r["score"])) for r in results]
    # ties stay ties and order is kept, so every decision and every number but `scores` is equal
    assert_same_numbers(deteval.evaluate_coco(gt, results),
                        deteval.evaluate_coco(gt, transformed),
                        names=("stats", "precision", "recall"))


def _pycocotools_stats(gt: dict, results: list) -> np.ndarray:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        evaluator = COCOeval(coco_gt, coco_gt.loadRes(copy.deepcopy(results)), iouType="bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return evaluator.stats


@SETTINGS
@given(gt=ground_truth(max_objects=12), data=st.data())
def test_perfect_detections(gt, data):
    regular = [a for a in gt["annotations"] if not a["iscrowd"]]
    if not regular:
        gt["annotations"].append({"id": len(gt["annotations"]) + 1, "image_id": 1,
                                  "category_id": 1, "bbox": [5, 5, 20, 30], "area": 600.0,
                                  "iscrowd": 0})
        regular = gt["annotations"][-1:]
    scores = data.draw(st.lists(st.integers(1, 100), min_size=len(regular),
                                max_size=len(regular)))
    results = [{"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"],
                "score": s / 100} for a, s in zip(regular, scores)]
    result = deteval.evaluate_coco(gt, results)
    # AP is 1 up to pycocotools' eps: a category with a single object has precision
    # 1 / (1 + eps) = 0.9999999999999998
    for name in ("AP", "AP50", "AP75"):
        assert 1 - 1e-15 <= result.stat(name) <= 1.0, name
    assert result.stat("AR100") == 1.0
    assert np.array_equal(result.stats, _pycocotools_stats(gt, results))


@SETTINGS
@given(case=cases())
def test_inputs_are_not_modified(case):
    gt, results = case
    gt_before, results_before = copy.deepcopy(gt), copy.deepcopy(results)
    deteval.evaluate_coco(gt, results)
    deteval.evaluate_coco(gt, {"annotations": results}, use_categories=False)
    assert gt == gt_before and results == results_before
    rows = np.array([[r["image_id"], *r["bbox"], r["score"], r["category_id"]] for r in results],
                    dtype=np.float64)
    rows_before = rows.copy()
    dataset = deteval.read_coco_gt(gt)
    deteval.evaluate_coco(dataset, rows)
    assert np.array_equal(rows, rows_before) and rows.flags.writeable
    assert gt == gt_before


@SETTINGS
@given(case=cases())
def test_library_prints_nothing(case, capsys, tmp_path):
    gt, results = case
    dataset = deteval.read_coco_gt(gt)
    dt = deteval.read_coco_results(results + [dict(results[0], category_id=99)], dataset)
    result = deteval.evaluate_coco(dataset, dt)
    deteval.evaluate_coco(gt, [])
    result.summary()
    result.per_class()
    result.matches.to_csv()
    deteval.write_coco_results(dt, dataset, tmp_path / "results.json")
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == ""


def test_category_names_survive_max_detections_without_the_summary_value():
    """With max_detections lacking the summary's 100, the result still names its categories
    (a local once overwrote them with the stat names)."""
    gt = {"images": [{"id": 1, "width": 100, "height": 100}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 7, "bbox": [0, 0, 10, 10],
                           "area": 100.0, "iscrowd": 0}],
          "categories": [{"id": 7, "name": "zebra"}, {"id": 9, "name": "yak"}]}
    dt = [{"image_id": 1, "category_id": 7, "bbox": [0, 0, 10, 10], "score": 0.9}]
    result = deteval.evaluate_coco(gt, dt, max_detections=(1, 10, 20))
    assert result.category_names == ("zebra", "yak")
    assert [row["name"] for row in result.per_class()] == ["zebra", "yak"]
    assert any("maxDets=100" in note for note in result.notes)
