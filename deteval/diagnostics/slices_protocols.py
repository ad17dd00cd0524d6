"""Slices of LVIS, CrowdPose, Open Images and Pascal VOC results: each protocol's numbers per
image slice.

An image slice's numbers are those of the protocol run on the slice's images alone (a ground
truth holding only them, and their detections), exactly: every rule of the four protocols is
per image (LVIS's cut and federated lists, CrowdPose's 20 per image, Open Images' verified
classes and group-of boxes, VOC's difficult objects and per-class ranking by score and input
row), so the slice is the evaluation's own match state with weight 1 on its images and 0
elsewhere, accumulated again (:mod:`deteval.diagnostics.bootstrap_lvis`,
:mod:`.bootstrap_crowdpose`, :mod:`.bootstrap_openimages`, :mod:`.bootstrap_voc`; no matching
again). Tags and keys are read as for :func:`deteval.slices` (``docs/diagnostics/slices.md``
§2).

Object slices: ``size`` is each protocol's own area ranges (LVIS: small, medium, large;
CrowdPose: medium, large), read from the evaluation; the other properties (aspect, crowding,
truncation) would need the protocol matched again with the property in place of the area and
are refused, as is every object property for Open Images and VOC (no area ranges). Rules:
``docs/diagnostics/slices.md`` §7.

>>> import deteval
>>> gt = {"images": [{"id": i, "neg_category_ids": [], "not_exhaustive_category_ids": [],
...                   "site": "a" if i < 3 else "b"} for i in (1, 2, 3)],
...       "categories": [{"id": 1, "name": "a", "frequency": "f"}],
...       "annotations": [{"id": i, "image_id": i, "category_id": 1, "bbox": [0, 0, 20, 20],
...                        "area": 400} for i in (1, 2, 3)]}
>>> dt = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 20, 20], "score": 0.9},
...       {"image_id": 3, "category_id": 1, "bbox": [25, 25, 20, 20], "score": 0.8}]
>>> sliced = protocol_slices(deteval.evaluate_lvis(gt, dt), by=["site"], images=gt)
>>> sliced.get("site", "a").stats["AP"], sliced.get("site", "b").stats["AP"]
(0.5, 0.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .slices import OBJECT_SLICES, Slice, SlicesResult, tagged_groups

__all__ = ["check_keys", "protocol_slice_interval", "protocol_slices"]

_SIZE_STATS = (("AP", None), ("AP50", 0.5), ("AP75", 0.75))
#: The protocols without area ranges: every object property refused.
_NO_AREA = ("openimages", "voc")
#: Each kind's name in messages.
_NAMES = {"lvis": "LVIS", "crowdpose": "CrowdPose", "openimages": "Open Images", "voc": "VOC"}


def check_keys(by: Any, kind: str, *, subject: str | None = None) -> list[str] | None:
    """The keys of ``by`` as a list (None: every key of the tags), an object property the
    protocol ``kind`` cannot slice exactly refused.

    Parameters
    ----------
    by : str, sequence of str or None
        As :func:`protocol_slices`.
    kind : {"lvis", "crowdpose", "openimages", "voc"}
    subject : str, optional
        What the message says is sliced (default: ``"VOC results"`` and so on; the report
        says ``"a VOC report"``).

    Raises
    ------
    ValueError
        An object property other than ``size`` (any, for Open Images and VOC: no area
        ranges), naming why and what is available.

    Examples
    --------
    >>> check_keys(["site", "size"], "lvis")
    ['site', 'size']
    >>> check_keys("size", "voc")
    Traceback (most recent call last):
    ...
    ValueError: slices by 'size' are not available for VOC results: the VOC protocol has no \
