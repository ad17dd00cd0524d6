"""The Open Images challenge protocol (docs/protocols/openimages.md): the literal reference and
``evaluate_openimages`` agree exactly on seeded problems; each rule on a hand-computed case;
the readers' errors; the command."""

from __future__ import annotations

import json

import numpy as np
import oid_reference as ref
import oidgen
import pytest
from clirun import run

from deteval import FormatError, evaluate_openimages
from deteval.io.openimages import (
    OIDBoxes,
    OIDDetections,
    OIDImageLabels,
    read_oid_boxes,
    read_oid_detections,
    read_oid_hierarchy,
    read_oid_image_labels,
)
from deteval.matching import IGNORED, NOT_EVALUATED, TP
from deteval.protocols._openimages_match import tf_average_precision

# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def boxes(*rows):
    """rows: (image, label, xmin, ymin, xmax, ymax, group_of)"""
    return OIDBoxes(np.array([r[0] for r in rows], dtype=object),
                    np.array([r[1] for r in rows], dtype=object),
                    np.array([r[2:6] for r in rows], dtype=float).reshape(-1, 4),
                    np.array([bool(r[6]) for r in rows], dtype=bool))


def dets(*rows):
    """rows: (image, label, score, xmin, ymin, xmax, ymax)"""
    return OIDDetections(np.array([r[0] for r in rows], dtype=object),
                         np.array([r[1] for r in rows], dtype=object),
                         np.array([r[2] for r in rows], dtype=float),
                         np.array([r[3:7] for r in rows], dtype=float).reshape(-1, 4))


def labels(*rows):
    return OIDImageLabels(np.array([r[0] for r in rows], dtype=object),
                          np.array([r[1] for r in rows], dtype=object),
                          np.array([r[2] for r in rows], dtype=np.int64))


def same(a, b) -> bool:
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


# --------------------------------------------------------------------------------------------
# the literal reference and the implementation: equal, not close
# --------------------------------------------------------------------------------------------


def check_against_reference(g, lab, d, h, classes):
    for hierarchy in (None, h):
        ap, mean_ap, num_gt = ref.evaluate(g, lab, d, classes, hierarchy=hierarchy)
        gt, image_labels, dt = oidgen.to_objects(g, lab, d)
        result = evaluate_openimages(gt, dt, image_labels=image_labels, hierarchy=hierarchy,
                                     classes=classes)
        assert same(result.ap, ap), (hierarchy is not None, result.ap, ap)
        assert same(result.mean_ap, mean_ap)
        assert same(result.num_gt, num_gt)


@pytest.mark.parametrize("block", range(4))
def test_reference_agreement(block):
    """200 seeded problems, each with and without the hierarchy (400 evaluations)."""
    for seed in range(block * 50, block * 50 + 50):
        check_against_reference(*oidgen.make_problem(seed))


@pytest.mark.parametrize("seed", range(6))
def test_reference_agreement_crowded_ties(seed):
    """Groups of 40 detections with one-decimal scores: numpy's unstable argsort order."""
    g, lab, d, h, classes = oidgen.make_problem(1000 + seed, n_images=20, n_classes=3)
    rng = np.random.default_rng(seed)
    image, label = (g[0][0], g[0][1]) if g else ("img000", classes[0])
    for _ in range(40):
        x0, y0 = rng.random(2) * 0.5
        d.append((image, label, float(np.round(rng.random(), 1)), x0, x0 + .3, y0, y0 + .3))
    check_against_reference(g, lab, d, h, classes)


def test_reference_agreement_expanded_detections():
    for seed in range(20):
        g, lab, d, h, classes = oidgen.make_problem(2000 + seed)
        ap, mean_ap, _ = ref.evaluate(g, lab, d, classes, hierarchy=h, expand_detections=True)
        gt, image_labels, dt = oidgen.to_objects(g, lab, d)
        result = evaluate_openimages(gt, dt, image_labels=image_labels, hierarchy=h,
                                     classes=classes, expand_detections=True)
        assert same(result.ap, ap) and same(result.mean_ap, mean_ap)


# --------------------------------------------------------------------------------------------
# hand-computed cases, one per rule
# --------------------------------------------------------------------------------------------


