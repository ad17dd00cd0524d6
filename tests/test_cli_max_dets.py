"""``--max-dets`` in every command that takes it (docs/cli.md §7): one parser, and each
protocol's rule with one message wherever the protocol is evaluated: COCO (``deteval coco``,
``compare --protocol coco``) three numbers at least, any number for keypoints; LVIS
(``deteval lvis``, ``compare --protocol lvis``) one number. What is accepted gives the
library's numbers with that setting."""

from __future__ import annotations

import json

import pytest
from clirun import run
from lvisgen import make_lvis_dataset
from protocolfiles import write_demo_files
from scenes import keypoint_scene

import deteval

COCO_MESSAGE = ("--max-dets needs 3 values with COCO (its summary reads maxDets[0..2]; "
                "keypoints: any number); got '1 10'")
LVIS_MESSAGE = "--max-dets is LVIS's cut of the results per image, one number; got '1 10 100'"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("max_dets")
    write_demo_files(folder, seed=4, n_images=6)
    for name, value in zip(("lgt", "ldt"), make_lvis_dataset(2, n_images=5, n_categories=4)):
        (folder / f"{name}.json").write_text(json.dumps(value))
    for name, value in zip(("kgt", "kdt"), keypoint_scene()):
        (folder / f"{name}.json").write_text(json.dumps(value))
    return folder


def _argv(folder, command):
    return [folder / a if a.endswith(".json") else a for a in command]


@pytest.mark.parametrize("command, values, message", [
    (["coco", "gt.json", "dt.json"], "1 10", COCO_MESSAGE),
    (["compare", "gt.json", "dt.json", "dt.json"], "1 10", COCO_MESSAGE),
    (["lvis", "lgt.json", "ldt.json"], "1 10 100", LVIS_MESSAGE),
    (["compare", "lgt.json", "ldt.json", "ldt.json", "--protocol", "lvis"], "1 10 100",
     LVIS_MESSAGE),
])
def test_each_protocol_refuses_alike_in_every_command(files, command, values, message):
    status, out, err = run(*_argv(files, command), "--max-dets", values)
    assert status == 2 and out == "" and message in err, err
    assert f"deteval {command[0]}: error: " in err      # the command's usage, not deteval's


@pytest.mark.parametrize("command", [["coco", "gt.json", "dt.json"],
                                     ["lvis", "lgt.json", "ldt.json"]])
def test_a_bad_number_is_one_message(files, command):
    status, _, err = run(*_argv(files, command), "--max-dets", "0")
    assert status == 2 and "argument --max-dets: expected a positive integer; got '0'" in err


def test_coco_takes_more_than_three_and_keypoints_any_number(files, tmp_path):
    status, _, err = run("coco", files / "gt.json", files / "dt.json", "--max-dets",
                         "1 10 100 300", "--json", tmp_path / "four.json")
    assert status == 0, err
    expected = deteval.evaluate_coco(str(files / "gt.json"), str(files / "dt.json"),
                                     max_detections=(1, 10, 100, 300))
    assert json.loads((tmp_path / "four.json").read_text())["stats"] == expected.stats.tolist()
    status, _, err = run("coco", files / "kgt.json", files / "kdt.json", "--iou-type",
                         "keypoints", "--max-dets", "1", "--json", tmp_path / "one.json")
    assert status == 0, err
    expected = deteval.evaluate_coco(str(files / "kgt.json"), str(files / "kdt.json"),
                                     iou_type="keypoints", max_detections=(1,))
    assert json.loads((tmp_path / "one.json").read_text())["stats"] == expected.stats.tolist()


def test_lvis_takes_its_one_number(files, tmp_path):
    status, _, err = run("lvis", files / "lgt.json", files / "ldt.json", "--max-dets", "2",
                         "--json", tmp_path / "lvis.json")
    assert status == 0, err
    expected = deteval.evaluate_lvis(str(files / "lgt.json"), str(files / "ldt.json"),
                                     max_detections=2)
    assert json.loads((tmp_path / "lvis.json").read_text())["stats"] == expected.stats.tolist()
