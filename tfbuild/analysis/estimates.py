"""Each config against the baseline: the setup every comparison of a session shares (its
per-round speeds, which configs are compared on which benchmarks, at which looks), a
trimmed-mean interval of per-round log ratios with a verdict against a practical margin, the
families of such comparisons (overall, per benchmark, the seed experiments), the A/A control
and the spread of one process it shows, and when each comparison is judged under alpha
spending (see tfbuild.analysis.host_report for the whole method; which configs could be the
fastest is analysis.selection)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from tfbuild import stats
from tfbuild.analysis.rounds import Rounds, differences
from tfbuild.analysis.sessions import Timeline
from tfbuild.analysis.zygotes import ZygoteFigures, resemblance, zygote_factor
from tfbuild.config.suite import CONTRASTS
from tfbuild.results.model import Design, Results
from tfbuild.results.rules import CURRENT_RULES, Rules, rules

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


@dataclass(frozen=True, kw_only=True)
class Setup:
    """What every look and the final analysis share: the session's per-round speeds, and
    which configs are compared, on which benchmarks, at which looks."""

    logs: Rounds
    """The per-round log throughput and speeds every comparison is made on."""
    baseline: str
    aa: str | None
    benchmarks: tuple[str, ...]
    compared: tuple[str, ...]
    """Every config compared with the baseline (the A/A copy and the baseline excluded)."""
    design: Design
    measured: Mapping[str, tuple[str, ...]]
    """config -> the benchmarks its overall speed is taken over (those it has results for)."""
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

    def pair(self, a: str, b: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """What `a` minus `b` is taken over: the reference (the baseline's two processes
        averaged, where `b` is the baseline) and the benchmarks both measured; None when they
        measured none in common."""
        if a == self.baseline:
            raise ValueError("the baseline is compared as the second of a pair")
        reference = self.reference if b == self.baseline else (b,)
        benches = tuple(
            x for x in self.measured.get(a, ()) if x in self.measured.get(b, self.benchmarks)
        )
        return (reference, benches) if benches else None

    def look_of(self, config: str) -> int:
        return self.at.get(config, self.timeline.last)

    def level(self, alpha: float, config: str) -> float:
        return self.timeline.level(alpha, self.look_of(config))

    @property
    def rules(self) -> int:
        """The version of the decision rules (results.model.CURRENT_RULES): a sequential session
        is judged by the rules its looks were decided by, a fixed one by today's."""
        return self.design.rules if self.design.sequential else CURRENT_RULES

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


def widening(setup: Setup, config: str, look: int) -> float:
    """The variance factor a config's comparison with the baseline, overall, is widened by at
    `look` (1 under rules before 6)."""
    if not setup.rulebook.zygotes:
        return 1.0
    benches = setup.measured.get(config) or setup.benchmarks
    return zygote_factor(setup.logs, setup.everyone, config, setup.reference, benches, look)


def widest(setup: Setup, configs: Iterable[str], look: int | None = None) -> float:
    """The most the session's zygotes widen the variance of one of `configs`' comparisons with
    the baseline, overall, at `look` (None: each at its own)."""
    return max(
        (widening(setup, c, setup.look_of(c) if look is None else look) for c in configs),
        default=1.0,
    )


