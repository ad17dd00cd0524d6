"""Cases of the protocol options added to ``errors``, ``calibration``, ``compare`` and the
protocols' ``--lrp``:

* ``errors --protocol {coco,voc2007,voc2012,lvis,crowdpose} --iou-type ...`` (TIDE for every
  geometry, ``--kpt-sigmas``, ``--dilation-ratio``, ``--lrp``), with a differential oracle:
  with no error fixed, TIDE's AP is the protocol's own AP at 0.5 (x 100) as ``deteval voc``,
  ``lvis`` or ``crowdpose`` report it on the same files;
* ``--lrp`` on ``voc``, ``lvis``, ``openimages`` and ``crowdpose`` (the JSON has ``lrp``);
* ``calibration --protocol ...`` (Open Images with ``--labels``/``--hierarchy``), with an
  acceptance oracle: what ``deteval lvis`` (``voc``, ``crowdpose``) accepts,
  ``calibration --protocol`` of that protocol accepts too;
* ``compare --protocol {lvis,crowdpose,openimages}`` (``--threads``, ``oLRP`` in
  ``--fail-if-regression``, the 100,000 bound of ``--bootstrap``).

Each is well formed, malformed (the generators' mutants) or has one bad option value or
one option combination the command must refuse (exit 2, naming the option).
"""

from __future__ import annotations

import random

from .commands import (
    BAD_COUNTS,
    BAD_UNIT,
    _bbox_pair,
    _count,
    _finish,
    _openimages_command_case,
    _Options,
    _shape,
    crowdpose_pair,
    geometry_pair,
    hierarchy_file,
    lvis_pair,
)
from .generators import Case
from .mutate import dump_json, mutate_bytes, mutate_lines, mutate_tree

__all__ = ["MAKERS"]

GEOMETRIES = ("bbox", "segm", "boundary", "keypoints", "polygon", "rotated")
#: Bootstrap counts past the bound (100,000): refused, never allocated.
OVER_BOUND = ("100001", "1000000", "100000000")
#: The reference command of a protocol and where its AP at IoU 0.5 is in its JSON.
REFERENCE = {"voc2007": (["voc", "--year", "2007"], "mean_ap"),
             "voc2012": (["voc", "--year", "2012"], "mean_ap"),
             "lvis": (["lvis"], "stats_named.AP50"),
             "crowdpose": (["crowdpose"], "stats_named.AP50")}


def _lvis_geometry_pair(rng: random.Random, iou_type: str) -> tuple[dict, list]:
    gt, dt = lvis_pair(rng)
    if iou_type != "bbox":
        by_image = {i["id"]: i for i in gt["images"]}
        for record in dt:
            image = by_image[record["image_id"]]
            x, y, w, h = record["bbox"]
            polygon = [x, y, x + w, y, x + w, y + h, x, y + h]
            from .generators import _rle

            record["segmentation"] = _rle([polygon], image["height"], image["width"])
    return gt, dt


def _protocol_pair(rng: random.Random, protocol: str) -> tuple[str, dict, list]:
    """The geometry and a well-formed pair of ``protocol``'s files (COCO JSON)."""
    if protocol == "coco":
        iou_type = rng.choice(GEOMETRIES)
        return (iou_type, *geometry_pair(rng, iou_type))
    if protocol == "lvis":
        iou_type = rng.choice(("bbox", "bbox", "segm", "boundary"))
        return (iou_type, *_lvis_geometry_pair(rng, iou_type))
    if protocol == "crowdpose":
        return ("keypoints", *crowdpose_pair(rng))
    return ("bbox", *_bbox_pair(rng))


def _mutate(rng: random.Random, shape: str, files: dict[str, bytes]) -> dict[str, bytes]:
    """The files, one of them mutated (tree or bytes) when the shape is ``input``."""
    if shape != "input":
        return files
    name = rng.choice([n for n in files if n.endswith(".json")] or list(files))
    import json

    try:
        files[name] = dump_json(mutate_tree(rng, json.loads(files[name]), rng.randrange(1, 4)))
    except ValueError:
        files[name] = mutate_bytes(rng, files[name])
    if rng.random() < 0.2:
        files[name] = rng.choice((b"", b"[]", b"{}", b"null", mutate_bytes(rng, files[name])))
    return files


def _openimages_files(rng: random.Random) -> dict[str, bytes]:
    """The files of a well-formed ``openimages`` case (boxes, detections, labels)."""
    inner = random.Random(rng.random())
    while True:
        case = _openimages_command_case(inner)
        if case.shape == "good":
            return {k: v for k, v in case.files.items() if k != "h.json"}


