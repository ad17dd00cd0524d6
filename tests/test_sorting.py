"""deteval._sorting: the packed-key orderings equal numpy's reference orderings.

``lexorder`` against ``np.lexsort`` (a stable sort by the keys, ties by row), and
``descending_rank`` against ``np.unique(-values, return_inverse=True)``, on values built to
reach every path: keys that pack with the row index, keys too wide for it, floats whose
top bits agree while the floats differ (the runs sorted again), -0.0, NaN and ties.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from deteval._sorting import descending_rank, lexorder


def _reference_rank(values):
    distinct, inverse = np.unique(-np.asarray(values, dtype=np.float64), return_inverse=True)
    return inverse.ravel(), len(distinct)


def _assert_rank_equal(values):
    ranks, n = descending_rank(values)
    expected, expected_n = _reference_rank(values)
    assert n == expected_n
    np.testing.assert_array_equal(ranks, expected)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(0, 60),
              elements=st.floats(allow_nan=False, allow_infinity=True, width=64)))
def test_descending_rank_equals_unique(values):
    _assert_rank_equal(values)


@pytest.mark.parametrize("n", [2, 1000, 70_000])
def test_descending_rank_near_values_sorted_again(n):
    # Floats 1 ulp apart share their top bits: the packed sort leaves them in row order,
    # and the runs are sorted again.
    rng = np.random.default_rng(n)
    values = np.nextafter(0.5, 1.0) + rng.integers(0, 7, n) * np.spacing(0.5)
    values[::5] = 0.5
    values[::9] = -np.spacing(0.25) * rng.integers(0, 3, len(values[::9]))
    values[::13] = -0.0
    _assert_rank_equal(values)
    _assert_rank_equal(values[::-1].copy())


def test_descending_rank_nan_shares_the_last_rank():
    values = np.array([np.nan, 0.5, np.nan, 1.0])
    _assert_rank_equal(values)
    assert descending_rank(values)[0].tolist() == [2, 1, 2, 0]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.lists(
    arrays(np.int64, n, elements=st.integers(0, 2**40)), min_size=1, max_size=3)),
    st.booleans())
def test_lexorder_equals_lexsort(keys, small):
    if small:
        keys = [k % 5 for k in keys]
    np.testing.assert_array_equal(lexorder(keys), np.lexsort(keys[::-1]))


@pytest.mark.parametrize("width", [3, 2**20, 2**31])
def test_lexorder_equals_lexsort_wide_keys(width):
    # 2**20: packs with the row index; 2**31 (two keys): argsort of the packed keys, or
    # np.lexsort when the rows may repeat.
    rng = np.random.default_rng(width)
    keys = [rng.integers(0, width, 50_000), rng.integers(0, width, 50_000)]
    expected = np.lexsort(keys[::-1])
    np.testing.assert_array_equal(lexorder(keys), expected)
    unique = np.unique(np.stack(keys), axis=1, return_index=True)[1]
    sub = [k[unique] for k in keys]
    np.testing.assert_array_equal(lexorder(sub, rows_are_unique=True), np.lexsort(sub[::-1]))


def test_lexorder_refuses_negative_keys():
    with pytest.raises(ValueError, match="non-negative"):
        lexorder([np.array([0, -1])])


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(0, 9),
              elements=st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                 st.sampled_from([0.0, -0.0, 0.5, 1.0]))))
def test_sorted_median_is_np_median_to_the_bit(values):
    from deteval._sorting import sorted_median

    if len(values) == 0:     # np.median warns (and gives NaN) on an empty array
        assert np.isnan(sorted_median(values))
        return
    with np.errstate(all="ignore"):    # inf - inf in np.median's mean: NaN, as here
        expected = float(np.median(values))
    got = sorted_median(values)
    assert np.array([got]).tobytes() == np.array([expected]).tobytes() or (
        np.isnan(got) and np.isnan(expected))
