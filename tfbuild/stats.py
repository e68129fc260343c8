"""Statistics: pure functions over numbers. No I/O, no printing, no results documents.

Student's t distribution is computed here (regularised incomplete beta by Lentz's continued
fraction) and the group-sequential boundaries by recursive numerical integration with numpy, so
that tfbuild needs no SciPy; the tests check these functions against SciPy and Monte Carlo.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import cast

import numpy as np


def exp(x: float) -> float:
    """e**x, infinite where it overflows (an interval from very few rounds reaches that far)."""
    return math.exp(x) if x < 700.0 else math.inf


def expm1(x: float) -> float:
    return math.expm1(x) if x < 700.0 else math.inf


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def cv(values: Sequence[float]) -> float:
    """Coefficient of variation (stdev / mean); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else math.inf


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t > 0 else 1.0 - tail


@functools.lru_cache(maxsize=4096)
def t_ppf(q: float, df: float) -> float:
    """The q-quantile of Student's t (bisection on the survival function); the normal
    quantile for infinite df."""
    if not 0.0 < q < 1.0:
        raise ValueError("q must be in (0, 1)")
    if q == 0.5:
        return 0.0
    if df > 1e7:
        return statistics.NormalDist().inv_cdf(q)
    upper = q > 0.5
    target = 1.0 - q if upper else q
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > target:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_sf(mid, df) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    value = (lo + hi) / 2.0
    return value if upper else -value


def _bisect(
    inside: Callable[[float], bool], lo: float, hi: float, tolerance: float = 1e-12
) -> float:
    """The boundary between lo, where `inside` holds, and hi, where it does not, to
    `tolerance` (relative, or absolute below 1)."""
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if inside(mid) else (lo, mid)
        if hi - lo < tolerance * max(1.0, abs(hi)):
            break
    return (lo + hi) / 2.0


def f_cdf(x: float, d1: float, d2: float) -> float:
    """P(F <= x) for Fisher's F with (d1, d2) degrees of freedom (not necessarily whole)."""
    return betainc(d1 / 2.0, d2 / 2.0, d1 * x / (d1 * x + d2)) if x > 0 else 0.0


@functools.lru_cache(maxsize=4096)
def f_ppf(q: float, d1: float, d2: float) -> float:
    """The q-quantile of Fisher's F (bisection on its distribution function, to a relative
    1e-9: far below what any bound it gives shows)."""
    if not 0.0 < q < 1.0:
        raise ValueError("q must be in (0, 1)")
    hi = 1.0
    while f_cdf(hi, d1, d2) < q:
        hi *= 2.0
    return _bisect(lambda x: f_cdf(x, d1, d2) < q, 0.0, hi, 1e-9)


def binomial_upper(k: int, n: int, confidence: float = 0.95) -> float:
    """The one-sided upper confidence bound of a rate seen k times in n (Clopper and Pearson
    1934): the rate under which k or fewer would be seen with probability 1 - confidence."""
    if k >= n:
        return 1.0
    # P(X <= k | p) = 1 - I_p(k + 1, n - k), falling in p
    return _bisect(lambda p: 1.0 - betainc(k + 1.0, n - k, p) > 1.0 - confidence, 0.0, 1.0)


@dataclass(frozen=True)
class TwoSampleTest:
    difference: float
    """mean(a) - mean(b)"""
    low: float
    high: float
    p: float
    df: float


