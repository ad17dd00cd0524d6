"""Parity of deteval's COCO keypoint (OKS) evaluation with pycocotools 2.0.11, bit for bit.

* seeded random datasets from ``keypointgen.make_keypoints_dataset`` (17-keypoint persons,
  v = 0/1/2, ``num_keypoints`` 0, GT without visible keypoints, crowds, results with and
  without ``bbox``, integer and float coordinates, ties, more than 20 results per group)
  under the default and custom parameters and sigmas: ``np.array_equal`` on stats,
  precision, recall and scores, and the same summary text;
* a category with another number of keypoints and its own sigmas, which pycocotools can
  only evaluate one category at a time: compared per category;
* small hand-made cases whose pycocotools stats are written out.
"""

from __future__ import annotations

import numpy as np
import pytest
from cocogen import (
    assert_file_inputs_parity,
    assert_parity,
    assert_read_functions_parity,
    build_case,
    oks_pairs,
    run_pycocotools,
    variant_cases,
)
from keypointgen import COCO_SIGMAS, OTHER_SIGMAS, make_keypoints_dataset

import deteval
import deteval.keypoints


def evaluate(gt, results, **params):
    return deteval.evaluate_coco(gt, results, iou_type="keypoints", **params)


def reference(gt, results, **params):
    return run_pycocotools(gt, results, iou_type="keypoints", **params)


# ---------------------------------------------------------------------------------------------
# Random datasets
# ---------------------------------------------------------------------------------------------


def _sigmas(rng: np.random.Generator) -> list[float]:
    return [round(float(s), 3) for s in rng.uniform(0.02, 0.12, 17)]


def _custom_sigmas(gt: dict, rng: np.random.Generator) -> dict:
    return {"keypoint_sigmas": _sigmas(rng)}


def _custom_sigmas_array(gt: dict, rng: np.random.Generator) -> dict:
    return {"keypoint_sigmas": rng.uniform(0.02, 0.12, 17)}  # full-precision ndarray


def _sigmas_dict(gt: dict, rng: np.random.Generator) -> tuple[dict, dict]:
    """deteval gets {category: sigmas}, pycocotools the one array (the same for all)."""
    sigmas = _sigmas(rng)
    mine = {"keypoint_sigmas": {c["id"]: sigmas for c in gt["categories"]}}
    return mine, {"keypoint_sigmas": sigmas}


