"""From raw bench results to an answer: which config is fastest here, by how much, how sure.

Every claim the report makes is read off one family of simultaneous confidence intervals, so
that with probability at least 95 % every one of them is true at once:

- A round ran every config in contention once, each in a fresh process, in a shuffled order.
  A config's level in a round is its mean log throughput over the benchmarks (the log of the
  geometric mean); the baseline's level is the mean of the baseline's two processes (the
  baseline and its A/A copy), which halves the noise every comparison carries from it.
- Each config is compared with the baseline on the per-round differences of levels (rounds pair
  them, so drift of the machine cancels): a 10 % trimmed mean (Yuen), so one odd round in ten
  has no pull, with a t interval from the winsorized variance.
- The intervals are simultaneous: alpha = 5 % is split between the verdicts against the
  baseline (2.5 %), the selection of the configs that could be the fastest (1.5 %), the
  per-benchmark table (0.5 %) and the seed experiments (0.5 %); within each, the max-t level
  of comparisons that share a config (Dunnett 1955: the configs' comparisons with the baseline
  correlate at 1/3), each comparison's variance moderated towards what the comparisons judged
  with it share (Smyth 2004, with guards: stats.moderated); and when the session looked at its
  data at scheduled rounds to stop configs early (a sequential design), each comparison is
  judged at the level alpha spending gives its look (Lan-DeMets: Pocock-type for the
  eliminations, which come early, the power family's t^2 for the intervals, judged when the
  session stops; see stats.sequential_levels), so the error stays within alpha however many
  looks were taken and wherever the session stopped. A sequential session is judged by the
  rules its looks were decided by (results.model.DECISIONS).
- Verdicts against the baseline, from the interval and the indifference margin: faster or
  slower when the whole interval lies beyond the margin, equivalent when it lies inside it,
  undecided otherwise. The margin is the design's (`resolve`, 5 % for a design without one),
  never below the spread of one process of the same build (the A/A control's robust variance,
  at its 90 % lower bound; at least 2 %).
- Which configs could be the fastest: multiple comparisons with the best (Hsu 1984; Gupta's
  subset selection). A config is out when another one is ahead of it by more than the
  one-sided bound of their paired per-round difference. Only the comparisons of the others
  with the truly fastest config can put that one out wrongly, so the family is those k - 1
  comparisons (correlated at 1/2), not all pairs: the fastest config stays in with
  probability at least 1 - 1.5 %, at every look together. Outs stop configs during a
  sequential session (each recorded with its look) and cut the two tiers: could be the
  fastest, and not.
- The answer (tfbuild.analysis.answer), at the last look: the same one-sided bounds give each
  leading config a floor, the lower bound of its throughput over the fastest of the others
  (Hsu's multiple comparisons with the best); a config whose floor reaches 1 / (1 + margin) is
  within the margin of the fastest, with the selection family's probability: "Keep the
  baseline" when the baseline is, else "Use" such a config, else "Inconclusive".

Fixed-design sessions from the same machine are pooled (rounds stay paired within their
session); a sequential session is analysed on its own; different machines are reported side by
side.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from tfbuild import stats
from tfbuild.analysis.answer import Answer, Decision, answer, decide
from tfbuild.analysis.choice import Choice, choice_for
from tfbuild.analysis.estimates import (
    MIN_MARGIN,
    OVERALL,
    SPLIT,
    Estimate,
    Out,
    Setup,
    aa_control,
    estimate,
    final_timeline,
    indifference,
    judged,
    make_setup,
    noise_margin,
    out_claims,
    ranking_estimates,
    resolution,
    rested_at,
    tiers,
    verdict,
)
from tfbuild.analysis.looks import decisions, rest_estimates, take_look
from tfbuild.analysis.power import (
    MOST_ROUNDS,
    fixed_decided,
    fixed_equivalent,
)
from tfbuild.analysis.rounds import Rounds, differences, raw_samples, round_table
from tfbuild.analysis.sessions import Session, Timeline
from tfbuild.analysis.software import software_differences
from tfbuild.config.suite import CONTRASTS
from tfbuild.errors import ResultsError
from tfbuild.machine.profile import HostProfile
from tfbuild.results import model
from tfbuild.results.model import FIXED, ConfigEntry, Design, Stop, VariantRecord

# --------------------------------------------------------------------------------------------
# What the report holds


@dataclass(frozen=True)
class Trouble:
    """One line of the report's failures: who failed, and where and why."""

    who: str
    reason: str


