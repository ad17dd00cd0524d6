"""Tests of ``deteval voc``, ``deteval eval`` and ``deteval convert`` (deteval.cli) through
``main([...])``: a small dataset written in several formats in a temporary folder, and the
shared voc_sample_100 when it is present."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from clirun import run
from PIL import Image

import deteval
from deteval.cli import main
from deteval.demo import DEMO_CATEGORIES, make_demo
from deteval.io.csv import write_csv


def run_json(tmp_path: Path, *argv) -> tuple[dict, str, str]:
    """Run a command that succeeds with ``--json``; returns the payload, stdout and stderr."""
    path = tmp_path / f"out{len(list(tmp_path.glob('out*.json')))}.json"
    status, out, err = run(*argv, "--json", path)
    assert status == 0, err
    return json.loads(path.read_text()), out, err


def ap_by_name(payload: dict) -> dict[str, list]:
    return {row["name"]: row["ap"] for row in payload["per_class"]}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """The demo sample without crowd regions, every 7th object difficult, as COCO JSON, a VOC
    folder, a YOLO folder (with images for the sizes) and CSV; detections as a COCO results
    list (ids), a COCO results dict (matched by names) and CSV."""
    folder = tmp_path_factory.mktemp("formats")
    gt, results = make_demo(seed=1)
    gt["annotations"] = [a for a in gt["annotations"] if not a["iscrowd"]]
    for annotation in gt["annotations"][::7]:
        annotation["ignore"] = 1
    dataset = deteval.read_coco_gt(gt)
    paths = {name: folder / name for name in (
        "gt.json", "voc", "yolo", "gt.csv", "images", "classes.txt", "dt.json", "named.json",
        "dt.csv", "empty.json")}
    deteval.write_gt(dataset, paths["gt.json"])
    deteval.write_gt(dataset, paths["voc"], "voc")
    deteval.write_gt(dataset, paths["gt.csv"])
    with warnings.catch_warnings():  # YOLO has no difficult flag: tested below
        warnings.simplefilter("ignore", deteval.FormatWarning)
        deteval.write_gt(dataset, paths["yolo"], "yolo")
    paths["images"].mkdir()
    for image in gt["images"]:
        Image.new("L", (image["width"], image["height"])).save(
            paths["images"] / image["file_name"].replace(".jpg", ".png"))
    paths["classes.txt"].write_text("\n".join(DEMO_CATEGORIES) + "\n")
    paths["dt.json"].write_text(json.dumps(results))
    paths["named.json"].write_text(json.dumps(
        {"images": gt["images"], "categories": gt["categories"], "annotations": results}))
    write_csv(dataset, paths["dt.csv"], detections=deteval.read_coco_results(results, dataset))
    paths["empty.json"].write_text("[]")
    return paths


@pytest.fixture(scope="module")
def dataset(files) -> deteval.Dataset:
    return deteval.read_coco_gt(files["gt.json"])


@pytest.fixture(scope="module")
def detections(files, dataset) -> deteval.Detections:
    return deteval.read_coco_results(files["dt.json"], dataset)


# --------------------------------------------------------------------------------------------
# deteval voc
# --------------------------------------------------------------------------------------------


def test_voc_prints_the_summary_table(files, dataset, detections):
    status, out, err = run("voc", files["gt.json"], files["dt.json"])
    assert status == 0 and err == ""
    expected = deteval.evaluate_voc(dataset, detections)
    assert out == expected.summary() + "\n"
    lines = out.splitlines()
    assert lines[0] == "Pascal VOC evaluation: AP all-points, IoU >= t, inclusive pixels (+1)"
    assert lines[1].split()[:2] == ["category", "AP@0.50"]
    assert [line.split()[0] for line in lines[2:7]] == ["person", "bicycle", "car", "dog",
                                                        "traffic"]
    assert lines[-1] == f"mAP@0.50 = {expected.map[0]:.4f} over 5 classes"


@pytest.mark.parametrize(("argv", "preset"), [
    ([], "VOC2012"), (["--year", "2007"], "VOC2007"), (["--year", "2012"], "VOC2012"),
    (["--detectron2"], "DETECTRON2_VOC2012"),
    (["--detectron2", "--year", "2007"], "DETECTRON2_VOC2007")])
def test_voc_presets_and_json(files, dataset, detections, tmp_path, argv, preset):
    payload, out, _ = run_json(tmp_path, "voc", files["gt.json"], files["dt.json"], *argv)
    expected = deteval.evaluate_voc(dataset, detections, params=getattr(deteval, preset))
    assert payload["preset"] == preset
    assert payload["map"] == expected.map.tolist()
    assert payload["per_class"] == json.loads(json.dumps(expected.per_class()))
    assert payload["summary"] == expected.summary().splitlines()
    assert set(payload["timings"]) >= {"load", "match", "accumulate", "total"}
    assert out.splitlines() == expected.summary().splitlines()
    if preset.startswith("DETECTRON2"):
        assert len(payload["map"]) == 10 and "mAP@[0.50:0.95] (10 thresholds)" in out


@pytest.mark.parametrize("spelling", ["0.5 0.75", "0.5,0.75"])
def test_voc_iou_thresholds(files, dataset, detections, tmp_path, spelling):
    payload, out, _ = run_json(tmp_path, "voc", files["gt.json"], files["dt.json"], "--iou",
                               spelling)
    expected = deteval.evaluate_voc(dataset, detections, iou_thresholds=(0.5, 0.75))
    assert payload["iou_thresholds"] == [0.5, 0.75]
    assert payload["map"] == expected.map.tolist()
    assert "mAP@0.75 = " in out


def test_voc_notes_go_to_stderr(files):
    status, out, err = run("voc", files["gt.json"], files["empty.json"])
    assert status == 0
    assert err == "deteval: note: no detections: every class with ground truth has AP 0\n"
    assert "note" not in out and out.splitlines()[-1].startswith("mAP@0.50 = 0.0000")


# The same ground truth in four formats, the same detections in three: one VOC result.
GT_INPUTS = {
    "coco": ("gt.json", []),
    "voc": ("voc", []),
    "voc-classes": ("voc", ["--classes", "classes.txt"]),
    "csv": ("gt.csv", []),
    "csv-named-format": ("gt.csv", ["--gt-format", "csv", "--gt-box-format", "xyxy"]),
}
DT_INPUTS = {
    "coco-named": ("named.json", []),
    "csv": ("dt.csv", []),
    "csv-named-format": ("dt.csv", ["--dt-format", "csv", "--box-format", "xyxy"]),
}


@pytest.mark.parametrize("dt_input", DT_INPUTS)
@pytest.mark.parametrize("gt_input", GT_INPUTS)
def test_voc_reads_every_format(files, dataset, detections, tmp_path, gt_input, dt_input):
    (gt, gt_options), (dt, dt_options) = GT_INPUTS[gt_input], DT_INPUTS[dt_input]
    gt_options = [files[v] if v in files else v for v in gt_options]
    payload, _, _ = run_json(tmp_path, "voc", files[gt], files[dt], *gt_options, *dt_options)
    expected = deteval.evaluate_voc(dataset, detections)
    assert payload["map"] == expected.map.tolist()
    assert ap_by_name(payload) == {row["name"]: row["ap"] for row in expected.per_class()}
    if gt_input in ("coco", "voc-classes"):  # category ids kept: a results list works too
        by_ids, _, _ = run_json(tmp_path, "voc", files[gt], files["dt.json"], *gt_options)
        assert by_ids["map"] == payload["map"] and by_ids["per_class"] == payload["per_class"]


def test_voc_category_ids_follow_classes(files, dataset, detections, tmp_path):
    """A results list refers to category ids: VOC numbers categories in sorted name order
    unless --classes gives the order."""
    ordered, _, _ = run_json(tmp_path, "voc", files["voc"], files["dt.json"], "--classes",
                             files["classes.txt"])
    expected = deteval.evaluate_voc(dataset, detections)
    assert ordered["map"] == expected.map.tolist()
    assert [row["name"] for row in ordered["per_class"]] == list(DEMO_CATEGORIES)
    assert [row["category_id"] for row in ordered["per_class"]] == [1, 2, 3, 4, 5]
    sorted_, _, _ = run_json(tmp_path, "voc", files["voc"], files["dt.json"])
    assert [row["name"] for row in sorted_["per_class"]] == sorted(DEMO_CATEGORIES)
    assert sorted_["map"] != expected.map.tolist()


def test_voc_yolo_ground_truth_needs_the_images(files, dataset, detections, tmp_path):
    status, out, err = run("voc", files["yolo"], files["named.json"])
    assert status == 1 and out == ""
    assert err.startswith(f"deteval: error: {files['yolo']}")
    assert "pass --images DIR" in err and "images_dir=" not in err
    payload, _, _ = run_json(tmp_path, "voc", files["yolo"], files["named.json"], "--images",
                             files["images"])
    # YOLO has no difficult flag: its difficult objects are ordinary ones.
    plain = dataclasses.replace(dataset, gt=dataset.gt.replace(
        ignore=np.zeros(len(dataset.gt), dtype=bool)))
    expected = deteval.evaluate_voc(plain, deteval.read_coco_results(files["dt.json"], plain))
    assert payload["map"] == expected.map.tolist()
    assert payload["map"] != deteval.evaluate_voc(dataset, detections).map.tolist()


# --------------------------------------------------------------------------------------------
# deteval eval
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--per-class"]])
@pytest.mark.parametrize("dt", ["dt.json", "named.json", "dt.csv"])
def test_eval_coco_prints_what_deteval_coco_prints(files, dt, extra):
    reference = run("coco", files["gt.json"], files["dt.json"], *extra)
    assert reference[0] == 0 and len(reference[1].splitlines()) >= 12
    assert run("eval", files["gt.json"], files[dt], "--protocol", "coco", *extra) == reference


def test_eval_coco_json_and_dropped_note(files, tmp_path):
    results = json.loads(files["dt.json"].read_text())
    results[0]["category_id"] = 77
    path = _write(tmp_path, "unknown.json", results)
    payload, out, err = run_json(tmp_path, "eval", files["gt.json"], path, "--protocol", "coco")
    expected = deteval.evaluate_coco(files["gt.json"], path)
    assert payload["stats"] == expected.stats.tolist()
    assert out == expected.summary() + "\n"
    assert err == ("deteval: note: 1 detection(s) dropped: their category_id is not a "
                   "ground-truth category (pycocotools drops them too)\n")


@pytest.mark.parametrize("year", ["2007", "2012"])
@pytest.mark.parametrize("gt", ["gt.json", "voc", "gt.csv"])
def test_eval_voc_equals_deteval_voc(files, tmp_path, gt, year):
    via_eval, out, err = run_json(tmp_path, "eval", files[gt], files["named.json"],
                                  "--protocol", f"voc{year}")
    via_voc, voc_out, voc_err = run_json(tmp_path, "voc", files[gt], files["named.json"],
                                         "--year", year)
    assert via_eval["map"] == via_voc["map"] and via_eval["preset"] == f"VOC{year}"
    assert via_eval["per_class"] == via_voc["per_class"]
    assert (out, err) == (voc_out, voc_err)


def test_eval_coco_on_other_formats(files, dataset, detections):
    """COCO metrics from a VOC folder and CSV detections: the areas are the boxes' (VOC has no
    other), so compare with the COCO file whose areas are replaced by the box areas."""
    status, out, err = run("eval", files["voc"], files["dt.csv"], "--protocol", "coco",
                           "--classes", files["classes.txt"])
    assert status == 0 and err == ""
    boxed = dataclasses.replace(dataset, gt=dataset.gt.replace(
        area=dataset.gt.xywh[:, 2] * dataset.gt.xywh[:, 3]))
    expected = deteval.evaluate_coco(boxed, detections)
    assert out.splitlines() == expected.summary().splitlines()


# --------------------------------------------------------------------------------------------
# deteval convert
# --------------------------------------------------------------------------------------------


def test_convert_voc_to_coco_then_evaluate(files, tmp_path):
    dst = tmp_path / "converted.json"
    status, out, err = run("convert", files["voc"], dst)
    assert status == 0 and err == ""
    n_objects = len(deteval.read_gt(files["voc"]).gt)
    n_difficult = int(deteval.read_gt(files["voc"]).gt.ignore.sum())
    assert out == (f"deteval convert: {files['voc']} (voc) -> {dst} (coco): 24 images, "
                   f"{n_objects} objects ({n_difficult} difficult), 5 categories\n")
    direct, _, _ = run_json(tmp_path, "voc", files["voc"], files["named.json"])
    # The converted file numbers the categories in name order, named.json its own way: by id
    # and by name they point to different classes, so the choice is the user's
    # (docs/resolution.md).
    status, _, err = run("voc", dst, files["named.json"])
    assert status == 1 and "--match-by name" in err and "match_by" not in err
    converted, _, _ = run_json(tmp_path, "voc", dst, files["named.json"], "--match-by", "name")
    assert converted["map"] == direct["map"] and converted["per_class"] == direct["per_class"]


@pytest.mark.parametrize(("dst", "options", "written"), [
    ("out.csv", [], "csv"), ("out.tsv", [], "csv"), ("out_voc", ["--to", "voc"], "voc"),
    ("out.json", ["--from", "csv", "--box-format", "xyxy"], "coco")])
def test_convert_formats(files, tmp_path, dst, options, written):
    status, out, err = run("convert", files["gt.csv"], tmp_path / dst, *options)
    assert status == 0 and err == ""
    assert f"({written}): 24 images, " in out
    direct, _, _ = run_json(tmp_path, "voc", files["gt.csv"], files["named.json"])
    again, _, _ = run_json(tmp_path, "voc", tmp_path / dst, files["named.json"],
                           *(["--match-by", "name"] if written == "coco" else []))
    assert again["map"] == direct["map"]


def test_convert_to_yolo_warns_about_difficult_objects(files, tmp_path):
    status, out, err = run("convert", files["voc"], tmp_path / "labels", "--to", "yolo")
    assert status == 0 and "(yolo): 24 images" in out
    assert err.startswith("deteval: warning: ") and "difficult" in err
    assert "YOLO has no such flags" in err and err.count("\n") == 1
    assert (tmp_path / "labels" / "obj.names").read_text().splitlines() == sorted(
        DEMO_CATEGORIES)
    status, _, err = run("voc", tmp_path / "labels", files["named.json"], "--images",
                         files["images"])
    assert status == 0, err


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def _write(folder: Path, name: str, content) -> Path:
    path = folder / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.parametrize(("make", "names"), [
    pytest.param(lambda d, f: ("voc", d / "missing", f["dt.json"]), "{gt}: does not exist$",
                 id="gt-missing"),
    pytest.param(lambda d, f: ("voc", f["gt.json"], d / "missing.json"),
                 "{dt}: does not exist$", id="dt-missing"),
    pytest.param(lambda d, f: ("eval", _write(d, "gt.txt", "x"), f["dt.json"], "--protocol",
                               "voc2012"),
                 "{gt}: cannot tell the ground-truth format of this file: pass --gt-format "
                 r"\(one of coco, voc, ", id="gt-unknown-format"),
    pytest.param(lambda d, f: ("voc", f["gt.json"], _write(d, "dt.xml", "<a/>")),
                 "{dt}: cannot tell the detection format of this file: pass --dt-format",
                 id="dt-unknown-format"),
    pytest.param(lambda d, f: ("voc", d, f["dt.json"]),
                 "{gt}: cannot tell the format of this folder: pass --gt-format",
                 id="gt-unknown-folder"),
    pytest.param(lambda d, f: ("voc", _write(d, "bad.xml", "<annotation><object>"),
                               f["dt.json"]),
                 "{gt}", id="gt-malformed-xml"),
    pytest.param(lambda d, f: ("eval", _write(d, "gt.json", '{"images": ['), f["dt.json"],
                               "--protocol", "coco"),
                 "{gt}: not valid JSON: ", id="gt-malformed-json"),
    pytest.param(lambda d, f: ("voc", f["gt.json"], _write(d, "dt.json", [{"image_id": 1}])),
                 r"{dt}: results\[0\]: missing ", id="dt-record"),
    pytest.param(lambda d, f: ("voc", f["gt.json"], f["dt.json"], "--gt-format", "voc"),
                 "{gt}", id="gt-wrong-format"),
    pytest.param(lambda d, f: ("convert", d / "missing", d / "out.json"),
                 "{gt}: does not exist$", id="convert-missing"),
    pytest.param(lambda d, f: ("convert", f["gt.json"], d / "no" / "out.json"),
                 "cannot write {dt}: its folder does not exist$", id="convert-unwritable"),
    pytest.param(lambda d, f: ("convert", f["voc"], f["voc"], "--to", "voc"),
                 "{dt}: the destination is the source", id="convert-onto-itself"),
    pytest.param(lambda d, f: ("voc", f["gt.json"], f["dt.json"], "--json",
                               d / "no" / "x.json"),
                 "cannot write .*x.json: its folder does not exist$", id="json-unwritable"),
])
def test_errors_exit_1_and_name_the_file(files, tmp_path, make, names):
    argv = make(tmp_path, files)
    gt, dt = (argv[1], argv[2])
    status, out, err = run(*argv)
    assert status == 1, err
    assert out == "" and "Traceback" not in err
    assert err.startswith("deteval: error: ") and err.count("\n") == 1
    assert re.search(names.format(gt=re.escape(str(gt)), dt=re.escape(str(dt))),
                     err.rstrip("\n")), err


USAGE_ERRORS = [
    pytest.param(["voc", "gt.json"], "the following arguments are required: DT",
                 id="voc-missing-dt"),
    pytest.param(["voc", "gt.json", "dt.json", "--year", "2010"], "invalid choice: '2010'",
                 id="voc-bad-year"),
    pytest.param(["voc", "gt.json", "dt.json", "--iou", "1.5"],
                 "argument --iou-thresholds/--iou: expected IoU thresholds in (0, 1]",
                 id="voc-bad-iou"),
    pytest.param(["voc", "gt.json", "dt.json", "--iou-thresholds", "0.5 0.75 0.5"],
                 "--iou-thresholds: each IoU threshold once with Pascal VOC (each gives its "
                 "own mAP@t); 0.5 is given 2 times", id="voc-iou-twice"),
    pytest.param(["compare", "gt.json", "a.json", "b.json", "--protocol", "voc2007",
                  "--iou-thresholds", "0.5 0.5"],
                 "--iou-thresholds: each IoU threshold once with Pascal VOC",
                 id="compare-iou-twice"),
    pytest.param(["voc", "gt.json", "dt.json", "--iou", "a"],
                 "argument --iou-thresholds/--iou: expected a list of float values",
                 id="voc-iou-text"),
    pytest.param(["voc", "gt.json", "dt.json", "--gt-format", "pascal"],
                 "argument --gt-format: invalid choice: 'pascal'", id="unknown-gt-format"),
    pytest.param(["voc", "gt.json", "dt.json", "--dt-format", "voc"],
                 "argument --dt-format: invalid choice: 'voc'", id="unknown-dt-format"),
    pytest.param(["voc", "gt.json", "dt.json", "--box-format", "xy"],
                 "argument --box-format: invalid choice: 'xy'", id="unknown-box-format"),
    pytest.param(["eval", "gt.json", "dt.json"], "the following arguments are required: "
                 "--protocol", id="eval-no-protocol"),
    pytest.param(["eval", "gt.json", "dt.json", "--protocol", "voc2010"],
                 "invalid choice: 'voc2010'", id="eval-bad-protocol"),
    pytest.param(["convert", "gt.json"], "the following arguments are required: DST",
                 id="convert-missing-dst"),
    pytest.param(["convert", "gt.json", "out.json", "--to", "labelme"],
                 "argument --to: invalid choice: 'labelme'", id="convert-bad-to"),
    pytest.param(["convert", "gt.json", "out.json", "--from", "txt"],
                 "argument --from: invalid choice: 'txt'", id="convert-bad-from"),
]


@pytest.mark.parametrize(("argv", "message"), USAGE_ERRORS)
def test_usage_errors_exit_2(argv, message, capsys):
    status, out, err = run(*argv)
    assert status == 2
    printed = capsys.readouterr()
    assert out == "" and printed.out == "" and printed.err == ""
    assert err.startswith(f"usage: deteval {argv[0]} ")
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param(["voc", "gt.json", "dt.json", "--images", "images"],
                 "--images does not apply to coco ground truth ({gt.json}); it is for csv, dota, "
                 "labelme, openimages, voc, yolo", id="images-for-coco"),
    pytest.param(["voc", "gt.json", "dt.json", "--names", "classes.txt"],
                 "--names does not apply to coco detections ({dt.json}); it is for csv, txt, "
                 "yolo", id="names-for-coco"),
    pytest.param(["eval", "voc", "named.json", "--protocol", "coco", "--gt-box-format", "xywh"],
                 "--gt-box-format does not apply to voc ground truth", id="gt-box-for-voc"),
    pytest.param(["voc", "gt.json", "voc", "--dt-format", "txt"],
                 "txt detections ({voc}) need --box-format: xywh for", id="txt-box-format"),
    pytest.param(["convert", "voc", "out.json", "--box-format", "xywh"],
                 "--box-format does not apply to voc ground truth ({voc})", id="convert-box"),
    pytest.param(["convert", "voc", "out_folder"],
                 "cannot tell which format to write to out_folder: pass --to", id="convert-to"),
])
def test_options_that_do_not_fit_the_format_exit_2(files, argv, message):
    argv = argv[:1] + [str(files[a]) if a in files and a != "out.json" else a
                       for a in argv[1:]]
    status, out, err = run(*argv)
    assert status == 2 and out == ""
    assert err.startswith(f"usage: deteval {argv[0]} ")
    for name, path in files.items():
        message = message.replace(f"{{{name}}}", str(path))
    assert f"\ndeteval {argv[0]}: error: {message}" in err


def test_help_lists_the_commands_and_formats():
    out = io.StringIO()
    assert main(["--help"], stdout=out) == 0
    assert all(name in out.getvalue() for name in ("coco", "voc", "eval", "convert", "demo"))
    for command in ("voc", "eval", "convert"):
        out = io.StringIO()
        assert main([command, "--help"], stdout=out) == 0
        assert "openimages" in out.getvalue() and "--classes" in out.getvalue()


# --------------------------------------------------------------------------------------------
# The shared voc_sample_100
# --------------------------------------------------------------------------------------------


@pytest.fixture
def sample(voc_sample_dir):
    """The shared sample's folder, its VOC XML ground truth and COCO-format detections."""
    return (voc_sample_dir, voc_sample_dir / "gts" / "pascalvoc_format",
            voc_sample_dir / "dets" / "coco_format" / "coco_dets.json")


