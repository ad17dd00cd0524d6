"""Columns a row type may hold as a recipe until first read, and the hand-over markers of the
readers (internal; the rules are in docs/data-model.md §1).

A reader hands a fresh array over (:func:`owned`), gives ``boxes=DERIVED`` / ``area=DERIVED``
with checked ``xywh``, the category ids as :func:`from_categories`, narrow row indices as
:func:`narrow`, or the masks as a :class:`~deteval._mask_text.MaskText`; the row types of
:mod:`deteval.data` keep the recipe and :class:`DerivedColumn` computes the column when it is
first read.

>>> row_dtype(300).name
'int16'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._arrays import frozen

__all__ = ["ALL_ROWS", "DERIVED", "DERIVED_COLUMNS", "DERIVED_FROM", "NARROW_KEY",
           "DerivedColumn", "FromCategories", "Narrow", "Owned", "derived_or_read",
           "from_categories", "has_column", "is_derived", "masks_of", "narrow", "owned",
           "recipe", "row_dtype", "xyxy_of_xywh"]


class Owned:
    """An array a reader has just made and hands over: the row types keep it as it is
    (checked, made read-only) instead of copying it. Only for arrays nothing else refers to."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        self.array = array


def owned(array: np.ndarray) -> Any:
    """Mark a fresh array as handed over to a row type (see :class:`Owned`); internal."""
    return Owned(array)


class _DerivedMarker:
    """The value a reader gives for ``boxes`` or ``area`` when ``xywh`` holds the source's
    checked boxes (``x + w``, ``y + h`` and ``w * h`` finite): the column is then derived
    from ``xywh`` on first read, not held."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DERIVED"


#: ``boxes=DERIVED``, ``area=DERIVED``: the xyxy boxes, the areas ``w * h`` of ``xywh``,
#: derived on first read (internal; readers).
DERIVED: Any = _DerivedMarker()


class FromCategories:
    """``category_ids=from_categories(ids)``: each row's category id is ``ids`` at its
    ``category_index`` (every index >= 0), derived on first read."""

    __slots__ = ("ids",)

    def __init__(self, ids: np.ndarray):
        self.ids = ids


def from_categories(ids: np.ndarray) -> Any:
    """The ``category_ids`` of detections whose every ``category_index`` is a row of the
    category id column ``ids`` (read-only, e.g. ``dataset.categories.ids``): derived on
    first read (internal; readers)."""
    return FromCategories(ids)


class Narrow:
    """``image_index=narrow(rows)``, ``category_index=narrow(rows)``: a reader's fresh row
    indices in the narrowest signed integer type that holds them; the int64 column is
    derived on first read."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        self.array = array


def narrow(array: np.ndarray) -> Any:
    """Hand over a fresh array of row indices held narrow (see :class:`Narrow`); internal."""
    return Narrow(array)


def row_dtype(n_rows: int) -> np.dtype:
    """The narrowest signed integer type holding the rows ``-1 .. n_rows - 1``.

    >>> [row_dtype(n).name for n in (80, 5_000, 40_000, 2**31 + 1)]
    ['int8', 'int16', 'int32', 'int64']
    """
    for dtype in (np.int8, np.int16, np.int32):
        if n_rows <= np.iinfo(dtype).max + 1:
            return np.dtype(dtype)
    return np.dtype(np.int64)


#: Where a row type keeps the narrow values of an index column given with ``narrow()``.
NARROW_KEY = {"image_index": "_image_rows", "category_index": "_category_rows"}


def xyxy_of_xywh(xywh: np.ndarray) -> np.ndarray:
    """``[x, y, x + w, y + h]`` of an ``(n, 4)`` float64 array, column by column (numpy runs
    a ufunc over an ``(n, 2)`` block with an inner loop of 2 elements: 4x slower).

    Examples
    --------
    >>> xyxy_of_xywh(np.array([[1.0, 2.0, 3.0, 4.0]])).tolist()
    [[1.0, 2.0, 4.0, 6.0]]
    """
    boxes = np.empty(xywh.shape, dtype=np.float64)
    boxes[:, :2] = xywh[:, :2]
    with np.errstate(over="ignore"):
        np.add(xywh[:, 0], xywh[:, 2], out=boxes[:, 2])
        np.add(xywh[:, 1], xywh[:, 3], out=boxes[:, 3])
    return boxes


