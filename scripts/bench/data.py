"""The cached data sets: generated once per case, size and seed, in a child process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .cases import Case
from .common import LAUNCHER, write_json


def data_folder(data_dir: Path, case: Case, seed: int, size: dict) -> tuple[Path, dict]:
    """The cache folder of these parameters, and the parameters stored in its meta.json."""
    params = {
        "generator": case.version,
        "seed": seed,
        "images": size["images"],
        "categories": size["categories"],
        "dets_per_image": size["dets"],
    }
    data_case = case.data_of or case.name
    if data_case != "bbox":  # the bbox files keep the names they had before the cases came
        params["case"] = data_case
    name = case.data_name or data_case
    tail = f"s{seed}-i{size['images']}-c{size['categories']}-d{size['dets']}"
    return data_dir / f"{name}-v{case.version}-{tail}", params


def ensure_data(data_dir: Path, case: Case, seed: int, size: dict):
    """Paths of gt.json and results.json for these parameters, generating them if needed."""
    folder, params = data_folder(data_dir, case, seed, size)
    gt_path, dt_path, meta_path = folder / "gt.json", folder / "results.json", folder / "meta.json"
    if meta_path.exists() and gt_path.exists() and dt_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("params") == params:
            return gt_path, dt_path, meta["summary"], True
    folder.mkdir(parents=True, exist_ok=True)
    gt, results = case.generate(seed, size["images"], size["categories"], size["dets"])
    write_json(gt, gt_path)
    write_json(results, dt_path)
    summary = case.describe(gt, results)
    meta_path.write_text(json.dumps({"params": params, "summary": summary}, indent=1))
    return gt_path, dt_path, summary, False


def generate_main(case: Case, args, size: dict) -> int:
    """``--generate``: ensure the data, print one JSON line of where it is."""
    gt_path, dt_path, summary, reused = ensure_data(args.data_dir, case, args.seed, size)
    print(json.dumps({"gt": str(gt_path), "dt": str(dt_path), "summary": summary,
                      "reused": reused}))  # fmt: skip
    return 0


def prepare_data(args, case: Case, size: dict):
    """``ensure_data`` in a child process, so that this process stays small.

    On Linux a child's ru_maxrss starts from the memory of the process it was forked from, so
    a parent holding the generated data would inflate the peak of every tool run after it.
    """
    command = [
        sys.executable, str(LAUNCHER), "--generate", "--case", case.name,
        "--images", str(size["images"]), "--categories", str(size["categories"]),
        "--dets-per-image", str(size["dets"]), "--seed", str(args.seed),
        "--data-dir", str(args.data_dir),
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"data generation failed:\n{proc.stderr}")
    made = json.loads(proc.stdout.strip().splitlines()[-1])
    return Path(made["gt"]), Path(made["dt"]), made["summary"], made["reused"]
