"""The looks of a sequential session: what is known after a scheduled round (the intervals of the
configs still running, which cannot be the fastest, the leading tier and how well it is
resolved). The bench session is handed SequentialLooks and records what each look returns."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tfbuild.analysis.answer import Decision, decide
from tfbuild.analysis.estimates import (
    Estimate,
    Setup,
    aa_too_wide,
    held,
    indifference,
    make_setup,
    noise_margin,
    ranking_estimates,
)
from tfbuild.analysis.gaps import flagged
from tfbuild.analysis.power import rounds_left
from tfbuild.analysis.rounds import Rounds
from tfbuild.analysis.selection import Out, candidates, leading, resolution, selection
from tfbuild.analysis.sessions import Session, Timeline, rest_estimates, rested_at
from tfbuild.analysis.stopping import design_text, stopping
from tfbuild.bench.schedule import Looked
from tfbuild.results import model
from tfbuild.results.model import Results


@dataclass(frozen=True)
class Findings:
    """One look of a sequential session (or the one look of a report): what was known after
    `round` rounds."""

    round: int
    active: list[str]
    estimates: dict[str, Estimate]
    out: list[Out]
    leading: list[str]
    resolution: float
    """The widest half-width (fraction) of a leading config's interval against the baseline;
    0 when the baseline alone leads."""
    margin: float
    """The practical margin of the verdicts: the spread of one process (rules 1-4), or the
    indifference margin (rules 5: the design's, never below that spread; rules 6: the
    design's)."""
    aa: Estimate | None = None
    """The A/A control overall, as the report judges it when the session stops here."""
    floors: dict[str, float] = field(default_factory=dict)
    """Each leading config that measured the whole suite: its lower bound of its throughput over
    the fastest other such config (selection.floors); at or above 1 / (1 + margin), it is within
    the margin of the fastest of them."""
    gated: bool = False
    """Rules 6: nothing is put out at this look, the A/A control being wider than the span the
    answer allows."""

    @property
    def certified(self) -> list[str]:
        """The leading configs known to be within the margin of the fastest."""
        return model.within_margin(self.floors, self.margin)


def take_look(setup: Setup, active: Sequence[str], round_: int) -> Findings:
    """What a sequential session knows at its look after `round_` rounds: the intervals of the
    configs still running, which cannot be the fastest, the leading tier, its resolution and
    how close each leading config is known to be to the fastest. `setup` holds the looks
    scheduled up to this one. Under rules 6 a config is put out only by a wider gap than the
    A/A control, judged with the pairs, shows two processes of one build can land apart
    (selection.selection), and the look is held (no stop, no answer) while the A/A control
    cannot tell the baseline from itself (estimates.held)."""
    spread = noise_margin(setup, setup.benchmarks, round_, True)
    if setup.rulebook.answer_decides:
        margin = indifference(setup, spread)
    else:
        margin = noise_margin(setup, setup.benchmarks, upto=round_)
    estimates, aa = ranking_estimates(setup, margin)
    gated = setup.rulebook.standard and setup.aa is not None and held(aa, max(margin, spread))
    running = [c for c in active if c in estimates or c == setup.baseline]
    whole = [c for c in running if setup.whole(c)]
    chosen = selection(setup, running, round_)
    claims = chosen.claims
    lead = leading(running, claims)
    return Findings(
        round=round_,
        active=list(active),
        estimates=estimates,
        out=claims,
        leading=lead,
        resolution=resolution([c for c in lead if c != setup.baseline], estimates),
        margin=margin,
        aa=aa,
        floors=candidates(chosen.found, whole, chosen.beyond),
        gated=gated,
    )


def look_decision(
    setup: Setup, look: Findings, flagged: Mapping[str, str] | None = None
) -> Decision:
    """Rules 6: what the answer is at a look (analysis.answer.decide, on the configs that could
    still be the fastest; `flagged`: those that failed a round or a benchmark, never the one to
    use), the A/A control's gate included."""
    contenders = [c for c in look.leading if c != setup.baseline]
    return decide(
        look.floors, look.margin, setup.baseline, look.estimates, contenders, look.aa,
        look.round, flagged or {}, held=look.gated,
    )  # fmt: skip


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
    ) -> Looked:
        """The look after round `round_`, its stop and the words for them."""
        return stopping(results, self.look(results, active, round_, elapsed), active)

    def describe(self, design: model.Design) -> str:
        return design_text(design)

    def look(
        self, results: Results, active: Sequence[str], round_: int, elapsed: float
    ) -> model.Look:
        """The look after round `round_` of the configs `active` ran, as the results record
        it."""
        design = results.design
        forked = results.suite.processes == "forked"
        self.rounds.weights = dict(results.suite.weights)  # the speed the session decides on
        for run in results.runs[self.seen :]:
            self.rounds.add(results.id, run, forked)
        self.seen = len(results.runs)
        baseline, aa = results.baseline.config, results.baseline.aa_config
        looks = tuple(n for n in design.schedule if n <= round_)
        timeline = Timeline(looks, design.horizon, rules=design.rules)
        rested = rested_at(results.looks)
        frozen = rest_estimates(results.looks)
        setup = make_setup(results, compared(results), self.rounds, design, aa, timeline, rested)
        look = take_look(setup, active, round_)
        out, resting = outs_and_rests(setup, look, active)
        gone = {c.config for c in out}
        lead = [c for c in look.leading if c not in (baseline, *gone, *resting)]
        width = max([look.resolution, *(e.half_width for e in frozen.values())])
        fit = aa_fits(setup, look)
        judged = dict(look.estimates)  # the configs', and the A/A control's under its key
        if aa and look.aa:
            judged[aa] = look.aa
        named = None
        if setup.rulebook.standard:
            missed = flagged([Session(Path(results.id), results)], setup, round_)
            named = look_decision(setup, look, missed).config
        left: int | None = None
        if setup.rulebook.answer_decides:  # the ETA of a session still deciding its answer
            decided = named is not None if setup.rulebook.standard else bool(look.certified)
            waiting = not decided or not fit
            if self.forecast and waiting:
                lead = [c for c in look.floors if c != baseline]  # the candidates
                left = rounds_left(setup, lead, look.margin)
        elif self.forecast and design.resolve is not None and (width > design.resolve or not fit):
            left = rounds_left(setup, lead, design.resolve)
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
            floors={c: f if math.isfinite(f) else None for c, f in look.floors.items()}
            if setup.rulebook.answer_decides
            else {},
            answer=named,
            held=look.gated,
        )


def aa_fits(setup: Setup, look: Findings) -> bool:
    """Whether the A/A control lets a session stop on its data at this look: when its interval
    lies within AA_SPAN margins (rules 3 and 4: a report could answer; rules 5: a bias of the
    machine that large would have shown; rules 6: when it can tell the baseline from itself,
    its interval within ANSWER_SPAN times the margin or a process's spread, estimates.held),
    and from rules 5 on when it does not show the baseline unlike its own copy (its interval
    holds 1)."""
    if setup.rulebook.aa_gate:
        return not aa_too_wide(look.aa, look.margin)
    if not setup.rulebook.answer_decides:
        return True
    holds = look.aa is None or look.aa.low <= 1.0 <= look.aa.high
    if setup.rulebook.standard:  # and it can tell the baseline from itself
        return holds and not look.gated
    return holds and not aa_too_wide(look.aa, look.margin)


def outs_and_rests(
    setup: Setup, look: Findings, active: Sequence[str]
) -> tuple[list[Out], list[str]]:
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
    if not setup.rulebook.rests or target is None:
        return out, []
    done = [c for c in lead if c in look.estimates and look.estimates[c].half_width <= target]
    return out, done if len(done) < len(lead) else []
