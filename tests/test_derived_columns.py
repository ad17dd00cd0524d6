"""Columns a row type derives on first read instead of holding (``deteval.data``,
docs/data-model.md §1): the xyxy boxes of a reader's ``xywh`` and the default ids ``1..n``.
A derived column has the values an explicit one would have, bit for bit, is read-only, is
computed once, and survives selections, ``replace`` and pickling without being computed
for them; the COCO evaluation of a results file never computes them (its peak memory)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from cocogen import make_dataset

import deteval
from deteval.data import DERIVED, Detections, GroundTruth, is_derived
from deteval.io.coco import read_coco_results


def _xywh(rng, n):
    """Boxes whose far corners round: x + w - x is not w for many of them."""
    xywh = rng.random((n, 4)) * 1000
    xywh[:, :2] += 0.1
    return np.round(xywh, 3)


def _corners(xywh):
    """The xyxy boxes, computed here independently of the library (whole blocks)."""
    return np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1)


def _same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
        a.view(np.int64), b.view(np.int64))


def _detections(xywh, **overrides):
    n = len(xywh)
    columns = dict(image_index=np.arange(n) % 3, category_index=np.arange(n) % 2,
                   boxes=DERIVED, scores=np.linspace(1, 0, n), xywh=xywh,
                   area=xywh[:, 2] * xywh[:, 3])
    columns.update(overrides)
    return Detections(**columns)


def test_derived_boxes_equal_the_corners_bit_for_bit_and_are_computed_once():
    xywh = _xywh(np.random.default_rng(0), 500)
    assert not np.array_equal(_corners(xywh)[:, 2] - xywh[:, 0], xywh[:, 2])  # rounding shows
    dt = _detections(xywh)
    assert is_derived(dt, "boxes") and is_derived(dt, "ids") and "boxes" not in vars(dt)
    boxes = dt.boxes
    assert _same_bits(boxes, _corners(xywh)) and not boxes.flags.writeable
    assert dt.boxes is boxes and not is_derived(dt, "boxes")
    assert _same_bits(dt.ids, np.arange(1, 501)) and not dt.ids.flags.writeable
    explicit = _detections(xywh, boxes=_corners(xywh), ids=np.arange(1, 501))
    assert _same_bits(explicit.area, dt.area) and _same_bits(explicit.boxes, dt.boxes)


def test_ground_truth_derives_the_same_columns():
    xywh = _xywh(np.random.default_rng(1), 50)
    gt = GroundTruth(image_index=np.zeros(50), category_index=np.zeros(50), boxes=DERIVED,
                     xywh=xywh)
    assert is_derived(gt, "boxes") and is_derived(gt, "ids")
    # The default area is the xyxy box's, computed without keeping the boxes.
    corners = _corners(xywh)
    box_area = (corners[:, 2] - corners[:, 0]) * (corners[:, 3] - corners[:, 1])
    assert _same_bits(gt.area, box_area) and is_derived(gt, "boxes")
    assert _same_bits(gt.boxes, corners) and _same_bits(gt.ids, np.arange(1, 51))


def test_boxes_are_derived_only_from_xywh():
    with pytest.raises(ValueError, match="derived from xywh"):
        Detections(image_index=[0], category_index=[0], boxes=DERIVED, scores=[1.0])


@pytest.mark.parametrize("selection", [np.array([True, False, True, True] * 25), [7, 3, 3],
                                       slice(10, 20, 3), 5], ids=["mask", "rows", "slice", "int"])
def test_selections_keep_the_selected_rows_values_without_computing_the_source(selection):
    xywh = _xywh(np.random.default_rng(2), 100)
    dt = _detections(xywh)
    explicit = _detections(xywh, boxes=_corners(xywh), ids=np.arange(1, 101))
    part, expected = dt[selection], explicit[selection]
    assert is_derived(dt, "boxes") and is_derived(dt, "ids")
    assert is_derived(part, "boxes")
    for name in ("boxes", "ids", "xywh", "area", "scores", "image_index"):
        assert _same_bits(getattr(part, name), getattr(expected, name)), name


def test_replace_carries_derived_columns_and_keeps_values_of_the_others():
    xywh = _xywh(np.random.default_rng(3), 40)
    dt = _detections(xywh)
    scored = dt.replace(scores=np.zeros(40))
    assert is_derived(dt, "boxes") and is_derived(scored, "boxes") and is_derived(scored, "ids")
    assert _same_bits(scored.boxes, _corners(xywh)) and _same_bits(scored.ids, np.arange(1, 41))
    # New xywh alone: the boxes stay those of the old numbers (as for explicit boxes).
    moved = dt.replace(xywh=xywh + 1)
    assert _same_bits(moved.boxes, _corners(xywh)) and _same_bits(moved.xywh, xywh + 1)
    # New boxes drop xywh and recompute the area, as for explicit boxes.
    boxed = dt.replace(boxes=_corners(xywh) * 2)
    assert boxed.xywh is None and _same_bits(boxed.boxes, _corners(xywh) * 2)


def test_pickling_keeps_columns_derived_and_their_values():
    xywh = _xywh(np.random.default_rng(4), 30)
    dt = _detections(xywh)
    back = pickle.loads(pickle.dumps(dt))
    assert is_derived(back, "boxes") and is_derived(back, "ids")
    assert _same_bits(back.boxes, _corners(xywh)) and _same_bits(back.ids, np.arange(1, 31))


def test_boxes_near_the_float_limit_are_checked_or_accepted_exactly():
    """The reader checks ``x + w`` by the columns' bounds: a coordinate beyond them with a
    finite sum is accepted (the whole-column check clears it), an overflowing sum refused."""
    dataset = deteval.io.coco.read_coco_gt(make_dataset(5, n_images=2, n_categories=1)[0])
    image = int(dataset.images.ids[0])
    big = [{"image_id": image, "category_id": int(dataset.categories.ids[0]),
            "bbox": [1.5e308, 0.0, 0.0, 1.0], "score": 0.5}]
    dt = read_coco_results(big, dataset)
    assert dt.boxes.tolist() == [[1.5e308, 0.0, 1.5e308, 1.0]]
    big[0]["bbox"] = [1.5e308, 0.0, 1.5e308, 1.0]
    with pytest.raises(deteval.FormatError, match="overflows: x"):
        read_coco_results(big, dataset)


def test_coco_evaluation_of_a_results_file_never_computes_boxes_or_ids(tmp_path):
    gt, results = make_dataset(6, n_images=30, n_categories=3, max_dt=20)
    dataset = deteval.io.coco.read_coco_gt(gt)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    result = deteval.evaluate_coco(dataset, str(path))
    assert is_derived(result.detections, "boxes") and is_derived(result.detections, "ids")
    explicit = result.detections.replace(boxes=result.detections.boxes,
                                         xywh=result.detections.xywh,
                                         area=result.detections.area)
    assert not is_derived(explicit, "boxes")
    again = deteval.evaluate_coco(dataset, explicit)
    assert np.array_equal(again.stats, result.stats)
