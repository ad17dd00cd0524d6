"""deteval.masks against pycocotools' own RLE routines, on seeded random masks."""

from __future__ import annotations

import re

import numpy as np
import pycocotools.mask as mask_utils
import pytest
from maskgen import compress, read_as_pycocotools

from deteval.errors import FormatError
from deteval.masks import (
    compressed_areas,
    compressed_masks,
    decode_counts,
    mask_area,
    mask_xywh,
    masks_from_segmentations,
    pair_mask_iou,
)


def random_runs(rng, h: int, w: int) -> list[int]:
    """Run lengths adding up to h * w, with zero-length runs and long runs mixed in."""
    runs, left = [], h * w
    while left > 0:
        size = int(min(left, rng.choice([0, 1, 2, int(rng.integers(0, h * w + 1))])))
        runs.append(size)
        left -= size
    if rng.random() < 0.3:
        runs.append(0)
    return runs


def random_rles(seed: int, n: int = 300) -> tuple[list[dict], list[list[int]]]:
    rng = np.random.default_rng(seed)
    rles, runs = [], []
    for _ in range(n):
        h, w = (int(v) for v in rng.integers(1, 70, 2))
        if rng.random() < 0.5:
            r = random_runs(rng, h, w)
            rle = mask_utils.frPyObjects({"size": [h, w], "counts": r}, h, w)
        else:
            bitmap = (rng.random((h, w)) < rng.random()).astype(np.uint8)
            rle = mask_utils.encode(np.asfortranarray(bitmap))
            flat = bitmap.ravel(order="F")
            edges = np.flatnonzero(np.diff(flat)) + 1
            bounds = np.r_[0, edges, flat.size]
            r = np.diff(bounds).tolist()
            if flat[0] == 1:
                r = [0, *r]
        rles.append(rle)
        runs.append(r)
    return rles, runs


@pytest.mark.parametrize("seed", range(6))
def test_decoding_gives_the_runs_pycocotools_encoded(seed):
    rles, runs = random_rles(seed)
    counts, offsets = decode_counts([r["counts"] for r in rles])
    for i, expected in enumerate(runs):
        assert counts[offsets[i]:offsets[i + 1]].tolist() == expected


@pytest.mark.parametrize("seed", range(6))
def test_areas_and_boxes_equal_pycocotools(seed):
    rles, _ = random_rles(100 + seed)
    sizes = np.array([r["size"] for r in rles])
    masks, areas = compressed_masks([r["counts"] for r in rles], sizes)
    assert areas.tolist() == [int(mask_utils.area(r)) for r in rles]
    assert np.array_equal(mask_area(masks), areas)
    assert np.array_equal(mask_xywh(masks), np.array([mask_utils.toBbox(r) for r in rles]))




@pytest.mark.parametrize("seed", range(3))
def test_long_numbers_and_large_masks_decode_as_pycocotools(seed):
    """Runs up to 2**31 need numbers of up to 7 characters, of either sign. Numbers of up to
    6 characters and positive ones of 7 are read exactly; pycocotools misreads negative
    7-character numbers (``(x & 7) - 8``), and deteval reads them alike, so the masks are
    the reference's; a run that then falls outside [0, 2**32) is refused."""
    rng = np.random.default_rng(50 + seed)
    runs = [[int(v) for v in rng.integers(0, 2 ** int(rng.integers(1, 32)), int(k))]
            for k in rng.integers(1, 12, 400)]
    strings = [compress(r) for r in runs]
    assert compress([0, 5, 3, 2]) == mask_utils.frPyObjects(
        {"size": [10, 1], "counts": [0, 5, 3, 2]}, 10, 1)["counts"]
    assert max(map(len, strings)) > 30 and any(b"\x7f" > s[-1:] >= b"@" for s in strings)
    strings.append(compress([-(2**30) - int(rng.integers(0, 2**20)), 5]))  # crafted: -8 + x&7
    read = [read_as_pycocotools(s) for s in strings]
    assert sum(r != e for r, e in zip(read, runs)) >= 5          # the misreading happens
    valid = [all(0 <= v < 2**32 for v in r) for r in read]
    assert 0 < sum(valid) < len(valid)
    for string, ok in zip(strings, valid):
        if not ok:
            with pytest.raises(FormatError, match="decodes to a run length"):
                decode_counts([string])
    kept = [s for s, ok in zip(strings, valid) if ok]
    expected_runs = [r for r, ok in zip(read, valid) if ok]
    counts, offsets = decode_counts(kept)
    for i, expected in enumerate(expected_runs):
        assert counts[offsets[i]:offsets[i + 1]].tolist() == expected
    sizes = np.array([[sum(r), 1] for r in expected_runs])
    fits = sizes[:, 0] < 2**32
    areas = compressed_masks([s for s, f in zip(kept, fits) if f], sizes[fits])[1].tolist()
    assert areas == [sum(r[1::2]) for r, f in zip(expected_runs, fits) if f]
    for r, f in zip(expected_runs, fits):
        if f and sum(r) < 2**31:
            rle = {"size": [sum(r), 1], "counts": compress(r)}
            assert int(mask_utils.area(rle)) == sum(r[1::2])


