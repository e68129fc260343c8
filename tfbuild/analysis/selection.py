"""Which configs could be the fastest: multiple comparisons with the best (Hsu 1984). Every pair
of configs is compared directly, paired by round, at the look where the earlier of the two
stopped; a config is out when another one is ahead of it beyond the one-sided bound of their
paired difference, the family the k - 1 comparisons with the truly fastest. From the pairs: the
claims (who is out, and behind whom), the floors (how close each config is known to be to the
fastest), the leading tier and how well it is resolved (see tfbuild.analysis.host_report for
the whole method)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tfbuild import stats
from tfbuild.analysis.estimates import Estimate, Setup, aa_rounds, widened
from tfbuild.analysis.rounds import differences


@dataclass(frozen=True)
class Out:
    """A claim: `config` cannot be the fastest; `than` is ahead of it beyond the bound."""

    config: str
    than: str
    round: int
    """Rounds the claim was made after (the look)."""
    ratio: float
    """Throughput of config over than's, paired by round."""
    upper: float
    """The one-sided upper bound of that ratio (below 1)."""


@dataclass(frozen=True)
class Pair:
    """Two configs compared directly, paired by round, at the look where the earlier of the two
    stopped: the trimmed mean of x's speed minus y's (log), and how far the one-sided bound of
    the selection family reaches from it at that look (inf when it cannot be told)."""

    x: str
    y: str
    look: int
    estimate: float
    reach: float


def pairs(setup: Setup, configs: Sequence[str], round_: int, control: bool = False) -> list[Pair]:
    """Every pair of `configs` (the baseline included, as the second of a pair), each judged
    where the earlier of the two stopped, their variances moderated together, each bound at
    the one-sided max-t level of the comparisons with the fastest config (Hsu 1984: only those
    k - 1 can wrongly put it out or wrongly leave a config within the margin of it; correlated
    at 1/2, the fastest being in each) of the selection's share of alpha, spent over the
    looks; under rules 6 each widened for zygotes. With `control`, the A/A control (the copy
    against the baseline's process alone) is judged with them (its pair's x is the copy)."""
    alpha = setup.against_best(setup.split["selection"])
    locations: dict[tuple[str, str], stats.Location] = {}
    looks: dict[tuple[str, str], int] = {}
    made: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {}
    if control and setup.aa is not None:
        key, benches = (setup.aa, setup.baseline), setup.benchmarks
        d = aa_rounds(setup, benches, round_)
        locations[key] = stats.trimmed(d)
        looks[key], made[key] = round_, ((setup.baseline,), benches)
    for i, a in enumerate(configs):
        for b in configs[i + 1 :]:
            x, y = (b, a) if a == setup.baseline else (a, b)
            look = min(setup.look_of(x), setup.look_of(y), round_)
            pair = setup.pair(x, y)
            if pair:
                d = differences(setup.logs, x, pair[0], pair[1], look)
                locations[(x, y)] = stats.trimmed(d)
                looks[(x, y)] = look
                made[(x, y)] = pair
    found = []
    for (x, y), raw in setup.moderated(locations).items():
        look = looks[(x, y)]
        loc = widened(setup, raw, x, made[(x, y)][0], made[(x, y)][1], look)
        level = setup.timeline.level(alpha, look, one_sided=True)
        if level <= 0.0 or loc.df < 1 or not math.isfinite(loc.se):
            reach = math.inf
        else:
            reach = stats.t_ppf(1.0 - level, loc.df) * loc.se
        found.append(Pair(x, y, look, loc.estimate, reach))
    return found


@dataclass(frozen=True)
class Culled:
    """The pairs of a look and what its A/A control lets them claim (rules 6)."""

    found: list[Pair]
    beyond: float | None
    """How far apart, in log, the A/A control judged with the pairs shows two processes of one
    build can land (its estimate's size and its reach): a config is put out only by a wider
    gap (infinite while it has no interval; None under earlier rules, or with no A/A copy)."""

    @property
    def claims(self) -> list[Out]:
        return claims_of(self.found, self.beyond)


