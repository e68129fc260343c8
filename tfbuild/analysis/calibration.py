"""Which amount of timed work per benchmark buys the most precision per wall-second
(`tfbuild calibrate`).

A calibration session times every step of every benchmark on its own (tfbuild.bench.calibrate).
From the step times any choice of iterations per sample and samples per process can be replayed
on the same processes: its cost is the process's fixed time (start, import, building, tracing,
warm-up, exit) plus the timed steps, its noise the process-to-process spread of the overall speed
(the mean log throughput over the benchmarks), with rounds pairing the configs as in a bench
session. The suite's own choice (``payload.ITERATIONS``/``SAMPLES``) is one of the designs
compared."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tfbuild.bench.calibrate import DESIGN_SINCE, EARLIER, STEPS
from tfbuild.bench.payload import ITERATIONS, SAMPLES
from tfbuild.config.suite import SUITE_VERSION
from tfbuild.results.calibration import CalibrationResults


@dataclass(frozen=True)
class SampleDesign:
    """Iterations per sample and samples per process, per benchmark."""

    label: str
    iterations: Mapping[str, int]
    samples: Mapping[str, int]


def suite_design(benchmarks: Sequence[str]) -> SampleDesign:
    return SampleDesign(
        f"suite v{DESIGN_SINCE}-{SUITE_VERSION}"
        if DESIGN_SINCE < SUITE_VERSION
        else f"suite v{SUITE_VERSION}",
        {b: ITERATIONS[b] for b in benchmarks},
        {b: SAMPLES[b] for b in benchmarks},
    )


def candidate_designs(benchmarks: Sequence[str]) -> list[SampleDesign]:
    """The suite's design, the earlier suites', and uniform scalings of the suite's around it."""
    suite = suite_design(benchmarks)
    designs = [suite]
    for version in sorted(EARLIER, reverse=True):
        iterations, samples = EARLIER[version]
        designs.append(SampleDesign(f"suite v{version}", {b: iterations[b] for b in benchmarks},
                              {b: samples for b in benchmarks}))  # fmt: skip
    for factor in (0.5, 1, 2, 4):
        for samples in (1, 3, 5):
            iterations = {b: max(1, round(suite.iterations[b] * factor)) for b in benchmarks}
            per_process = {b: samples for b in benchmarks}
            if any((d.iterations, d.samples) == (iterations, per_process) for d in designs):
                continue  # the suite's own, or an earlier suite's, under its name
            if all(iterations[b] * samples <= STEPS[b] for b in benchmarks):
                designs.append(
                    SampleDesign(
                        f"{factor:g}x iterations, {samples} samples", iterations, per_process
                    )
                )
    return designs


@dataclass(frozen=True)
class Phases:
    """Mean seconds per process: what is not timed, and what is."""

    start_exit_s: float
    """Interpreter start and exit, payload file I/O: the runner's wall time minus the payload's."""
    import_s: float
    smoke_s: float
    build_s: dict[str, float]
    trace_s: dict[str, float]
    """The first call of each benchmark: tf.function tracing and graph optimisation."""
    warmup_s: dict[str, float]
    step_s: dict[str, float]
    """Mean time of one timed iteration."""
    within_sd: dict[str, float]
    """Spread of one sample (the suite's iterations) within a process, log scale."""


@dataclass(frozen=True)
class DesignScore:
    design: SampleDesign
    timed_s: float
    process_s: float
    sd: float
    """Process-to-process sd of the overall speed (log scale), rounds removed."""
    per_benchmark_sd: dict[str, float]
    precision_per_s: float
    """1 / (sd^2 x process seconds), relative to the suite's design (1.0)."""


@dataclass(frozen=True)
class Calibration:
    configs: list[str]
    processes: int
    rounds: int
    benchmarks: list[str]
    phases: Phases
    scores: list[DesignScore]


def _value(steps: Sequence[float], work: float, iterations: int, samples: int) -> float:
    """A process's value for one benchmark under a design: the median log throughput of its
    first `samples` samples of `iterations` steps."""
    logs = []
    for k in range(samples):
        chunk = steps[k * iterations : (k + 1) * iterations]
        logs.append(math.log(work * iterations / sum(chunk)))
    return statistics.median(logs)


