"""Seeded random COCO segm datasets, and mask helpers (keypoint datasets: keypointgen.py).

``make_segm_dataset(seed, ...)`` returns ``(gt_dict, results)`` for instance-segmentation
evaluation, a pure function of its arguments (``np.random.default_rng(seed)``). It mixes, on
purpose (see docs/protocols/coco.md §2, §4, §5.3, §9):

segm
  * images of assorted sizes, from 7x5 (w x h) and 5x7 to 640x480;
  * GT as polygons (one or several parts, convex and concave, integer, fractional and
    half-integer vertices, vertices outside the image, vertices exactly on the borders,
    triangles smaller than a pixel), as uncompressed RLE (``counts`` a list of runs) and as
    compressed RLE (``counts`` a string); crowd GT as RLE;
  * a GT ``area`` field that is mostly the pixel count, sometimes the polygon's shoelace
    area, the limits 32**2 and 96**2 (and values next to them), 0 or another value;
  * results as compressed RLE made by perturbing GT masks (copied, shifted, dilated, eroded,
    cut, grown), random blobs, empty masks, full-image masks, masks of exactly 1024 and
    9216 pixels, pieces of crowd regions;
  * results with no ``bbox`` at all, with a ``bbox`` on every result (loadRes then gives
    each the area w*h of its box, sometimes a box unlike its mask), or with a ``bbox`` on
    some results but not the first one (loadRes ignores them);
  * tied scores, results in shuffled order, more than 100 results in some groups, images
    without GT, categories without results, results of a category not in the GT.

The reference and the checks are in ``cocogen``: ``run_pycocotools`` with
``iou_type="segm"``, and ``assert_parity``.
``encode`` / ``decode`` / ``runs`` convert masks to compressed RLE, back, and to
uncompressed RLE (run lengths).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from cocogen import _distinct_ids, _score
from pycocotools import mask as mask_utils

__all__ = [
    "count_iou_calls",
    "decode",
    "encode",
    "make_segm_dataset",
    "mask_result",
    "one_mask_gt",
    "runs",
]


# ---------------------------------------------------------------------------------------------
# Shared helpers (scores and ids are drawn by cocogen's _score and _distinct_ids)
# ---------------------------------------------------------------------------------------------


def _finish(
    rng: np.random.Generator,
    annotations: list[dict],
    results: list[dict],
    bbox_mode: str,
    make_box,
    *,
    images: list[dict],
    categories: list[dict],
    description: str,
) -> tuple[dict, list[dict]]:
    """Shuffle, give the annotations distinct unsorted ids, apply the results' bbox mode.

    Returns the GT dict (``info`` with ``description``, ``images``, ``annotations``,
    ``categories``) and the results list.
    """
    if rng.random() < 0.7:
        results = [results[int(i)] for i in rng.permutation(len(results))]
    for ann, ann_id in zip(
        annotations, _distinct_ids(rng, len(annotations), max(2 * len(annotations), 10))
    ):
        ann["id"] = ann_id
    if rng.random() < 0.5:
        annotations = [annotations[int(i)] for i in rng.permutation(len(annotations))]
    # "all": loadRes' bbox branch (area w*h from each box); "later": the first result has no
    # box, so loadRes takes the segm / keypoints branch and the later boxes change nothing.
    if bbox_mode == "all" or bbox_mode == "later":
        for index, result in enumerate(results):
            if bbox_mode == "all" or (index > 0 and rng.random() < 0.5):
                result["bbox"] = make_box(result)
    gt = {
        "info": {"description": description},
        "images": images,
        "annotations": annotations,
        "categories": categories,
    }
    return gt, results


# ---------------------------------------------------------------------------------------------
# Masks
# ---------------------------------------------------------------------------------------------


def encode_number(x: int, groups: int | None = None) -> bytes:
    """One number in pycocotools' string form, written independently of it: 5-bit groups,
    least significant first, each + 48; 0x20 marks "more groups follow" and bit 0x10 of the
    last group is the sign. With ``groups``, padded with redundant sign-extension groups to
    that many characters (pycocotools reads them alike)."""
    out = []
    while True:
        c = x & 0x1F
        x >>= 5
        more = x != -1 if c & 0x10 else x != 0
        out.append(c)
        if not more:
            break
    while groups is not None and len(out) < groups:
        out.append(0x1F if out[-1] & 0x10 else 0)
    return bytes(48 + (c | 0x20 if k < len(out) - 1 else c) for k, c in enumerate(out))


def compress(runs: list[int], *, rng: np.random.Generator | None = None,
             max_groups: int = 6) -> bytes:
    """pycocotools' string form of run lengths (rleToString), written independently.

    From the fourth run on, the difference to the run two before is stored. With ``rng``,
    some numbers get redundant sign-extension groups (up to ``max_groups`` characters).
    """
    out = []
    for i, run in enumerate(runs):
        x = run - runs[i - 2] if i > 2 else run
        groups = None
        if rng is not None:
            groups = len(encode_number(x))
            while groups < max_groups and rng.random() < 0.3:
                groups += 1
        out.append(encode_number(x, groups))
    return b"".join(out)


def read_as_pycocotools(string: bytes) -> list[int]:
    """The runs pycocotools 2.0.11's C reader (rleFrString) takes from a string, before its
    final cast to uint32; C's 32-bit int shifts emulated as x86 executes them."""
    runs: list[int] = []
    p = 0
    while p < len(string):
        x, k, more = 0, 0, True
        while more:
            c = string[p] - 48
            part = ((c & 0x1F) << (5 * k)) & 0xFFFFFFFF        # an int: 32 bits, signed
            x |= part - (1 << 32) if part >= 1 << 31 else part
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << ((5 * k) & 31)                     # x86 takes the count mod 32
        if len(runs) > 2:
            x += runs[-2] & 0xFFFFFFFF
        runs.append(x)
    return runs


