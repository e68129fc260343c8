"""The matrix, the machine and the one plan a command works from.

A command reads its matrix once, chooses the machine first (this one, a saved profile, or the
machine a remote Docker engine runs on, probed in a container), then makes one plan for it;
every stage after that works from that plan.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import click

from tfbuild import engine
from tfbuild.cli.options import command_cascade
from tfbuild.cli.values import Selection
from tfbuild.config.load import load_matrix
from tfbuild.config.model import Matrix
from tfbuild.config.settings import Setting, matrix_settings
from tfbuild.config.tensorflow import tf_release
from tfbuild.config.values import AS_GIVEN
from tfbuild.engine import DockerInfo
from tfbuild.errors import (
    EngineUnavailable,
    InstallError,
    NotBuiltError,
    SelectionError,
    UsageError,
)
from tfbuild.machine.detect import detect
from tfbuild.machine.profile import HostProfile, load_profile
from tfbuild.machine.remote import engine_machine
from tfbuild.plan.make import Plan, PlannedVariant, make_plan
from tfbuild.plan.runtimes import ImageProbe, Runtimes, runtime_kind, runtimes_for
from tfbuild.plan.select import select
from tfbuild.resources import default_matrix_path
from tfbuild.results.model import Workload
from tfbuild.store import WheelStore


def matrix_file(path: Path | None) -> Path:
    """--matrix, else ./matrix.yaml when there is one, else the packaged default."""
    if path is not None:
        return path
    local = Path("matrix.yaml")
    return local if local.is_file() else default_matrix_path()


def matrix_setting(path: Path | None) -> Setting:
    """Which matrix a command reads, and why that one."""
    chosen = matrix_file(path)
    if path is not None:
        return Setting("matrix", str(path), "option", "--matrix")
    if chosen == default_matrix_path():
        return Setting("matrix", str(chosen), "default", "packaged with tfbuild")
    return Setting("matrix", str(chosen), "default", "matrix.yaml in this folder")


def read_matrix(
    path: Path | None, tensorflow: str | None = None, bazel_cache: str | None = None
) -> Matrix:
    """The matrix, with the options over its defaults: --tensorflow for its source builds (a
    minor release, 2.21, means its newest patch release on the package index, said on stderr)
    and build's --bazel-cache (from the command line or TFBUILD_BAZEL_CACHE). Which file, and
    each of its defaults with where it came from, go into the command's cascade (said with
    --debug)."""
    resolved = command_cascade()
    file = matrix_file(path)
    resolved.record(matrix_setting(path))
    if tensorflow is not None and re.fullmatch(r"\d+\.\d+", tensorflow) and tf_release(tensorflow):
        tensorflow = newest_patch(tensorflow, load_matrix(file))
    matrix = load_matrix(file, tensorflow)
    over: dict[str, Setting] = {}
    if tensorflow is not None:
        over["defaults.tensorflow"] = Setting("--tensorflow", tensorflow, "option", "--tensorflow")
    if bazel_cache:
        cache = resolved.source("--bazel-cache")  # the command line's, or its variable's
        if cache is None or cache.layer == "default" or cache.value != bazel_cache:
            cache = Setting("--bazel-cache", bazel_cache, "option", "--bazel-cache")
        matrix = _with_bazel_cache(matrix, cache)
        over["defaults.bazel.cache"] = cache
    matrix_settings(matrix, resolved, over)
    return matrix


def _with_bazel_cache(matrix: Matrix, cache: Setting) -> Matrix:
    from tfbuild.config.values import PATH_RE, VOLUME_RE

    expanded = str(Path(cache.value).expanduser())
    absolute = expanded.startswith("/") and PATH_RE.fullmatch(expanded)
    if not (VOLUME_RE.fullmatch(expanded) or absolute):
        raise UsageError(
            f"{cache.where} {cache.value!r}: expected a Docker volume name or an absolute path"
        )
    bazel = dataclasses.replace(matrix.defaults.bazel, cache=expanded)
    defaults = dataclasses.replace(matrix.defaults, bazel=bazel)
    return dataclasses.replace(matrix, defaults=defaults)


def newest_patch(minor: str, matrix: Matrix) -> str:
    """The newest release X.Y.Z of a minor release X.Y on the package index (pre-releases
    left out), as the matrix's pip settings reach it."""
    from tfbuild import pip

    try:
        found = pip.resolve(f"tensorflow-cpu=={minor}.*", matrix.defaults.pip).version
    except InstallError as exc:
        raise UsageError(
            f"--tensorflow {minor!r}: a {minor}.x release, but the package index could not say "
            f"which ({exc}); name the patch release, like {minor}.0"
        ) from exc
    click.echo(
        f"--tensorflow {minor}: {found}, the newest {minor} release on the package index",
        err=True,
    )
    return found


