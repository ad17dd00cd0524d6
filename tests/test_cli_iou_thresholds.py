"""``--iou-thresholds`` has one rule in every command (docs/cli.md §3.1): numbers in (0, 1]
(one parser, one message); a threshold given twice is kept by COCO (``deteval coco``,
``eval --protocol coco``, ``compare --protocol coco``), whose numbers stay pycocotools' own
with the repeated threshold (it counts twice in AP and AR), and refused by the VOC protocols
(``voc``, ``eval``, ``compare``), where each threshold names its own mAP@t."""

from __future__ import annotations

import contextlib
import copy
import io
import json

import numpy as np
import pytest
from clirun import run
from protocolfiles import write_demo_files

REPEATED = (0.5, 0.5, 0.75)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("iou_thresholds")
    gt, dt, _ = write_demo_files(folder, seed=3, n_images=8)
    return gt, dt, folder


def _pycocotools_stats(gt: dict, dt: list, thresholds: tuple) -> list[float]:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = copy.deepcopy(gt)
        coco.createIndex()
        evaluator = COCOeval(coco, coco.loadRes(copy.deepcopy(dt)), "bbox")
        evaluator.params.iouThrs = np.array(thresholds)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return evaluator.stats.tolist()


@pytest.mark.parametrize("command", [["coco"], ["eval", "--protocol", "coco"]])
def test_coco_keeps_a_repeated_threshold_as_pycocotools(files, command):
    gt, dt, folder = files
    out = folder / f"{command[0]}.json"
    status, _, err = run(*command, folder / "gt.json", folder / "dt.json", "--iou-thresholds",
                         " ".join(map(str, REPEATED)), "--json", out)
    assert status == 0, err
    stats = json.loads(out.read_text())["stats"]
    expected = _pycocotools_stats(gt, dt, REPEATED)
    assert stats == expected
    assert expected != _pycocotools_stats(gt, dt, (0.5, 0.75))   # the repeat counts


def test_compare_coco_keeps_a_repeated_threshold(files):
    gt, dt, folder = files
    out = folder / "compare.json"
    status, _, err = run("compare", folder / "gt.json", folder / "dt.json", folder / "dt.json",
                         "--iou-thresholds", "0.5 0.5 0.75", "--bootstrap", 3, "--json", out)
    assert status == 0, err
    payload = json.loads(out.read_text())
    rows = {row["name"]: row for row in payload["intervals"][payload["models"][0]]}
    expected = _pycocotools_stats(gt, dt, REPEATED)
    assert [rows[name]["estimate"] for name in ("AP", "AP50", "AP75")] == expected[:3]


VOC_MESSAGE = ("--iou-thresholds: each IoU threshold once with Pascal VOC (each gives its own "
               "mAP@t); 0.5 is given 2 times")


@pytest.mark.parametrize("command", [
    ["voc", "{gt}", "{dt}"], ["eval", "{gt}", "{dt}", "--protocol", "voc2012"],
    ["compare", "{gt}", "{dt}", "{dt}", "--protocol", "voc2007"]])
def test_voc_refuses_a_repeated_threshold_alike_in_every_command(files, command):
    folder = files[2]
    argv = [a.format(gt=folder / "gt.json", dt=folder / "dt.json") for a in command]
    status, out, err = run(*argv, "--iou-thresholds", "0.5 0.75 0.5")
    assert status == 2 and VOC_MESSAGE in err and out == "", err


@pytest.mark.parametrize("command", [["coco"], ["voc"], ["eval", "--protocol", "coco"],
                                     ["compare", "--protocol", "coco"]])
@pytest.mark.parametrize("value", ["0", "1.5", "-0.5"])
def test_thresholds_outside_the_unit_interval_are_one_message(files, command, value):
    folder = files[2]
    inputs = [folder / "gt.json", folder / "dt.json"] + [folder / "dt.json"] * (
        command[0] == "compare")
    status, _, err = run(command[0], *inputs, *command[1:], "--iou-thresholds", value)
    assert status == 2 and "expected IoU thresholds in (0, 1]" in err, err
