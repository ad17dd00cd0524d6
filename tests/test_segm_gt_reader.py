"""``read_coco_gt(path, iou_type="segm")``: the typed fast path
(deteval/io/coco/typed_segm_gt.py) gives the general path's Dataset field for field (a dict
is read by the general path), every mask the bytes pycocotools' ``annToRLE`` gives
(``frPyObjects`` + ``merge`` for polygons) whatever the ``frPoly`` call cost; a file it does
not take goes to the general path, whose error (message, file, record) a path and a dict
share. Rules: docs/mask-rasteriser.md."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import json

import numpy as np
import pytest
from maskgen import make_segm_dataset
from pycocotools import _mask
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO

from deteval.errors import FormatError
from deteval.io.coco import read_coco_gt
from deteval.io.coco import typed_segm_gt as typed_module
from deteval.masks import rasterise as rasterise_module
from deteval.masks.rle import RUN_TOTALS_CHECKED


def _write(tmp_path, data: dict, name: str = "gt.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _same_values(a, b, where: str) -> None:
    if isinstance(a, np.ndarray) and a.dtype == object:
        assert isinstance(b, np.ndarray) and b.dtype == object, where
        assert list(a) == list(b), where
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert a == b, where


def _assert_same_dataset(mine, theirs) -> None:
    for part in ("images", "categories", "gt"):
        a, b = getattr(mine, part), getattr(theirs, part)
        for field in dataclasses.fields(a):
            _same_values(getattr(a, field.name), getattr(b, field.name), f"{part}.{field.name}")
    for field in dataclasses.fields(mine):
        if field.name not in ("images", "categories", "gt"):
            _same_values(getattr(mine, field.name), getattr(theirs, field.name), field.name)
    assert getattr(mine.gt, RUN_TOTALS_CHECKED, False) == getattr(theirs.gt, RUN_TOTALS_CHECKED,
                                                                   False)


def _pycocotools_masks(data: dict) -> dict[int, dict]:
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = copy.deepcopy(data)
        coco.createIndex()
    masks = {}
    for ann in data["annotations"]:
        segmentation = ann["segmentation"]
        if isinstance(segmentation, list) and len(segmentation[0]) == 4:
            # frPyObjects takes a list whose first polygon has 4 numbers for boxes (and
            # fails); deteval rasterises every part as a polygon (masks_from_segmentations'
            # notes): the parts rasterised one by one by the routine frPyObjects calls.
            image = coco.imgs[ann["image_id"]]
            rles = _mask.frPoly([np.asarray(p, dtype=np.float64) for p in segmentation],
                                image["height"], image["width"])
            masks[ann["id"]] = mask_utils.merge(rles)
            continue
        rle = coco.annToRLE(coco.anns[ann["id"]])
        counts = rle["counts"]
        if isinstance(counts, list):        # (annToRLE leaves an uncompressed RLE so)
            rle = mask_utils.frPyObjects(rle, *rle["size"])
        elif isinstance(counts, str):       # (and a compressed one as given)
            rle = {"size": rle["size"], "counts": counts.encode()}
        masks[ann["id"]] = rle
    return masks


def _generated(seed: int) -> dict:
    gt, _ = make_segm_dataset(seed, n_images=6, max_gt=4, p_crowd=0.4)
    return gt


def _general_path(path):
    """The file read by the general path (the typed reader declining it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("deteval.io.coco.gt.typed_segm_gt", lambda raw, name: None)
        return read_coco_gt(path, iou_type="segm")


def _fast_path_taken(monkeypatch) -> list:
    """Record the typed reader's answers."""
    answers = []
    original = typed_module.typed_segm_gt

    def recorded(raw, name):
        answers.append(original(raw, name))
        return answers[-1]

    monkeypatch.setattr("deteval.io.coco.gt.typed_segm_gt", recorded)
    return answers


@pytest.mark.parametrize("call_cost", [1, 25_000, 10**12])
@pytest.mark.parametrize("seed", range(6))
def test_masks_are_pycocotools_and_the_dataset_the_general_paths(tmp_path, monkeypatch, seed,
                                                                  call_cost):
    # Multi-part polygons, vertices outside the image and on its borders, triangles smaller
    # than a pixel, crowd RLE (compressed and uncompressed); one frPoly call per polygon,
    # the default, and one per image size.
    monkeypatch.setattr(rasterise_module, "CALL_COST", call_cost)
    data = _generated(seed)
    kinds = {type(a["segmentation"]).__name__ for a in data["annotations"]}
    assert kinds == {"list", "dict"}
    answers = _fast_path_taken(monkeypatch)
    path = _write(tmp_path, data)
    dataset = read_coco_gt(path, iou_type="segm")
    assert answers and answers[0] is not None
    _assert_same_dataset(dataset, _general_path(path))
    reference = _pycocotools_masks(data)
    for ann_id, mask in zip(dataset.gt.ids.tolist(), dataset.gt.masks):
        assert mask["counts"] == reference[ann_id]["counts"], ann_id
        assert list(mask["size"]) == list(reference[ann_id]["size"])


def _polygon_file() -> dict:
    """Four images of three sizes; polygons of one to three parts, on the borders, outside
    the image, degenerate (a line, a point, a sliver), tiny; crowd RLE both ways."""
    rng = np.random.default_rng(7)
    images = [{"id": 1, "height": 40, "width": 50}, {"id": 2, "height": 33, "width": 21},
              {"id": 3, "height": 40, "width": 50}, {"id": 4, "height": 1, "width": 1}]
    parts = [
        [[0, 0, 50, 0, 50, 40, 0, 40]],                         # the whole image
        [[-5.5, -3, 60, 2, 20, 45.25]],                         # beyond every border
        [[3, 3, 3, 3, 3, 3]],                                   # one point
        [[1, 1, 9, 9]],                                         # a segment
        [[2, 2, 2.4, 2.1, 2.2, 2.4]],                           # smaller than a pixel
        [[10, 10, 20, 10, 20, 20], [15, 5, 25, 5, 25, 15, 15, 15], [0, 30, 5, 39.5, 0, 39]],
        [[0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]],
        [list(np.round(rng.uniform(-10, 60, 40), 3))],
    ]
    pixels = np.zeros((33, 21), dtype=np.uint8, order="F")
    pixels[4:20, 3:9] = pixels[25:, 15:] = 1
    crowd = mask_utils.encode(pixels)["counts"].decode()
    annotations = []
    for k, segmentation in enumerate(parts * 2):
        image = images[k % 3]
        annotations.append({"id": 10 + k, "image_id": image["id"], "category_id": 1 + k % 2,
                            "segmentation": segmentation, "bbox": [0, 0, 1, 1],
                            "area": float(k), "iscrowd": 0})
    annotations.append({"id": 90, "image_id": 2, "category_id": 1, "bbox": [0, 0, 2, 2],
                        "area": 3.0, "iscrowd": 1,
                        "segmentation": {"size": [33, 21], "counts": [5, 600, 88]}})
    annotations.append({"id": 91, "image_id": 2, "category_id": 2, "bbox": [0, 0, 2, 2],
                        "area": 3.0, "iscrowd": 1,
                        "segmentation": {"size": [33, 21], "counts": crowd}})
    annotations.append({"id": 92, "image_id": 4, "category_id": 2, "bbox": [0, 0, 1, 1],
                        "area": 1.0, "iscrowd": 0, "segmentation": [[0, 0, 1, 0, 1, 1]]})
    return {"images": images, "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
            "annotations": annotations}


def test_edge_polygons_are_pycocotools_and_missing_areas_the_pixel_counts(tmp_path,
                                                                          monkeypatch):
    data = _polygon_file()
    for ann in data["annotations"][::3]:
        del ann["area"]         # the mask's pixel count, as the general path gives it
    answers = _fast_path_taken(monkeypatch)
    path = _write(tmp_path, data)
    dataset = read_coco_gt(path, iou_type="segm")
    assert answers[0] is not None
    _assert_same_dataset(dataset, _general_path(path))
    reference = _pycocotools_masks(data)
    for ann, mask, area in zip(data["annotations"], dataset.gt.masks, dataset.gt.area):
        assert mask["counts"] == reference[ann["id"]]["counts"], ann["id"]
        if "area" not in ann:
            assert area == mask_utils.area(reference[ann["id"]])


def _bad(change) -> dict:
    data = _polygon_file()
    change(data["annotations"])
    return data


def _set(index: int, value):
    def change(annotations):
        annotations[index]["segmentation"] = value
    return change


def _image_size(height, width):
    def change(annotations):
        annotations[0]["image_id"] = 5
    return change, {"id": 5, "height": height, "width": width}


@pytest.mark.parametrize(("change", "message"), [
    (_set(3, [[1, 2, 3]]), "polygon 0 has an odd number of coordinates"),
    (_set(4, [[1, 2, 3, 4], [1, 2]]), "polygon 1 has 1 point"),
    (_set(5, []), "'segmentation' is an empty list"),
    (_set(2, [[0, 0, 5, 0, 5, True]]), "polygon 0 must hold numbers only"),
    (_set(2, [[0, 0, 5, 0, 5, "5"]]), "polygon 0 must hold numbers only"),
    (_set(6, [[0, 0, 5, 0, 5, 5], [0, 0, 10, 0, 10, -1200]]), "polygon 1 has y = -1200.0"),
    (_set(6, [[0, 0, 5, 0, 5, 5], [0, 0, 10, 0, 1e9, 5]]), "polygon 1 has x = 1000000000.0"),
    (_set(1, [[[0, 0], [5, 0], [5, 5], [1, 1]]]), "polygon 0 must hold numbers only"),
    (_set(1, [0, 0, 5, 0, 5, 5]), "polygon 0 must be a list of numbers"),
    (_set(1, {"size": [40, 50]}), "must be a list of polygons or an RLE"),
    (_set(1, {"size": [40, 50], "counts": [1, 2]}), "RLE run lengths add up to 3 pixels"),
    (_set(1, {"size": [33, 22], "counts": [33 * 22]}), "differs from its image's 33x21"),
    (_set(1, {"size": [33, 21], "counts": "0"}), "add up to 0 pixels"),
    (_set(1, None), "must be a list of polygons or an RLE"),
])
def test_errors_are_the_general_paths(tmp_path, change, message):
    data = _bad(change)
    with pytest.raises(FormatError, match=message) as from_dict:
        read_coco_gt(data, iou_type="segm")
    path = _write(tmp_path, data)
    with pytest.raises(FormatError) as from_file:
        read_coco_gt(path, iou_type="segm")
    assert str(from_file.value) == str(from_dict.value).replace("<dict>", str(path))
    assert from_file.value.record == from_dict.value.record
    assert from_file.value.record.startswith("annotations[")


@pytest.mark.parametrize(("height", "width", "message"), [
    (None, 50, "needs its image's 'height' and 'width'"),
    (10.5, 50, "whole numbers of pixels"),
    (10, 0, "it has no pixels"),            # (a polygon of 2 parts: pycocotools hangs)
    (70000, 70000, "too large"),
])
def test_polygons_on_images_that_cannot_be_rasterised_are_the_general_paths_errors(
        tmp_path, height, width, message):
    data = _polygon_file()
    image = {"id": 5, "width": width}
    if height is not None:
        image["height"] = height
    data["images"].append(image)
    data["annotations"][4]["image_id"] = 5
    with pytest.raises(FormatError, match=message) as from_dict:
        read_coco_gt(data, iou_type="segm")
    with pytest.raises(FormatError) as from_file:
        read_coco_gt(_write(tmp_path, data), iou_type="segm")
    assert from_file.value.record == from_dict.value.record == "annotations[4] (id 14)"
    assert str(from_file.value).endswith(str(from_dict.value).split(": ", 1)[1])


def _string_category_ids(data: dict) -> None:
    for category in data["categories"]:
        category["id"] = f"c{category['id']}"
    for ann in data["annotations"]:
        ann["category_id"] = f"c{ann['category_id']}"


def _without_box(data: dict) -> None:
    del data["annotations"][3]["bbox"]          # the box of its mask


def _without_image_size(data: dict) -> None:
    del data["images"][3]["height"]             # (image 4 has only an RLE then)
    data["annotations"][-1]["segmentation"] = {"size": [1, 1], "counts": [0, 1]}


@pytest.mark.parametrize(("change", "taken"), [
    (_string_category_ids, False), (_without_box, False),
    (_without_image_size, True),        # (no polygon on that image: no size needed)
])
def test_files_the_fast_path_declines_go_to_the_general_path_and_read_the_same(
        tmp_path, monkeypatch, change, taken):
    data = _polygon_file()
    change(data)
    answers = _fast_path_taken(monkeypatch)
    path = _write(tmp_path, data)
    dataset = read_coco_gt(path, iou_type="segm")
    assert len(answers) == 1 and (answers[0] is not None) == taken
    _assert_same_dataset(dataset, _general_path(path))


def test_call_cost_bounds_the_frpoly_calls(monkeypatch):
    """Each pycocotools call holds the GIL throughout: a size group's polygons are split
    into calls of at most CALL_COST and one polygon more; the masks are frPoly's + merge."""
    from deteval.masks import mask_api
    from deteval.masks.rasterise import _POLYGON_COST, FlatPolygons, rasterise

    api = mask_api()
    calls = []

    class Recording:
        def frPoly(self, polygons, h, w):
            calls.append((len(polygons), h, w))
            return api.frPoly(polygons, h, w)

        def merge(self, rles, intersect):
            return api.merge(rles, intersect)

    square = [0, 0, 100, 0, 100, 100, 0, 100]           # walk 400 pixels
    objects = [[square]] * 7 + [[square, square]] * 2 + [[[0, 0, 1, 0, 1, 1]]] * 3
    sizes = np.array([[200, 200]] * 9 + [[5, 5]] * 3)
    monkeypatch.setattr(rasterise_module, "CALL_COST", 2 * (400 + _POLYGON_COST))
    out = np.empty(12, dtype=object)
    rasterise(out, list(range(12)), FlatPolygons.of(objects), sizes, Recording())
    # By size (5x5 first: its key is smaller); 11 squares of 200x200 two by two.
    assert calls == [(3, 5, 5)] + [(2, 200, 200)] * 5 + [(1, 200, 200)]
    for mask, parts, (h, w) in zip(out, objects, sizes.tolist()):
        rles = api.frPoly([np.asarray(p, dtype=np.float64) for p in parts], h, w)
        assert mask == (rles[0] if len(rles) == 1 else api.merge(rles, 0))
