"""Masks, keypoints, polygons and rotated boxes of COCO-style records, read into columns.

The COCO readers call these for ``iou_type`` other than ``"bbox"``: each walks the records
once, checks the field it needs and returns the column :mod:`deteval.data` stores, naming
the record in every error.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._sorting import sorted_unique
from ..errors import FormatError

IOU_TYPES = ("bbox", "segm", "keypoints", "polygon", "rotated")


def check_iou_type(iou_type: str) -> str:
    if iou_type not in IOU_TYPES:
        raise ValueError(f"iou_type must be one of {', '.join(map(repr, IOU_TYPES))}; got "
                         f"{iou_type!r}")
    return iou_type


def _field(records: Sequence[dict], key: str, labels: Sequence[str], source: str,
           hint: str) -> list:
    values = []
    for i, record in enumerate(records):
        if key not in record:
            raise FormatError(f"missing '{key}' ({hint})", source=source, record=labels[i])
        values.append(record[key])
    return values


def segmentation_masks(records: Sequence[dict], heights: np.ndarray, widths: np.ndarray,
                       labels: Sequence[str], source: str) -> tuple[np.ndarray, ...]:
    """Masks (compressed RLE) of the records' ``segmentation`` fields, their pixel counts,
    and whether pycocotools' IoU routine may stop early on each (``masks.mask_iou_bound``)."""
    from ..masks import masks_from_segmentations

    values = _field(records, "segmentation", labels, source,
                    "iou_type 'segm' needs a mask: polygons or RLE")
    return masks_from_segmentations(values, heights=heights, widths=widths, source=source,
                                    records=labels, with_area=True, with_unbounded=True)


def keypoint_array(values: Sequence[Any], n_keypoints: np.ndarray, labels: Sequence[str],
                   source: str, *, numbers_checked: bool = False) -> np.ndarray:
    """``(n, K, 3)`` float64 keypoints, NaN-padded; ``n_keypoints[i]`` is row i's K.

    ``numbers_checked``: every value is known to be a list of numbers (no booleans), as the
    typed decoder gives them; their types are then not checked again."""
    n = len(values)
    k_max = int(n_keypoints.max(initial=0))
    out = None      # made when needed: with one layout the converted block is the array
    # Fast path: every value a list of plain numbers of the right length, converted per
    # keypoint count in one call; anything else is walked record by record below.
    lengths = (np.fromiter(map(len, values), np.int64, n) if numbers_checked else
               np.fromiter((len(v) if type(v) is list else -1 for v in values), np.int64, n))
    if (n_keypoints > 0).all() and (lengths == 3 * n_keypoints).all() and (
            numbers_checked
            or set(map(type, itertools.chain.from_iterable(values))) <= {int, float}):
        finite = True
        try:
            for k in sorted_unique(n_keypoints).tolist():
                rows = np.flatnonzero(n_keypoints == k)
                picked = values if len(rows) == n else [values[i] for i in rows]
                block = np.fromiter(itertools.chain.from_iterable(picked), np.float64,
                                    3 * k * len(rows)).reshape(-1, k, 3)
                finite = finite and bool(np.isfinite(block).all())
                if len(rows) == n and k == k_max:
                    out = block     # one layout: the block is the array
                else:
                    if out is None:
                        out = np.full((n, k_max, 3), np.nan)
                    out[rows, :k] = block
        except OverflowError:   # an integer beyond float64: the walk names the record
            finite = False
        if finite:
            return out if out is not None else np.full((n, k_max, 3), np.nan)
    # The walk names the record with a non-finite number (or of another kind).
    out = np.full((n, k_max, 3), np.nan)
    for i, value in enumerate(values):
        ok = isinstance(value, (list, tuple)) and all(
            isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
            for v in value)
        if not ok:
            raise FormatError("'keypoints' must be a flat list of numbers x1, y1, v1, x2, ...",
                              source=source, record=labels[i])
        k = int(n_keypoints[i])
        if not value or len(value) % 3:
            expected = f"; {3 * k} for the {k} keypoints of its category" if k > 0 else ""
            raise FormatError(f"'keypoints' must hold x, y, v triplets (a non-zero multiple of "
                              f"3 numbers{expected}); got {len(value)} numbers", source=source,
                              record=labels[i])
        if len(value) != 3 * k:
            raise FormatError(f"'keypoints' must hold 3 numbers per keypoint, {3 * k} for the "
                              f"{k} keypoints of its category; got {len(value)}",
                              source=source, record=labels[i])
        try:
            row = np.asarray(value, dtype=np.float64).reshape(k, 3)
        except OverflowError:
            row = np.full((k, 3), np.inf)
        if not np.isfinite(row).all():
            raise FormatError("'keypoints' must hold finite numbers", source=source,
                              record=labels[i])
        out[i, :k] = row
    return out


def keypoint_counts(records: Sequence[dict], category_index: np.ndarray,
                    categories: Sequence[dict] | None, labels: Sequence[str],
                    source: str) -> np.ndarray:
    """The keypoint count K of each record (see :func:`keypoint_counts_of`)."""
    listed = []
    for category in categories if categories is not None else ():
        names = category.get("keypoints") if isinstance(category, dict) else None
        listed.append(len(names) if isinstance(names, list) and names else -1)
    values = _field(records, "keypoints", labels, source,
                    "iou_type 'keypoints' needs x, y, v triplets")
    return keypoint_counts_of(values, category_index, listed)


