"""COCO readers and writers: instances JSON (ground truth) and results files.

The readers validate every record and convert it once into the columnar types of
:mod:`deteval.data`; the original ``[x, y, w, h]`` numbers are kept in ``xywh`` because the
COCO protocol computes with them (``semantics.md`` §2.3).

Results follow pycocotools' ``loadRes``: detection ids are ``1..N`` in input order (the
order that breaks score ties), the detection area is ``w * h``, and a result whose
``category_id`` is not a ground-truth category is kept with ``category_index == -1`` so that
the protocol can drop it and say how many it dropped. Unlike ``loadRes``, an empty results
list is not an error, and a result on an unknown image is reported by its id.

Examples
--------
>>> gt = {"images": [{"id": 1, "width": 64, "height": 48}],
...       "categories": [{"id": 3, "name": "cat"}],
...       "annotations": [{"id": 1, "image_id": 1, "category_id": 3,
...                        "bbox": [4, 4, 10, 20], "area": 200, "iscrowd": 0}]}
>>> dataset = read_coco_gt(gt)
>>> dataset.gt.boxes.tolist()
[[4.0, 4.0, 14.0, 24.0]]
>>> dt = read_coco_results([{"image_id": 1, "category_id": 3, "bbox": [4, 4, 10, 19],
...                          "score": 0.8}], dataset)
>>> dt.area.tolist(), dt.scores.tolist()
([190.0], [0.8])
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import operator
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, NamedTuple, TypedDict

import msgspec
import numpy as np
import orjson

from ..data import Categories, Dataset, Detections, GroundTruth, Images, index_in, owned
from ..errors import FormatError
from ..masks import masks_from_segmentations
from ._json import (
    JSONDocument,
    box_column,
    gc_paused,
    load_json,
    number_column,
    read_bytes,
    source_name,
)
from ._shapes import (
    check_iou_type,
    keypoint_array,
    keypoint_counts,
    keypoint_counts_of,
    outline_shapes,
    result_keypoint_counts,
    segmentation_masks,
)

__all__ = ["read_coco_gt", "read_coco_results", "write_coco_results", "dataset_to_coco"]


def _require_list(container: dict, key: str, source: str) -> list:
    if key not in container:
        raise FormatError(f"missing '{key}': a COCO instances file needs 'images', "
                          "'annotations' and 'categories'", source=source)
    value = container[key]
    if not isinstance(value, list):
        raise FormatError(f"'{key}' must be a list; got {type(value).__name__}", source=source)
    return value


def _unique_ids(ids: np.ndarray, source: str, section: str) -> None:
    if len(np.unique(ids)) != len(ids):
        order = np.argsort(ids, kind="stable")
        dup = np.flatnonzero(ids[order][1:] == ids[order][:-1])[0]
        first, second = sorted((int(order[dup]), int(order[dup + 1])))
        raise FormatError(f"duplicate id {int(ids[second])} (also used by {section}[{first}]); "
                          "ids must be unique", source=source, record=f"{section}[{second}]")


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
        if iou_type == "keypoints" and isinstance(source, (str, os.PathLike)):
            raw = read_bytes(source, what="ground truth")
            with gc_paused():
                dataset = _typed_keypoint_gt(raw, name)
            if dataset is not None:
                return dataset
        data = (load_json(source, what="ground truth", raw=raw).data
                if isinstance(source, (str, os.PathLike)) else source)
        return _read_gt_with_shapes(data, name, iou_type, invalid)
    if isinstance(source, (str, os.PathLike)):
        raw = read_bytes(source, what="ground truth")
        columns = _typed_gt_columns(raw)
        if columns is None:
            columns = _gt_columns(load_json(source, what="ground truth", raw=raw).data, name)
    else:
        columns = _gt_columns(source, name)
    return _build_dataset(columns, name)


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
    found = row >= 0
    return (np.where(found, heights[np.maximum(row, 0)], np.nan),
            np.where(found, widths[np.maximum(row, 0)], np.nan))


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


def _read_gt_with_shapes(data: Any, name: str, iou_type: str, invalid: str) -> Dataset:
    """The ground truth with the shapes ``iou_type`` needs (general path, every record read)."""
    if not isinstance(data, dict):
        raise FormatError("a COCO ground-truth file must hold a JSON object with 'images', "
                          f"'annotations' and 'categories'; got a {type(data).__name__}",
                          source=name)
    records = _require_list(data, "annotations", name)
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise FormatError(f"must be a JSON object; got {type(record).__name__}",
                              source=name, record=f"annotations[{i}]")
    labels = [f"annotations[{i}] (id {r.get('id')})" for i, r in enumerate(records)]
    heights, widths = _image_sizes(data, records, name)
    shapes: dict[str, Any] = {}
    shape_xywh = None
    if iou_type == "segm":
        from ..masks import mask_xywh

        shapes["masks"], pixels, unbounded = segmentation_masks(records, heights, widths,
                                                                 labels, name)
        if not all(map(_has_box, records)):
            shape_xywh = mask_xywh(shapes["masks"])
    elif iou_type in ("polygon", "rotated"):
        from ..geometry import polygon_bounds

        shapes.update(outline_shapes(records, labels, name, iou_type, invalid=invalid))
        if not all(map(_has_box, records)):
            bounds = polygon_bounds(shapes["polygons"])
            shape_xywh = np.column_stack([bounds[:, :2], bounds[:, 2:] - bounds[:, :2]])
    if shape_xywh is not None:
        records = [r if _has_box(r) else {**r, "bbox": b}
                   for r, b in zip(records, shape_xywh.tolist())]
        data = {**data, "annotations": records}
    dataset = _build_dataset(_gt_columns(data, name), name)
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
            from ..geometry import polygon_area

            shape_area = polygon_area(shapes["polygons"])
        shapes["area"] = np.where(no_area, shape_area, gt.area)
    if iou_type == "segm":
        shapes["mask_area"] = _bound_area(pixels, unbounded)
        shapes["mask_xywh"] = shape_xywh
    return dataclasses.replace(dataset, gt=gt.replace(**shapes))


def _bound_area(pixels: np.ndarray, unbounded: np.ndarray) -> np.ndarray:
    """The ``mask_area`` column: pixel counts, NaN for masks on which pycocotools' IoU
    routine may stop counting early (``masks.mask_iou_bound``)."""
    return np.where(unbounded, np.nan, pixels.astype(np.float64))


# Integer fields of the typed decoders: msgspec reads integers up to 2**64 - 1; one that
# does not fit int64 fails validation, and the general path names the record.
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class _Image(msgspec.Struct, gc=False):
    id: _Int64
    width: float = math.nan
    height: float = math.nan
    file_name: str = ""


class _Category(msgspec.Struct, gc=False):
    id: _Int64
    name: str | None = None
    supercategory: str = ""


class _Annotation(msgspec.Struct, gc=False):
    """The fields of an annotation the bbox protocol reads; others (segmentation) are
    skipped by the decoder without building them."""

    id: _Int64
    image_id: _Int64
    category_id: _Int64
    bbox: tuple[float, float, float, float]
    area: float = math.nan
    iscrowd: int | bool = 0
    ignore: float | bool = 0.0


class _InstancesFile(msgspec.Struct, gc=False):
    images: list[_Image]
    annotations: list[_Annotation]
    categories: list[_Category]


_GT_DECODER = msgspec.json.Decoder(_InstancesFile)


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


def _typed_gt_columns(raw: bytes) -> _GTColumns | None:
    """Columns of an instances file decoded and type-checked in one pass, or None.

    Like the typed results decoder: no dict per record, segmentations skipped unparsed;
    any surprise returns None and the general path reads the file and words the error.
    """
    try:
        data = _GT_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return _columns_of_typed(data)


class _KeypointAnnotation(_Annotation, gc=False):
    """An annotation of a person-keypoints file, as the typed decoder reads it."""

    keypoints: list[float] = []
    num_keypoints: _Int64 = -1


class _KeypointCategory(_Category, gc=False):
    keypoints: list[str] | None = None


class _KeypointsFile(msgspec.Struct, gc=False):
    images: list[_Image]
    annotations: list[_KeypointAnnotation]
    categories: list[_KeypointCategory]


_KEYPOINT_GT_DECODER = msgspec.json.Decoder(_KeypointsFile)


def _typed_keypoint_gt(raw: bytes, name: str) -> Dataset | None:
    """A person-keypoints file decoded and type-checked in one pass, or None.

    Every annotation needs ``keypoints`` (numbers) and ``num_keypoints``; anything the
    decoder refuses returns None, and the general path reads the file and words the error.
    Call it with the collector paused: the parsed lists are freed before it returns.
    """
    try:
        data = _KEYPOINT_GT_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    annotations = data.annotations
    if any(a.num_keypoints < 0 or not a.keypoints for a in annotations):
        return None     # a field missing (or empty): the general path names the record
    columns = _columns_of_typed(data)
    if columns is None:
        return None
    dataset = _build_dataset(columns, name)
    values = list(map(operator.attrgetter("keypoints"), annotations))
    num_keypoints = np.fromiter(map(operator.attrgetter("num_keypoints"), annotations),
                                np.int64, len(annotations))
    listed = [len(c.keypoints) if c.keypoints else -1 for c in data.categories]
    del data, annotations
    counts = keypoint_counts_of(values, dataset.gt.category_index, listed)
    keypoints = keypoint_array(values, counts, _RecordLabels("annotations", columns.ann_ids),
                               name, numbers_checked=True)
    del values
    return dataclasses.replace(dataset, gt=dataset.gt.replace(keypoints=keypoints,
                                                              num_keypoints=num_keypoints))


def _columns_of_typed(data: Any) -> _GTColumns | None:
    """The columns of a typed instances file, or None if a box is not finite."""

    def column(records, field, dtype):
        return np.fromiter(map(operator.attrgetter(field), records), dtype, len(records))

    images, anns, cats = data.images, data.annotations, data.categories
    xywh = np.fromiter(itertools.chain.from_iterable(map(operator.attrgetter("bbox"), anns)),
                       np.float64, 4 * len(anns)).reshape(-1, 4)
    if not (np.isfinite(xywh).all() and (xywh[:, 2:] >= 0).all()):
        return None  # the general path names the record
    return _GTColumns(
        image_ids=column(images, "id", np.int64), widths=column(images, "width", np.float64),
        heights=column(images, "height", np.float64),
        file_names=tuple(i.file_name for i in images),
        category_ids=column(cats, "id", np.int64),
        category_names=tuple(str(c.id) if c.name is None else c.name for c in cats),
        supercategories=tuple(c.supercategory for c in cats),
        ann_ids=column(anns, "id", np.int64), ann_image_ids=column(anns, "image_id", np.int64),
        ann_category_ids=column(anns, "category_id", np.int64), xywh=xywh,
        areas=column(anns, "area", np.float64), iscrowd=column(anns, "iscrowd", np.float64),
        ignore=column(anns, "ignore", np.float64))


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


def _build_dataset(c: _GTColumns, name: str) -> Dataset:
    """Check the columns against each other and build the Dataset."""
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
    if no_area.any():
        rows = np.flatnonzero(no_area)
        areas[rows] = _box_areas(c.xywh[rows], name, lambda i: where(int(rows[i])))
    gt = GroundTruth(image_index=image_index, category_index=category_index, boxes=boxes,
                     area=areas, iscrowd=c.iscrowd != 0, ignore=c.ignore != 0, ids=ann_ids,
                     xywh=c.xywh)
    images = Images(ids=c.image_ids, widths=c.widths, heights=c.heights,
                    file_names=c.file_names)
    categories = Categories(ids=c.category_ids, names=c.category_names,
                            supercategories=c.supercategories)
    return Dataset(images=images, categories=categories, gt=gt, source=name)


def _xyxy(xywh: np.ndarray, name: str, where) -> np.ndarray:
    """``[x, y, x + w, y + h]``, refusing boxes whose far corner overflows float64."""
    with np.errstate(over="ignore"):
        boxes = np.column_stack([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]]).reshape(-1, 4)
    if np.isfinite(boxes).all():
        return boxes
    bad = np.flatnonzero(~np.isfinite(boxes).all(axis=1))
    if len(bad):
        raise FormatError(f"box {xywh[bad[0]].tolist()} overflows: x + w or y + h is not a "
                          "finite float64", source=name, record=where(bad[0]))
    return boxes


def _results_from_array(array: np.ndarray, dataset: Dataset, name: str) -> Detections:
    if array.ndim != 2 or array.shape[1] != 7:
        raise FormatError(f"a results array must have shape (N, 7) with columns image_id, x, y, "
                          f"w, h, score, category_id; got {array.shape}", source=name)
    try:
        array = np.asarray(array, dtype=np.float64)
    except (TypeError, ValueError):
        raise FormatError("a results array must hold numbers", source=name) from None
    bad_rows = np.flatnonzero(~np.isfinite(array).all(axis=1))
    if len(bad_rows):
        raise FormatError(f"row must hold finite numbers; got {array[bad_rows[0]].tolist()}",
                          source=name, record=f"row {bad_rows[0]}")
    bad_rows = np.flatnonzero((array[:, 3] < 0) | (array[:, 4] < 0))
    if len(bad_rows):
        raise FormatError(f"box width and height must be >= 0; got {array[bad_rows[0]].tolist()}",
                          source=name, record=f"row {bad_rows[0]}")
    for col, what in ((0, "image_id"), (6, "category_id")):
        bad_rows = np.flatnonzero((array[:, col] != np.round(array[:, col]))
                                  | (np.abs(array[:, col]) >= 2**53))
        if len(bad_rows):
            raise FormatError(f"{what} must be an integer; got {float(array[bad_rows[0], col])!r}",
                              source=name, record=f"row {bad_rows[0]}")
    return _build_detections(array[:, 0].astype(np.int64), array[:, 6].astype(np.int64),
                             array[:, 1:5].copy(), array[:, 5].copy(), dataset, name,
                             lambda i: f"row {i}")


def _build_detections(image_ids, category_ids, xywh, scores, dataset, name, where) -> Detections:
    image_index = index_in(image_ids, dataset.images.ids)
    bad = np.flatnonzero(image_index < 0)
    if len(bad):
        raise FormatError(
            f"image_id {int(image_ids[bad[0]])} is not an image of the ground truth "
            f"({dataset.source or 'dataset'}); {len(bad)} result(s) refer to unknown images",
            source=name, record=where(bad[0]))
    category_index = index_in(category_ids, dataset.categories.ids)
    boxes = _xyxy(xywh, name, where)
    # loadRes: area = w * h, ids 1..N in input order. Every column is this reader's own
    # fresh array: handed over, not copied.
    return Detections(image_index=owned(image_index), category_index=owned(category_index),
                      boxes=owned(boxes), scores=owned(scores),
                      area=owned(_box_areas(xywh, name, where)), xywh=owned(xywh),
                      category_ids=owned(category_ids))


class _Result(msgspec.Struct, gc=False):
    """One record of a COCO results list, as the typed decoder reads it (other keys skipped)."""

    image_id: _Int64
    category_id: _Int64
    bbox: tuple[float, float, float, float]
    score: float


_RESULTS_DECODER = msgspec.json.Decoder(list[_Result])


class _RLE(TypedDict):
    """A compressed RLE, decoded straight into the dict pycocotools' routines take."""

    size: tuple[_Int64, _Int64]
    counts: str


