"""Statistics: pure functions over numbers. No I/O, no printing, no results documents.

Student's t distribution is computed here (regularised incomplete beta by Lentz's continued
fraction) so that tfbuild needs nothing beyond the standard library; the tests check every
function against SciPy.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def cv(values: Sequence[float]) -> float:
    """Coefficient of variation (stdev / mean); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else math.inf


def geomean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


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
    """The q-quantile of Student's t (bisection on the survival function)."""
    if not 0.0 < q < 1.0:
        raise ValueError("q must be in (0, 1)")
    if q == 0.5:
        return 0.0
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


@dataclass(frozen=True)
class MeanTest:
    """A one-sample (or paired) t analysis of values whose expected mean is 0."""

    n: int
    mean: float
    sd: float
    low: float
    high: float
    """Confidence interval of the mean."""
    p: float
    """Two-sided p-value of mean == 0; 1.0 when it cannot be computed."""


def mean_test(values: Sequence[float], level: float = 0.95) -> MeanTest:
    """t-interval and t-test for the mean of `values` (paired log-ratios, say)."""
    n = len(values)
    mean = statistics.fmean(values) if values else math.nan
    if n < 2:
        return MeanTest(n, mean, math.nan, -math.inf, math.inf, 1.0)
    sd = statistics.stdev(values)
    se = sd / math.sqrt(n)
    half = t_ppf(0.5 + level / 2.0, n - 1) * se
    if se == 0.0:  # identical values: certain, either way
        return MeanTest(n, mean, sd, mean, mean, 1.0 if mean == 0.0 else 0.0)
    p = min(1.0, 2.0 * t_sf(abs(mean) / se, n - 1))
    return MeanTest(n, mean, sd, mean - half, mean + half, p)


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


def minimum_detectable(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true mean a paired t-test with n rounds finds with `power` (two-sided alpha).

    The usual approximation (t quantiles in place of the noncentral t): it matches the table in
    the benchmarking method notes to a tenth of a percent.
    """
    if n < 2 or math.isnan(sd):
        return math.inf
    df = n - 1
    return (t_ppf(1 - alpha / 2, df) + t_ppf(power, df)) * sd / math.sqrt(n)