def _residual_sd(table: Mapping[tuple[str, int], float]) -> float:
    """Pooled sd of a config x round table after removing config and round means (two-way
    residuals); with one config, the plain sd over rounds."""
    configs = sorted({c for c, _ in table})
    rounds = sorted({r for _, r in table if all((c, r) in table for c in configs)})
    if len(rounds) < 2:
        return math.nan
    if len(configs) == 1:
        return statistics.stdev(table[(configs[0], r)] for r in rounds)
    grand = statistics.fmean(table[(c, r)] for c in configs for r in rounds)
    col = {c: statistics.fmean(table[(c, r)] for r in rounds) for c in configs}
    row = {r: statistics.fmean(table[(c, r)] for c in configs) for r in rounds}
    ss = sum((table[(c, r)] - col[c] - row[r] + grand) ** 2 for c in configs for r in rounds)
    return math.sqrt(ss / ((len(rounds) - 1) * (len(configs) - 1)))


def analyse(calibration: CalibrationResults) -> Calibration:
    """Where the processes spent their time, and every candidate design replayed on them."""
    runs = [r for r in calibration.runs if r.ok]
    benchmarks = list(calibration.benchmarks)
    mean = statistics.fmean

    def per_bench(key: str) -> dict[str, float]:
        return {b: mean(getattr(r.benchmarks[b], key) for r in runs) for b in benchmarks}

    step_s = {b: mean(mean(r.benchmarks[b].steps_s) for r in runs) for b in benchmarks}
    suite = suite_design(benchmarks)
    within = {}
    for b in benchmarks:
        n = suite.iterations[b]
        spreads = []
        for r in runs:
            steps, work = r.benchmarks[b].steps_s, r.benchmarks[b].per_step
            logs = [
                math.log(work * n / sum(steps[k : k + n])) for k in range(0, len(steps) - n + 1, n)
            ]
            spreads.append(statistics.stdev(logs))
        within[b] = mean(spreads)
    phases = Phases(
        start_exit_s=mean(r.wall_s - (r.payload_s or 0.0) for r in runs),
        import_s=mean(r.import_s or 0.0 for r in runs),
        smoke_s=mean(r.smoke_s or 0.0 for r in runs),
        build_s=per_bench("build_s"),
        trace_s=per_bench("trace_s"),
        warmup_s=per_bench("warmup_s"),
        step_s=step_s,
        within_sd=within,
    )
    fixed = (
        phases.start_exit_s
        + phases.import_s
        + phases.smoke_s
        + sum(phases.build_s[b] + phases.trace_s[b] + phases.warmup_s[b] for b in benchmarks)
    )
    scores = []
    for design in candidate_designs(benchmarks):
        speeds: dict[tuple[str, int], float] = {}
        values: dict[str, dict[tuple[str, int], float]] = defaultdict(dict)
        for r in runs:
            key = (r.config, r.round)
            vals = []
            for b in benchmarks:
                entry = r.benchmarks[b]
                v = _value(entry.steps_s, entry.per_step, design.iterations[b], design.samples[b])
                values[b][key] = v
                vals.append(v)
            speeds[key] = mean(vals)
        timed = sum(design.iterations[b] * design.samples[b] * step_s[b] for b in benchmarks)
        sd = _residual_sd(speeds)
        scores.append(
            DesignScore(
                design=design,
                timed_s=timed,
                process_s=fixed + timed,
                sd=sd,
                per_benchmark_sd={b: _residual_sd(values[b]) for b in benchmarks},
                precision_per_s=1.0 / (sd * sd * (fixed + timed)),
            )
        )
    reference = scores[0].precision_per_s
    scores = [
        DesignScore(**{**s.__dict__, "precision_per_s": s.precision_per_s / reference})
        for s in scores
    ]
    return Calibration(
        configs=sorted({r.config for r in runs}),
        processes=len(runs),
        rounds=len({r.round for r in runs}),
        benchmarks=benchmarks,
        phases=phases,
        scores=scores,
    )
