"""The report with the LVIS protocol.

Each LVIS number in results.json equals the library function called directly on a
separate ``evaluate_lvis`` (its stats and per-class rows, TIDE with ``protocol="lvis"``,
``lrp_of_result``, ``calibration``, ``bootstrap_lvis`` with the same seed, ``slices`` of the
result with ``protocol_slice_interval``, ``compare_lvis``), bit for bit; what LVIS cannot do is
refused with the reason, in Python and on the command line, before anything is written."""

from __future__ import annotations

import json

import pytest
from lvisgen import make_lvis_dataset
from test_report_diagnostics import (
    halved_comparison,
    plain,
    run_cli,
    section,
    span,
    tables,
    written,
)

import deteval
from deteval.diagnostics.slices_protocols import protocol_slice_interval
from deteval.report import write_report

B = 15   # bootstrap resamples: enough to have intervals, cheap


@pytest.fixture(scope="module")
def data():
    gt, dt = make_lvis_dataset(3, n_images=12, n_categories=5)
    tags = {image["id"]: {"half": "odd" if image["id"] % 2 else "even"}
            for image in gt["images"]}
    return gt, dt, tags


@pytest.fixture(scope="module")
def full(data, tmp_path_factory):
    gt, dt, tags = data
    return written(gt, dt, tags, tmp_path_factory.mktemp("lvis"), protocol="lvis", ci=B,
                   ci_seed=4, slices={"by": ["half", "size"], "tags": tags})


def test_summary_and_per_class_are_lvis_apis(data, full):
    gt, dt, _ = data
    page, payload = full
    result = deteval.evaluate_lvis(gt, dt)
    assert payload["summary"]["stats"] == result.stats.tolist()
    assert payload["summary"]["lines"] == list(result.summary_lines)
    assert [row["name"] for row in payload["summary"]["rows"]] == list(result.stat_names)
    rows = payload["per_class"]
    assert [{k: row[k] for k in expected} for row, expected
            in zip(rows, result.per_class())] == plain(result.per_class())
    shown = tables(page)["per-class-table"]
    assert [row["freq."] for row in shown] == list(result.frequency)
    assert payload["settings"]["protocol"] == "lvis"


def test_panels_follow_the_lvis_rules(data, full):
    gt, dt, tags = data
    _, payload = full
    panels = payload["panels"]
    result = deteval.evaluate_lvis(gt, dt)
    assert panels["tide"] == plain(deteval.error_attribution(gt, dt, protocol="lvis").to_dict())
    assert panels["tide"]["ap"] == pytest.approx(100 * result.stat("AP50"), abs=1e-9)
    assert panels["lrp"] == plain(deteval.lrp_of_result(result, 0.5).to_dict())
    assert panels["lrp"]["settings"]["protocol"] == "lvis"
    assert panels["calibration"] == plain(deteval.calibration(result).to_dict())
    assert panels["intervals"] == plain(deteval.bootstrap_lvis(result, n_resamples=B,
                                                               seed=4).to_dict())
    sliced = deteval.slices(result, by=["half", "size"], tags=tags,
                            interval=protocol_slice_interval(n_resamples=B, seed=4))
    assert panels["slices"] == plain(sliced.to_dict(worst=5))
    assert "lvis-api" in panels["notes"]["rules"]


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
    assert [row["AP"] for row in slices] == [f"{s['stats']['AP']:.3f}"
                                             for s in payload["panels"]["slices"]["slices"]]
    assert "TIDE with protocol=&#x27;lvis&#x27;" in section(page, "error-attribution") \
        or "TIDE with protocol='lvis'" in section(page, "error-attribution")
    assert 'class="bar bin"' in section(page, "calibration")


def test_comparison_is_compare_lvis(data, tmp_path):
    gt, dt, _ = data
    other, _, payload = halved_comparison(gt, dt, tmp_path, protocol="lvis", ci=B)
    direct = deteval.compare_lvis([deteval.evaluate_lvis(gt, dt),
                                   deteval.evaluate_lvis(gt, other)], n_resamples=B, seed=0,
                                  models=["base", "halved"])
    assert payload["panels"]["comparison_intervals"] == plain(direct.to_dict())
    for row in payload["comparison"]["summary"]:
        expected = [None if v != v else v for v in direct.interval_of(1, row["name"])]
        assert row["interval"] == expected


@pytest.mark.parametrize("options, error, message", [
    ({"protocol": "lvis", "slices": {"by": ["aspect"]}}, ValueError, "LVIS would have to"),
    ({"protocol": "lvis", "figure_format": "png"}, ValueError, "not available with the LVIS"),
    ({"protocol": "lvis", "iou_threshold": 0.52}, ValueError, "for the LVIS protocol"),
])
def test_refusals_name_what_and_why(data, tmp_path, options, error, message):
    gt, dt, _ = data
    with pytest.raises(error, match=message):
        write_report(gt, dt, tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()


def test_lvis_refuses_a_dataset_it_cannot_read_the_federated_keys_of(data, tmp_path):
    gt, dt, _ = data
    with pytest.raises(TypeError, match="federated keys"):
        write_report(deteval.evaluate_lvis(gt, dt).dataset, dt, tmp_path / "out",
                     protocol="lvis")
    assert not (tmp_path / "out").exists()


def test_cli_lvis_report_and_refusals(data, tmp_path):
    gt, dt, _ = data
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    code, out, err = run_cli(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--out",
                             str(tmp_path / "report"), "--protocol", "lvis", "--ci", "10",
                             "--slice", "size")
    assert code == 0, err
    payload = json.loads((tmp_path / "report" / "results.json").read_text())
    result = deteval.evaluate_lvis(gt, dt)
    assert payload["summary"]["stats"] == result.stats.tolist()
    assert payload["panels"]["intervals"] == plain(deteval.bootstrap_lvis(
        result, n_resamples=10, seed=0).to_dict())
    assert f"AP = {result.stats[0]:.3f} (lvis)" in out
    code, _, err = run_cli(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--out",
                           str(tmp_path / "yolo"), "--protocol", "lvis", "--gt-format", "yolo")
    assert code == 2 and "--protocol lvis reads an LVIS annotation file" in err
