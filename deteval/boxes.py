"""Box formats, conversion, area, clipping and validity.

The internal format of deteval is ``xyxy`` in absolute pixels: ``(n, 4)`` float64 arrays of
``[x1, y1, x2, y2]``. The other formats exist at the edges, for readers and writers:

=========== ==================================================================
``xyxy``    ``[x1, y1, x2, y2]``, corners in pixels
``xywh``    ``[x1, y1, width, height]`` in pixels (COCO)
``cxcywh``  ``[centre x, centre y, width, height]`` in pixels
``xyxyn``   ``xyxy`` divided by the image ``(width, height, width, height)``
``xywhn``   ``xywh`` divided likewise
``cxcywhn`` ``cxcywh`` divided likewise (YOLO)
=========== ==================================================================

Every function accepts anything ``np.asarray`` turns into a real numeric ``(n, 4)`` array
(an empty list counts as ``(0, 4)``), returns a new float64 array and never modifies its input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._format_names import BOX_FORMATS

__all__ = ["BOX_FORMATS", "box_area", "clip_boxes", "convert_boxes", "invalid_boxes"]


def as_boxes(boxes: Any, name: str = "boxes") -> np.ndarray:
    """Return ``boxes`` as a float64 ``(n, 4)`` array (a copy only when needed), or raise."""
    array = np.asarray(boxes)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be real numbers; got dtype {array.dtype}")
    if array.ndim == 1 and array.size == 0:
        array = array.reshape(0, 4)
    if array.ndim != 2 or array.shape[1] != 4:
        raise ValueError(f"{name} must have shape (n, 4); got {array.shape}")
    return array.astype(np.float64, copy=False)


def _check_format(fmt: str, name: str) -> None:
    if fmt not in BOX_FORMATS:
        valid = ", ".join(repr(f) for f in BOX_FORMATS)
        raise ValueError(f"{name} must be one of {valid}; got {fmt!r}")


def _per_box(values: Any, name: str, n: int) -> np.ndarray:
    """A scalar or an ``(n,)`` array of positive sizes, as float64 broadcastable to ``(n,)``."""
    array = np.asarray(values)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be real numbers; got dtype {array.dtype}")
    if array.ndim > 1 or (array.ndim == 1 and array.shape[0] != n):
        raise ValueError(f"{name} must be a scalar or have shape ({n},); got {array.shape}")
    array = array.astype(np.float64, copy=False)
    if not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError(f"{name} must be positive and finite")
    return array


def _image_scale(image_size: Any, n: int) -> np.ndarray:
    """``(width, height, width, height)`` as a ``(4,)`` or ``(n, 4)`` float64 array."""
    size = np.asarray(image_size)
    if size.dtype.kind not in "iuf":
        raise TypeError(f"image_size must be real numbers; got dtype {size.dtype}")
    if size.shape not in ((2,), (n, 2)):
        raise ValueError(
            f"image_size must be (width, height) or have shape ({n}, 2); got shape {size.shape}"
        )
    size = size.astype(np.float64, copy=False)
    if not np.all(np.isfinite(size) & (size > 0)):
        raise ValueError("image_size must hold positive finite widths and heights")
    return np.concatenate([size, size], axis=-1)


def _to_xywh(boxes: np.ndarray, base: str) -> np.ndarray:
    x1, y1, c, d = boxes.T
    if base == "xyxy":
        return np.stack([x1, y1, c - x1, d - y1], axis=1)
    return np.stack([x1 - c / 2, y1 - d / 2, c, d], axis=1)  # cxcywh


def _from_xywh(boxes: np.ndarray, base: str) -> np.ndarray:
    x, y, w, h = boxes.T
    if base == "xyxy":
        return np.stack([x, y, x + w, y + h], axis=1)
    return np.stack([x + w / 2, y + h / 2, w, h], axis=1)  # cxcywh


def convert_boxes(boxes: Any, src: str, dst: str, *, image_size: Any = None) -> np.ndarray:
    """Convert boxes from one format to another.

    Parameters
    ----------
    boxes : array_like, shape (n, 4)
        Boxes in format ``src``. ``[]`` counts as ``(0, 4)``.
    src, dst : str
        Formats, one of :data:`BOX_FORMATS`.
    image_size : array_like, optional
        ``(width, height)`` of the image, or an ``(n, 2)`` array with one row per box.
        Required when exactly one of ``src`` and ``dst`` is normalised (ends in ``"n"``);
        not used otherwise.

    Returns
    -------
    numpy.ndarray, shape (n, 4), float64
        A new array, even when ``src == dst``. Widths and heights are copied, not recomputed,
        between ``xywh`` and ``cxcywh``; conversions to or from ``xyxy`` round as floating-point
        arithmetic does (``(x + w) - x`` need not be ``w``).

    Raises
    ------
    ValueError
        Unknown format, shape not ``(n, 4)``, missing or non-positive ``image_size``.
    TypeError
        Non-numeric boxes.

    Examples
    --------
    >>> convert_boxes([[10, 20, 30, 40]], "xywh", "xyxy").tolist()
    [[10.0, 20.0, 40.0, 60.0]]
    >>> convert_boxes([[0, 0, 50, 20]], "xyxy", "cxcywhn", image_size=(100, 40)).tolist()
    [[0.25, 0.25, 0.5, 0.5]]
    """
    _check_format(src, "src")
    _check_format(dst, "dst")
    array = as_boxes(boxes)
    src_base, dst_base = src.rstrip("n"), dst.rstrip("n")
    # Base conversions are linear, so two normalised formats convert without the image size.
    scale = None
    if (src == src_base) != (dst == dst_base):
        if image_size is None:
            normalised = dst if src == src_base else src
            raise ValueError(f"image_size is required to convert from or to {normalised!r}")
        scale = _image_scale(image_size, len(array))
    with np.errstate(all="ignore"):  # non-finite coordinates give NaN quietly
        out = array * scale if scale is not None and src != src_base else array.copy()
        if src_base != dst_base:
            xywh = out if src_base == "xywh" else _to_xywh(out, src_base)
            out = xywh if dst_base == "xywh" else _from_xywh(xywh, dst_base)
        if scale is not None and dst != dst_base:
            out = out / scale
    return out


def box_area(boxes: Any, fmt: str = "xyxy") -> np.ndarray:
    """Area of each box, in the units of ``fmt``.

    Parameters
    ----------
    boxes : array_like, shape (n, 4)
    fmt : str, default "xyxy"
        Any of :data:`BOX_FORMATS`; for the normalised ones the area is a fraction of the image.

    Returns
    -------
    numpy.ndarray, shape (n,), float64
        ``width * height``. A negative width or height (an inverted box) counts as 0, so
        inverted boxes have area 0 (find them with :func:`invalid_boxes`); NaN stays NaN.

    Examples
    --------
    >>> box_area([[0, 0, 10, 5], [0, 0, -1, 4]]).tolist()
    [50.0, 0.0]
    >>> box_area([[3, 3, 10, 5]], "xywh").tolist()
    [50.0]
    """
    _check_format(fmt, "fmt")
    array = as_boxes(boxes)
    with np.errstate(all="ignore"):
        if fmt.startswith("xyxy"):
            widths, heights = array[:, 2] - array[:, 0], array[:, 3] - array[:, 1]
        else:
            widths, heights = array[:, 2], array[:, 3]
        return np.maximum(widths, 0.0) * np.maximum(heights, 0.0)


def clip_boxes(boxes: Any, width: Any, height: Any) -> np.ndarray:
    """Clip ``xyxy`` boxes to the image ``[0, width] x [0, height]``.

    Parameters
    ----------
    boxes : array_like, shape (n, 4)
        ``xyxy`` boxes in pixels.
    width, height : float or array_like, shape (n,)
        Image size, one for all boxes or one per box; positive and finite.

    Returns
    -------
    numpy.ndarray, shape (n, 4), float64
        A new array. A box entirely outside the image becomes a zero-size box on its border;
        NaN coordinates stay NaN.

    Examples
    --------
    >>> clip_boxes([[-5, 2, 120, 30]], 100, 50).tolist()
    [[0.0, 2.0, 100.0, 30.0]]
    """
    array = as_boxes(boxes)
    widths = _per_box(width, "width", len(array))
    heights = _per_box(height, "height", len(array))
    upper = np.stack(np.broadcast_arrays(widths, heights, widths, heights), axis=-1)
    return np.clip(array, 0.0, upper)


def invalid_boxes(boxes: Any) -> np.ndarray:
    """Mark ``xyxy`` boxes that are not finite or are inverted.

    Parameters
    ----------
    boxes : array_like, shape (n, 4)

    Returns
    -------
    numpy.ndarray, shape (n,), bool
        True where a coordinate is NaN or infinite, or ``x2 < x1``, or ``y2 < y1``.
        Zero-size boxes (``x2 == x1`` or ``y2 == y1``) are valid.

    Examples
    --------
    >>> invalid_boxes([[0, 0, 1, 1], [0, 0, 0, 0], [2, 0, 1, 1], [0, 0, float("nan"), 1]]).tolist()
    [False, False, True, True]
    """
    array = as_boxes(boxes)
    finite = np.isfinite(array).all(axis=1)
    ordered = (array[:, 2] >= array[:, 0]) & (array[:, 3] >= array[:, 1])
    return ~(finite & ordered)
