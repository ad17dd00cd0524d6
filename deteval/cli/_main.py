"""``main``: the top-level parser, each command adding its own subparser, and the
running of the command chosen."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from . import classify, coco, confusion, convert, demo, draw, report, voc
from . import eval as eval_
from ._common import _UsageError

# The commands' modules, in the order --help lists them: each adds its subparser and runs it.
_COMMANDS = {"coco": coco, "voc": voc, "eval": eval_, "confusion": confusion, "draw": draw,
             "classify": classify, "convert": convert, "demo": demo, "report": report}

_PACKAGE = Path(__file__).resolve().parents[1]

# Advice in library messages, in the words of the command line.
_CLI_WORDS = (("pass images_dir=... or image_sizes=...", "pass --images DIR"),
              ("pass images_dir=...", "pass --images DIR"))


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    # The package is imported anyway (for __version__).
    from .. import __version__
    from ..errors import DetevalError, FormatWarning, UndefinedMetricWarning

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = argparse.ArgumentParser(
        prog="deteval", description="Evaluate object detectors: COCO metrics equal to "
        "pycocotools, fast, with per-class tables and match exports.")
    parser.add_argument("--version", action="version", version=f"deteval {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for command in _COMMANDS.values():
        command.add_parser(commands)
    try:
        # argparse prints usage, --help and --version to sys.stdout/sys.stderr.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
            if (getattr(args, "max_dets", None) is not None and len(args.max_dets) < 3
                    and getattr(args, "iou_type", "bbox") != "keypoints"):
                parser.error("--max-dets needs 3 values (the summary reads maxDets[0..2]); "
                             f"got {' '.join(map(str, args.max_dets))!r}")
    except SystemExit as exit_:
        return int(exit_.code or 0)
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            # deteval's own warnings (e.g. a box beyond its image) are messages for the user.
            warnings.simplefilter("always", FormatWarning)
            warnings.simplefilter("always", UndefinedMetricWarning)
            return _COMMANDS[args.command].run(args, out, err)
    except BrokenPipeError:  # output piped into `head` and closed: not an error
        _silence_stdout(out)
        return 0
    except _UsageError as error:
        with contextlib.redirect_stderr(err):
            try:
                args.parser.error(str(error))
            except SystemExit as exit_:
                return int(exit_.code or 0)
    except (DetevalError, ValueError, TypeError, OSError) as error:
        if not isinstance(error, (DetevalError, OSError)) and not _raised_by_deteval(error):
            raise   # a library's ValueError deep inside is a bug to see, not a message
        _print_warnings(caught, err)
        caught = []
        message = str(error)
        if isinstance(error, OSError) and error.filename is not None and error.strerror:
            message = f"{error.filename}: {error.strerror}"
        for api, cli in _CLI_WORDS:
            message = message.replace(api, cli)
        print(f"deteval: error: {message}", file=err)
        return 1
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        print("deteval: interrupted", file=err)
        return 130
    finally:
        _print_warnings(caught, err)


def _print_warnings(caught: list, err: TextIO) -> None:
    for warning in caught:
        print(f"deteval: warning: {warning.message}", file=err)


def _raised_by_deteval(error: BaseException) -> bool:
    """Whether deteval's own code raised ``error`` (its innermost frame is in the package):
    such ValueErrors and TypeErrors are messages about the arguments; others are bugs."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return False
    return Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(_PACKAGE)


def _silence_stdout(out: TextIO) -> None:
    """After a broken pipe, point standard output at /dev/null: the interpreter's last flush
    would otherwise fail again and print a warning."""
    if out is not sys.stdout:
        return
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
