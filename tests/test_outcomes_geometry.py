"""match_outcomes and the confusion matrix match by the evaluation's similarity (iou_type).

Seeded segm and keypoint datasets (maskgen): per-class TP/FP of match_outcomes equal those of
evaluate_coco's match table at the same threshold and iou_type, and each detection's outcome
equals pycocotools' evalImgs (dtMatches / dtIgnore, area "all", maxDets 100). Hand-built
scenes where the geometry decides: two masks whose boxes match but masks do not, and
keypoints where OKS decides and the boxes cannot.
"""

from __future__ import annotations

import numpy as np
import pytest
from clirun import run as _cli
from cocogen import run_pycocotools
from keypointgen import make_keypoints_dataset
from maskgen import encode, make_segm_dataset

import deteval
from deteval.confusion import detection_confusion_matrix, operating_points
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.matching import FP, TP
from deteval.outcomes import FP_OUTCOMES, match_outcomes

_SEGM_SEEDS = (3, 8, 17, 42)      # thresholds 0.9, 0.5, 0.75, 0.6
_KEYPOINT_SEEDS = (5, 8, 23, 30)  # thresholds 0.75, 0.5, 0.9, 0.6


def _segm(seed: int) -> tuple[dict, list[dict]]:
    return make_segm_dataset(seed, p_many=0.0)


def _keypoints(seed: int) -> tuple[dict, list[dict]]:
    return make_keypoints_dataset(seed, p_many=0.0)


def _max_dets(iou_type: str) -> tuple[int, ...]:
    return (100,) if iou_type == "keypoints" else (1, 10, 100)


CASES = ([pytest.param("segm", _segm, s, id=f"segm-{s}") for s in _SEGM_SEEDS]
         + [pytest.param("keypoints", _keypoints, s, id=f"keypoints-{s}")
            for s in _KEYPOINT_SEEDS])


def _threshold(seed: int) -> float:
    return (0.5, 0.75, 0.6, 0.9)[seed % 4]


