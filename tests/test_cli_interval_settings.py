"""The settings of ``--ci B`` (``--confidence``, ``--seed``, and where nothing else reads
them ``--threads`` and ``--score-threshold``) given without ``--ci``: a usage error naming the
flag and what it needs, the same in every command that has ``--ci`` (they had no effect and
were accepted silently); with ``--ci`` each takes effect, and the defaults alone refuse
nothing."""

from __future__ import annotations

import json

import pytest
from clirun import run
from protocolfiles import write_demo_files, write_protocol_files


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """``{command: [GT, DT]}`` (coco: the demo's files, also read by voc and eval)."""
    folder = tmp_path_factory.mktemp("interval_settings")
    made = write_protocol_files(folder)
    made["coco"] = write_demo_files(folder, seed=4, n_images=6)[2]
    return made


#: command -> (its argv before the files, the files' key, the settings that need --ci)
COMMANDS = {
    "coco": (("coco",), "coco", ("--confidence", "--seed", "--score-threshold")),
    "voc": (("voc",), "coco", ("--confidence", "--seed")),
    "eval": (("eval", "--protocol", "coco"), "coco",
             ("--confidence", "--seed", "--score-threshold")),
    "lvis": (("lvis",), "lvis", ("--confidence", "--seed", "--threads")),
    "crowdpose": (("crowdpose",), "crowdpose", ("--confidence", "--seed", "--threads")),
    "openimages": (("openimages",), "openimages", ("--confidence", "--seed", "--threads")),
}
VALUES = {"--confidence": "0.9", "--seed": "3", "--threads": "2", "--score-threshold": "0.3"}
CASES = [(command, flag) for command, (_, _, flags) in COMMANDS.items() for flag in flags]


@pytest.mark.parametrize("command, flag", CASES)
def test_a_setting_of_the_intervals_without_ci_is_a_usage_error(files, command, flag):
    head, key, _ = COMMANDS[command]
    status, out, err = run(*head, *files[key], flag, VALUES[flag])
    assert status == 2 and out == "", err
    assert f"{flag} " in err and "it needs --ci" in err, err


def test_report_refuses_the_settings_without_ci(files, tmp_path):
    for flag in ("--confidence", "--seed"):
        status, _, err = run("report", *files["coco"], "--out", tmp_path / "r", flag,
                             VALUES[flag], "--quiet")
        assert status == 2 and f"{flag} " in err and "it needs --ci" in err, err
        assert not (tmp_path / "r").exists()


def test_the_alias_given_is_the_one_named(files):
    status, _, err = run("coco", *files["coco"], "--score", "0.3")
    assert status == 2 and "deteval coco: error: --score is " in err, err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_with_ci_the_settings_take_effect(files, command, tmp_path):
    head, key, flags = COMMANDS[command]
    payloads = []
    for settings in ((), tuple(x for flag in flags for x in (flag, VALUES[flag]))):
        path = tmp_path / f"{len(settings)}.json"
        status, _, err = run(*head, *files[key], "--ci", 20, *settings, "--json", path)
        assert status == 0, err
        payloads.append(json.loads(path.read_text())["intervals"])
    assert payloads[0] != payloads[1]       # another level and seed: other intervals


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_defaults_alone_refuse_nothing(files, command):
    head, key, _ = COMMANDS[command]
    status, _, err = run(*head, *files[key])
    assert status == 0, err
