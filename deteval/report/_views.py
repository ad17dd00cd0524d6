"""What the figures and the interactive parts of the report are drawn from, bounded in size
whatever the number of classes or images: the confusion heatmap's classes and order, the top
confusions, the precision-recall curves of the best and worst classes, a thinned F1 curve,
and which confusion cells, classes and outcomes each gallery image holds.

Everything here is vectorised numpy over the dataset; Python loops run only over what is
shown (at most :data:`HEATMAP_CLASSES` classes, :data:`TOP_CONFUSIONS` cells,
``2 * SMALL_MULTIPLES`` curves, the gallery's images).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The heatmap shows at most this many classes (plus Unknown); results.json has them all.
HEATMAP_CLASSES = 30
#: How many class-to-class confusions the list of top confusions names.
TOP_CONFUSIONS = 20
#: Precision-recall small multiples: this many best and this many worst classes.
SMALL_MULTIPLES = 8
#: Examples drawn into the gallery for each of the top confusions (beside the worst images).
CELL_EXAMPLES = 2
#: Points a drawn curve is thinned to (the numbers themselves are in results.json).
CURVE_POINTS = 240
#: The outcomes a gallery image can be filtered by: the false-positive reasons and missed.
ERROR_KINDS = ("duplicate", "wrong_class", "localization", "background", "missed")


def confusion_order(counts: np.ndarray) -> np.ndarray:
    """An order of the classes of the square ``counts`` that puts confused classes together.

    A greedy chain on the symmetric confusion ``counts + counts.T`` (diagonal left out): it
    starts at the most confused pair and repeatedly adds, at either end, the class most
    confused with that end; a class confused with neither end starts a new block (the one
    with the most confusions first). Ties go to the lower index, so the order is stable.

    Examples
    --------
    >>> c = np.array([[5, 0, 3], [0, 5, 0], [1, 0, 5]])
    >>> confusion_order(c).tolist()   # 0 and 2 are confused: side by side
    [0, 2, 1]
    """
    s = np.asarray(counts, dtype=np.float64)
    n = len(s)
    if n == 0:
        return np.zeros(0, np.int64)
    s = s + s.T
    np.fill_diagonal(s, 0.0)
    strength = s.sum(axis=1)
    remaining = np.ones(n, bool)
    if s.max() > 0:
        first, second = np.unravel_index(int(np.argmax(s)), s.shape)
        chain = [int(first), int(second)]
    else:
        chain = [int(np.argmax(strength))]
    remaining[chain] = False
    while remaining.any():
        rest = np.flatnonzero(remaining)
        left, right = s[chain[0], rest], s[chain[-1], rest]
        if max(left.max(), right.max()) > 0:
            if right.max() >= left.max():
                chain.append(int(rest[np.argmax(right)]))
            else:
                chain.insert(0, int(rest[np.argmax(left)]))
        else:
            chain.append(int(rest[np.argmax(strength[rest])]))
        remaining[chain[-1]] = remaining[chain[0]] = False
    return np.asarray(chain, dtype=np.int64)


def confusion_view(cm: Any, *, max_classes: int = HEATMAP_CLASSES,
                   n_top: int = TOP_CONFUSIONS) -> dict[str, Any]:
    """The heatmap's classes (category indices, in :func:`confusion_order`) and the top
    class-to-class confusions.

    Top confusions: the off-diagonal cells between two classes with the largest counts
    (ties: row, then column), each with its share of the true class's objects. With more
    than ``max_classes`` classes, the heatmap shows the classes of the top confusions (in
    their order) and then those with the most confusions with other classes (row and
    column, diagonal left out; ties: their missed and background errors, then index), so
    that the listed confusions are cells of the heatmap.
    """
    counts = np.asarray(cm.counts, dtype=np.int64)
    k = cm.n_classes
    off = counts[:k, :k].copy()
    np.fill_diagonal(off, 0)
    flat = off.ravel()
    cells = np.flatnonzero(flat > 0)
    cells = cells[np.lexsort((cells, -flat[cells]))][:n_top]
    rows = counts[:k].sum(axis=1)
    top = []
    for cell in cells.tolist():
        g, p = divmod(cell, k)
        top.append({"true": g, "pred": p, "true_name": cm.labels[g], "pred_name": cm.labels[p],
                    "count": int(flat[cell]), "share": float(flat[cell] / rows[g])})
    if k > max_classes:
        # The classes of the top confusions first, then the most confused others.
        listed = [c for entry in top for c in (entry["true"], entry["pred"])]
        confused = off.sum(axis=0) + off.sum(axis=1)
        other = counts[:k, k] + counts[k, :k]
        ranked = np.lexsort((np.arange(k), -other, -confused))
        chosen = np.asarray(list(dict.fromkeys(listed + ranked.tolist()))[:max_classes])
    else:
        chosen = np.arange(k)
    chosen = chosen[confusion_order(off[np.ix_(chosen, chosen)])]
    return {"classes": chosen.tolist(), "n_classes": k, "top": top}


def thin(n: int, keep: int = CURVE_POINTS, also: int | None = None) -> np.ndarray:
    """At most ``keep`` indices of a curve of ``n`` points, evenly spread, first and last
    included (and ``also``, if given)."""
    if n <= keep:
        index = np.arange(n)
    else:
        index = np.unique(np.linspace(0, n - 1, keep).round().astype(np.int64))
    if also is not None and 0 <= also < n:
        index = np.union1d(index, [also])
    return index


def _interpolated(recall: np.ndarray, precision: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Highest precision at a recall >= each grid value (0 beyond the curve's end)."""
    if len(recall) == 0:
        return np.zeros(len(grid))
    envelope = np.maximum.accumulate(precision[::-1])[::-1]
    at = np.searchsorted(recall, grid, side="left")
    return np.where(at < len(recall), envelope[np.minimum(at, len(recall) - 1)], 0.0)


