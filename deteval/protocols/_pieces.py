"""A match state cut into runs of whole categories, for accumulating piece by piece.

Accumulation treats every category on its own, so the state of a run of categories gives
those categories' curves exactly; pieces bound the temporaries and go to threads
(:func:`deteval._threads.thread_map`). How a state is cut depends on its rows alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from .._sorting import sorted_unique

__all__ = ["category_pieces", "state_pieces"]

#: Columns of a state with one value per row (``out_of_range``: one per row and area
#: range, rows on its last axis), and with one value per match event.
_ROW_COLUMNS = ("image", "score", "rank", "score_rank")
_EVENT_COLUMNS = ("event_at", "event_ignored")


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


def state_pieces(state: Any, bounds: np.ndarray) -> list[tuple[int, int, Callable[[], Any]]]:
    """``(lo, hi, make)`` per run of categories ``[lo, hi)`` of ``bounds``.

    ``make()`` builds the state of those rows, categories numbered from ``lo``, rows and
    events in their order in ``state``. Sorting by piece once makes the whole linear in
    rows and events; each piece is built only when its ``make`` is called.
    """
    n_pieces = len(bounds) - 1
    # Small piece numbers: numpy's stable sort of 16-bit keys is a linear radix sort.
    piece_of_k = np.repeat(np.arange(n_pieces, dtype=np.uint16 if n_pieces <= 1 << 16
                                     else np.int64), np.diff(bounds))
    row_piece = piece_of_k.take(state.category)
    # Row and event indices as int32 where they fit: they live through the whole
    # accumulation, the peak of an evaluation's memory.
    index = np.int32 if max(len(row_piece), len(state.event_row)) < 2**31 else np.int64
    rows = np.argsort(row_piece, kind="stable").astype(index)
    row_start = np.r_[0, np.cumsum(np.bincount(row_piece, minlength=n_pieces))]
    new_row = np.empty(len(rows), dtype=index)     # each row's position in its piece
    new_row[rows] = np.arange(len(rows)) - row_start.take(row_piece.take(rows))
    ev_row = state.event_row
    ev_piece = row_piece.take(ev_row)
    events = np.argsort(ev_piece, kind="stable").astype(index)
    ev_start = np.r_[0, np.cumsum(np.bincount(ev_piece, minlength=n_pieces))]
    del row_piece, ev_piece

    def maker(c: int) -> Callable[[], Any]:
        def make() -> Any:
            r = rows[row_start[c]:row_start[c + 1]]
            e = events[ev_start[c]:ev_start[c + 1]]
            columns = {name: getattr(state, name).take(r) for name in _ROW_COLUMNS
                       if getattr(state, name) is not None}
            columns.update({name: getattr(state, name).take(e) for name in _EVENT_COLUMNS})
            return dataclasses.replace(
                state, **columns, category=state.category.take(r) - bounds[c],
                out_of_range=state.out_of_range.take(r, axis=1),
                event_row=new_row.take(ev_row.take(e)))
        return make

    return [(int(bounds[c]), int(bounds[c + 1]), maker(c)) for c in range(n_pieces)]
