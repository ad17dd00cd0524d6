"""vernier: its own API (``vernier.instance``), not its pycocotools shim, which would need a
pycocotools-like ``COCO`` to load the files.

``CocoDataset.from_json(bytes)`` parses the ground truth (load_gt). For bbox the results file is
read as bytes (load_dt) and parsed by ``Evaluator.evaluate``, which matches, accumulates and
summarizes in one call (evaluate). Its reader wants a ``bbox`` in every result, which
pycocotools' ``loadRes`` derives when a segm or keypoints result has none (as the bench's
have): for those, load_dt parses the file and derives it as ``loadRes`` does (the keypoints'
extent; the mask's bounds through ``pycocotools.mask.toBbox``), and the list of dicts is
evaluated. ``parity_mode="strict"`` asks for pycocotools' numbers bit for bit (its default,
"corrected", fixes some of pycocotools' quirks).

segm goes through ``evaluate_segm_grid(..., dt_area="mask")`` then ``accumulate`` and
``summarize`` (three phases): ``Evaluator.evaluate`` (``evaluate_segm_summary``) takes a
result's area from its bbox, not its mask as ``loadRes`` does, and its APs/APm/APl differ from
pycocotools' (by 0.009 on the quick set)."""

from __future__ import annotations

import json
from pathlib import Path

from . import Peer, register


def _with_keypoint_boxes(results: list[dict]) -> list[dict]:
    for r in results:
        if "bbox" not in r:
            xs, ys = r["keypoints"][0::3], r["keypoints"][1::3]
            x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
            r["bbox"], r["area"] = [x0, y0, x1 - x0, y1 - y0], (x1 - x0) * (y1 - y0)
    return results


def _with_mask_boxes(results: list[dict]) -> list[dict]:
    from pycocotools import mask as mask_utils

    for r in results:
        if "bbox" not in r:
            r["bbox"] = mask_utils.toBbox(r["segmentation"]).tolist()
    return results


def run(gt_path: str, dt_path: str, timer, iou_type: str = "bbox"):
    with timer("import"):
        from vernier.instance import Bbox, CocoDataset, Evaluator, Keypoints
    kernel = {"bbox": Bbox, "keypoints": Keypoints}.get(iou_type, Bbox)()
    with timer("load_gt"):
        dataset = CocoDataset.from_json(Path(gt_path).read_bytes())
    with timer("load_dt"):
        if iou_type == "bbox":
            results = Path(dt_path).read_bytes()
        else:
            results = json.loads(Path(dt_path).read_bytes())
            derive = _with_mask_boxes if iou_type == "segm" else _with_keypoint_boxes
            results = derive(results)
    if iou_type == "segm":
        return _segm_phases(dataset, results, timer), {}
    with timer("evaluate"):
        summary = Evaluator(iou=kernel, parity_mode="strict").evaluate(dataset, results)
    return list(summary.stats), {}


def _segm_phases(dataset, results: list[dict], timer) -> list[float]:
    from vernier.instance import evaluate_segm_grid  # vernier._core's, re-exported

    max_dets = [1, 10, 100]
    with timer("evaluate"):
        grid = evaluate_segm_grid(dataset, results, parity_mode="strict",
                                  max_dets_per_image=max_dets[-1], use_cats=True, dt_area="mask")
    with timer("accumulate"):
        accumulated = grid.accumulate(max_dets)
    with timer("summarize"):
        summary = accumulated.summarize(max_dets)
    return list(summary.stats)


register(Peer(
    "vernier", "vernier", "vernier", run,
    note="load_dt: bbox reads the file's bytes, segm/keypoints parse it and add each result's "
    "bbox as loadRes does; evaluate(): bbox/keypoints parse, match, accumulate, summarize.",
))  # fmt: skip
