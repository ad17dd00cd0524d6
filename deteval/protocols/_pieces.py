"""A match state cut into runs of whole categories, for accumulating piece by piece.

Accumulation treats every category on its own, so the state of a run of categories gives
those categories' curves exactly; pieces bound the temporaries and go to threads
(:func:`deteval._threads.thread_map`). How a state is cut depends on its rows alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .._sorting import sorted_unique
from .._threads import thread_map

__all__ = ["PieceSplit", "category_pieces", "grouped", "piece_numbers", "split_by_piece"]


def category_pieces(category: np.ndarray, n_k: int, rows: int) -> np.ndarray:
    """Bounds ``[0, k1, ..., n_k]`` of runs of whole categories of about ``rows`` rows.

    A run ends at the category whose rows reach the next multiple of ``rows``; a category
    larger than ``rows`` is a run of its own.

    >>> category_pieces(np.array([0, 0, 0, 1, 2, 2, 3]), 5, 3).tolist()
    [0, 1, 3, 5]
    """
    if not n_k:
        return np.zeros(2, np.int64)
    counts = np.cumsum(np.bincount(np.asarray(category, dtype=np.int64), minlength=n_k))
    cuts = np.searchsorted(counts, np.arange(rows, int(counts[-1]), rows), side="left") + 1
    return sorted_unique(np.r_[0, cuts[cuts < n_k], n_k])


class PieceSplit(NamedTuple):
    """A state's rows and match events grouped by piece (see :func:`split_by_piece`)."""

    rows: np.ndarray         # state rows, piece by piece, increasing inside a piece
    row_start: np.ndarray    # (P + 1,): piece c's rows are rows[row_start[c]:row_start[c + 1]]
    events: np.ndarray       # match events, piece by piece, increasing inside a piece
    event_start: np.ndarray  # (P + 1,), as row_start

    def piece(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """The rows and events of piece ``c``."""
        return (self.rows[self.row_start[c]:self.row_start[c + 1]],
                self.events[self.event_start[c]:self.event_start[c + 1]])

    def sizes(self) -> np.ndarray:
        """Rows plus events of each piece (P,): the work of each."""
        return np.diff(self.row_start) + np.diff(self.event_start)


def piece_numbers(category: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Each row's piece: the run of ``bounds`` its category falls in (uint16 when the
    pieces are few, so that grouping by it is a radix sort).

    >>> piece_numbers(np.array([2, 0, 1, 2]), np.array([0, 2, 3])).tolist()
    [1, 0, 0, 1]
    """
    n_pieces = len(bounds) - 1
    piece_of_k = np.repeat(np.arange(n_pieces, dtype=np.uint16 if n_pieces <= 1 << 16
                                     else np.int64), np.diff(bounds))
    return piece_of_k.take(category)


def grouped(piece: np.ndarray, n_pieces: int) -> tuple[np.ndarray, np.ndarray]:
    """The indices of ``piece`` grouped by piece number, increasing inside a group, and
    the (P + 1,) bounds of the groups. Indices are int32 where they fit: they live through
    the whole accumulation, the peak of an evaluation's memory.

    >>> [a.tolist() for a in grouped(np.array([1, 0, 0, 1], np.uint16), 2)]
    [[1, 2, 0, 3], [0, 2, 4]]
    """
    index = np.int32 if len(piece) < 2**31 else np.int64
    # numpy's stable sort of 16-bit keys is a linear radix sort.
    order = np.argsort(piece, kind="stable").astype(index)
    return order, np.r_[0, np.cumsum(np.bincount(piece, minlength=n_pieces))]


def split_by_piece(category: np.ndarray, event_row: np.ndarray, bounds: np.ndarray, *,
                   threads: int = 1, alongside: Callable[[], Any] | None = None
                   ) -> tuple[PieceSplit, Any]:
    """The rows (categories ``category``) and match events (rows ``event_row``) of each run
    of categories ``[bounds[c], bounds[c + 1])``, each in its order in the state: the rows
    and the events :func:`grouped` by :func:`piece_numbers`. The pieces are then slices,
    and their columns are gathered by whoever accumulates them.

    The two groupings, and ``alongside()`` when given (other work over the whole state),
    run side by side on up to ``threads`` threads, ``alongside`` first; returns the split
    and what ``alongside`` returned (None without it).

    >>> split, _ = split_by_piece(np.array([2, 0, 1, 2]), np.array([3, 1, 0]),
    ...                           np.array([0, 2, 3]))
    >>> [[a.tolist() for a in split.piece(c)] for c in range(2)]
    [[[1, 2], [1]], [[0, 3], [0, 2]]]
    """
    n_pieces = len(bounds) - 1
    row_piece = piece_numbers(category, bounds)
    tasks = [lambda: grouped(row_piece.take(event_row), n_pieces),
             lambda: grouped(row_piece, n_pieces)]
    if alongside is not None:
        tasks.insert(0, alongside)
    *other, (events, event_start), (rows, row_start) = thread_map(lambda task: task(), tasks,
                                                                   threads)
    return PieceSplit(rows, row_start, events, event_start), (other[0] if other else None)
