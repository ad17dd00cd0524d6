"""Matches drawn on images with Pillow: what each detection and each object became.

Every detection and object is drawn in the style of its outcome (:mod:`deteval.outcomes`),
so a picture shows the very matches behind the confusion matrix and the counts of the
report. The colours are the Okabe–Ito palette, which stays distinct under the common forms
of colour blindness, and line styles and label tags carry the outcome too:

===================  ==============  ======  =====  =====================================
key                  colour          line    tag    drawn for
===================  ==============  ======  =====  =====================================
``tp``               bluish green    solid          a detection matching an object
``duplicate``        yellow          solid   dup    FP: a second detection of an object
``wrong_class``      reddish purple  solid   cls    FP: on an object of another class
``localization``     orange          solid   loc    FP: its object, boxed badly
``background``       vermillion      solid   bg     FP: on nothing
``fn``               sky blue        dashed  FN     a missed object
``ignored``          blue            dotted  ign    crowd regions, ignored objects, the
                                                    detections they absorbed, detections
                                                    of an unknown category
``below_threshold``  black           dotted  low    detections under the score threshold
===================  ==============  ======  =====  =====================================

:data:`STYLES` holds them (tests and the report legend read the same values) and
:func:`legend` lists the entries shown. A shape is outlined from its mask (``masks``,
compressed RLE) if it has one, else from its polygon (``polygons``, shapely), else from its
rotated box (``rboxes``), else its box.
Labels give the tag, class name, score and IoU; the IoU of a wrong-class detection is with
the object (of the class named in brackets) it sits on.

Image modes
-----------
The input image is never modified; the result is a new image of the same size and mode.
Everything is drawn on a transparent RGBA layer first, then laid over the image in its own
mode: RGB and RGBA get the exact colours (drawn strokes are opaque); L, LA, I, I;16 and F
(no colour) get each colour's luminance (0-255), times 257 for I;16 and for I images with
values above 255, divided by 255 for F images within [0, 1]; ``1`` gets the luminance
thresholded at 128; P (palette) images are drawn in RGB and re-quantised to an adaptive
palette of at most 256 colours (close to, not always exactly, the style colours); other
modes (CMYK, YCbCr, ...) are drawn in RGB and converted back.

Examples
--------
>>> import numpy as np
>>> from PIL import Image
>>> from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
>>> ds = Dataset(Images(ids=[1], widths=[64], heights=[48]), Categories(ids=[1]),
...              GroundTruth(image_index=[0], category_index=[0], boxes=[[8, 8, 40, 40]]))
>>> dt = Detections(image_index=[0], category_index=[0], boxes=[[8, 8, 40, 40]], scores=[0.9])
>>> picture = draw_matches(Image.new("RGB", (64, 48)), ds, dt, 0, labels=False)
>>> picture.getpixel((8, 20)) == STYLES["tp"].rgb
True
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .._validation import positive_integer
from ..data import Dataset, Detections
from ..errors import FormatWarning
from ..outcomes import DT_OUTCOMES, FP_OUTCOMES, GT_OUTCOMES, Outcomes, match_outcomes

__all__ = [
    "DEFAULT_SHOW",
    "SHOW_CHOICES",
    "STYLES",
    "Style",
    "draw_matches",
    "legend",
    "select_images",
    "write_drawings",
]


@dataclass(frozen=True)
class Style:
    """How one outcome is drawn.

    Attributes
    ----------
    key : str
        The outcome (a key of :data:`STYLES`).
    rgb : tuple of int
        The colour, 0-255 per channel.
    dash : {"solid", "dashed", "dotted"}
    tag : str
        Prefix of the labels ("" for true positives).
    label : str
        Legend text.
    description : str
        One sentence: what is drawn in this style.
    """

    key: str
    rgb: tuple[int, int, int]
    dash: str
    tag: str
    label: str
    description: str

    @property
    def hex(self) -> str:
        """The colour as ``#rrggbb``."""
        return "#{:02x}{:02x}{:02x}".format(*self.rgb)


