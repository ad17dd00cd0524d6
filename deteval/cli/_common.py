"""Pieces the commands share: the usage error, output checks, JSON writing, and the
printing of COCO and VOC results."""

from __future__ import annotations

from typing import TextIO


class _UsageError(Exception):
    """A combination of options the parser cannot see is wrong: exit 2 with the usage."""


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
    # The metric columns are those of the rows (keypoint rows have no APs, and AR at 20).
    columns = [c for c in (rows[0] if rows else {"AP": 0}) if c not in (
        "category_id", "name", "n_gt", "n_crowd", "n_detections")]
    head = (f"{'id':>3}  {'name':<{width}}" + "".join(f"{c:>7}" for c in columns)
            + f"{'n_gt':>6}{'n_dt':>6}")
    lines = [head]
    for r in rows:
        cells = "".join(f"{'-':>7}" if r[c] < 0 else f"{r[c]:7.3f}" for c in columns)
        lines.append(f"{r['category_id']:>3}  {r['name']:<{width}}{cells}"
                     f"{r['n_gt']:>6}{r['n_detections']:>6}")
    return "\n".join(lines)


def _write_json(path: str, payload: dict) -> None:
    """Write ``payload`` as indented JSON, whole or not at all (see :mod:`._outputs`)."""
    import orjson

    from ._outputs import write_output

    write_output(path, orjson.dumps(payload, option=orjson.OPT_INDENT_2))


def _report(result, out: TextIO, err: TextIO, *, per_class: bool) -> None:
    for note in result.notes:
        print(f"deteval: note: {note}", file=err)
    print(result.summary(), file=out)
    if per_class:
        print(file=out)
        print(format_per_class(result.per_class()), file=out)


def _voc_preset(name: str):
    from ..protocols import voc

    return getattr(voc, name)


def _report_voc(result, out: TextIO, err: TextIO) -> None:
    """The summary table on ``out``; the notes (its last lines) on ``err`` as for coco."""
    for note in result.notes:
        print(f"deteval: note: {note}", file=err)
    lines = result.summary().splitlines()
    notes = [f"note: {note}" for note in result.notes]
    if notes and lines[-len(notes):] == notes:
        del lines[-len(notes):]
    print("\n".join(lines), file=out)


def _voc_json(result, preset: str) -> dict:
    payload = result.to_dict()
    payload["preset"] = preset
    payload["timings"] = result.timings
    return payload


def _write_and_report(args, result, out: TextIO, err: TextIO, *, printed=None,
                      extra: dict | None = None) -> None:
    """The end of a protocol command: ``--json`` and ``--matches`` files first (what the user
    asked for is written whatever happens to stdout), then the summary (of ``printed`` when
    given, a view of ``result`` that formats it differently). ``extra`` entries are added
    to the JSON (``intervals``, ``slices``)."""
    from ._outputs import write_output

    if args.json:
        payload = result.to_dict()
        payload["timings"] = result.timings
        payload.update(extra or {})
        _write_json(args.json, payload)
    if args.matches:
        write_output(args.matches, result.matches.to_csv)
    _report(result if printed is None else printed, out, err, per_class=args.per_class)
