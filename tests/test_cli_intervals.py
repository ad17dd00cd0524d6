"""``--ci`` where it was missing or partial: ``deteval lvis|crowdpose|openimages --ci B
--threads N`` (the resamples' threads reach the protocol's bootstrap; ``--threads`` without
``--ci`` is a usage error, nothing else runs on threads there), and ``deteval eval --ci``
(the intervals of ``deteval voc --ci`` and ``deteval coco --ci`` on the same files), with
``eval``'s VOC settings (``--detectron2``, ``--iou-thresholds``: ``deteval voc``'s)."""

from __future__ import annotations

import json

import pytest
from clirun import run
from protocolfiles import write_demo_files, write_protocol_files

import deteval.diagnostics.bootstrap_crowdpose as bootstrap_crowdpose
import deteval.diagnostics.bootstrap_lvis as bootstrap_lvis
import deteval.diagnostics.bootstrap_openimages as bootstrap_openimages

B = 20



@pytest.fixture(scope="module")
def protocol_files(tmp_path_factory):
    """``{protocol: [GT, DT]}`` of the three commands."""
    return write_protocol_files(tmp_path_factory.mktemp("intervals"))


MODULES = {"lvis": bootstrap_lvis, "crowdpose": bootstrap_crowdpose,
           "openimages": bootstrap_openimages}


@pytest.mark.parametrize("protocol", list(MODULES))
def test_threads_reach_the_protocols_bootstrap(protocol, protocol_files, monkeypatch,
                                               tmp_path):
    module = MODULES[protocol]
    function = getattr(module, f"bootstrap_{protocol}")
    calls = []

    def recorded(result, **options):
        calls.append(options["threads"])
        return function(result, **options)

    monkeypatch.setattr(module, f"bootstrap_{protocol}", recorded)
    payloads = []
    for threads in ("1", "3"):
        path = tmp_path / f"{threads}.json"
        status, out, err = run(protocol, *protocol_files[protocol], "--ci", B, "--threads",
                               threads, "--json", path)
        assert status == 0, err
        assert "95% interval" in out
        payloads.append(json.loads(path.read_text())["intervals"])
    assert calls == [1, 3]
    assert payloads[0] == payloads[1]       # the numbers are identical for every N


@pytest.mark.parametrize("protocol", list(MODULES))
def test_threads_without_ci_is_a_usage_error(protocol, protocol_files):
    status, _, err = run(protocol, *protocol_files[protocol], "--threads", 2)
    assert status == 2 and "it needs --ci" in err, err


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory):
    return write_demo_files(tmp_path_factory.mktemp("eval_ci"), seed=2, n_images=8)[2]


def _json(argv, path) -> dict:
    status, _, err = run(*argv, "--json", path, "--no-check")
    assert status == 0, err
    return json.loads(path.read_text())


@pytest.mark.parametrize("eval_argv, own_argv", [
    (("--protocol", "voc2007"), ("voc", "--year", "2007")),
    (("--protocol", "voc2012", "--detectron2", "--iou", "0.5 0.8"),
     ("voc", "--year", "2012", "--detectron2", "--iou", "0.5 0.8")),
    (("--protocol", "coco"), ("coco",)),
    (("--protocol", "coco", "--score-threshold", "0.3", "--iou-thresholds", "0.5 0.6"),
     ("coco", "--score-threshold", "0.3", "--iou-thresholds", "0.5 0.6")),
])
def test_eval_ci_gives_the_intervals_of_the_protocols_command(demo_files, eval_argv,
                                                              own_argv, tmp_path):
    ci = ("--ci", B, "--seed", 4)
    got = _json(("eval", *eval_argv, *demo_files, *ci), tmp_path / "eval.json")
    expected = _json((*own_argv, *demo_files, *ci), tmp_path / "own.json")
    assert got["intervals"] == expected["intervals"]
    assert got["intervals"]["n_resamples"] == B
    key = "stats" if "coco" in own_argv else "mean_ap"
    assert got[key] == expected[key]


@pytest.mark.parametrize("argv, message", [
    (("--protocol", "voc2007", "--score-threshold", "0.3"), "it needs --protocol coco"),
    (("--protocol", "coco", "--detectron2"), "--detectron2 needs --protocol voc2007 or "
     "voc2012"),
])
def test_eval_refuses_the_other_protocols_options(demo_files, argv, message):
    status, _, err = run("eval", *argv, *demo_files)
    assert status == 2 and message in err, err
