"""COCO numbers for subsets of the images and of the objects ("slices").

Two kinds of slice, both read from the COCO protocol's own stages (no second matcher):

* **Image slices** group the images by a key of the ground truth's ``images`` records
  (``weather``, ``location``, ...) or of a tags file (CSV or JSON mapping an image id or file
  name to tags). A slice's numbers are those of :func:`~deteval.evaluate_coco` restricted to
  its images (``image_ids``), exactly: matching is per image, so the slice selects the
  images' rows of the match table's state and accumulates them again (no re-matching).
* **Object slices** split the objects by a property: ``size`` (the protocol's area ranges),
  ``aspect`` (box width / height), ``crowding`` (how many objects the box overlaps) and
  ``truncation`` (the box touches the image border). They follow COCO's area-range rule,
  generalised from area to the property: an object outside the slice is ignored (a
  detection matched to it is ignored too) and an unmatched detection whose own property is
  outside the slice is ignored, not a false positive. Ignored objects change who matches
  whom, so each property is matched once, all its slices at once, by the COCO stages with
  the property in place of the area; a slice then equals :func:`~deteval.evaluate_coco` with
  that custom area range on objects and detections whose area is the property.

The rules, defaults and bounds are in ``docs/diagnostics/slices.md``.

>>> import deteval
>>> from deteval.demo import make_demo
>>> gt, dt = make_demo(seed=0, n_images=6)
>>> for i, image in enumerate(gt["images"]):
...     image["weather"] = "rain" if i % 2 else "sun"
>>> result = deteval.slices(gt, dt, by=["weather", "size"])
>>> [(s.key, s.value, s.n_images) for s in result][:3]
[('weather', 'rain', 3), ('weather', 'sun', 3), ('size', 'small', 5)]
>>> rain = deteval.evaluate_coco(gt, dt, image_ids=[im["id"] for im in gt["images"][1::2]])
>>> result.get("weather", "rain").stats["AP"] == float(rain.stats[0])
True
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._arrays import ReadOnlyArrays
from .._validation import number
from ..data import Dataset, index_in
from ..errors import FormatError

__all__ = ["ASPECT_BINS", "CROWDING_BINS", "OBJECT_SLICES", "TRUNCATION_BINS", "Slice",
           "SlicesResult", "image_slice_result", "object_slice_result", "slices", "tag_keys"]

#: The object properties, in the order they are listed.
OBJECT_SLICES = ("size", "aspect", "crowding", "truncation")
#: Default aspect-ratio slices: (label, lowest, highest) width / height, bounds inclusive.
ASPECT_BINS = (("tall", 0.0, 0.5), ("square", 0.5, 2.0), ("wide", 2.0, math.inf))
#: Crowding slices by the number of objects a box overlaps (an object overlaps itself).
CROWDING_BINS = (("isolated", 0.0, 1.0), ("crowded", 2.0, math.inf))
#: Truncation slices: 1 where the box touches the image border.
TRUNCATION_BINS = (("inside", 0.0, 0.0), ("truncated", 1.0, 1.0))

_OBJECT_STATS = ("AP", "AP50", "AP75", "AR")


@dataclass(frozen=True)
class Slice:
    """The numbers of one slice.

    Attributes
    ----------
    key : str
        The image key (``"weather"``) or object property (``"size"``).
    value : str
        The slice's value of it (``"rain"``, ``"small"``).
    kind : {"image", "object"}
    n_images : int
        Images in the slice (object slices: images holding one of its objects).
    n_gt : int
        Objects counted as positives (not ignored), over the evaluated categories.
    n_detections : int
        Detections evaluated in the slice (object slices: those whose own property is in
        the slice's range).
    stats : dict of str to float
        Image slices: the 12 COCO stats by name (or the 10 keypoint ones); object slices:
        ``AP``, ``AP50``, ``AP75`` and ``AR`` at the summary's max-detections setting. -1
        where undefined, as in pycocotools.
    bounds : tuple of float, or None
        Object slices: the inclusive (lowest, highest) values of the property.
    interval : tuple of float, or None
        A confidence interval of ``stats["AP"]``: image slices, when :func:`slices` was
        given an ``interval`` function.
    """

    key: str
    value: str
    kind: str
    n_images: int
    n_gt: int
    n_detections: int
    stats: dict = field(default_factory=dict)
    bounds: tuple | None = None
    interval: tuple | None = None

    @property
    def ap(self) -> float:
        return float(self.stats.get("AP", -1.0))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (infinite bounds written as None)."""
        out = dataclasses.asdict(self)
        if self.bounds is not None:
            out["bounds"] = [None if math.isinf(b) else b for b in self.bounds]
        if self.interval is not None:
            out["interval"] = list(self.interval)
        return out


@dataclass(frozen=True, eq=False)
class SlicesResult(ReadOnlyArrays):
    """Result of :func:`slices`: the slices in order (keys as asked, values sorted, object
    slices in their bins' order), iterable.

    Attributes
    ----------
    slices : tuple of Slice
    overall : dict of str to float
        The stats of the whole evaluation, by name.
    settings : dict
        ``crowding_iou``, ``border``, ``aspect_bins`` and the protocol's ``iou_type``.
    notes : tuple of str
        What was left out and why (untagged images, tags of images not in the ground truth,
        a property that could not be computed).
    """

    slices: tuple[Slice, ...]
    overall: dict
    settings: dict
    notes: tuple[str, ...] = ()

    def __iter__(self):
        return iter(self.slices)

    def __len__(self) -> int:
        return len(self.slices)

    def get(self, key: str, value: str) -> Slice:
        """The slice ``key == value``; ``KeyError`` if there is none."""
        for s in self.slices:
            if s.key == key and s.value == value:
                return s
        raise KeyError(f"no slice {key}={value}")

    def worst(self, n: int = 5, *, metric: str = "AP") -> list[Slice]:
        """The ``n`` slices with the lowest ``metric`` (undefined ones, -1, left out); ties in
        slice order."""
        defined = [s for s in self.slices if s.stats.get(metric, -1.0) >= 0]
        return sorted(defined, key=lambda s: s.stats[metric])[:max(int(n), 0)]

    def table(self) -> list[dict[str, Any]]:
        """One flat row per slice: key, value, kind, counts, AP, AP50, AP75, AR."""
        rows = []
        for s in self.slices:
            ar = s.stats.get("AR", s.stats.get("AR100", -1.0))
            rows.append({"key": s.key, "value": s.value, "kind": s.kind,
                         "n_images": s.n_images, "n_gt": s.n_gt,
                         "n_detections": s.n_detections,
                         **{name: s.stats.get(name, -1.0) for name in _OBJECT_STATS[:3]},
                         "AR": ar, "interval": None if s.interval is None else list(s.interval)})
        return rows

    def to_dict(self, *, worst: int = 5) -> dict[str, Any]:
        """JSON-ready: ``overall``, ``slices`` (every :class:`Slice`), ``worst`` (the
        ``worst`` lowest-AP slices as ``key=value``), ``settings`` and ``notes``."""
        settings = dict(self.settings)
        settings["aspect_bins"] = [[label, lo, None if math.isinf(hi) else hi]
                                   for label, lo, hi in settings.get("aspect_bins", ())]
        return {"overall": dict(self.overall), "slices": [s.to_dict() for s in self.slices],
                "worst": [f"{s.key}={s.value}" for s in self.worst(worst)],
                "settings": settings, "notes": list(self.notes)}


# ------------------------------------------------------------------------------------------
# The COCO stages, read again
# ------------------------------------------------------------------------------------------


def _base(result: Any):
    """The context and the matched state of a COCO result, from its own match table."""
    from ..protocols._coco_stages import prepare, state_of_result

    ctx = prepare(result.dataset, result.params)
    return ctx, state_of_result(ctx, result)


def image_slice_result(result: Any, image_ids: Any, *, _base_state: Any = None) -> Any:
    """The :class:`~deteval.COCOResult` of ``result`` restricted to some images.

    Equal, array for array, to :func:`~deteval.evaluate_coco` with the same settings and
    ``image_ids`` the evaluated images among ``image_ids``; computed from ``result``'s match
    table without matching again. Its ``matches`` and ``detections`` are None.

    Parameters
    ----------
    result : COCOResult
        From :func:`~deteval.evaluate_coco` (it keeps its match table).
    image_ids : sequence of int
    """
    from ..protocols._coco_stages import prepare
    from ..protocols.coco import finish

    started = time.perf_counter()
    _check_result(result)
    ctx, state = _base(result) if _base_state is None else _base_state
    ids = np.intersect1d(ctx.image_ids, np.asarray(image_ids, dtype=np.int64))
    sub_ctx = prepare(result.dataset, dataclasses.replace(ctx.params, image_ids=tuple(
        ids.tolist())))
    new_pos = index_in(ctx.image_ids, sub_ctx.image_ids)
    position = new_pos[np.asarray(state.image, dtype=np.int64)]
    rows = np.flatnonzero(position >= 0)
    sub = state.select(rows)
    sub = dataclasses.replace(sub, image=position[rows])
    now = time.perf_counter()
    return finish(sub_ctx, sub, n_detections=len(rows), n_unknown=0, matches=None,
                  detections=None, times=(started, started, now))


def object_slice_result(result: Any, gt_values: Any, dt_values: Any,
                        bins: Any) -> Any:
    """The COCO evaluation of ``result``'s inputs with a property in place of the area.

    Parameters
    ----------
    result : COCOResult
    gt_values : array of float, shape (n_gt,)
        The property of each object (rows of ``result.dataset.gt``).
    dt_values : array of float, shape (n_dt,)
        The property of each detection (rows of ``result.detections``).
    bins : sequence of (label, lowest, highest)
        The slices, inclusive bounds; they become the area ranges and labels.

    Returns
    -------
    COCOResult
        Its area axis holds the slices; everything else is ``result``'s settings. Equal to
        :func:`~deteval.evaluate_coco` on objects and detections whose ``area`` is the
        property, with ``area_ranges`` the bins.
    """
    from ..protocols._coco_stages import match_stage, prepare
    from ..protocols.coco import finish

    started = time.perf_counter()
    _check_result(result)
    dataset, detections = result.dataset, result.detections
    gt = dataset.gt.replace(area=np.asarray(gt_values, dtype=np.float64))
    dt = detections.replace(area=np.asarray(dt_values, dtype=np.float64))
    p = dataclasses.replace(result.params, area_ranges=tuple((lo, hi) for _, lo, hi in bins),
                            area_labels=tuple(str(label) for label, _, _ in bins))
    ctx = prepare(dataclasses.replace(dataset, gt=gt), p)
    matched = match_stage(ctx, dt)
    now = time.perf_counter()
    return finish(ctx, matched.state, n_detections=len(dt), n_unknown=0,
                  matches=matched.table, detections=dt, times=(started, started, now))


def _check_result(result: Any) -> None:
    if result.matches is None or result.detections is None:
        raise ValueError("this COCOResult keeps no match table (Evaluator.compute); evaluate "
                         "with evaluate_coco, or pass the ground truth and detections")


# ------------------------------------------------------------------------------------------
# Object properties
# ------------------------------------------------------------------------------------------


def aspect_ratios(xywh: np.ndarray) -> np.ndarray:
    """Width / height of each box, shape (n,): the largest float for a zero height (areas
    are finite), -1 (in no slice) for a box without width and height.

    >>> aspect_ratios(np.array([[0, 0, 4, 2], [5, 5, 1, 4.0]])).tolist()
    [2.0, 0.25]
    """
    w, h = xywh[:, 2], xywh[:, 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = w / h
    ratio = np.where(np.isinf(ratio), np.finfo(np.float64).max, ratio)
    return np.where(np.isnan(ratio), -1.0, ratio)


def overlap_counts(xywh: np.ndarray, image: np.ndarray, gt_xywh: np.ndarray,
                   gt_image: np.ndarray, threshold: float, *,
                   chunk_pairs: int = 1 << 16) -> np.ndarray:
    """How many of the given objects each box overlaps with box IoU ``> threshold``, in its
    image; shape (n,). Pairs are formed image block by image block (at most about
    ``chunk_pairs`` at a time).

    >>> objects = np.array([[0, 0, 10, 10], [5, 0, 10, 10], [50, 50, 5, 5.0]])
    >>> overlap_counts(objects, np.array([0, 0, 0]), objects, np.array([0, 0, 0]), 0.1).tolist()
    [2, 2, 1]
    """
    from ..iou import coco_pair_iou
    from ..outcomes import same_image_pairs

    n = len(xywh)
    counts = np.zeros(n, dtype=np.int64)
    if n == 0 or len(gt_xywh) == 0:
        return counts
    n_images = int(max(image.max(), gt_image.max())) + 1
    per_row = np.bincount(gt_image, minlength=n_images)[image]
    order = np.argsort(image, kind="stable")
    cum = np.cumsum(per_row[order])
    # Cut between images only: a block ends at the last row of an image.
    last_of_image = np.r_[image[order][1:] != image[order][:-1], True]
    cuts = np.searchsorted(cum, np.arange(chunk_pairs, int(cum[-1]) + chunk_pairs,
                                          chunk_pairs), side="right")
    ends = np.unique(np.r_[np.flatnonzero(last_of_image)[
        np.searchsorted(np.flatnonzero(last_of_image), np.minimum(cuts, n - 1))], n - 1])
    gt_rows = np.arange(len(gt_xywh))
    start = 0
    for end in ends.tolist():       # a few blocks, not a loop per image
        rows = order[start:end + 1]
        start = end + 1
        pair_dt, pair_gt = same_image_pairs(rows, image, gt_rows, gt_image)
        iou = coco_pair_iou(xywh.take(pair_dt, axis=0), gt_xywh.take(pair_gt, axis=0),
                            np.zeros(len(pair_dt), bool))
        counts += np.bincount(pair_dt[iou > threshold], minlength=n)
    return counts


def touches_border(xywh: np.ndarray, width: np.ndarray, height: np.ndarray,
                   border: float) -> np.ndarray:
    """1.0 where the box is within ``border`` pixels of its image's edge, else 0.0.

    >>> touches_border(np.array([[0, 5, 10, 10], [5, 5, 10, 10.0]]), np.array([20.0, 20]),
    ...                np.array([20.0, 20]), 1.0).tolist()
    [1.0, 0.0]
    """
    x, y, w, h = xywh.T
    touch = (x <= border) | (y <= border) | (x + w >= width - border) | (
        y + h >= height - border)
    return touch.astype(np.float64)


def _property(name: str, result: Any, settings: dict) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Values of an object property for the objects and the detections, and its bins."""
    dataset, detections = result.dataset, result.detections
    gt = dataset.gt
    gt_xywh, dt_xywh = gt.as_xywh(), detections.as_xywh()
    if name == "aspect":
        return aspect_ratios(gt_xywh), aspect_ratios(dt_xywh), settings["aspect_bins"]
    if name == "crowding":
        t = settings["crowding_iou"]
        regular = np.flatnonzero(~gt.iscrowd)
        g_img, r_xywh = gt.image_index[regular], gt_xywh[regular]
        return (overlap_counts(gt_xywh, gt.image_index, r_xywh, g_img, t).astype(np.float64),
                overlap_counts(dt_xywh, detections.image_index, r_xywh, g_img, t).astype(
                    np.float64), CROWDING_BINS)
    images = dataset.images
    border = settings["border"]
    return (touches_border(gt_xywh, images.widths[gt.image_index],
                           images.heights[gt.image_index], border),
            touches_border(dt_xywh, images.widths[detections.image_index],
                           images.heights[detections.image_index], border), TRUNCATION_BINS)


def _object_slices(name: str, result: Any, settings: dict) -> list[Slice]:
    """The slices of one object property: the result's own area ranges for ``size``, one
    matching with the property in place of the area otherwise."""
    from ..protocols.coco import summarize_value

    if name == "size":
        p = result.params
        bins = tuple((label, lo, hi) for label, (lo, hi) in zip(p.area_labels, p.area_ranges)
                     if label != "all")
        evaluated = result
    else:
        gt_values, dt_values, bins = _property(name, result, settings)
        evaluated = object_slice_result(result, gt_values, dt_values, bins)
        p = evaluated.params
    m = None if p.iou_type == "keypoints" else min(2, len(p.max_detections) - 1)
    table, image_index = evaluated.matches, result.dataset.gt.image_index
    out = []
    for label, lo, hi in bins:
        a = list(p.area_labels).index(label)
        inside = ~table.gt_ignore[a] & table.gt_evaluated
        stats = {"AP": summarize_value(evaluated.precision, p, None, label, m),
                 "AP50": summarize_value(evaluated.precision, p, 0.5, label, m),
                 "AP75": summarize_value(evaluated.precision, p, 0.75, label, m),
                 "AR": summarize_value(evaluated.recall, p, None, label, m)}
        out.append(Slice(
            key=name, value=str(label), kind="object",
            n_images=len(np.unique(image_index[inside])), n_gt=int(np.count_nonzero(inside)),
            n_detections=int(np.count_nonzero(table.dt_kept & ~table.dt_out_of_range[a])),
            stats=stats, bounds=(float(lo), float(hi))))
    return out


# ------------------------------------------------------------------------------------------
# Image tags
# ------------------------------------------------------------------------------------------

_REFERENCE_KEYS = ("image_id", "id", "file_name")


def _label(value: Any) -> list[str]:
    """The slice labels of one tag value: a string as it is, a list one label per element,
    other JSON values as JSON; None (or an empty cell) none."""
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [label for item in value for label in _label(item)]
    if isinstance(value, str):
        return [value]
    return [json.dumps(value, sort_keys=True)]


def _records(source: Any) -> tuple[list[dict], str]:
    """Tag records (dicts naming their image) and where they come from."""
    where = "tags"
    if isinstance(source, (str, os.PathLike)):
        where = os.fspath(source)
        if where.lower().endswith(".csv"):
            from ..io._common import read_text

            # read_text: regular files only, UTF-8 (errors name the file and line)
            text = read_text(where, what="tags", allow_empty=True)
            rows = list(csv.DictReader(io.StringIO(text, newline="")))
            if rows and not any(k in rows[0] for k in _REFERENCE_KEYS):
                raise FormatError("a tags CSV needs an image_id or file_name column; its "
                                  f"header is {', '.join(rows[0])}", source=where,
                                  record="header")
            return rows, where
        from ..io._json import load_json

        source = load_json(where, what="tags").data
    if isinstance(source, dict) and isinstance(source.get("images"), list):
        return source["images"], where
    if isinstance(source, dict):
        records = []
        for image, tags in source.items():
            tags = tags if isinstance(tags, dict) else {"tags": tags}
            records.append({"__image__": image, **tags})
        return records, where
    if isinstance(source, (list, tuple)) and all(isinstance(r, dict) for r in source):
        return list(source), where
    raise FormatError("tags must be a CSV or JSON file, a mapping {image id or file name: "
                      "tags}, a list of image records, or a COCO dict with 'images'; got "
                      f"{type(source).__name__}", source=where if where != "tags" else None)


def tag_keys(source: Any) -> list[str]:
    """The keys a tags source gives (first appearance order), its image references aside."""
    records, _ = _records(source)
    keys: dict[str, None] = {}
    for record in records:
        keys.update((k, None) for k in record if k not in (*_REFERENCE_KEYS, "__image__"))
    return list(keys)


class _ImageLookup:
    """Image rows by id (as text, and the source's string ids) and by file name."""

    def __init__(self, dataset: Dataset):
        images = dataset.images
        self.rows: dict[str, int] = {}
        for row, name in enumerate(images.file_names):
            if name:
                self.rows.setdefault(name, row)
        strings = (dataset.string_ids or {}).get("image")
        if strings is not None:     # ids 1..n number the source's sorted string ids
            for image_id, text in zip(range(1, len(strings) + 1), strings):
                hits = np.flatnonzero(images.ids == image_id)
                if len(hits):
                    self.rows[str(text)] = int(hits[0])
        for row, image_id in enumerate(images.ids.tolist()):
            self.rows[str(image_id)] = row

    def row(self, record: dict) -> int:
        for key in ("__image__", *_REFERENCE_KEYS):
            if key in record and record[key] not in (None, ""):
                return self.rows.get(str(record[key]), -1)
        return -1



def tagged_groups(images: Any, tags: Any, image_keys: list[str] | None, dataset: Any,
                  notes: list[str], *, hint: bool = True) -> dict:
    """The image groups of ``image_keys`` (None: every key of ``tags``) read from the ground
    truth's records ``images`` (the named keys only) and ``tags``; a named key that gives no
    value on any image is a ValueError naming the files read (and, with ``hint`` and no
    source given, how to give one)."""
    sources = [(s, False) for s in (tags if isinstance(tags, list) and tags and not all(
        isinstance(r, dict) for r in tags) else ([] if tags is None else [tags]))]
    if images is not None and image_keys:
        sources.insert(0, (images, True))
    groups = _image_groups(sources, image_keys, dataset, notes)
    for key in image_keys or []:
        if key not in groups:
            files = [os.fspath(f) for f in [images, *(tags if isinstance(tags, list)
                                                      else [tags])]
                     if isinstance(f, (str, os.PathLike))]
            where = f" (read: {', '.join(files)})" if files else ""
            raise ValueError(f"no image record or tag gives a value for the key {key!r}{where}"
                             + ("" if not hint or images is not None or tags is not None else
                                " (give tags=, or images= with the ground truth's records)"))
    return groups


def _image_groups(sources: list, keys: list[str] | None, dataset: Dataset,
                  notes: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """{key: {label: image rows}} from the sources (later sources add to earlier ones)."""
    lookup = _ImageLookup(dataset)
    pairs: dict[str, list[tuple[int, str]]] = {}
    for source, only_asked in sources:
        records, where = _records(source)
        rows = [lookup.row(record) for record in records]
        missing = sum(1 for r in rows if r < 0)
        if missing and not only_asked:
            notes.append(f"{where}: {missing} tagged image(s) are not images of the ground "
                         "truth; left out")
        for row, record in zip(rows, records):
            if row < 0:
                continue
            for key, value in record.items():
                if key in (*_REFERENCE_KEYS, "__image__") or (
                        only_asked and (keys is None or key not in keys)):
                    continue
                pairs.setdefault(key, []).extend((row, label) for label in _label(value))
    groups = {}
    for key, found in pairs.items():
        if keys is not None and key not in keys or not found:
            continue    # (a key whose every value is null or empty gives no slice: refused)
        rows = np.array([r for r, _ in found], dtype=np.int64)
        labels = np.array([label for _, label in found], dtype=object)
        groups[key] = {str(label): np.unique(rows[labels == label])
                       for label in sorted(set(labels.tolist()))}
        untagged = len(dataset.images) - len(np.unique(rows))
        if untagged:
            notes.append(f"{key}: {untagged} image(s) have no value; they are in none of its "
                         "slices")
    return groups


# ------------------------------------------------------------------------------------------
# The entry point
# ------------------------------------------------------------------------------------------


def _aspect_bins(bins: Any) -> tuple:
    try:
        checked = tuple((str(label), float(lo), float(hi)) for label, lo, hi in bins)
    except (TypeError, ValueError):
        raise ValueError(f"aspect_bins must be (label, lowest, highest) triples; got {bins!r}"
                         ) from None
    labels = [label for label, _, _ in checked]
    if not checked or len(set(labels)) != len(labels) or any(
            not lo <= hi or math.isnan(lo) for _, lo, hi in checked):
        raise ValueError("aspect_bins must be non-empty triples with distinct labels and "
                         f"lowest <= highest; got {bins!r}")
    return checked


def _object_properties(by: list[str] | None, result: Any, notes: list[str]) -> list[str]:
    """The object properties to slice by: those asked, or every one that applies."""
    asked = [key for key in (by or ()) if key in OBJECT_SLICES]
    chosen = list(OBJECT_SLICES) if by is None else asked
    keypoints = result.params.iou_type == "keypoints"
    images = result.dataset.images
    no_size = bool(np.isnan(images.widths).any() or np.isnan(images.heights).any())
    kept = []
    for name in chosen:
        if name != "size" and keypoints:
            if name in asked:
                raise ValueError(f"slices by {name!r} are not available for keypoints: OKS "
                                 "reads the object area, which the property would replace")
            notes.append(f"{name}: not computed for keypoints (OKS reads the object area)")
            continue
        if name == "truncation" and no_size:
            missing = np.flatnonzero(np.isnan(images.widths) | np.isnan(images.heights))
            what = (f"image_id {int(images.ids[missing[0]])} and {len(missing) - 1} more"
                    if len(missing) > 1 else f"image_id {int(images.ids[missing[0]])}")
            if name in asked:
                raise ValueError(f"slices by truncation need each image's width and height; "
                                 f"{what} have none")
            notes.append(f"truncation: not computed, {what} have no width and height")
            continue
        kept.append(name)
    return kept


def slices(gt: Any, dt: Any = None, *, by: Any = None, tags: Any = None, images: Any = None,
           crowding_iou: float = 0.1, border: float = 1.0, aspect_bins: Any = ASPECT_BINS,
           interval: Any = None, **options: Any) -> SlicesResult:
    """COCO numbers per slice of the images (by tags) and of the objects (by property).

    Parameters
    ----------
    gt : Dataset, str, PathLike, dict or COCOResult
        Ground truth (then ``dt`` and ``options`` go to :func:`~deteval.evaluate_coco`), or
        a result of :func:`~deteval.evaluate_coco`, whose match table is reused. An
        ``LVISResult``, ``CrowdPoseResult``, ``OpenImagesResult`` or ``VOCResult`` is sliced
        by its own protocol (:func:`~deteval.diagnostics.slices_protocols.protocol_slices`:
        image keys, and ``size`` for LVIS and CrowdPose).
    dt : Detections, str, PathLike, list, dict or ndarray, optional
    by : str or sequence of str, optional
        What to slice by, in this order: an object property (``"size"``, ``"aspect"``,
        ``"crowding"``, ``"truncation"``) or an image key (of ``tags`` or of the ground
        truth's image records; write ``"image:size"`` for an image key named like a
        property). Default: every key of ``tags`` and every property that applies.
    tags : str, PathLike, mapping or list, or a list of these, optional
        Image tags: a CSV file (an ``image_id`` or ``file_name`` column, one column per
        key), a JSON file or object mapping an image id or file name to ``{key: value}``
        (or to a list of tags: key ``"tags"``), or a list of image records. A list value
        puts the image in several slices of its key.
    images : str, PathLike, dict or list, optional
        The ground truth's image records (a COCO file or dict, or the ``images`` list), for
        image keys named in ``by``. Default: ``gt`` when it is a file or a dict.
    crowding_iou : float, default 0.1
        Two boxes overlap when their IoU is above this.
    border : float, default 1.0
        A box within this many pixels of its image's edge is truncated.
    aspect_bins : sequence of (label, lowest, highest), default :data:`ASPECT_BINS`
        Width / height bounds, inclusive.
    interval : callable, optional
        ``interval(result, image_ids) -> (low, high)``: a confidence interval of the AP of
        ``result`` restricted to ``image_ids`` (a bootstrap over the images, say), called
        for every image slice with the evaluation's result; stored in ``Slice.interval``.
    **options
        For :func:`~deteval.evaluate_coco` (``iou_type``, ``use_categories``, ...).

    Returns
    -------
    SlicesResult
        ``worst()`` lists the slices of lowest AP.

    Raises
    ------
    ValueError, FormatError
        A key no tag or record has; a property that cannot be computed (no image sizes for
        truncation, keypoints); unreadable tags.
    """
    from ..protocols.coco import COCOResult, evaluate_coco

    if type(gt).__name__ in ("LVISResult", "CrowdPoseResult", "OpenImagesResult", "VOCResult"):
        from .slices_protocols import protocol_slices  # their rules: slices.md §7

        if dt is not None or options:
            raise TypeError("slices(result) takes no detections or options: the result's "
                            "are used")
        return protocol_slices(gt, by=by, tags=tags, images=images, interval=interval)
    if isinstance(gt, COCOResult):
        if dt is not None or options:
            raise TypeError("slices(result) takes no detections or options: the result's "
                            "are used")
        _check_result(gt)
        result = gt
    else:
        if dt is None:
            raise TypeError("slices() needs the detections (dt) with a ground truth")
        result = evaluate_coco(gt, dt, **options)
        if images is None and isinstance(gt, (str, os.PathLike, dict)):
            images = gt
    settings = {"crowding_iou": number("crowding_iou", crowding_iou, low=0.0, high=1.0),
                "border": number("border", border, low=0.0),
                "aspect_bins": _aspect_bins(aspect_bins), "iou_type": result.params.iou_type}
    if interval is not None and not callable(interval):
        raise TypeError(f"interval must be a function (result, image_ids) -> (low, high); "
                        f"got {type(interval).__name__}")
    if settings["crowding_iou"] >= 1:
        raise ValueError(f"crowding_iou must be below 1; got {crowding_iou!r}")
    keys = [by] if isinstance(by, str) else (None if by is None else [str(k) for k in by])
    notes: list[str] = []
    properties = _object_properties(keys, result, notes)
    image_keys = None if keys is None else [
        k[len("image:"):] if k.startswith("image:") else k for k in keys
        if k not in OBJECT_SLICES]
    groups = tagged_groups(images, tags, image_keys, result.dataset, notes)
    order = keys if keys is not None else [*groups, *properties]
    found: list[Slice] = []
    base = _base(result)
    for key in order:
        name = key[len("image:"):] if key.startswith("image:") else key
        if key in OBJECT_SLICES:
            if key in properties:
                found.extend(_object_slices(key, result, settings))
            continue
        found.extend(_image_slices(name, groups[name], result, base, interval))
    overall = {name: float(v) for name, v in zip(result.stat_names, result.stats)}
    return SlicesResult(slices=tuple(found), overall=overall, settings=settings,
                        notes=tuple(notes))


def _image_slices(key: str, groups: dict[str, np.ndarray], result: Any, base: Any,
                  interval: Any) -> list[Slice]:
    """One slice per value of an image key, each from the base state, no re-matching."""
    ctx = base[0]
    table, gt = result.matches, result.dataset.gt
    labels = list(result.params.area_labels)
    a = labels.index("all") if "all" in labels else 0
    counted = table.gt_evaluated & ~table.gt_ignore[a]
    evaluated_images = ctx.image_pos_of_row >= 0
    out = []
    for label, rows in groups.items():
        rows = rows[evaluated_images[rows]]
        sub = image_slice_result(result, result.dataset.images.ids[rows], _base_state=base)
        in_slice = np.zeros(len(result.dataset.images), dtype=bool)
        in_slice[rows] = True
        out.append(Slice(
            key=key, value=label, kind="image", n_images=len(rows),
            n_gt=int(np.count_nonzero(counted & in_slice[gt.image_index])),
            n_detections=int(sub.n_detections.sum()),
            stats={name: float(v) for name, v in zip(sub.stat_names, sub.stats)},
            interval=_interval(interval, result, result.dataset.images.ids[rows])))
    return out


def _interval(interval: Any, result: Any, image_ids: np.ndarray) -> tuple | None:
    """The interval function's (low, high) for a slice's images, checked; None without one.
    (The hook a bootstrap plugs into: deteval.diagnostics.bootstrap when it lands.)"""
    if interval is None:
        return None
    low, high = (float(v) for v in interval(result, image_ids.copy()))
    return (low, high)
