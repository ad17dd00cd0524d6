"""The report's gallery: which images are drawn, drawn with their matches, as files.

The gallery holds the ``limit`` images with the most errors and, beside them, up to
``limit // 2`` examples of the top confusions (:func:`~._views.cell_examples`), so a click
on a listed confusion has pictures to show; the work is bounded by the gallery's size, not
the dataset's. Each image gets a drawing (longest side 1024) and a thumbnail (320), kept as
bytes until :mod:`._files` writes them into ``gallery/`` or embeds them in a single page.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

#: Longest side of a gallery drawing and of its thumbnail (single page: the drawing only,
#: at SINGLE_SIDE).
FULL_SIDE, THUMB_SIDE, SINGLE_SIDE = 1024, 320, 640


def _jpeg(picture: Any, side: int, *, in_place: bool = False) -> tuple[bytes, int, int]:
    """The picture as JPEG bytes, shrunk (``thumbnail``) to fit ``side``; ``in_place``
    shrinks ``picture`` itself (its last use), otherwise a copy when it must shrink."""
    from PIL import Image

    if max(picture.size) > side:   # thumbnail() leaves a picture that fits unchanged
        picture = picture if in_place else picture.copy()
        picture.thumbnail((side, side), Image.Resampling.BILINEAR, reducing_gap=2.0)
    buffer = io.BytesIO()
    picture.save(buffer, format="JPEG", quality=88)
    return buffer.getvalue(), picture.width, picture.height


def draw_image(dataset: Any, detections: Any, outcomes: Any, image_index: int,
               images_dir: Path) -> tuple[Any, str | None, str | None]:
    """``(drawing, size mismatch, None)``, or ``(None, None, why not)``. The drawing is
    RGB, drawn on the picture read here (no copies)."""
    from PIL import Image

    from ..viz.draw import image_file, size_mismatch
    from ..viz.draw._matches import render_matches

    images = dataset.images
    file_name = images.file_names[image_index]
    path = image_file(images_dir, file_name) if file_name else None
    if path is None or not path.is_file():
        return None, None, "no file name" if not file_name else f"not found in {images_dir}"
    try:
        picture = Image.open(path)
        try:
            picture.load()   # the pixels read, the file closed, the picture kept usable
        finally:
            if getattr(picture, "fp", None) is not None:
                picture.fp.close()
                picture.fp = None
        picture = picture if picture.mode == "RGB" else picture.convert("RGB")
        mismatch = size_mismatch(dataset, image_index, picture.size)
        drawn = render_matches(picture, dataset, detections, image_index, copy=False,
                               outcomes=outcomes)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
        return None, None, f"cannot be read ({error})"
    return drawn, mismatch, None


def image_label(dataset: Any, image_index: int) -> str:
    return dataset.images.file_names[image_index] or \
        f"image id {int(dataset.images.ids[image_index])}"


def encode_pictures(drawn: Any, single: bool) -> dict[str, Any]:
    """The JPEG bytes of one drawing (consumed: it is shrunk in place): ``full`` and
    ``thumb`` (None on a single page, whose one picture is at SINGLE_SIDE) with sizes."""
    if single:
        data, width, height = _jpeg(drawn, SINGLE_SIDE, in_place=True)
        return {"full": data, "thumb": None, "width": width, "height": height}
    full, width, height = _jpeg(drawn, FULL_SIDE)
    thumb, t_width, t_height = _jpeg(drawn, THUMB_SIDE, in_place=True)
    return {"full": full, "thumb": thumb, "width": t_width, "height": t_height,
            "full_width": width, "full_height": height}


def add_pictures(files: dict[str, bytes], pictures: dict[str, Any], stem: str
                 ) -> dict[str, Any]:
    """Store one drawing's :func:`encode_pictures` in ``files`` (``gallery/<stem>.jpg`` and
    ``_thumb.jpg``); the entry's ``file``, ``thumb``, ``width`` and ``height``."""
    files[f"gallery/{stem}.jpg"] = pictures["full"]
    if pictures["thumb"] is None:
        return {"file": f"gallery/{stem}.jpg", "thumb": f"gallery/{stem}.jpg",
                "width": pictures["width"], "height": pictures["height"]}
    files[f"gallery/{stem}_thumb.jpg"] = pictures["thumb"]
    return {"file": f"gallery/{stem}.jpg", "thumb": f"gallery/{stem}_thumb.jpg",
            "width": pictures["width"], "height": pictures["height"],
            "full_width": pictures["full_width"], "full_height": pictures["full_height"]}


