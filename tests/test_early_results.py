"""The keypoint results file read on a thread while the ground truth is read, the calling
thread joining in once it is free (deteval._inputs._EarlyResults and _SharedMap).

The shared map is compared with a plain list comprehension (order, the earliest error, no
item after a failure); load_pair's detections with those read one file after the other,
with the pieces read by both threads.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import deteval.io._numeric_keypoints as numeric_keypoints
from deteval import _inputs
from deteval._inputs import _SharedMap


def _run(fn, items, *, help_after=0.0):
    """``pool.map(fn, items)`` on a results thread, the calling thread helping after
    ``help_after`` seconds; returns (result or exception, names of the threads that ran
    items)."""
    pool, ran, box = _SharedMap(), [], {}

    def tracked(item):
        ran.append(threading.current_thread().name)
        return fn(item)

    def results_thread():
        try:
            box["out"] = pool.map(tracked, items)
        except Exception as error:  # noqa: BLE001 (returned to the test)
            box["out"] = error
        finally:
            pool.finish()

    thread = threading.Thread(target=results_thread, name="results")
    thread.start()
    time.sleep(help_after)
    pool.help()
    thread.join()
    return box["out"], ran


def _slow_square(item):
    time.sleep(0.002)
    return item * item


def test_shared_map_gives_the_items_results_in_order_with_both_threads_working():
    out, ran = _run(_slow_square, range(40))
    assert out == [i * i for i in range(40)]
    assert {"results", threading.current_thread().name} <= set(ran)


def test_shared_map_without_help_in_time_is_done_by_the_results_thread():
    out, ran = _run(_slow_square, range(5), help_after=0.2)
    assert out == [i * i for i in range(5)] and set(ran) == {"results"}


def test_shared_map_raises_the_earliest_failure_and_starts_nothing_after_it():
    started = []

    def fails(item):
        started.append(item)
        time.sleep(0.002)
        if item in (6, 9):
            raise ValueError(f"item {item}")
        return item

    out, _ = _run(fails, range(200))
    assert isinstance(out, ValueError) and str(out) == "item 6"
    assert max(started) < 12     # stopped at the failure (a few in flight at most)


def test_shared_map_runs_several_maps_in_turn():
    pool, box = _SharedMap(), {}

    def results_thread():
        try:
            box["out"] = [pool.map(_slow_square, range(n)) for n in (0, 7, 3)]
        finally:
            pool.finish()

    thread = threading.Thread(target=results_thread)
    thread.start()
    pool.help()
    thread.join()
    assert box["out"] == [[], [i * i for i in range(7)], [0, 1, 4]]


def _pair_files(folder, n_results=600):
    import json

    rng = np.random.default_rng(4)
    gt = {"images": [{"id": i, "width": 640, "height": 480} for i in range(1, 21)],
          "annotations": [{"id": j + 1, "image_id": 1 + j % 20, "category_id": 1,
                           "bbox": [10.0, 10.0, 200.0, 300.0], "area": 4e4, "iscrowd": 0,
                           "num_keypoints": 17,
                           "keypoints": [int(v) for v in
                                         np.column_stack([rng.integers(10, 200, (17, 2)),
                                                          np.full(17, 2)]).ravel()]}
                          for j in range(60)],
          "categories": [{"id": 1, "name": "person"}]}
    records = [{"image_id": 1 + i % 20, "category_id": 1,
                "keypoints": np.round(rng.uniform(0, 250, 51), 2).tolist(),
                "score": round(float(rng.uniform(0.01, 1)), 3)} for i in range(n_results)]
    gt_path, dt_path = folder / "gt.json", folder / "results.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(records, separators=(",", ":")))
    return gt_path, dt_path


def test_load_pair_with_both_threads_reading_results_gives_the_pair_read_apart(
        tmp_path, monkeypatch):
    gt_path, dt_path = _pair_files(tmp_path)
    readers, original = [], numeric_keypoints._read_piece

    def slow_piece(*args):
        if "score" in args[4].order:    # a piece of the results (not of the ground truth)
            readers.append(threading.current_thread().name)
            time.sleep(0.005)   # (the ground truth is read first: the calling thread helps)
        return original(*args)

    shape = numeric_keypoints.numeric_keypoint_results
    monkeypatch.setattr(numeric_keypoints, "_read_piece", slow_piece)
    monkeypatch.setattr(numeric_keypoints, "numeric_keypoint_results",
                        lambda raw, **k: shape(raw, **{**k, "piece_bytes": 4096}))
    together = _inputs.load_pair(gt_path, dt_path, iou_type="keypoints")
    assert {"deteval-results", threading.current_thread().name} <= set(readers)
    with monkeypatch.context() as patch:
        patch.setattr(_inputs._EarlyResults, "start", classmethod(lambda cls, *a: None))
        apart = _inputs.load_pair(gt_path, dt_path, iou_type="keypoints")
    for name in ("image_index", "category_index", "scores", "keypoints", "xywh", "area"):
        assert getattr(together.detections, name).tobytes() == \
            getattr(apart.detections, name).tobytes(), name


@pytest.mark.parametrize("where", ["results thread", "calling thread"])
def test_a_piece_that_fails_on_either_thread_falls_back_to_the_reader(tmp_path, monkeypatch,
                                                                      where):
    """A piece that raises (on whichever thread reads it) makes the early columns None: the
    file is then read as when alone, with the same detections."""
    gt_path, dt_path = _pair_files(tmp_path)
    original = numeric_keypoints._read_piece
    main = threading.current_thread().name

    failed = []

    def failing(*args):     # (once: the reading that follows is the reader's own)
        time.sleep(0.005)
        results = "score" in args[4].order      # (not the ground truth's keypoint lists)
        if results and not failed and (threading.current_thread().name == main) == (
                where == "calling thread"):
            failed.append(True)
            raise RuntimeError("piece failed")
        return original(*args)

    shape = numeric_keypoints.numeric_keypoint_results
    monkeypatch.setattr(numeric_keypoints, "numeric_keypoint_results",
                        lambda raw, **k: shape(raw, **{**k, "piece_bytes": 4096}))
    expected = _inputs.load_pair(gt_path, dt_path, iou_type="keypoints").detections
    monkeypatch.setattr(numeric_keypoints, "_read_piece", failing)
    got = _inputs.load_pair(gt_path, dt_path, iou_type="keypoints").detections
    assert failed
    assert got.keypoints.tobytes() == expected.keypoints.tobytes()
    assert got.scores.tobytes() == expected.scores.tobytes()


def test_shared_map_cancelled_starts_no_item_and_raises():
    pool, box, started = _SharedMap(), {}, []
    cancelled = threading.Event()

    def item(i):
        started.append(i)
        if i == 3:
            pool.cancel()
            cancelled.set()
        time.sleep(0.002)
        return i

    def results_thread():
        try:
            box["out"] = pool.map(item, range(50))
        except Exception as error:  # noqa: BLE001 (returned to the test)
            box["out"] = error
        try:
            pool.map(item, range(5))
        except Exception as error:  # noqa: BLE001
            box["later"] = error
        finally:
            pool.finish()

    thread = threading.Thread(target=results_thread)
    thread.start()
    thread.join()
    assert cancelled.is_set()
    assert type(box["out"]) is _inputs._Cancelled and type(box["later"]) is _inputs._Cancelled
    assert started == [0, 1, 2, 3]      # nothing after the cancel, nothing of the later map
    pool.help()     # (returns at once: the results thread has finished)


def test_a_ground_truth_error_comes_without_waiting_for_the_results(tmp_path, monkeypatch):
    """When the ground truth fails to read, the results pieces not yet started are dropped:
    its error is raised at once (before, the calling thread helped read the whole results
    file first), and the results thread ends after its piece in flight."""
    from deteval.errors import FormatError

    gt_path, dt_path = _pair_files(tmp_path, n_results=2000)
    gt_path.write_text(gt_path.read_text().replace('"images"', '"imgs"'))
    original, pieces = numeric_keypoints._read_piece, []

    def slow_piece(*args):
        if "score" in args[4].order:
            pieces.append(threading.current_thread().name)
            time.sleep(0.02)
        return original(*args)

    shape = numeric_keypoints.numeric_keypoint_results
    monkeypatch.setattr(numeric_keypoints, "_read_piece", slow_piece)
    monkeypatch.setattr(numeric_keypoints, "numeric_keypoint_results",
                        lambda raw, **k: shape(raw, **{**k, "piece_bytes": 4096}))
    assert len(dt_path.read_bytes()) // 4096 > 100     # pieces: seconds to read them all
    with pytest.raises(FormatError, match="images"):
        _inputs.load_pair(gt_path, dt_path, iou_type="keypoints")
    at_error = len(pieces)
    for thread in threading.enumerate():
        if thread.name == "deteval-results":
            thread.join()
    assert at_error <= 2 and len(pieces) <= 2
    assert threading.current_thread().name not in pieces


def test_the_ground_truths_keypoint_lists_are_read_on_one_thread_beside_the_results(
        tmp_path, monkeypatch):
    gt_path, dt_path = _pair_files(tmp_path)
    threads, original = [], numeric_keypoints.numeric_keypoint_lists

    def recorded(raws, **options):
        threads.append(options.get("threads"))
        return original(raws, **options)

    monkeypatch.setattr(numeric_keypoints, "numeric_keypoint_lists", recorded)
    _inputs.load_pair(gt_path, dt_path, iou_type="keypoints")
    assert threads == [1]
    from deteval.io.coco import read_coco_gt

    read_coco_gt(gt_path, iou_type="keypoints")     # alone: every core
    assert threads == [1, None]
