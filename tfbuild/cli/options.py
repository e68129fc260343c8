"""The options the commands share, as click decorators (and the process-wide switches some of
them set when parsed); what their values mean is tfbuild.cli.values."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from tfbuild.cli.values import printable_path
from tfbuild.config.settings import (
    BAZEL_CACHE_ENV,
    CACHE_ENV,
    PROCESSES_ENV,
    RESULTS_DEFAULT,
    RESULTS_ENV,
    STORE_DEFAULT,
    STORE_ENV,
    TF_SOURCE_ENV,
    Cascade,
    Setting,
    user_cache,
)
from tfbuild.engine import KEEP_ENV
from tfbuild.results.model import DEFAULT_PROCESSES, PROCESS_PATHS
from tfbuild.runtime.forked import CHILDREN

F = TypeVar("F", bound=Callable[..., Any])


class Flags:
    """Process-wide switches set while options are parsed, read when an error is reported."""

    debug = bool(os.environ.get("TFBUILD_DEBUG"))


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    Flags.debug = Flags.debug or value


class Layered(click.Option):
    """An option a variable of the environment may set too (`variable`; `fallback` computes
    the default from the environment when the option has none). Click reads the command line
    and the default only: the variable is read by the command's Cascade, which resolves the
    value and records where it came from in one step."""

    def __init__(
        self,
        *args: Any,
        variable: str,
        fallback: Callable[[Mapping[str, str]], object] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs["help"] = f"{kwargs.get('help', '')} Also set by {variable}.".lstrip()
        super().__init__(*args, **kwargs)
        self.variable = variable
        self.fallback = fallback


CASCADE = "tfbuild.cascade"
"""Where a command's Cascade is kept, in its click context's meta."""


def flag_of(param: click.Parameter) -> str:
    """How a person names a parameter: an option's long flag, an argument's metavar."""
    if isinstance(param, click.Option):
        return max(param.opts, key=len)
    return param.human_readable_name


def resolve_options(ctx: click.Context, environment: Mapping[str, str] | None = None) -> Cascade:
    """A command's options resolved through its Cascade (the command line, else an option's
    variable, else its default), each put back in the context as resolved; with --debug, each
    said on stderr with where it came from."""
    from click.core import ParameterSource

    environment = os.environ if environment is None else environment
    resolved = Cascade(environment, said=say_setting if Flags.debug else None)
    for param in ctx.command.params:
        name = param.name
        if not param.expose_value or name is None or name not in ctx.params:
            continue
        given = ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
        ctx.params[name] = _resolved(resolved, ctx, param, ctx.params[name], given, environment)
    ctx.meta[CASCADE] = resolved
    return resolved


def _resolved(
    resolved: Cascade,
    ctx: click.Context,
    param: click.Parameter,
    value: object,
    given: bool,
    environment: Mapping[str, str],
) -> object:
    flag = flag_of(param)
    option = (flag, value) if given else None
    if not isinstance(param, Layered):
        return resolved.take(flag, value, option=option)
    default = value
    if default is None and param.fallback is not None:
        default = param.fallback(environment)

    def read(text: str) -> object:
        try:
            return param.process_value(ctx, text)
        except click.BadParameter as exc:
            said = f"{exc.message} (set by {param.variable})"
            raise click.BadParameter(said, ctx, param) from exc

    return resolved.take(flag, default, variable=param.variable, read=read, option=option)


def command_cascade() -> Cascade:
    """The running command's Cascade, where settings it resolves later (its matrix's) go; a
    new one, with no command line, outside a command."""
    ctx = click.get_current_context(silent=True)
    found = ctx.meta.get(CASCADE) if ctx is not None else None
    if isinstance(found, Cascade):
        return found
    return Cascade(os.environ, said=say_setting if Flags.debug else None)


def say_setting(setting: Setting) -> None:
    """One setting and where it came from, on stderr (--debug)."""
    click.echo(f"tfbuild: debug: {setting.name} = {setting.value}  [{setting.source}]", err=True)


R = TypeVar("R")


def options_record(record: type[R], params: Mapping[str, Any]) -> R:
    """A command's resolved options as the frozen record `record`, whose fields are named as
    the options are: an option the record has no field for is a TypeError (the record and the
    command's options disagree), a field the command has no option for keeps its default."""
    made: Callable[..., R] = record
    return made(**params)


class Command(click.Command):
    """A tfbuild command: its options are resolved by a Cascade before it runs (with --debug,
    each said on stderr with where it came from, and the matrix's settings after them when it
    reads one); --color, as on the group, after the command's name too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.append(click.Option(["--color"], **_COLOR))

    def invoke(self, ctx: click.Context) -> Any:
        resolve_options(ctx)
        return super().invoke(ctx)


class Group(click.Group):
    """tfbuild's command group: its commands, and those of its sub-groups (which are Groups
    too), are Commands."""

    command_class = Command
    group_class = type


def _switch(name: str, callback: Callable[..., None], help: str) -> Callable[[F], F]:
    """A flag that acts when parsed (on the group or any command) and is not passed on."""
    return click.option(name, is_flag=True, expose_value=False, is_eager=True,
                        callback=callback, help=help)  # fmt: skip


def debug_option(f: F) -> F:
    return _switch(
        "--debug",
        _set_debug,
        "Say each setting and where it came from (default, matrix, environment, option); show "
        "the full traceback when something fails.",
    )(f)


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


def _set_color(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """never: NO_COLOR (no-color.org); always: FORCE_COLOR, colour even into a pipe; auto:
    colour on a terminal unless NO_COLOR is set. Set in the environment, so every console of
    this process (reports on stdout, progress on stderr) and the tfbuild processes it starts
    follow it."""
    if value == "never":
        os.environ["NO_COLOR"] = "1"
        os.environ.pop("FORCE_COLOR", None)
    elif value == "always":
        os.environ["FORCE_COLOR"] = "1"
        os.environ.pop("NO_COLOR", None)


_COLOR: dict[str, Any] = {
    "type": click.Choice(["auto", "always", "never"]),
    "default": None,
    "expose_value": False,
    "is_eager": True,
    "callback": _set_color,
    "help": "Colour: auto (on a terminal, unless NO_COLOR is set; the default), always (into "
    "a pipe too, for `less -R`), never.",
}


def color_option(f: F) -> F:
    """--color on the group (`tfbuild --color never COMMAND`); every Command takes it too."""
    return click.option("--color", **_COLOR)(f)


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
        help="Plan for the machine described by this saved `tfbuild detect --format json` output.",
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
        help="Leave out configs matching VARIANT[:TUNING[:FORM]] (fnmatch; repeatable).",
    )(f)
    return click.option(
        "--only",
        multiple=True,
        metavar="PATTERN",
        help="Keep only configs matching VARIANT[:TUNING[:FORM]] (fnmatch; repeatable; without a "
        "FORM part, every model form).",
    )(f)


def store_option(f: F) -> F:
    return click.option(
        "--store",
        "store_path",
        cls=Layered,
        variable=STORE_ENV,
        type=click.Path(path_type=Path, file_okay=False),
        default=STORE_DEFAULT,
        show_default=True,
        help="Wheel store: one folder per variant id with the wheel and its manifest.",
    )(f)


def cache_option(f: F) -> F:
    return click.option(
        "--cache-dir",
        cls=Layered,
        variable=CACHE_ENV,
        fallback=lambda environment: Path(user_cache(environment)),
        type=click.Path(path_type=Path, file_okay=False),
        help="Cache for runtimes and audits (default: ~/.cache/tfbuild, or under XDG_CACHE_HOME).",
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
PROCESSES_OPTION = click.option(
    "--processes",
    cls=Layered,
    variable=PROCESSES_ENV,
    type=click.Choice(PROCESS_PATHS),
    default=DEFAULT_PROCESSES,
    show_default=True,
    help="How each benchmark process starts. forked: from a zygote of its config, a process "
    f"that has imported TensorFlow (each serves {CHILDREN}), half the seconds a process; "
    "fresh: a new interpreter each, as independent as processes get (docs/reference.md). "
    "Sessions of the two are never ranked together.",
)
QUIET_OPTION = click.option("-q", "--quiet", is_flag=True, help="No progress output.")
TF_SOURCE_OPTION = click.option(
    "--tf-source",
    cls=Layered,
    variable=TF_SOURCE_ENV,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    callback=lambda _ctx, _param, value: printable_path(value),
    help="Build this local TensorFlow tree (copied in) instead of cloning the tag.",
)
BAZEL_CACHE_OPTION = click.option(
    "--bazel-cache",
    cls=Layered,
    variable=BAZEL_CACHE_ENV,
    metavar="VOLUME_OR_PATH",
    help="Override defaults.bazel.cache: a Docker volume name or an absolute path.",
)
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


def _as_json(ctx: click.Context, param: click.Parameter, value: object) -> None:
    """--format json or --json: the command's `as_json` (either one given asks for JSON)."""
    ctx.params["as_json"] = bool(ctx.params.get("as_json")) or value in (True, "json")


