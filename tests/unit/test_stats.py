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


@pytest.mark.parametrize(
    ("m", "rho", "one_sided", "independent"),
    [(4, 1 / 3, False, 1), (16, 1 / 3, False, 1), (15, 0.5, True, 0), (3, 0.5, False, 0)],
)
def test_maxt_level_keeps_the_family_at_alpha(
    m: int, rho: float, one_sided: bool, independent: int
) -> None:
    """Equicorrelated normal statistics (and independent ones) tested at the max-t level:
    the chance that any of them crosses is alpha (Monte Carlo, 400k draws), against SciPy's
    quantile; and the level lies between Bonferroni's and alpha."""
    alpha = 0.05
    level = stats.maxt_level(alpha, m, rho, one_sided, independent)
    total = m + independent
    assert alpha / total < level < alpha
    rng = np.random.default_rng(3)
    draws = 400_000
    shared = rng.standard_normal((draws, 1))
    z = math.sqrt(rho) * shared + math.sqrt(1 - rho) * rng.standard_normal((draws, m))
    z = np.concatenate([z, rng.standard_normal((draws, independent))], axis=1)
    sides = 1 if one_sided else 2
    critical = scipy.stats.norm.isf(level / sides)
    crossed = (z if one_sided else np.abs(z)) > critical
    rate = float(crossed.any(axis=1).mean())
    assert abs(rate - alpha) < 4 * math.sqrt(alpha * (1 - alpha) / draws), rate


def test_maxt_level_is_dunnetts() -> None:
    """Dunnett's published two-sided critical values for infinite df at 5 %, correlation 1/2
    (two and four comparisons: 2.212, 2.442; one-sided, nine: 2.42)."""
    for m, one_sided, critical in ((2, False, 2.212), (4, False, 2.442), (9, True, 2.42)):
        level = stats.maxt_level(0.05, m, 0.5, one_sided)
        z = scipy.stats.norm.isf(level / (1 if one_sided else 2))
        assert z == pytest.approx(critical, abs=0.0051 if critical == 2.42 else 0.0011)
    assert stats.maxt_level(0.05, 1, 0.5) == 0.05


