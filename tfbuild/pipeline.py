"""`tfbuild run`: the whole loop in one command.

detect -> plan -> build (source variants, when a Docker engine is reachable) or fetch -> inspect
(incompatible wheels are skipped with the verdict) -> bench every (variant, tuning) config ->
compare -> report.html, the ranking and the "use this" block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tfbuild import build as stage
from tfbuild.bench import runner
from tfbuild.errors import BuildFailed, InstallError
from tfbuild.host import DockerInfo, HostProfile
from tfbuild.matrix import Matrix
from tfbuild.plan import make_plan, runtimes_here
from tfbuild.progress import Reporter


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
    runtimes = runtimes_here(matrix, host, options.runtime)
    plan = make_plan(matrix, host, only, skip, runtimes)
    sources = [pv for pv in plan.variants if pv.variant.needs_build]
    skipped: list[str] = []
    failed: list[str] = []
    if sources and not docker.reachable:
        skipped = [pv.variant.name for pv in sources]
        reporter.note(f"[yellow]{no_engine_message(skipped, docker)}[/]")
    elif sources:
        for pv in sources:
            if pv.verdict.runs is False:  # the bench records why, with the plan's reasons
                reporter.note(
                    f"not building {pv.variant.name}: it cannot run here "
                    f"({'; '.join(pv.verdict.reasons)})"
                )
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
    if skipped:
        plan = make_plan(matrix, host, only, [*skip, *skipped], runtimes)
    path = runner.run_session(plan, options, workspace, reporter)
    return RunResult(path, tuple(skipped), tuple(failed))