@pytest.mark.parametrize("seed", range(6))
def test_boxes_from_the_runs_equal_tobbox(seed, monkeypatch):
    """Random runs with empty ones (pycocotools 2.0.11 skips a pair whose foreground run is
    empty, and leaves unsigned leftovers when no pair has pixels), bitmaps, runs crossing
    into the next column, empty and full masks; across chunk boundaries."""
    import deteval.masks

    monkeypatch.setattr(deteval.masks, "_CHUNK", int([50, 400, 5000, 120_000, 7, 1][seed]))
    rng = np.random.default_rng(300 + seed)
    rles = random_rles(400 + seed, n=250)[0]
    for _ in range(150):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        bitmap = np.zeros((h, w), dtype=np.uint8)
        kind = rng.integers(0, 4)
        if kind == 0:
            bitmap[rng.integers(0, h):, rng.integers(0, w)] = 1   # to the bottom ...
            bitmap[:rng.integers(1, h + 1), rng.integers(0, w)] = 1  # ... and from the top
        elif kind == 1:
            bitmap[:] = 1
        elif kind == 2:
            y, x = rng.integers(0, h), rng.integers(0, w)
            bitmap[y:y + rng.integers(1, h + 1), x:x + rng.integers(1, w + 1)] = 1
        rles.append(mask_utils.encode(np.asfortranarray(bitmap)))
    for runs, (h, w) in [([0, 0, 12], (3, 4)), ([12, 0], (3, 4)), ([5, 0, 7], (3, 4)),
                         ([0, 12], (3, 4)), ([3, 0, 0, 9], (3, 4)), ([12], (3, 4)),
                         ([3, 0, 9], (3, 4)), ([0, 3, 0, 0, 9], (3, 4)), ([12, 0, 0], (1, 12))]:
        rles.append(mask_utils.frPyObjects({"size": [h, w], "counts": runs}, h, w))
    order = rng.permutation(len(rles))
    rles = [rles[i] for i in order]
    sizes = np.array([r["size"] for r in rles])
    areas, xywh = compressed_areas([r["counts"] for r in rles], sizes, boxes=True)
    assert np.array_equal(xywh, np.asarray(mask_utils.toBbox(rles)).reshape(-1, 4))
    assert areas.tolist() == [int(mask_utils.area(r)) for r in rles]
    assert (xywh[:, 2] > 2**31).any()       # the unsigned leftovers were exercised


def test_empty_strings_and_chunks_are_handled():
    rles, runs = random_rles(7, n=4500)           # more than two chunks
    strings = [r["counts"] for r in rles]
    strings.insert(3, b"")
    counts, offsets = decode_counts(strings)
    assert offsets[4] == offsets[3]
    sizes = np.array([r["size"] for r in rles])
    _, areas = compressed_masks([r["counts"] for r in rles], sizes)
    assert areas.tolist() == [sum(r[1::2]) for r in runs]


