"""The HTML report's two charts as SVG, drawn from a report whose figures are set here: the
speed chart puts each config's bar and interval where the log axis of its panel says (the axis
spans the estimates and the margin band, 1.25 times beyond them; an interval reaching further is
cut at the edge and marked with a triangle), the baseline a diamond at 1; the samples chart
draws each config's box (quartiles and median) and every sample on a log axis, or a linear one
when a sample is not above zero. Panels stand two to a row."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from xml.etree import ElementTree
from xml.etree.ElementTree import Element

import numpy as np
import pytest
from support.synthetic import BASELINE, session

from tfbuild.analysis.estimates import OVERALL, Estimate
from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.reported import HostReport
from tfbuild.analysis.sessions import Session
from tfbuild.report.charts import panel_limits, ratio_ticks, samples_svg, speedup_svg

SVG = "{http://www.w3.org/2000/svg}"
FAST, SLOW = "fast:default", "slow:default"
LABELS = 12 * 10 * 0.6 + 12
"""Where a panel's axis starts: the longest config name (12 characters at 10 px) and 12 px."""


def measured() -> HostReport:
    """A real report of a small session: fast ahead of the baseline, slow behind it."""
    results = session({FAST: 1.3, SLOW: 0.8}, rounds=6)
    return analyse_host([Session(Path("s.json"), results)])


def overall(config: str, ratio: float, low: float, high: float, verdict: str) -> Estimate:
    return Estimate(config, OVERALL, ratio, low, high, 0.01, 0.001, 6, 0.02, 0.05, verdict)


def speed_report() -> HostReport:
    """Overall: fast 1.25x [1.1, 1.4], slow 0.8x [0.5, 0.9] (its interval reaching beyond the
    axis, which ends at 0.8 / 1.25 = 0.64), a 5 % margin."""
    r = measured()
    estimates = dict(r.figures.estimates)
    estimates[(FAST, OVERALL)] = overall(FAST, 1.25, 1.1, 1.4, "faster")
    estimates[(SLOW, OVERALL)] = overall(SLOW, 0.8, 0.5, 0.9, "slower")
    margins = {**r.method.margins, OVERALL: 0.05}
    return replace(r, figures=replace(r.figures, estimates=estimates),
                   method=replace(r.method, margins=margins))  # fmt: skip


def panel(svg: str, bench: str) -> Element:
    root = ElementTree.fromstring(svg)
    (found,) = [g for g in root.iter(f"{SVG}g") if g.get("data-bench") == bench]
    return found


def shapes(group: Element, tag: str, cls: str | None = None) -> list[Element]:
    return [e for e in group.iter(f"{SVG}{tag}") if cls is None or e.get("class") == cls]


def number(element: Element, name: str) -> float:
    return float(element.attrib[name])


def test_a_panel_spans_its_estimates_and_margin_band_a_quarter_beyond() -> None:
    r = speed_report()
    assert panel_limits(r, OVERALL, [FAST, BASELINE, SLOW]) == pytest.approx((0.64, 1.5625))
    alone = {(FAST, OVERALL): overall(FAST, 1.01, 1.0, 1.02, "equivalent")}
    inside = replace(r, figures=replace(r.figures, estimates=alone))
    assert panel_limits(inside, OVERALL, [FAST]) == pytest.approx(
        (1 / 1.05 / 1.25, 1.05 * 1.25)
    )  # the band's edges, when every estimate is within it


def test_ratio_ticks_are_plain_numbers_at_most_seven_with_one_among_them() -> None:
    assert ratio_ticks(0.64, 1.5625) == [0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5]
    assert ratio_ticks(0.95, 1.2) == [1.0, 1.1]
    wide = ratio_ticks(0.1, 50.0)  # all 17: thinned around 1 twice
    assert wide == [0.5, 1.0, 2.0, 20.0]


