"""The doctor's cheaper ways to the same verdicts (the input checks of every command).

* The box-format check skips the other layouts when the boxes as read already match too
  well for any layout to gain enough (``doctor._box_format``): a computed IoU is at most 1
  (up to rounding), so a median above ``1 - _FORMAT_GAIN`` as read cannot be beaten by
  ``_FORMAT_GAIN``. The verdict must be the one of trying every layout: no alarm missed,
  none raised, on pairs whose median lies on both sides of the bound.
* The duplicates check counts distinct rows with a lexsort (``doctor._distinct_rows``),
  as ``np.unique(rows, axis=0)`` counts them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deteval
from deteval import doctor
from deteval.boxes import convert_boxes

COCO100 = Path(__file__).resolve().parents[2] / "shared" / "data" / "coco_val2014_100"


def _pair(seed: int, jitter: float, layout: str, *, corner: float | None = None):
    """Ground truth and detections whose boxes are the objects' moved by ``jitter`` of their
    size, written in ``layout`` and read as xywh (COCO's). ``corner``: objects of about 100
    pixels whose top-left corner is about that far from the image's (corners read as
    sizes then still overlap, by ``(100 / (100 + corner)) ** 2``)."""
    rng = np.random.default_rng(seed)
    n_images, n_categories = 40, 3
    images = [{"id": i + 1, "width": 640, "height": 480} for i in range(n_images)]
    annotations, boxes, rows = [], [], []
    for image in images:
        for _ in range(rng.integers(1, 5)):
            w, h = rng.uniform(20, 200), rng.uniform(20, 200)
            x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
            if corner is not None:
                w, h = rng.uniform(90, 110, 2)
                x, y = rng.uniform(0.8 * corner, 1.2 * corner, 2)
            k = int(rng.integers(n_categories)) + 1
            annotations.append({"id": len(annotations) + 1, "image_id": image["id"],
                                "category_id": k, "bbox": [x, y, w, h], "area": w * h,
                                "iscrowd": 0})
            moved = [x, y, w, h] + rng.normal(0, jitter, 4) * [w, h, w, h]
            boxes.append([moved[0], moved[1], moved[0] + abs(moved[2]), moved[1] + abs(moved[3])])
            rows.append((image["id"], k, float(rng.uniform(0.2, 1))))
    written = convert_boxes(np.array(boxes), "xyxy", layout)
    gt = {"images": images, "annotations": annotations,
          "categories": [{"id": k + 1, "name": f"c{k}"} for k in range(n_categories)]}
    results = [{"image_id": i, "category_id": k, "score": s, "bbox": [float(v) for v in b]}
               for (i, k, s), b in zip(rows, written)]
    return gt, results


def _verdicts(gt, results) -> list:
    return [h.to_dict() for h in deteval.check_inputs(gt, results).hazards]


@pytest.mark.parametrize("layout", ["xywh", "xyxy", "cxcywh"])
def test_the_verdict_is_that_of_trying_every_layout(layout, monkeypatch):
    medians = []
    for seed, jitter in enumerate([0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.3]):
        gt, results = _pair(seed, jitter, layout)
        medians.append(deteval.check_inputs(gt, results).median_iou)
        bounded = _verdicts(gt, results)
        monkeypatch.setattr(doctor, "_IOU_SLACK", 10.0)      # the bound never holds
        assert _verdicts(gt, results) == bounded
        monkeypatch.undo()
    if layout == "xywh":        # the pairs lie on both sides of the bound
        assert min(medians) < 1 - doctor._FORMAT_GAIN < max(medians)


@pytest.mark.parametrize("corner", [5.0, 15.0, 25.0, 35.0, 60.0])
def test_the_verdict_on_corners_read_as_sizes_near_the_bound(corner, monkeypatch):
    """xyxy read as xywh near the image's corner: the boxes as read still overlap the objects
    (median 0.5-0.9), and xyxy matches them: alarms on both sides of the bound."""
    gt, results = _pair(7, 0.01, "xyxy", corner=corner)
    bounded = _verdicts(gt, results)
    monkeypatch.setattr(doctor, "_IOU_SLACK", 10.0)
    assert _verdicts(gt, results) == bounded
    median = deteval.check_inputs(gt, results).median_iou
    assert bool(bounded) == (median < 1 - doctor._FORMAT_GAIN), median


def test_the_other_layouts_are_not_tried_above_the_bound(monkeypatch):
    gt, results = _pair(0, 0.01, "xywh")
    converted = []
    monkeypatch.setattr(doctor, "convert_boxes",
                        lambda *a, **k: converted.append(1) or convert_boxes(*a, **k))
    diagnosis = deteval.check_inputs(gt, results)
    assert diagnosis.ok and diagnosis.median_iou > 1 - doctor._FORMAT_GAIN
    assert converted == []
    gt, results = _pair(0, 0.3, "xywh")
    assert deteval.check_inputs(gt, results).median_iou < 1 - doctor._FORMAT_GAIN
    assert converted                                         # below it they are tried


@pytest.mark.skipif(not COCO100.is_dir(), reason=f"{COCO100} is absent")
def test_the_coco_sample_is_judged_without_the_other_layouts(monkeypatch):
    converted = []
    monkeypatch.setattr(doctor, "convert_boxes",
                        lambda *a, **k: converted.append(1) or convert_boxes(*a, **k))
    diagnosis = deteval.check_inputs(COCO100 / "instances_val2014_100.json",
                                     COCO100 / "instances_val2014_fakebbox100_results.json")
    assert diagnosis.ok and converted == []


_coordinate = st.one_of(
    st.floats(-1e6, 1e6), st.floats(-1e300, 1e300), st.floats(-1e-300, 1e-300),
    st.sampled_from([0.0, -0.0, 1.0, 0.1, 0.2, 0.3, 1e308, -1e308, np.inf, -np.inf, np.nan]))
_box = st.lists(_coordinate, min_size=4, max_size=4)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(_box, _box, st.booleans()), min_size=1, max_size=12))
def test_a_computed_iou_is_at_most_one(pairs):
    """The bound the shortcut rests on, for any boxes (inverted, huge, tiny, not finite; a
    pair's second box sometimes the first moved by a rounding)."""
    a = np.array([p[0] for p in pairs], dtype=float)
    b = np.array([p[1] for p in pairs], dtype=float)
    same = np.array([p[2] for p in pairs])
    b[same] = np.nextafter(a[same], np.inf)
    iou = doctor._iou(a, b)
    assert (iou <= 1 + doctor._IOU_SLACK).all() and (iou >= 0).all()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 60), st.integers(1, 7))
def test_distinct_rows_count_as_numpy_unique(seed, n, width):
    """The duplicates check's count of distinct rows (``doctor._distinct_rows``) is that of
    ``np.unique(rows, axis=0)``, with rows repeated, differing in one column only, and
    signed zeros (equal as numbers)."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(-2, 3, size=(n, width)).astype(float) * rng.choice([0.5, 1.0, 1e9])
    if n:
        rows = rows[rng.integers(0, n, n)]                       # repeats
        rows[rng.random(n) < 0.2] *= -1.0                        # 0.0 -> -0.0
    assert doctor._distinct_rows(rows) == len(np.unique(rows, axis=0))
