"""deteval.Evaluator: streaming COCO and VOC evaluation equal to the one-shot evaluation.

The core property: whatever the batch split, the order of updates, the merge tree and the
byte or pickle round trips on the way, ``compute()`` equals ``evaluate_coco`` (and, with the
order of equal scores the evaluator defines, ``evaluate_voc``) exactly: ``np.array_equal`` on
stats, precision, recall, scores and the counts, and the same notes. Then the rules: repeated
images (identical: counted once with a warning; different: an error naming the image), bad
input (an error naming the batch row, the state unchanged), array-like inputs (DLPack,
``__array__``) and per-image predictions.
"""

from __future__ import annotations

import functools
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deteval
from deteval import DuplicateImageWarning, Evaluator, FormatError
from deteval.errors import DetevalError
from tests.cocogen import make_dataset

# (generator seed, generator options, evaluation options)
CASES = [
    (11, {"n_images": 6, "n_categories": 3}, {}),
    (12, {"n_images": 5, "n_categories": 2, "p_many": 0.3}, {}),
    (13, {"n_images": 6, "n_categories": 3}, {"use_categories": False}),
    (14, {"n_images": 6, "n_categories": 3}, {"max_detections": (1, 3, 5)}),
    (15, {"n_images": 6, "n_categories": 4}, {"area_ranges": ((0, 1e10), (0, 400), (400, 1e10),
                                                              (100, 2000)),
                                              "area_labels": ("all", "small", "large", "mid")}),
]
VOC_PROTOCOLS = {"voc2012": deteval.VOC2012, "voc2007": deteval.VOC2007,
                 "detectron2-voc2007": deteval.DETECTRON2_VOC2007}


@functools.cache
def case(index: int):
    seed, make_options, params = CASES[index]
    gt, results = make_dataset(seed, **make_options)
    dataset = deteval.read_coco_gt(gt)
    return dataset, results, params, deteval.evaluate_coco(dataset, results, **params)


def by_image(results: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for record in results:
        out.setdefault(record["image_id"], []).append(record)
    return out


def as_rows(records: list[dict]) -> np.ndarray:
    return np.array([[r["image_id"], *r["bbox"], r["score"], r["category_id"]]
                     for r in records], dtype=np.float64).reshape(-1, 7)


def assert_same(result, reference) -> None:
    for name in ("stats", "precision", "recall", "scores", "category_ids", "n_gt", "n_crowd",
                 "n_detections"):
        assert np.array_equal(getattr(result, name), getattr(reference, name)), name
    assert result.notes == reference.notes
    assert result.params == reference.params
    assert result.summary() == reference.summary()


def assert_same_voc(result, reference) -> None:
    for name in ("ap", "map", "tp", "fp", "n_positives", "n_difficult", "n_detections"):
        assert np.array_equal(getattr(result, name), getattr(reference, name),
                              equal_nan=True), name
    assert result.notes == reference.notes


def merge_tree(evaluators: list[Evaluator], data, round_trip) -> Evaluator:
    """Merge in a random tree; some evaluators cross bytes or pickle on the way."""
    pool = list(evaluators)
    while len(pool) > 1:
        i = data.draw(st.integers(0, len(pool) - 1))
        a = pool.pop(i)
        j = data.draw(st.integers(0, len(pool) - 1))
        b = pool.pop(j)
        a = round_trip(a, data.draw(st.sampled_from(["none", "bytes", "pickle"])))
        pool.append(b.merge(a))
    return pool[0]


def round_trip(evaluator: Evaluator, how: str) -> Evaluator:
    if how == "bytes":
        return Evaluator.from_bytes(evaluator.to_bytes(), evaluator.gt)
    if how == "pickle":
        return pickle.loads(pickle.dumps(evaluator))
    return evaluator


def split_updates(data, groups: dict, image_ids: list[int], n_evaluators: int):
    """Images in random batches, each batch to a random evaluator, in a random form."""
    order = data.draw(st.permutations(image_ids))
    n_batches = data.draw(st.integers(1, max(1, len(order))))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(order)), min_size=n_batches - 1,
                                     max_size=n_batches - 1)))
    for part in np.split(np.array(order, dtype=np.int64), cuts):
        records = [r for i in part.tolist() for r in groups.get(i, [])]
        target = data.draw(st.integers(0, n_evaluators - 1))
        form = data.draw(st.sampled_from(["records", "rows"]))
        yield target, (records if form == "records" else as_rows(records))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(CASES) - 1), n_evaluators=st.integers(1, 4), data=st.data())
