"""The data of the streaming and dask cases: the bbox generator at 20,000 images x 100
detections (2M), cached as ``gt.json`` and ``rows.npy`` (the (N, 7) array ``[image_id, x, y,
w, h, score, category_id]``, image by image), and results files of consecutive images."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..common import LAUNCHER

DATA_VERSION = 1
GENERATE = "shards-generate"


def data_folder(data_dir: Path, images: int, dets: int, seed: int) -> Path:
    return data_dir / f"streaming-v{DATA_VERSION}-s{seed}-i{images}-c80-d{dets}"


def ensure_data(data_dir: Path, images: int, dets: int, seed: int) -> Path:
    """Generate (once, in a child process: this one stays small) the folder of gt.json and
    rows.npy."""
    folder = data_folder(data_dir, images, dets, seed)
    if (folder / "rows.npy").exists() and (folder / "gt.json").exists():
        return folder
    print(f"generating {images} images x {dets} detections into {folder} ...", flush=True)
    subprocess.run([sys.executable, str(LAUNCHER), "--child", GENERATE, "--gt", str(folder),
                    "--images", str(images), "--dets-per-image", str(dets), "--seed",
                    str(seed)], check=True)
    return folder


def generate_rows(seed: int, images: int, dets: int):
    """(gt dict, (N, 7) rows) of the bbox generator."""
    import numpy as np

    from .bbox import make_gt, make_results

    gt = make_gt(seed, images, 80)
    results = make_results(gt, seed, dets)
    rows = np.array([[r["image_id"], *r["bbox"], r["score"], r["category_id"]]
                     for r in results], dtype=np.float64).reshape(-1, 7)
    return gt, rows


def generate_child(args) -> int:
    """``--child shards-generate --gt FOLDER``: write gt.json and rows.npy."""
    import numpy as np

    folder = Path(args.gt)
    gt, rows = generate_rows(args.seed, args.images, args.dets_per_image)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gt.json").write_text(json.dumps(gt))
    np.save(folder / "rows.npy", rows)
    return 0


def batch_cuts(image_ids, size: int):
    """Slice bounds of about ``size`` rows, cut where the image changes (rows by image)."""
    import numpy as np

    starts = np.flatnonzero(np.r_[True, image_ids[1:] != image_ids[:-1]])
    targets = np.arange(size, len(image_ids), size)
    cuts = np.unique(starts[np.minimum(np.searchsorted(starts, targets), len(starts) - 1)])
    return np.r_[0, cuts[cuts > 0], len(image_ids)]


def write_shards(folder: Path, n_shards: int) -> list[Path]:
    """Results files of consecutive images, about as many detections each (cached)."""
    import numpy as np
    import orjson

    paths = [folder / f"shard-{k}-of-{n_shards}.json" for k in range(n_shards)]
    if all(p.exists() for p in paths):
        return paths
    rows = np.load(folder / "rows.npy")
    cuts = batch_cuts(rows[:, 0], -(-len(rows) // n_shards))
    for path, lo, hi in zip(paths, cuts[:-1], cuts[1:]):
        records = [{"image_id": int(r[0]), "category_id": int(r[6]), "bbox": r[1:5].tolist(),
                    "score": float(r[5])} for r in rows[lo:hi]]
        path.write_bytes(orjson.dumps(records))
    return paths[:len(cuts) - 1]


def size_of(args, case) -> tuple[int, int]:
    """(images, detections per image) of a shards case: the options, else its defaults."""
    images = args.images or (case.quick if args.quick else case.images)
    return images, args.dets_per_image or case.dets
