"""Unpickled and deep-copied tables, match tables and COCO and VOC results keep their arrays
read-only (numpy's pickles drop the flag; deteval._arrays.ReadOnlyArrays sets it again)."""

import copy
import dataclasses
import pickle

import numpy as np
from cocogen import make_dataset

import deteval


def test_unpickled_tables_and_results_keep_their_arrays_read_only():
    gt, dt = make_dataset(5, n_images=6, n_categories=3)
    result = deteval.evaluate_coco(gt, dt)

    def writable(obj, path, seen):
        if id(obj) in seen:
            return []
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            return [path] if obj.flags.writeable else []
        if dataclasses.is_dataclass(obj):
            return [p for k, v in vars(obj).items() for p in writable(v, f"{path}.{k}", seen)]
        return []

    assert writable(result, "result", set()) == []
    for again in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result)):
        assert writable(again, "result", set()) == []
        assert again.stats.tobytes() == result.stats.tobytes()


def test_unpickled_voc_results_keep_their_arrays_read_only():
    gt, dt = make_dataset(6, n_images=5, n_categories=3)
    result = deteval.evaluate_voc(gt, dt)
    for again in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result)):
        arrays = [v for v in vars(again).values() if isinstance(v, np.ndarray)]
        assert arrays and not any(a.flags.writeable for a in arrays)
        assert again.ap.tobytes() == result.ap.tobytes()
