"""The notes of a protocol's own command (what its evaluation left out: results of a
category_id that is not a ground-truth category, beyond LVIS's per-image cut, unverified,
without keypoint scores, ...) are printed, with the same wording, by the diagnostics that
read the protocol's decisions: ``deteval errors --protocol lvis``, ``deteval calibration
--protocol P`` and ``deteval compare --protocol P`` (each results file's notes, after its
name). The numbers stay those of the Python API on the same files."""

from __future__ import annotations

import json

import oidgen
import pytest
from clirun import run
from crowdposegen import make_crowdpose_dataset
from lvisgen import make_lvis_dataset

import deteval
from deteval.demo import make_demo

UNKNOWN = "not a ground-truth category"



def notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("deteval: note: ")]


@pytest.fixture(scope="module")
def lvis_files(tmp_path_factory):
    """An LVIS case with results of an unknown category, of zero area and unverified (the
    generator's mix), and a second results file with more unknown-category results."""
    folder = tmp_path_factory.mktemp("lvis_notes")
    gt, dt = make_lvis_dataset(1, n_images=3)
    other = [dict(d, category_id=999) if i % 5 == 0 else d for i, d in enumerate(dt)]
    paths = {}
    for name, value in (("gt", gt), ("dt", dt), ("other", other)):
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps(value))
    return paths


def test_lvis_case_has_the_notes_the_tests_look_for(lvis_files):
    status, _, err = run("lvis", lvis_files["gt"], lvis_files["dt"])
    assert status == 0
    assert any(UNKNOWN in n for n in notes(err))
    assert any("neg_category_ids" in n for n in notes(err))


@pytest.mark.parametrize("argv, lvis_argv", [
    (("errors", "--protocol", "lvis"), ()),
    (("errors", "--protocol", "lvis", "--max-detections", "5"), ("--max-dets", "5")),
    (("calibration", "--protocol", "lvis"), ()),
    (("calibration", "--protocol", "lvis", "--max-detections", "5"), ("--max-dets", "5")),
])
def test_lvis_diagnostics_print_the_notes_of_deteval_lvis(lvis_files, argv, lvis_argv):
    _, _, expected = run("lvis", lvis_files["gt"], lvis_files["dt"], *lvis_argv)
    status, _, err = run(*argv, lvis_files["gt"], lvis_files["dt"])
    assert status == 0, err
    assert notes(err) == notes(expected) and notes(err)
    if lvis_argv:
        assert any("beyond the 5 highest-scoring" in n for n in notes(err))


def test_errors_lvis_numbers_are_error_attribution_of_the_files(lvis_files, tmp_path):
    """The command reads the files itself now (for the notes): the numbers are still those
    of error_attribution reading the paths."""
    out_json = tmp_path / "tide.json"
    status, _, err = run("errors", "--protocol", "lvis", lvis_files["gt"], lvis_files["other"],
                         "--max-detections", "7", "--json", out_json)
    assert status == 0, err
    expected = deteval.error_attribution(str(lvis_files["gt"]), str(lvis_files["other"]),
                                         protocol="lvis", max_dets=7)
    assert json.loads(out_json.read_text())["tide"] == json.loads(json.dumps(expected.to_dict()))


def test_compare_lvis_prints_each_files_notes_after_its_name(lvis_files):
    _, _, base = run("lvis", lvis_files["gt"], lvis_files["dt"])
    _, _, other = run("lvis", lvis_files["gt"], lvis_files["other"])
    assert notes(base) != notes(other)      # the second file drops more: its own notes
    status, _, err = run("compare", "--protocol", "lvis", lvis_files["gt"], lvis_files["dt"],
                         lvis_files["other"], "--bootstrap", 5)
    assert status == 0, err
    prefix = "deteval: note: "
    expected = ([n.replace(prefix, prefix + "dt.json: ") for n in notes(base)]
                + [n.replace(prefix, prefix + "other.json: ") for n in notes(other)])
    assert notes(err) == expected


def test_compare_coco_prints_the_notes_of_every_file(tmp_path):
    """Not only the baseline's: a model whose results have an unknown category says so."""
    gt, results = make_demo(seed=0, n_images=4)
    unknown = [dict(d, category_id=777) if i < 3 else d for i, d in enumerate(results)]
    for name, value in (("gt", gt), ("a", results), ("b", unknown)):
        (tmp_path / f"{name}.json").write_text(json.dumps(value))
    _, _, own = run("coco", tmp_path / "gt.json", tmp_path / "b.json", "--no-check")
    assert notes(own) and UNKNOWN in notes(own)[0]
    status, _, err = run("compare", tmp_path / "gt.json", tmp_path / "a.json",
                         tmp_path / "b.json", "--bootstrap", 5)
    assert status == 0, err
    assert notes(err) == [n.replace("note: ", "note: b.json: ") for n in notes(own)]