def welch_test(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> TwoSampleTest:
    """Welch's unequal-variance t-test and interval for mean(a) - mean(b)."""
    na, nb = len(a), len(b)
    diff = statistics.fmean(a) - statistics.fmean(b)
    if na < 2 or nb < 2:
        return TwoSampleTest(diff, -math.inf, math.inf, 1.0, math.nan)
    va, vb = statistics.variance(a) / na, statistics.variance(b) / nb
    se = math.sqrt(va + vb)
    if se == 0.0:
        p = 1.0 if diff == 0.0 else 0.0
        return TwoSampleTest(diff, diff, diff, p, math.inf)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    half = t_ppf(0.5 + level / 2.0, df) * se
    p = min(1.0, 2.0 * t_sf(abs(diff) / se, df))
    return TwoSampleTest(diff, diff - half, diff + half, p, df)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


# --------------------------------------------------------------------------------------------
# Robust location: Yuen's trimmed mean


TRIM = 0.1
"""Share of values trimmed from each end: one outlier round in ten has no influence."""


@dataclass(frozen=True)
class Location:
    """A trimmed mean with its standard error and degrees of freedom (Tukey-McLaughlin/Yuen)."""

    n: int
    estimate: float
    se: float
    df: float
    sd: float
    """Robust sd of one value: the winsorized sd made consistent for normal data."""
    kept: int = 0
    """Values left after trimming (h): se = sqrt(spread * n) / h."""

    @property
    def spread(self) -> float:
        """The winsorized variance of one value, which se**2 scales: what moderation pools."""
        return self.se**2 * self.kept**2 / self.n if self.kept else math.nan

    def interval(self, level: float) -> tuple[float, float]:
        """Two-sided interval at confidence `level` (e.g. 1 - alpha/m)."""
        if self.df < 1 or not math.isfinite(self.se):
            return -math.inf, math.inf
        half = t_ppf(0.5 + level / 2.0, self.df) * self.se
        return self.estimate - half, self.estimate + half

    def p_value(self, null: float = 0.0) -> float:
        """Two-sided p-value of estimate == null."""
        if self.df < 1:
            return 1.0
        if self.se == 0.0:
            return 1.0 if self.estimate == null else 0.0
        return min(1.0, 2.0 * t_sf(abs(self.estimate - null) / self.se, self.df))


def sd_lower(sd: float, df: float, confidence: float = 0.9) -> float:
    """A one-sided lower confidence bound of a standard deviation estimated with `df` degrees
    of freedom: sd * sqrt(df / chi2_confidence(df)), the chi-square quantile by Wilson and
    Hilferty's cube-root approximation (within 1 % from 2 df on)."""
    if not (df >= 1 and math.isfinite(sd)):
        return 0.0
    z = statistics.NormalDist().inv_cdf(confidence)
    quantile = df * (1.0 - 2.0 / (9.0 * df) + z * math.sqrt(2.0 / (9.0 * df))) ** 3
    return sd * math.sqrt(df / quantile)


def sample_sd(values: Sequence[float]) -> float:
    """The sample standard deviation in floating point (compensated sums): within an ulp or
    two of statistics.stdev, which computes it in exact fractions at thirty times the cost,
    on the hot path of every look and report."""
    n = len(values)
    mean = math.fsum(values) / n
    return math.sqrt(math.fsum((x - mean) ** 2 for x in values) / (n - 1))


def winsor_factor(gamma: float) -> float:
    """Variance of a standard normal winsorized at its gamma and 1 - gamma quantiles."""
    if gamma <= 0.0:
        return 1.0
    c = statistics.NormalDist().inv_cdf(1.0 - gamma)
    pdf = math.exp(-c * c / 2.0) / math.sqrt(2.0 * math.pi)
    return (1.0 - 2.0 * gamma) - 2.0 * c * pdf + 2.0 * gamma * c * c


def trimmed(values: Sequence[float], trim: float = TRIM) -> Location:
    """Yuen's trimmed mean: drop floor(trim * n) values from each end; the standard error comes
    from the winsorized variance, with n - 2g - 1 degrees of freedom. With g = 0 (n < 10 at
    10 %) it is exactly the mean with Student's t."""
    n = len(values)
    if n == 0:
        return Location(0, math.nan, math.inf, 0, math.nan)
    xs = sorted(values)
    g = math.floor(trim * n)
    h = n - 2 * g
    kept = xs[g : n - g]
    estimate = statistics.fmean(kept)
    if h < 2:
        return Location(n, estimate, math.inf, 0, math.nan)
    winsorized = [xs[g]] * g + kept + [xs[n - g - 1]] * g
    sw = sample_sd(winsorized)
    se = sw * math.sqrt(n) / h if n > 1 else math.inf
    return Location(n, estimate, se, h - 1, sw / math.sqrt(winsor_factor(g / n)), h)


def trimmed_along(x: np.ndarray, trim: float = TRIM) -> tuple[np.ndarray, np.ndarray, int]:
    """trimmed() along the last axis, for many sets of values at once: the trimmed means, the
    winsorized variances (what Location.spread is) and the values kept."""
    n = x.shape[-1]
    g = math.floor(trim * n)
    h = n - 2 * g
    if not g:  # nothing trimmed: no need to sort
        return x.mean(axis=-1), x.var(axis=-1, ddof=1), h
    xs = np.sort(x, axis=-1)
    mean = xs[..., g : n - g].mean(axis=-1)
    xs[..., :g] = xs[..., g : g + 1]
    xs[..., n - g :] = xs[..., n - g - 1 : n - g]
    return mean, xs.var(axis=-1, ddof=1), h


def norm_sf(x: np.ndarray) -> np.ndarray:
    """Upper tail of the standard normal, vectorised (Numerical Recipes' erfc, relative error
    below 1.2e-7 everywhere, enough for levels down to 1e-12)."""
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))  # fmt: skip
    erfc = t * np.exp(poly)
    tail: np.ndarray = np.where(x >= 0, 0.5 * erfc, 1.0 - 0.5 * erfc)
    return tail


