"""pycocotools' C mask routines (``pycocotools._mask``), imported on first use.

Every module of :mod:`deteval.masks` that calls a routine calls :func:`mask_api` at that
moment (never a reference kept from import time), so a test can replace the routines of one
module with ``monkeypatch.setattr(deteval.masks.<module>, "mask_api", ...)``.
"""

from __future__ import annotations

__all__ = ["mask_api"]


def mask_api():
    """The module ``pycocotools._mask`` (imported late, to keep ``import deteval`` light).

    Examples
    --------
    >>> mask_api().area([{"size": [2, 2], "counts": b"13"}]).tolist()
    [3]
    """
    from pycocotools import _mask

    return _mask
