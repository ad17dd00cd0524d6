"""deteval's keypoint readers: the typed (msgspec) file readers of results and ground truth equal
the general readers column for column and word their errors alike, on seeded datasets and
on unusual input (mutations of records), files equal dicts; index_in and the read-only,
unshared columns of the readers."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json

import numpy as np
import pytest
from keypointcases import dt_outcomes, gt_outcomes, outcome
from keypointgen import make_keypoints_dataset

from deteval.data import index_in
from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt, read_coco_results


@pytest.mark.parametrize("seed", range(50, 90, 2), ids="seed{}".format)
def test_typed_file_reader_equals_the_general_reader(seed, tmp_path):
    """A results file in the common layout is decoded by msgspec (typed records); the same
    records given as a list go through the general path: every column is identical, in
    every box mode (all, later, none), with integer and float coordinates."""
    import dataclasses
    import json

    from deteval.io.coco import _typed_keypoint_results, read_coco_gt, read_coco_results

    gt, results = make_keypoints_dataset(seed, other_category=seed % 4 == 0)
    dataset = read_coco_gt(gt, iou_type="keypoints")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    from_file = read_coco_results(path, dataset, iou_type="keypoints")
    from_list = read_coco_results(results, dataset, iou_type="keypoints")
    assert _typed_keypoint_results(path.read_bytes(), dataset, str(path)) is not None
    for field in dataclasses.fields(from_list):
        mine, theirs = getattr(from_file, field.name), getattr(from_list, field.name)
        if isinstance(theirs, np.ndarray):
            assert np.array_equal(mine, theirs, equal_nan=theirs.dtype.kind == "f"), field.name
        else:
            assert mine == theirs, field.name


def _same_columns(mine, theirs) -> None:
    import dataclasses

    for field in dataclasses.fields(theirs):
        a, b = getattr(mine, field.name), getattr(theirs, field.name)
        if isinstance(b, np.ndarray):
            assert np.array_equal(a, b, equal_nan=b.dtype.kind == "f"), field.name
        elif dataclasses.is_dataclass(b):
            _same_columns(a, b)
        elif field.name != "source":
            assert a == b, field.name


@pytest.mark.parametrize("seed", range(60, 100, 2), ids="seed{}".format)
def test_typed_ground_truth_reader_equals_the_general_reader(seed, tmp_path):
    """A person-keypoints file is decoded by msgspec into typed records; the same dict goes
    through the general path: the datasets are identical (categories with and without a
    keypoints list, other keypoint counts, crowds, zero visible keypoints)."""
    import json

    from deteval.io.coco import _typed_keypoint_gt, read_coco_gt

    gt, _ = make_keypoints_dataset(seed, other_category=seed % 4 == 0)
    if seed % 3 == 0:
        for category in gt["categories"]:
            category.pop("keypoints", None)
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    assert _typed_keypoint_gt(path.read_bytes(), str(path)) is not None
    _same_columns(read_coco_gt(path, iou_type="keypoints"),
                  read_coco_gt(gt, iou_type="keypoints"))


@pytest.mark.parametrize("case", ["no-keypoints", "no-num", "float-num", "bool", "short",
                                  "empty", "huge-id", "string-names", "no-bbox"])
def test_typed_ground_truth_reader_words_errors_like_the_general_reader(case, tmp_path):
    import json

    from deteval.io.coco import read_coco_gt

    gt, _ = make_keypoints_dataset(7)
    ann = gt["annotations"][1]
    if case == "no-keypoints":
        del ann["keypoints"]
    elif case == "no-num":
        del ann["num_keypoints"]
    elif case == "float-num":
        ann["num_keypoints"] = 2.0
    elif case == "bool":
        ann["keypoints"][1] = False
    elif case == "short":
        ann["keypoints"] = ann["keypoints"][:-3]
    elif case == "empty":
        ann["keypoints"] = []
    elif case == "huge-id":
        ann["id"] = 2**64 - 1
    elif case == "string-names":
        gt["categories"][0]["keypoints"] = [1, 2]
    else:
        del ann["bbox"]
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    outcomes = []
    for source in (path, gt):
        try:
            dataset = read_coco_gt(source, iou_type="keypoints")
            outcomes.append((dataset.gt.keypoints.tolist(), dataset.gt.ids.tolist()))
        except FormatError as error:
            outcomes.append((error.message, error.record))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("case", ["empty-list", "mixed-boxes", "bool", "unknown-image",
                                  "wrong-length", "string", "huge-id", "empty-bbox"])
def test_typed_file_reader_words_errors_like_the_general_reader(case, tmp_path):
    """Whatever the typed decoder cannot take, the general path reads: the file gives the
    same detections or the same error (naming the record) as the list."""
    import json

    from deteval.io.coco import read_coco_gt, read_coco_results

    gt, results = make_keypoints_dataset(5, bbox_mode="none")
    results = results[:4]
    if case == "empty-list":
        results[1]["keypoints"] = []
    elif case == "mixed-boxes":
        results[0]["bbox"] = [1.0, 2.0, 3.0, 4.0]
    elif case == "bool":
        results[2]["keypoints"][4] = True
    elif case == "unknown-image":
        results[3]["image_id"] = 10**6
    elif case == "wrong-length":
        results[1]["keypoints"] = results[1]["keypoints"][:-3]
    elif case == "string":
        results[2]["score"] = "0.5"
    elif case == "huge-id":
        results[1]["category_id"] = 2**64 - 1
    else:
        results[0]["bbox"] = []
    dataset = read_coco_gt(gt, iou_type="keypoints")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    outcomes = []
    for source in (path, results):
        try:
            detections = read_coco_results(source, dataset, iou_type="keypoints")
            outcomes.append((detections.keypoints.tolist(), detections.area.tolist()))
        except FormatError as error:
            outcomes.append((error.message, error.record))
    assert outcomes[0] == outcomes[1]
    if case not in ("empty-bbox", "huge-id"):
        assert isinstance(outcomes[0][0], str), outcomes[0]     # an error


# ---------------------------------------------------------------------------------------------
# Coverage: typed readers equal the general readers on unusual input
# ---------------------------------------------------------------------------------------------


def _ann(gt):
    return gt["annotations"][1]


GT_MUTATIONS = {
    "name-missing": lambda g: g["categories"][0].pop("name"),
    "area-missing": lambda g: _ann(g).pop("area"),
    "area-minus-zero": lambda g: _ann(g).__setitem__("area", -0.0),
    "area-1e308": lambda g: _ann(g).__setitem__("area", 1e308),
    "iscrowd-true": lambda g: _ann(g).__setitem__("iscrowd", True),
    "iscrowd-false": lambda g: _ann(g).__setitem__("iscrowd", False),
    "iscrowd-float": lambda g: _ann(g).__setitem__("iscrowd", 1.0),
    "iscrowd-2": lambda g: _ann(g).__setitem__("iscrowd", 2),
    "iscrowd-2**63": lambda g: _ann(g).__setitem__("iscrowd", 2**63),
    "ignore-huge": lambda g: _ann(g).__setitem__("ignore", 2**64 + 5),
    "num-0": lambda g: _ann(g).__setitem__("num_keypoints", 0),
    "num-negative": lambda g: _ann(g).__setitem__("num_keypoints", -1),
    "num-2**63": lambda g: _ann(g).__setitem__("num_keypoints", 2**63),
    "num-true": lambda g: _ann(g).__setitem__("num_keypoints", True),
    "num-null": lambda g: _ann(g).__setitem__("num_keypoints", None),
    "kp-2**53+1": lambda g: _ann(g)["keypoints"].__setitem__(0, 2**53 + 1),
    "kp-2**64+1": lambda g: _ann(g)["keypoints"].__setitem__(0, 2**64 + 1),
    "kp-1e308": lambda g: _ann(g)["keypoints"].__setitem__(0, 1e308),
    "kp-minus-zero": lambda g: _ann(g)["keypoints"].__setitem__(0, -0.0),
    "kp-null": lambda g: _ann(g)["keypoints"].__setitem__(0, None),
    "kp-nested": lambda g: _ann(g).__setitem__("keypoints", [_ann(g)["keypoints"]]),
    "kp-null-list": lambda g: _ann(g).__setitem__("keypoints", None),
    "kp-other-k": lambda g: _ann(g).__setitem__("keypoints", _ann(g)["keypoints"][:15]),
    "cat-kp-empty": lambda g: g["categories"][0].__setitem__("keypoints", []),
    "cat-kp-null": lambda g: g["categories"][0].__setitem__("keypoints", None),
    "cat-kp-missing": lambda g: g["categories"][0].pop("keypoints", None),
    "cat-kp-string": lambda g: g["categories"][0].__setitem__("keypoints", "nose"),
    "cat-kp-5": lambda g: g["categories"][0].__setitem__("keypoints", list("abcde")),
    "bbox-null": lambda g: _ann(g).__setitem__("bbox", None),
    "bbox-empty": lambda g: _ann(g).__setitem__("bbox", []),
    "bbox-overflow": lambda g: _ann(g).__setitem__("bbox", [1e308, 0, 1e308, 1]),
    "bbox-big-int": lambda g: _ann(g).__setitem__("bbox", [10**30, 0, 1, 1]),
    "bbox-negative": lambda g: _ann(g).__setitem__("bbox", [1, 0, -1, 1]),
    "width-null": lambda g: g["images"][0].__setitem__("width", None),
    "image-id-float": lambda g: g["images"][0].__setitem__("id", float(g["images"][0]["id"])),
    "ann-id-0": lambda g: _ann(g).__setitem__("id", 0),
    "ann-id-dup": lambda g: _ann(g).__setitem__("id", g["annotations"][0]["id"]),
    "unknown-category": lambda g: _ann(g).__setitem__("category_id", 999),
    "unknown-image": lambda g: _ann(g).__setitem__("image_id", 99999),
    "no-annotations": lambda g: g.__setitem__("annotations", []),
    "extra-fields": lambda g: _ann(g).__setitem__("foo", [1, {"x": None}]),
    "segmentation": lambda g: _ann(g).__setitem__("segmentation", [[1, 2, 3, 4, 5, 6]]),
}


@pytest.mark.parametrize("case", list(GT_MUTATIONS))
def test_keypoint_gt_file_equals_dict(case, tmp_path):
    gt, _ = make_keypoints_dataset(7)
    GT_MUTATIONS[case](gt)
    from_file, from_dict = gt_outcomes(gt, tmp_path)
    assert from_file == from_dict


def _results(r, i=1):
    return r[i]


DT_MUTATIONS = {
    "bbox-null-first": lambda r: r[0].__setitem__("bbox", None),
    "bbox-null-later": lambda r: r[2].__setitem__("bbox", None),
    "bbox-all": lambda r: [x.__setitem__("bbox", [1, 2, 3, 4]) for x in r],
    "bbox-all-later-null": lambda r: ([x.__setitem__("bbox", [1, 2, 3, 4]) for x in r],
                                      r[3].__setitem__("bbox", None)),
    "bbox-later-only": lambda r: r[3].__setitem__("bbox", [1, 2, 3, 4]),
    "bbox-later-negative": lambda r: r[3].__setitem__("bbox", [1, 2, -3, 4]),
    "bbox-area-overflow": lambda r: [x.__setitem__("bbox", [1, 2, 1e308, 1e308]) for x in r],
    "bbox-corner-overflow": lambda r: [x.__setitem__("bbox", [1e308, 2, 1e308, 1]) for x in r],
    "score-int": lambda r: _results(r).__setitem__("score", 1),
    "score-huge-int": lambda r: _results(r).__setitem__("score", 2**64 + 1),
    "score-minus-zero": lambda r: _results(r).__setitem__("score", -0.0),
    "score-bool": lambda r: _results(r).__setitem__("score", True),
    "image-id-float": lambda r: _results(r).__setitem__("image_id",
                                                        float(_results(r)["image_id"])),
    "unknown-category": lambda r: _results(r).__setitem__("category_id", 12345),
    "unknown-category-other-k": lambda r: (
        _results(r).__setitem__("category_id", 12345),
        _results(r).__setitem__("keypoints", _results(r)["keypoints"][:6])),
    "category-int64-min": lambda r: _results(r).__setitem__("category_id", -2**63),
    "category-int64-max": lambda r: _results(r).__setitem__("category_id", 2**63 - 1),
    "kp-extent-overflow": lambda r: (_results(r)["keypoints"].__setitem__(0, 1e308),
                                     _results(r)["keypoints"].__setitem__(3, -1e308)),
    "kp-huge-int": lambda r: _results(r)["keypoints"].__setitem__(0, 2**64 + 3),
    "kp-all-minus-zero": lambda r: _results(r).__setitem__(
        "keypoints", [-0.0] * len(_results(r)["keypoints"])),
    "kp-missing": lambda r: _results(r).pop("keypoints"),
    "kp-wrong-k": lambda r: _results(r).__setitem__("keypoints",
                                                    _results(r)["keypoints"] + [1, 2, 3]),
    "extra-fields": lambda r: _results(r).__setitem__("id", "abc"),
}


@pytest.mark.parametrize("case", list(DT_MUTATIONS))
def test_keypoint_results_file_equals_list(case, tmp_path):
    gt, results = make_keypoints_dataset(5, bbox_mode="none", other_category=True)
    dataset = read_coco_gt(gt, iou_type="keypoints")
    results = results[:6]
    DT_MUTATIONS[case](results)
    from_file, from_list = dt_outcomes(results, dataset, tmp_path)
    assert from_file == from_list


def test_duplicate_keys_read_alike(tmp_path):
    """msgspec and orjson both keep the last of duplicate keys."""
    gt, results = make_keypoints_dataset(5, bbox_mode="none")
    dataset = read_coco_gt(gt, iou_type="keypoints")
    text = json.dumps(results[:4])
    for patched in (text.replace('"score"', '"keypoints": [1, 2, 3], "score"', 1),
                    text.replace('"image_id"', '"keypoints": [1, 2, 3], "image_id"', 1)):
        path = tmp_path / "results.json"
        path.write_text(patched)
        as_list = json.loads(patched)
        assert (outcome(functools.partial(read_coco_results, path, dataset,
                                           iou_type="keypoints"))
                == outcome(functools.partial(read_coco_results, as_list, dataset,
                                              iou_type="keypoints")))


# ---------------------------------------------------------------------------------------------
# Coverage: index_in and owned columns
# ---------------------------------------------------------------------------------------------


def _naive_index(values, ids):
    first: dict = {}
    for i, v in enumerate(ids.tolist()):
        first.setdefault(v, i)
    return np.array([first.get(int(v), -1) for v in np.asarray(values).tolist()],
                    dtype=np.int64)


def test_index_in_matches_first_occurrence_everywhere():
    info = np.iinfo(np.int64)
    rng = np.random.default_rng(0)
    for trial in range(600):
        n = int(rng.integers(0, 30))
        base = [0, -5, info.min, 2**40, info.max - 60][trial % 5]
        ids = (base + rng.integers(0, 60, n)).astype(np.int64)
        values = np.concatenate([
            ids[rng.integers(0, n, int(rng.integers(0, 30)))] if n else np.zeros(0, np.int64),
            rng.integers(info.min, info.max, 3, dtype=np.int64, endpoint=True),
            np.array([info.min, info.max, -1, 0, base], dtype=np.int64)])
        got = index_in(values, ids)
        assert got.dtype == np.int64
        assert np.array_equal(got, _naive_index(values, ids)), (ids, values)
    assert index_in(np.zeros(0, np.int64), np.array([1, 2])).tolist() == []
    assert index_in([3], np.zeros(0, np.int64)).tolist() == [-1]
    assert index_in([7, 3, 9, 2**40], np.array([3, 5, 7], dtype=np.int32)).tolist() == \
        [2, 0, -1, -1]
    assert index_in([7, 3, 9, -1], np.array([3, 5, 7], dtype=np.uint64)).tolist() == \
        [2, 0, -1, -1]


def test_reader_columns_read_only_and_unshared(tmp_path):
    gt, results = make_keypoints_dataset(5, bbox_mode="all")
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(results))
    dataset = read_coco_gt(gt_path, iou_type="keypoints")
    array = np.array([[r["image_id"], *r["bbox"], r["score"], r["category_id"]]
                      for r in results], dtype=np.float64)
    before = array.copy()
    objects = [dataset, read_coco_gt(gt, iou_type="keypoints"), read_coco_gt(gt_path),
               read_coco_results(dt_path, dataset), read_coco_results(results, dataset),
               read_coco_results(dt_path, dataset, iou_type="keypoints"),
               read_coco_results(results, dataset, iou_type="keypoints"),
               read_coco_results(array, dataset)]

    def arrays(obj, prefix=""):
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if isinstance(v, np.ndarray) and v.dtype != object:
                yield prefix + f.name, v
            elif dataclasses.is_dataclass(v):
                yield from arrays(v, prefix + f.name + ".")

    for obj in objects:
        columns = list(arrays(obj))
        for name, v in columns:
            assert not v.flags.writeable, name
            assert not np.shares_memory(v, array), name
        for (a, u), (b, v) in itertools.combinations(columns, 2):
            assert not np.shares_memory(u, v), (a, b)
    assert np.array_equal(array, before)
