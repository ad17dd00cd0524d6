"""One input layer: a ground-truth / detections pair loaded and resolved once, one way.

Every protocol (:func:`~deteval.evaluate_coco`, :func:`~deteval.evaluate_voc`), diagnostic
(:func:`~deteval.detection_confusion_matrix`, :func:`~deteval.match_outcomes`, ...) and CLI
command reads its inputs through :func:`load_pair`, and every COCO results file is resolved
against its ground truth by :func:`read_coco_detections`, so that the same two files give the
same numbers everywhere.

The resolution rule (documented once, in ``docs/resolution.md``):

* A plain COCO results list (no ``images`` / ``categories`` of its own) refers to images
  and categories by id, as pycocotools' ``loadRes`` does.
* A results file that carries its own ``images`` and ``categories`` tables names each image
  (``file_name``) and category (``name``). Where the ground truth carries names too, the
  detections are resolved by name, unless ids and names point to different things: then
  the pair is refused with the first conflicts listed, and ``match_by="id"|"name"``
  (``--match-by``) chooses. Ids that point nowhere in the ground truth (a file that numbers
  its images its own way) are no conflict; neither are the ids of a ground truth whose reader
  numbered its images and categories itself (every format but COCO).

Examples
--------
>>> gt = {"images": [{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "b.jpg"}],
...       "categories": [{"id": 1, "name": "cat"}], "annotations": []}
>>> dt = {"images": [{"id": 7, "file_name": "b.jpg"}], "categories": [{"id": 0, "name": "cat"}],
...       "annotations": [{"image_id": 7, "category_id": 0, "bbox": [0, 0, 1, 1], "score": 1}]}
>>> pair = load_pair(gt, dt)
>>> pair.detections.image_index.tolist(), pair.detections.category_index.tolist()
([1], [0])
>>> pair.resolved_by
'name'
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._threads import resolve_threads
from .data import (
    Categories,
    Dataset,
    Detections,
    GroundTruth,
    Images,
    derived_or_read,
    index_in,
)
from .errors import FormatError
from .io._json import (
    FileBytes,
    checked_json_bytes,
    load_json,
    number_column,
    prefetch_bytes,
    read_bytes,
    read_json_bytes,
    source_name,
)

__all__ = ["MATCH_BY", "Pair", "check_indices", "load_pair", "read_coco_detections",
           "read_coco_ground_truth"]

#: Values of ``match_by``: "auto" applies the rule of the module notes.
MATCH_BY = ("auto", "id", "name")

_RULE = "see docs/resolution.md"

#: What ``bytes.lstrip()`` removes, found without copying the file's text.
_LEADING_SPACE = re.compile(rb"[ \t\n\r\x0b\x0c]*")


@dataclass(frozen=True)
class Pair:
    """A ground truth and the detections resolved against it.

    Attributes
    ----------
    dataset : Dataset
    detections : Detections
        ``image_index`` and ``category_index`` index ``dataset``'s tables.
    resolved_by : {"id", "name", "given"}
        How detections found their images and categories ("given": they came as
        :class:`~deteval.data.Detections`, or were read from a format keyed by file name).
    notes : tuple of str
        What a user should know about the resolution.
    """

    dataset: Dataset
    detections: Detections
    resolved_by: str = "given"
    notes: tuple[str, ...] = ()


def _check_match_by(match_by: str) -> None:
    if match_by not in MATCH_BY:
        raise ValueError(f"match_by must be 'auto', 'id' or 'name'; got {match_by!r}")


def load_pair(gt: Any, dt: Any, *, iou_type: str = "bbox", invalid: str = "raise",
              match_by: str = "auto") -> Pair:
    """Read (when needed) and resolve a ground-truth / detections pair.

    Parameters
    ----------
    gt : Dataset, str, PathLike or dict
        A :class:`~deteval.data.Dataset`, or a COCO instances file (or its dict).
    dt : Detections, str, PathLike, list, dict or ndarray
        :class:`~deteval.data.Detections`, or COCO results (see
        :func:`read_coco_detections`).
    iou_type, invalid
        As for :func:`~deteval.io.coco.read_coco_results`.
    match_by : {"auto", "id", "name"}
        How COCO results carrying their own ``images`` and ``categories`` find the ground
        truth's (module notes).

    Returns
    -------
    Pair

    Raises
    ------
    FormatError
        Unreadable input; ids and names of the detections that point to different ground-
        truth images or categories (``match_by="auto"``).
    ValueError
        Detections whose indices do not index the dataset's tables.
    """
    _check_match_by(match_by)
    early = _EarlyResults.start(gt, dt, iou_type, match_by)
    results_file = None
    if (early is None and all(isinstance(x, (str, os.PathLike)) for x in (gt, dt))
            and _worth_a_thread(dt) and resolve_threads(None) > 1):
        # Two files: the results file is read (a system call, without the GIL) while the
        # ground truth is parsed; its errors are raised where reading it would raise them.
        # (A keypoint results file is parsed whole on its thread: _EarlyResults.)
        from ._arrays import adapt_malloc

        adapt_malloc()      # (the pieces' temporaries reuse freed memory: docs/threads.md 6)
        results_file = prefetch_bytes(dt, what="results")
    try:
        with early.reading_ground_truth() if early is not None else contextlib.nullcontext():
            dataset = (gt if isinstance(gt, Dataset)
                       else read_coco_ground_truth(gt, iou_type=iou_type, invalid=invalid))
    except BaseException:
        if results_file is not None:
            with contextlib.suppress(Exception):
                results_file()      # (the thread ends before the error goes up)
        if early is not None:
            early.cancel()          # (the ground truth's error without the results' parse)
        raise
    columns = early.columns() if early is not None else None
    if early is not None and early.tried:
        # (read once: the thread's bytes, when kept; and its reader, which read them, not
        # run again)
        dt = FileBytes(dt, early.raw, what="results", tried=True)
        early.raw = None
    if results_file is not None:
        dt = results_file()
    if isinstance(dt, Detections):
        pair = Pair(dataset, dt, notes=dataset.notes)
    else:
        detections, resolved_by, notes = _resolve(dt, dataset, iou_type=iou_type,
                                                  invalid=invalid, match_by=match_by,
                                                  early=columns)
        pair = Pair(dataset, detections, resolved_by, dataset.notes + notes)
    check_indices(pair.dataset, pair.detections)
    return pair


#: Results files smaller than this are read after the ground truth, on the calling thread:
#: reading them takes less than starting a thread (and importing ``threading``) costs
#: (docs/threads.md, item 6).
PREFETCH_MIN_BYTES = 1 << 20


def _worth_a_thread(path: str | os.PathLike, least: int | None = None) -> bool:
    """Whether ``path`` is a file of ``least`` bytes (default :data:`PREFETCH_MIN_BYTES`) or
    more (an error reading it is raised where the file is read, after the ground truth's,
    thread or not)."""
    try:
        return os.stat(path).st_size >= (PREFETCH_MIN_BYTES if least is None else least)
    except (OSError, ValueError):
        return False


#: The results read early, by iou_type (boundary IoU reads its results as segm).
_EARLY_TYPES = {"keypoints": "keypoints", "segm": "segm", "boundary": "segm"}


class _EarlyResults:
    """A keypoint or segm results file read by its numpy reader on a thread of its own while
    the ground truth is read (the two files at once, on two cores): the readers need no
    ground truth (:func:`~deteval.io.coco.results.keypoint_columns_early`,
    :func:`~deteval.io.coco.results.segm_columns_early`: the masks are decoded there too).
    The detections are then made as :func:`~deteval.io.coco.read_coco_results` makes them
    from the same columns, so the pair is the same as when the files are read one after the
    other.

    The results are the longer read: once the ground truth is read, the calling thread
    takes the pieces of the results file not yet taken (:class:`_SharedMap`) rather than
    wait. Which thread reads which piece changes nothing in the columns."""

    def __init__(self, path: Any, iou_type: str = "keypoints"):
        import threading

        from ._arrays import adapt_malloc
        from .io.coco.results import keypoint_columns_early, segm_columns_early

        adapt_malloc()      # (before either file is read: docs/threads.md item 6)
        self._iou_type = iou_type
        self._columns: Any = None
        self._pool = _SharedMap()
        #: The results file's bytes, handed to the reader that reads the file when the
        #: early reader does not give its detections (the file is read once, and that
        #: reader does not run the early reader's numpy reader on them again).
        self.raw: bytes | None = None
        #: Whether the early reader read the file (then ``raw``, or, once a keypoint
        #: reader's columns are made, None: the bytes are freed, the peak memory's, and
        #: read again only when the ground truth does not take the columns).
        self.tried = False

        def early(path: Any, pool: Any) -> Any:
            self.raw = read_bytes(path, what="results")
            self.tried = True
            if iou_type == "keypoints":
                columns = keypoint_columns_early(self.raw, pool=pool)
                if columns is not None:
                    self.raw = None
                return columns
            return segm_columns_early(self.raw, path, pool=pool)

        def read() -> None:
            try:
                self._columns = early(path, pool=self._pool)
            except BaseException:   # noqa: BLE001 (the file is read again, and errors worded)
                self._columns = None
            finally:
                self._pool.finish()

        self._thread = threading.Thread(target=contextvars.copy_context().run, args=(read,),
                                        name="deteval-results", daemon=True)
        self._thread.start()

    @classmethod
    def start(cls, gt: Any, dt: Any, iou_type: str, match_by: str) -> _EarlyResults | None:
        """Started for two files of a keypoint or segm evaluation resolved by id (the
        readers' only case), else None."""
        paths = all(isinstance(x, (str, os.PathLike)) for x in (gt, dt))
        if (not paths or match_by == "name" or iou_type not in _EARLY_TYPES
                or resolve_threads(None) < 2):
            return None
        if _EARLY_TYPES[iou_type] == "segm":
            from .io.coco.results import NUMERIC_MIN_BYTES

            if not _worth_a_thread(dt, NUMERIC_MIN_BYTES):
                return None     # (smaller than the reader reads: after the ground truth)
        return cls(dt, _EARLY_TYPES[iou_type])

    def columns(self) -> Any:
        """The columns (None where the reader refused the file), the calling thread helping
        to read them."""
        self._pool.help()
        self._thread.join()
        return self._columns

    def cancel(self) -> None:
        """The ground truth failed: no piece of the results is started any more; the results
        thread ends after the pieces it is reading (not waited for)."""
        self._pool.cancel()

    @contextlib.contextmanager
    def reading_ground_truth(self):
        """While the ground truth is read beside the results thread, its keypoint lists are
        read and its polygons rasterised on the calling thread alone (two busy threads on
        two cores, not three)."""
        if self._iou_type == "keypoints":
            from .io._numeric_keypoints import LIST_THREADS as limit
        else:       # (the masks package only for segm ground truth)
            from .masks.rasterise import RASTER_THREADS as limit
        token = limit.set(1)
        try:
            yield
        finally:
            limit.reset(token)


class _SharedMap:
    """``map(fn, items)`` (:func:`~deteval._threads.thread_map`'s contract: results in
    order, the earliest failed item's exception raised, no item started after a failure)
    for one thread, the results thread, that another thread joins by :meth:`help` once it
    is free: each item is taken by whichever of them is free first."""

    def __init__(self):
        import threading

        self._changed = threading.Condition()
        self._job: _Job | None = None
        self._finished = self._cancelled = False

    def map(self, fn: Any, items: Any) -> list:
        job = _Job(fn, list(items))
        with self._changed:
            if self._cancelled:
                raise _Cancelled
            self._job = job
            self._changed.notify_all()
        try:
            job.work()
        finally:
            with self._changed:
                self._job = None
                self._changed.notify_all()
        return job.results()

    def finish(self) -> None:
        """The results thread ends: :meth:`help` returns."""
        with self._changed:
            self._finished = True
            self._changed.notify_all()

    def cancel(self) -> None:
        """No item is started any more: the running map, and any later one, raises
        :class:`_Cancelled` once the items already running end."""
        with self._changed:
            self._cancelled = True
            if self._job is not None:
                self._job.cancel()

    def help(self) -> None:
        """Work on the results thread's maps until it ends."""
        done: _Job | None = None
        while True:
            with self._changed:
                while not self._finished and (self._job is None or self._job is done):
                    self._changed.wait()
                if self._finished:
                    return
                job = self._job
            job.work()
            done = job


class _Cancelled(Exception):
    """A :class:`_SharedMap` was cancelled (the ground truth failed to read)."""


class _Job:
    """The items of one :meth:`_SharedMap.map` call, taken one at a time."""

    def __init__(self, fn: Any, items: list):
        import threading

        self.fn, self.items = fn, items
        self.out: list = [None] * len(items)
        self.failed: dict[int, BaseException] = {}
        self.next = self.running = 0
        self.cancelled = False
        self.changed = threading.Condition()

    def cancel(self) -> None:
        with self.changed:
            self.cancelled = True

    def work(self) -> None:
        while True:
            with self.changed:
                if self.failed or self.cancelled or self.next >= len(self.items):
                    return
                index, self.next = self.next, self.next + 1
                self.running += 1
            try:
                self.out[index] = self.fn(self.items[index])
            except BaseException as error:     # raised by results(), on the results thread
                with self.changed:
                    self.failed[index] = error
                if not isinstance(error, Exception):
                    raise   # (an interrupt of the thread that got it stays its own too)
            finally:
                with self.changed:
                    self.running -= 1
                    self.changed.notify_all()

    def results(self) -> list:
        """The results in order, once the items taken by the other thread are done."""
        with self.changed:
            while self.running:
                self.changed.wait()
        if self.failed:
            raise self.failed[min(self.failed)]
        if self.cancelled:
            raise _Cancelled
        return self.out


def read_coco_ground_truth(source: Any, **options: Any) -> Dataset:
    """:func:`~deteval.io.coco.read_coco_gt`, with an error that says so when ``source``
    holds detections (GT and DT swapped)."""
    from .io.coco import read_coco_gt

    try:
        return read_coco_gt(source, **options)
    except FormatError as error:
        if not _looks_like_results(source):
            raise
        raise FormatError("this holds detections (results with scores), not ground truth: "
                          f"are GT and DT swapped? ({error.message})",
                          source=source_name(source),
                          hint="pass the instances file first and the results second",
                          cli_hint="give GT (the instances file) first and DT second"
                          ) from None


def _looks_like_results(source: Any) -> bool:
    data = source
    if isinstance(source, (str, os.PathLike)):
        try:
            raw = read_json_bytes(source, what="ground truth")
            if raw.lstrip()[:1] == b"[":
                return True
            data = load_json(source, what="ground truth", raw=raw).data
        except FormatError:
            return False
    if isinstance(data, (list, tuple)):
        return True
    records = data.get("annotations") if isinstance(data, dict) else None
    return (isinstance(records, list) and bool(records) and isinstance(records[0], dict)
            and "score" in records[0])


def check_indices(dataset: Dataset, detections: Detections) -> None:
    """Refuse detections whose rows do not index ``dataset``'s images and categories
    (``category_index`` may be -1: a category the ground truth does not know)."""
    n_images, n_categories = len(dataset.images), len(dataset.categories)
    image_index = derived_or_read(detections, "image_index")    # (as held: maybe narrow)
    category_index = derived_or_read(detections, "category_index")
    if len(detections) and (image_index.min() < 0 or image_index.max() >= n_images):
        raise ValueError("detections.image_index must index the dataset's images table")
    if len(detections) and (category_index.min() < -1
                            or category_index.max() >= n_categories):
        raise ValueError("detections.category_index must index the dataset's categories "
                         "table (or be -1 for a category unknown to the ground truth)")


def read_coco_detections(source: Any, dataset: Dataset, *, iou_type: str = "bbox",
                         invalid: str = "raise", match_by: str = "auto") -> Detections:
    """COCO results resolved against ``dataset`` by the rule of the module notes.

    ``source`` is anything :func:`~deteval.io.coco.read_coco_results` reads, or a results
    file / dict with its own ``images`` and ``categories`` lists (as some tools write).
    The notes of the resolution are dropped; :func:`load_pair` returns them.
    """
    _check_match_by(match_by)
    return _resolve(source, dataset, iou_type=iou_type, invalid=invalid, match_by=match_by)[0]


def _resolve(source: Any, dataset: Dataset, *, iou_type: str, invalid: str,
             match_by: str, early: Any = None) -> tuple[Detections, str, tuple[str, ...]]:
    from .io.coco import read_coco_results

    name = source_name(source)
    data = source
    if early is not None and not dataset.string_ids:     # a plain list read by id
        from .io._json import gc_paused
        from .io._numeric_keypoints import KeypointColumns
        from .io.coco.typed import keypoint_detections_of, segm_detections_of

        # (not isinstance of SegmColumns: its module, with the masks', is ~10 ms to import
        # and a keypoint evaluation needs neither)
        if isinstance(early, KeypointColumns):
            detections = keypoint_detections_of(early, dataset, name)
        else:
            with gc_paused():               # (a dict and a string per mask)
                detections = segm_detections_of(early, dataset, name)
        if detections is not None:
            return detections, "id", ()
    if isinstance(source, (str, os.PathLike)):
        if not isinstance(source, FileBytes) or source.raw is None:
            # (a FileBytes without bytes: the early reader's, freed once its columns were
            # made; still tried)
            source = FileBytes(source, read_bytes(source, what="results"), what="results",
                               tried=getattr(source, "tried", False))
        raw = source.raw
        if raw[_LEADING_SPACE.match(raw).end():][:1] != b"{":
            # A plain results list: the reader takes the bytes (read once, checked there).
            del raw
            if match_by == "name":
                raise _needs_tables(name)
            return read_coco_results(source, dataset, iou_type=iou_type,
                                     invalid=invalid), "id", ()
        raw = checked_json_bytes(source.take("results"), source, what="results")
        data = load_json(source, what="results", raw=raw).data
        del raw
    if not (isinstance(data, dict) and "images" in data and "categories" in data):
        if match_by == "name":
            raise _needs_tables(name)
        # A path is read again so that errors name the file (a rare layout: a dict without
        # tables).
        return read_coco_results(source, dataset, iou_type=iou_type, invalid=invalid), "id", ()
    tables = _Tables.of(data, name)
    by, notes = _decide(tables, dataset, name, match_by)
    if by == "id":
        return read_coco_results(source, dataset, iou_type=iou_type, invalid=invalid), "id", ()
    return _read_by_name(data, tables, dataset, name, iou_type, invalid), "name", notes


def _needs_tables(name: str) -> FormatError:
    return FormatError("matching by name needs a results file with its own 'images' (with "
                       "'file_name') and 'categories' (with 'name') lists; this one refers to "
                       "images and categories by id only", source=name,
                       hint="pass match_by='id' (or leave it at 'auto')",
                       cli_hint="pass --match-by id (or leave it out)")


@dataclass(frozen=True)
class _Tables:
    """A results file's own images and categories: ids and names (None where missing)."""

    image_ids: np.ndarray
    file_names: tuple[str, ...] | None
    category_ids: np.ndarray
    category_names: tuple[str, ...] | None

    @classmethod
    def of(cls, data: dict, name: str) -> _Tables:
        for key in ("images", "categories", "annotations"):
            if not isinstance(data.get(key), list):
                raise FormatError(f"'{key}' must be a list", source=name)
        images, categories = data["images"], data["categories"]
        for key, records in (("images", images), ("categories", categories)):
            bad = next((i for i, r in enumerate(records) if not isinstance(r, dict)), None)
            if bad is not None:
                raise FormatError("must be a JSON object", source=name, record=f"{key}[{bad}]")
        image_ids = number_column(images, "id", np.int64, source=name, section="images")
        category_ids = number_column(categories, "id", np.int64, source=name,
                                     section="categories")
        for key, ids in (("images", image_ids), ("categories", category_ids)):
            unique, first, counts = np.unique(ids, return_index=True, return_counts=True)
            if (counts > 1).any():
                dup = int(unique[counts > 1][0])
                raise FormatError(f"id {dup} appears more than once in '{key}'", source=name)
        file_names = tuple(r.get("file_name") for r in images)
        names = tuple(r.get("name") for r in categories)
        return cls(image_ids, file_names if all(isinstance(f, str) and f for f in file_names)
                   else None, category_ids,
                   names if all(isinstance(n, str) for n in names) else None)


def _name_rows(tables: _Tables, dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Ground-truth rows of the file's images (by key) and categories (by name); -1 where
    the ground truth has none, -2 where its images share the key."""
    from .io._common import image_key, image_rows_by_key

    rows = image_rows_by_key(dataset.images)
    image_rows = np.array([rows.get(image_key(f), -1) for f in tables.file_names],
                          dtype=np.int64)
    by_name: dict[str, int] = {}
    for row, category in enumerate(dataset.categories.names or ()):
        by_name.setdefault(category, row)
    category_rows = np.array([by_name.get(n, -1) for n in tables.category_names],
                             dtype=np.int64)
    return image_rows, category_rows


def _gt_has_names(dataset: Dataset) -> bool:
    names = dataset.images.file_names
    return bool(names) and all(names) and dataset.categories.names is not None


def _decide(tables: _Tables, dataset: Dataset, name: str, match_by: str
            ) -> tuple[str, tuple[str, ...]]:
    """"id" or "name" for a results file with its own tables, and the notes (module rule)."""
    named = tables.file_names is not None and tables.category_names is not None
    if match_by == "id":
        return "id", ()
    if not named or not _gt_has_names(dataset):
        if match_by == "name":
            side = "the results file" if not named else "the ground truth"
            raise FormatError(f"match_by='name' needs file names of images and names of "
                              f"categories on both sides; {side} lacks them", source=name,
                              cli_hint="--match-by name needs file names of images and names "
                              "of categories on both sides")
        return "id", ()
    if match_by == "name" or getattr(dataset, "ids_assigned", False):
        return "name", ()
    image_rows, category_rows = _name_rows(tables, dataset)
    image_by_id = index_in(tables.image_ids, dataset.images.ids)
    category_by_id = index_in(tables.category_ids, dataset.categories.ids)
    foreign_images = not (image_by_id >= 0).any()
    image_conflicts = np.flatnonzero((image_by_id >= 0) & (image_by_id != image_rows))
    category_conflicts = np.flatnonzero((category_by_id >= 0)
                                        & (category_by_id != category_rows))
    if foreign_images and len(tables.image_ids):
        # The file numbers its images its own way: its ids are its own, categories too.
        category_conflicts = category_conflicts[:0]
    if len(image_conflicts) or len(category_conflicts):
        raise _conflict_error(tables, dataset, name, image_conflicts, category_conflicts,
                              image_by_id, category_by_id)
    agree = ((image_by_id == image_rows).all() and (category_by_id == category_rows).all())
    if agree:
        return "name", ()
    n_foreign = int((image_by_id < 0).sum())
    n_cats = int((category_by_id != category_rows).sum())
    what = []
    if n_foreign:
        what.append(f"{n_foreign} of its {len(image_rows)} image ids are not ground-truth "
                    "image ids")
    if n_cats:
        what.append(f"{n_cats} of its {len(category_rows)} category ids name other "
                    "categories in the ground truth")
    return "name", (f"{name} carries its own images and categories; detections were matched "
                    f"to the ground truth by file name and category name ({'; '.join(what)}; "
                    f"{_RULE})",)


def _conflict_error(tables: _Tables, dataset: Dataset, name: str, image_conflicts: np.ndarray,
                    category_conflicts: np.ndarray, image_by_id: np.ndarray,
                    category_by_id: np.ndarray) -> FormatError:
    def gt_image(row: int) -> str:
        return repr(dataset.images.file_names[row]) if row >= 0 else "no image"

    image_rows, category_rows = _name_rows(tables, dataset)
    shown = []
    for i in image_conflicts[:3].tolist():
        shown.append(f"image_id {int(tables.image_ids[i])} is {tables.file_names[i]!r} in the "
                     f"results but {gt_image(int(image_by_id[i]))} in the ground truth")
    for i in category_conflicts[:3].tolist():
        gt_name = dataset.categories.names[int(category_by_id[i])]
        shown.append(f"category_id {int(tables.category_ids[i])} is "
                     f"{tables.category_names[i]!r} in the results but {gt_name!r} in the "
                     "ground truth")
    counts = []
    if len(image_conflicts):
        counts.append(f"{len(image_conflicts)} of {len(image_rows)} images")
    if len(category_conflicts):
        counts.append(f"{len(category_conflicts)} of {len(category_rows)} categories")
    message = (f"the results' own images and categories disagree with the ground truth "
               f"({dataset.source or 'dataset'}): by id and by name they point to different "
               f"things for {' and '.join(counts)}: {'; '.join(shown)}")
    return FormatError(
        message, source=name,
        hint="pass match_by='name' to match by file name and category name (what the "
        "results file's own tables say) or match_by='id' to use the ids as pycocotools does "
        f"({_RULE})",
        cli_hint="pass --match-by name to match by file name and category name (what the "
        "results file's own tables say) or --match-by id to use the ids as pycocotools does "
        f"({_RULE})")


def _read_by_name(data: dict, tables: _Tables, dataset: Dataset, name: str, iou_type: str,
                  invalid: str) -> Detections:
    """Read the records against the file's own tables, then move them onto the ground
    truth's rows (found by file name and category name)."""
    from .io._common import image_key
    from .io.coco import read_coco_results

    image_rows, category_rows = _name_rows(tables, dataset)
    bad = np.flatnonzero(image_rows < 0)
    if len(bad):
        i = int(bad[0])
        key = image_key(tables.file_names[i])
        what = ("is ambiguous: several ground-truth images have this name" if image_rows[i] == -2
                else f"is not an image of the ground truth ({dataset.source or 'dataset'})")
        raise FormatError(f"image {key!r} {what}; {len(bad)} of the {len(image_rows)} images "
                          "of the results do not resolve by file name", source=name,
                          record=f"images[{i}]")
    sizes = np.column_stack([dataset.images.widths, dataset.images.heights])[image_rows]
    own = Dataset(Images(ids=tables.image_ids, widths=sizes[:, 0], heights=sizes[:, 1],
                         file_names=tables.file_names),
                  Categories(ids=tables.category_ids, names=tables.category_names),
                  GroundTruth(image_index=[], category_index=[], boxes=[]), source=name)
    records = {"annotations": data["annotations"]}
    if iou_type in ("keypoints",) and len(records["annotations"]):
        # Keypoint counts come from the ground truth's categories: rewrite the ids instead.
        records = {"annotations": _renumbered(data["annotations"], tables, dataset,
                                              image_rows, category_rows, name)}
        try:
            return read_coco_results(records, dataset, iou_type=iou_type, invalid=invalid)
        except FormatError as error:
            raise _named_error(error, name) from None
    try:
        detections = read_coco_results(records, own, iou_type=iou_type, invalid=invalid)
    except FormatError as error:
        raise _named_error(error, name) from None
    bad = np.flatnonzero(detections.category_index < 0)
    if len(bad):
        raise FormatError(f"category_id {int(detections.category_ids[bad[0]])} is not in "
                          "'categories'", source=name, record=f"annotations[{bad[0]}]")
    category_index = np.where(detections.category_index >= 0,
                              category_rows[np.maximum(detections.category_index, 0)], -1)
    category_ids = np.where(category_index >= 0,
                            dataset.categories.ids[np.maximum(category_index, 0)], -1)
    return detections.replace(image_index=image_rows[detections.image_index],
                              category_index=category_index, category_ids=category_ids)


def _renumbered(records: list, tables: _Tables, dataset: Dataset, image_rows: np.ndarray,
                category_rows: np.ndarray, name: str) -> list:
    image_of = dict(zip(tables.image_ids.tolist(),
                        dataset.images.ids[image_rows].tolist()))
    unknown = int(dataset.categories.ids.max(initial=0)) + 1
    category_of = {int(c): (int(dataset.categories.ids[r]) if r >= 0 else unknown)
                   for c, r in zip(tables.category_ids.tolist(), category_rows.tolist())}
    out = []
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise FormatError("must be a JSON object", source=name, record=f"annotations[{i}]")
        image, category = record.get("image_id"), record.get("category_id")
        if image not in image_of:
            raise FormatError(f"image_id {image!r} is not in 'images'", source=name,
                              record=f"annotations[{i}]")
        if category not in category_of:
            raise FormatError(f"category_id {category!r} is not in 'categories'",
                              source=name, record=f"annotations[{i}]")
        out.append({**record, "image_id": image_of[image], "category_id": category_of[category]})
    return out


def _named_error(error: FormatError, name: str) -> FormatError:
    message = error.message
    if "is not an image of the ground truth" in message:
        message = message.split(" is not an image of the ground truth")[0] + " is not in 'images'"
    return FormatError(message, source=name if (error.source or "<").startswith("<")
                       else error.source, record=error.record, hint=error.hint,
                       cli_hint=error.cli_hint)
