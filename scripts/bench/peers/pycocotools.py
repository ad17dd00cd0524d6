"""pycocotools, the reference: every other tool's stats are compared with its own."""

from __future__ import annotations

from . import Peer, register, run_cocoapi_style


def run(gt_path: str, dt_path: str, timer, iou_type: str = "bbox"):
    with timer("import"):
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    return run_cocoapi_style(COCO, COCOeval, gt_path, dt_path, timer, iou_type)


register(Peer("pycocotools", "pycocotools", "pycocotools", run, slow=True))
