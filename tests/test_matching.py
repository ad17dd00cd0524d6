"""Tests of the greedy matcher (deteval.matching): hand-computed cases, worked example B of
docs/protocols/coco.md §6.5, the MatchTable views and exports, and a comparison with the
literal loop of
``reference.reference_greedy_match`` on seeded random groups of groups.
"""

from __future__ import annotations

import csv
import io
import json
import warnings

import numpy as np
import pytest
from cocogen import assert_parity, make_dataset, run_pycocotools
from reference import reference_greedy_match

import deteval
from deteval.matching import FN, FP, IGNORED, NOT_EVALUATED, TP, MatchTable, match_detections

COCO_THRESHOLDS = np.linspace(0.5, 0.95, 10)
ALL = (0.0, 1e10)
SMALL = (0.0, 1024.0)
X = NOT_EVALUATED  # short for the tables below


def matcher_inputs(ious, scores, *, crowd=None, ignore=None, gt_area=None, dt_area=None,
                   thresholds=(0.5,), area_ranges=(ALL,), max_detections=100, tie_order=None,
                   dt_group=None, gt_group=None) -> dict:
    """Keyword arguments of ``match_detections`` for a dense IoU matrix (rows: detections).

    By default everything is one group; ``ignore`` defaults to ``crowd`` (the COCO rule).
    """
    scores = np.asarray(scores, dtype=np.float64)
    n_dt = len(scores)
    ious = np.asarray(ious, dtype=np.float64)
    ious = ious if ious.ndim == 2 else ious.reshape(n_dt, 0)  # [] for no detections, no GT
    n_gt = ious.shape[1]
    crowd = np.zeros(n_gt, bool) if crowd is None else np.asarray(crowd, bool)
    ignore = crowd.copy() if ignore is None else np.asarray(ignore, bool)
    dt_group = np.zeros(n_dt, np.int64) if dt_group is None else np.asarray(dt_group)
    gt_group = np.zeros(n_gt, np.int64) if gt_group is None else np.asarray(gt_group)

    def similarity(d_rows, g_rows):
        assert (dt_group[d_rows] == gt_group[g_rows]).all(), "pair across groups"
        assert (dt_group[d_rows] >= 0).all() and (gt_group[g_rows] >= 0).all()
        return ious[d_rows, g_rows]

    return dict(
        dt_group=dt_group, dt_scores=scores,
        dt_tie_key=None if tie_order is None else np.asarray(tie_order),
        dt_area=np.full(n_dt, 100.0) if dt_area is None else np.asarray(dt_area, float),
        gt_group=gt_group, gt_crowd=crowd, gt_ignore=ignore,
        gt_area=np.full(n_gt, 100.0) if gt_area is None else np.asarray(gt_area, float),
        similarity=similarity, iou_thresholds=np.asarray(thresholds, float),
        area_ranges=np.asarray(area_ranges, float), max_detections=max_detections)


def assert_same_as_reference(table: MatchTable, inputs: dict, *, crowd_gt_matches=True) -> None:
    """The dense views of ``table`` equal the literal loop, for every area range."""
    expected = reference_greedy_match(**inputs)
    columns = (np.ones(table.n_gt, bool) if crowd_gt_matches
               else ~np.asarray(inputs["gt_crowd"], bool))
    for a, views in enumerate(expected):
        assert np.array_equal(table.detection_matches(a), views["detection_matches"]), a
        assert np.array_equal(table.detection_status(a), views["detection_status"]), a
        assert np.array_equal(table.gt_status(a), views["gt_status"]), a
        assert np.array_equal(table.gt_matches(a)[:, columns],
                              views["gt_matches"][:, columns]), a


# --------------------------------------------------------------------------------------------
# Hand-computed cases
# --------------------------------------------------------------------------------------------

