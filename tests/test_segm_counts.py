"""The segm reading and batching work checked against pycocotools 2.0.11 (review of the segm
speed work): ``decode_counts`` (numbers of 1 to 7 characters, either sign, redundant groups,
zero-length runs anywhere, str and bytes, tiny chunks), the run boxes of
``compressed_areas(..., boxes=True)``, ``mask_iou_bound`` with the readers' mask columns,
the batched ``pair_mask_iou`` calls (many images of one size, groups with masks of two sizes,
tiny batches) and the typed segm results reader, each against pycocotools' own ``area`` /
``toBbox`` / ``merge`` / ``COCOeval``; and the defects the review found, fixed (each test
names what was wrong). Masks of more than 2**29 pixels are never rasterised here:
pycocotools reads them from strings written by ``maskgen.compress``."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cocogen import assert_parity, run_pycocotools
from maskgen import compress, make_segm_dataset, mask_result, one_mask_gt
from pycocotools import mask as mask_utils

import deteval
import deteval.masks.pair_iou
import deteval.masks.rle
from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.masks import compressed_areas, decode_counts, mask_iou_bound


def reference(gt, results, **params):
    return run_pycocotools(gt, results, iou_type="segm", **params)


def _random_runs(rng: np.random.Generator, total: int) -> list[int]:
    """Runs adding up to ``total``, with zero-length runs anywhere (also first and last)."""
    if total == 0:
        return [0] * int(rng.choice([0, 0, 1, 2, 3, 4]))
    cuts = np.sort(rng.integers(0, total + 1, int(rng.integers(0, 12))))
    runs = np.diff(np.r_[0, cuts, total]).tolist()
    for _ in range(int(rng.integers(0, 3))):
        at = int(rng.integers(0, len(runs) + 1))
        runs[at:at] = [0] * int(rng.integers(1, 3))
    return runs


def _rle(size: list[int], counts: str | bytes) -> dict:
    return {"size": list(size), "counts": counts.encode() if isinstance(counts, str) else counts}


def _write(tmp_path: Path, gt: dict, results: list[dict]) -> tuple[Path, Path]:
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(results))
    return gt_path, dt_path


def _segm(gt, results, **params):
    return deteval.evaluate_coco(gt, results, iou_type="segm", **params)


def _loadres_areas(gt: dict, results: list[dict]) -> list[float]:
    """The ``area`` pycocotools' loadRes gives each result."""
    import contextlib
    import io

    from pycocotools.coco import COCO

    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = copy.deepcopy(gt)
        coco.createIndex()
        loaded = coco.loadRes(copy.deepcopy(results))
    return [float(loaded.anns[i]["area"]) for i in sorted(loaded.anns)]


def _result_areas(tmp_path: Path, gt: dict, results: list[dict]) -> list[list[float] | None]:
    """The results' ``area`` as deteval reads them from a file and from the list (None for
    a FormatError, from either reader)."""
    gt_path, dt_path = _write(tmp_path, gt, results)
    out = []
    for source in (dt_path, results):
        try:
            dataset = read_coco_gt(gt_path, iou_type="segm")
            out.append(read_coco_results(source, dataset, iou_type="segm").area.tolist())
        except FormatError:
            out.append(None)
    return out