class _SegmResult(msgspec.Struct, gc=False):
    """One segm result in the common layout: a compressed RLE, with or without a box."""

    image_id: _Int64
    category_id: _Int64
    score: float
    segmentation: _RLE
    bbox: tuple[float, float, float, float] | None = None


_SEGM_DECODER = msgspec.json.Decoder(list[_SegmResult])


class _KeypointResult(msgspec.Struct, gc=False):
    """One keypoint result in the common layout."""

    image_id: _Int64
    category_id: _Int64
    score: float
    keypoints: list[float]
    bbox: tuple[float, float, float, float] | None = None
    segmentation: msgspec.Raw = msgspec.Raw()   # only whether there is one (left unparsed)


_KEYPOINTS_DECODER = msgspec.json.Decoder(list[_KeypointResult])


class _RecordLabels:
    """``labels[i]`` names record ``i`` as the general path does, ``"section[i]"`` (with
    ``" (id N)"`` when ``ids`` are given), made only when an error names a record."""

    def __init__(self, section: str, ids: np.ndarray | None = None):
        self.section, self.ids = section, ids

    def __getitem__(self, i: int) -> str:
        label = f"{self.section}[{int(i)}]"
        return label if self.ids is None else f"{label} (id {int(self.ids[i])})"


def _typed_keypoint_results(raw: bytes, dataset: Dataset, name: str) -> Detections | None:
    """Keypoint results in the common layout, decoded and type-checked in one pass, or None.

    Anything unusual (a first record with a box and a later one without, a first record with
    a mask, an unknown image, a non-finite number) returns None and the general path reads
    the file and words the error. Call it with the collector paused: the parsed lists are
    freed before it returns.
    """
    try:
        records = _KEYPOINTS_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    n = len(records)
    if n == 0:
        return None
    box_branch = records[0].bbox is not None
    if not box_branch and records[0].segmentation:
        return None     # loadRes's segm branch: the general path reads the masks
    image_ids = np.fromiter(map(operator.attrgetter("image_id"), records), np.int64, n)
    category_ids = np.fromiter(map(operator.attrgetter("category_id"), records), np.int64, n)
    scores = np.fromiter(map(operator.attrgetter("score"), records), np.float64, n)
    xywh = None
    if box_branch:      # loadRes: every record then needs a box, whose area is the area
        boxes = list(map(operator.attrgetter("bbox"), records))
        if boxes.count(None):
            return None
        xywh = np.fromiter(itertools.chain.from_iterable(boxes), np.float64, 4 * n).reshape(n, 4)
        if not (np.isfinite(xywh).all() and (xywh[:, 2:] >= 0).all()):
            return None
    values = list(map(operator.attrgetter("keypoints"), records))
    del records
    image_index = index_in(image_ids, dataset.images.ids)
    if not np.isfinite(scores).all() or (image_index < 0).any():
        return None
    category_index = index_in(category_ids, dataset.categories.ids)
    labels = _RecordLabels("results")
    keypoints, xywh, area = _keypoint_columns(values, category_index, dataset, labels, name,
                                              xywh, numbers_checked=True)
    del values
    return Detections(image_index=image_index, category_index=category_index,
                      boxes=_xyxy(xywh, name, lambda i: labels[i]), scores=scores, area=area,
                      xywh=xywh, category_ids=category_ids, keypoints=keypoints)


