"""The report's diagnostics panels: error attribution (TIDE, LRP), calibration, bootstrap
intervals, slices, and a comparison's paired intervals. Each panel's numbers in results.json
equal the diagnostic's own ``to_dict()`` computed directly on the same inputs (a separate
evaluation, not the report's); the page shows them (one bar per error type or bin, the
interval texts formatted from the directly computed bounds); the options are refused where
they do not apply."""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser

import pytest
from clirun import run
from reportgen import halves

import deteval
from deteval.demo import make_demo
from deteval.diagnostics.bootstrap import slice_interval
from deteval.report import compare_report, write_report

B = 25   # bootstrap resamples: enough to have intervals, cheap


class _Tables(HTMLParser):
    """The cells' text of each table of a page, by table id: rows of cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._table = dict(attrs).get("id", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables(page: str) -> dict[str, list[dict[str, str]]]:
    """Each table as a list of {header: cell text}."""
    parser = _Tables()
    parser.feed(page)
    return {key: [dict(zip(rows[0], row)) for row in rows[1:]]
            for key, rows in parser.tables.items() if rows}


def section(page: str, key: str) -> str:
    match = re.search(rf'<section id="{key}">(.*?)</section>', page, re.S)
    assert match, f"no section {key}"
    return match.group(1)


def plain(value):
    """JSON-ready numbers as results.json holds them (tuples as lists)."""
    return json.loads(json.dumps(value, allow_nan=False))


def span(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


@pytest.fixture(scope="module")
def data():
    gt, dt = make_demo(seed=3, n_images=30)
    return gt, dt, halves(gt)


def written(gt, dt, tags, folder, **options) -> tuple[str, dict]:
    """``write_report(gt, dt, folder, **options)``'s page and results.json, checking that
    the caller's data (and tags) are left as they were."""
    before = copy.deepcopy((gt, dt, tags))
    index = write_report(gt, dt, folder, **options)
    assert (gt, dt, tags) == before, "the report changed the caller's data"
    return index.read_text(), json.loads((index.parent / "results.json").read_text())


@pytest.fixture(scope="module")
def full(data, tmp_path_factory):
    """A report with every panel: intervals and slices asked for."""
    gt, dt, tags = data
    return written(gt, dt, tags, tmp_path_factory.mktemp("full"), ci=B, ci_seed=7,
                   slices={"by": ["half", "size"], "tags": tags})


def test_default_report_has_the_cheap_panels_only(data, tmp_path):
    gt, dt, _ = data
    index = write_report(gt, dt, tmp_path)
    panels = json.loads((tmp_path / "results.json").read_text())["panels"]
    assert sorted(panels) == ["calibration", "lrp", "notes", "tide"]
    page = index.read_text()
    assert 'id="error-attribution"' in page and 'id="calibration"' in page
    assert 'id="slices"' not in page and "95% CI" not in page


def test_panel_numbers_equal_the_diagnostics_computed_directly(data, full):
    gt, dt, tags = data
    _, payload = full
    panels = payload["panels"]
    assert panels["tide"] == plain(deteval.error_attribution(gt, dt).to_dict())
    assert panels["lrp"] == plain(deteval.lrp(gt, dt).to_dict())
    assert panels["calibration"] == plain(deteval.calibration(gt, dt).to_dict())
    boot = deteval.bootstrap_coco(deteval.evaluate_coco(gt, dt), n_resamples=B, seed=7,
                                  score_threshold=payload["settings"]["score_threshold"])
    assert panels["intervals"] == plain(boot.to_dict())
    sliced = deteval.slices(gt, dt, by=["half", "size"], tags=tags,
                            interval=slice_interval(n_resamples=B, seed=7))
    assert panels["slices"] == plain(sliced.to_dict(worst=5))
    assert list(panels["notes"]) == ["rules"] and "COCO" in panels["notes"]["rules"]


def test_diagnostics_follow_the_reports_iou_threshold(data, tmp_path):
    gt, dt, _ = data
    write_report(gt, dt, tmp_path, iou_threshold=0.75)
    panels = json.loads((tmp_path / "results.json").read_text())["panels"]
    assert panels["tide"] == plain(deteval.error_attribution(gt, dt,
                                                             pos_threshold=0.75).to_dict())
    assert panels["lrp"] == plain(deteval.lrp(gt, dt, iou_threshold=0.75).to_dict())
    assert panels["calibration"] == plain(deteval.calibration(gt, dt,
                                                              iou_threshold=0.75).to_dict())


