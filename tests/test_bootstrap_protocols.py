"""Bootstrap intervals of LVIS, CrowdPose and Open Images results
(deteval/diagnostics/bootstrap_lvis.py, bootstrap_crowdpose.py, bootstrap_openimages.py;
docs/diagnostics/bootstrap.md §13): the identity resample gives each protocol's own numbers
bit for bit, and random integer weights give the numbers of the protocol run on the data set
that holds each image that many times, built explicitly (scores made distinct: ties inside
one image are the documented difference)."""

from __future__ import annotations

import copy
import json

import numpy as np
import oidgen
import pytest
from clirun import run as _run
from crowdposegen import make_crowdpose_dataset, write_pair
from lvisgen import make_lvis_dataset

import deteval
from deteval.diagnostics import _bootstrap_plans as plans
from deteval.diagnostics.bootstrap_crowdpose import bootstrap_crowdpose
from deteval.diagnostics.bootstrap_lvis import bootstrap_lvis
from deteval.diagnostics.bootstrap_openimages import bootstrap_openimages


def _distinct(results: list) -> list:
    results = copy.deepcopy(results)
    for i, r in enumerate(results):
        r["score"] = round(r["score"], 2) + i * 1e-7
    return results


def _copies(gt: dict, results: list, weights: dict, *, list_keys=()) -> tuple[dict, list]:
    """The COCO-style data set holding image ``i`` ``weights[id]`` times: copy ``c`` of image
    ``x`` gets id ``x * 100 + c`` (copies sort together, in order)."""
    out = {k: v for k, v in gt.items() if k not in ("images", "annotations")}
    out["images"], out["annotations"] = [], []
    new_results, next_id = [], 1
    for image in gt["images"]:
        for c in range(weights[image["id"]]):
            out["images"].append(dict(image, id=image["id"] * 100 + c))
    for c_max in range(max(weights.values(), default=0)):
        for a in gt["annotations"]:
            if c_max < weights[a["image_id"]]:
                out["annotations"].append(dict(a, id=next_id,
                                               image_id=a["image_id"] * 100 + c_max))
                next_id += 1
        for r in results:
            if c_max < weights[r["image_id"]]:
                new_results.append(dict(r, image_id=r["image_id"] * 100 + c_max))
    return out, new_results


def _random_copies(gt: dict, results: list, seed: int) -> tuple[np.ndarray, tuple]:
    """Random weights 0-3 per image (sorted ids; the first image at least once) and the
    data set holding each image that many times."""
    ids = sorted(image["id"] for image in gt["images"])
    w = np.random.default_rng(seed).integers(0, 4, len(ids))
    w[0] = max(w[0], 1)
    return w, _copies(gt, results, dict(zip(ids, w.tolist())))


# ------------------------------------------------------------------------------------ LVIS

@pytest.mark.parametrize("seed", range(6))
def test_lvis_identity_is_the_evaluation(seed):
    gt, results = make_lvis_dataset(seed)
    result = deteval.evaluate_lvis(gt, results)
    ones = np.ones((1, len(gt["images"])), dtype=np.int64)
    boot = bootstrap_lvis(result, weights=ones)
    expected = list(result.stats) + [row["AP"] for row in result.per_class()]
    assert boot.estimates.tolist() == expected
    assert np.array_equal(boot.samples[0], np.where(np.asarray(expected) < 0, np.nan,
                                                    expected), equal_nan=True)
    assert boot.names[:13] == result.stat_names


