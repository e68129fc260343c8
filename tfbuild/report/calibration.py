"""`tfbuild calibrate` as tables: where one benchmark process spends its time, and the designs
replayed on the same processes. Formats; never computes."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from tfbuild.analysis.calibration import Calibration

PHASE_HEADER = [
    "",
    "build s",
    "trace s",
    "warm-up s",
    "timed s",
    "total s",
    "sd sample",
    "sd process",
]


DESIGN_HEADER = ["design", "timed s", "s per process", "sd per process", "precision / s"]


def calibration_rows(c: Calibration) -> tuple[list[list[str]], list[list[str]]]:
    """The two tables of `tfbuild calibrate`: where a process spends its time (suite design),
    and each design's cost, noise and precision per wall-second."""
    p = c.phases
    score = c.scores[0]
    suite = score.design
    timed = {b: suite.iterations[b] * suite.samples[b] * p.step_s[b] for b in c.benchmarks}
    rows = [
        ["process start and exit", "", "", "", "", f"{p.start_exit_s:.2f}", "", ""],
        ["import numpy, tensorflow", "", "", "", "", f"{p.import_s:.2f}", "", ""],
        ["smoke check", "", "", "", "", f"{p.smoke_s:.2f}", "", ""],
    ]
    for b in c.benchmarks:
        total = p.build_s[b] + p.trace_s[b] + p.warmup_s[b] + timed[b]
        rows.append(
            [
                b,
                f"{p.build_s[b]:.2f}",
                f"{p.trace_s[b]:.2f}",
                f"{p.warmup_s[b]:.2f}",
                f"{timed[b]:.2f} ({suite.samples[b]} x {suite.iterations[b]} x "
                f"{p.step_s[b] * 1000:.1f} ms)",
                f"{total:.2f}",
                f"{p.within_sd[b]:.1%}",
                f"{score.per_benchmark_sd[b]:.1%}",
            ]
        )
    rows.append(
        [
            "process",
            "",
            "",
            "",
            f"{score.timed_s:.2f}",
            f"{score.process_s:.2f}",
            "",
            f"{score.sd:.1%}",
        ]
    )
    designs = [
        [
            s.design.label,
            f"{s.timed_s:.2f}",
            f"{s.process_s:.2f}",
            f"{s.sd:.2%}",
            f"{s.precision_per_s:.2f}",
        ]
        for s in c.scores
    ]
    return rows, designs


def _calibration_intro(c: Calibration) -> str:
    return (
        f"{c.processes} processes ({', '.join(c.configs)}; {c.rounds} rounds). sd sample: the "
        "spread of one timed sample within a process; sd process: the spread of a process's "
        "value (per benchmark) or overall level (mean log throughput over the benchmarks) from "
        "process to process, rounds and configs removed; precision / s: 1 / (sd^2 x seconds "
        "per process), relative to the suite's design."
    )


def calibration_view(c: Calibration, path: object) -> Group:
    rows, designs = calibration_rows(c)
    phases = Table(
        title="Where one benchmark process spends its time (mean seconds, suite design)",
        title_justify="left",
    )
    for column in PHASE_HEADER:
        phases.add_column(column, justify="left" if not column else "right")
    for row in rows:
        phases.add_row(*row)
    table = Table(title="Designs replayed on the same processes", title_justify="left")
    for column in DESIGN_HEADER:
        table.add_column(column, justify="left" if column == "design" else "right")
    for row in designs:
        table.add_row(*row)
    return Group(Text(f"calibration: {path}\n{_calibration_intro(c)}"), phases, table)


def calibration_markdown(c: Calibration) -> str:
    from tfbuild.report.comparison import md_table

    rows, designs = calibration_rows(c)
    lines = [_calibration_intro(c), "", *md_table(PHASE_HEADER, rows), ""]
    lines += [*md_table(DESIGN_HEADER, designs), ""]
    return "\n".join(lines)
