"""The decision layer as a whole, on sessions replayed from real recorded runs through the
session's own rounds (tests/support/replay.py): error control under the null with and without
adaptive stopping, power at the rounds the planner predicts, replay of looks."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

import pytest
from support.replay import SEQUENTIAL, false_claims, fixed, pool, replay_session, report

from tfbuild import stats
from tfbuild.analysis.estimates import MIN_MARGIN, OVERALL, SPLIT
from tfbuild.results.model import Run

SESSIONS = 200


@pytest.mark.slow
@pytest.mark.parametrize("configs", [4, 8, 16])
@pytest.mark.parametrize("design", ["fixed", "sequential"])
def test_no_false_claims_under_the_null(configs: int, design: str) -> None:
    """Every config replays processes of the same real build: in at most 5 % of 200 sessions
    does the report claim anything faster or slower (verdicts overall and per benchmark and
    the A/A check), with a fixed 10-round design and with adaptive stopping (the default
    matrix's looks from round 3)."""
    runs = pool()
    chosen = fixed(10) if design == "fixed" else SEQUENTIAL
    wrong = 0
    rounds = []
    for seed in range(SESSIONS):
        doc = replay_session(configs, chosen, seed, runs=runs)
        rounds.append(len(doc.order or ()))
        r = report(doc)
        assert not r.replay, r.replay
        wrong += bool(false_claims(r))
    assert wrong <= 0.05 * SESSIONS, (wrong, statistics.mean(rounds))


@pytest.mark.slow
@pytest.mark.parametrize("design", ["fixed", "sequential"])
def test_the_fastest_config_stays_in_the_leading_tier(design: str) -> None:
    """All 16 configs replay the same build, so each one is a fastest config and putting it out
    is the selection's error: over 200 sessions each config is put out in at most 1.5 % of
    them (the selection's share of alpha), with a fixed design and with adaptive stopping."""
    runs = pool()
    chosen = fixed(10) if design == "fixed" else SEQUENTIAL
    out = 0
    for seed in range(SESSIONS):
        doc = replay_session(16, chosen, 20_000 + seed, runs=runs)
        out += len({c.config for c in report(doc).out})
    rate = out / (16 * SESSIONS)
    # 3200 trials: the binomial sd at 1.5 % is 0.21 %
    assert rate <= SPLIT["selection"] + 0.005, rate


def noise(runs: list[Run]) -> tuple[float, float]:
    """From the pool: the sd of a config's per-round log ratio to the averaged baseline, and
    the margin (one process's spread), as a session would estimate them."""
    benches = runs[0].benchmarks.keys()
    levels = [
        statistics.fmean(
            math.log(statistics.median(s.throughput for s in r.benchmarks[b].samples))
            for b in benches
        )
        for r in runs
    ]
    sd = statistics.stdev(levels)
    return sd * math.sqrt(1.5), max(MIN_MARGIN, math.expm1(sd))


@pytest.mark.slow
@pytest.mark.parametrize("configs", [4, 16])
def test_a_ten_percent_effect_is_found_at_the_planned_rounds(configs: int) -> None:
    """The planner predicts the rounds a 10 % faster config needs; replayed sessions of that
    many rounds call it faster in at least 80 % of 200 sessions."""
    runs = pool()
    sd, margin = noise(runs)
    family = configs  # the other configs and the A/A check
    n = stats.rounds_for(math.log(1.10), sd, SPLIT["ranking"] / family, 2, None, math.log1p(margin))
    assert n is not None and n <= 60, n
    found = 0
    for seed in range(SESSIONS):
        doc = replay_session(configs, fixed(n), 10_000 + seed, {"c01:default": 1.10}, runs)
        found += report(doc).estimates[("c01:default", OVERALL)].verdict == "faster"
    assert found >= 0.8 * SESSIONS, (n, found)


def test_replay_notices_an_edited_elimination() -> None:
    doc = replay_session(4, SEQUENTIAL, 3, {"c01:default": 0.6})
    edited = tuple(replace(look, eliminated=()) for look in doc.looks or ())
    assert edited != doc.looks
    assert report(replace(doc, looks=edited)).replay


@pytest.mark.slow
def test_the_detectable_difference_the_report_prints_is_found_with_its_power() -> None:
    """The report prints the smallest difference it calls faster or slower with 80 % power.
    On 200 sessions of 4 configs x 10 rounds where every config is the same build, take the
    median of what their reports print; then in 200 sessions where one config is faster by
    that much, and 200 where it is slower by as much, it is called so in 75-90 % of them
    (either direction at least 70 %: the real processes' times are skewed by slow outliers,
    which costs the slower side a little)."""
    runs = pool()
    printed = [
        report(replay_session(4, fixed(10), seed, runs=runs)).detectable for seed in range(SESSIONS)
    ]
    d = statistics.median(printed)
    assert 0.05 < d < 0.3, d
    found = {"faster": 0, "slower": 0}
    for seed in range(SESSIONS):
        for verdict, factor, base in (("faster", 1 + d, 30_000), ("slower", 1 / (1 + d), 40_000)):
            doc = replay_session(4, fixed(10), base + seed, {"c01:default": factor}, runs)
            found[verdict] += report(doc).estimates[("c01:default", OVERALL)].verdict == verdict
    rate = (found["faster"] + found["slower"]) / (2 * SESSIONS)
    assert 0.75 <= rate <= 0.90, (d, found)
    assert min(found.values()) >= 0.70 * SESSIONS, (d, found)
