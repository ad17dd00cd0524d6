"""Checks and builders shared by the COCO readers' typed and general paths: the
ground-truth columns checked against each other into a :class:`~deteval.data.Dataset`,
boxes converted to xyxy, areas, and keypoint results' columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..._sorting import sorted_unique
from ...data import Categories, Dataset, GroundTruth, Images, index_in
from ...errors import FormatError
from .._shapes import keypoint_array, result_keypoint_counts


def _unique_ids(ids: np.ndarray, source: str, section: str) -> None:
    if len(sorted_unique(ids)) != len(ids):     # (np.unique would import numpy.ma: start-up)
        order = np.argsort(ids, kind="stable")
        dup = np.flatnonzero(ids[order][1:] == ids[order][:-1])[0]
        first, second = sorted((int(order[dup]), int(order[dup + 1])))
        raise FormatError(f"duplicate id {int(ids[second])} (also used by {section}[{first}]); "
                          "ids must be unique", source=source, record=f"{section}[{second}]")


def _has_box(record: dict) -> bool:
    """Whether a record gives a box: a ``bbox`` that is neither absent, null nor ``[]``."""
    box = record.get("bbox")
    return box is not None and not (isinstance(box, list) and not box)


def _box_areas(xywh: np.ndarray, name: str, where) -> np.ndarray:
    """``w * h`` of each box, refusing a product that overflows float64."""
    with np.errstate(over="ignore"):
        area = xywh[:, 2] * xywh[:, 3]
    bad = np.flatnonzero(~np.isfinite(area))
    if len(bad):
        raise FormatError(f"box {xywh[bad[0]].tolist()} has an area w * h that overflows "
                          "float64", source=name, record=where(int(bad[0])))
    return area


def _bound_area(pixels: np.ndarray, unbounded: np.ndarray) -> np.ndarray:
    """The ``mask_area`` column: pixel counts, NaN for masks on which pycocotools' IoU
    routine may stop counting early (``masks.mask_iou_bound``)."""
    return np.where(unbounded, np.nan, pixels.astype(np.float64))


class _GTColumns(NamedTuple):
    image_ids: np.ndarray
    widths: np.ndarray
    heights: np.ndarray
    file_names: tuple[str, ...]
    category_ids: np.ndarray
    category_names: tuple[str, ...]
    supercategories: tuple[str, ...]
    ann_ids: np.ndarray
    ann_image_ids: np.ndarray
    ann_category_ids: np.ndarray
    xywh: np.ndarray
    areas: np.ndarray       # NaN where a record has none
    iscrowd: np.ndarray     # float
    ignore: np.ndarray      # float


def _build_dataset(c: _GTColumns, name: str, *, note_missing_area: bool = False) -> Dataset:
    """Check the columns against each other and build the Dataset. ``note_missing_area``:
    say in ``Dataset.notes`` when records without ``area`` got their box area (keypoints:
    the area is the OKS scale)."""
    _unique_ids(c.image_ids, name, "images")
    _unique_ids(c.category_ids, name, "categories")
    ann_ids = c.ann_ids
    bad = np.flatnonzero(ann_ids <= 0)
    if len(bad):
        raise FormatError(
            f"annotation id must be > 0; got {int(ann_ids[bad[0]])} (pycocotools treats "
            "id 0 as 'unmatched', so such objects can never be matched: renumber from 1)",
            source=name, record=f"annotations[{bad[0]}]")
    _unique_ids(ann_ids, name, "annotations")

    def where(i):
        return f"annotations[{i}] (id {ann_ids[i]})"

    bad = np.flatnonzero((c.iscrowd != 0) & (c.iscrowd != 1))
    if len(bad):
        raise FormatError(f"'iscrowd' must be 0 or 1; got {c.iscrowd[bad[0]]:g}", source=name,
                          record=where(bad[0]))
    image_index = index_in(c.ann_image_ids, c.image_ids)
    bad = np.flatnonzero(image_index < 0)
    if len(bad):
        raise FormatError(f"image_id {int(c.ann_image_ids[bad[0]])} is not in 'images'",
                          source=name, record=where(bad[0]))
    category_index = index_in(c.ann_category_ids, c.category_ids)
    bad = np.flatnonzero(category_index < 0)
    if len(bad):
        raise FormatError(f"category_id {int(c.ann_category_ids[bad[0]])} is not in "
                          "'categories'", source=name, record=where(bad[0]))
    boxes = _xyxy(c.xywh, name, where)
    # A record without 'area' gets its box area (pycocotools would raise KeyError).
    no_area = np.isnan(c.areas)
    areas = c.areas.copy()
    notes: tuple[str, ...] = ()
    if no_area.any():
        rows = np.flatnonzero(no_area)
        areas[rows] = _box_areas(c.xywh[rows], name, lambda i: where(int(rows[i])))
        if note_missing_area:
            notes = (f"{len(rows)} ground-truth object(s) have no 'area' (the first: "
                     f"{where(int(rows[0]))}): their box area w * h is used as the OKS scale "
                     "(pycocotools raises KeyError on them)",)
    gt = GroundTruth(image_index=image_index, category_index=category_index, boxes=boxes,
                     area=areas, iscrowd=c.iscrowd != 0, ignore=c.ignore != 0, ids=ann_ids,
                     xywh=c.xywh)
    images = Images(ids=c.image_ids, widths=c.widths, heights=c.heights,
                    file_names=c.file_names)
    categories = Categories(ids=c.category_ids, names=c.category_names,
                            supercategories=c.supercategories)
    return Dataset(images=images, categories=categories, gt=gt, source=name, notes=notes)


def _xyxy(xywh: np.ndarray, name: str, where) -> np.ndarray:
    """``[x, y, x + w, y + h]``, refusing boxes whose far corner overflows float64."""
    xywh = xywh.reshape(-1, 4)
    boxes = np.empty(xywh.shape, dtype=xywh.dtype)
    boxes[:, :2] = xywh[:, :2]
    with np.errstate(over="ignore"):
        np.add(xywh[:, :2], xywh[:, 2:], out=boxes[:, 2:])
    if np.isfinite(boxes).all():
        return boxes
    bad = np.flatnonzero(~np.isfinite(boxes).all(axis=1))
    if len(bad):
        raise FormatError(f"box {xywh[bad[0]].tolist()} overflows: x + w or y + h is not a "
                          "finite float64", source=name, record=where(bad[0]))
    return boxes


def _keypoint_columns(values: Sequence[Any], category_index: np.ndarray, dataset: Dataset,
                      labels: Sequence[str], name: str, xywh: np.ndarray | None, *,
                      numbers_checked: bool = False) -> tuple[np.ndarray, ...]:
    """Keypoints ``(n, K, 3)``, boxes and areas of keypoint results, as ``loadRes`` sets them.

    ``xywh`` is given in the box branch (the first result has a box): areas are the boxes'.
    Otherwise box and area are the extent of all K keypoints. ``numbers_checked``: every
    value is known to be a list of floats (the typed decoder's).
    """
    counts = result_keypoint_counts(values, category_index, _gt_keypoint_counts(dataset))
    keypoints = keypoint_array(values, counts, labels, name, numbers_checked=numbers_checked)
    return (keypoints, *_keypoint_boxes(keypoints, labels, name, xywh))


def _gt_keypoint_counts(dataset: Dataset) -> np.ndarray:
    """Per category, the keypoint count K of its ground-truth objects (-1: none)."""
    gt = dataset.gt
    per_category = np.full(len(dataset.categories), -1, dtype=np.int64)
    if gt.keypoints is not None:
        k_of_row = (~np.isnan(gt.keypoints[:, :, 0])).sum(axis=1)
        per_category[gt.category_index] = k_of_row
    return per_category


def _keypoint_boxes(keypoints: np.ndarray, labels: Sequence[str], name: str,
                    xywh: np.ndarray | None, extent: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Boxes and areas of keypoint results ``(n, K, 3)``, as ``loadRes`` sets them: the given
    boxes' (``xywh``, the box branch), else the extent of all K keypoints (``extent``: that
    of :func:`~deteval.keypoints.points_extent`, when already made)."""
    if xywh is not None:
        return xywh, _box_areas(xywh, name, lambda i: labels[i])
    from ...keypoints import points_extent

    # The extent of all K keypoints, those reported at (0, 0) included (loadRes), NaN
    # ignored. Every row has K >= 1 keypoints (keypoint_array refuses empty lists). Rows
    # with a NaN or a zero bound are made again by nanmin / nanmax: which of 0.0 and -0.0
    # a minimum keeps depends on its order of operations.
    bounds = (points_extent(keypoints[:, :, 0], keypoints[:, :, 1]).T if extent is None
              else extent.T.copy())     # (rows of one array: a given extent is not changed)
    x0, x1, y0, y1 = bounds
    redo = np.flatnonzero(np.isnan(x0) | np.isnan(y0) | (x0 == 0) | (x1 == 0) | (y0 == 0)
                          | (y1 == 0))
    if len(redo):   # (rows of the table, so that nanmin reads them with the same strides)
        rows = keypoints[redo]
        for bound, values, nan_bound, start in ((x0, rows[:, :, 0], np.nanmin, np.inf),
                                                (x1, rows[:, :, 0], np.nanmax, -np.inf),
                                                (y0, rows[:, :, 1], np.nanmin, np.inf),
                                                (y1, rows[:, :, 1], np.nanmax, -np.inf)):
            bound[redo] = nan_bound(values, axis=1, initial=start)
    with np.errstate(over="ignore"):
        xywh = np.column_stack([x0, y0, x1 - x0, y1 - y0]).reshape(-1, 4)
        area = xywh[:, 2] * xywh[:, 3]
    bad = np.flatnonzero(~np.isfinite(area))
    if len(bad):
        raise FormatError("the keypoints' extent overflows float64 (coordinates too "
                          "large)", source=name, record=labels[int(bad[0])])
    return xywh, area
