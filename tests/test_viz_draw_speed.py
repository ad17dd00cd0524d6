"""The fast paths of the drawings give what the plain calls give: a label's text drawn from
its kept FreeType mask is ``ImageDraw.text``'s, pixel for pixel, and its measure is
``getbbox``'s; the label placement equals the old all-numpy rule (a literal copy below);
``write_drawings`` writes the same files, reports and progress for every number of
threads; the report's gallery is the same for every number of threads, stops drawing once
full and never retries an image; :func:`deteval._threads.thread_imap` keeps order, bounds
the work ahead and stops when closed."""

from __future__ import annotations

import threading
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

import deteval
from deteval._threads import thread_imap
from deteval.cli import main
from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
from deteval.outcomes import match_outcomes
from deteval.viz.draw import _place_label, write_drawings
from deteval.viz.draw._labels import _draw_text, _Label, _measure, _rendered
from deteval.viz.draw._styles import _font

TEXTS = ["bg person 0.45", "FN dog", "ign car", "cls cat (dog IoU 0.42)", "person 0.87 IoU 0.73",
         "dup bicycle 0.10 IoU 0.66", "a", "..", "W", "crowd person", "loc aeroplane 1.00 IoU 0.12",
         "jy|(Ag0", "x" * 40]


# --------------------------------------------------------------------------------------
# Label text: the kept mask is ImageDraw.text
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["RGB", "RGBA"])
@pytest.mark.parametrize("size", [6, 8, 12, 19, 33])
def test_label_text_is_imagedraw_text_pixel_for_pixel(mode, size):
    font = _font(size)
    rng = np.random.default_rng(size)
    for text in TEXTS:
        background = tuple(int(v) for v in rng.integers(0, 256, 4))
        fill = (0, 0, 0, 255) if sum(background[:3]) > 380 else (255, 255, 255, 255)
        origin = (int(rng.integers(-5, 40)), int(rng.integers(-5, 30)))
        expected = Image.new(mode, (120, 50), background[:len(mode)])
        ImageDraw.Draw(expected).text(origin, text, font=font, fill=fill)
        mine = Image.new(mode, (120, 50), background[:len(mode)])
        _draw_text(ImageDraw.Draw(mine), _Label(text, font, (0, 0, 0, 0), origin), fill)
        assert mine.tobytes() == expected.tobytes(), text
        # The measure comes from the same FreeType pass as the mask: getbbox's box.
        _, left, top, right = _rendered(font, text)
        assert (left, right) == tuple(font.getbbox(text)[i] for i in (0, 2))
        assert top == font.getbbox(text)[1]


def test_label_text_at_a_fractional_origin_is_left_to_pillow():
    font = _font(12)
    expected, mine = Image.new("RGB", (90, 30)), Image.new("RGB", (90, 30))
    ImageDraw.Draw(expected).text((3.5, 4.25), "cat 0.90", font=font, fill=(255, 255, 255))
    _draw_text(ImageDraw.Draw(mine), _Label("cat 0.90", font, (0, 0, 0, 0), (3.5, 4.25)),
               (255, 255, 255))
    assert mine.tobytes() == expected.tobytes()


def test_an_empty_label_measures_zero_and_draws_nothing():
    font = _font(10)
    width, height, box = _measure(font, "", 1)
    assert width == 2 and box[0] == box[2] == 0
    picture = Image.new("RGB", (20, 20), (9, 9, 9))
    _draw_text(ImageDraw.Draw(picture), _Label("", font, (0, 0, 0, 0), (2, 2)), (255, 255, 255))
    assert picture.getcolors() == [(400, (9, 9, 9))]


def test_kept_label_masks_stay_within_their_byte_budget(monkeypatch):
    from deteval.viz.draw import _labels

    monkeypatch.setattr(_labels, "_RENDERED_BYTES", 20_000)
    monkeypatch.setattr(_labels, "_rendered_cache", type(_labels._rendered_cache)())
    monkeypatch.setattr(_labels, "_rendered_total", 0)
    font = _font(14)
    for n in range(300):
        text = f"person {n / 300:.2f} IoU 0.5"
        mask, left, top, right = _rendered(font, text)
        assert (left, top, right) == tuple(font.getbbox(text)[i] for i in (0, 1, 2))
        kept = [m.size[0] * m.size[1] for m, *_ in _labels._rendered_cache.values()]
        assert sum(kept) == _labels._rendered_total <= 20_000
    assert 0 < len(_labels._rendered_cache) < 300
    assert _rendered(font, "person 0.99 IoU 0.5") is _rendered(font, "person 0.99 IoU 0.5")


