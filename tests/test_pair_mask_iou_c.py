"""Mask IoU through pycocotools' C routines without the GIL (deteval.masks._runs and the C
path of deteval.masks.pair_iou): the same values, bit for bit, as ``maskUtils.iou``.

- ``parse_joined`` (one ``rleFrString`` call on many strings, each string's runs then
  recovered) against ``rleFrString`` called on each string alone, on random strings of the
  whole alphabet (numbers of 1 to 9 characters, negative deltas, runs that wrap modulo
  2**32), and on the strings it must leave to the Cython wrappers;
- ``pair_mask_iou``'s matrices through ``rleIou`` against those through ``maskUtils.iou``
  and against ``maskUtils.iou`` pair by pair: crowds, empty masks, one-pixel masks, sizes
  that differ (-1), images of different sizes in one call, a mask whose runs do not add
  up to ``h * w`` (compared with masks of another size only: on one size the routine would
  never return, on either path), every number of threads;
- the segm evaluation from files (the results' strings read from the reader's text) with
  the routines on and off, threads 1 to 3: identical arrays.
"""

from __future__ import annotations

import ctypes
import json

import numpy as np
import pytest
from cocogen import assert_parity, run_pycocotools
from maskgen import count_iou_calls, make_segm_dataset
from pycocotools import mask as mask_utils

import deteval
import deteval.masks._capi as capi
from deteval._mask_text import MaskText
from deteval._threads import threads_limited
from deteval.masks import pair_mask_iou
from deteval.masks._capi import RLE_DTYPE, c_routines, use_c_routines
from deteval.masks._runs import mask_runs, mask_strings, parse_joined

C = c_routines()
pytestmark = pytest.mark.skipif(C is None, reason="pycocotools' C routines not loadable")


def _alone(strings: list[bytes]) -> list[list[int]]:
    """Each string's runs as ``rleFrString`` stores them for that string alone."""
    out = []
    for s in strings:
        record = np.zeros(1, dtype=RLE_DTYPE)
        C.rleFrString(record.ctypes.data, s, 1, 1)
        m = int(record["m"][0])
        runs = (np.frombuffer((ctypes.c_uint32 * m).from_address(int(record["cnts"][0])),
                              dtype=np.uint32).tolist() if m else [])
        C.rleFree(record.ctypes.data)
        out.append(runs)
    return out


def _random_strings(rng: np.random.Generator, n: int) -> list[bytes]:
    """Strings of random numbers of 1 to 9 characters of the whole alphabet '0'..'o' (the
    last character of each number below 'P': no continuation)."""
    strings = []
    for _ in range(n):
        numbers = []
        for _ in range(int(rng.integers(0, 12))):
            k = int(rng.choice([1, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9]))
            body = rng.integers(80, 112, size=k - 1).tolist()     # continuation characters
            numbers.append(bytes(body + [int(rng.integers(48, 80))]))
        strings.append(b"".join(numbers))
    return strings


@pytest.mark.parametrize("seed", range(6))
def test_one_call_on_joined_strings_gives_each_string_s_own_runs(seed):
    rng = np.random.default_rng(seed)
    strings = _random_strings(rng, 300)
    lengths = np.array([len(s) for s in strings])
    runs, counts = parse_joined(C, b"".join(strings), lengths)
    assert runs.dtype == np.uint32
    bounds = np.r_[0, np.cumsum(counts)]
    got = [runs[bounds[i]:bounds[i + 1]].tolist() for i in range(len(strings))]
    assert got == _alone(strings)


def test_joined_strings_of_one_two_and_three_runs_and_empty_ones():
    strings = [b"", b"1", b"", b"12", b"123", b"", b"1234", b"5", b"a0b0", b""]
    runs, counts = parse_joined(C, b"".join(strings), np.array([len(s) for s in strings]))
    assert counts.tolist() == [len(r) for r in _alone(strings)]
    assert runs.tolist() == sum(_alone(strings), [])


@pytest.mark.parametrize("strings", [
    [b"52", b"0:", b"\x00"],        # a NUL byte: the C parse stops there
    [b"52", b"0Q"],                 # ends inside a number (a continuation character)
    [b"5Q", b"2"],                  # ... which would run into the next string
    [b"52", b"0p0"],                # 'p': outside the alphabet
    [b"52", b"\xc30"],              # a non-ASCII byte
])
def test_strings_the_joined_parse_cannot_stand_for_are_left_to_the_wrappers(strings):
    assert parse_joined(C, b"".join(strings), np.array([len(s) for s in strings])) is None
    sizes = np.ones((len(strings), 2), dtype=np.int64)
    assert mask_runs(C, strings, sizes) is None