def encode(mask: np.ndarray, *, as_bytes: bool = False) -> dict:
    """Compressed RLE of a 2-D mask, ``counts`` as ``str`` (as in JSON) or ``bytes``."""
    rle = mask_utils.encode(np.array(mask, dtype=np.uint8, order="F"))
    counts = rle["counts"] if as_bytes else rle["counts"].decode("ascii")
    return {"size": [int(rle["size"][0]), int(rle["size"][1])], "counts": counts}


def runs(mask: np.ndarray) -> dict:
    """Uncompressed RLE (column-major runs, starting with a background run) of a mask."""
    height, width = mask.shape
    flat = mask.astype(bool).flatten(order="F")
    changes = np.flatnonzero(np.diff(flat.astype(np.int8))) + 1
    counts = np.diff(np.concatenate([[0], changes, [flat.size]])).tolist()
    if flat.size and flat[0]:
        counts = [0, *counts]
    return {"size": [height, width], "counts": [int(c) for c in counts]}


def decode(rle: dict) -> np.ndarray:
    """The (h, w) bool mask of a compressed RLE (``counts`` str or bytes)."""
    with warnings.catch_warnings():
        # pycocotools 2.0.11's decode trips numpy 2's __array__(copy=...) deprecation
        warnings.simplefilter("ignore", DeprecationWarning)
        return mask_utils.decode(rle).astype(bool)


def _polygon_mask(parts: list[list[float]], height: int, width: int) -> np.ndarray:
    rles = mask_utils.frPyObjects(parts, height, width)
    return decode(mask_utils.merge(rles))


def _shoelace(parts: list[list[float]]) -> float:
    total = 0.0
    for part in parts:
        x, y = np.asarray(part[0::2]), np.asarray(part[1::2])
        total += 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))
    return total


