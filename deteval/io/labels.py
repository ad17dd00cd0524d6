"""Readers of the label and score files of ``deteval classify``: CSV (one label a line,
or n rows x K scores, optional header) or .npy arrays. Errors are ``ValueError``
naming the file. Not public API."""

from __future__ import annotations


def _read_table(path: str, what: str) -> list[list[str]]:
    """The non-empty rows of a CSV file, cells stripped."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            sample = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise ValueError(f"cannot read {what} file {path}: {reason}") from None
    delimiter = "\t" if path.lower().endswith(".tsv") else ","
    rows = [[cell.strip() for cell in row]
            for row in csv.reader(sample.splitlines(), delimiter=delimiter)]
    return [row for row in rows if any(row)]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _labels_from_cells(cells: list[str], path: str, what: str):
    """Integers when every cell is one, else strings."""
    import numpy as np

    try:
        return np.array([int(c) for c in cells], dtype=np.int64)
    except ValueError:
        if all(_is_number(c) for c in cells):
            bad = next(c for c in cells if not c.lstrip("+-").isdigit())
            raise ValueError(f"{what} file {path}: labels must be integers or names; got "
                             f"{bad!r}") from None
        return np.array(cells, dtype=str)


def _load_npy(path: str, what: str):
    import numpy as np

    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise ValueError(f"cannot read {what} file {path}: {reason}") from None
    if not isinstance(array, np.ndarray):
        raise ValueError(f"cannot read {what} file {path}: expected a .npy array")
    return array


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
