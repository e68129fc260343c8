"""`tfbuild calibrate`'s tables from a calibration whose figures are set here: where one process
spends its time (each benchmark's timed seconds worked out from the suite design, the first one
scored, and its step time), each design's cost, noise and precision per wall-second, and the
same rows in the terminal and in Markdown."""

from __future__ import annotations

import io

from rich.console import Console

from tfbuild.analysis.calibration import Calibration, DesignScore, Phases, SampleDesign
from tfbuild.report.calibration import (
    DESIGN_HEADER,
    PHASE_HEADER,
    calibration_markdown,
    calibration_rows,
    calibration_view,
)

BENCHES = ["gru-keras", "input-fed"]


def calibration() -> Calibration:
    """Two benchmarks; the suite design times 3 samples of 100 steps of 2 ms on gru-keras and
    5 of 200 steps of 0.5 ms on input-fed. A second design doubles the iterations."""
    phases = Phases(
        start_exit_s=0.5,
        import_s=2.25,
        smoke_s=0.125,
        build_s={"gru-keras": 0.3, "input-fed": 0.05},
        trace_s={"gru-keras": 1.2, "input-fed": 0.2},
        warmup_s={"gru-keras": 0.4, "input-fed": 0.1},
        step_s={"gru-keras": 0.002, "input-fed": 0.0005},
        within_sd={"gru-keras": 0.012, "input-fed": 0.034},
    )
    suite = SampleDesign("suite v4", {"gru-keras": 100, "input-fed": 200},
                         {"gru-keras": 3, "input-fed": 5})  # fmt: skip
    doubled = SampleDesign("2x iterations, 3 samples", {"gru-keras": 200, "input-fed": 400},
                           {"gru-keras": 3, "input-fed": 3})  # fmt: skip
    scores = [
        DesignScore(suite, 1.1, 5.236, 0.0312, {"gru-keras": 0.041, "input-fed": 0.0276}, 1.0),
        DesignScore(doubled, 1.8, 5.934, 0.02456, {"gru-keras": 0.03, "input-fed": 0.02}, 1.4219),
    ]
    return Calibration(["base:default", "fast:default"], 20, 10, BENCHES, phases, scores)


def test_the_phase_rows_give_each_benchmarks_seconds_from_the_suite_design() -> None:
    """gru-keras: 3 x 100 x 2 ms = 0.60 s timed, 0.3 + 1.2 + 0.4 + 0.6 = 2.50 in all; input-fed:
    5 x 200 x 0.5 ms = 0.50 timed, 0.85 in all; the process row is the suite's score."""
    rows, _ = calibration_rows(calibration())
    assert rows == [
        ["process start and exit", "", "", "", "", "0.50", "", ""],
        ["import numpy, tensorflow", "", "", "", "", "2.25", "", ""],
        ["smoke check", "", "", "", "", "0.12", "", ""],
        ["gru-keras", "0.30", "1.20", "0.40", "0.60 (3 x 100 x 2.0 ms)", "2.50", "1.2%", "4.1%"],
        ["input-fed", "0.05", "0.20", "0.10", "0.50 (5 x 200 x 0.5 ms)", "0.85", "3.4%", "2.8%"],
        ["process", "", "", "", "1.10", "5.24", "", "3.1%"],
    ]
    assert all(len(row) == len(PHASE_HEADER) for row in rows)


def test_each_design_is_a_row_of_its_cost_noise_and_precision() -> None:
    _, designs = calibration_rows(calibration())
    assert designs == [
        ["suite v4", "1.10", "5.24", "3.12%", "1.00"],
        ["2x iterations, 3 samples", "1.80", "5.93", "2.46%", "1.42"],
    ]
    assert all(len(row) == len(DESIGN_HEADER) for row in designs)


def test_markdown_leads_with_what_was_measured_then_both_tables() -> None:
    lines = calibration_markdown(calibration()).splitlines()
    assert lines[0].startswith("20 processes (base:default, fast:default; 10 rounds). sd sample:")
    assert lines[0].endswith("relative to the suite's design.")
    assert lines[2] == (
        "|  | build s | trace s | warm-up s | timed s | total s | sd sample | sd process |"
    )
    assert lines[3] == "|---|---|---|---|---|---|---|---|"
    assert (
        "| gru-keras | 0.30 | 1.20 | 0.40 | 0.60 (3 x 100 x 2.0 ms) | 2.50 | 1.2% | 4.1% |" in lines
    )
    at = lines.index("| design | timed s | s per process | sd per process | precision / s |")
    assert lines[at + 2 : at + 4] == [
        "| suite v4 | 1.10 | 5.24 | 3.12% | 1.00 |",
        "| 2x iterations, 3 samples | 1.80 | 5.93 | 2.46% | 1.42 |",
    ]


def test_the_terminal_view_names_the_file_and_shows_both_tables() -> None:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(calibration_view(calibration(), "runs/calibration.json"))
    text = console.export_text()
    lines = [" ".join(line.split()) for line in text.splitlines()]
    assert lines[0] == "calibration: runs/calibration.json"
    assert lines[1].startswith("20 processes (base:default, fast:default; 10 rounds).")
    assert "Where one benchmark process spends its time (mean seconds, suite design)" in lines
    assert "Designs replayed on the same processes" in lines
    rows = [line.strip("│ ").split(" │ ") for line in text.splitlines() if "│" in line]
    cells = [[c.strip() for c in row] for row in rows]
    assert ["input-fed", "0.05", "0.20", "0.10", "0.50 (5 x 200 x 0.5 ms)", "0.85", "3.4%",
            "2.8%"] in cells  # fmt: skip
    assert ["2x iterations, 3 samples", "1.80", "5.93", "2.46%", "1.42"] in cells
