"""``COCO``: pycocotools' dataset API, with deteval's columnar tables behind it.

The class keeps the dict indexes pycocotools users read (``dataset``, ``anns``, ``imgs``,
``cats``, ``imgToAnns``, ``catToImgs``) and the same methods, return values and printed
lines. What differs is *when* work is done: a file is read into deteval's columns at once
(fast, and the errors name the file and the record), while the dicts are built the first
time someone reads them. A results object made by :meth:`COCO.loadRes` from 500k detections
therefore costs what deteval's reader costs, unless its ``anns`` are read.

:class:`~deteval.compat.cocoeval.COCOeval` evaluates from the columns, never from the dicts.
The columns are read once per object (and IoU type) and kept: after editing ``dataset`` or
its records in place, call :meth:`COCO.createIndex`, as pycocotools' own index needs.

Unlike pycocotools, nothing passed in is modified: ``loadRes`` gives its records ``id``,
``area`` (and ``bbox``, ``segmentation``, ``iscrowd``) on copies, and an evaluation does not
rewrite the ground truth's segmentations as RLE.

Examples
--------
>>> import contextlib, io
>>> gt = {"images": [{"id": 1, "height": 20, "width": 30}],
...       "categories": [{"id": 7, "name": "box", "supercategory": "thing"}],
...       "annotations": [{"id": 5, "image_id": 1, "category_id": 7, "bbox": [1, 1, 4, 4],
...                        "area": 16, "iscrowd": 0}]}
>>> with contextlib.redirect_stdout(io.StringIO()):
...     coco = COCO(gt)
...     res = coco.loadRes([{"image_id": 1, "category_id": 7, "bbox": [1, 1, 4, 3],
...                          "score": 0.5}])
>>> coco.getAnnIds(imgIds=[1]), res.anns[1]["area"], res.anns[1]["id"]
([5], 12, 1)
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import time
from collections import defaultdict
from typing import Any

import numpy as np
import orjson

from ..data import Dataset, Detections
from ..errors import DetevalError, FormatError
from ..io._json import read_bytes
from ..io.coco import read_coco_gt, read_coco_results
from . import mask as maskUtils

__all__ = ["COCO", "ResultsError", "NotSupportedError"]

_IOU_TYPES = ("bbox", "segm", "keypoints")


class ResultsError(FormatError, AssertionError):
    """Results ``loadRes`` cannot take (pycocotools fails with an ``AssertionError`` there).

    A :class:`~deteval.errors.FormatError` whose message names the source and the record;
    also an ``AssertionError``, so that code written against pycocotools catches it as before.
    """


class NotSupportedError(DetevalError, NotImplementedError):
    """A pycocotools method that :mod:`deteval.compat` does not provide."""


def _isArrayLike(obj: Any) -> bool:  # noqa: N802 - pycocotools' name and test
    return hasattr(obj, "__iter__") and hasattr(obj, "__len__")


class _Lazy:
    """A data descriptor whose value is built by ``owner._build(name)`` on first read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        values = obj.__dict__
        if self.name not in values:
            obj._build(self.name)
        return values[self.name]

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value
        if self.name == "dataset":
            obj._columns_from_dict()


_INDEX_NAMES = ("anns", "cats", "imgs", "imgToAnns", "catToImgs")


