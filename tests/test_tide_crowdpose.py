"""TIDE error attribution with the CrowdPose protocol (docs/diagnostics/tide.md §8.2).

With no error fixed, ``error_attribution(protocol="crowdpose")``'s AP is
``evaluate_crowdpose``'s AP50 times 100 exactly, and it has as many true positives as the
protocol's match table, on seeded ``crowdposegen`` datasets (14 keypoints, no ``area``
fields, crowd objects, objects without keypoints, results without a keypoint score, more
than 20 results per image); every fix raises the AP; the CLI.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from crowdposegen import make_crowdpose_dataset
from tide_reference import run_errors, write_inputs

import deteval
from deteval.matching import TP


@pytest.mark.parametrize("seed", range(12))
def test_no_fix_gives_crowdpose_ap50(seed):
    gt, dt = make_crowdpose_dataset(seed)
    r = deteval.error_attribution(gt, dt, protocol="crowdpose")
    cp = deteval.evaluate_crowdpose(gt, dt)
    ap50 = cp.stats[deteval.CROWDPOSE_STAT_NAMES.index("AP50")]
    assert np.isnan(r.ap) if ap50 == -1 else r.ap == 100 * ap50
    all_area = cp.params.coco_params().area_labels.index("all")
    assert r.dt_true_positive.sum() == (cp.matches.detection_status(all_area)[0] == TP).sum()
    fixed = np.r_[r.fixed_ap, r.ap + r.dap_fp, r.ap + r.dap_fn]
    if not np.isnan(r.ap):
        assert (fixed[~np.isnan(fixed)] >= r.ap).all(), (fixed, r.ap)
    assert r.settings["iou_type"] == "keypoints"


def test_cli_errors_crowdpose(tmp_path):
    gt, dt = make_crowdpose_dataset(3)
    out = tmp_path / "errors.json"
    code, stdout, stderr = run_errors(*write_inputs(tmp_path, gt, dt), "--protocol",
                                      "crowdpose", "--json", out)
    assert code == 0, stderr
    assert "TIDE keypoints AP @ 0.50 (CrowdPose)" in stdout
    expected = deteval.error_attribution(gt, dt, protocol="crowdpose")
    assert json.loads(out.read_text())["tide"]["ap"] == expected.ap


def test_crowdpose_compares_keypoints():
    gt, dt = make_crowdpose_dataset(3)
    with pytest.raises(ValueError, match="'crowdpose' compares keypoints"):
        deteval.error_attribution(gt, dt, protocol="crowdpose", iou_type="bbox")


def test_settings_report_the_cap_per_image_and_class():
    """settings["max_dets"] is CrowdPose's cap (20 per image and class, or max_dets), not
    None."""
    gt, dt = make_crowdpose_dataset(3)
    assert deteval.error_attribution(gt, dt, protocol="crowdpose").settings["max_dets"] == 20
    r = deteval.error_attribution(gt, dt, protocol="crowdpose", max_dets=2)
    assert r.settings["max_dets"] == 2


def test_cli_errors_crowdpose_refuses_an_explicit_bbox(tmp_path):
    """--protocol crowdpose implies keypoints when --iou-type is not given; an explicit
    --iou-type bbox is refused as the function refuses it (it was read as keypoints)."""
    files = write_inputs(tmp_path, *make_crowdpose_dataset(3))
    code, stdout, stderr = run_errors(*files, "--protocol", "crowdpose", "--iou-type", "bbox")
    assert code == 2 and not stdout     # a usage error naming the flag
    assert ("--iou-type: protocol 'crowdpose' compares keypoints; iou_type must be "
            "'keypoints', got 'bbox'") in stderr
    code, stdout, _ = run_errors(*files, "--protocol", "crowdpose")
    assert code == 0 and "TIDE keypoints AP" in stdout
