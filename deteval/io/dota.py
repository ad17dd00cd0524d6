"""DOTA (v1.0 / v1.5) oriented-object labels and Task1 detection results (readers).

Ground truth is a folder of ``<image>.txt`` label files (or one such file), one object per
line::

    imagesource:GoogleEarth
    gsd:0.146343590398
    x1 y1 x2 y2 x3 y3 x4 y4 class difficult

The ``imagesource:`` and ``gsd:`` header lines are skipped; ``difficult`` (0 or 1) is
optional and defaults to 0. The four corners are absolute pixel coordinates of a
quadrilateral in any order of rotation; class names hold no spaces (``small-vehicle``).

Detections in DOTA's Task1 (oriented boxes) layout are a folder of ``Task1_<class>.txt``
files, one detection per line::

    image_name score x1 y1 x2 y2 x3 y3 x4 y4

``image_name`` is the image's name without extension (``P0003``), matched to the ground
truth's images by key (see :mod:`deteval.io.formats`).

Every object keeps its exact outline in ``polygons`` (shapely, see :mod:`deteval.geometry`);
``boxes`` are the outlines' bounding boxes and ``area`` their polygon areas. A quadrilateral
whose outline crosses itself is refused unless ``invalid="repair"``.

Examples
--------
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "P0001.txt").write_text("imagesource:GoogleEarth\\ngsd:0.5\\n"
...                                       "10 10 30 10 30 20 10 20 plane 0\\n"
...                                       "0 5 5 0 10 5 5 10 ship 1\\n")
>>> ds = read_dota(folder)
>>> ds.categories.names, ds.images.file_names, ds.gt.area.tolist(), ds.gt.ignore.tolist()
(('plane', 'ship'), ('P0001.png',), [200.0, 50.0], [False, True])
>>> results = pathlib.Path(tempfile.mkdtemp())
>>> _ = (results / "Task1_plane.txt").write_text("P0001 0.9 10 10 30 10 30 21 10 21\\n")
>>> dt = read_dota_detections(results, ds)
>>> dt.boxes.tolist(), dt.scores.tolist(), dt.category_index.tolist()
([[10.0, 10.0, 30.0, 21.0]], [0.9], [0])
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..data import Dataset, Detections, GroundTruth, Images
from ..errors import FormatError
from ..geometry import polygon_area, polygon_bounds, polygons_from_coords
from ._common import (
    ImageFolder,
    category_table,
    image_key,
    image_row,
    image_rows_by_key,
    list_files,
    located,
    parse_numbers,
    read_text,
    to_float,
)
from ._json import open_input

__all__ = ["read_dota", "read_dota_detections"]

_CORNERS = ("x1", "y1", "x2", "y2", "x3", "y3", "x4", "y4")
_HEADERS = ("imagesource:", "gsd:")
_TASK1 = "task1_"


def _is_header(line: str) -> bool:
    return line.lower().startswith(_HEADERS)


def looks_like_dota_labels(path: Path) -> bool:
    """Whether a text file starts like DOTA labels: a header line, or a first object line of
    8 numbers, a class name and an optional difficult flag (for format detection)."""
    return _sniff(path) is True


def folder_looks_like_dota(folder: Path, *, max_files: int = 20) -> bool:
    """Whether the first non-empty ``.txt`` file of a folder (among the first ``max_files``)
    looks like DOTA labels."""
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".txt" and p.is_file())
    for file in files[:max_files]:
        verdict = _sniff(file)
        if verdict is not None:
            return verdict
    return False


def _sniff(path: Path) -> bool | None:
    """True or False from the first meaningful line; None for a file without one."""
    try:
        with open_input(path, what="DOTA") as handle:
            head = handle.read(4096).decode("utf-8-sig", errors="replace")
    except OSError:
        return None
    for line in head.splitlines():
        line = line.strip()
        if not line:
            continue
        if _is_header(line):
            return True
        fields = line.split()
        if len(fields) not in (9, 10):
            return False
        try:
            [to_float(v) for v in fields[:8]]
        except ValueError:
            return False
        try:
            to_float(fields[8])
        except ValueError:
            return True  # a class name where a number would be in other layouts
        return False
    return None


def is_task1_file(path: Path) -> bool:
    """Whether a file is named like a DOTA Task1 result file (``Task1_<class>.txt``)."""
    name = path.name
    return name.lower().startswith(_TASK1) and name.lower().endswith(".txt") and len(
        name) > len(_TASK1) + 4


def _label_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.exists():
        raise FormatError("DOTA labels folder does not exist", source=str(path))
    return list_files(path, (".txt",), what="DOTA labels")


def _lines(file: Path, what: str):
    """``(line number, fields)`` of every non-blank line that is not a header."""
    text = read_text(file, what=what, allow_empty=True)
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and not _is_header(stripped):
            yield number, stripped.split()


def read_dota(path: str | os.PathLike, *, images: str | os.PathLike | None = None,
              image_ext: str = ".png", category_names: Any = None,
              invalid: str = "raise") -> Dataset:
    """Read DOTA labels (v1.0 / v1.5 layout) into a :class:`Dataset`.

    Parameters
    ----------
    path : str or PathLike
        A folder of ``<image>.txt`` label files, or one label file.
    images : str or PathLike, optional
        The folder of the images. Their sizes are read from the file headers (Pillow,
        pixels are not decoded; EXIF rotation applied as elsewhere in deteval), and every
        image in it is part of the dataset, with or without a label file. Without it, widths
        and heights are NaN (unknown) and the images are the label files.
    image_ext : str
        Extension of the file names given to images without an ``images`` folder (or not in
        it): ``<label stem><image_ext>``. Default ``".png"``, as DOTA's images.
    category_names : path or sequence of str, optional
        The classes, in the order that gives their ids ``1..k``; a label with another class
        is an error. Default: the class names found, sorted.
    invalid : {"raise", "repair"}
        What to do with a self-intersecting quadrilateral; see
        :func:`deteval.geometry.polygons_from_coords`.

    Returns
    -------
    Dataset
        Images in key order with ids ``1..n``; ground truth with ``polygons``, ``boxes``
        (the polygons' bounds), ``area`` (polygon areas) and ``ignore`` (difficult).

    Raises
    ------
    FormatError
        Naming the file and line: a line without 9 or 10 fields, a coordinate that is not a
        finite number, a difficult flag other than 0 or 1, a class not in
        ``category_names``, an invalid quadrilateral, a label file whose image is not in
        ``images``.
    """
    path = Path(path)
    if not image_ext.startswith("."):
        image_ext = "." + image_ext
    files = _label_files(path)
    stems = [f.stem for f in files]
    if len(set(stems)) != len(stems):
        dup = next(s for s in stems if stems.count(s) > 1)
        raise FormatError(f"two label files are for image {dup!r}", source=str(path))
    tokens: list[str] = []
    labels: list[str] = []
    flags: list[str] = []
    file_of: list[int] = []
    line_of: list[int] = []
    for f, file in enumerate(files):
        for number, fields in _lines(file, "DOTA label"):
            if len(fields) not in (9, 10):
                raise FormatError(f"expected 'x1 y1 x2 y2 x3 y3 x4 y4 class [difficult]' (9 or "
                                  f"10 fields); got {len(fields)}", source=str(file),
                                  record=f"line {number}")
            tokens.extend(fields[:8])
            labels.append(fields[8])
            flags.append(fields[9] if len(fields) == 10 else "0")
            file_of.append(f)
            line_of.append(number)

    def where(i: int) -> tuple[str, str]:
        return str(files[file_of[i]]), f"line {line_of[i]}"

    coords = parse_numbers(tokens, where=lambda i: where(i // 8),
                           field=lambda i: _CORNERS[i % 8]).reshape(-1, 8)
    bad = [i for i, v in enumerate(flags) if v not in ("0", "1")]
    if bad:
        raise located(f"difficult must be 0 or 1; got {flags[bad[0]]!r}", where(bad[0]))
    ignore = np.array([v == "1" for v in flags], dtype=bool)
    categories, category_of = category_table(labels, category_names, where=where)
    polygons = polygons_from_coords(coords, invalid=invalid,
                                    source=[str(files[f]) for f in file_of],
                                    records=[f"line {n}" for n in line_of])
    folder = ImageFolder(images) if images is not None else None
    label_keys = [image_key(s) for s in stems]
    keys = list(dict.fromkeys((list(folder.by_key) if folder is not None else [])
                              + label_keys))
    if folder is not None:
        missing = [f for f, k in zip(files, label_keys) if k not in folder.by_key]
        if missing:
            raise FormatError(f"no image named {missing[0].stem}.* in {images}",
                              source=str(missing[0]))
        file_names = [folder.by_key[k].name for k in keys]
        sizes = np.array([folder.size(k) for k in keys], dtype=np.float64).reshape(-1, 2)
    else:
        file_names = [s + image_ext for s in stems]
        sizes = np.full((len(keys), 2), np.nan)
    order = np.argsort(np.asarray(keys, dtype=str), kind="stable")
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys))
    row_of_key = {k: i for i, k in enumerate(keys)}
    image_of = np.array([rank[row_of_key[label_keys[f]]] for f in file_of], dtype=np.int64)
    images_table = Images(ids=np.arange(1, len(keys) + 1), widths=sizes[order, 0],
                          heights=sizes[order, 1],
                          file_names=tuple(file_names[i] for i in order.tolist()))
    gt = GroundTruth(image_index=image_of, category_index=category_of,
                     boxes=polygon_bounds(polygons).reshape(-1, 4),
                     area=polygon_area(polygons), ignore=ignore, polygons=polygons)
    return Dataset(images=images_table, categories=categories, gt=gt, source=str(path),
                   ids_assigned=True)


def read_dota_detections(path: str | os.PathLike, dataset: Dataset, *,
                         invalid: str = "raise") -> Detections:
    """Read DOTA Task1 results (``Task1_<class>.txt`` files) for ``dataset``.

    Parameters
    ----------
    path : str or PathLike
        A folder of ``Task1_<class>.txt`` files (other files are not read), or one such file.
    dataset : Dataset
        The ground truth: images are found by key (``image_name``), categories by name (the
        ``<class>`` of the file name).
    invalid : {"raise", "repair"}
        What to do with a self-intersecting quadrilateral; see
        :func:`deteval.geometry.polygons_from_coords`.

    Returns
    -------
    Detections
        In file-name order, then line order (ids ``1..n``), with ``polygons``, ``boxes``
        (their bounds), ``area`` (polygon areas), ``scores`` and the dataset's
        ``category_ids``.

    Raises
    ------
    FormatError
        No Task1 file; a file whose class is not a category of the dataset; naming the file
        and line: a line without 10 fields, a score or coordinate that is not a finite
        number, an image that is not in the dataset, an invalid quadrilateral.
    """
    path = Path(path)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and is_task1_file(p))
        if not files:
            raise FormatError("no DOTA Task1_<class>.txt files in this folder",
                              source=str(path))
    else:
        raise FormatError("DOTA results folder does not exist", source=str(path))
    by_name: dict[str, int] = {}
    for row, name in enumerate(dataset.categories.names):
        by_name.setdefault(name, row)
    rows = image_rows_by_key(dataset.images)
    tokens: list[str] = []
    image_names: list[str] = []
    category_of: list[int] = []
    file_of: list[int] = []
    line_of: list[int] = []
    for f, file in enumerate(files):
        if not is_task1_file(file):
            raise FormatError("a DOTA Task1 result file must be named Task1_<class>.txt",
                              source=str(file))
        name = file.name[len(_TASK1):-len(".txt")]
        if name not in by_name:
            shown = ", ".join(dataset.categories.names[:8]) + (
                ", ..." if len(dataset.categories) > 8 else "")
            raise FormatError(f"class {name!r} (from the file name) is not a category of the "
                              f"ground truth ({shown})", source=str(file))
        for number, fields in _lines(file, "DOTA results"):
            if len(fields) != 10:
                raise FormatError(f"expected 'image_name score x1 y1 x2 y2 x3 y3 x4 y4' (10 "
                                  f"fields); got {len(fields)}", source=str(file),
                                  record=f"line {number}")
            image_names.append(fields[0])
            tokens.extend(fields[1:])
            category_of.append(by_name[name])
            file_of.append(f)
            line_of.append(number)

    def where(i: int) -> tuple[str, str]:
        return str(files[file_of[i]]), f"line {line_of[i]}"

    unique, first, inverse = np.unique(np.asarray(image_names, dtype=str), return_index=True,
                                       return_inverse=True)
    unique_rows = np.array([image_row(rows, image_key(u), dataset, *where(int(first[k])))
                            for k, u in enumerate(unique.tolist())], dtype=np.int64)
    image_index = unique_rows[inverse.reshape(-1)] if len(inverse) else np.zeros(0, np.int64)
    values = parse_numbers(tokens, where=lambda i: where(i // 9),
                           field=lambda i: ("score", *_CORNERS)[i % 9]).reshape(-1, 9)
    polygons = polygons_from_coords(values[:, 1:], invalid=invalid,
                                    source=[str(files[f]) for f in file_of],
                                    records=[f"line {n}" for n in line_of])
    category_index = np.array(category_of, dtype=np.int64)
    return Detections(image_index=image_index, category_index=category_index,
                      boxes=polygon_bounds(polygons).reshape(-1, 4), scores=values[:, 0].copy(),
                      area=polygon_area(polygons), polygons=polygons,
                      category_ids=dataset.categories.ids[category_index])
