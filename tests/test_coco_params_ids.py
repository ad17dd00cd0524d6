"""The id lists of COCOParams and VOCParams (``image_ids``, ``category_ids``,
``max_detections``: ``deteval.protocols.coco._integers``), read with one numpy conversion:
every list numpy holds as integers gives the same Python ints as one ``int()`` per value;
integral floats are read, anything else is refused with the message naming the setting, and
a value beyond int64 is refused as too large, whether a Python int in a list or a uint64 in
an array (that one was returned as is, past int64)."""

from __future__ import annotations

import numpy as np
import pytest

import deteval
from deteval.demo import make_demo
from deteval.errors import OptionError
from deteval.protocols.coco import COCOParams, _integers


@pytest.mark.parametrize("seed", range(5))
def test_integer_lists_read_as_one_int_per_value(seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(-2**62, 2**62, 200).tolist()
    small = rng.integers(-2**31, 2**31, 200, dtype=np.int32)
    for given in (values, tuple(values), np.array(values), small, small.astype(np.uint64)
                  & 0x7FFFFFFF):
        got = _integers("image_ids", given)
        assert got == tuple(int(v) for v in given)
        assert all(type(v) is int for v in got)
    floats = [float(v) for v in rng.integers(-10**6, 10**6, 50)]
    assert _integers("image_ids", floats) == tuple(int(v) for v in floats)
    assert _integers("image_ids", np.array(floats)) == tuple(int(v) for v in floats)


@pytest.mark.parametrize("values, message", [
    ([1, 2.5], "image_ids must be a list of integers"),
    ([1, float("nan")], "image_ids must be a list of integers"),
    (["1"], "image_ids must be a list of integers"),
    (np.array([True, False]), "image_ids must be a list of integers"),
    ([[1, 2]], "image_ids must be a list of integers"),
    ([1, 2**63], "image_ids holds 9223372036854775808, too large"),
    ([-2**63 - 1], "image_ids holds -9223372036854775809, too large"),
    ([1.5, 2**70], "image_ids holds 1180591620717411303424, too large"),
    ([1.0, 2.0**64], "image_ids holds 1.84467e+19, too large"),
    (np.array([1, 2**63], dtype=np.uint64), "image_ids holds 9223372036854775808, too large"),
])
def test_what_is_not_an_int64_list_is_refused_naming_the_setting(values, message):
    with pytest.raises(OptionError, match=message.replace("+", r"\+")):
        _integers("image_ids", values)


def test_params_and_evaluation_read_the_ids_alike():
    gt, dt = make_demo(seed=1, n_images=6)
    ids = [image["id"] for image in gt["images"]][::2]
    for given in (ids, tuple(ids), np.array(ids), [float(i) for i in ids]):
        assert COCOParams(image_ids=given).image_ids == tuple(ids)
        result = deteval.evaluate_coco(gt, dt, image_ids=given)
        assert result.params.image_ids == tuple(sorted(ids))
    assert COCOParams(image_ids=[]).image_ids == ()
    with pytest.raises(ValueError, match="category_ids holds 9223372036854775808"):
        deteval.evaluate_coco(gt, dt, category_ids=np.array([2**63], dtype=np.uint64))
