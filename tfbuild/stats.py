"""Statistics: pure functions over numbers. No I/O, no printing, no results documents.

Student's t distribution is computed here (regularised incomplete beta by Lentz's continued
fraction) and the group-sequential boundaries by recursive numerical integration with numpy, so
that tfbuild needs no SciPy; the tests check these functions against SciPy and Monte Carlo.
"""

from __future__ import annotations

import functools
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

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
        inside = 1.0 - _norm_sf((c - a * _Z) / b)
        if not one_sided:
            inside = inside - _norm_sf((c + a * _Z) / b)
        single = 1.0 - sides * float(_norm_sf(np.array([c]))[0])
        return float(np.sum(_PHI * inside**m)) * single**independent

    lo, hi = 0.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if covered(mid) < 1.0 - alpha else (lo, mid)
        if hi - lo < 1e-10:
            break
    level = sides * float(_norm_sf(np.array([hi]))[0])
    return min(alpha, max(alpha / total, level))


def digamma(x: float) -> float:
    """psi(x) for x > 0 (recurrence up to 6, then the asymptotic series)."""
    out = 0.0
    while x < 6.0:
        out -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return out + math.log(x) - 0.5 / x - f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f / 240)))


def trigamma(x: float) -> float:
    """psi'(x) for x > 0 (recurrence up to 6, then the asymptotic series)."""
    out = 0.0
    while x < 6.0:
        out += 1.0 / (x * x)
        x += 1.0
    f = 1.0 / (x * x)
    return out + 1.0 / x + f / 2.0 + f / x * (1 / 6 - f * (1 / 30 - f * (1 / 42 - f / 30)))


def _trigamma_inverse(y: float) -> float:
    lo, hi = 1e-8, 1e8
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if trigamma(mid) > y else (lo, mid)
        if hi / lo < 1.0 + 1e-12:
            break
    return math.sqrt(lo * hi)


@dataclass(frozen=True)
class Prior:
    """What comparisons made together say about any one's variance: a typical variance s2 worth
    df degrees of freedom (infinite when their variances differ no more than sampling explains,
    0 when there is nothing to pool)."""

    s2: float
    df: float


def variance_prior(
    variances: Sequence[float], dfs: Sequence[float], cautious: bool = True
) -> Prior:
    """Empirical Bayes prior of a set of variance estimates, each with its degrees of freedom
    (Smyth 2004, limma, section 6.2: moments of the log variances), made cautious: the spread
    of the log variances is taken at an upper bound (two standard errors above its estimate),
    so that differences between the true variances that so few estimates cannot rule out count
    against pooling (without `cautious`, the point estimate). Its df never exceeds the degrees
    of freedom of all the estimates together."""
    pairs = [
        (v, d) for v, d in zip(variances, dfs, strict=True) if v > 0 and math.isfinite(v) and d >= 1
    ]
    if len(pairs) < 3:
        return Prior(math.nan, 0.0)
    e = [math.log(v) - digamma(d / 2.0) + math.log(d / 2.0) for v, d in pairs]
    mean = statistics.fmean(e)
    spread = statistics.variance(e) * (1.0 + 2.0 * math.sqrt(2.0 / (len(e) - 1)) * cautious)
    excess = spread - statistics.fmean(trigamma(d / 2.0) for _, d in pairs)
    df = 2.0 * _trigamma_inverse(excess) if excess > 0 else math.inf
    df = min(df, float(sum(d for _, d in pairs)))
    s2 = math.exp(mean + digamma(df / 2.0) - math.log(df / 2.0))
    return Prior(s2, df)


def moderated(locations: Sequence[Location]) -> list[Location]:
    """Locations made together, each with its variance moderated towards what they share
    (Smyth 2004): spread (d0 s0^2 + d s^2) / (d0 + d), never below its own s^2, with d0 + d
    degrees of freedom; so comparisons from few rounds borrow the precision of the others,
    and a noisier one is not made to look quieter than it is. As with any empirical Bayes
    pooling the level holds on average over the comparisons: with true sds three times apart
    and four values each, the noisiest misses in 6-7 % instead of 5 %. Locations without a
    finite spread are returned as they are."""
    prior = variance_prior([x.spread for x in locations], [x.df for x in locations])
    if prior.df <= 0.0:
        return list(locations)
    out = []
    for x in locations:
        if not (x.kept and math.isfinite(x.spread) and x.df >= 1):
            out.append(x)
            continue
        spread = max(x.spread, (prior.df * prior.s2 + x.df * x.spread) / (prior.df + x.df))
        if not math.isfinite(prior.df):
            spread = max(x.spread, prior.s2)
        se = math.sqrt(spread * x.n) / x.kept
        out.append(replace(x, se=se, df=prior.df + x.df, sd=x.sd * se / x.se if x.se else x.sd))
    return out