@dataclass(frozen=True)
class Gaps:
    """What a config did not measure: it stays in the report with what it did."""

    rounds: int
    failed_rounds: int
    missing: tuple[str, ...]
    """Benchmarks without any result, so its overall level is over the others."""
    failed_benchmarks: tuple[str, ...]
    """Benchmarks that failed in at least one round."""

    @property
    def clean(self) -> bool:
        return not (self.failed_rounds or self.missing or self.failed_benchmarks)

    def text(self) -> str:
        parts = []
        if self.failed_rounds:
            parts.append(f"failed in {self.failed_rounds} of {self.rounds} rounds")
        if self.missing:
            parts.append(f"no results for {', '.join(self.missing)} (overall over the rest)")
        if self.failed_benchmarks and set(self.failed_benchmarks) != set(self.missing):
            parts.append(f"{', '.join(self.failed_benchmarks)} failed in some rounds")
        return "; ".join(parts)


@dataclass(frozen=True, kw_only=True)
class HostReport:
    """What the analysis of one machine's sessions found, every figure computed: the report's
    formats only read it."""

    host: HostProfile
    host_key: str
    sessions: list[str]
    design: Design
    rules: int
    """The version of the decision rules the session was judged by (results.model.DECISIONS)."""
    baseline: str
    benchmarks: list[str]
    units: dict[str, str]
    rounds: int
    margins: dict[str, float]
    """benchmark (and 'overall') -> the indifference margin as a fraction (0.05 = 5 %): the
    verdicts' and the answer's."""
    spreads: dict[str, float]
    """benchmark (and 'overall') -> the spread of one process of the same build this machine
    surely has (the A/A control's, at its 90 % lower bound; 2 % at least): the margin's floor."""
    margin_source: str
    aa: dict[str, Estimate]
    warnings: list[str]
    decision: Decision
    """What the last look decides (the answer, before its words)."""
    answer: Answer
    """What the report leads with: what to use and what that guarantees, or why it is
    inconclusive and, when analyse_host's `power` asked for it, what budget would settle it
    (Answer.settle: simulated, tfbuild.analysis.power)."""
    estimates: dict[tuple[str, str], Estimate]
    ranking: list[Estimate]
    """Overall estimates in tier order, best first (the baseline included with ratio 1)."""
    tiers: list[list[str]]
    out: list[Out]
    """Every config put out of the leading tier, at the look it was put out (eliminations
    included)."""
    resolution: float
    fixed_equivalent: tuple[int, int] | None
    """Rounds and processes a fixed design (every config every round, one look) would need for
    the same leading tier to be resolved as well as this session did it, in half of the
    sessions like this one (simulated, tfbuild.analysis.power). None when not asked for
    (analyse_host's `power`), for fixed designs, and beyond the longest design the planner
    looks at: the report then says nothing of it."""
    processes: int
    benchmark_s: float | None
    """Seconds the sessions spent benchmarking (installs not counted), when all recorded it."""
    looks: list[model.Look]
    """The looks recorded by the session (sequential designs)."""
    stop: Stop | None
    replay: list[str]
    """Differences between the recorded looks and a replay of them from the data."""
    flags: dict[str, Gaps]
    failures: list[Trouble]
    choice: Choice | None
    """The answer's config (the baseline while nothing is decided) and how to get it."""
    contrasts: list[Estimate]
    """The seed experiments inside the recommended config: one benchmark of the suite against
    its counterpart (Estimate.benchmark names the contrast)."""
    medians: dict[tuple[str, str], float]
    round_values: dict[tuple[str, str], list[float]] = field(repr=False)
    samples: dict[tuple[str, str], list[float]] = field(repr=False)
    """(config, benchmark) -> every raw sample throughput, for distribution plots."""
    configs: dict[str, ConfigEntry] = field(repr=False)
    variants: dict[str, VariantRecord] = field(repr=False)
    workload: str | None = None
    """What the user's own model was (`--workload`), when the sessions measured one."""
    forked: bool = False
    """The sessions forked each process from a zygote of its config (`--processes forked`)."""


