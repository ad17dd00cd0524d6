"""deteval.masks against pycocotools' own RLE routines, on seeded random masks."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pycocotools.mask as mask_utils
import pytest
from cocogen import assert_parity, run_pycocotools
from maskgen import compress, encode_number, read_as_pycocotools

import deteval
from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.masks import (
    compressed_areas,
    compressed_masks,
    decode_counts,
    mask_area,
    mask_bound_area,
    mask_iou_bound,
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
    import deteval.masks.rle

    monkeypatch.setattr(deteval.masks.rle, "_CHUNK", int([50, 400, 5000, 120_000, 7, 1][seed]))
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
    import deteval.masks.pair_iou

    monkeypatch.setattr(deteval.masks.pair_iou, "_BATCH_MASKS",
                        int([5, 20, 160, 10_000][seed]))
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



@pytest.mark.parametrize("threads", [2, 3])
def test_chunks_on_threads_give_one_thread_s_result_and_first_error(threads, monkeypatch):
    """compressed_areas decodes its chunks on threads: areas, boxes and flags equal one
    thread's (and pycocotools' area and toBbox); with two malformed strings in different
    chunks, the error names the first, as one thread does."""
    import deteval.masks.rle

    monkeypatch.setattr(deteval.masks.rle, "_CHUNK", 40)
    rles = random_rles(12, n=120)[0]
    strings, sizes = [r["counts"] for r in rles], np.array([r["size"] for r in rles])
    one = compressed_areas(strings, sizes, boxes=True, unbounded=True, threads=1)
    many = compressed_areas(strings, sizes, boxes=True, unbounded=True, threads=threads)
    for a, b in zip(one, many, strict=True):
        assert np.array_equal(a, b)
    assert one[0].tolist() == [int(mask_utils.area(r)) for r in rles]
    assert np.array_equal(one[1], np.asarray(mask_utils.toBbox(rles), dtype=np.float64))
    broken = list(strings)
    broken[40], broken[100] = broken[40] + b"0", b"x" + broken[100]
    messages = []
    for n in (1, threads):
        with pytest.raises(FormatError) as err:
            compressed_areas(broken, sizes, threads=n, labels=lambda i: f"results[{i}]")
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "results[40]" in messages[0]


def test_the_chunk_size_patched_in_the_rle_module_sets_what_each_decode_reads(monkeypatch):
    """``deteval.masks.rle._CHUNK`` (which the chunk-boundary tests patch) is what the string
    check reads: a 1-character chunk decodes each non-empty string alone, a large one all at
    once; the areas are pycocotools' either way."""
    import deteval.masks.rle

    decode, calls = deteval.masks.rle.decode_counts, []

    def counting(strings, **options):
        calls.append(len(strings))
        return decode(strings, **options)

    monkeypatch.setattr(deteval.masks.rle, "decode_counts", counting)
    rles = random_rles(11, n=20)[0]
    strings, sizes = [r["counts"] for r in rles], np.array([r["size"] for r in rles])
    expected = [int(mask_utils.area(r)) for r in rles]
    for chunk, sizes_read in [(1, [1] * 20), (10**9, [20])]:
        monkeypatch.setattr(deteval.masks.rle, "_CHUNK", chunk)
        calls.clear()
        assert compressed_areas(strings, sizes).tolist() == expected
        assert calls == sizes_read


