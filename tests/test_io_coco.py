"""Tests of the COCO readers and writer (deteval.io.coco): every bad input and its message.

Each bad input asserts that the message names the file (for files), the record (index or id)
and what was expected; the success cases check the conversion into columns.
"""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval import FormatError, read_coco_gt, read_coco_results, write_coco_results

NAN, INF = float("nan"), float("inf")


def gt_dict() -> dict:
    """Three images (ids out of order), two categories, four annotations.

    annotations[1] is a crowd region, annotations[2] has neither ``area`` nor ``iscrowd``,
    annotations[3] has ``ignore: 1``.
    """
    return {
        "info": {"description": "test"},
        "images": [
            {"id": 5, "width": 640, "height": 480, "file_name": "five.jpg"},
            {"id": 1, "width": 320, "height": 240, "file_name": "one.jpg"},
            {"id": 2},
        ],
        "categories": [
            {"id": 3, "name": "cat", "supercategory": "animal"},
            {"id": 1, "name": "person"},
        ],
        "annotations": [
            {"id": 10, "image_id": 5, "category_id": 3, "bbox": [0.1, 0.2, 0.3, 0.7],
             "area": 0.15, "iscrowd": 0},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [5, 5, 10, 20], "area": 150,
             "iscrowd": 1},
            {"id": 3, "image_id": 2, "category_id": 1, "bbox": [1, 1, 2.5, 4]},
            {"id": 4, "image_id": 5, "category_id": 1, "bbox": [10, 20, 30, 40], "area": 999,
             "iscrowd": 0, "ignore": 1},
        ],
    }


def results_list() -> list:
    """Four results; results[3] has a category that is not in the ground truth."""
    return [
        {"image_id": 5, "category_id": 3, "bbox": [0.1, 0.2, 0.3, 0.6], "score": 0.9},
        {"image_id": 2, "category_id": 1, "bbox": [1, 1, 2.5, 4], "score": 0.25},
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 7, 3], "score": 0.5},
        {"image_id": 1, "category_id": 42, "bbox": [1, 2, 3, 4], "score": 0.7},
    ]


@pytest.fixture
def dataset():
    return read_coco_gt(gt_dict())


def write_json(path: Path, content) -> Path:
    """Write with the standard json module (which, like json.dump, writes NaN as NaN)."""
    path.write_text(json.dumps(content) if not isinstance(content, str) else content)
    return path


def expect(message: str, *, source: str | Path | None = None, record: str | None = None):
    """``pytest.raises(FormatError, match=...)`` for ``source: record: message``.

    ``message`` is a regular expression; ``source`` and ``record`` are literal.
    """
    if record is not None and record.startswith("["):
        record = "results" + record  # records of a plain results list are named results[i]
    prefix = "".join(re.escape(f"{part}: ") for part in (source, record) if part is not None)
    return pytest.raises(FormatError, match="^" + prefix + message)


# --------------------------------------------------------------------------------------------
# Ground truth: bad input
# --------------------------------------------------------------------------------------------


def _drop(key):
    return lambda gt: gt.pop(key)


def _set_annotation(index, key, value):
    return lambda gt: gt["annotations"][index].__setitem__(key, value)


def _del_annotation(index, key):
    return lambda gt: gt["annotations"][index].pop(key)


def _set(section, index, key, value):
    return lambda gt: gt[section][index].__setitem__(key, value)


