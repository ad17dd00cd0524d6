"""What :meth:`deteval.Evaluator.update` accepts, read into :class:`~deteval.data.Detections`.

Three forms (see :class:`deteval.Evaluator`):

* COCO result records (a list of ``{"image_id", "category_id", "bbox", "score"}`` dicts, with
  ``segmentation`` or ``keypoints`` for those protocols), read by ``read_coco_results``;
* an ``(N, 7)`` array of rows ``[image_id, x, y, w, h, score, category_id]``;
* :class:`~deteval.data.Detections` of the ground truth's dataset (what the readers return);
* per-image predictions, torchvision style: ``{image_id: {"boxes", "scores", "labels"}}`` or a
  list of such dicts with an ``"image_id"`` key (``"masks"`` for segm, ``"keypoints"`` for
  keypoints). Boxes are ``box_format`` (default xyxy, absolute pixels).

Arrays may be numpy arrays or any object with ``__dlpack__`` or ``__array__`` (a torch tensor
on the CPU, say); they are read with ``np.from_dlpack`` / ``np.asarray``, never modified, and
deteval never imports the framework they come from.

Each image an update covers gets a 64-bit fingerprint of its detections (every column, in
order), with which a repeated image is told apart from a conflicting one.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._sorting import lexorder
from .boxes import BOX_FORMATS
from .data import Dataset, Detections, index_in
from .errors import FormatError
from .io.coco import read_coco_results

__all__ = ["Batch", "as_array", "image_fingerprints", "read_update"]

_SOURCE = "update"


def as_array(value: Any, what: str) -> np.ndarray:
    """``value`` as a numpy array without importing its framework (DLPack, then ``__array__``).

    Raises
    ------
    TypeError
        The data lives where numpy cannot read it (a GPU), or needs ``.detach()``.
    """
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError, ValueError) as error:
            if not hasattr(value, "__array__"):
                raise TypeError(_device_message(value, what, error)) from None
    try:
        return np.asarray(value)
    except (RuntimeError, TypeError, ValueError) as error:
        raise TypeError(_device_message(value, what, error)) from None


def _device_message(value: Any, what: str, error: Exception) -> str:
    device = getattr(value, "device", None)
    where = f" (device {device})" if device is not None else ""
    return (f"{what}: numpy cannot read this {type(value).__name__}{where}: {error}; call "
            ".detach().cpu() on it (and .float() for a dtype numpy lacks, such as bfloat16), "
            "or pass a numpy array")


@dataclass(frozen=True, eq=False)
class Batch:
    """One update, read: its detections, the images it covers and their fingerprints.

    ``images`` are rows of the images table (sorted, unique): every image with a detection,
    and with the per-image form also every image listed without predictions.
    """

    detections: Detections
    images: np.ndarray
    fingerprints: np.ndarray     # uint64, one per image
    n_repeated: int              # images listed twice in this batch with the same predictions


_G = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on every element (uint64 arithmetic wraps, as intended)."""
    x = x + _G
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def _bits(values: np.ndarray) -> np.ndarray:
    """The 64-bit patterns of a numeric column block, shape (n, m)."""
    values = np.ascontiguousarray(values)
    if values.dtype.kind == "f":
        values = values.astype(np.float64, copy=False)
    else:
        values = values.astype(np.int64, copy=False)
    return values.reshape(len(values), -1).view(np.uint64)


def _row_hashes(detections: Detections) -> np.ndarray:
    categories = (detections.category_ids if detections.category_ids is not None
                  else detections.category_index)
    h = _mix(_bits(categories)[:, 0])
    blocks = [detections.scores, detections.boxes, detections.area]
    if detections.xywh is not None:
        blocks.append(detections.xywh)
    if detections.keypoints is not None:
        blocks.append(detections.keypoints)
    if detections.masks is not None:
        blocks.append(np.array([_mask_hash(m) for m in detections.masks], dtype=np.int64))
    for block in blocks:
        for column in _bits(block).T:
            h = _mix(h ^ column)
    return h


def _mask_hash(mask: Any) -> int:
    counts = mask["counts"]
    data = counts.encode() if isinstance(counts, str) else bytes(counts)
    return zlib.crc32(data, zlib.crc32(repr(tuple(mask["size"])).encode()))


def image_fingerprints(detections: Detections, images: np.ndarray) -> np.ndarray:
    """One uint64 per image of ``images`` (sorted rows) from its detections, in their order."""
    out = np.full(len(images), _mix(np.zeros(1, np.uint64))[0], dtype=np.uint64)
    if len(detections) == 0:
        return out
    order = lexorder([detections.image_index])
    image = detections.image_index[order]
    starts = np.flatnonzero(np.r_[True, image[1:] != image[:-1]])
    counts = np.diff(np.r_[starts, len(image)])
    position = np.arange(len(image)) - np.repeat(starts, counts)
    values = _mix(_row_hashes(detections)[order] ^ _mix(position.astype(np.uint64)))
    sums = np.add.reduceat(values, starts)
    out[np.searchsorted(images, image[starts])] = _mix(sums ^ counts.astype(np.uint64))
    return out


