"""Benchmark deteval against pycocotools, faster-coco-eval and hotcoco on the same files.

A deterministic, COCO-scale synthetic data set is generated once (seeded numpy) and cached:
by default 5,000 images, 80 categories, about 36k ground-truth objects with a COCO-like size
mix (~41% small, ~34% medium, ~24% large, ~1% crowd) and 100 detections per image (500k).
Every tool then evaluates the same ``gt.json`` and ``results.json`` in a fresh subprocess per
run, from the files to the 12 COCO bbox stats, so import cost and peak memory belong to one
tool alone. The report gives, per tool: the median and minimum end-to-end time (files to
stats, import excluded), the median of each phase the tool lets us separate, CPU time, peak
RSS, the ratio to deteval, and the largest difference between its 12 stats and pycocotools'.

Usage (from the repository root, with the dev venv)::

    python scripts/bench.py                        # full size, all four tools (~2 min)
    python scripts/bench.py --quick                # 500 images, every tool runs --repeat times
    python scripts/bench.py --tools deteval hotcoco --repeat 5
    python scripts/bench.py --images 2000 --dets-per-image 50 --seed 7 --data-dir /tmp/bench

Options of note: ``--repeat`` (default 3) runs per tool; ``--repeat-slow`` (default 1, or
``--repeat`` with ``--quick``) runs for the slow tools pycocotools and faster-coco-eval, whose
full-size runs take about 70 s and 13 s; ``--data-dir`` (default ./bench-data/) holds the
generated files (~50 MB, ~12 s to make), reused when the same parameters and seed were written
before.

Peak memory is ``ru_maxrss`` of the child. Linux carries the parent's resident memory into a
child's ``ru_maxrss``, so the data is generated in a child too and this process stays ~20 MB;
the report prints that floor.

A tool that is not installed or fails is reported as such and the others still run.
deteval is imported from the source tree this script belongs to. Nothing here asserts on
timings: the figures depend on the machine, which is described at the top of the report.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Bump when the generator changes, so that cached files of an older generator are not reused.
GENERATOR_VERSION = 2

TOOLS = ("deteval", "hotcoco", "faster-coco-eval", "pycocotools")
SLOW_TOOLS = frozenset({"pycocotools", "faster-coco-eval"})
REFERENCE_TOOL = "pycocotools"
MODULES = {
    "deteval": "deteval",
    "hotcoco": "hotcoco",
    "faster-coco-eval": "faster_coco_eval",
    "pycocotools": "pycocotools",
}
PHASES = ("load_gt", "load_dt", "evaluate", "accumulate", "summarize")
STAT_NAMES = (
    "AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl",
)  # fmt: skip

# Share of small (area < 32^2), medium (< 96^2) and large objects, as in COCO val2017.
SIZE_MIX = (0.415, 0.345, 0.24)
CROWD_FRACTION = 0.01
MEAN_GT_PER_IMAGE = 7.3


# --------------------------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------------------------
# numpy is imported inside the generator functions so that a child process measures the import
# of numpy as part of the tool it runs, as a user of that tool would pay it.


def category_ids(n_categories: int) -> list[int]:
    """Non-contiguous category ids like COCO's (80 ids spread over 1..90): a gap after every 8."""
    return [1 + k + k // 8 for k in range(n_categories)]


def _category_weights(np, n_categories: int):
    """Zipf-like class frequencies: the first class is common (like 'person'), the tail rare."""
    weights = 1.0 / np.arange(1, n_categories + 1) ** 0.9
    return weights / weights.sum()


def _sample_boxes(np, rng, widths, heights):
    """One box per row inside an image of the row's size, with the COCO size mix.

    Returns ``(x, y, w, h, area)`` rounded like COCO annotations. ``area`` is the box area times
    a fill factor in (0.5, 1), as the area of a segmentation inside its box would be; it is the
    area that decides the small/medium/large class, as in pycocotools.
    """
    n = len(widths)
    kind = rng.choice(3, size=n, p=SIZE_MIX)
    large_cap = np.maximum(0.9 * np.sqrt(widths * heights), 97.0)
    low = np.array([8.0, 32.0, 96.0])[kind]
    high = np.where(kind == 0, 32.0, np.where(kind == 1, 96.0, large_cap))
    side = np.exp(rng.uniform(np.log(low), np.log(high)))  # sqrt of the segmentation area
    fill = rng.uniform(0.5, 1.0, n)
    aspect = np.exp(rng.normal(0.0, 0.5, n))
    box_area = side**2 / fill
    w = np.clip(np.sqrt(box_area * aspect), 1.0, widths)
    h = np.clip(np.sqrt(box_area / aspect), 1.0, heights)
    x = np.round(rng.random(n) * (widths - w), 2)
    y = np.round(rng.random(n) * (heights - h), 2)
    w = np.minimum(np.round(w, 2), widths - x)
    h = np.minimum(np.round(h, 2), heights - y)
    area = np.round(fill * w * h, 4)
    return x, y, w, h, area


def _rectangle(x: float, y: float, w: float, h: float) -> list[float]:
    """The polygon of a box, as a stand-in segmentation (bbox evaluation never reads it)."""
    x2, y2 = round(x + w, 2), round(y + h, 2)
    return [x, y, x2, y, x2, y2, x, y2]


def make_gt(seed: int, n_images: int, n_categories: int) -> dict:
    """A COCO ground-truth dict: images of COCO-like sizes, categories, ~7.3 objects per image."""
    import numpy as np

    rng = np.random.default_rng([seed, 0])
    # Image sizes: mostly 640 on the long side, 4:3 and similar ratios, 70% landscape.
    long_side = np.where(rng.random(n_images) < 0.9, 640, rng.integers(320, 640, n_images))
    ratio = rng.choice([0.75, 0.667, 0.5625, 0.8, 1.0], p=[0.5, 0.2, 0.1, 0.1, 0.1], size=n_images)
    short_side = np.round(long_side * ratio * rng.uniform(0.9, 1.0, n_images)).astype(np.int64)
    landscape = rng.random(n_images) < 0.7
    img_w = np.where(landscape, long_side, short_side)
    img_h = np.where(landscape, short_side, long_side)
    image_ids = np.arange(1, n_images + 1)

    # Objects per image: overdispersed (gamma-Poisson) around the COCO mean, with empty images.
    rate = rng.gamma(1.5, MEAN_GT_PER_IMAGE / 1.5, n_images)
    counts = np.minimum(rng.poisson(rate), 80)
    image_of = np.repeat(np.arange(n_images), counts)
    n_gt = len(image_of)
    cat_ids = np.array(category_ids(n_categories))
    cats = cat_ids[rng.choice(n_categories, size=n_gt, p=_category_weights(np, n_categories))]
    widths = img_w[image_of].astype(np.float64)
    heights = img_h[image_of].astype(np.float64)
    x, y, w, h, area = _sample_boxes(np, rng, widths, heights)
    crowd = (rng.random(n_gt) < CROWD_FRACTION).astype(np.int64)

    images = [
        {"id": i, "width": wd, "height": ht, "file_name": f"{i:012d}.jpg"}
        for i, wd, ht in zip(image_ids.tolist(), img_w.tolist(), img_h.tolist(), strict=True)
    ]
    annotations = [
        {
            "id": ann_id,
            "image_id": img_id,
            "category_id": cat,
            "bbox": [bx, by, bw, bh],
            "area": ar,
            "iscrowd": cr,
            "segmentation": [_rectangle(bx, by, bw, bh)],
        }
        for ann_id, img_id, cat, bx, by, bw, bh, ar, cr in zip(
            range(1, n_gt + 1),
            image_ids[image_of].tolist(),
            cats.tolist(),
            x.tolist(),
            y.tolist(),
            w.tolist(),
            h.tolist(),
            area.tolist(),
            crowd.tolist(),
            strict=True,
        )
    ]
    categories = [
        {"id": c, "name": f"class_{c}", "supercategory": f"group_{(c - 1) // 10}"}
        for c in cat_ids.tolist()
    ]
    return {
        "info": {"description": f"deteval synthetic benchmark set, seed {seed}"},
        "images": images,
        "annotations": annotations,
        "categories": categories,
    }


def _jitter(np, rng, x, y, w, h, sigma):
    """Boxes moved and rescaled by a relative noise ``sigma``: small sigma, high IoU."""
    cx = x + w / 2 + rng.normal(0.0, 1.0, len(x)) * sigma * w
    cy = y + h / 2 + rng.normal(0.0, 1.0, len(x)) * sigma * h
    nw = w * np.exp(rng.normal(0.0, 1.0, len(x)) * sigma)
    nh = h * np.exp(rng.normal(0.0, 1.0, len(x)) * sigma)
    return cx - nw / 2, cy - nh / 2, nw, nh


def make_results(gt: dict, seed: int, dets_per_image: int) -> list[dict]:
    """Detections for ``gt``: ``dets_per_image`` per image, sorted by image then score.

    Per ground-truth object 0-3 jittered copies (IoU from ~0.95 down to ~0.1) with high scores,
    some copies with a wrong class and middling scores, and background boxes with low scores
    filling the image's quota. Scores are in (0, 1); a third are rounded to 2 or 3 decimals, so
    there are many ties. Boxes are clipped to the image, xywh rounded to 2 decimals.
    """
    import numpy as np

    rng = np.random.default_rng([seed, 1])
    n_images = len(gt["images"])
    image_index = {img["id"]: k for k, img in enumerate(gt["images"])}
    img_w = np.array([img["width"] for img in gt["images"]], dtype=np.float64)
    img_h = np.array([img["height"] for img in gt["images"]], dtype=np.float64)
    cat_ids = np.array([c["id"] for c in gt["categories"]])
    n_categories = len(cat_ids)
    cat_index = {c: k for k, c in enumerate(cat_ids.tolist())}
    anns = gt["annotations"]
    g_img = np.array([image_index[a["image_id"]] for a in anns], dtype=np.int64)
    g_cat = np.array([cat_index[a["category_id"]] for a in anns], dtype=np.int64)
    g_box = np.array([a["bbox"] for a in anns], dtype=np.float64).reshape(-1, 4)

    # Near-duplicates of ground truth, right class.
    copies = rng.choice(4, size=len(anns), p=[0.15, 0.6, 0.2, 0.05])
    src = np.repeat(np.arange(len(anns)), copies)
    sigma = np.exp(rng.uniform(np.log(0.02), np.log(0.4), len(src)))
    tp_box = _jitter(np, rng, *g_box[src].T, sigma)
    tp_score = rng.beta(4.0, 1.5, len(src)) * np.exp(-2.0 * sigma)
    tp_cat = g_cat[src]

    # Copies with a wrong class.
    wrong = np.flatnonzero(rng.random(len(anns)) < 0.12)
    wr_sigma = np.exp(rng.uniform(np.log(0.02), np.log(0.3), len(wrong)))
    wr_box = _jitter(np, rng, *g_box[wrong].T, wr_sigma)
    wr_score = rng.beta(2.0, 4.0, len(wrong))
    wr_cat = (g_cat[wrong] + rng.integers(1, max(n_categories, 2), len(wrong))) % n_categories

    obj_img = np.concatenate([g_img[src], g_img[wrong]])
    obj_box = np.concatenate([np.stack(tp_box, 1), np.stack(wr_box, 1)])
    obj_score = np.concatenate([tp_score, wr_score])
    obj_cat = np.concatenate([tp_cat, wr_cat])
    # At most dets_per_image per image: keep the first ones of each image.
    order = np.argsort(obj_img, kind="stable")
    rank_in_image = np.arange(len(order)) - np.searchsorted(obj_img[order], obj_img[order])
    kept = order[rank_in_image < dets_per_image]
    obj_img, obj_box, obj_score, obj_cat = (a[kept] for a in (obj_img, obj_box, obj_score, obj_cat))

    # Background boxes fill each image up to dets_per_image. As from a real detector, their
    # classes are few per image (the image's own classes and 4 confusers of its own), and half
    # of them are loose boxes around an object of the image (IoU mostly below 0.5).
    n_background = dets_per_image - np.bincount(obj_img, minlength=n_images)
    bg_img = np.repeat(np.arange(n_images), n_background)
    n_bg = len(bg_img)
    bx, by, bw, bh, _ = _sample_boxes(np, rng, img_w[bg_img], img_h[bg_img])
    bg_box = np.stack([bx, by, bw, bh], 1)
    # A random object of the detection's image; a dummy one (index len(anns)) for empty images.
    by_image = np.append(np.argsort(g_img, kind="stable"), len(anns))
    obj_boxes = np.vstack([g_box, [[0.0, 0.0, 1.0, 1.0]]])
    obj_cats = np.append(g_cat, 0)
    gt_count = np.bincount(g_img, minlength=n_images)[bg_img]
    has_gt = gt_count > 0
    slot = np.searchsorted(g_img[by_image[:-1]], bg_img) + (rng.random(n_bg) * gt_count).astype(int)
    near_gt = by_image[slot]
    loose = has_gt & (rng.random(n_bg) < 0.5)
    loose_sigma = np.exp(rng.uniform(np.log(0.3), np.log(0.8), n_bg))
    loose_box = np.stack(_jitter(np, rng, *obj_boxes[near_gt].T, loose_sigma), 1)
    bg_box = np.where(loose[:, None], loose_box, bg_box)
    confusers = rng.choice(n_categories, size=(n_images, 4), p=_category_weights(np, n_categories))
    own_class = has_gt & (rng.random(n_bg) < np.where(loose, 0.7, 0.4))
    bg_cat = np.where(own_class, obj_cats[near_gt], confusers[bg_img, rng.integers(0, 4, n_bg)])
    bg_score = rng.beta(1.0, 6.0, n_bg)

    det_img = np.concatenate([obj_img, bg_img])
    box = np.concatenate([obj_box, bg_box])
    score = np.concatenate([obj_score, bg_score])
    cat = np.concatenate([obj_cat, bg_cat])

    # Clip to the image, at least one pixel wide and high, two decimals like most dumps.
    width, height = img_w[det_img], img_h[det_img]
    x1 = np.clip(box[:, 0], 0.0, width - 1.0)
    y1 = np.clip(box[:, 1], 0.0, height - 1.0)
    x2 = np.clip(box[:, 0] + box[:, 2], x1 + 1.0, width)
    y2 = np.clip(box[:, 1] + box[:, 3], y1 + 1.0, height)
    x1, y1 = np.round(x1, 2), np.round(y1, 2)
    w = np.minimum(np.round(x2 - x1, 2), width - x1)
    h = np.minimum(np.round(y2 - y1, 2), height - y1)

    # Scores: ties from coarse rounding; strictly inside (0, 1).
    coarse = rng.random(len(score))
    decimals = np.where(coarse < 0.2, 2, np.where(coarse < 0.33, 3, 5))
    score = np.round(score * 10.0**decimals) / 10.0**decimals
    score = np.clip(score, 0.001, 0.999)

    order = np.lexsort((-score, det_img))
    image_ids = np.array([img["id"] for img in gt["images"]])
    return [
        {"image_id": i, "category_id": c, "bbox": [bx, by, bw, bh], "score": s}
        for i, c, bx, by, bw, bh, s in zip(
            image_ids[det_img[order]].tolist(),
            cat_ids[cat[order]].tolist(),
            x1[order].tolist(),
            y1[order].tolist(),
            w[order].tolist(),
            h[order].tolist(),
            score[order].tolist(),
            strict=True,
        )
    ]


def describe_data(gt: dict, results: list[dict]) -> dict:
    """Counts that show the generated set is COCO-like (stored next to the files)."""
    anns = gt["annotations"]
    areas = [a["area"] for a in anns]
    n = max(len(anns), 1)
    return {
        "images": len(gt["images"]),
        "categories": len(gt["categories"]),
        "gt": len(anns),
        "gt_per_image": round(len(anns) / max(len(gt["images"]), 1), 2),
        "small": round(sum(a < 32**2 for a in areas) / n, 3),
        "medium": round(sum(32**2 <= a < 96**2 for a in areas) / n, 3),
        "large": round(sum(a >= 96**2 for a in areas) / n, 3),
        "crowd": round(sum(a["iscrowd"] for a in anns) / n, 4),
        "detections": len(results),
        "distinct_scores": len({r["score"] for r in results}),
    }


def _write_json(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
    os.replace(tmp, path)


def ensure_data(data_dir: Path, seed: int, n_images: int, n_categories: int, dets: int):
    """Paths of gt.json and results.json for these parameters, generating them if needed."""
    params = {
        "generator": GENERATOR_VERSION,
        "seed": seed,
        "images": n_images,
        "categories": n_categories,
        "dets_per_image": dets,
    }
    folder = data_dir / f"synth-v{GENERATOR_VERSION}-s{seed}-i{n_images}-c{n_categories}-d{dets}"
    gt_path, dt_path, meta_path = folder / "gt.json", folder / "results.json", folder / "meta.json"
    if meta_path.exists() and gt_path.exists() and dt_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("params") == params:
            return gt_path, dt_path, meta["summary"], True
    folder.mkdir(parents=True, exist_ok=True)
    gt = make_gt(seed, n_images, n_categories)
    results = make_results(gt, seed, dets)
    _write_json(gt, gt_path)
    _write_json(results, dt_path)
    summary = describe_data(gt, results)
    meta_path.write_text(json.dumps({"params": params, "summary": summary}, indent=1))
    return gt_path, dt_path, summary, False


# --------------------------------------------------------------------------------------------
# Child process: one tool, one run
# --------------------------------------------------------------------------------------------


class PhaseTimer:
    """``with timer("phase"):`` records the wall and CPU time of the block under that name."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str):
        start, cpu_start = time.perf_counter(), _cpu_seconds()
        try:
            yield
        finally:
            self.times[name] = time.perf_counter() - start
            self.cpu[name] = _cpu_seconds() - cpu_start


def _run_cocoapi_style(coco_cls, eval_cls, gt_path: str, dt_path: str, timer: PhaseTimer):
    """The pycocotools workflow, which faster-coco-eval and hotcoco reproduce."""
    with timer("load_gt"):
        coco_gt = coco_cls(gt_path)
    with timer("load_dt"):
        coco_dt = coco_gt.loadRes(dt_path)
    with timer("evaluate"):
        evaluator = eval_cls(coco_gt, coco_dt, "bbox")
        evaluator.evaluate()
    with timer("accumulate"):
        evaluator.accumulate()
    with timer("summarize"):
        evaluator.summarize()
    return evaluator.stats, {}


def run_pycocotools(gt_path: str, dt_path: str, timer: PhaseTimer):
    with timer("import"):
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    return _run_cocoapi_style(COCO, COCOeval, gt_path, dt_path, timer)


def run_faster_coco_eval(gt_path: str, dt_path: str, timer: PhaseTimer):
    # By default COCOeval_faster.evaluate() matches and accumulates in one C++ call and
    # accumulate() has nothing left to do; the report notes this.
    with timer("import"):
        from faster_coco_eval import COCO, COCOeval_faster
    return _run_cocoapi_style(COCO, COCOeval_faster, gt_path, dt_path, timer)


def run_hotcoco(gt_path: str, dt_path: str, timer: PhaseTimer):
    with timer("import"):
        from hotcoco import COCO, COCOeval
    return _run_cocoapi_style(COCO, COCOeval, gt_path, dt_path, timer)


def run_deteval(gt_path: str, dt_path: str, timer: PhaseTimer):
    if (REPO_ROOT / "deteval").is_dir():
        sys.path.insert(0, str(REPO_ROOT))  # benchmark the source tree this script belongs to
    with timer("import"):
        import deteval
        from deteval.io.coco import read_coco_gt, read_coco_results
    with timer("load_gt"):
        dataset = read_coco_gt(gt_path)
    with timer("load_dt"):
        detections = read_coco_results(dt_path, dataset)
    with timer("evaluate"):  # matching, accumulation and the 12 stats in one call
        result = deteval.evaluate_coco(dataset, detections)
    inner = {k: float(v) for k, v in (getattr(result, "timings", None) or {}).items()}
    return result.stats, inner


RUNNERS = {
    "deteval": run_deteval,
    "hotcoco": run_hotcoco,
    "faster-coco-eval": run_faster_coco_eval,
    "pycocotools": run_pycocotools,
}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, else KiB


def child_main(tool: str, gt_path: str, dt_path: str) -> int:
    """Run one tool once; print one JSON line with timings, peak RSS and stats (or an error).

    The tools print progress to stdout, some from native code, so file descriptor 1 itself is
    pointed at /dev/null while they run and restored for the JSON line.
    """
    timer = PhaseTimer()
    record: dict = {"tool": tool}
    sys.stdout.flush()
    saved_stdout = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        stats, inner = RUNNERS[tool](gt_path, dt_path, timer)
        record["stats"] = [float(s) for s in stats]
        record["inner"] = inner
    except Exception as exc:  # any failure of the tool is a result to report, not a crash
        record["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        traceback.print_exc(file=sys.stderr)
    finally:
        sys.stdout.flush()
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
        os.close(devnull)
    record["phases"] = timer.times
    record["e2e_s"] = sum(t for name, t in timer.times.items() if name != "import")
    record["cpu_s"] = sum(t for name, t in timer.cpu.items() if name != "import")
    record["peak_mb"] = _peak_rss_mb()
    print(json.dumps(record))
    return 1 if "error" in record else 0


# --------------------------------------------------------------------------------------------
# Parent process: runs, table, agreement of the stats
# --------------------------------------------------------------------------------------------


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _source_tree() -> str:
    """deteval's version as the source tree declares it, and the git state of the tree."""
    version = "?"
    with contextlib.suppress(OSError):
        for line in (REPO_ROOT / "pyproject.toml").read_text().splitlines():
            if line.startswith("version"):
                version = line.split("=", 1)[1].strip().strip('"')
                break
    state = "git: unknown"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        git = ["git", "-C", str(REPO_ROOT)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
        commit = head.stdout.strip() if head.returncode == 0 else "no commit yet"
        state = f"git {commit}{' + uncommitted changes' if dirty.stdout.strip() else ''}"
    return f"{version} from {REPO_ROOT} ({state})"


def machine_lines() -> list[str]:
    """Where the figures come from: CPUs, memory, Python and the versions of every package."""
    cpu_model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        kib = int(Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1])
        memory = f", {kib / 2**20:.1f} GiB RAM"
    nproc = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else nproc
    packages = []
    for dist in ("numpy", "orjson", "pycocotools", "faster-coco-eval", "hotcoco"):
        packages.append(f"{dist} {_version(dist) or 'not installed'}")
    packages.append(f"deteval {_source_tree()}")
    load = ""
    with contextlib.suppress(OSError, AttributeError):
        load = ", load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    return [
        f"machine:  nproc {nproc} (usable {usable}), {cpu_model or 'unknown CPU'}{memory}{load}",
        f"          {platform.platform()}",
        f"python:   {platform.python_version()} ({sys.executable})",
        "packages: " + ", ".join(packages),
    ]


def run_child(tool: str, gt_path: Path, dt_path: Path, timeout: float) -> dict:
    """One run of ``tool`` in a fresh interpreter; the record it printed, or an error."""
    command = [
        sys.executable, str(Path(__file__).resolve()),
        "--child", tool, "--gt", str(gt_path), "--dt", str(dt_path),
    ]  # fmt: skip
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    try:
        record = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        record = {"tool": tool, "error": f"exit code {proc.returncode}, no result"}
    if "error" in record:
        record["stderr_tail"] = proc.stderr.strip().splitlines()[-6:]
    return record


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 100:
        return f"{seconds:.0f}"
    if seconds >= 10:
        return f"{seconds:.1f}"
    if seconds >= 1:
        return f"{seconds:.2f}"
    return f"{seconds:.3f}"


def _fmt_ratio(ratio: float) -> str:
    return f"{ratio:.0f}x" if ratio >= 100 else f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.2f}x"


