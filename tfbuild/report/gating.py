"""The regression gate's verdict as a table's rows and as Markdown: each change of a config on a
benchmark against the previous results (with its interval and Holm-adjusted p), each config
measured before that has no results now, and what the gate compared."""

from __future__ import annotations

from tfbuild.analysis.gate import Gate
from tfbuild.report.comparison import md_table, pct


def gate_rows(verdict: Gate, regression: str, missing: str) -> list[list[str]]:
    rows = [
        [c.host, c.config, c.benchmark, f"{c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}]",
         f"{c.p_holm:.3g}", regression if c.regression else ""]
        for c in verdict.changes
    ]  # fmt: skip
    rows += [
        [m.host, m.config, ", ".join(m.benchmarks), f"not measured: {m.why}", "", missing]
        for m in verdict.missing
    ]
    return rows


GATE_HEADER = ("machine class", "config", "benchmark", "new / old [95% CI]", "Holm p", "")


def gate_title(fail_above: float) -> str:
    return (
        f"Against the previous results (fails when slower by more than {pct(fail_above)} with "
        "Holm p < 0.05, when a config measured before has no results now, or when nothing is "
        "compared)"
    )


def gate_markdown(verdict: Gate, fail_above: float) -> str:
    rows = gate_rows(verdict, "**REGRESSION**", "**MISSING**")
    notes = [f"- not compared: {note}" for note in verdict.notes]
    said = verdict.compared().capitalize() + "."
    return "\n".join(
        [f"## {gate_title(fail_above)}", "", f"**{said}**", "", *md_table(GATE_HEADER, rows), "",
         *notes, ""]
    )  # fmt: skip
