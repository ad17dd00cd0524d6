"""Slices (deteval.slices): image slices equal evaluate_coco on their images, object slices
equal pycocotools with the property in place of the area (COCO's area-range rule).

References: ``deteval.evaluate_coco(image_ids=...)`` (itself held equal to pycocotools by
tests/test_coco_parity.py) and pycocotools' ``COCOeval`` run here on annotations and results
whose ``area`` field is overwritten with the property, the bins as ``areaRng``. The
properties themselves are checked against plain Python loops.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json

import cocogen
import numpy as np
import pytest

import deteval
from deteval.cli import main
from deteval.diagnostics.slices import (
    ASPECT_BINS,
    CROWDING_BINS,
    TRUNCATION_BINS,
    aspect_ratios,
    image_slice_result,
    object_slice_result,
    overlap_counts,
    touches_border,
)
from deteval.matching import IGNORED

_VARIANTS = {
    "plain": (0, {}),
    "many detections": (1, {"p_many": 0.3}),
    "crowds": (2, {"p_crowd": 0.5}),
    "bigger": (3, {"n_images": 6, "n_categories": 4}),
}


def _tagged(seed: int, **kwargs) -> tuple[dict, list]:
    gt, results = cocogen.make_dataset(seed, **kwargs)
    rng = np.random.default_rng(seed)
    for image in gt["images"]:
        image["weather"] = str(rng.choice(["rain", "sun", "fog"]))
    return gt, results


def _assert_same(mine, theirs) -> None:
    for name in ("stats", "precision", "recall", "scores"):
        assert np.array_equal(getattr(mine, name), getattr(theirs, name)), name


@pytest.mark.parametrize("seed, kwargs", list(_VARIANTS.values()), ids=list(_VARIANTS))
@pytest.mark.parametrize("options", [{}, {"use_categories": False},
                                     {"max_detections": (1, 3, 5)}], ids=["cats", "pooled",
                                                                          "maxdets"])
def test_image_slice_equals_evaluate_coco_on_its_images(seed, kwargs, options):
    gt, results = _tagged(seed, **kwargs)
    result = deteval.evaluate_coco(gt, results, **options)
    sliced = deteval.slices(result, by="weather", images=gt)
    for s in sliced:
        ids = [im["id"] for im in gt["images"] if im["weather"] == s.value]
        reference = deteval.evaluate_coco(gt, results, image_ids=ids, **options)
        _assert_same(image_slice_result(result, ids), reference)
        assert s.stats == dict(zip(reference.stat_names, reference.stats.tolist()))
        assert s.n_images == len(ids)
        assert s.n_detections == int(reference.n_detections.sum())


def test_image_slice_equals_pycocotools_on_its_images():
    gt, results = _tagged(7, n_images=5, p_many=0.2)
    ids = [im["id"] for im in gt["images"][1:4]]
    mine = image_slice_result(deteval.evaluate_coco(gt, results), ids)
    cocogen.assert_parity(mine, cocogen.run_pycocotools(gt, results, image_ids=ids))


def _pycocotools_with_values(gt: dict, results: list, gt_values, dt_values, bins):
    """pycocotools' precision and recall with each annotation's and result's area replaced
    by the property value; the bins are the area ranges."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(copy.deepcopy(results))
        for row, annotation in enumerate(gt["annotations"]):
            coco_gt.anns[annotation["id"]]["area"] = float(gt_values[row])
        for row in range(len(results)):
            coco_dt.anns[row + 1]["area"] = float(dt_values[row])    # loadRes ids: 1..n
        evaluator = COCOeval(coco_gt, coco_dt, iouType="bbox")
        evaluator.params.areaRng = [[lo, hi] for _, lo, hi in bins]
        evaluator.params.areaRngLbl = [label for label, _, _ in bins]
        evaluator.evaluate()
        evaluator.accumulate()
    return evaluator.eval["precision"], evaluator.eval["recall"]


