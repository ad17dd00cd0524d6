"""The recall-threshold sums a resample's AP-type numbers come from
(``PrecisionPlan.sums``, ``WeightedCOCO.numbers``, ``WeightedLVIS.numbers``;
docs/diagnostics/bootstrap.md §3, §13):
each segment's sum over the recall thresholds equals the sum of its row of the precision
grid (``PrecisionPlan.curve``) within a few ulps, every number of a resample equals the
grid path's within 1e-12 (the non-AP numbers bit for bit), and the evaluation's own numbers
(the row of ones) stay those of evaluate_coco bit for bit."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from cocogen import make_dataset
from lvisgen import make_lvis_dataset
from scenes import keypoint_scene
from test_bootstrap_plans import _run_scene

import deteval
from deteval.diagnostics import _bootstrap_plans as plans
from deteval.diagnostics.bootstrap import WeightedCOCO, bootstrap_coco, use_sums
from deteval.diagnostics.bootstrap_lvis import WeightedLVIS

#: Every number of a resample within this of the grid path's (the project's parity tolerance).
TOLERANCE = 1e-12

#: (case, evaluate_coco options): crowds, ignore flags, more than 100 detections per group,
#: pooled categories, other max-detections, IoU and recall thresholds (repeated ones too) and
#: area ranges; the hand-built scene of runs across crowd matches, rows of area 32**2 and
#: 96**2 and out-of-range true positives.
CASES = [
    (1, {}),
    (2, {}),
    (3, {"use_categories": False}),
    (4, {"max_detections": (1, 3, 5)}),
    (5, {"iou_thresholds": (0.5, 0.75)}),
    (6, {"recall_thresholds": (0.0, 0.2, 0.2, 0.33, 0.5, 0.9, 1.0)}),
    (7, {"recall_thresholds": (0.25,)}),
    (8, {"area_ranges": ((0, 1e10), (0, 400), (2000, 1e10)),
         "area_labels": ("all", "small", "large")}),
    ("scene", {}),
    ("keypoints", {"iou_type": "keypoints"}),
]


def _inputs(case) -> tuple:
    if case == "scene":
        return _run_scene()
    if case == "keypoints":
        return keypoint_scene()
    return make_dataset(case, n_images=8, n_categories=4, p_many=0.2)


def _result(case, options: dict):
    return deteval.evaluate_coco(*_inputs(case), **options)


def _rows(n_images: int, seed: int) -> list[np.ndarray]:
    """Weight rows that take the sums: resample-like counts with zeros (one image at least
    twice), a single image twice, every image twice."""
    rng = np.random.default_rng(seed)
    rows = [rng.integers(0, 4, n_images) * (rng.random(n_images) < 0.7) for _ in range(6)]
    for w in rows:
        w[rng.integers(n_images)] = 2
    rows.append(2 * np.eye(1, n_images, n_images // 2, dtype=np.int64)[0])
    rows.append(np.full(n_images, 2))
    assert all(use_sums(SimpleNamespace(recall_thresholds=(0,), iou_thresholds=(0,)), w)
               for w in rows)
    return rows


def _grid_numbers(weighted, w: np.ndarray, monkeypatch) -> np.ndarray:
    monkeypatch.setattr(plans, "SUM_RECALL", False)
    try:
        return np.asarray(weighted.numbers(w))
    finally:
        monkeypatch.setattr(plans, "SUM_RECALL", True)


def _ap_type(weighted) -> np.ndarray:
    return np.array([name.startswith("AP") for name in weighted.names])


@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("case, options", CASES)
def test_every_number_of_the_sums_is_the_grids(case, options, merge, monkeypatch):
    """Every number of every weight row within 1e-12 of the grid path's (AP-type ones; the
    others, AR, F1 and oLRP, bit for bit), with and without runs of TP events."""
    monkeypatch.setattr(plans, "MERGE_RUNS", merge)
    weighted = WeightedCOCO(_result(case, options))
    ap_type = _ap_type(weighted)
    for w in _rows(weighted.n_images, 5):
        assert weighted._plan.sums(w) is not None
        got = np.asarray(weighted.numbers(w))
        expected = _grid_numbers(weighted, w, monkeypatch)
        assert np.array_equal(got < 0, expected < 0)                 # the same undefined ones
        assert np.abs(got - expected).max(initial=0) <= TOLERANCE, w
        assert np.array_equal(got[~ap_type], expected[~ap_type])


def _defined_grid_sums(plan, w: np.ndarray) -> tuple[dict, dict, dict]:
    """The grid's sums over the recall thresholds (A, T, K) and ``COCOPlan.sums``' output,
    with the (A, K) mask of the defined pairs, per max-detections setting."""
    grid = {md: prec.sum(axis=1).transpose(2, 0, 1).copy()
            for md, prec in plan.curves(w)[0].items()}
    sums, _, events = plan.sums(w)
    ok = {md: events[md][-1].T > 0 for md in sums}
    return grid, sums, ok


def _assert_close(sums: np.ndarray, grid: np.ndarray) -> None:
    """A few ulps of the sums (which reach R): the grid's row sums are taken in another
    order."""
    np.testing.assert_allclose(sums, grid, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("case, options", CASES[:2] + CASES[5:])
def test_each_segments_sum_is_the_sum_of_its_grid_row(case, options):
    """Segment by segment, the sum over the recall thresholds equals the grid row's sum
    within a few ulps (relative 1e-14) where the (category, area) has positives (and no
    positives in some (category, area) of some cases, segments without runs in others: both
    are exercised)."""
    weighted = WeightedCOCO(_result(case, options))
    plan = weighted._plan
    undefined = no_runs = 0
    for w in _rows(weighted.n_images, 6):
        grid, sums, ok = _defined_grid_sums(plan, w)
        for md in sums:
            defined = np.broadcast_to(ok[md][:, None, :], sums[md].shape)
            _assert_close(sums[md][defined], grid[md][defined])
            undefined += int((~defined).sum())
            no_runs += int((plan.precision[md].run_counts == 0).sum())
    if case != "keypoints":
        assert undefined and no_runs


def test_lvis_plan_sums_are_the_grids():
    """LVIS's plan (one max-detections setting, COCOPlan.single): the same sums."""
    weighted = WeightedLVIS(deteval.evaluate_lvis(*make_lvis_dataset(3)))
    for w in _rows(weighted.n_images, 7):
        grid, sums, ok = _defined_grid_sums(weighted.plan, w)
        for md in sums:
            defined = np.broadcast_to(ok[md][:, None, :], sums[md].shape)
            _assert_close(sums[md][defined], grid[md][defined])


