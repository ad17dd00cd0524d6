"""Polygon and rotated-box IoU of deteval.geometry against scalar shapely loops, rasterised
estimates, the COCO box formula (bit for bit on axis-aligned boxes) and exact rational areas;
invalid inputs; properties; the convex-quadrilateral clipping fast path."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import shapely
from geometryref import (
    BOWTIE,
    random_polygons,
    random_rboxes,
    raster_iou,
    reference_iou,
    reference_matrix,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from shapely.geometry import Polygon

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
from deteval.iou import coco_box_iou, coco_pair_iou

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


def _count_geos_intersections(monkeypatch) -> list:
    """From now on, the sizes of the batches ``shapely.intersection`` (GEOS) is called with."""
    intersected: list = []
    original = shapely.intersection

    def counting(x, y, *args, **kwargs):
        intersected.append(np.size(x))
        return original(x, y, *args, **kwargs)

    monkeypatch.setattr(shapely, "intersection", counting)
    return intersected


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
    intersected = _count_geos_intersections(monkeypatch)
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
    intersected = _count_geos_intersections(monkeypatch)
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
