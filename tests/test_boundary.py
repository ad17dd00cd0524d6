"""Boundary IoU: erosion equal to boundary-iou-api's cv2 one, and COCO stats equal to
faster-coco-eval's and vernier's (docs/protocols/boundary.md)."""

import contextlib
import io
import json

import numpy as np
import pytest

from deteval.boundary import boundary_dilation, mask_boundaries, mask_to_boundary
from deteval.compat import mask as mu
from deteval.protocols.coco import COCOParams, evaluate_coco

cv2 = pytest.importorskip("cv2")


def _reference_boundary(mask, ratio):
    # boundary-iou-api's rule: pad by one zero pixel, erode d times with a 3x3 square.
    h, w = mask.shape
    d = max(1, int(round(ratio * np.sqrt(h ** 2 + w ** 2))))
    padded = cv2.copyMakeBorder(mask, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    eroded = cv2.erode(padded, np.ones((3, 3), np.uint8), iterations=d)[1:h + 1, 1:w + 1]
    return mask - eroded


def _random_mask(rng, h, w):
    kind = rng.integers(0, 4)
    mask = np.zeros((h, w), np.uint8)
    if kind == 0:
        mask[:] = rng.random((h, w)) < rng.uniform(0.2, 1.0)
    elif kind == 1:                       # box, often touching the border
        r0, c0 = rng.integers(0, h), rng.integers(0, w)
        mask[r0:r0 + rng.integers(1, h + 1), c0:c0 + rng.integers(1, w + 1)] = 1
    elif kind == 2:                       # one-pixel line
        mask[rng.integers(0, h), :] = 1
    else:
        mask[:] = 1
    return mask


def test_boundary_equals_cv2():
    rng = np.random.default_rng(7)
    for _ in range(400):
        h, w = (int(v) for v in rng.integers(1, 70, 2))
        mask = _random_mask(rng, h, w)
        ratio = float(rng.uniform(0.005, 0.2))
        assert np.array_equal(mask_to_boundary(mask, ratio), _reference_boundary(mask, ratio))


def test_boundary_rle_matches_dense():
    rng = np.random.default_rng(3)
    masks = [np.asfortranarray(_random_mask(rng, 23, 31)) for _ in range(20)]
    rles = [mu.encode(m) for m in masks]
    rles[0]["counts"] = rles[0]["counts"].decode()
    out = mask_boundaries(rles, 0.05)
    for m, b in zip(masks, out):
        assert np.array_equal(mu.decode(b), _reference_boundary(m, 0.05))
    assert len(mask_boundaries([], 0.02)) == 0


def test_dilation_rounding():
    assert boundary_dilation(1, 1, 0.0) == 1
    assert boundary_dilation(480, 640, 0.02) == 16      # round(16.0)
    assert boundary_dilation(30, 40, 0.05) == 2         # round(2.5): half to even


def _dataset(seed, n_img=6):
    rng = np.random.default_rng(seed)
    images, anns, dets = [], [], []
    for i in range(1, n_img + 1):
        h, w = int(rng.integers(20, 90)), int(rng.integers(20, 90))
        images.append({"id": i, "height": h, "width": w})
        for _ in range(int(rng.integers(1, 6))):
            cat = int(rng.integers(1, 3))
            x0, y0 = rng.uniform(-5, w), rng.uniform(-5, h)
            bw = 1.0 if rng.random() < 0.15 else rng.uniform(1, w / 1.5)   # thin ones
            bh = rng.uniform(0.5, h / 1.5)
            poly = [x0, y0, x0 + bw, y0, x0 + bw * 0.8, y0 + bh, x0, y0 + bh]
            poly = [float(np.clip(v, 0, w if k % 2 == 0 else h)) for k, v in enumerate(poly)]
            crowd = int(rng.random() < 0.1)
            if crowd or rng.random() < 0.3:
                m = np.zeros((h, w), np.uint8, order="F")
                r0, c0 = int(rng.integers(0, h)), int(rng.integers(0, w))
                m[r0:r0 + int(rng.integers(1, 30)), c0:c0 + int(rng.integers(1, 30))] = 1
                seg = mu.encode(m)
                seg["counts"] = seg["counts"].decode()
                rle = seg
            else:
                seg = [poly]
                rle = mu.merge(mu.frPyObjects(seg, h, w))
            if mu.area(rle) == 0:
                continue
            anns.append({"id": len(anns) + 1, "image_id": i, "category_id": cat,
                         "segmentation": seg, "area": float(mu.area(rle)),
                         "bbox": mu.toBbox(rle).tolist(), "iscrowd": crowd})
            for _ in range(int(rng.integers(0, 4))):
                dy, dx = (int(v) for v in rng.integers(-3, 4, 2))
                m = np.roll(np.roll(mu.decode(rle), dy, 0), dx, 1)
                if rng.random() < 0.3:
                    m[rng.random(m.shape) < 0.05] ^= 1
                if m.sum() == 0:
                    continue
                r = mu.encode(np.asfortranarray(m))
                r["counts"] = r["counts"].decode()
                dets.append({"image_id": i, "bbox": mu.toBbox(r).tolist(),
                             "category_id": cat if rng.random() < 0.9 else 3 - cat,
                             "segmentation": r, "score": float(rng.random())})
    gt = {"images": images, "annotations": anns,
          "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}
    return gt, dets


@pytest.mark.parametrize("seed,ratio", [(0, 0.01), (1, 0.02), (2, 0.03), (3, 0.05),
                                        (4, 0.02), (5, 0.04)])
def test_stats_equal_faster_coco_eval_and_vernier(seed, ratio):
    fce = pytest.importorskip("faster_coco_eval")
    vi = pytest.importorskip("vernier.instance")
    gt, dets = _dataset(seed)
    ours = np.array(evaluate_coco(gt, dets, iou_type="boundary", dilation_ratio=ratio).stats)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = fce.COCO()
        coco_gt.dataset = json.loads(json.dumps(gt))
        coco_gt.createIndex()
        ev = fce.COCOeval_faster(coco_gt, coco_gt.loadRes(json.loads(json.dumps(dets))),
                                 iouType="boundary", boundary_dilation_ratio=ratio)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    theirs = vi.Evaluator(iou=vi.Boundary(dilation_ratio=ratio), parity_mode="strict").evaluate(
        json.dumps(gt).encode(), json.dumps(dets).encode())
    np.testing.assert_allclose(ours, np.array(ev.stats[:12]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours, np.array(list(theirs.stats)[:12]), rtol=0, atol=1e-12)


def test_boundary_at_most_segm():
    gt, dets = _dataset(9)
    segm = evaluate_coco(gt, dets, iou_type="segm").stats
    boundary = evaluate_coco(gt, dets, iou_type="boundary").stats
    assert boundary[0] <= segm[0]


def test_dilation_ratio_checked():
    with pytest.raises(ValueError, match="dilation_ratio"):
        COCOParams(iou_type="boundary", dilation_ratio=float("nan"))
    assert COCOParams(iou_type="boundary").dilation_ratio == 0.02


def test_cli_boundary(tmp_path):
    from deteval.cli import main

    gt, dets = _dataset(1)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
              "--iou-type", "boundary", "--dilation-ratio", "0.03"])
    expected = evaluate_coco(gt, dets, iou_type="boundary", dilation_ratio=0.03).stats[0]
    assert f"{expected:.3f}" in out.getvalue()


def _one_object(h, w, gt_mask, dt_mask):
    def rle(mask):
        out = mu.encode(np.asfortranarray(mask.astype(np.uint8)))
        out["counts"] = out["counts"].decode()
        return out

    g, d = rle(gt_mask), rle(dt_mask)
    gt = {"images": [{"id": 1, "height": h, "width": w}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "segmentation": g,
                           "area": float(gt_mask.sum()), "bbox": mu.toBbox(g).tolist(),
                           "iscrowd": 0}],
          "categories": [{"id": 1, "name": "a"}]}
    return gt, [{"image_id": 1, "category_id": 1, "segmentation": d,
                 "bbox": mu.toBbox(d).tolist(), "score": 1.0}]


