"""``deteval coco``: COCO evaluation of a results file against an instances file."""

from __future__ import annotations

from typing import TextIO

from ._common import _report, _UsageError, _write_json
from ._options import _add_coco_options, _add_resolution_options, coco_selection
from ._outputs import check_outputs, write_output
from ._shared_options import add_threads, check_geometry, check_max_dets, check_needs_ci
from ._slices import add_slice_options, print_slices, refuse_with_shards, slices_of
from ._table import add_table_options, check_table, write_table_output
from .check import checks_of


def add_parser(commands) -> None:
    """Add the ``coco`` command to the subparsers ``commands``."""
    coco = commands.add_parser(
        "coco", help="COCO evaluation of a results file against an instances file",
        description="COCO evaluation (pycocotools COCOeval numbers). Prints the 12-line "
        "summary exactly as pycocotools does.")
    coco.add_argument("gt", metavar="GT.json", help="COCO instances file (ground truth)")
    coco.add_argument("dt", metavar="DT.json", nargs="+",
                      help="COCO results file (detections); several files are the shards of "
                      "one run, evaluated as one (each image's detections in one file)")
    _add_coco_options(coco)
    _add_resolution_options(coco)
    add_threads(coco)
    add_table_options(coco)
    coco.add_argument("--dask", metavar="local|ADDRESS",
                      help="several DT files: read and match them on a Dask cluster, 'local' "
                      "(a LocalCluster for this run) or a scheduler address (needs "
                      "pip install 'deteval[dask]'; the input checks run on the first file)")
    add_slice_options(coco)
    from .compare import add_bootstrap_options

    add_bootstrap_options(coco.add_argument_group("confidence intervals"),
                          resamples_flag="--ci")
    coco.set_defaults(parser=coco)


def run(args, out: TextIO, err: TextIO) -> int:
    from ..errors import FormatError
    from ..protocols.coco import evaluate_coco

    check_outputs(args, files=[("--json", args.json), ("--matches", args.matches),
                               ("--table", args.table)])
    check_table(args)
    check_needs_ci(args)
    if args.ci is not None and (len(args.dt) > 1 or args.dask is not None):
        raise _UsageError("--ci is not available with several DT files or --dask: the sharded "
                          "evaluation keeps no match table (merge the files to get it)")
    if (len(args.dt) > 1 or args.dask is not None) and (args.matches or args.table):
        flag = "--matches" if args.matches else "--table"
        raise _UsageError(f"{flag} is not available with several DT files or --dask: the "
                          "sharded evaluation keeps no match table (merge the files to get "
                          "it)")
    if len(args.dt) > 1 or args.dask is not None:
        refuse_with_shards(args)
    if args.threads is not None and (len(args.dt) > 1 or args.dask is not None):
        raise _UsageError("--threads is available with one DT file only: a sharded evaluation "
                          "(several DT files, --dask) uses every core")
    if args.dask is not None:
        if args.repair_polygons or args.match_by:
            flag = "--repair-polygons" if args.repair_polygons else "--match-by"
            raise _UsageError(f"{flag} is not available with --dask (the workers read the "
                              "results by id, as pycocotools)")
        _require_dask()

    check_geometry(args.iou_type, kpt_sigmas=args.kpt_sigmas,
                   dilation_ratio=getattr(args, "dilation_ratio", None))
    check_max_dets(args.max_dets, "coco", args.iou_type)
    options = {"iou_type": args.iou_type}
    if getattr(args, "dilation_ratio", None) is not None:
        options["dilation_ratio"] = args.dilation_ratio
    if args.kpt_sigmas is not None:
        options["keypoint_sigmas"] = tuple(args.kpt_sigmas)
    if args.repair_polygons:
        options["invalid"] = "repair"
    options.update(coco_selection(args))
    try:
        if len(args.dt) == 1 and args.dask is None:
            result = evaluate_coco(args.gt, args.dt[0], match_by=args.match_by or "auto",
                                   threads=args.threads, **options)
        else:
            return _run_shards(args, options, out, err)
    except FormatError as error:
        raise FormatError(error.message.replace("pass invalid='repair'",
                                                "pass --repair-polygons"),
                          source=error.source, record=error.record, hint=error.hint,
                          cli_hint=error.cli_hint) from None
    hazards = [] if args.no_check else checks_of(result.dataset, result.detections, err,
                                                  dt_format="coco")
    # Everything that can refuse the run (a slice key, --table-iou, the intervals) before any
    # file is written: a run that fails writes nothing.
    sliced = slices_of(args, result)
    intervals = _intervals(args, result)
    write_table_output(args, result)
    if args.matches:   # files first: written whatever happens to stdout
        write_output(args.matches, result.matches.to_csv)
    _output(args, result, hazards, out, err, sliced, intervals)
    return 0


def _intervals(args, result):
    """``--ci B``: the bootstrap intervals of the result, or None."""
    if getattr(args, "ci", None) is None:
        return None
    from ..diagnostics.bootstrap import bootstrap_coco

    return bootstrap_coco(result, n_resamples=args.ci, confidence=args.confidence,
                          seed=args.seed, score_threshold=args.score_threshold,
                          threads=getattr(args, "threads", None))


