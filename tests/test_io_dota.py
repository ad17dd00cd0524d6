"""Tests of deteval.io.dota: DOTA labels and Task1 results on small hand-written files."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from deteval.errors import FormatError
from deteval.geometry import pair_iou, polygons_from_coords
from deteval.io import detect_format, read_detections, read_gt
from deteval.io.dota import read_dota, read_dota_detections

HEADER = "imagesource:GoogleEarth\ngsd:0.146343590398\n"


def write(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def labels(tmp_path):
    folder = tmp_path / "labelTxt"
    write(folder, "P0001.txt", HEADER + "10 10 30 10 30 20 10 20 plane 0\n"
                                        "0 5 5 0 10 5 5 10 small-vehicle 1\n"
                                        "\n"
                                        "40 40 44 40 44 43 40 43 plane\n")
    write(folder, "P0002.txt", "imagesource:null\ngsd:null\n"
                               "1.5 2.5 11.5 2.5 11.5 6.5 1.5 6.5 ship 0\n")
    write(folder, "P0003.txt", HEADER)  # an image without objects
    return folder


def test_labels_with_headers_difficult_and_missing_difficult(labels):
    ds = read_dota(labels)
    assert ds.categories.names == ("plane", "ship", "small-vehicle")  # sorted
    assert ds.categories.ids.tolist() == [1, 2, 3]
    assert ds.images.file_names == ("P0001.png", "P0002.png", "P0003.png")
    assert ds.images.ids.tolist() == [1, 2, 3]
    assert np.isnan(ds.images.widths).all() and np.isnan(ds.images.heights).all()
    gt = ds.gt
    assert gt.image_index.tolist() == [0, 0, 0, 1]
    assert gt.category_index.tolist() == [0, 2, 0, 1]
    assert gt.ignore.tolist() == [False, True, False, False]
    assert not gt.iscrowd.any()
    assert gt.boxes.tolist() == [[10, 10, 30, 20], [0, 0, 10, 10], [40, 40, 44, 43],
                                 [1.5, 2.5, 11.5, 6.5]]
    assert gt.area.tolist() == [200.0, 50.0, 12.0, 40.0]  # the diamond is half its box
    assert [p.geom_type for p in gt.polygons] == ["Polygon"] * 4
    assert gt.polygons[1].equals(polygons_from_coords([[0, 5, 5, 0, 10, 5, 5, 10]])[0])
    assert ds.source == str(labels)


def test_category_names_fix_order_and_ids(labels):
    ds = read_dota(labels, category_names=["ship", "plane", "small-vehicle", "harbor"])
    assert ds.categories.names == ("ship", "plane", "small-vehicle", "harbor")
    assert ds.gt.category_index.tolist() == [1, 2, 1, 0]
    with pytest.raises(FormatError, match=r"P0001.txt: line 4: class 'small-vehicle' is not "
                                          r"one of the classes"):
        read_dota(labels, category_names=["plane", "ship"])


def test_one_label_file_and_image_extension(labels):
    ds = read_dota(labels / "P0002.txt", image_ext="jpg")
    assert ds.images.file_names == ("P0002.jpg",)
    assert ds.categories.names == ("ship",)
    assert len(ds.gt) == 1


@pytest.mark.parametrize(("line", "match"), [
    pytest.param("10 10 30 10 30 20 10 20", r"9 or 10 fields\); got 8", id="no-class"),
    pytest.param("10 10 30 10 30 20 10 plane 0", r"y4 must be a number; got 'plane'",
                 id="seven-numbers"),
    pytest.param("10 10 30 10 30 20 10 20 plane 0 extra", r"9 or 10 fields\); got 11",
                 id="extra"),
    pytest.param("10 10 30 ten 30 20 10 20 plane 0", r"y2 must be a number; got 'ten'",
                 id="not-a-number"),
    pytest.param("10 10 30 10 30 20 10 nan plane 0", r"y4 must be finite", id="nan"),
    pytest.param("10 10 30 10 30 20 10 20 plane 2", r"difficult must be 0 or 1; got '2'",
                 id="difficult-2"),
    pytest.param("0 0 2 2 2 0 0 2 plane 0", r"polygon is not valid \(Self-intersection.*"
                                            r"invalid='repair'", id="bowtie"),
])
def test_bad_label_lines_name_file_and_line(tmp_path, line, match):
    folder = tmp_path / "labels"
    write(folder, "A.txt", HEADER + "1 1 2 1 2 2 1 2 plane 0\n")
    path = write(folder, "B.txt", HEADER + "1 1 2 1 2 2 1 2 plane 0\n" + line + "\n")
    with pytest.raises(FormatError, match=match) as info:
        read_dota(folder)
    assert info.value.source == str(path) and info.value.record == "line 4"


def test_invalid_repair_passes_through(tmp_path):
    folder = tmp_path / "labels"
    write(folder, "A.txt", "0 0 2 2 2 0 0 2 plane 1\n")
    ds = read_dota(folder, invalid="repair")
    assert ds.gt.area.tolist() == [2.0] and ds.gt.polygons[0].geom_type == "MultiPolygon"
    assert ds.gt.boxes.tolist() == [[0, 0, 2, 2]]


def test_image_sizes_from_the_images_folder(labels, tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (64, 48)).save(images / "P0001.png")
    Image.new("L", (20, 30)).save(images / "P0002.png")
    Image.new("RGB", (5, 7)).save(images / "P0003.jpg")
    Image.new("RGB", (8, 9)).save(images / "P0004.png")  # no label file: no objects
    ds = read_dota(labels, images=images)
    assert ds.images.file_names == ("P0001.png", "P0002.png", "P0003.jpg", "P0004.png")
    assert ds.images.widths.tolist() == [64, 20, 5, 8]
    assert ds.images.heights.tolist() == [48, 30, 7, 9]
    assert ds.gt.image_index.tolist() == [0, 0, 0, 1]
    (images / "P0002.png").unlink()
    with pytest.raises(FormatError, match=r"P0002.txt: no image named P0002.\* in"):
        read_dota(labels, images=images)


def test_missing_and_empty_folders(tmp_path):
    with pytest.raises(FormatError, match="does not exist"):
        read_dota(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FormatError, match=r"no \.txt files"):
        read_dota(tmp_path / "empty")


# ---------------------------------------------------------------------- Task1 detections


@pytest.fixture
def results(tmp_path):
    folder = tmp_path / "Task1"
    write(folder, "Task1_plane.txt", "P0001 0.9 10 10 30 10 30 21 10 21\n"
                                     "P0002 0.25 0 0 4 0 4 4 0 4\n"
                                     "\n"
                                     "P0001 0.5 100 100 101 100 101 101 100 101\n")
    write(folder, "Task1_ship.txt", "P0002.png 0.75 1.5 2.5 11.5 2.5 11.5 6.5 1.5 6.5\n")
    write(folder, "Task2_plane.txt", "P0001 0.9 10 10 30 21\n")  # not read
    write(folder, "readme.md", "results of a model\n")
    return folder


def test_task1_detections(labels, results):
    ds = read_dota(labels)
    dt = read_dota_detections(results, ds)
    assert len(dt) == 4
    assert dt.image_index.tolist() == [0, 1, 0, 1]
    assert dt.category_index.tolist() == [0, 0, 0, 1]
    assert dt.category_ids.tolist() == [1, 1, 1, 2]
    assert dt.scores.tolist() == [0.9, 0.25, 0.5, 0.75]
    assert dt.boxes.tolist()[0] == [10, 10, 30, 21]
    assert dt.area.tolist() == [220.0, 16.0, 1.0, 40.0]
    iou = pair_iou(dt.polygons[[0, 3]], ds.gt.polygons[[0, 3]])
    assert iou.tolist() == [200 / 220, 1.0]
    one = read_dota_detections(results / "Task1_ship.txt", ds)
    assert one.category_index.tolist() == [1] and one.image_index.tolist() == [1]


def test_task1_errors_name_file_and_line(labels, tmp_path):
    ds = read_dota(labels)
    folder = tmp_path / "bad"
    path = write(folder, "Task1_plane.txt", "P0001 0.9 10 10 30 10 30 21 10 21\n"
                                            "P0009 0.9 10 10 30 10 30 21 10 21\n")
    with pytest.raises(FormatError, match=r"image 'P0009' is not an image of the ground "
                                          r"truth") as info:
        read_dota_detections(folder, ds)
    assert info.value.source == str(path) and info.value.record == "line 2"
    path.write_text("P0001 0.9 10 10 30 10 30 21 10\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"Task1_plane.txt: line 1: expected 'image_name "
                                          r"score x1 y1 x2 y2 x3 y3 x4 y4' \(10 fields\); "
                                          r"got 9"):
        read_dota_detections(folder, ds)
    path.write_text("P0001 high 10 10 30 10 30 21 10 21\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"line 1: score must be a number; got 'high'"):
        read_dota_detections(folder, ds)
    path.write_text("P0001 0.5 0 0 2 2 2 0 0 2\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"line 1: polygon is not valid"):
        read_dota_detections(folder, ds)
    assert read_dota_detections(folder, ds, invalid="repair").area.tolist() == [2.0]
    path.unlink()
    write(folder, "Task1_helicopter.txt", "P0001 0.9 10 10 30 10 30 21 10 21\n")
    with pytest.raises(FormatError, match=r"Task1_helicopter.txt: class 'helicopter' \(from "
                                          r"the file name\) is not a category"):
        read_dota_detections(folder, ds)
    empty = tmp_path / "empty"
    write(empty, "dets.txt", "")
    with pytest.raises(FormatError, match=r"no DOTA Task1_<class>.txt files"):
        read_dota_detections(empty, ds)
    with pytest.raises(FormatError, match=r"must be named Task1_<class>.txt"):
        read_dota_detections(empty / "dets.txt", ds)


def test_empty_task1_files_give_no_detections(labels, tmp_path):
    folder = tmp_path / "Task1"
    write(folder, "Task1_plane.txt", "")
    dt = read_dota_detections(folder, read_dota(labels))
    assert len(dt) == 0 and dt.boxes.shape == (0, 4) and dt.polygons.shape == (0,)


# ---------------------------------------------------------------------- format detection


def test_format_detection_and_dispatch(labels, results, tmp_path):
    assert detect_format(labels) == "dota"
    assert detect_format(labels / "P0001.txt") == "dota"
    assert detect_format(results, kind="detections") == "dota"
    assert detect_format(results / "Task1_plane.txt", kind="detections") == "dota"
    ds = read_gt(labels)
    assert len(ds.gt) == 4 and ds.gt.polygons is not None
    dt = read_detections(results, ds, invalid="raise")
    assert len(dt) == 4
    # headerless DOTA labels whose first file is empty
    bare = tmp_path / "bare"
    write(bare, "a.txt", "")
    write(bare, "b.txt", "1 1 2 1 2 2 1 2 plane\n")
    assert detect_format(bare) == "dota"
    # YOLO labels and plain txt detections are still what they were
    yolo = tmp_path / "yolo"
    write(yolo, "classes.txt", "cat\n")
    write(yolo, "img.txt", "0 0.5 0.5 0.2 0.2\n")
    assert detect_format(yolo) == "yolo"
    txt = tmp_path / "txt"
    write(txt, "img.txt", "cat 0.9 1 2 3 4\n")
    assert detect_format(txt, kind="detections") == "txt"