# Each case: matcher inputs, then per area range the expected detection_matches and
# detection_status (rows: thresholds; columns: detections in input order).
HAND_CASES = [
    pytest.param(
        matcher_inputs([[0.9], [0.8], [0.7]], [0.9, 0.8, 0.7], crowd=[True]),
        [([[0, 0, 0]], [[IGNORED] * 3])],
        id="crowd-absorbs-duplicates"),
    pytest.param(
        matcher_inputs([[0.9], [0.8], [0.7]], [0.9, 0.8, 0.7]),
        [([[0, -1, -1]], [[TP, FP, FP]])],
        id="regular-object-matched-once"),
    pytest.param(
        # rows: crowd, regular. d0 prefers the regular object although the crowd has the
        # higher IoU; d1 then falls back to the crowd; d2 overlaps nothing enough.
        matcher_inputs([[0.9, 0.6], [0.9, 0.6], [0.3, 0.2]], [0.9, 0.8, 0.7],
                       crowd=[True, False]),
        [([[1, 0, -1]], [[TP, IGNORED, FP]])],
        id="crowd-after-regular"),
    pytest.param(
        # rows: regular, ignored (not crowd). d1 falls back to the ignored object; an ignored
        # non-crowd object is taken once, so d2 is a false positive.
        matcher_inputs([[0.8, 0.6], [0.7, 0.6], [0.7, 0.9]], [0.9, 0.8, 0.7],
                       ignore=[False, True]),
        [([[0, 1, -1]], [[TP, IGNORED, FP]])],
        id="ignored-object-fallback"),
    pytest.param(
        # rows: crowd (first in file order), regular. At 0.5 the scan stops at the ignored
        # crowd once the regular object matched; at 0.6 only the crowd qualifies.
        matcher_inputs([[0.95, 0.55]], [0.9], crowd=[True, False], thresholds=(0.5, 0.6)),
        [([[1], [0]], [[TP], [IGNORED]])],
        id="stop-at-ignored"),
    pytest.param(
        matcher_inputs([[0.6, 0.8, 0.7]], [0.9]),
        [([[1]], [[TP]])],
        id="highest-iou-wins"),
    pytest.param(
        matcher_inputs([[0.7, 0.7], [0.7, 0.7]], [0.9, 0.8]),
        [([[1, 0]], [[TP, TP]])],
        id="iou-tie-later-object-wins"),
    pytest.param(
        matcher_inputs([[0.7, 0.7, 0.6]], [0.9], ignore=[True, True, False]),
        # the regular object (row 2) wins although the ignored ones have a higher IoU
        [([[2]], [[TP]])],
        id="regular-beats-ignored-with-higher-iou"),
    pytest.param(
        matcher_inputs([[0.7, 0.7]], [0.9], ignore=[True, True]),
        [([[1]], [[IGNORED]])],
        id="iou-tie-among-ignored-later-wins"),
    pytest.param(
        matcher_inputs([[0.8], [0.9]], [0.5, 0.5]),
        [([[0, -1]], [[TP, FP]])],
        id="score-tie-input-order"),
    pytest.param(
        matcher_inputs([[0.8], [0.9]], [0.5, 0.5], tie_order=[1, 0]),
        [([[-1, 0]], [[FP, TP]])],
        id="score-tie-tie-order"),
    pytest.param(
        matcher_inputs([[0.9], [0.6]], [0.3, 0.9]),
        [([[-1, 0]], [[FP, TP]])],
        id="higher-score-first"),
    pytest.param(
        # d0 would match object 0 but is the lowest of three scores with max_detections=2
        matcher_inputs([[0.9, 0.0], [0.0, 0.9], [0.6, 0.0]], [0.5, 0.9, 0.7], max_detections=2),
        [([[-1, 1, 0]], [[X, TP, TP]])],
        id="max-detections-truncation"),
    pytest.param(
        matcher_inputs([[0.9], [0.9], [0.9]], [0.5, 0.5, 0.5], max_detections=1,
                       tie_order=[2, 1, 0]),
        [([[-1, -1, 0]], [[X, X, TP]])],
        id="max-detections-score-ties"),
    pytest.param(
        # area ranges all and small; the object (area 500) is small; d0 (area 2000) matches
        # it and is a TP in "small" whatever its own area; d1 (area 2000) is unmatched and
        # outside "small": ignored there; d2 (area 500) is unmatched inside "small": FP.
        matcher_inputs([[0.8], [0.1], [0.2]], [0.9, 0.8, 0.7], gt_area=[500],
                       dt_area=[2000, 2000, 500], area_ranges=(ALL, SMALL)),
        [([[0, -1, -1]], [[TP, FP, FP]]), ([[0, -1, -1]], [[TP, IGNORED, FP]])],
        id="area-range-ignores-unmatched-detections"),
    pytest.param(
        # the object (area 2000) is outside "small": ignored there, so its match is ignored
        matcher_inputs([[0.8]], [0.9], gt_area=[2000], dt_area=[500], area_ranges=(ALL, SMALL)),
        [([[0]], [[TP]]), ([[0]], [[IGNORED]])],
        id="area-range-object-out-of-range"),
    pytest.param(
        # range bounds are inclusive: area 1024 is small for objects and detections alike
        matcher_inputs([[0.8], [0.0]], [0.9, 0.8], gt_area=[1024], dt_area=[1024, 1024],
                       area_ranges=(SMALL, (1024.0, 9216.0))),
        [([[0, -1]], [[TP, FP]]), ([[0, -1]], [[TP, FP]])],
        id="area-bounds-inclusive"),
    pytest.param(
        # the out-of-range object is matched only as a fallback (ignored), after the
        # in-range one is taken
        matcher_inputs([[0.6, 0.9], [0.6, 0.9]], [0.9, 0.8], gt_area=[500, 5000],
                       area_ranges=(SMALL,)),
        [([[0, 1]], [[TP, IGNORED]])],
        id="area-out-of-range-object-is-fallback"),
    pytest.param(
        matcher_inputs([[0.9], [0.9]], [0.9, 0.8], dt_group=[-1, 0]),
        [([[-1, 0]], [[X, TP]])],
        id="detection-not-evaluated"),
    pytest.param(
        matcher_inputs([[0.9, 0.8]], [0.9], gt_group=[-1, 0]),
        [([[1]], [[TP]])],
        id="object-not-evaluated"),
    pytest.param(
        # two groups: the detections of group 7 only see the object of group 7
        matcher_inputs([[0.9, 0.0], [0.0, 0.6], [0.0, 0.9]], [0.9, 0.8, 0.7],
                       dt_group=[3, 7, 7], gt_group=[3, 7]),
        [([[0, 1, -1]], [[TP, TP, FP]])],
        id="groups-are-independent"),
    pytest.param(
        matcher_inputs([], []),
        [(np.zeros((1, 0)), np.zeros((1, 0)))],
        id="empty"),
    pytest.param(
        matcher_inputs(np.zeros((0, 2)), [], gt_area=[100, 5000], area_ranges=(ALL, SMALL)),
        [(np.zeros((1, 0)), np.zeros((1, 0))), (np.zeros((1, 0)), np.zeros((1, 0)))],
        id="no-detections"),
    pytest.param(
        matcher_inputs(np.zeros((2, 0)), [0.9, 0.8], dt_area=[100, 5000],
                       area_ranges=(ALL, SMALL)),
        [([[-1, -1]], [[FP, FP]]), ([[-1, -1]], [[FP, IGNORED]])],
        id="no-objects"),
]


