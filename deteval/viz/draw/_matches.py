"""What one image shows: the items (detections and objects) and :func:`draw_matches`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np
from PIL import Image, ImageDraw

from ..._validation import check_similarity_settings, positive_integer
from ...data import Dataset, Detections
from ...outcomes import DT_OUTCOMES, GT_OUTCOMES, Outcomes, match_outcomes
from ._compose import _as_image, _compose
from ._labels import _draw_text, _place_label
from ._shapes import (
    COCO_PERSON_SKELETON,
    _draw_box,
    _draw_keypoints,
    _draw_mask,
    _draw_path,
    _draw_polygon,
    _pattern,
    joint_within,
)
from ._styles import _LAYER, DEFAULT_SHOW, STYLES, _shown_keys, _text_colour

_MAX_FONT = 256   # default font size: min(w, h) / 32, from 8 px up to this
#: A joint is within tolerance when its OKS term reaches this (see draw_matches).
KEYPOINT_THRESHOLD = 0.5
#: Opacity (0-1) of the fill of masks.
MASK_FILL = 0.3


def _check_outcomes(outcomes: Any, dataset: Dataset, detections: Detections) -> Outcomes:
    if not isinstance(outcomes, Outcomes):
        raise TypeError(f"outcomes must be deteval.outcomes.Outcomes (from match_outcomes); "
                        f"got {type(outcomes).__name__}")
    if (outcomes.n_detections, outcomes.n_gt, outcomes.n_images) != (
            len(detections), len(dataset.gt), len(dataset.images)):
        raise ValueError(f"outcomes were computed for {outcomes.n_detections} detections, "
                         f"{outcomes.n_gt} objects and {outcomes.n_images} images; these "
                         f"inputs have {len(detections)}, {len(dataset.gt)} and "
                         f"{len(dataset.images)}")
    return outcomes


def _category_name(dataset: Dataset, columns: Any, row: int, k: int) -> str:
    if 0 <= k < len(dataset.categories):
        return dataset.categories.names[k]
    ids = getattr(columns, "category_ids", None)
    return f"id {int(ids[row])}" if ids is not None else "?"


class _Item(NamedTuple):
    key: str
    columns: Any      # GroundTruth or Detections
    row: int
    text: str


def _items(dataset: Dataset, detections: Detections, outcomes: Outcomes, image_index: int,
           keys: frozenset[str]) -> list[_Item]:
    rows = outcomes.for_image(image_index)
    gt = dataset.gt
    items = []
    for r in rows.detections.tolist():
        key = DT_OUTCOMES[outcomes.dt_outcome[r]]
        if key not in keys:
            continue
        name = _category_name(dataset, detections, r, int(detections.category_index[r]))
        words = [STYLES[key].tag, name, f"{detections.scores[r]:.2f}"]
        g, iou = int(outcomes.dt_gt[r]), float(outcomes.dt_iou[r])
        if key == "wrong_class":
            words.append(f"({dataset.categories.names[gt.category_index[g]]} IoU {iou:.2f})")
        elif key == "ignored" and g >= 0 and gt.iscrowd[g]:
            words.append(f"IoA {iou:.2f}")
        elif g >= 0:
            words.append(f"IoU {iou:.2f}")
        items.append(_Item(key, detections, r, " ".join(w for w in words if w)))
    for r in rows.gt.tolist():
        outcome = GT_OUTCOMES[outcomes.gt_outcome[r]]
        key = {"missed": "fn", "ignored": "ignored"}.get(outcome)
        if key not in keys:
            continue   # a found object is shown by its detection
        name = dataset.categories.names[gt.category_index[r]]
        tag = "crowd" if gt.iscrowd[r] else STYLES[key].tag
        items.append(_Item(key, gt, r, f"{tag} {name}"))
    items.sort(key=lambda item: _LAYER[item.key])   # stable: rows keep their order
    return items


class _Keypoints(NamedTuple):
    skeleton: Any          # pairs, or {category id: pairs}, or None (COCO person for K=17)
    sigmas: np.ndarray | None
    threshold: float
    category_ids: np.ndarray   # of the dataset's categories table


def _skeleton_of(options: _Keypoints, category_id: int | None, k: int):
    skeleton = options.skeleton
    if isinstance(skeleton, dict):
        return skeleton.get(category_id, ())
    if skeleton is None:
        return COCO_PERSON_SKELETON if k == 17 else ()
    return skeleton


def _joint_colours(item: _Item, gt: Any, outcomes: Outcomes, options: _Keypoints):
    """Per joint of a detection: the TP colour within tolerance of its object, the
    background colour outside it; None (the outcome's colour) without an object to compare
    with or without sigmas."""
    if item.columns is gt:
        return None
    g = int(outcomes.dt_gt[item.row])
    points = item.columns.keypoints[item.row]
    sigmas = options.sigmas
    if sigmas is None and points.shape[0] == 17:
        from ...keypoints import COCO_PERSON_SIGMAS as sigmas
    if g < 0 or gt.keypoints is None or sigmas is None:
        return None
    within = joint_within(points, gt.keypoints[g], float(gt.area[g]), np.asarray(sigmas),
                          options.threshold)
    good, bad = (*STYLES["tp"].rgb, 255), (*STYLES["background"].rgb, 255)
    return [good if w else bad for w in within.tolist()]


def _draw_shape(overlay: Image.Image, draw: ImageDraw.ImageDraw, item: _Item, width: int,
                fill: int, gt: Any, outcomes: Outcomes, keypoints: _Keypoints) -> None:
    style = STYLES[item.key]
    rgba = (*style.rgb, 255)
    pattern = _pattern(style.dash, width)
    points = getattr(item.columns, "keypoints", None)
    if points is not None:
        k = int(item.columns.category_index[item.row])
        ids = keypoints.category_ids
        category = int(ids[k]) if 0 <= k < len(ids) else None
        skeleton = _skeleton_of(keypoints, category, points.shape[1])
        joints = _joint_colours(item, gt, outcomes, keypoints)
        if _draw_keypoints(draw, points[item.row], skeleton, rgba, width, pattern, joints):
            return
    masks = getattr(item.columns, "masks", None)
    if masks is not None and isinstance(masks[item.row], dict):
        try:
            if _draw_mask(overlay, masks[item.row], rgba, width, pattern, fill):
                return
        except (KeyError, TypeError, ValueError):
            pass   # an unreadable mask: its box below
    polygons = getattr(item.columns, "polygons", None)
    if polygons is not None and polygons[item.row] is not None:
        if _draw_polygon(draw, polygons[item.row], rgba, width, pattern):
            return
    rboxes = getattr(item.columns, "rboxes", None)
    if rboxes is not None and np.isfinite(rboxes[item.row]).all():
        from ...errors import FormatError
        from ...geometry import rotated_box_corners

        try:
            corners = rotated_box_corners(rboxes[item.row:item.row + 1])[0]
        except FormatError:
            corners = None   # a negative width or height: its box below
        if corners is not None:
            _draw_path(draw, np.vstack([corners, corners[:1]]), rgba, width, pattern)
            return
    _draw_box(draw, item.columns.boxes[item.row], rgba, width, pattern, overlay.size)


def draw_matches(image: Any, gt: Dataset, dt: Detections, image_index: int, *,
                 outcomes: Outcomes | None = None, iou_threshold: float = 0.5,
                 score_threshold: float = 0.0, iou_type: str = "bbox",
                 show: Iterable[str] = DEFAULT_SHOW,
                 labels: bool = True, line_width: int | None = None,
                 font_size: int | None = None, mask_fill: float = MASK_FILL,
                 skeleton: Any = None, keypoint_sigmas: Any = None,
                 keypoint_threshold: float = KEYPOINT_THRESHOLD,
                 dilation_ratio: float | None = None) -> Image.Image:
    """Draw one image's detections and objects in the style of their outcome.

    Parameters
    ----------
    image : PIL.Image.Image or ndarray
        The picture of row ``image_index`` of ``gt.images`` (an array goes through
        ``Image.fromarray``). Never modified.
    gt : Dataset
    dt : Detections
        Of the whole dataset (rows of other images are not drawn).
    image_index : int
        Row of the image in ``gt.images`` (not its id).
    outcomes : Outcomes, optional
        From :func:`~deteval.outcomes.match_outcomes` on the same ``gt`` and ``dt``; computed
        with ``iou_threshold`` and ``score_threshold`` when not given (pass it when drawing
        many images: it covers the whole dataset).
    iou_threshold, score_threshold : float
        Used only when ``outcomes`` is None.
    iou_type : str, default "bbox"
        Used only when ``outcomes`` is None: the similarity to match by (mask IoU for
        "segm", OKS for "keypoints", ...; see :func:`~deteval.outcomes.match_outcomes`,
        which takes ``keypoint_sigmas`` from here too).
    dilation_ratio : float, optional
        ``iou_type="boundary"`` only (ValueError with another type, whether or not
        ``outcomes`` is given): the boundary width of the matching, as a fraction of the
        image diagonal (default 0.02, as the Boundary IoU reference); used only when
        ``outcomes`` is None.
    show : sequence of str
        Which outcomes to draw, among :data:`SHOW_CHOICES`: ``"tp"``, ``"fp"`` (every reason),
        ``"fn"``, ``"ignored"``, ``"below_threshold"`` or single reasons (``"duplicate"``,
        ``"wrong_class"``, ``"localization"``, ``"background"``). Found objects are shown by
        their detection.
    labels : bool
        Write a label (tag, class, score, IoU) at each shape. Labels stay inside the image
        and never overlap: each takes the first free spot among positions around its box
        (above, inside the top, below, inside the bottom, at its left or right edge, then
        stacked further out), the most important first (true positives, then false
        positives, missed objects, the rest; higher scores first); one that finds no free
        spot is left out (its shape stays). On a small image the font shrinks (to 6 px)
        and the text is cut ("..").
    line_width, font_size : int, optional
        In pixels; by default they grow with the image: ``min(w, h) / 250`` (at least 1)
        and ``min(w, h) / 32`` (8 to 256), so that labels keep their size relative to the
        picture when a large image is viewed shrunk to a screen.
    mask_fill : float, default 0.3
        Opacity of the fill of masks, in [0, 1] (0: outlines only).
    skeleton : sequence of (int, int) or dict, optional
        Keypoints: the joint pairs (0-based) drawn as edges, for every category or as
        ``{category_id: pairs}`` (COCO's ``categories[].skeleton`` minus 1). Default: the
        COCO person skeleton for 17 keypoints, no edges otherwise.
    keypoint_sigmas : sequence of float, optional
        Keypoints: the OKS sigmas, one per joint (default: COCO person for 17 keypoints):
        the joints' dots read them whatever ``iou_type``, the matching with
        ``iou_type="keypoints"``. Given for objects without keypoints and another
        ``iou_type``: ValueError (nothing would read them).
    keypoint_threshold : float, default 0.5
        A detected joint is within tolerance of its object's joint when its OKS term
        ``exp(-d^2 / (2 s^2 k^2))`` (``d`` the distance, ``s^2`` the object's area, ``k =
        2 sigma``: the terms OKS averages) is at least this. Joints within are dotted in
        the true-positive colour, the others in the background colour; the joints of a
        detection without an object (or without sigmas) and of objects are dotted in
        their outcome's colour. Skeleton edges take the outcome's colour and line.

    Returns
    -------
    PIL.Image.Image
        A new image, the size and mode of ``image`` (see the module documentation for how
        each mode is drawn). Shapes are drawn in annotation coordinates, whatever the size.

    Raises
    ------
    TypeError, ValueError, IndexError
        Inputs of the wrong type, unknown ``show`` names, bad sizes, outcomes of other
        inputs, ``image_index`` outside the images table.
    """
    return render_matches(_as_image(image), gt, dt, image_index, copy=True, outcomes=outcomes,
                          iou_threshold=iou_threshold, score_threshold=score_threshold,
                          iou_type=iou_type, show=show, labels=labels, line_width=line_width,
                          font_size=font_size, mask_fill=mask_fill, skeleton=skeleton,
                          keypoint_sigmas=keypoint_sigmas,
                          keypoint_threshold=keypoint_threshold, dilation_ratio=dilation_ratio)


def check_drawn_sigmas(gt: Dataset, iou_type: str, keypoint_sigmas: Any) -> None:
    """ValueError when ``keypoint_sigmas`` are given and nothing reads them: not the matching
    (``iou_type`` is not "keypoints") and not the joints' dots (the objects carry no
    keypoints); the message is :func:`~deteval._validation.check_similarity_settings`'.
    """
    if gt.gt.keypoints is None:
        check_similarity_settings(iou_type, keypoint_sigmas=keypoint_sigmas)


def matched_sigmas(iou_type: str, keypoint_sigmas: Any) -> Any:
    """The sigmas the matching reads: ``keypoint_sigmas`` for OKS, else None (they then
    serve the joints' dots only)."""
    return keypoint_sigmas if iou_type == "keypoints" else None


def render_matches(image: Image.Image, gt: Dataset, dt: Detections, image_index: int, *,
                   copy: bool, outcomes: Outcomes | None = None, iou_threshold: float = 0.5,
                   score_threshold: float = 0.0, iou_type: str = "bbox",
                   show: Iterable[str] = DEFAULT_SHOW, labels: bool = True,
                   line_width: int | None = None, font_size: int | None = None,
                   mask_fill: float = MASK_FILL, skeleton: Any = None,
                   keypoint_sigmas: Any = None,
                   keypoint_threshold: float = KEYPOINT_THRESHOLD,
                   dilation_ratio: float | None = None) -> Image.Image:
    """:func:`draw_matches` on a PIL image; ``copy=False`` draws an RGB image in place
    (:func:`~._write.write_drawings` owns the pictures it loads: no copy needed)."""
    if not isinstance(gt, Dataset):
        raise TypeError(f"gt must be a deteval Dataset; got {type(gt).__name__}")
    if not isinstance(dt, Detections):
        raise TypeError(f"dt must be deteval Detections; got {type(dt).__name__}")
    keys = _shown_keys(show)
    if not 0.0 <= float(mask_fill) <= 1.0:
        raise ValueError(f"mask_fill must be in [0, 1]; got {mask_fill!r}")
    check_drawn_sigmas(gt, iou_type, keypoint_sigmas)
    check_similarity_settings(iou_type, dilation_ratio=dilation_ratio)
    options = _Keypoints(skeleton, None if keypoint_sigmas is None else np.asarray(
        keypoint_sigmas, dtype=np.float64), float(keypoint_threshold), gt.categories.ids)
    if outcomes is None:
        outcomes = match_outcomes(gt, dt, iou_threshold=iou_threshold,
                                  score_threshold=score_threshold, iou_type=iou_type,
                                  keypoint_sigmas=matched_sigmas(iou_type, keypoint_sigmas),
                                  dilation_ratio=dilation_ratio)
    else:
        _check_outcomes(outcomes, gt, dt)
    items = _items(gt, dt, outcomes, image_index, keys)   # checks image_index
    w, h = image.size
    width = (max(1, round(min(w, h) / 250)) if line_width is None
             else positive_integer("line_width", line_width, or_none=True))
    size = (int(np.clip(round(min(w, h) / 32), 8, _MAX_FONT)) if font_size is None
            else positive_integer("font_size", font_size, or_none=True))

    # RGB pictures are drawn on directly (a copy unless ``copy`` is False); the others on an
    # overlay composed in their mode. Strokes are opaque: the same pixels either way.
    direct = image.mode == "RGB"
    overlay = (image.copy() if copy else image) if direct else \
        Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    fill = int(round(255 * float(mask_fill)))
    for item in items:
        _draw_shape(overlay, draw, item, width, fill, gt.gt, outcomes, options)
    if labels:
        _draw_labels(draw, items, image.size, size)
    return overlay if direct else _compose(image, overlay)


def _draw_labels(draw: ImageDraw.ImageDraw, items: list[_Item], size: tuple[int, int],
                 font_size: int) -> None:
    """Placed most important first (outcome layer, then score: they get the free spots),
    drawn the other way round (they end on top); a label with no free spot is left out."""
    def rank(item: _Item) -> tuple[int, float]:
        scores = getattr(item.columns, "scores", None)
        return -_LAYER[item.key], -(float(scores[item.row]) if scores is not None else 0.0)

    placed = []
    taken: list[tuple[int, int, int, int]] = []
    for item in sorted(items, key=rank):
        label = _place_label(item.text, item.columns.boxes[item.row], size, font_size,
                             taken=taken, free_only=True)
        if label is not None:
            taken.append(label.rect)
            placed.append((item, label))
    for item, label in reversed(placed):
        rgb = STYLES[item.key].rgb
        draw.rectangle(label.rect, fill=(*rgb, 255))
        _draw_text(draw, label, _text_colour(rgb))