def _typed_segm_results(raw: bytes, dataset: Dataset, name: str) -> Detections | None:
    """Segm results in the common layout, decoded and type-checked in one pass, or None.

    The strings are then checked and measured in bulk (:func:`deteval.masks.compressed_masks`);
    anything unusual (polygons, uncompressed RLE, some records with a box and some without)
    returns None and the general path reads the file.
    """
    from ..masks import compressed_areas

    try:
        records = _SEGM_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    n = len(records)
    has_box = n - list(map(operator.attrgetter("bbox"), records)).count(None)
    if has_box not in (0, n):
        return None
    image_ids = np.fromiter(map(operator.attrgetter("image_id"), records), np.int64, n)
    category_ids = np.fromiter(map(operator.attrgetter("category_id"), records), np.int64, n)
    scores = np.fromiter(map(operator.attrgetter("score"), records), np.float64, n)
    # The RLE dicts themselves become the masks: counts stay str, as pycocotools takes them.
    masks = np.empty(n, dtype=object)
    masks[:] = list(map(operator.attrgetter("segmentation"), records))
    sizes = np.fromiter(itertools.chain.from_iterable(
        map(operator.itemgetter("size"), masks)), np.int64, 2 * n).reshape(n, 2)
    strings = list(map(operator.itemgetter("counts"), masks))
    if not np.isfinite(scores).all() or (sizes < 0).any():
        return None
    xywh = None
    if has_box:
        xywh = np.fromiter(itertools.chain.from_iterable(
            map(operator.attrgetter("bbox"), records)), np.float64, 4 * n).reshape(n, 4)
        if not (np.isfinite(xywh).all() and (xywh[:, 2:] >= 0).all()):
            return None
    del records
    image_index = index_in(image_ids, dataset.images.ids)
    if (image_index < 0).any():
        return None     # the general path words the error
    heights = dataset.images.heights[image_index]
    widths = dataset.images.widths[image_index]
    known = np.isfinite(heights) & np.isfinite(widths)
    if (known & ((sizes[:, 0] != np.nan_to_num(heights))
                 | (sizes[:, 1] != np.nan_to_num(widths)))).any():
        return None
    labels = lambda i: f"results[{i}]"  # noqa: E731
    mask_boxes = None
    if xywh is None:    # loadRes: toBbox's box, and the mask's pixel count as area
        pixels, xywh, unbounded = compressed_areas(strings, sizes, source=name, labels=labels,
                                                    boxes=True, unbounded=True)
        mask_boxes = xywh
        area = pixels.astype(np.float64)
    else:
        # loadRes: a result with a box gets the box area
        pixels, unbounded = compressed_areas(strings, sizes, source=name, labels=labels,
                                              unbounded=True)
        area = _box_areas(xywh, name, labels)
    return Detections(image_index=image_index,
                      category_index=index_in(category_ids, dataset.categories.ids),
                      boxes=_xyxy(xywh, name, lambda i: f"results[{i}]"), scores=scores,
                      area=area, xywh=xywh, category_ids=category_ids, masks=masks,
                      mask_area=_bound_area(pixels, unbounded), mask_xywh=mask_boxes)


