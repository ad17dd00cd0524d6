"""Detection calibration (deteval.calibration): D-ECE, MCE, bins, the reliability diagram.

The reference is written here from pycocotools' own per-image results (``evalImgs``): a
detection is right when ``dtMatches`` is set and ``dtIgnore`` is not at the threshold, left
out when ``dtIgnore`` is set, and the bins, precisions and D-ECE are plain Python loops over
the definitions of Küppers et al. (docs/diagnostics/calibration.md).
"""

from __future__ import annotations

import io
import json
import math

import cocogen
import numpy as np
import pytest

import deteval
from deteval.cli import main
from deteval.demo import make_demo


def _reference_outcomes(gt: dict, results: list, tau: float) -> dict[int, tuple[float, bool]]:
    """{result row: (score, right)} of the detections pycocotools evaluates at ``tau``
    (area "all", maxDets 100); the ids ``loadRes`` gives are the rows plus one."""
    ref = cocogen.run_pycocotools(gt, results, iou_thresholds=[tau])
    outcomes = {}
    for record in ref.eval_imgs:
        if record is None or record["aRng"] != [0, 1e10] or record["maxDet"] != 100:
            continue
        for j, dt_id in enumerate(record["dtIds"]):
            if record["dtIgnore"][0, j]:
                continue
            row = dt_id - 1
            outcomes[row] = (results[row]["score"], bool(record["dtMatches"][0, j] > 0))
    return outcomes


def _reference_ece(values: list[tuple[float, bool]], edges: list[float]):
    """Counts, TP counts and D-ECE by the definition, bin b = [edges[b], edges[b+1])."""
    n_bins = len(edges) - 1
    members: list[list[tuple[float, bool]]] = [[] for _ in range(n_bins)]
    for score, right in values:
        b = 0
        while b < n_bins - 1 and score >= edges[b + 1]:
            b += 1
        members[b].append((score, right))
    n = len(values)
    ece, counts, tps = 0.0, [], []
    for group in members:
        counts.append(len(group))
        tps.append(sum(right for _, right in group))
        if group:
            precision = sum(right for _, right in group) / len(group)
            confidence = sum(score for score, _ in group) / len(group)
            ece += len(group) / n * abs(precision - confidence)
    return counts, tps, (ece if n else math.nan)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("tau", [0.5, 0.75])
def test_uniform_bins_equal_the_definition_on_pycocotools_matches(seed, tau):
    gt, results = cocogen.make_dataset(seed, p_many=0.1 if seed % 3 == 0 else 0.0)
    outcomes = _reference_outcomes(gt, results, tau)
    cal = deteval.calibration(gt, results, iou_threshold=tau, bins=7)
    edges = [b / 7 for b in range(8)]
    counts, tps, ece = _reference_ece(list(outcomes.values()), edges)
    assert cal.bin_edges.tolist() == edges
    assert cal.count.tolist() == counts and cal.tp.tolist() == tps
    assert cal.n_detections == len(outcomes)
    assert sorted(np.flatnonzero(cal.dt_evaluated).tolist()) == sorted(outcomes)
    assert sorted(np.flatnonzero(cal.dt_correct).tolist()) == sorted(
        row for row, (_, right) in outcomes.items() if right)
    if outcomes:
        assert cal.dece == pytest.approx(ece, abs=1e-12)
    else:
        assert math.isnan(cal.dece)


@pytest.mark.parametrize("seed", range(4))
def test_per_class_numbers_equal_the_definition(seed):
    gt, results = cocogen.make_dataset(seed + 20, n_categories=3)
    outcomes = _reference_outcomes(gt, results, 0.5)
    cal = deteval.calibration(gt, results, bins=5)
    for k, category_id in enumerate(cal.category_ids.tolist()):
        mine = [v for row, v in outcomes.items() if results[row]["category_id"] == category_id]
        counts, tps, ece = _reference_ece(mine, [b / 5 for b in range(6)])
        assert cal.class_count[k].tolist() == counts and cal.class_tp[k].tolist() == tps
        if mine:
            assert cal.class_dece[k] == pytest.approx(ece, abs=1e-12)
        else:
            assert math.isnan(cal.class_dece[k])


