"""The findings of the fuzz campaigns over the commands (scripts/fuzz/commands.py), each as
its minimal input run through the harness (``run_case``: a forked child under a timeout, so
a finding that comes back as a hang fails the test instead of hanging it), with the outcome
the command must give: the exit status, an error naming the file or the option, and no
file written by a run that failed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from fuzz.generators import Case  # noqa: E402
from fuzz.runner import run_case  # noqa: E402

GT = {"images": [{"id": 1, "width": 100, "height": 80, "file_name": "a.jpg", "weather": "sun"},
                 {"id": 2, "width": 100, "height": 80, "file_name": "b.jpg", "weather": "rain"}],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 30, 20],
                       "area": 600, "iscrowd": 0},
                      {"id": 2, "image_id": 2, "category_id": 1, "bbox": [50, 40, 20, 20],
                       "area": 400, "iscrowd": 0}],
      "categories": [{"id": 1, "name": "cat"}]}
DT = [{"image_id": 1, "category_id": 1, "bbox": [11, 10, 30, 20], "score": 0.9},
      {"image_id": 2, "category_id": 1, "bbox": [0, 0, 20, 20], "score": 0.4}]


def _case(argv: list[str], *, extra: dict[str, bytes] | None = None,
          expect: tuple[int, ...], names: list[str] = (), outputs: list[str] = (),
          special: list | None = None) -> Case:
    files = {"gt.json": json.dumps(GT).encode(), "dt.json": json.dumps(DT).encode(),
             "dt2.json": json.dumps(DT[:1]).encode(), **(extra or {})}
    return Case("finding", files, argv, special=special or [], expect=expect,
                names=list(names), outputs=list(outputs))


def _clean(case: Case) -> dict:
    outcome = run_case(case, timeout=20)
    assert not outcome["failed"], (outcome["failed"], outcome["stderr"])
    return outcome


@pytest.mark.parametrize("raw", [b"image_id,weather\n1,\xff\n", b"\xff\xfe1\x002\x00"])
def test_a_tags_csv_that_is_not_utf8_is_refused_naming_it(raw):
    # was: UnicodeDecodeError (a traceback) from open(encoding="utf-8-sig")
    outcome = _clean(_case(["coco", "gt.json", "dt.json", "--slice-file", "tags.csv"],
                           extra={"tags.csv": raw}, expect=(1,), names=["tags.csv"]))
    assert "tags.csv" in outcome["stderr"]


def test_a_tags_csv_that_is_a_fifo_is_refused_not_waited_on():
    # was: open() of a FIFO without a writer, blocked for ever
    outcome = _clean(_case(["coco", "gt.json", "dt.json", "--slice-file", "tags.csv"],
                           special=[("fifo", "tags.csv")], expect=(1,), names=["tags.csv"]))
    assert "FIFO" in outcome["stderr"]


@pytest.mark.parametrize("argv", [
    ["coco", "gt.json", "dt.json", "--ci", "3", "--seed", "-3"],
    ["compare", "gt.json", "dt.json", "dt2.json", "--bootstrap", "3", "--seed", "-1"],
])
def test_a_negative_seed_is_a_usage_error(argv):
    # was: numpy's "ValueError: expected non-negative integer" (a traceback)
    _clean(_case(argv, expect=(2,), names=["--seed"]))


@pytest.mark.parametrize(("flag", "value", "argv"), [
    ("--ci", "١٢", ["coco", "gt.json", "dt.json"]),
    ("--ci", "1_0", ["coco", "gt.json", "dt.json"]),
    ("--seed", "١", ["compare", "gt.json", "dt.json", "dt2.json", "--bootstrap", "2"]),
    ("--bootstrap", "１２", ["compare", "gt.json", "dt.json", "dt2.json"]),
    ("--confidence", "٠.٩", ["compare", "gt.json", "dt.json", "dt2.json"]),
    ("--bins", "٣", ["calibration", "gt.json", "dt.json"]),
    ("--iou-threshold", "٠.٥", ["calibration", "gt.json", "dt.json"]),
    ("--threads", "٢", ["coco", "gt.json", "dt.json"]),
    ("--pos-threshold", "٠.٥", ["errors", "gt.json", "dt.json"]),
    ("--max-detections", "1_0", ["errors", "gt.json", "dt.json"]),
    ("--dilation-ratio", "٠.١", ["coco", "gt.json", "dt.json", "--iou-type", "boundary"]),
])
def test_number_options_read_ascii_decimals_only(flag, value, argv):
    # docs/input-acceptance.md: other scripts' digits and underscores are refused in number
    # options; int() and float() read them (١٢ as 12, 1_0 as 10) and the run went on
    _clean(_case(argv + [flag, value], expect=(2,), names=[flag]))


@pytest.mark.parametrize("extra", [
    ["--slice", "nosuch"],
    ["--table-iou", "0.42"],
    ["--slice", "nosuch", "--ci", "2"],
])
def test_a_coco_run_that_fails_writes_no_output(extra):
    # was: --table and --matches written, then the slice key (or --table-iou) refused
    _clean(_case(["coco", "gt.json", "dt.json", "--table", "out.csv", "--matches", "m.csv",
                  "--json", "metrics.json", *extra], expect=(1, 2),
                 names=["nosuch", "--table-iou"]))


def test_the_commands_outputs_are_written_when_the_run_succeeds():
    _clean(_case(["coco", "gt.json", "dt.json", "--table", "out.csv", "--matches", "m.csv",
                  "--slice", "weather", "--ci", "2", "--json", "metrics.json"], expect=(0,),
                 outputs=["out.csv", "m.csv", "metrics.json"]))


def test_expand_detections_without_a_hierarchy_is_a_usage_error_naming_the_flags():
    # was: "deteval: error: expand_detections=True needs a hierarchy" (the Python keyword,
    # exit 1)
    boxes = (b"ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,"
             b"IsTruncated,IsGroupOf,IsDepiction,IsInside\na,xclick,/m/01,1,0.1,0.4,0.1,0.3,"
             b"0,0,0,0,0\n")
    dets = b"ImageID,LabelName,Score,XMin,XMax,YMin,YMax\na,/m/01,0.9,0.1,0.4,0.1,0.3\n"
    outcome = _clean(_case(["openimages", "boxes.csv", "dets.csv", "--expand-detections"],
                           extra={"boxes.csv": boxes, "dets.csv": dets}, expect=(2,),
                           names=["--expand-detections"]))
    assert "--hierarchy" in outcome["stderr"]


@pytest.mark.parametrize(("flag", "argv"), [
    ("--max-detections", ["calibration", "gt.json", "dt.json"]),
    ("--bins", ["calibration", "gt.json", "dt.json"]),
    ("--ci", ["coco", "gt.json", "dt.json"]),
])
def test_a_count_beyond_int64_is_a_usage_error_naming_its_flag(flag, argv):
    # was: calibration --max-detections 1e23 named --max-dets (another command's flag),
    # --bins 1e23 said "Maximum allowed size exceeded" (numpy's words), --ci 1e23 ran for ever
    _clean(_case(argv + [flag, "99999999999999999999999"], expect=(2,), names=[flag]))


@pytest.mark.parametrize("rule", ["AP:١", "AP:0_1", "AP:０.１"])
def test_a_regression_tolerance_reads_ascii_decimals_only(rule):
    _clean(_case(["compare", "gt.json", "dt.json", "dt2.json", "--bootstrap", "2",
                  "--fail-if-regression", rule], expect=(2,), names=["--fail-if-regression"]))


def test_two_equal_run_names_are_a_usage_error_naming_the_flag():
    # was: exit 1 after the evaluation, "names must be two different names" (the Python
    # argument's words)
    _clean(_case(["report", "gt.json", "dt.json", "dt2.json", "--out", "out", "--quiet",
                  "--gallery", "0", "--run-names", "A", "A"], expect=(2,),
                 names=["--run-names"]))


@pytest.mark.parametrize(("flag", "value"), [
    ("--pos-threshold", "1.5"), ("--pos-threshold", "nan"), ("--background-threshold", "0.6"),
    ("--background-threshold", "-1"), ("--max-detections", "0"),
])
def test_errors_refuses_its_thresholds_by_their_flags(flag, value):
    # was: exit 1 naming the Python keywords (pos_threshold, background_threshold, max_dets)
    _clean(_case(["errors", "gt.json", "dt.json", flag, value], expect=(2,), names=[flag]))


LVIS = {**GT, "images": [{**image, "neg_category_ids": [], "not_exhaustive_category_ids": []}
                         for image in GT["images"]],
        "categories": [{**c, "frequency": "f"} for c in GT["categories"]]}


@pytest.mark.parametrize("argv", [
    ["lvis", "lvis.json", "dt.json", "--json", "metrics.json", "--matches", "/proc/m.csv"],
    ["calibration", "gt.json", "dt.json", "--json", "metrics.json", "--plot", "/proc/p.png"],
    ["coco", "gt.json", "dt.json", "--table", "out.csv", "--matches", "/proc/m.csv"],
])
def test_a_run_whose_second_output_cannot_be_written_leaves_no_first_one(argv):
    # was: the first output written, then the second refused by the OS (exit 1): the files
    # a command writes are now renamed into place together when it succeeds
    _clean(_case(argv, extra={"lvis.json": json.dumps(LVIS).encode()}, expect=(1,),
                 names=["/proc/"]))


def test_a_report_without_objects_to_attribute_errors_to():
    # was: "unsupported format string passed to NoneType.__format__" (exit 1): TIDE's AP is
    # undefined (None) when the ground truth holds only a crowd region
    gt = {**GT, "annotations": [{**GT["annotations"][0], "iscrowd": 1}]}
    _clean(_case(["report", "crowd.json", "empty.json", "--out", "r.html", "--single-file",
                  "--quiet", "--gallery", "0"],
                 extra={"crowd.json": json.dumps(gt).encode(), "empty.json": b"[]"},
                 expect=(0,), outputs=["r.html"]))


def test_a_report_comparing_a_file_with_itself():
    # was: "names must be two different names" (exit 1); compare numbers the two the same way
    _clean(_case(["report", "gt.json", "dt.json", "dt.json", "--out", "out", "--quiet",
                  "--gallery", "0"], expect=(0,), outputs=["out/index.html"]))
