"""``deteval check``: the input doctor on a ground-truth / detections pair, and the same
checks before every evaluation command (one line per hazard on stderr; ``--no-check``)."""

from __future__ import annotations

from typing import Any, TextIO

from ._common import _write_json
from ._options import _add_input_options, _Inputs, _read_inputs
from ._outputs import check_outputs
from ._shared_options import add_json_output


def add_parser(commands) -> None:
    """Add the ``check`` command to the subparsers ``commands``."""
    from .._format_names import DETECTION_FORMATS, GT_FORMATS

    check = commands.add_parser(
        "check", help="look for plausible mistakes in a GT / DT pair before evaluating it",
        description="The input doctor (deteval.check_inputs): read ground truth and "
        "detections as an evaluation would and look for mistakes that give plausible-"
        "looking but wrong numbers: a box format other than the one given, class ids "
        "shifted by one or a names file missing or in another order, normalised "
        "coordinates read as pixels, detections outside their images, images without "
        "detections, duplicated detections, equal scores, categories predicted but absent "
        "or never predicted. Exit status 1 when a hazard is found, 0 when the pair looks "
        "right. The same checks run before coco, voc, eval, confusion, report and draw "
        "(--no-check skips them).")
    add_json_output(check, help="also write the diagnosis as JSON")
    _add_input_options(check, GT_FORMATS, DETECTION_FORMATS, checks=False)
    check.set_defaults(parser=check, no_check=False)


def run(args, out: TextIO, err: TextIO) -> int:
    from ..doctor import check_inputs

    check_outputs(args, files=[("--json", args.json)])
    inputs = _read_inputs(args)
    _print_notes(inputs.notes, err)
    diagnosis = check_inputs(inputs.dataset, inputs.detections, box_format=inputs.box_format,
                             class_names=inputs.class_names, dt_format=inputs.dt_format)
    dataset = inputs.dataset
    print(f"deteval check: {len(dataset.images)} images, {len(dataset.categories)} categories, "
          f"{len(dataset.gt)} objects; {diagnosis.n_detections} detections, the top "
          f"{diagnosis.n_sampled} looked at (boxes read as {diagnosis.box_format}; median "
          f"best IoU with their image's objects: {_iou(diagnosis.median_iou)})", file=out)
    for hazard in diagnosis.hazards:
        print(f"hazard [{hazard.code}]: {hazard.message}", file=out)
        print(f"  likely cause: {hazard.cause}", file=out)
        if hazard.cli_option:
            print(f"  fix: pass {hazard.cli_option}", file=out)
    print("no hazard found: the pair looks right" if diagnosis.ok else
          f"{len(diagnosis.hazards)} hazard(s) found", file=out)
    if args.json:
        _write_json(args.json, diagnosis.to_dict())
    return 0 if diagnosis.ok else 1


def _iou(value: float) -> str:
    return "n/a" if value != value else f"{value:.2f}"


def _print_notes(notes: tuple[str, ...], err: TextIO) -> None:
    for note in notes:
        print(f"deteval: note: {note}", file=err)


def run_checks(args, inputs: _Inputs, err: TextIO) -> list[dict[str, Any]]:
    """The input checks before an evaluation: notes and one line per hazard on ``err``;
    returns the hazards for ``--json`` (``warnings``). Nothing with ``--no-check``."""
    _print_notes(inputs.notes, err)
    if getattr(args, "no_check", False):
        return []
    return checks_of(inputs.dataset, inputs.detections, err, box_format=inputs.box_format,
                     class_names=inputs.class_names, dt_format=inputs.dt_format)


def checks_of(dataset, detections, err: TextIO, **context: Any) -> list[dict[str, Any]]:
    """Run the doctor on read inputs; print each hazard on ``err`` as one line."""
    from ..doctor import check_inputs

    diagnosis = check_inputs(dataset, detections, **context)
    for hazard in diagnosis.hazards:
        print(f"deteval: warning: [{hazard.code}] {hazard.text(cli=True)}; see `deteval "
              "check`", file=err)
    return [hazard.to_dict() for hazard in diagnosis.hazards]
