"""``deteval compare``: paired bootstrap comparison of detectors on one ground truth (COCO,
VOC, LVIS, CrowdPose or Open Images numbers)."""

from __future__ import annotations

import argparse
from typing import TextIO

from ._common import _UsageError, _write_json
from ._options import _positive_int, _seed
from ._outputs import check_outputs
from ._shared_options import (
    PROTOCOLS,
    add_dilation_ratio,
    add_json_output,
    add_per_class,
    add_score_threshold,
    add_threads,
    check_geometry,
    check_max_dets,
    max_dets_list,
)

#: The most resamples ``--ci`` and ``--bootstrap`` accept: B resamples keep a (B, numbers)
#: array of float64 per model (LVIS: 1,200 numbers, 1 GB at this B) and cost B times a
#: resample (tens of ms on COCO-sized sets); the percentile ends move by well under 0.001
#: beyond a few thousand (docs/diagnostics/bootstrap.md §9).
MAX_RESAMPLES = 100_000

#: ``--protocol`` of ``compare``: the ``eval`` presets and the protocols with a bootstrap.
COMPARE_PROTOCOLS = (*PROTOCOLS, "lvis", "crowdpose", "openimages")

#: ``--iou-type`` of each protocol that has one (the first is the default).
_IOU_TYPES = {"coco": ("bbox", "segm", "boundary", "keypoints", "polygon", "rotated"),
              "voc2007": ("bbox",), "voc2012": ("bbox",), "lvis": ("bbox", "segm", "boundary")}


def _confidence(text: str) -> float:
    from ..io._common import is_number_text

    value = float(text) if is_number_text(text) else -1.0
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"a level in (0, 1) is expected (e.g. 0.95); "
                                         f"got {text!r}")
    return value


def _resamples(text: str) -> int:
    """A number of resamples: a positive integer up to :data:`MAX_RESAMPLES`."""
    value = _positive_int(text)
    if value > MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_RESAMPLES:,} resamples (each costs one pass over the match table, "
            f"and the intervals stop moving long before); got {text!r}")
    return value


def add_bootstrap_options(parser: argparse.ArgumentParser, *, resamples_flag: str,
                          score_threshold: bool = True,
                          score_default: float | None = 0.5) -> None:
    """The resampling options shared by ``compare``, ``coco --ci`` and ``voc --ci``
    (``--score-threshold`` of F1 unless ``score_threshold`` is False: VOC has no F1;
    ``score_default`` None tells a threshold given from none, for ``compare``, where only
    the COCO protocol reads it)."""
    parser.add_argument(resamples_flag, type=_resamples, metavar="B",
                        default=None if resamples_flag == "--ci" else 1000,
                        help=f"bootstrap resamples of the images (default 1000, at most "
                        f"{MAX_RESAMPLES:,})" if resamples_flag != "--ci" else
                        "add image-bootstrap percentile intervals with B resamples (e.g. "
                        f"1000; at most {MAX_RESAMPLES:,}) to the printed table and to --json")
    add_resampling_settings(parser)
    if score_threshold:
        add_score_threshold(parser, default=score_default, noted=True,
                            help="score threshold of the F1 number (default 0.5; COCO only)")


def add_resampling_settings(parser) -> None:
    """``--confidence LEVEL`` and ``--seed N``, noted (:func:`check_needs_ci` refuses them
    without ``--ci``)."""
    from ._shared_options import NotedStore

    parser.add_argument("--confidence", type=_confidence, default=0.95, metavar="LEVEL",
                        action=NotedStore, help="level of the intervals (default 0.95)")
    parser.add_argument("--seed", type=_seed, default=0, action=NotedStore,
                        help="seed of the resampling (default 0)")


