"""The report's figures as inline SVG, drawn from :mod:`._views` without matplotlib.

Sizes are fixed in pixels and bounded whatever the number of classes (the heatmap shows at
most :data:`~._views.HEATMAP_CLASSES` classes, the small multiples 16), so the page fits
1280 pixels. Labels are cut to a length that fits their slot (the full name is in a
``<title>`` tooltip), so no two texts overlap; titles and legends are HTML captions.
Clickable parts carry ``data-true`` / ``data-pred`` (confusion cells) or ``data-class``
(class panels), which the page's script turns into gallery filters.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

#: Width in pixels of one character at font size 1 (a generous sans-serif average).
_CHAR = 0.62
_LIGHT, _DARK = (247, 251, 255), (8, 48, 107)
#: Curve colours: F1, precision, recall (and run A, run B in comparisons).
COLOURS = {"f1": "#c0392b", "precision": "#2557a7", "recall": "#1e8449", "a": "#2557a7",
           "b": "#d35400", "mean": "#1d2330"}


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def short(name: str, width: float, size: float = 11) -> str:
    """``name`` cut (with an ellipsis) to fit ``width`` pixels at font ``size``."""
    room = max(1, int(width / (_CHAR * size)))
    return name if len(name) <= room else name[:max(room - 1, 1)] + "\u2026"


def text(x: float, y: float, value: str, *, size: float = 11, anchor: str = "start",
         rotate: float = 0, css: str = "", tip: str | None = None) -> str:
    where = (f'transform="translate({x:.1f},{y:.1f}) rotate({rotate:g})"' if rotate
             else f'x="{x:.1f}" y="{y:.1f}"')
    title = f"<title>{_e(tip)}</title>" if tip else ""
    cls = f' class="{css}"' if css else ""
    return (f'<text {where} font-size="{size:g}" text-anchor="{anchor}"{cls}>{title}'
            f"{_e(value)}</text>")


def svg(width: float, height: float, body: Sequence[str], *, label: str,
        css: str = "plot") -> str:
    return (f'<svg class="{css}" width="{width:.0f}" '
            f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
            f'aria-label="{_e(label)}">' + "".join(body) + "</svg>")


def polyline(xs: np.ndarray, ys: np.ndarray, colour: str, *, width: float = 1.6,
             gid: str = "", dash: str = "") -> str:
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs.tolist(), ys.tolist()))
    extra = (f' data-gid="{_e(gid)}"' if gid else "") + (
        f' stroke-dasharray="{dash}"' if dash else "")
    return (f'<polyline points="{points}" fill="none" stroke="{colour}" '
            f'stroke-width="{width:g}" stroke-linejoin="round"{extra}/>')


def _tick(value: float, span: tuple[float, float]) -> str:
    """A tick label: whole numbers on a range wider than 5, else two significant digits."""
    return f"{value:.0f}" if span[1] - span[0] > 5 else f"{value:.2g}"


class Axes:
    """A plot box at ``(x0, y0)`` of ``w`` x ``h`` pixels for data in ``x`` and ``y`` ranges."""

    def __init__(self, x0: float, y0: float, w: float, h: float,
                 x: tuple[float, float] = (0.0, 1.0), y: tuple[float, float] = (0.0, 1.0)):
        self.x0, self.y0, self.w, self.h, self.x, self.y = x0, y0, w, h, x, y

    def px(self, values: Any) -> np.ndarray:
        lo, hi = self.x
        return self.x0 + (np.asarray(values, dtype=np.float64) - lo) / (hi - lo or 1) * self.w

    def py(self, values: Any) -> np.ndarray:
        lo, hi = self.y
        return self.y0 + self.h - (np.asarray(values, dtype=np.float64) - lo) / (
            hi - lo or 1) * self.h

    def frame(self, *, ticks: int = 5, labels: bool = True, xlabel: str = "",
              ylabel: str = "") -> list[str]:
        """The box, a light grid, tick labels and axis titles."""
        out = [f'<rect x="{self.x0:.1f}" y="{self.y0:.1f}" width="{self.w:.1f}" '
               f'height="{self.h:.1f}" fill="white" stroke="#9aa3b2"/>']
        for i in range(ticks + 1):
            fx, fy = (self.x[0] + i * (self.x[1] - self.x[0]) / ticks,
                      self.y[0] + i * (self.y[1] - self.y[0]) / ticks)
            gx, gy = float(self.px(fx)), float(self.py(fy))
            out.append(f'<path d="M{gx:.1f} {self.y0:.1f}V{self.y0 + self.h:.1f}M{self.x0:.1f} '
                       f'{gy:.1f}H{self.x0 + self.w:.1f}" stroke="#e6e9ef"/>')
            if labels:
                out.append(text(gx, self.y0 + self.h + 14, _tick(fx, self.x), size=10,
                                anchor="middle"))
                out.append(text(self.x0 - 5, gy + 3.5, _tick(fy, self.y), size=10,
                                anchor="end"))
        if xlabel:
            out.append(text(self.x0 + self.w / 2, self.y0 + self.h + 30, xlabel,
                            anchor="middle"))
        if ylabel:
            out.append(text(self.x0 - 32, self.y0 + self.h / 2, ylabel, anchor="middle",
                            rotate=-90))
        return out


# --------------------------------------------------------------------------------------
# Precision-recall
# --------------------------------------------------------------------------------------


def pr_mean(view: dict[str, Any], *, runs: Sequence[tuple[str, dict, str]] = ()) -> str:
    """The mean precision-recall curve (or one per run, overlaid, for comparisons)."""
    ax = Axes(52, 12, 330, 240)
    body = ax.frame(xlabel="recall", ylabel="precision")
    for name, run, colour in runs or (("mean", view, COLOURS["mean"]),):
        body.append(polyline(ax.px(run["recall"]), ax.py(run["mean"]), colour, width=2.2,
                             gid=f"pr:{name}"))
    return svg(400, 300, body, label="mean precision-recall curve")


def pr_multiples(classes: list[dict[str, Any]], *, per_row: int = 8) -> str:
    """Small precision-recall panels, one per class, its name and AP above it."""
    panel_w, panel_h = 140, 118
    rows = max(1, math.ceil(len(classes) / per_row))
    body = []
    for i, entry in enumerate(classes):
        x, y = (i % per_row) * panel_w, (i // per_row) * panel_h
        ax = Axes(x + 8, y + 20, panel_w - 20, panel_h - 30)
        ap = "n/a" if not math.isfinite(entry["ap"]) else f"{entry['ap']:.3f}"
        body.append(f'<g class="multiple" data-class="{entry["index"]}">')
        body.extend(ax.frame(ticks=2, labels=False))
        body.append(polyline(ax.px(entry["recall"]), ax.py(entry["precision"]),
                             COLOURS["precision"], width=1.4, gid=f"pr:{entry['name']}"))
        label = short(entry["name"], panel_w - 58) + " " + ap
        body.append(text(x + 8, y + 14, label, tip=f"{entry['name']}: AP {ap}"))
        body.append("</g>")
    return svg(per_row * panel_w, rows * panel_h, body,
               label="precision-recall curves of single classes")


# --------------------------------------------------------------------------------------
# F1 by score threshold
# --------------------------------------------------------------------------------------


def f1_curve(view: dict[str, Any]) -> str:
    x = view["threshold"]
    hi = max(1.0, float(x.max())) if len(x) else 1.0
    lo = min(0.0, float(x.min())) if len(x) else 0.0
    ax = Axes(52, 12, 400, 240, x=(lo, hi))
    body = ax.frame(xlabel="score threshold", ylabel="F1, precision, recall")
    for key in ("precision", "recall", "f1"):
        if len(x):
            body.append(polyline(ax.px(x), ax.py(view[key]), COLOURS[key],
                                 width=2.2 if key == "f1" else 1.4, gid=key))
    if math.isfinite(view["best_threshold"]):
        bx, by = float(ax.px(view["best_threshold"])), float(ax.py(view["best_f1"]))
        body.append(f'<circle cx="{bx:.1f}" cy="{by:.1f}" r="4.5" fill="black" '
                    f'data-gid="best"><title>best F1 {view["best_f1"]:.3f} at score '
                    f'{view["best_threshold"]:.3f}</title></circle>')
    return svg(470, 300, body, label="F1, precision and recall by score threshold")


# --------------------------------------------------------------------------------------
# Confusion heatmap
# --------------------------------------------------------------------------------------


def _colour(fraction: float) -> str:
    r, g, b = (round(a + (z - a) * fraction) for a, z in zip(_LIGHT, _DARK))
    return f"rgb({r},{g},{b})"


def heatmap(counts: np.ndarray, labels: Sequence[str], classes: Sequence[int]) -> str:
    """The confusion counts of ``classes`` (category indices) and Unknown, log colour scale;
    rows true classes, columns predicted classes. Each non-empty cell is a ``rect.cell``
    with ``data-true`` and ``data-pred`` (category indices, ``K`` for Unknown)."""
    k = len(labels) - 1
    order = list(classes) + [k]
    n = len(order)
    names = [labels[i] for i in order]
    cell = max(14.0, min(30.0, 620.0 / n))
    label_w = min(max(len(s) for s in names), 18) * _CHAR * 11 + 10
    block = counts[np.ix_(order, order)].astype(np.int64)
    top = int(block.max()) if block.size else 0
    scale = math.log1p(top) or 1.0
    width = label_w + n * cell + 90
    height = label_w + n * cell + 8
    body = [f'<rect x="{label_w:.1f}" y="{label_w:.1f}" width="{n * cell:.1f}" '
            f'height="{n * cell:.1f}" fill="white" stroke="#9aa3b2"/>']
    for i, name in enumerate(names):
        y = label_w + i * cell + cell / 2 + 4
        x = label_w + i * cell + cell / 2 + 4
        body.append(text(label_w - 5, y, short(name, label_w - 10), anchor="end", tip=name,
                         css="label"))
        body.append(text(x, label_w - 5, short(name, label_w - 10), rotate=-90, tip=name,
                         css="label"))
    numbers = cell >= 26
    for (i, j), count in np.ndenumerate(block):
        if count == 0:
            continue
        fraction = math.log1p(count) / scale
        x, y = label_w + j * cell, label_w + i * cell
        tip = f"true {names[i]}, predicted {names[j]}: {count}"
        body.append(f'<rect class="cell" x="{x:.1f}" y="{y:.1f}" width="{cell:.1f}" '
                    f'height="{cell:.1f}" fill="{_colour(fraction)}" data-true="{order[i]}" '
                    f'data-pred="{order[j]}" data-count="{count}" '
                    f'data-filter="cells={order[i]}:{order[j]}" '
                    f'data-label="true {_e(names[i])}, predicted {_e(names[j])}">'
                    f"<title>{_e(tip)}</title></rect>")
        if numbers and len(str(count)) * _CHAR * 9 <= cell - 3:
            colour = "white" if fraction > 0.6 else "#1d2330"
            body.append(f'<text x="{x + cell / 2:.1f}" y="{y + cell / 2 + 3:.1f}" '
                        f'font-size="9" text-anchor="middle" fill="{colour}" '
                        f'pointer-events="none">{count}</text>')
    edge = label_w + (n - 1) * cell
    body.append(f'<path d="M{label_w:.1f} {edge:.1f}H{label_w + n * cell:.1f}M{edge:.1f} '
                f'{label_w:.1f}V{label_w + n * cell:.1f}" stroke="#5b6475"/>')
    # Colour bar: 1 at the bottom, the largest count at the top, log scale.
    bx, by, bh = label_w + n * cell + 18, label_w, min(n * cell, 200)
    steps = 20
    for s in range(steps):
        body.append(f'<rect x="{bx:.1f}" y="{by + bh * (steps - 1 - s) / steps:.1f}" '
                    f'width="12" height="{bh / steps + 0.5:.1f}" '
                    f'fill="{_colour((s + 0.5) / steps)}"/>')
    body.append(text(bx + 16, by + 9, str(max(top, 1)), size=10))
    body.append(text(bx + 16, by + bh, "1", size=10))
    body.append(text(bx + 16, by + bh / 2 + 4, "log", size=10))
    return svg(width, height, body, label="confusion heatmap", css="plot heatmap")


# --------------------------------------------------------------------------------------
# AP per class
# --------------------------------------------------------------------------------------

_MAX_BARS = 40


def ap_bars(pairs: list[tuple[int, str, float]], mean: float, mean_label: str) -> str:
    """Bars of ``(class index, name, AP)`` (best first) up to 40 classes, else a histogram of
    the APs in tenths; the mean as a vertical line."""
    if len(pairs) <= _MAX_BARS:
        row, label_w = 16, 130
        ax = Axes(label_w, 18, 280, max(row * len(pairs), row))
        body = ax.frame(ticks=5, labels=False)
        for i in range(6):
            body.append(text(float(ax.px(i / 5)), ax.y0 + ax.h + 14, f"{i / 5:.1f}", size=10,
                             anchor="middle"))
        for i, (index, name, value) in enumerate(pairs):
            y = 18 + i * row
            body.append(f'<rect class="bar" x="{label_w}" y="{y + 2}" '
                        f'width="{float(ax.px(value)) - label_w:.1f}" height="{row - 4}" '
                        f'fill="#2557a7" data-class="{index}"><title>{_e(name)}: '
                        f'{value:.3f}</title></rect>')
            body.append(text(label_w - 5, y + row - 4, short(name, label_w - 10),
                             anchor="end", tip=name))
            body.append(text(float(ax.px(value)) + 3, y + row - 4, f"{value:.2f}", size=9))
        height = 18 + ax.h + 20
    else:
        counts = np.histogram([v for _, _, v in pairs], bins=10, range=(0.0, 1.0))[0]
        ax = Axes(52, 18, 330, 200, y=(0.0, float(max(counts.max(), 1))))
        body = ax.frame(xlabel="AP", ylabel="classes")
        for b, count in enumerate(counts.tolist()):
            x0, x1 = float(ax.px(b / 10)), float(ax.px((b + 1) / 10))
            y = float(ax.py(count))
            body.append(f'<rect class="bar" x="{x0 + 1:.1f}" y="{y:.1f}" '
                        f'width="{x1 - x0 - 2:.1f}" height="{ax.y0 + ax.h - y:.1f}" '
                        f'fill="#2557a7"><title>AP in [{b / 10:.1f}, {(b + 1) / 10:.1f}): '
                        f"{count} classes</title></rect>")
        height = 260
    if math.isfinite(mean) and mean >= 0:
        mx = float(ax.px(mean))
        body.append(f'<path d="M{mx:.1f} {ax.y0:.1f}V{ax.y0 + ax.h:.1f}" stroke="#c0392b" '
                    f'stroke-width="1.5" data-gid="mean"/>')
        body.append(text(mx, 11, f"{mean_label} {mean:.3f}", size=10, anchor="middle"))
    return svg(ax.x0 + ax.w + 40, height, body, label="AP per class")


# --------------------------------------------------------------------------------------
# Diagnostics: TIDE's dAP bars, the reliability diagram
# --------------------------------------------------------------------------------------


def dap_bars(rows: list[dict[str, Any]]) -> str:
    """One horizontal bar per TIDE row (``error``, ``label``, ``dap`` in AP points,
    ``count``): the six error types, then the false-positive and false-negative oracles."""
    row_h, label_w, plot_w = 24, 190, 300
    top = max([r["dap"] for r in rows if r["dap"] is not None] + [1.0])
    ax = Axes(label_w, 10, plot_w, row_h * len(rows), x=(0.0, top * 1.1))
    body = ax.frame(ticks=4, labels=False)
    for i in range(5):
        value = i * top * 1.1 / 4
        body.append(text(float(ax.px(value)), ax.y0 + ax.h + 14, f"{value:.1f}", size=10,
                         anchor="middle"))
    body.append(text(ax.x0 + ax.w / 2, ax.y0 + ax.h + 30, "dAP (AP points gained by the fix)",
                     anchor="middle"))
    for i, row in enumerate(rows):
        y = ax.y0 + i * row_h
        value = row["dap"] or 0.0
        colour = "#d35400" if row["error"] in ("false_positives", "false_negatives") \
            else "#2557a7"
        count = "" if row["count"] is None else f", {row['count']} errors"
        body.append(f'<rect class="bar dap" x="{ax.x0:.1f}" y="{y + 4:.1f}" '
                    f'width="{float(ax.px(value)) - ax.x0:.1f}" height="{row_h - 8}" '
                    f'fill="{colour}" data-error="{_e(row["error"])}"><title>'
                    f'{_e(row["label"])}: dAP {value:.2f}{count}</title></rect>')
        body.append(text(label_w - 6, y + row_h - 8, short(row["label"], label_w - 12),
                         anchor="end", tip=row["label"]))
        body.append(text(float(ax.px(value)) + 4, y + row_h - 8, f"{value:.2f}", size=10))
    return svg(label_w + plot_w + 50, ax.y0 + ax.h + 40, body, label="TIDE dAP per error type")


def reliability(edges: Sequence[float], precision: Sequence[float | None],
                confidence: Sequence[float | None], count: Sequence[int]) -> str:
    """The reliability diagram: one ``rect.bin`` per bin (its precision; empty bins are
    0 high), the diagonal of perfect calibration, and each bin's mean confidence as a dot."""
    ax = Axes(52, 12, 330, 240)
    body = ax.frame(xlabel="confidence (score)", ylabel="precision")
    for b in range(len(count)):
        x0, x1 = float(ax.px(edges[b])), float(ax.px(edges[b + 1]))
        value = precision[b] if precision[b] is not None else 0.0
        y = float(ax.py(value))
        tip = (f"scores [{edges[b]:.2f}, {edges[b + 1]:.2f}): "
               + (f"precision {value:.3f} of {count[b]} detections, mean confidence "
                  f"{confidence[b]:.3f}" if count[b] else "no detection"))
        body.append(f'<rect class="bar bin" x="{x0 + 0.5:.1f}" y="{y:.1f}" '
                    f'width="{max(x1 - x0 - 1, 0.5):.1f}" height="{ax.y0 + ax.h - y:.1f}" '
                    f'fill="#2557a7" fill-opacity="0.8"><title>{_e(tip)}</title></rect>')
    body.append(f'<path d="M{float(ax.px(0)):.1f} {float(ax.py(0)):.1f}L{float(ax.px(1)):.1f} '
                f'{float(ax.py(1)):.1f}" stroke="#c0392b" stroke-width="1.5" '
                f'stroke-dasharray="5 4" data-gid="diagonal"/>')
    for b in range(len(count)):
        if count[b] and confidence[b] is not None and precision[b] is not None:
            body.append(f'<circle cx="{float(ax.px(confidence[b])):.1f}" '
                        f'cy="{float(ax.py(precision[b])):.1f}" r="3" fill="#1d2330"/>')
    return svg(400, 300, body, label="reliability diagram")
