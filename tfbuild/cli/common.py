"""What the commands share: their options, the console, and the parsing of option values into
the typed values a command's settings hold (a user mistake is a UsageError naming the option,
the value and what is accepted)."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console

from tfbuild.config.model import Suite, SuiteSettings
from tfbuild.engine import KEEP_ENV
from tfbuild.errors import UsageError

if TYPE_CHECKING:
    from tfbuild.bench.workload import WorkloadRequest

F = TypeVar("F", bound=Callable[..., Any])


class Flags:
    """Process-wide switches set while options are parsed, read when an error is reported."""

    debug = bool(os.environ.get("TFBUILD_DEBUG"))


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    Flags.debug = Flags.debug or value


def _switch(name: str, callback: Callable[..., None], help: str) -> Callable[[F], F]:
    """A flag that acts when parsed (on the group or any command) and is not passed on."""
    return click.option(name, is_flag=True, expose_value=False, is_eager=True,
                        callback=callback, help=help)  # fmt: skip


def debug_option(f: F) -> F:
    return _switch("--debug", _set_debug, "Show the full traceback when something fails.")(f)


def _set_keep(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        os.environ[KEEP_ENV] = "1"  # also for the tfbuild processes this one starts


def keep_containers_option(f: F) -> F:
    return _switch(
        "--keep-containers",
        _set_keep,
        f"Leave every container tfbuild starts (stopped, named tfbuild-ROLE-...) for "
        f"`docker logs` and `docker cp` instead of removing it; the same as {KEEP_ENV}=1.",
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
        "--with",
        "opt_in",
        multiple=True,
        metavar="SET",
        help="Add the variants of this opt-in set of the matrix (its opt_in section: newer "
        "releases, nightlies, older builds; repeatable).",
    )(f)
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
    "(replaces defaults.tensorflow; a new release); one asking for a --config it dropped "
    "keeps defaults.tensorflow, said in a note.",
)
HOST_KEY_OPTION = click.option(
    "--host-key",
    metavar="NAME",
    help="Record these results as coming from the machine class NAME (default: the CPU model "
    "and instruction sets, usable CPUs, memory class and GPUs; hostnames are never used).",
)


def format_option(formats: dict[str, str]) -> Callable[[F], F]:
    """--format FMT, the first of `formats` by default; the help says what each is for."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(formats)),
        default=next(iter(formats)),
        show_default=True,
        help="; ".join(f"{name}: {use}" for name, use in formats.items()) + ".",
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
            help="The indifference margin (5%): a config within it of the fastest counts as the "
            "fastest; the session stops once the answer is known at it.",
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
        *WORKLOAD_OPTIONS,
    ]
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


WORKLOAD_OPTIONS = (
    click.option(
        "--workload",
        type=click.Path(path_type=Path, exists=False),
        metavar="PATH",
        help="Benchmark your own model instead of the fixed suite: a SavedModel directory, a "
        ".keras/.h5 file, or a .py script defining step(state) (throughput and p50/p90/p99 "
        "latency).",
    ),
    click.option("--with-suite", is_flag=True, help="Run the fixed suite as well as --workload."),
    click.option(
        "--signature",
        metavar="NAME",
        help="The SavedModel signature to call (default: serving_default).",
    ),
    click.option(
        "--batch",
        type=click.IntRange(1, 1_000_000),
        help="Batch size for the model's unknown batch dimension (default: 1).",
    ),
    click.option(
        "--shape",
        "shapes",
        multiple=True,
        metavar="NAME=D1,D2",
        help="Every dimension of one input whose shape the model leaves open (repeatable).",
    ),
    click.option(
        "--calls",
        type=click.IntRange(1, 100_000),
        help="Calls in one timed sample of --workload (three a process; four times as many "
        "timed one by one for latency; default 50).",
    ),
    click.option(
        "--inputs",
        type=click.Path(path_type=Path, dir_okay=False),
        metavar="FILE.npz",
        help="The model's inputs, one array per input by name (default: generated from its "
        "signature with a fixed seed).",
    ),
)


def workload_request(params: Mapping[str, Any]) -> WorkloadRequest | None:
    """--workload and the options that go with it; UsageError for those given without it."""
    from tfbuild.bench.workload import FLAGS, WorkloadRequest

    path = params.get("workload")
    if path is None:
        flags = {"with_suite": "--with-suite", **FLAGS}
        given = [flag for name, flag in flags.items() if params.get(name)]
        if given:
            raise UsageError(f"{', '.join(given)}: only with --workload PATH")
        return None
    return WorkloadRequest(
        path=path,
        signature=params.get("signature"),
        batch=params.get("batch"),
        shapes=tuple(params.get("shapes") or ()),
        inputs=params.get("inputs"),
        calls=params.get("calls"),
    )


def console() -> Console:
    """The console reports print to: piped output keeps wide tables readable unless COLUMNS
    says otherwise."""
    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(highlight=False, soft_wrap=False, width=120 if wide else None)


def cache_folder(given: Path | None) -> Path:
    """--cache-dir, or the user's cache folder."""
    if given is not None:
        return given
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tfbuild"


