"""``_results.mean_valid``, pycocotools' ``_summarize`` mean of the values > -1: compacted
with ``compress`` (several times faster than boolean indexing), it must give the mean of
``values[values > -1]`` bit for bit: the same values in the same (C) order, so the same
pairwise sum, for any shape and strides (the COCO summary passes gathered copies, LVIS and
the per-class tables views), with -1, NaN and nothing valid.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from deteval.protocols._results import mean_valid


def _reference(values: np.ndarray) -> float:
    valid = values[values > -1]
    return -1.0 if len(valid) == 0 else float(np.mean(valid))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([(0,), (7,), (3, 5), (10, 101, 8, 4, 3)]),
       st.floats(0, 1), st.booleans())
def test_mean_valid_is_the_mean_of_the_values_above_minus_one(seed, shape, p_invalid, view):
    rng = np.random.default_rng(seed)
    values = rng.random(shape)
    values[rng.random(shape) < p_invalid] = -1.0
    if values.size:
        values.flat[rng.integers(values.size)] = np.nan
    if view and values.ndim > 1:
        values = values[..., ::-1].swapaxes(0, -1)      # neither C- nor F-contiguous
    expected = _reference(values)
    got = mean_valid(values)
    assert np.array_equal(np.float64(got), np.float64(expected), equal_nan=True)


def test_mean_valid_of_a_curve_of_the_coco_summary_size():
    """At the size of a summary's selection (T x R x K: 80,800 values), where the pairwise
    sum's blocks matter."""
    rng = np.random.default_rng(0)
    values = rng.random((10, 101, 80, 4, 3))
    values[rng.random(values.shape) < 0.3] = -1.0
    for selection in (values[:, :, :, [0]][..., [2]], values[..., 1, 2], values[:1]):
        assert mean_valid(selection) == _reference(selection)
    assert mean_valid(np.full((3, 4), -1.0)) == -1.0
