"""The columnar data model: ground truth and detections as parallel numpy arrays.

Readers convert files into these types once; everything downstream works on whole
columns at a time. All arrays are copied on construction and made read-only, so a
``GroundTruth`` or ``Detections`` never shares writable memory with the caller and can
never be modified after it is built.

Boxes are always ``(n, 4)`` float64 **xyxy in absolute pixels**. Readers of formats that
store ``[x, y, w, h]`` (COCO) also keep those original numbers in ``xywh``, because the COCO
protocol computes IoU and areas from them and ``x + w - x`` is not always ``w`` in floating
point. A reader that keeps ``xywh`` may leave the xyxy ``boxes`` to be derived from it when
they are first read, and default ``ids`` are made so too (see ``docs/data-model.md`` §1):
the values are the same, the memory is only spent by those who read them.

Examples
--------
>>> import numpy as np
>>> gt = GroundTruth(image_index=[0, 0], category_index=[0, 1],
...                  boxes=[[0, 0, 10, 10], [5, 5, 20, 30]])
>>> len(gt), gt.area.tolist()
(2, [100.0, 375.0])
>>> dt = Detections(image_index=[0], category_index=[1], boxes=[[5, 5, 20, 29]], scores=[0.9])
>>> dt[dt.scores > 0.5].scores.tolist()
[0.9]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._arrays import ReadOnlyArrays, frozen
from ._derived import (  # noqa: F401 (derived_or_read ... : imported from here too)
    ALL_ROWS,
    DERIVED,
    DERIVED_COLUMNS,
    DERIVED_FROM,
    NARROW_KEY,
    DerivedColumn,
    FromCategories,
    Narrow,
    Owned,
    derived_or_read,
    from_categories,
    has_column,
    is_derived,
    masks_of,
    narrow,
    owned,
    recipe,
    row_dtype,
    xyxy_of_xywh,
)
from ._mask_text import MaskText

__all__ = ["Categories", "Dataset", "Detections", "GroundTruth", "Images"]


class Checked(Owned):
    """A fresh array a reader hands over (kept as :class:`Owned` is) after proving every
    value finite, and, given as ``xywh``, every ``w, h >= 0``: :class:`Detections` and
    :class:`GroundTruth` do not check those again. Internal: made only by a reader that
    checked every value of the array it hands over (:func:`checked`), never for an array a
    caller gives (docs/data-model.md §1)."""

    __slots__ = ()


def checked(array: np.ndarray) -> Any:
    """Mark a fresh array whose values a reader has proved (see :class:`Checked`); internal.

    >>> xywh = checked(np.array([[0.0, 0.0, 2.0, 3.0]]))
    >>> dt = Detections(image_index=[0], category_index=[0], boxes=DERIVED, area=DERIVED,
    ...                 scores=checked(np.array([0.5])), xywh=xywh)
    >>> dt.area.tolist()
    [6.0]
    """
    return Checked(array)


def _column(name: str, values: Any, dtype: Any, n: int | None, tail: tuple = (), *,
            finite: bool = True) -> np.ndarray:
    """Copy ``values`` into a fresh read-only array of ``dtype``, checking shape and values.

    Integer columns refuse fractions and values outside int64; float columns refuse
    strings and non-finite values; flag columns take only 0/1 (or bool). An array marked
    with :func:`owned` is kept without a copy when it has the dtype already.
    """
    if values is None:
        values = np.zeros((0 if n is None else n, *tail), dtype=dtype)
    proved = type(values) is Checked       # (finite: proved by the reader that made it)
    handed_over = proved or type(values) is Owned
    if handed_over:
        values = values.array
    raw = np.asarray(values)
    kind = np.dtype(dtype).kind
    if raw.size and raw.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers; got dtype {raw.dtype}")
    if raw.size and kind == "i":
        if raw.dtype.kind == "f" and not np.array_equal(raw, np.round(raw)):
            bad = np.flatnonzero((raw != np.round(raw)).ravel())[0]
            raise ValueError(f"{name} must hold integers; got {raw.ravel()[bad]!r} at "
                             f"position {bad}")
        if raw.dtype.kind in "uf" and (raw.max() >= 2**63 or raw.min() < -2**63):
            raise ValueError(f"{name} must fit in int64; got values up to {raw.max()!r}")
    if raw.size and kind == "b" and raw.dtype.kind != "b":
        bad = np.flatnonzero(~np.isin(raw.ravel(), (0, 1)))
        if len(bad):
            raise ValueError(f"{name} must hold 0/1 flags; got {raw.ravel()[bad[0]]!r} at "
                             f"position {bad[0]}")
    if handed_over and raw.dtype == dtype:
        array = raw
    else:
        array = np.array(raw, dtype=dtype, copy=True)
    if array.ndim == 1 and tail == (4,) and array.size == 0:
        array = array.reshape(0, 4)
    expected_ndim = 1 + len(tail)
    if array.ndim != expected_ndim or tuple(array.shape[1:]) != tail:
        shape = "(n," + "".join(f" {t}," for t in tail)
        shape = shape.rstrip(",") + ")" if tail else "(n,)"
        raise ValueError(f"{name} must have shape {shape}; got {array.shape}")
    if n is not None and len(array) != n:
        raise ValueError(f"{name} must have length {n} like the other columns; got {len(array)}")
    if kind == "f" and finite and not proved and array.size and not np.isfinite(array).all():
        bad = np.flatnonzero(~np.isfinite(array.reshape(len(array), -1)).all(axis=1))
        if len(bad):
            raise ValueError(f"{name} must be finite; row {bad[0]} has "
                             f"{array[bad[0]].tolist()}")
    return frozen(array)


def _check_boxes(name: str, boxes: np.ndarray, first: int = 2) -> None:
    """Refuse boxes whose far corner (or size, for xywh) is negative relative to the first."""
    if first == 2:
        bad = np.flatnonzero((boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1]))
        what = "x2 >= x1 and y2 >= y1 (xyxy)"
    else:
        bad = np.flatnonzero((boxes[:, 2] < 0) | (boxes[:, 3] < 0))
        what = "w >= 0 and h >= 0 (xywh)"
    if len(bad):
        raise ValueError(f"{name} must have {what}; row {bad[0]} is {boxes[bad[0]].tolist()}")


def index_in(values: Any, ids: np.ndarray) -> np.ndarray:
    """Row of each value in the id column ``ids`` (its first occurrence), -1 where absent.

    Examples
    --------
    >>> index_in([7, 3, 9], np.array([3, 5, 7])).tolist()
    [2, 0, -1]
    >>> index_in([5, -1, 2**40], np.array([5, 5, 2**40])).tolist()   # sparse ids
    [0, -1, 2]
    """
    values = np.asarray(values, dtype=np.int64)
    if len(ids) == 0:
        return np.full(values.shape, -1, dtype=np.int64)
    ids = np.asarray(ids)
    if ids.dtype == np.int64:
        lo, hi = int(ids.min()), int(ids.max())
        if hi - lo < 2 * (len(ids) + values.size) + 1024:
            # Dense enough ids: a lookup table, its size bounded by the inputs'.
            unique, first = np.unique(ids, return_index=True)
            table = np.full(hi - lo + 1, -1, dtype=np.int64)
            table[unique - lo] = first
            inside = (values >= lo) & (values <= hi)
            if inside.all():
                return table[values - lo]
            out = np.full(values.shape, -1, dtype=np.int64)
            out[inside] = table[values[inside] - lo]
            return out
    order = np.argsort(ids, kind="stable")
    pos = np.clip(np.searchsorted(ids[order], values), 0, len(ids) - 1)
    return np.where(ids[order][pos] == values, order[pos], -1)


def _box_area(boxes: np.ndarray) -> np.ndarray:
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


class _Columns(ReadOnlyArrays):
    """Shared behaviour of the struct-of-arrays types: length, filtering, replacing."""

    def __len__(self) -> int:
        held = self.__dict__
        return len(held["image_index"] if "image_index" in held else held["_image_rows"])

    def __getitem__(self, selection: Any):
        """Select rows with a boolean mask, an index array or a slice; returns a new instance."""
        if isinstance(selection, (int, np.integer)):
            selection = [selection]
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if is_derived(self, f.name):    # derived again from the selected rows
                kwargs[f.name] = recipe(self, f.name, selection)
                continue
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                kwargs[f.name] = value[selection]
            else:
                kwargs[f.name] = value
        return _carry_checks(self, type(self)(**kwargs))

    def as_xywh(self) -> np.ndarray:
        """Boxes as ``[x, y, w, h]``, shape (n, 4): the source's own numbers when they were
        kept (``xywh``), else converted from ``boxes``."""
        if self.xywh is not None:  # type: ignore[attr-defined]
            return self.xywh  # type: ignore[attr-defined]
        boxes = self.boxes  # type: ignore[attr-defined]
        return np.column_stack([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]]).reshape(-1, 4)

    def _init_shared(self) -> int:
        """Normalise the columns both row types have; returns the row count."""
        set_ = object.__setattr__
        n = None
        for name, key in NARROW_KEY.items():
            value = self.__dict__[name]
            if type(value) is Narrow:      # a reader's fresh rows: kept narrow
                rows = value.array
                if rows.dtype.kind != "i" or rows.ndim != 1 or (n is not None
                                                                  and len(rows) != n):
                    raise ValueError(f"{name} held narrow must be a 1-D integer array of "
                                     "the table's length")
                self.__dict__[key] = frozen(rows)
                del self.__dict__[name]
            else:
                set_(self, name, _column(name, value, np.int64, n))
            n = len(self) if n is None else n
        assert n is not None
        if self.xywh is not None:  # checked first: the source's own numbers
            proved = type(self.xywh) is Checked     # (w, h >= 0 proved by its reader)
            set_(self, "xywh", _column("xywh", self.xywh, np.float64, n, (4,)))
            if not proved:
                _check_boxes("xywh", self.xywh, first=0)
        for name in ("boxes", "area"):      # a reader's checked xywh: derived when read
            if self.__dict__[name] is DERIVED:
                if self.xywh is None:
                    raise ValueError(f"{name} can only be derived from xywh")
                del self.__dict__[name]
        if "boxes" in self.__dict__:
            set_(self, "boxes", _column("boxes", self.boxes, np.float64, n, (4,)))
            _check_boxes("boxes", self.boxes)
        if self.__dict__.get("area", DERIVED) is None:  # (derived boxes are not kept for it)
            set_(self, "area", _column("area", owned(_box_area(derived_or_read(self, "boxes"))),
                                       np.float64, n))
        elif "area" in self.__dict__:
            set_(self, "area", _column("area", self.area, np.float64, n))
        if self.__dict__["ids"] is None:     # 1..n, made when first read
            del self.__dict__["ids"]
        else:
            set_(self, "ids", _column("ids", self.ids, np.int64, n))
        if type(self.__dict__["masks"]) is MaskText:    # a reader's text: made when read
            if len(self.__dict__["masks"]) != n:
                raise ValueError(f"masks must have length {n}; got {len(self.masks)}")
            self.__dict__["_mask_text"] = self.__dict__.pop("masks")
        for name in ("masks", "polygons"):
            value = None if is_derived(self, name) else getattr(self, name)
            if value is not None:
                if isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 1:
                    array = value.copy()     # a copy of the references: never aliased
                else:
                    array = np.empty(len(value), dtype=object)
                    array[:] = list(value)
                if len(array) != n:
                    raise ValueError(f"{name} must have length {n}; got {len(array)}")
                set_(self, name, frozen(array))
        if self.keypoints is not None:
            if type(self.keypoints) is Owned:     # a reader's fresh table: kept
                keypoints = self.keypoints.array.astype(np.float64, copy=False)
            else:
                keypoints = np.array(self.keypoints, dtype=np.float64)  # a copy: never alias
            if keypoints.ndim == 2 and keypoints.shape[1] % 3 == 0:
                keypoints = keypoints.reshape(len(keypoints), -1, 3)
            if keypoints.ndim != 3 or keypoints.shape[0] != n or keypoints.shape[2] != 3:
                raise ValueError(f"keypoints must have shape ({n}, K, 3); got {keypoints.shape}")
            set_(self, "keypoints", frozen(keypoints))
        if self.rboxes is not None:
            set_(self, "rboxes", _column("rboxes", self.rboxes, np.float64, n, (5,)))
        if self.mask_area is not None:
            set_(self, "mask_area", _column("mask_area", self.mask_area, np.float64, n,
                                            finite=False))
        if self.mask_xywh is not None:
            set_(self, "mask_xywh", _column("mask_xywh", self.mask_xywh, np.float64, n, (4,)))
        return n

    def replace(self, **changes: Any):
        """Return a copy with some columns replaced (``dataclasses.replace``).

        Columns derived from a replaced one are dropped unless given too, so that nothing
        stale survives: new ``boxes`` drop ``xywh`` (and, for detections, recompute
        ``area``); a new ``category_index`` drops the source ``category_ids``; new ``masks``
        drop ``mask_area`` and ``mask_xywh``.
        """
        new_masks = "masks" in changes
        if "boxes" in changes:
            changes.setdefault("xywh", None)
            if isinstance(self, Detections):
                changes.setdefault("area", None)
        if "category_index" in changes and isinstance(self, Detections):
            changes.setdefault("category_ids", None)
        if "masks" in changes:
            changes.setdefault("mask_area", None)
            changes.setdefault("mask_xywh", None)
        for name in DERIVED_COLUMNS:   # carried as they are, not computed to be copied
            if (name not in changes and DERIVED_FROM.get(name) not in changes
                    and is_derived(self, name)):
                changes[name] = recipe(self, name)
        out = dataclasses.replace(self, **changes)  # type: ignore[type-var]
        return out if new_masks else _carry_checks(self, out)


#: What a reader checked of a row type's masks (deteval.masks.rle.RUN_TOTALS_CHECKED): kept
#: by selections of rows and by copies with the same masks.
_MASK_CHECKS = ("_run_totals_checked",)


def _carry_checks(source: Any, out: Any) -> Any:
    for name in _MASK_CHECKS:
        if getattr(source, name, False):
            object.__setattr__(out, name, True)
    return out


@dataclass(frozen=True, eq=False, repr=False)
class GroundTruth(_Columns):
    """Ground-truth objects of a whole dataset, one row per object.

    Parameters
    ----------
    image_index : array of int, shape (n,)
        Row of each object's image in the dataset's :class:`Images` table.
    category_index : array of int, shape (n,)
        Row of each object's category in the :class:`Categories` table.
    boxes : array of float, shape (n, 4)
        Boxes as xyxy in absolute pixels (converted to float64).
    area : array of float, shape (n,), optional
        Object area used for the size ranges. COCO files give the segmentation area here;
        defaults to the box area.
    iscrowd : array of bool, shape (n,), optional
        COCO crowd regions. Defaults to all False.
    ignore : array of bool, shape (n,), optional
        Objects neither to be found nor to be penalised (VOC *difficult*). The COCO protocol
        overwrites this with ``iscrowd``, as pycocotools does.
    ids : array of int, shape (n,), optional
        Annotation ids; defaults to ``1..n``.
    xywh : array of float, shape (n, 4), optional
        The original ``[x, y, w, h]`` numbers when the source stored them.
    masks : array of object, shape (n,), optional
        Instance masks as compressed RLE dicts ``{"size": [h, w], "counts": str | bytes}``,
        the form pycocotools' mask routines take (readers convert polygons and uncompressed
        RLE; the results reader keeps a file's strings as ``str``, the size as a tuple).
    keypoints : array of float, shape (n, K, 3), optional
        Keypoints ``(x, y, v)``; rows of a category with fewer than K keypoints are padded
        with NaN.
    num_keypoints : array of int, shape (n,), optional
        The COCO ``num_keypoints`` field (objects with 0 are ignored by the keypoint protocol).
    polygons : array of object, shape (n,), optional
        Exact outlines as shapely polygons (polygon and rotated-box protocols).
    rboxes : array of float, shape (n, 5), optional
        Rotated boxes ``(cx, cy, w, h, angle)``, angle in degrees, counter-clockwise as seen
        on the image (y pointing down); see :mod:`deteval.geometry`.
    mask_area, mask_xywh : array of float, shape (n,) and (n, 4), optional
        Pixel count and tight box ``[x, y, w, h]`` of each mask (pycocotools' ``area`` and
        ``toBbox``), when a reader has them at hand. They only let the segm evaluation skip
        pairs whose IoU cannot reach its lowest threshold; they are dropped when ``masks``
        is replaced, and computed from the masks where needed and absent. ``mask_area`` is
        NaN for a mask on which pycocotools' IoU routine may stop counting early (an empty
        run after its first, or more than 2**31 pixels): its pairs are never skipped (see
        :func:`deteval.masks.mask_iou_bound`).
    """

    image_index: np.ndarray
    category_index: np.ndarray
    boxes: np.ndarray
    area: np.ndarray | None = None
    iscrowd: np.ndarray | None = None
    ignore: np.ndarray | None = None
    ids: np.ndarray | None = None
    xywh: np.ndarray | None = None
    masks: np.ndarray | None = None
    keypoints: np.ndarray | None = None
    num_keypoints: np.ndarray | None = None
    polygons: np.ndarray | None = None
    rboxes: np.ndarray | None = None
    mask_area: np.ndarray | None = None
    mask_xywh: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = self._init_shared()
        object.__setattr__(self, "iscrowd", _column("iscrowd", self.iscrowd, bool, n))
        object.__setattr__(self, "ignore", _column("ignore", self.ignore, bool, n))
        if self.num_keypoints is not None:
            object.__setattr__(self, "num_keypoints",
                               _column("num_keypoints", self.num_keypoints, np.int64, n))

    def __repr__(self) -> str:
        return (f"GroundTruth(n={len(self)}, crowd={int(self.iscrowd.sum())}, "
                f"ignore={int(self.ignore.sum())})")


@dataclass(frozen=True, eq=False, repr=False)
class Detections(_Columns):
    """Detections of a whole dataset, one row per detection.

    Parameters
    ----------
    image_index, category_index : array of int, shape (n,)
        Rows in the dataset's :class:`Images` and :class:`Categories` tables.
    boxes : array of float, shape (n, 4)
        Boxes as xyxy in absolute pixels.
    scores : array of float, shape (n,)
        Confidence scores; higher is more confident.
    area : array of float, shape (n,), optional
        Area used for the size ranges; defaults to the box area.
    ids : array of int, shape (n,), optional
        Detection ids; defaults to ``1..n`` (input order, which breaks score ties).
    xywh : array of float, shape (n, 4), optional
        The original ``[x, y, w, h]`` numbers when the source stored them.
    category_ids : array of int, shape (n,), optional
        The category id each detection had in its source. Readers keep it because a
        result whose category is not in the ground truth (``category_index == -1``) still
        takes part in class-agnostic COCO evaluation when its id is requested.
    masks, keypoints, polygons, rboxes, mask_area, mask_xywh : optional
        As for :class:`GroundTruth`.
    """

    image_index: np.ndarray
    category_index: np.ndarray
    boxes: np.ndarray
    scores: np.ndarray
    area: np.ndarray | None = None
    ids: np.ndarray | None = None
    xywh: np.ndarray | None = None
    category_ids: np.ndarray | None = None
    masks: np.ndarray | None = None
    keypoints: np.ndarray | None = None
    polygons: np.ndarray | None = None
    rboxes: np.ndarray | None = None
    mask_area: np.ndarray | None = None
    mask_xywh: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = self._init_shared()
        object.__setattr__(self, "scores", _column("scores", self.scores, np.float64, n))
        recipe = self.__dict__["category_ids"]
        if type(recipe) is FromCategories:
            index = derived_or_read(self, "category_index")
            if n and (index.min() < 0 or index.max() >= len(recipe.ids)):
                raise ValueError("category_ids can only be derived from rows of the table")
            ids = recipe.ids    # (a row type's read-only column is kept, anything else copied)
            if ids.flags.writeable or ids.dtype != np.int64:
                ids = frozen(np.array(ids, dtype=np.int64))
            self.__dict__["_category_id_table"] = ids
            del self.__dict__["category_ids"]
        elif recipe is not None:
            object.__setattr__(self, "category_ids",
                               _column("category_ids", self.category_ids, np.int64, n))

    def __repr__(self) -> str:
        return f"Detections(n={len(self)})"


for _table in (GroundTruth, Detections):     # (after the dataclass decorator: not defaults)
    for _field in dataclasses.fields(_table):
        if _field.name in DERIVED_COLUMNS:
            setattr(_table, _field.name, DerivedColumn(_field.name,
                                                        DERIVED_COLUMNS[_field.name]))


@dataclass(frozen=True, eq=False)
class Images(ReadOnlyArrays):
    """The images table: one row per image.

    Parameters
    ----------
    ids : array of int, shape (n,)
        Image ids as in the source file (unique).
    widths, heights : array of float, shape (n,), optional
        Image size in pixels (NaN where unknown).
    file_names : tuple of str, optional
        File name of each image ("" where unknown).
    """

    ids: np.ndarray
    widths: np.ndarray | None = None
    heights: np.ndarray | None = None
    file_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "ids", _column("ids", self.ids, np.int64, None))
        n = len(self.ids)
        for name in ("widths", "heights"):
            value = getattr(self, name)
            set_(self, name, _column(name, np.full(n, np.nan) if value is None else value,
                                     np.float64, n, finite=False))  # NaN: unknown size
        names = ("",) * n if self.file_names is None else tuple(str(s) for s in self.file_names)
        if len(names) != n:
            raise ValueError(f"file_names must have length {n}; got {len(names)}")
        set_(self, "file_names", names)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, eq=False)
class Categories(ReadOnlyArrays):
    """The categories table: one row per category.

    Parameters
    ----------
    ids : array of int, shape (k,)
        Category ids as in the source (unique).
    names : tuple of str, optional
        Category names; default ``str(id)``.
    supercategories : tuple of str, optional
        COCO super-categories ("" where unknown).
    """

    ids: np.ndarray
    names: tuple[str, ...] | None = None
    supercategories: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "ids", _column("ids", self.ids, np.int64, None))
        n = len(self.ids)
        names = tuple(str(i) for i in self.ids) if self.names is None else tuple(
            str(s) for s in self.names)
        supers = ("",) * n if self.supercategories is None else tuple(
            str(s) for s in self.supercategories)
        if len(names) != n or len(supers) != n:
            raise ValueError(f"names and supercategories must have length {n}")
        set_(self, "names", names)
        set_(self, "supercategories", supers)

    def __len__(self) -> int:
        return len(self.ids)

    def index_of(self, category_id: int) -> int:
        """Row of ``category_id`` in this table; ``KeyError`` if absent."""
        hits = np.flatnonzero(self.ids == category_id)
        if len(hits) == 0:
            raise KeyError(category_id)
        return int(hits[0])


@dataclass(frozen=True, eq=False)
class Dataset:
    """A ground-truth dataset: the images and categories tables and the objects.

    Parameters
    ----------
    images : Images
    categories : Categories
    gt : GroundTruth
        Objects whose ``image_index`` and ``category_index`` point into the two tables.
    source : str, optional
        Where the dataset was read from, used in error messages.
    ids_assigned : bool
        True when the image and category ids were numbered by the reader (formats keyed by
        file name: every reader but COCO's), not read from the source: they then say nothing
        a detections file could contradict (see ``docs/resolution.md``).
    notes : tuple of str
        What the reader wants a user to know (an evaluation repeats them in its notes).
    string_ids : dict, optional
        ``{"image": strings, "category": strings}`` when the source's ids of that kind were
        strings: ``ids`` then number them ``1..n`` in this (sorted) order, and results with
        string ids are numbered alike (``deteval.io.coco.string_ids``).
    """

    images: Images
    categories: Categories
    gt: GroundTruth
    source: str | None = field(default=None)
    ids_assigned: bool = False
    notes: tuple[str, ...] = ()
    string_ids: dict | None = None

    def __post_init__(self) -> None:
        if len(self.gt):
            if self.gt.image_index.min() < 0 or self.gt.image_index.max() >= len(self.images):
                raise ValueError("gt.image_index must index the images table")
            if (self.gt.category_index.min() < 0
                    or self.gt.category_index.max() >= len(self.categories)):
                raise ValueError("gt.category_index must index the categories table")

    def detections(self, *, image_ids: Any, category_ids: Any, boxes: Any, scores: Any,
                   box_format: str = "xyxy") -> Detections:
        """Detections for this dataset from plain arrays (a model's output, say).

        Parameters
        ----------
        image_ids, category_ids : array_like of int, shape (n,)
            Ids as in the images and categories tables. Every image id must be known; a
            category id that is not gets ``category_index == -1`` (protocols drop it).
        boxes : array_like, shape (n, 4)
            Boxes in ``box_format`` (see :data:`deteval.boxes.BOX_FORMATS`); normalised
            formats are scaled by each image's width and height.
        scores : array_like, shape (n,)
        box_format : str
            ``"xyxy"`` (default), ``"xywh"`` (COCO), ``"cxcywh"`` or a normalised form.

        Returns
        -------
        Detections
            With ``xywh`` kept when the boxes were given as xywh, so that COCO evaluation
            uses exactly those numbers.

        Examples
        --------
        >>> ds = Dataset(Images(ids=[7], widths=[100], heights=[50]), Categories(ids=[1]),
        ...              GroundTruth(image_index=[], category_index=[], boxes=[]))
        >>> dt = ds.detections(image_ids=[7], category_ids=[1], boxes=[[0.5, 0.5, 0.2, 0.4]],
        ...                    scores=[0.9], box_format="cxcywhn")
        >>> dt.boxes.tolist()
        [[40.0, 15.0, 60.0, 35.0]]
        """
        from .boxes import convert_boxes

        image_ids = _column("image_ids", image_ids, np.int64, None)
        n = len(image_ids)
        category_ids = _column("category_ids", category_ids, np.int64, n)
        image_index = index_in(image_ids, self.images.ids)
        bad = np.flatnonzero(image_index < 0)
        if len(bad):
            raise ValueError(f"image_ids must be ids of the dataset's images; "
                             f"image_ids[{bad[0]}] = {image_ids[bad[0]]} is not")
        sizes = np.column_stack([self.images.widths[image_index],
                                 self.images.heights[image_index]])
        normalised = box_format.endswith("n")
        if box_format == "xywh":
            _check_boxes("boxes", _column("boxes", boxes, np.float64, n, (4,)), first=0)
        xyxy = convert_boxes(boxes, box_format, "xyxy",
                             image_size=sizes if normalised else None)
        if len(xyxy) != n:
            raise ValueError(f"boxes must have one row per image id ({n}); got {len(xyxy)}")
        xywh = np.asarray(boxes, dtype=np.float64).reshape(-1, 4) if box_format == "xywh" \
            else None
        return Detections(image_index=image_index,
                          category_index=index_in(category_ids, self.categories.ids),
                          boxes=xyxy, scores=scores, xywh=xywh,
                          area=None if xywh is None else xywh[:, 2] * xywh[:, 3],
                          category_ids=category_ids)

    def __repr__(self) -> str:
        return (f"Dataset(images={len(self.images)}, categories={len(self.categories)}, "
                f"objects={len(self.gt)}, source={self.source!r})")
