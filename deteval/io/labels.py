"""Readers of the label and score files of ``deteval classify``: CSV (one label a line,
or n rows x K scores, optional header) or .npy arrays. Errors are ``ValueError``
naming the file. Not public API."""

from __future__ import annotations

import os


def _read_table(path: str, what: str) -> list[list[str]]:
    """The non-empty rows of a CSV file, cells stripped."""
    import csv

    from ._common import read_text

    sample = read_text(path, what=what, allow_empty=True)
    delimiter = "\t" if path.lower().endswith(".tsv") else ","
    rows = [[cell.strip() for cell in row]
            for row in csv.reader(sample.splitlines(), delimiter=delimiter)]
    return [row for row in rows if any(row)]


def _is_number(text: str) -> bool:
    """An ASCII decimal number (``float`` alone would read ``"١٢"`` and ``"1_2"``)."""
    from ._common import is_number_text

    return is_number_text(text)


def _labels_from_cells(cells: list[str], path: str, what: str):
    """Integers when every cell is one, else strings."""
    import re

    import numpy as np

    if all(re.fullmatch(r"[-+]?[0-9]+", c) for c in cells):
        try:
            return np.array([int(c) for c in cells], dtype=np.int64)
        except OverflowError:
            bad = next(c for c in cells if not -2**63 <= int(c) < 2**63)
            raise ValueError(f"{what} file {path}: integer label {bad} does not fit in 64 "
                             "bits") from None
    if all(_is_number(c) for c in cells):
        bad = next(c for c in cells if not re.fullmatch(r"[-+]?[0-9]+", c))
        raise ValueError(f"{what} file {path}: labels must be integers or names; got "
                         f"{bad!r}")
    return np.array(cells, dtype=str)


def _load_npy(path: str, what: str):
    """A .npy array, its header checked against the file's size before anything is
    allocated (a header may claim any shape), never unpickled."""
    import numpy as np

    from ..errors import FormatError
    from ._json import open_input

    with open_input(path, what=what) as handle:
        try:
            version = np.lib.format.read_magic(handle)
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f"format version {version[0]}.{version[1]} is not read")
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, _, dtype = read_header(handle, max_header_size=10000)
        except (ValueError, EOFError, OSError, SyntaxError) as error:
            raise FormatError(f"cannot read {what} file: not a .npy array ({error})",
                              source=path) from None
        if dtype.hasobject:
            raise FormatError(f"cannot read {what} file: the array holds Python objects, "
                              "which are not read (they would be unpickled)", source=path)
        count = 1
        for n in shape:
            count *= n
        expected = handle.tell() + count * dtype.itemsize
        size = os.fstat(handle.fileno()).st_size
        if size != expected:
            raise FormatError(f"cannot read {what} file: its header says shape {shape} of "
                              f"{dtype} ({count * dtype.itemsize} bytes of data), but the file "
                              f"has {size - handle.tell()}", source=path)
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as error:  # pragma: no cover - checked above
            raise FormatError(f"cannot read {what} file: {error}", source=path) from None


def read_labels(path: str, what: str = "LABELS"):
    """One label a line (optional header) or a 1-D .npy array."""
    if path.lower().endswith(".npy"):
        array = _load_npy(path, what)
        if array.ndim != 1 and not (array.ndim == 2 and array.shape[1] == 1):
            raise ValueError(f"{what} file {path}: expected a 1-D array of labels; got shape "
                             f"{array.shape}")
        return array.reshape(-1)
    rows = _read_table(path, what)
    wide = next((i for i, row in enumerate(rows) if len(row) != 1), None)
    if wide is not None:
        raise ValueError(f"{what} file {path}: expected one label a line; line "
                         f"{wide + 1} has {len(rows[wide])} cells")
    cells = [row[0] for row in rows]
    if cells and _has_header(cells):
        cells = cells[1:]
    if not cells:
        raise ValueError(f"{what} file {path}: no labels")
    return _labels_from_cells(cells, path, what)


_HEADER_WORDS = {"label", "labels", "y", "y_true", "y_pred", "true", "pred", "prediction",
                 "predicted", "class", "target", "category", "truth"}


def _has_header(cells: list[str]) -> bool:
    """A first line that is a name above numbers, or a usual column name not used again."""
    first, rest = cells[0], cells[1:]
    if not _is_number(first) and rest and all(_is_number(c) for c in rest):
        return True
    return first.lower() in _HEADER_WORDS and first not in rest


def read_scores(path: str):
    """2-D scores (float) or 1-D predicted labels."""
    import numpy as np

    if path.lower().endswith(".npy"):
        array = _load_npy(path, "SCORES")
        if array.ndim == 2 and array.dtype.kind not in "biuf":
            raise ValueError(f"SCORES file {path}: scores must be numbers; got dtype "
                             f"{array.dtype}")
        if array.ndim not in (1, 2):
            raise ValueError(f"SCORES file {path}: expected a 2-D array of scores or a 1-D "
                             f"array of predicted labels; got shape {array.shape}")
        return array
    rows = _read_table(path, "SCORES")
    if rows and all(len(row) == 1 for row in rows):
        return read_labels(path, "SCORES")
    if rows and not all(_is_number(c) for c in rows[0]):
        rows = rows[1:]  # a header
    if not rows:
        raise ValueError(f"SCORES file {path}: no scores")
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"SCORES file {path}: every row needs {width} scores; row "
                             f"{i + 1} has {len(row)}")
        bad = next((c for c in row if not _is_number(c)), None)
        if bad is not None:
            raise ValueError(f"SCORES file {path}: scores must be numbers; got {bad!r} in "
                             f"row {i + 1}")
    return np.array([[float(c) for c in row] for row in rows], dtype=np.float64)
