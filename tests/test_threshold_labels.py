"""The written form of IoU thresholds in labels (deteval/_threshold_labels.py): faithful (a
label reads back as the threshold given) and distinct (``--iou-thresholds '0.5 0.501'`` made
two ``AP@0.50`` columns), in the VOC summary, ``--json``, the bootstrap's names and the
report's rows; the usual thresholds keep their two-decimal labels."""

from __future__ import annotations

import json

import numpy as np
import pytest
from clirun import run
from hypothesis import given
from hypothesis import strategies as st
from protocolfiles import write_demo_files

import deteval
from deteval._threshold_labels import threshold_label, threshold_labels
from deteval.diagnostics.bootstrap_voc import voc_number_names
from deteval.report._data import summary

typed = st.integers(1, 10_000).map(lambda n: float(f"{n / 10_000}"))


@given(st.lists(typed, min_size=1, max_size=6, unique=True))
def test_a_typed_threshold_reads_back_and_labels_are_distinct(values):
    labels = threshold_labels(values)
    assert [float(label) for label in labels] == values
    assert len(set(labels)) == len(values)
    assert all(len(label.partition(".")[2]) >= 2 for label in labels)


@given(st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=6, unique=True))
def test_any_distinct_floats_get_distinct_labels(values):
    assert len(set(threshold_labels(values))) == len(values)


def test_the_usual_thresholds_keep_two_decimals():
    coco = np.linspace(0.5, 0.95, 10)
    assert threshold_labels(coco) == [f"{t:.2f}" for t in coco]
    assert threshold_label(0.5) == "0.50" and threshold_label(0.75) == "0.75"


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory):
    return write_demo_files(tmp_path_factory.mktemp("labels"), seed=3, n_images=8)


def test_voc_summary_names_close_thresholds_apart(demo_files, tmp_path):
    _, _, files = demo_files
    path = tmp_path / "voc.json"
    status, out, err = run("voc", *files, "--iou-thresholds", "0.5 0.501", "--ci", 5,
                           "--json", path, "--no-check")
    assert status == 0, err
    header = next(line for line in out.splitlines() if line.startswith("category"))
    assert header.split()[1:3] == ["AP@0.50", "AP@0.501"]
    assert "mAP@0.50 = " in out and "mAP@0.501 = " in out
    payload = json.loads(path.read_text())
    assert any(line.startswith("mAP@0.501 = ") for line in payload["summary"])
    names = [row["name"] for row in payload["intervals"]["intervals"]][:3]
    assert names == ["mAP", "mAP@0.50", "mAP@0.501"]


def test_library_names_follow_the_same_labels(demo_files):
    gt, dt, _ = demo_files
    result = deteval.evaluate_voc(gt, dt, iou_thresholds=(0.5, 0.501, 0.7))
    assert voc_number_names(result)[:4] == ("mAP", "mAP@0.50", "mAP@0.501", "mAP@0.70")
    lines = result.summary().splitlines()
    assert [line.split(" = ")[0] for line in lines if line.startswith("mAP@")] == [
        "mAP@0.50", "mAP@0.501", "mAP@0.70", "mAP@[0.50:0.70] (3 thresholds)"]
    one = deteval.evaluate_voc(gt, dt, iou_thresholds=(0.501,))
    assert summary(one, "voc2012")["rows"][0]["name"] == "mAP@0.501"
