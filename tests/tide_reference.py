"""Run tidecv 1.0.1 (the TIDE reference) on COCO dicts.

``run_tidecv(gt_dict, results, **settings)`` builds tidecv's ``Data`` objects as its COCO
loaders do (images in file order, crowd objects as ignore regions; with ``mask=True`` the
GT segmentations made RLE by tidecv's own ``toRLE``, the results' RLE as given, and tidecv's
mask mode) and returns
``{"ap", "main": {name: dAP}, "special": {"fp", "fn"}, "counts": {name: n}}``.

``write_inputs(folder, gt, dt)`` and ``run_errors(*argv)`` are the CLI helpers the TIDE
tests share: the COCO dicts as ``gt.json`` / ``dt.json``, and ``deteval errors`` run with its
exit code, stdout and stderr.
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from pathlib import Path

NAMES = {"Cls": "cls", "Loc": "loc", "Both": "both", "Dupe": "dupe", "Bkg": "bkg",
         "Miss": "miss"}


def _tidecv():
    # tidecv 1.0.1 needs no numpy alias shim (it uses no np.float / np.int); its import
    # pulls in cv2, seaborn and pandas, whose warnings are not ours.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import tidecv
    return tidecv


def run_tidecv(gt: dict, results: list[dict], *, pos_threshold: float = 0.5,
               background_threshold: float = 0.1, max_dets: int = 100,
               mask: bool = False) -> dict:
    tidecv = _tidecv()
    from tidecv.data import Data
    from tidecv.functions import toRLE

    sizes = {image["id"]: (image["width"], image["height"]) for image in gt["images"]}

    def gt_mask(ann):
        return toRLE(ann["segmentation"], *sizes[ann["image_id"]]) if mask else None

    data = Data("gt", max_dets=max_dets)
    for image in gt["images"]:
        data.add_image(image["id"], image.get("file_name", str(image["id"])))
    for cat in gt.get("categories", []):
        data.add_class(cat["id"], cat.get("name", str(cat["id"])))
    for ann in gt["annotations"]:
        if ann.get("iscrowd", 0):
            data.add_ignore_region(ann["image_id"], ann["category_id"], list(ann["bbox"]),
                                   gt_mask(ann))
        else:
            data.add_ground_truth(ann["image_id"], ann["category_id"], list(ann["bbox"]),
                                  gt_mask(ann))
    preds = Data("dt")
    for det in results:
        preds.add_detection(det["image_id"], det["category_id"], det["score"],
                            list(det["bbox"]) if "bbox" in det else None,
                            det["segmentation"] if mask else None)
    tide = tidecv.TIDE(pos_threshold=pos_threshold, background_threshold=background_threshold)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = tide.evaluate(data, preds, mode=tidecv.TIDE.MASK if mask else tidecv.TIDE.BOX,
                            name="dt")
        errors = tide.get_all_errors()
        counts = run.count_errors()
    return {"ap": run.ap,
            "main": {NAMES[k]: v for k, v in errors["main"]["dt"].items()},
            "special": {"fp": errors["special"]["dt"]["FalsePos"],
                        "fn": errors["special"]["dt"]["FalseNeg"]},
            "counts": {NAMES[k.short_name]: v for k, v in counts.items()}}


def write_inputs(folder: Path, gt: dict, results: list[dict]) -> tuple[str, str]:
    """``gt.json`` and ``dt.json`` in ``folder``; their paths."""
    (folder / "gt.json").write_text(json.dumps(gt))
    (folder / "dt.json").write_text(json.dumps(results))
    return str(folder / "gt.json"), str(folder / "dt.json")


def run_errors(*argv: str) -> tuple[int, str, str]:
    """``deteval errors ARGV``: exit code, stdout, stderr."""
    from deteval.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["errors", *map(str, argv)], stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()
