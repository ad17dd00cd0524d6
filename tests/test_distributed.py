"""deteval.distributed.gather across real processes: the merge equals one-process evaluation.

Each rank is a process that evaluates its shard of the images; the all-gather is built on
pipes to the test process, which plays the collective (receives every rank's object, sends
the list back). Shards as ``DistributedSampler`` makes them (padded with repeated images so
that every rank has as many) and uneven shards; 2 and 4 ranks; the result on every rank or
on ``dst`` only. With torch installed, one test runs the same over ``torch.distributed``'s
gloo backend.
"""

from __future__ import annotations

import multiprocessing
import socket
import warnings

import numpy as np
import pytest

import deteval
from deteval import Evaluator
from deteval.distributed import gather
from deteval.errors import DetevalError
from tests.cocogen import make_dataset

FIELDS = ("stats", "precision", "recall", "scores", "n_gt", "n_detections")
needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="the ranks are forked processes (not on this platform)")


def sampler_shards(n_images: int, world: int) -> list[list[int]]:
    """``DistributedSampler(shuffle=False)``: padded with the first images, then strided."""
    indices = list(range(n_images))
    total = -(-n_images // world) * world
    indices += indices[: total - n_images]
    return [indices[rank:total:world] for rank in range(world)]


def _rank(rank, conn, gt, groups, image_ids, shard, dst, batch):
    """One rank: update in batches of per-image records, gather, compute, report."""
    try:
        evaluator = Evaluator(gt, unknown_labels="drop")
        for start in range(0, len(shard), batch):
            ids = [image_ids[i] for i in shard[start:start + batch]]
            evaluator.update([r for i in ids for r in groups.get(i, [])])

        def all_gather(obj):
            conn.send(obj)
            return conn.recv()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            merged = gather(evaluator, all_gather=all_gather, dst=dst)
        out = None
        if merged is not None:
            result = merged.compute()
            out = {name: getattr(result, name) for name in FIELDS}
        conn.send(("ok", out, [str(w.message) for w in caught]))
    except Exception as error:  # reported to the test process
        conn.send(("error", f"{type(error).__name__}: {error}", []))


def start(processes) -> None:
    # fork: fast, and the ranks run nothing but deteval (Python 3.12 warns about forking a
    # process with threads, which another test's Dask client may have left).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for process in processes:
            process.start()


def run_ranks(world, gt, results, shards, *, dst=None, batch=2):
    groups: dict[int, list] = {}
    for record in results:
        groups.setdefault(record["image_id"], []).append(record)
    image_ids = [image["id"] for image in gt["images"]]
    context = multiprocessing.get_context("fork")
    pipes = [context.Pipe() for _ in range(world)]
    processes = [context.Process(target=_rank, args=(rank, pipes[rank][1], gt, groups, image_ids,
                                                     shards[rank], dst, batch))
                 for rank in range(world)]
    start(processes)
    try:
        ends = [parent for parent, _ in pipes]
        first = [end.recv() for end in ends]
        if all(isinstance(m, tuple) and len(m) == 2 and isinstance(m[0], bytes) for m in first):
            for end in ends:                 # the collective: everyone gets the list
                end.send(first)
            reports = [end.recv() for end in ends]
        else:
            reports = first
    finally:
        for process in processes:
            process.join(timeout=60)
    return reports


@pytest.fixture(scope="module")
def data():
    gt, results = make_dataset(21, n_images=11, n_categories=3)
    return gt, results, deteval.evaluate_coco(gt, results)


@needs_fork
@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("dst", [None, 1])
def test_sampler_shards_with_padding(data, world, dst):
    gt, results, reference = data
    shards = sampler_shards(len(gt["images"]), world)
    reports = run_ranks(world, gt, results, shards, dst=dst)
    for rank, (status, out, messages) in enumerate(reports):
        assert status == "ok", out
        if dst is not None and rank != dst:
            assert out is None
            continue
        for name in FIELDS:
            assert np.array_equal(out[name], getattr(reference, name)), (rank, name)
        padded = sum(len(s) for s in shards) - len(gt["images"])
        assert messages == [f"{padded} image(s) came again with identical detections in this "
                            "merge (DistributedSampler pads the last batch so); each was "
                            "counted once"]


@needs_fork
def test_uneven_shards(data):
    gt, results, reference = data
    n = len(gt["images"])
    shards = [[0], list(range(1, n - 3)), [], list(range(n - 3, n))]
    reports = run_ranks(4, gt, results, shards, batch=3)
    for status, out, messages in reports:
        assert status == "ok", out
        assert messages == []
        for name in FIELDS:
            assert np.array_equal(out[name], getattr(reference, name)), name


@needs_fork
def test_conflicting_ranks_fail_everywhere(data):
    gt, results, _ = data
    image_id = results[0]["image_id"]
    changed = [dict(r, score=r["score"] / 3) if r["image_id"] == image_id else r
               for r in results]
    n = len(gt["images"])
    position = [image["id"] for image in gt["images"]].index(image_id)
    # Two ranks both evaluate that image, with different detections.
    reports = run_ranks(2, gt, results, [list(range(n)), [position]])
    assert all(status == "ok" for status, _, _ in reports)
    reports = _run_with_results(gt, [results, changed], [list(range(n)), [position]])
    for status, message, _ in reports:
        assert status == "error"
        assert message.startswith(f"DetevalError: image_id {image_id} was already evaluated")


def _rank_own_results(rank, conn, gt, results, shard):
    groups: dict[int, list] = {}
    for record in results:
        groups.setdefault(record["image_id"], []).append(record)
    _rank(rank, conn, gt, groups, [image["id"] for image in gt["images"]], shard, None, 4)


def _run_with_results(gt, per_rank_results, shards):
    context = multiprocessing.get_context("fork")
    pipes = [context.Pipe() for _ in shards]
    processes = [context.Process(target=_rank_own_results,
                                 args=(rank, pipes[rank][1], gt, per_rank_results[rank], shard))
                 for rank, shard in enumerate(shards)]
    start(processes)
    ends = [parent for parent, _ in pipes]
    first = [end.recv() for end in ends]
    for end in ends:
        end.send(first)
    reports = [end.recv() for end in ends]
    for process in processes:
        process.join(timeout=60)
    return reports


def test_gather_without_a_backend_says_what_it_needs():
    evaluator = Evaluator({"images": [{"id": 1}], "categories": [{"id": 1}],
                           "annotations": []})
    with pytest.raises(RuntimeError, match="needs torch.distributed initialised .* or an "
                                           "all_gather callable"):
        gather(evaluator)
    with pytest.raises(ValueError, match=r"dst must be a rank in 0\.\.0; got 3"):
        gather(evaluator, all_gather=lambda obj: [obj], dst=3)
    with pytest.raises(TypeError, match="gather\\(\\) takes an Evaluator"):
        gather(object(), all_gather=lambda obj: [obj])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torch_rank(rank, world, port, conn, gt, results, shard):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        evaluator = Evaluator(gt, unknown_labels="drop")
        ids = [gt["images"][i]["id"] for i in shard]
        evaluator.update([r for r in results if r["image_id"] in ids])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", deteval.DuplicateImageWarning)
            merged = gather(evaluator)
            on_dst = gather(evaluator, dst=0)
        result = merged.compute()
        conn.send(({name: getattr(result, name) for name in FIELDS}, on_dst is None))
    finally:
        dist.destroy_process_group()


def test_torch_gloo(data):
    pytest.importorskip("torch", reason="torch is not installed (not a deteval dependency); "
                                        "this test runs gather over torch.distributed's gloo")
    gt, results, reference = data
    world, port = 2, _free_port()
    shards = sampler_shards(len(gt["images"]), world)
    context = multiprocessing.get_context("spawn")
    pipes = [context.Pipe() for _ in range(world)]
    processes = [context.Process(target=_torch_rank, args=(rank, world, port, pipes[rank][1],
                                                           gt, results, shards[rank]))
                 for rank in range(world)]
    for process in processes:
        process.start()
    reports = [parent.recv() for parent, _ in pipes]
    for process in processes:
        process.join(timeout=60)
    for rank, (out, none_here) in enumerate(reports):
        assert none_here == (rank != 0)
        for name in FIELDS:
            assert np.array_equal(out[name], getattr(reference, name)), name


def test_conflict_raises_in_one_process_too():
    gt = {"images": [{"id": 1}], "categories": [{"id": 1}], "annotations": []}
    a, b = Evaluator(gt), Evaluator(gt)
    a.update({1: {"boxes": [[0, 0, 1, 1]], "scores": [0.5], "labels": [1]}})
    b.update({1: {"boxes": [[0, 0, 1, 1]], "scores": [0.6], "labels": [1]}})
    with pytest.raises(DetevalError, match="image_id 1 was already evaluated"):
        gather(a, all_gather=lambda obj: [obj, (b"other", b.to_bytes())])
