"""The COCO readers' fast path: files in the common layout decoded and type-checked
in one pass by msgspec (no dict per record). Each function returns None on anything
unusual, and the general path (:mod:`.gt`, :mod:`.results`) reads the file and words the
error."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import operator
from typing import Annotated, Any, TypedDict

import msgspec
import numpy as np

from ...data import Dataset, Detections, index_in, owned
from .._json import array_pieces, typed_decode
from .._shapes import keypoint_array, keypoint_counts_of
from .columns import (
    _bound_area,
    _box_areas,
    _build_dataset,
    _gt_keypoint_counts,
    _GTColumns,
    _keypoint_boxes,
    _keypoint_columns,
    _xyxy,
)

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


@functools.cache
def _decoder(kind: Any) -> msgspec.json.Decoder:
    """The msgspec decoder of ``kind``, made on first use: the keypoint and segm files'
    decoders are not built by a box evaluation's import (~1 M instructions each,
    docs/startup.md §2). Two threads that first ask at once may each build one."""
    return msgspec.json.Decoder(kind)


def _typed_gt_columns(raw: bytes) -> _GTColumns | None:
    """Columns of an instances file decoded and type-checked in one pass, or None.

    Like the typed results decoder: no dict per record, segmentations skipped unparsed;
    any surprise returns None and the general path reads the file and words the error.
    """
    data = typed_decode(_GT_DECODER, raw)
    if data is None:
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




class _RawKeypointAnnotation(_Annotation, gc=False):
    """An annotation of a person-keypoints file with its keypoints left as JSON text."""

    keypoints: msgspec.Raw = msgspec.Raw()
    num_keypoints: _Int64 = -1


class _RawKeypointsFile(msgspec.Struct, gc=False):
    images: list[_Image]
    annotations: list[_RawKeypointAnnotation]
    categories: list[_KeypointCategory]




def _typed_keypoint_gt(raw: bytes, name: str) -> Dataset | None:
    """A person-keypoints file decoded and type-checked in one pass, or None.

    Every annotation needs ``keypoints`` (numbers) and ``num_keypoints``; anything the
    decoder refuses returns None, and the general path reads the file and words the error.
    The keypoints are first left as text by msgspec and read by the numpy reader
    (:func:`~deteval.io._numeric_keypoints.numeric_keypoint_lists`: no Python float per
    number) when every object has the same 3K numbers, its category's K; otherwise (or when
    that reader refuses them) msgspec decodes the file again with them as lists. Call it
    with the collector paused: the parsed lists are freed before it returns.
    """
    from .._numeric_keypoints import LIST_THREADS, numeric_keypoint_lists

    data = typed_decode(_decoder(_RawKeypointsFile), raw)
    if data is None:
        return None
    annotations = data.annotations
    n = len(annotations)
    num_keypoints = np.fromiter(map(operator.attrgetter("num_keypoints"), annotations),
                                np.int64, n)
    texts = list(map(operator.attrgetter("keypoints"), annotations))
    if (num_keypoints < 0).any() or not all(texts):
        return None     # a field missing: the general path names the record
    columns = _columns_of_typed(data)
    if columns is None:
        return None
    listed = np.array([len(c.keypoints) if c.keypoints else -1 for c in data.categories] or
                      [-1], dtype=np.int64)
    del data, annotations
    keypoints = numeric_keypoint_lists(texts, threads=LIST_THREADS.get())
    del texts
    if keypoints is None:
        return _listed_keypoint_gt(raw, name)
    dataset = _build_dataset(columns, name, note_missing_area=True)
    # keypoint_counts_of: each object's K is its category's listed count, else the most
    # common length (here every object's): it must be the numbers' K for every object.
    category = dataset.gt.category_index
    k_listed = listed.take(category[category >= 0])
    if ((k_listed > 0) & (k_listed != keypoints.shape[1])).any():
        return _listed_keypoint_gt(raw, name)
    return dataclasses.replace(dataset, gt=dataset.gt.replace(keypoints=owned(keypoints),
                                                              num_keypoints=num_keypoints))


def _listed_keypoint_gt(raw: bytes, name: str) -> Dataset | None:
    """:func:`_typed_keypoint_gt` with the keypoints decoded by msgspec as lists of floats
    (objects of several keypoint counts, or keypoints the numpy reader refuses)."""
    data = typed_decode(_decoder(_KeypointsFile), raw)
    if data is None:
        return None
    annotations = data.annotations
    if any(a.num_keypoints < 0 or not a.keypoints for a in annotations):
        return None     # a field missing (or empty): the general path names the record
    columns = _columns_of_typed(data)
    if columns is None:
        return None
    dataset = _build_dataset(columns, name, note_missing_area=True)
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




class _KeypointResult(msgspec.Struct, gc=False):
    """One keypoint result in the common layout."""

    image_id: _Int64
    category_id: _Int64
    score: float
    keypoints: list[float]
    bbox: tuple[float, float, float, float] | None = None
    segmentation: msgspec.Raw = msgspec.Raw()   # only whether there is one (left unparsed)




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
    records = typed_decode(_decoder(list[_KeypointResult]), raw)
    if records is None:
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
    return _keypoint_detections(image_index, category_index, category_ids, scores, keypoints,
                                xywh, area, name, labels)


def _keypoint_detections(image_index, category_index, category_ids, scores, keypoints, xywh,
                         area, name, labels) -> Detections:
    return Detections(image_index=image_index, category_index=category_index,
                      boxes=_xyxy(xywh, name, lambda i: labels[i]), scores=scores, area=area,
                      xywh=xywh, category_ids=category_ids, keypoints=owned(keypoints))


def _numeric_keypoint_results(raw: bytes, dataset: Dataset, name: str,
                              threads: int | None) -> Detections | None:
    """Keypoint results of one fixed record shape read by the numpy reader
    (:func:`~deteval.io._numeric_keypoints.numeric_keypoint_results`), or None.

    What the msgspec path would return for the same text, bit for bit; anything it would
    not return as is (an unknown image, a result whose keypoint count is not its category's)
    returns None, and the msgspec path then reads the file (and the general path words the
    error)."""
    from .._numeric_keypoints import numeric_keypoint_results

    columns = numeric_keypoint_results(raw, threads=threads)
    return None if columns is None else keypoint_detections_of(columns, dataset, name)


def keypoint_detections_of(columns: Any, dataset: Dataset, name: str) -> Detections | None:
    """:func:`_numeric_keypoint_results` given the reader's columns
    (:class:`~deteval.io._numeric_keypoints.KeypointColumns`, read before the ground truth
    was known: :func:`deteval._inputs.load_pair`)."""
    image_index = index_in(columns.image_ids, dataset.images.ids)
    if (image_index < 0).any():
        return None
    category_index = index_in(columns.category_ids, dataset.categories.ids)
    # Each result's K is its category's in the ground truth, else its own (every record's
    # here): result_keypoint_counts, which must be the file's K for every result.
    per_category = _gt_keypoint_counts(dataset)
    known = (category_index >= 0) & (category_index < len(per_category))
    category_k = np.where(known, per_category[np.where(known, category_index, 0)], -1)
    k = columns.keypoints.shape[1]
    if not ((category_k <= 0) | (category_k == k)).all():
        return None
    labels = _RecordLabels("results")
    xywh, area = _keypoint_boxes(columns.keypoints, labels, name, columns.xywh,
                                 columns.extent)
    detections = _keypoint_detections(image_index, category_index, columns.category_ids,
                                      columns.scores, columns.keypoints, xywh, area, name,
                                      labels)
    if columns.extent is not None and detections.keypoints is columns.keypoints:
        from ...keypoints import share_extent

        share_extent(detections.keypoints, columns.extent)   # (the OKS bound reads it)
    return detections


def _typed_segm_results(raw: bytes, dataset: Dataset, name: str) -> Detections | None:
    """Segm results in the common layout, decoded and type-checked in one pass, or None.

    The strings are then checked and measured in bulk (:func:`deteval.masks.compressed_masks`);
    anything unusual (polygons, uncompressed RLE, some records with a box and some without)
    returns None and the general path reads the file.
    """
    from ...masks import compressed_areas

    records = typed_decode(_decoder(list[_SegmResult]), raw)
    if records is None:
        return None
    n = len(records)
    has_box = n - list(map(operator.attrgetter("bbox"), records)).count(None)
    if has_box not in (0, n):
        return None
    image_ids = np.fromiter(map(operator.attrgetter("image_id"), records), np.int64, n)
    category_ids = np.fromiter(map(operator.attrgetter("category_id"), records), np.int64, n)
    scores = np.fromiter(map(operator.attrgetter("score"), records), np.float64, n)
    # The RLE dicts themselves become the masks: counts stay str, as pycocotools takes them.
    # (read from the list: iterating an object array costs several times more per item;
    # and the array made by fromiter: `masks[:] = rles` looks into every dict, ~8x slower)
    rles = list(map(operator.attrgetter("segmentation"), records))
    masks = np.fromiter(rles, dtype=object, count=n)
    sizes = np.fromiter(itertools.chain.from_iterable(
        map(operator.itemgetter("size"), rles)), np.int64, 2 * n).reshape(n, 2)
    strings = list(map(operator.itemgetter("counts"), rles))
    del rles
    if not np.isfinite(scores).all() or (sizes < 0).any():
        return None
    xywh = None
    if has_box:
        xywh = np.fromiter(itertools.chain.from_iterable(
            map(operator.attrgetter("bbox"), records)), np.float64, 4 * n).reshape(n, 4)
        if not (np.isfinite(xywh).all() and (xywh[:, 2:] >= 0).all()):
            return None
    del records
    image_index = _segm_image_rows(image_ids, sizes, dataset)
    if image_index is None:
        return None     # the general path words the error
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
    from ...masks.rle import mark_run_totals_checked

    # (compressed_areas checked that each mask's runs add up to its h * w)
    return mark_run_totals_checked(Detections(
        image_index=image_index, category_index=index_in(category_ids, dataset.categories.ids),
        boxes=_xyxy(xywh, name, lambda i: f"results[{i}]"), scores=scores, area=area,
        xywh=xywh, category_ids=category_ids, masks=masks,
        mask_area=_bound_area(pixels, unbounded), mask_xywh=mask_boxes))


def _segm_image_rows(image_ids: np.ndarray, sizes: np.ndarray,
                     dataset: Dataset) -> np.ndarray | None:
    """Each result's image row, or None when an image is not the ground truth's or a mask's
    size is not its image's (where the image gives one)."""
    image_index = index_in(image_ids, dataset.images.ids)
    if (image_index < 0).any():
        return None
    heights = dataset.images.heights[image_index]
    widths = dataset.images.widths[image_index]
    known = np.isfinite(heights) & np.isfinite(widths)
    if (known & ((sizes[:, 0] != np.nan_to_num(heights))
                 | (sizes[:, 1] != np.nan_to_num(widths)))).any():
        return None
    return image_index


def segm_detections_of(columns: Any, dataset: Dataset, name: str) -> Detections | None:
    """The detections :func:`_typed_segm_results` makes of a file, made of the numpy segm
    reader's columns (:class:`~deteval.io._numeric_segm.SegmColumns`, read before the
    ground truth was known: :func:`deteval._inputs.load_pair`), or None where that path
    would return None (an unknown image, a mask whose size is not its image's). The masks'
    error, when the reader kept one, is raised here, where that path raises it."""
    image_index = _segm_image_rows(columns.image_ids, columns.sizes, dataset)
    if image_index is None:
        return None     # the general path words the error
    if columns.error is not None:
        raise columns.error
    labels = lambda i: f"results[{i}]"  # noqa: E731
    xywh, mask_boxes = columns.xywh, None
    if xywh is None:    # loadRes: toBbox's box, and the mask's pixel count as area
        xywh = mask_boxes = columns.mask_xywh
        area = columns.pixels.astype(np.float64)
    else:
        area = _box_areas(xywh, name, labels)
    from ...masks.rle import mark_run_totals_checked

    return mark_run_totals_checked(Detections(
        image_index=image_index,
        category_index=index_in(columns.category_ids, dataset.categories.ids),
        boxes=_xyxy(xywh, name, labels), scores=columns.scores, area=area, xywh=xywh,
        category_ids=columns.category_ids, masks=columns.masks,
        mask_area=_bound_area(columns.pixels, columns.unbounded), mask_xywh=mask_boxes))


def _typed_results_columns(raw: bytes):
    """Columns of a results file in the common layout, decoded and type-checked in one pass.

    msgspec checks every value against :class:`_Result` while parsing (no strings, booleans
    or nulls; integer ids; 4-number boxes) and creates no dict per record. The file is
    decoded piece by piece (:func:`~deteval.io._json.array_pieces`), so that only one
    piece's objects are alive at a time. Anything else (another layout, or any error)
    returns None, and the general path reads the file and words the error.
    """
    # Every record holds a "{": their count bounds the records, so the columns are filled
    # in place, piece after piece (no second copy of them when joining).
    bound = raw.count(b"{")
    image_ids = np.empty(bound, np.int64)
    category_ids = np.empty(bound, np.int64)
    scores = np.empty(bound, np.float64)
    xywh = np.empty((bound, 4), np.float64)
    n = 0
    for piece in array_pieces(raw):
        records = typed_decode(_RESULTS_DECODER, piece)
        del piece
        if records is None or n + len(records) > bound:
            return None
        end = n + len(records)
        _result_columns(records, image_ids[n:end], category_ids[n:end], scores[n:end],
                        xywh[n:end])
        n = end
        del records
    if n < bound:
        image_ids, category_ids, scores, xywh = (column[:n].copy() for column in
                                                 (image_ids, category_ids, scores, xywh))
    if not (np.isfinite(scores).all() and np.isfinite(xywh).all() and (xywh[:, 2:] >= 0).all()):
        return None
    return image_ids, category_ids, scores, xywh


def _result_columns(records: list[_Result], image_ids: np.ndarray, category_ids: np.ndarray,
                    scores: np.ndarray, xywh: np.ndarray) -> None:
    """Write the image id, category id, score and xywh columns of decoded records into the
    given arrays (of their length)."""
    n = len(records)
    image_ids[:] = np.fromiter(map(operator.attrgetter("image_id"), records), np.int64, n)
    category_ids[:] = np.fromiter(map(operator.attrgetter("category_id"), records), np.int64, n)
    scores[:] = np.fromiter(map(operator.attrgetter("score"), records), np.float64, n)
    xywh.ravel()[:] = np.fromiter(
        itertools.chain.from_iterable(map(operator.attrgetter("bbox"), records)), np.float64,
        4 * n)
