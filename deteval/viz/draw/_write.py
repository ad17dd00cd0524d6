"""Drawings written to a folder: :func:`write_drawings` and what it needs."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from PIL import Image

from ..._threads import pool_size, resolve_threads
from ..._validation import check_similarity_settings, positive_integer
from ...data import Dataset, Detections
from ...errors import FormatWarning
from ...outcomes import Outcomes, match_outcomes
from . import _folder
from ._matches import _check_outcomes, check_drawn_sigmas, matched_sigmas, render_matches
from ._styles import DEFAULT_SHOW, _shown_keys, draw_legend


def select_images(outcomes: Outcomes, *, only_errors: bool = False,
                  limit: int | None = None, by_errors: bool = False) -> np.ndarray:
    """The image rows :func:`write_drawings` draws, in its order.

    Every image in table order; with ``only_errors``, ``limit`` or ``by_errors``, by number
    of errors (false positives plus missed objects), most first, ties in table order,
    without the images free of errors (``only_errors``) and at most ``limit`` of them.

    Examples
    --------
    >>> from deteval.data import Categories, Dataset, Detections, GroundTruth, Images
    >>> ds = Dataset(Images(ids=[1, 2], widths=[9, 9], heights=[9, 9]), Categories(ids=[1]),
    ...              GroundTruth(image_index=[1], category_index=[0], boxes=[[1, 1, 5, 5]]))
    >>> dt = Detections(image_index=[], category_index=[], boxes=[], scores=[])
    >>> outcomes = match_outcomes(ds, dt)
    >>> select_images(outcomes).tolist(), select_images(outcomes, by_errors=True).tolist()
    ([0, 1], [1, 0])
    """
    if limit is not None:
        limit = positive_integer("limit", limit, or_none=True)
    if not only_errors and limit is None and not by_errors:
        return np.arange(outcomes.n_images, dtype=np.int64)
    return outcomes.images_by_errors(only_errors=bool(only_errors), limit=limit)


def _warn(path: Path | None, message: str) -> None:
    # At write_drawings' caller: _warn <- _replay <- _draw_chosen <- write_drawings <- caller.
    warnings.warn(message, FormatWarning, stacklevel=5)


class _Run(NamedTuple):
    """The settings of one :func:`write_drawings` call that :func:`_draw_chosen` reads."""

    dataset: Dataset
    detections: Detections
    outcomes: Outcomes
    images_dir: Path
    out_dir: Path
    format: str
    quality: int
    rank: bool
    digits: int
    show: Any
    labels: bool
    options: dict
    report: Callable[[Path | None, str], Any]
    progress: Callable[[int, int, str], Any] | None


def _read_and_draw(run: _Run, image_index: int):
    """One image read and drawn (on a worker thread): ``(path, drawing or None, the source
    file's format, problems)``; the problems are kept, to be reported in drawing order by
    the caller's thread."""
    problems: list[tuple[Path | None, str]] = []
    path, picture = _read_image(run.dataset, image_index, run.images_dir,
                                lambda where, message: problems.append((where, message)))
    if picture is None:
        return path, None, None, problems
    source_format = picture.format
    # The picture was loaded here and is drawn on in place (RGB): no copy.
    drawn = render_matches(picture, run.dataset, run.detections, image_index, copy=False,
                           outcomes=run.outcomes, show=run.show, labels=run.labels,
                           **run.options)
    return path, drawn, source_format, problems


#: The keywords of draw_matches that ``draw_options`` may set.
_OPTIONS = ("line_width", "font_size", "mask_fill", "skeleton", "keypoint_sigmas",
            "keypoint_threshold")


def _save(drawn: Image.Image, target: Path, encoding: str, quality: int, thumbnail: bool):
    """Write one drawing (on a worker thread); its contact-sheet thumbnail if asked for."""
    _folder.save(drawn, target, encoding, quality)
    return _folder.thumbnail(drawn, in_place=True) if thumbnail else None


def _replay(report: Callable[[Path | None, str], Any], problems: list) -> None:
    for path, message in problems:
        report(path, message)


def _draw_chosen(chosen: np.ndarray, run: _Run, pool: _Pool, used: set[Path],
                 written: list[Path], sheet: _folder.ContactSheet) -> None:
    """Draw the chosen images: read and drawn, then encoded, on the ``pool``'s threads, a
    few images ahead; the names, the reports and the progress come in drawing order from
    this thread. Each drawing depends on its image alone: the files are the same for every
    number of threads."""
    rows = chosen.tolist()
    images = run.dataset.images
    ahead = deque(pool.submit(_read_and_draw, run, i) for i in rows[:pool.ahead])
    saves: deque = deque()   # (future, caption or None): drawings held until written
    for done, i in enumerate(rows, start=1):
        path, drawn, source_format, problems = ahead.popleft().result()
        if done + pool.ahead <= len(rows):
            ahead.append(pool.submit(_read_and_draw, run, rows[done + pool.ahead - 1]))
        _replay(run.report, problems)
        if drawn is not None:
            name, image_id = images.file_names[i], int(images.ids[i])
            encoding = _folder.output_format(run.format, source_format)
            target = _folder.output_path(run.out_dir, name, image_id, used, encoding=encoding,
                                         rank=done if run.rank else None, digits=run.digits)
            if _replaces(target, path):
                raise ValueError(f"the drawing of {path} would replace the image itself; "
                                 "choose an output folder outside the images folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            caption = (f"{done}. {Path(name).name} "
                       f"({int(run.outcomes.errors_per_image[i])} errors)"
                       if sheet.wants(len(written)) else None)
            saves.append((pool.submit(_save, drawn, target, encoding, run.quality,
                                      caption is not None), caption))
            del drawn
            while len(saves) > pool.ahead:
                _saved(saves.popleft(), sheet)   # a file that could not be written raises
            used.add(target)
            written.append(target)
        if run.progress is not None:
            run.progress(done, len(rows), images.file_names[i] or f"image id {images.ids[i]}")
    while saves:
        _saved(saves.popleft(), sheet)


def _saved(save: tuple[Any, str | None], sheet: _folder.ContactSheet) -> None:
    future, caption = save
    thumb = future.result()
    if caption is not None:
        sheet.add_thumbnail(thumb, caption)


class _Pool:
    """``submit`` on ``threads`` worker threads, or at once in this thread for one thread
    (the same calls in the same order: one thread is the plain loop); ``ahead`` images are
    read and drawn ahead of the one being written."""

    def __init__(self, threads: int) -> None:
        threads = pool_size(threads)
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="deteval") \
            if threads > 1 else None
        self.ahead = 2 * threads if threads > 1 else 1

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self.executor is not None:
            return self.executor.submit(fn, *args)
        done: Future = Future()
        try:
            done.set_result(fn(*args))
        except BaseException as error:   # raised by result(), in order, as with threads
            done.set_exception(error)
        return done

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)


