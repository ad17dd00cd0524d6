"""Tests of deteval.geometry: rotated-box corners, polygon construction and validation, and
polygon IoU against scalar shapely loops, rasterised estimates and the COCO box formula."""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction

import numpy as np
import pytest
import shapely
from cocogen import assert_parity, run_pycocotools
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from maskgen import make_keypoints_dataset
from shapely.geometry import MultiPolygon, Polygon

import deteval
from deteval.errors import FormatError
from deteval.geometry import (
    PairIoU,
    _convex_quad_intersection_area,
    _strictly_convex,
    iou_matrix,
    pair_iou,
    polygon_area,
    polygon_bounds,
    polygons_from_coords,
    polygons_from_rboxes,
    rotated_box_corners,
)
from deteval.io._shapes import rotated_boxes
from deteval.iou import coco_box_iou, coco_pair_iou

# ---------------------------------------------------------------------- references


def reference_iou(p: Polygon, q: Polygon, crowd: bool = False) -> float:
    """The literal definition, one pair at a time with shapely's scalar API."""
    if p.area == 0 or q.area == 0:
        return 0.0
    inter = p.intersection(q).area
    union = p.area if crowd else p.area + q.area - inter
    return inter / union if union > 0 else 0.0


def reference_matrix(a, b, crowd=None) -> np.ndarray:
    crowd = np.zeros(len(b), dtype=bool) if crowd is None else crowd
    return np.array([[reference_iou(p, q, bool(c)) for q, c in zip(b, crowd)] for p in a],
                    dtype=np.float64).reshape(len(a), len(b))


def inside_rbox(x: np.ndarray, y: np.ndarray, rbox) -> np.ndarray:
    """Points inside a rotated box by projecting onto its own axes (the documented frame)."""
    cx, cy, w, h, angle = rbox
    a = math.radians(angle)
    dx, dy = x - cx, y - cy
    u = dx * math.cos(a) - dy * math.sin(a)  # inverse of x = cx + u cos + v sin, ...
    v = dx * math.sin(a) + dy * math.cos(a)
    return (np.abs(u) <= w / 2) & (np.abs(v) <= h / 2)


def raster_iou(p, q, samples: int = 800) -> float:
    """IoU of two rotated boxes estimated on a fine grid of points."""
    corners = rotated_box_corners([p, q]).reshape(-1, 2)
    (x0, y0), (x1, y1) = corners.min(axis=0), corners.max(axis=0)
    xs = x0 + (np.arange(samples) + 0.5) * (x1 - x0) / samples
    ys = y0 + (np.arange(samples) + 0.5) * (y1 - y0) / samples
    x, y = np.meshgrid(xs, ys)
    in_p, in_q = inside_rbox(x, y, p), inside_rbox(x, y, q)
    union = (in_p | in_q).sum()
    return float((in_p & in_q).sum() / union) if union else 0.0


def random_rboxes(rng, n: int) -> np.ndarray:
    angles = np.where(rng.random(n) < 0.2, rng.choice([0, 90, 180, -90, 45], n),
                      rng.uniform(-180, 180, n))
    return np.column_stack([rng.uniform(0, 40, (n, 2)), rng.uniform(0.5, 25, (n, 2)), angles])


def random_star(rng, k: int, centre, radius: float) -> list[float]:
    """A simple polygon: k points around a centre, one in each of k equal sectors."""
    angles = (np.arange(k) + rng.uniform(0.05, 0.95, k)) * 2 * np.pi / k
    radii = rng.uniform(0.2, 1.0, k) * radius
    x = centre[0] + radii * np.cos(angles)
    y = centre[1] + radii * np.sin(angles)
    return np.column_stack([x, y]).ravel().tolist()


def random_polygons(rng, n: int) -> np.ndarray:
    coords = [random_star(rng, int(rng.integers(3, 12)), rng.uniform(0, 40, 2),
                          rng.uniform(2, 20)) for _ in range(n)]
    return polygons_from_coords(coords)


# ---------------------------------------------------------------------- rotated boxes


def test_corners_follow_the_documented_convention():
    corners = rotated_box_corners([[10, 20, 4, 2, 0], [10, 20, 4, 2, 90], [10, 20, 4, 2, 30]])
    assert corners.shape == (3, 4, 2)
    # angle 0: top-left, top-right, bottom-right, bottom-left (y down)
    assert corners[0].tolist() == [[8, 19], [12, 19], [12, 21], [8, 21]]
    # 90 degrees counter-clockwise as seen on the image: the width axis points up (-y)
    assert corners[1].tolist() == [[9, 22], [9, 18], [11, 18], [11, 22]]
    a = math.radians(30)
    u_axis = (corners[2, 1] - corners[2, 0]) / 4
    np.testing.assert_allclose(u_axis, [math.cos(a), -math.sin(a)], atol=1e-15)
    np.testing.assert_allclose(corners[2].mean(axis=0), [10, 20], atol=1e-13)


@pytest.mark.parametrize("angle", [0, 90, 180, 270, -90, 360, 450, -720, 1e6 * 360])
def test_quarter_turns_are_exact(angle):
    corners = rotated_box_corners([[0.5, 1.5, 3, 1, angle]])[0]
    quarter = round(angle / 90) % 4
    width, height = (3, 1) if quarter % 2 == 0 else (1, 3)
    xs, ys = sorted(set(corners[:, 0].tolist())), sorted(set(corners[:, 1].tolist()))
    assert xs == [0.5 - width / 2, 0.5 + width / 2]
    assert ys == [1.5 - height / 2, 1.5 + height / 2]


def test_radians_and_degrees_agree_and_pi_halves_are_exact():
    boxes = np.array([[3, 4, 5, 2, 0], [3, 4, 5, 2, 37], [3, 4, 5, 2, -120]], dtype=float)
    radians = boxes.copy()
    radians[:, 4] = np.deg2rad(boxes[:, 4])
    np.testing.assert_allclose(rotated_box_corners(radians, angle_unit="radians"),
                               rotated_box_corners(boxes), atol=1e-13)
    exact = rotated_box_corners([[0, 0, 2, 4, np.pi / 2], [0, 0, 2, 4, -np.pi]],
                                angle_unit="radians")
    assert set(exact.ravel().tolist()) <= {-2.0, -1.0, 1.0, 2.0}


