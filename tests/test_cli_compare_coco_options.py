"""``deteval compare --protocol coco`` with ``deteval coco``'s settings of what is evaluated
(``--max-dets '1 10 100'``, ``--iou-thresholds``, ``--class-agnostic``, ``--image-ids``,
``--category-ids``; ``--max-dets N`` is LVIS's one number under ``--protocol lvis``): each
compared number equals the protocol command's ``--json`` with that setting, the setting
changes the numbers, and a setting of another protocol is a usage error."""

from __future__ import annotations

import json
import random

import pytest
from clirun import run
from lvisgen import make_lvis_dataset
from protocolfiles import write_demo_files

B = 5


def _second_model(dt: list, seed: int) -> list:
    rng = random.Random(seed)
    return [dict(d, score=min(1.0, d["score"] * rng.random() + 0.1)) for d in dt]


@pytest.fixture(scope="module")
def coco_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare_coco")
    _, dt, (gt_path, dt_path) = write_demo_files(folder, seed=1, n_images=8)
    other = folder / "dt_b.json"
    other.write_text(json.dumps(_second_model(dt, 0)))
    return [gt_path, dt_path, other]


def _compared(files, *settings, protocol="coco", tmp_path) -> dict:
    """``{model: {name: estimate}}`` of ``deteval compare``."""
    path = tmp_path / "compare.json"
    status, _, err = run("compare", *files, "--protocol", protocol, "--bootstrap", B,
                         *settings, "--json", path)
    assert status == 0, err
    payload = json.loads(path.read_text())
    return {model: {row["name"]: row["estimate"] for row in rows}
            for model, rows in payload["intervals"].items()}


def _own(command, gt, dt, *settings, tmp_path) -> dict:
    path = tmp_path / "own.json"
    status, _, err = run(command, gt, dt, *settings, "--json", path)
    assert status == 0, err
    return json.loads(path.read_text())["stats_named"]


def _check_equal(compared: dict, own: dict) -> None:
    defined = {name: value for name, value in own.items() if value != -1}
    assert "AP" in defined
    assert {name: compared[name] for name in defined} == defined
    assert all(compared[name] in (None, -1) for name in own if name not in defined)


SETTINGS = [("--max-dets", "1 2 100"), ("--iou-thresholds", "0.5 0.6"),
            ("--class-agnostic",), ("--image-ids", "1 2 3 4"), ("--category-ids", "1 2")]


@pytest.mark.parametrize("setting", SETTINGS, ids=[s[0] for s in SETTINGS])
def test_each_number_equals_deteval_coco_with_the_setting(coco_files, setting, tmp_path):
    gt, dt, dt_b = coco_files
    compared = _compared(coco_files, *setting, tmp_path=tmp_path)
    default = _compared(coco_files, tmp_path=tmp_path)
    for path in (dt, dt_b):
        own = _own("coco", gt, path, *setting, tmp_path=tmp_path)
        _check_equal(compared[path.name], own)
        assert compared[path.name] != default[path.name]    # the setting took effect


def test_lvis_max_dets_is_one_number_as_deteval_lvis(tmp_path):
    gt, dt = make_lvis_dataset(3, n_images=6, p_crowded_image=0)
    files = [tmp_path / "gt.json", tmp_path / "dt.json", tmp_path / "dt_b.json"]
    for path, value in zip(files, (gt, dt, _second_model(dt, 1))):
        path.write_text(json.dumps(value))
    compared = _compared(files, "--max-dets", 2, protocol="lvis", tmp_path=tmp_path)
    default = _compared(files, protocol="lvis", tmp_path=tmp_path)
    for path in files[1:]:
        own = _own("lvis", files[0], path, "--max-dets", 2, tmp_path=tmp_path)
        _check_equal(compared[path.name], own)
        assert compared[path.name] != default[path.name]


@pytest.mark.parametrize("argv, message", [
    (("--max-dets", "1 5"), "--max-dets needs 3 values with COCO"),
    (("--protocol", "lvis", "--max-dets", "1 5 100"), "LVIS's cut of the results per image"),
    (("--protocol", "voc2007", "--max-dets", "3"), "--max-dets needs --protocol coco or lvis"),
    (("--protocol", "lvis", "--class-agnostic"), "--class-agnostic needs --protocol coco"),
    (("--protocol", "voc2012", "--image-ids", "1"), "--image-ids needs --protocol coco"),
    (("--protocol", "crowdpose", "--category-ids", "1"),
     "--category-ids needs --protocol coco"),
    (("--protocol", "lvis", "--iou-thresholds", "0.5"),
     "--iou-thresholds needs --protocol coco or voc2007 or voc2012"),
])
def test_a_setting_of_another_protocol_is_a_usage_error(coco_files, argv, message):
    status, out, err = run("compare", *coco_files, "--bootstrap", B, *argv)
    assert status == 2 and out == "" and message in err, err
