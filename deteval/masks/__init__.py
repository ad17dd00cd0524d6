"""Instance masks as COCO run-length encodings (RLE): conversion, checks, areas and IoU.

Masks are ``h x w`` bitmaps stored column-major and run-length encoded, as in pycocotools:
``counts`` lists alternating run lengths of 0s and 1s, starting with 0s. deteval keeps every
mask in *compressed* form, ``{"size": [h, w], "counts": bytes or str}``, the form
pycocotools' C routines take, and computes IoUs, areas and boxes with those routines, so
that the numbers are pycocotools' own (docs/protocols/coco.md §5.3).

What deteval adds is checking: a compressed string is decoded here, vectorised over all
masks at once, to refuse characters outside the alphabet, truncated numbers and runs that
do not add up to ``h * w`` (pycocotools reads such strings without complaint and returns
numbers from beyond the end of the mask), and polygons with an odd number of coordinates
(pycocotools drops the last number).

The package, by what each module does (import the names from ``deteval.masks``):

- :mod:`~deteval.masks.rle`: compressed strings decoded and checked; areas and boxes of
  their runs (``decode_counts``, ``compressed_areas``, ``compressed_masks``).
- :mod:`~deteval.masks.segmentations`: COCO ``segmentation`` values to masks
  (``masks_from_segmentations``).
- :mod:`~deteval.masks.rasterise`: polygons checked and rasterised (for ``segmentations``).
- :mod:`~deteval.masks.measures`: areas and boxes with pycocotools' routines
  (``mask_area``, ``mask_bound_area``, ``mask_bounds``, ``mask_xywh``).
- :mod:`~deteval.masks.pair_iou`: mask IoU of pairs and its bound (``pair_mask_iou``,
  ``mask_iou_bound``).
- :mod:`~deteval.masks._api`: ``mask_api``, pycocotools' C routines, looked up at each call
  by the module that calls them (to replace them in a test, patch that module's
  ``mask_api``, e.g. ``deteval.masks.pair_iou.mask_api``; likewise the tuning constants
  ``deteval.masks.rle._CHUNK`` and ``deteval.masks.pair_iou._BATCH_MASKS``).

Examples
--------
>>> masks = masks_from_segmentations([[[0, 0, 10, 0, 10, 10, 0, 10]],
...                                   {"size": [20, 20], "counts": [0, 5, 395]}],
...                                  heights=[20, 20], widths=[20, 20])
>>> mask_area(masks).tolist()
[100, 5]
>>> mask_bounds(masks).tolist()
[[0.0, 0.0, 10.0, 10.0], [0.0, 0.0, 1.0, 5.0]]
>>> pair_mask_iou(masks, masks, np.array([0, 1]), np.array([1, 0]), np.zeros(2, bool),
...               image_of_dt=np.zeros(2, np.int64)).tolist()
[0.05, 0.05]
"""

from __future__ import annotations

import numpy as np  # noqa: F401  (the examples above use it)

from ._api import mask_api as mask_api
from .measures import mask_area, mask_bound_area, mask_bounds
from .measures import mask_xywh as mask_xywh
from .pair_iou import mask_iou_bound, pair_mask_iou
from .rle import compressed_areas, compressed_masks, decode_counts
from .segmentations import masks_from_segmentations

# As before the split; ``mask_api`` and ``mask_xywh`` are importable from here too.
__all__ = ["compressed_areas", "compressed_masks", "decode_counts", "mask_area",
           "mask_bound_area", "mask_bounds", "mask_iou_bound", "masks_from_segmentations",
           "pair_mask_iou"]