def image_file(images_dir: Path, file_name: str) -> Path:
    """Where the image of ``file_name`` is under ``images_dir`` (if a name with folders is
    absent, its last part is tried); the first candidate when neither exists."""
    path = images_dir / file_name
    if not path.is_file() and (images_dir / Path(file_name).name).is_file():
        path = images_dir / Path(file_name).name
    return path


def _read_image(dataset: Dataset, image_index: int, images_dir: Path,
                report: Callable[[Path | None, str], Any]) -> tuple[Path | None, Any]:
    """The file and the picture (loaded, the file closed) of one image row, or None for the
    picture after ``report(path, message)`` when it has no file name, is missing or cannot
    be read; a picture whose size differs from the annotation's is returned after a
    report."""
    images = dataset.images
    image_id, name = int(images.ids[image_index]), images.file_names[image_index]
    if not name:
        report(None, f"image id {image_id} has no file name; skipped")
        return None, None
    path = image_file(images_dir, name)
    if not path.is_file():
        report(path, f"image {path} (image id {image_id}) not found; skipped")
        return path, None
    try:
        picture = Image.open(path)
        try:
            picture.load()   # reads the pixels and closes the file (no copy needed)
        finally:
            if getattr(picture, "fp", None) is not None:
                picture.fp.close()   # a format that keeps it open (multi-frame)
                picture.fp = None
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
        report(path, f"cannot read image {path} (image id {image_id}): {error}; skipped")
        return path, None
    mismatch = size_mismatch(dataset, image_index, picture.size)
    if mismatch:
        report(path, f"image {path} (image id {image_id}) {mismatch}; drawn in the "
               "annotation's coordinates")
    return path, picture


