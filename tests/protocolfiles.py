"""Small seeded input files of the commands (the demo's COCO files; ``deteval lvis``,
``crowdpose``, ``openimages``), written once for the CLI tests that run them."""

from __future__ import annotations

import json
from pathlib import Path

import oidgen
from crowdposegen import make_crowdpose_dataset
from lvisgen import make_lvis_dataset

from deteval.demo import make_demo


def write_protocol_files(folder: Path) -> dict[str, list[Path]]:
    """``{protocol: [GT, DT]}`` of lvis, crowdpose and openimages, written into ``folder``."""
    files = {}
    for protocol, (gt, dt) in (("lvis", make_lvis_dataset(0, n_images=5, p_crowded_image=0)),
                               ("crowdpose", make_crowdpose_dataset(0, n_images=5))):
        for name, value in (("gt", gt), ("dt", dt)):
            (folder / f"{protocol}_{name}.json").write_text(json.dumps(value))
        files[protocol] = [folder / f"{protocol}_gt.json", folder / f"{protocol}_dt.json"]
    boxes, _, dets, _, _ = oidgen.make_problem(0, n_images=6, n_classes=3)
    files["openimages"] = [
        oidgen.write_rows(folder / "gt.csv", oidgen.BOXES_HEADER, boxes),
        oidgen.write_rows(folder / "dt.csv", oidgen.DETECTIONS_HEADER, dets)]
    return files


def write_demo_files(folder: Path, *, seed: int, n_images: int) -> tuple[dict, list, list[Path]]:
    """The demo's ``(gt, dt)`` of ``seed`` written as ``folder/gt.json`` and
    ``folder/dt.json``: ``(gt, dt, [GT path, DT path])``."""
    gt, dt = make_demo(seed=seed, n_images=n_images)
    for name, value in (("gt", gt), ("dt", dt)):
        (folder / f"{name}.json").write_text(json.dumps(value))
    return gt, dt, [folder / "gt.json", folder / "dt.json"]
