"""The COCO protocol with ``iou_type="polygon"`` and ``"rotated"`` (beyond pycocotools).

Checked: axis-aligned rotated boxes at angle 0 give exactly the bbox protocol's numbers;
rotating the whole scene leaves AP unchanged; polygons equal to rectangles give the bbox
numbers; bad polygons are refused with the record named, or repaired on request.
"""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

import deteval
from deteval.cli import main
from deteval.errors import FormatError


def scene(seed: int, *, integral: bool) -> tuple[dict, list]:
    """Boxes given as bbox, rbox at angle 0 and polygon, all describing the same rectangles."""
    rng = np.random.default_rng(seed)
    images = [{"id": i, "width": 200, "height": 160} for i in range(1, 5)]
    categories = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    annotations, results = [], []

    def shapes(x, y, w, h):
        return {"bbox": [x, y, w, h], "rbox": [x + w / 2, y + h / 2, w, h, 0.0],
                "polygon": [x, y, x + w, y, x + w, y + h, x, y + h]}

    def number(lo, hi):
        value = rng.uniform(lo, hi)
        return float(round(value)) if integral else float(value)

    for image in images:
        for _ in range(int(rng.integers(1, 6))):
            x, y, w, h = number(0, 150), number(0, 110), number(4, 48), number(4, 48)
            annotations.append({"id": len(annotations) + 1, "image_id": image["id"],
                                "category_id": int(rng.integers(1, 3)), "area": w * h,
                                "iscrowd": int(rng.random() < 0.1), **shapes(x, y, w, h)})
        for _ in range(int(rng.integers(0, 9))):
            if annotations and rng.random() < 0.7:
                g = annotations[int(rng.integers(len(annotations)))]["bbox"]
                x = g[0] + (float(rng.integers(-6, 7)) if integral else rng.normal(0, 4))
                y = g[1] + (float(rng.integers(-6, 7)) if integral else rng.normal(0, 4))
                w, h = g[2], g[3]
            else:
                x, y, w, h = number(0, 150), number(0, 110), number(4, 48), number(4, 48)
            x, y = max(x, 0.0), max(y, 0.0)
            results.append({"image_id": image["id"], "category_id": int(rng.integers(1, 3)),
                            "score": float(round(rng.random(), 2)), **shapes(x, y, w, h)})
    return {"images": images, "annotations": annotations, "categories": categories}, results


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("iou_type", ["rotated", "polygon"])
def test_axis_aligned_shapes_give_the_bbox_numbers(seed, iou_type):
    gt, results = scene(seed, integral=True)
    boxes = deteval.evaluate_coco(gt, results)
    shaped = deteval.evaluate_coco(gt, results, iou_type=iou_type)
    assert np.array_equal(shaped.stats, boxes.stats)
    assert np.array_equal(shaped.precision, boxes.precision)
    assert np.array_equal(shaped.recall, boxes.recall)


def rotate(gt: dict, results: list, degrees: float, centre=(100.0, 80.0)) -> tuple[dict, list]:
    """The scene turned by ``degrees`` (counter-clockwise on the image) about ``centre``."""
    a = math.radians(degrees)
    cx0, cy0 = centre

    def turn(x, y):
        dx, dy = x - cx0, y - cy0
        return cx0 + dx * math.cos(a) + dy * math.sin(a), cy0 - dx * math.sin(a) + dy * math.cos(a)

    def moved(record):
        record = copy.deepcopy(record)
        cx, cy, w, h, angle = record["rbox"]
        record["rbox"] = [*turn(cx, cy), w, h, angle + degrees]
        record.pop("bbox")
        return record

    return ({**gt, "annotations": [moved(r) for r in gt["annotations"]]},
            [moved(r) for r in results])


@pytest.mark.parametrize("seed", range(8))
def test_rotating_the_whole_scene_leaves_ap_unchanged(seed):
    gt, results = scene(100 + seed, integral=False)
    for record in gt["annotations"] + results:
        record["rbox"][4] = float(np.random.default_rng(seed).uniform(-90, 90))
    base = deteval.evaluate_coco(gt, results, iou_type="rotated")
    for degrees in (17.0, 90.0, 233.5):
        turned = deteval.evaluate_coco(*rotate(gt, results, degrees), iou_type="rotated")
        np.testing.assert_allclose(turned.precision, base.precision, rtol=0, atol=1e-12)
        np.testing.assert_allclose(turned.stats, base.stats, rtol=0, atol=1e-12)


