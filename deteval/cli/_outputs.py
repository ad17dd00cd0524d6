"""What the commands write: outputs checked against the inputs before any work, and
written whole or not at all.

* An output that resolves to an input (the same path, a symbolic link to it, or a hard link:
  compared by ``os.path.realpath`` and by ``st_dev``/``st_ino``) is refused, so that
  ``deteval coco gt.json dt.json --json gt.json`` cannot replace the ground truth with
  metrics. An output folder (``--out``, a VOC or YOLO ``convert`` destination) must not be
  an input or hold one: the command writes files there under names it chooses.
* A file is written to a temporary file in its folder and renamed over the destination, so a
  failure (a full disk, an interruption) never leaves half a file. While a command runs
  (:func:`staged_outputs`, entered by ``main``) the renames wait for its end: a command that
  fails leaves none of its files, not even those written before the failure. A destination that is
  not a regular file (``/dev/stdout``, a pipe from ``>(...)``) is written in place, opened
  without blocking: a pipe nobody reads is an error, not a hang.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable

from ..errors import DetevalError

__all__ = ["check_outputs", "staged_outputs", "write_output"]

# The attributes of the parsed arguments that name inputs, and how messages call them.
_INPUTS = (("gt", "the ground truth", ""), ("dt", "the detections", ""),
           ("src", "the source", ""), ("names", "the class names", "--names "),
           ("classes", "the class list", "--classes "), ("labels", "the labels", "LABELS "),
           ("scores", "the scores", "SCORES "), ("images", "the images folder", "--images "),
           ("slice_file", "the slice tags", "--slice-file "))


def _inputs(args) -> list[tuple[str, str, os.stat_result | None]]:
    """``(label, real path, stat)`` of every input the arguments name that exists."""
    found = []
    for attr, label, flag in _INPUTS:
        given = getattr(args, attr, None)
        values = given if isinstance(given, (list, tuple)) else [given]   # several DT files
        for value in values:
            if not isinstance(value, (str, os.PathLike)):
                continue
            try:
                info = os.stat(value)
            except OSError:
                info = None
            found.append((f"{label} ({flag}{value})", os.path.realpath(value), info))
    return found


def _same(info: os.stat_result | None, other: os.stat_result | None) -> bool:
    return (info is not None and other is not None
            and (info.st_dev, info.st_ino) == (other.st_dev, other.st_ino))


def check_outputs(args, files: Iterable[tuple[str, str | None]] = (),
                  folders: Iterable[tuple[str, str | None]] = ()) -> None:
    """Refuse, before any work, outputs that cannot be written or would replace an input.

    Parameters
    ----------
    args : argparse.Namespace
        The command's arguments (inputs are read from ``gt``, ``dt``, ``src``, ``names``,
        ``classes``, ``labels``, ``scores`` and ``images``).
    files, folders : iterable of (flag, path or None)
        The file and folder outputs, with the option that names each (for messages).
    """
    inputs = _inputs(args)
    for flag, path in files:
        if path is None:
            continue
        where = f"{flag} {path}".strip()
        from pathlib import Path  # (not imported by a run that writes no file)

        if not Path(path).resolve().parent.is_dir():
            raise DetevalError(f"cannot write {path}: its folder does not exist")
        real = os.path.realpath(path)
        try:
            info = os.stat(path)
        except OSError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise DetevalError(f"cannot write {where}: it is a folder (a file is expected)")
        for label, input_real, input_info in inputs:
            if real == input_real or _same(info, input_info):
                raise _is_input(path, flag, label, "is")
    for flag, path in folders:
        if path is None:
            continue
        where = f"{flag} {path}".strip()
        real = os.path.realpath(path)
        if os.path.exists(path) and not os.path.isdir(path):
            raise DetevalError(f"cannot write into {where}: it is a file (a folder is "
                               "expected)")
        for label, input_real, _ in inputs:
            if input_real == real or input_real.startswith(real.rstrip(os.sep) + os.sep):
                raise _is_input(path, flag, label, "is" if input_real == real else "holds")


def _is_input(path: str, flag: str, label: str, verb: str) -> DetevalError:
    if label.startswith("the source ") and verb == "is":
        return DetevalError(f"{path}: the destination is the source; write elsewhere")
    what = f"the {flag} output" if flag else "the destination"
    folder = " (the command writes files there under names it chooses)" if verb == "holds" \
        else ""
    return DetevalError(f"{path}: {what} {verb} {label}, an input{folder}: refusing to "
                        "overwrite it; write the output elsewhere")


#: ``(temporary, destination)`` of the files written by the running command (None: no
#: command is running; files are renamed at once).
_STAGED: list[tuple[str, str]] | None = None


@contextlib.contextmanager
def staged_outputs():
    """Within the block, :func:`write_output` writes each file to its temporary file and the
    block's end renames them all; an exception removes them all, so a command that fails
    writes nothing. A closed standard output (``BrokenPipeError``) is no failure: the files
    the user asked for are kept."""
    global _STAGED
    outer, _STAGED = _STAGED, []
    staged, keep = _STAGED, False
    try:
        yield
        keep = True
    except BrokenPipeError:
        keep = True
        raise
    finally:
        _STAGED = outer
        for n, (temporary, target) in enumerate(staged):
            try:
                if keep:
                    os.replace(temporary, target)
                else:
                    os.unlink(temporary)
            except OSError as error:
                for rest, _ in staged[n + 1:]:
                    with contextlib.suppress(OSError):
                        os.unlink(rest)
                if keep:
                    raise DetevalError(f"cannot write {target}: {error.strerror}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_output(path: str | os.PathLike, content: bytes | Callable[[str], object]) -> None:
    """Write ``content`` (bytes, or a function writing a file at the path it is given) to
    ``path`` whole or not at all; errors name the path.

    A regular destination (or a new one) gets a temporary file in the same folder, renamed
    over it when complete; symbolic links are followed, so the link's target is replaced.
    Another destination (a device, a pipe) is written in place.
    """
    # here, not at the top: tempfile imports shutil, random, bz2 and lzma
    import tempfile
    from pathlib import PurePath

    path = os.fspath(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise DetevalError(f"cannot write {path}: {error.strerror}") from None
    try:
        if info is not None and not stat.S_ISREG(info.st_mode):
            _write_in_place(path, content)
            return
        target = os.path.realpath(path)
        folder, name = os.path.split(target)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.",
                                         suffix=PurePath(name).suffix or ".tmp")
        try:
            os.chmod(temporary, stat.S_IMODE(info.st_mode) if info is not None
                     else 0o666 & ~_umask())
            if isinstance(content, bytes):
                with os.fdopen(fd, "wb") as handle:
                    handle.write(content)
            else:
                os.close(fd)
                content(temporary)
            if _STAGED is not None:   # renamed when the command ends (staged_outputs)
                _STAGED.append((temporary, target))
            else:
                os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as error:
        raise DetevalError(f"cannot write {path}: {error.strerror or error}") from None


def _write_in_place(path: str, content: bytes | Callable[[str], object]) -> None:
    if not isinstance(content, bytes):
        content(path)
        return
    # POSIX: opened without blocking, so a pipe without a reader is an error (ENXIO), not a
    # hang, then written blocking. Windows has neither the flag nor fcntl.
    nonblocking = getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, os.O_WRONLY | nonblocking)
    try:
        if nonblocking:
            os.set_blocking(fd, True)
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
