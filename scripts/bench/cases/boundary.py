"""The boundary case: Boundary IoU (``iou_type="boundary"``, dilation ratio 0.02) on the segm
case's data (500 images, ``--quick`` 100: polygons and RLE, 100 mask results per image, no
``bbox`` in the results), deteval against faster-coco-eval and vernier.

Its tools are its own (this case runs none of the peers): each reads the same two files in a
fresh child process, end to end, as the peers do:

- ``deteval``: ``read_coco_gt`` / ``read_coco_results`` with ``iou_type="segm"`` (the masks),
  then ``evaluate_coco(..., iou_type="boundary")``;
- ``faster-coco-eval``: ``COCOeval_faster(gt, dt, iouType="boundary")`` in pycocotools'
  workflow;
- ``vernier``: ``evaluate_boundary_grid(..., dt_area="mask", parity_mode="strict")``, then
  ``accumulate`` and ``summarize`` (the results' areas are their masks', as ``loadRes`` gives
  them; see the vernier peer's note on segm).

No tool is the reference (boundary-iou-api, the authors' code, is not on PyPI); the report
prints each tool's stats. On seeded sets the three agree to 1e-12 (tests/test_boundary.py,
docs/protocols/boundary.md §5)."""

from __future__ import annotations

from ..common import use_source_tree
from ..peers import run_cocoapi_style
from . import Case, register

DILATION_RATIO = 0.02


def run_deteval(gt_path: str, dt_path: str, timer, iou_type: str = "boundary"):
    use_source_tree()
    with timer("import"):
        from deteval import evaluate_coco
        from deteval.io.coco import read_coco_gt, read_coco_results
    with timer("load_gt"):
        dataset = read_coco_gt(gt_path, iou_type="segm")
    with timer("load_dt"):
        detections = read_coco_results(dt_path, dataset, iou_type="segm")
    with timer("evaluate"):  # boundaries, matching, accumulation and the stats in one call
        result = evaluate_coco(dataset, detections, iou_type="boundary",
                               dilation_ratio=DILATION_RATIO)
    return result.stats, {k: float(v) for k, v in result.timings.items()}


def run_faster_coco_eval(gt_path: str, dt_path: str, timer, iou_type: str = "boundary"):
    with timer("import"):
        from faster_coco_eval import COCO, COCOeval_faster
    return run_cocoapi_style(COCO, COCOeval_faster, gt_path, dt_path, timer, "boundary")


def run_vernier(gt_path: str, dt_path: str, timer, iou_type: str = "boundary"):
    import json
    from pathlib import Path

    with timer("import"):
        from vernier.instance import CocoDataset, evaluate_boundary_grid
    with timer("load_gt"):
        dataset = CocoDataset.from_json(Path(gt_path).read_bytes())
    with timer("load_dt"):
        from ..peers.vernier import _with_mask_boxes

        results = _with_mask_boxes(json.loads(Path(dt_path).read_bytes()))
    max_dets = [1, 10, 100]
    with timer("evaluate"):
        grid = evaluate_boundary_grid(dataset, results, parity_mode="strict",
                                      max_dets_per_image=max_dets[-1], use_cats=True,
                                      dilation_ratio=DILATION_RATIO, dt_area="mask")
    with timer("accumulate"):
        accumulated = grid.accumulate(max_dets)
    with timer("summarize"):
        summary = accumulated.summarize(max_dets)
    return list(summary.stats), {}


CASE = register(Case(
    name="boundary", iou_type="boundary", data_of="segm", peers=(),
    tools={"deteval": run_deteval, "faster-coco-eval": run_faster_coco_eval,
           "vernier": run_vernier},
    help="Boundary IoU on the segm data: deteval, faster-coco-eval, vernier",
))  # fmt: skip
