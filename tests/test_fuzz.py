"""The fuzz harness (scripts/fuzz/) on a fast seeded subset: every input gets a clean
answer (no traceback, signal, hang, unbounded memory, unnamed error, modified input, exit
status outside the case's, file written by a failed run) and the COCO inputs pycocotools
accepts get its numbers. ``scripts/fuzz.py --n 100000 --jobs 2`` is the long run; the
findings of the campaigns are tests in tests/test_fuzz_findings.py."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from fuzz.generators import COMMAND_KINDS, KINDS, Case, make_case  # noqa: E402
from fuzz.runner import CHECKS, run, run_case, summary_line  # noqa: E402

SUBSET = 80
COMMANDS_SUBSET = 40
#: The cases of scripts/fuzz/protocols.py (their own test below).
PROTOCOL_KINDS = ("errors-protocol", "lrp", "calibration-protocol", "compare-protocol")


def test_a_seeded_subset_of_mutants_gets_clean_answers_and_pycocotools_numbers():
    total = run(SUBSET, seed=19, timeout=20)
    assert total["inputs"] == SUBSET
    failed = {check: total[check] for check in CHECKS if total[check]}
    assert not failed, (summary_line(total), total["failures"][:5])
    assert total["compared"] > 0           # the oracle ran on some inputs
    assert total["refused"] > 0 and total["ok"] > 0


def test_a_seeded_subset_of_the_commands_cases_gets_clean_answers():
    """crowdpose, calibration, compare, coco/voc options, report, draw, errors, check,
    lvis: well-formed, malformed and bad-option cases each answer as their case allows."""
    kinds = tuple(k for k, _ in COMMAND_KINDS if k not in PROTOCOL_KINDS)
    total = run(COMMANDS_SUBSET, seed=23, timeout=20, kinds=kinds)
    failed = {check: total[check] for check in CHECKS if total[check]}
    assert not failed, (summary_line(total), total["failures"][:5])
    assert total["ok"] > 0 and total["usage"] > 0 and total["compared"] > 0
    assert set(total["kinds"]) <= set(kinds) | {"errors", "check"}


def test_a_seeded_subset_of_the_protocol_cases_gets_clean_answers():
    """errors --protocol/--iou-type, --lrp of voc/lvis/openimages/crowdpose, calibration
    --protocol and compare --protocol lvis|crowdpose|openimages (scripts/fuzz/protocols.py):
    clean answers, and the differential oracles (TIDE's AP against the protocol's command,
    calibration accepting what the protocol's command accepts) ran."""
    total = run(30, seed=11, timeout=20, kinds=PROTOCOL_KINDS)
    failed = {check: total[check] for check in CHECKS if total[check]}
    assert not failed, (summary_line(total), total["failures"][:5])
    assert total["ok"] > 0 and total["usage"] > 0 and total["compared"] > 0
    assert set(total["kinds"]) == set(PROTOCOL_KINDS)


@pytest.mark.parametrize(("reference", "check"), [(0.4, "divergence"), (0.5, None)])
def test_the_runner_compares_a_command_with_its_differential_oracle(monkeypatch, reference,
                                                                    check):
    import deteval.cli

    def main(argv):
        name = "reference.json" if argv[0] == "voc" else "metrics.json"
        Path(name).write_text('{"tide": {"ap": 50.0}}' if argv[0] == "errors"
                              else f'{{"mean_ap": {reference}}}')
        return 0

    monkeypatch.setattr(deteval.cli, "main", main)
    case = Case("probe", {"gt.json": b"{}", "dt.json": b"[]"},
                ["errors", "gt.json", "dt.json", "--json", "metrics.json"],
                outputs=["metrics.json"], expect=(0,),
                oracle={"read": "differential", "label": "AP", "ours": "tide.ap",
                        "theirs": "mean_ap", "scale": 100.0,
                        "argv": ["voc", "gt.json", "dt.json", "--json", "reference.json"]})
    outcome = run_case(case, timeout=2)
    assert outcome["compared"] and set(outcome["failed"]) == ({check} - {None}), outcome


def test_every_command_has_cases():
    """The generators drive every command of ``deteval --help`` but demo (no input)."""
    from deteval.cli._main import _COMMANDS

    commands = {make_case(5, i).argv[0] for i in range(600)}
    assert set(_COMMANDS) - {"demo"} <= commands, set(_COMMANDS) - commands
    assert {k for k, _ in COMMAND_KINDS} <= {k for k, _ in KINDS}


def test_cases_are_deterministic():
    assert make_case(7, 123).to_json() == make_case(7, 123).to_json()
    assert make_case(7, 123).to_json() != make_case(8, 123).to_json()


def _case() -> Case:
    return Case("probe", {"gt.json": b"{}"}, ["coco", "gt.json", "dt.json"])


@pytest.mark.parametrize(("main", "check"), [
    (lambda argv: 1 / 0, "crash"),
    (lambda argv: os.kill(os.getpid(), signal.SIGSEGV), "crash"),
    (lambda argv: time.sleep(30), "hang"),
    (lambda argv: sum(range(10**10)), "hang"),     # CPU time
    (lambda argv: os.write(2, b"deteval: error: something\n") and 1, "unnamed"),
    (lambda argv: Path("gt.json").write_text("[]") and 0, "modified"),
    (lambda argv: os.write(2, b"deteval: error: gt.json: bad\n") and 1, "exit"),
    (lambda argv: Path("metrics.json").write_text("{}") and 2, "outputs"),
    (lambda argv: Path(".metrics.json.tmp").write_text("{") and 0, "outputs"),
    (lambda argv: 0, "outputs"),     # metrics.json promised, not written
])
def test_the_runner_sees_each_kind_of_failure(monkeypatch, main, check):
    import deteval.cli

    monkeypatch.setattr(deteval.cli, "main", main)
    case = _case()
    case.expect, case.outputs = (0, 2), ["metrics.json"]
    outcome = run_case(case, timeout=1)
    assert check in outcome["failed"], outcome


def test_the_runner_lets_a_regression_gate_write_its_json(monkeypatch):
    import deteval.cli

    def gate(argv):
        Path("metrics.json").write_text("{}")
        os.write(2, b"deteval: regression: b.json: AP is worse\n")
        return 1

    monkeypatch.setattr(deteval.cli, "main", gate)
    case = _case()
    case.expect, case.outputs = (0, 1), ["metrics.json"]
    outcome = run_case(case, timeout=2)
    assert not outcome["failed"] and outcome["gated"], outcome
