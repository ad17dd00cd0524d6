"""Paired comparison of LVIS, CrowdPose and Open Images results (``compare_lvis``,
``compare_crowdpose``, ``compare_openimages`` and ``deteval compare --protocol
lvis|crowdpose|openimages``; docs/diagnostics/bootstrap.md §5-§7, §14).

Each protocol's case: a seeded data set of 30 images, a detector's results, the same results
written again (identical files) and a degraded copy (``comparegen``: boxes or keypoints
jittered, 20% of the scores shuffled). Identical files differ by exactly 0 with p = 1; the
degraded copy is significantly worse and breaks a regression gate; each model's numbers in
the comparison are the protocol's own (the identity resample) bit for bit and its resampled
numbers are its own bootstrap's on the same seed (the pairing); the interval of a difference
is the percentile of the differences of those samples, computed here again."""

from __future__ import annotations

import copy
import json

import numpy as np
import oidgen
import pytest
from clirun import run
from comparegen import degraded, degraded_rows
from crowdposegen import make_crowdpose_dataset
from lvisgen import make_lvis_dataset

import deteval

B = 120
PROTOCOLS = ("lvis", "crowdpose", "openimages")
HEADLINE = {"lvis": "AP", "crowdpose": "AP", "openimages": "mAP"}


def _write_rows(path, header: str, rows: list) -> str:
    path.write_text("\n".join([header] + [",".join(map(str, r)) for r in rows]) + "\n")
    return str(path)


_DETECTIONS = "ImageID,LabelName,Score,XMin,XMax,YMin,YMax"


class Case:
    """One protocol's files (``gt``, ``a``, ``same``, ``worse``), the options of ``deteval
    compare`` for them, and ``evaluate(name)``: the protocol run on one results file."""

    def __init__(self, protocol: str, folder) -> None:
        self.protocol, self.options = protocol, ["--protocol", protocol]
        self.paths = {}
        if protocol == "openimages":
            boxes, labels, dets, hierarchy, classes = oidgen.make_problem(0, n_images=30,
                                                                          n_classes=5)
            self.paths["gt"] = _write_rows(folder / "gt.csv", "ImageID,LabelName,XMin,XMax,"
                                           "YMin,YMax,IsGroupOf", boxes)
            labels_path = _write_rows(folder / "labels.csv", "ImageID,LabelName,Confidence",
                                      labels)
            (folder / "h.json").write_text(json.dumps(hierarchy))
            for name, rows in (("a", dets), ("same", dets), ("worse", degraded_rows(dets))):
                self.paths[name] = _write_rows(folder / f"{name}.csv", _DETECTIONS, rows)
            self.kwargs = {"image_labels": labels_path, "hierarchy": str(folder / "h.json")}
            self.options += ["--labels", labels_path, "--hierarchy", folder / "h.json"]
            self.rows = dets
            return
        if protocol == "lvis":
            gt, dt = make_lvis_dataset(0, n_images=30, n_categories=3, p_crowded_image=0.0)
        else:
            gt, dt = make_crowdpose_dataset(0, n_images=30)
        self.kwargs = {}
        for name, value in (("gt", gt), ("a", dt), ("same", copy.deepcopy(dt)),
                            ("worse", degraded(dt))):
            self.paths[name] = str(folder / f"{name}.json")
            (folder / f"{name}.json").write_text(json.dumps(value))

    def evaluate(self, name: str, **options):
        function = {"lvis": deteval.evaluate_lvis, "crowdpose": deteval.evaluate_crowdpose,
                    "openimages": deteval.evaluate_openimages}[self.protocol]
        return function(self.paths["gt"], self.paths[name], **self.kwargs, **options)

    def compare(self, results, **options):
        function = {"lvis": deteval.compare_lvis, "crowdpose": deteval.compare_crowdpose,
                    "openimages": deteval.compare_openimages}[self.protocol]
        return function(results, **options)

    def bootstrap(self, result, **options):
        function = {"lvis": deteval.bootstrap_lvis, "crowdpose": deteval.bootstrap_crowdpose,
                    "openimages": deteval.bootstrap_openimages}[self.protocol]
        return function(result, **options)


@pytest.fixture(scope="module", params=PROTOCOLS)
def case(request, tmp_path_factory):
    return Case(request.param, tmp_path_factory.mktemp(request.param))


