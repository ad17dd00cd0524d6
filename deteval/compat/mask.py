"""``pycocotools.mask``: the RLE mask routines, re-exported from pycocotools itself.

deteval computes mask IoU with these very routines, so code that calls ``mask.iou``,
``mask.encode`` or ``mask.frPyObjects`` through :mod:`deteval.compat` gets pycocotools'
numbers and types.

Examples
--------
>>> import numpy as np
>>> rle = encode(np.asfortranarray(np.ones((2, 3), dtype=np.uint8)))
>>> int(area(rle)), toBbox(rle).tolist()
(6, [0.0, 0.0, 3.0, 2.0])
"""

from pycocotools.mask import area, decode, encode, frPyObjects, iou, merge, toBbox

__all__ = ["area", "decode", "encode", "frPyObjects", "iou", "merge", "toBbox"]