def test_iou_half_is_a_match_and_no_plus_one():
    """§6.1: IoU = 0.25 / 0.5 = 0.5 exactly, no +1 pixel; 0.5 >= 0.5 is a match."""
    gt = boxes(("i", "c", 0, 0, .5, .5, 0))
    result = evaluate_openimages(gt, dets(("i", "c", .9, 0, 0, .5, .25)))
    assert result.ap.tolist() == [1.0]
    assert result.dt_status.tolist() == [TP]
    below = evaluate_openimages(gt, dets(("i", "c", .9, 0, 0, .5, .2499)))
    assert below.ap.tolist() == [0.0]


def test_duplicate_is_false_positive_even_if_another_box_is_free():
    """§6.2: the second detection's best box is taken: FP, though box B (IoU .6) is free."""
    gt = boxes(("i", "c", 0, 0, .4, .4, 0), ("i", "c", .1, 0, .5, .4, 0))
    dt = dets(("i", "c", .9, 0, 0, .4, .4), ("i", "c", .8, .05, 0, .45, .4))
    result = evaluate_openimages(gt, dt)
    # entries [TP .9, FP .8], 2 objects: precision [1, .5], recall [.5, .5] -> AP .5
    assert result.ap.tolist() == [0.5]
    assert result.num_tp.tolist() == [1] and result.num_fp.tolist() == [1]


def test_group_of_counts_once_with_its_best_score():
    """§7: three detections inside one group-of box: one TP scored .9, two ignored."""
    gt = boxes(("i", "c", 0, 0, 1, 1, 1), ("i", "c", 0, 0, .1, .1, 0))
    dt = dets(("i", "c", .3, .1, .1, .3, .3), ("i", "c", .9, .5, .5, .7, .7),
              ("i", "c", .6, .6, .1, .8, .3), ("i", "c", .95, .8, .8, 1.5, 1.5))
    result = evaluate_openimages(gt, dt)
    # the .95 detection is half outside (IoA .2 / .49 < .5): FP; entries: FP .95, TP .9.
    # 2 objects (plain box missed): precision [0, .5], recall [0, .5] -> AP .25
    assert result.ap.tolist() == [0.25]
    assert result.dt_status.tolist() == [IGNORED, TP, IGNORED, 0]


def test_unhit_group_of_box_is_a_miss():
    """§7.3: group-of weight 1: a group-of box without detections is a false negative."""
    gt = boxes(("i", "c", 0, 0, .4, .4, 1), ("i", "c", .5, .5, 1, 1, 1))
    result = evaluate_openimages(gt, dets(("i", "c", .9, .1, .1, .2, .2)))
    assert result.num_gt.tolist() == [2.0] and result.ap.tolist() == [0.5]


def test_group_of_needs_a_positive_score():
    """§7.2: a group-of box hit only by scores <= 0 gives no entry (its score stays 0)."""
    gt = boxes(("i", "c", 0, 0, 1, 1, 1))
    result = evaluate_openimages(gt, dets(("i", "c", -.5, .1, .1, .2, .2),
                                          ("i", "c", 0.0, .3, .3, .4, .4)))
    assert result.ap.tolist() == [0.0] and result.num_tp.tolist() == [0]
    assert result.num_fp.tolist() == [0]


def test_duplicate_inside_group_of_box_is_ignored():
    """§7.1: a duplicate of a taken plain box lying in a group-of box is absorbed there."""
    gt = boxes(("i", "c", 0, 0, .4, .4, 0), ("i", "c", 0, 0, 1, 1, 1))
    dt = dets(("i", "c", .9, 0, 0, .4, .4), ("i", "c", .8, 0, 0, .4, .38))
    result = evaluate_openimages(gt, dt)
    assert result.ap.tolist() == [1.0] and result.num_fp.tolist() == [0]


def test_detections_of_unverified_classes_are_skipped():
    """§4: a class neither boxed nor labelled in the image is not evaluated there; a negative
    label (confidence 0) makes it evaluated, hence a false positive."""
    gt = boxes(("a", "c", 0, 0, .5, .5, 0))
    dt = dets(("a", "c", .5, 0, 0, .5, .5), ("b", "c", .9, 0, 0, .5, .5))
    skipped = evaluate_openimages(gt, dt)
    assert skipped.ap.tolist() == [1.0]
    assert skipped.dt_status.tolist() == [TP, NOT_EVALUATED]
    assert any("not evaluated" in note for note in skipped.notes)
    negative = evaluate_openimages(gt, dt, image_labels=labels(("b", "c", 0)))
    assert negative.ap.tolist() == [0.5]
    positive = evaluate_openimages(gt, dt, image_labels=labels(("b", "c", 1)))
    assert positive.ap.tolist() == [0.5]


