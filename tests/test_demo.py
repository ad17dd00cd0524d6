"""The bundled sample: fixtures/demo equals what deteval.demo generates, and deteval's COCO
numbers on it equal pycocotools' bit for bit."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval.demo import make_demo

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "demo"
GT_PATH, DT_PATH = FIXTURES / "gt.json", FIXTURES / "detections.json"


def test_fixtures_equal_the_generator():
    gt, results = make_demo(seed=0)
    # compare parsed JSON: what a JSON round trip of the generated objects gives
    assert json.loads(GT_PATH.read_text()) == json.loads(json.dumps(gt))
    assert json.loads(DT_PATH.read_text()) == json.loads(json.dumps(results))


def test_generator_is_deterministic_and_seeded():
    assert make_demo(seed=0) == make_demo(seed=0)
    assert make_demo(seed=1) != make_demo(seed=0)


def test_sample_has_what_the_demo_promises():
    gt, results = make_demo(seed=0)
    annotations = gt["annotations"]
    assert any(a["iscrowd"] for a in annotations)
    areas = [a["area"] for a in annotations]
    assert min(areas) < 32**2 and any(32**2 < a < 96**2 for a in areas) and max(areas) > 96**2
    assert len(results) > len(annotations) // 2


@pytest.fixture(scope="module")
def pycocotools_eval():
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO(str(GT_PATH))
        coco_dt = coco_gt.loadRes(str(DT_PATH))
        evaluator = COCOeval(coco_gt, coco_dt, iouType="bbox")
        evaluator.evaluate()
        evaluator.accumulate()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        evaluator.summarize()
    return evaluator, printed.getvalue()


def test_demo_equals_pycocotools(pycocotools_eval):
    evaluator, _ = pycocotools_eval
    result = deteval.evaluate_coco(GT_PATH, DT_PATH)
    assert np.array_equal(result.stats, evaluator.stats)
    for name in ("precision", "recall", "scores"):
        assert np.array_equal(getattr(result, name), evaluator.eval[name]), name
    assert 0.3 < result.stat("AP") < 0.9  # a sample worth showing: neither empty nor perfect


def test_demo_summary_equals_pycocotools_printout(pycocotools_eval):
    _, printed = pycocotools_eval
    result = deteval.evaluate_coco(GT_PATH, DT_PATH)
    assert result.summary() + "\n" == printed
