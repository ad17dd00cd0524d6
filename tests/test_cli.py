"""Tests of the ``deteval`` command (deteval.cli) through ``main([...])``, the module entry
point, and the README's commands."""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from clirun import run

import deteval
from deteval.cli import main
from deteval.demo import DEMO_CATEGORIES, make_demo

ROOT = Path(__file__).resolve().parents[1]
README_COMMANDS = [
    "python -m pip install -e . && python -m deteval demo",
    "python -m pip install -e '.[test]' && python -m pytest",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """The demo sample as files, plus variants: unknown categories, no detections."""
    folder = tmp_path_factory.mktemp("cli")
    gt, results = make_demo(seed=0)
    unknown = copy.deepcopy(results)
    unknown[0]["category_id"] = 77
    unknown[5]["category_id"] = 78
    paths = {"gt": folder / "gt.json", "dt": folder / "dt.json",
             "unknown": folder / "unknown.json", "empty": folder / "empty.json"}
    for key, content in (("gt", gt), ("dt", results), ("unknown", unknown), ("empty", [])):
        paths[key].write_text(json.dumps(content))
    return paths


@pytest.fixture(scope="module")
def expected(files):
    return deteval.evaluate_coco(files["gt"], files["dt"])


def summary_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(" Average ")]


# --------------------------------------------------------------------------------------------
# deteval coco
# --------------------------------------------------------------------------------------------


def test_coco_prints_the_summary(files, expected):
    status, out, err = run("coco", files["gt"], files["dt"])
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines == expected.summary().splitlines()
    assert len(lines) == 12
    assert lines[0] == (" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] "
                        f"= {expected.stats[0]:0.3f}")
    assert all(line.startswith(" Average Precision  (AP) @[ ") for line in lines[:6])
    assert all(line.startswith(" Average Recall     (AR) @[ ") for line in lines[6:])


def test_coco_per_class(files, expected):
    status, out, err = run("coco", files["gt"], files["dt"], "--per-class")
    assert status == 0
    lines = out.splitlines()
    assert lines[:12] == expected.summary().splitlines()
    assert lines[12] == ""
    assert lines[13].split() == ["id", "name", "AP", "AP50", "AP75", "APs", "APm", "APl",
                                 "AR100", "n_gt", "n_dt"]
    rows = lines[14:]
    assert len(rows) == len(DEMO_CATEGORIES)
    for line, row, name in zip(rows, expected.per_class(), DEMO_CATEGORIES):
        assert name in line
        assert line.split()[0] == str(row["category_id"])
        assert f"{row['AP']:.3f}" in line and line.split()[-2:] == [str(row["n_gt"]),
                                                                    str(row["n_detections"])]


def test_coco_json(files, expected, tmp_path):
    path = tmp_path / "metrics.json"
    status, out, _ = run("coco", files["gt"], files["dt"], "--json", path)
    assert status == 0 and len(summary_lines(out)) == 12
    payload = json.loads(path.read_text())
    assert len(payload["stats"]) == 12 and all(isinstance(v, float) for v in payload["stats"])
    assert payload["stats"] == expected.stats.tolist()
    assert payload["stats_named"] == dict(zip(deteval.STAT_NAMES, expected.stats.tolist()))
    assert payload["summary"] == expected.summary().splitlines()
    assert [row["name"] for row in payload["per_class"]] == list(DEMO_CATEGORIES)
    assert payload["per_class"] == json.loads(json.dumps(expected.per_class()))
    assert payload["notes"] == []
    assert payload["params"]["max_detections"] == [1, 10, 100]
    assert set(payload["timings"]) >= {"load", "match", "accumulate", "total"}


