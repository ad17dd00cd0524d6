"""Replays of how training frameworks drive pycocotools, run with both APIs.

The call sequences are those of torchvision's detection reference (``CocoEvaluator``:
per-batch ``evaluate()`` and ``evalImgs`` read back, records merged across processes and
assigned, then ``accumulate()``), detectron2's ``_evaluate_predictions_on_coco`` (sigmas,
``maxDets``, a ``COCOeval`` subclass with its own summary, per-category AP from
``eval["precision"]``) and mmdetection's ``CocoMetric`` (a ``COCO`` subclass, results from a
file, proposal recall with ``useCats = 0``, custom ``iouThrs``, class-wise AP). They are
written here from those sequences, not copied. Each must give exactly pycocotools' numbers.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json

import numpy as np
import pytest
from cocogen import make_dataset
from compat_harness import OURS, REAL, assert_same, run, run_both
from keypointgen import make_keypoints_dataset
from maskgen import make_segm_dataset


def _gt_coco(api, gt: dict):
    """The ground truth as torchvision's ``convert_to_coco_api`` builds it."""
    coco = api.COCO()
    coco.dataset = copy.deepcopy(gt)
    coco.createIndex()
    return coco


# ---------------------------------------------------------------------------------------------
# torchvision: references/detection/coco_eval.py
# ---------------------------------------------------------------------------------------------


def torchvision_replay(gt: dict, results: list, iou_type: str, *, processes: int = 2,
                       batch: int = 2):
    """Batches of images per process; each batch evaluated alone, records merged at the end."""
    image_ids = [image["id"] for image in gt["images"]]
    shards = [image_ids[p::processes] for p in range(processes)]

    def script(api):
        coco_gt = copy.deepcopy(_gt_coco(api, gt))
        evaluator = api.COCOeval(coco_gt, iouType=iou_type)
        gathered_ids, gathered_records = [], []
        for shard in shards:
            ids_seen, records = [], []
            for start in range(0, len(shard), batch):
                batch_ids = list(np.unique(shard[start:start + batch]))
                ids_seen.extend(batch_ids)
                batch_results = copy.deepcopy(
                    [r for r in results if r["image_id"] in set(batch_ids)])
                with contextlib.redirect_stdout(io.StringIO()):
                    coco_dt = (api.COCO.loadRes(coco_gt, batch_results) if batch_results
                               else api.COCO())
                evaluator.cocoDt = coco_dt
                evaluator.params.imgIds = list(batch_ids)
                with contextlib.redirect_stdout(io.StringIO()):
                    evaluator.evaluate()
                p = evaluator.params
                records.append(np.asarray(evaluator.evalImgs).reshape(
                    -1, len(p.areaRng), len(p.imgIds)))
            gathered_ids.extend(ids_seen)
            gathered_records.append(np.concatenate(records, 2))
        merged = np.concatenate(gathered_records, 2)
        merged_ids, first = np.unique(np.array(gathered_ids), return_index=True)
        evaluator.evalImgs = list(merged[..., first].flatten())
        evaluator.params.imgIds = list(merged_ids)
        evaluator._paramsEval = copy.deepcopy(evaluator.params)
        evaluator.accumulate()
        print(f"IoU metric: {iou_type}")
        evaluator.summarize()
        return evaluator
    return script


@pytest.mark.parametrize("seed", range(4))
def test_torchvision_bbox(seed):
    gt, results = make_dataset(seed + 700, n_images=7, p_many=0.1)
    mine, theirs = run_both(torchvision_replay(gt, results, "bbox"), records=False)
    assert len(mine.evalImgs) == len(theirs.evalImgs)
    # The merged evaluation equals one evaluation of every image at once.
    whole, _ = run(_whole(gt, results, "bbox"), REAL)
    assert np.array_equal(mine.eval["precision"], whole.eval["precision"])


def _whole(gt, results, iou_type):
    def script(api):
        coco_gt = _gt_coco(api, gt)
        evaluator = api.COCOeval(coco_gt, coco_gt.loadRes(copy.deepcopy(results)), iou_type)
        evaluator.evaluate()
        evaluator.accumulate()
        return evaluator
    return script


def test_torchvision_segm_with_string_counts():
    gt, results = make_segm_dataset(5, n_images=5)
    for r in results:       # torchvision decodes the RLE counts to str
        if isinstance(r["segmentation"].get("counts"), bytes):
            r["segmentation"]["counts"] = r["segmentation"]["counts"].decode()
    run_both(torchvision_replay(gt, results, "segm"), records=False)


