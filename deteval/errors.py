"""Exceptions and warnings raised by deteval.

Every error that comes from user input names where the problem is (file, record index or
id) and what was expected, so that a bad annotation can be found and fixed without a
debugger.
"""

from __future__ import annotations

import sys
import warnings

__all__ = ["DetevalError", "FormatError", "FormatWarning", "OptionError",
           "UndefinedMetricWarning"]


class DetevalError(Exception):
    """Base class of every error deteval raises on purpose.

    Parameters
    ----------
    *args
        As for :class:`Exception` (the message).
    hint : str, optional
        What to do about it, in the words of the Python API (``pass match_by='name'``);
        appended to the message.
    cli_hint : str, optional
        The same advice in the words of the command line (``pass --match-by name``), which
        the CLI shows instead of ``hint`` (:meth:`cli_message`).

    Examples
    --------
    >>> err = DetevalError("ids disagree", hint="pass match_by='name'",
    ...                    cli_hint="pass --match-by name")
    >>> str(err), err.cli_message()
    ("ids disagree; pass match_by='name'", 'ids disagree; pass --match-by name')
    """

    def __init__(self, *args: object, hint: str | None = None, cli_hint: str | None = None):
        super().__init__(*args)
        self.hint = hint
        self.cli_hint = cli_hint

    def _base(self) -> str:
        return super().__str__()

    def __str__(self) -> str:
        base = self._base()
        return f"{base}; {self.hint}" if self.hint else base

    def cli_message(self) -> str:
        """The message with the advice in command-line words (``cli_hint``, else ``hint``)."""
        hint = self.cli_hint or self.hint
        base = self._base()
        return f"{base}; {hint}" if hint else base


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

    def __init__(self, message: str, *, source: str | None = None, record: str | None = None,
                 hint: str | None = None, cli_hint: str | None = None):
        self.message = message
        self.source = source
        self.record = record
        parts = [p for p in (source, record, message) if p]
        super().__init__(": ".join(parts), hint=hint, cli_hint=cli_hint)


class OptionError(DetevalError, ValueError):
    """A setting has a value it cannot take. The message names the setting by its Python
    name; :meth:`cli_message` by the command-line flag the CLI maps it to.

    Parameters
    ----------
    option : str
        The keyword (``"max_detections"``).
    text : str
        What is wrong, after the name (``"must hold positive integers"``).
    got : object, optional
        The value given, shown after the text.

    Examples
    --------
    >>> err = OptionError("max_detections", "must hold positive integers", got=(0, 10))
    >>> str(err)
    'max_detections must hold positive integers; got (0, 10)'
    >>> err.cli_message({"max_detections": "--max-dets"})
    "--max-dets must hold positive integers; got '0 10'"
    """

    _NOTHING = object()

    def __init__(self, option: str, text: str, *, got: object = _NOTHING):
        self.option, self.text, self.got = option, text, got
        shown = "" if got is OptionError._NOTHING else f"; got {got!r}"
        super().__init__(f"{option} {text}{shown}")

    def cli_message(self, flags: dict[str, str] | None = None) -> str:
        """The message naming the flag ``flags[option]`` (as :class:`DetevalError` without)."""
        flag = (flags or {}).get(self.option)
        if flag is None:
            return super().cli_message()
        got = self.got
        if got is OptionError._NOTHING:
            return f"{flag} {self.text}"
        if isinstance(got, (tuple, list)):   # as typed on the command line
            got = " ".join(map(str, got))
        return f"{flag} {self.text}; got {got!r}"


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
