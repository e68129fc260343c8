"""Per-config, per-benchmark figures read out of a results document (no statistics tests:
those are `tfbuild compare`'s). A round's value is the median of its process's samples."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from tfbuild import stats


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


def round_values(document: dict[str, Any]) -> dict[tuple[str, str], list[float]]:
    """(config, benchmark) -> one value per finished round: the median sample throughput."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for run in document["runs"]:
        for bench, entry in run["benchmarks"].items():
            samples = entry.get("samples") or []
            if samples:
                values[(run["config"], bench)].append(
                    stats.median([s["throughput"] for s in samples])
                )
    return values


def summarise(document: dict[str, Any]) -> Summary:
    values = round_values(document)
    cells = {key: Cell(stats.median(v), len(v), stats.cv(v)) for key, v in values.items() if v}
    benchmarks = list(document["suite"]["benchmarks"])
    base = document["baseline"]["config"]
    aa = document["baseline"].get("aa_config")
    aa_ratio = {
        b: cells[(aa, b)].median / cells[(base, b)].median
        for b in benchmarks
        if aa and (aa, b) in cells and (base, b) in cells
    }
    failures = [(f["variant"], f"{f['stage']}: {f['reason']}") for f in document["failures"]]
    failures += [
        (run["config"], f"round {run['round'] + 1}: {run['failure']['reason']}")
        for run in document["runs"]
        if run["failure"]
    ]
    return Summary(
        benchmarks=benchmarks,
        units=dict(document["suite"]["units"]),
        configs=[c["key"] for c in document["configs"] if any(k[0] == c["key"] for k in cells)],
        cells=cells,
        aa_ratio=aa_ratio,
        phases=phases(document),
        stop=(document["session"].get("stop") or {}).get("message"),
        peak={c["key"]: c["peak"]["gflops"] for c in document["configs"] if c.get("peak")},
        peak_note=next(
            (
                f"pk = share of the theoretical FP32 peak, for {c['key']}: "
                f"{c['peak']['gflops']:.0f} GFLOP/s = {c['peak']['assumptions']}"
                for c in document["configs"]
                if c["key"] == base and c.get("peak")
            ),
            None,
        ),
        failures=failures,
        elapsed_s=_elapsed(document["session"]),
        runs=len(document["runs"]),
    )


def phases(document: dict[str, Any]) -> dict[str, float]:
    """Mean seconds per finished process: start and exit, import, smoke check, building,
    tracing (first call), warm-up, timed samples; empty for results that lack them."""
    runs = [r for r in document["runs"] if r["status"] == "ok" and r.get("payload_s")]
    if not runs:
        return {}
    totals: dict[str, float] = defaultdict(float)
    for run in runs:
        totals["start and exit"] += run["wall_s"] - run["payload_s"]
        totals["import"] += run.get("import_s") or 0.0
        totals["smoke check"] += run.get("smoke_s") or 0.0
        for entry in run["benchmarks"].values():
            totals["build"] += entry.get("build_s") or 0.0
            totals["trace"] += entry.get("trace_s") or 0.0
            totals["warm-up"] += entry.get("warmup_s") or 0.0
            totals["timed"] += sum(x["wall_s"] for x in entry.get("samples") or [])
        totals["process"] += run["wall_s"]
    return {k: v / len(runs) for k, v in totals.items()}


def _elapsed(session: dict[str, Any]) -> float | None:
    end = session.get("finished_at") or session.get("updated_at")
    if not end or not session.get("started_at"):
        return None
    start = dt.datetime.fromisoformat(session["started_at"])
    return (dt.datetime.fromisoformat(end) - start).total_seconds()
