"""`tfbuild compare`: rank the configs of results files, optionally gated against older ones."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from tfbuild.cli.app import cli
from tfbuild.cli.options import WEIGHT_HELP, debug_option, format_option, options_record
from tfbuild.cli.values import console, parse_fraction, parse_weights, results_paths, unpadded
from tfbuild.errors import RegressionFound, UsageError

if TYPE_CHECKING:
    from tfbuild.analysis.gate import Gate
    from tfbuild.analysis.reported import HostReport
    from tfbuild.analysis.scenarios import Scenario
    from tfbuild.analysis.sessions import Session


@dataclass(frozen=True, kw_only=True)
class CompareArguments:
    """The options of `compare` as its cascade resolved them, each named as the command
    receives it."""

    results_files: tuple[str, ...]
    fmt: str
    output: Path | None
    against: tuple[str, ...]
    fail_above: str
    allow_different_hosts: bool
    new_class_passes: bool
    new_suite_passes: bool
    requirements: Path | None
    everything: bool
    brief: bool
    margin: str | None
    weights: tuple[str, ...]
    history: bool
    wheels_url: str | None


@dataclass(frozen=True, kw_only=True)
class CompareSettings:
    results: tuple[Path, ...]
    results_given: tuple[str, ...] = ()
    """RESULTS as typed, for the requirements file's header."""
    fmt: str
    output: Path | None
    against: tuple[Path, ...]
    against_given: tuple[str, ...]
    """--against as typed, for the message when the gate fails."""
    fail_above: float
    allow_different_hosts: bool
    new_class_passes: bool
    new_suite_passes: bool = False
    margin: float | None
    everything: bool
    brief: bool = False
    weights: tuple[str, ...] = ()
    """--weight as typed (checked against the benchmarks the results measured)."""
    requirements: Path | None = None
    wheels_url: str | None = None

    def __post_init__(self) -> None:
        if self.brief and self.fmt != "table":
            raise UsageError(
                f"--brief shortens the terminal report; --format {self.fmt} shows it whole"
            )

    @classmethod
    def of(cls, given: CompareArguments) -> CompareSettings:
        """From the options of `compare`, each checked in the order a mistake is named:
        --margin, RESULTS, --against, --fail-above, then --brief with its format."""
        margin = _margin(given.margin)
        return cls(
            results=results_paths(given.results_files, "RESULTS"),
            results_given=given.results_files,
            fmt=given.fmt,
            output=given.output,
            against=results_paths(given.against) if given.against else (),
            against_given=given.against,
            fail_above=parse_fraction("--fail-above", given.fail_above),
            allow_different_hosts=given.allow_different_hosts,
            new_class_passes=given.new_class_passes,
            new_suite_passes=given.new_suite_passes,
            margin=margin,
            everything=given.everything,
            brief=given.brief,
            weights=given.weights,
            requirements=given.requirements,
            wheels_url=given.wheels_url,
        )


@dataclass(frozen=True, kw_only=True)
class HistorySettings:
    """What `compare --history` is asked: the nights, and the format and place of the trend."""

    results: tuple[Path, ...]
    fmt: str
    output: Path | None

    @classmethod
    def of(cls, given: CompareArguments) -> HistorySettings:
        """From the options of `compare`; refused with those of one comparison (--against,
        --requirements), and without reading the others."""
        if given.against or given.requirements:
            raise UsageError("--history shows the nights given; --against and --requirements "
                             "belong to one comparison: run them without --history")  # fmt: skip
        return cls(
            results=results_paths(given.results_files, "RESULTS"),
            fmt=given.fmt,
            output=given.output,
        )


def with_requirements(report: HostReport, path: Path, source: str) -> HostReport:
    """The report, its 'use this' naming the requirements file written at `path` (atomically):
    the whole runtime of the config to use, as the session measured it (its choice has a
    lock)."""
    from tfbuild.files import atomic_write_text

    choice = report.choice
    assert choice is not None and choice.lock, "no runtime recorded to write"
    atomic_write_text(path, choice.lock_text(source))
    return dataclasses.replace(report, choice=dataclasses.replace(choice, requirements=str(path)))


def _requirements_of(reports: list[HostReport], path: Path) -> HostReport:
    """The one report `--requirements` writes the runtime of; a usage error, naming why,
    when the results are of several machine classes or recorded no runtime."""
    if len(reports) != 1:
        raise UsageError(
            f"--requirements {path}: the results are from {len(reports)} machine classes; "
            "it writes the runtime of one, so compare one machine's results"
        )
    (report,) = reports
    if report.choice is None or not report.choice.lock:
        config = report.choice.config if report.choice else "no config"
        raise UsageError(
            f"--requirements {path}: the session recorded no packages of the runtime of "
            f"{config} (its runtime was made before tfbuild recorded them: run the session "
            "again to record them)"
        )
    return report