def machine(path: Path | None, engine_status: DockerInfo | None = None) -> HostProfile:
    """The machine a saved profile (--host) describes, else this one."""
    if path is not None:
        return load_profile(path)
    return detect(docker=engine_status)


def build_target(path: Path | None) -> HostProfile:
    """The machine wheels are built for: this one, or the saved profile of another (its
    `march: host` and copts; the build machine's own tools keep TensorFlow's baseline)."""
    if path is None:
        return detect()
    return dataclasses.replace(load_profile(path), source="saved")


def image_probe(engine_status: DockerInfo) -> ImageProbe | None:
    """Asks the engine what a runtime image holds, once per (image, Python); None when no
    engine answers."""
    return functools.cache(engine.image_pythons) if engine_status.reachable else None


def runtimes(matrix: Matrix, target: HostProfile, choice: str = "auto") -> Runtimes | None:
    """Where the variants run on the machine a plan is for, when tfbuild runs them there."""
    status = target.docker or DockerInfo(reachable=False, host="")
    return runtimes_for(matrix, target, choice, image_probe(status))


EVERYTHING = Selection()


def plan_here(matrix: Matrix, target: HostProfile, selection: Selection = EVERYTHING) -> Plan:
    """The one plan for a machine (`matrix`, `detect --matrix`)."""
    return make_plan(
        matrix,
        target,
        selection.only,
        selection.skip,
        runtimes(matrix, target),
        opt_in=selection.opt_in,
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class SessionMachine:
    """What decides the machine a session's benchmarks run on."""

    runtime: str
    cpus: tuple[int, ...] | None = None
    container_cpus: float | None = None
    memory: str | None = None


def session_plan(
    matrix: Matrix,
    selection: Selection,
    wanted: SessionMachine,
    engine_status: DockerInfo,
    note: Callable[[str], None],
) -> Plan:
    """The one plan of a session (`bench`, `run`, `calibrate`): for the machine its benchmarks
    run on (this one, or a remote engine's when its containers run there), made once."""
    here = detect(docker=engine_status)
    kinds: dict[str, str] = {}
    for variant, _, _ in select(matrix, selection.only, selection.skip, selection.opt_in):
        try:
            kinds[variant.name] = runtime_kind(variant, wanted.runtime, engine_status.reachable)
        except EngineUnavailable:
            continue  # reported when the variant is prepared
    target = engine_machine(
        here,
        kinds,
        engine_status,
        matrix.defaults.base_images.runtime,
        cpus=wanted.cpus,
        nano_cpus=int(wanted.container_cpus * 1e9) if wanted.container_cpus else None,
        memory=wanted.memory,
        note=note,
    )
    where = runtimes_for(matrix, target, wanted.runtime, image_probe(engine_status))
    plan = make_plan(matrix, target, selection.only, selection.skip, where, opt_in=selection.opt_in)
    for pv in plan.variants:
        if pv.variant.name in matrix.notes:
            note(matrix.notes[pv.variant.name])
    return plan


def with_forms(
    matrix: Matrix, forms: tuple[str, ...], workload: Workload | None, with_suite: bool = False
) -> Matrix:
    """The matrix with the model forms the session measures (--forms over `forms:`), refused
    before anything runs when a form other than as-given has no SavedModel to be made from,
    or with --with-suite (the suite, which no form changes, would run again in each). Which
    forms, and from where, is resolved in the command's cascade."""
    written = (matrix.forms, f"{matrix.path}: forms") if matrix.forms != (AS_GIVEN,) else None
    resolved = command_cascade()
    wanted = resolved.take(
        "forms", (AS_GIVEN,), matrix=written, option=("--forms", forms or None), show=",".join
    )
    source = resolved.source("forms")
    others = [f for f in wanted if f != AS_GIVEN]
    if others and with_suite:
        raise UsageError(
            f"--with-suite with model forms ({', '.join(others)}): the suite runs the same in "
            "every form, so each form would run it again; run the suite in a session of its own"
        )
    if others and (workload is None or workload.kind != "savedmodel"):
        given = source.where if source is not None else "--forms"
        what = "no --workload" if workload is None else f"--workload is a {workload.kind}"
        raise UsageError(
            f"{given}: {', '.join(others)}: a model form is made from a SavedModel's signature, "
            f"and this session has {what}; expected --workload DIR (a SavedModel) or only "
            f"{AS_GIVEN}"
        )
    if not others and workload is not None and (workload.atol, workload.rtol) != (None, None):
        given = "--atol" if workload.atol is not None else "--rtol"
        raise UsageError(
            f"{given}: a tolerance for a model form's outputs, and this session measures only "
            f"{AS_GIVEN}; add --forms (e.g. --forms litert-int8) or leave it out"
        )
    return dataclasses.replace(matrix, forms=(AS_GIVEN, *dict.fromkeys(others)))


def with_baseline(plan: Plan) -> Plan:
    """The plan of a session that ranks (`bench`, `run`): refused before anything runs when the
    selection leaves out the baseline, which every config is ranked against."""
    baseline = plan.matrix.baseline
    key = f"{baseline.variant}:{baseline.tuning}"
    if all(c.key != key for c in plan.configs):
        raise SelectionError(
            f"the selection leaves out the baseline {key} (matrix.yaml's `baseline:`), which "
            f"every config is ranked against: add --only {key}"
        )
    return plan


@dataclasses.dataclass(frozen=True)
class SourceBuilds:
    """What `run` does with the plan's source variants: the plan it measures, the builds it
    makes first (with --build), what it says first, and the message naming those it leaves out
    (None when it leaves none out), repeated after the report."""

    plan: Plan
    build: tuple[PlannedVariant, ...]
    notes: tuple[str, ...]
    left_out: str | None


def source_builds(
    plan: Plan, store: WheelStore, build: bool, engine_status: DockerInfo
) -> SourceBuilds:
    """`run`'s source variants: those that cannot run here are not built (the bench records
    why); those the store holds are measured; the others are built first with `build` and an
    engine, else left out and named with the command and estimate that build them. Refused
    (NotBuiltError, or EngineUnavailable without an engine) when leaving them out leaves
    nothing to rank: the baseline, or every config that runs here."""
    from tfbuild.build.stage import in_store, left_out_message

    sources = [pv for pv in plan.variants if pv.variant.needs_build]
    notes = [
        f"not building {pv.variant.name}: it cannot run here ({'; '.join(pv.verdict.reasons)})"
        for pv in sources
        if pv.verdict.runs is False
    ]
    missing = [pv for pv in sources if pv.verdict.runs is not False and not in_store(store, pv)]
    names = [pv.variant.name for pv in missing]
    baseline = plan.matrix.baseline.variant
    alone = baseline in names or all(
        pv in missing or pv.verdict.runs is False for pv in plan.variants
    )
    if not missing:
        return SourceBuilds(plan, (), tuple(notes), None)
    if build and engine_status.reachable:
        return SourceBuilds(plan, tuple(missing), tuple(notes), None)
    if not build:
        said = left_out_message(missing, plan, store)
        if alone:
            lacking = (
                f"the baseline {baseline}" if baseline in names else "every config that runs here"
            )
            raise NotBuiltError(f"Nothing to rank: {lacking} needs a build. {said}")
    else:
        said = no_engine_message(names, engine_status)
        if alone:
            raise EngineUnavailable(said)
    return SourceBuilds(plan.without(names), (), (*notes, f"[yellow]{said}[/]"), said)


def no_engine_message(names: Sequence[str], engine_status: DockerInfo) -> str:
    return (
        f"Skipped the source variants {', '.join(names)}: building them needs a Docker engine "
        f"and none answers at {engine_status.host}. To include them: install and start Docker "
        "(Debian/Ubuntu: apt-get install docker.io, then start dockerd) or point DOCKER_HOST "
        "at an engine; `tfbuild base-image` puts the base image on it; then run `tfbuild run` "
        "again."
    )