def widened(
    setup: Setup,
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
    factor = zygote_factor(setup.logs, setup.everyone, config, reference, benchmarks, look)
    if factor <= 1.0:
        return loc
    return replace(loc, se=loc.se * math.sqrt(factor), df=max(1.0, loc.df / factor))


def zygote_figures(setup: Setup, configs: Iterable[str]) -> ZygoteFigures | None:
    """The session's zygotes and the resemblance of their children, when it forked any, with
    the most any of `configs`' comparisons with the baseline was widened by."""
    served: dict[str, int] = defaultdict(int)
    for key, zygote in setup.logs.zygotes.items():
        if key[0] in setup.everyone:
            served[zygote] += 1
    if not served:
        return None
    most = widest(setup, configs)
    found = resemblance(setup.logs, setup.everyone, setup.benchmarks, setup.timeline.last)
    return ZygoteFigures(found, math.sqrt(most), max(served.values()), len(served))


def locations_of(setup: Setup, bench: str | None = None) -> dict[str, stats.Location]:
    """Every config against the baseline, each at its own look, overall (over the benchmarks
    it measured) or on `bench` (the configs that measured it): the trimmed mean of the
    per-round log ratios, before moderation."""
    found = {}
    for config in setup.compared:
        if bench is None:
            benches = setup.measured.get(config) or setup.benchmarks
        elif bench in setup.measured[config]:
            benches = (bench,)
        else:
            continue
        d = differences(setup.logs, config, setup.reference, benches, setup.look_of(config))
        found[config] = stats.trimmed(d)
    return found


def against_baseline(
    setup: Setup,
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
    joint = dict(locations)
    if setup.aa is not None and setup.rulebook.standard:
        d = aa_rounds(setup, benches, setup.timeline.last)
        control = stats.trimmed(d)
        joint[setup.aa] = replace(control, se=control.se * AA_SCALE)  # as exchangeable
    level = setup.against_baseline(alpha)
    moderated = setup.moderated(joint)
    if setup.aa in moderated:
        control = moderated[setup.aa]
        moderated[setup.aa] = replace(control, se=control.se / AA_SCALE)
    out: dict[str, Estimate] = {}
    for config, raw in moderated.items():
        own = setup.measured.get(config) or setup.benchmarks
        reference = (setup.baseline,) if config == setup.aa else setup.reference
        on = own if benchmarks is None else benches
        loc = widened(setup, raw, config, reference, on, setup.look_of(config))
        nominal = setup.level(level, config)
        e = judged(config, name, loc, nominal, margin)
        if e is not None:
            out[config] = e
    aa = out.pop(setup.aa) if setup.aa in out else None
    if setup.aa is not None and not setup.rulebook.standard:
        aa = aa_control(setup, name, benches, level, margin)
    return out, aa


def ranking_estimates(setup: Setup, margin: float) -> tuple[dict[str, Estimate], Estimate | None]:
    """Every config against the baseline, overall, each at its own look: Dunnett-type levels
    over the family, variances moderated across the configs; and the A/A control overall, as
    the family judges it (estimates.against_baseline)."""
    overall = locations_of(setup)
    return against_baseline(setup, overall, None, setup.split["ranking"], margin)


def benchmark_estimates(
    setup: Setup, margins: Mapping[str, float]
) -> tuple[dict[tuple[str, str], Estimate], dict[str, Estimate]]:
    """Every config against the baseline on each benchmark, (config, benchmark) -> its
    estimate: Dunnett-type levels within a benchmark, Bonferroni across them, variances
    moderated across the configs, at each benchmark's margin; and each benchmark's A/A control,
    judged with them."""
    alpha = setup.split["benchmarks"] / max(1, len(setup.benchmarks))
    out: dict[tuple[str, str], Estimate] = {}
    aa: dict[str, Estimate] = {}
    for bench in setup.benchmarks:
        on = locations_of(setup, bench)
        found, control = against_baseline(setup, on, (bench,), alpha, margins[bench])
        out.update({(config, bench): e for config, e in found.items()})
        if control is not None:
            aa[bench] = control
    return out, aa


def contrasts(setup: Setup, config: str, margin: float) -> list[Estimate]:
    """Within one config, each seed experiment's pair of benchmarks (config.suite.CONTRASTS),
    paired by round (under rules 6 widened for zygotes as the noisier of the two benchmarks'
    speeds would be), in the experiments' family."""
    alpha = setup.split["experiments"] / len(CONTRASTS)
    look = setup.look_of(config)
    out = []
    for contrast in CONTRASTS:
        mine = setup.logs.get((config, contrast.faster_if))
        theirs = setup.logs.get((config, contrast.than))
        d = [mine[k] - theirs[k] for k in sorted(set(mine) & set(theirs)) if k[1] < look]
        loc = stats.trimmed(d)
        for bench in (contrast.faster_if, contrast.than):
            wider = widened(setup, loc, config, (), (bench,), look)
            loc = wider if wider.se > loc.se else loc
        nominal = setup.level(alpha, config)
        e = judged(config, contrast.name, loc, nominal, margin)
        if e is not None:
            out.append(e)
    return out


def unknown(setup: Setup, config: str, margin: float) -> Estimate:
    """A config without an interval (fewer than two rounds): its estimate where it has one, and
    an interval that holds anything."""
    benches = setup.measured.get(config) or setup.benchmarks
    d = differences(setup.logs, config, setup.reference, benches, setup.look_of(config))
    ratio = stats.exp(statistics.fmean(d)) if d else 1.0
    return Estimate(config, OVERALL, ratio, 0.0, math.inf, 0.0, math.nan, len(d), math.nan,
                    margin, "undecided")  # fmt: skip


def aa_control(
    setup: Setup, name: str, benchmarks: Sequence[str], alpha: float, margin: float
) -> Estimate | None:
    """The A/A control on `benchmarks` (named `name`): the baseline's copy against the baseline
    process alone, per round, up to the setup's last look, at the per-comparison level of
    `alpha` spent by then; None without a copy or before two rounds."""
    if setup.aa is None:
        return None
    d = aa_rounds(setup, benchmarks, setup.timeline.last)
    nominal = setup.level(alpha, setup.aa)
    return estimate(setup.aa, name, d, nominal, margin)


def aa_rounds(setup: Setup, benchmarks: Sequence[str], upto: int | None) -> list[float]:
    """The A/A control's per-round log ratios (the copy against the baseline process alone),
    before round `upto`; none without a copy."""
    if setup.aa is None:
        return []
    return differences(setup.logs, setup.aa, (setup.baseline,), benchmarks, upto)


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
    benchmarks: Sequence[str],
    upto: int | None = None,
    lower: bool = False,
) -> float:
    """The spread of one process of the same build: the robust sd of the A/A copy's per-round
    log ratio to the baseline, over sqrt(2) (with `lower`, its 90 % lower confidence bound: the
    spread the machine surely has, which a few rounds can overstate); never below 2 %."""
    if setup.aa is None:
        return MIN_MARGIN
    d = aa_rounds(setup, benchmarks, upto)
    loc = stats.trimmed(d)
    sd = stats.sd_lower(loc.sd, loc.df) if lower else loc.sd
    spread = sd / math.sqrt(2.0) if len(d) >= 2 else math.nan
    return max(MIN_MARGIN, stats.expm1(spread)) if math.isfinite(spread) else MIN_MARGIN


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
        logs=logs,
        baseline=baseline,
        aa=aa,
        benchmarks=benchmarks,
        compared=compared,
        design=design,
        measured=measured,
        family=max(1, family),
        timeline=timeline,
        rivals=max(1, len(keys)),
        at=at or {},
    )
