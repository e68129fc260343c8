"""The tfbuild command line. Thin: parse options, call one stage, print its result."""

from __future__ import annotations

import io
import json
import os
import shlex
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from tfbuild import __version__
from tfbuild.errors import (
    BuildFailed,
    EngineUnavailable,
    IncompatibleWheel,
    InstallError,
    MatrixError,
    NothingRan,
    RegressionFound,
    StaleOutput,
    TfbuildError,
    UsageError,
)

F = TypeVar("F", bound=Callable[..., Any])


class _Flags:
    """Process-wide switches set while options are parsed, read when an error is reported."""

    debug = bool(os.environ.get("TFBUILD_DEBUG"))


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    _Flags.debug = _Flags.debug or value


def debug_option(f: F) -> F:
    return click.option(
        "--debug",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_set_debug,
        help="Show the full traceback when something fails.",
    )(f)


def matrix_option(f: F) -> F:
    return click.option(
        "--matrix",
        "matrix_path",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        help="Build matrix to use. Default: ./matrix.yaml if present, else the packaged one.",
    )(f)


def host_option(f: F) -> F:
    return click.option(
        "--host",
        "host_path",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        help="Plan for the machine described by this saved `tfbuild detect --json` output.",
    )(f)


def selection_options(f: F) -> F:
    f = click.option(
        "--skip",
        multiple=True,
        metavar="PATTERN",
        help="Leave out configs matching VARIANT[:TUNING] (fnmatch; repeatable).",
    )(f)
    return click.option(
        "--only",
        multiple=True,
        metavar="PATTERN",
        help="Keep only configs matching VARIANT[:TUNING] (fnmatch; repeatable).",
    )(f)


def store_option(f: F) -> F:
    return click.option(
        "--store",
        "store_path",
        type=click.Path(path_type=Path, file_okay=False),
        default="wheels",
        envvar="TFBUILD_WHEELS",
        show_default=True,
        help="Wheel store: one folder per variant id with the wheel and its manifest.",
    )(f)


def cache_option(f: F) -> F:
    return click.option(
        "--cache-dir",
        type=click.Path(path_type=Path, file_okay=False),
        envvar="TFBUILD_CACHE_DIR",
        help="Cache for runtimes and audits (default: ~/.cache/tfbuild).",
    )(f)


SEED_OPTION = click.option(
    "--seed", type=int, help="Seed for the run order (default: random, recorded)."
)
RUNTIME_OPTION = click.option(
    "--runtime",
    type=click.Choice(["auto", "local", "docker"]),
    default="auto",
    show_default=True,
    help="auto: Docker for variants that ask for it (source builds) when an engine is "
    "reachable, else local venvs.",
)
QUIET_OPTION = click.option("-q", "--quiet", is_flag=True, help="No progress output.")
TENSORFLOW_OPTION = click.option(
    "--tensorflow",
    metavar="X.Y.Z",
    help="Build this TensorFlow release for the source variants that do not pin their own "
    "(replaces defaults.tensorflow; a new release).",
)
HOST_KEY_OPTION = click.option(
    "--host-key",
    metavar="NAME",
    help="Record these results as coming from the machine class NAME (default: the CPU model "
    "and instruction sets, usable CPUs, memory class and GPUs; hostnames are never used).",
)


def results_option(help_text: str) -> Callable[[F], F]:
    return click.option(
        "--results",
        "results_dir",
        type=click.Path(path_type=Path, file_okay=False),
        default="results",
        envvar="TFBUILD_RESULTS",
        show_default=True,
        help=help_text,
    )


def session_options(f: F) -> F:
    """Options shared by `bench` and `run`: suite size, order, pinning, runtime, outputs."""
    decorators = [
        click.option(
            "--quick",
            is_flag=True,
            help="The suite's quick preset: a small budget and a coarse target (10 min, ±10 %).",
        ),
        click.option(
            "--budget",
            metavar="DURATION",
            help="Time for benchmarking (installs not counted): stop starting rounds when the "
            "next would end after it (20m, 1h30m, 900s).",
        ),
        click.option(
            "--resolve",
            metavar="PERCENT",
            help="Stop when every config that could be the fastest is known to ± this (5%).",
        ),
        click.option(
            "--min-rounds",
            type=click.IntRange(2, 1000),
            help="Rounds every config runs before any is stopped early.",
        ),
        click.option(
            "--rounds",
            type=click.IntRange(1, 1000),
            help="A fixed design instead: every config runs exactly this many rounds.",
        ),
        SEED_OPTION,
        TENSORFLOW_OPTION,
        HOST_KEY_OPTION,
        click.option("--cpus", help="Pin every benchmark process to these CPUs, e.g. 0 or 0,1."),
        RUNTIME_OPTION,
        results_option("Folder for results files (and run's report.html)."),
        cache_option,
        click.option(
            "--force",
            is_flag=True,
            help="Install and run wheels even when `tfbuild inspect` says they cannot run here.",
        ),
        QUIET_OPTION,
    ]
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tfbuild"


def _console() -> Console:
    # Piped output keeps wide tables readable unless COLUMNS says otherwise.
    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(highlight=False, soft_wrap=False, width=120 if wide else None)


def _load_matrix(path: Path | None, tensorflow: str | None = None) -> Any:
    from tfbuild.matrix import load_matrix
    from tfbuild.resources import default_matrix_path

    if path is None:
        local = Path("matrix.yaml")
        path = local if local.is_file() else default_matrix_path()
    return load_matrix(path, tensorflow)