def test_hierarchy_expands_boxes_up_and_negative_labels_down():
    """§5: a dog box is also an animal box; a negative 'animal' label verifies 'dog'."""
    tree = {"LabelName": "root", "Subcategory": [
        {"LabelName": "animal", "Subcategory": [{"LabelName": "dog"}, {"LabelName": "cat"}]}]}
    gt = boxes(("a", "dog", 0, 0, .5, .5, 0))
    dt = dets(("a", "animal", .9, 0, 0, .5, .5), ("b", "dog", .8, 0, 0, .5, .5))
    result = evaluate_openimages(gt, dt, image_labels=labels(("b", "animal", 0)),
                                 hierarchy=tree)
    assert result.classes == ("animal", "cat", "dog")
    assert result.num_gt.tolist() == [1.0, 0.0, 1.0]
    # animal: TP; cat: no GT (NaN, left out of the mean); dog: FP .8 only -> AP 0
    assert same(result.ap, [1.0, np.nan, 0.0]) and result.mean_ap == 0.5


def test_hierarchy_node_reached_twice_is_listed_twice():
    """§5.1: 'pet' is reached by two paths (animal > pet, animal > domestic > pet): the tool
    lists it twice among dog's ancestors, so a dog box makes two 'pet' boxes."""
    tree = {"LabelName": "root", "Subcategory": [{"LabelName": "animal", "Subcategory": [
        {"LabelName": "pet", "Subcategory": [{"LabelName": "dog"}]},
        {"LabelName": "domestic", "Subcategory": [
            {"LabelName": "pet", "Subcategory": [{"LabelName": "dog"}]}]}]}]}
    gt = boxes(("a", "dog", 0, 0, .5, .5, 0))
    result = evaluate_openimages(gt, dets(("a", "pet", .9, 0, 0, .5, .5)), hierarchy=tree)
    assert result.gt.label.tolist() == ["dog", "pet", "pet", "domestic", "animal"]
    assert result.num_gt[result.classes.index("pet")] == 2.0
    assert result.ap[result.classes.index("pet")] == 0.5


def test_invalid_boxes_and_low_scores_are_not_evaluated():
    """§3: no area, or score <= -10: dropped before matching (not false positives)."""
    gt = boxes(("a", "c", 0, 0, .5, .5, 0))
    dt = dets(("a", "c", .9, .2, .2, .2, .6), ("a", "c", -10.0, 0, 0, .5, .5),
              ("a", "c", -9.0, 0, 0, .5, .5))
    result = evaluate_openimages(gt, dt)
    assert result.dt_status.tolist() == [NOT_EVALUATED, NOT_EVALUATED, TP]
    assert result.ap.tolist() == [1.0]


def test_average_precision_formula():
    """§8: precision made monotone, summed over recall changes: 1/3 * 1 + 1/3 * 2/3."""
    value = tf_average_precision(np.array([.9, .8, .7]), np.array([1.0, 0.0, 1.0]), 3.0)
    assert value == np.sum(np.array([1 / 3, 2 / 3 - 1 / 3, 1 - 2 / 3])
                           * np.array([1.0, 2 / 3, 0.0]))
    assert abs(value - 5 / 9) < 1e-15
    assert tf_average_precision(np.zeros(0), np.zeros(0), 2.0) == 0.0


def test_class_without_gt_is_nan_and_all_nan_mean():
    result = evaluate_openimages(boxes(), dets(("a", "c", .9, 0, 0, .5, .5)))
    assert result.classes == ("c",) and np.isnan(result.ap[0]) and np.isnan(result.mean_ap)