def test_digamma_and_trigamma_match_scipy() -> None:
    for x in (0.05, 0.5, 1.0, 2.5, 7.0, 40.0, 1e4):
        assert stats.digamma(x) == pytest.approx(scipy.special.digamma(x), rel=1e-9, abs=1e-12)
        assert stats.trigamma(x) == pytest.approx(scipy.special.polygamma(1, x), rel=1e-9)
        assert stats.tetragamma(x) == pytest.approx(scipy.special.polygamma(2, x), rel=1e-8)
    xs = np.geomspace(0.01, 1e5, 300)  # and elementwise, as the simulations call them
    np.testing.assert_allclose(stats.digamma(xs), scipy.special.digamma(xs), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(stats.trigamma(xs), scipy.special.polygamma(1, xs), rtol=1e-9)


def test_one_value_at_a_time_is_bit_for_bit_the_array_path() -> None:
    """trigamma and tetragamma of one or a few values (what the statistics ask for most) take
    a path of their own: it gives the very bits the array path gives, so a committed run of
    simulated sessions reproduces to the count."""
    rng = np.random.default_rng(7)
    edges = [0.5, 1.0, 5.999999, 6.0, 1e-99, 1e99]
    drawn = [rng.uniform(1e-6, 1.0, 2000), rng.uniform(0.0, 10.0, 2000), rng.lognormal(0, 4, 2000)]
    xs = np.concatenate([*drawn, edges])
    for function in (stats.trigamma, stats.tetragamma):
        whole = function(xs)  # more than a few values: the array path
        one = np.array([function(x) for x in xs])
        pairs = np.concatenate([function(xs[i : i + 2]) for i in range(0, len(xs), 2)])
        assert np.array_equal(whole, one) and np.array_equal(whole, pairs), function
        assert isinstance(function(2.5), np.floating) and function(np.ones((1, 2))).shape == (1, 2)


def test_trigamma_inverse_inverts_scipys_trigamma() -> None:
    xs = np.geomspace(1e-3, 1e4, 300)
    np.testing.assert_allclose(
        stats.trigamma_inverse(scipy.special.polygamma(1, xs)), xs, rtol=1e-8
    )


def test_the_prior_of_many_sets_at_once_is_each_sets_prior() -> None:
    """prior_of along the last axis (the simulations' many sessions at once) gives what
    variance_prior gives for each set on its own, at each bound, for equal and unequal df."""
    rng = np.random.default_rng(5)
    variances = rng.chisquare(3, (50, 6)) / 3 * rng.uniform(0.5, 2.0, (50, 1))
    dfs = np.array([2.0, 2.0, 3.0, 5.0, 8.0, 8.0])
    for bound in (stats.CAUTIOUS, stats.POINT, stats.GENEROUS):
        s2, d0 = stats.prior_of(variances, dfs, bound)
        for i, row in enumerate(variances):
            one = stats.variance_prior(list(row), list(dfs), bound)
            assert (s2[i], d0[i]) == (pytest.approx(one.s2, rel=1e-12), pytest.approx(one.df))


def test_the_variance_prior_recovers_how_much_variances_differ() -> None:
    """Variances drawn as in Smyth's model (each true variance s0^2 d0 / chi^2_d0, each
    estimate with d degrees of freedom): 2000 of them give back s0^2 and d0 closely; equal
    true variances give an infinite prior df, capped by the df of all the estimates."""
    rng = np.random.default_rng(11)
    d, d0, s0 = 4.0, 10.0, 0.05
    true = s0**2 * d0 / rng.chisquare(d0, 2000)
    estimates = true * rng.chisquare(d, 2000) / d
    prior = stats.variance_prior(list(estimates), [d] * 2000, bound=stats.POINT)
    assert prior.s2 == pytest.approx(s0**2, rel=0.05)
    assert prior.df == pytest.approx(d0, rel=0.25)
    cautious = stats.variance_prior(list(estimates), [d] * 2000)
    assert 0.5 * d0 < cautious.df < prior.df  # a little less pooling than the estimate says
    equal = s0**2 * rng.chisquare(d, 40) / d
    assert stats.variance_prior(list(equal), [d] * 40, bound=stats.POINT).df in (math.inf, 40 * d)
    assert stats.variance_prior([0.1, 0.2], [3, 3]).df == 0.0


@pytest.mark.slow  # a Monte Carlo of 4000 sets
def test_moderated_t_intervals_keep_their_level_when_variances_differ() -> None:
    """Eight comparisons of 4 values each whose true sds differ threefold, moderated together,
    in 4000 sets (Monte Carlo): their intervals at 95 % miss in 5.4 % on average over the
    comparisons, the noisiest in 6.6 % (the plain point-estimate prior lets it miss in
    9.5 %); and intervals are over 15 % narrower than Student's when the sds are equal."""
    rng = np.random.default_rng(17)
    sds = np.array([0.02, 0.03, 0.04, 0.05, 0.06, 0.03, 0.04, 0.06])
    misses = np.zeros(len(sds))
    width_mod, width_t = 0.0, 0.0
    sets = 4000
    for k in range(sets):
        equal = k % 2 == 0
        scale = np.full(len(sds), 0.04) if equal else sds
        data = rng.standard_normal((len(sds), 4)) * scale[:, None]
        locations = [stats.trimmed(list(row)) for row in data]
        for i, loc in enumerate(stats.moderated(locations)):
            low, high = loc.interval(0.95)
            misses[i] += not low <= 0.0 <= high
            if equal:
                width_mod += high - low
                a, b = locations[i].interval(0.95)
                width_t += b - a
    assert (misses / sets).mean() <= 0.055, misses / sets
    assert (misses / sets).max() <= 0.07, misses / sets
    assert width_mod < 0.85 * width_t