@pytest.mark.parametrize("seed", range(3))
def test_every_lvis_number_of_the_sums_is_the_grids(seed, monkeypatch):
    """LVIS's numbers (lvis-api's selections: thresholds, areas, frequency groups; the
    per-category AP) from the sums: within 1e-12 of the grid path's, AR bit for bit."""
    weighted = WeightedLVIS(deteval.evaluate_lvis(*make_lvis_dataset(seed)))
    ap_type = np.array([not name.startswith("AR") for name in weighted.names])
    for w in _rows(weighted.n_images, seed):
        assert weighted.plan.sums(w) is not None
        got = np.asarray(weighted.numbers(w))
        expected = _grid_numbers(weighted, w, monkeypatch)
        assert np.array_equal(got < 0, expected < 0)
        assert np.abs(got - expected).max(initial=0) <= TOLERANCE
        assert np.array_equal(got[~ap_type], expected[~ap_type])


def test_int64_counts_give_the_int32_sums():
    """The same weights counted in int64 (as when the weights could overflow int32) give the
    same sums, bit for bit."""
    weighted = WeightedCOCO(_result(2, {}))
    plan = weighted._plan
    for w in _rows(weighted.n_images, 8):
        npig = plan.positives(w.astype(np.int32))
        for events in plan.precision.values():
            narrow = events.sums(w.astype(np.int32), npig, plan.thresholds_r)[0].copy()
            wide = events.sums(w.astype(np.int64), npig, plan.thresholds_r)[0]
            assert np.array_equal(narrow.view(np.int64), wide.view(np.int64))


def test_large_weights_fall_back_to_the_grid(monkeypatch):
    """Weights up to 2**22: the needed-count tables would be much larger than the runs, so
    the sums decline and the numbers are the grid path's, bit for bit."""
    weighted = WeightedCOCO(_result(2, {}))
    w = np.random.default_rng(9).integers(0, 2**22, weighted.n_images)
    assert weighted._plan.sums(w) is None
    got = np.asarray(weighted.numbers(w))
    expected = _grid_numbers(weighted, w, monkeypatch)
    assert np.array_equal(got.view(np.int64), expected.view(np.int64))


@pytest.mark.parametrize("case, options", CASES[:3] + CASES[5:6])
def test_the_row_of_ones_is_the_evaluation_bit_for_bit(case, options):
    """The evaluation's own numbers come from the grid path (not the sums): the estimates and
    a bootstrap over one row of ones equal evaluate_coco's stats and per-class AP bit for
    bit, so that interval collapses to the number."""
    result = _result(case, options)
    ones = np.ones((1, len(result.params.image_ids)), np.int64)
    ci = bootstrap_coco(result, weights=ones, threads=1)
    n_stats = len(result.stats)
    per_class = [row["AP"] for row in result.per_class()]
    for values in (ci.estimates, np.nan_to_num(ci.samples[0], nan=-1.0)):
        assert np.array_equal(values[:n_stats], result.stats)
        assert np.array_equal(values[n_stats + 2:], per_class)


@pytest.mark.parametrize("case, options", CASES[:2] + CASES[8:9])
def test_a_row_of_each_image_at_most_once_is_an_evaluation_bit_for_bit(case, options):
    """A row holding each image at most once (the row of ones, a subset of the images, no
    image) takes the grid path: its numbers are evaluate_coco's on those images, bit for
    bit; the zero weights of the plan-level sums are compared in the tests above."""
    result = _result(case, options)
    weighted = WeightedCOCO(result)
    ids = np.sort(np.asarray(result.params.image_ids))
    w = (np.arange(len(ids)) % 2 == 0).astype(np.int64)
    assert not use_sums(result.params, w)
    expected = deteval.evaluate_coco(*_inputs(case), image_ids=ids[w == 1].tolist(),
                                     **options)
    got = np.asarray(weighted.numbers(w))
    assert np.array_equal(got[:len(expected.stats)], expected.stats)
    assert np.array_equal(got[len(expected.stats) + 2:],
                          [row["AP"] for row in expected.per_class()])
