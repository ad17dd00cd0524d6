"""The fuzz harness (scripts/fuzz/) on a fast seeded subset: every input gets a clean
answer (no traceback, signal, hang, unbounded memory, unnamed error, modified input) and the
COCO inputs pycocotools accepts get its 12 stats. ``scripts/fuzz.py --n 100000 --jobs 2``
is the long run."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from fuzz.generators import Case, make_case  # noqa: E402
from fuzz.runner import CHECKS, run, run_case, summary_line  # noqa: E402

SUBSET = 150


def test_a_seeded_subset_of_mutants_gets_clean_answers_and_pycocotools_numbers():
    total = run(SUBSET, seed=19, timeout=20)
    assert total["inputs"] == SUBSET
    failed = {check: total[check] for check in CHECKS if total[check]}
    assert not failed, (summary_line(total), total["failures"][:5])
    assert total["compared"] > 0           # the oracle ran on some inputs
    assert total["refused"] > 0 and total["ok"] > 0


def test_cases_are_deterministic():
    assert make_case(7, 123).to_json() == make_case(7, 123).to_json()
    assert make_case(7, 123).to_json() != make_case(8, 123).to_json()


def _case() -> Case:
    return Case("probe", {"gt.json": b"{}"}, ["coco", "gt.json", "dt.json"])


@pytest.mark.parametrize(("main", "check"), [
    (lambda argv: 1 / 0, "crash"),
    (lambda argv: os.kill(os.getpid(), signal.SIGSEGV), "crash"),
    (lambda argv: time.sleep(30), "hang"),
    (lambda argv: os.write(2, b"deteval: error: something\n") and 1, "unnamed"),
    (lambda argv: Path("gt.json").write_text("[]") and 0, "modified"),
])
def test_the_runner_sees_each_kind_of_failure(monkeypatch, main, check):
    import deteval.cli

    monkeypatch.setattr(deteval.cli, "main", main)
    outcome = run_case(_case(), timeout=2)
    assert check in outcome["failed"], outcome
