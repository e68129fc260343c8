"""The trend across nights (`tfbuild compare --history`, the nightly's history page): per machine
class and benchmark, each config's throughput night by night with its interval, and the nights
where a TensorFlow release or a wheel changed marked."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from tfbuild import __version__
from tfbuild.analysis.history import Figure, Night, changes, series
from tfbuild.report.svg import Axis, Canvas, log_ticks, text_width, tick_label

PALETTE = ("#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#5d4037", "#37474f")
WIDTH = 760
HEIGHT = 300


def _nights(count: int) -> str:
    return f"{count} night{'' if count == 1 else 's'}"


def _day(night: Night) -> str:
    return night.started_at[:10]


def _cell(figure: Figure | None) -> str:
    if figure is None:
        return "-"
    return f"{figure.value:.4g} [{figure.low:.4g}, {figure.high:.4g}]"


def _marked(changed: Sequence[str]) -> str:
    return " *" if changed else ""


def history_lines(by_class: Mapping[str, Sequence[Night]]) -> list[str]:
    """The trend as text: per class and benchmark a table, a row per night (oldest first), a
    column per config (median throughput [95% interval]); '*' marks a night where something
    measured changed, said under the table."""
    lines: list[str] = []
    for key, nights in by_class.items():
        configs, benchmarks = series(nights)
        said = changes(nights)
        lines += [
            f"Machine class: {key}",
            f"{_nights(len(nights))}, {_day(nights[0])} to {_day(nights[-1])}; each cell the "
            "median throughput of the night's processes [95% interval]",
            "",
        ]
        for bench in benchmarks:
            unit = nights[-1].units.get(bench, "")
            header = ["night", *configs]
            rows = [
                [f"{_day(n)} {n.session}{_marked(said[i])}"]
                + [_cell(n.figures.get((c, bench))) for c in configs]
                for i, n in enumerate(nights)
            ]
            widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
            lines.append(f"{bench} ({unit})")
            for row in [header, *rows]:
                lines.append(
                    "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
                )
            lines.append("")
        marks = [(n, said[i]) for i, n in enumerate(nights) if said[i]]
        for night, what in marks:
            lines.append(f"* {_day(night)} {night.session}: {'; '.join(what)}")
        if marks:
            lines.append("")
    return lines


def _figure_json(night: Night, config: str, bench: str, f: Figure) -> dict[str, Any]:
    return {"config": config, "benchmark": bench, "unit": night.units.get(bench),
            "median": f.value, "low": f.low, "high": f.high, "runs": f.runs}  # fmt: skip


def history_json(by_class: Mapping[str, Sequence[Night]]) -> dict[str, Any]:
    classes = []
    for key, nights in by_class.items():
        said = changes(nights)
        classes.append(
            {
                "host_key": key,
                "nights": [
                    {
                        "session": n.session,
                        "started_at": n.started_at,
                        "cpu": n.cpu,
                        "tensorflow": n.tensorflow,
                        "wheels": n.wheels,
                        "changed": said[i],
                        "figures": [_figure_json(n, c, b, f) for (c, b), f in n.figures.items()],
                    }
                    for i, n in enumerate(nights)
                ],
            }
        )
    return {"schema": "tfbuild.history/1", "classes": classes}


def history_chart(nights: Sequence[Night], bench: str, configs: Sequence[str]) -> str:
    """One benchmark's trend: a line per config across the nights, each night's interval as a
    whisker, a dashed line before each night where something measured changed."""
    said = changes(nights)
    values = [
        v
        for n in nights
        for c in configs
        if (f := n.figures.get((c, bench))) is not None
        for v in (f.low, f.high)
        if v > 0
    ]
    lo, hi = (min(values) / 1.05, max(values) * 1.05) if values else (1.0, 10.0)
    legend = max((text_width(c, 10) for c in configs), default=0) + 28
    x0, x1, y0, y1 = 64.0, WIDTH - legend - 12, 30.0, HEIGHT - 40.0
    y = Axis(lo, hi, y1, y0, log=True)
    step = (x1 - x0) / max(1, len(nights))

    def x(i: int) -> float:
        return x0 + step * (i + 0.5)

    unit = nights[-1].units.get(bench, "")
    canvas = Canvas(WIDTH, HEIGHT, f"{bench} across nights")
    canvas.add("rect", class_="axis", x=x0, y=y0, width=x1 - x0, height=y1 - y0, fill="white",
               stroke="#b0bec5")  # fmt: skip
    for t in log_ticks(lo, hi):
        canvas.line(x0, y(t), x1, y(t), stroke="#eceff1", stroke_width=0.8)
        canvas.text(x0 - 6, y(t), tick_label(t), 10, text_anchor="end", dominant_baseline="central")
    for i, night in enumerate(nights):
        canvas.text(x(i), y1 + 14, _day(night)[5:], 10, text_anchor="middle")
        if said[i]:
            edge = x(i) - step / 2
            canvas.line(edge, y0, edge, y1, class_="change", stroke="#78909c",
                        stroke_dasharray="4 3", data_night=night.session)  # fmt: skip
    for k, config in enumerate(configs):
        colour = PALETTE[k % len(PALETTE)]
        points = [
            (i, f)
            for i, n in enumerate(nights)
            if (f := n.figures.get((config, bench))) is not None
        ]
        if len(points) > 1:
            path = " ".join(f"{x(i):.1f},{y(f.value):.1f}" for i, f in points)
            canvas.add("polyline", points=path, fill="none", stroke=colour, stroke_width=1.5)
        for i, f in points:
            canvas.line(x(i), y(f.low), x(i), y(f.high), stroke=colour, class_="interval",
                        data_config=config, data_night=nights[i].session)  # fmt: skip
            canvas.add("circle", class_="night", cx=x(i), cy=y(f.value), r=3.0, fill=colour,
                       data_config=config, data_night=nights[i].session,
                       data_value=repr(f.value))  # fmt: skip
        ly = y0 + 8 + 16 * k
        canvas.line(x1 + 12, ly, x1 + 28, ly, stroke=colour, stroke_width=2)
        canvas.text(x1 + 32, ly, config, 10, dominant_baseline="central")
    canvas.text((x0 + x1) / 2, 18, f"{bench} ({unit}, median of the night's processes, 95% "
                "interval; log scale)", 11, text_anchor="middle", class_="title")  # fmt: skip
    canvas.text((x0 + x1) / 2, y1 + 30, "night (dashed: a TensorFlow release or a wheel changed)",
                10, text_anchor="middle")  # fmt: skip
    return canvas.document()


STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif;
       margin: 2em; color: #263238; max-width: 1100px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; } h3 { font-size: 1em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #cfd8dc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tr.changed td:first-child { font-weight: bold; }
"""