def test_coco_matches_csv(files, expected, tmp_path):
    path = tmp_path / "matches.csv"
    status, _, _ = run("coco", files["gt"], files["dt"], "--matches", path)
    assert status == 0
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert list(rows[0]) == ["detection", "iou_threshold", "status", "gt"]
    assert len(rows) == len(expected.detections) * 10
    assert {r["status"] for r in rows} <= {"TP", "FP", "IGNORED", "NOT_EVALUATED"}
    assert path.read_text() == expected.matches.to_csv()
    n_tp = sum(r["status"] == "TP" for r in rows if r["iou_threshold"] == "0.5")
    assert n_tp == int((expected.matches.detection_status()[0] == 1).sum()) > 0


def test_coco_class_agnostic(files, tmp_path):
    path = tmp_path / "metrics.json"
    status, out, _ = run("coco", files["gt"], files["dt"], "--class-agnostic", "--per-class",
                         "--json", path)
    assert status == 0
    agnostic = deteval.evaluate_coco(files["gt"], files["dt"], use_categories=False)
    assert json.loads(path.read_text())["stats"] == agnostic.stats.tolist()
    assert summary_lines(out) == agnostic.summary().splitlines()
    assert "all categories" in out.splitlines()[-1]
    with_categories = deteval.evaluate_coco(files["gt"], files["dt"])
    assert not np.array_equal(agnostic.stats, with_categories.stats)


@pytest.mark.parametrize("spelling", ["1 10 300", "1,10,300", "300 10 1"])
def test_coco_max_dets(files, spelling):
    status, out, _ = run("coco", files["gt"], files["dt"], "--max-dets", spelling)
    assert status == 0
    lines = summary_lines(out)
    # stats[0] reads the literal maxDets=100 (pycocotools quirk): -1 when 100 is absent
    assert lines[0].endswith("maxDets=100 ] = -1.000")
    assert "maxDets=300" in lines[1]
    assert "maxDets=  1" in lines[6] and "maxDets= 10" in lines[7]
    reference = deteval.evaluate_coco(files["gt"], files["dt"], max_detections=(1, 10, 300))
    assert lines == reference.summary().splitlines()


def test_coco_iou_thresholds_and_subsets(files, tmp_path):
    path = tmp_path / "metrics.json"
    status, _, _ = run("coco", files["gt"], files["dt"], "--iou-thresholds", "0.5 0.75",
                       "--image-ids", "1 2 3 4 5", "--category-ids", "1,3", "--json", path)
    assert status == 0
    reference = deteval.evaluate_coco(files["gt"], files["dt"], iou_thresholds=(0.5, 0.75),
                                      image_ids=(1, 2, 3, 4, 5), category_ids=(1, 3))
    assert json.loads(path.read_text())["stats"] == reference.stats.tolist()


def test_coco_dropped_categories_note(files):
    status, out, err = run("coco", files["gt"], files["unknown"])
    assert status == 0 and len(summary_lines(out)) == 12
    assert err == ("deteval: note: 2 detection(s) dropped: their category_id is not a "
                   "ground-truth category (pycocotools drops them too)\n")
    assert "dropped" not in out


