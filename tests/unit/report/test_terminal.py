"""The tables `tfbuild bench` and `tfbuild plan` print."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console
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