def history_html(by_class: Mapping[str, Sequence[Night]]) -> str:
    """The history page: self-contained HTML (inline SVG, no script), readable in any browser."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>tfbuild nightly history</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>tfbuild nightly history</h1>",
        "<p>Each night's throughput of every config and benchmark (the median of the night's "
        "processes, with a 95% interval), per machine class: nights on other machines do not "
        "compare. A dashed line marks a night where a config's TensorFlow release or its wheel "
        "changed.</p>",
    ]
    for key, nights in by_class.items():
        configs, benchmarks = series(nights)
        said = changes(nights)
        parts.append(f"<h2>{e(key)}</h2>")
        parts.append(
            f"<p>{_nights(len(nights))}, {_day(nights[0])} to {_day(nights[-1])} "
            f"({e(nights[-1].cpu)}).</p>"
        )
        marks = [(n, said[i]) for i, n in enumerate(nights) if said[i]]
        if marks:
            parts.append("<ul>")
            parts += [f"<li>{_day(n)} {e(n.session)}: {e('; '.join(w))}</li>" for n, w in marks]
            parts.append("</ul>")
        for bench in benchmarks:
            parts.append(f"<h3>{e(bench)}</h3>")
            parts.append(f'<figure class="trend">{history_chart(nights, bench, configs)}</figure>')
            parts.append("<table><tr><th>night</th>")
            parts += [f"<th>{e(c)}</th>" for c in configs]
            parts.append("</tr>")
            for i, n in enumerate(nights):
                row = ' class="changed"' if said[i] else ""
                cells = "".join(f"<td>{e(_cell(n.figures.get((c, bench))))}</td>" for c in configs)
                parts.append(f"<tr{row}><td>{_day(n)} {e(n.session)}</td>{cells}</tr>")
            parts.append("</table>")
    parts.append(f"<p><small>tfbuild {e(__version__)}</small></p></body></html>")
    return "\n".join(parts) + "\n"
