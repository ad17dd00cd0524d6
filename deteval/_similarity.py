"""The evaluation's pair similarity, for the diagnostics that match at one threshold.

:func:`~deteval.outcomes.match_outcomes` and :func:`~deteval.confusion.detection_confusion_matrix`
match with the similarity of the evaluation they explain, taken from the COCO stages
(:func:`deteval.protocols._coco_stages.pair_similarity`) rather than computed again: box IoU,
mask IoU (pycocotools' RLE routine), boundary IoU, OKS (the dataset's sigmas, the object's
area), polygon or rotated-box IoU. A crowd region scores the intersection over the
detection's area (IoA) where COCO does (boxes, masks, polygons); OKS has no crowd rule.

Examples
--------
>>> from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
>>> ds = Dataset(Images(ids=[1]), Categories(ids=[1]),
...              GroundTruth(image_index=[0], category_index=[0], boxes=[[0, 0, 10, 10]]))
>>> dt = Detections(image_index=[0], category_index=[0], boxes=[[0, 0, 10, 5]], scores=[1])
>>> s = evaluation_similarity(ds, dt, "bbox", floor=0.5)
>>> s.pair(np.array([0]), np.array([0])).tolist(), s.gt_ignore.tolist()
([0.5], [False])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .data import Dataset, Detections, has_column

__all__ = ["IOU_TYPES", "Similarity", "check_iou_type", "evaluation_similarity", "read_as"]

#: The geometries the diagnostics match by (those of :class:`~deteval.COCOParams`).
IOU_TYPES = ("bbox", "segm", "boundary", "keypoints", "polygon", "rotated")
# The column each geometry reads.
_COLUMN = {"segm": "masks", "boundary": "masks", "keypoints": "keypoints",
           "polygon": "polygons", "rotated": "polygons"}


def check_iou_type(iou_type: Any) -> str:
    """``iou_type`` if it is one of :data:`IOU_TYPES`; a ValueError naming them otherwise."""
    if not isinstance(iou_type, str) or iou_type not in IOU_TYPES:
        raise ValueError(f"iou_type must be one of {', '.join(map(repr, IOU_TYPES))}; "
                         f"got {iou_type!r}")
    return iou_type


def read_as(iou_type: str) -> str:
    """The reader's ``iou_type`` for a geometry (boundary IoU reads the masks)."""
    return "segm" if iou_type == "boundary" else iou_type


@dataclass(frozen=True)
class Similarity:
    """What a one-threshold matcher needs of a geometry.

    Attributes
    ----------
    iou_type : str
    pair : callable
        ``pair(dt_rows, gt_rows)`` -> ndarray of float64, shape (P,): the similarity of each
        (detection, object) pair (IoA for a crowd region where COCO uses it).
    gt_ignore : ndarray of bool, shape (n_gt,)
        Objects that are ignored, never missed: crowd regions, ``GroundTruth.ignore`` and,
        for keypoints, objects without keypoints (COCO ignores them).
    """

    iou_type: str
    pair: Callable[[np.ndarray, np.ndarray], np.ndarray]
    gt_ignore: np.ndarray


def evaluation_similarity(dataset: Dataset, detections: Detections, iou_type: str, *,
                          floor: float, keypoint_sigmas: Any = None,
                          dilation_ratio: float = 0.02) -> Similarity:
    """The pair similarity of ``iou_type`` on the rows of ``dataset.gt`` and ``detections``.

    Parameters
    ----------
    dataset : Dataset
    detections : Detections
    iou_type : {"bbox", "segm", "boundary", "keypoints", "polygon", "rotated"}
    floor : float
        The lowest similarity the caller compares with: a mask or keypoint pair that
        provably scores below it may be given 0 without being computed (as in the COCO
        stages).
    keypoint_sigmas : sequence of float or dict {category_id: sequence}, optional
        OKS sigmas (default: COCO's person sigmas for 17 keypoints), as
        :class:`~deteval.COCOParams` takes them.
    dilation_ratio : float, default 0.02
        Boundary IoU's boundary width (fraction of the image diagonal).

    Raises
    ------
    ValueError
        An unknown ``iou_type``; inputs without the column the geometry reads; keypoints
        without sigmas for their count.
    """
    from .protocols._coco_stages import pair_similarity
    from .protocols.coco import COCOParams

    check_iou_type(iou_type)
    gt = dataset.gt
    column = _COLUMN.get(iou_type)
    if column is not None:
        for what, table_has, table in (("ground truth", "has", gt),
                                       ("detections", "have", detections)):
            if len(table) and not has_column(table, column):
                raise ValueError(
                    f"iou_type {iou_type!r} needs {column} but the {what} {table_has} none; "
                    f"read the files with iou_type={read_as(iou_type)!r} (or pass paths)")
    ignore = gt.iscrowd | gt.ignore
    if iou_type == "keypoints":
        if len(gt) and gt.num_keypoints is None:
            raise ValueError("iou_type 'keypoints' needs the ground truth's num_keypoints")
        if len(gt):
            ignore = ignore | (gt.num_keypoints == 0)
    params = COCOParams(iou_type=iou_type, iou_thresholds=(float(floor),),
                        keypoint_sigmas=keypoint_sigmas, dilation_ratio=dilation_ratio)
    # A bbox-only detections table of a keypoint or mask file still has its boxes.
    pair = pair_similarity(params, dataset, detections, np.arange(len(gt)),
                           detections.as_xywh(), gt.as_xywh(), gt.iscrowd)
    return Similarity(iou_type=iou_type, pair=pair, gt_ignore=ignore)
