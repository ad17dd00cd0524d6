"""``deteval errors`` with the protocol commands' settings it lacked: ``--use-area``
(CrowdPose's OKS scaled by the file's areas, as ``deteval crowdpose --use-area``) and
``--detectron2`` (detectron2's VOC preset, as ``deteval voc --detectron2``): with no error
fixed TIDE's AP is the protocol's with that setting, the setting changes it, and it is
refused with another protocol (CLI and library)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from clirun import run
from cocogen import make_dataset
from crowdposegen import make_crowdpose_dataset

import deteval
from deteval.diagnostics.tide import LOC, error_attribution
from deteval.matching import TP
from deteval.protocols.voc import DETECTRON2_VOC2007, DETECTRON2_VOC2012

DETECTRON2 = {"voc2007": DETECTRON2_VOC2007, "voc2012": DETECTRON2_VOC2012}


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


@pytest.mark.parametrize("argv, options, flag, needs", [
    (("--iou-type", "keypoints", "--use-area"), {"iou_type": "keypoints", "use_area": True},
     "--use-area", "crowdpose"),
    (("--protocol", "crowdpose", "--detectron2"), {"protocol": "crowdpose", "detectron2": True},
     "--detectron2", "voc2007"),
])
def test_a_setting_of_another_protocol_is_refused(crowdpose_files, argv, options, flag, needs):
    gt, dt, files = crowdpose_files
    status, out, err = run("errors", *files, *argv)
    assert status == 2 and out == "" and f"{flag} needs --protocol {needs}" in err, err
    with pytest.raises(ValueError, match=f"{flag[2:].replace('-', '_')} applies to protocol "
                                         f"'{needs}'"):
        error_attribution(gt, dt, **options)


@pytest.mark.parametrize("protocol", ["voc2007", "voc2012"])
@pytest.mark.parametrize("seed", range(8))
def test_detectron2_no_fix_gives_its_presets_ap(seed, protocol):
    """With no error fixed, TIDE's AP is evaluate_voc's with detectron2's preset (IoU > t,
    rounded detections, its mean), its per-class AP and true positives likewise."""
    gt, dt = make_dataset(seed, segmentation=False, p_many=0.15 if seed % 4 == 0 else 0.0)
    result = error_attribution(gt, dt, protocol=protocol, detectron2=True)
    voc = deteval.evaluate_voc(gt, dt, params=DETECTRON2[protocol])
    assert result.ap == 100 * voc.map[0] or (np.isnan(result.ap) and np.isnan(voc.map[0]))
    np.testing.assert_array_equal(result.class_ap, 100 * voc.ap[0])
    status = voc.matches.detection_status(0)[0]
    np.testing.assert_array_equal(result.dt_true_positive, status == TP)


def test_detectron2_counts_an_iou_of_exactly_the_threshold_as_an_error(tmp_path):
    """A box of IoU exactly 0.5 (+1 pixels): the devkit's true positive, detectron2's loc
    error; the CLI gives the library's numbers."""
    gt = {"images": [{"id": 1, "width": 100, "height": 100}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 19, 9],
                           "area": 200, "iscrowd": 0}]}
    dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 9, 9], "score": 0.9}]
    devkit = error_attribution(gt, dt, protocol="voc2012")
    strict = error_attribution(gt, dt, protocol="voc2012", detectron2=True)
    assert devkit.ap == 100 and devkit.dt_error.tolist() == [-1]
    assert strict.ap == 0 and strict.dt_error.tolist() == [LOC]
    paths = [tmp_path / "gt.json", tmp_path / "dt.json"]
    for path, value in zip(paths, (gt, dt)):
        path.write_text(json.dumps(value))
    status, _, err = run("errors", *paths, "--protocol", "voc2012", "--detectron2", "--json",
                         tmp_path / "e.json")
    assert status == 0, err
    assert json.loads((tmp_path / "e.json").read_text())["tide"]["ap"] == strict.ap
