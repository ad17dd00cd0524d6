"""The CrowdPose protocol against its references.

* xtcocotools 1.14.3 (the crowdpose-api fork, what mmpose runs): ``np.array_equal`` on the 9
  stats and on ``precision`` over 100 seeded CrowdPose-like datasets (``crowdposegen``);
  skipped when xtcocotools is not installed (its PyPI wheel is built for numpy 1: build it
  with ``pip install xtcocotools==1.14.3 --no-binary xtcocotools --no-build-isolation``);
* faster-coco-eval's ``keypoints_crowd`` mode on 100 seeded datasets, to 1e-12 (its means
  differ from xtcocotools' in the last bit). faster-coco-eval keeps results whose keypoint
  scores are all 0, which xtcocotools drops: it is given the results without them, so the
  comparison also checks that deteval drops exactly those. Its medium and large area ranges
  differ (not in the stats): ``precision`` is compared over area "all";
* the example dataset of faster-coco-eval's tests (tests/dataset/example_crowdpose_*.json)
  and the stats its test_crowdpose.py publishes, when the file is in the shared data;
* the inputs: crowd index from a dict or per image row, errors naming file and record.
"""

from __future__ import annotations

import copy
import io
import json
import warnings

import numpy as np
import pytest
from crowdposegen import (
    CROWDPOSE_SIGMAS,
    make_crowdpose_dataset,
    run_faster_coco_eval,
    run_xtcocotools,
    write_pair,
)

import deteval
from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt
from deteval.keypoints import COCO_PERSON_SIGMAS
from deteval.protocols.crowdpose import CrowdPoseParams, evaluate_crowdpose


def _without_unscored(results: list[dict]) -> list[dict]:
    return [r for r in results if any(v > 0 for v in r["keypoints"][2::3])]


@pytest.mark.parametrize("seed", range(100))
def test_equal_to_xtcocotools(seed, tmp_path):
    pytest.importorskip("xtcocotools", reason="xtcocotools (the CrowdPose reference) is not "
                        "installed")
    gt, results = make_crowdpose_dataset(seed)
    reference, precision = run_xtcocotools(*write_pair(tmp_path, gt, results))
    ours = evaluate_crowdpose(gt, results)
    assert np.array_equal(ours.stats, reference), (ours.stats.tolist(), reference.tolist())
    assert np.array_equal(ours.precision, precision)


@pytest.mark.parametrize("seed", range(1000, 1100))
def test_equal_to_faster_coco_eval(seed, tmp_path):
    pytest.importorskip("faster_coco_eval")
    gt, results = make_crowdpose_dataset(seed)
    kept = _without_unscored(results)
    if not kept or ("bbox" in kept[0]) != ("bbox" in results[0]):
        # (loadRes reads results[0] to choose how to read them all; dropping it first would
        # change that choice)
        pytest.skip("the first result is unscored and decides loadRes' reading")
    reference, precision = run_faster_coco_eval(*write_pair(tmp_path, gt, kept))
    ours = evaluate_crowdpose(gt, results)
    np.testing.assert_allclose(ours.stats, reference, rtol=0, atol=1e-12)
    # Area "all" only: faster-coco-eval's medium and large ranges read the file's area (or
    # none), where xtcocotools (and deteval) read h * w * 0.53 of the box.
    np.testing.assert_allclose(ours.precision[:, :, :, 0], precision[:, :, :, 0], rtol=0,
                               atol=1e-12)
    dropped = len(results) - len(kept)
    assert len(ours.detections) == len(kept)
    assert any("dropped: no keypoint score" in n for n in ours.notes) == bool(dropped)


def test_generator_covers_the_rules():
    """The seeds above hold every case the rules single out."""
    seen = {"unscored": 0, "two categories": 0, "on a limit": 0, "v1 only ignored": 0}
    for seed in range(100):
        gt, results = make_crowdpose_dataset(seed)
        seen["unscored"] += len(results) - len(_without_unscored(results))
        seen["two categories"] += len(gt["categories"]) > 1
        seen["on a limit"] += sum(i["crowdIndex"] in (0.2, 0.8) for i in gt["images"])
        seen["v1 only ignored"] += sum(
            a["num_keypoints"] == 0 and any(v == 1 for v in a["keypoints"][2::3])
            for a in gt["annotations"])
    assert all(seen.values()), seen


def test_published_example(crowdpose_example_dir):
    # faster-coco-eval tests/test_crowdpose.py (github.com/MiXaiLL76/faster_coco_eval),
    # test_crowdpose_eval: stats_as_dict of example_crowdpose_val.json and
    # example_crowdpose_preds.json, the same as xtcocotools 1.14.3 prints.
    gt_path = crowdpose_example_dir / "example_crowdpose_val.json"
    published = {"AP": 0.7877215935879303, "AP50": 0.9881188118811886,
                 "AP75": 0.7314356435643564, "AR": 0.8222222222222223, "AR50": 1.0,
                 "AR75": 0.7777777777777778, "AP_easy": 1.0, "AP_medium": 0.9802,
                 "AP_hard": 0.4116}
    result = evaluate_crowdpose(gt_path, crowdpose_example_dir / "example_crowdpose_preds.json")
    for name, value in published.items():
        assert result.stat(name) == value, name      # (the test asks 10 places; all agree)


