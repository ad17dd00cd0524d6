"""``deteval calibration --protocol P`` with the settings of P's own command (``--kpt-sigmas``
for COCO keypoints and CrowdPose, ``--use-area``, ``--dilation-ratio``, ``--detectron2``,
``--classes``, ``--expand-detections``): its ``--json`` is ``calibration(result)`` of the
protocol evaluated in Python with those settings, the settings change the numbers (so the
test can tell), and a setting another protocol reads is a usage error."""

from __future__ import annotations

import json

import numpy as np
import oidgen
import pytest
from clirun import run
from crowdposegen import make_crowdpose_dataset
from lvisgen import make_lvis_dataset

import deteval
from deteval.demo import make_demo


def cli_numbers(argv, path) -> dict:
    status, _, err = run("calibration", *argv, "--json", path)
    assert status == 0, err
    return json.loads(path.read_text())


def api_numbers(result) -> dict:
    """``calibration(result)`` at the result's first threshold (0.5 but for VOC here)."""
    params = getattr(result, "params", None)
    tau = params.iou_thresholds[0] if params is not None else 0.5
    return json.loads(json.dumps(deteval.calibration(result, iou_threshold=tau).to_dict()))


def _files(folder, gt, dt) -> list[str]:
    for name, value in (("gt", gt), ("dt", dt)):
        (folder / f"{name}.json").write_text(json.dumps(value))
    return [str(folder / "gt.json"), str(folder / "dt.json")]


SIGMAS = [0.03] * 14


def _crowdpose(folder):
    files = _files(folder, *make_crowdpose_dataset(1, n_images=8))
    kpts = ["--kpt-sigmas", " ".join(map(str, SIGMAS))]
    return [
        (["--protocol", "crowdpose", *files, *kpts, "--use-area"],
         deteval.evaluate_crowdpose(*files, keypoint_sigmas=SIGMAS, use_area=True),
         deteval.evaluate_crowdpose(*files)),
        # COCO keypoints with the 14 sigmas (COCO's 17 would not fit these files)
        # (20 per image and category: COCO keypoints)
        (["--iou-type", "keypoints", *files, *kpts],
         deteval.evaluate_coco(*files, iou_type="keypoints", keypoint_sigmas=SIGMAS,
                               iou_thresholds=(0.5,), max_detections=(20,) * 3),
         deteval.evaluate_coco(*files, iou_type="keypoints",
                               keypoint_sigmas=[0.2] * 14, iou_thresholds=(0.5,),
                               max_detections=(20,) * 3)),
    ]


def _lvis_boundary(folder):
    files = _files(folder, *make_lvis_dataset(2, segm=True, n_images=3))
    return [(["--protocol", "lvis", *files, "--iou-type", "boundary", "--dilation-ratio", "0.2"],
             deteval.evaluate_lvis(*files, iou_type="boundary", dilation_ratio=0.2),
             deteval.evaluate_lvis(*files, iou_type="boundary"))]


def _voc(folder):
    gt, dt = make_demo(seed=7, n_images=8)
    for d in dt:    # fractional boxes: detectron2 rounds them as its result files
        d["bbox"] = [v + 0.4 for v in d["bbox"]]
    files = _files(folder, gt, dt)
    return [(["--protocol", "voc2012", *files, "--detectron2", "--iou-threshold", "0.8"],
             deteval.evaluate_voc(*files, params=deteval.DETECTRON2_VOC2012,
                                  iou_thresholds=(0.8,)),
             deteval.evaluate_voc(*files, params=deteval.VOC2012, iou_thresholds=(0.8,)))]


def _openimages(folder):
    boxes, labels, dets, hierarchy, _ = oidgen.make_problem(2, n_images=10, n_classes=5)
    dets = [r[:2] + (float(np.clip(r[2], 0, 1)),) + r[3:] for r in dets]
    gt = oidgen.write_rows(folder / "gt.csv", oidgen.BOXES_HEADER, boxes)
    dt = oidgen.write_rows(folder / "dt.csv", oidgen.DETECTIONS_HEADER, dets)
    (folder / "h.json").write_text(json.dumps(hierarchy))
    given = {"hierarchy": str(folder / "h.json")}
    # the label map of every label, in reverse order, and one label nothing has
    classes = [*sorted(deteval.evaluate_openimages(gt, dt, **given).classes)[::-1], "/m/none"]
    (folder / "classes.txt").write_text("\n".join(classes) + "\n")
    return [(["--protocol", "openimages", gt, dt, "--hierarchy", folder / "h.json",
              "--classes", folder / "classes.txt", "--expand-detections"],
             deteval.evaluate_openimages(gt, dt, classes=classes, expand_detections=True,
                                         **given),
             deteval.evaluate_openimages(gt, dt, **given))]


@pytest.mark.parametrize("make", [_crowdpose, _lvis_boundary, _voc, _openimages])
def test_calibration_takes_the_protocols_settings(make, tmp_path):
    for i, (argv, result, default) in enumerate(make(tmp_path)):
        expected = api_numbers(result)
        assert expected != api_numbers(default)     # the settings change the numbers
        assert cli_numbers(argv, tmp_path / f"{i}.json") == expected


@pytest.mark.parametrize("protocol, argv, flag", [
    ("coco", ("--use-area",), "--use-area"),
    ("lvis", ("--kpt-sigmas", "0.1"), "--kpt-sigmas"),
    ("voc2007", ("--dilation-ratio", "0.1"), "--dilation-ratio"),
    ("crowdpose", ("--detectron2",), "--detectron2"),
    ("voc2012", ("--classes", "x.txt"), "--classes"),
    ("coco", ("--expand-detections",), "--expand-detections"),
])
def test_another_protocols_setting_is_a_usage_error(protocol, argv, flag, tmp_path):
    files = _files(tmp_path, *make_demo(seed=0, n_images=2))
    status, _, err = run("calibration", "--protocol", protocol, *files, *argv)
    assert status == 2 and f"{flag} does not apply to --protocol {protocol}" in err, err
