"""`tfbuild inspect` and `tfbuild verify`: what a wheel needs, and whether it runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tfbuild.cli.app import cli
from tfbuild.cli.options import (
    cache_option,
    debug_option,
    host_option,
    json_option,
    matrix_option,
    store_option,
)
from tfbuild.cli.planning import machine, read_matrix
from tfbuild.cli.values import console
from tfbuild.config.model import INHERIT_PIP, PipSettings
from tfbuild.errors import BadWheel, IncompatibleWheel, UsageError
from tfbuild.machine.profile import Gpu

if TYPE_CHECKING:
    from tfbuild.audit.model import AuditReport
    from tfbuild.audit.qemu import Emulated
    from tfbuild.audit.verdict import Target, WheelVerdict
    from tfbuild.progress import Reporter


@dataclass(frozen=True, kw_only=True)
class WheelArgument:
    """A wheel file, or a variant of the matrix whose wheel is in (or fetched into) the store;
    with its constraints and the package index settings to install it (a file: pip's own)."""

    wheel: Path
    constraints: tuple[str, ...]
    pip: PipSettings

    @classmethod
    def resolve(cls, target: str, matrix_path: Path | None, store_path: Path) -> WheelArgument:
        from tfbuild.fetch import fetch
        from tfbuild.store import Manifest, WheelStore
        from tfbuild.wheelfile import check_wheel

        path = Path(target)
        if target.endswith(".whl"):
            if not path.is_file():
                raise UsageError(f"{target}: no such wheel file")
            check_wheel(path)
            manifest = Manifest.of_wheel(path)
            constraints = manifest.constraints if manifest is not None else ()
            return cls(wheel=path, constraints=constraints, pip=INHERIT_PIP)
        matrix = read_matrix(matrix_path)
        if path.is_file() and target not in {n for v in matrix.variants for n in (v.name, v.id)}:
            raise BadWheel(
                f"{target}: not a wheel (a wheel file's name is NAME-VERSION-PYTHON-ABI-"
                "PLATFORM.whl) and no variant of the matrix; give a wheel file or a variant name"
            )
        variant = matrix.variant(target)
        artifact, _ = fetch(variant, WheelStore(store_path), matrix.defaults.pip)
        return cls(wheel=artifact.wheel, constraints=variant.constraints, pip=matrix.defaults.pip)


def _gpus(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[Gpu]:
    from tfbuild.audit.verdict import gpu_for_arch

    try:
        return [gpu_for_arch(v, i) for i, v in enumerate(values)]
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


@dataclass(frozen=True, kw_only=True)
class InspectSettings:
    target: str
    matrix: Path | None
    store: Path
    host: Path | None
    cpu_model: str | None
    gpus: tuple[Gpu, ...]
    as_json: bool
    refresh: bool
    cache_dir: Path

    def __post_init__(self) -> None:
        if self.host and self.cpu_model:
            raise UsageError("--host and --cpu both name the target; give one of them")


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
@json_option("the versioned audit report, as the audit cache holds it")
@click.option("--refresh", is_flag=True, help="Audit again instead of using the cached report.")
@cache_option
@debug_option
def inspect(
    target: str,
    matrix_path: Path | None,
    store_path: Path,
    host_path: Path | None,
    cpu_model: str | None,
    gpus: list[Gpu],
    as_json: bool,
    refresh: bool,
    cache_dir: Path,
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
    from tfbuild.audit.verdict import verdict

    settings = InspectSettings(
        target=target,
        matrix=matrix_path,
        store=store_path,
        host=host_path,
        cpu_model=cpu_model,
        gpus=tuple(gpus),
        as_json=as_json,
        refresh=refresh,
        cache_dir=cache_dir,
    )
    argument = WheelArgument.resolve(settings.target, settings.matrix, settings.store)
    report = _audited(argument, settings)
    goal = audit_target(settings)
    result = verdict(report, goal)
    _say_inspection(report, result, goal, settings.as_json)
    if result.runs is False:
        raise IncompatibleWheel(f"{argument.wheel.name}: {'; '.join(result.blockers)}")


@dataclass
class AuditProgress:
    """`inspect`'s progress, in MB of machine code: started at the first object audited, then
    a step each twentieth of the wheel (and the last)."""

    reporter: Reporter
    wheel: str
    started: bool = False
    shown: int = 0
    """Bytes of code audited at the last step said."""

    def __call__(self, done: int, total: int, name: str) -> None:
        if not self.started:
            self.reporter.start(max(1, total >> 20), f"auditing {self.wheel}, MB of code")
            self.started = True
        if (done - self.shown) * 20 >= total or done == total:
            self.reporter.advance(name.rsplit("/", 1)[-1], (done >> 20) - (self.shown >> 20))
            self.shown = done


def _audited(argument: WheelArgument, settings: InspectSettings) -> AuditReport:
    """The wheel's audit (cached unless --refresh), its progress on stderr."""
    from tfbuild.audit.inspect import inspect_wheel
    from tfbuild.progress import make_reporter

    reporter = make_reporter(False)
    with reporter:
        return inspect_wheel(
            argument.wheel,
            settings.cache_dir,
            settings.refresh,
            pip_settings=argument.pip,
            progress=AuditProgress(reporter, argument.wheel.name),
        )


def audit_target(settings: InspectSettings) -> Target:
    """What the verdict is for: the CPU named (--cpu), else this machine or the one a saved
    profile describes (--host); with the GPUs named (--gpu) instead of its own."""
    from tfbuild.audit.verdict import target_for_host, target_for_model, with_gpus

    goal = (
        target_for_model(settings.cpu_model)
        if settings.cpu_model
        else target_for_host(machine(settings.host))
    )
    return with_gpus(goal, settings.gpus) if settings.gpus else goal


def _say_inspection(report: AuditReport, result: WheelVerdict, goal: Target, as_json: bool) -> None:
    """The audit and its verdict: the versioned JSON report, or the tables."""
    from tfbuild.report.inspection import inspect_view

    if as_json:
        shown = {**report.to_json(cached=True), "verdict": result.to_json(goal.label)}
        click.echo(json.dumps(shown, indent=2))
    else:
        console().print(inspect_view(report, result, goal))


@dataclass(frozen=True, kw_only=True)
class VerifySettings:
    target: str
    models: tuple[str, ...]
    constraints: tuple[str, ...]
    timeout: float
    matrix: Path | None
    store: Path
    cache_dir: Path
    as_json: bool


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
@json_option("each target's result")
@debug_option
def verify(
    target: str,
    models: tuple[str, ...],
    constraints: tuple[str, ...],
    timeout: float,
    matrix_path: Path | None,
    store_path: Path,
    cache_dir: Path,
    as_json: bool,
) -> None:
    """Run a wheel on emulated CPUs (qemu-user): the ground truth for `tfbuild inspect`.

    The wheel is installed into a cached venv; then, under `qemu-x86_64 -cpu MODEL`, it is
    imported and runs a small op (for TensorFlow a matmul and a one-step GRU). A model that
    lacks an instruction the wheel executes dies with SIGILL, as real hardware would.
    Exits 6 when the wheel fails on any model.
    """
    from tfbuild.audit import qemu
    from tfbuild.runtime.base import local_env
    from tfbuild.wheelfile import top_level

    settings = VerifySettings(
        target=target,
        models=models,
        constraints=constraints,
        timeout=timeout,
        matrix=matrix_path,
        store=store_path,
        cache_dir=cache_dir,
        as_json=as_json,
    )
    qemu.binary()
    for model in settings.models:
        qemu.check_model(model)
    argument = WheelArgument.resolve(settings.target, settings.matrix, settings.store)
    python = _installed(argument, settings)
    snippet = check_snippet(top_level(argument.wheel))
    outcomes = [
        qemu.run(m, python, snippet, local_env({}), settings.timeout) for m in settings.models
    ]
    _say_emulated(argument.wheel, outcomes, settings.as_json)
    if failed := [o.model for o in outcomes if not o.passed]:
        raise IncompatibleWheel(f"{argument.wheel.name} fails on {', '.join(failed)}")


def _installed(argument: WheelArgument, settings: VerifySettings) -> Path:
    """The interpreter of a cached venv the wheel is installed into, with its constraints and
    those of --constraint."""
    from tfbuild.files import sha256_of
    from tfbuild.runtime.venv import LocalVenv
    from tfbuild.store import Artifact

    wheel = argument.wheel
    constraints = (*argument.constraints, *settings.constraints)
    artifact = Artifact(wheel.name, wheel, sha256_of(wheel), constraints, None)
    venv = LocalVenv(artifact, settings.cache_dir, argument.pip)
    venv.prepare()
    return venv.interpreter


def check_snippet(packages: Sequence[str]) -> str:
    """What the emulated run executes: for TensorFlow a matmul and a one-step GRU, else an
    import of each of the wheel's top-level packages."""
    from tfbuild.audit import qemu

    return qemu.TF_SNIPPET if "tensorflow" in packages else qemu.import_snippet(packages)


def _say_emulated(wheel: Path, outcomes: Sequence[Emulated], as_json: bool) -> None:
    """Each emulated run's outcome: as JSON, or a line a model (with the tail of stderr of a
    run that failed)."""
    if as_json:
        click.echo(
            json.dumps({"wheel": wheel.name, "results": [asdict(o) for o in outcomes]}, indent=2)
        )
    else:
        for o in outcomes:
            click.echo(f"{o.model}: {o.message} ({o.seconds:.1f} s)")
            if not o.passed and o.stderr_tail:
                click.echo("  " + o.stderr_tail.replace("\n", "\n  "))
