"""Image-level bootstrap intervals of the CrowdPose numbers, from the evaluation's match table.

CrowdPose is COCO's keypoint protocol with 20 detections per image and category and the
object area ``h * w * 0.53``; its AP(easy), AP(medium) and AP(hard) are the same evaluation
restricted to the images of each crowd-index split. The resamples are those of
:mod:`deteval.diagnostics.bootstrap` (integer image weights); a resample's numbers come from
the one evaluation, without matching again: COCO's accumulation under weights
(:meth:`deteval.diagnostics._bootstrap_plans.COCOPlan.single`, the plans of
:func:`~deteval.diagnostics.bootstrap.bootstrap_coco`), the split numbers with the weights of the
other images set to 0. This is ``evaluate_crowdpose`` on the data set holding each image
``w`` times (``docs/diagnostics/bootstrap.md`` §13; tied scores of one image as §3).

>>> import deteval
>>> kp = [10, 10, 2] * 14
>>> gt = {"images": [{"id": i, "crowdIndex": 0.1 * i} for i in (1, 2, 3)],
...       "categories": [{"id": 1, "name": "person"}],
...       "annotations": [{"id": i, "image_id": i, "category_id": 1, "num_keypoints": 14,
...                        "keypoints": kp, "bbox": [0, 0, 20, 40], "iscrowd": 0}
...                       for i in (1, 2, 3)]}
>>> dt = [{"image_id": i, "category_id": 1, "keypoints": [10 + i, 10, 0.9] * 14,
...        "score": 0.9 - 0.1 * i} for i in (1, 2, 3)]
>>> result = deteval.evaluate_crowdpose(gt, dt)
>>> ci = bootstrap_crowdpose(result, n_resamples=100, seed=0)
>>> ci.estimate("AP") == result.stat("AP")
True
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from .._threads import resolve_threads
from ._bootstrap_plans import COCOPlan
from ._bootstrap_workers import prestart, work_of
from .bootstrap import BootstrapResult, check_settings, resample_rows, run_bootstrap
from .bootstrap_lvis import _distinct_names

__all__ = ["WeightedCrowdPose", "bootstrap_crowdpose", "crowdpose_number_names"]

#: What a worker process imports while the plans are built.
_WORKER_MODULES = ("deteval.diagnostics.bootstrap_crowdpose", "deteval.protocols.crowdpose")


def bootstrap_crowdpose(result: Any, *, n_resamples: int = 1000, confidence: float = 0.95,
                        seed: Any = None, weights: np.ndarray | None = None,
                        threads: int | None = None) -> BootstrapResult:
    """Image-level bootstrap intervals of a CrowdPose evaluation's numbers.

    Parameters
    ----------
    result : CrowdPoseResult
        Of :func:`~deteval.evaluate_crowdpose`.
    n_resamples, confidence, seed
        As :func:`~deteval.diagnostics.bootstrap.bootstrap_coco`.
    weights : array of int, shape (B, I), optional
        Explicit resamples: how many times each image (sorted by id) is drawn. A row of
        ones is the evaluation itself.
    threads : int, optional
        As :func:`~deteval.diagnostics.bootstrap_lvis.bootstrap_lvis` (the numbers are
        identical for every value).

    Returns
    -------
    BootstrapResult
        Numbers: the 9 ``stats`` (``AP``, ``AP50``, ``AP75``, ``AR``, ``AR50``, ``AR75``,
        ``AP_easy``, ``AP_medium``, ``AP_hard``, the last three rounded to 4 decimals as
        xtcocotools does) and ``AP[name]`` per category.

    Raises
    ------
    ValueError
        Bad settings, weights of the wrong shape, recall thresholds not increasing.
    """
    check_settings(n_resamples, confidence)
    threads = resolve_threads(threads)
    with prestart(threads, work_of(result, n_resamples, weights), _WORKER_MODULES) as pool:
        return run_bootstrap(WeightedCrowdPose(result), n_resamples=n_resamples,
                             confidence=confidence, seed=seed, weights=weights,
                             threads=threads, pool=pool)


def crowdpose_number_names(result: Any) -> tuple[str, ...]:
    """The numbers :func:`bootstrap_crowdpose` gives for ``result``: the 9 stats, then
    ``AP[name]`` per category (a name several categories share gets ``#id``)."""
    from ..protocols.crowdpose import CROWDPOSE_STAT_NAMES

    names = _distinct_names(result.category_names, result.category_ids)
    return CROWDPOSE_STAT_NAMES + tuple(f"AP[{n}]" for n in names)


class WeightedCrowdPose:
    """A CrowdPose evaluation's numbers under image weights (see the module docstring)."""

    def __init__(self, result: Any) -> None:
        from ..protocols._coco_stages import prepare, state_of_result
        from ..protocols.crowdpose import scaled_dataset

        p = result.params
        self.result = result
        self.coco_params = p.coco_params()
        ctx = prepare(scaled_dataset(result.dataset, p), self.coco_params)
        self.prepared = ctx.params
        state = state_of_result(ctx, SimpleNamespace(detections=result.detections,
                                                     matches=result.matches))
        counted = (ctx.gt_k >= 0)[None, :] & ~np.asarray(result.matches.gt_ignore, dtype=bool)
        self.plan = COCOPlan.single(state, ctx.params, ctx.n_k, ctx.gt_k, ctx.gt_img, counted,
                                    max(self.coco_params.max_detections))
        self.n_images = len(ctx.image_ids)
        position = self.image_pos_of_row = ctx.image_pos_of_row
        self._drawn = position.compress(position >= 0)
        # Each split's images, as columns (the evaluated images by sorted id).
        crowd = np.zeros(self.n_images)
        crowd[self._drawn] = np.asarray(result.crowd_index)[position >= 0]
        first, second = p.crowd_index_limits
        self.splits = [crowd < first, (crowd >= first) & (crowd < second), crowd >= second]
        self.category_names = _distinct_names(result.category_names, result.category_ids)
        self.category_ids = result.category_ids
        self.names = crowdpose_number_names(result)
        self.estimates = np.asarray(self.numbers(np.ones(self.n_images, np.int64)))

    def resamples(self, n_resamples: int, seed: Any, weights: np.ndarray | None):
        """The weight rows: ``weights`` checked, or random ones drawn over the images in the
        ground truth's order."""
        return resample_rows(self._drawn, self.n_images, n_resamples, seed, weights)

    def numbers(self, w: np.ndarray) -> list[float]:
        """The 9 stats and the per-category AP under weights ``w`` (-1 where undefined)."""
        from ..protocols.coco import summarize_value
        from ..protocols.crowdpose import headline_stats

        w = np.asarray(w, dtype=np.int64)
        # full(): accumulate_stage's (T, R, K, A, 1) layout, whose memory order the split
        # means below follow; a copy, out of the plan's scratch arrays.
        precision, recall = self.plan.full(*self.plan.curves(w)[:2])
        stats = headline_stats(precision, recall, self.prepared)
        for in_split in self.splits:
            split_precision, _ = self.plan.full(*self.plan.curves(w * in_split)[:2])
            # xtcocotools: round(np.mean(precision[:, :, :, 0, :]), 4), -1 entries included
            stats.append(round(np.mean(split_precision[:, :, :, 0, :]), 4))
        per_class = [summarize_value(precision[:, :, k:k + 1], self.coco_params, None, "all",
                                     None) for k in range(precision.shape[2])]
        return [float(s) for s in stats] + per_class