class COCO:
    """pycocotools' ``COCO`` class: a dataset (or a results set) and its indexes.

    Parameters
    ----------
    annotation_file : str, PathLike, dict or None
        A COCO instances file, its parsed content (a dict, never modified; pycocotools takes
        only a path) or None for an empty object (fill ``dataset``, then call
        :meth:`createIndex`, as torchvision's ``convert_to_coco_api`` does).

    Attributes
    ----------
    dataset : dict
        The file's content (parsed on first access when the object was read from a file).
    anns, imgs, cats : dict
        Records by id.
    imgToAnns : defaultdict(list)
        Annotation records by image id, in file order.
    catToImgs : defaultdict(list)
        Image ids by category id, one entry per annotation.

    Notes
    -----
    Like pycocotools, the constructor prints ``loading annotations into memory...``,
    ``Done (t=...)``, ``creating index...`` and ``index created!``.
    """

    dataset = _Lazy()
    anns = _Lazy()
    cats = _Lazy()
    imgs = _Lazy()
    imgToAnns = _Lazy()
    catToImgs = _Lazy()

    def __init__(self, annotation_file: Any = None) -> None:
        self._path: str | None = None       # where the columns are read from, if a file
        self._columns: dict[str, Any] = {}  # iou_type -> Dataset / error
        self._results: _Results | None = None
        if annotation_file is None:
            self.dataset = {}
            return
        print("loading annotations into memory...")
        tic = time.time()
        if isinstance(annotation_file, dict):
            self.dataset = annotation_file
        elif isinstance(annotation_file, (str, os.PathLike)):
            self._path = os.fspath(annotation_file)
            self._read_file()
        else:
            raise TypeError(f"COCO(annotation_file) takes a path, a dict or None; got "
                            f"{type(annotation_file).__name__}")
        print(f"Done (t={time.time() - tic:0.2f}s)")
        print("creating index...")
        print("index created!")

    # -- lazily built state -------------------------------------------------------------------

    def _read_file(self) -> None:
        """Read the file into bbox columns now; parse it into dicts only if that fails."""
        try:
            self._columns["bbox"] = read_coco_gt(self._path)
        except FormatError as error:
            data = self._parse_file()   # a file pycocotools reads but deteval cannot evaluate
            self._columns["bbox"] = error
            self.__dict__["dataset"] = data

    def _parse_file(self) -> dict:
        raw = read_bytes(self._path, what="annotation")
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            try:
                data = json.loads(raw)      # NaN, Infinity, huge integers: as json.load reads
            except ValueError as error:
                raise FormatError(f"not valid JSON ({error})", source=self._path) from None
        if not isinstance(data, dict):
            raise FormatError(f"annotation file format {type(data)} not supported: a COCO "
                              "file holds one JSON object", source=self._path)
        return data

    def _build(self, name: str) -> None:
        if name == "dataset":
            if self._results is not None:
                self.__dict__["dataset"] = self._results.dataset()
            elif self._path is not None:
                self.__dict__["dataset"] = self._parse_file()
            else:
                self.__dict__["dataset"] = {}
            return
        self._index()

    def _index(self) -> None:
        anns, cats, imgs = {}, {}, {}
        img_to_anns, cat_to_imgs = defaultdict(list), defaultdict(list)
        data = self.dataset
        if "annotations" in data:
            for ann in data["annotations"]:
                img_to_anns[ann["image_id"]].append(ann)
                anns[ann["id"]] = ann
        if "images" in data:
            for img in data["images"]:
                imgs[img["id"]] = img
        if "categories" in data:
            for cat in data["categories"]:
                cats[cat["id"]] = cat
        if "annotations" in data and "categories" in data:
            for ann in data["annotations"]:
                cat_to_imgs[ann["category_id"]].append(ann["image_id"])
        values = self.__dict__
        values["anns"], values["imgToAnns"], values["catToImgs"] = anns, img_to_anns, cat_to_imgs
        values["imgs"], values["cats"] = imgs, cats

    def _columns_from_dict(self) -> None:
        """From now on the evaluation reads ``dataset`` (it was assigned or re-indexed)."""
        self._path = None
        self._results = None
        self._columns = {}

    def _indexed(self) -> bool:
        return "imgs" in self.__dict__ or "dataset" in self.__dict__

    def createIndex(self) -> None:  # noqa: N802 - pycocotools' name
        """Build ``anns``, ``imgs``, ``cats``, ``imgToAnns`` and ``catToImgs`` from ``dataset``.

        The evaluation reads ``dataset`` afresh after this call (call it after editing).
        """
        print("creating index...")
        dataset = self.dataset
        self._columns_from_dict()
        self.__dict__["dataset"] = dataset
        self._index()
        print("index created!")

    # -- columns for the evaluation -----------------------------------------------------------

    def _gt_columns(self, iou_type: str) -> Dataset:
        """The ground truth as a :class:`~deteval.data.Dataset` read for ``iou_type``."""
        if iou_type not in self._columns:
            source = self._path if self._path is not None else self.dataset
            try:
                self._columns[iou_type] = read_coco_gt(source, iou_type=iou_type)
            except FormatError as error:
                self._columns[iou_type] = error
        value = self._columns[iou_type]
        if isinstance(value, Exception):
            raise FormatError(f"this ground truth cannot be evaluated ({value})") from None
        return value

    def _detection_columns(self, gt: Dataset, iou_type: str) -> Detections:
        """The annotations as :class:`~deteval.data.Detections` of ``gt``, for ``iou_type``."""
        if self._results is not None:
            return self._results.detections(gt, iou_type)
        key = (id(gt), iou_type)
        cached = self._columns.get(key)
        if cached is None or cached[0] is not gt:
            records = self.dataset.get("annotations", [])
            detections = read_coco_results(list(records), gt, iou_type=iou_type)
            if records and all("id" in r for r in records):
                detections = detections.replace(ids=[r["id"] for r in records])
            if records and all("area" in r for r in records):
                detections = detections.replace(area=[r["area"] for r in records])
            cached = self._columns[key] = (gt, detections)
        return cached[1]

    # -- pycocotools' query methods -----------------------------------------------------------

    def info(self) -> None:
        """Print the ``info`` section, one ``key: value`` line per entry."""
        for key, value in self.dataset["info"].items():
            print(f"{key}: {value}")

    def getAnnIds(self, imgIds=[], catIds=[], areaRng=[], iscrowd=None):  # noqa: B006,N802,N803
        """Ids of the annotations on ``imgIds``, of ``catIds``, with area strictly inside
        ``areaRng`` and ``iscrowd`` equal (each filter skipped when empty / None)."""
        imgIds = imgIds if _isArrayLike(imgIds) else [imgIds]  # noqa: N806
        catIds = catIds if _isArrayLike(catIds) else [catIds]  # noqa: N806
        if len(imgIds) == len(catIds) == len(areaRng) == 0:
            anns = self.dataset["annotations"]
        else:
            if len(imgIds) != 0:
                index = self.imgToAnns
                anns = list(itertools.chain.from_iterable(
                    index[i] for i in imgIds if i in index))
            else:
                anns = self.dataset["annotations"]
            if len(catIds) != 0:
                anns = [ann for ann in anns if ann["category_id"] in catIds]
            if len(areaRng) != 0:
                anns = [ann for ann in anns if areaRng[0] < ann["area"] < areaRng[1]]
        if iscrowd is not None:
            return [ann["id"] for ann in anns if ann["iscrowd"] == iscrowd]
        return [ann["id"] for ann in anns]

    def getCatIds(self, catNms=[], supNms=[], catIds=[]):  # noqa: B006,N802,N803
        """Ids of the categories named ``catNms``, of super-categories ``supNms``, among
        ``catIds`` (each filter skipped when empty), in file order."""
        catNms = catNms if _isArrayLike(catNms) else [catNms]  # noqa: N806
        supNms = supNms if _isArrayLike(supNms) else [supNms]  # noqa: N806
        catIds = catIds if _isArrayLike(catIds) else [catIds]  # noqa: N806
        if len(catNms) == len(supNms) == len(catIds) == 0 and not self._indexed():
            table = self._columns.get("bbox")
            if isinstance(table, Dataset):        # no need to parse the file for this
                return table.categories.ids.tolist()
        cats = self.dataset["categories"]
        if len(catNms) != 0:
            cats = [cat for cat in cats if cat["name"] in catNms]
        if len(supNms) != 0:
            cats = [cat for cat in cats if cat["supercategory"] in supNms]
        if len(catIds) != 0:
            cats = [cat for cat in cats if cat["id"] in catIds]
        return [cat["id"] for cat in cats]

    def getImgIds(self, imgIds=[], catIds=[]):  # noqa: B006,N802,N803
        """Ids of the images among ``imgIds`` that hold every category of ``catIds``."""
        imgIds = imgIds if _isArrayLike(imgIds) else [imgIds]  # noqa: N806
        catIds = catIds if _isArrayLike(catIds) else [catIds]  # noqa: N806
        if len(imgIds) == len(catIds) == 0:
            table = self._columns.get("bbox")
            if isinstance(table, Dataset) and not self._indexed():
                return table.images.ids.tolist()
            return list(self.imgs.keys())
        ids = set(imgIds)
        for i, cat_id in enumerate(catIds):
            if i == 0 and len(ids) == 0:
                ids = set(self.catToImgs[cat_id])
            else:
                ids &= set(self.catToImgs[cat_id])
        return list(ids)

    def loadAnns(self, ids=[]):  # noqa: B006,N802
        """The annotation records of ``ids`` (a list, or one ``int``)."""
        return _load(self.anns, ids)

    def loadCats(self, ids=[]):  # noqa: B006,N802
        """The category records of ``ids`` (a list, or one ``int``)."""
        return _load(self.cats, ids)

    def loadImgs(self, ids=[]):  # noqa: B006,N802
        """The image records of ``ids`` (a list, or one ``int``)."""
        return _load(self.imgs, ids)

    def showAnns(self, anns, draw_bbox=False):  # noqa: N802
        """Not provided: use :mod:`deteval.viz` to draw annotations."""
        raise NotSupportedError("COCO.showAnns is not supported by deteval.compat; draw with "
                                "deteval.viz (or the real pycocotools)")

    def download(self, tarDir=None, imgIds=[]):  # noqa: B006,N803
        """Not provided: deteval does not download images."""
        raise NotSupportedError("COCO.download is not supported by deteval.compat; download "
                                "the images with the real pycocotools or from cocodataset.org")

    # -- results ------------------------------------------------------------------------------

    def loadRes(self, resFile):  # noqa: N802,N803
        """A results object for this ground truth, as pycocotools' ``loadRes`` makes it.

        Parameters
        ----------
        resFile : str, PathLike, list of dict or ndarray
            A results JSON file, its records, or an (N, 7) array of rows ``[image_id, x, y,
            w, h, score, category_id]``. Never modified.

        Returns
        -------
        COCO
            Records get ids ``1..N`` and, by the kind of the *first* record: boxes (non-empty
            ``bbox``) get ``area = w * h``, ``iscrowd = 0`` and a box polygon as
            ``segmentation`` when they have none; masks get the mask's area (and box when
            absent); keypoints get the extent of their points as box and area.

        Raises
        ------
        ResultsError
            (an ``AssertionError`` and a ``FormatError``) not a list, an empty list, a
            result on an image the ground truth does not have, a record without a needed
            field; the message names the record.
        """
        res = COCO()
        print("Loading and preparing results...")
        tic = time.time()
        res._results = _Results.read(self, resFile)
        res.__dict__.pop("dataset")      # built from the results when read
        print(f"DONE (t={time.time() - tic:0.2f}s)")
        print("creating index...")
        print("index created!")
        return res

    def loadNumpyAnnotations(self, data):  # noqa: N802
        """Records ``{"image_id", "bbox", "score", "category_id"}`` of an (N, 7) array."""
        _check_array(data)
        return _numpy_records(data)

    def annToRLE(self, ann):  # noqa: N802
        """The annotation's segmentation as compressed RLE (polygons merged)."""
        t = self.imgs[ann["image_id"]]
        h, w = t["height"], t["width"]
        segm = ann["segmentation"]
        if isinstance(segm, list):
            return maskUtils.merge(maskUtils.frPyObjects(segm, h, w))
        if isinstance(segm["counts"], list):
            return maskUtils.frPyObjects(segm, h, w)
        return segm

    def annToMask(self, ann):  # noqa: N802
        """The annotation's binary mask, shape (height, width), uint8."""
        return maskUtils.decode(self.annToRLE(ann))