# --------------------------------------------------------------------------------------------
# Many comparisons at once: max-t levels and moderated variances

_Z = np.linspace(-8.0, 8.0, 801)
_PHI = np.exp(-0.5 * _Z**2) / math.sqrt(2.0 * math.pi) * (_Z[1] - _Z[0])


@functools.lru_cache(maxsize=1024)
def maxt_level(
    alpha: float, m: int, rho: float, one_sided: bool = False, independent: int = 0
) -> float:
    """The per-comparison level at which m comparisons correlated at `rho` (and `independent`
    more, uncorrelated with them) together err with probability alpha: the max-t critical value
    of Dunnett (1955) for comparisons with one shared reference, as a nominal level. For
    equicorrelated normal statistics P(max |Z_i| <= c) is one integral over the shared part,
    E_z[(Phi((c - sqrt(rho) z) / sqrt(1 - rho)) - Phi((-c - sqrt(rho) z) / sqrt(1 - rho)))^m];
    never below alpha / (m + independent) (Bonferroni), equal to it for m + independent = 1.
    """
    if not 0.0 < alpha < 1.0 or m < 0 or independent < 0 or not 0.0 <= rho < 1.0:
        raise ValueError("need 0 < alpha < 1, m >= 0, independent >= 0 and 0 <= rho < 1")
    total = m + independent
    if total <= 1:
        return alpha
    sides = 1 if one_sided else 2
    a, b = math.sqrt(rho), math.sqrt(1.0 - rho)

    def covered(c: float) -> float:
        inside = 1.0 - norm_sf((c - a * _Z) / b)
        if not one_sided:
            inside = inside - norm_sf((c + a * _Z) / b)
        single = 1.0 - sides * float(norm_sf(np.array([c]))[0])
        return float(np.sum(_PHI * inside**m)) * single**independent

    lo, hi = 0.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if covered(mid) < 1.0 - alpha else (lo, mid)
        if hi - lo < 1e-10:
            break
    level = sides * float(norm_sf(np.array([hi]))[0])
    return min(alpha, max(alpha / total, level))


def digamma(x: float | np.ndarray) -> np.ndarray:
    """psi(x) for x > 0, elementwise (recurrence up to 6, then the asymptotic series)."""
    x = np.array(x, dtype=float)
    out = np.zeros_like(x)
    for _ in range(6):
        small = x < 6.0
        out -= np.where(small, 1.0 / x, 0.0)
        x = np.where(small, x + 1.0, x)
    f = 1.0 / (x * x)
    result: np.ndarray = (
        out + np.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f / 240)))
    )
    return result


Real = float | np.ndarray
"""A float, or an array of them: the series below are the same operations on either."""


def _trigamma_series(out: Real, x: Real) -> Real:
    """trigamma once the recurrence has taken x to 6 or more (`out`: what it added)."""
    f = 1.0 / (x * x)
    return out + 1.0 / x + f / 2.0 + f / x * (1 / 6 - f * (1 / 30 - f * (1 / 42 - f / 30)))


