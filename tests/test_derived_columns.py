"""Columns a row type derives on first read instead of holding (``deteval.data``,
docs/data-model.md §1): the xyxy boxes and areas ``w * h`` of a reader's ``xywh``, the
category ids of known categories, the default ids ``1..n``, and int64 image and category
rows held in a narrower integer type.
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
from deteval.data import (
    DERIVED,
    Detections,
    GroundTruth,
    derived_or_read,
    from_categories,
    index_in,
    is_derived,
    narrow,
    row_dtype,
)
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


#: Every column a detections table can derive.
DERIVABLE = ("boxes", "ids", "area", "category_ids", "image_index", "category_index")

#: The category id column of the tables below (category_index 0 and 1).
_CATEGORY_IDS = np.array([7, 2**40])
_CATEGORY_IDS.setflags(write=False)


def _detections(xywh, **overrides):
    n = len(xywh)
    columns = dict(image_index=narrow(np.arange(n, dtype=np.int16) % 3),
                   category_index=narrow(np.arange(n, dtype=np.int8) % 2),
                   boxes=DERIVED, scores=np.linspace(1, 0, n), xywh=xywh, area=DERIVED,
                   category_ids=from_categories(_CATEGORY_IDS))
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
    assert _same_bits(dt.area, xywh[:, 2] * xywh[:, 3])
    assert _same_bits(dt.category_ids, np.where(np.arange(500) % 2, 2**40, 7))
    assert is_derived(dt, "image_index") and len(dt) == 500
    assert _same_bits(dt.image_index, np.arange(500) % 3)
    assert _same_bits(dt.category_index, np.arange(500) % 2)
    for name in DERIVABLE:
        assert not is_derived(dt, name) and getattr(dt, name) is getattr(dt, name)
        assert not getattr(dt, name).flags.writeable


def test_a_column_derived_or_read_for_one_stage_is_not_kept():
    xywh = _xywh(np.random.default_rng(7), 20)
    dt = _detections(xywh)
    area = derived_or_read(dt, "area")
    assert _same_bits(area, xywh[:, 2] * xywh[:, 3]) and is_derived(dt, "area")
    assert derived_or_read(dt, "scores") is dt.scores
    held = derived_or_read(dt, "image_index")   # as held: the same values, narrow
    assert held.dtype == np.int16 and held.tolist() == (np.arange(20) % 3).tolist()
    assert is_derived(dt, "image_index")
    assert derived_or_read(dt, "area") is not area
    kept = dt.area
    assert derived_or_read(dt, "area") is kept      # once read, kept


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


@pytest.mark.parametrize("name", ["boxes", "area"])
def test_boxes_and_areas_are_derived_only_from_xywh(name):
    columns = dict(image_index=[0], category_index=[0], boxes=[[0, 0, 1, 1]], scores=[1.0])
    columns[name] = DERIVED
    with pytest.raises(ValueError, match=f"{name} can only be derived from xywh"):
        Detections(**columns)


def test_category_ids_are_derived_only_for_known_categories():
    with pytest.raises(ValueError, match="derived from rows"):
        _detections(_xywh(np.random.default_rng(8), 3), category_index=[0, -1, 1])
    with pytest.raises(ValueError, match="derived from rows"):
        _detections(_xywh(np.random.default_rng(8), 3),
                    category_index=narrow(np.array([0, 2, 1], dtype=np.int8)))
    writable = np.array([5, 6])
    dt = _detections(_xywh(np.random.default_rng(8), 3), category_ids=from_categories(writable))
    writable[0] = 99    # a writable id column is copied: the table does not change
    assert dt.category_ids.tolist() == [5, 6, 5] and writable.flags.writeable


@pytest.mark.parametrize("rows", [np.array([0.0, 1.0, 2.0]), np.zeros((3, 1), np.int8),
                                  np.zeros(2, np.int8)], ids=["float", "2-D", "length"])
def test_narrow_rows_must_be_integers_of_the_tables_length(rows):
    with pytest.raises(ValueError, match="held narrow"):
        _detections(_xywh(np.random.default_rng(8), 3), category_index=narrow(rows))


@pytest.mark.parametrize("n_rows", [1, 128, 129, 32_768, 32_769, 2**31, 2**31 + 1])
def test_row_dtype_is_the_narrowest_holding_every_row_and_minus_one(n_rows):
    dtype = row_dtype(n_rows)
    assert np.iinfo(dtype).max >= n_rows - 1 and np.iinfo(dtype).min <= -1
    narrower = {np.int16: np.int8, np.int32: np.int16, np.int64: np.int32}.get(dtype.type)
    assert narrower is None or np.iinfo(narrower).max < n_rows - 1


@pytest.mark.parametrize("selection", [np.array([True, False, True, True] * 25), [7, 3, 3],
                                       slice(10, 20, 3), 5], ids=["mask", "rows", "slice", "int"])
def test_selections_keep_the_selected_rows_values_without_computing_the_source(selection):
    xywh = _xywh(np.random.default_rng(2), 100)
    dt = _detections(xywh)
    explicit = _detections(xywh, boxes=_corners(xywh), ids=np.arange(1, 101),
                           image_index=np.arange(100) % 3, category_index=np.arange(100) % 2,
                           area=xywh[:, 2] * xywh[:, 3],
                           category_ids=np.where(np.arange(100) % 2, 2**40, 7))
    part, expected = dt[selection], explicit[selection]
    assert all(is_derived(dt, name) for name in DERIVABLE)
    assert all(is_derived(part, name) for name in set(DERIVABLE) - {"ids"})
    for name in (*DERIVABLE, "xywh", "scores"):
        assert _same_bits(getattr(part, name), getattr(expected, name)), name


def test_replace_carries_derived_columns_and_keeps_values_of_the_others():
    xywh = _xywh(np.random.default_rng(3), 40)
    dt = _detections(xywh)
    scored = dt.replace(scores=np.zeros(40))
    assert all(is_derived(dt, name) and is_derived(scored, name) for name in DERIVABLE)
    assert _same_bits(scored.image_index, np.arange(40) % 3)
    assert _same_bits(scored.boxes, _corners(xywh)) and _same_bits(scored.ids, np.arange(1, 41))
    assert _same_bits(scored.area, xywh[:, 2] * xywh[:, 3])
    assert _same_bits(scored.category_ids, np.where(np.arange(40) % 2, 2**40, 7))
    # New xywh alone: boxes and areas stay those of the old numbers (as explicit ones do).
    moved = dt.replace(xywh=xywh + 1)
    assert _same_bits(moved.boxes, _corners(xywh)) and _same_bits(moved.xywh, xywh + 1)
    assert _same_bits(moved.area, xywh[:, 2] * xywh[:, 3])
    # New boxes drop xywh and recompute the area, as for explicit boxes.
    boxed = dt.replace(boxes=_corners(xywh) * 2)
    assert boxed.xywh is None and _same_bits(boxed.boxes, _corners(xywh) * 2)
    assert _same_bits(boxed.area, 4 * ((xywh[:, 2] + xywh[:, 0] - xywh[:, 0])
                                       * (xywh[:, 3] + xywh[:, 1] - xywh[:, 1])))
    # A new category_index drops the source's category ids, as for explicit ones.
    recategorised = dt.replace(category_index=np.zeros(40))
    assert recategorised.category_ids is None and not is_derived(recategorised,
                                                                 "category_index")
    assert _same_bits(recategorised.category_index, np.zeros(40, np.int64))


def test_pickling_keeps_columns_derived_and_their_values():
    xywh = _xywh(np.random.default_rng(4), 30)
    dt = _detections(xywh)
    back = pickle.loads(pickle.dumps(dt))
    assert all(is_derived(back, name) for name in DERIVABLE)
    assert _same_bits(back.category_index, dt.category_index)
    assert _same_bits(back.boxes, _corners(xywh)) and _same_bits(back.ids, np.arange(1, 31))
    assert _same_bits(back.area, dt.area) and _same_bits(back.category_ids, dt.category_ids)


def test_the_results_reader_derives_category_ids_only_when_every_category_is_known():
    gt, results = make_dataset(9, n_images=6, n_categories=3, p_unknown_category=0.0)
    dataset = deteval.io.coco.read_coco_gt(gt)
    file_ids = np.array([r["category_id"] for r in results])
    dt = read_coco_results(results, dataset)
    assert is_derived(dt, "category_ids") and _same_bits(dt.category_ids, file_ids)
    assert derived_or_read(dt, "category_index").dtype == np.int8    # 3 categories
    assert _same_bits(dt.category_index, index_in(file_ids, dataset.categories.ids))
    results[1] = dict(results[1], category_id=10**15)
    dt = read_coco_results(results, dataset)
    assert not is_derived(dt, "category_ids") and dt.category_ids[1] == 10**15
    assert _same_bits(np.delete(dt.category_ids, 1), np.delete(file_ids, 1))


def test_boxes_near_the_float_limit_are_checked_or_accepted_exactly():
    """The reader checks ``x + w`` and ``w * h`` by the columns' bounds: a number beyond them
    with a finite sum and product is accepted (the whole-column checks clear it), an
    overflowing sum or product refused."""
    dataset = deteval.io.coco.read_coco_gt(make_dataset(5, n_images=2, n_categories=1)[0])
    image = int(dataset.images.ids[0])
    big = [{"image_id": image, "category_id": int(dataset.categories.ids[0]),
            "bbox": [1.5e308, 0.0, 0.0, 1.0], "score": 0.5}]
    dt = read_coco_results(big, dataset)
    assert dt.boxes.tolist() == [[1.5e308, 0.0, 1.5e308, 1.0]]
    big[0]["bbox"] = [0.0, 0.0, 1e200, 0.0]                 # w * h = 0
    assert read_coco_results(big, dataset).area.tolist() == [0.0]
    big[0]["bbox"] = [1.5e308, 0.0, 1.5e308, 1.0]
    with pytest.raises(deteval.FormatError, match="overflows: x"):
        read_coco_results(big, dataset)
    big[0]["bbox"] = [0.0, 0.0, 1e200, 1e200]
    with pytest.raises(deteval.FormatError, match="area w"):
        read_coco_results(big, dataset)


def test_coco_evaluation_of_a_results_file_computes_no_derived_column(tmp_path):
    gt, results = make_dataset(6, n_images=30, n_categories=3, max_dt=20,
                               p_unknown_category=0.0)
    dataset = deteval.io.coco.read_coco_gt(gt)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    result = deteval.evaluate_coco(dataset, str(path))
    detections = result.detections
    assert all(is_derived(detections, name) for name in DERIVABLE), vars(detections).keys()
    explicit = detections.replace(**{name: getattr(detections, name)
                                     for name in (*DERIVABLE, "xywh")})
    assert not any(is_derived(explicit, name) for name in DERIVABLE)
    again = deteval.evaluate_coco(dataset, explicit)
    assert np.array_equal(again.stats, result.stats)


def test_the_ground_truth_reader_derives_boxes_and_checks_their_corners():
    gt, _ = make_dataset(10, n_images=5, n_categories=2)
    dataset = deteval.io.coco.read_coco_gt(gt)
    xywh = np.array([a["bbox"] for a in gt["annotations"]], dtype=np.float64)
    assert is_derived(dataset.gt, "boxes") and _same_bits(dataset.gt.boxes, _corners(xywh))
    gt["annotations"][1]["bbox"] = [1.5e308, 0.0, 0.0, 1.0]     # beyond the bounds, finite
    assert deteval.io.coco.read_coco_gt(gt).gt.boxes[1].tolist() == [1.5e308, 0.0, 1.5e308,
                                                                      1.0]
    gt["annotations"][1]["bbox"] = [1.5e308, 0.0, 1.5e308, 1.0]
    with pytest.raises(deteval.FormatError, match=r"annotations\[1\].*overflows: x"):
        deteval.io.coco.read_coco_gt(gt)


@pytest.mark.parametrize("name", ["boxes", "area", "ids", "category_ids", "image_index"])
def test_threads_reading_a_column_first_at_once_get_the_array_the_table_keeps(name):
    """Two threads inside the derivation together (held there by a barrier) each compute
    the column; both must get the one array the table then keeps."""
    import threading

    dt = _detections(_xywh(np.random.default_rng(3), 50))
    descriptor = Detections.__dict__[name]
    derive, both_inside = descriptor.derive, threading.Barrier(2)

    def held_derive(table):
        both_inside.wait(timeout=10)
        return derive(table)

    got = [None, None]
    readers = [threading.Thread(target=lambda i=i: got.__setitem__(i, getattr(dt, name)))
               for i in (0, 1)]
    descriptor.derive = held_derive
    try:
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
    finally:
        descriptor.derive = derive
    assert got[0] is getattr(dt, name) and got[1] is getattr(dt, name)
    assert not got[0].flags.writeable
