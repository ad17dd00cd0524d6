"""The LVIS protocol: equal to lvis-api 0.5.3, rule by rule, and its errors.

* ``test_parity_*``: seeded LVIS-like datasets (``lvisgen``) evaluated by deteval and by
  lvis-api's ``LVISEval``; stats, precision, recall and the printed summary must be equal
  (``np.array_equal``: bit for bit, stricter than 1e-12), and each category's AP must be
  lvis-api's mean over its precision entries.
* ``test_rule_*``: small hand-computed cases, one per rule of ``docs/protocols/lvis.md``.
* ``test_error_*``: bad inputs name the file, the record and what was expected.
"""

from __future__ import annotations

import copy
import io
import json

import numpy as np
import pytest
from lvisgen import make_lvis_dataset, run_lvis_api

import deteval
from deteval import FormatError, evaluate_lvis
from deteval.cli import main

pytest.importorskip("lvis")


def assert_parity(result, reference) -> None:
    expected = np.array([float(v) for v in reference.results.values()])
    assert result.stat_names == tuple(reference.results)
    assert np.array_equal(result.stats, expected), (result.stats, expected)
    assert np.array_equal(result.precision, reference.precision)
    assert np.array_equal(result.recall, reference.recall)
    assert result.summary_lines == reference.summary
    assert result.category_ids.tolist() == reference.cat_ids
    for k, row in enumerate(result.per_class()):
        values = reference.precision[:, :, k, 0]
        valid = values[values > -1]
        assert row["AP"] == (float(np.mean(valid)) if len(valid) else -1.0)


# ---------------------------------------------------------------------------------------
# parity with lvis-api on seeded datasets


@pytest.mark.parametrize("seed", range(200))
def test_parity_bbox(seed):
    gt, results = make_lvis_dataset(seed)
    assert_parity(evaluate_lvis(gt, results), run_lvis_api(gt, results))


@pytest.mark.parametrize("seed", range(1000, 1030))
def test_parity_small_cut(seed):
    """A per-image cut of 4 to 12 results: the cut falls inside most images, in ties."""
    gt, results = make_lvis_dataset(seed, p_crowded_image=0.0)
    cut = 4 + seed % 9
    assert_parity(evaluate_lvis(gt, results, max_detections=cut),
                  run_lvis_api(gt, results, max_detections=cut))


@pytest.mark.parametrize("seed", range(2000, 2030))
def test_parity_segm(seed):
    gt, results = make_lvis_dataset(seed, segm=True)
    assert_parity(evaluate_lvis(gt, results, iou_type="segm"),
                  run_lvis_api(gt, results, iou_type="segm"))


def test_parity_from_files(tmp_path):
    gt, results = make_lvis_dataset(7)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    result = evaluate_lvis(str(tmp_path / "gt.json"), tmp_path / "dt.json")
    assert_parity(result, run_lvis_api(gt, results))


def test_parity_segm_from_files(tmp_path):
    gt, results = make_lvis_dataset(2003, segm=True)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    lvis_gt = deteval.read_lvis_gt(tmp_path / "gt.json", iou_type="segm")
    result = evaluate_lvis(lvis_gt, str(tmp_path / "dt.json"), iou_type="segm")
    assert_parity(result, run_lvis_api(gt, results, iou_type="segm"))
    with pytest.raises(ValueError, match="needs masks"):
        evaluate_lvis(deteval.read_lvis_gt(tmp_path / "gt.json"), results, iou_type="segm")


@pytest.mark.parametrize("categories, annotations", [
    ([{"id": 1, "frequency": "r"}], []),                  # no objects: every value -1
    ([], []),                                             # no categories at all
])
def test_parity_degenerate(categories, annotations):
    gt = {"images": [{"id": 1, "neg_category_ids": [1], "not_exhaustive_category_ids": []}],
          "categories": categories, "annotations": annotations}
    results = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 5, 5], "score": 0.5}]
    assert_parity(evaluate_lvis(gt, results), run_lvis_api(gt, results))


def test_inputs_not_modified():
    gt, results = make_lvis_dataset(11)
    before = copy.deepcopy((gt, results))
    evaluate_lvis(gt, results)
    assert (gt, results) == before


# ---------------------------------------------------------------------------------------
# the rules, by hand


