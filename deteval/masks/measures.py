"""Areas and tight boxes of compressed RLE masks, as pycocotools' ``area`` and ``toBbox``.

Examples
--------
>>> masks = [{"size": [6, 5], "counts": b"0::0"}, {"size": [7, 1], "counts": b"52"}]
>>> mask_area(masks).tolist()
[20, 2]
>>> mask_bounds(masks).tolist()
[[0.0, 0.0, 5.0, 6.0], [0.0, 5.0, 1.0, 7.0]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._api import mask_api
from .rle import compressed_areas

__all__ = ["mask_area", "mask_bound_area", "mask_bounds", "mask_xywh"]


def mask_area(masks: Sequence[dict]) -> np.ndarray:
    """Pixel count of each mask, shape (n,), int64 (pycocotools' ``area``)."""
    if len(masks) == 0:
        return np.zeros(0, dtype=np.int64)
    # pycocotools' area() builds a uint8 placeholder from the count and fails beyond 255
    # masks under numpy 2: call it on slices.
    api = mask_api()
    masks = list(masks)
    return np.concatenate([np.asarray(api.area(masks[i:i + 255]), dtype=np.int64)
                           for i in range(0, len(masks), 255)])


def mask_bound_area(masks: Sequence[dict]) -> np.ndarray:
    """The ``mask_area`` column for masks that lack it, shape (n,), float64.

    Each mask's pixel count, NaN where pycocotools' IoU routine may stop counting early on
    it (see :func:`mask_iou_bound`). The masks are compressed RLE dicts (str or bytes
    counts).

    Examples
    --------
    >>> mask_bound_area([{"size": [6, 5], "counts": "0::0"},
    ...                  {"size": [2, 1], "counts": b"0100"}]).tolist()
    [20.0, nan]
    """
    if len(masks) == 0:
        return np.zeros(0, dtype=np.float64)
    strings = [m["counts"].encode("utf-8", "surrogatepass") if isinstance(m["counts"], str)
               else m["counts"] for m in masks]
    sizes = np.array([m["size"] for m in masks], dtype=np.int64).reshape(-1, 2)
    pixels, early = compressed_areas(strings, sizes, unbounded=True)
    return np.where(early, np.nan, pixels.astype(np.float64))


def mask_bounds(masks: Sequence[dict]) -> np.ndarray:
    """Tight box of each mask as xyxy, shape (n, 4), float64 (empty mask: zeros)."""
    if len(masks) == 0:
        return np.zeros((0, 4))
    xywh = np.asarray(mask_api().toBbox(list(masks)), dtype=np.float64).reshape(-1, 4)
    return np.column_stack([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]])


def mask_xywh(masks: Sequence[dict]) -> np.ndarray:
    """Tight box of each mask as ``[x, y, w, h]`` (pycocotools' ``toBbox``), shape (n, 4)."""
    if len(masks) == 0:
        return np.zeros((0, 4))
    return np.asarray(mask_api().toBbox(list(masks)), dtype=np.float64).reshape(-1, 4)

