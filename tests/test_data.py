"""Tests of the columnar data model (deteval.data): copies, read-only arrays, shapes, filtering."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deteval
from deteval import Categories, Dataset, Detections, GroundTruth, Images


def make_gt(**overrides) -> GroundTruth:
    columns = dict(image_index=[0, 0, 1], category_index=[0, 1, 1],
                   boxes=[[0, 0, 10, 10], [5, 5, 20, 30], [1, 2, 4, 8]])
    columns.update(overrides)
    return GroundTruth(**columns)


def make_dt(**overrides) -> Detections:
    columns = dict(image_index=[0, 1, 1, 0], category_index=[1, 1, 0, -1],
                   boxes=[[0, 0, 10, 9], [1, 2, 4, 8], [0, 0, 1, 1], [3, 3, 4, 5]],
                   scores=[0.9, 0.5, 0.7, 0.1])
    columns.update(overrides)
    return Detections(**columns)


# --------------------------------------------------------------------------------------------
# Defaults
# --------------------------------------------------------------------------------------------


def test_ground_truth_defaults():
    gt = make_gt()
    assert len(gt) == 3
    assert gt.boxes.dtype == np.float64 and gt.boxes.shape == (3, 4)
    assert gt.area.tolist() == [100.0, 375.0, 18.0]  # the box area
    assert gt.iscrowd.dtype == bool and not gt.iscrowd.any()
    assert gt.ignore.dtype == bool and not gt.ignore.any()
    assert gt.ids.dtype == np.int64 and gt.ids.tolist() == [1, 2, 3]
    assert gt.xywh is None
    assert gt.image_index.dtype == np.int64 and gt.category_index.dtype == np.int64


def test_detections_defaults():
    dt = make_dt()
    assert len(dt) == 4
    assert dt.area.tolist() == [90.0, 18.0, 1.0, 2.0]
    assert dt.ids.tolist() == [1, 2, 3, 4]
    assert dt.scores.dtype == np.float64
    assert dt.xywh is None


def test_given_columns_are_kept():
    gt = make_gt(area=[1.5, 2.5, 3.5], iscrowd=[0, 1, 0], ignore=[1, 0, 0], ids=[7, 8, 9],
                 xywh=[[0, 0, 10, 10], [5, 5, 15, 25], [1, 2, 3, 6]])
    assert gt.area.tolist() == [1.5, 2.5, 3.5]
    assert gt.iscrowd.tolist() == [False, True, False]
    assert gt.ignore.tolist() == [True, False, False]
    assert gt.ids.tolist() == [7, 8, 9]
    assert gt.xywh.tolist() == [[0, 0, 10, 10], [5, 5, 15, 25], [1, 2, 3, 6]]


def test_empty_columns():
    gt = GroundTruth(image_index=[], category_index=[], boxes=[])
    assert len(gt) == 0 and gt.boxes.shape == (0, 4) and gt.area.shape == (0,)
    dt = Detections(image_index=[], category_index=[], boxes=np.zeros((0, 4)), scores=[])
    assert len(dt) == 0 and dt.ids.shape == (0,)
    assert len(dt[dt.scores > 0.5]) == 0


def test_images_and_categories_defaults():
    images = Images(ids=[3, 1])
    assert len(images) == 2
    assert np.isnan(images.widths).all() and np.isnan(images.heights).all()
    assert images.file_names == ("", "")
    categories = Categories(ids=[5, 2])
    assert categories.names == ("5", "2")
    assert categories.supercategories == ("", "")
    assert categories.index_of(2) == 1
    with pytest.raises(KeyError):
        categories.index_of(4)


# --------------------------------------------------------------------------------------------
# Copies and read-only arrays
# --------------------------------------------------------------------------------------------


def test_caller_arrays_are_copied():
    boxes = np.array([[0.0, 0, 10, 10], [5, 5, 20, 30], [1, 2, 4, 8]])
    image_index = np.array([0, 0, 1])
    area = np.array([1.0, 2.0, 3.0])
    gt = make_gt(boxes=boxes, image_index=image_index, area=area)
    for mine, theirs in ((gt.boxes, boxes), (gt.image_index, image_index), (gt.area, area)):
        assert not np.shares_memory(mine, theirs)
    boxes[0, 0] = 99.0
    image_index[0] = 5
    area[0] = -1.0
    assert gt.boxes[0, 0] == 0.0 and gt.image_index[0] == 0 and gt.area[0] == 1.0
    # The caller's arrays stay writable: only the copies are frozen.
    assert boxes.flags.writeable and image_index.flags.writeable


def test_detection_arrays_are_copied():
    scores = np.array([0.9, 0.5, 0.7, 0.1])
    dt = make_dt(scores=scores)
    assert not np.shares_memory(dt.scores, scores)
    scores[:] = 0
    assert dt.scores.tolist() == [0.9, 0.5, 0.7, 0.1]


@pytest.mark.parametrize("name", ["image_index", "category_index", "boxes", "area", "iscrowd",
                                  "ignore", "ids", "xywh"])
def test_ground_truth_arrays_are_read_only(name):
    gt = make_gt(xywh=[[0, 0, 10, 10], [5, 5, 15, 25], [1, 2, 3, 6]])
    array = getattr(gt, name)
    assert not array.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        array[0] = 1


@pytest.mark.parametrize("name", ["image_index", "category_index", "boxes", "scores", "area",
                                  "ids"])
def test_detection_arrays_are_read_only(name):
    array = getattr(make_dt(), name)
    with pytest.raises(ValueError, match="read-only"):
        array[0] = 1


def test_table_arrays_are_read_only():
    images = Images(ids=[1, 2], widths=[640, 320], heights=[480, 240])
    for array in (images.ids, images.widths, images.heights, Categories(ids=[1]).ids):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0


def test_instances_are_frozen():
    gt, dt = make_gt(), make_dt()
    with pytest.raises(dataclasses.FrozenInstanceError):
        gt.boxes = np.zeros((3, 4))
    with pytest.raises(dataclasses.FrozenInstanceError):
        dt.scores = np.zeros(4)


def test_read_only_array_is_accepted_and_copied():
    frozen = np.array([0.9, 0.5, 0.7, 0.1])
    frozen.setflags(write=False)
    dt = make_dt(scores=frozen)
    assert not np.shares_memory(dt.scores, frozen)


# --------------------------------------------------------------------------------------------
# Shape errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param({"boxes": [[0, 0, 1], [0, 0, 1], [0, 0, 1]]},
                     r"boxes must have shape \(n, 4\); got \(3, 3\)", id="boxes-3-columns"),
        pytest.param({"boxes": [0, 0, 1, 1]}, r"boxes must have shape \(n, 4\); got \(4,\)",
                     id="boxes-flat"),
        pytest.param({"boxes": [[0, 0, 1, 1]] * 2},
                     r"boxes must have length 3 like the other columns; got 2",
                     id="boxes-too-few"),
        pytest.param({"category_index": [0, 1]},
                     r"category_index must have length 3 like the other columns; got 2",
                     id="category-index-short"),
        pytest.param({"area": [1.0] * 4}, r"area must have length 3", id="area-long"),
        pytest.param({"iscrowd": [0]}, r"iscrowd must have length 3", id="iscrowd-short"),
        pytest.param({"ignore": [[0, 0, 0]]}, r"ignore must have shape \(n,\); got \(1, 3\)",
                     id="ignore-2d"),
        pytest.param({"ids": [1, 2]}, r"ids must have length 3", id="ids-short"),
        pytest.param({"xywh": [[0, 0, 1, 1]]}, r"xywh must have length 3", id="xywh-short"),
        pytest.param({"image_index": [[0, 0, 1]]}, r"image_index must have shape \(n,\)",
                     id="image-index-2d"),
    ],
)
def test_ground_truth_shape_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        make_gt(**overrides)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param({"scores": [0.5]}, r"scores must have length 4", id="scores-short"),
        pytest.param({"scores": [[0.5] * 4]}, r"scores must have shape \(n,\)", id="scores-2d"),
        pytest.param({"boxes": np.zeros((4, 5))}, r"boxes must have shape \(n, 4\); got \(4, 5\)",
                     id="boxes-5-columns"),
        pytest.param({"ids": [1, 2, 3]}, r"ids must have length 4", id="ids-short"),
    ],
)
def test_detection_shape_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        make_dt(**overrides)


@pytest.mark.parametrize("overrides", [
    pytest.param({"image_index": [0.9, 0, 1]}, id="fractional-image-index"),
    pytest.param({"ids": [1.5, 2, 3]}, id="fractional-ids"),
])
def test_fractional_integer_columns_are_rejected(overrides):
    with pytest.raises(ValueError):
        make_gt(**overrides)


def test_table_length_errors():
    with pytest.raises(ValueError, match="widths must have length 2"):
        Images(ids=[1, 2], widths=[1.0])
    with pytest.raises(ValueError, match="file_names must have length 2; got 1"):
        Images(ids=[1, 2], file_names=("a.jpg",))
    with pytest.raises(ValueError, match="names and supercategories must have length 2"):
        Categories(ids=[1, 2], names=("cat",))


def test_dataset_checks_indices():
    images, categories = Images(ids=[1, 2]), Categories(ids=[1, 2])
    with pytest.raises(ValueError, match="gt.image_index must index the images table"):
        Dataset(images=images, categories=categories, gt=make_gt(image_index=[0, 0, 2]))
    with pytest.raises(ValueError, match="gt.category_index must index the categories table"):
        Dataset(images=images, categories=categories, gt=make_gt(category_index=[0, -1, 1]))
    dataset = Dataset(images=images, categories=categories, gt=make_gt(), source="x.json")
    assert "x.json" in repr(dataset)


# --------------------------------------------------------------------------------------------
# Filtering
# --------------------------------------------------------------------------------------------


def test_mask_filtering_returns_a_new_instance():
    dt = make_dt(xywh=[[0, 0, 10, 9], [1, 2, 3, 6], [0, 0, 1, 1], [3, 3, 1, 2]])
    kept = dt[dt.scores > 0.6]
    assert isinstance(kept, Detections) and kept is not dt
    assert kept.scores.tolist() == [0.9, 0.7]
    assert kept.ids.tolist() == [1, 3]  # ids travel with their rows
    assert kept.boxes.tolist() == [[0, 0, 10, 9], [0, 0, 1, 1]]
    assert kept.xywh.tolist() == [[0, 0, 10, 9], [0, 0, 1, 1]]
    assert kept.area.tolist() == [90.0, 1.0]
    assert not kept.scores.flags.writeable
    assert not np.shares_memory(kept.boxes, dt.boxes)
    assert len(dt) == 4 and dt.scores.tolist() == [0.9, 0.5, 0.7, 0.1]  # the original unchanged


def test_index_and_slice_filtering():
    gt = make_gt(area=[1.0, 2.0, 3.0], iscrowd=[0, 1, 0], ids=[10, 20, 30])
    picked = gt[np.array([2, 0])]
    assert picked.ids.tolist() == [30, 10]
    assert picked.area.tolist() == [3.0, 1.0]
    assert gt[1:].iscrowd.tolist() == [True, False]
    single = gt[1]
    assert len(single) == 1 and single.ids.tolist() == [20]
    assert len(gt[np.zeros(3, bool)]) == 0


def test_filtering_keeps_given_area_not_box_area():
    gt = make_gt(area=[7.0, 8.0, 9.0])
    assert gt[gt.area > 7.5].area.tolist() == [8.0, 9.0]


def test_replace_returns_a_new_frozen_instance():
    dt = make_dt()
    changed = dt.replace(scores=[1.0, 2.0, 3.0, 4.0])
    assert changed.scores.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert not changed.scores.flags.writeable
    assert dt.scores.tolist() == [0.9, 0.5, 0.7, 0.1]


def test_repr():
    assert repr(make_gt(iscrowd=[0, 1, 1])) == "GroundTruth(n=3, crowd=2, ignore=0)"
    assert repr(make_dt()) == "Detections(n=4)"


# --------------------------------------------------------------------------------------------
# Dataset.detections: arrays from a training loop
# --------------------------------------------------------------------------------------------


def _demo_dataset():
    from deteval.demo import make_demo

    gt, results = make_demo(seed=3, n_images=6)
    return deteval.read_coco_gt(gt), results


def test_dataset_detections_from_xywh_equal_the_results_reader():
    dataset, results = _demo_dataset()
    from_reader = deteval.read_coco_results(results, dataset)
    from_arrays = dataset.detections(
        image_ids=[r["image_id"] for r in results],
        category_ids=[r["category_id"] for r in results],
        boxes=[r["bbox"] for r in results], scores=[r["score"] for r in results],
        box_format="xywh")
    for name in ("image_index", "category_index", "boxes", "scores", "area", "xywh"):
        assert np.array_equal(getattr(from_arrays, name), getattr(from_reader, name)), name
    a = deteval.evaluate_coco(dataset, from_arrays)
    b = deteval.evaluate_coco(dataset, results)
    assert np.array_equal(a.precision, b.precision) and np.array_equal(a.stats, b.stats)


def test_dataset_detections_normalised_boxes_use_each_image_size():
    images = Images(ids=[1, 2], widths=[100, 200], heights=[50, 100])
    dataset = Dataset(images, Categories(ids=[1]),
                      GroundTruth(image_index=[], category_index=[], boxes=[]))
    dt = dataset.detections(image_ids=[1, 2], category_ids=[1, 1],
                            boxes=[[0.1, 0.2, 0.3, 0.4]] * 2, scores=[0.5, 0.6],
                            box_format="xyxyn")
    assert dt.boxes.tolist() == [[10.0, 10.0, 30.0, 20.0], [20.0, 20.0, 60.0, 40.0]]
    assert dt.xywh is None


def test_dataset_detections_unknown_image_is_an_error_naming_it():
    dataset, _ = _demo_dataset()
    with pytest.raises(ValueError, match=r"image_ids\[1\] = 999 is not"):
        dataset.detections(image_ids=[1, 999], category_ids=[1, 1],
                           boxes=[[0, 0, 1, 1]] * 2, scores=[0.1, 0.2])


def test_dataset_detections_unknown_category_is_kept_for_dropping():
    dataset, _ = _demo_dataset()
    dt = dataset.detections(image_ids=[1], category_ids=[42], boxes=[[0, 0, 1, 1]],
                            scores=[0.1])
    assert dt.category_index.tolist() == [-1] and dt.category_ids.tolist() == [42]


@settings(max_examples=300, deadline=None)
@given(ids=st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-5, 40), max_size=30),
       values=st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-8, 45), max_size=60))
def test_index_in_is_the_first_occurrence_or_minus_one(ids, values):
    """Dense ids take a lookup table, sparse ones a sorted search: both give the row of a
    value's first occurrence in ``ids``, -1 where it is absent, including int64 extremes."""
    from deteval.data import index_in

    expected = [ids.index(v) if v in ids else -1 for v in values]
    assert index_in(np.array(values, dtype=np.int64),
                    np.array(ids, dtype=np.int64)).tolist() == expected