def test_any_split_and_merge_tree_equals_evaluate_coco(index, n_evaluators, data):
    dataset, results, params, reference = case(index)
    evaluators = [Evaluator(dataset, unknown_labels="drop", **params)
                  for _ in range(n_evaluators)]
    groups = by_image(results)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DuplicateImageWarning)
        for target, update in split_updates(data, groups, list(groups), n_evaluators):
            evaluators[target].update(update)
        # DistributedSampler padding: an evaluator sees an image another one has too.
        if data.draw(st.booleans()) and results:
            image_id = results[0]["image_id"]
            evaluators[data.draw(st.integers(0, n_evaluators - 1))].update(groups[image_id])
        merged = merge_tree(evaluators, data, round_trip)
    merged = round_trip(merged, data.draw(st.sampled_from(["none", "bytes", "pickle"])))
    assert_same(merged.compute(), reference)
    assert merged.compute().matches is None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.sampled_from([0, 1, 3]), protocol=st.sampled_from(sorted(VOC_PROTOCOLS)),
       n_evaluators=st.integers(1, 3), data=st.data())
def test_voc_any_split_equals_evaluate_voc_image_by_image(index, protocol, n_evaluators, data):
    dataset, results, _, _ = case(index)
    detections = deteval.read_coco_results(results, dataset)
    # The evaluator's order of equal scores: image by image in the images table's order.
    in_image_order = detections[np.argsort(detections.image_index, kind="stable")]
    reference = deteval.evaluate_voc(dataset, in_image_order, params=VOC_PROTOCOLS[protocol])
    evaluators = [Evaluator(dataset, protocol=protocol, unknown_labels="drop")
                  for _ in range(n_evaluators)]
    groups = by_image(results)
    for target, update in split_updates(data, groups, list(groups), n_evaluators):
        evaluators[target].update(update)
    assert_same_voc(merge_tree(evaluators, data, round_trip).compute(), reference)


def test_nothing_updated_equals_empty_results():
    dataset, _, params, _ = case(0)
    assert_same(Evaluator(dataset, **params).compute(), deteval.evaluate_coco(dataset, [],
                                                                             **params))


