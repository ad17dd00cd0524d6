"""``--ci B`` (with ``--confidence`` and ``--seed``) and ``--slice KEY`` / ``--slice-file``
of ``deteval lvis``, ``crowdpose``, ``openimages`` and ``voc``: image-bootstrap intervals of the
protocol's numbers (docs/diagnostics/bootstrap.md §13) and its numbers per image slice
(docs/diagnostics/slices.md §7), printed after the summary and added to ``--json``."""

from __future__ import annotations

__all__ = ["add_interval_options", "add_protocol_slice_options", "diagnostics_of",
           "intervals_of", "print_diagnostics", "print_intervals", "resample_threads"]


def add_interval_options(parser, *, threads: bool = False) -> None:
    """``--ci B``, ``--confidence LEVEL``, ``--seed N`` (no F1 score threshold); with
    ``threads``, ``--threads N`` too, the resamples' threads (for the commands whose
    evaluation has none: ``lvis``, ``crowdpose``, ``openimages``; see
    :func:`resample_threads`)."""
    from ._shared_options import add_threads
    from .compare import add_bootstrap_options

    group = parser.add_argument_group("confidence intervals")
    add_bootstrap_options(group, resamples_flag="--ci", score_threshold=False)
    if threads:
        add_threads(group, what="the resamples of --ci", noted=True)


def resample_threads(args, bootstrap):
    """``bootstrap`` with ``threads=`` the ``--threads`` of :func:`add_interval_options`;
    ``--threads`` without ``--ci`` is a usage error (nothing else runs on threads), as the
    other settings of the intervals (:func:`~._shared_options.check_needs_ci`)."""
    from functools import partial

    from ._shared_options import check_needs_ci

    check_needs_ci(args)
    return partial(bootstrap, threads=args.threads)


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


def add_protocol_slice_options(parser, *, records: bool, size: bool | None = None) -> None:
    """``--slice KEY`` (repeatable) and ``--slice-file TAGS`` (``records``: the ground
    truth's image records have keys too; ``size``: the protocol has area ranges, default
    ``records``)."""
    size = records if size is None else size
    parser.add_argument("--slice", dest="slices", action="append", metavar="KEY",
                        help="also report the numbers per slice: an image key of "
                        + ("the ground truth's images records or of " if records else "")
                        + "--slice-file (one slice per value; equal to the protocol run on "
                        "those images)" + (", or 'size' (the protocol's area ranges)"
                                           if size else "") + "; repeatable")
    parser.add_argument("--slice-file", metavar="TAGS", help="image tags: a CSV (an "
                        + ("image_id or file_name" if records else "ImageID (image_id)")
                        + " column, a column per key) or a JSON {image id: {key: value}}; "
                        "every key of it is sliced (after the --slice ones)")


def protocol_slices_of(args, result, *, records: bool):
    """The slices the options ask for, or None without --slice / --slice-file."""
    keys, tags = getattr(args, "slices", None), getattr(args, "slice_file", None)
    if not keys and not tags:
        return None
    from ..diagnostics.slices import tag_keys
    from ..diagnostics.slices_protocols import protocol_slice_interval, protocol_slices

    if keys and tags:
        keys = keys + [key for key in tag_keys(tags) if key not in keys]
    interval = None
    if getattr(args, "ci", None) is not None:
        interval = protocol_slice_interval(n_resamples=args.ci, confidence=args.confidence,
                                           seed=args.seed, threads=getattr(args, "threads",
                                                                           None))
    return protocol_slices(result, by=keys, tags=tags,
                           images=args.gt if keys and records else None, interval=interval)


def diagnostics_of(args, result, bootstrap, *, records: bool = True):
    """``(intervals, slices, extra)``: what ``--ci`` and ``--slice`` ask for (None each
    without), and the ``--json`` entries of both."""
    intervals = intervals_of(args, result, bootstrap)
    sliced = protocol_slices_of(args, result, records=records)
    extra = {} if intervals is None else {"intervals": intervals.to_dict()}
    if sliced is not None:
        extra["slices"] = sliced.to_dict()
    return intervals, sliced, extra


def print_diagnostics(intervals, sliced, out, err) -> None:
    """The intervals' table, then the slices' (and their notes on ``err``)."""
    from ._slices import print_slices

    print_intervals(intervals, out)
    if sliced is not None:
        print_slices(sliced, out)
        for note in sliced.notes:
            print(f"deteval: note: {note}", file=err)
