"""The HTML report, rendered in a real browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import RESULTS, compare
from support.env import require

from tfbuild.analysis.host_report import analyse
from tfbuild.analysis.sessions import load_sessions
from tfbuild.report.html import speedup_figure

REAL = RESULTS / "session-2x2-10rounds.json"

CHECK = """
<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || e.type)), true);
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const broken = imgs.filter(i => !i.complete || i.naturalWidth === 0).length;
  const out = document.createElement('pre');
  out.id = 'tfbuild-check';
  out.textContent = JSON.stringify({images: imgs.length, broken: broken,
                                    errors: window.__errors,
                                    tables: document.querySelectorAll('table').length});
  document.body.appendChild(out);
});
</script>
"""


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    require(path is not None, "chromium is not installed (apt-get install chromium)")
    assert path is not None
    return path


def test_html_report_renders_in_chromium(tmp_path: Path) -> None:
    """The HTML report of the real session, loaded in headless Chromium: no errors, every
    chart image decodes. A screenshot is left next to the report for a person to look at."""
    browser = chromium()
    report = tmp_path / "report.html"
    proc = compare(str(REAL), "--format", "html", "--output", str(report))
    assert proc.returncode == 0, proc.stderr
    html = report.read_text()
    assert html.count('src="data:image/png;base64,') == 2
    assert "<script" not in html  # self-contained, static
    assert "<h3>Seed experiments</h3>" in html
    checked = tmp_path / "checked.html"
    checked.write_text(html.replace("<head>", "<head>" + CHECK, 1))
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [browser, *flags, "--virtual-time-budget=5000", "--dump-dom", checked.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    match = re.search(r'<pre id="tfbuild-check">(.*?)</pre>', dom.stdout)
    assert match, dom.stderr[-2000:]
    result = json.loads(match.group(1).replace("&quot;", '"'))
    # every table of the file reaches the page: ranking, per benchmark, seed experiments,
    # host, builds and the rest
    tables = len(re.findall(r"<table[ >]", html))
    assert tables >= 5
    assert result == {"images": 2, "broken": 0, "errors": [], "tables": tables}
    screenshot = tmp_path / "report.png"
    subprocess.run(
        [browser, *flags, "--window-size=1280,2400", f"--screenshot={screenshot}", report.as_uri()],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert screenshot.exists() and screenshot.stat().st_size > 50_000


@pytest.mark.parametrize("name", ["session-default-quick.json", "default-run.json.gz"])
def test_speedup_panels_are_log_scaled_with_every_bar_and_whisker_inside(name: str) -> None:
    """The two sessions whose whiskers reached 1e11 and 70x: every panel is on a log axis, every
    bar and whisker lies inside it, and the whiskers cut at an edge are marked there."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.container import BarContainer, ErrorbarContainer

    (report,) = analyse(load_sessions([RESULTS / name]))
    figure = speedup_figure(report)
    panels = [ax for ax in figure.axes if ax.get_visible()]
    assert len(panels) == 1 + len(report.benchmarks)
    marked = 0
    for ax in panels:
        assert ax.get_xscale() == "log"
        lo, hi = sorted(ax.get_xlim())
        bars = [b for c in ax.containers if isinstance(c, BarContainer) for b in c]
        whiskers = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert bars and len(whiskers) == len(bars)
        for bar in bars:
            left, right = sorted((bar.get_x(), bar.get_x() + bar.get_width()))
            assert lo <= left and right <= hi, (ax.get_title(), left, right, lo, hi)
        for container in whiskers:
            for segments in container.lines[2]:
                for (x0, _), (x1, _) in segments.get_segments():
                    assert lo * 0.999 <= min(x0, x1) and max(x0, x1) <= hi * 1.001
        edges = [
            line
            for line in ax.get_lines()
            if line.get_marker() in ("<", ">") and line.get_xdata()[0] in (lo, hi)
        ]
        marked += len(edges)
        assert ("cut at the edge" in ax.get_title()) == bool(edges)
    wide = sum(
        1
        for (config, bench), e in report.estimates.items()
        if e.low < _limit(figure, report, bench, 0) or e.high > _limit(figure, report, bench, 1)
    )
    assert marked >= 1 and marked >= wide
    plt_close(figure)


def _limit(figure: Any, report: Any, bench: str, side: int) -> float:
    """The axis limit of a benchmark's panel, from its title."""
    for ax in figure.axes:
        if ax.get_title().startswith(f"{bench} ("):
            return float(sorted(ax.get_xlim())[side])
    raise AssertionError(bench)


def plt_close(figure: Any) -> None:
    import matplotlib.pyplot as plt

    plt.close(figure)
