"""Labels: fitted inside the image and placed greedily where they overlap nothing."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
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


#: Bytes of rendered label masks kept (labels repeat: "FN person", "ign car"); the oldest
#: are dropped first. 8 MiB holds several thousand labels of a 12-pixel font.
_RENDERED_BYTES = 8 << 20
_rendered_cache: OrderedDict[tuple[Any, str], tuple[Any, int, int, int]] = OrderedDict()
_rendered_lock = threading.Lock()
_rendered_total = 0


def _rendered(font, text: str) -> tuple[Any, int, int, int]:
    """``(mask, left, top, right)``: the text rendered as Pillow's ``ImageDraw.text`` renders
    it (anchor "la", mode L, no fractional start), and its box relative to the anchor, which
    is ``font.getbbox(text)``'s (both come from the same FreeType layout). One FreeType pass
    both measures and draws a label, and a repeated text is rendered once (kept within
    ``_RENDERED_BYTES``); the mask is only ever read. Fonts without ``getmask2`` (Pillow's
    bitmap font) give no mask."""
    global _rendered_total
    key = (font, text)
    with _rendered_lock:
        found = _rendered_cache.get(key)
    if found is not None:
        return found
    if not text:
        found = None, 0, 0, 0
    elif not hasattr(font, "getmask2"):
        left, top, right, _ = font.getbbox(text)
        found = None, left, top, right
    else:
        mask, (left, top) = font.getmask2(text, "L")
        found = mask, left, top, left + mask.size[0]
    size = 0 if found[0] is None else found[0].size[0] * found[0].size[1]
    with _rendered_lock:
        if key not in _rendered_cache and size <= _RENDERED_BYTES:
            _rendered_cache[key] = found
            _rendered_total += size
            while _rendered_total > _RENDERED_BYTES:
                _, (mask, *_) = _rendered_cache.popitem(last=False)
                _rendered_total -= 0 if mask is None else mask.size[0] * mask.size[1]
    return found


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
    s = font_size
    while True:   # about 6% smaller each step (1 px for small fonts), down to _MIN_FONT
        font, pad = _font(s), max(1, s // 8)
        lw, lh, bbox = _measure(font, text, pad)
        if (lw <= w and lh <= h) or s <= _MIN_FONT:
            break
        s = max(_MIN_FONT, s - max(1, s // 16))
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
    taken = taken.tolist() if isinstance(taken, np.ndarray) else list(taken)
    best = _first_free(rects, taken)
    if best is None:
        if free_only:
            return None
        best = _least_covered(np.array(rects, dtype=np.int64),
                              np.array(taken, dtype=np.int64).reshape(-1, 4))
    rect = rects[best]
    return _Label(text, font, rect, (rect[0] + pad - bbox[0], rect[1] + pad - bbox[1]))


def _candidates(box: np.ndarray, lw: int, lh: int, w: int,
                h: int) -> list[tuple[int, int, int, int]]:
    """Inclusive rectangles a label may take, moved into the image, best first: above the
    box, inside its top, below it, inside its bottom (each at its left edge, then at its
    right edge), then stacked: a row further above and below, a row further inside, two
    rows further out."""
    x1, y1, x2, y2 = (float(v) for v in box[:4])
    left = _clip(x1, 0, w - lw)
    right = _clip(math.ceil(x2) - lw, 0, w - lw)
    top = _clip(y1, -_FAR, _FAR)
    bottom = _clip(math.ceil(y2) - 1, -_FAR, _FAR)
    rects = []
    for row in (top - lh, top, bottom + 1, bottom - lh + 1, top - 2 * lh, bottom + 1 + lh,
                top + lh, bottom + 1 - 2 * lh, top - 3 * lh, bottom + 1 + 2 * lh):
        y0 = min(max(row, 0), h - lh)
        rects += [(left, y0, left + lw - 1, y0 + lh - 1), (right, y0, right + lw - 1, y0 + lh - 1)]
    return rects


def _first_free(rects: list[tuple[int, int, int, int]],
                taken: list[tuple[int, int, int, int]]) -> int | None:
    """The first of ``rects`` that overlaps none of ``taken`` (inclusive rectangles), or
    None. Plain integers: a label has 20 candidates and an image a few labels, and the
    first candidate is usually free."""
    for n, (a0, b0, a1, b1) in enumerate(rects):
        for c0, d0, c1, d1 in taken:
            if a0 <= c1 and c0 <= a1 and b0 <= d1 and d0 <= b1:
                break
        else:
            return n
    return None


def _least_covered(rects: np.ndarray, taken: np.ndarray) -> int:
    """The one of ``rects`` (n, 4) the rectangles ``taken`` (m, 4) cover least (the sum of
    the areas it shares with them; the first on ties). Vectorised over both."""
    if not len(taken):
        return 0
    ix = (np.minimum(rects[:, None, 2], taken[None, :, 2])
          - np.maximum(rects[:, None, 0], taken[None, :, 0]) + 1).clip(0)
    iy = (np.minimum(rects[:, None, 3], taken[None, :, 3])
          - np.maximum(rects[:, None, 1], taken[None, :, 1]) + 1).clip(0)
    return int(np.argmin((ix * iy).sum(axis=1)))
