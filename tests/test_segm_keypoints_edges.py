"""Segm, keypoint, polygon and rotated-box cases a demanding user hits (review of issue 3):
empty results and ``"bbox": []`` (pycocotools accepts it), the keypoint count of a category
taken from its odd first record, huge coordinates (no warning from deep inside, no silent
wrong number), keypoint settings, the per-class table, JSON and notes, and invalid polygons
repaired on request, kept through conversion to COCO and the eval command."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import warnings

import numpy as np
import pytest
from clirun import run
from cocogen import assert_parity, run_pycocotools
from keypointgen import make_keypoints_dataset
from maskgen import make_segm_dataset
from scenes import dota_folders
from segmcases import keypoints_case, segm_case

import deteval
from deteval.cli import main
from deteval.errors import FormatError
from deteval.io.coco import dataset_to_coco, read_coco_gt
from deteval.io.dota import read_dota_detections
from deteval.keypoints import COCO_PERSON_SIGMAS
from deteval.protocols.coco import COCO_KEYPOINTS, KEYPOINT_STAT_NAMES, COCOParams

# =============================================================================================
# Moved from test_review_issue3.py:
#
# Review of issue 3 (segm, keypoints, polygons, rotated boxes): the cases a demanding user
# hits that the first tests missed.
#
# Each test pins one defect found in review: empty keypoint results, ``"bbox": []`` in results
# and GT (pycocotools accepts it), the keypoint count of a category taken from its odd first
# record, overflow with huge coordinates, the per-class table and default settings for
# keypoints, polygons lost when converting to COCO, and the way out of an invalid polygon
# through ``evaluate_coco`` and the command line.
# =============================================================================================


def polygon_case() -> tuple[dict, list]:
    """Two images, quadrilaterals given as 'polygon' and as 'rbox'."""
    gt = {"images": [{"id": 1, "width": 100, "height": 80}, {"id": 2, "width": 100,
                                                             "height": 80}],
          "categories": [{"id": 1, "name": "plane"}, {"id": 2, "name": "ship"}],
          "annotations": [
              {"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0,
               "polygon": [10, 10, 50, 10, 50, 30, 10, 30], "rbox": [30, 20, 40, 20, 0]},
              {"id": 2, "image_id": 1, "category_id": 2, "iscrowd": 0,
               "polygon": [60, 40, 80, 50, 70, 70, 50, 60], "rbox": [65, 55, 20, 10, 30]},
              {"id": 3, "image_id": 2, "category_id": 1, "iscrowd": 0,
               "polygon": [0, 0, 30, 0, 30, 30, 0, 30], "rbox": [15, 15, 30, 30, 0]}]}
    results = [
        {"image_id": 1, "category_id": 1, "score": 0.9,
         "polygon": [11, 10, 50, 11, 49, 30, 10, 29], "rbox": [30, 20, 39, 19, 1]},
        {"image_id": 1, "category_id": 2, "score": 0.6,
         "polygon": [60, 41, 79, 50, 70, 69, 51, 60], "rbox": [65, 55, 19, 10, 31]},
        {"image_id": 2, "category_id": 1, "score": 0.7,
         "polygon": [1, 1, 29, 1, 29, 29, 1, 29], "rbox": [15, 15, 28, 28, 0]},
        {"image_id": 2, "category_id": 2, "score": 0.3,
         "polygon": [40, 40, 60, 40, 60, 60, 40, 60], "rbox": [50, 50, 20, 20, 45]}]
    return gt, results


# ---------------------------------------------------------------------------------------------
# Empty results and "bbox": []
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints", "polygon", "rotated"])
def test_empty_results_give_zero_ap_for_every_iou_type(iou_type):
    if iou_type in ("segm", "bbox"):
        gt, _ = segm_case()
    elif iou_type == "keypoints":
        gt, _ = keypoints_case()
    else:
        gt, _ = polygon_case()
    result = deteval.evaluate_coco(gt, [], iou_type=iou_type)
    assert result.stats[0] == 0.0
    assert len(result.detections) == 0
    assert any("no detections" in note for note in result.notes)


def test_segm_results_with_empty_bbox_equal_pycocotools():
    """loadRes takes a first result with ``"bbox": []`` for a segm result: mask areas."""
    gt, results = segm_case()
    first_empty = copy.deepcopy(results)
    first_empty[0]["bbox"] = []
    all_empty = [{**r, "bbox": []} for r in results]
    mixed = copy.deepcopy(first_empty)
    for r in mixed[1::2]:
        r["bbox"] = [0.0, 0.0, 3.0, 2.0]  # kept as the result's box, never its area
    for case in (first_empty, all_empty, mixed):
        expected = run_pycocotools(gt, case, iou_type="segm")
        assert_parity(deteval.evaluate_coco(gt, case, iou_type="segm"), expected)
    dataset = read_coco_gt(gt, iou_type="segm")
    dt = deteval.read_coco_results(mixed, dataset, iou_type="segm")
    assert dt.as_xywh()[1].tolist() == [0.0, 0.0, 3.0, 2.0]   # its own box
    assert dt.area[1] != 6.0                                  # but the mask's area


def test_keypoint_results_with_empty_bbox_equal_pycocotools():
    gt, results = keypoints_case()
    case = copy.deepcopy(results)
    case[0]["bbox"] = []
    for r in case[1::3]:
        r["bbox"] = [1.0, 2.0, 3.0, 4.0]  # loadRes replaces these by the keypoints' extent
    expected = run_pycocotools(gt, case, iou_type="keypoints")
    result = deteval.evaluate_coco(gt, case, iou_type="keypoints")
    assert_parity(result, expected)
    extent = result.detections.as_xywh()[1]
    points = np.asarray(case[1]["keypoints"], dtype=float).reshape(-1, 3)
    assert extent.tolist() == [points[:, 0].min(), points[:, 1].min(),
                               np.ptp(points[:, 0]), np.ptp(points[:, 1])]


def test_segm_ground_truth_with_empty_bbox_gets_the_mask_box():
    gt, results = segm_case()
    gt["annotations"][1]["bbox"] = []
    expected = run_pycocotools(gt, results, iou_type="segm")
    result = deteval.evaluate_coco(gt, results, iou_type="segm")
    assert_parity(result, expected)
    assert result.dataset.gt.as_xywh()[1].tolist() == [2.0, 2.0, 10.0, 6.0]


# ---------------------------------------------------------------------------------------------
# Keypoint counts and lists
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [[1, 2, 2] * 5, [1] * 50, []], ids=["5-triples", "50", "empty"])
def test_the_odd_keypoint_record_is_named_even_when_it_comes_first(bad):
    gt, results = keypoints_case()
    gt["annotations"][0]["keypoints"] = bad
    with pytest.raises(FormatError) as info:
        deteval.evaluate_coco(gt, results, iou_type="keypoints")
    message = str(info.value)
    assert "annotations[0] (id 901)" in message, message
    assert "51" in message and "17 keypoints" in message, message


def test_empty_keypoint_list_of_a_result_is_refused():
    gt, results = keypoints_case()
    results[4]["keypoints"] = []
    results[4]["category_id"] = 99   # unknown category: no K to compare with
    with pytest.raises(FormatError, match=r"results\[4\]: 'keypoints' must hold x, y, v "
                                          r"triplets \(a non-zero multiple of 3 numbers\)"):
        deteval.evaluate_coco(gt, results, iou_type="keypoints")


def test_keypoint_categories_with_several_counts_in_one_file():
    """17-keypoint persons and 5-keypoint objects, each category with its sigmas, equal to
    pycocotools category by category."""
    gt, results = keypoints_case()
    gt["categories"].append({"id": 2, "name": "five", "keypoints": list("abcde")})
    gt["annotations"].append(
        {"id": 950, "image_id": 3, "category_id": 2, "iscrowd": 0, "num_keypoints": 5,
         "keypoints": [20, 20, 2, 40, 20, 2, 40, 40, 2, 20, 40, 2, 30, 30, 2],
         "bbox": [20, 20, 20, 20], "area": 400.0})
    results.append({"image_id": 3, "category_id": 2, "score": 0.5,
                    "keypoints": [21, 20, 1, 40, 21, 1, 40, 40, 1, 20, 41, 1, 30, 30, 1]})
    five = np.array([0.05, 0.05, 0.07, 0.07, 0.031])
    sigmas = {1: COCO_PERSON_SIGMAS, 2: five}
    result = deteval.evaluate_coco(gt, results, iou_type="keypoints", keypoint_sigmas=sigmas)
    for k, (category, category_sigmas) in enumerate(sigmas.items()):
        expected = run_pycocotools(gt, results, iou_type="keypoints",
                                   category_ids=[category], keypoint_sigmas=category_sigmas)
        assert np.array_equal(result.precision[:, :, k], expected.precision[:, :, 0])


# ---------------------------------------------------------------------------------------------
# Huge coordinates: no warning from deep inside, no silent wrong number
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1e155, 1e300, -1e300])
def test_far_off_keypoints_give_pycocotools_numbers_without_warnings(value):
    gt, results = keypoints_case()
    results[0]["keypoints"] = [value if i % 3 != 2 else 1 for i in range(51)]
    results[1]["keypoints"] = [value if i % 3 == 0 else 5 for i in range(51)]
    result = deteval.evaluate_coco(gt, results, iou_type="keypoints")  # warnings are errors
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # pycocotools overflows loudly
        expected = run_pycocotools(gt, results, iou_type="keypoints")
    assert_parity(result, expected)


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_box_area_overflow_names_the_record(iou_type):
    gt, results = segm_case()
    boxed = [{**r, "bbox": [0, 0, 5, 5]} for r in results]
    boxed[2]["bbox"] = [0, 0, 1e200, 1e200]
    with pytest.raises(FormatError, match=r"results\[2\]: box .* overflows"):
        deteval.evaluate_coco(gt, boxed, iou_type=iou_type)
    del gt["annotations"][2]["area"]
    gt["annotations"][2]["bbox"] = [0, 0, 1e200, 1e200]
    with pytest.raises(FormatError, match=r"annotations\[2\] \(id 903\): box .* overflows"):
        deteval.evaluate_coco(gt, results, iou_type=iou_type)


def test_polygon_and_rbox_coordinates_too_large_are_refused():
    gt, results = polygon_case()
    huge = copy.deepcopy(results)
    huge[1]["polygon"] = [1e300, 1e300, 1.5e300, 1e300, 1.5e300, 1.5e300]
    with pytest.raises(FormatError, match=r"results\[1\]: polygon coordinate 0 is 1e\+300"):
        deteval.evaluate_coco(gt, huge, iou_type="polygon")
    huge = copy.deepcopy(results)
    huge[2]["rbox"] = [10, 10, 1e200, 1e200, 30]
    with pytest.raises(FormatError, match=r"<list>: results\[2\]: rotated box .* magnitude"):
        deteval.evaluate_coco(gt, huge, iou_type="rotated")


def test_an_eight_number_rbox_points_to_the_polygon_type():
    gt, results = polygon_case()
    results[0]["rbox"] = results[0]["polygon"]
    with pytest.raises(FormatError, match=r"results\[0\]: 'rbox' must be 5 numbers .* "
                                          r"iou_type 'polygon'"):
        deteval.evaluate_coco(gt, results, iou_type="rotated")


# ---------------------------------------------------------------------------------------------
# Keypoint settings, per-class table, JSON, notes
# ---------------------------------------------------------------------------------------------


def test_coco_params_for_keypoints_default_to_the_keypoint_settings():
    """As pycocotools' ``Params(iouType="keypoints")``: maxDets 20, no small range."""
    p = COCOParams(iou_type="keypoints")
    assert p == COCO_KEYPOINTS
    assert p.max_detections == (20,) and p.area_labels == ("all", "medium", "large")
    assert COCOParams().max_detections == (1, 10, 100)
    gt, results = keypoints_case()
    assert_parity(deteval.evaluate_coco(gt, results, params=p),
                  run_pycocotools(gt, results, iou_type="keypoints"))


