"""The answer every format leads with, for every committed real session: its first line says
what to use, or "Inconclusive" and why, as the session's own figures (its leading tier's
resolution against the target, its A/A control, its verdicts, read from `compare --format
json`) warrant; and no "use this" block claims a decision the data does not support."""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from typing import Any

import pytest
from support.cli import RESULTS, compare

SESSIONS = sorted(
    p.name
    for p in RESULTS.iterdir()
    if p.name.endswith((".json", ".json.gz")) and not p.name.startswith("calibration")
)


def _figures(name: str) -> dict[str, Any]:
    proc = compare(name, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (host,) = json.loads(proc.stdout)["hosts"]
    return dict(host)


def _expected(host: dict[str, Any]) -> str:
    """What the first line must begin with, from the session's figures alone."""
    target = host["design"]["resolve"] if host["design"]["kind"] == "sequential" else None
    lead = [c for c in host["tiers"][0] if c != host["baseline"]]
    margin = host["margins"]["overall"]
    aa = host["aa"].get("overall")
    reach = max(math.log(aa["high"]), -math.log(aa["low"])) if aa else 0.0
    if lead and host["resolution"] > (target or 0.05) + 5e-4:
        return "Inconclusive: the leading tier"
    if reach > 2 * math.log1p(margin):
        return "Inconclusive: the A/A control"
    faster = [e for e in host["ranking"] if e["verdict"] == "faster"]
    if faster:
        best = max(faster, key=lambda e: (e["config"] in lead, e["ratio"]))
        return f"Use {best['config']}: "
    return f"Keep the baseline {host['baseline']}: "


class _Text(HTMLParser):
    """The visible text of an HTML page, block by block, and its title."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[str] = []
        self.title = ""
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self._in.append(tag)
        if tag in ("p", "h1", "h2", "li", "pre"):
            self.blocks.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._in:
            del self._in[len(self._in) - 1 - self._in[::-1].index(tag) :]

    def handle_data(self, data: str) -> None:
        if "title" in self._in:
            self.title += data
        elif "style" not in self._in and self.blocks:
            self.blocks[-1] += data


@pytest.mark.parametrize("name", SESSIONS)
def test_every_format_leads_with_the_answer_the_figures_warrant(name: str) -> None:
    host = _figures(name)
    expected = _expected(host)
    assert host["answer"]["lines"][0].startswith(expected)
    proc = compare(name)  # 120 columns: the answer wraps at spaces
    assert proc.returncode == 0, proc.stderr
    assert " ".join(proc.stdout.split()).startswith(expected.strip())
    markdown = compare(name, "--format", "markdown").stdout
    first = markdown.splitlines()[0].replace("**", "")
    assert first.startswith(expected), first
    page = _Text()
    page.feed(compare(name, "--format", "html").stdout)
    assert page.title.startswith(expected) and page.blocks[0].startswith(expected)
    block = markdown.split("```bash", 1)[1]
    decided = not expected.startswith("Inconclusive")
    assert block.lstrip().startswith("# Use ") == decided, block[:200]


@pytest.mark.parametrize(
    ("name", "first", "then"),
    [
        (
            "default-run-epyc.json.gz",
            "Use intel-avx512-2.14:physical-cores: 14.4% faster than the baseline stock:default "
            "(1.144x [1.090, 1.200], beyond the 4.9% margin), leading tier resolved to ±4.9%",
            "Not told apart from it: intel-2.14:physical-cores (1.104x [1.061, 1.150]).",
        ),
        (
            "default-run.json.gz",
            "Inconclusive: the leading tier (4 configs besides the baseline) is resolved to "
            "±10.9%, not the ±5.0% target.",
            "What it does show: intel-avx512-2.14:physical-cores is probably faster than the "
            "baseline stock:default (1.116x [1.018, 1.223]), by less than the 7.2% margin",
        ),
        (
            "session-default-quick.json",
            "Inconclusive: the leading tier (6 configs besides the baseline) is resolved to "
            "±42.0%, not the ±5.0% target; the A/A control (the baseline against its copy) is "
            "0.967x [0.503, 1.859]",
            "What it does show: nothing is faster than the baseline stock:default",
        ),
    ],
)
def test_the_sessions_the_issue_names(name: str, first: str, then: str) -> None:
    """The reference session is decided; the noisy session that ran to its horizon and the
    quick one are not, and say what they do show and what would settle them."""
    lines = _figures(name)["answer"]["lines"]
    assert lines[0].startswith(first) and lines[1].startswith(then)
    if first.startswith("Inconclusive"):
        assert lines[2].startswith("To settle it: about ") and "`--rounds=" in lines[2]
