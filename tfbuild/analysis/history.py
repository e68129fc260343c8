"""Nights in a row: each night's throughput of every config and benchmark with its interval, per
machine class, and the nights where a config's TensorFlow or its build changed (the trend asv
draws across commits, here across nights of the nightly workflow)."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from tfbuild.analysis.sessions import Session
from tfbuild.results.model import VariantRecord

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Figure:
    """A config's throughput on a benchmark in one night: the median of its processes' medians,
    and a 95% distribution-free interval of that median (order statistics of the processes)."""

    value: float
    low: float
    high: float
    runs: int


@dataclass(frozen=True)
class Night:
    session: str
    started_at: str
    host_key: str
    cpu: str
    wheels: dict[str, str]
    """variant -> the sha256 of the wheel measured ("?" when not recorded)."""
    tensorflow: dict[str, str]
    """variant -> the TensorFlow release it is."""
    figures: dict[tuple[str, str], Figure]
    """(config, benchmark) -> the night's figure."""
    units: dict[str, str]


def median_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """The median and a 95% interval for it from order statistics (binomial, normal
    approximation): ranks n/2 -+ 1.96 sqrt(n)/2, clamped to the sample. With 5 or fewer values
    it is their range."""
    ordered = sorted(values)
    n = len(ordered)
    half = Z95 * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return statistics.median(ordered), ordered[lo], ordered[hi]


def _tensorflow(record: VariantRecord) -> str:
    smoke = record.smoke or {}
    if smoke.get("tensorflow"):
        return str(smoke["tensorflow"])
    requirement = str(record.definition.get("requirement") or "")
    return requirement.partition("==")[2] or "?"


def night_of(session: Session) -> Night:
    results = session.results
    per_run: dict[tuple[str, str], list[float]] = {}
    for run in results.runs:
        if run.status != "ok":
            continue
        for bench, result in run.benchmarks.items():
            speeds = [s.throughput for s in result.samples if s.throughput and s.throughput > 0]
            if speeds:
                per_run.setdefault((run.config, bench), []).append(statistics.median(speeds))
    figures = {}
    for key, values in per_run.items():
        value, low, high = median_interval(values)
        figures[key] = Figure(value, low, high, len(values))
    variants = results.variants or {}
    wheels = {
        name: (record.artifact.sha256 if record.artifact else None) or "?"
        for name, record in variants.items()
    }
    return Night(
        session=results.id,
        started_at=results.session.started_at,
        host_key=session.host_key,
        cpu=results.host.cpu.model_name,
        wheels=wheels,
        tensorflow={name: _tensorflow(record) for name, record in variants.items()},
        figures=figures,
        units=dict(results.suite.units),
    )


def nights_by_class(sessions: Sequence[Session]) -> dict[str, list[Night]]:
    """Each machine class's nights, oldest first."""
    found: dict[str, list[Night]] = {}
    for session in sessions:
        night = night_of(session)
        found.setdefault(night.host_key, []).append(night)
    return {k: sorted(v, key=lambda n: (n.started_at, n.session)) for k, v in found.items()}


def changes(nights: Sequence[Night]) -> list[list[str]]:
    """For each night, what changed since the night before: a variant's TensorFlow release, or
    its wheel (a rebuild, a new prebuilt file), or a variant that came or went."""
    said: list[list[str]] = [[]]
    for before, now in itertools.pairwise(nights):
        lines = []
        for variant in sorted(set(before.wheels) | set(now.wheels)):
            if variant not in before.wheels:
                lines.append(f"{variant}: new")
            elif variant not in now.wheels:
                lines.append(f"{variant}: gone")
            elif before.tensorflow[variant] != now.tensorflow[variant]:
                lines.append(
                    f"{variant}: TensorFlow {before.tensorflow[variant]} -> "
                    f"{now.tensorflow[variant]}"
                )
            elif before.wheels[variant] != now.wheels[variant]:
                lines.append(f"{variant}: another wheel (sha256 {now.wheels[variant][:12]})")
        said.append(lines)
    return said


def series(nights: Sequence[Night]) -> tuple[list[str], list[str]]:
    """The configs and the benchmarks any of these nights measured, in first-seen order."""
    configs: dict[str, None] = {}
    benchmarks: dict[str, None] = {}
    for night in nights:
        for config, bench in night.figures:
            configs.setdefault(config)
            benchmarks.setdefault(bench)
    return list(configs), list(benchmarks)