# --------------------------------------------------------------------------------------------
# One host (or one sequential session)


def _setup(sessions: Sequence[Session], logs: Rounds, design: Design, rounds: int) -> Setup:
    first = sessions[0].results
    baselines = {s.results.baseline.config for s in sessions}
    if len(baselines) > 1:
        raise ResultsError(
            f"sessions of {sessions[0].host_key} use different baselines {sorted(baselines)}; "
            "compare them separately"
        )
    baseline = first.baseline.config
    ready = {n for s in sessions for n in s.results.ready}
    aa = next(
        (s.results.baseline.aa_config for s in sessions if s.results.baseline.aa_config), None
    )
    keys: list[str] = []
    for s in sessions:
        for c in s.results.configs:
            wanted = c.variant in ready and not c.aa and c.key != baseline
            if wanted and c.key not in keys:
                keys.append(c.key)
    timeline, at, _ = final_timeline(first, design, rounds)
    return make_setup(first, keys, logs, design, aa, timeline, at)


def _aa_estimates(
    setup: Setup, logs: Rounds, given: float | None
) -> tuple[dict[str, Estimate], dict[str, float], dict[str, float], str, list[str]]:
    """The A/A check (the copy against the baseline process alone) per benchmark and overall,
    and the margins: the indifference margin (`given`, else the design's: estimates.
    indifference), never below the robust spread of one process, sd(A - A') / sqrt(2)."""
    spreads = {b: MIN_MARGIN for b in [*setup.benchmarks, OVERALL]}
    warnings = []
    aa: dict[str, Estimate] = {}
    if setup.aa is None:
        warnings.append(
            "no A/A control in these results: the spread of one process of this machine is "
            "unknown, so the margin is not held above it"
        )
    else:
        for bench in [OVERALL, *setup.benchmarks]:
            benches = setup.benchmarks if bench == OVERALL else (bench,)
            spreads[bench] = noise_margin(setup, logs, benches, setup.timeline.last, True)
    margins = {
        b: given if given is not None else indifference(setup, spread)
        for b, spread in spreads.items()
    }
    if given is not None:
        source = f"{given:.1%} (given with --margin)"
    else:
        wanted = "the design's" if setup.design.resolve is not None else "the default"
        source = (
            f"{margins[OVERALL]:.1%}: a config within it of the fastest counts as the fastest "
            f"({wanted}, never below the spread of one process of the same build"
            + (f", at least {spreads[OVERALL]:.1%} here by the A/A control)" if setup.aa else ")")
        )
    if setup.aa is None:
        return aa, spreads, margins, source, warnings
    ranking_alpha = setup.against_baseline(SPLIT["ranking"])
    bench_alpha = setup.against_baseline(SPLIT["benchmarks"] / max(1, len(setup.benchmarks)))
    for bench in [OVERALL, *setup.benchmarks]:
        benches = setup.benchmarks if bench == OVERALL else (bench,)
        alpha = ranking_alpha if bench == OVERALL else bench_alpha
        e = aa_control(setup, logs, bench, benches, alpha, margins[bench])
        if e is None:
            continue
        aa[bench] = e
        if not e.low <= 1.0 <= e.high:
            where = "overall" if bench == OVERALL else f"on {bench}"
            warnings.append(
                f"the A/A control (the baseline against its own copy) is {e.ratio:.3f}x "
                f"[{e.low:.3f}, {e.high:.3f}] {where}: this machine showed one build unlike "
                "itself; rerun it on a quieter machine"
            )
    return aa, spreads, margins, source, warnings