def test_angles_are_reduced_modulo_a_full_turn():
    a = rotated_box_corners([[1, 2, 3, 4, 30], [1, 2, 3, 4, 390], [1, 2, 3, 4, -330]])
    assert np.array_equal(a[0], a[1]) and np.array_equal(a[0], a[2])


def test_rbox_polygons_have_the_box_area_and_do_not_touch_the_input():
    rboxes = np.array([[5, 5, 4, 3, 17], [0, 0, 0, 3, 40], [1, 1, 2, 2, 0]], dtype=float)
    rboxes.setflags(write=False)
    polys = polygons_from_rboxes(rboxes)
    assert polys.dtype == object and polys.shape == (3,)
    np.testing.assert_allclose(polygon_area(polys), [12, 0, 4], atol=1e-12)
    assert polygon_bounds(polys)[2].tolist() == [0, 0, 2, 2]
    assert polygons_from_rboxes(np.zeros((0, 5))).shape == (0,)


@pytest.mark.parametrize(("rboxes", "error", "match"), [
    pytest.param([[0, 0, -1, 2, 0]], FormatError, r"rbox 0: .*w >= 0", id="negative-width"),
    pytest.param([[0, 0, 1, 2, 0], [0, 0, 1, np.nan, 0]], FormatError,
                 r"rbox 1: .*finite", id="nan"),
    pytest.param([[0, 0, 1, 2, np.inf]], FormatError, r"finite", id="infinite-angle"),
    pytest.param([[0, 0, 1, 2]], ValueError, r"shape \(n, 5\)", id="four-columns"),
    pytest.param([["a", 0, 1, 2, 0]], TypeError, r"numbers", id="strings"),
])
def test_bad_rboxes(rboxes, error, match):
    with pytest.raises(error, match=match):
        polygons_from_rboxes(rboxes)


def test_rbox_errors_name_the_source_and_record():
    with pytest.raises(FormatError, match=r"^gt.json: annotations\[1\]: .*h >= 0"):
        polygons_from_rboxes([[0, 0, 1, 1, 0], [0, 0, 1, -1, 0]], source="gt.json",
                             records=["annotations[0]", "annotations[1]"])
    with pytest.raises(ValueError, match="angle_unit"):
        rotated_box_corners([[0, 0, 1, 1, 0]], angle_unit="grad")


# ---------------------------------------------------------------------- polygons from coordinates


def test_polygons_from_flat_and_multi_part_coordinates():
    polys = polygons_from_coords([
        [0, 0, 4, 0, 4, 2, 0, 2],                      # a DOTA-style quadrilateral
        [[0, 0, 2, 0, 2, 2, 0, 2], [1, 1, 3, 1, 3, 3, 1, 3]],  # overlapping parts: union
        [[0, 0, 1, 0, 0, 1], [5, 5, 6, 5, 5, 6]],      # parts apart: a MultiPolygon
        [[0, 0, 1, 0, 1, 1, 0, 1]],                    # one part: a plain Polygon
        (0, 0, 3, 0, 0, 3, 0, 0),                      # closing point repeated
    ])
    assert polygon_area(polys).tolist() == [8.0, 7.0, 1.0, 1.0, 4.5]
    assert [p.geom_type for p in polys] == ["Polygon", "Polygon", "MultiPolygon", "Polygon",
                                            "Polygon"]
    assert polygon_bounds(polys)[2].tolist() == [0, 0, 6, 6]


def test_polygons_from_a_2d_array_and_lists_agree():
    rng = np.random.default_rng(3)
    coords = rotated_box_corners(random_rboxes(rng, 50)).reshape(50, 8)
    coords.setflags(write=False)
    a = polygons_from_coords(coords)
    b = polygons_from_coords(coords.tolist())
    assert all(p.equals_exact(q, 0) for p, q in zip(a, b))
    assert polygons_from_coords([]).shape == (0,)
    assert polygons_from_coords(np.zeros((0, 8))).shape == (0,)


@pytest.mark.parametrize(("coords", "match"), [
    pytest.param([[0, 0, 1, 0, 1]], r"even number of coordinates .*got 5", id="odd"),
    pytest.param([[0, 0, 1, 0]], r"at least 3 points; got 2", id="two-points"),
    pytest.param([[0, 0, 1, 0, 0, 0]], r"at least 3 points; got 2", id="closed-two-points"),
    pytest.param([[]], r"at least 3 points; got 0", id="empty"),
    pytest.param([[0, 0, 1, 0, np.nan, 1]], r"finite; coordinate 4 is nan", id="nan"),
    pytest.param([[0, 0, 1, 0, 1, np.inf]], r"finite; coordinate 5 is inf", id="inf"),
    pytest.param([[0, 0, 1, 0, 1, "a"]], r"flat list of numbers", id="string-number"),
    pytest.param(["0 0 1 0 1 1"], r"got a string", id="string"),
    pytest.param([None], r"flat list of numbers", id="none"),
    pytest.param([[[0, 0, 1, 0, 0, 1], [1, 2]]], r"part 1 of the polygon must have at least 3",
                 id="short-part"),
    pytest.param([[[0, 0, 1, 0, 0, 1], [[1, 2]]]], r"part 1 of the polygon must be a flat",
                 id="nested-part"),
])
def test_coordinate_errors_name_the_record(coords, match):
    with pytest.raises(FormatError, match=match) as info:
        polygons_from_coords([[0, 0, 1, 0, 0, 1]] + coords, source="labels.txt",
                             records=["line 1", "line 7"])
    assert info.value.source == "labels.txt" and info.value.record == "line 7"
    assert str(info.value).startswith("labels.txt: line 7: ")


