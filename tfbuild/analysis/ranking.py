"""The ranking of a report: the looks a sequential session recorded, replayed on its data (the
configs each put out, and where a replay differs from what was recorded), a last selection
among the configs that ran to the end, the tiers, the ranking in tier order, how well the
leading tier is resolved and, when asked, the fixed design the session was worth."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from tfbuild.analysis.basis import Basis
from tfbuild.analysis.estimates import OVERALL, Estimate, unknown
from tfbuild.analysis.gaps import flagged
from tfbuild.analysis.judging import Judged
from tfbuild.analysis.looks import look_decision, outs_and_rests, take_look
from tfbuild.analysis.power import fixed_equivalent
from tfbuild.analysis.selection import Out, resolution, selection, tiers
from tfbuild.analysis.sessions import Timeline, rested_at
from tfbuild.results import model


@dataclass(frozen=True, kw_only=True)
class Ranked:
    """The tiers and the ranking, from the claims of the looks and of a last selection."""

    claims: list[Out]
    tiers: list[list[str]]
    ranking: list[Estimate]
    """Overall estimates in tier order, best first (the baseline included with ratio 1)."""
    by_config: dict[str, Estimate]
    resolution: float
    has_baseline: bool
    looks: list[model.Look]
    """The looks the session recorded (sequential designs)."""
    replay: list[str]
    """Differences between the recorded looks and a replay of them from the data."""
    fixed_equivalent: tuple[int, int] | None
    """Rounds and processes of the fixed design the session was worth, when asked."""
    warnings: list[str]


def ranked_of(basis: Basis, judged: Judged, power: bool) -> Ranked:
    """The tiers: the outs at the recorded looks (replayed on the speed the session was
    decided on) and, among the configs that ran to the end, a last selection after the final
    round (a pair is judged where the earlier of the two stopped; under rules 6 nothing is put
    out while the A/A control cannot tell the baseline from itself). A config measured too
    little for an interval stays, unknown: it may be the fastest. With `power`, the fixed
    design a sequential session was worth."""
    setup, estimates = basis.setup, judged.overall
    margin = judged.method.margins[OVERALL]
    looks, claims, replay = _replay(basis)
    unknowns = {c: unknown(setup, c, margin) for c in setup.compared if c not in estimates}
    claims += selection(setup, [*estimates, setup.baseline], setup.timeline.last).claims
    warnings = list(basis.notes)
    has_baseline = any((setup.baseline, b) in basis.table for b in setup.benchmarks)
    if not has_baseline:
        warnings.append(
            f"the baseline {setup.baseline} has no results: nothing can be ranked against it"
        )
    order = [*estimates, *unknowns, *([setup.baseline] if has_baseline else [])]
    tier_list = tiers(order, claims)
    base_estimate = Estimate(
        setup.baseline, OVERALL, 1.0, 1.0, 1.0, 0.0, 1.0, basis.rounds, 0.0, margin, "baseline"
    )
    by_config = {**estimates, **unknowns, setup.baseline: base_estimate}
    ranking = [
        by_config[c] for tier in tier_list for c in sorted(tier, key=lambda c: -by_config[c].ratio)
    ]
    lead = [c for c in (tier_list[0] if tier_list else []) if c != setup.baseline]
    achieved = resolution(lead, estimates)
    fixed = None
    if power and basis.design.sequential and lead and math.isfinite(achieved):
        n = fixed_equivalent(setup, lead, achieved)
        fixed = None if n is None else (n, n * len(setup.everyone))
    return Ranked(claims=claims, tiers=tier_list, ranking=ranking, by_config=by_config,
                  resolution=achieved, has_baseline=has_baseline, looks=looks, replay=replay,
                  fixed_equivalent=fixed, warnings=warnings)  # fmt: skip


def _replay(basis: Basis) -> tuple[list[model.Look], list[Out], list[str]]:
    """The looks a sequential session recorded, every out made at them, and any difference
    between what was recorded and what the data give when the looks are replayed (on the
    speed the session was decided on)."""
    sessions, setup = basis.sessions, basis.recorded
    if len(sessions) != 1 or not setup.design.sequential:
        return [], [], []
    recorded = list(sessions[0].results.looks or ())
    claims: list[Out] = []
    problems = []
    for k, look in enumerate(recorded):
        rounds = tuple(x.round for x in recorded[: k + 1])
        timeline = Timeline(rounds, setup.design.horizon, rules=setup.design.rules)
        at_look = replace(setup, timeline=timeline, at=rested_at(recorded[:k]))
        replayed = take_look(at_look, look.active, look.round)
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