def _gt(*, neg=((), ()), ne=((), ()), frequency=("f", "r"), annotations=None):
    """Two images (ids 1, 2), two categories (ids 1, 2)."""
    if annotations is None:
        annotations = [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
                        "area": 100},
                       {"id": 2, "image_id": 1, "category_id": 2, "bbox": [20, 20, 10, 10],
                        "area": 100}]
    return {
        "images": [{"id": i + 1, "width": 100, "height": 100,
                    "neg_category_ids": list(neg[i]),
                    "not_exhaustive_category_ids": list(ne[i])} for i in range(2)],
        "categories": [{"id": c + 1, "name": f"c{c + 1}", "frequency": frequency[c]}
                       for c in range(2)],
        "annotations": annotations,
    }


def _dt(image, category, box, score):
    return {"image_id": image, "category_id": category, "bbox": box, "score": score}


def _ap(result, category_id):
    return next(r["AP"] for r in result.per_class() if r["category_id"] == category_id)


def test_rule_unverified_category_not_evaluated():
    # Category 2 has an object in image 1 only; a higher-scoring category-2 result in image
    # 2 is a false positive only when image 2 lists category 2 as verified absent.
    dt = [_dt(2, 2, [50, 50, 10, 10], 0.9), _dt(1, 2, [20, 20, 10, 10], 0.8)]
    unverified = evaluate_lvis(_gt(), dt)
    assert _ap(unverified, 2) == pytest.approx(1.0, abs=1e-12)
    assert any("neither annotated nor listed" in note for note in unverified.notes)
    assert unverified.matches.detection_status()[:, 0].tolist() == [-1] * 10
    negative = evaluate_lvis(_gt(neg=((), (2,))), dt)
    assert _ap(negative, 2) == pytest.approx(0.5, abs=1e-12)


def test_rule_not_exhaustive_ignores_unmatched():
    # An unmatched category-1 result scored above the match: a false positive, unless
    # image 1 lists category 1 as not exhaustively annotated. The match still counts.
    dt = [_dt(1, 1, [60, 60, 10, 10], 0.9), _dt(1, 1, [0, 0, 10, 10], 0.8)]
    assert _ap(evaluate_lvis(_gt(), dt), 1) == pytest.approx(0.5, abs=1e-12)
    result = evaluate_lvis(_gt(ne=((1,), ())), dt)
    assert _ap(result, 1) == pytest.approx(1.0, abs=1e-12)
    assert result.matches.detection_status()[0].tolist() == [2, 1]   # IGNORED, TP


def test_rule_cut_per_image_across_categories():
    # 300 results of the negative category 2 in image 1 push the one true positive of
    # category 1 (score 0.5) beyond the cut; a cut of 301 keeps it.
    noise = [_dt(1, 2, [70, 70, 5, 5], 0.6)] * 300
    dt = noise + [_dt(1, 1, [0, 0, 10, 10], 0.5)]
    gt = _gt(annotations=[{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
                           "area": 100}], neg=((2,), ()))
    assert _ap(evaluate_lvis(gt, dt), 1) == 0.0
    assert _ap(evaluate_lvis(gt, dt, max_detections=301), 1) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("first", [True, False])
def test_rule_ties_at_the_cut_keep_input_order(first):
    hit = _dt(1, 1, [0, 0, 10, 10], 0.5)
    noise = [_dt(1, 1, [70, 70, 5, 5], 0.5)] * 2
    dt = [hit, *noise] if first else [*noise, hit]
    result = evaluate_lvis(_gt(), dt, max_detections=2)
    assert (_ap(result, 1) > 0) == first


def test_rule_zero_area_dropped():
    # A zero-width result scored above the match is dropped, not a false positive; an
    # object of area 0 is no object (its category becomes unverified in that image).
    dt = [_dt(1, 1, [0, 0, 0, 10], 0.9), _dt(1, 1, [0, 0, 10, 10], 0.8)]
    assert _ap(evaluate_lvis(_gt(), dt), 1) == pytest.approx(1.0, abs=1e-12)
    gt = _gt()
    gt["annotations"][1]["area"] = 0
    result = evaluate_lvis(gt, [_dt(1, 2, [20, 20, 10, 10], 0.9)])
    assert _ap(result, 2) == -1.0 and result.n_detections.tolist() == [0, 0]


def test_rule_iscrowd_not_read_ignore_read():
    gt = _gt()
    gt["annotations"][0]["iscrowd"] = 1      # an ordinary object for lvis-api
    gt["annotations"][1]["ignore"] = 1       # ignored
    dt = [_dt(1, 1, [0, 0, 10, 10], 0.9), _dt(1, 2, [20, 20, 10, 10], 0.9)]
    result = evaluate_lvis(gt, dt)
    assert _ap(result, 1) == pytest.approx(1.0, abs=1e-12) and _ap(result, 2) == -1.0


