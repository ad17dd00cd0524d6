"""Average precision of one precision-recall curve, by the interpolation rule of a reference.

A curve is given as the running recall and precision after each detection, in descending
score order (what the evaluation protocols compute per class). The methods differ in how they
turn those points into one number:

``"voc11"``
    VOC2007's 11-point AP as py-faster-rcnn and detectron2 compute it: for ``t`` in
    ``np.arange(0, 1.1, 0.1)``, ``p(t) = max(precision[recall >= t])`` (0 when no recall
    reaches ``t``), accumulated as ``ap += p(t) / 11`` in that order. Three of those ``t``
    are not the decimals they look like: 0.30000000000000004, 0.6000000000000001 and
    0.7000000000000001, so a recall of exactly 3/5 does not reach ``t = 0.6``
    (docs/protocols/voc.md §4.1, §5).
``"voc11-devkit"``
    The same rule with the official MATLAB devkit's thresholds ``t = 0:0.1:1``. MATLAB's colon
    operator builds the first half of the range upwards from 0 and the second half downwards
    from 1, so its 0.6 and 0.7 are the doubles nearest 0.6 and 0.7 (only 0.30000000000000004
    stays above its decimal). A recall of exactly 3/5 does reach 0.6 here.
``"all-points"``
    VOC2010+ (devkit ``VOCap``, detectron2 ``use_07_metric=False``): the area under the
    precision envelope. With sentinels ``mrec = [0, recall..., 1]`` and
    ``mpre = [0, precision..., 0]``, ``mpre`` is made non-increasing from the right (a running
    maximum), and ``AP = sum((mrec[i+1] - mrec[i]) * mpre[i+1])`` over the ``i`` where
    ``mrec`` changes, summed with ``np.sum`` as detectron2 does.
``"coco101"``
    COCO's 101-point AP (pycocotools ``accumulate``): the precision envelope (running maximum
    from the right) is sampled at the recall thresholds ``np.linspace(0, 1, 101)``, each taking
    the first point whose recall is at least the threshold (``searchsorted`` on the left);
    thresholds beyond the highest recall give 0. AP is the mean of the 101 samples. The caller
    decides how precision is computed (pycocotools adds ``np.spacing(1)`` to its
    denominator).

Examples
--------
docs/protocols/voc.md §5: five positives, detections TP, TP, FP, TP.

>>> recall = [0.2, 0.4, 0.4, 0.6]
>>> precision = [1.0, 1.0, 2 / 3, 0.75]
>>> interpolated_average_precision(recall, precision, method="voc11")
0.5227272727272727
>>> interpolated_average_precision(recall, precision, method="voc11-devkit")
0.5909090909090908
>>> interpolated_average_precision(recall, precision, method="all-points")
0.55
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = ["AP_METHODS", "envelope_at", "interpolated_average_precision"]

#: The interpolation rules :func:`interpolated_average_precision` knows.
AP_METHODS = ("voc11", "voc11-devkit", "all-points", "coco101")

# np.arange(0, 1.1, 0.1): py-faster-rcnn's and detectron2's 11 recall thresholds.
_VOC11_THRESHOLDS = np.arange(0.0, 1.1, 0.1)
# MATLAB's 0:0.1:1: k * 0.1 for the first half, 1 - k * 0.1 for the second (the colon
# operator works symmetrically from both ends), so 0.6 and 0.7 are the nearest doubles.
_VOC11_DEVKIT_THRESHOLDS = np.r_[np.arange(6) * 0.1, 1.0 - np.arange(4, -1, -1) * 0.1]
# np.linspace(0, 1, 101): pycocotools' recThrs, 1 ulp above k/100 for some k.
_COCO101_THRESHOLDS = np.linspace(0.0, 1.0, 101)

#: The recall thresholds of the rules that sample the precision envelope, by method name
#: (read by :mod:`deteval.diagnostics.bootstrap_voc`).
SAMPLED_RECALL_THRESHOLDS = {"voc11": _VOC11_THRESHOLDS,
                             "voc11-devkit": _VOC11_DEVKIT_THRESHOLDS,
                             "coco101": _COCO101_THRESHOLDS}


def envelope_at(recall: np.ndarray, precision: np.ndarray,
                thresholds: np.ndarray) -> np.ndarray:
    """The precision envelope (running maximum from the right) read at the first point whose
    recall reaches each threshold, 0 where none does: how the devkit's 11-point AP, COCO's
    ``accumulate`` and lvis-api sample a curve.

    Parameters
    ----------
    recall, precision : ndarray of float64, shape (n,)
        The curve, recall non-decreasing (detections in descending score order).
    thresholds : ndarray of float64, shape (T,)

    Returns
    -------
    ndarray of float64, shape (T,)

    Examples
    --------
    >>> envelope_at(np.array([0.5, 0.5, 1.0]), np.array([1.0, 0.5, 2 / 3]),
    ...             np.array([0.0, 0.6, 1.0, 1.1])).tolist()
    [1.0, 0.6666666666666666, 0.6666666666666666, 0.0]
    """
    envelope = np.maximum.accumulate(precision[::-1])[::-1]
    first = np.searchsorted(recall, thresholds, side="left")
    reached = first < len(recall)
    samples = np.zeros(len(thresholds))
    samples[reached] = envelope[first[reached]]
    return samples


def _curve(name: str, values: Any, *, allow_nan: bool) -> np.ndarray:
    array = np.asarray(values)
    if array.size and array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers; got dtype {array.dtype}")
    array = np.asarray(array, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array (one value per detection); "
                         f"got shape {array.shape}")
    nan = np.isnan(array)
    if not allow_nan and nan.any():
        raise ValueError(f"{name} must not hold NaN; got NaN at position "
                         f"{int(np.flatnonzero(nan)[0])}")
    bad = np.flatnonzero(~nan & ((array < 0) | (array > 1)))
    if len(bad):
        raise ValueError(f"{name} must hold values in [0, 1]; got {float(array[bad[0]])!r} at "
                         f"position {bad[0]}")
    return array


def interpolated_average_precision(recall: Any, precision: Any, *,
                                   method: str = "all-points") -> float:
    """Average precision of one precision-recall curve, by an interpolation rule.

    Not to be confused with :func:`deteval.classification.average_precision`, the average
    precision of scores against true labels (scikit-learn's ``average_precision_score``).

    Parameters
    ----------
    recall : array_like, shape (n,)
        Recall after each detection, in descending score order: non-decreasing, in [0, 1].
    precision : array_like, shape (n,)
        Precision after each detection, in [0, 1]. NaN (``0 / 0``, before the first counted
        detection, as the devkit's ``tp ./ (fp + tp)`` gives) is skipped, as MATLAB's ``max``
        skips it; since precision is never negative this is the same as reading it as 0.
    method : {"voc11", "voc11-devkit", "all-points", "coco101"}
        The interpolation rule; see the module documentation.

    Returns
    -------
    float
        In [0, 1], except that ``"voc11"`` and ``"voc11-devkit"`` sum eleven times
        ``1 / 11`` for a perfect curve, which is 1.0000000000000002 in float64, exactly as the
        references compute it. An empty curve (no detections) gives 0.0 with every method.

    Raises
    ------
    ValueError
        Unknown method; arrays that are not 1-D, differ in length, hold values outside
        [0, 1] (or NaN recall); recall that decreases.
    TypeError
        Arrays that do not hold numbers.

    Notes
    -----
    The devkit's 11-point AP becomes NaN when every precision value is NaN (every detection
    of the class fell on a *difficult* object); here those points are skipped and such a
    curve gives 0, the value detectron2 gets for it.

    Examples
    --------
    >>> interpolated_average_precision([0.5, 1.0], [1.0, 1.0], method="all-points")
    1.0
    >>> interpolated_average_precision([0.5, 0.5, 1.0], [1.0, 0.5, 2 / 3], method="all-points")
    0.8333333333333333
    >>> interpolated_average_precision([0.5, 0.5, 1.0], [1.0, 0.5, 2 / 3], method="coco101")
    0.834983498349835
    >>> interpolated_average_precision([], [], method="voc11")
    0.0
    """
    if method not in AP_METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, AP_METHODS))}; "
                         f"got {method!r}")
    rec = _curve("recall", recall, allow_nan=False)
    prec = _curve("precision", precision, allow_nan=True)
    if len(rec) != len(prec):
        raise ValueError(f"recall and precision must have the same length; got {len(rec)} "
                         f"and {len(prec)}")
    if len(rec) > 1 and np.any(rec[1:] < rec[:-1]):
        bad = int(np.flatnonzero(rec[1:] < rec[:-1])[0]) + 1
        raise ValueError(f"recall must be non-decreasing (detections in descending score "
                         f"order); recall[{bad}] = {float(rec[bad])!r} < recall[{bad - 1}] = "
                         f"{float(rec[bad - 1])!r}")
    # NaN precision can only precede the first counted detection; as 0 it changes no
    # maximum, because precision is never negative.
    prec = np.where(np.isnan(prec), 0.0, prec)

    if method in ("voc11", "voc11-devkit"):
        thresholds = _VOC11_THRESHOLDS if method == "voc11" else _VOC11_DEVKIT_THRESHOLDS
        # max(precision[recall >= t]) = the running maximum from the right, read at the
        # first point reaching t (recall is sorted).
        ap = 0.0
        for p in envelope_at(rec, prec, thresholds).tolist():
            ap = ap + p / 11.0  # in this order, as the references accumulate
        return ap
    if method == "all-points":
        mrec = np.concatenate(([0.0], rec, [1.0]))
        mpre = np.concatenate(([0.0], prec, [0.0]))
        mpre = np.maximum.accumulate(mpre[::-1])[::-1]
        changes = np.flatnonzero(mrec[1:] != mrec[:-1])
        return float(np.sum((mrec[changes + 1] - mrec[changes]) * mpre[changes + 1]))
    # coco101
    return float(np.mean(envelope_at(rec, prec, _COCO101_THRESHOLDS)))


# Until protocols/voc.py imports the new name; a silent alias, so that the protocol itself
# never warns. Users get the warning through deteval.average_precision.
average_precision = interpolated_average_precision


def deprecated_average_precision(recall: Any, precision: Any, *,
                                 method: str = "all-points") -> float:
    """Deprecated alias of :func:`interpolated_average_precision` (``deteval.average_precision``).

    The name clashed with :func:`deteval.classification.average_precision`, which takes
    labels and scores; it is kept for one release and warns when called.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     deprecated_average_precision([0.5, 1.0], [1.0, 1.0])
    1.0
    >>> caught[0].category.__name__
    'DeprecationWarning'
    """
    warnings.warn("deteval.average_precision is deprecated and will be removed in the next "
                  "release; use deteval.interpolated_average_precision (same arguments)",
                  DeprecationWarning, stacklevel=2)
    return interpolated_average_precision(recall, precision, method=method)


deprecated_average_precision.__name__ = "average_precision"
deprecated_average_precision.__qualname__ = "average_precision"
