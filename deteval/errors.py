"""Exceptions and warnings raised by deteval.

Every error that comes from user input names where the problem is (file, record index or
id) and what was expected, so that a bad annotation can be found and fixed without a
debugger.
"""

from __future__ import annotations

import sys
import warnings

__all__ = ["DetevalError", "FormatError", "FormatWarning", "UndefinedMetricWarning"]


class DetevalError(Exception):
    """Base class of every error deteval raises on purpose."""


class FormatError(DetevalError, ValueError):
    """An input file or record does not have the expected form.

    Parameters
    ----------
    message : str
        What was wrong and what was expected.
    source : str, optional
        The file (or other source) the record came from.
    record : str, optional
        Which record: an index (``"annotations[12]"``) or an id (``"image_id 42"``).

    Examples
    --------
    >>> err = FormatError("bbox must be 4 numbers; got 3", source="gt.json",
    ...                   record="annotations[3]")
    >>> str(err)
    'gt.json: annotations[3]: bbox must be 4 numbers; got 3'
    """

    def __init__(self, message: str, *, source: str | None = None, record: str | None = None):
        self.message = message
        self.source = source
        self.record = record
        parts = [p for p in (source, record, message) if p]
        super().__init__(": ".join(parts))


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined for the input (for example, no positives) and was set by policy."""


class FormatWarning(UserWarning):
    """An annotation file is legal but probably not what its author meant."""


def warn_undefined(message: str, *, outside: str) -> None:
    """Emit an :class:`UndefinedMetricWarning` pointing at the first caller outside a module.

    Parameters
    ----------
    message : str
        What is undefined and the value used instead.
    outside : str
        A module or package name (``__name__`` or ``__package__``): the warning points at
        the first frame up the stack whose module is neither it nor inside it.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_undefined("recall is undefined; set to 0.0", outside="deteval")
    >>> caught[0].category.__name__, str(caught[0].message)
    ('UndefinedMetricWarning', 'recall is undefined; set to 0.0')
    """
    frame, level = sys._getframe(1), 2
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != outside and not module.startswith(outside + "."):
            break
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UndefinedMetricWarning, stacklevel=level)
