"""``deteval convert``: convert ground truth between formats."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from ._common import _UsageError
from ._options import _GT_OPTIONS, _add_gt_reader_options, _guess_format, _reader_options
from ._outputs import check_outputs, write_output


def add_parser(commands) -> None:
    """Add the ``convert`` command to the subparsers ``commands``."""
    from .._format_names import GT_FORMATS, WRITE_FORMATS

    convert = commands.add_parser(
        "convert", help="convert ground truth between formats",
        description="Read ground truth in any supported format and write it as COCO JSON, "
        "a VOC XML folder, a YOLO folder or a CSV file. DST's format comes from its suffix "
        "(.json: coco, .csv/.tsv: csv) unless --to says; folders need --to voc or yolo.")
    convert.add_argument("src", metavar="SRC", help="ground truth to read: file or folder")
    convert.add_argument("dst", metavar="DST", help="file or folder to write")
    convert.add_argument("--from", dest="gt_format", choices=GT_FORMATS, metavar="FORMAT",
                         help=f"format of SRC, one of {', '.join(GT_FORMATS)} "
                         "(default: guessed)")
    convert.add_argument("--to", dest="to_format", choices=WRITE_FORMATS, metavar="FORMAT",
                         help=f"format of DST, one of {', '.join(WRITE_FORMATS)} "
                         "(default: from DST's suffix)")
    _add_gt_reader_options(convert, box_flag="--box-format")
    convert.set_defaults(parser=convert)


def run(args, out: TextIO, err: TextIO) -> int:
    from ..errors import DetevalError, FormatError
    from ..io.formats import convert
    from ._main import _raised_by_deteval

    dst = Path(args.dst)
    to_format = args.to_format or {".json": "coco", ".csv": "csv", ".tsv": "csv"}.get(
        dst.suffix.lower())
    if to_format is None:
        raise _UsageError(f"cannot tell which format to write to {args.dst}: pass --to "
                          "(coco, csv; a folder takes voc or yolo)")
    if to_format in ("coco", "csv"):
        check_outputs(args, files=[("", args.dst)])
    else:
        check_outputs(args, folders=[("", args.dst)])
    src_format = args.gt_format or _guess_format(args.src, "gt", "--from")
    options = _reader_options(args, _GT_OPTIONS, src_format, "ground truth", args.src,
                              flags={"gt_box_format": "--box-format"})
    try:
        if to_format in ("coco", "csv"):    # a file: written whole or not at all
            dataset = None

            def write(path: str) -> None:
                nonlocal dataset
                dataset = convert(args.src, path, src_format=src_format,
                                  dst_format=to_format, read_options=options)

            write_output(dst, write)
        else:
            dataset = convert(args.src, dst, src_format=src_format, dst_format=to_format,
                              read_options=options)
    except (FormatError, DetevalError):
        raise
    except (ValueError, TypeError, OSError) as error:
        if not isinstance(error, OSError) and not _raised_by_deteval(error):
            raise   # a library's error deep inside is a bug to see, not a message
        raise DetevalError(f"cannot convert {args.src} to {args.dst}: {error}") from error
    gt = dataset.gt
    extras = [f"{n} {what}" for n, what in ((int(gt.ignore.sum()), "difficult"),
                                             (int(gt.iscrowd.sum()), "crowd")) if n]
    print(f"deteval convert: {args.src} ({src_format}) -> {args.dst} ({to_format}): "
          f"{len(dataset.images)} images, {len(gt)} objects"
          f"{' (' + ', '.join(extras) + ')' if extras else ''}, "
          f"{len(dataset.categories)} categories", file=out)
    return 0
