"""The masks' boxes from their decoded runs (``rle._run_boxes`` through
``compressed_areas(..., boxes=True)``, the readers' ``mask_xywh`` and the results' ``xywh``)
equal pycocotools' ``toBbox`` on the cases its docstring lists (no run pair, empty foreground
runs, a trailing background run, runs crossing columns, a last foreground run ending the
mask), for any chunk size and ``threads``; and the segm bound built from them is never below
pycocotools' ``iou``.
"""

from __future__ import annotations

import numpy as np
import pycocotools.mask as mask_utils
import pytest
from maskgen import compress

import deteval.masks.rle
from deteval.masks import compressed_areas, mask_iou_bound

# (h, w, runs): each a quirk of toBbox's loop over (background, foreground) pairs.
_QUIRKS = [
    (0, 0, []),                               # no runs at all
    (3, 4, [12]),                             # background only: no pair
    (3, 4, [0, 12]),                          # full
    (1, 1, [0, 1]),                           # one pixel, the whole mask
    (5, 4, [19, 1]),                          # last pixel; the foreground ends the mask
    (5, 4, [0, 1, 19]),                       # first pixel, a trailing background run
    (5, 4, [7, 0, 13]),                       # an empty foreground run, trailing background
    (5, 4, [3, 0, 2, 0, 15]),                 # only empty foreground runs
    (5, 4, [3, 0, 2, 4, 11]),                 # an empty foreground run, then one
    (5, 4, [2, 3, 0, 0, 1, 2, 12]),           # empty runs in the middle
    (5, 4, [4, 2, 14]),                       # a run crossing into the next column
    (5, 4, [5, 5, 10]),                       # exactly one whole column
    (5, 4, [6, 3, 2, 3, 6]),                  # two columns, no crossing
    (5, 4, [1, 1, 8, 1, 4, 5]),               # rows 1 and 0 in columns 0, 2, 3
    (7, 1, [5, 2]),
    (3, 5, [0, 0, 15]),                       # an empty first pair, background to the end
]


def _expected(sizes, strings) -> np.ndarray:
    rles = [{"size": list(size), "counts": s} for size, s in zip(sizes, strings)]
    return np.array([mask_utils.toBbox(r) for r in rles], dtype=np.float64).reshape(-1, 4)


@pytest.mark.parametrize("chunk", [1, 7, 120_000])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_boxes_of_the_quirk_cases_equal_tobbox(chunk, threads, monkeypatch):
    monkeypatch.setattr(deteval.masks.rle, "_CHUNK", chunk)
    sizes = [(h, w) for h, w, _ in _QUIRKS]
    strings = [compress(runs) for _, _, runs in _QUIRKS]
    _, xywh = compressed_areas(strings, np.array(sizes), boxes=True, threads=threads)
    assert xywh.tobytes() == _expected(sizes, strings).tobytes()
    one_by_one = np.vstack([compressed_areas([s], np.array([size]), boxes=True)[1]
                            for s, size in zip(strings, sizes)])
    assert one_by_one.tobytes() == xywh.tobytes()


def _bitmaps(rng: np.random.Generator, n: int, h: int, w: int) -> list[np.ndarray]:
    """Boxes, scattered pixels, runs crossing columns, one pixel, full and empty masks."""
    out = []
    for _ in range(n):
        kind = int(rng.integers(0, 6))
        bitmap = np.zeros((h, w), dtype=np.uint8)
        if kind == 0:
            y0, x0 = rng.integers(0, h), rng.integers(0, w)
            bitmap[y0:y0 + rng.integers(1, h + 1), x0:x0 + rng.integers(1, w + 1)] = 1
        elif kind == 1:
            bitmap = (rng.random((h, w)) < rng.uniform(0.01, 0.7)).astype(np.uint8)
        elif kind == 2 and w > 1:       # a column's tail and the next column's head
            x = int(rng.integers(0, w - 1))
            bitmap[rng.integers(0, h):, x] = 1
            bitmap[:rng.integers(1, h + 1), x + 1] = 1
        elif kind == 3:
            bitmap[rng.integers(0, h), rng.integers(0, w)] = 1
        elif kind == 4:
            bitmap[:] = 1
        out.append(bitmap)
    return out


def _encode(bitmaps) -> list[dict]:
    return [mask_utils.encode(np.asfortranarray(b)) for b in bitmaps]


@pytest.mark.parametrize("seed", range(4))
def test_boxes_of_random_masks_equal_tobbox_for_any_chunk_and_threads(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    rles, sizes = [], []
    for _ in range(12):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        rles += _encode(_bitmaps(rng, 15, h, w))
        sizes += [(h, w)] * 15
    strings = [r["counts"] for r in rles]
    expected = _expected(sizes, strings)
    for chunk, threads in ((50, 1), (50, 3), (400, 2), (120_000, 1)):
        monkeypatch.setattr(deteval.masks.rle, "_CHUNK", chunk)
        _, xywh = compressed_areas(strings, np.array(sizes), boxes=True, threads=threads)
        assert xywh.tobytes() == expected.tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_bound_from_the_run_boxes_is_never_below_pycocotools_iou(seed):
    """Areas and boxes as the readers make them (NaN area where the routine may stop
    early), masks of two sizes in one call (pycocotools gives -1 across sizes)."""
    rng = np.random.default_rng(100 + seed)
    h, w = (int(v) for v in rng.integers(1, 20, 2))
    dts = _encode(_bitmaps(rng, 30, h, w)) + _encode(_bitmaps(rng, 5, h + 1, w))
    gts = _encode(_bitmaps(rng, 20, h, w))
    crowd = rng.random(len(gts)) < 0.3

    def columns(rles):
        pixels, xywh, early = compressed_areas([r["counts"] for r in rles],
                                               np.array([r["size"] for r in rles]),
                                               boxes=True, unbounded=True)
        return np.where(early, np.nan, pixels.astype(np.float64)), xywh

    (a_d, b_d), (a_g, b_g) = columns(dts), columns(gts)
    iou = np.asarray(mask_utils.iou(dts, gts, crowd.astype(np.uint8))).reshape(len(dts), -1)
    d, g = (m.ravel() for m in np.meshgrid(np.arange(len(dts)), np.arange(len(gts)),
                                           indexing="ij"))
    bound = mask_iou_bound(a_d[d], a_g[g], crowd[g], b_d[d], b_g[g])
    exact = iou[d, g]
    assert (bound >= exact).all()
    assert ((bound == 0) & (exact == 0)).sum() > 0.2 * len(d)      # boxes rule pairs out
    assert (bound[exact > 0] > 0).all()
