"""The module splits (session 12: ``deteval/_derived.py`` out of ``deteval/data.py``,
``deteval/match_table.py`` out of ``deteval/matching.py``; session 13:
``deteval/io/_json_numbers.py`` out of ``deteval/io/_numeric_json.py``) keep every public
name where it was: each name the old module defined without a leading underscore (read
from the file as it was before the split, recorded here) is importable from it, and is the
very object the new module holds; tables pickled by either path load as the same class."""

from __future__ import annotations

import importlib
import pickle

import numpy as np
import pytest

#: Public names each module defined before the split (``git show 204ef9c:<module>``) that
#: moved to the new module.
_MOVED = {
    "deteval.matching": ("deteval.match_table",
                         ["FN", "FP", "IGNORED", "NOT_EVALUATED", "TP", "MatchTable",
                          "MATCH_COLUMN_TYPES", "narrow_match_column"]),
    "deteval.io._numeric_json": ("deteval.io._json_numbers", ["parse_numbers"]),  # (13)
    "deteval.data": ("deteval._derived",
                     ["DERIVED", "Narrow", "Owned", "FromCategories", "DerivedColumn",
                      "derived_or_read", "has_column", "is_derived", "masks_of", "narrow",
                      "owned", "from_categories"]),
}


@pytest.mark.parametrize("old", sorted(_MOVED))
def test_moved_names_import_from_the_old_module(old):
    new, names = _MOVED[old]
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    for name in names:
        if not hasattr(new_module, name):
            continue        # (a name the new module does not hold: nothing moved)
        assert getattr(old_module, name) is getattr(new_module, name), name


def test_match_column_types_from_matching():
    from deteval.match_table import narrow_match_column
    from deteval.matching import MATCH_COLUMN_TYPES

    narrow = narrow_match_column("match_area", np.array([0, 3]))
    assert narrow.dtype == np.dtype(MATCH_COLUMN_TYPES["match_area"][0])


def test_match_table_pickles_by_either_path():
    import deteval
    from deteval.matching import MatchTable

    gt = {"images": [{"id": 1, "height": 10, "width": 10}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4],
                           "area": 16.0, "iscrowd": 0}],
          "categories": [{"id": 1, "name": "a"}]}
    dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 5], "score": 0.5}]
    table = deteval.evaluate_coco(gt, dt).matches
    back = pickle.loads(pickle.dumps(table))
    assert type(back) is MatchTable
    assert back.detection_status().tolist() == table.detection_status().tolist()

