"""What the report's figures are drawn from (deteval.report._views), checked against direct
computations: the confusion order, the top confusions and the heatmap's classes, each
image's confusion cells, the mean precision-recall curve and the best and worst classes."""

from __future__ import annotations

import numpy as np
import pytest
import reportgen

import deteval
from deteval.report._views import (
    HEATMAP_CLASSES,
    SMALL_MULTIPLES,
    confusion_order,
    confusion_view,
    image_cells,
    pr_view,
)


@pytest.mark.parametrize("seed", range(6))
def test_confusion_order_keeps_groups_of_confused_classes_together(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 14))
    group = rng.integers(0, 3, n)              # classes confused only within their group
    counts = rng.integers(1, 9, (n, n)) * (group[:, None] == group[None, :])
    counts[np.diag_indices(n)] = rng.integers(0, 50, n)
    order = confusion_order(counts)
    assert sorted(order.tolist()) == list(range(n))
    seen = group[order]
    # Each group is one contiguous run of the order.
    assert len([g for i, g in enumerate(seen) if i == 0 or g != seen[i - 1]]) == len(set(group))


def _scene(n_classes, n_images, seed):
    gt, dt = reportgen.make_scene(n_classes, n_images, seed=seed)
    result = deteval.evaluate_coco(gt, dt)
    cm = deteval.detection_confusion_matrix(gt, dt, score_threshold=0.3)
    return result, cm


@pytest.mark.parametrize("n_classes, n_images", [(12, 30), (150, 80)])
def test_top_confusions_and_heatmap_classes(n_classes, n_images):
    result, cm = _scene(n_classes, n_images, seed=n_classes)
    view = confusion_view(cm)
    k = cm.n_classes
    cells = sorted(((int(cm.counts[g, p]), g, p) for g in range(k) for p in range(k)
                    if g != p and cm.counts[g, p] > 0), key=lambda c: (-c[0], c[1], c[2]))
    assert [(t["count"], t["true"], t["pred"]) for t in view["top"]] == cells[:20]
    for t in view["top"]:
        assert t["share"] == t["count"] / cm.counts[t["true"]].sum()
    shown = view["classes"]
    assert len(shown) == len(set(shown)) == min(k, HEATMAP_CLASSES)
    if k > HEATMAP_CLASSES:   # the listed confusions are cells of the heatmap
        first = view["top"][:HEATMAP_CLASSES // 2]
        assert all(t["true"] in shown and t["pred"] in shown for t in first)


def test_image_cells_add_up_to_the_confusion_matrix():
    result, cm = _scene(15, 40, seed=2)
    rows = image_cells(result.dataset, result.detections, cm)
    rebuilt = np.zeros_like(cm.counts)
    np.add.at(rebuilt, (rows[:, 1], rows[:, 2]), rows[:, 3])
    assert (rebuilt == cm.counts).all()
    assert (rows[:, 3] > 0).all() and len(np.unique(rows[:, :3], axis=0)) == len(rows)


def test_pr_view_is_the_results_curves():
    result, _ = _scene(40, 40, seed=3)
    view = pr_view(result, "coco", 0.5)
    block = result.precision[0, :, :, 0, 2]               # IoU 0.5, area all, maxDets 100
    with_gt = [k for k in range(block.shape[1]) if (block[:, k] > -1).all()]
    assert np.array_equal(view["mean"], np.mean(block[:, with_gt], axis=1))
    assert view["mean_ap"] == result.stats[1]             # pycocotools' AP50
    ap50 = {row["name"]: row["AP50"] for row in result.per_class()}
    ranked = sorted((-ap50[result.category_names[k]], k) for k in with_gt)
    expected = [k for _, k in ranked[:SMALL_MULTIPLES]] + [k for _, k in
                                                            ranked[-SMALL_MULTIPLES:]]
    assert [c["index"] for c in view["classes"]] == expected
    for c in view["classes"]:
        assert np.array_equal(c["precision"], block[:, c["index"]])
        assert c["ap"] == pytest.approx(ap50[c["name"]], abs=1e-12)
