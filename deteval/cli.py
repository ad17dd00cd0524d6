"""Command-line interface: ``deteval coco GT DT``, ``deteval demo``.

A thin shell over the library: it parses arguments, calls one function, prints the result.
Errors go to stderr as ``deteval: error: ...`` with exit status 1; usage errors exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

__all__ = ["main", "format_per_class"]


def _number_list(kind):
    def parse(text: str):
        try:
            return [kind(v) for v in text.replace(",", " ").split()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a list of {kind.__name__} values, e.g. "
                f"{'1 10 100' if kind is int else '0.5 0.75'!r}; got {text!r}"
            ) from None
    return parse


def _build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="deteval", description="Evaluate object detectors: COCO metrics equal to "
        "pycocotools, fast, with per-class tables and match exports.")
    parser.add_argument("--version", action="version", version=f"deteval {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    coco = commands.add_parser(
        "coco", help="COCO evaluation of a results file against an instances file",
        description="COCO evaluation (pycocotools COCOeval numbers). Prints the 12-line "
        "summary exactly as pycocotools does.")
    coco.add_argument("gt", metavar="GT.json", help="COCO instances file (ground truth)")
    coco.add_argument("dt", metavar="DT.json", help="COCO results file (detections)")
    _add_coco_options(coco)

    demo = commands.add_parser("demo", help="evaluate the bundled sample dataset",
                               description="Evaluate the bundled synthetic sample "
                               "(fixtures/demo) and print the summary and per-class table.")
    demo.add_argument("--json", metavar="OUT.json", help="also write the results as JSON")
    return parser


def _add_coco_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--iou-type", default="bbox", choices=["bbox"],
                        help="similarity measure (default: bbox)")
    parser.add_argument("--json", metavar="OUT.json",
                        help="write stats, summary and per-class table as JSON")
    parser.add_argument("--per-class", action="store_true", help="print the per-class table")
    parser.add_argument("--class-agnostic", action="store_true",
                        help="pool categories when matching (pycocotools useCats=0)")
    parser.add_argument("--max-dets", type=_number_list(int), metavar="'1 10 100'",
                        help="max detections per image and category (3 values)")
    parser.add_argument("--iou-thresholds", type=_number_list(float), metavar="'0.5 0.75'",
                        help="IoU thresholds (default: 0.50:0.05:0.95)")
    parser.add_argument("--image-ids", type=_number_list(int), metavar="IDS",
                        help="evaluate only these image ids")
    parser.add_argument("--category-ids", type=_number_list(int), metavar="IDS",
                        help="evaluate only these category ids")
    parser.add_argument("--matches", metavar="OUT.csv",
                        help="write the match table (area 'all') as CSV")


def format_per_class(rows: list[dict]) -> str:
    """Render :meth:`COCOResult.per_class` rows as an aligned text table.

    Examples
    --------
    >>> print(format_per_class([{"category_id": 1, "name": "cat", "AP": 0.5, "AP50": 1.0,
    ...     "AP75": 0.5, "APs": -1.0, "APm": 0.5, "APl": -1.0, "AR100": 0.5, "n_gt": 2,
    ...     "n_crowd": 0, "n_detections": 3}]))
     id  name     AP   AP50   AP75    APs    APm    APl  AR100  n_gt  n_dt
      1  cat   0.500  1.000  0.500      -  0.500      -  0.500     2     3
    """
    width = max([4] + [len(r["name"]) for r in rows])
    head = (f"{'id':>3}  {'name':<{width}}" + "".join(f"{c:>7}" for c in
            ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR100")) + f"{'n_gt':>6}{'n_dt':>6}")
    lines = [head]
    for r in rows:
        cells = "".join(f"{'-':>7}" if r[c] < 0 else f"{r[c]:7.3f}" for c in
                        ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR100"))
        lines.append(f"{r['category_id']:>3}  {r['name']:<{width}}{cells}"
                     f"{r['n_gt']:>6}{r['n_detections']:>6}")
    return "\n".join(lines)


def _write_json(path: str, payload: dict) -> None:
    import orjson

    Path(path).write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))


def _check_output_paths(*paths: str | None) -> None:
    """Fail before the (possibly long) evaluation when an output cannot be written."""
    for path in paths:
        if path is not None and not Path(path).resolve().parent.is_dir():
            raise FileNotFoundError(f"cannot write {path}: its folder does not exist")


def _run_coco(args, out: TextIO, err: TextIO) -> int:
    from .protocols.coco import evaluate_coco

    _check_output_paths(args.json, args.matches)

    options = {"iou_type": args.iou_type}
    if args.class_agnostic:
        options["use_categories"] = False
    for name, value in (("max_detections", args.max_dets),
                        ("iou_thresholds", args.iou_thresholds),
                        ("image_ids", args.image_ids), ("category_ids", args.category_ids)):
        if value is not None:
            options[name] = tuple(value)
    result = evaluate_coco(args.gt, args.dt, **options)
    _report(result, out, err, per_class=args.per_class)
    if args.json:
        payload = result.to_dict()
        payload["timings"] = result.timings
        _write_json(args.json, payload)
    if args.matches:
        result.matches.to_csv(args.matches)
    return 0


def _report(result, out: TextIO, err: TextIO, *, per_class: bool) -> None:
    for note in result.notes:
        print(f"deteval: note: {note}", file=err)
    print(result.summary(), file=out)
    if per_class:
        print(file=out)
        print(format_per_class(result.per_class()), file=out)


def _run_demo(args, out: TextIO, err: TextIO) -> int:
    from .protocols.coco import evaluate_coco

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "demo"
    gt_path, dt_path = fixtures / "gt.json", fixtures / "detections.json"
    if gt_path.is_file() and dt_path.is_file():
        gt, dt, where = gt_path, dt_path, str(fixtures)
    else:  # installed without the source tree: generate the same sample in memory
        from .demo import make_demo

        gt, dt = make_demo()
        where = "generated in memory (deteval.demo.make_demo)"
    result = evaluate_coco(gt, dt)
    data = result.gt
    print(f"deteval demo: {len(data.images)} images, {len(data.categories)} categories, "
          f"{len(data.gt)} objects, {len(result.detections)} detections ({where})", file=out)
    print(file=out)
    _report(result, out, err, per_class=True)
    print(file=out)
    print(f"AP = {result.stat('AP'):.3f}, AP50 = {result.stat('AP50'):.3f}; evaluated in "
          f"{result.timings['total'] * 1000:.0f} ms. Try: deteval coco GT.json DT.json "
          "--per-class --json out.json", file=out)
    if args.json:
        _write_json(args.json, result.to_dict())
    return 0


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    from .errors import DetevalError

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = _build_parser()
    try:
        # argparse prints usage, --help and --version to sys.stdout/sys.stderr.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
            if getattr(args, "max_dets", None) is not None and len(args.max_dets) < 3:
                parser.error("--max-dets needs 3 values (the summary reads maxDets[0..2]); "
                             f"got {' '.join(map(str, args.max_dets))!r}")
    except SystemExit as exit_:
        return int(exit_.code or 0)
    runners = {"coco": _run_coco, "demo": _run_demo}
    try:
        return runners[args.command](args, out, err)
    except BrokenPipeError:  # output piped into `head` and closed: not an error
        return 0
    except (DetevalError, ValueError, TypeError, OSError) as error:
        print(f"deteval: error: {error}", file=err)
        return 1
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        print("deteval: interrupted", file=err)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