def test_keypoint_per_class_rows_are_named_like_the_keypoint_stats():
    gt, results = keypoints_case()
    result = deteval.evaluate_coco(gt, results, iou_type="keypoints")
    (row,) = result.per_class()
    assert list(row) == ["category_id", "name", "AP", "AP50", "AP75", "APm", "APl", "AR",
                         "n_gt", "n_crowd", "n_detections"]
    for name in ("AP", "AP50", "AP75", "APm", "APl", "AR"):
        assert row[name] == result.stat(name)   # one category: its row is the summary
    bbox_row = deteval.evaluate_coco(*segm_case(), iou_type="segm").per_class()[0]
    assert "APs" in bbox_row and "AR100" in bbox_row


def test_cli_keypoints_per_class_and_json(tmp_path):
    gt, results = keypoints_case()
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    status, out, err = run("coco", tmp_path / "gt.json", tmp_path / "dt.json", "--iou-type",
                           "keypoints", "--per-class", "--json", tmp_path / "out.json")
    assert status == 0, err
    header = next(line for line in out.splitlines() if line.lstrip().startswith("id"))
    assert header.split() == ["id", "name", "AP", "AP50", "AP75", "APm", "APl", "AR", "n_gt",
                              "n_dt"]
    payload = json.loads((tmp_path / "out.json").read_text())
    assert list(payload["stats_named"]) == list(KEYPOINT_STAT_NAMES)
    assert "APs" not in payload["per_class"][0] and payload["per_class"][0]["AR"] == 0.95
    assert payload["params"]["max_detections"] == [20]
    assert payload["params"]["area_labels"] == ["all", "medium", "large"]


