"""Seed inputs and fuzz cases: COCO ground truth and results (bbox, segm, keypoints), VOC XML,
YOLO, txt, CSV, Open Images and DOTA files, and special paths.

A :class:`Case` is everything one run needs: the files to write (relative paths), the
command line (run in the case's folder), the special paths to make (FIFO, symlink, hard
link, folder), and, for COCO inputs, the oracle (pycocotools on the same files). Case ``i``
of seed ``s`` depends on ``(s, i)`` only, so any case can be replayed alone.
"""

from __future__ import annotations

import copy
import io
import json
import random
from dataclasses import dataclass, field
from typing import Any

from .mutate import dump_json, mutate_bytes, mutate_lines, mutate_tree

__all__ = ["Case", "make_case", "KINDS"]

PERSON_KEYPOINTS = ["nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder",
                    "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist",
                    "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle",
                    "right_ankle"]


@dataclass
class Case:
    """One fuzz input: files, command line, special paths and oracle."""

    kind: str
    files: dict[str, bytes]
    argv: list[str]
    special: list[tuple[str, ...]] = field(default_factory=list)
    oracle: dict[str, Any] | None = None       # {"gt", "dt", "iou_type"} for pycocotools
    api: dict[str, Any] | None = None          # reader calls on parsed objects
    outputs: list[str] = field(default_factory=list)   # written (all of them) on exit 0
    expect: tuple[int, ...] | None = None      # the exit statuses allowed (None: 0, 1, 2)
    names: list[str] = field(default_factory=list)     # what an error must name (one of)
    shape: str = ""                            # good / input / option (commands.py)

    def to_json(self) -> dict:
        return {"kind": self.kind, "argv": self.argv, "special": self.special,
                "oracle": self.oracle, "outputs": self.outputs, "expect": self.expect,
                "names": self.names, "shape": self.shape,
                "files": {k: v.decode("latin-1") for k, v in self.files.items()}}


# --------------------------------------------------------------------------------------------
# Seeds


def _polygon(rng: random.Random, w: int, h: int) -> list[float]:
    x0, y0 = rng.uniform(0, w * 0.6), rng.uniform(0, h * 0.6)
    bw, bh = rng.uniform(2, w - x0), rng.uniform(2, h - y0)
    n = rng.randrange(3, 7)
    points = []
    for k in range(n):
        # a star-free polygon: points around an ellipse
        import math
        angle = 2 * math.pi * k / n
        points += [round(x0 + bw / 2 * (1 + math.cos(angle)), 2),
                   round(y0 + bh / 2 * (1 + math.sin(angle)), 2)]
    return points


def _bounds(polygon: list[float]) -> list[float]:
    xs, ys = polygon[0::2], polygon[1::2]
    return [min(xs), min(ys), round(max(xs) - min(xs), 2), round(max(ys) - min(ys), 2)]


def _rle(polygons: list[list[float]], h: int, w: int) -> dict:
    from pycocotools import mask as mask_utils

    rle = mask_utils.merge(mask_utils.frPyObjects(polygons, h, w))
    return {"size": [h, w], "counts": rle["counts"].decode("ascii")}


def _keypoints(rng: random.Random, box: list[float]) -> list[float]:
    out: list[float] = []
    for _ in PERSON_KEYPOINTS:
        v = rng.choice((0, 1, 2, 2))
        out += ([0, 0, 0] if v == 0 else
                [round(box[0] + rng.uniform(0, box[2]), 1),
                 round(box[1] + rng.uniform(0, box[3]), 1), v])
    return out


