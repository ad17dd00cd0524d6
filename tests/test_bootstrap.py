"""Bootstrap intervals (deteval.diagnostics.bootstrap): the weighted accumulation against
evaluate_coco itself, on the evaluation (all weights 1) and on data sets that hold each image
as many times as its weight says."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from cocogen import make_dataset

import deteval
from deteval.diagnostics import _bootstrap_plans as plans
from deteval.diagnostics.bootstrap import (
    F1_NAME,
    OLRP_NAME,
    WeightedCOCO,
    bootstrap_coco,
    percentile_interval,
    resample_weights,
)
from deteval.diagnostics.compare import compare_coco

#: (seed, make_dataset options, evaluate_coco options): quirky sets, pooled categories,
#: other max-detections, thresholds and area ranges.
CASES = [
    (1, {}, {}),
    (2, {"p_many": 0.3, "n_images": 4}, {}),
    (3, {"n_images": 6, "n_categories": 3}, {"use_categories": False}),
    (4, {"n_images": 5, "n_categories": 3}, {"max_detections": (1, 3, 5)}),
    (5, {"n_images": 5}, {"iou_thresholds": (0.5, 0.75)}),
    (6, {"n_images": 5}, {"area_ranges": ((0, 1e10), (0, 400), (400, 1e10)),
                          "area_labels": ("all", "small", "large")}),
    (7, {"n_images": 5}, {"max_detections": (1, 10, 10, 100)}),
    # No "all" range: the stats reading it are -1, as summarize_value's empty selection.
    (8, {"n_images": 6, "p_many": 0.3}, {"area_ranges": ((0, 400), (400, 1e10)),
                                         "area_labels": ("small", "large")}),
]


@pytest.mark.parametrize("seed, make, options", CASES)
def test_identity_weights_equal_evaluate_coco_bit_for_bit(seed, make, options):
    gt, dt = make_dataset(seed, **make)
    result = deteval.evaluate_coco(gt, dt, **options)
    weighted = WeightedCOCO(result)
    n_stats = len(result.stats)
    # One name per number: the categories' own names (not COCOResult.category_names, which
    # evaluate_coco overwrites with the stat names when max_detections lacks 100).
    names = {c["id"]: c["name"] for c in gt["categories"]}
    assert weighted.names[n_stats + 2:] == tuple(
        f"AP[{names[c]}]" for c in result.params.category_ids) or not result.params.use_categories
    assert np.array_equal(weighted.estimates[:n_stats], result.stats)
    assert np.array_equal(weighted.estimates[n_stats + 2:],
                          [row["AP"] for row in result.per_class()])
    if not result.params.use_categories or 100 not in result.params.max_detections \
            or 0.5 not in result.params.iou_thresholds or "all" not in result.params.area_labels:
        assert weighted.estimates[n_stats + 1] == -1
    else:   # moLRP as deteval.lrp computes it (area "all", IoU 0.5), bit for bit
        assert weighted.estimates[n_stats + 1] == deteval.lrp(gt, dt).stats[0]


def _duplicated(gt: dict, dt: list, image_ids: list, weights: np.ndarray):
    """The data set holding image i weights[i] times (copies listed one after the other)."""
    times = dict(zip(image_ids, weights.tolist()))
    out = {k: v for k, v in gt.items() if k not in ("images", "annotations")}
    out["images"] = [dict(im, id=im["id"] * 1000 + c) for im in gt["images"]
                     for c in range(times.get(im["id"], 0))]
    out["annotations"] = []
    for ann in gt["annotations"]:
        for c in range(times.get(ann["image_id"], 0)):
            out["annotations"].append(dict(copy.deepcopy(ann), id=len(out["annotations"]) + 1,
                                           image_id=ann["image_id"] * 1000 + c))
    results = [dict(d, image_id=d["image_id"] * 1000 + c) for d in dt
               for c in range(times.get(d["image_id"], 0))]
    return out, results


def _micro_f1(result, threshold: float) -> float:
    """Micro F1 at IoU 0.5, area "all", from a result's match table and detections."""
    table, detections = result.matches, result.detections
    t = list(result.params.iou_thresholds).index(0.5)
    at = (table.match_area == 0) & (table.match_threshold == t)
    ignored_gt = table.gt_ignore[0, table.match_gt[at]]
    status = np.full(table.n_detections, "fp", dtype=object)
    status[table.match_dt[at]] = np.where(ignored_gt, "ign", "tp")
    status[(status == "fp") & table.dt_out_of_range[0]] = "ign"
    counted = table.dt_kept & (detections.scores >= threshold)
    tp = int(np.sum(counted & (status == "tp")))
    fp = int(np.sum(counted & (status == "fp")))
    positives = int(np.sum(table.gt_evaluated & ~table.gt_ignore[0]))
    return 2 * tp / (tp + fp + positives) if tp + fp + positives else -1.0