def _flags(sessions: Sequence[Session], setup: Setup) -> dict[str, Gaps]:
    rounds: dict[str, int] = defaultdict(int)
    failed: dict[str, int] = defaultdict(int)
    bench_failed: dict[str, set[str]] = defaultdict(set)
    for s in sessions:
        for run in s.results.runs:
            rounds[run.config] += 1
            if run.failure is not None:
                failed[run.config] += 1
            for bench, entry in run.benchmarks.items():
                if entry.error is not None:
                    bench_failed[run.config].add(bench)
    return {
        c: Gaps(
            rounds=rounds[c],
            failed_rounds=failed[c],
            missing=tuple(b for b in setup.benchmarks if b not in setup.measured.get(c, ())),
            failed_benchmarks=tuple(sorted(bench_failed[c])),
        )
        for c in [*setup.compared, setup.baseline]
        if rounds[c]
    }


def failures_of(sessions: Sequence[Session]) -> list[Trouble]:
    """Every failure the sessions recorded: variants that could not be measured, runs that
    failed and benchmarks that raised, each with who and why."""
    failures = []
    for s in sessions:
        for f in s.results.failures:
            failures.append(Trouble(", ".join(f.configs) or f.variant, f"{f.stage}: {f.reason}"))
        for run in s.results.runs:
            if run.failure is not None:
                failures.append(Trouble(run.config, f"round {run.round + 1}: {run.failure.reason}"))
            for bench, entry in run.benchmarks.items():
                if entry.error is not None:
                    failures.append(
                        Trouble(f"{run.config} {bench}", f"round {run.round + 1}: {entry.error}")
                    )
    return failures


def _per_benchmark(
    setup: Setup, logs: Rounds, margins: Mapping[str, float]
) -> dict[tuple[str, str], Estimate]:
    """Every config against the baseline on each benchmark: Dunnett-type levels within a
    benchmark, Bonferroni across them, variances moderated across the configs."""
    alpha = setup.against_baseline(SPLIT["benchmarks"] / max(1, len(setup.benchmarks)))
    out = {}
    for bench in setup.benchmarks:
        locations = {
            config: stats.trimmed(
                differences(logs, config, setup.reference, (bench,), setup.look_of(config))
            )
            for config in setup.compared
            if bench in setup.measured[config]
        }
        for config, loc in setup.moderated(locations).items():
            e = judged(config, bench, loc, setup.level(alpha, config), margins[bench])
            if e is not None:
                out[(config, bench)] = e
    return out


def _contrasts(logs: Rounds, config: str, setup: Setup, margin: float) -> list[Estimate]:
    """Within one config, each seed experiment's pair of benchmarks, paired by round."""
    alpha = SPLIT["experiments"] / len(CONTRASTS)
    look = setup.look_of(config)
    out = []
    for contrast in CONTRASTS:
        mine = logs.get((config, contrast.faster_if))
        theirs = logs.get((config, contrast.than))
        d = [mine[k] - theirs[k] for k in sorted(set(mine) & set(theirs)) if k[1] < look]
        e = estimate(config, contrast.name, d, setup.level(alpha, config), margin)
        if e is not None:
            out.append(e)
    return out


def _replay(
    sessions: Sequence[Session], setup: Setup, logs: Rounds
) -> tuple[list[model.Look], list[Out], list[str]]:
    """The looks a sequential session recorded, every out made at them, and any
    difference between what was recorded and what the data give when the looks are replayed."""
    if len(sessions) != 1 or not setup.design.sequential:
        return [], [], []
    recorded = list(sessions[0].results.looks or ())
    claims: list[Out] = []
    problems = []
    for k, look in enumerate(recorded):
        rounds = tuple(x.round for x in recorded[: k + 1])
        timeline = Timeline(rounds, setup.design.horizon, rules=setup.design.decisions)
        at_look = replace(setup, timeline=timeline, at=rested_at(recorded[:k]))
        replayed = take_look(at_look, logs, look.active, look.round)
        claims += replayed.out
        out, resting = decisions(at_look, replayed, look.active)
        mine = sorted(e.config for e in look.eliminated)
        again = sorted(c.config for c in out)
        if mine != again:
            problems.append(
                f"look after round {look.round}: recorded eliminations {mine}, the data "
                f"give {again}"
            )
        if sorted(look.rested) != sorted(resting):
            problems.append(
                f"look after round {look.round}: recorded rests {sorted(look.rested)}, the "
                f"data give {sorted(resting)}"
            )
        if setup.rulebook.answer_decides and sorted(look.certified) != sorted(replayed.certified):
            problems.append(
                f"look after round {look.round}: recorded within the margin "
                f"{sorted(look.certified)}, the data give {sorted(replayed.certified)}"
            )
    return recorded, claims, problems


