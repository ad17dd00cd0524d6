"""Pair IoU and the shape readers on odd geometries (review of PairIoU and the rotated-box fast
path): rotated boxes whose corners reach 1e150, far multi-part polygons, detections never
paired, and the fast path of rotated_boxes against the record walk.

Tests marked "Was wrong" reproduce defects the review found, since fixed: PairIoU checked
every polygon when it was made, and the readers let through shapes it refuses, so a
detection never paired aborted the evaluation with a bare ValueError."""

from __future__ import annotations

import numpy as np
import pytest
from geometryref import random_polygons, random_rboxes
from shapely.geometry import MultiPolygon, Polygon

import deteval
from deteval.errors import FormatError
from deteval.geometry import (
    PairIoU,
    pair_iou,
    polygons_from_coords,
    polygons_from_rboxes,
)
from deteval.io._shapes import rotated_boxes

# =============================================================================================
# Moved from test_review_pairiou.py:
#
# Review of 71be941 (PairIoU), 2baee5c (rbox fast path) and 761215b (keypoint results in
# loadRes's segm branch): differential and adversarial tests.
#
# Tests marked "Was wrong" reproduce defects the review found, since fixed: PairIoU checked
# every polygon when it was made, and the readers let through shapes it refuses (rotated boxes
# whose corners reach 1e150, multi-part polygons near 1e110 that GEOS unions into an invalid
# MultiPolygon), so a detection never paired (unknown category) aborted the evaluation with a
# bare ValueError (PairIoU now prepares only the polygons of its pairs, and rotated boxes with
# such corners are refused when read, naming the record); and keypoint results whose RLE has
# another size than its image were refused although pycocotools (and the keypoints protocol)
# never compares the masks. The other tests add coverage of what was checked and found
# correct.
# =============================================================================================


def _gt(annotations: list[dict], n_categories: int = 1) -> dict:
    return {"images": [{"id": 1, "width": 100, "height": 100}],
            "categories": [{"id": c, "name": str(c)} for c in range(1, n_categories + 1)],
            "annotations": annotations}


def _ann(i: int, category: int = 1, **shape) -> dict:
    return {"id": i, "image_id": 1, "category_id": category, "area": 100.0, "iscrowd": 0,
            **shape}


def test_unpaired_rbox_with_huge_corners_does_not_abort_the_evaluation():
    """Was wrong (fixed): geometry PairIoU.__init__ (_Prepared) checks every detection,
    paired or not: an rbox with cx, w < 1e150 passes the reader (_as_rboxes) but its
    corners reach 1.35e150, so a detection of a category not in the ground truth (never
    paired, dropped as pycocotools does; evaluated fine before 71be941) aborts
    evaluate_coco with a bare ValueError 'dt_polys[1] has coordinates of magnitude 1e+150'"""
    gt = _gt([_ann(1, rbox=[10, 10, 10, 10, 0])])
    results = [{"image_id": 1, "category_id": 1, "score": 0.9, "rbox": [10, 10, 10, 10, 0]},
               {"image_id": 1, "category_id": 7, "score": 0.5, "rbox": [9e149, 0, 9e149, 10, 0]}]
    try:
        stats = deteval.evaluate_coco(gt, results, iou_type="rotated").stats
    except FormatError as error:    # refused when read, naming the record: also fine
        assert "results[1]" in str(error)
    else:
        assert stats[0] > 0.99


def test_huge_gt_rbox_corners_are_a_format_error_naming_the_annotation():
    """Was wrong (fixed): geometry _Prepared / io/_shapes.py rotated_boxes: a GT rbox
    whose corners reach 1e150 is refused only by _Prepared, with a bare ValueError naming
    'gt_polys[1]', a row of the matcher's permuted order (use_categories=False sorts by
    category), not the file or the record annotations[0]"""
    gt = _gt([_ann(1, 2, rbox=[9e149, 10, 9e149, 10, 0]), _ann(2, 1, rbox=[10, 10, 10, 10, 0])],
             n_categories=2)
    results = [{"image_id": 1, "category_id": 1, "score": 0.9, "rbox": [10, 10, 10, 10, 0]}]
    with pytest.raises(FormatError, match=r"annotations\[0\]"):
        deteval.evaluate_coco(gt, results, iou_type="rotated", use_categories=False)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_unpaired_far_multipart_polygon_does_not_abort_the_evaluation():
    """Was wrong (fixed): geometry PairIoU.__init__ (_Prepared): two overlapping parts
    with coordinates ~1e110 (below the readers' 1e150 limit) are accepted by
    polygons_from_coords (invalid='raise'), whose union_all gives an invalid MultiPolygon;
    _Prepared refuses it ('not a valid polygon') even for a detection of an unknown
    category that is never paired, which evaluated fine before 71be941"""
    s = 1e110
    parts = [[7 * s, 3 * s, 3 * s, 2 * s, 3 * s, 9 * s], [5 * s, 0, 7 * s, 4 * s, 7 * s, 6 * s]]
    square = [[0, 0, 10, 0, 10, 10, 0, 10]]
    gt = _gt([_ann(1, segmentation=square, bbox=[0, 0, 10, 10])])
    results = [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": square},
               {"image_id": 1, "category_id": 5, "score": 0.5, "segmentation": parts}]
    try:
        stats = deteval.evaluate_coco(gt, results, iou_type="polygon").stats
    except FormatError as error:
        assert "results[1]" in str(error)
    else:
        assert stats[0] > 0.99


