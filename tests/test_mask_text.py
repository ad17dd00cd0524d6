"""Masks held as one text (deteval._mask_text.MaskText): the ``masks`` column a reader
leaves to be made on first read, and the dicts of some rows made without it."""

import json
import pickle

import numpy as np
import pytest
from pycocotools import mask as mask_utils
from test_numeric_segm import _dumps, _gt, _records

from deteval import evaluate_coco
from deteval._mask_text import MaskText
from deteval.data import Detections, has_column, is_derived, masks_of
from deteval.io.coco import read_coco_gt, read_coco_results
from deteval.masks.rle import RUN_TOTALS_CHECKED, mark_run_totals_checked


def _text(strings, sizes):
    ends = np.cumsum([len(s) for s in strings])
    return MaskText(b"".join(strings), np.r_[0, ends[:-1]], ends, np.array(sizes))


def _encoded(pixels):
    return mask_utils.encode(np.asfortranarray(np.array(pixels, dtype=np.uint8)))["counts"]


PIXELS = [[[0], [0], [0], [0], [0], [1], [1]], [[1, 1, 0, 0], [0, 1, 1, 1], [0, 0, 0, 1]],
          np.ones((6, 5)), [[0]]]
STRINGS = [_encoded(p) for p in PIXELS]
SIZES = [list(np.shape(p)) for p in PIXELS]


def _detections(masks):
    n = len(STRINGS)
    return mark_run_totals_checked(Detections(
        image_index=np.zeros(n, np.int64), category_index=np.zeros(n, np.int64),
        boxes=np.tile([0.0, 0.0, 1.0, 1.0], (n, 1)), scores=np.linspace(0.9, 0.6, n),
        masks=masks))


def test_dicts_strings_and_selections_are_the_masks_of_their_rows():
    text = _text(STRINGS, SIZES)
    dicts = text.dicts().tolist()
    assert [m["counts"] for m in dicts] == STRINGS
    assert [m["size"] for m in dicts] == [tuple(s) for s in SIZES]
    assert text.strings(np.array([3, 0])) == [STRINGS[3], STRINGS[0]]
    picked = text.select(np.array([False, True, False, True]))
    assert picked.strings() == [STRINGS[1], STRINGS[3]] and picked.text is text.text
    assert text.select(slice(None)) is text
    # pycocotools reads the dicts as they are
    assert mask_utils.area(list(text.dicts())).tolist() == [int(np.sum(p)) for p in PIXELS]
    same = pickle.loads(pickle.dumps(text))
    assert same.dicts().tolist() == dicts


def test_masks_of_one_size_share_one_size_tuple():
    text = _text([b"52", b"53", b"PY8"], [[7, 1], [7, 1], [3, 4]])
    first, second, third = text.dicts()
    assert first["size"] is second["size"] and third["size"] == (3, 4)


def test_rows_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="one row per mask"):
        MaskText(b"52", np.array([0]), np.array([2, 2]), np.array([[7, 1]]))
    with pytest.raises(ValueError, match="masks must have length 4; got 3"):
        _detections(_text(STRINGS[:3], SIZES[:3]))


def test_the_column_is_made_when_first_read_and_equals_the_dicts():
    dt = _detections(_text(STRINGS, SIZES))
    assert is_derived(dt, "masks") and has_column(dt, "masks")
    some = masks_of(dt, np.array([2, 0]))
    assert [m["counts"] for m in some] == [STRINGS[2], STRINGS[0]]
    assert is_derived(dt, "masks")          # the rows' dicts only: the column is not made
    column = dt.masks
    assert not is_derived(dt, "masks") and dt.masks is column
    assert not column.flags.writeable
    assert [m["counts"] for m in column] == STRINGS
    assert [m["counts"] for m in masks_of(dt, np.array([1]))] == [STRINGS[1]]


def test_selections_copies_and_pickles_keep_the_text_and_the_checks():
    dt = _detections(_text(STRINGS, SIZES))
    picked = dt[np.array([3, 1])]
    assert is_derived(picked, "masks")
    assert [m["counts"] for m in picked.masks] == [STRINGS[3], STRINGS[1]]
    assert getattr(picked, RUN_TOTALS_CHECKED, False)
    rescored = dt.replace(scores=np.full(4, 0.5))
    assert is_derived(rescored, "masks") and getattr(rescored, RUN_TOTALS_CHECKED, False)
    assert [m["counts"] for m in rescored.masks] == STRINGS
    remasked = dt.replace(masks=np.array([{"size": [1, 1], "counts": b"1"}] * 4))
    assert not getattr(remasked, RUN_TOTALS_CHECKED, False)
    assert [m["counts"] for m in remasked.masks] == [b"1"] * 4
    same = pickle.loads(pickle.dumps(dt))
    assert is_derived(same, "masks")
    assert [m["counts"] for m in same.masks] == STRINGS


def test_a_table_without_masks_has_no_mask_column():
    dt = _detections(None)
    assert not is_derived(dt, "masks") and not has_column(dt, "masks")


@pytest.mark.parametrize(("iou_type", "routines"), [("segm", False), ("segm", True),
                                                    ("boundary", False), ("boundary", True)])
def test_an_evaluation_makes_only_the_masks_of_pairs_that_can_match(tmp_path, iou_type,
                                                                    routines, monkeypatch):
    """Only the detections in pairs that can match have their dicts made; none at all for
    segm through pycocotools' C routines (``routines``: the strings are read from the
    text); the numbers are those of the same detections with every dict made."""
    import deteval.masks._capi

    if routines and deteval.masks._capi.c_routines() is None:
        pytest.skip("pycocotools' C routines cannot be called through ctypes here")
    monkeypatch.setattr(deteval.masks._capi, "_enabled", [routines])
    gt_file = tmp_path / "gt.json"
    gt_file.write_text(json.dumps(_gt(np.random.default_rng(0))))
    dataset = read_coco_gt(gt_file)
    path = tmp_path / "results.json"
    path.write_bytes(_dumps(_records(np.random.default_rng(11), n=400)))
    detections = read_coco_results(path, dataset, iou_type="segm")
    assert is_derived(detections, "masks")
    with_masks = read_coco_gt(gt_file, iou_type="segm")
    made = []
    original = MaskText.dicts

    def counting(self, rows=None):
        made.append(len(self) if rows is None else len(rows))
        return original(self, rows)

    try:
        MaskText.dicts = counting
        lazy = evaluate_coco(with_masks, detections, iou_type=iou_type)
    finally:
        MaskText.dicts = original
    assert is_derived(lazy.detections, "masks")
    if routines and iou_type == "segm":
        assert made == []
    else:
        assert 0 < sum(made) < len(detections)
    eager = evaluate_coco(with_masks, detections.replace(masks=detections.masks),
                          iou_type=iou_type)
    for name in ("stats", "precision", "recall", "scores"):
        assert getattr(lazy, name).tobytes() == getattr(eager, name).tobytes()
