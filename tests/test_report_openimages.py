"""The report with the Open Images protocol.

Each number in results.json equals the library function called directly on a separate
``evaluate_openimages`` of the same files (its mAP, summary lines and per-class rows,
``lrp_of_result``, ``calibration``, ``bootstrap_openimages`` with the same seed, ``slices``
of the result with ``protocol_slice_interval``), bit for bit; TIDE is left out with a note
saying why; the comparison of two runs equals ``compare_openimages``; what the protocol
cannot do (other thresholds, a score threshold, object slices, images, png figures) is
refused, in Python and on the command line, before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oidgen import write_problem
from test_report_diagnostics import plain, section, span, tables, written
from test_report_lvis import run_cli

import deteval
from deteval.diagnostics.slices_protocols import protocol_slice_interval
from deteval.report import compare_report, write_report

B = 15   # bootstrap resamples: enough to have intervals, cheap


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The challenge files of a generated problem (boxes, detections, labels, hierarchy),
    its evaluation and image tags."""
    (boxes, dets), options = write_problem(tmp_path_factory.mktemp("oid"), 3)
    options = {key: str(value) for key, value in options.items()}
    result = deteval.evaluate_openimages(boxes, dets, **options)
    tags = {image: {"half": "odd" if i % 2 else "even"}
            for i, image in enumerate(result.image_ids.tolist())}
    return str(boxes), str(dets), options, tags


@pytest.fixture(scope="module")
def full(data, tmp_path_factory):
    boxes, dets, options, tags = data
    return written(boxes, dets, tags, tmp_path_factory.mktemp("report"),
                   protocol="openimages", openimages=options, ci=B, ci_seed=4,
                   slices={"by": ["half"], "tags": tags})


def test_summary_and_per_class_are_evaluate_openimages(data, full):
    boxes, dets, options, _ = data
    page, payload = full
    result = deteval.evaluate_openimages(boxes, dets, **options)
    assert payload["summary"]["mean_ap"] == result.mean_ap
    assert payload["summary"]["rows"][0]["value"] == result.mean_ap
    assert payload["summary"]["lines"] == result.summary().splitlines()
    assert payload["per_class"] == plain(result.per_class())
    shown = tables(page)["per-class-table"]
    assert [row["class"] for row in shown] == list(result.classes)
    assert [row["AP"] for row in shown] == ["n/a" if row["ap"] is None else f"{row['ap']:.3f}"
                                            for row in result.per_class()]
    assert payload["notes"] == list(result.notes)
    assert payload["dataset"]["images"] == len(result.image_ids)


def test_panels_follow_the_openimages_rules(data, full):
    boxes, dets, options, tags = data
    page, payload = full
    panels = payload["panels"]
    result = deteval.evaluate_openimages(boxes, dets, **options)
    assert panels["lrp"] == plain(deteval.lrp_of_result(result, 0.5).to_dict())
    assert panels["calibration"] == plain(deteval.calibration(result).to_dict())
    assert panels["intervals"] == plain(deteval.bootstrap_openimages(
        result, n_resamples=B, seed=4).to_dict())
    sliced = deteval.slices(result, by=["half"], tags=tags,
                            interval=protocol_slice_interval(n_resamples=B, seed=4))
    assert panels["slices"] == plain(sliced.to_dict(worst=5))
    tide = deteval.error_attribution(boxes, dets, protocol="openimages", **options)
    assert panels["tide"] == plain(tide.to_dict())
    assert panels["tide"]["ap"] == 100 * result.mean_ap
    assert "tide" not in panels["notes"]
    assert "Open Images challenge rules" in panels["notes"]["rules"]
    attribution = section(page, "error-attribution")
    assert "tide-table" in attribution and "lrp-table" in attribution
    for absent in ("curves", "confusion", "errors", "gallery"):
        assert f'<section id="{absent}">' not in page


def test_page_shows_the_intervals(full):
    page, payload = full
    interval = {row["name"]: (row["low"], row["high"])
                for row in payload["panels"]["intervals"]["intervals"]}
    summary = tables(page)["summary-table"]
    assert [row["95% CI"] for row in summary] == [span(*interval["mAP"])]
    per_class = tables(page)["per-class-table"]
    assert [row["AP 95% CI"] for row in per_class] == [
        "" if interval[f"AP[{row['class']}]"][0] is None
        else span(*interval[f"AP[{row['class']}]"]) for row in per_class]
    slices = tables(page)["slices-table"]
    assert [row["AP"] for row in slices] == [f"{s['stats']['AP']:.3f}"
                                             for s in payload["panels"]["slices"]["slices"]]


@pytest.mark.parametrize("options, message", [
    ({"iou_threshold": 0.75}, "must be 0.5 for the Open Images protocol"),
    ({"score_threshold": 0.3}, "score_threshold is not available with the Open Images"),
    ({"figure_format": "png"}, "not available with the Open Images"),
    ({"slices": {"by": ["size"]}}, "not available for an Open Images report"),
    ({"slices": {"by": ["half"], "images": "x.json"}}, "unknown option"),
    ({"openimages": {"labels": "x.csv"}}, "unknown option"),
])
def test_refusals_name_what_and_why(data, tmp_path, options, message):
    boxes, dets, _, _ = data
    with pytest.raises(ValueError, match=message):
        write_report(boxes, dets, tmp_path / "out", **{"protocol": "openimages", **options})
    assert not (tmp_path / "out").exists()


