"""The results' ``dataset`` field and its deprecated alias ``gt`` (kept for one release).

``result.gt`` held the whole Dataset, so users wrote ``result.gt.gt`` for the ground-truth
table; the field is now ``dataset`` and ``gt`` warns, naming it, and returns the same object.
"""

from __future__ import annotations

import pytest
from lvisgen import make_lvis_dataset

import deteval
from deteval import evaluate_coco, evaluate_lvis, evaluate_voc

GT = {"images": [{"id": 1, "width": 100, "height": 100}],
      "categories": [{"id": 1, "name": "cat"}],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
                       "area": 100, "iscrowd": 0}]}
DT = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9}]


def _results():
    gt, results = make_lvis_dataset(0)
    return [evaluate_coco(GT, DT), evaluate_voc(GT, DT), evaluate_lvis(gt, results)]


@pytest.mark.parametrize("index", [0, 1, 2], ids=["coco", "voc", "lvis"])
def test_gt_alias_warns_and_returns_the_dataset(index):
    result = _results()[index]
    assert isinstance(result.dataset, deteval.Dataset)
    name = type(result).__name__
    with pytest.warns(DeprecationWarning, match=rf"{name}\.gt is deprecated; use "
                                                rf"{name}\.dataset"):
        alias = result.gt
    assert alias is result.dataset
