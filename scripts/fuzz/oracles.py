"""The oracles: pycocotools on the same COCO files, for what deteval wrote to
``metrics.json``.

* ``stats``: the 12 stats (10 for keypoints) of ``deteval coco`` (with any of ``--ci``,
  ``--slice``, ``--table``, ``--threads``: they must not change them);
* ``compare``: each model's estimates of the first 12 numbers in ``deteval compare --json``
  (the point estimates of a paired bootstrap are the plain COCO stats of each file);
* ``slices``: each image slice's stats (``--slice KEY``, ``--slice-file``), equal to
  pycocotools with ``params.imgIds`` the slice's images (docs/diagnostics/slices.md §2).

Each gives ``(label, deteval's numbers, pycocotools' numbers or the name of its refusal)``.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

__all__ = ["comparisons", "pycocotools_stats"]


def pycocotools_stats(gt: str, dt: str, iou_type: str, image_ids: list | None = None) -> Any:
    """pycocotools' stats, or the name of the exception it raised."""
    import warnings

    import numpy as np
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                coco = COCO(gt)
                res = coco.loadRes(dt)
                evaluation = COCOeval(coco, res, iou_type)
                if image_ids is not None:
                    evaluation.params.imgIds = sorted(image_ids)
                evaluation.evaluate()
                evaluation.accumulate()
                evaluation.summarize()
        return [float(v) for v in evaluation.stats]
    except Exception as error:   # the oracle's refusal: no comparison
        return f"refused: {type(error).__name__}"


def comparisons(oracle: dict, metrics: dict) -> list[tuple[str, list, Any]]:
    """What to compare for one case: ``(label, ours, theirs)`` (``theirs`` a string when
    pycocotools refused the input)."""
    if oracle.get("read") == "readers":
        from .readers import reader_comparisons

        return reader_comparisons(oracle)
    if oracle.get("read") in ("per-model", "same-json"):
        return _settings_oracles(oracle, metrics)
    if oracle.get("read") in ("differential", "accepts", "key"):
        return _other_command(oracle, metrics)
    gt, iou_type = oracle["gt"], oracle["iou_type"]
    out: list[tuple[str, list, Any]] = []
    if oracle.get("read") == "compare":
        labels = metrics["models"]
        for label, dt in zip(labels, oracle["dts"]):
            ours = [row["estimate"] for row in metrics["intervals"][label][:12]]
            out.append((f"compare {label}", ours, pycocotools_stats(gt, dt, iou_type)))
        return out
    whole = pycocotools_stats(gt, oracle["dt"], iou_type)
    out.append(("stats", metrics["stats"], whole))
    if isinstance(whole, str):
        return out
    groups = oracle.get("slices") or {}
    for piece in (metrics.get("slices") or {}).get("slices", []):
        images = groups.get(piece["key"], {}).get(piece["value"])
        if piece["kind"] != "image" or images is None:
            continue
        theirs = pycocotools_stats(gt, oracle["dt"], iou_type, image_ids=images)
        out.append((f"slice {piece['key']}={piece['value']}", list(piece["stats"].values()),
                    theirs))
    return out