def _load_host(path: Path | None) -> Any:
    from tfbuild import host

    return host.load_profile(path) if path is not None else host.detect()


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="tfbuild")
@debug_option
def cli() -> None:
    """Find which TensorFlow build, with which runtime settings, is fastest on this hardware.

    \b
    tfbuild run        the whole loop: build or fetch, inspect, bench, compare, report
    tfbuild detect     what this machine is: CPU flags, level, -march, cores, GPUs, Docker
    tfbuild matrix     the variants x tunings of matrix.yaml, and which can run here
    tfbuild build      build source variants in Docker (prebuilt ones are fetched)
    tfbuild fetch      download the prebuilt variants into the wheel store
    tfbuild inspect    what a wheel's machine code needs, and whether it runs on a CPU and GPU
    tfbuild verify     run a wheel on emulated CPU models (qemu-user): the ground truth
    tfbuild bench      measure every config with the fixed suite, in rounds, with an A/A control
    tfbuild compare    rank the configs with confidence intervals, tiers and a "use this" block
    tfbuild index      a PEP 503 index over the wheel store, for pip --index-url
    tfbuild ci github  the nightly GitHub Actions workflow for this matrix
    """


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON document.")
@click.option(
    "--cpuinfo",
    "cpuinfo_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Profile the machine this saved /proc/cpuinfo comes from, instead of this one.",
)
@host_option
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the JSON document to this file (atomically), for later --host use.",
)
@click.option("--schema", is_flag=True, help="Print the JSON schema of the document and exit.")
@matrix_option
@debug_option
def detect(
    as_json: bool,
    cpuinfo_path: Path | None,
    host_path: Path | None,
    output: Path | None,
    schema: bool,
    matrix_path: Path | None,
) -> None:
    """Show what this machine is, as far as TensorFlow builds care.

    CPU vendor, model and instruction-set flags, x86-64 level and the closest safe -march,
    cores and the CPUs this process may use (affinity, cgroup quota), memory, glibc, Python,
    NVIDIA GPUs, Docker and qemu-user; then the bazel copts and thread settings to use.
    With --matrix, also says how many of that matrix's configs can run on the machine.
    """
    from tfbuild import host
    from tfbuild.report.terminal import host_view
    from tfbuild.resources import data_path
    from tfbuild.store import atomic_write_json

    if schema:
        click.echo(data_path("schemas/host.schema.json").read_text(encoding="utf-8"), nl=False)
        return
    if cpuinfo_path and host_path:
        raise UsageError("--cpuinfo and --host both describe the machine; give one of them")
    if cpuinfo_path is not None:
        profile = host.profile_from_cpuinfo(cpuinfo_path)
    else:
        profile = _load_host(host_path)
    document = profile.to_json()
    if output is not None:
        atomic_write_json(output, document)
    if as_json:
        click.echo(json.dumps(document, indent=2))
        return
    console = _console()
    console.print(host_view(profile))
    if matrix_path is not None:
        from tfbuild.plan import make_plan, runtimes_here

        matrix = _load_matrix(matrix_path)
        plan = make_plan(matrix, profile, runtimes=runtimes_here(matrix, profile))
        runnable = [pv.variant.name for pv in plan.variants if pv.verdict.runs]
        console.print(
            f"\n{matrix_path}: {len(runnable)} of {len(plan.variants)} variants can run here "
            f"({', '.join(runnable) or 'none'}); `tfbuild matrix` says why the others cannot"
        )


@cli.command("matrix")
@matrix_option
@host_option
@selection_options
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON (for CI fan-out).")
@click.option(
    "--latest",
    is_flag=True,
    help="Ask the package index for the newest TensorFlow release and what unpinned "
    "requirements resolve to today.",
)
@debug_option
def matrix_cmd(
    matrix_path: Path | None,
    host_path: Path | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    as_json: bool,
    latest: bool,
) -> None:
    """List the variants x tunings of the matrix, resolved for this (or a saved) host.

    Shows each variant's source, TensorFlow and Python versions, compiler flags and bazel
    configs, and whether the host can run it (and why not); then the tunings with their
    thread counts and environment resolved for the host. --json adds the CI fan-out.
    """
    from tfbuild.plan import make_plan, runtimes_here
    from tfbuild.report.terminal import plan_view

    matrix = _load_matrix(matrix_path)
    profile = _load_host(host_path)
    plan = make_plan(matrix, profile, only, skip, runtimes_here(matrix, profile))
    document = plan.to_json()
    if latest:
        document["latest"] = _latest(matrix)
    if as_json:
        click.echo(json.dumps(document, indent=2))
        return
    _console().print(plan_view(plan))
    if latest:
        info = document["latest"]
        click.echo(
            f"\nnewest TensorFlow on the index: {info['tensorflow']} ({info['project']}); "
            f"source builds use {info['defaults']}"
            + ("; a newer release is out" if info["newer_than_defaults"] else "")
        )
        for name, version in info["resolved"].items():
            click.echo(f"{name}: the unpinned requirement resolves to {version} today")


def _latest(matrix: Any) -> dict[str, Any]:
    """The newest TensorFlow on the index, and what unpinned pypi variants resolve to."""
    from packaging.version import Version

    from tfbuild import pip
    from tfbuild.matrix import has_recipe

    newest = pip.resolve("tensorflow-cpu", matrix.defaults.pip)
    resolved = {
        v.name: pip.resolve(v.requirement, matrix.defaults.pip).version
        for v in matrix.variants
        if v.source == "pypi" and v.tensorflow is None and v.requirement
    }
    newer = Version(newest.version) > Version(matrix.defaults.tensorflow)
    return {
        "tensorflow": newest.version,
        "project": newest.name,
        "defaults": matrix.defaults.tensorflow,
        "newer_than_defaults": newer,
        "has_recipe": has_recipe(newest.version),
        "build": newest.version
        if newer and has_recipe(newest.version)
        else matrix.defaults.tensorflow,
        "resolved": resolved,
    }


