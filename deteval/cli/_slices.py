"""``--slice`` and ``--slice-file`` of ``deteval coco``: COCO numbers per slice of the images
and objects (deteval.diagnostics.slices), printed after the summary and added to --json."""

from __future__ import annotations

from typing import TextIO

from ._common import _UsageError


def add_slice_options(parser) -> None:
    """Add ``--slice KEY`` (repeatable) and ``--slice-file FILE`` to ``parser``."""
    parser.add_argument("--slice", dest="slices", action="append", metavar="KEY",
                        help="also report the numbers per slice: an image key of the ground "
                        "truth's images records or of --slice-file (one slice per value), or "
                        "an object property: size, aspect, crowding, truncation "
                        "('image:KEY' for an image key named like one); repeatable")
    parser.add_argument("--slice-file", metavar="TAGS", help="image tags: a CSV (an image_id "
                        "or file_name column, a column per key) or a JSON {image id or "
                        "file name: {key: value}}; every key of it is sliced (after the "
                        "--slice ones)")


def slices_of(args, result):
    """The slices the options ask for, or None without --slice / --slice-file."""
    keys, tags = getattr(args, "slices", None), getattr(args, "slice_file", None)
    if not keys and not tags:
        return None
    from ..diagnostics.slices import slices, tag_keys

    if keys and tags:   # every key of the file is sliced too, after the named ones
        keys = keys + [key for key in tag_keys(tags) if key not in keys]
    interval = None
    if getattr(args, "ci", None) is not None:   # --ci: the image slices get intervals too
        from ..diagnostics.bootstrap import slice_interval

        interval = slice_interval(n_resamples=args.ci, confidence=args.confidence,
                                  seed=args.seed, threads=getattr(args, "threads", None))
    return slices(result, by=keys, tags=tags, images=args.gt if keys else None,
                  interval=interval)


def refuse_with_shards(args) -> None:
    if getattr(args, "slices", None) or getattr(args, "slice_file", None):
        raise _UsageError("--slice and --slice-file are not available with several DT files "
                          "or --dask: the sharded evaluation keeps no match table")


def print_slices(sliced, out: TextIO, *, worst: int = 5) -> None:
    """The slices' table, then the worst ones by AP, and the notes."""
    print(file=out)
    print(f"{'slice':<32} {'images':>7} {'objects':>8} {'dets':>8} {'AP':>6} {'AP50':>6} "
          f"{'AP75':>6} {'AR':>6}", file=out)
    for row in sliced.table():
        cells = " ".join("     -" if row[k] < 0 else f"{row[k]:6.3f}"
                         for k in ("AP", "AP50", "AP75", "AR"))
        name = f"{row['key']}={row['value']}"
        print(f"{name[:32]:<32} {row['n_images']:>7} {row['n_gt']:>8} {row['n_detections']:>8} "
              f"{cells}", file=out)
    bottom = sliced.worst(worst)
    if bottom:
        listed = ", ".join(f"{s.key}={s.value} ({s.ap:.3f}"
                           + ("" if s.interval is None else
                              f", {s.interval[0]:.3f}-{s.interval[1]:.3f}") + ")"
                           for s in bottom)
        print(f"worst slices by AP: {listed}", file=out)
