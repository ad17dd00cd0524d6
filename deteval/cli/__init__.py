"""Command-line interface: ``deteval coco``, ``voc``, ``eval``, ``confusion``, ``classify``,
``convert``, ``report``, ``draw`` and ``demo``.

A thin shell over the library: it parses arguments, calls one function, prints the result.
Errors go to stderr as ``deteval: error: ...`` with exit status 1; usage errors exit 2.
One module per command holds its parser (``add_parser``) and its ``run(args, out, err)``;
:mod:`._main` builds the top-level parser from them.
"""

from __future__ import annotations

from ._main import main

__all__ = ["main", "format_per_class"]


def __getattr__(name: str):
    """``format_per_class`` imported on first use (``deteval --version`` needs none of it)."""
    from .._lazy import lazy_attribute

    return lazy_attribute(__name__, {"format_per_class": "_common"}, name, globals())