@cli.command()
@matrix_option
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME",
    help="Variant to build (name or id; repeatable).",
)
@click.option("--all", "build_all", is_flag=True, help="Build every variant of the matrix.")
@selection_options
@store_option
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the rendered Dockerfile, build script and bazel command; build nothing.",
)
@click.option("--force", is_flag=True, help="Rebuild even when the content key is unchanged.")
@click.option(
    "--tf-source",
    envvar="TFBUILD_TF_SOURCE",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    callback=lambda _ctx, _param, value: _printable_path(value),
    help="Build this local TensorFlow tree (copied in) instead of cloning the tag.",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Variants built at the same time on the engine.",
)
@click.option(
    "--bazel-cache",
    envvar="TFBUILD_BAZEL_CACHE",
    metavar="VOLUME_OR_PATH",
    help="Override defaults.bazel.cache: a Docker volume name or an absolute path.",
)
@TENSORFLOW_OPTION
@click.option(
    "--host",
    "host_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Build for the machine this saved `tfbuild detect --json` describes (march: host, "
    "copts), e.g. the runner that will benchmark the wheels; default: this machine.",
)
@QUIET_OPTION
@debug_option
def build(
    matrix_path: Path | None,
    variants: tuple[str, ...],
    build_all: bool,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    store_path: Path,
    dry_run: bool,
    force: bool,
    tf_source: Path | None,
    jobs: int,
    bazel_cache: str | None,
    tensorflow: str | None,
    host_path: Path | None,
    quiet: bool,
) -> None:
    """Build wheels of source variants in Docker (bazel with their configs and copts).

    The recipe for the variant's TensorFlow era is rendered from templates/ (a templates/ folder
    next to matrix.yaml overrides the packaged one), built on the engine DOCKER_HOST points to,
    and the wheel lands in STORE/<variant-id>/ with manifest.json and build.log. The wheel's
    version carries the variant as a local label (2.17.1+mkl.avx2) and its manifest inside.
    Building an unchanged variant again is a no-op (--force rebuilds). Prebuilt variants are
    fetched instead.
    """
    from concurrent.futures import ThreadPoolExecutor

    from tfbuild import build as stage
    from tfbuild.plan import select
    from tfbuild.progress import make_reporter
    from tfbuild.store import WheelStore

    matrix = _load_matrix(matrix_path, tensorflow)
    if bazel_cache:
        matrix = _with_bazel_cache(matrix, bazel_cache)
    if variants:
        chosen = [matrix.variant(name) for name in variants]
    elif build_all or only or skip:
        chosen = list(dict.fromkeys(v for v, _ in select(matrix, only, skip)))
    else:
        raise UsageError("name what to build: --variant NAME, --only PATTERN or --all")
    host = _target_host(host_path)
    options = stage.BuildOptions(force=force, tf_source=tf_source)
    if dry_run:
        for variant in chosen:
            _print_dry_run(variant, matrix, host, options)
        return
    from tfbuild import engine
    from tfbuild.host import docker_status

    status = docker_status()
    if any(v.needs_build for v in chosen) and not status.reachable:
        raise EngineUnavailable(
            f"building source variants needs a Docker engine; none answers at {status.host} "
            f"({status.error}). Start dockerd or set DOCKER_HOST; --dry-run shows the recipe."
        )
    store = WheelStore(store_path)
    reporter = make_reporter(quiet)
    failures: list[str] = []
    with reporter:
        reporter.start(len(chosen), "building")

        def one(variant: Any) -> None:
            reporter.running(f"{variant.name}: starting")
            try:
                outcome = stage.build_variant(variant, matrix, host, store, reporter, options)
            except (BuildFailed, InstallError) as exc:
                failures.append(str(exc))
                reporter.note(f"[red]failed[/] {exc}")
            else:
                reporter.note(
                    f"{outcome.variant}: {outcome.status}: {outcome.wheel} "
                    f"({outcome.message}, {outcome.seconds:.1f} s)"
                )
            reporter.advance(variant.name)

        if jobs == 1:
            for variant in chosen:
                one(variant)
        else:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                futures = [pool.submit(one, v) for v in chosen]
                try:
                    for future in futures:
                        future.result()
                except KeyboardInterrupt:
                    # Workers are blocked on their containers: kill those, let them clean up.
                    engine.cancel()
                    for future in futures:
                        future.cancel()
                    raise
    if failures:
        raise BuildFailed(f"{len(failures)} of {len(chosen)} builds failed; see above")


def _target_host(path: Path | None) -> Any:
    """The machine wheels are built for: this one, or the saved profile of another (its
    `march: host` and copts; the build machine's own tools keep TensorFlow's baseline)."""
    import dataclasses

    if path is None:
        return _load_host(None)
    return dataclasses.replace(_load_host(path), source="saved")


def _with_bazel_cache(matrix: Any, cache: str) -> Any:
    import dataclasses

    from tfbuild.matrix import PATH_RE, VOLUME_RE

    expanded = str(Path(cache).expanduser())
    absolute = expanded.startswith("/") and PATH_RE.fullmatch(expanded)
    if not (VOLUME_RE.fullmatch(expanded) or absolute):
        raise UsageError(
            f"--bazel-cache {cache!r}: expected a Docker volume name or an absolute path"
        )
    bazel = dataclasses.replace(matrix.defaults.bazel, cache=expanded)
    defaults = dataclasses.replace(matrix.defaults, bazel=bazel)
    return dataclasses.replace(matrix, defaults=defaults)


def _print_dry_run(variant: Any, matrix: Any, host: Any, options: Any) -> None:
    from tfbuild import build as stage

    if variant.source != "bazel":
        what = variant.requirement or variant.path
        click.echo(f"# {variant.name}: source {variant.source} ({what}); `tfbuild fetch` gets it\n")
        return
    recipe, rendered, settings = stage.prepare(variant, matrix, host, options)
    click.echo(f"# ===== {variant.name} ({variant.id}): Dockerfile =====")
    click.echo(rendered.dockerfile)
    click.echo(f"# ===== {variant.name}: tfbuild-build =====")
    click.echo(rendered.build_script)
    click.echo(f"# ===== {variant.name}: bazel command =====")
    click.echo(" ".join(shlex.quote(a) for a in recipe.bazel_command))
    for note in (*recipe.notes, *settings.notes):
        click.echo(f"# note: {note}")
    click.echo("")


