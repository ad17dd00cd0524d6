"""Cases of the commands and options added after the first fuzz run: ``crowdpose``,
``calibration``, ``compare`` (``--fail-if-regression``, ``--bootstrap``, ``--seed``),
``coco``/``voc`` with ``--slice``/``--slice-file``, ``--ci``, ``--table`` and
``--threads``, ``report`` (one run and ``GT A B``), ``draw`` (every ``--iou-type``), and
``errors``, ``check`` and ``lvis`` on the same COCO inputs.

Each case is one of three shapes, drawn per case:

* **well formed**: valid files and option values (the command must answer 0, or 1 for a
  broken ``--fail-if-regression`` rule, and write what it was asked to);
* **malformed input**: the files mutated as :mod:`.generators` mutates COCO files (JSON
  trees, bytes); the command must answer 0 or name the file;
* **bad option value**: one option given a value outside its domain (zero or negative
  counts, other scripts' digits, a bad ``METRIC:TOL``, a missing slice key, an unwritable
  or refused output path); ``Case.expect`` lists the exit statuses allowed and
  ``Case.names`` what the message must name.
"""

from __future__ import annotations

import io
import json
import random
from typing import Any

from .generators import PERSON_KEYPOINTS, Case, coco_gt, coco_results
from .mutate import dump_json, mutate_bytes, mutate_lines, mutate_tree

__all__ = ["make_command_case"]

#: Counts and sizes outside their domain (argparse's int/float read some of them).
BAD_COUNTS = ("0", "-1", "-5", "x", "1.5", "1e3", "", " ", "١٢", "１２", "1_0", "12\x00",
              "nan", "inf", "99999999999999999999999")
#: Counts of things the command allocates: one of 10**8 must be refused or cost memory in
#: proportion to the input, not to the count (an allocation of its size is a finding).
HUGE_COUNTS = BAD_COUNTS + ("100000000",)
BAD_UNIT = ("0", "-0.1", "1.5", "nan", "inf", "-inf", "x", "", "٠.٥", "0_5", "1e-400")
BAD_LEVELS = ("0", "1", "1.5", "-0.5", "nan", "x", "٠.٩", "0.9\x00", "")
BAD_SEEDS = ("x", "1.5", "", "١", "1_0", "nan", "-3", "-1")
BAD_RULES = ("AP", "AP:", ":0.1", "AP:x", "AP:-1", "AP:nan", "XX:0.1", "AP[nosuch]:0.1",
             "AP:0.1:0.2", "", ":", "ap:0.1", "AP:١", "AP:0_1", "AP:-inf", "AP:0.1\x00",
             "mAP:0.1")
GOOD_RULES = ("AP:0.005", "AP50:0", "F1:0.1", "AR100:0.02", "AP[person]:0.01", "AP:inf",
              "AP75:1e-9")
#: Output paths that cannot be written or are refused; ``{input}`` is an input's name.
BAD_OUTPUTS = ("missing/out.{ext}", "adir", "/proc/out.{ext}", "{input}", "/dev/full",
               "link.{ext}")


def _count(rng: random.Random, low: int, high: int) -> str:
    return str(rng.randrange(low, high + 1))


def _mutated_coco(rng: random.Random, gt: dict, dts: list, *, well_formed: bool
                  ) -> tuple[bytes, list[bytes], bool]:
    """The ground truth and results files, mutated unless ``well_formed``; the flag says
    whether the ground truth was left as generated."""
    gt_clean = True
    if not well_formed:
        target = rng.random()
        if target < 0.5:
            gt, gt_clean = mutate_tree(rng, gt, rng.randrange(1, 4)), False
        else:
            k = rng.randrange(len(dts))
            dts = list(dts)
            dts[k] = mutate_tree(rng, dts[k], rng.randrange(1, 4))
    gt_raw = dump_json(gt)
    dt_raws = [dump_json(dt) for dt in dts]
    if not well_formed and rng.random() < 0.2:
        if rng.random() < 0.5:
            gt_raw, gt_clean = mutate_bytes(rng, gt_raw), False
        else:
            dt_raws[0] = mutate_bytes(rng, dt_raws[0])
    return gt_raw, dt_raws, gt_clean


def _bad_output(rng: random.Random, ext: str, special: list, inputs: list[str]) -> str:
    """An output path that must be refused (and the folder or link it needs)."""
    choice = rng.choice(BAD_OUTPUTS)
    if choice == "adir":
        special.append(("dir", "adir"))
    elif choice.startswith("link."):
        special.append(("symlink", f"link.{ext}", inputs[0]))
    return choice.format(ext=ext, input=rng.choice(inputs))