def test_bars_and_intervals_stand_where_the_log_axis_puts_their_ratios() -> None:
    """The overall panel's axis runs from 0.64 to 1.5625 over x 84-544: 1 is at its middle (314,
    as 1.5625 = 1 / 0.64), 1.25 three quarters along (429) and 0.8 one quarter (199)."""
    svg = speedup_svg(speed_report())
    group = panel(svg, OVERALL)
    assert float(group.attrib["data-lo"]) == pytest.approx(0.64)
    assert float(group.attrib["data-hi"]) == pytest.approx(1.5625)

    def x(value: float) -> float:
        return LABELS + (544 - LABELS) * math.log(value / 0.64) / math.log(1.5625 / 0.64)

    bars = {e.get("data-config"): e for e in shapes(group, "rect", "bar")}
    assert set(bars) == {FAST, SLOW}
    fast, slow = bars[FAST], bars[SLOW]
    assert (number(fast, "x"), number(fast, "width")) == pytest.approx((314, 115), abs=0.01)
    assert (number(slow, "x"), number(slow, "width")) == pytest.approx((199, 115), abs=0.01)
    # rows of 20 px from y 30, the bar 12 px high around the row's middle: fast first, slow third
    assert (number(fast, "y"), number(slow, "y"), number(fast, "height")) == (34, 74, 12)
    assert (fast.get("fill"), slow.get("fill")) == ("#2e7d32", "#c62828")
    whiskers = {e.get("data-config"): e for e in shapes(group, "line", "whisker")}
    assert number(whiskers[FAST], "x1") == pytest.approx(x(1.1), abs=0.006)
    assert number(whiskers[FAST], "x2") == pytest.approx(x(1.4), abs=0.006)
    assert number(whiskers[SLOW], "x1") == pytest.approx(LABELS)  # 0.5 cut at the edge, 0.64
    assert number(whiskers[SLOW], "x2") == pytest.approx(x(0.9), abs=0.006)
    (band,) = shapes(group, "rect", "band")
    assert number(band, "x") == pytest.approx(x(1 / 1.05), abs=0.006)
    assert number(band, "width") == pytest.approx(x(1.05) - x(1 / 1.05), abs=0.011)


def test_an_interval_cut_at_the_edge_is_marked_and_the_title_says_so() -> None:
    svg = speedup_svg(speed_report())
    group = panel(svg, OVERALL)
    (cut,) = shapes(group, "polygon", "cut")  # slow's 0.5, left of 0.64
    assert cut.get("data-config") == SLOW
    assert cut.get("points") == "79.5,80 88.5,75.5 88.5,84.5"  # "<" of 9 px at (84, 80)
    titles = [t.text for t in shapes(group, "text", "title")]
    assert titles == ["overall (grey band: ±5.0% margin; triangles: interval cut at the edge)"]
    (diamond,) = shapes(group, "polygon", "baseline")  # the baseline's row, the second
    assert diamond.get("points") == "314,56 318,60 314,64 310,60"
    assert diamond.get("fill") == "#1565c0"
    unbounded = speed_report()
    estimates = {
        **unbounded.figures.estimates,
        (FAST, OVERALL): overall(FAST, 1.25, 1.1, math.inf, "faster"),
    }
    clipped = replace(unbounded, figures=replace(unbounded.figures, estimates=estimates))
    group = panel(speedup_svg(clipped), OVERALL)
    marks = {e.get("data-config"): e.get("points") for e in shapes(group, "polygon", "cut")}
    assert marks[FAST] == "548.5,40 539.5,35.5 539.5,44.5"  # ">" at the right edge, 544


def test_the_ratio_ticks_are_labelled_under_the_panel() -> None:
    group = panel(speedup_svg(speed_report()), OVERALL)
    labels = [t for t in shapes(group, "text") if t.get("y") == "109"]  # 15 px below y 94
    assert [t.text for t in labels] == ["0.7", "0.8", "0.9", "1", "1.1", "1.25", "1.5"]
    one = next(t for t in labels if t.text == "1")
    assert number(one, "x") == pytest.approx(314)


def test_the_overall_panel_comes_first_and_panels_stand_two_to_a_row() -> None:
    """Four panels (overall and three benchmarks), 134 px high each (26 + 3 rows of 20 + 8
    + 40): two rows of two, 1120 px wide."""
    r = speed_report()
    root = ElementTree.fromstring(speedup_svg(r))
    assert (root.get("width"), root.get("height")) == ("1120", "268")
    benches = [g.get("data-bench") for g in root.iter(f"{SVG}g")]
    assert benches == [OVERALL, "gru-keras", "matmul-pinned", "input-fed"]
    input_fed = panel(speedup_svg(r), "input-fed")  # the fourth: right column, second row
    (frame,) = shapes(input_fed, "rect", "axis")
    assert (number(frame, "x"), number(frame, "y")) == (560 + LABELS, 134 + 26)


def test_a_config_without_an_estimate_on_a_benchmark_has_no_bar_there() -> None:
    r = speed_report()
    estimates = {k: e for k, e in r.figures.estimates.items() if k != (FAST, "gru-keras")}
    group = panel(speedup_svg(replace(r, figures=replace(r.figures, estimates=estimates))),
                  "gru-keras")  # fmt: skip
    assert [e.get("data-config") for e in shapes(group, "rect", "bar")] == [SLOW]
    titles = [t.text for t in shapes(group, "text", "title")]
    assert titles == ["gru-keras (grey band: ±5.0% margin)"]  # nothing cut