# --------------------------------------------------------------------------------------------
# Group-sequential error control: alpha spending (Lan-DeMets) over looks after every round


def _norm_sf(x: np.ndarray) -> np.ndarray:
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


def pocock_spending(alpha: float, fraction: float) -> float:
    """Lan-DeMets spending function of Pocock type: alpha * ln(1 + (e - 1) t)."""
    return alpha * math.log1p((math.e - 1.0) * min(1.0, max(0.0, fraction)))


def power_spending(alpha: float, fraction: float) -> float:
    """Kim-DeMets power-family spending function with exponent 2: alpha * t^2. It keeps most of
    alpha for the late looks, where intervals are judged when a session stops on its
    resolution."""
    return alpha * min(1.0, max(0.0, fraction)) ** 2


SPENDING = {"pocock": pocock_spending, "power": power_spending}


LOOK_GROWTH = 1.2
"""Each scheduled look comes after about 20 % more rounds than the one before (35 % under the
first decision rules)."""


def look_schedule(first: int, horizon: int, growth: float = LOOK_GROWTH) -> tuple[int, ...]:
    """The rounds after which a sequential session looks at its data: `first`, then `growth`
    times as many rounds each time (at least one more), and the horizon last. Fixed before
    the first round."""
    looks = [first]
    while looks[-1] < horizon:
        looks.append(min(horizon, max(looks[-1] + 1, math.ceil(looks[-1] * growth))))
    return tuple(looks)


@functools.lru_cache(maxsize=1024)
def sequential_levels(
    alpha: float,
    looks: tuple[int, ...],
    horizon: int,
    spend_rest_at_last: bool = False,
    one_sided: bool = False,
    grid: int = 401,
    spending: str = "pocock",
) -> tuple[float, ...]:
    """Nominal levels for a comparison looked at after `looks` rounds: two-sided, or (with
    `one_sided`) one-sided for a bound in one direction.

    Rejecting (or excluding 0 from its interval) at look k when its p-value is below level[k]
    crosses a boundary with probability at most alpha over all looks together, wherever the
    comparison stops: the boundary spends alpha along a Lan-DeMets spending function
    (`spending`: Pocock type, or the power family's t^2) over the information fraction
    n / horizon, with the correlation of successive
    looks taken into account (recursive numerical integration over the Brownian sum; Jennison
    and Turnbull, Group Sequential Methods, ch. 19). `spend_rest_at_last` spends everything
    left at the last look: allowed when the session ended there for a reason independent of
    the data (its time budget). Exact for normal data with known variance; the levels are then
    applied to t (or Yuen) p-values, the usual nominal-level practice.
    """
    if not 0.0 < alpha < 1.0 or not looks or looks[0] < 1 or horizon < 1:
        raise ValueError("need 0 < alpha < 1 and looks after at least one round")
    if any(b <= a for a, b in itertools.pairwise(looks)):
        raise ValueError("looks must be increasing")
    sides = 1 if one_sided else 2
    levels: list[float] = []
    spent = 0.0
    xs = np.zeros(0)
    mass = np.zeros(0)
    previous = 0
    for k, n in enumerate(looks):
        last = k == len(looks) - 1
        spend = SPENDING[spending]
        target = alpha if last and spend_rest_at_last else spend(alpha, n / horizon)
        increment = max(1e-300, target - spent)
        spent += increment
        root = math.sqrt(n)
        if k == 0:
            bound = root * statistics.NormalDist().inv_cdf(1.0 - increment / sides)
            xs = np.linspace(-bound if sides == 2 else -8.0 * root, bound, grid)
            density = np.exp(-0.5 * (xs / root) ** 2) / (root * math.sqrt(2.0 * math.pi))
        else:
            step = math.sqrt(n - previous)
            lo, hi = 0.0, 40.0 * root
            for _ in range(100):
                mid = (lo + hi) / 2.0
                crossed = np.sum(mass * _norm_sf((mid - xs) / step))
                if sides == 2:
                    crossed += np.sum(mass * _norm_sf((mid + xs) / step))
                lo, hi = (mid, hi) if crossed > increment else (lo, mid)
            bound = hi
            new_xs = np.linspace(-bound if sides == 2 else -8.0 * root, bound, grid)
            kernel = np.exp(-0.5 * ((new_xs[:, None] - xs[None, :]) / step) ** 2)
            density = kernel @ mass / (step * math.sqrt(2.0 * math.pi))
            xs = new_xs
        weights = np.full(grid, xs[1] - xs[0])
        weights[[0, -1]] *= 0.5
        mass = density * weights
        levels.append(float(sides * _norm_sf(np.array([bound / root]))[0]))
        previous = n
    return tuple(levels)