@cli.command()
@matrix_option
@selection_options
@store_option
@click.option("--refresh", is_flag=True, help="Ask the index again (picks up a new release).")
@debug_option
def fetch(
    matrix_path: Path | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    store_path: Path,
    refresh: bool,
) -> None:
    """Download the prebuilt variants (source: pypi) into the wheel store, once.

    Each lands in STORE/<variant-id>/ with a manifest.json: name, version, sha256, the index URL
    it came from and its tags. source: wheel variants get a manifest with their sha256.
    Source builds are made by `tfbuild build`.
    """
    from tfbuild.fetch import fetch as fetch_variant
    from tfbuild.plan import select
    from tfbuild.store import WheelStore

    matrix = _load_matrix(matrix_path)
    store = WheelStore(store_path)
    seen: set[str] = set()
    for variant, _ in select(matrix, only, skip):
        if variant.name in seen or variant.source == "bazel":
            continue
        seen.add(variant.name)
        artifact, downloaded = fetch_variant(variant, store, matrix.defaults.pip, refresh)
        state = "downloaded" if downloaded else "already in store"
        click.echo(f"{variant.name}: {artifact.wheel} ({state}, sha256 {artifact.sha256[:16]})")
    if not seen:
        click.echo("nothing to fetch: the selection has only source builds (`tfbuild build`)")


def _printable_path(value: Path | None) -> Path | None:
    """A path without control characters (a newline in a folder name would end the line it is
    written on in a Dockerfile or a log)."""
    if value is not None and not str(value).isprintable():
        raise click.BadParameter(f"{str(value)!r} holds control characters; rename the folder")
    return value


def _parse_cpus(value: str | None) -> tuple[int, ...] | None:
    from tfbuild.host import parse_cpulist

    if value is None:
        return None
    try:
        cpus = tuple(parse_cpulist(value))
    except ValueError as exc:
        raise UsageError(f"--cpus {value!r}: expected a CPU list like 0 or 0,1 or 0-3") from exc
    from tfbuild.probe import is_local_socket

    if not cpus:
        raise UsageError(f"--cpus {value!r}: expected a CPU list like 0 or 0,1 or 0-3")
    if not is_local_socket(os.environ.get("DOCKER_HOST") or "unix://"):
        return cpus  # the engine's machine: checked against its probe when the session plans
    allowed = os.sched_getaffinity(0)
    if not set(cpus) <= allowed:
        raise UsageError(f"--cpus {value!r}: this process may use CPUs {sorted(allowed)} only")
    return cpus


@cli.command()
@matrix_option
@selection_options
@store_option
@session_options
@click.option("--preset", help="Use this suite preset from matrix.yaml.")
@click.option(
    "--timeout",
    type=float,
    default=1800,
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
def bench(
    matrix_path: Path | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    store_path: Path,
    quick: bool,
    budget: str | None,
    resolve: str | None,
    min_rounds: int | None,
    preset: str | None,
    rounds: int | None,
    seed: int | None,
    tensorflow: str | None,
    host_key: str | None,
    cpus: str | None,
    runtime: str,
    timeout: float,
    refresh: bool,
    resume: Path | None,
    results_dir: Path,
    cache_dir: Path | None,
    container_cpus: float | None,
    memory: str | None,
    force: bool,
    quiet: bool,
) -> None:
    """Benchmark every selected (variant, tuning) config with the fixed suite.

    Each variant is fetched, installed into its runtime (a cached venv, or a container) and
    smoke-tested. Then each round runs every config still in contention once, each in a fresh
    process, in a seeded shuffled order, with the baseline run twice (the A/A control). After
    --min-rounds, a config that cannot be the fastest stops running, and the session stops
    when every config that could be the fastest is known to ±--resolve, or when --budget (time
    spent benchmarking) would run out (--rounds N: a fixed design instead). Every raw sample,
    look and elimination goes to RESULTS/<session>.json, rewritten after each finished run;
    --resume continues it.
    """
    from tfbuild.bench import runner
    from tfbuild.bench.results import load
    from tfbuild.bench.summary import summarise
    from tfbuild.host import docker_status
    from tfbuild.plan import make_plan, runtimes_here
    from tfbuild.progress import make_reporter
    from tfbuild.report.terminal import bench_view

    if quick and preset:
        raise UsageError("--quick is the preset named quick; give --quick or --preset")
    workspace = _workspace(store_path, cache_dir, results_dir, docker_status().reachable)
    reporter = make_reporter(quiet)
    if resume is not None:
        with reporter:
            path = runner.resume_session(resume, workspace, reporter)
    else:
        matrix = _load_matrix(matrix_path, tensorflow)
        profile = _load_host(None)
        plan = make_plan(matrix, profile, only, skip, runtimes_here(matrix, profile, runtime))
        options = _bench_options(
            matrix,
            _suite(matrix, "quick" if quick else preset, budget, resolve, min_rounds, rounds),
            seed,
            cpus,
            runtime,
            force,
            preset="quick" if quick else preset,
            host_key=host_key,
            timeout=timeout,
            refresh=refresh,
            container_cpus=container_cpus,
            memory=memory,
        )
        with reporter:
            path = runner.run_session(plan, options, workspace, reporter)
    document = load(path)
    if not quiet:
        _console().print(bench_view(summarise(document), path))
    _require_measurements(document, path)


@cli.command()
@matrix_option
@selection_options
@store_option
@click.option(
    "--rounds",
    type=click.IntRange(2, 1000),
    default=10,
    show_default=True,
    help="Processes per config (every config once per round, shuffled).",
)
@SEED_OPTION
@RUNTIME_OPTION
@results_option("Folder for the calibration file.")
@cache_option
@click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Show the table of an earlier calibration file instead of running one.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown"]),
    default="table",
    show_default=True,
)
@QUIET_OPTION
@debug_option
def calibrate(
    matrix_path: Path | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    store_path: Path,
    rounds: int,
    seed: int | None,
    runtime: str,
    results_dir: Path,
    cache_dir: Path | None,
    report_path: Path | None,
    fmt: str,
    quiet: bool,
) -> None:
    """Where a benchmark process spends its time, and which timed work buys the most precision.

    Runs the suite's benchmarks in fresh processes like `tfbuild bench`, but times every step on
    its own; then replays designs (iterations per sample, samples per process) on the same
    processes: each one's cost per process and its process-to-process noise, and the precision
    per wall-second relative to the suite's own design. Use a few configs (--only).
    """
    from tfbuild.bench import calibrate as cal
    from tfbuild.bench.results import load_any
    from tfbuild.host import docker_status
    from tfbuild.plan import make_plan, runtimes_here
    from tfbuild.progress import make_reporter
    from tfbuild.report.terminal import calibration_markdown, calibration_view

    if report_path is None:
        matrix = _load_matrix(matrix_path)
        profile = _load_host(None)
        plan = make_plan(matrix, profile, only, skip, runtimes_here(matrix, profile, runtime))
        workspace = _workspace(store_path, cache_dir, results_dir, docker_status().reachable)
        options = _bench_options(matrix, matrix.suite.settings, seed, None, runtime, False)
        reporter = make_reporter(quiet)
        with reporter:
            report_path = cal.run_calibration(
                plan, options, workspace, reporter, rounds, lambda name: results_dir / name
            )
    analysis = cal.analyse(load_any(report_path, cal.SCHEMA))
    if fmt == "markdown":
        click.echo(calibration_markdown(analysis), nl=False)
    else:
        _console().print(calibration_view(analysis, report_path))


