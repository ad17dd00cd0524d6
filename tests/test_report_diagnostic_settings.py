"""The report's diagnostics get the report's settings: ``ci_threads`` (``deteval report
--threads``) reaches the slice intervals (COCO's ``slice_interval``, the other protocols'
``protocol_slice_interval``) as it reaches the intervals, with the same numbers for every
value (and ``--threads`` of ``deteval coco`` / ``voc --slice K --ci B`` likewise); the LRP
panel's evaluation at the report's threshold (``_coco_at``, when the report's own is not at
it) keeps the evaluation's IoU type and settings."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from clirun import run
from protocolfiles import write_demo_files
from reportgen import halves
from scenes import shapes_scene

import deteval
import deteval.diagnostics.bootstrap as bootstrap
from deteval.demo import make_demo
from deteval.report import write_report
from deteval.report._diagnostics import _coco_at


@pytest.fixture(scope="module")
def data():
    gt, dt = make_demo(seed=6, n_images=12)
    return gt, dt, halves(gt)


def _recording(monkeypatch, name: str) -> list:
    function, calls = getattr(bootstrap, name), []

    def recorded(*args, **options):
        calls.append(options["threads"] if "threads" in options else args[2])
        return function(*args, **options)

    monkeypatch.setattr(bootstrap, name, recorded)
    return calls


@pytest.mark.parametrize("protocol, recorded", [("coco", "bootstrap_coco"),
                                                 ("voc2007", "resampled")])
def test_threads_reach_the_slice_intervals(data, monkeypatch, tmp_path, protocol, recorded):
    """``bootstrap_coco`` (COCO's intervals and each image slice's), ``resampled`` (each VOC
    image slice's: bootstrap_voc holds its own reference) each see the threads asked."""
    gt, dt, tags = data
    slices = []
    for threads in (1, 3):
        calls = _recording(monkeypatch, recorded)
        index = write_report(gt, dt, tmp_path / str(threads), protocol=protocol, ci=4,
                             ci_seed=1, ci_threads=threads, gallery=0,
                             slices={"by": ["half"], "tags": tags})
        payload = json.loads((index.parent / "results.json").read_text())
        slices.append(payload["panels"]["slices"])
        assert len(calls) >= 2 and set(calls) == {threads}, calls   # both halves
        monkeypatch.undo()
    assert slices[0] == slices[1]
    assert all(s["interval"] is not None for s in slices[0]["slices"] if s["kind"] == "image")


@pytest.mark.parametrize("iou_type, settings", [
    ("segm", {}), ("boundary", {"dilation_ratio": 0.1}),
    ("keypoints", {"keypoint_sigmas": (0.3,) * 17})])
def test_the_lrp_evaluation_at_the_threshold_keeps_the_iou_type(iou_type, settings):
    gt, dt = shapes_scene()
    result = deteval.evaluate_coco(gt, dt, iou_type=iou_type, **settings)
    run = SimpleNamespace(result=result, dataset=result.dataset, detections=result.detections)
    at = _coco_at(run, 0.75)
    expected = deteval.evaluate_coco(gt, dt, iou_type=iou_type, iou_thresholds=(0.75,),
                                     max_detections=(100, 100, 100), **settings)
    assert at.params.iou_type == iou_type
    assert np.array_equal(at.precision, expected.precision, equal_nan=True)
    assert np.array_equal(at.stats, expected.stats, equal_nan=True)


@pytest.mark.parametrize("command, recorded", [("coco", "bootstrap_coco"),
                                               ("voc", "resampled")])
def test_threads_reach_the_slice_intervals_of_the_commands(monkeypatch, tmp_path, command,
                                                           recorded):
    paths = write_demo_files(tmp_path, seed=2, n_images=6)[2]
    printed = []
    for threads in (1, 3):
        calls = _recording(monkeypatch, recorded)
        status, out, err = run(command, *paths, "--slice", "width", "--ci", 4, "--threads",
                               threads)
        assert status == 0, err
        assert calls and set(calls) == {threads}, calls
        printed.append(out)
        monkeypatch.undo()
    assert printed[0] == printed[1] and "worst slices by AP: width=640 (" in printed[0]
