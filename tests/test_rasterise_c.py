"""Polygons rasterised through pycocotools' C routines by ctypes
(deteval/masks/_rasterise_c.py, ``rasterise_measured``): the bytes the Cython wrappers give
(``frPoly`` + ``merge``), and their ``area`` and ``toBbox``, on seeded random polygons and
a real COCO file; the same for any number of threads and chunks; the fallback
(``use_c_routines(False)``) the same Dataset. Rules: docs/mask-rasteriser.md."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pycocotools import _mask

from deteval import evaluate_coco
from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt
from deteval.masks import _rasterise_c, mask_area, mask_xywh
from deteval.masks._capi import c_routines, use_c_routines
from deteval.masks.rasterise import (
    RASTER_THREADS,
    FlatPolygons,
    rasterise,
    rasterise_measured,
)
from deteval.masks.segmentations import polygon_masks

pytestmark = pytest.mark.skipif(c_routines() is None,
                                reason="pycocotools' C routines cannot be called here")

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "coco_val2014_100"


def _part(rng: np.random.Generator, h: int, w: int) -> list[float]:
    """One polygon part of a kind drawn at random (see the cases)."""
    kind = rng.integers(8)
    k = int(rng.integers(3, 12))
    if kind == 0:       # tiny: a triangle smaller than a pixel
        x, y = rng.uniform(0, w), rng.uniform(0, h)
        pts = np.array([[x, y], [x + 0.3, y + 0.1], [x + 0.1, y + 0.4]])
    elif kind == 1:     # degenerate: every point the same, or on one line
        x, y = rng.uniform(0, w), rng.uniform(0, h)
        pts = (np.tile([[x, y]], (k, 1)) if rng.random() < 0.5
               else np.column_stack([np.linspace(x, x + 9, k), np.linspace(y, y + 4, k)]))
    elif kind == 2:     # two points
        pts = rng.uniform(-3, [w + 3, h + 3], size=(2, 2))
    elif kind == 3:     # on the image's border and corners
        pts = np.array([[0, 0], [w, 0], [w, h], [0, h], [0, h / 2]], dtype=float)[:k]
        pts = pts if len(pts) >= 2 else np.array([[0, 0], [w, h]], dtype=float)
    elif kind == 4:     # reaching outside the image (within the margin)
        pts = rng.uniform(-40, [w + 40, h + 40], size=(k, 2))
    elif kind == 5:     # integer and half-integer vertices
        pts = np.round(rng.uniform(0, [w, h], size=(k, 2)) * 2) / 2
    else:               # a random (concave, self-crossing) polygon
        pts = rng.uniform(0, [w, h], size=(k, 2))
    return pts.ravel().tolist()


def _objects(seed: int, n: int = 300) -> tuple[list, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = np.array([(int(rng.integers(1, 90)), int(rng.integers(1, 90))) for _ in range(n)])
    sizes[rng.random(n) < 0.03] = [0, 7]        # empty images (h or w 0)
    sizes[rng.random(n) < 0.03] = [5, 0]
    sizes[rng.random(n) < 0.1] = [480, 640]
    objects = []
    for h, w in sizes.tolist():
        # (one part on an image 0 pixels wide: rleFrPoly's parts there do not add up to
        # h * w, and rleMerge of two such parts never ends, in pycocotools too)
        parts = int(rng.choice([1, 1, 1, 2, 3, 6])) if w else 1
        objects.append([_part(rng, h, w) for _ in range(parts)])
    return objects, sizes


def _cython(objects: list, sizes: np.ndarray) -> list[dict]:
    """``frPyObjects`` + ``merge`` of each object, with pycocotools' Cython wrappers."""
    out = []
    for parts, (h, w) in zip(objects, sizes.tolist()):
        rles = _mask.frPoly([np.asarray(p, dtype=np.float64) for p in parts], h, w)
        out.append(rles[0] if len(rles) == 1 else _mask.merge(rles, 0))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_masks_areas_and_boxes_are_the_cython_wrappers(seed):
    objects, sizes = _objects(seed)
    masks, areas, xywh = rasterise_measured(FlatPolygons.of(objects), sizes)
    want = _cython(objects, sizes)
    assert list(masks) == want      # (the dicts: size [h, w] and the counts' bytes)
    assert all(type(m["counts"]) is bytes for m in masks)
    np.testing.assert_array_equal(areas, mask_area(want))
    assert areas.dtype == np.int64
    np.testing.assert_array_equal(xywh, mask_xywh(want))