def _workspace(
    store_path: Path, cache_dir: Path | None, results_dir: Path, engine_reachable: bool
) -> Any:
    from tfbuild.bench import runner
    from tfbuild.store import WheelStore

    return runner.Workspace(
        store=WheelStore(store_path),
        cache_dir=cache_dir or _default_cache(),
        results_dir=results_dir,
        engine_reachable=engine_reachable,
    )


def _suite(
    matrix: Any,
    preset: str | None,
    budget: str | None,
    resolve: str | None,
    min_rounds: int | None,
    rounds: int | None,
) -> Any:
    """The suite settings of the preset, with the command line's choices on top."""
    import dataclasses

    from tfbuild.matrix import parse_duration, parse_percent

    suite = matrix.suite.preset(preset)
    changes: dict[str, Any] = {}
    if budget is not None:
        if (seconds := parse_duration(budget)) is None:
            raise UsageError(f"--budget {budget!r}: expected a duration like 15m, 1h30m or 900s")
        changes["budget_s"] = seconds
    if resolve is not None:
        if (fraction := parse_percent(resolve)) is None:
            raise UsageError(f"--resolve {resolve!r}: expected a percentage like 5%")
        changes["resolve"] = fraction
    if min_rounds is not None:
        changes["min_rounds"] = min_rounds
        changes["max_rounds"] = max(suite.max_rounds, min_rounds)
    if rounds is not None:
        if budget is not None or resolve is not None or min_rounds is not None:
            raise UsageError(
                "--rounds asks for a fixed design; --budget, --resolve and --min-rounds are "
                "for the sequential one: give one or the other"
            )
        changes["rounds"] = rounds
    elif changes:
        changes["rounds"] = None
    return dataclasses.replace(suite, **changes)


def _bench_options(
    matrix: Any,
    suite: Any,
    seed: int | None,
    cpus: str | None,
    runtime: str,
    force: bool,
    preset: str | None = None,
    **extra: Any,
) -> Any:
    from tfbuild.bench import runner

    key = extra.get("host_key")
    if key is not None and not (0 < len(key.strip()) <= 100 and key.isprintable()):
        raise UsageError(f"--host-key {key!r}: expected a name of 1 to 100 printable characters")
    return runner.BenchOptions(
        suite=suite,
        preset=preset,
        seed=seed,
        cpus=_parse_cpus(cpus),
        runtime=runtime,
        argv=("tfbuild", *sys.argv[1:]),
        force=force,
        **extra,
    )


def _require_measurements(document: dict[str, Any], path: Path) -> None:
    if not any(run["status"] == "ok" for run in document["runs"]):
        raise NothingRan(f"no config could run; the reasons are recorded in {path}")


def _wheel_argument(
    target: str, matrix_path: Path | None, store_path: Path
) -> tuple[Path, tuple[str, ...], Any]:
    """A wheel file, or a variant of the matrix whose wheel is in (or fetched into) the store;
    with its constraints and the package index settings to install it (a wheel file: pip's
    own)."""
    from tfbuild.fetch import fetch
    from tfbuild.matrix import INHERIT_PIP
    from tfbuild.store import WheelStore
    from tfbuild.wheelfile import check_wheel, embedded_manifest

    path = Path(target)
    if target.endswith(".whl"):
        if not path.is_file():
            raise UsageError(f"{target}: no such wheel file")
        check_wheel(path)
        manifest = embedded_manifest(path) or {}
        return path, tuple(manifest.get("constraints") or ()), INHERIT_PIP
    matrix = _load_matrix(matrix_path)
    variant = matrix.variant(target)
    artifact, _ = fetch(variant, WheelStore(store_path), matrix.defaults.pip)
    return artifact.wheel, variant.constraints, matrix.defaults.pip


