"""Writing a report: a folder whose files the report owns, or one self-contained page.

Folder: the page, ``results.json``, figure files and ``gallery/`` pictures are written, and
listed with their size and modification time in :data:`MANIFEST`. The next report into the
same folder first deletes the files of that list that are still as written (the drawing
command's rule, :func:`deteval.viz.draw._folder.remove_previous`), and no other file.

Single page: the pictures are embedded as ``data:`` addresses and ``results.json`` as an
inline ``<script type="application/json" id="results-json">``, so the one file is the whole
report; nothing else is written.
"""

from __future__ import annotations

import base64
from pathlib import Path

#: The file, in the report's folder, listing what the last report wrote.
MANIFEST = ".deteval-report.json"
_TYPES = {".jpg": "image/jpeg", ".png": "image/png", ".svg": "image/svg+xml"}


class Sources:
    """How the page addresses a file of the report: its relative path (folder), or a
    ``data:`` address of its bytes (single page)."""

    def __init__(self, files: dict[str, bytes], single: bool) -> None:
        self.files, self.single = files, single

    def __call__(self, relative: str) -> str:
        if not self.single:
            return relative
        kind = _TYPES.get(Path(relative).suffix.lower(), "application/octet-stream")
        return f"data:{kind};base64," + base64.b64encode(self.files[relative]).decode("ascii")


def write_folder(out: Path, files: dict[str, bytes]) -> None:
    """Remove what the previous report wrote into ``out``, write ``files`` (relative path to
    bytes), and list them in the manifest."""
    from ..viz.draw._folder import remove_previous, write_manifest

    out.mkdir(parents=True, exist_ok=True)
    remove_previous(out, manifest=MANIFEST)
    written = []
    for relative, data in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        written.append(path)
    write_manifest(out, written, manifest=MANIFEST, tool="deteval report")


def write_page(path: Path, page: str) -> None:
    """Write the single page (whole or not at all)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
