"""`tfbuild compare` in a terminal: the answer, then tables that read at 80 columns. Names,
hashes and intervals are never broken across lines (prose wraps, names do not); a column that
would be empty is left out; the configs out of the leading tier are one line per reason unless
all are asked for; the per-benchmark table puts benchmarks in rows, the baseline's and the
leader's throughput beside each config's ratio, and continues in another table when the ratios
do not fit the width."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from tfbuild.analysis.gate import Gate
from tfbuild.analysis.reported import HostReport
from tfbuild.report.comparison import (
    CONTRAST_HEADER,
    LOOK_COLUMNS,
    STYLE,
    answer_lines,
    bench_table,
    bench_title,
    choice_lines,
    contrast_rows,
    contrast_title,
    form_lines,
    header_lines,
    look_table,
    out_lines,
    ranking_columns,
    ranking_table_rows,
    rest_lines,
    shown_configs,
)
from tfbuild.report.gating import GATE_HEADER, gate_rows, gate_title

COLUMNS = 80
"""The width a report is laid out for when the terminal does not say."""

_NAMES = {"config", "benchmark"}
"""Columns that hold identifiers: never wrapped or cut."""

_PROSE = {"flags", "machine class", "what the write-up found"}
"""Columns of words: wrapped at spaces to fit."""


def _table(title: str | None = None) -> Table:
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
    )


def _grid(
    title: str | None,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    styles: dict[str, dict[str, str]] | None = None,
) -> Table:
    """A table whose identifier and number columns never wrap; prose columns do. `styles`
    colours a column's cells by their value."""
    table = _table(title)
    for i, column in enumerate(header):
        values = [row[i] for row in rows]
        prose = column in _PROSE or (
            column not in _NAMES and any(" " in v and len(v) > 24 for v in values)
        )
        numeric = bool(values) and all(_numeric(v) for v in values if v)
        table.add_column(
            column,
            justify="right" if numeric else "left",
            no_wrap=not prose,
            # a name is never cut; "ignore" would also undo right justification
            overflow="fold" if prose or numeric else "ignore",
            min_width=None if prose else max((len(v) for v in values), default=0),
        )
    styles = styles or {}
    for row in rows:
        table.add_row(
            *(
                Text(value, style=styles[column].get(value, "")) if column in styles else value
                for column, value in zip(header, row, strict=True)
            )
        )
    return table


def _numeric(value: str) -> bool:
    return bool(value) and (value[0].isdigit() or value[0] in "±<>#")


def _ranking(r: HostReport, everything: bool) -> Table:
    lead = "the leading tier and the baseline" if not everything else "every config"
    level = 1 - r.method.split["selection"]
    return _grid(
        f"Ranking: {lead} (geometric mean over the benchmarks vs the baseline; the leading "
        f"tier holds a fastest config with probability at least {level:.1%})",
        ranking_columns(r, everything),
        ranking_table_rows(r, everything),
        {"verdict": STYLE},
    )


def _per_benchmark(r: HostReport, everything: bool, width: int) -> list[Table]:
    """Benchmarks in rows; the ratio columns continue in another table (and more) when they
    do not fit the width beside the fixed ones."""
    header, rows, fixed = bench_table(r, shown_configs(r, everything))
    widths = [max(len(h), *(len(row[i]) for row in rows)) + 2 for i, h in enumerate(header)]
    chunks: list[list[int]] = [[]]
    room = width - sum(widths[:fixed])
    for i in range(fixed, len(header)):
        if chunks[-1] and widths[i] > room:
            chunks.append([])
            room = width - widths[0]
        chunks[-1].append(i)
        room -= widths[i]
    tables = []
    for n, chunk in enumerate(chunks):
        keep = [*range(fixed), *chunk] if n == 0 else [0, *chunk]
        tables.append(
            _grid(
                bench_title(r) if n == 0 else "continued",
                [header[i] for i in keep],
                [[row[i] for i in keep] for row in rows],
            )
        )
    return tables


def compare_view(
    reports: Sequence[HostReport],
    width: int | None = None,
    everything: bool = False,
    brief: bool = False,
) -> Group:
    """The report for a terminal `width` columns wide (80 when not known); `everything` lists
    every config in the tables instead of one line per reason for those out; `brief`: the
    answer, what was measured (the workload and its forms), the tables and what failed, as
    a person pastes it into a ticket."""
    width = width or COLUMNS
    parts: list[Table | Text] = [Text("\n".join(answer_lines(reports)), style="bold")]
    for r in reports:
        if brief:
            parts.extend(_brief(r, everything, width))
            continue
        parts.append(Text("\n".join(header_lines(r))))
        for warning in r.problems.warnings:
            parts.append(Text(f"warning: {warning}", style="yellow"))
        for problem in r.course.replay:
            parts.append(Text(f"replay: {problem}", style="red"))
        parts.append(_ranking(r, everything))
        if lines := out_lines(r, everything):
            parts.append(Text("\n".join(lines)))
        if lines := rest_lines(r):
            parts.append(Text("\n".join(lines)))
        parts.extend(_per_benchmark(r, everything, width))
        if r.course.looks:
            parts.append(_grid("Looks (at the scheduled rounds)", LOOK_COLUMNS, look_table(r)))
        if r.figures.contrasts:
            parts.append(_grid(contrast_title(r), CONTRAST_HEADER, contrast_rows(r)))
        for failure in r.problems.failures:
            parts.append(Text(f"failed {failure.who}: {failure.reason}", style="red"))
        parts.append(Text("Use this", style="bold underline"))
        # Never wrapped: the wheel, its hash and the commands must survive a copy and paste.
        parts.append(Text("\n".join(choice_lines(r)), no_wrap=True, overflow="ignore"))
    return Group(*parts)


def _brief(r: HostReport, everything: bool, width: int) -> list[Table | Text]:
    """What `compare --brief` shows of one machine's report."""
    said = [
        f"Host: {r.measured.host_key}",
        *([f"Workload: {r.measured.workload}"] if r.measured.workload else []),
    ]
    parts: list[Table | Text] = [Text("\n".join([*said, *form_lines(r)]))]
    parts.append(_ranking(r, everything))
    if lines := out_lines(r, everything):
        parts.append(Text("\n".join(lines)))
    parts.extend(_per_benchmark(r, everything, width))
    parts += [Text(f"failed {f.who}: {f.reason}", style="red") for f in r.problems.failures]
    parts.append(Text("(brief: the design, error control, looks and 'use this' are in the full "
                      "report, without --brief)"))  # fmt: skip
    return parts


def gate_view(verdict: Gate, fail_above: float) -> Group:
    """The gate's table, then what it compared (or why nothing), then what it left out; with
    no row, its title alone."""
    rows = gate_rows(verdict, "REGRESSION", "MISSING")
    table: Table | Text = _grid(
        gate_title(fail_above), GATE_HEADER, rows,
        {"": {"REGRESSION": "bold red", "MISSING": "bold red"}},
    ) if rows else Text(gate_title(fail_above), style="italic")  # fmt: skip
    said = Text(verdict.compared().capitalize(), style="bold" if verdict.changes else "bold red")
    notes = [Text(f"not compared: {note}", style="yellow") for note in verdict.notes]
    return Group(table, said, *notes)
