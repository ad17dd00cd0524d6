"""Parity of deteval's COCO bbox evaluation with pycocotools 2.0.11, bit for bit.

Three kinds of cases:

* seeded random datasets from ``cocogen`` (ties, crowds, ``ignore`` keys, boundary areas,
  more than 100 detections, empty images and categories, ...) under the default and many
  custom parameters, compared with ``np.array_equal`` on stats, precision, recall, scores;
* the worked examples of docs/protocols/coco.md §11, with their expected values written out;
* the shared ``coco_val2014_100`` sample against the stored pycocotools output.
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import pytest
from cocogen import (
    Coco100,
    assert_file_inputs_parity,
    build_case,
    make_dataset,
    run_pycocotools,
    variant_cases,
)
from cocogen import assert_parity as _assert_parity

import deteval


def evaluate(gt, results, **params):
    return deteval.evaluate_coco(gt, results, **params)


# stats, precision, recall and scores exactly equal to pycocotools'. The summary text has a
# test of its own here (test_summary_text, on a subset of the cases).
assert_parity = functools.partial(_assert_parity, summary=False)


# ---------------------------------------------------------------------------------------------
# Random datasets
# ---------------------------------------------------------------------------------------------


def _image_subset(gt: dict, rng: np.random.Generator) -> dict:
    ids = [image["id"] for image in gt["images"]]
    picked = rng.choice(ids, size=max(1, len(ids) // 2 + 1), replace=False)
    return {"image_ids": [int(i) for i in picked]}  # unsorted on purpose


def _category_subset(gt: dict, rng: np.random.Generator) -> dict:
    ids = [category["id"] for category in gt["categories"]]
    picked = rng.choice(ids, size=max(1, (len(ids) + 1) // 2), replace=False)
    return {"category_ids": [int(c) for c in picked]}  # unsorted on purpose


def _no_cats_category_subset(gt: dict, rng: np.random.Generator) -> dict:
    # With useCats=0 pycocotools pools the groups in catIds order, unsorted.
    return {"use_categories": False, **_category_subset(gt, rng)}


def _image_ids_not_in_gt(gt: dict, rng: np.random.Generator) -> dict:
    ids = [image["id"] for image in gt["images"]]
    return {"image_ids": [*ids[:2], max(ids) + 1, -5]}


def _category_ids_not_in_gt(gt: dict, rng: np.random.Generator) -> dict:
    ids = [category["id"] for category in gt["categories"]]
    return {"category_ids": [max(ids) + 100, *ids]}


CUSTOM_AREAS = [(0, 1e10), (0, 400), (400, 5000), (5000, 1e10)]

# name -> (number of seeds, first seed, make_dataset kwargs, params or params(gt, rng))
VARIANTS: dict[str, tuple[int, int, dict, object]] = {
    "default": (200, 0, {}, {}),
    "nocats": (40, 1000, {}, {"use_categories": False}),
    "maxdets-1-5-20": (12, 2000, {}, {"max_detections": [1, 5, 20]}),
    "maxdets-1-10-300": (8, 2100, {"p_many": 0.3}, {"max_detections": [1, 10, 300]}),
    "maxdets-unsorted": (3, 2200, {}, {"max_detections": [10, 1, 3]}),
    "iou-no-50-75": (6, 3000, {}, {"iou_thresholds": [0.3, 0.45, 0.6]}),
    "iou-with-1.0": (8, 3100, {}, {"iou_thresholds": [0.5, 0.75, 0.9, 1.0]}),
    "iou-0.5-only": (4, 3200, {}, {"iou_thresholds": [0.5]}),
    "recall-11pt": (4, 3300, {}, {"recall_thresholds": np.linspace(0, 1, 11)}),
    "areas-custom": (6, 4000, {}, {"area_ranges": CUSTOM_AREAS}),
    "areas-custom-labels": (
        4,
        4100,
        {},
        {"area_ranges": CUSTOM_AREAS, "area_labels": ["all", "tiny", "mid", "huge"]},
    ),
    "areas-two": (
        4,
        4200,
        {},
        {"area_ranges": [(0, 1e10), (32**2, 96**2)], "area_labels": ["all", "medium"]},
    ),
    "iou-unsorted": (3, 3400, {}, {"iou_thresholds": [0.75, 0.5, 0.95, 0.6]}),
    "recall-odd": (
        3,
        3500,
        {},
        {"recall_thresholds": [0.0, 1 / 3, 0.35, 0.35000000000000003, 0.5, 2 / 3, 0.7, 1.0]},
    ),
    # pycocotools stops filling q and scores at the first unreachable recall threshold (its
    # try/except around the loop), so with unsorted thresholds later reachable ones stay 0.
    "recall-unsorted": (3, 3550, {}, {"recall_thresholds": [1.0, 0.35, 0.0, 0.5]}),
    "maxdets-duplicate": (3, 3600, {}, {"max_detections": [1, 10, 10, 100]}),
    "areas-duplicate-labels": (
        3,
        4300,
        {},
        {"area_labels": ["all", "small", "small", "large"]},
    ),
    "image-subset": (10, 5000, {}, _image_subset),
    "image-ids-not-in-gt": (3, 5300, {}, _image_ids_not_in_gt),
    "category-ids-not-in-gt": (3, 5400, {}, _category_ids_not_in_gt),
    "category-subset": (10, 5100, {"n_categories": 4}, _category_subset),
    "nocats-category-subset": (5, 5200, {"n_categories": 4}, _no_cats_category_subset),
    "no-segmentation": (3, 6000, {"segmentation": False}, {}),
    "crowded": (6, 6100, {"p_crowd": 0.6, "p_ignore_key": 0.3}, {}),
    "many-detections": (10, 6200, {"n_images": 3, "n_categories": 2, "p_many": 0.5}, {}),
    "big": (
        5,
        7000,
        {"n_images": 14, "n_categories": 5, "max_dt": 12, "p_many": 0.25},
        {},
    ),
}


PARITY_CASES = variant_cases(VARIANTS)


@pytest.mark.parametrize(("seed", "kwargs", "params"), PARITY_CASES)
def test_random_dataset_parity(seed, kwargs, params):
    gt, results, params = build_case(make_dataset, seed, kwargs, params)
    reference = run_pycocotools(gt, results, **params)
    assert_parity(evaluate(gt, results, **params), reference)
    if params.get("max_detections") is not None and 100 not in params["max_detections"]:
        assert reference.stats[0] == -1  # literal maxDets=100 in summarize


MATCH_CASES = [
    case
    for case in PARITY_CASES
    if case.values[0] < 30
    or case.id.startswith(("nocats-seed100", "crowded", "many-detections", "maxdets-1-5-20"))
]


@pytest.mark.parametrize(("seed", "kwargs", "params"), MATCH_CASES)
def test_match_table_parity(seed, kwargs, params):
    """Every detection's matched GT and ignore flag equal pycocotools' evalImgs."""
    gt, results, params = build_case(make_dataset, seed, kwargs, params)
    reference = run_pycocotools(gt, results, **params)
    result = evaluate(gt, results, **params)
    table = result.matches
    assert len(result.detections) == len(results)
    gt_ids = np.r_[np.asarray(result.dataset.gt.ids), 0]  # row -1 (unmatched) -> id 0
    n_images = len(reference.params.imgIds)
    n_areas = len(reference.params.areaRng)
    for a in range(n_areas):
        matches = table.detection_matches(a)
        status = table.detection_status(a)
        seen = np.zeros(len(results), dtype=bool)
        for index, record in enumerate(reference.eval_imgs):
            if record is None or (index // n_images) % n_areas != a:
                continue
            rows = np.asarray(record["dtIds"], dtype=np.int64) - 1  # loadRes: id = row + 1
            seen[rows] = True
            mine = gt_ids[matches[:, rows]]
            where = f"area {a}, image {record['image_id']}, category {record['category_id']}"
            assert np.array_equal(mine, record["dtMatches"]), where
            assert np.array_equal(status[:, rows] == 2, record["dtIgnore"]), where
        assert np.all(status[:, ~seen] == -1)  # not evaluated: dropped or beyond maxDets


def test_enough_random_cases():
    assert len(PARITY_CASES) >= 300


SUMMARY_CASES = [
    case for case in PARITY_CASES if case.id.endswith(("seed0", "seed3", "seed17"))
] + [case for case in PARITY_CASES if not case.id.startswith("default")][::9]


@pytest.mark.parametrize(("seed", "kwargs", "params"), SUMMARY_CASES)
def test_summary_text(seed, kwargs, params):
    gt, results, params = build_case(make_dataset, seed, kwargs, params)
    reference = run_pycocotools(gt, results, **params)
    assert evaluate(gt, results, **params).summary().splitlines() == reference.summary


@pytest.mark.parametrize("seed", [11, 12, 13, 14], ids="seed{}".format)
def test_inputs_unchanged(seed):
    gt, results = make_dataset(seed, p_crowd=0.5, p_ignore_key=0.3)
    gt_before, results_before = copy.deepcopy(gt), copy.deepcopy(results)
    evaluate(gt, results)
    evaluate(gt, results, use_categories=False, max_detections=[1, 5, 20])
    assert gt == gt_before
    assert results == results_before


@pytest.mark.parametrize("seed", [21, 22], ids="seed{}".format)
def test_array_input_unchanged_and_equal(seed):
    gt, results = make_dataset(seed)
    rows = np.array(
        [[r["image_id"], *r["bbox"], r["score"], r["category_id"]] for r in results],
        dtype=np.float64,
    )
    before = rows.copy()
    result = evaluate(gt, rows)
    assert np.array_equal(rows, before)
    assert_parity(result, run_pycocotools(gt, rows))


@pytest.mark.parametrize("seed", [31, 32, 33], ids="seed{}".format)
def test_file_inputs(seed, tmp_path):
    gt, results = make_dataset(seed)
    reference = run_pycocotools(gt, results)
    assert_file_inputs_parity(
        gt, results, reference, evaluate=evaluate, directory=tmp_path, summary=False
    )


@pytest.mark.parametrize("seed", [41, 42, 43], ids="seed{}".format)
def test_empty_results(seed):
    """No detections is not an error: it equals pycocotools given only a dropped result."""
    gt, _ = make_dataset(seed)
    unknown = max(c["id"] for c in gt["categories"]) + 1
    only_dropped = [
        {
            "image_id": gt["images"][0]["id"],
            "category_id": unknown,
            "bbox": [0, 0, 5, 5],
            "score": 0.5,
        }
    ]
    reference = run_pycocotools(gt, only_dropped)
    result = evaluate(gt, [])
    assert_parity(result, reference)
    assert any("no detections" in note for note in result.notes), result.notes
    assert_parity(evaluate(gt, only_dropped), reference)


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({}, id="default"),
        pytest.param({"category_ids": [1, 7]}, id="cats-with-unknown"),
        pytest.param({"use_categories": False}, id="nocats"),
        pytest.param({"use_categories": False, "category_ids": [1, 7]}, id="nocats-with-unknown"),
    ],
)
def test_result_category_not_in_gt(params):
    """Results of category 7 (not in the GT) are dropped, unless catIds names 7 with useCats=0.

    pycocotools selects results by catIds, not by the GT categories: with useCats=0 and
    catIds [1, 7] the category-7 result joins the pool as an FP (AP 0.5 instead of 1).
    """
    gt = _gt({"id": 1, "bbox": [0, 0, 10, 10], "area": 100})
    results = [_dt([0, 0, 10, 10], 0.5), {**_dt([50, 50, 10, 10], 0.9), "category_id": 7}]
    assert_parity(evaluate(gt, results, **params), run_pycocotools(gt, results, **params))


# ---------------------------------------------------------------------------------------------
# Worked examples of docs/protocols/coco.md §11
# ---------------------------------------------------------------------------------------------


def _gt(*annotations: dict) -> dict:
    return {
        "images": [{"id": 1, "width": 640, "height": 480, "file_name": "1.jpg"}],
        "categories": [{"id": 1, "name": "thing"}],
        "annotations": [{"image_id": 1, "category_id": 1, "iscrowd": 0, **a} for a in annotations],
    }


def _dt(box, score, **extra) -> dict:
    return {"image_id": 1, "category_id": 1, "bbox": box, "score": score, **extra}


def _check(gt, results, expected_stats, **params):
    """deteval equals pycocotools, and both equal the literal expected stats."""
    reference = run_pycocotools(gt, results, **params)
    result = evaluate(gt, results, **params)
    assert reference.stats.tolist() == expected_stats  # the reference itself
    assert result.stats.tolist() == expected_stats
    assert_parity(result, reference)
    return result


EXAMPLE_A_GT = _gt({"id": 1, "bbox": [0, 0, 10, 10], "area": 100})
EXAMPLE_A_DT = [_dt([0, 0, 10, 9], 0.9)]


def test_example_a_iou_point_nine():
    """IoU 0.9 passes the 0.8999999999999999 threshold; precision 1/(1+eps)."""
    result = _check(
        EXAMPLE_A_GT,
        EXAMPLE_A_DT,
        [
            0.8999999999999999,
            0.9999999999999999,
            0.9999999999999999,
            0.8999999999999999,
            -1.0,
            -1.0,
            0.9,
            0.9,
            0.9,
            0.9,
            -1.0,
            -1.0,
        ],
    )
    precision = result.precision[:, :, 0, 0, 2]
    assert np.all(precision[:9] == 0.9999999999999998)
    assert np.all(precision[9] == 0.0)
    assert result.recall[:, 0, 0, 2].tolist() == [1.0] * 9 + [0.0]


def _example_b():
    gt = _gt(
        {"id": 11, "bbox": [-20, -20, 40, 40], "area": 1600, "iscrowd": 1},
        {"id": 12, "bbox": [0, 0, 10, 10], "area": 100},
        {"id": 13, "bbox": [2, 0, 10, 10], "area": 100},
    )
    # IoU with (g12, g13, crowd g11): d1 (.584, .694, 1.0), d2 (.538, .818, 1.0),
    # d3 (0, 0, .5): the same decisions as the IoU matrix of docs/protocols/coco.md §6.5.
    results = [_dt([1, 0, 12, 12], 0.9), _dt([3, 0, 10, 10], 0.8), _dt([15, 0, 10, 10], 0.7)]
    return gt, results


def test_example_b_matching():
    """t=.5: d1->g13, d2->g12, d3->crowd (ignored); t=.75: d1->crowd, d2->g13, d3 FP."""
    gt, results = _example_b()
    reference = run_pycocotools(gt, results)
    (record,) = [e for e in reference.eval_imgs if e is not None and e["aRng"] == [0, 1e10]]
    assert record["gtIds"] == [12, 13, 11]
    assert record["dtMatches"][0].tolist() == [13, 12, 11]
    assert record["dtIgnore"][0].tolist() == [False, False, True]
    assert record["dtMatches"][5].tolist() == [11, 13, 0]
    assert record["dtIgnore"][5].tolist() == [True, False, False]

    result = evaluate(gt, results)
    # GT rows in file order: g11 (crowd), g12, g13; detections in input order.
    assert result.matches.detection_matches(0)[[0, 5]].tolist() == [[2, 1, 0], [0, 2, -1]]
    assert result.matches.detection_status(0)[[0, 5]].tolist() == [[1, 1, 2], [2, 1, 0]]

    result = _check(
        gt,
        results,
        [
            0.402970297029703,
            1.0,
            0.5049504950495048,
            0.402970297029703,
            -1.0,
            -1.0,
            0.2,
            0.4,
            0.4,
            0.4,
            -1.0,
            -1.0,
        ],
    )
    per_threshold = [float(np.mean(result.precision[t, :, 0, 0, 2])) for t in range(10)]
    assert per_threshold == [1.0] + [0.5049504950495048] * 6 + [0.0] * 3
    # t=.75: ignored, TP, FP -> precision 1/(1+eps) up to recall .5, then 0
    assert result.precision[5, :, 0, 0, 2].tolist() == [0.9999999999999998] * 51 + [0.0] * 50
    assert result.recall[:, 0, 0, 2].tolist() == [1.0] + [0.5] * 6 + [0.0] * 3


def test_example_c_accumulation():
    """TP, FP, TP, ignored, FP with npig=3 at every threshold."""
    gt = _gt(
        {"id": 1, "bbox": [0, 0, 10, 10], "area": 100},
        {"id": 2, "bbox": [20, 0, 10, 10], "area": 100},
        {"id": 3, "bbox": [40, 0, 10, 10], "area": 100},
        {"id": 4, "bbox": [100, 100, 50, 50], "area": 2500, "iscrowd": 1},
    )
    results = [
        _dt([0, 0, 10, 10], 0.9),  # TP
        _dt([200, 200, 10, 10], 0.8),  # FP
        _dt([20, 0, 10, 10], 0.7),  # TP
        _dt([110, 110, 10, 10], 0.6),  # inside the crowd: ignored
        _dt([300, 300, 10, 10], 0.5),  # FP
    ]
    result = _check(
        gt,
        results,
        [
            0.5544554455445545,
            0.5544554455445545,
            0.5544554455445545,
            0.5544554455445545,
            -1.0,
            -1.0,
            0.33333333333333337,
            0.6666666666666667,
            0.6666666666666667,
            0.6666666666666667,
            -1.0,
            -1.0,
        ],
    )
    precision = result.precision[0, :, 0, 0, 2]
    assert precision.tolist() == [0.9999999999999998] * 34 + [0.6666666666666666] * 33 + [0.0] * 34
    assert float(np.mean(precision)) == 0.5544554455445545
    assert result.recall[:, 0, 0, 2].tolist() == [0.6666666666666666] * 10


def test_example_d_recall_threshold_quirk():
    """Recall 7/20 does not reach recThrs[35] = 0.35000000000000003."""
    gt = _gt(
        *[
            {"id": i + 1, "bbox": [30 * (i % 5), 30 * (i // 5), 10, 10], "area": 100}
            for i in range(20)
        ]
    )
    results = [_dt([30 * (i % 5), 30 * (i // 5), 10, 10], 0.9 - 0.01 * i) for i in range(7)]
    result = _check(
        gt,
        results,
        [
            0.3465346534653465,
            0.3465346534653465,
            0.3465346534653465,
            0.3465346534653465,
            -1.0,
            -1.0,
            0.05,
            0.35,
            0.35,
            0.35,
            -1.0,
            -1.0,
        ],
    )
    assert result.recall[0, 0, 0, 2] == 0.35
    assert int(np.count_nonzero(result.precision[0, :, 0, 0, 2])) == 35


def test_example_f_crowd_absorbs_detection():
    """A detection inside a crowd region has IoU 400/400 = 1.0 and is ignored, not an FP."""
    crowd = {"id": 1, "bbox": [0, 0, 100, 100], "area": 10000, "iscrowd": 1}
    _check(_gt(crowd), [_dt([10, 10, 20, 20], 0.9)], [-1.0] * 12)  # no regular GT at all

    gt = _gt(crowd, {"id": 2, "bbox": [200, 200, 10, 10], "area": 100})
    results = [_dt([10, 10, 20, 20], 0.9), _dt([200, 200, 10, 10], 0.8)]
    # Were the first detection an FP, AP would be 0.5.
    _check(
        gt,
        results,
        [
            0.9999999999999998,
            0.9999999999999999,
            0.9999999999999999,
            0.9999999999999998,
            -1.0,
            -1.0,
            0.0,
            1.0,
            1.0,
            1.0,
            -1.0,
            -1.0,
        ],
    )
    # IoU exactly 1.0 >= the cap 1 - 1e-10: still matched to the crowd at threshold 1.0.
    _check(
        gt,
        results,
        [
            0.9999999999999999,
            -1.0,
            -1.0,
            0.9999999999999999,
            -1.0,
            -1.0,
            0.0,
            1.0,
            1.0,
            1.0,
            -1.0,
            -1.0,
        ],
        iou_thresholds=[1.0],
    )


def test_example_g_ignore_key_has_no_effect():
    """'ignore': 1 with iscrowd 0 is a normal GT: the detection is an FP, the GT is missed."""
    gt = _gt({"id": 1, "bbox": [0, 0, 100, 100], "area": 10000, "iscrowd": 0, "ignore": 1})
    _check(
        gt,
        [_dt([10, 10, 20, 20], 0.9)],
        [0.0, 0.0, 0.0, -1.0, -1.0, 0.0, 0.0, 0.0, 0.0, -1.0, -1.0, 0.0],
    )


def test_example_h_max_detections_without_100():
    """stats[0] uses a literal maxDets=100: -1 with maxDets [1, 10, 300]."""
    result = _check(
        EXAMPLE_A_GT,
        EXAMPLE_A_DT,
        [
            -1.0,
            0.9999999999999999,
            0.9999999999999999,
            0.8999999999999999,
            -1.0,
            -1.0,
            0.9,
            0.9,
            0.9,
            0.9,
            -1.0,
            -1.0,
        ],
        max_detections=[1, 10, 300],
    )
    lines = result.summary().splitlines()
    assert lines[0].endswith("maxDets=100 ] = -1.000")
    assert lines[1].endswith("maxDets=300 ] = 1.000")


def test_example_i_bbox_results_area_is_w_times_h():
    """A result's own 'area' (and segmentation) is ignored in bbox mode: area = w*h = 100.

    The unmatched detection is small by w*h, so the large range ignores it (AP large
    1/(1+eps)); by its 'area' field (50000) it would be an FP there (AP large 0.5).
    """
    gt = _gt({"id": 1, "bbox": [0, 0, 100, 100], "area": 10000})
    results = [
        _dt([0, 0, 100, 100], 0.9),
        _dt(
            [200, 200, 10, 10],
            0.95,
            area=50000.0,
            segmentation=[[200, 200, 200, 210, 210, 210, 210, 200]],
        ),
    ]
    _check(
        gt,
        results,
        [0.5, 0.5, 0.5, -1.0, -1.0, 0.9999999999999998, 0.0, 1.0, 1.0, -1.0, -1.0, 1.0],
    )


def test_example_i_segm_results_with_bbox():
    """segm results carrying a bbox get the box area (§2.2); needs iou_type='segm'."""
    square = [[0, 0, 0, 100, 100, 100, 100, 0]]
    gt = _gt({"id": 1, "bbox": [0, 0, 100, 100], "area": 10000, "segmentation": square})
    results = [
        _dt([0, 0, 100, 100], 0.9, segmentation=square),
        # a small mask, a large box: its area is the box's 10000, so it is an FP for "large"
        _dt([200, 200, 100, 100], 0.95, segmentation=[[200, 200, 200, 210, 210, 210, 210, 200]]),
    ]
    reference = run_pycocotools(gt, results, iou_type="segm")
    assert reference.stats[5] == 0.5
    result = evaluate(gt, results, iou_type="segm")
    assert_parity(result, reference)
    assert result.stats[5] == 0.5


# ---------------------------------------------------------------------------------------------
# coco_val2014_100: the shared sample and its stored pycocotools 2.0.11 output
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def coco100(coco100_dir):
    return Coco100.evaluate(evaluate, coco100_dir, "instances_val2014_fakebbox100_results.json",
                            "bbox")


def test_coco100_stats(coco100):
    coco100.assert_stats()


def test_coco100_summary(coco100):
    coco100.assert_summary()


def test_coco100_per_category_ap(coco100):
    coco100.assert_per_category_ap()
    table = {row["category_id"]: row["AP"] for row in coco100.result.per_class()}
    assert table == {int(c): v for c, v in coco100.expected["per_category_ap"].items()}


def test_coco100_arrays_equal_pycocotools(coco100):
    gt, results = coco100.read()
    assert_parity(coco100.result, run_pycocotools(gt, results))
