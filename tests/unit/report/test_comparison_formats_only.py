"""report/ formats what the analysis computed and computes nothing: a finished report is laid
out in every format `tfbuild compare` writes (terminal, Markdown, JSON, HTML) while everything
in tfbuild.analysis that simulates or analyses refuses to run, and the figures printed are the
ones the analysis gave."""

from __future__ import annotations

import importlib
import inspect
import io
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from rich.console import Console
from support.cli import RESULTS

from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.reported import HostReport
from tfbuild.analysis.sessions import load_sessions
from tfbuild.report.comparison import compare_markdown
from tfbuild.report.document import compare_json
from tfbuild.report.html import compare_html
from tfbuild.report.ranking import compare_view

SESSION = RESULTS / "default-run.json.gz"
"""A sequential session that is inconclusive: its report has both simulated figures, the
fixed design it is worth and the budget that would settle its answer."""
SIMULATING = ("tfbuild.analysis.power", "tfbuild.analysis.scenarios", "tfbuild.analysis.replay")
"""The modules of tfbuild.analysis that simulate sessions (numpy or random draws)."""
ANALYSING = {"analyse", "analyse_host", "answer", "decide"}
"""The analysis's entry points, wherever they are imported: formatting calls none of them."""


def _terminal(reports: list[HostReport]) -> str:
    out = Console(record=True, file=io.StringIO(), width=120, highlight=False)
    out.print(compare_view(reports, out.width), crop=False)
    return out.export_text()


def _json(reports: list[HostReport]) -> str:
    return json.dumps(compare_json(reports), indent=2)


FORMATS: dict[str, Callable[[list[HostReport]], str]] = {
    "terminal": _terminal,
    "markdown": compare_markdown,
    "json": _json,
    "html": compare_html,
}


def _words(text: str) -> str:
    """The text's words, one space apart, Markdown's bold marks taken out."""
    return " ".join(text.replace("**", "").split())


@pytest.fixture(scope="module")
def analysed() -> HostReport:
    return analyse_host(load_sessions([SESSION]), power=True)


@pytest.fixture(scope="module")
def unpowered() -> HostReport:
    return analyse_host(load_sessions([SESSION]))


@pytest.fixture
def refused(
    analysed: HostReport, unpowered: HostReport, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[str]]:
    """Once the reports are analysed: every simulating or analysing function, in every
    tfbuild.analysis and tfbuild.report module that holds it, replaced by one that records its
    name and raises; the names called."""
    for name in SIMULATING:
        importlib.import_module(name)
    called: list[str] = []

    def refuse(name: str) -> Callable[..., Any]:
        def refusing(*args: object, **kwargs: object) -> Any:
            called.append(name)
            raise AssertionError(f"formatting called {name}")

        return refusing

    modules = [
        m for n, m in sys.modules.items() if n.startswith(("tfbuild.analysis", "tfbuild.report"))
    ]
    for module in modules:
        for name, value in vars(module).copy().items():
            if not inspect.isfunction(value):
                continue
            if value.__module__ in SIMULATING or (
                name in ANALYSING and value.__module__.startswith("tfbuild.analysis")
            ):
                monkeypatch.setattr(module, name, refuse(f"{value.__module__}.{name}"))
    monkeypatch.setattr("numpy.random.default_rng", refuse("numpy.random.default_rng"))
    yield called


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_prints_the_figures_the_analysis_computed(
    fmt: str, analysed: HostReport, refused: list[str]
) -> None:
    """The fixed design the session is worth and the budget that settles its answer were
    simulated by the analysis: every format prints those figures, and nothing simulates."""
    assert analysed.course.fixed_equivalent is not None and analysed.answer.settle is not None
    rounds, processes = analysed.course.fixed_equivalent
    settle_rounds, settle_processes = analysed.answer.settle
    text = FORMATS[fmt]([analysed])
    assert refused == []
    if fmt == "json":
        (host,) = json.loads(text)["hosts"]
        assert host["fixed_equivalent"] == [rounds, processes]
        assert host["answer"]["settle"] == [settle_rounds, settle_processes]
        assert host["answer"]["lines"] == list(analysed.answer.lines)
        return
    said = _words(text)
    assert f"would need {rounds} rounds, {processes} processes" in said
    assert f"about {settle_rounds} rounds of every config ({settle_processes} benchmark" in said
    for line in analysed.answer.lines:
        assert _words(line) in said, line


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_report_not_asked_for_power_says_nothing_of_what_it_would_plan(
    fmt: str, unpowered: HostReport, refused: list[str]
) -> None:
    """Without `power` the analysis plans neither the fixed design nor the budget: the report
    says nothing of them rather than plan them while it is formatted."""
    assert unpowered.course.fixed_equivalent is None and unpowered.answer.settle is None
    assert unpowered.decision.cause == "open"  # what a budget would be asked for
    text = FORMATS[fmt]([unpowered])
    assert refused == []
    if fmt == "json":
        (host,) = json.loads(text)["hosts"]
        assert host["fixed_equivalent"] is None and host["answer"]["settle"] is None
        return
    said = _words(text)
    assert "a fixed design (every config every round) would need" not in said
    assert "To settle it" not in said and "Deciding it at the" not in said