def size_mismatch(dataset: Dataset, image_index: int, size: tuple[int, int]) -> str | None:
    """``"is WxH pixels but its annotation says WxH"`` when the picture's size is not the
    annotation's width and height (unknown sizes are not compared), else None."""
    images = dataset.images
    expected = (images.widths[image_index], images.heights[image_index])
    if not all(np.isfinite(expected)) or tuple(map(float, size)) == expected:
        return None
    return (f"is {size[0]}x{size[1]} pixels but its annotation says {expected[0]:g}x"
            f"{expected[1]:g}")


def _replaces(target: Path, source: Path | None) -> bool:
    """Would writing ``target`` replace the image file ``source``? Only if ``target`` exists
    (one ``stat`` per drawing: no path resolution)."""
    try:
        return source is not None and target.exists() and target.samefile(source)
    except OSError:
        return False


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (b.exists() and a.samefile(b))
    except OSError:
        return False


def write_drawings(dataset: Dataset, detections: Detections, images_dir: str | os.PathLike,
                   out_dir: str | os.PathLike, *, only_errors: bool = False,
                   limit: int | None = None, by_errors: bool = False,
                   iou_threshold: float = 0.5, score_threshold: float = 0.0,
                   iou_type: str = "bbox", dilation_ratio: float | None = None,
                   on_problem: Callable[[Path | None, str], Any] | None = None,
                   outcomes: Outcomes | None = None, show: Iterable[str] = DEFAULT_SHOW,
                   labels: bool = True, format: str = "auto", quality: int = 90,
                   rank: bool = True, key: bool = True, contact_sheet: int = 24,
                   draw_options: Mapping[str, Any] | None = None,
                   progress: Callable[[int, int, str], Any] | None = None,
                   threads: int | None = None) -> list[Path]:
    """Draw the matches on the dataset's images and write them to a folder.

    Parameters
    ----------
    dataset : Dataset
    detections : Detections
    images_dir : str or PathLike
        Folder of the images, found by ``dataset.images.file_names`` (relative paths allowed;
        if a name with folders is absent, its last part is tried).
    out_dir : str or PathLike
        Created if needed. Each image is written to ``out_dir / file_name``, its base name
        prefixed by its rank in the drawing order (``rank``) and its suffix that of the
        ``format``; a repeated name gets ``-<image id>``. It may not be ``images_dir``
        itself, and a drawing that would replace its own source image raises
        ``ValueError``: the images are never overwritten. The files of a previous run into
        the same folder (listed in its manifest, ``.deteval-draw.json``) are deleted first,
        if unchanged since; no other file is touched.
    only_errors, limit, by_errors : optional
        Which images, in which order: see :func:`select_images`.
    iou_threshold, score_threshold, iou_type, dilation_ratio
        Of the matching, when ``outcomes`` is not given (see :func:`draw_matches`).
    on_problem : callable, optional
        Called as ``on_problem(path, message)`` for each problem instead of a
        :class:`~deteval.errors.FormatWarning`: an image without a file name (``path``
        None), missing or unreadable (skipped), or whose size differs from the annotation's
        width and height (drawn anyway, in annotation coordinates).
    outcomes : Outcomes, optional
        Precomputed outcomes of ``dataset`` and ``detections``.
    show, labels :
        As for :func:`draw_matches`.
    format : {"auto", "png", "jpeg"}, default "auto"
        ``auto``: JPEG (``quality``) for JPEG images, PNG (lossless: exact colours) for the
        others.
    quality : int, default 90
        JPEG quality, 1 to 95.
    rank : bool, default True
        Prefix each file name with its rank, zero-padded (``001_``, ``002_``, ...), so that
        a folder listing keeps the drawing order (most errors first when sorted so).
    key : bool, default True
        Also write ``key.png``: the legend of the drawings (:func:`draw_legend`), when at
        least one image was drawn (a run that draws nothing writes nothing, and removes the
        folder if it created it).
    contact_sheet : int, default 24
        Also write ``contact_sheet.jpg``: thumbnails of the first this many drawings (the
        worst ones when sorted by errors) on one grid; 0 for none.
    draw_options : mapping, optional
        More keywords of :func:`draw_matches` (``line_width``, ``font_size``,
        ``mask_fill``, ``skeleton``, ``keypoint_sigmas``, ``keypoint_threshold``).
    progress : callable, optional
        Called as ``progress(done, total, file_name)`` after each chosen image (drawn or
        skipped), e.g. a progress bar.
    threads : int, optional
        Threads that read, draw and encode the images, a few images ahead (Pillow decodes
        and encodes without holding the GIL); default: every core this process may use.
        The files are the same for every value; problems and ``progress`` are reported in
        drawing order from the calling thread.

    Returns
    -------
    list of pathlib.Path
        The drawings written, in drawing order (not the key and the contact sheet).

    Notes
    -----
    Pixels are drawn as stored in the file: an EXIF orientation tag is not applied, so
    the annotations must refer to the stored pixels (as COCO's and VOC's do).

    Raises
    ------
    OSError
        ``out_dir`` or a file in it cannot be written.
    ValueError
        ``out_dir`` is ``images_dir``, a drawing would replace its source image, or an
        unknown ``format``.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"dataset must be a deteval Dataset; got {type(dataset).__name__}")
    if not isinstance(detections, Detections):
        raise TypeError(f"detections must be deteval Detections; got "
                        f"{type(detections).__name__}")
    _shown_keys(show)
    if limit is not None:
        positive_integer("limit", limit, or_none=True)
    if format not in _folder.FORMATS:
        raise ValueError(f"format must be one of {', '.join(_folder.FORMATS)}; got {format!r}")
    if not 1 <= int(quality) <= 95:
        raise ValueError(f"quality must be in 1..95; got {quality!r}")
    images_dir, out_dir = Path(images_dir), Path(out_dir)
    if _same_file(out_dir, images_dir):
        raise ValueError(f"the output folder {out_dir} is the images folder: the drawings "
                         "would mix with (or replace) the images; choose another folder")
    sigmas = (draw_options or {}).get("keypoint_sigmas")
    check_drawn_sigmas(dataset, iou_type, sigmas)
    check_similarity_settings(iou_type, dilation_ratio=dilation_ratio)
    if outcomes is None:
        outcomes = match_outcomes(dataset, detections, iou_threshold=iou_threshold,
                                  score_threshold=score_threshold, iou_type=iou_type,
                                  keypoint_sigmas=matched_sigmas(iou_type, sigmas),
                                  dilation_ratio=dilation_ratio)
    else:
        _check_outcomes(outcomes, dataset, detections)
    threads = resolve_threads(threads)
    chosen = select_images(outcomes, only_errors=only_errors, limit=limit, by_errors=by_errors)
    options = dict(draw_options or {})
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(f"draw_options: unknown keyword(s) {', '.join(map(repr, unknown))}; "
                        f"expected some of {', '.join(_OPTIONS)}")
    report = _warn if on_problem is None else on_problem
    extras = [out_dir / _folder.KEY_FILE, out_dir / _folder.SHEET_FILE]
    written: list[Path] = []
    also: list[Path] = []   # the key and the contact sheet
    used: set[Path] = set(extras)
    sheet = _folder.ContactSheet(contact_sheet)
    digits = max(3, len(str(len(chosen))))
    if out_dir.is_dir():
        _folder.remove_previous(out_dir)
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        pool = _Pool(min(threads, max(len(chosen), 1)))
        try:
            _draw_chosen(chosen, _Run(dataset, detections, outcomes, images_dir, out_dir,
                                      format, int(quality), rank, digits, show, labels,
                                      options, report, progress),
                         pool, used, written, sheet)
        finally:
            pool.close()
        if key and written:     # no drawing, no key: a run that drew nothing leaves nothing
            draw_legend(show).save(extras[0], format="PNG")
            also.append(extras[0])
        if sheet.save(extras[1]):
            also.append(extras[1])
    finally:
        if written or also:
            _folder.write_manifest(out_dir, written + also)
        elif created:
            with contextlib.suppress(OSError):
                out_dir.rmdir()     # (only if empty)
    return written