class _Options:
    """The argv of one case being built: well-formed values, and at most one bad one."""

    def __init__(self, rng: random.Random, bad: bool) -> None:
        self.rng, self.argv, self.bad_flag, self.bad_value = rng, [], None, None
        self.late = False
        self.bad_at = rng.randrange(6) if bad else -1
        self.slot = 0

    def add(self, flag: str, good: str | None, bad: tuple[str, ...] = (),
            late: tuple[str, ...] = ()) -> None:
        """``flag good`` (or ``flag`` alone when ``good`` is None), or, at the bad slot,
        ``flag`` with a value from ``bad`` (refused by the parser: exit 2) or ``late``
        (refused once the inputs are read: exit 1 or 2, the message naming the flag or the
        value)."""
        if (bad or late) and self.slot == self.bad_at and self.bad_flag is None:
            value = self.rng.choice(bad + late)
            self.argv += [flag, value]
            self.bad_flag, self.bad_value, self.late = flag, value, value in late
        else:
            self.argv += [flag] if good is None else [flag, good]
        if bad or late:
            self.slot += 1


def _shape(rng: random.Random) -> str:
    return rng.choices(("good", "input", "option"), (45, 30, 25))[0]


def _finish(kind: str, shape: str, files: dict, argv: list, opts: _Options, *,
            outputs: list[str], special: list | None = None, oracle: dict | None = None,
            bad_output: str | None = None) -> Case:
    """The case, with the exit statuses its shape allows."""
    names: list[str] = []
    expect: tuple[int, ...] | None = None
    if opts.bad_flag is not None or bad_output is not None:
        late = opts.late or bad_output is not None
        expect = (1, 2) if late else (2,)
        value = opts.bad_value.removeprefix("image:") if opts.late else None
        names = [n for n in (opts.bad_flag, value, f"'{value}'" if opts.late else None,
                             bad_output) if n]
    elif shape == "good":
        expect = (0, 1) if kind == "compare" else (0,)
    if names:
        oracle = None
    return Case(kind, files, argv + opts.argv, special=special or [], oracle=oracle,
                outputs=[o for o in outputs if o != bad_output], expect=expect,
                names=names, shape=shape)


# --------------------------------------------------------------------------------------------
# compare


def _compare_case(rng: random.Random) -> Case:
    shape = _shape(rng)
    protocol = rng.choices(("coco", "voc2007", "voc2012"), (70, 15, 15))[0]
    iou_type = "bbox" if protocol != "coco" else rng.choice(("bbox", "bbox", "segm"))
    gt = coco_gt(rng, iou_type)
    dts = [coco_results(rng, gt, iou_type) for _ in range(rng.randrange(2, 4))]
    gt_raw, dt_raws, _ = _mutated_coco(rng, gt, dts, well_formed=shape != "input")
    files = {"gt.json": gt_raw, **{f"dt{k}.json": raw for k, raw in enumerate(dt_raws)}}
    dt_names = list(files)[1:]
    if rng.random() < 0.05:
        dt_names = [dt_names[0], dt_names[0]]          # the same file twice: labels numbered
    argv = ["compare", "gt.json", *dt_names]
    if shape == "option" and rng.random() < 0.1:
        argv = ["compare", "gt.json", dt_names[0]]     # a baseline alone
    opts = _Options(rng, shape == "option")
    if protocol != "coco" or rng.random() < 0.2:
        opts.add("--protocol", protocol)
    if iou_type != "bbox" or rng.random() < 0.1:
        opts.add("--iou-type", iou_type)
    opts.add("--bootstrap", _count(rng, 1, 30), BAD_COUNTS)
    if rng.random() < 0.5:
        opts.add("--confidence", rng.choice(("0.9", "0.95", "0.5", "0.999")), BAD_LEVELS)
    if rng.random() < 0.5:
        opts.add("--seed", str(rng.choice((0, 1, 7, 2**40))), BAD_SEEDS)
    if protocol == "coco" and rng.random() < 0.3:
        opts.add("--score-threshold", rng.choice(("0", "0.3", "0.5", "1", "7")), BAD_UNIT[1:])
    for _ in range(rng.choice((0, 1, 1, 2))):
        good = rng.choice(GOOD_RULES) if protocol == "coco" else rng.choice(
            ("mAP:0.01", "mAP:0", "AP[person]:0.1"))
        opts.add("--fail-if-regression", good, tuple(
            r for r in BAD_RULES if protocol == "coco" or not r.startswith("mAP:")))
    if rng.random() < 0.3:
        opts.add("--per-class", None)
    outputs = []
    bad_output = None
    if rng.random() < 0.7:
        out = "metrics.json"
        if shape == "option" and rng.random() < 0.3:
            special: list = []
            out = bad_output = _bad_output(rng, "json", special, ["gt.json", "dt0.json"])
        opts.add("--json", out)
        outputs.append(out)
    oracle = None
    if protocol == "coco" and "--json" in opts.argv:
        oracle = {"gt": "gt.json", "dts": dt_names, "iou_type": iou_type, "read": "compare"}
    case = _finish("compare", shape, files, argv, opts, outputs=outputs, oracle=oracle,
                   bad_output=bad_output)
    if bad_output is not None:
        case.special = special
    if argv[-1] == dt_names[0] and len(argv) == 3:
        # a baseline alone is a usage error; an output that is an input may be seen first
        case.expect = (2,) if bad_output is None else (1, 2)
        case.names = ["baseline", *case.names]
    return case