GT_ERRORS = [
    # (change, record, message regex)
    pytest.param(_drop("images"), None,
                 r"missing 'images': a COCO instances file needs 'images', 'annotations' and "
                 r"'categories'$", id="missing-images"),
    pytest.param(_drop("annotations"), None, r"missing 'annotations'", id="missing-annotations"),
    pytest.param(_drop("categories"), None, r"missing 'categories'", id="missing-categories"),
    pytest.param(lambda gt: gt.__setitem__("annotations", {"id": 1}), None,
                 r"'annotations' must be a list; got dict$", id="annotations-not-a-list"),
    pytest.param(lambda gt: gt.__setitem__("images", None), None,
                 r"'images' must be a list; got NoneType$", id="images-null"),
    pytest.param(_set_annotation(2, "bbox", [0, "1.5", 1, 1]), "annotations[2]",
                 re.escape("'bbox' must hold numbers; got [0, '1.5', 1, 1]"),
                 id="bbox-string-number"),
    pytest.param(_set_annotation(2, "bbox", None), "annotations[2]",
                 re.escape("'bbox' must be a list of 4 numbers [x, y, w, h]; got None"),
                 id="bbox-null"),
    pytest.param(_set_annotation(2, "bbox", [0, None, 1, 1]), "annotations[2]",
                 re.escape("'bbox' must hold numbers; got [0, None, 1, 1]"),
                 id="bbox-null-coordinate"),
    pytest.param(_set_annotation(3, "bbox", [0, 1, 1]), "annotations[3]",
                 re.escape("'bbox' must be a list of 4 numbers [x, y, w, h]; got [0, 1, 1]"),
                 id="bbox-3-numbers"),
    pytest.param(_set_annotation(0, "bbox", [0, 1, 1, 2, 3]), "annotations[0]",
                 re.escape("'bbox' must be a list of 4 numbers [x, y, w, h]; got [0, 1, 1, 2, 3]"),
                 id="bbox-5-numbers"),
    pytest.param(_set_annotation(1, "bbox", "0 0 1 1"), "annotations[1]",
                 re.escape("'bbox' must be a list of 4 numbers [x, y, w, h]; got '0 0 1 1'"),
                 id="bbox-string"),
    pytest.param(_del_annotation(2, "bbox"), "annotations[2]", r"missing 'bbox'$",
                 id="bbox-missing"),
    pytest.param(_set_annotation(3, "bbox", [0, 1, -1, 1]), "annotations[3]",
                 re.escape("'bbox' width and height must be >= 0; got [0, 1, -1, 1]"),
                 id="bbox-negative-width"),
    pytest.param(_set_annotation(3, "bbox", [0, 1, 1, -0.5]), "annotations[3]",
                 re.escape("'bbox' width and height must be >= 0; got [0, 1, 1, -0.5]"),
                 id="bbox-negative-height"),
    pytest.param(_set_annotation(1, "id", 4), "annotations[3]",
                 re.escape("duplicate id 4 (also used by annotations[1]); ids must be unique"),
                 id="duplicate-annotation-id"),
    pytest.param(_set_annotation(2, "id", 0), "annotations[2]",
                 r"annotation id must be > 0; got 0 \(pycocotools treats id 0 as 'unmatched'",
                 id="annotation-id-0"),
    pytest.param(_set_annotation(1, "id", -7), "annotations[1]",
                 r"annotation id must be > 0; got -7", id="annotation-id-negative"),
    pytest.param(_del_annotation(1, "id"), "annotations[1]", r"missing 'id'$",
                 id="annotation-id-missing"),
    pytest.param(_set_annotation(1, "id", "2"), "annotations[1]",
                 r"'id' must be a number; got '2'$", id="annotation-id-string"),
    pytest.param(_set_annotation(1, "id", 2.5), "annotations[1]",
                 r"'id' must be an integer that fits in 64 bits; got 2.5$",
                 id="annotation-id-fraction"),
    pytest.param(_set_annotation(1, "image_id", 99), "annotations[1] (id 2)",
                 r"image_id 99 is not in 'images'$", id="image-id-unknown"),
    pytest.param(_set_annotation(2, "category_id", 7), "annotations[2] (id 3)",
                 r"category_id 7 is not in 'categories'$", id="category-id-unknown"),
    pytest.param(_del_annotation(0, "image_id"), "annotations[0]", r"missing 'image_id'$",
                 id="image-id-missing"),
    pytest.param(_set_annotation(3, "area", "big"), "annotations[3]",
                 r"'area' must be a number; got 'big'$", id="area-string"),
    pytest.param(_set_annotation(0, "iscrowd", "0"), "annotations[0]",
                 r"'iscrowd' must be a number; got '0'$", id="iscrowd-string"),
    pytest.param(lambda gt: gt["annotations"].__setitem__(2, [1, 2, 3, 4]), "annotations[2]",
                 r"must be a JSON object; got list$", id="annotation-not-an-object"),
    pytest.param(_set("images", 2, "id", 5), "images[2]",
                 re.escape("duplicate id 5 (also used by images[0]); ids must be unique"),
                 id="duplicate-image-id"),
    pytest.param(_set("categories", 1, "id", 3), "categories[1]",
                 re.escape("duplicate id 3 (also used by categories[0])"),
                 id="duplicate-category-id"),
    pytest.param(lambda gt: gt["categories"][0].pop("id"), "categories[0]", r"missing 'id'$",
                 id="category-id-missing"),
    pytest.param(lambda gt: gt["images"].__setitem__(1, 1), "images[1]",
                 r"must be a JSON object; got int$", id="image-not-an-object"),
    pytest.param(_set("images", 0, "width", "640"), "images[0]",
                 r"'width' must be a number; got '640'$", id="image-width-string"),
]


