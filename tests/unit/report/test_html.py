"""The HTML report, rendered in a real browser."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
from support.browser import loaded
from support.browser import screenshot as shot
from support.cli import RESULTS, compare

from tfbuild.analysis.estimates import OVERALL
from tfbuild.analysis.host_report import analyse
from tfbuild.analysis.sessions import load_sessions
from tfbuild.report.charts import samples_svg, speedup_svg

SVG = "{http://www.w3.org/2000/svg}"
REAL = RESULTS / "session-2x2-10rounds.json"


def test_html_report_renders_in_chromium(tmp_path: Path) -> None:
    """The HTML report of the real session, loaded in headless Chromium: no errors, every
    chart image decodes. A screenshot is left next to the report for a person to look at."""
    report = tmp_path / "report.html"
    proc = compare(str(REAL), "--format", "html", "--output", str(report))
    assert proc.returncode == 0, proc.stderr
    html = report.read_text()
    assert html.count('src="data:image/svg+xml;base64,') == 2
    assert "<script" not in html  # self-contained, static
    assert "<h3>Seed experiments</h3>" in html
    result = loaded(report, tmp_path)
    # every table of the file reaches the page: ranking, per benchmark, seed experiments,
    # host, builds and the rest
    tables = len(re.findall(r"<table[ >]", html))
    assert tables >= 5
    assert result == {"images": 2, "broken": 0, "svg": 0, "drawn": 0, "errors": [],
                      "tables": tables}  # fmt: skip
    screenshot = shot(report, tmp_path, tmp_path / "report.png")
    assert screenshot.exists() and screenshot.stat().st_size > 50_000


def panels(svg: str) -> list[ElementTree.Element]:
    root = ElementTree.fromstring(svg)
    assert root.tag == SVG + "svg" and float(root.get("width", 0)) > 0
    return [g for g in root.iter(SVG + "g") if g.get("class") == "panel"]


def shapes(panel: ElementTree.Element, tag: str, kind: str) -> list[ElementTree.Element]:
    return [e for e in panel.iter(SVG + tag) if e.get("class") == kind]


def title(panel: ElementTree.Element) -> str:
    (text,) = shapes(panel, "text", "title")
    return text.text or ""


def ticks(panel: ElementTree.Element, attribute: str) -> dict[float, float]:
    """The axis's tick labels, each read as a number, at the coordinate it is drawn at."""
    found = {}
    for text in panel.iter(SVG + "text"):
        try:
            value = float(text.text or "")
        except ValueError:
            continue
        found[value] = float(text.get(attribute, "nan"))
    return found


def on_log_axis(marks: dict[float, float]) -> Callable[[float], float]:
    """The axis the browser draws, from two of its tick labels: a value to its coordinate."""
    (a, pa), (b, pb) = sorted(marks.items())[0], sorted(marks.items())[-1]
    return lambda v: pa + (pb - pa) * math.log(v / a) / math.log(b / a)


@pytest.mark.parametrize("name", ["session-default-quick.json", "default-run.json.gz"])
def test_speedup_panels_are_log_scaled_with_every_bar_and_whisker_inside(name: str) -> None:
    """The two sessions whose whiskers reached 1e11 and 70x, as the browser is given them:
    every panel's ticks lie on a log axis, each bar ends at its estimate there, every bar and
    whisker lies inside the panel, and the whiskers cut at an edge are marked there."""
    (report,) = analyse(load_sessions([RESULTS / name]))
    found = panels(speedup_svg(report))
    assert [p.get("data-bench") for p in found] == [OVERALL, *report.measured.benchmarks]
    marked = wide = 0
    for panel in found:
        bench = panel.get("data-bench", "")
        (frame,) = shapes(panel, "rect", "axis")
        left = float(frame.get("x", "nan"))
        right = left + float(frame.get("width", "nan"))
        marks = ticks(panel, "x")
        assert 1.0 in marks and len(marks) >= 3
        x = on_log_axis(marks)
        for value, at in marks.items():  # equal ratios, equal steps: a log axis
            assert at == pytest.approx(x(value), abs=0.1)
        lo, hi = math.exp(_inverse(x, left)), math.exp(_inverse(x, right))
        bars = shapes(panel, "rect", "bar")
        whiskers = shapes(panel, "line", "whisker")
        assert bars and len(whiskers) == len(bars)
        for bar in bars:
            start = float(bar.get("x", "nan"))
            end = start + float(bar.get("width", "nan"))
            assert left - 0.01 <= start and end <= right + 0.01, (bench, start, end, left, right)
            e = report.figures.estimates[(bar.get("data-config", ""), bench)]
            tip = end if e.ratio >= 1 else start
            assert tip == pytest.approx(x(e.ratio), abs=0.1)
            wide += e.low < lo or e.high > hi
        for whisker in whiskers:
            ends = [float(whisker.get(k, "nan")) for k in ("x1", "x2")]
            assert left - 0.01 <= min(ends) and max(ends) <= right + 0.01
        cuts = shapes(panel, "polygon", "cut")
        marked += len(cuts)
        assert ("cut at the edge" in title(panel)) == bool(cuts)
    assert marked >= 1 and marked >= wide


def _inverse(x: Callable[[float], float], at: float) -> float:
    """The log of the value the axis draws at this coordinate."""
    a, b = x(1.0), x(math.e)
    return (at - a) / (b - a)


def test_samples_boxes_are_the_quartiles_of_the_raw_samples() -> None:
    """Every config's box spans the first to the third quartile of its raw samples (as numpy
    computes them), read back through the axis's own tick labels, and every sample is a point."""
    (report,) = analyse(load_sessions([REAL]))
    found = panels(samples_svg(report))
    assert [p.get("data-bench") for p in found] == report.measured.benchmarks
    for panel in found:
        bench = panel.get("data-bench", "")
        assert "log scale" in title(panel)
        y = on_log_axis(ticks(panel, "y"))
        boxes = shapes(panel, "rect", "box")
        assert {b.get("data-config") for b in boxes} == {e.config for e in report.figures.ranking}
        for box in boxes:
            samples = report.figures.samples[(box.get("data-config", ""), bench)]
            q1, q3 = np.percentile(samples, [25, 75])
            top, height = float(box.get("y", "nan")), float(box.get("height", "nan"))
            assert top == pytest.approx(y(q3), abs=0.2)
            assert top + height == pytest.approx(y(q1), abs=0.6)
        assert len(shapes(panel, "circle", "sample")) == sum(
            len(report.figures.samples[(e.config, bench)]) for e in report.figures.ranking
        )