@pytest.mark.parametrize("seed, kwargs", list(_VARIANTS.values()), ids=list(_VARIANTS))
@pytest.mark.parametrize("prop", ["aspect", "crowding", "truncation"])
def test_object_slices_equal_pycocotools_with_the_property_as_area(seed, kwargs, prop):
    gt, results = cocogen.make_dataset(seed + 40, **kwargs)
    result = deteval.evaluate_coco(gt, results)
    assert len(result.detections) == len(results)     # rows are the results, in order
    sliced = deteval.slices(result, by=prop)
    xywh = result.dataset.gt.as_xywh()
    dt_xywh = result.detections.as_xywh()
    if prop == "aspect":
        gt_values, dt_values, bins = aspect_ratios(xywh), aspect_ratios(dt_xywh), ASPECT_BINS
    elif prop == "crowding":
        gt_values, dt_values = _reference_crowding(gt, results, 0.1)
        bins = CROWDING_BINS
    else:
        gt_values, dt_values = _reference_truncation(gt, results, 1.0)
        bins = TRUNCATION_BINS
    mine = object_slice_result(result, gt_values, dt_values, bins)
    precision, recall = _pycocotools_with_values(gt, results, gt_values, dt_values, bins)
    assert np.array_equal(mine.precision, precision)
    assert np.array_equal(mine.recall, recall)
    for a, s in enumerate(sliced):
        valid = precision[:, :, :, a, 2]
        valid = valid[valid > -1]
        assert s.stats["AP"] == (float(np.mean(valid)) if len(valid) else -1.0)
        assert s.value == bins[a][0]


def _iou(a, b) -> float:
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def _reference_crowding(gt: dict, results: list, t: float):
    regular = [a for a in gt["annotations"] if not a.get("iscrowd", 0)]

    def count(box, image_id):
        return sum(1 for a in regular if a["image_id"] == image_id and _iou(box, a["bbox"]) > t)

    return (np.array([count(a["bbox"], a["image_id"]) for a in gt["annotations"]], float),
            np.array([count(r["bbox"], r["image_id"]) for r in results], float))


def _reference_truncation(gt: dict, results: list, border: float):
    size = {im["id"]: (im["width"], im["height"]) for im in gt["images"]}

    def touches(box, image_id):
        w, h = size[image_id]
        x, y, bw, bh = box
        return float(x <= border or y <= border or x + bw >= w - border
                     or y + bh >= h - border)

    return (np.array([touches(a["bbox"], a["image_id"]) for a in gt["annotations"]]),
            np.array([touches(r["bbox"], r["image_id"]) for r in results]))


@pytest.mark.parametrize("seed", range(4))
def test_property_functions_equal_plain_loops(seed):
    gt, results = cocogen.make_dataset(seed + 60, n_images=4)
    result = deteval.evaluate_coco(gt, results)
    ds, dt = result.dataset, result.detections
    gt_crowd, dt_crowd = _reference_crowding(gt, results, 0.3)
    regular = np.flatnonzero(~ds.gt.iscrowd)
    for xywh, image, expected in ((ds.gt.as_xywh(), ds.gt.image_index, gt_crowd),
                                  (dt.as_xywh(), dt.image_index, dt_crowd)):
        for chunk in (1, 7, 1 << 22):     # blocks of images of any size give the same
            counts = overlap_counts(xywh, image, ds.gt.as_xywh()[regular],
                                    ds.gt.image_index[regular], 0.3, chunk_pairs=chunk)
            assert counts.tolist() == expected.tolist()
    gt_trunc, dt_trunc = _reference_truncation(gt, results, 2.0)
    assert touches_border(dt.as_xywh(), ds.images.widths[dt.image_index],
                          ds.images.heights[dt.image_index], 2.0).tolist() == dt_trunc.tolist()
    assert aspect_ratios(np.array([[0, 0, 4, 2], [0, 0, 3, 0], [0, 0, 0, 0.0]])).tolist() == [
        2.0, np.finfo(float).max, -1.0]


