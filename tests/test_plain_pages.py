"""``deteval._arrays.plain_pages``: numpy's huge-page advice is off within the block and
numpy's own setting is restored after the last overlapping block, also after an error; an
evaluation leaves it as it found it (docs/startup.md §8.1)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from cocogen import make_dataset

import deteval
from deteval._arrays import _madvise_switch, plain_pages

switch = _madvise_switch()
pytestmark = pytest.mark.skipif(switch is None, reason="numpy has no _set_madvise_hugepage")


def _setting() -> bool:
    before = switch(False)
    switch(before)
    return bool(before)


@pytest.fixture(params=[True, False], ids=["advice-on", "advice-off"])
def setting(request):
    before = switch(request.param)
    yield request.param
    switch(before)


def test_the_advice_is_off_inside_and_restored_after(setting):
    with plain_pages():
        assert _setting() is False
        with plain_pages():
            assert _setting() is False
        assert _setting() is False      # (the outer block is still running)
    assert _setting() is setting
    with pytest.raises(ValueError, match="stop"), plain_pages():
        raise ValueError("stop")
    assert _setting() is setting


def test_overlapping_blocks_of_two_threads_restore_it_once(setting):
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with plain_pages():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(5)
    with plain_pages():
        second_in.set()
        first_out.wait(5)
        seen["after the first left"] = _setting()
    thread.join()
    assert seen["after the first left"] is False
    assert _setting() is setting


def test_an_evaluation_runs_without_the_advice_and_leaves_it_as_it_found_it(setting,
                                                                            monkeypatch):
    import deteval.protocols.coco as coco

    seen = []
    original = coco.match_stage

    def match_stage(*args, **kwargs):
        seen.append(_setting())
        return original(*args, **kwargs)

    monkeypatch.setattr(coco, "match_stage", match_stage)
    gt, results = make_dataset(1, n_images=20, n_categories=3, max_dt=5)
    result = deteval.evaluate_coco(gt, results)
    assert np.isfinite(result.stats[0])
    assert seen == [False]
    assert _setting() is setting
