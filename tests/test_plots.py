"""deteval.viz.plots: the drawn data are the result's numbers; files are written."""

from __future__ import annotations

import numpy as np
import pytest

import deteval
from deteval.demo import make_demo

pytest.importorskip("matplotlib", reason="plots need matplotlib (pip install 'deteval[plot]')")

from deteval.viz import plots  # noqa: E402


@pytest.fixture(scope="module")
def demo():
    return make_demo(seed=3, n_images=16)


@pytest.fixture(scope="module")
def coco(demo):
    return deteval.evaluate_coco(*demo)


@pytest.fixture(scope="module")
def voc(demo):
    dataset = deteval.read_coco_gt(demo[0])
    return deteval.evaluate_voc(dataset, deteval.read_coco_results(demo[1], dataset),
                                params=deteval.VOC2012, iou_thresholds=(0.5, 0.7))


def _lines(figure, prefix):
    return {line.get_gid(): line for line in figure.axes[0].get_lines()
            if (line.get_gid() or "").startswith(prefix)}


@pytest.mark.parametrize("iou", [0.5, 0.75])
def test_coco_pr_curves_are_the_precision_array(coco, iou):
    figure = plots.plot_pr_curves(coco, iou_threshold=iou)
    lines = _lines(figure, "pr:")
    t = coco.params.iou_thresholds.index(iou)
    recall = np.asarray(coco.params.recall_thresholds)
    with_gt = [k for k in range(len(coco.category_names)) if coco.n_gt[k] > 0]
    assert set(lines) == {f"pr:{coco.category_names[k]}" for k in with_gt} | {"pr:overall"}
    for k in with_gt:
        line = lines[f"pr:{coco.category_names[k]}"]
        np.testing.assert_array_equal(line.get_xdata(), recall)
        np.testing.assert_array_equal(line.get_ydata(), coco.precision[t, :, k, 0, 2])
        ap = coco.precision[t, :, k, 0, 2].mean()
        assert f"(AP {ap:.3f})" in line.get_label()
    overall = lines["pr:overall"]
    np.testing.assert_array_equal(overall.get_ydata(),
                                  coco.precision[t, :, with_gt, 0, 2].mean(axis=0))
    # The overall AP in the legend is pycocotools' summary number.
    stat = coco.stat("AP50" if iou == 0.5 else "AP75")
    assert f"(AP {stat:.3f})" in overall.get_label()


def test_coco_pr_curves_skip_classes_without_ground_truth():
    gt, dt = make_demo(seed=1, n_images=4)
    gt["categories"].append({"id": 99, "name": "unicorn"})
    result = deteval.evaluate_coco(gt, dt)
    lines = _lines(plots.plot_pr_curves(result), "pr:")
    assert "pr:unicorn" not in lines and "pr:person" in lines


def test_voc_pr_curves_are_the_result_curves(voc):
    figure = plots.plot_pr_curves(voc, iou_threshold=0.7, categories=["car", 1])
    lines = _lines(figure, "pr:")
    assert list(lines) == ["pr:car", "pr:person"]  # in the order asked; no overall curve
    for name in ("car", "person"):
        curve = voc.pr_curve(name, iou_threshold=0.7)
        np.testing.assert_array_equal(lines[f"pr:{name}"].get_xdata(), curve.recall)
        np.testing.assert_array_equal(lines[f"pr:{name}"].get_ydata(), curve.precision)
        k = voc.category_names.index(name)
        assert f"(AP {voc.ap[1, k]:.3f})" in lines[f"pr:{name}"].get_label()
    assert f"mAP {voc.map[1]:.3f}" in figure.axes[0].get_title()


def test_pr_curves_refuse_unknown_settings(coco, voc):
    with pytest.raises(ValueError, match="was not evaluated"):
        plots.plot_pr_curves(coco, iou_threshold=0.52)
    with pytest.raises(ValueError, match="was not evaluated"):
        plots.plot_pr_curves(voc, iou_threshold=0.75)
    with pytest.raises(ValueError, match="unknown category 'zebra'"):
        plots.plot_pr_curves(coco, categories=["zebra"])
    with pytest.raises(TypeError, match="COCOResult or a VOCResult"):
        plots.plot_pr_curves({"stats": []})
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        plots.plot_pr_curves(coco, path="curves.jpg")


def test_f1_curve_marks_the_best_operating_point(demo):
    points = deteval.operating_points(*demo)
    for category in (None, "car"):
        figure = plots.plot_f1_curve(points, category=category)
        lines = {line.get_gid(): line for line in figure.axes[0].get_lines()}
        curve = points.curves["overall" if category is None else category]
        for key in ("fbeta", "precision", "recall"):
            np.testing.assert_array_equal(lines[key].get_xdata(), curve["thresholds"])
            np.testing.assert_array_equal(lines[key].get_ydata(), curve[key])
        best = points.best(category)
        assert lines["best"].get_xdata().tolist() == [best["threshold"]]
        assert lines["best"].get_ydata().tolist() == [best["fbeta"]]
        assert best["fbeta"] == curve["fbeta"].max()


def test_f1_curve_without_detections_has_no_marker(demo):
    points = deteval.operating_points(demo[0], [])
    lines = {line.get_gid() for line in plots.plot_f1_curve(points).axes[0].get_lines()}
    assert "best" not in lines and "fbeta" in lines
    with pytest.raises(TypeError, match="OperatingPoints"):
        plots.plot_f1_curve(deteval.detection_confusion_matrix(*demo))


