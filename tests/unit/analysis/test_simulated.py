"""Simulated sessions: a session started as `tfbuild bench` starts one, then run by the real
session loop with each process drawn from a truth set here. The draws reproduce with the same
seed and differ with another; with the process noise all but turned off each process lands on
what the truth says (the config's ratio, the A/A copy's bias, the trend over the session, the
shock a round shares, the warm-up of a config's first processes); with normal noise the overall
speed scatters as Truth.speed_sd says and the paired ratio comes back; forked processes come
from zygotes that each fork at most CHILDREN of one config's processes."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections import Counter, defaultdict

import numpy as np
import pytest

from tfbuild.analysis.simulated import (
    BASELINE,
    GAUSSIAN,
    PROCESS_S,
    Drawn,
    Noise,
    Truth,
    _shape,
    empty_session,
)
from tfbuild.config.suite import BENCHMARKS
from tfbuild.results.model import AA_SUFFIX, Design, Results
from tfbuild.runtime.forked import CHILDREN, LIVE

C1, C2 = "c01:default", "c02:default"
QUIET = 1e-9
"""A scale that leaves each process only the 0.2 % scatter of its three samples."""
SPREADS = {name: 0.05 for name in BENCHMARKS}


def drawn(truth: Truth, rounds: int, seed: int = 1, configs: int = 3) -> Results:
    start = empty_session(configs, Design(kind="fixed", rounds=rounds), seed, truth.processes)
    return Drawn(start, truth, random.Random(seed)).run()


def values(results: Results) -> list[tuple[int, str, list[float]]]:
    """Each process's round, config and value per benchmark."""
    return [
        (run.round, run.config, [run.benchmarks[b].value or math.nan for b in BENCHMARKS])
        for run in results.runs
    ]


def test_an_empty_session_is_the_baseline_and_its_configs_with_an_a_a_copy() -> None:
    design = Design(kind="sequential", first=3, horizon=30, resolve=0.05)
    start = empty_session(3, design, seed=42, processes="fresh")
    assert [c.key for c in start.configs] == [BASELINE, C1, C2, BASELINE + AA_SUFFIX]
    assert start.baseline.aa_config == BASELINE + AA_SUFFIX
    assert start.id == "scenario-42" and start.design == design and start.runs == ()
    assert start.suite.benchmarks == tuple(BENCHMARKS) and start.suite.processes == "fresh"
    assert {name: v.status for name, v in (start.variants or {}).items()} == {
        "base": "ready",
        "c01": "ready",
        "c02": "ready",
    }
    assert empty_session(2, design, seed=1).suite.processes == "forked"  # the default


def test_a_truth_names_each_configs_ratio_and_the_fastest() -> None:
    truth = Truth({C1: 1.2, C2: 0.9})
    assert (truth.effect(C1), truth.effect(C2), truth.effect(BASELINE)) == (1.2, 0.9, 1.0)
    assert truth.effect(BASELINE + AA_SUFFIX) == 1.0  # the copy is the baseline's build
    assert truth.best() == 1.2
    assert Truth({C1: 0.8}).best() == 1.0  # the baseline is the fastest


def test_the_speed_sd_adds_the_common_share_and_each_benchmarks_own() -> None:
    """Two benchmarks of spreads 10 % and 20 %, correlated at 0.5, every spread doubled: the
    speed's variance is (0.5 x 0.6^2 + 0.5 x (0.2^2 + 0.4^2)) / 2^2."""
    two = Noise(spreads={"a": 0.1, "b": 0.2}, shared=0.5)
    assert Truth({}, noise=two, scale=2.0).speed_sd(1.0) == pytest.approx(math.sqrt(0.28) / 2)
    assert Truth({}, noise=two).speed_sd(2.0) == pytest.approx(math.sqrt(0.28) / 2)
    # seven benchmarks of 5 %, correlated at 0.9: sqrt(0.9 x 0.35^2 + 0.1 x 7 x 0.05^2) / 7
    assert Truth({}, noise=GAUSSIAN).speed_sd(1.0) == pytest.approx(math.sqrt(0.112) / 7)


def test_a_shaped_draw_is_standardized_and_skewed_towards_slow() -> None:
    """A slow excursion of 3 sds in 5 % of the draws, standardized: mean 0 and sd 1, the tail on
    the slow side: the mixture's skew is -27 x 0.05 x 0.95 x 0.9 / (1 + 9 x 0.05 x 0.95)^1.5,
    about -0.68."""
    rng = random.Random(5)
    x = np.array([_shape(rng, "shaped", (0.05, 3.0)) for _ in range(40000)])
    assert abs(x.mean()) < 0.02 and x.std() == pytest.approx(1.0, abs=0.02)
    skew = float(((x - x.mean()) ** 3).mean() / x.std() ** 3)
    assert skew == pytest.approx(-0.677, abs=0.1)
    plain = np.array([_shape(rng, "shaped", (0.0, 0.0)) for _ in range(20000)])
    assert abs(float(((plain - plain.mean()) ** 3).mean())) < 0.06  # no excursion: symmetric
    t3 = np.array([_shape(rng, "t3", (0.0, 0.0)) for _ in range(40000)])
    assert np.median(np.abs(t3)) == pytest.approx(0.7649 / math.sqrt(3), abs=0.02)  # t3's / sqrt 3


def test_the_same_seed_draws_the_same_session_and_another_seed_another() -> None:
    truth = Truth({C1: 1.1})
    one, again, other = drawn(truth, 4, seed=7), drawn(truth, 4, seed=7), drawn(truth, 4, seed=8)
    assert values(one) == values(again)
    assert [r.zygote for r in one.runs] == [r.zygote for r in again.runs]
    assert len(one.runs) == len(other.runs) == 4 * 4
    mine = {(r, c): v for r, c, v in values(one)}
    theirs = {(r, c): v for r, c, v in values(other)}
    assert all(mine[key] != theirs[key] for key in mine)


