"""The answer a report leads with, in one to three lines: what to use, and what that guarantees
in the user's terms; or that the data does not decide it yet, why, what it does show, and
roughly what budget would settle it.

The answer is read off the last look (the one the session stopped at, or a last one after its
final round): multiple comparisons with the best (estimates.pairs, estimates.floors) give each
config that could be the fastest a lower bound of its throughput over the fastest of the
others, and one family of one-sided bounds (the selection's share of alpha, spent over the
looks) holds them all, and the outs, together. "Use X" says X is within the indifference margin
of the fastest config measured; "Keep the baseline" says no config measured is faster than the
baseline by more than the margin. Both hold with the selection family's confidence whatever the
number of configs and looks; anything less is "Inconclusive"."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tfbuild.analysis.estimates import SPLIT, Estimate
from tfbuild.results.model import answer_config, within_margin

CONFIDENCE = 1.0 - SPLIT["selection"]
"""How sure the answer is: the selection family's share of alpha is what it rests on."""


@dataclass(frozen=True)
class Decision:
    """What the last look decides: keep the baseline, use a config, or nothing yet."""

    kind: str
    """use (a config within the margin of the fastest), keep (the baseline) or inconclusive."""
    config: str | None
    """The config to use (the baseline for keep); None when inconclusive."""
    margin: float
    """The indifference margin the answer is given at."""
    floors: Mapping[str, float]
    """Each config that could be the fastest at the last look: the lower bound of its throughput
    over the fastest of the others."""
    why: str = ""
    """What keeps it from being decided (empty when decided)."""
    cause: str = ""
    """rounds (too few), aa (the A/A control), flagged (the one within the margin failed in
    some rounds) or open (none known within the margin yet)."""


def decide(
    floors: Mapping[str, float],
    margin: float,
    baseline: str,
    ranking: Mapping[str, Estimate],
    aa: Estimate | None,
    rounds: int,
    flagged: Mapping[str, str],
) -> Decision:
    """The answer of the last look: keep the baseline when it is within `margin` of the fastest
    (no config is faster by more), else use the config within the margin that is furthest
    ahead of the baseline and measured every round (`flagged` says what the others missed);
    inconclusive when none is known to be, when the A/A control shows the baseline unlike its
    own copy, or before two rounds (nothing is known of the noise)."""
    if rounds < 2:
        why = (
            f"{rounds} round{'s' if rounds != 1 else ''} gives no spread between processes: "
            "nothing can be decided from it"
        )
        return Decision("inconclusive", None, margin, floors, why, "rounds")
    if aa is not None and not aa.low <= 1.0 <= aa.high:
        why = (
            f"the A/A control (the baseline against its own copy, the same build) is "
            f"{aa.ratio:.3f}x [{aa.low:.3f}, {aa.high:.3f}]: this machine showed one build "
            "unlike itself, so no difference between builds can be trusted"
        )
        return Decision("inconclusive", None, margin, floors, why, "aa")
    known = within_margin(floors, margin)
    usable = [c for c in known if c not in flagged or c == baseline]
    named = answer_config(usable, baseline, lambda c: ranking[c].ratio if c in ranking else 0.0)
    if named == baseline:
        return Decision("keep", baseline, margin, floors)
    if named is not None:
        return Decision("use", named, margin, floors)
    if known:
        why = f"{known[0]} is within it of the fastest, but {flagged[known[0]]}"
        return Decision("inconclusive", None, margin, floors, why, "flagged")
    if not floors:
        why = "no config that measured the whole suite has results beside the baseline's"
        return Decision("inconclusive", None, margin, floors, why, "rounds")
    closest = max(floors, key=lambda c: floors[c])
    why = (
        f"no config is known yet to be within it of the fastest (the closest, {closest}, is "
        f"at least {min(1.0, floors[closest]):.3f} of it)"
    )
    return Decision("inconclusive", None, margin, floors, why, "open")


@dataclass(frozen=True)
class Answer:
    decided: bool
    kind: str
    """use (a config within the margin of the fastest), keep (the baseline) or inconclusive."""
    lines: tuple[str, ...]
    """The answer first, then what else a person needs to act on it."""
    why: str
    """What keeps it from being decided (empty when decided)."""
    settle: tuple[int, int] | None
    """Rounds and processes of a fixed design that decides the answer at the margin in half of
    the sessions like this one, when that is what it lacks. None when it is not, when it is
    beyond the longest design planned (its lines say so), or when no budget was asked for (its
    lines say nothing of one)."""
    margin: float = math.nan
    """The indifference margin the answer is given at."""
    confidence: float = CONFIDENCE