def _typed_results_columns(raw: bytes):
    """Columns of a results file in the common layout, decoded and type-checked in one pass.

    msgspec checks every value against :class:`_Result` while parsing (no strings, booleans
    or nulls; integer ids; 4-number boxes) and creates no dict per record. Anything else
    (another layout, or any error) returns None, and the general path reads the file and
    words the error.
    """
    try:
        records = _RESULTS_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    n = len(records)
    image_ids = np.fromiter(map(operator.attrgetter("image_id"), records), np.int64, n)
    category_ids = np.fromiter(map(operator.attrgetter("category_id"), records), np.int64, n)
    scores = np.fromiter(map(operator.attrgetter("score"), records), np.float64, n)
    xywh = np.fromiter(itertools.chain.from_iterable(map(operator.attrgetter("bbox"), records)),
                       np.float64, 4 * n).reshape(n, 4)
    if not (np.isfinite(scores).all() and np.isfinite(xywh).all() and (xywh[:, 2:] >= 0).all()):
        return None
    return image_ids, category_ids, scores, xywh


def _results_columns(source: Any, name: str, document: JSONDocument | None):
    """The id, score and box columns of a results list (or ``{"annotations": [...]}``)."""
    section = "results"
    if isinstance(source, dict):
        if "annotations" not in source:
            hint = (" (this looks like a ground-truth file: are GT and DT swapped?)"
                    if "images" in source and "categories" in source else "")
            raise FormatError("results must be a list of detections or an object with an "
                              f"'annotations' list{hint}", source=name)
        source, section = source["annotations"], "annotations"
    if not isinstance(source, (list, tuple)):
        raise FormatError(f"{'results' if section == 'results' else repr(section)} must be a "
                          f"list of detections; got {type(source).__name__}", source=name)
    if source and isinstance(source[0], dict) and "score" not in source[0] and (
            "iscrowd" in source[0] or "area" in source[0]):
        raise FormatError("missing 'score': this looks like ground-truth annotations, not "
                          "detections (are GT and DT swapped?)", source=name,
                          record=f"{section}[0]")
    check = not (document is not None and section == "results"
                 and document.values_are_plain(source))
    image_ids = number_column(source, "image_id", np.int64, source=name, section=section,
                              check_types=check)
    category_ids = number_column(source, "category_id", np.int64, source=name,
                                 section=section, check_types=check)
    scores = number_column(source, "score", np.float64, source=name, section=section,
                           check_types=check)
    xywh = box_column(source, source=name, section=section, check_types=check).reshape(-1, 4)
    return image_ids, category_ids, scores, xywh, section


