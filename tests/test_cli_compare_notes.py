"""``deteval compare`` names the file a note is about: a note on the ground truth's records
(an object without ``area``, with its record) names the ground-truth file, once, not each
results file as if the record were in it (fuzz8, 2026-11-26)."""

from __future__ import annotations

import json

from clirun import run as run_cli
from crowdposegen import make_crowdpose_dataset

NO_AREA = "have no 'area'"


def run(*argv) -> tuple[int, str]:
    """The exit status and stderr."""
    status, _, err = run_cli(*argv)
    return status, err


def notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("deteval: note: ")]


def test_compare_names_the_ground_truth_file_in_a_note_on_its_records(tmp_path):
    gt, dt = make_crowdpose_dataset(0, n_images=6)
    for ann in gt["annotations"][:2]:
        ann.pop("area", None)
    other = [dict(d, score=d["score"] * 0.5) for d in dt]
    for name, value in (("truth", gt), ("a", dt), ("b", other)):
        (tmp_path / f"{name}.json").write_text(json.dumps(value))
    _, own = run("crowdpose", tmp_path / "truth.json", tmp_path / "a.json", "--use-area")
    gt_notes = [n for n in notes(own) if NO_AREA in n]
    assert gt_notes and "annotations[" in gt_notes[0]   # the case has a note on a GT record
    status, err = run("compare", "--protocol", "crowdpose", tmp_path / "truth.json",
                      tmp_path / "a.json", tmp_path / "b.json", "--use-area",
                      "--bootstrap", 3)
    assert status == 0, err
    said = [n for n in notes(err) if NO_AREA in n]
    assert said == [n.replace("note: ", "note: truth.json: ") for n in gt_notes]
