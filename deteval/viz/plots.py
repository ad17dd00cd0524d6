"""Plots of evaluation results with matplotlib (the optional ``deteval[plot]`` extra).

Every function draws on a new :class:`matplotlib.figure.Figure` (or on the axes given as
``ax``), never through pyplot's global state, so it is safe in scripts, servers and tests and
needs no display. ``path`` saves the figure as PNG or SVG, chosen by the suffix.

The drawn data are the result's own numbers, not resampled: a line's ``get_xdata()`` and
``get_ydata()`` are the curve in the result. Each artist that carries data has a ``gid``
(``"pr:<name>"``, ``"pr:overall"``, ``"fbeta"``, ``"precision"``, ``"recall"``, ``"best"``,
``"confusion"``; the bars' container is labelled ``"ap-bars"``) so that it can be found
again, in Python or in an SVG file.

matplotlib is imported inside the functions: ``import deteval.viz.plots`` costs nothing, and
a missing matplotlib is reported, when a plot is asked for, with the extra to install.

Examples
--------
>>> import deteval
>>> from deteval.demo import make_demo
>>> from deteval.viz.plots import plot_pr_curves
>>> gt, dt = make_demo()
>>> result = deteval.evaluate_coco(gt, dt)
>>> figure = plot_pr_curves(result, categories=["car", "dog"])
>>> [line.get_label().split(" ")[0] for line in figure.axes[0].get_lines()]
['car', 'dog', 'overall']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._threshold_labels import threshold_label

__all__ = ["plot_ap_bars", "plot_confusion_matrix", "plot_f1_curve", "plot_pr_curves"]

_SUFFIXES = {".png": "png", ".svg": "svg"}
# Cells of a confusion matrix are written in only up to this many classes (then too small).
_MAX_ANNOTATED_CLASSES = 30
_COCO_METRICS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR100")


def require_matplotlib():
    try:
        import matplotlib
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("deteval's plots need matplotlib: pip install 'deteval[plot]' "
                          "(or pip install matplotlib)") from None
    return matplotlib


def new_axes(ax: Any, figsize: tuple[float, float]):
    """The figure and axes to draw on: ``ax``'s, or a new figure with one axes."""
    if ax is not None:
        return ax.figure, ax
    require_matplotlib()
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize, layout="constrained")
    return figure, figure.add_subplot()


def check_path(path: Any) -> Path | None:
    """The output path, checked before drawing: its suffix names PNG or SVG."""
    if path is None:
        return None
    path = Path(path)
    if path.suffix.lower() not in _SUFFIXES:
        raise ValueError(f"path must end in .png or .svg (the format is chosen by the "
                         f"suffix); got {str(path)!r}")
    return path


def save_figure(figure: Any, path: Path | None) -> None:
    """Write ``figure`` to ``path`` (checked by :func:`check_path`); nothing
    without a path."""
    if path is None:
        return
    import matplotlib

    # A fixed hash salt and no date make the SVG output the same on every run.
    with matplotlib.rc_context({"svg.hashsalt": "deteval"}):
        figure.savefig(path, format=_SUFFIXES[path.suffix.lower()], dpi=100,
                       metadata={"Date": None} if path.suffix.lower() == ".svg" else None)


def _legend(ax: Any, n_entries: int) -> None:
    if n_entries == 0:
        return
    if n_entries <= 12:
        ax.legend(loc="lower left", fontsize="small", framealpha=0.9)
    else:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="x-small",
                  ncol=_legend_columns(n_entries), frameon=False)


def _legend_columns(n_entries: int) -> int:
    return max(1, math.ceil(n_entries / 30))