def pr_view(result: Any, protocol: str, iou_threshold: float) -> dict[str, Any]:
    """The mean precision-recall curve and the curves of the best and worst classes.

    COCO: class curves are ``precision[t, :, k, area all, maxDets 100]`` (LVIS:
    ``precision[t, :, k, area all]``, at its per-image cut; CrowdPose: at its maxDets 20)
    on the 101 recall thresholds, the mean curve their mean over the classes with ground
    truth, its AP the mean as pycocotools averages. VOC: class curves are
    ``result.pr_curve`` (thinned), the mean curve the mean of their interpolated precision
    on the same 101 recall levels, and the AP shown the protocol's mAP. Classes are ranked
    by their AP (ties: category order).
    """
    grid = np.linspace(0.0, 1.0, 101)
    names = result.category_names
    curves: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if protocol in ("coco", "lvis", "crowdpose"):
        p = result.params
        t = next(i for i, v in enumerate(p.iou_thresholds) if abs(v - iou_threshold) < 1e-9)
        if protocol == "lvis":       # (T, R, K, A): one max-detections setting, the cut
            block = np.asarray(result.precision[t, :, :, 0], dtype=np.float64)
        elif protocol == "crowdpose":   # (T, R, K, A, 1): maxDets 20
            block = np.asarray(result.precision[t, :, :, 0, 0], dtype=np.float64)
        else:
            m = p.max_detections.index(100) if 100 in p.max_detections else -1
            block = np.asarray(result.precision[t, :, :, 0, m], dtype=np.float64)
        has_gt = (block > -1).all(axis=0)
        ap = np.where(has_gt, np.where(block > -1, block, 0).mean(axis=0), np.nan)
        recall = np.asarray(p.recall_thresholds, dtype=np.float64)
        mean = block[:, has_gt].mean(axis=1) if has_gt.any() else np.zeros(len(recall))
        valid = block[block > -1]
        mean_ap = float(valid.mean()) if valid.size else float("nan")
        ranked = _ranked(ap)
        for k in _ends(ranked):
            curves[k] = (recall, block[:, k])
    else:
        t = next(i for i, v in enumerate(result.params.iou_thresholds)
                 if abs(v - iou_threshold) < 1e-9)
        threshold = result.params.iou_thresholds[t]
        ap = np.where(result.n_positives > 0, result.ap[t], np.nan)
        ranked = _ranked(ap)
        interpolated = []
        for k in ranked.tolist():   # the classes with ground truth: one curve each
            curve = result.pr_curve(int(result.category_ids[k]), iou_threshold=threshold)
            interpolated.append(_interpolated(curve.recall, curve.precision, grid))
            if k in _ends(ranked):
                keep = thin(len(curve.recall))
                curves[k] = (curve.recall[keep], curve.precision[keep])
        recall = grid
        mean = np.mean(interpolated, axis=0) if interpolated else np.zeros(len(grid))
        mean_ap = float(result.map[t])
    classes = [{"index": k, "name": names[k], "ap": float(ap[k]),
                "recall": curves[k][0], "precision": curves[k][1]} for k in _ends(ranked)]
    return {"recall": recall, "mean": mean, "mean_ap": mean_ap, "classes": classes,
            "n_with_gt": len(ranked), "iou_threshold": iou_threshold}


def _ranked(ap: np.ndarray) -> np.ndarray:
    """Class indices with a defined AP, best first (ties: category order)."""
    defined = np.flatnonzero(np.isfinite(ap))
    return defined[np.lexsort((defined, -ap[defined]))]


