"""Slices of LVIS, CrowdPose and Open Images results (deteval/diagnostics/slices_protocols.py,
docs/diagnostics/slices.md §7): each image slice's numbers equal the protocol run on a
ground truth and detections cut down to the slice's images, bit for bit; the object
properties each protocol cannot slice exactly are refused; the command line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import oidgen
import pytest
from crowdposegen import make_crowdpose_dataset, write_pair
from lvisgen import make_lvis_dataset

import deteval
from deteval.cli import main
from deteval.diagnostics.slices_protocols import protocol_slice_interval, protocol_slices


def _subset(gt: dict, results: list, ids: set) -> tuple[dict, list]:
    out = dict(gt, images=[i for i in gt["images"] if i["id"] in ids],
               annotations=[a for a in gt["annotations"] if a["image_id"] in ids])
    return out, [r for r in results if r["image_id"] in ids]


def _tag(gt: dict, seed: int) -> dict:
    """A key ``group`` with 2-3 values over the images (some untagged)."""
    rng = np.random.default_rng(seed)
    return {image["id"]: {"group": str(rng.choice(["x", "y", "z", ""]))}
            for image in gt["images"]}


def _ids(tags: dict, value: str) -> set:
    return {i for i, t in tags.items() if t["group"] == value}


@pytest.mark.parametrize("seed", range(5))
def test_lvis_image_slices_equal_the_protocol_on_those_images(seed):
    gt, results = make_lvis_dataset(seed)
    result = deteval.evaluate_lvis(gt, results)
    tags = _tag(gt, seed)
    sliced = deteval.slices(result, by=["group"], tags=tags)
    assert [s.value for s in sliced] == sorted({t["group"] for t in tags.values()} - {""})
    for s in sliced:
        alone = deteval.evaluate_lvis(*_subset(gt, results, _ids(tags, s.value)))
        assert [s.stats[n] for n in alone.stat_names] == alone.stats.tolist()
        assert s.stats["AR"] == alone.stat("AR@300")
        assert s.n_images == len(_ids(tags, s.value))
        objects = _subset(gt, results, _ids(tags, s.value))[0]["annotations"]
        assert s.n_gt == sum(1 for a in objects if a["area"] > 0 and not a.get("ignore"))
        assert s.n_detections == int(alone.n_detections.sum())


@pytest.mark.parametrize("seed", range(4))
def test_crowdpose_image_slices_equal_the_protocol_on_those_images(seed):
    gt, results = make_crowdpose_dataset(seed, n_images=8, bbox_mode="none")
    result = deteval.evaluate_crowdpose(gt, results)
    tags = _tag(gt, seed)
    for s in protocol_slices(result, by="group", tags=tags):
        alone = deteval.evaluate_crowdpose(*_subset(gt, results, _ids(tags, s.value)))
        assert [s.stats[n] for n in alone.stat_names] == alone.stats.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_openimages_image_slices_equal_the_protocol_on_those_files(seed):
    g, lab, d, h, classes = oidgen.make_problem(seed, n_images=9)
    gt, labels, dt = oidgen.to_objects(g, lab, d)
    result = deteval.evaluate_openimages(gt, dt, image_labels=labels, hierarchy=h)
    images = result.image_ids.tolist()
    tags = {image: {"half": "a" if k % 2 else "b"} for k, image in enumerate(images)}
    for s in protocol_slices(result, by=["half"], tags=tags):
        keep = {i for i, t in tags.items() if t["half"] == s.value}
        alone = deteval.evaluate_openimages(*oidgen.to_objects(
            *([r for r in rows if r[0] in keep] for rows in (g, lab, d)))[::2],
            image_labels=oidgen.to_objects(*([r for r in rows if r[0] in keep]
                                              for rows in (g, lab, d)))[1], hierarchy=h)
        expected = -1.0 if np.isnan(alone.mean_ap) else alone.mean_ap
        assert s.stats == {"AP": expected, "AP50": expected}
        assert s.n_images == len(keep)


def test_size_slices_and_refusals():
    gt, results = make_lvis_dataset(2)
    result = deteval.evaluate_lvis(gt, results)
    sliced = deteval.slices(result, by=["size"])
    assert [s.value for s in sliced] == ["small", "medium", "large"]
    for s, name in zip(sliced, ("APs", "APm", "APl")):
        assert s.stats["AP"] == result.stat(name)
    with pytest.raises(ValueError, match="matched again with the aspect"):
        deteval.slices(result, by=["aspect"])
    g, lab, d, h, _ = oidgen.make_problem(1)
    gt_b, labels, dt = oidgen.to_objects(g, lab, d)
    oid = deteval.evaluate_openimages(gt_b, dt, image_labels=labels)
    with pytest.raises(ValueError, match="Open Images has no area ranges"):
        protocol_slices(oid, by=["size"])
    with pytest.raises(ValueError, match="no image record or tag gives a value for the key "
                       "'weather'"):
        protocol_slices(result, by=["weather"], images=gt)
    with pytest.raises(TypeError, match="takes no detections"):
        deteval.slices(result, results)


def test_slice_interval_is_the_bootstrap_of_the_slice_alone():
    gt, results = make_lvis_dataset(4)
    gt["images"].sort(key=lambda image: image["id"])    # resamples drawn in the file order
    result = deteval.evaluate_lvis(gt, results)
    tags = _tag(gt, 1)
    interval = protocol_slice_interval(n_resamples=30, seed=5)
    finite = 0
    for s in protocol_slices(result, by=["group"], tags=tags, interval=interval):
        alone = deteval.evaluate_lvis(*_subset(gt, results, _ids(tags, s.value)))
        boot = deteval.bootstrap_lvis(alone, n_resamples=30, seed=5)
        assert np.array_equal(s.interval, boot.interval("AP"), equal_nan=True)
        finite += bool(np.isfinite(s.interval).all())
    assert finite


def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_cli_slices(tmp_path):
    gt, results = make_lvis_dataset(3)
    for image, tag in zip(gt["images"], _tag(gt, 3).values()):
        image["group"] = tag["group"]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    out_json = tmp_path / "out.json"
    status, out, _ = _run("lvis", tmp_path / "gt.json", tmp_path / "dt.json", "--slice",
                          "group", "--slice", "size", "--json", out_json)
    assert status == 0 and "worst slices by AP" in out
    expected = deteval.slices(deteval.evaluate_lvis(gt, results), by=["group", "size"],
                              images=gt)
    assert json.loads(out_json.read_text())["slices"] == json.loads(json.dumps(
        expected.to_dict()))

    cp_gt, cp_dt = write_pair(tmp_path, *make_crowdpose_dataset(1, n_images=6))
    tags = tmp_path / "tags.json"
    cp_ids = [image["id"] for image in json.loads(Path(cp_gt).read_text())["images"]]
    tags.write_text(json.dumps({str(i): {"half": "a" if k % 2 else "b"}
                                for k, i in enumerate(cp_ids)}))
    status, out, _ = _run("crowdpose", cp_gt, cp_dt, "--slice-file", tags, "--ci", 10)
    assert status == 0 and "half=a" in out

    (boxes, dets), options = oidgen.write_problem(tmp_path)
    status, _, err = _run("openimages", boxes, dets, "--slice", "size")
    assert status != 0 and "Open Images has no area ranges" in err