def test_error_attribution_panel_shows_a_bar_per_error_type(full):
    page, payload = full
    body = section(page, "error-attribution")
    rows = payload["panels"]["tide"]["summary"]
    assert len(rows) == 8
    bars = re.findall(r'<rect class="bar dap"[^>]*data-error="([^"]+)"', body)
    assert bars == [row["error"] for row in rows]
    shown = tables(page)["tide-table"]
    assert [cell["dAP"] for cell in shown] == [f"{row['dap']:.3f}" for row in rows]
    assert [cell["count"] for cell in shown] == [
        "n/a" if row["count"] is None else str(row["count"]) for row in rows]
    lrp = tables(page)["lrp-table"]
    summary = payload["panels"]["lrp"]["summary"]
    assert [cell["number"] for cell in lrp] == list(summary)
    assert [cell["value"] for cell in lrp] == [f"{v:.3f}" if v >= 0 else "n/a"
                                               for v in summary.values()]
    olrp = next(r for r in payload["panels"]["intervals"]["intervals"] if r["name"] == "oLRP")
    assert lrp[0]["95% CI"] == span(olrp["low"], olrp["high"])


def test_reliability_diagram_has_a_bar_per_bin(full, data, tmp_path):
    page, payload = full
    numbers = payload["panels"]["calibration"]
    body = section(page, "calibration")
    assert body.count('class="bar bin"') == numbers["bins"] == 10
    assert "stroke-dasharray" in body              # the diagonal
    shown = {row["number"]: row["value"] for row in tables(page)["calibration-table"]}
    assert shown["D-ECE"] == f"{numbers['dece']:.3f}"
    assert shown["MCE"] == f"{numbers['mce']:.3f}"


def test_intervals_beside_every_summary_number_and_class_ap(data, full):
    gt, dt, _ = data
    page, payload = full
    boot = deteval.bootstrap_coco(deteval.evaluate_coco(gt, dt), n_resamples=B, seed=7,
                                  score_threshold=payload["settings"]["score_threshold"])
    summary = tables(page)["summary-table"]
    assert [row["metric"] for row in summary] == list(deteval.evaluate_coco(gt, dt).stat_names)
    assert [row["95% CI"] for row in summary] == [span(*boot.interval(row["metric"]))
                                                  for row in summary]
    per_class = tables(page)["per-class-table"]
    assert len(per_class) == len(gt["categories"])
    assert [row["AP 95% CI"] for row in per_class] == [
        span(*boot.interval(f"AP[{row['class']}]")) for row in per_class]
    assert "image bootstrap, percentile intervals of 25 resamples (seed 7)" in page


def test_slice_table_and_worst_slices(full):
    page, payload = full
    numbers = payload["panels"]["slices"]
    shown = tables(page)["slices-table"]
    assert [row["slice"] for row in shown] == [f"{s['key']}={s['value']}"
                                               for s in numbers["slices"]]
    assert [row["AP"] for row in shown] == [f"{s['stats']['AP']:.3f}" for s in numbers["slices"]]
    assert [row["AP 95% CI"] for row in shown] == [
        "" if s["interval"] is None else span(*s["interval"]) for s in numbers["slices"]]
    assert {s["kind"] for s in numbers["slices"]} == {"image", "object"}
    worst = re.findall(r"<li>([^:<]+): AP", section(page, "slices"))
    assert worst == numbers["worst"] and worst


def test_scores_that_are_not_confidences_leave_calibration_out_with_a_note(data, tmp_path):
    gt, dt, _ = data
    scaled = [dict(d, score=d["score"] * 10) for d in dt]
    index = write_report(gt, scaled, tmp_path)
    panels = json.loads((tmp_path / "results.json").read_text())["panels"]
    assert "calibration" not in panels
    assert panels["notes"]["calibration"].startswith("Calibration left out:")
    assert "[0, 1]" in section(index.read_text(), "calibration")
    assert panels["tide"] == plain(deteval.error_attribution(gt, scaled).to_dict())


@pytest.mark.parametrize("options, error", [
    ({"ci": 0}, ValueError), ({"ci": True}, ValueError), ({"ci": 2.5}, ValueError),
    ({"ci_confidence": 1.0}, ValueError), ({"slices": "size"}, TypeError),
    ({"slices": {"by": "size", "interval": None}}, ValueError)])
