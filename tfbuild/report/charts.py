"""The HTML report's two charts, drawn as SVG: each config's speed against the baseline with its
interval (one panel per benchmark, the overall first), and every raw sample."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tfbuild.analysis.estimates import OVERALL
from tfbuild.analysis.reported import HostReport
from tfbuild.report.svg import (
    Axis,
    Canvas,
    bounds,
    linear_ticks,
    log_ticks,
    quartiles,
    text_width,
    tick_label,
    whisker_reach,
)

COLOURS = {
    "faster": "#2e7d32",
    "slower": "#c62828",
    "equivalent": "#00838f",
    "undecided": "#f9a825",
    "baseline": "#1565c0",
}
CLIP = 1.25
"""A panel's axis reaches this factor beyond its outermost estimate (and margin band); a whisker
that reaches further is cut at the edge and marked with a triangle."""
TICKS = (0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0)
PANEL = 560
"""A panel's width, labels included (px); panels stand two to a row."""
ROW = 20
"""A config's row in the speed chart (px)."""
LABEL = 10
"""Font size of labels and ticks (px)."""


def _grid(count: int) -> tuple[int, int]:
    columns = 2 if count > 1 else 1
    return math.ceil(count / columns), columns


def panel_limits(r: HostReport, bench: str, configs: Sequence[str]) -> tuple[float, float]:
    band = r.method.margins[bench]
    ratios = [1.0 / (1.0 + band), 1.0 + band]
    ratios += [
        r.figures.estimates[(c, bench)].ratio
        for c in configs
        if (c, bench) in r.figures.estimates and r.figures.estimates[(c, bench)].ratio > 0
    ]
    return min(ratios) / CLIP, max(ratios) * CLIP


def ratio_ticks(lo: float, hi: float) -> list[float]:
    """Ratios as plain numbers (0.8, 1, 1.25), at most seven, 1 always among them."""
    ticks = [t for t in TICKS if lo <= t <= hi]
    while len(ticks) > 7:
        one = ticks.index(1.0)
        ticks = [t for i, t in enumerate(ticks) if (i - one) % 2 == 0]
    return ticks


def _x_ticks(canvas: Canvas, axis: Axis, ticks: Sequence[float], top: float, bottom: float) -> None:
    canvas.line(axis.start, bottom, axis.end, bottom, stroke="#607d8b")
    for t in ticks:
        x = axis(t)
        canvas.line(x, top, x, bottom, stroke="#eceff1", stroke_width=0.8)
        canvas.line(x, bottom, x, bottom + 4, stroke="#607d8b")
        canvas.text(x, bottom + 15, tick_label(t), LABEL, text_anchor="middle")