def _field(doc: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        doc = doc[key]
    return doc


def _other_command(oracle: dict, metrics: dict | None) -> list[tuple[str, list, Any]]:
    """The oracles that are deteval's own commands (scripts/fuzz/protocols.py):

    * ``key``: the JSON has ``oracle["key"]`` (``--lrp``'s ``lrp``);
    * ``differential``: ``oracle["ours"]`` of this run's JSON equals ``oracle["theirs"]`` x
      ``scale`` of ``oracle["argv"]``'s (to 9 digits), when that command accepts the files;
    * ``accepts``: what ``oracle["argv"]`` accepts (exit 0), this command accepted too,
      unless its error says ``oracle["unless"]`` (a refusal of its own: scores that are not
      confidences).
    """
    if oracle["read"] == "key":
        return [(f"'{oracle['key']}' in the JSON", [1.0],
                 [float(metrics is not None and oracle["key"] in metrics)])]
    from deteval.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rc = main(oracle["argv"])
    reference = read_metrics("reference.json") if rc == 0 else None
    Path("reference.json").unlink(missing_ok=True)
    if oracle["read"] == "accepts":
        if rc != 0:
            return [(oracle["label"], [1.0], f"refused: {' '.join(oracle['argv'][:1])}")]
        stderr = Path("stderr.txt").read_text("utf-8", "replace") if Path(
            "stderr.txt").is_file() else ""
        if metrics is None and oracle.get("unless") and oracle["unless"] in stderr:
            return [(oracle["label"], [1.0], f"refused: {oracle['unless']}")]
        return [(f"{oracle['label']} accepts what {oracle['argv'][0]} accepts",
                 [float(metrics is not None)], [1.0])]
    if reference is None or metrics is None:
        return [(oracle["label"], [], f"refused: {oracle['argv'][0]} status {rc}")]
    ours, theirs = _field(metrics, oracle["ours"]), _field(reference, oracle["theirs"])
    ours = float("nan") if ours is None else float(ours)          # NaN is null in JSON
    theirs = float("nan") if theirs is None else float(theirs) * oracle["scale"]
    return [(f"{oracle['label']} vs {oracle['argv'][0]}", [round(ours, 9)],
             [round(theirs, 9)])]


def _run_reference(argv: list) -> dict | None:
    from deteval.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rc = main(argv)
    reference = read_metrics("reference.json") if rc == 0 else None
    Path("reference.json").unlink(missing_ok=True)
    return reference


def _undefined_as_minus_one(value: Any) -> float:
    """-1 for an undefined number (NaN, null: a protocol's JSON; -1: the bootstrap's)."""
    value = float("nan") if value is None else float(value)
    return -1.0 if value != value or value < 0 else round(value, 12)


def _protocol_numbers(reference: dict) -> dict[str, Any]:
    """The named numbers of a protocol command's JSON (``stats_named``; VOC: mAP and the
    mAP at each threshold)."""
    if "stats_named" in reference:
        return dict(reference["stats_named"])
    numbers = {"mAP": reference["mean_ap"]}
    thresholds = reference.get("iou_thresholds") or []
    short = [f"{t:.2f}" for t in thresholds]
    if len(set(short)) < len(short):      # two decimals would make two look alike
        short = [repr(float(t)) for t in thresholds]
    if len(thresholds) > 1 and len(set(short)) == len(short):
        numbers.update({f"mAP@{t}": v for t, v in zip(short, reference["map"])})
    return numbers


def _settings_oracles(oracle: dict, metrics: dict | None) -> list[tuple[str, list, Any]]:
    """scripts/fuzz/settings.py's oracles:

    * ``per-model``: each model's estimates in ``compare --json`` are the numbers of the
      protocol's command (``oracle["argvs"][k]``, the same settings) on model k's file
      (-1 and NaN both undefined);
    * ``same-json``: this run's JSON equals ``oracle["argv"]``'s, timings aside; and what
      one accepts, the other accepts.
    """
    if oracle["read"] == "same-json":
        reference = _run_reference(oracle["argv"])
        if metrics is None or reference is None:
            return [(f"{oracle['label']} accepts what {oracle['argv'][0]} accepts",
                     [float(metrics is not None)], [float(reference is not None)])]
        ours = json.dumps({k: v for k, v in metrics.items() if k != "timings"}, sort_keys=True)
        theirs = json.dumps({k: v for k, v in reference.items() if k != "timings"},
                            sort_keys=True)
        return [(f"{oracle['label']} JSON vs {' '.join(oracle['argv'][:1])}: "
                 f"{ours[:300]} / {theirs[:300]}" if ours != theirs else oracle["label"],
                 [float(ours == theirs)], [1.0])]
    if metrics is None:
        return []
    out: list[tuple[str, list, Any]] = []
    for label, argv in zip(metrics["models"], oracle["argvs"]):
        reference = _run_reference(argv)
        if reference is None:
            out.append((f"{oracle['label']} {label}", [1.0],
                        f"refused: {argv[0]} on {label}"))
            continue
        numbers = _protocol_numbers(reference)
        rows = {row["name"]: row["estimate"] for row in metrics["intervals"][label]
                if row["name"] in numbers}
        names = sorted(rows)
        out.append((f"{oracle['label']} {label} {names} vs {argv[0]}",
                    [_undefined_as_minus_one(rows[n]) for n in names],
                    [_undefined_as_minus_one(numbers[n]) for n in names]))
        if not names:
            out.append((f"{oracle['label']} {label}: no number in common with {argv[0]}",
                        [0.0], [1.0]))
    return out


def read_metrics(path: str = "metrics.json") -> dict | None:
    file = Path(path)
    return json.loads(file.read_bytes()) if file.is_file() else None