def json_option(document: str) -> Callable[[F], F]:
    """--format table|json for a command that prints a table or `document` (its `as_json`
    parameter); --json, the old spelling, is kept for scripts that use it, and not shown."""

    def add(f: F) -> F:
        spelled = click.option(
            "--json", is_flag=True, expose_value=False, hidden=True, callback=_as_json
        )
        chosen = click.option(
            "--format",
            "fmt",
            type=click.Choice(["table", "json"]),
            default="table",
            show_default=True,
            expose_value=False,
            callback=_as_json,
            help=f"table: for a person; json: {document}.",
        )
        return chosen(spelled(f))

    return add


def results_option(help_text: str) -> Callable[[F], F]:
    return click.option(
        "--results",
        "results_dir",
        cls=Layered,
        variable=RESULTS_ENV,
        type=click.Path(path_type=Path, file_okay=False),
        default=RESULTS_DEFAULT,
        show_default=True,
        help=help_text,
    )


WEIGHT_HELP = (
    "Weigh a benchmark W times in the overall level the answer and the ranking are on (the "
    "others weigh 1; 0 leaves one out): the benchmarks that resemble your model. Repeatable."
)


def variable_settings(environment: Mapping[str, str]) -> list[Setting]:
    """Every option a variable may set (those of the commands that fetch, build and measure),
    as the environment leaves it: resolved as a command resolves it, with no command line; a
    value the option would refuse is named with why."""
    command = click.Command("tfbuild")
    options = (store_option, cache_option, results_option("Results."), PROCESSES_OPTION,
               TF_SOURCE_OPTION, BAZEL_CACHE_OPTION)  # fmt: skip
    for option in options:
        option(command)
    ctx = command.make_context("tfbuild", [])
    resolved = Cascade(environment)
    for param in command.params:
        assert isinstance(param, Layered) and param.name is not None
        try:
            _resolved(resolved, ctx, param, ctx.params[param.name], False, environment)
        except click.BadParameter as exc:
            why = exc.message.removesuffix(f" (set by {param.variable})")
            refused = f"{param.variable}, refused: {why}"
            resolved.record(Setting(flag_of(param), environment[param.variable], "environment",
                                    refused))  # fmt: skip
    return resolved.settings