@pytest.mark.parametrize(("change", "record", "message"), GT_ERRORS)
def test_gt_file_errors(tmp_path, change, record, message):
    gt = gt_dict()
    change(gt)
    path = write_json(tmp_path / "instances.json", gt)
    with expect(message, source=path, record=record) as info:
        read_coco_gt(path)
    assert info.value.source == str(path)
    assert info.value.record == record


@pytest.mark.parametrize(("change", "record", "message"), GT_ERRORS)
def test_gt_dict_errors(change, record, message):
    gt = gt_dict()
    change(gt)
    with expect(message, source="<dict>", record=record):
        read_coco_gt(gt)


# NaN and inf cannot be written in JSON files (see the next test): dicts only.
@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        pytest.param("bbox", [0, NAN, 1, 1], "'bbox' must hold finite numbers; got [0, nan, 1, 1]",
                     id="bbox-nan"),
        pytest.param("bbox", [INF, 0, 1, 1], "'bbox' must hold finite numbers; got [inf, 0, 1, 1]",
                     id="bbox-inf"),
        pytest.param("bbox", [0, 0, -INF, 1],
                     "'bbox' must hold finite numbers; got [0, 0, -inf, 1]", id="bbox-minus-inf"),
        pytest.param("area", NAN, "'area' must be finite; got nan", id="area-nan"),
        pytest.param("area", INF, "'area' must be finite; got inf", id="area-inf"),
    ],
)
def test_gt_non_finite_values(key, value, message):
    gt = gt_dict()
    gt["annotations"][3][key] = value
    with expect(re.escape(message) + "$", source="<dict>", record="annotations[3]"):
        read_coco_gt(gt)


def test_gt_bool_in_bbox():
    gt = gt_dict()
    gt["annotations"][2]["bbox"] = [0, True, 1, 1]
    with expect(re.escape("'bbox' must hold numbers; got [0, True, 1, 1]"), source="<dict>",
                record="annotations[2]"):
        read_coco_gt(gt)


def test_gt_error_names_the_bad_record_not_an_earlier_bool():
    gt = gt_dict()
    gt["annotations"][0]["iscrowd"] = True  # accepted when it is the only oddity
    gt["annotations"][2]["iscrowd"] = "x"
    with expect(r"'iscrowd' must be a number; got 'x'$", source="<dict>",
                record="annotations[2]"):
        read_coco_gt(gt)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param('{"images": [', r"not valid JSON: .*line 1 column", id="truncated"),
        pytest.param('{"images": [],}', r"not valid JSON: .*trailing comma", id="trailing-comma"),
        pytest.param("", r"ground truth file is empty$", id="empty"),
        pytest.param(" \n\t", r"ground truth file is empty$", id="whitespace-only"),
        pytest.param("[]", r"a COCO ground-truth file must hold a JSON object with 'images', "
                     r"'annotations' and 'categories'; got a list$", id="top-level-list"),
        pytest.param("null", r"a COCO ground-truth file must hold a JSON object", id="null"),
    ],
)
def test_gt_bad_files(tmp_path, content, message):
    path = write_json(tmp_path / "broken.json", content)
    with expect(message, source=path):
        read_coco_gt(path)


def test_gt_missing_file(tmp_path):
    path = tmp_path / "nowhere" / "instances.json"
    with expect(r"ground truth file does not exist$", source=path):
        read_coco_gt(path)
    with expect(r"ground truth file does not exist$", source=path):
        read_coco_gt(str(path))


def test_gt_directory(tmp_path):
    with expect(r"ground truth file expected, found a directory$", source=tmp_path):
        read_coco_gt(tmp_path)


def test_gt_top_level_list_object():
    with expect(r"a COCO ground-truth file must hold a JSON object .*; got a list$",
                source="<list>"):
        read_coco_gt([gt_dict()])


# --------------------------------------------------------------------------------------------
# Ground truth: success
# --------------------------------------------------------------------------------------------


