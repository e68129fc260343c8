"""The regression gate's verdict as rows and as Markdown: a config slower than the threshold
is one row marked as a regression, with its interval and Holm-adjusted p; a config measured
before with no results now is a row marked missing; Markdown leads with what was compared."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.synthetic import BENCHMARKS, session

from tfbuild.analysis.gate import gate
from tfbuild.analysis.sessions import Session
from tfbuild.report.gating import GATE_HEADER, gate_markdown, gate_rows, gate_title


def sessions_of(effects: dict[str, float], failing: tuple[str, ...] = ()) -> list[Session]:
    """New results of the configs at their true speeds, those `failing` measuring nothing."""
    broken = {c: list(BENCHMARKS) for c in failing}
    return [Session(Path("new.json"), session(effects, seed=3, session_id="new", failing=broken))]


OLD = [Session(Path("old.json"), session({"v:default": 1.0, "w:default": 1.0}, seed=1,
                                         session_id="old"))]  # fmt: skip


def test_a_slower_config_is_a_regression_row_and_a_missing_one_a_missing_row() -> None:
    new = sessions_of({"v:default": 0.8, "w:default": 1.0}, failing=("w:default",))
    verdict = gate(new, OLD, 0.05, False)
    rows = gate_rows(verdict, "REGRESSION", "MISSING")
    assert all(len(row) == len(GATE_HEADER) for row in rows)
    regressions = [row for row in rows if row[-1] == "REGRESSION"]
    assert {row[1] for row in regressions} == {"v:default"}
    for row in regressions:
        ratio, _, interval = row[3].partition(" ")
        low, high = (float(x) for x in interval.strip("[]").split(", "))
        assert 0.7 < low <= float(ratio) <= high < 0.9  # the truth: 0.8
        assert float(row[4]) < 0.05
    (missing,) = [row for row in rows if row[-1] == "MISSING"]
    assert (
        missing[1] == "w:default" and missing[3] == "not measured: rounds 1-10: RuntimeError: boom"
    )
    assert missing[2].split(", ") == sorted(BENCHMARKS)


def test_markdown_says_what_was_compared_then_the_table_and_what_was_not() -> None:
    new = sessions_of({"v:default": 1.0, "w:default": 1.0})
    verdict = replace(gate(new, OLD, 0.05, False), notes=["old.json: another machine"])
    text = gate_markdown(verdict, 0.05).splitlines()
    assert text[0] == f"## {gate_title(0.05)}"
    assert gate_title(0.05).startswith(
        "Against the previous results (fails when slower by more than 5.0% with Holm p < 0.05"
    )
    assert text[2] == f"**{verdict.compared().capitalize()}.**"
    assert text[2].startswith("**Compared 3 configs x 3 benchmarks")
    assert text[4] == "| " + " | ".join(GATE_HEADER) + " |"
    assert "**REGRESSION**" not in "\n".join(text)
    assert "- not compared: old.json: another machine" in text
