"""The smallest difference a session calls faster or slower with 80 % power, by simulation from
the session's own noise: the whole decision procedure (trimmed means, variances moderated
across the configs with the cautious prior, the never-below-its-own rule, t quantiles at the
moderated df, a margin that is itself estimated from the A/A control) run on thousands of
simulated sessions shaped like this one, each config's noise drawn from the spread of noise the
session's configs show (Smyth's model with the session's own prior). No closed form covers all
of that; the tests check the result against sessions replayed from real processes."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from tfbuild import stats
from tfbuild.analysis.estimates import SPLIT, Estimate, Setup, ranking_locations
from tfbuild.analysis.rounds import Rounds

DRAWS = 4000
POWER = 0.8


@dataclass(frozen=True)
class Noise:
    """What a session says about its noise: per-round variance prior of its configs'
    comparisons with the baseline (point estimate), and the A/A control's robust sd."""

    rounds: int
    configs: int
    s2: float
    """Typical winsorized variance of one round's log ratio."""
    df: float
    """How alike the configs' variances are (inf: all alike)."""
    aa_sd: float | None
    """Robust sd of the A/A's per-round log ratio (None: the margin is fixed)."""


def _digamma(x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    x = x.copy()
    for _ in range(6):
        small = x < 6.0
        out -= np.where(small, 1.0 / x, 0.0)
        x = np.where(small, x + 1.0, x)
    f = 1.0 / (x * x)
    series = f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f / 240)))
    result: np.ndarray = out + np.log(x) - 0.5 / x - series
    return result


def _trigamma(x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    x = x.copy()
    for _ in range(6):
        small = x < 6.0
        out += np.where(small, 1.0 / (x * x), 0.0)
        x = np.where(small, x + 1.0, x)
    f = 1.0 / (x * x)
    result: np.ndarray = (
        out + 1.0 / x + f / 2.0 + f / x * (1 / 6 - f * (1 / 30 - f * (1 / 42 - f / 30)))
    )
    return result


def _trigamma_inverse(y: np.ndarray) -> np.ndarray:
    lo, hi = np.full_like(y, 1e-8), np.full_like(y, 1e8)
    for _ in range(80):
        mid = np.sqrt(lo * hi)
        above = _trigamma(mid) > y
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    result: np.ndarray = np.sqrt(lo * hi)
    return result


def _trimmed(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Along the last axis: Yuen's trimmed mean, winsorized variance, and values kept."""
    n = x.shape[-1]
    xs = np.sort(x, axis=-1)
    g = math.floor(stats.TRIM * n)
    h = n - 2 * g
    mean = xs[..., g : n - g].mean(axis=-1)
    if g:
        xs[..., :g] = xs[..., g : g + 1]
        xs[..., n - g :] = xs[..., n - g - 1 : n - g]
    return mean, xs.var(axis=-1, ddof=1), h


def _moderated(spread: np.ndarray, df: int) -> tuple[np.ndarray, np.ndarray]:
    """stats.moderated along the last axis (configs), for every simulated session at once."""
    k = spread.shape[-1]
    e = np.log(spread) - stats.digamma(df / 2.0) + math.log(df / 2.0)
    widen = 1.0 + 2.0 * math.sqrt(2.0 / (k - 1))
    excess = e.var(axis=-1, ddof=1) * widen - stats.trigamma(df / 2.0)
    d0 = np.full(excess.shape, math.inf)
    positive = excess > 0
    if positive.any():
        d0[positive] = 2.0 * _trigamma_inverse(excess[positive])
    d0 = np.minimum(d0, float(k * df))
    finite = np.isfinite(d0)
    half = np.where(finite, d0, 1.0) / 2.0
    s2 = np.exp(e.mean(axis=-1) + np.where(finite, _digamma(half) - np.log(half), 0.0))
    pooled = np.where(
        finite[..., None],
        (np.where(finite, d0, 0.0)[..., None] * s2[..., None] + df * spread)
        / (np.where(finite, d0, 0.0)[..., None] + df),
        s2[..., None],
    )
    return np.maximum(spread, pooled), d0 + df


def _t_quantile(q: float, df: np.ndarray) -> np.ndarray:
    """t quantiles for many df, interpolated in 1/df between exact ones."""
    grid = np.concatenate([np.geomspace(1.0, 2000.0, 48), [1e8]])
    values = np.array([stats.t_ppf(q, float(d)) for d in grid])
    result: np.ndarray = np.interp(1.0 / np.minimum(df, 1e8), (1.0 / grid)[::-1], values[::-1])
    return result


def detectable_shift(noise: Noise, level: float, margin: float, seed: int = 0) -> float:
    """The smallest true difference (log scale) called faster (or slower) with 80 % power: the
    80th percentile over simulated sessions of the shift that puts the whole interval of one
    config beyond the margin. `margin` (a fraction) is the fixed margin, or the floor under
    the one the A/A control estimates."""
    n, k = noise.rounds, max(3, noise.configs)
    if n < 2 or level <= 0.0 or not (noise.s2 > 0 and math.isfinite(noise.s2)):
        return math.inf
    rng = np.random.default_rng(seed)
    g = math.floor(stats.TRIM * n)
    typical = noise.s2 / stats.winsor_factor(g / n)
    if math.isfinite(noise.df):
        variance = typical * noise.df / rng.chisquare(noise.df, (DRAWS, k))
    else:
        variance = np.full((DRAWS, k), typical)
    draws = rng.standard_normal((DRAWS, k, n)) * np.sqrt(variance)[..., None]
    mean, spread, h = _trimmed(draws)
    if h < 2:
        return math.inf
    pooled, df = _moderated(spread, h - 1)
    se = np.sqrt(pooled[:, 0] * n) / h
    critical = _t_quantile(1.0 - level / 2.0, df)
    margins = np.full(DRAWS, margin)
    if noise.aa_sd is not None and math.isfinite(noise.aa_sd):
        aa = rng.standard_normal((DRAWS, n)) * noise.aa_sd
        _, aa_spread, _ = _trimmed(aa)
        robust = np.sqrt(aa_spread / stats.winsor_factor(g / n))
        margins = np.maximum(margin, np.expm1(robust / math.sqrt(2.0)))
    needed = np.log1p(margins) + critical * se - mean[:, 0]
    return float(np.quantile(needed, POWER))


def session_noise(
    setup: Setup, logs: Rounds, aa: Estimate | None, given_margin: bool
) -> tuple[Noise, float] | None:
    """What the detectable difference is simulated from: the noise of the configs'
    comparisons with the baseline (the variance prior's point estimate) and of the A/A
    control, and the level of the last look."""
    raw = [x for x in ranking_locations(setup, logs).values() if x.n >= 2]
    if not raw:
        return None
    prior = stats.variance_prior([x.spread for x in raw], [x.df for x in raw], cautious=False)
    if prior.df <= 0.0:  # too few configs to pool: their own mean variance, as alike
        spreads = [x.spread for x in raw if math.isfinite(x.spread)]
        prior = stats.Prior(statistics.fmean(spreads), math.inf) if spreads else prior
    noise = Noise(
        rounds=int(statistics.median(x.n for x in raw)),
        configs=len(raw),
        s2=prior.s2,
        df=prior.df,
        aa_sd=None if given_margin or aa is None else aa.sd,
    )
    level = setup.timeline.level(setup.against_baseline(SPLIT["ranking"]), setup.timeline.last)
    return noise, level