def test_torchvision_keypoints():
    gt, results = make_keypoints_dataset(6, n_images=5)
    run_both(torchvision_replay(gt, results, "keypoints", processes=3, batch=1),
             records=False)


def test_torchvision_batches_without_results():
    gt, results = make_dataset(9, n_images=6)
    skipped = {gt["images"][0]["id"], gt["images"][3]["id"]}
    results = [r for r in results if r["image_id"] not in skipped]
    run_both(torchvision_replay(gt, results, "bbox", batch=1), records=False)


# ---------------------------------------------------------------------------------------------
# detectron2: evaluation/coco_evaluation.py
# ---------------------------------------------------------------------------------------------


def _max_dets_subclass(api):
    """A COCOeval whose summary reads the last maxDets (as detectron2's COCOevalMaxDets)."""
    class MaxDets(api.COCOeval):
        def summarize(self):
            p = self.params
            last = p.maxDets[-1]
            stats = []
            for iou in (None, 0.5, 0.75):
                s = self.eval["precision"]
                if iou is not None:
                    s = s[np.where(iou == p.iouThrs)[0]]
                s = s[:, :, :, 0, -1]
                stats.append(float(np.mean(s[s > -1])) if (s > -1).any() else -1.0)
            r = self.eval["recall"][:, :, 0, -1]
            stats.append(float(np.mean(r[r > -1])) if (r > -1).any() else -1.0)
            self.stats = np.array(stats)
            print(f"maxDets={last}: " + " ".join(f"{v:0.3f}" for v in stats))
    return MaxDets


def detectron2_replay(gt, results, iou_type, *, max_dets=(1, 10, 100), sigmas=None,
                      img_ids=None):
    def script(api):
        coco_gt = _gt_coco(api, gt)
        coco_results = copy.deepcopy(results)
        if iou_type == "segm":
            for r in coco_results:
                r.pop("bbox", None)      # mask AP with mask areas
        coco_dt = coco_gt.loadRes(coco_results)
        cls = api.COCOeval if list(max_dets) == [1, 10, 100] else _max_dets_subclass(api)
        evaluator = cls(coco_gt, coco_dt, iou_type)
        if iou_type != "keypoints":
            evaluator.params.maxDets = list(max_dets)
        if img_ids is not None:
            evaluator.params.imgIds = img_ids
        if iou_type == "keypoints" and sigmas is not None:
            assert hasattr(evaluator.params, "kpt_oks_sigmas")
            evaluator.params.kpt_oks_sigmas = np.array(sigmas)
            n_gt = len(next(iter(coco_gt.anns.values()))["keypoints"]) // 3
            assert len(evaluator.params.kpt_oks_sigmas) == n_gt
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
        precisions = evaluator.eval["precision"]
        per_class = []
        for idx in range(precisions.shape[2]):
            precision = precisions[:, :, idx, 0, -1]
            precision = precision[precision > -1]
            per_class.append(float(np.mean(precision)) if precision.size else float("nan"))
        evaluator.per_class = per_class
        return evaluator
    return script


def _same_per_class(mine, theirs):
    np.testing.assert_array_equal(mine.per_class, theirs.per_class)


@pytest.mark.parametrize("seed", range(3))
def test_detectron2_bbox_and_custom_max_dets(seed):
    gt, results = make_dataset(seed + 800, n_images=5, p_many=0.15)
    _same_per_class(*run_both(detectron2_replay(gt, results, "bbox")))
    mine, theirs = run(detectron2_replay(gt, results, "bbox", max_dets=(1, 10, 300)), OURS), \
        run(detectron2_replay(gt, results, "bbox", max_dets=(1, 10, 300)), REAL)
    assert mine[1].splitlines()[-1] == theirs[1].splitlines()[-1]
    assert np.array_equal(mine[0].stats, theirs[0].stats)
    _same_per_class(mine[0], theirs[0])


def test_detectron2_segm_without_boxes():
    gt, results = make_segm_dataset(21, bbox_mode="all")
    _same_per_class(*run_both(detectron2_replay(gt, results, "segm")))


def test_detectron2_keypoints_with_boxes_and_sigmas():
    gt, results = make_keypoints_dataset(22, n_categories=1, bbox_mode="all")
    sigmas = np.linspace(0.02, 0.1, 17).tolist()
    _same_per_class(*run_both(detectron2_replay(gt, results, "keypoints", sigmas=sigmas)))