def read_coco_results(source: Any, dataset: Dataset, *, iou_type: str = "bbox",
                      invalid: str = "raise") -> Detections:
    """Read COCO detection results for ``dataset``, as pycocotools' ``loadRes`` does.

    Parameters
    ----------
    source : str, PathLike, list of dict, dict or ndarray
        A results JSON file; its content as a list of ``{"image_id", "category_id", "bbox",
        "score"}`` records or a dict with such a list under ``"annotations"``; or an
        ``(N, 7)`` array of rows ``[image_id, x, y, w, h, score, category_id]``. Never
        modified.
    dataset : Dataset
        The ground truth the results refer to.
    iou_type : {"bbox", "segm", "keypoints", "polygon", "rotated"}
        Which shape to read besides the box (``segmentation`` as compressed RLE or polygons,
        ``keypoints``, ``polygon``, ``rbox``). The area follows ``loadRes``: if the *first*
        result has a non-empty ``bbox``, every result's area is its box's ``w * h`` (so segm
        results carrying a box get a box area, a pycocotools quirk kept on purpose);
        otherwise the mask's pixel count (segm), the extent of all K keypoints (keypoints), or
        the polygon's area (polygon, rotated). A box missing from a record (or ``[]``, which
        ``loadRes`` also takes for none) is the shape's tight box; outside the box branch a
        keypoint result's box is always its keypoints' extent, as ``loadRes`` sets it.
    invalid : {"raise", "repair"}
        Self-intersecting polygons: an error, or repaired (``shapely.make_valid``).

    Returns
    -------
    Detections
        In input order, with ids ``1..N``, boxes in xyxy, ``xywh`` kept, ``area = w * h``.
        Results whose category is not a ground-truth category have ``category_index == -1``.
        An empty list gives empty detections.

    Raises
    ------
    FormatError
        Malformed JSON, a record that is not an object, a missing or non-numeric field, a
        box that is not 4 finite numbers with ``w, h >= 0``, a non-finite score, or an
        ``image_id`` that is not in the ground truth; each names the record.
    """
    name = source_name(source)
    if check_iou_type(iou_type) != "bbox":
        if isinstance(source, (str, os.PathLike)):
            raw = read_bytes(source, what="results")
            typed = {"segm": _typed_segm_results,
                     "keypoints": _typed_keypoint_results}.get(iou_type)
            if typed is not None:
                with gc_paused():
                    detections = typed(raw, dataset, name)
                if detections is not None:
                    return detections
            source = load_json(source, what="results", raw=raw).data
        if isinstance(source, dict) and isinstance(source.get("annotations"), list):
            return _results_with_shapes(source["annotations"], dataset, name, iou_type,
                                        invalid, "annotations")
        if not isinstance(source, (list, tuple)):
            raise FormatError(f"iou_type {iou_type!r} needs a list of result records; got "
                              f"{type(source).__name__}", source=name)
        return _results_with_shapes(source, dataset, name, iou_type, invalid, "results")
    # The collector stays paused until the parsed objects are freed: it would otherwise
    # walk millions of them, none of which can be garbage.
    with gc_paused():
        document = None
        if isinstance(source, (str, os.PathLike)):
            raw = read_bytes(source, what="results")
            columns = _typed_results_columns(raw)
            if columns is not None:
                image_ids, category_ids, scores, xywh = columns
                return _build_detections(image_ids, category_ids, xywh, scores, dataset, name,
                                         lambda i: f"results[{i}]")
            document = load_json(source, what="results", raw=raw)
            source = document.data
        if isinstance(source, np.ndarray):
            return _results_from_array(source, dataset, name)
        columns = _results_columns(source, name, document)
        del source, document
    image_ids, category_ids, scores, xywh, section = columns
    return _build_detections(image_ids, category_ids, xywh, scores, dataset, name,
                             lambda i: f"{section}[{i}]")