def test_rule_frequency_groups():
    gt = _gt(frequency=("r", "r"))
    dt = [_dt(1, 1, [0, 0, 10, 10], 0.9), _dt(1, 2, [20, 20, 10, 20], 0.9)]   # IoU .5
    result = evaluate_lvis(gt, dt)
    named = result.stats_named
    assert named["APr"] == named["AP"] == pytest.approx((1.0 + 0.1) / 2, abs=1e-12)
    assert named["APc"] == named["APf"] == -1.0
    assert [r["frequency"] for r in result.per_class()] == ["r", "r"]


def test_rule_empty_results():
    result = evaluate_lvis(_gt(), [])
    assert result.stats[0] == 0.0 and "no detections" in result.notes[0]


def test_summary_text():
    dt = [_dt(1, 1, [0, 0, 10, 10], 0.9)]
    lines = evaluate_lvis(_gt(), dt).summary().splitlines()
    assert lines[0] == (" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=300 "
                        "catIds=all] = 0.500")
    assert lines[1].startswith(" Average Precision  (AP) @[ IoU=0.50      | area=   all")
    assert lines[3].split("|")[1] == " area=     s "
    assert lines[8].endswith("catIds=  f] = 1.000")
    assert lines[9].startswith(" Average Recall     (AR)")
    assert deteval.LVIS_STAT_NAMES[9] == "AR@300"


# ---------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("key", ["neg_category_ids", "not_exhaustive_category_ids"])
def test_error_missing_image_key(key, tmp_path):
    gt = _gt()
    del gt["images"][1][key]
    with pytest.raises(FormatError, match=rf"images\[1\] \(id 2\): missing '{key}'"):
        evaluate_lvis(gt, [])
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    with pytest.raises(FormatError, match=r"gt.json: images\[1\] \(id 2\): missing"):
        evaluate_lvis(path, [])


@pytest.mark.parametrize("value, got", [(None, "none"), ("x", "'x'")])
def test_error_frequency(value, got):
    gt = _gt()
    if value is None:
        del gt["categories"][1]["frequency"]
    else:
        gt["categories"][1]["frequency"] = value
    with pytest.raises(FormatError, match=rf"categories\[1\] \(id 2\): 'frequency' must be "
                                          rf"'r', 'c' or 'f'.*got {got}"):
        evaluate_lvis(gt, [])


def test_error_bad_id_list():
    gt = _gt()
    gt["images"][0]["neg_category_ids"] = "1, 2"
    with pytest.raises(FormatError, match=r"images\[0\] \(id 1\): 'neg_category_ids' must be"):
        evaluate_lvis(gt, [])


def test_error_result_on_unknown_image():
    with pytest.raises(FormatError, match="image_id 9 is not an image"):
        evaluate_lvis(_gt(), [_dt(9, 1, [0, 0, 1, 1], 0.5)])


@pytest.mark.parametrize("options, error", [
    ({"iou_type": "keypoints"}, ValueError), ({"max_detections": 0}, ValueError),
    ({"area_labels": ("all", "all", "medium", "large")}, ValueError),
    ({"use_categories": False}, TypeError)])
def test_error_settings(options, error):
    with pytest.raises(error):
        evaluate_lvis(_gt(), [], **options)


def test_error_dataset_without_keys():
    with pytest.raises(TypeError, match="read_lvis_gt"):
        evaluate_lvis(deteval.read_coco_gt(_gt()), [])


# ---------------------------------------------------------------------------------------
# command line


def test_cli(tmp_path):
    gt, results = make_lvis_dataset(5)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    out_json = tmp_path / "out.json"
    out, err = io.StringIO(), io.StringIO()
    status = main(["lvis", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--json",
                   str(out_json), "--per-class"], stdout=out, stderr=err)
    assert status == 0
    reference = run_lvis_api(gt, results)
    assert out.getvalue().splitlines()[:13] == reference.summary
    payload = json.loads(out_json.read_text())
    assert payload["stats_named"] == {k: float(v) for k, v in reference.results.items()}
    matches = tmp_path / "matches.csv"
    out = io.StringIO()
    status = main(["lvis", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--max-dets",
                   "5", "--matches", str(matches)], stdout=out, stderr=err)
    assert status == 0 and matches.read_text().startswith("detection,iou_threshold,status,gt")
    assert out.getvalue().splitlines() == run_lvis_api(gt, results, max_detections=5).summary
    del gt["images"][0]["neg_category_ids"]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    out, err = io.StringIO(), io.StringIO()
    status = main(["lvis", str(tmp_path / "gt.json"), str(tmp_path / "dt.json")],
                  stdout=out, stderr=err)
    assert status == 1 and "missing 'neg_category_ids'" in err.getvalue()