def summarise_tool(records: list[dict]) -> dict:
    """Medians over the successful runs of one tool."""
    ok = [r for r in records if "error" not in r]
    phases = {p: _median([r["phases"].get(p) for r in ok]) for p in ("import", *PHASES)}
    inner_names = list(dict.fromkeys(name for r in ok for name in r.get("inner", {})))
    return {
        "runs": len(ok),
        "e2e": _median([r["e2e_s"] for r in ok]),
        "e2e_min": min(r["e2e_s"] for r in ok),
        "cpu": _median([r["cpu_s"] for r in ok]),
        "peak_mb": max(r["peak_mb"] for r in ok),
        "phases": phases,
        "inner": {n: _median([r["inner"].get(n) for r in ok]) for n in inner_names},
        "stats": ok[0]["stats"],
        "stable": all(r["stats"] == ok[0]["stats"] for r in ok),
    }


def print_report(tools: list[str], records: dict[str, list[dict]], baseline: str) -> None:
    summaries = {}
    failures = {}
    for tool in tools:
        runs = records[tool]
        if runs and all("error" not in r for r in runs):
            summaries[tool] = summarise_tool(runs)
        else:
            failures[tool] = next((r for r in runs if "error" in r), {"error": "did not run"})

    print()
    header = (
        f"{'tool':<18}{'runs':>5}{'e2e med':>9}{'e2e min':>9}{'cpu':>8}{'import':>8}"
        f"{'load gt':>9}{'load dt':>9}{'evaluate':>9}{'accum':>8}{'summ':>8}{'peak MB':>9}"
    )
    print("Times in seconds: e2e = files to the 12 stats, import excluded; cpu = user+sys of e2e;")
    print("medians over runs, each run a fresh process; peak MB = max ru_maxrss over runs")
    print(
        f"(its floor is this process's own peak, {_peak_rss_mb():.0f} MB, which a child inherits)."
    )
    print(header)
    print("-" * len(header))
    for tool in tools:
        if tool in failures:
            print(f"{tool:<18}  {failures[tool]['error']}")
            continue
        s = summaries[tool]
        ph = s["phases"]
        print(
            f"{tool:<18}{s['runs']:>5}{_fmt_s(s['e2e']):>9}{_fmt_s(s['e2e_min']):>9}"
            f"{_fmt_s(s['cpu']):>8}{_fmt_s(ph['import']):>8}{_fmt_s(ph['load_gt']):>9}"
            f"{_fmt_s(ph['load_dt']):>9}{_fmt_s(ph['evaluate']):>9}{_fmt_s(ph['accumulate']):>8}"
            f"{_fmt_s(ph['summarize']):>8}{s['peak_mb']:>9.0f}"
        )
    notes = []
    if "faster-coco-eval" in summaries:
        notes.append("faster-coco-eval: evaluate() matches and accumulates in one C++ call.")
    if "deteval" in summaries:
        notes.append("deteval: evaluate = evaluate_coco(), matching to the 12 stats.")
        inner = summaries["deteval"]["inner"]
        if inner:
            split = ", ".join(f"{name} {_fmt_s(t)}" for name, t in inner.items())
            notes.append(f"deteval result.timings (medians, s): {split}")
    for note in notes:
        print(f"  {note}")

    for tool, failure in failures.items():
        for line in failure.get("stderr_tail", []):
            print(f"  [{tool}] {line}")

    if not summaries:
        return
    print()
    if baseline in summaries:
        base = baseline
        print(f"End to end against {baseline} (median):")
    else:
        base = min(summaries, key=lambda t: summaries[t]["e2e"])
        why = "has no result" if baseline in tools else "was not run"
        print(f"End to end (median); {baseline} {why}, ratios against {base}, the fastest:")
    for tool in tools:
        if tool in summaries:
            ratio = summaries[tool]["e2e"] / summaries[base]["e2e"]
            seconds = _fmt_s(summaries[tool]["e2e"])
            print(f"  {tool:<18}{seconds:>8} s  = {_fmt_ratio(ratio):>7} {base}")

    print()
    if REFERENCE_TOOL not in summaries:
        print(f"Stats: {REFERENCE_TOOL} has no result, so no reference to compare with.")
        for tool, s in summaries.items():
            print(f"  {tool:<18}" + " ".join(f"{v:.4f}" for v in s["stats"]))
        return
    reference = summaries[REFERENCE_TOOL]["stats"]
    print(f"Stats against {REFERENCE_TOOL} (the reference):")
    for start in (0, 6):
        cells = (f"{STAT_NAMES[k]} {reference[k]:.6f}" for k in range(start, start + 6))
        print("  " + "  ".join(cells))
    for tool in tools:
        if tool not in summaries or tool == REFERENCE_TOOL:
            continue
        stats = summaries[tool]["stats"]
        diffs = [abs(a - b) for a, b in zip(stats, reference, strict=True)]
        worst = max(diffs)
        if stats == reference:
            verdict = "identical to the last bit"
        else:
            differing = [STAT_NAMES[k] for k, d in enumerate(diffs) if d > 0]
            verdict = f"differs in {', '.join(differing)}"
        stable = "" if summaries[tool]["stable"] else "; stats vary between runs!"
        print(f"  {tool:<18}max |diff| {worst:.3g}  ({verdict}){stable}")


