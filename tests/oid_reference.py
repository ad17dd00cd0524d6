"""A literal, unoptimised Open Images challenge evaluation, for testing ``evaluate_openimages``.

It follows the TensorFlow Object Detection API step by step (``oid_challenge_evaluation.py``,
``OpenImagesChallengeEvaluator``, ``ObjectDetectionEvaluation``, ``PerImageEvaluation``,
``metrics.compute_precision_recall`` / ``compute_average_precision`` and the hierarchy
expansion tool ``oid_hierarchical_labels_expansion.py``), written anew with plain loops: one
image at a time, one class at a time, one detection at a time. It is slow on purpose and must
stay simple enough to be checked against the rules in ``docs/protocols/openimages.md``.

Inputs are plain rows:

* ``gt_rows``: ``(image_id, label, xmin, xmax, ymin, ymax, is_group_of)``
* ``label_rows``: ``(image_id, label, confidence)``
* ``det_rows``: ``(image_id, label, score, xmin, xmax, ymin, ymax)``
* ``classes``: the label map (label names, class index = position)
"""

from __future__ import annotations

import warnings

import numpy as np

IOU_THRESHOLD = 0.5
GROUP_OF_WEIGHT = 1.0
NMS_MAX_OUTPUT = 10000
SCORE_FLOOR = -10.0


# ------------------------------------------------------------------ hierarchy (§5)

def plain_hierarchy(node, skip_root=False):
    """(parents_of, children_of, all_nodes) of one node, as the expansion tool builds them."""
    children_of, parents_of, below = {}, {}, []
    for sub in node.get("Subcategory", []):
        sub_parents, sub_children, sub_below = plain_hierarchy(sub)
        for key, values in sub_children.items():
            children_of.setdefault(key, []).extend(values)
        for key, values in sub_parents.items():
            parents_of.setdefault(key, []).extend(values)
        below.extend(sub_below)
    if not skip_root:
        name = node["LabelName"]
        children_of[name] = below
        below = [name] + below
        for key in parents_of:
            parents_of[key].append(name)
        parents_of[name] = []
    return parents_of, children_of, below


def expand(gt_rows, label_rows, hierarchy):
    parents_of, children_of, _ = plain_hierarchy(hierarchy, skip_root=True)
    new_gt = []
    for row in gt_rows:
        new_gt.append(row)
        for parent in parents_of[row[1]]:
            new_gt.append((row[0], parent) + tuple(row[2:]))
    new_labels = []
    for row in label_rows:
        new_labels.append(row)
        others = parents_of[row[1]] if int(row[2]) == 1 else children_of[row[1]]
        for other in others:
            new_labels.append((row[0], other, row[2]))
    return new_gt, new_labels


# ------------------------------------------------------------------ per image (§6-§8)

def _area(b):
    return (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])


def _intersection(b1, b2):
    h = np.maximum(np.zeros((len(b1), len(b2))),
                   np.minimum(b1[:, 2:3], b2[:, 2:3].T) - np.maximum(b1[:, 0:1], b2[:, 0:1].T))
    w = np.maximum(np.zeros((len(b1), len(b2))),
                   np.minimum(b1[:, 3:4], b2[:, 3:4].T) - np.maximum(b1[:, 1:2], b2[:, 1:2].T))
    return h * w


def _iou(b1, b2):
    inter = _intersection(b1, b2)
    union = _area(b1)[:, None] + _area(b2)[None, :] - inter
    return inter / union


def _ioa(b1, b2):
    """Intersection over the area of ``b2`` (rows: b1)."""
    return _intersection(b1, b2) / _area(b2)[None, :]


def tp_fp_single_class(det_boxes, det_scores, gt_boxes, gt_group):
    if det_boxes.size == 0:
        return np.array([], dtype=float), np.array([], dtype=bool)
    keep = [i for i in range(len(det_scores)) if det_scores[i] > SCORE_FLOOR]
    det_boxes, det_scores = det_boxes[keep], det_scores[keep]
    if len(det_scores):
        order = np.argsort(det_scores)[::-1]
        det_boxes, det_scores = det_boxes[order], det_scores[order]
        det_boxes, det_scores = det_boxes[:NMS_MAX_OUTPUT], det_scores[:NMS_MAX_OUTPUT]
    n = len(det_scores)
    if gt_boxes.size == 0:
        return det_scores, np.zeros(n, dtype=bool)
    plain = gt_boxes[~gt_group]
    groups = gt_boxes[gt_group]
    iou = _iou(det_boxes, plain)
    ioa = _ioa(groups, det_boxes).T
    tp = np.zeros(n, dtype=bool)
    in_group = np.zeros(n, dtype=bool)
    if iou.shape[1] > 0:
        best = np.argmax(iou, axis=1)
        taken = np.zeros(iou.shape[1], dtype=bool)
        for i in range(n):
            g = best[i]
            if not tp[i] and iou[i, g] >= IOU_THRESHOLD and not in_group[i]:
                if not taken[g]:
                    tp[i] = True
                    taken[g] = True
    group_scores = np.zeros(0)
    group_labels = np.zeros(0)
    if ioa.shape[1] > 0:
        group_scores = np.zeros(ioa.shape[1], dtype=float)
        group_labels = GROUP_OF_WEIGHT * np.ones(ioa.shape[1], dtype=float)
        best = np.argmax(ioa, axis=1)
        for i in range(n):
            g = best[i]
            if not tp[i] and ioa[i, g] >= IOU_THRESHOLD and not in_group[i]:
                in_group[i] = True
                group_scores[g] = max(group_scores[g], det_scores[i])
        chosen = np.where((group_scores > 0) & (group_labels > 0))
        group_scores, group_labels = group_scores[chosen], group_labels[chosen]
    valid = ~in_group
    return (np.concatenate((det_scores[valid], group_scores)),
            np.concatenate((tp[valid].astype(float), group_labels)))


