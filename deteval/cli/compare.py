"""``deteval compare``: paired bootstrap comparison of detectors on one ground truth (COCO
or VOC numbers)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from ._common import _UsageError, _write_json
from ._options import _positive_int, _seed
from ._outputs import check_outputs
from ._shared_options import add_json_output, add_per_class, add_protocol, add_score_threshold


def _confidence(text: str) -> float:
    from ..io._common import is_number_text

    value = float(text) if is_number_text(text) else -1.0
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"a level in (0, 1) is expected (e.g. 0.95); "
                                         f"got {text!r}")
    return value


def add_bootstrap_options(parser: argparse.ArgumentParser, *, resamples_flag: str,
                          score_threshold: bool = True) -> None:
    """The resampling options shared by ``compare``, ``coco --ci`` and ``voc --ci``
    (``--score-threshold`` of F1 unless ``score_threshold`` is False: VOC has no F1)."""
    parser.add_argument(resamples_flag, type=_positive_int, metavar="B",
                        default=None if resamples_flag == "--ci" else 1000,
                        help="bootstrap resamples of the images (default 1000)"
                        if resamples_flag != "--ci" else
                        "add image-bootstrap percentile intervals with B resamples (e.g. "
                        "1000) to the printed table and to --json")
    parser.add_argument("--confidence", type=_confidence, default=0.95, metavar="LEVEL",
                        help="level of the intervals (default 0.95)")
    parser.add_argument("--seed", type=_seed, default=0,
                        help="seed of the resampling (default 0)")
    if score_threshold:
        add_score_threshold(parser, default=0.5,
                            help="score threshold of the F1 number (default 0.5; COCO only)")


def add_parser(commands) -> None:
    """Add the ``compare`` command to the subparsers ``commands``."""
    compare = commands.add_parser(
        "compare", help="paired bootstrap comparison of detectors on one ground truth (COCO or "
        "VOC numbers)",
        description="Compare results files against the first (the baseline) on the same "
        "ground truth: for each COCO number, F1 and per-class AP (with --protocol voc2007 or "
        "voc2012: the VOC mAP and per-class AP), the difference, its paired "
        "image-bootstrap percentile interval and a two-sided p-value (Holm-adjusted across "
        "classes). Exit status 1 when a --fail-if-regression rule is broken.")
    compare.add_argument("gt", metavar="GT.json", help="COCO instances file (ground truth)")
    compare.add_argument("dt", metavar="DT.json", nargs="+",
                         help="results files: the baseline first, then one or more models")
    add_protocol(compare, default="coco", help="coco: the COCO numbers, F1 and per-class AP "
                 "(default); voc2007/voc2012: the devkit's mAP and per-class AP")
    compare.add_argument("--iou-type", default="bbox",
                         choices=["bbox", "segm", "boundary", "keypoints", "polygon",
                                  "rotated"],
                         help="what to compare (default: bbox)")
    add_bootstrap_options(compare, resamples_flag="--bootstrap")
    compare.add_argument("--fail-if-regression", action="append", default=[],
                         metavar="METRIC:TOLERANCE",
                         help="exit 1 when a model is significantly worse than the baseline "
                         "in METRIC by more than TOLERANCE (the upper end of the interval of "
                         "the difference below -TOLERANCE), e.g. AP:0.005; repeatable")
    add_per_class(compare, help="print the per-class rows too")
    add_json_output(compare, help="write every model's intervals and the differences as JSON")
    compare.set_defaults(parser=compare)


def run(args, out: TextIO, err: TextIO) -> int:
    from ..diagnostics.compare import compare_coco, parse_regression_rule
    from ..protocols.coco import evaluate_coco

    check_outputs(args, files=[("--json", args.json)])
    if len(args.dt) < 2:
        raise _UsageError("compare needs a baseline and at least one more results file")
    try:
        rules = [parse_regression_rule(text) for text in args.fail_if_regression]
    except ValueError as error:
        raise _UsageError(f"--fail-if-regression: {error}") from None
    if args.protocol != "coco":
        return _run_voc(args, rules, out, err)
    results = [evaluate_coco(args.gt, path, iou_type=args.iou_type) for path in args.dt]
    for note in results[0].notes:
        print(f"deteval: note: {note}", file=err)
    from ..diagnostics.bootstrap import category_labels
    from ..protocols._coco_stages import prepare

    names = (*results[0].stat_names, "F1", *(
        f"AP[{n}]" for n in category_labels(prepare(results[0].dataset, results[0].params))))
    _check_rules(rules, names)
    comparison = compare_coco(results, n_resamples=args.bootstrap,
                              confidence=args.confidence, seed=args.seed,
                              score_threshold=args.score_threshold, models=_labels(args.dt))
    return _finish(args, comparison, rules, out, err)


def _run_voc(args, rules: list, out: TextIO, err: TextIO) -> int:
    """``--protocol voc2007|voc2012``: the devkit presets, compared by ``compare_voc``."""
    from ..diagnostics.bootstrap_voc import voc_number_names
    from ..diagnostics.compare import compare_voc
    from ..protocols.voc import evaluate_voc
    from ._common import _voc_preset

    if args.iou_type != "bbox":
        raise _UsageError(f"--iou-type {args.iou_type} needs --protocol coco")
    params = _voc_preset(args.protocol.upper())
    results = [evaluate_voc(args.gt, path, params=params) for path in args.dt]
    for note in results[0].notes:
        print(f"deteval: note: {note}", file=err)
    _check_rules(rules, voc_number_names(results[0]))
    comparison = compare_voc(results, n_resamples=args.bootstrap, confidence=args.confidence,
                             seed=args.seed, models=_labels(args.dt))
    return _finish(args, comparison, rules, out, err)


def _check_rules(rules: list, names: tuple) -> None:
    for name, _ in rules:
        if name not in names:
            shown = [n for n in names if not n.startswith("AP[")]
            raise _UsageError(f"--fail-if-regression: unknown number {name!r}; choose one of "
                              f"{', '.join(shown)} or AP[class name]")


def _finish(args, comparison, rules: list, out: TextIO, err: TextIO) -> int:
    broken = comparison.regressions(rules)
    if args.json:   # files first: written whatever happens to stdout
        _write_json(args.json, dict(comparison.to_dict(), regressions=broken,
                                    rules=[{"metric": n, "tolerance": t} for n, t in rules]))
    print(comparison.table(per_class=args.per_class), file=out)
    for message in broken:
        print(f"deteval: regression: {message}", file=err)
    return 1 if broken else 0


def _labels(paths: list[str]) -> list[str]:
    """The files' names, numbered where names repeat (``dt.json#0``, ``dt.json#1``)."""
    names = [Path(p).name for p in paths]
    return [f"{n}#{i}" if names.count(n) > 1 else n for i, n in enumerate(names)]
