"""``--table OUT.{csv,parquet}``: the tidy export (deteval/tidy.py, docs/tidy-export.md) of
``deteval coco``, ``voc``, ``eval``, ``lvis``, ``openimages`` and ``crowdpose``."""

from __future__ import annotations

import argparse

__all__ = ["add_table_options", "check_table", "write_table_output"]

_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def add_table_options(parser: argparse.ArgumentParser) -> None:
    """``--table OUT.{csv,parquet}`` and ``--table-iou T|all``."""
    parser.add_argument("--table", metavar="OUT.{csv,parquet}",
                        help="write one row per detection and per ground-truth object "
                        "(status, match, IoU, error type; docs/tidy-export.md) as CSV or "
                        "Parquet (Parquet needs pip install 'deteval[frame]')")
    parser.add_argument("--table-iou", metavar="T|all", default=None,
                        help="--table: the evaluated IoU threshold of the rows (default: the "
                        "first), or 'all' for one block of rows per threshold")


def check_table(args) -> None:
    """Refuse, before any work, a --table the command cannot write: an unknown suffix, a
    bad --table-iou, Parquet without pyarrow."""
    from ..errors import DetevalError
    from ._common import _UsageError

    table = getattr(args, "table", None)
    if table is None:
        if args.table_iou is not None:
            raise _UsageError("--table-iou needs --table")
        return
    from pathlib import PurePath

    kind = _SUFFIXES.get(PurePath(table).suffix.lower())
    if kind is None:
        raise _UsageError(f"--table {table}: the suffix must be .csv or .parquet")
    args.table_iou = _threshold(args.table_iou)
    if kind == "parquet":
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise DetevalError("--table with a .parquet file needs pyarrow: pip install "
                               "'deteval[frame]' (or write .csv)") from None


def _threshold(text: str | None) -> float | str | None:
    from ._common import _UsageError

    if text is None or text == "all":
        return text
    try:
        return float(text)
    except ValueError:
        raise _UsageError(f"--table-iou must be an IoU threshold or 'all'; got {text!r}") \
            from None


def write_table_output(args, result) -> None:
    """Write ``result``'s tidy table to ``args.table`` (whole or not at all)."""
    if getattr(args, "table", None) is None:
        return
    from ..tidy import thresholds_of, write_table
    from ._common import _UsageError
    from ._outputs import write_output

    try:
        thresholds_of(result, args.table_iou)
    except ValueError as error:     # a --table-iou that was not evaluated
        raise _UsageError(f"--table-iou: {error}") from None
    from pathlib import PurePath

    kind = _SUFFIXES[PurePath(args.table).suffix.lower()]
    write_output(args.table, lambda path: write_table(result, path, format=kind,
                                                      iou_threshold=args.table_iou))