def add_parser(commands) -> None:
    """Add the ``compare`` command to the subparsers ``commands``."""
    from ._options import COCO_MAX_DETS_HELP, add_coco_selection
    from .crowdpose import add_crowdpose_options
    from .openimages import add_openimages_inputs
    from .voc import add_voc_options

    compare = commands.add_parser(
        "compare", help="paired bootstrap comparison of detectors on one ground truth (COCO, "
        "VOC, LVIS, CrowdPose or Open Images numbers)",
        description="Compare results files against the first (the baseline) on the same "
        "ground truth: for each COCO number, F1, oLRP and per-class AP (with --protocol: the "
        "VOC, LVIS, CrowdPose or Open Images numbers and per-class AP), the difference, its "
        "paired image-bootstrap percentile interval and a two-sided p-value (Holm-adjusted "
        "across classes). Exit status 1 when a --fail-if-regression rule is broken.")
    compare.add_argument("gt", metavar="GT",
                         help="ground truth: a COCO, LVIS or CrowdPose instances file, or "
                         "the Open Images boxes CSV")
    compare.add_argument("dt", metavar="DT", nargs="+",
                         help="results files: the baseline first, then one or more models")
    compare.add_argument(
        "--protocol", default="coco", choices=list(COMPARE_PROTOCOLS),
        help="coco: the COCO numbers, F1, oLRP and per-class AP (default); voc2007/voc2012: "
        "the devkit's mAP and per-class AP; lvis: lvis-api's 13 numbers; crowdpose: "
        "xtcocotools' 9 keypoint numbers; openimages: the challenge mAP (with --labels, "
        "--hierarchy, --classes)")
    compare.add_argument("--iou-type", default=None,
                         choices=sorted({t for types in _IOU_TYPES.values() for t in types}),
                         help="what to compare, coco and lvis only (default: bbox)")
    add_dilation_ratio(compare)
    add_bootstrap_options(compare, resamples_flag="--bootstrap", score_default=None)
    add_threads(compare, what="the resamples (and the matching of the COCO and VOC "
                "evaluations)")
    compare.add_argument("--fail-if-regression", action="append", default=[],
                         metavar="METRIC:TOLERANCE",
                         help="exit 1 when a model is significantly worse than the baseline "
                         "in METRIC by more than TOLERANCE (the interval of the difference "
                         "below -TOLERANCE; for oLRP, lower is better: above +TOLERANCE), "
                         "e.g. AP:0.005; repeatable")
    add_per_class(compare, help="print the per-class rows too")
    add_json_output(compare, help="write every model's intervals and the differences as JSON")
    add_voc_options(compare.add_argument_group("VOC settings (--protocol voc2007|voc2012; "
                                               "--iou-thresholds: coco too)"))
    coco = compare.add_argument_group("COCO settings (--protocol coco; --max-dets: lvis too)")
    # (its own dest: the top-level parser's check of `deteval coco --max-dets` wants 3)
    coco.add_argument("--max-dets", type=max_dets_list, dest="compare_max_dets",
                      metavar="'1 10 100' | N",
                      help=f"coco: {COCO_MAX_DETS_HELP}; lvis: one number, the results kept "
                      "per image across categories (default: 300)")
    add_coco_selection(coco, max_dets=False, iou_thresholds=False)
    add_crowdpose_options(compare.add_argument_group("keypoint settings (--kpt-sigmas: "
                                                     "coco keypoints and crowdpose)"),
                          sigmas_default="COCO person; CrowdPose's 14 with crowdpose")
    add_openimages_inputs(compare.add_argument_group("Open Images inputs (--protocol "
                                                     "openimages)"))
    compare.set_defaults(parser=compare, lvis_max_dets=None)   # LVIS's --max-dets


def run(args, out: TextIO, err: TextIO) -> int:
    from ..diagnostics.compare import parse_regression_rule

    check_outputs(args, files=[("--json", args.json)])
    if len(args.dt) < 2:
        raise _UsageError("compare needs a baseline and at least one more results file")
    try:
        rules = [parse_regression_rule(text) for text in args.fail_if_regression]
    except ValueError as error:
        raise _UsageError(f"--fail-if-regression: {error}") from None
    _check_protocol_options(args)
    run_protocol = {"coco": _run_coco, "lvis": _run_lvis, "crowdpose": _run_crowdpose,
                    "openimages": _run_openimages}.get(args.protocol, _run_voc)
    results, names, compare = run_protocol(args)
    _print_notes(args, results, err)
    _check_rules(rules, names)
    comparison = compare(results, n_resamples=args.bootstrap, confidence=args.confidence,
                         seed=args.seed, models=_labels(args.dt), threads=args.threads)
    return _finish(args, comparison, rules, out, err)


