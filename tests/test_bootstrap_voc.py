"""Bootstrap intervals of VOC results (deteval.diagnostics.bootstrap_voc): the weighted curves
against evaluate_voc itself, on the evaluation (all weights 1) and on data sets that hold each
image as many times as its weight says; compare_voc on the shared paired machinery."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
from cocogen import make_dataset

import deteval
from deteval.diagnostics.bootstrap import WeightedCOCO
from deteval.diagnostics.bootstrap_voc import WeightedVOC, bootstrap_voc
from deteval.diagnostics.compare import compare_voc

PRESETS = {
    "VOC2007": deteval.VOC2007,
    "VOC2012": deteval.VOC2012,
    "DETECTRON2_VOC2007": deteval.DETECTRON2_VOC2007,
    "DETECTRON2_VOC2012": deteval.DETECTRON2_VOC2012,
    "coco101-continuous": dataclasses.replace(deteval.VOC2012, ap_method="coco101",
                                              inclusive_pixels=False),
}


def _scene(seed: int, **options) -> tuple[dict, list]:
    """A cocogen set with difficult objects (``ignore``, crowds), an extra class without
    objects but with detections, and scores on a coarse grid (ties) unless distinct."""
    distinct = options.pop("distinct", False)
    gt, dt = make_dataset(seed, **options)
    rng = np.random.default_rng(seed)
    gt = copy.deepcopy(gt)
    for ann in gt["annotations"]:
        if rng.random() < 0.2:
            ann["ignore"] = 1
    extra = max(c["id"] for c in gt["categories"]) + 1
    gt["categories"].append({"id": extra, "name": "empty"})
    image_ids = [image["id"] for image in gt["images"]]
    dt = dt + [{"image_id": int(rng.choice(image_ids)), "category_id": extra,
                "bbox": [1.0, 1.0, 10.0, 10.0], "score": 0.5} for _ in range(2)]
    if distinct:
        scores = (rng.permutation(len(dt)) + 1) / (len(dt) + 1)
    else:
        scores = rng.integers(1, 8, len(dt)) / 8
    return gt, [dict(d, score=float(s)) for d, s in zip(dt, scores)]


def _duplicated(gt: dict, dt: list, image_ids: list, weights: np.ndarray, *,
                interleaved: bool = False) -> tuple[dict, list]:
    """The data set holding image i weights[i] times. Each detection's copies are listed one
    after the other, or, ``interleaved``, copy after copy of the whole list."""
    times = dict(zip(image_ids, weights.tolist()))
    out = {k: v for k, v in gt.items() if k not in ("images", "annotations")}
    out["images"] = [dict(im, id=im["id"] * 1000 + c) for im in gt["images"]
                     for c in range(times.get(im["id"], 0))]
    out["annotations"] = [dict(copy.deepcopy(ann), image_id=ann["image_id"] * 1000 + c)
                          for ann in gt["annotations"]
                          for c in range(times.get(ann["image_id"], 0))]
    for i, ann in enumerate(out["annotations"]):
        ann["id"] = i + 1
    if interleaved:
        most = max(times.values(), default=0)
        results = [dict(d, image_id=d["image_id"] * 1000 + c) for c in range(most)
                   for d in dt if c < times.get(d["image_id"], 0)]
    else:
        results = [dict(d, image_id=d["image_id"] * 1000 + c) for d in dt
                   for c in range(times.get(d["image_id"], 0))]
    return out, results


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_identity_weights_equal_evaluate_voc_bit_for_bit(seed, preset):
    gt, dt = _scene(seed, n_images=5, n_categories=3)
    result = deteval.evaluate_voc(gt, dt, params=PRESETS[preset])
    weighted = WeightedVOC(result)
    ap, per_threshold = weighted.ap(np.ones(weighted.n_images, np.int64))
    assert np.array_equal(ap, result.ap, equal_nan=True)
    assert np.array_equal(per_threshold, result.map, equal_nan=True)
    # The numbers: mAP, mAP@t with several thresholds, the per-class AP (mean over the
    # thresholds); NaN (a class without objects) is -1.
    n_t = len(result.params.iou_thresholds)
    head = [result.mean_ap] + (result.map.tolist() if n_t > 1 else [])
    classes = np.mean(result.ap, axis=0)
    expected = np.array(head + classes.tolist())
    expected[np.isnan(expected)] = -1
    assert np.array_equal(weighted.estimates, expected)
    assert weighted.names[len(head):] == tuple(f"AP[{n}]" for n in result.category_names)


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("seed", range(4))
def test_weights_equal_evaluating_the_duplicated_data_set(seed, preset):
    # Tied scores included: each detection's copies follow one another, as the weighted
    # curves repeat them.
    gt, dt = _scene(10 + seed, n_images=5, n_categories=3, p_many=0.05)
    params = PRESETS[preset]
    result = deteval.evaluate_voc(gt, dt, params=params)
    weighted = WeightedVOC(result)
    image_ids = list(result.params.image_ids)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        weights = rng.integers(0, 4, len(image_ids))
        weights[rng.integers(len(image_ids))] += 1
        expected = deteval.evaluate_voc(*_duplicated(gt, dt, image_ids, weights),
                                        params=params)
        ap, per_threshold = weighted.ap(weights)
        assert np.array_equal(ap, expected.ap, equal_nan=True), weights
        assert np.array_equal(per_threshold, expected.map, equal_nan=True), weights
        got = np.asarray(weighted.numbers(weights))
        assert got[0] == expected.mean_ap or np.isnan(expected.mean_ap) and np.isnan(got[0])


@pytest.mark.parametrize("preset", ["VOC2007", "VOC2012", "DETECTRON2_VOC2012"])
def test_distinct_scores_equal_the_copies_listed_copy_after_copy(preset):
    gt, dt = _scene(21, n_images=6, n_categories=2, distinct=True)
    params = dataclasses.replace(PRESETS[preset], round_detections=False)
    result = deteval.evaluate_voc(gt, dt, params=params)
    weighted = WeightedVOC(result)
    image_ids = list(result.params.image_ids)
    for weights in np.random.default_rng(5).integers(0, 4, (3, len(image_ids))):
        expected = deteval.evaluate_voc(
            *_duplicated(gt, dt, image_ids, weights, interleaved=True), params=params)
        assert np.array_equal(weighted.ap(weights)[0], expected.ap, equal_nan=True)


def test_tied_scores_of_copies_listed_copy_after_copy_can_differ():
    """docs/diagnostics/bootstrap.md §12: a TP and an FP of one image tied in score. Drawn
    twice, the weighted curve is TP TP FP FP; the copies listed copy after copy rank
    TP FP TP FP."""
    gt = {"images": [{"id": 1, "width": 50, "height": 50}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": i + 1, "image_id": 1, "category_id": 1,
                           "bbox": [20 * i, 0, 9, 9], "area": 81, "iscrowd": 0}
                          for i in range(2)]}
    dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 9, 9], "score": 0.5},
          {"image_id": 1, "category_id": 1, "bbox": [30, 30, 9, 9], "score": 0.5}]
    result = deteval.evaluate_voc(gt, dt)
    twice = np.array([2])
    in_place = deteval.evaluate_voc(*_duplicated(gt, dt, [1], twice))
    interleaved = deteval.evaluate_voc(*_duplicated(gt, dt, [1], twice, interleaved=True))
    got = WeightedVOC(result).ap(twice)[0]
    assert np.array_equal(got, in_place.ap)
    assert got[0, 0] == 0.5 and interleaved.ap[0, 0] < 0.5


def test_one_identity_resample_collapses_the_interval():
    gt, dt = _scene(31, n_images=5, n_categories=2)
    result = deteval.evaluate_voc(gt, dt, params=deteval.DETECTRON2_VOC2012)
    ones = np.ones((1, len(result.params.image_ids)), dtype=np.int64)
    ci = bootstrap_voc(result, weights=ones)
    defined = ci.estimates >= 0
    assert ci.n_resamples == 1 and ci.score_threshold is None
    assert np.array_equal(ci.low[defined], ci.estimates[defined])
    assert np.array_equal(ci.high[defined], ci.estimates[defined])
    assert np.isnan(ci.low[~defined]).all()
    assert ci.estimate("AP[empty]") == -1           # NaN in the evaluation


def test_intervals_repeat_with_the_seed_and_hold_the_estimate():
    gt, dt = make_dataset(32, n_images=20, n_categories=2, max_gt=6, max_dt=10)
    result = deteval.evaluate_voc(gt, dt, params=deteval.VOC2007)
    first = bootstrap_voc(result, n_resamples=60, seed=3)
    again = bootstrap_voc(result, n_resamples=60, seed=3)
    other = bootstrap_voc(result, n_resamples=60, seed=4)
    assert np.array_equal(first.samples, again.samples, equal_nan=True)
    assert not np.array_equal(first.samples, other.samples, equal_nan=True)
    assert first.samples.shape == (60, 1 + len(result.category_ids))
    assert first.low[0] <= result.map[0] <= first.high[0]
    data = first.to_dict()
    assert data["score_threshold"] is None
    assert [row["name"] for row in data["intervals"]] == list(first.names)


def test_resamples_draw_the_images_bootstrap_coco_draws():
    """The same seed draws the same images for a COCO and a VOC evaluation of one ground
    truth (the columns differ: COCO's are sorted by id, VOC's in the ground truth's order)."""
    gt, dt = make_dataset(33, n_images=6)
    voc = deteval.evaluate_voc(gt, dt)
    coco = deteval.evaluate_coco(gt, dt)
    for w_voc, w_coco in zip(WeightedVOC(voc).resamples(5, 7, None),
                             WeightedCOCO(coco).resamples(5, 7, None)):
        assert dict(zip(voc.params.image_ids, w_voc.tolist())) == dict(
            zip(coco.params.image_ids, w_coco.tolist()))


def test_images_not_in_the_ground_truth_get_no_weight():
    gt, dt = make_dataset(34, n_images=4)
    ids = [image["id"] for image in gt["images"]]
    result = deteval.evaluate_voc(gt, dt, image_ids=(*ids, max(ids) + 1))
    rows = list(WeightedVOC(result).resamples(5, 0, None))
    assert all(len(w) == len(ids) + 1 and w[-1] == 0 and w.sum() == len(ids) for w in rows)


def test_bad_arguments_are_refused():
    gt, dt = make_dataset(35, n_images=3)
    result = deteval.evaluate_voc(gt, dt)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_voc(result, n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_voc(result, confidence=1.0)
    with pytest.raises(ValueError, match="shape"):
        bootstrap_voc(result, weights=np.ones((2, 99), dtype=int))
    with pytest.raises(ValueError, match="non-negative integers"):
        bootstrap_voc(result, weights=-np.ones((1, 3), dtype=int))
    streamed = deteval.Evaluator(gt, protocol="voc2012", unknown_labels="drop")
    streamed.update(dt)
    with pytest.raises(ValueError, match="match table"):
        bootstrap_voc(streamed.compute())


def test_compare_voc_pairs_the_resamples_of_bootstrap_voc():
    gt, dt = _scene(36, n_images=8, n_categories=2)
    a = deteval.evaluate_voc(gt, dt)
    b = deteval.evaluate_voc(gt, [d for d in dt if d["score"] >= 0.4])
    c = compare_voc([a, b], n_resamples=40, seed=2, models=["a", "b"])
    for model, result in zip(c.intervals, (a, b)):
        alone = bootstrap_voc(result, n_resamples=40, seed=2)
        assert np.array_equal(model.samples, alone.samples, equal_nan=True)
    diffs = c.intervals[1].samples - c.intervals[0].samples
    ok = ~np.isnan(diffs).all(axis=0)
    assert np.array_equal(c.low[0][ok], np.nanpercentile(diffs[:, ok], 2.5, axis=0))
    assert np.isnan(c.low[0][~ok]).all() and (~ok).sum() == 1     # AP[empty]: no objects
    assert c.difference_of(1, "mAP") == float(b.map[0] - a.map[0])
    same = compare_voc([a, a], n_resamples=20, seed=0)
    assert same.difference_of(1, "mAP") == 0.0 and same.p_value_of(1, "mAP") == 1.0
    with pytest.raises(ValueError, match="same ones"):
        compare_voc([a, deteval.evaluate_voc(gt, dt, params=deteval.VOC2007)], n_resamples=5)


@pytest.mark.parametrize("preset", ["VOC2007", "VOC2012"])
def test_every_threads_value_gives_the_same_samples(preset):
    """bootstrap_voc and compare_voc on 1, 2 or 3 threads, across blocks of rows: the same
    samples in the seed's order (the sampled 11-point rule and the all-points expansion)."""
    gt, dt = _scene(37, n_images=8, n_categories=2)
    a = deteval.evaluate_voc(gt, dt, params=getattr(deteval, preset))
    b = deteval.evaluate_voc(gt, [d for d in dt if d["score"] >= 0.4],
                             params=getattr(deteval, preset))
    n = 3 * 16 + 5
    one = bootstrap_voc(a, n_resamples=n, seed=4, threads=1)
    pair = compare_voc([a, b], n_resamples=n, seed=4, threads=1)
    for threads in (2, 3):
        assert np.array_equal(bootstrap_voc(a, n_resamples=n, seed=4, threads=threads).samples,
                              one.samples, equal_nan=True)
        again = compare_voc([a, b], n_resamples=n, seed=4, threads=threads)
        assert np.array_equal(again.intervals[1].samples, pair.intervals[1].samples,
                              equal_nan=True)
