"""Overlap between boxes: IoU, IoA, GIoU, DIoU, CIoU and the exact COCO bbox IoU.

All functions take ``a`` with ``n`` rows and ``b`` with ``m`` rows and return an ``(n, m)``
float64 matrix (``(0, m)`` or ``(n, 0)`` when a side is empty), except :func:`coco_pair_iou`,
which works on aligned rows. Boxes are ``xyxy`` unless the name says ``xywh``.

Conventions for degenerate boxes (the generic functions, not the COCO ones):

* a box with ``x2 < x1`` or ``y2 < y1`` has zero width or height (see
  :func:`deteval.boxes.invalid_boxes`), so zero area;
* a ratio whose denominator is 0 (the union, the area of ``a``, the enclosing box or its
  diagonal) makes that ratio or penalty 0; in particular the IoU of two zero-area boxes is 0;
* NaN coordinates give NaN; infinite ones give NaN or meaningless values.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .boxes import as_boxes

__all__ = [
    "box_ioa",
    "box_iou",
    "coco_box_iou",
    "coco_pair_iou",
    "complete_box_iou",
    "distance_box_iou",
    "generalized_box_iou",
]


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator``, with 0 where the denominator is 0 (NaN stays NaN)."""
    out = numerator / denominator
    out[denominator == 0] = 0.0
    return out


