"""``deteval compare`` and ``deteval coco --ci`` through ``main([...])``: identical results
files differ in nothing, a degraded copy is significantly worse, regression gates set the exit
status, the intervals reach the table and --json."""

from __future__ import annotations

import json

import pytest
from clirun import run
from comparegen import degraded

from deteval.demo import make_demo


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    gt, results = make_demo(seed=0)
    paths = {"gt": folder / "gt.json", "a": folder / "a.json", "same": folder / "same.json",
             "worse": folder / "worse.json"}
    paths["gt"].write_text(json.dumps(gt))
    paths["a"].write_text(json.dumps(results))
    paths["same"].write_text(json.dumps(results))
    paths["worse"].write_text(json.dumps(degraded(results)))
    return paths


def test_identical_files_differ_in_nothing(files, tmp_path):
    status, out, err = run("compare", files["gt"], files["a"], files["same"], "--bootstrap",
                           "100", "--fail-if-regression", "AP:0", "--json", tmp_path / "c.json")
    assert status == 0, err
    assert "same.json vs a.json" in out and "*" not in out
    data = json.loads((tmp_path / "c.json").read_text())
    rows = [r for r in data["differences"] if r["difference"] is not None]
    assert rows and all(r["difference"] == 0 and r["p_value"] == 1 for r in rows)
    assert not any(r["significant"] for r in rows)
    assert data["regressions"] == [] and data["n_resamples"] == 100


def test_a_degraded_copy_is_significantly_worse_and_fails_the_gate(files, tmp_path):
    status, out, err = run("compare", files["gt"], files["a"], files["worse"], "--bootstrap",
                           "200", "--per-class", "--fail-if-regression", "AP:0.01",
                           "--json", tmp_path / "c.json")
    assert status == 1
    assert "deteval: regression: worse.json: AP is worse than a.json's" in err
    data = json.loads((tmp_path / "c.json").read_text())
    by_name = {r["name"]: r for r in data["differences"]}
    assert by_name["AP"]["significant"] and by_name["AP"]["high"] < -0.01
    assert by_name["AP"]["p_value"] < 0.05
    assert by_name["AP"]["difference"] == pytest.approx(
        by_name["AP"]["value"] - by_name["AP"]["baseline_value"])
    assert "AP[person]" in out
    # Without a gate, or with a tolerance larger than the loss, the status is 0.
    assert run("compare", files["gt"], files["a"], files["worse"], "--bootstrap", "50")[0] == 0
    assert run("compare", files["gt"], files["a"], files["worse"], "--bootstrap", "50",
               "--fail-if-regression", "AP:0.9")[0] == 0


@pytest.mark.parametrize("argv, message", [
    (("--fail-if-regression", "AP"), "METRIC:TOLERANCE"),
    (("--fail-if-regression", "AP:-1"), "tolerance >= 0"),
    (("--fail-if-regression", "APX:0.1"), "unknown number 'APX'"),
    (("--bootstrap", "0"), "positive integer"),
    (("--bootstrap", "100001"), "at most 100,000 resamples"),
    (("--threads", "0"), "positive integer"),
])
def test_bad_options_are_usage_errors(files, argv, message):
    status, _, err = run("compare", files["gt"], files["a"], files["same"], *argv)
    assert status == 2 and message in err


def test_compare_needs_two_results_files(files):
    status, _, err = run("compare", files["gt"], files["a"])
    assert status == 2 and "at least one more results file" in err


def test_coco_ci_prints_and_writes_the_intervals(files, tmp_path):
    status, out, err = run("coco", files["gt"], files["a"], "--ci", "50", "--seed", "1",
                           "--json", tmp_path / "r.json")
    assert status == 0, err
    assert "95% interval" in out and "\nAP[person]" in out
    data = json.loads((tmp_path / "r.json").read_text())
    intervals = {r["name"]: r for r in data["intervals"]["intervals"]}
    assert intervals["AP"]["estimate"] == data["stats_named"]["AP"]
    assert intervals["AP"]["low"] <= intervals["AP"]["estimate"] <= intervals["AP"]["high"]
    assert data["intervals"]["n_resamples"] == 50 and data["intervals"]["seed"] == 1


def test_coco_ci_refuses_shards(files):
    status, _, err = run("coco", files["gt"], files["a"], files["same"], "--ci", "10")
    assert status == 2 and "--ci is not available" in err


def test_voc_ci_prints_and_writes_the_intervals_of_bootstrap_voc(files, tmp_path):
    import deteval

    status, out, err = run("voc", files["gt"], files["a"], "--year", "2007", "--ci", "40",
                           "--seed", "1", "--confidence", "0.9", "--json", tmp_path / "r.json")
    assert status == 0, err
    assert "90% interval" in out and "\nAP[person]" in out
    data = json.loads((tmp_path / "r.json").read_text())
    expected = deteval.bootstrap_voc(
        deteval.evaluate_voc(str(files["gt"]), str(files["a"]), params=deteval.VOC2007),
        n_resamples=40, seed=1, confidence=0.9)
    assert data["intervals"]["intervals"] == expected.to_dict()["intervals"]
    assert data["intervals"]["intervals"][0]["estimate"] == data["mean_ap"]
    assert data["intervals"]["score_threshold"] is None
    # VOC has no F1: no --score-threshold
    assert run("voc", files["gt"], files["a"], "--ci", "5", "--score-threshold", "0.5")[0] == 2


