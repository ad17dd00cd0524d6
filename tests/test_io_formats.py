"""Tests of the format readers (deteval.io.voc, yolo, csv, labelme, cvat, txt, formats).

Two parts:

* the shared ``voc_sample_100`` sample: the same 273 objects in eight ground-truth formats and
  452 detections in four layouts must load to the same images, labels and boxes. Every
  format's coordinates were checked against the VOC XML files: all of them copied VOC's
  numbers (COCO ``x = xmin``, ``w = xmax - xmin``; YOLO and Open Images divided them by the
  image size), so the default VOC reading (numbers as written) is compared for equality with
  COCO, LabelMe and CVAT, ``one_based=True`` after adding back its documented shift, and the
  normalised formats to the precision they store (YOLO 6 decimals, Open Images 10);
* small hand-built files for every bad input, each asserting the message, file and line.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest

from deteval import Categories, Dataset, FormatError, GroundTruth, Images
from deteval.errors import FormatWarning
from deteval.io._common import image_key, parse_xml, read_names
from deteval.io.csv import (
    read_csv,
    read_csv_detections,
    read_openimages,
    read_openimages_detections,
)
from deteval.io.cvat import read_cvat
from deteval.io.formats import detect_format, read_detections, read_gt
from deteval.io.labelme import read_labelme
from deteval.io.txt import read_txt_detections
from deteval.io.voc import read_voc
from deteval.io.yolo import read_yolo, read_yolo_detections


def expect(message: str, *, source: Path | str | None = None, record: str | None = None):
    """``pytest.raises(FormatError)`` whose text is ``source: record: message``; ``message`` is
    a regular expression, ``source`` and ``record`` literal."""
    prefix = "".join(re.escape(f"{part}: ") for part in (source, record) if part is not None)
    return pytest.raises(FormatError, match=("^" + prefix if prefix else "") + message)


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


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def voc_xml(objects: str = "", *, filename: str = "a.jpg", size: str = "64 48") -> str:
    w, h = size.split()
    return (f"<annotation>\n<filename>{filename}</filename>\n<size><width>{w}</width>"
            f"<height>{h}</height></size>\n{objects}</annotation>\n")


def voc_object(name="cat", box=(1, 2, 30, 40), difficult="0") -> str:
    corners = "".join(f"<{t}>{v}</{t}>" for t, v in zip(("xmin", "ymin", "xmax", "ymax"), box))
    return (f"<object>\n<name>{name}</name>\n<difficult>{difficult}</difficult>\n"
            f"<bndbox>{corners}</bndbox>\n</object>\n")


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


# ------------------------------------------------------------------------------------------
# VOC


def test_voc_reads_fields(tmp_path):
    write(tmp_path / "b.xml", voc_xml(voc_object("dog", (5.5, 6, 7, 8), "1")
                                      + voc_object("cat"), filename="b.png"))
    write(tmp_path / "a.xml", voc_xml("", size="0 0"))  # no objects, unknown size
    dataset = read_voc(tmp_path, classes=["dog", "cat", "bird"])
    assert dataset.images.file_names == ("a.jpg", "b.png")
    assert np.isnan(dataset.images.widths[0]) and dataset.images.widths[1] == 64
    assert dataset.categories.names == ("dog", "cat", "bird")
    assert dataset.categories.ids.tolist() == [1, 2, 3]
    assert dataset.gt.boxes.tolist() == [[5.5, 6, 7, 8], [1, 2, 30, 40]]
    assert dataset.gt.category_index.tolist() == [0, 1]
    assert dataset.gt.ignore.tolist() == [True, False]
    assert dataset.gt.image_index.tolist() == [1, 1]


VOC_ERRORS = [
    pytest.param(voc_object(box=(50, 2, 10, 40)), "xmax must be >= xmin; got xmin=50, xmax=10",
                 "line 7", id="xmax-below-xmin"),
    pytest.param(voc_object(box=(1, 50, 10, 40)), "ymax must be >= ymin; got ymin=50, ymax=40",
                 "line 7", id="ymax-below-ymin"),
    pytest.param(voc_object(box=(1, "abc", 10, 40)), "<ymin> must be a number; got 'abc'",
                 "line 7", id="not-a-number"),
    pytest.param(voc_object(box=(1, "nan", 10, 40)), "<ymin> must be finite; got 'nan'",
                 "line 7", id="nan"),
    pytest.param(voc_object(difficult="2"), "<difficult> must be 0 or 1; got '2'", "line 7",
                 id="difficult-2"),
    pytest.param("<object>\n<bndbox/></object>", "<object> without a <name>", "line 4",
                 id="no-name"),
    pytest.param("<object>\n<name>cat</name></object>", "<object> 'cat' without a <bndbox>",
                 "line 4", id="no-bndbox"),
    pytest.param("<object><name>cat</name>\n<bndbox><xmin>1</xmin></bndbox></object>",
                 "<bndbox> without <ymin>", "line 5", id="no-ymin"),
]


@pytest.mark.parametrize(("objects", "message", "record"), VOC_ERRORS)
def test_voc_errors_name_file_and_line(tmp_path, objects, message, record):
    path = write(tmp_path / "a.xml", voc_xml(objects))
    with expect(re.escape(message), source=path, record=record):
        read_voc(tmp_path)


def test_voc_file_errors(tmp_path):
    with expect("VOC annotation folder does not exist", source=tmp_path / "nope"):
        read_voc(tmp_path / "nope")
    (tmp_path / "empty_folder").mkdir()
    with expect(r"no \.xml files in this VOC annotation folder"):
        read_voc(tmp_path / "empty_folder")
    empty = write(tmp_path / "e" / "a.xml", "  \n")
    with expect("VOC annotation file is empty", source=empty):
        read_voc(empty.parent)
    cvat = write(tmp_path / "c" / "a.xml", "<annotations/>")
    with expect(r"the root element must be <annotation> \(Pascal VOC\); got <annotations>",
                source=cvat, record="line 1"):
        read_voc(cvat)
    broken = write(tmp_path / "b" / "a.xml", "<annotation>\n<object></annotation>")
    with expect("not well-formed XML: mismatched tag", source=broken,
                record="line 2 column 11"):
        read_voc(broken)
    write(tmp_path / "d" / "a.xml", voc_xml(filename="x.jpg"))
    second = write(tmp_path / "d" / "b.xml", voc_xml(filename="x.jpg"))
    with expect("image 'x' is annotated twice", source=second):
        read_voc(tmp_path / "d")
    unknown = write(tmp_path / "u" / "a.xml", voc_xml(voc_object("dgo")))
    with expect(r"class 'dgo' is not one of the classes \(cat, dog\)", source=unknown,
                record="line 7"):
        read_voc(unknown, classes=["cat", "dog"])


def test_voc_one_based_boxes_span_xmin_minus_one(tmp_path):
    path = write(tmp_path / "a.xml", voc_xml(voc_object(box=(5, 5, 4, 9))))
    assert read_voc(path, one_based=True).gt.boxes.tolist() == [[4, 4, 4, 9]]  # zero width
    with expect(re.escape("xmax must be >= xmin; got xmin=5, xmax=4"), source=path,
                record="line 7"):
        read_voc(path)
    path = write(tmp_path / "a.xml", voc_xml(voc_object(box=(5, 5, 3, 9))))
    with expect(re.escape("xmax must be >= xmin-1; got xmin-1=4, xmax=3"), source=path,
                record="line 7"):
        read_voc(path, one_based=True)


def test_voc_box_beyond_image_warns(tmp_path):
    write(tmp_path / "a.xml", voc_xml(voc_object(box=(1, 2, 65, 40))))
    with pytest.warns(FormatWarning, match=r"1 box\(es\) reach beyond their image; the first: "
                                           r".*a\.xml: line 7: \[1\.0, 2\.0, 65\.0, 40\.0\] in "
                                           r"a 64x48 image"):
        dataset = read_voc(tmp_path)
    assert dataset.gt.boxes.tolist() == [[1, 2, 65, 40]]  # kept as written


def test_voc_size_from_images_dir_never_outside_it(tmp_path):
    from PIL import Image

    images, outside = tmp_path / "images", tmp_path / "outside"
    images.mkdir()
    outside.mkdir()
    Image.new("RGB", (33, 22)).save(images / "a.jpg")
    Image.new("RGB", (99, 99)).save(outside / "secret.jpg")
    write(tmp_path / "ann" / "a.xml", voc_xml(size="0 0"))
    write(tmp_path / "ann" / "s.xml", voc_xml(filename="../outside/secret.jpg", size="0 0"))
    dataset = read_voc(tmp_path / "ann", images_dir=images)
    assert dataset.images.file_names == ("a.jpg", "../outside/secret.jpg")
    assert dataset.images.widths[0] == 33 and dataset.images.heights[0] == 22
    assert np.isnan(dataset.images.widths[1])  # looked up as "secret" in images/ only


# ------------------------------------------------------------------------------------------
# YOLO


@pytest.fixture
def yolo_dir(tmp_path) -> Path:
    folder = tmp_path / "labels"
    write(folder / "obj.names", "cat\ndog\n\n")
    write(folder / "a.txt", "1 0.5 0.5 0.25 0.5\n\n0 0.25 0.25 0.5 0.5\n")
    write(folder / "b.txt", "")  # an image without objects
    return folder


SIZES = {"a.jpg": (640, 480), "b": (100, 100)}


def test_yolo_reads_boxes_and_classes(yolo_dir):
    dataset = read_yolo(yolo_dir, image_sizes=SIZES)
    assert dataset.categories.names == ("cat", "dog")
    assert dataset.categories.ids.tolist() == [0, 1]
    assert dataset.images.file_names == ("a", "b")
    assert dataset.gt.boxes.tolist() == [[240, 120, 400, 360], [0, 0, 320, 240]]
    assert dataset.gt.category_index.tolist() == [1, 0]


def test_yolo_images_from_folder_include_unlabelled_ones(tmp_path):
    from PIL import Image

    root = tmp_path / "data"
    write(root / "labels" / "train" / "a.txt", "0 0.5 0.5 1 1\n")
    (root / "images" / "train").mkdir(parents=True)
    Image.new("RGB", (40, 20)).save(root / "images" / "train" / "a.jpg")
    Image.new("RGB", (10, 10)).save(root / "images" / "train" / "c.png")
    write(root / "classes.txt", "thing\n")
    dataset = read_yolo(root / "labels" / "train", names=root / "classes.txt")
    assert dataset.images.file_names == ("a.jpg", "c.png")  # c.png: background image
    assert dataset.gt.boxes.tolist() == [[0, 0, 40, 20]]


def test_yolo_exif_rotation_swaps_the_size(tmp_path):
    from PIL import Image

    image = Image.new("RGB", (40, 20))
    exif = image.getexif()
    exif[0x0112] = 6  # rotated 90 degrees: displayed as 20 x 40
    image.save(tmp_path / "a.jpg", exif=exif)
    write(tmp_path / "a.txt", "0 0.5 0.5 1 1\n")
    dataset = read_yolo(tmp_path, names=["thing"])
    assert dataset.gt.boxes.tolist() == [[0, 0, 20, 40]]


YOLO_ERRORS = [
    pytest.param("0 0.5 0.5 0.2\n", "expected 5 fields 'class cx cy w h'; got 4", "line 1",
                 id="four-fields"),
    pytest.param("0 0.5 0.5 0.2 0.2\n0 0.1 0.1 0.2 0.1 0.3 0.2 0.3\n",
                 "expected 5 fields 'class cx cy w h'; got 8 (a segmentation polygon?)",
                 "line 2", id="polygon"),
    pytest.param("0 1.2 0.5 0.2 0.2\n", "cx must be in [0, 1] (normalised); got 1.2", "line 1",
                 id="cx-above-1"),
    pytest.param("0 0.5 0.5 -0.1 0.2\n", "w must be in [0, 1] (normalised); got -0.1",
                 "line 1", id="negative-w"),
    pytest.param("2 0.5 0.5 0.2 0.2\n", "class '2' is not an index of the 2 class names (0..1)",
                 "line 1", id="unknown-class"),
    pytest.param("-1 0.5 0.5 0.2 0.2\n",
                 "class '-1' is not an index of the 2 class names (0..1)", "line 1",
                 id="negative-class"),
    pytest.param("1.5 0.5 0.5 0.2 0.2\n", "class '1.5' must be an integer", "line 1",
                 id="fractional-class"),
    pytest.param("0 0.5 abc 0.2 0.2\n", "cy must be a number; got 'abc'", "line 1",
                 id="not-a-number"),
    pytest.param("0 0.5 0,5 0.2 0.2\n",
                 "cy must be a number; got '0,5' (decimal comma? pass decimal=',')", "line 1",
                 id="decimal-comma"),
]


@pytest.mark.parametrize(("content", "message", "record"), YOLO_ERRORS)
def test_yolo_errors_name_file_and_line(yolo_dir, content, message, record):
    path = write(yolo_dir / "a.txt", content)
    with expect(re.escape(message), source=path, record=record):
        read_yolo(yolo_dir, image_sizes=SIZES)


def test_yolo_file_errors(yolo_dir, tmp_path):
    with expect("YOLO labels folder does not exist"):
        read_yolo(tmp_path / "nope", image_sizes=(10, 10))
    orphan = write(yolo_dir / "c.txt", "0 0.5 0.5 0.1 0.1\n")
    with expect(r"cannot convert normalised boxes without the image size \(no image named "
                rf"c\.\* in {re.escape(str(yolo_dir))}\); pass images_dir=", source=orphan):
        read_yolo(yolo_dir, image_sizes=SIZES)
    with expect(r"cannot convert normalised boxes without the image size \(no image named "
                r"a\.\* in ", source=yolo_dir / "a.txt"):
        read_yolo(yolo_dir)  # the labels folder holds no images
    orphan.unlink()
    (yolo_dir / "obj.names").unlink()
    with expect(r"no class-names file \(obj\.names, classes\.txt, classes\.names\) here or in "
                r"the parent folder; pass names=", source=yolo_dir):
        read_yolo(yolo_dir, image_sizes=SIZES)
    with expect("class names file does not exist", source=tmp_path / "x.names"):
        read_yolo(yolo_dir, names=tmp_path / "x.names", image_sizes=SIZES)
    empty = write(tmp_path / "empty.names", "\n")
    with expect("class names file is empty", source=empty):
        read_yolo(yolo_dir, names=empty, image_sizes=SIZES)


def test_names_file_errors(tmp_path):
    blank = write(tmp_path / "blank.names", "cat\n\ndog\n")
    with expect("class name is blank: every line names one class", source=blank,
                record="line 2"):
        read_names(blank)
    twice = write(tmp_path / "twice.names", "cat\ndog\ncat\n")
    with expect("class name 'cat' repeats line 1", source=twice, record="line 3"):
        read_names(twice)
    assert read_names(write(tmp_path / "ok.names", "cat\r\ndog\r\n\r\n")) == ("cat", "dog")
    with pytest.raises(TypeError, match="class names must be a file path or a sequence"):
        read_names(3)


# ------------------------------------------------------------------------------------------
# Detection txt layouts


def tiny_dataset() -> Dataset:
    return Dataset(Images(ids=[7, 9], widths=[100, 200], heights=[50, 100],
                          file_names=["a.jpg", "sub/b.png"]),
                   Categories(ids=[1, 2], names=["cat", "dog"]),
                   GroundTruth(image_index=[], category_index=[], boxes=[]))


def test_txt_detections_classes_by_id_name_or_names_file(tmp_path):
    dataset = tiny_dataset()
    write(tmp_path / "a.txt", "2 0.9 10 5 20 10\ndog 0.5 0 0 1 1\nbird 0.1 0 0 1 1\n")
    write(tmp_path / "b.txt", "")  # empty file: no detections
    dt = read_txt_detections(tmp_path, dataset, box_format="xywh")
    assert dt.category_index.tolist() == [1, 1, -1]
    assert dt.image_index.tolist() == [0, 0, 0]
    assert dt.boxes[0].tolist() == [10, 5, 30, 15] and dt.xywh[0].tolist() == [10, 5, 20, 10]
    names = write(tmp_path.parent / "n.names", "bird\ncat\ndog\n")
    write(tmp_path / "a.txt", "2 0.9 0.5 0.5 0.2 0.2\n0 0.8 0.5 0.5 0.2 0.2\n")
    dt = read_txt_detections(tmp_path, dataset, box_format="cxcywhn", names=names)
    assert dt.category_index.tolist() == [1, -1]  # dog; bird is not in the dataset
    assert dt.boxes[0].tolist() == [40, 20, 60, 30]


TXT_ERRORS = [
    pytest.param("0 0.9 1 2 3\n", "xywh", "expected 6 fields 'class score x y w h'; got 5",
                 id="five-fields"),
    pytest.param("0 high 1 2 3 4\n", "xywh", "score must be a number; got 'high'",
                 id="score-not-a-number"),
    pytest.param("0 0.9 5 2 3 4\n", "xyxy", "x2 must be >= x1; got x1=5, x2=3",
                 id="x2-below-x1"),
    pytest.param("0 0.9 5 2 -3 4\n", "xywh", "w must be >= 0; got -3", id="negative-w"),
    pytest.param("0 0.9 0.5 1.5 0.1 0.1\n", "cxcywhn",
                 "cy must be in [0, 1] (normalised); got 1.5", id="relative-above-1"),
    pytest.param("5 0.9 1 2 3 4\n", "xywh", "class index '5' is not an index of the 3 class "
                 "names (0..2)", id="class-beyond-names"),
]


@pytest.mark.parametrize(("content", "box_format", "message"), TXT_ERRORS)
def test_txt_detection_errors_name_file_and_line(tmp_path, content, box_format, message):
    write(tmp_path / "a.txt", "0 0.5 1 2 3 4\n")
    path = write(tmp_path / "sub" / "b.txt", "1 0.5 0.1 0.1 0.2 0.2\n" + content)
    names = ["bird", "cat", "dog"] if "class index" in message else None
    with expect(re.escape(message), source=path, record="line 2"):
        read_txt_detections(path, tiny_dataset(), box_format=box_format, names=names)


def test_txt_detection_file_errors(tmp_path):
    stray = write(tmp_path / "zzz.txt", "0 0.5 1 2 3 4\n")
    with expect(r"image 'zzz' is not an image of the ground truth \(dataset\)", source=stray):
        read_txt_detections(tmp_path, tiny_dataset(), box_format="xywh")
    stray.unlink()
    with expect(r"no \.txt files in this detections folder", source=tmp_path):
        read_txt_detections(tmp_path, tiny_dataset(), box_format="xywh")
    with pytest.raises(ValueError, match="box_format must be one of 'xyxy'"):
        read_txt_detections(tmp_path, tiny_dataset(), box_format="ltrb")
    unsized = Dataset(Images(ids=[1], file_names=["a.jpg"]), Categories(ids=[1]),
                      GroundTruth(image_index=[], category_index=[], boxes=[]))
    path = write(tmp_path / "a.txt", "1 0.5 0.5 0.5 0.1 0.1\n")
    with expect("the size of a.jpg is unknown, and normalised boxes need it", source=path,
                record="line 1"):
        read_txt_detections(tmp_path, unsized, box_format="cxcywhn")


def test_yolo_detections(tmp_path):
    write(tmp_path / "a.txt", "1 0.5 0.5 0.2 0.2 0.75\n")
    dt = read_yolo_detections(tmp_path, tiny_dataset(), names=["cat", "dog"])
    assert dt.boxes.tolist() == [[40, 20, 60, 30]] and dt.scores.tolist() == [0.75]
    assert dt.category_index.tolist() == [1]
    path = write(tmp_path / "a.txt", "1 0.5 0.5 0.2 0.2\n")
    with expect(re.escape("expected 6 fields 'class cx cy w h score'; got 5"), source=path,
                record="line 1"):
        read_yolo_detections(tmp_path, tiny_dataset())


# ------------------------------------------------------------------------------------------
# CSV and Open Images


def test_csv_user_named_columns_tsv_and_image_rows(tmp_path):
    path = write(tmp_path / "gt.tsv", "img\tW\tH\tname\tx\ty\tw\th\n"
                                      "b.jpg\t64\t48\tcat\t1\t2\t10\t20\n"
                                      "a.jpg\t32\t32\t\t\t\t\t\n")
    dataset = read_csv(path, columns={"image": "img", "label": "name", "width": "W",
                                      "height": "H", "box": ("x", "y", "w", "h")},
                       box_format="xywh")
    assert dataset.images.file_names == ("a.jpg", "b.jpg")
    assert dataset.images.widths.tolist() == [32, 64]
    assert dataset.gt.boxes.tolist() == [[1, 2, 11, 22]]
    assert dataset.gt.image_index.tolist() == [1]


def test_csv_relative_boxes_and_semicolons_with_decimal_commas(tmp_path):
    path = write(tmp_path / "gt.csv", "filename;class;xmin;ymin;xmax;ymax;difficult\n"
                                      "a.jpg;cat;0,25;0,5;0,75;1;1\n")
    dataset = read_csv(path, box_format="xyxyn", decimal=",", image_sizes=(200, 100))
    assert dataset.gt.boxes.tolist() == [[50, 50, 150, 100]]
    assert dataset.gt.ignore.tolist() == [True]


CSV_HEADER = "filename,width,height,class,xmin,ymin,xmax,ymax\n"
CSV_ERRORS = [
    pytest.param("filename,class,xmin,ymin,ymax\na.jpg,cat,1,2,3\n",
                 "missing column 'xmax' (box); the header has 'filename', 'class', 'xmin', "
                 "'ymin', 'ymax'", "line 1", id="missing-box-column"),
    pytest.param("image,class,xmin,ymin,xmax,ymax\na.jpg,cat,1,2,3,4\n",
                 "missing column 'filename' (image)", "line 1", id="missing-image-column"),
    pytest.param(CSV_HEADER + "a.jpg,64,48,cat,1,2,3,4\na.jpg,64,48,cat,1,2,3\n",
                 "expected 8 fields like the header; got 7", "line 3", id="short-row"),
    pytest.param(CSV_HEADER + "a.jpg,64,48,cat,9,2,3,4\n",
                 "xmax must be >= xmin; got xmin=9, xmax=3", "line 2",
                 id="xmax-below-xmin"),
    pytest.param(CSV_HEADER + 'a.jpg,64,48,cat,"1,5",2,3,4\n',
                 "xmin must be a number; got '1,5' (decimal comma? pass decimal=',')",
                 "line 2", id="decimal-comma"),
    pytest.param(CSV_HEADER + "a.jpg,64,48,,1,2,3,4\n", "class is empty", "line 2",
                 id="empty-class"),
    pytest.param(CSV_HEADER + "a.jpg,64,48,cat,1,2,3,4\n\na.jpg,64,40,cat,1,2,3,4\n",
                 "image size [64.0, 40.0] differs from an earlier row's [64.0, 48.0] for the "
                 "same image", "line 4", id="sizes-differ"),
    pytest.param(CSV_HEADER + "a.jpg,-64,48,cat,1,2,3,4\n", "width must be positive",
                 "line 2", id="negative-width"),
]


@pytest.mark.parametrize(("content", "message", "record"), CSV_ERRORS)
def test_csv_errors_name_file_and_line(tmp_path, content, message, record):
    path = write(tmp_path / "gt.csv", content)
    with expect(re.escape(message), source=path, record=record):
        read_csv(path)


def test_csv_empty_missing_and_header_only(tmp_path):
    with expect("CSV file does not exist", source=tmp_path / "nope.csv"):
        read_csv(tmp_path / "nope.csv")
    empty = write(tmp_path / "empty.csv", "")
    with expect("CSV file is empty", source=empty):
        read_csv(empty)
    header_only = read_csv(write(tmp_path / "h.csv", CSV_HEADER))
    assert len(header_only.gt) == 0 and len(header_only.images) == 0
    with pytest.raises(ValueError, match="columns has unknown roles"):
        read_csv(empty, columns={"picture": "x"})


def test_csv_normalised_needs_sizes(tmp_path):
    path = write(tmp_path / "gt.csv", "filename,class,xmin,ymin,xmax,ymax\na.jpg,cat,0,0,1,1\n")
    with expect("the size of a.jpg is unknown, and normalised boxes need it; pass images_dir",
                source=path, record="line 2"):
        read_csv(path, box_format="xyxyn")


def test_csv_detections(tmp_path):
    path = write(tmp_path / "dt.csv", "filename,class,score,xmin,ymin,xmax,ymax\n"
                                      "b.png,dog,0.5,1,2,3,4\na.jpg,1,0.25,0,0,1,1\n")
    dt = read_csv_detections(path, tiny_dataset())
    assert dt.image_index.tolist() == [1, 0]
    assert dt.category_index.tolist() == [1, 0]
    assert dt.scores.tolist() == [0.5, 0.25]
    no_score = write(tmp_path / "ns.csv", "filename,class,xmin,ymin,xmax,ymax\n")
    with expect("missing column 'score' \\(score\\)", source=no_score, record="line 1"):
        read_csv_detections(no_score, tiny_dataset())
    stray = write(tmp_path / "s.csv", "filename,class,score,xmin,ymin,xmax,ymax\n"
                                      "c.jpg,dog,0.5,1,2,3,4\n")
    with expect("image 'c' is not an image of the ground truth", source=stray,
                record="line 2"):
        read_csv_detections(stray, tiny_dataset())


OI_HEADER = ("ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,"
             "IsGroupOf,IsDepiction,IsInside\n")


def test_openimages_decimal_commas_and_group_of(tmp_path):
    path = write(tmp_path / "oi.csv", OI_HEADER
                 + 'img1,xclick,/m/01,1,"0,25","0,75",0.5,1,0,0,1,0,0\n'
                 + "img1,xclick,/m/02,1,0,1,0,1,,,,,\n")
    dataset = read_openimages(path, image_sizes={"img1": (200, 100)},
                              class_names={"/m/01": "cat", "/m/02": "dog"})
    assert dataset.gt.boxes.tolist() == [[50, 50, 150, 100], [0, 0, 200, 100]]
    assert dataset.gt.iscrowd.tolist() == [True, False]
    assert dataset.categories.names == ("cat", "dog")
    descriptions = write(tmp_path / "classes.csv", "/m/01,Cat\n/m/02,Dog\n")
    assert read_openimages(path, image_sizes=(200, 100),
                           class_names=descriptions).categories.names == ("Cat", "Dog")


def test_openimages_errors(tmp_path):
    path = write(tmp_path / "oi.csv", OI_HEADER + "img1,,cat,,0.1,1.5,0,1,,,,,\n")
    with expect(re.escape("XMax must be in [0, 1] (normalised); got 1.5"), source=path,
                record="line 2"):
        read_openimages(path, image_sizes=(10, 10))
    path = write(tmp_path / "oi.csv", OI_HEADER + "img1,,cat,,0.1,0.5,0,1,,,,,\n")
    with expect("the size of img1 is unknown", source=path, record="line 2"):
        read_openimages(path)
    with expect("label 'cat' is not in class_names", source=path, record="line 2"):
        read_openimages(path, image_sizes=(10, 10), class_names={"/m/01": "dog"})
    unquoted = write(tmp_path / "u.csv", OI_HEADER + "img1,,cat,,0,1,0,5,0,1,0,1,,,,,\n")
    with expect(r"expected 13 fields like the header; got 17 \(a decimal comma must be quoted",
                source=unquoted, record="line 2"):
        read_openimages(unquoted, image_sizes=(10, 10))


def test_openimages_detections(tmp_path):
    path = write(tmp_path / "dt.csv", "ImageID,LabelName,Score,XMin,XMax,YMin,YMax\n"
                                      'a,dog,"0,5",0,"0,5",0,1\n')
    dt = read_openimages_detections(path, tiny_dataset())
    assert dt.boxes.tolist() == [[0, 0, 50, 50]] and dt.scores.tolist() == [0.5]
    assert read_detections(path, tiny_dataset(), format="openimages").scores.tolist() == [0.5]


# ------------------------------------------------------------------------------------------
# LabelMe


def labelme(shapes, **extra) -> str:
    return json.dumps({"imagePath": "a.jpg", "imageWidth": 64, "imageHeight": 48,
                       "shapes": shapes, **extra})


def test_labelme_shapes(tmp_path):
    path = write(tmp_path / "a.json", labelme([
        {"label": "cat", "points": [[30, 40], [1, 2]], "shape_type": "rectangle"},
        {"label": "dog", "points": [[5, 5], [9, 1], [7, 8]]},  # no shape_type: polygon
        {"label": "sun", "points": [[10, 10], [13, 14]], "shape_type": "circle"},
    ]))
    dataset = read_labelme(path)
    assert dataset.gt.boxes.tolist() == [[1, 2, 30, 40], [5, 1, 9, 8], [5, 5, 15, 15]]
    assert dataset.categories.names == ("cat", "dog", "sun")


def test_labelme_points_are_skipped_with_a_warning(tmp_path):
    path = write(tmp_path / "a.json", labelme([
        {"label": "cat", "points": [[1, 1]], "shape_type": "point"},
        {"label": "cat", "points": [[1, 1], [3, 3]], "shape_type": "rectangle"},
    ]))
    with pytest.warns(FormatWarning, match=re.escape(
            f"1 shape(s) without an area (point, line, ...) skipped; the first: {path}: "
            "shapes[0]: 'point'")):
        dataset = read_labelme(path)
    assert len(dataset.gt) == 1


LABELME_ERRORS = [
    pytest.param([{"label": "cat", "points": [[1, 1], [2, "x"]], "shape_type": "rectangle"}],
                 "'points' must be a list of [x, y] pairs of finite numbers", "shapes[0]",
                 id="bad-point"),
    pytest.param([{"label": "cat", "points": [[1, 1]], "shape_type": "rectangle"}],
                 "a rectangle needs 2 points; got 1", "shapes[0]", id="one-corner"),
    pytest.param([{"points": [[1, 1], [2, 2]]}], "'label' must be a non-empty string; got None",
                 "shapes[0]", id="no-label"),
    pytest.param(["cat"], "a shape must be a JSON object", "shapes[0]", id="not-an-object"),
]


@pytest.mark.parametrize(("shapes", "message", "record"), LABELME_ERRORS)
def test_labelme_errors(tmp_path, shapes, message, record):
    path = write(tmp_path / "a.json", labelme(shapes))
    with expect(re.escape(message), source=path, record=record):
        read_labelme(tmp_path)


def test_labelme_file_errors_and_image_paths(tmp_path):
    path = write(tmp_path / "a.json", '{"version": "5"}')
    with expect("a LabelMe file must be a JSON object with a 'shapes' list", source=path):
        read_labelme(path)
    path = write(tmp_path / "a.json", labelme([], imageWidth=0))
    with expect("'imageWidth' must be a positive number; got 0", source=path):
        read_labelme(path)
    path = write(tmp_path / "a.json", "")
    with expect("LabelMe file is empty", source=path):
        read_labelme(path)
    # The path written in the file names the image; it is never opened.
    path = write(tmp_path / "a.json", json.dumps({"imagePath": "..\\..\\etc\\x.jpg",
                                                  "shapes": []}))
    (tmp_path / "images").mkdir()
    dataset = read_labelme(path, images_dir=tmp_path / "images")
    assert dataset.images.file_names == ("x.jpg",) and np.isnan(dataset.images.widths[0])


# ------------------------------------------------------------------------------------------
# CVAT


def cvat(body: str, labels=("cat", "dog")) -> str:
    declared = "".join(f"<label><name>{n}</name></label>" for n in labels)
    return (f"<annotations>\n<meta><task><labels>{declared}</labels></task></meta>\n"
            f'<image id="0" name="dir/a.jpg" width="64" height="48">\n{body}</image>\n'
            "</annotations>\n")


def test_cvat_boxes_polygons_and_difficult(tmp_path):
    path = write(tmp_path / "c.xml", cvat(
        '<box label="dog" xtl="1.5" ytl="2" xbr="30" ybr="40" occluded="1">'
        '<attribute name="difficult">true</attribute></box>\n'
        '<polygon label="cat" points="5,5;9,1;7,8"/>\n'
        '<ellipse label="cat" cx="10" cy="10" rx="3" ry="2"/>\n'))
    dataset = read_cvat(path)
    assert dataset.categories.names == ("cat", "dog")  # as declared in <meta>
    assert dataset.images.file_names == ("dir/a.jpg",)
    assert dataset.gt.boxes.tolist() == [[1.5, 2, 30, 40], [5, 1, 9, 8], [7, 8, 13, 12]]
    assert dataset.gt.ignore.tolist() == [True, False, False]


CVAT_ERRORS = [
    pytest.param('<box label="cat" xtl="30" ytl="2" xbr="1" ybr="40"/>\n',
                 "xbr must be >= xtl; got xtl=30, xbr=1", "line 4", id="xbr-below-xtl"),
    pytest.param('<box label="cat" xtl="1" ytl="2" xbr="30"/>\n', "<box> without ybr",
                 "line 4", id="no-ybr"),
    pytest.param('<box xtl="1" ytl="2" xbr="30" ybr="40"/>\n', "<box> without a label",
                 "line 4", id="no-label"),
    pytest.param('<box label="cat" xtl="1" ytl="2" xbr="30" ybr="40" rotation="45"/>\n',
                 "rotated boxes are not supported; got rotation='45'", "line 4", id="rotated"),
    pytest.param('<box label="cat" xtl="a" ytl="2" xbr="30" ybr="40"/>\n',
                 "xtl must be a number; got 'a'", "line 4", id="not-a-number"),
    pytest.param('<box label="cow" xtl="1" ytl="2" xbr="30" ybr="40"/>\n',
                 "class 'cow' is not one of the classes (cat, dog)", "line 4",
                 id="undeclared-label"),
]


@pytest.mark.parametrize(("body", "message", "record"), CVAT_ERRORS)
def test_cvat_errors_name_file_and_line(tmp_path, body, message, record):
    path = write(tmp_path / "c.xml", cvat(body))
    with expect(re.escape(message), source=path, record=record):
        read_cvat(path)


def test_cvat_tracks_refused_and_polylines_skipped(tmp_path):
    path = write(tmp_path / "t.xml", "<annotations>\n<track id='0' label='cat'/></annotations>")
    with expect("video tracks", source=path, record="line 2"):
        read_cvat(path)
    path = write(tmp_path / "p.xml", cvat('<polyline label="cat" points="1,1;2,2"/>\n'))
    with pytest.warns(FormatWarning, match=r"1 shape\(s\) without a box \(polyline, \.\.\.\) "
                                           r"skipped; the first: .*p\.xml: line 4"):
        assert len(read_cvat(path).gt) == 0


def test_readers_never_modify_their_inputs(voc_sample_dir, tmp_path):
    folder = voc_sample_dir / "gts" / "pascalvoc_format"
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.iterdir()}
    read_gt(folder)
    assert {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.iterdir()} == before


def test_coco_results_list_file_errors_name_the_file(tmp_path):
    path = tmp_path / "dets.json"
    path.write_text(json.dumps([{"image_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5}]))
    with pytest.raises(FormatError, match=re.escape(f"{path}: results[0]: missing 'category_id'")):
        read_detections(path, tiny_dataset())
