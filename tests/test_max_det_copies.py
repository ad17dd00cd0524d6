"""COCO accumulation of the max-detections settings from the largest down
(``_coco_curves.accumulate_into``): a category whose rows all rank below a setting keeps
them all, as in the (larger) setting done before it, so its points are copied from that
setting when at least a quarter of the categories are; the others are computed again. The
arrays must be those of every setting computed on its own, bit for bit, for any settings
(repeated, unsorted, larger than every image's detections), recall thresholds,
``use_categories`` and ``threads``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from cocogen import make_dataset

import deteval
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.protocols import _coco_curves

_OPTIONS = [
    {},
    {"max_detections": (1, 2, 3, 100)},
    {"max_detections": (5, 5, 1)},                                  # repeated, not sorted
    {"max_detections": (100, 2, 200)},
    {"max_detections": (2, 3, 4), "recall_thresholds": (0.3, 0.05, 0.9)},  # not increasing
    {"max_detections": (1, 3, 10), "use_categories": False},
]


def _arrays(result) -> list[bytes]:
    return [np.asarray(getattr(result, k)).tobytes() for k in ("precision", "recall", "scores")]


def _pairs():
    """Pairs where few categories have several detections in an image (most copied) and
    where most do (computed whole), one with more than 100 detections in some groups."""
    for seed, max_dt, p_many in ((0, 2, 0.0), (1, 2, 0.0), (2, 6, 0.0), (3, 6, 0.1)):
        gt, results = make_dataset(seed, n_images=8, n_categories=20, max_dt=max_dt,
                                   p_crowd=0.05, p_many=p_many)
        dataset = read_coco_gt(gt)
        yield dataset, read_coco_results(results, dataset)


@pytest.mark.parametrize("options", _OPTIONS, ids=range(len(_OPTIONS)))
def test_copied_settings_equal_each_setting_computed_on_its_own(options, monkeypatch):
    def every_category_changes(o):
        # Rows ranked beyond every setting: each setting is computed on its own.
        return np.full(len(o.k_start) - 1, 2**62)

    for dataset, detections in _pairs():
        fast = [deteval.evaluate_coco(dataset, detections, threads=threads, **options)
                for threads in (1, 2)]
        monkeypatch.setattr(_coco_curves, "_top_rank", every_category_changes)
        alone = deteval.evaluate_coco(dataset, detections, threads=1, **options)
        monkeypatch.undo()
        for result in fast:
            assert _arrays(result) == _arrays(alone)
            assert np.array_equal(result.stats, alone.stats, equal_nan=True)


def test_a_category_is_copied_only_when_its_kept_rows_are_the_same(monkeypatch):
    """On the generated pairs some categories are copied and some computed again (the test
    above compares both), seen through the categories ``_write_points`` is given."""
    given = []
    original = _coco_curves._write_points

    def recording(*args, chosen=None, **kwargs):
        given.append(None if chosen is None else chosen.copy())
        return original(*args, chosen=chosen, **kwargs)

    monkeypatch.setattr(_coco_curves, "_write_points", recording)
    for dataset, detections in _pairs():
        before = len(given)
        deteval.evaluate_coco(dataset, detections, threads=1, max_detections=(1, 3, 100))
        assert given[before] is None                         # the largest: every category
    partial = [c for c in given if c is not None]
    assert any(c.any() and not c.all() for c in partial)     # some copied, some computed


def test_top_rank_per_category():
    """``_top_rank``: each category's highest rank (rows in accumulation order, categories
    from ``k_start``), -1 for a category without rows, wherever it lies."""
    o = SimpleNamespace(rank=np.array([0, 1, 2, 0, 0, 3, 1]), k_start=np.array([0, 3, 3, 4, 7]))
    assert _coco_curves._top_rank(o).tolist() == [2, -1, 0, 3]
    o = SimpleNamespace(rank=np.array([4, 0]), k_start=np.array([0, 0, 1, 2, 2]))
    assert _coco_curves._top_rank(o).tolist() == [-1, 4, 0, -1]
    o = SimpleNamespace(rank=np.array([], dtype=np.int64), k_start=np.array([0, 0]))
    assert _coco_curves._top_rank(o).tolist() == [-1]