def _mutate_csv(rng: random.Random, shape: str, files: dict[str, bytes]) -> dict[str, bytes]:
    """The Open Images CSV files, one of them mutated line by line when ``input``."""
    if shape == "input":
        name = rng.choice(list(files))
        files[name] = mutate_lines(rng, files[name].decode(), rng.randrange(1, 4)).encode(
            "utf-8", "surrogatepass")
    return files


def _refuse(opts: _Options, flag: str, value: str | None) -> None:
    """A combination the command must refuse (a usage error naming ``flag``)."""
    opts.argv += [flag] if value is None else [flag, value]
    opts.bad_flag, opts.bad_value, opts.late = flag, value or "", False


# --------------------------------------------------------------------------------------------
# errors --protocol --iou-type


def _errors_protocol_case(rng: random.Random) -> Case:
    shape = _shape(rng)
    protocol = rng.choice(("coco", "voc2007", "voc2012", "lvis", "crowdpose"))
    iou_type, gt, dt = _protocol_pair(rng, protocol)
    files = _mutate(rng, shape, {"gt.json": dump_json(gt), "dt.json": dump_json(dt)})
    opts = _Options(rng, shape == "option")
    opts.add("--protocol", protocol)
    if iou_type != "bbox" and (protocol != "crowdpose" or rng.random() < 0.5):
        opts.add("--iou-type", iou_type)
    plain = True                       # no option that moves TIDE's AP off the protocol's
    if iou_type == "keypoints" and rng.random() < 0.4:
        n = 14 if protocol == "crowdpose" else 17
        sigmas = " ".join(f"{rng.uniform(0.02, 0.2):.3f}" for _ in range(n))
        opts.add("--kpt-sigmas", sigmas, ("x", "١"), late=(
            "0.1 0.2", " ".join(["0.1"] * (n + 1)), "-0.1 " * n, "0 " * n, "nan " * n,
            "inf " * n))
        plain = False
    if iou_type == "boundary" and rng.random() < 0.4:
        opts.add("--dilation-ratio", rng.choice(("0.02", "0.1", "0.005", "0")), ("x", "١"),
                 late=("-0.1", "nan", "inf", "-inf"))    # 0: one pixel, as the reference
        plain = False
    if rng.random() < 0.3:
        opts.add("--pos-threshold", rng.choice(("0.5", "0.7")), BAD_UNIT[1:])
        plain = plain and opts.argv[-1] == "0.5"
    if rng.random() < 0.3:
        opts.add("--background-threshold", rng.choice(("0", "0.1", "0.3")),
                 tuple(v for v in BAD_UNIT[1:] if v != "1e-400"))   # 1e-400 reads as 0
    if rng.random() < 0.2:
        opts.add("--max-detections", _count(rng, 1, 100), BAD_COUNTS)
        plain = False
    if protocol == "coco" and rng.random() < 0.3:
        opts.add("--rules", rng.choice(("deteval", "tidecv")), ("tide", ""))
    if protocol == "coco" and rng.random() < 0.3:
        opts.add("--lrp", None)
    if rng.random() < 0.2:
        opts.add("--per-class", None)
    if shape == "option" and opts.bad_flag is None and rng.random() < 0.6:
        wrong: list[tuple[str, str | None]] = []
        if protocol != "coco":
            wrong.append(("--lrp", None))     # another protocol's LRP is its own --lrp
        if iou_type != "keypoints":
            wrong.append(("--kpt-sigmas", " ".join(["0.05"] * 17)))
        if iou_type != "boundary":
            wrong.append(("--dilation-ratio", "0.02"))
        if protocol != "coco":
            wrong.append(("--rules", "tidecv"))
        given = "--iou-type" in opts.argv      # argparse keeps the last of two
        if protocol in ("voc2007", "voc2012"):
            wrong.append(("--iou-type", rng.choice(GEOMETRIES[1:])))
        if protocol == "lvis" and not given:
            wrong.append(("--iou-type", rng.choice(("keypoints", "polygon", "rotated"))))
        if protocol == "crowdpose" and not given:
            wrong.append(("--iou-type", rng.choice(("segm", "rotated"))))
        _refuse(opts, *rng.choice(wrong))
    opts.add("--json", "metrics.json")
    oracle = None
    if protocol in REFERENCE and plain and shape != "option":    # when both accept the files
        argv, key = REFERENCE[protocol]
        oracle = {"read": "differential", "label": f"errors --protocol {protocol} AP",
                  "ours": "tide.ap", "scale": 100.0, "theirs": key,
                  "argv": [argv[0], "gt.json", "dt.json", *argv[1:],
                           *(["--iou-type", iou_type] if protocol == "lvis" else []),
                           "--json", "reference.json"]}
    return _finish("errors-protocol", shape, files, ["errors", "gt.json", "dt.json"], opts,
                   outputs=["metrics.json"], oracle=oracle)


