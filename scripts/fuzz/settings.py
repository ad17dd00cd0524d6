"""Cases of the protocol settings that ``compare`` and ``calibration`` take from each
protocol's command, and of the intervals of ``lvis``, ``crowdpose``, ``openimages`` (``--ci
B --threads N``) and ``eval --ci``:

``compare-settings``
    ``compare --protocol P`` with P's settings (``--detectron2``, ``--iou-thresholds`` for
    VOC; ``--max-dets``, ``--dilation-ratio`` for LVIS; ``--kpt-sigmas``, ``--use-area`` for
    CrowdPose and COCO keypoints), good or one bad value, or another protocol's setting
    (exit 2, naming it). Oracle ``per-model``: each model's estimates are the numbers of
    P's own command on that model's file with the same settings.
``calibration-settings``
    ``calibration --protocol P`` with the same settings (and ``--classes``,
    ``--expand-detections`` for Open Images). Oracle ``accepts``: what P's command accepts
    with those settings, calibration accepts.
``intervals``
    ``lvis|crowdpose|openimages --ci B --threads N`` and ``eval --protocol coco|voc --ci B``.
    Oracle ``same-json``: the JSON equals (timings aside) that of ``--threads 1``, or, for
    ``eval``, that of ``coco``/``voc`` with the same options.
"""

from __future__ import annotations

import random

from .commands import (
    BAD_COUNTS,
    _bbox_pair,
    _count,
    _finish,
    _Options,
    _shape,
    crowdpose_pair,
    geometry_pair,
    hierarchy_file,
)
from .mutate import dump_json
from .protocols import _lvis_geometry_pair, _mutate, _mutate_csv, _openimages_files

__all__ = ["MAKERS"]

BAD_RATIO = ("x", "nan", "-0.1", "inf", "")
BAD_THRESHOLDS = ("0", "1.5", "nan", "", "0.5 x", "-0.5", "0.5;0.75")   # (commas: separators)
#: The reference command of each protocol (argv before the files' options).
OWN = {"voc2007": ["voc", "--year", "2007"], "voc2012": ["voc", "--year", "2012"],
       "lvis": ["lvis"], "crowdpose": ["crowdpose"], "coco": ["coco"]}


def _sigmas(rng: random.Random, n: int) -> str:
    return " ".join(f"{rng.uniform(0.02, 0.2):.3f}" for _ in range(n))


def _pair(rng: random.Random, protocol: str) -> tuple[str, dict, list]:
    if protocol == "lvis":
        iou_type = rng.choice(("bbox", "bbox", "segm", "boundary"))
        return (iou_type, *_lvis_geometry_pair(rng, iou_type))
    if protocol == "crowdpose":
        return ("keypoints", *crowdpose_pair(rng))
    if protocol == "coco":
        return ("keypoints", *geometry_pair(rng, "keypoints"))
    return ("bbox", *_bbox_pair(rng))


def _settings(rng: random.Random, opts: _Options, protocol: str, iou_type: str, *,
              thresholds: bool = True) -> list:
    """P's settings (some of them) on ``opts``; returns the same settings for P's own
    command (the good values only: with a bad one there is no oracle)."""
    own: list[str] = []

    def add(flag: str, good: str | None, bad: tuple = (), late: tuple = ()) -> None:
        opts.add(flag, good, bad, late)
        if opts.bad_flag != flag:
            own.extend([flag] if good is None else [flag, good])

    if protocol.startswith("voc"):
        if rng.random() < 0.5:
            add("--detectron2", None)
        if thresholds and rng.random() < 0.5:     # (calibration: its own --iou-threshold)
            add("--iou-thresholds", rng.choice(("0.5", "0.5 0.75", "0.3 0.5 0.7", "1",
                                                "0.5 0.501")), BAD_THRESHOLDS)
    if protocol == "lvis":
        if rng.random() < 0.6:
            add("--max-dets", _count(rng, 1, 400), BAD_COUNTS)
        if iou_type == "boundary" and rng.random() < 0.6:
            add("--dilation-ratio", rng.choice(("0.02", "0.1", "0.005", "0")), BAD_RATIO)
    if protocol in ("crowdpose", "coco") and rng.random() < 0.6:
        n = 14 if protocol == "crowdpose" else 17
        add("--kpt-sigmas", _sigmas(rng, n), ("x", "١"),
            late=(_sigmas(rng, 2), _sigmas(rng, n + 1), "nan " * n, "0 " * n))
    if protocol == "crowdpose" and rng.random() < 0.5:
        add("--use-area", None)
    return own


