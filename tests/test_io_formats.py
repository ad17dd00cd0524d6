"""Tests of the format readers (deteval.io.voc, yolo, csv, labelme, cvat, txt, formats).

Two parts:

* the shared ``voc_sample_100`` sample: the same 273 objects in eight ground-truth formats and
  452 detections in four layouts must load to the same images, labels and boxes. Every
  format's coordinates were checked against the VOC XML files: all of them copied VOC's
  numbers (COCO ``x = xmin``, ``w = xmax - xmin``; YOLO and Open Images divided them by the
  image size), so the default VOC reading (numbers as written) is compared for equality with
  COCO, LabelMe and CVAT, ``one_based=True`` after adding back its documented shift, and the
  normalised formats to the precision they store (YOLO 6 decimals, Open Images 10);
* format detection and dispatch, and the safety of the XML parser, on small files.

Each reader on its own hand-built files (fields, every bad input's message, file and line):
tests/test_io_readers.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from iofiles import expect, tiny_dataset, voc_xml, write

from deteval import Dataset, FormatError
from deteval.io._common import image_key, parse_xml
from deteval.io.cvat import read_cvat
from deteval.io.formats import detect_format, read_detections, read_gt
from deteval.io.voc import read_voc
from deteval.io.yolo import read_yolo_detections

# ------------------------------------------------------------------------------------------
# The shared sample


def objects(dataset: Dataset) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Image keys, class names, boxes and ignore flags of every object, in a canonical order
    (image key, class, box), so that datasets with different ids and orders compare."""
    keys = [image_key(dataset.images.file_names[i]) for i in dataset.gt.image_index.tolist()]
    names = [dataset.categories.names[c] for c in dataset.gt.category_index.tolist()]
    rounded = np.round(dataset.gt.boxes)  # ordering only: values are compared unrounded
    order = sorted(range(len(keys)), key=lambda i: (keys[i], names[i], *rounded[i].tolist()))
    return ([keys[i] for i in order], [names[i] for i in order], dataset.gt.boxes[order],
            dataset.gt.ignore[order])


def sizes(dataset: Dataset) -> dict[str, tuple[float, float]]:
    return {image_key(n): (w, h) for n, w, h in zip(
        dataset.images.file_names, dataset.images.widths.tolist(),
        dataset.images.heights.tolist())}


@pytest.fixture(scope="module")
def voc(voc_sample_dir) -> Dataset:
    return read_gt(voc_sample_dir / "gts" / "pascalvoc_format")


GT_EXACT = [
    pytest.param("coco_format_v1/instances_default.json", "coco", id="coco-v1"),
    pytest.param("coco_format_v2/instances_v2.json", "coco", id="coco-v2"),
    pytest.param("imagenet_format", "voc", id="imagenet-voc"),
    pytest.param("labelme_format", "labelme", id="labelme"),
    pytest.param("cvat_format/annotations.xml", "cvat", id="cvat"),
]


@pytest.mark.parametrize(("path", "format"), GT_EXACT)
def test_sample_gt_formats_equal_voc_exactly(voc_sample_dir, voc, path, format):
    assert detect_format(voc_sample_dir / "gts" / path) == format
    other = read_gt(voc_sample_dir / "gts" / path)
    keys, names, boxes, _ = objects(other)
    voc_keys, voc_names, voc_boxes, _ = objects(voc)
    assert len(other.gt) == len(voc.gt) == 273
    assert (keys, names) == (voc_keys, voc_names)
    np.testing.assert_array_equal(boxes, voc_boxes)
    assert sizes(other) == sizes(voc)
    # Only the VOC XML files carry <difficult>; the converted files dropped it.
    assert not other.gt.ignore.any()


def test_sample_voc_fields(voc):
    assert len(voc.images) == 100 and len(voc.categories) == 20
    assert int(voc.gt.ignore.sum()) == 38  # <difficult>1</difficult>
    assert voc.categories.names == tuple(sorted(voc.categories.names))
    assert voc.images.ids.tolist() == list(range(1, 101))
    # 1-based pixel indices: nothing starts at 0, and 69 boxes end on the last pixel (= W/H).
    assert voc.gt.boxes[:, :2].min() == 1.0
    w, h = voc.images.widths[voc.gt.image_index], voc.images.heights[voc.gt.image_index]
    assert int(((voc.gt.boxes[:, 2] == w) | (voc.gt.boxes[:, 3] == h)).sum()) == 69
    assert (voc.gt.boxes[:, 2] <= w).all() and (voc.gt.boxes[:, 3] <= h).all()


