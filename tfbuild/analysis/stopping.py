"""When a sequential session stops, decided at each of its looks, with the words a person reads
about it as it runs: the configs put out or resting, how many could still be the fastest and
how well they are known, and the stop itself (the leading tier resolved, every other config
shown slower, or, under rules that let the answer decide, the answer decided), held back while
the A/A control is too wide or shows the baseline unlike its own copy. The rules version of the
session decides which; nothing outside tfbuild.analysis asks it."""

from __future__ import annotations

from collections.abc import Sequence

from tfbuild.bench.schedule import Looked
from tfbuild.results.model import Design, Look, Results, Stop
from tfbuild.results.rules import rules
from tfbuild.wording import duration, half_width


def design_text(design: Design) -> str:
    """How long a session runs, as its progress line says it."""
    if not design.sequential:
        return "fixed rounds"
    parts = [f"at least {design.first} rounds"]
    if rules(design.rules).answer_decides:
        parts.append(f"until the answer is decided at the {design.margin:.1%} margin")
    elif design.resolve is not None:
        parts.append(f"until resolved to ±{design.resolve:.0%}")
    if design.budget_s is not None:
        parts.append(f"within {duration(design.budget_s)}")
    return ", ".join(parts)


def stopping(results: Results, look: Look, active: Sequence[str]) -> Looked:
    """The look with its stop and its words, for the session `results` (which does not hold
    the look yet), whose configs `active` ran the round before it."""
    design, r = results.design, look.round
    baseline = results.baseline.config
    running = [c for c in active if c not in look.stopped]
    out = {e.config for e in look.eliminated}
    lead = [c for c in look.leading if c != baseline and c not in out]
    notes = [
        f"out after round {r}: {e.config} trails {e.slower_than} ({e.ratio:.3f}x paired by "
        "round, beyond the one-sided bound); the configs left still hold the fastest"
        for e in look.eliminated
    ]
    notes += [
        f"resting after round {r}: {c} is known to the target {half_width(design.resolve)}: it "
        "runs no more rounds and stays in the leading tier, judged at this look"
        for c in look.rested
    ]
    if rules(design.rules).answer_decides:
        stop, said = _decided(results, look, lead, len(running))
        return Looked(look, stop, (*notes, *said))
    if not lead:
        summary = f"only the baseline {baseline} can be the fastest"
    else:
        summary = (
            f"{len(lead)} {'config' if len(lead) == 1 else 'configs'} besides the baseline "
            f"could be the fastest, known to {half_width(look.resolution)} (target "
            f"{half_width(design.resolve)})"
        )
    left = look.rounds_left
    notes.append(
        f"after round {r}: {summary}; {len(running)} configs run"
        + (f"; about {left} more rounds" if left else "")
    )
    resolved = design.resolve is not None and look.resolution <= design.resolve
    if (resolved or not lead) and not look.aa_fit:
        notes.append(
            f"the A/A control{_control(results, look)} is still too wide for an answer at the "
            f"{look.margin:.1%} margin: running on until it is not"
        )
        return Looked(look, None, tuple(notes))
    if not lead:
        message = (
            f"every other config is shown slower than the baseline {baseline} after {r} rounds"
        )
        return Looked(look, Stop(reason="resolved", round=r, message=message), tuple(notes))
    if resolved:
        message = (
            f"the leading tier is resolved to {half_width(look.resolution)} (target "
            f"{half_width(design.resolve)}) after {r} rounds"
        )
        return Looked(look, Stop(reason="resolved", round=r, message=message), tuple(notes))
    return Looked(look, None, tuple(notes))


def _decided(
    results: Results, look: Look, lead: Sequence[str], running: int
) -> tuple[Stop | None, list[str]]:
    """Stop when the look decides the answer (rules 6: the config it names, Look.answer;
    rules 5: a leading config known to be within the margin of the fastest) and the A/A
    control does not show the baseline unlike its own copy."""
    r, baseline = look.round, results.baseline.config
    named, state = _answer_state(results, look)
    leaders = len(lead) + (baseline in look.leading)
    held = (
        " (the A/A control cannot tell the baseline from itself yet: only configs far behind "
        "are put out)"
        if look.held
        else ""
    )
    left = look.rounds_left
    notes = [
        f"after round {r}: {leaders} could be the fastest{held}; {state}; {running} configs run"
        + (f"; about {left} more rounds" if left else "")
    ]
    if named is None:
        return None, notes
    if not look.aa_fit:
        why = (
            "cannot tell the baseline from itself yet"
            if look.held
            else "shows the baseline unlike its own copy"
        )
        notes.append(f"the A/A control{_control(results, look)} {why}: running on")
        return None, notes
    message = f"the answer is decided after {r} rounds: {state}"
    return Stop(reason="resolved", round=r, message=message), notes


def _answer_state(results: Results, look: Look) -> tuple[str | None, str]:
    """The config the answer names at the look (None while it is open), and the state of the
    answer in words."""
    baseline = results.baseline.config
    margin = f"the {look.margin:.1%} margin"
    if rules(results.design.rules).standard:
        named = look.answer
        if named == baseline:
            return named, f"no config can be faster than the baseline by more than {margin}"
        if named is not None:
            return named, f"{named} is faster than the baseline and within {margin} of the fastest"
        return None, f"neither answer is shown at {margin} yet"
    named = _certified(look, baseline)
    floors = {c: f for c, f in look.floors.items() if f is not None}
    closest = max(floors, key=lambda c: floors[c], default=None)
    if named is not None:
        return named, f"{named} is within {margin} of the fastest"
    if closest is not None:
        return None, (
            f"none is known within {margin} of the fastest yet (closest: {closest}, at least "
            f"{min(1.0, floors[closest]):.3f} of it)"
        )
    return None, "nothing is measured yet"


def _certified(look: Look, baseline: str) -> str | None:
    """Rules 5: of the configs known within the margin of the fastest, the one the answer
    names: the baseline (keep it), else the one furthest ahead of the baseline."""
    known = look.certified
    if baseline in known:
        return baseline

    def ahead(config: str) -> float:
        e = look.estimates.get(config)
        return e.ratio if e else 0.0

    return max(known, key=ahead, default=None)


def _control(results: Results, look: Look) -> str:
    """The A/A control's interval at a look, as a parenthesis (empty without one)."""
    control = look.estimates.get(results.baseline.aa_config or "")
    return f" ({control.ratio:.3f}x [{control.low:.3f}, {control.high:.3f}])" if control else ""
