"""NaN and Infinity literals in COCO files (json.dump writes them; they are not JSON): the
error names the file, the record and its key, and the line and column, whichever reader
(orjson, msgspec, the numpy readers of large files) meets the literal first."""

from __future__ import annotations

import json

import pytest
from test_io_coco import NAN, expect, gt_dict, results_list, write_json

from deteval.io.coco import read_coco_gt, read_coco_results


@pytest.fixture
def dataset():
    return read_coco_gt(gt_dict())


def test_gt_nan_written_by_json_dump_is_reported_with_its_position(tmp_path):
    # json.dump writes NaN, which is not JSON; orjson refuses it. The message names the file,
    # the record and its key, and the line and column.
    gt = gt_dict()
    gt["annotations"][1]["bbox"] = [5, NAN, 10, 20]
    path = write_json(tmp_path / "gt.json", gt)
    with expect(r"not valid JSON: .*line 1 column \d+", source=path,
                record="annotations[1] ('bbox')"):
        read_coco_gt(path)


def test_results_nan_score_in_file_is_reported_with_its_position(tmp_path, dataset):
    results = results_list()
    results[1]["score"] = NAN
    path = write_json(tmp_path / "dt.json", results)  # json.dumps writes NaN
    with expect(r"not valid JSON: .*line 1 column \d+", source=path,
                record="[1] ('score')"):
        read_coco_results(path, dataset)


@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints"])
def test_a_non_finite_literal_in_a_large_results_file_names_its_record(tmp_path, iou_type):
    """Files over 1 MiB go to the numpy readers first; the literal is still named with its
    record, wherever the reader that refuses the text is."""
    dataset = read_coco_gt(gt_dict())
    record = {"image_id": 1, "category_id": 1, "score": 0.5, "bbox": [1, 2, 3, 4]}
    if iou_type == "segm":
        record["segmentation"] = {"size": [480, 640], "counts": "0`0"}
    if iou_type == "keypoints":
        record["keypoints"] = [1.0, 2.0, 2] * 17
    text = json.dumps([record] * 30000)
    at = text.index('"score": 0.5', len(text) // 2)
    row = text[:at].count('"image_id"') - 1
    text = text[:at] + '"score": -Infinity' + text[at + len('"score": 0.5'):]
    path = tmp_path / "dt.json"
    path.write_text(text)
    assert path.stat().st_size > 1 << 20
    with expect(r"not valid JSON: NaN and Infinity", source=path, record=f"[{row}] ('score')"):
        read_coco_results(path, dataset, iou_type=iou_type)
