"""Tests of deteval.boxes: formats, conversion, area, clipping and validity."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from deteval.boxes import BOX_FORMATS, box_area, clip_boxes, convert_boxes, invalid_boxes

# One box in every format, on a 100 x 200 image.
IMAGE_SIZE = (100, 200)
SAME_BOX = {
    "xyxy": [10, 20, 50, 80],
    "xywh": [10, 20, 40, 60],
    "cxcywh": [30, 50, 40, 60],
    "xyxyn": [0.1, 0.1, 0.5, 0.4],
    "xywhn": [0.1, 0.1, 0.4, 0.3],
    "cxcywhn": [0.3, 0.25, 0.4, 0.3],
}


def frozen(values) -> np.ndarray:
    """A read-only float64 copy: any attempt to write into an input fails loudly."""
    array = np.array(values, dtype=np.float64)
    array.setflags(write=False)
    return array


@pytest.mark.parametrize(
    ("src", "dst"),
    [pytest.param(s, d, id=f"{s}-to-{d}") for s, d in itertools.product(BOX_FORMATS, repeat=2)],
)
def test_convert_one_box_between_every_pair_of_formats(src, dst):
    boxes = frozen([SAME_BOX[src]])
    out = convert_boxes(boxes, src, dst, image_size=IMAGE_SIZE)
    assert out.dtype == np.float64 and out.shape == (1, 4)
    np.testing.assert_allclose(out, [SAME_BOX[dst]], rtol=1e-12)
    assert out is not boxes and not np.shares_memory(out, boxes)
    np.testing.assert_array_equal(boxes, [SAME_BOX[src]])


@pytest.mark.parametrize(
    ("boxes", "src", "dst", "image_size", "expected"),
    [
        pytest.param(
            [[0, 0, 10, 10], [0, 0, 10, 10]],
            "xyxy",
            "xyxyn",
            [[10, 10], [20, 40]],
            [[0, 0, 1, 1], [0, 0, 0.5, 0.25]],
            id="per-box-image-size",
        ),
        pytest.param(
            [[0.5, 0.5, 1, 1]],
            "cxcywhn",
            "xyxyn",
            None,
            [[0, 0, 1, 1]],
            id="normalised-to-normalised-needs-no-size",
        ),
        pytest.param([[1, 2, 3, 4]], "xywh", "xywh", None, [[1, 2, 3, 4]], id="identity"),
        pytest.param([[5, 5, 2, 2]], "xyxy", "xywh", None, [[5, 5, -3, -3]], id="inverted-box"),
        pytest.param([[3, 3, 3, 3]], "xyxy", "cxcywh", None, [[3, 3, 0, 0]], id="point-box"),
    ],
)
def test_convert_cases(boxes, src, dst, image_size, expected):
    np.testing.assert_allclose(
        convert_boxes(boxes, src, dst, image_size=image_size), expected, rtol=1e-12
    )


def test_xywh_widths_survive_cxcywh_exactly():
    boxes = np.array([[0.1, 0.2, 0.3, 0.7], [1e6 + 0.1, -3.3, 1e-3, 0.1]])
    out = convert_boxes(convert_boxes(boxes, "xywh", "cxcywh"), "cxcywh", "xywh")
    np.testing.assert_array_equal(out[:, 2:], boxes[:, 2:])


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(BOX_FORMATS, repeat=2)))
@pytest.mark.parametrize("empty", [pytest.param([], id="list"), pytest.param(np.zeros((0, 4)))])
def test_convert_empty(empty, src, dst):
    out = convert_boxes(empty, src, dst, image_size=IMAGE_SIZE)
    assert out.shape == (0, 4) and out.dtype == np.float64


def test_convert_integers_gives_float64():
    out = convert_boxes(np.array([[1, 2, 3, 4]], dtype=np.int32), "xywh", "xyxy")
    assert out.dtype == np.float64
    assert out.tolist() == [[1.0, 2.0, 4.0, 6.0]]


@pytest.mark.parametrize(
    ("boxes", "fmt", "expected"),
    [
        pytest.param([[0, 0, 10, 5]], "xyxy", [50], id="xyxy"),
        pytest.param([[7, 7, 10, 5]], "xywh", [50], id="xywh"),
        pytest.param([[7, 7, 10, 5]], "cxcywh", [50], id="cxcywh"),
        pytest.param([[0, 0, 0.5, 0.5]], "xyxyn", [0.25], id="normalised-is-a-fraction"),
        pytest.param([[0, 0, 0, 5]], "xyxy", [0], id="zero-width"),
        pytest.param([[5, 5, 0, 0]], "xyxy", [0], id="inverted-is-zero-not-positive"),
        pytest.param([[0, 0, -2, 3]], "xywh", [0], id="negative-width"),
        pytest.param([], "xyxy", [], id="empty"),
    ],
)
def test_box_area(boxes, fmt, expected):
    area = box_area(boxes, fmt)
    assert area.dtype == np.float64
    np.testing.assert_array_equal(area, expected)


def test_box_area_nan_stays_nan():
    assert np.isnan(box_area([[0, 0, np.nan, 1]])).all()


@pytest.mark.parametrize(
    ("boxes", "width", "height", "expected"),
    [
        pytest.param([[1, 2, 3, 4]], 10, 10, [[1, 2, 3, 4]], id="inside"),
        pytest.param([[-5, -5, 20, 30]], 10, 20, [[0, 0, 10, 20]], id="overhangs-all-sides"),
        pytest.param([[15, 25, 30, 40]], 10, 20, [[10, 20, 10, 20]], id="outside-collapses"),
        pytest.param(
            [[-1, -1, 50, 50], [-1, -1, 50, 50]],
            [10, 20],
            [30, 40],
            [[0, 0, 10, 30], [0, 0, 20, 40]],
            id="per-box-sizes",
        ),
        pytest.param([], 10, 10, np.zeros((0, 4)), id="empty"),
    ],
)
def test_clip_boxes(boxes, width, height, expected):
    boxes = frozen(boxes)
    before = boxes.copy()
    np.testing.assert_array_equal(clip_boxes(boxes, width, height), expected)
    np.testing.assert_array_equal(boxes, before)


def test_clip_boxes_keeps_nan():
    out = clip_boxes([[np.nan, 0, 5, 5]], 10, 10)
    assert np.isnan(out[0, 0]) and out[0, 1:].tolist() == [0, 5, 5]


@pytest.mark.parametrize(
    ("box", "invalid"),
    [
        pytest.param([0, 0, 1, 1], False, id="ordinary"),
        pytest.param([0, 0, 0, 0], False, id="zero-size-is-valid"),
        pytest.param([2, 0, 1, 1], True, id="x2-before-x1"),
        pytest.param([0, 2, 1, 1], True, id="y2-before-y1"),
        pytest.param([0, 0, np.nan, 1], True, id="nan"),
        pytest.param([0, -np.inf, 1, 1], True, id="infinite"),
    ],
)
def test_invalid_boxes(box, invalid):
    assert invalid_boxes([box]).tolist() == [invalid]


def test_invalid_boxes_empty():
    mask = invalid_boxes(np.zeros((0, 4)))
    assert mask.shape == (0,) and mask.dtype == bool


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        pytest.param(
            lambda: convert_boxes([[0, 0, 1, 1]], "xyxy", "yolo"),
            ValueError,
            r"dst must be one of 'xyxy', 'xywh', 'cxcywh', 'xyxyn', 'xywhn', 'cxcywhn'; "
            r"got 'yolo'",
            id="unknown-dst",
        ),
        pytest.param(
            lambda: convert_boxes([[0, 0, 1, 1]], "XYXY", "xywh"),
            ValueError,
            r"src must be one of .*got 'XYXY'",
            id="unknown-src",
        ),
        pytest.param(
            lambda: box_area([[0, 0, 1, 1]], "xy"),
            ValueError,
            r"fmt must be one of",
            id="unknown-fmt",
        ),
        pytest.param(
            lambda: convert_boxes([0, 0, 1, 1], "xyxy", "xywh"),
            ValueError,
            r"boxes must have shape \(n, 4\); got \(4,\)",
            id="single-box-1d",
        ),
        pytest.param(
            lambda: convert_boxes([[0, 0, 1]], "xyxy", "xywh"),
            ValueError,
            r"boxes must have shape \(n, 4\); got \(1, 3\)",
            id="three-columns",
        ),
        pytest.param(
            lambda: box_area(np.zeros((2, 4, 1))),
            ValueError,
            r"boxes must have shape \(n, 4\); got \(2, 4, 1\)",
            id="three-dims",
        ),
        pytest.param(
            lambda: convert_boxes([["a", "b", "c", "d"]], "xyxy", "xywh"),
            TypeError,
            r"boxes must be real numbers; got dtype <U1",
            id="strings",
        ),
        pytest.param(
            lambda: invalid_boxes([[None, 0, 1, 1]]),
            TypeError,
            r"boxes must be real numbers; got dtype object",
            id="none-inside",
        ),
        pytest.param(
            lambda: clip_boxes(np.ones((1, 4), dtype=bool), 5, 5),
            TypeError,
            r"got dtype bool",
            id="booleans",
        ),
        pytest.param(
            lambda: convert_boxes([[0, 0, 1, 1]], "xyxy", "xywhn"),
            ValueError,
            r"image_size is required to convert from or to 'xywhn'",
            id="missing-size-dst",
        ),
        pytest.param(
            lambda: convert_boxes([[0, 0, 1, 1]], "cxcywhn", "xyxy"),
            ValueError,
            r"image_size is required to convert from or to 'cxcywhn'",
            id="missing-size-src",
        ),
        pytest.param(
            lambda: convert_boxes([[0, 0, 1, 1]], "xyxy", "xyxyn", image_size=(1, 2, 3)),
            ValueError,
            r"image_size must be \(width, height\) or have shape \(1, 2\); "
            r"got shape \(3,\)",
            id="size-shape",
        ),
        pytest.param(
            lambda: convert_boxes([[0, 0, 1, 1]], "xyxy", "xyxyn", image_size=(0, 10)),
            ValueError,
            r"image_size must hold positive finite",
            id="size-zero",
        ),
        pytest.param(
            lambda: convert_boxes([[0, 0, 1, 1]], "xyxy", "xyxyn", image_size=("a", "b")),
            TypeError,
            r"image_size must be real numbers",
            id="size-strings",
        ),
        pytest.param(
            lambda: clip_boxes([[0, 0, 1, 1]], -1, 5),
            ValueError,
            r"width must be positive and finite",
            id="clip-negative-width",
        ),
        pytest.param(
            lambda: clip_boxes([[0, 0, 1, 1]], 5, [5, 6]),
            ValueError,
            r"height must be a scalar or have shape \(1,\); got \(2,\)",
            id="clip-height-shape",
        ),
    ],
)
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ----------------------------------------------------------------------------- properties

coordinates = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)
box_arrays = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=2, max_dims=2, max_side=6).map(lambda shape: (shape[0], 4)),
    elements=coordinates,
)
sides = st.floats(1, 1e4, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(
    boxes=box_arrays,
    src=st.sampled_from(BOX_FORMATS),
    dst=st.sampled_from(BOX_FORMATS),
    size=st.tuples(sides, sides),
)
def test_conversions_round_trip(boxes, src, dst, size):
    frozen_boxes = frozen(boxes)
    there = convert_boxes(frozen_boxes, src, dst, image_size=size)
    back = convert_boxes(there, dst, src, image_size=size)
    # Relative to the magnitude of the box: x1 + (x2 - x1) is exact only to an ulp of x2.
    scale = np.abs(boxes).max(axis=1, keepdims=True) if len(boxes) else 0.0
    assert np.all(np.abs(back - boxes) <= 1e-9 * scale + 1e-300)
    np.testing.assert_array_equal(frozen_boxes, boxes)


@settings(max_examples=100, deadline=None)
@given(boxes=box_arrays)
def test_clipping_stays_in_the_image_and_keeps_boxes_valid(boxes):
    clipped = clip_boxes(boxes, 640, 480)
    assert np.all((clipped >= 0) & (clipped <= [640, 480, 640, 480]))
    # Clipping is monotone: a valid box stays valid (an inverted one may become zero-size).
    assert not np.any(invalid_boxes(clipped) & ~invalid_boxes(boxes))
    assert np.all(box_area(clipped) <= box_area(boxes))
