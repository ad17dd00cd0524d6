"""The fuzz cases of the protocol settings compare and calibration take from each protocol's
command, and of ``--ci B --threads N`` (scripts/fuzz/settings.py): clean answers, usage
errors (exit 2) naming the option, and the differential oracles (compare's per-model
estimates against the protocol's command with the same settings; calibration accepting
what that command accepts; the intervals' JSON the same for every --threads and for ``eval``
as for ``coco``/``voc``)."""

from __future__ import annotations

import io
import json
import random
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from fuzz.generators import SETTINGS_KINDS  # noqa: E402
from fuzz.oracles import comparisons  # noqa: E402
from fuzz.runner import CHECKS, run, summary_line  # noqa: E402
from fuzz.settings import MAKERS  # noqa: E402

KINDS = tuple(k for k, _ in SETTINGS_KINDS)


def test_a_seeded_subset_of_the_settings_cases_gets_clean_answers():
    total = run(24, seed=5, timeout=20, kinds=KINDS)
    failed = {check: total[check] for check in CHECKS if total[check]}
    assert not failed, (summary_line(total), total["failures"][:5])
    assert total["ok"] > 0 and total["usage"] > 0 and total["compared"] > 0
    assert set(total["kinds"]) == set(KINDS)


def _good(kind: str, tmp_path, monkeypatch, want: str):
    """A well-formed case of ``kind`` whose argv has ``want``, run in ``tmp_path``."""
    from deteval.cli import main

    for index in range(200):
        case = MAKERS[kind](random.Random(f"s:{index}"))
        if case.shape == "good" and case.oracle and want in case.argv:
            break
    else:
        raise AssertionError(f"no good {kind} case with {want}")
    for name, raw in case.files.items():
        (tmp_path / name).write_bytes(raw)
    monkeypatch.chdir(tmp_path)
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(case.argv) in (0, 1)
    return case, json.loads((tmp_path / "metrics.json").read_text())


def test_the_per_model_oracle_sees_an_estimate_that_is_not_the_commands(tmp_path, monkeypatch):
    case, metrics = _good("compare-settings", tmp_path, monkeypatch, "--max-dets")
    pairs = comparisons(case.oracle, metrics)
    assert pairs and all(ours == theirs for _, ours, theirs in pairs), pairs
    label = metrics["models"][-1]
    metrics["intervals"][label][0]["estimate"] = 0.123456
    assert [p for p in comparisons(case.oracle, metrics) if p[1] != p[2]]


def test_the_same_json_oracle_sees_another_interval(tmp_path, monkeypatch):
    case, metrics = _good("intervals", tmp_path, monkeypatch, "--threads")
    assert all(ours == theirs for _, ours, theirs in comparisons(case.oracle, metrics))
    text = json.dumps(metrics).replace('"n_resamples": ', '"n_resamples": 1', 1)
    assert [p for p in comparisons(case.oracle, json.loads(text)) if p[1] != p[2]]