@pytest.mark.parametrize(("inputs", "expected"), HAND_CASES)
def test_hand_cases(inputs, expected):
    table = match_detections(**inputs)
    for a, (matches, status) in enumerate(expected):
        assert table.detection_matches(a).tolist() == np.asarray(matches).tolist()
        assert table.detection_status(a).tolist() == np.asarray(status).tolist()
    assert_same_as_reference(table, inputs)


@pytest.mark.parametrize(
    ("iou", "n_matched"),
    [
        pytest.param(0.5, 1, id="0.5-on-first-threshold"),
        pytest.param(0.49999999999999994, 0, id="just-below-0.5"),
        pytest.param(0.75, 6, id="0.75-on-threshold"),
        pytest.param(0.7499999999999999, 5, id="just-below-0.75"),
        pytest.param(0.8999999999999999, 9, id="on-linspace-0.9"),
        pytest.param(0.9, 9, id="0.9-passes-0.8999999999999999"),
        pytest.param(0.95, 10, id="0.95-on-last-threshold"),
        pytest.param(1.0, 10, id="perfect"),
    ],
)
def test_iou_exactly_on_a_threshold(iou, n_matched):
    table = match_detections(**matcher_inputs([[iou]], [0.9], thresholds=COCO_THRESHOLDS))
    assert table.detection_matches()[:, 0].tolist() == [0] * n_matched + [-1] * (10 - n_matched)


@pytest.mark.parametrize(
    ("iou", "matched"),
    [
        pytest.param(1.0, True, id="perfect"),
        pytest.param(1 - 1e-10, True, id="on-the-cap"),
        pytest.param(1 - 2e-10, False, id="below-the-cap"),
    ],
)
def test_threshold_one_is_capped(iou, matched):
    # pycocotools starts the scan at min(t, 1 - 1e-10)
    table = match_detections(**matcher_inputs([[iou]], [0.9], thresholds=(1.0,)))
    assert table.detection_matches().tolist() == [[0 if matched else -1]]


def test_gt_status_of_a_mixed_image():
    inputs = matcher_inputs([[0.9, 0.0, 0.0, 0.0], [0.0, 0.0, 0.7, 0.0]], [0.9, 0.8],
                            crowd=[False, False, True, False], gt_group=[0, 0, 0, -1],
                            thresholds=(0.5, 0.8))
    table = match_detections(**inputs)
    assert table.gt_status().tolist() == [[TP, FN, IGNORED, X], [TP, FN, IGNORED, X]]
    assert table.gt_matches().tolist() == [[0, -1, 1, -1], [0, -1, -1, -1]]
    assert table.detection_status().tolist() == [[TP, IGNORED], [TP, FP]]


def test_crowd_gt_matches_lists_the_last_matched_detection():
    # rows by score: d1 (0.9), d2 (0.7), d0 (0.5); d0 is the last to be absorbed
    inputs = matcher_inputs([[0.9], [0.8], [0.7]], [0.5, 0.9, 0.7], crowd=[True])
    assert match_detections(**inputs).gt_matches().tolist() == [[0]]


# --------------------------------------------------------------------------------------------
# Worked example B (docs/protocols/coco.md §6.5)
# --------------------------------------------------------------------------------------------

# GT in file order: g11 (crowd), g12, g13 -> rows 0, 1, 2. IoU columns in file order.
EXAMPLE_B_IOUS = {"d1": (0.9, 0.6, 0.7), "d2": (0.3, 0.55, 0.8), "d3": (0.6, 0.52, 0.1)}
EXAMPLE_B_SCORES = {"d1": 0.9, "d2": 0.8, "d3": 0.7}
GT_IDS = np.array([11, 12, 13])


@pytest.mark.parametrize("order", [pytest.param(("d1", "d2", "d3"), id="score-order"),
                                   pytest.param(("d3", "d1", "d2"), id="shuffled")])
