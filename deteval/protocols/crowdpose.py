"""The CrowdPose keypoint protocol, number for number equal to xtcocotools' ``keypoints_crowd``.

CrowdPose (Li et al., 2019) is evaluated with the crowdpose-api fork of the COCO API, now
xtcocotools (1.14.3): ``COCOeval(gt, dt, "keypoints_crowd", sigmas, use_area=False)``, as
mmpose calls it. It is COCO's keypoint protocol (docs/protocols/coco.md) with these changes
(docs/protocols/crowdpose.md):

* 14 keypoints and their sigmas (:data:`CROWDPOSE_SIGMAS`);
* the object area in OKS and in the area ranges is ``h * w * 0.53`` of the object's box
  (``use_area=False``: CrowdPose files have no ``area``);
* a result whose keypoint scores (every third number) are all <= 0 is dropped before
  anything else;
* the summary: AP, AP50, AP75, AR, AR50, AR75 at maxDets 20 over area "all", then AP(easy),
  AP(medium) and AP(hard): the whole evaluation again on the images whose ``crowdIndex`` is
  below 0.2, below 0.8, and the rest, each the plain mean of ``precision[:, :, :, 0, :]``
  (-1 entries of categories without ground truth included) rounded to 4 decimals.

Examples
--------
>>> kp = [10, 10, 2] * 14
>>> gt = {"images": [{"id": 1, "crowdIndex": 0.1}],
...       "categories": [{"id": 1, "name": "person"}],
...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "num_keypoints": 14,
...                        "keypoints": kp, "bbox": [0, 0, 20, 40], "iscrowd": 0}]}
>>> dt = [{"image_id": 1, "category_id": 1, "keypoints": [11, 10, 0.9] * 14, "score": 0.8}]
>>> result = evaluate_crowdpose(gt, dt)
>>> result.stats.tolist()
[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0, -1.0]
>>> print(result.summary().splitlines()[6])
 Average Precision  (AP) @[ IoU=0.50:0.95 | type=  easy | maxDets= 20 ] = 1.000
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from .._arrays import ReadOnlyArrays
from ..data import Dataset, Detections, index_in
from ..errors import FormatError, OptionError
from ..matching import MatchTable
from ._coco_stages import accumulate_stage, match_stage, prepare
from .coco import COCOParams, load_coco_pair, summarize_value

__all__ = ["CROWDPOSE", "CROWDPOSE_SIGMAS", "CROWDPOSE_STAT_NAMES", "CrowdPoseParams",
           "CrowdPoseResult", "evaluate_crowdpose", "read_crowd_index", "unscored_notes"]

#: CrowdPose's 14 keypoint sigmas (left/right shoulder, elbow, wrist, hip, knee, ankle, then
#: head and neck), as mmpose's CrowdPose metadata and the CrowdPose evaluation give them.
CROWDPOSE_SIGMAS = np.array([.79, .79, .72, .72, .62, .62, 1.07, 1.07, .87, .87, .89, .89,
                             .79, .79]) / 10.0
CROWDPOSE_SIGMAS.setflags(write=False)

#: Short names of the 9 ``stats``, in xtcocotools' order.
CROWDPOSE_STAT_NAMES = ("AP", "AP50", "AP75", "AR", "AR50", "AR75", "AP_easy", "AP_medium",
                        "AP_hard")

# (is_ap, iou threshold or None) of the first six stats, area "all", maxDets 20.
_STAT_SPECS = ((True, None), (True, 0.5), (True, 0.75), (False, None), (False, 0.5),
               (False, 0.75))
_SPLITS = ("easy", "medium", "hard")
# xtcocotools' keypoint Params (setKpParams): the summary reads area "all" only, but the
# other two ranges are evaluated as well (they appear in ``precision``).
_AREA_RANGES = ((0.0, 1e10), (1024.0, 9216.0), (9216.0, 1e10))
_AREA_LABELS = ("all", "medium", "large")
_MAX_DETS = 20


@dataclass(frozen=True)
class CrowdPoseParams:
    """Settings of the CrowdPose protocol (xtcocotools names in brackets).

    Parameters
    ----------
    iou_thresholds : tuple of float
        (``iouThrs``) OKS thresholds, default ``np.linspace(.5, .95, 10)``.
    recall_thresholds : tuple of float
        (``recThrs``) default ``np.linspace(0, 1, 101)``.
    keypoint_sigmas : tuple of float
        (``sigmas``) one per keypoint; default :data:`CROWDPOSE_SIGMAS`.
    use_area : bool
        (``use_area``) False (CrowdPose, mmpose): the area of an object in OKS and in the
        area ranges is ``h * w * 0.53`` of its box. True: the file's ``area`` (a reader fills
        a missing one with ``w * h``, where xtcocotools would fail).
    crowd_index_limits : (float, float)
        (``get_type_result(first, second)``) images with ``crowdIndex`` below the first are
        "easy", below the second "medium", the rest "hard". Default (0.2, 0.8).
    """

    iou_thresholds: tuple[float, ...] = tuple(np.linspace(0.5, 0.95, 10).tolist())
    recall_thresholds: tuple[float, ...] = tuple(np.linspace(0.0, 1.0, 101).tolist())
    keypoint_sigmas: tuple[float, ...] = tuple(CROWDPOSE_SIGMAS.tolist())
    use_area: bool = False
    crowd_index_limits: tuple[float, float] = (0.2, 0.8)

    def __post_init__(self) -> None:
        coco = self.coco_params()        # checks thresholds and sigmas as COCO does
        set_ = object.__setattr__
        for name in ("iou_thresholds", "recall_thresholds", "keypoint_sigmas"):
            set_(self, name, getattr(coco, name))
        if not isinstance(self.use_area, (bool, np.bool_)):
            raise OptionError("use_area", "must be True or False", got=self.use_area)
        set_(self, "use_area", bool(self.use_area))
        limits = np.asarray(self.crowd_index_limits, dtype=np.float64)
        if limits.shape != (2,) or not np.isfinite(limits).all():
            raise OptionError("crowd_index_limits", "must be two finite numbers",
                              got=self.crowd_index_limits)
        set_(self, "crowd_index_limits", (float(limits[0]), float(limits[1])))

    def coco_params(self) -> COCOParams:
        """The COCO keypoint settings the evaluation runs with (maxDets 20, three ranges)."""
        return COCOParams(iou_type="keypoints", iou_thresholds=self.iou_thresholds,
                          recall_thresholds=self.recall_thresholds,
                          max_detections=(_MAX_DETS,), area_ranges=_AREA_RANGES,
                          area_labels=_AREA_LABELS, keypoint_sigmas=self.keypoint_sigmas)


#: The CrowdPose settings of xtcocotools and mmpose.
CROWDPOSE = CrowdPoseParams()


@dataclass(frozen=True, eq=False)
class CrowdPoseResult(ReadOnlyArrays):
    """Result of :func:`evaluate_crowdpose`.

    Attributes
    ----------
    params : CrowdPoseParams
    stats : ndarray, shape (9,)
        :data:`CROWDPOSE_STAT_NAMES`: AP, AP50, AP75, AR, AR50, AR75 (-1 if undefined), then
        AP(easy), AP(medium), AP(hard) rounded to 4 decimals (-1 for a split without
        images or ground truth).
    precision : ndarray, shape (T, R, K, 3, 1)
    recall : ndarray, shape (T, K, 3, 1)
    scores : ndarray, shape (T, R, K, 3, 1)
        Of the whole evaluation; area ranges all, medium, large; maxDets 20.
    split_precision : dict of str to ndarray
        ``precision`` of each split's evaluation ("easy", "medium", "hard").
    split_image_ids : dict of str to ndarray
        The image ids of each split.
    category_ids : ndarray, shape (K,)
    category_names : tuple of str
    crowd_index : ndarray, shape (n_images,)
        Of each row of ``dataset.images``.
    matches : MatchTable
        Rows refer to ``dataset.gt`` and ``detections``.
    dataset : Dataset
    detections : Detections
        The detections evaluated: those with a keypoint score above 0.
    notes : tuple of str
    timings : dict
    """

    params: CrowdPoseParams
    stats: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray
    split_precision: dict
    split_image_ids: dict
    crowd_index: np.ndarray
    dataset: Dataset
    detections: Detections
    category_ids: np.ndarray
    category_names: tuple[str, ...]
    matches: MatchTable
    notes: tuple[str, ...] = ()
    timings: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("stats", "precision", "recall", "scores", "category_ids", "crowd_index"):
            getattr(self, name).setflags(write=False)
        for table in (self.split_precision, self.split_image_ids):
            for value in table.values():
                value.setflags(write=False)

    @property
    def stat_names(self) -> tuple[str, ...]:
        """:data:`CROWDPOSE_STAT_NAMES`."""
        return CROWDPOSE_STAT_NAMES

    @property
    def stats_named(self) -> dict[str, float]:
        """The stats by name."""
        return {n: float(s) for n, s in zip(CROWDPOSE_STAT_NAMES, self.stats)}

    def stat(self, name: str) -> float:
        """One of the stats by name (``"AP"``, ``"AP_hard"``, ...)."""
        if name not in CROWDPOSE_STAT_NAMES:
            raise KeyError(f"unknown stat {name!r}; choose one of "
                           f"{', '.join(CROWDPOSE_STAT_NAMES)}")
        return self.stats_named[name]

    @property
    def summary_lines(self) -> list[str]:
        """The 9 lines xtcocotools' ``summarize()`` prints, character for character."""
        thresholds = self.params.iou_thresholds
        span = f"{thresholds[0]:0.2f}:{thresholds[-1]:0.2f}"
        lines = []
        for (is_ap, iou), value in zip(_STAT_SPECS, self.stats):
            title, kind = ("Average Precision", "(AP)") if is_ap else ("Average Recall", "(AR)")
            iou_text = span if iou is None else f"{iou:0.2f}"
            lines.append(f" {title:<18} {kind} @[ IoU={iou_text:<9} | area={'all':>6s} | "
                         f"maxDets={_MAX_DETS:>3d} ] = {value: 0.3f}")
        for split, value in zip(_SPLITS, self.stats[6:]):
            lines.append(f" {'Average Precision':<18} (AP) @[ IoU={span:<9} | type={split:>6s} "
                         f"| maxDets={_MAX_DETS:>3d} ] = {value:0.3f}")
        return lines

    def summary(self) -> str:
        """The summary text, identical line for line to xtcocotools' ``summarize()``."""
        return "\n".join(self.summary_lines)

    def per_class(self) -> list[dict[str, Any]]:
        """Per-category AP, AP50, AP75 and AR (area "all", maxDets 20; -1 where undefined)."""
        p = self.params.coco_params()
        table_row = index_in(self.category_ids, self.dataset.categories.ids)
        gt_rows = self.dataset.gt.category_index
        rows = []
        for k, (cid, name) in enumerate(zip(self.category_ids.tolist(), self.category_names)):
            row: dict[str, Any] = {"category_id": cid, "name": name}
            for label, iou in (("AP", None), ("AP50", 0.5), ("AP75", 0.75)):
                row[label] = summarize_value(self.precision[:, :, k:k + 1], p, iou, "all", None)
            row["AR"] = summarize_value(self.recall[:, k:k + 1], p, None, "all", None)
            row["n_gt"] = int(np.count_nonzero(gt_rows == table_row[k]))
            row["n_detections"] = int(np.count_nonzero(
                self.detections.category_index == table_row[k]))
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: stats (named and in order), summary lines, per-class table,
        the image count of each split."""
        settings = dataclasses.asdict(self.params)
        return dict(stats=self.stats.tolist(), stats_named=self.stats_named,
                    summary=self.summary_lines, per_class=self.per_class(),
                    split_images={k: len(v) for k, v in self.split_image_ids.items()},
                    notes=list(self.notes),
                    params={k: list(v) if isinstance(v, tuple) else v
                            for k, v in settings.items()})

    def to_frame(self, *, iou_threshold: float | str | None = None, outcomes: bool = True):
        """One row per detection and per object, as a pandas DataFrame (needs
        ``deteval[frame]``); see :func:`deteval.tidy.tidy_columns` and docs/tidy-export.md."""
        from ..tidy import to_frame

        return to_frame(self, iou_threshold=iou_threshold, outcomes=outcomes)

    def to_arrow(self, *, iou_threshold: float | str | None = None, outcomes: bool = True):
        """The rows of :meth:`to_frame` as a pyarrow Table (needs ``deteval[frame]``)."""
        from ..tidy import to_arrow

        return to_arrow(self, iou_threshold=iou_threshold, outcomes=outcomes)


def read_crowd_index(source: str | os.PathLike | dict) -> dict[int, float]:
    """The ``crowdIndex`` of every image of a CrowdPose ground-truth file (or its dict).

    Returns
    -------
    dict of int to float
        ``{image_id: crowdIndex}``.

    Raises
    ------
    FormatError
        An image without a numeric ``crowdIndex`` (the message names the file and record).

    Examples
    --------
    >>> read_crowd_index({"images": [{"id": 3, "crowdIndex": 0.25}]})
    {3: 0.25}
    """
    from ..io._json import number_column, source_name

    name = source_name(source)
    if isinstance(source, dict):
        images = source.get("images")
    else:
        images = _typed_images(source)
        if images is None:
            from ..io._json import load_json

            data = load_json(source, what="ground-truth").data
            images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list):
        raise FormatError("a CrowdPose ground-truth file needs an 'images' list", source=name)
    ids = number_column(images, "id", np.int64, source=name, section="images")
    values = number_column(images, "crowdIndex", np.float64, source=name, section="images")
    return dict(zip(ids.tolist(), values.tolist()))


def _typed_images(path: str | os.PathLike) -> list | None:
    """The images' ``id`` and ``crowdIndex`` by msgspec (the rest of the file skipped), or
    None when the file is not in that shape (the general reader then words the error)."""
    from ..io._json import read_json_bytes, typed_decode

    decoded = typed_decode(_DECODER, read_json_bytes(path, what="ground-truth"))
    if decoded is None:
        return None
    return [{"id": image.id, "crowdIndex": image.crowdIndex} for image in decoded.images]


class _Image(msgspec.Struct, gc=False):
    id: int
    crowdIndex: float           # noqa: N815 (the file's key)


class _File(msgspec.Struct, gc=False):
    images: list[_Image]


_DECODER = msgspec.json.Decoder(_File)


def _crowd_index_of_rows(dataset: Dataset, crowd_index: Any) -> np.ndarray:
    """``crowd_index`` ({image_id: value} or one value per image row) per image row."""
    images = dataset.images
    if isinstance(crowd_index, dict):
        ids = np.fromiter(crowd_index.keys(), dtype=np.int64, count=len(crowd_index))
        values = np.fromiter(crowd_index.values(), dtype=np.float64, count=len(crowd_index))
        row = index_in(images.ids, ids)
        missing = np.flatnonzero(row < 0)
        if len(missing):
            raise FormatError(f"image {int(images.ids[missing[0]])} has no crowdIndex",
                              source=dataset.source, record=f"images[{missing[0]}]")
        out = values[row]
    else:
        out = np.asarray(crowd_index, dtype=np.float64)
        if out.shape != (len(images),):
            raise OptionError("crowd_index", f"must give one value per image "
                              f"({len(images)}) or be a dict {{image_id: value}}",
                              got=f"shape {out.shape}")
    if not np.isfinite(out).all():
        raise OptionError("crowd_index", "must hold finite numbers",
                          got=out[~np.isfinite(out)][0])
    return out


def evaluate_crowdpose(gt: Any, dt: Any, *, params: CrowdPoseParams | None = None,
                       crowd_index: Any = None, match_by: str = "auto",
                       **options: Any) -> CrowdPoseResult:
    """Evaluate keypoint results with the CrowdPose protocol, equal to xtcocotools'.

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
        CrowdPose ground truth: a file or its dict (the images' ``crowdIndex`` is read from
        it), or a :class:`~deteval.data.Dataset` read with ``iou_type="keypoints"`` (then
        give ``crowd_index``).
    dt : Detections, str, PathLike, list or dict
        Keypoint results (COCO results format).
    params : CrowdPoseParams, optional
        Base settings (default :data:`CROWDPOSE`); the keyword options replace its fields.
    crowd_index : dict {image_id: float} or array of shape (n_images,), optional
        Each image's crowd index, instead of the file's ``crowdIndex``.
    match_by : {"auto", "id", "name"}
        As for :func:`~deteval.evaluate_coco`.
    **options
        Fields of :class:`CrowdPoseParams`.

    Returns
    -------
    CrowdPoseResult

    Raises
    ------
    FormatError
        Unreadable input, an image without ``crowdIndex``, objects without
        ``num_keypoints``.
    ValueError, TypeError
        Invalid settings; sigmas that do not match the keypoint count.

    Notes
    -----
    The easy / medium / hard split covers every image of the ground truth. The inputs are
    never modified.
    """
    started = time.perf_counter()
    unknown = set(options) - {f.name for f in dataclasses.fields(CrowdPoseParams)}
    if unknown:
        raise TypeError(f"evaluate_crowdpose() got unknown option(s): "
                        f"{', '.join(sorted(unknown))}")
    p = dataclasses.replace(params or CROWDPOSE, **options)
    if crowd_index is None:
        if isinstance(gt, Dataset):
            raise TypeError("evaluate_crowdpose needs each image's crowdIndex: pass the file "
                            "(or its dict), or crowd_index={image_id: value}")
        crowd_index = read_crowd_index(gt)
    dataset, detections, load_notes = load_coco_pair(gt, dt, "keypoints", "raise", match_by)
    crowd = _crowd_index_of_rows(dataset, crowd_index)
    # xtcocotools' _prepare: a result without any keypoint score above 0 is dropped.
    scored = (detections.keypoints[:, :, 2] > 0).any(axis=1) if len(detections) else \
        np.zeros(0, bool)
    n_dropped = int(len(detections) - np.count_nonzero(scored))
    if n_dropped:
        detections = detections[scored]
    scaled = scaled_dataset(dataset, p)
    loaded = time.perf_counter()

    cp = p.coco_params()
    ctx = prepare(scaled, cp)
    matched = match_stage(ctx, detections)
    precision, recall, scores = accumulate_stage(ctx, matched.state)
    stats = headline_stats(precision, recall, ctx.params)
    first, second = p.crowd_index_limits
    split_rows = {"easy": crowd < first, "medium": (crowd >= first) & (crowd < second),
                  "hard": crowd >= second}
    split_ids, split_precision = {}, {}
    for split in _SPLITS:
        ids = np.sort(dataset.images.ids[split_rows[split]])
        split_ids[split] = ids
        split_precision[split] = _split_precision(scaled, cp, matched.state, ctx, ids)
        # xtcocotools: round(np.mean(precision[:, :, :, 0, :]), 4), -1 entries included.
        stats.append(round(np.mean(split_precision[split][:, :, :, 0, :]), 4))
    finished = time.perf_counter()

    names_by_id = dict(zip(dataset.categories.ids.tolist(), dataset.categories.names))
    # The reader's note on objects without 'area' only matters when the area is read.
    notes = [n for n in load_notes if p.use_area or "have no 'area'" not in n]
    notes += _dropped_notes(n_dropped)
    return CrowdPoseResult(
        params=p, stats=np.array(stats, dtype=np.float64), precision=precision,
        recall=recall, scores=scores, split_precision=split_precision,
        split_image_ids=split_ids, category_ids=ctx.category_ids.copy(),
        category_names=tuple(names_by_id.get(c, str(c)) for c in ctx.category_ids.tolist()),
        crowd_index=crowd, matches=matched.table, dataset=dataset, detections=detections,
        notes=tuple(notes),
        timings={"load": loaded - started, "evaluate": finished - loaded,
                 "total": finished - started})


def headline_stats(precision: np.ndarray, recall: np.ndarray, p: COCOParams) -> list[float]:
    """AP, AP50, AP75, AR, AR50, AR75 (area "all", maxDets 20) of ``precision`` and
    ``recall`` (``p``: the prepared COCO settings), xtcocotools' summary."""
    return [summarize_value(precision if is_ap else recall, p, iou, "all", None)
            for is_ap, iou in _STAT_SPECS]


