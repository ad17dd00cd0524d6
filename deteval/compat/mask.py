"""``pycocotools.mask``: the RLE mask routines, from pycocotools itself.

deteval computes mask IoU with these very routines, so code that calls ``mask.iou``,
``mask.encode`` or ``mask.frPyObjects`` through :mod:`deteval.compat` gets pycocotools'
numbers and types. ``decode`` is wrapped only to silence the DeprecationWarning that
pycocotools 2.0.x's compiled routine raises under numpy 2 (about the ``copy`` keyword of
``__array__``); its result is pycocotools'.

Examples
--------
>>> import numpy as np
>>> rle = encode(np.asfortranarray(np.ones((2, 3), dtype=np.uint8)))
>>> int(area(rle)), toBbox(rle).tolist(), decode(rle).sum()
(6, [0.0, 0.0, 3.0, 2.0], np.uint64(6))
"""

import warnings

import pycocotools.mask as _real
from pycocotools.mask import area, encode, frPyObjects, iou, merge, toBbox

__all__ = ["area", "decode", "encode", "frPyObjects", "iou", "merge", "toBbox"]


def decode(rleObjs):  # noqa: N803 - pycocotools' name
    """Binary mask(s) of compressed RLE: (h, w) for one dict, (h, w, n) for a list."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="__array__ implementation doesn't accept",
                                category=DeprecationWarning)
        return _real.decode(rleObjs)
