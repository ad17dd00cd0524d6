"""A one-line progress bar on a terminal: silent when the stream is not a TTY or when quiet.

Long commands (``deteval report``) show what they are doing; logs, pipes and tests see
nothing, because the bar writes only to an interactive stream.

Examples
--------
>>> import io
>>> bar = ProgressBar(stream=io.StringIO())     # not a TTY: silent
>>> bar(1, 4, "evaluating"); bar.close()
>>> bar.enabled
False
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressBar"]


def _is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class ProgressBar:
    """Callable as ``bar(done, total, step)``: redraws ``step [#####.....] done/total``.

    Parameters
    ----------
    stream : text stream, optional
        Where to draw (default ``sys.stderr``, looked up when the bar is made).
    quiet : bool, default False
        Draw nothing at all.
    width : int, default 30
        Characters of the bar itself.
    min_interval : float, default 0.1
        Seconds between redraws (the last step, ``done == total``, is always drawn).

    Notes
    -----
    The bar is drawn only when ``stream.isatty()`` is true. :meth:`close` (or leaving a
    ``with`` block) erases the line, so that what is printed next starts on a clean line.
    """

    def __init__(self, *, stream: TextIO | None = None, quiet: bool = False, width: int = 30,
                 min_interval: float = 0.1) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = not quiet and _is_tty(self.stream)
        self.width = int(width)
        self.min_interval = float(min_interval)
        self._last_draw = -float("inf")
        self._last_length = 0

    def __call__(self, done: int, total: int, step: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last_draw < self.min_interval:
            return
        self._last_draw = now
        fraction = 0.0 if total <= 0 else min(max(done / total, 0.0), 1.0)
        filled = int(round(fraction * self.width))
        text = (f"{step[:32]:<32} [{'#' * filled}{'.' * (self.width - filled)}] "
                f"{done}/{total}")
        padding = " " * max(self._last_length - len(text), 0)
        self._last_length = len(text)
        try:
            self.stream.write("\r" + text + padding)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: stop drawing
            self.enabled = False

    def close(self) -> None:
        """Erase the bar's line (nothing was drawn: nothing to erase)."""
        if self.enabled and self._last_length:
            try:
                self.stream.write("\r" + " " * self._last_length + "\r")
                self.stream.flush()
            except (OSError, ValueError):
                pass
        self._last_length = 0

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