def test_notes_explain_keypoint_stats_that_cannot_be_computed():
    gt, results = keypoints_case()
    result = deteval.evaluate_coco(gt, results, iou_type="keypoints", max_detections=[5])
    assert (result.stats == -1).all()
    assert any("maxDets=20" in note for note in result.notes)
    result = deteval.evaluate_coco(gt, results, iou_type="keypoints", use_categories=False)
    assert result.stats[0] == 0.0
    assert any("use_categories=False match nothing" in note for note in result.notes)
    result = deteval.evaluate_coco(gt, results, iou_type="keypoints")
    assert result.notes == ()


# ---------------------------------------------------------------------------------------------
# Polygons: repair option, conversion to COCO, eval command
# ---------------------------------------------------------------------------------------------


def test_evaluate_coco_repairs_invalid_polygons_on_request(tmp_path):
    gt, results = polygon_case()
    gt["annotations"][0]["polygon"] = [10, 10, 50, 30, 50, 10, 10, 30]  # a bow-tie
    with pytest.raises(FormatError, match=r"annotations\[0\] \(id 1\): polygon is not valid "
                                          r".*invalid='repair'"):
        deteval.evaluate_coco(gt, results, iou_type="polygon")
    repaired = deteval.evaluate_coco(gt, results, iou_type="polygon", invalid="repair")
    assert repaired.dataset.gt.area[0] == 400.0   # two triangles of 200
    with pytest.raises(ValueError, match="invalid must be"):
        deteval.evaluate_coco(gt, results, iou_type="polygon", invalid="fix")
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    status, _, err = run("coco", tmp_path / "gt.json", tmp_path / "dt.json", "--iou-type",
                         "polygon")
    assert status == 1 and "pass --repair-polygons" in err and "invalid=" not in err
    status, out, err = run("coco", tmp_path / "gt.json", tmp_path / "dt.json", "--iou-type",
                           "polygon", "--repair-polygons")
    assert status == 0, err
    assert [line for line in out.splitlines() if line.startswith(" Average")] == \
        repaired.summary_lines


