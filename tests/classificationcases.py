"""What the classification tests share: the seeded random inputs in named scenarios (binary,
multiclass, imbalanced, ties, a class absent from the predictions, a single class; each
parity test runs PER_SCENARIO seeds of one scenario, so that a failure names the scenario
and the seed), warning recording and the tolerance of the comparisons."""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import numpy as np
import pytest

PER_SCENARIO = 34  # x 6 scenarios = 204 inputs per function
SCENARIOS = ["binary", "multiclass", "imbalanced", "ties", "absent-class", "single-class"]
CURVE_SCENARIOS = ["binary", "imbalanced", "ties", "single-class", "one-vs-rest", "tiny"]
ZERO_DIVISIONS = ["warn", 0, 1, np.nan]
ATOL = 1e-12


@contextmanager
def recorded():
    """Record every warning (pytest turns unrecorded ones into errors)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def warned(caught, start: str = "") -> bool:
    return any(str(w.message).startswith(start) for w in caught)


def assert_close(actual, expected, context=""):
    np.testing.assert_allclose(
        np.asarray(actual, dtype=float), np.asarray(expected, dtype=float),
        rtol=0, atol=ATOL, equal_nan=True, err_msg=str(context),
    )


# --------------------------------------------------------------------------------------
# Seeded random inputs
# --------------------------------------------------------------------------------------

def labelled_case(scenario: str, seed: int) -> dict:
    """Random true and predicted labels for a scenario, with label values of varied kinds."""
    rng = np.random.default_rng([SCENARIOS.index(scenario), seed])
    n = int(rng.integers(1, 40))
    if scenario == "binary":
        n_classes = 2
    elif scenario in ("multiclass", "absent-class"):
        n_classes = int(rng.integers(3, 7))
    elif scenario == "imbalanced":
        n_classes, n = int(rng.integers(2, 5)), int(rng.integers(20, 80))
    elif scenario == "ties":
        n_classes = int(rng.integers(2, 5))
    else:  # single-class
        n_classes = int(rng.integers(1, 3))
    probs = rng.dirichlet(np.full(n_classes, 0.3 if scenario == "imbalanced" else 3.0))
    truth = rng.choice(n_classes, n, p=probs)
    if scenario == "single-class":
        truth[:] = truth[0]
    copy = rng.random(n) < rng.random()
    pred = np.where(copy, truth, rng.integers(0, n_classes, n))
    if scenario == "single-class" and seed % 2 == 0:
        pred[:] = truth[0]
    if scenario == "absent-class":
        missing = int(rng.integers(n_classes))
        truth[0] = missing
        pred[pred == missing] = (missing + 1) % n_classes
    # label values: 0..K-1, spread integers, or strings
    kind = seed % 3
    values = [np.arange(10), np.array([-3, 2, 5, 9, 11, 20, 40]), np.array(list("abcdefg"))][kind]
    universe = np.unique(np.concatenate([truth, pred]))
    labels = None
    if seed % 4 >= 2:  # the full label set, maybe with an absent class, in a random order
        extra = [n_classes] if seed % 4 == 3 else []
        labels = values[rng.permutation(np.concatenate([universe, extra]).astype(int))]
    classes = values[universe] if labels is None else labels
    return {"y_true": values[truth], "y_pred": values[pred], "labels": labels,
            "classes": classes, "rng": rng}


def scored_case(scenario: str, seed: int) -> dict:
    """Random labels and scores for the binary curves; ``positive`` is ``y_true == pos_label``."""
    rng = np.random.default_rng([100 + CURVE_SCENARIOS.index(scenario), seed])
    n = int(rng.integers(2, 60))
    pos_label = None
    if scenario == "tiny":
        n = int(rng.integers(1, 5))
    if scenario == "imbalanced":
        n = int(rng.integers(20, 100))
        truth = (rng.random(n) < rng.uniform(0.03, 0.2)).astype(int)
    elif scenario == "single-class":
        truth = np.full(n, seed % 2)
    elif scenario == "one-vs-rest":
        truth = np.array(list("abcd"))[rng.integers(0, 4, n)]
        pos_label = "abcd"[seed % 4]
    else:
        truth = rng.integers(0, 2, n)
    positive = truth == (1 if pos_label is None else pos_label)
    scores = rng.normal(size=n) + rng.uniform(0, 2) * positive
    if scenario == "ties" or (scenario == "tiny" and seed % 2):
        scores = np.round(scores * 2) / 2
    if seed % 5 == 0 and scenario == "binary":
        truth = np.where(truth == 1, 1, -1)  # the {-1, 1} convention
    return {"y_true": truth, "scores": scores, "pos_label": pos_label, "positive": positive,
            "rng": rng}


def cases(kind: str, scenario: str, count: int = PER_SCENARIO):
    make = labelled_case if kind == "labels" else scored_case
    for seed in range(count):
        yield seed, make(scenario, seed)


def by_scenario(scenarios):
    return pytest.mark.parametrize("scenario", [pytest.param(s, id=s) for s in scenarios])
