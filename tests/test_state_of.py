"""``_coco_stages.state_of``: the match table reduced to the accumulation state. Its arrays
and dtypes equal a plain computation of the same rule (event positions and ignore flags
in int64, then narrowed to the smallest type their values fit; the other columns the
table's, in any integer type), whether every detection is kept or not, and when the area
ranges times thresholds do not fit int16."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from cocogen import make_dataset

import deteval
from deteval.protocols import _coco_stages as stages
from deteval.protocols.coco import COCOParams, prepare

_FIELDS = ("dt_kept", "iou_thresholds", "n_gt", "match_area", "match_gt", "gt_ignore",
           "match_threshold", "area_ranges", "n_detections", "dt_rank", "dt_out_of_range",
           "match_dt", "dt_score_rank")


def _narrowed(values, dtype):
    """``values`` as ``dtype`` when they fit it, else unchanged."""
    fits = not len(values) or (values.min() >= 0 and values.max() <= np.iinfo(dtype).max)
    return values.astype(dtype) if fits else values


def _reference(table, dt_k, dt_img, scores):
    kept = np.flatnonzero(table.dt_kept)
    n_t = len(table.iou_thresholds)
    area = table.match_area.astype(np.int64)
    ignored = table.gt_ignore.ravel()[area * table.n_gt + table.match_gt]
    at = area * n_t + table.match_threshold
    # (held in int32 when every area range's positions fit it, as the match columns)
    wide = np.int32 if len(table.area_ranges) * max(table.n_gt, n_t) < 2**31 else np.int64
    row_of = np.full(table.n_detections, -1, dtype=np.int64)
    row_of[kept] = np.arange(len(kept))
    return dict(image=_narrowed(dt_img[kept], np.int32), category=_narrowed(dt_k[kept], np.int32),
                score=scores[kept], rank=table.dt_rank[kept],
                out_of_range=table.dt_out_of_range[:, kept], event_row=row_of[table.match_dt],
                event_at=_narrowed(_narrowed(at, wide), np.int16), event_ignored=ignored,
                score_rank=table.dt_score_rank[kept])


@pytest.mark.parametrize("seed, many", [(0, 0.0), (1, 0.3), (2, 0.3)],
                         ids=["every detection kept", "groups beyond max_dets", "again"])
@pytest.mark.parametrize("thresholds", [10, 8_200, 12_000],
                         ids=["COCO", "A x T beyond int16", "values beyond int16"])
def test_state_equals_the_plain_computation(seed, many, thresholds):
    gt, results = make_dataset(seed, n_images=8, n_categories=5, p_many=many,
                               p_unknown_category=0.05 if many else 0.0)
    result = deteval.evaluate_coco(gt, results, threads=1)
    ctx = prepare(result.dataset, COCOParams())
    dt_k, dt_img, _ = stages.detection_positions(ctx, result.detections)
    table = SimpleNamespace(**{name: getattr(result.matches, name) for name in _FIELDS})
    table.iou_thresholds = np.linspace(0.5, 0.95, thresholds)   # (only its length is read)
    kept_all = bool(table.dt_kept.all())
    assert kept_all == (many == 0.0)
    state = stages.state_of(table, dt_k, dt_img, result.detections.scores)
    for name, expected in _reference(table, dt_k, dt_img, result.detections.scores).items():
        got = getattr(state, name)
        assert np.array_equal(got, expected), name
        if name in ("image", "category", "event_at", "event_ignored", "score"):
            assert got.dtype == expected.dtype, name    # (narrowed by their values)
            assert got.tobytes() == expected.tobytes(), name
    if thresholds == 12_000:    # (values beyond int16: kept in the wider type)
        assert state.event_at.max() > 2**15 and state.event_at.dtype == np.int32