def _mask_box(mask: np.ndarray) -> list[float]:
    """The tight box [x, y, w, h] of a mask ([0, 0, 0, 0] when empty), as ``toBbox``."""
    rows, columns = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if len(rows) == 0:
        return [0.0, 0.0, 0.0, 0.0]
    return [float(columns[0]), float(rows[0]), float(columns[-1] - columns[0] + 1),
            float(rows[-1] - rows[0] + 1)]


def _round_style(rng: np.random.Generator, values: np.ndarray) -> list[float]:
    """Integer, half-integer, one- or two-decimal, or full-precision coordinates."""
    kind = int(rng.integers(5))
    if kind == 0:
        values = np.round(values)
    elif kind == 1:
        values = np.round(values * 2.0) / 2.0
    elif kind == 2:
        values = np.round(values, 1)
    elif kind == 3:
        values = np.round(values, 2)
    return [float(v) for v in values]


def _star(
    rng: np.random.Generator, cx: float, cy: float, radius: float, concave: bool
) -> np.ndarray:
    """Vertices (n, 2) of a random star-shaped polygon around (cx, cy)."""
    n = int(rng.integers(3, 13))
    angles = np.sort(rng.uniform(0.0, 2.0 * np.pi, n))
    radii = radius * rng.uniform(0.55, 1.0, n)
    if concave and n >= 4:
        radii[1::2] *= rng.uniform(0.2, 0.6, len(radii[1::2]))
    if rng.random() < 0.5:  # clockwise or counter-clockwise
        angles, radii = angles[::-1], radii[::-1]
    stretch = rng.uniform(0.4, 1.6)
    return np.stack([cx + radii * np.cos(angles) * stretch, cy + radii * np.sin(angles)], 1)


def _polygon_part(rng: np.random.Generator, height: int, width: int) -> list[float]:
    """One polygon (a flat x, y list of at least 3 points) of a random kind."""
    size = max(height, width)
    kind = int(rng.integers(10))
    if kind == 0:  # axis-aligned rectangle, sometimes exactly on the image borders
        x0, y0 = rng.uniform(-0.1 * width, width), rng.uniform(-0.1 * height, height)
        x1, y1 = x0 + rng.uniform(0.5, width), y0 + rng.uniform(0.5, height)
        if rng.random() < 0.5:
            x0, y0, x1, y1 = 0.0, 0.0, float(width), float(height * rng.uniform(0.3, 1.0))
        points = np.array([[x0, y0], [x0, y1], [x1, y1], [x1, y0]])
    elif kind == 1:  # a triangle, sometimes smaller than a pixel
        scale = rng.choice([0.4, 2.0, size / 3])
        corner = rng.uniform([0, 0], [width, height])
        points = corner + rng.uniform(-scale, scale, (3, 2))
    elif kind == 2:  # a star clipped to the image: vertices on the borders
        centre = rng.uniform([0, 0], [width, height])
        points = _star(rng, centre[0], centre[1], rng.uniform(1.0, size * 0.6), rng.random() < 0.5)
        points = np.clip(points, 0.0, [width, height])
    elif kind == 3:  # mostly (or entirely) outside the image
        centre = rng.uniform([-0.5 * width, -0.5 * height], [1.5 * width, 1.5 * height])
        points = _star(rng, centre[0], centre[1], rng.uniform(1.0, size * 0.5), False)
    else:  # a convex or concave blob inside or across the border
        centre = rng.uniform([-0.1 * width, -0.1 * height], [1.1 * width, 1.1 * height])
        radius = float(np.exp(rng.uniform(np.log(1.5), np.log(max(size * 0.45, 2.0)))))
        points = _star(rng, centre[0], centre[1], radius, kind >= 7)
    return _round_style(rng, points.ravel())