@pytest.mark.parametrize("source", ["file", "list", "array"])
def test_read_detections_own_their_arrays_and_never_alias_the_input(source, tmp_path):
    """The COCO results reader hands its fresh arrays to Detections without a copy; they
    are read-only, and none shares memory with what the caller passed."""
    import json

    from deteval.io.coco import read_coco_results

    gt = {"images": [{"id": 1, "width": 10, "height": 10}],
          "categories": [{"id": 3, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 3, "bbox": [0, 0, 2, 2],
                           "area": 4, "iscrowd": 0}]}
    dataset = deteval.read_coco_gt(gt)
    rows = np.array([[1, 0.0, 0.0, 2.0, 2.0, 0.9, 3], [1, 1.0, 1.0, 2.0, 3.0, 0.8, 3]])
    if source == "file":
        path = tmp_path / "dt.json"
        path.write_text(json.dumps([{"image_id": 1, "category_id": 3, "bbox": r[1:5].tolist(),
                                     "score": r[5]} for r in rows]))
        given = path
    elif source == "list":
        given = [{"image_id": 1, "category_id": 3, "bbox": r[1:5].tolist(), "score": r[5]}
                 for r in rows]
    else:
        given = rows
    detections = read_coco_results(given, dataset)
    columns = [detections.image_index, detections.category_index, detections.boxes,
               detections.scores, detections.area, detections.xywh, detections.category_ids]
    for column in columns:
        assert not column.flags.writeable
        assert not np.shares_memory(column, rows)
    assert detections.xywh.tolist() == rows[:, 1:5].tolist()
    assert detections.area.tolist() == [4.0, 6.0]
    rows[:, 1:5] = -1.0                                   # the caller's array is its own
    assert detections.xywh.tolist() == [[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 2.0, 3.0]]


