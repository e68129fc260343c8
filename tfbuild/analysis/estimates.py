"""Estimates and the claims made from them: each config against the baseline (a trimmed-mean
interval of per-round log ratios, with a verdict against a practical margin), which configs
cannot be the fastest (multiple comparisons with the best), the tiers, and when each comparison
is judged under alpha spending (see tfbuild.analysis.host_report for the whole method)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from tfbuild import stats
from tfbuild.analysis.rounds import Rounds, differences
from tfbuild.analysis.sessions import Timeline
from tfbuild.analysis.zygotes import zygote_factor
from tfbuild.results.model import Design, Results
from tfbuild.results.rules import DECISIONS, Rules, rules

K = TypeVar("K")

OVERALL = "overall"
ALPHA = 0.05
MIN_MARGIN = 0.02
BASELINE_RHO = 1.0 / 3.0
"""Correlation of two configs' comparisons with the baseline: each config is one process a
round, the baseline the mean of two, so var(x - b) = 1.5 s^2 and cov = 0.5 s^2."""
BEST_RHO = 0.5
"""Correlation of the fastest config's comparisons with two others: it is in both."""
AA_SCALE = math.sqrt(1.5 / 2.0)
"""The A/A control's per-round variance (one process against another: 2 s^2) is 4/3 of a
config's against the baseline (one process against the mean of two: 1.5 s^2); scaled by this
before it is moderated with theirs, and back after, it is judged as one of them."""
ANSWER_SPAN = 3.0
"""Rules 6: the A/A control lets a session stop and answer once its interval lies within this
many times the margin (or the spread of one process, where larger) either way."""
AA_SPAN = 2.0
"""The A/A control (the baseline against its copy, the same build) makes the data unfit to
decide when its interval reaches beyond this many margins: two processes of one build could
then look further apart than the differences the verdicts are about."""


@dataclass(frozen=True)
class Estimate:
    """A config relative to a reference, on one benchmark or overall (or a seed experiment)."""

    config: str
    benchmark: str
    ratio: float
    """Throughput ratio, config / reference (trimmed mean of per-round log ratios): above 1 is
    faster."""
    low: float
    high: float
    """The simultaneous interval of the ratio."""
    level: float
    """Two-sided level the interval was drawn at (after multiplicity and alpha spending)."""
    p: float
    """Unadjusted two-sided p-value of 'no difference', for reference."""
    rounds: int
    sd: float
    """Robust sd of one round's log ratio."""
    margin: float
    verdict: str
    """faster, slower, equivalent, undecided (or baseline)."""
    se: float = math.nan
    """Standard error of the log ratio (moderated)."""
    df: float = math.nan
    """Its degrees of freedom."""

    @property
    def half_width(self) -> float:
        """How far the interval reaches from the estimate, as a fraction of it."""
        if not (self.ratio > 0 and math.isfinite(self.low) and math.isfinite(self.high)):
            return math.inf
        return max(self.high / self.ratio - 1.0, 1.0 - self.low / self.ratio)


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


def verdict(low: float, high: float, margin: float) -> str:
    """From an interval of the log ratio and a margin (fraction)."""
    m = math.log1p(margin)
    if low > m:
        return "faster"
    if high < -m:
        return "slower"
    if low > -m and high < m:
        return "equivalent"
    return "undecided"


def estimate(
    config: str, benchmark: str, logs: Sequence[float], level: float, margin: float
) -> Estimate | None:
    """The trimmed-mean interval of per-round log ratios at two-sided `level`, with a verdict;
    None before the first look (no level to judge at)."""
    if len(logs) < 2:
        return None
    return judged(config, benchmark, stats.trimmed(logs), level, margin)


