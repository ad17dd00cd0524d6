"""The ``threads=`` setting and the pieces it runs on: identical numbers for every value.

Matching computes pair similarities in chunks (``deteval.matching._PAIR_CHUNK``) and
accumulation runs on pieces of whole categories (``_coco_stages._ACCUMULATE_ROWS``); both
are handed to threads. The tests shrink chunks and pieces to a few rows, so that small
seeded datasets cross many of them, and compare every array bit for bit with one thread
and whole-dataset pieces.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from cocogen import make_dataset
from hypothesis import given, settings
from hypothesis import strategies as st

import deteval
from deteval import _threads, matching
from deteval.cli import main
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.protocols import _coco_stages
from deteval.protocols._pieces import category_pieces, split_by_piece

ARRAYS = ("stats", "precision", "recall", "scores", "n_detections")
TABLE = ("dt_rank", "dt_kept", "dt_score_rank", "match_area", "match_threshold", "match_dt",
         "match_gt")


@pytest.fixture
def tiny_pieces(monkeypatch):
    """Chunks of 3 pairs and accumulation pieces of 5 rows."""
    monkeypatch.setattr(matching, "_PAIR_CHUNK", 3)
    monkeypatch.setattr(_coco_stages, "_ACCUMULATE_ROWS", 5)


def _assert_same(a, b):
    for name in ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    for name in TABLE:
        assert np.array_equal(getattr(a.matches, name), getattr(b.matches, name)), name


def _evaluate_all_ways(gt, results, monkeypatch, **options):
    """The result with one thread and whole pieces, then with tiny pieces on 1, 2, 3
    threads; asserts they all agree and returns the first."""
    reference = deteval.evaluate_coco(gt, results, threads=1, **options)
    monkeypatch.setattr(matching, "_PAIR_CHUNK", 3)
    monkeypatch.setattr(_coco_stages, "_ACCUMULATE_ROWS", 5)
    for threads in (1, 2, 3):
        _assert_same(reference, deteval.evaluate_coco(gt, results, threads=threads, **options))
    monkeypatch.undo()
    return reference


@pytest.mark.parametrize("seed", range(6))
def test_coco_bbox_identical_for_every_threads_value(seed, monkeypatch):
    gt, results = make_dataset(seed, n_images=6, n_categories=5, p_many=0.2 if seed % 2 else 0)
    _evaluate_all_ways(gt, results, monkeypatch)


@pytest.mark.parametrize("options", [{"use_categories": False}, {"max_detections": (1, 2, 3)},
                                     {"iou_thresholds": (0.5,)}, {"area_ranges": ((0, 1e10),),
                                                                  "area_labels": ("all",)}])
def test_coco_options_identical_for_every_threads_value(options, monkeypatch):
    gt, results = make_dataset(11, n_images=5, n_categories=4)
    _evaluate_all_ways(gt, results, monkeypatch, **options)


def test_coco_keypoints_identical_for_every_threads_value(monkeypatch):
    from scenes import keypoint_scene

    gt, results = keypoint_scene()
    _evaluate_all_ways(gt, results, monkeypatch, iou_type="keypoints")


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), chunk=st.integers(1, 9), rows=st.integers(1, 40),
       threads=st.integers(1, 3))
def test_pieces_and_threads_change_no_bit(seed, chunk, rows, threads):
    """Any chunk and piece size, any number of threads: the numbers of whole pieces."""
    gt, results = make_dataset(seed, n_images=4, n_categories=4)
    reference = deteval.evaluate_coco(gt, results, threads=1)
    saved = matching._PAIR_CHUNK, _coco_stages._ACCUMULATE_ROWS
    try:
        matching._PAIR_CHUNK, _coco_stages._ACCUMULATE_ROWS = chunk, rows
        result = deteval.evaluate_coco(gt, results, threads=threads)
    finally:
        matching._PAIR_CHUNK, _coco_stages._ACCUMULATE_ROWS = saved
    _assert_same(reference, result)


def test_voc_identical_for_every_threads_value(monkeypatch):
    gt, results = make_dataset(3, n_images=6, n_categories=4)
    reference = deteval.evaluate_voc(gt, results, threads=1)
    monkeypatch.setattr(matching, "_PAIR_CHUNK", 2)
    for threads in (2, 3):
        result = deteval.evaluate_voc(gt, results, threads=threads)
        assert np.array_equal(reference.ap, result.ap, equal_nan=True)
        assert reference.map == result.map or (np.isnan(reference.map) and np.isnan(result.map))
        for name in (*TABLE, "dt_best_gt"):
            assert np.array_equal(getattr(reference.matches, name),
                                  getattr(result.matches, name)), name


def test_category_pieces_cut_after_whole_categories():
    category = np.array([0, 0, 0, 1, 2, 2, 3, 3, 3, 3])
    assert category_pieces(category, 5, 3).tolist() == [0, 1, 3, 4, 5]
    assert category_pieces(category, 4, 100).tolist() == [0, 4]
    assert category_pieces(category[:0], 3, 2).tolist() == [0, 3]
    assert category_pieces(category[:0], 0, 2).tolist() == [0, 0]


def test_split_by_piece_holds_each_row_and_event_once_in_order():
    gt, results = make_dataset(5, n_images=6, n_categories=5)
    dataset = read_coco_gt(gt)
    ctx = _coco_stages.prepare(dataset, deteval.COCO)
    state = _coco_stages.match_stage(ctx, read_coco_results(results, dataset)).state
    bounds = category_pieces(state.category, ctx.n_k, 7)
    assert len(bounds) > 3
    split, along = split_by_piece(state.category, state.event_row, bounds, threads=2,
                                  alongside=lambda: "keys")
    assert along == "keys"
    assert split_by_piece(state.category, state.event_row, bounds)[1] is None
    assert np.array_equal(np.sort(split.rows), np.arange(len(state)))
    assert np.array_equal(np.sort(split.events), np.arange(len(state.event_row)))
    for c, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        rows, events = split.piece(c)
        assert np.array_equal(rows, np.flatnonzero((state.category >= lo)
                                                   & (state.category < hi)))
        row_of_event = state.event_row.astype(np.int64)
        assert np.array_equal(events, np.flatnonzero(np.isin(row_of_event, rows)))
    assert np.array_equal(split.sizes(), np.diff(split.row_start) + np.diff(split.event_start))


def test_threads_refuses_what_is_not_a_count():
    gt, results = make_dataset(0, n_images=2, n_categories=2)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads must be an integer >= 1"):
            deteval.evaluate_coco(gt, results, threads=bad)
    assert _threads.resolve_threads(None) == _threads.available_cores() >= 1


def test_thread_map_keeps_order_and_raises_the_first_error():
    assert _threads.thread_map(lambda x: x * x, range(7), 3) == [x * x for x in range(7)]
    assert _threads.thread_map(abs, [], 2) == []

    def fail(x):
        if x == 2:
            raise KeyError(x)
        return x

    with pytest.raises(KeyError):
        _threads.thread_map(fail, range(5), 2)


def test_cli_threads_option_changes_no_number(tmp_path, capsys):
    import json

    gt, results = make_dataset(7, n_images=4, n_categories=3)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    outputs = []
    for threads in ("1", "2"):
        assert main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                     "--threads", threads]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "Average Precision" in outputs[0]
    assert main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 "--threads", "0"]) != 0
    assert "--threads" in capsys.readouterr().err
    assert main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 str(tmp_path / "dt.json"), "--threads", "2"]) != 0
    assert "--threads is available with one DT file only" in capsys.readouterr().err


def test_streaming_state_pieces_equal_one_shot(monkeypatch):
    """Merged (compact) streaming states accumulate in pieces to the one-shot numbers."""
    gt, results = make_dataset(8, n_images=6, n_categories=4)
    reference = deteval.evaluate_coco(gt, results, threads=1)
    monkeypatch.setattr(matching, "_PAIR_CHUNK", 2)
    monkeypatch.setattr(_coco_stages, "_ACCUMULATE_ROWS", 4)
    evaluator = deteval.Evaluator(gt, unknown_labels="drop")
    for image in sorted({r["image_id"] for r in results}):
        evaluator.update([r for r in results if r["image_id"] == image])
    result = evaluator.compute()
    for name in ("stats", "precision", "recall", "scores"):
        assert np.array_equal(getattr(reference, name), getattr(result, name)), name


def test_the_state_is_kept_in_small_types_and_accumulates_alike():
    # The state lives through accumulation, the peak of an evaluation's memory: int32
    # positions and int16 events (accumulation reads any integer type, as for compact()).
    gt, results = make_dataset(5, n_images=6, n_categories=4)
    result = deteval.evaluate_coco(gt, results)
    ctx = _coco_stages.prepare(result.dataset, result.params)
    state = _coco_stages.state_of_result(ctx, result)
    assert (state.image.dtype, state.category.dtype, state.event_at.dtype) \
        == (np.int32, np.int32, np.int16)
    wide = dataclasses.replace(state, **{name: getattr(state, name).astype(np.int64)
                                         for name in ("image", "category", "event_at")})
    for ours, theirs in zip(_coco_stages.accumulate_stage(ctx, wide),
                            (result.precision, result.recall, result.scores)):
        assert np.array_equal(ours, theirs)
