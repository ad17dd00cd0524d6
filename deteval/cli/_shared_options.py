"""Options that several commands share, each defined once with one spelling.

The long spelling (``--iou-threshold``, ``--score-threshold``, ``--iou-thresholds``) is the
one shown in ``--help`` and the documentation; the short one (``--iou``, ``--score``) stays
accepted as an alias, so command lines written for either keep working.
"""

from __future__ import annotations

import argparse

from ._common import _UsageError
from ._options import _dilation_ratio, _iou_list, _positive_int, _unit_float

_IOU_HELP = "IoU threshold, in (0, 1] (default: 0.5)"
_SCORE_HELP = "leave out detections scoring below S (default: 0, keep all)"


def add_iou_threshold(parser: argparse.ArgumentParser, *, help: str = _IOU_HELP) -> None:
    """``--iou-threshold T`` (alias ``--iou``): one IoU threshold in (0, 1], default 0.5,
    as ``args.iou_threshold``."""
    parser.add_argument("--iou-threshold", "--iou", dest="iou_threshold",
                        type=_unit_float("IoU threshold", open_low=True), default=0.5,
                        metavar="T", help=help)


def add_score_threshold(parser: argparse.ArgumentParser, *, default: float | None = 0.0,
                        help: str = _SCORE_HELP, noted: bool = False) -> None:
    """``--score-threshold S`` (alias ``--score``): a score threshold >= 0, as
    ``args.score_threshold`` (``noted``: with :class:`NotedStore`)."""
    parser.add_argument("--score-threshold", "--score", dest="score_threshold",
                        **({"action": NotedStore} if noted else {}),
                        type=_unit_float("score threshold", high=None), default=default,
                        metavar="S", help=help)


def add_iou_thresholds(parser: argparse.ArgumentParser, *, help: str) -> None:
    """``--iou-thresholds '0.5 0.75'`` (alias ``--iou``): IoU thresholds in (0, 1], as
    ``args.iou_thresholds`` (None when not given)."""
    parser.add_argument("--iou-thresholds", "--iou", dest="iou_thresholds", type=_iou_list,
                        metavar="'0.5 0.75'", help=help)


def max_dets_list(text: str) -> list[int]:
    """``--max-dets`` of every command (``coco``, ``lvis``, ``compare``): one number read as a
    positive integer, several as a list of them; how many the protocol needs is
    :func:`check_max_dets`' to say.

    >>> max_dets_list("300"), max_dets_list("1 10 100")
    ([300], [1, 10, 100])
    """
    from ._options import _number_list

    if len(text.replace(",", " ").split()) == 1:
        return [_positive_int(text)]
    return _number_list(int, positive=True)(text)


def check_max_dets(values: list[int] | None, protocol: str, iou_type: str | None) -> None:
    """``--max-dets`` by protocol, before anything is read: COCO's numbers per image and
    category, three at least (its summary reads ``maxDets[0..2]``; keypoints: any number, its
    summary reads 20); LVIS's one cut of the results per image, one number.

    >>> check_max_dets([1, 10, 100], "coco", "bbox"); check_max_dets([20], "coco", "keypoints")
    >>> check_max_dets([1, 10], "coco", "segm")
    Traceback (most recent call last):
    ...
    deteval.cli._common._UsageError: --max-dets needs 3 values with COCO (its summary reads \
maxDets[0..2]; keypoints: any number); got '1 10'
    """
    if values is None:
        return
    shown = " ".join(map(str, values))
    if protocol == "lvis" and len(values) != 1:
        raise _UsageError(f"--max-dets is LVIS's cut of the results per image, one number; got "
                          f"{shown!r} (three numbers are COCO's maxDets: deteval coco, or "
                          f"compare --protocol coco)")
    if protocol == "coco" and len(values) < 3 and iou_type != "keypoints":
        raise _UsageError(f"--max-dets needs 3 values with COCO (its summary reads "
                          f"maxDets[0..2]; keypoints: any number); got {shown!r}")


def check_iou_repeats(thresholds: list[float] | None, protocol: str) -> None:
    """``--iou-thresholds`` with a threshold given twice: kept with ``protocol`` "coco" (as
    pycocotools keeps it: the threshold counts twice in AP and AR, the means over the
    thresholds, and COCO's numbers stay pycocotools'), a usage error with the VOC protocols
    (each threshold gives its own number, ``mAP@0.5``: two of one name would collide in the
    JSON, the tables and the regression gates).

    >>> check_iou_repeats([0.5, 0.5], "coco")
    >>> check_iou_repeats([0.5, 0.5, 0.75], "voc2007")
    Traceback (most recent call last):
    ...
    deteval.cli._common._UsageError: --iou-thresholds: each IoU threshold once with Pascal VOC \
(each gives its own mAP@t); 0.5 is given 2 times
    """
    if thresholds is None or protocol == "coco":
        return
    twice = sorted({v for v in thresholds if thresholds.count(v) > 1})
    if twice:
        raise _UsageError(f"--iou-thresholds: each IoU threshold once with Pascal VOC (each "
                          f"gives its own mAP@t); {twice[0]:g} is given "
                          f"{thresholds.count(twice[0])} times")


