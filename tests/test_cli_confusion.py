"""Tests of ``deteval confusion`` and ``deteval classify`` (deteval.cli) through
``main([...])`` on files written in a temporary folder: the printed and JSON numbers are the
library's."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from clirun import run

import deteval
from deteval import classification as cls
from deteval.cli import main
from deteval.demo import make_demo
from deteval.io.csv import write_csv


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("confusion")
    gt, results = make_demo(seed=2)
    paths = {"gt": folder / "gt.json", "dt": folder / "dt.json", "gt_csv": folder / "gt.csv",
             "folder": folder}
    paths["gt"].write_text(json.dumps(gt))
    paths["dt"].write_text(json.dumps(results))
    gt_no_crowd = dict(gt, annotations=[a for a in gt["annotations"] if not a["iscrowd"]])
    write_csv(deteval.read_coco_gt(gt_no_crowd), paths["gt_csv"])
    return paths


# --------------------------------------------------------------------------------------
# deteval confusion
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [
    {}, {"iou": 0.75}, {"score": 0.0}, {"normalize": "true"}, {"normalize": "pred",
                                                                 "score": 0.5}])
def test_confusion_prints_the_table_and_writes_to_dict(demo, tmp_path, options):
    argv = ["confusion", demo["gt"], demo["dt"], "--json", tmp_path / "c.json"]
    for name, value in options.items():
        argv += [f"--{name}", value]
    status, out, err = run(*argv)
    assert status == 0, err
    assert err == ""
    expected = deteval.detection_confusion_matrix(
        str(demo["gt"]), str(demo["dt"]), iou_threshold=options.get("iou", 0.5),
        score_threshold=options.get("score", 0.0), normalize=options.get("normalize"))
    assert expected.format_table() in out
    payload = json.loads((tmp_path / "c.json").read_text())
    assert payload.pop("warnings") == []   # the input checks found nothing
    assert payload == json.loads(json.dumps(expected.to_dict(zero_division=0)))
    overall = expected.overall(zero_division=0)
    assert (f"overall: TP {overall['tp']}  FP {overall['fp']}  FN {overall['fn']}  "
            f"precision {overall['precision']:.3f}") in out
    assert f"score >= {options.get('score', 0.0):g}" in out


@pytest.mark.parametrize(("iou", "score"), [("--iou-threshold", "--score-threshold"),
                                             ("--iou", "--score")])
def test_confusion_takes_both_spellings_of_the_thresholds(demo, iou, score):
    """--iou-threshold/--score-threshold, as draw and report spell them; --iou/--score stay
    accepted."""
    status, out, err = run("confusion", demo["gt"], demo["dt"], iou, "0.75", score, "0.5")
    assert status == 0, err
    expected = deteval.detection_confusion_matrix(str(demo["gt"]), str(demo["dt"]),
                                                  iou_threshold=0.75, score_threshold=0.5)
    assert expected.format_table() in out and "IoU >= 0.75, score >= 0.5" in out


def test_confusion_default_keeps_every_detection_like_the_library(demo):
    status, out, _ = run("confusion", demo["gt"], demo["dt"])
    assert status == 0
    table = deteval.detection_confusion_matrix(str(demo["gt"]), str(demo["dt"])).format_table()
    assert table in out


def test_confusion_reads_other_formats(demo, tmp_path):
    """The CSV reader numbers categories in name order, the results list keeps the demo's
    ids: the classes disagree, and the input checks say so before the table."""
    status, out, err = run("confusion", demo["gt_csv"], demo["dt"], "--gt-format", "csv",
                           "--dt-format", "coco", "--json", tmp_path / "c.json")
    assert status == 0, err
    dataset = deteval.read_gt(str(demo["gt_csv"]), "csv")
    detections = deteval.read_detections(str(demo["dt"]), dataset, "coco")
    expected = deteval.detection_confusion_matrix(dataset, detections)
    assert expected.format_table() in out
    payload = json.loads((tmp_path / "c.json").read_text())
    assert [w["code"] for w in payload.pop("warnings")] == ["class-mapping"]
    assert "[class-mapping]" in err and "pass --classes FILE" in err
    assert payload == json.loads(json.dumps(expected.to_dict(zero_division=0)))


@pytest.mark.parametrize("argv, message", [
    (["--iou", "0"], "IoU threshold in (0, 1]"),
    (["--iou", "1.5"], "IoU threshold in (0, 1]"),
    (["--score", "-1"], "score threshold in [0, inf)"),
    (["--normalize", "all"], "invalid choice"),
    (["--one-based"], "--one-based does not apply to coco ground truth"),
])
def test_confusion_usage_errors(demo, argv, message):
    status, out, err = run("confusion", demo["gt"], demo["dt"], *argv)
    assert status == 2
    assert message in err
    assert "usage: deteval confusion" in err


def test_confusion_errors(demo, tmp_path):
    status, _, err = run("confusion", tmp_path / "absent.json", demo["dt"])
    assert status == 1 and err.startswith("deteval: error:") and "absent.json" in err
    status, _, err = run("confusion", demo["gt"], demo["dt"], "--json",
                         tmp_path / "no" / "c.json")
    assert status == 1 and "its folder does not exist" in err


# --------------------------------------------------------------------------------------
# deteval classify
# --------------------------------------------------------------------------------------


def numbers(out: str) -> dict:
    """The printed accuracy lines and average rows."""
    found = {}
    for line in out.splitlines():
        if m := re.fullmatch(r"(accuracy|top-\d+ accuracy)\s+([\d.]+)", line):
            found[m[1]] = float(m[2])
        elif m := re.fullmatch(r"(macro|micro|weighted)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)",
                               line):
            found[m[1]] = tuple(float(v) for v in m.groups()[1:])
    return found


def expected_numbers(truth, predicted, classes) -> dict:
    found = {"accuracy": cls.accuracy(truth, predicted, labels=classes)}
    for average in ("macro", "micro", "weighted"):
        found[average] = tuple(
            f(truth, predicted, average=average, labels=classes, zero_division=0)
            for f in (cls.precision, cls.recall, cls.f1_score))
    return found


def write_labels_csv(path: Path, values, header: str | None = "label") -> Path:
    lines = ([header] if header else []) + [str(v) for v in values]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("labels_as, scores_as", [("npy", "npy"), ("csv", "csv"),
                                                  ("csv-noheader", "npy")])
def test_classify_scores_equal_the_library(tmp_path, seed, labels_as, scores_as):
    rng = np.random.default_rng(seed)
    n, k = 60, 6
    truth = rng.integers(0, k, n)
    scores = np.round(rng.random((n, k)), 2)
    if labels_as == "npy":
        labels_path = tmp_path / "y.npy"
        np.save(labels_path, truth)
    else:
        labels_path = write_labels_csv(tmp_path / "y.csv", truth,
                                       None if labels_as == "csv-noheader" else "label")
    if scores_as == "npy":
        scores_path = tmp_path / "s.npy"
        np.save(scores_path, scores)
    else:
        scores_path = tmp_path / "s.csv"
        scores_path.write_text(",".join(f"c{j}" for j in range(k)) + "\n" + "\n".join(
            ",".join(f"{v:.2f}" for v in row) for row in scores) + "\n")
    status, out, err = run("classify", labels_path, scores_path, "--top-k", 3, "--json",
                           tmp_path / "o.json")
    assert status == 0, err
    classes = np.arange(k)
    # The predicted class: highest column, a tie to the later column.
    predicted = np.array([max(range(k), key=lambda j: (row[j], j)) for row in scores])
    expected = expected_numbers(truth, predicted, classes)
    top3 = cls.top_k_accuracy(truth, scores, k=3, labels=classes)
    assert expected["accuracy"] == cls.top_k_accuracy(truth, scores, k=1, labels=classes)
    printed = numbers(out)
    assert printed["accuracy"] == round(expected["accuracy"], 4)
    assert printed["top-3 accuracy"] == round(top3, 4)
    for average in ("macro", "micro", "weighted"):
        assert printed[average] == tuple(round(v, 4) for v in expected[average])
    payload = json.loads((tmp_path / "o.json").read_text())
    assert payload["accuracy"] == expected["accuracy"]
    assert payload["top_k"] == {"k": 3, "accuracy": top3}
    for average in ("macro", "micro", "weighted"):
        assert tuple(payload[average][m] for m in ("precision", "recall", "f1")) == \
            pytest.approx(expected[average], abs=0)
    matrix = cls.confusion_matrix(truth, predicted, labels=classes)
    assert payload["confusion_matrix"] == matrix.tolist()
    assert payload["labels"] == list(range(k))
    assert payload["n_samples"] == n
    for c in range(k):
        assert re.search(rf"^{c}\s+" + r"\s+".join(map(str, matrix[c])) + "$", out, re.M)


def test_classify_default_top_k(tmp_path):
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 8, 40)
    np.save(tmp_path / "y.npy", truth)
    np.save(tmp_path / "s.npy", rng.random((40, 8)))
    status, out, err = run("classify", tmp_path / "y.npy", tmp_path / "s.npy")
    assert status == 0 and err == ""
    assert "top-5 accuracy" in out
    np.save(tmp_path / "s3.npy", rng.random((40, 3)))
    np.save(tmp_path / "y3.npy", truth % 3)
    status, out, err = run("classify", tmp_path / "y3.npy", tmp_path / "s3.npy")
    assert status == 0 and err == ""
    assert "top-2 accuracy" in out
    status, out, err = run("classify", tmp_path / "y3.npy", tmp_path / "s3.npy", "--top-k", 3)
    assert status == 0 and "top-3 accuracy  1.0000" in out
    assert "deteval: warning: k (3) >= the number of classes (3)" in err


def test_classify_predicted_string_labels(tmp_path):
    truth = ["cat", "dog", "cat", "cow", "dog", "dog"]
    predicted = ["cat", "cat", "cat", "cow", "dog", "cow"]
    labels = write_labels_csv(tmp_path / "y.csv", truth, header="label")
    preds = write_labels_csv(tmp_path / "p.csv", predicted, header=None)
    status, out, err = run("classify", labels, preds, "--json", tmp_path / "o.json")
    assert status == 0, err
    classes = np.array(["cat", "cow", "dog"])
    expected = expected_numbers(np.array(truth), np.array(predicted), classes)
    printed = numbers(out)
    assert printed["accuracy"] == round(expected["accuracy"], 4)
    assert not any(key.startswith("top-") for key in printed)
    payload = json.loads((tmp_path / "o.json").read_text())
    assert payload["labels"] == ["cat", "cow", "dog"]
    assert "top_k" not in payload
    assert payload["confusion_matrix"] == cls.confusion_matrix(truth, predicted,
                                                               labels=classes).tolist()
    assert payload["macro"]["f1"] == expected["macro"][2]


def test_classify_string_labels_with_scores(tmp_path):
    truth = ["b", "a", "c", "a"]
    scores = np.array([[0.1, 0.8, 0.1], [0.6, 0.3, 0.1], [0.5, 0.1, 0.4], [0.2, 0.7, 0.1]])
    write_labels_csv(tmp_path / "y.csv", truth, header=None)
    np.save(tmp_path / "s.npy", scores)
    status, out, err = run("classify", tmp_path / "y.csv", tmp_path / "s.npy", "--top-k", 2)
    assert status == 0, err
    printed = numbers(out)
    assert printed["accuracy"] == 0.5
    assert printed["top-2 accuracy"] == cls.top_k_accuracy(truth, scores, k=2) == 1.0


def test_classify_npy_predicted_labels(tmp_path):
    truth = np.array([0, 1, 2, 2, 1])
    np.save(tmp_path / "y.npy", truth)
    np.save(tmp_path / "p.npy", np.array([0, 2, 2, 2, 1]))
    status, out, _ = run("classify", tmp_path / "y.npy", tmp_path / "p.npy")
    assert status == 0
    assert numbers(out)["accuracy"] == 0.8


def test_classify_errors(tmp_path):
    np.save(tmp_path / "y.npy", np.array([0, 1, 2, 1]))
    np.save(tmp_path / "s.npy", np.random.default_rng(0).random((5, 3)))
    status, _, err = run("classify", tmp_path / "y.npy", tmp_path / "s.npy")
    assert status == 1
    assert "LABELS" in err and "has 4 labels but SCORES" in err and "has 5 rows" in err
    status, _, err = run("classify", tmp_path / "missing.csv", tmp_path / "s.npy")
    assert status == 1
    assert err == f"deteval: error: {tmp_path / 'missing.csv'}: LABELS file does not exist\n"
    (tmp_path / "broken.npy").write_bytes(b"not an array")
    status, _, err = run("classify", tmp_path / "y.npy", tmp_path / "broken.npy")
    assert status == 1 and "cannot read SCORES file" in err and "broken.npy" in err
    (tmp_path / "ragged.csv").write_text("0.1,0.2\n0.3\n0.5,0.5\n0.2,0.8\n")
    status, _, err = run("classify", tmp_path / "y.npy", tmp_path / "ragged.csv")
    assert status == 1 and "ragged.csv" in err and "row 2 has 1" in err
    np.save(tmp_path / "s4.npy", np.random.default_rng(0).random((4, 2)))
    status, _, err = run("classify", tmp_path / "y.npy", tmp_path / "s4.npy")
    assert status == 1 and "score columns (0..1); got 2" in err
    np.save(tmp_path / "p.npy", np.array([0, 1, 2, 1]))
    status, _, err = run("classify", tmp_path / "y.npy", tmp_path / "p.npy", "--top-k", 2)
    assert status == 1 and "--top-k needs scores" in err
    (tmp_path / "wide.csv").write_text("0,1\n1,1\n")
    status, _, err = run("classify", tmp_path / "wide.csv", tmp_path / "s.npy")
    assert status == 1 and "wide.csv" in err and "one label a line" in err
    status, _, err = run("classify", tmp_path / "y.npy", tmp_path / "s.npy", "--top-k", "0")
    assert status == 2 and "expected a positive integer" in err


def test_segm_only_results_point_to_iou_type(coco100_dir):
    """`deteval confusion` matches masks itself now (--iou-type segm): results without boxes
    point there."""

    err = io.StringIO()
    status = main(["confusion", str(coco100_dir / "instances_val2014_100.json"),
                   str(coco100_dir / "instances_val2014_fakesegm100_results.json")],
                  stdout=io.StringIO(), stderr=err)
    assert status == 1
    message = err.getvalue()
    assert "results[0]: missing 'bbox'" in message
    assert "pass --iou-type segm (masks) or keypoints" in message
