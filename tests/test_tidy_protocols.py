"""The tidy export of LVIS, Open Images and CrowdPose results (deteval/_tidy_protocols.py,
docs/tidy-export.md §4): each detection's status and match against the reference tools'
own per-image records (lvis-api's ``eval_imgs``, xtcocotools' ``evalImgs``), Open Images AP
recomputed from the exported rows by the literal reference, the protocol columns against
the input dicts and files, and the command line."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import oid_reference as ref
import oidgen
import pytest
from clirun import run as _run
from crowdposegen import crowdpose_oks, make_crowdpose_dataset, run_xtcocotools, write_pair
from lvisgen import make_lvis_dataset, run_lvis_api

import deteval
from deteval.tidy import TIDY_COLUMNS, Coded, tidy_columns, write_table

STATUS_OF = {"tp", "fp", "ignored"}


def _values(column) -> list:
    return column.values().tolist() if isinstance(column, Coded) else column.tolist()


def _reference_rows(eval_imgs, score_of, t: int, max_det: int | None = None) -> Counter:
    """(image, category, score, status, matched object id) of every evaluated detection, from
    a reference's per-image records at area "all" (keys: lvis-api's or pycocotools')."""
    rows = Counter()
    for e in eval_imgs:
        if e is None:
            continue
        lvis = "dt_ids" in e
        area = e["area_rng"] if lvis else e["aRng"]
        if list(area) != [0, 1e10]:
            continue
        ids = e["dt_ids"] if lvis else e["dtIds"]
        matches = np.asarray(e["dt_matches"] if lvis else e["dtMatches"])
        ignore = np.asarray(e["dt_ignore"] if lvis else e["dtIgnore"])
        for j, d in enumerate(ids[:max_det]):
            m = int(matches[t, j])
            m = m if m > 0 else -1            # unmatched: 0 (lvis-api) or -1 (xtcocotools)
            status = "ignored" if ignore[t, j] else ("tp" if m > 0 else "fp")
            rows[(e["image_id"], e["category_id"], score_of(d), status, m)] += 1
    return rows


def _our_rows(columns) -> Counter:
    kind = np.array(_values(columns["kind"]))
    status = np.array(_values(columns["status"]), dtype=object)
    keep = (kind == "detection") & np.isin(status, list(STATUS_OF))
    return Counter(zip(columns["image_id"][keep].tolist(), columns["category_id"][keep].tolist(),
                       columns["score"][keep].tolist(), status[keep].tolist(),
                       columns["match_id"][keep].tolist()))


# ------------------------------------------------------------------------------------ LVIS

@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_lvis_rows_equal_lvis_api_eval_imgs(seed):
    gt, results = make_lvis_dataset(seed)
    result = deteval.evaluate_lvis(gt, results)
    reference = run_lvis_api(gt, results)
    ev = reference.evaluator
    columns = tidy_columns(result, iou_threshold="all", outcomes=False)
    n_rows = len(result.detections) + len(result.dataset.gt)
    n_t = len(result.params.iou_thresholds)
    assert len(columns["row"]) == n_t * n_rows
    for t in range(n_t):
        block = {k: (Coded(v.codes[t * n_rows:(t + 1) * n_rows], v.labels)
                     if isinstance(v, Coded) else v[t * n_rows:(t + 1) * n_rows])
                 for k, v in columns.items()}
        theirs = _reference_rows(ev.eval_imgs, lambda d: ev.lvis_dt.anns[d]["score"], t)
        assert _our_rows(block) == theirs


def _listed(gt: dict, key: str) -> set:
    return {(image["id"], c) for image in gt["images"] for c in image[key]}