def _blob(rng: np.random.Generator, height: int, width: int, scale: float | None = None):
    """A random filled ellipse or rectangle (possibly cut by the image border)."""
    mask = np.zeros((height, width), dtype=bool)
    size = max(height, width)
    ry = rx = float(np.exp(rng.uniform(np.log(0.6), np.log(max(size * 0.4, 1.0)))))
    if scale is not None:
        ry = rx = scale
    ry *= rng.uniform(0.5, 1.5)
    rx *= rng.uniform(0.5, 1.5)
    cy, cx = rng.uniform(-0.1 * height, 1.1 * height), rng.uniform(-0.1 * width, 1.1 * width)
    y0, y1 = max(int(np.floor(cy - ry)), 0), min(int(np.ceil(cy + ry)) + 1, height)
    x0, x1 = max(int(np.floor(cx - rx)), 0), min(int(np.ceil(cx + rx)) + 1, width)
    if y0 < y1 and x0 < x1:
        if rng.random() < 0.7:
            yy, xx = np.ogrid[y0:y1, x0:x1]
            mask[y0:y1, x0:x1] = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0
        else:
            mask[y0:y1, x0:x1] = True
    return mask


def _dilate(mask: np.ndarray, steps: int) -> np.ndarray:
    for _ in range(steps):
        p = np.pad(mask, 1)
        mask = p[1:-1, 1:-1] | p[:-2, 1:-1] | p[2:, 1:-1] | p[1:-1, :-2] | p[1:-1, 2:]
    return mask


def _erode(mask: np.ndarray, steps: int) -> np.ndarray:
    return ~_dilate(~mask, steps)


def _shift(mask: np.ndarray, dy: int, dx: int) -> np.ndarray:
    height, width = mask.shape
    out = np.zeros_like(mask)
    if abs(dy) >= height or abs(dx) >= width:
        return out
    out[max(dy, 0) : height + min(dy, 0), max(dx, 0) : width + min(dx, 0)] = mask[
        max(-dy, 0) : height + min(-dy, 0), max(-dx, 0) : width + min(-dx, 0)
    ]
    return out


def _square(rng: np.random.Generator, height: int, width: int, side: int) -> np.ndarray | None:
    """A mask of exactly side*side pixels (32*32 = 1024 or 96*96 = 9216), if it fits."""
    if side > height or side > width:
        return None
    mask = np.zeros((height, width), dtype=bool)
    y, x = int(rng.integers(0, height - side + 1)), int(rng.integers(0, width - side + 1))
    mask[y : y + side, x : x + side] = True
    return mask