def printable_path(value: Path | None) -> Path | None:
    """A path without control characters (a newline in a folder name would end the line it is
    written on in a Dockerfile or a log)."""
    if value is not None and not str(value).isprintable():
        raise click.BadParameter(f"{str(value)!r} holds control characters; rename the folder")
    return value


def parse_cpus(value: str | None) -> tuple[int, ...] | None:
    """--cpus as CPU numbers, checked against this process's affinity when the benchmarks run
    here (an engine's machine is checked against its probe when the session plans)."""
    from tfbuild.machine.linux import parse_cpulist
    from tfbuild.machine.remote import is_local_socket

    if value is None:
        return None
    try:
        cpus = tuple(parse_cpulist(value))
    except ValueError as exc:
        raise UsageError(f"--cpus {value!r}: expected a CPU list like 0 or 0,1 or 0-3") from exc
    if not cpus:
        raise UsageError(f"--cpus {value!r}: expected a CPU list like 0 or 0,1 or 0-3")
    if not is_local_socket(os.environ.get("DOCKER_HOST") or "unix://"):
        return cpus
    allowed = os.sched_getaffinity(0)
    if not set(cpus) <= allowed:
        raise UsageError(f"--cpus {value!r}: this process may use CPUs {sorted(allowed)} only")
    return cpus


def parse_fraction(option: str, value: str) -> float:
    """A threshold given as 5% or 0.05, strictly between 0 and 1."""
    text = value.strip()
    try:
        number = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError as exc:
        raise UsageError(f"{option} {value!r}: expected a percentage like 5% or 0.05") from exc
    if not 0 < number < 1:
        raise UsageError(f"{option} {value!r}: expected a value between 0% and 100%")
    return number


def parse_host_key(value: str | None) -> str | None:
    if value is not None and not (0 < len(value.strip()) <= 100 and value.isprintable()):
        raise UsageError(f"--host-key {value!r}: expected a name of 1 to 100 printable characters")
    return value


def _results_in(folder: Path) -> list[Path]:
    """The results files in a folder; another tfbuild file there (a calibration, which
    `tfbuild calibrate` writes into the results folder) is passed over, with a note."""
    from tfbuild.results.documents import schema_of

    found = []
    for path in sorted([*folder.glob("*.json"), *folder.glob("*.json.gz")]):
        schema = schema_of(path) or ""
        if schema.startswith("tfbuild.") and not schema.startswith("tfbuild.results/"):
            click.echo(
                f"tfbuild: passing over {path}: not a session's results ({schema})", err=True
            )
        else:
            found.append(path)
    return found


def results_paths(specs: Sequence[str], option: str = "--against") -> tuple[Path, ...]:
    """Results files named by files, folders (their *.json and *.json.gz) or glob patterns."""
    paths: list[Path] = []
    for spec in specs:
        path = Path(spec)
        if path.is_dir():
            found = _results_in(path)
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
    return tuple(paths)


@dataclass(frozen=True, kw_only=True)
class Selection:
    """--with, --only and --skip: the configs a command works on."""

    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    opt_in: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SuiteRequest:
    """The suite settings a command line asks for on top of the matrix's preset."""

    preset: str | None = None
    budget_s: float | None = None
    resolve: float | None = None
    min_rounds: int | None = None
    rounds: int | None = None

    @classmethod
    def parse(
        cls,
        *,
        quick: bool = False,
        preset: str | None = None,
        budget: str | None = None,
        resolve: str | None = None,
        min_rounds: int | None = None,
        rounds: int | None = None,
    ) -> SuiteRequest:
        from tfbuild.config.values import parse_duration, parse_percent

        if quick and preset:
            raise UsageError("--quick is the preset named quick; give --quick or --preset")
        budget_s = fraction = None
        if budget is not None and (budget_s := parse_duration(budget)) is None:
            raise UsageError(f"--budget {budget!r}: expected a duration like 15m, 1h30m or 900s")
        if resolve is not None and (fraction := parse_percent(resolve)) is None:
            raise UsageError(f"--resolve {resolve!r}: expected a percentage like 5%")
        if rounds is not None and (budget, resolve, min_rounds) != (None, None, None):
            raise UsageError(
                "--rounds asks for a fixed design; --budget, --resolve and --min-rounds are "
                "for the sequential one: give one or the other"
            )
        return cls(
            preset="quick" if quick else preset,
            budget_s=budget_s,
            resolve=fraction,
            min_rounds=min_rounds,
            rounds=rounds,
        )

    def settings(self, suite: Suite) -> SuiteSettings:
        """The preset's settings with this request on top."""
        chosen = suite.preset(self.preset)
        changes: dict[str, Any] = {}
        if self.budget_s is not None:
            changes["budget_s"] = self.budget_s
        if self.resolve is not None:
            changes["resolve"] = self.resolve
        if self.min_rounds is not None:
            changes["min_rounds"] = self.min_rounds
            changes["max_rounds"] = max(chosen.max_rounds, self.min_rounds)
        if self.rounds is not None:
            changes["rounds"] = self.rounds
        elif changes:
            changes["rounds"] = None
        return dataclasses.replace(chosen, **changes)