def read_update(dataset: Dataset, predictions: Any, *, iou_type: str, box_format: str,
                unknown_labels: str) -> Batch:
    """Read one update (any of the forms in the module documentation).

    Raises
    ------
    FormatError
        Bad input, naming the batch row (or image and row) and what was expected.
    TypeError
        Input of no known form, or arrays numpy cannot read (on a GPU).
    """
    if _is_per_image(predictions):
        detections, images, repeated = _per_image(dataset, predictions, iou_type, box_format,
                                                  unknown_labels)
    else:
        detections = _records_or_rows(dataset, predictions, iou_type)
        images, repeated = np.unique(detections.image_index), 0
        bad = np.flatnonzero(detections.category_index < 0)
        if unknown_labels == "raise" and len(bad):
            record = (f"results[{bad[0]}]" if isinstance(predictions, (list, tuple, dict))
                      else f"row {bad[0]}")
            label = (int(detections.category_ids[bad[0]])
                     if detections.category_ids is not None else "(category_index -1)")
            raise FormatError(_unknown_label_message(dataset, label, len(bad)),
                              source=_SOURCE, record=record)
    return Batch(detections=detections, images=images,
                 fingerprints=image_fingerprints(detections, images), n_repeated=repeated)


def _unknown_label_message(dataset: Dataset, label: Any, n_bad: int) -> str:
    ids = dataset.categories.ids
    known = (f"{int(ids.min())}..{int(ids.max())}" if len(ids) > 8
             else ", ".join(str(i) for i in ids.tolist()))
    return (f"label (category_id) {label} is not a category of the ground truth ({known}); "
            f"{n_bad} detection(s) of this update have unknown labels. Pass "
            "unknown_labels='drop' to drop them as pycocotools does")


def _is_per_image(predictions: Any) -> bool:
    if isinstance(predictions, dict):
        return "annotations" not in predictions
    if isinstance(predictions, (list, tuple)) and predictions:
        first = predictions[0]
        return isinstance(first, dict) and ("boxes" in first or "labels" in first)
    return False


def _records_or_rows(dataset: Dataset, predictions: Any, iou_type: str) -> Detections:
    if isinstance(predictions, Detections):
        if len(predictions) and predictions.image_index.max() >= len(dataset.images):
            raise FormatError("detections.image_index must index the ground truth's images "
                              "table", source=_SOURCE)
        return predictions
    if isinstance(predictions, (list, tuple, dict, str)) or predictions is None:
        if isinstance(predictions, str) or predictions is None:
            raise TypeError("update() takes COCO result records (a list of dicts), an (N, 7) "
                            "array or per-image predictions; got "
                            f"{type(predictions).__name__}")
        return _read(list(predictions) if isinstance(predictions, tuple) else predictions,
                     dataset, iou_type)
    array = as_array(predictions, "predictions")
    if array.dtype.kind not in "iuf" or array.ndim != 2 or array.shape[1] != 7:
        raise FormatError(f"an array of predictions must have shape (N, 7) and a numeric dtype "
                          f"(columns image_id, x, y, w, h, score, category_id); got shape "
                          f"{array.shape}, dtype {array.dtype}", source=_SOURCE)
    if iou_type != "bbox":
        raise FormatError(f"an (N, 7) array holds boxes only; iou_type {iou_type!r} needs "
                          "result records or per-image predictions", source=_SOURCE)
    return _read(array, dataset, iou_type)


def _read(source: Any, dataset: Dataset, iou_type: str) -> Detections:
    """``read_coco_results``, its errors naming this update as their source."""
    try:
        return read_coco_results(source, dataset, iou_type=iou_type)
    except FormatError as error:
        raise FormatError(error.message, source=_SOURCE, record=error.record) from None


_SHAPE_KEY = {"bbox": "boxes", "segm": "masks", "keypoints": "keypoints"}