@pytest.mark.parametrize("seed", [3, 4])
def test_lvis_columns_from_the_input(seed):
    from pycocotools import mask as mask_utils

    gt, results = make_lvis_dataset(seed)
    result = deteval.evaluate_lvis(gt, results)
    columns = tidy_columns(result)
    assert tuple(columns)[:len(TIDY_COLUMNS)] == TIDY_COLUMNS
    assert tuple(columns)[len(TIDY_COLUMNS):] == ("frequency", "neg_listed", "not_exhaustive",
                                                   "not_evaluated_reason")
    n_dt = len(result.detections)
    pairs = list(zip(columns["image_id"].tolist(), columns["category_id"].tolist()))
    neg, ne = _listed(gt, "neg_category_ids"), _listed(gt, "not_exhaustive_category_ids")
    assert columns["neg_listed"].tolist() == [p in neg for p in pairs]
    assert columns["not_exhaustive"].tolist() == [p in ne for p in pairs]
    frequency = {c["id"]: c["frequency"] for c in gt["categories"]}
    assert _values(columns["frequency"]) == [frequency.get(c) for _, c in pairs]
    # not verified: neither an object of the category in the image nor listed negative
    present = {(a["image_id"], a["category_id"]) for a in gt["annotations"]
               if a["area"] > 0}
    reason = _values(columns["not_evaluated_reason"])[:n_dt]
    status = _values(columns["status"])[:n_dt]
    for p, why, s in zip(pairs[:n_dt], reason, status):
        assert (why is None) == (s != "not_evaluated")
        if why == "not_verified":
            assert p not in present and p not in neg
        elif why is None:
            assert p in present or p in neg
    # an unmatched evaluated detection of a not-exhaustive category is ignored, not an FP
    unmatched = columns["match_row"][:n_dt] < 0
    for s, listed, free in zip(status, columns["not_exhaustive"][:n_dt], unmatched):
        if listed and free and s != "not_evaluated":
            assert s == "ignored"
    # lvis-api reads no iscrowd: every match is by IoU (pycocotools' with iscrowd 0)
    assert not columns["crowd"].any()
    rows = np.flatnonzero(columns["match_row"][:n_dt] >= 0)
    dt, objects = result.detections.as_xywh(), result.dataset.gt.as_xywh()
    theirs = [mask_utils.iou([dt[d].tolist()], [objects[g].tolist()], [0])[0, 0]
              for d, g in zip(rows, columns["match_row"][rows])]
    assert np.allclose(columns["iou"][rows], theirs, rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------- CrowdPose

@pytest.mark.parametrize("seed", [0, 3])
def test_crowdpose_rows_equal_xtcocotools_eval_imgs(seed, tmp_path):
    pytest.importorskip("xtcocotools", reason="xtcocotools (the CrowdPose reference) is not "
                        "installed")
    gt, results = make_crowdpose_dataset(seed, n_images=6)
    result = deteval.evaluate_crowdpose(gt, results)
    _, _, eval_imgs, coco_dt = run_xtcocotools(*write_pair(tmp_path, gt, results),
                                               evaluator_too=True)
    columns = tidy_columns(result, outcomes=False)
    theirs = _reference_rows(eval_imgs, lambda d: coco_dt.anns[d]["score"], 0, max_det=20)
    assert _our_rows(columns) == theirs
    # OKS of the matches, by the formula with the object area h * w * 0.53
    n_dt = len(result.detections)
    sigmas = np.asarray(result.params.keypoint_sigmas)
    by_id = {a["id"]: a for a in gt["annotations"]}
    for d in np.flatnonzero(columns["match_row"][:n_dt] >= 0).tolist():
        obj = by_id[int(columns["match_id"][d])]
        oks = crowdpose_oks(result.detections.keypoints[d], obj, sigmas)
        assert abs(columns["iou"][d] - oks) < 1e-12
    crowd = {image["id"]: image["crowdIndex"] for image in gt["images"]}
    assert columns["crowd_index"].tolist() == [crowd[i] for i in columns["image_id"].tolist()]
    split = ["easy" if c < 0.2 else "medium" if c < 0.8 else "hard"
             for c in columns["crowd_index"].tolist()]
    assert _values(columns["crowd_split"]) == split


# ----------------------------------------------------------------------------- Open Images

@pytest.mark.parametrize("seed", range(6))
def test_openimages_rows_give_the_reference_ap(seed):
    """Each class's AP recomputed by the literal reference from the exported rows alone
    (detections tp/fp with their scores, one positive per box) equals the reference's AP."""
    g, lab, d, h, classes = oidgen.make_problem(seed)
    d = [r[:2] + (round(r[2], 2) + i * 1e-7,) + r[3:] for i, r in enumerate(d)]   # no ties
    for hierarchy in (None, h):
        ap, _, _ = ref.evaluate(g, lab, d, classes, hierarchy=hierarchy)
        gt, labels, dt = oidgen.to_objects(g, lab, d)
        result = deteval.evaluate_openimages(gt, dt, image_labels=labels, hierarchy=hierarchy,
                                             classes=classes)
        columns = tidy_columns(result)
        kind = np.array(_values(columns["kind"]))
        status = np.array(_values(columns["status"]), dtype=object)
        category = np.array(_values(columns["category"]), dtype=object)
        for c, name in enumerate(classes):
            mine = (kind == "detection") & (category == name) & np.isin(status, ["tp", "fp"])
            n_gt = np.count_nonzero((kind == "gt") & (category == name))
            value = ref.average_precision(columns["score"][mine],
                                          (status[mine] == "tp").astype(float), n_gt) \
                if n_gt else np.nan
            assert value == ap[c] or (np.isnan(value) and np.isnan(ap[c]))
            # a box is a true positive exactly when a detection carries it
            found = (kind == "gt") & (category == name) & (status == "tp")
            assert np.count_nonzero(found) == np.count_nonzero(
                mine & (status == "tp"))


def test_openimages_columns():
    g, lab, d, h, classes = oidgen.make_problem(7)
    gt, labels, dt = oidgen.to_objects(g, lab, d)
    result = deteval.evaluate_openimages(gt, dt, image_labels=labels, hierarchy=h,
                                         classes=classes)
    columns = tidy_columns(result)
    assert tuple(columns) == TIDY_COLUMNS + ("group_of", "source_row", "expanded")
    n_dt = len(dt.label)
    kind = np.array(_values(columns["kind"]))
    source = columns["source_row"][n_dt:]
    # every box row is one of the file's rows, under its own label or an ancestor's
    assert [r[0] for r in np.array(g, dtype=object)[source]] == _values(
        columns["image_id"])[n_dt:]
    own = [g[s][1] for s in source.tolist()]
    assert (np.array(own) == np.array(_values(columns["category"])[n_dt:])).tolist() == (
        ~columns["expanded"][n_dt:]).tolist()
    assert columns["group_of"][n_dt:].tolist() == [bool(g[s][6]) for s in source.tolist()]
    assert np.array_equal(columns["group_of"], columns["crowd"])
    assert (kind[:n_dt] == "detection").all() and not columns["expanded"][:n_dt].any()
    # IoU (IoA inside a group-of box) of each match, by the reference's own formulas
    rows = np.flatnonzero(columns["match_row"][:n_dt] >= 0)
    for r in rows.tolist():
        box = g[source[columns["match_row"][r]]]
        det = d[r]
        b_dt = np.array([[det[5], det[3], det[6], det[4]]], dtype=float)
        b_gt = np.array([[box[4], box[2], box[5], box[3]]], dtype=float)
        theirs = ref._ioa(b_gt, b_dt) if box[6] else ref._iou(b_dt, b_gt)   # over the dt
        assert abs(columns["iou"][r] - theirs[0, 0]) < 1e-12
    # the outcomes of match_outcomes (score threshold 0: negative scores are below it),
    # missing where the protocol evaluates no detection
    outcome = np.array(_values(columns["outcome"]), dtype=object)
    status = np.array(_values(columns["status"]), dtype=object)
    assert ((outcome[:n_dt] == None) == (status[:n_dt] == "not_evaluated")).all()  # noqa: E711
    assert ((outcome[:n_dt] == "below_threshold") == (
        (status[:n_dt] != "not_evaluated") & (columns["score"][:n_dt] < 0))).all()
    with pytest.raises(ValueError, match="was not evaluated"):
        tidy_columns(result, iou_threshold=0.75)


# ------------------------------------------------------------------------- command line

def test_cli_table_of_each_protocol(tmp_path):
    gt, results = make_lvis_dataset(1)
    (tmp_path / "lvis.json").write_text(json.dumps(gt))
    (tmp_path / "lvis_dt.json").write_text(json.dumps(results))
    out = tmp_path / "lvis.csv"
    assert _run("lvis", tmp_path / "lvis.json", tmp_path / "lvis_dt.json", "--table", out,
                "--table-iou", "all")[0] == 0
    expected = tmp_path / "expected.csv"
    write_table(deteval.evaluate_lvis(gt, results), expected, iou_threshold="all")
    assert out.read_bytes() == expected.read_bytes()

    cp_gt, cp_dt = write_pair(tmp_path, *make_crowdpose_dataset(2, n_images=4))
    out = tmp_path / "crowdpose.csv"
    assert _run("crowdpose", cp_gt, cp_dt, "--table", out)[0] == 0
    write_table(deteval.evaluate_crowdpose(cp_gt, cp_dt), expected)
    assert out.read_bytes() == expected.read_bytes()

    (boxes, oid_dt), options = oidgen.write_problem(tmp_path)
    out = tmp_path / "oid.csv"
    assert _run("openimages", boxes, oid_dt, "--labels", options["image_labels"],
                "--hierarchy", options["hierarchy"], "--table", out)[0] == 0
    write_table(deteval.evaluate_openimages(boxes, oid_dt, **options), expected)
    assert out.read_bytes() == expected.read_bytes()
    status, _, err = _run("openimages", boxes, oid_dt, "--table", out, "--table-iou", "0.75")
    assert status == 2 and "0.75 was not evaluated" in err


def test_frame_and_arrow_methods():
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    gt, results = make_lvis_dataset(2)
    result = deteval.evaluate_lvis(gt, results)
    frame = result.to_frame()
    assert list(frame.columns) == list(tidy_columns(result))
    assert result.to_arrow().num_rows == len(frame)