def test_without_process_noise_each_process_is_the_truth_times_the_trend() -> None:
    """c01 1.5x, the A/A copy 1.1x (a biased machine), a trend of exp(0.3 r / 30): every value
    of round r is 100 x ratio x exp(0.01 r), within the samples' 0.2 % scatter."""
    noise = Noise(spreads=SPREADS)
    truth = Truth({C1: 1.5}, noise=noise, scale=QUIET, drift=0.3, aa_bias=1.1, processes="fresh")
    results = drawn(truth, 10)
    ratio = {BASELINE: 1.0, C1: 1.5, C2: 1.0, BASELINE + AA_SUFFIX: 1.1}
    for r, config, found in values(results):
        expected = 100.0 * ratio[config] * math.exp(0.3 * r / 30)
        assert found == pytest.approx([expected] * len(BENCHMARKS), rel=0.01), (r, config)
    assert results.session.elapsed_s == pytest.approx(40 * PROCESS_S)


def test_a_rounds_shock_is_shared_by_every_process_of_the_round() -> None:
    """A shock of sd 5 % a round: the baseline moves from round to round, c01 with it, 1.5x."""
    noise = Noise(spreads=SPREADS, round_sd=0.05)
    results = drawn(Truth({C1: 1.5}, noise=noise, scale=QUIET, processes="fresh"), 12)
    speed = {
        (r, c): statistics.fmean(math.log(v) for v in found) for r, c, found in values(results)
    }
    base = [speed[(r, BASELINE)] for r in range(12)]
    assert statistics.stdev(base) > 0.02
    assert [speed[(r, C1)] - speed[(r, BASELINE)] for r in range(12)] == pytest.approx(
        [math.log(1.5)] * 12, abs=0.005
    )


def test_a_configs_first_processes_are_slower_by_a_ramp_that_fades() -> None:
    """A ramp of 0.2 (times a draw in 0.5-1.5 per config): the first process 0.1-0.3 slower in
    log, the k-th by that times exp(-k); by the sixth it is gone."""
    noise = Noise(spreads=SPREADS, ramp=0.2)
    results = drawn(Truth({}, noise=noise, scale=QUIET, processes="fresh"), 8)
    by_config = defaultdict(list)
    for _, config, found in values(results):
        by_config[config].append(statistics.fmean(math.log(v / 100.0) for v in found))
    for config, speeds in by_config.items():
        assert -0.3 - 0.005 < speeds[0] < -0.1 + 0.005, config
        assert speeds[1] == pytest.approx(speeds[0] / math.e, abs=0.004), config
        assert speeds[0] < speeds[1] < speeds[2]
        assert speeds[6] == pytest.approx(0.0, abs=0.004)


def test_with_normal_noise_the_speed_scatters_as_the_truth_says() -> None:
    """200 rounds of normal noise (correlated at 0.2 across the benchmarks): the sd of each
    process's overall speed around its config's mean is Truth.speed_sd's (0.028)."""
    noise = Noise(spreads=SPREADS, shared=0.2)
    truth = Truth({}, noise=noise, processes="fresh")
    results = drawn(truth, 200, configs=2)
    speeds = defaultdict(list)
    for _, config, found in values(results):
        speeds[config].append(statistics.fmean(math.log(v) for v in found))
    residuals = np.concatenate([np.array(v) - np.mean(v) for v in speeds.values()])
    assert float(residuals.std(ddof=3)) == pytest.approx(truth.speed_sd(1.0), rel=0.12)


def test_the_paired_ratio_of_a_noisy_session_comes_back() -> None:
    """c01 1.2x under normal noise, 30 rounds: the mean paired log ratio is within 3 standard
    errors of log 1.2, and c02's (1.0x) of 0."""
    results = drawn(Truth({C1: 1.2}, noise=GAUSSIAN, processes="fresh"), 30)
    speed = {
        (r, c): statistics.fmean(math.log(v) for v in found) for r, c, found in values(results)
    }
    for config, ratio in ((C1, 1.2), (C2, 1.0)):
        d = np.array([speed[(r, config)] - speed[(r, BASELINE)] for r in range(30)])
        se = d.std(ddof=1) / math.sqrt(len(d))
        assert abs(d.mean() - math.log(ratio)) < 3 * se, config


def test_forked_processes_come_from_zygotes_of_their_own_config() -> None:
    """18 rounds: each config's processes from LIVE zygotes at a time, each forking CHILDREN
    (3) of them, never two in a row; a zygote never forks for another config."""
    results = drawn(Truth({C1: 1.1}), 18)
    zygotes: dict[str, list[str]] = defaultdict(list)
    for run in sorted(results.runs, key=lambda r: r.round):
        assert run.zygote is not None and run.zygote.startswith("z")
        zygotes[run.config].append(run.zygote)
    owners = {z: c for c, made in zygotes.items() for z in made}
    assert sum(len(set(made)) for made in zygotes.values()) == len(owners)  # none shared
    for made in zygotes.values():
        assert set(Counter(made).values()) == {CHILDREN}
        assert len(set(made[: LIVE * CHILDREN])) == LIVE  # a generation of LIVE zygotes
        assert all(a != b for a, b in itertools.pairwise(made))
    one = drawn(Truth({}, live=1), 6, configs=2)
    base = [r.zygote for r in sorted(one.runs, key=lambda r: r.round) if r.config == BASELINE]
    assert base[0] == base[1] == base[2] != base[3] == base[4] == base[5]  # one at a time
    assert all(r.zygote is None for r in drawn(Truth({}, processes="fresh"), 2).runs)