@pytest.mark.parametrize("sum_recall", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_lvis_weights_equal_the_duplicated_data_set(seed, sum_recall, monkeypatch):
    """Bit for bit on the precision grid (``SUM_RECALL = False``); with the recall-threshold
    sums (the default) the AP-type numbers within 1e-12, the AR ones bit for bit (§3)."""
    monkeypatch.setattr(plans, "SUM_RECALL", sum_recall)
    gt, results = make_lvis_dataset(seed, p_crowded_image=0.0)
    results = _distinct(results)
    result = deteval.evaluate_lvis(gt, results)
    w, copies = _random_copies(gt, results, seed)
    explicit = deteval.evaluate_lvis(*copies)
    boot = bootstrap_lvis(result, weights=w[None, :])
    expected = np.array(list(explicit.stats) + [row["AP"] for row in explicit.per_class()])
    got = np.where(np.isnan(boot.samples[0]), -1.0, boot.samples[0])
    if sum_recall:
        ap_type = np.array([not name.startswith("AR") for name in boot.names])
        np.testing.assert_allclose(got[ap_type], expected[ap_type], rtol=0, atol=1e-12)
        got[ap_type] = expected[ap_type]
    assert got.tolist() == expected.tolist()


# ------------------------------------------------------------------------------- CrowdPose

@pytest.mark.parametrize("seed", range(6))
def test_crowdpose_identity_is_the_evaluation(seed):
    gt, results = make_crowdpose_dataset(seed, n_images=6)
    result = deteval.evaluate_crowdpose(gt, results)
    boot = bootstrap_crowdpose(result, weights=np.ones((1, len(gt["images"])), np.int64))
    expected = list(result.stats) + [row["AP"] for row in result.per_class()]
    assert boot.estimates.tolist() == expected


@pytest.mark.parametrize("seed", range(4))
def test_crowdpose_weights_equal_the_duplicated_data_set(seed):
    gt, results = make_crowdpose_dataset(seed, n_images=5)
    results = _distinct(results)
    result = deteval.evaluate_crowdpose(gt, results)
    w, copies = _random_copies(gt, results, seed)
    explicit = deteval.evaluate_crowdpose(*copies)
    boot = bootstrap_crowdpose(result, weights=w[None, :])
    expected = list(explicit.stats) + [row["AP"] for row in explicit.per_class()]
    got = np.where(np.isnan(boot.samples[0]), -1.0, boot.samples[0])
    # a split's negative mean (xtcocotools averages the -1 of a category without objects
    # in it) is undefined in the samples
    assert got.tolist() == [e if e >= 0 else -1.0 for e in expected]


# ----------------------------------------------------------------------------- Open Images

def _oid(g, lab, d, hierarchy, classes):
    gt, labels, dt = oidgen.to_objects(g, lab, d)
    return deteval.evaluate_openimages(gt, dt, image_labels=labels, hierarchy=hierarchy,
                                       classes=classes)


@pytest.mark.parametrize("seed", range(8))
def test_openimages_identity_is_the_evaluation(seed):
    g, lab, d, h, classes = oidgen.make_problem(seed)
    for hierarchy in (None, h):
        result = _oid(g, lab, d, hierarchy, classes)
        boot = bootstrap_openimages(result, weights=np.ones((1, len(result.image_ids)),
                                                            np.int64))
        expected = np.r_[result.mean_ap, result.ap]
        assert np.array_equal(boot.samples[0], expected, equal_nan=True)
        assert boot.names == ("mAP",) + tuple(f"AP[{c}]" for c in classes)


@pytest.mark.parametrize("seed", range(6))
def test_openimages_weights_equal_the_duplicated_files(seed):
    g, lab, d, h, classes = oidgen.make_problem(seed)
    d = [r[:2] + (round(r[2], 2) + i * 1e-7,) + r[3:] for i, r in enumerate(d)]
    result = _oid(g, lab, d, h, classes)
    images = result.image_ids.tolist()
    w = dict(zip(images, np.random.default_rng(seed).integers(0, 4, len(images)).tolist()))

    def copies(rows):
        return [(f"{r[0]}_{c}",) + tuple(r[1:]) for c in range(4) for r in rows
                if c < w.get(r[0], 0)]

    explicit = _oid(copies(g), copies(lab), copies(d), h, classes)
    boot = bootstrap_openimages(result, weights=np.array([[w[i] for i in images]]))
    assert np.array_equal(boot.samples[0, 1:], explicit.ap, equal_nan=True)
    assert boot.samples[0, 0] == explicit.mean_ap or np.isnan(explicit.mean_ap)


# ------------------------------------------------------------------------ errors and CLI

def test_errors():
    gt, results = make_lvis_dataset(0)
    result = deteval.evaluate_lvis(gt, results)
    with pytest.raises(ValueError, match="weights must have shape"):
        bootstrap_lvis(result, weights=np.ones((2, 1), np.int64))
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_lvis(result, n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_crowdpose(deteval.evaluate_crowdpose(*make_crowdpose_dataset(0)),
                            confidence=1.0)


def test_settings_checked_alike():
    """One check of the settings for every protocol: a bool is no number of resamples (COCO
    took True as 1 before), and LVIS refuses recall thresholds out of order as COCO does."""
    from deteval.diagnostics.bootstrap import bootstrap_coco

    gt, results = make_lvis_dataset(0)
    lvis = deteval.evaluate_lvis(gt, results)
    coco_gt = {k: v for k, v in gt.items() if k != "images"}
    coco_gt["images"] = [{"id": image["id"]} for image in gt["images"]]
    coco = deteval.evaluate_coco(coco_gt, results)
    crowdpose = deteval.evaluate_crowdpose(*make_crowdpose_dataset(0))
    for run, result in ((bootstrap_lvis, lvis), (bootstrap_crowdpose, crowdpose),
                        (bootstrap_coco, coco)):
        with pytest.raises(ValueError, match="n_resamples"):
            run(result, n_resamples=True)
    reversed_r = tuple(np.linspace(1.0, 0.0, 11).tolist())
    with pytest.raises(ValueError, match="increasing"):
        bootstrap_lvis(deteval.evaluate_lvis(gt, results, recall_thresholds=reversed_r),
                       n_resamples=2)


def test_same_seed_same_samples():
    gt, results = make_lvis_dataset(1)
    result = deteval.evaluate_lvis(gt, results)
    a = bootstrap_lvis(result, n_resamples=15, seed=3)
    b = bootstrap_lvis(result, n_resamples=15, seed=3)
    assert np.array_equal(a.samples, b.samples, equal_nan=True)
    defined = a.n_defined > 0
    assert (a.low[defined] <= a.high[defined]).all()


@pytest.mark.parametrize("protocol", ["lvis", "crowdpose", "openimages"])
def test_threads_give_the_same_samples(protocol, tmp_path):
    """Resamples computed on 1 and 3 threads: the same numbers bit for bit, in the seed's
    order (more resamples than one block of threads takes at a time)."""
    if protocol == "lvis":
        result, bootstrap = deteval.evaluate_lvis(*make_lvis_dataset(3)), bootstrap_lvis
    elif protocol == "crowdpose":
        result = deteval.evaluate_crowdpose(*make_crowdpose_dataset(3, n_images=5))
        bootstrap = bootstrap_crowdpose
    else:
        args, kwargs = oidgen.write_problem(tmp_path)
        result, bootstrap = deteval.evaluate_openimages(*args, **kwargs), bootstrap_openimages
    one = bootstrap(result, n_resamples=70, seed=1, threads=1)
    three = bootstrap(result, n_resamples=70, seed=1, threads=3)
    assert np.array_equal(one.samples, three.samples, equal_nan=True)
    assert np.array_equal(one.low, three.low, equal_nan=True)
    assert one.to_dict() == json.loads(json.dumps(three.to_dict()))
    with pytest.raises(ValueError, match="threads"):
        bootstrap(result, n_resamples=2, threads=0)


def test_cli_ci_of_each_protocol(tmp_path):
    gt, results = make_lvis_dataset(2)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    out_json = tmp_path / "lvis.json"
    status, out, _ = _run("lvis", tmp_path / "gt.json", tmp_path / "dt.json", "--ci", 20,
                          "--seed", 4, "--json", out_json)
    assert status == 0 and "95% interval" in out
    expected = bootstrap_lvis(deteval.evaluate_lvis(gt, results), n_resamples=20, seed=4)
    assert json.loads(out_json.read_text())["intervals"] == json.loads(json.dumps(
        expected.to_dict()))

    cp_gt, cp_dt = write_pair(tmp_path, *make_crowdpose_dataset(1, n_images=4))
    status, out, _ = _run("crowdpose", cp_gt, cp_dt, "--ci", 10, "--json", out_json)
    assert status == 0 and "AP_hard" in out.split("95% interval")[1]
    assert "intervals" in json.loads(out_json.read_text())

    (boxes, dets), options = oidgen.write_problem(tmp_path)
    status, out, _ = _run("openimages", boxes, dets, "--labels", options["image_labels"],
                          "--ci", 10, "--confidence", 0.9, "--json", out_json)
    assert status == 0 and "90% interval" in out
    assert json.loads(out_json.read_text())["intervals"]["confidence"] == 0.9
