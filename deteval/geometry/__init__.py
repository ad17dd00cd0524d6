"""Exact polygon and rotated-box geometry: construction, area, bounds and IoU (shapely 2).

Every function works on whole arrays of shapely geometries with shapely's vectorised
functions; there is no Python loop per pair.

Rotated boxes
-------------
A rotated box is ``(cx, cy, w, h, angle)``: its centre, its width (the extent along its own
``u`` axis), its height (along ``v``) and its angle, in degrees by default
(``angle_unit="radians"`` for radians). Image coordinates have ``x`` to the right and ``y``
**down**, and a positive angle turns the box **counter-clockwise as seen on the image**. A
point ``(u, v)`` of the box's own frame (origin at the centre) is at::

    x = cx + u * cos(a) + v * sin(a)
    y = cy - u * sin(a) + v * cos(a)

so at angle 0 the box is the axis-aligned ``[cx - w/2, cx + w/2] x [cy - h/2, cy + h/2]``,
at 90 degrees its width runs up the image (along ``-y``), and ``(cx, cy, w, h, 90)`` covers
the same region as ``(cx, cy, h, w, 0)``. Angles that are multiples of 90 degrees (or of
``pi / 2`` exactly, in radians) use exact cosines and sines (0, 1 or -1), so such boxes have
exactly the corners of the equivalent axis-aligned box; degree angles are reduced modulo
360 first, so 30 and 390 give the same corners.

Corners come in the order ``(u, v) = (-w/2, -h/2), (+w/2, -h/2), (+w/2, +h/2),
(-w/2, +h/2)``: at angle 0 top-left, top-right, bottom-right, bottom-left, i.e. clockwise
as seen on the image.

Polygons
--------
Polygons are shapely ``Polygon`` (or ``MultiPolygon``) objects in object arrays, built from
flat coordinate lists ``[x1, y1, x2, y2, ...]`` by :func:`polygons_from_coords` (a DOTA
quadrilateral is the 4-point case) or from rotated boxes by :func:`polygons_from_rboxes`.
A polygon whose points all lie on one line is *degenerate*: it is kept, has zero area, and
its IoU with anything is 0 (like a zero-width box). Any other invalid polygon (a
self-intersecting "bow-tie") is refused, or repaired on request; it is never silently given
a wrong area.

IoU
---
:func:`pair_iou` (aligned pairs) and :func:`iou_matrix` (all pairs) give intersection over
union, or, for a crowd ground truth, intersection over the detection's area as COCO does for
crowd boxes. Pairs whose bounding boxes do not overlap are 0 without computing an
intersection; a zero-area union gives 0. When both polygons of a pair are axis-aligned
rectangles (four corners, horizontal and vertical edges) the IoU is computed with the COCO box
formula, with the same floating-point operations as :func:`deteval.iou.coco_pair_iou`, so
rotated boxes at angle 0 give bit-for-bit the IoU of the bbox protocol. When both are strictly
convex quadrilaterals (rotated boxes, DOTA quads), the area of their intersection is found in
numpy, all pairs at once, by clipping one against the four edges of the other
(Sutherland-Hodgman) and the shoelace formula: it agrees with shapely's to about 1e-12
relative (1e-9 or better, and closer to the exact area than GEOS's far from the origin) at a
tenth of the cost. Other pairs get the area of their intersection from shapely (GEOS). Either
way, a polygon covered by the other (shapely's exact predicate) counts with its own area, so
identical polygons give exactly 1.

Examples
--------
>>> polys = polygons_from_rboxes([[5, 5, 10, 10, 0], [5, 5, 10, 10, 45]])
>>> polygon_area(polys).round(9).tolist()
[100.0, 100.0]
>>> round(float(pair_iou(polys[:1], polys[1:])[0]), 6)
0.707107
"""

from __future__ import annotations

from .pair_iou import PairIoU, iou_matrix, pair_iou
from .pair_iou import _convex_quad_intersection_area as _convex_quad_intersection_area  # tests
from .polygons import _strictly_convex as _strictly_convex  # tests
from .polygons import polygon_area, polygon_bounds, polygons_from_coords
from .rotated import polygons_from_rboxes, rotated_box_corners

__all__ = [
    "PairIoU",
    "iou_matrix",
    "pair_iou",
    "polygon_area",
    "polygon_bounds",
    "polygons_from_coords",
    "polygons_from_rboxes",
    "rotated_box_corners",
]