def scaled_dataset(dataset: Dataset, p: CrowdPoseParams) -> Dataset:
    """``dataset`` with the object areas the protocol reads: ``h * w * 0.53`` of each box
    unless ``p.use_area``."""
    if p.use_area:
        return dataset
    xywh = dataset.gt.as_xywh()
    return dataclasses.replace(dataset, gt=dataset.gt.replace(area=xywh[:, 3] * xywh[:, 2]
                                                              * 0.53))


def _split_precision(dataset: Dataset, cp: COCOParams, state, ctx, image_ids: np.ndarray
                     ) -> np.ndarray:
    """``precision`` of the evaluation restricted to ``image_ids``: matching is per image, so
    the split keeps the whole evaluation's rows of those images; the positives are those of
    the split's objects."""
    split_ctx = prepare(dataset, dataclasses.replace(cp, image_ids=tuple(image_ids.tolist())))
    in_split = np.zeros(len(ctx.image_ids) + 1, dtype=bool)
    in_split[index_in(image_ids, ctx.image_ids)] = True
    in_split[-1] = False        # (index -1 of an id outside the evaluation lands here)
    rows = np.flatnonzero(in_split[np.asarray(state.image, dtype=np.int64)])
    precision, _, _ = accumulate_stage(split_ctx, state.select(rows))
    return precision


def unscored_notes(detections: Detections) -> tuple[str, ...]:
    """The note :func:`evaluate_crowdpose` gives on the results xtcocotools drops (no keypoint
    score above 0), for the diagnostics that apply the rule without evaluating (``deteval
    errors --protocol crowdpose``).

    Examples
    --------
    >>> from deteval.data import Detections
    >>> dt = Detections(image_index=[0, 0], category_index=[0, 0], scores=[0.9, 0.8],
    ...                 boxes=[[0.0, 0.0, 2.0, 2.0]] * 2,
    ...                 keypoints=[[[1.0, 1.0, 0.0]], [[1.0, 1.0, 1.0]]])
    >>> unscored_notes(dt)
    ('1 result(s) dropped: no keypoint score above 0 (xtcocotools drops them too)',)
    """
    if not len(detections):
        return ()
    return tuple(_dropped_notes(int(np.count_nonzero(
        ~(detections.keypoints[:, :, 2] > 0).any(axis=1)))))


def _dropped_notes(n_dropped: int) -> list[str]:
    return ([f"{n_dropped} result(s) dropped: no keypoint score above 0 (xtcocotools drops "
             "them too)"] if n_dropped else [])
