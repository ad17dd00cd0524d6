"""Pieces the file-format readers share: image keys, XML parsing without entities, number
and flag parsing with line-level errors, box conversion, and dataset assembly.

Private to ``deteval.io``; the readers (``voc.py``, ``yolo.py``, ``csv.py``, ...) import from
here and ``formats.py`` dispatches between them.
"""

from __future__ import annotations

import math
import os
import re
import warnings
import xml.parsers.expat as expat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np

from ..boxes import BOX_FORMATS, convert_boxes
from ..data import Categories, Dataset, Detections, GroundTruth, Images
from ..errors import FormatError, FormatWarning
from ._json import check_input_file, open_input, read_bytes

IMAGE_EXTENSIONS = frozenset((".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff",
                              ".webp", ".ppm", ".pgm", ".jfif"))

Where = Callable[[int], tuple[str, str]]
"""Row ``i`` -> ``(source file, record)`` for error messages."""


def located(message: str, location: tuple[str, str], *, hint: str | None = None,
            cli_hint: str | None = None) -> FormatError:
    """A FormatError at ``location`` = ``(source file, record)``."""
    source, record = location
    return FormatError(message, source=source, record=record, hint=hint, cli_hint=cli_hint)


def image_key(name: str) -> str:
    """The name an image is known by across formats: last path component, image extension
    removed (``"dir\\\\x.JPG"`` -> ``"x"``; ``"x.txt"`` stays ``"x.txt"``)."""
    base = re.split(r"[\\/]", str(name))[-1]
    stem, dot, ext = base.rpartition(".")
    return stem if dot and stem and "." + ext.lower() in IMAGE_EXTENSIONS else base


def read_text(path: str | os.PathLike, *, what: str, allow_empty: bool = False) -> str:
    """A UTF-8 text file (a BOM is skipped); empty files are errors unless ``allow_empty``."""
    raw = read_bytes(path, what=what, allow_empty=allow_empty)
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise FormatError(f"{what} file is UTF-16 text (it starts with a UTF-16 byte-order "
                          "mark); save it as UTF-8", source=str(path))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise FormatError(f"{what} file must be UTF-8 text; byte {raw[err.start]:#04x} is not",
                          source=str(path), record=f"line {line}") from None


def list_files(folder: Path, suffixes: tuple[str, ...], *, what: str) -> list[Path]:
    """The files of ``folder`` (not recursive) with one of ``suffixes``, sorted by name."""
    if not folder.exists():
        raise FormatError(f"{what} folder does not exist", source=str(folder))
    if not folder.is_dir():
        check_input_file(folder, what=what)     # a device or a FIFO: refused, named
        raise FormatError(f"{what} folder expected, found a file", source=str(folder))
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in suffixes and p.is_file())
    if not files:
        raise FormatError(f"no {'/'.join(suffixes)} files in this {what} folder",
                          source=str(folder))
    return files


def read_names(names: Any, *, what: str = "class names") -> tuple[str, ...]:
    """Class names from a file (one per line, as darknet's ``obj.names``) or a sequence.

    Trailing blank lines are ignored; a blank line or a repeated name before them is an error,
    because every line's position is a class index.
    """
    if isinstance(names, (str, os.PathLike)):
        source = str(names)
        lines = read_text(names, what=what).splitlines()
        while lines and not lines[-1].strip():
            lines.pop()
        names_out = tuple(line.strip() for line in lines)

        def record(i: int) -> str:
            return f"line {i + 1}"
    elif isinstance(names, Sequence) and all(isinstance(n, str) for n in names):
        source, names_out = "<names>", tuple(n.strip() for n in names)
        if not names_out:
            raise FormatError(f"{what} must not be empty", source=source)

        def record(i: int) -> str:
            return f"names[{i}]"
    else:
        raise TypeError(f"{what} must be a file path or a sequence of str; "
                        f"got {type(names).__name__}")
    seen: dict[str, int] = {}
    for i, name in enumerate(names_out):
        if not name:
            raise FormatError("class name is blank: every line names one class (its position "
                              "is the class index)", source=source, record=record(i))
        if name in seen:
            raise FormatError(f"class name {name!r} repeats {record(seen[name])}",
                              source=source, record=record(i))
        seen[name] = i
    return names_out


# --------------------------------------------------------------------------------------
# XML without a DTD


