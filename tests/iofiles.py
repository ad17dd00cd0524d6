"""Small hand-built reader inputs of the format tests (tests/test_io_formats.py,
tests/test_io_readers.py): files written in one call, VOC XML, a two-image dataset, and the
FormatError a bad input must raise."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deteval import Categories, Dataset, FormatError, GroundTruth, Images


def expect(message: str, *, source: Path | str | None = None, record: str | None = None):
    """``pytest.raises(FormatError)`` whose text is ``source: record: message``; ``message`` is
    a regular expression, ``source`` and ``record`` literal."""
    prefix = "".join(re.escape(f"{part}: ") for part in (source, record) if part is not None)
    return pytest.raises(FormatError, match=("^" + prefix if prefix else "") + message)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def voc_xml(objects: str = "", *, filename: str = "a.jpg", size: str = "64 48") -> str:
    w, h = size.split()
    return (f"<annotation>\n<filename>{filename}</filename>\n<size><width>{w}</width>"
            f"<height>{h}</height></size>\n{objects}</annotation>\n")


def voc_object(name="cat", box=(1, 2, 30, 40), difficult="0") -> str:
    corners = "".join(f"<{t}>{v}</{t}>" for t, v in zip(("xmin", "ymin", "xmax", "ymax"), box))
    return (f"<object>\n<name>{name}</name>\n<difficult>{difficult}</difficult>\n"
            f"<bndbox>{corners}</bndbox>\n</object>\n")


def tiny_dataset() -> Dataset:
    return Dataset(Images(ids=[7, 9], widths=[100, 200], heights=[50, 100],
                          file_names=["a.jpg", "sub/b.png"]),
                   Categories(ids=[1, 2], names=["cat", "dog"]),
                   GroundTruth(image_index=[], category_index=[], boxes=[]))
