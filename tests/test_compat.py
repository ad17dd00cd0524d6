"""deteval.compat against real pycocotools: the same scripts, the same numbers and records.

Each test runs one pycocotools-style script with both APIs (see ``compat_harness``) and
compares ``stats``, the ``eval`` arrays, ``evalImgs`` (every key, value and dtype), ``ious``
and the printed summary, on seeded datasets built to hit the protocol's quirks (``cocogen``,
``maskgen``) and on the shared ``coco_val2014_100`` sample.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
from cocogen import make_dataset
from compat_harness import OURS, REAL, assert_same, assert_same_eval_imgs, run, run_both
from keypointgen import OTHER_SIGMAS, make_keypoints_dataset
from maskgen import make_segm_dataset

import deteval.compat
from deteval.compat import COCO, COCOeval, NotSupportedError, ResultsError

COCO100 = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "coco_val2014_100"


def standard(gt: dict, results, iou_type: str, tweak=None, *, between=None, coco_api=None):
    """The usual script: COCO from a dict, loadRes, COCOeval, params tweaks, the three steps.

    ``between(evaluator)`` runs between evaluate() and accumulate(); ``coco_api`` makes the
    COCO objects with another API than the evaluator's.
    """
    def script(api):
        coco_gt = (coco_api or api).COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(copy.deepcopy(results))
        evaluator = api.COCOeval(coco_gt, coco_dt, iou_type)
        if tweak is not None:
            tweak(evaluator.params)
        evaluator.evaluate()
        if between is not None:
            between(evaluator)
        evaluator.accumulate()
        evaluator.summarize()
        return evaluator
    return script


def _set(**fields):
    def tweak(p):
        for name, value in fields.items():
            setattr(p, name, value)
    return tweak


def _subset(key: str, fraction: float, seed: int):
    """Keep a (shuffled, unsorted) part of params.imgIds or catIds."""
    def tweak(p):
        rng = np.random.default_rng(seed)
        ids = list(getattr(p, key))
        picked = rng.choice(len(ids), size=max(1, int(len(ids) * fraction)), replace=False)
        setattr(p, key, [ids[int(i)] for i in picked])
    return tweak


BBOX_TWEAKS = {
    "default": None,
    "no_cats": _set(useCats=0),
    "iou_thrs": _set(iouThrs=np.array([0.3, 0.5, 0.77])),
    "rec_thrs": _set(recThrs=np.linspace(0, 1, 11)),
    "max_dets": _set(maxDets=[100, 3, 10, 1]),
    "area_rng": _set(areaRng=[[0, 1e10], [0, 500], [500, 5000], [5000, 1e10]]),
}


@pytest.mark.parametrize("tweak", list(BBOX_TWEAKS))
@pytest.mark.parametrize("seed", range(5))
def test_bbox_random(seed, tweak):
    gt, results = make_dataset(seed + 100, p_many=0.1)
    run_both(standard(gt, results, "bbox", BBOX_TWEAKS[tweak]))


@pytest.mark.parametrize("key", ["imgIds", "catIds"])
@pytest.mark.parametrize("seed", range(4))
def test_bbox_subsets(seed, key):
    gt, results = make_dataset(seed + 200, n_images=6, n_categories=4)
    run_both(standard(gt, results, "bbox", _subset(key, 0.5, seed)))


@pytest.mark.parametrize("seed", range(4))
def test_bbox_no_cats_category_subset(seed):
    gt, results = make_dataset(seed + 300, n_categories=4)

    def tweak(p):
        _subset("catIds", 0.6, seed)(p)
        p.useCats = 0
    run_both(standard(gt, results, "bbox", tweak))


@pytest.mark.parametrize("seed", range(6))
def test_segm_random(seed):
    gt, results = make_segm_dataset(seed + 400)
    run_both(standard(gt, results, "segm"))


def test_segm_default_iou_type_and_no_cats():
    gt, results = make_segm_dataset(7)
    script = standard(gt, results, None, _set(useCats=0))
    mine, _ = run_both(lambda api: script(types.SimpleNamespace(
        COCO=api.COCO, COCOeval=lambda gt, dt, _: api.COCOeval(gt, dt))))   # no iouType
    assert mine.params.iouType == "segm"


@pytest.mark.parametrize("seed", range(6))
def test_keypoints_random(seed):
    gt, results = make_keypoints_dataset(seed + 500)
    run_both(standard(gt, results, "keypoints"))


def test_keypoints_custom_sigmas_and_max_dets():
    gt, results = make_keypoints_dataset(11, n_categories=1)
    tweak = _set(kpt_oks_sigmas=np.array(OTHER_SIGMAS[:17]) if len(OTHER_SIGMAS) >= 17
                 else np.full(17, 0.05), maxDets=[5, 20])
    run_both(standard(gt, results, "keypoints", tweak))


def test_keypoints_no_cats():
    gt, results = make_keypoints_dataset(12, n_categories=2)
    run_both(standard(gt, results, "keypoints", _set(useCats=0)))


def test_bbox_from_an_array():
    gt, results = make_dataset(31, p_many=0.1)
    rows = np.array([[r["image_id"], *r["bbox"], r["score"], r["category_id"]] for r in results])

    def script(api):
        coco_gt = api.COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        evaluator = api.COCOeval(coco_gt, coco_gt.loadRes(rows.copy()), "bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
        return evaluator
    (mine, printed), theirs = run(script, OURS), run(script, REAL)
    assert_same((mine, printed), theirs)
    assert printed.splitlines()[1:4] == theirs[1].splitlines()[1:4]   # array conversion lines
    assert mine.cocoDt.dataset["annotations"] == theirs[0].cocoDt.dataset["annotations"]


def test_accumulate_with_other_params():
    """Params changed between evaluate() and accumulate(): computed from the records."""
    gt, results = make_dataset(41, n_images=5, n_categories=3, p_many=0.1)

    def between(evaluator):
        evaluator.params.recThrs = np.linspace(0, 1, 21)
        evaluator.params.maxDets = [1, 10, 50, 100]
        evaluator.params.catIds = evaluator.params.catIds[::-1]
    run_both(standard(gt, results, "bbox", between=between))


def test_accumulate_given_params_and_twice():
    gt, results = make_dataset(43, n_images=4, p_many=0.1)

    def script(api):
        coco_gt = api.COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        evaluator = api.COCOeval(coco_gt, coco_gt.loadRes(copy.deepcopy(results)), "bbox")
        evaluator.evaluate()
        p = copy.deepcopy(evaluator.params)
        p.imgIds = p.imgIds[1:]
        evaluator.accumulate(p)
        first = {k: evaluator.eval[k].copy() for k in ("precision", "recall")}
        evaluator.accumulate()
        evaluator.summarize()
        evaluator.first = first
        return evaluator
    mine, theirs = run_both(script)
    for key in ("precision", "recall"):
        assert np.array_equal(mine.first[key], theirs.first[key])


@pytest.fixture(params=["at accumulate", "at evaluate"])
def accumulate_when(request, monkeypatch):
    """Both places the engine's arrays can come from: accumulate() or evaluate()."""
    import deteval.compat.cocoeval as module
    monkeypatch.setattr(module, "ACCUMULATE_AT_EVALUATE",
                        0 if request.param == "at accumulate" else 10 ** 9)
    return request.param


