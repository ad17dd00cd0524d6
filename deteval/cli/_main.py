"""``main``: the top-level parser, each command adding its own subparser, and the
running of the command chosen."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TextIO


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage).

    Without ``argv`` the command line is the process's own (``sys.argv``: the ``deteval``
    program, ``python -m deteval``), and the process is the command's: ``main`` then also
    makes the settings of :mod:`deteval.cli._process` (one OpenBLAS thread, fewer garbage
    collections, glibc malloc's thresholds, ``gc.freeze`` at the end; docs/startup.md
    §4.1). Called with ``argv``, it leaves the caller's process as it is.
    """
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    process = None
    if argv is None:
        argv = sys.argv[1:]
        if argv[:1] != ["--version"]:
            from . import _process as process

            process.before_numpy()
            process.collect_less()
    argv = list(argv)
    if argv[:1] == ["--version"]:
        print(version_line(), file=out)  # before the commands' modules are imported
        return 0
    # (here, after the --version shortcut: they are most of its cost)
    import contextlib
    import warnings

    from ..errors import DetevalError, FormatWarning, OptionError, UndefinedMetricWarning
    from ._common import _UsageError
    from ._options import OPTION_FLAGS, join_number_lists
    from ._parser import Parser, Version

    modules = _commands(argv[0] if argv else None)
    parser = Parser(
        prog="deteval", description="Evaluate object detectors: COCO metrics equal to "
        "pycocotools, fast, with per-class tables and match exports.")
    parser.add_argument("--version", action=Version)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for command in modules.values():
        command.add_parser(commands)
    try:
        # argparse prints usage, --help and --version to sys.stdout/sys.stderr.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(join_number_lists(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)
    if process is not None:
        process.tune_malloc()   # (after the parsing: --help needs no ctypes)
    from ._outputs import staged_outputs

    caught: list = []
    try:
        # staged_outputs: the files a command writes are renamed into place when it ends,
        # all of them, or removed when it fails (a failed run writes nothing)
        with warnings.catch_warnings(record=True) as caught, staged_outputs():
            # deteval's own warnings (e.g. a box beyond its image) are messages for the user.
            warnings.simplefilter("always", FormatWarning)
            warnings.simplefilter("always", UndefinedMetricWarning)
            return modules[args.command].run(args, out, err)
    except BrokenPipeError:  # output piped into `head` and closed: not an error
        _silence_stdout(out)
        return 0
    except _UsageError as error:
        with contextlib.redirect_stderr(err):
            try:
                getattr(args, "parser", parser).error(str(error))
            except SystemExit as exit_:
                return int(exit_.code or 0)
    except (DetevalError, ValueError, TypeError, OSError) as error:
        if not isinstance(error, (DetevalError, OSError)) and not _raised_by_deteval(error):
            raise   # a library's ValueError deep inside is a bug to see, not a message
        _print_warnings(caught, err)
        caught = []
        if isinstance(error, OSError) and error.filename is not None and error.strerror:
            message = f"{error.filename}: {error.strerror}"
        elif isinstance(error, OptionError):
            message = error.cli_message(OPTION_FLAGS)
        elif isinstance(error, DetevalError):
            message = error.cli_message()
        else:
            message = str(error)
        print(f"deteval: error: {message}", file=err)
        return 1
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        print("deteval: interrupted", file=err)
        return 130
    finally:
        _print_warnings(caught, err)
        if process is not None:
            process.before_exit()


#: The commands, in the order --help lists them, and the module of each (in this package).
_COMMANDS = {"coco": "coco", "voc": "voc", "eval": "eval", "confusion": "confusion",
             "draw": "draw", "check": "check", "classify": "classify", "convert": "convert",
             "demo": "demo", "report": "report", "lvis": "lvis", "openimages": "openimages",
             "errors": "errors", "calibration": "calibration", "crowdpose": "crowdpose",
             "compare": "compare"}


def _commands(only: str | None = None) -> dict:
    """The commands' modules, in the order --help lists them; each adds its subparser, runs.

    ``only``: that command's module alone (a command line naming its command needs no other
    parser: their modules are not even imported)."""
    import importlib

    names = [only] if only in _COMMANDS else list(_COMMANDS)
    return {name: importlib.import_module(f"{__package__}.{_COMMANDS[name]}")
            for name in names}


def version_line() -> str:
    """What ``deteval --version`` prints."""
    from .. import __version__

    return f"deteval {__version__}"


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
    from pathlib import Path

    package = Path(__file__).resolve().parents[1]
    return Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(package)


def _silence_stdout(out: TextIO) -> None:
    """After a broken pipe, point standard output at /dev/null: the interpreter's last flush
    would otherwise fail again and print a warning."""
    if out is not sys.stdout:
        return
    import contextlib

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