def test_mask_strings_reads_what_pycocotools_reads_and_nothing_else():
    masks = np.array([{"size": [2, 3], "counts": b"06"}, {"size": (1, 1), "counts": b"01"}])
    strings, sizes = mask_strings(masks)
    assert strings == [b"06", b"01"] and sizes.tolist() == [[2, 3], [1, 1]]
    as_str = np.array([{"size": [2, 3], "counts": "06"}])
    assert mask_strings(as_str)[0] == [b"06"]          # encoded, as pycocotools does
    for bad in ({"size": [2.0, 3], "counts": b"06"}, {"size": [2, 3, 1], "counts": b"06"},
                {"size": [2, 3], "counts": [0, 6]}, {"counts": b"06"},
                {"size": [np.int64(2), 3], "counts": b"06"}):
        assert mask_strings(np.array([masks[0], bad])) is None
    assert mask_strings(np.array([masks[0], {"size": [2, 3], "counts": "06"}])) is None


def test_the_objects_boxes_are_pycocotools_to_bbox():
    rng = np.random.default_rng(3)
    bitmaps = (rng.random((40, 30, 25)) < 0.3).astype(np.uint8)
    bitmaps[..., 0] = 0
    bitmaps[..., 1] = 0
    bitmaps[7, 3, 1] = 1                               # one pixel
    masks = mask_utils.encode(np.asfortranarray(bitmaps))
    runs = mask_runs(C, *mask_strings(np.array(masks)), boxes=True)
    assert np.array_equal(runs.xywh, np.asarray(mask_utils.toBbox(masks)))


