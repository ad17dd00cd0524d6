"""The extents of keypoints (deteval.keypoints.points_extent): read by the OKS bound and by the
keypoint results reader (a result's box, as loadRes sets it), and OKSTables shared by threads.

The extents are compared with a per-row loop over Python floats; the result boxes with
nanmin / nanmax over the table's columns (the reader's rule, signed zeros included); the OKS
values of threads with those of one thread.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

import deteval.keypoints
from deteval.io.coco.columns import _keypoint_boxes
from deteval.keypoints import OKSTables, points_extent


def _loop_extent(x, y, kept=None):
    """Per row: min and max of the kept points' x and y as Python floats (inf to -inf for
    none; NaN when a kept value is NaN)."""
    out = []
    for r in range(len(x)):
        row = []
        for values in (x[r], y[r]):
            chosen = [float(v) for j, v in enumerate(values) if kept is None or kept[r, j]]
            if any(math.isnan(v) for v in chosen):
                row += [math.nan, math.nan]
            else:
                row += [min(chosen, default=math.inf), max(chosen, default=-math.inf)]
        out.append(row)
    return np.array(out, dtype=np.float64).reshape(-1, 4)


@pytest.mark.parametrize("rows, k", [(0, 17), (1, 1), (511, 17), (1300, 5), (1025, 30)])
def test_points_extent_is_the_rows_min_and_max(rows, k):
    rng = np.random.default_rng([rows, k])
    table = np.round(rng.normal(100.0, 50.0, (rows, k, 3)), 1)
    table[rng.random((rows, k, 3)) < 0.02] = np.nan
    kept = rng.random((rows, k)) < 0.6
    if rows:
        kept[0] = False     # a row without kept points: inf to -inf
    for mask in (None, kept):
        got = points_extent(table[:, :, 0], table[:, :, 1], mask)
        expected = _loop_extent(table[:, :, 0], table[:, :, 1], mask)
        assert got.shape == (rows, 4)
        assert np.array_equal(got, expected, equal_nan=True)


def _nan_boxes(keypoints):
    """The result boxes' rule: nanmin / nanmax of all K points over the table's columns."""
    x0 = np.nanmin(keypoints[:, :, 0], axis=1, initial=np.inf)
    x1 = np.nanmax(keypoints[:, :, 0], axis=1, initial=-np.inf)
    y0 = np.nanmin(keypoints[:, :, 1], axis=1, initial=np.inf)
    y1 = np.nanmax(keypoints[:, :, 1], axis=1, initial=-np.inf)
    return np.column_stack([x0, y0, x1 - x0, y1 - y0])


@pytest.mark.parametrize("seed", range(6))
def test_result_boxes_keep_nanmin_values_and_signed_zeros(seed):
    """Boxes of keypoint results: NaN ignored, and of 0.0 and -0.0 the one nanmin keeps
    (the block reduction's rows with a zero or NaN bound are made by nanmin)."""
    rng = np.random.default_rng(seed)
    rows, k = int(rng.integers(1, 1500)), int(rng.integers(1, 20))
    table = rng.choice([0.0, -0.0, 1.5, -2.0, 7.25, np.nan], size=(rows, k, 3),
                       p=[0.2, 0.2, 0.2, 0.2, 0.15, 0.05])
    table[:, 0, :2] = rng.normal(0.0, 3.0, (rows, 2))    # every row has a number
    xywh, area = _keypoint_boxes(table, [f"results[{i}]" for i in range(rows)], "r.json", None)
    expected = _nan_boxes(table)
    assert xywh.tobytes() == expected.tobytes()
    assert area.tobytes() == (expected[:, 2] * expected[:, 3]).tobytes()


def test_oks_tables_shared_by_threads_build_one_layout(monkeypatch):
    """Two threads asking an OKSTables for OKS with a floor at once: the values of one
    thread, and the layout and its extents made once (the other thread waits)."""
    rng = np.random.default_rng(3)
    n_dt, n_gt, k = 400, 150, 17
    gt = np.empty((n_gt, k, 3))
    gt[:, :, :2] = rng.uniform(0, 300, (n_gt, 1, 2)) + rng.uniform(0, 40, (n_gt, k, 2))
    gt[:, :, 2] = rng.choice([0, 1, 2], (n_gt, k))
    dt = np.empty((n_dt, k, 3))
    near = rng.integers(0, n_gt, n_dt)
    dt[:, :, :2] = gt[near, :, :2] + rng.normal(0, 4, (n_dt, k, 2))
    dt[:, :, 2] = 1.0
    box = np.column_stack([gt[:, 0, :2], np.full((n_gt, 2), 40.0)])
    area = rng.uniform(200, 1600, n_gt)
    pair_dt = np.repeat(np.arange(n_dt), n_gt)
    pair_gt = np.tile(np.arange(n_gt), n_dt)
    sigmas = deteval.keypoints.COCO_PERSON_SIGMAS
    alone = OKSTables(dt, gt, box, area).pair_oks(pair_dt, pair_gt, sigmas=sigmas, floor=0.5)

    calls = []
    original = deteval.keypoints.points_extent

    def counted(*args):
        calls.append(len(args))
        time.sleep(0.02)    # (the other thread runs meanwhile: it must not make them too)
        return original(*args)

    monkeypatch.setattr(deteval.keypoints, "points_extent", counted)
    shared = OKSTables(dt, gt, box, area)
    halves = np.array_split(np.arange(len(pair_dt)), 2)
    results: list = [None, None]

    def work(i):
        rows = halves[i]
        results[i] = shared.pair_oks(pair_dt[rows], pair_gt[rows], sigmas=sigmas, floor=0.5)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert np.concatenate(results).tobytes() == alone.tobytes()
    assert (alone > 0).any() and (alone == 0).any()
    assert sorted(calls) == [2, 3]      # the detections' extent and the objects', once each


def _oks_case(seed=5, n_dt=300, n_gt=120, k=17):
    rng = np.random.default_rng(seed)
    gt = np.empty((n_gt, k, 3))
    gt[:, :, :2] = rng.uniform(0, 300, (n_gt, 1, 2)) + rng.uniform(0, 40, (n_gt, k, 2))
    gt[:, :, 2] = rng.choice([0, 1, 2], (n_gt, k))
    dt = np.empty((n_dt, k, 3))
    dt[:, :, :2] = gt[rng.integers(0, n_gt, n_dt), :, :2] + rng.normal(0, 4, (n_dt, k, 2))
    dt[:, :, 2] = 1.0
    box = np.column_stack([gt[:, 0, :2], np.full((n_gt, 2), 40.0)])
    return dt, gt, box, rng.uniform(200, 1600, n_gt)


def test_a_shared_extent_is_read_by_the_oks_bound_and_goes_with_its_table():
    """share_extent: the OKS bound reads the extent handed over (the true one gives the
    values of an unshared table, bit for bit; a false one, far off, bounds every pair to 0:
    it was read), only for its own table, and the entry goes when the table goes."""
    dt, gt, box, area = _oks_case()
    pair_dt = np.repeat(np.arange(len(dt)), len(gt))
    pair_gt = np.tile(np.arange(len(gt)), len(dt))
    sigmas = deteval.keypoints.COCO_PERSON_SIGMAS

    def oks(table):
        return OKSTables(table, gt, box, area).pair_oks(pair_dt, pair_gt, sigmas=sigmas,
                                                        floor=0.5)

    alone = oks(dt.copy())
    assert (alone > 0).any() and (alone == 0).any()
    true, false = dt.copy(), dt.copy()
    deteval.keypoints.share_extent(true, points_extent(dt[:, :, 0], dt[:, :, 1]))
    deteval.keypoints.share_extent(false, np.full((len(dt), 4), 1e9))
    assert oks(true).tobytes() == alone.tobytes()
    assert not oks(false).any()
    assert oks(false.copy()).tobytes() == alone.tobytes()     # (another table: its own)
    assert not true.flags.writeable
    key = id(false)
    assert key in deteval.keypoints._SHARED_EXTENTS
    del false
    assert key not in deteval.keypoints._SHARED_EXTENTS


def test_read_keypoint_results_share_their_extent(tmp_path):
    """The numpy reader's detections come with their extent shared (the OKS bound does not
    make it again); evaluating them gives the numbers of a copy of the same detections."""
    import json

    import deteval
    from deteval.io.coco import read_coco_gt, read_coco_results

    dt, gt, box, area = _oks_case(seed=8, n_dt=400)
    images = [{"id": 1, "width": 640, "height": 480}]
    gt_file = {"images": images, "categories": [{"id": 1, "name": "person"}],
               "annotations": [{"id": i + 1, "image_id": 1, "category_id": 1,
                                "bbox": box[i].tolist(), "area": float(area[i]), "iscrowd": 0,
                                "num_keypoints": int((gt[i, :, 2] > 0).sum()),
                                "keypoints": np.round(gt[i], 0).ravel().tolist()}
                               for i in range(len(gt))]}
    results = [{"image_id": 1, "category_id": 1, "keypoints": np.round(d, 2).ravel().tolist(),
                "score": round(0.001 * i, 3)} for i, d in enumerate(dt)]
    (tmp_path / "gt.json").write_text(json.dumps(gt_file))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    dataset = read_coco_gt(tmp_path / "gt.json", iou_type="keypoints")
    detections = read_coco_results(tmp_path / "dt.json", dataset, iou_type="keypoints")
    assert id(detections.keypoints) in deteval.keypoints._SHARED_EXTENTS
    copy = detections.replace(keypoints=detections.keypoints.copy())
    assert id(copy.keypoints) not in deteval.keypoints._SHARED_EXTENTS
    shared = deteval.evaluate_coco(dataset, detections, iou_type="keypoints")
    alone = deteval.evaluate_coco(dataset, copy, iou_type="keypoints")
    assert shared.precision.tobytes() == alone.precision.tobytes()
    assert shared.stats.tobytes() == alone.stats.tobytes()


def test_a_thread_waiting_for_the_extents_makes_the_order_meanwhile(monkeypatch):
    """Two threads of the matcher at once: one makes the extents, the other, which would
    wait for them, makes the layout's keypoint order meanwhile (each once); the values are
    one thread's."""
    dt, gt, box, area = _oks_case(seed=9)
    pair_dt = np.repeat(np.arange(len(dt)), len(gt))
    pair_gt = np.tile(np.arange(len(gt)), len(dt))
    sigmas = deteval.keypoints.COCO_PERSON_SIGMAS
    alone = OKSTables(dt, gt, box, area).pair_oks(pair_dt, pair_gt, sigmas=sigmas, floor=0.5)
    extents_by, order_by = [], []
    original_extent = deteval.keypoints.points_extent
    original_order = deteval.keypoints._Layout.order.fget

    extents_done = threading.Event()

    def slow_extent(*args):
        extents_by.append(threading.current_thread().name)
        time.sleep(0.05)    # (the other thread arrives meanwhile)
        if len(extents_by) == 2:
            extents_done.set()
        return original_extent(*args)

    def recorded_order(layout):
        if layout._order is None:
            order_by.append((threading.current_thread().name, extents_done.is_set()))
        return original_order(layout)

    monkeypatch.setattr(deteval.keypoints, "points_extent", slow_extent)
    monkeypatch.setattr(deteval.keypoints._Layout, "order", property(recorded_order))
    shared = OKSTables(dt, gt, box, area)
    halves = np.array_split(np.arange(len(pair_dt)), 2)
    results: list = [None, None]
    start = threading.Barrier(2)

    def work(i):
        start.wait()
        rows = halves[i]
        results[i] = shared.pair_oks(pair_dt[rows], pair_gt[rows], sigmas=sigmas, floor=0.5)

    threads = [threading.Thread(target=work, args=(i,), name=f"matcher-{i}") for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert np.concatenate(results).tobytes() == alone.tobytes()
    assert len(extents_by) == 2 and len(set(extents_by)) == 1     # dt's and gt's, one thread
    # (made by the other thread while the extents were still being made)
    assert order_by == [(next(t.name for t in threads if t.name != extents_by[0]), False)]
