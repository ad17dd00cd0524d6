"""The slice table of a Pascal VOC report: the VOC numbers per image slice.

An image slice's numbers are :func:`~deteval.evaluate_voc` run on the slice's images alone
(``image_ids``), exactly: VOC matches per image and ranks each class's detections by
(score, input row), so the slice is the evaluation's own match state with weight 1 on its
images and 0 elsewhere (:class:`~deteval.diagnostics.bootstrap_voc.WeightedVOC`, the weighted
evaluation of :func:`deteval.bootstrap_voc`; no matching again). Its interval, with ``ci``,
is the percentile interval of the slice's mAP over resamples that draw the slice's images
with replacement and give every other image weight 0 (as
:func:`~deteval.diagnostics.slices_protocols.protocol_slice_interval` does for LVIS). Tags and
keys are read as :func:`deteval.slices` reads them. Object properties (``size``, ``aspect``,
``crowding``, ``truncation``) are refused: VOC has no area ranges, and a property slice
would need the protocol matched again with the property in place of the area.
(docs/report.md §1.10.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_keys", "voc_slices"]


def check_keys(by: Any, protocol: str = "voc2007") -> list[str] | None:
    """The keys of ``by`` as a list (None: every key of the tags); an object property is a
    ValueError saying why it is not available with VOC (with LVIS: but ``size``, its own
    area ranges)."""
    from ..diagnostics.slices import OBJECT_SLICES

    keys = [by] if isinstance(by, str) else (None if by is None else [str(k) for k in by])
    for key in keys or []:
        if protocol == "lvis" and key in OBJECT_SLICES and key != "size":
            raise ValueError(f"slices by {key!r} are not available for an LVIS report: LVIS "
                             "would have to be matched again with the property in place of "
                             "the area; image keys and 'size' are")
        if protocol != "lvis" and key in OBJECT_SLICES:
            raise ValueError(f"slices by {key!r} are not available for a VOC report: the VOC "
                             "protocol has no area ranges, and an object slice would need it "
                             "matched again with the property in place of the area; image "
                             "keys are (of the ground truth's image records or the tags)")
    return keys


def voc_slices(result: Any, *, by: Any = None, tags: Any = None, images: Any = None,
               ci: int | None = None, confidence: float = 0.95, seed: Any = 0) -> Any:
    """A VOC result's numbers per image slice, as a :class:`~deteval.diagnostics.slices.
    SlicesResult` (stats ``AP``: the slice's mAP, ``result.mean_ap`` of the slice).

    Parameters
    ----------
    result : VOCResult
        Of :func:`~deteval.evaluate_voc` (with its match table).
    by, tags, images
        As :func:`deteval.slices`: image keys only.
    ci, confidence, seed
        Bootstrap resamples of each slice's mAP interval (None: no intervals).

    Raises
    ------
    ValueError
        An object property in ``by``; a key no tag or record has.

    Examples
    --------
    >>> import deteval
    >>> from deteval.demo import make_demo
    >>> gt, dt = make_demo(seed=0, n_images=6)
    >>> for image in gt["images"]:
    ...     image["site"] = "a" if image["id"] % 2 else "b"
    >>> result = deteval.evaluate_voc(gt, dt)
    >>> sliced = voc_slices(result, by=["site"], images=gt)
    >>> ids = [im["id"] for im in gt["images"] if im["site"] == "a"]
    >>> sliced.get("site", "a").stats["AP"] == deteval.evaluate_voc(gt, dt, image_ids=ids).mean_ap
    True
    """
    from ..data import index_in
    from ..diagnostics.bootstrap_voc import WeightedVOC
    from ..diagnostics.slices import Slice, SlicesResult, tagged_groups
    from ..protocols._voc_stages import prepare

    keys = check_keys(by, "voc")
    weighted = WeightedVOC(result)
    column = index_in(result.dataset.images.ids, prepare(result.dataset,
                                                           result.params).image_ids)
    notes: list[str] = []
    image_keys = None if keys is None else [
        k[len("image:"):] if k.startswith("image:") else k for k in keys]
    groups = tagged_groups(images, tags, image_keys, result.dataset, notes, hint=False)
    found = []
    for key in (image_keys if image_keys is not None else list(groups)):
        for label, rows in groups[key].items():
            columns = column[rows]
            columns = columns[columns >= 0]
            w = np.zeros(weighted.n_images, dtype=np.int64)
            w[columns] = 1
            value = float(weighted.numbers(w)[0])                     # the mAP
            interval = None if ci is None else _interval(result, weighted, columns, ci,
                                                         confidence, seed)
            found.append(Slice(key=key, value=label, kind="image", n_images=len(columns),
                               n_gt=int(w.take(weighted.gt_image).sum()),
                               n_detections=int(w.take(weighted.image).sum()),
                               stats={"AP": -1.0 if np.isnan(value) else value},
                               interval=interval))
    overall = {"AP": float(result.mean_ap)}
    return SlicesResult(slices=tuple(found), overall=overall, notes=tuple(notes),
                        settings={"protocol": "voc"})


def _interval(result: Any, weighted: Any, columns: np.ndarray, n_resamples: int,
              confidence: float, seed: Any) -> tuple[float, float]:
    """:func:`deteval.bootstrap_voc`'s percentile interval of the mAP over resamples drawing
    the slice's images (``columns``) with replacement, every other image weight 0."""
    from ..diagnostics.bootstrap_voc import bootstrap_voc

    weights = np.zeros((n_resamples, weighted.n_images), dtype=np.int64)
    if len(columns):
        rng = np.random.default_rng(seed)
        draws = columns[rng.integers(0, len(columns), (n_resamples, len(columns)))]
        flat = (np.arange(n_resamples)[:, None] * weighted.n_images + draws).ravel()
        weights = np.bincount(flat, minlength=weights.size).reshape(weights.shape)
    low, high = bootstrap_voc(result, n_resamples=n_resamples, confidence=confidence,
                              seed=seed, weights=weights).interval("mAP")
    return float(low), float(high)
