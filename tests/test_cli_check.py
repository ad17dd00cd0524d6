"""``deteval check`` and the input checks before every evaluation command; one pair of files,
the same numbers through coco, eval, voc, confusion, draw and the Python API."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from clirun import run

import deteval
from deteval._inputs import load_pair

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "voc_sample_100"
needs_sample = pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"{SAMPLE} is absent")
DEMO_GT, DEMO_DT = ROOT / "fixtures/demo/gt.json", ROOT / "fixtures/demo/detections.json"

GTS = {"voc-xml": ["gts/pascalvoc_format"], "imagenet": ["gts/imagenet_format"],
       "coco-v2": ["gts/coco_format_v2/instances_v2.json"], "labelme": ["gts/labelme_format"],
       "cvat": ["gts/cvat_format/annotations.xml"],
       "yolo": ["gts/yolo_format", "--images", "images"],
       "openimages": ["gts/openimages_format/all_bounding_boxes.csv", "--images", "images"]}
DTS = {"coco": ["dets/coco_format/coco_dets.json"],
       "abs-xywh": ["dets/abs_xywh", "--box-format", "xywh", "--names", "voc.names"],
       "abs-xyxy": ["dets/abs_xyx2y2", "--box-format", "xyxy", "--names", "voc.names"],
       "rel-cxcywh": ["dets/rel_xywh", "--box-format", "cxcywhn", "--names", "voc.names"]}
V2 = SAMPLE / "gts/coco_format_v2/instances_v2.json"
V1 = SAMPLE / "gts/coco_format_v1/instances_default.json"
COCO_DETS = SAMPLE / "dets/coco_format/coco_dets.json"


def _sample_args(words: list[str]) -> list:
    """Sample-relative paths made absolute (options stay as they are)."""
    return [SAMPLE / w if (SAMPLE / w).exists() and not w.startswith("-") else w for w in words]


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("deteval: warning: [")]


@needs_sample
@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("gt", GTS)
def test_check_finds_nothing_on_the_correct_pairs_of_the_sample(gt, dt):
    status, out, err = run("check", *_sample_args(GTS[gt]), *_sample_args(DTS[dt]))
    assert status == 0, out + err
    assert out.endswith("no hazard found: the pair looks right\n")
    assert "deteval: warning" not in err


def test_check_finds_nothing_on_the_fixtures_and_evaluations_print_no_warning(tmp_path):
    status, out, _ = run("check", DEMO_GT, DEMO_DT)
    assert status == 0 and "no hazard found" in out
    status, _, err = run("coco", DEMO_GT, DEMO_DT, "--json", tmp_path / "out.json")
    assert status == 0 and err == ""
    assert json.loads((tmp_path / "out.json").read_text())["warnings"] == []


@needs_sample
def test_check_exits_1_with_the_hazard_and_the_cli_option(tmp_path):
    status, out, _ = run("check", SAMPLE / "gts/pascalvoc_format", SAMPLE / "dets/abs_xywh",
                         "--box-format", "xywh", "--json", tmp_path / "d.json")
    assert status == 1
    assert "hazard [class-shift]: class ids look shifted by one" in out
    assert "  fix: pass --names FILE" in out and "names=" not in out
    assert out.endswith("1 hazard(s) found\n")
    payload = json.loads((tmp_path / "d.json").read_text())
    assert payload["ok"] is False and payload["hazards"][0]["code"] == "class-shift"


@needs_sample
@pytest.mark.parametrize("command", [["voc"], ["eval", "--protocol", "coco"],
                                     ["eval", "--protocol", "voc2007"], ["confusion"]])
def test_evaluations_print_one_line_per_hazard_and_write_them_to_json(command, tmp_path):
    """Forgetting --names: every class one off. The numbers are still printed (they are
    what was asked for), after a warning that names the fix."""
    argv = [*command, SAMPLE / "gts/pascalvoc_format", SAMPLE / "dets/abs_xywh",
            "--box-format", "xywh"]
    status, out, err = run(*argv, "--json", tmp_path / "out.json")
    assert status == 0 and out
    lines = _warnings(err)
    assert len(lines) == 1 and lines[0].startswith("deteval: warning: [class-shift] ")
    assert "pass --names FILE" in lines[0]
    payload = json.loads((tmp_path / "out.json").read_text())
    assert [w["code"] for w in payload["warnings"]] == ["class-shift"]
    status, _, err = run(*argv, "--no-check")
    assert status == 0 and _warnings(err) == []


@needs_sample
def test_coco_command_checks_too(tmp_path):
    """A results list whose boxes are corners, written where COCO wants x y w h."""
    dt = json.loads(COCO_DETS.read_text())
    id_of = {i["file_name"]: i["id"] for i in json.loads(V2.read_text())["images"]}
    own = {i["id"]: id_of[i["file_name"]] for i in dt["images"]}
    cats = {c["name"]: c["id"] for c in json.loads(V2.read_text())["categories"]}
    own_cat = {c["id"]: cats[c["name"]] for c in dt["categories"]}
    corners = [{"image_id": own[a["image_id"]], "category_id": own_cat[a["category_id"]],
                "bbox": [a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2],
                         a["bbox"][1] + a["bbox"][3]], "score": a["score"]}
               for a in dt["annotations"]]
    path = tmp_path / "corners.json"
    path.write_text(json.dumps(corners))
    status, out, err = run("coco", V2, path)
    assert status == 0 and "Average Precision" in out
    assert "[box-format] detections look like xyxy" in err
    assert "pass --box-format xyxy" in err


@needs_sample
def test_conflicting_ids_are_refused_in_every_command_with_the_cli_option():
    for command in (["coco"], ["eval", "--protocol", "coco"], ["voc"], ["confusion"],
                    ["check"]):
        status, out, err = run(*command, V1, COCO_DETS)
        assert status == 1 and out == "", command
        assert "97 of 98 images" in err and "pass --match-by name" in err, command
        assert "match_by" not in err, command


@needs_sample
def test_match_by_applies_to_coco_results_only():
    status, _, err = run("voc", SAMPLE / "gts/pascalvoc_format", SAMPLE / "dets/abs_xywh",
                         "--box-format", "xywh", "--names", SAMPLE / "voc.names",
                         "--match-by", "name")
    assert status == 2 and "--match-by applies to COCO results" in err


@needs_sample
@pytest.mark.parametrize("gt", [V1, V2])
def test_one_pair_of_files_gives_the_same_numbers_everywhere(gt, tmp_path):
    match = ["--match-by", "name"]
    ap = {}
    for name, command in (("coco", ["coco"]), ("eval", ["eval", "--protocol", "coco"])):
        status, out, err = run(*command, gt, COCO_DETS, *match)
        assert status == 0, err
        ap[name] = out.splitlines()[0]
    assert ap["coco"] == ap["eval"] and ap["coco"].endswith("= 0.347")
    pair = load_pair(gt, COCO_DETS, match_by="name")
    api = deteval.evaluate_coco(gt, COCO_DETS, match_by="name")
    assert f"{api.stat('AP'):.3f}" == "0.347"
    voc_api = deteval.evaluate_voc(pair.dataset, pair.detections)
    status, _, _ = run("voc", gt, COCO_DETS, *match, "--json", tmp_path / "voc.json")
    assert status == 0
    assert json.loads((tmp_path / "voc.json").read_text())["map"] == voc_api.map.tolist()
    confusion = deteval.detection_confusion_matrix(pair.dataset, pair.detections)
    status, out, _ = run("confusion", gt, COCO_DETS, *match)
    assert status == 0 and confusion.format_table() in out
    outcomes = deteval.match_outcomes(pair.dataset, pair.detections).counts()
    status, out, err = run("draw", gt, COCO_DETS, *match, "--images", SAMPLE / "images",
                           "--out", tmp_path / "drawn", "--limit", "2", "--quiet")
    assert status == 0, err
    assert re.search(rf"TP {outcomes['tp']}, FP {outcomes['fp']} .*FN {outcomes['fn']}", out)


@needs_sample
@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="no matplotlib")
def test_report_reads_the_pair_the_same_way(tmp_path):
    status, out, err = run("report", V1, COCO_DETS, "--match-by", "name", "--out",
                           tmp_path / "r", "--gallery", "0", "--quiet")
    assert status == 0, err
    assert "AP = 0.347 (coco)" in out