@pytest.mark.parametrize("iou_type, make, seed", CASES)
def test_outcomes_equal_coco_match_table_and_pycocotools(iou_type, make, seed):
    gt_dict, results = make(seed)
    t = _threshold(seed)
    dataset = read_coco_gt(gt_dict, iou_type=iou_type)
    detections = read_coco_results(results, dataset, iou_type=iou_type)
    assert len(detections) == len(results)          # row i is result i (loadRes id i + 1)
    out = match_outcomes(dataset, detections, iou_threshold=t, iou_type=iou_type)
    assert out.iou_type == iou_type

    # Per-class TP / FP against evaluate_coco's match table (area "all", maxDets 100).
    result = deteval.evaluate_coco(dataset, detections, iou_type=iou_type, iou_thresholds=[t],
                                   max_detections=_max_dets(iou_type))
    area = result.params.area_labels.index("all")
    status = result.matches.detection_status(area)[0]
    position = {cid: k for k, cid in enumerate(result.category_ids.tolist())}
    for row in out.per_class():
        k_of_row = dataset.categories.names.index(row["name"])
        k = position[int(dataset.categories.ids[k_of_row])]
        mine = detections.category_index == k_of_row
        assert row["tp"] == int(np.count_nonzero(mine & (status == TP))), row["name"]
        assert row["fp"] == int(np.count_nonzero(mine & (status == FP))), row["name"]
        assert int(result.n_detections[k]) == row["tp"] + row["fp"] + row["ignored_detections"]

    # Each detection against pycocotools' evalImgs at the same threshold.
    reference = run_pycocotools(gt_dict, results, iou_type=iou_type, iou_thresholds=[t],
                                max_detections=_max_dets(iou_type))
    expected = np.array(["ignored"] * len(results), dtype=object)   # unknown categories
    expected_gt = np.full(len(results), -1)
    n_area = len(reference.params.areaRng)
    n_img = len(reference.params.imgIds)
    seen = 0
    for index, entry in enumerate(reference.eval_imgs):
        if entry is None or (index // n_img) % n_area != 0:     # area "all" only
            continue
        for j, dt_id in enumerate(entry["dtIds"]):
            row = dt_id - 1
            matched, ignored = int(entry["dtMatches"][0, j]), bool(entry["dtIgnore"][0, j])
            expected[row] = "ignored" if ignored else "tp" if matched else "fp"
            expected_gt[row] = matched if matched else -1
            seen += 1
    assert seen == int(np.count_nonzero(detections.category_index >= 0))
    got = np.array(["fp" if name in FP_OUTCOMES else name for name in out.dt_outcome_names],
                   dtype=object)
    assert got.tolist() == expected.tolist()
    gt_ids = dataset.gt.ids
    known = (expected == "tp") | ((expected == "ignored") & (expected_gt > 0))
    assert gt_ids[out.dt_gt[known]].tolist() == expected_gt[known].tolist()


@pytest.mark.parametrize("iou_type, make, seed", CASES[:1] + CASES[-1:])
def test_result_gives_its_geometry_and_confusion_agrees(iou_type, make, seed):
    gt_dict, results = make(seed)
    result = deteval.evaluate_coco(gt_dict, results, iou_type=iou_type)
    from_result = match_outcomes(result, iou_threshold=0.5)
    given = match_outcomes(result.dataset, result.detections, iou_type=iou_type)
    assert from_result.iou_type == iou_type
    assert from_result.dt_outcome.tolist() == given.dt_outcome.tolist()
    assert np.array_equal(from_result.dt_iou, given.dt_iou, equal_nan=True)
    cm = detection_confusion_matrix(result)
    assert cm.iou_type == iou_type and cm.to_dict(zero_division=0)["iou_type"] == iou_type
    for row_cm, row_out in zip(cm.per_class(zero_division=0), from_result.per_class()):
        assert (row_cm["tp"], row_cm["fp"]) == (row_out["tp"], row_out["fp"])
    assert cm.n_ignored_detections.sum() == sum(
        r["ignored_detections"] for r in from_result.per_class()) - int(
        np.count_nonzero(result.detections.category_index < 0))
    points = operating_points(result)
    tp_at_zero = {name: int(c["tp"][-1]) if len(c["tp"]) else 0
                  for name, c in points.curves.items() if name != "overall"}
    assert tp_at_zero == {r["name"]: r["tp"] for r in from_result.per_class()}


# --------------------------------------------------------------------------------------
# Hand-built: the geometry decides
# --------------------------------------------------------------------------------------

def _masks_scene():
    """One object, two diagonal quadrants of a 20x20 box; a detection with the same box,
    three quadrants of which one is the object's (box IoU 1, mask IoU 100 / 400)."""
    height = width = 20
    ell = np.zeros((height, width), np.uint8)
    ell[:10, :10] = ell[10:, 10:] = 1           # 200 pixels, box [0, 0, 20, 20]
    other = np.zeros((height, width), np.uint8)
    other[:10, :] = other[10:, :10] = 1         # 300 pixels, same box; overlap 100 pixels
    gt = {"images": [{"id": 1, "width": width, "height": height}],
          "categories": [{"id": 1, "name": "cat"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0,
                           "bbox": [0, 0, 20, 20], "area": 200.0,
                           "segmentation": encode(ell)}]}
    dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "bbox": [0, 0, 20, 20],
           "segmentation": encode(other)}]
    return gt, dt


def test_masks_whose_boxes_match_are_told_apart_by_mask_iou():
    gt, dt = _masks_scene()
    by_box = match_outcomes(gt, dt)
    by_mask = match_outcomes(gt, dt, iou_type="segm")
    assert by_box.dt_outcome_names == ("tp",) and by_box.dt_iou.tolist() == [1.0]
    assert by_mask.dt_outcome_names == ("localization",)        # the right object, badly
    assert by_mask.dt_iou.tolist() == [100 / 400]                # intersection / union
    assert by_mask.gt_outcome_names == ("missed",)
    assert "iou_type='segm'" in repr(by_mask)
    # The COCO protocol agrees: a false positive at 0.5 by masks, a true one by boxes.
    for iou_type, status in (("segm", FP), ("bbox", TP)):
        result = deteval.evaluate_coco(gt, dt, iou_type=iou_type, iou_thresholds=[0.5])
        assert result.matches.detection_status()[0].tolist() == [status]
    cm = detection_confusion_matrix(gt, dt, iou_type="segm")
    assert cm.counts.tolist() == [[0, 1], [1, 0]]                # one FP, one missed
    assert detection_confusion_matrix(gt, dt).counts.tolist() == [[1, 0], [0, 0]]


def test_crowd_mask_matches_by_intersection_over_detection():
    gt, dt = _masks_scene()
    gt["annotations"][0]["iscrowd"] = 1
    out = match_outcomes(gt, dt, iou_type="segm")
    # IoA: 100 of the detection's 300 pixels lie in the crowd region (COCO's rule).
    assert out.dt_outcome_names == ("background",)                # 1/3 < 0.5: unmatched
    low = match_outcomes(gt, dt, iou_type="segm", iou_threshold=0.3)
    assert low.dt_outcome_names == ("ignored",) and low.dt_iou.tolist() == [100 / 300]
    assert low.gt_outcome_names == ("ignored",)


