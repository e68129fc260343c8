"""The HTML report, rendered in a real browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from support.cli import RESULTS, compare
from support.env import require

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
    assert result == {"images": 2, "broken": 0, "errors": [], "tables": result["tables"]}
    assert result["tables"] >= 5  # ranking, per benchmark, seed experiments, host, builds
    screenshot = tmp_path / "report.png"
    subprocess.run(
        [browser, *flags, "--window-size=1280,2400", f"--screenshot={screenshot}", report.as_uri()],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert screenshot.exists() and screenshot.stat().st_size > 50_000