def _perturb(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """A detection mask made from a GT mask: copy, shift, dilate, erode, cut, grow, ..."""
    height, width = mask.shape
    kind = int(rng.integers(9))
    if kind == 0:
        return mask.copy()
    if kind == 1:
        step = int(rng.choice([1, 1, 2, 3, 6]))
        return _shift(mask, int(rng.integers(-step, step + 1)), int(rng.integers(-step, step + 1)))
    if kind == 2:
        return _dilate(mask, int(rng.integers(1, 4)))
    if kind == 3:
        return _erode(mask, int(rng.integers(1, 3)))
    if kind == 4:
        moved = _shift(mask, int(rng.integers(-2, 3)), int(rng.integers(-2, 3)))
        return _dilate(moved, 1) if rng.random() < 0.5 else _erode(moved, 1)
    if kind == 5:  # cut a half away
        ys, xs = np.nonzero(mask)
        out = mask.copy()
        if len(ys):
            if rng.random() < 0.5:
                out[:, int(np.median(xs)) :] = False
            else:
                out[int(np.median(ys)) :, :] = False
        return out
    if kind == 6:  # grow by a neighbouring blob
        return mask | _blob(rng, height, width, scale=max(1.0, np.sqrt(mask.sum()) / 3))
    if kind == 7:  # lose a blob
        return mask & ~_blob(rng, height, width, scale=max(1.0, np.sqrt(mask.sum()) / 3))
    return _dilate(mask, 1) & ~_erode(mask, 1)  # a ring along the border


def _gt_area(rng: np.random.Generator, pixels: int, parts: list | None) -> float:
    """The GT ``area`` field: pixel count mostly; shoelace, limits, 0 or other sometimes."""
    roll = rng.random()
    if roll < 0.55:
        return float(pixels)
    if roll < 0.72 and parts is not None:
        return _shoelace(parts)
    if roll < 0.84:
        return float(rng.choice([1023.5, 1024.0, 1024.5, 9215.5, 9216.0, 9216.5]))
    if roll < 0.87:
        return 0.0
    return round(float(pixels) * float(rng.uniform(0.5, 2.0)) + float(rng.uniform(0, 50)), 2)


def _image_size(rng: np.random.Generator) -> tuple[int, int]:
    """(height, width): tiny, 640x480, small, medium."""
    roll = rng.random()
    if roll < 0.1:
        return (5, 7) if rng.random() < 0.5 else (7, 5)
    if roll < 0.2:
        return (480, 640)
    if roll < 0.65:
        return int(rng.integers(8, 120)), int(rng.integers(8, 160))
    return int(rng.integers(80, 260)), int(rng.integers(80, 300))


def make_segm_dataset(
    seed: int,
    *,
    n_images: int | None = None,
    n_categories: int | None = None,
    max_gt: int = 3,
    max_dt: int = 5,
    p_crowd: float = 0.15,
    p_many: float = 0.04,
    n_many: tuple[int, int] = (101, 125),
    p_bytes: float = 0.0,
    bbox_mode: str | None = None,
    image_sizes: list[tuple[int, int]] | None = None,
) -> tuple[dict, list[dict]]:
    """Build a random COCO GT dict with segmentations and a compressed-RLE results list.

    Parameters
    ----------
    seed : the seed of ``np.random.default_rng``; the dataset depends on nothing else.
    n_images, n_categories : drawn from 3..8 and 1..3 when None.
    max_gt, max_dt : the largest number of GT / unrelated detections per (image, category)
        group (plus detections made from the GT and crowd pieces).
    p_crowd : probability that a group gets a crowd region (RLE) with detections inside.
    p_many : probability that a group gets ``n_many`` more results (more than 100).
    p_bytes : probability that a result's (and a compressed GT's) ``counts`` is ``bytes``
        rather than ``str`` (not JSON-serialisable then).
    bbox_mode : "none", "all" or "later" (see the module docstring); drawn when None.
    image_sizes : (height, width) of every image; drawn when None.

    The result list never is empty (pycocotools' loadRes needs one element): when the draw
    leaves it empty, one result with a category unknown to the GT is added (dropped at
    evaluation).
    """
    rng = np.random.default_rng(seed)
    if image_sizes is not None:
        n_images = len(image_sizes)
    n_images = int(rng.integers(3, 9)) if n_images is None else n_images
    n_categories = int(rng.integers(1, 4)) if n_categories is None else n_categories
    if bbox_mode is None:
        bbox_mode = str(rng.choice(["none", "none", "all", "all", "later"]))
    score_mode = int(rng.integers(5))

    image_ids = _distinct_ids(rng, n_images, max(3 * n_images, 10))
    category_ids = _distinct_ids(rng, n_categories, max(3 * n_categories, 10))
    unknown_category = max(category_ids) + int(rng.integers(1, 5))
    images = []
    for n, image_id in enumerate(image_ids):
        height, width = _image_size(rng) if image_sizes is None else image_sizes[n]
        images.append(
            {"id": image_id, "width": width, "height": height, "file_name": f"{image_id}.jpg"}
        )
    categories = [{"id": c, "name": f"class{c}", "supercategory": "thing"} for c in category_ids]

    no_gt_images = {i for i in image_ids if rng.random() < 0.2}
    no_dt_images = {i for i in image_ids if rng.random() < 0.1}
    no_dt_categories = {c for c in category_ids if n_categories > 1 and rng.random() < 0.15}

    annotations: list[dict] = []
    results: list[dict] = []
    masks_of_results: list[np.ndarray] = []  # parallel to results, for the boxes

    def add_dt(image: dict, category: int, mask: np.ndarray) -> None:
        results.append(
            {
                "image_id": image["id"],
                "category_id": category,
                "segmentation": encode(mask, as_bytes=bool(rng.random() < p_bytes)),
                "score": _score(rng, score_mode),
            }
        )
        masks_of_results.append(mask)

    for image in images:
        height, width = image["height"], image["width"]
        for category in category_ids:
            with_gt = image["id"] not in no_gt_images
            with_dt = image["id"] not in no_dt_images and category not in no_dt_categories
            gt_masks: list[np.ndarray] = []
            if with_gt:
                for _ in range(int(rng.integers(0, max_gt + 1))):
                    roll = rng.random()
                    parts = None
                    if roll < 0.65:
                        n_parts = 1 if rng.random() < 0.7 else int(rng.integers(2, 4))
                        parts = [_polygon_part(rng, height, width) for _ in range(n_parts)]
                        mask = _polygon_mask(parts, height, width)
                        segmentation: Any = parts
                    else:
                        mask = _blob(rng, height, width)
                        if rng.random() < 0.3:
                            mask |= _blob(rng, height, width)
                        if roll < 0.82:
                            segmentation = runs(mask)
                        else:
                            segmentation = encode(mask, as_bytes=bool(rng.random() < p_bytes))
                    annotations.append(
                        {
                            "id": 0,
                            "image_id": image["id"],
                            "category_id": category,
                            "segmentation": segmentation,
                            "area": _gt_area(rng, int(mask.sum()), parts),
                            "bbox": _mask_box(mask),
                            "iscrowd": 0,
                        }
                    )
                    gt_masks.append(mask)
                if gt_masks and rng.random() < 0.1:  # a duplicate GT: ties in IoU
                    twin = dict(annotations[-1])
                    annotations.append(twin)
                    gt_masks.append(gt_masks[-1])
            crowd_mask = None
            if with_gt and rng.random() < p_crowd:
                crowd_mask = _blob(rng, height, width, scale=max(height, width) * 0.3)
                crowd_mask |= _blob(rng, height, width)
                segmentation = (
                    runs(crowd_mask) if rng.random() < 0.7 else encode(crowd_mask)
                )
                annotations.append(
                    {
                        "id": 0,
                        "image_id": image["id"],
                        "category_id": category,
                        "segmentation": segmentation,
                        "area": _gt_area(rng, int(crowd_mask.sum()), None),
                        "bbox": _mask_box(crowd_mask),
                        "iscrowd": 1,
                    }
                )
            if not with_dt:
                continue
            for mask in gt_masks:
                if rng.random() < 0.85:
                    for _ in range(int(rng.integers(1, 4))):
                        add_dt(image, category, _perturb(rng, mask))
            if crowd_mask is not None:
                for _ in range(int(rng.integers(1, 6))):
                    piece = _blob(rng, height, width, scale=max(height, width) * 0.1)
                    add_dt(image, category, piece & crowd_mask if rng.random() < 0.8 else piece)
            for _ in range(int(rng.integers(0, max_dt + 1))):
                roll = rng.random()
                if roll < 0.08:
                    add_dt(image, category, np.zeros((height, width), dtype=bool))
                elif roll < 0.14:
                    add_dt(image, category, np.ones((height, width), dtype=bool))
                elif roll < 0.24:
                    square = _square(rng, height, width, int(rng.choice([32, 96])))
                    if square is not None:
                        add_dt(image, category, square)
                else:
                    add_dt(image, category, _blob(rng, height, width))
            if rng.random() < p_many:
                for _ in range(int(rng.integers(n_many[0], n_many[1] + 1))):
                    if gt_masks and rng.random() < 0.5:
                        source = gt_masks[int(rng.integers(len(gt_masks)))]
                        add_dt(image, category, _perturb(rng, source))
                    else:
                        add_dt(image, category, _blob(rng, height, width))
        if rng.random() < 0.05:
            add_dt(image, unknown_category, _blob(rng, height, width))
    if not results:
        first = images[0]
        add_dt(first, unknown_category, np.ones((first["height"], first["width"]), bool))

    mask_of = {id(r): m for r, m in zip(results, masks_of_results)}

    def make_box(result: dict) -> list[float]:
        box = _mask_box(mask_of[id(result)])
        roll = rng.random()
        if roll < 0.65:
            return box
        if roll < 0.8:  # a box whose area w*h sits on a limit
            w, h = [(32.0, 32.0), (16.0, 64.0), (96.0, 96.0), (48.0, 192.0)][rng.integers(4)]
            return [box[0], box[1], w, h]
        jitter = [float(v) for v in rng.normal(0.0, 2.0, 4)]
        return [round(box[0] + jitter[0], 2), round(box[1] + jitter[1], 2),
                round(max(box[2] + jitter[2], 0.0), 2), round(max(box[3] + jitter[3], 0.0), 2)]

    return _finish(rng, annotations, results, bbox_mode, make_box, images=images,
                   categories=categories, description=f"maskgen segm seed {seed}")


def one_mask_gt(height: int, width: int, gt_counts: str, *, area: float = 5.0) -> dict:
    """A COCO GT dict of one image of ``height`` x ``width`` holding one object whose mask is
    the compressed RLE ``gt_counts``."""
    return {"images": [{"id": 1, "height": height, "width": width}],
            "categories": [{"id": 1, "name": "a"}],
            "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0,
                             "area": area, "bbox": [0, 0, 1, 1],
                             "segmentation": {"size": [height, width], "counts": gt_counts}}]}


