"""LVIS with Boundary IoU: against faster-coco-eval's LVIS-style boundary mode, and the CLI.

lvis-api has no boundary mode; ``tests/test_boundary.py::test_lvis_boundary`` drives
lvis-api's ``LVISEval`` with boundary-iou-api's IoU. This file adds faster-coco-eval
(``COCOeval_faster(iouType="boundary", lvis_style=True)``, maxDets 300, as its own LVIS test
calls it). Its LVIS-style evaluation is not lvis-api's on every input: it keeps COCO's crowd
rule, has no per-image cut, and fails (``unordered_map::at``) on results in an image without
objects. So the seeded datasets (``lvisgen``) are reduced to what both read alike: no crowd or
``ignore`` objects, no zero areas, no results in images without objects, no crowded image.
On a dataset where faster-coco-eval's ``segm`` numbers equal deteval's (= lvis-api's), its
``boundary`` numbers must equal deteval's too (stats and precision, to 1e-12); a dataset where
even ``segm`` differs is skipped, saying so.
"""

from __future__ import annotations

import copy
import io
import json
import logging

import numpy as np
import pytest
from lvisgen import make_lvis_dataset
from pycocotools import mask as mask_utils

from deteval.cli import main
from deteval.protocols.lvis import evaluate_lvis


def _reduced(seed: int) -> tuple[dict, list[dict]]:
    gt, results = make_lvis_dataset(seed, segm=True, p_crowded_image=0.0)
    objects = [a for a in gt["annotations"]
               if not a.get("iscrowd") and not a.get("ignore") and a.get("area", 0) > 0]
    gt["annotations"] = objects
    with_objects = {a["image_id"] for a in objects}
    categories = {c["id"] for c in gt["categories"]}
    results = [r for r in results if r["image_id"] in with_objects
               and r["category_id"] in categories and mask_utils.area(r["segmentation"]) > 0]
    return gt, results


def _faster_coco_eval(gt: dict, results: list[dict], iou_type: str, ratio: float):
    from faster_coco_eval import COCO, COCOeval_faster

    coco_gt = COCO(copy.deepcopy(gt))
    evaluator = COCOeval_faster(coco_gt, coco_gt.loadRes(copy.deepcopy(results)),
                                iouType=iou_type, lvis_style=True,
                                boundary_dilation_ratio=ratio,
                                print_function=lambda *args, **kwargs: None)
    evaluator.params.maxDets = [300]
    evaluator.evaluate()
    evaluator.accumulate()
    evaluator.summarize()
    stats = evaluator.stats_as_dict
    names = {"AP_all": "AP", "AP_50": "AP50", "AP_75": "AP75", "AP_small": "APs",
             "AP_medium": "APm", "AP_large": "APl", "APr": "APr", "APc": "APc", "APf": "APf"}
    return ({ours: stats[theirs] for theirs, ours in names.items()},
            np.asarray(evaluator.eval["precision"])[..., 0])


def _agree(ours, reference) -> bool:
    stats, precision = reference
    return (all(abs(ours.stats_named[name] - value) <= 1e-12 for name, value in stats.items())
            and np.allclose(ours.precision, precision, rtol=0, atol=1e-12))


@pytest.mark.parametrize("seed", range(2000, 2024))
def test_equal_to_faster_coco_eval_lvis_boundary(seed):
    pytest.importorskip("faster_coco_eval")
    gt, results = _reduced(seed)
    if not results or ("bbox" in results[0]) != all("bbox" in r for r in results):
        # (results[0] decides how loadRes reads them all: the reduction may have dropped the
        # first result, which had no box, and left a first result with one)
        pytest.skip("no results, or a first result with a bbox when others have none")
    logging.disable(logging.WARNING)     # faster-coco-eval logs its progress
    try:
        segm = _faster_coco_eval(gt, results, "segm", 0.02)
        if not _agree(evaluate_lvis(gt, results, iou_type="segm"), segm):
            pytest.skip("faster-coco-eval's LVIS-style segm differs from lvis-api here")
        boundary = _faster_coco_eval(gt, results, "boundary", 0.02)
    finally:
        logging.disable(logging.NOTSET)
    ours = evaluate_lvis(gt, results, iou_type="boundary", dilation_ratio=0.02)
    assert _agree(ours, boundary), (ours.stats_named, boundary[0])


def test_cli_boundary(tmp_path):
    gt, results = make_lvis_dataset(2001, segm=True)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    out, err = io.StringIO(), io.StringIO()
    status = main(["lvis", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), "--iou-type",
                   "boundary", "--dilation-ratio", "0.03", "--json", str(tmp_path / "o.json")],
                  stdout=out, stderr=err)
    assert status == 0, err.getvalue()
    expected = evaluate_lvis(gt, results, iou_type="boundary", dilation_ratio=0.03)
    assert out.getvalue().splitlines() == expected.summary_lines
    payload = json.loads((tmp_path / "o.json").read_text())
    assert payload["stats"] == expected.stats.tolist()
    assert payload["params"]["iou_type"] == "boundary"
    assert payload["params"]["dilation_ratio"] == 0.03
    assert expected.stats.tolist() != evaluate_lvis(gt, results, iou_type="segm").stats.tolist()
