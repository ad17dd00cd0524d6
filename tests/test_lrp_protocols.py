"""LRP and calibration of the VOC, LVIS, CrowdPose and Open Images results.

What each protocol decided is read from its own result (``deteval/diagnostics/_decisions.py``);
these tests check that those decisions are the ones the protocol's own numbers come from:

* LVIS: every array and the summary equal bit for bit to the LRP-Error fork's LVIS evaluator
  (lvis-api with the fork's ``dt_ious`` and oLRP block, ``tests/lrp_reference.py``);
* VOC: the counted detections, in LRP's order, are the points of the protocol's own PR curve
  (``pr_curve``) and give its TP and FP counts; LRP's FP and FN parts at the optimum are
  1 - precision and 1 - recall of that curve there;
* CrowdPose and LVIS: the true positives over all detections give the protocol's recall (the
  PR curve's end point) in every category and area range, exactly;
* Open Images: the TP and FP counts per class are the protocol's ``num_tp`` / ``num_fp``, and
  the AP of the class computed in LRP's order without sorting again is the protocol's AP;
* every protocol: calibration's right / wrong detections are the tidy export's TP / FP rows,
  and the IoU (OKS) of each true positive is the tidy export's.
"""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import oidgen
import pytest
from cocogen import make_dataset
from crowdposegen import make_crowdpose_dataset
from lrp_reference import run_lvis_lrp_reference
from lvisgen import make_lvis_dataset

import deteval
from deteval.cli import main
from deteval.diagnostics._decisions import decisions
from deteval.diagnostics.lrp import lrp_of_result
from deteval.matching import FP, TP
from deteval.protocols._openimages_match import tf_average_precision
from deteval.protocols.voc import DETECTRON2_VOC2012, VOC2007, VOC2012
from deteval.tidy import tidy_columns

FIELDS = ("olrp", "olrp_loc", "olrp_fp", "olrp_fn", "thresholds", "stats")


def lvis_result(seed, segm=False):
    gt, dt = make_lvis_dataset(seed, segm=segm)
    kind = "segm" if segm else "bbox"
    return deteval.evaluate_lvis(gt, dt, iou_type=kind), (gt, dt, kind)


def openimages_result(seed, *, clip=False, shift=0.0):
    g, lab, d, h, classes = oidgen.make_problem(seed)
    gt, labels, dt = oidgen.to_objects(g, lab, d)
    if clip:        # calibration needs confidences in [0, 1]
        dt = dataclasses.replace(dt, score=np.clip(dt.score, 0.0, 1.0) + shift)
    return deteval.evaluate_openimages(gt, dt, image_labels=labels, hierarchy=h)


def crowdpose_result(seed):
    return deteval.evaluate_crowdpose(*make_crowdpose_dataset(seed))


def voc_result(seed, params=VOC2012):
    gt, dt = make_dataset(seed, segmentation=False)
    return deteval.evaluate_voc(gt, dt, params=params)


def category_rows(d, k):
    return d.order[d.bounds[k]:d.bounds[k + 1]]


# --------------------------------------------------------------------------------- LVIS

@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("segm", [False, True])
def test_lvis_equal_to_the_forks_lvis_evaluator(seed, segm):
    result, (gt, dt, kind) = lvis_result(seed + 10, segm)
    mine, ref = lrp_of_result(result), run_lvis_lrp_reference(gt, dt, kind)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(mine, name), ref[name], err_msg=name)
    assert mine.category_ids.tolist() == ref["category_ids"]
    assert tuple(mine.summary()) == ("moLRP", "moLRP_loc", "moLRP_fp", "moLRP_fn", "moLRP_r",
                                     "moLRP_c", "moLRP_f")
    assert mine.settings["protocol"] == "lvis" and mine.settings["max_detections"] == 300


def recall_end_points(result, recall):
    """Recall of all detections from the decisions, per threshold, category and range."""
    thresholds = result.params.iou_thresholds
    for t, tau in enumerate(thresholds):
        d = decisions(result, tau, with_iou=False)
        for a in range(len(d.area_labels)):
            for k in range(len(d.category_ids)):
                n = d.n_positive[k, a]
                tp = np.count_nonzero(d.status[a, category_rows(d, k)] == TP)
                expected = recall[t, k, a]
                if n == 0:
                    assert expected == -1
                else:
                    assert tp / n == expected, (tau, k, a)


@pytest.mark.parametrize("seed", range(4))
def test_lvis_true_positives_give_the_protocols_recall(seed):
    result, _ = lvis_result(seed + 30)
    recall_end_points(result, result.recall)


