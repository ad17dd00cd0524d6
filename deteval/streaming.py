"""Streaming evaluation: update batch after batch, merge evaluators, compute once.

An :class:`Evaluator` matches each update's images as soon as it gets them and keeps only
what accumulation needs (the per-detection state of
:class:`~deteval.protocols._coco_stages.COCOState`: score, category, image, rank and the
match status per threshold and area range; about 25 bytes a detection); boxes and masks are
dropped. :meth:`Evaluator.compute` returns the :class:`~deteval.COCOResult` (or
:class:`~deteval.VOCResult`) that :func:`~deteval.evaluate_coco` gives for all the
detections at once, equal to the last bit whatever the batch split and the order of updates
and merges.

Rules:

* An update carries *all* the detections of the images it covers (matching is per image).
* An image given again with identical detections (DistributedSampler pads the last batch with
  repeated images) counts once, with a :class:`DuplicateImageWarning` that says how many; with
  different detections it is an error naming the image.
* A rejected update or merge leaves the evaluator unchanged.
* The ground-truth positives are those of every evaluated image (``image_ids``, default all),
  updated or not, as in pycocotools: an image never updated has no detections.

Examples
--------
>>> gt = {"images": [{"id": 1}, {"id": 2}], "categories": [{"id": 1, "name": "box"}],
...       "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
...                        "area": 100, "iscrowd": 0},
...                       {"id": 2, "image_id": 2, "category_id": 1, "bbox": [5, 5, 10, 10],
...                        "area": 100, "iscrowd": 0}]}
>>> evaluator = Evaluator(gt)
>>> evaluator.update({1: {"boxes": [[0, 0, 10, 9]], "scores": [0.9], "labels": [1]}})
>>> evaluator.update([{"image_id": 2, "boxes": [[5, 5, 15, 15]], "scores": [0.8],
...                    "labels": [1]}])
>>> result = evaluator.compute()
>>> float(result.stats[0])
0.9252475247524753

The same as one evaluation of everything (boxes xywh in result records):

>>> from deteval import evaluate_coco
>>> everything = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 9], "score": 0.9},
...               {"image_id": 2, "category_id": 1, "bbox": [5, 5, 10, 10], "score": 0.8}]
>>> bool((evaluate_coco(gt, everything).precision == result.precision).all())
True
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import time
import warnings
from typing import Any

import numpy as np
import orjson

from ._stream_input import read_update
from ._threads import resolve_threads, threads_limited
from ._validation import check_similarity_settings
from .data import Dataset
from .errors import DetevalError, FormatError
from .io.coco import read_coco_gt, read_coco_results
from .protocols import _coco_stages, _voc_stages
from .protocols import coco as _coco
from .protocols import voc as _voc

__all__ = ["DuplicateImageWarning", "Evaluator", "PROTOCOLS", "evaluate_files"]

#: Protocol names :class:`Evaluator` takes, and the VOC preset each VOC name stands for.
PROTOCOLS = {
    "coco": None,
    "voc2007": _voc.VOC2007,
    "voc2012": _voc.VOC2012,
    "detectron2-voc2007": _voc.DETECTRON2_VOC2007,
    "detectron2-voc2012": _voc.DETECTRON2_VOC2012,
}

_FORMAT = "deteval-evaluator"
_VERSION = 1


class DuplicateImageWarning(UserWarning):
    """Images were given again with identical detections and were counted once."""


class Evaluator:
    """Evaluate detections batch by batch; merge evaluators of several processes.

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
        The ground truth (a COCO instances file, its dict, or a :class:`~deteval.Dataset`).
    protocol : {"coco", "voc2007", "voc2012", "detectron2-voc2007", "detectron2-voc2012"}
        ``"coco"``: :func:`~deteval.evaluate_coco`; the others the VOC presets of
        :func:`~deteval.evaluate_voc` (:data:`~deteval.VOC2007` and so on).
    iou_type : {"bbox", "segm", "keypoints", "polygon", "rotated"}
        COCO only (VOC compares boxes). Per-image predictions serve bbox, segm and keypoints;
        polygon and rotated take COCO result records.
    box_format : str
        Format of per-image ``"boxes"``: ``"xyxy"`` (default: absolute pixel corners, as
        torchvision's detection models output), ``"xywh"``, ``"cxcywh"`` or a normalised form
        (see :data:`deteval.boxes.BOX_FORMATS`). Records and (N, 7) rows are COCO xywh.
    unknown_labels : {"raise", "drop"}
        A detection whose category is not a ground-truth category: an error naming it
        (default: usually a label-mapping bug), or dropped as pycocotools drops it (a note
        counts them).
    threads : int, optional
        Threads for reading the ground truth, matching each update and accumulating
        (default None: every core; 1 starts no thread, for an evaluator inside a training
        process whose cores are busy). The numbers are identical for every value; it is a
        setting of this process, not of the state: :meth:`to_bytes`, pickles and
        :meth:`merge` do not carry it (:meth:`from_bytes` takes its own).
    **params
        Fields of :class:`~deteval.COCOParams` or :class:`~deteval.VOCParams`
        (``max_detections``, ``iou_thresholds``, ``image_ids``, ...), as
        :func:`~deteval.evaluate_coco` / :func:`~deteval.evaluate_voc` take them.

    Notes
    -----
    :meth:`update` takes, per call, one of:

    * per-image predictions, torchvision style: ``{image_id: {"boxes": (n, 4), "scores": (n,),
      "labels": (n,)}}``, or a list of such dicts each with an ``"image_id"``; ``"labels"``
      are category ids of the ground truth; segm takes ``"masks"`` ((n, H, W) or
      (n, 1, H, W), binary, or floats thresholded at 0.5 as torchvision's CocoEvaluator does,
      or a list of RLE dicts) and keypoints ``"keypoints"`` ((n, K, 3)) instead of boxes. An
      image listed with no predictions counts as evaluated with no detections;
    * COCO result records: a list of ``{"image_id", "category_id", "bbox", "score"}`` dicts
      (as written to a results file);
    * an (N, 7) array of rows ``[image_id, x, y, w, h, score, category_id]``.

    Arrays may be numpy arrays or any object with ``__dlpack__`` or ``__array__``: torch
    tensors work without deteval importing torch; a tensor numpy cannot read (on a GPU, or
    needing ``.detach()``) is an error saying so.

    For VOC the order of equal scores is image by image in the images table's order, then
    input order: the result equals :func:`~deteval.evaluate_voc` on the detections listed
    so (one-shot VOC evaluation keeps the file's order instead).

    Examples
    --------
    >>> import numpy as np
    >>> gt = {"images": [{"id": 1}], "categories": [{"id": 1}, {"id": 2}],
    ...       "annotations": [{"id": 1, "image_id": 1, "category_id": 2,
    ...                        "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}]}
    >>> evaluator = Evaluator(gt, protocol="voc2012")
    >>> evaluator.update(np.array([[1, 0, 0, 10, 10, 0.9, 2]]))
    >>> evaluator.compute().map.tolist()
    [1.0]
    >>> restored = Evaluator.from_bytes(evaluator.to_bytes(), gt)
    >>> restored.compute().map.tolist()
    [1.0]
    """

    def __init__(self, gt: Any, *, protocol: str = "coco", iou_type: str = "bbox",
                 box_format: str = "xyxy", unknown_labels: str = "raise",
                 threads: int | None = None, **params: Any):
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(map(repr, PROTOCOLS))}; "
                             f"got {protocol!r}")
        if unknown_labels not in ("raise", "drop"):
            raise ValueError(f"unknown_labels must be 'raise' or 'drop'; got "
                             f"{unknown_labels!r}")
        if protocol != "coco" and iou_type != "bbox":
            raise ValueError(f"the VOC protocols compare boxes; iou_type {iou_type!r} is a "
                             "COCO option")
        if protocol == "coco":      # before the ground truth is read (again in _with_options)
            check_similarity_settings(iou_type, keypoint_sigmas=params.get("keypoint_sigmas"),
                                      dilation_ratio=params.get("dilation_ratio"))
        self._threads = resolve_threads(threads)
        with threads_limited(self._threads):    # (the ground truth's reader too)
            self._dataset = (gt if isinstance(gt, Dataset)
                             else read_coco_gt(gt, iou_type=iou_type))
        self._protocol, self._iou_type = protocol, iou_type
        self._box_format, self._unknown_labels = box_format, unknown_labels
        if protocol == "coco":
            base = _coco.COCO_KEYPOINTS if iou_type == "keypoints" else _coco.COCO
            p = _coco._with_options(base, {**params, "iou_type": iou_type}, "Evaluator")
            self._ctx = _coco_stages.prepare(self._dataset, p)
            gt_k = self._ctx.gt_k
            self._row_of_image = np.asarray(_image_rows(self._dataset, self._ctx.image_ids))
        else:
            unknown = set(params) - {f.name for f in dataclasses.fields(_voc.VOCParams)}
            if unknown:
                raise TypeError(f"Evaluator() got unknown option(s): "
                                f"{', '.join(sorted(unknown))}")
            p = dataclasses.replace(PROTOCOLS[protocol], **params)
            self._ctx = _voc_stages.prepare(self._dataset, p)
            gt_k = self._ctx.gt_k
            self._row_of_image = None
        # Evaluated objects grouped by image row (file order inside an image).
        objects = np.flatnonzero(gt_k >= 0)
        image_of = self._dataset.gt.image_index[objects]
        self._gt_by_image = objects[np.argsort(image_of, kind="stable")]
        self._gt_start = np.searchsorted(image_of[np.argsort(image_of, kind="stable")],
                                         np.arange(len(self._dataset.images) + 1))
        self._key = _config_key(protocol, self._ctx.params, self._dataset)
        self.reset()

    # ---- state ---------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every update and merge (the ground truth and settings stay)."""
        n = len(self._dataset.images)
        self._chunks: list = []
        self._seen = np.zeros(n, dtype=bool)
        self._fingerprint = np.zeros(n, dtype=np.uint64)
        self._n_input = np.zeros(n, dtype=np.int64)     # detections given per image
        self._n_unknown = np.zeros(n, dtype=np.int64)   # of those, dropped (unknown category)

    @property
    def gt(self) -> Dataset:
        """The ground truth."""
        return self._dataset

    @property
    def protocol(self) -> str:
        return self._protocol

    @property
    def params(self):
        """The settings (:class:`~deteval.COCOParams` or :class:`~deteval.VOCParams`),
        ``image_ids`` and ``category_ids`` filled in."""
        return self._ctx.params

    @property
    def n_images(self) -> int:
        """Images updated so far (each counted once)."""
        return int(np.count_nonzero(self._seen))

    @property
    def n_detections(self) -> int:
        """Detections given so far (repeated images counted once)."""
        return int(self._n_input.sum())

    @property
    def state_nbytes(self) -> int:
        """Bytes held by the match state (what :meth:`to_bytes` ships, roughly)."""
        return sum(c.nbytes for c in self._chunks)

    def __repr__(self) -> str:
        return (f"Evaluator(protocol={self._protocol!r}, iou_type={self._iou_type!r}, "
                f"images={self.n_images}, detections={self.n_detections})")

    # ---- update --------------------------------------------------------------------------

    def update(self, predictions: Any) -> None:
        """Match a batch of predictions and add them to the state.

        Parameters
        ----------
        predictions : dict, list or array
            Per-image predictions, COCO result records or an (N, 7) array (see the class
            documentation). Never modified.

        Raises
        ------
        FormatError
            Bad input: wrong shapes or dtypes, non-finite numbers, an unknown image id or
            label; the message names the batch row (or image and row).
        DetevalError
            An image already evaluated with different detections.
        TypeError
            Input of no known form, or tensors numpy cannot read (call ``.cpu()``).
        """
        batch = read_update(self._dataset, predictions, iou_type=self._iou_type,
                            box_format=self._box_format, unknown_labels=self._unknown_labels)
        images, fingerprints = batch.images, batch.fingerprints
        repeated = self._seen[images]
        _check_conflicts(self._dataset, images[repeated], fingerprints[repeated],
                         self._fingerprint[images[repeated]], "an earlier update")
        detections = batch.detections
        if repeated.any():
            detections = detections[~np.isin(detections.image_index, images[repeated])]
        fresh = images[~repeated]
        chunk = self._match(detections, fresh) if len(fresh) else None
        # Commit: nothing above changed the evaluator.
        if chunk is not None:
            self._chunks.append(chunk)
        self._seen[fresh] = True
        self._fingerprint[fresh] = fingerprints[~repeated]
        n_rows = len(self._dataset.images)
        self._n_input += np.bincount(detections.image_index, minlength=n_rows)
        self._n_unknown += np.bincount(detections.image_index[detections.category_index < 0],
                                       minlength=n_rows)
        _warn_duplicates(int(np.count_nonzero(repeated)) + batch.n_repeated, "update")

    def _match(self, detections, images: np.ndarray):
        counts = self._gt_start[images + 1] - self._gt_start[images]
        starts = np.repeat(self._gt_start[images] - np.r_[0, np.cumsum(counts)[:-1]], counts)
        gt_rows = np.sort(self._gt_by_image[starts + np.arange(counts.sum())])
        if self._protocol == "coco":
            return _coco_stages.match_stage(self._ctx, detections, gt_rows,
                                            threads=self._threads).state.compact()
        return _voc_stages.match_stage(self._ctx, detections, gt_rows, by_image=True,
                                       threads=self._threads).state.compact()

    # ---- merge ---------------------------------------------------------------------------

    def merge(self, *others: Evaluator) -> Evaluator:
        """Add the state of other evaluators (same ground truth and settings) to this one.

        Images both have seen count once when their detections are identical (a
        :class:`DuplicateImageWarning` says how many); otherwise this is an error and this
        evaluator is left unchanged. The others are not modified. Returns ``self``.
        """
        for other in others:
            if not isinstance(other, Evaluator):
                raise TypeError(f"merge() takes Evaluators; got {type(other).__name__}")
            if other._key != self._key:
                raise DetevalError("cannot merge evaluators of different ground truth or "
                                   f"settings ({other!r} into {self!r})")
        seen, fingerprint = self._seen.copy(), self._fingerprint.copy()
        n_input, n_unknown = self._n_input.copy(), self._n_unknown.copy()
        chunks, duplicates = list(self._chunks), 0
        for other in others:
            both = np.flatnonzero(seen & other._seen)
            _check_conflicts(self._dataset, both, other._fingerprint[both], fingerprint[both],
                             "the evaluator merged into")
            new = other._seen & ~seen
            state = _concat(other._chunks)
            if len(both) and state is not None:
                state = state.select(np.flatnonzero(~np.isin(self._state_image_rows(state),
                                                             both)))
            if state is not None and len(state):
                chunks.append(state)
            seen |= new
            fingerprint[new] = other._fingerprint[new]
            n_input[new] += other._n_input[new]
            n_unknown[new] += other._n_unknown[new]
            duplicates += len(both)
        self._chunks, self._seen, self._fingerprint = chunks, seen, fingerprint
        self._n_input, self._n_unknown = n_input, n_unknown
        _warn_duplicates(duplicates, "merge")
        return self

    def _state_image_rows(self, state) -> np.ndarray:
        """The images-table row of every row of a state."""
        if self._row_of_image is None:           # VOC states hold image rows
            return np.asarray(state.image, dtype=np.int64)
        return self._row_of_image[state.image]

    # ---- compute -------------------------------------------------------------------------

    def compute(self):
        """The result of every update and merge so far.

        Returns
        -------
        COCOResult or VOCResult
            As :func:`~deteval.evaluate_coco` / :func:`~deteval.evaluate_voc` return for all
            the detections at once, except that ``matches`` and ``detections`` are None (the
            state keeps neither). A VOC result's curves (``pr_curve``) give state rows as
            ``detections``.
        """
        started = time.perf_counter()
        state = _concat(self._chunks)
        if state is None:
            state = (_coco_stages.COCOState.empty(len(self._ctx.params.area_ranges))
                     if self._protocol == "coco"
                     else _voc_stages.VOCState.empty(len(self._ctx.params.iou_thresholds)))
        else:
            self._chunks = [state]
        n_input, n_unknown = int(self._n_input.sum()), int(self._n_unknown.sum())
        times = (started, started, time.perf_counter())
        if self._protocol == "coco":
            return _coco.finish(self._ctx, state, n_detections=n_input, n_unknown=n_unknown,
                                matches=None, detections=None, times=times,
                                threads=self._threads)
        return _voc.finish(self._ctx, state, n_detections=n_input, n_unknown=n_unknown,
                           matches=None, detections=None,
                           scores=np.asarray(state.score, dtype=np.float64),
                           state_rows=np.arange(len(state)), times=times)

    # ---- bytes and pickle ----------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The state as bytes (an ``.npz`` archive: arrays and a JSON header, no pickle).

        :meth:`from_bytes` with the same ground truth restores the evaluator.
        """
        state = _concat(self._chunks)
        images = np.flatnonzero(self._seen)
        header = {"format": _FORMAT, "version": _VERSION, "protocol": self._protocol,
                  "iou_type": self._iou_type, "box_format": self._box_format,
                  "unknown_labels": self._unknown_labels, "key": self._key,
                  "params": _params_json(self._ctx.params)}
        arrays = {"header": np.frombuffer(orjson.dumps(header), dtype=np.uint8),
                  "images": images, "fingerprint": self._fingerprint[images],
                  "n_input": self._n_input[images], "n_unknown": self._n_unknown[images]}
        if state is not None:
            arrays.update({f"state_{k}": v for k, v in state.arrays().items()})
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, gt: Any, *, threads: int | None = None) -> Evaluator:
        """An evaluator restored from :meth:`to_bytes`, for the same ground truth ``gt``
        (``threads``: as the constructor's; the bytes do not keep it).

        Raises
        ------
        FormatError
            Not the bytes of an evaluator, or of another ground truth.
        """
        header, arrays = _read_archive(data)
        template = cls(gt, protocol=header["protocol"], iou_type=header["iou_type"],
                       box_format=header["box_format"], unknown_labels=header["unknown_labels"],
                       threads=threads, **_params_from_json(header["protocol"], header["params"]))
        return template._restored(header, arrays)

    def blank(self) -> Evaluator:
        """A new, empty evaluator of the same ground truth and settings (sharing them: no
        reading or preparing again)."""
        evaluator = object.__new__(type(self))
        evaluator.__dict__.update(self.__dict__)
        evaluator.reset()
        return evaluator

    def _restored(self, header: dict, arrays: dict) -> Evaluator:
        """A new evaluator like this one (same ground truth and settings) holding the state
        of an archive; this one is not changed."""
        if self._key != header["key"]:
            raise FormatError("these bytes come from an evaluator of another ground truth (or "
                              "other settings)", source="from_bytes")
        evaluator = self.blank()
        images = arrays["images"]
        evaluator._seen[images] = True
        evaluator._fingerprint[images] = arrays["fingerprint"]
        evaluator._n_input[images] = arrays["n_input"]
        evaluator._n_unknown[images] = arrays["n_unknown"]
        columns = {k[len("state_"):]: v for k, v in arrays.items() if k.startswith("state_")}
        if columns:
            state_type = (_coco_stages.COCOState if self._protocol == "coco"
                          else _voc_stages.VOCState)
            evaluator._chunks = [state_type(**columns)]
        return evaluator

    def merge_bytes(self, *data: bytes) -> Evaluator:
        """:meth:`merge` the evaluators :meth:`to_bytes` gave, without rebuilding their ground
        truth. Returns ``self``."""
        return self.merge(*(self._restored(*_read_archive(d)) for d in data))

    def __reduce__(self):
        return (_restore, (self._dataset, self.to_bytes()))


def _read_archive(data: bytes) -> tuple[dict, dict]:
    try:
        archive = np.load(io.BytesIO(bytes(data)), allow_pickle=False)
        arrays = {name: archive[name] for name in archive.files}
        header = orjson.loads(arrays.pop("header").tobytes())
    except (ValueError, OSError, KeyError, orjson.JSONDecodeError, TypeError) as error:
        raise FormatError(f"not the bytes of a deteval Evaluator ({error})",
                          source="from_bytes") from None
    if not isinstance(header, dict) or header.get("format") != _FORMAT or header.get(
            "version") != _VERSION:
        raise FormatError("not the bytes of a deteval Evaluator (another format or version)",
                          source="from_bytes")
    return header, arrays


def _restore(dataset: Dataset, data: bytes) -> Evaluator:
    return Evaluator.from_bytes(data, dataset)


def _concat(chunks: list):
    if not chunks:
        return None
    return type(chunks[0]).concat(chunks)


def _image_rows(dataset: Dataset, image_ids: np.ndarray) -> np.ndarray:
    from .data import index_in

    return index_in(image_ids, dataset.images.ids)


def _check_conflicts(dataset: Dataset, images: np.ndarray, fingerprints: np.ndarray,
                     known: np.ndarray, where: str) -> None:
    differ = np.flatnonzero(fingerprints != known)
    if len(differ):
        ids = dataset.images.ids[images[differ]]
        more = f" (and {len(differ) - 1} more)" if len(differ) > 1 else ""
        raise DetevalError(
            f"image_id {int(ids[0])}{more} was already evaluated by {where} with different "
            "detections; every update must carry all the detections of its images, and an "
            "image may only come again with the same detections")


def _warn_duplicates(count: int, where: str) -> None:
    if count:
        warnings.warn(f"{count} image(s) came again with identical detections in this {where} "
                      "(DistributedSampler pads the last batch so); each was counted once",
                      DuplicateImageWarning, stacklevel=3)


def _gt_digest(dataset: Dataset) -> str:
    digest = hashlib.blake2b(digest_size=16)
    gt = dataset.gt
    for array in (dataset.images.ids, dataset.categories.ids, gt.image_index,
                  gt.category_index, gt.boxes, gt.area, gt.iscrowd, gt.ignore, gt.ids):
        digest.update(np.ascontiguousarray(array).tobytes())
        digest.update(b"|")
    return digest.hexdigest()


def _config_key(protocol: str, params: Any, dataset: Dataset) -> str:
    text = orjson.dumps({"protocol": protocol, "params": _params_json(params)})
    return hashlib.blake2b(text + _gt_digest(dataset).encode(), digest_size=16).hexdigest()


def _params_json(params: Any) -> dict:
    return orjson.loads(orjson.dumps(dataclasses.asdict(params)))


def _params_from_json(protocol: str, values: dict) -> dict:
    """Keyword options that rebuild the settings :func:`_params_json` wrote (less the
    similarity settings the IoU type does not read: given, they are refused; their defaults
    are what was written)."""
    from ._validation import SIMILARITY_SETTINGS

    iou_type = values.get("iou_type")
    out = {k: v for k, v in values.items() if k != "iou_type"
           and SIMILARITY_SETTINGS.get(k, iou_type) == iou_type}
    sigmas = out.get("keypoint_sigmas")
    if isinstance(sigmas, list) and sigmas and isinstance(sigmas[0], list):
        out["keypoint_sigmas"] = {int(c): s for c, s in sigmas}
    if "area_ranges" in out:
        out["area_ranges"] = [tuple(r) for r in out["area_ranges"]]
    return out


def evaluate_files(gt: Any, paths: Any, *, protocol: str = "coco", iou_type: str = "bbox",
                   dask: Any = None, **params: Any):
    """Evaluate several results files (shards) as one, file by file.

    Each file is read, matched and dropped before the next, so memory holds one file and
    the state. Results whose category is not in the ground truth are dropped (as
    :func:`~deteval.evaluate_coco` does). Shards must split the detections by image (an
    image in two files must have the same detections in both: it counts once).

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
    paths : sequence of str or PathLike
        COCO results files.
    protocol, iou_type, **params
        As for :class:`Evaluator`.
    dask : None, "local", str or distributed.Client
        Read and match the shards on a Dask cluster instead (see :func:`deteval.dask.evaluate`):
        ``"local"`` starts a local cluster for the call, a string is a scheduler address.

    Returns
    -------
    COCOResult or VOCResult
        Equal to :func:`~deteval.evaluate_coco` on the files' results put together
        (``matches`` and ``detections`` are None).
    """
    paths = [paths] if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__") \
        else list(paths)
    if dask is not None:
        from .dask import evaluate as dask_evaluate

        return dask_evaluate(gt, paths, client=dask, protocol=protocol, iou_type=iou_type,
                             **params)
    evaluator = Evaluator(gt, protocol=protocol, iou_type=iou_type, unknown_labels="drop",
                          **params)
    for path in paths:
        evaluator.update(read_coco_results(path, evaluator.gt, iou_type=iou_type))
    return evaluator.compute()