def _load(table: dict, ids: Any) -> list | None:
    if _isArrayLike(ids):
        return [table[i] for i in ids]
    if type(ids) is int:
        return [table[ids]]
    return None   # pycocotools returns None for anything else (a numpy integer too)


def _check_array(data: Any) -> None:
    """Refuse anything but an (N, 7) array; print what loadNumpyAnnotations prints."""
    print("Converting ndarray to lists...")
    if not isinstance(data, np.ndarray) or data.ndim != 2 or data.shape[1] != 7:
        shape = getattr(data, "shape", None)
        raise ResultsError("a results array must have shape (N, 7) with columns image_id, x, "
                           f"y, w, h, score, category_id; got shape {shape}",
                           source="<ndarray>")
    print(data.shape)
    for i in range(0, data.shape[0], 1000000):
        print(f"{i}/{data.shape[0]}")


def _numpy_records(data: np.ndarray) -> list[dict]:
    return [{"image_id": int(row[0]), "bbox": [row[1], row[2], row[3], row[4]],
             "score": row[5], "category_id": int(row[6])} for row in data]


def _kind(first: Any) -> str:
    """loadRes' branch for the first record: caption, bbox, segm, keypoints or none."""
    if not isinstance(first, dict):
        raise ResultsError(f"each result must be a JSON object; got {type(first).__name__}",
                           record="results[0]")
    if "caption" in first:
        return "caption"
    if "bbox" in first and not first["bbox"] == []:
        return "bbox"
    if "segmentation" in first:
        return "segm"
    if "keypoints" in first:
        return "keypoints"
    return "none"


