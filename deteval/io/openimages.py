"""Readers of the Open Images challenge files: boxes, image-level labels, detections, hierarchy.

The CSV files are read by header name (extra columns are ignored, column order is free);
numbers may use a decimal comma (``"0,25"``, a quirk of some exported files). Every error
names the file, the line (1-based, the header is line 1) and what was expected. Rules:
``docs/protocols/openimages.md`` §2 and §5.

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "boxes.csv"
>>> _ = path.write_text("ImageID,LabelName,XMin,XMax,YMin,YMax,IsGroupOf\\n"
...                     "img1,/m/dog,0.1,0.5,0.2,0.6,0\\n")
>>> boxes = read_oid_boxes(path)
>>> boxes.image_id.tolist(), boxes.label.tolist(), boxes.group_of.tolist()
(['img1'], ['/m/dog'], [False])
>>> boxes.xyxy.tolist()
[[0.1, 0.2, 0.5, 0.6]]
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._arrays import ReadOnlyArrays, frozen
from ..errors import FormatError

__all__ = ["OIDBoxes", "OIDDetections", "OIDImageLabels", "read_oid_boxes",
           "read_oid_detections", "read_oid_hierarchy", "read_oid_image_labels"]


def _strings(values) -> np.ndarray:
    return frozen(np.array(list(values), dtype=object).reshape(-1))


def _check(obj, numbers: dict[str, int]) -> None:
    """Coerce and freeze the columns of a record (copies; the caller's arrays stay as they
    are); refuse ragged columns and NaN in ``numbers`` (name -> columns, 0 for a vector)."""
    set_ = object.__setattr__
    n = len(np.asarray(obj.image_id).reshape(-1))
    for name in obj.__dataclass_fields__:
        value = getattr(obj, name)
        if name == "source":
            continue
        if name in ("image_id", "label"):
            array = np.asarray(value).reshape(-1).astype(str).astype(object)
        elif name in numbers:
            width = numbers[name]
            array = np.array(value, dtype=np.float64)
            array = array.reshape(-1, width) if width else array.reshape(-1)
            bad = np.flatnonzero(np.isnan(array.reshape(len(array), width or 1)).any(axis=1))
            if len(bad):
                raise ValueError(f"{type(obj).__name__}.{name} holds NaN (row {bad[0]})")
        elif name == "group_of":
            array = np.array(value, dtype=bool).reshape(-1)
        else:
            array = np.array(value, dtype=np.int64).reshape(-1)
        if len(array) != n:
            raise ValueError(f"{type(obj).__name__}.{name} has {len(array)} rows; image_id "
                             f"has {n}")
        set_(obj, name, frozen(array))


@dataclass(frozen=True, eq=False)
class OIDBoxes(ReadOnlyArrays):
    """Open Images ground-truth boxes, one row per box, normalised coordinates.

    Attributes
    ----------
    image_id, label : ndarray of str (object), shape (n,)
    xyxy : ndarray of float64, shape (n, 4)
        ``XMin, YMin, XMax, YMax`` as written in the file.
    group_of : ndarray of bool, shape (n,)
        ``IsGroupOf`` not 0 (``-1``, "unknown" in some releases, counts as group-of, as in
        the TensorFlow tool's ``astype(bool)``).
    source : str or None
    """

    image_id: np.ndarray
    label: np.ndarray
    xyxy: np.ndarray
    group_of: np.ndarray
    source: str | None = None

    def __post_init__(self) -> None:
        _check(self, {"xyxy": 4})

    def __len__(self) -> int:
        return len(self.image_id)


@dataclass(frozen=True, eq=False)
class OIDImageLabels(ReadOnlyArrays):
    """Verified image-level labels: ``confidence`` 1 = present, 0 = absent.

    Attributes
    ----------
    image_id, label : ndarray of str (object), shape (n,)
    confidence : ndarray of int64, shape (n,)
    source : str or None
    """

    image_id: np.ndarray
    label: np.ndarray
    confidence: np.ndarray
    source: str | None = None

    def __post_init__(self) -> None:
        _check(self, {})

    def __len__(self) -> int:
        return len(self.image_id)


@dataclass(frozen=True, eq=False)
class OIDDetections(ReadOnlyArrays):
    """Open Images challenge detections, one row per detection, normalised coordinates.

    Attributes
    ----------
    image_id, label : ndarray of str (object), shape (n,)
    score : ndarray of float64, shape (n,)
    xyxy : ndarray of float64, shape (n, 4)
        ``XMin, YMin, XMax, YMax``.
    source : str or None
    """

    image_id: np.ndarray
    label: np.ndarray
    score: np.ndarray
    xyxy: np.ndarray
    source: str | None = None

    def __post_init__(self) -> None:
        _check(self, {"score": 0, "xyxy": 4})

    def __len__(self) -> int:
        return len(self.image_id)


def _rows(path: str | os.PathLike, required: tuple[str, ...], what: str):
    """Header map and the data rows (with their line numbers) of one CSV file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} file not found: {source}") from None
    except UnicodeDecodeError as error:
        raise FormatError(f"not UTF-8 text ({error.reason})", source=source) from None
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise FormatError(f"empty file; expected a CSV header with {', '.join(required)}",
                          source=source) from None
    header = [h.strip() for h in header]
    missing = [name for name in required if name not in header]
    if missing:
        raise FormatError(f"line 1: missing column(s) {', '.join(missing)}; expected "
                          f"{', '.join(required)} (got {_clipped(', '.join(header))})",
                          source=source)
    columns = {name: header.index(name) for name in header}
    rows = []
    for row in reader:
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) < len(header):
            raise FormatError(f"{len(row)} fields; the header has {len(header)}",
                              source=source, record=f"line {reader.line_num}")
        rows.append((reader.line_num, row))
    return source, columns, rows


