"""`tfbuild detect` and `tfbuild matrix`: the machine, and the matrix planned for it."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tfbuild.cli.app import cli
from tfbuild.cli.options import (
    command_cascade,
    debug_option,
    host_option,
    json_option,
    matrix_option,
    selection_options,
    variable_settings,
)
from tfbuild.cli.planning import machine, plan_here, read_matrix
from tfbuild.cli.values import Selection, console
from tfbuild.config.model import Matrix
from tfbuild.config.settings import Cascade, Setting
from tfbuild.errors import UsageError

if TYPE_CHECKING:
    from tfbuild.machine.profile import HostProfile
    from tfbuild.plan.make import Plan


@dataclass(frozen=True, kw_only=True)
class DetectSettings:
    as_json: bool
    cpuinfo: Path | None
    host: Path | None
    output: Path | None
    schema: bool
    matrix: Path | None

    def __post_init__(self) -> None:
        if self.cpuinfo and self.host:
            raise UsageError("--cpuinfo and --host both describe the machine; give one of them")


@cli.command()
@json_option("the versioned host profile (`--host FILE` reads it back)")
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
    from tfbuild.files import atomic_write_json
    from tfbuild.report.terminal import host_view
    from tfbuild.resources import data_path

    settings = DetectSettings(
        as_json=as_json,
        cpuinfo=cpuinfo_path,
        host=host_path,
        output=output,
        schema=schema,
        matrix=matrix_path,
    )
    if settings.schema:
        click.echo(data_path("schemas/host.schema.json").read_text(encoding="utf-8"), nl=False)
        return
    profile = described_machine(settings)
    document = profile.to_json()
    if settings.output is not None:
        atomic_write_json(settings.output, document)
    if settings.as_json:
        click.echo(json.dumps(document, indent=2))
        return
    out = console()
    out.print(host_view(profile))
    if settings.matrix is not None:
        plan = plan_here(read_matrix(settings.matrix), profile)
        out.print(runnable_here(settings.matrix, plan))


def described_machine(settings: DetectSettings) -> HostProfile:
    """The machine `detect` describes: the one a saved /proc/cpuinfo comes from (--cpuinfo),
    the one a saved profile describes (--host), or this one."""
    from tfbuild.machine.detect import profile_from_cpuinfo

    if settings.cpuinfo is not None:
        return profile_from_cpuinfo(settings.cpuinfo)
    return machine(settings.host)


def runnable_here(matrix_path: Path, plan: Plan) -> str:
    """`detect --matrix`: how many of the matrix's variants can run on the machine, which."""
    runnable = [pv.variant.name for pv in plan.variants if pv.verdict.runs]
    return (
        f"\n{matrix_path}: {len(runnable)} of {len(plan.variants)} variants can run "
        f"here ({', '.join(runnable) or 'none'}); `tfbuild matrix` says why the others "
        "cannot"
    )


@dataclass(frozen=True, kw_only=True)
class MatrixSettings:
    matrix: Path | None
    host: Path | None
    selection: Selection
    as_json: bool
    latest: bool
    explain: bool


@cli.command("matrix")
@matrix_option
@host_option
@selection_options
@json_option("the plan, with the CI fan-out")
@click.option(
    "--latest",
    is_flag=True,
    help="Ask the package index for the newest TensorFlow release and what unpinned "
    "requirements resolve to today.",
)
@click.option(
    "--explain",
    is_flag=True,
    help="First say where each setting comes from: built in, the matrix (with its line), the "
    "environment or an option (default < matrix < environment < option).",
)
@debug_option
def matrix_cmd(
    matrix_path: Path | None,
    host_path: Path | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    opt_in: tuple[str, ...],
    as_json: bool,
    latest: bool,
    explain: bool,
) -> None:
    """List the variants x tunings of the matrix, resolved for this (or a saved) host.

    Shows each variant's source, TensorFlow and Python versions, compiler flags and bazel
    configs, and whether the host can run it (and why not); then the tunings with their
    thread counts and environment resolved for the host. --format json adds the CI fan-out.
    --explain first lists every setting with where it comes from.
    """
    from tfbuild.report.terminal import plan_view, settings_lines

    settings = MatrixSettings(
        matrix=matrix_path,
        host=host_path,
        selection=Selection(only=only, skip=skip, opt_in=opt_in),
        as_json=as_json,
        latest=latest,
        explain=explain,
    )
    matrix = read_matrix(settings.matrix)
    plan = plan_here(matrix, machine(settings.host), settings.selection)
    document = plan.to_json()
    if settings.latest:
        document["latest"] = _latest(matrix)
    explained = _explained(settings, command_cascade()) if settings.explain else []
    if settings.as_json:
        if explained:
            document["settings"] = [dataclasses.asdict(s) for s in explained]
        click.echo(json.dumps(document, indent=2))
        return
    if explained:
        click.echo("\n".join(settings_lines(explained)) + "\n")
    console().print(plan_view(plan))
    if settings.latest:
        info = document["latest"]
        click.echo(
            f"\nnewest TensorFlow on the index: {info['tensorflow']} ({info['project']}); "
            f"source builds use {info['defaults']}"
            + ("; a newer release is out" if info["newer_than_defaults"] else "")
        )
        for name, version in info["resolved"].items():
            click.echo(f"{name}: the unpinned requirement resolves to {version} today")


def _explained(settings: MatrixSettings, resolved: Cascade) -> list[Setting]:
    """Every setting `tfbuild matrix` and the commands after it use, with its source: the
    matrix and its defaults as this command resolved them, and the options of the commands
    that fetch, build and measure that a variable may set, as the environment leaves them."""
    host = (
        Setting("machine", str(settings.host), "option", "--host")
        if settings.host is not None
        else Setting("machine", "this machine", "default", "detected")
    )
    read = [s for s in resolved.settings if s.name == "matrix" or s.name.startswith("defaults.")]
    return [*read[:1], host, *read[1:], *variable_settings(os.environ)]


def _latest(matrix: Matrix) -> dict[str, Any]:
    """The newest TensorFlow on the index, and what unpinned pypi variants resolve to."""
    from packaging.version import Version

    from tfbuild import pip
    from tfbuild.config.tensorflow import has_recipe

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
