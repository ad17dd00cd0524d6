"""``deteval report --ci B --threads N``: the resamples' threads reach the bootstrap (one run
and two runs compared), the report's intervals are the same for every N, and ``--threads``
without ``--ci`` is a usage error (as in every command with ``--ci``)."""

from __future__ import annotations

import json

import pytest
from clirun import run
from protocolfiles import write_demo_files

import deteval.diagnostics.bootstrap as bootstrap
import deteval.diagnostics.compare as compare


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory):
    return write_demo_files(tmp_path_factory.mktemp("report_threads"), seed=5, n_images=6)[2]


def _recording(monkeypatch, module, name: str) -> list:
    function, calls = getattr(module, name), []

    def recorded(*args, **options):
        calls.append(options["threads"])
        return function(*args, **options)

    monkeypatch.setattr(module, name, recorded)
    return calls


@pytest.mark.parametrize("second", [False, True], ids=["one run", "two runs"])
def test_threads_reach_the_bootstrap(demo_files, monkeypatch, tmp_path, second):
    module, name = (compare, "compare_coco") if second else (bootstrap, "bootstrap_coco")
    calls = _recording(monkeypatch, module, name)
    numbers = []
    for threads in ("1", "3"):
        out = tmp_path / threads
        status, _, err = run("report", *demo_files, *demo_files[1:] * second, "--out", out,
                             "--ci", 5, "--threads", threads, "--gallery", 0, "--quiet",
                             "--no-check")
        assert status == 0, err
        payload = json.loads((out / "results.json").read_text())
        numbers.append(payload["panels"]["comparison_intervals"] if second
                       else payload["panels"]["intervals"])
    assert calls == [1, 3]
    assert numbers[0] == numbers[1]


def test_threads_without_ci_is_a_usage_error(demo_files, tmp_path):
    status, _, err = run("report", *demo_files, "--out", tmp_path / "r", "--threads", 2,
                         "--quiet")
    assert status == 2 and "--threads " in err and "it needs --ci" in err, err
    assert not (tmp_path / "r").exists()