def judged(
    config: str, benchmark: str, loc: stats.Location, level: float, margin: float
) -> Estimate | None:
    """The interval of a location at two-sided `level`, with a verdict; None before the first
    look (no level to judge at)."""
    if level <= 0.0 or loc.n < 2:
        return None
    low, high = loc.interval(1.0 - level)
    return Estimate(
        config=config,
        benchmark=benchmark,
        ratio=stats.exp(loc.estimate),
        low=stats.exp(low),
        high=stats.exp(high),
        level=level,
        p=loc.p_value(),
        rounds=loc.n,
        sd=loc.sd,
        margin=margin,
        verdict=verdict(low, high, margin),
        se=loc.se,
        df=loc.df,
    )


@dataclass(frozen=True)
class Setup:
    """What every look and the final analysis share."""

    baseline: str
    aa: str | None
    benchmarks: tuple[str, ...]
    compared: tuple[str, ...]
    """Every config compared with the baseline (the A/A copy and the baseline excluded)."""
    design: Design
    measured: Mapping[str, tuple[str, ...]]
    """config -> the benchmarks its overall level is taken over (those it has results for)."""
    family: int
    """Comparisons in the ranking family: every config that was to run, and the A/A check
    (fixed before the first round, so a look and its replay count the same)."""
    timeline: Timeline
    rivals: int = 1
    """k - 1 for the k configs that were to run, the baseline included: the comparisons with
    the fastest one that the selection family covers."""
    at: Mapping[str, int] = field(default_factory=dict)
    """config -> the look its estimate is taken at, when not the last one (a config stopped
    early is judged where it stopped)."""

    @property
    def reference(self) -> tuple[str, ...]:
        return (self.baseline, self.aa) if self.aa else (self.baseline,)

    def whole(self, config: str) -> bool:
        """Whether a config measured every benchmark the baseline did: only such a config can be
        the one to use (a crash on one benchmark is not made up by speed on the others)."""
        return set(self.measured.get(config, ())) >= set(self.measured.get(self.baseline, ()))

    def look_of(self, config: str) -> int:
        return self.at.get(config, self.timeline.last)

    def level(self, alpha: float, config: str) -> float:
        return self.timeline.level(alpha, self.look_of(config))

    @property
    def rules(self) -> int:
        """The version of the decision rules (results.model.DECISIONS): a sequential session
        is judged by the rules its looks were decided by, a fixed one by today's."""
        return self.design.decisions if self.design.sequential else DECISIONS

    @property
    def rulebook(self) -> Rules:
        """What those rules do (results.rules.RULES)."""
        return rules(self.rules)

    @property
    def split(self) -> Mapping[str, float]:
        """How the report's error is split between its families, by these rules."""
        return self.rulebook.split

    @property
    def everyone(self) -> tuple[str, ...]:
        """Every config of the session: the compared ones, the baseline and its A/A copy."""
        return (*self.compared, *self.reference)

    def against_baseline(self, alpha: float) -> float:
        """The per-comparison level of a family of comparisons with the baseline that errs
        with probability alpha: the configs' comparisons share the baseline's noise, which
        correlates them (at 1/3: a config's one process against the mean of the baseline's
        two), and the A/A check shares none of it (stats.maxt_level)."""
        if not self.rulebook.maxt:
            return alpha / self.family
        aa = 1 if self.aa else 0
        return stats.maxt_level(alpha, self.family - aa, BASELINE_RHO, independent=aa)

    def against_best(self, alpha: float) -> float:
        """The one-sided per-comparison level of the comparisons with the fastest config."""
        if not self.rulebook.maxt:
            return alpha / self.rivals
        return stats.maxt_level(alpha, self.rivals, BEST_RHO, one_sided=True)

    def moderated(self, locations: Mapping[K, stats.Location]) -> dict[K, stats.Location]:
        """Locations of comparisons made together, each with its variance moderated towards
        what they share (stats.moderated), keyed as given; as they are under rules 1."""
        keys = [k for k, loc in locations.items() if loc.n >= 2]
        found = [locations[k] for k in keys]
        return dict(zip(keys, stats.moderated(found) if self.rulebook.maxt else found, strict=True))