def _drawn(runs: list[tuple[Any, Any]], dataset: Any, images_dir: Path, single: bool,
           image_index: int) -> tuple[list[dict[str, Any]], str | None, str | None]:
    """One image drawn and encoded for each run (on a worker thread): ``(pictures, size
    mismatch, why not)``; the runs after one that cannot be drawn are not drawn."""
    pictures: list[dict[str, Any]] = []
    mismatch = why = None
    for detections, outcomes in runs:
        drawn, mismatch, why = draw_image(dataset, detections, outcomes, image_index,
                                          images_dir)
        if drawn is None:
            break
        pictures.append(encode_pictures(drawn, single))
    return pictures, mismatch, why


def _drawings(runs: list[tuple[Any, Any]], dataset: Any, images_dir: Path, single: bool,
              candidates: list[int], threads: int | None):
    """:func:`_drawn` of each candidate, in order, a few ahead on ``threads`` threads
    (every core by default): the gallery's files are the same for any number; a
    ``closing`` block stops the drawing ahead when the gallery is full."""
    from .._threads import resolve_threads, thread_imap

    return closing(thread_imap(partial(_drawn, runs, dataset, images_dir, single),
                               candidates, resolve_threads(threads)))


def gallery(dataset: Any, detections: Any, outcomes: Any, images_dir: Path | None,
            limit: int, examples: list[int], files: dict[str, bytes], *, single: bool,
            step: Callable[[str], None], threads: int | None = None
            ) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Draw the worst images, then the confusion examples (not already tried); the entries
    (``role`` "worst" or "example") and the images that could not be drawn (with the
    reason). Images are drawn a few ahead on ``threads`` threads; only the ones consumed
    in order count, so the result is that of drawing one after the other."""
    if limit == 0 or images_dir is None:
        return [], []
    entries: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    tried: set[int] = set()
    worst = outcomes.images_by_errors(only_errors=True).tolist()
    for role, wanted, candidates in (("worst", limit, worst),
                                     ("example", limit // 2, list(dict.fromkeys(examples)))):
        candidates = [i for i in candidates if i not in tried]
        found = 0
        if not wanted or not candidates:
            continue
        with _drawings([(detections, outcomes)], dataset, images_dir, single, candidates,
                       threads) as results:
            for image_index, (pictures, mismatch, why) in zip(candidates, results):
                tried.add(image_index)
                label = image_label(dataset, image_index)
                if not pictures:
                    skipped.append({"image": label, "reason": why})
                    continue
                entry = {"image_index": image_index,
                         "image_id": int(dataset.images.ids[image_index]),
                         "file_name": dataset.images.file_names[image_index], "role": role,
                         "errors": int(outcomes.errors_per_image[image_index]),
                         "counts": outcomes.counts(image_index=image_index),
                         "size_mismatch": mismatch}
                entry.update(add_pictures(files, pictures[0], f"{len(entries) + 1:04d}"))
                entries.append(entry)
                step(f"drawing {label}")
                found += 1
                if found == wanted:
                    break
    return entries, skipped


def differing_images(a: Any, b: Any) -> np.ndarray:
    """Image rows by how much two runs' errors differ, most first (ties: more errors in
    either run, then image order); only images where the counts differ."""
    diff = np.abs(a.errors_per_image.astype(np.int64) - b.errors_per_image)
    total = a.errors_per_image.astype(np.int64) + b.errors_per_image
    order = np.lexsort((np.arange(len(diff)), -total, -diff))
    return order[diff[order] > 0]


def compare_gallery(dataset: Any, runs: list[tuple[Any, Any]], images_dir: Path | None,
                    limit: int, files: dict[str, bytes], *, single: bool,
                    step: Callable[[str], None], threads: int | None = None
                    ) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The ``limit`` images where the two runs' error counts differ most, drawn once per
    run (``runs``: ``(detections, outcomes)`` of A and of B), a few ahead on ``threads``
    threads (the result is that of drawing one after the other)."""
    if limit == 0 or images_dir is None:
        return [], []
    entries: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    candidates = differing_images(runs[0][1], runs[1][1]).tolist()
    with _drawings(runs, dataset, images_dir, single, candidates, threads) as results:
        for image_index, (pictures, mismatch, why) in zip(candidates, results):
            if len(entries) == limit:
                break
            label = image_label(dataset, image_index)
            if len(pictures) < 2:
                skipped.append({"image": label, "reason": why})
                continue
            stem = f"{len(entries) + 1:04d}"
            entry = {"image_index": image_index,
                     "image_id": int(dataset.images.ids[image_index]),
                     "file_name": dataset.images.file_names[image_index],
                     "errors": [int(o.errors_per_image[image_index]) for _, o in runs],
                     "counts": [o.counts(image_index=image_index) for _, o in runs],
                     "size_mismatch": mismatch,
                     "runs": [add_pictures(files, encoded, f"{stem}_{name}")
                              for encoded, name in zip(pictures, "ab")]}
            entries.append(entry)
            step(f"drawing {label}")
    return entries, skipped
