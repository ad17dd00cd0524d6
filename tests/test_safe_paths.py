"""Special paths (issue 19): inputs that are not regular files are refused before they are
opened (a FIFO blocked forever, /dev/zero filled memory); outputs that are inputs are
refused (also through symbolic and hard links); outputs are written whole or not at all,
and before anything is printed; write errors name the output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run

from deteval import FormatError, read_coco_gt
from deteval.io._json import read_bytes
from deteval.io.formats import detect_format, read_gt

ROOT = Path(__file__).resolve().parents[1]
GT = {"images": [{"id": 1, "width": 100, "height": 80, "file_name": "a.jpg"}],
      "categories": [{"id": 1, "name": "cat"}],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20],
                       "area": 400, "iscrowd": 0}]}
DT = [{"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 19], "score": 0.9}]


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    gt, dt = tmp_path / "gt.json", tmp_path / "dt.json"
    gt.write_text(json.dumps(GT))
    dt.write_text(json.dumps(DT))
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    dets = tmp_path / "dets"
    dets.mkdir()
    (dets / "a.txt").write_text("0 0.9 10 10 30 30\n")
    voc = tmp_path / "voc"
    voc.mkdir()
    (voc / "a.xml").write_text("<annotation><filename>a.jpg</filename><size><width>100</width>"
                               "<height>80</height></size></annotation>")
    return {"gt": gt, "dt": dt, "fifo": fifo, "folder": tmp_path, "dets": dets, "voc": voc}


# --------------------------------------------------------------------------------------------
# Inputs that are not regular files


def test_a_fifo_is_refused_before_it_is_opened(files):
    # Opening a FIFO nobody writes would block this test forever.
    with pytest.raises(FormatError, match=rf"^{files['fifo']}: ground truth file expected, "
                                          r"found a FIFO \(named pipe\)"):
        read_coco_gt(files["fifo"])


def test_dev_zero_is_refused_not_read_until_memory_runs_out():
    with pytest.raises(FormatError, match=r"^/dev/zero: results file expected, found a "
                                          r"character device"):
        read_bytes("/dev/zero", what="results")
    with pytest.raises(FormatError, match=r"^/dev/zero: detections file expected, found a "
                                          r"character device"):
        detect_format("/dev/zero", kind="detections")


def test_reads_stop_at_the_size_cap(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b"[" + b" " * 100 + b"]")
    with pytest.raises(FormatError, match=rf"^{path}: results file is larger than 50 bytes"):
        read_bytes(path, what="results", limit=50)
    assert read_bytes(path, what="results", limit=102) == path.read_bytes()


@pytest.mark.parametrize(("argv", "message"), [
    (lambda f: ["coco", f["fifo"], f["dt"]], "{fifo}: ground truth file expected, found a FIFO"),
    (lambda f: ["coco", f["gt"], f["fifo"]], "{fifo}: results file expected, found a FIFO"),
    (lambda f: ["coco", "/dev/zero", f["dt"]],
     "/dev/zero: ground truth file expected, found a character device"),
    (lambda f: ["voc", f["gt"], f["dets"], "--dt-format", "txt", "--box-format", "xyxy",
                "--names", f["fifo"]],
     "{fifo}: class names file expected, found a FIFO"),
    (lambda f: ["eval", f["voc"], f["dt"], "--protocol", "coco", "--classes", f["fifo"]],
     "{fifo}: .* file expected, found a FIFO"),
    (lambda f: ["voc", "/dev/zero", f["dt"], "--gt-format", "voc"],
     "/dev/zero: .*expected, found a character device"),
    (lambda f: ["classify", "/dev/zero", f["dt"]],
     "/dev/zero: LABELS file expected, found a character device"),
    (lambda f: ["classify", f["fifo"], f["dt"]], "{fifo}: LABELS file expected, found a FIFO"),
])
def test_the_commands_refuse_special_inputs_naming_them(files, argv, message):
    status, out, err = run(*argv(files))
    assert status == 1, err
    assert err.startswith("deteval: error: ") and "Traceback" not in err
    import re
    assert re.search(message.format(fifo=re.escape(str(files["fifo"]))), err), err


def test_an_npy_header_claiming_a_huge_shape_is_refused(tmp_path):
    import numpy as np

    np.save(tmp_path / "labels.npy", np.zeros(3, dtype=np.int64))
    np.save(tmp_path / "scores.npy", np.zeros((3, 2)))
    raw = (tmp_path / "scores.npy").read_bytes().replace(b"(3, 2)", b"(10000000000, 2)", 1)
    (tmp_path / "scores.npy").write_bytes(raw)
    status, _, err = run("classify", tmp_path / "labels.npy", tmp_path / "scores.npy")
    assert status == 1
    assert err.startswith(f"deteval: error: {tmp_path / 'scores.npy'}: cannot read SCORES file: "
                          "its header says shape (10000000000, 2) of float64")


# --------------------------------------------------------------------------------------------
# Outputs that are inputs


@pytest.mark.parametrize("make", ["same", "symlink", "hardlink"])
def test_an_output_that_is_an_input_is_refused(files, make):
    victim = files["gt"]
    before = victim.read_bytes()
    output = victim
    if make == "symlink":
        output = files["folder"] / "link.json"
        output.symlink_to(victim)
    elif make == "hardlink":
        output = files["folder"] / "hard.json"
        os.link(victim, output)
    status, out, err = run("coco", victim, files["dt"], "--json", output)
    assert status == 1 and out == ""
    assert err == (f"deteval: error: {output}: the --json output is the ground truth "
                   f"({victim}), an input: refusing to overwrite it; write the output "
                   "elsewhere\n")
    assert victim.read_bytes() == before


def test_matches_onto_the_detections_are_refused(files):
    before = files["dt"].read_bytes()
    status, _, err = run("coco", files["gt"], files["dt"], "--matches", files["dt"])
    assert status == 1 and "the --matches output is the detections" in err
    assert files["dt"].read_bytes() == before


def test_convert_onto_its_source_or_into_its_folder_is_refused(files, tmp_path):
    status, _, err = run("convert", files["gt"], files["gt"])
    assert status == 1 and err.endswith(f"{files['gt']}: the destination is the source; "
                                        "write elsewhere\n")
    status, _, err = run("convert", files["gt"], tmp_path, "--to", "voc")
    assert status == 1 and (f"{tmp_path}: the destination holds the source "
                            f"({files['gt']}), an input (the command writes files there") in err


def test_report_into_the_folder_of_its_inputs_is_refused(files, tmp_path):
    status, _, err = run("report", files["gt"], files["dt"], "--out", tmp_path)
    assert status == 1 and f"{tmp_path}: the --out output holds the ground truth" in err


# --------------------------------------------------------------------------------------------
# Writing


def test_a_failed_write_leaves_no_half_file_and_names_the_output(files):
    status, _, err = run("coco", files["gt"], files["dt"], "--json", "/dev/full")
    assert status == 1
    assert err.endswith("deteval: error: cannot write /dev/full: No space left on device\n")
    out = files["folder"] / "out.json"
    out.write_text("previous")

    def fail(path):
        Path(path).write_text("half")
        raise OSError(28, "No space left on device")

    from deteval.cli._outputs import write_output
    from deteval.errors import DetevalError

    with pytest.raises(DetevalError, match=rf"^cannot write {out}: No space left on device$"):
        write_output(out, fail)
    assert out.read_text() == "previous"
    assert sorted(p.name for p in files["folder"].iterdir()) == [
        "dets", "dt.json", "gt.json", "out.json", "pipe.json", "voc"]


def test_an_output_through_a_symlink_replaces_the_link_target(files):
    target = files["folder"] / "metrics.json"
    target.write_text("old")
    link = files["folder"] / "link-to-metrics.json"
    link.symlink_to(target)
    status, _, _ = run("coco", files["gt"], files["dt"], "--json", link)
    assert status == 0 and link.is_symlink()
    assert "stats" in json.loads(target.read_text())


def test_files_are_written_even_when_stdout_is_closed(files):
    out = files["folder"] / "out.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "deteval", "coco", str(files["gt"]), str(files["dt"]), "--json",
         str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    process.stdout.close()       # as `| true` does
    with process:
        err = process.stderr.read().decode()
    assert process.returncode == 0, err
    assert err == ""
    assert len(json.loads(out.read_text())["stats"]) == 12


def test_yolo_labels_folder_with_a_fifo_is_refused(tmp_path):
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "obj.names").write_text("cat\n")
    (labels / "a.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    os.mkfifo(labels / "b.txt")
    dataset = read_gt(labels, format="yolo", image_sizes=(10, 10))
    assert dataset.images.file_names == ("a",)        # not a file: not listed, never opened


@pytest.mark.parametrize("destination", ["regular", "pipe"])
def test_outputs_are_written_without_fcntl_nor_o_nonblock(files, tmp_path, destination):
    """Windows has neither ``fcntl`` nor ``os.O_NONBLOCK``: the commands import no such module
    and write their files (a regular file, and in place through ``/dev/stdout`` when it is a
    pipe), here in an interpreter where both are made missing."""
    out = tmp_path / "out.json" if destination == "regular" else "/dev/stdout"
    probe = ("import os, sys\nsys.modules['fcntl'] = None\ndel os.O_NONBLOCK\n"
             "from deteval.cli import main\n"
             f"sys.exit(main(['coco', {str(files['gt'])!r}, {str(files['dt'])!r}, "
             f"'--json', {str(out)!r}, '--no-check']))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    written = Path(out).read_text() if destination == "regular" else proc.stdout
    assert '"stats"' in written
