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
from pathlib import Path
from typing import Any

import numpy as np

#: Longest side of a gallery drawing and of its thumbnail (single page: the drawing only,
#: at SINGLE_SIDE).
FULL_SIDE, THUMB_SIDE, SINGLE_SIDE = 1024, 320, 640


def _jpeg(picture: Any, side: int) -> tuple[bytes, int, int]:
    from PIL import Image

    copy = picture.copy()
    copy.thumbnail((side, side), Image.Resampling.BILINEAR, reducing_gap=2.0)
    buffer = io.BytesIO()
    copy.save(buffer, format="JPEG", quality=88)
    return buffer.getvalue(), copy.width, copy.height


def draw_image(dataset: Any, detections: Any, outcomes: Any, image_index: int,
               images_dir: Path) -> tuple[Any, str | None, str | None]:
    """``(drawing, size mismatch, None)``, or ``(None, None, why not)``."""
    from PIL import Image

    from ..viz.draw import draw_matches, image_file, size_mismatch

    images = dataset.images
    file_name = images.file_names[image_index]
    path = image_file(images_dir, file_name) if file_name else None
    if path is None or not path.is_file():
        return None, None, "no file name" if not file_name else f"not found in {images_dir}"
    try:
        with Image.open(path) as opened:
            opened.load()
            picture = opened.convert("RGB")
        mismatch = size_mismatch(dataset, image_index, picture.size)
        drawn = draw_matches(picture, dataset, detections, image_index, outcomes=outcomes,
                             iou_threshold=outcomes.iou_threshold,
                             score_threshold=outcomes.score_threshold)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
        return None, None, f"cannot be read ({error})"
    return drawn.convert("RGB"), mismatch, None


def image_label(dataset: Any, image_index: int) -> str:
    return dataset.images.file_names[image_index] or \
        f"image id {int(dataset.images.ids[image_index])}"


def add_pictures(files: dict[str, bytes], drawn: Any, stem: str, single: bool
                 ) -> dict[str, Any]:
    """Encode one drawing into ``files`` (``gallery/<stem>.jpg`` and ``_thumb.jpg``); the
    entry's ``file``, ``thumb``, ``width`` and ``height``."""
    if single:
        data, width, height = _jpeg(drawn, SINGLE_SIDE)
        files[f"gallery/{stem}.jpg"] = data
        return {"file": f"gallery/{stem}.jpg", "thumb": f"gallery/{stem}.jpg",
                "width": width, "height": height}
    full, width, height = _jpeg(drawn, FULL_SIDE)
    thumb, t_width, t_height = _jpeg(drawn, THUMB_SIDE)
    files[f"gallery/{stem}.jpg"] = full
    files[f"gallery/{stem}_thumb.jpg"] = thumb
    return {"file": f"gallery/{stem}.jpg", "thumb": f"gallery/{stem}_thumb.jpg",
            "width": t_width, "height": t_height, "full_width": width, "full_height": height}


def gallery(dataset: Any, detections: Any, outcomes: Any, images_dir: Path | None,
            limit: int, examples: list[int], files: dict[str, bytes], *, single: bool,
            step: Callable[[str], None]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Draw the worst images, then the confusion examples; the entries (``role`` "worst" or
    "example") and the images that could not be drawn (with the reason)."""
    if limit == 0 or images_dir is None:
        return [], []
    entries: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    worst = outcomes.images_by_errors(only_errors=True).tolist()
    queue = [(i, "worst") for i in worst] + [(i, "example") for i in examples]
    taken: set[int] = set()
    n_worst = n_examples = 0
    for image_index, role in queue:
        if image_index in taken:
            continue
        if role == "worst" and n_worst == limit:
            continue
        if role == "example" and n_examples == limit // 2:
            break
        taken.add(image_index)
        drawn, mismatch, why = draw_image(dataset, detections, outcomes, image_index,
                                          images_dir)
        label = image_label(dataset, image_index)
        if drawn is None:
            skipped.append({"image": label, "reason": why})
            continue
        n_worst += role == "worst"
        n_examples += role == "example"
        entry = {"image_index": image_index, "image_id": int(dataset.images.ids[image_index]),
                 "file_name": dataset.images.file_names[image_index], "role": role,
                 "errors": int(outcomes.errors_per_image[image_index]),
                 "counts": outcomes.counts(image_index=image_index),
                 "size_mismatch": mismatch}
        entry.update(add_pictures(files, drawn, f"{len(entries) + 1:04d}", single))
        entries.append(entry)
        step(f"drawing {label}")
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
                    step: Callable[[str], None]
                    ) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The ``limit`` images where the two runs' error counts differ most, drawn once per
    run (``runs``: ``(detections, outcomes)`` of A and of B)."""
    if limit == 0 or images_dir is None:
        return [], []
    entries: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for image_index in differing_images(runs[0][1], runs[1][1]).tolist():
        if len(entries) == limit:
            break
        drawings = []
        for detections, outcomes in runs:
            drawn, mismatch, why = draw_image(dataset, detections, outcomes, image_index,
                                              images_dir)
            if drawn is None:
                break
            drawings.append(drawn)
        label = image_label(dataset, image_index)
        if len(drawings) < 2:
            skipped.append({"image": label, "reason": why})
            continue
        stem = f"{len(entries) + 1:04d}"
        entry = {"image_index": image_index, "image_id": int(dataset.images.ids[image_index]),
                 "file_name": dataset.images.file_names[image_index],
                 "errors": [int(o.errors_per_image[image_index]) for _, o in runs],
                 "counts": [o.counts(image_index=image_index) for _, o in runs],
                 "size_mismatch": mismatch,
                 "runs": [add_pictures(files, drawn, f"{stem}_{name}", single)
                          for drawn, name in zip(drawings, "ab")]}
        entries.append(entry)
        step(f"drawing {label}")
    return entries, skipped
