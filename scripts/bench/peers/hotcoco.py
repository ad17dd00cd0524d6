"""hotcoco: pycocotools' API over a Rust core."""

from __future__ import annotations

from . import Peer, register, run_cocoapi_style


def run(gt_path: str, dt_path: str, timer, iou_type: str = "bbox"):
    with timer("import"):
        from hotcoco import COCO, COCOeval
    return run_cocoapi_style(COCO, COCOeval, gt_path, dt_path, timer, iou_type)


register(Peer("hotcoco", "hotcoco", "hotcoco", run))
