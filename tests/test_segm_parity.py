"""Parity of deteval's COCO segm evaluation with pycocotools 2.0.11, bit for bit.

* seeded random datasets from ``maskgen.make_segm_dataset`` (polygons, uncompressed and
  compressed RLE, crowds, tiny and 640x480 images, perturbed result masks, empty and
  full-image masks, results with and without ``bbox``, ties, more than 100 results per
  group) under the default and custom parameters: ``np.array_equal`` on stats, precision,
  recall and scores, and the same summary text;
* small hand-made cases whose pycocotools stats are written out;
* the shared ``coco_val2014_100`` sample against the stored pycocotools output.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from cocogen import (
    Coco100,
    assert_file_inputs_parity,
    assert_parity,
    assert_read_functions_parity,
    build_case,
    run_pycocotools,
    variant_cases,
)
from maskgen import decode, encode, make_segm_dataset, runs

import deteval
import deteval.masks.pair_iou
import deteval.masks.rle


def evaluate(gt, results, **params):
    return deteval.evaluate_coco(gt, results, iou_type="segm", **params)


def reference(gt, results, **params):
    return run_pycocotools(gt, results, iou_type="segm", **params)


# ---------------------------------------------------------------------------------------------
# Random datasets
# ---------------------------------------------------------------------------------------------


def _image_subset(gt: dict, rng: np.random.Generator) -> dict:
    ids = [image["id"] for image in gt["images"]]
    picked = rng.choice(ids, size=max(1, len(ids) // 2), replace=False)
    return {"image_ids": [int(i) for i in picked]}  # unsorted on purpose


def _category_subset(gt: dict, rng: np.random.Generator) -> dict:
    ids = [category["id"] for category in gt["categories"]]
    picked = rng.choice(ids, size=max(1, (len(ids) + 1) // 2), replace=False)
    return {"category_ids": [int(c) for c in picked]}


def _no_cats_category_subset(gt: dict, rng: np.random.Generator) -> dict:
    return {"use_categories": False, **_category_subset(gt, rng)}


TINY = [(5, 7), (7, 5), (5, 7), (3, 8), (7, 5)]

# name -> (number of seeds, first seed, make_segm_dataset kwargs, params or params(gt, rng))
VARIANTS: dict[str, tuple[int, int, dict, object]] = {
    "default": (120, 0, {}, {}),
    "bbox-all": (8, 1000, {"bbox_mode": "all"}, {}),
    "bbox-later": (5, 1100, {"bbox_mode": "later"}, {}),
    "bbox-none": (2, 1150, {"bbox_mode": "none"}, {}),
    "nocats": (6, 1200, {"n_categories": 3}, {"use_categories": False}),
    "maxdets-1-5-20": (4, 2000, {}, {"max_detections": [1, 5, 20]}),
    "maxdets-1-10-300": (3, 2100, {"p_many": 0.4}, {"max_detections": [1, 10, 300]}),
    "iou-custom": (3, 3000, {}, {"iou_thresholds": [0.3, 0.45, 0.6]}),
    "iou-with-1.0": (3, 3100, {}, {"iou_thresholds": [0.5, 0.75, 0.9, 1.0]}),
    "recall-11pt": (3, 3300, {}, {"recall_thresholds": np.linspace(0, 1, 11)}),
    "areas-custom": (
        3,
        4000,
        {},
        {"area_ranges": [(0, 1e10), (0, 100), (100, 2000), (2000, 1e10)]},
    ),
    "image-subset": (4, 5000, {}, _image_subset),
    "category-subset": (4, 5100, {"n_categories": 3}, _category_subset),
    "nocats-category-subset": (3, 5200, {"n_categories": 3}, _no_cats_category_subset),
    "many-results": (4, 6000, {"n_images": 2, "p_many": 0.5}, {}),
    "crowded": (3, 6100, {"p_crowd": 0.6}, {}),
    "tiny-images": (5, 6200, {"image_sizes": TINY, "max_gt": 4, "max_dt": 6}, {}),
    "bytes-counts": (3, 6300, {"p_bytes": 0.4}, {}),
    "big": (2, 7000, {"n_images": 12, "n_categories": 3}, {}),
}


@pytest.mark.parametrize(("seed", "kwargs", "params"), variant_cases(VARIANTS))
def test_random_dataset_parity(seed, kwargs, params):
    gt, results, params = build_case(make_segm_dataset, seed, kwargs, params)
    assert_parity(evaluate(gt, results, **params), reference(gt, results, **params))


def test_generator_covers_the_issue():
    """The random datasets really hold what the parity cases claim to exercise."""
    kinds, crowd_kinds, modes = set(), set(), set()
    sizes, n_many, empty, full = set(), 0, 0, 0
    for seed in range(0, 120, 5):
        gt, results = make_segm_dataset(seed)
        sizes |= {(image["height"], image["width"]) for image in gt["images"]}
        for ann in gt["annotations"]:
            s = ann["segmentation"]
            kind = ("multi-polygon" if len(s) > 1 else "polygon") if isinstance(s, list) else (
                "rle" if isinstance(s["counts"], list) else "compressed")
            (crowd_kinds if ann["iscrowd"] else kinds).add(kind)
        first_has_box = "bbox" in results[0]
        modes.add("all" if first_has_box else ("later" if any("bbox" in r for r in results)
                                                else "none"))
        groups: dict = {}
        for r in results:
            key = (r["image_id"], r["category_id"])
            groups[key] = groups.get(key, 0) + 1
            area = int(np.count_nonzero(decode(r["segmentation"])))
            h, w = r["segmentation"]["size"]
            empty += area == 0
            full += area == h * w
        n_many += any(n > 100 for n in groups.values())
    assert kinds == {"polygon", "multi-polygon", "rle", "compressed"}
    assert crowd_kinds == {"rle", "compressed"}
    assert modes == {"all", "later", "none"}
    assert {(5, 7), (7, 5), (480, 640)} <= sizes
    assert n_many >= 1 and empty >= 5 and full >= 5


@pytest.mark.parametrize("seed", [31, 32], ids="seed{}".format)
def test_file_inputs(seed, tmp_path):
    gt, results = make_segm_dataset(seed)
    assert_file_inputs_parity(
        gt, results, reference(gt, results), evaluate=evaluate, directory=tmp_path
    )


@pytest.mark.parametrize("seed", [41, 42, 43], ids="seed{}".format)
def test_read_functions_then_evaluate(seed):
    """read_coco_gt / read_coco_results output evaluates like the raw dicts."""
    gt, results = make_segm_dataset(seed)
    assert_read_functions_parity(
        gt, results, reference(gt, results), evaluate=evaluate, iou_type="segm"
    )


@pytest.mark.parametrize("seed", [51, 52, 53], ids="seed{}".format)
def test_results_without_segmentation_get_box_polygons(seed):
    """A result with only a ``bbox`` is evaluated as its box polygon (loadRes adds it)."""
    gt, results = make_segm_dataset(seed, bbox_mode="all")
    rng = np.random.default_rng(seed)
    for result in results:
        if rng.random() < 0.4:
            del result["segmentation"]
    assert_parity(evaluate(gt, results), reference(gt, results))


# ---------------------------------------------------------------------------------------------
# Hand-made cases (stats written out from pycocotools 2.0.11)
# ---------------------------------------------------------------------------------------------


def _gt(*annotations: dict, height: int = 40, width: int = 50) -> dict:
    return {
        "images": [{"id": 1, "width": width, "height": height, "file_name": "1.jpg"}],
        "categories": [{"id": 1, "name": "thing"}],
        "annotations": [{"image_id": 1, "category_id": 1, "iscrowd": 0, **a} for a in annotations],
    }


def _rect(y0: int, y1: int, x0: int, x1: int, height: int = 40, width: int = 50) -> np.ndarray:
    mask = np.zeros((height, width), dtype=bool)
    mask[y0:y1, x0:x1] = True
    return mask


def _dt(mask: np.ndarray, score: float, **extra) -> dict:
    return {"image_id": 1, "category_id": 1, "segmentation": encode(mask), "score": score,
            **extra}


def _check(gt: dict, results: list, expected_stats: list[float], **params) -> None:
    expected = reference(gt, results, **params)
    assert expected.stats.tolist() == expected_stats  # the reference itself
    assert_parity(evaluate(gt, results, **params), expected)


SQUARE = [[0, 0, 0, 10, 10, 10, 10, 0]]


def test_mask_iou_point_nine():
    """A 10x10 polygon and a 9x10 mask: IoU 90/100 = 0.9 passes 0.8999999999999999."""
    gt = _gt({"id": 1, "segmentation": SQUARE, "area": 100, "bbox": [0, 0, 10, 10]})
    _check(
        gt,
        [_dt(_rect(0, 9, 0, 10), 0.9)],
        [0.8999999999999999, 0.9999999999999999, 0.9999999999999999, 0.8999999999999999,
         -1.0, -1.0, 0.9, 0.9, 0.9, 0.9, -1.0, -1.0],
    )


def test_crowd_rle_absorbs_detection():
    """Inside an uncompressed-RLE crowd: IoU = |D n G| / |D| = 1, the detection is ignored."""
    crowd = {"id": 1, "segmentation": runs(_rect(0, 30, 0, 30)), "area": 900,
             "bbox": [0, 0, 30, 30], "iscrowd": 1}
    inside = _dt(_rect(5, 15, 5, 15), 0.9)
    _check(_gt(crowd), [inside], [-1.0] * 12)
    regular = {"id": 2, "segmentation": encode(_rect(32, 40, 40, 50)), "area": 80,
               "bbox": [40, 32, 10, 8]}
    _check(
        _gt(crowd, regular),
        [inside, _dt(_rect(32, 40, 40, 50), 0.8)],
        [0.9999999999999998, 0.9999999999999999, 0.9999999999999999, 0.9999999999999998,
         -1.0, -1.0, 0.0, 1.0, 1.0, 1.0, -1.0, -1.0],
    )


def test_gt_area_field_decides_the_range():
    """The GT mask has 100 pixels but ``area`` 10000: it is a large object, not small."""
    gt = _gt({"id": 1, "segmentation": SQUARE, "area": 10000, "bbox": [0, 0, 10, 10]})
    results = [_dt(_rect(0, 10, 0, 10), 0.9), _dt(_rect(20, 30, 20, 30), 0.95)]
    _check(gt, results, [0.5, 0.5, 0.5, -1.0, -1.0, 0.9999999999999998, 0.0, 1.0, 1.0,
                         -1.0, -1.0, 1.0])


def test_segm_encodings_are_equivalent():
    """One mask given as polygon, uncompressed RLE and compressed RLE: the same numbers."""
    mask = _rect(3, 17, 4, 21)
    polygon = [[4, 3, 4, 17, 21, 17, 21, 3]]
    results = [_dt(_rect(3, 16, 4, 21), 0.9), _dt(_rect(20, 30, 0, 5), 0.8)]
    outcomes = []
    for segmentation in (polygon, runs(mask), encode(mask)):
        gt = _gt({"id": 5, "segmentation": segmentation, "area": 238, "bbox": [4, 3, 17, 14]})
        result = evaluate(gt, results)
        assert_parity(result, reference(gt, results))
        outcomes.append(result.stats.tolist())
    assert outcomes[0] == outcomes[1] == outcomes[2]


# ---------------------------------------------------------------------------------------------
# coco_val2014_100: the shared sample and its stored pycocotools 2.0.11 output
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def coco100(coco100_dir):
    return Coco100.evaluate(evaluate, coco100_dir, "instances_val2014_fakesegm100_results.json",
                            "segm")


def test_coco100_stats(coco100):
    assert len(coco100.result.stats) == 12
    coco100.assert_stats()


def test_coco100_summary(coco100):
    coco100.assert_summary()


def test_coco100_per_category_ap(coco100):
    coco100.assert_per_category_ap()


def test_coco100_arrays_equal_pycocotools(coco100):
    gt, results = coco100.read()
    before = copy.deepcopy(results)
    assert_parity(coco100.result, reference(gt, results))
    assert results == before