def test_gt_columns():
    dataset = read_coco_gt(gt_dict())
    gt = dataset.gt
    assert dataset.source == "<dict>"
    assert dataset.images.ids.tolist() == [5, 1, 2]
    assert dataset.images.file_names == ("five.jpg", "one.jpg", "")
    assert dataset.images.widths[:2].tolist() == [640, 320]
    assert math.isnan(dataset.images.widths[2]) and math.isnan(dataset.images.heights[2])
    assert dataset.categories.ids.tolist() == [3, 1]
    assert dataset.categories.names == ("cat", "person")
    assert dataset.categories.supercategories == ("animal", "")
    assert gt.ids.tolist() == [10, 2, 3, 4]
    assert gt.image_index.tolist() == [0, 1, 2, 0]  # rows of the images table
    assert gt.category_index.tolist() == [0, 1, 1, 1]


def test_gt_xywh_kept_exactly_and_xyxy_converted():
    gt = read_coco_gt(gt_dict()).gt
    xywh = [a["bbox"] for a in gt_dict()["annotations"]]
    assert gt.xywh.dtype == np.float64
    assert gt.xywh.tolist() == [[float(v) for v in box] for box in xywh]
    expected = [[x, y, x + w, y + h] for x, y, w, h in xywh]  # float64 sums, as written
    assert gt.boxes.tolist() == expected
    assert gt.boxes[0].tolist() == [0.1, 0.2, 0.1 + 0.3, 0.2 + 0.7]


def test_gt_area_default_is_box_area_and_given_area_kept():
    gt = read_coco_gt(gt_dict()).gt
    assert gt.area.tolist() == [0.15, 150.0, 2.5 * 4, 999.0]


def test_gt_iscrowd_default_and_ignore_key():
    gt = read_coco_gt(gt_dict()).gt
    assert gt.iscrowd.tolist() == [False, True, False, False]
    assert gt.ignore.tolist() == [False, False, False, True]


def test_gt_integral_float_ids_accepted():
    gt = gt_dict()
    gt["annotations"][0]["id"] = 10.0
    assert read_coco_gt(gt).gt.ids.tolist() == [10, 2, 3, 4]


def test_gt_empty_lists():
    dataset = read_coco_gt({"images": [], "annotations": [], "categories": []})
    assert len(dataset.gt) == 0 and len(dataset.images) == 0 and len(dataset.categories) == 0
    assert dataset.gt.boxes.shape == (0, 4)


def test_gt_from_file_and_path_types(tmp_path):
    path = write_json(tmp_path / "gt.json", gt_dict())
    for source in (path, str(path)):
        dataset = read_coco_gt(source)
        assert dataset.source == str(path)
        assert dataset.gt.xywh.tolist() == read_coco_gt(gt_dict()).gt.xywh.tolist()


def test_gt_reading_does_not_modify_the_dict():
    gt = gt_dict()
    before = copy.deepcopy(gt)
    read_coco_gt(gt)
    assert gt == before


# --------------------------------------------------------------------------------------------
# Results: bad input
# --------------------------------------------------------------------------------------------


def _result(index, **changes):
    def change(results):
        results[index].update(changes)
    return change


def _result_without(index, key):
    return lambda results: results[index].pop(key)


RESULT_ERRORS = [
    pytest.param(_result(1, image_id=77), "[1]",
                 r"image_id 77 is not an image of the ground truth \(.*\); 1 of \d+ "
                 r"result\(s\) \(\d+\.\d%\) refer to unknown images$", id="image-id-unknown"),
    pytest.param(_result(2, bbox=[0, "1.5", 1, 1]), "[2]",
                 re.escape("'bbox' must hold numbers; got [0, '1.5', 1, 1]"),
                 id="bbox-string-number"),
    pytest.param(_result(0, bbox=None), "[0]",
                 re.escape("'bbox' must be a list of 4 numbers [x, y, w, h]; got None"),
                 id="bbox-null"),
    pytest.param(_result(1, bbox=[1, 2, 3]), "[1]",
                 re.escape("'bbox' must be a list of 4 numbers [x, y, w, h]; got [1, 2, 3]"),
                 id="bbox-3-numbers"),
    pytest.param(_result(1, bbox={"x": 1}), "[1]",
                 re.escape("'bbox' must be a list of 4 numbers [x, y, w, h]; got {'x': 1}"),
                 id="bbox-object"),
    pytest.param(_result_without(3, "bbox"), "[3]", r"missing 'bbox'$", id="bbox-missing"),
    pytest.param(_result(2, bbox=[0, 0, -1, 2]), "[2]",
                 re.escape("'bbox' width and height must be >= 0; got [0, 0, -1, 2]"),
                 id="bbox-negative-width"),
    pytest.param(_result(2, bbox=[0, 0, 1, -2]), "[2]",
                 re.escape("'bbox' width and height must be >= 0; got [0, 0, 1, -2]"),
                 id="bbox-negative-height"),
    pytest.param(_result_without(1, "score"), "[1]", r"missing 'score'$", id="score-missing"),
    pytest.param(_result(1, score="0.5"), "[1]", r"'score' must be a number; got '0.5'$",
                 id="score-string"),
    pytest.param(_result(1, score=None), "[1]", r"'score' must be a number; got None$",
                 id="score-null"),
    pytest.param(_result_without(0, "image_id"), "[0]", r"missing 'image_id'$",
                 id="image-id-missing"),
    pytest.param(_result_without(3, "category_id"), "[3]", r"missing 'category_id'$",
                 id="category-id-missing"),
    pytest.param(_result(3, category_id=1.5), "[3]",
                 r"'category_id' must be an integer that fits in 64 bits; got 1.5$",
                 id="category-id-fraction"),
    pytest.param(lambda results: results.__setitem__(2, "det"), "[2]",
                 r"must be a JSON object; got str$", id="record-not-an-object"),
]