#: The style of each outcome, in legend order (see the module documentation).
STYLES: MappingProxyType[str, Style] = MappingProxyType({s.key: s for s in (
    Style("tp", (0, 158, 115), "solid", "", "true positive",
          "A detection matching an object of its class."),
    Style("duplicate", (240, 228, 66), "solid", "dup", "FP: duplicate",
          "A second detection of an object already found by a higher-scoring one."),
    Style("wrong_class", (204, 121, 167), "solid", "cls", "FP: wrong class",
          "A detection on an object of another class."),
    Style("localization", (230, 159, 0), "solid", "loc", "FP: localization",
          "A detection on an object of its class with too low an IoU (0.1 or more)."),
    Style("background", (213, 94, 0), "solid", "bg", "FP: background",
          "A detection on no object."),
    Style("fn", (86, 180, 233), "dashed", "FN", "false negative (missed)",
          "An object no detection of its class matched."),
    Style("ignored", (0, 114, 178), "dotted", "ign", "ignored",
          "A crowd region or ignored (difficult) object, or a detection it absorbed, or a "
          "detection of a category unknown to the ground truth."),
    Style("below_threshold", (0, 0, 0), "dotted", "low", "below the score threshold",
          "A detection scoring under the score threshold (not matched)."),
)})

#: What ``show`` may name: the outcome groups and each false-positive reason.
SHOW_CHOICES = ("tp", "fp", "fn", "ignored", "below_threshold", *FP_OUTCOMES)
#: Drawn by default: everything but the detections below the score threshold.
DEFAULT_SHOW = ("tp", "fp", "fn", "ignored")
_GROUPS = {"fp": FP_OUTCOMES}
# Bottom to top: what matters most is drawn last.
_LAYER = {"below_threshold": 0, "ignored": 0, "fn": 1, "duplicate": 2, "wrong_class": 2,
          "localization": 2, "background": 2, "tp": 3}
_MIN_FONT = 6
_MAX_FONT = 256   # default font size: min(w, h) / 32, from 8 px up to this
_FAR = 1e6  # coordinates are clipped to +-this before drawing (Pillow takes C ints)


def legend(show: Iterable[str] = DEFAULT_SHOW) -> list[dict[str, Any]]:
    """The legend entries of the outcomes ``show`` draws, in :data:`STYLES` order.

    Returns
    -------
    list of dict
        ``key``, ``label``, ``colour`` (``#rrggbb``), ``rgb``, ``dash``, ``tag`` and
        ``description``.

    Examples
    --------
    >>> [(e["key"], e["colour"], e["dash"]) for e in legend(["tp", "fn"])]
    [('tp', '#009e73', 'solid'), ('fn', '#56b4e9', 'dashed')]
    """
    keys = _shown_keys(show)
    return [{"key": s.key, "label": s.label, "colour": s.hex, "rgb": s.rgb, "dash": s.dash,
             "tag": s.tag, "description": s.description}
            for s in STYLES.values() if s.key in keys]


def _shown_keys(show: Iterable[str] | str) -> frozenset[str]:
    if isinstance(show, str):
        show = (show,)
    try:
        names = list(show)
    except TypeError:
        raise TypeError(f"show must be a sequence of names; got {type(show).__name__}") from None
    keys = set()
    for name in names:
        if name not in SHOW_CHOICES:
            raise ValueError(f"show must name outcomes among {', '.join(SHOW_CHOICES)}; got "
                             f"{name!r}")
        keys.update(_GROUPS.get(name, (name,)))
    return frozenset(keys)


# --------------------------------------------------------------------------------------
# Primitives
# --------------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _font(size: int):
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: one bitmap size only
        return ImageFont.load_default()


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
               pattern: tuple[int, int] | None) -> bool:
    """Outline a mask on its inner boundary, ``width`` pixels thick; False if empty."""
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
    stencil = Image.fromarray(outline.astype(np.uint8) * 255, mode="L")
    overlay.paste(Image.new("RGBA", stencil.size, rgba), (int(x0), int(y0)), stencil)
    return True


class _Label(NamedTuple):
    text: str
    font: Any
    rect: tuple[int, int, int, int]   # inclusive pixel rectangle of the label's background
    origin: tuple[float, float]       # where Pillow draws the text (anchor "la")


