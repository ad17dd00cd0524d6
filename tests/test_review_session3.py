"""Review of c5a4afb..ab6f0a0 (keypoint OKS in chunks, typed keypoint readers, _Int64,
index_in lookup table, owned() columns): differential and adversarial tests.

Tests marked "Was wrong" reproduce defects the review found, since fixed. The two strict
xfails are known gaps left open: OKS of coordinates beyond ~1e8 pixels given as JSON
integers (pycocotools then computes in int64). The other tests add coverage of what was
checked and found correct.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json

import numpy as np
import pytest
from cocogen import assert_parity, oks_pairs, run_pycocotools
from maskgen import make_keypoints_dataset

import deteval
import deteval.keypoints
from deteval.data import index_in
from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.keypoints import COCO_PERSON_SIGMAS, pair_oks

K = 17


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def _gt1(*annotations: dict, categories: list | None = None) -> dict:
    return {
        "images": [{"id": 1, "width": 200, "height": 200, "file_name": "1.jpg"}],
        "categories": categories or [{"id": 1, "name": "person"}],
        "annotations": [{"id": i + 1, "image_id": 1, "category_id": 1, "iscrowd": 0, **a}
                        for i, a in enumerate(annotations)],
    }


_compute_oks = oks_pairs


def _outcome(read):
    try:
        value = read()
    except FormatError as error:
        return ("error", error.message, error.record)
    return ("ok", _flatten(value))


def _flatten(obj, prefix: str = "") -> dict:
    out = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, np.ndarray):
            out[prefix + f.name] = (v.dtype.str, v.shape,
                                    repr(v.tolist()) if v.dtype == object else v.tobytes())
        elif dataclasses.is_dataclass(v):
            out.update(_flatten(v, prefix + f.name + "."))
        elif f.name != "source":
            out[prefix + f.name] = repr(v)
    return out


def _gt_outcomes(gt: dict, tmp_path):
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    return (_outcome(lambda: read_coco_gt(path, iou_type="keypoints")),
            _outcome(lambda: read_coco_gt(gt, iou_type="keypoints")))


def _dt_outcomes(results: list, dataset, tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    return (_outcome(lambda: read_coco_results(path, dataset, iou_type="keypoints")),
            _outcome(lambda: read_coco_results(results, dataset, iou_type="keypoints")))


# ---------------------------------------------------------------------------------------------
# Defects (fixed, and two known gaps as strict xfails)
# ---------------------------------------------------------------------------------------------


def test_pair_oks_work_does_not_scale_with_unpaired_rows():
    """Was wrong (fixed): keypoints.py _pair_oks (c5a4afb) builds the (rows, K) coordinate
    planes and visibility of EVERY detection and ground truth on each call;
    protocols/coco.py calls pair_oks once per category per matching chunk, so the cost is
    O(categories x (n_dt + n_gt) x K) instead of O(pairs): 2 pairs against 100k detections
    allocate ~45 MB (old code ~1 MB); end to end, 200 categories / 300k results evaluate
    4.3x slower than before c5a4afb"""
    import tracemalloc

    dt_kp = np.zeros((100_000, K, 3))
    gt_kp = np.ones((50_000, K, 3))
    box = np.ones((50_000, 4))
    area = np.ones(50_000)
    tracemalloc.start()
    try:
        pair_oks(dt_kp, gt_kp, box, area, np.array([0, 1]), np.array([0, 1]),
                 sigmas=COCO_PERSON_SIGMAS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8e6, f"{peak / 1e6:.1f} MB for 2 pairs"


@pytest.mark.xfail(strict=True, reason=(
    "Known gap, left open: OKS not bit-equal to computeOks when GT and result keypoints "
    "are all JSON integers: "
    "pycocotools' np.array(keypoints) is then int64 and dx**2 + dy**2 is summed exactly in "
    "int64 before one rounding, while keypoints.py squares and adds in float64 (two more "
    "roundings once dx**2 + dy**2 > 2**53, e.g. |dx| ~ 1e8 with area ~ 1e18)"))
def test_oks_integer_keypoints_large_distance_bit_for_bit():
    gt = _gt1({"keypoints": [0, 0, 2] * K, "num_keypoints": K, "bbox": [0, 0, 10, 10],
               "area": 10**18})
    results = [{"image_id": 1, "category_id": 1, "keypoints": [100000001, 3, 1] * K,
                "score": 0.9}]
    for mine, theirs in _compute_oks(gt, results).values():
        assert np.array_equal(mine, theirs), (mine, theirs)


@pytest.mark.xfail(strict=True, reason=(
    "Known gap, left open: OKS of a GT without visible keypoints whose bbox holds "
    "integers beyond 2**53: "
    "pycocotools computes x0 = bb[0] - bb[2], x1 = bb[0] + bb[2] * 2 in exact Python int "
    "arithmetic, keypoints.py in float64 after rounding each operand (bounds off by 1-2, "
    "OKS 3.9e-11 vs 1.4e-39)"))
def test_oks_hidden_gt_with_huge_integer_box_bit_for_bit():
    gt = _gt1({"keypoints": [0, 0, 0] * K, "num_keypoints": 0,
               "bbox": [2**53 + 1, 2**53 + 1, 2, 2], "area": 1.0})
    results = [{"image_id": 1, "category_id": 1, "keypoints": [2.0**53 - 3, 2.0**53 - 3, 1] * K,
                "score": 0.9}]
    for mine, theirs in _compute_oks(gt, results).values():
        assert np.array_equal(mine, theirs), (mine, theirs)


def test_keypoint_results_with_rle_segmentation_parity(tmp_path):
    """Was wrong (fixed): io/coco.py _results_with_shapes/_typed_keypoint_results: loadRes
    takes the segm branch when the first keypoint result (without bbox) carries
    'segmentation' (area = mask area, bbox = mask box); deteval always uses the keypoints'
    extent, so area-range stats (APm) differ from pycocotools"""
    from pycocotools import mask as mask_utils

    gt, results = make_keypoints_dataset(3, bbox_mode="none")
    images = {image["id"]: image for image in gt["images"]}
    for result in results:
        image = images[result["image_id"]]
        mask = np.zeros((image["height"], image["width"]), np.uint8, order="F")
        mask[:2, :2] = 1
        rle = mask_utils.encode(mask)
        result["segmentation"] = {"size": rle["size"], "counts": rle["counts"].decode()}
    expected = run_pycocotools(gt, results, iou_type="keypoints")
    assert_parity(deteval.evaluate_coco(gt, results, iou_type="keypoints"), expected)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    assert_parity(deteval.evaluate_coco(gt, path, iou_type="keypoints"), expected)


def test_category_name_null_same_from_file_and_dict(tmp_path):
    """Was wrong (fixed): io/coco.py _columns_of_typed: a category with 'name': null is
    named str(id) by the typed decoders (keypoints GT since 5b46c17, and the bbox instances
    decoder), 'None' by the general path (str(c.get('name', c['id']))): file and dict give
    different Categories.names"""
    gt, _ = make_keypoints_dataset(7)
    gt["categories"][0]["name"] = None
    from_file, from_dict = _gt_outcomes(gt, tmp_path)
    assert from_file == from_dict


@pytest.mark.parametrize("side", ["gt", "results"])
def test_huge_python_int_keypoint_is_a_format_error(side):
    """Was wrong (fixed): io/_shapes.py keypoint_array fast path: a Python int beyond
    float64 (10**400) in 'keypoints' of a GT dict or results list raises a bare
    OverflowError from np.array, not a FormatError naming the record"""
    gt, results = make_keypoints_dataset(7, bbox_mode="none")
    if side == "gt":
        gt["annotations"][1]["keypoints"][0] = 10**400
        with pytest.raises(FormatError, match=r"annotations\[1\].*finite"):
            read_coco_gt(gt, iou_type="keypoints")
    else:
        dataset = read_coco_gt(gt, iou_type="keypoints")
        results[1]["keypoints"][0] = 10**400
        with pytest.raises(FormatError, match=r"results\[1\].*finite"):
            read_coco_results(results, dataset, iou_type="keypoints")


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
    from_file, from_dict = _gt_outcomes(gt, tmp_path)
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
    from_file, from_list = _dt_outcomes(results, dataset, tmp_path)
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
        assert (_outcome(functools.partial(read_coco_results, path, dataset,
                                           iou_type="keypoints"))
                == _outcome(functools.partial(read_coco_results, as_list, dataset,
                                              iou_type="keypoints")))


# ---------------------------------------------------------------------------------------------
# Coverage: OKS equal to pycocotools' formula
# ---------------------------------------------------------------------------------------------


def _reference_oks(d, g, bb, area, sigmas):
    """pycocotools' computeOks body for one pair (float inputs)."""
    variances = (sigmas * 2) ** 2
    k = len(sigmas)
    xg, yg, vg = g[0::3], g[1::3], g[2::3]
    k1 = np.count_nonzero(vg > 0)
    x0, x1 = bb[0] - bb[2], bb[0] + bb[2] * 2
    y0, y1 = bb[1] - bb[3], bb[1] + bb[3] * 2
    xd, yd = d[0::3], d[1::3]
    if k1 > 0:
        dx, dy = xd - xg, yd - yg
    else:
        z = np.zeros(k)
        dx = np.max((z, x0 - xd), axis=0) + np.max((z, xd - x1), axis=0)
        dy = np.max((z, y0 - yd), axis=0) + np.max((z, yd - y1), axis=0)
    e = (dx ** 2 + dy ** 2) / variances / (area + np.spacing(1)) / 2
    if k1 > 0:
        e = e[vg > 0]
    return np.sum(np.exp(-e)) / e.shape[0]


