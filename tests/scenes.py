"""Hand-built scenes: three-class ones for the confusion-matrix and outcome tests, and a small
random keypoint scene (COCO dicts) for the keypoint CLI and plot tests, and small DOTA
folders for the polygon tests."""

from __future__ import annotations

import numpy as np

from deteval.data import Categories, Dataset, Detections, GroundTruth, Images

NAMES = ("cat", "dog", "bird")
CAT, DOG, BIRD = 0, 1, 2


def box(x: float, y: float, size: float = 10.0) -> list[float]:
    return [x, y, x + size, y + size]


def scene(objects, detections, n_images: int = 1) -> tuple[Dataset, Detections]:
    """objects: (image, class, box[, crowd, ignore]); detections: (image, class, box, score)."""
    objects = [tuple(o) + (False, False)[len(o) - 3:] for o in objects]
    gt = GroundTruth(image_index=[o[0] for o in objects], category_index=[o[1] for o in objects],
                     boxes=np.array([o[2] for o in objects], dtype=float).reshape(-1, 4),
                     iscrowd=[o[3] for o in objects], ignore=[o[4] for o in objects])
    dataset = Dataset(Images(ids=np.arange(1, n_images + 1)),
                      Categories(ids=[1, 2, 3], names=NAMES), gt)
    dt = Detections(image_index=[d[0] for d in detections],
                    category_index=[d[1] for d in detections],
                    boxes=np.array([d[2] for d in detections], dtype=float).reshape(-1, 4),
                    scores=[d[3] for d in detections])
    return dataset, dt


def keypoint_scene() -> tuple[dict, list]:
    rng = np.random.default_rng(3)
    images = [{"id": i, "width": 120, "height": 90} for i in (1, 2)]
    annotations, results = [], []
    for n, image in enumerate(images * 2, start=1):
        x, y = rng.uniform(0, 60, 2)
        points = np.column_stack([rng.uniform(x, x + 40, 17), rng.uniform(y, y + 40, 17),
                                  rng.integers(0, 3, 17)])
        annotations.append({"id": n, "image_id": image["id"], "category_id": 1,
                            "bbox": [x, y, 40, 40], "area": 1200.0 + 300 * n, "iscrowd": 0,
                            "keypoints": points.ravel().tolist(),
                            "num_keypoints": int((points[:, 2] > 0).sum())})
        for shift, score in ((1.5, 0.9), (9.0, 0.4)):
            moved = points.copy()
            moved[:, :2] += rng.normal(0, shift, (17, 2))
            results.append({"image_id": image["id"], "category_id": 1, "score": score,
                            "keypoints": moved.ravel().tolist()})
    gt = {"images": images, "annotations": annotations,
          "categories": [{"id": 1, "name": "person"}]}
    return gt, results


def dota_folders(tmp_path, *, more: bool = False):
    """A DOTA ``labelTxt`` folder (two images: a plane and a ship, a plane) and a folder of
    Task1 detection files, written under ``tmp_path``; ``more``: a second ship and a plane
    result that matches nothing, so polygon and box IoU give different curves."""
    labels, dets = tmp_path / "labelTxt", tmp_path / "dets"
    labels.mkdir()
    dets.mkdir()
    (labels / "P0001.txt").write_text(
        "imagesource:GoogleEarth\ngsd:0.5\n"
        "10 10 50 10 50 30 10 30 plane 0\n"
        "100 100 140 120 130 140 90 120 ship 0\n"
        + ("200 200 220 200 220 220 200 220 ship 1\n" if more else ""))
    (labels / "P0002.txt").write_text("0 0 30 0 30 30 0 30 plane 0\n")
    (dets / "Task1_plane.txt").write_text(
        "P0001 0.9 11 10 50 11 49 30 10 29\n"
        + ("P0002 0.8 40 40 60 40 60 60 40 60\n" if more else "")
        + "P0002 0.7 1 1 29 1 29 29 1 29\n")
    (dets / "Task1_ship.txt").write_text("P0001 0.6 100 101 139 121 130 139 91 120\n")
    return labels, dets


def shapes_scene() -> tuple[dict, list]:
    """:func:`keypoint_scene` with a box and a polygon mask on every object and detection
    (the detection's box and polygon span its keypoints): one pair of files that the
    ``bbox``, ``segm``, ``boundary`` and ``keypoints`` IoU types all read."""
    gt, results = keypoint_scene()

    def shapes(record: dict, box: list[float] | None = None) -> dict:
        points = np.asarray(record["keypoints"], dtype=np.float64).reshape(-1, 3)
        x, y, w, h = box or [*points[:, :2].min(axis=0),
                             *(np.ptp(points[:, :2], axis=0) + 1.0)]
        polygon = [x, y, x + w, y, x + w, y + h, x, y + h]
        return {**record, "bbox": [float(v) for v in (x, y, w, h)],
                "segmentation": [[float(v) for v in polygon]]}

    annotations = [shapes(a, a["bbox"]) for a in gt["annotations"]]
    images = [{**image, "file_name": f"{image['id']}.png"} for image in gt["images"]]
    return ({**gt, "images": images, "annotations": annotations},
            [shapes(r) for r in results])