def _wrong_setting(rng: random.Random, protocol: str, iou_type: str, *,
                   compare: bool = False) -> tuple[str, str | None]:
    """A setting of another protocol: refused (exit 2) naming it (``compare``: its
    ``--protocol coco`` reads COCO's ``--iou-thresholds`` and ``--class-agnostic``)."""
    wrong: list[tuple[str, str | None]] = []
    if not protocol.startswith("voc"):
        wrong.append(("--detectron2", None))
        if not (compare and protocol == "coco"):
            wrong.append(("--iou-thresholds", "0.5"))
    if compare and protocol != "coco":
        wrong.append(("--class-agnostic", None))
    if protocol != "lvis":      # (compare --protocol coco: one number is not COCO's three)
        wrong.append(("--max-dets", "10"))
    if protocol not in ("coco", "lvis"):
        wrong.append(("--dilation-ratio", "0.02"))
    if protocol not in ("coco", "crowdpose"):
        wrong.append(("--kpt-sigmas", "0.1"))
    if protocol != "crowdpose":
        wrong.append(("--use-area", None))
    return rng.choice(wrong)


def _compare_settings_case(rng: random.Random):
    from .protocols import _refuse

    shape = _shape(rng)
    protocol = rng.choice(("voc2007", "voc2012", "lvis", "crowdpose", "coco"))
    iou_type, gt, dt = _pair(rng, protocol)
    n = rng.randrange(2, 4)
    results = [dt] + [[dict(r, score=round(rng.random(), 3)) for r in dt if rng.random() < 0.9]
                      for _ in range(n - 1)]
    files = _mutate(rng, shape, {"gt.json": dump_json(gt),
                                 **{f"dt{k}.json": dump_json(r) for k, r in enumerate(results)}})
    dts = [f"dt{k}.json" for k in range(n)]
    opts = _Options(rng, shape == "option")
    opts.add("--protocol", protocol)
    if iou_type != "bbox" and protocol != "crowdpose":    # crowdpose: keypoints only
        opts.add("--iou-type", iou_type)
    own = _settings(rng, opts, protocol, iou_type)
    opts.add("--bootstrap", _count(rng, 1, 8))
    if shape == "option" and opts.bad_flag is None:
        _refuse(opts, *_wrong_setting(rng, protocol, iou_type, compare=True))
    opts.add("--json", "metrics.json")
    geometry = ["--iou-type", iou_type] if iou_type != "bbox" and protocol != "crowdpose" \
        else []
    oracle = {"read": "per-model", "label": f"compare --protocol {protocol}",
              "argvs": [[OWN[protocol][0], "gt.json", dt, *OWN[protocol][1:], *geometry, *own,
                         "--json", "reference.json"] for dt in dts]}
    case = _finish("compare", shape, files, ["compare", "gt.json", *dts], opts,
                   outputs=["metrics.json"], oracle=oracle if shape != "option" else None)
    case.kind = "compare-settings"
    return case