def test_size_slices_are_the_protocols_area_ranges():
    gt, results = cocogen.make_dataset(5, n_images=5)
    result = deteval.evaluate_coco(gt, results)
    sliced = deteval.slices(result, by=["size"])
    assert [s.value for s in sliced] == ["small", "medium", "large"]
    assert [s.stats["AP"] for s in sliced] == result.stats[3:6].tolist()
    assert [s.stats["AR"] for s in sliced] == result.stats[9:12].tolist()
    custom = deteval.slices(gt, results, by="size", area_ranges=[[0, 1e10], [0, 500]],
                            area_labels=["all", "tiny"])
    reference = cocogen.run_pycocotools(gt, results, area_ranges=[[0, 1e10], [0, 500]],
                                        area_labels=["all", "tiny"])
    valid = reference.precision[:, :, :, 1, 2]
    valid = valid[valid > -1]
    assert custom.get("size", "tiny").stats["AP"] == (float(np.mean(valid)) if len(valid)
                                                      else -1.0)
    # an object slice counts the objects it does not ignore
    table = result.matches
    assert sliced.get("size", "small").n_gt == int(np.count_nonzero(
        table.gt_evaluated & ~table.gt_ignore[1]))
    status = table.detection_status(1)[0]
    assert sliced.get("size", "small").n_detections >= int(np.count_nonzero(
        (status >= 0) & (status != IGNORED)))


def test_tags_from_csv_json_and_lists(tmp_path):
    gt, results = cocogen.make_dataset(8, n_images=5)
    ids = [im["id"] for im in gt["images"]]
    names = [im["file_name"] for im in gt["images"]]
    lines = [f"{n},{'a' if i < 2 else 'b'},{'' if i == 4 else 'day'}"
             for i, n in enumerate(names)]
    (tmp_path / "tags.csv").write_text("file_name,camera,time\n" + "\n".join(lines)
                                       + "\nnope.jpg,a,day\n")
    (tmp_path / "tags.json").write_text(json.dumps({str(ids[0]): ["x", "y"], str(ids[1]): "y"}))
    result = deteval.evaluate_coco(gt, results)
    sliced = deteval.slices(result, tags=[str(tmp_path / "tags.csv"),
                                          str(tmp_path / "tags.json")])
    got = {(s.key, s.value): s.n_images for s in sliced if s.kind == "image"}
    assert got == {("camera", "a"): 2, ("camera", "b"): 3, ("time", "day"): 4,
                   ("tags", "x"): 1, ("tags", "y"): 2}
    assert any("1 tagged image(s) are not images" in n for n in sliced.notes)
    assert any(n.startswith("time: 1 image(s) have no value") for n in sliced.notes)
    y = image_slice_result(result, ids[:2])
    _assert_same(y, deteval.evaluate_coco(gt, results, image_ids=ids[:2]))
    assert sliced.get("tags", "y").stats == dict(zip(y.stat_names, y.stats.tolist()))
    records = [{"image_id": ids[2], "site": 3}, {"image_id": ids[3], "site": 3}]
    assert [(s.value, s.n_images) for s in deteval.slices(result, tags=records, by="site")
            ] == [("3", 2)]


def test_result_input_reuses_its_table_and_gives_the_same_numbers():
    gt, results = _tagged(11, n_images=6)
    direct = deteval.slices(gt, results, by=["weather", "aspect", "size"])
    result = deteval.evaluate_coco(gt, results)
    reused = deteval.slices(result, by=["weather", "aspect", "size"], images=gt)
    assert direct.to_dict() == reused.to_dict()
    assert [s.key for s in direct] == ["weather"] * len({im["weather"] for im in gt["images"]}
                                                        ) + ["aspect"] * 3 + ["size"] * 3


def test_worst_slices_are_sorted_and_skip_undefined_ones():
    gt, results = _tagged(12, n_images=6, n_categories=3)
    sliced = deteval.slices(gt, results, by=["weather", "aspect", "crowding"])
    defined = [s for s in sliced if s.ap >= 0]
    worst = sliced.worst(3)
    assert [s.ap for s in worst] == sorted(s.ap for s in defined)[:3]
    payload = json.loads(json.dumps(sliced.to_dict(worst=3)))
    assert payload["worst"] == [f"{s.key}={s.value}" for s in worst]
    assert payload["settings"]["aspect_bins"][-1] == ["wide", 2.0, None]
    assert len(payload["slices"]) == len(sliced)


