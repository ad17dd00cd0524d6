"""Image-level bootstrap intervals of the Open Images mAP and per-class AP, from the match
table.

The unit is the image of the evaluation (``OpenImagesResult.image_ids``: every image with a
box or an image-level label). Every rule of the protocol is per image and class (verified
classes, the matching, group-of boxes counted once), so an image drawn ``w`` times brings
each of its entries ``w`` times: per class, the entries of the TF tool's precision-recall
list (the counted detections with their TP flag, and one TP per hit group-of box with the
highest score inside it) are taken once from the evaluation, in the order the tool lists
them, each repeated ``w`` times in place, and ``num_gt`` is the weighted box count (a
group-of box counts once per copy). AP is the tool's own rule
(:func:`~deteval.protocols._openimages_match.tf_average_precision`), mAP the mean over the
classes with ground truth. A row of ones is the evaluation itself, bit for bit; other
weights are ``evaluate_openimages`` on the data set holding each image ``w`` times up to
the order of tied scores (``docs/diagnostics/bootstrap.md`` §13).

>>> import numpy as np
>>> import deteval
>>> from deteval.io.openimages import OIDBoxes, OIDDetections
>>> gt = OIDBoxes(np.array(["a", "b"], dtype=object), np.array(["/m/cat", "/m/cat"],
...               dtype=object), np.array([[0, 0, .5, .5], [0, 0, .5, .5]]),
...               np.array([False, False]))
>>> dt = OIDDetections(np.array(["a", "b"], dtype=object),
...                    np.array(["/m/cat", "/m/cat"], dtype=object), np.array([.9, .8]),
...                    np.array([[0, 0, .5, .45], [.5, .5, .9, .9]]))
>>> result = deteval.evaluate_openimages(gt, dt)
>>> ci = bootstrap_openimages(result, n_resamples=50, seed=0)
>>> ci.estimate("mAP") == result.mean_ap
True
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._threads import resolve_threads
from ._bootstrap_workers import prestart, work_of
from .bootstrap import BootstrapResult, check_settings, resample_rows, run_bootstrap

__all__ = ["WeightedOpenImages", "bootstrap_openimages", "openimages_number_names"]

#: What a worker process imports while the plans are built.
_WORKER_MODULES = ("deteval.diagnostics.bootstrap_openimages",
                   "deteval.protocols._openimages_match")


def bootstrap_openimages(result: Any, *, n_resamples: int = 1000, confidence: float = 0.95,
                         seed: Any = None, weights: np.ndarray | None = None,
                         threads: int | None = None) -> BootstrapResult:
    """Image-level bootstrap intervals of an Open Images evaluation's mAP and per-class AP.

    Parameters
    ----------
    result : OpenImagesResult
        Of :func:`~deteval.evaluate_openimages`.
    n_resamples, confidence, seed
        As :func:`~deteval.diagnostics.bootstrap.bootstrap_coco`.
    weights : array of int, shape (B, I), optional
        Explicit resamples: how many times each image of ``result.image_ids`` (sorted) is
        drawn. A row of ones is the evaluation itself.
    threads : int, optional
        As :func:`~deteval.diagnostics.bootstrap_lvis.bootstrap_lvis` (the numbers are
        identical for every value).

    Returns
    -------
    BootstrapResult
        Numbers: ``mAP`` and ``AP[label]`` per class. A class without ground truth (NaN AP)
        is undefined: -1 in ``estimates``, NaN in ``samples``.

    Raises
    ------
    ValueError
        A result without its images (made by hand), bad settings, weights of the wrong
        shape.
    """
    check_settings(n_resamples, confidence)
    threads = resolve_threads(threads)
    with prestart(threads, work_of(result, n_resamples, weights), _WORKER_MODULES) as pool:
        return run_bootstrap(WeightedOpenImages(result), n_resamples=n_resamples,
                             confidence=confidence, seed=seed, weights=weights,
                             threads=threads, pool=pool)


def openimages_number_names(result: Any) -> tuple[str, ...]:
    """The numbers :func:`bootstrap_openimages` gives for ``result``: ``mAP``, then
    ``AP[label]`` per class."""
    return ("mAP",) + tuple(f"AP[{c}]" for c in result.classes)


class WeightedOpenImages:
    """An Open Images evaluation's numbers under image weights (see the module docstring)."""

    def __init__(self, result: Any) -> None:
        from ..matching import TP
        from ..protocols.openimages import MAX_PER_CLASS, class_index

        if result.image_ids is None:
            raise ValueError("bootstrap needs a result of evaluate_openimages (with its "
                             "image_ids)")
        self.result = result
        gt, dt, table = result.gt, result.detections, result.matches
        images = np.asarray(result.image_ids).astype(str)
        self.n_images, n_class = len(images), len(result.classes)
        gt_img = np.searchsorted(images, gt.image_id.astype(str))
        dt_img = np.minimum(np.searchsorted(images, dt.image_id.astype(str)),
                            max(len(images) - 1, 0))
        gt_cls = class_index(gt.label, result.classes, "box", None)
        dt_cls = class_index(dt.label, result.classes, "detection", None)
        status = np.asarray(result.dt_status)
        matched = table.detection_matches(0)[0]
        in_group = (matched >= 0) & gt.group_of[np.maximum(matched, 0)] if len(gt.label) \
            else np.zeros(len(matched), bool)
        # The entries of the tool's lists (openimages._accumulate): the kept detections
        # outside group-of boxes, then each hit group-of box once with its best score.
        rows = np.flatnonzero(table.dt_kept & ~in_group)
        group_score = np.zeros(len(gt.label))
        absorbed = np.flatnonzero(in_group & table.dt_kept)
        np.maximum.at(group_score, matched[absorbed], dt.score[absorbed])
        hit = np.flatnonzero(gt.group_of & (group_score > 0))
        cls = np.r_[dt_cls[rows], gt_cls[hit]].astype(np.int64)
        img = np.r_[dt_img[rows], gt_img[hit]].astype(np.int64)
        position = np.r_[table.dt_rank[rows], MAX_PER_CLASS + np.arange(len(hit))]
        order = np.lexsort((position, img, cls))
        self.cls, self.img = cls[order], img[order]
        self.scores = np.r_[dt.score[rows], group_score[hit]][order]
        self.labels = np.r_[((status[rows] == TP) & (matched[rows] >= 0)).astype(np.float64),
                            np.ones(len(hit))][order]
        self.bounds = np.searchsorted(self.cls, np.arange(n_class + 1))
        self.gt_cls, self.gt_img, self.n_class = gt_cls, gt_img, n_class
        self.dt_img = dt_img
        # Random resamples draw the images in the order they first appear in the boxes
        # (then those with labels only, sorted): renaming the images draws the same ones.
        first = np.unique(gt_img, return_index=True)[1] if len(gt_img) else np.zeros(0, int)
        boxed = gt_img[np.sort(first)]
        self._drawn = np.r_[boxed, np.setdiff1d(np.arange(self.n_images), boxed)].astype(
            np.int64)
        self.category_names = tuple(result.classes)
        self.category_ids = np.arange(len(result.classes))
        self.names = openimages_number_names(result)
        self.estimates = np.asarray(self.numbers(np.ones(self.n_images, np.int64)))

    def resamples(self, n_resamples: int, seed: Any, weights: np.ndarray | None):
        """The weight rows: ``weights`` checked, or random ones."""
        return resample_rows(self._drawn, self.n_images, n_resamples, seed, weights)

    def ap(self, w: np.ndarray) -> np.ndarray:
        """AP per class under weights ``w`` (NaN for a class without ground truth)."""
        from ..protocols._openimages_match import tf_average_precision

        w = np.asarray(w, dtype=np.int64)
        num_gt = np.bincount(self.gt_cls, weights=w.take(self.gt_img),
                             minlength=self.n_class).astype(np.float64)
        times = w.take(self.img)
        ap = np.full(self.n_class, np.nan)
        for k in np.flatnonzero(num_gt > 0).tolist():
            lo, hi = self.bounds[k], self.bounds[k + 1]
            ap[k] = tf_average_precision(np.repeat(self.scores[lo:hi], times[lo:hi]),
                                         np.repeat(self.labels[lo:hi], times[lo:hi]),
                                         num_gt[k])
        return ap

    def numbers(self, w: np.ndarray) -> list[float]:
        """mAP and the per-class AP under weights ``w`` (NaN where undefined)."""
        ap = self.ap(w)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)      # no class with ground truth
            mean = float(np.nanmean(ap)) if self.n_class else float("nan")
        return [mean] + ap.tolist()
