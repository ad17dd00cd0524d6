"""The output folder of :func:`write_drawings`: file names in rank order, the encoding, the
manifest of what a run wrote (so that the next run removes exactly those files) and the
contact sheet of the worst images."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from PIL import Image, ImageDraw

from ._styles import _font

#: The file, in the output folder, listing what the last run wrote.
MANIFEST = ".deteval-draw.json"
#: The key (legend) image and the contact sheet, written beside the drawings.
KEY_FILE, SHEET_FILE = "key.png", "contact_sheet.jpg"
FORMATS = ("auto", "png", "jpeg")
_SUFFIX = {"PNG": ".png", "JPEG": ".jpg"}
_CELL = 320     # contact sheet: the longer side of a thumbnail, in pixels
_COLUMNS = 6


def output_format(format: str, source_format: str | None) -> str:
    """``"JPEG"`` or ``"PNG"``: ``auto`` keeps JPEG for JPEG sources, PNG otherwise."""
    if format == "auto":
        return "JPEG" if source_format in ("JPEG", "MPO") else "PNG"
    return {"png": "PNG", "jpeg": "JPEG", "jpg": "JPEG"}[format]


def output_path(out_dir: Path, file_name: str, image_id: int, used: set[Path], *,
                encoding: str, rank: int | None, digits: int) -> Path:
    """Where a drawing goes: the image's relative path (never outside ``out_dir``), its
    base name prefixed by the zero-padded ``rank`` (``007_name``), its suffix that of the
    encoding; a name already used gets ``-<image id>``."""
    relative = Path(file_name)
    if relative.is_absolute() or ".." in relative.parts:
        relative = Path(relative.name)   # never write outside out_dir
    suffix = _SUFFIX[encoding]
    stem = relative.stem if rank is None else f"{rank:0{digits}d}_{relative.stem}"
    path = out_dir / relative.parent / (stem + suffix)
    if path in used:   # two images of the same name
        path = path.with_name(f"{stem}-{image_id}{suffix}")
    return path


def save(picture: Image.Image, target: Path, encoding: str, quality: int) -> None:
    """Write ``picture`` as PNG (a mode PNG cannot hold: as RGB) or JPEG (RGB or L)."""
    if encoding == "JPEG":
        if picture.mode not in ("RGB", "L"):
            picture = picture.convert("RGB")
        picture.save(target, format="JPEG", quality=quality)
        return
    try:
        picture.save(target, format="PNG", compress_level=3)   # 3x faster than 6
    except (OSError, KeyError, ValueError):   # a mode PNG cannot hold (F, CMYK, ...)
        picture.convert("RGB").save(target, format="PNG", compress_level=3)


def _stamp(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def remove_previous(out_dir: Path, *, manifest: str = MANIFEST) -> int:
    """Delete the files the manifest of ``out_dir`` (``manifest``: its file name) lists, if
    each is still as written (same size and modification time) and inside ``out_dir``;
    folders they were in are removed when left empty. Returns how many were deleted; other
    files are never touched."""
    manifest = out_dir / manifest
    try:
        entries = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    root = out_dir.resolve()
    removed = 0
    for entry in entries if isinstance(entries, list) else ():
        try:
            relative, stamp = str(entry["path"]), list(entry["stamp"])
            path = out_dir / relative
            if (Path(relative).is_absolute() or ".." in Path(relative).parts
                    or path.is_symlink() or not path.is_file()
                    or root not in path.resolve().parents or _stamp(path) != stamp):
                continue
            path.unlink()
            removed += 1
            for parent in path.parents:
                if parent == out_dir or root not in parent.resolve().parents:
                    break
                parent.rmdir()   # only when empty (OSError otherwise)
        except (OSError, KeyError, TypeError, ValueError):
            continue
    manifest.unlink(missing_ok=True)
    return removed


def write_manifest(out_dir: Path, written: list[Path], *, manifest: str = MANIFEST,
                   tool: str = "deteval draw") -> None:
    """Record ``written`` (paths under ``out_dir``) for :func:`remove_previous`, in the file
    ``manifest`` of ``out_dir``, naming the ``tool`` that wrote them."""
    files = [{"path": path.relative_to(out_dir).as_posix(), "stamp": _stamp(path)}
             for path in written if path.is_file()]
    text = json.dumps({"tool": tool, "files": files}, indent=1)
    tmp = out_dir / (manifest + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out_dir / manifest)


def thumbnail(drawn: Image.Image, *, in_place: bool = False) -> Image.Image:
    """A contact-sheet cell of ``drawn``: RGB, its longer side at most 320 pixels.
    ``in_place`` shrinks ``drawn`` itself when it is RGB (a drawing already written)."""
    thumb = drawn if drawn.mode == "RGB" else drawn.convert("RGB")
    thumb = thumb.copy() if thumb is drawn and not in_place else thumb
    thumb.thumbnail((_CELL, _CELL), Image.Resampling.BILINEAR, reducing_gap=2.0)
    return thumb


class ContactSheet:
    """Thumbnails of the first ``limit`` drawings, captioned, laid out in one JPEG grid."""

    def __init__(self, limit: int) -> None:
        self.limit = int(limit)
        self.cells: list[tuple[Image.Image, str]] = []

    def wants(self, n_written: int) -> bool:
        """Does the drawing after ``n_written`` others get a thumbnail?"""
        return n_written < self.limit

    def add(self, drawn: Image.Image, caption: str) -> None:
        if len(self.cells) < self.limit:
            self.add_thumbnail(thumbnail(drawn), caption)

    def add_thumbnail(self, thumb: Image.Image, caption: str) -> None:
        """Add a cell made by :func:`thumbnail` (on another thread, say)."""
        if len(self.cells) < self.limit:
            self.cells.append((thumb, caption))

    def save(self, path: Path) -> bool:
        """Write the sheet; False (nothing written) without a drawing."""
        if not self.cells:
            return False
        font = _font(14)
        caption_h = 20
        columns = min(_COLUMNS, len(self.cells))
        rows = math.ceil(len(self.cells) / columns)
        sheet = Image.new("RGB", (columns * (_CELL + 4) + 4,
                                  rows * (_CELL + caption_h + 4) + 4), (255, 255, 255))
        draw = ImageDraw.Draw(sheet)
        for n, (thumb, caption) in enumerate(self.cells):
            x = 4 + (n % columns) * (_CELL + 4)
            y = 4 + (n // columns) * (_CELL + caption_h + 4)
            sheet.paste(thumb, (x + (_CELL - thumb.width) // 2, y))
            text = caption
            while text and font.getlength(text) > _CELL:
                text = text[:-1]
            draw.text((x, y + _CELL + 2), text, font=font, fill=(0, 0, 0))
        sheet.save(path, format="JPEG", quality=85)
        return True


def describe_size(paths: list[Path]) -> int:
    """Total bytes of the files ``paths`` (missing ones count 0)."""
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            pass
    return total
