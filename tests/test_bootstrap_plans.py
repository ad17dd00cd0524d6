"""The weighted COCO accumulation's layouts (deteval.diagnostics._bootstrap_plans): each
shortcut a resample takes gives the floats of the plain computation it replaces, bit for bit
(the end-to-end equality with evaluate_coco is in tests/test_bootstrap.py)."""

from __future__ import annotations

import numpy as np
import pytest
from cocogen import make_dataset

import deteval
from deteval.diagnostics import _bootstrap_plans as plans
from deteval.diagnostics.bootstrap import WeightedCOCO, _mean_valid


@pytest.mark.parametrize("seed", range(4))
def test_padded_rows_sum_each_run_as_its_own_cumsum(seed):
    """The zero-padded blocks oLRP sums in: one cumsum(axis=1) per block gives, for every run
    of the flat array, the floats of np.cumsum over that run alone (empty runs included)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 400, 60) * (rng.random(60) < 0.8)
    lengths[: 3] = (5000, 0, 2500)
    bounds = np.r_[0, np.cumsum(lengths)]
    values = rng.random(bounds[-1]) * rng.integers(0, 4, bounds[-1])
    src, back, blocks = plans.padded_rows(bounds)
    assert np.array_equal(src.take(back), np.arange(bounds[-1]))       # every entry, once
    padded = np.where(src >= 0, values.take(np.maximum(src, 0)), 0.0)
    for lo, rows, cols in blocks:
        block = padded[lo:lo + rows * cols].reshape(rows, cols)
        np.cumsum(block, axis=1, out=block)
    expected = np.concatenate([np.cumsum(values[a:b]) for a, b in zip(bounds[:-1], bounds[1:])])
    assert np.array_equal(padded.take(back).view(np.int64), expected.view(np.int64))
    assert len(blocks) < np.count_nonzero(lengths)         # fewer calls than runs


@pytest.fixture(scope="module")
def weighted():
    gt, dt = make_dataset(31, n_images=5, n_categories=4, p_many=0.2)
    return WeightedCOCO(deteval.evaluate_coco(gt, dt))


def _weights(weighted, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 5, weighted.n_images).astype(np.int32)


@pytest.mark.parametrize("seed", range(6))
def test_envelope_keys_of_the_bound_give_the_widest_keys_precision(weighted, seed, monkeypatch):
    """The key width follows a per-resample bound on the counts (fewer, longer chunks of the
    running maximum): the precision is that of the widest keys the count type allows."""
    plan = weighted._plan
    w = _weights(weighted, seed)
    assert plan.precision[100]._code(w) < 6
    narrow = plan.curves(w)[0][100].copy()
    monkeypatch.setattr(plans.PrecisionPlan, "_code", lambda self, w: 6)       # int32's
    widest = plan.curves(w)[0][100]
    assert np.array_equal(narrow, widest)


def test_envelope_code_bounds_every_count(weighted):
    """The bound is the largest weight times the most rows of a category: every TP + FP count
    of the resample is below 2**e, e the code's exponent."""
    plan = weighted._plan
    precision = plan.precision[100]
    for seed in range(5):
        w = _weights(weighted, seed)
        counted = plan.curves(w)[2][100][2]
        code = precision._code(w)
        assert int(counted.max(initial=0)) < 2 ** (2**code - 1)


def test_stats_of_defined_selections_equal_the_boolean_selection(weighted):
    """The stats read as contiguous blocks (every entry defined) or through the boolean
    selection (some category without positives in an area): the means of the selection."""
    kinds = set()
    for seed in range(8):
        w = _weights(weighted, seed)
        w[: seed % 4] = 0                   # some images out: categories without positives
        prec, rec, _ = weighted._plan.curves(w)
        kinds |= set((prec[100][0, 0] > -1).all(axis=0).tolist())      # per area
        expected = [_mean_valid(prec[key] if is_ap else rec[key], at) if key is not None
                    else -1.0 for is_ap, key, at in weighted._selections]
        assert weighted._stats(prec, rec) == expected
    assert kinds == {True, False}           # both ways are taken


def test_rows_after_each_categorys_last_true_positive_are_not_listed(weighted):
    """The rows in range stop at the last TP event reading them, category by category; every
    TP event's list position is inside its list."""
    precision = weighted._plan.precision[100]
    listed = int((~weighted.state.out_of_range[1:]).sum()) + len(weighted.state.out_of_range[0])
    assert len(precision.in_img) < listed                  # "all" lists every row
    assert precision.in_hi.max(initial=0) <= len(precision.in_img)


@pytest.mark.parametrize("seed", range(4))
def test_every_row_list_derived_from_the_other_areas_gives_the_same_numbers(seed, monkeypatch):
    """Area "all" reading the small, medium and large lists (rows on a range's boundary, in
    two of them, taken off once as not-FP events) instead of its own list of every row: the
    numbers of each resample are the same, bit for bit."""
    gt, dt = make_dataset(40 + seed, n_images=6, n_categories=3, p_many=0.2)
    result = deteval.evaluate_coco(gt, dt)
    monkeypatch.setattr(plans, "_DERIVE_COST", 0.0)           # never derived
    own = WeightedCOCO(result)
    monkeypatch.setattr(plans, "_DERIVE_COST", 1e9)           # always, when it can be
    derived = WeightedCOCO(result)
    assert derived._plan.precision[100].hi_more and not own._plan.precision[100].hi_more
    twice = len(derived._plan.precision[100].nf_img) - len(own._plan.precision[100].nf_img)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        w = rng.integers(0, 4, own.n_images)
        assert np.array_equal(np.asarray(derived.numbers(w)).view(np.int64),
                              np.asarray(own.numbers(w)).view(np.int64))
    if seed == 0:
        assert twice > 0                    # rows on 32**2 or 96**2 exactly: counted twice


def test_every_row_list_is_kept_when_a_row_is_in_no_other_range():
    """Size ranges that leave some rows out of every other area: "all" keeps its own list."""
    gt, dt = make_dataset(44, n_images=5, n_categories=2)
    result = deteval.evaluate_coco(gt, dt, area_ranges=((0, 1e10), (0, 400), (2000, 1e10)),
                                   area_labels=("all", "small", "large"))
    weighted = WeightedCOCO(result)
    assert not weighted._plan.precision[100].hi_more
    assert np.array_equal(weighted.estimates[:len(result.stats)], result.stats)
