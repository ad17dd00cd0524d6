"""The report with the CrowdPose protocol.

Each CrowdPose number in results.json equals the library function called directly on a
separate ``evaluate_crowdpose`` (its 9 stats, summary lines and per-class rows, TIDE with
``protocol="crowdpose"``, ``lrp_of_result``, ``calibration``, ``bootstrap_crowdpose`` with
the same seed, ``slices`` of the result with ``protocol_slice_interval``,
``compare_crowdpose``), bit for bit; the mean curve's AP at OKS 0.5 is the AP50; the
operating point is ``operating_points`` by OKS with CrowdPose's sigmas and areas; object
properties other than ``size``, png figures, other thresholds and a Dataset without
crowdIndex are refused, in Python and on the command line, before anything is written."""

from __future__ import annotations

import json

import pytest
from crowdposegen import make_crowdpose_dataset
from PIL import Image
from test_report_diagnostics import halved_comparison, plain, section, span, tables, written
from test_report_lvis import run_cli

import deteval
from deteval.confusion import operating_points
from deteval.diagnostics.slices_protocols import protocol_slice_interval
from deteval.protocols.crowdpose import scaled_dataset
from deteval.report import write_report
from deteval.report._views import pr_view

B = 15   # bootstrap resamples: enough to have intervals, cheap


@pytest.fixture(scope="module")
def data():
    gt, dt = make_crowdpose_dataset(3, n_images=12)
    tags = {image["id"]: {"half": "odd" if image["id"] % 2 else "even"}
            for image in gt["images"]}
    return gt, dt, tags


@pytest.fixture(scope="module")
def full(data, tmp_path_factory):
    gt, dt, tags = data
    return written(gt, dt, tags, tmp_path_factory.mktemp("crowdpose"), protocol="crowdpose",
                   ci=B, ci_seed=4, slices={"by": ["half", "size"], "tags": tags})


def test_summary_and_per_class_are_evaluate_crowdposes(data, full):
    gt, dt, _ = data
    page, payload = full
    result = deteval.evaluate_crowdpose(gt, dt)
    assert payload["summary"]["stats"] == result.stats.tolist()
    assert payload["summary"]["lines"] == list(result.summary_lines)
    assert [row["name"] for row in payload["summary"]["rows"]] == list(result.stat_names)
    rows = payload["per_class"]
    assert [{k: row[k] for k in expected} for row, expected
            in zip(rows, result.per_class())] == plain(result.per_class())
    shown = tables(page)["per-class-table"]
    assert [row["AP"] for row in shown] == [f"{row['AP']:.3f}" if row["AP"] >= 0 else "n/a"
                                            for row in result.per_class()]
    assert payload["settings"]["protocol"] == "crowdpose"
    assert payload["notes"] == list(result.notes)


def test_panels_follow_the_crowdpose_rules(data, full):
    gt, dt, tags = data
    _, payload = full
    panels = payload["panels"]
    result = deteval.evaluate_crowdpose(gt, dt)
    tide = deteval.error_attribution(gt, dt, protocol="crowdpose")
    assert panels["tide"] == plain(tide.to_dict())
    assert panels["tide"]["ap"] == pytest.approx(100 * result.stat("AP50"), abs=1e-9)
    assert panels["lrp"] == plain(deteval.lrp_of_result(result, 0.5).to_dict())
    assert panels["lrp"]["settings"]["protocol"] == "crowdpose"
    assert panels["calibration"] == plain(deteval.calibration(result).to_dict())
    assert panels["intervals"] == plain(deteval.bootstrap_crowdpose(result, n_resamples=B,
                                                                    seed=4).to_dict())
    sliced = deteval.slices(result, by=["half", "size"], tags=tags,
                            interval=protocol_slice_interval(n_resamples=B, seed=4))
    assert panels["slices"] == plain(sliced.to_dict(worst=5))
    assert "xtcocotools' CrowdPose rules" in panels["notes"]["rules"]


def test_curves_and_operating_point_use_crowdpose_oks(data, full):
    """The mean curve is the CrowdPose precision (its AP at OKS 0.5 the AP50); the operating
    point is matched by OKS with CrowdPose's sigmas and its 0.53-of-the-box areas."""
    gt, dt, _ = data
    _, payload = full
    result = deteval.evaluate_crowdpose(gt, dt)
    assert pr_view(result, "crowdpose", 0.5)["mean_ap"] == result.stat("AP50")
    assert pr_view(result, "crowdpose", 0.75)["mean_ap"] == result.stat("AP75")
    points = operating_points(scaled_dataset(result.dataset, result.params), result.detections,
                              iou_threshold=0.5, iou_type="keypoints",
                              keypoint_sigmas=result.params.keypoint_sigmas)
    best = points.best()
    assert payload["operating_point"]["best"]["f1"] == best["fbeta"]
    assert payload["operating_point"]["best"]["tp"] == best["tp"]
    assert payload["settings"]["score_threshold"] == max(best["threshold"], 0.0)


