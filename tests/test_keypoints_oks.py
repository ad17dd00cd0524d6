"""OKS of deteval's keypoint evaluation on hard inputs (review of c5a4afb..ab6f0a0: OKS in chunks,
typed keypoint readers): defects found and fixed (work of unpaired rows, integer keypoints far
apart, huge boxes, huge Python ints), two known gaps as strict xfails (coordinates beyond ~1e8
given as JSON integers: pycocotools computes in int64), and OKS equal to pycocotools'
formula bit for bit for any number of keypoints, chunk size and bound."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cocogen import (
    assert_parity,
    oks_pairs,
    run_pycocotools,
)
from keypointcases import K, gt_outcomes, one_category_gt
from keypointgen import make_keypoints_dataset

import deteval
import deteval.keypoints
from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.keypoints import COCO_PERSON_SIGMAS, pair_oks

# =============================================================================================
# Moved from test_review_session3.py:
#
# Review of c5a4afb..ab6f0a0 (keypoint OKS in chunks, typed keypoint readers, _Int64,
# index_in lookup table, owned() columns): differential and adversarial tests.
#
# Tests marked "Was wrong" reproduce defects the review found, since fixed. The two strict
# xfails are known gaps left open: OKS of coordinates beyond ~1e8 pixels given as JSON
# integers (pycocotools then computes in int64). The other tests add coverage of what was
# checked and found correct.
# =============================================================================================


# ---------------------------------------------------------------------------------------------
# Defects (fixed, and two known gaps as strict xfails)
# ---------------------------------------------------------------------------------------------


def test_pair_oks_work_does_not_scale_with_unpaired_rows():
    """Was wrong (fixed): keypoints.py _pair_oks (c5a4afb) builds the (rows, K) coordinate
    planes and visibility of EVERY detection and ground truth on each call;
    protocols/coco.py calls pair_oks once per category per matching chunk, so the cost is
    O(categories x (n_dt + n_gt) x K) instead of O(pairs): 2 pairs against 100k detections
    allocate ~45 MB (old code ~1 MB); end to end, 200 categories / 300k results evaluate
    4.3x slower than before c5a4afb"""
    import tracemalloc

    dt_kp = np.zeros((100_000, K, 3))
    gt_kp = np.ones((50_000, K, 3))
    box = np.ones((50_000, 4))
    area = np.ones(50_000)
    tracemalloc.start()
    try:
        pair_oks(dt_kp, gt_kp, box, area, np.array([0, 1]), np.array([0, 1]),
                 sigmas=COCO_PERSON_SIGMAS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8e6, f"{peak / 1e6:.1f} MB for 2 pairs"


@pytest.mark.xfail(strict=True, reason=(
    "Known gap, left open: OKS not bit-equal to computeOks when GT and result keypoints "
    "are all JSON integers: "
    "pycocotools' np.array(keypoints) is then int64 and dx**2 + dy**2 is summed exactly in "
    "int64 before one rounding, while keypoints.py squares and adds in float64 (two more "
    "roundings once dx**2 + dy**2 > 2**53, e.g. |dx| ~ 1e8 with area ~ 1e18)"))
def test_oks_integer_keypoints_large_distance_bit_for_bit():
    gt = one_category_gt({"keypoints": [0, 0, 2] * K, "num_keypoints": K, "bbox": [0, 0, 10, 10],
               "area": 10**18})
    results = [{"image_id": 1, "category_id": 1, "keypoints": [100000001, 3, 1] * K,
                "score": 0.9}]
    for mine, theirs in oks_pairs(gt, results).values():
        assert np.array_equal(mine, theirs), (mine, theirs)


@pytest.mark.xfail(strict=True, reason=(
    "Known gap, left open: OKS of a GT without visible keypoints whose bbox holds "
    "integers beyond 2**53: "
    "pycocotools computes x0 = bb[0] - bb[2], x1 = bb[0] + bb[2] * 2 in exact Python int "
    "arithmetic, keypoints.py in float64 after rounding each operand (bounds off by 1-2, "
    "OKS 3.9e-11 vs 1.4e-39)"))
def test_oks_hidden_gt_with_huge_integer_box_bit_for_bit():
    gt = one_category_gt({"keypoints": [0, 0, 0] * K, "num_keypoints": 0,
               "bbox": [2**53 + 1, 2**53 + 1, 2, 2], "area": 1.0})
    results = [{"image_id": 1, "category_id": 1, "keypoints": [2.0**53 - 3, 2.0**53 - 3, 1] * K,
                "score": 0.9}]
    for mine, theirs in oks_pairs(gt, results).values():
        assert np.array_equal(mine, theirs), (mine, theirs)


def test_keypoint_results_with_rle_segmentation_parity(tmp_path):
    """Was wrong (fixed): io/coco.py _results_with_shapes/_typed_keypoint_results: loadRes
    takes the segm branch when the first keypoint result (without bbox) carries
    'segmentation' (area = mask area, bbox = mask box); deteval always uses the keypoints'
    extent, so area-range stats (APm) differ from pycocotools"""
    from pycocotools import mask as mask_utils

    gt, results = make_keypoints_dataset(3, bbox_mode="none")
    images = {image["id"]: image for image in gt["images"]}
    for result in results:
        image = images[result["image_id"]]
        mask = np.zeros((image["height"], image["width"]), np.uint8, order="F")
        mask[:2, :2] = 1
        rle = mask_utils.encode(mask)
        result["segmentation"] = {"size": rle["size"], "counts": rle["counts"].decode()}
    expected = run_pycocotools(gt, results, iou_type="keypoints")
    assert_parity(deteval.evaluate_coco(gt, results, iou_type="keypoints"), expected)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    assert_parity(deteval.evaluate_coco(gt, path, iou_type="keypoints"), expected)


def test_category_name_null_same_from_file_and_dict(tmp_path):
    """Was wrong (fixed): io/coco.py _columns_of_typed: a category with 'name': null is
    named str(id) by the typed decoders (keypoints GT since 5b46c17, and the bbox instances
    decoder), 'None' by the general path (str(c.get('name', c['id']))): file and dict give
    different Categories.names"""
    gt, _ = make_keypoints_dataset(7)
    gt["categories"][0]["name"] = None
    from_file, from_dict = gt_outcomes(gt, tmp_path)
    assert from_file == from_dict


@pytest.mark.parametrize("side", ["gt", "results"])
def test_huge_python_int_keypoint_is_a_format_error(side):
    """Was wrong (fixed): io/_shapes.py keypoint_array fast path: a Python int beyond
    float64 (10**400) in 'keypoints' of a GT dict or results list raises a bare
    OverflowError from np.array, not a FormatError naming the record"""
    gt, results = make_keypoints_dataset(7, bbox_mode="none")
    if side == "gt":
        gt["annotations"][1]["keypoints"][0] = 10**400
        with pytest.raises(FormatError, match=r"annotations\[1\].*finite"):
            read_coco_gt(gt, iou_type="keypoints")
    else:
        dataset = read_coco_gt(gt, iou_type="keypoints")
        results[1]["keypoints"][0] = 10**400
        with pytest.raises(FormatError, match=r"results\[1\].*finite"):
            read_coco_results(results, dataset, iou_type="keypoints")


# ---------------------------------------------------------------------------------------------
# Coverage: OKS equal to pycocotools' formula
# ---------------------------------------------------------------------------------------------


def _reference_oks(d, g, bb, area, sigmas):
    """pycocotools' computeOks body for one pair (float inputs)."""
    variances = (sigmas * 2) ** 2
    k = len(sigmas)
    xg, yg, vg = g[0::3], g[1::3], g[2::3]
    k1 = np.count_nonzero(vg > 0)
    x0, x1 = bb[0] - bb[2], bb[0] + bb[2] * 2
    y0, y1 = bb[1] - bb[3], bb[1] + bb[3] * 2
    xd, yd = d[0::3], d[1::3]
    if k1 > 0:
        dx, dy = xd - xg, yd - yg
    else:
        z = np.zeros(k)
        dx = np.max((z, x0 - xd), axis=0) + np.max((z, xd - x1), axis=0)
        dy = np.max((z, y0 - yd), axis=0) + np.max((z, yd - y1), axis=0)
    e = (dx ** 2 + dy ** 2) / variances / (area + np.spacing(1)) / 2
    if k1 > 0:
        e = e[vg > 0]
    return np.sum(np.exp(-e)) / e.shape[0]