def _style(i: int) -> dict[str, str]:
    """Colour and line style of the i-th curve: ten colours, then again dashed, dotted..."""
    return {"color": f"C{i % 10}", "linestyle": ("-", "--", ":", "-.")[(i // 10) % 4]}


def _format_ap(value: float) -> str:
    return "n/a" if value is None or not math.isfinite(value) or value < 0 else f"{value:.3f}"


def _threshold_index(thresholds: Sequence[float], iou_threshold: float) -> int:
    """Position of ``iou_threshold`` among the evaluated thresholds (to 1e-9: linspace's
    0.55 is not the literal 0.55)."""
    values = np.asarray(thresholds, dtype=np.float64)
    hits = np.flatnonzero(np.abs(values - float(iou_threshold)) < 1e-9)
    if len(hits) == 0:
        shown = ", ".join(f"{t:g}" for t in values)
        raise ValueError(f"iou_threshold {iou_threshold!r} was not evaluated; the result has "
                         f"{shown}")
    return int(hits[0])


def _select(ids: Sequence[int], names: Sequence[str], categories: Any) -> list[int]:
    """Column positions of the categories asked for (ids or names), in the order asked."""
    if categories is None:
        return list(range(len(names)))
    if isinstance(categories, (str, int, np.integer)):
        categories = [categories]
    ids, positions = list(ids), []
    for category in categories:
        if isinstance(category, str) and category in names:
            positions.append(list(names).index(category))
        elif isinstance(category, (int, np.integer)) and not isinstance(category, bool) \
                and int(category) in ids:
            positions.append(ids.index(int(category)))
        else:
            raise ValueError(f"unknown category {category!r}; give category ids or names of "
                             "the result")
    return positions


def _is_coco(result: Any) -> bool:
    from ..protocols.coco import COCOResult
    from ..protocols.voc import VOCResult

    if isinstance(result, COCOResult):
        return True
    if isinstance(result, VOCResult):
        return False
    raise TypeError(f"result must be a COCOResult or a VOCResult; got {type(result).__name__}")


def _coco_indices(result: Any, area: str) -> tuple[int, int]:
    p = result.params
    if area not in p.area_labels:
        raise ValueError(f"area must be one of {', '.join(map(repr, p.area_labels))}; "
                         f"got {area!r}")
    m = (p.max_detections.index(100) if 100 in p.max_detections
         else len(p.max_detections) - 1)
    return p.area_labels.index(area), m


def plot_pr_curves(result: Any, *, categories: Any = None, iou_threshold: float = 0.5,
                   area: str = "all", overall: bool = True, ax: Any = None,
                   path: Any = None) -> Any:
    """Precision-recall curves per class (and overall), with each curve's AP in the legend.

    Parameters
    ----------
    result : COCOResult or VOCResult
        COCO: class ``k``'s curve is ``precision[t, :, k, a, m]`` against the recall
        thresholds (``params.recall_thresholds``), ``t`` the position of ``iou_threshold``,
        ``a`` that of ``area``, ``m`` that of maxDets 100 (else the largest); its AP is the
        mean of that row, as pycocotools averages. The overall curve is the mean over the
        classes with ground truth at each recall threshold; its AP is pycocotools' (``stats[1]``
        for IoU 0.5, area all). VOC: ``result.pr_curve(k, iou_threshold=t)``'s recall and
        precision, one point per counted detection by descending score, and ``result.ap``;
        VOC has no pooled curve, so the mAP is shown in the title instead.
    categories : sequence of int or str, optional
        Category ids or names to draw, in that order (default: all). Classes without ground
        truth have no curve and are left out.
    iou_threshold : float, default 0.5
        One of the evaluated thresholds (``ValueError`` otherwise).
    area : str, default "all"
        COCO area range label.
    overall : bool, default True
        COCO: also draw the overall (class-averaged) curve when more than one class is drawn.
    ax : matplotlib Axes, optional
        Draw there instead of on a new figure.
    path : str or PathLike, optional
        Save the figure as ``.png`` or ``.svg``.

    Returns
    -------
    matplotlib.figure.Figure
        Lines have gid ``"pr:<class name>"`` and ``"pr:overall"``.

    Examples
    --------
    >>> import deteval
    >>> from deteval.demo import make_demo
    >>> result = deteval.evaluate_coco(*make_demo())
    >>> line = plot_pr_curves(result, categories=[3]).axes[0].get_lines()[0]
    >>> bool((line.get_ydata() == result.precision[0, :, 2, 0, 2]).all())
    True
    """
    coco = _is_coco(result)
    path = check_path(path)
    names, ids = result.category_names, result.category_ids.tolist()
    columns = _select(ids, names, categories)
    n_entries = len(columns) + 1
    # Room for the legend columns beside the axes (see _legend).
    figure, ax = new_axes(ax, (6.4, 5.0) if n_entries <= 12
                       else (5.6 + 2.4 * _legend_columns(n_entries), 6.0))
    n_lines = 0
    if coco:
        p = result.params
        t = _threshold_index(p.iou_thresholds, iou_threshold)
        a, m = _coco_indices(result, area)
        recall = np.asarray(p.recall_thresholds, dtype=np.float64)
        drawn = []
        for k in columns:
            precision = result.precision[t, :, k, a, m]
            valid = precision[precision > -1]
            if len(valid) == 0:  # no ground truth of this class in this area range
                continue
            ap = float(np.mean(valid))
            line, = ax.plot(recall, precision, linewidth=1.2, **_style(n_lines),
                            label=f"{names[k]} (AP {_format_ap(ap)})")
            line.set_gid(f"pr:{names[k]}")
            drawn.append(k)
            n_lines += 1
        if overall and len(drawn) > 1:
            block = result.precision[t, :, :, a, m][:, drawn]
            keep = (block > -1).all(axis=0)
            mean_curve = np.mean(block[:, keep], axis=1)
            ap = float(np.mean(block[block > -1]))
            line, = ax.plot(recall, mean_curve, color="black", linewidth=2.4,
                            label=f"overall (AP {_format_ap(ap)})")
            line.set_gid("pr:overall")
            n_lines += 1
        title = (f"Precision-recall, IoU {threshold_label(p.iou_thresholds[t])}, area {area}, "
                 f"maxDets {p.max_detections[m]}")
    else:
        t = _threshold_index(result.params.iou_thresholds, iou_threshold)
        threshold = result.params.iou_thresholds[t]
        for k in columns:
            curve = result.pr_curve(ids[k], iou_threshold=threshold)
            if result.n_positives[k] == 0:  # recall is undefined
                continue
            line, = ax.plot(curve.recall, curve.precision, linewidth=1.2, **_style(n_lines),
                            label=f"{names[k]} (AP {_format_ap(float(result.ap[t, k]))})")
            line.set_gid(f"pr:{names[k]}")
            n_lines += 1
        title = (f"Precision-recall, IoU {threshold_label(threshold)}, mAP "
                 f"{_format_ap(float(result.map[t]))}")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, alpha=0.3)
    if n_lines == 0:
        ax.text(0.5, 0.5, "no class with ground truth", ha="center", va="center",
                transform=ax.transAxes)
    _legend(ax, n_lines)
    save_figure(figure, path)
    return figure


def plot_f1_curve(points: Any, *, category: str | None = None, ax: Any = None,
                  path: Any = None) -> Any:
    """F-score, precision and recall against the score threshold, the best point marked.

    Parameters
    ----------
    points : OperatingPoints
        From :func:`deteval.operating_points`.
    category : str, optional
        A class name; default the overall curve (all classes pooled).
    ax : matplotlib Axes, optional
    path : str or PathLike, optional
        Save as ``.png`` or ``.svg``.

    Returns
    -------
    matplotlib.figure.Figure
        Lines with gid ``"fbeta"``, ``"precision"`` and ``"recall"`` hold the curve's
        ``thresholds`` as x and the values as y exactly; the marker with gid ``"best"`` sits
        at ``points.best(category)`` (absent when no threshold gives an F above 0).

    Examples
    --------
    >>> import deteval
    >>> from deteval.demo import make_demo
    >>> points = deteval.operating_points(*make_demo())
    >>> figure = plot_f1_curve(points)
    >>> best = [l for l in figure.axes[0].get_lines() if l.get_gid() == "best"][0]
    >>> float(best.get_xdata()[0]) == points.best()["threshold"]
    True
    """
    from ..confusion import OperatingPoints

    if not isinstance(points, OperatingPoints):
        raise TypeError(f"points must be an OperatingPoints (deteval.operating_points); got "
                        f"{type(points).__name__}")
    path = check_path(path)
    curve = points.curve(category)
    best = points.best(category)
    f_name = "F1" if points.beta == 1 else f"F{points.beta:g}"
    figure, ax = new_axes(ax, (6.4, 4.4))
    x = curve["thresholds"]
    for key, label, style in (("fbeta", f_name, dict(color="C3", linewidth=2.0)),
                              ("precision", "precision", dict(color="C0", linewidth=1.2)),
                              ("recall", "recall", dict(color="C2", linewidth=1.2))):
        line, = ax.plot(x, curve[key], label=label, **style)
        line.set_gid(key)
    if math.isfinite(best["threshold"]):
        line, = ax.plot([best["threshold"]], [best["fbeta"]], marker="o", markersize=8,
                        linestyle="none", color="black",
                        label=f"best {f_name} {best['fbeta']:.3f} at score "
                              f"{best['threshold']:.3f}")
        line.set_gid("best")
        ax.axvline(best["threshold"], color="black", linewidth=0.8, linestyle=":")
    elif len(x) == 0:
        ax.text(0.5, 0.5, "no detections", ha="center", va="center", transform=ax.transAxes)
    name = "all classes" if category is None else category
    ax.set_title(f"{f_name}, precision and recall by score threshold ({name}, IoU "
                 f"{points.iou_threshold:g})", fontsize="medium")
    ax.set_xlabel("score threshold (detections scoring at least this)")
    ax.set_ylabel(f"{f_name}, precision, recall")
    ax.set_ylim(0.0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    save_figure(figure, path)
    return figure


def plot_confusion_matrix(cm: Any, *, normalize: str | None = None, cmap: str = "Blues",
                          ax: Any = None, path: Any = None) -> Any:
    """Heat map of a detection confusion matrix, the Unknown row and column included.

    Parameters
    ----------
    cm : DetectionConfusion
        From :func:`deteval.detection_confusion_matrix`.
    normalize : {None, "true", "pred"}
        Colour by the raw counts (None) or by the counts divided by their row ("true") or
        column ("pred") total; see :meth:`DetectionConfusion.normalized`.
    cmap : str, default "Blues"
        A matplotlib colour map name.
    ax : matplotlib Axes, optional
    path : str or PathLike, optional
        Save as ``.png`` or ``.svg``.

    Returns
    -------
    matplotlib.figure.Figure
        The image (gid ``"confusion"``) holds ``cm.normalized(normalize)``: rows true
        classes, columns predicted classes. Up to 30 classes, each cell is labelled with its
        count (and its fraction when normalised); empty cells are left blank.

    Examples
    --------
    >>> import deteval
    >>> from deteval.demo import make_demo
    >>> cm = deteval.detection_confusion_matrix(*make_demo(), score_threshold=0.3)
    >>> image = plot_confusion_matrix(cm).axes[0].get_images()[0]
    >>> bool((image.get_array() == cm.counts).all())
    True
    """
    from ..confusion import DetectionConfusion

    if not isinstance(cm, DetectionConfusion):
        raise TypeError(f"cm must be a DetectionConfusion (deteval.detection_confusion_matrix);"
                        f" got {type(cm).__name__}")
    path = check_path(path)
    values = cm.normalized(normalize)
    counts = cm.counts
    n = len(cm.labels)
    side = min(14.0, max(4.8, 0.45 * n + 2.5))
    figure, ax = new_axes(ax, (side + 1.2, side))
    image = ax.imshow(values, cmap=cmap, interpolation="nearest", aspect="equal",
                      vmin=0.0, vmax=max(float(values.max()), 1e-12) if values.size else 1.0)
    image.set_gid("confusion")
    figure.colorbar(image, ax=ax, shrink=0.8,
                    label="count" if normalize is None else f"fraction of the {normalize} "
                    f"{'class' if normalize == 'true' else 'prediction'} total")
    ax.set_xticks(range(n), labels=cm.labels, rotation=60, ha="right", fontsize="small")
    ax.set_yticks(range(n), labels=cm.labels, fontsize="small")
    ax.set_xlabel("predicted class (Unknown: missed object)")
    ax.set_ylabel("true class (Unknown: background false positive)")
    ax.set_title(f"Detection confusion matrix (IoU {cm.iou_threshold:g}, score >= "
                 f"{cm.score_threshold:g})", fontsize="medium")
    if n <= _MAX_ANNOTATED_CLASSES + 1:
        top = float(values.max()) if values.size else 0.0
        for (i, j), count in np.ndenumerate(counts):
            if count == 0:
                continue
            text = str(int(count)) if normalize is None else \
                f"{values[i, j]:.2f}\n({int(count)})"
            dark = top > 0 and values[i, j] > 0.55 * top
            ax.text(j, i, text, ha="center", va="center", fontsize="x-small",
                    color="white" if dark else "black")
    # Lines that set the Unknown row and column apart.
    ax.axhline(n - 1.5, color="grey", linewidth=0.8)
    ax.axvline(n - 1.5, color="grey", linewidth=0.8)
    save_figure(figure, path)
    return figure


def plot_ap_bars(result: Any, *, metric: str = "AP", iou_threshold: float | None = None,
                 sort: bool = True, ax: Any = None, path: Any = None) -> Any:
    """Horizontal bars of the per-class AP, with the mean as a vertical line.

    Parameters
    ----------
    result : COCOResult or VOCResult
        COCO: the ``metric`` column of ``result.per_class()``; the line is the matching
        summary value (``stats``) when ``metric`` is one of the 12, else the mean of the bars.
        VOC: ``result.ap[t]`` and the line ``result.map[t]``.
    metric : str, default "AP"
        COCO only: ``"AP"``, ``"AP50"``, ``"AP75"``, ``"APs"``, ``"APm"``, ``"APl"`` or
        ``"AR100"``.
    iou_threshold : float, optional
        VOC only: which evaluated threshold (default: the first).
    sort : bool, default True
        Best class on top; otherwise in the result's category order.
    ax : matplotlib Axes, optional
    path : str or PathLike, optional
        Save as ``.png`` or ``.svg``.

    Returns
    -------
    matplotlib.figure.Figure
        One bar per class with a defined value (classes without ground truth are left
        out), in the bar container labelled ``"ap-bars"``; bar widths are the values
        exactly, and the y tick labels the class names.

    Examples
    --------
    >>> import deteval
    >>> from deteval.demo import make_demo
    >>> result = deteval.evaluate_coco(*make_demo())
    >>> bars = plot_ap_bars(result, sort=False).axes[0].containers[0]
    >>> [bar.get_width() for bar in bars] == [row["AP"] for row in result.per_class()]
    True
    """
    coco = _is_coco(result)
    path = check_path(path)
    if coco:
        rows = result.per_class()
        # The per-class keys of this result (keypoint results have no APs, and AR for AR100).
        choices = [k for k in (rows[0] if rows else {}) if k.startswith(("AP", "AR"))] or list(
            _COCO_METRICS)
        if metric not in choices:
            raise ValueError(f"metric must be one of {', '.join(map(repr, choices))}; got "
                             f"{metric!r}")
        pairs = [(row["name"], float(row[metric])) for row in rows if row[metric] >= 0]
        if metric in result.stat_names:
            mean, mean_label = result.stat(metric), metric
        else:
            mean = float(np.mean([v for _, v in pairs])) if pairs else float("nan")
            mean_label = f"mean {metric}"
        xlabel = metric
    else:
        if metric != "AP":
            raise ValueError(f"metric applies to COCO results only; got {metric!r}")
        t = 0 if iou_threshold is None else _threshold_index(result.params.iou_thresholds,
                                                             iou_threshold)
        pairs = [(name, float(v)) for name, v in zip(result.category_names, result.ap[t])
                 if math.isfinite(v)]
        mean = float(result.map[t])
        threshold = result.params.iou_thresholds[t]
        shown = threshold_label(threshold)
        mean_label, xlabel = f"mAP@{shown}", f"AP@{shown}"
    if sort:
        pairs.sort(key=lambda pair: -pair[1])  # stable: ties keep the category order
    figure, ax = new_axes(ax, (6.4, max(2.5, 0.24 * len(pairs) + 1.4)))
    y = np.arange(len(pairs))
    bars = ax.barh(y, [v for _, v in pairs], color="C0", height=0.7)
    bars.set_label("ap-bars")
    ax.set_yticks(y, labels=[name for name, _ in pairs],
                  fontsize="small" if len(pairs) <= 40 else "x-small")
    ax.invert_yaxis()
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel(xlabel)
    if math.isfinite(mean) and mean >= 0:
        line = ax.axvline(mean, color="C3", linewidth=1.5, label=f"{mean_label} = {mean:.3f}")
        ax.legend(handles=[line], loc="lower right", fontsize="small")
    if not pairs:
        ax.text(0.5, 0.5, "no class with ground truth", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_title(f"Per-class {xlabel}", fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    save_figure(figure, path)
    return figure