def _number(text: str, *, source: str, line: int, column: str) -> float:
    cleaned = text.strip().replace(",", ".")
    try:
        value = float(cleaned)
    except ValueError:
        raise FormatError(f"{column} must be a number; got {text!r}", source=source,
                          record=f"line {line}") from None
    if math.isnan(value):
        raise FormatError(f"{column} is NaN", source=source, record=f"line {line}")
    return value


def _integer(text: str, *, source: str, line: int, column: str, empty: int | None) -> int:
    cleaned = text.strip()
    if not cleaned and empty is not None:
        return empty
    try:
        return int(cleaned)
    except ValueError:
        raise FormatError(f"{column} must be an integer; got {text!r}", source=source,
                          record=f"line {line}") from None


def _label(row, columns, name, *, source: str, line: int) -> str:
    value = row[columns[name]].strip()
    if not value:
        raise FormatError(f"{name} is empty", source=source, record=f"line {line}")
    return value


def _box_columns(rows, columns, source) -> np.ndarray:
    out = np.empty((len(rows), 4), dtype=np.float64)
    for i, (line, row) in enumerate(rows):
        for j, name in enumerate(("XMin", "YMin", "XMax", "YMax")):
            out[i, j] = _number(row[columns[name]], source=source, line=line, column=name)
    return out


def read_oid_boxes(path: str | os.PathLike) -> OIDBoxes:
    """Read a ground-truth box CSV (``ImageID, LabelName, XMin, XMax, YMin, YMax, IsGroupOf``).

    An empty ``IsGroupOf`` reads as 0. A box with ``XMax < XMin`` or ``YMax < YMin`` is refused
    (the TensorFlow tool's ``BoxList`` refuses it too); zero-area boxes are kept.

    Raises
    ------
    FormatError
        Naming the file, the line and the field.
    """
    required = ("ImageID", "LabelName", "XMin", "XMax", "YMin", "YMax", "IsGroupOf")
    source, columns, rows = _rows(path, required, "ground-truth boxes")
    xyxy = _box_columns(rows, columns, source)
    image_ids, labels, group = [], [], []
    for i, (line, row) in enumerate(rows):
        image_ids.append(_label(row, columns, "ImageID", source=source, line=line))
        labels.append(_label(row, columns, "LabelName", source=source, line=line))
        group.append(_integer(row[columns["IsGroupOf"]], source=source, line=line,
                              column="IsGroupOf", empty=0) != 0)
        if xyxy[i, 2] < xyxy[i, 0] or xyxy[i, 3] < xyxy[i, 1]:
            raise FormatError(f"box with XMax < XMin or YMax < YMin: XMin={xyxy[i, 0]!r} "
                              f"XMax={xyxy[i, 2]!r} YMin={xyxy[i, 1]!r} YMax={xyxy[i, 3]!r}",
                              source=source, record=f"line {line}")
    return OIDBoxes(_strings(image_ids), _strings(labels), frozen(xyxy),
                    frozen(np.array(group, dtype=bool)), source)


