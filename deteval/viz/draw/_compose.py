"""Images in, images out: arrays accepted, the overlay laid over the image in its own mode."""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image


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

