"""The tables `tfbuild bench` and `tfbuild plan` print."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from support.cli import run_tfbuild
from support.env import REPO
from support.synthetic import session

from tfbuild.bench.summary import summarise
from tfbuild.report.terminal import print_bench


def test_a_narrow_bench_table_keeps_its_title_on_one_line() -> None:
    """One config and one benchmark make a table narrower than its title; piped output (120
    columns) shows the title whole, above the table, and the compare command whole however
    long the results path."""
    path = "/srv/benchmarks/" + "nightly/" * 12 + "20261125T110026Z-vm-fcd4.json"
    results = session({"tf:default": 1.0}, rounds=3, benchmarks=["matmul-pinned"], aa=False)
    console = Console(width=120, record=True, file=None, highlight=False)
    with console.capture() as captured:
        print_bench(console, summarise(results), path)
    lines = captured.get().splitlines()
    assert lines[0].strip() == "Median throughput per config (one value per round)", lines
    assert "tf:default" in captured.get()
    assert lines[-1] == f"Rank these with `tfbuild compare {path}`"


def test_a_share_of_peak_above_100_percent_is_marked_and_explained() -> None:
    """A matmul faster than the peak worked out from the base clock (the cores turbo above it):
    the share is starred and a line says the peak is a lower bound there."""
    results = session({"tf:default": 1.0}, rounds=3, benchmarks=["matmul-pinned"], aa=False)
    summary = summarise(results)
    median = {c: summary.cells[(c, "matmul-pinned")].median for c in summary.configs}
    base, other = summary.configs
    console = Console(width=200, record=True, file=None, highlight=False)
    for shares, starred in (({base: 1.19, other: 0.5}, True), ({base: 0.9, other: 0.5}, False)):
        peak = {c: median[c] / shares[c] for c in summary.configs}
        with console.capture() as captured:
            print_bench(console, replace(summary, peak=peak), "r.json")
        text = captured.get()
        assert f"({shares[base]:.0%} pk{'*' if starred else ''})" in text
        assert "(50% pk)" in text
        assert ("* above 100 % of peak" in text) == starred


def test_the_plan_says_how_its_configs_are_made_forms_included(tmp_path: Path) -> None:
    """`tfbuild matrix`: variants x tunings x model forms when the matrix has forms, `of`
    instead of `=` when the selection took some configs of that product and not the rest."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text((REPO / "matrix.yaml").read_text() + "forms: [as-given, litert]\n")

    def summary(*args: str) -> str:
        proc = run_tfbuild("matrix", "--matrix", str(matrix), *args, env={"COLUMNS": "200"})
        assert proc.returncode == 0, proc.stderr
        (line,) = [line for line in proc.stdout.splitlines() if re.match(r"\d+ configs ", line)]
        return line

    assert summary().startswith("48 configs = 6 variants x 4 tunings x 2 model forms (as-given, ")
    assert summary("--only", "stock:*", "--only", "mkl-avx2:default:litert").startswith(
        "9 configs of 2 variants x 4 tunings x 2 model forms (as-given, litert); "
    )
    assert summary("--only", "stock:*:as-given").startswith("4 configs = 1 variants x 4 tunings;")