def test_worked_example_b(order):
    inputs = matcher_inputs([EXAMPLE_B_IOUS[d] for d in order],
                            [EXAMPLE_B_SCORES[d] for d in order], crowd=[True, False, False],
                            thresholds=(0.5, 0.75))
    table = match_detections(**inputs)
    back = [order.index(d) for d in ("d1", "d2", "d3")]  # columns in d1, d2, d3 order
    matches = table.detection_matches()[:, back]
    status = table.detection_status()[:, back]
    matched_ids = np.where(matches >= 0, GT_IDS[matches], 0)
    # docs/protocols/coco.md §6.5: t=.5: [13, 12, 11], ignored [F, F, T]; t=.75: [11, 13, 0],
    # ignored [T, F, F] (d3 is a false positive at .75)
    assert matched_ids.tolist() == [[13, 12, 11], [11, 13, 0]]
    assert status.tolist() == [[TP, TP, IGNORED], [IGNORED, TP, FP]]
    assert table.gt_status().tolist() == [[IGNORED, TP, TP], [IGNORED, FN, TP]]
    assert table.dt_rank[back].tolist() == [0, 1, 2]
    assert_same_as_reference(table, inputs)


# --------------------------------------------------------------------------------------------
# MatchTable views and exports
# --------------------------------------------------------------------------------------------


@pytest.fixture
def table() -> MatchTable:
    # rows: a small object (area 500), a large one (area 20000), a crowd region.
    # d0 matches the small object at both thresholds; d1 matches the large one only at 0.5;
    # d2 is absorbed by the crowd; d3 (area 50) overlaps nothing; d4 is beyond max_detections.
    ious = [[0.9, 0.0, 0.0], [0.0, 0.6, 0.0], [0.0, 0.0, 0.8], [0.1, 0.1, 0.1], [0.9, 0.9, 0.9]]
    inputs = matcher_inputs(ious, [0.9, 0.8, 0.7, 0.6, 0.1], crowd=[False, False, True],
                            gt_area=[500, 20000, 900], dt_area=[400, 30000, 800, 50, 400],
                            thresholds=(0.5, 0.75), area_ranges=(ALL, SMALL), max_detections=4)
    return match_detections(**inputs)


def test_views(table):
    assert table.n_detections == 5 and table.n_gt == 3
    assert table.dt_rank.tolist() == [0, 1, 2, 3, 4]
    assert table.dt_kept.tolist() == [True, True, True, True, False]
    assert table.detection_matches(0).tolist() == [[0, 1, 2, -1, -1], [0, -1, 2, -1, -1]]
    assert table.detection_matches(1).tolist() == [[0, 1, 2, -1, -1], [0, -1, 2, -1, -1]]
    assert table.detection_status(0).tolist() == [[TP, TP, IGNORED, FP, X],
                                                  [TP, FP, IGNORED, FP, X]]
    # in "small" the large object is ignored, so is its match, and the unmatched large d1
    assert table.detection_status(1).tolist() == [[TP, IGNORED, IGNORED, FP, X],
                                                  [TP, IGNORED, IGNORED, FP, X]]
    assert table.gt_matches(0).tolist() == [[0, 1, 2], [0, -1, 2]]
    assert table.gt_status(0).tolist() == [[TP, TP, IGNORED], [TP, FN, IGNORED]]
    assert table.gt_status(1).tolist() == [[TP, IGNORED, IGNORED], [TP, IGNORED, IGNORED]]
    for status in (table.detection_status(0), table.gt_status(1)):
        assert status.dtype == np.int8
    with pytest.raises(ValueError, match="read-only"):
        table.match_dt[0] = 3


def test_match_columns_are_stored_narrow(table):
    # int8 indices and int32 rows (docs/match-table.md §2): the views and exports stay int64
    assert [getattr(table, f"match_{c}").dtype for c in ("area", "threshold", "dt", "gt")] \
        == [np.int8, np.int8, np.int32, np.int32]
    assert table.detection_matches(0).dtype == table.gt_matches(0).dtype == np.int64


def test_match_columns_widen_for_values_that_need_it(table):
    columns = {"match_area": np.array([0, 200]), "match_threshold": np.array([3, 40000]),
               "match_dt": np.array([0, 2**31]), "match_gt": np.array([1, 2**31 - 1])}
    wide = MatchTable(**{**{f: getattr(table, f) for f in table.__dataclass_fields__},
                         **columns})
    assert [getattr(wide, name).dtype for name in columns] \
        == [np.int16, np.int32, np.int64, np.int32]
    for name, values in columns.items():
        assert getattr(wide, name).tolist() == values.tolist()
        assert values.dtype == np.int64 and values.flags.writeable   # the caller's, untouched


def test_narrow_match_columns_give_the_same_csv_past_the_narrow_ranges():
    # Products of the narrow columns (threshold * 4 in to_csv's codes, past int8 here) are
    # computed in int64.
    n_dt, n_t = 3, 100
    ious = np.array([[0.0], [0.0], [0.99]])
    inputs = matcher_inputs(ious, [0.9, 0.8, 0.7], thresholds=tuple(np.linspace(0.05, 0.95, n_t)))
    table = match_detections(**inputs)
    assert table.match_threshold.dtype == np.int8 and len(table.match_dt) == n_t
    rows = list(csv.reader(io.StringIO(table.to_csv())))[1:]
    assert len(rows) == n_dt * n_t
    assert [r[2:] for r in rows[2 * n_t:]] == [["TP", "0"]] * n_t
    assert [r[2] for r in rows[:2 * n_t]] == ["FP"] * (2 * n_t)


