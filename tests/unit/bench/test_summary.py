"""The figures `tfbuild bench` prints about a session (medians, the A/A ratio, where a process
spends its time)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.synthetic import session

from tfbuild.bench.summary import summarise
from tfbuild.machine.peak import Peak
from tfbuild.results.model import (
    BaselineRecord,
    BenchmarkResult,
    Failure,
    Results,
    Run,
    RunFailure,
    Sample,
    Stop,
    config_entry,
)


def synthetic_results(ratio: float = 1.0) -> Results:
    """A session with known numbers, for the summary arithmetic."""

    def run(r: int, config: str, value: float) -> Run:
        samples = tuple(Sample(wall_s=1.0, cpu_s=1.0, throughput=value * f) for f in (0.9, 1, 1.1))
        entry = BenchmarkResult(samples=samples, build_s=0.1, trace_s=0.2, warmup_s=0.05)
        return Run(
            round=r,
            position=None,
            config=config,
            status="ok",
            started_at=None,
            wall_s=5.0,
            payload_s=4.5,
            import_s=2.0,
            smoke_s=0.1,
            benchmarks={"matmul-fed": entry},
        )

    runs = []
    for r in range(4):
        runs += [run(r, "a:t", 100.0), run(r, "a:t~aa", 100.0 * ratio), run(r, "b:t", 50.0)]
    killed = RunFailure(kind="signal", reason="killed by SIGKILL", signal=9)
    runs.append(replace(run(4, "b:t", 50.0), status="failed", benchmarks={}, failure=killed))
    peak = Peak(
        gflops=200.0,
        cores=2,
        ghz=3.13,
        lanes=16,
        fma_units=2,
        assumptions="2 cores x 3.13 GHz x 16 x 2",
    )
    return replace(
        session({}, rounds=0, benchmarks=("matmul-fed",)),
        session=replace(
            session({}).session,
            started_at="2026-01-01T00:00:00+00:00",
            finished_at="2026-01-01T00:10:00+00:00",
            stop=Stop(reason="fixed", round=4, message="the 4 rounds of a fixed design"),
        ),
        baseline=BaselineRecord(variant="a", tuning="t", config="a:t", aa_config="a:t~aa"),
        configs=tuple(config_entry(k, peak=peak) for k in ("a:t", "b:t", "a:t~aa")),
        failures=(Failure(variant="c", configs=(), stage="plan", reason="needs AVX512F"),),
        runs=tuple(runs),
    )


def test_summary_arithmetic() -> None:
    s = summarise(synthetic_results(ratio=1.02))
    assert s.cells[("a:t", "matmul-fed")].median == pytest.approx(100.0)
    assert s.cells[("b:t", "matmul-fed")].rounds == 4
    assert s.aa_ratio["matmul-fed"] == pytest.approx(1.02)
    assert s.phases == pytest.approx(
        {
            "start and exit": 0.5,
            "import": 2.0,
            "smoke check": 0.1,
            "build": 0.1,
            "trace": 0.2,
            "warm-up": 0.05,
            "timed": 3.0,
            "process": 5.0,
        }
    )
    assert s.elapsed_s == 600 and s.runs == 13
    # the variant that never ran, then the process that failed, by its round as people count
    assert s.failures == [("c", "plan: needs AVX512F"), ("b:t", "round 5: killed by SIGKILL")]
    assert s.peak_note == (
        "pk = share of the theoretical FP32 peak, for a:t: "
        "200 GFLOP/s = 2 cores x 3.13 GHz x 16 x 2"
    )
