"""Per-config, per-benchmark figures read out of a results document (no statistics tests:
those are `tfbuild compare`'s). A round's value is the median of its process's samples."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from tfbuild import stats
from tfbuild.results.model import Results


@dataclass(frozen=True)
class Cell:
    median: float
    rounds: int
    cv: float


@dataclass(frozen=True)
class Summary:
    benchmarks: list[str]
    units: dict[str, str]
    configs: list[str]
    cells: dict[tuple[str, str], Cell]
    """(config, benchmark) -> median throughput over rounds, rounds counted, CV across rounds."""
    aa_ratio: dict[str, float]
    """benchmark -> median throughput of the A/A copy / median of the baseline."""
    phases: dict[str, float]
    """Mean seconds per benchmark process: where its time went (suite v2 and later)."""
    stop: str | None
    """Why the session stopped (its design's rule), when it did."""
    peak: dict[str, float]
    """config -> theoretical FP32 peak (GFLOP/s) for the cores it may use."""
    peak_note: str | None
    """How the baseline config's peak was worked out (cores, clock and its source, lanes)."""
    failures: list[tuple[str, str]]
    elapsed_s: float | None
    """Wall time of the whole session, from its start to its last write."""
    runs: int


def round_values(results: Results) -> dict[tuple[str, str], list[float]]:
    """(config, benchmark) -> one value per finished round: the median sample throughput."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for run in results.runs:
        for bench, entry in run.benchmarks.items():
            if entry.samples:
                values[(run.config, bench)].append(
                    stats.median([s.throughput for s in entry.samples])
                )
    return values


def summarise(results: Results) -> Summary:
    values = round_values(results)
    cells = {key: Cell(stats.median(v), len(v), stats.cv(v)) for key, v in values.items() if v}
    benchmarks = list(results.suite.benchmarks)
    base = results.baseline.config
    aa = results.baseline.aa_config
    aa_ratio = {
        b: cells[(aa, b)].median / cells[(base, b)].median
        for b in benchmarks
        if aa and (aa, b) in cells and (base, b) in cells
    }
    failures = [  # a variant's failure, or (a form the model cannot take) its configs'
        (f.variant if f.stage != "form" else ", ".join(f.configs), f"{f.stage}: {f.reason}")
        for f in results.failures
    ]
    failures += [
        (run.config, f"round {run.round + 1}: {run.failure.reason}")
        for run in results.runs
        if run.failure
    ]
    base_peak = next((c for c in results.configs if c.key == base and c.peak), None)
    return Summary(
        benchmarks=benchmarks,
        units=dict(results.suite.units),
        configs=[c.key for c in results.configs if any(k[0] == c.key for k in cells)],
        cells=cells,
        aa_ratio=aa_ratio,
        phases=phases(results),
        stop=results.session.stop.message if results.session.stop else None,
        peak={c.key: c.peak.gflops for c in results.configs if c.peak},
        peak_note=(
            f"pk = share of the theoretical FP32 peak, for {base_peak.key}: "
            f"{base_peak.peak.gflops:.0f} GFLOP/s = {base_peak.peak.assumptions}"
            if base_peak and base_peak.peak
            else None
        ),
        failures=failures,
        elapsed_s=_elapsed(results),
        runs=len(results.runs),
    )


def phases(results: Results) -> dict[str, float]:
    """Mean seconds per finished process: start and exit, import, smoke check, building,
    tracing (first call), warm-up, timed samples; empty for results that lack them."""
    runs = [r for r in results.runs if r.ok and r.payload_s]
    if not runs:
        return {}
    totals: dict[str, float] = defaultdict(float)
    for run in runs:
        totals["start and exit"] += run.wall_s - (run.payload_s or 0.0)
        totals["import"] += run.import_s or 0.0
        totals["smoke check"] += run.smoke_s or 0.0
        for entry in run.benchmarks.values():
            totals["build"] += entry.build_s or 0.0
            totals["trace"] += entry.trace_s or 0.0
            totals["warm-up"] += entry.warmup_s or 0.0
            totals["timed"] += sum(x.wall_s for x in entry.samples)
        totals["process"] += run.wall_s
    return {k: v / len(runs) for k, v in totals.items()}


def _elapsed(results: Results) -> float | None:
    session = results.session
    end = session.finished_at or session.updated_at
    if not end or not session.started_at:
        return None
    start = dt.datetime.fromisoformat(session.started_at)
    return (dt.datetime.fromisoformat(end) - start).total_seconds()