def test_to_dict(table):
    exported = table.to_dict(1)
    assert set(exported) == {"iou_thresholds", "dt_rank", "dt_match", "dt_status", "gt_match",
                             "gt_status"}
    assert exported["iou_thresholds"].tolist() == [0.5, 0.75]
    assert exported["dt_rank"].tolist() == [0, 1, 2, 3, 4]
    assert np.array_equal(exported["dt_match"], table.detection_matches(1))
    assert np.array_equal(exported["dt_status"], table.detection_status(1))
    assert np.array_equal(exported["gt_match"], table.gt_matches(1))
    assert np.array_equal(exported["gt_status"], table.gt_status(1))
    exported["dt_rank"][0] = 99  # a copy: the table is unchanged
    assert table.dt_rank[0] == 0


def test_to_json(table, tmp_path):
    text = table.to_json()
    parsed = json.loads(text)
    assert parsed == {key: value.tolist() for key, value in table.to_dict().items()}
    assert parsed["dt_status"] == [[TP, TP, IGNORED, FP, X], [TP, FP, IGNORED, FP, X]]
    path = tmp_path / "matches.json"
    assert table.to_json(path, area_index=1) == path.read_text()
    assert json.loads(path.read_text())["dt_status"][0] == [TP, IGNORED, IGNORED, FP, X]


def test_to_csv(table, tmp_path):
    rows = list(csv.DictReader(io.StringIO(table.to_csv())))
    assert len(rows) == 5 * 2
    assert list(rows[0]) == ["detection", "iou_threshold", "status", "gt"]
    assert [(int(r["detection"]), float(r["iou_threshold"])) for r in rows[:4]] == [
        (0, 0.5), (0, 0.75), (1, 0.5), (1, 0.75)]
    assert [r["status"] for r in rows] == ["TP", "TP", "TP", "FP", "IGNORED", "IGNORED",
                                           "FP", "FP", "NOT_EVALUATED", "NOT_EVALUATED"]
    assert [r["gt"] for r in rows] == ["0", "0", "1", "", "2", "2", "", "", "", ""]
    path = tmp_path / "matches.csv"
    assert table.to_csv(path, area_index=1) == path.read_text()
    small = list(csv.DictReader(io.StringIO(path.read_text())))
    assert [r["status"] for r in small[2:4]] == ["IGNORED", "IGNORED"]


def test_status_codes():
    assert (TP, FP, FN, IGNORED, NOT_EVALUATED) == (1, 0, 0, 2, -1)


# --------------------------------------------------------------------------------------------
# Random groups of groups against the literal loop
# --------------------------------------------------------------------------------------------

IOU_POOL = np.array([0.0, 0.1, 0.3, 0.5, 0.5, 0.55, 0.6, 0.7, 0.7, 0.75, 0.75, 0.8,
                     0.8999999999999999, 0.9, 0.95, 1.0, 1 - 1e-10])
SCORE_POOL = np.array([0.1, 0.5, 0.5, 0.5, 0.9, 0.9])
AREA_POOL = np.array([0.0, 100.0, 1024.0, 1024.0, 5000.0, 9216.0, 9216.0, 20000.0, 1e10, 2e10])
COCO_RANGES = ((0.0, 1e10), (0.0, 1024.0), (1024.0, 9216.0), (9216.0, 1e10))


def random_inputs(seed: int) -> dict:
    """Several interleaved groups with tied IoUs and scores, values on thresholds, crowd and
    ignore flags, areas on range boundaries and some rows that are not evaluated."""
    ious, options = random_parts(seed)
    return matcher_inputs(ious, **options)


def random_parts(seed: int) -> tuple[np.ndarray, dict]:
    """The dense IoU matrix of :func:`random_inputs` and the other ``matcher_inputs``."""
    rng = np.random.default_rng(seed)
    group_keys = rng.choice(50, size=int(rng.integers(1, 6)), replace=False)
    sizes = [(int(rng.integers(0, 6)), int(rng.integers(0, 8))) for _ in group_keys]
    gt_group = np.concatenate([np.full(n_gt, k) for k, (n_gt, _) in zip(group_keys, sizes)]
                              + [np.full(int(rng.integers(0, 2)), -1)]).astype(np.int64)
    dt_group = np.concatenate([np.full(n_dt, k) for k, (_, n_dt) in zip(group_keys, sizes)]
                              + [np.full(int(rng.integers(0, 2)), -1)]).astype(np.int64)
    gt_group, dt_group = rng.permutation(gt_group), rng.permutation(dt_group)
    n_gt, n_dt = len(gt_group), len(dt_group)
    ious = np.where(rng.random((n_dt, n_gt)) < 0.7, rng.choice(IOU_POOL, (n_dt, n_gt)),
                    rng.random((n_dt, n_gt)))
    scores = np.where(rng.random(n_dt) < 0.6, rng.choice(SCORE_POOL, n_dt), rng.random(n_dt))
    crowd = rng.random(n_gt) < 0.25
    # mostly the COCO rule (ignore = crowd), sometimes independent flags
    ignore = crowd.copy() if rng.random() < 0.5 else rng.random(n_gt) < 0.2
    kind = rng.integers(0, 3)
    thresholds = (COCO_THRESHOLDS if kind == 0 else np.array([0.5, 0.75]) if kind == 1
                  else np.sort(rng.choice(IOU_POOL[3:], 3)))
    area_ranges = COCO_RANGES if rng.random() < 0.8 else COCO_RANGES + ((1024.0, 1024.0),)
    return ious, dict(
        scores=scores, crowd=crowd, ignore=ignore, gt_area=rng.choice(AREA_POOL, n_gt),
        dt_area=rng.choice(AREA_POOL, n_dt), thresholds=thresholds, area_ranges=area_ranges,
        max_detections=int(rng.choice([1, 2, 3, 100])),
        tie_order=rng.permutation(n_dt), dt_group=dt_group, gt_group=gt_group)