def coco_gt(rng: random.Random, iou_type: str) -> dict:
    """A small instances file: 2-3 images, up to 3 categories, a few annotations."""
    keypoints = iou_type == "keypoints"
    images = [{"id": i + 1, "width": rng.randrange(24, 160), "height": rng.randrange(24, 120),
               "file_name": f"img{i + 1}.jpg"} for i in range(rng.randrange(2, 4))]
    categories = [{"id": 1, "name": "person", "supercategory": "person",
                   "keypoints": PERSON_KEYPOINTS, "skeleton": [[1, 2]]}]
    if not keypoints:
        categories += [{"id": 2, "name": "car"}, {"id": 5, "name": "dog"}]
    annotations = []
    for k in range(rng.randrange(1, 7)):
        image = rng.choice(images)
        polygon = _polygon(rng, image["width"], image["height"])
        box = _bounds(polygon)
        crowd = int(not keypoints and rng.random() < 0.15)
        ann = {"id": k + 1, "image_id": image["id"],
               "category_id": rng.choice(categories)["id"], "bbox": box,
               "area": round(box[2] * box[3] * 0.7, 2), "iscrowd": crowd,
               "segmentation": (_rle([polygon], image["height"], image["width"]) if crowd
                                else [polygon])}
        if keypoints:
            ann["keypoints"] = _keypoints(rng, box)
            ann["num_keypoints"] = sum(1 for v in ann["keypoints"][2::3] if v > 0)
        annotations.append(ann)
    return {"info": {"description": "fuzz"}, "images": images, "annotations": annotations,
            "categories": categories}


def coco_results(rng: random.Random, gt: dict, iou_type: str) -> list:
    """Results near the ground truth's objects, plus false positives."""
    sizes = {i["id"]: (i["height"], i["width"]) for i in gt["images"]}
    out = []
    sources = [a for a in gt["annotations"] if rng.random() < 0.8]
    sources += [{"image_id": rng.choice(gt["images"])["id"],
                 "category_id": rng.choice(gt["categories"])["id"], "bbox": None}
                for _ in range(rng.randrange(0, 3))]
    with_box = rng.random() < 0.3
    for src in sources:
        h, w = sizes[src["image_id"]]
        if src["bbox"] is None:
            polygon = _polygon(rng, w, h)
        else:
            polygon = [round(v + rng.uniform(-2, 2), 2) for v in
                       (src["segmentation"][0] if isinstance(src["segmentation"], list)
                        else _polygon(rng, w, h))]
        box = _bounds(polygon)
        record = {"image_id": src["image_id"], "category_id": src["category_id"],
                  "score": round(rng.random(), 3)}
        if iou_type == "bbox":
            record["bbox"] = box
        elif iou_type == "segm":
            record["segmentation"] = _rle([polygon], h, w)
            if with_box:
                record["bbox"] = box
        else:
            record["keypoints"] = _keypoints(rng, box)
            if with_box:
                record["bbox"] = box
        out.append(record)
    return out


def voc_xml(rng: random.Random, name: str) -> str:
    objects = []
    w, h = rng.randrange(20, 300), rng.randrange(20, 300)
    for _ in range(rng.randrange(0, 4)):
        x1, y1 = rng.randrange(0, w - 5), rng.randrange(0, h - 5)
        objects.append(f"<object><name>{rng.choice(('cat', 'dog'))}</name>"
                       f"<difficult>{rng.choice((0, 0, 1))}</difficult><bndbox>"
                       f"<xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{rng.randrange(x1 + 1, w)}"
                       f"</xmax><ymax>{rng.randrange(y1 + 1, h)}</ymax></bndbox></object>")
    return (f'<?xml version="1.0"?>\n<annotation><filename>{name}.jpg</filename><size>'
            f"<width>{w}</width><height>{h}</height><depth>3</depth></size>"
            + "".join(objects) + "</annotation>\n")


