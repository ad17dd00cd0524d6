"""The commands that forward the similarity settings to the library (``coco``, ``errors``
with ``--lrp``, ``confusion``, ``calibration``, ``compare``, ``draw``, ``report``) run on
box, mask, boundary and keypoint inputs, with the settings of their IoU type given or left
to their defaults: the library refuses a setting given with a type that does not read it
(tests/test_similarity_settings.py), and what a command forwards itself (a default, the
evaluation's own settings) must never be taken for one."""

from __future__ import annotations

import json

import pytest
from clirun import run
from crowdposegen import make_crowdpose_dataset
from PIL import Image
from scenes import shapes_scene

import deteval

IOU_TYPES = ("bbox", "segm", "boundary", "keypoints")
#: Each IoU type's own settings, as flags.
OWN = {"boundary": ("--dilation-ratio", "0.05"),
       "keypoints": ("--kpt-sigmas", " ".join(["0.3"] * 17))}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shapes")
    gt, dt = shapes_scene()
    (folder / "gt.json").write_text(json.dumps(gt))
    (folder / "dt.json").write_text(json.dumps(dt))
    (folder / "images").mkdir()
    for image in gt["images"]:
        Image.new("RGB", (image["width"], image["height"])).save(
            folder / "images" / image["file_name"])
    return folder


def _commands(folder, iou_type):
    gt, dt, out = folder / "gt.json", folder / "dt.json", folder / f"out-{iou_type}"
    typed = ("--iou-type", iou_type)
    return {"coco": ["coco", gt, dt, *typed],
            "errors": ["errors", gt, dt, *typed, "--lrp"],
            "confusion": ["confusion", gt, dt, *typed],
            "calibration": ["calibration", gt, dt, *typed],
            "compare": ["compare", gt, dt, dt, *typed, "--bootstrap", 3],
            "draw": ["draw", gt, dt, *typed, "--images", folder / "images", "--out", out,
                     "--quiet"]}


@pytest.mark.parametrize("own", [False, True], ids=["defaults", "own settings"])
@pytest.mark.parametrize("iou_type", IOU_TYPES)
def test_every_command_runs_on_every_iou_type(files, iou_type, own):
    if own and iou_type not in OWN:
        pytest.skip(f"{iou_type} reads no similarity setting")
    for name, argv in _commands(files, iou_type).items():
        status, _, err = run(*argv, *(OWN[iou_type] if own else ()))
        assert status == 0, f"deteval {name} --iou-type {iou_type}: {err}"


def test_the_report_runs_with_what_it_forwards(files, tmp_path):
    """COCO (boxes) and CrowdPose (its sigmas forwarded to TIDE, the drawings' matching)."""
    status, _, err = run("report", files / "gt.json", files / "dt.json", "--out",
                         tmp_path / "coco", "--gallery", 0, "--quiet", "--no-check")
    assert status == 0, err
    gt, dt = make_crowdpose_dataset(2, n_images=4)
    (tmp_path / "cgt.json").write_text(json.dumps(gt))
    (tmp_path / "cdt.json").write_text(json.dumps(dt))
    status, _, err = run("report", tmp_path / "cgt.json", tmp_path / "cdt.json", "--protocol",
                         "crowdpose", "--out", tmp_path / "crowdpose", "--gallery", 0,
                         "--quiet", "--no-check")
    assert status == 0, err
    payload = json.loads((tmp_path / "crowdpose" / "results.json").read_text())
    assert "tide" in payload["panels"]


def test_errors_reads_the_dilation_ratio_it_is_given(files):
    """The ratio given reaches TIDE (another ratio, other numbers); none given is TIDE's
    default, 0.02, as the library's."""
    gt, dt = files / "gt.json", files / "dt.json"
    numbers = []
    for extra in ((), ("--dilation-ratio", "0.0")):
        status, _, err = run("errors", gt, dt, "--iou-type", "boundary", "--json",
                             files / "tide.json", *extra)
        assert status == 0, err
        numbers.append(json.loads((files / "tide.json").read_text())["tide"])
    default = deteval.error_attribution(str(gt), str(dt), iou_type="boundary").to_dict()
    assert numbers[0]["ap"] == default["ap"] and numbers[0] != numbers[1]