def _gpus(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[Any]:
    from tfbuild import audit

    try:
        return [audit.gpu_for_arch(v, i) for i, v in enumerate(values)]
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


@cli.command()
@click.argument("target", metavar="WHEEL_OR_VARIANT")
@matrix_option
@store_option
@host_option
@click.option(
    "--cpu",
    "cpu_model",
    metavar="MODEL",
    help="Give the verdict for a named CPU (haswell, Skylake-Server-v1...).",
)
@click.option(
    "--gpu",
    "gpus",
    multiple=True,
    metavar="ARCH",
    callback=_gpus,
    help="Give the CUDA verdict for this GPU instead of this machine's (repeatable): sm_90, "
    "sm_90a, compute_90 or a compute capability such as 9.0.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON report.")
@click.option("--refresh", is_flag=True, help="Audit again instead of using the cached report.")
@cache_option
@debug_option
def inspect(
    target: str,
    matrix_path: Path | None,
    store_path: Path,
    host_path: Path | None,
    cpu_model: str | None,
    gpus: list[Any],
    as_json: bool,
    refresh: bool,
    cache_dir: Path | None,
) -> None:
    """Audit a wheel's machine code and say whether it runs on this (or another) CPU and GPU.

    Lists the wheel's metadata and tfbuild manifest; for every ELF object the instruction-set
    extensions its code uses (instruction counts, share of functions); the baseline a CPU
    needs, told apart from kernels only reached after a run-time CPU check, with how it was
    decided; the glibc floor and the manylinux tag it implies; the CUDA SASS and PTX
    architectures of every object with device code, listed by cuobjdump (installed from the
    package index into the cache when it is not on PATH). Then the verdict: "runs here", "will
    crash here: needs ...", or "unproven" when an ELF object in it could not be read; for this
    machine's GPUs (or --gpu), the code that runs on each or the architectures missing.
    Exits 6 when the wheel cannot run on the target.
    """
    from tfbuild import audit
    from tfbuild.report.terminal import inspect_view

    if host_path and cpu_model:
        raise UsageError("--host and --cpu both name the target; give one of them")
    wheel, _, settings = _wheel_argument(target, matrix_path, store_path)
    report = audit.inspect_wheel(
        wheel, cache_dir or _default_cache(), refresh, pip_settings=settings
    )
    goal = (
        audit.target_for_model(cpu_model)
        if cpu_model
        else audit.target_for_host(_load_host(host_path))
    )
    if gpus:
        goal = audit.with_gpus(goal, gpus)
    result = audit.verdict(report, goal)
    if as_json:
        click.echo(json.dumps({**report, "verdict": audit.verdict_json(result, goal)}, indent=2))
    else:
        _console().print(inspect_view(report, result, goal))
    if result.runs is False:
        raise IncompatibleWheel(f"{wheel.name}: {'; '.join(result.blockers)}")


@cli.command()
@click.argument("target", metavar="WHEEL_OR_VARIANT")
@click.option(
    "--cpu",
    "models",
    multiple=True,
    required=True,
    metavar="MODEL",
    help="qemu CPU model to run on (Nehalem-v1, SandyBridge-v1, Haswell-v1...).",
)
@click.option(
    "--constraint",
    "constraints",
    multiple=True,
    metavar="REQ",
    help="Extra install constraint, e.g. 'numpy<2' (repeatable).",
)
@click.option(
    "--timeout",
    type=float,
    default=900,
    show_default=True,
    help="Seconds one emulated run may take.",
)
@matrix_option
@store_option
@cache_option
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@debug_option
def verify(
    target: str,
    models: tuple[str, ...],
    constraints: tuple[str, ...],
    timeout: float,
    matrix_path: Path | None,
    store_path: Path,
    cache_dir: Path | None,
    as_json: bool,
) -> None:
    """Run a wheel on emulated CPUs (qemu-user): the ground truth for `tfbuild inspect`.

    The wheel is installed into a cached venv; then, under `qemu-x86_64 -cpu MODEL`, it is
    imported and runs a small op (for TensorFlow a matmul and a one-step GRU). A model that
    lacks an instruction the wheel executes dies with SIGILL, as real hardware would.
    Exits 6 when the wheel fails on any model.
    """
    from tfbuild import qemu
    from tfbuild.fetch import Artifact
    from tfbuild.pip import sha256_of
    from tfbuild.runtime import LocalVenv, local_env
    from tfbuild.wheelfile import top_level

    qemu.binary()
    for model in models:
        qemu.check_model(model)
    wheel, declared, settings = _wheel_argument(target, matrix_path, store_path)
    artifact = Artifact(wheel.name, wheel, sha256_of(wheel), (*declared, *constraints), {})
    venv = LocalVenv(artifact, cache_dir or _default_cache(), settings)
    venv.prepare()
    packages = top_level(wheel)
    snippet = qemu.TF_SNIPPET if "tensorflow" in packages else qemu.import_snippet(packages)
    outcomes = [qemu.run(m, venv.interpreter, snippet, local_env({}), timeout) for m in models]
    if as_json:
        from dataclasses import asdict

        click.echo(
            json.dumps({"wheel": wheel.name, "results": [asdict(o) for o in outcomes]}, indent=2)
        )
    else:
        for o in outcomes:
            click.echo(f"{o.model}: {o.message} ({o.seconds:.1f} s)")
            if not o.passed and o.stderr_tail:
                click.echo("  " + o.stderr_tail.replace("\n", "\n  "))
    failed = [o.model for o in outcomes if not o.passed]
    if failed:
        raise IncompatibleWheel(f"{wheel.name} fails on {', '.join(failed)}")


def _fraction(value: str) -> float:
    text = value.strip()
    try:
        number = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError as exc:
        raise UsageError(f"--fail-above {value!r}: expected a percentage like 5% or 0.05") from exc
    if not 0 < number < 1:
        raise UsageError(f"--fail-above {value!r}: expected a value between 0% and 100%")
    return number


@cli.command()
@click.argument("results_files", nargs=-1, required=True, metavar="RESULTS...")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "json", "html"]),
    default="table",
    show_default=True,
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
    "--margin",
    metavar="PERCENT",
    help="Practical margin for the verdicts (default: one process's spread from the A/A "
    "control, at least 2%).",
)
@debug_option
def compare(
    results_files: tuple[str, ...],
    fmt: str,
    output: Path | None,
    against: tuple[str, ...],
    fail_above: str,
    allow_different_hosts: bool,
    margin: str | None,
) -> None:
    """Rank the configs of one or more results files (RESULTS: files, folders of them, or
    quoted patterns) against the baseline.

    Per benchmark and overall (geometric mean), each config's speed relative to the baseline
    with simultaneous confidence intervals (every claim holds together with probability 95 %,
    looks of a sequential session included), verdicts faster / slower / equivalent / undecided
    against a practical margin from the A/A control, tiers of configs that could be the
    fastest, the looks and eliminations a session made (replayed from the data), and the config
    to use with how to reproduce it. Files from several machines are reported per machine.
    With --against OLD (results of the same machine class are paired), exits 10 when a config
    got slower than --fail-above, or when a config OLD measured has no results (or fewer
    benchmarks) in the new ones, a line per cause.
    """
    from tfbuild import compare as analysis
    from tfbuild.report import comparison as views
    from tfbuild.store import atomic_write_text

    chosen_margin = None
    if margin is not None:
        from tfbuild.matrix import parse_percent

        if (chosen_margin := parse_percent(margin)) is None:
            raise UsageError(f"--margin {margin!r}: expected a percentage like 3%")
    sessions = analysis.load_sessions(_results_paths(results_files, "RESULTS"))
    reports = analysis.analyse(sessions, chosen_margin)
    verdict = None
    threshold = _fraction(fail_above)
    if against:
        old = analysis.load_sessions(_results_paths(against))
        verdict = analysis.gate(sessions, old, threshold, allow_different_hosts)
    if fmt == "table":
        # To a file: plain text at a fixed width; to the terminal: as wide as it is.
        console = _console() if output is None else Console(record=True, file=io.StringIO(),
                                                            width=120, highlight=False)  # fmt: skip
        console.print(views.compare_view(reports), crop=False)
        if verdict is not None:
            console.print(views.gate_view(verdict, threshold))
        text = None if output is None else console.export_text()
    elif fmt == "markdown":
        text = views.compare_markdown(reports)
        if verdict is not None:
            text += "\n" + views.gate_markdown(verdict, threshold)
    elif fmt == "json":
        text = json.dumps(views.compare_json(reports, verdict), indent=2) + "\n"
    else:
        from tfbuild.report.html import compare_html

        text = compare_html(reports)
    if text is not None:
        if output is not None:
            atomic_write_text(output, text)
            click.echo(f"wrote {output}", err=True)
        else:
            click.echo(text, nl=False)
    if verdict is not None:
        for note in verdict.notes:
            click.echo(f"gate: {note}", err=True)
        if causes := verdict.causes(threshold):
            raise RegressionFound(
                f"the regression gate failed against {' '.join(against)}, "
                f"{len(causes)} cause(s):\n" + "\n".join(f"  {c}" for c in causes)
            )


