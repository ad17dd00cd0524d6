"""The settings of each protocol's own command in ``deteval compare --protocol P``
(``--detectron2`` and ``--iou-thresholds`` of ``deteval voc``, ``--max-dets`` and
``--dilation-ratio`` of ``deteval lvis``, ``--kpt-sigmas`` and ``--use-area`` of ``deteval
crowdpose``, ``--kpt-sigmas`` of ``deteval coco --iou-type keypoints``): the compared
numbers of each file equal the protocol command's numbers with the same options (its
``--json``), the options change them (so the test can tell), the validation is the
command's, and another protocol's options are usage errors."""

from __future__ import annotations

import json

import pytest
from clirun import run
from crowdposegen import make_crowdpose_dataset
from lvisgen import make_lvis_dataset

from deteval.demo import make_demo


def _files(folder, gt, dt) -> tuple[str, str]:
    for name, value in (("gt", gt), ("dt", dt)):
        (folder / f"{name}.json").write_text(json.dumps(value))
    return str(folder / "gt.json"), str(folder / "dt.json")


def compared(gt, dt, protocol, options, folder) -> dict[str, float]:
    """The baseline's numbers in ``deteval compare --json`` (the file against itself)."""
    path = folder / "compare.json"
    status, _, err = run("compare", gt, dt, dt, "--protocol", protocol, "--bootstrap", 3,
                         "--json", path, *options)
    assert status == 0, err
    return {row["name"]: row["baseline_value"]
            for row in json.loads(path.read_text())["differences"]}


def own(command: list, options, folder) -> dict:
    path = folder / "own.json"
    status, _, err = run(*command, *options, "--json", path)
    assert status == 0, err
    return json.loads(path.read_text())


def stats_of(payload: dict) -> dict[str, float]:
    """The stats by name, and the per-class AP as compare names it (-1: undefined)."""
    numbers = dict(payload["stats_named"])
    numbers.update({f"AP[{row['name']}]": row["AP"] for row in payload["per_class"]})
    return numbers


def _as_compared(numbers: dict) -> dict:
    return {name: (None if value == -1 else value) for name, value in numbers.items()}


@pytest.fixture(scope="module")
def crowdpose_files(tmp_path_factory):
    return _files(tmp_path_factory.mktemp("crowdpose"), *make_crowdpose_dataset(0, n_images=8))


@pytest.fixture(scope="module")
def lvis_files(tmp_path_factory):
    return _files(tmp_path_factory.mktemp("lvis"), *make_lvis_dataset(
        3, n_images=4, p_crowded_image=1.0, crowded=40))


SIGMAS = " ".join(["0.05"] * 14)


@pytest.mark.parametrize("options", [("--use-area",), ("--kpt-sigmas", SIGMAS),
                                     ("--kpt-sigmas", SIGMAS, "--use-area")])
def test_compare_crowdpose_numbers_are_deteval_crowdposes_with_the_options(
        crowdpose_files, options, tmp_path):
    gt, dt = crowdpose_files
    expected = _as_compared(stats_of(own(["crowdpose", gt, dt], options, tmp_path)))
    default = _as_compared(stats_of(own(["crowdpose", gt, dt], (), tmp_path)))
    assert expected != default      # the options change the numbers
    got = compared(gt, dt, "crowdpose", options, tmp_path)
    assert {name: got[name] for name in expected} == expected


def test_compare_coco_keypoints_takes_the_sigmas_of_deteval_coco(crowdpose_files, tmp_path):
    """COCO keypoints of 14-keypoint persons: COCO's 17 person sigmas do not fit them."""
    gt, dt = crowdpose_files
    options = ("--iou-type", "keypoints", "--kpt-sigmas", SIGMAS)
    expected = _as_compared(stats_of(own(["coco", gt, dt, "--no-check"], options, tmp_path)))
    other = ("--iou-type", "keypoints", "--kpt-sigmas", " ".join(["0.2"] * 14))
    assert expected != _as_compared(stats_of(own(["coco", gt, dt, "--no-check"], other,
                                                  tmp_path)))
    got = compared(gt, dt, "coco", options, tmp_path)
    assert {name: got[name] for name in expected} == expected