@pytest.mark.parametrize("chunk", [1, 7, 512])
def test_any_threads_and_chunks_give_the_same_masks(monkeypatch, chunk):
    objects, sizes = _objects(11, n=200)
    polygons = FlatPolygons.of(objects)
    monkeypatch.setattr(_rasterise_c, "CHUNK_OBJECTS", chunk)
    results = []
    for threads in (1, 2, 3):
        token = RASTER_THREADS.set(threads)
        try:
            results.append(rasterise_measured(polygons, sizes))
        finally:
            RASTER_THREADS.reset(token)
    want = _cython(objects, sizes)
    for masks, areas, xywh in results:
        assert list(masks) == want
        np.testing.assert_array_equal(areas, results[0][1])
        np.testing.assert_array_equal(xywh, results[0][2])


def test_the_fallback_rasterises_the_same_masks():
    objects, sizes = _objects(5)
    polygons = FlatPolygons.of(objects)
    with use_c_routines(False):
        assert rasterise_measured(polygons, sizes) is None
        masks, areas, unbounded, xywh = polygon_masks(polygons, sizes, str, with_xywh=True)
        assert xywh is None
    c_masks, c_areas, c_unbounded, c_xywh = polygon_masks(polygons, sizes, str,
                                                          with_xywh=True)
    assert list(masks) == list(c_masks)
    np.testing.assert_array_equal(areas, c_areas)
    np.testing.assert_array_equal(unbounded, c_unbounded)
    np.testing.assert_array_equal(c_xywh, mask_xywh(list(masks)))
    out = np.empty(len(sizes), dtype=object)
    rasterise(out, np.arange(len(sizes)), polygons, sizes, _mask)
    assert list(out) == list(c_masks)


@pytest.mark.parametrize("enabled", [True, False])
def test_a_coordinate_outside_the_margin_is_refused_as_before(enabled):
    polygons = FlatPolygons.of([[[0, 0, 4, 0, 4, 4]], [[1, 1, 5, 1, 5, -2000.5]]])
    with use_c_routines(enabled), pytest.raises(FormatError) as error:
        polygon_masks(polygons, np.array([[10, 10], [10, 10]]), lambda i: f"record {i}", "f")
    assert "polygon 0 has y = -2000.5, far outside its 10x10" in str(error.value)
    assert "record 1" in str(error.value)


def _gt_pair(path: Path) -> tuple:
    read = []
    for enabled in (True, False):
        with use_c_routines(enabled):
            read.append(read_coco_gt(path, iou_type="segm"))
    return read


def test_a_coco_file_reads_the_same_with_and_without_the_c_routines():
    # 100 COCO val2014 images: polygons of one and several parts, crowd RLE.
    c_read, cython_read = _gt_pair(DATA / "instances_val2014_100.json")
    for field in dataclasses.fields(c_read.gt):
        a, b = getattr(c_read.gt, field.name), getattr(cython_read.gt, field.name)
        if isinstance(a, np.ndarray) and a.dtype == object:
            assert list(a) == list(b), field.name
        elif isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=field.name)
        else:
            assert a == b, field.name
    # The boxes the match stage's IoU bound reads: toBbox of every mask, from both readers.
    np.testing.assert_array_equal(c_read.gt.mask_xywh, mask_xywh(list(c_read.gt.masks)))
    with open(DATA / "instances_val2014_100.json", "rb") as f:
        general = read_coco_gt(json.load(f), iou_type="segm")     # (the general path)
    np.testing.assert_array_equal(general.gt.mask_xywh, c_read.gt.mask_xywh)


@pytest.mark.parametrize("threads", [1, 2])
def test_segm_evaluation_is_the_same_with_and_without_the_c_routines(threads):
    gt = DATA / "instances_val2014_100.json"
    dt = DATA / "instances_val2014_fakesegm100_results.json"
    c_result = evaluate_coco(gt, dt, iou_type="segm", threads=threads)
    with use_c_routines(False):
        cython_result = evaluate_coco(gt, dt, iou_type="segm", threads=threads)
    np.testing.assert_array_equal(c_result.stats, cython_result.stats)
    np.testing.assert_array_equal(c_result.precision, cython_result.precision)
    np.testing.assert_array_equal(c_result.recall, cython_result.recall)


def test_loading_the_c_routines_does_not_import_numpy_random():
    # (numpy.random costs a fresh process ~10 ms; nothing else of an evaluation imports it)
    code = ("import sys\nfrom deteval.masks._capi import c_routines\n"
            "assert c_routines() is not None\nprint('numpy.random' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "False"


def test_without_the_held_routines_the_cython_wrappers_rasterise(monkeypatch):
    from deteval.masks import _capi

    objects, sizes = _objects(3, n=60)
    polygons = FlatPolygons.of(objects)
    monkeypatch.setattr(_capi, "held_routines", lambda: None)
    assert rasterise_measured(polygons, sizes) is None
    masks, areas, _, xywh = polygon_masks(polygons, sizes, str, with_xywh=True)
    assert xywh is None and list(masks) == _cython(objects, sizes)
