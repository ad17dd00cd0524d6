"""scripts/bench/: the registries, the cache's folder names, and one tiny run end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from bench import cli  # noqa: E402
from bench.cases import CASES, Case, register  # noqa: E402
from bench.data import data_folder  # noqa: E402
from bench.peers import PEERS  # noqa: E402


def test_registries():
    assert list(CASES) == ["bbox", "segm", "keypoints", "rotated", "compat", "streaming",
                           "dask", "lvis", "openimages", "boundary", "crowdpose",
                           "calibration", "slices", "bootstrap", "bootstrap-voc",
                           "bootstrap-lvis", "export"]
    assert CASES["boundary"].data_of == "segm" and CASES["boundary"].peers == ()
    assert set(CASES["boundary"].tools) == {"deteval", "faster-coco-eval", "vernier"}
    assert CASES["compat"].tools and CASES["compat"].data_of == "bbox"
    assert all(CASES[name].run for name in ("streaming", "dask", "lvis", "openimages",
                                            "export"))
    assert not list((ROOT / "scripts").glob("bench_*.py"))    # folded into the package
    assert list(PEERS) == ["deteval", "hotcoco", "ultrafast-pycocotools", "vernier",
                           "faster-coco-eval", "pycocotools"]
    assert {p.name for p in PEERS.values() if p.slow} == {"pycocotools", "faster-coco-eval"}
    assert "rotated" in PEERS["deteval"].iou_types
    assert all("rotated" not in p.iou_types for n, p in PEERS.items() if n != "deteval")
    with pytest.raises(ValueError, match="two cases named 'bbox'"):
        register(CASES["bbox"])


def test_cache_folders_keep_their_names(tmp_path):
    """Data generated before the split is reused: same folders, same params."""
    size = {"images": 5000, "categories": 80, "dets": 100}
    folder, params = data_folder(tmp_path, CASES["bbox"], 0, size)
    assert folder.name == "synth-v2-s0-i5000-c80-d100" and "case" not in params
    folder, params = data_folder(tmp_path, CASES["segm"], 0, dict(size, images=500))
    assert folder.name == "segm-v1-s0-i500-c80-d100"
    assert params == {"generator": 1, "seed": 0, "images": 500, "categories": 80,
                      "dets_per_image": 100, "case": "segm"}


def test_sizes_from_detections():
    args = cli.make_parser().parse_args(["--detections", "2000000"])
    assert cli.case_size(args, CASES["bbox"], 2_000_000) == {
        "images": 20000, "categories": 80, "dets": 100}
    args = cli.make_parser().parse_args(["--quick", "--categories", "3"])
    assert cli.case_size(args, CASES["keypoints"]) == {"images": 500, "categories": 1,
                                                       "dets": 20}
    with pytest.raises(SystemExit):
        cli.main(["--detections", "10", "--images", "1"])


def test_a_case_of_its_own_tools(tmp_path):
    """A case can bring tools that only it runs on another case's data (the way compat, dask,
    streaming fold in)."""
    case = register(Case(name="demo", iou_type="bbox", data_of="bbox",
                         tools={"deteval-demo": print}, peers=("pycocotools",)))
    try:
        assert case.generate is CASES["bbox"].generate and case.images == 5000
        folder, params = data_folder(tmp_path, case, 0, {"images": 5, "categories": 80,
                                                         "dets": 100})
        assert folder.name == "synth-v2-s0-i5-c80-d100" and "case" not in params
        assert cli._unavailable("deteval-demo", case) is None
        assert cli._unavailable("pycocotools", case) is None
        assert cli._unavailable("hotcoco", case) == "n/a: not a peer of case demo"
        assert cli._unavailable("deteval-demo", CASES["bbox"]) == "n/a: a tool of another case"
    finally:
        del CASES["demo"]


def test_tiny_run(tmp_path):
    """Two sizes of bbox, deteval only: its rows, time per detection and the scaling table."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench.py"), "--repeat", "1", "--tools",
         "deteval", "--data-dir", str(tmp_path), "--detections", "200", "400"],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "deteval                   1" in out and "us/detection" in out
    assert "Scaling of case bbox" in out and "200" in out and "400" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "synth-v2-s0-i2-c80-d100", "synth-v2-s0-i4-c80-d100"]


def test_data_generators_of_the_folded_cases_on_a_tiny_size():
    from bench.cases import _shards, lvis, openimages

    gt, rows = _shards.generate_rows(0, 3, 5)
    assert rows.shape == (15, 7) and len(gt["images"]) == 3
    cuts = _shards.batch_cuts(rows[:, 0], 4)
    assert cuts[0] == 0 and cuts[-1] == 15
    assert all(rows[c - 1, 0] != rows[c, 0] for c in cuts[1:-1])   # cut between images
    gt, results = lvis.make_set(2, 10, 0)
    assert len(gt["categories"]) == 1203 and 2 <= len(results) <= 20
    g, labels, dets, tree, classes = openimages.make_set(3, 8, 4, 0)
    assert len(dets) == 12 and len(classes) == 9


def _bench(tmp_path, *argv) -> str:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench.py"), "--repeat", "1", "--data-dir",
         str(tmp_path), *map(str, argv)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "MISMATCH" not in proc.stdout
    return proc.stdout


def test_tiny_runs_of_the_folded_cases(tmp_path):
    """compat, streaming, openimages (and dask when installed) on a few images: their
    equality checks hold. lvis is left out: lvis-api takes seconds even on a tiny set."""
    out = _bench(tmp_path, "--case", "compat", "--images", "4")
    assert "deteval-compat" in out and "identical to the last bit" in out
    assert "\nhotcoco " not in out                  # not a peer of the compat case
    out = _bench(tmp_path, "--case", "streaming", "--images", "30")
    assert "results identical (stats, precision, recall, scores): True" in out
    out = _bench(tmp_path, "--case", "openimages", "--images", "10")
    assert "equal to the last bit" in out
    out = _bench(tmp_path, "--case", "bootstrap", "--images", "10", "--quick")
    assert "identity resample: the 12 stats and per-class AP equal to the last bit" in out
    out = _bench(tmp_path, "--case", "bootstrap-voc", "--images", "10", "--quick")
    assert "identity resample: the mAP and per-class AP equal to the last bit" in out
    out = _bench(tmp_path, "--case", "bootstrap-lvis", "--images", "10", "--quick")
    assert "identity resample: the 13 stats and per-class AP equal to the last bit" in out
    pytest.importorskip("distributed", reason="distributed is not installed")
    out = _bench(tmp_path, "--case", "dask", "--images", "40", "--dets-per-image", "10")
    assert "results identical (stats, precision, recall, scores): True" in out
    assert "merged state" in out and "state bytes" in out


def test_the_timer_waits_after_the_import_phase_only():
    """``--settle``: the pause after the import phase is neither in its time nor in the
    next phase's."""
    import time

    from bench.common import PhaseTimer

    timer = PhaseTimer(settle=0.2)
    start = time.perf_counter()
    with timer("import"):
        pass
    with timer("evaluate"):
        pass
    assert time.perf_counter() - start >= 0.2
    assert timer.times["import"] < 0.1 and timer.times["evaluate"] < 0.1
    assert cli.make_parser().parse_args(["--settle", "0.2"]).settle == 0.2