def _results_paths(specs: Sequence[str], option: str = "--against") -> list[Path]:
    """Results files named by files, folders (their *.json and *.json.gz) or glob patterns."""
    paths: list[Path] = []
    for spec in specs:
        path = Path(spec)
        if path.is_dir():
            found = sorted([*path.glob("*.json"), *path.glob("*.json.gz")])
        elif path.exists():
            found = [path]
        else:
            found = sorted(p for p in path.parent.glob(path.name) if p.is_file())
        if not found:
            raise UsageError(
                f"{option} {spec!r}: no results there; expected a results file, a folder of "
                "them, or a quoted pattern like 'previous/*.json'"
            )
        paths += found
    return paths


@cli.command()
@matrix_option
@selection_options
@store_option
@session_options
@debug_option
def run(
    matrix_path: Path | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    store_path: Path,
    quick: bool,
    budget: str | None,
    resolve: str | None,
    min_rounds: int | None,
    rounds: int | None,
    seed: int | None,
    tensorflow: str | None,
    host_key: str | None,
    cpus: str | None,
    runtime: str,
    results_dir: Path,
    cache_dir: Path | None,
    force: bool,
    quiet: bool,
) -> None:
    """The whole loop: which TensorFlow build and settings are fastest here, and will they run.

    Detects this machine, plans the matrix, builds the source variants (when a Docker engine is
    reachable; otherwise says once which were skipped and how to include them) or fetches the
    prebuilt ones, audits every wheel (skipping those that cannot run here), benchmarks every
    (variant, tuning) config, ranks them, writes RESULTS/<session>.html and prints the ranking
    and the config to use.
    """
    from tfbuild import compare as analysis
    from tfbuild import pipeline
    from tfbuild.bench.results import load
    from tfbuild.host import docker_status
    from tfbuild.progress import make_reporter
    from tfbuild.report import comparison as views
    from tfbuild.report.html import compare_html
    from tfbuild.store import atomic_write_text

    matrix = _load_matrix(matrix_path, tensorflow)
    docker = docker_status()
    workspace = _workspace(store_path, cache_dir, results_dir, docker.reachable)
    preset = "quick" if quick else None
    suite = _suite(matrix, preset, budget, resolve, min_rounds, rounds)
    options = _bench_options(
        matrix, suite, seed, cpus, runtime, force, preset=preset, host_key=host_key
    )
    reporter = make_reporter(quiet)
    with reporter:
        outcome = pipeline.run(
            matrix, _load_host(None), docker, only, skip, options, workspace, reporter
        )
    document = load(outcome.results)
    _require_measurements(document, outcome.results)
    reports = analysis.analyse(analysis.load_sessions([outcome.results]))
    html_path = outcome.results.with_suffix(".html")
    atomic_write_text(html_path, compare_html(reports))
    console = _console()
    console.print(views.compare_view(reports), crop=False)
    console.print(f"\nresults: {outcome.results}\nreport:  {html_path}")
    if outcome.skipped_builds:
        console.print(pipeline.no_engine_message(outcome.skipped_builds, docker))


@cli.command()
@click.argument(
    "store_path",
    metavar="[STORE]",
    required=False,
    default="wheels",
    type=click.Path(path_type=Path, file_okay=False),
)
@debug_option
def index(store_path: Path) -> None:
    """Write a PEP 503 simple index over every wheel in the store, at STORE/simple.

    Links carry #sha256= fragments and data-requires-python, so a team can
    `pip install --index-url file:///.../wheels/simple tensorflow-cpu==2.17.1+mkl.avx2`
    or serve the folder with any static web server.
    """
    from tfbuild.store import write_index

    if not store_path.is_dir():
        raise UsageError(f"{store_path}: no such wheel store (build or fetch something first)")
    from tfbuild.errors import BadWheel

    indexed, skipped = write_index(store_path)
    root = (store_path / "simple").resolve()
    projects = sorted({p for p, _ in indexed})
    click.echo(f"indexed {len(indexed)} wheels of {len(projects)} projects in {root}")
    for project, wheel in indexed:
        click.echo(f"  {project}: {wheel.name}")
    click.echo(f"pip install --index-url {root.as_uri()}/ PROJECT==VERSION")
    if skipped:
        raise BadWheel(
            f"left out of the index, {len(skipped)} file(s) that are not readable wheels:\n"
            + "\n".join(f"  {line}" for line in skipped)
        )