@pytest.mark.parametrize("options", [("--max-dets", "7"), ("--max-dets", "1")])
def test_compare_lvis_numbers_are_deteval_lviss_with_max_dets(lvis_files, options, tmp_path):
    gt, dt = lvis_files
    expected = _as_compared(stats_of(own(["lvis", gt, dt], options, tmp_path)))
    default = _as_compared(stats_of(own(["lvis", gt, dt], (), tmp_path)))
    assert expected != default
    got = compared(gt, dt, "lvis", options, tmp_path)
    assert {name: got[name] for name in expected} == expected


def test_compare_lvis_boundary_takes_the_dilation_ratio(tmp_path):
    gt, dt = _files(tmp_path, *make_lvis_dataset(2, segm=True, n_images=3))
    options = ("--iou-type", "boundary", "--dilation-ratio", "0.2")
    expected = _as_compared(stats_of(own(["lvis", gt, dt], options, tmp_path)))
    default = _as_compared(stats_of(own(["lvis", gt, dt], options[:2], tmp_path)))
    assert expected != default
    got = compared(gt, dt, "lvis", options, tmp_path)
    assert {name: got[name] for name in expected} == expected


@pytest.mark.parametrize("protocol, options", [
    ("voc2007", ("--detectron2",)),
    ("voc2012", ("--iou-thresholds", "0.5 0.9")),
    ("voc2012", ("--detectron2", "--iou", "0.85")),
])
def test_compare_voc_numbers_are_deteval_vocs_with_the_options(protocol, options, tmp_path):
    gt, dt = _files(tmp_path, *make_demo(seed=1, n_images=6))
    command = ["voc", "--year", protocol[3:], gt, dt, "--no-check"]
    payload = own(command, options, tmp_path)
    assert payload["mean_ap"] != own(command, (), tmp_path)["mean_ap"]
    got = compared(gt, dt, protocol, options, tmp_path)
    assert got["mAP"] == payload["mean_ap"]
    if len(payload["iou_thresholds"]) > 1:
        for t, value in zip(payload["iou_thresholds"], payload["map"]):
            assert got[f"mAP@{t:.2f}"] == value
    by_name = {row["name"]: row["ap"] for row in payload["per_class"]}
    assert {n: got[f"AP[{n}]"] for n in by_name} == {
        n: (None if ap[0] is None else sum(ap) / len(ap)) for n, ap in by_name.items()}


@pytest.mark.parametrize("command, protocol, options", [
    (["crowdpose"], "crowdpose", ("--kpt-sigmas", "0.1 0.1")),
    (["crowdpose"], "crowdpose", ("--kpt-sigmas", "a b")),
    (["lvis"], "lvis", ("--max-dets", "0")),
    (["lvis"], "lvis", ("--dilation-ratio", "-1")),
    (["voc", "--year", "2012"], "voc2012", ("--iou-thresholds", "1.5")),
])
def test_compare_validates_the_options_as_the_protocols_command(
        crowdpose_files, command, protocol, options):
    gt, dt = crowdpose_files
    status, _, expected = run(*command, gt, dt, *options)
    assert status in (1, 2)
    got_status, _, err = run("compare", gt, dt, dt, "--protocol", protocol, "--bootstrap", 3,
                             *options)
    message = expected.strip().splitlines()[-1].split("error: ", 1)[1]
    assert got_status == status and message in err, err


@pytest.mark.parametrize("protocol, options, message", [
    ("coco", ("--detectron2",), "--detectron2 needs --protocol voc2007 or voc2012"),
    ("lvis", ("--iou-thresholds", "0.5"), "--iou-thresholds needs --protocol coco or "
     "voc2007 or voc2012"),
    ("voc2007", ("--max-dets", "10"), "--max-dets needs --protocol coco or lvis"),
    ("voc2007", ("--kpt-sigmas", "0.1"), "--kpt-sigmas needs --protocol coco or crowdpose"),
    ("lvis", ("--use-area",), "--use-area needs --protocol crowdpose"),
    ("crowdpose", ("--dilation-ratio", "0.1"), "--dilation-ratio needs --protocol coco or "
     "lvis"),
])
def test_options_of_another_protocol_are_usage_errors(crowdpose_files, protocol, options,
                                                      message):
    gt, dt = crowdpose_files
    status, _, err = run("compare", gt, dt, dt, "--protocol", protocol, "--bootstrap", 3,
                         *options)
    assert status == 2 and message in err, err
