"""The answer every format leads with, for every committed real session: its first line says
what to use, or "Inconclusive" and why, as the session's own figures (how close each config
that could be the fastest is known to be to the fastest, the margin, its A/A control, read
from `compare --format json`) warrant; and no "use this" block claims a decision the data does
not support."""

from __future__ import annotations

import json
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
    """What the first line must begin with, from the session's figures alone: keep the
    baseline when its floor (its lower bound over the fastest of the others) shows it within
    the margin; else use the config furthest ahead of the baseline among those whose floor
    does; else nothing is decided (nor when the A/A control shows the build unlike itself)."""
    decision = host["decision"]
    margin = decision["margin"]
    within = [
        c for c, f in decision["floors"].items() if f is None or f >= 1 / (1 + margin) - 1e-12
    ]
    aa = host["aa"].get("overall")
    if host["rounds"] < 2 or (aa and not aa["low"] <= 1.0 <= aa["high"]) or not within:
        return f"Inconclusive at the {margin:.1%} margin: "
    if host["baseline"] in within:
        return f"Keep the baseline {host['baseline']}: "
    ratio = {e["config"]: e["ratio"] for e in host["ranking"]}
    return f"Use {max(within, key=lambda c: ratio[c])}: within the {margin:.1%} margin"


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
    if expected.startswith("Keep"):  # its own bound on the fastest other, within the margin
        floor = host["decision"]["floors"][host["baseline"]]
        if floor is not None:
            assert 1 / floor <= 1 + host["decision"]["margin"] + 1e-9


@pytest.mark.parametrize(
    ("name", "first", "then"),
    [
        (
            "default-run-epyc.json.gz",
            "Use intel-avx512-2.14:physical-cores: within the 5.0% margin of the fastest config "
            "measured (98.5% confidence); 14.4% faster than the baseline stock:default (1.144x "
            "[1.090, 1.200]).",
            None,
        ),
        (
            "default-run.json.gz",
            "Inconclusive at the 6.1% margin: no config is known yet to be within it of the "
            "fastest (the closest, intel-avx512-2.14:physical-cores, is at least 0.936 of it).",
            "What it does show: intel-avx512-2.14:physical-cores is faster than the baseline "
            "stock:default (1.116x [1.018, 1.223]); which config is fastest is not settled.",
        ),
        (
            "session-default-quick.json",
            "Inconclusive at the 5.0% margin: no config is known yet to be within it of the "
            "fastest (the closest, intel-2.14:physical-cores, is at least 0.889 of it).",
            "What it does show: 7 configs could still be the fastest, the baseline among them; "
            "none is shown faster than the baseline.",
        ),
    ],
)
def test_the_sessions_the_issue_names(name: str, first: str, then: str | None) -> None:
    """The reference session is decided; the noisy session that ran to its horizon and the
    quick one are not, and say what they do show and what would settle them."""
    lines = _figures(name)["answer"]["lines"]
    assert lines[0] == first
    if then is not None:
        assert lines[1] == then
        assert lines[2].startswith("To settle it: about ") and "`--rounds=" in lines[2]
