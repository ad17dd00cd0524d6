"""Bad segm and keypoint input gives a FormatError that names the record and the expectation.

Every case starts from a small valid dataset (checked against pycocotools first) and breaks
one thing in one record: the GT annotation with id 907 (``annotations[3]``) or the result
at index 11. The message must name that record and say what was expected. Also: the
caller's dicts and lists are unchanged after an evaluation, and nothing is printed.
"""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
from cocogen import assert_parity, run_pycocotools
from keypointgen import COCO_SIGMAS, make_keypoints_dataset
from maskgen import encode, make_segm_dataset
from segmcases import BAD_GT_ID, BAD_RESULT, keypoints_case, rect, segm_case

import deteval


def test_starting_points_are_valid():
    """The unbroken cases evaluate, equal to pycocotools."""
    gt, results = segm_case()
    expected = run_pycocotools(gt, results, iou_type="segm")
    assert_parity(deteval.evaluate_coco(gt, results, iou_type="segm"), expected)
    gt, results = keypoints_case()
    expected = run_pycocotools(gt, results, iou_type="keypoints")
    assert_parity(deteval.evaluate_coco(gt, results, iou_type="keypoints"), expected)


# ---------------------------------------------------------------------------------------------
# Breaking one record
# ---------------------------------------------------------------------------------------------


def _truncated(counts: str) -> str:
    """``counts`` cut inside a number (the last character asks for one more)."""
    for end in range(len(counts) - 1, 0, -1):
        if (ord(counts[end - 1]) - 48) & 0x20:
            return counts[:end]
    raise AssertionError(f"no multi-character number in {counts!r}")


def _long_counts() -> dict:
    mask = rect(20, 30, 0, 20, 0, 30)
    mask[3:17, 5:25] = False  # long runs: numbers of several characters
    return encode(mask)


def _set_gt(key, value):
    """A breaker that sets ``key`` of GT 907 (``annotations[3]``) to ``value``."""

    def breaker(gt, results):
        gt["annotations"][3][key] = value

    return breaker


def _set_result(key, value):
    """A breaker that sets ``key`` of ``results[BAD_RESULT]`` to ``value``."""

    def breaker(gt, results):
        results[BAD_RESULT][key] = value

    return breaker


def _drop_gt_key(key):
    def breaker(gt, results):
        del gt["annotations"][3][key]

    return breaker


def _drop_result_keypoints(gt, results):
    del results[BAD_RESULT]["keypoints"]
    results[BAD_RESULT]["bbox"] = [10.0, 10.0, 5.0, 5.0]


LONG = _long_counts()
GOOD = encode(rect(20, 30, 2, 8, 2, 12))
GT_RECORD = (rf"\b{BAD_GT_ID}\b", r"annotations\[3\]")
RESULT_RECORD = (rf"\b{BAD_RESULT}\b",)
SUM_600 = r"\b600\b|20\s*[x×*]\s*30|\[20, 30\]"  # h*w of image 8