@pytest.mark.parametrize("seed", range(6))
def test_crowdpose_true_positives_give_the_protocols_recall(seed):
    result = crowdpose_result(seed)
    recall_end_points(result, result.recall[..., 0])
    r = lrp_of_result(result, 0.75)
    assert r.area_labels == ("all", "medium", "large") and r.settings["iou_type"] == "keypoints"
    assert r.settings["iou_threshold"] == 0.75 and r.settings["protocol"] == "crowdpose"


# ---------------------------------------------------------------------------------- VOC

@pytest.mark.parametrize("params", [VOC2012, VOC2007, DETECTRON2_VOC2012],
                         ids=["voc2012", "voc2007", "detectron2"])
@pytest.mark.parametrize("seed", range(3))
def test_voc_counted_detections_are_the_protocols_curve(seed, params):
    result = voc_result(seed + 50, params)
    for t, tau in enumerate(result.params.iou_thresholds[:2]):
        d = decisions(result, tau)
        r = lrp_of_result(result, tau)
        for k, cid in enumerate(result.category_ids.tolist()):
            rows = category_rows(d, k)
            status = d.status[0, rows]
            counted = rows[status != 2]
            curve = result.pr_curve(cid, iou_threshold=tau)
            assert counted.tolist() == curve.detections.tolist()
            tp = np.cumsum(status[status != 2] == TP)
            fp = np.cumsum(status[status != 2] == FP)
            assert (int(tp[-1]) if len(tp) else 0) == result.tp[t, k]
            assert (int(fp[-1]) if len(fp) else 0) == result.fp[t, k]
            npos = result.n_positives[k]
            if npos and len(tp):
                np.testing.assert_array_equal(tp / npos, curve.recall)
                np.testing.assert_array_equal(tp / (tp + fp), curve.precision)
            if npos and np.isfinite(r.thresholds[k, 0]):
                # the optimum is a prefix of LRP's sequence; its last counted point is the
                # curve's point there (an ignored detection repeats the one before it)
                i = int(np.argmin(r.curve_lrp[k][0]))
                n_counted = np.count_nonzero(status[:i + 1] != 2)
                assert n_counted > 0
                assert r.olrp_fn[k, 0] == pytest.approx(1 - curve.recall[n_counted - 1])
                assert r.olrp_fp[k, 0] == pytest.approx(1 - curve.precision[n_counted - 1])


def test_voc_true_positive_iou_is_the_rules_with_inclusive_pixels():
    """VOC's IoU counts pixels inclusively: a 10x10 box shifted by 1 gives 90 / 110."""
    from deteval.data import Categories, Dataset, Detections, GroundTruth, Images

    dataset = Dataset(Images(ids=[1]), Categories(ids=[1], names=["cat"]),
                      GroundTruth(image_index=[0], category_index=[0], boxes=[[0, 0, 9, 9]]))
    dets = Detections(image_index=[0], category_index=[0], boxes=[[1, 0, 10, 9]], scores=[0.9])
    r = lrp_of_result(deteval.evaluate_voc(dataset, dets))
    assert r.olrp_loc[0, 0] == pytest.approx(1 - 90 / 110)
    assert r.olrp[0, 0] == pytest.approx((1 - 90 / 110) / 0.5)
    assert r.summary().keys() == {"moLRP", "moLRP_loc", "moLRP_fp", "moLRP_fn"}


# -------------------------------------------------------------------------- Open Images

@pytest.mark.parametrize("seed", range(10))
def test_openimages_counts_and_order_are_the_protocols(seed):
    result = openimages_result(seed + 3)
    d = decisions(result)
    for k in range(len(result.classes)):
        status = d.status[0, category_rows(d, k)]
        assert np.all((status == TP) | (status == FP))     # ignored ones are not entries
        labels = (status == TP).astype(np.float64)
        assert int(labels.sum()) == result.num_tp[k]
        assert len(labels) - int(labels.sum()) == result.num_fp[k]
        # AP in LRP's order, without sorting again (scores that keep the order)
        kept_order = -np.arange(len(labels), dtype=np.float64)
        ap = tf_average_precision(kept_order, labels, result.num_gt[k])
        assert ap == result.ap[k] or (np.isnan(ap) and np.isnan(result.ap[k]))
    r = lrp_of_result(result)
    assert r.category_names == result.classes and r.area_labels == ("all",)


# ----------------------------------------------------- calibration and the tidy export

