"""The SVG building blocks the report's charts are drawn with: a canvas that writes shapes as
well-formed SVG (attribute names spelled as SVG spells them, text and values escaped, numbers to
two decimals), axes that put a value where its share of the span says (linearly or on a log
scale, upwards or to the right), the round-number ticks of either axis, and a box plot's
quartiles and whiskers."""

from __future__ import annotations

import math
from xml.etree import ElementTree

import numpy as np
import pytest

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

SVG = "{http://www.w3.org/2000/svg}"


def test_shapes_are_written_with_svg_attribute_names_and_two_decimals() -> None:
    canvas = Canvas(100, 50, "t")
    canvas.add("rect", class_="box", x=12.345, y=3.0, width=10.5, stroke_width=0.8,
               data_config="a:b", fill=None)  # fmt: skip
    canvas.line(0, 1.256, 10, 2)
    canvas.line(0, 0, 5, 5, stroke="red")
    assert canvas.parts == [
        '<rect class="box" x="12.35" y="3" width="10.5" stroke-width="0.8" data-config="a:b"/>',
        '<line x1="0" y1="1.26" x2="10" y2="2" stroke="black"/>',
        '<line x1="0" y1="0" x2="5" y2="5" stroke="red"/>',
    ]


def test_text_and_attribute_values_are_escaped() -> None:
    canvas = Canvas(10, 10, "a < b & c")
    canvas.text(1, 2, 'x<y & "z"', size=9, text_anchor="end", data_q='say "hi"')
    (part,) = canvas.parts
    assert part == (
        '<text x="1" y="2" font-size="9" text-anchor="end" data-q="say &quot;hi&quot;">'
        "x&lt;y &amp; &quot;z&quot;</text>"
    )
    root = ElementTree.fromstring(canvas.document())
    assert root.find(f"{SVG}title").text == "a < b & c"  # type: ignore[union-attr]
    assert root.find(f"{SVG}text").text == 'x<y & "z"'  # type: ignore[union-attr]


def test_markers_are_a_diamond_and_triangles_around_their_point() -> None:
    canvas = Canvas(10, 10, "m")
    canvas.marker("D", 10, 20, 8, fill="blue")
    canvas.marker("<", 10, 20, 9)
    canvas.marker(">", 10, 20, 9)
    assert canvas.parts == [
        '<polygon points="10,16 14,20 10,24 6,20" fill="blue"/>',
        '<polygon points="5.5,20 14.5,15.5 14.5,24.5"/>',
        '<polygon points="14.5,20 5.5,15.5 5.5,24.5"/>',
    ]


def test_a_document_is_well_formed_svg_with_its_size_and_shapes_in_drawing_order() -> None:
    canvas = Canvas(560.5, 120, "speed")
    canvas.open("g", class_="panel", data_bench="gru-keras")
    canvas.add("rect", x=1.0, y=2.0)
    canvas.text(3, 4, "label")
    canvas.close("g")
    text = canvas.document()
    assert text.startswith(
        '<svg xmlns="http://www.w3.org/2000/svg" width="560.5" height="120" '
        'viewBox="0 0 560.5 120" font-family="system-ui, -apple-system, &#x27;Segoe UI&#x27;, '
        'Helvetica, Arial, sans-serif">'
    )
    assert text.endswith("</svg>")
    root = ElementTree.fromstring(text)
    assert [child.tag for child in root] == [f"{SVG}title", f"{SVG}g"]
    (group,) = root.iter(f"{SVG}g")
    assert group.attrib == {"class": "panel", "data-bench": "gru-keras"}
    assert [child.tag.removeprefix(SVG) for child in group] == ["rect", "text"]
    assert root.attrib["font-family"].startswith("system-ui, -apple-system, 'Segoe UI'")


def test_text_width_is_six_tenths_of_the_font_size_a_character() -> None:
    assert text_width("abcd", 10) == pytest.approx(24.0)
    assert text_width("", 10) == 0.0
    assert text_width("base:default", 9) == pytest.approx(12 * 9 * 0.6)