def _extent(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.maximum(hi - lo, 0.0)


class _Overlap(NamedTuple):
    """What every IoU variant needs: coordinates as ``(n, 1)`` columns for ``a`` and ``(m,)``
    rows for ``b``, clamped widths and heights, and ``(n, m)`` intersection, union and IoU."""

    a: tuple[np.ndarray, ...]
    b: tuple[np.ndarray, ...]
    sizes: tuple[np.ndarray, ...]
    inter: np.ndarray
    union: np.ndarray
    iou: np.ndarray


def _overlap(a: Any, b: Any) -> _Overlap:
    a, b = as_boxes(a, "a"), as_boxes(b, "b")
    ax1, ay1, ax2, ay2 = (a[:, [k]] for k in range(4))
    bx1, by1, bx2, by2 = b.T
    sizes = (_extent(ax1, ax2), _extent(ay1, ay2), _extent(bx1, bx2), _extent(by1, by2))
    inter_w = _extent(np.maximum(ax1, bx1), np.minimum(ax2, bx2))
    inter = inter_w * _extent(np.maximum(ay1, by1), np.minimum(ay2, by2))
    union = (sizes[0] * sizes[1] + sizes[2] * sizes[3]) - inter
    iou = _ratio(inter, union)
    return _Overlap((ax1, ay1, ax2, ay2), (bx1, by1, bx2, by2), sizes, inter, union, iou)


def box_iou(a: Any, b: Any) -> np.ndarray:
    """Intersection over union of every box in ``a`` with every box in ``b``.

    Parameters
    ----------
    a : array_like, shape (n, 4)
        ``xyxy`` boxes.
    b : array_like, shape (m, 4)
        ``xyxy`` boxes.

    Returns
    -------
    numpy.ndarray, shape (n, m), float64
        In [0, 1] for finite boxes; symmetric (``box_iou(a, b) == box_iou(b, a).T`` exactly).
        0 where the union has zero area (two zero-area boxes).

    Examples
    --------
    >>> box_iou([[0, 0, 10, 10]], [[0, 0, 10, 5], [20, 20, 30, 30]]).tolist()
    [[0.5, 0.0]]
    """
    with np.errstate(all="ignore"):
        return _overlap(a, b).iou


def box_ioa(a: Any, b: Any) -> np.ndarray:
    """Intersection over the area of ``a``: the crowd IoA, ``a`` being the detections.

    Parameters
    ----------
    a : array_like, shape (n, 4)
        ``xyxy`` boxes whose area is the denominator (detections).
    b : array_like, shape (m, 4)
        ``xyxy`` boxes (crowd regions).

    Returns
    -------
    numpy.ndarray, shape (n, m), float64
        In [0, 1] for finite boxes; 1 where ``a`` lies inside ``b``; 0 where ``a`` has zero area.

    Examples
    --------
    >>> box_ioa([[0, 0, 10, 10]], [[0, 0, 5, 10], [-5, -5, 50, 50]]).tolist()
    [[0.5, 1.0]]
    """
    with np.errstate(all="ignore"):
        ov = _overlap(a, b)
        area = ov.sizes[0] * ov.sizes[1]
        return _ratio(ov.inter, np.broadcast_to(area, ov.inter.shape))


def _enclosing(ov: _Overlap) -> tuple[np.ndarray, np.ndarray]:
    """Width and height of the smallest box enclosing each pair."""
    (ax1, ay1, ax2, ay2), (bx1, by1, bx2, by2) = ov.a, ov.b
    width = _extent(np.minimum(ax1, bx1), np.maximum(ax2, bx2))
    height = _extent(np.minimum(ay1, by1), np.maximum(ay2, by2))
    return width, height


def generalized_box_iou(a: Any, b: Any) -> np.ndarray:
    """Generalised IoU (Rezatofighi et al., 2019) of every box in ``a`` with every box in ``b``.

    ``GIoU = IoU - (C - U) / C`` where ``U`` is the area of the union and ``C`` that of the
    smallest box enclosing both. The penalty is 0 when ``C`` is 0 (then GIoU = IoU = 0), and
    ``C - U`` is clipped at 0 so that rounding can never lift GIoU above IoU.

    Parameters
    ----------
    a : array_like, shape (n, 4)
        ``xyxy`` boxes.
    b : array_like, shape (m, 4)
        ``xyxy`` boxes.

    Returns
    -------
    numpy.ndarray, shape (n, m), float64
        In [-1, 1] and at most the IoU; symmetric.

    Examples
    --------
    >>> generalized_box_iou([[0, 0, 1, 1]], [[0, 0, 1, 1], [2, 0, 3, 1]]).tolist()
    [[1.0, -0.3333333333333333]]
    """
    with np.errstate(all="ignore"):
        ov = _overlap(a, b)
        width, height = _enclosing(ov)
        enclosing = width * height
        return ov.iou - _ratio(np.maximum(enclosing - ov.union, 0.0), enclosing)


def _centre_penalty(ov: _Overlap) -> np.ndarray:
    """Squared distance of the centres over the squared diagonal of the enclosing box."""
    (ax1, ay1, ax2, ay2), (bx1, by1, bx2, by2) = ov.a, ov.b
    width, height = _enclosing(ov)
    distance2 = ((ax1 + ax2) / 2 - (bx1 + bx2) / 2) ** 2 + ((ay1 + ay2) / 2 - (by1 + by2) / 2) ** 2
    return _ratio(distance2, width**2 + height**2)


def distance_box_iou(a: Any, b: Any) -> np.ndarray:
    """Distance IoU (Zheng et al., 2020) of every box in ``a`` with every box in ``b``.

    ``DIoU = IoU - rho^2 / c^2`` with ``rho`` the distance between the box centres and ``c``
    the diagonal of the smallest enclosing box. The penalty is 0 when ``c`` is 0 (both boxes
    are the same point).

    Parameters
    ----------
    a : array_like, shape (n, 4)
        ``xyxy`` boxes.
    b : array_like, shape (m, 4)
        ``xyxy`` boxes.

    Returns
    -------
    numpy.ndarray, shape (n, m), float64
        In [-1, 1] and at most the IoU; symmetric.

    Examples
    --------
    >>> distance_box_iou([[0, 0, 2, 2]], [[0, 0, 2, 2], [2, 0, 4, 2]]).tolist()
    [[1.0, -0.2]]
    """
    with np.errstate(all="ignore"):
        ov = _overlap(a, b)
        return ov.iou - _centre_penalty(ov)


def complete_box_iou(a: Any, b: Any) -> np.ndarray:
    """Complete IoU (Zheng et al., 2020) of every box in ``a`` with every box in ``b``.

    ``CIoU = DIoU - alpha * v`` with the aspect-ratio term
    ``v = (4 / pi^2) * (atan2(w_b, h_b) - atan2(w_a, h_a))^2`` and
    ``alpha = v / ((1 - IoU) + v)``. ``atan2`` makes a zero height an angle of ``pi / 2``
    and a zero-size box an angle of 0; ``alpha`` is 0 when its denominator is 0 (identical
    boxes).

    Parameters
    ----------
    a : array_like, shape (n, 4)
        ``xyxy`` boxes.
    b : array_like, shape (m, 4)
        ``xyxy`` boxes.

    Returns
    -------
    numpy.ndarray, shape (n, m), float64
        At most the DIoU (so at most the IoU) and at least -2; symmetric.

    Examples
    --------
    >>> complete_box_iou([[0, 0, 2, 2]], [[0, 0, 2, 2], [2, 0, 4, 2]]).tolist()
    [[1.0, -0.2]]
    """
    with np.errstate(all="ignore"):
        ov = _overlap(a, b)
        aw, ah, bw, bh = ov.sizes
        v = (4 / np.pi**2) * (np.arctan2(bw, bh) - np.arctan2(aw, ah)) ** 2
        alpha = _ratio(v, (1 - ov.iou) + v)
        return ov.iou - _centre_penalty(ov) - alpha * v


def _as_crowd(iscrowd: Any, n: int) -> np.ndarray:
    crowd = np.asarray(iscrowd)
    if crowd.dtype.kind not in "biuf":
        raise TypeError(f"iscrowd must be booleans or 0/1; got dtype {crowd.dtype}")
    if crowd.shape != (n,):
        raise ValueError(f"iscrowd must have shape ({n},), one flag per gt box; got {crowd.shape}")
    # pycocotools casts to uint8 (0.5 and 256 become 0); refusing anything but 0/1 avoids the trap.
    if crowd.dtype != bool and not np.isin(crowd, (0, 1)).all():
        raise ValueError("iscrowd must hold only booleans or 0/1")
    return crowd.astype(bool)


def coco_iou(
    dt: tuple[np.ndarray, ...], gt: tuple[np.ndarray, ...], crowd: np.ndarray
) -> np.ndarray:
    """pycocotools' ``bbIou`` with its exact operations, broadcast over any aligned shapes."""
    dx, dy, dw, dh = dt
    gx, gy, gw, gh = gt
    with np.errstate(all="ignore"):
        # fmin/fmax ignore a NaN operand exactly like C's fmin/fmax, which maskApi.c uses.
        iw = np.fmin(dx + dw, gx + gw) - np.fmax(dx, gx)
        ih = np.fmin(dy + dh, gy + gh) - np.fmax(dy, gy)
        inter = iw * ih
        dt_area = dw * dh
        union = np.where(crowd, dt_area, (dt_area + gw * gh) - inter)
        iou = inter / union
    # C skips the pair when ``iw <= 0``, which is False for NaN: NaN goes on to the division.
    return np.where((iw <= 0) | (ih <= 0), 0.0, iou)


def coco_box_iou(dt_xywh: Any, gt_xywh: Any, iscrowd: Any) -> np.ndarray:
    """The COCO bbox IoU matrix, bit-identical to ``pycocotools.mask.iou(dt, gt, iscrowd)``.

    Follows the C code of pycocotools (``bbIou``): ``iw = min(dx + dw, gx + gw) - max(dx, gx)``
    and likewise ``ih``; 0 if ``iw <= 0`` or ``ih <= 0``; otherwise ``inter / union`` with
    ``union = dw * dh`` for a crowd gt and ``(dw * dh + gw * gh) - inter`` otherwise. So a
    detection inside a crowd region scores 1. ``min``/``max`` ignore a NaN operand like C's
    ``fmin``/``fmax``.

    Parameters
    ----------
    dt_xywh : array_like, shape (n, 4)
        Detection boxes ``[x, y, w, h]``.
    gt_xywh : array_like, shape (m, 4)
        Ground-truth boxes ``[x, y, w, h]``.
    iscrowd : array_like of bool or 0/1, shape (m,)
        Crowd flag of each gt box. Other values raise ``ValueError`` (pycocotools would cast
        them to uint8).

    Returns
    -------
    numpy.ndarray, shape (n, m), float64
        Where pycocotools returns ``[]`` for an empty side, this returns a ``(0, m)`` or
        ``(n, 0)`` array.

    Examples
    --------
    >>> coco_box_iou([[0, 0, 10, 9]], [[0, 0, 10, 10], [0, 0, 10, 10]], [False, True]).tolist()
    [[0.9, 1.0]]
    """
    dt, gt = as_boxes(dt_xywh, "dt_xywh"), as_boxes(gt_xywh, "gt_xywh")
    crowd = _as_crowd(iscrowd, len(gt))
    return coco_iou(tuple(dt[:, [k]] for k in range(4)), tuple(gt.T), crowd)


def coco_pair_iou(dt_xywh: Any, gt_xywh: Any, iscrowd: Any) -> np.ndarray:
    """The COCO bbox IoU of aligned (detection, gt) pairs, row ``i`` with row ``i``.

    The same operations as :func:`coco_box_iou`, so the same bits as the corresponding cells
    of its matrix; meant for matchers that gather candidate pairs across many images.

    Parameters
    ----------
    dt_xywh : array_like, shape (p, 4)
        Detection box of each pair, ``[x, y, w, h]``.
    gt_xywh : array_like, shape (p, 4)
        Ground-truth box of each pair, ``[x, y, w, h]``.
    iscrowd : array_like of bool or 0/1, shape (p,)
        Crowd flag of the gt box of each pair.

    Returns
    -------
    numpy.ndarray, shape (p,), float64

    Examples
    --------
    >>> coco_pair_iou([[0, 0, 10, 9], [0, 0, 10, 9]], [[0, 0, 10, 10]] * 2, [0, 1]).tolist()
    [0.9, 1.0]
    """
    dt, gt = as_boxes(dt_xywh, "dt_xywh"), as_boxes(gt_xywh, "gt_xywh")
    if len(dt) != len(gt):
        raise ValueError(
            f"dt_xywh and gt_xywh must have the same number of rows; got {len(dt)} and {len(gt)}"
        )
    crowd = _as_crowd(iscrowd, len(gt))
    return _coco_iou_aligned(tuple(dt.T), tuple(gt.T), crowd)


def _coco_iou_aligned(dt: tuple[np.ndarray, ...], gt: tuple[np.ndarray, ...],
                      crowd: np.ndarray) -> np.ndarray:
    """:func:`coco_iou` of aligned ``(p,)`` columns: the same operations in the same order
    (so the same bits), written into four buffers of ``p`` instead of a new array each (the
    matcher's candidate pairs: ~200 bytes a pair before, fewer passes over fresh memory)."""
    dx, dy, dw, dh = dt
    gx, gy, gw, gh = gt
    with np.errstate(all="ignore"):
        iw = np.add(dx, dw)
        other = np.add(gx, gw)
        np.fmin(iw, other, out=iw)
        np.fmax(dx, gx, out=other)
        iw -= other
        ih = np.add(dy, dh)
        np.add(gy, gh, out=other)
        np.fmin(ih, other, out=ih)
        np.fmax(dy, gy, out=other)
        ih -= other
        inter = np.multiply(iw, ih)
        dt_area = np.multiply(dw, dh)
        union = np.multiply(gw, gh, out=other)
        union += dt_area
        union -= inter
        np.copyto(union, dt_area, where=crowd)
        del dt_area
        iou = np.divide(inter, union, out=inter)
    # C skips the pair when ``iw <= 0``, which is False for NaN: NaN goes on to the division.
    apart = iw <= 0
    apart |= ih <= 0
    iou[apart] = 0.0
    return iou