def test_owned_arrays_of_another_dtype_are_still_converted():
    from deteval.data import owned

    detections = Detections(image_index=owned(np.array([0, 0], dtype=np.int32)),
                            category_index=np.array([0, 0]),
                            boxes=owned(np.array([[0, 0, 1, 1], [0, 0, 2, 2]])),
                            scores=owned(np.array([0.5, 0.25], dtype=np.float32)))
    assert detections.image_index.dtype == np.int64
    assert detections.boxes.dtype == np.float64 and detections.scores.dtype == np.float64
    assert detections.scores.tolist() == [0.5, 0.25]


def test_owned_keypoints_are_kept_and_given_keypoints_copied():
    """A reader's fresh keypoint table (``owned``) is kept as it is, made read-only; a
    caller's table is copied (never aliased), another dtype converted."""
    from deteval.data import owned

    fresh = np.arange(12, dtype=np.float64).reshape(2, 2, 3)
    given = fresh.copy()
    columns = dict(image_index=[0, 0], category_index=[0, 0],
                   boxes=[[0, 0, 1, 1], [0, 0, 2, 2]], scores=[0.5, 0.25])
    kept = Detections(**columns, keypoints=owned(fresh)).keypoints
    assert kept is fresh and not fresh.flags.writeable
    copied = Detections(**columns, keypoints=given).keypoints
    assert not np.shares_memory(copied, given) and given.flags.writeable
    converted = Detections(**columns, keypoints=owned(given.astype(np.float32))).keypoints
    assert converted.dtype == np.float64 and converted.tolist() == given.tolist()
    objects = GroundTruth(image_index=[0], category_index=[0], boxes=[[0, 0, 1, 1]],
                          keypoints=owned(fresh[:1].copy()))
    assert objects.keypoints.tolist() == fresh[:1].tolist()
