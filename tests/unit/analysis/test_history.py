"""Nights in a row, from sessions built here: a night's figure of a config on a benchmark is the
median of its processes' medians (failed processes and samples of no throughput left out) with
an order-statistics interval; nights are grouped by machine class, oldest first; what changed
from one night to the next is said per variant (new, gone, another TensorFlow, another wheel);
and the configs and benchmarks of a run of nights are listed as first seen."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom
from support.synthetic import BASELINE, session

from tfbuild.analysis.history import (
    Figure,
    Night,
    changes,
    median_interval,
    night_of,
    nights_by_class,
    series,
)
from tfbuild.analysis.sessions import Session
from tfbuild.results.model import Results, Sample, VariantRecord

FAST = "fast:default"


def test_with_five_values_or_fewer_the_interval_is_their_range() -> None:
    assert median_interval([5.0, 1.0, 4.0, 2.0, 3.0]) == (3.0, 1.0, 5.0)
    assert median_interval([2.0, 9.0]) == (5.5, 2.0, 9.0)
    assert median_interval([7.0]) == (7.0, 7.0, 7.0)


def test_with_twenty_values_the_interval_is_the_6th_to_the_15th() -> None:
    """Ranks 10 -+ 1.96 sqrt(20) / 2 = 10 -+ 4.38: the 6th and the 15th of the ordered values,
    which hold the median between them in 95.9 % of samples (binomial)."""
    values = [float(v) for v in range(1, 21)]
    random.Random(3).shuffle(values)
    assert median_interval(values) == (10.5, 6.0, 15.0)
    covered = binom.cdf(14, 20, 0.5) - binom.cdf(5, 20, 0.5)  # 6 to 14 values below the median
    assert covered == pytest.approx(0.9586, abs=1e-4)


def night_session() -> Results:
    """Five rounds of the baseline and fast; the baseline's process of round 2 failed (its
    samples, had they counted, a thousand times faster), one of fast's samples in round 0
    measured nothing; fast's TensorFlow from its smoke test, and a variant that failed before
    it had a wheel."""
    results = session({FAST: 1.2}, rounds=5, aa=False, session_id="night-1")
    runs = []
    for run in results.runs:
        changed = run
        if run.config == BASELINE and run.round == 2:
            benches = {
                b: replace(e, samples=tuple(replace(s, throughput=1e6) for s in e.samples))
                for b, e in run.benchmarks.items()
            }
            changed = replace(run, status="failed", benchmarks=benches)
        if run.config == FAST and run.round == 0:
            entry = run.benchmarks["gru-keras"]
            dead = (Sample(wall_s=0.3, cpu_s=0.5, throughput=0.0), *entry.samples[1:])
            benches = {**run.benchmarks, "gru-keras": replace(entry, samples=dead)}
            changed = replace(run, benchmarks=benches)
        runs.append(changed)
    variants = dict(results.variants or {})
    variants["fast"] = replace(variants["fast"], smoke={"tensorflow": "2.22.0rc1"})
    variants["broken"] = VariantRecord(definition={"name": "broken"}, status="failed")
    return replace(results, runs=tuple(runs), variants=variants)


def test_a_nights_figure_is_the_median_of_its_processes_medians() -> None:
    results = night_session()
    night = night_of(Session(Path("n.json"), results))
    for config, bench in [(BASELINE, "gru-keras"), (FAST, "gru-keras"), (FAST, "input-fed")]:
        medians = [
            float(
                np.median([s.throughput for s in run.benchmarks[bench].samples if s.throughput > 0])
            )
            for run in results.runs
            if run.config == config and run.ok
        ]
        figure = night.figures[(config, bench)]
        assert figure.value == pytest.approx(float(np.median(medians)))
        assert (figure.low, figure.high) == (min(medians), max(medians))  # 5 or fewer
    assert night.figures[(BASELINE, "gru-keras")].runs == 4  # the failed process left out
    assert night.figures[(FAST, "gru-keras")].runs == 5
    assert night.figures[(BASELINE, "gru-keras")].high < 2000  # none of the failed 1e6


def test_a_night_says_which_wheel_and_tensorflow_each_variant_was() -> None:
    night = night_of(Session(Path("n.json"), night_session()))
    assert (night.session, night.started_at) == ("night-1", "2026-01-01T00:00:00+00:00")
    assert night.cpu == "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz"
    assert night.tensorflow == {"base": "2.21.0", "fast": "2.22.0rc1", "broken": "?"}
    assert night.wheels["broken"] == "?"
    assert len(night.wheels["base"]) == 64 and night.wheels["base"] != night.wheels["fast"]
    assert night.units == {"gru-keras": "examples/s", "matmul-pinned": "GFLOP/s",
                           "input-fed": "steps/s"}  # fmt: skip


def dated(day: int, seed: int, cpuinfo: str = "haswell-xeon-e5-2680v3.cpuinfo") -> Session:
    results = session({FAST: 1.1}, rounds=2, seed=seed, cpuinfo=cpuinfo, session_id=f"s{seed}")
    started = f"2026-01-0{day}T03:00:00+00:00"
    return Session(Path(f"s{seed}.json"), replace(results, session=replace(results.session,
                   started_at=started)))  # fmt: skip


def test_nights_are_grouped_by_machine_class_oldest_first() -> None:
    """Given newest first, a Zen 4 night between them; two nights started at the same time go
    by session id."""
    sessions = [dated(3, 1), dated(2, 2, "zen4-epyc-9654.cpuinfo"), dated(1, 3), dated(3, 0)]
    found = nights_by_class(sessions)
    assert len(found) == 2
    haswell = next(v for k, v in found.items() if k.startswith("Intel(R) Xeon(R) CPU E5-2680"))
    epyc = next(v for k, v in found.items() if k.startswith("AMD EPYC 9654"))
    assert [n.session for n in haswell] == ["s3", "s0", "s1"]
    assert [n.session for n in epyc] == ["s2"]


def night(name: str, wheels: dict[str, str], tensorflow: dict[str, str],
          keys: Sequence[tuple[str, str]] = ()) -> Night:  # fmt: skip
    figures = {key: Figure(1.0, 0.9, 1.1, 5) for key in keys}
    return Night(name, "2026-01-01", "host", "cpu", wheels, tensorflow, figures, {})


def test_what_changed_is_said_per_variant_from_the_night_before() -> None:
    first = night("1", {"base": "a" * 64, "mkl": "b" * 64, "old": "c" * 64},
                  {"base": "2.21.0", "mkl": "2.21.0", "old": "2.20.0"})  # fmt: skip
    second = night("2", {"base": "a" * 64, "mkl": "0123456789abcdef" * 4, "new": "d" * 64},
                   {"base": "2.21.0", "mkl": "2.21.0", "new": "2.21.0"})  # fmt: skip
    third = night("3", {"base": "e" * 64, "mkl": "0123456789abcdef" * 4, "new": "d" * 64},
                  {"base": "2.22.0", "mkl": "2.21.0", "new": "2.21.0"})  # fmt: skip
    assert changes([first, second, third]) == [
        [],
        ["mkl: another wheel (sha256 0123456789ab)", "new: new", "old: gone"],
        ["base: TensorFlow 2.21.0 -> 2.22.0"],  # a new release, not said twice as a new wheel
    ]
    assert changes([first]) == [[]]


def test_the_series_lists_configs_and_benchmarks_as_first_seen() -> None:
    one = night("1", {}, {}, [("b:x", "gru"), ("a:x", "gru"), ("b:x", "input")])
    two = night("2", {}, {}, [("c:x", "matmul"), ("a:x", "input")])
    assert series([one, two]) == (["b:x", "a:x", "c:x"], ["gru", "input", "matmul"])
    assert series([]) == ([], [])
