"""Seeded random Open Images problems (rows for ``oid_reference``, objects for deteval).

Each problem has a nested class hierarchy (one class sometimes under two parents), group-of
boxes, positive and negative image-level labels, detections near the boxes with coarse
(often tied) scores, and the awkward cases: boxes without area, scores at or below -10,
detections of unverified classes and on unknown images.
"""

from __future__ import annotations

import numpy as np

from deteval.io.openimages import OIDBoxes, OIDDetections, OIDImageLabels


def make_hierarchy(rng: np.random.Generator, n_classes: int) -> tuple[dict, list[str]]:
    names = [f"/m/c{i:02d}" for i in range(n_classes)]
    nodes = {name: {"LabelName": name} for name in names}
    root = {"LabelName": "/m/root", "Subcategory": []}
    for i, name in enumerate(names):
        if i == 0 or rng.random() < 0.35:
            root["Subcategory"].append(nodes[name])
        else:
            parent = nodes[names[int(rng.integers(0, i))]]
            parent.setdefault("Subcategory", []).append(nodes[name])
            if i >= 3 and rng.random() < 0.15:   # a second parent (a DAG, as in Open Images)
                other = nodes[names[int(rng.integers(0, i))]]
                if other is not parent:
                    other.setdefault("Subcategory", []).append({"LabelName": name})
    return root, names


def _box(rng, centre=None, scale=0.3):
    if centre is None:
        x0, y0 = rng.random(2) * 0.7
        w, h = 0.05 + rng.random(2) * scale
        return [x0, min(x0 + w, 1.0), y0, min(y0 + h, 1.0)]
    x0, x1, y0, y1 = centre
    jitter = (rng.random(4) - 0.5) * 0.12 * np.array([x1 - x0, x1 - x0, y1 - y0, y1 - y0]) * 4
    return [x0 + jitter[0], x1 + jitter[1], y0 + jitter[2], y1 + jitter[3]]


def make_problem(seed: int, *, n_images: int = 6, n_classes: int = 7):
    """(gt_rows, label_rows, det_rows, hierarchy, classes) of one seeded problem."""
    rng = np.random.default_rng(seed)
    hierarchy, leaves = make_hierarchy(rng, n_classes)
    images = [f"img{int(i):03d}" for i in rng.permutation(n_images * 3)[:n_images]]
    gt_rows, label_rows, det_rows = [], [], []
    for image in images:
        present = [str(x) for x in rng.choice(leaves, size=int(rng.integers(0, 4)), replace=False)]
        for label in present:
            for _ in range(int(rng.integers(1, 4))):
                box = _box(rng)
                if rng.random() < 0.05:
                    box[1] = box[0]  # no area
                gt_rows.append((image, label, *box, int(rng.random() < 0.25)))
                for _ in range(int(rng.integers(0, 4))):
                    det = _box(rng, box)
                    det_rows.append((image, label, _score(rng), *det))
                if rng.random() < 0.3:   # a group-of box full of small detections
                    gx0, gx1, gy0, gy1 = box
                    for _ in range(int(rng.integers(1, 4))):
                        u = rng.random(2) * 0.6
                        det_rows.append((image, label, _score(rng),
                                         gx0 + (gx1 - gx0) * u[0], gx0 + (gx1 - gx0) * (u[0] + .3),
                                         gy0 + (gy1 - gy0) * u[1], gy0 + (gy1 - gy0) * (u[1] + .3)))
            if rng.random() < 0.5:
                label_rows.append((image, label, 1))
        for label in rng.choice(leaves, size=int(rng.integers(0, 3)), replace=False):
            if label not in present:
                label_rows.append((image, str(label), int(rng.random() < 0.4)))
        for _ in range(int(rng.integers(0, 5))):   # background detections, any class
            det_rows.append((image, str(rng.choice(leaves)), _score(rng), *_box(rng)))
    for _ in range(int(rng.integers(0, 3))):           # an image nobody annotated
        det_rows.append(("zz_unknown", str(rng.choice(leaves)), _score(rng), *_box(rng)))
    if det_rows and rng.random() < 0.2:
        i = int(rng.integers(0, len(det_rows)))
        det_rows[i] = det_rows[i][:2] + (-10.0,) + det_rows[i][3:]
    order = rng.permutation(len(det_rows))
    det_rows = [det_rows[i] for i in order]
    classes = ["/m/root"] + leaves
    classes.remove("/m/root")
    return gt_rows, label_rows, det_rows, hierarchy, classes