def _results_with_shapes(records: Sequence[Any], dataset: Dataset, name: str, iou_type: str,
                         invalid: str, section: str) -> Detections:
    """Results with masks, keypoints, polygons or rotated boxes, areas as ``loadRes`` sets."""
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise FormatError(f"must be a JSON object; got {type(record).__name__}",
                              source=name, record=f"{section}[{i}]")
    labels = [f"{section}[{i}]" for i in range(len(records))]
    image_ids = number_column(records, "image_id", np.int64, source=name, section=section)
    category_ids = number_column(records, "category_id", np.int64, source=name,
                                 section=section)
    scores = number_column(records, "score", np.float64, source=name, section=section)
    image_index = index_in(image_ids, dataset.images.ids)
    bad = np.flatnonzero(image_index < 0)
    if len(bad):
        raise FormatError(
            f"image_id {int(image_ids[bad[0]])} is not an image of the ground truth "
            f"({dataset.source or 'dataset'}); {len(bad)} result(s) refer to unknown images",
            source=name, record=labels[bad[0]])
    category_index = index_in(category_ids, dataset.categories.ids)
    heights = dataset.images.heights[image_index]
    widths = dataset.images.widths[image_index]
    # loadRes decides from the first record: a non-empty 'bbox' makes every area w * h, and
    # every record must then have a box. Otherwise the areas are the shapes', and a record's
    # own box (where it gives one; 'bbox': [] is none) is kept only to be shown.
    box_branch = bool(records) and _has_box(records[0])
    given = np.fromiter(map(_has_box, records), bool, len(records))
    xywh = None
    if box_branch:
        xywh = box_column(records, source=name, section=section).reshape(-1, 4)
    elif given.any() and iou_type != "keypoints":  # loadRes replaces a keypoint result's box
        placeholder = {"bbox": [0.0, 0.0, 0.0, 0.0]}
        xywh = box_column([r if g else placeholder for r, g in zip(records, given)],
                          source=name, section=section).reshape(-1, 4)
    shapes: dict[str, Any] = {}
    if iou_type == "segm":
        from ..masks import mask_xywh

        values = []
        for i, record in enumerate(records):
            if "segmentation" in record:
                values.append(record["segmentation"])
            elif box_branch:   # loadRes gives a box result its box as a polygon
                if not (math.isfinite(heights[i]) and math.isfinite(widths[i])):
                    raise FormatError("a result without 'segmentation' is rasterised from its "
                                      "'bbox' (as pycocotools' loadRes does), which needs its "
                                      "image's 'height' and 'width'; the ground truth does not "
                                      "give them", source=name, record=labels[i])
                x, y, w, h = xywh[i].tolist()
                values.append([[x, y, x, y + h, x + w, y + h, x + w, y]])
            else:
                raise FormatError("missing 'segmentation' (iou_type 'segm' needs a mask, "
                                  "as compressed RLE)", source=name, record=labels[i])
        shapes["masks"], pixels, unbounded = masks_from_segmentations(
            values, heights=heights, widths=widths, source=name, records=labels,
            with_area=True, with_unbounded=True)
        shapes["mask_area"] = _bound_area(pixels, unbounded)
        if not box_branch:
            shapes["mask_xywh"] = mask_xywh(shapes["masks"])
            xywh = _own_or_shape_boxes(xywh, given, shapes["mask_xywh"])
        area = (_box_areas(xywh, name, lambda i: labels[i]) if box_branch
                else pixels.astype(np.float64))
    elif iou_type == "keypoints":
        values = []
        for i, record in enumerate(records):
            if "keypoints" not in record:
                raise FormatError("missing 'keypoints' (iou_type 'keypoints' needs x, y, v "
                                  "triplets)", source=name, record=labels[i])
            values.append(record["keypoints"])
        own_xywh = xywh
        shapes["keypoints"], xywh, area = _keypoint_columns(
            values, category_index, dataset, labels, name, xywh if box_branch else None)
        if not box_branch and records and "segmentation" in records[0]:
            # loadRes takes its segm branch before the keypoints one: every result's area
            # is its mask's pixel count, and its box the mask's unless it gives one.
            if given.any():
                placeholder = {"bbox": [0.0, 0.0, 0.0, 0.0]}
                own_xywh = box_column([r if g else placeholder for r, g in zip(records, given)],
                                      source=name, section=section).reshape(-1, 4)
            xywh, area = _mask_areas_and_boxes(records, heights, widths, labels, name,
                                               own_xywh, given)
    else:
        from ..geometry import polygon_area, polygon_bounds

        shapes.update(outline_shapes(records, labels, name, iou_type, invalid=invalid))
        if not box_branch:
            bounds = polygon_bounds(shapes["polygons"])
            xywh = _own_or_shape_boxes(
                xywh, given, np.column_stack([bounds[:, :2], bounds[:, 2:] - bounds[:, :2]]))
        area = (_box_areas(xywh, name, lambda i: labels[i]) if box_branch
                else polygon_area(shapes["polygons"]).astype(np.float64))
    boxes = _xyxy(xywh, name, lambda i: labels[i])
    return Detections(image_index=image_index, category_index=category_index, boxes=boxes,
                      scores=scores, area=area, xywh=xywh, category_ids=category_ids, **shapes)