def test_dota_converted_to_coco_keeps_its_polygons(tmp_path):
    labels, dets = dota_folders(tmp_path)
    status, _, err = run("convert", labels, tmp_path / "gt.json")
    assert status == 0, err
    written = json.loads((tmp_path / "gt.json").read_text())
    assert written["annotations"][1]["segmentation"] == [[100.0, 100.0, 140.0, 120.0, 130.0,
                                                          140.0, 90.0, 120.0]]
    status, direct, err = run("eval", labels, dets, "--protocol", "coco", "--iou-type",
                              "polygon")
    assert status == 0, err
    dataset = read_coco_gt(tmp_path / "gt.json", iou_type="polygon")
    detections = read_dota_detections(dets, dataset)
    again = deteval.evaluate_coco(dataset, detections, iou_type="polygon")
    assert [line for line in direct.splitlines() if line.startswith(" Average")] == \
        again.summary_lines


def test_dataset_to_coco_round_trips_every_shape():
    gt, results = polygon_case()
    for iou_type in ("polygon", "rotated"):
        dataset = read_coco_gt(gt, iou_type=iou_type)
        back = read_coco_gt(dataset_to_coco(dataset), iou_type=iou_type)
        assert all(a.equals(b) for a, b in zip(dataset.gt.polygons, back.gt.polygons))
        if iou_type == "rotated":
            assert np.array_equal(back.gt.rboxes, dataset.gt.rboxes)
    segm_gt, _ = make_segm_dataset(4)
    dataset = read_coco_gt(segm_gt, iou_type="segm")
    back = read_coco_gt(dataset_to_coco(dataset), iou_type="segm")
    assert [m["counts"] for m in back.gt.masks] == [m["counts"] for m in dataset.gt.masks]
    kp_gt, _ = make_keypoints_dataset(5, other_category=True)
    dataset = read_coco_gt(kp_gt, iou_type="keypoints")
    back = read_coco_gt(dataset_to_coco(dataset), iou_type="keypoints")
    assert np.array_equal(back.gt.keypoints, dataset.gt.keypoints, equal_nan=True)
    assert np.array_equal(back.gt.num_keypoints, dataset.gt.num_keypoints)