def _print_notes(args, results: list, err: TextIO) -> None:
    """Each file's notes, as its command's: the ground truth's (its records, the same for
    every model) once, named by the ground truth's file; each evaluation's by its results
    file."""
    import os

    dataset = getattr(results[0], "dataset", None) if results else None
    shared = tuple(getattr(dataset, "notes", ()) or ())
    for note in shared:
        print(f"deteval: note: {os.path.basename(args.gt)}: {note}", file=err)
    for label, result in zip(_labels(args.dt), results):
        for note in result.notes:
            if note not in shared:
                print(f"deteval: note: {label}: {note}", file=err)


def _check_protocol_options(args) -> None:
    """Refuse the options of another protocol (before any file is read)."""
    if args.iou_type is not None and args.iou_type not in _IOU_TYPES.get(args.protocol, ()):
        takers = [p for p, types in _IOU_TYPES.items() if args.iou_type in types]
        takers = ", ".join(takers[:-1]) + " or " + takers[-1] if len(takers) > 1 else takers[0]
        raise _UsageError(f"--iou-type {args.iou_type} needs --protocol {takers}")
    args.iou_type = args.iou_type or "bbox"
    if args.score_threshold is not None and args.protocol != "coco":
        raise _UsageError("--score-threshold is F1's threshold, a COCO number: it needs "
                          "--protocol coco")
    for dest, takers in _PROTOCOL_OPTIONS.items():
        if getattr(args, dest) not in (None, False) and args.protocol not in takers:
            flag = "--max-dets" if dest == "compare_max_dets" else f"--{dest.replace('_', '-')}"
            raise _UsageError(f"{flag} needs --protocol {' or '.join(takers)}")
    _max_dets_of(args)


def _max_dets_of(args) -> None:
    """``--max-dets``: COCO's numbers per image and category (``args.max_dets``, three but
    for keypoints, as ``deteval coco``) or LVIS's one cut per image (``args.lvis_max_dets``,
    as ``deteval lvis``); the rule and message of each are
    :func:`~._shared_options.check_max_dets`'."""
    given = args.compare_max_dets
    check_max_dets(given, args.protocol, args.iou_type)
    args.max_dets = given if args.protocol == "coco" else None
    args.lvis_max_dets = given if args.protocol == "lvis" else None


#: The options only some protocols read (argparse dest: the protocols).
_PROTOCOL_OPTIONS = {
    "detectron2": ("voc2007", "voc2012"), "iou_thresholds": ("coco", "voc2007", "voc2012"),
    "dilation_ratio": ("coco", "lvis"), "compare_max_dets": ("coco", "lvis"),
    **{dest: ("coco",) for dest in ("class_agnostic", "image_ids", "category_ids")},
    "kpt_sigmas": ("coco", "crowdpose"), "use_area": ("crowdpose",),
    **{dest: ("openimages",) for dest in ("labels", "hierarchy", "classes",
                                          "expand_detections")}}