@pytest.mark.parametrize("chunk", [1, 3, 8192])
def test_pair_oks_bit_for_bit_any_k_and_chunk(chunk, monkeypatch):
    """K across numpy's pairwise-sum block sizes (8, 128), hidden GT, partial visibility,
    shuffled pairs spanning chunk boundaries."""
    monkeypatch.setattr(deteval.keypoints, "_CHUNK_PAIRS", chunk)
    rng = np.random.default_rng(chunk)
    for k in (1, 7, 8, 9, 17, 127, 128, 129, 300):
        ng, nd = 4, 5
        sigmas = rng.uniform(0.01, 0.3, k)
        gt_kp = rng.uniform(0, 100, (ng, k, 3))
        gt_kp[:, :, 2] = rng.choice([0, 0, 1, 2], (ng, k))
        gt_kp[0, :, 2] = 0
        dt_kp = rng.uniform(-50, 150, (nd, k, 3))
        box = rng.uniform(0, 60, (ng, 4))
        area = rng.uniform(1, 3000, ng)
        pair_dt = np.repeat(np.arange(nd), ng)
        pair_gt = np.tile(np.arange(ng), nd)
        order = rng.permutation(len(pair_dt))
        pair_dt, pair_gt = pair_dt[order], pair_gt[order]
        values = pair_oks(dt_kp, gt_kp, box, area, pair_dt, pair_gt, sigmas=sigmas)
        expected = [_reference_oks(dt_kp[d].ravel(), gt_kp[g].ravel(), box[g].tolist(),
                                   float(area[g]), sigmas) for d, g in zip(pair_dt, pair_gt)]
        assert np.array_equal(values, expected), k