@pytest.mark.parametrize("seed", range(4))
def test_pair_iou_equals_the_full_matrix_of_pycocotools(seed):
    rng = np.random.default_rng(seed)
    h, w = 30, 40
    bitmaps = [(rng.random((h, w)) < rng.uniform(0.05, 0.6)).astype(np.uint8)
               for _ in range(24)]
    rles = np.empty(24, dtype=object)
    rles[:] = [mask_utils.encode(np.asfortranarray(b)) for b in bitmaps]
    dt, gt = rles[:14], rles[14:]
    crowd = rng.random(10) < 0.3
    image = rng.integers(0, 3, 14)
    pair_dt = np.repeat(np.arange(14), 10)
    pair_gt = np.tile(np.arange(10), 14)
    got = pair_mask_iou(dt, gt, pair_dt, pair_gt, crowd, image_of_dt=image,
                        group=rng.integers(0, 4, len(pair_dt)))
    expected = np.asarray(mask_utils.iou(list(dt), list(gt), crowd.astype(np.uint8)))
    assert np.array_equal(got, expected[pair_dt, pair_gt])


@pytest.mark.parametrize("seed", range(4))
def test_batched_calls_give_each_pair_its_own_value(seed, monkeypatch):
    """Groups of one size share calls (one group per size and call); groups with masks of
    several sizes have their own; every pair gets what a call on that pair alone gives."""
    import deteval.masks

    monkeypatch.setattr(deteval.masks, "_BATCH_MASKS", int([5, 20, 160, 10_000][seed]))
    rng = np.random.default_rng(seed)
    sizes = [(12, 9), (9, 12), (12, 9), (20, 20), (12, 9), (7, 30)]   # repeated sizes
    dts, gts, dt_image, gt_image = [], [], [], []
    for image, (h, w) in enumerate(sizes):
        for _ in range(int(rng.integers(1, 9))):
            bitmap = (rng.random((h, w)) < rng.uniform(0.05, 0.8)).astype(np.uint8)
            dts.append(mask_utils.encode(np.asfortranarray(bitmap)))
            dt_image.append(image)
        for _ in range(int(rng.integers(1, 5))):
            if rng.random() < 0.15:          # a wrong-size object: its pairs give -1 or 0
                hh, ww = sizes[(image + 3) % len(sizes)]
                bitmap = np.ones((hh, ww), dtype=np.uint8)
            else:
                bitmap = (rng.random((h, w)) < rng.uniform(0.05, 0.8)).astype(np.uint8)
            gts.append(mask_utils.encode(np.asfortranarray(bitmap)))
            gt_image.append(image)
    gts.append(mask_utils.encode(np.ones((20, 20, 1), dtype=np.uint8, order="F"))[0])
    gt_image.append(0)                      # surely one: a full 20x20 object on a 12x9 image
    dt_masks, gt_masks = np.empty(len(dts), object), np.empty(len(gts), object)
    dt_masks[:], gt_masks[:] = dts, gts
    dt_image, gt_image = np.array(dt_image), np.array(gt_image)
    crowd = rng.random(len(gts)) < 0.3
    pair_dt, pair_gt = (a.ravel() for a in np.meshgrid(np.arange(len(dts)),
                                                        np.arange(len(gts)), indexing="ij"))
    same = dt_image[pair_dt] == gt_image[pair_gt]
    pair_dt, pair_gt = pair_dt[same], pair_gt[same]
    group = dt_image[pair_dt] * 3 + rng.integers(0, 3, len(pair_dt))
    got = pair_mask_iou(dt_masks, gt_masks, pair_dt, pair_gt, crowd, image_of_dt=dt_image,
                        group=group)
    alone = [float(np.asarray(mask_utils.iou([dts[d]], [gts[g]], [int(crowd[g])]))[0, 0])
             for d, g in zip(pair_dt, pair_gt)]
    assert got.tolist() == alone
    assert (got == -1).any() and (got > 0).any()