def _measure(font, text: str, pad: int) -> tuple[int, int, tuple[int, int, int, int]]:
    left, _, right, _ = font.getbbox(text) if text else (0, 0, 0, 0)
    ref = font.getbbox("Ag0|(")
    return int(math.ceil(right - left)) + 2 * pad, int(math.ceil(ref[3] - ref[1])) + 2 * pad, \
        (left, ref[1], right, ref[3])


def _overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def _place_label(text: str, box: np.ndarray, size: tuple[int, int], font_size: int,
                 taken: Iterable[tuple[int, int, int, int]] = ()) -> _Label | None:
    """Fit a label in the image at the box's left edge; shrink, then truncate, to fit.

    Tried in turn: above the box, inside its top, below it, inside its bottom (each moved
    into the image); the first that overlaps no rectangle of ``taken`` wins, else the
    first. Returns None when not even a truncated label fits (an image a few pixels high).
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
    x0 = _clip(box[0], 0, w - lw)
    top = _clip(box[1], -_FAR, _FAR)
    bottom = _clip(math.ceil(box[3]) - 1, -_FAR, _FAR)
    taken = list(taken)
    rects = []
    for y0 in (top - lh, top, bottom + 1, bottom - lh + 1):
        y0 = min(max(y0, 0), h - lh)
        rect = (x0, y0, x0 + lw - 1, y0 + lh - 1)
        if not any(_overlaps(rect, other) for other in taken):
            break
        rects.append(rect)
    else:
        rect = rects[0]
    return _Label(text, font, rect, (x0 + pad - bbox[0], rect[1] + pad - bbox[1]))


def _text_colour(rgb: tuple[int, int, int]) -> tuple[int, int, int, int]:
    luminance = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
    return (0, 0, 0, 255) if luminance > 140 else (255, 255, 255, 255)


# --------------------------------------------------------------------------------------
# Image modes
# --------------------------------------------------------------------------------------


def _as_image(image: Any) -> Image.Image:
    if isinstance(image, Image.Image):
        return image
    if isinstance(image, np.ndarray):
        try:
            return Image.fromarray(image)
        except (TypeError, ValueError) as error:
            raise TypeError(f"image must be a PIL image or an array Pillow can read "
                            f"(H x W, H x W x 3 or H x W x 4 of uint8); got {image.dtype} "
                            f"array of shape {image.shape}: {error}") from None
    raise TypeError(f"image must be a PIL.Image.Image or a numpy array; got "
                    f"{type(image).__name__}")


def _compose(image: Image.Image, overlay: Image.Image) -> Image.Image:
    """The overlay laid over a copy of ``image``, in ``image``'s mode (see the module doc)."""
    mode = image.mode
    alpha = overlay.getchannel("A")
    if mode in ("RGB", "RGBA"):
        out = image.copy()
        out.paste(overlay.convert(mode) if mode == "RGB" else overlay, (0, 0), alpha)
        return out
    if mode in ("L", "LA"):
        out = image.copy()
        out.paste(overlay.convert(mode), (0, 0), alpha)
        return out
    if mode == "1":
        grey = image.convert("L")
        grey.paste(overlay.convert("L"), (0, 0), alpha)
        return grey.convert("1", dither=Image.Dither.NONE)
    if mode in ("I", "F") or mode.startswith("I;16"):
        pixels = np.asarray(image)
        grey = np.asarray(overlay.convert("L"), dtype=np.float64)
        if mode.startswith("I;16") or (mode == "I" and pixels.size and pixels.max() > 255):
            grey = grey * 257.0                 # 16-bit range
        elif mode == "F" and pixels.size and np.nanmax(np.abs(pixels)) <= 1.0:
            grey = grey / 255.0                 # a [0, 1] float image
        a = np.asarray(alpha, dtype=np.float64) / 255.0
        mixed = pixels * (1.0 - a) + grey * a
        if pixels.dtype.kind in "iu":
            info = np.iinfo(pixels.dtype)
            mixed = np.clip(np.rint(mixed), info.min, info.max)
        out = Image.fromarray(mixed.astype(pixels.dtype))
        return out if out.mode == mode else out.convert(mode)
    if mode in ("P", "PA"):
        has_alpha = mode == "PA" or "transparency" in image.info
        rgb = image.convert("RGBA" if has_alpha else "RGB")
        rgb.paste(overlay if has_alpha else overlay.convert("RGB"), (0, 0), alpha)
        if has_alpha:
            out = rgb.quantize(colors=256, method=Image.Quantize.FASTOCTREE,
                               dither=Image.Dither.NONE)
        else:
            out = rgb.quantize(colors=256, dither=Image.Dither.NONE)
        return out if out.mode == mode else out.convert(mode)
    try:
        rgb = image.convert("RGB")
        rgb.paste(overlay.convert("RGB"), (0, 0), alpha)
        return rgb.convert(mode)
    except ValueError as error:
        raise ValueError(f"cannot draw on images of mode {mode!r}: {error}") from None