# id -> (iou type, breaker, alternatives naming the record, regex for the expectation)
CASES = {
    "gt-rle-bad-characters": (
        "segm",
        _set_gt("segmentation", {"size": [20, 30], "counts": GOOD["counts"][:-1] + "{ !"}),
        GT_RECORD,
        r"(?i)character|counts|rle",
    ),
    "result-rle-bad-characters": (
        "segm",
        _set_result("segmentation", {"size": [20, 30], "counts": "0~" + GOOD["counts"][2:]}),
        RESULT_RECORD,
        r"(?i)character|counts|rle",
    ),
    "result-rle-non-ascii": (
        "segm",
        _set_result("segmentation", {"size": [20, 30], "counts": GOOD["counts"] + "é"}),
        RESULT_RECORD,
        r"(?i)character|counts|rle",
    ),
    "result-rle-truncated": (
        "segm",
        _set_result("segmentation", {"size": [20, 30], "counts": _truncated(LONG["counts"])}),
        RESULT_RECORD,
        r"(?i)truncat|incomplete|end|counts|rle",
    ),
    "gt-rle-truncated": (
        "segm",
        _set_gt("segmentation", {"size": [20, 30], "counts": _truncated(LONG["counts"])}),
        GT_RECORD,
        r"(?i)truncat|incomplete|end|counts|rle",
    ),
    "gt-uncompressed-rle-sum-short": (
        "segm",
        _set_gt("segmentation", {"size": [20, 30], "counts": [100, 50, 200]}),
        GT_RECORD,
        SUM_600,
    ),
    "gt-uncompressed-rle-sum-long": (
        "segm",
        _set_gt("segmentation", {"size": [20, 30], "counts": [100, 50, 500]}),
        GT_RECORD,
        SUM_600,
    ),
    "result-rle-sum-short": (
        "segm",
        # the runs of a 20x29 mask declared as 20x30: they sum to 580
        _set_result(
            "segmentation",
            {"size": [20, 30], "counts": encode(rect(20, 29, 2, 8, 2, 12))["counts"]},
        ),
        RESULT_RECORD,
        SUM_600,
    ),
    "gt-polygon-odd-count": (
        "segm",
        _set_gt("segmentation", [[1, 10, 1, 17, 9, 17, 9]]),
        GT_RECORD,
        r"(?i)even|odd|pair",
    ),
    "gt-polygon-odd-count-second-part": (
        "segm",
        _set_gt("segmentation", [[1, 10, 1, 17, 9, 17], [20, 1, 25, 1, 25, 6, 20]]),
        GT_RECORD,
        r"(?i)even|odd|pair",
    ),
    "gt-polygon-one-point": (
        "segm",
        _set_gt("segmentation", [[1, 10]]),
        GT_RECORD,
        r"(?i)\b[23]\b|two|three|point",
    ),
    "gt-polygon-second-part-one-point": (
        "segm",
        _set_gt("segmentation", [[1, 10, 1, 17, 9, 17], [20, 1]]),
        GT_RECORD,
        r"(?i)\b[23]\b|two|three|point",
    ),
    "result-mask-size-differs": (
        "segm",
        _set_result("segmentation", encode(rect(21, 30, 2, 8, 2, 12))),
        RESULT_RECORD,
        r"(?i)size|height|width",
    ),
    "result-mask-size-transposed": (
        "segm",
        _set_result("segmentation", encode(rect(30, 20, 2, 8, 2, 12))),
        RESULT_RECORD,
        r"(?i)size|height|width",
    ),
    "gt-without-segmentation": (
        "segm",
        _drop_gt_key("segmentation"),
        GT_RECORD,
        r"segmentation",
    ),
    "gt-keypoints-50-numbers": (
        "keypoints",
        _set_gt("keypoints", [10] * 50),
        GT_RECORD,
        r"\b(51|17)\b",
    ),
    "gt-keypoints-5-triples": (
        "keypoints",
        _set_gt("keypoints", [10, 10, 2] * 5),
        GT_RECORD,
        r"\b(51|17)\b",
    ),
    "result-keypoints-48-numbers": (
        "keypoints",
        _set_result("keypoints", [10.0] * 48),
        RESULT_RECORD,
        r"\b(51|17)\b",
    ),
    "result-keypoints-18-triples": (
        "keypoints",
        _set_result("keypoints", [10.0, 10.0, 1] * 18),
        RESULT_RECORD,
        r"\b(51|17)\b",
    ),
    "gt-without-keypoints": (
        "keypoints",
        _drop_gt_key("keypoints"),
        GT_RECORD,
        r"keypoints",
    ),
    "gt-without-num-keypoints": (
        "keypoints",
        _drop_gt_key("num_keypoints"),
        GT_RECORD,
        r"num_keypoints",
    ),
    "result-without-keypoints": (
        "keypoints",
        _drop_result_keypoints,
        RESULT_RECORD,
        r"keypoints",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_record(name, capfd):
    iou_type, breaker, record_patterns, expectation = CASES[name]
    gt, results = segm_case() if iou_type == "segm" else keypoints_case()
    breaker(gt, results)
    with pytest.raises(deteval.FormatError) as info:
        deteval.evaluate_coco(gt, results, iou_type=iou_type)
    message = str(info.value)
    assert any(re.search(p, message) for p in record_patterns), (
        f"the message does not name the record ({' or '.join(record_patterns)}): {message}"
    )
    assert re.search(expectation, message), (
        f"the message does not say what was expected ({expectation}): {message}"
    )
    assert capfd.readouterr() == ("", "")


def test_two_point_polygon_part_is_empty_like_pycocotools():
    """A later polygon part of 2 points adds no pixels, as in pycocotools (not an error).

    (A first part of 2 points, 4 numbers, makes pycocotools 2.0.11 raise TypeError: it takes
    the list for boxes; a part of 1 point is refused above.)
    """
    gt, results = segm_case()
    gt["annotations"][3]["segmentation"] = [[1, 10, 1, 17, 9, 17], [20, 1, 25, 6]]
    expected = run_pycocotools(gt, results, iou_type="segm")
    assert_parity(deteval.evaluate_coco(gt, results, iou_type="segm"), expected)


@pytest.mark.parametrize("sigmas", [None, COCO_SIGMAS], ids=["default", "17-sigmas"])
def test_sigmas_for_another_keypoint_count(sigmas, capfd):
    """17 sigmas for every category, but category 2's objects have 5 keypoints."""
    gt, results = keypoints_case()
    gt["categories"].append({"id": 2, "name": "five points"})
    gt["annotations"].append(
        {"id": 950, "image_id": 3, "category_id": 2, "iscrowd": 0, "num_keypoints": 5,
         "keypoints": [20, 20, 2, 40, 20, 2, 40, 40, 2, 20, 40, 2, 30, 30, 2],
         "bbox": [20, 20, 20, 20], "area": 400.0}
    )
    results.append({"image_id": 3, "category_id": 2, "score": 0.5,
                    "keypoints": [21, 20, 1, 40, 21, 1, 40, 40, 1, 20, 41, 1, 30, 30, 1]})
    options = {} if sigmas is None else {"keypoint_sigmas": sigmas}
    with pytest.raises(ValueError) as info:  # a FormatError (naming the record) or ValueError
        deteval.evaluate_coco(gt, results, iou_type="keypoints", **options)
    message = str(info.value)
    assert re.search(r"\b950\b|annotations\[4\]|results\[14\]|categor\w* 2\b", message), message
    assert re.search(r"\b(5|15)\b", message) and re.search(r"\b(17|51)\b", message), message
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize(
    "sigmas",
    [
        pytest.param(COCO_SIGMAS[:16], id="16-sigmas"),
        pytest.param(np.r_[COCO_SIGMAS[:16], 0.0], id="zero-sigma"),
        pytest.param(np.r_[COCO_SIGMAS[:16], -0.1], id="negative-sigma"),
        pytest.param(np.r_[COCO_SIGMAS[:16], np.nan], id="nan-sigma"),
    ],
)
def test_bad_sigmas(sigmas):
    """Sigmas that do not fit the keypoints, or are not positive finite numbers."""
    gt, results = keypoints_case()
    with pytest.raises(ValueError, match=r"(?i)sigma"):
        deteval.evaluate_coco(gt, results, iou_type="keypoints", keypoint_sigmas=sigmas)


# ---------------------------------------------------------------------------------------------
# The caller's data is never modified, and nothing is printed
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3], ids="seed{}".format)
def test_segm_inputs_unchanged_and_silent(seed, capfd):
    gt, results = make_segm_dataset(seed, p_bytes=0.3, p_crowd=0.5)
    gt_before, results_before = copy.deepcopy(gt), copy.deepcopy(results)
    deteval.evaluate_coco(gt, results, iou_type="segm")
    deteval.evaluate_coco(gt, results, iou_type="segm", use_categories=False,
                          max_detections=[1, 5, 20])
    dataset = deteval.read_coco_gt(gt, iou_type="segm")
    deteval.read_coco_results(results, dataset, iou_type="segm")
    assert gt == gt_before
    assert results == results_before
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("seed", [1, 2, 3], ids="seed{}".format)
def test_keypoints_inputs_unchanged_and_silent(seed, capfd):
    gt, results = make_keypoints_dataset(seed, other_category=True)
    sigmas = {c["id"]: COCO_SIGMAS.copy() for c in gt["categories"]}
    sigmas[gt["categories"][-1]["id"]] = np.array([0.05, 0.05, 0.07, 0.07, 0.031])
    gt_before, results_before = copy.deepcopy(gt), copy.deepcopy(results)
    sigmas_before = copy.deepcopy(sigmas)
    deteval.evaluate_coco(gt, results, iou_type="keypoints", keypoint_sigmas=sigmas)
    assert gt == gt_before
    assert results == results_before
    assert sigmas.keys() == sigmas_before.keys()
    assert all(np.array_equal(sigmas[c], sigmas_before[c]) for c in sigmas)
    assert capfd.readouterr() == ("", "")


def test_failed_evaluation_leaves_inputs_unchanged(capfd):
    gt, results = segm_case()
    results[BAD_RESULT]["segmentation"] = encode(rect(21, 30, 2, 8, 2, 12))
    gt_before, results_before = copy.deepcopy(gt), copy.deepcopy(results)
    with pytest.raises(deteval.FormatError):
        deteval.evaluate_coco(gt, results, iou_type="segm")
    assert gt == gt_before
    assert results == results_before
    assert capfd.readouterr() == ("", "")