def test_page_shows_the_intervals_and_panels(full):
    page, payload = full
    interval = {row["name"]: (row["low"], row["high"])
                for row in payload["panels"]["intervals"]["intervals"]}
    summary = tables(page)["summary-table"]
    assert [row["95% CI"] for row in summary] == [
        "" if interval[row["metric"]][0] is None else span(*interval[row["metric"]])
        for row in summary]
    assert any(row["95% CI"] for row in summary)
    slices = tables(page)["slices-table"]
    assert [row["AP"] for row in slices] == [
        "n/a" if s["stats"]["AP"] < 0 else f"{s['stats']['AP']:.3f}"
        for s in payload["panels"]["slices"]["slices"]]
    assert "errors and gallery at OKS &ge; 0.5" in page
    assert "protocol=&#x27;crowdpose&#x27;" in section(page, "error-attribution")
    assert 'class="bar bin"' in section(page, "calibration")


def test_comparison_is_compare_crowdpose(data, tmp_path):
    gt, dt, _ = data
    other, _, payload = halved_comparison(gt, dt, tmp_path, protocol="crowdpose", ci=B)
    direct = deteval.compare_crowdpose([deteval.evaluate_crowdpose(gt, dt),
                                        deteval.evaluate_crowdpose(gt, other)],
                                       n_resamples=B, seed=0, models=["base", "halved"])
    assert payload["panels"]["comparison_intervals"] == plain(direct.to_dict())
    assert [row["b"] for row in payload["comparison"]["summary"]] == \
        deteval.evaluate_crowdpose(gt, other).stats.tolist()
    for row in payload["comparison"]["summary"]:
        expected = [None if v != v else v for v in direct.interval_of(1, row["name"])]
        assert row["interval"] == expected


def test_gallery_draws_the_worst_images(data, tmp_path):
    gt, dt, _ = data
    for image in gt["images"]:
        Image.new("RGB", (image["width"], image["height"]), "grey").save(
            tmp_path / image["file_name"])
    written(gt, dt, {}, tmp_path / "report", protocol="crowdpose", images_dir=tmp_path,
            gallery=3)
    payload = json.loads((tmp_path / "report" / "results.json").read_text())
    errors = payload["outcomes"]["errors_per_image"]
    drawn = [entry["image_index"] for entry in payload["gallery"]["images"]][:3]
    assert len(drawn) == 3 and not payload["gallery"]["skipped"]
    assert [errors[i] for i in drawn] == sorted(errors, reverse=True)[:3]


@pytest.mark.parametrize("options, error, message", [
    ({"slices": {"by": ["aspect"]}}, ValueError, "CrowdPose would have to"),
    ({"figure_format": "png"}, ValueError, "not available with the CrowdPose"),
    ({"iou_threshold": 0.52}, ValueError, "for the CrowdPose protocol"),
])
def test_refusals_name_what_and_why(data, tmp_path, options, error, message):
    gt, dt, _ = data
    with pytest.raises(error, match=message):
        write_report(gt, dt, tmp_path / "out", protocol="crowdpose", **options)
    assert not (tmp_path / "out").exists()


def test_crowdpose_refuses_a_dataset_without_crowd_index(data, tmp_path):
    gt, dt, _ = data
    with pytest.raises(TypeError, match="crowdIndex"):
        write_report(deteval.evaluate_crowdpose(gt, dt).dataset, dt, tmp_path / "out",
                     protocol="crowdpose")
    assert not (tmp_path / "out").exists()


def test_cli_crowdpose_report_and_refusals(data, tmp_path):
    gt, dt, _ = data
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    code, out, err = run_cli(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--out",
                             str(tmp_path / "report"), "--protocol", "crowdpose", "--ci", "10",
                             "--slice", "size")
    assert code == 0, err
    payload = json.loads((tmp_path / "report" / "results.json").read_text())
    result = deteval.evaluate_crowdpose(gt, dt)
    assert payload["summary"]["stats"] == result.stats.tolist()
    assert payload["panels"]["intervals"] == plain(deteval.bootstrap_crowdpose(
        result, n_resamples=10, seed=0).to_dict())
    assert payload["panels"]["slices"] == plain(deteval.slices(
        result, by=["size"], images=str(tmp_path / "gt.json"),
        interval=protocol_slice_interval(n_resamples=10, seed=0)).to_dict(worst=5))
    assert f"AP = {result.stats[0]:.3f} (crowdpose)" in out
    other = [dict(d, score=d["score"] * 0.5) if i % 3 else d for i, d in enumerate(dt)]
    (tmp_path / "other.json").write_text(json.dumps(other))
    code, out, err = run_cli(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                             str(tmp_path / "other.json"), "--out", str(tmp_path / "compared"),
                             "--protocol", "crowdpose", "--ci", "5", "--run-names", "a", "b")
    assert code == 0, err
    payload = json.loads((tmp_path / "compared" / "results.json").read_text())
    assert payload["panels"]["comparison_intervals"] == plain(deteval.compare_crowdpose(
        [result, deteval.evaluate_crowdpose(gt, other)], n_resamples=5, seed=0,
        models=["a", "b"]).to_dict())
    for extra, message in ((["--gt-format", "yolo"], "--protocol crowdpose reads a CrowdPose"),
                           (["--figure-format", "svg"], "not available with --protocol "
                            "crowdpose"),
                           (["--slice", "crowding"], "CrowdPose would have to")):
        code, _, err = run_cli(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--out",
                               str(tmp_path / "refused"), "--protocol", "crowdpose", *extra)
        assert code == 2 and message in err, err
        assert not (tmp_path / "refused").exists()
