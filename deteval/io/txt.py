"""Detection text files: one ``<image key>.txt`` per image, ``class score b1 b2 b3 b4`` per
line (reader).

The four box numbers are in ``box_format``, one of :data:`deteval.boxes.BOX_FORMATS`:

==================== ================================= ====================================
layout               line                              ``box_format``
==================== ================================= ====================================
absolute xywh        ``class score x y w h``           ``"xywh"``
absolute corners     ``class score x1 y1 x2 y2``       ``"xyxy"``
relative (YOLO-like) ``class score cx cy w h``         ``"cxcywhn"`` (``"xywhn"``,
                                                       ``"xyxyn"`` for the others)
==================== ================================= ====================================

Absolute numbers are continuous pixel coordinates; relative ones are divided by the image
width and height (taken from the dataset) and must lie in [0, 1]. ``class`` is a category
id or name of the dataset, or, with ``names`` (e.g. ``voc.names``), a 0-based index into the
names file, mapped onto the dataset's categories by name. Class names cannot hold spaces.
An image without a file, and an empty file, have no detections.

Examples
--------
>>> import tempfile, pathlib
>>> from deteval.data import Categories, Dataset, GroundTruth, Images
>>> dataset = Dataset(Images(ids=[1], widths=[100], heights=[50], file_names=["a.jpg"]),
...                   Categories(ids=[1, 2], names=["cat", "dog"]),
...                   GroundTruth(image_index=[], category_index=[], boxes=[]))
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "a.txt").write_text("dog 0.9 10 5 20 10\\n")
>>> dt = read_txt_detections(folder, dataset, box_format="xywh")
>>> dt.boxes.tolist(), dt.category_index.tolist(), dt.scores.tolist()
([[10.0, 5.0, 30.0, 15.0]], [1], [0.9])
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..data import Dataset, Detections
from ..errors import FormatError
from ._common import (
    _COORD_NAMES,
    check_box_format,
    detection_categories,
    image_key,
    image_row,
    image_rows_by_key,
    list_files,
    make_detections,
    parse_numbers,
    read_text,
)

__all__ = ["read_txt_detections"]


def read_txt_detections(path: str | os.PathLike, dataset: Dataset, *, box_format: str,
                        names: Any = None) -> Detections:
    """Read ``class score <box>`` detection files for ``dataset``.

    Parameters
    ----------
    path : str or PathLike
        A folder of ``<image key>.txt`` files, or one such file.
    dataset : Dataset
        The images (found by key) with their sizes, and the categories.
    box_format : str
        The layout of the four box numbers (see the module notes).
    names : path or sequence of str, optional
        Class names by index; see the module notes.

    Returns
    -------
    Detections
        In file order, then line order (ids ``1..n``). ``xywh`` is kept for ``"xywh"``.
        A class the dataset lacks gives ``category_index == -1``.

    Raises
    ------
    FormatError
        A line without 6 fields, a score or coordinate that is not a finite number, a
        relative coordinate outside [0, 1], an inverted box, a class index beyond ``names``,
        a file whose image is not in the dataset; each names the file and line.
    """
    check_box_format(box_format)
    path = Path(path)
    files = [path] if path.is_file() else list_files(path, (".txt",), what="detections")
    rows = image_rows_by_key(dataset.images)
    tokens: list[str] = []
    classes: list[str] = []
    image_index: list[int] = []
    file_of: list[int] = []
    line_of: list[int] = []
    for f, file in enumerate(files):
        row = image_row(rows, image_key(file.stem), dataset, str(file))
        text = read_text(file, what="detections", allow_empty=True)
        for number, line in enumerate(text.splitlines(), 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 6:
                raise FormatError(f"expected 6 fields 'class score {' '.join(_names(box_format))}"
                                  f"'; got {len(fields)}", source=str(file),
                                  record=f"line {number}")
            classes.append(fields[0])
            tokens.extend(fields[1:])
            image_index.append(row)
            file_of.append(f)
            line_of.append(number)

    def where(i: int) -> tuple[str, str]:
        return str(files[file_of[i]]), f"line {line_of[i]}"

    fields = ("score", *_names(box_format))
    values = parse_numbers(tokens, where=lambda i: where(i // 5),
                           field=lambda i: fields[i % 5]).reshape(-1, 5)
    category_index, category_ids = detection_categories(classes, dataset, names, where=where)
    return make_detections(np.array(image_index, dtype=np.int64), category_index,
                           category_ids, values[:, 1:], values[:, 0].copy(), box_format,
                           dataset, where=where, names=_names(box_format))


def _names(box_format: str) -> tuple[str, ...]:
    return _COORD_NAMES[box_format.rstrip("n")]