@pytest.mark.parametrize("normalize", [None, "true", "pred"])
def test_confusion_heatmap_holds_the_counts(demo, normalize):
    cm = deteval.detection_confusion_matrix(*demo, score_threshold=0.3)
    figure = plots.plot_confusion_matrix(cm, normalize=normalize)
    image = figure.axes[0].get_images()[0]
    assert image.get_gid() == "confusion"
    np.testing.assert_array_equal(image.get_array(), cm.normalized(normalize))
    if normalize is None:
        np.testing.assert_array_equal(image.get_array(), cm.counts)
    labels = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert labels == list(cm.labels) and labels[-1] == "Unknown"
    # Every non-zero cell is written with its count, at its place.
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
             for t in figure.axes[0].texts}
    nonzero = {tuple(ij) for ij in np.argwhere(cm.counts > 0)}
    assert set(texts) == nonzero
    for (i, j), text in texts.items():
        assert f"{cm.counts[i, j]}" in text


def test_ap_bars_are_the_per_class_ap(coco, voc):
    figure = plots.plot_ap_bars(coco)
    axes = figure.axes[0]
    bars = axes.containers[0]
    assert bars.get_label() == "ap-bars"
    names = [t.get_text() for t in axes.get_yticklabels()]
    by_name = {row["name"]: row["AP"] for row in coco.per_class()}
    assert [bar.get_width() for bar in bars] == [by_name[n] for n in names]
    assert [bar.get_width() for bar in bars] == sorted(by_name.values(), reverse=True)
    mean_line = axes.get_lines()[0]
    assert mean_line.get_xdata()[0] == coco.stat("AP")

    figure = plots.plot_ap_bars(voc, iou_threshold=0.7, sort=False)
    bars = figure.axes[0].containers[0]
    assert [bar.get_width() for bar in bars] == voc.ap[1].tolist()
    with pytest.raises(ValueError, match="metric"):
        plots.plot_ap_bars(coco, metric="n_gt")


def test_files_are_written_as_png_and_svg(coco, demo, tmp_path):
    cm = deteval.detection_confusion_matrix(*demo)
    points = deteval.operating_points(*demo)
    for suffix in (".png", ".svg"):
        outputs = {
            "pr": plots.plot_pr_curves(coco, path=tmp_path / f"pr{suffix}"),
            "f1": plots.plot_f1_curve(points, path=tmp_path / f"f1{suffix}"),
            "cm": plots.plot_confusion_matrix(cm, path=tmp_path / f"cm{suffix}"),
            "ap": plots.plot_ap_bars(coco, path=tmp_path / f"ap{suffix}"),
        }
        for name in outputs:
            data = (tmp_path / f"{name}{suffix}").read_bytes()
            if suffix == ".png":
                assert data.startswith(b"\x89PNG\r\n\x1a\n")
            else:
                assert b"<svg" in data[:2000] and data.rstrip().endswith(b"</svg>")
    # Artists keep their ids in the SVG; the file is the same on every run.
    svg = (tmp_path / "pr.svg").read_text()
    assert 'id="pr:overall"' in svg
    plots.plot_pr_curves(coco, path=tmp_path / "again.svg")
    assert (tmp_path / "again.svg").read_text() == svg


def test_axes_are_labelled(coco, voc, demo):
    points = deteval.operating_points(*demo)
    cm = deteval.detection_confusion_matrix(*demo)
    labels = {
        "pr": plots.plot_pr_curves(coco).axes[0],
        "f1": plots.plot_f1_curve(points).axes[0],
        "f2": plots.plot_f1_curve(deteval.operating_points(*demo, beta=2)).axes[0],
        "cm": plots.plot_confusion_matrix(cm).axes[0],
        "ap": plots.plot_ap_bars(voc).axes[0],
    }
    found = {name: (ax.get_xlabel(), ax.get_ylabel()) for name, ax in labels.items()}
    assert found == {
        "pr": ("recall", "precision"),
        "f1": ("score threshold (detections scoring at least this)", "F1, precision, recall"),
        "f2": ("score threshold (detections scoring at least this)", "F2, precision, recall"),
        "cm": ("predicted class (Unknown: missed object)",
               "true class (Unknown: background false positive)"),
        "ap": ("AP@0.50", ""),   # the class names are the y tick labels
    }
    ranked = sorted((pair for pair in zip(voc.category_names, voc.ap[0])
                     if np.isfinite(pair[1])), key=lambda pair: -pair[1])
    assert [t.get_text() for t in labels["ap"].get_yticklabels()] == [n for n, _ in ranked]


def test_drawing_on_given_axes(coco, demo):
    from matplotlib.figure import Figure

    figure = Figure()
    left, right = figure.subplots(1, 2)
    assert plots.plot_pr_curves(coco, ax=left) is figure
    assert plots.plot_ap_bars(coco, ax=right) is figure
    assert left.get_lines() and right.containers


def test_ap_bars_of_a_keypoint_result_use_its_own_columns():
    from scenes import keypoint_scene

    from deteval.viz.plots import plot_ap_bars

    result = deteval.evaluate_coco(*keypoint_scene(), iou_type="keypoints")
    bars = plot_ap_bars(result, metric="AR").axes[0].containers[0]
    assert [bar.get_width() for bar in bars] == [row["AR"] for row in result.per_class()]
    with pytest.raises(ValueError, match="'APm', 'APl', 'AR'; got 'APs'"):
        plot_ap_bars(result, metric="APs")
