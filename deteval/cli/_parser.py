"""The parser classes of ``deteval``, imported by :func:`._main.main` once it is past the
``--version`` shortcut, so that ``deteval --version`` imports neither argparse nor gettext
(docs/startup.md)."""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["Parser", "Version"]


class Parser(argparse.ArgumentParser):
    """An ArgumentParser (and, as the class of its subparsers, theirs) whose help formatters
    read the terminal's width once per parser: argparse asks for it at every argument added,
    through ``shutil``, whose import (with its compression modules) costs more than the
    parsing."""

    _width: int | None = None

    def _get_formatter(self):
        if self._width is None:
            self._width = _terminal_columns() - 2     # as argparse.HelpFormatter does
        return self.formatter_class(prog=self.prog, width=self._width)


class Version(argparse.Action):
    """``--version`` (argparse's version action), with the version read when it is asked:
    finding it lists the folders of sys.path, which no other run needs."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from ._main import version_line

        print(version_line(), file=sys.stdout)   # (main redirects sys.stdout while parsing)
        parser.exit()


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: $COLUMNS when it is a positive number, else
    the width of the terminal of standard output, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80
