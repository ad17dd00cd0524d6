"""Writing COCO files: results lists (:func:`write_coco_results`) and datasets as
instances dicts (:func:`dataset_to_coco`)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import orjson

from ...data import Dataset, Detections, GroundTruth


def write_coco_results(detections: Detections, dataset: Dataset,
                       path: str | os.PathLike) -> int:
    """Write detections as a COCO results JSON list.

    Parameters
    ----------
    detections : Detections
    dataset : Dataset
        Gives the image and category ids the indices point to.
    path : str or PathLike

    Returns
    -------
    int
        Number of records written. Detections with ``category_index == -1`` (category not in
        the ground truth) have no category id to write and are skipped.
    """
    keep = detections.category_index >= 0
    xywh = detections.as_xywh()[keep]
    records = [
        {"image_id": int(i), "category_id": int(c), "bbox": b, "score": float(s)}
        for i, c, b, s in zip(dataset.images.ids[detections.image_index[keep]],
                              dataset.categories.ids[detections.category_index[keep]],
                              xywh.tolist(), detections.scores[keep])
    ]
    Path(path).write_bytes(orjson.dumps(records))
    return len(records)


def _polygon_parts(polys: np.ndarray) -> tuple[list[list[list[float]]], int]:
    """Each geometry as COCO polygon parts (outer rings, closing point dropped), and how many
    geometries had holes, which COCO polygons cannot hold."""
    import shapely

    out: list[list[list[float]]] = [[] for _ in range(len(polys))]
    if not len(polys):
        return out, 0
    parts, owner = shapely.get_parts(polys, return_index=True)
    keep = ~shapely.is_empty(parts)
    parts, owner = parts[keep], owner[keep]
    with_holes = len(np.unique(owner[shapely.get_num_interior_rings(parts) > 0]))
    coords, ring = shapely.get_coordinates(shapely.get_exterior_ring(parts), return_index=True)
    ends = np.searchsorted(ring, np.arange(len(parts)), side="right")
    starts = np.r_[0, ends[:-1]]
    flat = coords.tolist()
    for k, (lo, hi) in enumerate(zip(starts.tolist(), ends.tolist())):
        out[int(owner[k])].append(list(itertools.chain.from_iterable(flat[lo:hi - 1])))
    return out, with_holes


def _shape_fields(gt: GroundTruth) -> list[dict]:
    """The shapes a ground truth carries, as COCO annotation fields, one dict per object:
    masks as compressed-RLE ``segmentation``, polygons as polygon ``segmentation`` (or as
    ``polygon`` beside masks), rotated boxes as ``rbox``, keypoints as ``keypoints`` and
    ``num_keypoints``."""
    import warnings

    from ...errors import FormatWarning

    fields: list[dict] = [{} for _ in range(len(gt))]
    if gt.masks is not None:
        for row, mask in zip(fields, gt.masks):
            counts = mask["counts"]
            row["segmentation"] = {"size": list(mask["size"]), "counts": counts.decode("ascii")
                                   if isinstance(counts, bytes) else counts}
    if gt.polygons is not None:
        parts, with_holes = _polygon_parts(gt.polygons)
        if with_holes:
            warnings.warn(f"{with_holes} polygon(s) have holes, which COCO polygons cannot "
                          "hold: only their outer outlines were written", FormatWarning,
                          stacklevel=3)
        key = "polygon" if gt.masks is not None else "segmentation"
        for row, value in zip(fields, parts):
            if value:
                row[key] = value
    if gt.rboxes is not None:
        for row, rbox in zip(fields, gt.rboxes.tolist()):
            row["rbox"] = rbox
    if gt.keypoints is not None:
        known = ~np.isnan(gt.keypoints[:, :, 0])
        for row, points, mask in zip(fields, gt.keypoints.tolist(), known.tolist()):
            row["keypoints"] = [v for point, ok in zip(points, mask) if ok for v in point]
    if gt.num_keypoints is not None:
        for row, count in zip(fields, gt.num_keypoints.tolist()):
            row["num_keypoints"] = count
    return fields


def dataset_to_coco(dataset: Dataset) -> dict:
    """The dataset as a COCO instances dict (boxes in xywh, the original numbers if kept).

    Shapes are written too: masks as compressed-RLE ``segmentation``; polygons (DOTA
    quadrilaterals, say) as polygon ``segmentation`` (as ``polygon`` when masks are written
    too), outer outlines only, with a :class:`~deteval.errors.FormatWarning` for polygons
    with holes; rotated boxes as ``rbox``; keypoints as ``keypoints`` and ``num_keypoints``.
    So the file reads back with :func:`read_coco_gt` and the matching ``iou_type``.

    Examples
    --------
    >>> from deteval.data import Categories, Dataset, GroundTruth, Images
    >>> from deteval.geometry import polygons_from_coords
    >>> gt = GroundTruth(image_index=[0], category_index=[0], boxes=[[0, 0, 4, 2]],
    ...                  polygons=polygons_from_coords([[0, 0, 4, 0, 4, 2]]))
    >>> ds = Dataset(Images(ids=[1]), Categories(ids=[1]), gt)
    >>> dataset_to_coco(ds)["annotations"][0]["segmentation"]
    [[0.0, 0.0, 4.0, 0.0, 4.0, 2.0]]
    """
    images = [{"id": int(i), "file_name": f, **({"width": w} if np.isfinite(w) else {}),
               **({"height": h} if np.isfinite(h) else {})}
              for i, f, w, h in zip(dataset.images.ids, dataset.images.file_names,
                                    dataset.images.widths.tolist(),
                                    dataset.images.heights.tolist())]
    categories = [{"id": int(i), "name": n, "supercategory": s}
                  for i, n, s in zip(dataset.categories.ids, dataset.categories.names,
                                     dataset.categories.supercategories)]
    gt = dataset.gt
    annotations = [{"id": int(a), "image_id": int(i), "category_id": int(c), "bbox": b,
                    "area": float(ar), "iscrowd": int(cr), **({"ignore": 1} if ig else {}),
                    **shapes}
                   for a, i, c, b, ar, cr, ig, shapes in zip(
                       gt.ids, dataset.images.ids[gt.image_index],
                       dataset.categories.ids[gt.category_index],
                       gt.as_xywh().tolist(), gt.area, gt.iscrowd, gt.ignore,
                       _shape_fields(gt))]
    return {"images": images, "annotations": annotations, "categories": categories}