def _calibration_settings_case(rng: random.Random):
    from .protocols import _refuse

    shape = _shape(rng)
    protocol = rng.choice(("voc2007", "voc2012", "lvis", "crowdpose", "coco", "openimages"))
    opts = _Options(rng, shape == "option")
    opts.add("--protocol", protocol)
    if protocol == "openimages":
        files = _mutate_csv(rng, shape, _openimages_files(rng))
        names, own = ["boxes.csv", "dets.csv"], ["--labels", "labels.csv"]
        opts.add("--labels", "labels.csv")
        if rng.random() < 0.5:
            files["classes.txt"] = rng.choice((b"/m/01\n/m/02\n", b"/m/02\n/m/01\n/m/99\n",
                                               b"/m/01\r\n/m/02\r\n"))
            opts.add("--classes", "classes.txt", late=("missing.txt",))
            own += ["--classes", "classes.txt"] if opts.bad_flag != "--classes" else []
        if rng.random() < 0.4:     # (it needs the hierarchy)
            files["h.json"] = hierarchy_file(rng, "good")
            opts.add("--hierarchy", "h.json")
            opts.add("--expand-detections", None)
            own += ["--hierarchy", "h.json", "--expand-detections"]
        iou_type = "bbox"
    else:
        iou_type, gt, dt = _pair(rng, protocol)
        iou_type = "bbox" if protocol == "crowdpose" else iou_type
        files = _mutate(rng, shape, {"gt.json": dump_json(gt), "dt.json": dump_json(dt)})
        names = ["gt.json", "dt.json"]
        if iou_type != "bbox":
            opts.add("--iou-type", iou_type)
        own = _settings(rng, opts, protocol, iou_type, thresholds=False)
        if protocol == "lvis" and "--max-dets" in opts.argv:
            # calibration's cut is --max-detections; --max-dets is lvis's own option
            i = opts.argv.index("--max-dets")
            opts.argv[i] = "--max-detections"
            if opts.bad_flag == "--max-dets":
                opts.bad_flag = "--max-detections"
    if shape == "option" and opts.bad_flag is None and protocol != "openimages":
        _refuse(opts, *rng.choice([s for s in (_wrong_setting(rng, protocol, iou_type),
                                                ("--expand-detections", None))]))
    opts.add("--json", "metrics.json")
    oracle = None
    if shape != "option":
        geometry = ["--iou-type", iou_type] if protocol in ("lvis", "coco") and \
            iou_type != "bbox" else []
        oracle = {"read": "accepts", "label": f"calibration --protocol {protocol}",
                  "unless": "calibration needs confidences in [0, 1]",
                  "argv": [(OWN.get(protocol) or ["openimages"])[0], *names,
                           *(OWN.get(protocol) or ["openimages"])[1:], *geometry, *own,
                           "--json", "reference.json"]}
    case = _finish("calibration", shape, files, ["calibration", *names], opts,
                   outputs=["metrics.json"], oracle=oracle)
    case.kind = "calibration-settings"
    return case


def _intervals_case(rng: random.Random):
    shape = _shape(rng)
    command = rng.choice(("lvis", "crowdpose", "openimages", "eval"))
    opts = _Options(rng, shape == "option")
    if command == "openimages":
        files = _mutate_csv(rng, shape, _openimages_files(rng))
        inputs = ["boxes.csv", "dets.csv"]
        opts.add("--labels", "labels.csv")
    else:
        protocol = {"lvis": "lvis", "crowdpose": "crowdpose"}.get(
            command, rng.choice(("coco", "voc2007", "voc2012")))
        _, gt, dt = _pair(rng, protocol) if protocol != "coco" else ("bbox", *_bbox_pair(rng))
        files = _mutate(rng, shape, {"gt.json": dump_json(gt), "dt.json": dump_json(dt)})
        inputs = ["gt.json", "dt.json"]
        if command == "eval":
            opts.add("--protocol", protocol)
    opts.add("--ci", _count(rng, 1, 12), BAD_COUNTS + ("100001",))
    threads = rng.choice(("1", "2", "3", "64"))
    opts.add("--threads", threads, BAD_COUNTS)
    if rng.random() < 0.4:
        opts.add("--seed", str(rng.randrange(50)), ("x", "1.5", "-1"))
    if rng.random() < 0.3:
        opts.add("--confidence", rng.choice(("0.9", "0.5", "0.99")), ("0", "1", "x", "nan"))
    opts.add("--json", "metrics.json")
    argv = [command, *inputs]
    if command == "eval":
        i = opts.argv.index("--protocol")
        protocol = opts.argv[i + 1]
        rest = opts.argv[:i] + opts.argv[i + 2:]
        reference = ["coco", *inputs, *rest] if protocol == "coco" else \
            ["voc", *inputs, "--year", protocol[3:], *rest]
    else:
        i = opts.argv.index("--threads")
        reference = [command, *inputs, *opts.argv[:i], "--threads", "1", *opts.argv[i + 2:]]
    reference[reference.index("metrics.json")] = "reference.json"
    oracle = {"read": "same-json", "label": " ".join(argv[:1]), "argv": reference}
    case = _finish(command, shape, files, argv, opts, outputs=["metrics.json"],
                   oracle=oracle if shape != "option" else None)
    case.kind = "intervals"
    return case


MAKERS = {"compare-settings": _compare_settings_case,
          "calibration-settings": _calibration_settings_case,
          "intervals": _intervals_case}