@pytest.mark.parametrize("seed", range(2))
def test_accumulated_at_evaluate_or_later(seed, accumulate_when):
    gt, results = make_dataset(seed + 900, p_many=0.1)
    run_both(standard(gt, results, "bbox", _set(recThrs=np.linspace(0, 1, 41))))


def test_fast_path_equals_the_records_path(accumulate_when):
    """The engine's arrays and the accumulation over its own evalImgs agree."""
    gt, results = make_dataset(47, n_images=5, p_many=0.2)
    fast, _ = run(standard(gt, results, "bbox"), OURS)

    def script(api):
        evaluator = standard(gt, results, "bbox")(api)
        evaluator.evalImgs = list(evaluator.evalImgs)     # assigned: the records path
        evaluator.accumulate()
        return evaluator
    slow, _ = run(script, OURS)
    for key in ("precision", "recall", "scores"):
        assert np.array_equal(fast.eval[key], slow.eval[key])


@pytest.mark.parametrize("kind", ["bbox", "segm"])
def test_coco100_files(kind):
    if not COCO100.is_dir():
        pytest.skip(f"shared sample not found: {COCO100}")
    gt_path = str(COCO100 / "instances_val2014_100.json")
    results_path = str(COCO100 / f"instances_val2014_fake{kind}100_results.json")
    expected = json.loads((COCO100 / "expected_pycocotools_2.0.11.json").read_text())[kind]

    def script(api):
        coco_gt = api.COCO(gt_path)
        evaluator = api.COCOeval(coco_gt, coco_gt.loadRes(results_path), kind)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
        return evaluator
    mine, theirs = run(script, OURS), run(script, REAL)
    assert_same(mine, theirs, records=kind == "bbox")
    assert [line for line in mine[1].splitlines() if "@[" in line] == expected["summary"]
    # What the script printed, apart from timings, is pycocotools' too.
    def untimed(text):
        return [line.split("(t=")[0] for line in text.splitlines()]
    assert untimed(mine[1]) == untimed(theirs[1])


