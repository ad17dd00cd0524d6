"""Tests of deteval.viz.draw: pixel tests on generated images (each outcome in its colour and
line style, masks, polygons and rotated boxes outlined, labels inside tiny images and scaled
on large ones), image modes, the input left untouched, write_drawings' problems (missing,
unreadable, wrong size, the images folder as output) and an end-to-end run on the shared VOC
sample."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import shapely
from PIL import Image
from pycocotools import mask as mask_utils

import deteval
from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
from deteval.errors import FormatWarning
from deteval.outcomes import match_outcomes
from deteval.viz.draw import (
    DEFAULT_SHOW,
    KEYPOINT_THRESHOLD,
    MASK_FILL,
    SHOW_CHOICES,
    STYLES,
    _place_label,
    draw_legend,
    draw_matches,
    joint_within,
    legend,
    select_images,
    write_drawings,
)

OKABE_ITO = {(0, 0, 0), (230, 159, 0), (86, 180, 233), (0, 158, 115), (240, 228, 66),
             (0, 114, 178), (213, 94, 0), (204, 121, 167)}
GREY = (128, 128, 128)
W, H = 160, 120
CAT, DOG = 0, 1


def scene(objects, detections, *, size=(W, H), names=("cat", "dog"), **columns):
    """objects: (class, box[, crowd]); detections: (class, box, score). One image."""
    gt = GroundTruth(image_index=[0] * len(objects), category_index=[o[0] for o in objects],
                     boxes=np.array([o[1] for o in objects], dtype=float).reshape(-1, 4),
                     iscrowd=[o[2] if len(o) > 2 else False for o in objects],
                     **columns.get("gt", {}))
    dataset = Dataset(Images(ids=[7], widths=[size[0]], heights=[size[1]],
                             file_names=["seven.png"]),
                      Categories(ids=list(range(1, len(names) + 1)), names=names), gt)
    dt = Detections(image_index=[0] * len(detections),
                    category_index=[d[0] for d in detections],
                    boxes=np.array([d[1] for d in detections], dtype=float).reshape(-1, 4),
                    scores=[d[2] for d in detections], **columns.get("dt", {}))
    return dataset, dt


def grey(size=(W, H), mode="RGB") -> Image.Image:
    return Image.new("RGB", size, GREY).convert(mode)


def ring(box, width):
    """(x, y) of the pixels a box outline of ``width`` covers (integer box)."""
    x1, y1, x2, y2 = (int(v) for v in box)
    pixels = set()
    for k in range(width):
        pixels.update((x, y1 + k) for x in range(x1, x2))
        pixels.update((x, y2 - 1 - k) for x in range(x1, x2))
        pixels.update((x1 + k, y) for y in range(y1, y2))
        pixels.update((x2 - 1 - k, y) for y in range(y1, y2))
    return sorted(pixels)


def colours(image, pixels):
    return [image.getpixel(p) for p in pixels]


def top_left_edges(box, width):
    """The top row and the left column of a box outline (clear of later, other boxes)."""
    x1, y1, x2, y2 = (int(v) for v in box)
    return [(x, y1) for x in range(x1, x2)] + [(x1, y) for y in range(y1, y2)]


# --------------------------------------------------------------------------------------
# Each outcome in its colour
# --------------------------------------------------------------------------------------

TP_BOX = [20, 20, 60, 60]
FOUND = [(CAT, TP_BOX)], [(CAT, TP_BOX, 0.9)]


@pytest.mark.parametrize("reason, objects, detections, fp_box", [
    pytest.param("background", [], [(CAT, [100, 70, 140, 110], 0.5)], [100, 70, 140, 110],
                 id="background"),
    pytest.param("localization", [(CAT, [100, 70, 140, 110])],
                 [(CAT, [110, 80, 150, 118], 0.5)], [110, 80, 150, 118], id="localization"),
    pytest.param("wrong_class", [(DOG, [100, 70, 140, 110])],
                 [(CAT, [100, 72, 140, 112], 0.5)], [100, 72, 140, 112], id="wrong-class"),
    pytest.param("duplicate", [(CAT, [90, 20, 130, 60])],
                 [(CAT, [90, 20, 130, 60], 0.8), (CAT, [88, 18, 128, 58], 0.5)],
                 [88, 18, 128, 58], id="duplicate"),
])
def test_tp_and_each_false_positive_reason_in_its_colour(reason, objects, detections, fp_box):
    dataset, dt = scene(FOUND[0] + objects, FOUND[1] + detections)
    out = match_outcomes(dataset, dt)
    assert out.dt_outcome_names[-1] == reason
    picture = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=2)
    assert set(colours(picture, ring(TP_BOX, 2))) == {STYLES["tp"].rgb}
    assert set(colours(picture, top_left_edges(fp_box, 2))) == {STYLES[reason].rgb}
    # Inside the TP box, away from everything: untouched.
    assert picture.getpixel((40, 40)) == GREY


def test_missed_object_is_dashed_in_the_fn_colour():
    fn_box = [100, 10, 150, 50]
    dataset, dt = scene([(DOG, fn_box)], [])
    picture = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=2)
    seen = colours(picture, ring(fn_box, 2))
    assert set(seen) == {STYLES["fn"].rgb, GREY}
    assert picture.getpixel((100, 10)) == STYLES["fn"].rgb      # dashes start at the corners
    assert 0.4 < seen.count(STYLES["fn"].rgb) / len(seen) < 0.9   # dashed, not solid
    assert STYLES["fn"].dash == "dashed"


def test_crowd_region_is_dotted_in_the_ignored_colour():
    crowd_box = [10, 10, 70, 70]
    dataset, dt = scene([(CAT, crowd_box, True)], [(CAT, [20, 20, 40, 40], 0.8)])
    picture = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=1)
    seen = colours(picture, ring(crowd_box, 1))
    assert set(seen) == {STYLES["ignored"].rgb, GREY}
    assert seen.count(STYLES["ignored"].rgb) / len(seen) < 0.5   # dotted
    # The detection the crowd absorbed is drawn as ignored too.
    assert STYLES["ignored"].rgb in colours(picture, ring([20, 20, 40, 40], 1))


def test_show_chooses_what_is_drawn():
    dataset, dt = scene([(CAT, TP_BOX), (DOG, [100, 10, 150, 50])],
                        [(CAT, TP_BOX, 0.9), (CAT, [100, 70, 140, 110], 0.2)])
    only_fn = draw_matches(grey(), dataset, dt, 0, show=["fn"], labels=False)
    pixels = {colour for _, colour in only_fn.getcolors(maxcolors=W * H)}
    assert STYLES["fn"].rgb in pixels and STYLES["tp"].rgb not in pixels
    assert STYLES["background"].rgb not in pixels
    only_bg = draw_matches(grey(), dataset, dt, 0, show=("background",), labels=False)
    assert set(colours(only_bg, top_left_edges([100, 70, 140, 110], 1))) == {
        STYLES["background"].rgb}
    assert only_bg.getpixel((20, 30)) == GREY
    low = draw_matches(grey(), dataset, dt, 0, score_threshold=0.5,
                       show=("below_threshold",), labels=False)
    assert STYLES["below_threshold"].rgb in colours(low, ring([100, 70, 140, 110], 1))


def test_outcomes_given_or_computed_agree():
    dataset, dt = scene([(CAT, TP_BOX)], [(CAT, [22, 20, 62, 60], 0.9),
                                          (CAT, [100, 70, 140, 110], 0.4)])
    at_09 = match_outcomes(dataset, dt, iou_threshold=0.95)
    given = draw_matches(grey(), dataset, dt, 0, outcomes=at_09)
    computed = draw_matches(grey(), dataset, dt, 0, iou_threshold=0.95)
    assert given.tobytes() == computed.tobytes()
    assert computed.tobytes() != draw_matches(grey(), dataset, dt, 0).tobytes()


# --------------------------------------------------------------------------------------
# Masks and polygons
# --------------------------------------------------------------------------------------


def test_masks_are_outlined_instead_of_boxes():
    yy, xx = np.mgrid[0:H, 0:W]
    disc = ((xx - 50) ** 2 + (yy - 50) ** 2 <= 30 ** 2).astype(np.uint8)
    rle = mask_utils.encode(np.asfortranarray(disc))
    box = [20, 20, 81, 81]
    dataset, dt = scene([(CAT, box)], [(CAT, box, 0.9)], gt={"masks": [rle]},
                        dt={"masks": [rle]})
    picture = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=2)
    tp = STYLES["tp"].rgb
    assert picture.getpixel((20, 50)) == tp and picture.getpixel((21, 50)) == tp  # left rim
    assert picture.getpixel((50, 80)) == tp                                       # bottom rim
    # Inside: the translucent fill (30% of the colour over the image), 2 px of rim only.
    filled = tuple(round(g + (c - g) * round(255 * MASK_FILL) / 255) for g, c in zip(GREY, tp))
    assert picture.getpixel((22, 50)) == filled
    assert picture.getpixel((50, 50)) == filled
    assert picture.getpixel((20, 20)) == GREY   # the box corner is outside the disc
    bare = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=2, mask_fill=0)
    assert bare.getpixel((50, 50)) == GREY and bare.getpixel((20, 50)) == tp
    assert rle["counts"] == mask_utils.encode(np.asfortranarray(disc))["counts"]   # untouched


def test_a_missed_mask_is_dashed():
    disc = np.zeros((H, W), np.uint8)
    disc[30:90, 40:120] = 1
    rle = mask_utils.encode(np.asfortranarray(disc))
    dataset, dt = scene([(DOG, [40, 30, 120, 90])], [], gt={"masks": [rle]})
    picture = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=1, mask_fill=0)
    seen = colours(picture, ring([40, 30, 120, 90], 1))
    assert set(seen) == {STYLES["fn"].rgb, GREY} and seen.count(GREY) > len(seen) // 4


def test_polygons_are_outlined_instead_of_boxes():
    triangle = shapely.Polygon([(10, 60), (60, 60), (35, 10)])
    dataset, dt = scene([(CAT, [10, 10, 60, 60])], [(CAT, [10, 10, 60, 60], 0.9)],
                        gt={"polygons": [triangle]}, dt={"polygons": [triangle]})
    picture = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=2)
    tp = STYLES["tp"].rgb
    assert tp in colours(picture, [(35, 59), (35, 60), (35, 61)])    # the base
    assert tp in colours(picture, [(35, 9), (35, 10), (35, 11)])     # the apex
    assert picture.getpixel((11, 11)) == GREY    # the box corner: not drawn
    assert picture.getpixel((35, 40)) == GREY


def test_rotated_boxes_are_outlined_instead_of_boxes():
    # (cx, cy, w, h, angle): 45 degrees; its axis-aligned bounds are its boxes.
    rbox = [80.0, 60.0, 40.0, 20.0, 45.0]
    half = (20 + 10) * np.sqrt(0.5)
    bounds = [80 - half, 60 - half, 80 + half, 60 + half]
    dataset, dt = scene([(CAT, bounds)], [(CAT, bounds, 0.9)], gt={"rboxes": [rbox]},
                        dt={"rboxes": [rbox]})
    picture = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=2)
    tp = STYLES["tp"].rgb
    # The middle of the edge u = +w/2 (x = cx + 20 cos 45, y = cy - 20 sin 45).
    edge = (80 + 20 * np.sqrt(0.5), 60 - 20 * np.sqrt(0.5))
    near = [(int(edge[0]) + dx, int(edge[1]) + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)]
    assert tp in colours(picture, near)
    assert picture.getpixel((int(bounds[0]) + 1, int(bounds[1]) + 1)) == GREY  # box corner
    assert picture.getpixel((80, 60)) == GREY
    # A missed rotated object: dashed along its outline, in the FN colour.
    dataset, dt = scene([(DOG, bounds)], [], gt={"rboxes": [rbox]})
    missed = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=1)
    seen = {colour for _, colour in missed.getcolors(maxcolors=W * H)}
    assert seen == {GREY, STYLES["fn"].rgb}
    assert missed.getpixel((int(bounds[0]) + 1, int(bounds[1]) + 1)) == GREY


def test_shapes_fall_back_to_the_box_and_masks_are_cropped_to_the_image():
    big = np.zeros((150, 200), np.uint8)
    big[10:140, 100:190] = 1   # runs past the 160 x 120 image
    rle = mask_utils.encode(np.asfortranarray(big))
    empty = shapely.Polygon()
    dataset, dt = scene([(DOG, [100, 10, 190, 140]), (CAT, [20, 20, 60, 60])],
                        [(CAT, [20, 20, 60, 60], 0.9)],
                        gt={"masks": [rle, None]}, dt={"polygons": [empty]})
    picture = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=1)
    assert set(colours(picture, ring(TP_BOX, 1))) == {STYLES["tp"].rgb}   # its box
    assert STYLES["fn"].rgb in colours(picture, [(x, 10) for x in range(100, W)])
    # The mask's rim at the image's edge is drawn on the last row and column.
    right = colours(picture, [(W - 1, y) for y in range(10, H)])
    assert STYLES["fn"].rgb in right


# --------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------


def test_a_long_label_on_a_tiny_image_stays_inside():
    name = "a-category-with-a-very-long-name"
    label = _place_label(f"{name} 0.93 IoU 0.88", np.array([30.0, 2, 39, 12]), (40, 30), 8)
    assert label is not None
    x0, y0, x1, y1 = label.rect
    assert 0 <= x0 <= x1 < 40 and 0 <= y0 <= y1 < 30
    assert label.text.endswith("..") and len(label.text) < len(name)
    dataset, dt = scene([(CAT, [30, 2, 39, 12])], [(CAT, [30, 2, 39, 12], 0.93)],
                        size=(40, 30), names=(name, "dog"))
    picture = draw_matches(grey((40, 30)), dataset, dt, 0)
    assert picture.size == (40, 30)
    drawn = np.asarray(picture)
    label_pixels = np.all(drawn == STYLES["tp"].rgb, axis=-1)
    assert label_pixels[y0:y1 + 1, x0:x1 + 1].mean() > 0.3    # the label's background


def test_labels_sit_above_the_box_or_inside_at_the_top_edge():
    above = _place_label("cat 0.90", np.array([50.0, 60, 90, 100]), (W, H), 10)
    assert above.rect[3] < 60 and above.rect[0] == 50 and above.text == "cat 0.90"
    inside = _place_label("cat 0.90", np.array([50.0, 0, 90, 40]), (W, H), 10)
    assert inside.rect[1] == 0
    right = _place_label("cat 0.90 IoU 0.88", np.array([150.0, 60, 159, 100]), (W, H), 10)
    assert right.rect[2] < W
    taken = _place_label("cat 0.90", np.array([50.0, 60, 90, 100]), (W, H), 10,
                         taken=[above.rect])
    assert taken.rect[1] == 60     # the spot above is taken: inside the top instead
    assert _place_label("cat", np.array([0.0, 0, 5, 2]), (40, 3), 8) is None   # 3 px high


def test_label_text_names_reason_score_and_iou():
    dataset, dt = scene([(DOG, [100, 70, 140, 110])], [(CAT, [100, 72, 140, 112], 0.5)])
    from deteval.viz.draw import _items
    items = _items(dataset, dt, match_outcomes(dataset, dt), 0, frozenset(STYLES))
    texts = sorted(item.text for item in items)
    assert texts == ["FN dog", "cls cat 0.50 (dog IoU 0.90)"]


# --------------------------------------------------------------------------------------
# Modes, sizes, the input left alone
# --------------------------------------------------------------------------------------


def _luminance(rgb) -> int:
    return Image.new("RGB", (1, 1), rgb).convert("L").getpixel((0, 0))


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "LA", "P", "I;16", "I", "F", "1",
                                  "CMYK"])
def test_modes_sizes_and_the_input_unchanged(mode):
    dataset, dt = scene(*FOUND)
    rng = np.random.default_rng(0)
    base = Image.fromarray(rng.integers(0, 256, (H, W, 3), dtype=np.uint8), "RGB")
    if mode == "I;16":
        image = Image.fromarray(rng.integers(0, 65536, (H, W), dtype=np.uint16))
    elif mode == "P":
        image = base.quantize(colors=16)
    else:
        image = base.convert(mode)
    before = image.tobytes()
    picture = draw_matches(image, dataset, dt, 0, line_width=2)
    assert image.tobytes() == before and image.mode == mode
    assert picture.mode == mode and picture.size == image.size
    assert picture is not image
    edge = (20, 40)
    tp = STYLES["tp"].rgb
    expected = {"RGB": tp, "RGBA": (*tp, 255), "L": _luminance(tp), "I;16": _luminance(tp) * 257,
                "I": _luminance(tp), "F": float(_luminance(tp))}
    if mode in expected:
        assert picture.getpixel(edge) == expected[mode]
    if mode == "P":
        assert picture.convert("RGB").getpixel(edge) == pytest.approx(tp, abs=12)


def test_palette_colours_are_kept_when_few():
    dataset, dt = scene(*FOUND)
    image = grey().quantize(colors=4)
    picture = draw_matches(image, dataset, dt, 0, labels=False, line_width=2)
    assert picture.mode == "P" and picture.convert("RGB").getpixel((20, 40)) == STYLES["tp"].rgb


def test_numpy_images_are_accepted():
    dataset, dt = scene(*FOUND)
    array = np.full((H, W, 3), 128, np.uint8)
    picture = draw_matches(array, dataset, dt, 0, labels=False)
    assert picture.size == (W, H) and picture.getpixel((20, 40)) == STYLES["tp"].rgb
    assert (array == 128).all()


def test_line_width_and_font_grow_with_the_image():
    dataset, dt = scene([(CAT, [100, 100, 400, 400])], [(CAT, [100, 100, 400, 400], 0.9)],
                        size=(1000, 800))
    picture = draw_matches(grey((1000, 800)), dataset, dt, 0, labels=False)
    row = np.all(np.asarray(picture)[100:120, 250] == STYLES["tp"].rgb, axis=-1)
    assert row.sum() == 3     # round(800 / 250)


@pytest.mark.parametrize("size", [(400, 300), (3200, 2400)])
def test_labels_keep_their_size_relative_to_the_image(size):
    """The label's height is about the same fraction of the image on a small and a large
    picture (min(w, h) / 32 px of font), so it stays legible when a large image is shown
    shrunk to a screen."""
    w, h = size
    k = w / 400
    box = [50 * k, 100 * k, 300 * k, 250 * k]
    dataset, dt = scene([(CAT, box)], [(CAT, box, 0.9)], size=size)
    picture = np.asarray(draw_matches(grey(size), dataset, dt, 0))
    # The label's background: the rows above the box with TP-coloured pixels in its left part.
    left = picture[:int(box[1]), int(box[0]):int(box[0] + 40 * k)]
    label_rows = np.all(left == STYLES["tp"].rgb, axis=-1).any(axis=1)
    label_height = int(label_rows.sum())
    assert 0.03 * h <= label_height <= 0.06 * h, label_height


# --------------------------------------------------------------------------------------
# Styles and legend
# --------------------------------------------------------------------------------------


def test_styles_are_okabe_ito_and_distinct():
    rgbs = [s.rgb for s in STYLES.values()]
    assert len(set(rgbs)) == len(rgbs) and set(rgbs) <= OKABE_ITO
    assert {s.dash for s in STYLES.values()} == {"solid", "dashed", "dotted"}
    assert STYLES["tp"].dash == "solid" and STYLES["ignored"].dash == "dotted"
    assert STYLES["tp"].hex == "#009e73"
    with pytest.raises(TypeError):
        STYLES["tp"] = STYLES["fn"]


def test_legend_entries():
    entries = legend()
    assert [e["key"] for e in entries] == ["tp", "duplicate", "wrong_class", "localization",
                                           "background", "fn", "ignored"]
    assert all(e["colour"] == STYLES[e["key"]].hex for e in entries)
    assert [e["key"] for e in legend(["fp"])] == ["duplicate", "wrong_class", "localization",
                                                  "background"]
    assert len(legend(SHOW_CHOICES)) == len(STYLES)
    assert set(DEFAULT_SHOW) <= set(SHOW_CHOICES)


# --------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, error, message", [
    (lambda ds, dt: draw_matches(grey(), ds, dt, 0, show=["misses"]), ValueError,
     "show must name outcomes"),
    (lambda ds, dt: draw_matches(grey(), ds, dt, 0, show=3), TypeError, "show must be"),
    (lambda ds, dt: draw_matches(grey(), ds, dt, 0, line_width=0), ValueError,
     "line_width must be a positive integer"),
    (lambda ds, dt: draw_matches(grey(), ds, dt, 0, font_size=2.5), TypeError,
     "font_size must be a positive integer"),
    (lambda ds, dt: draw_matches(grey(), ds, dt, 1), IndexError, "image_index must be in"),
    (lambda ds, dt: draw_matches("seven.png", ds, dt, 0), TypeError, "image must be"),
    (lambda ds, dt: draw_matches(grey(), ds.gt, dt, 0), TypeError, "gt must be a deteval"),
    (lambda ds, dt: draw_matches(grey(), ds, dt, 0, outcomes={}), TypeError,
     "outcomes must be"),
    (lambda ds, dt: draw_matches(grey(), ds, dt, 0, outcomes=match_outcomes(ds, dt[:0])),
     ValueError, "outcomes were computed for 0 detections"),
    (lambda ds, dt: write_drawings(ds, dt, ".", ".", limit=0), ValueError,
     "limit must be a positive integer"),
])
def test_bad_input(call, error, message):
    dataset, dt = scene(*FOUND)
    with pytest.raises(error, match=message):
        call(dataset, dt)


# --------------------------------------------------------------------------------------
# write_drawings
# --------------------------------------------------------------------------------------


def folder_scene(tmp_path: Path):
    """Five images: 0 fine (1 error), 1 missing, 2 unreadable, 3 wrong size (2 errors),
    4 fine without errors, 5 without a file name."""
    names = ["a.png", "missing.png", "broken.jpg", "sub/wrong.png", "clean.png", ""]
    images_dir = tmp_path / "images"
    (images_dir / "sub").mkdir(parents=True)
    for name, size in (("a.png", (W, H)), ("sub/wrong.png", (W + 10, H)),
                       ("clean.png", (W, H))):
        grey(size).save(images_dir / name)
    (images_dir / "broken.jpg").write_bytes(b"not a jpeg at all")
    objects = [(0, CAT, TP_BOX), (3, DOG, [10, 10, 40, 40]), (4, CAT, TP_BOX)]
    detections = [(0, CAT, [100, 70, 140, 110], 0.5), (3, CAT, [100, 70, 140, 110], 0.5),
                  (4, CAT, TP_BOX, 0.9), (1, CAT, TP_BOX, 0.4)]
    gt = GroundTruth(image_index=[o[0] for o in objects], category_index=[o[1] for o in objects],
                     boxes=[o[2] for o in objects])
    dataset = Dataset(Images(ids=[10, 11, 12, 13, 14, 15], widths=[W] * 6, heights=[H] * 6,
                             file_names=names),
                      Categories(ids=[1, 2], names=("cat", "dog")), gt)
    dt = Detections(image_index=[d[0] for d in detections],
                    category_index=[d[1] for d in detections],
                    boxes=[d[2] for d in detections], scores=[d[3] for d in detections])
    return dataset, dt, images_dir


def test_write_drawings_reports_in_drawing_order(tmp_path):
    """Images are read ahead in a background thread: problems and progress still come in
    drawing order, from the caller's thread, and a problem's warning points at the caller."""
    import threading

    dataset, dt, images_dir = folder_scene(tmp_path)
    events = []
    paths = write_drawings(
        dataset, dt, images_dir, tmp_path / "out",
        on_problem=lambda path, message: events.append(
            ("problem", path and Path(path).name, threading.current_thread())),
        progress=lambda done, total, name: events.append(
            ("progress", name, threading.current_thread())))
    assert {thread for *_, thread in events} == {threading.current_thread()}
    assert [(kind, what) for kind, what, _ in events] == [
        ("progress", "a.png"),
        ("problem", "missing.png"), ("progress", "missing.png"),
        ("problem", "broken.jpg"), ("progress", "broken.jpg"),
        ("problem", "wrong.png"), ("progress", "sub/wrong.png"),
        ("progress", "clean.png"),
        ("problem", None), ("progress", "image id 15")]
    assert len(paths) == 3
    with pytest.warns(FormatWarning) as caught:
        write_drawings(dataset, dt, images_dir, tmp_path / "again")
    assert {Path(w.filename).name for w in caught} == {Path(__file__).name}


def test_write_drawings_reports_problems_and_skips(tmp_path):
    dataset, dt, images_dir = folder_scene(tmp_path)
    out_dir = tmp_path / "out"
    with pytest.warns(FormatWarning) as caught:
        paths = write_drawings(dataset, dt, images_dir, out_dir)
    messages = [str(w.message) for w in caught]
    assert any("missing.png" in m and "not found; skipped" in m for m in messages)
    assert any("broken.jpg" in m and "cannot read image" in m for m in messages)
    assert any("wrong.png" in m and "170x120" in m and "160x120" in m for m in messages)
    assert any("image id 15 has no file name" in m for m in messages)
    assert len(messages) == 4
    # Ranked in drawing order (the skipped images keep their rank).
    assert paths == [out_dir / "001_a.png", out_dir / "sub" / "004_wrong.png",
                     out_dir / "005_clean.png"]
    for path, size in zip(paths, [(W, H), (W + 10, H), (W, H)]):
        with Image.open(path) as written:
            assert written.size == size and written.format == "PNG"
    with Image.open(out_dir / "001_a.png") as written:
        assert written.convert("RGB").getpixel((20, 21)) == STYLES["fn"].rgb   # a dash


def test_write_drawings_on_problem_and_order(tmp_path):
    dataset, dt, images_dir = folder_scene(tmp_path)
    problems = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paths = write_drawings(dataset, dt, images_dir, tmp_path / "out", only_errors=True,
                               on_problem=lambda path, message: problems.append((path, message)))
    # Errors: image 3 has 2 (a background FP, a missed dog), 0 and 1 have 1 each.
    outcomes = match_outcomes(dataset, dt)
    assert outcomes.errors_per_image.tolist() == [2, 1, 0, 2, 0, 0]
    assert select_images(outcomes, only_errors=True).tolist() == [0, 3, 1]
    assert select_images(outcomes, limit=2).tolist() == [0, 3]
    assert select_images(outcomes).tolist() == list(range(6))
    assert [p.name for p in paths] == ["001_a.png", "002_wrong.png"]
    assert [p for p, _ in problems] == [images_dir / "sub" / "wrong.png",
                                        images_dir / "missing.png"]
    limited = write_drawings(dataset, dt, images_dir, tmp_path / "out2", limit=1,
                             on_problem=lambda *a: None, outcomes=outcomes)
    assert [p.name for p in limited] == ["001_a.png"]


def test_write_drawings_never_overwrites_the_images(tmp_path):
    images_dir = tmp_path / "images"
    images_dir.mkdir()
    grey().save(images_dir / "x.png")
    before = (images_dir / "x.png").read_bytes()
    dataset, dt = scene(*FOUND)
    dataset = Dataset(Images(ids=[7], widths=[W], heights=[H], file_names=["x.png"]),
                      dataset.categories, dataset.gt)
    with pytest.raises(ValueError, match="the output folder .* is the images folder"):
        write_drawings(dataset, dt, images_dir, images_dir)
    with pytest.raises(ValueError, match="is the images folder"):
        write_drawings(dataset, dt, images_dir, images_dir / "." / "")
    # Named with a folder ("images/x.png") that is not under images_dir, the image is found
    # by its base name; written under the parent, its drawing would be the image itself.
    nested = Dataset(Images(ids=[7], widths=[W], heights=[H], file_names=["images/x.png"]),
                     dataset.categories, dataset.gt)
    with pytest.raises(ValueError, match="would replace the image itself"):
        write_drawings(nested, dt, images_dir, tmp_path, rank=False)
    assert (images_dir / "x.png").read_bytes() == before
    # a run that drew nothing leaves nothing (no manifest either)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["images", "x.png"]


def test_write_drawings_reports_progress(tmp_path):
    dataset, dt, images_dir = folder_scene(tmp_path)
    calls = []
    paths = write_drawings(dataset, dt, images_dir, tmp_path / "out", only_errors=True,
                           on_problem=lambda *a: None, progress=lambda *a: calls.append(a))
    # One call per chosen image, drawn or skipped (missing.png), in drawing order.
    assert calls == [(1, 3, "a.png"), (2, 3, "sub/wrong.png"), (3, 3, "missing.png")]
    assert len(paths) == 2


def test_write_drawings_keeps_names_apart(tmp_path):
    images_dir = tmp_path / "images"
    images_dir.mkdir()
    grey().save(images_dir / "x.png")
    dataset = Dataset(Images(ids=[1, 2], widths=[W, W], heights=[H, H],
                             file_names=["x.png", "x.png"]),
                      Categories(ids=[1]), GroundTruth(image_index=[], category_index=[],
                                                       boxes=[]))
    dt = Detections(image_index=[], category_index=[], boxes=[], scores=[])
    paths = write_drawings(dataset, dt, images_dir, tmp_path / "out", rank=False)
    assert [p.name for p in paths] == ["x.png", "x-2.png"]
    ranked = write_drawings(dataset, dt, images_dir, tmp_path / "out")   # replaces them
    assert [p.name for p in ranked] == ["001_x.png", "002_x.png"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        ".deteval-draw.json", "001_x.png", "002_x.png", "contact_sheet.jpg", "key.png"]


def test_voc_sample_end_to_end(voc_sample_dir, tmp_path):
    dataset = deteval.read_gt(voc_sample_dir / "gts" / "pascalvoc_format")
    dt = deteval.read_detections(voc_sample_dir / "dets" / "coco_format" / "coco_dets.json",
                                 dataset)
    outcomes = match_outcomes(dataset, dt)
    paths = write_drawings(dataset, dt, voc_sample_dir / "images", tmp_path, only_errors=True,
                           limit=3, outcomes=outcomes, format="png")   # exact colours
    worst = outcomes.images_by_errors(limit=3)
    assert [p.name for p in paths] == [
        f"{n:03d}_{Path(dataset.images.file_names[i]).stem}.png"
        for n, i in enumerate(worst.tolist(), start=1)]
    for path, i in zip(paths, worst.tolist()):
        with Image.open(path) as drawn, \
                Image.open(voc_sample_dir / "images" / dataset.images.file_names[i]) as source:
            assert drawn.size == source.size and drawn.mode == source.mode
            packed = np.asarray(drawn.convert("RGB")).reshape(-1, 3).astype(np.int64) @ [
                65536, 256, 1]
            present = {(v >> 16, (v >> 8) & 255, v & 255) for v in np.unique(packed).tolist()}
            counts = outcomes.counts(image_index=i)
            if counts["background"]:
                assert STYLES["background"].rgb in present
            if counts["tp"]:
                assert STYLES["tp"].rgb in present


# --------------------------------------------------------------------------------------
# Keypoints, the key, crowded labels, the output folder
# --------------------------------------------------------------------------------------


def person(x0: float, y0: float) -> np.ndarray:
    """17 COCO joints (x, y, v=2) on a 40 x 60 figure at (x0, y0): shoulders 5, 6 are
    40 px apart on one row, the others spread below them."""
    points = np.zeros((17, 3))
    points[:, 2] = 2
    points[:5, :2] = [[x0 + 20, y0 + 4], [x0 + 16, y0 + 2], [x0 + 24, y0 + 2],
                      [x0 + 12, y0 + 4], [x0 + 28, y0 + 4]]
    points[5:, 0] = np.tile([x0, x0 + 40], 6)
    points[5:, 1] = y0 + np.repeat([12, 22, 32, 40, 50, 60], 2)
    return points


def test_keypoints_skeleton_and_joints_within_the_oks_tolerance():
    gt_points = person(20, 20)
    dt_points = gt_points.copy()
    dt_points[0, :2] += 15   # the nose: far outside its tolerance
    box = [20, 20, 60, 80]
    dataset, dt = scene([(CAT, box)], [(CAT, box, 0.9)],
                        gt={"keypoints": [gt_points], "num_keypoints": [17]},
                        dt={"keypoints": [dt_points]})
    picture = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=2)
    tp, bad = STYLES["tp"].rgb, STYLES["background"].rgb
    # The edge between the shoulders (5, 6), midway: the outcome's colour.
    assert picture.getpixel((40, 32)) == tp
    # Joints: dots in the TP colour within tolerance, the nose in the background colour.
    assert picture.getpixel((20, 42)) == tp              # joint 7, exact
    assert picture.getpixel((55, 39)) == bad             # the nose, moved to (55, 39)
    assert picture.getpixel((40, 50)) == GREY            # between, nothing
    within = joint_within(dt_points, gt_points, 40 * 60, np.full(17, 0.05), KEYPOINT_THRESHOLD)
    assert within.tolist() == [False] + [True] * 16
    # The threshold: exp(-d^2 / (2 s^2 k^2)) >= t.
    d2 = 15 ** 2 * 2
    term = np.exp(-d2 / (2 * 2400 * (2 * 0.05) ** 2))
    assert joint_within(dt_points, gt_points, 2400, np.full(17, 0.05), term)[0]
    assert not joint_within(dt_points, gt_points, 2400, np.full(17, 0.05), term * 1.01)[0]


def test_a_missed_person_is_drawn_dashed_with_its_skeleton():
    points = person(60, 30)
    points[16, 2] = 0   # an unlabelled joint: no dot, no edge
    dataset, dt = scene([(DOG, [60, 30, 100, 90])], [], gt={"keypoints": [points],
                                                           "num_keypoints": [16]})
    picture = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=1)
    edge = colours(picture, [(x, 42) for x in range(64, 97)])   # shoulders 5-6 at y 42
    assert set(edge) == {STYLES["fn"].rgb, GREY} and edge.count(GREY) > 3
    assert picture.getpixel((100, 90)) == GREY   # joint 16 (unlabelled) is not drawn
    # A custom skeleton for the category (id 2): only its edges.
    custom = draw_matches(grey(), dataset, dt, 0, labels=False, line_width=1,
                          skeleton={2: [(7, 8)]})
    assert set(colours(custom, [(x, 42) for x in range(64, 97)])) == {GREY}
    assert STYLES["fn"].rgb in colours(custom, [(x, 52) for x in range(64, 97)])


def test_the_key_has_an_entry_for_each_outcome_shown():
    shown = ["tp", "fn", "background"]
    key = draw_legend(shown, font_size=16)
    rows = legend(shown)
    assert [e["key"] for e in rows] == ["tp", "background", "fn"]
    pixels = {key.getpixel((x, 16 + 24 * n)) for n in range(3) for x in range(8, 12)}
    assert {STYLES[k].rgb for k in ("tp", "background", "fn")} <= pixels
    everything = {c for _, c in draw_legend(SHOW_CHOICES).getcolors(maxcolors=1 << 16)}
    assert {s.rgb for s in STYLES.values()} <= everything


def test_labels_in_a_crowd_do_not_overlap():
    boxes = [np.array([40.0 + 3 * i, 40 + 2 * i, 100 + 3 * i, 90 + 2 * i]) for i in range(6)]
    taken = np.empty((0, 4), dtype=np.int64)
    for b in boxes:
        label = _place_label("cat 0.90 IoU 0.75", b, (W, H), 10, taken=taken)
        taken = np.vstack([taken, label.rect])
    for i in range(len(taken)):
        for j in range(i):
            a, b = taken[i], taken[j]
            assert not (a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3])


def test_write_drawings_writes_the_key_and_a_contact_sheet(tmp_path):
    dataset, dt, images_dir = folder_scene(tmp_path)
    out = tmp_path / "out"
    paths = write_drawings(dataset, dt, images_dir, out, on_problem=lambda *a: None,
                           show=["tp", "fn"], by_errors=True, contact_sheet=2)
    assert [p.name for p in paths] == ["001_a.png", "002_wrong.png", "005_clean.png"]
    with Image.open(out / "key.png") as key:
        assert np.array_equal(np.asarray(key), np.asarray(draw_legend(["tp", "fn"])))
    with Image.open(out / "contact_sheet.jpg") as sheet:
        assert sheet.format == "JPEG" and sheet.width > sheet.height   # two cells, one row


def test_a_forged_manifest_deletes_nothing_outside_the_folder(tmp_path):
    dataset, dt, images_dir = folder_scene(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    stamp = [victim.stat().st_size, victim.stat().st_mtime_ns]
    (out / "link.txt").symlink_to(victim)
    (out / ".deteval-draw.json").write_text(json.dumps({"files": [
        {"path": "../victim.txt", "stamp": stamp}, {"path": str(victim), "stamp": stamp},
        {"path": "link.txt", "stamp": stamp}, "garbage"]}))
    write_drawings(dataset, dt, images_dir, out, on_problem=lambda *a: None)
    assert victim.read_text() == "keep me" and (out / "link.txt").is_symlink()