def test_image_key_named_like_a_property_and_errors(tmp_path):
    gt, results = cocogen.make_dataset(13, n_images=4)
    for i, image in enumerate(gt["images"]):
        image["size"] = "big" if i % 2 else "small-ish"
    sliced = deteval.slices(gt, results, by=["image:size"])
    assert [s.kind for s in sliced] == ["image", "image"]
    with pytest.raises(ValueError, match="no image record or tag gives a value for the key "
                       "'weather'"):
        deteval.slices(gt, results, by="weather")
    # a key that every record holds with no value ("" or null) is refused alike (the fuzzer
    # found "" accepted with no slice while null was refused)
    for empty in ("", None):
        blank = json.loads(json.dumps(gt))
        for image in blank["images"]:
            image["weather"] = empty
        with pytest.raises(ValueError, match="gives a value for the key 'weather'"):
            deteval.slices(blank, results, by="weather")
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "tags.csv").write_text("image_id,lens\n1,wide\n")
    with pytest.raises(ValueError, match=r"key 'weather' \(read: .*gt\.json, .*tags\.csv\)"):
        deteval.slices(str(tmp_path / "gt.json"), results, by="weather",
                       tags=str(tmp_path / "tags.csv"))
    no_sizes = copy.deepcopy(gt)
    del no_sizes["images"][0]["width"]
    with pytest.raises(ValueError, match="truncation need each image's width and height"):
        deteval.slices(no_sizes, results, by="truncation")
    default = deteval.slices(no_sizes, results)
    assert "truncation" not in {s.key for s in default}
    assert any(n.startswith("truncation: not computed") for n in default.notes)
    with pytest.raises(ValueError, match="aspect_bins"):
        deteval.slices(gt, results, aspect_bins=[("a", 2, 1)])


def test_cli_coco_slice_prints_and_writes_json(tmp_path, capsys):
    gt, results = _tagged(14, n_images=5)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    (tmp_path / "tags.csv").write_text("image_id,lens\n" + "\n".join(
        f"{im['id']},{'wide' if i % 2 else 'tele'}" for i, im in enumerate(gt["images"])))
    assert main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 "--slice", "weather", "--slice", "crowding",
                 "--slice-file", str(tmp_path / "tags.csv"),
                 "--json", str(tmp_path / "out.json")]) == 0
    out = capsys.readouterr().out
    expected = deteval.slices(gt, results, by=["weather", "crowding", "lens"],
                              tags=str(tmp_path / "tags.csv"))
    payload = json.loads((tmp_path / "out.json").read_text())
    assert payload["slices"] == json.loads(json.dumps(expected.to_dict()))
    assert "weather" in out and "crowded" in out and "worst slices by AP" in out


def test_interval_function_is_called_per_image_slice():
    gt, results = _tagged(15, n_images=6)
    calls = []

    def interval(result, image_ids):
        calls.append(sorted(image_ids.tolist()))
        ap = image_slice_result(result, image_ids).stats[0]
        return ap - 0.1, ap + 0.1

    sliced = deteval.slices(gt, results, by=["weather", "size"], interval=interval)
    images = [s for s in sliced if s.kind == "image"]
    assert calls == [sorted(im["id"] for im in gt["images"] if im["weather"] == s.value)
                     for s in images]
    assert all(s.interval == (s.ap - 0.1, s.ap + 0.1) for s in images)
    assert all(s.interval is None for s in sliced if s.kind == "object")
    with pytest.raises(TypeError, match="interval must be a function"):
        deteval.slices(gt, results, interval=0.95)