PROTOCOLS = ("coco", "voc2007", "voc2012")
#: Every protocol deteval evaluates (``deteval calibration --protocol``).
ALL_PROTOCOLS = PROTOCOLS + ("lvis", "openimages", "crowdpose")


def add_protocol(parser: argparse.ArgumentParser, *, default: str | None, help: str,
                 choices: tuple[str, ...] = PROTOCOLS, extra: tuple[str, ...] = ()) -> None:
    """``--protocol {coco,voc2007,voc2012}`` (or ``choices``, and the ``extra`` choices), as
    ``args.protocol``; required when ``default`` is None."""
    parser.add_argument("--protocol", required=default is None,
                        choices=[*choices, *extra],
                        **({} if default is None else {"default": default}), help=help)


def add_json_output(parser: argparse.ArgumentParser, *, help: str) -> None:
    """``--json OUT.json``: the file the command writes its numbers to, as ``args.json``
    (None: no file)."""
    parser.add_argument("--json", metavar="OUT.json", help=help)


def add_per_class(parser: argparse.ArgumentParser, *,
                  help: str = "print the per-class table") -> None:
    """``--per-class``: also print a table per class, as ``args.per_class``."""
    parser.add_argument("--per-class", action="store_true", help=help)


def add_matches_output(parser: argparse.ArgumentParser, *,
                       help: str = "write the match table (area 'all') as CSV") -> None:
    """``--matches OUT.csv``: the file the match table is written to, as ``args.matches``."""
    parser.add_argument("--matches", metavar="OUT.csv", help=help)


class NotedStore(argparse.Action):
    """``store``, and note the option string that gave the value in ``args.given_flags``
    (``{dest: '--flag'}``): a setting that takes effect only with another option (see
    :func:`check_needs_ci`) is told given from left at its default."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        given = dict(getattr(namespace, "given_flags", None) or {})
        given[self.dest] = option_string
        namespace.given_flags = given


#: What each setting of the intervals does, by ``dest``: without ``--ci`` none takes effect.
_INTERVAL_SETTINGS = {"confidence": "sets the level of the intervals",
                      "seed": "seeds the resampling",
                      "threads": "sets the threads of the resamples",
                      "score_threshold": "is the threshold of the F1 number of the intervals"}


def check_needs_ci(args) -> None:
    """Usage error for a setting of the intervals (``--confidence``, ``--seed``, and where
    nothing else reads them ``--threads`` and ``--score-threshold``, each added with
    :class:`NotedStore`) given without ``--ci B``: it would have no effect."""
    if getattr(args, "ci", None) is not None:
        return
    given = getattr(args, "given_flags", None) or {}
    for dest, what in _INTERVAL_SETTINGS.items():
        if dest in given:
            raise _UsageError(f"{given[dest]} {what} of --ci B; without --ci it has no "
                              f"effect: it needs --ci")


def add_threads(parser: argparse.ArgumentParser, *,
                what: str = "matching and accumulation", noted: bool = False) -> None:
    """``--threads N``: threads for ``what`` (matching and accumulation; the resamples of
    ``--ci`` where the protocol's evaluation has no threads: ``noted``, see
    :func:`check_needs_ci`), as ``args.threads`` (None: every core)."""
    parser.add_argument("--threads", type=_positive_int, default=None, metavar="N",
                        **({"action": NotedStore} if noted else {}),
                        help=f"threads for {what} (default: every core of the machine); the "
                        "numbers are identical for every N")


def add_dilation_ratio(parser: argparse.ArgumentParser) -> None:
    """``--dilation-ratio R``: the boundary width of ``--iou-type boundary``, a number >= 0,
    as ``args.dilation_ratio`` (None: the protocol's default, 0.02)."""
    parser.add_argument("--dilation-ratio", type=_dilation_ratio, default=None, metavar="R",
                        help="boundary: boundary width as a fraction of the image diagonal "
                        "(default: 0.02)")


def check_geometry(iou_type: str | None, *, kpt_sigmas=None, dilation_ratio=None) -> None:
    """Usage error for a similarity setting the IoU type does not read: ``--kpt-sigmas``
    (keypoints only) and ``--dilation-ratio`` (boundary only) given with another type would
    be ignored, and the numbers printed as if they had been applied."""
    if kpt_sigmas is not None and iou_type != "keypoints":
        raise _UsageError("--kpt-sigmas applies to --iou-type keypoints")
    if dilation_ratio is not None and iou_type != "boundary":
        raise _UsageError("--dilation-ratio applies to --iou-type boundary")