@pytest.mark.parametrize("routines", [False, True])
def test_the_batch_size_and_routines_patched_in_pair_iou_are_the_ones_used(monkeypatch,
                                                                           routines):
    """``deteval.masks.pair_iou`` calls its own ``mask_api`` (or, where they load, its own
    ``c_routines``) and reads its own ``_BATCH_MASKS`` (which the batching tests patch):
    four images of four sizes share one call with a large batch and take one each with a
    batch of 1 mask, on both paths."""
    from maskgen import count_iou_calls

    import deteval.masks.pair_iou

    calls = count_iou_calls(monkeypatch, routines)
    rng = np.random.default_rng(5)
    masks, image = [], []
    for k, (h, w) in enumerate([(5, 6), (6, 5), (7, 7), (3, 9)]):
        for _ in range(2):
            bitmap = (rng.random((h, w)) < 0.5).astype(np.uint8)
            masks.append(mask_utils.encode(np.asfortranarray(bitmap)))
            image.append(k)
    rles = np.empty(len(masks), dtype=object)
    rles[:] = masks
    image = np.array(image)
    pair_dt, pair_gt = (a.ravel() for a in np.meshgrid(np.arange(8), np.arange(8),
                                                        indexing="ij"))
    same = image[pair_dt] == image[pair_gt]
    pair_dt, pair_gt = pair_dt[same], pair_gt[same]
    crowd = np.zeros(8, dtype=bool)
    alone = [float(np.asarray(mask_utils.iou([masks[d]], [masks[g]], [0]))[0, 0])
             for d, g in zip(pair_dt, pair_gt)]
    for batch, expected_calls in [(10**6, [(8, 8)]), (1, [(2, 2)] * 4)]:
        monkeypatch.setattr(deteval.masks.pair_iou, "_BATCH_MASKS", batch)
        calls.clear()
        got = pair_mask_iou(rles, rles, pair_dt, pair_gt, crowd, image_of_dt=image)
        assert got.tolist() == alone
        assert sorted(call[:2] for call in calls) == expected_calls


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


# =============================================================================================
# Moved from test_review_segm_fixes.py:
#
# Review of 01d6a0f (segm fixes: the bound vs rleIou's early stop, empty chunks, 7-character
# negative numbers, masks of 2**32+ pixels, overflowing integers, lone surrogates).
#
# Differential tests against pycocotools 2.0.11. rleIou walks both run lists with 32-bit
# unsigned counters; its loop condition is ``ct = ca + cb`` (uint). It stops early when
# both masks sit at an empty run at once (the case 01d6a0f covers with NaN areas) and also
# when ``ca + cb`` wraps to exactly 2**32, which masks of more than 2**31 pixels allow
# (01d6a0f accepted masks up to 2**32 - 1 pixels with a finite bound); since fixed: such
# masks get a NaN ``mask_area`` too, and the tests below keep it so.
#
# Large masks are never rasterised: pycocotools' area, toBbox, iou and COCOeval read them
# from compressed strings without allocating ``h * w``.
# =============================================================================================


def _one_image(h: int, w: int, counts: str, *, area: float, crowd: int = 0) -> dict:
    return {"images": [{"id": 1, "height": h, "width": w}],
            "categories": [{"id": 1, "name": "a"}],
            "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": crowd,
                             "area": area, "bbox": [0, 0, 1, 1],
                             "segmentation": {"size": [h, w], "counts": counts}}]}


def _result(counts: str, size: list[int], score: float = 0.9) -> dict:
    return {"image_id": 1, "category_id": 1, "score": score,
            "segmentation": {"size": list(size), "counts": counts}}


def _iou(dt: dict, gt: dict, crowd: int = 0) -> float:
    return float(np.asarray(mask_utils.iou([dt], [gt], [crowd]))[0, 0])


# A pair of 65535 x 65537 masks (2**32 - 1 pixels). Both start with the same 10 pixels;
# then dt has a background run of 3 * 2**30 and gt one of 2**30: after the common prefix
# rleIou's ct = ca + cb = 2**32 wraps to 0 and the loop stops with i = u = 10, so
# pycocotools' IoU is 1.0, while the true IoU (and deteval's bound) is about 1/3.
_H, _W = 65535, 65537
_N = _H * _W
_PREFIX = 10
_DT_RUNS = [0, _PREFIX, 3 * 2**30, _N - _PREFIX - 3 * 2**30]
_GT_RUNS = [0, _PREFIX, 2**30, _N - _PREFIX - 2**30]


def _overflow_pair() -> tuple[dict, dict]:
    return ({"size": [_H, _W], "counts": compress(_DT_RUNS)},
            {"size": [_H, _W], "counts": compress(_GT_RUNS)})


# ---------------------------------------------------------------------------------------------
# Defect: rleIou's uint ct = ca + cb wraps to 0 for masks of more than 2**31 pixels
# ---------------------------------------------------------------------------------------------


