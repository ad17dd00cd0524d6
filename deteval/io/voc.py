"""Pascal VOC XML: one ``<annotation>`` file per image (reader and writer).

Coordinates
-----------
VOC's ``<bndbox>`` holds **1-based, inclusive pixel indices**: a box over a whole W x H image
is ``xmin=1, ymin=1, xmax=W, ymax=H``, and the VOC devkit measures it as
``(xmax - xmin + 1) * (ymax - ymin + 1)`` pixels. Tools disagree about how to turn that into
continuous coordinates, so both readings are offered:

* ``one_based=False`` (default): the numbers as written, ``[xmin, ymin, xmax, ymax]``, as
  torchvision's and mmdetection's VOC loaders read them, and as every other format of the
  shared ``voc_sample_100`` holds them: its COCO, YOLO, LabelMe, CVAT and Open Images files
  were converted from these XML files by copying the numbers (COCO ``x = xmin``,
  ``w = xmax - xmin``), so the default keeps VOC and its conversions box-for-box equal.
* ``one_based=True``: the pixels' exact extent, ``[xmin - 1, ymin - 1, xmax, ymax]``
  (detectron2's reading). Continuous IoU on these boxes equals the devkit's ``+ 1`` IoU.

The writer applies the inverse, so a round trip returns the same boxes either way.

Other fields: ``<difficult>1</difficult>`` becomes ``GroundTruth.ignore`` (neither to be
found nor penalised, as in the devkit); ``<truncated>``, ``<occluded>``, ``<pose>`` and the
person-layout ``<part>`` boxes are not used by the VOC protocol and are not read. Images
without ``<size>`` (or with a size of 0) get their size from ``images_dir`` if given, else NaN.

Examples
--------
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "img1.xml").write_text(
...     "<annotation><filename>img1.jpg</filename><size><width>64</width>"
...     "<height>48</height></size><object><name>cat</name><difficult>1</difficult>"
...     "<bndbox><xmin>1</xmin><ymin>2</ymin><xmax>30</xmax><ymax>40</ymax></bndbox>"
...     "</object></annotation>")
>>> dataset = read_voc(folder)
>>> dataset.gt.boxes.tolist(), dataset.gt.ignore.tolist(), dataset.categories.names
([[1.0, 2.0, 30.0, 40.0]], [True], ('cat',))
>>> read_voc(folder, one_based=True).gt.boxes.tolist()
[[0.0, 1.0, 30.0, 40.0]]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np

from ..data import Dataset
from ..errors import FormatError
from ._common import (
    FileImages,
    build_dataset,
    category_table,
    image_key,
    list_files,
    parse_flags,
    parse_numbers,
    parse_xml,
    to_float,
    to_xyxy,
)
from ._json import check_input_file

__all__ = ["read_voc", "write_voc"]

_CORNERS = ("xmin", "ymin", "xmax", "ymax")


def _annotation_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.exists():
        raise FormatError("VOC annotation folder does not exist", source=str(path))
    if not path.is_dir():
        check_input_file(path, what="VOC annotation")   # a device or a FIFO: refused
    if (path / "Annotations").is_dir() and not any(path.glob("*.xml")):
        path = path / "Annotations"  # a VOCdevkit year folder
    return list_files(path, (".xml",), what="VOC annotation")


def _text(element: ElementTree.Element | None, tag: str) -> str | None:
    child = None if element is None else element.find(tag)
    return None if child is None or child.text is None else child.text.strip()


def read_voc(path: str | os.PathLike, *, classes: Any = None, one_based: bool = False,
             images_dir: str | os.PathLike | None = None) -> Dataset:
    """Read Pascal VOC XML annotations into a :class:`Dataset`.

    Parameters
    ----------
    path : str or PathLike
        A folder of ``.xml`` files, a VOC year folder holding ``Annotations/``, or one file.
    classes : sequence of str or path, optional
        The categories in order (ids ``1..k``); a name outside them is an error. Default: the
        names found, sorted.
    one_based : bool
        Read ``xmin``/``ymin`` as 1-based pixel indices (subtract 1); see the module notes.
    images_dir : str or PathLike, optional
        Folder of the images, measured (Pillow) where ``<size>`` is missing or 0. Only its
        own files are opened, found by the key of ``<filename>``.

    Returns
    -------
    Dataset
        Images in file-name order with ids ``1..n``; ``ignore`` from ``<difficult>``.

    Raises
    ------
    FormatError
        A missing or empty file, XML that is not well-formed or has a ``<!DOCTYPE``, a root
        that is not ``<annotation>``, an object without ``<name>`` or a ``<bndbox>`` corner,
        a corner that is not a finite number, ``xmax < xmin`` or ``ymax < ymin`` (with
        ``one_based``: ``xmax < xmin - 1``, as the box then spans ``xmin - 1..xmax``), a
        ``<difficult>`` that is not 0/1; each names the file and line.
    """
    files = _annotation_files(Path(path))
    images = FileImages(images_dir)
    image_of: list[int] = []
    labels: list[str] = []
    corners: list[str] = []
    difficult: list[str] = []
    file_of: list[int] = []
    line_of: list[int] = []
    for file_index, file in enumerate(files):
        root, lines = parse_xml(file, what="VOC annotation")
        if root.tag != "annotation":
            raise FormatError(f"the root element must be <annotation> (Pascal VOC); got "
                              f"<{root.tag}>", source=str(file), record=f"line {lines[root]}")
        file_name = _text(root, "filename") or file.stem
        key = images.claim(file_name, file)
        size = root.find("size")
        width_height = []
        for tag in ("width", "height"):
            text = _text(size, tag)
            try:
                value = to_float(text) if text else float("nan")
            except ValueError:
                raise FormatError(f"<{tag}> must be a number; got {text!r}", source=str(file),
                                  record=f"line {lines[size.find(tag)]}") from None
            width_height.append(value if value > 0 else float("nan"))
        image = images.add(key, file_name, width_height[0], width_height[1])
        for obj in root.findall("object"):
            name = _text(obj, "name")
            if not name:
                raise FormatError("<object> without a <name>", source=str(file),
                                  record=f"line {lines[obj]}")
            box = obj.find("bndbox")
            if box is None:
                raise FormatError(f"<object> {name!r} without a <bndbox>", source=str(file),
                                  record=f"line {lines[obj]}")
            for tag in _CORNERS:
                text = _text(box, tag)
                if text is None:
                    raise FormatError(f"<bndbox> without <{tag}>", source=str(file),
                                      record=f"line {lines[box]}")
                corners.append(text)
            image_of.append(image)
            labels.append(name)
            difficult.append(_text(obj, "difficult") or "0")
            file_of.append(file_index)
            line_of.append(lines[box])

    def where(i: int) -> tuple[str, str]:
        return str(files[file_of[i]]), f"line {line_of[i]}"

    coords = parse_numbers(corners, where=lambda i: where(i // 4),
                           field=lambda i: f"<{_CORNERS[i % 4]}>").reshape(-1, 4)
    if one_based:  # the box covers pixels xmin..xmax: continuous [xmin - 1, xmax]
        coords[:, :2] -= 1.0
    boxes = to_xyxy(coords, "xyxy", np.zeros((len(coords), 2)), where=where,
                    names=("xmin-1", "ymin-1", "xmax", "ymax") if one_based else _CORNERS)
    ignore = parse_flags(difficult, where=where, field="<difficult>")
    categories, category_of = category_table(labels, classes, where=where)
    return build_dataset(keys=images.keys, file_names=images.file_names,
                         sizes=np.array(images.sizes).reshape(-1, 2),
                         image_of=np.array(image_of, dtype=np.int64), categories=categories,
                         category_of=category_of, boxes=boxes, where=where, ignore=ignore,
                         source=str(path))


def _number(value: float) -> str:
    """Integral values without a decimal point (as VOC tools write them); others exactly."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(value)


