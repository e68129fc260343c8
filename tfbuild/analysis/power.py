"""What a session can tell, by simulation from its own data: the rounds until its leading tier
is resolved (the ETA of a running session), and the rounds a fixed design would have needed.
Each runs the decision procedure itself (trimmed means, variances moderated across the configs
with the cautious prior, the never-below-its-own rule, t quantiles at the moderated df, the
level of the look) on hundreds of sessions shaped like this one; no closed form covers all of
that. The planners draw a session's next rounds at its leaders' variances (moderated towards
what its configs share) with the shape of its own residuals, and a session that goes on keeps
the rounds it has. The tests check each figure against sessions replayed from real processes."""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from tfbuild import stats
from tfbuild.analysis.estimates import (
    AA_SPAN,
    ANSWER_SPAN,
    BASELINE_RHO,
    MIN_MARGIN,
    Setup,
    aa_rounds,
    widest,
)
from tfbuild.analysis.rounds import differences
from tfbuild.analysis.sessions import Timeline
from tfbuild.analysis.zygotes import zygote_factor

PLAN_DRAWS = 250
RESOLVED = 0.5
"""The planners give the rounds by which half of the sessions like this one are resolved."""
SHAPED = 30
"""Residuals a session needs before its own shape is drawn from (normal before)."""
SMOOTH = 0.25
"""Bandwidth of the normal noise added to each residual drawn (a smoothed bootstrap)."""
MOST_ROUNDS = 512
"""The longest fixed design the planner looks at."""


@dataclass(frozen=True)
class Forecast:
    """What the planners draw a session's next rounds from: its configs' per-round variances
    (their prior: a typical variance s2 worth df, infinite when they are alike), and the shape
    of their residuals (every compared config's rounds about its own mean, at unit variance,
    pooled), which carries the session's own tails: a slow process now and then, that trimming
    takes out once a config has ten rounds, is as likely in the rounds to come."""

    configs: int
    rounds: int
    s2: float
    df: float
    shape: tuple[float, ...]


@dataclass(frozen=True)
class Leader:
    """A config whose interval is to reach the target: the variance of one round's log ratio
    and the degrees of freedom it is known with, and its per-round values so far when the
    session goes on (none for a new session)."""

    variance: float
    df: float
    values: tuple[float, ...] = ()


@dataclass(frozen=True)
class Control:
    """The A/A control of a session that goes on, which must come within AA_SPAN margins for
    the session to stop (rules 3): its per-round log ratios so far, and their variance."""

    values: tuple[float, ...]
    variance: float


def control_fit(
    control: Control,
    looks: Sequence[tuple[int, float]],
    seed: int = 1,
    draws: int = PLAN_DRAWS,
    span: float = AA_SPAN,
    margin: float = 0.0,
    widen: float = 1.0,
) -> Iterator[np.ndarray]:
    """For each of `looks` (`more` rounds from now, its two-sided level), over simulated
    continuations of the A/A control (its rounds so far, new ones drawn at its variance):
    whether its interval, as the report draws it (its standard error widened by sqrt(`widen`)
    for zygotes), lies within `span` times the margin: `margin`, or the spread of one process
    estimated from the control itself as the report does (never below MIN_MARGIN), whichever is
    larger (rules 3 and 4: AA_SPAN times that spread; rules 6: ANSWER_SPAN times the larger)."""
    if not looks:
        return
    rng = np.random.default_rng(seed)
    observed = np.asarray(control.values, dtype=float)
    most = max(more for more, _ in looks)
    center = stats.trimmed(control.values).estimate if observed.size else 0.0
    new = center + rng.standard_normal((draws, most)) * math.sqrt(control.variance)
    series = np.concatenate([np.broadcast_to(observed, (draws, observed.size)), new], axis=1)
    for more, level in looks:
        x = series[:, : observed.size + more]
        n = x.shape[1]
        mean, spread, h = stats.trimmed_along(x)
        if level <= 0.0 or h < 2:
            yield np.zeros(draws, dtype=bool)
            continue
        se = np.sqrt(spread * n * widen) / h
        reach = np.abs(mean) + _t_quantile(1.0 - level / 2.0, np.full(draws, h - 1.0)) * se
        robust = np.sqrt(spread / stats.winsor_factor(math.floor(stats.TRIM * n) / n))
        noise = np.maximum(MIN_MARGIN, np.expm1(robust / math.sqrt(2.0)))
        yield reach <= span * np.log1p(np.maximum(margin, noise))