def read_oid_image_labels(path: str | os.PathLike) -> OIDImageLabels:
    """Read an image-level label CSV (``ImageID, LabelName, Confidence``; 1 or 0).

    Raises
    ------
    FormatError
        Naming the file and line; ``Confidence`` must be 0 or 1.
    """
    source, columns, rows = _rows(path, ("ImageID", "LabelName", "Confidence"),
                                  "image-level labels")
    image_ids, labels, confidence = [], [], []
    for line, row in rows:
        image_ids.append(_label(row, columns, "ImageID", source=source, line=line))
        labels.append(_label(row, columns, "LabelName", source=source, line=line))
        value = _integer(row[columns["Confidence"]], source=source, line=line,
                         column="Confidence", empty=None)
        if value not in (0, 1):
            raise FormatError(f"Confidence must be 0 (verified absent) or 1 (verified "
                              f"present); got {value}", source=source, record=f"line {line}")
        confidence.append(value)
    return OIDImageLabels(_strings(image_ids), _strings(labels),
                          frozen(np.array(confidence, dtype=np.int64)), source)


def read_oid_detections(path: str | os.PathLike) -> OIDDetections:
    """Read a challenge detection CSV (``ImageID, LabelName, Score, XMin, XMax, YMin, YMax``).

    Boxes with no area are read (the evaluation ignores them, as the TensorFlow tool does).

    Raises
    ------
    FormatError
        Naming the file, the line and the field (a NaN score or coordinate is refused).
    """
    required = ("ImageID", "LabelName", "Score", "XMin", "XMax", "YMin", "YMax")
    source, columns, rows = _rows(path, required, "detections")
    xyxy = _box_columns(rows, columns, source)
    image_ids, labels, scores = [], [], []
    for line, row in rows:
        image_ids.append(_label(row, columns, "ImageID", source=source, line=line))
        labels.append(_label(row, columns, "LabelName", source=source, line=line))
        scores.append(_number(row[columns["Score"]], source=source, line=line, column="Score"))
    return OIDDetections(_strings(image_ids), _strings(labels),
                         frozen(np.array(scores, dtype=np.float64)), frozen(xyxy), source)


def read_oid_hierarchy(path: str | os.PathLike | dict) -> dict:
    """Read and check an Open Images class hierarchy (``LabelName`` / ``Subcategory`` tree).

    A dict is checked and returned as is.

    Raises
    ------
    FormatError
        Naming the file and the JSON path of the bad node.
    """
    import orjson

    if isinstance(path, dict):
        tree, source = path, "hierarchy"
    else:
        source = str(path)
        try:
            tree = orjson.loads(Path(path).read_bytes())
        except FileNotFoundError:
            raise FileNotFoundError(f"hierarchy file not found: {source}") from None
        except orjson.JSONDecodeError as error:
            raise FormatError(f"not valid JSON ({error})", source=source) from None
    stack: list[tuple[Any, str]] = [(tree, "$")]
    while stack:
        node, where = stack.pop()
        if not isinstance(node, dict) or not isinstance(node.get("LabelName"), str):
            raise FormatError("expected an object with a string LabelName", source=source,
                              record=where)
        subs = node.get("Subcategory", [])
        if not isinstance(subs, list):
            raise FormatError("Subcategory must be a list", source=source, record=where)
        stack.extend((sub, f"{where}.Subcategory[{i}]") for i, sub in enumerate(subs))
    return tree


def _clipped(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters (a JSON file given as a CSV has its whole text on
    its first line).

    >>> _clipped("abc", 2)
    'ab... (3 characters)'
    """
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
