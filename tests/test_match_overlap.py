"""The serial steps of the COCO match stage moved beside other work give the same arrays.

Session 12 (issue 17) moved two steps off the match stage's serial path
(docs/threads.md §3): the candidate pairs' chunk plan is made beside the score ranks
(``matching._rank_beside_pairs``: the sorting thread then takes the chunks not yet
taken), and the detections' areas and their out-of-range flags are computed on the
sorting thread (``matching.match_table``'s ``dt_area_of``). These tests force each order
the threads can take (the plan before or after the ranks end, chunks taken by both
threads) and compare every array with the one-thread way, byte for byte.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from cocogen import make_dataset
from test_matching_threads import table_hash

import deteval
from deteval import matching
from deteval.protocols import _coco_stages as stages
from deteval.protocols.coco import COCOParams, prepare


def _chunked(n_chunks: int, seen: list, on_chunk=None):
    """A plan of ``n_chunks`` chunks whose pairs are made from the chunk's bounds alone
    (each records the thread that computed it)."""
    bounds = [(5 * i, 5 * i + 5) for i in range(n_chunks)]

    def chunk(b):
        seen.append((b, threading.current_thread().name))
        if on_chunk is not None:
            on_chunk(b)
        rows = np.arange(*b)
        return rows, rows[::-1].copy(), rows / 7.0

    return chunk, bounds


def _expected(n_chunks: int):
    chunk, bounds = _chunked(n_chunks, [])
    return matching._joined_pairs([chunk(b) for b in bounds])


def _same_pairs(got, expected):
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("n_chunks", [0, 1, 6])
def test_rank_beside_pairs_plan_after_the_rank_ends(n_chunks):
    # The rank ends before the plan is made: the plan's thread computes every chunk.
    seen: list = []
    planned = threading.Event()
    ranked = threading.Event()

    def rank():
        ranked.set()
        return "rank"

    def plan():
        ranked.wait(5)
        planned.set()
        return _chunked(n_chunks, seen)

    got, pairs = matching._rank_beside_pairs(rank, plan, 2)
    assert got == "rank" and planned.is_set()
    _same_pairs(pairs, _expected(n_chunks))
    assert sorted(b for b, _ in seen) == sorted(_chunked(n_chunks, [])[1])


def test_rank_beside_pairs_both_threads_take_chunks():
    # The rank waits until the plan's thread has taken its first chunk, then takes the
    # chunks left: both threads compute chunks, and the pairs are joined in chunk order.
    seen: list = []
    first_taken = threading.Event()
    rank_done = threading.Event()

    def on_chunk(b):
        if b[0] == 0:
            first_taken.set()
            rank_done.wait(5)      # (the other thread then takes the next chunks)

    def rank():
        first_taken.wait(5)
        rank_done.set()
        return 7

    got, pairs = matching._rank_beside_pairs(rank, lambda: _chunked(8, seen, on_chunk), 2)
    assert got == 7
    _same_pairs(pairs, _expected(8))
    assert len(seen) == 8 and len({b for b, _ in seen}) == 8     # each chunk once
    assert len({name for _, name in seen}) == 2                  # on both threads


def test_rank_beside_pairs_one_thread_and_errors():
    got, pairs = matching._rank_beside_pairs(lambda: 1, lambda: _chunked(3, []), 1)
    assert got == 1
    _same_pairs(pairs, _expected(3))

    def failing(b):
        if b[0] == 10:
            raise ZeroDivisionError("chunk 2")

    with pytest.raises(ZeroDivisionError, match="chunk 2"):
        matching._rank_beside_pairs(lambda: 1, lambda: _chunked(4, [], failing), 2)


@pytest.mark.parametrize("seed", range(3))
def test_match_table_areas_given_by_a_function(monkeypatch, seed):
    # match_detections (the areas as an array) and match_table (the areas from a function,
    # called beside the ranks), on 1 and 2 threads and both of the matcher's ways.
    gt, results = make_dataset(seed, n_images=8, n_categories=5, p_many=0.3 if seed else 0)
    monkeypatch.setattr(matching, "_SIDE_BY_SIDE_MIN", 0)
    result = deteval.evaluate_coco(gt, results, threads=1)
    ctx = prepare(result.dataset, COCOParams())
    calls: list = []
    original = matching.match_table

    def as_array(**kwargs):
        area = kwargs.pop("dt_area_of")()
        calls.append(threading.current_thread().name)
        return matching.match_detections(dt_area=area, **kwargs)

    hashes = set()
    for threads in (1, 2):
        monkeypatch.setattr(stages, "match_table", original)
        hashes.add(table_hash(stages.match_stage(ctx, result.detections,
                                                 threads=threads).table))
        monkeypatch.setattr(stages, "match_table", as_array)
        hashes.add(table_hash(stages.match_stage(ctx, result.detections,
                                                 threads=threads).table))
    assert len(calls) == 2 and len(hashes) == 1
    assert table_hash(result.matches) in hashes