class _Refused(Exception):
    def __init__(self, line: int):
        self.line = line


def parse_xml(path: str | os.PathLike, *, what: str) -> tuple[ElementTree.Element, dict]:
    """Parse an XML file without any document type declaration, entity or external reference.

    A ``<!DOCTYPE`` is refused as soon as the parser meets it, before any entity is declared,
    so entity bombs ("billion laughs") and external entities are never expanded. Only the
    standard library's expat parser is used.

    Returns
    -------
    root : Element
    lines : dict
        The line number of each element's start tag, for error messages.
    """
    raw = read_bytes(path, what=what)
    builder = ElementTree.TreeBuilder()
    parser = expat.ParserCreate()
    lines: dict[ElementTree.Element, int] = {}

    def start(tag, attrs):
        lines[builder.start(tag, attrs)] = parser.CurrentLineNumber

    def refuse(*_args):
        raise _Refused(parser.CurrentLineNumber)

    parser.buffer_text = True
    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(raw, True)
    except _Refused as err:
        raise _doctype_error(path, err.line) from None
    except expat.ExpatError as err:
        raise FormatError(f"not well-formed XML: {expat.ErrorString(err.code)}",
                          source=str(path),
                          record=f"line {err.lineno} column {err.offset + 1}") from None
    except (LookupError, ValueError) as err:    # expat asks Python's codecs for the encoding
        raise _encoding_error(path, err) from None
    return builder.close(), lines


def _doctype_error(path: str | os.PathLike, line: int) -> FormatError:
    """The error for an XML file with a ``<!DOCTYPE``, refused before it is expanded."""
    return FormatError("XML with a document type declaration (<!DOCTYPE ...>) is refused: "
                       "its entities could expand without bound or read other files",
                       source=str(path), record=f"line {line}")


def _encoding_error(path: str | os.PathLike, err: Exception) -> FormatError:
    """The error for an XML file whose declared encoding expat cannot read."""
    return FormatError("the XML declaration names an encoding that cannot be read (expat "
                       f"reads UTF-8, UTF-16 and single-byte encodings): {err}",
                       source=str(path), record="line 1")


def xml_root_tag(path: Path) -> str:
    """The root element's tag, read safely (stops at the first start tag)."""
    class _Found(Exception):
        pass

    parser = expat.ParserCreate()

    def start(tag, _attrs):
        raise _Found(tag)

    def refuse(*_args):
        raise _Refused(parser.CurrentLineNumber)

    parser.StartElementHandler = start
    parser.StartDoctypeDeclHandler = refuse
    try:
        with open_input(path, what="XML") as handle:
            while chunk := handle.read(65536):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except _Found as found:
        return str(found.args[0])
    except _Refused as err:
        raise _doctype_error(path, err.line) from None
    except expat.ExpatError as err:
        raise FormatError(f"not well-formed XML: {expat.ErrorString(err.code)}",
                          source=str(path), record=f"line {err.lineno}") from None
    except (LookupError, ValueError) as err:
        raise _encoding_error(path, err) from None
    raise FormatError("no XML element found", source=str(path))  # pragma: no cover


# --------------------------------------------------------------------------------------
# Images: sizes from Pillow, only from files listed in the folder the caller named


class ImageFolder:
    """The image files of one folder, found by key; nothing outside it is ever opened."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise FormatError("images folder does not exist", source=str(self.folder))
        self.by_key: dict[str, Path] = {}
        for path in sorted(self.folder.iterdir()):
            if path.suffix.lower() in IMAGE_EXTENSIONS and path.is_file():
                key = image_key(path.name)
                if key in self.by_key:
                    raise FormatError(f"two images have the key {key!r}: "
                                      f"{self.by_key[key].name} and {path.name}",
                                      source=str(self.folder))
                self.by_key[key] = path

    def size(self, key: str) -> tuple[float, float] | None:
        """``(width, height)`` of the image with this key, or None if there is none."""
        path = self.by_key.get(key)
        return None if path is None else image_size(path)


def image_size(path: Path) -> tuple[float, float]:
    """Width and height of an image as it is displayed: EXIF orientations 5-8 (rotated by 90
    degrees) swap them, as annotation tools and Ultralytics do. Only the header is read."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            width, height = image.size
            orientation = image.getexif().get(0x0112, 1)
    except (UnidentifiedImageError, OSError) as err:
        raise FormatError(f"cannot read the image size: {err}", source=str(path)) from None
    return (float(height), float(width)) if orientation in (5, 6, 7, 8) else (float(width),
                                                                              float(height))