# ---------------------------------------------------------------------------------------------
# The COCO class: queries, records and what loadRes adds
# ---------------------------------------------------------------------------------------------


def _both_cocos(gt, results):
    pair = []
    for api in (OURS, REAL):
        coco, _ = run(lambda api: api.COCO(), api)
        coco.dataset = copy.deepcopy(gt)
        run(lambda api, coco=coco: coco.createIndex(), api)
        res, _ = run(lambda api, coco=coco: coco.loadRes(copy.deepcopy(results)), api)
        pair.append((coco, res))
    return pair


@pytest.mark.parametrize("seed", range(3))
def test_queries_equal_pycocotools(seed):
    gt, results = make_dataset(seed + 600, n_images=5, n_categories=4)
    (mine, mine_res), (theirs, theirs_res) = _both_cocos(gt, results)
    image_ids = [image["id"] for image in gt["images"]]
    cat_ids = [cat["id"] for cat in gt["categories"]]
    queries = [
        ("getAnnIds", {}), ("getAnnIds", {"imgIds": image_ids[:2]}),
        ("getAnnIds", {"imgIds": image_ids[0]}), ("getAnnIds", {"catIds": cat_ids[:1]}),
        ("getAnnIds", {"areaRng": [100, 5000]}), ("getAnnIds", {"iscrowd": 1}),
        ("getAnnIds", {"imgIds": image_ids, "catIds": cat_ids[1:], "iscrowd": 0}),
        ("getCatIds", {}), ("getCatIds", {"catNms": [f"class{cat_ids[0]}"]}),
        ("getCatIds", {"supNms": "thing"}), ("getCatIds", {"catIds": cat_ids[-1]}),
        ("getImgIds", {}), ("getImgIds", {"imgIds": image_ids[:3]}),
        ("getImgIds", {"catIds": cat_ids[:1]}), ("getImgIds", {"catIds": cat_ids[:2]}),
    ]
    for name, kwargs in queries:
        assert getattr(mine, name)(**kwargs) == getattr(theirs, name)(**kwargs), (name, kwargs)
    ann_ids = theirs.getAnnIds()
    assert mine.loadAnns(ann_ids) == theirs.loadAnns(ann_ids)
    assert mine.loadAnns(ann_ids[0]) == theirs.loadAnns(ann_ids[0])
    assert mine.loadCats(cat_ids) == theirs.loadCats(cat_ids)
    assert mine.loadImgs(image_ids[0]) == theirs.loadImgs(image_ids[0])
    assert mine.loadImgs(np.int64(image_ids[0])) is theirs.loadImgs(np.int64(image_ids[0]))
    for name in ("anns", "imgs", "cats"):
        assert getattr(mine, name) == getattr(theirs, name)
        assert list(getattr(mine, name)) == list(getattr(theirs, name))
    assert dict(mine.imgToAnns) == dict(theirs.imgToAnns)
    assert dict(mine.catToImgs) == dict(theirs.catToImgs)
    # The results object: records completed as loadRes completes them, keys in order.
    assert list(mine_res.dataset) == list(theirs_res.dataset)
    assert mine_res.dataset == theirs_res.dataset
    for ann_id, ann in theirs_res.anns.items():
        assert list(mine_res.anns[ann_id]) == list(ann)
    assert mine_res.getImgIds() == theirs_res.getImgIds()


