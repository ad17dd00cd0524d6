"""``--kpt-sigmas`` and ``--dilation-ratio`` with an IoU type that does not read them are usage
errors in every command that takes them (``coco``, ``compare --protocol coco|lvis``,
``calibration --protocol coco``, ``lvis``, as ``draw`` and ``confusion`` already did): given
with boxes they were ignored, and the numbers printed as if they had been applied."""

from __future__ import annotations

import json

import pytest
from clirun import run
from lvisgen import make_lvis_dataset

from deteval.demo import make_demo


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("geometry")
    gt, dt = make_demo()
    lvis_gt, lvis_dt = make_lvis_dataset(1, n_images=6, n_categories=5)
    paths = {}
    for name, value in (("gt", gt), ("dt", dt), ("lgt", lvis_gt), ("ldt", lvis_dt)):
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps(value))
    return paths


KPT = ("--kpt-sigmas", "0.5", "--kpt-sigmas applies to --iou-type keypoints")
DIL = ("--dilation-ratio", "0.1", "--dilation-ratio applies to --iou-type boundary")


@pytest.mark.parametrize("command, flag, value, message", [
    (["coco", "gt", "dt"], *KPT),
    (["coco", "gt", "dt"], *DIL),
    (["coco", "gt", "dt", "--iou-type", "segm"], *DIL),
    (["compare", "gt", "dt", "dt", "--bootstrap", "3"], *KPT),
    (["compare", "gt", "dt", "dt", "--bootstrap", "3"], *DIL),
    (["compare", "lgt", "ldt", "ldt", "--protocol", "lvis", "--bootstrap", "3"], *DIL),
    (["calibration", "gt", "dt"], *KPT),
    (["calibration", "gt", "dt"], *DIL),
    (["lvis", "lgt", "ldt"], *DIL),
    (["calibration", "lgt", "ldt", "--protocol", "lvis"], *DIL),
])
def test_a_similarity_setting_the_iou_type_does_not_read_is_a_usage_error(
        files, command, flag, value, message):
    argv = [files.get(a, a) for a in command]
    status, out, err = run(*argv, flag, value)
    assert status == 2 and message in err and "Traceback" not in err, err
    assert out == ""

