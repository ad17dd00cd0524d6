"""LabelMe JSON: one file per image with ``imagePath``, ``imageWidth``, ``imageHeight`` and
``shapes`` (reader).

Coordinates are continuous pixels, origin at the image's top-left corner. Shapes become
boxes as follows: ``rectangle`` (two opposite corners, drawn from any corner: the box is their
min and max), ``polygon`` (the bounding box of its points; LabelMe's default shape type when
``shape_type`` is missing), ``circle`` (centre and a point on the circle: centre +- radius).
``point``, ``line``, ``linestrip`` and other shapes have no area; they are skipped with a
:class:`~deteval.errors.FormatWarning`. LabelMe has no *difficult* flag, so ``ignore``
is all False.

``imagePath`` is only used for the image's name (its last component); the embedded
``imageData`` is not decoded. When the size fields are missing, the image is measured in
``images_dir`` (looked up by name, never by the path written in the file).

Examples
--------
>>> import tempfile, pathlib, json
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "a.json").write_text(json.dumps({
...     "imagePath": "../imgs/a.jpg", "imageWidth": 64, "imageHeight": 48,
...     "shapes": [{"label": "cat", "points": [[30, 40], [1, 2]], "shape_type": "rectangle"}]}))
>>> dataset = read_labelme(folder)
>>> dataset.gt.boxes.tolist(), dataset.images.file_names
([[1.0, 2.0, 30.0, 40.0]], ('a.jpg',))
"""

from __future__ import annotations

import math
import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..data import Dataset
from ..errors import FormatError
from ._common import (
    FileImages,
    FormatWarning,
    build_dataset,
    category_table,
    list_files,
)
from ._json import load_json

__all__ = ["read_labelme"]

_BOX_SHAPES = ("rectangle", "polygon", "circle")


def _number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _points(shape: dict, source: str, record: str) -> list:
    points = shape.get("points")
    if (not isinstance(points, list) or not points
            or not all(isinstance(p, list) and len(p) == 2 and _number(p[0]) and _number(p[1])
                       for p in points)):
        raise FormatError(f"'points' must be a list of [x, y] pairs of finite numbers; got "
                          f"{str(points)[:80]}", source=source, record=record)
    return points


def _box(shape_type: str, points: list, source: str, record: str) -> list[float]:
    xs = [float(p[0]) for p in points]
    ys = [float(p[1]) for p in points]
    if shape_type == "rectangle":
        if len(points) != 2:
            raise FormatError(f"a rectangle needs 2 points; got {len(points)}", source=source,
                              record=record)
    elif shape_type == "circle":
        if len(points) != 2:
            raise FormatError(f"a circle needs 2 points (centre, rim); got {len(points)}",
                              source=source, record=record)
        radius = math.hypot(xs[1] - xs[0], ys[1] - ys[0])
        return [xs[0] - radius, ys[0] - radius, xs[0] + radius, ys[0] + radius]
    return [min(xs), min(ys), max(xs), max(ys)]


def read_labelme(path: str | os.PathLike, *, classes: Any = None,
                 images_dir: str | os.PathLike | None = None) -> Dataset:
    """Read LabelMe JSON files (a folder of them, or one) into a :class:`Dataset`.

    Parameters
    ----------
    path : str or PathLike
    classes : sequence or names file, optional
        Category order (ids ``1..k``); a label outside it is an error. Default: sorted labels.
    images_dir : str or PathLike, optional
        Folder to measure images whose file lacks ``imageWidth``/``imageHeight``.

    Raises
    ------
    FormatError
        Missing, empty or invalid JSON; a file that is not a LabelMe object; a shape without a
        label or with malformed points; two files for the same image. Each names the file and
        the shape (``shapes[i]``).
    """
    path = Path(path)
    files = [path] if path.is_file() else list_files(path, (".json",), what="LabelMe")
    images = FileImages(images_dir)
    image_of: list[int] = []
    labels: list[str] = []
    boxes: list[list[float]] = []
    records: list[tuple[str, str]] = []
    skipped: list[tuple[str, str, str]] = []
    for file in files:
        source = str(file)
        data = load_json(file, what="LabelMe").data
        if not isinstance(data, dict) or not isinstance(data.get("shapes"), list):
            raise FormatError("a LabelMe file must be a JSON object with a 'shapes' list",
                              source=source)
        image_path = data.get("imagePath")
        file_name = (re.split(r"[\\/]", image_path)[-1] if isinstance(image_path, str)
                     and image_path else file.stem)
        key = images.claim(file_name, file)
        size = []
        for field in ("imageWidth", "imageHeight"):
            value = data.get(field)
            if value is not None and not (_number(value) and value > 0):
                raise FormatError(f"'{field}' must be a positive number; got {value!r}",
                                  source=source)
            size.append(float(value) if value is not None else math.nan)
        image = images.add(key, file_name, size[0], size[1])
        for s, shape in enumerate(data["shapes"]):
            record = f"shapes[{s}]"
            if not isinstance(shape, dict):
                raise FormatError("a shape must be a JSON object", source=source, record=record)
            label = shape.get("label")
            if not isinstance(label, str) or not label.strip():
                raise FormatError(f"'label' must be a non-empty string; got {label!r}",
                                  source=source, record=record)
            shape_type = shape.get("shape_type") or "polygon"
            if shape_type not in _BOX_SHAPES:
                skipped.append((source, record, str(shape_type)))
                continue
            boxes.append(_box(shape_type, _points(shape, source, record), source, record))
            image_of.append(image)
            labels.append(label.strip())
            records.append((source, record))
    if skipped:
        source, record, kind = skipped[0]
        warnings.warn(f"{len(skipped)} shape(s) without an area (point, line, ...) skipped; "
                      f"the first: {source}: {record}: {kind!r}", FormatWarning, stacklevel=2)

    def where(i: int) -> tuple[str, str]:
        return records[i]

    categories, category_of = category_table(labels, classes, where=where)
    return build_dataset(keys=images.keys, file_names=images.file_names,
                         sizes=np.array(images.sizes).reshape(-1, 2),
                         image_of=np.array(image_of, dtype=np.int64), categories=categories,
                         category_of=category_of,
                         boxes=np.array(boxes, dtype=np.float64).reshape(-1, 4), where=where,
                         source=str(path))