@pytest.mark.parametrize("maker", ["segm", "keypoints"])
def test_loadres_records_of_masks_and_keypoints(maker):
    make = make_segm_dataset if maker == "segm" else make_keypoints_dataset
    gt, results = make(3)
    (mine, mine_res), (theirs, theirs_res) = _both_cocos(gt, results)
    for ann_id, ann in theirs_res.anns.items():
        assert list(mine_res.anns[ann_id]) == list(ann)
        for key, value in ann.items():
            expected = np.asarray(value) if isinstance(value, np.ndarray) else value
            mine_value = mine_res.anns[ann_id][key]
            assert type(mine_value) is type(value), key
            assert np.array_equal(mine_value, expected) if isinstance(value, np.ndarray) \
                else mine_value == value, key
    if maker == "segm":
        ann = theirs.loadAnns(theirs.getAnnIds())[0]
        assert mine.annToRLE(ann) == theirs.annToRLE(ann)
        assert np.array_equal(mine.annToMask(ann), OURS.mask.decode(theirs.annToRLE(ann)))


def test_files_are_read_lazily(tmp_path):
    gt, results = make_dataset(5, n_images=4)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "res.json").write_text(json.dumps(results))
    coco, _ = run(lambda api: api.COCO(str(tmp_path / "gt.json")), OURS)
    res, _ = run(lambda api: coco.loadRes(str(tmp_path / "res.json")), OURS)
    assert "dataset" not in vars(coco) and "anns" not in vars(res)
    assert coco.getImgIds() == [image["id"] for image in gt["images"]]
    assert "dataset" not in vars(coco)             # answered from the columns
    assert res.anns[1]["id"] == 1 and res.anns[1]["iscrowd"] == 0
    assert coco.dataset == gt


def test_caller_data_is_not_modified():
    gt, results = make_segm_dataset(9)
    gt_before, results_before = copy.deepcopy(gt), copy.deepcopy(results)

    def script(api):
        coco_gt = api.COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        res = coco_gt.loadRes(results)
        evaluator = api.COCOeval(coco_gt, res, "segm")
        evaluator.evaluate()
        _ = evaluator.evalImgs, res.anns
        return evaluator
    run(script, OURS)
    assert gt == gt_before and results == results_before


def test_subclass_as_mmdetection_does():
    class Wrapped(COCO):
        def __init__(self, annotation_file=None):
            super().__init__(annotation_file=annotation_file)
            self.img_ann_map = self.imgToAnns
            self.cat_img_map = self.catToImgs

        def get_ann_ids(self, img_ids=[], cat_ids=[], area_rng=[], iscrowd=None):  # noqa: B006
            return self.getAnnIds(img_ids, cat_ids, area_rng, iscrowd)

    gt, results = make_dataset(13, n_images=4)
    wrapped, _ = run(lambda api: Wrapped(copy.deepcopy(gt)), OURS)
    assert wrapped.get_ann_ids(img_ids=[gt["images"][0]["id"]]) == [
        a["id"] for a in gt["annotations"] if a["image_id"] == gt["images"][0]["id"]]
    assert dict(wrapped.img_ann_map) == dict(wrapped.imgToAnns)
    res, _ = run(lambda api: wrapped.loadRes(copy.deepcopy(results)), OURS)
    assert type(res) is COCO


