"""Rough edges of the command line and the readers: messages in CLI words, number lists typed
without quotes, oversized values, an empty images folder, an overflowing text detection, a
keypoint ground truth without area, the AP = -1 of a maxDets setting without 100."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run

import deteval

ROOT = Path(__file__).resolve().parents[1]
DEMO_GT, DEMO_DT = ROOT / "fixtures/demo/gt.json", ROOT / "fixtures/demo/detections.json"


def test_number_lists_work_unquoted_as_well_as_quoted():
    quoted = run("coco", DEMO_GT, DEMO_DT, "--max-dets", "1 10 100", "--iou-thresholds",
                 "0.5 0.75")
    unquoted = run("coco", DEMO_GT, DEMO_DT, "--max-dets", "1", "10", "100",
                   "--iou-thresholds", "0.5", "0.75")
    before = run("coco", "--max-dets", "1", "10", "100", "--iou-thresholds", "0.5", "0.75",
                 DEMO_GT, DEMO_DT)
    commas = run("coco", DEMO_GT, DEMO_DT, "--max-dets", "1,10,100", "--iou-thresholds",
                 "0.5,0.75")
    assert quoted[0] == 0 and quoted == unquoted == before == commas


def test_an_oversized_value_is_too_large_in_cli_words():
    status, _, err = run("coco", DEMO_GT, DEMO_DT, "--max-dets", "1", "10",
                         "99999999999999999999")
    assert status == 1
    assert err == ("deteval: error: --max-dets holds 99999999999999999999, too large: values "
                   "must be below 2**63; got '1 10 99999999999999999999'\n")
    with pytest.raises(deteval.OptionError, match="max_detections holds 1e\\+30, too large"):
        deteval.COCOParams(max_detections=(1, 10, 1e30))


def test_settings_errors_name_the_flag_not_the_python_argument():
    # The parser refuses a value that is not a positive integer (usage error, exit 2) ...
    status, _, err = run("coco", DEMO_GT, DEMO_DT, "--max-dets", "0", "10", "100")
    assert status == 2 and "argument --max-dets: expected a list of positive int" in err
    assert "max_detections" not in err and "got '0 10 100'" in err
    # ... and so are too few values, naming the flag (the kpt-sigmas case below is the
    # library's own settings error, exit 1).
    status, _, err = run("coco", DEMO_GT, DEMO_DT, "--max-dets", "1", "10")
    assert status == 2 and "--max-dets needs 3 values" in err
    status, _, err = run("coco", DEMO_GT, DEMO_DT, "--iou-type", "keypoints", "--kpt-sigmas",
                         "0.5", "-1")
    assert status == 1 and "--kpt-sigmas must be a list of positive numbers" in err


@pytest.mark.parametrize("command", [
    ("coco",), ("lvis",), ("errors",), ("errors", "--protocol", "lvis"),
    ("draw", "--out", "drawn"),
])
@pytest.mark.parametrize("ratio", ["-1", "nan", "inf", "-0.02"])
def test_a_dilation_ratio_below_zero_or_not_finite_is_a_usage_error_naming_the_flag(
        command, ratio, tmp_path):
    """Once an exit 1 whose message named neither the flag nor a file (the library's
    ``dilation_ratio must be ...``); refused by the parser before any file is read."""
    status, _, err = run(command[0], tmp_path / "gt.json", tmp_path / "dt.json", *command[1:],
                         "--iou-type", "boundary", "--dilation-ratio", ratio)
    assert status == 2, err
    assert (f"argument --dilation-ratio: expected a boundary width ratio in [0, inf); got "
            f"'{ratio}'") in err
    assert not (tmp_path / "drawn").exists()


def test_the_summary_reading_maxdets_100_without_100_explains_the_minus_one():
    """The README's `--max-dets '1 10 300'`: AP (first line) is -1, and a note says why."""
    status, out, err = run("coco", DEMO_GT, DEMO_DT, "--max-dets", "1 10 300")
    assert status == 0 and out.splitlines()[0].endswith("= -1.000")
    assert err == ("deteval: note: AP is -1: pycocotools' summary reads it at maxDets=100, "
                   "which is not among the max-detections settings (1 10 300); add 100 to get "
                   "it\n")


def test_reader_advice_is_in_cli_words(tmp_path):
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "a.txt").write_text("0 0.5 0.5 0.1 0.1\n")
    status, _, err = run("voc", labels, DEMO_DT, "--gt-format", "yolo")
    assert status == 1 and "pass --classes FILE" in err and "names=" not in err
    (labels / "obj.names").write_text("cat\n")
    status, _, err = run("voc", labels, DEMO_DT, "--gt-format", "yolo")
    assert status == 1 and "pass --images DIR" in err and "images_dir" not in err


def test_an_overflowing_text_detection_names_file_and_line(tmp_path):
    dataset = deteval.read_coco_gt(DEMO_GT)
    name = Path(dataset.images.file_names[0]).stem
    folder = tmp_path / "dets"
    folder.mkdir()
    (folder / f"{name}.txt").write_text("1 0.9 1 1 2 2\n1 0.8 0 0 1e200 1e200\n")
    with pytest.raises(deteval.FormatError) as caught:
        deteval.read_detections(folder, dataset, box_format="xywh")
    assert str(caught.value).startswith(f"{folder / name}.txt: line 2: box [0.0, 0.0, 1e+200, "
                                        "1e+200] (xywh) overflows")
    status, _, err = run("voc", DEMO_GT, folder, "--box-format", "xyxy")
    assert status == 1 and f"{name}.txt: line 2: box" in err


def test_an_empty_images_folder_gives_one_summary_warning(tmp_path):
    (tmp_path / "images").mkdir()
    status, _, err = run("draw", DEMO_GT, DEMO_DT, "--images", tmp_path / "images", "--out",
                         tmp_path / "out", "--quiet")
    n_images = len(deteval.read_coco_gt(DEMO_GT).images)
    assert status == 1
    warnings = [line for line in err.splitlines() if line.startswith("deteval: warning")]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"deteval: warning: {n_images} image(s) skipped, missing or "
                                  f"unreadable under --images {tmp_path / 'images'}: ")
    assert warnings[0].endswith(f"and {n_images - 5} more")


def test_keypoint_ground_truth_without_area_is_noted(tmp_path):
    gt = {"images": [{"id": 1, "width": 100, "height": 100}],
          "categories": [{"id": 1, "name": "person", "keypoints": ["a", "b"]}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 40],
                           "keypoints": [15, 15, 2, 25, 45, 2], "num_keypoints": 2,
                           "iscrowd": 0}]}
    dt = [{"image_id": 1, "category_id": 1, "keypoints": [15, 15, 1, 25, 45, 1], "score": 0.9}]
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    for source in (gt, path):
        result = deteval.evaluate_coco(source, dt, iou_type="keypoints",
                                       keypoint_sigmas=[0.5, 0.5])
        assert any("have no 'area' (the first: annotations[0] (id 1)): their box area w * h is "
                   "used as the OKS scale (pycocotools raises KeyError" in n
                   for n in result.notes)
    with_area = {**gt, "annotations": [{**gt["annotations"][0], "area": 800}]}
    assert deteval.evaluate_coco(with_area, dt, iou_type="keypoints",
                                 keypoint_sigmas=[0.5, 0.5]).notes == ()