_XML_TRICKS = (
    lambda x: x.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="foo-bar"?>'),
    lambda x: x.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="shift_jis"?>'),
    lambda x: x.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="rot13"?>'),
    lambda x: x.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="idna"?>'),
    lambda x: x.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="utf-16"?>'),
    lambda x: x.replace("<annotation>", '<!DOCTYPE a [<!ENTITY a "aaaaaaaaaa"><!ENTITY b '
                        '"&a;&a;&a;&a;&a;&a;&a;&a;">]><annotation>').replace("cat", "&b;"),
    lambda x: x.replace("<annotation>", '<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">'
                        ']><annotation>').replace("cat", "&x;"),
    lambda x: x.replace("cat", "&amp;&lt;&#x10FFFF;&#0;"),
    lambda x: x.replace("<width>", "<width>١").replace("<xmin>", "<xmin>１"),
    lambda x: x.replace("</xmax>", "_0</xmax>"),
    lambda x: x.replace("<ymin>", "<ymin>-1e400"),
    lambda x: x[:len(x) // 2],
    lambda x: x.replace("<bndbox>", "<bndbox><bndbox>"),
    lambda x: x.replace("<name>", "<name>\u202e"),
    lambda x: "<a>" * 3000 + x,
)


def _png(w: int, h: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (w, h)).save(buffer, format="PNG")
    return buffer.getvalue()


# --------------------------------------------------------------------------------------------
# Cases


def _maybe_bytes(rng: random.Random, raw: bytes) -> bytes:
    return mutate_bytes(rng, raw) if rng.random() < 0.15 else raw


def _coco_case(rng: random.Random, iou_type: str) -> Case:
    gt = coco_gt(rng, iou_type)
    dt: Any = coco_results(rng, gt, iou_type)
    target = rng.random()
    if target < 0.1 and iou_type == "segm" and dt:
        # polygon or uncompressed results (deteval's documented extension)
        record = rng.choice(dt)
        h, w = 20, 20
        record["segmentation"] = rng.choice(([[1, 1, 10, 1, 10, 10]],
                                             {"size": [h, w], "counts": [5, 10, 385]}))
    elif target < 0.55:
        gt = mutate_tree(rng, gt, rng.randrange(1, 4))
    elif target < 0.95:
        dt = mutate_tree(rng, dt, rng.randrange(1, 4))
    gt_raw, dt_raw = _maybe_bytes(rng, dump_json(gt)), _maybe_bytes(rng, dump_json(dt))
    argv = ["coco", "gt.json", "dt.json", "--iou-type", iou_type, "--json", "metrics.json"]
    extra = rng.random()
    if extra < 0.1:
        argv += ["--per-class"]
    elif extra < 0.2:
        argv += ["--matches", "matches.csv"]
    elif extra < 0.25:
        argv += ["--max-dets", rng.choice(("1 10 100", "0 1 2", "5 5 5", "100000 1 1"))]
    oracle = {"gt": "gt.json", "dt": "dt.json", "iou_type": iou_type}
    api = {"gt": gt, "dt": dt, "iou_type": iou_type} if rng.random() < 0.3 else None
    return Case(f"coco-{iou_type}", {"gt.json": gt_raw, "dt.json": dt_raw}, argv,
                oracle=oracle, api=api)


def _voc_case(rng: random.Random) -> Case:
    files = {}
    for k in range(rng.randrange(1, 4)):
        xml = voc_xml(rng, f"im{k}")
        if rng.random() < 0.5:
            xml = rng.choice(_XML_TRICKS)(xml)
        encoding = "latin-1" if rng.random() < 0.1 else "utf-8"
        files[f"gt/im{k}.xml"] = xml.encode(encoding, "surrogatepass" if encoding == "utf-8"
                                            else "replace")
    lines = "\n".join(f"{rng.choice(('cat', 'dog'))} {rng.random():.3f} {rng.randrange(0, 50)} "
                      f"{rng.randrange(0, 50)} {rng.randrange(50, 99)} {rng.randrange(50, 99)}"
                      for _ in range(rng.randrange(0, 5)))
    files["dt/im0.txt"] = mutate_lines(rng, lines, rng.randrange(0, 3)).encode(
        "utf-8", "surrogatepass")
    argv = ["voc", "gt", "dt", "--gt-format", "voc", "--dt-format", "txt", "--box-format",
            "xyxy", "--json", "metrics.json"]
    if rng.random() < 0.3:
        files["classes.txt"] = mutate_lines(rng, "cat\ndog\n", rng.randrange(0, 2)).encode()
        argv += ["--classes", "classes.txt"]
    return Case("voc", files, argv)


def _yolo_case(rng: random.Random) -> Case:
    files = {"labels/obj.names": b"cat\ndog\n", "images/a.png": _png(64, 48),
             "images/b.png": _png(32, 40)}
    for key in ("a", "b"):
        lines = "\n".join(f"{rng.randrange(2)} {rng.uniform(0.2, 0.8):.6f} "
                          f"{rng.uniform(0.2, 0.8):.6f} {rng.uniform(0.05, 0.3):.6f} "
                          f"{rng.uniform(0.05, 0.3):.6f}" for _ in range(rng.randrange(0, 4)))
        files[f"labels/{key}.txt"] = _maybe_bytes(
            rng, mutate_lines(rng, lines, rng.randrange(0, 3)).encode("utf-8", "surrogatepass"))
    if rng.random() < 0.2:
        files["labels/obj.names"] = mutate_lines(rng, "cat\ndog\n", 1).encode(
            "utf-8", "surrogatepass")
    dets = "\n".join(f"{rng.randrange(2)} {rng.uniform(0.2, 0.8):.4f} {rng.uniform(0.2, 0.8):.4f} "
                     f"{rng.uniform(0.05, 0.3):.4f} {rng.uniform(0.05, 0.3):.4f} "
                     f"{rng.random():.3f}" for _ in range(rng.randrange(0, 4)))
    files["dets/a.txt"] = mutate_lines(rng, dets, rng.randrange(0, 3)).encode(
        "utf-8", "surrogatepass")
    if rng.random() < 0.5:
        argv = ["convert", "labels", "out.json", "--from", "yolo", "--images", "images"]
    else:
        argv = ["eval", "labels", "dets", "--protocol", rng.choice(("coco", "voc2012")),
                "--gt-format", "yolo", "--dt-format", "yolo", "--images", "images",
                "--json", "metrics.json"]
    return Case("yolo", files, argv)


def _csv_case(rng: random.Random) -> Case:
    rows = ["filename,width,height,class,xmin,ymin,xmax,ymax"]
    for _ in range(rng.randrange(1, 5)):
        x1, y1 = rng.randrange(0, 40), rng.randrange(0, 40)
        rows.append(f"a.jpg,100,80,{rng.choice(('cat', 'dog'))},{x1},{y1},"
                    f"{x1 + rng.randrange(1, 50)},{y1 + rng.randrange(1, 30)}")
    text = mutate_lines(rng, "\n".join(rows), rng.randrange(0, 4))
    if rng.random() < 0.5:
        return Case("csv", {"gt.csv": _maybe_bytes(rng, text.encode("utf-8", "surrogatepass"))},
                    ["convert", "gt.csv", "out.json", "--from", "csv"])
    dets = ["filename,class,score,xmin,ymin,xmax,ymax"] + [
        f"a.jpg,{rng.choice(('cat', 'dog'))},{rng.random():.3f},1,2,{rng.randrange(3, 60)},40"
        for _ in range(rng.randrange(0, 4))]
    return Case("csv-dt", {"gt.csv": "\n".join(rows).encode(),
                           "dt.csv": mutate_lines(rng, "\n".join(dets), rng.randrange(0, 4))
                           .encode("utf-8", "surrogatepass")},
                ["confusion", "gt.csv", "dt.csv", "--gt-format", "csv", "--dt-format", "csv",
                 "--json", "metrics.json"])


def _openimages_case(rng: random.Random) -> Case:
    rows = ["ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,"
            "IsGroupOf,IsDepiction,IsInside"]
    for _ in range(rng.randrange(1, 5)):
        x1, y1 = rng.uniform(0, 0.5), rng.uniform(0, 0.5)
        rows.append(f"a,xclick,/m/01,1,{x1:.4f},{x1 + 0.3:.4f},{y1:.4f},{y1 + 0.2:.4f},"
                    f"0,0,{rng.choice((0, 1))},0,0")
    text = mutate_lines(rng, "\n".join(rows), rng.randrange(0, 4))
    return Case("openimages", {"oi.csv": text.encode("utf-8", "surrogatepass"),
                               "images/a.jpg": _png(50, 40)},
                ["convert", "oi.csv", "out.json", "--from", "openimages", "--images", "images"])


def _dota_case(rng: random.Random) -> Case:
    lines = ["imagesource:GoogleEarth", "gsd:0.5"]
    for _ in range(rng.randrange(1, 4)):
        x, y = rng.randrange(0, 50), rng.randrange(0, 50)
        s = rng.randrange(2, 30)
        lines.append(f"{x} {y} {x + s} {y} {x + s} {y + s} {x} {y + s} "
                     f"{rng.choice(('plane', 'ship'))} {rng.choice((0, 1))}")
    text = mutate_lines(rng, "\n".join(lines), rng.randrange(0, 4))
    task = "\n".join(f"P0001 {rng.random():.2f} 10 10 30 10 30 21 10 21"
                     for _ in range(rng.randrange(0, 3)))
    files = {"labels/P0001.txt": text.encode("utf-8", "surrogatepass"),
             "dets/Task1_plane.txt": mutate_lines(rng, task, rng.randrange(0, 2)).encode(
                 "utf-8", "surrogatepass")}
    if rng.random() < 0.5:
        argv = ["convert", "labels", "out.json", "--from", "dota"]
    else:
        argv = ["eval", "labels", "dets", "--protocol", "voc2012", "--gt-format", "dota",
                "--dt-format", "dota", "--iou-type", "polygon", "--json", "metrics.json"]
    return Case("dota", files, argv)


def _special_case(rng: random.Random) -> Case:
    """FIFOs, devices, folders and outputs that are inputs."""
    gt = coco_gt(rng, "bbox")
    dt = coco_results(rng, gt, "bbox")
    files = {"gt.json": dump_json(gt), "dt.json": dump_json(dt),
             "names.txt": b"person\ncar\ndog\n"}
    base = ["coco", "gt.json", "dt.json"]
    choice = rng.randrange(16)
    special: list[tuple[str, ...]] = []
    if choice == 0:
        special, argv = [("fifo", "pipe.json")], ["coco", "pipe.json", "dt.json"]
    elif choice == 1:
        special, argv = [("fifo", "pipe.json")], ["coco", "gt.json", "pipe.json"]
    elif choice == 2:
        argv = ["coco", "/dev/zero", "dt.json"]
    elif choice == 3:
        argv = ["coco", "gt.json", "/dev/zero"]
    elif choice == 4:
        special, argv = [("dir", "folder.json")], ["coco", "gt.json", "folder.json"]
    elif choice == 5:
        argv = base + ["--json", "gt.json"]
    elif choice == 6:
        special, argv = [("symlink", "link.json", "gt.json")], base + ["--json", "link.json"]
    elif choice == 7:
        special, argv = [("hardlink", "hard.json", "dt.json")], base + ["--json", "hard.json"]
    elif choice == 8:
        argv = base + ["--matches", "dt.json"]
    elif choice == 9:
        argv = base + ["--json", "/dev/full"]
    elif choice == 10:
        special = [("fifo", "pipe.txt")]
        argv = ["voc", "gt.json", "dt.json", "--names", "pipe.txt"]
    elif choice == 11:
        special = [("fifo", "pipe.txt")]
        argv = ["eval", "gt.json", "dt.json", "--protocol", "coco", "--classes", "pipe.txt"]
    elif choice == 12:
        argv = ["convert", "gt.json", "gt.json"]
    elif choice == 13:
        special = [("symlink", "out", ".")]
        argv = ["convert", "gt.json", "out", "--to", "voc"] if rng.random() < 0.5 else \
            ["report", "gt.json", "dt.json", "--out", "."]
    elif choice == 14:
        argv = ["classify", "/dev/zero", "/dev/zero"]
    else:
        argv = ["voc", "/dev/zero", "dt.json", "--gt-format", "voc"]
    return Case("special", files, argv, special=special)


def _classify_case(rng: random.Random) -> Case:
    import numpy as np

    n = rng.randrange(1, 6)
    labels = "\n".join(str(rng.randrange(3)) for _ in range(n))
    scores = "\n".join(",".join(f"{rng.random():.3f}" for _ in range(3)) for _ in range(n))
    files = {"labels.csv": mutate_lines(rng, labels, rng.randrange(0, 2)).encode(
        "utf-8", "surrogatepass"),
        "scores.csv": mutate_lines(rng, scores, rng.randrange(0, 2)).encode("utf-8",
                                                                             "surrogatepass")}
    if rng.random() < 0.3:
        buffer = io.BytesIO()
        np.save(buffer, np.zeros((n, 3)))
        raw = bytearray(buffer.getvalue())
        if rng.random() < 0.7:
            header = raw[:128].decode("latin-1")
            header = header.replace(f"({n}, 3)", rng.choice((
                "(1000000000000, 3)", "(4611686018427387904, 4)", "(-1, 3)", "(3,)",
                "(100000, 100000)")))
            raw = bytearray(header.encode("latin-1")) + raw[128:]
        files["scores.npy"] = bytes(raw)
        return Case("classify", files, ["classify", "labels.csv", "scores.npy"])
    return Case("classify", files, ["classify", "labels.csv", "scores.csv", "--json",
                                    "metrics.json"])


#: The kinds of case made by commands.py (the commands added after the first fuzz run),
#: and their weights.
COMMAND_KINDS = (("compare", 10), ("coco-options", 14), ("voc-options", 5), ("crowdpose", 6),
                 ("calibration", 6), ("errors-check", 4), ("lvis", 3), ("report", 4),
                 ("draw", 5), ("openimages-command", 3), ("errors-protocol", 6), ("lrp", 4),
                 ("calibration-protocol", 5), ("compare-protocol", 4))

#: The numpy readers against their fallback (scripts/fuzz/readers.py).
READER_KINDS = (("reader-bbox", 4), ("reader-keypoints", 4), ("reader-kpgt", 3))
#: The protocol settings of compare and calibration, and --ci --threads (settings.py).
SETTINGS_KINDS = (("compare-settings", 4), ("calibration-settings", 4), ("intervals", 4))
#: Kinds run only when asked for (--kinds): the default mix predates them.
OPT_IN = dict(READER_KINDS + SETTINGS_KINDS)

#: Every kind of case and its weight.
KINDS = (("coco-bbox", 22), ("coco-segm", 22), ("coco-keypoints", 14), ("voc", 8),
         ("yolo", 8), ("csv", 6), ("openimages", 4), ("dota", 6), ("special", 6),
         ("classify", 4)) + COMMAND_KINDS + READER_KINDS + SETTINGS_KINDS


def make_case(seed: int, index: int, kinds: tuple[str, ...] | None = None) -> Case:
    """Case ``index`` of the run seeded ``seed`` (deterministic), of one of ``kinds``
    (default: every kind, by :data:`KINDS`' weights)."""
    from .commands import make_command_case

    rng = random.Random(f"{seed}:{index}")
    names, weights = zip(*[(k, w) for k, w in KINDS if (k in kinds if kinds is not None
                                                        else k not in OPT_IN)])
    kind = rng.choices(names, weights)[0]
    if kind in dict(COMMAND_KINDS):
        return make_command_case(kind, rng)
    if kind in dict(READER_KINDS):
        from .readers import MAKERS

        return MAKERS[kind](rng)
    if kind in dict(SETTINGS_KINDS):
        from .settings import MAKERS as SETTINGS

        return SETTINGS[kind](rng)
    if kind.startswith("coco-"):
        return _coco_case(rng, kind[5:])
    return {"voc": _voc_case, "yolo": _yolo_case, "csv": _csv_case,
            "openimages": _openimages_case, "dota": _dota_case, "special": _special_case,
            "classify": _classify_case}[kind](rng)


def describe(case: Case) -> str:
    return json.dumps(copy.copy(case.argv))