def test_detectron2_image_subset():
    gt, results = make_dataset(23, n_images=6)
    ids = [image["id"] for image in gt["images"]][1:4]
    _same_per_class(*run_both(detectron2_replay(gt, results, "bbox", img_ids=ids)))


# ---------------------------------------------------------------------------------------------
# mmdetection: evaluation/metrics/coco_metric.py with its COCO wrapper
# ---------------------------------------------------------------------------------------------


def _wrapper(api):
    """A COCO subclass with snake_case aliases, as mmdetection's api_wrappers.COCO."""
    class Wrapped(api.COCO):
        def __init__(self, annotation_file=None):
            super().__init__(annotation_file=annotation_file)
            self.img_ann_map = self.imgToAnns
            self.cat_img_map = self.catToImgs

        def get_cat_ids(self, cat_names=[], sup_names=[], cat_ids=[]):  # noqa: B006
            return self.getCatIds(cat_names, sup_names, cat_ids)

        def get_img_ids(self, img_ids=[], cat_ids=[]):  # noqa: B006
            return self.getImgIds(img_ids, cat_ids)

        def load_cats(self, ids):
            return self.loadCats(ids)
    return Wrapped


def mmdet_replay(gt_path, results_path, *, metric, iou_thrs=None, proposal_nums=(100, 300,
                                                                                 1000)):
    def script(api):
        coco_api = _wrapper(api)(gt_path)
        names = [c["name"] for c in coco_api.dataset["categories"]]
        cat_ids = coco_api.get_cat_ids(cat_names=names)
        img_ids = coco_api.get_img_ids()
        coco_dt = coco_api.loadRes(results_path)
        evaluator = api.COCOeval(coco_api, coco_dt, "bbox")
        evaluator.params.catIds = cat_ids
        evaluator.params.imgIds = img_ids
        evaluator.params.maxDets = list(proposal_nums)
        if iou_thrs is not None:
            evaluator.params.iouThrs = iou_thrs
        if metric == "proposal":
            evaluator.params.useCats = 0
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
        if metric == "bbox":
            precisions = evaluator.eval["precision"]
            evaluator.per_class = []
            for idx, cat_id in enumerate(cat_ids):
                name = coco_api.load_cats(cat_id)[0]["name"]
                values = precisions[:, :, idx, 0, -1]
                values = values[values > -1]
                evaluator.per_class.append(
                    (name, float(np.mean(values)) if values.size else float("nan")))
        return evaluator
    return script


@pytest.fixture
def mmdet_files(tmp_path):
    gt, results = make_dataset(31, n_images=6, n_categories=3, p_many=0.3)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "results.json").write_text(json.dumps(results))
    return str(tmp_path / "gt.json"), str(tmp_path / "results.json")


def test_mmdet_proposal_recall(mmdet_files):
    run_both(mmdet_replay(*mmdet_files, metric="proposal"))


def test_mmdet_proposal_recall_custom_iou_thrs(mmdet_files):
    run_both(mmdet_replay(*mmdet_files, metric="proposal", iou_thrs=np.array([0.5, 0.75])))


def test_mmdet_classwise_bbox(mmdet_files):
    mine, theirs = run_both(mmdet_replay(*mmdet_files, metric="bbox",
                                         proposal_nums=(1, 10, 100)))
    assert [name for name, _ in mine.per_class] == [name for name, _ in theirs.per_class]
    np.testing.assert_array_equal([ap for _, ap in mine.per_class],
                                  [ap for _, ap in theirs.per_class])


def test_replays_after_init_as_pycocotools(mmdet_files):
    """The same replay through ``import pycocotools`` while the drop-in is installed."""
    import deteval.compat

    deteval.compat.init_as_pycocotools()
    try:
        import pycocotools.coco
        import pycocotools.cocoeval
        api = type("API", (), {"COCO": pycocotools.coco.COCO,
                               "COCOeval": pycocotools.cocoeval.COCOeval})
        assert api.COCOeval is OURS.COCOeval
        mine = run(mmdet_replay(*mmdet_files, metric="proposal"), api)
    finally:
        deteval.compat.uninstall_pycocotools()
    assert_same(mine, run(mmdet_replay(*mmdet_files, metric="proposal"), REAL))
