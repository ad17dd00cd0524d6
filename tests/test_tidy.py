"""The tidy export (deteval/tidy.py, docs/tidy-export.md): its columns against the match
table, the outcomes and IoUs computed independently (pycocotools' box IoU, the hand-built
scene's boxes), and the CSV, Parquet, pandas and Arrow forms against each other."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from clirun import run as _run
from cocogen import make_dataset
from scenes import BIRD, CAT, DOG, box, scene

import deteval
from deteval.tidy import TIDY_COLUMNS, Coded, tidy_columns, to_arrow, to_frame, write_table

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

STATUS = {-1: "not_evaluated", 0: "fp", 1: "tp", 2: "ignored"}
GT_STATUS = {-1: "not_evaluated", 0: "fn", 1: "tp", 2: "ignored"}


def _values(column) -> list:
    return column.values().tolist() if isinstance(column, Coded) else column.tolist()


@pytest.fixture(scope="module")
def hand_scene():
    # image 0: a cat at A, a dog at B; cat detections: exact A, a shorter A, B's box, A
    # shifted by 3; a bird on background.
    a, b = box(0, 0), box(50, 50)
    return scene([(0, CAT, a), (0, DOG, b)],
                 [(0, CAT, a, 0.9), (0, CAT, [0, 0, 10, 9], 0.8), (0, CAT, b, 0.7),
                  (0, CAT, box(3, 3), 0.6), (0, BIRD, box(200, 200), 0.5)])


def test_hand_scene_rows(hand_scene):
    columns = tidy_columns(deteval.evaluate_coco(*hand_scene))
    assert tuple(columns) == TIDY_COLUMNS
    assert _values(columns["kind"]) == ["detection"] * 5 + ["gt"] * 2
    assert columns["row"].tolist() == [0, 1, 2, 3, 4, 0, 1]
    assert _values(columns["category"]) == ["cat"] * 4 + ["bird", "cat", "dog"]
    assert _values(columns["status"]) == ["tp", "fp", "fp", "fp", "fp", "tp", "fn"]
    assert columns["match_row"].tolist() == [0, -1, -1, -1, -1, 0, -1]
    assert columns["match_id"].tolist() == [1, -1, -1, -1, -1, 1, -1]   # default ids 1..n
    assert _values(columns["outcome"]) == ["tp", "duplicate", "wrong_class", "localization",
                                           "background", "tp", "missed"]
    assert columns["outcome_row"].tolist() == [0, 0, 1, 0, -1, 0, -1]
    # IoUs from the boxes: 100/100, 90/100, 100/100, 49/151
    expected = [1.0, 0.9, 1.0, 49 / 151, np.nan, 1.0, np.nan]
    assert np.allclose(columns["outcome_iou"], expected, rtol=0, atol=1e-15, equal_nan=True)
    assert np.allclose(columns["iou"], [1.0] + [np.nan] * 4 + [1.0, np.nan], equal_nan=True)
    assert np.isnan(columns["score"][5:]).all() and columns["score"][:5].tolist() == [
        0.9, 0.8, 0.7, 0.6, 0.5]
    assert _values(columns["area_range"]) == ["small"] * 7      # areas 100 and 90
    assert columns["iou_threshold"].tolist() == [0.5] * 7


def _random_result(seed: int, **params):
    gt, results = make_dataset(seed, n_images=6, n_categories=3, p_many=0.05)
    return gt, results, deteval.evaluate_coco(gt, results, **params)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_columns_equal_the_match_table_and_pycocotools_iou(seed):
    from pycocotools import mask as mask_utils

    gt, results, result = _random_result(seed)
    table, dt, objects = result.matches, result.detections, result.dataset.gt
    n_dt, n_gt, n_t = len(dt), len(objects), len(table.iou_thresholds)
    columns = tidy_columns(result, iou_threshold="all", outcomes=False)
    assert len(columns["row"]) == n_t * (n_dt + n_gt)
    status = np.array(_values(columns["status"]), dtype=object).reshape(n_t, -1)
    match_row = columns["match_row"].reshape(n_t, -1)
    iou = columns["iou"].reshape(n_t, -1)
    for t in range(n_t):
        assert status[t, :n_dt].tolist() == [STATUS[s] for s in
                                             table.detection_status()[t].tolist()]
        assert status[t, n_dt:].tolist() == [GT_STATUS[s] for s in
                                             table.gt_status()[t].tolist()]
        assert np.array_equal(match_row[t, :n_dt], table.detection_matches()[t])
        assert np.array_equal(match_row[t, n_dt:], table.gt_matches()[t])
        # the IoU of each match, by pycocotools' own routine on the xywh boxes
        rows = np.flatnonzero(match_row[t, :n_dt] >= 0)
        g = match_row[t, rows]
        theirs = [mask_utils.iou([dt.as_xywh()[d].tolist()], [objects.as_xywh()[k].tolist()],
                                 [int(objects.iscrowd[k])])[0, 0] for d, k in zip(rows, g)]
        assert np.allclose(iou[t, rows], theirs, rtol=0, atol=1e-12)
        assert np.isnan(iou[t, :n_dt][match_row[t, :n_dt] < 0]).all()
    assert np.array_equal(columns["iou_threshold"].reshape(n_t, -1)[:, 0],
                          table.iou_thresholds)
    # ids and names from the input dicts
    image_id = {i: img["id"] for i, img in enumerate(gt["images"])}
    assert columns["image_id"][n_dt:n_dt + n_gt].tolist() == [
        image_id[i] for i in objects.image_index.tolist()]
    ann_ids = [a["id"] for a in gt["annotations"]]
    matched = match_row[0, :n_dt] >= 0
    assert columns["match_id"][:n_dt][matched].tolist() == [
        ann_ids[k] for k in match_row[0, :n_dt][matched].tolist()]


def _nan_as_none(values: list) -> list:
    return [None if isinstance(v, float) and v != v else v for v in values]


def test_a_repeated_threshold_gives_a_block_per_entry():
    """``iou_threshold="all"`` writes one block per entry of ``iou_thresholds``, a repeated
    one twice with the same ``iou_threshold`` (as pycocotools' arrays hold its row twice);
    a number picks the first block of that threshold (docs/tidy-export.md §1)."""
    _, _, result = _random_result(3, iou_thresholds=(0.5, 0.5, 0.75))
    every = tidy_columns(result, iou_threshold="all")
    n = len(result.detections) + len(result.dataset.gt)
    assert len(every["row"]) == 3 * n
    assert every["iou_threshold"][::n].tolist() == [0.5, 0.5, 0.75]
    for t, picked in ((0, 0.5), (1, 0.5), (2, 0.75)):
        one = tidy_columns(result, iou_threshold=picked)
        for name, column in every.items():
            block, theirs = _values(column)[t * n:(t + 1) * n], _values(one[name])
            assert _nan_as_none(block) == _nan_as_none(theirs), name


def test_outcome_columns_equal_match_outcomes():
    gt, results, result = _random_result(3)
    n_dt = len(result.detections)
    columns = tidy_columns(result, iou_threshold=0.75)
    found = deteval.match_outcomes(gt, results, iou_threshold=0.75)
    assert _values(columns["outcome"])[:n_dt] == list(found.dt_outcome_names)
    assert _values(columns["outcome"])[n_dt:] == list(found.gt_outcome_names)
    assert np.array_equal(columns["outcome_row"], np.r_[found.dt_gt, found.gt_dt])
    assert np.array_equal(columns["outcome_iou"][:n_dt], found.dt_iou, equal_nan=True)
    assert (columns["iou_threshold"] == 0.75).all()


def test_frame_and_arrow_hold_the_columns():
    _, _, result = _random_result(4)
    columns = tidy_columns(result)
    frame = result.to_frame()
    table = result.to_arrow()
    assert list(frame.columns) == list(TIDY_COLUMNS) == table.column_names
    assert len(frame) == len(result.detections) + len(result.dataset.gt) == table.num_rows
    for name, value in columns.items():
        arrow = table.column(name).to_pylist()
        if isinstance(value, Coded):
            mine = _values(value)
            assert frame[name].astype(object).where(frame[name].notna(), None).tolist() == \
                mine, name
            assert arrow == mine, name
        else:
            floats = value.dtype.kind == "f"
            assert np.array_equal(frame[name].to_numpy(), value, equal_nan=floats), name
            if floats:     # NaN is a null in Arrow
                arrow = [np.nan if v is None else v for v in arrow]
            assert np.array_equal(np.array(arrow, dtype=value.dtype), value,
                                  equal_nan=floats), name
    assert isinstance(frame["status"].dtype, pd.CategoricalDtype)


def _read_csv(path):
    return pd.read_csv(path, keep_default_na=False,
                       na_values=[""], dtype={"file_name": str, "category": str})


def test_csv_reads_back_as_the_frame(tmp_path):
    _, _, result = _random_result(5)
    frame = result.to_frame(iou_threshold="all")
    path = tmp_path / "rows.csv"
    write_table(result, path, iou_threshold="all")
    back = _read_csv(path)
    assert list(back.columns) == list(frame.columns) and len(back) == len(frame)
    for name in frame.columns:
        mine = frame[name]
        if isinstance(mine.dtype, pd.CategoricalDtype):
            mine = mine.astype(object).where(mine.notna(), None)
            theirs = back[name].astype(object).where(back[name].notna(), None)
            assert theirs.tolist() == mine.tolist(), name
        else:
            assert np.array_equal(back[name].to_numpy(), mine.to_numpy(),
                                  equal_nan=mine.dtype.kind == "f"), name


def test_parquet_reads_back_as_the_arrow_table(tmp_path):
    _, _, result = _random_result(6)
    path = tmp_path / "rows.parquet"
    write_table(result, path)
    assert pq.read_table(path).equals(to_arrow(result))
    assert pd.read_parquet(path).equals(to_frame(result))


def test_voc_result_columns():
    gt, results, _ = _random_result(7)
    result = deteval.evaluate_voc(gt, results)
    table = result.matches
    n_dt = len(result.detections)
    columns = tidy_columns(result, outcomes=False)
    assert _values(columns["status"])[:n_dt] == [STATUS[s] for s in
                                                 table.detection_status()[0].tolist()]
    rows = np.flatnonzero(columns["match_row"][:n_dt] >= 0)
    assert np.array_equal(columns["match_row"][rows], table.dt_best_gt[rows])
    assert np.array_equal(columns["iou"][rows], table.dt_best_iou[rows])
    assert np.array_equal(columns["score"][:n_dt], result.scores)
    assert "outcome" not in columns
    assert len(result.to_frame()) == n_dt + len(result.dataset.gt)


def test_errors():
    gt, results, result = _random_result(8)
    with pytest.raises(ValueError, match="was not evaluated") as info:
        tidy_columns(result, iou_threshold=0.42)
    assert ", 0.9, " in str(info.value) and "0.8999" not in str(info.value)   # as COCO names it
    with pytest.raises(ValueError, match="'all'"):
        tidy_columns(result, iou_threshold="every")
    evaluator = deteval.Evaluator(result.dataset, unknown_labels="drop")
    evaluator.update(results)
    with pytest.raises(ValueError, match="no match table"):
        tidy_columns(evaluator.compute())
    with pytest.raises(ValueError, match="suffix"):
        write_table(result, "rows.txt")
    with pytest.raises(TypeError, match="COCOResult or VOCResult"):
        tidy_columns(result.stats)
    # COCO's 0.9 is stored as 0.8999999999999999: found within 1e-9
    assert (tidy_columns(result, iou_threshold=0.9, outcomes=False)["iou_threshold"]
            == 0.8999999999999999).all()


def test_missing_pyarrow_names_the_extra(monkeypatch, tmp_path):
    _, _, result = _random_result(9)
    monkeypatch.setitem(sys.modules, "pyarrow", None)        # import pyarrow fails
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r"pip install 'deteval\[frame\]'"):
        to_arrow(result)
    with pytest.raises(ImportError, match=r"deteval\[frame\]"):
        write_table(result, tmp_path / "rows.parquet")
    write_table(result, tmp_path / "rows.csv")                # CSV needs no pyarrow
    monkeypatch.undo()
    assert len(_read_csv(tmp_path / "rows.csv")) == len(result.detections) + len(
        result.dataset.gt)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tidy")
    gt, results = make_dataset(11, n_images=5, n_categories=3)
    paths = {"gt": folder / "gt.json", "dt": folder / "dt.json"}
    paths["gt"].write_text(json.dumps(gt))
    paths["dt"].write_text(json.dumps(results))
    return paths


def test_cli_table_csv_and_parquet(files, tmp_path):
    result = deteval.evaluate_coco(files["gt"], files["dt"])
    csv_path, parquet_path = tmp_path / "rows.csv", tmp_path / "rows.parquet"
    assert _run("coco", files["gt"], files["dt"], "--table", csv_path)[0] == 0
    expected = tmp_path / "expected.csv"
    write_table(result, expected)
    assert csv_path.read_bytes() == expected.read_bytes()
    assert _run("coco", files["gt"], files["dt"], "--table", parquet_path, "--table-iou",
                "all")[0] == 0
    assert pq.read_table(parquet_path).equals(to_arrow(result, iou_threshold="all"))


def test_cli_table_voc_and_eval(files, tmp_path):
    voc, via_eval = tmp_path / "voc.csv", tmp_path / "eval.csv"
    assert _run("voc", files["gt"], files["dt"], "--table", voc)[0] == 0
    assert _run("eval", "--protocol", "voc2012", files["gt"], files["dt"], "--table",
                via_eval)[0] == 0
    assert voc.read_bytes() == via_eval.read_bytes()
    n = len(_read_csv(voc))
    result = deteval.evaluate_voc(files["gt"], files["dt"])
    assert n == len(result.detections) + len(result.dataset.gt)


@pytest.mark.parametrize(("extra", "message"), [
    (["--table", "rows.txt"], "suffix must be .csv or .parquet"),
    (["--table-iou", "all"], "--table-iou needs --table"),
    (["--table", "rows.csv", "--table-iou", "0.33"], "0.33 was not evaluated"),
    (["--table", "rows.csv", "--table-iou", "half"], "an IoU threshold or 'all'"),
])
def test_cli_table_usage_errors(files, tmp_path, extra, message):
    argv = [a if not a.startswith("rows.") else tmp_path / a for a in extra]
    status, _, err = _run("coco", files["gt"], files["dt"], *argv)
    assert status == 2 and message in err
    assert not list(tmp_path.iterdir())


def test_cli_table_refuses_to_overwrite_an_input(files):
    status, _, err = _run("coco", files["gt"], files["dt"], "--table", files["gt"])
    assert status != 0 and "refusing to overwrite" in err


def test_cli_parquet_without_pyarrow(files, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    status, _, err = _run("coco", files["gt"], files["dt"], "--table", tmp_path / "r.parquet")
    assert status != 0 and "deteval[frame]" in err
    assert not list(tmp_path.iterdir())


def test_segm_iou_is_pycocotools_mask_iou(coco100_dir):
    from pycocotools import mask as mask_utils

    result = deteval.evaluate_coco(coco100_dir / "instances_val2014_100.json",
                                   coco100_dir / "instances_val2014_fakesegm100_results.json",
                                   iou_type="segm")
    columns = tidy_columns(result, outcomes=False)
    n_dt = len(result.detections)
    rows = np.flatnonzero(columns["match_row"][:n_dt] >= 0)[:60]
    objects = columns["match_row"][rows]
    dt_masks, gt = result.detections.masks, result.dataset.gt
    theirs = [mask_utils.iou([dt_masks[d]], [gt.masks[g]], [int(gt.iscrowd[g])])[0, 0]
              for d, g in zip(rows.tolist(), objects.tolist())]
    assert len(rows) == 60
    assert np.array_equal(columns["iou"][rows], theirs)