@pytest.mark.parametrize(("change", "record", "message"), RESULT_ERRORS)
def test_results_file_errors(tmp_path, dataset, change, record, message):
    results = results_list()
    change(results)
    path = write_json(tmp_path / "detections.json", results)
    with expect(message, source=path, record=record) as info:
        read_coco_results(path, dataset)
    assert info.value.source == str(path) and info.value.record == "results" + record


@pytest.mark.parametrize(("change", "record", "message"), RESULT_ERRORS)
def test_results_list_errors(dataset, change, record, message):
    results = results_list()
    change(results)
    with expect(message, source="<list>", record=record):
        read_coco_results(results, dataset)


@pytest.mark.parametrize(("change", "record", "message"), RESULT_ERRORS)
def test_results_annotations_object_errors(dataset, change, record, message):
    results = results_list()
    change(results)
    with expect(message, source="<dict>", record="annotations" + record):
        read_coco_results({"annotations": results}, dataset)


def test_unknown_image_names_the_ground_truth_file(tmp_path):
    gt_path = write_json(tmp_path / "instances.json", gt_dict())
    results = results_list()
    results[2]["image_id"] = 1234
    results[3]["image_id"] = 1235
    dt_path = write_json(tmp_path / "detections.json", results)
    n = len(results)
    message = (f"image_id 1234 is not an image of the ground truth ({gt_path}); "
               f"2 of {n} result(s) ({200 / n:.1f}%) refer to unknown images")
    with expect(re.escape(message) + "$", source=dt_path, record="[2]"):
        read_coco_results(dt_path, read_coco_gt(gt_path))


@pytest.mark.parametrize(
    ("change", "record", "message"),
    [
        pytest.param(_result(1, score=NAN), "[1]", r"'score' must be finite; got nan$",
                     id="score-nan"),
        pytest.param(_result(2, score=-INF), "[2]", r"'score' must be finite; got -inf$",
                     id="score-minus-inf"),
        pytest.param(_result(0, bbox=[0, 0, NAN, 1]), "[0]",
                     re.escape("'bbox' must hold finite numbers; got [0, 0, nan, 1]"),
                     id="bbox-nan"),
        pytest.param(_result(3, bbox=[INF, 0, 1, 1]), "[3]",
                     re.escape("'bbox' must hold finite numbers; got [inf, 0, 1, 1]"),
                     id="bbox-inf"),
    ],
)
def test_results_non_finite_in_list(dataset, change, record, message):
    results = results_list()
    change(results)
    with expect(message, source="<list>", record=record):
        read_coco_results(results, dataset)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(_result(1, bbox=[0, 0, True, 1]), "'bbox' must hold numbers",
                     id="bool-in-bbox"),
        pytest.param(_result(1, score=True), "'score' must be a number; got True",
                     id="bool-score"),
    ],
)
def test_results_bools_are_rejected(dataset, change, message):
    results = results_list()
    change(results)
    with expect(re.escape(message), source="<list>", record="[1]"):
        read_coco_results(results, dataset)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("[{]", r"not valid JSON: ", id="malformed"),
        pytest.param("", r"results file is empty$", id="empty"),
        pytest.param("42", r"results must be a list of detections; got int$", id="number"),
        pytest.param('{"detections": []}', r"results must be a list of detections or an object "
                     r"with an 'annotations' list$", id="object-without-annotations"),
    ],
)
def test_results_bad_files(tmp_path, dataset, content, message):
    path = write_json(tmp_path / "dt.json", content)
    with expect(message, source=path):
        read_coco_results(path, dataset)


