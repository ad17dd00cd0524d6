"""Labels: fitted inside the image and placed greedily where they overlap nothing."""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from ._shapes import _FAR, _clip
from ._styles import _font

_MIN_FONT = 6


class _Label(NamedTuple):
    text: str
    font: Any
    rect: tuple[int, int, int, int]   # inclusive pixel rectangle of the label's background
    origin: tuple[float, float]       # where Pillow draws the text (anchor "la")


@lru_cache(maxsize=64)
def _reference(font) -> tuple[int, int, int, int]:
    """The vertical extent of a line of text in ``font`` (one per font: labels align)."""
    return font.getbbox("Ag0|(")


def _measure(font, text: str, pad: int) -> tuple[int, int, tuple[int, int, int, int]]:
    left, _, right, _ = font.getbbox(text) if text else (0, 0, 0, 0)
    ref = _reference(font)
    return int(math.ceil(right - left)) + 2 * pad, int(math.ceil(ref[3] - ref[1])) + 2 * pad, \
        (left, ref[1], right, ref[3])


def _place_label(text: str, box: np.ndarray, size: tuple[int, int], font_size: int,
                 taken: Iterable[tuple[int, int, int, int]] = (), *,
                 free_only: bool = False) -> _Label | None:
    """Fit a label in the image at the box's left edge; shrink, then truncate, to fit.

    Greedy: the first of the candidate positions (:func:`_candidates`) that overlaps no
    rectangle of ``taken`` wins, else the one they cover least (None with ``free_only``).
    Returns None when not even a truncated label fits (an image a few pixels high).
    """
    w, h = size
    sizes = [font_size]
    while sizes[-1] > _MIN_FONT:   # about 6% smaller each step (1 px for small fonts)
        sizes.append(max(_MIN_FONT, sizes[-1] - max(1, sizes[-1] // 16)))
    for s in sizes:
        font, pad = _font(s), max(1, s // 8)
        lw, lh, bbox = _measure(font, text, pad)
        if lw <= w and lh <= h:
            break
    if lh > h:
        return None
    if lw > w:   # still too wide at the smallest size: cut the text
        cut = text
        while cut and _measure(font, cut + "..", pad)[0] > w:
            cut = cut[:-1]
        if not cut:
            return None
        text = cut + ".."
        lw, lh, bbox = _measure(font, text, pad)
    rects = _candidates(box, lw, lh, w, h)
    taken = np.asarray(list(taken) if not isinstance(taken, np.ndarray) else taken,
                       dtype=np.int64).reshape(-1, 4)
    best, covered = _least_covered(rects, taken)
    if covered and free_only:
        return None
    rect = tuple(int(v) for v in rects[best])
    return _Label(text, font, rect, (rect[0] + pad - bbox[0], rect[1] + pad - bbox[1]))


def _candidates(box: np.ndarray, lw: int, lh: int, w: int, h: int) -> np.ndarray:
    """Inclusive rectangles (n, 4) a label may take, moved into the image, best first:
    above the box, inside its top, below it, inside its bottom (each at its left edge, then
    at its right edge), then stacked: a row further above and below, a row further inside,
    two rows further out."""
    left = _clip(box[0], 0, w - lw)
    right = _clip(math.ceil(box[2]) - lw, 0, w - lw)
    top = _clip(box[1], -_FAR, _FAR)
    bottom = _clip(math.ceil(box[3]) - 1, -_FAR, _FAR)
    rows = np.array([top - lh, top, bottom + 1, bottom - lh + 1, top - 2 * lh, bottom + 1 + lh,
                     top + lh, bottom + 1 - 2 * lh, top - 3 * lh, bottom + 1 + 2 * lh])
    y0 = np.clip(rows, 0, h - lh).repeat(2)
    x0 = np.tile([left, right], len(rows))
    return np.stack([x0, y0, x0 + lw - 1, y0 + lh - 1], axis=1)


def _least_covered(rects: np.ndarray, taken: np.ndarray) -> tuple[int, int]:
    """The first of ``rects`` overlapping none of ``taken``, else the least covered (the
    sum of the areas it shares with them; the first on ties), and that area. Vectorised
    over both."""
    if not len(taken):
        return 0, 0
    ix = (np.minimum(rects[:, None, 2], taken[None, :, 2])
          - np.maximum(rects[:, None, 0], taken[None, :, 0]) + 1).clip(0)
    iy = (np.minimum(rects[:, None, 3], taken[None, :, 3])
          - np.maximum(rects[:, None, 1], taken[None, :, 1]) + 1).clip(0)
    covered = (ix * iy).sum(axis=1)
    best = int(np.argmin(covered))
    return best, int(covered[best])
