"""faster-coco-eval: pycocotools' API over a C++ core."""

from __future__ import annotations

from . import Peer, register, run_cocoapi_style


def run(gt_path: str, dt_path: str, timer, iou_type: str = "bbox"):
    # By default COCOeval_faster.evaluate() matches and accumulates in one C++ call and
    # accumulate() has nothing left to do; the report notes this.
    with timer("import"):
        from faster_coco_eval import COCO, COCOeval_faster
    return run_cocoapi_style(COCO, COCOeval_faster, gt_path, dt_path, timer, iou_type)


register(Peer(
    "faster-coco-eval", "faster_coco_eval", "faster-coco-eval", run, slow=True,
    note="evaluate() matches and accumulates in one C++ call.",
))  # fmt: skip