def test_openimages_options_need_the_protocol(data, tmp_path):
    boxes, dets, options, _ = data
    with pytest.raises(ValueError, match="needs protocol='openimages'"):
        write_report(boxes, dets, tmp_path / "out", openimages=options)
    with pytest.raises(ValueError, match="needs protocol='openimages'"):
        compare_report(boxes, dets, dets, tmp_path / "out", names=("a", "b"),
                       openimages=options)
    with pytest.raises(ValueError, match="images_dir is not available"):
        compare_report(boxes, dets, dets, tmp_path / "out", names=("a", "b"),
                       protocol="openimages", images_dir=tmp_path)
    assert not (tmp_path / "out").exists()


def halved(dets: str, folder) -> str:
    """The detections CSV without every other row: another run."""
    lines = Path(dets).read_text(encoding="utf-8").splitlines()
    path = folder / "halved.csv"
    path.write_text("\n".join([lines[0], *lines[1::2]]) + "\n")
    return str(path)


def test_comparison_is_compare_openimages(data, tmp_path):
    boxes, dets, options, _ = data
    other = halved(dets, tmp_path)
    index = compare_report(boxes, dets, other, tmp_path / "out", names=("base", "halved"),
                           protocol="openimages", openimages=options, ci=B)
    payload = json.loads((tmp_path / "out" / "results.json").read_text())
    results = [deteval.evaluate_openimages(boxes, d, **options) for d in (dets, other)]
    seen = sorted(set(results[0].classes) | set(results[1].classes))
    assert list(results[1].classes) != seen   # the second run lost a class the first has:
    results = [deteval.evaluate_openimages(boxes, d, classes=seen, **options)  # both on all
               for d in (dets, other)]
    assert results[0].mean_ap != results[1].mean_ap
    direct = deteval.compare_openimages(results, n_resamples=B, seed=0,
                                        models=["base", "halved"])
    assert payload["panels"]["comparison_intervals"] == plain(direct.to_dict())
    (row,) = payload["comparison"]["summary"]
    assert (row["a"], row["b"]) == (results[0].mean_ap, results[1].mean_ap)
    assert row["interval"] == list(direct.interval_of(1, "mAP"))
    assert row["p_value"] == direct.p_value_of(1, "mAP")
    def json_value(value):   # NaN (a class without ground truth) is null in results.json
        return None if value != value else value

    for row in payload["comparison"]["per_class"]:
        name = f"AP[{row['class']}]"
        assert row["AP_diff_interval"] == [json_value(v) for v in direct.interval_of(1, name)]
        assert row["AP_p"] == json_value(direct.p_value_of(1, name))
    assert any(row["AP_p"] is not None for row in payload["comparison"]["per_class"])
    shown = tables(index.read_text())["summary-table"]
    assert [r["95% CI"] for r in shown] == ["[{:+.3f}, {:+.3f}]".format(
        *direct.interval_of(1, "mAP"))]


def test_cli_openimages_report_and_refusals(data, tmp_path):
    boxes, dets, options, _ = data
    inputs = ["--protocol", "openimages", "--labels", options["image_labels"],
              "--hierarchy", options["hierarchy"]]
    code, out, err = run_cli(boxes, dets, *inputs, "--out", str(tmp_path / "report"), "--ci",
                             "10")
    assert code == 0, err
    payload = json.loads((tmp_path / "report" / "results.json").read_text())
    result = deteval.evaluate_openimages(boxes, dets, **options)
    assert payload["summary"]["mean_ap"] == result.mean_ap
    assert payload["panels"]["intervals"] == plain(deteval.bootstrap_openimages(
        result, n_resamples=10, seed=0).to_dict())
    assert f"mAP = {result.mean_ap:.3f} (openimages)" in out
    for runs, extra, message in (([], ["--images", str(tmp_path)], "--images cannot be used"),
                                 ([], ["--score-threshold", "0.3"],
                                  "--score-threshold cannot be used"),
                                 ([], ["--slice", "size"], "not available for an Open Images "
                                  "report")):
        code, _, err = run_cli(boxes, dets, *runs, *inputs, *extra, "--out",
                               str(tmp_path / "refused"))
        assert code == 2 and message in err, err
        assert not (tmp_path / "refused").exists()
    code, _, err = run_cli(boxes, dets, "--labels", options["image_labels"], "--out",
                           str(tmp_path / "refused"))
    assert code == 2 and "need --protocol openimages" in err
    code, out, err = run_cli(boxes, dets, halved(dets, tmp_path), *inputs, "--out",
                             str(tmp_path / "compared"), "--ci", "5", "--run-names", "a", "b")
    assert code == 0, err
    payload = json.loads((tmp_path / "compared" / "results.json").read_text())
    other = deteval.evaluate_openimages(boxes, tmp_path / "halved.csv",
                                        classes=list(result.classes), **options)
    assert payload["panels"]["comparison_intervals"] == plain(deteval.compare_openimages(
        [result, other], n_resamples=5, seed=0, models=["a", "b"]).to_dict())
    assert f"mAP: a {result.mean_ap:.3f}, b {other.mean_ap:.3f} (openimages)" in out