@cli.group()
def ci() -> None:
    """Generate CI configuration for this matrix."""


@ci.command()
@matrix_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=".github/workflows/tfbuild-nightly.yml",
    show_default=True,
    help="Where to write the workflow.",
)
@click.option(
    "--install",
    default="pip install .",
    show_default=True,
    help="How every job installs tfbuild: from the checkout, a wheel or a URL; never by a bare "
    "name from the index (`tfbuild` there is an unrelated project).",
)
@click.option(
    "--build-runner",
    default="ubuntu-latest",
    show_default=True,
    help="Runner label for the build jobs.",
)
@click.option(
    "--bench-runner",
    "bench_runners",
    multiple=True,
    help="Runner label for a bench job (repeatable; default ubuntu-latest).",
)
@click.option(
    "--bench-host",
    "bench_hosts",
    multiple=True,
    metavar="RUNNER=PROFILE",
    help="The saved `tfbuild detect --output` profile of a bench runner's machine (a path in "
    "the repository): march: host variants are built for it; runners without one skip them.",
)
@click.option(
    "--fail-above",
    default="5%",
    show_default=True,
    help="Regression threshold against the previous night.",
)
@click.option(
    "--check", is_flag=True, help="Exit 13 if the file differs from what would be written."
)
@debug_option
def github(
    matrix_path: Path | None,
    out: Path,
    install: str,
    build_runner: str,
    bench_runners: tuple[str, ...],
    bench_hosts: tuple[str, ...],
    fail_above: str,
    check: bool,
) -> None:
    """Write the nightly GitHub Actions workflow: plan, build per source variant, bench per
    runner, compare with a regression gate against the last passing night on the same machine
    class. Every job installs tfbuild from the repository it checks out."""
    from tfbuild import ci as generator
    from tfbuild.store import atomic_write_text

    _fraction(fail_above)
    matrix = _load_matrix(matrix_path)
    shown = str(matrix_path) if matrix_path is not None else "matrix.yaml"
    profiles = {}
    for item in bench_hosts:
        runner, _, path = item.partition("=")
        if not runner or not path:
            raise UsageError(f"--bench-host {item!r}: expected RUNNER=PROFILE.json")
        _load_host(Path(path))  # a readable profile, or a clear error now
        profiles[runner] = path
    settings = generator.Settings(
        matrix_file=shown,
        out=str(out),
        install=install,
        build_runner=build_runner,
        bench_runners=bench_runners or ("ubuntu-latest",),
        bench_hosts=profiles,
        fail_above=fail_above,
    )
    text = generator.render(matrix, settings)
    if check:
        if not generator.is_current(out, text):
            raise StaleOutput(
                f"{out} is not what `tfbuild ci github` generates from {shown} now; "
                f"regenerate it with `tfbuild ci github --out {out}`"
            )
        click.echo(f"{out} is current")
        return
    atomic_write_text(out, text)
    click.echo(f"wrote {out}")


@ci.command()
@click.argument(
    "results_files",
    nargs=-1,
    required=True,
    metavar="RESULTS...",
)
@click.option(
    "--into",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="The folder of reference results (one set per machine class).",
)
@debug_option
def keep(results_files: tuple[str, ...], into: Path) -> None:
    """Make these results the reference of their machine class in --into: earlier results of
    the same class there are removed, other classes' stay. RESULTS: files, folders or quoted
    patterns."""
    from tfbuild import ci as generator

    kept, removed = generator.keep(_results_paths(results_files, "RESULTS"), into)
    for path in kept:
        click.echo(f"kept {path}")
    for path in removed:
        click.echo(f"replaced {path}")


@cli.command("base-image")
@click.argument("tag", default="tfbuild/base:bookworm")
@debug_option
def base_image(tag: str) -> None:
    """Make the Debian base image for build and runtime containers without a registry
    (debootstrap + docker import; needs root and debootstrap)."""
    import subprocess

    from tfbuild.resources import data_path

    script = data_path("make-base-image")
    if os.geteuid() != 0:
        raise UsageError(f"making {tag} needs root (debootstrap): run `sudo tfbuild base-image`")
    click.echo(f"+ {script} {tag}", err=True)
    proc = subprocess.run(["bash", str(script), tag], check=False)
    if proc.returncode != 0:
        raise BuildFailed(f"making the base image {tag} failed (exit {proc.returncode})")


def _report(error: BaseException) -> None:
    stream = sys.stderr
    if _Flags.debug:
        traceback.print_exception(error, file=stream)
    message = str(error)
    if isinstance(error, MatrixError):
        # FILE:LINE:COL: lines, as compilers print them, so editors can jump to each one.
        print(message, file=stream)
        if len(error.problems) > 1:
            print(
                f"tfbuild: {len(error.problems)} problems in {error.problems[0].file}", file=stream
            )
    elif isinstance(error, TfbuildError):
        print(f"tfbuild: {message or type(error).__name__}", file=stream)
    else:
        print(
            f"tfbuild: internal error: {type(error).__name__}: {message}\n"
            "This is a bug in tfbuild; rerun with --debug for the traceback.",
            file=stream,
        )


def main(argv: list[str] | None = None) -> None:
    """Entry point: exit codes per error class, no traceback unless --debug."""
    try:
        code = cli.main(args=argv, prog_name="tfbuild", standalone_mode=False)
    except TfbuildError as error:
        _report(error)
        sys.exit(error.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        print(
            "tfbuild: interrupted; finished work is kept (bench: --resume RESULTS_FILE)",
            file=sys.stderr,
        )
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(UsageError.exit_code)
    except Exception as error:
        _report(error)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