@pytest.mark.parametrize("seed", range(8))
def test_weights_equal_evaluating_the_duplicated_data_set(seed, monkeypatch):
    """On the precision grid (``SUM_RECALL = False``) bit for bit; the recall-threshold sums
    a resample takes by default are compared with it in tests/test_bootstrap_sums.py."""
    monkeypatch.setattr(plans, "SUM_RECALL", False)
    gt, dt = make_dataset(seed, n_images=5, n_categories=3, p_many=0.05)
    rng = np.random.default_rng(seed)
    # Distinct scores: within one image and category, tied detections are ordered
    # differently (docs/diagnostics/bootstrap.md §3).
    scores = (rng.permutation(len(dt)) + 1) / (len(dt) + 1)
    dt = [dict(d, score=float(s)) for d, s in zip(dt, scores)]
    result = deteval.evaluate_coco(gt, dt)
    weighted = WeightedCOCO(result, score_threshold=0.4)
    image_ids = list(result.params.image_ids)
    for _ in range(3):
        weights = rng.integers(0, 4, len(image_ids))
        weights[rng.integers(len(image_ids))] += 1
        gt2, dt2 = _duplicated(gt, dt, image_ids, weights)
        expected = deteval.evaluate_coco(gt2, dt2)
        got = np.asarray(weighted.numbers(weights))
        n_stats = len(expected.stats)
        assert np.array_equal(got[:n_stats], expected.stats), weights
        assert np.array_equal(got[n_stats + 2:], [r["AP"] for r in expected.per_class()])
        assert got[n_stats] == _micro_f1(expected, 0.4)
        # moLRP sums the IoU of a repeated detection once times its weight, the duplicated
        # set adds it once per copy: equal up to rounding.
        assert got[n_stats + 1] == pytest.approx(deteval.lrp(gt2, dt2).stats[0], rel=1e-12)


def test_one_identity_resample_collapses_the_interval():
    gt, dt = make_dataset(11, n_images=5)
    result = deteval.evaluate_coco(gt, dt)
    ones = np.ones((1, len(result.params.image_ids)), dtype=np.int64)
    ci = bootstrap_coco(result, weights=ones)
    defined = ci.estimates >= 0
    assert ci.n_resamples == 1
    assert np.array_equal(ci.low[defined], ci.estimates[defined])
    assert np.array_equal(ci.high[defined], ci.estimates[defined])
    assert ci.estimate("AP") == result.stat("AP")
    assert np.isnan(ci.low[~defined]).all()


def test_intervals_hold_the_estimate_and_repeat_with_the_seed():
    gt, dt = make_dataset(12, n_images=20, n_categories=2, max_gt=6, max_dt=10)
    result = deteval.evaluate_coco(gt, dt)
    first = bootstrap_coco(result, n_resamples=60, seed=3)
    again = bootstrap_coco(result, n_resamples=60, seed=3)
    other = bootstrap_coco(result, n_resamples=60, seed=4)
    assert np.array_equal(first.samples, again.samples, equal_nan=True)
    assert not np.array_equal(first.samples, other.samples, equal_nan=True)
    assert first.samples.shape == (60, len(first.names))
    assert first.names[:12] == result.stat_names and first.names[12:14] == (F1_NAME, OLRP_NAME)
    assert first.names[14:] == tuple(f"AP[{row['name']}]" for row in result.per_class())
    ok = first.estimates >= 0
    assert np.all(first.low[ok] <= first.high[ok])
    # The resamples' values of AP sit around the estimate.
    assert first.low[0] <= result.stats[0] <= first.high[0]