def test_default_record_label_and_source_per_object():
    with pytest.raises(FormatError, match=r"^object 1: .*even"):
        polygons_from_coords([[0, 0, 1, 0, 0, 1], [0, 0, 1]])
    with pytest.raises(FormatError, match=r"^b.txt: line 4: ") as info:
        polygons_from_coords([[0, 0, 1, 0, 0, 1], [0, 0, 1]], source=["a.txt", "b.txt"],
                             records=["line 2", "line 4"])
    assert info.value.source == "b.txt"
    with pytest.raises(ValueError, match="records must have one label per object"):
        polygons_from_coords([[0, 0, 1, 0, 0, 1]], records=["a", "b"])
    with pytest.raises(ValueError, match="invalid must be"):
        polygons_from_coords([[0, 0, 1, 0, 0, 1]], invalid="ignore")
    with pytest.raises(TypeError, match="coords must be a sequence"):
        polygons_from_coords(5)


BOWTIE = [0, 0, 2, 2, 2, 0, 0, 2]


def test_bowtie_raises_with_the_reason_and_the_way_out():
    with pytest.raises(FormatError) as info:
        polygons_from_coords([[0, 0, 1, 0, 0, 1], BOWTIE], source="gt.json",
                             records=["annotations[0]", "annotations[1]"])
    message = str(info.value)
    assert message.startswith("gt.json: annotations[1]: polygon is not valid")
    assert shapely.is_valid_reason(Polygon(np.reshape(BOWTIE, (4, 2)))) in message
    assert "invalid='repair'" in message


def test_repair_keeps_the_polygonal_part():
    repaired = polygons_from_coords([BOWTIE, [0, 0, 4, 0, 4, 4, 0, 4]], invalid="repair")
    assert polygon_area(repaired).tolist() == [2.0, 16.0]  # the two triangles of the bow-tie
    assert all(p.is_valid for p in repaired)
    assert polygon_bounds(repaired)[0].tolist() == [0, 0, 2, 2]
    # a bow-tie part inside a multi-part object is repaired too, then joined by union
    multi = polygons_from_coords([[BOWTIE, [10, 10, 11, 10, 11, 11]]], invalid="repair")
    assert polygon_area(multi).tolist() == [2.5]
    with pytest.raises(FormatError, match="part 0 of the polygon is not valid"):
        polygons_from_coords([[BOWTIE, [10, 10, 11, 10, 11, 11]]])


def test_repair_that_leaves_no_area_is_an_error():
    with pytest.raises(FormatError, match=r"object 0: .*no area once repaired"):
        polygons_from_coords([[0, 0, 1, 0, 1, 1, 1, 0]], invalid="repair")


def test_collinear_points_give_a_degenerate_polygon_of_zero_area():
    polys = polygons_from_coords([[0, 0, 1, 1, 2, 2], [0, 0, 0, 5, 0, 5, 0, 0],
                                  [[0, 0, 1, 1, 2, 2], [0, 0, 1, 0, 0, 1]]])
    assert polygon_area(polys).tolist() == [0.0, 0.0, 0.5]
    assert polygon_bounds(polys)[0].tolist() == [0, 0, 2, 2]
    square = polygons_from_coords([[-1, -1, 3, -1, 3, 3, -1, 3]])
    assert iou_matrix(polys, square).ravel().tolist() == [0.0, 0.0, 0.5 / 16]


# ---------------------------------------------------------------------- IoU against references


def test_pair_iou_matches_scalar_shapely_on_random_rotated_boxes():
    rng = np.random.default_rng(0)
    dt, gt = random_rboxes(rng, 600), random_rboxes(rng, 600)
    gt[:100] = dt[:100] + np.column_stack([rng.normal(0, 1, (100, 2)), np.zeros((100, 2)),
                                           rng.normal(0, 10, 100)])  # close pairs
    crowd = rng.random(600) < 0.25
    a, b = polygons_from_rboxes(dt), polygons_from_rboxes(gt)
    expected = [reference_iou(p, q, c) for p, q, c in zip(a, b, crowd)]
    got = pair_iou(a, b, crowd)
    assert got.dtype == np.float64 and got.shape == (600,)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert (got > 0).sum() > 150  # the test does look at overlapping pairs


def test_pair_iou_matches_scalar_shapely_on_random_polygons():
    rng = np.random.default_rng(1)
    a, b = random_polygons(rng, 300), random_polygons(rng, 300)
    b[::3] = polygons_from_rboxes(random_rboxes(rng, 100))  # polygon against rotated box
    crowd = rng.random(300) < 0.25
    expected = [reference_iou(p, q, c) for p, q, c in zip(a, b, crowd)]
    np.testing.assert_allclose(pair_iou(a, b, crowd), expected, rtol=0, atol=1e-9)
    assert (np.array(expected) > 0).sum() > 50


def test_iou_matrix_matches_the_loop_and_pair_iou_bit_for_bit():
    rng = np.random.default_rng(2)
    a = np.concatenate([polygons_from_rboxes(random_rboxes(rng, 25)), random_polygons(rng, 15)])
    b = np.concatenate([polygons_from_rboxes(random_rboxes(rng, 20)), random_polygons(rng, 10)])
    crowd = rng.random(len(b)) < 0.3
    matrix = iou_matrix(a, b, crowd)
    assert matrix.shape == (40, 30)
    np.testing.assert_allclose(matrix, reference_matrix(a, b, crowd), rtol=0, atol=1e-9)
    i, j = np.meshgrid(np.arange(40), np.arange(30), indexing="ij")
    pairs = pair_iou(a[i.ravel()], b[j.ravel()], crowd[j.ravel()])
    assert np.array_equal(matrix.ravel(), pairs)
    assert np.array_equal(iou_matrix(a, b), iou_matrix(b, a).T)  # symmetric, same bits
    assert iou_matrix(a[:0], b).shape == (0, 30) and iou_matrix(a, b[:0]).shape == (40, 0)
    assert pair_iou([], []).shape == (0,)


def test_rotated_boxes_agree_with_a_rasterised_estimate():
    rng = np.random.default_rng(4)
    dt = random_rboxes(rng, 12)
    gt = dt + np.column_stack([rng.normal(0, 2, (12, 2)), rng.normal(0, 2, (12, 2)).clip(-0.4),
                               rng.uniform(-40, 40, 12)])
    got = pair_iou(polygons_from_rboxes(dt), polygons_from_rboxes(gt))
    estimates = [raster_iou(p, q) for p, q in zip(dt, gt)]
    assert min(estimates) > 0.05  # overlapping pairs: a meaningful comparison
    np.testing.assert_allclose(got, estimates, atol=0.01)


