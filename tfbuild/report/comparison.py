"""`tfbuild compare` output: the lines and rows every format shares, Markdown and JSON (the
terminal tables are in report.ranking). Formats; never computes."""

from __future__ import annotations

import functools
import math
import re
import shlex
import textwrap
from collections.abc import Sequence

from tfbuild.analysis.choice import Choice
from tfbuild.analysis.estimates import ALPHA, OVERALL, Estimate
from tfbuild.analysis.reported import HostReport
from tfbuild.config.suite import CONTRASTS
from tfbuild.results.model import is_aa
from tfbuild.wording import printable

MARK = {"faster": "+", "slower": "-", "equivalent": "=", "undecided": "?", "baseline": ""}
STYLE = {"faster": "green", "slower": "red", "equivalent": "cyan", "undecided": "yellow"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def pct(value: float) -> str:
    """A fraction as a percentage; beyond 1000 % (an interval from very few rounds) it says
    only that."""
    return f"{value:.1%}" if value <= 10.0 else ">1000%"


def bound(value: float) -> str:
    if value > 999.0:
        return ">999"
    return f"{value:.3f}" if value >= 0.001 else "<0.001"


def ratio_text(e: Estimate) -> str:
    if e.verdict == "baseline":
        return "1.00x (baseline)"
    return f"{e.ratio:.3f}x [{bound(e.low)}, {bound(e.high)}]"


def answer_lines(reports: Sequence[HostReport]) -> list[str]:
    """What every format leads with: each host's answer, the answer itself first (the host
    named when there are several)."""
    lines: list[str] = []
    for r in reports:
        first, *rest = r.answer.lines
        lines.append(f"On {r.measured.host_key}: {first}" if len(reports) > 1 else first)
        lines += rest
    return lines


def weighted(r: HostReport) -> str:
    """How the benchmarks weigh in the overall speed, when not equally (--weight)."""
    named = {b: w for b, w in r.method.weights.items() if w != 1.0}
    if not named:
        return ""
    said = ", ".join(f"{b} {w:g}" for b, w in named.items())
    return f" (weighted in the overall level: {said}; the others 1)"


def zygote_line(r: HostReport) -> str:
    """How a forked session's processes were started, and what its own data say of how alike
    a zygote's children are."""
    z = r.zygotes
    if z is None:
        return "Processes: forked, each from a zygote of its config (--processes)"
    text = f"Processes: forked from {z.zygotes} zygotes of their configs (up to {z.most} each)"
    found = z.resemblance
    if found is None:
        return text + "; too few served two processes yet to tell how alike their children are"
    text += (
        f"; their children alike at an intraclass correlation of {found.rho:.2f} by this "
        f"session's data ({found.confidence:.0%} upper bound {found.upper:.2f}, from "
        f"{found.zygotes} zygotes that served two or more)"
    )
    if not r.method.zygotes_widen:
        return text + f"; intervals not widened for it (rules {r.method.rules})"
    if z.widening <= 1.0 + 5e-4:
        return text + "; no interval needed widening"
    return text + f"; intervals widened by up to {z.widening:.2f}x for it"


def design_line(r: HostReport) -> str:
    d = r.method.design
    if not d.sequential:
        return f"Design: fixed, {r.measured.rounds} rounds for every config"
    text = (
        f"Design: sequential, at least {d.first} rounds, then only configs still in contention "
        f"(error control spread over {d.horizon} rounds)"
    )
    if r.course.stop:
        text += f"; stopped: {r.course.stop.message}"
    return text


def header_lines(r: HostReport) -> list[str]:
    m, how, f = r.measured, r.method, r.figures
    split = how.split
    lines = [
        f"Host: {m.host_key}",
        f"Sessions: {', '.join(m.sessions)}",
        *([f"Workload: {m.workload}"] if m.workload else []),
        *form_lines(r),
        f"Baseline: {m.baseline} (its two processes per round averaged); {m.rounds} rounds; "
        f"{len(m.benchmarks)} benchmarks{weighted(r)}",
        *([zygote_line(r)] if m.forked else []),
        design_line(r),
        (
            f"Error control: every claim below holds together with probability at least "
            f"{1 - ALPHA:.0%} (verdicts {split['ranking']:.1%}, which could be the fastest "
            f"{split['selection']:.1%}, per benchmark {split['benchmarks']:.1%}, seed "
            f"experiments {split['experiments']:.1%}; "
            + (
                "max-t within each, variances moderated across the comparisons"
                if how.maxt
                else "Bonferroni within each"
            )
            + ("; alpha spending over the looks" if how.design.sequential else "")
            + f"; rules {how.rules})"
        ),
        f"Margin: {how.margin_source}",
    ]
    if OVERALL in f.aa:
        aa = f.aa[OVERALL]
        lines.append(f"A/A control (the baseline against its copy): {ratio_text(aa)}, {aa.verdict}")
    lead = [c for c in f.tiers[0] if c != m.baseline] if f.tiers else []
    targeted = how.design.resolve is not None and not how.stops_on_answer
    target = f" (target ±{how.design.resolve:.1%})" if targeted else ""
    lines.append(
        f"Leading tier resolved to ±{pct(f.resolution)}{target}: the widest interval of a "
        "config that could be the fastest"
        if lead
        else "Leading tier: the baseline alone (no other measured config can be the fastest)"
    )
    ranked = {e.config for e in f.ranking}
    unmeasured = [c for c in m.configs if c not in ranked and not is_aa(c)]
    if unmeasured:
        lines.append(
            f"Not measured, so in no claim above or below: {', '.join(unmeasured)} "
            "(why: see Failed)"
        )
    if r.course.fixed_equivalent is not None and f.resolution <= 1.0:
        lines.append(_fixed_line(r, *r.course.fixed_equivalent))
    return lines


def _fixed_line(r: HostReport, rounds: int, processes: int) -> str:
    """What a fixed design would have needed for the leading tier this session resolved."""
    ran = r.measured.runs
    change = 1 - ran / processes
    spent, fixed = "", ""
    if r.measured.benchmark_s is not None and ran:
        each = r.measured.benchmark_s / ran
        spent = f" in {r.measured.benchmark_s / 60:.1f} min of benchmarking"
        fixed = f" (about {processes * each / 60:.1f} min at {each:.1f} s a process)"
    return (
        f"This session ran {ran} benchmark processes{spent}; a fixed design (every "
        f"config every round) would need {rounds} rounds, {processes} processes{fixed}, to "
        f"resolve its leading tier as well in half of the sessions like it, simulated "
        f"({abs(change):.0%} {'fewer' if change >= 0 else 'more'} here)"
    )


def form_lines(r: HostReport) -> list[str]:
    """A line per build's model form: how far its outputs were from the as-given form's in
    the processes that checked them, against what is allowed, and what made it."""
    lines = []
    for f in r.forms:
        if f.max_abs is None:
            figures = "no element compared"
        else:
            figures = f"max abs error {f.max_abs:.2g}, max rel error {f.max_rel or 0:.2g}"
        if f.nonfinite:
            figures += f", {f.nonfinite} NaN/Inf where the as-given form has none"
        allowed = f"allowed {f.atol:g} + {f.rtol:g} x |as-given|"
        if f.failed:
            verdict = (
                f"outside the tolerances in {f.failed} of {f.processes} processes, which "
                "measured nothing"
            )
        else:
            verdict = f"within them in all {f.processes} processes"
        uniform = (
            "; the as-given outputs are all one value, so agreeing with them proves little"
            if f.uniform
            else ""
        )
        lines.append(
            f"Form {f.form} of {f.variant}: {figures} against the as-given outputs ({allowed}), "
            f"{verdict}{uniform}; made by {f.made_by}"
        )
    return lines


def tier_of(r: HostReport) -> dict[str, int]:
    return {config: i + 1 for i, tier in enumerate(r.figures.tiers) for config in tier}


def status_text(r: HostReport, config: str) -> str:
    if config in (r.figures.tiers[0] if r.figures.tiers else []):
        return "leading"
    claim = next((c for c in r.figures.out if c.config == config), None)
    if claim is None:
        return ""
    when = f" after round {claim.round}" if r.method.design.sequential else ""
    return f"out{when} (trails {claim.than}: {claim.ratio:.3f}x)"


def ranking_rows(r: HostReport) -> list[list[str]]:
    tiers = tier_of(r)
    rows = []
    for e in r.figures.ranking:
        flags = r.problems.flags.get(e.config)
        rows.append(
            [
                str(tiers.get(e.config, "")),
                e.config,
                ratio_text(e),
                str(e.rounds),
                e.verdict,
                status_text(r, e.config),
                flags.text() if flags and not flags.clean else "",
            ]
        )
    return rows


RANKING_HEADER = [
    "tier",
    "config",
    "speed vs baseline [simultaneous CI]",
    "rounds",
    "verdict",
    "status",
    "flags",
]


def cell(r: HostReport, config: str, bench: str) -> str:
    if config == r.measured.baseline:
        return "1.000"
    e = r.figures.estimates.get((config, bench))
    if e is None:
        return "n/a"
    return f"{e.ratio:.3f}{MARK[e.verdict]}"


CONTRAST_HEADER = ("experiment", "ratio [simultaneous CI]", "verdict", "what the write-up found")


def contrast_title(r: HostReport) -> str:
    return (
        f"The seed experiments within {r.figures.contrasts[0].config} (throughput of the first "
        "way over the second, paired by round)"
    )


def contrast_rows(r: HostReport) -> list[list[str]]:
    seeds = {c.name: c.seed for c in CONTRASTS}
    return [
        [e.benchmark, ratio_text(e), e.verdict, seeds[e.benchmark]] for e in r.figures.contrasts
    ]


LOOK_HEADER = [
    "after round",
    "running",
    "leading tier",
    "resolved to",
    "margin",
    "out now, or resting",
    "answer",
]


def look_rows(r: HostReport) -> list[list[str]]:
    rows = []
    for look in r.course.looks:
        out = "; ".join(
            [
                *(f"{e.config} (trails {e.slower_than})" for e in look.eliminated),
                *(f"{c} (rests, known to the target)" for c in look.rested),
                *(["held: the A/A control cannot tell the baseline from itself yet"]
                  if look.held else []),
            ]
        )  # fmt: skip
        rows.append(
            [
                str(look.round),
                str(len(look.active)),
                str(len(look.leading)),
                f"±{pct(look.resolution)}",
                pct(look.margin),
                out,
                look.answer or "-",
            ]
        )
    return rows


def shown_configs(r: HostReport, everything: bool = False) -> list[str]:
    """The configs the tables show: the leading tier and the baseline, or every config."""
    lead = set(r.figures.tiers[0]) if r.figures.tiers else set()
    return [
        e.config
        for e in r.figures.ranking
        if everything or e.config in lead or e.config == r.measured.baseline
    ]


def ranks(r: HostReport) -> dict[str, int]:
    """Each config's place in the ranking (#1 first), which the tables refer to."""
    return {e.config: i + 1 for i, e in enumerate(r.figures.ranking)}


def leader(r: HostReport) -> str | None:
    """The best-ranked config of the leading tier other than the baseline."""
    lead = set(r.figures.tiers[0]) if r.figures.tiers else set()
    return next(
        (
            e.config
            for e in r.figures.ranking
            if e.config in lead and e.config != r.measured.baseline
        ),
        None,
    )


def ranking_columns(r: HostReport, everything: bool = False) -> list[str]:
    """The ranking's columns: flags only when a shown config has some."""
    columns = ["#", "config", "vs baseline [CI]", "rounds", "verdict"]
    shown = shown_configs(r, everything)
    if any(c in r.problems.flags and not r.problems.flags[c].clean for c in shown):
        columns.append("flags")
    return columns


def ranking_table_rows(r: HostReport, everything: bool = False) -> list[list[str]]:
    columns, place = ranking_columns(r, everything), ranks(r)
    shown = set(shown_configs(r, everything))
    rows = []
    for e in r.figures.ranking:
        if e.config not in shown:
            continue
        row = [str(place[e.config]), e.config, ratio_text(e), str(e.rounds), e.verdict]
        if "flags" in columns:
            flags = r.problems.flags.get(e.config)
            row.append(flags.text() if flags and not flags.clean else "")
        rows.append(row)
    return rows


def out_lines(r: HostReport, everything: bool = False) -> list[str]:
    """The configs out of the leading tier, one line per reason (the config they trail, and
    the look that put them out): the tables leave them out unless every config is asked for."""
    lead = set(r.figures.tiers[0]) if r.figures.tiers else set()
    place = ranks(r)
    groups: dict[tuple[int | None, str], list[str]] = {}
    for e in r.figures.ranking:
        if e.config in lead:
            continue
        claim = next((c for c in r.figures.out if c.config == e.config), None)
        when = claim.round if claim and r.method.design.sequential else None
        key = (when, claim.than if claim else "")
        what = "the baseline" if e.config == r.measured.baseline else f"{e.ratio:.3f}x"
        groups.setdefault(key, []).append(f"#{place[e.config]} {e.config} ({what})")
    if not groups:
        return []
    count = sum(map(len, groups.values()))
    more = "" if everything else "; --all lists them in the tables"
    lines = [f"Out of the leading tier ({count}{more}):"]
    for (when, than), items in groups.items():
        after = f"after round {when}, " if when is not None else ""
        behind = f"trailing {than}" if than else "no claim recorded"
        lines.append(f"  {after}{behind}: {', '.join(items)}")
    return lines


def rest_lines(r: HostReport) -> list[str]:
    """The leading configs that rested (known to the target while another was not), one line
    per look: why their rounds stop short of the session's."""
    return [
        f"Rested after round {look.round}, known to the target before the rest of the leading "
        f"tier (judged there): {', '.join(look.rested)}"
        for look in r.course.looks
        if look.rested
    ]


def throughput(value: float | None) -> str:
    """An absolute throughput to four significant digits, without an exponent."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.0f}" if value >= 1000 else f"{value:.4g}"


LATENCY_UNIT = re.compile(r"calls/s \(1/(p\d+) latency\)")


def as_read(value: float | None, unit: str) -> tuple[str, str]:
    """A median as a person reads it, with its unit: a throughput as it is; a latency
    benchmark (recorded as calls per second, so that higher is faster) as the latency in ms."""
    m = LATENCY_UNIT.fullmatch(unit)
    if m is None:
        return throughput(value), unit
    return throughput(1000.0 / value if value else None), f"ms, {m.group(1)} latency"


def bench_table(r: HostReport, configs: Sequence[str]) -> tuple[list[str], list[list[str]], int]:
    """Benchmarks in rows: margin, unit, the baseline's and the leader's median throughput,
    then each config's speed vs the baseline (columns named by ranking place). Returns the
    header, the rows and how many leading columns are not ratios."""
    place, best = ranks(r), leader(r)
    others = [c for c in configs if c != r.measured.baseline]
    header = ["benchmark", "margin", "unit", "baseline"]
    if best is not None:
        header.append("leader")
    fixed = len(header)
    header += [f"#{place[c]}" for c in others]
    rows = []
    for bench in r.measured.benchmarks:
        base, unit = as_read(
            r.figures.medians.get((r.measured.baseline, bench)), r.measured.units.get(bench, "")
        )
        row = [bench, f"±{pct(r.method.margins[bench])}", unit, base]
        if best is not None:
            row.append(
                as_read(r.figures.medians.get((best, bench)), r.measured.units.get(bench, ""))[0]
            )
        row += [cell(r, c, bench) for c in others]
        rows.append(row)
    return header, rows, fixed


def bench_title(r: HostReport) -> str:
    best = leader(r)
    who = f"the leader (#{ranks(r)[best]} {best})" if best else "no leader but the baseline"
    latency = any(LATENCY_UNIT.fullmatch(u) for u in r.measured.units.values())
    what = "throughput (latency for pNN)" if latency else "throughput"
    return (
        f"Per benchmark: median {what} of the baseline ({r.measured.baseline}) and of {who}, and "
        "each config's speed vs the baseline (+ faster, - slower, = equivalent, ? undecided; "
        "# as in the ranking)"
    )


LOOK_COLUMNS = [
    "after round", "running", "leading tier", "resolved to", "margin", "put out", "answer",
]  # fmt: skip


def look_table(r: HostReport) -> list[list[str]]:
    """The looks, with how many configs each put out (out_lines names them; "held": none, the
    A/A control not yet able to tell the baseline from itself) and the answer each decided (a
    config by its place in the ranking, #N, so the table fits 80 columns whatever its name)."""
    place = ranks(r)
    return [
        [str(look.round), str(len(look.active)), str(len(look.leading)),
         f"±{pct(look.resolution)}", pct(look.margin),
         "held" if look.held and not look.eliminated else str(len(look.eliminated)),
         f"#{place[look.answer]}" if look.answer in place else look.answer or "-"]
        for look in r.course.looks
    ]  # fmt: skip


def _lock_lines(c: Choice) -> list[str]:
    """The whole runtime as measured: the command that installs it from the requirements file
    written, or the commands of the wheel and the way to write that file."""
    pins = dict(line.split(" ", 1)[0].split("==", 1) for line in c.lock if not line.startswith("#"))
    among = ", ".join(f"{n} {pins[n]}" for n in ("numpy", "keras") if n in pins)
    said = (
        f"The whole runtime as measured: {len(pins)} packages"
        + (f" ({among} among them)" if among else "")
        + ", each pinned to the version and the file (sha256) measured"
    )
    wrap = functools.partial(
        textwrap.wrap, width=98, initial_indent="# ", subsequent_indent="# ",
        break_long_words=False, break_on_hyphens=False,
    )  # fmt: skip
    if c.requirements is None:
        return [
            *c.install,
            *wrap(f"{said}: `tfbuild compare RESULTS --requirements FILE` writes them to FILE."),
        ]
    return [
        *wrap(f"{said}, in {c.requirements}:"),
        f"pip install --require-hashes -r {shlex.quote(c.requirements)}",
    ]


def choice_lines(r: HostReport) -> list[str]:
    """The 'use this' block: every value quoted for a POSIX shell."""
    c = r.choice
    if c is None:
        return ["Nothing to recommend: no config has results."]
    if r.answer.decided:
        form = c.config.split(":")[2] if c.config.count(":") == 2 else None
        shape = f", the model in its {form} form" if form else ""
        head = f"Use {c.variant} with tuning {c.tuning}{shape}: {c.reason}."
    else:
        head = f"Not settled yet (see the answer above): {c.reason}."
    lines = textwrap.wrap(
        head,
        width=98,
        initial_indent="# ",
        subsequent_indent="# ",
        break_on_hyphens=False,
    )
    if c.wheel:
        lines.append(f"# wheel: {printable(c.wheel)}")
        lines.append(f"# sha256: {printable(c.sha256)}")
    if c.where:
        lines += textwrap.wrap(
            f"From {printable(c.where)}; pip checks the file it gets against that sha256 and "
            "stops on any other.",
            width=98,
            initial_indent="# ",
            subsequent_indent="# ",
            break_long_words=False,
            break_on_hyphens=False,
        )
    lines += _lock_lines(c) if c.lock else c.install
    for key, value in c.env.items():
        if _ENV_NAME.fullmatch(key):
            lines.append(f"export {key}={shlex.quote(value)}")
        else:
            lines.append(f"# not a variable name, left out: {key!r}")
    if c.threading:
        lines.append("# in Python, before TensorFlow runs any op:")
        lines += [f"#   {t}" for t in c.threading]
    return lines


# --------------------------------------------------------------------------------------------
# Markdown


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return out


def compare_markdown(reports: Sequence[HostReport], everything: bool = False) -> str:
    lines: list[str] = []
    for line in answer_lines(reports):
        head, colon, rest = line.partition(": ")
        lines += [f"**{head}**{colon}{rest}" if colon else line, ""]
    lines += ["# tfbuild comparison", ""]
    for r in reports:
        lines += [f"## {r.measured.host_key}", ""]
        lines += [f"- {line}" for line in header_lines(r)[1:]]
        lines += [f"- **warning**: {w}" for w in r.problems.warnings]
        lines += [f"- **replay**: {p}" for p in r.course.replay]
        lines += ["", "### Ranking", ""]
        rows = [[row[0], f"`{row[1]}`", *row[2:]] for row in ranking_table_rows(r, everything)]
        lines += md_table(ranking_columns(r, everything), rows)
        if out := out_lines(r, everything):
            lines += ["", out[0], "", *(f"- {line.strip()}" for line in out[1:])]
        if rested := rest_lines(r):
            lines += ["", *rested]
        header, rows, _ = bench_table(r, shown_configs(r, everything))
        lines += ["", "### Per benchmark", "", bench_title(r) + ".", ""]
        lines += md_table(header, [[f"`{row[0]}`", *row[1:]] for row in rows])
        if r.course.looks:
            lines += ["", "### Looks", ""]
            lines += md_table(LOOK_COLUMNS, look_table(r))
        if r.figures.contrasts:
            lines += ["", "### Seed experiments", "", contrast_title(r) + ".", ""]
            lines += md_table(CONTRAST_HEADER, contrast_rows(r))
        if r.problems.failures:
            lines += ["", "### Failed", ""]
            lines += [f"- `{f.who}`: {f.reason}" for f in r.problems.failures]
        lines += ["", "### Use this", "", "```bash", *choice_lines(r), "```", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# JSON