def test_overflow_pair_is_what_the_tests_below_assume():
    dt, gt = _overflow_pair()
    assert _N < 2**32                                 # accepted by 01d6a0f's size check
    assert _iou(dt, gt) == 1.0                       # pycocotools: prefix only
    areas = compressed_areas([dt["counts"], gt["counts"]], [[_H, _W]] * 2)
    i = _PREFIX + int(_DT_RUNS[3])
    assert areas.tolist() == [_PREFIX + _DT_RUNS[3], _PREFIX + _GT_RUNS[3]]
    assert abs(i / (areas.sum() - i) - 1 / 3) < 1e-6  # the true IoU
    # Neither mask has an empty run after its first; their size alone makes the area NaN.
    assert np.isnan(mask_bound_area([dt, gt])).all()


@pytest.mark.parametrize("boxes", [False, True])
def test_bound_covers_uint_wrap_of_ct(boxes):
    """Was wrong: mask_iou_bound / mask_area: rleIou's loop counter ct = ca + cb is a
    uint32 and wraps to 0 when the two remaining runs add up to 2**32 (masks of more than
    2**31 pixels, which 01d6a0f accepts), so pycocotools counts only a prefix and returns
    1.0 here; the bound (true i/u, 1/3) is below it and the pair would be skipped"""
    dt, gt = _overflow_pair()
    area = mask_bound_area([dt, gt])
    xywh = np.asarray(mask_utils.toBbox([dt, gt]), dtype=np.float64) if boxes else None
    bound = mask_iou_bound(area[:1], area[1:], np.array([False]),
                           None if xywh is None else xywh[:1],
                           None if xywh is None else xywh[1:])
    assert bound[0] >= _iou(dt, gt)


@pytest.mark.parametrize("source", ["dict", "file", "no-mask-area"])
@pytest.mark.parametrize("dt_box", [False, True])
def test_parity_when_ct_wraps(source, dt_box, tmp_path):
    """Was wrong: end to end: the pair above is skipped by the bound (deteval AP 0) while
    COCOeval matches it at every threshold (AP 1.0); rleIou's ct wraps for masks of more
    than 2**31 pixels"""
    dt, gt = _overflow_pair()
    gt_json = _one_image(_H, _W, gt["counts"].decode(), area=float(_N - 2**30))
    results = [_result(dt["counts"].decode(), [_H, _W])]
    if dt_box:
        results[0]["bbox"] = [0.0, 0.0, float(_W), float(_H)]
    reference = run_pycocotools(gt_json, results, iou_type="segm")
    assert reference.stats[0] > 0.99                  # matched at every threshold
    if source == "file":
        gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
        gt_path.write_text(json.dumps(gt_json))
        dt_path.write_text(json.dumps(results))
        result = deteval.evaluate_coco(gt_path, dt_path, iou_type="segm")
    elif source == "dict":
        result = deteval.evaluate_coco(gt_json, results, iou_type="segm")
    else:
        dataset = read_coco_gt(gt_json, iou_type="segm")
        dataset = dataclasses.replace(dataset, gt=dataset.gt.replace(masks=dataset.gt.masks))
        assert dataset.gt.mask_area is None
        detections = read_coco_results(results, dataset, iou_type="segm")
        result = deteval.evaluate_coco(dataset, detections, iou_type="segm")
    assert_parity(result, reference)


def test_at_most_2_to_the_31_pixels_ct_cannot_wrap_above_the_true_iou():
    """With 2**31 pixels, the only wrap is at the very start (both masks [0, 2**31]): the
    routine then returns 0, below the true IoU, which the bound allows."""
    h, w = 2**15, 2**16
    full = {"size": [h, w], "counts": compress([0, h * w])}
    assert _iou(full, full) == 0.0                   # true IoU 1.0
    area = mask_bound_area([full])
    assert mask_iou_bound(area, area, np.array([False]))[0] == 1.0


# ---------------------------------------------------------------------------------------------
# The NaN rule for empty runs, brute force against rleIou on small masks
# ---------------------------------------------------------------------------------------------


def _random_runs(rng: np.random.Generator, total: int) -> list[int]:
    cuts = np.sort(rng.integers(0, total + 1, int(rng.integers(0, 6))))
    runs = np.diff(np.r_[0, cuts, total]).tolist()
    for _ in range(int(rng.integers(0, 3))):         # zero runs: first, inside, trailing
        at = int(rng.choice([0, len(runs), int(rng.integers(0, len(runs) + 1))]))
        runs[at:at] = [0] * int(rng.integers(1, 3))
    return runs