def _per_image(dataset: Dataset, predictions: Any, iou_type: str, box_format: str,
               unknown_labels: str) -> tuple[Detections, np.ndarray, int]:
    """Per-image predictions as detections, the images they cover, and repeats dropped."""
    if iou_type not in _SHAPE_KEY:
        raise FormatError(f"per-image predictions carry boxes, masks or keypoints; for "
                          f"iou_type {iou_type!r} pass COCO result records", source=_SOURCE)
    if box_format not in BOX_FORMATS:
        raise ValueError(f"box_format must be one of {', '.join(BOX_FORMATS)}; "
                         f"got {box_format!r}")
    if isinstance(predictions, dict):
        items = [(key, f"predictions[{key!r}]", value) for key, value in predictions.items()]
    else:
        items = []
        for i, entry in enumerate(predictions):
            if not isinstance(entry, dict) or "image_id" not in entry:
                raise FormatError("a list of per-image predictions must hold dicts with an "
                                  f"'image_id' key; got {type(entry).__name__}"
                                  f"{'' if not isinstance(entry, dict) else ' without one'}",
                                  source=_SOURCE, record=f"predictions[{i}]")
            items.append((entry["image_id"], f"predictions[{i}]", entry))
    ids = np.array([_image_id(key, where) for key, where, _ in items], dtype=np.int64)
    rows = index_in(ids, dataset.images.ids)
    seen: dict[int, tuple[str, dict]] = {}
    repeated = 0
    for (_, where, entry), image_id, row in zip(items, ids.tolist(), rows.tolist()):
        where = f"{where} (image_id {image_id})"
        if row < 0:
            raise FormatError(f"image_id {image_id} is not an image of the ground truth "
                              f"({dataset.source or 'dataset'})", source=_SOURCE, record=where)
        columns = _entry_columns(entry, where, iou_type, box_format, dataset, row)
        if unknown_labels == "raise":
            bad = np.flatnonzero(index_in(columns["labels"], dataset.categories.ids) < 0)
            if len(bad):
                raise FormatError(_unknown_label_message(
                    dataset, int(columns["labels"][bad[0]]), len(bad)), source=_SOURCE,
                    record=f"{where}, row {bad[0]}")
        if row in seen:
            if _same(seen[row][1], columns):
                repeated += 1
                continue
            raise FormatError(f"image_id {image_id} is given twice in this update with "
                              f"different predictions (first at {seen[row][0]})",
                              source=_SOURCE, record=where)
        seen[row] = (where, columns)
    images = np.array(sorted(seen), dtype=np.int64)
    return _assemble(dataset, seen, iou_type, box_format), images, repeated


def _image_id(key: Any, where: str) -> int:
    value = as_array(key, f"{where}: image_id")
    if value.size != 1 or value.dtype.kind not in "iuf" or value.ravel()[0] != np.round(
            value.ravel()[0]) or not np.isfinite(value.ravel()[0]):
        raise FormatError(f"image_id must be an integer; got {key!r}", source=_SOURCE,
                          record=where)
    return int(value.ravel()[0])


def _numbers(entry: dict, name: str, where: str, *, integers: bool = False) -> np.ndarray:
    if name not in entry:
        raise FormatError(f"missing {name!r} (per-image predictions need 'scores', 'labels' "
                          "and 'boxes', 'masks' or 'keypoints')", source=_SOURCE, record=where)
    values = as_array(entry[name], f"{where}: {name}")
    if values.dtype.kind not in ("iu" if integers else "iuf") and not (
            integers and values.dtype.kind == "f"):
        raise FormatError(f"{name} must hold {'integers' if integers else 'numbers'}; got "
                          f"dtype {values.dtype}", source=_SOURCE, record=where)
    if values.dtype.kind == "f" and values.size:
        flat = values.reshape(len(values), -1) if values.ndim else values.reshape(1, 1)
        bad = np.flatnonzero(~np.isfinite(flat).all(axis=1))
        if len(bad):
            raise FormatError(f"{name} must be finite; row {bad[0]} has "
                              f"{flat[bad[0]].tolist()}", source=_SOURCE, record=where)
        if integers:
            bad = np.flatnonzero(values != np.round(values))
            if len(bad):
                raise FormatError(f"{name} must hold integers; row {bad[0]} is "
                                  f"{values[bad[0]]!r}", source=_SOURCE, record=where)
    return values


