"""Review of the matcher speed-ups (d0f45e5 packed preference, 21b6fe3 shared-range groups,
da46266 flat indices, b46b72a accumulate with take/compress).

* a defect, since fixed: the packed (not ignored, similarity) int64 key overflowed for
  similarities >= 2 (and +inf), so a group with ignored and regular candidates could prefer
  the wrong object (the key is now packed only when every similarity is in [0, 2));
* differential coverage aimed at the shared-choice split: every call mixes groups that are
  matched in range 0 only and copied with groups matched range by range, with crowds, user
  ignore flags, areas on range bounds, duplicate / empty / single ranges, truncation, ties,
  -0.0 and signed similarities, compared with the literal loop of ``reference.py``;
* end-to-end parity with pycocotools for custom, duplicate and single area ranges,
  ``use_categories=False``, small ``max_detections`` and thresholds outside [0, 1].
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from cocogen import assert_parity, make_dataset, run_pycocotools
from reference import reference_greedy_match
from test_matching import assert_same_as_reference, matcher_inputs

import deteval
from deteval.matching import match_detections

# --------------------------------------------------------------------------------------------
# Defect: the packed key overflows for similarities >= 2
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("regular", [2.0, 3.5, np.inf])
def test_packed_key_similarity_two_or_more(regular):
    """Was wrong (fixed): matching.py match_detections (packed path, d0f45e5): the key is
    float64 bits + 2**62 for objects that are not ignored; for a similarity >= 2.0 the
    float bits already have bit 62 set, so the sum overflows int64 (2.0 -> -2**63) or
    collides with ignored keys. A group with an ignored and a regular candidate then takes
    the ignored object (pycocotools and the two-pass path take the regular one). Fix: pack
    only when 0 <= values < 2"""
    # object 0 regular with a large similarity, object 1 ignored with 0.6
    case = matcher_inputs([[regular, 0.6]], [0.9], ignore=[False, True])
    expected = reference_greedy_match(**case)[0]["detection_matches"]
    assert expected.tolist() == [[0]]
    assert match_detections(**case).detection_matches(0).tolist() == [[0]]


def test_packed_key_orders_large_regular_similarities():
    """Was wrong (fixed): matching.py match_detections (packed path): among regular objects
    of a group that also has an ignored candidate, 1.5 beats 2.5 because 2.5's key
    overflows int64"""
    case = matcher_inputs([[1.5, 2.5, 0.7]], [0.9], ignore=[False, False, True])
    assert reference_greedy_match(**case)[0]["detection_matches"].tolist() == [[1]]
    assert match_detections(**case).detection_matches(0).tolist() == [[1]]


def test_similarities_just_below_two_are_packed_correctly():
    below = np.nextafter(2.0, 0.0)
    case = matcher_inputs([[below, 1.9, 0.7], [1.0, 1.9, 0.0]], [0.9, 0.8],
                          ignore=[False, False, True], thresholds=(0.5, 1.5))
    assert_same_as_reference(match_detections(**case), case)


# --------------------------------------------------------------------------------------------
# Differential cases aimed at the shared-choice split
# --------------------------------------------------------------------------------------------

_POOL = np.array([-0.0, 0.0, 0.3, 0.5, 0.5, 0.7, 0.75, 0.9, 1.0, 1 - 1e-10, 1 - 2e-10])
_AREAS = np.array([0.0, 10.0, 1024.0, 1024.0, 9216.0, 9216.0, 1e5, 1e10, 1e10 + 1])
_RANGES = [
    ((0, 1e10),),                                                   # a single range
    ((0, 1e10), (0, 1024), (1024, 9216), (9216, 1e10)),            # COCO
    ((0, 1e10), (0, 1e10)),                                         # duplicates
    ((1024, 1024), (0, 1e10), (0, 9216)),                           # a point range first
    ((5, 3), (0, np.inf)),                                          # an empty range first
]


def _groups_by_kind(case: dict) -> tuple[int, int]:
    """Groups with candidates whose detections all see one ignore status per range (shared)
    and groups with some detection seeing both (mixed), at the lowest threshold."""
    lo = min(min(t, 1 - 1e-10) for t in case["iou_thresholds"])
    ranges = np.asarray(case["area_ranges"], float).reshape(-1, 2)
    ignored = (case["gt_ignore"][None, :] | (case["gt_area"][None, :] < ranges[:, :1])
               | (case["gt_area"][None, :] > ranges[:, 1:]))
    kinds = {}
    for d, g in enumerate(case["dt_group"]):
        if g < 0:
            continue
        cols = np.flatnonzero(case["gt_group"] == g)
        sims = case["similarity"](np.full(len(cols), d), cols)
        cand = cols[sims >= lo]
        if len(cand):
            flags = ignored[:, cand]
            mixed = bool((flags.any(1) & ~flags.all(1)).any())
            kinds[g] = kinds.get(g, False) | mixed
    return sum(not m for m in kinds.values()), sum(kinds.values())


def _random_case(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n_groups = int(rng.integers(1, 8))
    sizes = [(int(rng.integers(0, 7)), int(rng.integers(0, 9))) for _ in range(n_groups)]
    gt_group = np.concatenate([np.full(a, k) for k, (a, _) in enumerate(sizes)]
                              + [np.full(int(rng.integers(0, 2)), -1)]).astype(np.int64)
    dt_group = np.concatenate([np.full(b, k) for k, (_, b) in enumerate(sizes)]
                              + [np.full(int(rng.integers(0, 2)), -1)]).astype(np.int64)
    gt_group, dt_group = rng.permutation(gt_group), rng.permutation(dt_group)
    n_gt, n_dt = len(gt_group), len(dt_group)
    mode = int(rng.integers(0, 3))
    ious = np.where(rng.random((n_dt, n_gt)) < 0.6, rng.choice(_POOL, (n_dt, n_gt)),
                    rng.random((n_dt, n_gt)))
    if mode == 1:
        ious = ious * 2 - 0.5          # signed, and above 1 (below 2)
    elif mode == 2:
        ious = np.round(ious, 1)       # many ties
    crowd = rng.random(n_gt) < rng.choice([0.0, 0.2, 0.5])
    ignore = crowd | (rng.random(n_gt) < rng.choice([0.0, 0.1, 0.3]))
    thresholds = [np.linspace(0.5, 0.95, 10), np.array([-0.5, 0.0, 0.5]),
                  np.array([0.5, 1.0, 1.5]), rng.choice(_POOL, 4)][int(rng.integers(0, 4))]
    scores = (rng.choice([0.1, 0.5, 0.5, 0.9], n_dt) if rng.random() < 0.5
              else rng.random(n_dt))
    return matcher_inputs(
        ious, scores, crowd=crowd, ignore=ignore, gt_area=rng.choice(_AREAS, n_gt),
        dt_area=rng.choice(_AREAS, n_dt), thresholds=thresholds,
        area_ranges=_RANGES[int(rng.integers(0, len(_RANGES)))],
        max_detections=int(rng.choice([1, 2, 3, 100])),
        tie_order=rng.permutation(n_dt) if rng.random() < 0.5 else None,
        dt_group=dt_group, gt_group=gt_group)


_SEEDS = range(1200)


def test_shared_and_mixed_groups_match_the_literal_loop():
    for seed in _SEEDS:
        case = _random_case(seed)
        assert_same_as_reference(match_detections(**case), case)


def test_random_cases_mix_both_kinds_of_group():
    both = 0
    for seed in _SEEDS[:300]:
        shared, mixed = _groups_by_kind(_random_case(seed))
        both += shared > 0 and mixed > 0
    assert both >= 50, both


def test_no_area_range_and_no_threshold():
    case = _random_case(3)
    for key, value in (("area_ranges", np.zeros((0, 2))), ("iou_thresholds", np.zeros(0))):
        table = match_detections(**{**case, key: value})
        assert len(table.match_dt) == 0


# --------------------------------------------------------------------------------------------
# End to end with pycocotools
# --------------------------------------------------------------------------------------------


def _e2e_options(seed: int, gt: dict) -> dict:
    rng = np.random.default_rng(seed + 777)
    for annotation in gt["annotations"]:
        if rng.random() < 0.3:     # areas exactly on the COCO bounds
            annotation["area"] = float(rng.choice([32.0**2, 96.0**2, 0.0, 500.0]))
    options = {}
    kind = seed % 4
    if kind == 1:
        options.update(area_ranges=[[0, 1e10]], area_labels=["all"])
    elif kind == 2:
        options.update(area_ranges=[[0, 1e10], [0, 1e10], [1024, 1024], [500, 500]],
                       area_labels=["all", "b", "c", "d"])
    elif kind == 3:
        options.update(area_ranges=[[0, 1e10], [0, 9216], [1024, 1e10], [9216, 1024]],
                       area_labels=["all", "x", "y", "z"])
    if rng.random() < 0.4:
        options["use_categories"] = False
    if rng.random() < 0.3:
        options["max_detections"] = [1, 3, int(rng.choice([5, 100]))]
    if rng.random() < 0.3:
        options["iou_thresholds"] = [-0.5, 0.0, 0.5, 1.0, 1.5]
    return options


@pytest.mark.parametrize("seed", range(0, 240, 4))
def test_pycocotools_parity_custom_ranges(seed):
    gt, results = make_dataset(seed, max_gt=8, max_dt=15, p_crowd=0.4, p_many=0.05)
    options = _e2e_options(seed, gt)
    reference = run_pycocotools(gt, results, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine = deteval.evaluate_coco(gt, results, **options)
    assert_parity(mine, reference, summary=False)