def test_polygons_rasterise_as_pycocotools_and_merge_parts():
    square = [0, 0, 10, 0, 10, 10, 0, 10]
    far = [20, 20, 30, 20, 30, 25]
    masks, areas = masks_from_segmentations([[square, far], [square]], heights=[32, 32],
                                            widths=[40, 40], with_area=True)
    reference = mask_utils.merge(mask_utils.frPyObjects([square, far], 32, 40))
    assert masks[0]["counts"] == reference["counts"]
    assert areas.tolist() == [int(mask_utils.area(reference)), 100]


@pytest.mark.parametrize(("strings", "message"), [
    ([b"0::0", b"0:x"], "outside '0'..'o'"),
    ([b"0:"], None),                                    # runs do not add up: checked by size
    ([b"0h"], "middle of a number"),
    ([b"0" + b"h" * 8 + b"0"], "more than 7"),
    ([b"10@"], "run length of -16"),
])
def test_malformed_strings_name_the_mask(strings, message):
    if message is None:
        with pytest.raises(FormatError, match=r"mask 0: RLE run lengths add up to 10 pixels; "
                                              r"a 4x5 mask needs 20"):
            compressed_masks(strings, np.array([[4, 5]]))
        return
    with pytest.raises(FormatError, match=message) as error:
        decode_counts(strings, source="dt.json", records=["results[0]", "results[1]"])
    assert str(error.value).startswith("dt.json: results[")


def test_str_strings_decode_as_bytes_do():
    rles, runs = random_rles(11, n=200)
    text = [r["counts"].decode("ascii") for r in rles]
    assert all(np.array_equal(a, b) for a, b in zip(decode_counts(text),
                                                    decode_counts([r["counts"] for r in rles])))
    text[150] = text[150][:3] + "é" + text[150][3:]
    with pytest.raises(FormatError, match=r"^dt.json: mask 150: .*non-ASCII"):
        decode_counts(text, source="dt.json")


# --------------------------------------------------------------------------------------------
# Polygons far outside their image (issue 19: a segfault and 15.7 GB in pycocotools' frPoly)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("polygon", "axis", "value"), [
    ([0, 2147483956, 2147483884, 0, 0, 0], "y", "2147483956.0"),     # crashed frPoly
    ([0, 0, 1e8, 0, 1e8, 1e8, 0, 1e8], "x", "100000000.0"),          # 21.8 s, 15.7 GB
    ([0, 0, 10, 0, 10, 10, -1200, 5], "x", "-1200.0"),
])
def test_polygons_far_outside_their_image_are_refused_naming_the_record(polygon, axis, value):
    with pytest.raises(FormatError, match=(
            rf"^dt.json: results\[1\]: polygon 1 has {axis} = {re.escape(value)}, far "
            r"outside its 80x100 \(h x w\) image: coordinates must lie within")):
        masks_from_segmentations([[[0, 0, 5, 0, 5, 5]], [[1, 1, 4, 1, 4, 4], polygon]],
                                 heights=[80, 80], widths=[100, 100], source="dt.json",
                                 records=["results[0]", "results[1]"])


def test_polygons_partly_outside_their_image_rasterise_as_pycocotools():
    # Within the image widened by its larger side (at least 1024 pixels): accepted, and the
    # mask is pycocotools' own.
    polygon = [-900.0, -50.0, 1100.0, 40.0, 60.0, 1000.0, 3.5, 7.25]
    masks = masks_from_segmentations([[polygon]], heights=[80], widths=[100])
    reference = mask_utils.frPyObjects([polygon], 80, 100)[0]
    assert masks[0]["counts"] == reference["counts"]
    big = [-2900.0, 0.0, 5999.0, 0.0, 0.0, 4999.0]
    masks = masks_from_segmentations([[big]], heights=[2000], widths=[3000])
    assert masks[0]["counts"] == mask_utils.frPyObjects([big], 2000, 3000)[0]["counts"]
