"""The weighted COCO accumulation's layouts (deteval.diagnostics._bootstrap_plans): each
shortcut a resample takes gives the floats of the plain computation it replaces, bit for bit
(the end-to-end equality with evaluate_coco is in tests/test_bootstrap.py)."""

from __future__ import annotations

import numpy as np
import pytest
from cocogen import make_dataset
from scenes import CAT, box, scene

import deteval
from deteval.diagnostics import _bootstrap_lrp
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
    src, back, blocks = _bootstrap_lrp.padded_rows(bounds)
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
        plan.curves(w)          # the TP + FP count at each run's end (a segment's largest too)
        counted = precision._work.arrays["counted"][:len(precision.run_end)]
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


def _run_scene():
    """One category over three images, scored so that in each image's segment the TP events
    are separated by: a crowd region's match (ignored: no counted row), a detection of area
    exactly 32**2 or 96**2 (in two size ranges: counted twice by the small/medium/large lists
    "all" sums, once taken off), and a detection too large for the small range matching a
    small object (a TP out of range); and one FP that ends a run."""
    objects, detections = [], []
    for image in range(3):
        x = 10.0 + 300 * (image % 2)
        objects += [(image, CAT, box(x, 10, 32)), (image, CAT, box(x, 100, 96)),
                    (image, CAT, box(x, 250, 200), True), (image, CAT, box(x + 150, 10, 31)),
                    (image, CAT, box(x + 150, 60, 20))]
        s = 0.9 - 0.01 * image
        detections += [(image, CAT, box(x, 10, 32), s), (image, CAT, box(x + 5, 260, 50), s - .1),
                       (image, CAT, box(x, 100, 96), s - .2),
                       (image, CAT, box(x + 150, 10, 40), s - .3),
                       (image, CAT, box(x + 400, 400, 30), s - .4),
                       (image, CAT, box(x + 150, 60, 20), s - .5)]
    return scene(objects, detections, n_images=3)


def _result_of(case):
    """The scene's evaluation, or a generated set's (seed ``case``)."""
    if case == "scene":
        return deteval.evaluate_coco(*_run_scene())
    return deteval.evaluate_coco(*make_dataset(case, n_images=8, n_categories=3, p_many=0.2))


def _merged_and_plain(result, monkeypatch):
    """The merged and the plain plans of ``result``; the numbers taken from the precision
    grid (the recall-threshold sums of runs and of events are the same terms grouped
    otherwise: tests/test_bootstrap_sums.py compares them within 1e-12)."""
    monkeypatch.setattr(plans, "SUM_RECALL", False)
    monkeypatch.setattr(plans, "MERGE_RUNS", False)
    plain = WeightedCOCO(result)
    monkeypatch.setattr(plans, "MERGE_RUNS", True)
    return WeightedCOCO(result), plain


def _bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).view(np.int64)


@pytest.mark.parametrize("case", ["scene", 50, 51, 52, 53])
def test_merged_runs_give_the_numbers_of_one_run_per_event(case, monkeypatch):
    """The TP events merged into runs (docs §13): every number of every resample (zero
    weights included) is that of the plain computation with one run per TP event, bit for
    bit, on a scene with runs across ignored matches, size-boundary rows and out-of-range
    TPs, and on generated sets (crowds, ignore flags, many detections per image)."""
    result = _result_of(case)
    merged, plain = _merged_and_plain(result, monkeypatch)
    events = merged._plan.precision[100]
    assert len(plain._plan.precision[100].run_end) == len(events.tp_img)
    assert len(events.run_end) < len(events.tp_img)          # some runs were merged
    rng = np.random.default_rng(7)
    rows = [np.ones(merged.n_images, np.int64)]
    rows += [rng.integers(0, 4, merged.n_images) * (rng.random(merged.n_images) < 0.7)
             for _ in range(8)]
    rows.append(rng.integers(0, 2**22, merged.n_images))    # int64 counts, searched units
    for w in rows:
        assert np.array_equal(_bits(merged.numbers(w)), _bits(plain.numbers(w)))
    assert np.array_equal(_bits(merged.estimates), _bits(result.stats.tolist()
                                                         + merged.estimates[12:].tolist()))


def test_runs_cross_ignored_matches_boundary_rows_and_out_of_range_true_positives(
        monkeypatch):
    """In the scene (accumulation order: by score across the images), the TP events before
    the three FPs are one run, across the crowd matches and the rows of area 32**2 ("all"
    reading the small, medium and large lists, which count them twice); at area "small" the
    out-of-range TPs continue the run of the TPs before them."""
    result = deteval.evaluate_coco(*_run_scene())
    monkeypatch.setattr(plans, "_DERIVE_COST", 1e9)           # "all" reads the other lists
    merged, plain = _merged_and_plain(result, monkeypatch)
    events = merged._plan.precision[100]
    assert events.hi_more                                     # rows counted twice, taken off
    assert result.params.area_labels[:2] == ("all", "small")
    n_t, n_k = len(result.params.iou_thresholds), merged.ctx.n_k
    small = n_t * n_k                           # segments (all | small, IoU 0.5, cat)
    assert (events.counts[0], events.run_counts[0]) == (12, 2)
    assert (events.counts[small], events.run_counts[small]) == (9, 2)
    w = np.array([2, 0, 3])
    assert np.array_equal(_bits(merged.numbers(w)), _bits(plain.numbers(w)))


@pytest.mark.parametrize("case", ["scene", 54])
def test_counts_of_kept_events_are_those_of_each_event(case, monkeypatch):
    """The per-event TP and TP + FP counts curve returns (oLRP's) are expanded from the runs'
    ends: they equal those computed event by event, for every TP event, under any weights."""
    result = _result_of(case)
    merged, plain = _merged_and_plain(result, monkeypatch)
    a, b = merged._plan.precision[100], plain._plan.precision[100]
    n = len(a.tp_img)
    a.keep_events(0, n)
    b.keep_events(0, n)
    rng = np.random.default_rng(3)
    for _ in range(6):
        w = rng.integers(0, 4, merged.n_images).astype(np.int32)
        npig = merged._plan.positives(w)
        got = [x.copy() for x in a.curve(w, npig, merged._plan.thresholds_r)[2]]
        expected = b.curve(w, npig, plain._plan.thresholds_r)[2]
        for x, y in zip(got, expected):
            assert x.dtype == y.dtype and np.array_equal(x, y)