def _person(points: list[tuple[float, float]]) -> list[float]:
    flat = []
    for x, y in points:
        flat += [x, y, 2]
    return flat


def test_keypoints_oks_decides_where_boxes_cannot():
    """Two people with the same box, joints mirrored; each detection has one person's
    joints. By boxes the first detection takes the last object (IoU ties: COCO keeps the
    last) whatever its joints; by OKS each detection takes the object whose joints it has."""
    rng = np.random.default_rng(0)
    joints_a = [(float(x), float(y)) for x, y in rng.uniform(10, 90, size=(17, 2))]
    joints_a[0], joints_a[1] = (10.0, 10.0), (90.0, 90.0)        # both span the same box
    joints_b = [(100 - x, y) for x, y in joints_a]
    joints_b[0], joints_b[1] = (90.0, 10.0), (10.0, 90.0)
    box = [10.0, 10.0, 80.0, 80.0]
    gt = {"images": [{"id": 1, "width": 100, "height": 100}],
          "categories": [{"id": 1, "name": "person"}],
          "annotations": [{"id": i + 1, "image_id": 1, "category_id": 1, "iscrowd": 0,
                           "bbox": box, "area": 6400.0, "num_keypoints": 17,
                           "keypoints": _person(joints)}
                          for i, joints in enumerate((joints_a, joints_b))]}
    # The higher-scoring detection has A's joints.
    dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "bbox": box,
           "keypoints": _person(joints_a)},
          {"image_id": 1, "category_id": 1, "score": 0.8, "bbox": box,
           "keypoints": _person(joints_b)}]
    by_box = match_outcomes(gt, dt)
    by_oks = match_outcomes(gt, dt, iou_type="keypoints")
    assert by_box.dt_gt.tolist() == [1, 0]          # box IoU 1 with both: the last object
    assert by_oks.dt_gt.tolist() == [0, 1]          # OKS: the object of its joints
    assert by_oks.dt_outcome_names == ("tp", "tp") and by_oks.dt_iou.tolist() == [1.0, 1.0]
    reference = run_pycocotools(gt, dt, iou_type="keypoints", iou_thresholds=[0.5],
                                max_detections=[100])
    entry = next(e for e in reference.eval_imgs if e is not None)
    assert [int(m) for m in entry["dtMatches"][0]] == [1, 2]     # pycocotools agrees
    # Alone on A with B's joints: a perfect box, a poor OKS.
    gt_one = dict(gt, annotations=gt["annotations"][:1])
    wrong = match_outcomes(gt_one, dt[1:], iou_type="keypoints")
    assert match_outcomes(gt_one, dt[1:]).dt_outcome_names == ("tp",)
    assert wrong.dt_outcome_names in {("localization",), ("background",)}
    assert wrong.dt_iou[0] < 0.5 or np.isnan(wrong.dt_iou[0])


def test_keypoint_objects_without_keypoints_are_ignored():
    gt = {"images": [{"id": 1, "width": 100, "height": 100}],
          "categories": [{"id": 1, "name": "person"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0,
                           "bbox": [10, 10, 50, 50], "area": 2500.0, "num_keypoints": 0,
                           "keypoints": [0] * 51}]}
    dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "bbox": [10, 10, 50, 50],
           "keypoints": [35, 35, 1] * 17}]
    out = match_outcomes(gt, dt, iou_type="keypoints", iou_threshold=0.01)
    assert out.gt_outcome_names == ("ignored",) and out.counts()["fn"] == 0
    assert match_outcomes(gt, dt).gt_outcome_names == ("tp",)     # by boxes: found


def test_errors_name_the_problem():
    gt, dt = _masks_scene()
    with pytest.raises(ValueError, match="iou_type must be one of"):
        match_outcomes(gt, dt, iou_type="mask")
    dataset = read_coco_gt(gt)                           # read for boxes: no masks
    detections = read_coco_results(dt, dataset)
    with pytest.raises(ValueError, match="needs masks but the ground truth has none"):
        match_outcomes(dataset, detections, iou_type="segm")
    with pytest.raises(TypeError, match="dt .* is required"):
        match_outcomes(gt)
    result = deteval.evaluate_coco(gt, dt)
    with pytest.raises(TypeError, match="dt must be None"):
        detection_confusion_matrix(result, dt)


# --------------------------------------------------------------------------------------
# The drawings and the command line
# --------------------------------------------------------------------------------------

def _scene_files(tmp_path):
    import json

    from PIL import Image

    gt, dt = _masks_scene()
    gt["images"][0]["file_name"] = "a.png"
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    (tmp_path / "images").mkdir()
    Image.new("RGB", (20, 20)).save(tmp_path / "images" / "a.png")
    return str(tmp_path / "gt.json"), str(tmp_path / "dt.json")