def test_images_not_in_the_ground_truth_get_no_weight():
    gt, dt = make_dataset(15, n_images=4)
    ids = [image["id"] for image in gt["images"]]
    result = deteval.evaluate_coco(gt, dt, image_ids=(*ids, max(ids) + 1))
    ci = bootstrap_coco(result, n_resamples=30, seed=0)
    assert ci.samples.shape == (30, len(ci.names))
    rows = list(WeightedCOCO(result).resamples(5, 0, None))
    assert all(len(w) == len(ids) + 1 and w[-1] == 0 and w.sum() == len(ids) for w in rows)


def test_resample_weights_are_multinomial_counts():
    rows = np.array(list(resample_weights(7, 500, seed=0)))
    assert rows.shape == (500, 7)
    assert np.all(rows.sum(axis=1) == 7)
    # Each image is drawn once per resample on average.
    assert abs(rows.mean() - 1.0) < 0.1


def test_to_dict_and_table_name_every_number():
    gt, dt = make_dataset(13, n_images=4)
    result = deteval.evaluate_coco(gt, dt)
    ci = bootstrap_coco(result, n_resamples=20, seed=0)
    data = ci.to_dict()
    assert [row["name"] for row in data["intervals"]] == list(ci.names)
    assert data["n_resamples"] == 20 and data["confidence"] == 0.95
    assert ci.table().splitlines()[1].startswith("AP ")
    with pytest.raises(KeyError, match="unknown number"):
        ci.interval("nope")