def _margin(value: str | None) -> float | None:
    from tfbuild.config.values import parse_percent

    if value is None:
        return None
    if (fraction := parse_percent(value)) is None:
        raise UsageError(f"--margin {value!r}: expected a percentage like 3%")
    return fraction


@cli.command()
@click.argument("results_files", nargs=-1, required=True, metavar="RESULTS...")
@format_option(
    {
        "table": "for a terminal",
        "markdown": "for a job summary or a pull request",
        "json": "every figure, for scripts",
        "html": "one self-contained page with charts",
    }
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the report to this file (atomically) instead of standard output.",
)
@click.option(
    "--against",
    multiple=True,
    metavar="FILE|FOLDER|'GLOB'",
    help="Older results to gate against (regression check): a file, a folder of results "
    "files, or a quoted pattern; repeatable. Paired with the new results by machine class.",
)
@click.option(
    "--fail-above",
    default="5%",
    show_default=True,
    help="With --against: fail when a config got slower than this, significantly.",
)
@click.option(
    "--allow-different-hosts",
    is_flag=True,
    help="With --against: compare results from different machines anyway.",
)
@click.option(
    "--new-class-passes",
    is_flag=True,
    help="With --against: pass the gate when no old results are of the new results' machine "
    "class (a runner of a new kind, on its first night); without it that fails the gate.",
)
@click.option(
    "--new-suite-passes",
    is_flag=True,
    help="With --against: pass the gate when every old result is of another suite version "
    "(the first night after an upgrade changed the work measured); without it that fails the "
    "gate.",
)
@click.option(
    "--requirements",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the whole runtime of the config to use, as the session measured it, to this "
    "requirements file (every package pinned to its version and sha256, for `pip install "
    "--require-hashes -r`); the 'use this' block names it.",
)
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="List every config in the tables, not one line per reason for those out of the "
    "leading tier.",
)
@click.option(
    "--brief",
    is_flag=True,
    help="The answer, what was measured (the workload, each model form's errors), the ranking, "
    "the per-benchmark table and what failed: the report to paste into a ticket (the terminal "
    "report only).",
)
@click.option(
    "--margin",
    metavar="PERCENT",
    help="The indifference margin of the answer and the verdicts (default: the one the "
    "session was decided at: its --resolve, 5% for a fixed design).",
)
@click.option(
    "--weight",
    "weights",
    multiple=True,
    metavar="BENCHMARK=W",
    help=WEIGHT_HELP + " Default: as each session recorded them (bench and run --weight).",
)
@click.option(
    "--history",
    is_flag=True,
    help="Each results file is a night (a folder of the nightly's, for one): each config's "
    "throughput night by night, per machine class and benchmark (median and 95% interval), "
    "the nights where a TensorFlow release or a wheel changed marked; html is the nightly's "
    "history page.",
)
@click.option(
    "--wheels-url",
    metavar="URL",
    help="Where the source builds' wheels are published (a PEP 503 index, as `tfbuild index` "
    "writes it): the 'use this' commands install from there.",
)
@debug_option
def compare(**params: Any) -> None:
    """Rank the configs of one or more results files (RESULTS: files, folders of them, or
    quoted patterns) against the baseline.

    Per benchmark and overall (geometric mean), each config's speed relative to the baseline
    with simultaneous confidence intervals (every claim holds together with probability 95 %,
    looks of a sequential session included), verdicts faster / slower / equivalent / undecided
    against a practical margin from the A/A control, tiers of configs that could be the
    fastest, the looks and eliminations a session made (replayed from the data), and the config
    to use with how to reproduce it. Files from several machines are reported per machine.
    With --against OLD (results of the same machine class are paired), exits 10 when a config
    got slower than --fail-above, when a config OLD measured has no results (or fewer
    benchmarks) in the new ones, when none of OLD is of the new results' machine class, or when
    nothing at all was compared (OLD of another suite version, other work, no config and
    benchmark in common), a line per cause; the report says how many configs and benchmarks
    it compared.
    """
    from tfbuild.analysis.sessions import load_sessions

    given = options_record(CompareArguments, params)
    if given.history:
        history = HistorySettings.of(given)
        _write(_history_text(history.results, history.fmt), history.output)
        return
    settings = CompareSettings.of(given)
    sessions = load_sessions(settings.results)
    reports = _reports(sessions, settings)
    verdict = _gated(settings, sessions)
    text = _rendered(reports, verdict, settings)
    if text is not None:
        _write(text, settings.output)
    if verdict is not None:
        _say_gate(verdict, settings)


