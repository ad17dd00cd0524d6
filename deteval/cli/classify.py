"""``deteval classify``: classification metrics of labels against scores or
predictions."""

from __future__ import annotations

from typing import TextIO

from ._common import _write_json
from ._options import _positive_int
from ._outputs import check_outputs
from ._shared_options import add_json_output


def add_parser(commands) -> None:
    """Add the ``classify`` command to the subparsers ``commands``."""
    classify = commands.add_parser(
        "classify", help="classification metrics of labels against scores or predictions",
        description="Classification metrics: accuracy, top-k accuracy (scores given), "
        "macro/micro/weighted precision, recall and F1, and the confusion matrix. LABELS: "
        "a CSV file with one label (integer or string) a line, optional header, or a .npy "
        "array. SCORES: a CSV file of n rows x K columns (optional header; a single column "
        "holds predicted labels) or a .npy array (2-D scores, 1-D predicted labels). "
        "Integer labels name the score columns 0..K-1; string labels the columns in sorted "
        "order. The predicted class is the highest-scored column (a tie goes to the later "
        "column, as top-k accuracy breaks ties).")
    classify.add_argument("labels", metavar="LABELS", help="true labels: .csv or .npy")
    classify.add_argument("scores", metavar="SCORES",
                          help="scores (n x K) or predicted labels: .csv or .npy")
    classify.add_argument("--top-k", type=_positive_int, metavar="K",
                          help="k of the top-k accuracy (default: 5, at most K - 1)")
    add_json_output(classify, help="also write the numbers as JSON")
    classify.set_defaults(parser=classify)


def _format_matrix(classes, matrix) -> str:
    names = [str(c) for c in classes]
    corner = "true \\ pred"
    first = max(len(corner), *(len(n) for n in names))
    width = max(4, *(len(n) for n in names), *(len(str(int(v))) for v in matrix.ravel()))
    lines = [f"{corner:<{first}}  " + "  ".join(f"{n:>{width}}" for n in names)]
    for name, row in zip(names, matrix):
        lines.append(f"{name:<{first}}  " + "  ".join(f"{int(v):>{width}}" for v in row))
    return "\n".join(lines)


def run(args, out: TextIO, err: TextIO) -> int:
    import numpy as np

    from .. import classification as cls
    from ..io.labels import read_labels, read_scores

    check_outputs(args, files=[("--json", args.json)])
    truth = read_labels(args.labels)
    scores = read_scores(args.scores)
    if len(scores) != len(truth):
        raise ValueError(f"LABELS ({args.labels}) has {len(truth)} labels but SCORES "
                         f"({args.scores}) has {len(scores)} rows")
    top_k = None
    if scores.ndim == 2:
        n_columns = scores.shape[1]
        if truth.dtype.kind in "iu":
            classes = np.arange(n_columns)
            outside = truth[(truth < 0) | (truth >= n_columns)]
            if len(outside):
                raise ValueError(f"LABELS ({args.labels}): integer labels index the "
                                 f"{n_columns} score columns (0..{n_columns - 1}); got "
                                 f"{outside[0]}")
        else:
            classes = np.unique(truth)
            if len(classes) != n_columns:
                raise ValueError(f"SCORES ({args.scores}) has {n_columns} columns but LABELS "
                                 f"({args.labels}) has {len(classes)} distinct classes (string "
                                 "labels name the columns in sorted order)")
        if not np.isfinite(scores).all():
            row, col = np.argwhere(~np.isfinite(scores))[0]
            raise ValueError(f"SCORES ({args.scores}): scores must be finite; got "
                             f"{scores[row, col]} at row {row + 1}, column {col + 1}")
        # The highest column, a tie going to the later column (top_k_accuracy's order).
        predicted = classes[n_columns - 1 - np.argmax(scores[:, ::-1], axis=1)]
        k = args.top_k if args.top_k is not None else max(1, min(5, n_columns - 1))
        top_k = (k, cls.top_k_accuracy(truth, scores, k=k, labels=classes))
    else:
        predicted = scores
        if truth.dtype.kind != predicted.dtype.kind and {truth.dtype.kind,
                                                         predicted.dtype.kind} != {"i", "u"}:
            raise ValueError(f"LABELS ({args.labels}) and SCORES ({args.scores}) hold labels "
                             "of different kinds (numbers and names)")
        classes = np.unique(np.concatenate([truth, predicted]))
        if args.top_k is not None:
            raise ValueError(f"--top-k needs scores: SCORES ({args.scores}) holds predicted "
                             "labels")
    payload = _classify_numbers(cls, truth, predicted, classes)
    if top_k is not None:
        payload["top_k"] = {"k": top_k[0], "accuracy": top_k[1]}
    if args.json:   # files first: written whatever happens to stdout
        _write_json(args.json, payload)
    print(f"deteval classify: {len(truth)} samples, {len(classes)} classes", file=out)
    print(f"accuracy        {payload['accuracy']:.4f}", file=out)
    if top_k is not None:
        print(f"top-{top_k[0]} accuracy  {top_k[1]:.4f}", file=out)
    print(file=out)
    print(f"{'average':<10}{'precision':>10}{'recall':>10}{'F1':>10}", file=out)
    for average in ("macro", "micro", "weighted"):
        row = payload[average]
        print(f"{average:<10}{row['precision']:>10.4f}{row['recall']:>10.4f}"
              f"{row['f1']:>10.4f}", file=out)
    print(file=out)
    print(_format_matrix(classes, np.array(payload["confusion_matrix"])), file=out)
    return 0


def _classify_numbers(cls, truth, predicted, classes) -> dict:
    labels = classes.tolist()
    payload = {"n_samples": len(truth), "labels": labels,
               "accuracy": cls.accuracy(truth, predicted, labels=classes)}
    for average in ("macro", "micro", "weighted"):
        payload[average] = {
            name: float(function(truth, predicted, average=average, labels=classes,
                                 zero_division=0))
            for name, function in (("precision", cls.precision), ("recall", cls.recall),
                                   ("f1", cls.f1_score))}
    payload["confusion_matrix"] = cls.confusion_matrix(truth, predicted,
                                                       labels=classes).tolist()
    return payload