def test_polygons_with_holes_warn_when_written_to_coco():
    from shapely import Polygon

    gt = deteval.GroundTruth(image_index=[0], category_index=[0], boxes=[[0, 0, 10, 10]],
                             polygons=[Polygon([(0, 0), (10, 0), (10, 10), (0, 10)],
                                               [[(2, 2), (4, 2), (4, 4)]])])
    dataset = deteval.Dataset(deteval.Images(ids=[1]), deteval.Categories(ids=[1]), gt)
    with pytest.warns(deteval.FormatWarning, match="1 polygon.* holes"):
        coco = dataset_to_coco(dataset)
    assert coco["annotations"][0]["segmentation"] == [[0.0, 0.0, 10.0, 0.0, 10.0, 10.0, 0.0,
                                                       10.0]]


def test_eval_polygon_on_box_only_inputs_says_where_outlines_come_from(tmp_path):
    labels, dets = dota_folders(tmp_path)
    assert run("convert", labels, tmp_path / "gt.json")[0] == 0  # read back as boxes
    status, _, err = run("eval", tmp_path / "gt.json", dets, "--protocol", "coco",
                         "--iou-type", "polygon")
    assert status == 1
    assert re.search(r"gt\.json \(ground truth\) gives boxes only.*deteval coco --iou-type "
                     r"polygon", err), err


def test_box_results_on_images_of_unknown_size_say_why_a_size_is_needed():
    gt, results = segm_case()
    gt["annotations"] = [a for a in gt["annotations"] if isinstance(a["segmentation"], dict)]
    for image in gt["images"]:
        del image["width"], image["height"]
    boxes = [{k: v for k, v in r.items() if k != "segmentation"} | {"bbox": [1, 1, 3, 2]}
             for r in results]
    with pytest.raises(FormatError, match=r"results\[0\]: a result without 'segmentation' is "
                                          r"rasterised from its 'bbox'.*'height' and 'width'"):
        deteval.evaluate_coco(gt, boxes, iou_type="segm")


# ---------------------------------------------------------------------------------------------
# The caller's data
# ---------------------------------------------------------------------------------------------


def test_inputs_are_unchanged_for_every_shape_type(capfd):
    cases = [("polygon", *polygon_case()), ("rotated", *polygon_case())]
    gt, results = polygon_case()
    for record in gt["annotations"] + results:
        del record["polygon"]          # no 'bbox' either: the reader fills boxes in
    cases.append(("rotated", gt, results))
    gt, results = segm_case()
    gt["annotations"][1]["bbox"] = []
    results[0]["bbox"] = []
    cases.append(("segm", gt, results))
    gt, results = keypoints_case()
    results[0]["bbox"] = []
    cases.append(("keypoints", gt, results))
    for iou_type, gt, results in cases:
        before = copy.deepcopy((gt, results))
        with contextlib.redirect_stdout(io.StringIO()):
            deteval.evaluate_coco(gt, results, iou_type=iou_type)
            deteval.evaluate_coco(gt, results, iou_type=iou_type, use_categories=False)
        assert (gt, results) == before, iou_type
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("results", ["none", "some"])
def test_a_wrong_number_of_sigmas_is_refused_before_matching_naming_the_setting(
        results, tmp_path):
    # was (fuzzer): checked only once a result-object pair was compared, so with no results
    # the run succeeded, and the message named neither keypoint_sigmas nor --kpt-sigmas
    gt, dt = make_keypoints_dataset(3)
    dt = [] if results == "none" else dt
    with pytest.raises(ValueError, match=r"keypoint_sigmas \(--kpt-sigmas\): category \d+ "
                       r"\(\w+\) has 17 keypoints but 3 sigmas were given"):
        deteval.evaluate_coco(gt, dt, iou_type="keypoints", keypoint_sigmas=[0.1, 0.2, 0.3])
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    err = io.StringIO()
    code = main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--iou-type",
                 "keypoints", "--kpt-sigmas", "0.1 0.2 0.3"], stdout=io.StringIO(), stderr=err)
    assert code != 0 and "--kpt-sigmas" in err.getvalue(), err.getvalue()
