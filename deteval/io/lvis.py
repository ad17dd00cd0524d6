"""Reading LVIS ground truth: a COCO instances file plus the federated keys.

An LVIS annotation file is a COCO instances file whose images carry
``neg_category_ids`` (categories verified absent from the image) and
``not_exhaustive_category_ids`` (categories present but not every instance annotated), and
whose categories carry ``frequency`` (``"r"``, ``"c"`` or ``"f"``: rare, common, frequent).
:func:`read_coco_gt` keeps the COCO part; this module reads the three keys from the same
JSON and checks them, naming the record at fault (lvis-api raises a bare ``KeyError``).

Examples
--------
>>> gt = {"images": [{"id": 1, "neg_category_ids": [2], "not_exhaustive_category_ids": []}],
...       "categories": [{"id": 1, "name": "a", "frequency": "f"},
...                      {"id": 2, "name": "b", "frequency": "r"}],
...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1,
...                        "bbox": [0, 0, 10, 10], "area": 100}]}
>>> lvis = read_lvis_gt(gt)
>>> lvis.frequency, lvis.negative_keys.tolist(), lvis.not_exhaustive_keys.tolist()
(('f', 'r'), [1], [])
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
import numpy as np

from .._arrays import ReadOnlyArrays
from ..data import Dataset, index_in
from ..errors import FormatError
from ._json import gc_paused, load_json, read_bytes, source_name
from .coco import read_coco_gt

__all__ = ["LVISGroundTruth", "FREQUENCIES", "read_lvis_gt"]

#: The frequency labels of LVIS categories, in the order of APr, APc, APf.
FREQUENCIES = ("r", "c", "f")

_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_UNSET = msgspec.UNSET


class _Image(msgspec.Struct, gc=False):
    id: _Int64
    neg_category_ids: list[_Int64] | msgspec.UnsetType = _UNSET
    not_exhaustive_category_ids: list[_Int64] | msgspec.UnsetType = _UNSET


class _Category(msgspec.Struct, gc=False):
    id: _Int64
    frequency: str | msgspec.UnsetType = _UNSET


class _Keys(msgspec.Struct, gc=False):
    images: list[_Image]
    categories: list[_Category]


_DECODER = msgspec.json.Decoder(_Keys)


@dataclass(frozen=True, eq=False)
class LVISGroundTruth(ReadOnlyArrays):
    """An LVIS ground truth: the COCO part and the federated keys.

    Attributes
    ----------
    dataset : Dataset
        What :func:`~deteval.io.coco.read_coco_gt` reads (images, categories, objects).
    negative_keys : ndarray of int64, shape (n_neg,)
        ``image_row * n_categories + category_row`` of every (image, category) listed in
        ``neg_category_ids``, sorted, unique. Ids that are not categories of the file are
        left out (no detection can have them once unknown categories are dropped).
    not_exhaustive_keys : ndarray of int64, shape (n_ne,)
        The same for ``not_exhaustive_category_ids``.
    frequency : tuple of str
        ``"r"``, ``"c"`` or ``"f"`` for each category row.
    """

    dataset: Dataset
    negative_keys: np.ndarray
    not_exhaustive_keys: np.ndarray
    frequency: tuple[str, ...]

    def __post_init__(self) -> None:
        for name in ("negative_keys", "not_exhaustive_keys"):
            getattr(self, name).setflags(write=False)


def read_lvis_gt(source: str | os.PathLike | dict, *, iou_type: str = "bbox") -> LVISGroundTruth:
    """Read an LVIS annotation file (or its parsed dict) into an :class:`LVISGroundTruth`.

    Parameters
    ----------
    source : str, PathLike or dict
        Path of an LVIS JSON file, or its parsed content (never modified).
    iou_type : {"bbox", "segm"}
        ``"segm"`` also reads the ``segmentation`` masks (see
        :func:`~deteval.io.coco.read_coco_gt`).

    Returns
    -------
    LVISGroundTruth

    Raises
    ------
    FormatError
        Anything :func:`read_coco_gt` refuses; an image without ``neg_category_ids`` or
        ``not_exhaustive_category_ids`` (or with something else than a list of integer
        ids); a category whose ``frequency`` is missing or not one of ``"r"``, ``"c"``,
        ``"f"``. The message names the record.
    """
    if iou_type not in ("bbox", "segm"):
        raise ValueError(f"iou_type must be 'bbox' or 'segm' for LVIS; got {iou_type!r}")
    name = source_name(source)
    dataset = read_coco_gt(source, iou_type=iou_type)
    if isinstance(source, (str, os.PathLike)):
        raw = read_bytes(source, what="ground truth")
        keys = _typed_keys(raw)
        if keys is None:
            keys = _general_keys(load_json(source, what="ground truth", raw=raw).data, name)
    else:
        keys = _general_keys(source, name)
    return _build(dataset, keys, name)


def _typed_keys(raw: bytes):
    """The three keys by msgspec; None on anything unusual (the general path words it)."""
    try:
        with gc_paused():
            decoded = _DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    images = [(i.id, i.neg_category_ids, i.not_exhaustive_category_ids) for i in decoded.images]
    categories = [(c.id, c.frequency) for c in decoded.categories]
    return images, categories


def _general_keys(data: Any, name: str):
    """The three keys from a parsed dict, each value checked, errors naming the record."""
    if not isinstance(data, dict):
        raise FormatError("an LVIS ground-truth file must hold a JSON object", source=name)
    images, categories = [], []
    for section, out in (("images", images), ("categories", categories)):
        records = data.get(section)
        if not isinstance(records, list):
            raise FormatError(f"'{section}' must be a list", source=name)
        for i, record in enumerate(records):
            if not isinstance(record, dict):
                raise FormatError(f"must be a JSON object; got {type(record).__name__}",
                                  source=name, record=f"{section}[{i}]")
            if section == "images":
                out.append((record.get("id"), *(
                    _id_list(record.get(key, _UNSET), key, name, f"images[{i}] (id "
                             f"{record.get('id')})")
                    for key in ("neg_category_ids", "not_exhaustive_category_ids"))))
            else:
                out.append((record.get("id"), record.get("frequency", _UNSET)))
    return images, categories


def _id_list(value: Any, key: str, name: str, where: str) -> Any:
    if value is _UNSET:
        return value
    ok = isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool)
        or isinstance(v, float) and math.isfinite(v) and v == int(v) for v in value)
    if not ok:
        raise FormatError(f"'{key}' must be a list of category ids; got {str(value)[:80]}",
                          source=name, record=where)
    return [int(v) for v in value]


def _build(dataset: Dataset, keys, name: str) -> LVISGroundTruth:
    images, categories = keys
    n_k = len(dataset.categories)
    # The keys are read in file order, as read_coco_gt reads images and categories.
    for i, (image_id, neg, ne) in enumerate(images):
        for key, value in (("neg_category_ids", neg), ("not_exhaustive_category_ids", ne)):
            if value is _UNSET:
                raise FormatError(
                    f"missing '{key}': an LVIS image lists the categories verified absent "
                    "('neg_category_ids') and those not exhaustively annotated "
                    "('not_exhaustive_category_ids'), [] when none; evaluate a COCO file "
                    "with evaluate_coco", source=name, record=f"images[{i}] (id {image_id})")
    frequency = []
    for i, (category_id, value) in enumerate(categories):
        if value not in FREQUENCIES:
            got = "none" if value is _UNSET else repr(value)
            raise FormatError(f"'frequency' must be 'r', 'c' or 'f' (rare, common, frequent); "
                              f"got {got}", source=name,
                              record=f"categories[{i}] (id {category_id})")
        frequency.append(value)

    def pairs(column: int) -> np.ndarray:
        lists = [image[column] for image in images]
        counts = np.fromiter(map(len, lists), np.int64, len(lists))
        flat = np.fromiter((v for values in lists for v in values), np.int64, int(counts.sum()))
        rows = np.repeat(np.arange(len(lists), dtype=np.int64), counts)
        category_row = index_in(flat, dataset.categories.ids)
        known = category_row >= 0
        return np.unique(rows[known] * n_k + category_row[known])

    return LVISGroundTruth(dataset=dataset, negative_keys=pairs(1), not_exhaustive_keys=pairs(2),
                           frequency=tuple(frequency))
