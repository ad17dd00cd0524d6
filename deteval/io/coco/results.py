"""Reading COCO detection results, as pycocotools' ``loadRes`` does:
:func:`read_coco_results`."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._threads import resolve_threads, thread_map
from ...data import (
    DERIVED,
    Dataset,
    Detections,
    checked,
    from_categories,
    index_in,
    narrow,
    owned,
    row_dtype,
)
from ...errors import FormatError
from .._json import (
    JSONDocument,
    box_column,
    checked_json_bytes,
    gc_paused,
    load_json,
    number_column,
    read_bytes,
    read_json_bytes,
    source_name,
)
from .._shapes import check_iou_type, outline_shapes
from .columns import (
    _bound_area,
    _box_areas,
    _has_box,
    _keypoint_columns,
    _xyxy,
    corners_and_areas_finite,
)
from .string_ids import number_result_ids
from .typed import (
    _numeric_keypoint_results,
    _typed_keypoint_results,
    _typed_results_columns,
    _typed_segm_results,
    segm_detections_of,
)


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
                             lambda i: f"row {i}", proved=True)


def _unknown_images(image_ids: np.ndarray, bad: np.ndarray, dataset: Dataset, name: str,
                    record: str) -> FormatError:
    """The error for results on images the ground truth lacks: how many, and whether ids
    shifted by one would all resolve (numbered from 0 against 1, or the reverse)."""
    n = len(image_ids)
    message = (f"image_id {int(image_ids[bad[0]])} is not an image of the ground truth "
               f"({dataset.source or 'dataset'}); {len(bad)} of {n} result(s) "
               f"({100 * len(bad) / n:.1f}%) refer to unknown images")
    for shift in (1, -1):
        if (index_in(image_ids + shift, dataset.images.ids) >= 0).all():
            message += (f", and every image_id {'+' if shift > 0 else '-'} 1 is a ground-truth "
                        "image id: the ids look shifted by one, so the others would be compared "
                        "with the wrong images (see docs/resolution.md)")
            break
    return FormatError(message, source=name, record=record)


#: Rows whose image and category rows (and checks) one thread computes at once; the same
#: cut whatever the number of threads.
_BUILD_ROWS = 1 << 16


class _RowParts:
    """The image and category rows of a reader's columns, computed part by part (any rows:
    a slice or an index array) on whatever thread calls :meth:`part`, with a flag per part
    telling whether its boxes' corners and areas are sure to be finite
    (:func:`corners_and_areas_finite`). Each row's values depend on its ids alone, so any
    cut into parts gives the same arrays. The rows are held in the narrowest integer type
    that holds them (int64 when read)."""

    def __init__(self, dataset: Dataset, image_ids, category_ids, xywh):
        n = len(image_ids)
        image_dtype = row_dtype(len(dataset.images))
        category_dtype = row_dtype(len(dataset.categories))
        self.image_ids, self.category_ids, self.xywh = image_ids, category_ids, xywh
        self.image_rows = _row_lookup(dataset.images.ids, n, image_dtype)
        self.category_rows = _row_lookup(dataset.categories.ids, n, category_dtype)
        self.image_index = np.empty(n, image_dtype)
        self.category_index = np.empty(n, category_dtype)
        self.finite: list[bool] = []    # (appended to by the parts' threads)

    def part(self, rows: Any) -> None:
        self.image_index[rows] = self.image_rows(self.image_ids[rows])
        self.category_index[rows] = self.category_rows(self.category_ids[rows])
        self.finite.append(corners_and_areas_finite(self.xywh[rows]))


def _build_detections(image_ids, category_ids, xywh, scores, dataset, name, where, *,
                      threads: int | None = 1, proved: bool = False,
                      rows: _RowParts | None = None) -> Detections:
    """The detections of the reader's columns: their image and category rows computed
    ``_BUILD_ROWS`` rows at a time on up to ``threads`` threads (the same numbers for every
    value), or given as ``rows`` (every row's part computed already: the numpy reader's
    pieces compute them beside the parse), and the errors raised in the order of a single
    pass: unknown images, then a box whose far corner overflows, then an area. The xyxy
    boxes and the areas ``w * h`` are not made here, nor the category ids when every
    category is known: ``Detections`` derives them when they are first read
    (docs/data-model.md §1). ``proved``: the caller's reader has checked every box and
    score finite and every ``w, h >= 0`` (the numpy, msgspec and array readers), so
    ``Detections`` does not check them again (:func:`~deteval.data.checked`)."""
    n = len(image_ids)
    if rows is None:
        rows = _RowParts(dataset, image_ids, category_ids, xywh)
        thread_map(lambda lo: rows.part(slice(lo, lo + _BUILD_ROWS)), range(0, n, _BUILD_ROWS),
                   resolve_threads(threads))
    image_index, category_index = rows.image_index, rows.category_index
    bad = np.flatnonzero(image_index < 0)
    if len(bad):
        raise _unknown_images(image_ids, bad, dataset, name, where(bad[0]))
    if not all(rows.finite):    # (the whole-column checks name the record)
        _xyxy(xywh, name, where)
        _box_areas(xywh, name, where)
    known = not n or bool(category_index.min() >= 0)
    # loadRes: area = w * h, ids 1..N in input order. Every column is this reader's own
    # fresh array: handed over, not copied.
    hand_over = checked if proved else owned
    return Detections(image_index=narrow(image_index), category_index=narrow(category_index),
                      boxes=DERIVED, scores=hand_over(scores), area=DERIVED,
                      xywh=hand_over(xywh), category_ids=from_categories(dataset.categories.ids)
                      if known else owned(category_ids))


def _row_lookup(ids: np.ndarray, n_values: int, dtype: Any = np.int64):
    """A function giving the row of each value in the id column ``ids`` (-1 where absent),
    as :func:`~deteval.data.index_in` does, for ``n_values`` values looked up in parts: the
    lookup table (dense ids) is built once, its size bounded by the inputs'."""
    ids = np.asarray(ids)
    if len(ids) == 0 or ids.dtype != np.int64:
        return lambda values: index_in(values, ids)
    lo, hi = int(ids.min()), int(ids.max())
    if hi - lo >= 2 * (len(ids) + n_values) + 1024:
        return lambda values: index_in(values, ids)
    unique, first = np.unique(ids, return_index=True)
    table = np.full(hi - lo + 1, -1, dtype=dtype)    # (rows in the caller's type)
    table[unique - lo] = first

    def rows(values: np.ndarray) -> np.ndarray:
        if len(values) and values.min() >= lo and values.max() <= hi:
            return table.take(values - lo)
        return index_in(values, ids)

    return rows


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