class _Results:
    """What ``loadRes`` was given, read into columns, with the records built on demand."""

    def __init__(self, gt: COCO, source: Any, kind: str, name: str):
        self.gt, self.source, self.kind, self.name = gt, source, kind, name
        self._detections: dict[str, tuple[Dataset, Detections]] = {}

    @classmethod
    def read(cls, gt: COCO, source: Any) -> _Results:
        if isinstance(source, np.ndarray):
            _check_array(source)
            if len(source) == 0:
                raise ResultsError("the results array is empty; pycocotools' loadRes fails on "
                                   "no results (use COCO() for none, as torchvision does)",
                                   source="<ndarray>")
            results = cls(gt, source, "bbox", "<ndarray>")
        elif isinstance(source, (str, os.PathLike)):
            path = os.fspath(source)
            results = cls(gt, path, _file_kind(path), path)
        elif isinstance(source, list):
            if len(source) == 0:
                raise ResultsError("the results list is empty; pycocotools' loadRes fails on "
                                   "no results (use COCO() for none, as torchvision does)")
            results = cls(gt, list(source), _kind(source[0]), "<list>")
        else:
            raise ResultsError(f"results must be a list of objects, a file path or an (N, 7) "
                               f"array; got {type(source).__name__}")
        if results.kind == "caption":
            return results
        if results.kind == "none":
            raise ResultsError("the first result has no 'bbox', 'segmentation', 'keypoints' "
                               "or 'caption': loadRes cannot tell what the results are",
                               source=results.name, record="results[0]")
        # Read (and check) now, for the IoU type the results are made for.
        gt_table = gt._gt_columns(results.kind)
        results.detections(gt_table, results.kind)
        return results

    def detections(self, gt: Dataset, iou_type: str) -> Detections:
        """The results as columns of ``gt``, with what an ``iou_type`` evaluation needs."""
        if self.kind == "caption":
            raise FormatError("caption results cannot be evaluated by COCOeval",
                              source=self.name)
        # Results of another kind than bbox carry the box and area an evaluation of boxes
        # needs once read as their own kind (loadRes derives them from the mask / points).
        read_as = self.kind if iou_type == "bbox" and self.kind != "bbox" else iou_type
        cached = self._detections.get(read_as)
        if cached is None or cached[0] is not gt:
            try:
                detections = read_coco_results(self.source, gt, iou_type=read_as)
            except FormatError as error:
                raise ResultsError(error.message, source=error.source or self.name,
                                   record=error.record) from None
            cached = self._detections[read_as] = (gt, detections)
        return cached[1]

    @property
    def scores_are_numpy(self) -> bool:
        """loadRes of an array keeps its scores as numpy floats."""
        return isinstance(self.source, np.ndarray)

    def records(self) -> list[dict]:
        """Fresh result records, completed as loadRes completes them."""
        if isinstance(self.source, np.ndarray):
            anns = _numpy_records(self.source)
        elif isinstance(self.source, str):
            with open(self.source, "rb") as f:
                anns = orjson.loads(f.read())
        else:
            anns = [dict(ann) for ann in self.source]
        _complete(anns, self.kind)
        return anns

    def dataset(self) -> dict:
        gt = self.gt.dataset
        data: dict[str, Any] = {"info": copy.deepcopy(gt.get("info", {})),
                                "images": list(gt["images"])}
        anns = self.records()
        if self.kind == "caption":
            ids = {ann["image_id"] for ann in anns}
            data["images"] = [img for img in data["images"] if img["id"] in ids]
        else:
            data["categories"] = copy.deepcopy(gt["categories"])
        data["annotations"] = anns
        return data