def test_sample_voc_one_based_is_the_documented_shift(voc_sample_dir, voc):
    shifted = read_voc(voc_sample_dir / "gts" / "pascalvoc_format", one_based=True)
    np.testing.assert_array_equal(shifted.gt.boxes[:, :2] + 1.0, voc.gt.boxes[:, :2])
    np.testing.assert_array_equal(shifted.gt.boxes[:, 2:], voc.gt.boxes[:, 2:])
    assert shifted.gt.boxes[:, :2].min() == 0.0
    # The devkit's pixel count (xmax - xmin + 1) is the continuous area of the shifted box.
    b = voc.gt.boxes
    devkit_area = (b[:, 2] - b[:, 0] + 1) * (b[:, 3] - b[:, 1] + 1)
    np.testing.assert_array_equal(shifted.gt.area, devkit_area)


def assert_within_storage_precision(other: Dataset, voc: Dataset, bound_per_pixel: float):
    keys, names, boxes, _ = objects(other)
    voc_keys, voc_names, voc_boxes, _ = objects(voc)
    assert (keys, names) == (voc_keys, voc_names)
    size_of = sizes(voc)
    scale = np.array([size_of[k] * 2 for k in keys])  # (w, h, w, h) of each box's image
    error = np.abs(boxes - voc_boxes)
    assert (error <= bound_per_pixel * scale).all(), float((error / scale).max())
    assert sizes(other) == size_of  # measured with Pillow == VOC's <size>


def test_sample_yolo_to_its_six_decimals(voc_sample_dir, voc):
    yolo = read_gt(voc_sample_dir / "gts" / "yolo_format", images_dir=voc_sample_dir / "images")
    assert detect_format(voc_sample_dir / "gts" / "yolo_format") == "yolo"
    # YOLO's own class order (obj.names) is not VOC's sorted order; names match by name.
    assert yolo.categories.names[:3] == ("person", "cat", "boat")
    assert yolo.categories.ids.tolist() == list(range(20))
    # cx and w are rounded to 1e-6 of the image size: x1 = cx - w/2 is off by at most
    # 0.5e-6 + 0.25e-6 of it (plus float rounding, far below).
    assert_within_storage_precision(yolo, voc, 0.75e-6 + 1e-12)
    assert not yolo.gt.ignore.any()


def test_sample_openimages_decimal_commas_to_ten_decimals(voc_sample_dir, voc):
    path = voc_sample_dir / "gts" / "openimages_format" / "all_bounding_boxes.csv"
    assert detect_format(path) == "openimages"
    assert '"0,' in path.read_text()  # the real files' decimal commas
    dataset = read_gt(path, images_dir=voc_sample_dir / "images")
    assert_within_storage_precision(dataset, voc, 0.5e-10 + 1e-14)


@pytest.fixture(scope="module")
def names_file(voc_sample_dir) -> Path:
    return voc_sample_dir / "voc.names"


DT_LAYOUTS = [
    pytest.param("abs_xywh", "xywh", id="abs-xywh"),
    pytest.param("abs_xyx2y2", "xyxy", id="abs-xyxy"),
    pytest.param("rel_xywh", "cxcywhn", id="rel-cxcywh"),
]