def own_numbers(result) -> list[float]:
    """The protocol's own numbers as its result states them: stats (or mAP) and per-class
    AP, -1 where undefined."""
    if hasattr(result, "mean_ap"):
        values = [result.mean_ap] + result.ap.tolist()
    else:
        values = list(result.stats) + [row["AP"] for row in result.per_class()]
    return [-1.0 if np.isnan(v) else float(v) for v in values]


def test_identical_files_differ_by_exactly_zero(case, tmp_path):
    out_json = tmp_path / "c.json"
    headline = HEADLINE[case.protocol]
    status, out, err = run("compare", case.paths["gt"], case.paths["a"], case.paths["same"],
                           *case.options, "--bootstrap", B, "--fail-if-regression",
                           f"{headline}:0", "--json", out_json)
    assert status == 0, err
    assert "same" in out and "*" not in out
    data = json.loads(out_json.read_text())
    rows = [r for r in data["differences"] if r["difference"] is not None]
    assert any(r["name"] == headline for r in rows)
    assert all(r["difference"] == 0 and r["low"] == 0 and r["high"] == 0
               and r["p_value"] == 1 and not r["significant"] for r in rows)
    assert data["regressions"] == []


def test_a_degraded_copy_is_significantly_worse(case, tmp_path):
    out_json = tmp_path / "c.json"
    headline = HEADLINE[case.protocol]
    status, out, err = run("compare", case.paths["gt"], case.paths["a"], case.paths["worse"],
                           *case.options, "--bootstrap", B, "--per-class",
                           "--fail-if-regression", f"{headline}:0.01", "--json", out_json)
    assert status == 1
    assert f"deteval: regression: worse.{'csv' if case.protocol == 'openimages' else 'json'}: "\
           f"{headline} is worse than" in err
    row = next(r for r in json.loads(out_json.read_text())["differences"]
               if r["name"] == headline)
    assert row["significant"] and row["high"] < -0.01 and row["p_value"] < 0.05
    assert "AP[" in out
    # A tolerance larger than the loss keeps the status 0.
    assert run("compare", case.paths["gt"], case.paths["a"], case.paths["worse"],
               *case.options, "--bootstrap", 30, "--fail-if-regression",
               f"{headline}:0.9")[0] == 0


def test_each_model_is_its_own_bootstrap_on_shared_resamples(case):
    results = [case.evaluate("a"), case.evaluate("worse")]
    c = case.compare(results, n_resamples=B, seed=5, models=["a", "worse"])
    own = []
    for j, result in enumerate(results):
        # the identity resample is the protocol's own evaluation, bit for bit
        assert c.intervals[j].estimates.tolist() == own_numbers(result)
        # the resamples are the single-model bootstrap's of the same seed: paired
        alone = case.bootstrap(result, n_resamples=B, seed=5)
        assert np.array_equal(c.intervals[j].samples, alone.samples, equal_nan=True)
        own.append(alone.samples)
    estimates = np.array([own_numbers(r) for r in results])
    defined = (estimates >= 0).all(axis=0)
    assert np.array_equal(c.difference[0][defined], (estimates[1] - estimates[0])[defined])
    assert np.isnan(c.difference[0][~defined]).all()
    diffs = own[1] - own[0]
    some = ~np.isnan(diffs).all(axis=0)
    alpha = 1 - 0.95                                  # the (1 - c) / 2 quantiles, as floats
    expected = np.nanpercentile(diffs[:, some], [50 * alpha, 100 - 50 * alpha], axis=0)
    np.testing.assert_array_equal(c.low[0][some], expected[0])
    np.testing.assert_array_equal(c.high[0][some], expected[1])


def test_threads_do_not_change_the_numbers(case):
    results = [case.evaluate("a"), case.evaluate("worse")]
    one = case.compare(results, n_resamples=40, seed=2, threads=1)
    three = case.compare(results, n_resamples=40, seed=2, threads=3)
    assert json.dumps(one.to_dict()) == json.dumps(three.to_dict())