SQ = [0, 0, 10, 10, 0]  # a 10x10 square at the origin as (cx, cy, w, h, angle)


@pytest.mark.parametrize(("p", "q", "iou"), [
    pytest.param(SQ, SQ, 1.0, id="identical"),
    pytest.param([0, 0, 10, 10, 33], [0, 0, 10, 10, 33], 1.0, id="identical-rotated"),
    pytest.param(SQ, [10, 0, 10, 10, 0], 0.0, id="touching-edge"),
    pytest.param(SQ, [10, 10, 10, 10, 0], 0.0, id="touching-corner"),
    pytest.param([0, 0, 10, 10, 45], [10 / math.sqrt(2) + 5, 0, 10, 10, 0], 0.0,
                 id="touching-rotated-corner"),
    pytest.param(SQ, [0, 0, 4, 5, 30], 0.2, id="nested"),
    pytest.param(SQ, [50, 50, 3, 3, 10], 0.0, id="disjoint"),
    pytest.param([0, 0, 0, 10, 0], [0, 0, 0, 10, 0], 0.0, id="degenerate-identical"),
    pytest.param(SQ, [0, 0, 0, 4, 20], 0.0, id="degenerate-inside"),
    pytest.param([0, 0, 0, 0, 0], SQ, 0.0, id="point"),
    pytest.param(SQ, [5, 0, 10, 10, 0], 1 / 3, id="half-shifted"),
    pytest.param(SQ, [0, 0, 10, 10, 90], 1.0, id="square-quarter-turn"),
    pytest.param(SQ, [0, 0, 10, 10, 45], 1 / math.sqrt(2), id="square-octagon"),
])
def test_hand_cases(p, q, iou):
    a, b = polygons_from_rboxes([p]), polygons_from_rboxes([q])
    assert pair_iou(a, b)[0] == pytest.approx(iou, abs=1e-12)
    assert pair_iou(b, a)[0] == pytest.approx(iou, abs=1e-12)
    assert iou_matrix(a, b)[0, 0] == pair_iou(a, b)[0]


def test_identical_polygons_give_exactly_one():
    rng = np.random.default_rng(5)
    polys = np.concatenate([random_polygons(rng, 50),
                            polygons_from_rboxes(random_rboxes(rng, 50))])
    copies = polygons_from_coords([shapely.get_coordinates(p).ravel().tolist() for p in polys])
    assert (pair_iou(polys, polys) == 1.0).all()
    assert (pair_iou(polys, copies) == 1.0).all()
    assert (pair_iou(polys, copies, np.ones(100, bool)) == 1.0).all()


def test_crowd_is_intersection_over_the_detection_area():
    dt = polygons_from_rboxes([[0, 0, 2, 2, 30], [0, 0, 2, 2, 30], [0, 0, 20, 20, 0]])
    crowd_region = polygons_from_rboxes([[0, 0, 10, 10, 0], [1, 0, 2, 2, 30],
                                         [0, 0, 2, 2, 0]])
    ioa = pair_iou(dt, crowd_region, np.ones(3, dtype=bool))
    assert ioa[0] == 1.0  # inside the crowd region
    assert ioa[1] == pytest.approx(reference_iou(dt[1], crowd_region[1], True), abs=1e-12)
    assert ioa[2] == pytest.approx(4 / 400, abs=1e-15)
    # the same pairs without crowd
    assert pair_iou(dt, crowd_region)[0] == pytest.approx(4 / 100, abs=1e-12)
    with pytest.raises(ValueError, match=r"gt_crowd must have shape \(3,\)"):
        pair_iou(dt, crowd_region, [True])
    with pytest.raises(ValueError, match="only booleans or 0/1"):
        pair_iou(dt, crowd_region, [0, 2, 1])
    with pytest.raises(ValueError, match=r"crowd must have shape \(3,\)"):
        iou_matrix(dt, crowd_region, [1, 0])


# ---------------------------------------------------------------------- bit-exact with COCO boxes


def _half_integer_boxes(rng, n):
    """xywh boxes with integer or half-integer numbers, including zero sizes."""
    xy = rng.integers(-20, 40, (n, 2)) / rng.choice([1, 2], (n, 2))
    wh = rng.integers(0, 30, (n, 2)) / rng.choice([1, 2], (n, 2))
    return np.column_stack([xy, wh]).astype(np.float64)


@pytest.mark.parametrize("angle", [0, 90, 180, 270, -90, 360])
def test_axis_aligned_rotated_boxes_are_bit_identical_to_coco(angle):
    rng = np.random.default_rng(angle % 997)
    dt, gt = _half_integer_boxes(rng, 3000), _half_integer_boxes(rng, 3000)
    gt[:1000] = dt[:1000] + rng.integers(-3, 4, (1000, 4)) / 2  # overlapping pairs
    gt[:, 2:] = np.abs(gt[:, 2:])
    crowd = rng.random(3000) < 0.3

    def as_rboxes(xywh):
        x, y, w, h = xywh.T
        swap = angle % 180 == 90
        return np.column_stack([x + w / 2, y + h / 2, h if swap else w, w if swap else h,
                                np.full(len(x), angle)])

    a, b = polygons_from_rboxes(as_rboxes(dt)), polygons_from_rboxes(as_rboxes(gt))
    expected = coco_pair_iou(dt, gt, crowd)
    assert (expected > 0).sum() > 500
    assert np.array_equal(pair_iou(a, b, crowd), expected)
    assert np.array_equal(iou_matrix(a[:60], b[:50], crowd[:50]),
                          coco_box_iou(dt[:60], gt[:50], crowd[:50]))


