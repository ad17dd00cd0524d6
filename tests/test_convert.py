"""Tests of the writers and ``convert`` (deteval.io.formats, voc, yolo, csv).

A round trip through COCO, VOC or CSV keeps every box to 1e-9 pixels (VOC and CSV exactly:
numbers are written with Python's shortest round-trip ``repr``; COCO stores ``x + w``), and
through YOLO to the precision written (``decimals=None``: 1e-9 here; ``decimals=6``: 0.75e-6
of the image size). What a format cannot hold is checked to be dropped as documented.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from deteval import Categories, Dataset, Detections, GroundTruth, Images
from deteval.errors import FormatWarning
from deteval.io._common import image_key
from deteval.io.csv import read_csv, read_csv_detections, write_csv
from deteval.io.formats import convert, read_detections, read_gt, write_gt
from deteval.io.voc import read_voc, write_voc
from deteval.io.yolo import read_yolo, write_yolo

CLASSES = ("cat", "dog & <bird>", "person")


def random_dataset(seed: int, *, n_images: int = 12, n_objects: int = 60,
                   flags: bool = True) -> Dataset:
    """Float boxes inside their images (so YOLO can hold them), three categories, some
    images without objects, some ignore and crowd flags."""
    rng = np.random.default_rng(seed)
    widths = rng.integers(50, 2000, n_images).astype(float)
    heights = rng.integers(50, 2000, n_images).astype(float)
    image_index = np.sort(rng.integers(0, n_images - 3, n_objects))  # last 3: no objects
    w, h = widths[image_index], heights[image_index]
    x1, x2 = np.sort(rng.uniform(0, 1, (2, n_objects)), axis=0) * w
    y1, y2 = np.sort(rng.uniform(0, 1, (2, n_objects)), axis=0) * h
    boxes = np.column_stack([x1, y1, x2, y2])
    boxes[:5] = np.round(boxes[:5])  # integral corners are written without a decimal point
    gt = GroundTruth(image_index=image_index, category_index=rng.integers(0, 3, n_objects),
                     boxes=boxes,
                     ignore=(rng.uniform(size=n_objects) < 0.2) if flags else None,
                     iscrowd=(rng.uniform(size=n_objects) < 0.1) if flags else None)
    images = Images(ids=np.arange(1, n_images + 1), widths=widths, heights=heights,
                    file_names=[f"img_{i:03d}.jpg" for i in range(n_images)])
    return Dataset(images, Categories(ids=[1, 2, 3], names=CLASSES), gt)


def rows(dataset: Dataset):
    """Objects in image-key order (file order within an image, which writers keep)."""
    keys = [image_key(dataset.images.file_names[i]) for i in dataset.gt.image_index.tolist()]
    order = np.argsort(keys, kind="stable")
    names = [dataset.categories.names[c] for c in dataset.gt.category_index[order].tolist()]
    return [keys[i] for i in order], names, dataset.gt, order


def assert_same(back: Dataset, original: Dataset, *, atol: float, flags=("ignore", "iscrowd"),
                per_image_scale: bool = False) -> None:
    keys, names, gt, order = rows(back)
    o_keys, o_names, o_gt, o_order = rows(original)
    assert (keys, names) == (o_keys, o_names)
    error = np.abs(gt.boxes[order] - o_gt.boxes[o_order])
    if per_image_scale:
        sizes = np.column_stack([original.images.widths, original.images.heights] * 2)
        error = error / sizes[o_gt.image_index[o_order]]
    assert error.max(initial=0) <= atol
    for flag in flags:
        np.testing.assert_array_equal(getattr(gt, flag)[order], getattr(o_gt, flag)[o_order])
    assert sorted(map(image_key, back.images.file_names)) == sorted(
        map(image_key, original.images.file_names))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coco_round_trip(tmp_path, seed):
    dataset = random_dataset(seed)
    write_gt(dataset, tmp_path / "gt.json")
    back = read_gt(tmp_path / "gt.json")
    assert_same(back, dataset, atol=1e-9)
    np.testing.assert_array_equal(back.images.ids, dataset.images.ids)
    np.testing.assert_array_equal(back.images.widths, dataset.images.widths)
    assert back.categories.names == CLASSES


@pytest.mark.parametrize("one_based", [False, True], ids=["as-written", "one-based"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_voc_round_trip(tmp_path, seed, one_based):
    dataset = random_dataset(seed)
    assert write_voc(dataset, tmp_path, one_based=one_based) == len(dataset.images)
    back = read_voc(tmp_path, classes=CLASSES, one_based=one_based)
    # VOC has no crowd flag; <difficult> carries ignore. Numbers are written exactly, and
    # (x + 1) - 1 is x to within one rounding.
    assert_same(back, dataset, atol=0.0 if not one_based else 1e-9, flags=("ignore",))
    assert not back.gt.iscrowd.any()
    np.testing.assert_array_equal(back.images.heights, dataset.images.heights)
    text = (tmp_path / "img_000.xml").read_text()
    assert "dog &amp; &lt;bird&gt;" in text or "<name>cat</name>" in text


def test_voc_writes_integers_without_a_point(tmp_path):
    dataset = Dataset(Images(ids=[1], widths=[64], heights=[48], file_names=["a.jpg"]),
                      Categories(ids=[1], names=["cat"]),
                      GroundTruth(image_index=[0], category_index=[0],
                                  boxes=[[0, 1.25, 30, 40]]))
    write_voc(dataset, tmp_path, one_based=True)
    text = (tmp_path / "a.xml").read_text()
    assert "<xmin>1</xmin>" in text and "<ymin>2.25</ymin>" in text
    assert "<width>64</width>" in text and "<difficult>0</difficult>" in text


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_yolo_round_trip_exact_repr(tmp_path, seed):
    dataset = random_dataset(seed, flags=False)
    write_yolo(dataset, tmp_path)
    sizes = {n: (w, h) for n, w, h in zip(dataset.images.file_names, dataset.images.widths,
                                          dataset.images.heights)}
    back = read_yolo(tmp_path, image_sizes=sizes)
    assert_same(back, dataset, atol=1e-9)
    assert back.categories.names == CLASSES and back.categories.ids.tolist() == [0, 1, 2]
    assert len(back.images) == len(dataset.images)  # empty label files keep empty images


def test_yolo_round_trip_six_decimals(tmp_path):
    dataset = random_dataset(3, flags=False)
    write_yolo(dataset, tmp_path, decimals=6)
    line = (tmp_path / "img_000.txt").read_text().splitlines()[0]
    assert all(len(field.split(".")[1]) == 6 for field in line.split()[1:])
    sizes = {n: (w, h) for n, w, h in zip(dataset.images.file_names, dataset.images.widths,
                                          dataset.images.heights)}
    back = read_yolo(tmp_path, image_sizes=sizes)
    # cx and w each off by 0.5e-6 at most: corners by 0.75e-6 of the image size.
    assert_same(back, dataset, atol=0.75e-6 + 1e-12, per_image_scale=True)


def test_yolo_writer_warns_about_flags_and_refuses_what_it_cannot_hold(tmp_path):
    dataset = random_dataset(0)
    n_ignore, n_crowd = int(dataset.gt.ignore.sum()), int(dataset.gt.iscrowd.sum())
    with pytest.warns(FormatWarning, match=f"{n_ignore} ignored \\(difficult\\) and {n_crowd} "
                                           "crowd object\\(s\\) are written as ordinary"):
        write_yolo(dataset, tmp_path / "a")
    unsized = Dataset(Images(ids=[1], file_names=["a.jpg"]), Categories(ids=[1]),
                      GroundTruth(image_index=[0], category_index=[0], boxes=[[0, 0, 1, 1]]))
    with pytest.raises(ValueError, match="the size of image 'a.jpg' is unknown; YOLO stores "
                                         "boxes divided by it"):
        write_yolo(unsized, tmp_path / "b")
    outside = Dataset(Images(ids=[1], widths=[10], heights=[10], file_names=["a.jpg"]),
                      Categories(ids=[1]),
                      GroundTruth(image_index=[0], category_index=[0], boxes=[[-1, 0, 5, 5]]))
    with pytest.raises(ValueError, match=re.escape(
            "box [-1.0, 0.0, 5.0, 5.0] reaches beyond its image 'a.jpg' (10x10); YOLO's values "
            "must lie in [0, 1]")):
        write_yolo(outside, tmp_path / "c")


@pytest.mark.parametrize("box_format", ["xyxy", "xywh", "cxcywh", "xyxyn", "cxcywhn"])
@pytest.mark.parametrize("seed", [0, 1])
def test_csv_round_trip(tmp_path, seed, box_format):
    dataset = random_dataset(seed)
    path = tmp_path / ("gt.tsv" if seed else "gt.csv")
    write_csv(dataset, path, box_format=box_format)
    back = read_csv(path, box_format=box_format, classes=CLASSES)
    exact = box_format == "xyxy"
    assert_same(back, dataset, atol=0.0 if exact else 1e-9)
    assert len(back.images) == len(dataset.images)  # image-only rows
    np.testing.assert_array_equal(back.images.widths, dataset.images.widths)
    if seed:
        assert "\t" in path.read_text().splitlines()[0]


def test_csv_detections_round_trip(tmp_path):
    dataset = random_dataset(4)
    rng = np.random.default_rng(4)
    detections = Detections(image_index=dataset.gt.image_index,
                            category_index=np.where(rng.uniform(size=len(dataset.gt)) < 0.1, -1,
                                                    dataset.gt.category_index),
                            boxes=dataset.gt.boxes, scores=rng.uniform(size=len(dataset.gt)))
    n = write_csv(dataset, tmp_path / "dt.csv", detections=detections)
    keep = detections.category_index >= 0
    assert n == int(keep.sum())
    back = read_csv_detections(tmp_path / "dt.csv", dataset)
    np.testing.assert_array_equal(back.boxes, detections.boxes[keep])
    np.testing.assert_array_equal(back.scores, detections.scores[keep])
    np.testing.assert_array_equal(back.category_index, detections.category_index[keep])
    np.testing.assert_array_equal(back.image_index, detections.image_index[keep])


def test_write_gt_needs_a_format_for_folders(tmp_path):
    dataset = random_dataset(0)
    with pytest.raises(ValueError, match="cannot tell which format to write to .*a folder "
                                         "takes 'voc' or 'yolo'"):
        write_gt(dataset, tmp_path / "out")
    with pytest.raises(ValueError, match="format must be one of 'coco', 'voc', 'yolo', 'csv'"):
        write_gt(dataset, tmp_path / "out", format="labelme")
    with pytest.raises(TypeError, match="COCO writing takes no options"):
        write_gt(dataset, tmp_path / "gt.json", one_based=True)


# ------------------------------------------------------------------------------------------
# convert() on the shared sample


@pytest.fixture(scope="module")
def voc(voc_sample_dir) -> Dataset:
    return read_gt(voc_sample_dir / "gts" / "pascalvoc_format")


def test_convert_voc_to_coco(voc_sample_dir, voc, tmp_path):
    convert(voc_sample_dir / "gts" / "pascalvoc_format", tmp_path / "gt.json")
    back = read_gt(tmp_path / "gt.json")
    assert_same(back, voc, atol=0.0)  # integral corners: x + w is exact
    assert int(back.gt.ignore.sum()) == 38  # difficult -> COCO "ignore": 1
    # ... and matches the sample's own COCO conversion box for box.
    other = read_gt(voc_sample_dir / "gts" / "coco_format_v2" / "instances_v2.json")
    assert_same(back, other, atol=0.0, flags=())


def test_convert_voc_to_yolo_and_back(voc_sample_dir, voc, tmp_path):
    with pytest.warns(FormatWarning, match="38 ignored"):
        convert(voc_sample_dir / "gts" / "pascalvoc_format", tmp_path / "yolo", dst_format="yolo")
    back = read_gt(tmp_path / "yolo", format="yolo", images_dir=voc_sample_dir / "images")
    assert_same(back, voc, atol=1e-9, flags=())
    assert back.categories.names == voc.categories.names


def test_convert_voc_to_csv_to_voc(voc_sample_dir, voc, tmp_path):
    convert(voc_sample_dir / "gts" / "pascalvoc_format", tmp_path / "gt.csv")
    convert(tmp_path / "gt.csv", tmp_path / "voc", dst_format="voc")
    back = read_voc(tmp_path / "voc")
    assert_same(back, voc, atol=0.0, flags=("ignore",))
    np.testing.assert_array_equal(back.images.widths, voc.images.widths)


def test_convert_yolo_with_read_options(voc_sample_dir, voc, tmp_path):
    dataset = convert(voc_sample_dir / "gts" / "yolo_format", tmp_path / "gt.json",
                      read_options={"images_dir": voc_sample_dir / "images"})
    back = read_gt(tmp_path / "gt.json")
    assert_same(back, dataset, atol=1e-9)
    assert back.categories.ids.tolist() == list(range(20))  # YOLO's class indices


def test_convert_detections_read_back_from_written_coco(voc_sample_dir, voc, tmp_path):
    from deteval.io.coco import write_coco_results

    dt = read_detections(voc_sample_dir / "dets" / "abs_xywh", voc, box_format="xywh",
                         names=voc_sample_dir / "voc.names")
    write_gt(voc, tmp_path / "gt.json")
    write_coco_results(dt, voc, tmp_path / "dt.json")
    back = read_detections(tmp_path / "dt.json", read_gt(tmp_path / "gt.json"))
    np.testing.assert_array_equal(back.xywh, dt.xywh)
    np.testing.assert_array_equal(back.category_index, dt.category_index)
