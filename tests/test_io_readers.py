"""Each format reader (deteval.io.voc, yolo, txt, csv with Open Images, labelme, cvat) on small
hand-built files: the fields it reads, and for every bad input the message, the file and the
line (or record) it names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from iofiles import expect, tiny_dataset, voc_object, voc_xml, write

from deteval import Categories, Dataset, FormatError, GroundTruth, Images
from deteval.errors import FormatWarning
from deteval.io._common import read_names
from deteval.io.csv import (
    read_csv,
    read_csv_detections,
    read_openimages,
    read_openimages_detections,
)
from deteval.io.cvat import read_cvat
from deteval.io.formats import read_detections, read_gt
from deteval.io.labelme import read_labelme
from deteval.io.txt import read_txt_detections
from deteval.io.voc import read_voc
from deteval.io.yolo import read_yolo, read_yolo_detections

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