def test_quantile_bins_cut_at_the_scores_quantiles():
    gt, results = make_demo(seed=3, n_images=12)
    cal = deteval.calibration(gt, results, bins=4, binning="quantile")
    scores = np.array([results[row]["score"] for row in np.flatnonzero(cal.dt_evaluated)])
    rights = cal.dt_correct[cal.dt_evaluated].tolist()
    edges = np.quantile(scores, [0, 0.25, 0.5, 0.75, 1]).tolist()
    counts, tps, ece = _reference_ece(list(zip(scores.tolist(), rights)), edges)
    assert cal.bin_edges.tolist() == edges
    assert cal.count.tolist() == counts and cal.tp.tolist() == tps
    assert cal.dece == pytest.approx(ece, abs=1e-12)
    # each category gets its own quantiles
    k = 0
    own = np.flatnonzero(cal.dt_evaluated & (np.array([r["category_id"] for r in results])
                                             == cal.category_ids[k]))
    assert cal.class_bin_edges[k].tolist() == np.quantile(
        [results[i]["score"] for i in own], [0, 0.25, 0.5, 0.75, 1]).tolist()


def test_crowd_matches_count_neither_right_nor_wrong():
    gt = {"images": [{"id": 1, "width": 100, "height": 100}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [
              {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100,
               "iscrowd": 0},
              {"id": 2, "image_id": 1, "category_id": 1, "bbox": [50, 50, 40, 40],
               "area": 1600, "iscrowd": 1}]}
    dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.95},
          {"image_id": 1, "category_id": 1, "bbox": [55, 55, 10, 10], "score": 0.9},
          {"image_id": 1, "category_id": 1, "bbox": [20, 20, 5, 5], "score": 0.15}]
    cal = deteval.calibration(gt, dt, bins=2)
    assert cal.dt_evaluated.tolist() == [True, False, True]
    assert cal.dt_correct.tolist() == [True, False, False]
    # bin [0, .5): one wrong at 0.15; bin [.5, 1]: one right at 0.95
    assert cal.count.tolist() == [1, 1] and cal.tp.tolist() == [0, 1]
    assert cal.dece == pytest.approx(0.5 * 0.15 + 0.5 * 0.05, abs=1e-15)
    assert cal.mce == pytest.approx(0.15, abs=1e-15)
    assert cal.dt_bin.tolist() == [1, -1, 0]


def test_a_coco_result_gives_the_same_numbers_from_its_own_table():
    gt, results = make_demo(seed=1, n_images=8)
    direct = deteval.calibration(gt, results, iou_threshold=0.75, bins=6)
    result = deteval.evaluate_coco(gt, results)
    from_result = deteval.calibration(result, iou_threshold=0.75, bins=6)
    assert direct.to_dict() == from_result.to_dict()
    with pytest.raises(ValueError, match="0.62 was not evaluated"):
        deteval.calibration(result, iou_threshold=0.62)
    with pytest.raises(TypeError, match="takes no detections"):
        deteval.calibration(result, results)


def test_scores_outside_the_unit_interval_are_refused_by_row(tmp_path):
    gt, results = make_demo(seed=0, n_images=3)
    results[2]["score"] = 1.5
    with pytest.raises(ValueError, match=r"detection row\[2\] \(image_id \d+\): .* score 1.5"):
        deteval.calibration(gt, results)
    # From a file, the error names the file and the record, and so does the command line.
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(results))
    with pytest.raises(deteval.errors.FormatError,
                       match=r"dt.json: results\[2\] \(image_id \d+\): .* score 1.5"):
        deteval.calibration(gt, str(path))
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    err = io.StringIO()
    assert main(["calibration", str(tmp_path / "gt.json"), str(path)],
                stdout=io.StringIO(), stderr=err) == 1
    assert f"{path}: results[2]" in err.getvalue()


