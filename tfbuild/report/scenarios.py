"""`tfbuild scenarios` as text and Markdown: how often the answer a report leads with was right
on simulated sessions with a known truth, the answer first. Formats; never computes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEAD = ("scenario", "what is true", "right", "wrong", "inconclusive", "processes", "verdicts")


def _rows(doc: Mapping[str, Any]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for t in doc["scenarios"]:
        n = t["sessions"]
        decided = t["median_decided"]
        rows.append(
            (
                str(t["scenario"]),
                str(t["about"]),
                f"{t['right'] / n:.1%}",
                f"{t['wrong'] / n:.1%}",
                f"{t['inconclusive'] / n:.1%}",
                f"{decided:g}" if decided is not None else "-",
                f"{t.get('benchmark_wrong', 0) / n:.1%}",
            )
        )
    return rows


def summary_line(doc: Mapping[str, Any]) -> str:
    """The answer first: the worst wrong share over the scenarios, and where."""
    worst = max(doc["scenarios"], key=lambda t: t["wrong"] / t["sessions"])
    share = worst["wrong"] / worst["sessions"]
    found = (
        f"at most {share:.1%} of the sessions of any scenario ({worst['scenario']})"
        if share > 0
        else "none"
    )
    verdicts = max(t.get("benchmark_wrong", 0) / t["sessions"] for t in doc["scenarios"])
    return (
        f"Wrong answers: {found}; sessions with a wrong per-benchmark verdict: "
        f"{'none' if verdicts == 0 else f'at most {verdicts:.1%}'}; in {doc['sessions']} "
        f"simulated sessions per scenario "
        f"(decision rules {doc['rules']}, the {doc['margin']:.0%} margin, answers at "
        f"{doc['confidence']:.1%} confidence)."
    )


def _legend(doc: Mapping[str, Any]) -> str:
    return (
        f"right, wrong, inconclusive: shares of the sessions' answers; processes: the median "
        f"benchmark processes of the sessions that answered (each {doc['process_s']:g} s; the "
        f"budget {doc['budget_s'] / 60:g} min); verdicts: the share of sessions whose report "
        f"held a per-benchmark verdict the truth contradicts"
    )


def scenarios_text(doc: Mapping[str, Any]) -> str:
    rows = [HEAD, *_rows(doc)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    lines = [summary_line(doc), ""]
    for k, row in enumerate(rows):
        cells = [
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines += ["", _legend(doc)]
    return "\n".join(lines) + "\n"


def scenarios_markdown(doc: Mapping[str, Any]) -> str:
    lines = [summary_line(doc), "", "| " + " | ".join(HEAD) + " |"]
    lines.append("|" + "|".join(["---", "---", "---:", "---:", "---:", "---:", "---:"]) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in _rows(doc)]
    lines += ["", _legend(doc)]
    return "\n".join(lines) + "\n"
