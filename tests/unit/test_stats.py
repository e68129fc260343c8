"""Statistics against SciPy, and the comparison rules against sessions with known effects."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
import scipy.special
import scipy.stats
from synthetic import BASELINE, assert_coherent_tiers, session

from tfbuild import stats
from tfbuild.bench.suite import BENCHMARKS as SUITE
from tfbuild.bench.suite import CONTRASTS
from tfbuild.compare import OVERALL, HostReport, Session, analyse_host

DFS = [1, 2, 3, 5, 9, 14, 29, 100, 1000, 7.3, 17.8]


@pytest.mark.parametrize("df", DFS)
def test_t_distribution_matches_scipy(df: float) -> None:
    for t in (-40.0, -3.5, -1.0, -0.1, 0.0, 0.4, 1.96, 2.262, 6.0, 50.0):
        assert stats.t_sf(t, df) == pytest.approx(scipy.stats.t.sf(t, df), rel=1e-9, abs=1e-14)
    for q in (0.001, 0.025, 0.2, 0.5, 0.8, 0.975, 0.999):
        assert stats.t_ppf(q, df) == pytest.approx(scipy.stats.t.ppf(q, df), rel=1e-8, abs=1e-9)


def test_betainc_matches_scipy() -> None:
    for a, b, x in [(0.5, 0.5, 0.3), (4.5, 0.5, 0.9), (50, 0.5, 0.99), (2, 3, 0.0001), (1, 1, 0.5)]:
        assert stats.betainc(a, b, x) == pytest.approx(scipy.special.betainc(a, b, x), rel=1e-10)


def test_mean_test_matches_scipy() -> None:
    rng = random.Random(1)
    for n in (2, 3, 10, 25):
        values = [rng.gauss(0.01, 0.02) for _ in range(n)]
        ours = stats.mean_test(values)
        ref = scipy.stats.ttest_1samp(values, 0.0)
        low, high = scipy.stats.t.interval(
            0.95, n - 1, loc=sum(values) / n, scale=scipy.stats.sem(values)
        )
        assert ours.p == pytest.approx(ref.pvalue, rel=1e-9)
        assert ours.low == pytest.approx(low, rel=1e-9)
        assert ours.high == pytest.approx(high, rel=1e-9)
    assert stats.mean_test([0.01]).p == 1.0  # one round proves nothing
    assert stats.mean_test([0.0, 0.0, 0.0]).p == 1.0


def test_welch_matches_scipy() -> None:
    rng = random.Random(2)
    a = [rng.gauss(1.0, 0.05) for _ in range(10)]
    b = [rng.gauss(1.04, 0.02) for _ in range(7)]
    ours = stats.welch_test(a, b)
    ref = scipy.stats.ttest_ind(a, b, equal_var=False)
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-9)
    interval = ref.confidence_interval(0.95)
    assert ours.low == pytest.approx(interval.low, rel=1e-9)
    assert ours.high == pytest.approx(interval.high, rel=1e-9)


def test_holm() -> None:
    # Holm (1979) style example: sorted p * (m - rank), made monotone, capped at 1.
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == [1.0, 1.0]
    assert stats.holm([]) == []


def test_minimum_detectable_effect() -> None:
    # Paired design, alpha 0.05 two-sided, power 0.8: sd 2 % and 10 rounds -> about 2.0 %.
    mde = stats.minimum_detectable(0.02, 10)
    assert mde == pytest.approx(0.020, abs=0.001)
    # and at that effect the exact (noncentral t) power is close to 80 %
    df, nc = 9, mde / (0.02 / math.sqrt(10))
    crit = scipy.stats.t.ppf(0.975, df)
    power = scipy.stats.nct.sf(crit, df, nc) + scipy.stats.nct.cdf(-crit, df, nc)
    assert power == pytest.approx(0.8, abs=0.03)


def analyse(document: dict[str, Any]) -> HostReport:
    return analyse_host([Session(Path("synthetic.json"), document)])


def test_five_percent_effect_is_flagged() -> None:
    """10 rounds, 2 % noise: a config 5 % faster is called faster in at least 95 of 100 runs."""
    flagged = 0
    for seed in range(100):
        report = analyse(session({"fast:default": 1.05}, seed=seed))
        if report.estimates[("fast:default", OVERALL)].verdict == "faster":
            flagged += 1
    assert flagged >= 95, flagged


def test_aa_control_is_quiet() -> None:
    """The baseline against its own copy is not flagged in at least 95 of 100 simulations."""
    quiet = 0
    for seed in range(100):
        report = analyse(session({}, seed=1000 + seed))
        if report.aa[OVERALL].verdict == "tie" and not report.warnings:
            quiet += 1
    assert quiet >= 95, quiet


def test_noisy_aa_is_reported() -> None:
    """A session whose baseline copy runs 6 % faster is declared too noisy to trust."""
    report = analyse(session({}, aa_effect=1.06, seed=4))
    assert report.aa[OVERALL].verdict == "faster"
    assert any("too noisy to trust" in w for w in report.warnings)
    assert report.thresholds[OVERALL] > 0.05


def test_ties_are_tied_and_tiers_follow_effects() -> None:
    report = analyse(
        session(
            {"same:default": 1.0, "twin:default": 1.005, "slow:default": 0.8, "fast:default": 1.15},
            seed=7,
        )
    )
    verdicts = {e.config: e.verdict for e in report.ranking}
    assert verdicts["same:default"] == verdicts["twin:default"] == "tie"
    assert verdicts["fast:default"] == "faster" and verdicts["slow:default"] == "slower"
    tiers = report.tiers
    assert_coherent_tiers(report)
    assert tiers[0] == ["fast:default"]
    assert set(tiers[1]) == {BASELINE, "same:default", "twin:default"}
    assert tiers[2] == ["slow:default"]
    assert report.choice is not None and report.choice.config == "fast:default"


def test_a_noisy_leader_does_not_pull_a_slower_config_into_the_baseline_tier() -> None:
    """A wide-interval config at the top cannot be told apart from anything; the tiers must
    still not put a config measurably slower than the baseline next to it."""
    split = 0
    for seed in range(20):
        report = analyse(
            session(
                {"noisy:default": 1.05, "slow:default": 0.75},
                noise_of={"noisy:default": 0.25},
                noise=0.01,
                rounds=3,
                seed=seed,
            )
        )
        assert_coherent_tiers(report)
        verdicts = {e.config: e.verdict for e in report.ranking}
        if verdicts["slow:default"] == "slower":
            split += 1
            assert report.tiers[-1] == ["slow:default"]
    assert split >= 15, split


def test_seed_experiments_are_measured_within_the_recommended_config() -> None:
    """The hand-built unrolled GRU runs 25 % faster than the Keras layer inside the winning
    config; nothing else differs within it."""
    fast = {"gru-keras": 1.2, "gru-static": 1.5, "gru-dynamic": 1.5}
    report = analyse(session({"fast:default": fast}, benchmarks=tuple(SUITE), seed=6))
    assert report.choice is not None and report.choice.config == "fast:default"
    by_name = {e.benchmark: e for e in report.contrasts}
    assert [c.name for c in CONTRASTS] == list(by_name)
    unrolled = by_name[CONTRASTS[0].name]
    assert unrolled.config == "fast:default" and unrolled.verdict == "faster"
    assert unrolled.low < 1.25 < unrolled.high
    assert [e.verdict for e in report.contrasts[1:]] == ["tie", "tie", "tie"]


def test_a_top_ranked_tie_is_not_recommended() -> None:
    """With 3 rounds, 12 configs and a noisy baseline, `fast` (+12 %) often cannot be told apart
    from the baseline yet leads a tier of its own; only a verdict of faster may recommend it."""
    effects = {"fast:default": 1.12, "near:default": 1.03}
    effects |= {f"filler{i}:default": 1.0 for i in range(10)}
    out_of_top = 0
    for seed in range(20):
        report = analyse(
            session(effects, noise_of={BASELINE: 0.04}, noise=0.004, rounds=3, seed=seed)
        )
        verdict = {e.config: e.verdict for e in report.ranking}["fast:default"]
        choice = report.choice
        assert choice is not None
        if verdict == "faster":
            assert choice.config == "fast:default"
        else:
            assert choice.config == BASELINE, (seed, report.tiers[0])
            assert "every config ranked above it is within noise of it" in choice.reason
            out_of_top += BASELINE not in report.tiers[0]
    assert out_of_top >= 8, out_of_top


def test_choice_stays_with_baseline_when_nothing_is_faster() -> None:
    report = analyse(session({"same:default": 1.003, "slow:default": 0.9}, seed=3))
    choice = report.choice
    assert choice is not None and choice.config == BASELINE
    assert "no config is measurably faster" in choice.reason


def test_per_benchmark_effects_and_holm() -> None:
    report = analyse(
        session({"mixed:default": {"gru-keras": 1.20, "matmul-pinned": 0.85}}, seed=11)
    )
    estimates = report.estimates
    assert estimates[("mixed:default", "gru-keras")].verdict == "faster"
    assert estimates[("mixed:default", "matmul-pinned")].verdict == "slower"
    assert estimates[("mixed:default", "input-fed")].verdict == "tie"
    gru = estimates[("mixed:default", "gru-keras")]
    assert gru.low < gru.ratio < gru.high and gru.ratio == pytest.approx(1.20, rel=0.03)
