"""The tools timed side by side: one module per tool, each registering a :class:`Peer`.

A peer's ``run(gt_path, dt_path, timer, iou_type)`` runs in a fresh child process: it imports
its tool inside ``with timer("import"):``, times each phase it can separate under the names of
:data:`..common.PHASES` (a phase it does not have is left out and shows as "-"), and returns
``(stats, inner)``: the summary stats and any timings the tool reports itself (seconds by name).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from ..common import add_unique

#: The peers' modules, in the order the report lists the tools.
BUILTIN = ("deteval", "hotcoco", "ultrafast", "vernier", "faster_coco_eval", "pycocotools")
#: What pycocotools evaluates, and so most of its look-alikes.
COCO_IOU_TYPES = frozenset({"bbox", "segm", "keypoints"})


@dataclass(frozen=True)
class Peer:
    name: str
    module: str  # import name, to tell "not installed" before running
    distribution: str  # for its version in the report
    run: Callable
    iou_types: frozenset = COCO_IOU_TYPES
    slow: bool = False  # runs --repeat-slow times
    note: str = ""  # printed under the table when it ran: what its phases hold


PEERS: dict[str, Peer] = {}


def register(peer: Peer) -> Peer:
    """Add ``peer`` to :data:`PEERS` (a second peer of the same name is an error)."""
    return add_unique(PEERS, peer, "peers")


def run_cocoapi_style(coco_cls, eval_cls, gt_path: str, dt_path: str, timer, iou_type: str):
    """The pycocotools workflow, which faster-coco-eval, hotcoco and ultrafast reproduce."""
    with timer("load_gt"):
        coco_gt = coco_cls(gt_path)
    with timer("load_dt"):
        coco_dt = coco_gt.loadRes(dt_path)
    with timer("evaluate"):
        evaluator = eval_cls(coco_gt, coco_dt, iou_type)
        evaluator.evaluate()
    with timer("accumulate"):
        evaluator.accumulate()
    with timer("summarize"):
        evaluator.summarize()
    return evaluator.stats, {}


for _module in BUILTIN:
    importlib.import_module(f"{__name__}.{_module}")
