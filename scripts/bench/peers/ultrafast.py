"""ultrafast-pycocotools: pycocotools' ``COCO`` / ``COCOeval`` over a multithreaded Rust core
(Rayon), for bbox, segm and keypoints."""

from __future__ import annotations

from . import Peer, register, run_cocoapi_style


def run(gt_path: str, dt_path: str, timer, iou_type: str = "bbox"):
    with timer("import"):
        from ultrafast_pycocotools import COCO, COCOeval
    return run_cocoapi_style(COCO, COCOeval, gt_path, dt_path, timer, iou_type)


register(Peer(
    "ultrafast-pycocotools", "ultrafast_pycocotools", "ultrafast-pycocotools", run,
    note="evaluate() runs on Rayon threads: cpu can exceed e2e.",
))  # fmt: skip