def test_draw_matches_by_iou_type():
    from PIL import Image

    from deteval.viz.draw import STYLES, draw_matches

    gt, dt = _masks_scene()
    dataset = read_coco_gt(gt, iou_type="segm")
    detections = read_coco_results(dt, dataset, iou_type="segm")
    picture = Image.new("RGB", (20, 20))
    # The outline of the detection's mask at its top-right corner: a corner of the box too.
    by_mask = draw_matches(picture, dataset, detections, 0, iou_type="segm", labels=False,
                           show=("fp",), mask_fill=0)
    by_box = draw_matches(picture, dataset, detections, 0, labels=False, show=("tp",),
                          mask_fill=0)
    assert by_mask.getpixel((19, 0)) == STYLES["localization"].rgb
    assert by_box.getpixel((19, 0)) == STYLES["tp"].rgb


def test_cli_confusion_and_draw_iou_type(tmp_path):
    import json

    gt, dt = _scene_files(tmp_path)
    status, out, _ = _cli("confusion", gt, dt, "--iou-type", "segm", "--json",
                          tmp_path / "cm.json")
    assert status == 0 and "mask IoU >= 0.5" in out
    saved = json.loads((tmp_path / "cm.json").read_text())
    assert saved["iou_type"] == "segm" and saved["counts"] == [[0, 1], [1, 0]]
    status, out, _ = _cli("confusion", gt, dt, "--json", tmp_path / "box.json")
    assert status == 0 and json.loads((tmp_path / "box.json").read_text())["counts"] == \
        [[1, 0], [0, 0]]
    status, out, err = _cli("draw", gt, dt, "--images", tmp_path / "images", "--out",
                            tmp_path / "drawn", "--iou-type", "segm", "--score-threshold", 0,
                            "--contact-sheet", 0)
    assert status == 0, err
    assert "mask IoU >= 0.5, score >= 0: TP 0, FP 1 (0 duplicate, 0 wrong class, " \
           "1 localization, 0 background), FN 1" in out
    status, _, err = _cli("confusion", gt, dt, "--kpt-sigmas", "0.5")
    assert status == 2 and "--kpt-sigmas applies to --iou-type keypoints" in err
    status, _, err = _cli("draw", gt, dt, "--images", tmp_path / "images", "--out",
                          tmp_path / "d2", "--dilation-ratio", "0.1")
    assert status == 2 and "--dilation-ratio applies to --iou-type boundary" in err


def test_rotated_boxes_whose_axis_aligned_boxes_match():
    """Two thin rectangles crossing at right angles (45 and -45 degrees) share their
    axis-aligned box: a true positive by boxes, background by rotated-box IoU."""
    gt = {"images": [{"id": 1, "width": 100, "height": 100}],
          "categories": [{"id": 1, "name": "ship"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0,
                           "rbox": [50, 50, 60, 10, 45], "area": 600.0}]}
    dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "rbox": [50, 50, 60, 10, -45]}]
    by_rbox = match_outcomes(gt, dt, iou_type="rotated")
    assert by_rbox.dt_outcome_names == ("background",)
    # The crossing is a 10 x 10 square: IoU 100 / (600 + 600 - 100).
    result = deteval.evaluate_coco(gt, dt, iou_type="rotated", iou_thresholds=[0.05])
    assert result.matches.detection_status()[0].tolist() == [TP]
    low = match_outcomes(gt, dt, iou_type="rotated", iou_threshold=0.05)
    assert low.dt_outcome_names == ("tp",)
    assert low.dt_iou[0] == pytest.approx(100 / 1100)
    dataset = read_coco_gt(gt, iou_type="rotated")
    detections = read_coco_results(dt, dataset, iou_type="rotated")
    assert match_outcomes(dataset, detections).dt_outcome_names == ("tp",)   # by boxes


@pytest.mark.parametrize("seed", [3, 17])
def test_boundary_outcomes_equal_coco_match_table(seed):
    gt_dict, results = _segm(seed)
    result = deteval.evaluate_coco(gt_dict, results, iou_type="boundary", iou_thresholds=[0.5],
                                   max_detections=(1, 10, 100))
    status = result.matches.detection_status(0)[0]
    out = match_outcomes(result)
    assert out.iou_type == "boundary"
    fp = np.isin(np.array(out.dt_outcome_names), FP_OUTCOMES)
    assert np.array_equal(fp, status == FP)
    assert np.array_equal(np.array(out.dt_outcome_names) == "tp", status == TP)
    # The boundary decides some outcomes that mask IoU alone would not.
    assert not np.array_equal(match_outcomes(result, iou_type="segm").dt_outcome,
                              out.dt_outcome)