def size_lookup(images_dir: Any, image_sizes: Any) -> Callable[[str], tuple[float, float]]:
    """A function key -> (width, height), NaN where unknown, from the caller's options.

    ``image_sizes`` is one ``(width, height)`` for every image or a mapping from file name or
    key to ``(width, height)``; ``images_dir`` is a folder whose images are measured.
    """
    nan = (float("nan"), float("nan"))
    table: dict[str, tuple[float, float]] = {}
    if image_sizes is not None:
        if isinstance(image_sizes, Mapping):
            items = image_sizes.items()
        else:
            items = [(None, image_sizes)]
        for key, size in items:
            try:
                width, height = (float(v) for v in size)
            except (TypeError, ValueError):
                raise TypeError(f"image_sizes must hold (width, height) pairs; got {size!r} "
                                f"for {key!r}") from None
            if not (width > 0 and height > 0 and np.isfinite([width, height]).all()):
                raise ValueError(f"image sizes must be positive and finite; got {size!r} for "
                                 f"{key!r}")
            if key is None:
                return lambda _key: (width, height)
            table[image_key(str(key))] = (width, height)
    folder = ImageFolder(images_dir) if images_dir is not None else None

    def lookup(key: str) -> tuple[float, float]:
        if key in table:
            return table[key]
        if folder is not None:
            size = folder.size(key)
            if size is not None:
                return size
        return nan

    return lookup


# --------------------------------------------------------------------------------------
# Text to numbers, boxes to checked xyxy, rows to a Dataset


_NUMBER = re.compile(r"\s*[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf(?:inity)?|nan)\s*",
                     re.ASCII | re.IGNORECASE)


def is_number_text(text: str) -> bool:
    """Whether ``text`` is a decimal number in ASCII (``"12"``, ``"-1.5e3"``, ``"nan"``).

    Python's ``float`` also reads other scripts' digits (``"١٢"``, ``"１２"``) and
    underscores (``"12_0"``); an annotation file holding those is not what its author meant
    (or not a number file at all), so they are refused.
    """
    return _NUMBER.fullmatch(text) is not None


def to_float(text: str) -> float:
    """``float(text)`` for ASCII decimal numbers only (see :func:`is_number_text`); raises
    ValueError otherwise."""
    if not is_number_text(text):
        raise ValueError(f"not a decimal number: {text!r}")
    return float(text)


def parse_numbers(values: Sequence[str], *, where: Where, field: Callable[[int], str],
                  decimal: str = ".") -> np.ndarray:
    """Parse strings into a float64 array, refusing non-numbers and non-finite values.

    ``field(i)`` names value ``i`` and ``where(i)`` locates it for messages. ``decimal=","``
    reads decimal commas; ``"auto"`` reads both (``"0,5"`` and ``"0.5"``).
    """
    if not len(values):     # a table of headers only (numpy's string routines want rows)
        return np.empty(0, dtype=np.float64)
    array = np.asarray(values, dtype=str)
    if decimal != ".":
        array = np.char.replace(array, ",", ".")
    try:
        joined = "".join(map(str, values))
        if not joined.isascii() or "_" in joined or "\0" in joined:
            raise ValueError("not ASCII decimal numbers")   # float() reads "١٢" and "1_2"
        out = array.astype(np.float64)
    except ValueError:
        for i, text in enumerate(array.tolist()):
            try:
                if "\0" in str(values[i]):   # numpy's strings drop trailing NULs
                    raise ValueError("NUL")
                to_float(text)
            except ValueError:
                hint = (" (decimal comma? pass decimal=',')"
                        if re.fullmatch(r"\s*[-+]?\d*,\d+\s*", str(values[i])) else "")
                raise located(f"{field(i)} must be a number; got {values[i]!r}{hint}",
                              where(i)) from None
        raise  # pragma: no cover
    bad = np.flatnonzero(~np.isfinite(out))
    if len(bad):
        i = int(bad[0])
        raise located(f"{field(i)} must be finite; got {values[i]!r}", where(i))
    return out