def _reports(sessions: Sequence[Session], settings: CompareSettings) -> list[HostReport]:
    """Each machine class's report, at the margin and with the weights asked; its 'use this'
    installing from --wheels-url, and naming the --requirements file, written."""
    from tfbuild.analysis.choice import published
    from tfbuild.analysis.host_report import analyse

    measured = list(dict.fromkeys(b for s in sessions for b in s.results.suite.benchmarks))
    # without --weight each session is weighed as it recorded (bench and run --weight)
    weighed = parse_weights(settings.weights, measured) if settings.weights else None
    reports = analyse(sessions, settings.margin, power=True, weights=weighed)
    if settings.wheels_url:
        url = settings.wheels_url
        reports = [
            dataclasses.replace(r, choice=published(r.choice, url)) if r.choice else r
            for r in reports
        ]
    if settings.requirements is not None:
        chosen = _requirements_of(reports, settings.requirements)
        source = " ".join(settings.results_given)
        reports = [with_requirements(chosen, settings.requirements, source)]
    return reports


def _gated(settings: CompareSettings, sessions: Sequence[Session]) -> Gate | None:
    """The regression gate of the new sessions against --against (None without it)."""
    from tfbuild.analysis.gate import gate
    from tfbuild.analysis.sessions import load_sessions

    if not settings.against:
        return None
    old = load_sessions(settings.against, same_work=False)  # the gate sorts them out
    verdict = gate(sessions, old, settings.fail_above, settings.allow_different_hosts)
    if settings.new_class_passes and verdict.strangers is not None:
        verdict = dataclasses.replace(verdict, strangers=None)
    if settings.new_suite_passes and verdict.suite_change:
        verdict = dataclasses.replace(verdict, suite_change_passes=True)
    return verdict


def _rendered(
    reports: Sequence[HostReport], verdict: Gate | None, settings: CompareSettings
) -> str | None:
    """The report (and the gate's verdict) in the format asked; None when it was printed on
    the terminal."""
    from tfbuild.report import comparison as views
    from tfbuild.report import ranking as tables
    from tfbuild.report.document import compare_json
    from tfbuild.report.gating import gate_markdown

    threshold = settings.fail_above
    if settings.fmt == "table":
        # To a file: plain text at a fixed width; to the terminal: as wide as it is.
        out = (
            console()
            if settings.output is None
            else Console(record=True, file=io.StringIO(), width=120, highlight=False)
        )
        view = tables.compare_view(reports, out.width, settings.everything, settings.brief)
        out.print(view, crop=False)
        if verdict is not None:
            out.print(tables.gate_view(verdict, threshold))
        return None if settings.output is None else unpadded(out.export_text())
    if settings.fmt == "markdown":
        text = views.compare_markdown(reports, settings.everything)
        if verdict is not None:
            text += "\n" + gate_markdown(verdict, threshold)
        return text
    if settings.fmt == "json":
        return json.dumps(compare_json(reports, verdict), indent=2) + "\n"
    from tfbuild.report.html import compare_html

    return compare_html(reports)


def _say_gate(verdict: Gate, settings: CompareSettings) -> None:
    """What the gate compared and noticed, on stderr; RegressionFound with every cause when
    it fails."""
    click.echo(f"gate: {verdict.compared()}", err=True)
    for note in verdict.notes:
        click.echo(f"gate: {note}", err=True)
    if causes := verdict.causes(settings.fail_above):
        raise RegressionFound(
            f"the regression gate failed against {' '.join(settings.against_given)}, "
            f"{len(causes)} cause(s):\n" + "\n".join(f"  {c}" for c in causes)
        )


def _write(text: str, output: Path | None) -> None:
    from tfbuild.files import atomic_write_text

    if output is not None:
        atomic_write_text(output, text)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)


def _history_text(paths: Sequence[Path], fmt: str) -> str:
    """`compare --history`: the nights' trend in the format asked."""
    from tfbuild.analysis.history import nights_by_class
    from tfbuild.analysis.sessions import load_sessions
    from tfbuild.report.history import history_html, history_json, history_lines

    by_class = nights_by_class(load_sessions(paths, same_work=False))
    if fmt == "html":
        return history_html(by_class)
    if fmt == "json":
        return json.dumps(history_json(by_class), indent=2) + "\n"
    lines = history_lines(by_class)
    if fmt == "markdown":
        return "```text\n" + "\n".join(lines).rstrip() + "\n```\n"
    return "\n".join(lines).rstrip() + "\n"


