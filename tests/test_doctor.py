"""The input doctor (deteval.check_inputs): silence on every correct pair of the shared
samples, the fixtures and a generator; each hazard on a realistic mis-specified pair, with
the hint and the option that fixes it."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval import check_inputs
from deteval.doctor import Diagnosis, Hazard

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SAMPLE = SHARED / "voc_sample_100"
COCO100 = SHARED / "coco_val2014_100"
needs_sample = pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"{SAMPLE} is absent")
needs_coco100 = pytest.mark.skipif(not COCO100.is_dir(), reason=f"{COCO100} is absent")

# Ground truth of the shared sample in each format, with the options it needs (README there).
GT_FORMATS = {
    "voc-xml": ("gts/pascalvoc_format", {}),
    "imagenet": ("gts/imagenet_format", {}),
    "coco-v1": ("gts/coco_format_v1/instances_default.json", {}),
    "coco-v2": ("gts/coco_format_v2/instances_v2.json", {}),
    "labelme": ("gts/labelme_format", {}),
    "cvat": ("gts/cvat_format/annotations.xml", {}),
    "yolo": ("gts/yolo_format", {"images_dir": "images"}),
    "openimages": ("gts/openimages_format/all_bounding_boxes.csv", {"images_dir": "images"}),
}
# Detections of the shared sample in each layout, with the options that read them right
# (tests/test_voc_sample.py) and the box layout they are read in.
DT_LAYOUTS = {
    "coco": ("dets/coco_format/coco_dets.json", {}, "xywh"),
    "abs-xywh": ("dets/abs_xywh", {"box_format": "xywh"}, "xywh"),
    "abs-xyxy": ("dets/abs_xyx2y2", {"box_format": "xyxy"}, "xyxy"),
    "rel-cxcywh": ("dets/rel_xywh", {"box_format": "cxcywhn"}, "cxcywhn"),
}


def _sample_gt(name: str) -> deteval.Dataset:
    path, options = GT_FORMATS[name]
    options = {k: SAMPLE / v for k, v in options.items()}
    with warnings.catch_warnings():   # the sample's own quirks (boxes beyond the image)
        warnings.simplefilter("ignore", deteval.FormatWarning)
        return deteval.read_gt(SAMPLE / path, **options)


def _sample_dt(dataset, layout: str, **override):
    path, options, box_format = DT_LAYOUTS[layout]
    options = dict(options)
    if layout == "coco":
        options["match_by"] = "name"   # coco-v1's ids disagree with the file's own tables
    else:
        options["names"] = SAMPLE / "voc.names"
    options.update(override)
    options = {k: v for k, v in options.items() if v is not None}
    return deteval.read_detections(SAMPLE / path, dataset, **options), box_format


def _check(dataset, detections, box_format, **context) -> Diagnosis:
    return check_inputs(dataset, detections, box_format=box_format, **context)


def _only(diagnosis: Diagnosis, code: str) -> Hazard:
    assert diagnosis.codes == (code,), [h.text() for h in diagnosis.hazards]
    return diagnosis.hazards[0]


# --------------------------------------------------------------------------------------------
# A generator of pairs: right ones, and each mistake made on purpose


def _pair(seed: int = 0, *, n_images: int = 60, n_categories: int = 5, first_id: int = 1):
    """A COCO ground truth and a results list of a decent detector (IoU ~0.8, some misses,
    some false positives), as dicts."""
    rng = np.random.default_rng(seed)
    images = [{"id": i + 1, "file_name": f"img_{i:04d}.jpg", "width": 640, "height": 480}
              for i in range(n_images)]
    categories = [{"id": first_id + k, "name": f"class{k}"} for k in range(n_categories)]
    annotations, results = [], []
    for image in images:
        for _ in range(rng.integers(1, 6)):
            w, h = rng.uniform(30, 200), rng.uniform(30, 200)
            x, y = rng.uniform(0, 640 - w), rng.uniform(0, 480 - h)
            category = int(rng.integers(n_categories)) + first_id
            annotations.append({"id": len(annotations) + 1, "image_id": image["id"],
                                "category_id": category, "bbox": [x, y, w, h],
                                "area": w * h, "iscrowd": 0})
            if rng.random() < 0.9:
                jitter = rng.normal(0, 0.05, 4) * [w, h, w, h]
                results.append({"image_id": image["id"], "category_id": category,
                                "bbox": [x + jitter[0], y + jitter[1], w + jitter[2],
                                         h + jitter[3]], "score": float(rng.uniform(0.3, 1))})
        for _ in range(rng.integers(0, 3)):
            w, h = rng.uniform(20, 100), rng.uniform(20, 100)
            results.append({"image_id": image["id"],
                            "category_id": int(rng.integers(n_categories)) + first_id,
                            "bbox": [rng.uniform(0, 640 - w), rng.uniform(0, 480 - h), w, h],
                            "score": float(rng.uniform(0, 0.5))})
    return {"images": images, "categories": categories, "annotations": annotations}, results


def _with_boxes(results, boxes):
    return [{**r, "bbox": [float(v) for v in b]} for r, b in zip(results, boxes)]


# --------------------------------------------------------------------------------------------
# No false alarm


@needs_sample
@pytest.mark.parametrize("layout", DT_LAYOUTS)
@pytest.mark.parametrize("gt_name", GT_FORMATS)
def test_no_hazard_on_a_correct_pair_of_the_shared_sample(gt_name, layout):
    dataset = _sample_gt(gt_name)
    detections, box_format = _sample_dt(dataset, layout)
    diagnosis = _check(dataset, detections, box_format, class_names=layout != "coco",
                       dt_format="coco" if layout == "coco" else "txt")
    assert diagnosis.ok, [h.text() for h in diagnosis.hazards]
    assert diagnosis.n_sampled == 452 and 0.5 < diagnosis.median_iou < 0.6


@needs_coco100
@pytest.mark.parametrize("results, iou_type", [
    ("instances_val2014_fakebbox100_results.json", "bbox"),
    ("instances_val2014_fakesegm100_results.json", "segm")])
def test_no_hazard_on_the_coco_sample(results, iou_type):
    diagnosis = check_inputs(COCO100 / "instances_val2014_100.json", COCO100 / results,
                             iou_type=iou_type)
    assert diagnosis.ok, [h.text() for h in diagnosis.hazards]


def test_no_hazard_on_the_fixtures():
    diagnosis = check_inputs(ROOT / "fixtures/demo/gt.json", ROOT / "fixtures/demo/detections.json")
    assert diagnosis.ok, [h.text() for h in diagnosis.hazards]


@pytest.mark.parametrize("seed", range(6))
def test_no_hazard_on_generated_correct_pairs(seed):
    gt, results = _pair(seed, n_images=30 + 20 * seed, n_categories=2 + seed)
    diagnosis = check_inputs(gt, results)
    assert diagnosis.ok, [h.text() for h in diagnosis.hazards]


def test_no_hazard_on_empty_or_tiny_inputs():
    gt, results = _pair(0, n_images=3)
    assert check_inputs(gt, []).ok
    assert check_inputs(gt, results[:2]).ok


# --------------------------------------------------------------------------------------------
# Box format and coordinates


@needs_sample
def test_corners_read_as_xywh_are_named_with_the_option():
    dataset = _sample_gt("voc-xml")
    detections, _ = _sample_dt(dataset, "abs-xyxy", box_format="xywh")
    hazard = _only(_check(dataset, detections, "xywh", class_names=True), "box-format")
    assert hazard.message.startswith("detections look like xyxy: median best IoU 0.53")
    assert "against 0.19 as read (xywh)" in hazard.message
    assert (hazard.option, hazard.cli_option) == ("box_format='xyxy'", "--box-format xyxy")
    assert deteval.evaluate_voc(dataset, detections).mean_ap < 0.2   # what it would cost


def test_generated_corners_read_as_centres():
    gt, results = _pair(1)
    dataset = deteval.read_coco_gt(gt)
    xyxy = np.array([[x, y, x + w, y + h] for x, y, w, h in (r["bbox"] for r in results)])
    detections = deteval.read_coco_results(results, dataset)
    read_as_centres = detections.replace(boxes=deteval.boxes.convert_boxes(xyxy, "cxcywh",
                                                                           "xyxy"))
    hazard = _only(check_inputs(dataset, read_as_centres, box_format="cxcywh"), "box-format")
    assert hazard.cli_option == "--box-format xyxy"


@needs_sample
def test_relative_centres_read_as_pixels():
    dataset = _sample_gt("voc-xml")
    detections, _ = _sample_dt(dataset, "rel-cxcywh", box_format="xywh")
    hazard = _only(_check(dataset, detections, "xywh", class_names=True),
                   "normalised-coordinates")
    assert "look normalised" in hazard.message and hazard.cli_option == "--box-format cxcywhn"


def test_pixel_numbers_read_as_normalised_fail_with_the_option(tmp_path):
    dataset = deteval.read_coco_gt(_pair(0, n_images=2)[0])
    (tmp_path / "img_0000.txt").write_text("1 0.9 10 20 30 40\n")
    with pytest.raises(deteval.FormatError) as caught:
        deteval.read_detections(tmp_path, dataset, box_format="xywhn")
    assert "pixel coordinates? pass box_format='xywh'" in str(caught.value)
    assert "--box-format" in caught.value.cli_message()


def test_normalised_ground_truth_read_as_pixels():
    gt, results = _pair(2)
    for a in gt["annotations"]:
        x, y, w, h = a["bbox"]
        a["bbox"] = [x / 640, y / 480, w / 640, h / 480]
    hazard = check_inputs(gt, results).hazards[0]
    assert hazard.code == "normalised-coordinates" and "ground-truth box" in hazard.message
    assert hazard.cli_option.startswith("--gt-box-format xyxyn")


def test_detections_for_a_resized_image_lie_outside():
    gt, results = _pair(3)
    scaled = _with_boxes(results, [np.array(r["bbox"]) * 2.5 for r in results])
    diagnosis = check_inputs(gt, scaled)
    assert "outside-image" in diagnosis.codes
    hazard = diagnosis.hazards[diagnosis.codes.index("outside-image")]
    assert "mostly outside their image" in hazard.message and "resized input" in hazard.cause


# --------------------------------------------------------------------------------------------
# Classes


@needs_sample
def test_a_forgotten_names_file_is_named():
    """Without --names, every class is one off: mAP 0 and exit 0 before the doctor."""
    dataset = _sample_gt("voc-xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        detections, _ = _sample_dt(dataset, "abs-xywh", names=None)
    hazard = _only(_check(dataset, detections, "xywh", class_names=False, dt_format="txt"),
                   "class-shift")
    assert "0% agree in class as read and 99% with id + 1" in hazard.message
    assert hazard.cli_option.startswith("--names FILE") and hazard.option.startswith("names=")


def test_zero_based_category_ids_in_coco_results():
    gt, results = _pair(4)
    shifted = [{**r, "category_id": r["category_id"] - 1} for r in results]
    hazard = _only(check_inputs(gt, shifted), "class-shift")
    assert "with id + 1" in hazard.message and "0-based class ids" in hazard.cause
    assert hazard.cli_option is None      # no option renumbers a results file


@needs_sample
def test_a_names_file_in_another_order():
    dataset = _sample_gt("voc-xml")
    names = (SAMPLE / "voc.names").read_text().split()
    random.Random(1).shuffle(names)
    detections, _ = _sample_dt(dataset, "abs-xywh", names=names)
    hazard = _only(_check(dataset, detections, "xywh", class_names=True, dt_format="txt"),
                   "class-mapping")
    assert "under a renaming" in hazard.message
    assert hazard.cli_option.startswith("--names FILE in the detector's order")


def test_unknown_categories():
    gt, results = _pair(5)
    moved = [{**r, "category_id": r["category_id"] + 100} if i % 3 == 0 else r
             for i, r in enumerate(results)]
    diagnosis = check_inputs(gt, moved)
    assert "unknown-categories" in diagnosis.codes
    hazard = diagnosis.hazards[diagnosis.codes.index("unknown-categories")]
    assert "categories the ground truth does not know (category ids 101" in hazard.message


def test_categories_predicted_but_absent_and_never_predicted():
    """A detector of other classes (those of the label map without objects here)."""
    gt, results = _pair(6, n_categories=4)
    gt["categories"] += [{"id": 5 + k, "name": f"other{k}"} for k in range(4)]
    rng = np.random.default_rng(0)
    elsewhere = [{**r, "category_id": r["category_id"] + 4,
                  "bbox": [float(rng.uniform(0, 600)), float(rng.uniform(0, 440)), 20, 20]}
                 for r in results]
    diagnosis = check_inputs(gt, elsewhere)
    assert diagnosis.codes == ("absent-categories", "unpredicted-categories")
    assert "of categories with no object in the ground truth" in diagnosis.hazards[0].message
    assert "are never predicted (e.g. class0" in diagnosis.hazards[1].message
    # Pointing at other categories with the right boxes is a class hazard instead.
    moved = [{**r, "category_id": r["category_id"] + 4} for r in results]
    assert check_inputs(gt, moved).codes == ("class-mapping",)


# --------------------------------------------------------------------------------------------
# Images, duplicates, scores, swapped files


@needs_sample
def test_detections_for_a_third_of_the_images():
    dataset = _sample_gt("coco-v2")
    detections, box_format = _sample_dt(dataset, "coco")
    kept = detections[detections.image_index % 3 == 0]
    hazard = _only(_check(dataset, kept, box_format), "images-without-detections")
    assert "have no detection at all (e.g. 2007_000032.jpg" in hazard.message


@needs_sample
def test_results_written_twice():
    dataset = _sample_gt("voc-xml")
    detections, box_format = _sample_dt(dataset, "abs-xywh")
    twice = detections[np.r_[np.arange(len(detections)), np.arange(len(detections))]]
    hazard = _only(_check(dataset, twice, box_format), "duplicates")
    assert hazard.message.startswith("452 of the top 904 detections repeat another exactly")


@needs_sample
def test_all_scores_equal():
    dataset = _sample_gt("voc-xml")
    detections, box_format = _sample_dt(dataset, "abs-xyxy")
    flat = detections.replace(scores=np.ones(len(detections)))
    hazard = _only(_check(dataset, flat, box_format), "equal-scores")
    assert "depend on the order of the file" in hazard.message


@needs_sample
def test_swapped_files_are_named_both_ways():
    gt, dt = SAMPLE / "gts/coco_format_v2/instances_v2.json", \
        SAMPLE / "dets/coco_format/coco_dets.json"
    with pytest.raises(deteval.FormatError, match="are GT and DT swapped"):
        check_inputs(dt, gt)
    gt_list, results = _pair(0)
    with pytest.raises(deteval.FormatError, match="are GT and DT swapped") as caught:
        deteval.evaluate_coco(results, gt_list)
    assert "give GT (the instances file) first" in caught.value.cli_message()


def test_diagnosis_to_dict_and_validation():
    gt, results = _pair(4)
    shifted = [{**r, "category_id": r["category_id"] - 1} for r in results]
    payload = check_inputs(gt, shifted).to_dict()
    assert payload["ok"] is False and payload["hazards"][0]["code"] == "class-shift"
    json.dumps(payload)
    with pytest.raises(ValueError, match="box_format must be one of"):
        check_inputs(gt, results, box_format="xy")