def test_bad_options_are_refused_before_anything_is_written(data, tmp_path, options, error):
    gt, dt, _ = data
    with pytest.raises(error):
        write_report(gt, dt, tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()


def halved_comparison(gt, dt, folder, **options):
    """A second run with two thirds of the scores halved, compared with ``dt`` (names base,
    halved): that run, the comparison's index.html and its results.json."""
    other = [dict(d, score=d["score"] * 0.5) if i % 3 else d for i, d in enumerate(dt)]
    index = compare_report(gt, dt, other, folder, names=("base", "halved"), **options)
    return other, index, json.loads((folder / "results.json").read_text())


def test_comparison_shows_the_paired_intervals_and_p_values(data, tmp_path):
    gt, dt, _ = data
    other, index, payload = halved_comparison(gt, dt, tmp_path, ci=B)
    direct = deteval.compare_coco([deteval.evaluate_coco(gt, dt),
                                   deteval.evaluate_coco(gt, other)], n_resamples=B, seed=0,
                                  models=["base", "halved"])
    assert payload["panels"]["comparison_intervals"] == plain(direct.to_dict())
    for row in payload["comparison"]["summary"]:
        assert row["interval"] == list(direct.interval_of(1, row["name"]))
        assert row["p_value"] == direct.p_value_of(1, row["name"])
    for row in payload["comparison"]["per_class"]:
        name = f"AP[{row['name']}]"
        assert row["AP_diff_interval"] == list(direct.interval_of(1, name))
        assert row["AP_p"] == direct.p_value_of(1, name)     # Holm-adjusted
    page = index.read_text()
    summary = tables(page)["summary-table"]
    assert [row["95% CI"] for row in summary] == [
        "[{:+.3f}, {:+.3f}]".format(*direct.interval_of(1, row["metric"])) for row in summary]
    assert "paired image bootstrap, percentile, 25 resamples (seed 0)" in page
    per_class = tables(page)["per-class-table"]
    assert [row["p (Holm)"] for row in per_class] == [
        f"{direct.p_value_of(1, 'AP[' + row['class'] + ']'):.3f}" for row in per_class]
    with pytest.raises(ValueError, match="not both"):
        compare_report(gt, dt, other, tmp_path / "x", ci=B,
                       intervals=lambda a, b: {"AP": (0.0, 0.0)})


# --------------------------------------------------------------------------------------
# deteval report
# --------------------------------------------------------------------------------------


@pytest.fixture()
def files(data, tmp_path):
    gt, dt, tags = data
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    (tmp_path / "tags.json").write_text(json.dumps({str(k): v for k, v in tags.items()}))
    return tmp_path


def run_cli(*argv) -> tuple[int, str, str]:
    """``deteval report`` with ``argv``, quiet (no progress bar)."""
    return run("report", *argv, "--quiet")


def test_cli_ci_and_slices(data, files):
    gt, dt, tags = data
    code, _, err = run_cli(str(files / "gt.json"), str(files / "dt.json"), "--out",
                           str(files / "report"), "--ci", "20", "--seed", "3",
                           "--confidence", "0.9", "--slice", "size", "--slice-file",
                           str(files / "tags.json"))
    assert code == 0, err
    payload = json.loads((files / "report" / "results.json").read_text())
    panels = payload["panels"]
    boot = deteval.bootstrap_coco(deteval.evaluate_coco(gt, dt), n_resamples=20, seed=3,
                                  confidence=0.9,
                                  score_threshold=payload["settings"]["score_threshold"])
    assert panels["intervals"] == plain(boot.to_dict())
    sliced = deteval.slices(gt, dt, by=["size", "half"], tags=str(files / "tags.json"),
                            interval=slice_interval(n_resamples=20, confidence=0.9, seed=3))
    assert panels["slices"] == plain(sliced.to_dict(worst=5))
    assert "AP 90% CI" in (files / "report" / "index.html").read_text()


def test_cli_slices_by_an_image_key_of_the_ground_truth(files):
    gt = json.loads((files / "gt.json").read_text())
    for image in gt["images"]:
        image["weather"] = "rain" if image["id"] % 3 == 0 else "sun"
    (files / "gt.json").write_text(json.dumps(gt))
    code, _, err = run_cli(str(files / "gt.json"), str(files / "dt.json"), "--out",
                           str(files / "report"), "--slice", "weather")
    assert code == 0, err
    panels = json.loads((files / "report" / "results.json").read_text())["panels"]
    assert [s["value"] for s in panels["slices"]["slices"]] == ["rain", "sun"]
    assert "intervals" not in panels


@pytest.mark.parametrize("argv, message", [
    (["--protocol", "voc2012", "--slice", "size"], "slices by 'size' are not available"),
    (["--ci", "0"], "expected a positive integer"),
    (["--ci", "5", "--confidence", "2"], "a level in (0, 1)"),
])
def test_cli_refuses_options_where_they_do_not_apply(files, argv, message):
    code, _, err = run_cli(str(files / "gt.json"), str(files / "dt.json"), "--out",
                           str(files / "report"), *argv)
    assert code == 2 and message in err
    assert not (files / "report").exists()


def test_cli_comparison_with_ci_and_no_slices(files):
    code, _, err = run_cli(str(files / "gt.json"), str(files / "dt.json"),
                           str(files / "dt.json"), "--out", str(files / "report"), "--slice",
                           "size")
    assert code == 2 and "one-run report" in err
    code, _, err = run_cli(str(files / "gt.json"), str(files / "dt.json"),
                           str(files / "dt.json"), "--out", str(files / "report"), "--ci", "10",
                           "--run-names", "a", "b")
    assert code == 0, err
    payload = json.loads((files / "report" / "results.json").read_text())
    numbers = payload["panels"]["comparison_intervals"]
    assert numbers["n_resamples"] == 10 and numbers["models"] == ["a", "b"]
    assert payload["comparison"]["summary"][0]["interval"] == [0.0, 0.0]   # the same run