def _output(args, result, hazards: list[dict], out: TextIO, err: TextIO,
            sliced=None, intervals=None) -> None:
    """The --json file (first: written whatever happens to stdout), then the summary (and
    per-class table, slices, and intervals with --ci) on ``out`` and the notes on ``err``."""
    if args.json:
        extra = {} if intervals is None else {"intervals": intervals.to_dict()}
        if sliced is not None:
            extra["slices"] = sliced.to_dict()
        _write_json(args.json, dict(result.to_dict(), timings=result.timings,
                                    warnings=hazards, **extra))
    _report(result, out, err, per_class=args.per_class)
    if intervals is not None:
        print(file=out)
        print(intervals.table(), file=out)
    if sliced is not None:
        print_slices(sliced, out)
        for note in sliced.notes:
            print(f"deteval: note: {note}", file=err)


def _require_dask() -> None:
    """--dask without the extra: an error naming it, before anything is read."""
    from ..errors import DetevalError

    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as error:
        raise DetevalError(f"--dask needs dask and distributed: pip install 'deteval[dask]' "
                           f"({error})") from None


def _run_shards(args, options: dict, out: TextIO, err: TextIO) -> int:
    """Several results files (or --dask): evaluated as one, file by file or on a cluster.

    Locally each file is read, checked and matched in turn (an image's detections must all be
    in one file: an image in two files is an error naming both); with --dask the workers read
    and match the files and only the first is checked here."""
    import dataclasses

    import numpy as np

    from .._inputs import read_coco_ground_truth
    from ..errors import FormatError
    from ..protocols.coco import load_coco_pair
    from ..streaming import Evaluator

    invalid = options.pop("invalid", "raise")
    iou_type = options.pop("iou_type")
    dataset = read_coco_ground_truth(args.gt, iou_type=iou_type, invalid=invalid)
    checks = _ShardChecks(dataset, err, enabled=not args.no_check)
    notes = list(dataset.notes)
    if args.dask is not None:
        from ..dask import evaluate

        _, detections, _ = load_coco_pair(dataset, args.dt[0], iou_type, invalid, "auto")
        checks.add(args.dt[0], detections)
        del detections
        result = evaluate(args.gt, args.dt, client=args.dask, iou_type=iou_type,
                          **options)
    else:
        evaluator = Evaluator(dataset, iou_type=iou_type, unknown_labels="drop", **options)
        first_file = np.full(len(dataset.images), -1)
        for k, path in enumerate(args.dt):
            _, detections, file_notes = load_coco_pair(dataset, path, iou_type, invalid,
                                              args.match_by or "auto")
            notes.extend(n for n in file_notes if n not in notes)
            images = np.unique(detections.image_index)
            before = images[first_file[images] >= 0]
            if len(before):
                image_id = dataset.images.ids[before[0]]
                more = f" (and {len(before) - 1} more images)" if len(before) > 1 else ""
                raise FormatError(
                    f"image_id {image_id} has detections in {args.dt[first_file[before[0]]]} "
                    f"and in {path}{more}; "
                    "several DT files are the shards of one run: each image's detections "
                    "must all be in one file", source=path, record=f"image_id {image_id}")
            first_file[images] = k
            checks.add(path, detections)
            evaluator.update(detections)
            del detections
        result = evaluator.compute()
    hazards = checks.finish()
    result = dataclasses.replace(result, notes=tuple(notes) + tuple(
        n for n in result.notes if n not in notes))
    _output(args, result, hazards, out, err)
    return 0


class _ShardChecks:
    """The input checks file by file: each file's hazards but the coverage one, which is
    judged on every file's images together at the end (a shard covers a part of them)."""

    def __init__(self, dataset, err: TextIO, *, enabled: bool):
        import numpy as np

        self.dataset, self.err, self.enabled = dataset, err, enabled
        self.hazards: list[dict] = []
        self.detected = np.zeros(len(dataset.images), dtype=bool)
        self.n_detections = 0

    def add(self, path: str, detections) -> None:
        from ..doctor import COVERAGE, check_inputs

        if not self.enabled:
            return
        self.detected[detections.image_index] = True
        self.n_detections += len(detections)
        diagnosis = check_inputs(self.dataset, detections, dt_format="coco")
        self._print([h for h in diagnosis.hazards if h.code != COVERAGE], path)

    def finish(self) -> list[dict]:
        from ..doctor import coverage_hazards

        if self.enabled:
            self._print(coverage_hazards(self.dataset, self.detected, self.n_detections), None)
        return self.hazards

    def _print(self, hazards, path: str | None) -> None:
        where = f"{path}: " if path else ""
        for hazard in hazards:
            print(f"deteval: warning: {where}[{hazard.code}] {hazard.text(cli=True)}; see "
                  "`deteval check`", file=self.err)
            self.hazards.append(dict(hazard.to_dict(), **({"file": path} if path else {})))