def _mask_areas_and_boxes(records: Sequence[dict], heights: np.ndarray, widths: np.ndarray,
                          labels: Sequence[str], name: str, own_xywh: np.ndarray | None,
                          given: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boxes and areas of results in loadRes's segm branch (every record needs a mask)."""
    from ..masks import mask_xywh

    values = []
    for i, record in enumerate(records):
        if "segmentation" not in record:
            raise FormatError("missing 'segmentation': the first result has one (and no "
                              "'bbox'), so, as in pycocotools' loadRes, every result's area "
                              "is its mask's", source=name, record=labels[i])
        values.append(record["segmentation"])
    # loadRes takes any RLE's area, whatever its size (the keypoint protocol never compares
    # masks): no size check here.
    masks, pixels = masks_from_segmentations(values, heights=heights, widths=widths,
                                             source=name, records=labels, with_area=True,
                                             check_size=False)
    xywh = _own_or_shape_boxes(own_xywh, given, mask_xywh(masks))
    return xywh, pixels.astype(np.float64)


def _keypoint_columns(values: Sequence[Any], category_index: np.ndarray, dataset: Dataset,
                      labels: Sequence[str], name: str, xywh: np.ndarray | None, *,
                      numbers_checked: bool = False) -> tuple[np.ndarray, ...]:
    """Keypoints ``(n, K, 3)``, boxes and areas of keypoint results, as ``loadRes`` sets them.

    ``xywh`` is given in the box branch (the first result has a box): areas are the boxes'.
    Otherwise box and area are the extent of all K keypoints. ``numbers_checked``: every
    value is known to be a list of floats (the typed decoder's).
    """
    gt = dataset.gt
    per_category = np.full(len(dataset.categories), -1, dtype=np.int64)
    if gt.keypoints is not None:
        k_of_row = (~np.isnan(gt.keypoints[:, :, 0])).sum(axis=1)
        per_category[gt.category_index] = k_of_row
    counts = result_keypoint_counts(values, category_index, per_category)
    keypoints = keypoint_array(values, counts, labels, name, numbers_checked=numbers_checked)
    if xywh is not None:
        return keypoints, xywh, _box_areas(xywh, name, lambda i: labels[i])
    # The extent of all K keypoints, those reported at (0, 0) included (loadRes). Every row
    # has K >= 1 keypoints (keypoint_array refuses empty lists).
    with np.errstate(over="ignore"):
        x0 = np.nanmin(keypoints[:, :, 0], axis=1, initial=np.inf)
        x1 = np.nanmax(keypoints[:, :, 0], axis=1, initial=-np.inf)
        y0 = np.nanmin(keypoints[:, :, 1], axis=1, initial=np.inf)
        y1 = np.nanmax(keypoints[:, :, 1], axis=1, initial=-np.inf)
        xywh = np.column_stack([x0, y0, x1 - x0, y1 - y0]).reshape(-1, 4)
        area = xywh[:, 2] * xywh[:, 3]
    bad = np.flatnonzero(~np.isfinite(area))
    if len(bad):
        raise FormatError("the keypoints' extent overflows float64 (coordinates too "
                          "large)", source=name, record=labels[int(bad[0])])
    return keypoints, xywh, area


def _own_or_shape_boxes(own: np.ndarray | None, given: np.ndarray,
                        shape: np.ndarray) -> np.ndarray:
    """Each record's own box where it gave one, else the tight box of its shape."""
    shape = np.asarray(shape, dtype=np.float64).reshape(-1, 4)
    return shape if own is None else np.where(given[:, None], own, shape)


def write_coco_results(detections: Detections, dataset: Dataset,
                       path: str | os.PathLike) -> int:
    """Write detections as a COCO results JSON list.

    Parameters
    ----------
    detections : Detections
    dataset : Dataset
        Gives the image and category ids the indices point to.
    path : str or PathLike

    Returns
    -------
    int
        Number of records written. Detections with ``category_index == -1`` (category not in
        the ground truth) have no category id to write and are skipped.
    """
    keep = detections.category_index >= 0
    xywh = detections.as_xywh()[keep]
    records = [
        {"image_id": int(i), "category_id": int(c), "bbox": b, "score": float(s)}
        for i, c, b, s in zip(dataset.images.ids[detections.image_index[keep]],
                              dataset.categories.ids[detections.category_index[keep]],
                              xywh.tolist(), detections.scores[keep])
    ]
    Path(path).write_bytes(orjson.dumps(records))
    return len(records)


def _polygon_parts(polys: np.ndarray) -> tuple[list[list[list[float]]], int]:
    """Each geometry as COCO polygon parts (outer rings, closing point dropped), and how many
    geometries had holes, which COCO polygons cannot hold."""
    import shapely

    out: list[list[list[float]]] = [[] for _ in range(len(polys))]
    if not len(polys):
        return out, 0
    parts, owner = shapely.get_parts(polys, return_index=True)
    keep = ~shapely.is_empty(parts)
    parts, owner = parts[keep], owner[keep]
    with_holes = len(np.unique(owner[shapely.get_num_interior_rings(parts) > 0]))
    coords, ring = shapely.get_coordinates(shapely.get_exterior_ring(parts), return_index=True)
    ends = np.searchsorted(ring, np.arange(len(parts)), side="right")
    starts = np.r_[0, ends[:-1]]
    flat = coords.tolist()
    for k, (lo, hi) in enumerate(zip(starts.tolist(), ends.tolist())):
        out[int(owner[k])].append(list(itertools.chain.from_iterable(flat[lo:hi - 1])))
    return out, with_holes


def _shape_fields(gt: GroundTruth) -> list[dict]:
    """The shapes a ground truth carries, as COCO annotation fields, one dict per object:
    masks as compressed-RLE ``segmentation``, polygons as polygon ``segmentation`` (or as
    ``polygon`` beside masks), rotated boxes as ``rbox``, keypoints as ``keypoints`` and
    ``num_keypoints``."""
    import warnings

    from ..errors import FormatWarning

    fields: list[dict] = [{} for _ in range(len(gt))]
    if gt.masks is not None:
        for row, mask in zip(fields, gt.masks):
            counts = mask["counts"]
            row["segmentation"] = {"size": list(mask["size"]), "counts": counts.decode("ascii")
                                   if isinstance(counts, bytes) else counts}
    if gt.polygons is not None:
        parts, with_holes = _polygon_parts(gt.polygons)
        if with_holes:
            warnings.warn(f"{with_holes} polygon(s) have holes, which COCO polygons cannot "
                          "hold: only their outer outlines were written", FormatWarning,
                          stacklevel=3)
        key = "polygon" if gt.masks is not None else "segmentation"
        for row, value in zip(fields, parts):
            if value:
                row[key] = value
    if gt.rboxes is not None:
        for row, rbox in zip(fields, gt.rboxes.tolist()):
            row["rbox"] = rbox
    if gt.keypoints is not None:
        known = ~np.isnan(gt.keypoints[:, :, 0])
        for row, points, mask in zip(fields, gt.keypoints.tolist(), known.tolist()):
            row["keypoints"] = [v for point, ok in zip(points, mask) if ok for v in point]
    if gt.num_keypoints is not None:
        for row, count in zip(fields, gt.num_keypoints.tolist()):
            row["num_keypoints"] = count
    return fields


def dataset_to_coco(dataset: Dataset) -> dict:
    """The dataset as a COCO instances dict (boxes in xywh, the original numbers if kept).

    Shapes are written too: masks as compressed-RLE ``segmentation``; polygons (DOTA
    quadrilaterals, say) as polygon ``segmentation`` (as ``polygon`` when masks are written
    too), outer outlines only, with a :class:`~deteval.errors.FormatWarning` for polygons
    with holes; rotated boxes as ``rbox``; keypoints as ``keypoints`` and ``num_keypoints``.
    So the file reads back with :func:`read_coco_gt` and the matching ``iou_type``.

    Examples
    --------
    >>> from deteval.geometry import polygons_from_coords
    >>> gt = GroundTruth(image_index=[0], category_index=[0], boxes=[[0, 0, 4, 2]],
    ...                  polygons=polygons_from_coords([[0, 0, 4, 0, 4, 2]]))
    >>> ds = Dataset(Images(ids=[1]), Categories(ids=[1]), gt)
    >>> dataset_to_coco(ds)["annotations"][0]["segmentation"]
    [[0.0, 0.0, 4.0, 0.0, 4.0, 2.0]]
    """
    images = [{"id": int(i), "file_name": f, **({"width": w} if np.isfinite(w) else {}),
               **({"height": h} if np.isfinite(h) else {})}
              for i, f, w, h in zip(dataset.images.ids, dataset.images.file_names,
                                    dataset.images.widths.tolist(),
                                    dataset.images.heights.tolist())]
    categories = [{"id": int(i), "name": n, "supercategory": s}
                  for i, n, s in zip(dataset.categories.ids, dataset.categories.names,
                                     dataset.categories.supercategories)]
    gt = dataset.gt
    annotations = [{"id": int(a), "image_id": int(i), "category_id": int(c), "bbox": b,
                    "area": float(ar), "iscrowd": int(cr), **({"ignore": 1} if ig else {}),
                    **shapes}
                   for a, i, c, b, ar, cr, ig, shapes in zip(
                       gt.ids, dataset.images.ids[gt.image_index],
                       dataset.categories.ids[gt.category_index],
                       gt.as_xywh().tolist(), gt.area, gt.iscrowd, gt.ignore,
                       _shape_fields(gt))]
    return {"images": images, "annotations": annotations, "categories": categories}