def _tetragamma_series(out: Real, x: Real) -> Real:
    """tetragamma once the recurrence has taken x to 6 or more (`out`: what it added)."""
    f = 1.0 / (x * x)
    return out - f * (
        1.0 + 1.0 / x + f * (0.5 - f * (1 / 6 - f * (1 / 6 - f * (3 / 10 - f * 5 / 6))))
    )


def _trigamma1(x: float) -> float:
    """trigamma of one number: the same operations, in the same order, as the array path."""
    out = 0.0
    while x < 6.0:
        out += 1.0 / (x * x)
        x += 1.0
    return float(_trigamma_series(out, x))


def _tetragamma1(x: float) -> float:
    """tetragamma of one number: the same operations, in the same order, as the array path."""
    out = 0.0
    while x < 6.0:
        out -= 2.0 / (x * x * x)
        x += 1.0
    return float(_tetragamma_series(out, x))


def _one_by_one(x: np.ndarray, of_one: Callable[[float], float]) -> np.ndarray | None:
    """`of_one` of each element of a small array (the statistics ask for one or a few values at
    a time, where a dozen array operations cost more than the arithmetic); None for a large
    one, or one with a value so small or large that a square of it overflows."""
    if x.size > 4 or not np.all((x > 1e-100) & (x < 1e100)):
        return None
    values = np.array([of_one(v) for v in x.ravel().tolist()]).reshape(x.shape)
    return values if x.ndim else values[()]


def trigamma(x: float | np.ndarray) -> np.ndarray:
    """psi'(x) for x > 0, elementwise (recurrence up to 6, then the asymptotic series)."""
    x = np.array(x, dtype=float)
    small = _one_by_one(x, _trigamma1)
    if small is not None:
        return small
    out = np.zeros_like(x)
    for _ in range(6):
        small = x < 6.0
        out += np.where(small, 1.0 / (x * x), 0.0)
        x = np.where(small, x + 1.0, x)
    return cast(np.ndarray, _trigamma_series(out, x))


def tetragamma(x: float | np.ndarray) -> np.ndarray:
    """psi''(x) for x > 0, elementwise (recurrence up to 6, then the asymptotic series)."""
    x = np.array(x, dtype=float)
    small = _one_by_one(x, _tetragamma1)
    if small is not None:
        return small
    out = np.zeros_like(x)
    for _ in range(6):
        small = x < 6.0
        out -= np.where(small, 2.0 / (x * x * x), 0.0)
        x = np.where(small, x + 1.0, x)
    return cast(np.ndarray, _tetragamma_series(out, x))


def trigamma_inverse(y: np.ndarray) -> np.ndarray:
    """The x > 0 with trigamma(x) = y, elementwise: Newton's method from 1/2 + 1/y, as limma's
    trigammaInverse (Smyth 2004), which converges in a few steps from that start."""
    y = np.asarray(y, dtype=float)
    x = 0.5 + 1.0 / y
    for _ in range(50):
        tri = trigamma(x)
        step = tri * (1.0 - tri / y) / tetragamma(x)
        x = x + step
        if np.all(-step / x < 1e-12):
            break
    result: np.ndarray = np.where(y > 1e7, 1.0 / np.sqrt(y), np.where(y < 1e-6, 1.0 / y, x))
    return result


CAUTIOUS, POINT, GENEROUS = 1, 0, -1
"""Where the spread of the log variances is taken: two standard errors above its estimate
(differences between the true variances that so few estimates cannot rule out count against
pooling: the decision rules), at it, or two below (only differences the estimates show count
against it: the forecasts, where a tier's noisiest-looking member would decide)."""


def caution(k: int, bound: int = CAUTIOUS) -> float:
    """The factor on the spread of k log variances at `bound` (a variance from k values has a
    standard error of sqrt(2 / (k - 1)) of itself); never below 0."""
    return max(0.0, 1.0 + bound * 2.0 * math.sqrt(2.0 / (k - 1)))