def widening(setup: Setup, logs: Rounds, config: str, look: int) -> float:
    """The variance factor a config's comparison with the baseline, overall, is widened by at
    `look` (1 under rules before 6)."""
    if not setup.rulebook.zygotes:
        return 1.0
    benches = setup.measured.get(config) or setup.benchmarks
    return zygote_factor(logs, setup.everyone, config, setup.reference, benches, look)


def widened(
    setup: Setup,
    logs: Rounds,
    loc: stats.Location,
    config: str,
    reference: Sequence[str],
    benchmarks: Sequence[str],
    look: int,
) -> stats.Location:
    """A comparison of `config` with `reference` (the mean of its configs; none: a contrast
    within the config) on `benchmarks` at `look`, its standard error widened by the design
    effect of the processes one zygote forked (rules 6: zygotes.zygote_factor), and its degrees
    of freedom shrunk by it (an effective sample size, Kish 1965)."""
    if not math.isfinite(loc.se) or not setup.rulebook.zygotes:
        return loc
    factor = zygote_factor(logs, setup.everyone, config, reference, benchmarks, look)
    if factor <= 1.0:
        return loc
    return replace(loc, se=loc.se * math.sqrt(factor), df=max(1.0, loc.df / factor))


def ranking_locations(setup: Setup, logs: Rounds) -> dict[str, stats.Location]:
    """Every config against the baseline, overall, each at its own look: the trimmed mean of
    the per-round log ratios, before moderation."""
    locations = {}
    for config in setup.compared:
        benches = setup.measured.get(config) or setup.benchmarks
        d = differences(logs, config, setup.reference, benches, setup.look_of(config))
        locations[config] = stats.trimmed(d)
    return locations


def against_baseline(
    setup: Setup,
    logs: Rounds,
    locations: Mapping[str, stats.Location],
    benchmarks: Sequence[str] | None,
    alpha: float,
    margin: float,
) -> tuple[dict[str, Estimate], Estimate | None]:
    """The configs' comparisons with the baseline (`locations`, on `benchmarks`, or overall over
    each one's measured benchmarks for None), judged together at the per-comparison level of a
    family that errs with `alpha`: variances moderated across them, widened for zygotes, each
    at its own look; and the A/A control of the same benchmarks, the copy against the
    baseline's process alone, in the same family (rules 6: moderated with them, so that it is
    judged as they are; before: on its own rounds, estimates.aa_control)."""
    name = OVERALL if benchmarks is None else benchmarks[0]
    benches = setup.benchmarks if benchmarks is None else benchmarks
    level = setup.against_baseline(alpha)
    joint = dict(locations)
    if setup.aa is not None and setup.rulebook.standard:
        control = stats.trimmed(aa_rounds(setup, logs, benches, setup.timeline.last))
        joint[setup.aa] = replace(control, se=control.se * AA_SCALE)  # as exchangeable
    moderated = setup.moderated(joint)
    if setup.aa in moderated:
        control = moderated[setup.aa]
        moderated[setup.aa] = replace(control, se=control.se / AA_SCALE)
    out: dict[str, Estimate] = {}
    for config, raw in moderated.items():
        own = setup.measured.get(config) or setup.benchmarks
        reference = (setup.baseline,) if config == setup.aa else setup.reference
        on = own if benchmarks is None else benches
        loc = widened(setup, logs, raw, config, reference, on, setup.look_of(config))
        e = judged(config, name, loc, setup.level(level, config), margin)
        if e is not None:
            out[config] = e
    aa = out.pop(setup.aa) if setup.aa in out else None
    if setup.aa is not None and not setup.rulebook.standard:
        aa = aa_control(setup, logs, name, benches, level, margin)
    return out, aa


def ranking_estimates(
    setup: Setup, logs: Rounds, margin: float
) -> tuple[dict[str, Estimate], Estimate | None]:
    """Every config against the baseline, overall, each at its own look: Dunnett-type levels
    over the family, variances moderated across the configs; and the A/A control overall, as
    the family judges it (estimates.against_baseline)."""
    alpha = setup.split["ranking"]
    return against_baseline(setup, logs, ranking_locations(setup, logs), None, alpha, margin)


