"""Exceptions and warnings raised by deteval.

Every error that comes from user input names where the problem is (file, record index or
id) and what was expected, so that a bad annotation can be found and fixed without a
debugger.
"""

from __future__ import annotations

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
