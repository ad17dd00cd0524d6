"""Small array helpers shared by the result and table types."""

from __future__ import annotations

import numpy as np

__all__ = ["frozen"]


def frozen(array: np.ndarray, *, copy: bool = False) -> np.ndarray:
    """``array`` made read-only, in place, or a read-only copy with ``copy=True``.

    In place is for arrays the caller has just made and nothing else refers to; a copy is
    for arrays that may belong to someone else (whose flags must not change).

    Examples
    --------
    >>> a = np.arange(3)
    >>> frozen(a) is a, a.flags.writeable
    (True, False)
    >>> b = np.arange(3)
    >>> c = frozen(b, copy=True)
    >>> c is b, b.flags.writeable, c.flags.writeable
    (False, True, False)
    """
    if copy:
        array = np.array(array, copy=True)
    array.setflags(write=False)
    return array