@pytest.mark.parametrize("seed", range(3))
def test_bound_is_never_below_rleiou_with_unbounded_anywhere(seed):
    """Every pair of small masks with empty runs at the start, inside or at the end (one
    mask at its end while the other still has empty runs): pycocotools' IoU never exceeds
    mask_iou_bound from the readers' columns (NaN areas, toBbox boxes), crowd or not."""
    rng = np.random.default_rng(seed)
    h, w = 3, 2
    masks = [{"size": [h, w], "counts": compress(_random_runs(rng, h * w))}
             for _ in range(60)]
    strings = [m["counts"] for m in masks]
    pixels, xywh, empty = compressed_areas(strings, [[h, w]] * len(masks), boxes=True,
                                           unbounded=True)
    np.testing.assert_array_equal(xywh, np.asarray(mask_utils.toBbox(masks)))
    area = np.where(empty, np.nan, pixels.astype(np.float64))
    np.testing.assert_array_equal(area, mask_bound_area(masks))
    for crowd in (0, 1):
        iou = np.asarray(mask_utils.iou(masks, masks, [crowd] * len(masks)))  # [dt, gt]
        d, g = np.meshgrid(np.arange(len(masks)), np.arange(len(masks)), indexing="ij")
        d, g = d.ravel(), g.ravel()
        bound = mask_iou_bound(area[d], area[g], np.full(len(d), bool(crowd)), xywh[d],
                               xywh[g])
        assert (iou.ravel() <= bound).all()
        # and the bound is exact (no NaN needed) for masks without inner empty runs
        plain = ~empty[d] & ~empty[g]
        true_ok = iou.ravel()[plain] <= mask_iou_bound(pixels[d][plain].astype(float),
                                                       pixels[g][plain].astype(float),
                                                       np.full(plain.sum(), bool(crowd)))
        assert true_ok.all()


def test_uncompressed_runs_get_the_same_flags_as_compressed():
    runs = [[0, 2, 0, 4], [3, 3, 0], [0, 6], [6], [2, 0, 0, 4], [0, 0, 6]]
    compressed = [{"size": [3, 2], "counts": compress(r)} for r in runs]
    plain = [{"size": [3, 2], "counts": r} for r in runs]
    _, a1, e1 = masks_from_segmentations(compressed, heights=[3] * 6, widths=[2] * 6,
                                         with_area=True, with_unbounded=True)
    _, a2, e2 = masks_from_segmentations(plain, heights=[3] * 6, widths=[2] * 6,
                                         with_area=True, with_unbounded=True)
    assert e1.tolist() == e2.tolist() == [True, True, False, False, True, True]
    assert a1.tolist() == a2.tolist() == [int(mask_utils.area(m)) for m in compressed]


def test_return_shapes_of_masks_from_segmentations_and_compressed_areas():
    seg = [{"size": [3, 2], "counts": compress([0, 2, 0, 4])}, [[0, 0, 1, 0, 1, 2]]]
    kw = {"heights": [3, 3], "widths": [2, 2]}
    assert isinstance(masks_from_segmentations(seg, **kw), np.ndarray)
    out, area = masks_from_segmentations(seg, **kw, with_area=True)
    assert area.dtype == np.int64
    out, flags = masks_from_segmentations(seg, **kw, with_unbounded=True)
    assert flags.tolist() == [True, False]           # polygons never have an empty run
    out, area, flags = masks_from_segmentations(seg, **kw, with_area=True,
                                                with_unbounded=True)
    assert area.tolist() == mask_utils.area(list(out)).tolist()
    strings = [b"0:", b"06"]
    assert isinstance(compressed_areas(strings, [[2, 5], [2, 3]]), np.ndarray)
    assert len(compressed_areas(strings, [[2, 5], [2, 3]], boxes=True)) == 2
    assert len(compressed_areas(strings, [[2, 5], [2, 3]], unbounded=True)) == 2
    assert len(compressed_areas(strings, [[2, 5], [2, 3]], boxes=True, unbounded=True)) == 3


# ---------------------------------------------------------------------------------------------
# 7-character numbers: deteval accepts exactly what pycocotools reads consistently
# ---------------------------------------------------------------------------------------------