SEEDS = range(240)


@pytest.mark.parametrize("seed", SEEDS)
def test_matches_reference_on_random_groups(seed):
    inputs = random_inputs(seed)
    # crowd columns of gt_matches: see test_crowd_gt_matches_equal_reference
    assert_same_as_reference(match_detections(**inputs), inputs, crowd_gt_matches=False)


def test_crowd_gt_matches_equal_reference():
    for seed in SEEDS:
        inputs = random_inputs(seed)
        assert_same_as_reference(match_detections(**inputs), inputs)


def test_random_inputs_hit_the_cases():
    """The random cases do exercise ties, crowds, truncation and boundaries."""
    seen = {"crowd-absorbs": 0, "ignored-match": 0, "truncated": 0, "score-tie": 0,
            "out-of-range-fp-ignored": 0}
    for seed in SEEDS:
        inputs = random_inputs(seed)
        table = match_detections(**inputs)
        crowd_hits = np.bincount(table.match_gt[inputs["gt_crowd"][table.match_gt]])
        seen["crowd-absorbs"] += int((crowd_hits > 1).any())
        seen["ignored-match"] += int((table.detection_status(0) == IGNORED).any())
        seen["truncated"] += int(((table.dt_rank >= 0) & ~table.dt_kept).any())
        scores = inputs["dt_scores"][inputs["dt_group"] >= 0]
        seen["score-tie"] += int(len(np.unique(scores)) < len(scores))
        seen["out-of-range-fp-ignored"] += int(
            ((table.detection_status(1) == IGNORED) & (table.detection_matches(1) < 0)).any())
    assert min(seen.values()) >= 20, seen


@pytest.mark.parametrize("seed", range(8))
def test_pair_chunking_changes_nothing(monkeypatch, seed):
    """The matcher computes similarities in chunks of pairs; tiny chunks give the same table."""
    from cocogen import make_dataset

    import deteval
    import deteval.matching

    gt, results = make_dataset(seed)
    whole = deteval.evaluate_coco(gt, results)
    monkeypatch.setattr(deteval.matching, "_PAIR_CHUNK", 3)
    chunked = deteval.evaluate_coco(gt, results)
    for name in ("precision", "recall", "scores"):
        assert np.array_equal(getattr(whole, name), getattr(chunked, name)), name
    assert np.array_equal(whole.matches.detection_matches(), chunked.matches.detection_matches())


@pytest.mark.parametrize("n_dt", [70, 71, 85, 100])
def test_pair_chunks_are_balanced(monkeypatch, n_dt):
    """The pairs are cut into the fewest chunks of at most ``_PAIR_CHUNK`` pairs, of equal
    sizes up to one detection's pairs (210 pairs in chunks of 64: 4 of ~53, not 3 of 66 and
    one of 12), so that threads end together; the pairs are those of one whole chunk."""
    import deteval.matching as matching

    rng = np.random.default_rng(n_dt)
    gt_group = np.repeat(np.arange(50), 3)                 # 3 objects a group: 3 pairs a dt
    dt_group = rng.integers(0, 50, n_dt)
    kept = np.flatnonzero(rng.random(n_dt) < 0.97)
    sizes = []

    def similarity(pair_dt, pair_gt):
        sizes.append(len(pair_dt))
        return (pair_dt * 7 + pair_gt) % 11 / 10.0

    def pairs(chunk):
        monkeypatch.setattr(matching, "_PAIR_CHUNK", chunk)
        sizes.clear()
        return matching._candidate_pairs(dt_group, kept, gt_group, similarity, 0.3, threads=2)

    whole = pairs(1 << 20)
    assert sizes == [3 * len(kept)]
    chunked = pairs(64)
    total = 3 * len(kept)
    n_chunks = -(-total // 64)
    assert len(sizes) == n_chunks and sum(sizes) == total and max(sizes) <= 64
    assert max(sizes) - min(sizes) <= 2 * 3, sizes
    for a, b in zip(whole, chunked):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(60))
