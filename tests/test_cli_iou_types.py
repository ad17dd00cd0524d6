"""``deteval coco --iou-type segm|keypoints|polygon|rotated``: the printed summary equals the
library's (and pycocotools' where it has the protocol)."""

from __future__ import annotations

import contextlib
import copy
import io
import json

import numpy as np
from clirun import run
from scenes import dota_folders, keypoint_scene

import deteval


def pycocotools_summary(gt: dict, results: list, iou_type: str) -> list[str]:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        coco = COCO()
        coco.dataset = copy.deepcopy(gt)
        coco.createIndex()
        evaluator = COCOeval(coco, coco.loadRes(copy.deepcopy(results)), iou_type)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return [line for line in text.getvalue().splitlines() if line.startswith(" Average")]


def test_keypoints_summary_equals_pycocotools(tmp_path):
    gt, results = keypoint_scene()
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    status, out, err = run("coco", tmp_path / "gt.json", tmp_path / "dt.json",
                           "--iou-type", "keypoints", "--json", tmp_path / "out.json")
    assert status == 0, err
    lines = [line for line in out.splitlines() if line.startswith(" Average")]
    assert lines == pycocotools_summary(gt, results, "keypoints")
    assert len(lines) == 10 and "maxDets= 20" in lines[0]
    payload = json.loads((tmp_path / "out.json").read_text())
    assert set(payload["stats_named"]) == set(deteval.KEYPOINT_STAT_NAMES)


def test_keypoint_sigmas_option_changes_the_numbers(tmp_path):
    gt, results = keypoint_scene()
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    wide = " ".join(["0.5"] * 17)
    status, out, _ = run("coco", tmp_path / "gt.json", tmp_path / "dt.json",
                         "--iou-type", "keypoints", "--kpt-sigmas", wide)
    assert status == 0
    expected = deteval.evaluate_coco(gt, results, iou_type="keypoints",
                                     keypoint_sigmas=[0.5] * 17)
    assert [line for line in out.splitlines() if line.startswith(" Average")] == \
        expected.summary_lines
    default = deteval.evaluate_coco(gt, results, iou_type="keypoints")
    assert not np.array_equal(default.stats, expected.stats)


def test_wrong_sigma_count_is_a_clear_error(tmp_path):
    gt, results = keypoint_scene()
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    status, _, err = run("coco", tmp_path / "gt.json", tmp_path / "dt.json",
                         "--iou-type", "keypoints", "--kpt-sigmas", "0.1 0.2")
    assert status == 1
    assert "17 keypoints" in err and "2 sigmas" in err


def test_segm_on_the_shared_sample_prints_the_expected_summary(coco100_dir):
    expected = json.loads((coco100_dir / "expected_pycocotools_2.0.11.json").read_text())["segm"]
    status, out, err = run("coco", coco100_dir / "instances_val2014_100.json",
                           coco100_dir / "instances_val2014_fakesegm100_results.json",
                           "--iou-type", "segm")
    assert status == 0, err
    assert [line for line in out.splitlines() if line.startswith(" Average")] == \
        expected["summary"]


def test_segm_without_masks_in_the_ground_truth_names_the_record(tmp_path):
    gt = {"images": [{"id": 1, "width": 10, "height": 10}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 7, "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4],
                           "area": 16, "iscrowd": 0}]}
    results = [{"image_id": 1, "category_id": 1, "score": 0.5,
                "segmentation": {"size": [10, 10], "counts": "0:<0"}}]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    status, _, err = run("coco", tmp_path / "gt.json", tmp_path / "dt.json",
                         "--iou-type", "segm")
    assert status == 1
    assert "gt.json" in err and "annotations[0] (id 7)" in err and "segmentation" in err


def test_dota_folders_evaluate_with_exact_polygon_iou(tmp_path):
    from deteval.io.dota import read_dota, read_dota_detections

    labels, dets = dota_folders(tmp_path, more=True)
    dataset = read_dota(labels)
    expected = deteval.evaluate_coco(dataset, read_dota_detections(dets, dataset),
                                     iou_type="polygon")
    boxes = deteval.evaluate_coco(dataset, read_dota_detections(dets, dataset))
    assert not np.array_equal(expected.precision, boxes.precision)  # the outlines matter
    status, out, err = run("eval", labels, dets, "--protocol", "coco", "--iou-type", "polygon")
    assert status == 0, err
    assert [line for line in out.splitlines() if line.startswith(" Average")] == \
        expected.summary_lines
    status, _, err = run("eval", labels, dets, "--protocol", "voc2007", "--iou-type", "polygon")
    assert status == 2 and "--protocol coco" in err


def test_eval_repair_polygons_applies_to_the_dota_side(tmp_path):
    """A bow-tie quadrilateral is refused, naming the file and line and the flag; with
    --repair-polygons it is repaired (make_valid) on the side read as dota, and the numbers
    equal the library's with invalid="repair"; the flag without a dota side is a usage
    error."""
    from deteval.io.dota import read_dota, read_dota_detections

    labels, dets = tmp_path / "labelTxt", tmp_path / "dets"
    labels.mkdir()
    dets.mkdir()
    (labels / "P0001.txt").write_text("10 10 50 10 50 30 10 30 plane 0\n"
                                      "0 0 40 40 40 0 0 40 plane 0\n")        # a bow-tie
    (dets / "Task1_plane.txt").write_text("P0001 0.9 11 10 50 11 49 30 10 29\n"
                                          "P0001 0.8 0 0 40 0 40 40 0 40\n")
    status, _, err = run("eval", labels, dets, "--protocol", "coco", "--iou-type", "polygon")
    assert status == 1
    assert "P0001.txt" in err and "--repair-polygons" in err and "invalid=" not in err
    status, out, err = run("eval", labels, dets, "--protocol", "coco", "--iou-type", "polygon",
                           "--repair-polygons")
    assert status == 0, err
    dataset = read_dota(labels, invalid="repair")
    expected = deteval.evaluate_coco(dataset, read_dota_detections(dets, dataset),
                                     iou_type="polygon")
    assert [line for line in out.splitlines() if line.startswith(" Average")] == \
        expected.summary_lines
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps({"images": [{"id": 1, "width": 9, "height": 9}],
                              "annotations": [], "categories": [{"id": 1, "name": "a"}]}))
    (tmp_path / "dt.json").write_text("[]")
    status, _, err = run("eval", gt, tmp_path / "dt.json", "--protocol", "coco",
                         "--repair-polygons")
    assert status == 2 and "--repair-polygons applies to dota" in err