def _small_case() -> tuple[dict, list[dict]]:
    gt, results = make_crowdpose_dataset(5, n_images=6)
    return gt, results


def test_sigmas_are_crowdposes():
    assert np.array_equal(deteval.CROWDPOSE_SIGMAS, CROWDPOSE_SIGMAS)
    assert CrowdPoseParams().keypoint_sigmas == tuple(CROWDPOSE_SIGMAS.tolist())


def test_crowd_index_given_for_a_dataset():
    gt, results = _small_case()
    from_file = evaluate_crowdpose(gt, results)
    dataset = read_coco_gt(gt, iou_type="keypoints")
    by_id = {image["id"]: image["crowdIndex"] for image in gt["images"]}
    by_row = [by_id[i] for i in dataset.images.ids.tolist()]
    for crowd_index in (by_id, by_row):
        given = evaluate_crowdpose(dataset, results, crowd_index=crowd_index)
        assert np.array_equal(given.stats, from_file.stats)
    with pytest.raises(TypeError, match="crowdIndex"):
        evaluate_crowdpose(dataset, results)


def test_missing_crowd_index_names_file_and_record(tmp_path):
    gt, results = _small_case()
    broken = copy.deepcopy(gt)
    del broken["images"][2]["crowdIndex"]
    path = tmp_path / "crowdpose_gt.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(FormatError, match="crowdIndex") as info:
        evaluate_crowdpose(path, results)
    assert "crowdpose_gt.json" in str(info.value) and "images[2]" in str(info.value)


def test_split_limits_and_empty_split():
    gt, results = _small_case()
    for image in gt["images"]:
        image["crowdIndex"] = 0.5
    result = evaluate_crowdpose(gt, results)
    assert result.stats_named["AP_easy"] == -1.0 and result.stats_named["AP_hard"] == -1.0
    assert len(result.split_image_ids["medium"]) == len(gt["images"])
    # Everything "medium": that split is the whole evaluation, rounded as the reference does.
    whole = round(np.mean(result.precision[:, :, :, 0, :]), 4)
    assert result.stats_named["AP_medium"] == whole
    moved = evaluate_crowdpose(gt, results, crowd_index_limits=(0.6, 0.7))
    assert moved.stats_named["AP_easy"] == whole and moved.stats_named["AP_medium"] == -1.0


def test_inputs_untouched_and_result_read_only():
    gt, results = _small_case()
    before = copy.deepcopy((gt, results))
    result = evaluate_crowdpose(gt, results)
    assert (gt, results) == before
    assert not result.precision.flags.writeable
    assert not result.split_precision["hard"].flags.writeable
    assert result.to_dict()["stats_named"] == result.stats_named


def test_bad_options():
    with pytest.raises(TypeError, match="unknown option"):
        evaluate_crowdpose({}, [], max_dets=5)
    with pytest.raises(ValueError, match="crowd_index_limits"):
        CrowdPoseParams(crowd_index_limits=(0.2,))
    gt, results = _small_case()
    with pytest.raises(ValueError, match="14 keypoints but 17 sigmas"):
        evaluate_crowdpose(gt, results, keypoint_sigmas=tuple(COCO_PERSON_SIGMAS))


def test_cli(tmp_path):
    from deteval.cli import main

    gt, results = make_crowdpose_dataset(12)
    gt_path, dt_path = write_pair(tmp_path, gt, results)
    out, err = io.StringIO(), io.StringIO()
    status = main(["crowdpose", gt_path, dt_path, "--json", str(tmp_path / "out.json"),
                   "--per-class", "--matches", str(tmp_path / "m.csv")], stdout=out, stderr=err)
    assert status == 0, err.getvalue()
    expected = evaluate_crowdpose(gt, results)
    assert out.getvalue().splitlines()[:9] == expected.summary_lines
    assert "AP50" in out.getvalue().splitlines()[10]          # the per-class table's head
    assert json.loads((tmp_path / "out.json").read_text())["stats"] == expected.stats.tolist()
    assert (tmp_path / "m.csv").read_text().startswith("detection,")
    status = main(["crowdpose", gt_path, dt_path, "--use-area"], stdout=io.StringIO(),
                  stderr=err)
    assert status == 0
    del gt["images"][0]["crowdIndex"]
    gt_path, dt_path = write_pair(tmp_path, gt, results)
    out, err = io.StringIO(), io.StringIO()
    assert main(["crowdpose", gt_path, dt_path], stdout=out, stderr=err) == 1
    assert "crowdIndex" in err.getvalue() and "gt.json" in err.getvalue()


def test_summary_is_xtcocotools_text(tmp_path):
    pytest.importorskip("xtcocotools", reason="xtcocotools is not installed")
    import contextlib

    from xtcocotools.coco import COCO
    from xtcocotools.cocoeval import COCOeval

    gt, results = make_crowdpose_dataset(3)
    gt_path, dt_path = write_pair(tmp_path, gt, results)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        coco_gt = COCO(gt_path)
        evaluator = COCOeval(coco_gt, coco_gt.loadRes(dt_path), "keypoints_crowd",
                             CROWDPOSE_SIGMAS, use_area=False)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    lines = [line for line in printed.getvalue().splitlines() if "Average" in line]
    assert lines == evaluate_crowdpose(gt, results).summary_lines