def prepare_data(args: argparse.Namespace, n_images: int):
    """``ensure_data`` in a child process, so that this process stays small.

    On Linux a child's ru_maxrss starts from the memory of the process it was forked from, so
    a parent holding the generated data would inflate the peak of every tool run after it.
    """
    command = [
        sys.executable, str(Path(__file__).resolve()), "--generate",
        "--images", str(n_images), "--categories", str(args.categories),
        "--dets-per-image", str(args.dets_per_image), "--seed", str(args.seed),
        "--data-dir", str(args.data_dir),
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"data generation failed:\n{proc.stderr}")
    made = json.loads(proc.stdout.strip().splitlines()[-1])
    return Path(made["gt"]), Path(made["dt"]), made["summary"], made["reused"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time deteval, pycocotools, faster-coco-eval and hotcoco on synthetic data."
    )
    add = parser.add_argument
    add(
        "--tools",
        nargs="+",
        choices=TOOLS,
        default=list(TOOLS),
        metavar="TOOL",
        help=f"tools to run, among {', '.join(TOOLS)} (default: all)",
    )
    add("--images", type=int, help="number of images (default 5000, 500 with --quick)")
    add("--categories", type=int, default=80, help="number of classes (default 80)")
    add("--dets-per-image", type=int, default=100, help="detections per image (default 100)")
    add("--seed", type=int, default=0, help="seed of the generator (default 0)")
    add("--quick", action="store_true", help="500 images; every tool runs --repeat times")
    add("--repeat", type=int, default=3, help="runs per tool (default 3)")
    add(
        "--repeat-slow",
        type=int,
        help="runs of pycocotools and faster-coco-eval (default 1; --repeat with --quick)",
    )
    add(
        "--baseline",
        choices=TOOLS,
        default="deteval",
        help="tool the ratios are computed against (default deteval)",
    )
    add(
        "--data-dir",
        type=Path,
        default=Path("bench-data"),
        help="cache of generated files (default ./bench-data/)",
    )
    add("--timeout", type=float, default=1800.0, help="seconds per run (default 1800)")
    add("--child", choices=TOOLS, help=argparse.SUPPRESS)
    add("--gt", help=argparse.SUPPRESS)
    add("--dt", help=argparse.SUPPRESS)
    add("--generate", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)  # fmt: skip

    if args.child:
        return child_main(args.child, args.gt, args.dt)
    n_images = args.images or (500 if args.quick else 5000)
    if args.generate:
        gt_path, dt_path, summary, reused = ensure_data(
            args.data_dir, args.seed, n_images, args.categories, args.dets_per_image
        )
        made = {"gt": str(gt_path), "dt": str(dt_path), "summary": summary, "reused": reused}
        print(json.dumps(made))
        return 0

    repeat_slow = args.repeat_slow or (args.repeat if args.quick else 1)
    tools = [t for t in TOOLS if t in args.tools]
    for line in machine_lines():
        print(line)

    start = time.perf_counter()
    gt_path, dt_path, summary, reused = prepare_data(args, n_images)
    how = "reused" if reused else f"generated in {time.perf_counter() - start:.1f} s"
    s = summary
    print(f"data:     {gt_path.parent} ({how})")
    print(
        f"          {s['images']} images, {s['categories']} classes, {s['gt']} GT "
        f"({s['gt_per_image']}/image; small {s['small']:.1%}, medium {s['medium']:.1%}, "
        f"large {s['large']:.1%}, crowd {s['crowd']:.1%})"
    )
    print(
        f"          {s['detections']} detections ({args.dets_per_image}/image, "
        f"{s['distinct_scores']} distinct scores); gt.json {gt_path.stat().st_size / 1e6:.1f} MB, "
        f"results.json {dt_path.stat().st_size / 1e6:.1f} MB"
    )
    print()

    planned = {t: repeat_slow if t in SLOW_TOOLS else args.repeat for t in tools}
    records: dict[str, list[dict]] = {t: [] for t in tools}
    for tool in tools:
        if importlib.util.find_spec(MODULES[tool]) is None and tool != "deteval":
            records[tool].append({"tool": tool, "error": "not installed"})
    # Round robin, so that a slow drift of the machine does not favour one tool.
    for run in range(max(planned.values(), default=0)):
        for tool in tools:
            done = records[tool]
            if run >= planned[tool] or any("error" in r for r in done):
                continue
            record = run_child(tool, gt_path, dt_path, args.timeout)
            done.append(record)
            if "error" in record:
                print(f"  {tool:<18}run {run + 1}/{planned[tool]}  failed: {record['error']}")
            else:
                print(
                    f"  {tool:<18}run {run + 1}/{planned[tool]}  {record['e2e_s']:8.3f} s"
                    f"  {record['peak_mb']:7.0f} MB"
                )
            sys.stdout.flush()

    print_report(tools, records, args.baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