def _protocol_files(protocol: str, folder) -> tuple[list, list]:
    """(argv of the protocol's own command, argv of calibration) on files with notes."""
    if protocol == "openimages":
        boxes, labels, dets, _, _ = oidgen.make_problem(0, n_images=8, n_classes=4)
        dets = [r[:2] + (min(max(r[2], 0.0), 1.0),) + r[3:] for r in dets]   # confidences
        gt = oidgen.write_rows(folder / "gt.csv", oidgen.BOXES_HEADER, boxes)
        dt = oidgen.write_rows(folder / "dt.csv", oidgen.DETECTIONS_HEADER, dets)
        extra = ["--labels", oidgen.write_rows(folder / "labels.csv", oidgen.LABELS_HEADER,
                                               labels)]
        return ["openimages", gt, dt, *extra], [gt, dt, *extra]
    if protocol == "crowdpose":
        gt, dt = make_crowdpose_dataset(0, n_images=6)
    else:
        gt, dt = make_demo(seed=0, n_images=4)
        dt = [dict(d, category_id=777) if i < 2 else d for i, d in enumerate(dt)]
    for name, value in (("gt", gt), ("dt", dt)):
        (folder / f"{name}.json").write_text(json.dumps(value))
    gt, dt = folder / "gt.json", folder / "dt.json"
    own = {"coco": ["coco", gt, dt, "--no-check"], "crowdpose": ["crowdpose", gt, dt],
           "voc2007": ["voc", "--year", "2007", gt, dt, "--no-check"]}[protocol]
    return own, [gt, dt]


@pytest.mark.parametrize("protocol", ["coco", "voc2007", "crowdpose", "openimages"])
def test_calibration_prints_the_notes_of_the_protocols_command(protocol, tmp_path):
    own, files = _protocol_files(protocol, tmp_path)
    _, _, expected = run(*own)
    assert notes(expected)      # the case has something to say
    status, _, err = run("calibration", "--protocol", protocol, *files)
    assert status == 0, err
    assert notes(err) == notes(expected)


def test_calibration_coco_leaves_out_the_note_on_the_summary(tmp_path):
    """--max-detections other than 100 makes COCO's summary read -1 for some numbers (a
    note of `deteval coco --max-dets`); calibration prints no summary, nor that note."""
    _, files = _protocol_files("coco", tmp_path)
    _, _, summary = run("coco", *files, "--max-dets", "5 5 5", "--no-check")
    assert any("summary reads" in n for n in notes(summary))
    status, _, err = run("calibration", *files, "--max-detections", "5")
    assert status == 0, err
    assert notes(err) == [n for n in notes(summary) if "summary reads" not in n]
    assert notes(err)


@pytest.mark.parametrize("protocol", ["voc2007", "crowdpose", "openimages"])
def test_errors_prints_the_notes_of_the_protocols_command(protocol, tmp_path):
    """``deteval errors --protocol voc2007|crowdpose|openimages`` leaves out what the
    protocol's command leaves out (results of a category that is not a ground-truth category,
    without keypoint scores, of an unverified class, ...) and says so in the command's words
    (VOC: the notes on the inputs; the one on a class without ground truth is about the
    devkit's mAP)."""
    own, files = _protocol_files(protocol, tmp_path)
    _, _, expected = run(*own)
    status, _, err = run("errors", "--protocol", protocol, *files,
                         *(["--no-check"] if protocol == "voc2007" else []))
    assert status == 0, err
    wanted = [n for n in notes(expected) if "without ground truth" not in n]
    assert wanted and notes(err) == wanted
    if protocol == "voc2007":
        assert any(UNKNOWN in n for n in notes(err))


def test_error_attribution_notes_are_the_protocols_notes(tmp_path):
    """``ErrorAttribution.notes``: ``evaluate_openimages``' notes with Open Images, VOC's
    notes on its inputs, CrowdPose's on unscored results, none with COCO (tidecv makes
    classes of unknown categories)."""
    (boxes, dets), oid = oidgen.write_problem(tmp_path)
    got = deteval.error_attribution(boxes, dets, protocol="openimages", **oid)
    assert got.notes and got.notes == deteval.evaluate_openimages(boxes, dets, **oid).notes
    gt, dt = make_demo(seed=0, n_images=4)
    dt = [dict(d, category_id=777) if i < 2 else d for i, d in enumerate(dt)]
    voc = deteval.error_attribution(gt, dt, protocol="voc2012")
    assert voc.notes == ("2 detection(s) dropped: their category is not a ground-truth "
                         "category",)
    assert [n for n in deteval.evaluate_voc(gt, dt).notes if n in voc.notes] == list(voc.notes)
    assert deteval.error_attribution(gt, dt).notes == ()
    gt, dt = make_crowdpose_dataset(0, n_images=6)
    crowdpose = deteval.error_attribution(gt, dt, protocol="crowdpose")
    assert crowdpose.notes and crowdpose.notes == deteval.evaluate_crowdpose(gt, dt).notes
