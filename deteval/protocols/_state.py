"""What the COCO and VOC match states share: columns by name, size, small integer types."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


class StateColumns:
    """Behaviour shared by the frozen state dataclasses (every field an array but
    ``score_rank``, a cache that merges drop)."""

    def __len__(self) -> int:
        return len(self.score)  # type: ignore[attr-defined]

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return sum(a.nbytes for a in self.arrays().values())

    def arrays(self) -> dict[str, np.ndarray]:
        """The columns by name (``score_rank`` left out: it is recomputed after a merge)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)  # type: ignore
                if f.name != "score_rank"}


def small(values: np.ndarray, dtype: Any) -> np.ndarray:
    """``values`` as the smaller non-negative integer ``dtype``; OverflowError if they do not
    fit."""
    values = np.asarray(values)
    if len(values) and (values.max() > np.iinfo(dtype).max or values.min() < 0):
        raise OverflowError(f"state values up to {values.max()} do not fit {np.dtype(dtype)}")
    return values.astype(dtype, copy=False)
