"""CVAT for images XML (``annotations.xml``, format 1.1): reader.

``<image name=... width=... height=...>`` elements hold ``<box label=... xtl=... ytl=...
xbr=... ybr=...>`` in **continuous pixel coordinates** (origin at the top-left corner of the
image, two decimals as CVAT writes them). ``<polygon points="x,y;x,y;...">`` becomes its
bounding box and ``<ellipse cx cy rx ry>`` its bounding box; points, polylines, masks,
skeletons and cuboids have no box and are skipped with a
:class:`~deteval.errors.FormatWarning`. A box attribute ``difficult`` (``<attribute
name="difficult">true</attribute>``, as CVAT's VOC-style labels have) becomes ``ignore``.
Rotated boxes and video tracks (``<track>``) are refused: the ground-truth types hold
axis-aligned boxes of still images.

Categories follow the order of the labels declared in ``<meta>`` (ids ``1..k``), unless
``classes`` is given; without a declaration, the sorted names found. The file is parsed
without any DTD or entity (see :func:`deteval.io.formats.parse_xml`).

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "annotations.xml"
>>> _ = path.write_text('<annotations><image id="0" name="a.jpg" width="64" height="48">'
...                     '<box label="cat" xtl="1.5" ytl="2" xbr="30" ybr="40"/></image>'
...                     '</annotations>')
>>> read_cvat(path).gt.boxes.tolist()
[[1.5, 2.0, 30.0, 40.0]]
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from ..data import Dataset
from ..errors import FormatError
from ._common import (
    FormatWarning,
    build_dataset,
    category_table,
    image_key,
    located,
    parse_flags,
    parse_numbers,
    parse_xml,
    to_float,
    to_xyxy,
)

__all__ = ["read_cvat"]

_CORNERS = ("xtl", "ytl", "xbr", "ybr")
_ELLIPSE = ("cx", "cy", "rx", "ry")
_NO_BOX = ("points", "polyline", "mask", "skeleton", "cuboid", "tag")


def read_cvat(path: str | os.PathLike, *, classes: Any = None) -> Dataset:
    """Read a CVAT for images XML file into a :class:`Dataset`.

    Parameters
    ----------
    path : str or PathLike
    classes : sequence or names file, optional
        Category order (ids ``1..k``); a label outside it is an error. Default: the labels
        declared in ``<meta>``, else the sorted names found.

    Raises
    ------
    FormatError
        Not ``<annotations>``, a ``<!DOCTYPE``, tracks, a shape without a label or a
        coordinate, a coordinate that is not a finite number, ``xbr < xtl``, a rotated box,
        a repeated image name; each names the file and line.
    """
    source = str(path)
    root, lines = parse_xml(path, what="CVAT annotation")
    if root.tag != "annotations":
        raise FormatError(f"the root element must be <annotations> (CVAT for images); got "
                          f"<{root.tag}>", source=source, record=f"line {lines[root]}")
    track = root.find("track")
    if track is not None:
        raise FormatError("video tracks (<track>) are not supported: export as CVAT for "
                          "images", source=source, record=f"line {lines[track]}")
    if classes is None:
        meta = root.find("meta")
        declared = [] if meta is None else [
            label.findtext("name", "").strip() for label in meta.iter("label")]
        classes = tuple(dict.fromkeys(n for n in declared if n)) or None
    keys: list[str] = []
    file_names: list[str] = []
    sizes: list[tuple[float, float]] = []
    numbers: list[str] = []
    kinds: list[str] = []
    image_of: list[int] = []
    labels: list[str] = []
    difficult: list[str] = []
    line_of: list[int] = []
    polygons: dict[int, list[float]] = {}
    skipped: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for image in root.iter("image"):
        name = image.get("name", "").strip()
        if not name:
            raise FormatError("<image> without a name", source=source,
                              record=f"line {lines[image]}")
        key = image_key(name)
        if key in seen:
            raise FormatError(f"image {key!r} appears twice (also at line {seen[key]})",
                              source=source, record=f"line {lines[image]}")
        seen[key] = lines[image]
        size = []
        for attr in ("width", "height"):
            try:
                size.append(to_float(image.get(attr, "nan")))
            except ValueError:
                raise FormatError(f"{attr} must be a number; got {image.get(attr)!r}",
                                  source=source, record=f"line {lines[image]}") from None
        n_image = len(keys)
        keys.append(key)
        file_names.append(name)
        sizes.append((size[0], size[1]))
        for shape in image:
            if shape.tag in _NO_BOX:
                skipped.append((lines[shape], shape.tag))
                continue
            if shape.tag not in ("box", "polygon", "ellipse"):
                continue
            record = f"line {lines[shape]}"
            label = shape.get("label", "").strip()
            if not label:
                raise FormatError(f"<{shape.tag}> without a label", source=source,
                                  record=record)
            rotation = shape.get("rotation", "0")
            if rotation.strip() not in ("0", "0.0", "0.00", ""):
                raise FormatError(f"rotated boxes are not supported; got rotation={rotation!r}",
                                  source=source, record=record)
            row = len(labels)
            if shape.tag == "polygon":
                polygons[row] = _polygon_box(shape.get("points", ""), source, record)
                numbers.extend(repr(v) for v in polygons[row])
            else:
                attrs = _CORNERS if shape.tag == "box" else _ELLIPSE
                for attr in attrs:
                    if shape.get(attr) is None:
                        raise FormatError(f"<{shape.tag}> without {attr}", source=source,
                                          record=record)
                    numbers.append(shape.get(attr))
            kinds.append(shape.tag)
            image_of.append(n_image)
            labels.append(label)
            flag = next((a.text or "" for a in shape.findall("attribute")
                         if a.get("name", "").lower() == "difficult"), "0")
            difficult.append(flag.strip())
            line_of.append(lines[shape])
    if skipped:
        warnings.warn(f"{len(skipped)} shape(s) without a box ({skipped[0][1]}, ...) skipped; "
                      f"the first: {source}: line {skipped[0][0]}", FormatWarning, stacklevel=2)

    def where(i: int) -> tuple[str, str]:
        return source, f"line {line_of[i]}"

    coords = parse_numbers(numbers, where=lambda i: where(i // 4),
                           field=lambda i: _field(kinds[i // 4], i % 4)).reshape(-1, 4)
    ellipse = np.array([k == "ellipse" for k in kinds], dtype=bool)
    if ellipse.any():
        c = coords[ellipse]
        bad = np.flatnonzero((c[:, 2] < 0) | (c[:, 3] < 0))
        if len(bad):
            i = int(np.flatnonzero(ellipse)[bad[0]])
            raise located(f"ellipse radii must be >= 0; got {c[bad[0], 2:].tolist()}", where(i))
        coords[ellipse] = np.column_stack([c[:, :2] - c[:, 2:], c[:, :2] + c[:, 2:]])
    boxes = to_xyxy(coords, "xyxy", np.zeros((len(coords), 2)), where=where, names=_CORNERS)
    ignore = parse_flags(difficult, where=where, field="attribute 'difficult'")
    categories, category_of = category_table(labels, classes, where=where)
    return build_dataset(keys=keys, file_names=file_names, sizes=np.array(sizes).reshape(-1, 2),
                         image_of=np.array(image_of, dtype=np.int64), categories=categories,
                         category_of=category_of, boxes=boxes, where=where, ignore=ignore,
                         source=source)


def _field(kind: str, column: int) -> str:
    return (_CORNERS if kind != "ellipse" else _ELLIPSE)[column] if kind != "polygon" \
        else "points"


def _polygon_box(points: str, source: str, record: str) -> list[float]:
    try:
        pairs = [tuple(to_float(v) for v in p.split(",")) for p in points.split(";") if p.strip()]
    except ValueError:
        pairs = []
    if not pairs or any(len(p) != 2 for p in pairs):
        raise FormatError(f"points must be 'x,y;x,y;...'; got {points[:80]!r}", source=source,
                          record=record)
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    return [min(xs), min(ys), max(xs), max(ys)]