def test_results_missing_file_and_directory(tmp_path, dataset):
    with expect(r"results file does not exist$", source=tmp_path / "dt.json"):
        read_coco_results(tmp_path / "dt.json", dataset)
    with expect(r"results file expected, found a directory$", source=tmp_path):
        read_coco_results(str(tmp_path), dataset)


def test_results_of_wrong_type(dataset):
    with expect(r"results must be a list of detections; got int$", source="<int>"):
        read_coco_results(3, dataset)
    with expect(r"results must be a list of detections or an object", source="<dict>"):
        read_coco_results({"images": []}, dataset)


# --------------------------------------------------------------------------------------------
# Results: arrays
# --------------------------------------------------------------------------------------------


def results_array() -> np.ndarray:
    return np.array([[image_id, *bbox, score, category_id]
                     for image_id, category_id, bbox, score in
                     ((r["image_id"], r["category_id"], r["bbox"], r["score"])
                      for r in results_list())], dtype=np.float64)


def test_results_array_equals_list(dataset):
    from_list = read_coco_results(results_list(), dataset)
    from_array = read_coco_results(results_array(), dataset)
    for name in ("image_index", "category_index", "boxes", "xywh", "scores", "area", "ids"):
        assert np.array_equal(getattr(from_list, name), getattr(from_array, name)), name


def test_results_integer_array(dataset):
    array = np.array([[5, 0, 0, 10, 10, 1, 3], [1, 2, 2, 4, 4, 0, 1]])
    dt = read_coco_results(array, dataset)
    assert dt.image_index.tolist() == [0, 1]
    assert dt.category_index.tolist() == [0, 1]
    assert dt.scores.dtype == np.float64


def _array_with(row, column, value):
    array = results_array()
    array[row, column] = value
    return array


@pytest.mark.parametrize(
    ("array", "record", "message"),
    [
        pytest.param(results_array()[:, :6], None,
                     re.escape("a results array must have shape (N, 7) with columns image_id, "
                               "x, y, w, h, score, category_id; got (4, 6)"), id="6-columns"),
        pytest.param(results_array()[0], None, r"a results array must have shape \(N, 7\).*"
                     r"got \(7,\)$", id="one-dimensional"),
        pytest.param(results_array()[None], None, r"a results array must have shape \(N, 7\)"
                     r".*got \(1, 4, 7\)$", id="three-dimensional"),
        pytest.param(_array_with(2, 5, np.nan), "row 2",
                     r"row must hold finite numbers; got \[1\.0, 0\.0, 0\.0, 7\.0, 3\.0, nan, "
                     r"1\.0\]$", id="nan-score"),
        pytest.param(_array_with(1, 2, np.inf), "row 1", r"row must hold finite numbers",
                     id="inf-coordinate"),
        pytest.param(_array_with(3, 4, -1), "row 3", r"box width and height must be >= 0",
                     id="negative-height"),
        pytest.param(_array_with(0, 0, 77), "row 0",
                     r"image_id 77 is not an image of the ground truth", id="unknown-image"),
        pytest.param(_array_with(1, 0, 1.5), "row 1", r"image_id must be an integer; got 1\.5$",
                     id="fractional-image-id"),
        pytest.param(_array_with(1, 6, 2.5), "row 1",
                     r"category_id must be an integer; got 2\.5$", id="fractional-category"),
        pytest.param(np.full((2, 7), "x"), None, r"a results array must hold numbers$",
                     id="strings"),
    ],
)
def test_results_bad_arrays(dataset, array, record, message):
    with expect(message, source="<ndarray>", record=record):
        read_coco_results(array, dataset)


# --------------------------------------------------------------------------------------------
# Results: success
# --------------------------------------------------------------------------------------------