# --------------------------------------------------------------------------------------------
# --lrp on voc, lvis, openimages, crowdpose


def _lrp_case(rng: random.Random) -> Case:
    from .commands import _crowdpose_case, _lvis_case, _voc_options_case

    maker = rng.choice((_voc_options_case, _lvis_case, _crowdpose_case,
                        _openimages_command_case))
    case = maker(rng)
    case.argv = case.argv[:3] + ["--lrp"] + case.argv[3:]
    case.kind = "lrp"
    if case.shape == "good" and case.expect == (0,):
        case.oracle = {"read": "key", "key": "lrp"}
    return case


# --------------------------------------------------------------------------------------------
# calibration --protocol


def _calibration_protocol_case(rng: random.Random) -> Case:
    shape = _shape(rng)
    protocol = rng.choice(("coco", "voc2007", "voc2012", "lvis", "openimages", "crowdpose"))
    iou_type = "bbox"
    if protocol == "openimages":
        files = _openimages_files(rng)
        gt_name, dt_name = "boxes.csv", "dets.csv"
        files = _mutate_csv(rng, shape, files)
    else:
        iou_type, gt, dt = _protocol_pair(rng, protocol)
        iou_type = "bbox" if protocol == "crowdpose" else iou_type   # its one similarity
        if shape == "input" and dt and rng.random() < 0.3:
            rng.choice(dt)["score"] = rng.choice((1.5, -0.1, 7, 1.0000001))
        files = _mutate(rng, shape, {"gt.json": dump_json(gt), "dt.json": dump_json(dt)})
        gt_name, dt_name = "gt.json", "dt.json"
    opts = _Options(rng, shape == "option")
    opts.add("--protocol", protocol)
    if protocol == "openimages":
        opts.add("--labels", "labels.csv", late=("missing.csv", "dets.csv", "/dev/null"))
        if rng.random() < 0.5:
            files["h.json"] = hierarchy_file(rng, shape)
            opts.add("--hierarchy", "h.json", late=("boxes.csv", "missing.json"))
    if iou_type != "bbox":
        opts.add("--iou-type", iou_type)
    if rng.random() < 0.4:
        opts.add("--bins", _count(rng, 1, 25), BAD_COUNTS + ("10001", "100000000"))
    if rng.random() < 0.3:
        opts.add("--binning", rng.choice(("uniform", "quantile")), ("equal", ""))
    if rng.random() < 0.3:
        # a protocol decides at the thresholds it evaluates: another is refused, named
        good = {"coco": ("0.5", "0.75", "1"), "lvis": ("0.5", "0.75", "0.95"),
                "crowdpose": ("0.5", "0.75")}.get(protocol, ("0.5",))
        opts.add("--iou-threshold", rng.choice(good), BAD_UNIT,
                 late=() if protocol == "coco" else ("1", "0.42", "0.05"))
    if protocol in ("coco", "lvis") and rng.random() < 0.3:
        opts.add("--max-detections", _count(rng, 1, 300), BAD_COUNTS)
    if rng.random() < 0.2:
        opts.add("--per-class", None)
    if shape == "option" and opts.bad_flag is None and rng.random() < 0.6:
        wrong: list[tuple[str, str | None]] = []
        if protocol != "openimages":
            wrong += [("--labels", gt_name), ("--hierarchy", gt_name)]
        if protocol in ("voc2007", "voc2012", "openimages", "crowdpose"):
            wrong.append(("--iou-type", rng.choice(("segm", "boundary", "polygon"))))
        if protocol == "lvis" and "--iou-type" not in opts.argv:
            wrong.append(("--iou-type", rng.choice(("keypoints", "polygon", "rotated"))))
        if protocol in ("voc2007", "voc2012", "openimages", "crowdpose"):
            wrong.append(("--max-detections", "5"))
        _refuse(opts, *rng.choice(wrong))
    opts.add("--json", "metrics.json")
    oracle = None
    if shape != "option" and protocol in ("lvis", "voc2007", "crowdpose"):
        argv = REFERENCE[protocol][0]     # malformed files too: the same readers decide
        oracle = {"read": "accepts", "label": f"calibration --protocol {protocol}",
                  "unless": "calibration needs confidences in [0, 1]",
                  "argv": [argv[0], gt_name, dt_name, *argv[1:],
                           *(["--iou-type", iou_type] if protocol == "lvis" else []),
                           "--json", "reference.json"]}
    return _finish("calibration-protocol", shape, files, ["calibration", gt_name, dt_name],
                   opts, outputs=["metrics.json"], oracle=oracle)