#: Files smaller than this go straight to the msgspec path (numpy's per-call overhead would
#: outweigh its speed); larger bbox results files try :func:`numeric_results_columns` first.
_NUMERIC_MIN_BYTES = NUMERIC_MIN_BYTES = 1 << 16


def _short_numbers(raw: bytes) -> bool:
    """Whether the file's first 64 KiB hold at most 60 digits a record: short decimals
    (``192.6``), which the numpy reader converts faster than msgspec. 17-digit reprs (float32
    values written by ``json.dumps``, ~90 digits a record) cost it more CPU than msgspec
    (docs/fast-reader.md §6), so they are left to msgspec."""
    sample = np.frombuffer(raw, dtype=np.uint8, count=min(len(raw), 1 << 16))
    records = np.count_nonzero(sample == 0x7B)
    return 0 < records and np.count_nonzero((sample - 48) < 10) <= 60 * records


def read_coco_results(source: Any, dataset: Dataset, *, iou_type: str = "bbox",
                      invalid: str = "raise", threads: int | None = None) -> Detections:
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
    threads : int or None
        Threads that parse a large bbox, keypoint or segm results file in the common
        layout (None: every core); the detections are the same for every value
        (docs/fast-reader.md, docs/segm-reader.md).

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
            raw = _numeric_keypoints_first(source, dataset, name, iou_type, threads)
            if isinstance(raw, Detections):
                return raw
            typed = {"segm": _typed_segm_results,
                     "keypoints": _typed_keypoint_results}.get(iou_type)
            if typed is not None and not dataset.string_ids:   # string ids: numbered below
                with gc_paused():
                    detections = typed(raw, dataset, name)
                if detections is not None:
                    return detections
            source = load_json(source, what="results", raw=raw).data
        source = number_result_ids(source, dataset.string_ids or {}, name)
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
            # String ids of the ground truth: the general path numbers the results' alike.
            # Read, not mapped: a file truncated by another process while mapped would end
            # this one with SIGBUS and no message. The numpy reader accepts ASCII only, so
            # the UTF-8 and escape checks run only on a text it refuses.
            raw = read_bytes(source, what="results")
            columns, numeric_rows = _numeric_columns(raw, dataset, threads)
            if columns is None:
                raw = checked_json_bytes(raw, source, what="results")
            if columns is None and not dataset.string_ids:
                columns = _typed_results_columns(raw)
            if columns is not None:
                del raw     # (the file's text is not needed past here: peak memory)
                image_ids, category_ids, scores, xywh = columns
                # (both readers refuse a non-finite value or a negative w, h: proved)
                return _build_detections(image_ids, category_ids, xywh, scores, dataset, name,
                                         lambda i: f"results[{i}]", threads=threads,
                                         proved=True, rows=numeric_rows)
            document = load_json(source, what="results", raw=raw)
            source = document.data
        if isinstance(source, np.ndarray):
            if dataset.string_ids:
                raise FormatError("a results array holds numeric ids, but the ground truth's "
                                  f"{' and '.join(dataset.string_ids)} ids are strings",
                                  source=name)
            return _results_from_array(source, dataset, name)
        numbered = number_result_ids(source, dataset.string_ids or {}, name)
        if numbered is not source:   # string ids: the raw text no longer describes the values
            source, document = numbered, None
        columns = _results_columns(source, name, document)
        del source, document
    image_ids, category_ids, scores, xywh, section = columns
    return _build_detections(image_ids, category_ids, xywh, scores, dataset, name,
                             lambda i: f"{section}[{i}]")


