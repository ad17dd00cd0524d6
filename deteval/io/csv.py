"""CSV and TSV tables with one box per row: columns named by the user, and Open Images.

Generic tables
--------------
Each row is one object (or detection): the image, the class name, four box numbers in
``box_format`` (any of :data:`deteval.boxes.BOX_FORMATS`; the normalised ones are divided by
the image size) and optional columns. ``columns`` maps roles to header names; the defaults
read the common ``filename,width,height,class,xmin,ymin,xmax,ymax`` layout (TensorFlow's
object-detection CSV) and what :func:`write_csv` writes:

=========== =================================================== =========================
role        meaning                                             default header name
=========== =================================================== =========================
``image``   image file name or key                              ``filename``
``label``   class name (detections: name, id or names index)    ``class``
``box``     four columns in ``box_format`` order                ``xmin ymin xmax ymax``
                                                                (xyxy), ``x y w h``
                                                                (xywh), ``cx cy w h``
``width``,  image size (optional; used when present)            ``width``, ``height``
``height``
``ignore``  VOC *difficult* 0/1 (optional)                      ``difficult``
``iscrowd`` crowd 0/1 (optional)                                ``iscrowd``
``score``   detections only                                     ``score``
=========== =================================================== =========================

A row whose class and box cells are all empty lists an image without objects. Numbers use a
decimal point unless ``decimal=","`` (decimal commas, e.g. with ``;`` as the delimiter) or
``"auto"`` (either); a decimal comma in a comma-delimited file must be quoted.

Open Images
-----------
``ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,IsGroupOf,...``
with coordinates **divided by the image width and height** (continuous, in [0, 1]); the
image sizes come from ``images_dir`` or ``image_sizes``. Decimal commas (``"0,358"``, as in
files saved by spreadsheet software in many locales) are read as well as points.
``IsGroupOf`` becomes ``iscrowd``; ``LabelName`` is a class name, or a MID (``/m/01g317``)
mapped to a name through ``class_names`` (the ``class-descriptions`` CSV or a dict).
Boxes are exact to the stored digits times the image size.

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "gt.csv"
>>> _ = path.write_text("filename,width,height,class,xmin,ymin,xmax,ymax\\n"
...                     "a.jpg,64,48,cat,1,2,30,40\\n")
>>> read_csv(path).gt.boxes.tolist()
[[1.0, 2.0, 30.0, 40.0]]
"""

from __future__ import annotations

import csv as _csv
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..data import Dataset, Detections
from ..errors import FormatError
from ._common import (
    build_dataset,
    category_table,
    check_box_format,
    detection_categories,
    image_key,
    image_row,
    image_rows_by_key,
    located,
    make_detections,
    parse_flags,
    parse_numbers,
    read_text,
    size_lookup,
    to_xyxy,
)
from ._json import open_input

__all__ = ["read_csv", "read_csv_detections", "read_openimages", "read_openimages_detections",
           "write_csv"]

BOX_COLUMNS = {"xyxy": ("xmin", "ymin", "xmax", "ymax"), "xywh": ("x", "y", "w", "h"),
               "cxcywh": ("cx", "cy", "w", "h")}
_DEFAULTS = {"image": "filename", "label": "class", "width": "width", "height": "height",
             "ignore": "difficult", "iscrowd": "iscrowd", "score": "score"}
_OPTIONAL = ("width", "height", "ignore", "iscrowd")
_OPENIMAGES = {"image": "ImageID", "label": "LabelName", "box": ("XMin", "YMin", "XMax", "YMax"),
               "iscrowd": "IsGroupOf"}


