"""``pair_mask_iou(..., dt_sizes=)``: the detections' mask sizes from a column (the segm
results reader's) lay out the calls of pycocotools' ``iou`` instead of the dicts' ``"size"``;
every pair keeps the value a call on that pair alone gives, and the COCO segm evaluation of a
file read by the numpy reader passes the reader's sizes (the dicts' sizes are read for the
ground truth only)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pycocotools import mask as mask_utils

import deteval
import deteval.masks.pair_iou
from deteval._derived import is_derived
from deteval._inputs import load_pair
from deteval.masks import pair_mask_iou


def _scene(seed: int):
    rng = np.random.default_rng(seed)
    sizes = [(12, 9), (9, 12), (12, 9), (20, 20), (7, 30)]
    dts, gts, dt_image, gt_image = [], [], [], []
    for image, (h, w) in enumerate(sizes):
        for _ in range(int(rng.integers(1, 8))):
            bitmap = (rng.random((h, w)) < rng.uniform(0.05, 0.8)).astype(np.uint8)
            dts.append(mask_utils.encode(np.asfortranarray(bitmap)))
            dt_image.append(image)
        for _ in range(int(rng.integers(1, 5))):
            hh, ww = sizes[(image + 3) % len(sizes)] if rng.random() < 0.15 else (h, w)
            bitmap = (rng.random((hh, ww)) < rng.uniform(0.05, 0.8)).astype(np.uint8)
            gts.append(mask_utils.encode(np.asfortranarray(bitmap)))
            gt_image.append(image)
    dt_masks, gt_masks = np.empty(len(dts), object), np.empty(len(gts), object)
    dt_masks[:], gt_masks[:] = dts, gts
    crowd = rng.random(len(gts)) < 0.3
    pair_dt, pair_gt = (a.ravel() for a in np.meshgrid(np.arange(len(dts)),
                                                        np.arange(len(gts)), indexing="ij"))
    same = np.array(dt_image)[pair_dt] == np.array(gt_image)[pair_gt]
    return dt_masks, gt_masks, crowd, np.array(dt_image), pair_dt[same], pair_gt[same]


@pytest.mark.parametrize("seed", range(3))
def test_sizes_from_a_column_give_each_pair_its_own_value(seed, monkeypatch):
    dt_masks, gt_masks, crowd, dt_image, pair_dt, pair_gt = _scene(seed)
    read = []
    real = deteval.masks.pair_iou._mask_sizes
    monkeypatch.setattr(deteval.masks.pair_iou, "_mask_sizes",
                        lambda masks: read.append(len(masks)) or real(masks))
    sizes = np.array([m["size"] for m in dt_masks], dtype=np.int64)
    got = pair_mask_iou(dt_masks, gt_masks, pair_dt, pair_gt, crowd, image_of_dt=dt_image,
                        dt_sizes=sizes)
    n_gt_in_pairs = len(np.unique(np.stack([dt_image[pair_dt], pair_gt]), axis=1)[0])
    assert read == [n_gt_in_pairs]          # the ground truth's dicts only
    without = pair_mask_iou(dt_masks, gt_masks, pair_dt, pair_gt, crowd, image_of_dt=dt_image)
    alone = [float(np.asarray(mask_utils.iou([dt_masks[d]], [gt_masks[g]],
                                             [int(crowd[g])]))[0, 0])
             for d, g in zip(pair_dt, pair_gt)]
    assert got.tolist() == without.tolist() == alone


@pytest.mark.parametrize("routines", [False, True])
def test_the_segm_evaluation_lays_out_its_calls_from_the_reader_s_sizes(tmp_path, monkeypatch,
                                                                        routines):
    """A results file the numpy reader reads (64 KiB or more): its size column is used, and
    the stats equal those of the same detections with their masks made as dicts. With the
    C routines (``routines``) the objects' sizes come from their parsed runs: no dict's
    ``"size"`` is read but the detections' dicts' once made."""
    from maskgen import make_segm_dataset

    import deteval.masks._capi
    from deteval.masks._capi import c_routines

    if routines and c_routines() is None:
        pytest.skip("pycocotools' C routines cannot be called through ctypes here")
    monkeypatch.setattr(deteval.masks._capi, "_enabled", [routines])

    gt, results = make_segm_dataset(3, n_images=30)
    results = [r for r in results if isinstance(r["segmentation"].get("counts"), str)]
    for r in results:
        r.pop("bbox", None)
    while len(json.dumps(results)) < 1 << 16:
        results = results + results
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    read = []
    real = deteval.masks.pair_iou._mask_sizes
    monkeypatch.setattr(deteval.masks.pair_iou, "_mask_sizes",
                        lambda masks: read.append(len(masks)) or real(masks))
    pair = load_pair(tmp_path / "gt.json", tmp_path / "dt.json", iou_type="segm")
    assert is_derived(pair.detections, "masks")     # (read by the numpy reader)
    by_column = deteval.evaluate_coco(pair.dataset, pair.detections, iou_type="segm")
    calls = len(read)
    assert pair.detections.masks is not None                # (the masks made here)
    by_dicts = deteval.evaluate_coco(pair.dataset, pair.detections, iou_type="segm")
    if routines:
        assert calls == 0 and len(read) == 1    # the detections' dicts only, once made
    else:
        assert calls and len(read) == 3 * calls     # the dicts' sizes read on both sides now
    assert np.array_equal(by_column.stats, by_dicts.stats, equal_nan=True)
    assert by_column.precision.tobytes() == by_dicts.precision.tobytes()
