"""`tfbuild scenarios` as text and Markdown: how often the answer a report leads with was right
on simulated sessions with a known truth, the answer first. Formats; never computes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEAD = (
    "scenario", "what is true", "right (>=)", "wrong (<=)", "inconclusive (<=)", "processes",
    "verdicts", "targets",
)  # fmt: skip


def _rate(t: Mapping[str, Any], key: str, bound: str) -> str:
    n = t["sessions"]
    return f"{t[key] / n:.1%} ({t[bound]:.1%})"


def _rows(doc: Mapping[str, Any]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for t in doc["scenarios"]:
        n = t["sessions"]
        decided = t["median_decided"]
        rows.append(
            (
                str(t["scenario"]),
                str(t["about"]),
                _rate(t, "right", "right_lower"),
                _rate(t, "wrong", "wrong_upper"),
                _rate(t, "inconclusive", "inconclusive_upper"),
                f"{decided:g}" if decided is not None else "-",
                f"{t['benchmark_wrong'] / n:.1%}",
                "missed: " + "; ".join(t["misses"]) if t["misses"] else "met",
            )
        )
    return rows


def summary_line(doc: Mapping[str, Any]) -> str:
    """The answer first: the worst wrong share and its bound over the scenarios, and whether
    every scenario met its targets."""
    worst = max(doc["scenarios"], key=lambda t: t["wrong_upper"])
    share = worst["wrong"] / worst["sessions"]
    missed = [t["scenario"] for t in doc["scenarios"] if t["misses"]]
    targets = doc["targets"]
    met = (
        "every scenario meets its targets"
        if not missed
        else f"{len(missed)} of {len(doc['scenarios'])} miss their targets ({', '.join(missed)})"
    )
    verdicts = max(t["benchmark_wrong"] / t["sessions"] for t in doc["scenarios"])
    return (
        f"Wrong answers: at most {share:.1%} of the sessions of a scenario (one-sided 95 % "
        f"bound {worst['wrong_upper']:.1%}, {worst['scenario']}); {met} (wrong at most "
        f"{targets['wrong']:.1%}, its bound {targets['wrong_bound']:.1%}; right at least "
        f"{targets['right']:.0%} where one config leads by twice the margin); sessions with a "
        f"wrong per-benchmark verdict: {'none' if verdicts == 0 else f'at most {verdicts:.1%}'}; "
        f"in {doc['sessions']} simulated sessions per scenario (decision rules {doc['rules']}, "
        f"the {doc['margin']:.0%} margin, answers at {doc['confidence']:.1%} confidence)."
    )


def _legend(doc: Mapping[str, Any]) -> str:
    budget = doc["budget"]
    return (
        "right, wrong, inconclusive: shares of the sessions' answers, each with its one-sided "
        "95 % bound (Clopper-Pearson; right's lower, the others' upper); processes: the median "
        f"benchmark processes of the sessions that answered (each {doc['process_s']:g} s; the "
        f"budget {budget['at_least_s'] / 60:g} min, or {budget['per_config_s'] / 60:g} a config "
        "run where more); verdicts: the share of sessions whose report held a per-benchmark "
        "verdict the truth contradicts; targets: the scenario's own"
    )


def scenarios_text(doc: Mapping[str, Any]) -> str:
    rows = [HEAD, *_rows(doc)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    lines = [summary_line(doc), ""]
    for k, row in enumerate(rows):
        cells = [
            c.ljust(w) if i in (0, 1, 7) else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines += ["", _legend(doc)]
    return "\n".join(lines) + "\n"


def scenarios_markdown(doc: Mapping[str, Any]) -> str:
    lines = [summary_line(doc), "", "| " + " | ".join(HEAD) + " |"]
    lines.append("|" + "|".join(["---", "---", *["---:"] * 5, "---"]) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in _rows(doc)]
    lines += ["", _legend(doc)]
    return "\n".join(lines) + "\n"