@pytest.mark.parametrize("ratio,expected", [(0.03, 0.8), (0.07, 1.0), (0.02, 0.6)])
def test_dilation_tie_follows_reference(ratio, expected):
    # 30 x 40 image, diagonal 50: 0.03 * 50 == 1.5 and 0.07 * 50 == 3.5000000000000004.
    # boundary-iou-api rounds them to d = 2 and 4 (Python's round); faster-coco-eval 0.x
    # erodes 1 and 3 times and gets AP 0.6 and 0.9 (docs/protocols/boundary.md §5).
    # The expected APs are boundary-iou-api's own output on this data.
    gt_mask = np.zeros((30, 40), bool)
    gt_mask[:, :10] = True
    dt_mask = gt_mask.copy()
    dt_mask[0] = False
    gt, dets = _one_object(30, 40, gt_mask, dt_mask)
    ours = evaluate_coco(gt, dets, iou_type="boundary", dilation_ratio=ratio).stats
    assert ours[0] == pytest.approx(expected, abs=1e-12)
    vi = pytest.importorskip("vernier.instance")
    theirs = vi.Evaluator(iou=vi.Boundary(dilation_ratio=ratio), parity_mode="strict").evaluate(
        json.dumps(gt).encode(), json.dumps(dets).encode())
    np.testing.assert_allclose(ours, np.array(list(theirs.stats)[:12]), rtol=0, atol=1e-12)