def detection_rows(dataset: Dataset, dt) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Image key, class name, box and score of each detection, images in key order, file order
    within an image (all layouts list an image's detections in the same order)."""
    order = np.argsort([image_key(dataset.images.file_names[i]) for i in dt.image_index],
                       kind="stable")
    keys = [image_key(dataset.images.file_names[dt.image_index[i]]) for i in order]
    names = [dataset.categories.names[dt.category_index[i]] for i in order]
    return keys, names, dt.boxes[order], dt.scores[order]


@pytest.mark.parametrize("gt_path", ["pascalvoc_format", "coco_format_v2/instances_v2.json"],
                         ids=["voc-gt", "coco-gt"])
@pytest.mark.parametrize(("folder", "box_format"), DT_LAYOUTS)
def test_sample_detection_layouts_agree(voc_sample_dir, names_file, gt_path, folder, box_format):
    dataset = read_gt(voc_sample_dir / "gts" / gt_path)
    coco = read_detections(voc_sample_dir / "dets" / "coco_format" / "coco_dets.json", dataset)
    assert detect_format(voc_sample_dir / "dets" / folder, kind="detections") == "txt"
    dt = read_detections(voc_sample_dir / "dets" / folder, dataset, box_format=box_format,
                         names=names_file)
    assert len(dt) == len(coco) == 452
    assert (dt.category_index >= 0).all() and (coco.category_index >= 0).all()
    keys, names, boxes, scores = detection_rows(dataset, dt)
    c_keys, c_names, c_boxes, c_scores = detection_rows(dataset, coco)
    assert (keys, names) == (c_keys, c_names)
    assert len(set(keys)) == 98  # two images have no detection file: no detections
    # The txt files round scores to 6 decimals; the COCO file keeps them whole.
    assert (np.abs(scores - c_scores) <= 0.5e-6 + 1e-15).all()
    if box_format == "cxcywhn":  # 6 decimals of the image size, as YOLO
        scale = np.column_stack([dataset.images.widths, dataset.images.heights] * 2)
        scale = scale[[next(i for i, n in enumerate(dataset.images.file_names)
                            if image_key(n) == k) for k in keys]]
        assert (np.abs(boxes - c_boxes) <= (0.75e-6 + 1e-12) * scale).all()
    else:
        np.testing.assert_array_equal(boxes, c_boxes)


def test_sample_coco_detections_keep_xywh_and_map_by_name(voc_sample_dir, voc):
    dt = read_detections(voc_sample_dir / "dets" / "coco_format" / "coco_dets.json", voc)
    raw = json.loads((voc_sample_dir / "dets" / "coco_format" / "coco_dets.json").read_text())
    np.testing.assert_array_equal(dt.xywh, [a["bbox"] for a in raw["annotations"]])
    np.testing.assert_array_equal(dt.scores, [a["score"] for a in raw["annotations"]])
    # Its own ids (images 0..97, "person" = 0) are not the dataset's: matched by name.
    assert dt.category_ids.tolist()[:1] == [voc.categories.ids[voc.categories.names.index(
        "person")]]
    with pytest.raises(FormatError, match="image_id 0 is not an image of the ground truth"):
        read_detections(voc_sample_dir / "dets" / "coco_format" / "coco_dets.json", voc,
                        match_by="id")


def test_sample_end_to_end_same_coco_stats(voc_sample_dir, names_file, voc):
    from deteval import evaluate_coco

    xywh = read_detections(voc_sample_dir / "dets" / "abs_xywh", voc, box_format="xywh",
                           names=names_file)
    xyxy = read_detections(voc_sample_dir / "dets" / "abs_xyx2y2", voc, box_format="xyxy",
                           names=names_file)
    a, b = evaluate_coco(voc, xywh).stats, evaluate_coco(voc, xyxy).stats
    np.testing.assert_array_equal(a, b)
    assert 0 < a[0] < 1


def test_sample_yolo_detections_through_the_writer(voc_sample_dir, names_file, voc, tmp_path):
    from deteval.io.yolo import write_yolo

    dt = read_detections(voc_sample_dir / "dets" / "abs_xyx2y2", voc, box_format="xyxy",
                         names=names_file)
    write_yolo(voc, tmp_path, detections=dt)
    # Class indices are rows of the categories table, named in obj.names; VOC's category ids
    # start at 1, so the names file (not the ids) maps them back.
    back = read_yolo_detections(tmp_path, voc, names=tmp_path / "obj.names")
    np.testing.assert_allclose(back.boxes, dt.boxes, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(back.scores, dt.scores)
    np.testing.assert_array_equal(back.category_index, dt.category_index)


# ------------------------------------------------------------------------------------------
# Format detection and dispatch


def test_detect_format_rules(tmp_path):
    write(tmp_path / "voc" / "a.xml", voc_xml())
    write(tmp_path / "devkit" / "Annotations" / "a.xml", voc_xml())
    write(tmp_path / "lm" / "a.json", '{"shapes": [], "imagePath": "a.jpg"}')
    write(tmp_path / "y" / "a.txt", "")
    write(tmp_path / "gt.json", '{"images": [], "annotations": [], "categories": []}')
    write(tmp_path / "c.xml", "<annotations></annotations>")
    write(tmp_path / "g.csv", "filename,class\n")
    write(tmp_path / "oi.csv", "ImageID,LabelName,XMin\n")
    write(tmp_path / "x.yaml", "")
    assert detect_format(tmp_path / "voc") == "voc"
    assert detect_format(tmp_path / "devkit") == "voc"
    assert detect_format(tmp_path / "lm") == "labelme"
    assert detect_format(tmp_path / "lm" / "a.json") == "labelme"
    assert detect_format(tmp_path / "y") == "yolo"
    assert detect_format(tmp_path / "y", kind="detections") == "txt"
    assert detect_format(tmp_path / "gt.json") == "coco"
    assert detect_format(tmp_path / "c.xml") == "cvat"
    assert detect_format(tmp_path / "voc" / "a.xml") == "voc"
    assert detect_format(tmp_path / "g.csv") == "csv"
    assert detect_format(tmp_path / "oi.csv") == "openimages"
    with expect("does not exist", source=tmp_path / "nope"):
        detect_format(tmp_path / "nope")
    with expect("cannot tell the ground-truth format of this file: pass format=",
                source=tmp_path / "x.yaml"):
        detect_format(tmp_path / "x.yaml")
    with pytest.raises(ValueError, match="kind must be 'gt' or 'detections'"):
        detect_format(tmp_path, kind="dt")


def test_format_overrides_the_guess(tmp_path):
    path = write(tmp_path / "boxes.txt", "filename,class,xmin,ymin,xmax,ymax\na.jpg,cat,1,2,3,4\n")
    with expect("cannot tell"):
        read_gt(path)
    assert read_gt(path, format="csv").gt.boxes.tolist() == [[1, 2, 3, 4]]
    with pytest.raises(ValueError, match="format must be one of 'coco', 'voc'"):
        read_gt(path, format="pascal")


def test_txt_detections_need_a_box_format(tmp_path):
    write(tmp_path / "dets" / "a.txt", "0 0.5 1 2 3 4\n")
    with expect("txt detections need box_format=.*format='yolo'", source=tmp_path / "dets"):
        read_detections(tmp_path / "dets", tiny_dataset())


# ------------------------------------------------------------------------------------------
# XML safety


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
""" + "".join(f' <!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">\n'
              for i in range(1, 10)) + """]>
<annotation><filename>&lol9;</filename></annotation>
"""


@pytest.mark.parametrize("reader", [read_voc, read_cvat], ids=["voc", "cvat"])
def test_billion_laughs_is_refused_quickly(tmp_path, reader):
    path = write(tmp_path / "bomb.xml", BILLION_LAUGHS)
    start = time.perf_counter()
    with expect(r"XML with a document type declaration \(<!DOCTYPE ...>\) is refused",
                source=path, record="line 2"):
        reader(path)
    assert time.perf_counter() - start < 1.0


def test_external_entities_and_any_doctype_are_refused(tmp_path):
    secret = write(tmp_path / "secret.txt", "secret")
    xxe = write(tmp_path / "xxe.xml", f'<?xml version="1.0"?>\n<!DOCTYPE a [<!ENTITY x SYSTEM '
                                      f'"file://{secret}">]>\n<annotation>&x;</annotation>')
    with expect("XML with a document type declaration", source=xxe, record="line 2"):
        read_voc(xxe)
    plain = write(tmp_path / "plain.xml", "<!DOCTYPE annotation>\n<annotation/>")
    with expect("XML with a document type declaration", source=plain, record="line 1"):
        parse_xml(plain, what="test")
    with expect("XML with a document type declaration", source=plain, record="line 1"):
        detect_format(plain)
    undefined = write(tmp_path / "undefined.xml", "<annotation>\n&x;</annotation>")
    with expect("not well-formed XML: undefined entity", source=undefined,
                record="line 2 column 1"):
        read_voc(undefined)


def test_utf16_doctype_is_refused_too(tmp_path):
    path = tmp_path / "u16.xml"
    path.write_bytes(BILLION_LAUGHS.replace('"1.0"', '"1.0" encoding="utf-16"').encode("utf-16"))
    with expect("XML with a document type declaration", source=path, record="line 2"):
        read_voc(path)