def _pycocotools_runs(numbers: list[tuple[int, int]]) -> list[int]:
    """rleFrString on numbers (value, characters), as compiled for x86: a negative
    7-character number becomes (x & 7) - 8; runs are uint32."""
    runs: list[int] = []
    for m, (v, k) in enumerate(numbers):
        if k == 7 and v < 0:
            v = (v & 7) - 8
        runs.append((v + (runs[m - 2] if m > 2 else 0)) % 2**32)
    return runs


def test_seven_character_numbers_accepted_iff_pycocotools_reads_runs_that_add_up():
    rng = np.random.default_rng(11)
    accepted = 0
    for _ in range(800):
        h, w = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        numbers, parts = [], []
        for _ in range(int(rng.integers(1, 6))):
            if rng.random() < 0.35:
                v = int(rng.integers(-40, 40)) - (2**30 if rng.random() < 0.5 else 0)
                s = encode_number(v, 7)
                if len(s) != 7:
                    v = int(rng.integers(-8, 8))
                    s = encode_number(v, 7)
            else:
                v = int(rng.integers(-2, h * w + 1))
                s = encode_number(v)
            numbers.append((v, len(s)))
            parts.append(s)
        string = b"".join(parts)
        consistent = sum(_pycocotools_runs(numbers)) == h * w
        try:
            area = int(compressed_areas([string], [[h, w]])[0])
        except FormatError:
            assert not consistent, string
            continue
        accepted += 1
        assert consistent, string
        rle = {"size": [h, w], "counts": string}
        assert area == int(mask_utils.area(rle))
        np.testing.assert_array_equal(compressed_areas([string], [[h, w]], boxes=True)[1],
                                      np.asarray(mask_utils.toBbox([rle])))
    assert accepted > 20


# ---------------------------------------------------------------------------------------------
# Bad input: FormatErrors naming the record, never a traceback
# ---------------------------------------------------------------------------------------------

_GOOD = compress([2, 3, 7]).decode()
_HUGE = [2**63, 2**64, -2**63 - 1, 10**30]


def _read_both(gt: dict, results: list[dict], tmp_path: Path) -> None:
    for form in ("dict", "file"):
        if form == "file":
            (tmp_path / "g.json").write_text(json.dumps(gt))
            (tmp_path / "r.json").write_text(json.dumps(results))
            g, r = tmp_path / "g.json", tmp_path / "r.json"
        else:
            g, r = copy.deepcopy(gt), copy.deepcopy(results)
        try:
            dataset = read_coco_gt(g, iou_type="segm")
            read_coco_results(r, dataset, iou_type="segm")
        except FormatError:
            pass


@pytest.mark.parametrize("value", _HUGE)
def test_huge_integers_anywhere_are_format_errors_or_accepted(value, tmp_path):
    base_gt = _one_image(4, 3, _GOOD, area=3.0)
    base_res = [_result(_GOOD, [4, 3])]
    gt_paths = [("annotations", 0, "segmentation", "size", 0),
                ("annotations", 0, "segmentation", "size", 1), ("images", 0, "height"),
                ("images", 0, "width"), ("annotations", 0, "area"),
                ("annotations", 0, "iscrowd"), ("annotations", 0, "id"),
                ("annotations", 0, "category_id"), ("annotations", 0, "image_id"),
                ("annotations", 0, "bbox", 2), ("categories", 0, "id"), ("images", 0, "id"),
                ("annotations", 0, "segmentation", "counts")]
    res_paths = [(0, "segmentation", "size", 0), (0, "segmentation", "size", 1),
                 (0, "image_id"), (0, "category_id"), (0, "score"), (0, "id"),
                 (0, "segmentation", "counts")]
    def changed(base, path):
        copied = node = copy.deepcopy(base)
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = [value, 3] if path[-1] == "counts" else value
        return copied

    for path in gt_paths:
        _read_both(changed(base_gt, path), base_res, tmp_path)
    for path in res_paths:
        _read_both(base_gt, changed(base_res, path), tmp_path)


