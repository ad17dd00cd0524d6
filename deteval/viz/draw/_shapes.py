"""Shapes drawn on the overlay: boxes, paths, polygons, masks (outline and translucent fill)
and keypoint skeletons."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

_FAR = 1e6  # coordinates are clipped to +-this before drawing (Pillow takes C ints)


def _pattern(dash: str, width: int) -> tuple[int, int] | None:
    """(on, off) lengths in pixels, or None for a solid line."""
    if dash == "dashed":
        return max(4, 4 * width), max(3, 2 * width)
    if dash == "dotted":
        return max(1, width), max(2, 2 * width)
    return None


def _clip(value: float, low: float, high: float) -> int:
    return int(math.floor(min(max(value, low), high)))


def _draw_box(draw: ImageDraw.ImageDraw, box: np.ndarray, rgba: tuple, width: int,
              pattern: tuple[int, int] | None, size: tuple[int, int]) -> None:
    """The box's outline on the pixels just inside it (pixel columns x1 .. ceil(x2) - 1)."""
    w, h = size
    margin = 2 * width + 2
    x0 = _clip(box[0], -margin, w + margin)
    y0 = _clip(box[1], -margin, h + margin)
    x1 = max(_clip(math.ceil(box[2]) - 1, -margin, w + margin), x0)
    y1 = max(_clip(math.ceil(box[3]) - 1, -margin, h + margin), y0)
    if pattern is None:
        draw.rectangle([x0, y0, x1, y1], outline=rgba, width=width)
        return
    on, off = pattern
    t = width - 1
    # Each edge as a strip of pixels, dashed from its corner so that corners are drawn.
    for horizontal, fixed in ((True, y0), (True, max(y1 - t, y0)), (False, x0),
                              (False, max(x1 - t, x0))):
        lo, hi = (x0, x1) if horizontal else (y0, y1)
        for start in range(lo, hi + 1, on + off):
            end = min(start + on - 1, hi)
            if horizontal:
                draw.rectangle([start, fixed, end, min(fixed + t, y1)], fill=rgba)
            else:
                draw.rectangle([fixed, start, min(fixed + t, x1), end], fill=rgba)


def _draw_path(draw: ImageDraw.ImageDraw, points: np.ndarray, rgba: tuple, width: int,
               pattern: tuple[int, int] | None) -> None:
    """A closed polyline (first point repeated last), solid or dashed along its length."""
    points = np.clip(np.asarray(points, dtype=np.float64), -_FAR, _FAR)
    if len(points) < 2:
        return
    if pattern is None:
        draw.line([tuple(p) for p in points.tolist()], fill=rgba, width=width, joint="curve")
        return
    on, off = pattern
    period = on + off
    travelled = 0.0
    for a, b in zip(points[:-1], points[1:]):
        length = float(np.hypot(*(b - a)))
        if length == 0:
            continue
        # Dash intervals of the pattern that overlap this segment, in path distance.
        first = math.floor(travelled / period) * period
        for s in np.arange(first, travelled + length, period):
            lo, hi = max(s, travelled), min(s + on, travelled + length)
            if hi > lo:
                p = a + (b - a) * ((lo - travelled) / length)
                q = a + (b - a) * ((hi - travelled) / length)
                draw.line([tuple(p), tuple(q)], fill=rgba, width=width)
        travelled += length


def _draw_polygon(draw, geometry, rgba, width, pattern) -> bool:
    """Outline a shapely (multi)polygon; False if it has nothing to draw."""
    drawn = False
    for part in getattr(geometry, "geoms", (geometry,)):
        if getattr(part, "is_empty", True) or not hasattr(part, "exterior"):
            continue
        for ring in (part.exterior, *part.interiors):
            _draw_path(draw, np.asarray(ring.coords)[:, :2], rgba, width, pattern)
            drawn = True
    return drawn


def _decode_mask(rle: Any) -> np.ndarray:
    from pycocotools import mask as mask_utils

    height, width = (int(v) for v in rle["size"])
    counts = rle["counts"]
    if isinstance(counts, list):  # uncompressed RLE: compress a copy first
        rle = mask_utils.frPyObjects({"size": [height, width], "counts": list(counts)},
                                     height, width)
    else:
        rle = {"size": [height, width], "counts": counts}
    with warnings.catch_warnings():
        # pycocotools' Masks.__array__ predates numpy 2's copy keyword; harmless here.
        warnings.filterwarnings("ignore", message="__array__ implementation doesn't accept",
                                category=DeprecationWarning)
        return np.asarray(mask_utils.decode(rle), dtype=bool)