# --------------------------------------------------------------------------------------------
# coco / voc with --slice, --slice-file, --ci, --table, --threads


SLICE_VALUES = ("sun", "rain", "fog", 3, 7, ["a", "b"], ["b"], None, True, "a,b", "")


def _tags(rng: random.Random, gt: dict) -> tuple[dict, dict[str, dict[str, list]]]:
    """Image keys on the ground truth's records, and the images of each value (the slices
    an image key makes: docs/diagnostics/slices.md §2)."""
    groups: dict[str, dict[str, list]] = {}
    for key in rng.sample(("weather", "camera", "size_bin"), rng.randrange(1, 3)):
        groups[key] = {}
        for image in gt["images"]:
            if rng.random() < 0.1:
                continue                               # the key missing from this record
            value = rng.choice(SLICE_VALUES)
            image[key] = value
            for v in _slice_values(value):
                groups[key].setdefault(v, []).append(image["id"])
    return gt, groups


def _slice_values(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [w for v in value for w in _slice_values(v)]
    return [value if isinstance(value, str) else json.dumps(value)]


def _tags_file(rng: random.Random, gt: dict, shape: str) -> tuple[str, bytes, dict]:
    """A --slice-file (CSV or JSON) tagging the images with a key ``lighting``."""
    values = {image["id"]: rng.choice(("day", "night", "dusk")) for image in gt["images"]}
    groups: dict[str, list] = {}
    for image_id, value in values.items():
        groups.setdefault(value, []).append(image_id)
    if rng.random() < 0.5:
        text = "image_id,lighting\n" + "".join(f"{i},{v}\n" for i, v in values.items())
        name, raw = "tags.csv", text.encode()
    else:
        name, raw = "tags.json", dump_json({str(i): {"lighting": v} for i, v in values.items()})
    if shape == "input":
        raw = mutate_bytes(rng, raw) if rng.random() < 0.5 else raw.replace(
            b"lighting", rng.choice((b"", b"image_id", b"\xff", b"light,ing")), 1)
    return name, raw, {"lighting": groups}


def _coco_options_case(rng: random.Random) -> Case:
    shape = _shape(rng)
    iou_type = rng.choices(("bbox", "segm", "keypoints"), (60, 25, 15))[0]
    gt = coco_gt(rng, iou_type)
    gt, groups = _tags(rng, gt)
    dt = coco_results(rng, gt, iou_type)
    gt_raw, (dt_raw,), gt_clean = _mutated_coco(rng, gt, [dt], well_formed=shape != "input")
    files = {"gt.json": gt_raw, "dt.json": dt_raw}
    opts = _Options(rng, shape == "option")
    argv = ["coco", "gt.json", "dt.json"]
    if iou_type != "bbox":
        opts.add("--iou-type", iou_type)
    sliced: dict[str, dict] = {}
    special: list = []
    if rng.random() < 0.6:
        properties = ["size"] + (["aspect", "crowding", "truncation"]
                                 if iou_type != "keypoints" else [])
        valued = [k for k in groups if groups[k]]     # a key with no value is refused
        keys = valued + properties + [f"image:{k}" for k in valued]
        other = ("aspect", "crowding", "truncation") if iou_type == "keypoints" else ()
        other += tuple(k for k in groups if not groups[k])
        for key in rng.sample(keys, rng.randrange(1, 3)):
            opts.add("--slice", key, late=("nosuch", "", "image:", "image:nosuch", "Size",
                                           "..", "weather\x00", *other))
            if key in groups:
                sliced[key] = groups[key]
        if rng.random() < 0.3:
            name, raw, tag_groups = _tags_file(rng, gt, shape)
            files[name] = raw
            opts.add("--slice-file", name, late=("missing.csv", "adir", "/dev/zero"))
            if "adir" in opts.argv:
                special.append(("dir", "adir"))
            if shape != "input":
                sliced.update(tag_groups)
    if rng.random() < 0.4:
        opts.add("--ci", _count(rng, 1, 20), BAD_COUNTS)
        if rng.random() < 0.3:
            opts.add("--confidence", rng.choice(("0.9", "0.5")), BAD_LEVELS)
        if rng.random() < 0.3:
            opts.add("--seed", str(rng.randrange(0, 100)), BAD_SEEDS)
        if rng.random() < 0.2:
            opts.add("--score-threshold", rng.choice(("0", "0.5", "2")), BAD_UNIT[1:])
    elif shape == "option" and rng.random() < 0.2:
        opts.add("--confidence", "0.9")       # without --ci: refused or ignored, not a crash
    outputs = ["metrics.json"]
    bad_output = None
    table = None
    if rng.random() < 0.4:
        table = rng.choice(("out.csv", "out.csv", "out.parquet", "out.pq"))
        if shape == "option" and rng.random() < 0.4:
            table = bad_output = rng.choice(("out.txt", "out", "out.csvx")) if rng.random() < \
                0.5 else _bad_output(rng, "csv", special, ["gt.json", "dt.json"])
        opts.add("--table", table)
        outputs.append(table)
        if rng.random() < 0.3:
            opts.add("--table-iou", rng.choice(("all", "0.5", "0.75", "0.95")),
                     late=("0.42", "x", "", "2", "nan", "-1", "0.5 0.75"))
    elif shape == "option" and rng.random() < 0.1:
        opts.add("--table-iou", "all")       # without --table: a usage error
        opts.bad_flag = "--table-iou"
    if rng.random() < 0.4:
        opts.add("--threads", rng.choice(("1", "2", "3", "64", "9223372036854775807")),
                 BAD_COUNTS)
    if rng.random() < 0.2:
        opts.add("--per-class", None)
    opts.add("--json", "metrics.json")
    oracle = {"gt": "gt.json", "dt": "dt.json", "iou_type": iou_type}
    if sliced and gt_clean:
        oracle["slices"] = sliced
    case = _finish("coco-options", shape, files, argv, opts, outputs=outputs,
                   special=special, oracle=oracle, bad_output=bad_output)
    return case


def _bbox_pair(rng: random.Random) -> tuple[dict, list]:
    gt = coco_gt(rng, "bbox")
    return gt, coco_results(rng, gt, "bbox")


def _voc_options_case(rng: random.Random) -> Case:
    """``deteval voc`` (a COCO pair read as VOC) with --ci, --table and --threads."""
    shape, files, opts = _pair_start(rng, _bbox_pair)
    if rng.random() < 0.5:
        opts.add("--year", rng.choice(("2007", "2012")), ("2010", "12", "", "٢٠٠٧"))
    if rng.random() < 0.2:
        opts.add("--detectron2", None)
    if rng.random() < 0.6:
        opts.add("--ci", _count(rng, 1, 20), BAD_COUNTS)
        if rng.random() < 0.3:
            opts.add("--seed", str(rng.randrange(100)), BAD_SEEDS)
    outputs = ["metrics.json"]
    if rng.random() < 0.5:
        table = rng.choice(("out.csv", "out.parquet"))
        opts.add("--table", table, late=("out.txt", "missing/out.csv", "/proc/out.csv"))
        outputs.append(table)
    if rng.random() < 0.5:
        opts.add("--threads", rng.choice(("1", "2", "3", "64", "9223372036854775807")),
                 BAD_COUNTS)
    opts.add("--json", "metrics.json")
    return _finish("voc-options", shape, files, ["voc", "gt.json", "dt.json"], opts,
                   outputs=[o for o in outputs if o in opts.argv])


# --------------------------------------------------------------------------------------------
# crowdpose, calibration, errors, check, lvis


CROWDPOSE_NAMES = PERSON_KEYPOINTS[5:] + ["head", "neck"]


def crowdpose_pair(rng: random.Random) -> tuple[dict, list]:
    """A CrowdPose-like pair: the COCO keypoint generator's persons with their last 14
    keypoints, images with a ``crowdIndex``, annotations mostly without ``area``."""
    gt = coco_gt(rng, "keypoints")
    dt = coco_results(rng, gt, "keypoints")
    for ann in gt["annotations"]:
        ann["keypoints"] = ann["keypoints"][9:]
        ann["num_keypoints"] = sum(1 for v in ann["keypoints"][2::3] if v == 2)
        ann.pop("segmentation", None)
        if rng.random() < 0.8:
            ann.pop("area", None)
    for record in dt:
        record["keypoints"] = record["keypoints"][9:]
    for category in gt["categories"]:
        category["keypoints"] = list(CROWDPOSE_NAMES)
        category["skeleton"] = [[13, 14], [1, 14]]
    for image in gt["images"]:
        image["crowdIndex"] = rng.choice((0.0, 0.1, 0.2, 0.5, 0.8, 0.95, 1.0))
    return gt, dt


def _pair_start(rng: random.Random, make_pair) -> tuple[str, dict[str, bytes], _Options]:
    """The shape of a GT/DT case, its two files (mutated when malformed), its options."""
    shape = _shape(rng)
    gt, dt = make_pair(rng)
    gt_raw, (dt_raw,), _ = _mutated_coco(rng, gt, [dt], well_formed=shape != "input")
    return shape, {"gt.json": gt_raw, "dt.json": dt_raw}, _Options(rng, shape == "option")


def _crowdpose_case(rng: random.Random) -> Case:
    shape, files, opts = _pair_start(rng, crowdpose_pair)
    if rng.random() < 0.3:
        sigmas = " ".join(f"{rng.uniform(0.02, 0.2):.3f}" for _ in range(14))
        opts.add("--kpt-sigmas", sigmas, ("x", "١", "1_0"), late=(
            "0.1 0.2", " ".join(["0.1"] * 17), "-0.1 " * 14, "0 " * 14, "nan " * 14))
    if rng.random() < 0.3:
        opts.add("--use-area", None)
    if rng.random() < 0.3:
        opts.add("--per-class", None)
    outputs = ["metrics.json"]
    if rng.random() < 0.3:
        opts.add("--matches", "matches.csv", late=("missing/m.csv", "/proc/m.csv", "gt.json"))
        outputs.append("matches.csv")
    opts.add("--json", "metrics.json")
    return _finish("crowdpose", shape, files, ["crowdpose", "gt.json", "dt.json"], opts,
                   outputs=outputs)


def _calibration_case(rng: random.Random) -> Case:
    shape = _shape(rng)
    iou_type = rng.choices(("bbox", "segm", "keypoints"), (70, 20, 10))[0]
    gt = coco_gt(rng, iou_type)
    dt = coco_results(rng, gt, iou_type)
    if shape == "input" and dt and rng.random() < 0.3:
        rng.choice(dt)["score"] = rng.choice((1.5, -0.1, 7, 1.0000001))   # not a confidence
    gt_raw, (dt_raw,), _ = _mutated_coco(rng, gt, [dt], well_formed=shape != "input")
    opts = _Options(rng, shape == "option")
    if iou_type != "bbox":
        opts.add("--iou-type", iou_type)
    if rng.random() < 0.5:
        opts.add("--bins", _count(rng, 1, 25), HUGE_COUNTS)
    if rng.random() < 0.4:
        opts.add("--binning", rng.choice(("uniform", "quantile")), ("equal", ""))
    if rng.random() < 0.4:
        opts.add("--iou-threshold", rng.choice(("0.5", "0.75", "1", "0.01")), BAD_UNIT)
    if rng.random() < 0.3:
        opts.add("--max-detections", rng.choice((_count(rng, 1, 200), "100000000")),
                 BAD_COUNTS)
    if rng.random() < 0.3:
        opts.add("--per-class", None)
    outputs = ["metrics.json"]
    if rng.random() < 0.25:
        plot = rng.choice(("plot.png", "plot.svg"))
        opts.add("--plot", plot, late=("plot.pdf", "plot", "missing/plot.png", "/proc/p.png",
                                       "gt.json"))
        outputs.append(plot)
    opts.add("--json", "metrics.json")
    return _finish("calibration", shape, {"gt.json": gt_raw, "dt.json": dt_raw},
                   ["calibration", "gt.json", "dt.json"], opts, outputs=outputs)


def _errors_check_case(rng: random.Random) -> Case:
    """``errors`` (TIDE, --lrp) and ``check`` on a COCO bbox pair."""
    shape, files, opts = _pair_start(rng, _bbox_pair)
    command = rng.choice(("errors", "errors", "check"))
    if command == "errors":
        if rng.random() < 0.4:
            opts.add("--pos-threshold", rng.choice(("0.5", "0.7")), BAD_UNIT[1:])
        if rng.random() < 0.4:
            opts.add("--background-threshold", rng.choice(("0", "0.1", "0.3")), BAD_UNIT[1:])
        if rng.random() < 0.3:
            opts.add("--max-detections", _count(rng, 1, 100), BAD_COUNTS)
        if rng.random() < 0.4:
            opts.add("--rules", rng.choice(("deteval", "tidecv")), ("tide", ""))
        if rng.random() < 0.3:
            opts.add("--lrp", None)
    opts.add("--json", "metrics.json")
    case = _finish(command, shape, files, [command, "gt.json", "dt.json"], opts,
                   outputs=["metrics.json"])
    if command == "check" and case.expect == (0,):
        case.expect = (0, 1)                 # check exits 1 on a hazard it finds
    return case


def lvis_pair(rng: random.Random) -> tuple[dict, list]:
    """An LVIS-like pair: categories with a frequency, images with verified-negative and
    not-exhaustive category lists."""
    gt = coco_gt(rng, "bbox")
    dt = coco_results(rng, gt, "bbox")
    ids = [c["id"] for c in gt["categories"]]
    for category in gt["categories"]:
        category["frequency"] = rng.choice("rcf")
        category.pop("keypoints", None)
        category.pop("skeleton", None)
    present: dict[int, set] = {}
    for ann in gt["annotations"]:
        ann["iscrowd"] = 0
        present.setdefault(ann["image_id"], set()).add(ann["category_id"])
    for image in gt["images"]:
        absent = [c for c in ids if c not in present.get(image["id"], set())]
        image["neg_category_ids"] = rng.sample(absent, rng.randrange(len(absent) + 1))
        image["not_exhaustive_category_ids"] = rng.sample(
            sorted(present.get(image["id"], set())),
            rng.randrange(len(present.get(image["id"], set())) + 1))
    for ann in gt["annotations"]:
        ann["segmentation"] = ann["segmentation"] if isinstance(ann["segmentation"], list) \
            else [[1, 1, 5, 1, 5, 5]]
    return gt, dt


def _lvis_case(rng: random.Random) -> Case:
    shape, files, opts = _pair_start(rng, lvis_pair)
    if rng.random() < 0.3:
        opts.add("--max-dets", _count(rng, 1, 300), BAD_COUNTS)
    if rng.random() < 0.2:
        opts.add("--per-class", None)
    opts.add("--json", "metrics.json")
    return _finish("lvis", shape, files, ["lvis", "gt.json", "dt.json"], opts,
                   outputs=["metrics.json"])


# --------------------------------------------------------------------------------------------
# report and draw


def _jpeg(rng: random.Random, w: int, h: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (w, h), tuple(rng.randrange(256) for _ in range(3))).save(
        buffer, format="JPEG")
    return buffer.getvalue()


def _images(rng: random.Random, gt: dict, shape: str) -> dict[str, bytes]:
    """The images of the ground truth (some missing, resized or broken when malformed)."""
    out = {}
    for image in gt["images"]:
        raw = _jpeg(rng, image["width"], image["height"])
        if shape == "input" and rng.random() < 0.3:
            raw = rng.choice((raw[:len(raw) // 2], b"", b"not an image",
                              _jpeg(rng, image["width"] + 3, image["height"]), None))
        if raw is not None:
            out[f"images/{image['file_name']}"] = raw
    return out


def _report_case(rng: random.Random) -> Case:
    shape = _shape(rng)
    gt = coco_gt(rng, "bbox")
    gt, _ = _tags(rng, gt)
    n_runs = rng.choice((1, 2))
    dts = [coco_results(rng, gt, "bbox") for _ in range(n_runs)]
    gt_raw, dt_raws, _ = _mutated_coco(rng, gt, dts, well_formed=shape != "input")
    files = {"gt.json": gt_raw, **{f"dt{k}.json": raw for k, raw in enumerate(dt_raws)},
             **_images(rng, gt, shape)}
    single = rng.random() < 0.3
    out = "report.html" if single else "out"
    special: list = []
    bad_output = None
    if shape == "option" and rng.random() < 0.25:
        out = bad_output = rng.choice(("gt.json", "images", ".", "/proc/out", "images/x"))
    argv = ["report", "gt.json", *[f"dt{k}.json" for k in range(n_runs)], "--out", out,
            "--quiet"]
    opts = _Options(rng, shape == "option")
    if single:
        opts.add("--single-file", None)
    if rng.random() < 0.6:
        opts.add("--images", "images", late=("missing", "gt.json", "/dev/null"))
    opts.add("--gallery", _count(rng, 0, 3), ("-1", "x", "١", "1.5", "", "+2"))
    if rng.random() < 0.3:
        opts.add("--iou-threshold", rng.choice(("0.5", "0.75", "0.95")),
                 ("0", "1.5", "nan"), late=("0.3", "0.42"))
    if rng.random() < 0.3:
        opts.add("--score-threshold", rng.choice(("0", "0.3", "0.9")), BAD_UNIT[1:])
    if n_runs == 2 and rng.random() < 0.3:
        if shape == "option" and opts.bad_flag is None and rng.random() < 0.5:
            second = "A"
            opts.argv += ["--run-names", "A", second]   # not two different names
            opts.bad_flag, opts.bad_value, opts.late = "--run-names", second, True
        else:
            opts.argv += ["--run-names", "A", "B"]
    if rng.random() < 0.3:
        opts.add("--ci", _count(rng, 1, 10), BAD_COUNTS)
    if n_runs == 1 and rng.random() < 0.3:
        opts.add("--slice", rng.choice(("size", "aspect")), late=("nosuch", "image:nosuch"))
    if rng.random() < 0.1:
        opts.add("--figure-format", rng.choice(("png", "svg")), ("pdf",))
    outputs = [out if single else f"{out}/index.html"]
    return _finish("report", shape, files, argv, opts, outputs=outputs, special=special,
                   bad_output=bad_output)


DRAW_TYPES = ("bbox", "segm", "boundary", "keypoints", "polygon", "rotated")


def geometry_pair(rng: random.Random, iou_type: str) -> tuple[dict, list]:
    """A COCO pair for ``iou_type`` (one of :data:`DRAW_TYPES`): polygons as the results'
    boxes, rotated boxes (``rbox``) around the boxes."""
    source = {"boundary": "segm", "polygon": "segm", "rotated": "bbox"}.get(iou_type, iou_type)
    gt = coco_gt(rng, source)
    dt = coco_results(rng, gt, source)
    if iou_type == "polygon":
        gt["annotations"] = [a for a in gt["annotations"] if not a["iscrowd"]]
        for record in dt:
            x, y, w, h = record.get("bbox") or [1, 1, 5, 5]
            record["segmentation"] = [[x, y, x + w, y, x + w, y + h, x, y + h]]
    if iou_type == "rotated":
        for record in gt["annotations"] + dt:
            x, y, w, h = record["bbox"]
            record["rbox"] = [x + w / 2, y + h / 2, w, h, rng.choice((0, 15, -30, 90))]
    return gt, dt


def _draw_case(rng: random.Random) -> Case:
    shape = _shape(rng)
    iou_type = rng.choice(DRAW_TYPES)
    gt, dt = geometry_pair(rng, iou_type)
    gt_raw, (dt_raw,), _ = _mutated_coco(rng, gt, [dt], well_formed=shape != "input")
    files = {"gt.json": gt_raw, "dt.json": dt_raw, **_images(rng, gt, shape)}
    bad_output = None
    out = "out"
    if shape == "option" and rng.random() < 0.25:
        out = bad_output = rng.choice(("gt.json", "images", ".", "/proc/out"))
    argv = ["draw", "gt.json", "dt.json", "--out", out, "--images", "images", "--quiet"]
    opts = _Options(rng, shape == "option")
    if iou_type != "bbox":
        opts.add("--iou-type", iou_type)
    if iou_type == "keypoints" and rng.random() < 0.4:
        opts.add("--kpt-sigmas", " ".join(["0.05"] * 17), ("x",), late=("0.1", "-1 " * 17))
    if iou_type == "boundary" and rng.random() < 0.4:
        opts.add("--dilation-ratio", rng.choice(("0.02", "0.1", "0.005")),
                 ("x", "١"), late=("0", "-0.1", "nan", "inf", "5"))
    if rng.random() < 0.3:
        opts.add("--limit", _count(rng, 1, 3), BAD_COUNTS)
    if rng.random() < 0.3:
        opts.add("--contact-sheet", _count(rng, 0, 3), ("-1", "x", "١", "1.5"))
    if rng.random() < 0.3:
        opts.add("--format", rng.choice(("auto", "png", "jpeg")), ("gif",))
    if rng.random() < 0.2:
        opts.add("--only-errors", None)
    if rng.random() < 0.3:
        opts.add("--iou-threshold", rng.choice(("0.5", "0.3", "1")), BAD_UNIT)
    if rng.random() < 0.3:
        opts.add("--score-threshold", rng.choice(("0", "0.5")), BAD_UNIT[1:])
    if shape == "option" and opts.bad_flag is None and rng.random() < 0.5:
        # an option of another --iou-type: a usage error naming it
        flag = "--kpt-sigmas" if iou_type != "keypoints" else "--dilation-ratio"
        opts.argv += [flag, "0.05" if flag == "--dilation-ratio" else " ".join(["0.05"] * 17)]
        opts.bad_flag = flag
    return _finish("draw", shape, files, argv, opts, outputs=[f"{out}/.deteval-draw.json"],
                   bad_output=bad_output)


def hierarchy_file(rng: random.Random, shape: str) -> bytes:
    """An Open Images hierarchy of the labels /m/01 and /m/02 (mutated, at times, when the
    shape is ``input``)."""
    tree = {"LabelName": "/m/root", "Subcategory": [
        {"LabelName": "/m/01", "Subcategory": [{"LabelName": "/m/02"}]}]}
    if shape == "input" and rng.random() < 0.5:
        tree = mutate_tree(rng, tree, 2)
    return dump_json(tree)


def _openimages_command_case(rng: random.Random) -> Case:
    """``deteval openimages`` on a box CSV, a detection CSV and image-level labels."""
    shape = _shape(rng)
    labels = ("/m/01", "/m/02")
    boxes = ["ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,"
             "IsTruncated,IsGroupOf,IsDepiction,IsInside"]
    dets = ["ImageID,LabelName,Score,XMin,XMax,YMin,YMax"]
    verified = ["ImageID,Source,LabelName,Confidence"]
    for image in ("a", "b"):
        for label in labels:
            verified.append(f"{image},verification,{label},{rng.choice((0, 1, 1))}")
        for _ in range(rng.randrange(0, 4)):
            x, y = rng.uniform(0, 0.6), rng.uniform(0, 0.6)
            label = rng.choice(labels)
            boxes.append(f"{image},xclick,{label},1,{x:.4f},{x + 0.3:.4f},{y:.4f},"
                         f"{y + 0.2:.4f},0,0,{rng.choice((0, 0, 1))},0,0")
            dets.append(f"{image},{label},{rng.random():.3f},{x + rng.uniform(-.05, .05):.4f},"
                        f"{x + 0.3:.4f},{y:.4f},{y + 0.2:.4f}")
    files = {"boxes.csv": "\n".join(boxes).encode(), "dets.csv": "\n".join(dets).encode(),
             "labels.csv": "\n".join(verified).encode()}
    if shape == "input":
        name = rng.choice(list(files))
        files[name] = mutate_lines(rng, files[name].decode(), rng.randrange(1, 4)).encode(
            "utf-8", "surrogatepass")
        if rng.random() < 0.2:
            files[name] = mutate_bytes(rng, files[name])
    opts = _Options(rng, shape == "option")
    opts.add("--labels", "labels.csv", late=("missing.csv", "dets.csv", "/dev/null"))
    if rng.random() < 0.3:
        opts.add("--per-class", None)
    if rng.random() < 0.5:
        files["h.json"] = hierarchy_file(rng, shape)
        opts.add("--hierarchy", "h.json", late=("boxes.csv", "missing.json"))
        if rng.random() < 0.5:
            opts.add("--expand-detections", None)
    elif shape == "option" and opts.bad_flag is None and rng.random() < 0.3:
        opts.argv.append("--expand-detections")     # without --hierarchy: a usage error
        opts.bad_flag = "--expand-detections"
    outputs = ["metrics.json"]
    if rng.random() < 0.3:
        opts.add("--matches", "matches.csv", late=("missing/m.csv", "boxes.csv"))
        outputs.append("matches.csv")
    opts.add("--json", "metrics.json")
    return _finish("openimages-command", shape, files, ["openimages", "boxes.csv", "dets.csv"],
                   opts, outputs=outputs)


_MAKERS = {"compare": _compare_case, "coco-options": _coco_options_case,
           "voc-options": _voc_options_case, "crowdpose": _crowdpose_case,
           "calibration": _calibration_case, "errors-check": _errors_check_case,
           "lvis": _lvis_case, "report": _report_case, "draw": _draw_case,
           "openimages-command": _openimages_command_case}


def make_command_case(kind: str, rng: random.Random) -> Case:
    """A case of ``kind`` (one of ``generators.COMMAND_KINDS``; those of the protocols'
    options are made by :mod:`.protocols`, which imports this module)."""
    if kind in _MAKERS:
        return _MAKERS[kind](rng)
    from .protocols import MAKERS

    return MAKERS[kind](rng)
