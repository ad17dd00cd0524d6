"""Tests of ``deteval draw`` (deteval.cli) through ``main([...])`` on files written in a
temporary folder: what is written, the one-line summary, missing images and size mismatches
reported on stderr without failing, usage errors; and a run on the shared VOC sample."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from clirun import run
from PIL import Image

import deteval
from deteval.cli import main
from deteval.outcomes import match_outcomes
from deteval.viz.draw import MASK_FILL, STYLES


@pytest.fixture()
def files(tmp_path) -> dict[str, Path]:
    """Three images: a.png (1 error), b.png (missing, 1 error), c.png (wrong size, 2 errors)."""
    images_dir = tmp_path / "images"
    images_dir.mkdir()
    Image.new("RGB", (100, 80), (128, 128, 128)).save(images_dir / "a.png")
    Image.new("RGB", (90, 80), (128, 128, 128)).save(images_dir / "c.png")
    gt = {"images": [{"id": i, "file_name": f"{n}.png", "width": 100, "height": 80}
                     for i, n in ((1, "a"), (2, "b"), (3, "c"))],
          "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
          "annotations": [
              {"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 30, 30], "area": 900,
               "iscrowd": 0},
              {"id": 2, "image_id": 2, "category_id": 2, "bbox": [10, 10, 30, 30], "area": 900,
               "iscrowd": 0},
              {"id": 3, "image_id": 3, "category_id": 2, "bbox": [50, 10, 30, 30], "area": 900,
               "iscrowd": 0}]}
    dt = [{"image_id": 1, "category_id": 1, "bbox": [10, 10, 30, 30], "score": 0.9},
          {"image_id": 1, "category_id": 1, "bbox": [60, 40, 20, 20], "score": 0.4},
          {"image_id": 3, "category_id": 1, "bbox": [5, 40, 20, 20], "score": 0.7}]
    paths = {"gt": tmp_path / "gt.json", "dt": tmp_path / "dt.json", "images": images_dir,
             "out": tmp_path / "out"}
    paths["gt"].write_text(json.dumps(gt))
    paths["dt"].write_text(json.dumps(dt))
    return paths


def test_draw_writes_pictures_and_reports_problems(files):
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--score", "0")
    assert status == 0, err
    # Most errors first: c (2), then a and b (1 each, table order; b is missing).
    assert sorted(p.name for p in files["out"].iterdir()) == [
        ".deteval-draw.json", "001_c.png", "002_a.png", "contact_sheet.jpg", "key.png"]
    lines = out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"deteval draw: wrote 2 of 3 image(s) to {files['out']} "
                               "(1 skipped); IoU >= 0.5, score >= 0: TP 1, FP 2 ")
    assert "(0 duplicate, 0 wrong class, 0 localization, 2 background), FN 2" in lines[0]
    warnings = [line for line in err.splitlines() if line.startswith("deteval: warning: ")]
    assert len(warnings) == 2, err
    assert re.search(r"image .*b\.png \(image id 2\) not found; skipped", err)
    assert re.search(r"image .*c\.png \(image id 3\) is 90x80 pixels but its annotation says "
                     r"100x80", err)
    with Image.open(files["out"] / "002_a.png") as drawn:
        assert drawn.size == (100, 80)
        assert drawn.convert("RGB").getpixel((10, 25)) == STYLES["tp"].rgb


def test_only_errors_and_limit_take_the_worst_images(files):
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--only-errors", "--limit", "1", "--score", "0",
                           "--contact-sheet", "0")
    assert status == 0, err
    assert sorted(p.name for p in files["out"].glob("*.png")) == ["001_c.png", "key.png"]
    assert "wrote 1 of 1 image(s)" in out
    assert "not found" not in err


def test_without_limit_the_worst_images_up_to_the_default_are_drawn(files, monkeypatch):
    import deteval.cli.draw as draw_command

    monkeypatch.setattr(draw_command, "DEFAULT_LIMIT", 1)
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--score", "0", "--contact-sheet", "0")
    assert status == 0, err
    assert sorted(p.name for p in files["out"].glob("*.png")) == ["001_c.png", "key.png"]
    assert "wrote 1 of 1 image(s)" in out
    assert "drawing the 1 images with the most errors of 3; --limit N or --all for more" in err
    # --all: every image (b is missing: skipped), and no note
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--score", "0", "--contact-sheet", "0",
                           "--all")
    assert status == 0, err
    assert "wrote 2 of 3 image(s)" in out and "--all for more" not in err
    # an explicit --limit is the user's choice: no note
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--score", "0", "--limit", "1")
    assert status == 0 and "--all for more" not in err
    code, _, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                       "--out", files["out"], "--limit", "1", "--all")
    assert code == 2 and "not allowed with argument" in err


def test_thresholds_are_passed_on(files):
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--score-threshold", "0.5",
                           "--iou-threshold", "0.75")
    assert status == 0, err
    expected = match_outcomes(str(files["gt"]), str(files["dt"]), iou_threshold=0.75,
                              score_threshold=0.5).counts()
    assert expected["below_threshold"] == 1
    assert (f"IoU >= 0.75, score >= 0.5: TP {expected['tp']}, FP {expected['fp']} "
            in out)


def test_score_and_iou_are_short_for_the_thresholds(files):
    long = run("draw", files["gt"], files["dt"], "--images", files["images"], "--out",
               files["out"], "--score-threshold", "0.5", "--iou-threshold", "0.75")
    short = run("draw", files["gt"], files["dt"], "--images", files["images"], "--out",
                files["out"], "--score", "0.5", "--iou", "0.75")
    assert long == short and short[0] == 0
    assert "IoU >= 0.75, score >= 0.5" in short[1]


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal_without_quiet(files):
    argv = ["draw", files["gt"], files["dt"], "--images", files["images"], "--out",
            files["out"], "--score", "0"]
    terminal = Terminal()
    assert main([str(a) for a in argv], stdout=io.StringIO(), stderr=terminal) == 0
    drawn = terminal.getvalue()
    assert "] 3/3" in drawn and "\r" in drawn          # the last step is always drawn
    quiet = Terminal()
    assert main([str(a) for a in argv] + ["--quiet"], stdout=io.StringIO(), stderr=quiet) == 0
    assert "\r" not in quiet.getvalue() and "] 3/3" not in quiet.getvalue()
    assert quiet.getvalue().startswith("deteval: warning: ")   # the warnings stay
    status, out, err = run(*argv)                        # not a terminal
    assert status == 0 and "\r" not in err and "/3" not in err


def test_no_image_drawn_is_an_error(files, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    status, out, err = run("draw", files["gt"], files["dt"], "--images", empty, "--out",
                           files["out"])
    assert status == 1
    assert err.count("not found; skipped") == 3
    assert err.splitlines()[-1] == (f"deteval: error: none of the 3 image(s) could be drawn: "
                                    f"each is missing or unreadable under --images {empty} "
                                    "(see the warnings); is that the images folder?")
    # nothing drawn, nothing left: no key, no manifest, not even the folder it created
    assert not files["out"].exists()


def test_the_images_are_never_overwritten(files):
    before = {p.name: p.read_bytes() for p in files["images"].iterdir()}
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["images"])
    assert status == 1
    assert "is the images folder" in err
    assert {p.name: p.read_bytes() for p in files["images"].iterdir()} == before


@pytest.mark.parametrize("argv, status, message", [
    (["--out", "OUT"], 2, "required: --images DIR"),
    (["--images", "IMAGES"], 2, "the following arguments are required: --out"),
    (["--images", "IMAGES", "--out", "OUT", "--limit", "0"], 2, "expected a positive integer"),
    (["--images", "IMAGES", "--out", "OUT", "--iou-threshold", "0"], 2,
     "expected a IoU threshold in"),
    (["--images", "NOWHERE", "--out", "OUT"], 1, "no such folder"),
])
def test_usage_errors(files, argv, status, message):
    argv = [{"IMAGES": files["images"], "OUT": files["out"],
             "NOWHERE": files["images"] / "nowhere"}.get(a, a) for a in argv]
    code, out, err = run("draw", files["gt"], files["dt"], *argv)
    assert code == status
    assert message in err
    assert not files["out"].exists()


def test_voc_sample(voc_sample_dir, tmp_path):
    gt, dt = voc_sample_dir / "gts" / "pascalvoc_format", voc_sample_dir / "dets" / "abs_xyx2y2"
    status, out, err = run("draw", gt, dt, "--box-format", "xyxy", "--names",
                           voc_sample_dir / "voc.names", "--images", voc_sample_dir / "images",
                           "--out", tmp_path, "--limit", "2", "--score", "0")
    assert status == 0, err
    assert err == ""
    written = sorted(tmp_path.glob("0*.jpg"))   # JPEG images: JPEG drawings
    assert [p.name[:4] for p in written] == ["001_", "002_"]
    dataset = deteval.read_gt(gt)
    detections = deteval.read_detections(dt, dataset, box_format="xyxy",
                                         names=voc_sample_dir / "voc.names")
    counts = match_outcomes(dataset, detections).counts()
    assert f"wrote 2 of 2 image(s) to {tmp_path}; IoU >= 0.5, score >= 0: TP {counts['tp']}, " \
           f"FP {counts['fp']} " in out


# --------------------------------------------------------------------------------------
# The default score, the order, the formats, the folder
# --------------------------------------------------------------------------------------


def test_score_defaults_to_the_f1_optimal_one(files):
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"])
    assert status == 0, err
    # Scores 0.9 (TP), 0.7 and 0.4 (FP), 3 objects: F1 is best (0.5) at 0.9.
    assert "score >= 0.9 (the F1-optimal score): TP 1, FP 0 " in out
    # c and b have 1 error each (a missed object), a none: ranks 1 (b, missing), 2, 3.
    assert sorted(p.name for p in files["out"].glob("0*")) == ["002_c.png", "003_a.png"]


def noisy_jpeg(path: Path, size=(320, 240), seed=0) -> None:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (size[1] // 8, size[0] // 8, 3), dtype=np.uint8)
    Image.fromarray(base).resize(size, Image.Resampling.BICUBIC).save(path, quality=90)


@pytest.fixture()
def jpeg_files(files) -> dict[str, Path]:
    for name in ("a", "c"):
        (files["images"] / f"{name}.png").unlink()
    gt = json.loads(files["gt"].read_text())
    for image in gt["images"]:
        image.update(file_name=image["file_name"].replace(".png", ".jpg"), width=320,
                     height=240)
        noisy_jpeg(files["images"] / image["file_name"], seed=image["id"])
    files["gt"].write_text(json.dumps(gt))
    return files


def test_jpeg_images_give_jpeg_drawings_of_similar_size(jpeg_files):
    files = jpeg_files
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--score", "0", "--contact-sheet", "0")
    assert status == 0, err
    drawn = sorted(files["out"].glob("0*"))
    assert [p.name for p in drawn] == ["001_c.jpg", "002_a.jpg", "003_b.jpg"]
    for path in drawn:
        with Image.open(path) as picture:
            assert picture.format == "JPEG" and picture.size == (320, 240)
        source = files["images"] / path.name[4:]
        assert path.stat().st_size < 1.5 * source.stat().st_size
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--score", "0", "--format", "png")
    assert status == 0, err
    assert sorted(p.name for p in files["out"].glob("0*")) == ["001_c.png", "002_a.png",
                                                               "003_b.png"]   # JPEGs gone
    with Image.open(files["out"] / "002_a.png") as picture:
        assert picture.format == "PNG"


def test_a_rerun_removes_only_what_the_last_run_wrote(files):
    argv = ["draw", files["gt"], files["dt"], "--images", files["images"], "--out",
            files["out"], "--score", "0"]
    assert run(*argv)[0] == 0
    first = sorted(p.name for p in files["out"].iterdir())
    assert "002_a.png" in first and "key.png" in first
    foreign = {"notes.txt": b"mine", "002_b.png": b"not a drawing", "key.png.bak": b"x"}
    for name, content in foreign.items():
        (files["out"] / name).write_bytes(content)
    (files["out"] / "001_c.png").write_bytes(b"edited by hand")   # changed: not ours anymore
    status, out, err = run(*argv[:-2], "--score", "0.8", "--only-errors")
    assert status == 0, err
    left = sorted(p.name for p in files["out"].iterdir())
    # At 0.8: b and c have 1 error each (b missing), a none: only c drawn, rank 2.
    assert "002_a.png" not in left and "002_c.png" in left
    foreign["001_c.png"] = b"edited by hand"   # changed since written: kept
    for name, content in foreign.items():
        assert (files["out"] / name).read_bytes() == content
    manifest = json.loads((files["out"] / ".deteval-draw.json").read_text())
    assert sorted(f["path"] for f in manifest["files"]) == ["002_c.png", "contact_sheet.jpg",
                                                            "key.png"]


def test_help_shows_the_key_as_the_styles_define_it():
    from deteval.cli.draw import _KEY

    assert [(k, dash, tag, label) for k, _, dash, tag, label in _KEY] == [
        (s.key, s.dash, s.tag, s.label) for s in STYLES.values()]
    status, out, err = run("draw", "--help")
    assert status == 0
    for tag in ("bg", "loc", "dup", "cls", "ign", "FN"):
        assert re.search(rf"^  {tag} +\S", out, re.M), tag
    assert "F1-optimal" in out


# --------------------------------------------------------------------------------------
# Other geometries
# --------------------------------------------------------------------------------------


def test_segm_only_results_are_drawn_with_iou_type_segm(files):
    from pycocotools import mask as mask_utils

    disc = np.zeros((80, 100), np.uint8)
    disc[10:40, 10:40] = 1
    rle = mask_utils.encode(np.asfortranarray(disc))
    rle["counts"] = rle["counts"].decode()
    gt = json.loads(files["gt"].read_text())
    for a in gt["annotations"]:
        x, y, w, h = a["bbox"]
        a["segmentation"] = [[x, y, x + w, y, x + w, y + h, x, y + h]]
    files["gt"].write_text(json.dumps(gt))
    files["dt"].write_text(json.dumps([{"image_id": 1, "category_id": 1, "score": 0.9,
                                        "segmentation": rle}]))
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"])
    assert status == 1
    assert "missing 'bbox'" in err and "pass --iou-type segm" in err
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--iou-type", "segm", "--score", "0")
    assert status == 0, err
    assert "TP 1, FP 0" in out
    with Image.open(files["out"] / "003_a.png") as drawn:   # b and c: 1 missed object
        inside = drawn.convert("RGB").getpixel((25, 25))
    tp = STYLES["tp"].rgb
    alpha = round(255 * MASK_FILL) / 255
    assert inside == tuple(round(128 + (c - 128) * alpha) for c in tp)   # the fill
    # bbox detections asked for masks they do not have: a clear error.
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--iou-type", "keypoints")
    assert status != 0 and "keypoints" in err


def test_keypoints_with_the_skeleton_of_the_ground_truth(files):
    points = np.zeros((17, 3))
    points[:, 2] = 2
    points[:, 0] = 20 + 4 * np.arange(17)   # a diagonal of joints
    points[:, 1] = 10 + 3 * np.arange(17)
    points[5, :2], points[6, :2] = (20, 30), (80, 30)   # the shoulders: one row
    gt = json.loads(files["gt"].read_text())
    gt["images"] = gt["images"][:1]
    gt["annotations"] = [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [20, 10, 64, 48],
                          "area": 3000, "iscrowd": 0, "num_keypoints": 17,
                          "keypoints": points.ravel().tolist()}]
    gt["categories"] = [{"id": 1, "name": "person", "skeleton": [[6, 7]]}]   # 1-based
    files["gt"].write_text(json.dumps(gt))
    files["dt"].write_text(json.dumps([{"image_id": 1, "category_id": 1, "score": 0.9,
                                        "keypoints": points.ravel().tolist()}]))
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--iou-type", "keypoints")
    assert status == 0, err
    assert "TP 1, FP 0" in out
    with Image.open(files["out"] / "001_a.png") as drawn:
        drawn = drawn.convert("RGB")
        assert drawn.getpixel((40, 30)) == STYLES["tp"].rgb   # the shoulders' edge
        assert drawn.getpixel((42, 36)) == (128, 128, 128)    # COCO's edge 5-11: not drawn
        assert drawn.getpixel((68, 46)) == STYLES["tp"].rgb   # joint 12: within tolerance


def test_rotated_boxes_via_the_cli(files):
    gt = json.loads(files["gt"].read_text())
    for a in gt["annotations"]:
        x, y, w, h = a["bbox"]
        a["rbox"] = [x + w / 2, y + h / 2, w, h, 0.0]
    files["gt"].write_text(json.dumps(gt))
    files["dt"].write_text(json.dumps([{"image_id": 1, "category_id": 1, "score": 0.9,
                                        "rbox": [25, 25, 30, 30, 30.0]}]))
    status, out, err = run("draw", files["gt"], files["dt"], "--images", files["images"],
                           "--out", files["out"], "--iou-type", "rotated", "--score", "0")
    assert status == 0, err
    with Image.open(files["out"] / "003_a.png") as drawn:
        drawn = drawn.convert("RGB")
        assert drawn.getpixel((10, 10)) != STYLES["tp"].rgb   # no axis-aligned corner
        seen = {c for _, c in drawn.getcolors(maxcolors=1 << 16)}
        assert STYLES["tp"].rgb in seen or STYLES["localization"].rgb in seen