def _interval(e: Estimate) -> str:
    return f"{e.ratio:.3f}x [{e.low:.3f}, {e.high:.3f}]"


def _faster_by(e: Estimate) -> str:
    change = e.ratio - 1.0
    return f"{abs(change):.1%} {'faster' if change >= 0 else 'slower'}"


def _settle_line(
    settle: tuple[int, int] | None, margin: float, seconds: float | None, most: int
) -> str:
    if settle is None:
        return (
            f"Deciding it at the {margin:.1%} margin would take more than {most} rounds of every "
            "config here (simulated from this session's noise): pin the processes (--cpus), use "
            "a quieter machine, or a wider --resolve margin."
        )
    rounds, processes = settle
    budget = ""
    if seconds:
        minutes = max(1, math.ceil(processes * seconds / 60))
        budget = f", about {minutes} min at {seconds:.1f} s a process"
    return (
        f"To settle it: about {rounds} rounds of every config ({processes} benchmark processes"
        f"{budget}; `--rounds={rounds}`) decide the answer at the {margin:.1%} margin in half "
        "of the sessions like this one, simulated from its estimates and noise."
    )


def answer(
    decision: Decision,
    ranking: Sequence[Estimate],
    baseline: str,
    settle: Callable[[float], tuple[int, int] | None] | None,
    seconds: float | None,
    most: int,
) -> Answer:
    """The answer of one host's report, from its decision. `settle(margin)` plans the fixed
    design that would decide the answer (simulated; asked only when no config is known within
    the margin yet), None to say nothing of a budget; `seconds` is the time of one benchmark
    process, when the session recorded it."""
    margin, sure = decision.margin, f"{CONFIDENCE:.1%} confidence"
    by_config = {e.config: e for e in ranking}
    others = sorted(
        (by_config[c] for c in decision.floors if c != baseline and c in by_config),
        key=lambda e: -e.ratio,
    )
    if decision.kind == "keep":
        floor = decision.floors[baseline]
        lines = [
            f"Keep the baseline {baseline}: no config measured is faster than it by more than the "
            f"{margin:.1%} margin ({sure})."
        ]
        if others and math.isfinite(floor) and floor > 0:
            lines.append(
                f"The fastest of the others, {others[0].config} ({_interval(others[0])}), is at "
                f"most {1.0 / floor:.3f}x the baseline."
            )
        elif not others:
            lines.append("Nothing else measured can be the fastest.")
        return Answer(True, "keep", tuple(lines), "", None, margin)
    if decision.kind == "use" and decision.config is not None:
        chosen = by_config.get(decision.config)
        shown = (
            f"; {_faster_by(chosen)} than the baseline {baseline} ({_interval(chosen)})"
            if chosen
            else ""
        )
        lines = [
            f"Use {decision.config}: within the {margin:.1%} margin of the fastest config "
            f"measured ({sure}){shown}."
        ]
        also = [c for c in within_margin(decision.floors, margin) if c not in (decision.config,)]
        if also:
            lines.append(
                "Also within the margin: "
                + ", ".join(
                    f"{c} ({_interval(by_config[c])})" if c in by_config else c for c in also
                )
                + "."
            )
        if chosen is not None and chosen.low <= 1.0:
            lines.append(
                "It is not shown faster than the baseline, which is not known to be within the "
                "margin of the fastest."
            )
        return Answer(True, "use", tuple(lines), "", None, margin)
    lines = [f"Inconclusive at the {margin:.1%} margin: {decision.why}."]
    faster = [e for e in others if e.low > 1.0]
    if faster:
        lines.append(
            f"What it does show: {faster[0].config} is faster than the baseline {baseline} "
            f"({_interval(faster[0])}); which config is fastest is not settled."
        )
    elif others:
        lines.append(
            f"What it does show: {len(decision.floors)} configs could still be the fastest, "
            f"the baseline {'among them' if baseline in decision.floors else 'not'}; none is "
            "shown faster than the baseline."
        )
    plan = None
    if decision.cause == "open" and settle is not None:
        plan = settle(margin)
        lines.append(_settle_line(plan, margin, seconds, most))
    return Answer(False, "inconclusive", tuple(lines), decision.why, plan, margin)
