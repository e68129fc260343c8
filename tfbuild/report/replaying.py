"""`tfbuild replay` as text and JSON: what today's decision rules would have done with a recorded
sequential session, the answer first (where it would have stopped, and with how many processes),
then its looks beside the recorded ones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tfbuild.analysis.replay import Replayed
from tfbuild.results.model import Look, Results
from tfbuild.results.rules import CURRENT_RULES
from tfbuild.wording import half_width


def _stopped(results: Results) -> str:
    stop = results.session.stop
    if stop is None:
        return "had not stopped"
    return f"stopped after round {stop.round} ({stop.reason})"


def summary(r: Replayed) -> dict[str, Any]:
    """The numbers of one replay: recorded and replayed side by side."""

    def side(results: Results, processes: int, seconds: float) -> dict[str, Any]:
        looks = results.looks or ()
        stop = results.session.stop
        return {
            "rules": results.design.rules,
            "schedule": list(results.design.schedule),
            "stop": {"reason": stop.reason, "round": stop.round} if stop else None,
            "processes": processes,
            "benchmark_s": round(seconds, 1),
            "resolution": looks[-1].resolution if looks else None,
            "looks": [
                {
                    "round": look.round,
                    "running": len(look.active),
                    "put_out": [e.config for e in look.eliminated],
                    "rested": list(look.rested),
                    "leading": list(look.leading),
                    "resolution": look.resolution,
                    "answer": look.answer,
                    "held": look.held,
                }
                for look in looks
            ],
        }

    recorded = r.recorded
    answers = {}
    if r.answers is not None:
        answers = {
            side: {"kind": a.kind, "margin": a.margin, "first": a.lines[0]}
            for side, a in zip(("recorded", "replayed"), r.answers, strict=True)
        }
    return {
        "session": recorded.id,
        "answers": answers,
        "recorded": side(recorded, len(recorded.runs), float(recorded.session.elapsed_s or 0.0)),
        "replayed": {**side(r.replayed, r.processes, r.seconds), "not_recorded": r.missing},
    }


def _looks_table(looks: Sequence[Look]) -> list[str]:
    """One row per look: what ran, what it put out ("held": nothing, its A/A control not yet
    able to tell the baseline from itself), what it rested (rules 4), what led, how well, and
    the answer it decided (rules 6)."""
    resting = any(look.rested for look in looks)
    head = ("after round", "running", "put out", *(("resting",) if resting else ()), "leading",
            "resolution", "answer")  # fmt: skip
    rows = [head]
    for look in looks:
        rows.append(
            (
                str(look.round),
                str(len(look.active)),
                "held" if look.held and not look.eliminated else str(len(look.eliminated)),
                *((str(len(look.rested)),) if resting else ()),
                str(len(look.leading)),
                half_width(look.resolution),
                look.answer or "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return [
        "  " + "  ".join(c.ljust(w) if i == len(head) - 1 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]  # fmt: skip


def replay_text(path: str, r: Replayed) -> str:
    """One replayed session as text, the answer first."""
    recorded, replayed = r.recorded, r.replayed
    before, after = len(recorded.runs), r.processes
    change = (before - after) / before if before else 0.0
    looks = replayed.looks or ()
    old_looks = recorded.looks or ()
    lines = [
        f"{path}: under today's rules it would have {_stopped(replayed)} with {after} "
        f"benchmark processes; the session {_stopped(recorded)} with {before} "
        f"({abs(change):.0%} {'fewer' if change >= 0 else 'more'})",
        f"Leading tier: {half_width(looks[-1].resolution) if looks else 'not looked at'} "
        "at the stop "
        f"(recorded: {half_width(old_looks[-1].resolution) if old_looks else 'no look'}); "
        f"{r.seconds / 60:.1f} min of the recorded processes' time "
        f"(recorded: {(recorded.session.elapsed_s or 0) / 60:.1f} min)",
    ]
    if r.answers is not None:
        lines += [
            f"Its answer: {r.answers[1].lines[0]}",
            f"The recorded session's answer: {r.answers[0].lines[0]}",
        ]
    if r.missing:
        lines.append(
            f"{r.missing} of these processes were not recorded (a config the session had put "
            "out or rested by then, or a round after it stopped): each is one of the config's "
            "recorded processes, drawn at random"
        )
    lines += [
        "",
        f"Today's rules (version {CURRENT_RULES}), looks after rounds "
        f"{', '.join(str(n) for n in replayed.design.schedule)}:",
        *_looks_table(looks),
        "",
        f"Recorded (rules version {recorded.design.rules}), looks after rounds "
        f"{', '.join(str(n) for n in recorded.design.schedule)}:",
        *_looks_table(old_looks),
    ]
    return "\n".join(lines)
