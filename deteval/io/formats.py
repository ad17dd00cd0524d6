"""Format detection and one entry point per direction (read, write, convert).

``read_gt(path)`` and ``read_detections(path, dataset)`` look at a path, decide which format
it holds (:func:`detect_format`; ``format=`` overrides the guess) and call that format's
reader; ``write_gt`` and :func:`convert` go the other way for COCO, VOC, YOLO and CSV.

=============== ======================================== ================================
format          ground truth                             detections
=============== ======================================== ================================
``coco``        instances JSON                           results JSON (list or dict)
``voc``         folder of Pascal VOC XML (or one file)   --
``yolo``        folder of ``class cx cy w h`` txt        ``class cx cy w h score``
``csv``         CSV/TSV, columns named by the user       the same with a score column
``openimages``  Open Images box CSV (normalised)         the same with a ``Score`` column
``labelme``     folder of LabelMe JSON (or one file)     --
``cvat``        CVAT for images XML                      --
``txt``         --                                       ``class score <box>``, one file
                                                         per image
``dota``        folder of DOTA ``x1 y1 ... x4 y4 class   folder of ``Task1_<class>.txt``
                difficult`` txt (or one file)            (``image score x1 y1 ... y4``)
=============== ======================================== ================================

Images are identified across files by their *key*: the file name without folders and without
an image extension (``"a/b/2007_000027.jpg"`` -> ``"2007_000027"``). Formats keyed by file
name (everything but COCO) number their images ``1..n`` in key order, and their categories
``1..k`` in the order of ``classes`` (default: sorted names); YOLO's categories are its class
indices ``0..k-1``.

Paths written inside annotation files (VOC ``<filename>``, LabelMe ``imagePath``, CVAT image
names) are never opened: only their last component is looked up among the files of the
``images_dir`` the caller named.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from .._format_names import DETECTION_FORMATS, GT_FORMATS, WRITE_FORMATS
from ..data import Dataset, Detections
from ..errors import FormatError, FormatWarning
from ._common import xml_root_tag
from ._json import check_input_file, open_input

__all__ = ["DETECTION_FORMATS", "FormatWarning", "GT_FORMATS", "convert", "detect_format",
           "read_detections", "read_gt", "write_gt"]


def _looks_like_labelme(path: Path) -> bool:
    with open_input(path, what="annotation") as handle:
        head = handle.read(65536)
    return b'"shapes"' in head or b'"imagePath"' in head


def detect_format(path: str | os.PathLike, *, kind: str = "gt") -> str:
    """Guess the format of an annotation (``kind="gt"``) or detection path.

    Rules: ``.json`` is COCO unless it looks like LabelMe (``shapes``/``imagePath`` keys); an
    ``.xml`` file is CVAT when its root is ``<annotations>`` and VOC when ``<annotation>``;
    a ``.csv``/``.tsv`` file is Open Images when its header has ``ImageID`` and ``XMin``, else
    generic CSV; a folder is VOC (``.xml`` files or an ``Annotations`` folder), LabelMe
    (``.json``), or, with ``.txt`` files, DOTA when they hold DOTA lines (ground truth) or
    ``Task1_<class>.txt`` files (detections), else YOLO ground truth or ``txt`` detections.

    Raises
    ------
    FormatError
        The path does not exist or matches no rule (pass ``format=``).
    """
    if kind not in ("gt", "detections"):
        raise ValueError(f"kind must be 'gt' or 'detections'; got {kind!r}")
    path = Path(path)
    if not path.exists():
        raise FormatError("does not exist", source=str(path))
    formats = GT_FORMATS if kind == "gt" else DETECTION_FORMATS
    if not path.is_dir():
        check_input_file(path, what="annotation" if kind == "gt" else "detections")
    if path.is_file():
        suffix = path.suffix.lower()
        guess = None
        if suffix == ".json":
            guess = "labelme" if kind == "gt" and _looks_like_labelme(path) else "coco"
        elif suffix == ".xml":
            tag = xml_root_tag(path)
            guess = {"annotations": "cvat", "annotation": "voc"}.get(tag)
        elif suffix in (".csv", ".tsv", ".tab"):
            with open_input(path, what="CSV") as handle:
                header = handle.readline(65536)
            guess = "openimages" if b"ImageID" in header and b"XMin" in header else "csv"
        elif suffix == ".txt" and kind == "detections":
            from .dota import is_task1_file
            guess = "dota" if is_task1_file(path) else "txt"
        elif suffix == ".txt":
            from .dota import looks_like_dota_labels
            guess = "dota" if looks_like_dota_labels(path) else None
        if guess in formats:
            return guess
        raise FormatError(f"cannot tell the {'ground-truth' if kind == 'gt' else 'detection'} "
                          f"format of this file: pass format= (one of {', '.join(formats)})",
                          source=str(path))
    names = {p.name for p in path.iterdir()}
    suffixes = {p.suffix.lower() for p in path.iterdir() if p.is_file()}
    if kind == "gt":
        xml_files = sorted(p for p in path.iterdir() if p.suffix.lower() == ".xml")
        if xml_files and "Annotations" not in names and xml_root_tag(xml_files[0]) == \
                "annotations":
            raise FormatError(f"this folder holds a CVAT file, not Pascal VOC files: pass the "
                              f"file itself ({xml_files[0]})", source=str(path))
        if "Annotations" in names or ".xml" in suffixes:
            return "voc"
        if ".json" in suffixes:
            return "labelme"
        from .dota import folder_looks_like_dota
        if folder_looks_like_dota(path):
            return "dota"
        if ({"obj_train_data", "labels", "obj.names", "classes.txt", "obj.data"} & names
                or ".txt" in suffixes):
            return "yolo"
    elif ".txt" in suffixes:
        from .dota import is_task1_file
        return "dota" if any(is_task1_file(p) for p in path.iterdir()) else "txt"
    raise FormatError(f"cannot tell the format of this folder: pass format= (one of "
                      f"{', '.join(formats)})", source=str(path))


def _check_format(format: str, formats: tuple[str, ...]) -> None:
    if format not in formats:
        raise ValueError(f"format must be one of {', '.join(map(repr, formats))}; "
                         f"got {format!r}")


def read_gt(path: str | os.PathLike, format: str | None = None, **options: Any) -> Dataset:
    """Read ground truth in any supported format into a :class:`Dataset`.

    Parameters
    ----------
    path : str or PathLike
        A file or folder (see :func:`detect_format`).
    format : str, optional
        One of :data:`GT_FORMATS`; guessed from ``path`` when omitted.
    **options
        Passed to the format's reader: :func:`deteval.io.voc.read_voc`,
        :func:`deteval.io.yolo.read_yolo`, :func:`deteval.io.csv.read_csv`,
        :func:`deteval.io.csv.read_openimages`, :func:`deteval.io.labelme.read_labelme`,
        :func:`deteval.io.cvat.read_cvat`, :func:`deteval.io.dota.read_dota` (COCO takes
        none).
    """
    format = format or detect_format(path, kind="gt")
    _check_format(format, GT_FORMATS)
    if format == "coco":
        from .coco import read_coco_gt
        if options:
            raise TypeError(f"COCO ground truth takes no options; got {sorted(options)}")
        return read_coco_gt(path)
    if format == "voc":
        from .voc import read_voc
        return read_voc(path, **options)
    if format == "yolo":
        from .yolo import read_yolo
        return read_yolo(path, **options)
    if format == "csv":
        from .csv import read_csv
        return read_csv(path, **options)
    if format == "openimages":
        from .csv import read_openimages
        return read_openimages(path, **options)
    if format == "labelme":
        from .labelme import read_labelme
        return read_labelme(path, **options)
    if format == "dota":
        from .dota import read_dota
        return read_dota(path, **options)
    from .cvat import read_cvat
    return read_cvat(path, **options)


def read_detections(path: str | os.PathLike, dataset: Dataset, format: str | None = None,
                    **options: Any) -> Detections:
    """Read detections in any supported format for ``dataset``.

    Parameters
    ----------
    path : str or PathLike
    dataset : Dataset
        The ground truth; detections find their images by id (COCO results lists) or by file
        name (everything else) and their categories by id or name.
    format : str, optional
        One of :data:`DETECTION_FORMATS`; guessed when omitted. A folder of ``.txt`` files is
        taken for ``txt`` (``class score <box>``, needs ``box_format=``); YOLO's
        ``class cx cy w h score`` needs ``format="yolo"``.
    **options
        Passed to :func:`deteval.io.txt.read_txt_detections`,
        :func:`deteval.io.yolo.read_yolo_detections`,
        :func:`deteval.io.csv.read_csv_detections` or
        :func:`deteval.io.csv.read_openimages_detections`,
        :func:`deteval.io.dota.read_dota_detections`. COCO takes ``match_by``:
        ``"auto"`` (default), ``"id"`` or ``"name"``; a plain results list refers to images
        and categories by id, a results file with its own ``images`` and ``categories``
        (as written by some tools) is matched by file name and category name, and refused
        under ``"auto"`` where its ids and names point to different things (the rule of
        ``docs/resolution.md``).
    """
    format = format or detect_format(path, kind="detections")
    _check_format(format, DETECTION_FORMATS)
    if format == "coco":
        return _read_coco_detections(path, dataset, **options)
    if format == "txt":
        from .txt import read_txt_detections
        if "box_format" not in options:
            raise FormatError("txt detections need box_format= ('xywh' for class score x y w h,"
                              " 'xyxy' for class score x1 y1 x2 y2, 'cxcywhn' for relative "
                              "centres, ...); YOLO's class cx cy w h score needs "
                              "format='yolo'", source=str(path))
        return read_txt_detections(path, dataset, **options)
    if format == "dota":
        from .dota import read_dota_detections
        return read_dota_detections(path, dataset, **options)
    if format == "yolo":
        from .yolo import read_yolo_detections
        return read_yolo_detections(path, dataset, **options)
    if format == "csv":
        from .csv import read_csv_detections
        return read_csv_detections(path, dataset, **options)
    from .csv import read_openimages_detections
    return read_openimages_detections(path, dataset, **options)


def _read_coco_detections(path: Any, dataset: Dataset, *, match_by: str = "auto"):
    """COCO results, resolved by the one rule of ``docs/resolution.md``."""
    from .._inputs import read_coco_detections

    return read_coco_detections(path, dataset, match_by=match_by)


def _write_format(path: Path, format: str | None) -> str:
    if format is not None:
        _check_format(format, WRITE_FORMATS)
        return format
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "coco"
    if suffix in (".csv", ".tsv"):
        return "csv"
    raise ValueError(f"cannot tell which format to write to {str(path)!r}: pass format= "
                     f"(one of {', '.join(WRITE_FORMATS)}; a folder takes 'voc' or 'yolo')")


def write_gt(dataset: Dataset, path: str | os.PathLike, format: str | None = None,
             **options: Any) -> None:
    """Write ground truth as COCO JSON, a VOC XML folder, a YOLO folder or a CSV file.

    ``format`` defaults from the suffix (``.json`` COCO, ``.csv``/``.tsv`` CSV); folders need
    ``format="voc"`` or ``"yolo"``. ``options`` go to :func:`deteval.io.voc.write_voc`,
    :func:`deteval.io.yolo.write_yolo` or :func:`deteval.io.csv.write_csv`.
    """
    path = Path(path)
    format = _write_format(path, format)
    if format == "coco":
        from .coco import dataset_to_coco
        if options:
            raise TypeError(f"COCO writing takes no options; got {sorted(options)}")
        path.write_bytes(orjson.dumps(dataset_to_coco(dataset)))
    elif format == "voc":
        from .voc import write_voc
        write_voc(dataset, path, **options)
    elif format == "yolo":
        from .yolo import write_yolo
        write_yolo(dataset, path, **options)
    else:
        from .csv import write_csv
        write_csv(dataset, path, **options)


def convert(src: str | os.PathLike, dst: str | os.PathLike, *, src_format: str | None = None,
            dst_format: str | None = None, read_options: Mapping[str, Any] | None = None,
            write_options: Mapping[str, Any] | None = None) -> Dataset:
    """Convert ground truth between formats: read ``src`` (any reader), write ``dst`` (COCO,
    VOC, YOLO or CSV). Returns the dataset read.

    Boxes survive a round trip through COCO, VOC and CSV to 1e-9 pixels (numbers are written
    with Python's shortest exact ``repr``; COCO's ``x + w`` adds one rounding), and through
    YOLO to the precision written (``decimals=None``: exact up to the division by the image
    size, about 1e-13 relative; ``decimals=6``: half a millionth of the image size).
    What a format cannot hold is lost: YOLO and CSV have no image ids (images are renumbered
    in name order), YOLO has no *difficult* flag, CSV keeps images without objects only as
    rows with an empty class.

    Examples
    --------
    >>> convert("gts/pascalvoc_format", "gt.json")  # doctest: +SKIP
    >>> convert("gt.json", "yolo/", dst_format="yolo")  # doctest: +SKIP
    """
    dataset = read_gt(src, src_format, **dict(read_options or {}))
    write_gt(dataset, dst, dst_format, **dict(write_options or {}))
    return dataset