# --------------------------------------------------------------------------------------
# draw_matches
# --------------------------------------------------------------------------------------



def _check_outcomes(outcomes: Any, dataset: Dataset, detections: Detections) -> Outcomes:
    if not isinstance(outcomes, Outcomes):
        raise TypeError(f"outcomes must be deteval.outcomes.Outcomes (from match_outcomes); "
                        f"got {type(outcomes).__name__}")
    if (outcomes.n_detections, outcomes.n_gt, outcomes.n_images) != (
            len(detections), len(dataset.gt), len(dataset.images)):
        raise ValueError(f"outcomes were computed for {outcomes.n_detections} detections, "
                         f"{outcomes.n_gt} objects and {outcomes.n_images} images; these "
                         f"inputs have {len(detections)}, {len(dataset.gt)} and "
                         f"{len(dataset.images)}")
    return outcomes


def _category_name(dataset: Dataset, columns: Any, row: int, k: int) -> str:
    if 0 <= k < len(dataset.categories):
        return dataset.categories.names[k]
    ids = getattr(columns, "category_ids", None)
    return f"id {int(ids[row])}" if ids is not None else "?"


class _Item(NamedTuple):
    key: str
    columns: Any      # GroundTruth or Detections
    row: int
    text: str


def _items(dataset: Dataset, detections: Detections, outcomes: Outcomes, image_index: int,
           keys: frozenset[str]) -> list[_Item]:
    rows = outcomes.for_image(image_index)
    gt = dataset.gt
    items = []
    for r in rows.detections.tolist():
        key = DT_OUTCOMES[outcomes.dt_outcome[r]]
        if key not in keys:
            continue
        name = _category_name(dataset, detections, r, int(detections.category_index[r]))
        words = [STYLES[key].tag, name, f"{detections.scores[r]:.2f}"]
        g, iou = int(outcomes.dt_gt[r]), float(outcomes.dt_iou[r])
        if key == "wrong_class":
            words.append(f"({dataset.categories.names[gt.category_index[g]]} IoU {iou:.2f})")
        elif key == "ignored" and g >= 0 and gt.iscrowd[g]:
            words.append(f"IoA {iou:.2f}")
        elif g >= 0:
            words.append(f"IoU {iou:.2f}")
        items.append(_Item(key, detections, r, " ".join(w for w in words if w)))
    for r in rows.gt.tolist():
        outcome = GT_OUTCOMES[outcomes.gt_outcome[r]]
        key = {"missed": "fn", "ignored": "ignored"}.get(outcome)
        if key not in keys:
            continue   # a found object is shown by its detection
        name = dataset.categories.names[gt.category_index[r]]
        tag = "crowd" if gt.iscrowd[r] else STYLES[key].tag
        items.append(_Item(key, gt, r, f"{tag} {name}"))
    items.sort(key=lambda item: _LAYER[item.key])   # stable: rows keep their order
    return items