def _score(rng):
    u = rng.random()
    if u < 0.5:
        return float(np.round(rng.random(), 1))   # coarse: many ties
    if u < 0.55:
        return float(-rng.random())               # negative
    return float(rng.random())


def to_objects(gt_rows, label_rows, det_rows):
    def col(rows, i):
        return np.array([r[i] for r in rows], dtype=object)

    gt = OIDBoxes(col(gt_rows, 0), col(gt_rows, 1),
                  np.array([[r[2], r[4], r[3], r[5]] for r in gt_rows], float).reshape(-1, 4),
                  np.array([bool(r[6]) for r in gt_rows], dtype=bool))
    labels = OIDImageLabels(col(label_rows, 0), col(label_rows, 1),
                            np.array([r[2] for r in label_rows], dtype=np.int64))
    dt = OIDDetections(col(det_rows, 0), col(det_rows, 1),
                       np.array([r[2] for r in det_rows], float),
                       np.array([[r[3], r[5], r[4], r[6]] for r in det_rows], float).reshape(-1, 4))
    return gt, labels, dt


#: The headers of the challenge's box, image-label and prediction CSVs.
BOXES_HEADER = "ImageID,LabelName,XMin,XMax,YMin,YMax,IsGroupOf"
LABELS_HEADER = "ImageID,LabelName,Confidence"
DETECTIONS_HEADER = "ImageID,LabelName,Score,XMin,XMax,YMin,YMax"


def write_rows(path, header: str, rows: list) -> str:
    """Write ``rows`` (tuples) under ``header`` as a CSV file; returns its path as str."""
    path.write_text("\n".join([header] + [",".join(map(str, r)) for r in rows]) + "\n")
    return str(path)


def write_problem(folder, seed: int = 3, *, rng: np.random.Generator | None = None,
                  empty: bool = False, nan: bool = False):
    """Write one problem as challenge files; returns ``(args, kwargs)`` of
    ``evaluate_openimages``. Scores are made distinct; with ``rng`` the detection rows are
    shuffled and the image ids replaced by others (in another order)."""
    import json
    from pathlib import Path

    folder = Path(folder)
    gt_rows, label_rows, det_rows, hierarchy, _ = make_problem(seed)
    det_rows = [r[:2] + (round(r[2], 2) + i * 1e-7,) + r[3:] for i, r in enumerate(det_rows)]
    if rng is not None:
        names = sorted({r[0] for r in gt_rows + label_rows + det_rows})
        new = {name: f"x{int(k) * 7 + 3}" for name, k in zip(names, rng.permutation(len(names)))}
        gt_rows = [(new[r[0]],) + r[1:] for r in gt_rows]
        label_rows = [(new[r[0]],) + r[1:] for r in label_rows]
        det_rows = [(new[r[0]],) + r[1:] for r in (det_rows[i] for i in
                                                    rng.permutation(len(det_rows)))]
    if empty:
        det_rows = []
    if nan and det_rows:
        det_rows[0] = det_rows[0][:2] + (float("nan"),) + det_rows[0][3:]

    boxes = Path(write_rows(folder / "boxes.csv", BOXES_HEADER, gt_rows))
    labels = Path(write_rows(folder / "labels.csv", LABELS_HEADER, label_rows))
    dets = Path(write_rows(folder / "dets.csv", DETECTIONS_HEADER, det_rows))
    tree = folder / "hierarchy.json"
    tree.write_text(json.dumps(hierarchy))
    return (boxes, dets), {"image_labels": labels, "hierarchy": tree}
