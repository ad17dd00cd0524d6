"""Slices of LVIS, CrowdPose, Open Images and Pascal VOC results
(deteval/diagnostics/slices_protocols.py, docs/diagnostics/slices.md §7): each image slice's
numbers equal the protocol run on a ground truth and detections cut down to the slice's
images (VOC: ``evaluate_voc(..., image_ids=...)``), bit for bit; a slice's interval is the
protocol's bootstrap with the slice's images drawn; the object properties each protocol
cannot slice exactly are refused; the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import oidgen
import pytest
from clirun import run as _run
from crowdposegen import make_crowdpose_dataset, write_pair
from lvisgen import make_lvis_dataset

import deteval
from deteval.demo import make_demo
from deteval.diagnostics.bootstrap_voc import voc_number_names
from deteval.diagnostics.slices import OBJECT_SLICES
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


# ------------------------------------------------------------------------------------------
# Pascal VOC
# ------------------------------------------------------------------------------------------

VOC_PRESETS = {"voc2007": deteval.VOC2007, "voc2012": deteval.VOC2012,
               "detectron2": deteval.DETECTRON2_VOC2007}


def _voc_data(seed: int) -> tuple[dict, list, dict]:
    """A demo set with difficult objects (``iscrowd``) and a tag ``group`` (some untagged)."""
    gt, dt = make_demo(seed=seed, n_images=24)
    for i, annotation in enumerate(gt["annotations"]):
        if i % 6 == 2:
            annotation["iscrowd"] = 1
    return gt, dt, _tag(gt, seed)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("preset", list(VOC_PRESETS))
def test_voc_image_slices_equal_evaluate_voc_on_those_images(preset, seed):
    gt, dt, tags = _voc_data(seed)
    # Evaluated images: all but a few (a slice holds only its evaluated images).
    evaluated = [image["id"] for image in gt["images"]][2:]
    result = deteval.evaluate_voc(gt, dt, params=VOC_PRESETS[preset], image_ids=evaluated)
    sliced = deteval.slices(result, by=["group"], tags=tags)
    assert [s.value for s in sliced] == sorted({t["group"] for t in tags.values()} - {""})
    assert sliced.settings == {"protocol": "voc"}
    several = len(result.params.iou_thresholds) > 1
    assert sliced.overall["AP"] == result.mean_ap
    differs = False
    for s in sliced:
        ids = sorted(_ids(tags, s.value) & set(evaluated))
        alone = deteval.evaluate_voc(gt, dt, params=VOC_PRESETS[preset], image_ids=ids)
        expected = {"AP": -1.0 if np.isnan(alone.mean_ap) else alone.mean_ap}
        if several:       # detectron2: each threshold's mAP too, AP50 and AP75 by name
            names = voc_number_names(alone)[1:1 + len(alone.map)]
            expected.update(zip(names, alone.map.tolist()))
            expected.update(AP50=alone.map[0], AP75=alone.map[5])
        assert s.stats == expected
        assert (s.kind, s.n_images, s.interval) == ("image", len(ids), None)
        assert s.n_gt == int(alone.n_positives.sum())
        assert s.n_detections == int(alone.n_detections.sum())
        differs |= s.stats["AP"] != result.mean_ap
    assert differs        # the slices are not the whole evaluation


@pytest.mark.parametrize("preset", ["voc2007", "voc2012"])
def test_voc_slice_interval_is_bootstrap_voc_with_the_same_draws(preset):
    gt, dt, tags = _voc_data(4)
    result = deteval.evaluate_voc(gt, dt, params=VOC_PRESETS[preset])
    B, seed = 25, 3
    interval = protocol_slice_interval(n_resamples=B, seed=seed)
    sliced = deteval.slices(result, by="group", tags=tags, interval=interval)
    ids = np.asarray(result.params.image_ids)
    finite = 0
    for s in sliced:
        alone = deteval.evaluate_voc(gt, dt, params=VOC_PRESETS[preset],
                                     image_ids=sorted(_ids(tags, s.value)))
        columns = np.flatnonzero(np.isin(ids, list(_ids(tags, s.value))))
        # Weight 1 on the slice's images is the slice evaluated alone.
        ones = np.zeros((1, len(ids)), dtype=np.int64)
        ones[0, columns] = 1
        assert deteval.bootstrap_voc(result, weights=ones).samples[0, 0] == alone.mean_ap
        # The interval: the slice's images drawn with replacement, the others weight 0.
        rng = np.random.default_rng(seed)
        weights = np.zeros((B, len(ids)), dtype=np.int64)
        for b, draw in enumerate(columns[rng.integers(0, len(columns), (B, len(columns)))]):
            np.add.at(weights[b], draw, 1)
        expected = deteval.bootstrap_voc(result, weights=weights).interval("mAP")
        assert np.array_equal(s.interval, expected, equal_nan=True)
        # ... which is the bootstrap of the slice alone with the same seed.
        assert np.array_equal(s.interval, deteval.bootstrap_voc(
            alone, n_resamples=B, seed=seed).interval("mAP"), equal_nan=True)
        finite += bool(np.isfinite(s.interval).all() and s.interval[0] < s.interval[1])
    assert finite


def test_voc_refuses_object_slices_and_a_result_without_match_table():
    gt, dt, tags = _voc_data(1)
    result = deteval.evaluate_voc(gt, dt)
    for key in OBJECT_SLICES:
        with pytest.raises(ValueError, match=f"slices by '{key}' are not available for VOC "
                           "results: the VOC protocol has no area ranges"):
            deteval.slices(result, by=["group", key], tags=tags)
    # Every key of the tags, and no object property, by default.
    assert {s.key for s in deteval.slices(result, tags=tags)} == {"group"}
    with pytest.raises(TypeError, match="takes no detections"):
        deteval.slices(result, dt)
    evaluator = deteval.Evaluator(gt, protocol="voc2012")
    evaluator.update(dt)
    with pytest.raises(ValueError, match="slices need a result of evaluate_voc .*match table"):
        deteval.slices(evaluator.compute(), tags=tags)


def test_cli_voc_slices(tmp_path):
    gt, dt, tags = _voc_data(2)
    for image in gt["images"]:
        image["site"] = ["north", "south", "east"][image["id"] % 3]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    (tmp_path / "tags.json").write_text(json.dumps({str(k): v for k, v in tags.items()}))
    out_json = tmp_path / "out.json"
    status, out, err = _run("voc", tmp_path / "gt.json", tmp_path / "dt.json", "--year", 2007,
                            "--slice", "site", "--slice-file", tmp_path / "tags.json",
                            "--ci", 12, "--seed", 4, "--json", out_json)
    assert status == 0, err
    assert "site=north" in out and "group=" in out and "worst slices by AP" in out
    result = deteval.evaluate_voc(gt, dt, params=deteval.VOC2007)
    expected = deteval.slices(result, by=["site", "group"], tags=tags, images=gt,
                              interval=protocol_slice_interval(n_resamples=12, seed=4))
    payload = json.loads(out_json.read_text())
    assert payload["slices"] == json.loads(json.dumps(expected.to_dict()))
    assert all(s["interval"] is not None for s in payload["slices"]["slices"])
    assert payload["intervals"] == json.loads(json.dumps(deteval.bootstrap_voc(
        result, n_resamples=12, seed=4).to_dict()))

    status, _, err = _run("voc", tmp_path / "gt.json", tmp_path / "dt.json", "--slice", "size")
    assert status != 0 and "slices by 'size' are not available for VOC results" in err


def test_cli_voc_slices_of_a_voc_folder_by_file_name(tmp_path):
    """Ground truth in another format: the tags name the images by file name."""
    gt, dt, _ = _voc_data(3)
    dataset = deteval.read_coco_gt(gt)
    deteval.write_gt(dataset, tmp_path / "voc", "voc")
    (tmp_path / "dt.json").write_text(json.dumps(
        {"images": gt["images"], "categories": gt["categories"], "annotations": dt}))
    halves = {image["file_name"]: {"half": "a" if k % 2 else "b"}
              for k, image in enumerate(gt["images"])}
    (tmp_path / "tags.json").write_text(json.dumps(halves))
    out_json = tmp_path / "out.json"
    status, _, err = _run("voc", tmp_path / "voc", tmp_path / "dt.json", "--slice-file",
                          tmp_path / "tags.json", "--json", out_json)
    assert status == 0, err
    payload = json.loads(out_json.read_text())
    folder = deteval.read_gt(tmp_path / "voc", "voc")
    assert payload["map"] == deteval.evaluate_voc(folder, tmp_path / "dt.json").map.tolist()
    slices = payload["slices"]["slices"]
    assert [s["value"] for s in slices] == ["a", "b"]
    for s in slices:
        ids = [i for i, name in zip(folder.images.ids.tolist(), folder.images.file_names)
               if halves[name]["half"] == s["value"]]
        alone = deteval.evaluate_voc(folder, tmp_path / "dt.json", image_ids=ids)
        assert (s["stats"]["AP"], s["n_images"]) == (alone.mean_ap, len(ids))
    # An image key without tags: the folder's records have none.
    status, _, err = _run("voc", tmp_path / "voc", tmp_path / "dt.json", "--slice", "half")
    assert status == 2 and "is read as voc: give the tags with --slice-file" in err
