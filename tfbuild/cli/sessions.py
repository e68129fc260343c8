"""`tfbuild bench`, `tfbuild calibrate` and `tfbuild run`: sessions that measure.

Each command reads its options into one settings object, chooses the machine the benchmarks run
on, makes one plan for it and hands that plan to the stages: build (run only), the bench session
(which takes the analysis's looks as a function), then the report.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tfbuild.cli.app import cli
from tfbuild.cli.options import (
    PROCESSES_OPTION,
    QUIET_OPTION,
    RUNTIME_OPTION,
    SEED_OPTION,
    cache_option,
    command_cascade,
    debug_option,
    format_option,
    matrix_option,
    options_record,
    results_option,
    selection_options,
    session_options,
    store_option,
)
from tfbuild.cli.planning import (
    SessionMachine,
    read_matrix,
    session_plan,
    source_builds,
    with_baseline,
    with_forms,
)
from tfbuild.cli.values import (
    Selection,
    SuiteRequest,
    console,
    parse_cpus,
    parse_forms,
    parse_host_key,
    parse_weights,
    workload_request,
)
from tfbuild.config.values import AS_GIVEN, TIMEOUT_S
from tfbuild.engine import DockerInfo
from tfbuild.errors import NothingRan
from tfbuild.results.model import DEFAULT_PROCESSES, ProcessPath, Results

if TYPE_CHECKING:
    from tfbuild.bench.options import SessionOptions, Workspace
    from tfbuild.bench.workload import WorkloadRequest
    from tfbuild.config.model import Matrix, SuiteSettings


@dataclass(frozen=True, kw_only=True)
class SessionArguments:
    """The options of `bench` and `run` as their cascade resolved them, each named as the
    command receives it (those only `bench` has keep their defaults under `run`)."""

    matrix_path: Path | None
    tensorflow: str | None
    only: tuple[str, ...]
    skip: tuple[str, ...]
    opt_in: tuple[str, ...]
    store_path: Path
    quick: bool
    budget: str | None
    resolve: str | None
    min_rounds: int | None
    rounds: int | None
    weights: tuple[str, ...]
    seed: int | None
    host_key: str | None
    cpus: str | None
    runtime: str
    processes: ProcessPath
    results_dir: Path
    cache_dir: Path
    force: bool
    quiet: bool
    workload: Path | None
    with_suite: bool
    forms: str | None
    signature: str | None
    batch: int | None
    shapes: tuple[str, ...]
    inputs: Path | None
    atol: float | None
    rtol: float | None
    calls: int | None
    preset: str | None = None
    timeout: float = TIMEOUT_S
    refresh: bool = False
    resume: Path | None = None
    container_cpus: float | None = None
    memory: str | None = None


@dataclass(frozen=True, kw_only=True)
class SessionSettings:
    """What `bench` and `run` are asked: the matrix and selection, the suite, the machine's
    limits, and where results go (where each value came from is the command's cascade's
    record)."""

    matrix: Path | None
    tensorflow: str | None
    selection: Selection
    suite: SuiteRequest
    seed: int | None
    host_key: str | None
    machine: SessionMachine
    store: Path
    results_dir: Path
    cache_dir: Path
    force: bool
    quiet: bool
    timeout: float = TIMEOUT_S
    refresh: bool = False
    workload: WorkloadRequest | None = None
    with_suite: bool = False
    processes: ProcessPath = DEFAULT_PROCESSES
    weights: tuple[str, ...] = ()
    """--weight as typed (checked against the benchmarks the session measures)."""
    forms: tuple[str, ...] = ()
    """--forms (none given: the matrix's `forms:`)."""

    def workspace(self, engine_status: DockerInfo) -> Workspace:
        return _workspace(self.store, self.cache_dir, self.results_dir, engine_status)

    @classmethod
    def of(cls, given: SessionArguments) -> SessionSettings:
        """From the options of `bench` or `run`, checked and parsed."""
        return cls(
            matrix=given.matrix_path,
            tensorflow=given.tensorflow,
            selection=Selection(only=given.only, skip=given.skip, opt_in=given.opt_in),
            suite=SuiteRequest.parse(
                quick=given.quick,
                preset=given.preset,
                budget=given.budget,
                resolve=given.resolve,
                min_rounds=given.min_rounds,
                rounds=given.rounds,
            ),
            seed=given.seed,
            host_key=parse_host_key(given.host_key),
            machine=SessionMachine(
                runtime=given.runtime,
                cpus=parse_cpus(given.cpus),
                container_cpus=given.container_cpus,
                memory=given.memory,
            ),
            store=given.store_path,
            results_dir=given.results_dir,
            cache_dir=given.cache_dir,
            force=given.force,
            quiet=given.quiet,
            timeout=given.timeout,
            refresh=given.refresh,
            workload=workload_request(vars(given)),
            with_suite=given.with_suite,
            processes=given.processes,
            weights=given.weights,
            forms=parse_forms(given.forms),
        )


@dataclass(frozen=True, kw_only=True)
class ResumeSettings:
    """What `bench --resume` is asked: the results file, and where wheels and runtimes are."""

    results_file: Path
    store: Path
    cache_dir: Path
    results_dir: Path
    quiet: bool

    @classmethod
    def of(cls, given: SessionArguments) -> ResumeSettings:
        assert given.resume is not None
        return cls(
            results_file=given.resume,
            store=given.store_path,
            cache_dir=given.cache_dir,
            results_dir=given.results_dir,
            quiet=given.quiet,
        )

    def workspace(self, engine_status: DockerInfo) -> Workspace:
        return _workspace(self.store, self.cache_dir, self.results_dir, engine_status)


def _workspace(
    store: Path, cache_dir: Path, results_dir: Path, engine_status: DockerInfo
) -> Workspace:
    from tfbuild.bench.options import Workspace
    from tfbuild.store import WheelStore

    return Workspace(
        store=WheelStore(store),
        cache_dir=cache_dir,
        results_dir=results_dir,
        engine_reachable=engine_status.reachable,
    )


def _suite(settings: SessionSettings, matrix: Matrix) -> SuiteSettings:
    """The suite's settings for this session: the matrix's (or its preset's) under the
    options, each resolved in the command's cascade."""
    return settings.suite.settings(matrix.suite, command_cascade())


def _options(settings: SessionSettings, suite: SuiteSettings) -> SessionOptions:
    from tfbuild.bench.options import SessionOptions
    from tfbuild.bench.workload import WORKLOAD_BENCHMARKS, resolve

    wanted = settings.machine
    workload = resolve(settings.workload) if settings.workload else None
    if workload is not None and not settings.with_suite:
        suite = dataclasses.replace(suite, benchmarks=())
    measured = [*suite.benchmarks, *(WORKLOAD_BENCHMARKS if workload else ())]
    weights = parse_weights(settings.weights, measured, "this session measures")
    return SessionOptions(
        suite=suite,
        workload=workload,
        preset=settings.suite.preset,
        seed=settings.seed,
        cpus=wanted.cpus,
        runtime=wanted.runtime,
        timeout=settings.timeout,
        refresh=settings.refresh,
        argv=("tfbuild", *sys.argv[1:]),
        force=settings.force,
        container_cpus=wanted.container_cpus,
        memory=wanted.memory,
        host_key=settings.host_key,
        processes=settings.processes,
        weights=weights,
    )


def _require_measurements(results: Results, path: Path) -> None:
    if not any(run.ok for run in results.runs):
        raise NothingRan(f"no config could run; the reasons are recorded in {path}")


@cli.command()
@matrix_option
@selection_options
@store_option
@session_options
@click.option("--preset", help="Use this suite preset from matrix.yaml.")
@click.option(
    "--timeout",
    type=float,
    default=TIMEOUT_S,
    show_default=True,
    help="Seconds one benchmark process may take before it is killed.",
)
@click.option("--refresh", is_flag=True, help="Ask the index again for unpinned requirements.")
@click.option(
    "--resume",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Continue an interrupted session from its results file.",
)
@click.option(
    "--container-cpus",
    type=click.FloatRange(0.01, 1024),
    help="CPU limit for benchmark containers (docker --cpus).",
)
@click.option("--memory", metavar="SIZE", help="Memory limit for benchmark containers, e.g. 8g.")
@debug_option
def bench(**params: Any) -> None:
    """Benchmark every selected (variant, tuning) config: the fixed suite, or your own model.

    Each variant is fetched, installed into its runtime (a cached venv, or a container) and
    smoke-tested. Then each round runs every config still in contention once, each in a fresh
    process, in a seeded shuffled order, with the baseline run twice (the A/A control). After
    --min-rounds, a config that cannot be the fastest stops running, and the session stops
    when a config is known to be within --resolve (the margin) of the fastest, or when --budget
    (time spent benchmarking) would run out (--rounds N: a fixed design instead). Every raw sample,
    look and elimination goes to RESULTS/<session>.json, rewritten after each finished run;
    --resume continues it. --workload measures a SavedModel, a Keras file or a script instead
    (throughput and p50/p90/p99 latency; --with-suite keeps the suite too).
    """
    from tfbuild.analysis.looks import SequentialLooks
    from tfbuild.bench.session import resume_session, run_session
    from tfbuild.bench.summary import summarise
    from tfbuild.engine import docker_status
    from tfbuild.progress import make_reporter
    from tfbuild.report.terminal import print_bench
    from tfbuild.results.codec import load

    given = options_record(SessionArguments, params)
    engine_status = docker_status()
    if given.resume is not None:
        # A session continues as it was recorded: the options that shaped it are not read.
        resuming = ResumeSettings.of(given)
        reporter = make_reporter(resuming.quiet)
        with reporter:
            workspace = resuming.workspace(engine_status)
            path = resume_session(resuming.results_file, workspace, reporter, SequentialLooks())
    else:
        settings = SessionSettings.of(given)
        workspace = settings.workspace(engine_status)
        reporter = make_reporter(settings.quiet)
        matrix = read_matrix(settings.matrix, settings.tensorflow)
        options = _options(settings, _suite(settings, matrix))
        matrix = with_forms(matrix, settings.forms, options.workload, settings.with_suite)
        with reporter:
            plan = session_plan(
                matrix, settings.selection, settings.machine, engine_status, reporter.note
            )
            path = run_session(with_baseline(plan), options, workspace, reporter, SequentialLooks())
    results = load(path)
    if not given.quiet:
        print_bench(console(), summarise(results), path)
    _require_measurements(results, path)


@dataclass(frozen=True, kw_only=True)
class CalibrateSettings:
    matrix: Path | None
    selection: Selection
    store: Path
    rounds: int
    seed: int | None
    runtime: str
    processes: ProcessPath
    results_dir: Path
    cache_dir: Path
    report: Path | None
    fmt: str
    quiet: bool

    def workspace(self, engine_status: DockerInfo) -> Workspace:
        return _workspace(self.store, self.cache_dir, self.results_dir, engine_status)


@cli.command()
@matrix_option
@selection_options
@store_option
@click.option(
    "--rounds",
    type=click.IntRange(2, 1000),
    default=10,
    show_default=True,
    help="Rounds: every config runs once a round, in its own process, in a shuffled order.",
)
@SEED_OPTION
@RUNTIME_OPTION
@PROCESSES_OPTION
@results_option("Folder for the calibration file.")
@cache_option
@click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Show the table of an earlier calibration file instead of running one.",
)
@format_option({"table": "for a terminal", "markdown": "for a job summary or a pull request"})
@QUIET_OPTION
@debug_option
def calibrate(
    matrix_path: Path | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    opt_in: tuple[str, ...],
    store_path: Path,
    rounds: int,
    seed: int | None,
    runtime: str,
    processes: ProcessPath,
    results_dir: Path,
    cache_dir: Path,
    report_path: Path | None,
    fmt: str,
    quiet: bool,
) -> None:
    """Where a benchmark process spends its time, and which timed work buys the most precision.

    Runs the suite's benchmarks in processes like `tfbuild bench` (--processes), but times every
    step on its own; then replays designs (iterations per sample, samples per process) on the same
    processes: each one's cost per process and its process-to-process noise, and the precision
    per wall-second relative to the suite's own design. Use a few configs (--only).
    """
    from tfbuild.analysis.calibration import analyse
    from tfbuild.report.calibration import calibration_markdown, calibration_view
    from tfbuild.results.calibration import load

    settings = CalibrateSettings(
        matrix=matrix_path,
        selection=Selection(only=only, skip=skip, opt_in=opt_in),
        store=store_path,
        rounds=rounds,
        seed=seed,
        runtime=runtime,
        processes=processes,
        results_dir=results_dir,
        cache_dir=cache_dir,
        report=report_path,
        fmt=fmt,
        quiet=quiet,
    )
    path = settings.report if settings.report is not None else _calibrate(settings)
    analysis = analyse(load(path))
    if settings.fmt == "markdown":
        click.echo(calibration_markdown(analysis), nl=False)
    else:
        console().print(calibration_view(analysis, path))


