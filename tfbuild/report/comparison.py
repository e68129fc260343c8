"""`tfbuild compare` output as terminal tables, Markdown and JSON. Formats; never computes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from tfbuild.bench.suite import CONTRASTS
from tfbuild.compare import OVERALL, Change, Estimate, HostReport

COMPARE_SCHEMA = "tfbuild.compare/1"
MARK = {"faster": "+", "slower": "-", "tie": "", "baseline": ""}


def pct(value: float) -> str:
    return f"{value:.1%}"


def ratio_text(e: Estimate) -> str:
    if e.verdict == "baseline":
        return "1.00x (baseline)"
    return f"{e.ratio:.3f}x [{e.low:.3f}, {e.high:.3f}]"


def p_text(e: Estimate) -> str:
    return "-" if e.verdict == "baseline" else f"{e.p_holm:.3g}"


def header_lines(r: HostReport) -> list[str]:
    lines = [
        f"Host: {r.host_key}",
        f"Sessions: {', '.join(r.sessions)}",
        f"Baseline: {r.baseline}; {r.rounds} rounds; {len(r.benchmarks)} benchmarks",
        (
            f"Practical threshold: {pct(r.thresholds[OVERALL])} overall "
            f"(the larger of 2 % and the A/A spread)"
        ),
    ]
    if OVERALL in r.aa:
        aa = r.aa[OVERALL]
        lines.append(
            f"A/A control: {aa.ratio:.3f}x [{aa.low:.3f}, {aa.high:.3f}], p = {aa.p:.3g} "
            f"({'differs: too noisy' if aa.verdict != 'tie' else 'no difference, as expected'})"
        )
    if OVERALL in r.mde:
        lines.append(
            f"Smallest difference this session could detect (80 % power): "
            f"{pct(r.mde[OVERALL])} overall; per benchmark "
            + ", ".join(f"{b} {pct(r.mde[b])}" for b in r.benchmarks if b in r.mde)
        )
    return lines


def tier_of(r: HostReport) -> dict[str, int]:
    return {config: i + 1 for i, tier in enumerate(r.tiers) for config in tier}


def cell(r: HostReport, config: str, bench: str) -> str:
    e = r.estimates.get((config, bench))
    if config == r.baseline:
        return "1.000"
    if e is None:
        return "n/a"
    return f"{e.ratio:.3f}{MARK[e.verdict]}"


CONTRAST_HEADER = ("experiment", "ratio [95% CI]", "Holm p", "verdict", "what the write-up found")


def contrast_title(r: HostReport) -> str:
    return (
        f"The seed experiments within {r.contrasts[0].config} (throughput of the first way over "
        "the second, paired by round)"
    )


def contrast_rows(r: HostReport) -> list[list[str]]:
    seeds = {c.name: c.seed for c in CONTRASTS}
    return [
        [
            e.benchmark,
            f"{e.ratio:.3f}x [{e.low:.3f}, {e.high:.3f}]",
            p_text(e),
            e.verdict,
            seeds[e.benchmark],
        ]
        for e in r.contrasts
    ]


def choice_lines(r: HostReport) -> list[str]:
    c = r.choice
    if c is None:
        return ["Nothing to recommend: no config has results."]
    lines = [f"Use {c.variant} with tuning {c.tuning}: {c.reason}."]
    if c.wheel:
        lines.append(f"wheel: {c.wheel}")
        lines.append(f"sha256: {c.sha256}")
    lines += c.install
    lines += [f"export {k}={v}" for k, v in c.env.items()]
    if c.threading:
        lines.append("# in Python, before TensorFlow runs any op:")
        lines += c.threading
    return lines


# --------------------------------------------------------------------------------------------
# Terminal


def compare_view(reports: Sequence[HostReport]) -> Group:
    parts: list[Table | Text] = []
    for r in reports:
        parts.append(Text("\n".join(header_lines(r)), style="bold"))
        for warning in r.warnings:
            parts.append(Text(f"warning: {warning}", style="yellow"))
        tiers = tier_of(r)
        ranking = Table(
            title="Ranking (geometric mean over benchmarks, vs the baseline)", title_justify="left"
        )
        for column in ("tier", "config", "speed vs baseline [95% CI]", "Holm p", "verdict"):
            ranking.add_column(column, justify="right" if column != "config" else "left")
        for e in r.ranking:
            style = {"faster": "green", "slower": "red"}.get(e.verdict, "")
            ranking.add_row(
                str(tiers.get(e.config, "")),
                e.config,
                ratio_text(e),
                p_text(e),
                Text(e.verdict, style=style),
            )
        parts.append(ranking)
        per = Table(
            title="Per benchmark: speed vs baseline (+ faster, - slower: significant and "
            "beyond the threshold)",
            title_justify="left",
        )
        per.add_column("config", overflow="fold")
        for bench in r.benchmarks:
            per.add_column(f"{bench}\n±{pct(r.thresholds[bench])}", justify="right")
        for e in r.ranking:
            per.add_row(e.config, *(cell(r, e.config, b) for b in r.benchmarks))
        parts.append(per)
        if r.contrasts:
            seeds = Table(title=contrast_title(r), title_justify="left")
            for column in CONTRAST_HEADER:
                numeric = column in ("ratio [95% CI]", "Holm p")
                seeds.add_column(column, justify="right" if numeric else "left")
            for row in contrast_rows(r):
                seeds.add_row(*row)
            parts.append(seeds)
        for failure in r.failures:
            parts.append(Text(f"failed {failure.who}: {failure.reason}", style="red"))
        parts.append(Text("Use this", style="bold underline"))
        parts.append(Text("\n".join(choice_lines(r))))
    return Group(*parts)


def gate_view(changes: Sequence[Change], fail_above: float) -> Group:
    table = Table(
        title=f"Against the previous results (regression: slower by more than "
        f"{pct(fail_above)}, Holm p < 0.05)",
        title_justify="left",
    )
    for column in ("config", "benchmark", "new / old [95% CI]", "Holm p", ""):
        table.add_column(column)
    for c in changes:
        flag = Text("REGRESSION", style="bold red") if c.regression else Text("")
        table.add_row(
            c.config,
            c.benchmark,
            f"{c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}]",
            f"{c.p_holm:.3g}",
            flag,
        )
    return Group(table)


# --------------------------------------------------------------------------------------------
# Markdown


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return out


def compare_markdown(reports: Sequence[HostReport]) -> str:
    lines: list[str] = ["# tfbuild comparison", ""]
    for r in reports:
        lines += [f"## {r.host_key}", ""]
        lines += [f"- {line}" for line in header_lines(r)[1:]]
        lines += [f"- **warning**: {w}" for w in r.warnings]
        tiers = tier_of(r)
        lines += ["", "### Ranking", ""]
        lines += _md_table(
            ["tier", "config", "speed vs baseline [95% CI]", "Holm p", "verdict"],
            [
                [str(tiers.get(e.config, "")), f"`{e.config}`", ratio_text(e), p_text(e), e.verdict]
                for e in r.ranking
            ],
        )
        lines += [
            "",
            "### Per benchmark",
            "",
            "Speed vs baseline; `+` faster, `-` slower (significant and beyond the "
            "threshold shown under each benchmark).",
            "",
        ]
        lines += _md_table(
            ["config", *(f"{b} (±{pct(r.thresholds[b])})" for b in r.benchmarks)],
            [[f"`{e.config}`", *(cell(r, e.config, b) for b in r.benchmarks)] for e in r.ranking],
        )
        if r.contrasts:
            lines += ["", "### Seed experiments", "", contrast_title(r) + ".", ""]
            lines += _md_table(CONTRAST_HEADER, contrast_rows(r))
        if r.failures:
            lines += ["", "### Failed", ""]
            lines += [f"- `{f.who}`: {f.reason}" for f in r.failures]
        lines += ["", "### Use this", "", "```bash", *choice_lines(r), "```", ""]
    return "\n".join(lines)


def gate_markdown(changes: Sequence[Change], fail_above: float) -> str:
    rows = [
        [
            c.config,
            c.benchmark,
            f"{c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}]",
            f"{c.p_holm:.3g}",
            "**REGRESSION**" if c.regression else "",
        ]
        for c in changes
    ]
    return "\n".join(
        [
            f"## Against the previous results (fail above {pct(fail_above)})",
            "",
            *_md_table(["config", "benchmark", "new / old [95% CI]", "Holm p", ""], rows),
            "",
        ]
    )


# --------------------------------------------------------------------------------------------
# JSON


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _estimate_json(e: Estimate) -> dict[str, Any]:
    data = asdict(e)
    for key in ("ratio", "low", "high", "p", "p_holm"):
        data[key] = _finite(data[key])
    return data


def compare_json(
    reports: Sequence[HostReport], changes: Sequence[Change] | None = None
) -> dict[str, Any]:
    return {
        "schema": COMPARE_SCHEMA,
        "hosts": [
            {
                "host": r.host_key,
                "sessions": r.sessions,
                "baseline": r.baseline,
                "rounds": r.rounds,
                "benchmarks": r.benchmarks,
                "units": r.units,
                "thresholds": r.thresholds,
                "minimum_detectable": {k: _finite(v) for k, v in r.mde.items()},
                "aa": {k: _estimate_json(v) for k, v in r.aa.items()},
                "warnings": r.warnings,
                "ranking": [_estimate_json(e) for e in r.ranking],
                "tiers": r.tiers,
                "estimates": [_estimate_json(e) for e in r.estimates.values()],
                "failures": [asdict(f) for f in r.failures],
                "choice": asdict(r.choice) if r.choice else None,
                "contrasts": [_estimate_json(e) for e in r.contrasts],
            }
            for r in reports
        ],
        "against": [asdict(c) for c in changes] if changes is not None else None,
    }
