"""Slow, obviously correct references for the vectorised code, one plain loop at a time.

Each function follows the documented definition literally in Python floats; the tests compare
the vectorised functions of deteval with them on random inputs.
"""

from __future__ import annotations

import math

import numpy as np


def _side(lo: float, hi: float) -> float:
    """Length of the interval [lo, hi]; 0 if it is empty or inverted."""
    return max(hi - lo, 0.0)


def _pairwise(a, b, pair_function) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    out = np.zeros((len(a), len(b)))
    for i in range(len(a)):
        for j in range(len(b)):
            out[i, j] = pair_function([float(v) for v in a[i]], [float(v) for v in b[j]])
    return out


def _iou_parts(p, q):
    """Intersection, union and IoU of two xyxy boxes, inverted sides counting as 0."""
    area_p = _side(p[0], p[2]) * _side(p[1], p[3])
    area_q = _side(q[0], q[2]) * _side(q[1], q[3])
    inter = _side(max(p[0], q[0]), min(p[2], q[2])) * _side(max(p[1], q[1]), min(p[3], q[3]))
    union = area_p + area_q - inter
    return inter, union, (inter / union if union > 0 else 0.0)


def reference_box_iou(a, b) -> np.ndarray:
    """IoU of every pair of xyxy boxes; 0 when the union is empty."""
    return _pairwise(a, b, lambda p, q: _iou_parts(p, q)[2])


def reference_box_ioa(a, b) -> np.ndarray:
    """Intersection over the area of the box from ``a``; 0 when that area is 0."""

    def ioa(p, q):
        inter = _iou_parts(p, q)[0]
        area_p = _side(p[0], p[2]) * _side(p[1], p[3])
        return inter / area_p if area_p > 0 else 0.0

    return _pairwise(a, b, ioa)


def reference_generalized_box_iou(a, b) -> np.ndarray:
    """GIoU = IoU - (C - U) / C with C the enclosing box area; IoU alone when C is 0."""

    def giou(p, q):
        _, union, iou = _iou_parts(p, q)
        hull = _side(min(p[0], q[0]), max(p[2], q[2])) * _side(min(p[1], q[1]), max(p[3], q[3]))
        return iou - max(hull - union, 0.0) / hull if hull > 0 else iou

    return _pairwise(a, b, giou)


def _centre_term(p, q) -> float:
    hull_w = _side(min(p[0], q[0]), max(p[2], q[2]))
    hull_h = _side(min(p[1], q[1]), max(p[3], q[3]))
    diagonal2 = hull_w**2 + hull_h**2
    dx = (p[0] + p[2]) / 2 - (q[0] + q[2]) / 2
    dy = (p[1] + p[3]) / 2 - (q[1] + q[3]) / 2
    return (dx**2 + dy**2) / diagonal2 if diagonal2 > 0 else 0.0


def reference_distance_box_iou(a, b) -> np.ndarray:
    """DIoU = IoU - (centre distance)^2 / (enclosing diagonal)^2; no penalty for a 0 diagonal."""
    return _pairwise(a, b, lambda p, q: _iou_parts(p, q)[2] - _centre_term(p, q))


def reference_complete_box_iou(a, b) -> np.ndarray:
    """CIoU = DIoU - alpha v, v from the atan2 of the sides, alpha = v / ((1 - IoU) + v) or 0."""

    def ciou(p, q):
        iou = _iou_parts(p, q)[2]
        angle_p = math.atan2(_side(p[0], p[2]), _side(p[1], p[3]))
        angle_q = math.atan2(_side(q[0], q[2]), _side(q[1], q[3]))
        v = 4 / math.pi**2 * (angle_q - angle_p) ** 2
        alpha = v / ((1 - iou) + v) if (1 - iou) + v > 0 else 0.0
        return iou - _centre_term(p, q) - alpha * v

    return _pairwise(a, b, ciou)