def test_classes_option_refuses_unknown_labels():
    gt = boxes(("a", "c", 0, 0, .5, .5, 0))
    with pytest.raises(FormatError, match="not in the class list: x"):
        evaluate_openimages(gt, dets(("a", "x", .9, 0, 0, .5, .5)), classes=["c"])
    with pytest.raises(FormatError, match="not in the class hierarchy"):
        evaluate_openimages(gt, dets(), hierarchy={"LabelName": "root"})
    with pytest.raises(ValueError, match="needs a hierarchy"):
        evaluate_openimages(gt, dets(), expand_detections=True)


def test_match_table_and_inputs_untouched():
    g, lab, d, h, classes = oidgen.make_problem(7)
    gt, image_labels, dt = oidgen.to_objects(g, lab, d)
    before = dt.score.copy()
    result = evaluate_openimages(gt, dt, image_labels=image_labels, hierarchy=h)
    assert same(dt.score, before)
    table = result.matches
    status, matched = table.detection_status()[0], table.detection_matches()[0]
    # the table: plain matches are TP, detections inside group-of boxes are IGNORED there
    assert np.array_equal(status == TP, (result.dt_status == TP) & ~table.gt_crowd[matched]
                          & (matched >= 0))
    assert np.array_equal(status == IGNORED, (matched >= 0) & table.gt_crowd[matched])
    assert np.array_equal(status == NOT_EVALUATED, result.dt_status == NOT_EVALUATED)
    assert not result.ap.flags.writeable and not result.dt_status.flags.writeable
    assert json.dumps(result.to_dict(), allow_nan=False)


# --------------------------------------------------------------------------------------------
# readers
# --------------------------------------------------------------------------------------------


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_readers_and_decimal_commas(tmp_path):
    path = write(tmp_path, "b.csv", 'ImageID,Source,LabelName,XMin,XMax,YMin,YMax,IsGroupOf\n'
                 'i,x,c,"0,25",0.5,0.1,0.6,\ni,x,d,0,1,0,1,-1\n')
    b = read_oid_boxes(path)
    assert b.xyxy.tolist() == [[.25, .1, .5, .6], [0, 0, 1, 1]]
    assert b.group_of.tolist() == [False, True] and b.source == str(path)
    d = read_oid_detections(write(tmp_path, "d.csv", "ImageID,LabelName,Score,XMin,XMax,YMin,"
                                  "YMax\ni,c,0.5,0,1,0,1\n"))
    assert d.score.tolist() == [0.5]
    lab = read_oid_image_labels(write(tmp_path, "l.csv", "ImageID,Source,LabelName,Confidence\n"
                                      "i,h,c,1\ni,h,d,0\n"))
    assert lab.confidence.tolist() == [1, 0]


@pytest.mark.parametrize("text, match", [
    ("ImageID,LabelName,XMin,XMax,YMin,YMax\n", "line 1: missing column.s. IsGroupOf"),
    ("ImageID,LabelName,XMin,XMax,YMin,YMax,IsGroupOf\ni,c,0,x,0,1,0\n",
     "line 2: XMax must be a number; got 'x'"),
    ("ImageID,LabelName,XMin,XMax,YMin,YMax,IsGroupOf\ni,c,0,1,0,1,0\ni,c,.5,.4,0,1,0\n",
     "line 3: box with XMax < XMin"),
    ("ImageID,LabelName,XMin,XMax,YMin,YMax,IsGroupOf\ni,,0,1,0,1,0\n", "line 2: LabelName"),
    ("ImageID,LabelName,XMin,XMax,YMin,YMax,IsGroupOf\ni,c,0,1\n", "line 2: 4 fields"),
    ("", "empty file"),
])
def test_box_reader_errors(tmp_path, text, match):
    path = write(tmp_path, "boxes.csv", text)
    with pytest.raises(FormatError, match=match) as info:
        read_oid_boxes(path)
    assert str(path) in str(info.value)


def test_a_json_file_given_as_csv_is_named_without_its_whole_first_line(tmp_path):
    """A JSON results file passed where a CSV is read has its whole text on line 1: the
    error names the missing columns and shows 200 characters of it, not megabytes."""
    text = json.dumps([{"image_id": i, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5}
                       for i in range(500)])
    path = write(tmp_path, "results.csv", text + "\n")
    with pytest.raises(FormatError, match="missing column") as info:
        read_oid_boxes(path)
    message = str(info.value)
    assert f"({len(text)} characters)" in message and len(message) < 600