def _case(rng: np.random.Generator):
    """Masks of several images (three sizes, one image twice as large in each direction),
    with empty, one-pixel and full masks, crowds, and one mask of a wrong run total."""
    sizes = [(23, 17), (17, 23), (23, 17), (46, 34), (5, 5)]
    masks, image = [], []
    for k, (h, w) in enumerate(sizes):
        for j in range(int(rng.integers(3, 9))):
            kind = j % 6
            bitmap = np.zeros((h, w), dtype=np.uint8)
            if kind == 1:
                bitmap[int(rng.integers(h)), int(rng.integers(w))] = 1
            elif kind == 2:
                bitmap[:] = 1
            elif kind >= 3:
                y, x = rng.integers(0, h // 2), rng.integers(0, w // 2)
                bitmap[y:y + int(rng.integers(1, h)), x:x + int(rng.integers(1, w))] = 1
                bitmap &= (rng.random((h, w)) < 0.8).astype(np.uint8)
            masks.append(mask_utils.encode(np.asfortranarray(bitmap)))
            image.append(k)
    rles = np.empty(len(masks), dtype=object)
    rles[:] = masks
    image = np.array(image)
    pair_dt, pair_gt = (a.ravel() for a in np.meshgrid(np.arange(len(masks)),
                                                        np.arange(len(masks)), indexing="ij"))
    crowd = rng.random(len(masks)) < 0.3
    return rles, image, pair_dt, pair_gt, crowd


def _both(rles_dt, rles_gt, pair_dt, pair_gt, crowd, monkeypatch, **kw):
    calls = count_iou_calls(monkeypatch, True)
    routines = pair_mask_iou(rles_dt, rles_gt, pair_dt, pair_gt, crowd, **kw)
    assert calls                                    # the C path was the one taken
    with use_c_routines(False):
        wrapper = pair_mask_iou(rles_dt, rles_gt, pair_dt, pair_gt, crowd, **kw)
    return routines, wrapper


@pytest.mark.parametrize("seed", range(5))
def test_routines_and_wrapper_give_identical_arrays(seed, monkeypatch):
    rng = np.random.default_rng(100 + seed)
    rles, image, pair_dt, pair_gt, crowd = _case(rng)
    # One group for all: masks of different sizes meet in one call (-1 where boxes overlap).
    group = np.zeros(len(pair_dt), dtype=np.int64)
    routines, wrapper = _both(rles, rles, pair_dt, pair_gt, crowd, monkeypatch,
                              image_of_dt=image, group=group)
    assert np.array_equal(routines, wrapper)
    assert (routines == -1).any() and (routines == 1).any() and (routines == 0).any()
    alone = [float(np.asarray(mask_utils.iou([rles[d]], [rles[g]], [int(crowd[g])]))[0, 0])
             for d, g in zip(pair_dt, pair_gt)]
    assert routines.tolist() == alone
    # By image: groups of one size share calls.
    same = image[pair_dt] == image[pair_gt]
    routines, wrapper = _both(rles, rles, pair_dt[same], pair_gt[same], crowd, monkeypatch,
                              image_of_dt=image)
    assert np.array_equal(routines, wrapper)


def test_a_mask_whose_runs_do_not_add_up_is_parsed_as_pycocotools_parses_it(monkeypatch):
    """Its runs add up to less than h * w: compared with masks of another size only (the
    routine settles those from the boxes: -1 or 0)."""
    short = {"size": [9, 9], "counts": b"0:"}            # 10 pixels of 81
    other = mask_utils.encode(np.asfortranarray(np.ones((8, 9, 2), dtype=np.uint8)))
    rles = np.array([short, *other], dtype=object)
    pair_dt, pair_gt = np.array([0, 0, 1, 2]), np.array([1, 2, 0, 0])
    routines, wrapper = _both(rles, rles, pair_dt, pair_gt, np.array([False, True, False]),
                              monkeypatch, image_of_dt=np.zeros(3, dtype=np.int64))
    assert routines.tolist() == wrapper.tolist() == [-1.0, -1.0, -1.0, -1.0]


def test_masks_the_parse_leaves_out_take_the_wrappers_whole_call(monkeypatch):
    """A float size (pycocotools takes it) and a string with a byte outside the alphabet
    (pycocotools reads it its own way; here of another size than the masks it meets, on
    which the routine never merges): the call goes the ``maskUtils.iou`` way."""
    rng = np.random.default_rng(0)
    bitmaps = (rng.random((6, 5, 4)) < 0.5).astype(np.uint8)
    bitmaps[..., 3] = 1
    masks = mask_utils.encode(np.asfortranarray(bitmaps))
    rles = np.empty(4, dtype=object)
    rles[:] = masks
    pair = np.array([0, 1, 2, 3]), np.array([1, 2, 3, 3])
    strange, floats = rles.copy(), rles.copy()
    strange[2] = {"size": [7, 5], "counts": b"0\x7f"}
    floats[1] = {"size": [6.0, 5], "counts": masks[1]["counts"]}
    for dt in (strange, floats):
        with use_c_routines(False):
            want = pair_mask_iou(dt, rles, *pair, np.zeros(4, bool),
                                 image_of_dt=np.zeros(4, np.int64))
        calls = count_iou_calls(monkeypatch, True)
        got = pair_mask_iou(dt, rles, *pair, np.zeros(4, bool),
                            image_of_dt=np.zeros(4, np.int64))
        assert calls == [] and np.array_equal(got, want)
        monkeypatch.undo()
    assert want[1] != -1                            # (the float size was read as 6)


@pytest.mark.parametrize("seed", range(3))
def test_every_number_of_threads_gives_the_same_values(seed, monkeypatch):
    rng = np.random.default_rng(200 + seed)
    rles, image, pair_dt, pair_gt, crowd = _case(rng)
    monkeypatch.setattr(deteval.masks.pair_iou, "_JOB_CHARS", 40)   # many jobs
    monkeypatch.setattr(deteval.masks.pair_iou, "_BATCH_MASKS", 4)  # many calls
    monkeypatch.setattr(deteval.masks._runs, "_PIECE_CHARS", 50)
    got = []
    for threads in (1, 2, 3):
        with threads_limited(threads):
            got.append(pair_mask_iou(rles, rles, pair_dt, pair_gt, crowd, image_of_dt=image))
    assert np.array_equal(got[0], got[1]) and np.array_equal(got[0], got[2])


def test_the_strings_of_a_results_text_need_no_dicts(monkeypatch):
    rng = np.random.default_rng(7)
    rles, image, pair_dt, pair_gt, crowd = _case(rng)
    strings = [m["counts"] for m in rles]
    ends = np.cumsum([len(s) for s in strings])
    text = MaskText(b"".join(strings), ends - [len(s) for s in strings], ends,
                    [m["size"] for m in rles])
    monkeypatch.setattr(MaskText, "dicts", None)        # (never called on the C path)
    got = pair_mask_iou(text, rles, pair_dt, pair_gt, crowd, image_of_dt=image)
    with use_c_routines(False):
        want = pair_mask_iou(rles, rles, pair_dt, pair_gt, crowd, image_of_dt=image)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("seed", [11, 12])
def test_the_segm_evaluation_from_files_is_cocoeval_s_on_both_paths(seed, tmp_path,
                                                                     monkeypatch):
    gt, results = make_segm_dataset(seed, n_images=40, p_crowd=0.3)
    results = [r for r in results if isinstance(r["segmentation"].get("counts"), str)]
    while len(json.dumps(results)) < 1 << 16:       # the numpy reader's size
        results = results + [dict(r, score=r["score"] * 0.5) for r in results]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    reference = run_pycocotools(gt, results, iou_type="segm")
    import deteval._threads
    import deteval.masks.pair_iou

    asked = []          # the threads the C path's maps were given

    def recording(real):
        return lambda fn, items, threads: asked.append(threads) or real(fn, items, threads)

    monkeypatch.setattr(deteval.masks.pair_iou, "thread_map",
                        recording(deteval.masks.pair_iou.thread_map))
    monkeypatch.setattr(deteval._threads, "thread_map", recording(deteval._threads.thread_map))
    got = {}
    for routines in (True, False):
        with use_c_routines(routines):
            for threads in (1, 2, 3):
                asked.clear()
                got[routines, threads] = deteval.evaluate_coco(
                    tmp_path / "gt.json", tmp_path / "dt.json", iou_type="segm",
                    threads=threads)
                if routines:        # (the evaluation's threads=, not every core)
                    assert threads in asked and (threads > 1 or set(asked) == {1})
    first = got[True, 1]
    assert_parity(first, reference)
    for result in got.values():
        for name in ("stats", "precision", "recall", "scores"):
            assert getattr(result, name).tobytes() == getattr(first, name).tobytes()


def test_capi_is_used_where_it_loads():
    # (not `is C`: tests/test_mask_c_routines.py loads the routines again, a new object)
    assert capi.c_routines() is not None