PROTOCOLS = {
    "voc": lambda seed: voc_result(seed + 70),
    "lvis": lambda seed: lvis_result(seed + 70)[0],
    "crowdpose": lambda seed: crowdpose_result(seed + 70),
    "openimages": lambda seed: openimages_result(seed + 70, clip=True),
}


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_decisions_are_the_tidy_exports(protocol, seed):
    """Right = the export's "tp" rows, wrong = its "fp" rows (range "all"); the IoU (OKS) of
    each true positive is its ``iou``; calibration bins exactly those detections."""
    result = PROTOCOLS[protocol](seed)
    tau = 0.5
    columns = tidy_columns(result, iou_threshold=tau, outcomes=False)
    n_dt = int(np.count_nonzero(columns["kind"].codes == 0))
    status = np.asarray(columns["status"].values())[:n_dt]
    cal = deteval.calibration(result, iou_threshold=tau, bins=5)
    assert cal.protocol == protocol
    np.testing.assert_array_equal(cal.dt_correct, status == "tp")
    np.testing.assert_array_equal(cal.dt_evaluated, (status == "tp") | (status == "fp"))
    assert cal.count.sum() == cal.n_detections == np.count_nonzero(cal.dt_evaluated)
    d = decisions(result, tau)
    hit = np.flatnonzero(d.status[d.all_index] == TP)
    np.testing.assert_array_equal(d.iou[d.all_index, hit], columns["iou"][hit])


def test_openimages_confidences_outside_zero_one_are_refused_by_image():
    with pytest.raises(ValueError, match=r"image_id 'img\d+'\): calibration needs confidences"):
        deteval.calibration(openimages_result(3, clip=True, shift=1.5))


@pytest.mark.parametrize("call", [lambda r: lrp_of_result(r, 0.55),
                                  lambda r: deteval.calibration(r, iou_threshold=0.55)])
def test_a_threshold_the_protocol_did_not_evaluate_is_refused(call):
    with pytest.raises(ValueError, match="0.55 was not evaluated"):
        call(voc_result(1))


def test_not_a_result():
    with pytest.raises(TypeError, match="expected a result"):
        lrp_of_result(object())


# ------------------------------------------------------------------------- command line

def plain(value):
    return json.loads(json.dumps(value))


def write_pair(tmp_path, gt, dt):
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dt))
    return [str(tmp_path / "gt.json"), str(tmp_path / "dt.json")]


def clipped_openimages_files(tmp_path):
    """The challenge files of one problem, scores clipped into [0, 1]."""
    (gt_path, dt_path), kwargs = oidgen.write_problem(tmp_path, seed=5)
    lines = dt_path.read_text().splitlines()
    rows = [line.split(",") for line in lines[1:]]
    for row in rows:
        row[2] = str(min(max(float(row[2]), 0.0), 1.0))
    dt_path.write_text("\n".join([lines[0]] + [",".join(r) for r in rows]) + "\n")
    files = [str(gt_path), str(dt_path), "--labels", str(kwargs["image_labels"]),
             "--hierarchy", str(kwargs["hierarchy"])]
    return files, deteval.evaluate_openimages(gt_path, dt_path, **kwargs)


def cli_cases(tmp_path):
    """(command, files, the result the command evaluates) per protocol."""
    voc_gt, voc_dt = make_dataset(81, segmentation=False)
    lvis_gt, lvis_dt = make_lvis_dataset(82)
    pose_gt, pose_dt = make_crowdpose_dataset(83)
    oid_files, oid_result = clipped_openimages_files(tmp_path)
    return {
        "voc2007": ("voc", write_pair(tmp_path / "voc", voc_gt, voc_dt) + ["--year", "2007"],
                    deteval.evaluate_voc(voc_gt, voc_dt, params=VOC2007)),
        "lvis": ("lvis", write_pair(tmp_path / "lvis", lvis_gt, lvis_dt),
                 deteval.evaluate_lvis(lvis_gt, lvis_dt)),
        "crowdpose": ("crowdpose", write_pair(tmp_path / "pose", pose_gt, pose_dt),
                      deteval.evaluate_crowdpose(pose_gt, pose_dt)),
        "openimages": ("openimages", oid_files, oid_result),
    }