def samples_report() -> HostReport:
    """gru-keras: the baseline's samples 100-500, fast's 400-1000, none of slow's;
    matmul-pinned: a sample of 0, so a linear axis."""
    r = measured()
    samples = dict(r.figures.samples)
    samples[(BASELINE, "gru-keras")] = [100.0, 200.0, 300.0, 400.0, 500.0]
    samples[(FAST, "gru-keras")] = [400.0, 600.0, 800.0, 1000.0]
    samples[(SLOW, "gru-keras")] = []
    samples[(BASELINE, "matmul-pinned")] = [0.0, 10.0, 20.0]
    samples[(FAST, "matmul-pinned")] = [30.0, 40.0]
    samples[(SLOW, "matmul-pinned")] = [15.0]
    return replace(r, figures=replace(r.figures, samples=samples))


def test_each_configs_box_spans_its_quartiles_on_the_log_axis() -> None:
    """gru-keras's axis runs from 100 / 1.15 (y 216) up to 1000 x 1.15 (y 26); the configs
    stand 160 px apart from x 64, in ranking order (fast, baseline, slow)."""
    group = panel(samples_svg(samples_report()), "gru-keras")
    lo, hi = 100 / 1.15, 1000 * 1.15

    def y(value: float) -> float:
        return 216 - 190 * math.log(value / lo) / math.log(hi / lo)

    boxes = {e.get("data-config"): e for e in shapes(group, "rect", "box")}
    assert set(boxes) == {FAST, BASELINE}  # slow has no sample here
    for config, values, x in ((FAST, [400, 600, 800, 1000], 144), (BASELINE, [100, 300, 500], 304)):
        q1, _, q3 = np.percentile(values, [25, 50, 75])
        box = boxes[config]
        assert (number(box, "x"), number(box, "width")) == (x - 28, 56)
        assert number(box, "y") == pytest.approx(y(q3), abs=0.006)
        assert number(box, "height") == pytest.approx(y(q1) - y(q3), abs=0.011)
    medians = [e for e in shapes(group, "line") if e.get("stroke") == "#1565c0"]
    assert [number(m, "y1") for m in medians] == pytest.approx([y(700), y(300)], abs=0.006)
    dots = shapes(group, "circle", "sample")
    assert len(dots) == 9
    assert sorted(number(d, "cy") for d in dots) == pytest.approx(
        sorted(y(v) for v in [100, 200, 300, 400, 500, 400, 600, 800, 1000]), abs=0.006
    )
    ticks = [t.text for t in shapes(group, "text") if t.get("x") == "58"]
    assert ticks == ["100", "200", "500", "1000"]
    titles = [t.text for t in shapes(group, "text", "title")]
    assert titles == ["gru-keras (examples/s, every sample, log scale)"]


def test_a_sample_not_above_zero_puts_its_panel_on_a_linear_axis() -> None:
    """Samples 0-40 padded by 8 % of the span (3.2) either way: 0 at y 216 - 190 x 3.2 / 46.4.
    The second panel, its ticks labelled at x 560 + 64 - 6."""
    group = panel(samples_svg(samples_report()), "matmul-pinned")
    titles = [t.text for t in shapes(group, "text", "title")]
    assert titles == ["matmul-pinned (GFLOP/s, every sample, linear scale)"]
    ticks = [t.text for t in shapes(group, "text") if t.get("x") == "618"]
    assert ticks == ["0", "10", "20", "30", "40"]
    zero = min(shapes(group, "circle", "sample"), key=lambda d: -number(d, "cy"))
    assert number(zero, "cy") == pytest.approx(216 - 190 * 3.2 / 46.4, abs=0.006)


def test_the_samples_chart_has_a_panel_per_benchmark_two_to_a_row() -> None:
    """Three panels: two rows; each 216 px plus room for the slanted names (12 characters at
    9 px, times 0.82, plus 14)."""
    root = ElementTree.fromstring(samples_svg(samples_report()))
    height = 2 * (216 + 12 * 9 * 0.6 * 0.82 + 14)
    assert root.get("width") == "1120"
    assert float(root.attrib["height"]) == pytest.approx(height, abs=0.006)
    assert [g.get("data-bench") for g in root.iter(f"{SVG}g")] == [
        "gru-keras",
        "matmul-pinned",
        "input-fed",
    ]