def keypoint_counts_of(values: Sequence[Any], category_index: np.ndarray,
                       listed: Sequence[int]) -> np.ndarray:
    """The keypoint count K of each object: its category's ``keypoints`` list length when
    the category lists its keypoints (``listed[c]``, -1 where it does not), else the most
    common length / 3 among the category's objects (the first such length on a tie), which
    every object must then have: the odd one out is the record named in the error (by
    :func:`keypoint_array`)."""
    category_index = np.asarray(category_index, dtype=np.int64)
    n_cat = max(int(category_index.max(initial=-1)) + 1, len(listed))
    per_category = np.full(n_cat, -1, dtype=np.int64)
    per_category[:len(listed)] = listed
    unlisted = (category_index >= 0) & (per_category[np.maximum(category_index, 0)] < 0)
    # Each object's own count, read only where its category does not list its keypoints.
    own = np.full(len(values), -1, dtype=np.int64)
    rows = np.flatnonzero(unlisted | (category_index < 0))
    own[rows] = np.fromiter((len(v) // 3 if isinstance(v, (list, tuple)) and len(v) % 3 == 0
                             else -1 for v in map(values.__getitem__, rows.tolist())),
                            np.int64, len(rows))
    for c in sorted_unique(category_index[unlisted & (own > 0)]).tolist():
        lengths = own[(category_index == c) & (own > 0)]
        kinds, first, tally = np.unique(lengths, return_index=True, return_counts=True)
        best = np.flatnonzero(tally == tally.max())
        per_category[c] = kinds[best[np.argmin(first[best])]]
    return np.where(category_index >= 0, per_category[np.maximum(category_index, 0)],
                    np.maximum(own, 0))


def result_keypoint_counts(values: Sequence[Any], category_index: np.ndarray,
                           per_category: np.ndarray) -> np.ndarray:
    """K of each result: that of its category in the ground truth (else its own length)."""
    known = (category_index >= 0) & (category_index < len(per_category))
    category_k = np.where(known, per_category[np.where(known, category_index, 0)], -1)
    rows = np.flatnonzero(category_k <= 0)      # their own length (read only for those)
    category_k[rows] = np.fromiter(
        (len(v) // 3 if isinstance(v, (list, tuple)) else 0 for v in map(values.__getitem__,
                                                                          rows.tolist())),
        np.int64, len(rows))
    return category_k


def polygons(records: Sequence[dict], labels: Sequence[str], source: str, *,
             invalid: str = "raise") -> np.ndarray:
    """Shapely polygons from ``polygon`` (flat or multi-part) or polygon ``segmentation``."""
    from ..geometry import polygons_from_coords

    coords = []
    for i, record in enumerate(records):
        value = record.get("polygon", record.get("segmentation"))
        if value is None:
            raise FormatError("missing 'polygon' (iou_type 'polygon' needs the outline as "
                              "[x1, y1, x2, y2, ...])", source=source, record=labels[i])
        if isinstance(value, dict):
            raise FormatError("iou_type 'polygon' needs polygon coordinates; got an RLE mask "
                              "(use iou_type 'segm')", source=source, record=labels[i])
        coords.append(value)
    return polygons_from_coords(coords, invalid=invalid, source=source, records=labels)


def rotated_boxes(records: Sequence[dict], labels: Sequence[str], source: str
                  ) -> np.ndarray:
    """``(n, 5)`` rotated boxes from the records' ``rbox`` field ``[cx, cy, w, h, angle]``."""
    values = _field(records, "rbox", labels, source,
                    "iou_type 'rotated' needs [cx, cy, w, h, angle_degrees]")
    n = len(values)
    # Fast path: every value a list of 5 plain numbers, converted and checked at once;
    # anything else is walked record by record below, which names the record.
    if (all(type(v) is list for v in values)
            and (np.fromiter(map(len, values), np.int64, n) == 5).all()
            and set(map(type, itertools.chain.from_iterable(values))) <= {int, float}):
        try:
            out = np.fromiter(itertools.chain.from_iterable(values), np.float64,
                              5 * n).reshape(n, 5)
        except OverflowError:
            out = None
        if out is not None and np.isfinite(out).all() and (out[:, 2:4] >= 0).all():
            return out
    out = np.empty((n, 5))
    for i, value in enumerate(values):
        ok = (isinstance(value, (list, tuple)) and len(value) == 5
              and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value))
        if not ok:
            hint = (" (a quadrilateral x1, y1, ..., x4, y4 is a polygon: read it with iou_type "
                    "'polygon')" if isinstance(value, (list, tuple)) and len(value) == 8 else "")
            raise FormatError(f"'rbox' must be 5 numbers [cx, cy, w, h, angle_degrees]; got "
                              f"{value!r}{hint}", source=source, record=labels[i])
        try:
            out[i] = value
        except OverflowError:
            out[i] = np.inf
        if not np.isfinite(out[i]).all() or out[i, 2] < 0 or out[i, 3] < 0:
            raise FormatError(f"'rbox' must be finite with w, h >= 0; got {value!r}",
                              source=source, record=labels[i])
    return out


def outline_shapes(records: Sequence[dict], labels: Sequence[str], source: str,
                   iou_type: str, *, invalid: str = "raise") -> dict[str, np.ndarray]:
    """The outline columns of ``"polygon"`` (``polygons``) or ``"rotated"`` records
    (``rboxes`` and the ``polygons`` they describe)."""
    from ..geometry import polygons_from_rboxes

    if iou_type == "rotated":
        rboxes = rotated_boxes(records, labels, source)
        return {"rboxes": rboxes,
                "polygons": polygons_from_rboxes(rboxes, source=source, records=labels)}
    return {"polygons": polygons(records, labels, source, invalid=invalid)}