# ------------------------------------------------------------------ accumulation (§9)

def average_precision(scores, labels, num_gt):
    order = np.argsort(scores)[::-1]
    tp = labels[order]
    fp = (tp <= 0).astype(float)
    ctp, cfp = np.cumsum(tp), np.cumsum(fp)
    precision = ctp.astype(float) / (ctp + cfp)
    recall = ctp.astype(float) / num_gt
    if not precision.size:
        return 0.0
    recall = np.concatenate([[0], recall, [1]])
    precision = np.concatenate([[0], precision, [0]])
    for i in range(len(precision) - 2, -1, -1):
        precision[i] = np.maximum(precision[i], precision[i + 1])
    idx = np.where(recall[1:] != recall[:-1])[0] + 1
    return np.sum((recall[idx] - recall[idx - 1]) * precision[idx])


def evaluate(gt_rows, label_rows, det_rows, classes, hierarchy=None, expand_detections=False):
    """Per-class AP (NaN without ground truth), mAP and num_gt, as the TF code computes them."""
    if hierarchy is not None:
        gt_rows, label_rows = expand(gt_rows, label_rows, hierarchy)
        if expand_detections:
            parents_of, _, _ = plain_hierarchy(hierarchy, skip_root=True)
            new = []
            for row in det_rows:
                new.append(row)
                for parent in parents_of[row[1]]:
                    new.append((row[0], parent) + tuple(row[2:]))
            det_rows = new
    index = {name: i for i, name in enumerate(classes)}
    n_class = len(classes)
    num_gt = np.zeros(n_class, dtype=float)
    gt_by_image, evaluatable = {}, {}
    gt_groups, label_groups, det_groups = {}, {}, {}   # pandas' groupby('ImageID'): file order
    for groups, rows in ((gt_groups, gt_rows), (label_groups, label_rows), (det_groups, det_rows)):
        for row in rows:
            groups.setdefault(row[0], []).append(row)
    for image in sorted(set(gt_groups) | set(label_groups)):
        rows = gt_groups.get(image, [])
        boxes = np.array([[r[4], r[2], r[5], r[3]] for r in rows], dtype=float).reshape(-1, 4)
        labels = np.array([index[r[1]] for r in rows], dtype=int)
        group = np.array([int(r[6]) for r in rows], dtype=int).astype(bool)
        image_classes = np.array([index[r[1]] for r in label_groups.get(image, [])], dtype=int)
        gt_by_image[image] = (boxes, labels, group)
        for c in range(n_class):
            num_gt[c] += np.sum(labels[~group] == c) + GROUP_OF_WEIGHT * np.sum(labels[group] == c)
        evaluatable[image] = np.unique(np.concatenate((image_classes, labels)))
    scores_per_class = [[] for _ in range(n_class)]
    labels_per_class = [[] for _ in range(n_class)]
    for image in sorted(det_groups):
        rows = det_groups[image]
        classes_d = np.array([index[r[1]] for r in rows], dtype=int)
        scores = np.array([r[2] for r in rows], dtype=float)
        boxes = np.array([[r[5], r[3], r[6], r[4]] for r in rows], dtype=float).reshape(-1, 4)
        allowed = np.isin(classes_d, evaluatable.get(image, np.array([])))
        classes_d, scores, boxes = classes_d[allowed], scores[allowed], boxes[allowed]
        valid = (boxes[:, 0] < boxes[:, 2]) & (boxes[:, 1] < boxes[:, 3])
        classes_d, scores, boxes = classes_d[valid], scores[valid], boxes[valid]
        gt_boxes, gt_labels, gt_group = gt_by_image.get(
            image, (np.zeros((0, 4)), np.zeros(0, int), np.zeros(0, bool)))
        for c in range(n_class):
            s, lab = tp_fp_single_class(boxes[classes_d == c], scores[classes_d == c],
                                        gt_boxes[gt_labels == c], gt_group[gt_labels == c])
            if s.shape[0] > 0:
                scores_per_class[c].append(s)
                labels_per_class[c].append(lab)
    ap = np.full(n_class, np.nan)
    for c in range(n_class):
        if num_gt[c] == 0:
            continue
        if not scores_per_class[c]:
            s, lab = np.array([], dtype=float), np.array([], dtype=float)
        else:
            s, lab = np.concatenate(scores_per_class[c]), np.concatenate(labels_per_class[c])
        ap[c] = average_precision(s, lab, num_gt[c])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of no class: NaN
        mean_ap = float(np.nanmean(ap))
    return ap, mean_ap, num_gt
