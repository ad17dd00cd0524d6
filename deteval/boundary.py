"""Boundary IoU (Cheng et al., CVPR 2021), as boundary-iou-api computes it.

A mask's boundary is the mask minus its erosion: boundary-iou-api pads the mask with one
row/column of zeros, erodes it ``d`` times with a 3x3 square kernel (``cv2.erode``, whose
own border is neutral) and crops the padding off, with
``d = max(1, int(round(dilation_ratio * sqrt(h**2 + w**2))))``. Iterated 3x3 erosions
equal one erosion by a ``(2d+1) x (2d+1)`` square, and the one-pixel zero padding makes
every pixel within ``d`` of the image border part of the boundary: a pixel stays in the
erosion iff the whole square of side ``2d+1`` around it lies in the image and in the mask.
Here that is an integral-image test on the mask's bounding box (numpy only, no OpenCV).
See docs/protocols/boundary.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["boundary_dilation", "mask_to_boundary", "mask_boundaries"]


def boundary_dilation(height: int, width: int, dilation_ratio: float = 0.02) -> int:
    """The erosion count ``d`` of boundary-iou-api for an image of ``height x width``.

    Parameters
    ----------
    height, width : int
        Image size in pixels.
    dilation_ratio : float
        Boundary width as a fraction of the image diagonal.

    Returns
    -------
    int
        ``max(1, int(round(dilation_ratio * sqrt(height**2 + width**2))))`` (Python's
        ``round``: halves to even).

    Examples
    --------
    >>> boundary_dilation(480, 640)
    16
    >>> boundary_dilation(10, 10)
    1
    """
    diagonal = np.sqrt(height ** 2 + width ** 2)
    return max(1, int(round(dilation_ratio * diagonal)))


def _erode_axis(x: np.ndarray, d: int, axis: int) -> np.ndarray:
    """Binary erosion along ``axis`` by a window of ``2d+1``, zeros outside ``x``.

    Windows of doubling lengths are ANDed (``log2(2d+1)`` steps of boolean ANDs).
    """
    x = np.moveaxis(x, axis, 0)
    n = x.shape[0]
    padded = np.zeros((n + 2 * d,) + x.shape[1:], dtype=bool)
    padded[d:d + n] = x
    # Index i of an array of windows of length `size` is the window that starts at i.
    power, size, out, length, left = padded, 1, None, 0, 2 * d + 1
    while left:
        if left & 1:
            if out is None:
                out, length = power, size
            else:
                cut = len(power) - length
                out = out[:cut] & power[length:]
                length += size
        left >>= 1
        if left:
            power = power[:len(power) - size] & power[size:]
            size *= 2
    return np.moveaxis(out, 0, axis)


def mask_to_boundary(mask: np.ndarray, dilation_ratio: float = 0.02) -> np.ndarray:
    """The boundary of a binary mask, as boundary-iou-api's ``mask_to_boundary``.

    Parameters
    ----------
    mask : ndarray, shape (h, w)
        Binary mask (nonzero = inside).
    dilation_ratio : float
        Boundary width as a fraction of the image diagonal (``d`` of
        :func:`boundary_dilation`).

    Returns
    -------
    ndarray of uint8, shape (h, w)
        1 on the mask's pixels whose ``(2d+1)`` square leaves the mask or the image.

    Examples
    --------
    >>> m = np.zeros((6, 7), dtype=np.uint8); m[1:6, 1:6] = 1
    >>> mask_to_boundary(m, 0.1)
    array([[0, 0, 0, 0, 0, 0, 0],
           [0, 1, 1, 1, 1, 1, 0],
           [0, 1, 0, 0, 0, 1, 0],
           [0, 1, 0, 0, 0, 1, 0],
           [0, 1, 0, 0, 0, 1, 0],
           [0, 1, 1, 1, 1, 1, 0]], dtype=uint8)
    """
    mask = np.asarray(mask) != 0
    h, w = mask.shape
    return _boundary(mask, boundary_dilation(h, w, dilation_ratio)).view(np.uint8)


def _boundary(mask: np.ndarray, d: int, rows: tuple[int, int] | None = None) -> np.ndarray:
    """Boolean boundary of a boolean mask; ``rows`` bounds its nonzero rows if known.

    The rule is symmetric in rows and columns, so it applies to a transposed mask too.
    """
    h, w = mask.shape
    out = np.zeros((h, w), dtype=bool)
    if rows is None:
        used = np.flatnonzero(mask.any(axis=1))
        rows = (used[0], used[-1] + 1) if len(used) else (0, 0)
    r0, r1 = rows
    cols = np.flatnonzero(mask[r0:r1].any(axis=0))
    if len(cols) == 0:
        return out
    c0, c1 = cols[0], cols[-1] + 1
    crop = mask[r0:r1, c0:c1]
    # Outside the box the mask is 0, so the box is enough; the image border also counts
    # as outside: a square reaching it is never full.
    full = _erode_axis(_erode_axis(crop, d, 0), d, 1)
    full[:max(0, d - r0)] = False
    full[max(0, h - d - r0):] = False
    full[:, :max(0, d - c0)] = False
    full[:, max(0, w - d - c0):] = False
    out[r0:r1, c0:c1] = crop & ~full
    return out


def mask_boundaries(masks: Sequence[dict], dilation_ratio: float = 0.02) -> np.ndarray:
    """Boundaries (compressed RLE) of compressed RLE masks.

    Parameters
    ----------
    masks : sequence of dict
        Compressed RLE (``{"size": [h, w], "counts": ...}``).
    dilation_ratio : float
        See :func:`mask_to_boundary`.

    Returns
    -------
    ndarray of object, shape (n,)
        The boundary of each mask, compressed RLE of the same size.

    Examples
    --------
    >>> from pycocotools import mask as mask_utils
    >>> m = np.zeros((6, 7), dtype=np.uint8, order="F"); m[1:6, 1:6] = 1
    >>> b = mask_boundaries([mask_utils.encode(m)], 0.1)
    >>> int(mask_utils.area(b[0])), int(mask_utils.area(mask_utils.encode(m)))
    (16, 25)
    """
    from .masks import decode_counts, mask_api

    out = np.empty(len(masks), dtype=object)
    if len(out) == 0:
        return out
    strings = [m["counts"].encode() if isinstance(m["counts"], str) else m["counts"]
               for m in masks]
    counts, offsets = decode_counts(strings)      # every mask's runs, in one pass
    parity = np.arange(len(counts)) - np.repeat(offsets[:-1], np.diff(offsets))
    parity = (parity & 1).astype(np.uint8)        # runs alternate 0, 1, 0, ...
    encode = mask_api().encode
    for i, rle in enumerate(masks):
        # One mask at a time: each has its own (h, w), erosion and encode.
        h, w = (int(v) for v in rle["size"])
        lo, hi = offsets[i], offsets[i + 1]
        runs = counts[lo:hi]
        flat = np.repeat(parity[lo:hi].view(bool), runs)
        if len(flat) != h * w:
            raise ValueError(f"mask {i}: its runs cover {len(flat)} pixels, not {h} x {w}")
        # Runs are column-major: as rows of a (w, h) array they are the mask transposed,
        # and the boundary rule is the same on the transpose.
        ends = np.cumsum(runs)
        ones = np.flatnonzero((runs > 0) & (parity[lo:hi] == 1))
        rows = ((ends[ones[0]] - runs[ones[0]]) // h, (ends[ones[-1]] - 1) // h + 1) \
            if len(ones) else (0, 0)
        boundary_t = _boundary(flat.reshape(w, h), boundary_dilation(h, w, dilation_ratio),
                               rows)
        out[i] = encode(boundary_t.view(np.uint8).T[:, :, None])[0]
    return out