def _variances(
    rng: np.random.Generator, variance: float, df: float, shape: tuple[int, ...]
) -> np.ndarray:
    """True variances as the data leave them: scaled inverse chi-square with `df` around
    `variance` (all equal to it for infinite df)."""
    if math.isfinite(df):
        drawn: np.ndarray = variance * df / rng.chisquare(df, shape)
        return drawn
    return np.full(shape, variance)


def _moderated(spread: np.ndarray, dfs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """stats.moderated along the last axis (configs), for every simulated session at once."""
    s2, d0 = stats.prior_of(spread, dfs)
    return stats.pool(spread, dfs, s2[..., None], d0[..., None]), d0[..., None] + dfs


_DF_GRID = np.concatenate([np.geomspace(1.0, 2000.0, 48), [1e8]])


@functools.lru_cache(maxsize=256)
def _t_grid(q: float) -> np.ndarray:
    return np.array([stats.t_ppf(q, float(d)) for d in _DF_GRID[::-1]])


def _t_quantile(q: float, df: np.ndarray) -> np.ndarray:
    """t quantiles for many df, interpolated in 1/df between exact ones."""
    inverse = 1.0 / np.minimum(df, 1e8)
    result: np.ndarray = np.interp(inverse, 1.0 / _DF_GRID[::-1], _t_grid(q))
    return result


def resolved(
    forecast: Forecast,
    leaders: Sequence[Leader],
    looks: Sequence[tuple[int, float]],
    target: float,
    seed: int = 0,
    draws: int = PLAN_DRAWS,
    widen: float = 1.0,
) -> Iterator[np.ndarray]:
    """For each of `looks` (`more` rounds from now, its two-sided level), over simulated
    sessions: whether every leader's interval reaches ±target there. A leader keeps its rounds
    so far; its new ones, drawn once for all the looks of a session, are the forecast's
    residuals drawn with replacement (normal draws while it has too few), at the leader's
    variance. The other configs of the session, whose variances moderate with the leaders',
    are drawn the same way at variances drawn from the prior: with the rounds the session gave
    them (a session that goes on: they were put out), or with `more` rounds too (a new
    session). Yields each look's result in turn, so a caller can stop early. Every standard
    error is widened by sqrt(`widen`), as the session's zygotes widen its own."""
    if not leaders:
        yield from (np.ones(draws, dtype=bool) for _ in looks)
        return
    if not looks:
        return
    rng = np.random.default_rng(seed)
    shape = np.asarray(forecast.shape) if forecast.shape else None

    def new_rounds(variance: np.ndarray, n: int) -> np.ndarray:
        noise = rng.standard_normal((*variance.shape, n))
        if shape is not None:  # smoothed: two draws of one residual still differ
            noise = (rng.choice(shape, noise.shape) + SMOOTH * noise) / math.hypot(1.0, SMOOTH)
        drawn: np.ndarray = noise * np.sqrt(variance)[..., None]
        return drawn

    most = max(more for more, _ in looks)
    going_on = any(leader.values for leader in leaders)
    series = []
    for leader in leaders:
        observed = np.asarray(leader.values, dtype=float)
        center = stats.trimmed(leader.values).estimate if observed.size else 0.0
        new = center + new_rounds(_variances(rng, leader.variance, leader.df, (draws,)), most)
        series.append(np.concatenate([np.broadcast_to(observed, (draws, observed.size)), new], 1))
    others = max(0, max(3, forecast.configs) - len(leaders))
    variance = _variances(rng, forecast.s2, forecast.df, (draws, others))
    rest = new_rounds(variance, forecast.rounds if going_on else most)
    for more, level in looks:
        columns = [values[:, : values.shape[1] - most + more] for values in series]
        if level <= 0.0 or min(c.shape[1] for c in columns) < 2:
            yield np.zeros(draws, dtype=bool)
            continue
        spreads, dfs, sizes = [], [], []
        for n in sorted({c.shape[1] for c in columns}):  # leaders of one length at once
            same = np.stack([c for c in columns if c.shape[1] == n], axis=1)
            _, spread, h = stats.trimmed_along(same)
            spreads.append(spread)
            dfs += [h - 1.0] * same.shape[1]
            sizes += [(n, h)] * same.shape[1]
        if others > 0:
            _, spread, h = stats.trimmed_along(rest if going_on else rest[..., :more])
            spreads.append(spread)
            dfs += [h - 1.0] * others
        pooled, df = _moderated(np.concatenate(spreads, axis=1), np.array(dfs))
        n_, h_ = (np.array(x, dtype=float) for x in zip(*sizes, strict=True))
        leads = len(sizes)
        se = np.sqrt(pooled[:, :leads] * n_ * widen) / h_
        ok = np.expm1(_t_quantile(1.0 - level / 2.0, df[:, :leads]) * se) <= target
        yield ok.all(axis=1)


def rounds_to_resolve(
    forecast: Forecast,
    leaders: Sequence[Leader],
    target: float,
    looks: Sequence[tuple[int, float]],
    control: Control | None = None,
) -> int | None:
    """The median stop of the sessions like this one that go on: of `looks` (rounds from now,
    the level there), the first by which at least half of them have stopped on every leader's
    interval within ±target, and, with a `control`, the A/A control within AA_SPAN margins (a
    session stops at the first look that finds it so); None if fewer than half have by the
    last."""
    fits = control_fit(control, looks) if control is not None else None
    tiers = resolved(forecast, leaders, looks, target)
    return _median_stop(looks, (t & next(fits) if fits is not None else t for t in tiers))


def fixed_rounds(
    forecast: Forecast, leaders: Sequence[Leader], target: float, level: float, widen: float = 1.0
) -> int | None:
    """The fewest rounds a fixed design (every config every round, one look at `level`) needs
    for at least half of the sessions like this one to have every leader's interval within
    ±target; None beyond MOST_ROUNDS."""

    def enough(n: int) -> bool:
        shares = resolved(forecast, leaders, [(n, level)], target, widen=widen)
        (share,) = (float(r.mean()) for r in shares)
        return share >= RESOLVED

    return _fewest(enough)


def _fewest(enough: Callable[[int], bool]) -> int | None:
    """The fewest rounds for which `enough` holds (it holds for all more), None beyond
    MOST_ROUNDS."""
    lo, hi = 1, 2
    while not enough(hi):
        if hi >= MOST_ROUNDS:
            return None
        lo, hi = hi, min(MOST_ROUNDS, 2 * hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def forecast_of(
    setup: Setup,
    lead: Iterable[str],
    going_on: bool,
    bound: int,
    uncertain: bool = False,
) -> tuple[Forecast, list[Leader]] | None:
    """What the planners draw from, and the leading configs as they take them. The variances
    are the rounds' sample variances (the shape carries the tails). A leader's new rounds are
    drawn at its variance moderated as limma's posterior, (d0 s0^2 + d s^2) / (d0 + d), without
    the decision rules' guards and with d0 not capped: where the configs' variances differ no
    more than sampling explains (d0 infinite) every leader is drawn at the session's typical
    variance, where they differ a leader with many rounds at about its own. `bound` says where
    the spread of the log variances is taken: a running session's forecast takes it generously
    (stats.GENEROUS), because its leaders' estimates come from few rounds and a tier's forecast
    is decided by its noisiest-looking member (at the point estimate, forecasts came late on
    replayed sessions); the figure made when a session is over, whose leaders ran its most
    rounds, at the point estimate. With `uncertain`, each leader's variance carries the degrees
    of freedom it is known with (else it is taken as known)."""
    rounds = {}
    for config in setup.compared:
        benches = setup.measured.get(config) or setup.benchmarks
        d = differences(setup.logs, config, setup.reference, benches, setup.look_of(config))
        if len(d) >= 2:
            rounds[config] = np.array(d)
    if not rounds:
        return None
    variances = {c: float(d.var(ddof=1)) for c, d in rounds.items()}
    prior = stats.variance_prior(
        list(variances.values()),
        [d.size - 1.0 for d in rounds.values()],
        bound,
        capped=False,
    )
    if prior.df <= 0.0:  # too few configs to pool: their mean variance, as alike
        prior = stats.Prior(statistics.fmean(variances.values()), math.inf)
    residuals = np.concatenate(
        [(d - d.mean()) * math.sqrt(d.size / (d.size - 1.0)) for d in rounds.values()]
    )
    scale = math.sqrt(float(np.mean(residuals**2)))
    shaped = residuals.size >= SHAPED and scale > 0
    forecast = Forecast(
        configs=len(rounds),
        rounds=int(statistics.median(d.size for d in rounds.values())),
        s2=prior.s2,
        df=prior.df,
        shape=tuple(float(r) for r in residuals / scale) if shaped else (),
    )

    def variance(config: str) -> float:
        if not math.isfinite(prior.df):
            return prior.s2
        d = rounds[config].size - 1.0
        return (prior.df * prior.s2 + d * variances[config]) / (prior.df + d)

    pooled = sum(d.size - 1.0 for d in rounds.values())

    def known(config: str) -> float:
        """The degrees of freedom a leader's variance is known with: its own and the prior's
        (all the configs' together, where they are alike)."""
        d = rounds[config].size - 1.0
        return d + (prior.df if math.isfinite(prior.df) else pooled - d)

    leaders = [
        Leader(
            variance(c),
            known(c) if uncertain else math.inf,
            tuple(float(x) for x in rounds[c]) if going_on else (),
        )
        for c in lead
        if c in rounds
    ]
    return forecast, leaders


def decided(
    leaders: Sequence[Leader],
    looks: Sequence[tuple[int, float, float]],
    margin: float,
    seed: int = 0,
    draws: int = PLAN_DRAWS,
    fresh: bool = False,
    widen: float = 1.0,
    standard: bool = True,
) -> Iterator[np.ndarray]:
    """For each of `looks` (`more` rounds from now, the one-sided level of the selection family
    there, the two-sided level of the intervals against the baseline), over simulated
    continuations: whether the answer is decided there (analysis.answer.decide): every
    leader's upper bound against the baseline within `margin` (keep), or a leader shown faster
    than the baseline and known within `margin` of the fastest of them and the baseline (its
    floor, selection.floors, from the trimmed means of the paired rounds). A leader's new rounds
    against the baseline are drawn about its mean so far at its variance, correlated across
    the leaders at BASELINE_RHO (the baseline's noise is in each of them); they follow its
    rounds so far, or with `fresh` stand alone (a new session of `more` rounds). Every
    standard error is widened by sqrt(`widen`), as the session's zygotes widen its own. Without
    `standard` (rules 5): decided when any of them, the baseline included, is known within the
    margin of the fastest; with it, the leaders' estimates are first shrunk towards their mean
    (`_shrunk`), and with no leader (no config but the baseline can be the answer, the A/A
    control still waiting) the answer is decided at every look."""
    if not looks:
        return
    if standard and not leaders:  # no candidate but the baseline: keeping it is the answer
        for _ in looks:
            yield np.ones(draws, dtype=bool)
        return
    rng = np.random.default_rng(seed)
    most = max(more for more, _, _ in looks)
    shared = rng.standard_normal((draws, 1, most))
    series = []
    centers = _shrunk(leaders, widen) if standard else None
    known = min((x.df for x in leaders), default=math.inf)  # their variances, known together
    factor = _variances(rng, 1.0, known, (draws, 1))
    for k, leader in enumerate(leaders):
        observed = np.asarray(leader.values, dtype=float)
        center = stats.trimmed(leader.values).estimate if observed.size else 0.0
        if centers is not None:
            center = centers[k]
        own = rng.standard_normal((draws, most))
        noise = math.sqrt(BASELINE_RHO) * shared[:, 0] + math.sqrt(1 - BASELINE_RHO) * own
        new = center + noise * np.sqrt(leader.variance * factor)
        kept = observed[:0] if fresh else observed
        series.append(np.concatenate([np.broadcast_to(kept, (draws, kept.size)), new], 1))
    bound, scale = math.log1p(margin), math.sqrt(widen)
    for more, level, two_sided in looks:
        columns = [values[:, : values.shape[1] - most + more] for values in series]
        if level <= 0.0 or min((c.shape[1] for c in columns), default=0) < 2:
            yield np.zeros(draws, dtype=bool)
            continue
        # every pair at once: the leaders, then the baseline (whose ratio to itself is 0)
        values = np.stack([*columns, np.zeros_like(columns[0])], axis=1)
        n = values.shape[2]
        first, second = np.triu_indices(values.shape[1], k=1)
        mean, spread, h = stats.trimmed_along(values[:, first] - values[:, second])
        t = _t_quantile(1.0 - level, np.array([h - 1.0]))[0]
        reach = t * scale * np.sqrt(spread * n) / h
        low = np.full((draws, values.shape[1], values.shape[1]), np.inf)
        low[:, first, second] = mean - reach
        low[:, second, first] = -mean - reach
        if not standard:
            yield np.asarray((low.min(axis=2) >= -bound).any(axis=1))
            continue
        floor = low.min(axis=2)[:, :-1]  # each leader's; the baseline's is not an answer
        centre, own_spread, _ = stats.trimmed_along(values[:, :-1])
        half = _t_quantile(1.0 - two_sided / 2.0, np.array([h - 1.0]))[0] * scale
        half = half * np.sqrt(own_spread * n) / h
        keep = (centre + half <= bound).all(axis=1)
        use = ((centre - half > 0.0) & (floor >= -bound)).any(axis=1)
        yield np.asarray(keep | use)


def _shrunk(leaders: Sequence[Leader], widen: float) -> list[float]:
    """The leaders' estimates against the baseline, each pulled towards the baseline by what
    their noise explains of how far from it they are (empirical Bayes about 0: tau^2 = their
    mean square less their mean squared standard error): from a few rounds, configs as fast as
    the baseline look apart from it (all of them together, where the baseline's own first
    rounds were slow or fast), and a forecast that took each estimate as its truth would see
    answers coming that the configs cannot give."""
    centers = [stats.trimmed(x.values).estimate if x.values else 0.0 for x in leaders]
    if not all(x.values for x in leaders):
        return centers
    errors = [x.variance * widen / len(x.values) for x in leaders]
    tau2 = max(0.0, statistics.fmean(c * c for c in centers) - statistics.fmean(errors))
    return [c * tau2 / (tau2 + e) if tau2 + e > 0 else 0.0
            for c, e in zip(centers, errors, strict=True)]  # fmt: skip


def rounds_left(setup: Setup, lead: Sequence[str], target: float) -> int | None:
    """More rounds until the session stops on its data, the median over the sessions like this
    one going on (the planner behind a running session's ETA); None if fewer than half stop by
    the horizon. Rules 5: the answer decided at the margin `target`; before: the leading tier
    resolved to ±target (and, under rules 3 and 4, the A/A control within AA_SPAN margins)."""
    schedule, horizon = setup.design.schedule, setup.design.horizon
    if not schedule or horizon is None:
        return None
    standard = setup.rulebook.standard
    spread = stats.POINT if standard else stats.GENEROUS
    found = forecast_of(setup, lead, going_on=True, bound=spread, uncertain=standard)
    gated = setup.rulebook.aa_gate or setup.rulebook.standard
    control = _control(setup) if gated else None
    if found is None or (not found[1] and control is None):
        return None
    now = setup.timeline.last
    selection = setup.against_best(setup.split["selection"])
    ranking = setup.against_baseline(setup.split["ranking"])
    timelines = [
        (look, Timeline(schedule[: k + 1], horizon, rules=setup.rules))
        for k, look in enumerate(schedule)
        if look > now
    ]
    if setup.rulebook.answer_decides:
        looks = [
            (look - now, t.level(selection, look, True), t.level(ranking, look))
            for look, t in timelines
        ]
        widen = widest(setup, lead, now)
        stops = decided(found[1], looks, target, widen=widen, standard=standard)
        if standard and control is not None:  # and the A/A control can tell (estimates.held)
            aa_widen = (
                zygote_factor(
                    setup.logs, setup.everyone, setup.aa, (setup.baseline,), setup.benchmarks, now
                )
                if setup.aa and setup.rulebook.zygotes
                else 1.0
            )
            fits = control_fit(
                control, [(more, two) for more, _, two in looks], span=ANSWER_SPAN,
                margin=target, widen=aa_widen,
            )  # fmt: skip
            stops = (stop & fit for stop, fit in zip(stops, fits, strict=True))
        return _median_stop(looks, stops)
    plain = [(look - now, t.level(ranking, look)) for look, t in timelines]
    return rounds_to_resolve(*found, target, plain, control)


def _median_stop(
    looks: Sequence[tuple[int, float] | tuple[int, float, float]], stops: Iterator[np.ndarray]
) -> int | None:
    """The first of `looks` by which at least half of the simulated sessions have stopped."""
    stopped = None
    for (more, *_), now in zip(looks, stops, strict=True):
        stopped = now if stopped is None else stopped | now
        if float(stopped.mean()) >= RESOLVED:
            return more
    return None


def _control(setup: Setup) -> Control | None:
    """The session's A/A control as the planner continues it."""
    d = aa_rounds(setup, setup.benchmarks, setup.timeline.last)
    if len(d) < 2:
        return None
    return Control(tuple(d), statistics.variance(d))


def fixed_equivalent(setup: Setup, lead: Sequence[str], target: float) -> int | None:
    """Rounds a fixed design (every config every round, one look at the full level) would need
    for its leading tier to be resolved to ±target in at least half of the sessions like this
    one."""
    found = forecast_of(setup, lead, going_on=False, bound=stats.POINT)
    if found is None or not found[1]:
        return None
    level = setup.against_baseline(setup.split["ranking"])
    widen = widest(setup, lead, setup.timeline.last)
    return fixed_rounds(*found, target, level, widen)


def fixed_decided(setup: Setup, candidates: Sequence[str], margin: float) -> int | None:
    """The rounds a new session of a fixed design (every config every round, one look at the
    levels of the answer's families) would need for its answer to be decided at `margin` in at
    least half of the sessions like this one: `candidates` (the configs that could still be
    the fastest) drawn about their estimates at their variances, widened as the session's
    zygotes widen them; None beyond MOST_ROUNDS."""
    found = forecast_of(setup, candidates, going_on=True, bound=stats.POINT, uncertain=True)
    if found is None or not found[1]:
        return None
    leaders = found[1]
    levels = (
        setup.against_best(setup.split["selection"]),
        setup.against_baseline(setup.split["ranking"]),
    )
    widen = widest(setup, candidates, setup.timeline.last)

    def enough(n: int) -> bool:
        shares = decided(leaders, [(n, *levels)], margin, fresh=True, widen=widen)
        return float(next(shares).mean()) >= RESOLVED

    return _fewest(enough)