@pytest.mark.parametrize("protocol", ["voc2007", "lvis", "crowdpose", "openimages"])
def test_cli_lrp_and_calibration_of_each_protocol(protocol, tmp_path):
    for sub in ("voc", "lvis", "pose"):
        (tmp_path / sub).mkdir()
    command, files, result = cli_cases(tmp_path)[protocol]
    out, err = io.StringIO(), io.StringIO()
    assert main([command, *files, "--lrp", "--json", str(tmp_path / "p.json")],
                stdout=out, stderr=err) == 0, err.getvalue()
    expected = lrp_of_result(result)
    assert json.loads((tmp_path / "p.json").read_text())["lrp"] == plain(expected.to_dict())
    assert f"moLRP          {expected.stats[0]:.3f}" in out.getvalue()
    positional = [f for f in files if f != "--year" and f != "2007"]
    out = io.StringIO()
    assert main(["calibration", *positional, "--protocol", protocol, "--bins", "4",
                 "--json", str(tmp_path / "c.json")], stdout=out, stderr=err) == 0, \
        err.getvalue()
    cal = deteval.calibration(result, bins=4)
    assert json.loads((tmp_path / "c.json").read_text()) == plain(cal.to_dict())
    assert f"{cal.protocol} decisions" in out.getvalue()


@pytest.mark.parametrize("flags", [["--protocol", "voc2012", "--iou-type", "segm"],
                                   ["--protocol", "crowdpose", "--max-detections", "5"],
                                   ["--labels", "x.csv"]])
def test_cli_calibration_refuses_an_option_the_protocol_does_not_read(flags, tmp_path):
    gt, dt = make_dataset(1, segmentation=False)
    err = io.StringIO()
    assert main(["calibration", *write_pair(tmp_path, gt, dt), *flags],
                stdout=io.StringIO(), stderr=err) == 2
    assert "does not apply to --protocol" in err.getvalue()


def test_cli_calibration_of_voc_at_another_threshold_evaluates_voc_there(tmp_path):
    import dataclasses

    gt, dt = make_dataset(82, segmentation=False)
    out_json = tmp_path / "c.json"
    err = io.StringIO()
    assert main(["calibration", *write_pair(tmp_path, gt, dt), "--protocol", "voc2007",
                 "--iou-threshold", "0.7", "--json", str(out_json)],
                stdout=io.StringIO(), stderr=err) == 0, err.getvalue()
    at_07 = deteval.evaluate_voc(gt, dt, params=dataclasses.replace(VOC2007,
                                                                   iou_thresholds=(0.7,)))
    expected = deteval.calibration(at_07, iou_threshold=0.7)
    assert json.loads(out_json.read_text()) == plain(expected.to_dict())
    assert expected.dece != deteval.calibration(deteval.evaluate_voc(gt, dt)).dece


@pytest.mark.parametrize("protocol, tau, shown", [("openimages", "0.7", "0.50 only"),
                                                  ("lvis", "0.72", "0.50, 0.55"),
                                                  ("crowdpose", "0.3", "0.95 only")])
def test_cli_calibration_names_the_thresholds_a_protocol_evaluates(protocol, tau, shown,
                                                                   tmp_path):
    gt, dt = make_dataset(1, segmentation=False)
    err = io.StringIO()
    assert main(["calibration", *write_pair(tmp_path, gt, dt), "--protocol", protocol,
                 "--iou-threshold", tau], stdout=io.StringIO(), stderr=err) == 2
    assert f"--iou-threshold {tau}: the {protocol} protocol evaluates IoU" in err.getvalue()
    assert shown in err.getvalue()
def test_openimages_lrp_without_any_ground_truth_box_is_undefined_not_a_crash(tmp_path):
    """A box CSV with its header only (found by the fuzzer): the decisions indexed the empty
    group-of column with 0 (IndexError, a traceback from `openimages --lrp`)."""
    (tmp_path / "boxes.csv").write_text("ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,"
                                        "YMax,IsOccluded,IsTruncated,IsGroupOf,IsDepiction\n")
    (tmp_path / "dets.csv").write_text("ImageID,LabelName,Score,XMin,XMax,YMin,YMax\n"
                                       "b,/m/01,0.464,0.0211,0.3446,0.0350,0.2350\n")
    (tmp_path / "labels.csv").write_text("ImageID,Source,LabelName,Confidence\n"
                                         "b,verification,/m/01,1\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["openimages", str(tmp_path / "boxes.csv"), str(tmp_path / "dets.csv"),
                 "--labels", str(tmp_path / "labels.csv"), "--lrp", "--json",
                 str(tmp_path / "m.json")], stdout=out, stderr=err) == 0, err.getvalue()
    assert json.loads((tmp_path / "m.json").read_text())["lrp"]["summary"]["moLRP"] == -1