# ---------------------------------------------------------------------------------------------
# decode_counts and _run_boxes against pycocotools' own reading of the strings
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 3, 64, 120_000])
def test_decoded_runs_areas_and_boxes_equal_pycocotools(chunk, monkeypatch):
    """Random runs (zero-length ones anywhere, a trailing zero run, 0xN and Nx0 masks, masks
    of up to 2**29 pixels: numbers of 1 to 6 characters of either sign), canonical strings
    and strings with redundant groups, str and bytes, chunk boundaries everywhere: the runs
    are pycocotools' (its ``merge`` of one mask re-encodes the runs it read), and so are the
    areas and the ``toBbox`` boxes."""
    monkeypatch.setattr(deteval.masks.rle, "_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    sizes, strings, runs_of = [], [], []
    while len(strings) < 300:
        h, w = (int(v) for v in rng.integers(0, 25, 2))
        if rng.random() < 0.1:
            h, w = int(rng.integers(1, 2**15)), int(rng.integers(1, 2**14))
        runs = _random_runs(rng, h * w)
        sizes.append([h, w])
        runs_of.append(runs)
        strings.append(compress(runs, rng=rng if rng.random() < 0.5 else None))
    rles = [_rle(size, s) for size, s in zip(sizes, strings)]
    expected_area = [int(mask_utils.area(r)) for r in rles]
    expected_box = np.array([mask_utils.toBbox(r) for r in rles]).reshape(-1, 4)
    for text in (False, True):
        given = [s.decode() for s in strings] if text else strings
        counts, offsets = decode_counts(given)
        for i, runs in enumerate(runs_of):
            decoded = counts[offsets[i]:offsets[i + 1]].tolist()
            assert decoded == runs
            if runs and sizes[i][0] * sizes[i][1] < 2**24:
                # pycocotools' encoder writes one byte past its buffer when every number
                # has 6 characters: only re-encode masks whose numbers are shorter
                assert compress(decoded) == mask_utils.merge([rles[i]])["counts"]
        areas, xywh = compressed_areas(given, np.array(sizes), boxes=True)
        assert areas.tolist() == expected_area
        assert np.array_equal(xywh, expected_box)


def test_seven_character_numbers_pycocotools_reads_exactly():
    """Masks of 2**29 to 2**32 pixels: runs and positive differences of 7 characters.
    (pycocotools misreads *negative* 7-character numbers: see the review section below.)"""
    rng = np.random.default_rng(3)
    sizes, strings = [], []
    while len(strings) < 120:
        h = max(1, int(rng.integers(1, 2**31)) >> int(rng.integers(0, 20)))
        w = int(rng.integers(1, max(2, (2**32 - 1) // h)))
        runs = np.diff(np.r_[0, np.sort(rng.integers(0, h * w + 1, int(rng.integers(1, 8)))),
                             h * w]).tolist()
        stored = [r - runs[i - 2] if i > 2 else r for i, r in enumerate(runs)]
        if max(runs) >= 2**32 or min(stored) < -2**29 or max(stored) < 2**29:
            continue
        sizes.append([h, w])
        strings.append(compress(runs))
    assert max(map(len, strings)) >= 7
    areas, xywh = compressed_areas(strings, np.array(sizes), boxes=True)
    rles = [_rle(size, s) for size, s in zip(sizes, strings)]
    assert areas.tolist() == [int(mask_utils.area(r)) for r in rles]
    assert np.array_equal(xywh, np.array([mask_utils.toBbox(r) for r in rles]).reshape(-1, 4))


_GOOD = "0<"       # 4x3, all foreground


@pytest.mark.parametrize(("bad", "message"), [
    ("0<p", "outside '0'..'o'"),
    ("0<é", "non-ASCII"),
    ("0P", "ends in the middle of a number"),
    ("0" + "P" * 7 + "0", "more than 7 characters"),
    ("0<O", "run length of -1"),
    ("0;", "add up to 11 pixels"),
])
@pytest.mark.parametrize("chunk", [1, 5, 120_000])
def test_malformed_results_name_the_file_and_record_in_any_chunk(bad, message, chunk,
                                                                 monkeypatch, tmp_path):
    """The typed reader's strings, checked chunk by chunk, name the right record."""
    monkeypatch.setattr(deteval.masks.rle, "_CHUNK", chunk)
    gt = one_mask_gt(4, 3, _GOOD)
    results = [mask_result(_GOOD, [4, 3]) for _ in range(9)]
    results[6] = mask_result(bad, [4, 3])
    gt_path, dt_path = _write(tmp_path, gt, results)
    dataset = read_coco_gt(gt_path, iou_type="segm")
    with pytest.raises(FormatError, match=message) as error:
        read_coco_results(dt_path, dataset, iou_type="segm")
    assert str(error.value).startswith(f"{dt_path}: results[6]: ")


# ---------------------------------------------------------------------------------------------
# The evaluation against COCOeval: batching, the bound, thresholds, readers and hand-made data
# ---------------------------------------------------------------------------------------------

_SAME_SIZE = [(23, 31)] * 9 + [(31, 23)] * 3 + [(12, 9), (9, 12)]


@pytest.mark.parametrize(("seed", "batch", "bbox_mode", "params", "routines"), [
    (0, 3, "none", {}, False),
    (1, 160, "all", {"iou_thresholds": [0.0]}, True),  # IoU-0 pairs can match: no skipping
    (2, 1, "later", {"iou_thresholds": [1e-12, 0.5]}, False),
    (3, 7, "none", {"iou_thresholds": [0.5, 0.75, 1.0]}, True),
    (4, 2, "later", {"iou_thresholds": [1.0]}, True),
    (5, 5, "none", {"use_categories": False}, False),
    (6, 7, "none", {}, False),
    (7, 3, "all", {}, True),
])
def test_parity_with_many_images_of_one_size(seed, batch, bbox_mode, params, routines,
                                             monkeypatch, tmp_path):
    """Many (image, category) groups of one mask size share RLE calls; crowds, results with
    boxes, without, and with boxes on some ("later": loadRes ignores them), str and bytes
    counts (in memory), tiny batches: COCOeval's arrays, from files (the typed reader) and
    from dicts (the general reader), through ``maskUtils.iou`` and through the C routines
    (``routines``: ``rleIou`` without the GIL)."""
    from maskgen import count_iou_calls

    monkeypatch.setattr(deteval.masks.pair_iou, "_BATCH_MASKS", batch)
    calls = count_iou_calls(monkeypatch, routines)
    gt, results = make_segm_dataset(900 + seed, image_sizes=_SAME_SIZE, n_categories=3,
                                    p_crowd=0.35, p_many=0.05, bbox_mode=bbox_mode)
    reference = run_pycocotools(gt, results, iou_type="segm", **params)
    gt_path, dt_path = _write(tmp_path, gt, results)
    assert_parity(_segm(gt_path, dt_path, **params), reference)
    bytes_results = [{**r, "segmentation": _rle(r["segmentation"]["size"],
                                                r["segmentation"]["counts"])}
                     if i % 2 else r for i, r in enumerate(results)]
    assert_parity(_segm(gt, bytes_results, **params), reference)
    assert calls                   # the patched routines were the ones called
    if batch >= 7:   # several groups (of distinct sizes) did share a call
        assert max(len(sizes) for _, _, sizes in calls) > 1


def _strip_sizes_and_mix(gt: dict, results: list[dict], rng: np.random.Generator):
    """The GT as compressed RLE (the reader's own masks), images without height and width,
    and some GT and result masks replaced by masks of other sizes."""
    dataset = read_coco_gt(gt, iou_type="segm")
    gt = copy.deepcopy(gt)
    results = copy.deepcopy(results)
    for record, mask in zip(gt["annotations"], dataset.gt.masks):
        record["segmentation"] = {"size": list(mask["size"]), "counts": mask["counts"].decode()}
    for record in gt["annotations"] + results:
        if rng.random() < 0.25:
            h, w = (int(v) for v in rng.choice([(15, 11), (11, 15), (6, 4)]))
            bitmap = (rng.random((h, w)) < rng.uniform(0.2, 1.0)).astype(np.uint8)
            counts = mask_utils.encode(np.asfortranarray(bitmap))["counts"].decode()
            record["segmentation"] = {"size": [h, w], "counts": counts}
    sized = copy.deepcopy(gt)
    for image in gt["images"]:
        del image["height"], image["width"]
    for image in sized["images"]:           # pycocotools' annToRLE reads them, then ignores
        image["height"], image["width"] = 1, 1
    return gt, sized, results


@pytest.mark.parametrize("seed", range(3))
def test_images_without_size_give_groups_of_mixed_sizes(seed, monkeypatch, tmp_path):
    """Without image sizes the readers take masks of any size: groups then mix sizes (a call
    of their own), pairs of two sizes get -1 or 0; the readers' mask columns are on."""
    monkeypatch.setattr(deteval.masks.pair_iou, "_BATCH_MASKS", [2, 20, 160][seed])
    rng = np.random.default_rng(70 + seed)
    gt, results = make_segm_dataset(1700 + seed, image_sizes=[(15, 11)] * 6 + [(11, 15)] * 3,
                                    p_crowd=0.3, n_categories=2, bbox_mode="none")
    bare, sized, results = _strip_sizes_and_mix(gt, results, rng)
    reference = run_pycocotools(sized, results, iou_type="segm")
    gt_path, dt_path = _write(tmp_path, bare, results)
    dataset = read_coco_gt(gt_path, iou_type="segm")
    detections = read_coco_results(dt_path, dataset, iou_type="segm")
    assert detections.mask_area is not None and detections.mask_xywh is not None
    assert len({tuple(m["size"]) for m in detections.masks}) > 2
    assert_parity(_segm(dataset, detections), reference)
    assert_parity(_segm(bare, results), reference)


def test_sliced_and_reordered_ground_truth_keeps_its_mask_columns():
    """``dataset.gt[rows]`` (a subset, in another order) carries ``mask_area`` and
    ``mask_xywh`` along: the same as pycocotools on the same annotations in that order."""
    gt, results = make_segm_dataset(1800, p_crowd=0.3, bbox_mode="none")
    dataset = read_coco_gt(gt, iou_type="segm")
    assert dataset.gt.mask_area is not None
    rows = np.array([i for i in range(len(gt["annotations"]))[::-1] if i % 3])
    subset = copy.deepcopy(gt)
    subset["annotations"] = [gt["annotations"][i] for i in rows]
    reference = run_pycocotools(subset, results, iou_type="segm")
    sliced = dataset.__class__(dataset.images, dataset.categories, dataset.gt[rows],
                               source=dataset.source)
    assert np.array_equal(sliced.gt.mask_area, dataset.gt.mask_area[rows])
    detections = read_coco_results(results, dataset, iou_type="segm")
    assert_parity(_segm(sliced, detections), reference)


@pytest.mark.parametrize("seed", range(3))
def test_zero_length_runs_in_the_results_keep_parity(seed, tmp_path):
    """Results whose strings hold zero-length runs (split runs, trailing zero runs; empty
    masks then get toBbox's unsigned leftovers) against canonical ground truth: areas, boxes,
    the bound and the IoUs stay pycocotools' (rleIou's early stop needs zero runs in both
    masks: see the review section below)."""
    rng = np.random.default_rng(seed)
    gt, results = make_segm_dataset(950 + seed, p_crowd=0.3, bbox_mode="none")
    for result in results:
        segmentation = result["segmentation"]
        h, w = segmentation["size"]
        counts, offsets = decode_counts([segmentation["counts"].encode()])
        runs = counts.tolist()
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(0, len(runs)))
            cut = int(rng.integers(0, runs[at] + 1))
            runs[at:at + 1] = [cut, 0, runs[at] - cut]
        if rng.random() < 0.5:
            runs += [0] * int(rng.integers(1, 3))
        assert sum(runs) == h * w
        segmentation["counts"] = compress(runs).decode()
    reference = run_pycocotools(gt, results, iou_type="segm")
    gt_path, dt_path = _write(tmp_path, gt, results)
    dataset = read_coco_gt(gt_path, iou_type="segm")
    detections = read_coco_results(dt_path, dataset, iou_type="segm")
    assert (detections.mask_xywh[:, 2] > 2**31).any()     # toBbox's unsigned leftovers
    assert_parity(_segm(dataset, detections), reference)
    assert_parity(_segm(gt, results), reference)


@pytest.mark.parametrize("columns", ["none", "area", "area+boxes"])
def test_hand_made_detections_with_and_without_mask_columns(columns):
    """Detections built by hand (masks with str and bytes counts, list and tuple sizes), with
    no mask columns, with correct ``mask_area`` only, or with ``mask_area`` and
    ``mask_xywh``; ``replace(masks=...)`` drops stale columns."""
    gt, results = make_segm_dataset(977, p_crowd=0.3, bbox_mode="all", n_categories=2)
    reference = run_pycocotools(gt, results, iou_type="segm")
    dataset = read_coco_gt(gt, iou_type="segm")
    read = read_coco_results(results, dataset, iou_type="segm")
    masks = np.empty(len(results), dtype=object)
    masks[:] = [{"size": tuple(r["segmentation"]["size"]), "counts": r["segmentation"]["counts"]}
                if i % 3 else _rle(r["segmentation"]["size"], r["segmentation"]["counts"])
                for i, r in enumerate(results)]
    rles = [_rle(m["size"], m["counts"]) for m in masks]
    hand = deteval.Detections(image_index=read.image_index, category_index=read.category_index,
                              boxes=read.boxes, scores=read.scores, area=read.area,
                              xywh=read.xywh, category_ids=read.category_ids, masks=masks)
    if columns != "none":
        area = np.array([float(mask_utils.area(r)) for r in rles])
        boxes = (np.array([mask_utils.toBbox(r) for r in rles]).reshape(-1, 4)
                 if columns == "area+boxes" else None)
        hand = hand.replace(mask_area=area, mask_xywh=boxes)
    assert_parity(_segm(dataset, hand), reference)
    stale = read.replace(masks=masks[::-1])
    assert stale.mask_area is None and stale.mask_xywh is None
    backwards = read[::-1]
    assert np.array_equal(backwards.mask_area, read.mask_area[::-1])
    assert [m["counts"] for m in backwards.masks] == [m["counts"] for m in read.masks[::-1]]


@pytest.mark.parametrize("seed", range(3))
def test_groups_with_masks_of_two_sizes(seed, monkeypatch):
    """Ground truth and results whose masks differ in size from their image (and so from
    other masks of their group): such pairs get -1 or 0 as in pycocotools, batched or not,
    with the bound on (correct mask columns) and off."""
    monkeypatch.setattr(deteval.masks.pair_iou, "_BATCH_MASKS", [2, 10, 160][seed])
    rng = np.random.default_rng(40 + seed)
    gt, results = make_segm_dataset(990 + seed, image_sizes=[(15, 11)] * 6 + [(11, 15)] * 2,
                                    bbox_mode="all", p_crowd=0.3, n_categories=2)
    odd_gt, odd_dt = copy.deepcopy(gt), copy.deepcopy(results)
    dataset = read_coco_gt(gt, iou_type="segm")
    detections = read_coco_results(results, dataset, iou_type="segm")
    assert dataset.gt.ids.tolist() == [a["id"] for a in gt["annotations"]]
    gt_masks, dt_masks = dataset.gt.masks.copy(), detections.masks.copy()
    for records, masks in ((odd_gt["annotations"], gt_masks), (odd_dt, dt_masks)):
        for i, record in enumerate(records):
            if rng.random() < 0.3:
                h, w = (int(v) for v in rng.choice([(15, 11), (11, 15), (6, 4)]))
                bitmap = (rng.random((h, w)) < rng.uniform(0.2, 1.0)).astype(np.uint8)
                rle = mask_utils.encode(np.asfortranarray(bitmap))
                record["segmentation"] = {"size": [h, w], "counts": rle["counts"].decode()}
                masks[i] = rle
    reference = run_pycocotools(odd_gt, odd_dt, iou_type="segm")
    assert len({m["size"][0] for m in gt_masks}) > 1 and len({m["size"][0] for m in dt_masks}) > 1
    odd = dataset.__class__(dataset.images, dataset.categories,
                            dataset.gt.replace(masks=gt_masks), source=dataset.source)
    bare = detections.replace(masks=dt_masks)
    assert_parity(_segm(odd, bare), reference)
    with_columns = bare.replace(
        mask_area=np.array([float(mask_utils.area(m)) for m in dt_masks]),
        mask_xywh=np.array([mask_utils.toBbox(m) for m in dt_masks]).reshape(-1, 4))
    assert_parity(_segm(odd, with_columns), reference)


# ---------------------------------------------------------------------------------------------
# Defects found in review, now fixed
# ---------------------------------------------------------------------------------------------


def test_bound_holds_when_both_masks_have_a_zero_run_at_one_place(tmp_path):
    """Was wrong: mask_iou_bound assumes pycocotools' value is the true i/u, but rleIou
    stops counting when both masks reach a zero-length run at the same pixel (ct == 0), so
    its value can exceed the bound: the pair is skipped (0) though pycocotools matches it
    (IoU 1.0)"""
    gt_counts = compress([0, 2, 0, 0, 8]).decode()      # 2 pixels, then a zero-length pair
    dt_counts = compress([0, 2, 0, 8]).decode()         # all 10 pixels
    gt = one_mask_gt(10, 1, gt_counts, area=2.0)
    results = [mask_result(dt_counts, [10, 1])]
    pycocotools_iou = float(np.asarray(mask_utils.iou(
        [_rle([10, 1], dt_counts)], [_rle([10, 1], gt_counts)], [0]))[0, 0])
    assert pycocotools_iou == 1.0                        # the true IoU is 0.2
    assert mask_iou_bound(np.array([10.0]), np.array([2.0]), np.array([False]))[0] == 0.2
    reference = run_pycocotools(gt, results, iou_type="segm")
    assert reference.stats[0] > 0.99                     # matched at every threshold
    gt_path, dt_path = _write(tmp_path, gt, results)
    assert_parity(_segm(gt_path, dt_path), reference)
    assert_parity(_segm(gt, results), reference)


@pytest.mark.parametrize("gt_form", ["compressed", "uncompressed", "no-mask-area", "crowd"])
@pytest.mark.parametrize("dt_box", [False, True])
def test_early_stop_pairs_in_every_form(gt_form, dt_box):
    """The early stop with the ground truth given as compressed or uncompressed RLE, built
    by hand without the readers' ``mask_area`` column, or a crowd; results with and
    without a box; among ordinary pairs that the bound does skip."""
    rng = np.random.default_rng(7)
    gt = one_mask_gt(10, 1, compress([0, 2, 0, 0, 8]).decode(), area=2.0)
    if gt_form == "uncompressed":
        gt["annotations"][0]["segmentation"]["counts"] = [0, 2, 0, 0, 8]
    gt["annotations"][0]["iscrowd"] = int(gt_form == "crowd")
    gt["annotations"].append({"id": 2, "image_id": 1, "category_id": 1, "iscrowd": 0,
                              "area": 3.0, "bbox": [0, 7, 1, 3],
                              "segmentation": {"size": [10, 1],
                                               "counts": compress([7, 3]).decode()}})
    results = [mask_result(compress([0, 2, 0, 8]).decode(), [10, 1], score=0.9),
               mask_result(compress([0, 1, 9]).decode(), [10, 1], score=0.8),
               mask_result(compress([7, 3]).decode(), [10, 1], score=float(rng.random()))]
    if dt_box:
        for result in results:
            result["bbox"] = [0.0, 0.0, 1.0, 10.0]
    reference = run_pycocotools(gt, results, iou_type="segm")
    dataset = read_coco_gt(gt, iou_type="segm")
    if gt_form == "no-mask-area":
        dataset = dataclasses.replace(dataset, gt=dataset.gt.replace(masks=dataset.gt.masks))
        assert dataset.gt.mask_area is None
    else:
        assert np.isnan(dataset.gt.mask_area[0]) and dataset.gt.mask_area[1] == 3
    detections = read_coco_results(results, dataset, iou_type="segm")
    assert np.isnan(detections.mask_area[0])
    assert_parity(deteval.evaluate_coco(dataset, detections, iou_type="segm"), reference)


@pytest.mark.parametrize("case", ["only-empty", "leading-empty-chunk"])
def test_empty_strings_alone_in_a_chunk(case, monkeypatch):
    """Was wrong: decode_counts indexes last[string_ends - 1] when a chunk's strings are
    all empty (IndexError): a results list of empty 0xN masks, or leading empty strings
    before a chunk cut"""
    if case == "only-empty":
        gt = one_mask_gt(4, 3, _GOOD)
        gt["images"].append({"id": 2, "height": 0, "width": 5})
        results = [mask_result("", [0, 5], image_id=2)]
        reference = run_pycocotools(gt, results, iou_type="segm")
        assert_parity(_segm(gt, results), reference)
    else:
        monkeypatch.setattr(deteval.masks.rle, "_CHUNK", 1)
        areas = compressed_areas(["", "0<"], [[0, 5], [4, 3]])
        assert areas.tolist() == [0, 12]


def test_lone_surrogate_in_counts_is_a_format_error():
    """Was wrong: masks_from_segmentations encodes str counts with str.encode() (UTF-8),
    which raises UnicodeEncodeError on a lone surrogate (json.loads gives one for '\ud800')
    instead of a FormatError; encode(..., 'surrogatepass') lets the alphabet check word it"""
    gt = one_mask_gt(4, 3, _GOOD)
    dataset = read_coco_gt(gt, iou_type="segm")
    with pytest.raises(FormatError, match=r"results\[0\]"):
        read_coco_results([mask_result("0<\ud800", [4, 3])], dataset, iou_type="segm")


def test_negative_seven_character_numbers_as_pycocotools_reads_them(tmp_path):
    """Was wrong: pycocotools 2.0.11 misreads a 7-character number with the sign bit (its
    sign extension is `-1 << 35` on an int: x86 shifts by 3, giving (x & 7) - 8), e.g. the
    difference 1 - 2**30 in runs [0, 2**30, 0, 1]; deteval decodes it exactly and silently
    uses another mask (area 2**30 + 1 vs pycocotools' 2**31 - 7; pycocotools' iou against a
    mask that adds up then never returns, and deteval calls it). Refuse such numbers
    (FormatError), or decode them as pycocotools does so that the sum check refuses them"""
    h = 2**30 + 1
    counts = compress([0, 2**30, 0, 1]).decode()
    assert int(mask_utils.area(_rle([h, 1], counts))) == 2**31 - 7
    gt = one_mask_gt(h, 1, compress([0, h]).decode())
    results = [mask_result(counts, [h, 1])]
    for areas in _result_areas(tmp_path, gt, results):
        assert areas is None or areas == _loadres_areas(gt, results)


def test_masks_of_more_than_2_to_the_32_pixels(tmp_path):
    """Was wrong: pycocotools counts pixels in 32-bit unsigned ints (rleArea, rleToBbox's
    cc, rleIou's i and u): a mask of 2**32 pixels or more gets a wrapped area (loadRes area
    100 here), wrapped boxes and IoUs; deteval's decoder gives 2**32 + 100, and its bound
    and boxes use the unwrapped values. Refuse h * w >= 2**32 (FormatError), or wrap as
    pycocotools"""
    h, w = 65536, 65537
    runs = [10, 2**31, 10, 2**31 + 100, h * w - 2**32 - 120]
    counts = compress(runs).decode()
    gt = one_mask_gt(h, w, compress([0, 2**31, 0, 2**31, h * w - 2**32]).decode())
    results = [mask_result(counts, [h, w])]
    assert _loadres_areas(gt, results) == [100.0]
    for areas in _result_areas(tmp_path, gt, results):
        assert areas is None or areas == [100.0]


_SIGFPE_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from maskgen import compress, mask_result, one_mask_gt
import deteval
from deteval.errors import FormatError
counts = compress([1, 2**32 - 1]).decode()
gt = one_mask_gt(2**32, 1, counts)
try:
    deteval.evaluate_coco(gt, [mask_result(counts, [2**32, 1])], iou_type="segm")
except FormatError as error:
    print("FormatError", error)
"""


def test_height_of_2_to_the_32_is_refused_not_a_crash():
    """Was wrong: a mask of height 2**32 (or any multiple) is accepted, and pycocotools'
    rleToBbox then divides by (uint) h == 0: the process dies of SIGFPE in the IoU call
    (pycocotools too); it should be a FormatError"""
    script = _SIGFPE_SCRIPT.format(tests=str(Path(__file__).resolve().parent))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.returncode
    assert "FormatError" in done.stdout


@pytest.mark.parametrize("field", ["size", "category_id"])
def test_huge_integers_in_a_results_file_are_format_errors(field, tmp_path):
    """Was wrong: a mask 'size' or 'category_id' of 2**63 or more in a results file raises
    OverflowError from np.fromiter(..., np.int64) in _typed_segm_results (sizes) or in
    masks_from_segmentations (sizes[i] = h) instead of a FormatError"""
    gt = one_mask_gt(4, 3, _GOOD)
    result = mask_result(_GOOD, [4, 3])
    if field == "size":
        result["segmentation"]["size"] = [2**63, 0]
        result["segmentation"]["counts"] = ""
    else:
        result["category_id"] = 2**64 - 1
    gt_path, dt_path = _write(tmp_path, gt, [result])
    dataset = read_coco_gt(gt_path, iou_type="segm")
    with pytest.raises(FormatError, match=r"results\[0\]"):
        read_coco_results(dt_path, dataset, iou_type="segm")


def test_huge_numpy_run_in_uncompressed_counts_is_a_format_error():
    """Was wrong: _plain_runs converts numpy integers through np.asarray(..., np.int64)
    without catching OverflowError: an np.uint64 run of 2**64 - 1 in uncompressed counts is
    a traceback, not the FormatError 'uncompressed RLE counts must be integers >= 0'"""
    gt = one_mask_gt(4, 3, _GOOD)
    dataset = read_coco_gt(gt, iou_type="segm")
    result = mask_result(_GOOD, [4, 3])
    result["segmentation"]["counts"] = [np.uint64(2**64 - 1)]
    with pytest.raises(FormatError, match="uncompressed RLE"):
        read_coco_results([result], dataset, iou_type="segm")
