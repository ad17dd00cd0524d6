"""Fast lexicographic orderings for the hot paths.

``np.lexsort`` over several 500k-long keys costs a quarter of a second; packing the keys
into one int64 and sorting that with the default (unstable) quicksort is about ten times
faster, and just as deterministic when the packed keys are unique.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["lexorder", "descending_rank"]

_LIMIT = 2**62


def descending_rank(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense rank of each value, 0 for the largest; equal values share a rank.

    Returns the ranks (int64) and the number of distinct values.

    Examples
    --------
    >>> ranks, n = descending_rank(np.array([0.5, 0.9, 0.5, 0.1]))
    >>> ranks.tolist(), n
    ([1, 0, 1, 2], 3)
    """
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64), 0
    distinct, inverse = np.unique(-np.asarray(values, dtype=np.float64), return_inverse=True)
    return inverse.astype(np.int64).ravel(), len(distinct)


def lexorder(keys: Sequence[np.ndarray], *, rows_are_unique: bool = False) -> np.ndarray:
    """Indices that sort rows by ``keys`` (most significant first), ties by row index.

    Every key must hold non-negative integers. When ``rows_are_unique`` is false (the
    tuples of keys may repeat) the row index is appended as a final key, so the order is
    fully determined, like a stable sort's.

    Examples
    --------
    >>> lexorder([np.array([1, 0, 1, 0]), np.array([0, 5, 0, 2])]).tolist()
    [3, 1, 0, 2]
    """
    n = len(keys[0]) if keys else 0
    keys = [np.asarray(k, dtype=np.int64) for k in keys]
    if not rows_are_unique:
        keys.append(np.arange(n, dtype=np.int64))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if any(k.min() < 0 for k in keys):
        raise ValueError("lexorder keys must be non-negative integers")
    sizes = [int(k.max()) + 1 for k in keys]
    total = 1
    for size in sizes:
        total *= size
    if total >= _LIMIT:
        return np.lexsort(keys[::-1])
    packed = keys[0].copy()
    for key, size in zip(keys[1:], sizes[1:]):
        packed *= size
        packed += key
    return np.argsort(packed)
