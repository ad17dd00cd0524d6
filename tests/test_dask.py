"""deteval.dask.evaluate on a real LocalCluster (2 worker processes): equal to one process.

Shards are results files, a dask bag of records or a dask dataframe; each is read and matched
on a worker, the states merged in a tree; the result must equal ``evaluate_coco`` (VOC:
``evaluate_voc`` image by image) exactly.
"""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import pytest

import deteval
from tests.cocogen import make_dataset

dask = pytest.importorskip("dask", reason="dask is not installed (the deteval[dask] extra)")
distributed = pytest.importorskip("distributed", reason="distributed is not installed")

from deteval.dask import evaluate  # noqa: E402

FIELDS = ("stats", "precision", "recall", "scores", "n_gt", "n_crowd", "n_detections")


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        # The cluster's start-up may warn (ports, event loops); none of it is deteval's.
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    yield client
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    gt, results = make_dataset(31, n_images=12, n_categories=3, p_many=0.2)
    folder = tmp_path_factory.mktemp("dask")
    gt_path = folder / "gt.json"
    gt_path.write_text(json.dumps(gt))
    groups: dict[int, list] = {}
    for record in results:
        groups.setdefault(record["image_id"], []).append(record)
    ids = list(groups)
    paths = []
    for k in range(5):          # 5 shards, uneven, by image
        path = folder / f"results{k}.json"
        path.write_text(json.dumps([r for i in ids[k::5] for r in groups[i]]))
        paths.append(path)
    return gt, gt_path, results, groups, paths


def assert_same(result, reference):
    for name in FIELDS:
        assert np.array_equal(getattr(result, name), getattr(reference, name)), name
    assert result.notes == reference.notes


@pytest.mark.parametrize("split_every", [2, 4])
def test_files_on_the_cluster(client, data, split_every):
    gt, gt_path, results, _, paths = data
    result = evaluate(gt_path, paths, client=client, split_every=split_every)
    assert_same(result, deteval.evaluate_coco(gt, results))
    assert result.matches is None


def test_bag_of_records_with_ground_truth_sent_to_the_workers(client, data):
    import dask.bag

    gt, _, results, groups, _ = data
    ids = list(groups)
    # Partitions that split by image: one per group of images.
    parts = [dask.bag.from_sequence([r for i in ids[k::3] for r in groups[i]], npartitions=1)
             for k in range(3)]
    bag = dask.bag.concat(parts)
    result = evaluate(gt, bag, client=client, max_detections=(1, 5, 10))
    assert_same(result, deteval.evaluate_coco(gt, results, max_detections=(1, 5, 10)))


def test_voc_on_the_cluster(client, data):
    gt, gt_path, results, _, paths = data
    dataset = deteval.read_coco_gt(gt)
    detections = deteval.read_coco_results(results, dataset)
    ordered = detections[np.argsort(detections.image_index, kind="stable")]
    reference = deteval.evaluate_voc(dataset, ordered, params=deteval.VOC2007)
    result = evaluate(gt_path, paths, client=client, protocol="voc2007")
    for name in ("ap", "map", "tp", "fp", "n_detections"):
        assert np.array_equal(getattr(result, name), getattr(reference, name),
                              equal_nan=True), name


def test_dataframe_partitions(client, data):
    pd = pytest.importorskip("pandas", reason="pandas is not installed (dask dataframes)")
    dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe is not installed")
    gt, _, results, groups, _ = data
    ids = list(groups)
    frames = [pd.DataFrame([r for i in ids[k::2] for r in groups[i]]) for k in range(2)]
    frame = dd.concat([dd.from_pandas(f, npartitions=1) for f in frames])
    reference = deteval.evaluate_coco(gt, results)
    assert_same(evaluate(gt, frame, client=client), reference)       # a bbox column
    split = [f.assign(**{c: [b[j] for b in f["bbox"]] for j, c in enumerate("xywh")})
             .drop(columns="bbox") for f in frames]
    frame = dd.concat([dd.from_pandas(f, npartitions=1) for f in split])
    assert_same(evaluate(gt, frame, client=client), reference)       # x, y, w, h columns


def test_default_scheduler_without_a_cluster(data):
    gt, gt_path, results, _, paths = data
    assert_same(evaluate(gt_path, paths, client=None), deteval.evaluate_coco(gt, results))
    assert_same(deteval.evaluate_files(gt_path, paths), deteval.evaluate_coco(gt, results))


def test_conflicting_shards_name_the_image(data, tmp_path):
    gt, gt_path, results, groups, _ = data
    image_id = next(iter(groups))
    half = len(groups[image_id]) // 2 or 1
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(groups[image_id][:half]))
    b.write_text(json.dumps(groups[image_id][half:] or groups[image_id]))
    with pytest.raises(deteval.DetevalError, match=f"image_id {image_id} was already "
                                                   "evaluated"):
        evaluate(gt_path, [a, b], client=None)


def test_missing_dask_names_the_extra(monkeypatch, data):
    gt, _, results, _, paths = data
    monkeypatch.setitem(sys.modules, "dask", None)
    with pytest.raises(ImportError, match=r"pip install 'deteval\[dask\]'"):
        evaluate(gt, paths)
    with pytest.raises(ImportError, match=r"pip install 'deteval\[dask\]'"):
        deteval.evaluate_files(gt, paths, dask="local")
