"""The trend across nights: `tfbuild compare --history` on three committed nights (the third
with the baseline on a new TensorFlow release, 8% slower on gru-keras), as a table, as JSON and
as the history page in a real browser."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from xml.etree import ElementTree

import pytest
from support.browser import loaded, screenshot
from support.cli import compare
from support.golden import check_golden
from support.nights import NIGHTS, SLOWER, nights, text

SVG = "{http://www.w3.org/2000/svg}"


def test_the_committed_nights_are_what_their_generator_makes() -> None:
    """tests/fixtures/nights is support/nights.py's output (TFBUILD_UPDATE_GOLDEN=1 rewrites
    it): the page's input is what its docstring says it is."""
    check_golden({path: text(results) for path, results in nights().items()})


def medians(path: Path, config: str, bench: str) -> list[float]:
    """Each process's median throughput, read from the results file as it is on disk."""
    doc = json.loads(path.read_text())
    return [
        statistics.median(s["throughput"] for s in run["benchmarks"][bench]["samples"])
        for run in doc["runs"]
        if run["config"] == config and run["status"] == "ok"
    ]


def test_the_table_marks_the_new_release_and_shows_its_slowdown() -> None:
    proc = compare(str(NIGHTS), "--history")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "3 nights, 2026-01-01 to 2026-01-03" in out
    assert "* 2026-01-03 night-3: base: TensorFlow 2.21.0 -> 2.22.0" in out
    assert "mkl:" not in out.split("* 2026-01-03", 1)[1]  # mkl's wheel did not change
    table = out.split("gru-keras (", 1)[1].split("\n\n", 1)[0].splitlines()
    header = table[1].split()
    assert header[:2] == ["night", "base:default"], table
    rows = {line.split()[1]: line for line in table[2:]}
    assert rows["night-3"].split()[2] == "*" and "*" not in rows["night-2"]
    for n in (1, 2, 3):
        values = medians(NIGHTS / f"night-{n}.json", "base:default", "gru-keras")
        assert f"{statistics.median(values):.4g} [" in rows[f"night-{n}"]
    before = statistics.median(medians(NIGHTS / "night-2.json", "base:default", "gru-keras"))
    after = statistics.median(medians(NIGHTS / "night-3.json", "base:default", "gru-keras"))
    assert after / before == pytest.approx(SLOWER, abs=0.04)


def test_json_has_every_night_figure_with_its_interval() -> None:
    proc = compare(str(NIGHTS), "--history", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (found,) = json.loads(proc.stdout)["classes"]
    assert [n["session"] for n in found["nights"]] == ["night-1", "night-2", "night-3"]
    assert [n["changed"] for n in found["nights"]] == [
        [],
        [],
        ["base: TensorFlow 2.21.0 -> 2.22.0"],
    ]
    for n, night in enumerate(found["nights"], 1):
        assert len(night["figures"]) == 3 * 3  # base, base's A/A twin, mkl; three benchmarks
        for figure in night["figures"]:
            values = medians(NIGHTS / f"night-{n}.json", figure["config"], figure["benchmark"])
            assert figure["runs"] == len(values) == 10
            assert min(values) <= figure["low"] <= figure["median"] <= figure["high"]
            assert figure["high"] <= max(values)


def test_history_with_a_comparison_option_is_refused() -> None:
    proc = compare(str(NIGHTS), "--history", "--against", str(NIGHTS))
    assert proc.returncode == 64 and "Traceback" not in proc.stderr
    assert "--history shows the nights given" in proc.stderr


def test_the_history_page_in_chromium(tmp_path: Path) -> None:
    """A chart per benchmark, drawn by the browser, no script, no errors: the dashed change
    line stands before the third night, and the baseline's gru-keras point drops there while
    mkl's stays level."""
    page = tmp_path / "history.html"
    proc = compare(str(NIGHTS), "--history", "--format", "html", "--output", str(page))
    assert proc.returncode == 0, proc.stderr
    html = page.read_text()
    assert "<script" not in html
    result = loaded(page, tmp_path)
    assert result == {"images": 0, "broken": 0, "svg": 3, "drawn": 3, "errors": [], "tables": 3}
    charts = [ElementTree.fromstring(s) for s in re.findall(r"<svg .*?</svg>", html, re.S)]
    gru = next(c for c in charts if "gru-keras across nights" in (c.findtext(SVG + "title") or ""))
    changes = [e.get("data-night") for e in gru.iter(SVG + "line") if e.get("class") == "change"]
    assert changes == ["night-3"]
    heights = {
        (c.get("data-config"), c.get("data-night")): float(c.get("cy", "nan"))
        for c in gru.iter(SVG + "circle")
    }
    drop = heights[("base:default", "night-3")] - heights[("base:default", "night-2")]
    level = heights[("mkl:default", "night-3")] - heights[("mkl:default", "night-2")]
    assert drop > 2 * abs(level) and drop > 10, (drop, level)  # down the page: slower
    ticks = [t.text or "" for t in gru.iter(SVG + "text") if re.fullmatch(r"[\d.]+", t.text or "")]
    assert len(ticks) >= 3 and all(len(t) <= 5 for t in ticks), ticks  # round numbers
    shot = screenshot(page, tmp_path, tmp_path / "history.png", "1100,1500")
    assert shot.exists() and shot.stat().st_size > 30_000