def reference_greedy_match(*, dt_group, dt_scores, dt_tie_key, dt_area, gt_group, gt_crowd,
                           gt_ignore, gt_area, similarity, iou_thresholds, area_ranges,
                           max_detections) -> list[dict[str, np.ndarray]]:
    """pycocotools' ``evaluateImg`` matching loop, literally
    (docs/protocols/coco.md §6.1-§6.3).

    Takes the arguments of ``deteval.matching.match_detections`` and runs, for every area
    range, every group and every IoU threshold, the double loop over detections (by
    descending score, then tie order, only the top ``max_detections``) and ground truth
    (non-ignored first, each part in row order). Returns one dict per area range with the
    dense views of ``MatchTable``: ``detection_matches`` (T, n_dt), ``gt_matches`` (T, n_gt)
    (for a crowd object: the detection matched last), ``detection_status`` and ``gt_status``
    (1 TP, 0 FP/FN, 2 ignored, -1 not evaluated).
    """
    n_dt, n_gt = len(dt_group), len(gt_group)
    thresholds = [float(t) for t in iou_thresholds]
    groups = sorted({int(g) for g in dt_group if g >= 0} | {int(g) for g in gt_group if g >= 0})
    out = []
    for lo, hi in np.asarray(area_ranges, dtype=np.float64).reshape(-1, 2).tolist():
        detection_matches = np.full((len(thresholds), n_dt), -1, dtype=np.int64)
        gt_matches = np.full((len(thresholds), n_gt), -1, dtype=np.int64)
        detection_status = np.full((len(thresholds), n_dt), -1, dtype=np.int64)
        gt_status = np.full((len(thresholds), n_gt), -1, dtype=np.int64)
        for group in groups:
            gts = [j for j in range(n_gt) if gt_group[j] == group]
            ignored = {j: bool(gt_ignore[j]) or gt_area[j] < lo or gt_area[j] > hi for j in gts}
            gts = [j for j in gts if not ignored[j]] + [j for j in gts if ignored[j]]
            dts = [d for d in range(n_dt) if dt_group[d] == group]
            tie = np.zeros(n_dt, np.int64) if dt_tie_key is None else dt_tie_key
            dts = sorted(dts, key=lambda d: (-dt_scores[d], tie[d], d))
            dts = dts[:max_detections]
            for t_index, threshold in enumerate(thresholds):
                taken = set()
                for d in dts:
                    best, match = min(threshold, 1 - 1e-10), None
                    for j in gts:
                        if j in taken and not gt_crowd[j]:
                            continue
                        if match is not None and not ignored[match] and ignored[j]:
                            break
                        iou = float(np.asarray(similarity(np.array([d]), np.array([j])))[0])
                        if iou < best:
                            continue
                        best, match = iou, j
                    if match is not None:
                        taken.add(match)
                        detection_matches[t_index, d] = match
                        gt_matches[t_index, match] = d
                        detection_status[t_index, d] = 2 if ignored[match] else 1
                    else:
                        outside = dt_area[d] < lo or dt_area[d] > hi
                        detection_status[t_index, d] = 2 if outside else 0
                for j in gts:
                    gt_status[t_index, j] = 2 if ignored[j] else (1 if j in taken else 0)
        out.append({"detection_matches": detection_matches, "gt_matches": gt_matches,
                    "detection_status": detection_status, "gt_status": gt_status})
    return out


# --------------------------------------------------------------------------------------------
# Pascal VOC: the devkit's VOCevaldet.m / VOCap.m and detectron2's voc_eval, literally
# --------------------------------------------------------------------------------------------


