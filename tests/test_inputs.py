"""The one input layer (deteval/_inputs.py) and its resolution rule (docs/resolution.md):
plain results lists by id, results with their own tables by name, a conflict refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import deteval
from deteval._inputs import load_pair, read_coco_detections

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "voc_sample_100"
needs_sample = pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"{SAMPLE} is absent")

GT = {"images": [{"id": 10, "file_name": "a.jpg", "width": 100, "height": 100},
                 {"id": 20, "file_name": "b.jpg", "width": 100, "height": 100}],
      "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
      "annotations": [
          {"id": 1, "image_id": 10, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100,
           "iscrowd": 0},
          {"id": 2, "image_id": 20, "category_id": 2, "bbox": [50, 50, 20, 20], "area": 400,
           "iscrowd": 0}]}
RESULTS = [{"image_id": 10, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
           {"image_id": 20, "category_id": 2, "bbox": [50, 50, 20, 20], "score": 0.8}]


def _with_tables(images, categories, results=RESULTS):
    return {"images": images, "categories": categories, "annotations": results}


def test_a_plain_results_list_resolves_by_id():
    pair = load_pair(GT, RESULTS)
    assert pair.resolved_by == "id" and pair.notes == ()
    assert pair.detections.image_index.tolist() == [0, 1]


def test_tables_that_agree_with_the_ids_give_the_same_numbers_without_a_note():
    dt = _with_tables(GT["images"], GT["categories"])
    pair = load_pair(GT, dt)
    assert pair.resolved_by == "name" and pair.notes == ()
    assert deteval.evaluate_coco(GT, dt).stats.tolist() == \
        deteval.evaluate_coco(GT, RESULTS).stats.tolist()


def test_tables_with_their_own_numbering_resolve_by_name_with_a_note():
    images = [{"id": 0, "file_name": "x/a.png"}, {"id": 1, "file_name": "b.jpg"}]
    categories = [{"id": 0, "name": "cat"}, {"id": 1, "name": "dog"}]
    results = [{**r, "image_id": i, "category_id": i} for i, r in enumerate(RESULTS)]
    dt = _with_tables(images, categories, results)
    pair = load_pair(GT, dt)
    assert pair.resolved_by == "name"
    assert pair.detections.image_index.tolist() == [0, 1]
    assert pair.detections.category_index.tolist() == [0, 1]
    assert pair.detections.category_ids.tolist() == [1, 2]
    assert len(pair.notes) == 1 and "by file name and category name" in pair.notes[0]
    assert "docs/resolution.md" in pair.notes[0]
    result = deteval.evaluate_coco(GT, dt)
    assert result.stat("AP") > 0.99 and pair.notes[0] in result.notes


def test_ids_and_names_pointing_to_different_images_are_refused():
    images = [{"id": 20, "file_name": "a.jpg"}, {"id": 10, "file_name": "b.jpg"}]
    dt = _with_tables(images, GT["categories"],
                      [{**RESULTS[0], "image_id": 20}, {**RESULTS[1], "image_id": 10}])
    with pytest.raises(deteval.FormatError) as caught:
        load_pair(GT, dt)
    error = caught.value
    assert "2 of 2 images" in str(error)
    assert "image_id 20 is 'a.jpg' in the results but 'b.jpg' in the ground truth" in str(error)
    assert "match_by='name'" in str(error) and "match_by='id'" in str(error)
    assert "--match-by name" in error.cli_message() and "match_by" not in error.cli_message()
    by_name = deteval.evaluate_coco(GT, dt, match_by="name")
    by_id = deteval.evaluate_coco(GT, dt, match_by="id")
    assert by_name.stat("AP") > 0.99 and by_id.stat("AP") == 0


def test_category_conflicts_are_listed_by_name():
    categories = [{"id": 1, "name": "dog"}, {"id": 2, "name": "cat"}]
    dt = _with_tables(GT["images"], categories,
                      [{**RESULTS[0], "category_id": 2}, {**RESULTS[1], "category_id": 1}])
    with pytest.raises(deteval.FormatError, match="category_id 1 is 'dog' in the results but "
                       "'cat' in the ground truth"):
        deteval.evaluate_voc(GT, dt)
    assert load_pair(GT, dt, match_by="name").detections.category_index.tolist() == [0, 1]


def test_match_by_name_needs_tables_and_match_by_is_checked():
    with pytest.raises(deteval.FormatError, match="by id only") as caught:
        load_pair(GT, RESULTS, match_by="name")
    assert "--match-by id" in caught.value.cli_message()
    with pytest.raises(ValueError, match="match_by must be"):
        read_coco_detections(RESULTS, deteval.read_coco_gt(GT), match_by="names")


def test_results_tables_without_file_names_resolve_by_id():
    images = [{"id": 10}, {"id": 20}]
    dt = _with_tables(images, GT["categories"])
    assert load_pair(GT, dt).resolved_by == "id"
    with pytest.raises(deteval.FormatError, match="the results file lacks them"):
        load_pair(GT, dt, match_by="name")


def test_an_unknown_file_name_is_named(tmp_path):
    dt = _with_tables([{"id": 10, "file_name": "a.jpg"}, {"id": 30, "file_name": "z.jpg"}],
                      GT["categories"], [RESULTS[0], {**RESULTS[1], "image_id": 30}])
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(dt))
    with pytest.raises(deteval.FormatError, match=r"images\[1\]: image 'z' is not an image"):
        load_pair(GT, path)


def test_a_results_record_of_a_category_missing_from_its_table_is_refused():
    dt = _with_tables(GT["images"], GT["categories"], [{**RESULTS[0], "category_id": 7}])
    with pytest.raises(deteval.FormatError, match=r"annotations\[0\]: category_id 7 is not in "
                       "'categories'"):
        load_pair(GT, dt, match_by="name")


def test_ground_truth_with_reader_assigned_ids_resolves_by_name_silently():
    dataset = deteval.read_coco_gt(GT)
    assert not dataset.ids_assigned
    assigned = deteval.Dataset(dataset.images, dataset.categories, dataset.gt,
                               ids_assigned=True)
    images = [{"id": 20, "file_name": "a.jpg"}, {"id": 10, "file_name": "b.jpg"}]
    dt = _with_tables(images, GT["categories"],
                      [{**RESULTS[0], "image_id": 20}, {**RESULTS[1], "image_id": 10}])
    pair = load_pair(assigned, dt)
    assert pair.resolved_by == "name" and pair.notes == ()
    assert pair.detections.image_index.tolist() == [0, 1]


def test_detections_given_as_objects_are_checked_against_the_tables():
    dataset = deteval.read_coco_gt(GT)
    bad = deteval.Detections(image_index=[5], category_index=[0], boxes=[[0, 0, 1, 1]],
                             scores=[1])
    with pytest.raises(ValueError, match="image_index must index"):
        deteval.detection_confusion_matrix(dataset, bad)
    with pytest.raises(ValueError, match="image_index must index"):
        deteval.match_outcomes(dataset, bad)


# --------------------------------------------------------------------------------------------
# The shared VOC sample: one pair of files, one set of numbers


@needs_sample
def test_shared_coco_pair_with_conflicting_ids_is_refused_and_explained():
    gt = SAMPLE / "gts/coco_format_v1/instances_default.json"
    dt = SAMPLE / "dets/coco_format/coco_dets.json"
    with pytest.raises(deteval.FormatError) as caught:
        deteval.evaluate_coco(gt, dt)
    message = caught.value.cli_message()
    assert "97 of 98 images" in message and "--match-by name" in message
    assert "image_id 1 is '2007_000032.jpg' in the results but '2007_001585.jpg'" in message


@needs_sample
def test_shared_pair_gives_the_same_numbers_through_every_entry():
    gt = SAMPLE / "gts/coco_format_v1/instances_default.json"
    dt = SAMPLE / "dets/coco_format/coco_dets.json"
    dataset = deteval.read_gt(gt)
    detections = deteval.read_detections(dt, dataset, match_by="name")
    direct = deteval.evaluate_coco(gt, dt, match_by="name")
    read = deteval.evaluate_coco(dataset, detections)
    np.testing.assert_array_equal(direct.stats, read.stats)
    assert round(direct.stat("AP"), 3) == 0.347
    pair = load_pair(gt, dt, match_by="name")
    assert deteval.evaluate_voc(*_pair(pair)).mean_ap == \
        deteval.evaluate_voc(dataset, detections).mean_ap
    voc_gt = deteval.read_gt(SAMPLE / "gts/pascalvoc_format")
    # A ground truth keyed by file name resolves the same file by name without being told.
    voc = deteval.evaluate_coco(voc_gt, deteval.read_detections(dt, voc_gt))
    assert round(voc.stat("AP50"), 3) == round(direct.stat("AP50"), 3)


def _pair(pair):
    return pair.dataset, pair.detections


@needs_sample
def test_shifted_image_ids_in_the_results_tables_are_caught(tmp_path):
    """The issue's case: a results file whose images table pairs each file name with the id of
    the next image: by id, AP 0.025 against 0.347 by name."""
    gt_path = SAMPLE / "gts/coco_format_v2/instances_v2.json"
    gt = json.loads(gt_path.read_text())
    dt = json.loads((SAMPLE / "dets/coco_format/coco_dets.json").read_text())
    id_of = {image["file_name"]: image["id"] for image in gt["images"]}
    ids = [id_of[image["file_name"]] for image in dt["images"]]
    shifted = {image["id"]: ids[(i + 1) % len(ids)] for i, image in enumerate(dt["images"])}
    category_of = {c["name"]: c["id"] for c in gt["categories"]}
    own_category = {c["id"]: category_of[c["name"]] for c in dt["categories"]}
    doc = {"images": [{**image, "id": shifted[image["id"]]} for image in dt["images"]],
           "categories": [{**c, "id": own_category[c["id"]]} for c in dt["categories"]],
           "annotations": [{**a, "image_id": shifted[a["image_id"]],
                            "category_id": own_category[a["category_id"]]}
                           for a in dt["annotations"]]}
    path = tmp_path / "shifted.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(deteval.FormatError, match="98 of 98 images"):
        deteval.evaluate_coco(gt_path, path)
    by_name = deteval.evaluate_coco(gt_path, path, match_by="name").stat("AP")
    by_id = deteval.evaluate_coco(gt_path, path, match_by="id").stat("AP")
    assert round(by_name, 3) == 0.347 and by_id < 0.05


@needs_sample
def test_unknown_image_ids_say_how_many_and_that_they_look_shifted():
    gt = SAMPLE / "gts/coco_format_v1/instances_default.json"
    with pytest.raises(deteval.FormatError) as caught:
        deteval.evaluate_coco(gt, SAMPLE / "dets/coco_format/coco_dets.json", match_by="id")
    message = str(caught.value)
    assert "1 of 452 result(s) (0.2%) refer to unknown images" in message
    assert "every image_id + 1 is a ground-truth image id: the ids look shifted by one" in message