def selection(setup: Setup, configs: Sequence[str], round_: int) -> Culled:
    """The pairs of `configs` at a look, and what its A/A control, judged with them, lets
    them claim (rules 6): a config is put out only by a wider gap than two processes of one
    build can show at that precision, so nothing while the control cannot tell the baseline
    from itself."""
    if not setup.rulebook.standard or setup.aa is None:
        return Culled(pairs(setup, configs, round_), None)
    found = pairs(setup, configs, round_, control=True)
    control = next((p for p in found if p.x == setup.aa), None)
    found = [p for p in found if p.x != setup.aa]
    if control is None or not math.isfinite(control.reach):
        return Culled(found, math.inf)
    return Culled(found, abs(control.estimate) + control.reach)


def out_claims(setup: Setup, configs: Sequence[str], round_: int) -> list[Out]:
    """Which of `configs` (the baseline included) cannot be the fastest: A is out when another
    config B is faster, the one-sided bound of B/A (paired by round) above 1. Multiple
    comparisons with the best (Hsu 1984; Gupta's subset selection): only the comparisons of
    the others with the truly fastest config can wrongly put it out, so the family is those
    k - 1 (see `pairs`). For each A the strongest evidence comes first."""
    return claims_of(pairs(setup, configs, round_))


def claims_of(found: Sequence[Pair], beyond: float | None = None) -> list[Out]:
    """The outs the pairs show (out_claims); with `beyond` (rules 6: how far apart, in log,
    the A/A control shows two processes of one build can land at the pairs' precision), only
    those that put a config out by a wider gap than that."""
    claims = []
    for p in found:
        if not math.isfinite(p.reach) or (beyond is not None and abs(p.estimate) <= beyond):
            continue
        if p.estimate + p.reach < 0.0:
            claims.append(
                Out(p.x, p.y, p.look, stats.exp(p.estimate), stats.exp(p.estimate + p.reach))
            )
        elif p.estimate - p.reach > 0.0:
            claims.append(
                Out(p.y, p.x, p.look, stats.exp(-p.estimate), stats.exp(p.reach - p.estimate))
            )
    return sorted(claims, key=lambda c: (c.config, c.upper))


def floors(found: Sequence[Pair], configs: Sequence[str]) -> dict[str, float]:
    """For each of `configs`, the lower bound of its throughput over the fastest of the others
    (as a ratio; 0 when a pair cannot be told, inf for a config alone): Hsu's multiple
    comparisons with the best. With the selection family's probability, at every look
    together, each config at or above 1 / (1 + m) of the fastest by this bound is within the
    margin m of the truly fastest config, whatever the other configs are: the truly fastest
    one is never put out, and each of these bounds holds against it. The bounds hold for
    every margin at once."""
    low: dict[str, float] = {c: math.inf for c in configs}
    for p in found:
        if p.x in low and p.y in low:
            low[p.x] = min(low[p.x], p.estimate - p.reach)
            low[p.y] = min(low[p.y], -p.estimate - p.reach)
    return {c: stats.exp(v) for c, v in low.items()}


def candidates(
    found: Sequence[Pair], whole: Sequence[str], beyond: float | None = None
) -> dict[str, float]:
    """The floors of the configs that can be the answer: those that measured the whole suite
    and that no other such config puts out (a config that skipped a benchmark puts out
    nothing here: which of the whole ones is fastest is the question; `beyond` as
    claims_of's)."""
    among = [p for p in found if p.x in whole and p.y in whole]
    return floors(among, leading(whole, claims_of(among, beyond)))


def leading(configs: Iterable[str], claims: Iterable[Out]) -> list[str]:
    out = {c.config for c in claims}
    return [c for c in configs if c not in out]


def resolution(lead: Iterable[str], estimates: Mapping[str, Estimate]) -> float:
    widths = [estimates[c].half_width if c in estimates else math.inf for c in lead]
    return max(widths, default=0.0)


def tiers(configs: Sequence[str], claims: Iterable[Out]) -> list[list[str]]:
    """Tier 1: the configs that could be the fastest (never put out); tier 2: the rest."""
    out = {c.config for c in claims}
    tiers = [[c for c in configs if c not in out], [c for c in configs if c in out]]
    return [t for t in tiers if t]
