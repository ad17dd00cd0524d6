"""Reading COCO ground truth (instances files): :func:`read_coco_gt`."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np

from ...data import Dataset, index_in
from ...errors import FormatError
from .._json import box_column, gc_paused, load_json, number_column, read_json_bytes, source_name
from .._shapes import (
    check_iou_type,
    keypoint_array,
    keypoint_counts,
    outline_shapes,
    segmentation_masks,
)
from .columns import _bound_area, _build_dataset, _GTColumns, _has_box
from .string_ids import number_string_ids
from .typed import _typed_gt_columns, _typed_keypoint_gt


def typed_segm_gt(raw: bytes, name: str) -> Dataset | None:
    """:func:`deteval.io.coco.typed_segm_gt.typed_segm_gt`, imported on first use: that
    module builds its decoder at import, which box evaluations never need (docs/startup.md
    §2)."""
    from .typed_segm_gt import typed_segm_gt as read

    return read(raw, name)


def _require_list(container: dict, key: str, source: str) -> list:
    if key not in container:
        raise FormatError(f"missing '{key}': a COCO instances file needs 'images', "
                          "'annotations' and 'categories'", source=source)
    value = container[key]
    if not isinstance(value, list):
        raise FormatError(f"'{key}' must be a list; got {type(value).__name__}", source=source)
    return value


def _strings(records: list, key: str, default: str = "") -> tuple[str, ...]:
    return tuple(str(r.get(key, default)) if isinstance(r, dict) else default for r in records)


def read_coco_gt(source: str | os.PathLike | dict, *, iou_type: str = "bbox",
                 invalid: str = "raise") -> Dataset:
    """Read a COCO instances file (or an already-loaded dict) into a :class:`Dataset`.

    Parameters
    ----------
    source : str, PathLike or dict
        Path of an instances JSON file, or its parsed content. A dict is never modified.
    iou_type : {"bbox", "segm", "keypoints", "polygon", "rotated"}
        Which shape to read besides the box: ``"segm"`` reads ``segmentation`` into
        ``gt.masks`` (polygons rasterised at the image size, as pycocotools does);
        ``"keypoints"`` reads ``keypoints`` (K from the category's ``keypoints`` list) and
        ``num_keypoints``; ``"polygon"`` reads ``polygon`` (or a polygon ``segmentation``)
        into ``gt.polygons``; ``"rotated"`` reads ``rbox`` ``[cx, cy, w, h, angle_degrees]``
        into ``gt.rboxes`` and ``gt.polygons``. For all but keypoints a record without
        ``bbox`` gets the tight box of its shape.
    invalid : {"raise", "repair"}
        Self-intersecting polygons (``"polygon"``): an error, or repaired with
        ``shapely.make_valid`` (see :func:`deteval.geometry.polygons_from_coords`).

    Returns
    -------
    Dataset
        Images and categories in file order; objects in file order with boxes converted to
        xyxy, the original xywh kept, ``area`` from the file (the box area ``w * h`` where a
        record has none), ``iscrowd`` (default 0) and the ``ignore`` key (default 0).

    Raises
    ------
    FormatError
        Malformed JSON; a missing ``images``, ``annotations`` or ``categories`` list; a record
        without ``id``; duplicate or non-positive annotation ids (pycocotools uses id 0 as
        "unmatched"); an annotation whose image or category is not in the file; a missing,
        non-numeric, non-finite or negative-size ``bbox``. Each message names the record.
    """
    name = source_name(source)
    check_iou_type(iou_type)
    if iou_type != "bbox":
        raw = None
        if iou_type in ("keypoints", "segm") and isinstance(source, (str, os.PathLike)):
            raw = read_json_bytes(source, what="ground truth")
            with gc_paused():
                dataset = (_typed_keypoint_gt(raw, name) if iou_type == "keypoints" else
                           typed_segm_gt(raw, name))
            if dataset is not None:
                return dataset
        if not isinstance(source, (str, os.PathLike)):
            return _read_gt_with_shapes(source, name, iou_type, invalid)
        # The collector stays paused until the parsed file is freed: it would otherwise walk
        # its objects (hundreds of thousands for polygons), none of which can be garbage
        # (the segm bench's ground truth: 4 collections, ~30 ms).
        with gc_paused():
            data = load_json(source, what="ground truth", raw=raw).data
            dataset = _read_gt_with_shapes(data, name, iou_type, invalid)
            del data
        return dataset
    strings: dict = {}
    if isinstance(source, (str, os.PathLike)):
        raw = read_json_bytes(source, what="ground truth")
        columns = _typed_gt_columns(raw)
        if columns is None:
            data, strings = number_string_ids(load_json(source, what="ground truth",
                                                        raw=raw).data, name)
            columns = _gt_columns(data, name)
    else:
        data, strings = number_string_ids(source, name)
        columns = _gt_columns(data, name)
    dataset = _build_dataset(columns, name)
    return dataclasses.replace(dataset, string_ids=strings) if strings else dataset


def _image_sizes(data: dict, records: list, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Height and width of each record's image (NaN where unknown or the image is absent)."""
    images = _require_list(data, "images", name)
    ids = number_column(images, "id", np.int64, source=name, section="images")
    heights = number_column(images, "height", np.float64, source=name, section="images",
                            default=np.nan)
    widths = number_column(images, "width", np.float64, source=name, section="images",
                           default=np.nan)
    image_ids = number_column(records, "image_id", np.int64, source=name, section="annotations")
    row = index_in(image_ids, ids)
    bad = np.flatnonzero(row < 0)
    if len(bad):    # before the shapes, which need their image's size
        i = int(bad[0])
        raise FormatError(f"image_id {int(image_ids[i])} is not in 'images'", source=name,
                          record=f"annotations[{i}] (id {records[i].get('id')})")
    return heights[row], widths[row]


def _read_gt_with_shapes(data: Any, name: str, iou_type: str, invalid: str) -> Dataset:
    """The ground truth with the shapes ``iou_type`` needs (general path, every record read)."""
    if not isinstance(data, dict):
        raise FormatError("a COCO ground-truth file must hold a JSON object with 'images', "
                          f"'annotations' and 'categories'; got a {type(data).__name__}",
                          source=name)
    data, strings = number_string_ids(data, name)
    records = _require_list(data, "annotations", name)
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise FormatError(f"must be a JSON object; got {type(record).__name__}",
                              source=name, record=f"annotations[{i}]")
    labels = [f"annotations[{i}] (id {r.get('id')})" for i, r in enumerate(records)]
    heights, widths = _image_sizes(data, records, name)
    shapes: dict[str, Any] = {}
    shape_xywh = None
    fill_boxes = False
    if iou_type == "segm":
        from ...masks import mask_xywh

        shapes["masks"], pixels, unbounded = segmentation_masks(records, heights, widths,
                                                                 labels, name)
        # (every mask's box: the match stage's IoU bound reads it, as from the typed path)
        shape_xywh = mask_xywh(shapes["masks"])
        fill_boxes = not all(map(_has_box, records))
    elif iou_type in ("polygon", "rotated"):
        from ...geometry import polygon_bounds

        shapes.update(outline_shapes(records, labels, name, iou_type, invalid=invalid))
        if not all(map(_has_box, records)):
            bounds = polygon_bounds(shapes["polygons"])
            shape_xywh = np.column_stack([bounds[:, :2], bounds[:, 2:] - bounds[:, :2]])
            fill_boxes = True
    if fill_boxes:
        records = [r if _has_box(r) else {**r, "bbox": b}
                   for r, b in zip(records, shape_xywh.tolist())]
        data = {**data, "annotations": records}
    dataset = _build_dataset(_gt_columns(data, name), name,
                             note_missing_area=iou_type == "keypoints")
    gt = dataset.gt
    if iou_type == "keypoints":
        categories = data.get("categories")
        counts = keypoint_counts(records, gt.category_index, categories, labels, name)
        values = [r["keypoints"] for r in records]
        shapes["keypoints"] = keypoint_array(values, counts, labels, name)
        shapes["num_keypoints"] = number_column(
            records, "num_keypoints", np.int64, source=name, section="annotations")
    no_area = np.fromiter(("area" not in r for r in records), bool, len(records))
    if no_area.any() and iou_type != "keypoints":
        # A record without 'area' gets the area of its shape (pycocotools needs the field).
        if iou_type == "segm":
            shape_area = pixels.astype(np.float64)
        else:
            from ...geometry import polygon_area

            shape_area = polygon_area(shapes["polygons"])
        shapes["area"] = np.where(no_area, shape_area, gt.area)
    if iou_type == "segm":
        shapes["mask_area"] = _bound_area(pixels, unbounded)
        shapes["mask_xywh"] = shape_xywh
    gt = gt.replace(**shapes)
    if iou_type == "segm":      # the masks' runs add up to h * w (segmentation_masks)
        from ...masks.rle import mark_run_totals_checked

        mark_run_totals_checked(gt)
    return dataclasses.replace(dataset, gt=gt, string_ids=strings or None)


def _gt_columns(data: Any, name: str) -> _GTColumns:
    """Columns of an instances dict, each value checked, errors naming the record."""
    if not isinstance(data, dict):
        raise FormatError("a COCO ground-truth file must hold a JSON object with 'images', "
                          f"'annotations' and 'categories'; got a {type(data).__name__}",
                          source=name)
    images = _require_list(data, "images", name)
    annotations = _require_list(data, "annotations", name)
    categories = _require_list(data, "categories", name)
    with gc_paused():
        image_ids = number_column(images, "id", np.int64, source=name, section="images")
        category_ids = number_column(categories, "id", np.int64, source=name,
                                     section="categories")
        ann_ids = number_column(annotations, "id", np.int64, source=name,
                                section="annotations")
        return _GTColumns(
            image_ids=image_ids,
            widths=number_column(images, "width", np.float64, source=name, section="images",
                                 default=float("nan")),
            heights=number_column(images, "height", np.float64, source=name,
                                  section="images", default=float("nan")),
            file_names=_strings(images, "file_name"),
            category_ids=category_ids,
            category_names=tuple(str(c["id"] if c.get("name") is None else c["name"])
                                 for c in categories),
            supercategories=_strings(categories, "supercategory"),
            ann_ids=ann_ids,
            ann_image_ids=number_column(annotations, "image_id", np.int64, source=name,
                                        section="annotations"),
            ann_category_ids=number_column(annotations, "category_id", np.int64, source=name,
                                           section="annotations"),
            xywh=box_column(annotations, source=name, section="annotations"),
            areas=number_column(annotations, "area", np.float64, source=name,
                                section="annotations", default=np.nan),
            iscrowd=number_column(annotations, "iscrowd", np.float64, source=name,
                                  section="annotations", default=0, allow_bool=True),
            ignore=number_column(annotations, "ignore", np.float64, source=name,
                                 section="annotations", default=0, allow_bool=True))
