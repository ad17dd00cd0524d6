"""Seeded random COCO datasets that hit pycocotools' quirks, and a pycocotools runner.

``make_dataset(seed, ...)`` returns ``(gt_dict, results)``: a COCO ground-truth dict and a
bbox results list. Every dataset is a pure function of its arguments. The generator mixes, on
purpose (see docs/protocols/coco.md):

* tied scores within and across images (scores rounded to one or two decimals, or drawn
  from a tiny pool), and results listed in shuffled order, so tie-breaking matters;
* crowd regions (``iscrowd=1``) covering several detections, and GT carrying an ``ignore``
  key that pycocotools overwrites with ``iscrowd``;
* GT ``area`` fields exactly on 32**2 and 96**2 and areas that differ from ``w*h``;
  detections whose ``w*h`` is exactly 32**2 or 96**2;
* detections with IoU exactly 0.5, 0.75 and 0.9 with a GT, exact and near-exact duplicates;
* zero-size boxes, boxes partly outside the image, non-representable decimals;
* images without GT, images without detections, categories without GT, categories without
  detections, results whose category is not in the GT (pycocotools drops them);
* unsorted image and category ids (e.g. 7, 3, 1000) and GT annotation ids not in file order;
* optionally more than 100 detections in some (image, category) groups.

``run_pycocotools(gt_dict, results, **params)`` runs ``COCOeval`` (iouType ``bbox`` unless
``iou_type`` says otherwise) on deep copies of its inputs with stdout silenced, and returns
the stats, the accumulated arrays and the lines printed by ``summarize()``. Its keyword names
are those of ``deteval.evaluate_coco``, so the same ``params`` dict can be passed to both.

What the parity tests share (bbox with this generator, segm and keypoints with ``maskgen``):
``variant_cases(VARIANTS)`` and ``build_case(make, seed, kwargs, params)`` turn a table of
named variants into seeded pytest cases; ``assert_parity(result, reference)`` compares
stats, precision, recall and scores with ``np.array_equal`` and, unless ``summary=False``,
the summary text line by line; ``assert_file_inputs_parity`` and
``assert_read_functions_parity`` evaluate a dataset given as JSON files or as deteval's
read functions' output; ``Coco100`` holds deteval's evaluation of the shared
``coco_val2014_100`` sample and checks it against the stored pycocotools output.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import deteval

__all__ = [
    "Coco100",
    "PycocoResult",
    "assert_file_inputs_parity",
    "assert_parity",
    "assert_read_functions_parity",
    "build_case",
    "make_dataset",
    "run_pycocotools",
    "variant_cases",
]

# Scores drawn from this pool tie a lot, within and across images.
_SCORE_POOL = (0.9, 0.8, 0.75, 0.5, 0.3, 0.1)
# Sizes (side lengths) chosen to straddle the small/medium/large limits 32 and 96.
_SIDES = (0.5, 3.0, 8.0, 16.0, 31.5, 32.0, 32.5, 50.0, 95.0, 96.0, 97.0, 150.0, 300.0)


def _coordinate(rng: np.random.Generator, low: float, high: float) -> float:
    """A coordinate that is an integer, a two-decimal number or a full-precision float."""
    value = float(rng.uniform(low, high))
    kind = rng.integers(3)
    if kind == 0:
        return float(round(value))
    if kind == 1:
        return round(value, 2)  # 0.1, 12.3, ...: not representable in binary
    return value


def _side(rng: np.random.Generator) -> float:
    if rng.random() < 0.3:
        return float(rng.choice(_SIDES))
    return _coordinate(rng, 1.0, 2.0) * float(np.exp(rng.uniform(0.0, np.log(150.0))))


def _score(rng: np.random.Generator, mode: int) -> float:
    if mode == 0 or (mode == 3 and rng.random() < 0.5):
        return float(rng.choice(_SCORE_POOL))
    if mode == 1:
        return round(float(rng.random()), 1)
    if mode == 2:
        return round(float(rng.random()), 2)
    return float(rng.random())


def _box_rle(box: list[float], height: int, width: int) -> dict:
    """Uncompressed RLE (column-major) of the pixels covered by ``box``, clipped to the image."""
    x0 = int(np.clip(np.floor(box[0]), 0, width))
    x1 = int(np.clip(np.ceil(box[0] + box[2]), x0, width))
    y0 = int(np.clip(np.floor(box[1]), 0, height))
    y1 = int(np.clip(np.ceil(box[1] + box[3]), y0, height))
    mask = np.zeros((height, width), dtype=np.uint8)
    mask[y0:y1, x0:x1] = 1
    flat = mask.flatten(order="F")
    changes = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.concatenate([[0], changes, [flat.size]])
    counts = np.diff(bounds).tolist()
    if flat.size and flat[0] == 1:
        counts = [0, *counts]  # an RLE starts with a (possibly empty) background run
    return {"size": [height, width], "counts": counts}


def _polygon(box: list[float]) -> list[list[float]]:
    x, y, w, h = box
    return [[x, y, x, y + h, x + w, y + h, x + w, y]]


def _gt_box(rng: np.random.Generator, width: int, height: int) -> tuple[list[float], float]:
    """A GT box and its ``area`` field (which often differs from ``w*h``)."""
    kind = rng.integers(12)
    if kind == 0:  # zero width or zero height
        w, h = (0.0, _side(rng)) if rng.random() < 0.5 else (_side(rng), 0.0)
        box = [_coordinate(rng, 0, width), _coordinate(rng, 0, height), w, h]
        return box, 0.0
    if kind == 1:  # area exactly on a size limit, box of the same area
        side = float(rng.choice([32.0, 96.0]))
        box = [float(rng.integers(0, width)), float(rng.integers(0, height)), side, side]
        return box, side * side
    if kind == 2:  # area field exactly on a limit, box of a different shape
        area = float(rng.choice([32.0**2, 96.0**2]))
        w = _side(rng) + 1.0
        box = [_coordinate(rng, 0, width), _coordinate(rng, 0, height), w, _side(rng)]
        return box, area
    if kind == 3:  # partly outside the image
        w, h = _side(rng) + 5.0, _side(rng) + 5.0
        box = [_coordinate(rng, -w / 2, 0), _coordinate(rng, height - h / 2, height), w, h]
        return box, w * h * float(rng.uniform(0.4, 1.0))
    w, h = _side(rng) + 0.5, _side(rng) + 0.5
    box = [_coordinate(rng, -2, width), _coordinate(rng, -2, height), w, h]
    if kind < 8:  # polygon-like area, smaller than the box
        area = round(w * h * float(rng.uniform(0.3, 1.0)), int(rng.integers(0, 4)))
    elif kind < 10:
        area = w * h
    else:  # around the limits
        area = float(rng.choice([1023.5, 1024.0, 1024.5, 9215.9, 9216.0, 9216.1]))
    return box, float(area)


def _exact_pair(rng: np.random.Generator) -> tuple[list[float], list[list[float]]]:
    """An integer GT box and detections with IoU exactly 0.5, 0.75, 0.9 and 1 with it."""
    x, y = float(rng.integers(-5, 200)), float(rng.integers(-5, 200))
    w, h = float(rng.integers(1, 20)) * 4.0, 10.0 * float(rng.integers(1, 12))
    dets = [
        [x, y, w, h * 0.5],  # 0.5
        [x, y, w * 2.0, h],  # 0.5 (det larger than GT)
        [x, y, w, h * 0.75],  # 0.75
        [x, y, w, h * 0.9],  # 0.9 > 0.8999999999999999 (the 9th linspace threshold)
        [x, y + h * 0.1, w, h * 0.9],  # 0.9 again, shifted
        [x, y, w, h],  # 1.0
        [x + w * 0.5, y, w, h],  # 1/3
    ]
    return [x, y, w, h], dets


def _jitter(rng: np.random.Generator, box: list[float], scale: float) -> list[float]:
    x, y, w, h = box
    dx, dy = rng.normal(0.0, scale, 2) * max(w, 1.0), rng.normal(0.0, scale, 2) * max(h, 1.0)
    new = [x + dx[0], y + dy[0], max(w + dx[1], 0.0), max(h + dy[1], 0.0)]
    decimals = int(rng.integers(0, 4))
    return [round(float(v), decimals) if decimals < 3 else float(v) for v in new]


def _inside(rng: np.random.Generator, region: list[float]) -> list[float]:
    """A box inside ``region`` (or sticking out of it a little)."""
    x, y, w, h = region
    bw, bh = w * float(rng.uniform(0.05, 0.6)), h * float(rng.uniform(0.05, 0.6))
    bx = x + float(rng.uniform(-0.1, 1.0)) * (w - bw)
    by = y + float(rng.uniform(-0.1, 1.0)) * (h - bh)
    return [round(bx, 2), round(by, 2), round(bw, 2), round(bh, 2)]


def _random_box(rng: np.random.Generator, width: int, height: int) -> list[float]:
    kind = rng.integers(10)
    if kind == 0:
        return [_coordinate(rng, 0, width), _coordinate(rng, 0, height), 0.0, _side(rng)]
    if kind == 1:
        return [_coordinate(rng, 0, width), _coordinate(rng, 0, height), _side(rng), 0.0]
    if kind == 2:  # w*h exactly on a size limit
        w, h = [(32.0, 32.0), (16.0, 64.0), (96.0, 96.0), (48.0, 192.0)][rng.integers(4)]
        return [_coordinate(rng, 0, width), _coordinate(rng, 0, height), w, h]
    if kind == 3:  # partly outside the image
        return [_coordinate(rng, -40, 0), _coordinate(rng, -40, height), _side(rng), _side(rng)]
    return [_coordinate(rng, -5, width), _coordinate(rng, -5, height), _side(rng), _side(rng)]


def _distinct_ids(rng: np.random.Generator, n: int, pool: int) -> list[int]:
    """``n`` distinct positive ids in a random (unsorted) order, sometimes far apart."""
    base = rng.choice(np.arange(1, pool + 1), size=n, replace=False)
    spread = rng.choice([1, 1, 7, 1000])
    ids = [int(v) * int(spread) for v in base]
    rng.shuffle(ids)
    return ids


def make_dataset(
    seed: int,
    *,
    n_images: int | None = None,
    n_categories: int | None = None,
    max_gt: int = 4,
    max_dt: int = 8,
    p_crowd: float = 0.12,
    p_ignore_key: float = 0.1,
    p_many: float = 0.0,
    n_many: tuple[int, int] = (101, 160),
    p_unknown_category: float = 0.05,
    segmentation: bool = True,
) -> tuple[dict, list[dict]]:
    """Build a random COCO GT dict and a bbox results list.

    Parameters
    ----------
    seed : the seed of ``np.random.default_rng``; the dataset depends on nothing else.
    n_images, n_categories : sizes; drawn from 1..5 and 1..4 when None.
    max_gt, max_dt : the largest number of GT / detections per (image, category) group
        (plus exact-IoU and crowd extras).
    p_crowd : probability that a group gets a crowd region with detections inside it.
    p_ignore_key : probability that a GT carries an ``ignore`` key (1 with iscrowd 0, or 0
        with iscrowd 1); pycocotools overwrites it.
    p_many : probability that a group gets ``n_many`` detections (more than 100).
    p_unknown_category : probability of each extra result whose category is not in the GT.
    segmentation : give every GT a segmentation (box polygon, or an uncompressed RLE for
        crowds). bbox evaluation never reads it.

    The result list never is empty (pycocotools' loadRes needs one element): when the draw
    leaves it empty, one result with an unknown category is added (it is dropped at
    evaluation, so the evaluation is that of no detections).
    """
    rng = np.random.default_rng(seed)
    n_images = int(rng.integers(1, 6)) if n_images is None else n_images
    n_categories = int(rng.integers(1, 5)) if n_categories is None else n_categories
    score_mode = int(rng.integers(5))

    image_ids = _distinct_ids(rng, n_images, max(3 * n_images, 10))
    category_ids = _distinct_ids(rng, n_categories, max(3 * n_categories, 10))
    unknown_category = max(category_ids) + int(rng.integers(1, 5))
    images = []
    for image_id in image_ids:
        width, height = int(rng.integers(40, 641)), int(rng.integers(40, 481))
        images.append(
            {"id": image_id, "width": width, "height": height, "file_name": f"{image_id:012d}.jpg"}
        )
    categories = [{"id": c, "name": f"class{c}", "supercategory": "thing"} for c in category_ids]

    # Roles: images without GT / without detections, categories without GT / detections.
    no_gt_images = {i for i in image_ids if rng.random() < 0.2}
    no_dt_images = {i for i in image_ids if rng.random() < 0.15}
    no_gt_categories = {c for c in category_ids if n_categories > 1 and rng.random() < 0.15}
    no_dt_categories = {c for c in category_ids if n_categories > 1 and rng.random() < 0.1}

    annotations: list[dict] = []
    results: list[dict] = []

    def add_gt(image: dict, category: int, box: list[float], area: float, crowd: int) -> None:
        ann: dict[str, Any] = {
            "id": 0,  # assigned below
            "image_id": image["id"],
            "category_id": category,
            "bbox": box,
            "area": area,
            "iscrowd": crowd,
        }
        if segmentation:
            if crowd:
                ann["segmentation"] = _box_rle(box, image["height"], image["width"])
            else:
                ann["segmentation"] = _polygon(box)
        roll = rng.random()
        if roll < p_ignore_key:
            ann["ignore"] = 0 if crowd else 1
        elif roll < 2 * p_ignore_key:
            ann["ignore"] = 0
        annotations.append(ann)

    def add_dt(image: dict, category: int, box: list[float]) -> None:
        results.append(
            {
                "image_id": image["id"],
                "category_id": category,
                "bbox": [float(v) for v in box],
                "score": _score(rng, score_mode),
            }
        )

    for image in images:
        width, height = image["width"], image["height"]
        image_gt: list[list[float]] = []
        for category in category_ids:
            with_gt = image["id"] not in no_gt_images and category not in no_gt_categories
            with_dt = image["id"] not in no_dt_images and category not in no_dt_categories
            group_gt: list[list[float]] = []
            if with_gt:
                for _ in range(int(rng.integers(0, max_gt + 1))):
                    box, area = _gt_box(rng, width, height)
                    add_gt(image, category, box, area, 0)
                    group_gt.append(box)
                if group_gt and rng.random() < 0.2:
                    # A duplicate annotation: detections on it tie in IoU between the two GT
                    # (the later GT in sorted order wins the tie).
                    box = list(group_gt[int(rng.integers(len(group_gt)))])
                    add_gt(image, category, box, box[2] * box[3], 0)
                    group_gt.append(box)
                if rng.random() < 0.3:
                    box, exact_dets = _exact_pair(rng)
                    add_gt(image, category, box, box[2] * box[3], 0)
                    group_gt.append(box)
                    if with_dt:
                        picks = rng.choice(len(exact_dets), size=int(rng.integers(1, 4)))
                        for k in picks:
                            add_dt(image, category, exact_dets[int(k)])
                if rng.random() < p_crowd:
                    region = [
                        _coordinate(rng, -10, width / 2),
                        _coordinate(rng, -10, height / 2),
                        float(rng.uniform(40, 300)),
                        float(rng.uniform(40, 300)),
                    ]
                    add_gt(image, category, region, region[2] * region[3] * 0.8, 1)
                    if with_dt:
                        for _ in range(int(rng.integers(1, 8))):
                            add_dt(image, category, _inside(rng, region))
            image_gt.extend(group_gt)
            if not with_dt:
                continue
            for _ in range(int(rng.integers(0, max_dt + 1))):
                roll = rng.random()
                if group_gt and roll < 0.55:
                    target = group_gt[int(rng.integers(len(group_gt)))]
                    if rng.random() < 0.15:
                        add_dt(image, category, list(target))  # duplicate of the GT
                    else:
                        scale = float(rng.choice([0.02, 0.06, 0.12]))
                        add_dt(image, category, _jitter(rng, target, scale))
                elif image_gt and roll < 0.65:  # a GT of another category: confusion
                    other = image_gt[int(rng.integers(len(image_gt)))]
                    add_dt(image, category, _jitter(rng, other, 0.1))
                else:
                    add_dt(image, category, _random_box(rng, width, height))
            if rng.random() < p_many:
                for _ in range(int(rng.integers(n_many[0], n_many[1] + 1))):
                    if group_gt and rng.random() < 0.5:
                        target = group_gt[int(rng.integers(len(group_gt)))]
                        add_dt(image, category, _jitter(rng, target, 0.2))
                    else:
                        add_dt(image, category, _random_box(rng, width, height))
        if rng.random() < p_unknown_category * 4:
            for _ in range(int(rng.integers(1, 3))):
                add_dt(image, unknown_category, _random_box(rng, width, height))

    # Categories without detections must stay without: no confusion results were added to
    # them above. Results come in shuffled order (ties are broken by this order), or grouped.
    if rng.random() < 0.7:
        order = rng.permutation(len(results))
        results = [results[int(i)] for i in order]
    if not results:
        image = images[int(rng.integers(len(images)))]
        add_dt(image, unknown_category, [1.0, 1.0, 5.0, 5.0])

    # Annotation ids: distinct, positive, not in file order.
    ann_ids = _distinct_ids(rng, len(annotations), max(2 * len(annotations), 10))
    for ann, ann_id in zip(annotations, ann_ids, strict=True):
        ann["id"] = ann_id
    if rng.random() < 0.5:  # GT file order not grouped by image either
        order = rng.permutation(len(annotations))
        annotations = [annotations[int(i)] for i in order]

    gt = {
        "info": {"description": f"cocogen seed {seed}"},
        "images": images,
        "annotations": annotations,
        "categories": categories,
    }
    return gt, results


@dataclass(frozen=True)
class PycocoResult:
    """What pycocotools computed: ``stats`` (12,), the accumulated arrays and the summary."""

    stats: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray
    summary: list[str]
    eval_imgs: list  # COCOeval.evalImgs, for matching-level checks
    params: Any


def run_pycocotools(
    gt_dict: dict,
    results: list[dict],
    *,
    iou_type: str = "bbox",
    keypoint_sigmas: Any = None,
    iou_thresholds: Any = None,
    recall_thresholds: Any = None,
    max_detections: Any = None,
    area_ranges: Any = None,
    area_labels: Any = None,
    use_categories: bool | None = None,
    image_ids: Any = None,
    category_ids: Any = None,
) -> PycocoResult:
    """Run pycocotools' COCOeval on deep copies of the inputs, with stdout silenced.

    The keyword names and meanings are those of ``deteval.evaluate_coco``. ``keypoint_sigmas``
    (an array of K sigmas, used by iouType "keypoints") becomes ``params.kpt_oks_sigmas``,
    which pycocotools applies to every category.
    """
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt_dict)
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(copy.deepcopy(results))
        evaluator = COCOeval(coco_gt, coco_dt, iouType=iou_type)
        p = evaluator.params
        if keypoint_sigmas is not None:
            # an ndarray: pycocotools computes (sigmas * 2) ** 2
            p.kpt_oks_sigmas = np.array(keypoint_sigmas, dtype=np.float64)
        if iou_thresholds is not None:
            p.iouThrs = np.asarray(iou_thresholds, dtype=np.float64)
        if recall_thresholds is not None:
            p.recThrs = np.asarray(recall_thresholds, dtype=np.float64)
        if max_detections is not None:
            p.maxDets = [int(m) for m in max_detections]
        if area_ranges is not None:
            p.areaRng = [[float(lo), float(hi)] for lo, hi in area_ranges]
        if area_labels is not None:
            p.areaRngLbl = list(area_labels)
        if use_categories is not None:
            p.useCats = int(bool(use_categories))
        if image_ids is not None:
            p.imgIds = list(image_ids)
        if category_ids is not None:
            p.catIds = list(category_ids)
        evaluator.evaluate()
        evaluator.accumulate()
    summary = io.StringIO()
    with contextlib.redirect_stdout(summary):
        evaluator.summarize()
    return PycocoResult(
        stats=np.asarray(evaluator.stats, dtype=np.float64),
        precision=evaluator.eval["precision"],
        recall=evaluator.eval["recall"],
        scores=evaluator.eval["scores"],
        summary=summary.getvalue().splitlines(),
        eval_imgs=evaluator.evalImgs,
        params=evaluator.params,
    )


# ---------------------------------------------------------------------------------------------
# Random cases and the checks shared by the parity tests
# ---------------------------------------------------------------------------------------------


def variant_cases(variants: dict[str, tuple[int, int, dict, Any]]) -> list:
    """``pytest.param(seed, kwargs, params, id="<name>-seed<seed>")`` for every seed of every
    variant ``name -> (number of seeds, first seed, generator kwargs, params)``, in order.

    ``params`` is a dict of evaluation settings or a function of ``(gt, rng)`` giving them
    (see ``build_case``).
    """
    return [
        pytest.param(seed, kwargs, params, id=f"{name}-seed{seed}")
        for name, (count, first, kwargs, params) in variants.items()
        for seed in range(first, first + count)
    ]


def build_case(
    make: Callable[..., tuple[dict, list[dict]]], seed: int, kwargs: dict, params: Any
) -> tuple[dict, list[dict], Any]:
    """The dataset ``make(seed, **kwargs)`` and its params: ``params`` itself, or, when it is
    callable, ``params(gt, np.random.default_rng(seed + 10**6))``."""
    gt, results = make(seed, **kwargs)
    if callable(params):
        params = params(gt, np.random.default_rng(seed + 10**6))
    return gt, results, params


def _first_difference(name: str, mine: np.ndarray, theirs: np.ndarray) -> str:
    if mine.shape != theirs.shape:
        return f"{name}: shape {mine.shape} != pycocotools {theirs.shape}"
    where = np.argwhere(~((mine == theirs) | (np.isnan(mine) & np.isnan(theirs))))
    index = tuple(int(i) for i in where[0])
    return (
        f"{name}: {len(where)} of {mine.size} entries differ; first at {index}: "
        f"deteval {mine[index]!r} != pycocotools {theirs[index]!r}"
    )


def assert_parity(result: Any, reference: PycocoResult, *, summary: bool = True) -> None:
    """stats, precision, recall and scores exactly equal to pycocotools', and the summary.

    With ``summary=False`` the summary text is not compared. One message lists every
    difference (for an array: how many entries differ and the first of them).
    """
    problems = []
    for name in ("stats", "precision", "recall", "scores"):
        mine = np.asarray(getattr(result, name), dtype=np.float64)
        theirs = np.asarray(getattr(reference, name), dtype=np.float64)
        if not np.array_equal(mine, theirs):
            problems.append(_first_difference(name, mine, theirs))
    if summary and result.summary().splitlines() != reference.summary:
        their_summary = "\n".join(reference.summary)
        problems.append(f"summary differs:\n{result.summary()}\npycocotools:\n{their_summary}")
    assert not problems, "\n".join(problems)


def assert_file_inputs_parity(
    gt_dict: dict,
    results: list[dict],
    reference: PycocoResult,
    *,
    evaluate: Callable[..., Any],
    directory: Path,
    summary: bool = True,
) -> None:
    """Write ``gt.json`` and ``results.json`` into ``directory``; ``evaluate`` given their
    paths, as ``Path`` and as ``str``, equals ``reference`` (see ``assert_parity``)."""
    gt_path, results_path = directory / "gt.json", directory / "results.json"
    gt_path.write_text(json.dumps(gt_dict))
    results_path.write_text(json.dumps(results))
    assert_parity(evaluate(gt_path, results_path), reference, summary=summary)
    assert_parity(evaluate(str(gt_path), str(results_path)), reference, summary=summary)


def assert_read_functions_parity(
    gt_dict: dict,
    results: list[dict],
    reference: PycocoResult,
    *,
    evaluate: Callable[..., Any],
    iou_type: str,
) -> None:
    """``deteval.read_coco_gt`` / ``read_coco_results`` of the dicts (one detection per
    result), given to ``evaluate``, equal ``reference`` (see ``assert_parity``)."""
    dataset = deteval.read_coco_gt(gt_dict, iou_type=iou_type)
    detections = deteval.read_coco_results(results, dataset, iou_type=iou_type)
    assert len(detections) == len(results)
    assert_parity(evaluate(dataset, detections), reference)


# ---------------------------------------------------------------------------------------------
# coco_val2014_100: the shared sample and its stored pycocotools 2.0.11 output
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Coco100:
    """deteval's evaluation of the shared sample's GT and one of its results files, and what
    pycocotools 2.0.11 gave for them (``expected``: ``stats``, ``summary``,
    ``per_category_ap``, as stored in ``expected_pycocotools_2.0.11.json``)."""

    result: Any
    expected: dict
    gt_path: Path
    results_path: Path

    @classmethod
    def evaluate(cls, evaluate: Callable[..., Any], folder: Path, results_name: str,
                 key: str) -> Coco100:
        """``evaluate(gt path, results path)`` of the sample in ``folder`` (the
        ``coco100_dir`` fixture, which skips when it is absent), and the stored output under
        ``key`` ("bbox", "segm")."""
        expected = json.loads((folder / "expected_pycocotools_2.0.11.json").read_text())
        gt_path, results_path = folder / "instances_val2014_100.json", folder / results_name
        return cls(evaluate(gt_path, results_path), expected[key], gt_path, results_path)

    def read(self) -> tuple[dict, list[dict]]:
        """The GT dict and the results list, parsed afresh from the files."""
        return json.loads(self.gt_path.read_text()), json.loads(self.results_path.read_text())

    def assert_stats(self) -> None:
        """The stats equal the stored ones, to 1e-12."""
        np.testing.assert_allclose(self.result.stats, self.expected["stats"], rtol=0, atol=1e-12)

    def assert_summary(self) -> None:
        assert self.result.summary().splitlines() == self.expected["summary"]

    def assert_per_category_ap(self) -> None:
        """Each category's AP (IoU .50:.95, area all, maxDets 100) equals the stored one."""
        expected = self.expected["per_category_ap"]
        category_ids = sorted(int(c) for c in expected)
        precision = self.result.precision
        assert precision.shape[2] == len(category_ids)
        for k, category_id in enumerate(category_ids):
            values = precision[:, :, k, 0, 2]
            ap = float(np.mean(values[values > -1])) if np.any(values > -1) else -1.0
            assert ap == expected[str(category_id)], category_id


def oks_pairs(gt_dict: dict, results: list[dict]) -> dict:
    """Per (image, category): deteval's OKS of every (result, object) pair and pycocotools'
    ``COCOeval.ious`` for the same pairs (results by descending score, at most 20; objects
    in file order), as two matrices. COCO's person sigmas."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    from deteval.io.coco import read_coco_gt, read_coco_results
    from deteval.keypoints import COCO_PERSON_SIGMAS, pair_oks

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt_dict)
        coco_gt.createIndex()
        evaluator = COCOeval(coco_gt, coco_gt.loadRes(copy.deepcopy(results)), "keypoints")
        evaluator.evaluate()
    dataset = read_coco_gt(gt_dict, iou_type="keypoints")
    detections = read_coco_results(results, dataset, iou_type="keypoints")
    gt_row = {int(i): r for r, i in enumerate(dataset.gt.ids)}
    pairs = {}
    for key, expected in evaluator.ious.items():
        if len(expected) == 0:
            continue
        dts = evaluator._dts[key]
        dts = [dts[i] for i in np.argsort([-d["score"] for d in dts], kind="mergesort")][:20]
        gts = evaluator._gts[key]
        d_rows = np.repeat([d["id"] - 1 for d in dts], len(gts))
        g_rows = np.tile([gt_row[g["id"]] for g in gts], len(dts))
        mine = pair_oks(detections.keypoints, dataset.gt.keypoints, dataset.gt.as_xywh(),
                        dataset.gt.area, d_rows, g_rows, sigmas=COCO_PERSON_SIGMAS)
        pairs[key] = (mine.reshape(len(dts), len(gts)), np.asarray(expected))
    return pairs
