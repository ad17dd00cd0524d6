"""deteval.report beyond one folder of one run: two runs compared (compare_report and
`deteval report GT DT_A DT_B`), the single-file page, the files a re-run removes, and
panels added to the page."""

from __future__ import annotations

import copy
import io
import json
import os
import re

import pytest
import reportgen

import deteval
from deteval.cli import main
from deteval.report import PANELS, Panel, compare_report, write_report


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    gt, dt_a = reportgen.make_scene(9, 24, seed=7)
    _, dt_b = reportgen.make_scene(9, 24, seed=8)     # the same scene, another detector
    images = reportgen.write_images(gt, folder / "images")
    for name, value in (("gt", gt), ("a", dt_a), ("b", dt_b)):
        (folder / f"{name}.json").write_text(json.dumps(value))
    return {"gt": gt, "a": dt_a, "b": dt_b, "images": images, "folder": folder}


def test_comparison_numbers_are_each_runs_own(runs, tmp_path, capsys):
    calls = []
    inputs = copy.deepcopy((runs["gt"], runs["a"], runs["b"]))
    index = compare_report(runs["gt"], runs["a"], runs["b"], tmp_path, images_dir=runs["images"],
                           gallery=3, names=("old", "new"), score_threshold=0.4,
                           progress=lambda *a: calls.append(a))
    assert (runs["gt"], runs["a"], runs["b"]) == inputs, "the inputs are not modified"
    assert capsys.readouterr() == ("", ""), "the library prints nothing"
    payload = json.loads((tmp_path / "results.json").read_text())
    a, b = (deteval.evaluate_coco(runs["gt"], runs[k]) for k in "ab")
    summary = payload["comparison"]["summary"]
    assert [row["a"] for row in summary] == a.stats.tolist()
    assert [row["b"] for row in summary] == b.stats.tolist()
    for row in summary:
        defined = row["a"] >= 0 and row["b"] >= 0
        assert row["difference"] == (row["b"] - row["a"] if defined else None)
        assert row["interval"] is None
    for row, ra, rb in zip(payload["comparison"]["per_class"], a.per_class(), b.per_class(),
                           strict=True):
        assert (row["AP_a"], row["AP_b"]) == (ra["AP"], rb["AP"])
    cms = [deteval.detection_confusion_matrix(runs["gt"], runs[k], score_threshold=0.4)
           for k in "ab"]
    for k, row in enumerate(payload["comparison"]["per_class"]):
        tp = [int(cm.counts[k, k]) for cm in cms]
        assert (row["tp_a"], row["tp_b"], row["tp_diff"]) == (tp[0], tp[1], tp[1] - tp[0])
    # The gallery: the images whose error counts differ most, drawn once per run.
    outcomes = [deteval.match_outcomes(runs["gt"], runs[k], score_threshold=0.4) for k in "ab"]
    diff = abs(outcomes[0].errors_per_image.astype(int) - outcomes[1].errors_per_image)
    entries = payload["gallery"]["images"]
    assert len(entries) == 3
    assert [diff[e["image_index"]] for e in entries] == sorted(diff, reverse=True)[:3]
    for entry in entries:
        assert entry["errors"] == [int(o.errors_per_image[entry["image_index"]])
                                   for o in outcomes]
        assert all((tmp_path / p[key]).is_file() for p in entry["runs"]
                   for key in ("file", "thumb"))
    page = index.read_text()
    assert "http://" not in page and "https://" not in page
    assert calls[-1][0] == calls[-1][1] and calls[0][0] == 0


def test_comparison_intervals_are_shown_when_given(runs, tmp_path):
    def intervals(a, b):
        return {"AP": (-0.01, 0.02)}

    index = compare_report(runs["gt"], runs["a"], runs["b"], tmp_path, intervals=intervals)
    payload = json.loads((tmp_path / "results.json").read_text())
    assert payload["comparison"]["summary"][0]["interval"] == [-0.01, 0.02]
    assert payload["comparison"]["summary"][1]["interval"] is None
    assert "[-0.010, +0.020]" in index.read_text()