def test_box_polygons_from_coordinates_take_the_coco_formula():
    rng = np.random.default_rng(11)
    dt, gt = _half_integer_boxes(rng, 500), _half_integer_boxes(rng, 500)
    gt[:200] = dt[:200] + 0.5

    def coco_polygon(xywh):  # the box polygon pycocotools' loadRes writes, as one part
        x, y, w, h = xywh.T
        return [[[x1, y1, x1, y2, x2, y2, x2, y1]] for x1, y1, x2, y2 in
                zip(x, y, x + w, y + h)]

    a, b = polygons_from_coords(coco_polygon(dt)), polygons_from_coords(coco_polygon(gt))
    assert np.array_equal(pair_iou(a, b), coco_pair_iou(dt, gt, np.zeros(500, bool)))


def test_radian_quarter_turns_are_bit_identical_too():
    xywh = np.array([[0, 0, 10, 4], [3, 1, 6, 6]], dtype=float)
    rb = np.array([[5, 2, 4, 10, np.pi / 2], [6, 4, 6, 6, np.pi]])
    a = polygons_from_coords([[0, 0, 10, 0, 10, 4, 0, 4]] * 2)
    got = pair_iou(a, polygons_from_rboxes(rb, angle_unit="radians"))
    assert np.array_equal(got, coco_pair_iou(xywh[[0, 0]], xywh, [0, 0]))


# ---------------------------------------------------------------------- bad polygons in IoU


def test_iou_refuses_invalid_and_non_polygon_inputs():
    good = polygons_from_rboxes([[0, 0, 2, 2, 0]])
    bowtie = np.array([Polygon(np.reshape(BOWTIE, (4, 2)))], dtype=object)
    with pytest.raises(ValueError, match=r"gt_polys\[0\] is not a valid polygon "
                                         r"\(Self-intersection"):
        pair_iou(good, bowtie)
    with pytest.raises(ValueError, match=r"a\[0\] is not a valid polygon"):
        iou_matrix(bowtie, good)
    with pytest.raises(ValueError, match="not a valid polygon"), np.errstate(invalid="ignore"):
        pair_iou(np.array([Polygon([(0, 0), (np.nan, 0), (1, 1)])], dtype=object), good)
    with pytest.raises(TypeError, match=r"dt_polys\[0\] is LineString"):
        pair_iou([shapely.LineString([(0, 0), (1, 1)])], good)
    with pytest.raises(TypeError, match=r"must hold shapely polygons; dt_polys\[0\] is list"):
        pair_iou([[0, 0, 1, 1]], good)
    with pytest.raises(TypeError, match="not a single geometry"):
        pair_iou(good[0], good)
    with pytest.raises(ValueError, match="same length; got 1 and 2"):
        pair_iou(good, np.concatenate([good, good]))


def test_empty_polygons_have_no_overlap():
    empty = np.array([Polygon()], dtype=object)
    good = polygons_from_rboxes([[0, 0, 2, 2, 0]])
    assert pair_iou(empty, good).tolist() == [0.0]
    assert polygon_area(empty).tolist() == [0.0]
    assert np.isnan(polygon_bounds(empty)).all()


# ---------------------------------------------------------------------- properties

coordinate = st.floats(-100, 100, allow_nan=False)
size = st.one_of(st.just(0.0), st.floats(1, 100))
angle = st.one_of(st.sampled_from([0.0, 90.0, 180.0, -90.0, 45.0]), st.floats(-360, 360))
rbox = st.tuples(coordinate, coordinate, size, size, angle)


@st.composite
def star_polygon(draw):
    k = draw(st.integers(3, 9))
    cx, cy = draw(coordinate), draw(coordinate)
    slots = draw(st.lists(st.floats(0.05, 0.95), min_size=k, max_size=k))
    radii = draw(st.lists(st.floats(1, 60), min_size=k, max_size=k))
    angles = (np.arange(k) + np.array(slots)) * 2 * np.pi / k  # one point per sector: simple
    return np.column_stack([cx + np.array(radii) * np.cos(angles),
                            cy + np.array(radii) * np.sin(angles)]).ravel().tolist()


def shapes(draw_from):
    return st.one_of(rbox.map(lambda r: polygons_from_rboxes([r])[0]),
                     star_polygon().map(lambda c: polygons_from_coords([c])[0]))


def rotate(poly, degrees, origin):
    a = math.radians(degrees)
    c, s = math.cos(a), math.sin(a)
    ox, oy = origin

    def turn(xy):
        x, y = xy[:, 0] - ox, xy[:, 1] - oy
        return np.column_stack([ox + c * x + s * y, oy - s * x + c * y])

    return shapely.transform(poly, turn)


@settings(max_examples=150, deadline=None)
@given(p=shapes(None), q=shapes(None), turn=st.floats(-360, 360),
       origin=st.tuples(coordinate, coordinate), crowd=st.booleans())
