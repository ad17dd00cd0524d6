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


#: Distinct label texts whose rendering is kept (labels repeat: "FN person", "ign car").
_RENDERED_CACHE = 4096


@lru_cache(maxsize=_RENDERED_CACHE)
def _rendered(font, text: str) -> tuple[Any, int, int, int]:
    """``(mask, left, top, right)``: the text rendered as Pillow's ``ImageDraw.text`` renders
    it (anchor "la", mode L, no fractional start), and its box relative to the anchor, which
    is ``font.getbbox(text)``'s (both come from the same FreeType layout). One FreeType pass
    both measures and draws a label, and a repeated text is rendered once; the mask is only
    ever read. Fonts without ``getmask2`` (Pillow's bitmap font) give no mask."""
    if not text:
        return None, 0, 0, 0
    if not hasattr(font, "getmask2"):
        left, top, right, _ = font.getbbox(text)
        return None, left, top, right
    mask, (left, top) = font.getmask2(text, "L")
    return mask, left, top, left + mask.size[0]


def _measure(font, text: str, pad: int) -> tuple[int, int, tuple[int, int, int, int]]:
    _, left, _, right = _rendered(font, text)
    ref = _reference(font)
    return int(math.ceil(right - left)) + 2 * pad, int(math.ceil(ref[3] - ref[1])) + 2 * pad, \
        (left, ref[1], right, ref[3])


def _draw_text(draw, label: _Label, fill: tuple[int, ...]) -> None:
    """``draw.text(label.origin, label.text, font=label.font, fill=fill)``, pixel for pixel,
    from the mask :func:`_rendered` keeps (the steps of Pillow's ``ImageDraw.text`` for one
    line at integer coordinates)."""
    mask, left, top, _ = _rendered(label.font, label.text)
    x, y = label.origin
    if mask is None or x != int(x) or y != int(y):
        draw.text(label.origin, label.text, font=label.font, fill=fill)
        return
    ink, fill_ink = draw._getink(fill)
    draw.draw.draw_bitmap((int(x) + left, int(y) + top), mask,
                          fill_ink if ink is None else ink)


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
    rows = (top - lh, top, bottom + 1, bottom - lh + 1, top - 2 * lh, bottom + 1 + lh,
            top + lh, bottom + 1 - 2 * lh, top - 3 * lh, bottom + 1 + 2 * lh)
    # Twenty small rectangles: plain integers, one array at the end (numpy calls per
    # label cost more than the arithmetic).
    rects = []
    for row in rows:
        y0 = min(max(row, 0), h - lh)
        rects += [(left, y0, left + lw - 1, y0 + lh - 1), (right, y0, right + lw - 1, y0 + lh - 1)]
    return np.array(rects, dtype=np.int64)


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