def test_coco_no_detections_note(files):
    status, out, err = run("coco", files["gt"], files["empty"])
    assert status == 0
    assert "deteval: note: no detections" in err
    assert summary_lines(out)[0].endswith("= 0.000")


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def _write(folder: Path, name: str, content) -> Path:
    path = folder / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda d, f: (f["gt"], d / "missing.json"),
                     r"{dt}: results file does not exist$", id="results-missing"),
        pytest.param(lambda d, f: (d, f["dt"]),
                     r"{gt}: ground truth file expected, found a directory$", id="gt-directory"),
        pytest.param(lambda d, f: (_write(d, "gt.json", '{"images": ['), f["dt"]),
                     r"{gt}: not valid JSON: ", id="gt-malformed"),
        pytest.param(lambda d, f: (f["dt"], f["gt"]),
                     r"{gt}: this holds detections \(results with scores\), not ground truth: "
                     r"are GT and DT swapped\? \(a COCO ground-truth file must hold a JSON "
                     r"object", id="swapped"),
        pytest.param(lambda d, f: (f["gt"], _write(d, "dt.json", [
            {"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5},
            {"image_id": 1, "category_id": 1, "score": 0.5}])),
                     r"{dt}: results\[1\]: missing 'bbox'$", id="results-record"),
        pytest.param(lambda d, f: (f["gt"], _write(d, "dt.json", [
            {"image_id": 999, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5}])),
                     r"{dt}: results\[0\]: image_id 999 is not an image of the ground truth",
                     id="results-unknown-image"),
        pytest.param(lambda d, f: (_write(d, "gt.json", {
            "images": [{"id": 1}], "categories": [{"id": 1}],
            "annotations": [{"id": 0, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1]}]}),
            f["dt"]), r"{gt}: annotations\[0\]: annotation id must be > 0; got 0",
                     id="gt-id-zero"),
    ],
)
def test_errors_exit_1_with_file_and_record(tmp_path, files, make, message):
    gt, dt = make(tmp_path, files)
    status, out, err = run("coco", gt, dt)
    assert status == 1
    assert out == ""
    assert err.startswith("deteval: error: ") and err.count("\n") == 1
    assert re.search(message.format(gt=re.escape(str(gt)), dt=re.escape(str(dt))),
                     err.rstrip("\n"))
    assert "Traceback" not in err


def test_too_few_max_dets_is_a_usage_error(files):
    status, out, err = run("coco", files["gt"], files["dt"], "--max-dets", "1 10")
    assert status == 2 and out == ""
    assert "--max-dets needs 3 values" in err


def test_unwritable_output_exits_1(files, tmp_path):
    status, _, err = run("coco", files["gt"], files["dt"], "--json", tmp_path / "no" / "x.json")
    assert status == 1
    assert err.startswith("deteval: error: ") and str(tmp_path / "no" / "x.json") in err


USAGE_ERRORS = [
    pytest.param([], id="no-command"),
    pytest.param(["frobnicate"], id="unknown-command"),
    pytest.param(["coco", "gt.json"], id="missing-results"),
    pytest.param(["coco", "gt.json", "dt.json", "--max-dets", "a b"], id="bad-max-dets"),
    pytest.param(["coco", "gt.json", "dt.json", "--iou-thresholds", "x"], id="bad-thresholds"),
    pytest.param(["coco", "gt.json", "dt.json", "--frobnicate"], id="unknown-option"),
    pytest.param(["coco", "gt.json", "dt.json", "--iou-type", "mask"], id="bad-iou-type"),
]


@pytest.mark.parametrize("argv", USAGE_ERRORS)
def test_usage_errors_exit_2(argv, capsys):
    status, out, err = run(*argv)
    assert status == 2
    printed = capsys.readouterr()
    assert out == "" and printed.out == ""
    assert "usage: deteval" in err + printed.err
    assert "Traceback" not in err + printed.err


def test_usage_errors_go_to_the_given_stderr(capsys):
    status, _, err = run("coco", "gt.json")
    assert status == 2 and "usage: deteval" in err


def test_bad_number_list_message():
    status, _, err = run("coco", "gt.json", "dt.json", "--max-dets", "a b")
    assert status == 2
    assert ("argument --max-dets: expected a list of positive int values, e.g. '1 10 100'; "
            "got 'a b'") in err


@pytest.mark.parametrize("text", ["0 1 2", "١ 10 100", "1_0 10 100"])
def test_max_dets_must_be_positive_ascii_integers(text):
    status, _, err = run("coco", "gt.json", "dt.json", "--max-dets", text)
    assert status == 2
    assert f"argument --max-dets: expected a list of positive int values, e.g. '1 10 100'; " \
           f"got {text!r}" in err


def test_help_exits_0():
    out = io.StringIO()
    assert main(["--help"], stdout=out) == 0
    assert "coco" in out.getvalue()


# --------------------------------------------------------------------------------------------
# deteval demo, python -m deteval, README
# --------------------------------------------------------------------------------------------


