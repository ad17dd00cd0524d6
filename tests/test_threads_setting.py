"""``evaluate_coco(..., threads=N)`` and ``evaluate_voc`` reach the reading of their files:
``threads=1`` starts no thread at all (the results thread, the prefetch, the readers'
pieces), more threads start some, and the numbers are the same (docs/threads.md §1).

The files are large enough for every threaded step of the readers: a bbox results file
over 1 MiB (prefetched, read by the numpy reader in pieces), a segm and a keypoint results
file read early on the results thread.
"""

from __future__ import annotations

import io
import json
import threading

import pytest
from cocogen import make_dataset
from keypointgen import make_keypoints_dataset
from pycocotools import mask as mask_utils

import deteval
from deteval._threads import available_cores, resolve_threads, thread_map, threads_limited


@pytest.fixture
def started(monkeypatch):
    """The names of the threads started while the test runs."""
    names: list[str] = []
    original = threading.Thread.start

    def start(self):
        names.append(self.name)
        original(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    return names


def _write(path, data) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def _bbox_files(tmp_path) -> tuple[str, str]:
    gt, results = make_dataset(3, n_images=200, n_categories=6, max_dt=12)
    dt = _write(tmp_path / "dt.json", results * 3)   # (the same detections thrice: > 1 MiB)
    assert (tmp_path / "dt.json").stat().st_size > 1 << 20
    return _write(tmp_path / "gt.json", gt), dt


def _segm_files(tmp_path) -> tuple[str, str]:
    gt, results = make_dataset(4, n_images=40, n_categories=3, max_dt=10)
    sizes = {im["id"]: (im["height"], im["width"]) for im in gt["images"]}
    segm = []
    for r in results:
        h, w = sizes[r["image_id"]]
        x, y, bw, bh = r["bbox"]
        rle = mask_utils.frPyObjects([[x, y, x + bw, y, x + bw, y + bh, x, y + bh]], h, w)[0]
        segm.append({"image_id": r["image_id"], "category_id": r["category_id"],
                     "segmentation": {"size": [h, w], "counts": rle["counts"].decode()},
                     "score": r["score"]})
    dt = _write(tmp_path / "segm.json", segm)
    assert (tmp_path / "segm.json").stat().st_size > 1 << 16
    return _write(tmp_path / "segm_gt.json", gt), dt


def _keypoint_files(tmp_path) -> tuple[str, str]:
    gt, results = make_keypoints_dataset(5, n_images=300, n_categories=1, coordinates="float",
                                         bbox_mode="none")
    dt = _write(tmp_path / "kp.json", results)
    assert (tmp_path / "kp.json").stat().st_size > 1 << 16
    return _write(tmp_path / "kp_gt.json", gt), dt


CASES = {"bbox": _bbox_files, "segm": _segm_files, "keypoints": _keypoint_files}


@pytest.mark.parametrize("iou_type", sorted(CASES))
def test_one_thread_starts_no_thread_and_gives_the_same_numbers(iou_type, tmp_path, started):
    gt, dt = CASES[iou_type](tmp_path)
    one = deteval.evaluate_coco(gt, dt, iou_type=iou_type, threads=1)
    assert started == []
    two = deteval.evaluate_coco(gt, dt, iou_type=iou_type, threads=2)
    if available_cores() >= 2:
        assert started, "two threads asked: some step should have started a thread"
    assert one.stats.tobytes() == two.stats.tobytes()
    assert one.precision.tobytes() == two.precision.tobytes()
    assert one.recall.tobytes() == two.recall.tobytes()


def test_one_thread_reaches_the_voc_reader(tmp_path, started):
    gt, dt = _bbox_files(tmp_path)
    one = deteval.evaluate_voc(gt, dt, threads=1)
    assert started == []
    two = deteval.evaluate_voc(gt, dt, threads=2)
    if available_cores() >= 2:
        assert started
    assert one.ap.tobytes() == two.ap.tobytes()


def test_the_limit_caps_none_and_holds_in_the_threads_it_starts():
    cores = available_cores()
    with threads_limited(1):
        assert resolve_threads(None) == 1
        assert resolve_threads(3) == 3          # (an explicit count is the caller's)
    assert resolve_threads(None) == cores
    with threads_limited(2):
        seen = thread_map(lambda _: resolve_threads(None), range(8), 2)
    assert seen == [min(cores, 2)] * 8
    assert resolve_threads(None) == cores
    with threads_limited(1), threads_limited(None):     # (None: the enclosing cap holds)
        assert resolve_threads(None) == 1


def test_the_limit_is_restored_after_an_error():
    with pytest.raises(ValueError, match="stop"), threads_limited(1):
        raise ValueError("stop")
    assert resolve_threads(None) == available_cores()


@pytest.mark.parametrize("argv", [["coco", "--no-check"], ["voc"],
                                  ["eval", "--protocol", "voc2007"],
                                  ["eval", "--protocol", "coco"]],
                         ids=["coco", "voc", "eval-voc", "eval-coco"])
def test_the_commands_threads_reach_the_reading_of_their_files(argv, tmp_path, started):
    """``deteval voc`` and ``deteval eval`` read the files themselves before they evaluate:
    ``--threads 1`` must reach that reading as ``evaluate_coco(path, path, threads=1)``'s
    (the bbox results file over 1 MiB is prefetched and read in pieces on threads)."""
    from deteval.cli._main import main

    gt, dt = _bbox_files(tmp_path)
    command, *options = argv
    out, err = io.StringIO(), io.StringIO()
    assert main([command, gt, dt, "--threads", "1", *options], stdout=out, stderr=err) == 0, \
        err.getvalue()
    assert started == []


@pytest.mark.parametrize("protocol", ["coco", "voc2012"])
def test_an_evaluator_with_one_thread_starts_none_and_gives_the_same_numbers(protocol, tmp_path,
                                                                            started):
    gt_dict, records = make_dataset(3, n_images=900, n_categories=6, max_dt=12)
    gt = _write(tmp_path / "gt.json", gt_dict)
    results = []
    for threads in (1, None):
        evaluator = deteval.Evaluator(gt, protocol=protocol, threads=threads,
                                      unknown_labels="drop")
        evaluator.update(records)
        results.append(evaluator.compute())
        if threads == 1:
            assert started == []
            restored = deteval.Evaluator.from_bytes(evaluator.to_bytes(), gt, threads=1)
            assert started == [] and _numbers(restored.compute()) == _numbers(results[0])
    if available_cores() >= 2 and protocol == "coco":   # (VOC's per-image matching of
        # batches this size runs on the calling thread whatever the count)
        assert started, "every core: matching or accumulation should have started a thread"
    assert _numbers(results[0]) == _numbers(results[1])


def _numbers(result) -> bytes:
    """The result's numbers, as bytes: COCO's precision and stats, VOC's APs."""
    if hasattr(result, "precision"):
        return result.precision.tobytes() + result.stats.tobytes()
    return result.ap.tobytes()


def test_an_evaluator_refuses_a_bad_thread_count():
    gt, _ = make_dataset(1, n_images=2, n_categories=1)
    with pytest.raises(ValueError, match="threads must be an integer >= 1"):
        deteval.Evaluator(gt, threads=0)


def test_draw_threads_reach_the_reading_and_matching(tmp_path, started):
    """``deteval draw --threads 1`` reads its files (the bbox results file over 1 MiB is
    prefetched and read in pieces on threads otherwise), matches and draws on no thread."""
    from PIL import Image

    from deteval.cli._main import main

    gt, dt = _bbox_files(tmp_path)
    images = tmp_path / "images"
    images.mkdir()
    for record in json.loads((tmp_path / "gt.json").read_text())["images"]:
        Image.new("RGB", (record["width"], record["height"])).save(images / record["file_name"])
    argv = ["draw", gt, dt, "--images", str(images), "--out", str(tmp_path / "out"),
            "--limit", "2", "--contact-sheet", "0", "--quiet"]
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--threads", "1"], stdout=out, stderr=err) == 0, err.getvalue()
    assert started == []
    assert "wrote 2 of 2 image(s)" in out.getvalue()