def _reference_lvis_boundary_iou(ratio):
    # boundary-iou-api's LVISEval.compute_iou for "boundary", on lvis-api's (no crowd) rules:
    # min(mask IoU, boundary IoU), boundaries by the cv2 rule above.
    def compute_iou(self, img_id, cat_id):
        gt, dt = self._get_gt_dt(img_id, cat_id)
        if len(gt) == 0 and len(dt) == 0:
            return []
        dt = [dt[i] for i in np.argsort([-d["score"] for d in dt], kind="mergesort")]
        crowd = [0] * len(gt)
        gt_m = [g["segmentation"] for g in gt]
        dt_m = [d["segmentation"] for d in dt]

        def bound(rles):
            return [mu.encode(np.asfortranarray(_reference_boundary(mu.decode(r), ratio)))
                    for r in rles]

        return np.minimum(np.array(mu.iou(dt_m, gt_m, crowd)),
                          np.array(mu.iou(bound(dt_m), bound(gt_m), crowd)))
    return compute_iou


@pytest.mark.parametrize("seed", [2000, 2001, 2002])
def test_lvis_boundary(seed, monkeypatch):
    pytest.importorskip("lvis")
    from lvis import LVISEval
    from lvisgen import make_lvis_dataset, run_lvis_api

    from deteval.protocols.lvis import evaluate_lvis

    ratio = 0.03
    gt, results = make_lvis_dataset(seed, segm=True)
    monkeypatch.setattr(LVISEval, "compute_iou", _reference_lvis_boundary_iou(ratio))
    reference = run_lvis_api(gt, results, iou_type="segm")
    ours = evaluate_lvis(gt, results, iou_type="boundary", dilation_ratio=ratio)
    expected = np.array([float(v) for v in reference.results.values()])
    assert np.array_equal(ours.stats, expected), (ours.stats, expected)
    assert np.array_equal(ours.precision, reference.precision)


def test_unknown_iou_type_lists_boundary():
    with pytest.raises(ValueError, match="'boundary'"):
        COCOParams(iou_type="boundry")