def _file_kind(path: str) -> str:
    """The loadRes branch of a results file's first record, read without parsing the rest."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        read_bytes(path, what="results")   # raises the error that names the file
        raise
    text = head.decode("utf-8", errors="ignore")
    start = len(text) - len(text.lstrip())
    if not text[start:start + 1] == "[":
        raise ResultsError("results must be a JSON list of objects", source=path)
    rest = text[start + 1:].lstrip()
    if rest.startswith("]"):
        raise ResultsError("the results file holds an empty list; pycocotools' loadRes fails "
                           "on no results", source=path)
    offset = len(text) - len(rest)
    decoder = json.JSONDecoder()
    try:
        first, _ = decoder.raw_decode(text, offset)
    except ValueError:
        try:    # a first record longer than the sample, or the file is not JSON
            first, _ = decoder.raw_decode(read_bytes(path, what="results").decode("utf-8"),
                                          offset)
        except ValueError as error:
            raise ResultsError(f"not valid JSON ({error})", source=path) from None
    return _kind(first)


def _complete(anns: list[dict], kind: str) -> None:
    """Give each record what loadRes gives it (ids 1..N, area, box, ...), in place."""
    for i, ann in enumerate(anns):
        if kind == "bbox":
            bb = ann["bbox"]
            x1, x2, y1, y2 = bb[0], bb[0] + bb[2], bb[1], bb[1] + bb[3]
            if "segmentation" not in ann:
                ann["segmentation"] = [[x1, y1, x1, y2, x2, y2, x2, y1]]
            ann["area"] = bb[2] * bb[3]
            ann["id"] = i + 1
            ann["iscrowd"] = 0
        elif kind == "segm":
            ann["area"] = maskUtils.area(ann["segmentation"])
            if "bbox" not in ann:
                ann["bbox"] = maskUtils.toBbox(ann["segmentation"])
            ann["id"] = i + 1
            ann["iscrowd"] = 0
        elif kind == "keypoints":
            s = ann["keypoints"]
            x, y = s[0::3], s[1::3]
            x0, x1, y0, y1 = np.min(x), np.max(x), np.min(y), np.max(y)
            ann["area"] = (x1 - x0) * (y1 - y0)
            ann["id"] = i + 1
            ann["bbox"] = [x0, y0, x1 - x0, y1 - y0]
        else:
            ann["id"] = i + 1
