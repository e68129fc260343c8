"""From raw bench results to an answer: which config is fastest here, by how much, how sure.

Every claim the report makes is read off one family of simultaneous confidence intervals, so
that with probability at least 95 % every one of them is true at once:

- A round ran every config in contention once, each in its own process, in a shuffled order;
  a config's level in a round is its (weighted) mean log throughput over the benchmarks, the
  baseline's the mean of its two processes (the baseline and its A/A copy).
- Each config is compared with the baseline on the per-round differences of levels (rounds pair
  them, so drift of the machine cancels): a 10 % trimmed mean (Yuen) with a t interval.
- The intervals are simultaneous: alpha is split between families (results.rules: the verdicts
  against the baseline, the selection of the configs that could be the fastest, the
  per-benchmark table, the seed experiments); within each, the max-t level of comparisons that
  share a config (Dunnett 1955), variances moderated across the comparisons judged together
  (Smyth 2004, with guards: stats.moderated), alpha spent over the looks of a sequential
  session (Lan-DeMets; sequential.sequential_levels), and under rules 6 every interval widened
  by the resemblance of the processes one zygote forked, as the session's own data estimate it
  (analysis.zygotes). A sequential session is judged by the rules its looks were decided by.
- Verdicts against the baseline: faster or slower when the whole interval lies beyond the
  indifference margin, equivalent when inside it, undecided otherwise.
- Which configs could be the fastest: multiple comparisons with the best (Hsu 1984); a config
  is out when another one is ahead of it beyond the one-sided bound of their paired difference,
  the family the k - 1 comparisons with the truly fastest. Under rules 6 nothing is put out
  while the A/A control cannot yet tell the baseline from itself.
- The answer (analysis.answer), at the last look, a comparison with the standard: "Use X" when
  X is shown faster than the baseline and within the margin of the fastest (its floor), "Keep
  the baseline" when no config that could be the fastest can be faster by more than the
  margin, else "Inconclusive".

Fixed-design sessions from the same machine are pooled (rounds stay paired within their
session); a sequential session is analysed on its own; different machines are reported side by
side.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tfbuild import stats
from tfbuild.analysis.answer import Answer, Decision, answer, confidence, decide
from tfbuild.analysis.choice import Choice, choice_for
from tfbuild.analysis.estimates import (
    OVERALL,
    Estimate,
    Out,
    Setup,
    against_baseline,
    judged,
    make_setup,
    ranking_estimates,
    resolution,
    selection,
    tiers,
    verdict,
    widened,
    widening,
)
from tfbuild.analysis.forms import FormFigures, form_figures, with_accuracy_cost
from tfbuild.analysis.gaps import failures_of, flagged, gaps_of
from tfbuild.analysis.looks import look_decision, outs_and_rests, rest_estimates, take_look
from tfbuild.analysis.margins import aa_warnings, margins_of
from tfbuild.analysis.power import (
    MOST_ROUNDS,
    fixed_decided,
    fixed_equivalent,
)
from tfbuild.analysis.reported import (
    Course,
    Figures,
    HostReport,
    Measured,
    Method,
    Problems,
    ZygoteFigures,
)
from tfbuild.analysis.rounds import (
    Rounds,
    differences,
    raw_samples,
    round_table,
    zygote_table,
)
from tfbuild.analysis.sessions import Session, Timeline, final_timeline, rested_at
from tfbuild.analysis.software import software_differences
from tfbuild.analysis.zygotes import resemblance
from tfbuild.config.suite import CONTRASTS
from tfbuild.errors import ResultsError
from tfbuild.results import model
from tfbuild.results.model import FIXED, ConfigEntry, Design, VariantRecord

# --------------------------------------------------------------------------------------------
# What the report holds


def _zygotes(setup: Setup, logs: Rounds, estimates: Mapping[str, Estimate]) -> ZygoteFigures | None:
    """The session's zygotes and the resemblance of their children, when it forked any."""
    served: dict[str, int] = defaultdict(int)
    for key, zygote in logs.zygotes.items():
        if key[0] in setup.everyone:
            served[zygote] += 1
    if not served:
        return None
    found = resemblance(logs, setup.everyone, setup.benchmarks, setup.timeline.last)
    most = max((widening(setup, logs, c, setup.look_of(c)) for c in estimates), default=1.0)
    return ZygoteFigures(found, math.sqrt(most), max(served.values()), len(served))


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


