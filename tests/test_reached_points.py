"""COCO accumulation on the reached points only (``_coco_curves._reached_points``): with
increasing recall thresholds the points a segment reaches are a prefix of its row, and only
those are computed and written. The precision, recall and scores arrays must be those of the
full computation (every point, ``_write_points``' general way), bit for bit, for any
thresholds, ``max_detections``, ``use_categories`` and ``threads``; the general way is kept
where the recall thresholds are not increasing.
"""

from __future__ import annotations

import numpy as np
import pytest
from cocogen import make_dataset

import deteval
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.protocols import _coco_curves

_OPTIONS = [
    {},
    {"recall_thresholds": (0.0, 0.0, 0.2, 0.5, 0.5, 1.0)},          # repeats, both ends
    {"recall_thresholds": (0.3, 0.05, 0.9)},                        # not increasing
    {"max_detections": (1, 3, 100), "iou_thresholds": (0.1, 0.5, 0.95)},
    {"use_categories": False},
]


def _arrays(result) -> list[bytes]:
    return [np.asarray(getattr(result, k)).tobytes() for k in ("precision", "recall", "scores")]


@pytest.mark.parametrize("options", _OPTIONS, ids=range(len(_OPTIONS)))
def test_reached_points_equal_the_full_computation(options, monkeypatch):
    taken = []
    original = _coco_curves._reached_points

    def counting(*args, **kwargs):
        taken.append(original(*args, **kwargs))
        return taken[-1]

    for seed in range(4):
        gt, results = make_dataset(seed, n_images=6, n_categories=5, max_dt=12, p_many=0.1)
        dataset = read_coco_gt(gt)
        detections = read_coco_results(results, dataset)
        monkeypatch.setattr(_coco_curves, "_reached_points", counting)
        fast = [deteval.evaluate_coco(dataset, detections, threads=threads, **options)
                for threads in (1, 2, 3)]
        monkeypatch.setattr(_coco_curves, "_reached_points", lambda *a, **k: False)
        full = deteval.evaluate_coco(dataset, detections, threads=1, **options)
        for result in fast:
            assert _arrays(result) == _arrays(full)
            assert np.array_equal(result.stats, full.stats, equal_nan=True)
    thresholds = options.get("recall_thresholds", deteval.COCO.recall_thresholds)
    increasing = bool(np.all(np.diff(thresholds) >= 0))
    assert any(taken) == increasing      # taken on these data exactly when it may be


def test_views_with_other_strides_are_left_to_the_full_computation():
    """The reached points are written through the views' strides; views it cannot address
    that way (a reversed axis) get the general way."""
    view = np.zeros((2, 3, 2, 2))[:, ::-1]
    assert not _coco_curves._plain_strides(view)
    assert _coco_curves._plain_strides(np.zeros((2, 3, 2, 2, 3))[..., 1])
    flat, steps = _coco_curves._elements(np.arange(48.0).reshape(2, 3, 2, 4)[..., 1:3])
    assert steps == [24, 8, 4, 1] and flat[1 * 24 + 2 * 8 + 1 * 4 + 1] == 46.0
