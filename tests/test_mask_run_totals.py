"""Masks whose runs do not add up to their size's h * w are refused before pycocotools'
mask IoU, which loops forever on two same-size masks whose runs add up to different totals
(deteval.masks.rle.check_run_totals).

The evaluations that would hang run in a subprocess under a timeout, so that a missing
check fails the test instead of hanging it. Reader-made columns carry the readers' check
(no second decode); selections keep it, new masks drop it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import deteval
import deteval.masks.rle as rle
from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
from deteval.io.coco import read_coco_gt, read_coco_results

# Two 2x2 masks: runs 0, 4 (the full mask) and 0, 5 (one pixel too many). pycocotools'
# iou on this pair never returns.
_GOOD = {"size": [2, 2], "counts": "04"}
_BAD = {"size": [2, 2], "counts": "05"}


def _pair(gt_mask: dict, dt_mask: dict) -> tuple[Dataset, Detections]:
    dataset = Dataset(Images(ids=[1], widths=[2], heights=[2]), Categories(ids=[1]),
                      GroundTruth(image_index=[0], category_index=[0], boxes=[[0, 0, 2, 2]],
                                  masks=[gt_mask]))
    detections = Detections(image_index=[0], category_index=[0], boxes=[[0, 0, 2, 2]],
                            scores=[0.9], masks=[dt_mask])
    return dataset, detections


def _dicts(gt_mask: dict, dt_mask: dict) -> tuple[dict, list]:
    """The pair as the API's in-memory COCO dicts (read by the readers)."""
    gt = {"images": [{"id": 1, "width": 2, "height": 2}], "categories": [{"id": 1}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 2],
                           "area": 4, "iscrowd": 0, "segmentation": gt_mask}]}
    return gt, [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": dt_mask}]


_CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from test_mask_run_totals import _pair, _dicts, _GOOD, _BAD
    import deteval
    gt, dt = ({gt}, {dt})
    try:
        {call}
    except ValueError as error:
        print("refused:", error)
    else:
        print("no error")
""")


def _run_child(gt: str, dt: str, call: str) -> str:
    """Run ``call`` on the pair in a subprocess; its output, or a failure if it hangs."""
    code = _CHILD.format(tests=str(Path(__file__).parent), gt=gt, dt=dt,
                         call=call)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{call} did not return (pycocotools' rleIou loops forever on the pair)")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("gt", "dt", "named"), [("_GOOD", "_BAD", "detections.masks[0]"),
                                                 ("_BAD", "_GOOD", "dataset.gt.masks[0]")])
@pytest.mark.parametrize("call", [
    "deteval.evaluate_coco(*_pair(gt, dt), iou_type='segm')",
    "deteval.evaluate_coco(*_pair(gt, dt), iou_type='boundary')",
    "deteval.match_outcomes(*_pair(gt, dt), iou_type='segm')",
])
def test_an_evaluation_of_masks_with_wrong_run_totals_is_refused_not_hung(gt, dt, named,
                                                                          call):
    out = _run_child(gt, dt, call)
    assert out.startswith("refused:"), out
    assert named in out and "add up to" in out and "2x2" in out


@pytest.mark.parametrize(("gt", "dt", "named"), [("_GOOD", "_BAD", "results[0]"),
                                                 ("_BAD", "_GOOD", "annotations[0]")])
def test_in_memory_dicts_with_wrong_run_totals_are_refused_by_the_readers(gt, dt, named):
    out = _run_child(gt, dt, "deteval.evaluate_coco(*_dicts(gt, dt), iou_type='segm')")
    assert out.startswith("refused:") and named in out and "add up to" in out, out


def test_the_error_names_the_mask_its_size_and_its_run_total():
    masks = [dict(_GOOD), {"size": [3, 2], "counts": "06"}, {"size": [3, 2], "counts": "16"}]
    detections = Detections(image_index=[0] * 3, category_index=[0] * 3,
                            boxes=[[0, 0, 1, 1]] * 3, scores=[1] * 3, masks=masks)
    with pytest.raises(ValueError, match=r"^detections\.masks\[2\]: RLE run lengths add up "
                                         r"to 7 pixels; a 3x2 mask needs 6"):
        rle.check_run_totals(detections, "detections")
    rle.check_run_totals(detections[:2], "detections")     # the first two are whole


def test_masks_right_for_their_size_are_evaluated_as_before():
    # Pixel runs that add up to h * w pass. Both masks are the full 2x2 image, as are the
    # boxes: the mask evaluation gives the box evaluation's numbers (IoU 1).
    pair = _pair(_GOOD, dict(_GOOD))
    result = deteval.evaluate_coco(*pair, iou_type="segm")
    np.testing.assert_array_equal(result.stats, deteval.evaluate_coco(*pair).stats)
    assert result.stats[0] > 0.99


@pytest.fixture
def segm_files(tmp_path):
    import json

    from maskgen import make_segm_dataset

    gt, results = make_segm_dataset(7, n_images=4, bbox_mode="none")
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(results))
    return gt_path, dt_path


def test_reader_columns_are_not_decoded_again(segm_files, monkeypatch):
    gt_path, dt_path = segm_files
    dataset = read_coco_gt(gt_path, iou_type="segm")
    detections = read_coco_results(dt_path, dataset, iou_type="segm")
    expected = deteval.evaluate_coco(dataset, detections, iou_type="segm")
    calls = []
    real = rle.compressed_areas
    monkeypatch.setattr(rle, "compressed_areas", lambda *a, **k: calls.append(1) or real(*a, **k))
    kept = detections[detections.scores > 0]            # a selection keeps the mark
    result = deteval.evaluate_coco(dataset, kept.replace(scores=kept.scores), iou_type="segm")
    assert calls == []
    np.testing.assert_array_equal(result.precision, expected.precision)
    # New masks (the same dicts, given anew) are checked once, with the same numbers.
    given = Detections(image_index=detections.image_index,
                       category_index=detections.category_index, boxes=detections.boxes,
                       scores=detections.scores, area=detections.area,
                       masks=list(detections.masks))
    again = deteval.evaluate_coco(dataset, given, iou_type="segm")
    assert calls == [1]
    np.testing.assert_array_equal(again.precision, expected.precision)
    assert not getattr(detections.replace(masks=detections.masks), rle.RUN_TOTALS_CHECKED,
                       False)


@pytest.mark.parametrize("n_masks", [2, 4])
def test_sizes_of_one_value_are_left_to_pycocotools_not_read_as_pairs(n_masks):
    # A size of one value is not an (h, w): the check reads no size out of two masks' values
    # (no "4x4 mask" that none of them is) and leaves the masks to pycocotools' own refusal.
    masks = [{"size": [4], "counts": "04"} for _ in range(n_masks)]
    detections = Detections(image_index=[0] * n_masks, category_index=[0] * n_masks,
                            boxes=[[0, 0, 1, 1]] * n_masks, scores=[1] * n_masks, masks=masks)
    rle.check_run_totals(detections, "detections")
