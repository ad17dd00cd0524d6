"""The segm ground-truth reader's fast path: an instances file in the common layout decoded
and type-checked in one pass by msgspec, its columns and polygons checked in bulk.

Every annotation has integer ids, a 4-number ``bbox`` and a ``segmentation`` that is a list
of polygons (lists of numbers) or an RLE dict. The polygons' coordinates go into one flat
array (:class:`~deteval.masks.rasterise.FlatPolygons`), are checked with array operations
and rasterised by pycocotools in calls of bounded cost; the few RLE values go through
:func:`~deteval.masks.masks_from_segmentations`. The Dataset is the general path's
(:func:`deteval.io.coco.gt._read_gt_with_shapes`), field for field. Anything unusual (a
string id, a record without ``bbox``, an empty or odd polygon, a coordinate far outside its
image, an image of unknown size, any refused value) returns None, and the general path reads
the file and words the error. Rules: docs/mask-rasteriser.md.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
from typing import TypedDict

import msgspec
import numpy as np

from ...data import Dataset
from ...errors import FormatError
from .._json import typed_decode
from .columns import _bound_area, _build_dataset
from .typed import _Annotation, _Category, _columns_of_typed, _Image, _Int64, _RecordLabels

__all__ = ["typed_segm_gt"]

_FREE_PIECE = 512


class _GTRLE(TypedDict):
    """An RLE segmentation: ``counts`` compressed (a string) or a list of run lengths."""

    size: list[_Int64]
    counts: str | list[_Int64]


class _SegmAnnotation(_Annotation, gc=False, kw_only=True):
    segmentation: list[list[float]] | _GTRLE


_SEGM_GT_DECODER = msgspec.json.Decoder(msgspec.defstruct(
    "_SegmFile", [("images", list[_Image]), ("annotations", list[_SegmAnnotation]),
                  ("categories", list[_Category])], gc=False))


def typed_segm_gt(raw: bytes, name: str) -> Dataset | None:
    """``read_coco_gt(path, iou_type="segm")`` of an instances file in the common layout,
    or None for the general path to read (and word the error).

    Call it with the collector paused: the parsed lists are freed before it returns.
    """
    data = typed_decode(_SEGM_GT_DECODER, raw)
    if data is None:
        return None
    columns = _columns_of_typed(data)
    if columns is None:
        return None
    segmentations = list(map(operator.attrgetter("segmentation"), data.annotations))
    del data
    try:
        dataset = _build_dataset(columns, name)
        masks = _masks(segmentations, dataset, name)
    except FormatError:
        return None
    if masks is None:
        return None
    while segmentations:    # freed in pieces (~1 ms each: another thread may switch in)
        del segmentations[-_FREE_PIECE:]
    out, pixels, unbounded, xywh = masks
    gt = dataset.gt
    shapes = {"masks": out, "mask_area": _bound_area(pixels, unbounded), "mask_xywh": xywh}
    no_area = np.isnan(columns.areas)
    if no_area.any():       # a record without 'area' gets its mask's pixel count
        shapes["area"] = np.where(no_area, pixels.astype(np.float64), gt.area)
    gt = gt.replace(**shapes)
    from ...masks.rle import mark_run_totals_checked

    mark_run_totals_checked(gt)     # (the runs add up to h * w: checked or rasterised)
    return dataclasses.replace(dataset, gt=gt)


def _masks(segmentations: list, dataset: Dataset, name: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The masks, pixel counts and unbounded flags of the objects (as
    ``masks_from_segmentations(..., with_area=True, with_unbounded=True)``) and their
    boxes (``toBbox``, the ``mask_xywh`` column), or None when a polygon is not one the
    general path would rasterise as it is."""
    from ...masks import mask_xywh, masks_from_segmentations
    from ...masks.rasterise import FlatPolygons
    from ...masks.segmentations import drawable_images, polygon_masks

    gt = dataset.gt
    n = len(segmentations)
    heights = dataset.images.heights[gt.image_index]
    widths = dataset.images.widths[gt.image_index]
    labels = _RecordLabels("annotations", gt.ids)
    is_polygon = np.fromiter((type(s) is list for s in segmentations), bool, n)
    polygon_rows = np.flatnonzero(is_polygon)
    out = np.empty(n, dtype=object)
    pixels = np.zeros(n, dtype=np.int64)
    unbounded = np.zeros(n, dtype=bool)
    rle_rows = np.flatnonzero(~is_polygon)
    if len(rle_rows):
        values = [segmentations[i] for i in rle_rows.tolist()]
        out[rle_rows], pixels[rle_rows], unbounded[rle_rows] = masks_from_segmentations(
            values, heights=heights[rle_rows], widths=widths[rle_rows], source=name,
            records=_Rows(labels, rle_rows), with_area=True, with_unbounded=True)
    if not len(polygon_rows):
        return out, pixels, unbounded, mask_xywh(out)
    polygons = FlatPolygons.of(list(itertools.compress(segmentations, is_polygon)))
    parts = polygons.part_sizes
    h, w = heights[polygon_rows], widths[polygon_rows]
    if not (drawable_images(h, w).all() and polygons.object_parts.all() and (parts >= 4).all()
            and not (parts & 1).any() and np.isfinite(polygons.coords).all()):
        return None     # the general path words the error
    sizes = np.column_stack([h, w]).astype(np.int64)
    out[polygon_rows], pixels[polygon_rows], unbounded[polygon_rows], polygon_xywh = (
        polygon_masks(polygons, sizes, _Rows(labels, polygon_rows), name, with_xywh=True))
    if polygon_xywh is None:     # (the Cython wrappers rasterised: toBbox of every mask)
        return out, pixels, unbounded, mask_xywh(out)
    # The boxes the match stage's IoU bound reads (mask_xywh), measured by the rasteriser
    # before it freed the runs; the few RLE values' by toBbox.
    xywh = np.empty((n, 4), dtype=np.float64)
    xywh[polygon_rows] = polygon_xywh
    if len(rle_rows):
        xywh[rle_rows] = mask_xywh(out[rle_rows])
    return out, pixels, unbounded, xywh


class _Rows:
    """``labels`` of the rows ``rows``: ``_Rows(labels, rows)[j]`` is ``labels[rows[j]]``;
    also callable."""

    def __init__(self, labels: _RecordLabels, rows: np.ndarray):
        self.labels, self.rows = labels, rows

    def __getitem__(self, j: int) -> str:
        return self.labels[int(self.rows[j])]

    __call__ = __getitem__

