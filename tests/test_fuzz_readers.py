"""The numpy readers' differential fuzz (scripts/fuzz/readers.py): mutated bbox and keypoint
results files and keypoint ground truths, read with the numpy reader forced on (small
pieces, 1-3 threads) and switched off; the outcomes must be the same arrays, bit for bit,
or the same error. The keypoint kinds compare only where the checkout has the keypoint
reader (deteval/io/_numeric_keypoints.py); elsewhere their oracle says so."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from fuzz.generators import READER_KINDS, make_case  # noqa: E402
from fuzz.readers import MAKERS, reader_comparisons  # noqa: E402
from fuzz.runner import CHECKS, run, summary_line  # noqa: E402

KINDS = tuple(k for k, _ in READER_KINDS)


def test_a_seeded_subset_of_reader_mutants_reads_the_same_both_ways():
    total = run(6, seed=8, timeout=30, kinds=KINDS)
    failed = {check: total[check] for check in CHECKS if total[check]}
    assert not failed, (summary_line(total), total["failures"][:3])
    assert total["compared"] > 0


def test_the_reader_kinds_run_only_when_asked_for():
    """The default mix of kinds predates them (the seeded subsets of test_fuzz.py)."""
    assert not {make_case(3, i).kind for i in range(60)} & set(KINDS)
    assert {make_case(3, i, KINDS).kind for i in range(30)} == set(KINDS)


def _files(tmp_path, kind: str) -> dict:
    for index in range(50):
        case = MAKERS[kind](random.Random(f"t:{index}"))
        raw = case.files["dt.json"]
        if raw.startswith(b"[{") and raw.count(b"{") > 30:    # unmutated enough, many records
            for name, data in case.files.items():
                (tmp_path / name).write_bytes(data)
            return case.oracle
    raise AssertionError("no large case")


def test_the_oracle_sees_a_reader_that_returns_another_number(tmp_path, monkeypatch):
    """A numpy reader off by one ulp in one score is a difference the oracle names."""
    from deteval.io import _numeric_json

    oracle = _files(tmp_path, "reader-bbox")
    monkeypatch.chdir(tmp_path)
    assert all(ours == theirs for _, ours, theirs in reader_comparisons(oracle))
    # (the results reader imports it where it is used: docs/startup.md §2)
    real = _numeric_json.numeric_results_columns

    def off_by_one_ulp(*args, **kwargs):
        columns = real(*args, **kwargs)
        if columns is not None:
            columns[2][-1] = np.nextafter(columns[2][-1], 2.0)
        return columns

    monkeypatch.setattr(_numeric_json, "numeric_results_columns", off_by_one_ulp)
    found = [label for label, ours, theirs in reader_comparisons(oracle) if ours != theirs]
    assert found and any("scores" in label for label in found), found


@pytest.mark.skipif(importlib.util.find_spec("deteval.io._numeric_keypoints") is None,
                    reason="the keypoint results reader (branch kpseg) is not in this checkout")
def test_the_keypoint_reader_reads_a_mutant_as_the_msgspec_path(tmp_path, monkeypatch):
    oracle = _files(tmp_path, "reader-keypoints")
    monkeypatch.chdir(tmp_path)
    outcomes = reader_comparisons(oracle)
    assert outcomes and all(ours == theirs for _, ours, theirs in outcomes), outcomes
