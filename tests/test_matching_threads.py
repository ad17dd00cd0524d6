"""The matcher's two ways and its tasks on threads give one table, bit for bit.

``match_detections`` (COCO rule) runs as two steps of independent tasks when no group holds
more than ``max_detections`` detections (the score ranks beside the chunks of candidate
pairs, then the ranks in groups beside the rounds; on threads from ``_SIDE_BY_SIDE_MIN``
detections, which the tests lower to 0), and ranks first otherwise (docs/threads.md §3).
The rounds choose each detection's object with one packed running maximum
(``_last_best``), or per segment when the numbers do not fit in 63 bits. These tests hash
every array of the table (dtype and bytes) and require the same hash for 1, 2 and 3
threads, for tiny pair chunks, for the ranks-first way and for the per-segment choice, on
seeded datasets with tied scores, crowds, images and categories without objects or
detections, pooled categories and groups beyond ``max_detections``.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from cocogen import make_dataset

import deteval
from deteval import matching


def table_hash(table: matching.MatchTable) -> str:
    """A digest of every array of a match table: field name, dtype, shape and bytes."""
    digest = hashlib.sha256()
    for name in table.__dataclass_fields__:
        value = getattr(table, name)
        if value is None:
            continue
        digest.update(f"{name}:{value.dtype}:{value.shape}".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


def variants(monkeypatch, run):
    """``run(threads)``'s table hashed for 1, 2 and 3 threads (the tasks on threads from
    any number of detections, and from the default number), with pair chunks of 3 pairs,
    with the ranks computed first, and with the per-segment choice."""
    hashes = {"default, threads=2": table_hash(run(2))}
    monkeypatch.setattr(matching, "_SIDE_BY_SIDE_MIN", 0)
    hashes.update({f"threads={t}": table_hash(run(t)) for t in (1, 2, 3)})
    with monkeypatch.context() as patch:
        patch.setattr(matching, "_PAIR_CHUNK", 3)
        hashes["chunks of 3"] = table_hash(run(2))
    with monkeypatch.context() as patch:
        patch.setattr(matching, "_kept_without_ranks", lambda *args: False)
        hashes["ranks first"] = table_hash(run(2))
    with monkeypatch.context() as patch:
        patch.setattr(matching, "_PACK_BITS", 0)
        hashes["per segment"] = table_hash(run(2))
    return hashes


@pytest.mark.parametrize("options", [
    {}, {"use_categories": False}, {"max_detections": (1, 3, 5)},
    {"iou_thresholds": (0.5,)}, {"area_ranges": ((0, 1e10), (0, 400)),
                                  "area_labels": ("all", "small")}],
    ids=["default", "pooled", "few-detections", "one-threshold", "two-ranges"])
@pytest.mark.parametrize("seed", range(3))
def test_coco_table_identical_every_way(monkeypatch, seed, options):
    gt, results = make_dataset(seed, n_images=8, n_categories=5,
                               p_many=0.3 if seed == 2 else 0)
    reference = deteval.evaluate_coco(gt, results, threads=1, **options)

    def run(threads):
        result = deteval.evaluate_coco(gt, results, threads=threads, **options)
        assert np.array_equal(result.precision, reference.precision, equal_nan=True)
        return result.matches

    hashes = variants(monkeypatch, run)
    assert len(set(hashes.values())) == 1, hashes


def random_inputs(seed: int) -> dict:
    """Matcher inputs of many small groups: some detections and objects not evaluated
    (group -1), scores from a small pool (ties), a tie key, crowds, ignore flags and
    areas that make candidates ignored in some ranges only, similarities from a table with
    repeated values (and negative ones in odd seeds: the general comparison)."""
    rng = np.random.default_rng(seed)
    n_groups, n_dt, n_gt = 40, 700, 160
    dt_group = rng.integers(-1, n_groups, n_dt)
    gt_group = rng.integers(-1, n_groups, n_gt)
    values = rng.choice([0.0, 0.3, 0.5, 0.55, 0.7, 0.75, 0.9, 1.0], size=(n_dt, n_gt))
    if seed % 2:
        values -= rng.choice([0.0, 0.6], size=values.shape)
    return dict(
        dt_group=dt_group, dt_scores=rng.choice([0.1, 0.5, 0.9, 0.95], n_dt),
        dt_area=rng.uniform(0, 200, n_dt), dt_tie_key=rng.integers(0, 3, n_dt),
        gt_group=gt_group, gt_crowd=rng.random(n_gt) < 0.15,
        gt_ignore=rng.random(n_gt) < 0.1, gt_area=rng.uniform(0, 200, n_gt),
        similarity=lambda d, g: values[d, g],
        iou_thresholds=np.array([-0.2, 0.5, 0.55, 0.75]) if seed % 2 else
        np.array([0.5, 0.75, 0.95]),
        area_ranges=np.array([[0, 1e10], [0, 50], [50, 120], [120, 1e10]]),
        max_detections=100 if seed % 3 else 12)


@pytest.mark.parametrize("seed", range(8))
def test_match_detections_identical_every_way(monkeypatch, seed):
    inputs = random_inputs(seed)
    hashes = variants(monkeypatch, lambda threads: matching.match_detections(
        **inputs, threads=threads))
    assert len(set(hashes.values())) == 1, hashes
    table = matching.match_detections(**inputs)
    assert len(table.match_dt), "the scene has matches"


@pytest.mark.parametrize("seed", range(20))
def test_last_best_equals_per_segment_maximum(seed):
    """The packed running maximum chooses, in every segment and row, the last allowed pair
    with the largest key, as the per-segment reduction does (and a plain loop)."""
    rng = np.random.default_rng(seed)
    lengths = rng.choice([1, 1, 1, 2, 3, 7], size=rng.integers(1, 60))
    p = int(lengths.sum())
    ends = np.cumsum(lengths) - 1
    segment = np.repeat(np.arange(len(lengths)), lengths)
    ok = rng.random((2, 3, p)) < 0.6
    key = rng.integers(1, 6, (2, 1, p)) if seed % 2 else rng.integers(1, 6, p)
    at, picked, n_seg = matching._last_best(ok, key, segment, ends, 3)
    expected = np.full((2, 3, n_seg), -1)
    wide = np.broadcast_to(key, ok.shape)
    for a in range(2):
        for t in range(3):
            for s, (lo, hi) in enumerate(zip(ends - lengths + 1, ends + 1)):
                for i in range(lo, hi):
                    if ok[a, t, i] and (expected[a, t, s] < 0
                                        or wide[a, t, i] >= wide[a, t, expected[a, t, s]]):
                        expected[a, t, s] = i
    assert at.tolist() == np.flatnonzero(expected >= 0).tolist()
    assert picked.tolist() == expected.ravel()[at].tolist()
    general = matching._last_best(ok, key, segment, ends, 3 + matching._PACK_BITS)
    assert [v.tolist() for v in general[:2]] == [at.tolist(), picked.tolist()]


@pytest.mark.parametrize("seed", range(10))
def test_shared_choice_equals_loop(seed):
    """A group chooses alike in every range when each of its detections' candidates are,
    per range, all ignored or all not."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 4, 30)
    pair_group = np.repeat(np.sort(rng.integers(0, 12, 30)), lengths)
    dt_starts = np.r_[0, np.cumsum(lengths)[:-1]]
    pair_gt = rng.integers(0, 20, len(pair_group))
    gt_ignored = rng.random((3, 20)) < (0.1 if seed % 2 else 0.4)
    shared = matching._shared_choice(pair_group, dt_starts, pair_gt, gt_ignored)
    mixed_groups = set()
    for lo, n in zip(dt_starts, lengths):
        flags = gt_ignored[:, pair_gt[lo:lo + n]]
        if (flags.any(axis=1) & ~flags.all(axis=1)).any():
            mixed_groups.add(int(pair_group[lo]))
    assert shared.tolist() == [int(g) not in mixed_groups for g in pair_group]
