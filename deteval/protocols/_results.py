"""What the results of the COCO-style protocols (COCO, LVIS) share: a stat by name, the
per-class table's rows and the JSON-ready form (the numbers themselves are each protocol's).

Examples
--------
>>> import numpy as np
>>> precision = np.array([[0.5, -1.0], [0.7, -1.0]])        # e.g. (IoU, category)
>>> per_class_rows(np.array([7, 9]), {"name": ("cat", "dog")}, (("AP", None, "all"),),
...                lambda iou, area, k: mean_valid(precision[:, k]),
...                ("AR", lambda k: 1.0), {"n_gt": np.array([2, 0])})
[{'category_id': 7, 'name': 'cat', 'AP': 0.6, 'AR': 1.0, 'n_gt': 2}, {'category_id': 9, \
'name': 'dog', 'AP': -1.0, 'AR': 1.0, 'n_gt': 0}]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["AREA_COLUMNS", "mean_valid", "params_dict", "per_class_rows", "stat_by_name",
           "summary_dict"]

#: The per-class AP columns of the COCO-style tables: (name, IoU or None for all, area).
AREA_COLUMNS = (("AP", None, "all"), ("AP50", 0.5, "all"), ("AP75", 0.75, "all"),
                ("APs", None, "small"), ("APm", None, "medium"), ("APl", None, "large"))


def mean_valid(values: np.ndarray) -> float:
    """The mean of the values > -1, or -1 when there are none (pycocotools' ``_summarize``)."""
    flat = np.asarray(values).ravel()    # (C order, as boolean indexing: the same values)
    valid = flat.compress(flat > -1)      # (several times faster than boolean indexing)
    return -1.0 if len(valid) == 0 else float(np.mean(valid))


def stat_by_name(names: Sequence[str], stats: np.ndarray, name: str) -> float:
    """``stats[names.index(name)]``, or a KeyError listing the names."""
    if name not in names:
        raise KeyError(f"unknown stat {name!r}; choose one of {', '.join(names)}")
    return float(stats[list(names).index(name)])


def per_class_rows(category_ids: np.ndarray, leading: Mapping[str, Sequence[Any]],
                   columns: Sequence[tuple[str, float | None, str]],
                   ap: Callable[[float | None, str, int], float],
                   recall: tuple[str, Callable[[int], float]],
                   counts: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """One dict per category, keys in this order: ``category_id``, the ``leading`` columns
    (a value per category), each AP column ``ap(iou, area, k)``, the recall column, then
    the ``counts`` (as int)."""
    recall_name, recall_of = recall
    rows = []
    for k, cid in enumerate(category_ids.tolist()):
        row: dict[str, Any] = {"category_id": cid}
        row.update((name, values[k]) for name, values in leading.items())
        row.update((label, ap(iou, area, k)) for label, iou, area in columns)
        row[recall_name] = recall_of(k)
        row.update((name, int(values[k])) for name, values in counts.items())
        rows.append(row)
    return rows


def params_dict(params: Any) -> dict[str, Any]:
    """A params dataclass as a JSON-ready dict (tuples as lists)."""
    return {k: (list(v) if isinstance(v, tuple) else v)
            for k, v in dataclasses.asdict(params).items()}


def summary_dict(result: Any) -> dict[str, Any]:
    """A COCO-style result as JSON: stats (in order and named), summary lines, per-class
    table, notes and parameters."""
    return {
        "stats": [float(s) for s in result.stats],
        "stats_named": {n: float(s) for n, s in zip(result.stat_names, result.stats)},
        "summary": result.summary_lines,
        "per_class": result.per_class(),
        "notes": list(result.notes),
        "params": params_dict(result.params),
    }