@pytest.mark.parametrize("seed", [2, 9])
def test_oks_equal_compute_oks_custom_cases(seed, monkeypatch):
    """Crowds, zero and tiny areas, float hidden-GT boxes, many results: small chunks."""
    monkeypatch.setattr(deteval.keypoints, "_CHUNK_PAIRS", 2)
    gt, results = make_keypoints_dataset(seed, n_categories=1, p_many=0.5, p_crowd=0.5)
    gt["annotations"][0]["area"] = 0
    pairs = oks_pairs(gt, results)
    assert pairs
    for mine, theirs in pairs.values():
        assert np.array_equal(mine, theirs)


def _bound_case(rng: np.random.Generator, k: int, ng: int = 6, nd: int = 40):
    """GT with hidden, partly and fully visible keypoints, and detections from on top of
    an object to far off (OKS spread over [0, 1]), every (detection, object) pair."""
    size = rng.uniform(5, 60, ng)
    corner = rng.uniform(0, 500, (ng, 2))
    gt_kp = np.empty((ng, k, 3))
    gt_kp[:, :, :2] = corner[:, None] + rng.uniform(0, 1, (ng, k, 2)) * size[:, None, None]
    gt_kp[:, :, 2] = rng.choice([0, 1, 2], (ng, k), p=[0.3, 0.2, 0.5])
    gt_kp[0, :, 2] = 0
    gt_kp[1, :, 2] = 2
    box = np.column_stack([corner, size, size])
    area = size**2 * rng.uniform(0.3, 1.0, ng)
    near = rng.integers(0, ng, nd)
    spread = np.exp(rng.uniform(np.log(0.1), np.log(100), nd))[:, None]
    dt_kp = np.empty((nd, k, 3))
    dt_kp[:, :, :2] = gt_kp[near, :, :2] + rng.normal(0, 1, (nd, k, 2)) * spread[:, :, None]
    dt_kp[:, :, 2] = 1.0
    pair_dt = np.repeat(np.arange(nd), ng)
    pair_gt = np.tile(np.arange(ng), nd)
    return dt_kp, gt_kp, box, area, pair_dt, pair_gt


@pytest.mark.parametrize("k", [1, 5, 17])
@pytest.mark.parametrize("floor", [0.05, 0.5, 0.95])
def test_oks_bound_zeroes_only_pairs_below_the_floor(k, floor):
    """OKSTables with a floor: each pair is computeOks' value to the last bit, or 0 for a
    pair whose value is below the floor; and the bound does skip pairs."""
    rng = np.random.default_rng([k, int(floor * 100)])
    dt_kp, gt_kp, box, area, pair_dt, pair_gt = _bound_case(rng, k)
    sigmas = rng.uniform(0.02, 0.3, k)
    tables = deteval.keypoints.OKSTables(dt_kp, gt_kp, box, area)
    values = tables.pair_oks(pair_dt, pair_gt, sigmas=sigmas, floor=floor)
    expected = np.array([_reference_oks(dt_kp[d].ravel(), gt_kp[g].ravel(), box[g].tolist(),
                                        float(area[g]), sigmas)
                         for d, g in zip(pair_dt, pair_gt)])
    exact = values == expected
    assert (exact | ((values == 0) & (expected < floor))).all()
    assert (expected >= floor).any() and (~exact).any(), "the case should test the bound"
    assert np.array_equal(tables.pair_oks(pair_dt, pair_gt, sigmas=sigmas), expected)


@pytest.mark.parametrize("case", ["zero-area", "negative-area", "zero-sigma", "far-huge"])
def test_oks_bound_is_off_where_it_does_not_hold(case):
    """Areas <= 0 (a scale <= 0 would turn e's order around), a zero sigma (0 / 0 is a NaN,
    which matches differently from 0), overflowing distances: the bound keeps every value
    computeOks gives (NaN included) or a 0 where computeOks is below the floor."""
    rng = np.random.default_rng(7)
    dt_kp, gt_kp, box, area, pair_dt, pair_gt = _bound_case(rng, 17)
    sigmas = rng.uniform(0.02, 0.3, 17)
    if case == "zero-area":
        area[:] = 0.0
    elif case == "negative-area":
        area[:] = -50.0
    elif case == "zero-sigma":
        sigmas[3] = 0.0
    else:   # far-off detections with huge coordinates: exp(-inf) terms, 0 either way
        dt_kp[:, :, :2] += 1e200
    tables = deteval.keypoints.OKSTables(dt_kp, gt_kp, box, area)
    with np.errstate(all="ignore"):
        values = tables.pair_oks(pair_dt, pair_gt, sigmas=sigmas, floor=0.5)
        expected = np.array([_reference_oks(dt_kp[d].ravel(), gt_kp[g].ravel(),
                                            box[g].tolist(), float(area[g]), sigmas)
                             for d, g in zip(pair_dt, pair_gt)])
    exact = (values == expected) | (np.isnan(values) & np.isnan(expected))
    assert (exact | ((values == 0) & (expected < 0.5))).all()