area ranges, and an object slice would need it matched again with the property in place of \
the area; image keys are (of the ground truth's image records or the tags)
    """
    keys = [by] if isinstance(by, str) else (None if by is None else [str(k) for k in by])
    name = _NAMES.get(kind, kind)
    subject = f"{name} results" if subject is None else subject
    for key in keys or []:
        if key not in OBJECT_SLICES or (key == "size" and kind not in _NO_AREA):
            continue
        if kind == "openimages":
            why, available = "Open Images has no area ranges", "image keys and nothing else are"
        elif kind == "voc":
            why = ("the VOC protocol has no area ranges, and an object slice would need it "
                   "matched again with the property in place of the area")
            available = "image keys are (of the ground truth's image records or the tags)"
        else:
            why = (f"{name} would have to be matched again with the {key} in place of the "
                   "area")
            available = "image keys and 'size' are"
        raise ValueError(f"slices by {key!r} are not available for {subject}: {why}; "
                         f"{available}")
    return keys


def protocol_slices(result: Any, *, by: Any = None, tags: Any = None, images: Any = None,
                    interval: Any = None) -> SlicesResult:
    """An LVIS, CrowdPose, Open Images or Pascal VOC result's numbers per slice.

    Parameters
    ----------
    result : LVISResult, CrowdPoseResult, OpenImagesResult or VOCResult
        VOC: of :func:`~deteval.evaluate_voc` (a streaming Evaluator's result keeps no
        match table and is refused).
    by : str or sequence of str, optional
        Image keys (of ``tags`` or of ``images``' records), and ``"size"`` (LVIS and
        CrowdPose: the protocol's own area ranges). Default: every key of ``tags``.
    tags, images
        As :func:`deteval.slices` (Open Images has no image records: tags only, matched by
        ``ImageID``).
    interval : callable, optional
        ``interval(result, image_ids) -> (low, high)``, called for every image slice
        (:func:`protocol_slice_interval` makes a bootstrap one, as
        :func:`~deteval.diagnostics.bootstrap.slice_interval` does for COCO).

    Returns
    -------
    SlicesResult
        Image slices: the protocol's numbers by name (LVIS: its 13 stats, with ``AR`` the
        ``AR@300`` one; CrowdPose: its 9; Open Images: ``AP`` and ``AP50``, both the mAP@0.5 of the
        slice; VOC: ``AP``, the slice's ``mean_ap``, and with several IoU thresholds its
        ``mAP@t`` at each, named as :func:`~deteval.bootstrap_voc` names them, ``AP50`` and
        ``AP75`` the ones at 0.5 and 0.75);
        equal to the protocol run on the slice's images (VOC: :func:`~deteval.evaluate_voc`
        with ``image_ids`` the slice's). ``settings["protocol"]`` is the kind (``"voc"``).

    Raises
    ------
    ValueError
        An object property other than ``size`` (any, for Open Images and VOC); a key no
        tag or record has; a VOC result without match table.

    Examples
    --------
    >>> import deteval
    >>> from deteval.demo import make_demo
    >>> gt, dt = make_demo(seed=0, n_images=6)
    >>> tags = {image["id"]: {"site": "a" if image["id"] % 2 else "b"} for image in gt["images"]}
    >>> sliced = protocol_slices(deteval.evaluate_voc(gt, dt), by="site", tags=tags)
    >>> ids = [i for i, t in tags.items() if t["site"] == "a"]
    >>> sliced.get("site", "a").stats["AP"] == deteval.evaluate_voc(gt, dt, image_ids=ids).mean_ap
    True
    """
    kind, weighted, dataset = _weighted(result)
    keys = check_keys(by, kind)
    notes: list[str] = []
    image_keys = None if keys is None else [
        k[len("image:"):] if k.startswith("image:") else k for k in keys if k != "size"]
    groups = tagged_groups(images, tags, image_keys, dataset, notes, hint=False)
    found: list[Slice] = []
    for key in (keys if keys is not None else list(groups)):
        if key == "size":
            found.extend(_size_slices(kind, result, weighted))
            continue
        name = key[len("image:"):] if key.startswith("image:") else key
        for label, rows in groups[name].items():
            found.append(_image_slice(kind, result, weighted, name, label, rows, interval))
    if kind == "voc":
        overall = _voc_stats(weighted, [float(result.mean_ap), *result.map.tolist()])
    elif kind == "openimages":
        overall = {"AP": float(result.mean_ap), "AP50": float(result.mean_ap)}
    else:
        overall = dict(result.stats_named)
    return SlicesResult(slices=tuple(found), overall=_with_ar(overall), notes=tuple(notes),
                        settings={"protocol": kind})


def _weighted(result: Any) -> tuple[str, Any, Any]:
    """The protocol's name, its weighted evaluation, and a Dataset whose image rows are its
    weight columns' images (for the tag lookup)."""
    from ..protocols.crowdpose import CrowdPoseResult
    from ..protocols.lvis import LVISResult
    from ..protocols.openimages import OpenImagesResult
    from ..protocols.voc import VOCResult

    if isinstance(result, VOCResult):
        from .bootstrap_voc import WeightedVOC

        try:
            weighted = WeightedVOC(result)
        except ValueError:              # a streaming Evaluator's result: no match table
            raise ValueError("slices need a result of evaluate_voc (with its match table); "
                             "a streaming Evaluator's result keeps none") from None
        return "voc", weighted, result.dataset
    if isinstance(result, LVISResult):
        from .bootstrap_lvis import WeightedLVIS

        return "lvis", WeightedLVIS(result), result.dataset
    if isinstance(result, CrowdPoseResult):
        from .bootstrap_crowdpose import WeightedCrowdPose

        return "crowdpose", WeightedCrowdPose(result), result.dataset
    if isinstance(result, OpenImagesResult):
        from ..data import Categories, Dataset, GroundTruth, Images
        from .bootstrap_openimages import WeightedOpenImages

        weighted = WeightedOpenImages(result)
        ids = np.asarray(result.image_ids).astype(str)
        empty = np.zeros(0, np.int64)
        dataset = Dataset(Images(ids=np.arange(1, len(ids) + 1), file_names=tuple(ids)),
                          Categories(ids=empty),
                          GroundTruth(image_index=empty, category_index=empty,
                                      boxes=np.zeros((0, 4))))
        return "openimages", weighted, dataset
    raise TypeError(f"expected an LVISResult, CrowdPoseResult, OpenImagesResult or VOCResult; "
                    f"got {type(result).__name__}")


def _columns(kind: str, result: Any, weighted: Any, rows: np.ndarray) -> np.ndarray:
    """The weight columns of image rows (of the lookup dataset)."""
    if kind == "lvis":
        return weighted.image_pos[rows]
    if kind in ("crowdpose", "voc"):
        position = (weighted.image_pos_of_row if kind == "crowdpose" else weighted.column)[rows]
        return position[position >= 0]
    return rows                          # Open Images: the rows are the sorted image ids


def _with_ar(stats: dict) -> dict:
    """LVIS's recall is ``AR@300`` (at its max_detections): also listed as ``AR``, which the
    slice table reads."""
    ar = [k for k in stats if k.startswith("AR@")]
    return dict(stats, AR=stats[ar[0]]) if ar and "AR" not in stats else stats


def _image_slice(kind: str, result: Any, weighted: Any, key: str, label: str,
                 rows: np.ndarray, interval: Any) -> Slice:
    columns = _columns(kind, result, weighted, rows)
    w = np.zeros(weighted.n_images, dtype=np.int64)
    w[columns] = 1
    numbers = weighted.numbers(w)
    if kind == "voc":
        stats = _voc_stats(weighted, numbers)
    elif kind == "openimages":
        value = -1.0 if np.isnan(numbers[0]) else float(numbers[0])
        stats = {"AP": value, "AP50": value}      # one threshold, 0.5
    else:
        stats = _with_ar({n: float(v) for n, v in zip(weighted.names, numbers)
                          if not n.startswith("AP[")})
    n_gt, n_dt = _counts(kind, result, weighted, w)
    ids = _column_ids(kind, result, weighted)[columns]
    found = None if interval is None else tuple(float(v) for v in interval(result, ids))
    return Slice(key=key, value=label, kind="image", n_images=len(columns), n_gt=n_gt,
                 n_detections=n_dt, stats=stats, interval=found)


def _voc_stats(weighted: Any, numbers: Any) -> dict:
    """A VOC slice's stats from :meth:`WeightedVOC.numbers`' ``mAP`` and ``mAP@t`` (the
    per-class AP left out): ``AP`` the mAP, -1 where undefined; with several thresholds,
    ``mAP@0.50`` and ``mAP@0.75`` also listed as ``AP50`` and ``AP75`` (detectron2's names,
    which the slice table reads)."""
    head = [n for n in weighted.names if not n.startswith("AP[")]
    stats = {"AP" if n == "mAP" else n: -1.0 if np.isnan(v) else float(v)
             for n, v in zip(head, numbers)}
    for t, name in zip(weighted.params.iou_thresholds, head[1:]):
        if t in (0.5, 0.75):
            stats.setdefault(f"AP{round(100 * t)}", stats[name])
    return stats


def _column_ids(kind: str, result: Any, weighted: Any) -> np.ndarray:
    """The image id of each weight column (sorted ids; Open Images' are strings; VOC's the
    evaluated ones in their order)."""
    if kind == "openimages":
        return np.asarray(result.image_ids)
    if kind == "voc":
        return np.asarray(weighted.image_ids)
    return np.sort(np.asarray(result.dataset.images.ids))


def protocol_slice_interval(*, n_resamples: int = 1000, confidence: float = 0.95,
                            seed: Any = 0, threads: int | None = None):
    """An ``interval`` function for :func:`protocol_slices`: the bootstrap percentile
    interval of an image slice's AP (Open Images and VOC: mAP), each resample drawing the slice's
    images with replacement and giving every other image weight 0 (the slice evaluated
    alone, bootstrapped: ``docs/diagnostics/bootstrap.md`` §13). ``threads``: the resamples'
    threads (default: every core; the interval is the same for every value).

    Returns
    -------
    callable
        ``interval(result, image_ids) -> (low, high)``.
    """
    from .bootstrap import check_settings

    check_settings(n_resamples, confidence)
    cache: dict = {}

    def interval(result: Any, image_ids: Any) -> tuple[float, float]:
        if id(result) not in cache:
            cache.clear()
            cache[id(result)] = (result, *_weighted(result)[:2])
        _, kind, weighted = cache[id(result)]
        column_ids = _column_ids(kind, result, weighted)
        ids = np.asarray(image_ids).astype(column_ids.dtype)
        columns = np.flatnonzero(np.isin(column_ids, ids))
        return _interval(weighted, columns, n_resamples=n_resamples, confidence=confidence,
                         seed=seed, threads=threads)

    return interval


def _counts(kind: str, result: Any, weighted: Any, w: np.ndarray) -> tuple[int, int]:
    """Objects counted as positives (area "all") and detections evaluated in the images of
    weight 1."""
    if kind == "voc":      # non-difficult objects of the evaluated classes; every detection
        return int(w.take(weighted.gt_image).sum()), int(w.take(weighted.image).sum())
    if kind == "openimages":
        dt_img = weighted.dt_img
        kept = np.asarray(result.dt_status) >= 0
        return (int(w.take(weighted.gt_img).sum()),
                int(w.take(dt_img[kept]).sum()) if kept.any() else 0)
    plan = weighted.plan
    (rows,) = plan.precision.values()            # the one max-detections setting
    return int(plan.positives(w)[:, 0].sum()), int(w.take(rows.row_img).sum())


def _interval(weighted: Any, columns: np.ndarray, *, n_resamples: int = 1000,
              confidence: float = 0.95, seed: Any = 0,
              threads: int | None = None) -> tuple[float, float]:
    """Percentile interval of the slice's AP: each resample draws the slice's images with
    replacement, every other image weight 0 (on ``threads``: the same samples)."""
    from .._threads import resolve_threads
    from .bootstrap import bootstrap_result, resampled

    weights = np.zeros((n_resamples, weighted.n_images), dtype=np.int64)
    if len(columns):
        rng = np.random.default_rng(seed)
        draws = columns[rng.integers(0, len(columns), (n_resamples, len(columns)))]
        flat = (np.arange(n_resamples)[:, None] * weighted.n_images + draws).ravel()
        weights = np.bincount(flat, minlength=weights.size).reshape(weights.shape)
    index = list(weighted.names).index("mAP" if "mAP" in weighted.names else "AP")
    samples = resampled(lambda w: [weighted.numbers(w)[index]], weights,
                        resolve_threads(threads))[:, 0]
    boot = bootstrap_result(("AP",), np.zeros(1), samples, confidence=confidence, seed=seed,
                            category_ids=np.zeros(0), category_names=())
    return float(boot.low[0]), float(boot.high[0])


def _size_slices(kind: str, result: Any, weighted: Any) -> list[Slice]:
    """The protocol's own area ranges (but "all") as object slices: its AP, AP50, AP75 and
    AR at each range, read from the evaluation."""
    p = result.params
    if kind == "lvis":
        from ..protocols.lvis import summarize_lvis

        def value(values, iou, label):
            return summarize_lvis(values, p, iou, label)
        precision, recall = result.precision, result.recall
        labels, ranges = p.area_labels, p.area_ranges
    else:
        from ..protocols.coco import summarize_value

        cp = weighted.prepared

        def value(values, iou, label):
            return summarize_value(values, cp, iou, label, None)
        precision, recall = result.precision, result.recall
        labels, ranges = cp.area_labels, cp.area_ranges
    table, gt = result.matches, result.dataset.gt
    out = []
    for a, (label, (lo, hi)) in enumerate(zip(labels, ranges)):
        if label == "all":
            continue
        inside = ~table.gt_ignore[a] & table.gt_evaluated
        stats = {name: value(precision, iou, label) for name, iou in _SIZE_STATS}
        stats["AR"] = value(recall, None, label)
        out.append(Slice(key="size", value=str(label), kind="object",
                         n_images=len(np.unique(gt.image_index[inside])),
                         n_gt=int(np.count_nonzero(inside)),
                         n_detections=int(np.count_nonzero(table.dt_kept
                                                           & ~table.dt_out_of_range[a])),
                         stats=stats, bounds=(float(lo), float(hi))))
    return out