# --------------------------------------------------------------------------------------------
# compare --protocol lvis|crowdpose|openimages


def _compare_protocol_case(rng: random.Random) -> Case:
    shape = _shape(rng)
    protocol = rng.choice(("lvis", "crowdpose", "openimages", "coco"))
    n = rng.randrange(2, 4)
    iou_type = "bbox"
    if protocol == "openimages":
        files = _openimages_files(rng)
        dts = []
        for k in range(n):
            files[f"dt{k}.csv"] = _openimages_files(rng)["dets.csv"] if k else files["dets.csv"]
            dts.append(f"dt{k}.csv")
        files.pop("dets.csv")
        gt_name = "boxes.csv"
        files = _mutate_csv(rng, shape, files)
    else:
        if protocol == "lvis":
            iou_type = rng.choice(("bbox", "bbox", "segm"))
            gt, dt = _lvis_geometry_pair(rng, iou_type)
        elif protocol == "crowdpose":
            gt, dt = crowdpose_pair(rng)
        else:
            iou_type = rng.choice(GEOMETRIES)
            gt, dt = geometry_pair(rng, iou_type)
        results = [dt]
        for _ in range(n - 1):
            other = [dict(r, score=round(rng.random(), 3)) for r in dt
                     if rng.random() < 0.9]
            results.append(other)
        files = {"gt.json": dump_json(gt),
                 **{f"dt{k}.json": dump_json(r) for k, r in enumerate(results)}}
        files = _mutate(rng, shape, files)
        gt_name, dts = "gt.json", [f"dt{k}.json" for k in range(n)]
    opts = _Options(rng, shape == "option")
    opts.add("--protocol", protocol)
    if protocol == "openimages":
        opts.add("--labels", "labels.csv", late=("missing.csv", "dt0.csv", "/dev/null"))
    if iou_type != "bbox":
        opts.add("--iou-type", iou_type)
    opts.add("--bootstrap", _count(rng, 1, 20), BAD_COUNTS + OVER_BOUND)
    if rng.random() < 0.5:
        opts.add("--threads", rng.choice(("1", "2", "3", "64")), BAD_COUNTS)
    if rng.random() < 0.3:
        opts.add("--seed", str(rng.randrange(100)), ("x", "1.5", "-1"))
    if rng.random() < 0.6:
        rule = {"coco": ("oLRP:0.01", "AP:0.005", "oLRP:0"),
                "lvis": ("AP:0.01", "APr:0", "AP50:0.1"),
                "crowdpose": ("AP:0.01", "AP_hard:0.1"),
                "openimages": ("mAP:0.01", "mAP:0")}[protocol]
        opts.add("--fail-if-regression", rng.choice(rule),
                 ("oLRP", "oLRP:", "oLRP:x", "oLRP:-1", "oLRP:nan", "XX:0.1", "AP:0.1:0.2"))
    if rng.random() < 0.2:
        opts.add("--per-class", None)
    if shape == "option" and opts.bad_flag is None and rng.random() < 0.6:
        wrong = [("--bootstrap", rng.choice(OVER_BOUND))]
        if protocol != "openimages":
            wrong += [("--labels", gt_name), ("--expand-detections", None)]
        if protocol in ("crowdpose", "openimages"):
            wrong.append(("--iou-type", rng.choice(("segm", "polygon"))))
        if protocol != "coco":
            wrong.append(("--score-threshold", "0.5"))
        _refuse(opts, *rng.choice(wrong))
    opts.add("--json", "metrics.json")
    case = _finish("compare", shape, files, ["compare", gt_name, *dts], opts,
                   outputs=["metrics.json"])
    case.kind = "compare-protocol"
    return case


MAKERS = {"errors-protocol": _errors_protocol_case, "lrp": _lrp_case,
          "calibration-protocol": _calibration_protocol_case,
          "compare-protocol": _compare_protocol_case}
