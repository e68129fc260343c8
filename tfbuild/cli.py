"""The tfbuild command line. Thin: parse options, call one stage, print its result."""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from tfbuild import __version__
from tfbuild.errors import MatrixError, TfbuildError, UsageError

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


def _console() -> Console:
    # Piped output keeps wide tables readable unless COLUMNS says otherwise.
    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(highlight=False, soft_wrap=False, width=120 if wide else None)


def _load_matrix(path: Path | None) -> Any:
    from tfbuild.matrix import load_matrix
    from tfbuild.resources import default_matrix_path

    if path is None:
        local = Path("matrix.yaml")
        path = local if local.is_file() else default_matrix_path()
    return load_matrix(path)


def _load_host(path: Path | None) -> Any:
    from tfbuild import host

    return host.load_profile(path) if path is not None else host.detect()


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="tfbuild")
@debug_option
def cli() -> None:
    """Find which TensorFlow build, with which runtime settings, is fastest on this hardware.

    \b
    tfbuild detect     what this machine is: CPU flags, level, -march, cores, GPUs, Docker
    tfbuild matrix     the variants x tunings of matrix.yaml, and which can run here
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
    from tfbuild.report import host_view
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
        from tfbuild.plan import make_plan

        plan = make_plan(_load_matrix(matrix_path), profile)
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
@debug_option
def matrix_cmd(
    matrix_path: Path | None,
    host_path: Path | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    as_json: bool,
) -> None:
    """List the variants x tunings of the matrix, resolved for this (or a saved) host.

    Shows each variant's source, TensorFlow and Python versions, compiler flags and bazel
    configs, and whether the host can run it (and why not); then the tunings with their
    thread counts and environment resolved for the host.
    """
    from tfbuild.plan import make_plan
    from tfbuild.report import plan_view

    matrix = _load_matrix(matrix_path)
    profile = _load_host(host_path)
    plan = make_plan(matrix, profile, only, skip)
    if as_json:
        click.echo(json.dumps(plan.to_json(), indent=2))
    else:
        _console().print(plan_view(plan))


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
    except click.exceptions.Abort:
        print("tfbuild: interrupted", file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:
        print("tfbuild: interrupted", file=sys.stderr)
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(UsageError.exit_code)
    except Exception as error:
        _report(error)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
