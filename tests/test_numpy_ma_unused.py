"""Reading and evaluating segm and keypoint files never imports ``numpy.ma``.

numpy 2.3+'s ``np.unique`` without ``return_*`` flags imports ``numpy.ma`` (to rule out a
masked array), 40-60 ms of a fresh process, which every CLI command and every bench run is;
the segm and keypoint paths use ``deteval._sorting.sorted_unique`` instead. Each check runs
in a fresh interpreter, on small seeded files: polygons (one in two parts, on images of two
sizes) and a crowd region as uncompressed RLE against compressed RLE results; person
keypoints with and without boxes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

mask_utils = pytest.importorskip("pycocotools.mask")

ROOT = Path(__file__).resolve().parent.parent

_CHECK = """
import sys
from deteval import evaluate_coco
from deteval.io.coco import read_coco_gt, read_coco_results
gt = read_coco_gt(sys.argv[1], iou_type=sys.argv[3])
dt = read_coco_results(sys.argv[2], gt, iou_type=sys.argv[3])
evaluate_coco(gt, dt, iou_type=sys.argv[3])
print("numpy.ma" in sys.modules)
"""


def _ma_imported(gt: dict, results: list, iou_type: str, tmp_path: Path) -> bool:
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(results))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", _CHECK, str(gt_path), str(dt_path), iou_type],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[-1] == "True"


def _images() -> list[dict]:
    return [{"id": i + 1, "width": w, "height": h, "file_name": f"{i}.jpg"}
            for i, (w, h) in enumerate([(64, 48), (64, 48), (40, 56)])]


def _segm_files(seed: int) -> tuple[dict, list]:
    rng = np.random.default_rng(seed)
    images = _images()
    annotations, results = [], []
    for image in images:
        w, h = image["width"], image["height"]
        for k in range(4):
            x, y = rng.uniform(0, w / 2), rng.uniform(0, h / 2)
            bw, bh = rng.uniform(4, w / 2), rng.uniform(4, h / 2)
            square = [x, y, x + bw, y, x + bw, y + bh, x, y + bh]
            parts = [square] if k else [square, [1.0, 1.0, 3.0, 1.0, 3.0, 3.0]]
            rle = mask_utils.merge(mask_utils.frPyObjects(parts, h, w))
            crowd = k == 3
            bitmap = np.zeros((h, w), dtype=np.uint8)
            bitmap[int(y):int(y + bh), int(x):int(x + bw)] = 1
            flat = bitmap.ravel(order="F")
            edges = np.flatnonzero(np.diff(flat)) + 1
            runs = np.diff(np.r_[0, edges, len(flat)]).tolist()
            annotations.append({
                "id": len(annotations) + 1, "image_id": image["id"], "category_id": 1 + k % 2,
                "bbox": mask_utils.toBbox(rle).tolist(), "area": float(mask_utils.area(rle)),
                "iscrowd": int(crowd),
                "segmentation": ({"size": [h, w], "counts": ([0] if flat[0] else []) + runs}
                                 if crowd else parts)})
            moved = np.roll(bitmap, int(rng.integers(-2, 3)), axis=1)
            encoded = mask_utils.encode(np.asfortranarray(moved))
            results.append({"image_id": image["id"], "category_id": 1 + k % 2,
                            "segmentation": {"size": [h, w],
                                             "counts": encoded["counts"].decode()},
                            "score": float(rng.uniform())})
    categories = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    return {"images": images, "annotations": annotations, "categories": categories}, results


def _keypoint_files(seed: int, boxes: bool) -> tuple[dict, list]:
    rng = np.random.default_rng(seed)
    images = _images()
    annotations, results = [], []
    for image in images:
        for _ in range(3):
            points = np.column_stack([rng.uniform(0, image["width"], 17),
                                      rng.uniform(0, image["height"], 17),
                                      rng.integers(0, 3, 17)])
            x0, y0 = points[:, :2].min(axis=0)
            x1, y1 = points[:, :2].max(axis=0)
            annotations.append({
                "id": len(annotations) + 1, "image_id": image["id"], "category_id": 1,
                "bbox": [x0, y0, x1 - x0, y1 - y0], "area": float((x1 - x0) * (y1 - y0)),
                "iscrowd": 0, "num_keypoints": int((points[:, 2] > 0).sum()),
                "keypoints": points.ravel().tolist()})
            moved = points + np.column_stack([rng.normal(0, 2, (17, 2)), np.zeros(17)])
            result = {"image_id": image["id"], "category_id": 1,
                      "keypoints": moved.ravel().tolist(), "score": float(rng.uniform())}
            if boxes:
                result["bbox"] = [x0, y0, x1 - x0, y1 - y0]
            results.append(result)
    categories = [{"id": 1, "name": "person", "keypoints": [f"k{i}" for i in range(17)]}]
    return {"images": images, "annotations": annotations, "categories": categories}, results


def test_segm_reading_and_evaluation_import_no_numpy_ma(tmp_path):
    gt, results = _segm_files(0)
    assert not _ma_imported(gt, results, "segm", tmp_path)


@pytest.mark.parametrize("boxes", [False, True])
def test_keypoint_reading_and_evaluation_import_no_numpy_ma(boxes, tmp_path):
    gt, results = _keypoint_files(1, boxes)
    assert not _ma_imported(gt, results, "keypoints", tmp_path)


def test_np_unique_still_imports_numpy_ma():
    """Why the paths avoid it: with this numpy, ``np.unique`` imports ``numpy.ma`` in a fresh
    process (from numpy 2.3; with an older numpy the checks above guard direct imports)."""
    if tuple(int(v) for v in np.__version__.split(".")[:2]) < (2, 3):
        pytest.skip(f"numpy {np.__version__}: np.unique imports numpy.ma from 2.3")
    done = subprocess.run([sys.executable, "-c", "import sys, numpy as np; np.unique([1]); "
                           "print('numpy.ma' in sys.modules)"], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.split()[-1] == "True"