def parse_flags(values: Sequence[str], *, where: Where, field: str) -> np.ndarray:
    """0/1 flags written as ``0``, ``1``, ``true``, ``false`` or empty (false)."""
    truthy, falsy = {"1", "true", "yes"}, {"0", "false", "no", "", "-1"}
    lowered = [str(v).strip().lower() for v in values]
    unique = set(lowered)
    if not unique <= truthy | falsy:
        i = next(i for i, v in enumerate(lowered) if v not in truthy | falsy)
        raise located(f"{field} must be 0 or 1; got {values[i]!r}", where(i))
    return np.fromiter((v in truthy for v in lowered), dtype=bool, count=len(lowered))


_COORD_NAMES = {"xyxy": ("x1", "y1", "x2", "y2"), "xywh": ("x", "y", "w", "h"),
                "cxcywh": ("cx", "cy", "w", "h")}


def check_box_format(box_format: str) -> None:
    if box_format not in BOX_FORMATS:
        raise ValueError(f"box_format must be one of {', '.join(map(repr, BOX_FORMATS))}; "
                         f"got {box_format!r}")


def to_xyxy(coords: np.ndarray, box_format: str, sizes: np.ndarray, *, where: Where,
            names: Sequence[str] | None = None, image_names: Sequence[str] = ()) -> np.ndarray:
    """Checked conversion of ``(n, 4)`` boxes in ``box_format`` to absolute xyxy.

    Normalised formats need every value in [0, 1] and the size of each box's image
    (``sizes``, ``(n, 2)``); the far corner must not precede the near one (xyxy) and widths
    and heights must not be negative (the others). ``names`` are the four coordinates' names
    in the source, for messages.
    """
    base = box_format.rstrip("n")
    names = tuple(names or _COORD_NAMES[base])
    normalised = base != box_format
    if normalised:
        bad = np.flatnonzero(((coords < 0) | (coords > 1)).any(axis=1))
        if len(bad):
            i = int(bad[0])
            col = int(np.flatnonzero((coords[i] < 0) | (coords[i] > 1))[0])
            pixels = base if base != "cxcywh" else "xywh"
            raise located(f"{names[col]} must be in [0, 1] (normalised); got "
                          f"{float(coords[i, col])!r}", where(i),
                          hint=f"pixel coordinates? pass box_format={pixels!r} (or another "
                          "layout in pixels)",
                          cli_hint=f"pixel coordinates? pass the box format {pixels} or "
                          "another layout in pixels (--box-format; --gt-box-format for CSV "
                          "ground truth)")
        unknown = np.flatnonzero(~np.isfinite(sizes).all(axis=1))
        if len(unknown):
            i = int(unknown[0])
            image = image_names[i] if len(image_names) else "this image"
            raise located(f"the size of {image} is unknown, and normalised boxes need it",
                          where(i), hint="pass images_dir=... or image_sizes=...",
                          cli_hint="pass --images DIR")
    if base == "xyxy":
        bad = np.flatnonzero((coords[:, 2] < coords[:, 0]) | (coords[:, 3] < coords[:, 1]))
        if len(bad):
            i = int(bad[0])
            a, b = (0, 2) if coords[i, 2] < coords[i, 0] else (1, 3)
            raise located(f"{names[b]} must be >= {names[a]}; got {names[a]}="
                          f"{coords[i, a]:g}, {names[b]}={coords[i, b]:g}", where(i),
                          hint="if the numbers are x y w h, pass box_format='xywh'",
                          cli_hint="if the numbers are x y w h, pass the box format xywh "
                          "(--box-format; --gt-box-format for CSV ground truth)")
    else:
        bad = np.flatnonzero((coords[:, 2] < 0) | (coords[:, 3] < 0))
        if len(bad):
            i = int(bad[0])
            col = 2 if coords[i, 2] < 0 else 3
            raise located(f"{names[col]} must be >= 0; got {coords[i, col]:g}", where(i))
    return convert_boxes(coords, box_format, "xyxy", image_size=sizes if normalised else None)


def warn_outside(boxes: np.ndarray, sizes: np.ndarray, *, where: Where) -> None:
    """Warn (once) when boxes reach beyond their image: legal, but usually a mistake."""
    with np.errstate(invalid="ignore"):
        outside = ((boxes[:, 0] < 0) | (boxes[:, 1] < 0) | (boxes[:, 2] > sizes[:, 0])
                   | (boxes[:, 3] > sizes[:, 1]))
    bad = np.flatnonzero(outside)
    if len(bad):
        source, record = where(int(bad[0]))
        warnings.warn(f"{len(bad)} box(es) reach beyond their image; the first: {source}: "
                      f"{record}: {boxes[bad[0]].tolist()} in a "
                      f"{sizes[bad[0], 0]:g}x{sizes[bad[0], 1]:g} image",
                      FormatWarning, stacklevel=3)