def test_results_columns(dataset):
    dt = read_coco_results(results_list(), dataset)
    xywh = [r["bbox"] for r in results_list()]
    assert len(dt) == 4
    assert dt.image_index.tolist() == [0, 2, 1, 1]
    assert dt.category_index.tolist() == [0, 1, 1, -1]  # 42 is not a ground-truth category
    assert dt.ids.tolist() == [1, 2, 3, 4]  # loadRes: 1..N in input order
    assert dt.scores.tolist() == [0.9, 0.25, 0.5, 0.7]
    assert dt.xywh.tolist() == [[float(v) for v in box] for box in xywh]
    assert dt.boxes.tolist() == [[x, y, x + w, y + h] for x, y, w, h in xywh]
    assert dt.area.tolist() == [w * h for _, _, w, h in xywh]  # loadRes: area = w * h


def test_results_as_annotations_object(dataset):
    dt = read_coco_results({"annotations": results_list()}, dataset)
    assert dt.scores.tolist() == [0.9, 0.25, 0.5, 0.7]
    assert dt.category_index.tolist() == [0, 1, 1, -1]


def test_results_tuple_and_file(tmp_path, dataset):
    path = write_json(tmp_path / "dt.json", {"annotations": results_list()})
    for source in (tuple(results_list()), path, str(path)):
        assert read_coco_results(source, dataset).scores.tolist() == [0.9, 0.25, 0.5, 0.7]


def test_empty_results_are_not_an_error(tmp_path, dataset):
    assert len(read_coco_results([], dataset)) == 0
    path = write_json(tmp_path / "dt.json", [])
    dt = read_coco_results(path, dataset)
    assert len(dt) == 0 and dt.boxes.shape == (0, 4)
    assert len(read_coco_results(np.zeros((0, 7)), dataset)) == 0


def test_empty_results_give_a_no_detections_result(tmp_path):
    path = write_json(tmp_path / "dt.json", [])
    result = deteval.evaluate_coco(gt_dict(), path)
    assert any("no detections" in note for note in result.notes)
    assert result.stat("AP") == 0.0 and result.stat("AR100") == 0.0


def test_unknown_category_results_are_dropped_and_counted(dataset):
    result = deteval.evaluate_coco(dataset, results_list())
    assert result.notes == ("1 detection(s) dropped: their category_id is not a ground-truth "
                            "category (pycocotools drops them too)",)
    without = deteval.evaluate_coco(dataset, results_list()[:3])
    assert np.array_equal(result.stats, without.stats)


def test_reading_results_does_not_modify_inputs(dataset):
    results = results_list()
    before = copy.deepcopy(results)
    read_coco_results(results, dataset)
    read_coco_results({"annotations": results}, dataset)
    assert results == before
    array = results_array()
    array_before = array.copy()
    read_coco_results(array, dataset)
    assert np.array_equal(array, array_before) and array.flags.writeable


def test_evaluation_does_not_modify_inputs():
    gt, results = gt_dict(), results_list()
    gt_before, results_before = copy.deepcopy(gt), copy.deepcopy(results)
    deteval.evaluate_coco(gt, results)
    assert gt == gt_before and results == results_before


# --------------------------------------------------------------------------------------------
# Writer
# --------------------------------------------------------------------------------------------


COLUMNS = ("image_index", "category_index", "boxes", "xywh", "scores", "area", "ids")


def test_write_read_round_trip(tmp_path, dataset):
    results = results_list()[:3]
    first = read_coco_results(results, dataset)
    path = tmp_path / "out.json"
    assert write_coco_results(first, dataset, path) == 3
    assert json.loads(path.read_text()) == results
    second = read_coco_results(path, dataset)
    for name in COLUMNS:
        mine, theirs = getattr(first, name), getattr(second, name)
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs), name


def test_write_skips_unknown_categories(tmp_path, dataset):
    path = tmp_path / "out.json"
    assert write_coco_results(read_coco_results(results_list(), dataset), dataset, path) == 3
    assert [r["category_id"] for r in json.loads(path.read_text())] == [3, 1, 1]


def test_write_without_xywh_converts_from_xyxy(tmp_path, dataset):
    dt = deteval.Detections(image_index=[1], category_index=[0], boxes=[[1, 2, 4, 8]],
                            scores=[0.5])
    path = tmp_path / "out.json"
    write_coco_results(dt, dataset, path)
    assert json.loads(path.read_text()) == [
        {"image_id": 1, "category_id": 3, "bbox": [1.0, 2.0, 3.0, 6.0], "score": 0.5}]


def test_write_empty(tmp_path, dataset):
    path = tmp_path / "out.json"
    assert write_coco_results(read_coco_results([], dataset), dataset, path) == 0
    assert json.loads(path.read_text()) == []