class _Table:
    """A parsed CSV file: header, rows of cells, and each row's line number."""

    def __init__(self, path: Path, delimiter: str | None):
        self.source = str(path)
        text = read_text(path, what="CSV")
        first = text.split("\n", 1)[0]
        if delimiter is None:
            if path.suffix.lower() in (".tsv", ".tab"):
                delimiter = "\t"
            else:
                delimiter = max((",", "\t", ";"), key=first.count)
        self.delimiter = delimiter
        reader = _csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        try:
            self.header = [h.strip() for h in next(reader)]
            self.rows: list[list[str]] = []
            self.lines: list[int] = []
            start = reader.line_num
            for row in reader:
                if row and any(cell.strip() for cell in row):
                    self.rows.append(row)
                    self.lines.append(start + 1)
                start = reader.line_num
        except _csv.Error as err:
            raise FormatError(f"not valid CSV: {err}", source=self.source,
                              record=f"line {reader.line_num}") from None

    def where(self, i: int) -> tuple[str, str]:
        return self.source, f"line {self.lines[i]}"

    def check_widths(self, decimal: str) -> None:
        n = len(self.header)
        for i, row in enumerate(self.rows):
            if len(row) != n:
                hint = (" (a decimal comma must be quoted when the delimiter is a comma)"
                        if decimal != "." and self.delimiter == "," and len(row) > n else "")
                raise located(f"expected {n} fields like the header; got {len(row)}{hint}",
                              self.where(i))

    def column_indices(self, columns: Mapping[str, Any], required: tuple[str, ...],
                       explicit: set[str]) -> dict[str, Any]:
        """Header position of every role's column (box: four); optional roles that are
        absent (and not named by the caller) map to None."""
        position = {name: i for i, name in reversed(list(enumerate(self.header)))}
        out: dict[str, Any] = {}
        for role, name in columns.items():
            names = tuple(name) if role == "box" else (name,)
            found = [position.get(n) for n in names]
            if None in found:
                if role in _OPTIONAL and role not in explicit:
                    out[role] = None
                    continue
                missing = names[found.index(None)]
                if role in required or role in explicit:
                    raise FormatError(f"missing column {missing!r} ({role}); the header has "
                                      f"{', '.join(map(repr, self.header))}",
                                      source=self.source, record="line 1")
                out[role] = None
                continue
            out[role] = tuple(found) if role == "box" else found[0]
        return out

    def column(self, index: int) -> list[str]:
        return [row[index].strip() for row in self.rows]


def _spec(columns: Mapping[str, Any] | None, box_format: str, *, detections: bool):
    check_box_format(box_format)
    user = dict(columns or {})
    known = set(_DEFAULTS) | {"box"}
    unknown = set(user) - known
    if unknown:
        raise ValueError(f"columns has unknown roles {sorted(unknown)}; roles are "
                         f"{sorted(known)}")
    if "box" in user and (isinstance(user["box"], str) or len(tuple(user["box"])) != 4):
        raise ValueError(f"columns['box'] must name 4 columns; got {user['box']!r}")
    spec = dict(_DEFAULTS, box=BOX_COLUMNS[box_format.rstrip("n")])
    if not detections:
        spec.pop("score")
    spec.update(user)
    return spec, set(user)