def category_table(labels: Sequence[str], classes: Any, *, where: Where,
                   first_id: int = 1) -> tuple[Categories, np.ndarray]:
    """Categories named by ``classes`` (a sequence or names file; default: the sorted names
    found) with ids ``first_id, first_id + 1, ...``, and the row of each label."""
    unique, inverse = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
    if classes is None:
        names = tuple(unique.tolist())
        rows = inverse
    else:
        names = read_names(classes, what="classes")
        position = {name: i for i, name in enumerate(names)}
        lookup = np.array([position.get(u, -1) for u in unique.tolist()], dtype=np.int64)
        rows = lookup[inverse] if len(inverse) else inverse.astype(np.int64)
        bad = np.flatnonzero(rows < 0)
        if len(bad):
            i = int(bad[0])
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            raise located(f"class {labels[i]!r} is not one of the classes ({shown})", where(i))
    categories = Categories(ids=np.arange(first_id, first_id + len(names)), names=names)
    return categories, np.asarray(rows, dtype=np.int64).reshape(-1)


class FileImages:
    """The images of a reader that reads one file per image (VOC XML, LabelMe JSON): each
    image once, with its file name and size, in the order read (``build_dataset``'s
    ``keys``, ``file_names`` and ``sizes``).

    Examples
    --------
    >>> images = FileImages(None)
    >>> key = images.claim("a/x.jpg", "x.xml")
    >>> images.add(key, "x.jpg", 640.0, 480.0), images.keys, images.sizes
    (0, ['x'], [(640.0, 480.0)])
    >>> images.claim("x.png", "y.xml")
    Traceback (most recent call last):
    ...
    deteval.errors.FormatError: y.xml: image 'x' is annotated twice (also in x.xml)
    """

    def __init__(self, images_dir: Any):
        self.keys: list[str] = []
        self.file_names: list[str] = []
        self.sizes: list[tuple[float, float]] = []
        self._file_of: dict[str, Any] = {}
        self._lookup = size_lookup(images_dir, None) if images_dir is not None else None

    def claim(self, file_name: str, file: str | os.PathLike) -> str:
        """The image's key; a FormatError naming ``file`` if another file annotated it."""
        key = image_key(file_name)
        if key in self._file_of:
            raise FormatError(f"image {key!r} is annotated twice (also in "
                              f"{self._file_of[key]})", source=str(file))
        self._file_of[key] = file
        return key

    def add(self, key: str, file_name: str, width: float, height: float) -> int:
        """Add a claimed image; its index. A size not known from the file (NaN) is measured
        in ``images_dir`` when given."""
        if self._lookup is not None and not (math.isfinite(width) and math.isfinite(height)):
            width, height = self._lookup(key)
        self.keys.append(key)
        self.file_names.append(file_name)
        self.sizes.append((width, height))
        return len(self.keys) - 1