@pytest.mark.parametrize("seed", range(5))
def test_typed_fast_path_reads_files_exactly_like_the_general_path(tmp_path, seed):
    """Files in the common layout take msgspec's typed decoder; the numbers must be the same
    bits as the general (orjson) path gives, including awkward decimals and extra keys."""
    from deteval.io import coco as coco_io

    rng = np.random.default_rng(seed)
    n = 300
    dataset = read_coco_gt({"images": [{"id": i} for i in range(1, 6)],
                            "categories": [{"id": 1}, {"id": 2}], "annotations": []})
    results = [{"image_id": int(rng.integers(1, 6)), "category_id": int(rng.integers(1, 4)),
                "bbox": [float(v) for v in rng.random(4) * 10.0 ** rng.integers(-3, 6)],
                "score": float(rng.random()), **({"id": 7} if k % 3 == 0 else {})}
               for k in range(n)]
    results[0]["bbox"][0] = 1e-310  # subnormal
    results[1]["score"] = 1          # an integer score
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(results))
    assert coco_io._typed_results_columns(path.read_bytes()) is not None
    fast = read_coco_results(path, dataset)
    general = read_coco_results(results, dataset)
    for name in ("image_index", "category_index", "category_ids", "scores", "xywh", "boxes",
                 "area", "ids"):
        assert np.array_equal(getattr(fast, name), getattr(general, name)), name


@pytest.mark.parametrize("seed", range(4))
def test_typed_ground_truth_path_equals_the_general_path(tmp_path, seed):
    """Instances files take msgspec's typed decoder (segmentations skipped unparsed); the
    dataset must be identical to the one the general (dict) path builds."""
    from cocogen import make_dataset

    from deteval.io import coco as coco_io

    gt, _ = make_dataset(seed)
    gt["annotations"][0].pop("area", None)               # default: box area
    gt["annotations"][-1]["iscrowd"] = bool(gt["annotations"][-1]["iscrowd"])
    gt["images"][0]["license"] = 3                       # unknown keys are skipped
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    assert coco_io._typed_gt_columns(path.read_bytes()) is not None
    fast, general = read_coco_gt(path), read_coco_gt(gt)
    for table, names in (("gt", ("image_index", "category_index", "boxes", "area", "iscrowd",
                                  "ignore", "ids", "xywh")),
                         ("images", ("ids", "widths", "heights", "file_names")),
                         ("categories", ("ids", "names", "supercategories"))):
        for name in names:
            a, b = getattr(getattr(fast, table), name), getattr(getattr(general, table), name)
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f") if isinstance(
                a, np.ndarray) else a == b, (table, name)


@pytest.mark.parametrize(("section", "field"), [("annotations", "id"),
                                                ("annotations", "image_id"),
                                                ("annotations", "category_id"),
                                                ("images", "id"), ("categories", "id")])
def test_ground_truth_file_integers_beyond_int64_are_format_errors(section, field, tmp_path):
    """The typed decoder takes integers up to 2**64 - 1; one beyond int64 sends the file to
    the general path, which names the record (it was an OverflowError traceback)."""
    gt = {"images": [{"id": 1, "width": 10, "height": 10}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1],
                           "area": 1, "iscrowd": 0}]}
    gt[section][0][field] = 2**64 - 1
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    with pytest.raises(FormatError, match=rf"gt.json: {section}\[0\].*64 bits"):
        read_coco_gt(path)


@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints"])
@pytest.mark.parametrize("field", ["image_id", "category_id"])
def test_results_file_integers_beyond_int64_are_format_errors(iou_type, field, tmp_path):
    """The same through the typed results decoders (bbox was an OverflowError traceback)."""
    gt = {"images": [{"id": 1, "width": 3, "height": 4}],
          "categories": [{"id": 1, "name": "a", "keypoints": ["p"]}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1],
                           "area": 1, "iscrowd": 0, "num_keypoints": 1,
                           "keypoints": [1, 1, 2],
                           "segmentation": {"size": [4, 3], "counts": "0<"}}]}
    result = {"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5,
              "segmentation": {"size": [4, 3], "counts": "0<"}, "keypoints": [1, 1, 1]}
    result[field] = 2**64 - 1
    path = tmp_path / "dt.json"
    path.write_text(json.dumps([result]))
    dataset = read_coco_gt(gt, iou_type=iou_type)
    with pytest.raises(FormatError, match=rf"dt.json: results\[0\].*'{field}'.*64 bits"):
        read_coco_results(path, dataset, iou_type=iou_type)