def _ends(ranked: np.ndarray) -> list[int]:
    """The best and worst :data:`SMALL_MULTIPLES` classes (all of them when few)."""
    if len(ranked) <= 2 * SMALL_MULTIPLES:
        return ranked.tolist()
    return ranked[:SMALL_MULTIPLES].tolist() + ranked[-SMALL_MULTIPLES:].tolist()


def f1_view(points: Any) -> dict[str, Any]:
    """The pooled F1, precision and recall by score threshold, thinned, and the best point."""
    curve = points.curve(None)
    best = points.best()
    x = np.asarray(curve["thresholds"], dtype=np.float64)
    keep = thin(len(x))
    return {"threshold": x[keep], "f1": np.asarray(curve["fbeta"])[keep],
            "precision": np.asarray(curve["precision"])[keep],
            "recall": np.asarray(curve["recall"])[keep],
            "best_threshold": float(best["threshold"]), "best_f1": float(best["fbeta"])}


def image_cells(dataset: Any, detections: Any, cm: Any) -> np.ndarray:
    """Rows ``(image, true, pred, count)``: how many objects or detections of each image
    fall in each confusion cell (``K`` is Unknown); a matched pair counts once."""
    k = cm.n_classes
    dt_rows = np.flatnonzero(cm.detection_row >= 0)
    gt_rows = np.flatnonzero(cm.gt_column >= 0)
    # A matched pair is counted by its object; a detection only when it matched nothing.
    dt_rows = dt_rows[cm.detection_gt[dt_rows] < 0]
    image = np.concatenate([detections.image_index[dt_rows], dataset.gt.image_index[gt_rows]])
    true = np.concatenate([cm.detection_row[dt_rows], dataset.gt.category_index[gt_rows]])
    pred = np.concatenate([detections.category_index[dt_rows], cm.gt_column[gt_rows]])
    key = (image.astype(np.int64) * (k + 1) + true) * (k + 1) + pred
    unique, count = np.unique(key, return_counts=True)
    image, rest = np.divmod(unique, (k + 1) ** 2)
    true, pred = np.divmod(rest, k + 1)
    return np.stack([image, true, pred, count], axis=1)


def cell_examples(cells: np.ndarray, top: list[dict[str, Any]],
                  per_cell: int = CELL_EXAMPLES) -> list[int]:
    """For each top confusion, the ``per_cell`` images holding most of it (ties: image
    order), in the order of the top list, without repeats."""
    chosen: list[int] = []
    for entry in top:
        rows = cells[(cells[:, 1] == entry["true"]) & (cells[:, 2] == entry["pred"])]
        rows = rows[np.lexsort((rows[:, 0], -rows[:, 3]))][:per_cell]
        chosen.extend(i for i in rows[:, 0].tolist() if i not in chosen)
    return chosen


def image_tags(images: list[int], cells: np.ndarray, dataset: Any, detections: Any,
               outcomes: Any) -> dict[int, dict[str, list]]:
    """For each image of ``images``: its confusion cells (``"true:pred"``), the classes of its
    objects and counted detections (category indices), and its error kinds."""
    from ..outcomes import DT_OUTCOMES, GT_OUTCOMES

    wanted = np.asarray(images, dtype=np.int64)
    tags: dict[int, dict[str, list]] = {i: {"cells": [], "classes": set(), "errors": set()}
                                         for i in images}
    for image, true, pred, _ in cells[np.isin(cells[:, 0], wanted)].tolist():
        tags[image]["cells"].append(f"{true}:{pred}")
    for image_index, category_index in ((dataset.gt.image_index, dataset.gt.category_index),
                                        (detections.image_index, detections.category_index)):
        mask = np.isin(image_index, wanted)
        for image, category in set(zip(image_index[mask].tolist(),
                                       category_index[mask].tolist())):
            if category >= 0:
                tags[image]["classes"].add(category)
    for image_index, outcome, names in ((outcomes.dt_image_index, outcomes.dt_outcome,
                                         DT_OUTCOMES),
                                        (outcomes.gt_image_index, outcomes.gt_outcome,
                                         GT_OUTCOMES)):
        mask = np.isin(image_index, wanted)
        for image, code in set(zip(image_index[mask].tolist(), outcome[mask].tolist())):
            if names[code] in ERROR_KINDS:
                tags[image]["errors"].add(names[code])
    return {i: {"cells": t["cells"], "classes": sorted(t["classes"]),
                "errors": [e for e in ERROR_KINDS if e in t["errors"]]}
            for i, t in tags.items()}