def test_cli_refuses_to_overwrite_the_tags_file(tmp_path, capsys):
    gt, results = _tagged(16, n_images=3)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    (tmp_path / "tags.csv").write_text("image_id,lens\n")
    assert main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 "--slice-file", str(tmp_path / "tags.csv"),
                 "--json", str(tmp_path / "tags.csv")]) == 1
    assert "the slice tags (--slice-file" in capsys.readouterr().err
    assert (tmp_path / "tags.csv").read_text() == "image_id,lens\n"


@pytest.mark.parametrize("sum_recall", [False, True])
@pytest.mark.parametrize("seed", [21, 22, 23])
def test_zero_weights_outside_a_slice_equal_bootstrapping_the_slice_alone(seed, sum_recall,
                                                                           monkeypatch):
    """The bootstrap interval of an image slice resamples only its images: images with
    weight 0 are absent, so every resample equals the one of the slice evaluated alone (bit
    for bit on the precision grid; with the recall-threshold sums, the default, the AP-type
    numbers within 1e-12: the absent images' rows group the sums' terms otherwise,
    docs/diagnostics/bootstrap.md §3)."""
    from deteval.diagnostics import _bootstrap_plans
    from deteval.diagnostics.bootstrap import bootstrap_coco

    monkeypatch.setattr(_bootstrap_plans, "SUM_RECALL", sum_recall)

    gt, results = _tagged(seed, n_images=8, n_categories=3)
    result = deteval.evaluate_coco(gt, results)
    ids = sorted(im["id"] for im in gt["images"] if im["weather"] != "rain")
    alone = deteval.evaluate_coco(gt, results, image_ids=ids)
    rng = np.random.default_rng(seed)
    inside = rng.integers(0, 4, (6, len(ids)))
    everything = np.zeros((6, len(result.params.image_ids)), dtype=np.int64)
    everything[:, np.isin(np.sort(result.params.image_ids), ids)] = inside
    full = bootstrap_coco(result, weights=everything)
    sliced = bootstrap_coco(alone, weights=inside)
    assert full.names == sliced.names
    got = full.samples.copy()
    if sum_recall:
        np.testing.assert_allclose(got, sliced.samples, rtol=0, atol=1e-12)
        ap_type = np.array([name.startswith("AP") for name in full.names])
        got[:, ap_type] = sliced.samples[:, ap_type]
    assert np.array_equal(got, sliced.samples, equal_nan=True)


def test_slice_interval_is_the_percentile_interval_of_resamples_of_the_slice():
    from deteval.diagnostics.bootstrap import bootstrap_coco, slice_interval

    gt, results = _tagged(24, n_images=8, n_categories=3)
    result = deteval.evaluate_coco(gt, results)
    ids = np.array(sorted(im["id"] for im in gt["images"] if im["weather"] != "sun"))
    low, high = slice_interval(n_resamples=40, seed=5)(result, ids)
    # The same draws, made here: the slice's images with replacement, others weight 0.
    evaluated = np.sort(result.params.image_ids)
    rows = np.flatnonzero(np.isin(evaluated, ids))
    draws = rows[np.random.default_rng(5).integers(0, len(rows), (40, len(rows)))]
    weights = np.zeros((40, len(evaluated)), dtype=np.int64)
    for b, row in enumerate(draws):
        np.add.at(weights[b], row, 1)
    boot = bootstrap_coco(result, weights=weights)
    ap = boot.samples[:, boot.names.index("AP")]
    ap = ap[~np.isnan(ap)]
    assert (low, high) == boot.interval("AP")
    assert low == np.percentile(ap, 2.5) and high == np.percentile(ap, 97.5)


def test_cli_coco_ci_gives_the_image_slices_intervals(tmp_path, capsys):
    gt, results = _tagged(25, n_images=6)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    assert main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 "--slice", "weather", "--slice", "size", "--ci", "30",
                 "--json", str(tmp_path / "out.json")]) == 0
    capsys.readouterr()
    payload = json.loads((tmp_path / "out.json").read_text())
    rows = payload["slices"]["slices"]
    image_rows = [r for r in rows if r["key"] == "weather"]
    assert image_rows and all(len(r["interval"]) == 2 for r in image_rows)
    assert all(r["interval"] is None for r in rows if r["key"] == "size")