def _numeric_columns(raw: bytes, dataset: Dataset, threads: int | None):
    """``(columns, rows)`` of a bbox results file of 64 KiB or more with short numbers, as
    the numpy reader reads it, with the image and category rows its pieces computed beside
    the parse (:class:`_RowParts`); ``(None, None)`` when that reader is not for it or refuses
    it."""
    if dataset.string_ids or len(raw) < _NUMERIC_MIN_BYTES or not _short_numbers(raw):
        return None, None
    from .._numeric_json import numeric_results_columns  # (not for small files)

    built: list[_RowParts] = []

    def on_rows(columns):
        built.append(_RowParts(dataset, columns[0], columns[1], columns[3]))
        return built[-1].part

    columns = numeric_results_columns(raw, threads=threads, on_rows=on_rows)
    return (None, None) if columns is None else (columns, built[0])


def _numeric_keypoints_first(source: Any, dataset: Dataset, name: str, iou_type: str,
                             threads: int | None) -> bytes | Detections:
    """A keypoint results file of 64 KiB or more with short numbers, read by the numpy
    reader when it accepts it (docs/keypoint-reader.md), or a segm results file by the segm
    reader (:func:`_numeric_segm_first`); otherwise the file's checked bytes
    (:func:`read_json_bytes`), for the msgspec and general paths."""
    if iou_type == "segm" and not dataset.string_ids:
        return _numeric_segm_first(source, dataset, name, threads)
    if iou_type != "keypoints" or dataset.string_ids:
        return read_json_bytes(source, what="results")
    from .._numeric_keypoints import short_values

    raw = read_bytes(source, what="results")
    # (bytes the early reader read already, in load_pair, and that gave no detections: the
    # same reader would give the same columns again)
    if (len(raw) >= _NUMERIC_MIN_BYTES and not getattr(source, "tried", False)
            and short_values(raw)):
        with gc_paused():
            detections = _numeric_keypoint_results(raw, dataset, name, threads)
        if detections is not None:
            return detections
    return checked_json_bytes(raw, source, what="results")


def _numeric_segm_first(source: Any, dataset: Dataset, name: str,
                        threads: int | None) -> bytes | Detections:
    """A segm results file of 64 KiB or more read by the numpy segm reader when it accepts
    it (docs/segm-reader.md); otherwise the file's checked bytes, for the msgspec and
    general paths."""
    from .._numeric_segm import numeric_segm_results

    raw = read_bytes(source, what="results")
    # (bytes the early reader read already, in load_pair, and that gave no detections: the
    # same reader would give the same columns again)
    if len(raw) >= _NUMERIC_MIN_BYTES and not getattr(source, "tried", False):
        columns = numeric_segm_results(raw, threads=threads, source=name)
        with gc_paused():       # (a dict and a string per mask)
            detections = (None if columns is None
                          else segm_detections_of(columns, dataset, name))
        if detections is not None:
            return detections
    return checked_json_bytes(raw, source, what="results")


