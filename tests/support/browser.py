"""A real browser (headless Chromium) loading a page tfbuild wrote: what the page reports once
loaded (images that decode, inline SVG charts drawn, tables, script errors) and a screenshot."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from support.env import require

CHECK = """
<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || e.type)), true);
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const broken = imgs.filter(i => !i.complete || i.naturalWidth === 0).length;
  const charts = Array.from(document.querySelectorAll('body svg'));
  const drawn = charts.filter(s => { const b = s.getBoundingClientRect();
                                     return b.width > 100 && b.height > 100; }).length;
  const out = document.createElement('pre');
  out.id = 'tfbuild-check';
  out.textContent = JSON.stringify({images: imgs.length, broken: broken,
                                    svg: charts.length, drawn: drawn,
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


def _flags(work: Path) -> list[str]:
    return [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-quic", f"--user-data-dir={work / 'profile'}",
    ]  # fmt: skip


def loaded(page: Path, work: Path) -> dict[str, Any]:
    """What the page holds once Chromium has loaded it (a copy with the check script added)."""
    checked = work / f"checked-{page.name}"
    checked.write_text(page.read_text().replace("<head>", "<head>" + CHECK, 1))
    dom = subprocess.run(
        [chromium(), *_flags(work), "--virtual-time-budget=5000", "--dump-dom", checked.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    match = re.search(r'<pre id="tfbuild-check">(.*?)</pre>', dom.stdout)
    assert match, dom.stderr[-2000:]
    found: dict[str, Any] = json.loads(match.group(1).replace("&quot;", '"'))
    return found


def screenshot(page: Path, work: Path, out: Path, size: str = "1280,2400") -> Path:
    subprocess.run(
        [chromium(), *_flags(work), f"--window-size={size}", f"--screenshot={out}", page.as_uri()],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    return out