def _draw_shape(overlay: Image.Image, draw: ImageDraw.ImageDraw, item: _Item, width: int) -> None:
    style = STYLES[item.key]
    rgba = (*style.rgb, 255)
    pattern = _pattern(style.dash, width)
    masks = getattr(item.columns, "masks", None)
    if masks is not None and isinstance(masks[item.row], dict):
        try:
            if _draw_mask(overlay, masks[item.row], rgba, width, pattern):
                return
        except (KeyError, TypeError, ValueError):
            pass   # an unreadable mask: its box below
    polygons = getattr(item.columns, "polygons", None)
    if polygons is not None and polygons[item.row] is not None:
        if _draw_polygon(draw, polygons[item.row], rgba, width, pattern):
            return
    rboxes = getattr(item.columns, "rboxes", None)
    if rboxes is not None and np.isfinite(rboxes[item.row]).all():
        from ..errors import FormatError
        from ..geometry import rotated_box_corners

        try:
            corners = rotated_box_corners(rboxes[item.row:item.row + 1])[0]
        except FormatError:
            corners = None   # a negative width or height: its box below
        if corners is not None:
            _draw_path(draw, np.vstack([corners, corners[:1]]), rgba, width, pattern)
            return
    _draw_box(draw, item.columns.boxes[item.row], rgba, width, pattern, overlay.size)


def draw_matches(image: Any, gt: Dataset, dt: Detections, image_index: int, *,
                 outcomes: Outcomes | None = None, iou_threshold: float = 0.5,
                 score_threshold: float = 0.0, show: Iterable[str] = DEFAULT_SHOW,
                 labels: bool = True, line_width: int | None = None,
                 font_size: int | None = None) -> Image.Image:
    """Draw one image's detections and objects in the style of their outcome.

    Parameters
    ----------
    image : PIL.Image.Image or ndarray
        The picture of row ``image_index`` of ``gt.images`` (an array goes through
        ``Image.fromarray``). Never modified.
    gt : Dataset
    dt : Detections
        Of the whole dataset (rows of other images are not drawn).
    image_index : int
        Row of the image in ``gt.images`` (not its id).
    outcomes : Outcomes, optional
        From :func:`~deteval.outcomes.match_outcomes` on the same ``gt`` and ``dt``; computed
        with ``iou_threshold`` and ``score_threshold`` when not given (pass it when drawing
        many images: it covers the whole dataset).
    iou_threshold, score_threshold : float
        Used only when ``outcomes`` is None.
    show : sequence of str
        Which outcomes to draw, among :data:`SHOW_CHOICES`: ``"tp"``, ``"fp"`` (every reason),
        ``"fn"``, ``"ignored"``, ``"below_threshold"`` or single reasons (``"duplicate"``,
        ``"wrong_class"``, ``"localization"``, ``"background"``). Found objects are shown by
        their detection.
    labels : bool
        Write a label (tag, class, score, IoU) at each shape. Labels stay inside the image:
        placed above the shape's box or, at the top edge, inside it; shifted left at the
        right edge; on a small image the font shrinks (to 6 px) and the text is cut ("..").
    line_width, font_size : int, optional
        In pixels; by default they grow with the image: ``min(w, h) / 250`` (at least 1)
        and ``min(w, h) / 32`` (8 to 256), so that labels keep their size relative to the
        picture when a large image is viewed shrunk to a screen.

    Returns
    -------
    PIL.Image.Image
        A new image, the size and mode of ``image`` (see the module documentation for how
        each mode is drawn). Shapes are drawn in annotation coordinates, whatever the size.

    Raises
    ------
    TypeError, ValueError, IndexError
        Inputs of the wrong type, unknown ``show`` names, bad sizes, outcomes of other
        inputs, ``image_index`` outside the images table.
    """
    image = _as_image(image)
    if not isinstance(gt, Dataset):
        raise TypeError(f"gt must be a deteval Dataset; got {type(gt).__name__}")
    if not isinstance(dt, Detections):
        raise TypeError(f"dt must be deteval Detections; got {type(dt).__name__}")
    keys = _shown_keys(show)
    if outcomes is None:
        outcomes = match_outcomes(gt, dt, iou_threshold=iou_threshold,
                                  score_threshold=score_threshold)
    else:
        _check_outcomes(outcomes, gt, dt)
    items = _items(gt, dt, outcomes, image_index, keys)   # checks image_index
    w, h = image.size
    width = (max(1, round(min(w, h) / 250)) if line_width is None
             else positive_integer("line_width", line_width, or_none=True))
    size = (int(np.clip(round(min(w, h) / 32), 8, _MAX_FONT)) if font_size is None
            else positive_integer("font_size", font_size, or_none=True))

    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    for item in items:
        _draw_shape(overlay, draw, item, width)
    if labels:
        # Placed most important first (they get the free spots), drawn the other way round
        # (they end on top).
        placed = []
        for item in reversed(items):
            label = _place_label(item.text, item.columns.boxes[item.row], image.size, size,
                                 taken=[p[1].rect for p in placed])
            if label is not None:
                placed.append((item, label))
        for item, label in reversed(placed):
            rgb = STYLES[item.key].rgb
            draw.rectangle(label.rect, fill=(*rgb, 255))
            draw.text(label.origin, label.text, font=label.font, fill=_text_colour(rgb))
    return _compose(image, overlay)