def _benchmark_seconds(sessions: Sequence[Session]) -> float | None:
    spent = [s.results.session.elapsed_s or 0.0 for s in sessions]
    return float(sum(spent)) if all(x > 0 for x in spent) else None


def _unknown(config: str, setup: Setup, logs: Rounds, margin: float) -> Estimate:
    """A config without an interval (fewer than two rounds): its estimate where it has one, and
    an interval that holds anything."""
    benches = setup.measured.get(config) or setup.benchmarks
    d = differences(logs, config, setup.reference, benches, setup.look_of(config))
    ratio = stats.exp(statistics.fmean(d)) if d else 1.0
    return Estimate(config, OVERALL, ratio, 0.0, math.inf, 0.0, math.nan, len(d), math.nan,
                    margin, "undecided")  # fmt: skip


def _running_at_end(first: model.Results, setup: Setup, design: Design) -> list[str]:
    """The configs of the last look: those that ran the last round of a sequential session
    (the baseline's copy aside), every config of a fixed design."""
    if design.sequential and first.order:
        return [c for c in first.order[-1] if c in (*setup.compared, setup.baseline)]
    return [*setup.compared, setup.baseline]


def analyse_host(
    sessions: Sequence[Session], margin: float | None = None, *, power: bool = False
) -> HostReport:
    """The report for sessions of one machine (one sequential session, or pooled fixed ones).
    `margin` overrides the practical margin the A/A control gives. `power` runs the planners
    (tfbuild.analysis.power, hundreds of simulated sessions each): the fixed design a
    sequential session is worth (HostReport.fixed_equivalent) and the budget that would settle
    an inconclusive answer (Answer.settle). A report to be read asks for them; without them
    nothing is simulated, and the report says nothing of either."""
    first = sessions[0].results
    design = sessions[0].design if len(sessions) == 1 else FIXED
    table = round_table(sessions)
    logs = Rounds(table)
    rounds = max((len(v) for v in table.values()), default=0)
    if design.sequential:
        rounds = len(first.order or ())
    setup = _setup(sessions, logs, design, rounds)
    configs: dict[str, ConfigEntry] = {}
    variants: dict[str, VariantRecord] = {}
    for s in sessions:
        for c in s.results.configs:
            configs.setdefault(c.key, c)
        for name, v in (s.results.variants or {}).items():
            if v.status == "ready" or name not in variants:
                variants[name] = v
    aa, spreads, margins, margin_source, warnings = _aa_estimates(setup, logs, margin)
    estimates = ranking_estimates(setup, logs, margins[OVERALL])
    if design.sequential:  # a rested config (rules 4) is judged as the look it rested at did
        for config, rested in rest_estimates(first.looks).items():
            if config in estimates:
                low, high = math.log(rested.low), math.log(rested.high)
                estimates[config] = replace(
                    estimates[config],
                    ratio=rested.ratio,
                    low=rested.low,
                    high=rested.high,
                    verdict=verdict(low, high, margins[OVERALL]),
                )
    looks, claims, replay = _replay(sessions, setup, logs)
    warnings += final_timeline(first, design, rounds)[2]
    # The outs at the recorded looks, and among the configs that ran to the end a last
    # selection after the final round (a pair is judged where the earlier of the two stopped).
    claims = [
        *claims,
        *out_claims(setup, logs, [*estimates, setup.baseline], setup.timeline.last),
    ]
    has_baseline = any((setup.baseline, b) in table for b in setup.benchmarks)
    if not has_baseline:
        warnings.append(
            f"the baseline {setup.baseline} has no results: nothing can be ranked against it"
        )
    # A config measured too little for an interval stays, unknown: it may be the fastest.
    unknown = {
        c: _unknown(c, setup, logs, margins[OVERALL]) for c in setup.compared if c not in estimates
    }
    order = [*estimates, *unknown, *([setup.baseline] if has_baseline else [])]
    tier_list = tiers(order, claims)
    base_estimate = Estimate(
        setup.baseline, OVERALL, 1.0, 1.0, 1.0, 0.0, 1.0, rounds, 0.0, margins[OVERALL], "baseline"
    )
    by_config = {**estimates, **unknown, setup.baseline: base_estimate}
    ranking = [
        by_config[c] for tier in tier_list for c in sorted(tier, key=lambda c: -by_config[c].ratio)
    ]
    lead = tier_list[0] if tier_list else []
    leading_others = [c for c in lead if c != setup.baseline]
    achieved = resolution(leading_others, estimates)
    per_round = len(setup.compared) + 1 + (1 if setup.aa else 0)

    fixed = None
    if power and design.sequential and leading_others and math.isfinite(achieved):
        n = fixed_equivalent(setup, logs, leading_others, achieved)
        fixed = None if n is None else (n, n * per_round)
    warnings += software_differences(variants)
    flags = _flags(sessions, setup)
    for config, f in flags.items():
        if not f.clean:
            warnings.append(f"{config}: {f.text()}; it is ranked on what it measured")
    final = take_look(setup, logs, _running_at_end(first, setup, design), setup.timeline.last)
    # A config that did not measure everything in every round is never the one to use.
    decision = decide(
        final.floors if has_baseline else {},
        margins[OVERALL],
        setup.baseline,
        by_config,
        aa.get(OVERALL),
        rounds,
        {c: f.text() for c, f in flags.items() if not f.clean},
    )
    candidates = [c for c in decision.floors if c != setup.baseline]

    def settle_plan(margin: float) -> tuple[int, int] | None:
        n = fixed_decided(setup, logs, candidates, margin)
        return None if n is None else (n, n * per_round)

    processes = sum(len(s.results.runs) for s in sessions)
    benchmark_s = _benchmark_seconds(sessions)
    seconds = benchmark_s / processes if benchmark_s and processes else None
    plan = settle_plan if power else None
    said = answer(decision, ranking, setup.baseline, plan, seconds, MOST_ROUNDS)
    choice = None
    if has_baseline:
        left_out = {  # leading, but it did not measure everything
            c: flags[c].text()
            for c in lead
            if c in flags and not flags[c].clean and c != decision.config
        }
        choice = choice_for(decision, by_config, setup.baseline, configs, variants, left_out)
    return HostReport(
        host=first.host,
        host_key=sessions[0].host_key,
        sessions=[str(s.path) for s in sessions],
        design=design,
        rules=setup.rules,
        baseline=setup.baseline,
        benchmarks=list(setup.benchmarks),
        units=dict(first.suite.units),
        workload=first.suite.workload.describe() if first.suite.workload else None,
        forked=first.suite.processes == "forked",
        rounds=rounds,
        margins=margins,
        spreads=spreads,
        margin_source=margin_source,
        aa=aa,
        warnings=warnings,
        decision=decision,
        answer=said,
        estimates={
            **{(c, OVERALL): e for c, e in estimates.items()},
            **_per_benchmark(setup, logs, margins),
        },
        ranking=ranking,
        tiers=tier_list,
        out=claims,
        resolution=achieved,
        fixed_equivalent=fixed,
        processes=processes,
        benchmark_s=benchmark_s,
        looks=looks,
        stop=first.session.stop if len(sessions) == 1 else None,
        replay=replay,
        flags=flags,
        failures=failures_of(sessions),
        choice=choice,
        contrasts=_contrasts(
            logs, choice.config if choice else setup.baseline, setup, margins[OVERALL]
        ),
        medians={key: statistics.median(list(v.values())) for key, v in table.items() if v},
        round_values={key: list(v.values()) for key, v in table.items()},
        samples=raw_samples(sessions),
        configs=configs,
        variants=variants,
    )


def analyse(
    sessions: Sequence[Session], margin: float | None = None, *, power: bool = False
) -> list[HostReport]:
    """One report per machine; a sequential session is reported on its own. `margin` and
    `power` as analyse_host's."""
    groups: dict[tuple[str, str], list[Session]] = defaultdict(list)
    for s in sessions:
        groups[(s.host_key, s.id if s.design.sequential else "")].append(s)
    return [analyse_host(group, margin, power=power) for group in groups.values()]