def test_compare_protocol_voc(files, tmp_path):
    import deteval

    status, out, err = run("compare", files["gt"], files["a"], files["same"], "--protocol",
                           "voc2012", "--bootstrap", "30", "--fail-if-regression", "mAP:0")
    assert status == 0, err
    assert "\nmAP " in out and "*" not in out
    status, out, err = run("compare", files["gt"], files["a"], files["worse"], "--protocol",
                           "voc2007", "--bootstrap", "60", "--per-class",
                           "--fail-if-regression", "mAP:0.01", "--json", tmp_path / "c.json")
    assert status == 1 and "worse.json: mAP is worse than a.json's" in err
    data = json.loads((tmp_path / "c.json").read_text())
    results = [deteval.evaluate_voc(str(files[k]), str(files[d]), params=deteval.VOC2007)
               for k, d in (("gt", "a"), ("gt", "worse"))]
    expected = deteval.compare_voc(results, n_resamples=60, seed=0,
                                   models=["a.json", "worse.json"])
    assert data["differences"] == expected.to_dict()["differences"]
    assert "AP[person]" in out
    for argv, message in ((("--fail-if-regression", "AP:0.1"), "unknown number 'AP'"),
                          (("--iou-type", "segm"), "needs --protocol coco")):
        status, _, err = run("compare", files["gt"], files["a"], files["same"], "--protocol",
                             "voc2007", *argv)
        assert status == 2 and message in err


def test_olrp_gate_reads_lower_as_better(files, tmp_path):
    """oLRP is an error: the degraded copy's is higher, which breaks an oLRP gate; the
    other way round (the better model after the degraded baseline) its oLRP falls by more
    than the tolerance, an improvement, and the status is 0."""
    status, out, err = run("compare", files["gt"], files["a"], files["worse"], "--bootstrap",
                           100, "--fail-if-regression", "oLRP:0.01", "--json",
                           tmp_path / "worse.json")
    assert status == 1
    assert "worse.json: oLRP is worse than a.json's by" in err and "lower is better" in err
    assert "entirely above +0.01" in err
    row = next(r for r in json.loads((tmp_path / "worse.json").read_text())["differences"]
               if r["name"] == "oLRP")
    assert row["better"] == "lower" and row["difference"] > 0 and row["low"] > 0.01
    assert "\noLRP " in out
    status, _, err = run("compare", files["gt"], files["worse"], files["a"], "--bootstrap",
                         100, "--fail-if-regression", "oLRP:0.01", "--json",
                         tmp_path / "better.json")
    assert status == 0, err
    row = next(r for r in json.loads((tmp_path / "better.json").read_text())["differences"]
               if r["name"] == "oLRP")
    # read as "higher is better", this interval (wholly below -0.01) would break the gate
    assert row["better"] == "lower" and row["high"] < -0.01


def test_resamples_are_bounded_for_every_ci_option(files):
    for argv in (("coco", files["gt"], files["a"], "--ci", 10**9),
                 ("voc", files["gt"], files["a"], "--ci", 100_001),
                 ("lvis", files["gt"], files["a"], "--ci", 10**9),
                 ("report", files["gt"], files["a"], "--out", files["gt"].parent / "r",
                  "--ci", 10**9)):
        status, _, err = run(*argv)
        assert status == 2 and "at most 100,000 resamples" in err


def test_compare_threads_give_the_same_numbers(files, tmp_path):
    outputs = []
    for threads in (1, 3):
        status, _, err = run("compare", files["gt"], files["a"], files["worse"], "--bootstrap",
                             30, "--threads", threads, "--json", tmp_path / f"{threads}.json")
        assert status == 0, err
        outputs.append((tmp_path / f"{threads}.json").read_text())
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("argv, threshold", [((), 0.5), (("--score-threshold", "0.8"), 0.8)])
def test_compare_coco_f1_threshold(files, tmp_path, argv, threshold):
    """The COCO comparison's F1 is compare_coco's at --score-threshold (0.5 when not
    given); the other protocols refuse the option (test_compare_protocols)."""
    from deteval import compare_coco, evaluate_coco

    status, _, err = run("compare", files["gt"], files["a"], files["worse"], "--bootstrap",
                         "20", *argv, "--json", tmp_path / "c.json")
    assert status == 0, err
    data = json.loads((tmp_path / "c.json").read_text())
    f1 = {r["name"]: r for r in data["differences"]}["F1"]
    expected = compare_coco([evaluate_coco(files["gt"], files[k]) for k in ("a", "worse")],
                            n_resamples=20, score_threshold=threshold)
    assert f1["value"] == expected.intervals[1].estimates[expected.names.index("F1")]
    assert f1["baseline_value"] == expected.intervals[0].estimates[expected.names.index("F1")]