# --------------------------------------------------------------------------------------------
# Planning


def power_beyond(
    effect: float,
    se: float,
    df: float,
    level: float,
    margin: float = 0.0,
    margin_se: float = 0.0,
) -> float:
    """Probability that an interval at two-sided `level` (t with `df`, standard error
    estimated) lies wholly beyond `margin` when the true difference is `effect`: the mean of
    Phi((effect - margin - c * S * se) / sqrt(se^2 + margin_se^2)) over S^2 ~ chi^2_df / df
    (Wilson-Hilferty), c the t quantile, margin_se the noise of a margin that is itself
    estimated. Exact up to the integration for normal data."""
    if not math.isfinite(se) or se <= 0.0 or df < 1 or level <= 0.0:
        return 0.0
    c = t_ppf(1.0 - level / 2.0, df)
    if df > 1e7:
        scale = np.ones_like(_Z)
    else:
        k = 2.0 / (9.0 * df)
        scale = np.sqrt(np.maximum(0.0, 1.0 - k + _Z * math.sqrt(k)) ** 3)
    shift = (effect - margin - c * scale * se) / math.sqrt(se * se + margin_se * margin_se)
    return float(np.sum(_PHI * (1.0 - _norm_sf(shift))))


def shift_for_power(
    se: float,
    df: float,
    level: float,
    margin: float = 0.0,
    power: float = 0.8,
    margin_se: float = 0.0,
) -> float:
    """Smallest true difference (log scale) whose interval lies wholly beyond `margin` with
    probability `power` (power_beyond)."""
    if not math.isfinite(se) or df < 1 or level <= 0.0:
        return math.inf
    lo, hi = margin, margin + 1.0
    while power_beyond(hi, se, df, level, margin, margin_se) < power:
        hi = margin + 2.0 * (hi - margin)
        if hi > 1e6:
            return math.inf
    for _ in range(100):
        mid = (lo + hi) / 2.0
        lo, hi = (
            (mid, hi) if power_beyond(mid, se, df, level, margin, margin_se) < power else (lo, mid)
        )
        if hi - lo < 1e-9:
            break
    return hi


def detectable(sd: float, n: int, level: float, margin: float = 0.0, power: float = 0.8) -> float:
    """Smallest true difference (log scale) whose interval from n rounds of a mean with
    per-round sd `sd` lies wholly beyond `margin` with probability `power`, when the interval
    is drawn at two-sided `level`."""
    if n < 2 or not math.isfinite(sd):
        return math.inf
    return shift_for_power(sd / math.sqrt(n), n - 1, level, margin, power)


def rounds_for(
    effect: float,
    sd: float,
    alpha: float,
    first: int,
    horizon: int | None,
    margin: float = 0.0,
    power: float = 0.8,
    most: int = 1000,
) -> int | None:
    """Fewest rounds at which a true difference `effect` (log scale) is shown beyond `margin`
    with probability `power`: in a fixed design (horizon None) any n from `first` on, judged
    at alpha; in a sequential one the scheduled looks, each at its spending level. None if
    nothing up to the horizon (or `most`) will do."""
    if horizon is None:
        candidates = [(n, alpha) for n in range(max(2, first), most + 1)]
    else:
        looks = look_schedule(first, horizon)
        candidates = list(zip(looks, sequential_levels(alpha, looks, horizon), strict=True))
    for n, level in candidates:
        if detectable(sd, n, level, margin, power) <= effect:
            return n
    return None