def _run_coco(args):
    """The COCO results, their numbers' names and ``compare_coco`` with F1's threshold."""
    from functools import partial

    from ..diagnostics.bootstrap import F1_NAME, OLRP_NAME, category_labels
    from ..diagnostics.compare import compare_coco
    from ..protocols._coco_stages import prepare
    from ..protocols.coco import evaluate_coco
    from ._options import coco_selection

    check_geometry(args.iou_type, kpt_sigmas=args.kpt_sigmas,
                   dilation_ratio=args.dilation_ratio)
    options = {} if args.dilation_ratio is None else {"dilation_ratio": args.dilation_ratio}
    if args.kpt_sigmas is not None:
        options["keypoint_sigmas"] = tuple(args.kpt_sigmas)
    options.update(coco_selection(args))
    results = [evaluate_coco(args.gt, path, iou_type=args.iou_type, threads=args.threads,
                             **options) for path in args.dt]
    labels = category_labels(prepare(results[0].dataset, results[0].params))
    names = (*results[0].stat_names, F1_NAME, OLRP_NAME, *(f"AP[{n}]" for n in labels))
    return results, names, partial(compare_coco, score_threshold=0.5 if args.score_threshold is None
                                   else args.score_threshold)


def _run_voc(args):
    """``--protocol voc2007|voc2012``: the devkit's presets or detectron2's (``--detectron2``),
    at the preset's or the ``--iou-thresholds``, compared by ``compare_voc``."""
    from ..diagnostics.bootstrap_voc import voc_number_names
    from ..diagnostics.compare import compare_voc
    from ..protocols.voc import evaluate_voc
    from .voc import voc_settings

    _, options = voc_settings(args.protocol[3:], detectron2=args.detectron2,
                              iou_thresholds=args.iou_thresholds)
    results = [evaluate_voc(args.gt, path, threads=args.threads, **options)
               for path in args.dt]
    return results, voc_number_names(results[0]), compare_voc


def _run_lvis(args):
    """``--protocol lvis``: lvis-api's numbers (300 results per image unless ``--max-dets``
    says)."""
    from ..diagnostics.bootstrap_lvis import lvis_number_names
    from ..diagnostics.compare import compare_lvis
    from ..protocols.lvis import evaluate_lvis
    from .lvis import lvis_options

    results = [evaluate_lvis(args.gt, path, **lvis_options(args)) for path in args.dt]
    return results, lvis_number_names(results[0]), compare_lvis


def _run_crowdpose(args):
    """``--protocol crowdpose``: xtcocotools' ``keypoints_crowd`` numbers (with
    ``--kpt-sigmas``, ``--use-area``)."""
    from ..diagnostics.bootstrap_crowdpose import crowdpose_number_names
    from ..diagnostics.compare import compare_crowdpose
    from ..protocols.crowdpose import evaluate_crowdpose
    from .crowdpose import crowdpose_options

    results = [evaluate_crowdpose(args.gt, path, **crowdpose_options(args)) for path in args.dt]
    return results, crowdpose_number_names(results[0]), compare_crowdpose


def _run_openimages(args):
    """``--protocol openimages``: the boxes, labels and hierarchy read once; without
    ``--classes`` the label map is every label any of the files has (one map for every
    model: a label only some detect has no ground truth, so its AP is undefined and mAP
    is the same as with each file's own map)."""
    from ..diagnostics.bootstrap_openimages import openimages_number_names
    from ..diagnostics.compare import compare_openimages
    from ..io.openimages import read_oid_boxes, read_oid_hierarchy, read_oid_image_labels
    from ..protocols.openimages import evaluate_openimages
    from .openimages import openimages_classes

    classes = openimages_classes(args)
    inputs = {"image_labels": read_oid_image_labels(args.labels) if args.labels else None,
              "hierarchy": read_oid_hierarchy(args.hierarchy) if args.hierarchy else None,
              "expand_detections": args.expand_detections}
    boxes = read_oid_boxes(args.gt)
    results = [evaluate_openimages(boxes, path, classes=classes, **inputs) for path in args.dt]
    seen = sorted({c for r in results for c in r.classes})
    if any(list(r.classes) != seen for r in results):
        results = [r if list(r.classes) == seen else
                   evaluate_openimages(boxes, path, classes=seen, **inputs)
                   for r, path in zip(results, args.dt)]
    return results, openimages_number_names(results[0]), compare_openimages


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
    from pathlib import Path

    names = [Path(p).name for p in paths]
    return [f"{n}#{i}" if names.count(n) > 1 else n for i, n in enumerate(names)]