def test_bad_arguments_are_refused():
    gt, dt = make_dataset(14, n_images=3)
    result = deteval.evaluate_coco(gt, dt)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_coco(result, n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_coco(result, confidence=1.5)
    with pytest.raises(ValueError, match="shape"):
        bootstrap_coco(result, weights=np.ones((2, 99), dtype=int))
    with pytest.raises(ValueError, match="non-negative integers"):
        bootstrap_coco(result, weights=-np.ones((1, 3), dtype=int))
    streamed = deteval.Evaluator(gt)
    streamed.update(dt)
    with pytest.raises(ValueError, match="match table"):
        bootstrap_coco(streamed.compute())
    unsorted = deteval.evaluate_coco(gt, dt, recall_thresholds=(0.5, 0.1))
    with pytest.raises(ValueError, match="increasing"):
        bootstrap_coco(unsorted)


def _distinct_within_groups(dt: list) -> list:
    """Scores distinct within each (image, category) and tied across them (k / 10 for the
    k-th detection of a group): the weighted accumulation then equals the duplicated data
    set exactly (docs/diagnostics/bootstrap.md §3), ties across images included."""
    seen: dict = {}
    out = []
    for d in dt:
        k = seen[d["image_id"], d["category_id"]] = seen.get((d["image_id"], d["category_id"]),
                                                             0) + 1
        out.append(dict(d, score=1.0 - k / 1000))
    return out


@pytest.mark.parametrize("sum_recall", [False, True])
def test_seeded_intervals_equal_evaluating_each_resampled_data_set(sum_recall, monkeypatch):
    """bootstrap_coco with a seed against evaluate_coco run on each resample's data set (each
    image held as many times as it is drawn): every number of every resample, and so the
    intervals, equal; oLRP up to rounding (§3). With the recall-threshold sums (the default)
    the AP-type numbers within 1e-12 (§3), the others bit for bit."""
    monkeypatch.setattr(plans, "SUM_RECALL", sum_recall)
    gt, dt = make_dataset(21, n_images=6, n_categories=3, p_many=0.05)
    dt = _distinct_within_groups(dt)
    result = deteval.evaluate_coco(gt, dt)
    ci = bootstrap_coco(result, n_resamples=6, seed=5, score_threshold=0.9)
    image_ids = list(result.params.image_ids)
    rows = list(WeightedCOCO(result).resamples(6, 5, None))
    literal = []
    for weights in rows:
        expected = deteval.evaluate_coco(*_duplicated(gt, dt, image_ids, weights))
        gt2, dt2 = _duplicated(gt, dt, image_ids, weights)
        literal.append([*expected.stats, _micro_f1(expected, 0.9), deteval.lrp(gt2, dt2).stats[0],
                        *[r["AP"] for r in expected.per_class()]])
    literal = np.array(literal)
    n_stats = len(result.stats)
    olrp = n_stats + 1
    np.testing.assert_allclose(ci.samples[:, olrp], literal[:, olrp], rtol=1e-12)
    literal[:, olrp] = ci.samples[:, olrp]
    literal[literal < 0] = np.nan
    if sum_recall:
        ap_type = [i for i, name in enumerate(ci.names) if name.startswith("AP")]
        np.testing.assert_allclose(ci.samples[:, ap_type], literal[:, ap_type], rtol=0,
                                   atol=1e-12)
        literal[:, ap_type] = ci.samples[:, ap_type]
    assert np.array_equal(ci.samples, literal, equal_nan=True)
    low, high, n_defined = percentile_interval(literal, 0.95)
    keep = np.arange(len(ci.names)) != olrp
    assert np.array_equal(ci.low[keep], low[keep], equal_nan=True)
    assert np.array_equal(ci.high[keep], high[keep], equal_nan=True)
    assert np.array_equal(ci.n_defined, n_defined)


def test_every_threads_value_gives_the_same_samples():
    """Resamples run on 1, 2 or 3 threads (more rows than one block of each, so that blocks
    are crossed): the same samples, in the seed's order; compare_coco too."""
    gt, dt = make_dataset(22, n_images=8, n_categories=2)
    result = deteval.evaluate_coco(gt, dt)
    other = deteval.evaluate_coco(gt, [d for d in dt if d["score"] > 0.3])
    n = 3 * 16 + 5
    one = bootstrap_coco(result, n_resamples=n, seed=9, threads=1)
    pair = compare_coco([result, other], n_resamples=n, seed=9, threads=1)
    for threads in (2, 3):
        assert np.array_equal(bootstrap_coco(result, n_resamples=n, seed=9,
                                             threads=threads).samples,
                              one.samples, equal_nan=True)
        again = compare_coco([result, other], n_resamples=n, seed=9, threads=threads)
        assert np.array_equal(again.intervals[1].samples, pair.intervals[1].samples,
                              equal_nan=True)
        assert np.array_equal(again.p_value, pair.p_value, equal_nan=True)
    assert np.array_equal(pair.intervals[0].samples, one.samples, equal_nan=True)
    with pytest.raises(ValueError, match="threads"):
        bootstrap_coco(result, n_resamples=2, threads=0)


def test_weights_past_int32_counts_are_counted_in_int64():
    """Explicit weights whose counts overflow int32 (2**28 copies of each image): the counts
    go to int64, and every ratio of counts is that of weight 1 (AP50, recall, F1 exactly: a
    precision tp / (d + eps) moves by eps only where d = 1)."""
    gt, dt = make_dataset(23, n_images=5, n_categories=3)
    result = deteval.evaluate_coco(gt, dt)
    weighted = WeightedCOCO(result)
    n = len(result.params.image_ids)
    big = np.asarray(weighted.numbers(np.full(n, 2**28, np.int64)))
    ones = weighted.estimates
    np.testing.assert_allclose(big, ones, rtol=1e-12, atol=1e-14)
    recall = [i for i, name in enumerate(weighted.names) if name.startswith("AR")]
    assert np.array_equal(big[recall], ones[recall])


def test_needed_counts_from_the_table_equal_the_direct_rule():
    """The plan's table of needed TP counts (grown as counts rise, bypassed past its cap)
    gives needed_true_positives' counts (at least 1) for every count: small, growing, huge."""
    from deteval.protocols._coco_stages import needed_true_positives

    gt, dt = make_dataset(24, n_images=4, n_categories=2)
    weighted = WeightedCOCO(deteval.evaluate_coco(gt, dt))
    plan = weighted._plan.precision[100]
    thresholds = np.linspace(0.0, 1.0, 101)
    rng = np.random.default_rng(24)
    for top in (3, 50, 300, 5000, 10**6):
        npig = rng.integers(0, top + 1, size=(3, 4))
        npig[0, 0] = top
        expected = np.maximum(needed_true_positives(npig, thresholds), 1)
        assert np.array_equal(plan._needed(npig, thresholds), expected)