def _objects(table: _Table, cols: dict, box_format: str, decimal: str):
    """Rows with a box (not image-only rows): their indices, labels and coordinates."""
    labels = table.column(cols["label"])
    box_cells = [table.column(i) for i in cols["box"]]
    empty = [not label and not any(c[i] for c in box_cells) for i, label in enumerate(labels)]
    rows = np.flatnonzero(~np.asarray(empty, dtype=bool)) if len(empty) else np.zeros(0, int)
    rows_list = rows.tolist()
    names = [table.header[i] for i in cols["box"]]

    def where(i: int) -> tuple[str, str]:
        return table.where(rows_list[i])

    flat = [box_cells[c][r] for r in rows_list for c in range(4)]
    coords = parse_numbers(flat, where=lambda i: where(i // 4),
                           field=lambda i: names[i % 4], decimal=decimal).reshape(-1, 4)
    for i, r in enumerate(rows_list):
        if not labels[r]:
            raise located(f"{table.header[cols['label']]} is empty", where(i))
    return rows, [labels[r] for r in rows_list], coords, where, names


def _read_gt_table(path: Any, spec: dict, explicit: set, *, box_format: str, delimiter: Any,
                   decimal: str, classes: Any, images_dir: Any, image_sizes: Any,
                   label_map: Mapping[str, str] | None = None) -> Dataset:
    table = _Table(Path(path), delimiter)
    table.check_widths(decimal)
    cols = table.column_indices(spec, ("image", "label", "box"), explicit)
    keys_of_rows = [image_key(v) for v in table.column(cols["image"])]
    for i, key in enumerate(keys_of_rows):
        if not key:
            raise located(f"{table.header[cols['image']]} is empty", table.where(i))
    image_rows = {}
    for i, key in enumerate(keys_of_rows):
        image_rows.setdefault(key, i)
    keys = list(image_rows)
    image_number = {k: n for n, k in enumerate(keys)}
    image_of_row = np.array([image_number[k] for k in keys_of_rows], dtype=np.int64)
    file_names = [table.rows[i][cols["image"]].strip() for i in image_rows.values()]
    sizes = np.full((len(keys), 2), np.nan)
    if cols.get("width") is not None and cols.get("height") is not None:
        sizes = _sizes_from_columns(table, cols, decimal, image_of_row, len(keys))
    lookup = size_lookup(images_dir, image_sizes)
    for n in np.flatnonzero(~np.isfinite(sizes).all(axis=1)).tolist():
        sizes[n] = lookup(keys[n])
    rows, labels, coords, where, names = _objects(table, cols, box_format, decimal)
    if label_map is not None:
        labels = [_mapped(label_map, label, where, i) for i, label in enumerate(labels)]
    image_of = image_of_row[rows]
    image_names = [file_names[i] for i in image_of.tolist()]
    boxes = to_xyxy(coords, box_format, sizes[image_of], where=where, names=names,
                    image_names=image_names)
    flags = {}
    for role in ("ignore", "iscrowd"):
        index = cols.get(role)
        if index is not None:
            values = table.column(index)
            flags[role] = parse_flags([values[r] for r in rows.tolist()], where=where,
                                      field=table.header[index])
    categories, category_of = category_table(labels, classes, where=where)
    return build_dataset(keys=keys, file_names=file_names, sizes=sizes, image_of=image_of,
                         categories=categories, category_of=category_of, boxes=boxes,
                         where=where, source=str(path), check_bounds=box_format[-1] != "n",
                         **flags)


def _mapped(label_map: Mapping[str, str], label: str, where, i: int) -> str:
    if label not in label_map:
        raise located(f"label {label!r} is not in class_names", where(i))
    return label_map[label]


def _sizes_from_columns(table: _Table, cols: dict, decimal: str, image_of_row: np.ndarray,
                        n_images: int) -> np.ndarray:
    per_row = []
    for role in ("width", "height"):
        cells = table.column(cols[role])
        known = [i for i, c in enumerate(cells) if c]
        values = np.full(len(cells), np.nan)
        name = table.header[cols[role]]
        values[known] = parse_numbers([cells[i] for i in known],
                                      where=lambda j, known=known: table.where(known[j]),
                                      field=lambda j, name=name: name, decimal=decimal)
        bad = np.flatnonzero(values <= 0)
        if len(bad):
            raise located(f"{name} must be positive; got {cells[bad[0]]!r}",
                          table.where(int(bad[0])))
        per_row.append(values)
    per_row = np.column_stack(per_row)
    sizes = np.full((n_images, 2), np.nan)
    for i in range(len(per_row) - 1, -1, -1):  # first row of each image wins
        if np.isfinite(per_row[i]).all():
            sizes[image_of_row[i]] = per_row[i]
    with np.errstate(invalid="ignore"):
        differ = np.flatnonzero(np.isfinite(per_row).all(axis=1)
                                & (per_row != sizes[image_of_row]).any(axis=1))
    if len(differ):
        i = int(differ[0])
        raise located(f"image size {per_row[i].tolist()} differs from an earlier row's "
                          f"{sizes[image_of_row[i]].tolist()} for the same image", table.where(i))
    return sizes


def read_csv(path: str | os.PathLike, *, columns: Mapping[str, Any] | None = None,
             box_format: str = "xyxy", delimiter: str | None = None, decimal: str = ".",
             classes: Any = None, images_dir: str | os.PathLike | None = None,
             image_sizes: Any = None) -> Dataset:
    """Read ground truth from a CSV/TSV table with one object per row.

    Parameters
    ----------
    path : str or PathLike
    columns : mapping, optional
        Role -> header name(s), overriding the defaults (see the module notes), e.g.
        ``{"image": "img", "label": "name", "box": ("x", "y", "w", "h")}``. A role named here
        must exist; the optional ones are otherwise used only when present.
    box_format : str
        Format of the four box columns; normalised ones need image sizes.
    delimiter : str, optional
        Default: tab for ``.tsv``/``.tab``, else whichever of ``,``, tab and ``;`` the header
        holds most of.
    decimal : {".", ",", "auto"}
    classes : sequence or names file, optional
        Category order (ids ``1..k``); a class outside it is an error. Default: sorted names.
    images_dir, image_sizes : optional
        Image sizes where the table has no width/height columns (see
        :func:`deteval.io.formats.size_lookup`).

    Raises
    ------
    FormatError
        Missing columns (naming them and the header), a row with the wrong number of fields,
        a cell that is not a number, an inverted box, an empty class, ...: each names the
        file and line.
    """
    spec, explicit = _spec(columns, box_format, detections=False)
    return _read_gt_table(path, spec, explicit, box_format=box_format, delimiter=delimiter,
                          decimal=decimal, classes=classes, images_dir=images_dir,
                          image_sizes=image_sizes)


def _read_detection_table(path: Any, dataset: Dataset, spec: dict, explicit: set, *,
                          box_format: str, delimiter: Any, decimal: str, names: Any,
                          label_map: Mapping[str, str] | None = None) -> Detections:
    table = _Table(Path(path), delimiter)
    table.check_widths(decimal)
    cols = table.column_indices(spec, ("image", "label", "box", "score"), explicit)
    rows, labels, coords, where, box_names = _objects(table, cols, box_format, decimal)
    if label_map is not None:
        labels = [_mapped(label_map, label, where, i) for i, label in enumerate(labels)]
    by_key = image_rows_by_key(dataset.images)
    images = table.column(cols["image"])
    rows_list = rows.tolist()
    cache: dict[str, int] = {}
    image_index = np.empty(len(rows_list), dtype=np.int64)
    for i, r in enumerate(rows_list):
        key = image_key(images[r])
        if key not in cache:
            cache[key] = image_row(by_key, key, dataset, *table.where(r))
        image_index[i] = cache[key]
    score_cells = table.column(cols["score"])
    score_name = table.header[cols["score"]]
    scores = parse_numbers([score_cells[r] for r in rows_list], where=where,
                           field=lambda i: score_name, decimal=decimal)
    category_index, category_ids = detection_categories(labels, dataset, names, where=where)
    return make_detections(image_index, category_index, category_ids, coords, scores,
                           box_format, dataset, where=where, names=box_names)


def read_csv_detections(path: str | os.PathLike, dataset: Dataset, *,
                        columns: Mapping[str, Any] | None = None, box_format: str = "xyxy",
                        delimiter: str | None = None, decimal: str = ".",
                        names: Any = None) -> Detections:
    """Read detections from a CSV/TSV table with one detection per row, for ``dataset``.

    Columns as in :func:`read_csv` plus ``score`` (default header ``score``). Images are
    found by key in the dataset (normalised boxes use its image sizes). The class cell is a
    category name or id of the dataset, or, with ``names`` (a names file or list), an index
    into ``names`` mapped by name; a class the dataset lacks gives ``category_index == -1``.
    """
    spec, explicit = _spec(columns, box_format, detections=True)
    return _read_detection_table(path, dataset, spec, explicit, box_format=box_format,
                                 delimiter=delimiter, decimal=decimal, names=names)


def _class_names(class_names: Any) -> Mapping[str, str] | None:
    """MID -> display name, from a mapping or Open Images' header-less class-descriptions CSV."""
    if class_names is None or isinstance(class_names, Mapping):
        return class_names
    source = str(class_names)
    text = read_text(class_names, what="class descriptions")
    out: dict[str, str] = {}
    for number, row in enumerate(_csv.reader(io.StringIO(text, newline="")), 1):
        if not row:
            continue
        if len(row) < 2:
            raise FormatError("expected 'MID,name'", source=source, record=f"line {number}")
        out[row[0].strip()] = row[1].strip()
    return out


def read_openimages(path: str | os.PathLike, *, images_dir: str | os.PathLike | None = None,
                    image_sizes: Any = None, class_names: Any = None,
                    classes: Any = None) -> Dataset:
    """Read an Open Images box CSV (``ImageID, ..., LabelName, XMin, XMax, YMin, YMax, ...``).

    Parameters
    ----------
    path : str or PathLike
    images_dir, image_sizes : optional
        Where the image sizes come from; the boxes are normalised, so one is needed.
    class_names : path or mapping, optional
        MID -> display name (``class-descriptions-boxable.csv``); default: labels as written.
    classes : sequence or names file, optional
        Category order (ids ``1..k``); default sorted names.

    Returns
    -------
    Dataset
        ``iscrowd`` from ``IsGroupOf``; images in ``ImageID`` order with ids ``1..n``.
    """
    spec, explicit = dict(_OPENIMAGES), {"image", "label", "box"}
    return _read_gt_table(path, spec, explicit, box_format="xyxyn", delimiter=",",
                          decimal="auto", classes=classes, images_dir=images_dir,
                          image_sizes=image_sizes, label_map=_class_names(class_names))


def read_openimages_detections(path: str | os.PathLike, dataset: Dataset, *,
                               class_names: Any = None) -> Detections:
    """Read detections in the Open Images box layout with a ``Score`` (or ``Confidence``)
    column, for ``dataset`` (whose image sizes de-normalise the boxes)."""
    with open_input(path, what="Open Images detections") as handle:
        header = handle.readline(65536)
    score = "Score" if b"Score" in header else "Confidence"
    spec = {"image": "ImageID", "label": "LabelName", "box": _OPENIMAGES["box"],
            "score": score}
    return _read_detection_table(path, dataset, spec, set(spec), box_format="xyxyn",
                                 delimiter=",", decimal="auto", names=None,
                                 label_map=_class_names(class_names))


def _cell(value: float) -> str:
    if not np.isfinite(value):
        return ""
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(value)


def write_csv(dataset: Dataset, path: str | os.PathLike, *,
              detections: Detections | None = None, box_format: str = "xyxy",
              delimiter: str | None = None) -> int:
    """Write ground truth (or ``detections``) as a CSV/TSV table that :func:`read_csv`
    (or :func:`read_csv_detections`) reads back with its default columns.

    Header: ``filename,width,height,class,<box columns>,difficult,iscrowd`` (ground truth;
    an image without objects gets a row with empty class and box) or ``...,score``
    (detections; those with ``category_index == -1`` are skipped). Numbers are written
    exactly (shortest round-trip ``repr``). ``delimiter`` defaults to a tab for ``.tsv``.

    Returns
    -------
    int
        The number of boxes written.
    """
    check_box_format(box_format)
    path = Path(path)
    if delimiter is None:
        delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    images = dataset.images
    rows_source = detections if detections is not None else dataset.gt
    keep = np.flatnonzero(rows_source.category_index >= 0)
    image_index = rows_source.image_index[keep]
    sizes = np.column_stack([images.widths, images.heights])
    if box_format == "xywh":
        values = rows_source.as_xywh()[keep]
    elif box_format == "xyxy":
        values = rows_source.boxes[keep]
    else:
        box_sizes = sizes[image_index]
        if box_format.endswith("n") and not np.isfinite(box_sizes).all():
            row = image_index[np.flatnonzero(~np.isfinite(box_sizes).all(axis=1))[0]]
            raise ValueError(f"the size of image {images.file_names[row]!r} is unknown; "
                             f"{box_format!r} needs it")
        values = _convert(rows_source.boxes[keep], box_format, box_sizes)
    header = ["filename", "width", "height", "class", *BOX_COLUMNS[box_format.rstrip("n")]]
    header += ["score"] if detections is not None else ["difficult", "iscrowd"]
    names = [n or str(i) for n, i in zip(images.file_names, images.ids.tolist())]
    size_cells = [(_cell(w), _cell(h)) for w, h in sizes.tolist()]
    out = io.StringIO(newline="")
    writer = _csv.writer(out, delimiter=delimiter, lineterminator="\n")
    writer.writerow(header)
    classes = dataset.categories.names
    extra = (rows_source.scores[keep] if detections is not None else
             np.column_stack([dataset.gt.ignore[keep], dataset.gt.iscrowd[keep]]))
    for k, (row, cat, box) in enumerate(zip(image_index.tolist(),
                                            rows_source.category_index[keep].tolist(),
                                            values.tolist())):
        tail = ([repr(float(extra[k]))] if detections is not None
                else [str(int(extra[k, 0])), str(int(extra[k, 1]))])
        writer.writerow([names[row], *size_cells[row], classes[cat],
                         *(_cell(v) for v in box), *tail])
    if detections is None:
        for row in np.setdiff1d(np.arange(len(images)), image_index).tolist():
            writer.writerow([names[row], *size_cells[row], "", "", "", "", "", "", ""])
    path.write_text(out.getvalue(), encoding="utf-8")
    return len(keep)


def _convert(boxes: np.ndarray, box_format: str, sizes: np.ndarray) -> np.ndarray:
    from ..boxes import convert_boxes
    normalised = box_format.endswith("n")
    return convert_boxes(boxes, "xyxy", box_format, image_size=sizes if normalised else None)
