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
from support.cli import RESULTS, committed_sessions, compare

SESSIONS = committed_sessions()


def _figures(name: str) -> dict[str, Any]:
    proc = compare(name, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (host,) = json.loads(proc.stdout)["hosts"]
    return dict(host)


def _expected(host: dict[str, Any]) -> str:
    """What the first line must begin with, from the session's figures alone: keep the
    baseline when every config that could be the fastest (the first tier) is at most the
    margin faster than it by its interval; else use the config furthest ahead of the baseline
    among those shown faster than it (lower bound above 1) whose floor (lower bound over the
    fastest of the others) shows them within the margin; else nothing is decided (nor when
    the A/A control shows the build unlike itself)."""
    decision = host["decision"]
    margin = decision["margin"]
    ranking = {e["config"]: e for e in host["ranking"]}
    baseline = host["baseline"]
    aa = host["aa"].get("overall")
    undecided = f"Inconclusive at the {margin:.1%} margin: "
    if host["rounds"] < 2 or (aa and not aa["low"] <= 1.0 <= aa["high"]):
        return undecided
    if decision["held"]:  # the A/A control cannot tell the baseline from itself yet
        return undecided
    contenders = [c for c in host["tiers"][0] if c != baseline]
    highs = [ranking[c]["high"] for c in contenders]
    if all(h is not None and h <= 1 + margin + 1e-12 for h in highs):
        return f"Keep the baseline {baseline}: "
    faster = [
        c
        for c, f in decision["floors"].items()
        if (f is None or f >= 1 / (1 + margin) - 1e-12) and c != baseline
        and ranking[c]["low"] is not None and ranking[c]["low"] > 1.0
    ]  # fmt: skip
    if not faster:
        return undecided
    chosen = ranking[max(faster, key=lambda c: ranking[c]["ratio"])]
    return f"Use {chosen['config']}: "


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
    ranking = {e["config"]: e for e in host["ranking"]}
    if expected.startswith("Use "):  # shown faster than what the person runs now
        assert ranking[host["decision"]["config"]]["low"] > 1.0
    if expected.startswith("Keep"):  # the bound it quotes is the one it was decided by
        contenders = host["decision"]["contenders"]
        if contenders:
            widest = max(contenders, key=lambda c: ranking[c]["high"])
            top = ranking[widest]["high"]
            quoted = (
                f"[{ranking[widest]['low']:.3f}, {top:.3f}]) reaches highest, at most {top:.3f}x"
            )
            assert quoted in host["answer"]["lines"][1], host["answer"]["lines"]
            assert top <= 1 + host["decision"]["margin"] + 1e-9


def test_a_session_of_identical_builds_never_leads_with_use() -> None:
    """The committed A/A session replayed under today's rules, and six copies of one build
    compared: neither tells a person to switch to a build identical to theirs."""
    from support.cli import run_tfbuild

    replayed = run_tfbuild("replay", "aa-run-epyc.json.gz", cwd=RESULTS)
    assert replayed.returncode == 0, replayed.stderr
    said = next(line for line in replayed.stdout.splitlines() if line.startswith("Its answer: "))
    assert not said.removeprefix("Its answer: ").startswith("Use "), said
    copies = _figures("null-6copies-12rounds.json")["answer"]["lines"][0]
    assert copies.startswith(("Keep the baseline ", "Inconclusive at the ")), copies


@pytest.mark.parametrize(
    ("name", "first", "then"),
    [
        (
            "default-run-epyc.json.gz",
            "Use intel-avx512-2.14:physical-cores: 14.4% faster than the baseline stock:default "
            "(1.144x [1.090, 1.200]), and the fastest config measured or within the 5.0% margin "
            "of it (96.0% confidence).",
            "Where: faster on gru-keras 1.108x, input-fed 1.438x, input-pinned 1.442x; not shown "
            "faster or slower on gru-static 1.053x, gru-dynamic 0.998x, matmul-fed 1.047x, "
            "matmul-pinned 1.036x (each benchmark against the baseline).",
        ),
        (
            "default-run.json.gz",
            "Inconclusive at the 6.1% margin: intel-avx512-2.14:physical-cores is faster than the "
            "baseline, but not yet known to be the fastest config or within the margin of it (it "
            "is at least 0.936 of the fastest).",
            "What it does show: intel-avx512-2.14:physical-cores is faster than the baseline "
            "stock:default (1.116x [1.018, 1.223]); which config is fastest is not settled.",
        ),
        (
            "session-default-quick.json",
            "Inconclusive at the 5.0% margin: the A/A control (the baseline against its own copy, "
            "the same build) cannot tell the baseline from itself yet: its interval reaches more "
            "than 3x the margin (or the spread of one process, where larger) either way.",
            "What it does show: 9 configs could still be the fastest, the baseline among them; "
            "none is shown faster than the baseline.",
        ),
    ],
)
def test_the_sessions_the_issue_names(name: str, first: str, then: str) -> None:
    """The reference session is decided, and says where its gain is; the noisy session that ran
    to its horizon and the quick one are not, and say what they do show and what would settle
    them."""
    lines = _figures(name)["answer"]["lines"]
    assert lines[0] == first
    assert lines[1] == then
    if not first.startswith("Use"):
        assert lines[2].startswith("To settle it: about ") and "`--rounds=" in lines[2]
