"""COCO accumulation cut into pieces (``_coco_stages.accumulate_stage``): the packed sort
keys (``_coco_curves.row_keys``) and the pieces' rows and events give the same bits as one
piece ordered column by column (``lexorder``), for every piece size, ``threads`` value and
piece order; and the keys hold exactly the columns they pack.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest
from cocogen import make_dataset

import deteval
from deteval._sorting import lexorder
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.protocols import _coco_curves, _coco_stages
from deteval.protocols._pieces import category_pieces


def _matched(seed: int, n_categories: int, *, drop_every: int = 4):
    """Context and state of a seeded scene with many categories; the detections of every
    ``drop_every``-th category are removed (categories with objects and no detections), and
    some categories have detections and no objects."""
    gt, results = make_dataset(seed, n_images=7, n_categories=n_categories, max_dt=12,
                               p_many=0.1, n_many=(101, 130))
    ids = sorted(c["id"] for c in gt["categories"])
    dropped = set(ids[::drop_every])
    results = [r for r in results if r["category_id"] not in dropped]
    kept = {a["category_id"] for a in gt["annotations"]}
    gt = {**gt, "annotations": [a for a in gt["annotations"]
                                if a["category_id"] != ids[1] or ids[1] not in kept]}
    dataset = read_coco_gt(gt)
    ctx = _coco_stages.prepare(dataset, deteval.COCO)
    state = _coco_stages.match_stage(ctx, read_coco_results(results, dataset)).state
    return ctx, state


def _digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(str((a.dtype, a.shape)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _reference(ctx, state, monkeypatch):
    """One piece, rows ordered by lexorder over the columns (no packed keys)."""
    with monkeypatch.context() as m:
        m.setattr(_coco_stages, "_ACCUMULATE_ROWS", 1 << 40)
        m.setattr(_coco_stages, "row_keys", lambda state: None)
        return _digest(_coco_stages.accumulate_stage(ctx, state, threads=1))


@pytest.mark.parametrize("seed", range(4))
def test_pieces_and_keys_give_one_piece_bits_for_every_threads(seed, monkeypatch):
    ctx, state = _matched(seed, n_categories=12 + seed)
    assert len(state) > 50 and (np.bincount(state.category, minlength=ctx.n_k) == 0).any()
    reference = _reference(ctx, state, monkeypatch)
    for rows in (1, 5, 37, 1 << 40):
        monkeypatch.setattr(_coco_stages, "_ACCUMULATE_ROWS", rows)
        for threads in (1, 2, 3):
            got = _coco_stages.accumulate_stage(ctx, state, threads=threads)
            assert _digest(got) == reference, (rows, threads)
        # the column-by-column ordering inside pieces, too
        with monkeypatch.context() as m:
            m.setattr(_coco_stages, "row_keys", lambda state: None)
            assert _digest(_coco_stages.accumulate_stage(ctx, state, threads=2)) == reference


def test_streaming_states_without_score_ranks_accumulate_alike(monkeypatch):
    ctx, state = _matched(7, n_categories=9)
    reference = _reference(ctx, state, monkeypatch)
    compact = dataclasses.replace(state.compact(), score_rank=None)
    for rows in (4, 1 << 40):
        monkeypatch.setattr(_coco_stages, "_ACCUMULATE_ROWS", rows)
        assert _digest(_coco_stages.accumulate_stage(ctx, compact, threads=2)) == reference


def test_row_keys_pack_the_sort_columns_and_the_area_flags():
    _, state = _matched(3, n_categories=6)
    keys = _coco_curves.row_keys(state)
    key = keys.key.astype(object)      # Python ints: no overflow in the checks
    widths = [int(c.max()).bit_length() or 1 for c in
              (state.category, state.score_rank, state.image, state.rank)]
    assert keys.k_shift == sum(widths[1:]) and keys.rank_bits == widths[3]
    shift = 0
    for column, width in zip((state.rank, state.image, state.score_rank, state.category),
                             widths[::-1]):
        assert np.array_equal((key >> shift) & ((1 << width) - 1), column.astype(object))
        shift += width
    for a, flags in enumerate(state.out_of_range):
        assert np.array_equal((keys.out >> a) & 1 == 1, flags)
    order = np.lexsort((state.rank, state.image, state.score_rank, state.category))
    assert np.array_equal(np.argsort(keys.key, kind="stable"), order)


def test_row_keys_give_way_when_they_do_not_fit(monkeypatch):
    ctx, state = _matched(2, n_categories=5)
    reference = _reference(ctx, state, monkeypatch)
    many_areas = dataclasses.replace(state, out_of_range=np.repeat(state.out_of_range, 3, 0))
    assert _coco_curves.row_keys(many_areas) is None
    # image positions near 2**40 and score ranks near 2**30: 75 bits, no packed keys
    wide = dataclasses.replace(state, image=state.image.astype(np.int64) << 40,
                               score_rank=state.score_rank << 30)
    assert _coco_curves.row_keys(wide) is None
    monkeypatch.setattr(_coco_stages, "_ACCUMULATE_ROWS", 6)
    assert _digest(_coco_stages.accumulate_stage(ctx, wide, threads=2)) == reference
    assert _coco_curves.row_keys(dataclasses.replace(state, rank=state.rank[:0],
                                                     category=state.category[:0],
                                                     image=state.image[:0],
                                                     score=state.score[:0],
                                                     score_rank=state.score_rank[:0],
                                                     out_of_range=state.out_of_range[:, :0])
                                 ) is None


def test_piece_keys_wider_than_64_bits_with_the_row_index_give_way(monkeypatch):
    # Fields of 60 bits: they fit a uint64, but not with a piece's row index.
    ctx, state = _matched(4, n_categories=6)
    reference = _reference(ctx, state, monkeypatch)
    wide = dataclasses.replace(state, image=state.image.astype(np.int64) << 30,
                               score_rank=state.score_rank << 10)
    keys = _coco_curves.row_keys(wide)
    assert keys is not None and keys.k_shift + 3 > 60
    calls = []

    def counted(columns, **options):
        calls.append(len(columns[0]))
        return lexorder(columns, **options)

    monkeypatch.setattr(_coco_curves, "lexorder", counted)
    for rows in (3, 1 << 40):
        monkeypatch.setattr(_coco_stages, "_ACCUMULATE_ROWS", rows)
        assert _digest(_coco_stages.accumulate_stage(ctx, wide, threads=2)) == reference
    # the whole state gave way, and some of the pieces but not all
    n_pieces = len(category_pieces(state.category, ctx.n_k, 3)) - 1
    assert calls[-1] == len(state) and 0 < len(calls) - 1 < n_pieces
