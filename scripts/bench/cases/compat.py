"""The compat case: the pycocotools drop-in (``deteval.compat``) against
``deteval.evaluate_coco`` on the bbox case's data (formerly scripts/bench_compat.py).

Both run end to end from the same files in a fresh child process per run, round robin, as
every tool of the bench: ``COCO(gt)``, ``loadRes(results)``, ``COCOeval``, ``evaluate()``,
``accumulate()``, ``summarize()`` against ``evaluate_coco`` (the ``deteval`` peer). The report
gives the median and minimum of each, their ratio, and checks that the 12 stats are equal to
the last bit."""

from __future__ import annotations

from ..common import use_source_tree
from ..peers import run_cocoapi_style
from . import Case, register


def run_compat(gt_path: str, dt_path: str, timer, iou_type: str = "bbox"):
    """``deteval.compat``'s COCO / COCOeval, the pycocotools workflow phase by phase."""
    use_source_tree()
    with timer("import"):
        from deteval.compat import COCO, COCOeval
    return run_cocoapi_style(COCO, COCOeval, gt_path, dt_path, timer, iou_type)


CASE = register(Case(
    name="compat", iou_type="bbox", data_of="bbox", tools={"deteval-compat": run_compat},
    peers=("deteval",),
    help="deteval.compat (pycocotools' API) against evaluate_coco on the bbox data",
))  # fmt: skip
