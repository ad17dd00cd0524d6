"""The report with a VOC protocol: every diagnostic panel by the VOC protocol's own rules.

Each number in results.json equals the library function called directly on a separate
evaluation (TIDE with ``protocol=``, ``lrp_of_result`` and ``calibration`` of
``evaluate_voc``'s result, ``bootstrap_voc`` with the same seed, ``compare_voc``), bit for
bit; each image slice equals ``evaluate_voc`` run on the slice's images alone; the page
shows the panels, the intervals beside the numbers and the notes naming the rules."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from test_report_diagnostics import halved_comparison, plain, section, span, tables, written

import deteval
from deteval.cli import main
from deteval.demo import make_demo
from deteval.report import write_report

B = 20   # bootstrap resamples: enough to have intervals, cheap
PRESETS = {"voc2007": deteval.VOC2007, "voc2012": deteval.VOC2012}


@pytest.fixture(scope="module")
def data():
    """A demo set with some difficult objects (``iscrowd``: VOC's difficult), image tags and
    an image key of the records."""
    gt, dt = make_demo(seed=5, n_images=30)
    for i, ann in enumerate(gt["annotations"]):
        if i % 7 == 3:
            ann["iscrowd"] = 1
    for image in gt["images"]:
        image["site"] = ["north", "south", "east"][image["id"] % 3]
    tags = {image["id"]: {"half": "odd" if image["id"] % 2 else "even"}
            for image in gt["images"]}
    return gt, dt, tags


def evaluated(gt, dt, protocol, tau=0.5, **options):
    return deteval.evaluate_voc(gt, dt, params=PRESETS[protocol], iou_thresholds=(tau,),
                                **options)


@pytest.fixture(scope="module", params=["voc2007", "voc2012"])
def full(request, data, tmp_path_factory):
    """A VOC report with every panel: intervals and slices asked for."""
    gt, dt, tags = data
    return (request.param, *written(gt, dt, tags, tmp_path_factory.mktemp("voc"),
                                    protocol=request.param, ci=B, ci_seed=7,
                                    slices={"by": ["half", "site"], "tags": tags}))


def test_panels_follow_the_voc_rules(data, full):
    gt, dt, _ = data
    protocol, _, payload = full
    panels = payload["panels"]
    result = evaluated(gt, dt, protocol)
    assert panels["tide"] == plain(deteval.error_attribution(gt, dt,
                                                             protocol=protocol).to_dict())
    assert panels["tide"]["ap"] == pytest.approx(100 * result.map[0], abs=1e-9)
    assert panels["lrp"] == plain(deteval.lrp_of_result(result).to_dict())
    assert panels["lrp"]["settings"]["protocol"] != "coco"
    assert panels["calibration"] == plain(deteval.calibration(result).to_dict())
    boot = deteval.bootstrap_voc(result, n_resamples=B, seed=7)
    assert panels["intervals"] == plain(boot.to_dict())
    assert protocol in panels["notes"]["rules"] and "bootstrap_voc" in panels["notes"]["rules"]


def test_voc_rules_differ_from_the_coco_rule(data, full):
    """The VOC panels are not the COCO rule's numbers (the old report's), on this data."""
    gt, dt, _ = data
    _, _, payload = full
    assert payload["panels"]["lrp"] != plain(deteval.lrp(gt, dt).to_dict())
    assert payload["panels"]["tide"] != plain(deteval.error_attribution(gt, dt).to_dict())


def test_image_slices_equal_evaluate_voc_on_the_slices_images(data, full):
    gt, dt, tags = data
    protocol, _, payload = full
    numbers = payload["panels"]["slices"]
    groups = {("half", v): [i for i, t in tags.items() if t["half"] == v]
              for v in ("even", "odd")}
    groups.update({("site", v): [im["id"] for im in gt["images"] if im["site"] == v]
                   for v in ("north", "south", "east")})
    assert [(s["key"], s["value"]) for s in numbers["slices"]] == [
        ("half", "even"), ("half", "odd"), ("site", "east"), ("site", "north"),
        ("site", "south")]
    full_result = evaluated(gt, dt, protocol)
    rng_seed = 7
    for s in numbers["slices"]:
        ids = groups[s["key"], s["value"]]
        alone = evaluated(gt, dt, protocol, image_ids=tuple(ids))
        assert s["stats"] == {"AP": float(alone.mean_ap)}
        assert s["n_images"] == len(ids)
        assert s["n_gt"] == int(alone.n_positives.sum())
        assert s["n_detections"] == int(alone.n_detections.sum())
        # The interval: the slice's images drawn with replacement, the others weight 0.
        columns = np.flatnonzero(np.isin(np.asarray(full_result.dataset.images.ids), ids))
        rng = np.random.default_rng(rng_seed)
        weights = np.zeros((B, len(gt["images"])), dtype=np.int64)
        for b, draw in enumerate(columns[rng.integers(0, len(columns), (B, len(columns)))]):
            np.add.at(weights[b], draw, 1)
        expected = deteval.bootstrap_voc(full_result, weights=weights, seed=rng_seed)
        assert s["interval"] == list(expected.interval("mAP"))
    worst = sorted((s for s in numbers["slices"]), key=lambda s: s["stats"]["AP"])
    assert numbers["worst"] == [f"{s['key']}={s['value']}" for s in worst[:5]]


def test_page_shows_the_panels_and_the_intervals(data, full):
    gt, dt, _ = data
    protocol, page, payload = full
    panels = payload["panels"]
    shown = tables(page)
    interval = {row["name"]: (row["low"], row["high"])
                for row in panels["intervals"]["intervals"]}
    (summary,) = shown["summary-table"]
    assert summary["metric"] == "mAP@0.50" and summary["95% CI"] == span(*interval["mAP"])
    per_class = shown["per-class-table"]
    assert [row["AP 95% CI"] for row in per_class] == [
        span(*interval[f"AP[{row['class']}]"]) if interval[f"AP[{row['class']}]"][0]
        is not None else "" for row in per_class]
    assert [row["dAP"] for row in shown["tide-table"]] == [
        f"{row['dap']:.3f}" for row in panels["tide"]["summary"]]
    assert [row["AP"] for row in shown["slices-table"]] == [
        f"{s['stats']['AP']:.3f}" for s in panels["slices"]["slices"]]
    assert [row["AP 95% CI"] for row in shown["slices-table"]] == [
        span(*s["interval"]) for s in panels["slices"]["slices"]]
    assert "AP50" not in shown["slices-table"][0]      # VOC: one number per slice
    body = section(page, "error-attribution")
    assert f"TIDE with protocol=&#x27;{protocol}&#x27;" in body \
        or f"TIDE with protocol='{protocol}'" in body
    assert f"the {protocol} evaluation" in section(page, "calibration")
    assert 'class="bar bin"' in section(page, "calibration")


def test_diagnostics_follow_the_reports_iou_threshold(data, tmp_path):
    gt, dt, _ = data
    write_report(gt, dt, tmp_path, protocol="voc2012", iou_threshold=0.7, ci=B)
    panels = json.loads((tmp_path / "results.json").read_text())["panels"]
    result = evaluated(gt, dt, "voc2012", 0.7)
    assert panels["tide"] == plain(deteval.error_attribution(
        gt, dt, protocol="voc2012", pos_threshold=0.7).to_dict())
    assert panels["lrp"] == plain(deteval.lrp_of_result(result).to_dict())
    assert panels["calibration"] == plain(deteval.calibration(result,
                                                              iou_threshold=0.7).to_dict())
    assert panels["intervals"] == plain(deteval.bootstrap_voc(result, n_resamples=B,
                                                              seed=0).to_dict())


@pytest.mark.parametrize("options, message", [
    ({"slices": {"by": ["size"]}}, "slices by 'size' are not available for a VOC report"),
    ({"slices": {"by": ["half"], "border": 2}}, "unknown option"),
])
def test_voc_refuses_object_slices_and_coco_slice_options(data, tmp_path, options, message):
    gt, dt, _ = data
    with pytest.raises(ValueError, match=message):
        write_report(gt, dt, tmp_path / "out", protocol="voc2007", **options)


def test_voc_comparison_shows_compare_vocs_differences_and_intervals(data, tmp_path):
    gt, dt, _ = data
    other, index, payload = halved_comparison(gt, dt, tmp_path, ci=B, protocol="voc2012")
    a, b = evaluated(gt, dt, "voc2012"), evaluated(gt, other, "voc2012")
    direct = deteval.compare_voc([a, b], n_resamples=B, seed=0, models=["base", "halved"])
    assert payload["panels"]["comparison_intervals"] == plain(direct.to_dict())
    (row,) = payload["comparison"]["summary"]
    assert row["name"] == "mAP@0.50"
    assert row["difference"] == float(b.map[0]) - float(a.map[0])
    assert row["interval"] == list(direct.interval_of(1, "mAP"))
    assert row["p_value"] == direct.p_value_of(1, "mAP")
    for cls in payload["comparison"]["per_class"]:
        name = f"AP[{cls['name']}]"
        assert cls["AP_diff_interval"] == list(direct.interval_of(1, name))
        assert cls["AP_p"] == direct.p_value_of(1, name)
    (shown,) = tables(index.read_text())["summary-table"]
    assert shown["95% CI"] == "[{:+.3f}, {:+.3f}]".format(*direct.interval_of(1, "mAP"))


def test_cli_voc_ci_and_slices(data, tmp_path):
    gt, dt, tags = data
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    (tmp_path / "tags.json").write_text(json.dumps({str(k): v for k, v in tags.items()}))
    out, err = io.StringIO(), io.StringIO()
    code = main(["report", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--out",
                 str(tmp_path / "report"), "--protocol", "voc2007", "--ci", "15", "--seed",
                 "3", "--confidence", "0.9", "--slice", "site", "--slice-file",
                 str(tmp_path / "tags.json"), "--quiet"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    panels = json.loads((tmp_path / "report" / "results.json").read_text())["panels"]
    result = evaluated(gt, dt, "voc2007")
    assert panels["intervals"] == plain(deteval.bootstrap_voc(
        result, n_resamples=15, seed=3, confidence=0.9).to_dict())
    assert [(s["key"], s["value"]) for s in panels["slices"]["slices"]] == [
        ("site", "east"), ("site", "north"), ("site", "south"), ("half", "even"),
        ("half", "odd")]
    assert "AP 90% CI" in (tmp_path / "report" / "index.html").read_text()
