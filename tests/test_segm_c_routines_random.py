"""Seeded random segm data (polygons of 1-3 parts partly outside tiny images, compressed and
uncompressed RLE, crowds, a few corrupted result strings): the evaluation through
pycocotools' C routines by ctypes gives the same bits, or the same error, as through its
Cython wrappers, on 1 and 2 threads; and pycocotools' COCOeval's stats and precision where it
accepts the data (docs/segm-cost.md §2.4, docs/mask-rasteriser.md §3.1)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from cocogen import run_pycocotools
from pycocotools import mask as mask_utils

import deteval
from deteval.masks._capi import c_routines, use_c_routines

pytestmark = pytest.mark.skipif(c_routines() is None,
                                reason="pycocotools' C routines not loadable here")

SEEDS = range(60)


def _bitmap(seed: int, h: int, w: int, fill: float) -> np.ndarray:
    return (np.random.default_rng(seed).random((h, w)) < fill).astype(np.uint8)


def _uncompressed(mask: np.ndarray) -> list[int]:
    flat = mask.ravel(order="F")
    edges = np.flatnonzero(np.diff(flat)) + 1
    runs = np.diff(np.concatenate([[0], edges, [len(flat)]])).tolist()
    return [0, *runs] if len(flat) and flat[0] else runs


def _data(seed: int) -> tuple[dict, list]:
    rng = random.Random(seed)
    images = [{"id": i + 1, "width": rng.choice([1, 2, 7, 30, 64]),
               "height": rng.choice([1, 3, 9, 40])} for i in range(rng.randint(1, 4))]
    annotations, results = [], []
    for k in range(rng.randint(0, 12)):
        image = rng.choice(images)
        h, w = image["height"], image["width"]
        if rng.random() < 0.6:
            segmentation = [[round(rng.uniform(-3, (w, h)[j % 2] + 3), 2)
                             for j in range(2 * rng.randint(2, 6))]
                            for _ in range(rng.randint(1, 3))]
        else:
            mask = _bitmap(seed * 100 + k, h, w, rng.random())
            segmentation = {"size": [h, w], "counts": (
                mask_utils.encode(np.asfortranarray(mask))["counts"].decode()
                if rng.random() < 0.7 else _uncompressed(mask))}
        annotations.append({"id": k + 1, "image_id": image["id"],
                            "category_id": rng.randint(1, 2),
                            "iscrowd": int(rng.random() < 0.2), "area": rng.uniform(0, 50),
                            "bbox": [0, 0, 1, 1], "segmentation": segmentation})
    for k in range(rng.randint(0, 25)):
        image = rng.choice(images)
        h, w = image["height"], image["width"]
        mask = _bitmap(seed * 1000 + k, h, w, rng.random())
        counts = mask_utils.encode(np.asfortranarray(mask))["counts"].decode()
        if counts and rng.random() < 0.03:       # a corrupted string
            at = rng.randrange(len(counts))
            counts = counts[:at] + chr(rng.randint(48, 111)) + counts[at + 1:]
        results.append({"image_id": image["id"], "category_id": rng.randint(1, 2),
                        "score": round(rng.random(), 3),
                        "segmentation": {"size": [h, w], "counts": counts}})
    gt = {"images": images, "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
          "annotations": annotations}
    return gt, results


def _evaluated(gt: dict, results: list, c_path: bool, threads: int) -> tuple:
    with use_c_routines(c_path):
        try:
            r = deteval.evaluate_coco(gt, results, iou_type="segm", threads=threads)
        except deteval.FormatError as error:
            return ("error", str(error))
    return ("ok", r.stats.tobytes(), r.precision.tobytes(), r.recall.tobytes())


def _reference(gt: dict, results: list):
    """pycocotools' stats and precision, or None where it refuses the data (e.g. a first
    polygon part of 4 numbers, read as a box list)."""
    try:
        reference = run_pycocotools(gt, results, iou_type="segm")
    except Exception:       # noqa: BLE001 (pycocotools' own refusals)
        return None
    return reference.stats, np.asarray(reference.precision)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_c_routines_give_the_cython_wrappers_bits_and_pycocotools(seed):
    gt, results = _data(seed)
    cython = _evaluated(gt, results, False, 1)
    assert _evaluated(gt, results, True, 1) == cython
    assert _evaluated(gt, results, True, 2) == cython
    if cython[0] != "ok" or not results:
        return
    reference = _reference(gt, results)
    if reference is None:
        return
    stats, precision = reference
    assert stats.tobytes() == cython[1]
    assert precision.tobytes() == cython[2]


def test_the_random_data_hit_the_cases_that_matter():
    """The seeds make accepted data compared with pycocotools, and refused data too."""
    outcomes = [_evaluated(*_data(seed), True, 1)[0] for seed in SEEDS]
    compared = sum(o == "ok" and _reference(*_data(s)) is not None
                   for s, o in zip(SEEDS, outcomes))
    assert outcomes.count("error") >= 5 and compared >= 15
