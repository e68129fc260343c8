"""`tfbuild scenarios` as text and Markdown, from a document whose tallies are set here: the
answer first (the worst wrong share and its bound, which scenarios miss their targets, the
share of sessions with a wrong per-benchmark verdict), then one row per scenario (each share
of the sessions with its one-sided bound, the median processes of the sessions that answered,
the targets met or missed), then what the columns mean."""

from __future__ import annotations

from typing import Any

from tfbuild.analysis.scenarios import ScenarioRun
from tfbuild.report.scenarios import HEAD, scenarios_markdown, scenarios_text, summary_line

NULL = {
    "scenario": "null-2", "about": "2 configs, all equally fast", "kind": "null",
    "sessions": 200, "right": 180, "wrong": 2, "inconclusive": 18, "right_lower": 0.8512,
    "wrong_upper": 0.0311, "inconclusive_upper": 0.1342, "median_processes": 70.0,
    "median_decided": 66, "benchmark_wrong": 0, "margins": [0.05], "misses": [],
}  # fmt: skip
LEAD = {
    "scenario": "lead-6", "about": "6 configs, one 10% faster", "kind": "lead",
    "sessions": 200, "right": 150, "wrong": 5, "inconclusive": 45, "right_lower": 0.6921,
    "wrong_upper": 0.0528, "inconclusive_upper": 0.2788, "median_processes": 130.0,
    "median_decided": 120.5, "benchmark_wrong": 3, "margins": [0.05],
    "misses": ["right 75.0% < 90%"],
}  # fmt: skip


def document(*scenarios: dict[str, Any]) -> ScenarioRun:
    """A run of these scenarios, read back as `tfbuild scenarios --from` reads one."""
    return ScenarioRun.from_json(
        {
            "schema": "tfbuild.scenarios/3",
            "rules": 6,
            "margin": 0.05,
            "confidence": 0.975,
            "targets": {"wrong": 0.025, "wrong_bound": 0.035, "right": 0.9},
            "sessions": 200,
            "first_seed": 0,
            "process_s": 5.6,
            "budget": {"per_config_s": 150.0, "at_least_s": 1200.0},
            "scenarios": list(scenarios),
        }
    )


def test_the_summary_names_the_worst_scenario_and_those_that_miss() -> None:
    """lead-6 has the higher bound on its wrong share (5/200 = 2.5 %, bound 5.3 %) and misses
    its right target; 3 of its 200 sessions held a wrong per-benchmark verdict."""
    assert summary_line(document(NULL, LEAD)) == (
        "Wrong answers: at most 2.5% of the sessions of a scenario (one-sided 95 % bound 5.3%, "
        "lead-6); 1 of 2 miss their targets (lead-6) (wrong at most 2.5%, its bound 3.5%; "
        "right at least 90% where one config leads by twice the margin); sessions with a wrong "
        "per-benchmark verdict: at most 1.5%; in 200 simulated sessions per scenario (decision "
        "rules 6, the 5% margin, answers at 97.5% confidence)."
    )


def test_every_target_met_and_no_wrong_verdict_are_said_so() -> None:
    said = summary_line(document(NULL))
    assert said.startswith(
        "Wrong answers: at most 1.0% of the sessions of a scenario (one-sided 95 % bound 3.1%, "
        "null-2); every scenario meets its targets (wrong at most 2.5%"
    )
    assert "sessions with a wrong per-benchmark verdict: none;" in said


def test_the_text_table_aligns_names_left_and_figures_right() -> None:
    """Column widths by hand: 8, 27 (null-2's description), 13, 11, 17 (the header), 9, 8 and
    25 (lead-6's miss); names, descriptions and targets to the left, the figures right."""
    lines = scenarios_text(document(NULL, LEAD)).splitlines()
    widths = (8, 27, 13, 11, 17, 9, 8, 25)

    def row(*cells: str) -> str:
        left = {0, 1, 7}
        return "  ".join(
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    assert lines[1] == ""
    assert lines[2:6] == [
        row(*HEAD),
        "  ".join("-" * w for w in widths),
        row("null-2", "2 configs, all equally fast", "90.0% (85.1%)", "1.0% (3.1%)",
            "9.0% (13.4%)", "66", "0.0%", "met"),
        row("lead-6", "6 configs, one 10% faster", "75.0% (69.2%)", "2.5% (5.3%)",
            "22.5% (27.9%)", "120.5", "1.5%", "missed: right 75.0% < 90%"),
    ]  # fmt: skip
    assert lines[2].startswith("scenario  what is true" + " " * 20 + "right (>=)   wrong (<=)")
    assert lines[4].startswith("null-2    2 configs, all equally fast  90.0% (85.1%)")
    assert lines[6] == ""
    assert lines[7].endswith(
        "(each 5.6 s; the budget 20 min, or 2.5 a config run where more); verdicts: the share "
        "of sessions whose report held a per-benchmark verdict the truth contradicts; targets: "
        "the scenario's own"
    )


def test_a_scenario_that_never_answered_has_no_median() -> None:
    silent = {**NULL, "scenario": "null-16", "median_decided": None}
    (line,) = [x for x in scenarios_text(document(silent)).splitlines() if x.startswith("null-16")]
    assert line.split("  ")[-1].strip() == "met"
    assert " - " in line and "66" not in line


def test_markdown_has_the_same_rows_in_a_table() -> None:
    lines = scenarios_markdown(document(NULL, LEAD)).splitlines()
    assert lines[0].startswith("Wrong answers: at most 2.5% of the sessions of a scenario")
    assert lines[1] == ""
    assert lines[2:6] == [
        "| scenario | what is true | right (>=) | wrong (<=) | inconclusive (<=) | processes "
        "| verdicts | targets |",
        "|---|---|---:|---:|---:|---:|---:|---|",
        "| null-2 | 2 configs, all equally fast | 90.0% (85.1%) | 1.0% (3.1%) | 9.0% (13.4%) "
        "| 66 | 0.0% | met |",
        "| lead-6 | 6 configs, one 10% faster | 75.0% (69.2%) | 2.5% (5.3%) | 22.5% (27.9%) "
        "| 120.5 | 1.5% | missed: right 75.0% < 90% |",
    ]
    assert lines[7].startswith("right, wrong, inconclusive: shares of the sessions' answers")
