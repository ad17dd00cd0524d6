"""The input acceptance decisions of docs/input-acceptance.md (issue 19): what the readers
accept and refuse, and that every reader path (typed and general, bbox, segm, keypoints)
agrees. Every refusal names the file, the record and what was expected."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from deteval import FormatError, read_coco_gt, read_coco_results
from deteval.io._common import parse_numbers
from deteval.io.formats import read_detections, read_gt

GT = {"images": [{"id": 1, "width": 100, "height": 80}, {"id": 2, "width": 100, "height": 80}],
      "categories": [{"id": 1, "name": "a"}],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20],
                       "area": 400, "iscrowd": 0,
                       "segmentation": [[10, 10, 30, 10, 30, 30, 10, 30]],
                       "keypoints": [15, 15, 2], "num_keypoints": 1}]}


EMPTY_RLE = "Pj7"   # an empty 80x100 mask (pycocotools.mask.encode)


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# Numbers in text formats: ASCII decimal only


@pytest.mark.parametrize("text", ["１２", "١٢", "12_0", "12\x00", "1 2"])
def test_text_numbers_must_be_ascii_decimals(text):
    where = lambda i: ("labels.txt", f"line {i + 1}")  # noqa: E731
    with pytest.raises(FormatError, match=r"^labels.txt: line 2: x must be a number; got "
                                          + re.escape(repr(text))):
        parse_numbers(["1.5", text, "3"], where=where, field=lambda i: "x")


def test_ascii_numbers_still_parse():
    where = lambda i: ("f", f"line {i}")  # noqa: E731
    values = parse_numbers(["12", "-1.5e3", " 7 ", ".5", "+3."], where=where, field=str)
    assert values.tolist() == [12.0, -1500.0, 7.0, 0.5, 3.0]


@pytest.mark.parametrize("token", ["０.５", "0_5", "0.5\x00"])
def test_yolo_coordinates_in_other_digits_are_refused(tmp_path, token):
    labels = tmp_path / "labels"
    write(labels / "obj.names", "cat\n")
    write(labels / "a.txt", f"0 0.5 {token} 0.25 0.5\n")
    with pytest.raises(FormatError, match=rf"^{re.escape(str(labels / 'a.txt'))}: line 1: "
                                          r".* must be a number"):
        read_gt(labels, format="yolo", image_sizes=(100, 100), names=labels / "obj.names")


def test_txt_class_tokens_in_other_digits_are_names_not_ids(tmp_path):
    dataset = read_coco_gt(GT)
    folder = tmp_path / "dets"
    write(folder / "1.txt", "١ 0.9 10 10 20 20\n")
    detections = read_detections(folder, dataset, format="txt", box_format="xywh")
    assert detections.category_index.tolist() == [-1]       # not category id 1


# --------------------------------------------------------------------------------------------
# Encodings


def test_xml_with_an_unknown_encoding_names_the_file(tmp_path):
    xml = write(tmp_path / "voc" / "a.xml",
                '<?xml version="1.0" encoding="foo-bar"?><annotation></annotation>')
    with pytest.raises(FormatError, match=rf"^{re.escape(str(xml))}: line 1: the XML "
                                          r"declaration names an encoding that cannot be read"):
        read_gt(tmp_path / "voc", format="voc")


@pytest.mark.parametrize(("content", "message"), [
    (b'{"images": [{"id": 1, "file_name": "caf\xe9.jpg"}]}',
     r"ground truth file is not UTF-8 text: byte 0xe9 at line 1 column 40"),
    ('{"images": []}'.encode("utf-16"), r"ground truth file is UTF-16 text"),
    (b"\x00\x01\x02\xff\xfe binary", r"ground truth file is not UTF-8 text: byte 0xff"),
])
@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints"])
def test_json_that_is_not_utf8_is_refused_on_every_path(tmp_path, content, message, iou_type):
    path = write(tmp_path / "gt.json", content)
    with pytest.raises(FormatError, match="^" + re.escape(f"{path}: ") + message):
        read_coco_gt(path, iou_type=iou_type)


@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints"])
def test_invalid_utf8_in_an_unused_key_is_refused_on_every_path(tmp_path, iou_type):
    gt = write(tmp_path / "gt.json", json.dumps(GT))
    dataset = read_coco_gt(gt, iou_type=iou_type)
    record = {"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9,
              "segmentation": {"size": [80, 100], "counts": EMPTY_RLE}, "keypoints": [15, 15, 2]}
    raw = json.dumps([record])[:-2] + ', "note": "\xff"}]'
    path = write(tmp_path / "dt.json", raw.encode("latin-1"))
    with pytest.raises(FormatError, match="^" + re.escape(f"{path}: ") + r"results file is not "
                                          r"UTF-8 text: byte 0xff"):
        read_coco_results(path, dataset, iou_type=iou_type)


def test_text_files_in_utf16_name_the_encoding(tmp_path):
    names = write(tmp_path / "obj.names", "cat\ndog\n".encode("utf-16"))
    labels = tmp_path / "labels"
    write(labels / "a.txt", "0 0.5 0.5 0.25 0.5\n")
    with pytest.raises(FormatError, match=rf"^{re.escape(str(names))}: class names file is "
                                          r"UTF-16 text"):
        read_gt(labels, format="yolo", image_sizes=(100, 100), names=names)


# --------------------------------------------------------------------------------------------
# Ids: 64-bit integers, never folded


@pytest.mark.parametrize("section", ["images", "categories"])
def test_ids_below_int64_are_refused_not_folded(tmp_path, section):
    gt = json.loads(json.dumps(GT))
    gt["annotations"] = []
    gt[section] = [{**gt[section][0], "id": -9223372036854775809},
                   {**gt[section][-1], "id": -9223372036854775810}]
    path = write(tmp_path / "gt.json", json.dumps(gt))
    for iou_type in ("bbox", "segm"):
        with pytest.raises(FormatError, match=re.escape(f"{path}: {section}[0]: 'id' must be an "
                                                        "integer that fits in 64 bits")):
            read_coco_gt(path, iou_type=iou_type)


def test_result_image_ids_below_int64_are_refused(tmp_path):
    dataset = read_coco_gt(GT)
    path = write(tmp_path / "dt.json", '[{"image_id": -9223372036854775809, "category_id": 1, '
                                       '"bbox": [1, 2, 3, 4], "score": 0.5}]')
    with pytest.raises(FormatError, match=re.escape(f"{path}: results[0]: 'image_id' must be "
                                                    "an integer that fits in 64 bits")):
        read_coco_results(path, dataset)


def test_float_ids_that_are_exact_integers_are_read():
    gt = json.loads(json.dumps(GT))
    gt["images"][1]["id"] = 2.0
    assert read_coco_gt(gt).images.ids.tolist() == [1, 2]
    gt["images"][1]["id"] = 2.0**60
    with pytest.raises(FormatError, match=re.escape("images[1]: 'id' must be an integer that "
                                                    "fits in 64 bits")):
        read_coco_gt(gt)
    gt["images"][1]["id"] = np.int64(2**60)
    assert read_coco_gt(gt).images.ids.tolist() == [1, 2**60]


# --------------------------------------------------------------------------------------------
# JSON structure: nesting, surrogates, images


@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints"])
def test_json_nested_deeply_is_refused_naming_the_file(tmp_path, iou_type):
    path = write(tmp_path / "gt.json", "[" * 5000 + "]" * 5000)
    with pytest.raises(FormatError, match="^" + re.escape(f"{path}: not valid JSON: arrays or "
                                                          "objects nested more than 1024 deep")):
        read_coco_gt(path, iou_type=iou_type)
    dataset = read_coco_gt(GT, iou_type=iou_type)
    with pytest.raises(FormatError, match=r"nested more than 1024 deep"):
        read_coco_results(path, dataset, iou_type=iou_type)


@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints"])
def test_a_lone_surrogate_escape_is_refused_on_every_path(tmp_path, iou_type):
    dataset = read_coco_gt(GT, iou_type=iou_type)
    record = {"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.9,
              "segmentation": {"size": [80, 100], "counts": EMPTY_RLE}, "keypoints": [15, 15, 2]}
    path = write(tmp_path / "dt.json", json.dumps([record])[:-2] + ', "note": "\\ud800"}]')
    with pytest.raises(FormatError, match="^" + re.escape(
            f"{path}: not valid JSON: a string holds a lone UTF-16 surrogate escape")):
        read_coco_results(path, dataset, iou_type=iou_type)
    # A surrogate pair is a character (an emoji): read.
    path.write_text(json.dumps([record])[:-2] + ', "note": "\\ud83d\\ude00"}]')
    assert len(read_coco_results(path, dataset, iou_type=iou_type)) == 1


@pytest.mark.parametrize("iou_type", ["bbox", "segm", "keypoints", "polygon"])
def test_an_annotation_of_an_image_not_listed_is_named_for_every_iou_type(tmp_path, iou_type):
    gt = json.loads(json.dumps(GT))
    gt["images"] = []
    path = write(tmp_path / "gt.json", json.dumps(gt))
    with pytest.raises(FormatError, match="^" + re.escape(
            f"{path}: annotations[0] (id 1): image_id 1 is not in 'images'")):
        read_coco_gt(path, iou_type=iou_type)


def test_a_polygon_on_an_image_of_impossible_size_is_refused():
    gt = json.loads(json.dumps(GT))
    gt["images"][0]["height"] = -1
    with pytest.raises(FormatError, match=re.escape(
            "annotations[0] (id 1): a polygon segmentation is rasterised at its image's size, "
            "which must be whole numbers of pixels >= 0; the image is -1x100 (h x w)")):
        read_coco_gt(gt, iou_type="segm")


# --------------------------------------------------------------------------------------------
# Accepted where pycocotools raises (documented extensions)


def test_empty_results_are_no_detections_on_every_path(tmp_path):
    path = write(tmp_path / "dt.json", "[]")
    for iou_type in ("bbox", "segm", "keypoints"):
        dataset = read_coco_gt(GT, iou_type=iou_type)
        assert len(read_coco_results(path, dataset, iou_type=iou_type)) == 0
        assert len(read_coco_results([], dataset, iou_type=iou_type)) == 0


def test_polygon_and_uncompressed_results_are_rasterised_as_ground_truth_is():
    import pycocotools.mask as mask_utils

    dataset = read_coco_gt(GT, iou_type="segm")
    polygon = [12.5, 10, 30, 11, 29, 30, 10, 28]
    runs = [5, 10, 7985]
    dt = read_coco_results(
        [{"image_id": 1, "category_id": 1, "segmentation": [polygon], "score": 0.9},
         {"image_id": 1, "category_id": 1, "segmentation": {"size": [80, 100], "counts": runs},
          "score": 0.8}], dataset, iou_type="segm")
    assert dt.masks[0]["counts"] == mask_utils.frPyObjects([polygon], 80, 100)[0]["counts"]
    assert dt.masks[1]["counts"] == mask_utils.frPyObjects(
        {"size": [80, 100], "counts": runs}, 80, 100)["counts"]
    assert dt.area.tolist() == [float(mask_utils.area(m)) for m in dt.masks]


def test_a_four_number_polygon_is_a_two_point_polygon_wherever_it_is():
    # pycocotools takes a first part of 4 numbers for a box list and raises; a later one is
    # a 2-point polygon. deteval reads every part as a polygon.
    import pycocotools.mask as mask_utils

    gt = json.loads(json.dumps(GT))
    gt["annotations"][0]["segmentation"] = [[10, 10, 30, 30], [10, 10, 30, 10, 30, 30]]
    first = read_coco_gt(gt, iou_type="segm").gt.masks[0]
    gt["annotations"][0]["segmentation"] = [[10, 10, 30, 10, 30, 30], [10, 10, 30, 30]]
    later = read_coco_gt(gt, iou_type="segm").gt.masks[0]
    reference = mask_utils.merge(mask_utils.frPyObjects(
        [[10, 10, 30, 10, 30, 30], [10, 10, 30, 30]], 80, 100))
    assert first["counts"] == later["counts"] == reference["counts"]


def test_txt_class_ids_beyond_2_53_are_not_folded(tmp_path):
    gt = json.loads(json.dumps(GT))
    gt["images"][0]["file_name"] = "a.jpg"
    gt["categories"] = [{"id": 2**53, "name": "a"}, {"id": 2**53 + 1, "name": "b"}]
    gt["annotations"] = []
    dataset = read_coco_gt(gt)
    folder = tmp_path / "dets"
    write(folder / "a.txt", f"{2**53 + 1} 0.9 10 10 20 20\n")
    detections = read_detections(folder, dataset, format="txt", box_format="xywh")
    assert detections.category_index.tolist() == [1]
    assert detections.category_ids.tolist() == [2**53 + 1]


@pytest.mark.parametrize(("header", "format"), [
    ("ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf",
     "openimages"),
    ("filename,width,height,class,xmin,ymin,xmax,ymax", "csv"),
])
def test_a_table_of_headers_only_is_an_empty_dataset(tmp_path, header, format):
    # Open Images reads decimal commas too: numpy's string routines failed on no rows
    # (a bare "zero-size array" ValueError, found by the fuzzer).
    path = write(tmp_path / "gt.csv", header + "\n")
    dataset = read_gt(path, format=format, image_sizes=(10, 10))
    assert len(dataset.gt) == 0 and len(dataset.images) == 0
