"""What the geometry modules share: limits, corner offsets, error messages."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import FormatError

_POLYGON, _MULTIPOLYGON = 3, 6  # shapely type ids
_ANGLE_UNITS = ("degrees", "radians")
_INVALID = ("raise", "repair")
# Coordinates (and rotated-box sizes) are refused from this magnitude on: products of two
# of them, as areas take, must stay finite in float64 (whose largest value is ~1.8e308).
_MAX_COORDINATE = 1e150
# Unit offsets of the four corners in the box frame, in the documented order.
_CORNER_U = np.array([-0.5, 0.5, 0.5, -0.5])
_CORNER_V = np.array([-0.5, -0.5, 0.5, 0.5])
_QUARTER_COS = np.array([1.0, 0.0, -1.0, 0.0])
_QUARTER_SIN = np.array([0.0, 1.0, 0.0, -1.0])


# --------------------------------------------------------------------------------------
# Where errors point


def _labeller(n: int, source: Any, records: Any, default: str):
    """A function ``i -> (source, record)`` for the messages about object ``i``."""
    if records is not None:
        records = [str(r) for r in records]
        if len(records) != n:
            raise ValueError(f"records must have one label per object ({n}); "
                             f"got {len(records)}")
    if source is not None and not isinstance(source, str):
        source = [None if s is None else str(s) for s in source]
        if len(source) != n:
            raise ValueError(f"source must be one str or one per object ({n}); "
                             f"got {len(source)}")

    def where(i: int) -> tuple[str | None, str]:
        src = source if source is None or isinstance(source, str) else source[i]
        return src, (records[i] if records is not None else f"{default} {i}")

    return where


def _error(message: str, location: tuple[str | None, str]) -> FormatError:
    return FormatError(message, source=location[0], record=location[1])
