"""Compressed RLE masks held as one text: a ``masks`` column made on first read.

The numpy segm results reader (:mod:`deteval.io._numeric_segm`) has every ``counts``
string of a file back to back in one ``bytes`` text. Making 50,000 ``bytes`` objects and
dicts of it costs ~45 ms holding the GIL, while a COCO segm evaluation hands pycocotools'
``iou`` only the masks of pairs that can match (~18% of them on the bench's segm case). So
:class:`~deteval.data.Detections` may hold a :class:`MaskText` instead of its ``masks``:
the column is made, whole, when it is first read, and :func:`deteval.data.masks_of` makes
the dicts of some rows only (docs/data-model.md §1).

Examples
--------
>>> masks = MaskText(b"52PY8", np.array([0, 2]), np.array([2, 5]),
...                  np.array([[7, 1], [3, 4]]))
>>> masks.dicts().tolist()
[{'size': (7, 1), 'counts': b'52'}, {'size': (3, 4), 'counts': b'PY8'}]
>>> masks.select(np.array([1])).strings()
[b'PY8']
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MaskText"]


class MaskText:
    """N compressed RLE masks in one text: mask ``i`` is ``{"size": (h, w), "counts":
    text[starts[i]:ends[i]]}`` with ``(h, w) = sizes[i]``.

    Parameters
    ----------
    text : bytes
        The ``counts`` strings (escapes undone).
    starts, ends : ndarray of int, shape (N,)
        Each mask's string in ``text``.
    sizes : ndarray of int, shape (N, 2)
        Each mask's ``[h, w]``.
    """

    __slots__ = ("ends", "sizes", "starts", "text")

    def __init__(self, text: bytes, starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray):
        self.text = text
        self.starts = np.asarray(starts, dtype=np.int64)
        self.ends = np.asarray(ends, dtype=np.int64)
        self.sizes = np.asarray(sizes, dtype=np.int64).reshape(-1, 2)
        if not len(self.starts) == len(self.ends) == len(self.sizes):
            raise ValueError("starts, ends and sizes must have one row per mask")

    def __len__(self) -> int:
        return len(self.starts)

    def __getstate__(self) -> tuple:
        return self.text, self.starts, self.ends, self.sizes

    def __setstate__(self, state: tuple) -> None:
        self.text, self.starts, self.ends, self.sizes = state

    def select(self, selection: Any) -> MaskText:
        """The masks of ``selection`` (a slice, boolean mask or row indices), sharing the
        text."""
        if isinstance(selection, slice) and selection == slice(None):
            return self
        return MaskText(self.text, self.starts[selection], self.ends[selection],
                        self.sizes[selection])

    def strings(self, rows: np.ndarray | None = None) -> list[bytes]:
        """The ``counts`` strings of ``rows`` (default: every mask), in that order."""
        starts = self.starts if rows is None else self.starts[rows]
        ends = self.ends if rows is None else self.ends[rows]
        return list(map(self.text.__getitem__, map(slice, starts.tolist(), ends.tolist())))

    def dicts(self, rows: np.ndarray | None = None) -> np.ndarray:
        """``{"size": (h, w), "counts": bytes}`` of ``rows`` (default: every mask), an object
        array; masks of one size share one ``(h, w)`` tuple (tuples: not changed in place)."""
        sizes = self.sizes if rows is None else self.sizes[rows]
        strings = self.strings(rows)
        if len(sizes) and 0 <= sizes.min() and sizes.max() < 1 << 31:
            unique, inverse = np.unique(sizes[:, 0] << 31 | sizes[:, 1], return_inverse=True)
            heights, widths = np.divmod(unique, 1 << 31)
            shared = list(zip(heights.tolist(), widths.tolist()))
            pairs = list(map(shared.__getitem__, inverse.ravel().tolist()))
        else:
            pairs = list(map(tuple, sizes.tolist()))
        return np.fromiter(({"size": size, "counts": string}
                            for size, string in zip(pairs, strings)),
                           dtype=object, count=len(strings))