# --------------------------------------------------------------------------------------
# Label placement: the same spots as the all-numpy rule
# --------------------------------------------------------------------------------------


def _reference_place(text, box, size, font_size, taken, free_only):
    """The placement as written before this change, literally: every size listed, numpy
    candidates, covered areas summed for all of them."""
    import math

    from deteval.viz.draw._shapes import _FAR, _clip

    w, h = size
    sizes = [font_size]
    while sizes[-1] > 6:
        sizes.append(max(6, sizes[-1] - max(1, sizes[-1] // 16)))
    for s in sizes:
        font, pad = _font(s), max(1, s // 8)
        ref = font.getbbox("Ag0|(")
        left_, _, right_, _ = font.getbbox(text) if text else (0, 0, 0, 0)
        lw, lh = int(math.ceil(right_ - left_)) + 2 * pad, int(math.ceil(ref[3] - ref[1])) + 2 * pad
        bbox = (left_, ref[1], right_, ref[3])
        if lw <= w and lh <= h:
            break
    if lh > h:
        return None
    if lw > w:
        cut = text
        while cut and int(math.ceil(font.getbbox(cut + "..")[2] - font.getbbox(cut + "..")[0])) \
                + 2 * pad > w:
            cut = cut[:-1]
        if not cut:
            return None
        text = cut + ".."
        left_, _, right_, _ = font.getbbox(text)
        lw = int(math.ceil(right_ - left_)) + 2 * pad
        bbox = (left_, ref[1], right_, ref[3])
    left = _clip(box[0], 0, w - lw)
    right = _clip(math.ceil(box[2]) - lw, 0, w - lw)
    top = _clip(box[1], -_FAR, _FAR)
    bottom = _clip(math.ceil(box[3]) - 1, -_FAR, _FAR)
    rows = np.array([top - lh, top, bottom + 1, bottom - lh + 1, top - 2 * lh, bottom + 1 + lh,
                     top + lh, bottom + 1 - 2 * lh, top - 3 * lh, bottom + 1 + 2 * lh])
    y0 = np.clip(rows, 0, h - lh).repeat(2)
    x0 = np.tile([left, right], len(rows))
    rects = np.stack([x0, y0, x0 + lw - 1, y0 + lh - 1], axis=1)
    taken = np.asarray(list(taken), dtype=np.int64).reshape(-1, 4)
    best = covered = 0
    if len(taken):
        ix = (np.minimum(rects[:, None, 2], taken[None, :, 2])
              - np.maximum(rects[:, None, 0], taken[None, :, 0]) + 1).clip(0)
        iy = (np.minimum(rects[:, None, 3], taken[None, :, 3])
              - np.maximum(rects[:, None, 1], taken[None, :, 1]) + 1).clip(0)
        areas = (ix * iy).sum(axis=1)
        best = int(np.argmin(areas))
        covered = int(areas[best])
    if covered and free_only:
        return None
    rect = tuple(int(v) for v in rects[best])
    return text, rect, (rect[0] + pad - bbox[0], rect[1] + pad - bbox[1])


@pytest.mark.parametrize("free_only", [True, False])
def test_label_placement_equals_the_numpy_rule(free_only):
    rng = np.random.default_rng(4)
    for case in range(60):
        w, h = int(rng.integers(8, 400)), int(rng.integers(4, 300))
        taken = []
        for _ in range(int(rng.integers(1, 12))):
            x, y = rng.uniform(-30, w + 10), rng.uniform(-30, h + 10)
            if taken and rng.random() < 0.5:   # at the corner of a label: edges that touch
                x, y = float(taken[-1][2]), float(taken[-1][int(rng.choice([1, 3]))])
            box = np.array([x, y, x + rng.uniform(1, w), y + rng.uniform(1, h)])
            text = TEXTS[int(rng.integers(len(TEXTS)))]
            size = int(rng.integers(6, 30))
            label = _place_label(text, box, (w, h), size, taken=taken, free_only=free_only)
            expected = _reference_place(text, box, (w, h), size, taken, free_only)
            got = None if label is None else (label.text, label.rect, label.origin)
            assert got == expected, (case, text, box, w, h)
            if label is not None:
                taken.append(label.rect)


# --------------------------------------------------------------------------------------
# write_drawings: the same files for every number of threads
# --------------------------------------------------------------------------------------


def _folder(tmp_path: Path, n_images: int = 14):
    """PNG and JPEG images with objects and detections, one missing, one unreadable."""
    rng = np.random.default_rng(7)
    images_dir = tmp_path / "images"
    images_dir.mkdir()
    names, widths, heights = [], [], []
    gt_rows, dt_rows = [], []
    for i in range(n_images):
        w, h = int(rng.integers(60, 200)), int(rng.integers(50, 160))
        name = f"img{i:02d}." + ("jpg" if i % 3 else "png")
        names.append(name)
        widths.append(w)
        heights.append(h)
        picture = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        if i == 7:
            (images_dir / name).write_bytes(b"not an image")
        elif i != 4:                                      # 4: missing
            picture.save(images_dir / name)
        for _ in range(int(rng.integers(0, 5))):
            x, y = rng.uniform(0, w - 10), rng.uniform(0, h - 10)
            box = [x, y, x + rng.uniform(8, 50), y + rng.uniform(8, 40)]
            k = int(rng.integers(2))
            gt_rows.append((i, k, box))
            if rng.random() < 0.7:
                jitter = rng.normal(0, 2, 4).clip(-3, 3)
                dt_rows.append((i, k if rng.random() < 0.8 else 1 - k,
                                list(np.add(box, jitter)), float(rng.uniform(0.1, 1))))
        dt_rows.append((i, 0, [2.0, 2.0, 12.0, 9.0], float(rng.uniform(0.1, 1))))
    dataset = Dataset(Images(ids=list(range(1, n_images + 1)), widths=widths, heights=heights,
                             file_names=names),
                      Categories(ids=[1, 2], names=("cat", "dog")),
                      GroundTruth(image_index=[r[0] for r in gt_rows],
                                  category_index=[r[1] for r in gt_rows],
                                  boxes=np.array([r[2] for r in gt_rows]).reshape(-1, 4)))
    detections = Detections(image_index=[r[0] for r in dt_rows],
                            category_index=[r[1] for r in dt_rows],
                            boxes=np.array([r[2] for r in dt_rows]).reshape(-1, 4),
                            scores=[r[3] for r in dt_rows])
    return dataset, detections, images_dir


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".deteval-draw.json"}


@pytest.mark.parametrize("options", [{}, {"by_errors": True, "contact_sheet": 5},
                                     {"only_errors": True, "format": "png", "limit": 10}])
def test_write_drawings_same_files_reports_and_progress_for_every_thread_count(tmp_path,
                                                                               options):
    dataset, detections, images_dir = _folder(tmp_path)
    runs = {}
    for threads in (1, 3):
        events = []
        out = tmp_path / f"out{threads}"
        written = write_drawings(
            dataset, detections, images_dir, out, threads=threads, **options,
            on_problem=lambda path, message, events=events: events.append(
                ("problem", message, threading.current_thread())),
            progress=lambda done, total, name, events=events: events.append(
                ("progress", (done, total, name), threading.current_thread())))
        assert {thread for *_, thread in events} == {threading.current_thread()}
        runs[threads] = ([p.relative_to(out) for p in written],
                         [event[:2] for event in events], _files(out))
    assert runs[1] == runs[3]
    paths, events, files = runs[1]
    assert sum(kind == "problem" for kind, _ in events) >= 2   # the missing and the broken
    assert "contact_sheet.jpg" in files and "key.png" in files
    assert {p.as_posix() for p in paths} <= set(files)


def test_write_drawings_draws_what_draw_matches_draws(tmp_path):
    """Drawn in place on the picture it read: the pixels of draw_matches on that image."""
    dataset, detections, images_dir = _folder(tmp_path)
    outcomes = match_outcomes(dataset, detections)
    written = write_drawings(dataset, detections, images_dir, tmp_path / "out", format="png",
                             rank=False, outcomes=outcomes, on_problem=lambda *a: None)
    for path in written:
        i = dataset.images.file_names.index(path.stem + (".jpg" if int(path.stem[3:]) % 3
                                                          else ".png"))
        with Image.open(images_dir / dataset.images.file_names[i]) as source:
            expected = deteval.viz.draw.draw_matches(source.convert("RGB"), dataset,
                                                     detections, i, outcomes=outcomes)
        with Image.open(path) as drawn:
            assert drawn.convert("RGB").tobytes() == expected.tobytes()


def test_write_drawings_refuses_unknown_draw_options(tmp_path):
    dataset, detections, images_dir = _folder(tmp_path, 2)
    with pytest.raises(TypeError, match="draw_options: unknown keyword.*'colour'"):
        write_drawings(dataset, detections, images_dir, tmp_path / "out",
                       draw_options={"colour": "red", "font_size": 9})
    with pytest.raises(ValueError, match="threads must be an integer >= 1"):
        write_drawings(dataset, detections, images_dir, tmp_path / "out", threads=0)


def test_cli_draw_threads_give_the_same_files(tmp_path, voc_sample_dir):
    outputs = []
    for threads in ("1", "3"):
        out = tmp_path / threads
        code = main(["draw", str(voc_sample_dir / "gts" / "pascalvoc_format"),
                     str(voc_sample_dir / "dets" / "coco_format" / "coco_dets.json"),
                     "--images", str(voc_sample_dir / "images"), "--out", str(out),
                     "--limit", "8", "--threads", threads, "--quiet"])
        assert code == 0
        outputs.append(_files(out))
    assert outputs[0] == outputs[1] and len(outputs[0]) == 10   # 8 drawings, key, sheet


# --------------------------------------------------------------------------------------
# The report's gallery: the same for every number of threads, bounded by its size
# --------------------------------------------------------------------------------------


def test_report_gallery_same_for_every_thread_count_and_bounded(tmp_path, monkeypatch):
    from deteval.report import _gallery

    dataset, detections, images_dir = _folder(tmp_path, 30)
    outcomes = match_outcomes(dataset, detections)
    worst = outcomes.images_by_errors(only_errors=True).tolist()
    drawn_images = []
    draw_image = _gallery.draw_image

    def counted(dataset, detections, outcomes, image_index, images_dir):
        drawn_images.append(image_index)
        return draw_image(dataset, detections, outcomes, image_index, images_dir)

    monkeypatch.setattr(_gallery, "draw_image", counted)
    # Examples: a worst image already drawn, the broken one twice, then others.
    examples = [worst[0], 7, 7] + [i for i in range(30) if i not in worst[:4]][:6]
    results = {}
    for threads in (1, 2, 4):
        drawn_images.clear()
        files: dict[str, bytes] = {}
        steps: list[str] = []
        entries, skipped = _gallery.gallery(dataset, detections, outcomes, images_dir, 4,
                                            examples, files, single=False, step=steps.append,
                                            threads=threads)
        results[threads] = (entries, skipped, files, steps)
        # Bounded by the gallery: what was consumed plus at most 2 * threads drawn ahead
        # in each of the two phases (worst images, examples); one thread draws no more.
        tried = {e["image_index"] for e in entries} | {
            dataset.images.file_names.index(s["image"]) for s in skipped}
        assert len(drawn_images) <= len(tried) + 2 * (2 * threads if threads > 1 else 0)
        assert threads > 1 or sorted(drawn_images) == sorted(tried)
    assert results[1] == results[2] == results[4]
    entries, skipped, files, steps = results[1]
    assert [e["role"] for e in entries] == ["worst"] * 4 + ["example"] * 2
    assert len(files) == 2 * len(entries) and len(steps) == len(entries)
    # The broken image is tried once (a worst image, or the first of its example copies).
    assert [s["image"] for s in skipped].count("img07.jpg") == 1


def test_report_gallery_single_page_same_for_every_thread_count(tmp_path):
    from deteval.report import _gallery

    dataset, detections, images_dir = _folder(tmp_path, 12)
    outcomes = match_outcomes(dataset, detections)
    results = [_gallery.gallery(dataset, detections, outcomes, images_dir, 3, [], files := {},
                                single=True, step=lambda _: None, threads=threads) + (files,)
               for threads in (1, 3)]
    assert results[0] == results[1]
    assert all(e["thumb"] == e["file"] for e in results[0][0])


# --------------------------------------------------------------------------------------
# thread_imap
# --------------------------------------------------------------------------------------


def test_thread_imap_keeps_order_and_raises_in_order():
    def slow_square(x):
        time.sleep(0.002 * (x % 3))
        if x == 7:
            raise KeyError(x)
        return x * x

    assert list(thread_imap(slow_square, range(7), 3)) == [x * x for x in range(7)]
    results = thread_imap(slow_square, range(10), 3)
    assert [next(results) for _ in range(7)] == [x * x for x in range(7)]
    with pytest.raises(KeyError):
        next(results)


@pytest.mark.parametrize("threads, ahead", [(1, None), (2, None), (3, 2)])
def test_thread_imap_works_at_most_ahead_of_the_consumer_and_stops_when_closed(threads,
                                                                                ahead):
    calls = []
    lock = threading.Lock()

    def record(x):
        with lock:
            calls.append(x)
        return x

    with closing(thread_imap(record, range(100), threads, ahead=ahead)) as results:
        for x in results:
            if x == 4:
                break
    bound = 0 if threads == 1 else (2 * threads if ahead is None else ahead)
    assert sorted(calls) == list(range(len(calls)))
    assert 5 <= len(calls) <= 5 + bound