@pytest.mark.parametrize("chunk", [1, 3, 8192])
def test_pair_oks_bit_for_bit_any_k_and_chunk(chunk, monkeypatch):
    """K across numpy's pairwise-sum block sizes (8, 128), hidden GT, partial visibility,
    shuffled pairs spanning chunk boundaries."""
    monkeypatch.setattr(deteval.keypoints, "_CHUNK_PAIRS", chunk)
    rng = np.random.default_rng(chunk)
    for k in (1, 7, 8, 9, 17, 127, 128, 129, 300):
        ng, nd = 4, 5
        sigmas = rng.uniform(0.01, 0.3, k)
        gt_kp = rng.uniform(0, 100, (ng, k, 3))
        gt_kp[:, :, 2] = rng.choice([0, 0, 1, 2], (ng, k))
        gt_kp[0, :, 2] = 0
        dt_kp = rng.uniform(-50, 150, (nd, k, 3))
        box = rng.uniform(0, 60, (ng, 4))
        area = rng.uniform(1, 3000, ng)
        pair_dt = np.repeat(np.arange(nd), ng)
        pair_gt = np.tile(np.arange(ng), nd)
        order = rng.permutation(len(pair_dt))
        pair_dt, pair_gt = pair_dt[order], pair_gt[order]
        values = pair_oks(dt_kp, gt_kp, box, area, pair_dt, pair_gt, sigmas=sigmas)
        expected = [_reference_oks(dt_kp[d].ravel(), gt_kp[g].ravel(), box[g].tolist(),
                                   float(area[g]), sigmas) for d, g in zip(pair_dt, pair_gt)]
        assert np.array_equal(values, expected), k


@pytest.mark.parametrize("seed", [2, 9])
def test_oks_equal_compute_oks_custom_cases(seed, monkeypatch):
    """Crowds, zero and tiny areas, float hidden-GT boxes, many results: small chunks."""
    monkeypatch.setattr(deteval.keypoints, "_CHUNK_PAIRS", 2)
    gt, results = make_keypoints_dataset(seed, n_categories=1, p_many=0.5, p_crowd=0.5)
    gt["annotations"][0]["area"] = 0
    pairs = _compute_oks(gt, results)
    assert pairs
    for mine, theirs in pairs.values():
        assert np.array_equal(mine, theirs)


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