# ---------------------------------------------------------------------------------------------
# Errors: clear messages, pycocotools' exception kinds
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def small_gt():
    gt, _ = make_dataset(3, n_images=2)
    coco, _ = run(lambda api: api.COCO(gt), OURS)
    return gt, coco


def test_results_on_an_unknown_image(small_gt):
    gt, coco = small_gt
    bad = max(image["id"] for image in gt["images"]) + 1
    results = [{"image_id": bad, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1.0}]
    with pytest.raises(ResultsError, match=f"image_id {bad} is not an image") as info:
        run(lambda api: coco.loadRes(results), OURS)
    assert isinstance(info.value, AssertionError)     # what pycocotools raises there
    assert "results[0]" in str(info.value)


@pytest.mark.parametrize("results, message", [
    ({"image_id": 1}, "must be a list of objects"),
    ([], "results list is empty"),
    ([{"image_id": 1, "score": 1.0}], "cannot tell what the results are"),
    ([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1], "score": 1}], "results\\[0\\]"),
    (np.zeros((2, 6)), "shape \\(N, 7\\)"),
])
def test_bad_results(small_gt, results, message):
    _, coco = small_gt
    with pytest.raises(ResultsError, match=message):
        run(lambda api: coco.loadRes(results), OURS)


def test_bad_files(tmp_path):
    with pytest.raises(deteval.FormatError, match="does not exist"):
        run(lambda api: api.COCO(str(tmp_path / "missing.json")), OURS)
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(deteval.FormatError, match="list.json.*not supported"):
        run(lambda api: api.COCO(str(tmp_path / "list.json")), OURS)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(deteval.FormatError, match="broken.json.*not valid JSON"):
        run(lambda api: api.COCO(str(tmp_path / "broken.json")), OURS)


def test_ground_truth_that_cannot_be_evaluated(tmp_path):
    gt, results = make_dataset(3, n_images=2)
    gt = copy.deepcopy(gt)
    gt["annotations"][1]["bbox"] = [1, 2, 3]
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    coco, _ = run(lambda api: api.COCO(str(path)), OURS)      # pycocotools reads it too
    assert coco.anns[gt["annotations"][1]["id"]]["bbox"] == [1, 2, 3]
    evaluator = COCOeval(coco, None, "bbox")
    evaluator.cocoDt = COCO()
    with pytest.raises(deteval.FormatError,
                       match=r"cannot be evaluated.*gt.json: annotations\[1\].*bbox"):
        run(lambda api: evaluator.evaluate(), OURS)


def test_info_prints_as_pycocotools():
    gt, _ = make_dataset(3, n_images=2)
    mine, theirs = run(lambda api: api.COCO(copy.deepcopy(gt)).info(), OURS)[1], \
        run(lambda api: _real_coco(gt).info(), REAL)[1]
    assert mine.splitlines()[-1] == theirs.splitlines()[-1] == "description: cocogen seed 3"


def _real_coco(gt):
    coco = REAL.COCO()
    coco.dataset = copy.deepcopy(gt)
    coco.createIndex()
    return coco


def test_order_of_steps(small_gt):
    gt, coco = small_gt
    evaluator = COCOeval(coco, None, "bbox")
    with pytest.raises(RuntimeError, match="accumulate"):
        evaluator.summarize()
    with pytest.raises(RuntimeError, match="evaluate"):
        run(lambda api: evaluator.accumulate(), OURS)
    with pytest.raises(ValueError, match="cocoDt is None"):
        run(lambda api: evaluator.evaluate(), OURS)
    with pytest.raises(ValueError, match="iouType not supported"):
        COCOeval(coco, None, "boxes")


def test_unsupported_methods(small_gt):
    _, coco = small_gt
    with pytest.raises(NotSupportedError, match="showAnns is not supported by deteval.compat"):
        coco.showAnns([])
    with pytest.raises(NotImplementedError, match="download"):
        coco.download("/tmp")