def _entry_columns(entry: Any, where: str, iou_type: str, box_format: str, dataset: Dataset,
                   row: int) -> dict:
    """The checked columns of one image's predictions."""
    if not isinstance(entry, dict):
        raise FormatError(f"per-image predictions must be dicts; got {type(entry).__name__}",
                          source=_SOURCE, record=where)
    scores = _numbers(entry, "scores", where).astype(np.float64)
    labels = _numbers(entry, "labels", where, integers=True)
    n = len(scores) if scores.ndim == 1 else -1
    for name, values in (("scores", scores), ("labels", labels)):
        if values.ndim != 1 or len(values) != n:
            raise FormatError(f"{name} must have shape (n,) with one row per prediction; got "
                              f"{values.shape} (scores: {scores.shape})", source=_SOURCE,
                              record=where)
    columns = {"scores": scores, "labels": labels.astype(np.int64)}
    key = _SHAPE_KEY[iou_type]
    shapes = _numbers(entry, key, where) if key != "masks" else None
    if key == "boxes":
        if shapes.shape != (n, 4):
            raise FormatError(f"boxes must have shape ({n}, 4) ({box_format}); got "
                              f"{shapes.shape}", source=_SOURCE, record=where)
        shapes = shapes.astype(np.float64)
        first = 2 if box_format.startswith("xyxy") else 0
        size = shapes[:, 2:] - shapes[:, :2] if first == 2 else shapes[:, 2:]
        bad = np.flatnonzero((size < 0).any(axis=1))
        if len(bad):
            expected = "x2 >= x1 and y2 >= y1" if first == 2 else "w >= 0 and h >= 0"
            raise FormatError(f"boxes must have {expected} ({box_format}); row {bad[0]} is "
                              f"{shapes[bad[0]].tolist()}", source=_SOURCE, record=where)
    elif key == "keypoints":
        if shapes.ndim == 2 and shapes.shape[1] % 3 == 0:
            shapes = shapes.reshape(len(shapes), -1, 3)
        if shapes.ndim != 3 or shapes.shape[0] != n or shapes.shape[2] != 3:
            raise FormatError(f"keypoints must have shape ({n}, K, 3); got {shapes.shape}",
                              source=_SOURCE, record=where)
        shapes = shapes.astype(np.float64)
    else:
        shapes = _masks(entry, where, n, dataset, row)
    columns[key] = shapes
    return columns


def _masks(entry: dict, where: str, n: int, dataset: Dataset, row: int) -> list:
    """Binary masks (n, H, W) or (n, 1, H, W) (floats: > 0.5), or RLE dicts, as RLE dicts."""
    from pycocotools import mask as mask_utils

    if "masks" not in entry:
        raise FormatError("missing 'masks' (segm predictions need 'scores', 'labels' and "
                          "'masks')", source=_SOURCE, record=where)
    raw = entry["masks"]
    if isinstance(raw, (list, tuple)) and all(isinstance(m, dict) for m in raw):
        if len(raw) != n:
            raise FormatError(f"masks must have one RLE per prediction ({n}); got {len(raw)}",
                              source=_SOURCE, record=where)
        return list(raw)
    masks = as_array(raw, f"{where}: masks")
    if masks.ndim == 4 and masks.shape[1] == 1:
        masks = masks[:, 0]
    if masks.ndim != 3 or len(masks) != n or masks.dtype.kind not in "biuf":
        raise FormatError(f"masks must have shape ({n}, H, W) or ({n}, 1, H, W) of numbers or "
                          f"booleans; got {masks.shape}, dtype {masks.dtype}", source=_SOURCE,
                          record=where)
    height, width = dataset.images.heights[row], dataset.images.widths[row]
    if not np.isnan(height) and masks.shape[1:] != (int(height), int(width)):
        raise FormatError(f"masks must be the image's size ({int(height)} x {int(width)}); "
                          f"got {masks.shape[1]} x {masks.shape[2]}", source=_SOURCE,
                          record=where)
    binary = masks > 0.5 if masks.dtype.kind == "f" else masks != 0
    encoded = mask_utils.encode(np.asfortranarray(binary.transpose(1, 2, 0).astype(np.uint8)))
    return [{"size": m["size"], "counts": m["counts"].decode()} for m in encoded]


def _same(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for key in a:
        if key == "masks":
            if a[key] != b[key]:
                return False
        elif not np.array_equal(a[key], b[key]):
            return False
    return True


def _assemble(dataset: Dataset, seen: dict, iou_type: str, box_format: str) -> Detections:
    """One Detections of the images' predictions, image by image in input order."""
    parts = [columns for _, columns in seen.values()]
    rows = list(seen)
    counts = [len(c["scores"]) for c in parts]
    image_ids = np.repeat(dataset.images.ids[rows] if rows else np.zeros(0, np.int64), counts)
    scores = np.concatenate([c["scores"] for c in parts]) if parts else np.zeros(0)
    labels = (np.concatenate([c["labels"] for c in parts]) if parts
              else np.zeros(0, np.int64))
    if iou_type == "bbox":
        boxes = (np.concatenate([c["boxes"] for c in parts]) if parts
                 else np.zeros((0, 4)))
        return dataset.detections(image_ids=image_ids, category_ids=labels, boxes=boxes,
                                  scores=scores, box_format=box_format)
    key = _SHAPE_KEY[iou_type]
    shapes = [s for c in parts for s in (c[key] if key == "masks" else c[key].reshape(
        len(c[key]), -1).tolist())]
    records = [{"image_id": i, "category_id": c, "score": s, key if key != "masks"
                else "segmentation": shape}
               for i, c, s, shape in zip(image_ids.tolist(), labels.tolist(), scores.tolist(),
                                         shapes)]
    return _read(records, dataset, iou_type)