def build_dataset(*, keys: Sequence[str], file_names: Sequence[str], sizes: np.ndarray,
                  image_of: np.ndarray, categories: Categories, category_of: np.ndarray,
                  boxes: np.ndarray, where: Where, source: str, ignore: Any = None,
                  iscrowd: Any = None, check_bounds: bool = True) -> Dataset:
    """A Dataset from checked columns; images get ids ``1..n`` in key order."""
    order = np.argsort(np.asarray(keys, dtype=str), kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    sizes = np.asarray(sizes, dtype=np.float64).reshape(-1, 2)
    image_index = rank[image_of] if len(image_of) else np.zeros(0, dtype=np.int64)
    if check_bounds and len(boxes):
        warn_outside(boxes, sizes[image_of], where=where)
    images = Images(ids=np.arange(1, len(order) + 1), widths=sizes[order, 0],
                    heights=sizes[order, 1],
                    file_names=tuple(file_names[i] for i in order.tolist()))
    gt = GroundTruth(image_index=image_index, category_index=category_of, boxes=boxes,
                     ignore=ignore, iscrowd=iscrowd)
    return Dataset(images=images, categories=categories, gt=gt, source=source, ids_assigned=True)


def image_rows_by_key(images: Images) -> dict[str, int]:
    """Key -> row of the dataset's images (-2 where two images share a key). An image without
    a file name is known by its id."""
    rows: dict[str, int] = {}
    for row, (name, image_id) in enumerate(zip(images.file_names, images.ids.tolist())):
        key = image_key(name) if name else str(image_id)
        rows[key] = -2 if key in rows else row
    return rows


def image_row(rows: dict[str, int], key: str, dataset: Dataset, source: str,
              record: str | None = None) -> int:
    """The dataset row of the image with ``key``, or a FormatError naming the file."""
    row = rows.get(key, -1)
    if row == -1:
        raise FormatError(f"image {key!r} is not an image of the ground truth "
                          f"({dataset.source or 'dataset'})", source=source, record=record)
    if row == -2:
        raise FormatError(f"image {key!r} is ambiguous: several ground-truth images have "
                          "this name", source=source, record=record)
    return row


def detection_categories(tokens: Sequence[str], dataset: Dataset, names: Any, *,
                         where: Where) -> tuple[np.ndarray, np.ndarray | None]:
    """The dataset category row of each class token (-1 where the dataset has no such class).

    With ``names`` (a names file or sequence), tokens are indices into it and are mapped by
    name; without, an integer token is a category id and any other token a category name.
    Returns the rows and, when tokens are ids, the ids (``Detections.category_ids``).
    """
    unique, inverse = np.unique(np.asarray(tokens, dtype=str), return_inverse=True)
    inverse = inverse.reshape(-1)
    by_name: dict[str, int] = {}
    for row, name in enumerate(dataset.categories.names):
        by_name.setdefault(name, row)
    by_id = {int(c): row for row, c in enumerate(dataset.categories.ids.tolist())}
    lookup = np.empty(len(unique), dtype=np.int64)
    ids = np.empty(len(unique), dtype=np.int64)
    all_ids = True
    if names is not None:
        names = read_names(names)
    for u, token in enumerate(unique.tolist()):
        integral = re.fullmatch(r"[-+]?\d+(\.0*)?", token, re.ASCII) is not None
        # The integer itself, not through a float (which folds ids beyond 2**53 together).
        value = int(token.partition(".")[0]) if integral else None
        if names is not None:
            index = value if integral else -1
            if not 0 <= index < len(names):
                i = int(np.flatnonzero(inverse == u)[0])
                raise located(f"class index {token!r} is not an index of the "
                                  f"{len(names)} class names (0..{len(names) - 1})", where(i))
            lookup[u] = by_name.get(names[index], -1)
            all_ids = False
        elif integral and -2**63 <= value < 2**63:
            ids[u] = value
            lookup[u] = by_id.get(value, -1)
        else:
            lookup[u] = by_name.get(token, -1)
            all_ids = False
    return lookup[inverse], (ids[inverse] if all_ids else None)


def make_detections(image_index: np.ndarray, category_index: np.ndarray,
                    category_ids: np.ndarray | None, coords: np.ndarray, scores: np.ndarray,
                    box_format: str, dataset: Dataset, *, where: Where,
                    names: Sequence[str] | None = None) -> Detections:
    """Detections from parsed columns; boxes checked and converted with the images' sizes."""
    sizes = np.column_stack([dataset.images.widths, dataset.images.heights])[image_index]
    image_names = [dataset.images.file_names[i] or str(dataset.images.ids[i])
                   for i in image_index.tolist()] if box_format.endswith("n") else ()
    with np.errstate(over="ignore", invalid="ignore"):
        boxes = to_xyxy(coords, box_format, sizes.reshape(-1, 2), where=where, names=names,
                        image_names=image_names)
        xywh = coords.copy() if box_format == "xywh" else None
        area = (xywh[:, 2] * xywh[:, 3] if xywh is not None
                else (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]))
    bad = np.flatnonzero(~(np.isfinite(boxes).all(axis=1) & np.isfinite(area)))
    if len(bad):
        i = int(bad[0])
        raise located(f"box {coords[i].tolist()} ({box_format}) overflows: its corners or "
                      "its area are not finite float64 numbers", where(i))
    return Detections(image_index=image_index, category_index=category_index, boxes=boxes,
                      scores=scores, xywh=xywh, area=area, category_ids=category_ids)


# --------------------------------------------------------------------------------------
# Detection and dispatch
