"""deteval.protocols._coco_curves: the running maximum of the precision from each recall
point to its segment's end (``_running_max``), by both of its ways, against the maximum
taken slice by slice in Python."""

import numpy as np
import pytest

from deteval.protocols._coco_curves import _running_max


def _points(rng, n_seg, longest, n_points, *, increasing):
    """TP events of ``n_seg`` segments (0..longest events each, ties among the precisions),
    and ``n_points`` recall points per live segment, each at an event of its segment (the
    appended index ``n_tp`` for a segment without events)."""
    counts = rng.integers(0, longest + 1, n_seg)
    seg = np.repeat(np.arange(n_seg), counts)
    pr = rng.choice(np.r_[rng.random(8), 1.0, 0.5], len(seg))
    first = np.cumsum(counts) - counts
    start = first[:, None] + np.minimum(rng.integers(0, longest + 1, (n_seg, n_points)),
                                        np.maximum(counts - 1, 0)[:, None])
    if increasing:
        start.sort(axis=1)
    start[counts == 0] = len(seg)
    end = np.where(counts > 0, first + counts, len(seg))
    return pr, seg, counts, start, end


def _expected(pr, start, end):
    padded = np.r_[pr, 0.0]
    return np.array([[padded[s:max(e, s + 1)].max() for s in row]
                     for row, e in zip(start.tolist(), end.tolist())])


@pytest.mark.parametrize("increasing", [True, False])
@pytest.mark.parametrize(("n_seg", "longest", "n_points"), [
    (40, 6, 101),      # few events for many points: the doubling way
    (3, 300, 4),       # long segments, few points: the blocks way
    (5, 1, 3),         # one event at most: no doubling pass
    (4, 0, 5),         # no events at all
])
def test_running_max_equals_the_maximum_of_each_slice(n_seg, longest, n_points, increasing):
    rng = np.random.default_rng(n_seg * 1000 + longest)
    for _ in range(5):
        pr, seg, counts, start, end = _points(rng, n_seg, longest, n_points,
                                              increasing=increasing)
        got = _running_max(pr, seg, counts, start, end, increasing=increasing)
        assert got.shape == start.shape
        assert np.array_equal(got, _expected(pr, start, end))


def test_both_ways_are_reached():
    """The sizes above take each way (the choice is ``n_tp * passes <= points``)."""
    rng = np.random.default_rng(0)
    small = _points(rng, 40, 6, 101, increasing=True)
    large = _points(rng, 3, 300, 4, increasing=True)
    for (pr, _, counts, start, _), doubling in ((small, True), (large, False)):
        passes = int(counts.max() - 1).bit_length()
        assert (len(pr) * passes <= start.size) == doubling


@pytest.mark.parametrize("shape", [(80, 4), (3, 2), (1000,), (40, 4)])
@pytest.mark.parametrize("spread", [3, 50, 10**6])
def test_needed_true_positives_by_distinct_count_equal_every_row_computed(shape, spread):
    """``needed_true_positives`` computes each distinct positive count once when there are
    few of them (an evaluation's (K, A) counts): the rows must be those of every row
    computed on its own, with thresholds on the boundaries of ``n / npig`` and beyond [0, 1]."""
    from deteval.protocols._coco_curves import _needed, needed_true_positives

    rng = np.random.default_rng(spread)
    counts = rng.integers(0, spread, size=shape)
    thresholds = np.r_[np.linspace(0.0, 1.0, 101), 1 / 3, 2 / 3, 0.7, -0.5, 1.5, 1.0 + 1e-16]
    fast = needed_true_positives(counts, thresholds)
    assert fast.shape == shape + (len(thresholds),) and fast.dtype == np.int64
    assert np.array_equal(fast, _needed(counts, thresholds))
