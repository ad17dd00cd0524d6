"""Run one pycocotools-style script with real pycocotools and with ``deteval.compat``.

A *script* is a function ``script(api, out)`` that uses only ``api.COCO``, ``api.COCOeval``
(and ``api.mask``) and returns the evaluator; :func:`run_both` runs it twice and
:func:`assert_same` compares everything a pycocotools user can read: ``stats``, the
``eval`` arrays, ``evalImgs`` (every key, value, type and dtype), ``ious`` and the printed
summary lines.
"""

from __future__ import annotations

import contextlib
import io
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pycocotools.coco
import pycocotools.cocoeval
import pycocotools.mask

import deteval.compat

REAL = types.SimpleNamespace(COCO=pycocotools.coco.COCO, COCOeval=pycocotools.cocoeval.COCOeval,
                             mask=pycocotools.mask, name="pycocotools")
OURS = types.SimpleNamespace(COCO=deteval.compat.COCO, COCOeval=deteval.compat.COCOeval,
                             mask=deteval.compat.mask, name="deteval.compat")


def run(script: Callable[[Any], Any], api: Any) -> tuple[Any, str]:
    """The evaluator ``script(api)`` returns and everything it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        evaluator = script(api)
    return evaluator, out.getvalue()


def summary_lines(printed: str) -> list[str]:
    """The lines of ``summarize()`` (the ones with ``@[``) in what a script printed."""
    return [line for line in printed.splitlines() if "@[" in line]


def same_value(mine: Any, theirs: Any, where: str) -> None:
    """Equal values of the same type; arrays equal with the same dtype and shape."""
    if isinstance(theirs, np.ndarray):
        assert isinstance(mine, np.ndarray), f"{where}: {type(mine)} is not an ndarray"
        assert mine.dtype == theirs.dtype, f"{where}: dtype {mine.dtype} != {theirs.dtype}"
        assert mine.shape == theirs.shape, f"{where}: shape {mine.shape} != {theirs.shape}"
        assert np.array_equal(mine, theirs), f"{where}: {mine} != {theirs}"
    elif isinstance(theirs, (list, tuple)):
        assert type(mine) is type(theirs), f"{where}: {type(mine)} != {type(theirs)}"
        assert len(mine) == len(theirs), f"{where}: length {len(mine)} != {len(theirs)}"
        for i, (a, b) in enumerate(zip(mine, theirs)):
            same_value(a, b, f"{where}[{i}]")
    else:
        assert type(mine) is type(theirs), f"{where}: {type(mine)} != {type(theirs)}"
        assert mine == theirs, f"{where}: {mine!r} != {theirs!r}"


def assert_same_eval_imgs(mine: list, theirs: list) -> None:
    assert len(mine) == len(theirs), (len(mine), len(theirs))
    for i, (a, b) in enumerate(zip(mine, theirs)):
        if b is None:
            assert a is None, f"evalImgs[{i}] should be None"
            continue
        assert a is not None, f"evalImgs[{i}] is None"
        assert list(a) == list(b), f"evalImgs[{i}] keys {list(a)} != {list(b)}"
        for key in b:
            same_value(a[key], b[key], f"evalImgs[{i}][{key!r}]")


def assert_same_ious(mine: dict, theirs: dict) -> None:
    assert list(mine) == list(theirs), "ious keys differ"
    for key in theirs:
        same_value(mine[key], theirs[key], f"ious[{key}]")


def assert_same(mine: tuple[Any, str], theirs: tuple[Any, str], *, records: bool = True) -> None:
    """Same stats, eval arrays and counts, summary text and (``records``) evalImgs / ious."""
    (e1, printed1), (e2, printed2) = mine, theirs
    assert summary_lines(printed1) == summary_lines(printed2)
    assert np.array_equal(e1.stats, e2.stats), (e1.stats, e2.stats)
    assert e1.eval["counts"] == e2.eval["counts"]
    for key in ("precision", "recall", "scores"):
        same_value(e1.eval[key], e2.eval[key], f"eval[{key!r}]")
    if records:
        assert_same_eval_imgs(e1.evalImgs, e2.evalImgs)
        assert_same_ious(e1.ious, e2.ious)


def run_both(script: Callable[[Any], Any], *, records: bool = True) -> tuple[Any, Any]:
    """Run ``script`` with both APIs, assert they agree, return (ours, theirs) evaluators."""
    mine, theirs = run(script, OURS), run(script, REAL)
    assert_same(mine, theirs, records=records)
    return mine[0], theirs[0]
