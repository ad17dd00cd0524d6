"""deteval.masks._capi: pycocotools' C mask routines through ctypes, the struct layout, the
self-check that decides whether they are used, and the switches that turn them off (the
callers then use the Cython wrappers, with the same numbers)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from maskgen import count_iou_calls
from pycocotools import mask as mask_utils

import deteval.masks._capi as capi
from deteval.masks import pair_mask_iou
from deteval.masks._capi import RLE_DTYPE, c_routines, use_c_routines

needs_routines = pytest.mark.skipif(c_routines() is None,
                                    reason="pycocotools' C routines not loadable")


class _RLE(ctypes.Structure):
    """maskApi.h: ``typedef struct { siz h, w, m; uint *cnts; } RLE;``"""

    _fields_ = [("h", ctypes.c_ulong), ("w", ctypes.c_ulong), ("m", ctypes.c_ulong),
                ("cnts", ctypes.POINTER(ctypes.c_uint))]


@pytest.fixture
def fresh_load():
    """``_load`` computed again in the test, and again after it (the real routines)."""
    capi._load.cache_clear()
    yield
    capi._load.cache_clear()


@needs_routines
def test_the_record_dtype_is_the_c_struct():
    assert RLE_DTYPE.itemsize == ctypes.sizeof(_RLE)
    for name in ("h", "w", "m", "cnts"):
        assert RLE_DTYPE.fields[name][1] == getattr(_RLE, name).offset


def test_piece_records_point_into_the_runs():
    from deteval.masks._runs import piece_records

    runs = np.arange(10, dtype=np.uint32)
    records = piece_records(runs, np.array([4, 6]), np.array([[2, 2], [3, 4]]))
    assert records.dtype == RLE_DTYPE
    assert records["cnts"].tolist() == [runs.ctypes.data, runs.ctypes.data + 16]
    assert records["m"].tolist() == [4, 6] and records["h"].tolist() == [2, 3]
    assert records["w"].tolist() == [2, 4]


@needs_routines
def test_a_routine_that_does_not_give_the_wrappers_values_fails_the_self_check(
        monkeypatch, fresh_load):
    real = capi._declare
    monkeypatch.setattr(capi, "_declare",
                        lambda lib, libc: real(lib, libc)._replace(rleArea=lambda *a: None))
    capi._load.cache_clear()
    assert c_routines() is None
    monkeypatch.setattr(capi, "_declare", real)
    capi._load.cache_clear()
    assert c_routines() is not None


@needs_routines
def test_a_self_check_that_raises_leaves_the_routines_unused(monkeypatch, fresh_load):
    def broken(*args):
        raise RuntimeError("surprise")

    monkeypatch.setattr(capi, "_self_check", broken)
    assert c_routines() is None


def test_symbols_that_do_not_load_leave_the_routines_unused(monkeypatch, fresh_load):
    def missing(lib, libc):
        raise AttributeError("undefined symbol: rleIou")

    monkeypatch.setattr(capi, "_declare", missing)
    assert c_routines() is None


@needs_routines
def test_the_switches_turn_the_routines_off(monkeypatch):
    assert c_routines() is not None
    with use_c_routines(False):
        assert c_routines() is None
        with use_c_routines(True):
            assert c_routines() is not None
        assert c_routines() is None
    monkeypatch.setenv(capi.ENV_SWITCH, "0")
    assert c_routines() is None
    monkeypatch.setenv(capi.ENV_SWITCH, "1")
    assert c_routines() is not None


@needs_routines
def test_with_the_environment_switch_off_pair_mask_iou_takes_the_wrappers(monkeypatch):
    rng = np.random.default_rng(4)
    masks = mask_utils.encode(np.asfortranarray((rng.random((9, 8, 6)) < 0.5)
                                                .astype(np.uint8)))
    rles = np.empty(len(masks), dtype=object)
    rles[:] = masks
    pair = np.repeat(np.arange(6), 6), np.tile(np.arange(6), 6)
    crowd = np.arange(6) % 3 == 0
    image = np.zeros(6, dtype=np.int64)
    wrapper_calls = count_iou_calls(monkeypatch, False)
    monkeypatch.setattr("deteval.masks.pair_iou.c_routines", c_routines)  # (the real one)
    monkeypatch.setenv(capi.ENV_SWITCH, "0")
    off = pair_mask_iou(rles, rles, *pair, crowd, image_of_dt=image)
    assert len(wrapper_calls) == 1
    monkeypatch.setenv(capi.ENV_SWITCH, "1")
    on = pair_mask_iou(rles, rles, *pair, crowd, image_of_dt=image)
    assert len(wrapper_calls) == 1                  # (the routines this time)
    assert np.array_equal(on, off)