def _image_subset(gt: dict, rng: np.random.Generator) -> dict:
    ids = [image["id"] for image in gt["images"]]
    picked = rng.choice(ids, size=max(1, len(ids) // 2), replace=False)
    return {"image_ids": [int(i) for i in picked]}


def _category_subset(gt: dict, rng: np.random.Generator) -> dict:
    ids = [category["id"] for category in gt["categories"]]
    return {"category_ids": [int(rng.choice(ids))]}


# name -> (number of seeds, first seed, make_keypoints_dataset kwargs, params or
# params(gt, rng) giving the params or a pair (deteval params, pycocotools params))
VARIANTS: dict[str, tuple[int, int, dict, object]] = {
    "default": (120, 0, {}, {}),
    "custom-sigmas": (8, 1000, {}, _custom_sigmas),
    "custom-sigmas-array": (3, 1050, {}, _custom_sigmas_array),
    "sigmas-dict": (4, 1080, {"n_categories": 2}, _sigmas_dict),
    "bbox-all": (8, 1100, {"bbox_mode": "all"}, {}),
    "bbox-later": (5, 1200, {"bbox_mode": "later"}, {}),
    "bbox-none": (3, 1250, {"bbox_mode": "none"}, {}),
    "int-coordinates": (5, 1300, {"coordinates": "int"}, {}),
    "float-coordinates": (5, 1400, {"coordinates": "float"}, {}),
    "many-results": (5, 2000, {"p_many": 0.6}, {}),
    "crowded": (4, 2100, {"p_crowd": 0.6}, {}),
    "iou-custom": (3, 3000, {}, {"iou_thresholds": [0.3, 0.5, 0.75]}),
    "iou-with-1.0": (3, 3100, {}, {"iou_thresholds": [0.5, 0.75, 0.9, 1.0]}),
    "recall-11pt": (3, 3300, {}, {"recall_thresholds": np.linspace(0, 1, 11)}),
    "maxdets-10-20": (3, 3400, {"p_many": 0.4}, {"max_detections": [10, 20]}),
    "maxdets-20-50": (3, 3500, {"p_many": 0.6}, {"max_detections": [20, 50]}),
    "maxdets-5": (2, 3600, {}, {"max_detections": [5]}),  # no literal 20: stats all -1
    "areas-custom": (
        3,
        4000,
        {},
        {"area_ranges": [(0, 1e10), (500, 5000), (5000, 1e10)]},
    ),
    "areas-custom-labels": (
        2,
        4100,
        {},
        {"area_ranges": [(0, 1e10), (0, 1024), (1024, 1e10)],
         "area_labels": ["all", "medium", "large"]},
    ),
    "image-subset": (4, 5000, {}, _image_subset),
    "category-subset": (4, 5100, {"n_categories": 2}, _category_subset),
    "big": (2, 7000, {"n_images": 12, "n_categories": 2, "max_gt": 5}, {}),
}


def _build(seed: int, kwargs: dict, params) -> tuple[dict, list, dict, dict]:
    gt, results, params = build_case(make_keypoints_dataset, seed, kwargs, params)
    mine, theirs = params if isinstance(params, tuple) else (params, params)
    return gt, results, mine, theirs


@pytest.mark.parametrize(("seed", "kwargs", "params"), variant_cases(VARIANTS))
def test_random_dataset_parity(seed, kwargs, params):
    gt, results, mine, theirs = _build(seed, kwargs, params)
    expected = reference(gt, results, **theirs)
    result = evaluate(gt, results, **mine)
    assert len(result.stats) == 10
    assert_parity(result, expected)
    if "max_detections" in mine and 20 not in mine["max_detections"]:
        assert expected.stats.tolist() == [-1.0] * 10  # literal maxDets=20 in summarize


@pytest.mark.parametrize("seed", range(0, 40, 3), ids="seed{}".format)
def test_oks_values_equal_compute_oks_bit_for_bit(seed):
    """Every OKS equals pycocotools' ``computeOks`` exactly (not only the stats, which a
    last-bit difference rarely changes): same operations, same order, same summation."""

    gt, results = make_keypoints_dataset(seed, n_categories=1)
    compared = 0
    for mine, expected in oks_pairs(gt, results).values():
        assert np.array_equal(mine, expected)
        compared += mine.size
    assert compared > 0


@pytest.mark.parametrize("chunk", [1, 3, 17])
@pytest.mark.parametrize("seed", [3, 8, 14], ids="seed{}".format)
def test_small_pair_chunks(seed, chunk, monkeypatch):
    """OKS is computed in chunks of pairs: chunks cut anywhere (pairs with and without
    visible keypoints, several kept counts per chunk or one) give the same numbers."""
    import deteval.keypoints

    monkeypatch.setattr(deteval.keypoints, "_CHUNK_PAIRS", chunk)
    gt, results, mine, theirs = _build(seed, {"n_images": 6}, {})
    assert_parity(evaluate(gt, results, **mine), reference(gt, results, **theirs))


def test_generator_covers_the_issue():
    """The random datasets really hold what the parity cases claim to exercise."""
    seen = dict.fromkeys(
        ["v0", "v1", "v2", "num0", "no-visible-regular", "crowd", "int-result", "float-result",
         "origin-result", "bbox-all", "bbox-later", "bbox-none", "many"], 0
    )
    for seed in range(0, 120, 2):
        gt, results = make_keypoints_dataset(seed)
        for ann in gt["annotations"]:
            v = ann["keypoints"][2::3]
            for level in (0, 1, 2):
                seen[f"v{level}"] += level in v
            seen["num0"] += ann["num_keypoints"] == 0 and not ann["iscrowd"]
            seen["no-visible-regular"] += ann["num_keypoints"] > 0 and not any(v)
            seen["crowd"] += ann["iscrowd"]
        groups: dict = {}
        for r in results:
            xy = r["keypoints"][0::3] + r["keypoints"][1::3]
            seen["int-result"] += all(isinstance(c, int) for c in xy)
            seen["float-result"] += any(isinstance(c, float) and c != round(c) for c in xy)
            seen["origin-result"] += any(
                x == 0 and y == 0 for x, y in zip(r["keypoints"][0::3], r["keypoints"][1::3])
            )
            key = (r["image_id"], r["category_id"])
            groups[key] = groups.get(key, 0) + 1
        mode = ("bbox-all" if "bbox" in results[0] else
                "bbox-later" if any("bbox" in r for r in results) else "bbox-none")
        seen[mode] += 1
        seen["many"] += any(n > 20 for n in groups.values())
    assert all(count > 0 for count in seen.values()), seen


@pytest.mark.parametrize("seed", range(8), ids="seed{}".format)
def test_category_with_other_keypoint_count(seed):
    """17-keypoint persons and a 5-keypoint category, each with its own sigmas.

    pycocotools applies one sigma array to every category, so it is run once per category;
    deteval evaluates all categories at once with ``{category_id: sigmas}``.
    """
    gt, results = make_keypoints_dataset(seed + 8000, other_category=True)
    other = gt["categories"][-1]["id"]
    sigmas = {c["id"]: COCO_SIGMAS for c in gt["categories"]}
    sigmas[other] = OTHER_SIGMAS
    result = evaluate(gt, results, keypoint_sigmas=sigmas)
    category_ids = sorted(sigmas)
    assert result.precision.shape[2] == len(category_ids)
    for k, category_id in enumerate(category_ids):
        expected = reference(
            gt, results, category_ids=[category_id], keypoint_sigmas=sigmas[category_id]
        )
        where = f"category {category_id}"
        assert np.array_equal(result.precision[:, :, k], expected.precision[:, :, 0]), where
        assert np.array_equal(result.recall[:, k], expected.recall[:, 0]), where
        assert np.array_equal(result.scores[:, :, k], expected.scores[:, :, 0]), where
        alone = evaluate(gt, results, keypoint_sigmas=sigmas, category_ids=[category_id])
        assert_parity(alone, expected)
        if category_id == other:
            assert_parity(
                evaluate(gt, results, keypoint_sigmas=OTHER_SIGMAS, category_ids=[other]),
                expected,
            )


@pytest.mark.parametrize("seed", [11, 12, 13], ids="seed{}".format)
def test_default_sigmas_are_cocos(seed):
    """No sigmas, the 17 COCO sigmas as an array, and as a dict all give the same arrays."""
    gt, results = make_keypoints_dataset(seed)
    default = evaluate(gt, results)
    expected = reference(gt, results)
    assert_parity(default, expected)
    assert_parity(evaluate(gt, results, keypoint_sigmas=COCO_SIGMAS), expected)
    as_dict = {c["id"]: COCO_SIGMAS.tolist() for c in gt["categories"]}
    assert_parity(evaluate(gt, results, keypoint_sigmas=as_dict), expected)


@pytest.mark.parametrize("seed", [21, 22], ids="seed{}".format)
def test_use_categories_false(seed):
    """pycocotools looks OKS up under category -1 with useCats=0, so nothing ever matches.

    deteval either reproduces that (parity) or refuses the setting with a ValueError that
    names it; it must not return any other number.
    """
    gt, results = make_keypoints_dataset(seed, n_categories=2)
    expected = reference(gt, results, use_categories=False)
    assert np.all(expected.precision[expected.precision > -1] == 0)  # the quirk itself
    try:
        result = evaluate(gt, results, use_categories=False)
    except ValueError as error:
        assert "use_categories" in str(error)
    else:
        assert_parity(result, expected)


@pytest.mark.parametrize("seed", [31, 32], ids="seed{}".format)
def test_file_inputs(seed, tmp_path):
    gt, results = make_keypoints_dataset(seed)
    assert_file_inputs_parity(
        gt, results, reference(gt, results), evaluate=evaluate, directory=tmp_path
    )


@pytest.mark.parametrize("seed", [41, 42], ids="seed{}".format)
def test_read_functions_then_evaluate(seed):
    gt, results = make_keypoints_dataset(seed)
    assert_read_functions_parity(
        gt, results, reference(gt, results), evaluate=evaluate, iou_type="keypoints"
    )


# ---------------------------------------------------------------------------------------------
# Hand-made cases (stats written out from pycocotools 2.0.11)
# ---------------------------------------------------------------------------------------------


def _gt(*annotations: dict) -> dict:
    return {
        "images": [{"id": 1, "width": 200, "height": 200, "file_name": "1.jpg"}],
        "categories": [{"id": 1, "name": "person"}],
        "annotations": [{"image_id": 1, "category_id": 1, "iscrowd": 0, **a} for a in annotations],
    }


def _dt(points, score: float, **extra) -> dict:
    return {"image_id": 1, "category_id": 1, "score": score,
            "keypoints": [c for x, y in points for c in (x, y, 1)], **extra}


def _check(gt: dict, results: list, expected_stats: list[float], **params) -> None:
    expected = reference(gt, results, **params)
    assert expected.stats.tolist() == expected_stats  # the reference itself
    assert_parity(evaluate(gt, results, **params), expected)


def test_enlarged_box_rule():
    """A regular GT with no visible keypoints: OKS from the distance to its box grown 3x.

    Keypoints inside [bx - bw, bx + 2bw] x [by - bh, by + 2bh] are at distance 0, OKS 1.
    """
    gt = _gt({"id": 1, "keypoints": [0] * 51, "num_keypoints": 2, "bbox": [10, 10, 20, 20],
              "area": 400})
    inside = [(-10 + 3.5 * i, 3 * i) for i in range(17)]  # x -10..46, y 0..48
    far = [(150 + i, 150 + i) for i in range(17)]
    _check(gt, [_dt(inside, 0.9), _dt(far, 0.95)],
           [0.5, 0.5, 0.5, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0, -1.0])


PERSON = [(100 + (i % 4) * 10, 95 + (i // 4) * 12) for i in range(17)]
AWAY = [(150 + (i % 4) * 3, 20 + (i // 4) * 2.5) for i in range(17)]  # extent 9 x 10


@pytest.mark.parametrize(
    ("name", "away", "boxes", "expected_ap_medium"),
    [
        pytest.param("compact", AWAY, False, 0.9999999999999998, id="compact-extent-small"),
        pytest.param("origin", [(0, 0), *AWAY[1:]], False, 0.5, id="origin-widens-extent"),
        pytest.param("origin-bbox", [(0, 0), *AWAY[1:]], True, 0.9999999999999998,
                     id="bbox-gives-area"),
    ],
)
def test_result_area_from_keypoints_or_bbox(name, away, boxes, expected_ap_medium):
    """An unmatched result is ignored in 'medium' if its area is out of range.

    Without a bbox its area is the extent of all its keypoints: a keypoint reported at (0, 0)
    makes it 4800 (medium, so an FP there). With a bbox (on the first result) the area is
    the box's w*h (100, ignored).
    """
    gt = _gt({"id": 7, "keypoints": [c for x, y in PERSON for c in (x, y, 2)],
              "num_keypoints": 17, "bbox": [90, 90, 60, 70], "area": 2000})
    extra = ({"bbox": [150, 20, 10, 10]}, {"bbox": [90, 90, 60, 70]}) if boxes else ({}, {})
    results = [_dt(away, 0.9, **extra[0]), _dt(PERSON, 0.8, **extra[1])]
    _check(gt, results, [0.5, 0.5, 0.5, expected_ap_medium, -1.0, 1.0, 1.0, 1.0, 1.0, -1.0])