def test_cli_compares_two_runs(runs, tmp_path):
    folder = runs["folder"]
    out, err = io.StringIO(), io.StringIO()
    code = main(["report", str(folder / "gt.json"), str(folder / "a.json"),
                 str(folder / "b.json"), "--out", str(tmp_path / "r"), "--run-names", "old",
                 "new", "--score", "0.4"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    a, b = (deteval.evaluate_coco(runs["gt"], runs[k]).stats[0] for k in "ab")
    assert out.getvalue().splitlines()[1] == (f"AP: old {a:.3f}, new {b:.3f} (coco); no gallery"
                                              " (no --images DIR)")
    err = io.StringIO()
    assert main(["report", str(folder / "gt.json"), str(folder / "a.json"), "--out",
                 str(tmp_path / "s"), "--run-names", "x", "y"], stdout=io.StringIO(),
                stderr=err) == 1
    assert "--run-names names the two runs of a comparison" in err.getvalue()


def test_single_file_holds_everything(runs, tmp_path):
    page = write_report(runs["gt"], runs["a"], tmp_path / "one.html",
                        images_dir=runs["images"], gallery=2, single_file=True)
    folder = write_report(runs["gt"], runs["a"], tmp_path / "folder",
                          images_dir=runs["images"], gallery=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "one.html"]
    text = page.read_text()
    links = re.findall(r'(?:src|href)="([^"#][^"]*)"', text)
    assert links and all(link.startswith("data:") for link in links), links[:3]
    embedded = json.loads(re.search(r'<script type="application/json" id="results-json">'
                                    r"(.*?)</script>", text, re.S).group(1))
    written = json.loads((folder.parent / "results.json").read_text())
    assert embedded["per_class"] == written["per_class"]
    assert embedded["summary"] == written["summary"]
    assert [e["image_id"] for e in embedded["gallery"]["images"]] == [
        e["image_id"] for e in written["gallery"]["images"]]
    with pytest.raises(IsADirectoryError, match="single-file report"):
        write_report(runs["gt"], runs["a"], tmp_path / "folder", single_file=True)


def test_a_rerun_removes_only_what_the_report_wrote(runs, tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    write_report(runs["gt"], runs["a"], out, images_dir=runs["images"], gallery=4)
    first = json.loads((out / "results.json").read_text())["gallery"]["images"]
    kept = out / first[0]["thumb"]          # a file of the report the user then edited
    kept.write_bytes(b"edited")
    os.utime(kept, ns=(1, 1))
    write_report(runs["gt"], runs["a"], out, gallery=0)
    left = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert left == sorted([".deteval-report.json", "index.html", "notes.txt", "results.json",
                           first[0]["thumb"]])
    assert (out / "notes.txt").read_text() == "mine"


def test_a_panel_added_to_the_list_shows_and_writes_its_numbers(runs, tmp_path):
    def build(context):
        context.payload["panels"]["images-count"] = {"n": len(context.dataset.images)}
        return f"<p id=\"added\">{len(context.dataset.images)} images</p>"

    panels = [*PANELS[:1], Panel("images-count", "Images", build), *PANELS[1:]]
    index = write_report(runs["gt"], runs["a"], tmp_path, panels=panels)
    page = index.read_text()
    assert '<section id="images-count"><h2>Images</h2><p id="added">24 images</p>' in page
    assert page.index('id="summary"') < page.index('id="images-count"') < page.index(
        'id="per-class"')
    assert '<a href="#images-count">Images</a>' in page
    payload = json.loads((tmp_path / "results.json").read_text())
    assert payload["panels"]["images-count"] == {"n": 24}


def test_cli_single_file(runs, tmp_path):
    folder = runs["folder"]
    out, err = io.StringIO(), io.StringIO()
    target = tmp_path / "report.html"
    code = main(["report", str(folder / "gt.json"), str(folder / "a.json"), "--images",
                 str(runs["images"]), "--gallery", "2", "--single-file", "--out", str(target)],
                stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert out.getvalue() == f"deteval report: {target.resolve()}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    assert target.read_text().count('src="data:image/jpeg;base64,') == len(json.loads(re.search(
        r'id="results-json">(.*?)</script>', target.read_text(), re.S).group(1))[
        "gallery"]["images"]) > 0
    err = io.StringIO()
    assert main(["report", str(folder / "gt.json"), str(folder / "a.json"), "--single-file",
                 "--out", str(tmp_path)], stdout=io.StringIO(), stderr=err) == 1
    assert "it is a folder" in err.getvalue()