def test_other_reader_errors(tmp_path):
    with pytest.raises(FormatError, match="line 2: Confidence must be 0"):
        read_oid_image_labels(write(tmp_path, "l.csv", "ImageID,LabelName,Confidence\ni,c,2\n"))
    with pytest.raises(FormatError, match="line 3: Score is NaN"):
        read_oid_detections(write(tmp_path, "d.csv", "ImageID,LabelName,Score,XMin,XMax,YMin,"
                                  "YMax\ni,c,1,0,1,0,1\ni,c,nan,0,1,0,1\n"))
    with pytest.raises(FormatError, match=r"\$.Subcategory\[0\]: expected an object"):
        read_oid_hierarchy(write(tmp_path, "h.json", '{"LabelName": "r", "Subcategory": [3]}'))
    with pytest.raises(FormatError, match="not valid JSON"):
        read_oid_hierarchy(write(tmp_path, "h2.json", "{"))
    with pytest.raises(FileNotFoundError, match="detections file not found"):
        read_oid_detections(tmp_path / "missing.csv")


def test_shared_sample_boxes_read_and_self_evaluate(voc_sample_dir, tmp_path):
    """The shared Open Images CSV (decimal commas, empty IsGroupOf) against itself: AP 1."""
    gt = read_oid_boxes(voc_sample_dir / "gts" / "openimages_format" / "all_bounding_boxes.csv")
    assert len(gt) > 100 and not gt.group_of.any()
    dt = OIDDetections(gt.image_id, gt.label, np.linspace(1, .5, len(gt)), gt.xyxy)
    result = evaluate_openimages(gt, dt)
    assert np.all(result.ap == 1.0) and result.mean_ap == 1.0


# --------------------------------------------------------------------------------------------
# command
# --------------------------------------------------------------------------------------------


def test_cli(tmp_path):
    gt = write(tmp_path, "gt.csv", "ImageID,LabelName,XMin,XMax,YMin,YMax,IsGroupOf\n"
               "a,dog,0,0.5,0,0.5,0\nb,dog,0,0.5,0,0.5,1\n")
    dt = write(tmp_path, "dt.csv", "ImageID,LabelName,Score,XMin,XMax,YMin,YMax\n"
               "a,animal,0.9,0,0.5,0,0.5\na,dog,0.8,0,0.5,0,0.5\nc,dog,0.7,0,1,0,1\n")
    lab = write(tmp_path, "l.csv", "ImageID,LabelName,Confidence\nb,cat,0\n")
    tree = write(tmp_path, "h.json", json.dumps({"LabelName": "root", "Subcategory": [
        {"LabelName": "animal", "Subcategory": [{"LabelName": "dog"}, {"LabelName": "cat"}]}]}))
    out_json = tmp_path / "out.json"
    status, out, err = run("openimages", gt, dt, "--labels", lab, "--hierarchy", tree,
                           "--json", out_json, "--per-class", "--matches", tmp_path / "m.csv")
    assert status == 0, err
    assert out.startswith("Open Images challenge detection AP@0.5IOU: mAP = 0.500000")
    assert "1 detection(s) on images without ground truth" in err
    payload = json.loads(out_json.read_text())
    # dog: a plain box found, a group-of box (image b) missed -> AP .5; animal the same
    assert payload["metrics"]["OpenImagesDetectionChallenge_PerformanceByCategory/AP@0.5IOU/dog"] \
        == 0.5
    assert payload["metrics"]["OpenImagesDetectionChallenge_Precision/mAP@0.5IOU"] == 0.5
    assert (tmp_path / "m.csv").read_text().startswith("detection,iou_threshold,status,gt")
    classes = write(tmp_path, "classes.txt", "dog\n")
    status, out, err = run("openimages", gt, dt, "--classes", classes)
    assert status == 1 and "not in the class list: animal" in err


def test_cli_error_names_file_and_line(tmp_path):
    gt = write(tmp_path, "gt.csv",
               "ImageID,LabelName,XMin,XMax,YMin,YMax,IsGroupOf\na,c,0,y,0,1,0\n")
    dt = write(tmp_path, "dt.csv", "ImageID,LabelName,Score,XMin,XMax,YMin,YMax\n")
    status, out, err = run("openimages", gt, dt)
    assert status == 1 and f"{gt}: line 2: XMax must be a number" in err and not out