def write_voc(dataset: Dataset, folder: str | os.PathLike, *, one_based: bool = False) -> int:
    """Write one VOC XML file per image (``<key>.xml``) into ``folder``.

    Every image gets a file, with or without objects. Numbers are written exactly (integers
    without a decimal point, others with Python's shortest round-trip ``repr``), so reading
    the folder back with the same ``one_based`` gives the same boxes. ``ignore`` is written
    as ``<difficult>``; crowd flags, ids and areas are not part of VOC.

    Returns
    -------
    int
        The number of files written.
    """
    folder = Path(folder)
    images, gt = dataset.images, dataset.gt
    keys = [image_key(name) if name else str(i)
            for name, i in zip(images.file_names, images.ids.tolist())]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise ValueError(f"two images would both be written to {dup}.xml")
    boxes = gt.boxes.copy()
    if one_based:
        boxes[:, :2] += 1.0
    folder.mkdir(parents=True, exist_ok=True)
    order = np.argsort(gt.image_index, kind="stable")
    starts = np.searchsorted(gt.image_index[order], np.arange(len(images) + 1))
    for row, key in enumerate(keys):
        root = ElementTree.Element("annotation")
        ElementTree.SubElement(root, "filename").text = images.file_names[row] or key
        width, height = float(images.widths[row]), float(images.heights[row])
        if np.isfinite(width) and np.isfinite(height):
            size = ElementTree.SubElement(root, "size")
            ElementTree.SubElement(size, "width").text = _number(width)
            ElementTree.SubElement(size, "height").text = _number(height)
            ElementTree.SubElement(size, "depth").text = "3"
        for k in order[starts[row]:starts[row + 1]].tolist():
            obj = ElementTree.SubElement(root, "object")
            ElementTree.SubElement(obj, "name").text = dataset.categories.names[
                gt.category_index[k]]
            ElementTree.SubElement(obj, "difficult").text = "1" if gt.ignore[k] else "0"
            box = ElementTree.SubElement(obj, "bndbox")
            for tag, value in zip(_CORNERS, boxes[k].tolist()):
                ElementTree.SubElement(box, tag).text = _number(value)
        ElementTree.indent(root)
        ElementTree.ElementTree(root).write(folder / f"{key}.xml", encoding="utf-8")
    return len(keys)