def test_cli_protocol_names_the_results_file_of_a_score_outside_the_unit_interval(tmp_path):
    """--protocol voc2007 (a protocol's result, not a file, reaches calibration): the error
    still names DT and the row, exit 1, no --json written."""
    gt, results = make_demo(seed=0, n_images=3)
    results[2]["score"] = 1.5
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    err = io.StringIO()
    assert main(["calibration", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 "--protocol", "voc2007", "--json", str(tmp_path / "out.json")],
                stdout=io.StringIO(), stderr=err) == 1
    assert f"error: {tmp_path / 'dt.json'}: detection row[" in err.getvalue()
    assert "score 1.5" in err.getvalue() and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("protocol, threshold, evaluated", [
    ("openimages", "0.75", "0.50 only"), ("lvis", "0.42", "0.50, 0.55, 0.60"),
])
def test_cli_protocol_refuses_a_threshold_it_does_not_decide_at_naming_the_flag(
        tmp_path, protocol, threshold, evaluated):
    gt, results = make_demo(seed=0, n_images=3)
    if protocol == "lvis":
        for category in gt["categories"]:
            category["frequency"] = "f"
        for image in gt["images"]:
            image["neg_category_ids"], image["not_exhaustive_category_ids"] = [], []
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    err = io.StringIO()
    assert main(["calibration", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 "--protocol", protocol, "--iou-threshold", threshold, "--json",
                 str(tmp_path / "out.json")], stdout=io.StringIO(), stderr=err) == 2
    assert (f"error: --iou-threshold {threshold}: the {protocol} protocol evaluates IoU "
            f"{evaluated}") in err.getvalue()
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"bins": 0}, "bins must be an integer from 1 to 10,000"),
    ({"bins": 10_001}, "bins must be an integer from 1 to 10,000"),
    ({"binning": "equal"}, "binning must be one of"),
    ({"iou_threshold": 0}, "iou_threshold must be"),
])
def test_bad_settings_are_refused(kwargs, message):
    gt, results = make_demo(seed=0, n_images=2)
    with pytest.raises(ValueError, match=message):
        deteval.calibration(gt, results, **kwargs)


def test_reliability_data_and_dict_are_json_ready():
    gt, results = make_demo(seed=0, n_images=6)
    cal = deteval.calibration(gt, results, bins=20)
    payload = json.loads(json.dumps(cal.to_dict()))
    assert payload["dece"] == cal.dece
    assert payload["reliability"]["count"] == cal.count.tolist()
    empty = [b for b, n in enumerate(cal.count.tolist()) if n == 0]
    assert empty and all(payload["reliability"]["precision"][b] is None for b in empty)
    name = cal.category_names[1]
    assert cal.reliability(name)["count"] == cal.class_count[1].tolist()
    assert cal.reliability(int(cal.category_ids[1])) == cal.reliability(name)
    rows = cal.per_class()
    assert [r["detections"] for r in rows] == cal.class_count.sum(axis=1).tolist()
    with pytest.raises(ValueError, match="unknown category"):
        cal.reliability("no such class")


def test_plot_draws_the_bins_it_reports(tmp_path):
    pytest.importorskip("matplotlib")
    gt, results = make_demo(seed=0, n_images=6)
    cal = deteval.calibration(gt, results, bins=8)
    figure = deteval.plot_reliability(cal, path=tmp_path / "r.svg")
    ax = figure.axes[0]
    bars = [p for p in ax.patches if p.get_gid() == "reliability:precision"] or [
        c for c in ax.containers if c.get_gid() == "reliability:precision"][0].patches
    filled = cal.count > 0
    assert [b.get_height() for b in bars] == cal.precision[filled].tolist()
    points = [ln for ln in ax.get_lines() if ln.get_gid() == "reliability:confidence"][0]
    assert points.get_xdata().tolist() == cal.confidence[filled].tolist()
    assert (tmp_path / "r.svg").stat().st_size > 0
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        deteval.plot_reliability(cal, path=tmp_path / "r.jpg")