@pytest.mark.parametrize("year", ["2007", "2012"])
def test_sample_eval_on_voc_xml_equals_deteval_voc(sample, tmp_path, year):
    """VOC XML ground truth, COCO-format detections through `deteval eval` give the mAP of
    `deteval voc` on the same ground truth with the text-file detections."""
    folder, xml, dets = sample
    via_eval, _, err = run_json(tmp_path, "eval", xml, dets, "--protocol", f"voc{year}")
    assert err == ""
    via_voc, _, err = run_json(tmp_path, "voc", xml, folder / "dets" / "abs_xywh",
                               "--year", year, "--names", folder / "voc.names",
                               "--box-format", "xywh")
    assert err == ""
    assert via_eval["map"] == via_voc["map"] and 0.5 < via_eval["map"][0] < 0.7
    assert ap_by_name(via_eval) == ap_by_name(via_voc)
    assert sum(row["n_difficult"] for row in via_eval["per_class"]) == 38


def test_sample_convert_voc_to_coco_then_evaluate(sample, tmp_path):
    _, xml, dets = sample
    dst = tmp_path / "gt.json"
    status, out, err = run("convert", xml, dst)
    assert status == 0 and err == ""
    assert out.endswith("(coco): 100 images, 273 objects (38 difficult), 20 categories\n")
    direct, direct_out, _ = run_json(tmp_path, "voc", xml, dets)
    # The converted file numbers images 1..100 in name order, the results 0..97 in theirs:
    # refused until told (docs/resolution.md).
    status, _, err = run("voc", dst, dets)
    assert status == 1 and "97 of 98 images" in err and "--match-by name" in err
    converted, converted_out, _ = run_json(tmp_path, "voc", dst, dets, "--match-by",
                                           "name")
    assert converted["map"] == direct["map"]
    assert converted["per_class"] == direct["per_class"]
    assert converted_out == direct_out


def test_sample_yolo_ground_truth_with_images(sample, tmp_path):
    """YOLO labels hold no difficult flag, nor does the sample's COCO file: the same mAP."""
    folder, _, dets = sample
    yolo, _, _ = run_json(tmp_path, "voc", folder / "gts" / "yolo_format", dets,
                          "--images", folder / "images")
    coco, _, _ = run_json(tmp_path, "voc", folder / "gts" / "coco_format_v2" /
                          "instances_v2.json", dets)
    assert yolo["map"] == coco["map"]
    assert ap_by_name(yolo) == ap_by_name(coco)