@dataclass(frozen=True)
class Pair:
    """Two configs compared directly, paired by round, at the look where the earlier of the two
    stopped: the trimmed mean of x's level minus y's (log), and how far the one-sided bound of
    the selection family reaches from it at that look (inf when it cannot be told)."""

    x: str
    y: str
    look: int
    estimate: float
    reach: float


def pairs(
    setup: Setup, logs: Rounds, configs: Sequence[str], round_: int, control: bool = False
) -> list[Pair]:
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
        locations[key] = stats.trimmed(aa_rounds(setup, logs, benches, round_))
        looks[key], made[key] = round_, ((setup.baseline,), benches)
    for i, a in enumerate(configs):
        for b in configs[i + 1 :]:
            x, y = (b, a) if a == setup.baseline else (a, b)
            look = min(setup.look_of(x), setup.look_of(y), round_)
            pair = _pair(setup, x, y)
            if pair:
                locations[(x, y)] = stats.trimmed(differences(logs, x, pair[0], pair[1], look))
                looks[(x, y)] = look
                made[(x, y)] = pair
    found = []
    for (x, y), raw in setup.moderated(locations).items():
        look = looks[(x, y)]
        loc = widened(setup, logs, raw, x, made[(x, y)][0], made[(x, y)][1], look)
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


def selection(setup: Setup, logs: Rounds, configs: Sequence[str], round_: int) -> Culled:
    """The pairs of `configs` at a look, and what its A/A control, judged with them, lets
    them claim (rules 6): a config is put out only by a wider gap than two processes of one
    build can show at that precision, so nothing while the control cannot tell the baseline
    from itself."""
    if not setup.rulebook.standard or setup.aa is None:
        return Culled(pairs(setup, logs, configs, round_), None)
    found = pairs(setup, logs, configs, round_, control=True)
    control = next((p for p in found if p.x == setup.aa), None)
    found = [p for p in found if p.x != setup.aa]
    if control is None or not math.isfinite(control.reach):
        return Culled(found, math.inf)
    return Culled(found, abs(control.estimate) + control.reach)


def out_claims(setup: Setup, logs: Rounds, configs: Sequence[str], round_: int) -> list[Out]:
    """Which of `configs` (the baseline included) cannot be the fastest: A is out when another
    config B is faster, the one-sided bound of B/A (paired by round) above 1. Multiple
    comparisons with the best (Hsu 1984; Gupta's subset selection): only the comparisons of
    the others with the truly fastest config can wrongly put it out, so the family is those
    k - 1 (see `pairs`). For each A the strongest evidence comes first."""
    return claims_of(pairs(setup, logs, configs, round_))


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


