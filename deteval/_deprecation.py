"""A read-only attribute kept under its old name for one release, warning when read."""

from __future__ import annotations

import warnings
from typing import Any


class DeprecatedAlias:
    """Class attribute: ``old = DeprecatedAlias("new")`` makes ``obj.old`` return ``obj.new``
    with a :class:`DeprecationWarning` that names the new attribute."""

    def __init__(self, new: str) -> None:
        self.new = new
        self.old = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.old = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        cls = type(obj).__name__
        warnings.warn(f"{cls}.{self.old} is deprecated; use {cls}.{self.new} (the same object)",
                      DeprecationWarning, stacklevel=2)
        return getattr(obj, self.new)
