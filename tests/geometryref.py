"""Reference polygon IoUs (scalar shapely, a raster estimate) and seeded random rotated boxes and
polygons, shared by the geometry tests."""

from __future__ import annotations

import math

import numpy as np
from shapely.geometry import Polygon

from deteval.geometry import polygons_from_coords, rotated_box_corners

#: A self-intersecting quadrilateral (a bow tie).
BOWTIE = [0, 0, 2, 2, 2, 0, 0, 2]


# ---------------------------------------------------------------------- references


def reference_iou(p: Polygon, q: Polygon, crowd: bool = False) -> float:
    """The literal definition, one pair at a time with shapely's scalar API."""
    if p.area == 0 or q.area == 0:
        return 0.0
    inter = p.intersection(q).area
    union = p.area if crowd else p.area + q.area - inter
    return inter / union if union > 0 else 0.0


def reference_matrix(a, b, crowd=None) -> np.ndarray:
    crowd = np.zeros(len(b), dtype=bool) if crowd is None else crowd
    return np.array([[reference_iou(p, q, bool(c)) for q, c in zip(b, crowd)] for p in a],
                    dtype=np.float64).reshape(len(a), len(b))


def inside_rbox(x: np.ndarray, y: np.ndarray, rbox) -> np.ndarray:
    """Points inside a rotated box by projecting onto its own axes (the documented frame)."""
    cx, cy, w, h, angle = rbox
    a = math.radians(angle)
    dx, dy = x - cx, y - cy
    u = dx * math.cos(a) - dy * math.sin(a)  # inverse of x = cx + u cos + v sin, ...
    v = dx * math.sin(a) + dy * math.cos(a)
    return (np.abs(u) <= w / 2) & (np.abs(v) <= h / 2)


def raster_iou(p, q, samples: int = 800) -> float:
    """IoU of two rotated boxes estimated on a fine grid of points."""
    corners = rotated_box_corners([p, q]).reshape(-1, 2)
    (x0, y0), (x1, y1) = corners.min(axis=0), corners.max(axis=0)
    xs = x0 + (np.arange(samples) + 0.5) * (x1 - x0) / samples
    ys = y0 + (np.arange(samples) + 0.5) * (y1 - y0) / samples
    x, y = np.meshgrid(xs, ys)
    in_p, in_q = inside_rbox(x, y, p), inside_rbox(x, y, q)
    union = (in_p | in_q).sum()
    return float((in_p & in_q).sum() / union) if union else 0.0


def random_rboxes(rng, n: int) -> np.ndarray:
    angles = np.where(rng.random(n) < 0.2, rng.choice([0, 90, 180, -90, 45], n),
                      rng.uniform(-180, 180, n))
    return np.column_stack([rng.uniform(0, 40, (n, 2)), rng.uniform(0.5, 25, (n, 2)), angles])


def random_star(rng, k: int, centre, radius: float) -> list[float]:
    """A simple polygon: k points around a centre, one in each of k equal sectors."""
    angles = (np.arange(k) + rng.uniform(0.05, 0.95, k)) * 2 * np.pi / k
    radii = rng.uniform(0.2, 1.0, k) * radius
    x = centre[0] + radii * np.cos(angles)
    y = centre[1] + radii * np.sin(angles)
    return np.column_stack([x, y]).ravel().tolist()


def random_polygons(rng, n: int) -> np.ndarray:
    coords = [random_star(rng, int(rng.integers(3, 12)), rng.uniform(0, 40, 2),
                          rng.uniform(2, 20)) for _ in range(n)]
    return polygons_from_coords(coords)