def test_reset_forgets_everything():
    dataset, results, params, reference = case(0)
    evaluator = Evaluator(dataset, unknown_labels="drop", **params)
    evaluator.update(results[: len(results) // 2])
    evaluator.reset()
    assert evaluator.n_images == 0 and evaluator.n_detections == 0
    evaluator.update(results)
    assert_same(evaluator.compute(), reference)


def test_compute_twice_and_update_after_compute():
    dataset, results, params, reference = case(1)
    groups = by_image(results)
    first, *rest = list(groups)
    evaluator = Evaluator(dataset, unknown_labels="drop", **params)
    evaluator.update(groups[first])
    partial = evaluator.compute()
    for image_id in rest:
        evaluator.update(groups[image_id])
    assert_same(evaluator.compute(), reference)
    assert_same(evaluator.compute(), reference)
    assert_same(partial, deteval.evaluate_coco(dataset, groups[first], **params))


# ---- repeated images ---------------------------------------------------------------------


def test_identical_repeat_counts_once_with_a_warning():
    dataset, results, params, reference = case(0)
    groups = by_image(results)
    evaluator = Evaluator(dataset, unknown_labels="drop", **params)
    evaluator.update(results)
    padded = [r for image_id in list(groups)[:2] for r in groups[image_id]]
    with pytest.warns(DuplicateImageWarning, match=r"^2 image\(s\) came again"):
        evaluator.update(padded)
    assert_same(evaluator.compute(), reference)


def test_identical_repeat_across_merge_counts_once():
    dataset, results, params, reference = case(2)
    groups = by_image(results)
    ids = list(groups)
    a = Evaluator(dataset, unknown_labels="drop", **params)
    b = Evaluator(dataset, unknown_labels="drop", **params)
    a.update([r for i in ids[: len(ids) // 2 + 1] for r in groups[i]])
    b.update([r for i in ids[len(ids) // 2:] for r in groups[i]])
    with pytest.warns(DuplicateImageWarning, match=r"^1 image\(s\).*merge"):
        a.merge(b)
    assert_same(a.compute(), reference)


def test_conflicting_repeat_is_an_error_naming_the_image_and_changes_nothing():
    dataset, results, params, _ = case(0)
    image_id = results[0]["image_id"]
    evaluator = Evaluator(dataset, unknown_labels="drop", **params)
    evaluator.update(results)
    before = evaluator.to_bytes()
    changed = [dict(r, score=r["score"] / 2) for r in results if r["image_id"] == image_id]
    other = next(r["image_id"] for r in results if r["image_id"] != image_id)
    same = [r for r in results if r["image_id"] == other]    # an identical repeat
    with pytest.raises(DetevalError, match=rf"^image_id {image_id} was already evaluated by "
                                           "an earlier update with different detections"):
        evaluator.update(same + changed)
    assert evaluator.to_bytes() == before


def test_conflicting_merge_is_an_error_and_changes_nothing():
    dataset, results, params, _ = case(0)
    image_id = results[0]["image_id"]
    a = Evaluator(dataset, unknown_labels="drop", **params)
    b = Evaluator(dataset, unknown_labels="drop", **params)
    a.update(results)
    b.update([dict(r, bbox=[v + 1 for v in r["bbox"]]) for r in results
              if r["image_id"] == image_id])
    before_a, before_b = a.to_bytes(), b.to_bytes()
    with pytest.raises(DetevalError, match=rf"image_id {image_id} was already evaluated"):
        a.merge(b)
    assert a.to_bytes() == before_a and b.to_bytes() == before_b


def test_per_image_list_with_a_repeated_entry():
    dataset = _two_image_dataset()
    entry = {"image_id": 1, "boxes": np.array([[0.0, 0, 10, 10]]), "scores": np.array([0.9]),
             "labels": np.array([1])}
    evaluator = Evaluator(dataset)
    with pytest.warns(DuplicateImageWarning, match=r"^1 image"):
        evaluator.update([entry, dict(entry)])
    assert evaluator.n_images == 1 and evaluator.n_detections == 1
    other = dict(entry, scores=np.array([0.8]))
    with pytest.raises(FormatError, match=r"predictions\[1\] \(image_id 1\): image_id 1 is "
                                          r"given twice .*first at predictions\[0\]"):
        Evaluator(dataset).update([entry, other])


def test_merge_checks_ground_truth_and_settings():
    dataset, _, _, _ = case(0)
    with pytest.raises(DetevalError, match="different ground truth or settings"):
        Evaluator(dataset).merge(Evaluator(dataset, max_detections=(1, 10, 50)))
    with pytest.raises(DetevalError, match="different ground truth or settings"):
        Evaluator(dataset).merge(Evaluator(case(1)[0]))
    with pytest.raises(TypeError, match="merge\\(\\) takes Evaluators"):
        Evaluator(dataset).merge([])


# ---- per-image predictions and array-likes -----------------------------------------------


def _two_image_dataset():
    objects = ((1, 1, [0, 0, 10, 10]), (2, 3, [5, 5, 20, 10]), (2, 1, [1, 1, 4, 4]))
    gt = {"images": [{"id": 1, "width": 40, "height": 30}, {"id": 2, "width": 40, "height": 30}],
          "categories": [{"id": 1, "name": "a"}, {"id": 3, "name": "b"}],
          "annotations": [{"id": k + 1, "image_id": image, "category_id": category,
                           "bbox": box, "area": box[2] * box[3], "iscrowd": 0}
                          for k, (image, category, box) in enumerate(objects)]}
    return deteval.read_coco_gt(gt)


class DLPackOnly:
    """An array-like that offers only DLPack (as a framework tensor does)."""

    def __init__(self, array):
        self._array = np.asarray(array)

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class ArrayOnly:
    def __init__(self, array):
        self._array = np.asarray(array)

    def __array__(self, dtype=None, copy=None):
        return self._array if dtype is None else self._array.astype(dtype)


class OnGPU:
    """A tensor numpy cannot read: DLPack refuses, as torch does for a CUDA tensor."""

    device = "cuda:0"

    def __dlpack__(self, **kwargs):
        raise BufferError("Unsupported device in DLTensor")

    def __dlpack_device__(self):
        return (2, 0)


PREDICTIONS = {
    1: {"boxes": [[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 9.0, 9.0]], "scores": [0.9, 0.5],
        "labels": [1, 1]},
    2: {"boxes": [[5.0, 5.0, 25.0, 15.0], [0.5, 1.0, 5.0, 5.5], [0.0, 0.0, 3.0, 3.0]],
        "scores": [0.7, 0.7, 0.2], "labels": [3, 1, 3]},
}


def _flat(predictions, box_format="xyxy"):
    ids = [i for i, p in predictions.items() for _ in p["scores"]]
    cat = lambda key: np.concatenate([np.asarray(p[key], dtype=float).reshape(  # noqa: E731
        len(p["scores"]), -1) for p in predictions.values()])
    return dict(image_ids=ids, category_ids=cat("labels").ravel().astype(int),
                boxes=cat("boxes"), scores=cat("scores").ravel(), box_format=box_format)


@pytest.mark.parametrize("wrap", [np.asarray, DLPackOnly, ArrayOnly, list])
@pytest.mark.parametrize("shape", ["mapping", "list"])
def test_per_image_predictions_equal_dataset_detections(wrap, shape):
    dataset = _two_image_dataset()
    reference = deteval.evaluate_coco(dataset, dataset.detections(**_flat(PREDICTIONS)))
    wrapped = {i: {k: wrap(np.asarray(v)) for k, v in p.items()}
               for i, p in PREDICTIONS.items()}
    update = (wrapped if shape == "mapping"
              else [dict(p, image_id=i) for i, p in wrapped.items()])
    evaluator = Evaluator(dataset)
    evaluator.update(update)
    assert_same(evaluator.compute(), reference)


def test_box_format_option():
    dataset = _two_image_dataset()
    xywh = {i: dict(p, boxes=[[x1, y1, x2 - x1, y2 - y1] for x1, y1, x2, y2 in p["boxes"]])
            for i, p in PREDICTIONS.items()}
    reference = deteval.evaluate_coco(dataset, dataset.detections(**_flat(xywh, "xywh")))
    evaluator = Evaluator(dataset, box_format="xywh")
    evaluator.update(xywh)
    assert_same(evaluator.compute(), reference)


def test_image_listed_without_predictions_is_seen():
    dataset = _two_image_dataset()
    evaluator = Evaluator(dataset)
    evaluator.update({1: {"boxes": np.zeros((0, 4)), "scores": np.zeros(0),
                          "labels": np.zeros(0, int)}})
    assert evaluator.n_images == 1 and evaluator.n_detections == 0
    with pytest.raises(DetevalError, match="image_id 1 was already evaluated"):
        evaluator.update({1: PREDICTIONS[1]})


def test_tensor_on_a_device_numpy_cannot_read():
    dataset = _two_image_dataset()
    evaluator = Evaluator(dataset)
    with pytest.raises(TypeError, match=r"predictions\[1\] \(image_id 1\): scores: numpy "
                                        r"cannot read this OnGPU \(device cuda:0\).*"
                                        r"\.detach\(\)\.cpu\(\)"):
        evaluator.update({1: dict(PREDICTIONS[1], scores=OnGPU())})
    assert evaluator.n_images == 0


def test_torch_tensors_without_deteval_importing_torch():
    torch = pytest.importorskip("torch", reason="torch is not installed (not a dependency)")
    dataset = _two_image_dataset()
    reference = Evaluator(dataset)
    reference.update(PREDICTIONS)
    tensors = [{"image_id": torch.tensor(i), "boxes": torch.tensor(p["boxes"]),
                "scores": torch.tensor(p["scores"], dtype=torch.float64),
                "labels": torch.tensor(p["labels"])} for i, p in PREDICTIONS.items()]
    evaluator = Evaluator(dataset)
    evaluator.update(tensors)
    assert_same(evaluator.compute(), reference.compute())
    with pytest.raises(TypeError, match=r"predictions\[0\] \(image_id 1\): boxes: numpy "
                                        r"cannot read this Tensor.*\.detach\(\)\.cpu\(\)"):
        evaluator.update([dict(tensors[0], boxes=torch.ones(2, 4, requires_grad=True))])


def test_inputs_are_not_modified():
    dataset = _two_image_dataset()
    arrays = {i: {k: np.array(v) for k, v in p.items()} for i, p in PREDICTIONS.items()}
    copies = {i: {k: v.copy() for k, v in p.items()} for i, p in arrays.items()}
    rows = np.array([[1, 0, 0, 10, 10, 0.9, 1]], dtype=float)
    Evaluator(dataset).update(arrays)
    Evaluator(dataset).update(rows)
    for i, p in arrays.items():
        for k, v in p.items():
            assert np.array_equal(v, copies[i][k]) and v.flags.writeable
    assert rows.tolist() == [[1, 0, 0, 10, 10, 0.9, 1]] and rows.flags.writeable


# ---- bad input -----------------------------------------------------------------------------


BAD_UPDATES = [
    ({1: dict(PREDICTIONS[1], boxes=[[0, 0, 10]] * 2)},
     r"predictions\[1\] \(image_id 1\): boxes must have shape \(2, 4\)"),
    ({1: dict(PREDICTIONS[1], scores=[0.9, np.nan])},
     r"predictions\[1\] \(image_id 1\): scores must be finite; row 1 has \[nan\]"),
    ({1: dict(PREDICTIONS[1], boxes=[[0, 0, 10, 10], [5, 5, 4, 9]])},
     r"predictions\[1\] \(image_id 1\): boxes must have x2 >= x1 and y2 >= y1 \(xyxy\); "
     r"row 1 is \[5.0, 5.0, 4.0, 9.0\]"),
    ({7: PREDICTIONS[1]}, r"predictions\[7\] \(image_id 7\): image_id 7 is not an image"),
    ({1: dict(PREDICTIONS[1], labels=[1, 2])},
     r"predictions\[1\] \(image_id 1\), row 1: label \(category_id\) 2 is not a category of "
     r"the ground truth \(1, 3\).*unknown_labels='drop'"),
    ({1: dict(PREDICTIONS[1], labels=np.array(["a", "b"]))},
     r"predictions\[1\] \(image_id 1\): labels must hold integers; got dtype <U1"),
    ({1: dict(PREDICTIONS[1], labels=[1.5, 1])},
     r"predictions\[1\] \(image_id 1\): labels must hold integers; row 0 is"),
    ({1: dict(PREDICTIONS[1], scores=[0.9])},
     r"predictions\[1\] \(image_id 1\): labels must have shape \(n,\) with one row per "
     r"prediction; got \(2,\) \(scores: \(1,\)\)"),
    ({1: {"boxes": [[0, 0, 1, 1]], "labels": [1]}},
     r"predictions\[1\] \(image_id 1\): missing 'scores'"),
    ([{"boxes": [[0, 0, 1, 1]], "scores": [1], "labels": [1]}],
     r"predictions\[0\]: a list of per-image predictions must hold dicts with an 'image_id'"),
    (np.array([[1, 0, 0, 10, 10, 0.9, 1], [2, 0, 0, 10, np.nan, 0.5, 1]]),
     r"update: row 1: row must hold finite numbers"),
    (np.array([[1, 0, 0, 10, 10, 0.9, 1], [9, 0, 0, 10, 10, 0.5, 1]]),
     r"row 1: image_id 9 is not an image of the ground truth"),
    (np.array([[1, 0, 0, 10, 10, 0.9, 1], [2, 0, 0, 10, 10, 0.5, 5]]),
     r"update: row 1: label \(category_id\) 5 is not a category"),
    (np.zeros((3, 6)), r"an array of predictions must have shape \(N, 7\)"),
    ([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5},
      {"image_id": 1, "category_id": 4, "bbox": [0, 0, 1, 1], "score": 0.5}],
     r"update: results\[1\]: label \(category_id\) 4 is not a category"),
    ("results.json", r"update\(\) takes COCO result records"),
]


@pytest.mark.parametrize("update, message", BAD_UPDATES)
def test_bad_input_names_the_row_and_leaves_the_state_unchanged(update, message):
    dataset = _two_image_dataset()
    evaluator = Evaluator(dataset)
    evaluator.update({2: PREDICTIONS[2]})
    before = evaluator.to_bytes()
    with pytest.raises((FormatError, TypeError), match=message):
        evaluator.update(update)
    assert evaluator.to_bytes() == before


def test_detections_input():
    dataset, results, params, reference = case(3)
    evaluator = Evaluator(dataset, unknown_labels="drop", **params)
    evaluator.update(deteval.read_coco_results(results, dataset))
    assert_same(evaluator.compute(), reference)
    unknown = deteval.Detections(image_index=[0], category_index=[-1], boxes=[[0, 0, 1, 1]],
                                 scores=[0.5])
    with pytest.raises(FormatError, match=r"update: row 0: label \(category_id\) "
                                          r"\(category_index -1\) is not a category"):
        Evaluator(dataset).update(unknown)


def test_unknown_labels_drop_equals_evaluate_coco():
    dataset, results, params, reference = case(0)
    assert any(r["category_id"] not in dataset.categories.ids for r in results)
    evaluator = Evaluator(dataset, unknown_labels="drop", **params)
    evaluator.update(results)
    assert_same(evaluator.compute(), reference)
    with pytest.raises(FormatError, match="is not a category of the ground truth"):
        Evaluator(dataset, **params).update(results)


def test_bad_settings():
    dataset = _two_image_dataset()
    with pytest.raises(ValueError, match="protocol must be one of 'coco', 'voc2007'"):
        Evaluator(dataset, protocol="voc")
    with pytest.raises(TypeError, match=r"Evaluator\(\) got unknown option\(s\): max_dets"):
        Evaluator(dataset, max_dets=5)
    with pytest.raises(ValueError, match="the VOC protocols compare boxes"):
        Evaluator(dataset, protocol="voc2012", iou_type="segm")
    with pytest.raises(ValueError, match="unknown_labels must be"):
        Evaluator(dataset, unknown_labels="ignore")


def test_from_bytes_refuses_other_bytes_and_other_ground_truth():
    dataset = _two_image_dataset()
    evaluator = Evaluator(dataset)
    evaluator.update(PREDICTIONS)
    with pytest.raises(FormatError, match="from_bytes: not the bytes of a deteval Evaluator"):
        Evaluator.from_bytes(b"not an archive", dataset)
    with pytest.raises(FormatError, match="another ground truth"):
        Evaluator.from_bytes(evaluator.to_bytes(), case(0)[0])


def test_state_is_smaller_than_the_detections():
    dataset, results, params, _ = case(1)
    evaluator = Evaluator(dataset, unknown_labels="drop", **params)
    evaluator.update(results)
    detections = deteval.read_coco_results(results, dataset)
    columns = (detections.boxes, detections.xywh, detections.scores, detections.area,
               detections.image_index, detections.category_index)
    assert evaluator.state_nbytes < sum(c.nbytes for c in columns)


# ---- segm, keypoints, files ----------------------------------------------------------------


def test_segm_and_keypoint_records_split_by_image():
    from keypointgen import make_keypoints_dataset
    from maskgen import make_segm_dataset

    for make, iou_type in ((make_segm_dataset, "segm"), (make_keypoints_dataset, "keypoints")):
        gt, results = make(3)
        results = [{k: v for k, v in r.items() if k != "bbox"} for r in results]
        dataset = deteval.read_coco_gt(gt, iou_type=iou_type)
        reference = deteval.evaluate_coco(dataset, results, iou_type=iou_type)
        groups = by_image(results)
        halves = [list(groups)[::2], list(groups)[1::2]]
        evaluators = []
        for half in halves:
            evaluator = Evaluator(dataset, iou_type=iou_type, unknown_labels="drop")
            evaluator.update([r for i in half for r in groups[i]])
            evaluators.append(evaluator)
        merged = Evaluator.from_bytes(evaluators[1].to_bytes(), dataset).merge(evaluators[0])
        assert_same(merged.compute(), reference)


def test_segm_per_image_binary_masks_equal_rle_records():
    from pycocotools import mask as mask_utils

    dataset = deteval.read_coco_gt({
        "images": [{"id": 1, "width": 8, "height": 6}],
        "categories": [{"id": 1}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 12,
                         "segmentation": [[1, 1, 5, 1, 5, 4, 1, 4]], "bbox": [1, 1, 4, 3]}]},
        iou_type="segm")
    masks = np.zeros((2, 1, 6, 8), dtype=np.float32)
    masks[0, 0, 1:4, 1:5] = 0.9
    masks[1, 0, 0:3, 0:3] = 0.7
    evaluator = Evaluator(dataset, iou_type="segm")
    evaluator.update({1: {"masks": masks, "scores": [0.8, 0.6], "labels": [1, 1]}})
    rles = mask_utils.encode(np.asfortranarray((masks[:, 0] > 0.5).transpose(1, 2, 0)
                                               .astype(np.uint8)))
    records = [{"image_id": 1, "category_id": 1, "score": s,
                "segmentation": {"size": r["size"], "counts": r["counts"].decode()}}
               for r, s in zip(rles, (0.8, 0.6))]
    assert_same(evaluator.compute(), deteval.evaluate_coco(dataset, records, iou_type="segm"))


def test_evaluate_files_equals_evaluate_coco_on_all(tmp_path):
    import json

    dataset, results, params, reference = case(0)
    groups = by_image(results)
    paths = []
    for k, ids in enumerate((list(groups)[:2], list(groups)[2:])):
        path = tmp_path / f"shard{k}.json"
        path.write_text(json.dumps([r for i in ids for r in groups[i]]))
        paths.append(path)
    assert_same(deteval.evaluate_files(dataset, paths, **params), reference)
