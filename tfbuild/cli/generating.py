"""`tfbuild index`, `tfbuild ci github` and `tfbuild ci keep`: what the nightly CI and a team's
pip use, generated from the matrix and the wheel store."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tfbuild.cli.app import cli
from tfbuild.cli.options import F, debug_option, json_option, matrix_option
from tfbuild.cli.planning import machine, read_matrix, with_forms
from tfbuild.cli.values import parse_fraction, results_paths
from tfbuild.config.model import Matrix
from tfbuild.config.settings import STORE_DEFAULT
from tfbuild.errors import BadWheel, StaleOutput, UsageError

if TYPE_CHECKING:
    from tfbuild.ci import settings as ci_settings


@cli.command()
@click.argument(
    "store_path",
    metavar="[STORE]",
    required=False,
    default=STORE_DEFAULT,
    type=click.Path(path_type=Path, file_okay=False),
)
@json_option("the index's place, each wheel indexed and each file left out")
@debug_option
def index(store_path: Path, as_json: bool) -> None:
    """Write a PEP 503 simple index over every wheel in the store, at STORE/simple.

    Links carry #sha256= fragments and data-requires-python, so a team can
    `pip install --index-url file:///.../wheels/simple tensorflow-cpu==2.17.1+mkl.avx2`
    or serve the folder with any static web server.
    """
    from tfbuild.ci.index import write_index

    if not store_path.is_dir():
        raise UsageError(f"{store_path}: no such wheel store (build or fetch something first)")
    indexed, skipped = write_index(store_path)
    root = (store_path / "simple").resolve()
    projects = sorted({p for p, _ in indexed})
    if as_json:
        wheels = [{"project": p, "wheel": w.name} for p, w in indexed]
        said = {
            "index": str(root),
            "url": f"{root.as_uri()}/",
            "wheels": wheels,
            "left_out": skipped,
        }
        click.echo(json.dumps(said, indent=2))
    else:
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


@dataclass(frozen=True, kw_only=True)
class GithubSettings:
    matrix: Path | None
    out: Path
    install: str
    build_runner: str | None
    bench_runners: tuple[str, ...]
    bench_hosts: dict[str, str]
    """Runner label -> the path of its saved profile (checked readable)."""
    fail_above: str
    publish: bool
    check: bool
    workload: Path | None

    @property
    def matrix_shown(self) -> str:
        """The matrix as the workflow and its messages name it."""
        return str(self.matrix) if self.matrix is not None else "matrix.yaml"

    def generator(self) -> ci_settings.Settings:
        """What the workflow is generated from: these options, each path as the jobs read it
        in their checkout."""
        from tfbuild.ci import settings as ci_settings

        return ci_settings.Settings(
            matrix_file=self.matrix_shown,
            out=str(self.out),
            install=self.install,
            build_runner=self.build_runner,
            bench_runners=self.bench_runners,
            bench_hosts=self.bench_hosts,
            fail_above=self.fail_above,
            publish=self.publish,
            workload=None if self.workload is None else self.workload.as_posix(),
        )


def _bench_hosts(given: tuple[str, ...]) -> dict[str, str]:
    """--bench-host RUNNER=PROFILE values, each profile checked readable now."""
    profiles = {}
    for item in given:
        runner, _, path = item.partition("=")
        if not runner or not path:
            raise UsageError(f"--bench-host {item!r}: expected RUNNER=PROFILE.json")
        machine(Path(path))  # a readable profile, or a clear error now
        profiles[runner] = path
    return profiles


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
    default=None,
    metavar="LABEL",
    help="Runner label for the build jobs: a larger or self-hosted runner, where a TensorFlow "
    "wheel builds within the 6-hour job limit. Without it (and without a remote executor in "
    "the matrix) no build job is scheduled and bench skips the source variants.",
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
    "--workload",
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="Your own model, a path in this repository (a SavedModel directory, a Keras file or "
    "a script), that every bench job measures instead of the fixed suite, in the matrix's "
    "`forms:` (each checked against the as-given outputs, as `bench --forms` does).",
)
@click.option(
    "--fail-above",
    default="5%",
    show_default=True,
    help="Regression threshold against the previous night.",
)
@click.option(
    "--publish",
    type=click.Choice(["pages"]),
    help="Publish each passing night's wheels (a PEP 503 index pip installs from) and HTML "
    "report on the repository's GitHub Pages site (Settings > Pages > Source: GitHub Actions).",
)
@click.option(
    "--check", is_flag=True, help="Exit 13 if the file differs from what would be written."
)
@debug_option
def github(
    matrix_path: Path | None,
    out: Path,
    install: str,
    build_runner: str | None,
    bench_runners: tuple[str, ...],
    bench_hosts: tuple[str, ...],
    workload: Path | None,
    fail_above: str,
    publish: str | None,
    check: bool,
) -> None:
    """Write the nightly GitHub Actions workflow: plan, build per source variant, bench per
    runner, compare with a regression gate against the last passing night on the same machine
    class. Every job installs tfbuild from the repository it checks out."""
    from tfbuild.ci import notes, workflow
    from tfbuild.files import atomic_write_text

    parse_fraction("--fail-above", fail_above)
    settings = GithubSettings(
        matrix=matrix_path,
        out=out,
        install=install,
        build_runner=build_runner,
        bench_runners=bench_runners or ("ubuntu-latest",),
        bench_hosts=_bench_hosts(bench_hosts),
        fail_above=fail_above,
        publish=publish == "pages",
        check=check,
        workload=workload,
    )
    matrix = read_matrix(settings.matrix)
    _nightly_workload(matrix, settings.workload)
    generator = settings.generator()
    text = workflow.render(matrix, generator)
    if settings.check:
        check_current(settings, text)
        return
    if (warning := outside_workflows(settings.out)) is not None:
        click.echo(f"tfbuild: warning: {warning}", err=True)
    atomic_write_text(settings.out, text)
    click.echo(f"wrote {settings.out}")
    for line in notes.summary(matrix, generator):
        click.echo(f"  {line}")


def check_current(settings: GithubSettings, text: str) -> None:
    """`ci github --check`: whether the file is the workflow `text`, said; StaleOutput when it
    is not."""
    from tfbuild.ci import workflow

    if not workflow.is_current(settings.out, text):
        raise StaleOutput(
            f"{settings.out} is not what `tfbuild ci github` generates from "
            f"{settings.matrix_shown} now; regenerate it with the same command without --check"
        )
    click.echo(f"{settings.out} is current")


def _nightly_workload(matrix: Matrix, path: Path | None) -> None:
    """Refuse, before anything is written, a nightly bench that would fail every night: a
    --workload outside the checkout or that is no model, or model forms with nothing to make
    them from."""
    from tfbuild.bench.workload import WorkloadRequest, resolve

    if path is not None and (path.is_absolute() or ".." in path.parts):
        raise UsageError(
            f"--workload {path}: the bench jobs read it from their checkout of this "
            "repository; give its path relative to the repository's root"
        )
    workload = None if path is None else resolve(WorkloadRequest(path=path))
    with_forms(matrix, (), workload)


def outside_workflows(path: Path) -> str | None:
    """Why GitHub would not run the workflow written at `path`: it is not under
    .github/workflows/; None when it is."""
    parts = path.resolve().parts
    if any(parts[i : i + 2] == (".github", "workflows") for i in range(len(parts) - 2)):
        return None
    return (
        f"{path} is not under .github/workflows/, the only place GitHub runs workflows from; "
        "commit it there (any name: its drift check reads the path it is committed at)"
    )


def _results_into(into_help: str) -> Callable[[F], F]:
    """RESULTS... and --into FOLDER, as `ci keep` and `ci history` take them."""

    def add(f: F) -> F:
        into = click.option(
            "--into",
            type=click.Path(path_type=Path, file_okay=False),
            required=True,
            help=into_help,
        )
        results = click.argument("results_files", nargs=-1, required=True, metavar="RESULTS...")
        return results(into(f))

    return add


@ci.command()
@_results_into("The folder of reference results (one set per machine class).")
@debug_option
def keep(results_files: tuple[str, ...], into: Path) -> None:
    """Make these results the reference of their machine class in --into: earlier results of
    the same class there are removed, other classes' stay. RESULTS: files, folders or quoted
    patterns."""
    from tfbuild.ci.keep import keep as keep_results

    kept, removed = keep_results(results_paths(results_files, "RESULTS"), into)
    for path in kept:
        click.echo(f"kept {path}")
    for path in removed:
        click.echo(f"replaced {path}")


@ci.command()
@_results_into(
    "The folder of reference results: the nights go to its history/ folder, the page to its "
    "history.html."
)
@debug_option
def history(results_files: tuple[str, ...], into: Path) -> None:
    """Add these results to the nights kept in --into/history/ (every night, whether its gate
    passed or not) and write --into/history.html: each config's throughput night by night per
    machine class and benchmark, the nights where a TensorFlow release or a wheel changed
    marked (what `tfbuild compare --history` shows). RESULTS: files, folders or quoted
    patterns."""
    from tfbuild.ci.keep import record_history

    added, page, nights, classes = record_history(results_paths(results_files, "RESULTS"), into)
    for path in added:
        click.echo(f"added {path}")
    click.echo(f"wrote {page}: {nights} nights of {classes} machine class(es)")
