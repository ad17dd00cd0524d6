"""The match table: what the matcher (:mod:`deteval.matching`) found, for every detection,
IoU threshold and area range, and the dense views and exports read from it.

Every number deteval reports is computed from one :class:`MatchTable`, so AP, PR curves,
confusion matrices and drawings cannot disagree (docs/match-table.md). Import it from
:mod:`deteval.matching` or :mod:`deteval`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ._arrays import ReadOnlyArrays, frozen
from ._sorting import lexorder

__all__ = ["FN", "FP", "IGNORED", "MATCH_COLUMN_TYPES", "NOT_EVALUATED", "TP", "MatchTable",
           "narrow_match_column"]

#: Status codes of :meth:`MatchTable.detection_status` and :meth:`MatchTable.gt_status`.
NOT_EVALUATED = -1
FP = 0
FN = 0
TP = 1
IGNORED = 2


def _rows_text(matrix: np.ndarray) -> np.ndarray:
    """A ``(n, width)`` uint8 text matrix as ``n`` fixed-width byte strings."""
    return np.ascontiguousarray(matrix).view(f"S{matrix.shape[1]}").ravel()


def _text_rows(texts: np.ndarray) -> np.ndarray:
    """Fixed-width byte strings as a ``(n, width)`` uint8 text matrix."""
    return texts.view(np.uint8).reshape(len(texts), texts.dtype.itemsize)


#: The integer types of the match columns, narrowest first: a column is stored as the first
#: that holds its values (int8 area and threshold indices and int32 rows in practice). The
#: match columns are the largest arrays of a table, alive until the end of an evaluation.
MATCH_COLUMN_TYPES = {
    "match_area": (np.int8, np.int16, np.int32, np.int64),
    "match_threshold": (np.int8, np.int16, np.int32, np.int64),
    "match_dt": (np.int32, np.int64),
    "match_gt": (np.int32, np.int64),
}


def narrow_match_column(name: str, values: np.ndarray) -> np.ndarray:
    """``values`` as the narrowest type of ``MATCH_COLUMN_TYPES[name]`` that holds them
    (``values`` itself when it has that type or is not of integers).

    >>> narrow_match_column("match_dt", np.array([0, 2**31])).dtype.name
    'int64'
    >>> narrow_match_column("match_area", np.array([0, 3])).dtype.name
    'int8'
    """
    if values.dtype.kind not in "iu":
        return values
    lo, hi = (int(values.min()), int(values.max())) if values.size else (0, 0)
    for dtype in MATCH_COLUMN_TYPES[name]:
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return values.astype(dtype, copy=False)
    return values


@dataclass(frozen=True, eq=False)
class MatchTable(ReadOnlyArrays):
    """Result of matching: for every detection and IoU threshold, what it matched.

    Matches are stored sparsely (one row per match) for every area range; the dense views
    are computed on request. Indices refer to rows of the :class:`~deteval.data.Detections`
    and :class:`~deteval.data.GroundTruth` that were matched.

    Attributes
    ----------
    iou_thresholds : ndarray, shape (T,)
    area_ranges : ndarray, shape (A, 2)
        Inclusive ``[lo, hi]`` area bounds; index 0 is usually "all".
    dt_rank : ndarray of int, shape (n_dt,)
        Position of each detection in its group by descending score; -1 for detections that
        were not evaluated (image or category not selected).
    dt_kept : ndarray of bool, shape (n_dt,)
        Evaluated and within the top ``max_detections`` of its group.
    dt_score_rank : ndarray of int, shape (n_dt,)
        Dense rank of each evaluated detection's score among all evaluated detections
        (0 for the highest; equal scores share a rank); -1 for detections not evaluated.
    dt_out_of_range : ndarray of bool, shape (A, n_dt)
        Detection area outside each area range.
    gt_evaluated : ndarray of bool, shape (n_gt,)
    gt_crowd : ndarray of bool, shape (n_gt,)
    gt_ignore : ndarray of bool, shape (A, n_gt)
        Ignored per area range: crowd/ignore flag, or area outside the range.
    match_area, match_threshold, match_dt, match_gt : ndarray of int, shape (n_matches,)
        One row per match: area range index, threshold index, detection row, GT row (in
        no particular order). Stored narrow (:data:`MATCH_COLUMN_TYPES`): int8 indices and
        int32 rows unless the values need more; compute products in int64.
    dt_best_gt : ndarray of int, shape (n_dt,), optional
        VOC rule only: the object each detection looked at (the highest IoU in its group,
        the first on ties), -1 where no object overlaps it or it was not evaluated. With
        ``dt_best_iou`` it tells a duplicate (best object taken) from a poor localisation.
    dt_best_iou : ndarray of float, shape (n_dt,), optional
        VOC rule only: that highest IoU; 0 where no object overlaps, NaN where the
        detection was not evaluated (or is beyond ``max_detections``).
    """

    iou_thresholds: np.ndarray
    area_ranges: np.ndarray
    dt_rank: np.ndarray
    dt_kept: np.ndarray
    dt_score_rank: np.ndarray
    dt_out_of_range: np.ndarray
    gt_evaluated: np.ndarray
    gt_crowd: np.ndarray
    gt_ignore: np.ndarray
    match_area: np.ndarray
    match_threshold: np.ndarray
    match_dt: np.ndarray
    match_gt: np.ndarray
    dt_best_gt: np.ndarray | None = None
    dt_best_iou: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name in MATCH_COLUMN_TYPES and isinstance(value, np.ndarray):
                narrow = narrow_match_column(name, value)
                if narrow is not value:     # a new array, the table's own
                    object.__setattr__(self, name, frozen(narrow))
                    continue
            if isinstance(value, np.ndarray) and value.flags.writeable:
                # copy: never make the caller's own arrays read-only
                object.__setattr__(self, name, frozen(value.copy()))

    @property
    def n_detections(self) -> int:
        return len(self.dt_rank)

    @property
    def n_gt(self) -> int:
        return len(self.gt_evaluated)

    def _rows(self, area_index: int) -> np.ndarray:
        return np.flatnonzero(self.match_area == area_index)

    def detection_matches(self, area_index: int = 0) -> np.ndarray:
        """Matched GT row of every detection, shape (T, n_dt); -1 where unmatched."""
        out = np.full((len(self.iou_thresholds), self.n_detections), -1, dtype=np.int64)
        rows = self._rows(area_index)
        out[self.match_threshold[rows], self.match_dt[rows]] = self.match_gt[rows]
        return out

    def gt_matches(self, area_index: int = 0) -> np.ndarray:
        """Matching detection row of every GT object, shape (T, n_gt); -1 where unmatched.

        A crowd object (or, with the VOC rule, an ignored one) can absorb several detections;
        the one listed is the last matched.
        """
        out = np.full((len(self.iou_thresholds), self.n_gt), -1, dtype=np.int64)
        rows = self._rows(area_index)
        # Visit matches by (threshold, object, detection rank) and keep the last of each
        # (threshold, object): the lowest-scoring detection a crowd absorbed, as in gtm.
        rows = rows[lexorder([self.match_threshold[rows], self.match_gt[rows],
                              self.dt_rank[self.match_dt[rows]]])]
        t, g = self.match_threshold[rows], self.match_gt[rows]
        last = np.r_[(t[1:] != t[:-1]) | (g[1:] != g[:-1]), True] if len(rows) else []
        out[t[last], g[last]] = self.match_dt[rows][last]
        return out

    def detection_status(self, area_index: int = 0) -> np.ndarray:
        """Status of every detection at every threshold, shape (T, n_dt), int8.

        ``TP`` (1), ``FP`` (0), ``IGNORED`` (2: matched an ignored object, or unmatched and
        outside the area range) or ``NOT_EVALUATED`` (-1: not selected, or beyond the
        ``max_detections`` of its group).
        """
        matches = self.detection_matches(area_index)
        matched = matches >= 0
        ignored_match = np.zeros_like(matched)
        ignored_match[matched] = self.gt_ignore[area_index][matches[matched]]
        status = np.where(matched, np.where(ignored_match, IGNORED, TP),
                          np.where(self.dt_out_of_range[area_index], IGNORED, FP))
        status[:, ~self.dt_kept] = NOT_EVALUATED
        return status.astype(np.int8)

    def gt_status(self, area_index: int = 0) -> np.ndarray:
        """Status of every GT object at every threshold, shape (T, n_gt), int8.

        ``TP`` (1: matched), ``FN`` (0: missed), ``IGNORED`` (2) or ``NOT_EVALUATED`` (-1).
        """
        matched = self.gt_matches(area_index) >= 0
        status = np.where(self.gt_ignore[area_index], IGNORED, np.where(matched, TP, FN))
        status = np.broadcast_to(status, matched.shape).copy()
        status[:, ~self.gt_evaluated] = NOT_EVALUATED
        return status.astype(np.int8)

    def to_dict(self, area_index: int = 0) -> dict[str, np.ndarray]:
        """Dense arrays for one area range: matches and status of detections and GT.

        Tables made by the VOC rule add ``dt_best_gt`` and ``dt_best_iou``.
        """
        out = {
            "iou_thresholds": self.iou_thresholds.copy(),
            "dt_rank": self.dt_rank.copy(),
            "dt_match": self.detection_matches(area_index),
            "dt_status": self.detection_status(area_index),
            "gt_match": self.gt_matches(area_index),
            "gt_status": self.gt_status(area_index),
        }
        if self.dt_best_gt is not None:
            out["dt_best_gt"] = self.dt_best_gt.copy()
            out["dt_best_iou"] = self.dt_best_iou.copy()
        return out

    def to_json(self, path: str | os.PathLike | None = None, area_index: int = 0) -> str:
        """The :meth:`to_dict` arrays as JSON (written to ``path`` if given)."""
        import orjson

        text = orjson.dumps({k: v.tolist() for k, v in self.to_dict(area_index).items()}).decode()
        if path is not None:
            from pathlib import Path

            Path(path).write_text(text)
        return text

    def to_csv(self, path: str | os.PathLike | None = None, area_index: int = 0) -> str:
        """One row per (detection, threshold): ``detection, iou_threshold, status, gt``.

        Status is written as ``TP``, ``FP``, ``IGNORED`` or ``NOT_EVALUATED``; ``gt`` is the
        matched GT row or empty.
        """
        from ._csv_text import csv_chunks, int_field, label_field

        n_t, n_dt = len(self.iou_thresholds), self.n_detections
        # The threshold and the status as one field: one label per (threshold, status),
        # code t * 4 + status + 1; rows (detection, threshold). Unmatched: FP, or IGNORED
        # outside the area range; NOT_EVALUATED beyond max_detections (as detection_status).
        names = ["NOT_EVALUATED", "FP", "TP", "IGNORED"]  # index: status + 1
        labels = [f"{t!r},{name}" for t in self.iou_thresholds.tolist() for name in names]
        unmatched = np.where(self.dt_out_of_range[area_index], IGNORED + 1, FP + 1)
        code = np.empty((n_dt, n_t), dtype=np.int64)
        code[:] = np.where(self.dt_kept, unmatched, NOT_EVALUATED + 1)[:, None]
        code += np.arange(0, 4 * n_t, 4)
        code = code.ravel()
        matches = np.full(n_dt * n_t, -1, dtype=np.int64)
        rows = self._rows(area_index)
        at = self.match_dt[rows].astype(np.int64) * n_t + self.match_threshold[rows]
        matches[at] = self.match_gt[rows]
        kept = self.dt_kept[self.match_dt[rows]]
        status = np.where(self.gt_ignore[area_index][self.match_gt[rows]], IGNORED, TP)
        code[at[kept]] = (self.match_threshold[rows].astype(np.int64) * 4 + status + 1)[kept]
        # Each distinct text written once; the chunks of rows look theirs up. Labels never
        # used are left out, so that the field is as wide as the longest one used.
        used = np.bincount(code, minlength=len(labels)) > 0
        label_text = _rows_text(label_field(np.arange(len(labels)), [
            label if u else "" for label, u in zip(labels, used.tolist())], csv=False))
        gt_text = _rows_text(int_field(np.arange(-1, self.n_gt), empty_below=0))  # [g + 1]
        detection = int_field(np.arange(n_dt))
        columns = (
            lambda lo, hi: np.repeat(detection[lo // n_t:-(-hi // n_t)], n_t, axis=0)[
                lo % n_t:lo % n_t + hi - lo],
            lambda lo, hi: _text_rows(label_text.take(code[lo:hi])),
            lambda lo, hi: _text_rows(gt_text.take(matches[lo:hi] + 1)),
        )
        chunks = csv_chunks(["detection", "iou_threshold", "status", "gt"], columns, n_t * n_dt)
        if path is not None:
            with open(path, "wb") as out:
                out.writelines(chunks)
        return "".join([chunk.decode() for chunk in chunks])