def prior_of(
    variances: np.ndarray, dfs: np.ndarray, bound: int = CAUTIOUS, capped: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The empirical Bayes prior (s0^2, d0) of variance estimates along the last axis, each
    with its degrees of freedom (`dfs`, broadcast against them), for every leading index at
    once (Smyth 2004, limma, section 6.2: moments of the log variances), the spread of the log
    variances taken at `bound`. d0 never exceeds the degrees of freedom of all the estimates
    together (`capped`; else it is infinite when the variances differ no more than sampling
    explains). At least three estimates, all positive."""
    k = variances.shape[-1]
    dfs = np.broadcast_to(np.asarray(dfs, dtype=float), variances.shape)
    e = np.log(variances) - digamma(dfs / 2.0) + np.log(dfs / 2.0)
    spread = e.var(axis=-1, ddof=1) * caution(k, bound)
    excess = spread - trigamma(dfs / 2.0).mean(axis=-1)
    d0 = np.full(excess.shape, math.inf)
    positive = excess > 0
    if positive.any():
        d0[positive] = 2.0 * trigamma_inverse(excess[positive])
    if capped:
        d0 = np.minimum(d0, dfs.sum(axis=-1))
    half = np.where(np.isfinite(d0), d0, 2.0) / 2.0  # psi(x) - ln(x) -> 0 as x -> inf
    s2 = np.exp(e.mean(axis=-1) + np.where(np.isfinite(d0), digamma(half) - np.log(half), 0.0))
    return s2, d0


def pool(
    variance: np.ndarray, df: np.ndarray, s2: float | np.ndarray, d0: float | np.ndarray
) -> np.ndarray:
    """A variance moderated towards the prior: (d0 s0^2 + d s^2) / (d0 + d), with d0 + d
    degrees of freedom, and never below its own s^2 (a noisy comparison is not made to look
    quieter than it is)."""
    result: np.ndarray = np.maximum(variance, (d0 * s2 + df * variance) / (d0 + df))
    return result


@dataclass(frozen=True)
class Prior:
    """What comparisons made together say about any one's variance: a typical variance s2 worth
    df degrees of freedom (0 when there is nothing to pool)."""

    s2: float
    df: float


def variance_prior(
    variances: Sequence[float], dfs: Sequence[float], bound: int = CAUTIOUS, capped: bool = True
) -> Prior:
    """prior_of for one set of comparisons: estimates that are not positive and finite, or have
    less than one degree of freedom, are left out; fewer than three left give nothing to pool.
    Remembered by its inputs: a look asks it again of the same comparisons."""
    pairs = tuple(
        (float(v), float(d))
        for v, d in zip(variances, dfs, strict=True)
        if v > 0 and math.isfinite(v) and d >= 1
    )
    if len(pairs) < 3:
        return Prior(math.nan, 0.0)
    return _prior(pairs, bound, capped)


@functools.lru_cache(maxsize=4096)
def _prior(pairs: tuple[tuple[float, float], ...], bound: int, capped: bool) -> Prior:
    found = np.array([v for v, _ in pairs]), np.array([d for _, d in pairs])
    s2, d0 = prior_of(*found, bound, capped)
    return Prior(float(s2), float(d0))


def moderated(locations: Sequence[Location]) -> list[Location]:
    """Locations made together, each with its variance moderated towards what they share
    (Smyth 2004, stats.pool), so comparisons from few rounds borrow the precision of the
    others. As with any empirical Bayes pooling the level holds on average over the
    comparisons: with true sds three times apart and four values each, the noisiest misses in
    6-7 % instead of 5 %. Locations without a finite spread are returned as they are."""
    prior = variance_prior([x.spread for x in locations], [x.df for x in locations])
    if prior.df <= 0.0:
        return list(locations)
    out = []
    for x in locations:
        if not (x.kept and math.isfinite(x.spread) and x.df >= 1):
            out.append(x)
            continue
        spread = float(pool(np.array(x.spread), np.array(x.df), prior.s2, prior.df))
        se = math.sqrt(spread * x.n) / x.kept
        out.append(replace(x, se=se, df=prior.df + x.df, sd=x.sd * se / x.se if x.se else x.sd))
    return out