def test_results_of_other_inputs_are_refused(case, tmp_path):
    a = case.evaluate("a")
    if case.protocol == "openimages":
        other = case.evaluate("a", classes=sorted(a.classes) + ["/m/extra"])
        message = "classes="
    elif case.protocol == "lvis":
        other = case.evaluate("a", max_detections=10)
        message = "compare needs the same"
    else:
        other = case.evaluate("a", use_area=True)
        message = "compare needs the same"
    with pytest.raises(ValueError, match=message):
        case.compare([a, other], n_resamples=5)


def test_openimages_files_detecting_other_labels_share_one_label_map(tmp_path):
    """Without --classes each file's own label map would differ (a detection label no other
    file has): compare evaluates every file on the union, which changes no number."""
    case = Case("openimages", tmp_path)
    rows = [r[:1] + ("/m/only_here",) + r[2:] if i % 7 == 0 else r
            for i, r in enumerate(case.rows)]
    case.paths["other"] = _write_rows(tmp_path / "other.csv", _DETECTIONS, rows)
    out_json = tmp_path / "c.json"
    status, _, err = run("compare", case.paths["gt"], case.paths["a"], case.paths["other"],
                         *case.options, "--bootstrap", 20, "--json", out_json)
    assert status == 0, err
    by_name = {r["name"]: r for r in json.loads(out_json.read_text())["differences"]}
    assert by_name["mAP"]["baseline_value"] == case.evaluate("a").mean_ap
    assert by_name["mAP"]["value"] == case.evaluate("other").mean_ap
    assert by_name["AP[/m/only_here]"]["difference"] is None


@pytest.mark.parametrize("protocol, argv, message", [
    ("lvis", ("--labels", "x.csv"), "--labels needs --protocol openimages"),
    ("crowdpose", ("--iou-type", "segm"), "--iou-type segm needs --protocol coco or lvis"),
    ("openimages", ("--iou-type", "bbox"), "--iou-type bbox needs --protocol coco"),
    ("lvis", ("--iou-type", "keypoints"), "--iou-type keypoints needs --protocol coco"),
    ("lvis", ("--fail-if-regression", "F1:0.1"), "unknown number 'F1'"),
    # F1's threshold: read by COCO alone (it was accepted and ignored by the others)
    ("lvis", ("--score-threshold", "0.9"), "--score-threshold is F1's threshold"),
    ("crowdpose", ("--score", "0.9"), "--score-threshold is F1's threshold"),
    ("voc2007", ("--score-threshold", "0.5"), "it needs --protocol coco"),
])
def test_options_of_another_protocol_are_usage_errors(tmp_path, protocol, argv, message):
    gt, dt = make_lvis_dataset(1, n_images=3)
    for name, value in (("gt", gt), ("dt", dt)):
        (tmp_path / f"{name}.json").write_text(json.dumps(value))
    status, _, err = run("compare", tmp_path / "gt.json", tmp_path / "dt.json",
                         tmp_path / "dt.json", "--protocol", protocol, "--bootstrap", 5, *argv)
    assert status == 2 and message in err, err


def test_openimages_results_of_other_labels_or_expansion_are_refused(tmp_path):
    """The same detections evaluated with other image-level labels, or with the detections
    expanded up the hierarchy, are not two models: compare refuses them (both change mAP)."""
    case = Case("openimages", tmp_path)
    a = case.evaluate("a")
    with open(case.kwargs["image_labels"]) as f:
        rows = [line.split(",") for line in f.read().splitlines()[1:]]
    flipped = [(i, lab, "0" if c == "1" else "1") if n % 2 == 0 else (i, lab, c)
               for n, (i, lab, c) in enumerate(rows)]
    other_labels = _write_rows(tmp_path / "flipped.csv", "ImageID,LabelName,Confidence",
                               flipped)
    relabelled = deteval.evaluate_openimages(case.paths["gt"], case.paths["a"],
                                             image_labels=other_labels,
                                             hierarchy=case.kwargs["hierarchy"],
                                             classes=a.classes)
    expanded = case.evaluate("a", classes=a.classes, expand_detections=True)
    for other in (relabelled, expanded):
        assert other.mean_ap != a.mean_ap   # else the case would not show anything
        with pytest.raises(ValueError, match="compare needs the same"):
            case.compare([a, other], n_resamples=5)
    assert case.compare([a, case.evaluate("same")], n_resamples=5) is not None