def _per_benchmark(
    setup: Setup, logs: Rounds, margins: Mapping[str, float]
) -> tuple[dict[tuple[str, str], Estimate], dict[str, Estimate]]:
    """Every config against the baseline on each benchmark: Dunnett-type levels within a
    benchmark, Bonferroni across them, variances moderated across the configs; and each
    benchmark's A/A control, judged with them."""
    alpha = setup.split["benchmarks"] / max(1, len(setup.benchmarks))
    out: dict[tuple[str, str], Estimate] = {}
    aa: dict[str, Estimate] = {}
    for bench in setup.benchmarks:
        locations = {
            config: stats.trimmed(
                differences(logs, config, setup.reference, (bench,), setup.look_of(config))
            )
            for config in setup.compared
            if bench in setup.measured[config]
        }
        found, control = against_baseline(setup, logs, locations, (bench,), alpha, margins[bench])
        out.update({(config, bench): e for config, e in found.items()})
        if control is not None:
            aa[bench] = control
    return out, aa


def _contrasts(logs: Rounds, config: str, setup: Setup, margin: float) -> list[Estimate]:
    """Within one config, each seed experiment's pair of benchmarks, paired by round (under
    rules 6 widened for zygotes as the noisier of the two benchmarks' levels would be)."""
    alpha = setup.split["experiments"] / len(CONTRASTS)
    look = setup.look_of(config)
    out = []
    for contrast in CONTRASTS:
        mine = logs.get((config, contrast.faster_if))
        theirs = logs.get((config, contrast.than))
        d = [mine[k] - theirs[k] for k in sorted(set(mine) & set(theirs)) if k[1] < look]
        loc = stats.trimmed(d)
        for bench in (contrast.faster_if, contrast.than):
            wider = widened(setup, logs, loc, config, (), (bench,), look)
            loc = wider if wider.se > loc.se else loc
        e = judged(config, contrast.name, loc, setup.level(alpha, config), margin)
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
        out, resting = outs_and_rests(at_look, replayed, look.active)
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
        named = None
        if setup.rulebook.standard:
            named = look_decision(at_look, replayed, flagged(sessions, at_look, look.round)).config
        if named != look.answer:
            problems.append(
                f"look after round {look.round}: recorded answer {look.answer}, the data give "
                f"{named}"
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


@dataclass(frozen=True)
class _Basis:
    """What every step of a report starts from: the sessions, their per-round values (on the
    weights asked, and on those the sessions were decided on), the design and the setup."""

    sessions: Sequence[Session]
    design: Design
    table: dict[tuple[str, str], dict[tuple[str, int], float]]
    logs: Rounds
    recorded_logs: Rounds
    """The per-round values on the level the session was decided on (its own weights): what
    its looks are replayed on."""
    weights: Mapping[str, float]
    rounds: int
    setup: Setup

    @property
    def first(self) -> model.Results:
        return self.sessions[0].results


@dataclass(frozen=True)
class _Judged:
    """Each config against the baseline, overall and per benchmark, at the margins."""

    method: Method
    overall: dict[str, Estimate]
    per_benchmark: dict[tuple[str, str], Estimate]
    aa: dict[str, Estimate]
    warnings: list[str]


@dataclass(frozen=True)
class _Ranked:
    """The tiers and the ranking, from the claims of the looks and of a last selection."""

    claims: list[Out]
    tiers: list[list[str]]
    ranking: list[Estimate]
    by_config: dict[str, Estimate]
    resolution: float
    has_baseline: bool
    looks: list[model.Look]
    replay: list[str]
    warnings: list[str]


def analyse_host(
    sessions: Sequence[Session],
    margin: float | None = None,
    *,
    power: bool = False,
    weights: Mapping[str, float] | None = None,
) -> HostReport:
    """The report for sessions of one machine (one sequential session, or pooled fixed ones).
    `margin` overrides the design's indifference margin; `weights` weigh the benchmarks in the
    overall level (benchmark -> weight, 1 for those not named; None: as the session recorded
    them, --weight of bench and run). `power` runs the planners
    (tfbuild.analysis.power, hundreds of simulated sessions each): the fixed design a
    sequential session is worth (Course.fixed_equivalent) and the budget that would settle
    an inconclusive answer (Answer.settle). A report to be read asks for them; without them
    nothing is simulated, and the report says nothing of either."""
    basis = _basis(sessions, weights)
    measured = _measured(basis)
    judged = _judged(basis, margin)
    ranked = _ranked(basis, judged)
    fixed = _fixed(basis, ranked, power)
    problems = _problems(basis, measured, [*judged.warnings, *ranked.warnings])
    forms = form_figures(sessions)
    decision, said, choice, replay = _answered(
        basis, measured, judged, ranked, problems, forms, power
    )
    setup, logs = basis.setup, basis.logs
    return HostReport(
        measured=measured,
        method=judged.method,
        figures=Figures(
            estimates={
                **{(c, OVERALL): e for c, e in judged.overall.items()},
                **judged.per_benchmark,
            },
            ranking=ranked.ranking,
            tiers=ranked.tiers,
            out=ranked.claims,
            resolution=ranked.resolution,
            aa=judged.aa,
            contrasts=_contrasts(
                logs,
                choice.config if choice else setup.baseline,
                setup,
                judged.method.margins[OVERALL],
            ),
            medians={k: statistics.median(list(v.values())) for k, v in basis.table.items() if v},
            round_values={key: list(v.values()) for key, v in basis.table.items()},
            samples=raw_samples(sessions),
        ),
        course=Course(
            looks=ranked.looks,
            stop=basis.first.session.stop if len(sessions) == 1 else None,
            replay=replay,
            fixed_equivalent=fixed,
        ),
        problems=problems,
        decision=decision,
        answer=said,
        choice=choice,
        forms=forms,
        zygotes=_zygotes(setup, logs, judged.overall),
    )


def _basis(sessions: Sequence[Session], weights: Mapping[str, float] | None) -> _Basis:
    first = sessions[0].results
    design = sessions[0].design if len(sessions) == 1 else FIXED
    table = round_table(sessions)
    weighed = first.suite.weights
    chosen = weighed if weights is None else weights
    logs = Rounds(table, zygote_table(sessions), chosen)
    rounds = max((len(v) for v in table.values()), default=0)
    if design.sequential:
        rounds = len(first.order or ())
    same = dict(chosen) == dict(weighed)
    recorded = logs if same else Rounds(table, zygote_table(sessions), weighed)
    setup = _setup(sessions, logs, design, rounds)
    return _Basis(sessions, design, table, logs, recorded, chosen, rounds, setup)


def _measured(basis: _Basis) -> Measured:
    """What the sessions measured, each config and variant as its sessions recorded it (a
    variant ready in one of them as it was there)."""
    sessions, first, setup = basis.sessions, basis.first, basis.setup
    configs: dict[str, ConfigEntry] = {}
    variants: dict[str, VariantRecord] = {}
    for s in sessions:
        for c in s.results.configs:
            configs.setdefault(c.key, c)
        for name, v in (s.results.variants or {}).items():
            if v.status == "ready" or name not in variants:
                variants[name] = v
    return Measured(
        host=first.host,
        host_key=sessions[0].host_key,
        sessions=[str(s.path) for s in sessions],
        baseline=setup.baseline,
        benchmarks=list(setup.benchmarks),
        units=dict(first.suite.units),
        rounds=basis.rounds,
        runs=sum(len(s.results.runs) for s in sessions),
        benchmark_s=_benchmark_seconds(sessions),
        workload=first.suite.workload.describe() if first.suite.workload else None,
        forked=first.suite.processes == "forked",
        configs=configs,
        variants=variants,
    )


def _judged(basis: _Basis, margin: float | None) -> _Judged:
    """The margins, and each config against the baseline at them: overall (a config rested
    under rules 4 as the look it rested at judged it), per benchmark, and the A/A control."""
    setup, logs = basis.setup, basis.logs
    spreads, margins, margin_source, warnings = margins_of(setup, logs, margin)
    overall, control = ranking_estimates(setup, logs, margins[OVERALL])
    per_benchmark, aa = _per_benchmark(setup, logs, margins)
    if control is not None:
        aa = {OVERALL: control, **aa}
    warnings += aa_warnings(aa)
    if basis.design.sequential:  # a rested config (rules 4) is judged as the look it rested at
        for config, rested in rest_estimates(basis.first.looks).items():
            if config in overall:
                low, high = math.log(rested.low), math.log(rested.high)
                overall[config] = replace(
                    overall[config],
                    ratio=rested.ratio,
                    low=rested.low,
                    high=rested.high,
                    verdict=verdict(low, high, margins[OVERALL]),
                )
    rulebook = setup.rulebook
    method = Method(
        design=basis.design,
        rules=setup.rules,
        maxt=rulebook.maxt,
        zygotes_widen=rulebook.zygotes,
        stops_on_answer=rulebook.answer_decides,
        split=dict(setup.split),
        weights={b: w for b, w in basis.weights.items() if b in setup.benchmarks},
        margins=margins,
        spreads=spreads,
        margin_source=margin_source,
    )
    return _Judged(method, overall, per_benchmark, aa, warnings)


def _ranked(basis: _Basis, judged: _Judged) -> _Ranked:
    """The tiers: the outs at the recorded looks (replayed on the level the session was
    decided on) and, among the configs that ran to the end, a last selection after the final
    round (a pair is judged where the earlier of the two stopped; under rules 6 nothing is put
    out while the A/A control cannot tell the baseline from itself). A config measured too
    little for an interval stays, unknown: it may be the fastest."""
    setup, logs, estimates = basis.setup, basis.logs, judged.overall
    margin = judged.method.margins[OVERALL]
    looks, claims, replay = _replay(basis.sessions, setup, basis.recorded_logs)
    warnings = list(final_timeline(basis.first, basis.design, basis.rounds)[2])
    claims += selection(setup, logs, [*estimates, setup.baseline], setup.timeline.last).claims
    has_baseline = any((setup.baseline, b) in basis.table for b in setup.benchmarks)
    if not has_baseline:
        warnings.append(
            f"the baseline {setup.baseline} has no results: nothing can be ranked against it"
        )
    unknown = {c: _unknown(c, setup, logs, margin) for c in setup.compared if c not in estimates}
    order = [*estimates, *unknown, *([setup.baseline] if has_baseline else [])]
    tier_list = tiers(order, claims)
    base_estimate = Estimate(
        setup.baseline, OVERALL, 1.0, 1.0, 1.0, 0.0, 1.0, basis.rounds, 0.0, margin, "baseline"
    )
    by_config = {**estimates, **unknown, setup.baseline: base_estimate}
    ranking = [
        by_config[c] for tier in tier_list for c in sorted(tier, key=lambda c: -by_config[c].ratio)
    ]
    lead = tier_list[0] if tier_list else []
    achieved = resolution([c for c in lead if c != setup.baseline], estimates)
    return _Ranked(claims, tier_list, ranking, by_config, achieved, has_baseline, looks, replay,
                   warnings)  # fmt: skip


def _problems(basis: _Basis, measured: Measured, warnings: list[str]) -> Problems:
    """The warnings so far, then the software the variants differ in and each config that
    missed measurements; what failed."""
    flags = gaps_of(basis.sessions, basis.setup)
    warnings = [*warnings, *software_differences(measured.variants)]
    warnings += [
        f"{config}: {f.text()}; it is ranked on what it measured"
        for config, f in flags.items()
        if not f.clean
    ]
    return Problems(warnings=warnings, flags=flags, failures=failures_of(basis.sessions))


def _per_round(setup: Setup) -> int:
    """Processes a round of every config runs (the baseline and its A/A copy included)."""
    return len(setup.compared) + 1 + (1 if setup.aa else 0)


def _fixed(basis: _Basis, ranked: _Ranked, power: bool) -> tuple[int, int] | None:
    """The fixed design a sequential session was worth (rounds, processes), when asked."""
    setup = basis.setup
    lead = ranked.tiers[0] if ranked.tiers else []
    others = [c for c in lead if c != setup.baseline]
    if not (power and basis.design.sequential and others and math.isfinite(ranked.resolution)):
        return None
    n = fixed_equivalent(setup, basis.logs, others, ranked.resolution)
    return None if n is None else (n, n * _per_round(setup))


def _answered(
    basis: _Basis,
    measured: Measured,
    judged: _Judged,
    ranked: _Ranked,
    problems: Problems,
    forms: tuple[FormFigures, ...],
    power: bool,
) -> tuple[Decision, Answer, Choice | None, list[str]]:
    """The answer: the last look's, as the session would take it there (a sequential one that
    stopped on its answer: the very look it stopped at); a config that did not measure
    everything in every round is never the one to use. Its words (with what it costs in
    accuracy, for a quantized model form), the config to use and how, and the replay's
    differences with where the session stopped."""
    setup, logs, first = basis.setup, basis.logs, basis.first
    flags = problems.flags
    final = take_look(setup, logs, _running_at_end(first, setup, basis.design), setup.timeline.last)
    missed = {c: f.text() for c, f in flags.items() if not f.clean}
    decision = decide(
        final.floors if ranked.has_baseline else {},
        judged.method.margins[OVERALL],
        setup.baseline,
        final.estimates,
        [c for c in final.leading if c != setup.baseline],
        final.aa,
        basis.rounds,
        missed,
        held=final.gated,
    )
    replay = list(ranked.replay)
    stopped = first.session.stop
    looks = ranked.looks
    recorded = looks[-1].answer if looks and stopped and stopped.reason == "resolved" else None
    if recorded is not None and recorded != decision.config:
        replay.append(
            f"the session stopped on the answer {recorded}; its report answers "
            f"{decision.config or 'nothing'} ({decision.why or decision.kind})"
        )
    candidates = [c for c in decision.floors if c != setup.baseline]

    def settle_plan(margin: float) -> tuple[int, int] | None:
        n = fixed_decided(setup, logs, candidates, margin)
        return None if n is None else (n, n * _per_round(setup))

    processes, benchmark_s = measured.runs, measured.benchmark_s
    seconds = benchmark_s / processes if benchmark_s and processes else None
    chosen = {b: e for (c, b), e in judged.per_benchmark.items() if c == decision.config}
    said = answer(
        decision,
        ranked.ranking,
        setup.baseline,
        settle_plan if power else None,
        seconds,
        MOST_ROUNDS,
        confidence(setup.split),
        chosen,
    )
    said = with_accuracy_cost(said, decision.config, measured.configs, forms)
    choice = None
    if ranked.has_baseline:
        lead = ranked.tiers[0] if ranked.tiers else []
        left_out = {  # leading, but it did not measure everything
            c: flags[c].text()
            for c in lead
            if c in flags and not flags[c].clean and c != decision.config
        }
        choice = choice_for(decision, ranked.by_config, setup.baseline, measured.configs,
                            measured.variants, left_out)  # fmt: skip
    return decision, said, choice, replay


def analyse(
    sessions: Sequence[Session],
    margin: float | None = None,
    *,
    power: bool = False,
    weights: Mapping[str, float] | None = None,
) -> list[HostReport]:
    """One report per machine; a sequential session is reported on its own. `margin`,
    `power` and `weights` as analyse_host's."""
    groups: dict[tuple[str, str], list[Session]] = defaultdict(list)
    for s in sessions:
        groups[(s.host_key, s.id if s.design.sequential else "")].append(s)
    return [analyse_host(group, margin, power=power, weights=weights) for group in groups.values()]