def test_rotated_iou_is_exact_for_a_hand_computed_case():
    gt = {"images": [{"id": 1, "width": 100, "height": 100}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "area": 100.0,
                           "iscrowd": 0, "rbox": [50, 50, 10, 10, 0]}]}
    # the same square turned by 45 degrees: the overlap is a regular octagon of area
    # 2 (sqrt(2) - 1) * 100, so IoU = 1 / sqrt(2)
    results = [{"image_id": 1, "category_id": 1, "score": 0.9, "rbox": [50, 50, 10, 10, 45]}]
    result = deteval.evaluate_coco(gt, results, iou_type="rotated")
    inter = 2 * (math.sqrt(2) - 1) * 100
    iou = inter / (200 - inter)
    assert abs(iou - 1 / math.sqrt(2)) < 1e-12
    expected_hits = sum(t <= iou + 1e-12 for t in np.linspace(0.5, 0.95, 10))
    assert result.recall[:, 0, 0, -1].tolist() == [1.0] * expected_hits + [0.0] * (
        10 - expected_hits)
    assert result.detections.rboxes.tolist() == [[50.0, 50.0, 10.0, 10.0, 45.0]]


def test_bow_tie_polygon_is_refused_with_its_record_or_repaired(tmp_path):
    gt = {"images": [{"id": 1, "width": 50, "height": 50}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 4, "image_id": 1, "category_id": 1, "iscrowd": 0,
                           "polygon": [0, 0, 10, 10, 10, 0, 0, 10]}]}
    results = [{"image_id": 1, "category_id": 1, "score": 0.5,
                "polygon": [0, 0, 10, 0, 10, 10, 0, 10]}]
    with pytest.raises(FormatError, match=r"annotations\[0\] \(id 4\)") as error:
        deteval.evaluate_coco(gt, results, iou_type="polygon")
    assert "repair" in str(error.value)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    import io
    out, err = io.StringIO(), io.StringIO()
    assert main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 "--iou-type", "polygon"], stdout=out, stderr=err) == 1
    assert "gt.json" in err.getvalue() and "id 4" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main(["coco", str(tmp_path / "gt.json"), str(tmp_path / "dt.json"),
                 "--iou-type", "polygon", "--repair-polygons"], stdout=out,
                stderr=err) == 0, err.getvalue()
    assert "Average Precision" in out.getvalue()


def test_polygon_with_an_odd_count_names_the_result():
    gt = {"images": [{"id": 1, "width": 50, "height": 50}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0,
                           "polygon": [0, 0, 10, 0, 10, 10]}]}
    results = [{"image_id": 1, "category_id": 1, "score": 0.5, "polygon": [0, 0, 10, 0, 10]}]
    with pytest.raises(FormatError, match=r"results\[0\]"):
        deteval.evaluate_coco(gt, results, iou_type="polygon")


def test_missing_rbox_names_the_record():
    gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 3, "image_id": 1, "category_id": 1, "iscrowd": 0,
                           "bbox": [0, 0, 1, 1], "area": 1}]}
    with pytest.raises(FormatError, match=r"annotations\[0\] \(id 3\).*'rbox'"):
        deteval.evaluate_coco(gt, [], iou_type="rotated")


@pytest.mark.parametrize(("bad", "message"), [
    ([1, 2, 3, 4], "5 numbers"), ([1, 2, 3, 4, True], "5 numbers"),
    ([1, 2, "3", 4, 5], "5 numbers"), ((1, 2, 3, 4, 5.0), None),
    ([1, 2, -3, 4, 5], "w, h >= 0"), ([1, 2, 3, 4, 10**400], "finite"),
    ([1, 2, 3, 4, float("nan")], "finite"), ([1, 2, 3, 4, 5, 6, 7, 8], "polygon")])
def test_rbox_values_are_checked_record_by_record(bad, message):
    """Lists of 5 plain numbers are converted at once; anything else is walked record by
    record, and the error names the record (the third of four here)."""
    records = [{"id": i + 1, "image_id": 1, "category_id": 1, "iscrowd": 0,
                "rbox": [10.0 * i, 10, 4, 2, 30]} for i in range(4)]
    records[2]["rbox"] = bad
    gt = {"images": [{"id": 1, "width": 99, "height": 99}],
          "categories": [{"id": 1, "name": "a"}], "annotations": records}
    if message is None:             # a tuple is taken like a list
        dataset = deteval.read_coco_gt(gt, iou_type="rotated")
        assert dataset.gt.rboxes[2].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
        return
    with pytest.raises(FormatError, match=rf"annotations\[2\] \(id 3\).*{message}"):
        deteval.read_coco_gt(gt, iou_type="rotated")
