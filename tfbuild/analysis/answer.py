"""The answer a report leads with, in a few lines: what to use, and what that guarantees in the
user's terms; or that the data does not decide it yet, why, what it does show, and roughly
what budget would settle it.

The answer is a comparison with a standard, the baseline being what the person runs now
(Nelson and Goldsman 2001; Kim 2005): "Use X" tells them to switch, so it is said only when X
is shown faster than the baseline (its lower bound against the baseline above 1, in the
family of intervals against the baseline) and X is the fastest config measured or within the
margin of it (its floor, the lower bound of its throughput over the fastest of the others, at
or above 1 / (1 + margin): Hsu's multiple comparisons with the best, selection.floors);
"Keep the baseline" when no config that could be the fastest can be faster than the baseline
by more than the margin (every upper bound against the baseline within it). The two families
together err with at most the answer's share of alpha, whatever the number of configs and
looks (alpha spending); anything less is "Inconclusive". The margin is the one asked: noise
changes how many rounds an answer takes, never its question."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from tfbuild.analysis.estimates import ANSWER_SPAN, Estimate
from tfbuild.results.model import within_margin


def confidence(split: Mapping[str, float]) -> float:
    """How sure the answer is: it rests on the intervals against the baseline and on the
    selection of the configs that could be the fastest, so on both families' shares of
    alpha."""
    return 1.0 - split["ranking"] - split["selection"]


@dataclass(frozen=True)
class Decision:
    """What the last look decides: keep the baseline, use a config, or nothing yet."""

    kind: str
    """use (a config shown faster than the baseline and within the margin of the fastest),
    keep (the baseline) or inconclusive."""
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
    """rounds (too few), aa (the A/A control), flagged (the one to use failed in some rounds)
    or open (neither answer is shown yet)."""
    contenders: tuple[str, ...] = ()
    """The configs besides the baseline that could be the fastest: "Keep" bounds each."""
    held: bool = False
    """The A/A control could not tell the baseline from itself yet (estimates.held): nothing
    is decided."""


def _bound(e: Estimate | None) -> float:
    """How much faster than the baseline a config can be, by its interval (inf unknown)."""
    return e.high if e is not None and math.isfinite(e.high) else math.inf


def decide(
    floors: Mapping[str, float],
    margin: float,
    baseline: str,
    ranking: Mapping[str, Estimate],
    contenders: Sequence[str],
    aa: Estimate | None,
    rounds: int,
    flagged: Mapping[str, str],
    held: bool = False,
) -> Decision:
    """The answer at a look: keep the baseline when every config that could be the fastest
    (`contenders`) is at most the margin faster than it; else use the config shown faster than
    the baseline and known within `margin` of the fastest (the one furthest ahead of the
    baseline, of those measured every round: `flagged` says what the others missed);
    inconclusive when neither is shown, when the A/A control shows the baseline unlike its own
    copy or (`held`) cannot tell the baseline from itself yet, or before two rounds (nothing is
    known of the noise)."""
    contenders = tuple(contenders)

    def undecided(why: str, cause: str) -> Decision:
        return Decision("inconclusive", None, margin, floors, why, cause, contenders)

    if rounds < 2:
        return undecided(
            f"{rounds} round{'s' if rounds != 1 else ''} gives no spread between processes: "
            "nothing can be decided from it",
            "rounds",
        )
    if aa is not None and not aa.low <= 1.0 <= aa.high:
        return undecided(
            f"the A/A control (the baseline against its own copy, the same build) is "
            f"{aa.ratio:.3f}x [{aa.low:.3f}, {aa.high:.3f}]: this machine showed one build "
            "unlike itself, so no difference between builds can be trusted",
            "aa",
        )
    if held:
        return replace(
            undecided(
                "the A/A control (the baseline against its own copy, the same build) cannot tell "
                f"the baseline from itself yet: its interval reaches more than {ANSWER_SPAN:g}x "
                "the margin (or the spread of one process, where larger) either way",
                "aa",
            ),
            held=True,
        )
    if all(_bound(ranking.get(c)) <= 1.0 + margin + 1e-12 for c in contenders):
        return Decision("keep", baseline, margin, floors, contenders=contenders)
    known = within_margin(floors, margin)
    faster = [c for c in known if c != baseline and c in ranking and ranking[c].low > 1.0]
    usable = [c for c in faster if c not in flagged]
    if usable:
        named = max(usable, key=lambda c: ranking[c].ratio)
        return Decision("use", named, margin, floors, contenders=contenders)
    if faster:
        return undecided(f"{faster[0]} is shown faster, but {flagged[faster[0]]}", "flagged")
    if not floors:
        return undecided(
            "no config that measured the whole suite has results beside the baseline's", "rounds"
        )
    return undecided(_open(floors, margin, baseline, ranking, contenders), "open")


def _open(
    floors: Mapping[str, float],
    margin: float,
    baseline: str,
    ranking: Mapping[str, Estimate],
    contenders: Sequence[str],
) -> str:
    """Why neither answer is shown yet, from the strongest evidence for each."""
    widest = max(contenders, key=lambda c: _bound(ranking.get(c)))
    reach = _bound(ranking.get(widest))
    keep = (
        f"{widest} could be up to {reach:.3f}x the baseline"
        if math.isfinite(reach)
        else (f"{widest} has no interval against the baseline yet")
    )
    shown = [c for c in contenders if c in ranking and ranking[c].low > 1.0]
    if shown:
        best = max(shown, key=lambda c: floors.get(c, 0.0))
        if best not in floors:
            return (
                f"{best} is faster than the baseline on what it measured, but it did not measure "
                "every benchmark the baseline did, so it is no candidate"
            )
        floor = min(1.0, floors[best])
        return (
            f"{best} is faster than the baseline, but not yet known to be the fastest config or "
            f"within the margin of it (it is at least {floor:.3f} of the fastest)"
        )
    return (
        "no config is shown faster than the baseline, nor is every one shown at most the "
        f"margin faster ({keep})"
    )


@dataclass(frozen=True)
class Answer:
    decided: bool
    kind: str
    """use, keep or inconclusive."""
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
    confidence: float = math.nan
    """How sure the answer is (answer.confidence of the session's rules)."""


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


def where(config: str, per_benchmark: Mapping[str, Estimate]) -> list[str]:
    """Which benchmarks carry a config's gain over the baseline (each benchmark's interval, in
    the per-benchmark family), and a warning when it is slower, or not shown faster, on any:
    a person whose model is like those is told to weight them."""
    if len(per_benchmark) < 2:
        return []
    groups: dict[str, list[str]] = {"faster": [], "neither": [], "slower": []}
    for bench, e in per_benchmark.items():
        side = "faster" if e.low > 1.0 else "slower" if e.high < 1.0 else "neither"
        groups[side].append(f"{bench} {e.ratio:.3f}x")
    said = {
        "faster": "faster on",
        "neither": "not shown faster or slower on",
        "slower": "slower on",
    }
    parts = [f"{said[side]} {', '.join(found)}" for side, found in groups.items() if found]
    lines = [f"Where: {'; '.join(parts)} (each benchmark against the baseline)."]
    lacking = [b.rsplit(" ", 1)[0] for b in groups["slower"] + groups["neither"]]
    if lacking:
        what = "slower" if groups["slower"] else "not shown faster"
        if groups["slower"] and groups["neither"]:
            what = "slower or not shown faster"
        those = "it matters" if len(lacking) == 1 else "they matter"
        lines.append(
            f"warning: {config} is {what} on {', '.join(lacking)}: if {those} most for your "
            f"model, weight {'it' if len(lacking) == 1 else 'them'} (`tfbuild compare --weight "
            f"{lacking[0]}=3 ...`) and read the answer again."
        )
    return lines


def _keep_lines(
    decision: Decision, by_config: Mapping[str, Estimate], baseline: str, said: str
) -> list[str]:
    """The answer to keep the baseline, and how close the nearest config came to it."""
    lines = [
        f"Keep the baseline {baseline}: no config measured is faster than it by more than the "
        f"{decision.margin:.1%} margin ({said})."
    ]
    bounded = [by_config[c] for c in decision.contenders if c in by_config]
    if not bounded:
        return [*lines, "Nothing else measured can be the fastest."]
    closest = max(bounded, key=lambda e: e.high)
    lines.append(
        f"Of the configs that could be the fastest, {closest.config} "
        f"({_interval(closest)}) reaches highest, at most {closest.high:.3f}x the "
        "baseline."
    )
    ahead = [e for e in bounded if e.low > 1.0]
    if ahead:
        lines.append(
            "Shown faster than the baseline, by less than the margin: "
            + ", ".join(f"{e.config} ({_interval(e)})" for e in ahead)
            + "."
        )
    return lines


def answer(
    decision: Decision,
    ranking: Sequence[Estimate],
    baseline: str,
    settle: Callable[[float], tuple[int, int] | None] | None,
    seconds: float | None,
    most: int,
    sure: float,
    per_benchmark: Mapping[str, Estimate] | None = None,
) -> Answer:
    """The answer of one host's report, from its decision, at confidence `sure`.
    `settle(margin)` plans the fixed design that would decide the answer (simulated; asked only
    when neither answer is shown yet), None to say nothing of a budget; `seconds` is the time
    of one benchmark process, when the session recorded it; `per_benchmark` holds the answer's
    config's interval on each benchmark (where its gain is)."""
    margin, said = decision.margin, f"{sure:.1%} confidence"
    by_config = {e.config: e for e in ranking}
    if decision.kind == "keep":
        lines = _keep_lines(decision, by_config, baseline, said)
        return Answer(True, "keep", tuple(lines), "", None, margin, sure)
    if decision.kind == "use" and decision.config is not None:
        chosen = by_config[decision.config]
        lines = [
            f"Use {decision.config}: {_faster_by(chosen)} than the baseline {baseline} "
            f"({_interval(chosen)}), and the fastest config measured or within the {margin:.1%} "
            f"margin of it ({said})."
        ]
        also = [
            by_config[c]
            for c in within_margin(decision.floors, margin)
            if c != decision.config and c in by_config and by_config[c].low > 1.0
        ]
        lines += where(decision.config, per_benchmark or {})
        if also:
            lines.append(
                "Also shown faster and within the margin: "
                + ", ".join(f"{e.config} ({_interval(e)})" for e in also)
                + "."
            )
        return Answer(True, "use", tuple(lines), "", None, margin, sure)
    lines = [f"Inconclusive at the {margin:.1%} margin: {decision.why}."]
    others = sorted(
        (by_config[c] for c in decision.floors if c != baseline and c in by_config),
        key=lambda e: -e.ratio,
    )
    faster = [e for e in others if e.low > 1.0]
    if faster:
        lines.append(
            f"What it does show: {faster[0].config} is faster than the baseline {baseline} "
            f"({_interval(faster[0])}); which config is fastest is not settled."
        )
    elif others:
        lines.append(
            f"What it does show: {len(decision.floors)} configs could still be the fastest, "
            f"the baseline {'among them' if baseline in decision.floors else 'not among them'}; "
            "none is shown faster than the baseline."
        )
    plan = None
    if (decision.cause == "open" or decision.held) and settle is not None:
        plan = settle(margin)
        lines.append(_settle_line(plan, margin, seconds, most))
    return Answer(False, "inconclusive", tuple(lines), decision.why, plan, margin, sure)