# --------------------------------------------------------------------------------------
# write_drawings
# --------------------------------------------------------------------------------------


def select_images(outcomes: Outcomes, *, only_errors: bool = False,
                  limit: int | None = None) -> np.ndarray:
    """The image rows :func:`write_drawings` draws, in its order.

    Every image in table order; with ``only_errors`` or ``limit``, by number of errors (false
    positives plus missed objects), most first, ties in table order, without the images free
    of errors (``only_errors``) and at most ``limit`` of them.
    """
    if limit is not None:
        limit = positive_integer("limit", limit, or_none=True)
    if not only_errors and limit is None:
        return np.arange(outcomes.n_images, dtype=np.int64)
    return outcomes.images_by_errors(only_errors=bool(only_errors), limit=limit)


def _warn(path: Path | None, message: str) -> None:
    warnings.warn(message, FormatWarning, stacklevel=4)   # at write_drawings' caller


def image_file(images_dir: Path, file_name: str) -> Path:
    """Where the image of ``file_name`` is under ``images_dir`` (if a name with folders is
    absent, its last part is tried); the first candidate when neither exists."""
    path = images_dir / file_name
    if not path.is_file() and (images_dir / Path(file_name).name).is_file():
        path = images_dir / Path(file_name).name
    return path


def _read_image(dataset: Dataset, image_index: int, images_dir: Path,
                report: Callable[[Path | None, str], Any]) -> tuple[Path | None, Any]:
    """The file and the picture (loaded, the file closed) of one image row, or None for the
    picture after ``report(path, message)`` when it has no file name, is missing or cannot
    be read; a picture whose size differs from the annotation's is returned after a
    report."""
    images = dataset.images
    image_id, name = int(images.ids[image_index]), images.file_names[image_index]
    if not name:
        report(None, f"image id {image_id} has no file name; skipped")
        return None, None
    path = image_file(images_dir, name)
    if not path.is_file():
        report(path, f"image {path} (image id {image_id}) not found; skipped")
        return path, None
    try:
        with Image.open(path) as opened:
            opened.load()
            picture = opened.copy()
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
        report(path, f"cannot read image {path} (image id {image_id}): {error}; skipped")
        return path, None
    mismatch = size_mismatch(dataset, image_index, picture.size)
    if mismatch:
        report(path, f"image {path} (image id {image_id}) {mismatch}; drawn in the "
               "annotation's coordinates")
    return path, picture


def size_mismatch(dataset: Dataset, image_index: int, size: tuple[int, int]) -> str | None:
    """``"is WxH pixels but its annotation says WxH"`` when the picture's size is not the
    annotation's width and height (unknown sizes are not compared), else None."""
    images = dataset.images
    expected = (images.widths[image_index], images.heights[image_index])
    if not all(np.isfinite(expected)) or tuple(map(float, size)) == expected:
        return None
    return (f"is {size[0]}x{size[1]} pixels but its annotation says {expected[0]:g}x"
            f"{expected[1]:g}")


def _output_path(out_dir: Path, file_name: str, image_id: int, used: set[Path]) -> Path:
    relative = Path(file_name)
    if relative.is_absolute() or ".." in relative.parts:
        relative = Path(relative.name)   # never write outside out_dir
    path = out_dir / relative.with_suffix(".png")
    if path in used:   # two images of the same name
        path = path.with_name(f"{path.stem}-{image_id}.png")
    return path


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (b.exists() and a.samefile(b))
    except OSError:
        return False