def test_signed_similarities_and_negative_zero_match_reference(seed):
    """The matcher packs (not ignored, similarity) into one int64 when no candidate is
    negative, and compares the two in turn otherwise: both equal the literal loop, with
    -0.0 and 0.0 tied, and with negative thresholds (pycocotools takes any)."""
    rng = np.random.default_rng(1000 + seed)
    matrix, options = random_parts(seed)
    signed = matrix.copy()
    signed[rng.random(matrix.shape) < 0.2] = -0.0
    signed[rng.random(matrix.shape) < 0.15] = 0.0
    if seed % 2:
        signed = signed * 2 - 1                               # some negative candidates
        signed[rng.random(matrix.shape) < 0.1] = -0.0
        options["thresholds"] = np.array([-0.5, 0.0, 0.5])
    else:
        options["thresholds"] = np.array([0.0, 0.5, 0.75])
    case = matcher_inputs(signed, **options)
    assert_same_as_reference(match_detections(**case), case)


# =============================================================================================
# Moved from test_review_matcher_speed.py:
#
# Review of the matcher speed-ups (d0f45e5 packed preference, 21b6fe3 shared-range groups,
# da46266 flat indices, b46b72a accumulate with take/compress).
#
# * a defect, since fixed: the packed (not ignored, similarity) int64 key overflowed for
#   similarities >= 2 (and +inf), so a group with ignored and regular candidates could prefer
#   the wrong object (the key is now packed only when every similarity is in [0, 2));
# * differential coverage aimed at the shared-choice split: every call mixes groups that are
#   matched in range 0 only and copied with groups matched range by range, with crowds, user
#   ignore flags, areas on range bounds, duplicate / empty / single ranges, truncation, ties,
#   -0.0 and signed similarities, compared with the literal loop of ``reference.py``;
# * end-to-end parity with pycocotools for custom, duplicate and single area ranges,
#   ``use_categories=False``, small ``max_detections`` and thresholds outside [0, 1].
# =============================================================================================


@pytest.mark.parametrize("regular", [2.0, 3.5, np.inf])
def test_packed_key_similarity_two_or_more(regular):
    """Was wrong (fixed): matching.py match_detections (packed path, d0f45e5): the key is
    float64 bits + 2**62 for objects that are not ignored; for a similarity >= 2.0 the
    float bits already have bit 62 set, so the sum overflows int64 (2.0 -> -2**63) or
    collides with ignored keys. A group with an ignored and a regular candidate then takes
    the ignored object (pycocotools and the two-pass path take the regular one). Fix: pack
    only when 0 <= values < 2"""
    # object 0 regular with a large similarity, object 1 ignored with 0.6
    case = matcher_inputs([[regular, 0.6]], [0.9], ignore=[False, True])
    expected = reference_greedy_match(**case)[0]["detection_matches"]
    assert expected.tolist() == [[0]]
    assert match_detections(**case).detection_matches(0).tolist() == [[0]]


def test_packed_key_orders_large_regular_similarities():
    """Was wrong (fixed): matching.py match_detections (packed path): among regular objects
    of a group that also has an ignored candidate, 1.5 beats 2.5 because 2.5's key
    overflows int64"""
    case = matcher_inputs([[1.5, 2.5, 0.7]], [0.9], ignore=[False, False, True])
    assert reference_greedy_match(**case)[0]["detection_matches"].tolist() == [[1]]
    assert match_detections(**case).detection_matches(0).tolist() == [[1]]


def test_similarities_just_below_two_are_packed_correctly():
    below = np.nextafter(2.0, 0.0)
    case = matcher_inputs([[below, 1.9, 0.7], [1.0, 1.9, 0.0]], [0.9, 0.8],
                          ignore=[False, False, True], thresholds=(0.5, 1.5))
    assert_same_as_reference(match_detections(**case), case)


# --------------------------------------------------------------------------------------------
# Differential cases aimed at the shared-choice split
# --------------------------------------------------------------------------------------------

_POOL = np.array([-0.0, 0.0, 0.3, 0.5, 0.5, 0.7, 0.75, 0.9, 1.0, 1 - 1e-10, 1 - 2e-10])
_AREAS = np.array([0.0, 10.0, 1024.0, 1024.0, 9216.0, 9216.0, 1e5, 1e10, 1e10 + 1])
_RANGES = [
    ((0, 1e10),),                                                   # a single range
    ((0, 1e10), (0, 1024), (1024, 9216), (9216, 1e10)),            # COCO
    ((0, 1e10), (0, 1e10)),                                         # duplicates
    ((1024, 1024), (0, 1e10), (0, 9216)),                           # a point range first
    ((5, 3), (0, np.inf)),                                          # an empty range first
]


def _groups_by_kind(case: dict) -> tuple[int, int]:
    """Groups with candidates whose detections all see one ignore status per range (shared)
    and groups with some detection seeing both (mixed), at the lowest threshold."""
    lo = min(min(t, 1 - 1e-10) for t in case["iou_thresholds"])
    ranges = np.asarray(case["area_ranges"], float).reshape(-1, 2)
    ignored = (case["gt_ignore"][None, :] | (case["gt_area"][None, :] < ranges[:, :1])
               | (case["gt_area"][None, :] > ranges[:, 1:]))
    kinds = {}
    for d, g in enumerate(case["dt_group"]):
        if g < 0:
            continue
        cols = np.flatnonzero(case["gt_group"] == g)
        sims = case["similarity"](np.full(len(cols), d), cols)
        cand = cols[sims >= lo]
        if len(cand):
            flags = ignored[:, cand]
            mixed = bool((flags.any(1) & ~flags.all(1)).any())
            kinds[g] = kinds.get(g, False) | mixed
    return sum(not m for m in kinds.values()), sum(kinds.values())


