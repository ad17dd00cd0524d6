"""deteval.report and `deteval report`: a self-contained folder whose numbers are the
protocol's, the same on the page as in results.json."""

from __future__ import annotations

import copy
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.cli import main
from deteval.demo import make_demo
from deteval.outcomes import match_outcomes

pytest.importorskip("matplotlib", reason="reports need matplotlib (pip install 'deteval[plot]')")

from deteval._progress import ProgressBar  # noqa: E402
from deteval.report import format_value, write_report  # noqa: E402


class _Page(HTMLParser):
    """Links, tables (by id: rows of cells with their attributes and text) of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.tables: dict[str, list[list[dict]]] = {}
        self.text: list[str] = []
        self._table: str | None = None
        self._cell: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "href"):
            if attrs.get(name):
                self.links.append(attrs[name])
        if tag == "table":
            self._table = attrs.get("id", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = {"tag": tag, **attrs, "text": ""}

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append(self._cell)
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell["text"] += data


def _parse(index: Path) -> _Page:
    page = _Page()
    page.feed(index.read_text(encoding="utf-8"))
    return page


def _body_rows(page: _Page, table_id: str) -> list[dict[str, dict]]:
    """The data rows of a table as {data-key: cell}."""
    return [{cell["data-key"]: cell for cell in row} for row in page.tables[table_id]
            if row and row[0]["tag"] == "td"]


def _check_cell(cell: dict, value) -> None:
    """A cell shows its JSON value: exactly in data-value, formatted in its text."""
    if cell["data-value"] == "":
        assert value is None or value == -1, cell
        assert cell["text"] == "n/a"
    elif isinstance(value, bool) or isinstance(value, str):
        raise AssertionError(f"unexpected value {value!r} in a number cell")
    elif isinstance(value, int):
        assert cell["data-value"] == str(value) and cell["text"] == format_value(value, "int")
    else:
        assert float(cell["data-value"]) == value
        assert cell["text"] == format_value(value, "ratio") == f"{value:.3f}"


def _check_folder(index: Path) -> tuple[_Page, dict]:
    """Self-contained: no web address, every link a file of the folder; page = JSON."""
    folder = index.parent
    html_text = index.read_text(encoding="utf-8")
    assert "http://" not in html_text and "https://" not in html_text
    assert "<script src" not in html_text and "<link rel=\"stylesheet\"" not in html_text
    page = _parse(index)
    assert page.links, "the page links its figures"
    for link in page.links:
        if link.startswith("#") or link.startswith("data:"):
            continue
        assert not re.match(r"^[a-z]+:", link) and not link.startswith("/"), link
        target = (folder / link).resolve()
        assert target.is_file(), link
        assert folder.resolve() in target.parents, link
    payload = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    # Every number of the per-class, summary and operating-point tables is in results.json.
    per_class = _body_rows(page, "per-class-table")
    assert len(per_class) == len(payload["per_class"])
    for row, expected in zip(per_class, payload["per_class"]):
        assert row["name"]["text"] == expected["name"]
        for key, cell in row.items():
            if key != "name":
                _check_cell(cell, expected[key])
    for row, expected in zip(_body_rows(page, "summary-table"), payload["summary"]["rows"],
                             strict=True):
        assert row["name"]["text"] == expected["name"]
        _check_cell(row["value"], expected["value"])
    op_rows = _body_rows(page, "operating-table")
    for row, expected in zip(op_rows, (payload["operating_point"]["at_threshold"],
                                       payload["operating_point"]["best"]), strict=True):
        for key, cell in row.items():
            if key == "score_threshold":
                assert float(cell["data-value"]) == expected[key]
                assert cell["text"] == f"{expected[key]:.3f}"
            elif key != "what":
                _check_cell(cell, expected[key])
    outcome_row, = _body_rows(page, "outcome-table")
    for key, cell in outcome_row.items():
        _check_cell(cell, payload["outcomes"]["counts"][key])
    return page, payload


# --------------------------------------------------------------------------------------
# A generated COCO scene with its images
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    from PIL import Image, ImageDraw

    gt, dt = make_demo(seed=5, n_images=10)
    folder = tmp_path_factory.mktemp("scene")
    images = folder / "images"
    images.mkdir()
    rng = np.random.default_rng(0)
    for image in gt["images"]:
        picture = Image.new("RGB", (image["width"], image["height"]),
                            tuple(int(v) for v in rng.integers(40, 200, 3)))
        draw = ImageDraw.Draw(picture)
        for _ in range(6):
            x, y = rng.integers(0, 560), rng.integers(0, 400)
            draw.ellipse([x, y, x + 80, y + 60],
                         fill=tuple(int(v) for v in rng.integers(0, 255, 3)))
        picture.save(images / image["file_name"], quality=90)
    result = deteval.evaluate_coco(gt, dt)
    outcomes = match_outcomes(result.dataset, result.detections, score_threshold=0.3)
    worst = outcomes.images_by_errors(only_errors=True).tolist()
    names = [gt["images"][i]["file_name"] for i in worst]
    (images / names[0]).unlink()                       # the worst image is missing
    (images / names[2]).write_bytes(b"not a jpeg")     # the third is unreadable
    (folder / "gt.json").write_text(json.dumps(gt))
    (folder / "dt.json").write_text(json.dumps(dt))
    return {"gt": gt, "dt": dt, "folder": folder, "images": images, "worst": worst,
            "names": names, "outcomes": outcomes}


@pytest.fixture(scope="module")
def coco_report(scene):
    gt, dt = copy.deepcopy(scene["gt"]), copy.deepcopy(scene["dt"])
    calls = []
    out = scene["folder"] / "report"
    with pytest.warns(deteval.FormatWarning) as caught:
        index = write_report(gt, dt, out, images_dir=scene["images"], score_threshold=0.3,
                             gallery=4, progress=lambda *args: calls.append(args))
    assert gt == scene["gt"] and dt == scene["dt"], "the inputs are not modified"
    return {"index": index, "warnings": [str(w.message) for w in caught], "calls": calls}


def test_coco_report_files(coco_report):
    index = coco_report["index"]
    folder = index.parent
    assert index.name == "index.html"
    names = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    payload = json.loads((folder / "results.json").read_text())
    pictures = {entry[key] for entry in payload["gallery"]["images"] for key in ("file", "thumb")}
    # The figures are inline; the folder holds the page, the numbers, the manifest and the
    # gallery's drawings and thumbnails, nothing else.
    assert names == {"index.html", "results.json", ".deteval-report.json"} | pictures
    assert len(pictures) == 2 * len(payload["gallery"]["images"])
    manifest = json.loads((folder / ".deteval-report.json").read_text())
    assert {entry["path"] for entry in manifest["files"]} == names - {".deteval-report.json"}


def test_coco_report_numbers_are_the_protocols(coco_report, scene):
    page, payload = _check_folder(coco_report["index"])
    result = deteval.evaluate_coco(scene["gt"], scene["dt"])
    assert payload["summary"]["stats"] == result.stats.tolist()
    assert [row["value"] for row in payload["summary"]["rows"]] == result.stats.tolist()
    for row, expected in zip(payload["per_class"], result.per_class(), strict=True):
        for key, value in expected.items():
            assert row[key] == value, key
    cm = deteval.detection_confusion_matrix(scene["gt"], scene["dt"], score_threshold=0.3)
    assert payload["confusion"]["counts"] == cm.counts.tolist()
    assert payload["outcomes"]["counts"] == scene["outcomes"].counts()
    for row, expected in zip(payload["per_class"], cm.per_class(zero_division=0)):
        assert (row["tp"], row["fp"], row["fn"]) == (expected["tp"], expected["fp"],
                                                     expected["fn"])
    # The summary cells show the 12 stats.
    cells = [row["value"] for row in _body_rows(page, "summary-table")]
    assert [float(c["data-value"]) for c in cells] == result.stats.tolist()


def test_coco_report_gallery_and_skipped_images(coco_report, scene):
    payload = json.loads((coco_report["index"].parent / "results.json").read_text())
    gallery = payload["gallery"]
    names, worst, outcomes = scene["names"], scene["worst"], scene["outcomes"]
    assert [s["image"] for s in gallery["skipped"]] == [names[0], names[2]]
    assert "not found" in gallery["skipped"][0]["reason"]
    assert "cannot be read" in gallery["skipped"][1]["reason"]
    warning, = coco_report["warnings"]
    assert names[0] in warning and names[2] in warning and "2 image(s) skipped" in warning
    # The next images by errors took their place, most errors first; examples of the top
    # confusions follow them.
    expected = [worst[i] for i in (1, 3, 4, 5)]
    roles = [e["role"] for e in gallery["images"]]
    assert roles == ["worst"] * 4 + ["example"] * (len(roles) - 4)
    shown = gallery["images"][:4]
    assert [e["file_name"] for e in shown] == [names[i] for i in (1, 3, 4, 5)]
    assert [e["errors"] for e in shown] == [int(outcomes.errors_per_image[i]) for i in expected]
    assert [e["counts"] for e in gallery["images"]] == [
        outcomes.counts(image_index=e["image_index"]) for e in gallery["images"]]
    assert [e["key"] for e in gallery["legend"]] == ["tp", "duplicate", "wrong_class",
                                                     "localization", "background", "fn",
                                                     "ignored"]
    page = _parse(coco_report["index"])
    text = "".join(page.text)
    for entry in gallery["images"]:
        assert f"{entry['errors']} errors" in text
        # The thumbnail shown, the drawing linked at full size.
        assert page.links.count(entry["thumb"]) == 1 and page.links.count(entry["file"]) == 1
    for skipped in gallery["skipped"]:
        assert skipped["image"] in text


def test_gallery_image_of_another_size_is_drawn_with_a_warning(scene, tmp_path):
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    names = scene["names"]
    # The second-worst image (the worst is missing from the scene) at half its size.
    with Image.open(scene["images"] / names[1]) as source:
        size = source.size
        source.resize((size[0] // 2, size[1] // 2)).save(images / names[1])
    with pytest.warns(deteval.FormatWarning) as caught:
        index = write_report(scene["gt"], scene["dt"], tmp_path / "report", images_dir=images,
                             score_threshold=0.3, gallery=1)
    messages = [str(w.message) for w in caught]
    expected = (f"{names[1]} is {size[0] // 2}x{size[1] // 2} pixels but its annotation says "
                f"{size[0]}x{size[1]}")
    assert any("1 image(s) differ in size from their annotation" in m and expected in m
               for m in messages), messages
    payload = json.loads((index.parent / "results.json").read_text())
    entry, = payload["gallery"]["images"]
    assert entry["file_name"] == names[1]
    assert entry["size_mismatch"] == expected[len(names[1]) + 1:]
    assert f"The image {expected[len(names[1]) + 1:]}: drawn in the annotation" in "".join(
        _parse(index).text)


def test_progress_reaches_the_end(coco_report):
    calls = coco_report["calls"]
    assert calls[0][0] == 0 and calls[-1][0] == calls[-1][1]
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)
    assert any("drawing" in c[2] for c in calls)


def test_undefined_ratios_are_not_shown_as_zero(tmp_path):
    gt, dt = make_demo(seed=1, n_images=4)
    gt["categories"].append({"id": 99, "name": "unicorn"})     # no object, no detection
    dt.append({"image_id": gt["images"][0]["id"], "category_id": 99,
               "bbox": [5, 5, 20, 20], "score": 0.9})           # ... now one detection
    gt["categories"].append({"id": 98, "name": "griffin"})     # neither
    index = write_report(gt, dt, tmp_path, score_threshold=0.3)
    page, payload = _check_folder(index)
    rows = {row["name"]: row for row in payload["per_class"]}
    # A false positive of a class without objects: precision 0, recall undefined, F1
    # 2TP / (2TP + FP + FN) = 0.
    assert (rows["unicorn"]["tp"], rows["unicorn"]["fp"], rows["unicorn"]["fn"]) == (0, 1, 0)
    assert rows["unicorn"]["precision"] == 0.0 and rows["unicorn"]["f1"] == 0.0
    assert rows["unicorn"]["recall"] is None
    assert [rows["griffin"][k] for k in ("precision", "recall", "f1")] == [None] * 3
    cells = {row["name"]["text"]: row for row in _body_rows(page, "per-class-table")}
    assert cells["unicorn"]["recall"]["text"] == "n/a"
    assert cells["unicorn"]["precision"]["text"] == "0.000"
    # Defined ratios are the confusion matrix's.
    cm = deteval.detection_confusion_matrix(gt, dt, score_threshold=0.3)
    for expected in cm.per_class(zero_division=0):
        row = rows[expected["name"]]
        for key in ("precision", "recall", "f1"):
            assert row[key] == expected[key] or (row[key] is None and expected[key] == 0)


def test_report_without_images_has_no_gallery(scene, tmp_path):
    index = write_report(scene["folder"] / "gt.json", scene["folder"] / "dt.json", tmp_path,
                         figure_format="svg")
    payload = json.loads((tmp_path / "results.json").read_text())
    assert payload["gallery"]["images"] == [] and not (tmp_path / "gallery").exists()
    assert "No images folder" in index.read_text()
    assert payload["figures"]["pr_curves"] == "pr_curves.svg"
    assert (tmp_path / "pr_curves.svg").read_text().rstrip().endswith("</svg>")
    # The default score threshold is the F1-optimal one.
    points = deteval.operating_points(scene["gt"], scene["dt"])
    assert payload["settings"]["score_threshold"] == points.best()["threshold"]
    assert payload["operating_point"]["best"]["f1"] == points.best()["fbeta"]
    _check_folder(index)


@pytest.mark.parametrize("options, error, match", [
    ({"protocol": "kitti"}, ValueError, "protocol must be one of"),
    ({"iou_threshold": 0.52}, ValueError, "one of the COCO thresholds"),
    ({"iou_threshold": 0.0}, ValueError, r"iou_threshold must be in \(0, 1\]"),
    ({"score_threshold": -0.1}, ValueError, "score_threshold must be"),
    ({"gallery": -1}, ValueError, "gallery must be >= 0"),
    ({"gallery": 2.5}, TypeError, "gallery must be an integer"),
    ({"figure_format": "jpg"}, ValueError, "figure_format"),
    ({"images_dir": "/nonexistent/images"}, NotADirectoryError, "is not a folder"),
])
def test_bad_settings_fail_before_writing(scene, tmp_path, options, error, match):
    out = tmp_path / "report"
    with pytest.raises(error, match=match):
        write_report(scene["gt"], scene["dt"], out, **options)
    assert not out.exists()


def test_progress_bar_draws_only_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    silent = io.StringIO()
    with ProgressBar(stream=silent) as bar:
        bar(1, 2, "step")
    assert silent.getvalue() == ""
    with ProgressBar(stream=Terminal(), quiet=True) as bar:
        bar(1, 2, "step")
    assert bar.stream.getvalue() == ""
    terminal = Terminal()
    with ProgressBar(stream=terminal, width=10, min_interval=0) as bar:
        bar(1, 2, "evaluating")
        bar(2, 2, "done")
    drawn = terminal.getvalue()
    assert "evaluating" in drawn and "[#####.....] 1/2" in drawn
    assert "[##########] 2/2" in drawn
    assert drawn.endswith("\r") and "\n" not in drawn   # the line is erased at the end


# --------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------


def test_cli_report_on_a_coco_scene(scene, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    folder = scene["folder"]
    code = main(["report", str(folder / "gt.json"), str(folder / "dt.json"), "--images",
                 str(scene["images"]), "--out", str(tmp_path / "r"), "--gallery", "2",
                 "--score-threshold", "0.3"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    index = (tmp_path / "r" / "index.html").resolve()
    lines = out.getvalue().splitlines()
    assert lines[0] == f"deteval report: {index}"
    stats = deteval.evaluate_coco(scene["gt"], scene["dt"]).stats
    assert lines[1] == f"AP = {stats[0]:.3f} (coco); 2 images in the gallery, 2 skipped"
    # No progress bar off a terminal; the skipped images are a warning.
    assert err.getvalue().splitlines() == [
        f"deteval: warning: report gallery: 2 image(s) skipped, missing or unreadable under "
        f"{scene['images']}: {scene['names'][0]}, {scene['names'][2]}"]
    _check_folder(index)


def test_cli_report_usage_errors(scene, tmp_path):
    folder = scene["folder"]
    base = ["report", str(folder / "gt.json"), str(folder / "dt.json")]
    for extra, message in ((["--out", str(tmp_path), "--gallery", "-2"], "number of images"),
                           ([], "--out"),
                           (["--out", str(tmp_path), "--protocol", "x"], "invalid choice")):
        err = io.StringIO()
        assert main(base + extra, stdout=io.StringIO(), stderr=err) == 2
        assert message in err.getvalue()
    err = io.StringIO()
    assert main(base + ["--out", str(tmp_path), "--iou-threshold", "0.62"],
                stdout=io.StringIO(), stderr=err) == 1
    assert err.getvalue().startswith("deteval: error: iou_threshold must be one of the COCO")


def test_cli_report_without_images_says_why_there_is_no_gallery(scene, tmp_path):
    folder = scene["folder"]
    out, err = io.StringIO(), io.StringIO()
    code = main(["report", str(folder / "gt.json"), str(folder / "dt.json"), "--out",
                 str(tmp_path), "--iou", "0.75", "--score", "0.3"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    stats = deteval.evaluate_coco(scene["gt"], scene["dt"]).stats
    assert out.getvalue().splitlines()[1] == (f"AP = {stats[0]:.3f} (coco); no gallery (no "
                                              "--images DIR)")
    assert err.getvalue() == ""
    payload = json.loads((tmp_path / "results.json").read_text())
    # --iou and --score are --iou-threshold and --score-threshold, as for deteval confusion.
    assert payload["settings"]["iou_threshold"] == 0.75
    assert payload["settings"]["score_threshold"] == 0.3
    assert not (tmp_path / "gallery").exists()


# --------------------------------------------------------------------------------------
# The shared VOC sample, end to end
# --------------------------------------------------------------------------------------


def test_voc2007_report_on_the_shared_sample(voc_sample_dir, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    code = main(["report", str(voc_sample_dir / "gts" / "pascalvoc_format"),
                 str(voc_sample_dir / "dets" / "coco_format" / "coco_dets.json"), "--protocol",
                 "voc2007", "--images", str(voc_sample_dir / "images"), "--out", str(tmp_path),
                 "--gallery", "3", "--quiet"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert err.getvalue() == ""
    page, payload = _check_folder(tmp_path / "index.html")
    dataset = deteval.read_gt(voc_sample_dir / "gts" / "pascalvoc_format")
    detections = deteval.read_detections(voc_sample_dir / "dets" / "coco_format" / "coco_dets.json",
                                         dataset)
    result = deteval.evaluate_voc(dataset, detections, params=deteval.VOC2007)
    assert payload["summary"]["map"] == result.map.tolist()
    assert payload["summary"]["rows"][0]["value"] == float(result.map[0])
    assert f"mAP@0.50 = {result.map[0]:.3f} (voc2007)" in out.getvalue()
    assert [row["AP"] for row in payload["per_class"]] == result.ap[0].tolist()
    assert [row["voc_tp"] for row in payload["per_class"]] == result.tp[0].tolist()
    assert [row["n_gt"] for row in payload["per_class"]] == result.n_positives.tolist()
    roles = [entry["role"] for entry in payload["gallery"]["images"]]
    # 3 worst images, then at most 3 // 2 examples of the top confusions.
    assert roles[:3] == ["worst"] * 3 and roles[3:] == ["example"] * (len(roles) - 3) \
        and len(roles) <= 4
    assert payload["gallery"]["skipped"] == []
    for entry in payload["gallery"]["images"]:
        assert (tmp_path / entry["file"]).is_file()
        assert entry["file_name"].endswith(".jpg")