def _calibrate(settings: CalibrateSettings) -> Path:
    """Run a calibration session; its file's path."""
    from tfbuild.bench.calibrate import run_calibration
    from tfbuild.bench.options import SessionOptions
    from tfbuild.engine import docker_status
    from tfbuild.progress import make_reporter

    engine_status = docker_status()
    # the suite's noise is calibrated: a model form is the workload's, not the suite's
    matrix = dataclasses.replace(read_matrix(settings.matrix), forms=(AS_GIVEN,))
    options = SessionOptions(
        suite=matrix.suite.settings,
        seed=settings.seed,
        runtime=settings.runtime,
        processes=settings.processes,
        argv=("tfbuild", *sys.argv[1:]),
    )
    workspace = settings.workspace(engine_status)
    reporter = make_reporter(settings.quiet)
    with reporter:
        wanted = SessionMachine(runtime=settings.runtime)
        plan = session_plan(matrix, settings.selection, wanted, engine_status, reporter.note)
        return run_calibration(plan, options, workspace, reporter, settings.rounds)


@cli.command()
@matrix_option
@selection_options
@store_option
@session_options
@click.option(
    "--build",
    "build_sources",
    is_flag=True,
    help="Build the source variants that are not in the store first (each takes hours; the "
    "estimates are printed before they start). Without it they are left out and named.",
)
@format_option(
    {
        "table": "for a person",
        "json": "the answer, the config to use and where the results, the report and the "
        "requirements file are (the whole report as `compare --format json` gives it), for "
        "scripts",
    }
)
@debug_option
def run(build_sources: bool, fmt: str, **params: Any) -> None:
    """The whole loop: which TensorFlow build and settings are fastest here, and will they run.

    Detects this machine, plans the matrix, fetches the prebuilt variants, takes the source
    variants already built in the store (with --build, builds the others first, after printing
    how long each takes here; without it, names them with the command that builds them and
    that estimate), audits every wheel (skipping those that cannot run here), benchmarks every
    (variant, tuning) config, ranks them, writes RESULTS/<session>.html and prints the ranking
    and the config to use.
    """
    from tfbuild.analysis.looks import SequentialLooks
    from tfbuild.bench.session import run_session
    from tfbuild.build.stage import BuildOptions, build_many, build_plan_lines
    from tfbuild.engine import docker_status
    from tfbuild.progress import make_reporter

    settings = SessionSettings.of(options_record(SessionArguments, params))
    matrix = read_matrix(settings.matrix, settings.tensorflow)
    engine_status = docker_status()
    workspace = settings.workspace(engine_status)
    options = _options(settings, _suite(settings, matrix))
    matrix = with_forms(matrix, settings.forms, options.workload, settings.with_suite)
    reporter = make_reporter(settings.quiet)
    with reporter:
        planned = with_baseline(
            session_plan(matrix, settings.selection, settings.machine, engine_status, reporter.note)
        )
        sources = source_builds(planned, workspace.store, build_sources, engine_status)
        for note in sources.notes:
            reporter.note(note)
        if sources.build:
            for line in build_plan_lines(sources.build, sources.plan, workspace.store):
                reporter.note(f"build {line}")
            failed = build_many(sources.build, sources.plan, workspace.store, reporter,
                                BuildOptions())  # fmt: skip
            options = dataclasses.replace(options, build_failures=failed)
        path = run_session(sources.plan, options, workspace, reporter, SequentialLooks())
    skipped = [sources.left_out] if sources.left_out else []
    _report_run(path, fmt, skipped)