@pytest.mark.parametrize("seed", range(3))
def test_pair_iou_by_rows_on_odd_geometries_bit_for_bit(seed):
    """Empty, degenerate, holed, multi-part, repaired and far-away polygons, duplicates and
    crowd flags: PairIoU by rows equals pair_iou of the gathered pairs."""
    rng = np.random.default_rng(900 + seed)
    odd = np.empty(8, dtype=object)
    odd[:] = [Polygon(), Polygon([(0, 0), (5, 0), (10, 0)]),
              MultiPolygon([Polygon([(0, 0), (3, 0), (3, 3)]),
                            Polygon([(10, 10), (12, 10), (12, 12)])]),
              polygons_from_coords([[[0, 0, 4, 0, 4, 4, 0, 4], [2, 2, 6, 2, 6, 6, 2, 6]]])[0],
              polygons_from_coords([[0, 0, 4, 4, 4, 0, 0, 4]], invalid="repair")[0],
              Polygon([(0, 0), (10, 0), (10, 10), (0, 10)], [[(2, 2), (4, 2), (4, 4), (2, 4)]]),
              polygons_from_rboxes([[5, 5, 0, 4, 30]])[0],
              polygons_from_rboxes([[1e9, 1e9, 4, 3, 17]])[0]]
    boxes = random_rboxes(rng, 20)
    boxes[:, :2] += np.where(rng.random(20) < 0.3, 1e9, 0.0)[:, None]
    dt = np.concatenate([polygons_from_rboxes(boxes), random_polygons(rng, 10), odd])
    gt = np.concatenate([polygons_from_rboxes(random_rboxes(rng, 15)), random_polygons(rng, 5),
                         odd])
    d = rng.integers(0, len(dt), 1500)
    g = rng.integers(0, len(gt), 1500)
    crowd = rng.random(1500) < 0.3
    iou = PairIoU(dt, gt)
    assert np.array_equal(iou(d, g, crowd), pair_iou(dt[d], gt[g], crowd))
    assert np.array_equal(iou(d, g), pair_iou(dt[d], gt[g]))
    with pytest.raises(ValueError, match="1-D and of one length"):
        iou(d, g[:-1])


# ---------------------------------------------------------------------------------------------
# 2baee5c: rotated_boxes fast path
# ---------------------------------------------------------------------------------------------


def test_rbox_fast_path_equals_the_record_walk():
    """Lists take the fast path, tuples the walk: the same float64 bits, big ints included."""
    rng = np.random.default_rng(5)
    values = [[float(v) for v in row] for row in random_rboxes(rng, 50)]
    values += [[2**63 + 1, 2**64 + 3, 2**53 + 1, 2**70 + 1, -(2**63) - 1], [10**308, 0, 1, 1, 0],
               [1, 2, 3, 4, 5], [0, 0, -0.0, 1, 0]]
    labels = [f"results[{i}]" for i in range(len(values))]
    fast = rotated_boxes([{"rbox": v} for v in values], labels, "r.json")
    walk = rotated_boxes([{"rbox": tuple(v)} for v in values], labels, "r.json")
    assert fast.dtype == np.float64 and fast.shape == (len(values), 5)
    assert np.array_equal(fast.view(np.int64), walk.view(np.int64))
    assert rotated_boxes([], [], "r.json").shape == (0, 5)


@pytest.mark.parametrize("bad, match", [
    (10**400, "finite"), (float("nan"), "finite"), (float("inf"), "finite"),
    (True, "5 numbers"), ("1", "5 numbers"), ([1], "5 numbers")])
def test_rbox_fast_path_falls_back_to_the_walk_naming_the_record(bad, match):
    records = [{"rbox": [1, 2, 3, 4, 5]}, {"rbox": [1, 2, bad, 4, 5]}]
    with pytest.raises(FormatError, match=rf"r\.json: results\[1\]: .*{match}"):
        rotated_boxes(records, ["results[0]", "results[1]"], "r.json")
