"""`tfbuild run`: the whole loop in one command.

detect -> plan -> build (source variants, when a Docker engine is reachable) or fetch -> inspect
(incompatible wheels are skipped with the verdict) -> bench every (variant, tuning) config ->
compare -> report.html, the ranking and the "use this" block.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tfbuild import build as stage
from tfbuild.bench import runner
from tfbuild.errors import BuildFailed, InstallError
from tfbuild.host import DockerInfo, HostProfile
from tfbuild.matrix import Matrix, Variant
from tfbuild.plan import make_plan
from tfbuild.progress import Reporter
from tfbuild.runtime import runtime_kind


@dataclass(frozen=True)
class RunResult:
    results: Path
    skipped_builds: tuple[str, ...]
    failed_builds: tuple[str, ...]


def no_engine_message(names: Sequence[str], docker: DockerInfo) -> str:
    return (
        f"Skipped the source variants {', '.join(names)}: building them needs a Docker engine "
        f"and none answers at {docker.host}. To include them: install and start Docker "
        "(Debian/Ubuntu: apt-get install docker.io, then start dockerd) or point DOCKER_HOST "
        "at an engine; make the base image with `sudo tfbuild base-image` when no registry is "
        "reachable; then run `tfbuild run` again."
    )


@functools.cache
def _image_pythons(image: str, wanted: str) -> tuple[tuple[str, ...], bool] | None:
    from tfbuild import engine

    return engine.image_pythons(image, wanted)


def container_python_refusal(variant: Variant, runtime: str, image: str) -> str | None:
    """Why a source variant whose runtime is a container cannot run there: its runtime image
    has no interpreter of the variant's Python, and its apt sources offer none to install.
    Asked before the build, so hours of bazel are not spent on a wheel no runtime here can
    install."""
    if runtime_kind(variant, runtime, engine_reachable=True) != "docker":
        return None
    found = _image_pythons(image, variant.python)
    if found is None:
        return None  # an image not on the engine is reported when the runtime is made
    have, from_apt = found
    if variant.python in have or from_apt:
        return None
    return (
        f"needs Python {variant.python}; the runtime image {image} has "
        f"{'Python ' + ', '.join(have) if have else 'no Python'} and its apt sources have no "
        f"python{variant.python}; use a base image of a distribution release that has it, or "
        "--runtime local"
    )


def run(
    matrix: Matrix,
    host: HostProfile,
    docker: DockerInfo,
    only: Sequence[str],
    skip: Sequence[str],
    options: runner.BenchOptions,
    workspace: runner.Workspace,
    reporter: Reporter,
) -> RunResult:
    plan = make_plan(matrix, host, only, skip)
    sources = [pv for pv in plan.variants if pv.variant.needs_build]
    skipped: list[str] = []
    unrunnable: list[str] = []  # their runtime image lacks their Python: neither built nor run
    failed: list[str] = []
    if sources and not docker.reachable:
        skipped = [pv.variant.name for pv in sources]
        reporter.note(f"[yellow]{no_engine_message(skipped, docker)}[/]")
    elif sources:
        image = matrix.defaults.base_images.runtime
        for pv in sources:
            if pv.verdict.runs is False:
                reporter.note(
                    f"not building {pv.variant.name}: it cannot run here "
                    f"({'; '.join(pv.verdict.reasons)})"
                )
                continue
            refusal = container_python_refusal(pv.variant, options.runtime, image)
            if refusal is not None:
                unrunnable.append(pv.variant.name)
                reporter.note(f"not building {pv.variant.name}: it cannot run here ({refusal})")
                continue
            reporter.running(f"building {pv.variant.name}")
            try:
                outcome = stage.build_variant(
                    pv.variant, matrix, host, workspace.store, reporter, stage.BuildOptions()
                )
                reporter.note(f"build {pv.variant.name}: {outcome.status} ({outcome.message})")
            except (BuildFailed, InstallError) as exc:
                failed.append(pv.variant.name)
                reporter.note(f"[red]build {pv.variant.name} failed[/]: {str(exc).splitlines()[0]}")
    if skipped or unrunnable:
        plan = make_plan(matrix, host, only, [*skip, *skipped, *unrunnable])
    path = runner.run_session(plan, options, workspace, reporter)
    return RunResult(path, tuple(skipped), tuple(failed))