def test_cli_prints_the_table_and_writes_json_and_plot(tmp_path, capsys):
    gt, results = make_demo(seed=2, n_images=6)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    args = [str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--bins", "5",
            "--iou-threshold", "0.75", "--per-class", "--json", str(tmp_path / "c.json")]
    if _has_matplotlib():
        args += ["--plot", str(tmp_path / "c.png")]
    assert main(["calibration", *args]) == 0
    out = capsys.readouterr().out
    cal = deteval.calibration(gt, results, bins=5, iou_threshold=0.75)
    assert f"D-ECE @ IoU 0.75 (5 uniform bins, {cal.n_detections} detections): " \
           f"{cal.dece:.4f}" in out
    assert cal.category_names[0] in out
    assert json.loads((tmp_path / "c.json").read_text()) == json.loads(json.dumps(
        cal.to_dict()))
    if _has_matplotlib():
        assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_refuses_more_bins_than_the_limit_naming_the_flag(tmp_path):
    # was (fuzzer): --bins 100000000 ran out of memory with a numpy traceback
    gt, results = make_demo(seed=2, n_images=2)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    err = io.StringIO()
    assert main(["calibration", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 "--bins", "100000000", "--json", str(tmp_path / "c.json")],
                stdout=io.StringIO(), stderr=err) == 2
    assert "--bins: expected at most 10,000; got 100000000" in err.getvalue()
    assert not (tmp_path / "c.json").exists()
    assert main(["calibration", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 "--bins", "10000"], stdout=io.StringIO(), stderr=io.StringIO()) == 0


def test_cli_refuses_a_plot_format_it_cannot_write_as_a_usage_error(tmp_path):
    # was: exit 1, as if the inputs were wrong
    gt, results = make_demo(seed=2, n_images=2)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    err = io.StringIO()
    assert main(["calibration", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 "--plot", str(tmp_path / "r.pdf"), "--json", str(tmp_path / "c.json")],
                stdout=io.StringIO(), stderr=err) == 2
    assert "--plot: path must end in .png or .svg" in err.getvalue()
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "r.pdf").exists()


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:  # pragma: no cover
        return False
    return True


@pytest.mark.parametrize("seed", range(3))
def test_status_read_from_sparse_rows_equals_the_tables_dense_view(seed):
    from deteval.diagnostics._decisions import decisions

    gt, results = cocogen.make_dataset(seed + 30, p_many=0.2, p_crowd=0.4)
    result = deteval.evaluate_coco(gt, results)
    for t, tau in enumerate(result.params.iou_thresholds):
        found = decisions(result, tau, with_iou=False, all_only=True).status[0]
        assert np.array_equal(found, result.matches.detection_status(0)[t])


def test_pooled_categories_give_one_class_equal_to_the_overall_numbers():
    gt, results = make_demo(seed=4, n_images=6)
    cal = deteval.calibration(deteval.evaluate_coco(gt, results, use_categories=False))
    assert cal.category_ids.tolist() == [-1] and cal.category_names == ("all categories",)
    assert cal.class_count[0].tolist() == cal.count.tolist()
    assert cal.class_dece[0] == cal.dece
    payload = cal.to_dict()
    assert payload["class_reliability"][0]["count"] == cal.count.tolist()


def test_keypoints_default_to_cocos_twenty_detections_per_image_and_category(tmp_path):
    """COCO's keypoint protocol keeps 20 results per image and category (pycocotools'
    ``Params('keypoints').maxDets``), as ``deteval coco --iou-type keypoints`` does: by
    default calibration bins those, not 100 (an image here has 30 results of a category)."""
    import keypointgen

    gt, dt = keypointgen.make_keypoints_dataset(1)
    dt = [d for d in dt if all(math.isfinite(v) for v in d["keypoints"])]
    first = dt[0]
    dt = dt + [dict(first, score=round(0.3 + 0.02 * i, 2)) for i in range(30)]
    protocol = deteval.evaluate_coco(gt, dt, iou_type="keypoints", iou_thresholds=(0.5,))
    assert protocol.params.max_detections[-1] == 20
    expected = deteval.calibration(protocol).to_dict()
    got = deteval.calibration(gt, dt, iou_type="keypoints").to_dict()
    assert got == expected and got["max_detections"] == 20
    assert got != deteval.calibration(gt, dt, iou_type="keypoints", max_detections=100).to_dict()
    for name, value in (("gt", gt), ("dt", dt)):
        (tmp_path / f"{name}.json").write_text(json.dumps(value))
    out = tmp_path / "cal.json"
    status = main(["calibration", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                   "--iou-type", "keypoints", "--json", str(out)],
                  stdout=io.StringIO(), stderr=io.StringIO())
    assert status == 0
    assert json.loads(out.read_text()) == json.loads(json.dumps(expected))