def speedup_svg(r: HostReport) -> str:
    """One panel per benchmark (overall first): speed vs baseline with its simultaneous
    interval, on a log axis (a ratio and its inverse equally far from 1); each axis spans the
    estimates and the margin band, and a whisker beyond it is cut at the edge and marked."""
    panels = [OVERALL, *r.measured.benchmarks]
    configs = [e.config for e in r.figures.ranking]
    rows, columns = _grid(len(panels))
    labels = min(220.0, max(text_width(c, LABEL) for c in configs) + 12)
    plot_h = ROW * len(configs) + 8
    panel_h = 26 + plot_h + 40
    canvas = Canvas(PANEL * columns, panel_h * rows, "speed vs baseline per benchmark")
    for n, bench in enumerate(panels):
        left, top = PANEL * (n % columns), panel_h * (n // columns)
        lo, hi = panel_limits(r, bench, configs)
        axis = Axis(lo, hi, left + labels, left + PANEL - 16, log=True)
        y0, y1 = top + 26, top + 26 + plot_h
        band = r.method.margins[bench]
        canvas.open("g", class_="panel", data_bench=bench, data_lo=repr(lo), data_hi=repr(hi))
        canvas.add("rect", class_="axis", x=axis.start, y=float(y0), width=axis.end - axis.start,
                   height=float(plot_h), fill="white", stroke="#b0bec5")  # fmt: skip
        canvas.add("rect", class_="band", x=axis(1 / (1 + band)), y=float(y0),
                   width=axis(1 + band) - axis(1 / (1 + band)), height=float(plot_h),
                   fill="#eeeeee")  # fmt: skip
        _x_ticks(canvas, axis, ratio_ticks(lo, hi), y0, y1)
        canvas.line(axis(1.0), y0, axis(1.0), y1, stroke_width=0.8)
        clipped = False
        for i, config in enumerate(configs):
            y = y0 + 4 + ROW * i + ROW / 2
            canvas.text(
                axis.start - 6, y, config, LABEL, text_anchor="end", dominant_baseline="central"
            )
            if config == r.measured.baseline:
                canvas.marker("D", axis(1.0), y, 8, class_="baseline", fill=COLOURS["baseline"])
                continue
            e = r.figures.estimates.get((config, bench))
            if e is None or not e.ratio > 0:
                continue
            a, b = sorted((axis(1.0), axis(e.ratio)))
            canvas.add("rect", class_="bar", x=a, y=y - 6, width=b - a, height=12.0,
                       fill=COLOURS[e.verdict], data_config=config)  # fmt: skip
            low = max(e.low, lo) if e.low > 0 else lo
            high = min(e.high, hi) if math.isfinite(e.high) else hi
            canvas.line(axis(low), y, axis(high), y, class_="whisker", data_config=config)
            for end in (low, high):
                canvas.line(axis(end), y - 3, axis(end), y + 3, class_="cap")
            for edge, reached, shape in ((lo, low <= lo, "<"), (hi, high >= hi, ">")):
                if reached:
                    clipped = True
                    canvas.marker(shape, axis(edge), y, 9, class_="cut", data_config=config)
        cut = "; triangles: interval cut at the edge" if clipped else ""
        canvas.text(left + PANEL / 2, top + 16, f"{bench} (grey band: ±{band:.1%} margin{cut})",
                    11, text_anchor="middle", class_="title")  # fmt: skip
        canvas.text((axis.start + axis.end) / 2, y1 + 32, "speed vs baseline (x, log scale)",
                    LABEL, text_anchor="middle")  # fmt: skip
        canvas.close("g")
    return canvas.document()


def samples_svg(r: HostReport) -> str:
    """One panel per benchmark: the raw samples of every config, a box (quartiles, median,
    whiskers to the furthest sample within 1.5 IQR) and every sample as a point."""
    configs = [e.config for e in r.figures.ranking]
    rows, columns = _grid(len(r.measured.benchmarks))
    below = min(150.0, max(text_width(c, 9) for c in configs) * 0.82 + 14)
    panel_h = 26 + 190 + below
    canvas = Canvas(PANEL * columns, panel_h * rows, "every sample per config and benchmark")
    for n, bench in enumerate(r.measured.benchmarks):
        left, top = PANEL * (n % columns), panel_h * (n // columns)
        data = [r.figures.samples.get((c, bench), []) for c in configs]
        present = [v for d in data for v in d]
        log = bool(present) and min(present) > 0
        lo, hi = bounds(present) if present else (1.0, 10.0)
        if log:
            lo, hi = (lo / 1.15, hi * 1.15) if hi > lo else (lo / 2, hi * 2)
        else:
            pad = (hi - lo) * 0.08 or 1.0
            lo, hi = lo - pad, hi + pad
        y0, y1 = top + 26, top + 216
        axis = Axis(lo, hi, y1, y0, log=log)
        x0, x1 = left + 64, left + PANEL - 16
        step = (x1 - x0) / len(configs)
        canvas.open("g", class_="panel", data_bench=bench)
        canvas.add("rect", class_="axis", x=float(x0), y=float(y0), width=float(x1 - x0),
                   height=float(y1 - y0), fill="white", stroke="#b0bec5")  # fmt: skip
        for t in log_ticks(lo, hi) if log else linear_ticks(lo, hi):
            y = axis(t)
            canvas.line(x0, y, x1, y, stroke="#eceff1", stroke_width=0.8)
            canvas.text(
                x0 - 6, y, tick_label(t), LABEL, text_anchor="end", dominant_baseline="central"
            )
        for i, (config, values) in enumerate(zip(configs, data, strict=True)):
            x = x0 + step * (i + 0.5)
            canvas.text(x + 3, y1 + 12, config, 9, text_anchor="end",
                        transform=f"rotate(-35 {x + 3:.1f} {y1 + 12})")  # fmt: skip
            if not values:
                continue
            q1, median, q3 = quartiles(values)
            low, high = whisker_reach(values, q1, q3)
            half = min(step * 0.25, 28)
            canvas.line(x, axis(low), x, axis(q1), class_="whisker")
            canvas.line(x, axis(q3), x, axis(high), class_="whisker")
            for end in (low, high):
                canvas.line(x - half / 2, axis(end), x + half / 2, axis(end))
            canvas.add("rect", class_="box", x=x - half, y=axis(q3), width=2 * half,
                       height=max(axis(q1) - axis(q3), 0.5), fill="none",
                       stroke="black", data_config=config)  # fmt: skip
            canvas.line(x - half, axis(median), x + half, axis(median), stroke="#1565c0",
                        stroke_width=1.5)  # fmt: skip
            for k, v in enumerate(values):
                canvas.add("circle", class_="sample", cx=x + step * 0.18 * ((k % 7) / 6 - 0.5),
                           cy=axis(v), r=1.6, fill="#455a64", fill_opacity=0.6)  # fmt: skip
        scale = "log scale" if log else "linear scale"
        canvas.text(left + PANEL / 2, top + 16,
                    f"{bench} ({r.measured.units[bench]}, every sample, {scale})", 11,
                    text_anchor="middle", class_="title")  # fmt: skip
        canvas.close("g")
    return canvas.document()
