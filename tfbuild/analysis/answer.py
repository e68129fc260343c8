"""The answer a report leads with, in one to three lines: what to use, how much faster than the
baseline and how sure; or that the data does not decide it yet, why, what it does show, and
roughly what budget would settle it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tfbuild.analysis.choice import Choice
from tfbuild.analysis.estimates import AA_SPAN, Estimate, aa_too_wide
from tfbuild.text import half_width

DEFAULT_TARGET = 0.05
"""The resolution a session without its own target (a fixed design) is held to: the default
matrix's `resolve`."""


@dataclass(frozen=True)
class Answer:
    decided: bool
    kind: str
    """use (a config faster than the baseline), keep (the baseline) or inconclusive."""
    lines: tuple[str, ...]
    """The answer first, then what else a person needs to act on it."""
    why: str
    """What keeps it from being decided (empty when decided)."""
    settle: tuple[int, int] | None
    """Rounds and processes of a fixed design that resolves the leading tier to the target in
    half of the sessions like this one, when that is what it lacks."""


def _interval(e: Estimate) -> str:
    return f"{e.ratio:.3f}x [{e.low:.3f}, {e.high:.3f}]"


def _faster_by(e: Estimate) -> str:
    change = e.ratio - 1.0
    return f"{abs(change):.1%} {'faster' if change >= 0 else 'slower'}"


def _settle_line(
    settle: tuple[int, int] | None, target: float, seconds: float | None, most: int
) -> str:
    if settle is None:
        return (
            f"Resolving it to ±{target:.1%} would take more than {most} rounds of every config "
            "here (simulated from this session's noise): pin the processes (--cpus) or use a "
            "quieter machine."
        )
    rounds, processes = settle
    budget = ""
    if seconds:
        minutes = max(1, math.ceil(processes * seconds / 60))
        budget = f", about {minutes} min at {seconds:.1f} s a process"
    return (
        f"To settle it: about {rounds} rounds of every config ({processes} benchmark processes"
        f"{budget}; `--rounds={rounds}`) resolve the leading tier to ±{target:.1%} in half of "
        "the sessions like this one, simulated from its noise."
    )


def answer(
    ranking: Sequence[Estimate],
    lead: Sequence[str],
    baseline: str,
    margin: float,
    resolution: float,
    target: float | None,
    aa: Estimate | None,
    choice: Choice | None,
    settle: Callable[[float], tuple[int, int] | None],
    seconds: float | None,
    most: int,
) -> Answer:
    """The answer of one host's report. `settle(target)` plans the fixed design that would
    resolve the leading tier (simulated; only asked when that is what is missing); `seconds`
    is the time of one benchmark process, when the session recorded it."""
    goal = target if target is not None else DEFAULT_TARGET
    by_config = {e.config: e for e in ranking}
    others = [c for c in lead if c != baseline]
    resolved = not others or resolution <= goal + 5e-4  # as printed, to 0.1 %
    reasons = []
    if not resolved:
        reasons.append(
            f"the leading tier ({len(others)} config{'s' if len(others) != 1 else ''} besides "
            f"the baseline) is resolved to {half_width(resolution)}, not the "
            f"±{goal:.1%} target"
        )
    if aa_too_wide(aa, margin) and aa is not None:
        reasons.append(
            f"the A/A control (the baseline against its copy) is {_interval(aa)}, wider than "
            f"{AA_SPAN:.0f} times the {margin:.1%} margin"
        )
    chosen = by_config.get(choice.config) if choice and choice.config != baseline else None
    ahead = sorted(
        (by_config[c] for c in others if c in by_config and by_config[c].low > 1.0),
        key=lambda e: -e.ratio,
    )
    if not reasons and chosen is not None:
        lines = [
            f"Use {chosen.config}: {_faster_by(chosen)} than the baseline {baseline} "
            f"({_interval(chosen)}, beyond the {margin:.1%} margin), leading tier resolved to "
            f"{half_width(resolution)}, every claim at 95 % confidence together."
        ]
        tied = [by_config[c] for c in others if c != chosen.config and c in by_config]
        if tied:
            lines.append(
                "Not told apart from it: "
                + ", ".join(f"{e.config} ({_interval(e)})" for e in tied)
                + "."
            )
        return Answer(True, "use", tuple(lines), "", None)
    if not reasons:
        if not others:
            known = "nothing else measured can be the fastest"
        else:
            known = f"no config is faster beyond the {margin:.1%} margin"
        lines = [
            f"Keep the baseline {baseline}: {known}; leading tier resolved to "
            f"{half_width(resolution)}, every claim at 95 % confidence together."
        ]
        if ahead:
            lines.append(
                f"{ahead[0].config} is ahead of it by less than the margin: {_interval(ahead[0])}."
            )
        return Answer(True, "keep", tuple(lines), "", None)
    why = "; ".join(reasons)
    lines = [f"Inconclusive: {why}."]
    if chosen is not None:
        lines.append(
            f"What it does show: {chosen.config} is {_faster_by(chosen)} than the baseline "
            f"{baseline} ({_interval(chosen)}, beyond the {margin:.1%} margin); another config "
            "may be faster still."
        )
    elif ahead:
        lines.append(
            f"What it does show: {ahead[0].config} is probably faster than the baseline "
            f"{baseline} ({_interval(ahead[0])}), by less than the {margin:.1%} margin or by "
            "an amount not yet resolved; nothing is shown faster beyond it."
        )
    else:
        lines.append(
            f"What it does show: nothing is faster than the baseline {baseline} beyond the "
            f"{margin:.1%} margin so far."
        )
    plan = None
    if not resolved:
        plan = settle(goal)
        lines.append(_settle_line(plan, goal, seconds, most))
    return Answer(False, "inconclusive", tuple(lines), why, plan)
