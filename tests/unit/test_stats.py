"""Statistics against SciPy and Monte Carlo, and the decision rules against sessions with known
effects."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import scipy.special
import scipy.stats

from tfbuild import stats

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


def test_trimmed_mean_matches_scipy() -> None:
    """Yuen's trimmed mean: SciPy's trim_mean, the winsorized variance from SciPy's winsorize,
    and with nothing trimmed (n < 10) exactly Student's one-sample t."""
    rng = np.random.default_rng(3)
    for n in (5, 10, 23, 40):
        values = list(rng.normal(0.01, 0.03, n))
        ours = stats.trimmed(values)
        g = int(0.1 * n)
        assert ours.estimate == pytest.approx(scipy.stats.trim_mean(values, 0.1), rel=1e-12)
        winsorized = np.asarray(scipy.stats.mstats.winsorize(np.array(values), (g / n, g / n)))
        se = winsorized.std(ddof=1) * math.sqrt(n) / (n - 2 * g)
        assert ours.se == pytest.approx(se, rel=1e-12)
        assert ours.df == n - 2 * g - 1
        p = 2 * scipy.stats.t.sf(abs(ours.estimate) / se, n - 2 * g - 1)
        assert ours.p_value() == pytest.approx(p, rel=1e-8)
        if g == 0:
            assert ours.p_value() == pytest.approx(scipy.stats.ttest_1samp(values, 0).pvalue)
    # one wild value in ten moves a trimmed mean as little as an ordinary one would, a mean by a
    # tenth of it
    calm = [0.01, -0.01, 0.02, 0.0, 0.015, -0.005, 0.01, 0.0, 0.005, -0.01]
    wild = [*calm[:-1], 0.6]
    moved = stats.trimmed(wild).estimate - stats.trimmed(calm).estimate
    assert abs(moved) < 0.005
    assert float(np.mean(wild) - np.mean(calm)) > 0.05
    assert stats.trimmed(wild).sd < 0.02 < statistics_stdev(wild)


def statistics_stdev(values: list[float]) -> float:
    return float(np.std(values, ddof=1))


@pytest.mark.parametrize("alpha", [0.05, 0.003])
def test_sequential_levels_spend_alpha_over_all_looks(alpha: float) -> None:
    """A normal random walk looked at after the scheduled rounds (3, 5, 7, ... 40) crosses the
    boundary the levels give with probability alpha (Monte Carlo, 400k paths), not alpha per
    look; spending the rest at an early last look gives alpha too."""
    looks = stats.look_schedule(3, 40)
    assert looks == (3, 5, 7, 10, 14, 19, 26, 36, 40)
    for chosen, rest in ((looks, False), (looks[:4], True)):
        levels = stats.sequential_levels(alpha, chosen, 40, rest)
        assert all(0 < level < alpha for level in levels[:-1]) and levels[-1] <= alpha
        rng = np.random.default_rng(5)
        crossed = 0
        paths = 400_000
        critical = scipy.stats.norm.isf(np.array(levels) / 2)
        for _ in range(4):
            walk = np.cumsum(rng.standard_normal((paths // 4, chosen[-1])), axis=1)
            z = np.abs(walk[:, np.array(chosen) - 1]) / np.sqrt(np.array(chosen))
            crossed += int((z > critical).any(axis=1).sum())
        rate = crossed / paths
        spent = alpha if rest else stats.pocock_spending(alpha, chosen[-1] / 40)
        assert abs(rate - spent) < 4 * math.sqrt(spent / paths), (rate, spent)


def test_sequential_t_tests_keep_the_error_rate() -> None:
    """With the variance estimated (t tests at the nominal levels, data with heavy tails), 20k
    sequences looked at on the schedule still claim a difference in at most alpha of them."""
    alpha = 0.05
    looks = np.array(stats.look_schedule(5, 30))
    levels = np.array(stats.sequential_levels(alpha, tuple(int(n) for n in looks), 30))
    rng = np.random.default_rng(7)
    data = rng.standard_t(5, size=(20_000, 30))
    n = np.arange(1, 31)
    mean = (np.cumsum(data, axis=1) / n)[:, looks - 1]
    var = (np.cumsum(data**2, axis=1)[:, looks - 1] - looks * mean**2) / (looks - 1)
    t = np.abs(mean) / np.sqrt(var / looks)
    p = 2 * scipy.stats.t.sf(t, looks - 1)
    rate = float((p < levels).any(axis=1).mean())
    assert rate <= alpha, rate


def power_at(n: int, sd: float, alpha: float, effect: float, margin: float) -> float:
    """Exact power of 'the interval lies wholly above the margin' (noncentral t)."""
    df, se = n - 1, sd / math.sqrt(n)
    crit = scipy.stats.t.ppf(1 - alpha / 2, df)
    return float(scipy.stats.nct.sf(crit + margin / se, df, effect / se))


def test_detectable_and_rounds_for_agree_with_the_noncentral_t() -> None:
    """At the rounds the planner asks for, the exact power of calling a 10 % effect beyond a
    2 % margin is at least 80 %."""
    sd, alpha = 0.05, 0.003
    effect, margin = math.log(1.10), math.log(1.02)
    n = stats.rounds_for(effect, sd, alpha, 3, None, margin)
    assert n is not None and 8 <= n <= 40
    assert power_at(n, sd, alpha, effect, margin) >= 0.79
    assert power_at(n - 1, sd, alpha, effect, margin) < 0.8  # and one round fewer would not do
    sequential = stats.rounds_for(effect, sd, alpha, 3, 40, margin)
    assert sequential is not None and sequential > n  # looking early costs rounds at the end