def test_a_linear_axis_maps_the_span_onto_its_pixels_either_way() -> None:
    right = Axis(0.0, 10.0, 100.0, 300.0, log=False)
    assert (right(0.0), right(2.5), right(10.0)) == (100.0, 150.0, 300.0)
    upwards = Axis(0.0, 10.0, 200.0, 0.0, log=False)  # y grows downwards in SVG
    assert (upwards(0.0), upwards(2.5), upwards(10.0)) == (200.0, 150.0, 0.0)
    assert right(12.0) == pytest.approx(340.0)  # beyond the span, on the same line


def test_a_log_axis_puts_a_ratio_and_its_inverse_equally_far_from_one() -> None:
    axis = Axis(1.0, 100.0, 0.0, 200.0, log=True)
    assert axis(1.0) == 0.0 and axis(10.0) == pytest.approx(100.0)
    assert axis(100.0) == pytest.approx(200.0)
    ratios = Axis(0.5, 2.0, 0.0, 100.0, log=True)
    assert ratios(1.0) == pytest.approx(50.0)
    assert ratios(1.25) - ratios(1.0) == pytest.approx(ratios(1.0) - ratios(0.8))
    assert ratios(1.5) == pytest.approx(100 * math.log(3.0) / math.log(4.0))


def test_log_ticks_take_1_2_5_then_powers_of_ten_then_finer_steps() -> None:
    """1-2-5 when they are 2 to 7; only the powers of ten over a wide span; 1, 1.5, 2, 3, 5, 7
    over a short one; evenly spaced round numbers when even those are fewer than two."""
    assert log_ticks(3.0, 80.0) == [5.0, 10.0, 20.0, 50.0]
    assert log_ticks(1.0, 1000.0) == [1.0, 10.0, 100.0, 1000.0]  # 1-2-5 would be 10
    assert log_ticks(1.2, 4.0) == [1.5, 2.0, 3.0]
    assert log_ticks(1.1, 1.9) == pytest.approx([1.2, 1.4, 1.6, 1.8])
    assert log_ticks(100 / 1.15, 1000 * 1.15) == [100.0, 200.0, 500.0, 1000.0]


def test_linear_ticks_are_round_steps_of_one_two_or_five() -> None:
    assert linear_ticks(0.0, 10.0) == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert linear_ticks(-3.0, 3.0) == [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0]
    assert linear_ticks(12.0, 97.0) == [20.0, 40.0, 60.0, 80.0]
    assert linear_ticks(0.0, 10.0, most=3) == [0.0, 5.0, 10.0]
    assert linear_ticks(5.0, 5.0) == [5.0]  # no span: the one value


def test_tick_labels_are_short_numbers() -> None:
    assert [tick_label(v) for v in (0.5, 1.0, 1.25, 1000.0, 2e6)] == [
        "0.5",
        "1",
        "1.25",
        "1000",
        "2e+06",
    ]


@pytest.mark.parametrize(
    "values",
    [[1.0, 2.0, 3.0, 4.0], [7.0], [5.0, 1.0, 9.0, 3.0, 3.5, 12.0, 2.2], list(range(11))],
)
def test_quartiles_are_numpys_linear_percentiles(values: list[float]) -> None:
    expected = np.percentile(np.array(values, dtype=float), [25, 50, 75])
    assert quartiles(values) == pytest.approx(tuple(expected))


def test_whiskers_reach_the_furthest_values_within_one_and_a_half_boxes() -> None:
    """Q1 2, Q3 4: 1.5 IQR is 3, so the fence is [-1, 7]: 100 is left out and 1 is kept."""
    values = [1.0, 2.0, 3.0, 4.0, 100.0]
    q1, _, q3 = quartiles(values)
    assert (q1, q3) == (2.0, 4.0)
    assert whisker_reach(values, q1, q3) == (1.0, 4.0)
    both = [-5.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 20.0]
    q1, _, q3 = quartiles(both)  # 1 and 5: the fence is [-5, 11]
    assert whisker_reach(both, q1, q3) == (-5.0, 6.0)


def test_bounds_are_the_smallest_and_largest_value() -> None:
    assert bounds([3.0, -1.5, 8.25, 0.0]) == (-1.5, 8.25)
    assert bounds(iter([2.0])) == (2.0, 2.0)
