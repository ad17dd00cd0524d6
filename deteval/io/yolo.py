"""YOLO txt folders: one ``<image key>.txt`` per image, ``class cx cy w h [score]`` per line.

Coordinates
-----------
``cx cy w h`` are the box centre and size **divided by the image width and height**
(continuous coordinates, origin at the image's top-left corner), each in [0, 1]; ``class``
is a 0-based line index into the class-names file (darknet's ``obj.names``, labelImg's
``classes.txt``). Converting them to pixels needs every image's size: it is read from the
image files (Pillow, header only, EXIF rotation applied as Ultralytics does) or given with
``image_sizes``. Files store a fixed number of decimals (6 in most tools), so boxes are
exact only to half a unit of the last decimal times the image size (``0.5e-6 * 500`` =
0.00025 px for 6 decimals and a 500-pixel image).

Categories of a YOLO dataset are its class indices (ids ``0..k-1``) with the names of the
names file. Detections (``class cx cy w h score``, as Ultralytics writes with ``save_conf``)
are matched to a dataset's categories by name through ``names``, or by id without it.

Examples
--------
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "obj.names").write_text("cat\\ndog\\n")
>>> _ = (folder / "img1.txt").write_text("1 0.5 0.5 0.25 0.5\\n")
>>> dataset = read_yolo(folder, image_sizes={"img1.jpg": (640, 480)})
>>> dataset.gt.boxes.tolist(), dataset.categories.names
([[240.0, 120.0, 400.0, 360.0]], ('cat', 'dog'))
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..boxes import convert_boxes
from ..data import Categories, Dataset, Detections
from ..errors import FormatError
from ._common import (
    FormatWarning,
    ImageFolder,
    build_dataset,
    detection_categories,
    image_key,
    image_row,
    image_rows_by_key,
    list_files,
    located,
    make_detections,
    parse_numbers,
    read_names,
    read_text,
    size_lookup,
    to_xyxy,
)

__all__ = ["read_yolo", "read_yolo_detections", "write_yolo"]

_NAMES_FILES = ("obj.names", "classes.txt", "classes.names")
_FIELDS = ("cx", "cy", "w", "h")


def _labels_folder(path: Path) -> Path:
    if not path.is_dir():
        raise FormatError("YOLO labels folder does not exist" if not path.exists()
                          else "YOLO labels must be a folder of .txt files", source=str(path))
    if (path / "obj_train_data").is_dir():  # CVAT's YOLO export (its train.txt lists images)
        return path / "obj_train_data"
    if (path / "labels").is_dir() and not any(path.glob("*.txt")):  # an Ultralytics root
        return path / "labels"
    return path


def _find_names(labels: Path, path: Path) -> Path:
    for folder in dict.fromkeys((labels, path, labels.parent)):
        for name in _NAMES_FILES:
            if (folder / name).is_file():
                return folder / name
    raise FormatError(f"no class-names file ({', '.join(_NAMES_FILES)}) here or in the parent "
                      "folder", source=str(labels),
                      hint="pass names= (a file with one name per line, or a list)",
                      cli_hint="pass --classes FILE (one name per line)")


def _default_images(labels: Path) -> Path | None:
    parts = labels.parts
    if "labels" in parts:  # Ultralytics: .../labels/train -> .../images/train
        i = len(parts) - 1 - parts[::-1].index("labels")
        candidate = Path(*parts[:i], "images", *parts[i + 1:])
        if candidate.is_dir():
            return candidate
    return labels


def _read_lines(files: list[Path], n_fields: int, layout: str):
    """Tokens of every non-blank line, with each row's file and line number."""
    tokens: list[str] = []
    file_of: list[int] = []
    line_of: list[int] = []
    for f, file in enumerate(files):
        for number, line in enumerate(read_text(file, what="YOLO label",
                                                allow_empty=True).splitlines(), 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != n_fields:
                hint = " (a segmentation polygon?)" if len(fields) > 6 else ""
                raise FormatError(f"expected {n_fields} fields '{layout}'; got {len(fields)}"
                                  f"{hint}", source=str(file), record=f"line {number}")
            tokens.extend(fields)
            file_of.append(f)
            line_of.append(number)
    return tokens, np.array(file_of, dtype=np.int64), line_of


def _where(files, file_of, line_of):
    def where(i: int) -> tuple[str, str]:
        return str(files[file_of[i]]), f"line {line_of[i]}"
    return where


def read_yolo(path: str | os.PathLike, *, names: Any = None,
              images_dir: str | os.PathLike | None = None, image_sizes: Any = None) -> Dataset:
    """Read a YOLO labels folder into a :class:`Dataset`.

    Parameters
    ----------
    path : str or PathLike
        The folder of label files; a folder holding ``obj_train_data/`` (CVAT's YOLO export)
        or ``labels/`` is followed into it.
    names : path or sequence of str, optional
        Class names by index. Default: the first of ``obj.names``, ``classes.txt``,
        ``classes.names`` in the labels folder, ``path`` or the labels folder's parent.
    images_dir : str or PathLike, optional
        Folder of the images, measured with Pillow. Default: the ``images`` twin of a
        ``labels`` folder (Ultralytics), else the labels folder itself. Every image in it is
        part of the dataset, with or without a label file.
    image_sizes : (width, height) or mapping, optional
        Sizes instead of (or before) measuring: one for all images, or by file name or key.

    Returns
    -------
    Dataset
        Categories with ids ``0..k-1`` (the class indices); images in key order, ids ``1..n``.

    Raises
    ------
    FormatError
        A line without exactly 5 fields, a value that is not a number, a coordinate outside
        [0, 1], a class index that is not an integer or not in the names file, a label file
        whose image cannot be found or measured; each names the file and line.
    """
    path = Path(path)
    labels = _labels_folder(path)
    names_path = None
    if names is None:
        names_path = _find_names(labels, path)
        names = names_path
    class_names = read_names(names)
    files = [f for f in list_files(labels, (".txt",), what="YOLO labels")
             if names_path is None or f.resolve() != names_path.resolve()]
    folder_path = Path(images_dir) if images_dir is not None else _default_images(labels)
    folder = ImageFolder(folder_path) if folder_path is not None else None
    explicit = size_lookup(None, image_sizes)
    keys = list(folder.by_key) if folder is not None else []
    if isinstance(image_sizes, Mapping):
        keys += [image_key(str(k)) for k in image_sizes]
    label_keys = [image_key(f.stem) for f in files]
    keys = list(dict.fromkeys(keys + label_keys))
    sizes = np.array([explicit(k) for k in keys], dtype=np.float64).reshape(-1, 2)
    for i in np.flatnonzero(~np.isfinite(sizes).all(axis=1)).tolist():
        if folder is not None and keys[i] in folder.by_key:
            sizes[i] = folder.size(keys[i])
    row_of_key = {k: i for i, k in enumerate(keys)}
    tokens, file_of, line_of = _read_lines(files, 5, "class cx cy w h")
    where = _where(files, file_of, line_of)
    values = parse_numbers(tokens, where=lambda i: where(i // 5),
                           field=lambda i: ("class", *_FIELDS)[i % 5]).reshape(-1, 5)
    classes = _class_indices(values[:, 0], tokens[::5], len(class_names), where)
    image_of = np.array([row_of_key[label_keys[f]] for f in file_of.tolist()], dtype=np.int64)
    missing = np.flatnonzero(~np.isfinite(sizes[image_of]).all(axis=1))
    if len(missing):
        source, _ = where(int(missing[0]))
        hint = (f"no image named {label_keys[file_of[missing[0]]]}.* in {folder_path}"
                if folder is not None else "no images folder")
        raise FormatError(f"cannot convert normalised boxes without the image size ({hint})",
                          source=source, hint="pass images_dir=... or image_sizes=...",
                          cli_hint="pass --images DIR")
    boxes = to_xyxy(values[:, 1:], "cxcywhn", sizes[image_of], where=where, names=_FIELDS)
    file_names = [folder.by_key[k].name if folder is not None and k in folder.by_key else k
                  for k in keys]
    categories = Categories(ids=np.arange(len(class_names)), names=class_names)
    return build_dataset(keys=keys, file_names=file_names, sizes=sizes, image_of=image_of,
                         categories=categories, category_of=classes, boxes=boxes, where=where,
                         source=str(path), check_bounds=False)


def _class_indices(values: np.ndarray, tokens: list[str], n_names: int, where) -> np.ndarray:
    bad = np.flatnonzero((values != np.round(values)) | (values < 0) | (values >= n_names))
    if len(bad):
        i = int(bad[0])
        what = ("must be an integer" if values[i] != np.round(values[i])
                else f"is not an index of the {n_names} class names (0..{n_names - 1})")
        raise located(f"class {tokens[i]!r} {what}", where(i))
    return values.astype(np.int64)


def read_yolo_detections(path: str | os.PathLike, dataset: Dataset, *,
                         names: Any = None) -> Detections:
    """Read YOLO detections (``class cx cy w h score`` per line) for ``dataset``.

    Parameters
    ----------
    path : str or PathLike
        Folder of ``<image key>.txt`` files. An image without a file has no detections.
    dataset : Dataset
        Gives the images (by key) and their sizes, and the categories.
    names : path or sequence of str, optional
        Class names by index: classes are mapped onto the dataset's categories by name (a
        name the dataset lacks gives ``category_index == -1``). Without it, class indices
        are the dataset's category ids (as for a dataset read with :func:`read_yolo`).

    Raises
    ------
    FormatError
        As :func:`read_yolo` (with 6 fields), and a file whose image is not in the dataset.
    """
    labels = _labels_folder(Path(path))
    files = list_files(labels, (".txt",), what="YOLO detections")
    rows = image_rows_by_key(dataset.images)
    file_rows = [image_row(rows, image_key(f.stem), dataset, str(f)) for f in files]
    tokens, file_of, line_of = _read_lines(files, 6, "class cx cy w h score")
    where = _where(files, file_of, line_of)
    values = parse_numbers(tokens, where=lambda i: where(i // 6),
                           field=lambda i: ("class", *_FIELDS, "score")[i % 6]).reshape(-1, 6)
    class_tokens = tokens[::6]
    if names is not None:
        names = read_names(names)
        _class_indices(values[:, 0], class_tokens, len(names), where)
    category_index, category_ids = detection_categories(class_tokens, dataset, names,
                                                        where=where)
    image_index = np.array(file_rows, dtype=np.int64)[file_of] if len(file_of) else file_of
    return make_detections(image_index, category_index, category_ids, values[:, 1:5],
                           values[:, 5].copy(), "cxcywhn", dataset, where=where, names=_FIELDS)


def _format(value: float, decimals: int | None) -> str:
    return repr(value) if decimals is None else f"{value:.{decimals}f}"


def write_yolo(dataset: Dataset, folder: str | os.PathLike, *,
               detections: Detections | None = None, decimals: int | None = None,
               names_file: str | None = "obj.names") -> int:
    """Write a YOLO labels folder: ``<key>.txt`` per image and the class-names file.

    Parameters
    ----------
    dataset : Dataset
        Its categories become the names file in table order (class index = row); every image
        gets a file (an empty one without objects), so its image list survives.
    folder : str or PathLike
    detections : Detections, optional
        Write these instead of the ground truth, as ``class cx cy w h score``; detections
        whose category is not in the dataset (``category_index == -1``) are skipped.
    decimals : int, optional
        Digits after the point. Default: Python's shortest exact ``repr``, so that reading
        back gives the boxes to about 1e-13 of the image size; 6 is what most tools write.
    names_file : str or None
        Name of the class-names file written into ``folder``; None writes none.

    Returns
    -------
    int
        The number of boxes written.

    Raises
    ------
    ValueError
        An image with boxes and no known size, or a box reaching beyond its image (YOLO's
        values must lie in [0, 1]), or a class name holding a line break.

    Warns
    -----
    FormatWarning
        Ground truth with ``ignore`` (VOC *difficult*) or crowd objects: YOLO has no such
        flags, so they are written as ordinary objects.
    """
    folder = Path(folder)
    images, source = dataset.images, detections if detections is not None else dataset.gt
    keep = source.category_index >= 0
    image_index, classes = source.image_index[keep], source.category_index[keep]
    boxes = source.boxes[keep]
    if detections is None and (source.ignore.any() or source.iscrowd.any()):
        warnings.warn(f"{int(source.ignore.sum())} ignored (difficult) and "
                      f"{int(source.iscrowd.sum())} crowd object(s) are written as ordinary "
                      "objects: YOLO has no such flags", FormatWarning, stacklevel=2)
    for name in dataset.categories.names:
        if "\n" in name or "\r" in name:
            raise ValueError(f"class name {name!r} holds a line break; a names file cannot "
                             "hold it")
    sizes = np.column_stack([images.widths, images.heights])[image_index]
    unknown = np.flatnonzero(~np.isfinite(sizes).all(axis=1))
    if len(unknown):
        row = image_index[unknown[0]]
        raise ValueError(f"the size of image {images.file_names[row] or images.ids[row]!r} "
                         "is unknown; YOLO stores boxes divided by it")
    normalised = convert_boxes(boxes, "xyxy", "cxcywhn", image_size=sizes.reshape(-1, 2))
    corners = convert_boxes(boxes, "xyxy", "xyxyn", image_size=sizes.reshape(-1, 2))
    bad = np.flatnonzero(((corners < 0) | (corners > 1)).any(axis=1))
    if len(bad):
        row = image_index[bad[0]]
        raise ValueError(f"box {boxes[bad[0]].tolist()} reaches beyond its image "
                         f"{images.file_names[row] or images.ids[row]!r} "
                         f"({sizes[bad[0], 0]:g}x{sizes[bad[0], 1]:g}); YOLO's values must "
                         "lie in [0, 1]")
    keys = [image_key(name) if name else str(i)
            for name, i in zip(images.file_names, images.ids.tolist())]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise ValueError(f"two images would both be written to {dup}.txt")
    scores = detections.scores[keep] if detections is not None else None
    lines: list[list[str]] = [[] for _ in keys]
    for k, (row, cls, box) in enumerate(zip(image_index.tolist(), classes.tolist(),
                                            normalised.tolist())):
        fields = [str(cls), *(_format(v, decimals) for v in box)]
        if scores is not None:
            fields.append(repr(float(scores[k])))
        lines[row].append(" ".join(fields))
    folder.mkdir(parents=True, exist_ok=True)
    for key, rows in zip(keys, lines):
        (folder / f"{key}.txt").write_text("".join(line + "\n" for line in rows),
                                           encoding="utf-8")
    if names_file is not None:
        (folder / names_file).write_text("".join(n + "\n" for n in dataset.categories.names),
                                         encoding="utf-8")
    return len(boxes)