def segm_columns_early(raw: bytes, path: Any, *, pool: Any = None):
    """The columns of a segm results file (``raw``, the content of ``path``) read, and its
    masks decoded, by the numpy segm reader before its ground truth is known
    (:func:`deteval._inputs.load_pair`), or None where :func:`read_coco_results` would not
    use that reader (a small file, a refused text: its own reading then words the error).
    Given the ground truth, :func:`~.typed.segm_detections_of` makes of them the detections
    :func:`read_coco_results` gives for the file (when its ids are not strings)."""
    from .._numeric_segm import numeric_segm_results

    if len(raw) < _NUMERIC_MIN_BYTES:
        return None
    return numeric_segm_results(raw, pool=pool, piece_bytes=_EARLY_SEGM_PIECE_BYTES,
                                source=source_name(path))


#: Bytes of text per piece of a segm results file read early (docs/segm-reader.md §3).
_EARLY_SEGM_PIECE_BYTES = 1 << 19


#: Bytes of text per piece of a keypoint results file read early: the two threads that share
#: its pieces (``pool``) end within about one piece of each other (a piece of the default
#: 1 MiB, up to 2 MiB at the file's end, left one thread ~20 ms alone on the bench's file).
_EARLY_PIECE_BYTES = 1 << 18


def keypoint_columns_early(raw: bytes, *, threads: int | None = 1, pool: Any = None):
    """The columns of a keypoint results file (``raw``, its content) read by the numpy
    reader before its ground truth is known (:func:`deteval._inputs.load_pair` reads the two
    files at once), or None where :func:`read_coco_results` would not use that reader (a
    small file, long numbers, a refused text: its own reading then words the error). Given
    the ground truth, :func:`~.typed.keypoint_detections_of` makes of them the detections
    :func:`read_coco_results` gives for the file (when the ground truth's ids are not
    strings). ``pool``: as for
    :func:`~deteval.io._numeric_keypoints.numeric_keypoint_results`."""
    from .._numeric_keypoints import numeric_keypoint_results, short_values

    if len(raw) < _NUMERIC_MIN_BYTES or not short_values(raw):
        return None
    with gc_paused():
        return numeric_keypoint_results(raw, threads=threads, pool=pool,
                                        piece_bytes=_EARLY_PIECE_BYTES)


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
        raise _unknown_images(image_ids, bad, dataset, name, labels[bad[0]])
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
        from ...masks import mask_xywh, masks_from_segmentations

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
        from ...geometry import polygon_area, polygon_bounds

        shapes.update(outline_shapes(records, labels, name, iou_type, invalid=invalid))
        if not box_branch:
            bounds = polygon_bounds(shapes["polygons"])
            xywh = _own_or_shape_boxes(
                xywh, given, np.column_stack([bounds[:, :2], bounds[:, 2:] - bounds[:, :2]]))
        area = (_box_areas(xywh, name, lambda i: labels[i]) if box_branch
                else polygon_area(shapes["polygons"]).astype(np.float64))
    boxes = _xyxy(xywh, name, lambda i: labels[i])
    detections = Detections(image_index=image_index, category_index=category_index,
                            boxes=boxes, scores=scores, area=area, xywh=xywh,
                            category_ids=category_ids, **shapes)
    if "masks" in shapes:       # the runs add up to h * w (masks_from_segmentations)
        from ...masks.rle import mark_run_totals_checked

        mark_run_totals_checked(detections)
    return detections


def _mask_areas_and_boxes(records: Sequence[dict], heights: np.ndarray, widths: np.ndarray,
                          labels: Sequence[str], name: str, own_xywh: np.ndarray | None,
                          given: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boxes and areas of results in loadRes's segm branch (every record needs a mask)."""
    from ...masks import mask_xywh, masks_from_segmentations

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


def _own_or_shape_boxes(own: np.ndarray | None, given: np.ndarray,
                        shape: np.ndarray) -> np.ndarray:
    """Each record's own box where it gave one, else the tight box of its shape."""
    shape = np.asarray(shape, dtype=np.float64).reshape(-1, 4)
    return shape if own is None else np.where(given[:, None], own, shape)
