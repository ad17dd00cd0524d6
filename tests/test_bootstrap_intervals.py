"""The percentile intervals of bootstrap samples (deteval/diagnostics/bootstrap.py
``percentile_interval``; docs/diagnostics/bootstrap.md §4): the columns are grouped by their
count of defined samples instead of ``np.nanpercentile``'s loop over the columns holding a
NaN; the bounds must be ``np.nanpercentile``'s floats, bit for bit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from deteval.diagnostics.bootstrap import percentile_interval


def _samples(seed: int, pattern: str) -> np.ndarray:
    """(B, N) samples in [0, 1], with NaNs laid out by ``pattern``; values from a short list
    in half the columns (ties between neighbours)."""
    rng = np.random.default_rng(seed)
    samples = rng.random((97, 40))
    samples[:, ::2] = rng.integers(0, 5, (97, 20)) / 4
    if pattern == "scattered":      # a count of its own in almost every column
        samples[rng.random(samples.shape) < 0.05] = np.nan
    elif pattern == "columns":      # a few columns with NaNs, some all NaN, one defined once
        samples[rng.random(97) < 0.3, 3] = np.nan
        samples[:, [5, 8]] = np.nan
        samples[1:, 11] = np.nan
        samples[rng.random(97) < 0.3, 20] = np.nan
    return samples


@pytest.mark.parametrize("confidence", [0.95, 0.5, 0.999])
@pytest.mark.parametrize("pattern", ["none", "scattered", "columns"])
def test_the_bounds_are_nanpercentiles(pattern, confidence):
    samples = _samples(7, pattern)
    kept = samples.copy()
    low, high, n_defined = percentile_interval(samples, confidence)
    alpha = 1 - confidence
    ok = ~np.isnan(samples).all(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # the all-NaN columns
        expected = np.nanpercentile(samples, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    assert np.array_equal(low, expected[0], equal_nan=True)
    assert np.array_equal(high, expected[1], equal_nan=True)
    assert np.isnan(low[~ok]).all() and np.isnan(high[~ok]).all()
    assert n_defined.tolist() == (~np.isnan(samples)).sum(axis=0).tolist()
    assert np.array_equal(samples, kept, equal_nan=True)        # the caller's array unchanged


def test_infinite_samples_give_nanpercentiles_without_warnings():
    # An infinite sample (a user's samples through bootstrap_result) interpolates to inf or,
    # between two equal infinities, NaN, as np.nanpercentile; quietly, as before grouping.
    samples = _samples(11, "columns")
    samples[::7, 1] = np.inf
    samples[::5, 2] = -np.inf
    samples[:, 4] = np.inf
    samples[_rows(97), 6] = -np.inf
    low, high, _ = percentile_interval(samples, 0.95)       # filterwarnings=error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        alpha = 1 - 0.95
        expected = np.nanpercentile(samples, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    assert np.array_equal(low, expected[0], equal_nan=True)
    assert np.array_equal(high, expected[1], equal_nan=True)
    assert np.isnan(low[4]) and np.isnan(high[4])        # inf - inf


def _rows(n: int) -> np.ndarray:
    return np.random.default_rng(3).random(n) < 0.5