def mask_result(counts: str, size: list[int], score: float = 0.9, image_id: int = 1) -> dict:
    """A segm result of category 1 whose mask is the compressed RLE ``counts``."""
    return {"image_id": image_id, "category_id": 1, "score": score,
            "segmentation": {"size": list(size), "counts": counts}}


def count_iou_calls(monkeypatch: Any, routines: bool) -> list[tuple[int, int, set]]:
    """Record each call of pycocotools' IoU routine that ``deteval.masks.pair_iou`` makes:
    ``(m, n, {(h, w), ...})``, detections, objects and the masks' sizes.

    ``routines=True``: its C path (``rleIou`` through ctypes; the test is skipped where the
    routines cannot be loaded); ``False``: its ``maskUtils.iou`` path (the C routines off
    for ``pair_iou``). Calls may come from several threads: compare without their order.
    """
    import ctypes

    import pytest

    import deteval.masks.pair_iou as pair_iou
    from deteval.masks._api import mask_api
    from deteval.masks._capi import RLE_DTYPE, c_routines

    calls: list[tuple[int, int, set]] = []
    if routines:
        c = c_routines()
        if c is None:
            pytest.skip("pycocotools' C routines cannot be called through ctypes here")

        def sizes(at: int, k: int) -> set:
            if k == 0:
                return set()
            raw = (ctypes.c_char * (RLE_DTYPE.itemsize * k)).from_address(at)
            records = np.frombuffer(raw, dtype=RLE_DTYPE)
            return set(zip(records["h"].tolist(), records["w"].tolist()))

        def rle_iou(dt, gt, m, n, crowd, o):
            calls.append((m, n, sizes(dt, m) | sizes(gt, n)))
            c.rleIou(dt, gt, m, n, crowd, o)

        monkeypatch.setattr(pair_iou, "c_routines", lambda: c._replace(rleIou=rle_iou))
    else:
        api = mask_api()

        class Counting:
            def iou(self, dt, gt, crowd):
                calls.append((len(dt), len(gt), {tuple(m["size"]) for m in [*dt, *gt]}))
                return api.iou(dt, gt, crowd)

        monkeypatch.setattr(pair_iou, "mask_api", Counting)
        monkeypatch.setattr(pair_iou, "c_routines", lambda: None)
    return calls
