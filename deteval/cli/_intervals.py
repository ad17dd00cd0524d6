"""``--ci B`` (with ``--confidence`` and ``--seed``) of ``deteval lvis``, ``crowdpose`` and
``openimages``: image-bootstrap intervals of the protocol's numbers
(docs/diagnostics/bootstrap.md §13), printed after the summary and added to ``--json``."""

from __future__ import annotations

__all__ = ["add_interval_options", "intervals_of", "print_intervals"]


def add_interval_options(parser) -> None:
    """``--ci B``, ``--confidence LEVEL``, ``--seed N`` (no F1 score threshold)."""
    from .compare import add_bootstrap_options

    add_bootstrap_options(parser.add_argument_group("confidence intervals"),
                          resamples_flag="--ci", score_threshold=False)


def intervals_of(args, result, bootstrap):
    """``bootstrap(result, ...)`` with the options, or None without ``--ci``."""
    if args.ci is None:
        return None
    return bootstrap(result, n_resamples=args.ci, confidence=args.confidence, seed=args.seed)


def print_intervals(intervals, out) -> None:
    """The intervals' table after a blank line; nothing without them."""
    if intervals is not None:
        print(file=out)
        print(intervals.table(), file=out)