def _report_run(path: Path, fmt: str, skipped: Sequence[str]) -> None:
    """What `run` says of its session: the report (terminal or JSON), where the results, the
    HTML report and the requirements file are, and what it left out."""
    from rich.text import Text

    from tfbuild.analysis.host_report import analyse
    from tfbuild.analysis.sessions import load_sessions
    from tfbuild.cli.comparing import with_requirements
    from tfbuild.files import atomic_write_text
    from tfbuild.report.comparison import answer_lines
    from tfbuild.report.document import compare_json
    from tfbuild.report.html import compare_html
    from tfbuild.report.ranking import compare_view
    from tfbuild.results.codec import load

    _require_measurements(load(path), path)
    reports = analyse(load_sessions([path]), power=True)
    if (choice := reports[0].choice) is not None and choice.lock:  # one machine: this one
        lock = path.with_suffix(".requirements.txt")
        reports = [with_requirements(reports[0], lock, path.name)]
    html_path = path.with_suffix(".html")
    atomic_write_text(html_path, compare_html(reports))
    if fmt == "json":
        (report,) = reports
        document = {
            "answer": asdict(report.answer),
            "choice": asdict(report.choice) if report.choice else None,
            "results": str(path),
            "report": str(html_path),
            "requirements": report.choice.requirements if report.choice else None,
            "left_out": skipped,
            "compare": compare_json(reports),
        }
        click.echo(json.dumps(document, indent=2))
        return
    out = console()
    out.print(compare_view(reports, out.width), crop=False)
    out.print(f"\nresults: {path}\nreport:  {html_path}")
    for said in skipped:
        out.print(said)
    out.print(Text(answer_lines(reports)[0], style="bold"))