SUITE_OPTIONS = (
    click.option(
        "--quick",
        is_flag=True,
        help="The suite's quick preset: a small budget and a coarse target (10 min, a minute "
        "per config beyond ten; ±10 %).",
    ),
    click.option(
        "--budget",
        metavar="DURATION",
        help="Time for benchmarking (installs not counted): stop starting rounds when the "
        "next would end after it. In all (30m, 1h30m, 900s) or per config run, the A/A "
        "control included ('2m30s per config, at least 20m', the default).",
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
    click.option(
        "--weight",
        "weights",
        multiple=True,
        metavar="BENCHMARK=W",
        help=WEIGHT_HELP + " The session stops on the weighted answer and records the "
        "weights; compare and replay use them.",
    ),
)
"""How big a session is, and when it stops (bench, run)."""


def session_options(f: F) -> F:
    """Options shared by `bench` and `run`: suite size, order, pinning, runtime, outputs."""
    decorators = [
        *SUITE_OPTIONS,
        SEED_OPTION,
        TENSORFLOW_OPTION,
        HOST_KEY_OPTION,
        click.option("--cpus", help="Pin every benchmark process to these CPUs, e.g. 0 or 0,1."),
        RUNTIME_OPTION,
        PROCESSES_OPTION,
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


MODEL_INPUT_OPTIONS = (
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
        "--inputs",
        type=click.Path(path_type=Path, dir_okay=False),
        metavar="FILE.npz",
        help="The model's inputs, one array per input by name (default: generated from its "
        "signature with a fixed seed).",
    ),
)
"""What to call in a --workload model and what to feed it (bench, run, export)."""
FORM_CHECK_OPTIONS = (
    click.option(
        "--atol",
        type=click.FloatRange(min=0),
        metavar="FLOAT",
        help="How far a model form's output element may be from the as-given one: within "
        "ATOL + RTOL x |as-given| (default 1e-4). Loosen it to let litert-int8 through: its "
        "errors are reported beside its speed.",
    ),
    click.option(
        "--rtol",
        type=click.FloatRange(min=0),
        metavar="FLOAT",
        help="The relative part of that allowance (default 1e-3; see --atol).",
    ),
)
"""How closely a model form must give the as-given outputs (bench, run, export)."""
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
        "--forms",
        metavar="FORM,...",
        help="Model forms of a SavedModel --workload to measure besides as-given: optimized "
        "(frozen, graph-optimized ahead of time), litert (LiteRT's interpreter) and "
        "litert-int8 (the same quantized to int8, the workload's inputs calibrating it); each "
        "is checked to give the as-given outputs first, within --atol and --rtol (default: "
        "the matrix's `forms:`).",
    ),
    *MODEL_INPUT_OPTIONS,
    *FORM_CHECK_OPTIONS,
    click.option(
        "--calls",
        type=click.IntRange(1, 100_000),
        help="Calls in one timed sample of --workload (three a process; four times as many "
        "timed one by one for latency; default 50).",
    ),
)
