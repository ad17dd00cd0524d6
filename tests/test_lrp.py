"""LRP against a literal reference written from the authors' LRP-Error fork of pycocotools
(``tests/lrp_reference.py``): the per-class oLRP, components and thresholds and the summary
are equal bit for bit on seeded datasets and on coco_val2014_100."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cocogen import make_dataset
from lrp_reference import run_lrp_reference

import deteval

FIELDS = ("olrp", "olrp_loc", "olrp_fp", "olrp_fn", "thresholds", "stats")


def assert_equal_to_reference(result, ref):
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(result, name), ref[name], err_msg=name)
    assert result.category_ids.tolist() == ref["category_ids"]


@pytest.mark.parametrize("seed", range(110))
def test_equal_to_reference_on_seeded_datasets(seed):
    gt, dt = make_dataset(seed, segmentation=False, p_many=0.1 if seed % 5 == 0 else 0.0)
    assert_equal_to_reference(deteval.lrp(gt, dt), run_lrp_reference(gt, dt))


def test_equal_to_reference_on_coco100(coco100_dir):
    gt = json.loads((coco100_dir / "instances_val2014_100.json").read_text())
    dt = json.loads((coco100_dir / "instances_val2014_fakebbox100_results.json").read_text())
    assert_equal_to_reference(deteval.lrp(gt, dt), run_lrp_reference(gt, dt))


def _one_object():
    gt = {"images": [{"id": 1, "width": 10, "height": 10}],
          "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4],
                           "area": 16, "iscrowd": 0}]}
    return gt


def test_hand_computed_example():
    """One object; a TP of IoU 0.75 at 0.9 and an FP at 0.8: LRP at 0.9 is
    (0.25 / 0.5) / 1 = 0.5, at 0.8 it is (0.5 + 1) / 2 = 0.75, so oLRP 0.5 at 0.9."""
    dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 3], "score": 0.9},
          {"image_id": 1, "category_id": 1, "bbox": [6, 6, 2, 2], "score": 0.8}]
    r = deteval.lrp(_one_object(), dt)
    assert r.olrp[0, 0] == 0.5 and r.olrp_loc[0, 0] == 0.25
    assert r.olrp_fp[0, 0] == 0 and r.olrp_fn[0, 0] == 0 and r.thresholds[0, 0] == 0.9
    assert r.olrp[1, 0] == -1  # no objects of "b": left out
    assert r.lrp_error(0.85).tolist() == [0.5, -1.0]
    assert r.lrp_error(0.5).tolist() == [0.75, -1.0]
    assert r.lrp_error(0.95).tolist() == [1.0, -1.0]
    assert r.summary()["moLRP"] == 0.5
    json.dumps(r.to_dict())


def test_no_true_positive_gives_one_and_nan():
    dt = [{"image_id": 1, "category_id": 1, "bbox": [6, 6, 2, 2], "score": 0.8}]
    r = deteval.lrp(_one_object(), dt)
    assert r.olrp[0, 0] == 1 and r.olrp_fn[0, 0] == 1
    assert np.isnan([r.olrp_loc[0, 0], r.olrp_fp[0, 0], r.thresholds[0, 0]]).all()


@pytest.mark.parametrize("seed", range(5))
def test_optimum_is_the_minimum_of_lrp_error(seed):
    gt, dt = make_dataset(seed + 500, segmentation=False)
    r = deteval.lrp(gt, dt)
    for k in np.flatnonzero(~np.isnan(r.thresholds[:, 0]) & (r.thresholds[:, 0] > -1)):
        assert r.lrp_error(r.thresholds[k, 0])[k] >= r.olrp[k, 0]
        for s in np.unique([d["score"] for d in dt]):
            assert r.lrp_error(s)[k] >= r.olrp[k, 0]


@pytest.mark.parametrize("kwargs", [{"iou_threshold": 1.0}, {"iou_threshold": 0},
                                    {"max_detections": 0}])
def test_bad_settings(kwargs):
    with pytest.raises(ValueError):
        deteval.lrp(_one_object(), [], **kwargs)