def matlab_colon(start: float, step: float, stop: float) -> list[float]:
    """MATLAB's ``start:step:stop`` for a positive step (MathWorks' description of COLON).

    ``n`` steps fit (up to rounding). When ``start + n * step`` lands on ``stop`` (up to
    rounding), the first half is ``start + k * step``, the second half ``stop - k * step`` and
    the middle element (n even) ``(start + stop) / 2``; otherwise ``stop`` is replaced by
    ``start + n * step``.
    """
    n = math.floor((stop - start) / step + 1e-10)
    end = stop if abs(start + n * step - stop) <= 1e-10 * max(1.0, abs(stop)) \
        else start + n * step
    out = [0.0] * (n + 1)
    for k in range(n // 2 + 1):
        out[k] = start + k * step
        out[n - k] = end - k * step
    if n % 2 == 0:
        out[n // 2] = (start + end) / 2
    return out


def _matlab_max(values: list[float]) -> float | None:
    """MATLAB's ``max``: None for an empty list, NaN skipped unless everything is NaN."""
    if not values:
        return None
    numbers = [v for v in values if not math.isnan(v)]
    return max(numbers) if numbers else math.nan


def reference_devkit_ap11(rec: list[float], prec: list[float]) -> float:
    """VOC2007 ``VOCevaldet.m``: ``for t=0:0.1:1, p=max(prec(rec>=t)); ap=ap+p/11``."""
    ap = 0.0
    for t in matlab_colon(0.0, 0.1, 1.0):
        p = _matlab_max([prec[i] for i in range(len(rec)) if rec[i] >= t])
        ap = ap + (0.0 if p is None else p) / 11
    return ap


def reference_devkit_vocap(rec: list[float], prec: list[float]) -> float:
    """``VOCap.m``: envelope from the right with MATLAB's NaN-skipping max, then the area."""
    mrec = [0.0, *rec, 1.0]
    mpre = [0.0, *prec, 0.0]
    for i in range(len(mpre) - 2, -1, -1):
        mpre[i] = _matlab_max([mpre[i], mpre[i + 1]])
    ap = 0.0
    for i in range(1, len(mrec)):
        if mrec[i] != mrec[i - 1]:
            ap += (mrec[i] - mrec[i - 1]) * mpre[i]
    return ap


def reference_detectron2_ap(rec: list[float], prec: list[float], use_07_metric: bool) -> float:
    """detectron2's ``voc_ap`` in plain Python (NaN compares as numpy does)."""
    if use_07_metric:
        ap = 0.0
        for t in np.arange(0.0, 1.1, 0.1).tolist():
            reached = [prec[i] for i in range(len(rec)) if rec[i] >= t]
            ap = ap + (max(reached) if reached else 0.0) / 11.0
        return ap
    mrec = [0.0, *rec, 1.0]
    mpre = [0.0, *prec, 0.0]
    for i in range(len(mpre) - 1, 0, -1):
        mpre[i - 1] = max(mpre[i - 1], mpre[i])
    ap = 0.0
    for i in range(len(mrec) - 1):
        if mrec[i + 1] != mrec[i]:  # True when either is NaN
            ap += (mrec[i + 1] - mrec[i]) * mpre[i + 1]
    return ap


def reference_coco101_ap(rec: list[float], prec: list[float]) -> float:
    """pycocotools' ``accumulate`` for one curve: envelope, 101 recall points, mean."""
    pr = list(prec)
    for i in range(len(pr) - 1, 0, -1):
        if pr[i] > pr[i - 1]:
            pr[i - 1] = pr[i]
    samples = []
    for r in np.linspace(0.0, 1.0, 101).tolist():
        hits = [i for i in range(len(rec)) if rec[i] >= r]
        samples.append(pr[hits[0]] if hits else 0.0)
    return sum(samples) / len(samples)


def _voc_overlap(bb, gt, inclusive: bool) -> float | None:
    """The devkit's overlap of two boxes, or None when they do not overlap (iw, ih <= 0)."""
    one = 1.0 if inclusive else 0.0
    iw = min(bb[2], gt[2]) - max(bb[0], gt[0]) + one
    ih = min(bb[3], gt[3]) - max(bb[1], gt[1]) + one
    if not (iw > 0 and ih > 0):
        return None
    ua = ((bb[2] - bb[0] + one) * (bb[3] - bb[1] + one)
          + (gt[2] - gt[0] + one) * (gt[3] - gt[1] + one) - iw * ih)
    return iw * ih / ua


def reference_voc_eval(*, gt_image, gt_class, gt_boxes, gt_difficult, dt_image, dt_class,
                       dt_boxes, dt_scores, classes, threshold: float, flavour: str = "devkit",
                       use_07_metric: bool = True, inclusive: bool = True,
                       strict: bool | None = None) -> dict[int, dict]:
    """Per-class VOC evaluation, literally: sort by score, loop detections, loop objects.

    ``flavour="devkit"``: ``VOCevaldet.m`` (stable sort, ``ovmax >= threshold`` unless
    ``strict``, ``prec = tp ./ (fp + tp)`` with NaN for 0/0, 11-point AP at MATLAB's
    ``0:0.1:1`` or ``VOCap``). ``flavour="detectron2"``: ``voc_eval`` (scores written with
    ``%.3f`` and coordinates with ``%.1f`` and read back, a stable sort instead of its unstable
    one, ``ovmax > threshold`` unless told otherwise, ``prec = tp / max(tp + fp, eps)``, its
    ``voc_ap``; a class without positives gets the recall ``0 / 0 = NaN``). Detections of a
    class not in ``classes`` are not evaluated.

    Returns, per class: ``ap`` (None where npos is 0 with the devkit flavour), ``npos``,
    ``tp`` and ``fp`` totals, ``status`` {detection row: 1 TP, 0 FP, 2 ignored}, ``rec`` and
    ``prec`` (ignored detections included, as the references keep them).
    """
    strict = (flavour == "detectron2") if strict is None else strict
    scores = [float(s) for s in dt_scores]
    boxes = [[float(v) for v in b] for b in np.asarray(dt_boxes, float).reshape(-1, 4)]
    if flavour == "detectron2":
        # write "%.3f %.1f %.1f %.1f %.1f" lines and parse them back, as its evaluator does
        lines = [f"{s:.3f} {b[0]:.1f} {b[1]:.1f} {b[2]:.1f} {b[3]:.1f}"
                 for s, b in zip(scores, boxes)]
        parsed = [[float(x) for x in line.split()] for line in lines]
        scores = [row[0] for row in parsed]
        boxes = [row[1:] for row in parsed]
    gtb = [[float(v) for v in b] for b in np.asarray(gt_boxes, float).reshape(-1, 4)]
    out = {}
    for c in classes:
        objects: dict[int, list[int]] = {}
        for j in range(len(gt_class)):
            if gt_class[j] == c:
                objects.setdefault(int(gt_image[j]), []).append(j)
        npos = sum(1 for j in range(len(gt_class)) if gt_class[j] == c and not gt_difficult[j])
        dets = sorted((d for d in range(len(dt_class)) if dt_class[d] == c),
                      key=lambda d: -scores[d])  # Python's sort is stable, like MATLAB's
        detected: set[int] = set()
        tp, fp, status = [], [], {}
        for d in dets:
            ovmax, jmax = -math.inf, None
            for j in objects.get(int(dt_image[d]), []):
                ov = _voc_overlap(boxes[d], gtb[j], inclusive)
                if ov is not None and ov > ovmax:
                    ovmax, jmax = ov, j
            passed = ovmax > threshold if strict else ovmax >= threshold
            if passed and gt_difficult[jmax]:
                tp.append(0)
                fp.append(0)
                status[d] = 2
            elif passed and jmax not in detected:
                detected.add(jmax)
                tp.append(1)
                fp.append(0)
                status[d] = 1
            else:
                tp.append(0)
                fp.append(1)
                status[d] = 0
        tp_cum, fp_cum = [], []
        for t, f in zip(tp, fp):
            tp_cum.append((tp_cum[-1] if tp_cum else 0) + t)
            fp_cum.append((fp_cum[-1] if fp_cum else 0) + f)
        if flavour == "devkit":
            rec = [t / npos if npos else math.nan for t in tp_cum]
            prec = [t / (t + f) if t + f else math.nan for t, f in zip(tp_cum, fp_cum)]
            if npos == 0:
                ap = None
            elif use_07_metric:
                ap = reference_devkit_ap11(rec, prec)
            else:
                ap = reference_devkit_vocap(rec, prec)
        else:
            rec = [t / npos if npos else math.nan for t in tp_cum]
            prec = [t / max(t + f, np.finfo(np.float64).eps) for t, f in zip(tp_cum, fp_cum)]
            ap = reference_detectron2_ap(rec, prec, use_07_metric)
        out[c] = {"ap": ap, "npos": npos, "tp": sum(tp), "fp": sum(fp), "status": status,
                  "rec": rec, "prec": prec}
    return out
