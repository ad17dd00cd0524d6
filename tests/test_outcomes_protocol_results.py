"""match_outcomes, the confusion matrix and the tidy export's outcome columns on a
protocol's result (deteval/outcomes.py ``resolve_similarity``, deteval/tidy.py): they match by
the similarity that result matched with, never by box IoU in its place.

* A CrowdPose result: by CrowdPose's OKS (its 14 sigmas, the object area ``h * w * 0.53`` of
  its box), each evaluated detection's outcome against xtcocotools' ``evalImgs`` and each
  matched pair's value against the OKS formula written out in tests/crowdposegen.py.
* The confusion matrix of a CrowdPose result equals that of its dataset with the areas
  scaled here and ``iou_type="keypoints"`` with the sigmas written out in the test helpers.
* The tidy export's ``outcome`` columns of CrowdPose, COCO segm and COCO keypoint results
  agree with the rows' ``status`` / ``match_row`` / ``iou`` (the protocol's own matching).
* An Open Images result is refused with a message that says what is taken.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import oidgen
import pytest
from crowdposegen import (
    CROWDPOSE_SIGMAS,
    crowdpose_oks,
    make_crowdpose_dataset,
    run_xtcocotools,
    write_pair,
)
from keypointgen import make_keypoints_dataset
from maskgen import make_segm_dataset

import deteval
from deteval.confusion import detection_confusion_matrix
from deteval.outcomes import FP_OUTCOMES, match_outcomes
from deteval.tidy import tidy_columns


def _crowdpose(seed: int):
    gt, results = make_crowdpose_dataset(seed, n_images=12)
    return gt, results, deteval.evaluate_crowdpose(gt, results)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_crowdpose_result_is_matched_by_its_own_oks(seed, tmp_path):
    pytest.importorskip("xtcocotools", reason="xtcocotools (the CrowdPose reference) is not "
                        "installed")
    gt, results, result = _crowdpose(seed)
    out = match_outcomes(result)
    assert out.iou_type == "keypoints"
    # xtcocotools drops results without a keypoint score above 0; loadRes numbers the rest
    # by their place in the file (id i + 1).
    kept = [i for i, r in enumerate(results) if max(r["keypoints"][2::3]) > 0]
    assert len(kept) == len(result.detections)
    row_of = {i + 1: row for row, i in enumerate(kept)}
    _, _, eval_imgs, _ = run_xtcocotools(*write_pair(tmp_path, gt, results), evaluator_too=True)
    names = np.array(out.dt_outcome_names, dtype=object)
    gt_ids = result.dataset.gt.ids
    checked = 0
    for e in eval_imgs:
        if e is None or list(e["aRng"]) != [0, 1e10]:
            continue
        for j, d in enumerate(e["dtIds"][:20]):        # maxDets 20 (threshold 0.5: row 0)
            row, m = row_of[d], int(e["dtMatches"][0, j])
            if e["dtIgnore"][0, j]:
                assert names[row] == "ignored"
            elif m > 0:
                assert names[row] == "tp" and int(gt_ids[out.dt_gt[row]]) == m
                checked += 1
            else:
                assert names[row] in FP_OUTCOMES
    assert checked >= 10
    # The value of every pair an outcome names (same category) is CrowdPose's OKS.
    by_id = {a["id"]: a for a in gt["annotations"]}
    same = np.flatnonzero(np.isin(names, ["tp", "duplicate", "localization"]))
    assert len(same) > checked
    for row in same.tolist():
        obj = by_id[int(gt_ids[out.dt_gt[row]])]
        oks = crowdpose_oks(result.detections.keypoints[row], obj, CROWDPOSE_SIGMAS)
        assert abs(out.dt_iou[row] - oks) < 1e-12


def test_the_confusion_matrix_of_a_crowdpose_result_uses_its_oks():
    _, _, result = _crowdpose(3)
    dataset = result.dataset
    x, y, w, h = dataset.gt.as_xywh().T
    scaled = dataclasses.replace(dataset, gt=dataset.gt.replace(area=w * h * 0.53))
    theirs = detection_confusion_matrix(scaled, result.detections, iou_type="keypoints",
                                        keypoint_sigmas=CROWDPOSE_SIGMAS.tolist())
    ours = detection_confusion_matrix(result)
    assert np.array_equal(ours.counts, theirs.counts)
    assert np.trace(ours.counts) > 0


def _segm(seed: int):
    gt, results = make_segm_dataset(seed, n_images=15, p_many=0.0)
    return deteval.evaluate_coco(gt, results, iou_type="segm")


def _keypoints(seed: int):
    gt, results = make_keypoints_dataset(seed, n_images=15, p_many=0.0)
    return deteval.evaluate_coco(gt, results, iou_type="keypoints")


_RESULTS = {"crowdpose": lambda seed: _crowdpose(seed)[2], "segm": _segm,
            "keypoints": _keypoints}


@pytest.mark.parametrize("kind, seed", [("crowdpose", 1), ("crowdpose", 2), ("segm", 3),
                                        ("segm", 8), ("keypoints", 5), ("keypoints", 8)])
def test_tidy_outcomes_use_the_results_similarity(kind, seed):
    """A detection the protocol matched (``status`` tp) has the outcome ``tp`` of the same
    object, at the similarity of the ``iou`` column (the protocol's)."""
    result = _RESULTS[kind](seed)
    columns = tidy_columns(result)
    n_dt = len(result.detections)
    status = np.array(columns["status"].values()[:n_dt], dtype=object)
    outcome = np.array(columns["outcome"].values()[:n_dt], dtype=object)
    tp = np.flatnonzero(status == "tp")
    assert len(tp) >= 5
    assert (outcome[tp] == "tp").all()
    assert np.array_equal(columns["outcome_row"][tp], columns["match_row"][tp])
    assert np.allclose(columns["outcome_iou"][tp], columns["iou"][tp], rtol=0, atol=1e-12)


def test_an_open_images_result_is_refused(tmp_path):
    args, kwargs = oidgen.write_problem(tmp_path)
    result = deteval.evaluate_openimages(*args, **kwargs)
    for diagnostic in (match_outcomes, detection_confusion_matrix):
        with pytest.raises(TypeError, match="OpenImagesResult cannot be matched here: give a "
                           "result of evaluate_coco, evaluate_voc, evaluate_lvis or "
                           "evaluate_crowdpose"):
            diagnostic(result)