def _pair(setup: Setup, a: str, b: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The reference for a - b (the baseline's two processes averaged) and the benchmarks both
    measured."""
    if a == setup.baseline:
        raise ValueError("the baseline is compared as the second of a pair")
    reference = setup.reference if b == setup.baseline else (b,)
    benches = tuple(
        x for x in setup.measured.get(a, ()) if x in setup.measured.get(b, setup.benchmarks)
    )
    return (reference, benches) if benches else None


def leading(configs: Iterable[str], claims: Iterable[Out]) -> list[str]:
    out = {c.config for c in claims}
    return [c for c in configs if c not in out]


def resolution(lead: Iterable[str], estimates: Mapping[str, Estimate]) -> float:
    widths = [estimates[c].half_width if c in estimates else math.inf for c in lead]
    return max(widths, default=0.0)


def aa_control(
    setup: Setup, logs: Rounds, name: str, benchmarks: Sequence[str], alpha: float, margin: float
) -> Estimate | None:
    """The A/A control on `benchmarks` (named `name`): the baseline's copy against the baseline
    process alone, per round, up to the setup's last look, at the per-comparison level of
    `alpha` spent by then; None without a copy or before two rounds."""
    if setup.aa is None:
        return None
    d = aa_rounds(setup, logs, benchmarks, setup.timeline.last)
    return estimate(setup.aa, name, d, setup.level(alpha, setup.aa), margin)


def aa_rounds(
    setup: Setup, logs: Rounds, benchmarks: Sequence[str], upto: int | None
) -> list[float]:
    """The A/A control's per-round log ratios (the copy against the baseline process alone),
    before round `upto`; none without a copy."""
    if setup.aa is None:
        return []
    return differences(logs, setup.aa, (setup.baseline,), benchmarks, upto)


def held(aa: Estimate | None, span: float) -> bool:
    """Rules 6: whether the A/A control cannot tell the baseline from itself yet: its
    interval reaches beyond ANSWER_SPAN times `span` either way (the margin, or the spread of
    one process where the machine is noisier), or it has none. The session neither stops nor
    answers then."""
    return aa is None or aa_too_wide(aa, span, ANSWER_SPAN)


def aa_too_wide(aa: Estimate | None, margin: float, span: float = 0.0) -> bool:
    """Whether the A/A control's interval reaches beyond `span` (AA_SPAN by default) margins
    either way."""
    if aa is None or not (aa.low > 0 and math.isfinite(aa.high)):
        return aa is not None
    reach = max(math.log(aa.high), -math.log(aa.low))
    return reach > (span or AA_SPAN) * math.log1p(margin)


def indifference(setup: Setup, spread: float) -> float:
    """The margin within which a config counts as the fastest, the design's (Design.margin):
    under rules 6 exactly that (noise changes the
    rounds an answer takes, never its question); under rules 5 never below `spread`, the spread
    of one process this machine surely has (noise_margin's lower bound)."""
    wanted = setup.design.margin
    return wanted if setup.rulebook.standard else max(wanted, spread)


def noise_margin(
    setup: Setup,
    logs: Rounds,
    benchmarks: Sequence[str],
    upto: int | None = None,
    lower: bool = False,
) -> float:
    """The spread of one process of the same build: the robust sd of the A/A copy's per-round
    log ratio to the baseline, over sqrt(2) (with `lower`, its 90 % lower confidence bound: the
    spread the machine surely has, which a few rounds can overstate); never below 2 %."""
    if setup.aa is None:
        return MIN_MARGIN
    d = aa_rounds(setup, logs, benchmarks, upto)
    loc = stats.trimmed(d)
    sd = stats.sd_lower(loc.sd, loc.df) if lower else loc.sd
    spread = sd / math.sqrt(2.0) if len(d) >= 2 else math.nan
    return max(MIN_MARGIN, stats.expm1(spread)) if math.isfinite(spread) else MIN_MARGIN


def tiers(configs: Sequence[str], claims: Iterable[Out]) -> list[list[str]]:
    """Tier 1: the configs that could be the fastest (never put out); tier 2: the rest."""
    out = {c.config for c in claims}
    tiers = [[c for c in configs if c not in out], [c for c in configs if c in out]]
    return [t for t in tiers if t]


def make_setup(
    results: Results,
    keys: Sequence[str],
    logs: Rounds,
    design: Design,
    aa: str | None,
    timeline: Timeline,
    at: Mapping[str, int] | None = None,
) -> Setup:
    """The comparison setup for configs `keys` (baseline and A/A copy excluded) of a session,
    judged at the looks of `timeline`."""
    baseline = results.baseline.config
    benchmarks = results.suite.benchmarks
    measured = {c: tuple(b for b in benchmarks if logs.get((c, b))) for c in [*keys, baseline]}
    compared = tuple(c for c in keys if measured[c])
    for c in compared:  # a partly measured config is compared over what both measured
        measured[c] = tuple(b for b in measured[c] if b in measured[baseline])
    family = len(keys) + (1 if aa else 0)
    return Setup(
        baseline,
        aa,
        benchmarks,
        compared,
        design,
        measured,
        max(1, family),
        timeline,
        max(1, len(keys)),
        at or {},
    )
