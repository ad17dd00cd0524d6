"""String image and category ids (deteval/io/coco/string_ids.py): taken when every id of a kind
is a string, as pycocotools takes them, with pycocotools' numbers; a mix refused, naming a
record of each."""

from __future__ import annotations

import contextlib
import copy
import io
import json

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

import deteval

GT = {"images": [{"id": f"img{i}", "width": 100, "height": 100} for i in (3, 1, 2, 10)],
      "categories": [{"id": "dog", "name": "dog"}, {"id": "cat", "name": "cat"}],
      "annotations": [{"id": k + 1, "image_id": f"img{k % 4 + 1 if k % 4 < 3 else 10}",
                       "category_id": ["dog", "cat"][k % 2], "bbox": [10 * k, 5, 20, 30],
                       "area": 600, "iscrowd": 0} for k in range(8)]}
DT = [{"image_id": a["image_id"], "category_id": a["category_id"],
       "bbox": [a["bbox"][0] + k % 3, 5, 20, 30], "score": 0.5}   # ties across images
      for k, a in enumerate(GT["annotations"])]
DT += [{"image_id": "img1", "category_id": "cat", "bbox": [50, 50, 10, 10], "score": 0.5},
       {"image_id": "img10", "category_id": "bird", "bbox": [0, 0, 10, 10], "score": 0.9}]


def _pycocotools(gt, dt) -> np.ndarray:
    coco = COCO()
    coco.dataset = copy.deepcopy(gt)
    with contextlib.redirect_stdout(io.StringIO()):
        coco.createIndex()
        run = COCOeval(coco, coco.loadRes(copy.deepcopy(dt)), "bbox")
        run.evaluate()
        run.accumulate()
        run.summarize()
    return run.stats


def test_string_ids_give_pycocotools_numbers(tmp_path):
    expected = _pycocotools(GT, [d for d in DT if d["category_id"] != "bird"])
    result = deteval.evaluate_coco(GT, DT)
    np.testing.assert_array_equal(result.stats, expected)
    assert "1 detection(s) dropped" in " ".join(result.notes)
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(GT))
    dt_path.write_text(json.dumps(DT))
    np.testing.assert_array_equal(deteval.evaluate_coco(gt_path, dt_path).stats, expected)
    dataset = deteval.read_coco_gt(gt_path)
    # Numbered in sorted string order, as COCOeval sorts imgIds: 'img1' < 'img10' < 'img2'.
    assert dataset.string_ids == {"image": ("img1", "img10", "img2", "img3"),
                                  "category": ("cat", "dog")}
    assert dataset.images.ids.tolist() == [4, 1, 3, 2]


def test_a_mix_of_strings_and_numbers_is_refused_naming_a_record_of_each():
    mixed = copy.deepcopy(GT)
    mixed["images"][2]["id"] = 2
    with pytest.raises(deteval.FormatError, match=r"images\[2\]: 'id' mixes strings and "
                       r"numbers: images\[0\] has 'img3', images\[2\] has 2"):
        deteval.read_coco_gt(mixed)
    dt = [*DT[:2], {**DT[2], "image_id": 2}]
    with pytest.raises(deteval.FormatError, match=r"results\[2\]: 'image_id' mixes strings and "
                       r"numbers: results\[0\] has 'img1', results\[2\] has 2"):
        deteval.evaluate_coco(GT, dt)


def test_results_refer_to_ids_of_the_same_kind(tmp_path):
    numbers = [{**d, "image_id": 1} for d in DT]
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(numbers))   # the typed fast path must not take these
    with pytest.raises(deteval.FormatError, match="'image_id' is the number 1 but the ground "
                       "truth's ids of this kind are strings"):
        deteval.evaluate_coco(GT, path)
    with pytest.raises(deteval.FormatError, match="image_id 'img99' is not in the ground "
                       "truth's images"):
        deteval.evaluate_coco(GT, [{**DT[0], "image_id": "img99"}])
    numeric_gt = deteval.read_coco_gt({"images": [{"id": 1}], "categories": [{"id": 1}],
                                       "annotations": []})
    with pytest.raises(deteval.FormatError, match="'image_id' is the string 'a' but the ground "
                       "truth's ids of this kind are numbers"):
        deteval.read_coco_results([{"image_id": "a", "category_id": 1, "bbox": [0, 0, 1, 1],
                                    "score": 1}], numeric_gt)
    with pytest.raises(deteval.FormatError, match="annotations\\[0\\]: image_id 'x' is not in "
                       "'images'"):
        deteval.read_coco_gt({**GT, "annotations": [{**GT["annotations"][0],
                                                     "image_id": "x"}]})