def write_drawings(dataset: Dataset, detections: Detections, images_dir: str | os.PathLike,
                   out_dir: str | os.PathLike, *, only_errors: bool = False,
                   limit: int | None = None, iou_threshold: float = 0.5,
                   score_threshold: float = 0.0,
                   on_problem: Callable[[Path | None, str], Any] | None = None,
                   outcomes: Outcomes | None = None, show: Iterable[str] = DEFAULT_SHOW,
                   labels: bool = True,
                   progress: Callable[[int, int, str], Any] | None = None) -> list[Path]:
    """Draw the matches on the dataset's images and write them as PNG files.

    Parameters
    ----------
    dataset : Dataset
    detections : Detections
    images_dir : str or PathLike
        Folder of the images, found by ``dataset.images.file_names`` (relative paths allowed;
        if a name with folders is absent, its last part is tried).
    out_dir : str or PathLike
        Created if needed. Each image is written to ``out_dir / file_name`` with the suffix
        ``.png`` (lossless, so the colours are exact); a repeated name gets ``-<image id>``.
        It may not be ``images_dir`` itself, and a drawing that would replace its own
        source image raises ``ValueError``: the images are never overwritten.
    only_errors, limit : optional
        Which images, in which order: see :func:`select_images`.
    iou_threshold, score_threshold : float
        Of the matching, when ``outcomes`` is not given.
    on_problem : callable, optional
        Called as ``on_problem(path, message)`` for each problem instead of a
        :class:`~deteval.errors.FormatWarning`: an image without a file name (``path``
        None), missing or unreadable (skipped), or whose size differs from the annotation's
        width and height (drawn anyway, in annotation coordinates).
    outcomes : Outcomes, optional
        Precomputed outcomes of ``dataset`` and ``detections``.
    show, labels :
        As for :func:`draw_matches`.
    progress : callable, optional
        Called as ``progress(done, total, file_name)`` after each chosen image (drawn or
        skipped), e.g. a progress bar.

    Returns
    -------
    list of pathlib.Path
        The files written, in drawing order.

    Notes
    -----
    Pixels are drawn as stored in the file: an EXIF orientation tag is not applied, so
    the annotations must refer to the stored pixels (as COCO's and VOC's do).

    Raises
    ------
    OSError
        ``out_dir`` or a file in it cannot be written.
    ValueError
        ``out_dir`` is ``images_dir``, or a drawing would replace its source image.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"dataset must be a deteval Dataset; got {type(dataset).__name__}")
    if not isinstance(detections, Detections):
        raise TypeError(f"detections must be deteval Detections; got "
                        f"{type(detections).__name__}")
    _shown_keys(show)
    if limit is not None:
        positive_integer("limit", limit, or_none=True)
    images_dir, out_dir = Path(images_dir), Path(out_dir)
    if _same_file(out_dir, images_dir):
        raise ValueError(f"the output folder {out_dir} is the images folder: the drawings "
                         "would mix with (or replace) the images; choose another folder")
    if outcomes is None:
        outcomes = match_outcomes(dataset, detections, iou_threshold=iou_threshold,
                                  score_threshold=score_threshold)
    else:
        _check_outcomes(outcomes, dataset, detections)
    chosen = select_images(outcomes, only_errors=only_errors, limit=limit)
    report = _warn if on_problem is None else on_problem
    images = dataset.images
    written: list[Path] = []
    used: set[Path] = set()
    for done, i in enumerate(chosen.tolist(), start=1):
        path, picture = _read_image(dataset, i, images_dir, report)
        if picture is not None:
            name, image_id = images.file_names[i], int(images.ids[i])
            target = _output_path(out_dir, name, image_id, used)
            if _same_file(target, path):
                raise ValueError(f"the drawing of {path} would replace the image itself; "
                                 "choose an output folder outside the images folder")
            drawn = draw_matches(picture, dataset, detections, i, outcomes=outcomes,
                                 show=show, labels=labels)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                drawn.save(target, format="PNG", compress_level=3)   # 3x faster than 6
            except (OSError, KeyError, ValueError):   # a mode PNG cannot hold (F, CMYK, ...)
                drawn.convert("RGB").save(target, format="PNG", compress_level=3)
            used.add(target)
            written.append(target)
        if progress is not None:
            progress(done, len(chosen), images.file_names[i] or f"image id {images.ids[i]}")
    return written