def test_demo(tmp_path):
    path = tmp_path / "demo.json"
    status, out, err = run("demo", "--json", path)
    assert status == 0 and err == ""
    fixtures = ROOT / "fixtures" / "demo"
    reference = deteval.evaluate_coco(fixtures / "gt.json", fixtures / "detections.json")
    assert summary_lines(out) == reference.summary().splitlines()
    assert out.startswith("deteval demo: 24 images, 5 categories, ")
    assert all(name in out for name in DEMO_CATEGORIES)
    assert json.loads(path.read_text())["stats"] == reference.stats.tolist()


def test_python_m_deteval_version():
    done = subprocess.run([sys.executable, "-m", "deteval", "--version"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"deteval {deteval.__version__}"


def test_python_m_deteval_demo():
    """The README's first command, without the install."""
    done = subprocess.run([sys.executable, "-m", "deteval", "demo"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert len(summary_lines(done.stdout)) == 12


def test_readme_starts_with_the_two_commands():
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index("```bash")
    assert start < 5, "the commands must be the README's first lines"
    end = lines.index("```", start + 1)
    assert lines[start + 1:end] == README_COMMANDS


def test_ci_runs_the_readme_test_command():
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index("```bash")
    test_command = lines[start + 2]
    assert test_command == README_COMMANDS[1]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in [line.strip() for line in ci if not line.lstrip().startswith("#")]


# --------------------------------------------------------------------------------------
# One spelling of each shared option (deteval/cli/_shared_options.py), the other an alias
# --------------------------------------------------------------------------------------


def _parse(command: str, *argv: str):
    import argparse

    from deteval.cli import _main

    parser = argparse.ArgumentParser(prog="deteval")
    commands = parser.add_subparsers(dest="command")
    _main._commands()[command].add_parser(commands)
    return parser.parse_args([command, *argv]), commands.choices[command].format_help()


_REQUIRED = {"confusion": ["GT", "DT"], "draw": ["GT", "DT", "--images", "I", "--out", "O"],
             "report": ["GT", "DT", "--out", "O"]}


@pytest.mark.parametrize("command", sorted(_REQUIRED))
@pytest.mark.parametrize(("iou", "score"), [("--iou-threshold", "--score-threshold"),
                                             ("--iou", "--score")])
def test_threshold_options_are_spelled_alike_in_every_command(command, iou, score):
    args, help_text = _parse(command, *_REQUIRED[command], iou, "0.7", score, "0.25")
    assert (args.iou_threshold, args.score_threshold) == (0.7, 0.25)
    assert "--iou-threshold T, --iou T" in help_text
    assert "--score-threshold S, --score S" in help_text


@pytest.mark.parametrize("spelling", ["--iou-thresholds", "--iou"])
def test_voc_iou_thresholds_spelled_as_coco_with_the_old_alias(spelling):
    args, help_text = _parse("voc", "GT", "DT", spelling, "0.5 0.75")
    assert args.iou_thresholds == [0.5, 0.75]
    assert "--iou-thresholds '0.5 0.75', --iou '0.5 0.75'" in help_text
def test_main_words_deteval_errors_but_lets_other_libraries_errors_show(monkeypatch):
    # A ValueError deteval raises about an argument is a message; one from deep inside a
    # library (numpy, say) is a bug, which a catch-all would have hidden as a bare message.
    from deteval.cli import _main

    with pytest.raises(ValueError) as ours:
        deteval.COCOParams(max_detections=(0, 1, 2))
    assert _main._raised_by_deteval(ours.value)
    with pytest.raises(ValueError) as numpy_s:
        np.zeros(2).reshape(3)
    assert not _main._raised_by_deteval(numpy_s.value)
    import deteval.cli.coco as coco_command

    def broken(args, out, err):
        np.zeros(2).reshape(3)

    monkeypatch.setattr(coco_command, "run", broken)
    with pytest.raises(ValueError, match="cannot reshape"):
        run("coco", "gt.json", "dt.json")
