"""The matcher's ranks and the COCO stages' detection positions against references.

``_rank_in_groups`` (every detection evaluated, or some not; with and without a tie key)
against a reference built with ``np.lexsort`` and ``np.unique``; ``detection_positions`` on
its two paths (every image and category evaluated and known: plain lookups; or not) against
the same positions computed row by row from the settings.
"""

import numpy as np
import pytest

from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
from deteval.matching import _rank_in_groups
from deteval.protocols._coco_stages import detection_positions, prepare
from deteval.protocols.coco import COCO


def _reference_ranks(group, scores, tie):
    """Per row: position in its group by (descending score, tie, row), and the dense rank of
    its score among the evaluated rows; -1 for rows not evaluated."""
    n = len(group)
    evaluated = np.flatnonzero(group >= 0)
    rank = np.full(n, -1)
    score_rank = np.full(n, -1)
    _, inverse = np.unique(-scores[evaluated], return_inverse=True)
    score_rank[evaluated] = inverse.ravel()
    keys = [evaluated, tie[evaluated], -scores[evaluated], group[evaluated]]
    order = evaluated[np.lexsort(keys)]
    for position, row in enumerate(order):
        same = group[order[:position]] == group[row]
        rank[row] = int(same.sum())
    return rank, score_rank


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("unevaluated", [0.0, 0.3])
@pytest.mark.parametrize("with_tie", [False, True])
def test_rank_in_groups_equals_reference(seed, unevaluated, with_tie):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    group = rng.integers(0, 12, n)
    group[rng.random(n) < unevaluated] = -1
    scores = np.round(rng.random(n), 1)       # many equal scores
    tie = rng.integers(0, 3, n) if with_tie else np.zeros(n, np.int64)
    given = (group.copy(), scores.copy(), tie.copy())
    rank, score_rank = _rank_in_groups(group, scores, tie if with_tie else None)
    expected_rank, expected_score_rank = _reference_ranks(group, scores, tie)
    np.testing.assert_array_equal(rank, expected_rank)
    np.testing.assert_array_equal(score_rank, expected_score_rank)
    assert rank.dtype == score_rank.dtype == np.int64
    for before, after in zip(given, (group, scores, tie)):
        np.testing.assert_array_equal(before, after)     # inputs untouched


def _pair(seed):
    rng = np.random.default_rng(seed)
    n_images, n_categories, n = 5, 4, 60
    dataset = Dataset(
        images=Images(ids=np.arange(10, 10 + n_images)),
        categories=Categories(ids=np.array([7, 3, 9, 1]), names=("a", "b", "c", "d")),
        gt=GroundTruth(image_index=np.zeros(1, np.int64), category_index=np.zeros(1, np.int64),
                       boxes=np.array([[0.0, 0.0, 1.0, 1.0]])))
    xy = rng.random((n, 2)) * 10
    detections = Detections(image_index=rng.integers(0, n_images, n),
                            category_index=rng.integers(0, n_categories, n),
                            boxes=np.hstack([xy, xy + 1]), scores=rng.random(n),
                            category_ids=None)
    return dataset, detections


def _reference_positions(ctx, detections):
    image_ids = list(ctx.image_ids)
    category_ids = list(ctx.category_ids)
    k, img, cat = [], [], []
    for i, c in zip(detections.image_index.tolist(), detections.category_index.tolist()):
        image_id = int(ctx.dataset.images.ids[i])
        category_id = int(ctx.dataset.categories.ids[c])
        c_pos = category_ids.index(category_id) if category_id in category_ids else -1
        i_pos = image_ids.index(image_id) if image_id in image_ids else -1
        ok = c_pos >= 0 and i_pos >= 0
        k.append((c_pos if ctx.params.use_categories else 0) if ok else -1)
        img.append(i_pos if ok else -1)
        cat.append(c_pos)
    return np.array(k), np.array(img), np.array(cat)


@pytest.mark.parametrize("options", [
    pytest.param({}, id="all evaluated"),
    pytest.param({"use_categories": False}, id="pooled"),
    pytest.param({"image_ids": (10, 12, 13)}, id="image subset"),
    pytest.param({"category_ids": (9, 1)}, id="category subset"),
    pytest.param({"use_categories": False, "category_ids": (3, 7)}, id="pooled subset"),
])
def test_detection_positions_equal_reference(options):
    import dataclasses

    dataset, detections = _pair(0)
    ctx = prepare(dataset, dataclasses.replace(COCO, **options))
    dt_k, dt_img, dt_cat = detection_positions(ctx, detections)
    expected = _reference_positions(ctx, detections)
    # int32 when every image and category is evaluated and known (the plain lookups)
    fast = not options or options == {"use_categories": False}
    for got, want in zip((dt_k, dt_img, dt_cat), expected):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == (np.int32 if fast else np.int64)
    assert not np.shares_memory(dt_k, dt_cat)     # callers may change one of them
