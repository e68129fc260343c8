"""`tfbuild scenarios` as text and Markdown: how often the answer a report leads with was right
on simulated sessions with a known truth, the answer first. Formats; never computes."""

from __future__ import annotations

from tfbuild.analysis.scenarios import ScenarioRun, Scored

HEAD = (
    "scenario", "what is true", "right (>=)", "wrong (<=)", "inconclusive (<=)", "processes",
    "verdicts", "targets",
)  # fmt: skip


def _rate(count: int, sessions: int, bound: float) -> str:
    return f"{count / sessions:.1%} ({bound:.1%})"


def _rows(run: ScenarioRun) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for t in run.scored:
        n = t.sessions
        decided = t.median_decided
        rows.append(
            (
                t.scenario,
                t.about,
                _rate(t.right, n, t.right_lower),
                _rate(t.wrong, n, t.wrong_upper),
                _rate(t.inconclusive, n, t.inconclusive_upper),
                f"{decided:g}" if decided is not None else "-",
                f"{t.benchmark_wrong / n:.1%}",
                "missed: " + "; ".join(t.misses) if t.misses else "met",
            )
        )
    return rows


def summary_line(run: ScenarioRun) -> str:
    """The answer first: the worst wrong share and its bound over the scenarios, and whether
    every scenario met its targets."""
    worst: Scored = max(run.scored, key=lambda t: t.wrong_upper)
    share = worst.wrong / worst.sessions
    missed = [t.scenario for t in run.scored if t.misses]
    met = (
        "every scenario meets its targets"
        if not missed
        else f"{len(missed)} of {len(run.scored)} miss their targets ({', '.join(missed)})"
    )
    verdicts = max(t.benchmark_wrong / t.sessions for t in run.scored)
    return (
        f"Wrong answers: at most {share:.1%} of the sessions of a scenario (one-sided 95 % "
        f"bound {worst.wrong_upper:.1%}, {worst.scenario}); {met} (wrong at most "
        f"{run.wrong_target:.1%}, its bound {run.wrong_bound_target:.1%}; right at least "
        f"{run.right_target:.0%} where one config leads by twice the margin); sessions with a "
        f"wrong per-benchmark verdict: {'none' if verdicts == 0 else f'at most {verdicts:.1%}'}; "
        f"in {run.sessions} simulated sessions per scenario (decision rules {run.rules}, "
        f"the {run.margin:.0%} margin, answers at {run.confidence:.1%} confidence)."
    )


def _legend(run: ScenarioRun) -> str:
    return (
        "right, wrong, inconclusive: shares of the sessions' answers, each with its one-sided "
        "95 % bound (Clopper-Pearson; right's lower, the others' upper); processes: the median "
        f"benchmark processes of the sessions that answered (each {run.process_s:g} s; the "
        f"budget {run.budget_at_least_s / 60:g} min, or {run.budget_per_config_s / 60:g} a "
        "config run where more); verdicts: the share of sessions whose report held a "
        "per-benchmark verdict the truth contradicts; targets: the scenario's own"
    )


def scenarios_text(run: ScenarioRun) -> str:
    rows = [HEAD, *_rows(run)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    lines = [summary_line(run), ""]
    for k, row in enumerate(rows):
        cells = [
            c.ljust(w) if i in (0, 1, 7) else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines += ["", _legend(run)]
    return "\n".join(lines) + "\n"


def scenarios_markdown(run: ScenarioRun) -> str:
    lines = [summary_line(run), "", "| " + " | ".join(HEAD) + " |"]
    lines.append("|" + "|".join(["---", "---", *["---:"] * 5, "---"]) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in _rows(run)]
    lines += ["", _legend(run)]
    return "\n".join(lines) + "\n"