def test_bad_params_are_named(small_gt):
    gt, coco = small_gt
    _, results = make_dataset(3, n_images=2)
    evaluator, _ = run(lambda api: COCOeval(coco, coco.loadRes(results), "bbox"), OURS)
    evaluator.params.iouThrs = [0.5, float("nan")]
    with pytest.raises(ValueError, match="COCOeval.params cannot be evaluated: iou_thresholds"):
        run(lambda api: evaluator.evaluate(), OURS)


# ---------------------------------------------------------------------------------------------
# init_as_pycocotools: third-party code that imports pycocotools
# ---------------------------------------------------------------------------------------------


def test_init_as_pycocotools_in_a_fresh_process():
    gt, results = make_dataset(17, n_images=4)
    code = textwrap.dedent(f"""
        import contextlib, io, json, sys
        import deteval.compat
        deteval.compat.init_as_pycocotools()
        deteval.compat.init_as_pycocotools()
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
        import pycocotools.mask as mask_util
        from pycocotools import mask as coco_mask
        assert COCO is deteval.compat.COCO and COCOeval is deteval.compat.COCOeval
        assert mask_util is coco_mask is deteval.compat.mask
        gt, results = json.loads({json.dumps(json.dumps([gt, results]))})
        with contextlib.redirect_stdout(io.StringIO()):
            coco = COCO(); coco.dataset = gt; coco.createIndex()
            E = COCOeval(coco, coco.loadRes(results), "bbox")
            E.evaluate(); E.accumulate(); E.summarize()
        print(json.dumps(E.stats.tolist()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=None)
    stats = json.loads(out.stdout.splitlines()[-1])
    theirs, _ = run(standard(gt, results, "bbox"), REAL)
    assert stats == theirs.stats.tolist()


def test_init_and_undo_in_process():
    import pycocotools.cocoeval as before
    deteval.compat.init_as_pycocotools()
    try:
        import pycocotools
        import pycocotools.cocoeval
        assert pycocotools.cocoeval.COCOeval is COCOeval
        assert getattr(pycocotools, "__version__", "0") == "0"   # as the real package
        from pycocotools import _mask  # the C routines stay reachable
        assert hasattr(_mask, "iou")
    finally:
        deteval.compat.uninstall_pycocotools()
    import pycocotools.cocoeval as after
    assert after is before and after.COCOeval is REAL.COCOeval


# ---------------------------------------------------------------------------------------------
# Less common settings
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tweak", [
    _set(useSegm=0), _set(imgIds=[]), _set(catIds=[]), _set(imgIds=[10 ** 9]),
    _set(areaRng=[[0, 1e10]], areaRngLbl=["all"], maxDets=[1, 10, 100]),
])
def test_edge_params(tweak):
    gt, results = make_dataset(51, n_images=4, p_many=0.1)
    run_both(standard(gt, results, "segm", tweak))


def test_real_pycocotools_objects_are_read_through_their_dataset():
    gt, results = make_dataset(53, n_images=4)
    run_both(standard(gt, results, "bbox", coco_api=REAL))


def test_str_prints_the_summary():
    gt, results = make_dataset(55, n_images=3)
    evaluator, _ = run(standard(gt, results, "bbox"), OURS)
    mine, theirs = run(lambda api: str(evaluator), OURS)
    assert mine == "" and len(theirs.splitlines()) == 12


def test_copies_and_pickles_keep_the_lazy_records():
    import pickle

    gt, results = make_dataset(57, n_images=3)

    def evaluated(api):
        coco_gt = api.COCO(copy.deepcopy(gt))
        evaluator = api.COCOeval(coco_gt, coco_gt.loadRes(copy.deepcopy(results)), "bbox")
        evaluator.evaluate()
        return evaluator
    evaluator, _ = run(evaluated, OURS)
    theirs, _ = run(lambda api: standard(gt, results, "bbox")(api), REAL)
    for clone in (copy.deepcopy(evaluator), pickle.loads(pickle.dumps(evaluator))):
        assert_same_eval_imgs(clone.evalImgs, theirs.evalImgs)
        run(lambda api, clone=clone: clone.accumulate(), OURS)
        assert np.array_equal(clone.eval["precision"], theirs.eval["precision"])
