"""``deteval errors`` with the protocol commands' settings it lacked: ``--use-area``
(CrowdPose's OKS scaled by the file's areas, as ``deteval crowdpose --use-area``): with no
error fixed TIDE's AP is ``evaluate_crowdpose(..., use_area=True)``'s AP50, the setting
changes it, and it is refused with another protocol (CLI and library)."""

from __future__ import annotations

import json

import pytest
from clirun import run
from crowdposegen import make_crowdpose_dataset

import deteval
from deteval.diagnostics.tide import error_attribution


@pytest.fixture(scope="module")
def crowdpose_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("errors_use_area")
    gt, dt = make_crowdpose_dataset(2, n_images=8)
    for name, value in (("gt", gt), ("dt", dt)):
        (folder / f"{name}.json").write_text(json.dumps(value))
    return gt, dt, [folder / "gt.json", folder / "dt.json"]


def _tide_ap(files, *options, tmp_path) -> float:
    path = tmp_path / "errors.json"
    status, _, err = run("errors", *files, "--protocol", "crowdpose", *options, "--json", path)
    assert status == 0, err
    return json.loads(path.read_text())["tide"]["ap"]


def test_use_area_gives_crowdposes_ap50_with_the_files_areas(crowdpose_files, tmp_path):
    gt, dt, files = crowdpose_files
    with_area = _tide_ap(files, "--use-area", tmp_path=tmp_path)
    without = _tide_ap(files, tmp_path=tmp_path)
    expected = deteval.evaluate_crowdpose(gt, dt, use_area=True)
    assert with_area == expected.stats[1] * 100
    assert without == deteval.evaluate_crowdpose(gt, dt).stats[1] * 100
    assert with_area != without
    assert error_attribution(gt, dt, protocol="crowdpose", use_area=True).ap == with_area


def test_use_area_needs_crowdpose(crowdpose_files):
    gt, dt, files = crowdpose_files
    status, out, err = run("errors", *files, "--iou-type", "keypoints", "--use-area")
    assert status == 2 and out == "" and "--use-area needs --protocol crowdpose" in err, err
    with pytest.raises(ValueError, match="use_area applies to protocol 'crowdpose' only"):
        error_attribution(gt, dt, iou_type="keypoints", use_area=True)
