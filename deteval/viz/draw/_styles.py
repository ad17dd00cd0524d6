"""The style of each outcome (colour, line, tag), the ``show`` names, the fonts, and the key
(legend) drawn as an image."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from ...outcomes import FP_OUTCOMES


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



@lru_cache(maxsize=64)
def _font(size: int):
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: one bitmap size only
        return ImageFont.load_default()



def _text_colour(rgb: tuple[int, int, int]) -> tuple[int, int, int, int]:
    luminance = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
    return (0, 0, 0, 255) if luminance > 140 else (255, 255, 255, 255)



def draw_legend(show: Iterable[str] = DEFAULT_SHOW, *, font_size: int = 16) -> Image.Image:
    """The key of the drawings: one row per outcome drawn, its line, tag and meaning.

    Each row shows a sample of the line (in the outcome's colour and dash), the label tag
    written on the drawings (``bg``, ``loc``, ``dup``, ``cls``, ``ign``, ``FN``, ``low``; a
    true positive has none) and the legend text.

    Parameters
    ----------
    show : sequence of str
        As for :func:`draw_matches`: only the outcomes drawn get a row.
    font_size : int, default 16
        In pixels.

    Returns
    -------
    PIL.Image.Image
        A new RGB image on white.

    Examples
    --------
    >>> key = draw_legend(["tp", "fn"])
    >>> key.mode, key.getpixel((12, 16)) == STYLES["tp"].rgb
    ('RGB', True)
    """
    from ._shapes import _draw_path, _pattern

    entries = legend(show)
    font, pad = _font(max(6, int(font_size))), max(4, int(font_size) // 2)
    row = int(font_size) + pad
    line = max(2, int(font_size) // 6)
    sample = 3 * int(font_size)
    texts = [(f"{e['tag'] or 'TP'}", e["label"]) for e in entries]
    tag_width = max((font.getlength(t) for t, _ in texts), default=0)
    text_width = max((font.getlength(t) for _, t in texts), default=0)
    width = int(pad + sample + pad + tag_width + pad + text_width + pad)
    image = Image.new("RGB", (max(width, 1), pad + row * len(entries)), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    for n, (entry, (tag, text)) in enumerate(zip(entries, texts)):
        y = pad + n * row + int(font_size) // 2
        rgba = (*entry["rgb"], 255)
        _draw_path(draw, [(pad, y), (pad + sample, y)], rgba, line,
                   _pattern(entry["dash"], line))
        x = pad + sample + pad
        label_width = int(font.getlength(tag)) + 4
        draw.rectangle([x - 2, y - int(font_size) // 2 - 1, x - 2 + label_width,
                        y + int(font_size) // 2 + 1], fill=rgba)
        draw.text((x, y), tag, font=font, fill=_text_colour(entry["rgb"]), anchor="lm")
        draw.text((x + tag_width + pad, y), text, font=font, fill=(0, 0, 0), anchor="lm")
    return image