def _random_case(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n_groups = int(rng.integers(1, 8))
    sizes = [(int(rng.integers(0, 7)), int(rng.integers(0, 9))) for _ in range(n_groups)]
    gt_group = np.concatenate([np.full(a, k) for k, (a, _) in enumerate(sizes)]
                              + [np.full(int(rng.integers(0, 2)), -1)]).astype(np.int64)
    dt_group = np.concatenate([np.full(b, k) for k, (_, b) in enumerate(sizes)]
                              + [np.full(int(rng.integers(0, 2)), -1)]).astype(np.int64)
    gt_group, dt_group = rng.permutation(gt_group), rng.permutation(dt_group)
    n_gt, n_dt = len(gt_group), len(dt_group)
    mode = int(rng.integers(0, 3))
    ious = np.where(rng.random((n_dt, n_gt)) < 0.6, rng.choice(_POOL, (n_dt, n_gt)),
                    rng.random((n_dt, n_gt)))
    if mode == 1:
        ious = ious * 2 - 0.5          # signed, and above 1 (below 2)
    elif mode == 2:
        ious = np.round(ious, 1)       # many ties
    crowd = rng.random(n_gt) < rng.choice([0.0, 0.2, 0.5])
    ignore = crowd | (rng.random(n_gt) < rng.choice([0.0, 0.1, 0.3]))
    thresholds = [np.linspace(0.5, 0.95, 10), np.array([-0.5, 0.0, 0.5]),
                  np.array([0.5, 1.0, 1.5]), rng.choice(_POOL, 4)][int(rng.integers(0, 4))]
    scores = (rng.choice([0.1, 0.5, 0.5, 0.9], n_dt) if rng.random() < 0.5
              else rng.random(n_dt))
    return matcher_inputs(
        ious, scores, crowd=crowd, ignore=ignore, gt_area=rng.choice(_AREAS, n_gt),
        dt_area=rng.choice(_AREAS, n_dt), thresholds=thresholds,
        area_ranges=_RANGES[int(rng.integers(0, len(_RANGES)))],
        max_detections=int(rng.choice([1, 2, 3, 100])),
        tie_order=rng.permutation(n_dt) if rng.random() < 0.5 else None,
        dt_group=dt_group, gt_group=gt_group)


_SEEDS = range(1200)


def test_shared_and_mixed_groups_match_the_literal_loop():
    for seed in _SEEDS:
        case = _random_case(seed)
        assert_same_as_reference(match_detections(**case), case)


def test_random_cases_mix_both_kinds_of_group():
    both = 0
    for seed in _SEEDS[:300]:
        shared, mixed = _groups_by_kind(_random_case(seed))
        both += shared > 0 and mixed > 0
    assert both >= 50, both


def test_no_area_range_and_no_threshold():
    case = _random_case(3)
    for key, value in (("area_ranges", np.zeros((0, 2))), ("iou_thresholds", np.zeros(0))):
        table = match_detections(**{**case, key: value})
        assert len(table.match_dt) == 0


# --------------------------------------------------------------------------------------------
# End to end with pycocotools
# --------------------------------------------------------------------------------------------


def _e2e_options(seed: int, gt: dict) -> dict:
    rng = np.random.default_rng(seed + 777)
    for annotation in gt["annotations"]:
        if rng.random() < 0.3:     # areas exactly on the COCO bounds
            annotation["area"] = float(rng.choice([32.0**2, 96.0**2, 0.0, 500.0]))
    options = {}
    kind = seed % 4
    if kind == 1:
        options.update(area_ranges=[[0, 1e10]], area_labels=["all"])
    elif kind == 2:
        options.update(area_ranges=[[0, 1e10], [0, 1e10], [1024, 1024], [500, 500]],
                       area_labels=["all", "b", "c", "d"])
    elif kind == 3:
        options.update(area_ranges=[[0, 1e10], [0, 9216], [1024, 1e10], [9216, 1024]],
                       area_labels=["all", "x", "y", "z"])
    if rng.random() < 0.4:
        options["use_categories"] = False
    if rng.random() < 0.3:
        options["max_detections"] = [1, 3, int(rng.choice([5, 100]))]
    if rng.random() < 0.3:
        options["iou_thresholds"] = [-0.5, 0.0, 0.5, 1.0, 1.5]
    return options


@pytest.mark.parametrize("seed", range(0, 240, 4))
def test_pycocotools_parity_custom_ranges(seed):
    gt, results = make_dataset(seed, max_gt=8, max_dt=15, p_crowd=0.4, p_many=0.05)
    options = _e2e_options(seed, gt)
    reference = run_pycocotools(gt, results, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine = deteval.evaluate_coco(gt, results, **options)
    assert_parity(mine, reference, summary=False)
