"""``deteval coco GT DT1 DT2 ...``: several results files (the shards of one run) evaluated as
one, equal bit for bit to the merged file; ``--dask local`` on a real LocalCluster."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest
from clirun import run

from deteval.demo import make_demo
from tests.cocogen import make_dataset


def write_shards(folder: Path, name: str, gt: dict, results: list[dict], n: int) -> dict:
    """gt.json, merged.json and ``n`` shard files splitting the results by image."""
    folder.mkdir()
    by_image: dict[int, list] = {}
    for record in results:
        by_image.setdefault(record["image_id"], []).append(record)
    ids = list(by_image)
    paths = {"gt": folder / "gt.json", "merged": folder / "merged.json",
             "shards": [folder / f"{name}{k}.json" for k in range(n)]}
    paths["gt"].write_text(json.dumps(gt))
    paths["merged"].write_text(json.dumps(results))
    for k, path in enumerate(paths["shards"]):
        path.write_text(json.dumps([r for i in ids[k::n] for r in by_image[i]]))
    return paths


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    gt, results = make_demo(seed=0)
    root = tmp_path_factory.mktemp("shards")
    return {n: write_shards(root / f"s{n}", "part", gt, results, n) for n in (2, 3)}


def without_timings(path: Path) -> dict:
    payload = json.loads(path.read_text())
    payload.pop("timings")
    return payload


@pytest.mark.parametrize("n", [2, 3])
def test_shards_equal_the_merged_file(demo, tmp_path, n):
    files = demo[n]
    merged_json, shards_json = tmp_path / "merged.json", tmp_path / "shards.json"
    status, merged, merged_err = run("coco", files["gt"], files["merged"], "--per-class",
                                     "--json", merged_json)
    assert status == 0, merged_err
    status, sharded, err = run("coco", files["gt"], *files["shards"], "--per-class",
                               "--json", shards_json)
    assert status == 0, err
    assert sharded == merged                      # the summary and the per-class table
    one, many = without_timings(merged_json), without_timings(shards_json)
    assert one == many                            # stats (floats to the last bit), notes, ...


def test_other_settings_and_iou_types(tmp_path):
    gt, results = make_dataset(5, n_images=20, n_categories=3, p_many=0.2)
    files = write_shards(tmp_path / "d", "p", gt, results, 3)
    for options in ([], ["--class-agnostic"], ["--max-dets", "1 5 10"],
                    ["--iou-thresholds", "0.5 0.75"]):
        one = run("coco", files["gt"], files["merged"], *options, "--no-check")
        many = run("coco", files["gt"], *files["shards"], *options, "--no-check")
        assert one[0] == many[0] == 0 and one[1] == many[1], options


def test_matches_is_a_usage_error(demo, tmp_path):
    files = demo[2]
    status, out, err = run("coco", files["gt"], *files["shards"], "--matches",
                           tmp_path / "m.csv")
    assert status == 2 and out == ""
    assert "--matches is not available with several DT files" in err
    assert not (tmp_path / "m.csv").exists()


def test_an_image_split_across_two_files_is_named(demo, tmp_path):
    files = demo[2]
    records = json.loads(files["shards"][0].read_text())
    image_id = records[0]["image_id"]
    mine = [r for r in records if r["image_id"] == image_id]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(records))
    b.write_text(json.dumps(mine[:1] + json.loads(files["shards"][1].read_text())))
    status, out, err = run("coco", files["gt"], a, b)
    assert status == 1 and out == ""
    assert f"image_id {image_id} has detections in {a} and in {b}" in err
    assert "must all be in one file" in err


def test_checks_run_on_each_file_and_coverage_on_all(demo, tmp_path):
    """Each shard covers a third of the images: no coverage hazard; a shard of another
    box format is named."""
    files = demo[3]
    status, _, err = run("coco", files["gt"], *files["shards"])
    assert status == 0 and "images-without-detections" not in err
    records = json.loads(files["shards"][1].read_text())
    for r in records:             # xyxy written as xywh
        x, y, w, h = r["bbox"]
        r["bbox"] = [x, y, x + w, y + h]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records))
    status, _, err = run("coco", files["gt"], files["shards"][0], bad, files["shards"][2],
                         "--json", tmp_path / "o.json")
    assert status == 0
    assert f"deteval: warning: {bad}: [" in err
    warned = json.loads((tmp_path / "o.json").read_text())["warnings"]
    assert warned and {w["file"] for w in warned} == {str(bad)}
    status, _, err = run("coco", files["gt"], files["shards"][0], bad, "--no-check")
    assert status == 0 and "warning" not in err


def test_missing_dask_names_the_extra(demo, monkeypatch):
    files = demo[2]
    monkeypatch.setitem(sys.modules, "distributed", None)
    status, out, err = run("coco", files["gt"], *files["shards"], "--dask", "local")
    assert status == 1 and out == ""
    assert "pip install 'deteval[dask]'" in err


def test_dask_local(demo):
    """--dask local: a real distributed.LocalCluster (worker processes, as the library starts
    it) reads and matches the shards; the numbers are the merged file's."""
    pytest.importorskip("distributed", reason="distributed is not installed")
    files = demo[3]
    _, merged, _ = run("coco", files["gt"], files["merged"], "--per-class")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # the cluster's start-up warnings are not deteval's
        status, sharded, err = run("coco", files["gt"], *files["shards"], "--per-class",
                                   "--dask", "local")
    assert status == 0, err
    assert sharded == merged
