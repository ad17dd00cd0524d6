"""Tests of deteval.geometry's shapes: rotated-box corners and their polygons, polygon
construction from coordinates and its validation (repair, degenerate polygons). Their IoU:
tests/test_geometry_iou.py; odd inputs: tests/test_geometry_odd_inputs.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import shapely
from geometryref import BOWTIE, random_rboxes
from shapely.geometry import Polygon

from deteval.errors import FormatError
from deteval.geometry import (
    iou_matrix,
    polygon_area,
    polygon_bounds,
    polygons_from_coords,
    polygons_from_rboxes,
    rotated_box_corners,
)

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