def _draw_mask(overlay: Image.Image, rle: Any, rgba: tuple, width: int,
               pattern: tuple[int, int] | None, fill: int = 0) -> bool:
    """Outline a mask on its inner boundary, ``width`` pixels thick, after filling it with
    the colour at opacity ``fill`` (0-255, 0: no fill); False if empty."""
    w, h = overlay.size
    mask = _decode_mask(rle)[:h, :w]   # a mask larger than the image is cropped to it
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if not len(rows):
        return False
    y0, y1, x0, x1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    region = np.pad(mask[y0:y1, x0:x1], 1)   # outside the image counts as background
    inner = region.copy()
    for _ in range(width):   # erode by 4-neighbours
        inner[1:-1, 1:-1] &= (inner[:-2, 1:-1] & inner[2:, 1:-1]
                              & inner[1:-1, :-2] & inner[1:-1, 2:])
    outline = (region & ~inner)[1:-1, 1:-1]
    if pattern is not None:
        on, off = pattern
        yy, xx = np.mgrid[y0:y1, x0:x1]
        outline &= (xx + yy) % (on + off) < on
    x0, y0 = int(x0), int(y0)
    if fill and overlay.mode == "RGBA":
        # Replaces what lies under the mask on the overlay: the image shows through.
        inside = Image.fromarray(region[1:-1, 1:-1].astype(np.uint8) * 255, mode="L")
        overlay.paste(Image.new("RGBA", inside.size, (*rgba[:3], int(fill))), (x0, y0), inside)
    elif fill:   # drawn on the picture itself (RGB): blended at once
        inside = Image.fromarray(region[1:-1, 1:-1].astype(np.uint8) * int(fill), mode="L")
        overlay.paste(rgba[:3], (x0, y0, x0 + inside.width, y0 + inside.height), inside)
    stencil = Image.fromarray(outline.astype(np.uint8) * 255, mode="L")
    colour = rgba if overlay.mode == "RGBA" else rgba[:3]
    overlay.paste(colour, (x0, y0, x0 + stencil.width, y0 + stencil.height), stencil)
    return True



#: The COCO person skeleton (``categories[].skeleton`` of person_keypoints), 0-based pairs.
COCO_PERSON_SKELETON = ((15, 13), (13, 11), (16, 14), (14, 12), (11, 12), (5, 11), (6, 12),
                        (5, 6), (5, 7), (6, 8), (7, 9), (8, 10), (1, 2), (0, 1), (0, 2),
                        (1, 3), (2, 4), (3, 5), (4, 6))


def joint_within(dt_points: np.ndarray, gt_points: np.ndarray, area: float,
                 sigmas: np.ndarray, threshold: float) -> np.ndarray:
    """Per joint of a detection: is its OKS term ``exp(-d^2 / (2 s^2 k^2))`` at least
    ``threshold``, with ``d`` the distance to the object's joint, ``s^2`` the object's area
    and ``k = 2 sigma`` (the terms COCO's OKS averages)? False where the object's joint is
    not labelled (``v = 0``); shape (K,).

    Examples
    --------
    >>> dt = np.array([[10.0, 10, 2], [40, 40, 2]])
    >>> gt = np.array([[11.0, 10, 2], [10, 10, 2]])
    >>> joint_within(dt, gt, 400.0, np.array([0.05, 0.05]), 0.5).tolist()
    [True, False]
    """
    k = min(len(dt_points), len(gt_points), len(sigmas))
    d2 = ((dt_points[:k, :2] - gt_points[:k, :2]) ** 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        term = np.exp(-d2 / (2.0 * max(float(area), np.spacing(1)) * (2.0 * sigmas[:k]) ** 2))
    out = np.zeros(len(dt_points), bool)
    out[:k] = (term >= threshold) & (gt_points[:k, 2] > 0)
    return out


def _draw_keypoints(draw: ImageDraw.ImageDraw, points: np.ndarray, skeleton, rgba: tuple,
                    width: int, pattern: tuple[int, int] | None,
                    joint_rgba: list[tuple] | None = None) -> bool:
    """The skeleton's edges between labelled joints (``v > 0``; a detection's joints are
    all labelled) in ``rgba`` and a dot per joint, coloured by ``joint_rgba`` if given;
    False when no joint is labelled."""
    points = np.asarray(points, dtype=np.float64)
    shown = (points[:, 2] > 0) & np.isfinite(points[:, :2]).all(axis=1)
    if not shown.any():
        return False
    xy = np.clip(points[:, :2], -_FAR, _FAR)
    for a, b in skeleton:
        if a < len(points) and b < len(points) and shown[a] and shown[b]:
            _draw_path(draw, xy[[a, b]], rgba, width, pattern)
    r = max(2, width + 1)
    for j in np.flatnonzero(shown).tolist():
        x, y = xy[j]
        colour = rgba if joint_rgba is None else joint_rgba[j]
        draw.ellipse([x - r, y - r, x + r, y + r], fill=colour, outline=(0, 0, 0, 255))
    return True
