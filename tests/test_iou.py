"""Tests of deteval.iou: hand cases, properties, loop references and pycocotools parity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycocotools import mask as mask_utils
from reference import (
    reference_box_ioa,
    reference_box_iou,
    reference_complete_box_iou,
    reference_distance_box_iou,
    reference_generalized_box_iou,
)

from deteval.iou import (
    box_ioa,
    box_iou,
    coco_box_iou,
    coco_pair_iou,
    complete_box_iou,
    distance_box_iou,
    generalized_box_iou,
)

MATRIX_FUNCTIONS = [box_iou, box_ioa, generalized_box_iou, distance_box_iou, complete_box_iou]
REFERENCES = {
    box_iou: reference_box_iou,
    box_ioa: reference_box_ioa,
    generalized_box_iou: reference_generalized_box_iou,
    distance_box_iou: reference_distance_box_iou,
    complete_box_iou: reference_complete_box_iou,
}


def frozen(values) -> np.ndarray:
    """A read-only float64 copy: any attempt to write into an input fails loudly."""
    array = np.array(values, dtype=np.float64).reshape(-1, 4)
    array.setflags(write=False)
    return array


def pycocotools_iou(dt, gt, iscrowd) -> np.ndarray:
    """pycocotools.mask.iou, with its ``[]`` for an empty side turned into an (n, m) array."""
    out = mask_utils.iou(np.array(dt), np.array(gt), np.array(iscrowd, dtype=np.uint8))
    return np.asarray(out, dtype=np.float64).reshape(len(dt), len(gt))


# ---------------------------------------------------------------------- hand-computed cases

SQUARE = [0, 0, 10, 10]


@pytest.mark.parametrize(
    ("a", "b", "iou", "ioa"),
    [
        pytest.param(SQUARE, SQUARE, 1.0, 1.0, id="identical"),
        pytest.param(SQUARE, [0, 0, 10, 5], 0.5, 0.5, id="lower-half"),
        pytest.param(SQUARE, [5, 5, 15, 15], 25 / 175, 0.25, id="corner-overlap"),
        pytest.param(SQUARE, [2, 2, 4, 4], 0.04, 0.04, id="b-inside-a"),
        pytest.param([2, 2, 4, 4], SQUARE, 0.04, 1.0, id="a-inside-b"),
        pytest.param(SQUARE, [10, 0, 20, 10], 0.0, 0.0, id="touching-edge"),
        pytest.param(SQUARE, [10, 10, 20, 20], 0.0, 0.0, id="touching-corner"),
        pytest.param(SQUARE, [30, 30, 40, 40], 0.0, 0.0, id="disjoint"),
        pytest.param([3, 3, 3, 8], SQUARE, 0.0, 0.0, id="zero-width-inside"),
        pytest.param([3, 3, 3, 3], [3, 3, 3, 3], 0.0, 0.0, id="two-points-zero-union"),
        pytest.param([8, 8, 2, 2], SQUARE, 0.0, 0.0, id="inverted-counts-as-empty"),
        pytest.param([0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4], 1.0, 1.0, id="decimals-self"),
    ],
)
def test_iou_and_ioa_cases(a, b, iou, ioa):
    assert box_iou(frozen(a), frozen(b)).tolist() == [[pytest.approx(iou, rel=1e-15)]]
    assert box_ioa(frozen(a), frozen(b)).tolist() == [[pytest.approx(ioa, rel=1e-15)]]


@pytest.mark.parametrize(
    ("a", "b", "giou", "diou"),
    [
        pytest.param(SQUARE, SQUARE, 1.0, 1.0, id="identical"),
        pytest.param([0, 0, 1, 1], [2, 0, 3, 1], -1 / 3, -(4 / 10), id="gap-of-one"),
        pytest.param(SQUARE, [10, 0, 20, 10], 0.0, -(100 / 500), id="touching-edge"),
        pytest.param(SQUARE, [2, 2, 8, 8], 0.36, 0.36, id="concentric"),
        pytest.param(SQUARE, [0, 0, 10, 5], 0.5, 0.5 - 6.25 / 200, id="lower-half"),
        pytest.param([3, 3, 3, 3], [3, 3, 3, 3], 0.0, 0.0, id="same-point-no-penalty"),
        pytest.param([0, 0, 0, 0], [3, 4, 3, 4], -1.0, -1.0, id="two-points-apart"),
        pytest.param([0, 0, 0, 0], [3, 0, 3, 0], 0.0, -1.0, id="collinear-points-zero-hull"),
    ],
)
def test_giou_and_diou_cases(a, b, giou, diou):
    assert generalized_box_iou(frozen(a), frozen(b))[0, 0] == pytest.approx(giou, rel=1e-15)
    assert distance_box_iou(frozen(a), frozen(b))[0, 0] == pytest.approx(diou, rel=1e-15)


ASPECT_TERM = 4 / math.pi**2 * (math.atan(2) - math.pi / 4) ** 2  # v of a 4 x 2 and a 2 x 2 box


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(SQUARE, SQUARE, 1.0, id="identical-alpha-zero"),
        pytest.param(SQUARE, [2, 2, 8, 8], 0.36, id="same-aspect-no-aspect-term"),
        pytest.param(
            [0, 0, 4, 2],
            [0, 0, 2, 2],
            # IoU 4/8, centres 1 apart, hull 4 x 2 (diagonal^2 20); angles atan(2) and pi/4.
            0.5 - 1 / 20 - ASPECT_TERM**2 / (0.5 + ASPECT_TERM),
            id="wide-and-square",
        ),
        pytest.param(
            [0, 0, 4, 0],
            [0, 0, 0, 4],
            # IoU 0, centres sqrt(8) apart in a 4 x 4 hull; angles pi/2 and 0, so v = 1 and
            # alpha = 1 / ((1 - 0) + 1).
            0.0 - 8 / 32 - 0.5,
            id="flat-and-upright",
        ),
    ],
)
def test_ciou_cases(a, b, expected):
    assert complete_box_iou(frozen(a), frozen(b))[0, 0] == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("function", MATRIX_FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("n", "m"), [(0, 3), (2, 0), (0, 0)], ids=["n0", "m0", "both0"])
def test_empty_sides_give_empty_matrices(function, n, m):
    out = function(np.zeros((n, 4)), np.ones((m, 4)))
    assert out.shape == (n, m) and out.dtype == np.float64


def test_empty_lists_count_as_no_boxes():
    assert box_iou([], [[0, 0, 1, 1]]).shape == (0, 1)


@pytest.mark.parametrize("function", MATRIX_FUNCTIONS, ids=lambda f: f.__name__)
def test_integer_input_gives_float64(function):
    out = function(np.array([[0, 0, 2, 2]]), np.array([[1, 1, 3, 3]], dtype=np.int8))
    assert out.dtype == np.float64 and out.shape == (1, 1)


def test_nan_gives_nan():
    assert np.isnan(box_iou([[0, 0, np.nan, 1]], [[0, 0, 1, 1]])).all()


# ---------------------------------------------------------------------------- properties

ends = st.one_of(st.integers(-20, 20).map(float), st.floats(-1e4, 1e4, allow_subnormal=False))
lengths = st.one_of(st.integers(0, 10).map(float), st.floats(0, 1e4, allow_subnormal=False))
positive_lengths = st.floats(1e-3, 1e4)


def xyxy_from(x, y, w, h):
    return [x, y, x + w, y + h]


box_strategy = st.builds(xyxy_from, ends, ends, lengths, lengths)
box_lists = st.lists(box_strategy, min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(a=box_lists, b=box_lists)
def test_every_variant_is_symmetric_and_bounded_by_iou(a, b):
    a, b = frozen(a), frozen(b)
    iou = box_iou(a, b)
    assert np.all((iou >= 0) & (iou <= 1))
    for function in (box_iou, generalized_box_iou, distance_box_iou, complete_box_iou):
        assert np.array_equal(function(a, b), function(b, a).T), function.__name__
    giou = generalized_box_iou(a, b)
    assert np.all((giou >= -1) & (giou <= iou))
    assert np.all(distance_box_iou(a, b) <= iou)
    assert np.all(complete_box_iou(a, b) <= distance_box_iou(a, b))
    ioa = box_ioa(a, b)
    # The union is at least the area of a, up to the rounding of (area_a + area_b) - inter.
    assert np.all((ioa >= iou * (1 - 1e-15)) & (ioa <= 1))


@settings(max_examples=200, deadline=None)
@given(x=ends, y=ends, w=positive_lengths, h=positive_lengths)
def test_a_box_with_area_overlaps_itself_fully(x, y, w, h):
    box = frozen(xyxy_from(x, y, w, h))
    if box[0, 2] <= box[0, 0] or box[0, 3] <= box[0, 1]:
        return  # x + w rounded back to x: no area left
    for function in MATRIX_FUNCTIONS:
        assert function(box, box).tolist() == [[1.0]], function.__name__


# ---------------------------------------------------------------------- loop references


def random_xyxy(rng: np.random.Generator, n: int) -> np.ndarray:
    """Small integer boxes (ties, touching edges, zero sizes, some inverted) and float ones."""
    xy = rng.integers(0, 8, size=(n, 2)).astype(float)
    wh = rng.integers(-1, 5, size=(n, 2)).astype(float)
    boxes = np.concatenate([xy, xy + wh], axis=1)
    floats = rng.random(n) < 0.4
    # Sorting each (corner, coordinate) pair puts x1 <= x2 and y1 <= y2.
    corners = np.sort(rng.uniform(-5, 10, size=(int(floats.sum()), 2, 2)), axis=1)
    boxes[floats] = corners.reshape(-1, 4)
    return boxes


@pytest.mark.parametrize("function", MATRIX_FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("seed", range(10))
def test_matches_loop_reference(function, seed):
    rng = np.random.default_rng(seed)
    a, b = frozen(random_xyxy(rng, 15)), frozen(random_xyxy(rng, 12))
    np.testing.assert_allclose(function(a, b), REFERENCES[function](a, b), rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------- COCO bbox IoU parity


@pytest.mark.parametrize(
    ("dt", "gt", "crowd", "expected"),
    [
        pytest.param([0, 0, 10, 9], SQUARE, 0, 0.9, id="semantics-example"),
        pytest.param([2, 2, 3, 3], SQUARE, 1, 1.0, id="inside-crowd-is-one"),
        pytest.param([0, 0, 20, 20], SQUARE, 1, 0.25, id="crowd-divides-by-detection"),
        pytest.param([10, 0, 5, 5], SQUARE, 0, 0.0, id="touching-edge"),
        pytest.param([3, 3, 0, 4], SQUARE, 1, 0.0, id="zero-width-detection-in-crowd"),
        pytest.param([5, 5, -2, 3], SQUARE, 0, 0.0, id="negative-width"),
        # C's fmin/fmax skip NaN: the x extent comes from the gt alone, the area is w * h.
        pytest.param([np.nan, 0, 10, 10], SQUARE, 0, 1.0, id="nan-x-ignored-like-c"),
    ],
)
def test_coco_cases(dt, gt, crowd, expected):
    dt, gt = frozen(dt), frozen(gt)
    assert coco_box_iou(dt, gt, [crowd]).tolist() == [[expected]]
    assert coco_pair_iou(dt, gt, [crowd]).tolist() == [expected]
    assert pycocotools_iou(dt, gt, [crowd]).tolist() == [[expected]]


def random_coco_case(rng: np.random.Generator):
    """Detections and gt ``xywh`` built to hit the edge cases of the C formula.

    Scales from 1e-3 to 1e9, negative coordinates, values rounded to integers or to one
    decimal (0.1 is not representable), detections jittered from gt, touching gt edges, or
    of zero size, and about a third of the gt crowd.
    """
    scale = 10.0 ** rng.choice([-3, 0, 1, 2, 6, 9])
    rounding = rng.choice(["none", "integer", "tenth"])
    n_gt, n_dt = rng.integers(0, 8), rng.integers(0, 12)

    def tidy(values):
        if rounding == "integer":
            return np.round(values)
        return np.round(values, 1) if rounding == "tenth" else values

    gt = tidy(
        np.concatenate([rng.uniform(-1, 1, (n_gt, 2)), rng.uniform(0, 1, (n_gt, 2))], 1) * scale
    )
    dt = tidy(
        np.concatenate([rng.uniform(-1, 1, (n_dt, 2)), rng.uniform(0, 1, (n_dt, 2))], 1) * scale
    )
    if n_gt:
        source = gt[rng.integers(0, n_gt, n_dt)]
        kind = rng.integers(0, 5, n_dt)
        jittered = tidy(source + rng.normal(0, 0.1, (n_dt, 4)) * scale)
        dt[kind == 1] = jittered[kind == 1]
        touching = source.copy()
        touching[:, 0] += source[:, 2]  # starts where the gt ends
        dt[kind == 2] = touching[kind == 2]
        dt[kind == 3] = source[kind == 3]
    zero = rng.random((n_dt, 2)) < 0.1
    dt[:, 2:][zero] = 0
    crowd = rng.random(n_gt) < 0.35
    return dt, gt, crowd


COCO_SEEDS = range(300)


@pytest.mark.parametrize("seed", COCO_SEEDS)
def test_coco_box_iou_is_bit_identical_to_pycocotools(seed):
    dt, gt, crowd = random_coco_case(np.random.default_rng(seed))
    dt, gt = frozen(dt), frozen(gt)
    ours = coco_box_iou(dt, gt, crowd)
    assert ours.shape == (len(dt), len(gt)) and ours.dtype == np.float64
    assert np.array_equal(ours, pycocotools_iou(dt, gt, crowd))

    # Every cell again as an aligned pair, in a shuffled order.
    rows, cols = np.meshgrid(np.arange(len(dt)), np.arange(len(gt)), indexing="ij")
    order = np.random.default_rng(seed).permutation(rows.size)
    rows, cols = rows.ravel()[order], cols.ravel()[order]
    pairs = coco_pair_iou(dt[rows], gt[cols], crowd[cols])
    assert pairs.shape == (rows.size,)
    assert np.array_equal(pairs, ours[rows, cols])


def test_random_coco_cases_reach_the_interesting_cells():
    """The generator above must produce overlaps, crowd hits, exact 1s and touching zeros."""
    found = {"overlap": 0, "crowd-overlap": 0, "one": 0, "touching": 0}
    for seed in COCO_SEEDS:
        dt, gt, crowd = random_coco_case(np.random.default_rng(seed))
        iou = coco_box_iou(dt, gt, crowd)
        found["overlap"] += int(np.sum((iou > 0) & (iou < 1)))
        found["crowd-overlap"] += int(np.sum(iou[:, crowd] > 0))
        found["one"] += int(np.sum(iou == 1))
        touching = dt[:, None, 0] == gt[None, :, 0] + gt[None, :, 2]
        found["touching"] += int(np.sum(touching & (dt[:, None, 2] > 0)))
    assert min(found.values()) >= 50, found


@pytest.mark.parametrize(
    "dt",
    [
        pytest.param([[np.nan, 0, 10, 10], [0, np.nan, 10, 10]], id="nan-position"),
        pytest.param([[0, 0, np.nan, 10], [0, 0, 10, np.nan]], id="nan-size"),
        pytest.param([[0, 0, np.inf, 10], [-np.inf, 0, np.inf, 10]], id="infinite"),
        pytest.param([[1e308, 1e308, 1e308, 1e308], [-1e308, 0, 1e308, 5]], id="overflow"),
    ],
)
def test_coco_non_finite_like_pycocotools(dt):
    gt = frozen([SQUARE, [0, 0, np.inf, 10], [5, 5, 1e-320, 1e-320]])
    crowd = np.array([0, 1, 0], dtype=bool)
    ours = coco_box_iou(frozen(dt), gt, crowd)
    assert np.array_equal(ours, pycocotools_iou(frozen(dt), gt, crowd), equal_nan=True)
    rows, cols = np.divmod(np.arange(ours.size), 3)
    pairs = coco_pair_iou(frozen(dt)[rows], gt[cols], crowd[cols])
    assert np.array_equal(pairs, ours.ravel(), equal_nan=True)


def test_coco_float32_input_is_widened_like_pycocotools():
    dt = np.array([[0.1, 0.2, 10.3, 9.7]], dtype=np.float32)
    gt = np.array([[0.3, 0.1, 9.9, 10.1]], dtype=np.float32)
    assert np.array_equal(coco_box_iou(dt, gt, [0]), pycocotools_iou(dt, gt, [0]))


def test_coco_empty_sides():
    assert coco_box_iou(np.zeros((0, 4)), frozen(SQUARE), [True]).shape == (0, 1)
    assert coco_box_iou(frozen(SQUARE), [], []).shape == (1, 0)
    assert coco_pair_iou([], [], []).shape == (0,)


# ------------------------------------------------------------------- errors and purity


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        pytest.param(
            lambda: box_iou([0, 0, 1, 1], [[0, 0, 1, 1]]),
            ValueError,
            r"a must have shape \(n, 4\); got \(4,\)",
            id="a-one-box-1d",
        ),
        pytest.param(
            lambda: generalized_box_iou([[0, 0, 1, 1]], np.zeros((2, 5))),
            ValueError,
            r"b must have shape \(n, 4\); got \(2, 5\)",
            id="b-five-columns",
        ),
        pytest.param(
            lambda: box_ioa([["x", 0, 1, 1]], [[0, 0, 1, 1]]),
            TypeError,
            r"a must be real numbers; got dtype <U",
            id="a-strings",
        ),
        pytest.param(
            lambda: coco_box_iou([[0, 0, 1, 1]], [[0, 0, 1, 1]] * 2, [0]),
            ValueError,
            r"iscrowd must have shape \(2,\), one flag per gt box; got \(1,\)",
            id="crowd-length",
        ),
        pytest.param(
            lambda: coco_box_iou([[0, 0, 1, 1]], [[0, 0, 1, 1]], [0.5]),
            ValueError,
            r"iscrowd must hold only booleans or 0/1",
            id="crowd-half",
        ),
        pytest.param(
            lambda: coco_pair_iou([[0, 0, 1, 1]], [[0, 0, 1, 1]], [2]),
            ValueError,
            r"iscrowd must hold only booleans or 0/1",
            id="crowd-two",
        ),
        pytest.param(
            lambda: coco_box_iou([[0, 0, 1, 1]], [[0, 0, 1, 1]], ["yes"]),
            TypeError,
            r"iscrowd must be booleans or 0/1; got dtype <U3",
            id="crowd-strings",
        ),
        pytest.param(
            lambda: coco_box_iou([[0, 0, 1]], [[0, 0, 1, 1]], [0]),
            ValueError,
            r"dt_xywh must have shape \(n, 4\); got \(1, 3\)",
            id="dt-shape",
        ),
        pytest.param(
            lambda: coco_pair_iou([[0, 0, 1, 1]], [[0, 0, 1, 1]] * 2, [0, 0]),
            ValueError,
            r"dt_xywh and gt_xywh must have the same number of rows; got 1 and 2",
            id="pair-rows",
        ),
    ],
)
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "function", [*MATRIX_FUNCTIONS, coco_box_iou, coco_pair_iou], ids=lambda f: f.__name__
)
def test_inputs_are_not_modified(function):
    rng = np.random.default_rng(7)
    a, b = random_xyxy(rng, 6), random_xyxy(rng, 6)
    a[0, 0] = np.nan
    crowd = np.array([True, False] * 3)
    originals = (a.copy(), b.copy(), crowd.copy())
    args = (a, b, crowd) if function in (coco_box_iou, coco_pair_iou) else (a, b)
    function(*args)
    for before, after in zip(originals[: len(args)], args, strict=True):
        assert np.array_equal(before, after, equal_nan=True)
