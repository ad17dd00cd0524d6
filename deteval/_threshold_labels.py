"""The written form of an IoU threshold in labels (``mAP@0.50``, ``AP@0.501``): every VOC
summary, bootstrap name, report row, plot label and CLI line that names a threshold uses it,
so a label is faithful (it reads back as the threshold) and two thresholds never share one.

Imports nothing but the standard library (the command line uses it without numpy).
"""

from __future__ import annotations

from decimal import Decimal

__all__ = ["threshold_label", "threshold_labels"]


def _decimal(value: float, digits: int | None) -> str:
    """``value`` as a plain decimal (no exponent) with at least two decimals: the shortest
    that reads back as ``value`` (``digits`` None), or as ``value`` rounded to ``digits``
    significant digits."""
    shortest = repr(float(value if digits is None else f"{value:.{digits}g}"))
    whole, _, fraction = format(Decimal(shortest), "f").partition(".")
    return f"{whole}.{fraction:0<2}"


def threshold_label(value: float) -> str:
    """A threshold written for a label: the shortest decimal of it, with at least two
    decimals, after dropping the last bits of binary noise (12 significant digits:
    ``np.linspace(0.5, 0.95, 10)``'s ``0.6000000000000001`` is ``0.60``).

    >>> threshold_label(0.5), threshold_label(0.501), threshold_label(0.6000000000000001)
    ('0.50', '0.501', '0.60')
    >>> threshold_label(1.0), threshold_label(1e-05)
    ('1.00', '0.00001')
    """
    return _decimal(float(value), 12)


def threshold_labels(values) -> list[str]:
    """:func:`threshold_label` of each threshold, or (when two would share a label: they
    differ beyond 12 significant digits) each one's shortest round-tripping decimal, which
    are distinct for distinct floats.

    >>> threshold_labels([0.5, 0.501])
    ['0.50', '0.501']
    >>> threshold_labels([0.5, 0.5000000000001])
    ['0.50', '0.5000000000001']
    """
    values = [float(v) for v in values]
    labels = [threshold_label(v) for v in values]
    if len(set(labels)) < len(set(values)):
        labels = [_decimal(v, None) for v in values]
    return labels