@pytest.mark.parametrize("where", ["gt", "results", "results-with-box"])
def test_lone_surrogates_name_the_record(where, tmp_path):
    gt = _one_image(4, 3, _GOOD, area=3.0)
    results = [_result(_GOOD, [4, 3])]
    if where == "gt":
        gt["annotations"][0]["segmentation"]["counts"] = _GOOD + "\ud800"
        record = r"annotations\[0\]"
    else:
        results[0]["segmentation"]["counts"] = "\udfff" + _GOOD
        if where == "results-with-box":
            results[0]["bbox"] = [0.0, 0.0, 1.0, 1.0]
        record = r"results\[0\]"
    with pytest.raises(FormatError, match=record):
        read_coco_results(results, read_coco_gt(gt, iou_type="segm"), iou_type="segm")
    # In a file, the JSON reader refuses the lone surrogate itself (naming the file).
    (tmp_path / "g.json").write_text(json.dumps(gt))
    (tmp_path / "r.json").write_text(json.dumps(results))
    with pytest.raises(FormatError, match=r"\.json"):
        read_coco_results(tmp_path / "r.json", read_coco_gt(tmp_path / "g.json",
                                                            iou_type="segm"), iou_type="segm")


@pytest.mark.parametrize("size", [(65536, 65536), (2**32, 1), (1, 2**32), (2**40, 0)])
def test_too_large_polygon_image_is_a_format_error(size):
    h, w = size
    gt = _one_image(h, w, _GOOD, area=3.0)
    gt["annotations"][0]["segmentation"] = [[0, 0, 10, 0, 10, 10]]
    with pytest.raises(FormatError, match=r"annotations\[0\].*too large"):
        read_coco_gt(gt, iou_type="segm")


def test_2_to_the_32_minus_one_pixels_still_read_as_pycocotools():
    """The largest accepted mask: area and toBbox as pycocotools."""
    dt, gt = _overflow_pair()
    strings = [dt["counts"], gt["counts"]]
    pixels, xywh = compressed_areas(strings, [[_H, _W]] * 2, boxes=True)
    assert pixels.tolist() == mask_utils.area([dt, gt]).tolist()
    np.testing.assert_array_equal(xywh, np.asarray(mask_utils.toBbox([dt, gt])))
    with pytest.raises(FormatError, match="too large"):
        compressed_areas([compress([0, 2**32])], [[65536, 65536]])


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


@pytest.mark.parametrize(("height", "width", "message"), [
    (np.nan, 10.0, "needs its image's 'height' and 'width'"),
    (10.0, np.inf, "needs its image's 'height' and 'width'"),
    (10.5, 10.0, "whole numbers of pixels >= 0; the image is 10.5x10"),
    (10.0, -1.0, "whole numbers of pixels >= 0; the image is 10x-1"),
    # (pycocotools writes runs beyond such a mask, and merging two parts hangs or crashes)
    (10.0, 0.0, "the image is 10x0 .h x w.: it has no pixels"),
    (0.0, 0.0, "the image is 0x0 .h x w.: it has no pixels"),
    (65536.0, 65536.0, "mask size 65536x65536 .h x w. is too large"),
    (2.0**32, 1.0, "is too large"),
])
def test_polygons_on_images_that_cannot_be_rasterised_are_refused_in_record_order(
        height, width, message):
    """The image checks run for all objects at once; the error is still the first record's:
    a bad image after a malformed value names the value, before it names the image."""
    triangle = [[0.0, 0.0, 5.0, 0.0, 5.0, 5.0]]
    bad_value = {"size": [10, 10]}                        # an RLE without 'counts'
    heights, widths = [10.0, height, 10.0], [10.0, width, 10.0]
    records = ["first", "second", "third"]
    with pytest.raises(FormatError, match=message) as caught:
        masks_from_segmentations([triangle, triangle, bad_value], heights=heights,
                                 widths=widths, records=records)
    assert caught.value.record == "second"
    with pytest.raises(FormatError, match="must be a list of polygons or an RLE") as caught:
        masks_from_segmentations([bad_value, triangle, triangle], heights=heights[::-1],
                                 widths=widths[::-1], records=records)
    assert caught.value.record == "first"
    # The same image carrying an RLE (no rasterising) is not refused for it.
    rle = {"size": [10, 10], "counts": [100]}
    masks = masks_from_segmentations([triangle, rle], heights=[10.0, height],
                                     widths=[10.0, width], check_size=False)
    assert len(masks) == 2