class DerivedColumn:
    """A column a row type may leave out of the instance until it is first read: then
    computed from the other columns, made read-only and kept (the same array on every read).
    A non-data descriptor: an instance that holds the column never reaches it.

    Threads that first read the column at once may each compute it; the first array kept
    is the one every reader gets (``dict.setdefault`` is atomic), so no reader holds an
    array the table does not."""

    def __init__(self, name: str, derive: Any):
        self.name, self.derive = name, derive

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        return obj.__dict__.setdefault(self.name, frozen(self.derive(obj)))


def _derived_boxes(table: Any) -> np.ndarray:
    return xyxy_of_xywh(table.xywh)


def _derived_area(table: Any) -> np.ndarray:
    with np.errstate(over="ignore"):
        return table.xywh[:, 2] * table.xywh[:, 3]


def _derived_ids(table: Any) -> np.ndarray:
    return np.arange(1, len(table) + 1, dtype=np.int64)


def _derived_category_ids(table: Any) -> np.ndarray:
    # (indexing, not take: take is 9x slower with int8 or int16 indices)
    return table.__dict__["_category_id_table"][derived_or_read(table, "category_index")]


def _derived_image_index(table: Any) -> np.ndarray:
    return table.__dict__["_image_rows"].astype(np.int64)


def _derived_category_index(table: Any) -> np.ndarray:
    return table.__dict__["_category_rows"].astype(np.int64)


def _derived_masks(table: Any) -> np.ndarray:
    return table.__dict__["_mask_text"].dicts()


#: The columns the row types may derive on first read, how, and the column whose
#: replacement makes a derived one be computed from the old values (see ``replace``).
DERIVED_COLUMNS = {"boxes": _derived_boxes, "area": _derived_area, "ids": _derived_ids,
                    "category_ids": _derived_category_ids,
                    "image_index": _derived_image_index,
                    "category_index": _derived_category_index, "masks": _derived_masks}
DERIVED_FROM = {"boxes": "xywh", "area": "xywh", "category_ids": "category_index"}


def is_derived(table: Any, name: str) -> bool:
    """Whether ``table``'s column ``name`` is still to be derived (not computed yet)."""
    return (isinstance(getattr(type(table), name, None), DerivedColumn)
            and name not in table.__dict__)


def derived_or_read(table: Any, name: str) -> np.ndarray:
    """The values of column ``name`` of ``table``, for a stage that reads them once: a
    column still to be derived is computed for this use only, not kept (the memory stays
    free after it), and an index column held narrow is given as it is held (the same
    values in int8, int16 or int32: for comparisons and as indices, not for arithmetic
    that could overflow; index with them, ``a[rows]``: ``a.take(rows)`` is 9x slower with
    int8 or int16 indices)."""
    if is_derived(table, name):
        if name in NARROW_KEY:
            return table.__dict__[NARROW_KEY[name]]
        return DERIVED_COLUMNS[name](table)
    return getattr(table, name)


def has_column(table: Any, name: str) -> bool:
    """Whether ``table`` has column ``name`` (not None), without making a derived one."""
    return is_derived(table, name) or getattr(table, name) is not None


def masks_of(table: Any, rows: np.ndarray) -> np.ndarray:
    """The masks of ``rows`` of ``table`` (an object array, shape ``(len(rows),)``),
    without making the whole column when a reader left it to be made on first read
    (:class:`~deteval._mask_text.MaskText`)."""
    if is_derived(table, "masks"):
        return table.__dict__["_mask_text"].dicts(np.asarray(rows, dtype=np.int64))
    return table.masks[rows]


ALL_ROWS = slice(None)


def recipe(table: Any, name: str, selection: Any = ALL_ROWS) -> Any:
    """What a table of ``table``'s rows ``selection`` takes to derive column ``name`` as
    ``table`` would, without computing it."""
    if name == "category_ids":
        return FromCategories(table.__dict__["_category_id_table"])
    if name in NARROW_KEY:
        return Narrow(table.__dict__[NARROW_KEY[name]][selection])
    if name == "ids":
        return None if selection is ALL_ROWS else _derived_ids(table)[selection]
    if name == "masks":
        return table.__dict__["_mask_text"].select(selection)
    return DERIVED