def test_iou_properties(p, q, turn, origin, crowd):
    a, b = np.array([p], dtype=object), np.array([q], dtype=object)
    iou = pair_iou(a, b, [crowd])[0]
    assert 0.0 <= iou <= 1.0
    assert iou == pytest.approx(reference_iou(p, q, crowd), abs=1e-9)
    if not crowd:
        assert iou == pytest.approx(pair_iou(b, a)[0], abs=1e-12)
    turned = pair_iou(np.array([rotate(p, turn, origin)], dtype=object),
                      np.array([rotate(q, turn, origin)], dtype=object), [crowd])[0]
    assert turned == pytest.approx(iou, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(p=shapes(None))
def test_iou_with_itself_is_one(p):
    assume(p.area > 0)
    a = np.array([p], dtype=object)
    assert pair_iou(a, a)[0] == 1.0
    assert pair_iou(a, a, [True])[0] == 1.0
    assert iou_matrix(a, a)[0, 0] == 1.0


# ---------------------------------------------------------------------- convex quadrilaterals


def counter_clockwise(corners: np.ndarray) -> np.ndarray:
    x, y = corners[..., 0], corners[..., 1]
    signed = (x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y).sum(axis=1)
    return np.where((signed < 0)[:, None, None], corners[:, ::-1], corners)


def quad_families(rng, n: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Pairs of convex quadrilaterals (n, 4, 2) in the situations that stress clipping."""

    def boxes(cx, cy, w, h, a):
        return rotated_box_corners(np.column_stack([cx, cy, w, h, a]))

    def quads(cx, cy, radius):  # DOTA-like: one corner per quarter turn, either orientation
        turn = (np.arange(4) + rng.uniform(0.1, 0.9, (n, 4))) * np.pi / 2
        turn = turn + rng.uniform(0, 2 * np.pi, (n, 1))
        r = radius[:, None] * rng.uniform(0.5, 1.0, (n, 4))
        q = np.stack([cx[:, None] + r * np.cos(turn), cy[:, None] + r * np.sin(turn)], -1)
        return np.where(rng.random(n)[:, None, None] < 0.5, q, q[:, ::-1])

    cx, cy = rng.uniform(0, 100, n), rng.uniform(0, 100, n)
    w, h, a = rng.uniform(1, 40, n), rng.uniform(1, 40, n), rng.uniform(-180, 180, n)
    box = boxes(cx, cy, w, h, a)
    rad = np.deg2rad(a)
    ux, uy, vx, vy = np.cos(rad), -np.sin(rad), np.sin(rad), np.cos(rad)  # the box's axes
    gap = rng.choice([-1e-9, -1e-12, 0.0, 1e-12, 1e-9], n) * w
    along = rng.uniform(-0.8, 0.8, n) * h
    h2 = h * rng.uniform(0.3, 2.0, n)
    slide = rng.uniform(-0.7, 0.7, n) * w
    poke = rng.uniform(0.05, 0.3, n) * np.minimum(w, h)
    side = rng.uniform(2, 10, n)
    tip_x, tip_y = cx + (w / 2 - poke) * ux, cy + (w / 2 - poke) * uy
    f = rng.uniform(0.05, 0.5, n) * np.minimum(w, h)
    radius = rng.uniform(2, 30, n)
    out = {
        "near": (box, boxes(cx + rng.normal(0, 5, n), cy + rng.normal(0, 5, n),
                            w * rng.uniform(0.5, 1.5, n), h * rng.uniform(0.5, 1.5, n),
                            a + rng.normal(0, 20, n))),
        # side by side, a hair apart or overlapping
        "near-touching": (box, boxes(cx + (w + gap) * ux + along * vx,
                                     cy + (w + gap) * uy + along * vy, w, h, a)),
        # part of an edge in common, running the same way
        "shared-edge": (box, boxes(cx + slide * ux + (h2 - h) / 2 * vx,
                                   cy + slide * uy + (h2 - h) / 2 * vy, w, h2, a)),
        # a square turned 45 degrees with one corner inside the box
        "vertex-inside": (box, boxes(tip_x + side / math.sqrt(2) * ux,
                                     tip_y + side / math.sqrt(2) * uy, side, side, a + 45)),
        "nested": (box, boxes(cx + rng.uniform(-0.2, 0.2, n) * w,
                              cy + rng.uniform(-0.2, 0.2, n) * h, f, f, rng.uniform(-180, 180, n))),
        "identical": (box, box.copy()),
        "identical-reordered": (box, np.roll(box[:, ::-1], 2, axis=1)),
        "nearly-identical": (box, boxes(cx + 1e-3 * vx, cy + 1e-3 * vy, w, h, a)),
        "dota": (quads(cx, cy, radius), quads(cx + rng.normal(0, 8, n), cy + rng.normal(0, 8, n),
                                              radius * rng.uniform(0.5, 1.5, n))),
    }
    for name in ("near", "shared-edge", "vertex-inside", "dota"):
        p, q = out[name]
        out[name + "-tiny"] = (p * 1e-6, q * 1e-6)
        out[name + "-huge"] = (p * 1e6, q * 1e6)
    return out


def test_convex_quad_clipping_matches_shapely_intersection_areas():
    rng = np.random.default_rng(20)
    families = quad_families(rng, 400)
    checked = overlapping = 0
    for name, (p, q) in families.items():
        keep = _strictly_convex(p) & _strictly_convex(q)
        assert keep.mean() > 0.95, name
        p, q = p[keep], q[keep]
        pp, qq = shapely.polygons(p), shapely.polygons(q)
        expected = shapely.area(shapely.intersection(pp, qq))
        smaller = np.minimum(shapely.area(pp), shapely.area(qq))
        got = _convex_quad_intersection_area(counter_clockwise(p), counter_clockwise(q))
        # 1e-9 relative; slivers and touching pairs to 1e-12 of the smaller polygon
        np.testing.assert_array_less(np.abs(got - expected),
                                     1e-9 * expected + 1e-12 * smaller + 1e-300, err_msg=name)
        # the other way round, and with the roles of the two polygons swapped
        swapped = _convex_quad_intersection_area(counter_clockwise(q), counter_clockwise(p))
        np.testing.assert_array_less(np.abs(swapped - got),
                                     1e-9 * got + 1e-12 * smaller + 1e-300, err_msg=name)
        checked += len(p)
        overlapping += int((expected > 1e-9 * smaller).sum())
    assert checked > 6500 and overlapping > 5500


def exact_clip_area(p, q) -> Fraction:
    """Area of convex p clipped by counter-clockwise convex q, in exact rational numbers."""
    poly = [(Fraction(x), Fraction(y)) for x, y in p.tolist()]
    edges = [(Fraction(x), Fraction(y)) for x, y in q.tolist()]
    for k in range(len(edges)):
        (ax, ay), (bx, by) = edges[k], edges[(k + 1) % len(edges)]
        kept = []
        for i, (px, py) in enumerate(poly):
            nx, ny = poly[(i + 1) % len(poly)]
            s = (bx - ax) * (py - ay) - (by - ay) * (px - ax)
            s_next = (bx - ax) * (ny - ay) - (by - ay) * (nx - ax)
            if s >= 0:
                kept.append((px, py))
            if s * s_next < 0:
                t = s / (s - s_next)
                kept.append((px + t * (nx - px), py + t * (ny - py)))
        poly = kept
    pairs = zip(poly, poly[1:] + poly[:1])
    return abs(sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in pairs)) / 2


def test_convex_quad_clipping_far_from_the_origin_is_close_to_exact():
    # Small boxes at coordinates ~1e6: the inputs are only known to ulp(1e6) ~ 1e-10, and
    # GEOS's overlay (which rounds its intersection points) is itself ~1e-9 off there.
    rng = np.random.default_rng(21)
    families = quad_families(rng, 15)
    p = np.concatenate([families[k][0] for k in ("near", "vertex-inside", "dota")]) + 1e6
    q = np.concatenate([families[k][1] for k in ("near", "vertex-inside", "dota")]) + 1e6
    p, q = counter_clockwise(p), counter_clockwise(q)
    got = _convex_quad_intersection_area(p, q)
    exact = np.array([float(exact_clip_area(a, b)) for a, b in zip(p, q)])
    assert (exact > 0).sum() > 25
    np.testing.assert_allclose(got, exact, rtol=1e-9, atol=1e-15)
    geos = shapely.area(shapely.intersection(shapely.polygons(p), shapely.polygons(q)))
    smaller = np.minimum(shapely.area(shapely.polygons(p)), shapely.area(shapely.polygons(q)))
    np.testing.assert_array_less(np.abs(got - geos), 1e-8 * smaller)


@pytest.mark.parametrize("offset", [1e8, 1e9])
def test_pair_iou_of_rotated_boxes_far_from_the_origin(offset):
    """Boxes of a few pixels at coordinates ~1e9: the orientation of each quadrilateral must
    not come from a shoelace sum of raw coordinates (~1e18 per term, which cancels to noise
    and once turned the clipping inside out: IoU 0 for boxes that overlap by two thirds)."""
    rng = np.random.default_rng(23)
    n = 300
    a = np.column_stack([rng.integers(0, 20, (n, 2)), rng.integers(1, 10, (n, 2)),
                         rng.choice([0.0, 15, 30, 45, 90, 135, 7.5], n)]).astype(float)
    b = a.copy()
    b[:, :2] += rng.integers(-3, 4, (n, 2))
    a[:, :2] += offset
    b[:, :2] += offset
    pa, pb = polygons_from_rboxes(a), polygons_from_rboxes(b)
    got = pair_iou(pa, pb)
    # The same polygons moved back to the origin (exactly: the corners are within a factor
    # of 2 of the offset), where the literal definition is accurate.
    near = [reference_iou(p, q) for p, q in zip(shapely.transform(pa, lambda c: c - offset),
                                                  shapely.transform(pb, lambda c: c - offset))]
    assert (np.asarray(near) > 0.3).sum() > 50
    np.testing.assert_allclose(got, near, rtol=0, atol=1e-8)


def test_pair_iou_of_convex_quads_skips_geos_and_ignores_corner_order(monkeypatch):
    rng = np.random.default_rng(22)
    families = quad_families(rng, 200)
    p = np.concatenate([pair[0] for pair in families.values()])
    q = np.concatenate([pair[1] for pair in families.values()])
    family = np.repeat(list(families), [len(pair[0]) for pair in families.values()])
    keep = _strictly_convex(p) & _strictly_convex(q)
    p, q, family = p[keep], q[keep], family[keep]
    a = shapely.polygons(p)
    b = shapely.polygons(q)
    crowd = rng.random(len(p)) < 0.2
    expected = np.array([reference_iou(x, y, c) for x, y, c in zip(a, b, crowd)])
    intersected = []
    original = shapely.intersection

    def counting(x, y, *args, **kwargs):
        intersected.append(np.size(x))
        return original(x, y, *args, **kwargs)

    monkeypatch.setattr(shapely, "intersection", counting)
    got = pair_iou(a, b, crowd)
    assert sum(intersected) == 0  # every pair was clipped in numpy
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert ((got > 0) & (got < 1)).sum() > 2000
    # identical polygons, also listed the other way round, give exactly 1.0
    assert (family == "identical").sum() == 200 and (got[family == "identical"] == 1.0).all()
    # listed the other way round: shapely's area of the ring may be an ulp apart (as before)
    same = family == "identical-reordered"
    assert same.sum() == 200 and (np.abs(got[same] - 1) < 1e-14).all()
    reordered = shapely.polygons(np.roll(p[:, ::-1], 1, axis=1))
    np.testing.assert_allclose(pair_iou(a, reordered), 1.0, rtol=0, atol=1e-14)
    # orientation and starting corner do not matter
    flipped = shapely.polygons(np.roll(q[:, ::-1], 3, axis=1))
    np.testing.assert_allclose(pair_iou(a, flipped, crowd), got, rtol=0, atol=1e-12)
    np.testing.assert_allclose(pair_iou(flipped, a), pair_iou(b, a), rtol=0, atol=1e-12)
    # a polygon inside another gets exactly the smaller area over the larger
    nested = families["nested"]
    inner, outer = shapely.polygons(nested[1]), shapely.polygons(nested[0])
    inside = shapely.covered_by(inner, outer)
    assert inside.sum() > 150
    small, large = shapely.area(inner), shapely.area(outer)
    assert np.array_equal(pair_iou(inner, outer)[inside],
                          (small / ((small + large) - small))[inside])
    assert np.array_equal(pair_iou(inner, outer, np.ones(200, bool))[inside], np.ones(200)[inside])
    assert sum(intersected) == 0


def test_concave_quads_and_polygons_still_go_to_geos(monkeypatch):
    arrow = polygons_from_coords([[0, 0, 4, 2, 0, 4, 1, 2]])  # concave quadrilateral
    pentagon = polygons_from_coords([[0, 0, 3, 0, 4, 2, 2, 4, 0, 3]])
    box = polygons_from_rboxes([[2, 2, 3, 3, 20]])
    intersected = []
    original = shapely.intersection

    def counting(x, y, *args, **kwargs):
        intersected.append(np.size(x))
        return original(x, y, *args, **kwargs)

    monkeypatch.setattr(shapely, "intersection", counting)
    got = pair_iou(np.concatenate([arrow, pentagon, box]), np.concatenate([box, box, box]))
    assert intersected == [2]
    expected = [reference_iou(arrow[0], box[0]), reference_iou(pentagon[0], box[0]), 1.0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_pair_iou_of_rows_equals_pair_iou_of_gathered_pairs(seed):
    """PairIoU prepares each polygon once and looks pairs up by row: the same bits as
    pair_iou on the gathered pairs (rotated boxes, axis-aligned ones, stars, duplicates,
    crowd flags, pairs far apart)."""
    rng = np.random.default_rng(300 + seed)
    dt = np.concatenate([polygons_from_rboxes(random_rboxes(rng, 30)), random_polygons(rng, 10),
                         polygons_from_rboxes([[5, 5, 4, 2, 0], [5, 5, 4, 2, 90]])])
    gt = np.concatenate([polygons_from_rboxes(random_rboxes(rng, 20)), random_polygons(rng, 8),
                         polygons_from_rboxes([[5, 5, 4, 2, 0]])])
    d_rows = rng.integers(0, len(dt), 400)
    g_rows = rng.integers(0, len(gt), 400)
    crowd = rng.random(400) < 0.2
    expected = pair_iou(dt[d_rows], gt[g_rows], crowd)
    assert (expected > 0).sum() > 20
    assert np.array_equal(PairIoU(dt, gt)(d_rows, g_rows, crowd), expected)
    assert PairIoU(dt, gt)(np.zeros(0, int), np.zeros(0, int)).shape == (0,)


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


# ---------------------------------------------------------------------------------------------
# 761215b: keypoint results in loadRes's segm branch
# ---------------------------------------------------------------------------------------------


def _rle(height: int, width: int, rng: np.random.Generator) -> dict:
    from pycocotools import mask as mask_utils

    mask = np.zeros((height, width), np.uint8, order="F")
    y, x = int(rng.integers(0, height)), int(rng.integers(0, width))
    mask[y:y + int(rng.integers(1, 120)), x:x + int(rng.integers(1, 120))] = 1
    rle = mask_utils.encode(mask)
    return {"size": rle["size"], "counts": rle["counts"].decode()}


def _keypoints_with_masks(seed: int, *, other_size: bool = False) -> tuple[dict, list[dict]]:
    gt, results = make_keypoints_dataset(seed, bbox_mode="none")
    rng = np.random.default_rng(seed)
    images = {image["id"]: image for image in gt["images"]}
    for result in results:
        result.pop("bbox", None)
        image = images[result["image_id"]]
        size = ((int(rng.integers(5, 60)), int(rng.integers(5, 60))) if other_size
                else (image["height"], image["width"]))
        result["segmentation"] = _rle(*size, rng)
    return gt, results


def _assert_parity_dict_and_file(gt: dict, results: list[dict], tmp_path) -> None:
    expected = run_pycocotools(gt, results, iou_type="keypoints")
    assert_parity(deteval.evaluate_coco(gt, copy.deepcopy(results), iou_type="keypoints"),
                  expected)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    assert_parity(deteval.evaluate_coco(gt, path, iou_type="keypoints"), expected)


def test_keypoint_results_with_masks_of_another_size_parity(tmp_path):
    """Was wrong (fixed): io/coco.py _mask_areas_and_boxes: masks_from_segmentations(...,
    check_size=True) refuses a keypoint result's RLE whose size differs from its image
    ('masks are compared pixel by pixel' - they are not in the keypoints protocol); loadRes
    takes maskUtils.area of any RLE and pycocotools evaluates. Pass check_size=False there"""
    gt, results = _keypoints_with_masks(1, other_size=True)
    _assert_parity_dict_and_file(gt, results, tmp_path)


@pytest.mark.parametrize("variant", ["all", "first bbox []", "some own boxes",
                                     "box branch", "first without mask"])
def test_keypoint_results_with_masks_parity(variant, tmp_path):
    gt, results = _keypoints_with_masks(2)
    rng = np.random.default_rng(0)
    if variant == "first bbox []":
        results[0]["bbox"] = []
    elif variant == "some own boxes":
        results[0]["bbox"] = []
        for result in results[1:]:
            if rng.random() < 0.5:
                result["bbox"] = [1.0, 2.0, float(rng.integers(1, 99)), float(rng.integers(1, 99))]
    elif variant == "box branch":   # a non-empty first bbox: areas are w * h
        for result in results:
            result["bbox"] = [1.0, 2.0, float(rng.integers(1, 99)), float(rng.integers(1, 99))]
    elif variant == "first without mask":    # loadRes's keypoints branch: masks ignored
        del results[0]["segmentation"]
    _assert_parity_dict_and_file(gt, results, tmp_path)


def test_keypoint_result_without_the_mask_the_first_has_names_the_record(tmp_path):
    gt, results = _keypoints_with_masks(2)
    del results[1]["segmentation"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    for source in (results, path):
        with pytest.raises(FormatError, match=r"results\[1\]: missing 'segmentation'"):
            deteval.evaluate_coco(gt, source, iou_type="keypoints")


@pytest.mark.parametrize("value, match", [(None, "got NoneType"), ([], "empty list")])
def test_keypoint_result_with_a_null_or_empty_first_mask_names_the_record(value, match,
                                                                          tmp_path):
    gt, results = _keypoints_with_masks(2)
    results[0]["segmentation"] = value
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    for source in (results, path):
        with pytest.raises(FormatError, match=rf"results\[0\]: .*{match}"):
            deteval.evaluate_coco(gt, source, iou_type="keypoints")


def test_keypoint_results_with_polygon_masks_read_alike_from_dict_and_file(tmp_path):
    """pycocotools' area() fails on polygons; deteval rasterises them: no crash, and the
    file (typed decoder declines) and the dict give the same numbers."""
    gt, results = _keypoints_with_masks(3)
    results[0]["segmentation"] = [[10, 10, 50, 10, 50, 40]]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    from_dict = deteval.evaluate_coco(gt, results, iou_type="keypoints")
    from_file = deteval.evaluate_coco(gt, path, iou_type="keypoints")
    assert np.array_equal(from_dict.stats, from_file.stats)
    assert np.array_equal(from_dict.precision, from_file.precision)
