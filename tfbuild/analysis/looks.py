"""The looks of a sequential session: what is known after a scheduled round (the intervals of the
configs still running, which cannot be the fastest, the leading tier and how well it is
resolved). The bench session is handed SequentialLooks and records what each look returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tfbuild.analysis.estimates import (
    OVERALL,
    SPLIT,
    Estimate,
    Out,
    Setup,
    aa_control,
    aa_too_wide,
    leading,
    make_setup,
    noise_margin,
    out_claims,
    ranking_estimates,
    resolution,
    rested_at,
)
from tfbuild.analysis.power import rounds_left
from tfbuild.analysis.rounds import Rounds
from tfbuild.analysis.sessions import Timeline
from tfbuild.results import model
from tfbuild.results.model import Results


@dataclass(frozen=True)
class Look:
    """One look of a sequential session: what was known after `round` rounds."""

    round: int
    active: list[str]
    estimates: dict[str, Estimate]
    out: list[Out]
    leading: list[str]
    resolution: float
    """The widest half-width (fraction) of a leading config's interval against the baseline;
    0 when the baseline alone leads."""
    margin: float
    aa: Estimate | None = None
    """The A/A control overall, as the report judges it when the session stops here."""


def take_look(setup: Setup, logs: Rounds, active: Sequence[str], round_: int) -> Look:
    """What a sequential session knows at its look after `round_` rounds: the intervals of the
    configs still running, which cannot be the fastest, the leading tier and its resolution.
    `setup` holds the looks scheduled up to this one."""
    margin = noise_margin(setup, logs, setup.benchmarks, upto=round_)
    estimates = ranking_estimates(setup, logs, margin)
    running = [c for c in active if c in estimates or c == setup.baseline]
    claims = out_claims(setup, logs, running, round_)
    lead = leading(running, claims)
    alpha = setup.against_baseline(SPLIT["ranking"])
    return Look(
        round=round_,
        active=list(active),
        estimates=estimates,
        out=claims,
        leading=lead,
        resolution=resolution([c for c in lead if c != setup.baseline], estimates),
        margin=margin,
        aa=aa_control(setup, logs, OVERALL, setup.benchmarks, alpha, margin),
    )


def compared(results: Results) -> list[str]:
    """The configs a session compares with its baseline: every ready config but the baseline
    and its A/A copy."""
    ready = results.ready
    return [
        c.key
        for c in results.configs
        if not c.aa and c.key != results.baseline.config and c.variant in ready
    ]


class SequentialLooks:
    """The looks of a sequential bench session, handed to it as its Looker: after a scheduled
    round, which configs cannot be the fastest (each stopped with the strongest claim about
    it), which leading configs rest (known to the target while another is not), the leading
    tier, its resolution and the rounds it would take to reach the target. Keeps the
    per-round values of the runs it has seen, so each look adds only the new ones.
    Without `forecast` a look leaves the rounds left out: they decide nothing (they are the
    ETA a person reads), and their simulation is most of a look's cost when sessions are
    replayed by the thousand or re-decided after the fact (`tfbuild replay`)."""

    def __init__(self, forecast: bool = True) -> None:
        self.rounds = Rounds({})
        self.seen = 0
        self.forecast = forecast

    def __call__(
        self, results: Results, active: Sequence[str], round_: int, elapsed: float
    ) -> model.Look:
        design = results.design
        for run in results.runs[self.seen :]:
            self.rounds.add(results.id, run)
        self.seen = len(results.runs)
        baseline, aa = results.baseline.config, results.baseline.aa_config
        looks = tuple(n for n in design.schedule if n <= round_)
        timeline = Timeline(looks, design.horizon, rules=design.decisions)
        rested = rested_at(results.looks)
        frozen = rest_estimates(results.looks)
        setup = make_setup(results, compared(results), self.rounds, design, aa, timeline, rested)
        look = take_look(setup, self.rounds, active, round_)
        out, resting = decisions(setup, look, active)
        gone = {c.config for c in out}
        lead = [c for c in look.leading if c not in (baseline, *gone, *resting)]
        width = max([look.resolution, *(e.half_width for e in frozen.values())])
        fit = setup.rules < 3 or not aa_too_wide(look.aa, look.margin)
        judged = dict(look.estimates)  # the configs', and the A/A control's under its key
        if aa and look.aa:
            judged[aa] = look.aa
        left: int | None = None
        if self.forecast and design.resolve is not None and (width > design.resolve or not fit):
            left = rounds_left(setup, self.rounds, lead, design.resolve)
        return model.Look(
            round=round_,
            elapsed_s=round(elapsed, 1),
            active=tuple(active),
            eliminated=tuple(
                model.Elimination(config=c.config, slower_than=c.than, ratio=c.ratio, upper=c.upper)
                for c in out
            ),
            leading=(*look.leading, *frozen),
            resolution=width,
            margin=look.margin,
            estimates={
                **{
                    c: model.LookEstimate(ratio=e.ratio, low=e.low, high=e.high, rounds=e.rounds)
                    for c, e in judged.items()
                    if c in active
                },
                **frozen,
            },
            rounds_left=left,
            aa_fit=fit,
            rested=tuple(resting),
        )


def rest_estimates(looks: Sequence[model.Look] | None) -> dict[str, model.LookEstimate]:
    """The leading configs that rested at earlier looks, each with its interval as the look it
    rested at recorded it: what later looks count them by (never judged again while the
    session runs, so a resolved config stays resolved and its pairs are not tested anew)."""
    return {c: look.estimates[c] for look in looks or () for c in look.rested}


def decisions(setup: Setup, look: Look, active: Sequence[str]) -> tuple[list[Out], list[str]]:
    """What a sequential session does at a look of the configs in `active`: the configs it puts
    out (each with the strongest claim about it), and the leading configs that rest (rules 4):
    those whose interval against the baseline is within the target while another leading
    config's is not. A config resolved to the target needs no more rounds: its interval holds
    at every look (alpha spending), so it is judged there, and the rounds go to the configs the
    session still waits for. When all of them are resolved none rests: the session stops, or
    runs on for its A/A control."""
    strongest: dict[str, Out] = {}
    for claim in look.out:  # the strongest claim about each config comes first
        strongest.setdefault(claim.config, claim)
    out = [c for k, c in strongest.items() if k in active and k not in setup.reference]
    gone = {c.config for c in out}
    lead = [c for c in look.leading if c != setup.baseline and c not in gone]
    target = setup.design.resolve
    if setup.rules < 4 or target is None:
        return out, []
    done = [c for c in lead if c in look.estimates and look.estimates[c].half_width <= target]
    return out, done if len(done) < len(lead) else []