@cli.command()
@click.argument("results_files", nargs=-1, required=True, metavar="RESULTS...")
@click.option(
    "--min-rounds",
    type=click.IntRange(2, None),
    help="Take the first look after this many rounds (default: the recorded design's).",
)
@format_option({"table": "for a person", "json": "the numbers, for scripts"})
@debug_option
def replay(results_files: tuple[str, ...], min_rounds: int | None, fmt: str) -> None:
    """What today's decision rules would have done with recorded sequential sessions
    (RESULTS: files, folders of them, or quoted patterns): each session's own processes, round
    by round, through today's looks, eliminations and stopping; the round it would have
    stopped after and the processes by then, beside what it recorded. Nothing is run."""
    from tfbuild.analysis.replay import replay as replay_session
    from tfbuild.report.replaying import replay_text, summary
    from tfbuild.results.codec import load

    # each session on its own: sessions of different suites may be replayed side by side
    done = [
        (p, replay_session(load(p), min_rounds)) for p in results_paths(results_files, "RESULTS")
    ]
    if fmt == "json":
        doc = [{"file": str(p), **summary(r)} for p, r in done]
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo("\n\n".join(replay_text(str(p), r) for p, r in done))


@cli.command()
@click.argument("names", nargs=-1, metavar="[SCENARIO]...")
@click.option(
    "--sessions",
    type=click.IntRange(1, None),
    default=300,
    show_default=True,
    help="Simulated sessions per scenario.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, None),
    default=None,
    help="Processes that simulate at once (default: this machine's CPUs).",
)
@click.option(
    "--from",
    "saved",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="Show what an earlier run wrote (--format json) instead of running.",
)
@format_option({"table": "for a person", "markdown": "for documents", "json": "the numbers"})
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write to this file instead of standard output.",
)
@debug_option
def scenarios(
    names: tuple[str, ...],
    sessions: int,
    workers: int | None,
    saved: Path | None,
    fmt: str,
    output: Path | None,
) -> None:
    """How often the answer `compare` leads with is right, on simulated sessions whose true
    speeds are set (SCENARIO: their names; default: all): each session runs the bench
    session's own rounds, looks and stop on drawn processes, and its report's answer is scored
    against the truth at the margin it names. Nothing is installed or run."""
    chosen = named_scenarios(names)
    found = saved_scenarios(saved) if saved is not None else _simulated(chosen, sessions, workers)
    _write(found.text(fmt), output)


@dataclass(frozen=True)
class ScenariosFound:
    """A run of the scenarios as its JSON document (`analysis.scenarios.document`): what
    --format json prints and --from reads back."""

    document: Mapping[str, Any]

    def text(self, fmt: str) -> str:
        """The run in the format asked: the document itself, or its tables."""
        from tfbuild.analysis.scenarios import ScenarioRun
        from tfbuild.report.scenarios import scenarios_markdown, scenarios_text

        if fmt == "json":
            return json.dumps(self.document, indent=2) + "\n"
        if fmt == "markdown":
            return scenarios_markdown(ScenarioRun.from_json(self.document))
        return scenarios_text(ScenarioRun.from_json(self.document))


def named_scenarios(names: Sequence[str]) -> tuple[Scenario, ...]:
    """The scenarios named, in the order named (none named: all of them); a usage error naming
    the first unknown name and those known."""
    from tfbuild.analysis.scenarios import SCENARIOS

    known = {s.name: s for s in SCENARIOS}
    if unknown := [n for n in names if n not in known]:
        raise UsageError(f"unknown scenario {unknown[0]!r}; known: {', '.join(known)}")
    return tuple(known[n] for n in names) if names else SCENARIOS


def saved_scenarios(path: Path) -> ScenariosFound:
    """An earlier run of the scenarios, read back from its --format json (`--from`); a usage
    error when the file is no JSON, or a run of another schema."""
    from tfbuild.analysis.scenarios import SCHEMA

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--from {path}: not a scenarios run ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else None
        raise UsageError(
            f"--from {path}: a scenarios run of schema {found!r}, where this tfbuild reads "
            f"{SCHEMA!r}: run the scenarios again"
        )
    return ScenariosFound(doc)


def _simulated(chosen: Sequence[Scenario], sessions: int, workers: int | None) -> ScenariosFound:
    """The scenarios run now, `sessions` sessions each, on `workers` processes (default: one a
    CPU)."""
    import os

    from tfbuild.analysis.scenarios import document, run_scenarios

    tallies = run_scenarios(chosen, sessions, workers or os.cpu_count() or 1)
    return ScenariosFound(document(tallies, sessions, 0))
